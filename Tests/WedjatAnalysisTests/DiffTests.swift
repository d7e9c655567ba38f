import Foundation
import XCTest
@testable import WedjatAnalysis

/// `wedjat diff`: threshold syntax, evaluation, reports saved as JSON, and the output on
/// Fixtures/diff (b is a with every time to first byte 50% longer, connects and the lookup 3
/// times longer, and /v1/items/1 answering 503). Regenerate the golden files with
/// scripts/regen-golden.sh.
final class DiffTests: XCTestCase {
    static let a = testsDir + "/Fixtures/diff/a", b = testsDir + "/Fixtures/diff/b"

    private func report(_ path: String) throws -> Report { Report(analysis: try RunAnalysis.load(paths: [path])) }

    private func diff(_ thresholds: [String]) throws -> RunDiff {
        RunDiff(a: try report(Self.a), pathA: "Fixtures/diff/a", b: try report(Self.b), pathB: "Fixtures/diff/b",
                thresholds: try thresholds.map { try Threshold(parsing: $0) })
    }

    func testThresholdSyntax() throws {
        var t = try Threshold(parsing: "ttfb.p99>+10%")
        XCTAssertEqual([t.metric, t.comparison.rawValue, t.measure.rawValue], ["ttfb.p99", ">", "relative_change"])
        XCTAssertEqual(t.limit, 10)
        t = try Threshold(parsing: " http.error_rate >= +0.5pp ")
        XCTAssertEqual([t.comparison.rawValue, t.measure.rawValue], [">=", "points_change"])
        XCTAssertEqual(t.limit, 0.5)
        t = try Threshold(parsing: "rss.peak>512MiB")
        XCTAssertEqual(t.measure, .value)
        XCTAssertEqual(t.limit, 512 * 1024 * 1024)
        t = try Threshold(parsing: "total.p95@api.local<=-1.5ms")
        XCTAssertEqual(t.host, "api.local")
        XCTAssertEqual([t.comparison.rawValue, t.measure.rawValue], ["<=", "change"])
        XCTAssertEqual(t.limit, -1500)
        t = try Threshold(parsing: "http.error_rate>2%")
        XCTAssertEqual(t.measure, .value)
        XCTAssertEqual(t.limit, 0.02)
        t = try Threshold(parsing: "drops>0")
        XCTAssertEqual([t.limit], [0])

        func rejected(_ text: String, _ why: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try Threshold(parsing: text), file: file, line: line) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains(why), message, file: file, line: line)
                XCTAssertTrue(message.contains("Syntax: METRIC[@HOST] OP VALUE"), file: file, line: line)
            }
        }
        rejected("ttfb.p99=+10%", "no comparison")
        rejected("ttfb.p98>+10%", "unknown metric \"ttfb.p98\"")
        rejected("rss.peak>+1pp", "pp (percentage points) is for a change of a rate")
        rejected("http.error_rate>0.5pp", "pp (percentage points) is for a change of a rate")
        rejected("ttfb.p99>+10MiB", "\"MiB\" is not a unit of ttfb.p99")
        rejected("ttfb.p99>fast", "no number")
        rejected("cpu.time@api.local>+1%", "not a per-host metric")
        rejected("ttfb.p99@>1ms", "empty host")
    }

    func testEvaluation() throws {
        let d = try diff([
            "ttfb.p99>+10%", "ttfb.p99>+60%", "http.5xx_rate>+0.5pp", "ttfb.p99>4ms", "ttfb.p99>5ms", "requests<-10%",
            "dns.p50>=+2ms", "ttfb.p50@api.local>+49%", "ttfb.p50@nowhere.local>+1%", "rss.peak>+20%", "drops>0",
        ])
        XCTAssertEqual(d.thresholds.map(\.status), ["fail", "pass", "fail", "fail", "pass", "pass", "fail", "fail",
                                                    "not_evaluated", "not_evaluated", "fail"])
        XCTAssertEqual(d.thresholds[0].measured, 50)          // 3.0 → 4.5 ms
        XCTAssertEqual(d.thresholds[2].measured!, 100.0 / 6, accuracy: 0.001)   // 0 → 1 of 6 requests
        XCTAssertEqual(d.thresholds[3].measured, 4500)
        XCTAssertEqual(d.thresholds[6].measured, 2000)
        XCTAssertEqual(d.thresholds[8].reason, "no host nowhere.local in either run")
        XCTAssertEqual(d.thresholds[9].reason, "neither run has it")
        XCTAssertTrue(d.failed)
        XCTAssertFalse(try diff(["ttfb.p99>+60%"]).failed)

        let ttfb = try XCTUnwrap(d.metrics.first { $0.metric == "ttfb.p50" })
        XCTAssertEqual([ttfb.a, ttfb.b, ttfb.change], [1000, 1500, 500])
        XCTAssertEqual(ttfb.relative, 0.5)
        let api = try XCTUnwrap(d.hosts.first { $0.host == "api.local" })
        XCTAssertEqual(api.seenIn, "both")
        XCTAssertEqual(api.metrics.first { $0.metric == "http.5xx_rate" }?.b, 0.2)
    }

    /// From 0: any increase is infinitely large, so every relative threshold above it fails.
    func testRelativeChangeFromZero() throws {
        let row = DiffRow(metric: "stalls", unit: .count, a: 0, b: 3)
        XCTAssertNil(row.relative)
        XCTAssertEqual(try Threshold(parsing: "stalls>+1000%").measured(row), .infinity)
        XCTAssertEqual(try Threshold(parsing: "stalls>+1000%").measured(DiffRow(metric: "stalls", unit: .count, a: 0, b: 0)), 0)
    }

    /// A report saved with --format json reads back whole (every fixture, stalls and vitals
    /// included) and diffs to nothing against its run.
    func testSavedReportsReadBack() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        for fixture in ["run1", "http", "vitals", "stalls", "diff/b"] {
            let r = try report(testsDir + "/Fixtures/" + fixture)
            let path = try dir.write(fixture.replacingOccurrences(of: "/", with: "-") + ".json", try JSONReport.render(r))
            let back = try Report.load(json: path)
            XCTAssertEqual(try JSONReport.render(back), try JSONReport.render(r), fixture)
            let d = RunDiff(a: r, pathA: "logs", b: back, pathB: path, thresholds: [try Threshold(parsing: "ttfb.p99>+0%")])
            XCTAssertTrue(d.metrics.allSatisfy { $0.change == nil || $0.change == 0 }, fixture)
            XCTAssertFalse(d.failed, fixture)
        }
        let old = try dir.write("old.json", #"{"report_version": 1, "headline": {}}"#)
        XCTAssertThrowsError(try Report.load(json: old)) { error in
            XCTAssertTrue("\(error)".contains("report_version 1, this wedjat reads 3"), "\(error)")
        }
        let notReport = try dir.write("x.json", "[1, 2]")
        XCTAssertThrowsError(try Report.load(json: notReport)) { error in
            XCTAssertTrue("\(error)".contains("not a JSON report of wedjat"), "\(error)")
        }
    }

    private static let goldenThresholds = ["ttfb.p99>+10%", "http.5xx_rate>+0.5pp", "rss.peak>+20%",
                                           "total.p95@api.local>5ms", "requests<-10%"]

    func testGoldenText() throws {
        let expected = try String(contentsOfFile: testsDir + "/Golden/diff.txt", encoding: .utf8)
        XCTAssertEqual(DiffText().render(try diff(Self.goldenThresholds)), expected,
                       "differs from Golden/diff.txt; run scripts/regen-golden.sh if intended")
    }

    func testGoldenJSON() throws {
        let expected = try String(contentsOfFile: testsDir + "/Golden/diff.json", encoding: .utf8)
        XCTAssertEqual(try DiffJSON.render(try diff(Self.goldenThresholds)), expected,
                       "differs from Golden/diff.json; run scripts/regen-golden.sh if intended")
    }
}
