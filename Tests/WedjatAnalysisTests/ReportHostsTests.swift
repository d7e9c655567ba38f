import Histogram
import XCTest
@testable import WedjatAnalysis

/// The per-host parts of the report: which connections count for which host, the error rates,
/// the status breakdown, the slowest exchanges, the headline; numbers worked out by hand.
final class ReportHostsTests: XCTestCase {
    static let httpFixture = testsDir + "/Fixtures/http"
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    private func http(_ ts: Int64, conn: Int64?, host: String?, status: Int?, duration: Int64?, ttfb: Int64? = nil,
                      peer: String = "10.0.0.5:443", index: Int = 0, error: String? = nil, role: String = "client",
                      path: String = "/") -> Record {
        .http(HTTPRecord(ts: ts, pid: 1, connId: conn, role: role, scheme: "https", host: host, path: path, status: status,
                         peer: peer, requestIndex: index, reused: index > 0, requestStartTs: ts - (duration ?? 0),
                         requestEndTs: ts - (duration ?? 0), responseStartTs: ttfb.map { ts - (duration ?? 0) + $0 },
                         responseEndTs: duration == nil ? nil : ts, ttfbUs: ttfb, waitUs: ttfb, durationUs: duration,
                         requestHeaderBytes: 100, responseHeaderBytes: 200, responseBodyBytes: 700, error: error))
    }

    private func conn(_ ts: Int64, id: Int64, peer: String = "10.0.0.5:443", host: String? = "api.local",
                      requests: Int64?, error: String? = nil, dns: Int64? = nil, connect: Int64? = 100,
                      tls: Int64? = nil, role: String = "client", local: String? = "10.1.1.1:40000") -> Record {
        .connection(ConnectionRecord(ts: ts, pid: 1, connId: id, role: role, local: local, peer: peer, openTs: ts - 5000, durationUs: 5000,
                                     connectUs: connect, error: error, host: host,
                                     tls: tls.map { TLSInfo(library: "openssl", handshakeUs: $0 - 10, phaseUs: $0) },
                                     httpRequests: requests, dnsUs: dns))
    }

    private func analyse(_ records: [Record], slowest: Int = 10) -> Report {
        var a = RunAnalysis(slowest: slowest)
        a.add(.processStart(ProcessStart(ts: 0, pid: 1, exe: "/bin/app")), file: "app.1.0.ndjson", line: 1)
        for (i, r) in records.enumerated() { a.add(r, file: "app.1.0.ndjson", line: i + 2) }
        return Report(analysis: a)
    }

    /// A proxy: the requests name `api.example.com`, the connection goes to the proxy
    /// `proxy.local:3128`; the conn_id puts it with the requests. A refused connect and a TLS
    /// failure count against the host they were made to (the TLS one to api.example.com:443,
    /// which is the requests' host); a clean non-HTTP connection (a database) against none;
    /// with HTTP parsing off (no `http_requests`), connections still have their hosts.
    func testConnectionsGoToTheHostOfTheirRequests() throws {
        let r = analyse([
            http(1000, conn: 1, host: "api.example.com", status: 200, duration: 400, ttfb: 300, peer: "10.0.0.9:3128"),
            http(2000, conn: 1, host: "api.example.com", status: 503, duration: 900, ttfb: 800, peer: "10.0.0.9:3128", index: 1),
            conn(2100, id: 1, peer: "10.0.0.9:3128", host: "proxy.local", requests: 2, dns: 50, connect: 120, tls: 2000),
            conn(2200, id: 2, peer: "10.0.0.9:3128", host: "proxy.local", requests: 0, error: "ECONNREFUSED", connect: nil),
            conn(2300, id: 3, peer: "10.0.0.9:5432", host: "db.local", requests: 0),
            conn(2400, id: 4, peer: "10.0.0.9:443", host: "api.example.com", requests: 0, error: "EPROTO", tls: nil),
            conn(2500, id: 5, peer: "[::1]:8080", host: nil, requests: nil),
        ])
        XCTAssertEqual(r.http.map(\.key), ["client → https://api.example.com", "client → [::1]:8080", "client → proxy.local:3128"])
        let api = try XCTUnwrap(r.http.first)
        XCTAssertEqual(api.requests, 2)
        XCTAssertEqual(api.connections, 2)
        XCTAssertEqual(api.dnsUs?.p50, 50)
        XCTAssertEqual(api.connectUs?.count, 2)
        XCTAssertEqual(api.connectUs?.max, 120)
        XCTAssertEqual(api.tlsUs?.p50, 2000, "tls.phase_us, as HAR counts it")
        XCTAssertEqual(api.serverErrorRate, 0.5)
        XCTAssertEqual(api.httpErrorRate, 0.5)
        XCTAssertEqual([api.failedConnections, api.connectionErrors], [1, 1])
        XCTAssertEqual([api.attempts, api.networkErrors], [3, 1])
        XCTAssertEqual(api.networkErrorRate, 0.333333)
        XCTAssertEqual(api.statusCodes.map(\.status), [200, 503])
        // RATE: 2 × 1000 bytes over the host's active span, the first request's start (600 us)
        // to the last response's end (2000 us).
        XCTAssertEqual(api.activeSpanUs, 1400)
        XCTAssertEqual(Double(try XCTUnwrap(api.throughputBytesPerS)), 2000 / 0.0014, accuracy: 1)
        XCTAssertEqual([api.bytesIn, api.bytesOut], [api.responseBytes, api.requestBytes], "a client receives the responses")

        let refused = try XCTUnwrap(r.http.last)
        XCTAssertEqual([refused.requests, refused.attempts, refused.networkErrors], [0, 1, 1])
        XCTAssertEqual(refused.networkErrorRate, 1)
        let v6 = try XCTUnwrap(r.http.first { $0.host == "[::1]:8080" })
        XCTAssertEqual(v6.connections, 1)
        XCTAssertNil(v6.networkErrorRate, "no attempt that counts: no request, no failure")

        // Headline: 2 requests, one 503; network errors: 2 failed connects of 4 attempts.
        XCTAssertEqual(r.headline.httpErrorRate, 0.5)
        XCTAssertEqual(r.headline.serverErrorRate, 0.5)
        XCTAssertEqual(r.headline.clientErrorRate, 0)
        XCTAssertEqual(r.headline.networkErrorRate, 0.5)
        XCTAssertEqual(r.headline.connectionErrorRate, 0.4)
        XCTAssertEqual(r.headline.ttfbUs?.p50, 300)
        XCTAssertEqual(r.headline.durationUs?.max, 900)
    }

