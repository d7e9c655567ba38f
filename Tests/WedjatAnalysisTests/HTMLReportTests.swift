import Foundation
import XCTest
@testable import WedjatAnalysis

/// `wedjat report --html`: the page on Fixtures/http + Fixtures/vitals + Fixtures/html/stalls.folded
/// against Golden/html/report.html (regenerate with `WEDJAT_REGEN_GOLDEN=1 swift test --filter
/// HTMLReportTests` and review the diff), the waterfall's joins and bounds, escaping of hostile
/// log contents, and that the page loads nothing. Rendering in a browser: Integration test 66.
final class HTMLReportTests: XCTestCase {
    static let fixtures = [testsDir + "/Fixtures/http", testsDir + "/Fixtures/vitals"]
    static let folded = testsDir + "/Fixtures/html/stalls.folded"
    static let golden = testsDir + "/Golden/html/report.html"

    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    private func fixturePage() throws -> (page: String, analysis: RunAnalysis) {
        let analysis = try RunAnalysis.load(paths: Self.fixtures)
        let page = HTMLReport(foldedStacks: try String(contentsOfFile: Self.folded, encoding: .utf8))
            .render(analysis, report: Report(analysis: analysis))
        return (page.replacingOccurrences(of: testsDir + "/", with: ""), analysis)
    }

    func testGolden() throws {
        let page = try fixturePage().page
        if ProcessInfo.processInfo.environment["WEDJAT_REGEN_GOLDEN"] == "1" {
            try Data(page.utf8).write(to: URL(fileURLWithPath: Self.golden))
        }
        let expected = try String(contentsOfFile: Self.golden, encoding: .utf8)
        XCTAssertEqual(page, expected, "differs from \(Self.golden); WEDJAT_REGEN_GOLDEN=1 regenerates it if intended")
    }

    // MARK: the waterfall's rows

