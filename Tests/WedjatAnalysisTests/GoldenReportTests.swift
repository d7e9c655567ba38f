import XCTest
@testable import WedjatAnalysis

/// The whole report on a hand-written run (Fixtures/run1: bash forks a child that execs curl,
/// which makes 3 connections to 127.0.0.1:8080, the first refused; a python3 http.server
/// accepts the other two and is killed). Regenerate with scripts/regen-golden.sh after an
/// intended change, and review the diff.
final class GoldenReportTests: XCTestCase {
    static let fixture = testsDir + "/Fixtures/run1"
    static let goldenDir = testsDir + "/Golden"

    /// Paths in reports are the ones read; make them independent of the checkout location (the
    /// same text `wedjat report Fixtures/run1` prints from this directory, which is how
    /// scripts/regen-golden.sh makes the golden files).
    private func portable(_ s: String) -> String {
        s.replacingOccurrences(of: Self.fixture, with: "Fixtures/run1")
    }

    private func report() throws -> Report {
        Report(analysis: try RunAnalysis.load(paths: [Self.fixture]))
    }

    private func check(_ actual: String, golden name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = Self.goldenDir + "/" + name
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(actual, expected, "differs from \(path); run scripts/regen-golden.sh if intended",
                       file: file, line: line)
    }

    func testTextReport() throws {
        try check(portable(TextReport(color: false).render(try report())), golden: "report.txt")
    }

    func testJSONReport() throws {
        try check(portable(try JSONReport.render(try report())), golden: "report.json")
    }

    /// Golden files can hide a wrong value that was blessed once; pin the facts the fixture
    /// was written to show.
    func testFixtureFacts() throws {
        let r = try report()
        XCTAssertEqual(r.headline.processes, 3)
        XCTAssertEqual(r.headline.logs, 4)
        XCTAssertEqual(r.headline.connections, 5)
        XCTAssertEqual(r.headline.errors, 1)
        XCTAssertEqual(r.headline.bytesIn, 1234 + 5678 + 78 + 80)
        XCTAssertEqual(r.headline.droppedEvents, 3)
        XCTAssertEqual(r.headline.spanUs, 600_000)

        XCTAssertEqual(r.processes.map(\.status), ["exit 0", "exec → curl", "exit 0", "killed?"])
        XCTAssertEqual(r.processes.map(\.pid), [4200, 4243, 4243, 4300])

        let client = try XCTUnwrap(r.peers.first { $0.address == "127.0.0.1:8080" && $0.role == "client" })
        XCTAssertEqual(client.key, "client → 127.0.0.1:8080 (api.local)")
        XCTAssertEqual(client.hosts, ["api.local"])
        XCTAssertEqual(r.headline.dnsLookups, 2)
        XCTAssertEqual(r.headline.dnsErrors, 1)
        XCTAssertEqual(client.count, 3)
        XCTAssertEqual(client.errors, 1)
        XCTAssertEqual(client.errorNames.map(\.name), ["ECONNREFUSED"])
        XCTAssertEqual(client.durationUs?.count, 2)
        XCTAssertEqual(client.durationUs?.max, 23456)
        XCTAssertEqual(Double(client.durationUs!.p50), 12345, accuracy: 12.345)   // 3 significant digits
        let server = try XCTUnwrap(r.peers.first { $0.key == "server ← 127.0.0.1:8080" })
        XCTAssertEqual(server.count, 2)
        XCTAssertEqual(server.bytesOut, 1234 + 5678)

        XCTAssertEqual(r.tree.map(\.label), ["bash", "python3.11"])
        XCTAssertEqual(r.tree[0].children.map(\.label), ["bash → exec → curl"])
        XCTAssertEqual(r.tree[0].children[0].pid, 4243)
        XCTAssertEqual(r.warnings.map(\.kind), ["no_end"])
        XCTAssertEqual(r.drops.map(\.pid), [4300])
        XCTAssertEqual(r.drops.map(\.droppedEvents), [3])
    }

    func testColourOnlyWhenAsked() throws {
        let r = try report()
        XCTAssertFalse(TextReport(color: false).render(r).contains("\u{1B}["))
        XCTAssertTrue(TextReport(color: true).render(r).contains("\u{1B}[31m"))
    }

    func testRunSummary() throws {
        XCTAssertEqual(RunSummary.lines(report: try report(), logDir: "/tmp/w logs"), [
            "wedjat: 3 processes, 5 connections (1 error), 6.9 KiB in, 6.9 KiB out, 3 dropped events, 0 dropped records",
            "wedjat: 1 warning (see the report)",
            "wedjat: logs in /tmp/w logs (4 new files); report: wedjat report '/tmp/w logs'",
        ])
    }
}
