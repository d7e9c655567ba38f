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
        try RunDiff(a: try report(Self.a), pathA: "Fixtures/diff/a", b: try report(Self.b), pathB: "Fixtures/diff/b",
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
        XCTAssertEqual(t.target, "api.local")
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
                XCTAssertTrue(message.contains("Syntax: METRIC[@TARGET] OP VALUE"), file: file, line: line)
            }
        }
        rejected("ttfb.p99=+10%", "no comparison")
        rejected("ttfb.p98>+10%", "unknown metric \"ttfb.p98\"")
        rejected("rss.peak>+1pp", "pp (percentage points) is for a change of a rate")
        rejected("http.error_rate>0.5pp", "pp (percentage points) is for a change of a rate")
        rejected("ttfb.p99>+10MiB", "\"MiB\" is not a unit of ttfb.p99")
        rejected("ttfb.p99>fast", "no number")
        rejected("cpu.time@api.local>+1%", "not a per-host metric")
        rejected("ttfb.p99@>1ms", "empty target")
        rejected("connect.p50@GET /x>1ms", "not a per-endpoint metric")
        // An endpoint with a space after its method; a host written as the report prints it.
        t = try Threshold(parsing: "ttfb.p95@GET /items/{n} > +10%")
        XCTAssertEqual([t.target, t.metric], ["GET /items/{n}", "ttfb.p95"])
        XCTAssertTrue(t.isEndpointTarget)
        XCTAssertFalse(try Threshold(parsing: "ttfb.p95@http://localhost:23080>+10%").isEndpointTarget)
    }

    func testEvaluation() throws {
        let d = try diff([
            "ttfb.p99>+10%", "ttfb.p99>+60%", "http.5xx_rate>+0.5pp", "ttfb.p99>4ms", "ttfb.p99>5ms", "requests<-10%",
            "dns.p50>=+2ms", "ttfb.p50@api.local>+49%", "ttfb.p50@client → https://api.local>+49%", "rss.peak>+20%", "drops>0",
        ])
        XCTAssertEqual(d.thresholds.map(\.status), ["fail", "pass", "fail", "fail", "pass", "pass", "fail", "fail",
                                                    "fail", "not_evaluated", "fail"])
        XCTAssertEqual(d.thresholds[0].measured, 50)          // 3.0 → 4.5 ms
        XCTAssertEqual(d.thresholds[2].measured!, 100.0 / 6, accuracy: 0.001)   // 0 → 1 of 6 requests
        XCTAssertEqual(d.thresholds[3].measured, 4500)
        XCTAssertEqual(d.thresholds[6].measured, 2000)
        XCTAssertEqual(d.thresholds[8].matched, ["client api.local"])
        // A target that matches nothing cannot pass: an error, not `n/a`.
        XCTAssertThrowsError(try diff(["ttfb.p50@nowhere.local>+1%"])) { error in
            XCTAssertTrue("\(error)".contains("matches no host or endpoint in either run (hosts: api.local"), "\(error)")
        }
        XCTAssertThrowsError(try diff(["ttfb.p50@GET /nowhere>+1%"]))
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

    /// Per endpoint: paths fold to their routes, a target matches with or without its method and
    /// host; a host matches by name alone for any port.
    func testEndpointsAndTargets() throws {
        XCTAssertEqual(PathTemplate.fold("/items/42?x=1"), "/items/{n}")
        XCTAssertEqual(PathTemplate.fold("/u/3fa85f64-5717-4562-b3fc-2c963f66afa6/x"), "/u/{id}/x")
        XCTAssertEqual(PathTemplate.fold("/v1/users"), "/v1/users")
        XCTAssertEqual(PathTemplate.fold("http://proxy.local/a/7"), "/a/{n}")
        let e = RunDiff.EndpointDiff(key: "GET /items/{n}", role: "client", host: "shop:8080", method: "GET", path: "/items/{n}",
                                     seenIn: "both", metrics: [])
        for target in ["*", "GET /items/{n}", "/items/7", "shop:8080/items/{n}", "get http://shop/items/1"] {
            XCTAssertTrue(RunDiff.endpoint(e, matches: target), target)
        }
        for target in ["POST /items/{n}", "/items", "other:8080/items/1"] { XCTAssertFalse(RunDiff.endpoint(e, matches: target), target) }
        for target in ["http://shop:8080", "shop:8080", "shop", "client → http://shop:8080", "→ http://shop:8080/"] {
            XCTAssertTrue(RunDiff.host("shop:8080", key: "", matches: target), target)
        }
        XCTAssertFalse(RunDiff.host("shop:8080", key: "", matches: "shop:9090"))
    }

    /// A percentile's change is significant only when the runs' 95% ranges do not overlap.
    func testSignificance() throws {
        func stats(_ values: [Int64]) -> Report.Percentiles {
            var d = DurationStats()
            for v in values { d.record(v) }
            return Report.Percentiles(d)!
        }
        // 200 values around 10 ms, then the same with 0.1% more: within the spread.
        let a = stats((0 ..< 200).map { 9000 + $0 * 10 }), b = stats((0 ..< 200).map { 9010 + $0 * 10 })
        let same = DiffRow(metric: "ttfb.p50", unit: .us, a: Double(a.p50), b: Double(b.p50),
                           aRange: a.p50Range.map { $0.map(Double.init) }, bRange: b.p50Range.map { $0.map(Double.init) })
        XCTAssertEqual(same.significant, false)
        let slow = stats((0 ..< 200).map { 18000 + $0 * 10 })
        let doubled = DiffRow(metric: "ttfb.p50", unit: .us, a: Double(a.p50), b: Double(slow.p50),
                              aRange: a.p50Range.map { $0.map(Double.init) }, bRange: slow.p50Range.map { $0.map(Double.init) })
        XCTAssertEqual(doubled.significant, true)
        let range = try XCTUnwrap(a.p50Range)
        XCTAssertTrue(range[0] < a.p50 && a.p50 < range[1], "\(range) around \(a.p50)")
    }

    /// Red only for a change for the worse beyond the runs' spread: not for one inside it (`~`),
    /// nor for a percentile of too few values to have a spread.
    func testColourOnlyBeyondTheSpread() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        /// 200 exchanges of one host, TTFB `base + i * 10` us.
        func run(_ name: String, base: Int64) throws -> Report {
            var body = Line.start(pid: 1, ts: 1000, exe: "/c")
            for i in 0 ..< 200 {
                let start = Int64(10_000 + i * 100_000), ttfb = base + Int64(i) * 10
                body += #"{"type":"http","ts":\#(start + ttfb),"pid":1,"conn_id":\#(i),"role":"client","host":"h","path":"/","status":200,"request_index":0,"request_start_ts":\#(start),"request_end_ts":\#(start),"response_start_ts":\#(start + ttfb),"response_end_ts":\#(start + ttfb)}"# + "\n"
            }
            try dir.write(name + "/c.1.1000.ndjson", body + Line.end(pid: 1, ts: 30_000_000))
            return Report(analysis: try RunAnalysis.load(paths: [dir.path + "/" + name]))
        }
        let a = try run("a", base: 9000), same = try run("b", base: 9010), slow = try run("c", base: 18000)
        let red = "\u{1B}[31m"
        func line(_ d: RunDiff, _ metric: String) throws -> String {
            let text = DiffText(color: true).render(d)
            return try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("  " + metric + " ") }.map(String.init))
        }
        let small = try line(try RunDiff(a: a, pathA: "a", b: same, pathB: "b"), "ttfb.p50")
        XCTAssertTrue(small.contains("~"), small)
        XCTAssertFalse(small.contains(red))
        let doubled = try RunDiff(a: a, pathA: "a", b: slow, pathB: "c")
        let slower = try line(doubled, "ttfb.p50")
        XCTAssertTrue(slower.contains(red), slower)
        XCTAssertFalse(try line(doubled, "requests").contains(red), "a count is not better or worse")
        // The fixture's 6 exchanges per run: +50% of TTFB p50, too few values for a spread: not red.
        XCTAssertFalse(try line(try diff([]), "ttfb.p50").contains(red))
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
            let d = try RunDiff(a: r, pathA: "logs", b: back, pathB: path, thresholds: [try Threshold(parsing: "ttfb.p99>+0%")])
            XCTAssertTrue(d.metrics.allSatisfy { $0.change == nil || $0.change == 0 }, fixture)
            XCTAssertFalse(d.failed, fixture)
        }
        let old = try dir.write("old.json", #"{"report_version": 1, "headline": {}}"#)
        XCTAssertThrowsError(try Report.load(json: old)) { error in
            XCTAssertTrue("\(error)".contains("report_version 1, this wedjat reads 4"), "\(error)")
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