    /// conn_ids are per log: the same id in the next file is another connection.
    func testConnIdsDoNotCrossLogs() {
        var a = RunAnalysis()
        a.add(http(1000, conn: 1, host: "a.local", status: 200, duration: 10), file: "a.1.0.ndjson")
        a.add(conn(1100, id: 1, peer: "10.0.0.1:443", host: "b.local", requests: 1), file: "b.2.0.ndjson")
        let r = Report(analysis: a)
        XCTAssertEqual(r.http.first { $0.host == "a.local" }?.connections, 0)
        XCTAssertEqual(r.http.first { $0.host == "b.local" }?.connections, 1)
    }

    func testStatusBreakdownOfTheHTTPFixture() throws {
        let r = Report(analysis: try RunAnalysis.load(paths: [Self.httpFixture]))
        // Server: 200 + summary of 100 × 200 and 500; summary of 2 without response. Client:
        // 200 × 2, 201, 404, 101, and /slow without response.
        XCTAssertEqual(r.statuses.map(\.status), [200, nil, 101, 201, 404, 500])
        XCTAssertEqual(r.statuses.map(\.count), [103, 3, 1, 1, 1, 1])
        XCTAssertEqual(r.statuses.map(\.count).reduce(0, +), r.headline.httpRequests)
        XCTAssertEqual(r.statuses[0].share, 0.936364)
        XCTAssertEqual(r.statuses[0].hosts.map(\.count), [101, 2])
        XCTAssertEqual(r.statuses[1].hosts.map(\.key), ["server ← http://127.0.0.1:8080", "client → https://api.local"])

        let api = try XCTUnwrap(r.http.first { $0.key == "client → https://api.local" })
        XCTAssertEqual([api.requests, api.errors, api.attempts], [5, 1, 5])
        XCTAssertEqual(api.connections, 2)
        XCTAssertEqual(api.clientErrorRate, 0.2)
        XCTAssertEqual(api.networkErrorRate, 0.2)
        XCTAssertEqual(api.tlsUs?.count, 2)
        XCTAssertEqual(api.tlsUs?.max, 4000)
        let server = try XCTUnwrap(r.http.first)
        XCTAssertEqual(server.key, "server ← http://127.0.0.1:8080")
        XCTAssertEqual(server.connections, 2, "joined to the requests by conn_id")
        XCTAssertEqual(server.serverErrorRate, 0.009615)   // 1 / 104
        // curl's 5 exchanges, python's 2 records and 102 summarized, plus 2 failed connects.
        XCTAssertEqual(r.headline.networkErrorRate, 0.053571)   // (1 + 3 + 1 + 1) / (110 + 2)
    }