    /// Fixtures/http, worked out by hand: curl's first exchange waited for the lookup of
    /// api.local (8.000-9.000 ms), the connect (10.000-10.100), TLS (to 12.200), then its own
    /// request (13.000) and response (14.000-14.500).
    func testPhasesJoinedFromConnectionAndDNS() throws {
        let analysis = try RunAnalysis.load(paths: [Self.fixtures[0]])
        let (first, slowest) = analysis.requests.selection()
        XCTAssertEqual(first.count, 8)   // http records; the 102 http_summary exchanges have no row
        XCTAssertTrue(slowest.isEmpty)
        let base: Int64 = 1763782600000000
        let opening = try XCTUnwrap(first.first { $0.http.path == "/v1/items?REDACTED" })
        let s = try XCTUnwrap(opening.setup)
        XCTAssertEqual(s.dnsStartTs.map { $0 - base }, 8000)
        XCTAssertEqual(s.dnsEndTs.map { $0 - base }, 9000)
        XCTAssertEqual(s.openTs.map { $0 - base }, 10000)
        XCTAssertEqual(s.connectEndTs.map { $0 - base }, 10100)
        XCTAssertEqual(s.tlsEndTs.map { $0 - base }, 12200)
        XCTAssertEqual(s.tlsVersion, "TLSv1.3")
        XCTAssertEqual(opening.startTs - base, 8000)
        XCTAssertEqual(opening.totalUs, 6500)
        // Reused connection: no set-up of its own.
        let reused = try XCTUnwrap(first.first { $0.http.path == "/v1/items/1" })
        XCTAssertNil(reused.setup)
        XCTAssertEqual(reused.totalUs, 2500)
        // The second connection to api.local matched the same lookup: drawn on the first only.
        let second = try XCTUnwrap(first.first { $0.http.path == "/missing" })
        XCTAssertNil(second.setup?.dnsStartTs)
        XCTAssertEqual(second.setup?.tlsEndTs.map { $0 - base }, 34200)

        let page = HTMLReport().render(analysis, report: Report(analysis: analysis))
        let row = try XCTUnwrap(rows(page).first { $0.contains("/v1/items?REDACTED") })
        // Six bars on a 8.000 → 71.300 ms axis (63.3 ms): DNS at 0%, width 1000/63300.
        XCTAssertTrue(row.contains(#"<i class="ph dns" data-a="0" data-b="1000" style="left:0.000%;width:1.580%">"#), row)
        XCTAssertTrue(row.contains(#"<i class="ph tls" data-a="2100" data-b="4200" style="left:3.318%;width:3.318%">"#), row)
        // The right column is the exchange's total, as in the text report; the tooltip adds the set-up.
        XCTAssertTrue(row.contains(#"<span class="wf-time">1.500 ms</span>"#), row)
        XCTAssertTrue(row.contains("total 1.500 ms (request → response end) · with set-up 6.500 ms"), row)
        XCTAssertEqual(row.components(separatedBy: "<i class=\"ph ").count - 1, 6)
        XCTAssertTrue(row.contains("DNS: 1.000 ms&#10;connect: 100 us&#10;TLS: 2.100 ms&#10;send: 0 us&#10;wait (TTFB): 1.000 ms&#10;receive: 500 us"), row)
        XCTAssertEqual(rows(page).count, 8)
        // The exchange cut short is drawn as such, and says why.
        let cut = try XCTUnwrap(rows(page).first { $0.contains("api.local/slow") })
        XCTAssertTrue(cut.contains("ph cut") && cut.contains(#"<span class="err">incomplete</span>"#), cut)
    }

    /// Of two connections that matched one lookup, only the earliest drew it; the other
    /// used the answer.
    func testLookupDrawnOnce() throws {
        let f = try dir.write("c.7.1.ndjson", Line.start(pid: 7, ts: 1000, exe: "/usr/bin/c") + [
            #"{"type":"dns","ts":2000,"pid":7,"name":"h.local","duration_us":500,"answers":1}"#,
            #"{"type":"http","ts":5000,"pid":7,"conn_id":1,"role":"client","host":"h.local","request_index":0,"request_start_ts":3000,"request_end_ts":3000,"response_start_ts":4000,"response_end_ts":5000}"#,
            #"{"type":"http","ts":5100,"pid":7,"conn_id":2,"role":"client","host":"h.local","request_index":0,"request_start_ts":2600,"request_end_ts":2600,"response_start_ts":5000,"response_end_ts":5100}"#,
            // Closed first, opened second.
            #"{"type":"connection","ts":5050,"pid":7,"conn_id":1,"role":"client","peer":"10.0.0.1:80","host":"h.local","open_ts":2800,"connect_us":100}"#,
            #"{"type":"connection","ts":5200,"pid":7,"conn_id":2,"role":"client","peer":"10.0.0.1:80","host":"h.local","open_ts":2100,"connect_us":400}"#,
        ].joined(separator: "\n") + "\n" + Line.end(pid: 7, ts: 6000))
        let (first, _) = try RunAnalysis.load(paths: [f]).requests.selection()
        XCTAssertEqual(first.map(\.http.connId), [2, 1])   // by start: 2600 before 3000
        XCTAssertEqual(first[0].setup?.dnsStartTs, 1500)
        XCTAssertEqual(first[0].startTs, 1500)
        XCTAssertEqual(first[0].setup?.connectEndTs, 2500)
        XCTAssertNil(first[1].setup?.dnsStartTs)
        XCTAssertEqual(first[1].startTs, 2800)
    }

    /// However many requests, the collector holds about twice the selection, and the selection
    /// is exactly the earliest N plus the M slowest of the rest.
    func testSelectionIsBoundedAndExact() throws {
        var c = RequestCollector(firstLimit: 50, slowestLimit: 10, sampleLimit: 0)
        var generator = LogReaderPropertyTests.Rng(state: 42)
        var all: [(seq: Int, start: Int64, duration: Int64)] = []
        var maxHeld = 0
        for i in 1 ... 20_000 {
            let start = Int64(generator.next() % 1_000_000_000), duration = Int64(generator.next() % 5_000_000)
            all.append((i, start, duration))
            c.add(.http(HTTPRecord(ts: start + duration, pid: 1, connId: Int64(i), role: "client", host: "h",
                                   requestIndex: 0, requestStartTs: start, requestEndTs: start,
                                   responseStartTs: start + duration, responseEndTs: start + duration,
                                   ttfbUs: duration, durationUs: duration)), file: 0)
            c.add(.connection(ConnectionRecord(ts: start + duration, pid: 1, connId: Int64(i), role: "client",
                                               openTs: start - 10, connectUs: 5)), file: 0)
            maxHeld = max(maxHeld, c.heldCount.requests, c.heldCount.connections)
        }
        XCTAssertLessThanOrEqual(maxHeld, 2 * 60 + 64)
        let byStart = all.sorted { ($0.start, $0.seq) < ($1.start, $1.seq) }
        let expectedFirst = byStart.prefix(50).map(\.seq)
        let expectedSlowest = byStart.dropFirst(50).sorted { $0.duration != $1.duration ? $0.duration > $1.duration : $0.seq < $1.seq }
            .prefix(10).map(\.seq)
        let (first, slowest) = c.selection()
        XCTAssertEqual(first.map(\.seq), expectedFirst)
        XCTAssertEqual(slowest.map(\.seq), expectedSlowest)
        // Every kept request still has its connection.
        XCTAssertTrue((first + slowest).allSatisfy { $0.setup?.connectEndTs == $0.requestStartTs - 5 })
        XCTAssertEqual(c.requestsSeen, 20_000)
        XCTAssertEqual(c.hosts[HTTPKey(role: "client", host: "h")]?.total.total, 20_000)
    }

    /// The heaps keep exactly what sorting everything would: on random input with many ties
    /// (starts and durations from small ranges), in arrival order, in reverse order, and with
    /// either limit 0 or larger than the input.
    func testSelectionEqualsSortReference() throws {
        var generator = LogReaderPropertyTests.Rng(state: 7)
        for (firstLimit, slowestLimit) in [(5, 3), (0, 7), (9, 0), (0, 0), (1, 1), (40, 40), (300, 300)] {
            for order in ["random", "ascending", "descending"] {
                let n = 1 + Int(generator.next() % 500)
                var all: [(seq: Int, start: Int64, duration: Int64)] = []
                for i in 1 ... n {
                    var start = Int64(generator.next() % 50)
                    if order == "ascending" { start = Int64(i / 3) } else if order == "descending" { start = Int64((n - i) / 3) }
                    all.append((i, start, Int64(generator.next() % 20)))
                }
                var c = RequestCollector(firstLimit: firstLimit, slowestLimit: slowestLimit, sampleLimit: 0)
                for r in all {
                    c.add(.http(HTTPRecord(ts: r.start + r.duration, pid: 1, connId: Int64(r.seq), role: "client", host: "h",
                                           requestIndex: 0, requestStartTs: r.start, requestEndTs: r.start,
                                           responseStartTs: r.start + r.duration, responseEndTs: r.start + r.duration)), file: 0)
                    c.add(.connection(ConnectionRecord(ts: r.start + r.duration, pid: 1, connId: Int64(r.seq), role: "client",
                                                       openTs: r.start - 1, connectUs: 1)), file: 0)
                    XCTAssertLessThanOrEqual(c.heldCount.requests, firstLimit + slowestLimit)
                    XCTAssertLessThanOrEqual(c.heldCount.connections, 2 * (firstLimit + slowestLimit) + 64)
                }
                let byStart = all.sorted { ($0.start, $0.seq) < ($1.start, $1.seq) }
                let expectedFirst = byStart.prefix(firstLimit).map(\.seq)
                let expectedSlowest = byStart.dropFirst(firstLimit)
                    .sorted { $0.duration != $1.duration ? $0.duration > $1.duration : $0.seq < $1.seq }
                    .prefix(slowestLimit).map(\.seq)
                let (first, slowest) = c.selection()
                let what = "limits \(firstLimit)/\(slowestLimit), \(order), n=\(n)"
                XCTAssertEqual(first.map(\.seq), expectedFirst, what)
                XCTAssertEqual(slowest.map(\.seq), expectedSlowest, what)
                XCTAssertTrue((first + slowest).allSatisfy { $0.setup?.connectEndTs == $0.requestStartTs }, what)
            }
        }
    }

    /// A lookup whose earliest user left the selection is still not drawn on a later kept
    /// connection: that one reused the answer.
    func testLookupFirstUseSurvivesPruning() throws {
        var c = RequestCollector(firstLimit: 1, slowestLimit: 1, sampleLimit: 0)
        func exchange(_ id: Int64, host: String = "h", open: Int64, start: Int64, duration: Int64) {
            c.add(.http(HTTPRecord(ts: start + duration, pid: 1, connId: id, role: "client", host: host, requestIndex: 0,
                                   requestStartTs: start, requestEndTs: start, responseStartTs: start + duration,
                                   responseEndTs: start + duration)), file: 0)
            c.add(.connection(ConnectionRecord(ts: start + duration + 1, pid: 1, connId: id, role: "client",
                                               openTs: open, connectUs: 10, host: host)), file: 0)
        }
        c.add(.dns(DNSRecord(ts: 1000, pid: 1, name: "h", durationUs: 100)), file: 0)
        exchange(1, open: 1100, start: 1200, duration: 10)      // used the lookup first; fast
        exchange(2, open: 1150, start: 1160, duration: 5000)    // earliest start: kept as first, 1 to the slowest
        // Ever slower exchanges to another host, each the slowest for a while: 1 leaves the
        // selection and the held set-ups are cut back (twice the selection + 64) more than once.
        for i in 0 ..< 200 { exchange(Int64(10 + i), host: "other", open: 3000 + Int64(i), start: 3001 + Int64(i), duration: 11 + Int64(i)) }
        exchange(3, open: 1300, start: 1400, duration: 9000)    // the slowest of the others
        XCTAssertLessThanOrEqual(c.heldCount.connections, 68)
        let (first, slowest) = c.selection()
        XCTAssertEqual(first.map(\.http.connId), [2])
        XCTAssertEqual(slowest.map(\.http.connId), [3])
        XCTAssertNil(first[0].setup?.dnsStartTs)
        XCTAssertEqual(first[0].setup?.connectEndTs, 1160)
        XCTAssertNil(slowest[0].setup?.dnsStartTs)
    }

    func testLeftOutRowsAreSaid() throws {
        var body = ""
        for i in 0 ..< 30 {
            let start = 10_000 + Int64(i) * 1000, end = start + (i == 29 ? 9000 : Int64(i) * 10)
            body += #"{"type":"http","ts":\#(end),"pid":3,"conn_id":\#(i),"role":"client","host":"h","path":"/\#(i)","status":200,"request_start_ts":\#(start),"request_end_ts":\#(start),"response_start_ts":\#(end),"response_end_ts":\#(end)}"#
                + "\n"
        }
        let f = try dir.write("c.3.1.ndjson", Line.start(pid: 3, ts: 1000, exe: "/usr/bin/c") + body + Line.end(pid: 3, ts: 90_000))
        let analysis = try RunAnalysis.load(paths: [f])
        let report = Report(analysis: analysis)
        var page = HTMLReport().render(analysis, report: report)
        XCTAssertFalse(page.contains("left out"))
        XCTAssertEqual(rows(page).count, 30)
        // A small collector, which 30 requests overflow.
        var small = RequestCollector(firstLimit: 10, slowestLimit: 3, sampleLimit: 0)
        var reader = LogReader()
        try reader.read(paths: [f]) { _, _, r in small.add(r, file: 0) }
        let (first, slowest) = small.selection()
        XCTAssertEqual(first.map(\.http.path), (0 ..< 10).map { "/\($0)" })
        XCTAssertEqual(slowest.map(\.http.path), ["/29", "/28", "/27"])
        page = HTMLReport().render(analysis, report: report, requests: small)
        XCTAssertEqual(rows(page).count, 13)
        XCTAssertTrue(page.contains("Shown: the first 10 of 30 by start, 0 sampled evenly over the run's time (one in each 1.000 ms at most) and the 3 slowest of the others; 17 are left out."))
        XCTAssertTrue(page.contains(#"<span id="wf-count" data-rows="13">"#))
        XCTAssertTrue(page.contains("13 of 30 requests"))
    }

    // MARK: safety

    /// Paths, hosts, program names and frames from logs are escaped: no element or attribute
    /// of theirs reaches the page.
    func testHostileLogContentIsEscaped() throws {
        let evil = #"<script>alert(1)</script>"#
        func json(_ o: [String: Any]) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self) + "\n"
        }
        var body = try json(["type": "process_start", "schema": 1, "ts": 1000, "pid": 9, "exe": "/tmp/" + evil + "'\"&",
                             "argv": [evil]])
        body += try json(["type": "http", "ts": 5000, "pid": 9, "conn_id": 1, "role": "client",
                          "host": #"x"><img src=x onerror=alert(2)>"#, "path": "/" + evil + "?a=1&b=2",
                          "method": "<b>GET", "status": 200, "request_start_ts": 2000, "request_end_ts": 2000,
                          "response_start_ts": 4000, "response_end_ts": 5000, "ttfb_us": 2000, "duration_us": 3000])
        body += try json(["type": "sample", "ts": 3000, "pid": 9, "cpu": ["total_pct": 5.0],
                          "memory": ["rss_bytes": 1_000_000]])
        body += try json(["type": "warning", "ts": 3500, "pid": 9, "message": "</li>" + evil])
        body += Line.end(pid: 9, ts: 6000)
        let f = try dir.write("evil.9.1000.ndjson", body)
        let analysis = try RunAnalysis.load(paths: [f])
        let page = HTMLReport(foldedStacks: "main;<svg onload=alert(3)>;\"quoted\" 5\n")
            .render(analysis, report: Report(analysis: analysis))

        XCTAssertEqual(page.components(separatedBy: "<script").count - 1, 1, "only the page's own script")
        for bad in ["<img", "<svg onload", "alert(1)</script>", "<b>GET", "</li><script"] {
            XCTAssertFalse(page.contains(bad), bad)
        }
        for escaped in ["&lt;script&gt;alert(1)&lt;/script&gt;", "x&quot;&gt;&lt;img src=x onerror=alert(2)&gt;",
                        "?a=1&amp;b=2", "&lt;b&gt;GET", "&lt;svg onload=alert(3)&gt;", "&quot;quoted&quot;",
                        "&#39;&quot;&amp;"] {
            XCTAssertTrue(page.contains(escaped), escaped)
        }
        try assertSelfContained(page)
    }

    func testSelfContained() throws {
        try assertSelfContained(try fixturePage().page)
    }

    /// No element or attribute that loads anything, nothing in our style or script that
    /// does, and a policy that would block it anyway. Log text is escaped, so every `<` that
    /// starts a tag is the page's own.
    private func assertSelfContained(_ page: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(page.contains(#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; "#),
                      file: file, line: line)
        let tag = try NSRegularExpression(pattern: #"<([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>"#)
        let attribute = try NSRegularExpression(pattern: #"\s([a-zA-Z:-]+)\s*="#)
        let ns = page as NSString
        var names: Set<String> = [], attributes: Set<String> = []
        for m in tag.matches(in: page, range: NSRange(location: 0, length: ns.length)) {
            names.insert(ns.substring(with: m.range(at: 1)).lowercased())
            // Attribute names only: drop the quoted values first.
            let attrs = ns.substring(with: m.range(at: 2))
                .replacingOccurrences(of: #""[^"]*"|'[^']*'"#, with: "\"\"", options: .regularExpression)
            for a in attribute.matches(in: attrs, range: NSRange(location: 0, length: (attrs as NSString).length)) {
                attributes.insert((attrs as NSString).substring(with: a.range(at: 1)).lowercased())
            }
        }
        XCTAssertEqual(names.intersection(["link", "img", "iframe", "object", "embed", "audio", "video", "source",
                                           "base", "form", "frame", "image", "use", "a"]), [], file: file, line: line)
        XCTAssertEqual(attributes.intersection(["src", "href", "srcset", "action", "formaction", "poster", "data",
                                                "xlink:href", "background", "ping"]), [], file: file, line: line)
        XCTAssertEqual(attributes.filter { $0.hasPrefix("on") }, [], "inline handlers", file: file, line: line)
        XCTAssertEqual(page.components(separatedBy: "<script").count - 1, 1, "only the page's own script", file: file, line: line)
        let code = HTMLAssets.css + HTMLAssets.script
        for loader in ["url(", "@import", "fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "sendBeacon", "import(",
                       "innerHTML", "eval(", "http:", "https:"] {
            XCTAssertFalse(code.contains(loader), loader, file: file, line: line)
        }
        XCTAssertTrue(page.contains("<style>\n" + HTMLAssets.css + "</style>") && page.contains("<script>\n" + HTMLAssets.script + "</script>"),
                      file: file, line: line)
    }

    // MARK: parts

    func testFlameGraph() throws {
        let g = FlameGraph(folded: "a;b 3\r\na;c 1\nno count here\na;b;d 2\n\nx -1\n")
        XCTAssertEqual(g.total, 6)
        XCTAssertEqual(g.badLines, [3, 6])
        let html = g.html()
        // a: all 6; b: 5 of 6 at x 0; c after b at 5/6; d on top of b.
        XCTAssertTrue(html.contains(#"data-d="1" data-x="0.000000" data-w="1.000000""#), html)
        XCTAssertTrue(html.contains(#"data-d="2" data-x="0.000000" data-w="0.833333""#), html)
        XCTAssertTrue(html.contains(#"data-d="2" data-x="0.833333" data-w="0.166667""#), html)
        XCTAssertTrue(html.contains(#"data-d="3" data-x="0.000000" data-w="0.333333""#), html)
        XCTAssertTrue(html.contains(#"title="b&#10;5 us (83.33%)">b</div>"#), html)
        XCTAssertTrue(FlameGraph(folded: "").html().contains("No stalls recorded."))
        let page = try fixturePage().page
        XCTAssertTrue(page.contains(#"data-total="1300000""#))
    }

    func testLatencyHistogram() {
        XCTAssertEqual(LatencyHistogram.bucket(0), 0)
        XCTAssertEqual(LatencyHistogram.bucket(1000), 60)        // 10^3: 3 decades of 20
        XCTAssertEqual(LatencyHistogram.bucket(1122), 60)        // 10^3.05 is 1122.02
        XCTAssertEqual(LatencyHistogram.bucket(1123), 61)
        XCTAssertEqual(LatencyHistogram.bucket(.max), LatencyHistogram.bucketCount - 1)
        var h = LatencyHistogram()
        h.record(summary: SummaryDistribution(count: 100, p50: 100, p90: 1000, p99: 10_000, max: 100_000))
        XCTAssertEqual(h.total, 100)
        XCTAssertEqual(h.counts[40], 50)
        XCTAssertEqual(h.counts[60], 40)
        XCTAssertEqual(h.counts[80], 9)
        XCTAssertEqual(h.counts[100], 1)
    }

    func testEmptySections() throws {
        let f = try dir.write("q.1.1.ndjson", Line.start(pid: 1, ts: 1000, exe: "/bin/q") + Line.end(pid: 1, ts: 2000))
        let analysis = try RunAnalysis.load(paths: [f])
        let page = HTMLReport().render(analysis, report: Report(analysis: analysis))
        XCTAssertTrue(page.contains("No HTTP exchanges were recorded."))
        XCTAssertTrue(page.contains("No HTTP latencies were recorded."))
        XCTAssertTrue(page.contains("No sample records"))
        XCTAssertTrue(page.contains("No stalls recorded"))
        let failed = HTMLReport(stallError: "build id mismatch for /bin/<q>").render(analysis, report: Report(analysis: analysis))
        XCTAssertTrue(failed.contains("Stall stacks could not be read: build id mismatch for /bin/&lt;q&gt;"))
    }

    /// The waterfall rows of a page, one string each.
    private func rows(_ page: String) -> [String] {
        page.components(separatedBy: "\n").filter { $0.hasPrefix("<div class=\"wf-row") }
    }
}

/// The HTML page's views of what the text report also shows.
final class HTMLViewTests: XCTestCase {
    /// A stall without stack samples is still a stall: listed, and the flame graph says why it
    /// has nothing to draw (the text report lists it too).
    func testStallsWithoutSamplesAreListed() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let f = try dir.write("s.5.1000.ndjson", Line.start(pid: 5, ts: 1000, exe: "/bin/s") + [
            #"{"type":"stall","ts":900000,"pid":5,"tid":5,"thread":"s","kind":"blocked","start_ts":300000,"end_ts":900000,"duration_us":600000,"call":"connect","peer":"10.0.0.9:443","result":"ETIMEDOUT","threshold_us":250000,"samples":[],"samples_lost":1}"#,
        ].joined(separator: "\n") + "\n" + Line.end(pid: 5, ts: 1_000_000))
        let analysis = try RunAnalysis.load(paths: [f])
        let report = Report(analysis: analysis)
        let page = HTMLReport().render(analysis, report: report)
        XCTAssertFalse(page.contains("No stalls recorded"))
        XCTAssertTrue(page.contains("<table class=\"plain\" id=\"stall-table\">"))
        XCTAssertTrue(page.contains("connect 10.0.0.9:443 → ETIMEDOUT"), page)
        XCTAssertTrue(page.contains("No stack samples to draw a flame graph from."))
        XCTAssertTrue(TextReport().render(report).contains("STALLS: 1 stall over 250 ms"))
        // The cards count as the headline does.
        XCTAssertTrue(page.contains(#"<dt>stalls</dt><dd>1</dd><dd class="sub">longest 600.000 ms</dd>"#), page)
    }

    /// A long run is seen beyond its first moments: besides the first requests by start and the
    /// slowest, a sample spread over the whole run (the same for the same input).
    func testSampleCoversTheRun() throws {
        func collect() -> RequestCollector {
            var c = RequestCollector(firstLimit: 10, slowestLimit: 2, sampleLimit: 20)
            for i in 0 ..< 2000 {
                let start = Int64(i) * 1000
                c.add(.http(HTTPRecord(ts: start + 100, pid: 1, connId: Int64(i), role: "client", host: "h", requestIndex: 0,
                                       requestStartTs: start, requestEndTs: start, responseStartTs: start + 50,
                                       responseEndTs: start + 100, ttfbUs: 50, durationUs: 100)), file: 0)
            }
            return c
        }
        let c = collect()
        let sampled = c.sampled()
        // One per slot, the slots as wide as keeps them at 20 or fewer: 2000 requests a
        // millisecond apart make slots of 128 ms, 16 of them; the first 10 ms are the first's.
        XCTAssertEqual(c.sampleSlotUs, 128_000)
        XCTAssertTrue((14 ... 16).contains(sampled.count), "\(sampled.count)")
        let starts = sampled.map(\.requestStartTs)
        XCTAssertGreaterThan(starts.max()!, 1_000_000, "the sample reaches the second half of the run")
        XCTAssertLessThan(starts.min()!, 1_000_000)
        XCTAssertEqual(starts, starts.sorted())
        XCTAssertEqual(collect().sampled().map(\.seq), sampled.map(\.seq), "a fixed seed")
    }

    /// A load run records thousands of exchanges in its first 100 ms (the writer's first
    /// budget), then a few each second: the sample follows time, not records, so the page shows
    /// the whole run rather than its first moments.
    func testSampleFollowsTimeNotRecords() throws {
        var c = RequestCollector(firstLimit: 20, slowestLimit: 5, sampleLimit: 100)
        func add(_ start: Int64, _ i: Int) {
            c.add(.http(HTTPRecord(ts: start + 10, pid: 1, connId: Int64(i), role: "server", host: "h", requestIndex: 0,
                                   requestStartTs: start, requestEndTs: start, responseStartTs: start + 5,
                                   responseEndTs: start + 10, ttfbUs: 5, durationUs: 10)), file: 0)
        }
        for i in 0 ..< 3000 { add(Int64(i) * 33, i) }                              // 100 ms: 3,000
        for i in 0 ..< 800 { add(100_000 + Int64(i) * 5_000, 3000 + i) }            // 4 s: 200 a second
        let starts = c.sampled().map(\.requestStartTs)
        XCTAssertLessThanOrEqual(starts.count, 100)
        XCTAssertGreaterThan(starts.filter { $0 >= 100_000 }.count, starts.count * 9 / 10, "\(starts)")
        XCTAssertGreaterThan(starts.max()!, 3_900_000)
    }

    /// A few errors among many requests are `<0.01%`, not `0.00%`, in the card as in the text.
    func testSmallErrorRateIsNotZero() throws {
        XCTAssertEqual(Format.percent(6.0 / 263_900), "<0.01%")
        XCTAssertEqual(Format.percent(0), "0.00%")
        XCTAssertEqual(Format.percent(0.25), "25.00%")
        let dir = try TempDir()
        defer { dir.remove() }
        let f = try dir.write("s.7.1.ndjson", Line.start(pid: 7, ts: 1000, exe: "/usr/sbin/s") +
            #"{"type":"http","ts":5000,"pid":7,"conn_id":1,"role":"server","host":"h:80","path":"/x","status":503,"request_index":0,"request_start_ts":3000,"request_end_ts":3000,"response_start_ts":4000,"response_end_ts":5000}"#
            + "\n" + #"{"type":"http_summary","ts":90000,"pid":7,"tid":0,"role":"server","scheme":"http","method":"GET","host":"h:80","status":200,"count":99999,"errors":0,"request_bytes":8000,"response_bytes":15000,"first_ts":6000,"last_ts":89000}"#
            + "\n" + Line.end(pid: 7, ts: 90_000))
        let analysis = try RunAnalysis.load(paths: [f])
        let report = Report(analysis: analysis)
        let page = HTMLReport().render(analysis, report: report)
        XCTAssertTrue(page.contains(#"<dt>HTTP errors</dt><dd>1</dd><dd class="sub">&lt;0.01%: 0 4xx, 1 5xx</dd>"#), page)
        XCTAssertTrue(TextReport().render(report).contains("HTTP errors <0.01%"), TextReport().render(report))
    }

    /// Rows carry what the filter and the sort read: the status apart from the text (so `500`
    /// matches a status, not a size or a path), the total, the TTFB.
    func testRowsCarryTheirStatusApart() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let f = try dir.write("c.7.1.ndjson", Line.start(pid: 7, ts: 1000, exe: "/usr/bin/c") +
            #"{"type":"http","ts":5000,"pid":7,"conn_id":1,"role":"client","host":"h","path":"/delay/500","status":200,"request_index":0,"request_start_ts":3000,"request_end_ts":3000,"response_start_ts":4000,"response_end_ts":5000,"response_body_bytes":500}"#
            + "\n" + Line.end(pid: 7, ts: 6000))
        let analysis = try RunAnalysis.load(paths: [f])
        let page = HTMLReport().render(analysis, report: Report(analysis: analysis))
        XCTAssertTrue(page.contains(#"data-total="2000" data-ttfb="1000" data-status="200""#), page)
        XCTAssertTrue(HTMLAssets.script.contains("/^[1-5][0-9][0-9]$/.test(t)) hit = st === t"))
    }
}
