import Foundation
import XCTest
@testable import WedjatAnalysis

/// `http`, `http_summary`, the newer `connection` fields (transport, tls, error_phase,
/// http_requests) and `process_end.capture_dropped`: decoding, statistics, and the report on
/// Fixtures/http, whose numbers are worked out by hand below.
final class HTTPReportTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    private func decode(_ json: String) throws -> Record {
        try Record.decode(line: json)
    }

    private func read(_ body: String) throws -> (records: [Record], warnings: [String], file: String) {
        let f = try dir.write("h.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/h") + body + Line.end(pid: 1, ts: 900))
        var reader = LogReader()
        var records: [Record] = []
        try reader.read(paths: [f]) { records.append($2) }
        return (records, reader.warnings.map(\.description), f)
    }

    // MARK: decoding

    func testDecodeHTTPRecord() throws {
        let r = try decode(#"""
            {"type":"http","ts":1763782510221500,"pid":4242,"tid":4243,"conn_id":1,"role":"client",
             "scheme":"https","method":"GET","host":"api.local","path":"/v1/items?REDACTED","status":200,
             "interim_responses":1,"peer":"127.0.0.1:8443","request_index":2,"reused":true,
             "request_start_ts":1763782510202200,"request_end_ts":1763782510202200,
             "response_start_ts":1763782510221000,"response_end_ts":1763782510221500,
             "ttfb_us":18800,"wait_us":18800,"duration_us":19300,
             "request_header_bytes":96,"request_body_bytes":1,"response_header_bytes":180,"response_body_bytes":1024,
             "headers":{"request.host":"api.local"},"complete":true,"upgraded":true,"error":null}
            """#)
        guard case .http(let h) = r else { return XCTFail("not http: \(r)") }
        XCTAssertEqual(h, HTTPRecord(
            ts: 1763782510221500, pid: 4242, tid: 4243, connId: 1, role: "client", scheme: "https", method: "GET",
            host: "api.local", path: "/v1/items?REDACTED", status: 200, interimResponses: 1, peer: "127.0.0.1:8443",
            requestIndex: 2, reused: true, requestStartTs: 1763782510202200, requestEndTs: 1763782510202200,
            responseStartTs: 1763782510221000, responseEndTs: 1763782510221500, ttfbUs: 18800, waitUs: 18800,
            durationUs: 19300, requestHeaderBytes: 96, requestBodyBytes: 1, responseHeaderBytes: 180,
            responseBodyBytes: 1024, complete: true, upgraded: true, error: nil, headers: ["request.host": "api.local"]))
    }

    func testDecodeHTTPRecordWithoutResponse() throws {
        let r = try decode(#"""
            {"type":"http","ts":5,"pid":1,"role":"server","method":"POST","host":null,"status":null,
             "ttfb_us":null,"wait_us":null,"duration_us":null,"complete":false,"error":"incomplete"}
            """#)
        guard case .http(let h) = r else { return XCTFail("not http") }
        XCTAssertNil(h.status)
        XCTAssertNil(h.ttfbUs)
        XCTAssertNil(h.durationUs)
        XCTAssertEqual(h.complete, false)
        XCTAssertEqual(h.error, "incomplete")
        XCTAssertEqual(h.requestHeaderBytes, 0)
        XCTAssertFalse(h.upgraded)
    }

    func testDecodeHTTPSummary() throws {
        let r = try decode(#"""
            {"type":"http_summary","ts":1763782520000000,"pid":4250,"tid":0,"role":"server","scheme":"http",
             "method":"GET","host":"127.0.0.1:8080","status":200,"count":412345,"errors":3,
             "request_bytes":18967870,"response_bytes":511307800,"first_ts":1763782510000100,"last_ts":1763782519999000,
             "duration_us":{"count":412345,"p50":180,"p90":410,"p99":1300,"max":43000},
             "ttfb_us":{"count":412340,"p50":170,"p90":400,"p99":1250,"max":42900}}
            """#)
        guard case .httpSummary(let s) = r else { return XCTFail("not http_summary") }
        XCTAssertEqual(s, HTTPSummaryRecord(
            ts: 1763782520000000, pid: 4250, tid: 0, role: "server", scheme: "http", method: "GET",
            host: "127.0.0.1:8080", status: 200, count: 412345, errors: 3, requestBytes: 18967870,
            responseBytes: 511307800, firstTs: 1763782510000100, lastTs: 1763782519999000,
            durationUs: SummaryDistribution(count: 412345, p50: 180, p90: 410, p99: 1300, max: 43000),
            ttfbUs: SummaryDistribution(count: 412340, p50: 170, p90: 400, p99: 1250, max: 42900)))

        // No response at all: status and both distributions are null.
        let empty = try decode(#"{"type":"http_summary","ts":1,"pid":1,"role":"client","status":null,"count":2,"errors":2,"duration_us":null,"ttfb_us":null}"#)
        guard case .httpSummary(let e) = empty else { return XCTFail("not http_summary") }
        XCTAssertNil(e.status)
        XCTAssertNil(e.durationUs)
        XCTAssertNil(e.ttfbUs)
    }

    func testDecodeHTTPSummaryKeyAndBucketCounts() throws {
        let r = try decode(#"""
            {"type":"http_summary","ts":5,"pid":1,"role":"client","method":"GET","host":"h","version":"HTTP/1.0",
             "status":null,"error":"incomplete","count":3,"errors":3,
             "duration_us":{"count":2,"p50":7000,"p90":7000,"p99":7000,"max":7000,"min":4000,"sum":11000,
                            "bounds":[5000,10000],"buckets":[1,1,0]},"ttfb_us":null}
            """#)
        guard case .httpSummary(let s) = r else { return XCTFail("not http_summary") }
        XCTAssertEqual(s.version, "HTTP/1.0")
        XCTAssertEqual(s.error, "incomplete")
        XCTAssertNil(s.status)
        XCTAssertEqual(s.durationUs?.buckets, BoundedCounts(bounds: [5000, 10000], counts: [1, 1, 0], sum: 11000, min: 4000))
    }

    /// Bucket counts that contradict themselves reject the record, naming the rule.
    func testBadSummaryBucketsNameTheRule() throws {
        func summary(_ duration: String) -> String {
            #"{"type":"http_summary","ts":120,"pid":1,"role":"client","count":2,"duration_us":{"count":2,"p50":1,"p90":1,"p99":1,"max":1,"min":1,"sum":2,"#
                + duration + "}}"
        }
        let r = try read([
            summary(#""bounds":[5,10],"buckets":[1,1,0]"#),             // good
            summary(#""bounds":[5,10],"buckets":[1,0,0]"#),             // adds up to 1, not 2
            summary(#""bounds":[5,10],"buckets":[2,0]"#),               // one too few
            summary(#""bounds":[10,5],"buckets":[2,0,0]"#),             // bounds decreasing
            summary(#""bounds":[5,10],"buckets":[3,-1,0]"#),            // negative
            summary(#""buckets":[2,0,0]"#),                             // buckets without bounds
            summary(#""bounds":[5,10]"#),                               // bounds without buckets
            summary(#""bounds":[5,"10"],"buckets":[2,0,0]"#),           // not integers
            #"{"type":"http_summary","ts":120,"pid":1,"role":"client","count":2,"duration_us":{"count":2,"p50":1,"p90":1,"p99":1,"max":1,"bounds":[5],"buckets":[2,0]}}"#,
        ].joined(separator: "\n") + "\n")
        let f = r.file
        XCTAssertEqual(r.warnings, [
            "\(f):3: http_summary: field \"duration_us.buckets\" must be counts adding up to count (2); record skipped",
            "\(f):4: http_summary: field \"duration_us.buckets\" must be 3 counts (one more than bounds); record skipped",
            "\(f):5: http_summary: field \"duration_us.bounds\" must be strictly increasing integers; record skipped",
            "\(f):6: http_summary: field \"duration_us.buckets\" must be counts of 0 or more; record skipped",
            "\(f):7: http_summary: field \"duration_us.buckets\" must be absent without bounds; record skipped",
            "\(f):8: http_summary: field \"duration_us.buckets\" must be an array of integers next to bounds; record skipped",
            "\(f):9: http_summary: field \"duration_us.bounds\" must be an array of integers; record skipped",
            "\(f):10: http_summary: field \"duration_us.sum\" must be an integer; record skipped",
        ])
        XCTAssertEqual(r.records.filter { if case .httpSummary = $0 { return true } else { return false } }.count, 1)
    }

    func testDecodeNewConnectionFieldsAndProcessEnd() throws {
        let c = try decode(#"""
            {"type":"connection","ts":10,"pid":1,"conn_id":1,"transport":"tcp","role":"client","peer":"127.0.0.1:8443",
             "tls":{"library":"openssl","start_ts":1,"end_ts":2001,"handshake_us":2000,"version":"TLSv1.3","alpn":"http/1.1"},
             "shutdown_ts":9,"bytes_in":1,"bytes_out":2,"http_requests":3,"error":"ECONNRESET","error_phase":"io"}
            """#)
        guard case .connection(let conn) = c else { return XCTFail("not a connection") }
        XCTAssertEqual(conn.tls, TLSInfo(library: "openssl", startTs: 1, endTs: 2001, handshakeUs: 2000,
                                         version: "TLSv1.3", alpn: "http/1.1"))
        XCTAssertEqual(conn.shutdownTs, 9)
        XCTAssertEqual(conn.httpRequests, 3)
        XCTAssertEqual(conn.errorPhase, "io")

        let udp = try decode(#"{"type":"connection","ts":10,"pid":1,"transport":"udp","role":"client","peer":null,"tls":null}"#)
        guard case .connection(let u) = udp else { return XCTFail("not a connection") }
        XCTAssertNil(u.tls)
        XCTAssertNil(u.httpRequests)
        XCTAssertEqual(PeerKey(u).label, "udp client → (unconnected)")

        let e = try decode(#"{"type":"process_end","ts":10,"pid":1,"reason":"exit","capture_dropped":7,"untracked_connections":2}"#)
        guard case .processEnd(let end) = e else { return XCTFail("not process_end") }
        XCTAssertEqual(end.captureDropped, 7)
        XCTAssertEqual(end.untrackedConnections, 2)
    }

    func testNewRecordTypesAreNotUnknown() throws {
        let r = try read(#"{"type":"http","ts":110,"pid":1,"role":"client","status":200}"# + "\n"
                         + #"{"type":"http_summary","ts":120,"pid":1,"role":"client","count":1}"# + "\n")
        XCTAssertEqual(r.warnings, [])
        XCTAssertEqual(r.records.count, 4)
    }

    /// A wrong field rejects its record with file:line and the field's name, nested ones dotted.
    func testBadFieldsNameFileLineAndField() throws {
        let r = try read([
            #"{"type":"http","ts":110,"pid":1,"role":"client","status":"200"}"#,
            #"{"type":"http","ts":111,"pid":1,"status":200}"#,
            #"{"type":"http","ts":112,"pid":1,"role":"client","complete":"yes"}"#,
            #"{"type":"http_summary","ts":120,"pid":1,"role":"client"}"#,
            #"{"type":"http_summary","ts":121,"pid":1,"role":"client","count":3,"duration_us":{"count":3,"p50":1.5,"p90":2,"p99":2,"max":2}}"#,
            #"{"type":"http_summary","ts":122,"pid":1,"role":"client","count":3,"ttfb_us":{"count":3,"p50":1,"p90":2,"p99":2}}"#,
            #"{"type":"http_summary","ts":123,"pid":1,"role":"client","count":3,"ttfb_us":[1,2]}"#,
            #"{"type":"connection","ts":130,"pid":1,"role":"client","tls":"TLSv1.3"}"#,
            #"{"type":"connection","ts":131,"pid":1,"role":"client","tls":{"handshake_us":"fast"}}"#,
            #"{"type":"connection","ts":132,"pid":1,"role":"client","http_requests":-1.5}"#,
            #"{"type":"process_end","ts":140,"pid":1,"reason":"exit","capture_dropped":true}"#,
        ].joined(separator: "\n") + "\n")
        let f = r.file
        XCTAssertEqual(r.warnings, [
            "\(f):2: http: field \"status\" must be an integer; record skipped",
            "\(f):3: http: field \"role\" must be a string; record skipped",
            "\(f):4: http: field \"complete\" must be a boolean; record skipped",
            "\(f):5: http_summary: field \"count\" must be an integer; record skipped",
            "\(f):6: http_summary: field \"duration_us.p50\" must be an integer; record skipped",
            "\(f):7: http_summary: field \"ttfb_us.max\" must be an integer; record skipped",
            "\(f):8: http_summary: field \"ttfb_us\" must be an object; record skipped",
            "\(f):9: connection: field \"tls\" must be an object; record skipped",
            "\(f):10: connection: field \"tls.handshake_us\" must be an integer; record skipped",
            "\(f):11: connection: field \"http_requests\" must be an integer; record skipped",
            "\(f):12: process_end: field \"capture_dropped\" must be an integer; record skipped",
        ])
        XCTAssertEqual(r.records.count, 2)
    }

    // MARK: statistics

    func testStatusClasses() {
        var s = StatusClasses()
        for status in [200, 204, 299, 301, 304, 404, 499, 500, 503, 101, 199, 600, 42] { s.add(status: status) }
        s.add(status: nil, count: 3)
        s.add(status: 200, count: 10)
        XCTAssertEqual([s.s2xx, s.s3xx, s.s4xx, s.s5xx, s.other, s.noResponse], [13, 2, 2, 2, 4, 3])
    }

    func testSummaryWeights() {
        func w(_ n: Int64) -> [UInt64] { let t = DurationStats.summaryWeights(count: n); return [t.0, t.1, t.2, t.3] }
        XCTAssertEqual(w(0), [0, 0, 0, 0])
        XCTAssertEqual(w(1), [0, 0, 0, 1])            // the one value is the max
        XCTAssertEqual(w(2), [1, 0, 0, 1])
        XCTAssertEqual(w(7), [4, 2, 0, 1])            // ⌈3.5⌉ = 4, ⌈6.3⌉ = 7 → 6 (the max keeps one)
        XCTAssertEqual(w(100), [50, 40, 9, 1])
        XCTAssertEqual(w(1000), [500, 400, 90, 10])
        XCTAssertEqual(w(101), [51, 40, 9, 1])        // ⌈50.5⌉, ⌈90.9⌉ = 91, ⌈99.99⌉ = 100
        let big: Int64 = 1_000_000_000_000_003
        XCTAssertEqual(w(big).reduce(0, +), UInt64(big))
        for n in Int64(1) ... 300 { XCTAssertEqual(w(n).reduce(0, +), UInt64(n), "n = \(n)") }
    }

    /// One summary alone gives back its own p50, p90, p99 and max; p95 reads as p99 (an upper bound).
    func testSummaryAloneRoundTrips() {
        var d = DurationStats()
        d.record(summary: SummaryDistribution(count: 1000, p50: 100, p90: 200, p99: 500, max: 900))
        XCTAssertEqual(d.count, 1000)
        XCTAssertEqual(d.approximateCount, 1000)
        XCTAssertEqual(d.percentile(50), 100)
        XCTAssertEqual(d.percentile(90), 200)
        XCTAssertEqual(d.percentile(95), 500)
        XCTAssertEqual(d.percentile(99), 500)
        XCTAssertEqual(d.max, 900)
        var none = DurationStats()
        none.record(summary: SummaryDistribution(count: 0, p50: 0, p90: 0, p99: 0, max: 0))
        XCTAssertEqual(none.count, 0)
        XCTAssertNil(none.percentile(50))
    }

    /// The documented promise: merged percentiles never understate. Summaries made (with exact
    /// nearest-rank quantiles) from random batches, merged with exact records, give percentiles
    /// at or above those of all the raw values.
    func testMergedSummariesAreUpperBounds() {
        var rng = LCG(seed: 42)
        for round in 0 ..< 50 {
            var raw: [Int64] = []
            var merged = DurationStats()
            for _ in 0 ..< 3 {       // some exact records
                let v = Int64(rng.next() % 2000) + 1
                raw.append(v); merged.record(v)
            }
            for _ in 0 ..< 1 + Int(rng.next() % 4) {
                let n = 1 + Int(rng.next() % 300)
                let skew = 1 + rng.next() % 5
                let batch = (0 ..< n).map { _ in Int64((rng.next() % 2000) / skew) + 1 }.sorted()
                func q(_ p: Int) -> Int64 { batch[(n * p + 99) / 100 - 1] }   // nearest rank ⌈n·p⌉
                merged.record(summary: SummaryDistribution(count: Int64(n), p50: q(50), p90: q(90), p99: q(99), max: batch[n - 1]))
                raw += batch
            }
            var exact = DurationStats()
            for v in raw { exact.record(v) }
            XCTAssertEqual(merged.count, raw.count)
            for p in [50.0, 90.0, 95.0, 99.0, 100.0] {
                XCTAssertGreaterThanOrEqual(merged.percentile(p)!, exact.percentile(p)!, "round \(round), p\(p)")
            }
            XCTAssertEqual(merged.max, exact.max)
        }
    }

    func testHTTPStatsKeysAndCounts() {
        var s = HTTPStats(key: HTTPKey(role: "client", host: "a"))
        s.add(HTTPRecord(ts: 1, pid: 1, role: "client", host: "a", status: 200, ttfbUs: 10, durationUs: 20,
                         requestHeaderBytes: 5, requestBodyBytes: 1, responseHeaderBytes: 7, responseBodyBytes: 3))
        s.add(HTTPRecord(ts: 2, pid: 1, role: "client", scheme: "https", host: "a", status: nil, error: "incomplete"))
        s.add(HTTPSummaryRecord(ts: 3, pid: 1, role: "client", host: "a", status: 503, count: 4, errors: 1,
                                requestBytes: 40, responseBytes: 80,
                                durationUs: SummaryDistribution(count: 4, p50: 30, p90: 40, p99: 40, max: 50)))
        XCTAssertEqual(s.requests, 6)
        XCTAssertEqual(s.records, 2)
        XCTAssertEqual(s.summarized, 4)
        XCTAssertEqual([s.statusClasses.s2xx, s.statusClasses.s5xx, s.statusClasses.noResponse], [1, 4, 1])
        XCTAssertEqual(s.errors, 2)
        XCTAssertEqual(s.topErrors.map(\.name), ["incomplete"])
        XCTAssertEqual(s.requestBytes, 46)
        XCTAssertEqual(s.responseBytes, 90)
        XCTAssertEqual(s.schemes, ["http", "https"])
        XCTAssertEqual(s.ttfb.count, 1)
        // 20 exact, then 30 ×2, 40 ×1, 50 ×1 from the summary.
        XCTAssertEqual(s.durations.count, 5)
        XCTAssertEqual(s.durations.percentile(50), 30)
        XCTAssertEqual(s.durations.max, 50)
        XCTAssertEqual(HTTPKey(HTTPRecord(ts: 0, pid: 1, role: "client", host: nil, peer: "10.0.0.1:80")).host, "10.0.0.1:80")
        XCTAssertEqual(HTTPKey(HTTPSummaryRecord(ts: 0, pid: 1, role: "client", host: nil, count: 1)).host, "?")
    }

    func testPeerKeysByTransport() {
        XCTAssertEqual(PeerKey(ConnectionRecord(ts: 0, pid: 1, role: "client", peer: "10.0.0.53:53")).label,
                       "client → 10.0.0.53:53")
        XCTAssertEqual(PeerKey(ConnectionRecord(ts: 0, pid: 1, transport: "udp", role: "client", peer: "10.0.0.53:53")).label,
                       "udp client → 10.0.0.53:53")
        XCTAssertEqual(PeerKey(ConnectionRecord(ts: 0, pid: 1, transport: nil, role: "client", peer: "10.0.0.53:53")).label,
                       "client → 10.0.0.53:53")  // older logs have no transport: TCP
        XCTAssertEqual(PeerKey(ConnectionRecord(ts: 0, pid: 1, transport: "unix", family: "unix", role: "pair",
                                                local: "(unnamed)", peer: "(unnamed)")).label,
                       "unix pair ↔ (unnamed)")
    }

    // MARK: the report on Fixtures/http

    static let fixture = testsDir + "/Fixtures/http"

    private func report() throws -> Report { Report(analysis: try RunAnalysis.load(paths: [Self.fixture])) }

    func testGoldenText() throws {
        let text = TextReport(color: false).render(try report()).replacingOccurrences(of: Self.fixture, with: "Fixtures/http")
        let golden = testsDir + "/Golden/http.txt"
        XCTAssertEqual(text, try String(contentsOfFile: golden, encoding: .utf8),
                       "differs from \(golden); run scripts/regen-golden.sh if intended")
    }

    func testGoldenJSON() throws {
        let json = try JSONReport.render(try report()).replacingOccurrences(of: Self.fixture, with: "Fixtures/http")
        let golden = testsDir + "/Golden/http.json"
        XCTAssertEqual(json, try String(contentsOfFile: golden, encoding: .utf8),
                       "differs from \(golden); run scripts/regen-golden.sh if intended")
    }

    /// Every number here is worked out from the fixture's lines by hand.
    func testFixtureFacts() throws {
        let r = try report()
        XCTAssertEqual(r.warnings.map(\.kind), [])
        // capture drops (curl), untracked (python)
        XCTAssertEqual(r.drops.map(\.captureDropped), [2, 0])
        XCTAssertEqual(r.drops.map(\.untrackedConnections), [0, 1])
        XCTAssertEqual(r.headline.connections, 9)
        XCTAssertEqual(r.headline.errors, 3)
        // curl: 6 http records (1 incomplete); python: 2 records + summaries of 100 (1 error) and 2 (2 errors).
        XCTAssertEqual(r.headline.httpRequests, 6 + 2 + 100 + 2)
        XCTAssertEqual(r.headline.httpErrors, 1 + 1 + 2)
        XCTAssertEqual(r.headline.captureDropped, 2)
        XCTAssertEqual(r.headline.untrackedConnections, 1)
        XCTAssertEqual(r.processes.map(\.httpRequests), [6, 104])
        XCTAssertEqual(r.processes.map(\.captureDropped), [2, 0])

        // Then the hosts of connections that failed before any request (TLS to 10.0.0.6:443, connect
        // to :5432), by their address.
        XCTAssertEqual(r.http.map(\.key), ["server ← http://127.0.0.1:8080", "client → https://api.local",
                                            "client → http://10.0.0.7:80", "client → 10.0.0.6", "client → 127.0.0.1:5432"])

        // Server: records (ttfb 100, dur 200, 200 OK) and (300, 400, 500), summary of 100 at
        // ttfb p50/p90/p99/max 120/250/800/1000 and duration 150/300/900/1200 → weights 50/40/9/1;
        // summary of 2 without response. TTFB sorted: 100, 120×50 (→51), 250×40 (→91), 300 (→92),
        // 800×9 (→101), 1000 (→102): p50 = rank 51 = 120, p95 = rank ⌈96.9⌉ = 97 = 800,
        // p99 = rank ⌈100.98⌉ = 101 = 800. Duration: 150×50, 200 (→51), 300×40, 400, 900×9, 1200.
        let server = r.http[0]
        XCTAssertEqual(server.requests, 104)
        XCTAssertEqual(server.records, 2)
        XCTAssertEqual(server.summarized, 102)
        XCTAssertEqual(server.statusClasses.s2xx, 101)
        XCTAssertEqual(server.statusClasses.s5xx, 1)
        XCTAssertEqual(server.statusClasses.noResponse, 2)
        XCTAssertEqual(server.errors, 3)
        XCTAssertEqual(server.errorNames.count, 0)
        XCTAssertEqual(server.requestBytes, 80 + 80 + 8000 + 160)
        XCTAssertEqual(server.responseBytes, 150 + 140 + 15000)
        let ttfb = try XCTUnwrap(server.ttfbUs)
        XCTAssertEqual([ttfb.count, ttfb.summarized], [102, 100])
        XCTAssertEqual([ttfb.p50, ttfb.p95, ttfb.p99, ttfb.max], [120, 800, 800, 1000])
        let dur = try XCTUnwrap(server.durationUs)
        XCTAssertEqual([dur.p50, dur.p95, dur.p99, dur.max], [200, 900, 900, 1200])

        // Client, api.local over TLS: 200, 200, 201, 404 and one cut short without response.
        // TTFB 1000, 2000, 3000, 500; durations 1500, 2500, 4000, 600 (none for the cut one).
        let api = r.http[1]
        XCTAssertEqual(api.schemes, ["https"])
        XCTAssertEqual(api.requests, 5)
        XCTAssertEqual(api.summarized, 0)
        XCTAssertEqual([api.statusClasses.s2xx, api.statusClasses.s4xx, api.statusClasses.noResponse], [3, 1, 1])
        XCTAssertEqual(api.errors, 1)
        XCTAssertEqual(api.errorNames.map(\.name), ["incomplete"])
        XCTAssertEqual(api.requestBytes, 100 + 100 + 200 + 90 + 90)
        XCTAssertEqual(api.responseBytes, 1200 + 700 + 200 + 160)
        let apiTTFB = try XCTUnwrap(api.ttfbUs)
        XCTAssertEqual([Int64(apiTTFB.count), apiTTFB.p50, apiTTFB.p95, apiTTFB.max], [4, 1000, 3000, 3000])
        XCTAssertNil(apiTTFB.summarized)
        let apiDur = try XCTUnwrap(api.durationUs)
        XCTAssertEqual([Int64(apiDur.count), apiDur.p50, apiDur.p99, apiDur.max], [4, 1500, 4000, 4000])

        // A 101 upgrade without Host: keyed by the peer, counted as "other".
        let ws = r.http[2]
        XCTAssertEqual(ws.host, "10.0.0.7:80")
        XCTAssertEqual(ws.statusClasses.other, 1)

        // Connections: tcp ×7 (4 curl + 3 python), udp ×1, unix ×1; TLS on 3, handshakes of 2000
        // and 4000 us, one unfinished (failed with EPROTO); one error in each phase.
        let c = r.connectionStats
        XCTAssertEqual(c.transports.map { "\($0.name)=\($0.count)" }, ["tcp=7", "udp=1", "unix=1"])
        XCTAssertEqual(c.tls.connections, 3)
        XCTAssertEqual(c.tls.unfinished, 1)
        XCTAssertEqual(c.tls.handshakeUs.map { [$0.count, Int($0.p50), Int($0.p95), Int($0.max)] }, [2, 2000, 4000, 4000])
        XCTAssertEqual(c.tls.versions.map(\.name), ["TLSv1.2", "TLSv1.3"])
        XCTAssertEqual(c.tls.libraries.map { "\($0.name)=\($0.count)" }, ["openssl=2", "gnutls=1"])
        XCTAssertEqual(c.tls.alpn.map(\.name), ["http/1.1"])
        XCTAssertEqual(c.errors.map { "\($0.phase):\($0.name)" }, ["connect:ECONNREFUSED", "tls:EPROTO", "io:ECONNRESET"])

        let udp = try XCTUnwrap(r.peers.first { $0.transport == "udp" })
        XCTAssertEqual(udp.key, "udp client → 10.0.0.53:53")
        XCTAssertEqual(r.peers.first { $0.transport == "unix" }?.key, "unix server ← /run/app.sock")
    }

    func testRunSummaryMentionsCaptureDrops() throws {
        XCTAssertEqual(RunSummary.lines(report: try report(), logDir: "/tmp/w").first,
                       "wedjat: 2 processes, 9 connections (3 errors), 2.2 KiB in, 1.7 KiB out, "
                       + "0 dropped events, 0 dropped records, 2 capture drops")
    }
}

/// Deterministic pseudo-random numbers for the property test.
struct LCG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state >> 33
    }
}

/// What the report leaves out it says, and the text fits its width with units on every number.
final class ReportViewTests: XCTestCase {
    static let fixtures = ["run1", "http", "vitals", "stalls"].map { testsDir + "/Fixtures/" + $0 }

    private func report(_ path: String) throws -> Report { Report(analysis: try RunAnalysis.load(paths: [path])) }

    /// Fixtures/http: python's 102 exchanges past the record budget have no row in SLOWEST; their
    /// slowest groups are listed beside it, with their p99 and max.
    func testSlowestSaysWhatIsOnlyCounted() throws {
        let r = try report(Self.fixtures[1])
        let summarized = r.http.reduce(Int64(0)) { $0 + $1.summarized }
        XCTAssertEqual(summarized, 102)
        XCTAssertEqual(r.slowestSummarized.reduce(Int64(0)) { $0 + $1.count }, 102, "every summarized exchange is in a group")
        let slowest = try XCTUnwrap(r.slowestSummarized.first)
        XCTAssertEqual(slowest.maxUs, r.slowestSummarized.compactMap(\.maxUs).max())
        let text = TextReport(width: 200).render(r)
        XCTAssertTrue(text.contains("+ 102 exchanges only counted in http_summary records"), text)
        XCTAssertTrue(text.contains(Format.shortDuration(slowest.maxUs!)), text)
    }

    /// At 100 columns (off a terminal) and at 60, no line is wider; durations have a unit.
    func testTextFitsItsWidthWithUnits() throws {
        for f in Self.fixtures {
            let r = try report(f)
            for width in [100, 60] {
                for line in TextReport(width: width).render(r).split(separator: "\n") {
                    XCTAssertLessThanOrEqual(TextReport.visibleCount(String(line)), width, "\(f) at \(width): \(line)")
                }
            }
            let text = TextReport().render(r)
            XCTAssertFalse(text.contains(" ms   ") && text.contains("P50 ms"), "a unit in the header instead of the values")
            XCTAssertFalse(text.contains("send 0"), "zero phases are left out")
            XCTAssertFalse(text.contains("exec_source"), "internal names")
        }
        // A table that cannot fit drops columns and says which.
        let narrow = TextReport(width: 60).render(try report(Self.fixtures[1]))
        XCTAssertTrue(narrow.contains("left out at this width"), narrow)
    }

    /// An exec chain is one PROCESSES row (run1: bash forks, the child execs curl).
    func testExecChainIsOneRow() throws {
        let text = TextReport(width: 200).render(try report(Self.fixtures[0]))
        let processes = text.components(separatedBy: "PROCESSES\n")[1].components(separatedBy: "\n\n")[0]
        XCTAssertTrue(processes.contains("curl (via bash)"), processes)
        XCTAssertEqual(processes.split(separator: "\n").count, 1 + 3, "header and 3 processes for 4 logs")
    }
}

/// process_end.bytes_after_end (calls that returned after their connection had ended) is named
/// in the losses of the text, HTML and JSON reports, and absent from them when 0.
final class BytesAfterEndTests: XCTestCase {
    func testBytesMovedAfterTheEndAreNamed() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let end = #"{"type":"process_end","ts":2000,"pid":7,"reason":"exit","exit_status":0,"bytes_after_end":62}"# + "\n"
        let path = try dir.write("app.7.1.ndjson", Line.start(pid: 7, ts: 1000, exe: "/usr/bin/app") + end)
        let analysis = try RunAnalysis.load(paths: [path])
        let r = Report(analysis: analysis)
        XCTAssertEqual(r.headline.bytesAfterEnd, 62)
        let text = TextReport(color: false, width: 200).render(r)
        XCTAssertTrue(text.contains("62 B moved after their connection ended"), text)
        XCTAssertTrue(HTMLReport().render(analysis, report: r).contains("62 B moved after their connection ended"))
        XCTAssertTrue(try JSONReport.render(r).replacingOccurrences(of: " ", with: "").contains(#""bytes_after_end":62"#))

        let quiet = try dir.write("app.8.1.ndjson", Line.start(pid: 8, ts: 1000, exe: "/usr/bin/app") + Line.end(pid: 8, ts: 2000))
        let q = Report(analysis: try RunAnalysis.load(paths: [quiet]))
        XCTAssertNil(q.headline.bytesAfterEnd)
        XCTAssertFalse(TextReport(color: false, width: 200).render(q).contains("after their connection ended"))
        XCTAssertFalse(try JSONReport.render(q).contains("bytes_after_end"))
    }
}