    func testSlowestKeepsTheLongestAndTheirConnectionSetUp() throws {
        let r = analyse([
            http(1000, conn: 1, host: "a", status: 200, duration: 300, ttfb: 250),
            http(2000, conn: 1, host: "a", status: 200, duration: 900, ttfb: 100, index: 1),
            http(3000, conn: 2, host: "a", status: 500, duration: 700, ttfb: 600, path: "/boom"),
            http(4000, conn: 2, host: "a", status: nil, duration: nil, index: 1, error: "incomplete"),
            http(5000, conn: 3, host: "a", status: 200, duration: 700, ttfb: 10),
            conn(6000, id: 2, requests: 2, dns: 40, connect: 110, tls: 900),
            conn(6100, id: 1, requests: 2, dns: nil, connect: 120, tls: nil),
        ], slowest: 3)
        XCTAssertEqual(r.slowest.map(\.durationUs), [900, 700, 700])
        XCTAssertEqual(r.slowest.map(\.line), [3, 4, 6], "ties: the earlier first")
        XCTAssertEqual(r.slowest[1].path, "/boom")
        XCTAssertEqual(r.slowest[1].receiveUs, 100)
        XCTAssertEqual(r.slowest[1].sendUs, 0)
        // The 700 us exchange opened connection 2: its set-up is known; the 900 us one was the
        // second on connection 1, which it did not open.
        XCTAssertEqual([r.slowest[1].dnsUs, r.slowest[1].connectUs, r.slowest[1].tlsUs], [40, 110, 900])
        XCTAssertEqual([r.slowest[0].dnsUs, r.slowest[0].connectUs, r.slowest[0].tlsUs], [nil, nil, nil])
        XCTAssertEqual(r.slowest[0].log, "app.1.0.ndjson")
        let text = TextReport(width: 200).render(r)
        XCTAssertTrue(text.contains("SLOWEST REQUESTS (3 of 5 recorded exchanges"), text)
        // Zero phases are left out; set-up + total is the exchange with its connection's set-up.
        XCTAssertTrue(text.contains("blocked 290 us, dns 40 us, connect 110 us, tls 900 us, wait 600 us, receive 100 us · pid 1 app.1.0.ndjson:4"), text)
        XCTAssertEqual(r.slowest[1].setupUs, 290 + 40 + 110 + 900)
        XCTAssertEqual(r.slowest[1].elapsedUs, 290 + 40 + 110 + 900 + 700)
        XCTAssertEqual(r.slowest[0].setupUs, nil, "a reused connection's exchange has no set-up")
    }

    /// One pass for several percentiles gives what the library's valueAtPercentile gives.
    func testPercentilesInOnePassMatchTheLibrary() {
        var rng = SystemRandomNumberGenerator()
        for round in 0 ..< 20 {
            var d = DurationStats()
            var h = Histogram<UInt64>(highestTrackableValue: 1 << 20, numberOfSignificantValueDigits: .three)
            h.autoResize = true
            for _ in 0 ..< (1 + round * 50) {
                let v = UInt64.random(in: 0 ... (round % 2 == 0 ? 5000 : 50_000_000), using: &rng)
                d.record(Int64(v))
                h.record(v)
            }
            let ps = [0.0, 1, 50, 90, 95, 99, 99.9, 100]
            XCTAssertEqual(d.percentiles(ps), ps.map { Int64(h.valueAtPercentile($0)) }, "round \(round)")
        }
    }

    func testTextHeadlineFitsAScreen() throws {
        let r = Report(analysis: try RunAnalysis.load(paths: [Self.httpFixture]))
        let lines = TextReport().render(r).split(separator: "\n", omittingEmptySubsequences: false)
        let headline = lines.prefix { !$0.isEmpty }
        XCTAssertLessThanOrEqual(headline.count, 8)
        XCTAssertEqual(headline[2], "  HTTP        110 requests; network errors 5.36%, HTTP errors 1.82% (4xx 0.91%, 5xx 0.91%)")
        XCTAssertEqual(headline[3], "  coverage    5 of 5 HTTP connections decoded (100.0% of their 3.5 KiB)")
        XCTAssertTrue(headline[4].hasPrefix("  latency     TTFB p50 250 us, p99 2.000 ms; total p50 300 us"), String(headline[4]))
    }

    /// A thousand processes: the text shows the first rows of the long sections and says how
    /// many more the JSON has.
    func testLongSectionsAreCut() throws {
        var a = RunAnalysis()
        for pid in 1 ... 1000 {
            let file = "p.\(pid).0.ndjson"
            a.add(.processStart(ProcessStart(ts: Int64(pid), pid: pid, exe: "/bin/p", ppid: 1)), file: file)
            a.add(.drops(DropsRecord(ts: Int64(pid) + 1, pid: pid, droppedEvents: 1, droppedRecords: 0)), file: file)
        }
        let r = Report(analysis: a)
        let text = TextReport().render(r)
        XCTAssertEqual(r.processes.count, 1000)
        XCTAssertEqual(r.drops.count, 1000)
        XCTAssertTrue(text.contains("  … 970 more processes (--format json lists all)"), text)
        XCTAssertTrue(text.contains("  … 990 more warnings of this kind (no_end) (--format json lists all)"), text)
        XCTAssertLessThan(text.split(separator: "\n").count, 300)
    }
}
