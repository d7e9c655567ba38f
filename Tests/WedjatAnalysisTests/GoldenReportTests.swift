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
            "wedjat: logs in /tmp/w logs (4 new files of this run); report: wedjat report '/tmp/w logs'",
        ])
    }
}

/// `wedjat --version` and `run`'s choice of logs.
final class RunCLITests: XCTestCase {
    func testVersionIsTheLibrarys() throws {
        let dir = testsDir + "/../../CShims/interposer"
        let headers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".h") }
        let defines = try headers.map { try String(contentsOfFile: dir + "/" + $0, encoding: .utf8) }
            .filter { $0.contains("#define WEDJAT_VERSION ") }
        XCTAssertEqual(defines.count, 1, "one header defines WEDJAT_VERSION")
        XCTAssertTrue(defines.first?.contains("#define WEDJAT_VERSION \"\(WedjatVersion.current)\"") == true,
                      "the library's WEDJAT_VERSION and Version.swift differ")
    }

    /// The run's logs: the started process (pid 100, through two execs), its child (ppid 100)
    /// and grandchild; not another program's log written meanwhile, nor one from before the run.
    func testRunLogsAreTheRunsProcessTree() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        func log(_ name: String, pid: Int, ppid: Int, ts: Int64) throws -> String {
            try dir.write(name, Line.start(pid: pid, ts: ts, exe: "/bin/" + name.prefix { $0 != "." }, ppid: ppid))
        }
        let files = [
            try log("env.100.2000.ndjson", pid: 100, ppid: 1, ts: 2000),
            try log("python3.100.2100.ndjson", pid: 100, ppid: 1, ts: 2100),
            try log("sh.101.2200.ndjson", pid: 101, ppid: 100, ts: 2200),
            try log("curl.102.2300.ndjson", pid: 102, ppid: 101, ts: 2300),
            try log("other.300.2150.ndjson", pid: 300, ppid: 1, ts: 2150),
            try log("stale.101.500.ndjson", pid: 101, ppid: 100, ts: 500),
        ]
        let (run, others) = RunSummary.runLogs(files, rootPid: 100, sinceTs: 1000)
        XCTAssertEqual(run.map { ($0 as NSString).lastPathComponent },
                       ["env.100.2000.ndjson", "python3.100.2100.ndjson", "sh.101.2200.ndjson", "curl.102.2300.ndjson"])
        XCTAssertEqual(others, 2)
    }
}
