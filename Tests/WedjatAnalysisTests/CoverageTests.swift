import Foundation
import XCTest
@testable import WedjatAnalysis

/// What the report and the exports say about traffic wedjat did not decode (`http_none`,
/// `http_undecoded`), DNS failures by name, and exchanges handed off to a forked child, on
/// synthetic logs written to the log contract (docs/LOG_FORMAT.md); numbers worked out by hand.
final class CoverageTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    static let t0: Int64 = 1_763_782_900_000_000

    private func conn(_ id: Int, role: String = "client", peer: String, local: String = "10.1.1.1:40000", host: String? = nil,
                      bytesIn: Int64, bytesOut: Int64, requests: Int64?, none: String? = nil,
                      undecoded: (String, Int64, Int64)? = nil, error: String? = nil, transport: String = "tcp",
                      extra: String = "") -> String {
        let ts = Self.t0 + Int64(id) * 1000
        var f = [#""type":"connection""#, #""ts":\#(ts)"#, #""pid":1"#, #""tid":1"#, #""conn_id":\#(id)"#, #""fd":5"#,
                 #""transport":"\#(transport)""#, #""role":"\#(role)""#, #""local":"\#(local)""#, #""peer":"\#(peer)""#,
                 #""open_ts":\#(ts - 500)"#, #""close_ts":\#(ts)"#, #""duration_us":500"#,
                 #""bytes_in":\#(bytesIn)"#, #""bytes_out":\#(bytesOut)"#,
                 #""host":\#(host.map { "\"\($0)\"" } ?? "null")"#, #""error":\#(error.map { "\"\($0)\"" } ?? "null")"#,
                 #""open_at_exit":false"#]
        if let requests { f.append(#""http_requests":\#(requests)"#) }
        if let none { f.append(#""http_none":"\#(none)""#) }
        if let (reason, i, o) = undecoded { f.append(#""http_undecoded":{"reason":"\#(reason)","bytes_in":\#(i),"bytes_out":\#(o)}"#) }
        if !extra.isEmpty { f.append(extra) }
        return "{" + f.joined(separator: ",") + "}\n"
    }

    private func exchange(_ id: Int, index: Int = 0, status: Int = 200, host: String = "api.local") -> String {
        let ts = Self.t0 + Int64(id) * 1000 - 100
        return #"{"type":"http","ts":\#(ts),"pid":1,"tid":1,"conn_id":\#(id),"role":"client","scheme":"http","method":"GET","host":"\#(host)","path":"/","version":"HTTP/1.1","status":\#(status),"peer":"10.0.0.5:80","request_index":\#(index),"reused":\#(index > 0),"request_start_ts":\#(ts - 300),"request_end_ts":\#(ts - 300),"response_start_ts":\#(ts - 100),"response_end_ts":\#(ts),"ttfb_us":200,"wait_us":200,"duration_us":300,"request_header_bytes":50,"request_body_bytes":0,"response_header_bytes":100,"response_body_bytes":50,"headers":{},"complete":true,"error":null}"#
            + "\n"
    }

    private func dns(_ name: String, error: String?, at ts: Int64) -> String {
        #"{"type":"dns","ts":\#(ts),"pid":1,"tid":1,"api":"getaddrinfo","name":"\#(name)","service":"443","family":"any","start_ts":\#(ts - 40),"duration_us":40,"answers":0,"addresses":[],"error":\#(error.map { "\"\($0)\"" } ?? "null")}"#
            + "\n"
    }

    /// A client that spoke HTTP/1 to one host (one connection desynced after its exchanges),
    /// HTTP/2 to another, TLS through a library wedjat does not hook, Redis, and DNS over UDP.
    private func mixedRun() throws -> String {
        var log = Line.start(pid: 1, ts: Self.t0, exe: "/usr/bin/client")
        log += exchange(1) + exchange(1, index: 1)
        log += conn(1, peer: "10.0.0.5:80", host: "api.local", bytesIn: 300, bytesOut: 100, requests: 2)
        log += exchange(2)
        log += conn(2, peer: "10.0.0.5:80", host: "api.local", bytesIn: 4000, bytesOut: 300, requests: 1,
                    undecoded: ("desync", 3800, 200))
        log += conn(3, peer: "127.0.0.1:8443", bytesIn: 1_200_000, bytesOut: 50_000, requests: 0, none: "http2",
                    undecoded: ("http2", 1_200_000, 50_000))
        log += conn(4, peer: "127.0.0.1:8443", bytesIn: 800_000, bytesOut: 20_000, requests: 0, none: "http2")
        log += conn(5, peer: "10.0.0.8:443", host: "node.local", bytesIn: 6000, bytesOut: 2000, requests: 0, none: "tls_not_hooked")
        log += conn(6, peer: "127.0.0.1:6379", bytesIn: 3000, bytesOut: 100, requests: 0, none: "not_http")
        log += conn(7, peer: "10.0.0.53:53", bytesIn: 80, bytesOut: 40, requests: nil, transport: "udp")
        log += conn(8, peer: "10.0.0.9:80", bytesIn: 0, bytesOut: 0, requests: 0, error: "ECONNREFUSED")
        log += dns("no-such.invalid", error: "EAI_NONAME", at: Self.t0 + 9000)
        log += dns("no-such.invalid", error: "EAI_NONAME", at: Self.t0 + 9100)
        log += dns("flaky.local", error: "EAI_AGAIN", at: Self.t0 + 9200)
        log += dns("api.local", error: nil, at: Self.t0 + 9300)
        log += Line.end(pid: 1, ts: Self.t0 + 20000)
        return try dir.write("client.1.\(Self.t0).ndjson", log)
    }

    func testCoverageCountsDecodedAndUndecodedTrafficByReason() throws {
        let r = Report(analysis: try RunAnalysis.load(paths: [try mixedRun()]))
        let c = try XCTUnwrap(r.coverage)
        // 7 connections carried bytes (the refused one did not).
        XCTAssertEqual(c.connections, 7)
        XCTAssertEqual(c.bytes, 400 + 4300 + 1_250_000 + 820_000 + 8000 + 3100 + 120)
        // HTTP: 2 decoded, 3 not (2 http2, 1 tls_not_hooked); Redis and UDP are other protocols.
        XCTAssertEqual(c.httpConnections, 5)
        XCTAssertEqual(c.decodedConnections, 2)
        XCTAssertEqual(c.decodedBytes, 400 + 100 + 200)   // conn 2: 4300 minus its 4000 undecoded
        XCTAssertEqual(c.undecodedBytes, 4000 + 1_250_000 + 820_000 + 8000)
        XCTAssertEqual(c.decodedShare, 0.4)
        XCTAssertEqual(c.decodedBytesShare, Report.rate(700, 700 + 2_082_000))
        XCTAssertEqual(c.undecoded.map(\.reason), ["http2", "tls_not_hooked", "desync"])
        let h2 = c.undecoded[0]
        XCTAssertEqual(h2.connections, 2)
        XCTAssertEqual(h2.partly, 0)
        XCTAssertEqual(h2.bytesIn, 2_000_000)
        XCTAssertEqual(h2.examples, ["127.0.0.1:8443"])
        XCTAssertEqual(c.undecoded[1].examples, ["node.local:443"])
        XCTAssertEqual(c.undecoded[2].connections, 0)
        XCTAssertEqual(c.undecoded[2].partly, 1)
        XCTAssertEqual(c.undecoded[2].bytes, 4000)
        XCTAssertEqual(c.otherProtocols.map(\.kind), ["tcp", "udp"])
        XCTAssertEqual(c.otherProtocols[0].examples, ["127.0.0.1:6379"])
        XCTAssertNil(c.notParsed)
        XCTAssertNil(c.failed)

        let text = TextReport(color: false, width: 100).render(r)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let wide = TextReport(color: false, width: 200).render(r).split(separator: "\n").map(String.init)
        XCTAssertEqual(wide.first { $0.hasPrefix("  coverage") },
                       "  coverage    2 of 5 HTTP connections decoded (0.0% of their 2.0 MiB); not decoded: 2 http2, 1 tls_not_hooked,"
                       + " 1 desync after decoded exchanges")
        let section = Array(lines.drop { !$0.hasPrefix("COVERAGE") }.prefix { !$0.isEmpty })
        XCTAssertEqual(section, [
            "COVERAGE (connections that carried bytes; reasons as the log names them)",
            "  WHAT                            CONNS       IN       OUT  WHERE",
            "  HTTP decoded                        2    500 B     200 B  0.0% of the HTTP connections' bytes",
            "  not decoded: http2                  2  1.9 MiB  68.4 KiB  127.0.0.1:8443",
            "  not decoded: tls_not_hooked         1  5.9 KiB   2.0 KiB  node.local:443",
            "  not decoded: desync                +1  3.7 KiB     200 B  api.local:80",
            "  other protocol: tcp (not HTTP)      1  2.9 KiB     100 B  127.0.0.1:6379",
            "  other protocol: udp                 1     80 B      40 B  10.0.0.53:53",
            "  +N: decoded connections whose bytes after their exchanges were not (IN, OUT: those bytes)",
        ])

        let json = try JSONSerialization.jsonObject(with: Data(try JSONReport.render(r).utf8)) as! [String: Any]
        let cov = try XCTUnwrap(json["coverage"] as? [String: Any])
        XCTAssertEqual(cov["decoded_connections"] as? Int, 2)
        XCTAssertEqual(cov["http_connections"] as? Int, 5)
        XCTAssertEqual((cov["undecoded"] as? [[String: Any]])?.first?["reason"] as? String, "http2")
        XCTAssertEqual((cov["other_protocols"] as? [[String: Any]])?.map { $0["kind"] as? String }, ["tcp", "udp"])

        // `wedjat run`'s summary says it too.
        XCTAssertEqual(RunSummary.lines(report: r, logDir: "/tmp/w")[1],
                       "wedjat: 2 of 5 HTTP connections decoded (0.0% of their 2.0 MiB); not decoded: 2 http2, 1 tls_not_hooked,"
                       + " 1 desync after decoded exchanges (the report says where)")
    }

    func testDNSFailuresByNameAndError() throws {
        let r = Report(analysis: try RunAnalysis.load(paths: [try mixedRun()]))
        XCTAssertEqual(r.dnsFailures?.map { "\($0.name) \($0.error) \($0.count) \($0.api ?? "-")" },
                       ["no-such.invalid EAI_NONAME 2 getaddrinfo", "flaky.local EAI_AGAIN 1 getaddrinfo"])
        let text = TextReport(color: false, width: 200).render(r)
        XCTAssertTrue(text.contains("\n  DNS         3 of 4 lookups failed: no-such.invalid EAI_NONAME×2, flaky.local EAI_AGAIN\n"), text)
        let page = HTMLReport().render(try RunAnalysis.load(paths: [try mixedRun()]), report: r)
        XCTAssertTrue(page.contains("<tr class=\"bad\"><td>no-such.invalid</td><td>EAI_NONAME</td><td>getaddrinfo</td><td>2</td></tr>"), page)
        XCTAssertTrue(page.contains("<dt>DNS lookups</dt><dd>4</dd><dd class=\"sub\">3 failed: no-such.invalid (EAI_NONAME), …</dd>"))
        // A run without failures has none to list.
        XCTAssertNil(Report(analysis: try RunAnalysis.load(paths: [try dir.write("ok.2.1.ndjson",
            Line.start(pid: 2, ts: 1, exe: "/ok") + dns("api.local", error: nil, at: 100))])).dnsFailures)
    }

    func testHTMLHasACoverageCard() throws {
        let analysis = try RunAnalysis.load(paths: [try mixedRun()])
        let page = HTMLReport().render(analysis, report: Report(analysis: analysis))
        XCTAssertTrue(page.contains("<section id=\"coverage\"><h2>Coverage</h2>"))
        XCTAssertTrue(page.contains("<tr class=\"bad\"><td>not decoded: http2</td><td>2</td><td>2.0 MiB</td><td>127.0.0.1:8443</td></tr>"), page)
        XCTAssertTrue(page.contains("<tr><td>other protocol: tcp (not HTTP)</td><td>1</td><td>3.0 KiB</td><td>127.0.0.1:6379</td></tr>"))
        XCTAssertTrue(page.contains("<dt>HTTP decoded</dt><dd>2 of 5</dd><dd class=\"sub\">0.0% of bytes; not: http2, tls_not_hooked, desync</dd>"))
    }

    // MARK: exports with nothing to write

    private func export(_ paths: [String]) throws -> ExportStream.Result {
        var otlp: [ExportDocument] = []
        return try ExportStream.run(paths: paths, outputs: .init(har: ExportText(), trace: ExportText(),
                                                                 otlp: { otlp.append($0); return true }))
    }

    /// Only HTTP/2 and opaque TLS: the HAR has no entry and says why (its comment, and what
    /// `wedjat export` prints with exit status 1).
    func testEmptyHARSaysWhy() throws {
        var log = Line.start(pid: 3, ts: Self.t0, exe: "/usr/bin/node")
        for id in 1 ... 3 {
            log += conn(id, peer: "127.0.0.1:8443", bytesIn: 5000, bytesOut: 700, requests: 0, none: "http2",
                        undecoded: ("http2", 5000, 700))
        }
        log += conn(4, peer: "10.0.0.8:443", bytesIn: 900, bytesOut: 300, requests: 0, none: "tls_not_hooked")
        let r = try export([try dir.write("node.3.1.ndjson", log)])
        XCTAssertEqual(r.har?.count, 0)
        XCTAssertEqual(r.context.whyEmpty("har"),
                       "no HTTP exchange was decoded: 3 connections carried HTTP/2 (http_none: http2),"
                       + " 1 connection carried TLS that no hooked library decrypted (http_none: tls_not_hooked)")
        let har = try JSONSerialization.jsonObject(with: Data(r.har!.text.utf8)) as! [String: Any]
        XCTAssertEqual((har["log"] as? [String: Any])?["comment"] as? String,
                       "No entry: no HTTP exchange was decoded: 3 connections carried HTTP/2 (http_none: http2),"
                       + " 1 connection carried TLS that no hooked library decrypted (http_none: tls_not_hooked).")
        XCTAssertGreaterThan(r.trace?.count ?? 0, 0, "the connections are in the trace")
        XCTAssertEqual(r.otlp?.count, 0)
        XCTAssertTrue(r.context.whyEmpty("otlp").hasPrefix("no HTTP exchange or DNS lookup was recorded: 3 connections carried HTTP/2"))
    }

    /// A partly decoded run keeps its good exchanges and notes what is missing.
    func testPartlyDecodedExportKeepsTheExchangesAndNotesTheRest() throws {
        let r = try export([try mixedRun()])
        XCTAssertEqual(r.har?.count, 3)
        XCTAssertTrue(r.har!.notes.contains(
            "3 HTTP connections were not decoded and 1 was decoded only partly (http2: 2, tls_not_hooked: 1, desync: 1;"
            + " `wedjat report` says more): their exchanges are not in the HAR"), "\(r.har!.notes)")
    }

    func testEmptyReasonsForServerOnlyAndNoBytes() throws {
        let server = Line.start(pid: 4, ts: Self.t0, exe: "/srv")
            + #"{"type":"http","ts":\#(Self.t0 + 500),"pid":4,"conn_id":1,"role":"server","method":"GET","host":"me","path":"/","version":"HTTP/1.1","status":200,"request_index":0,"request_start_ts":\#(Self.t0 + 100),"request_end_ts":\#(Self.t0 + 100),"response_start_ts":\#(Self.t0 + 400),"response_end_ts":\#(Self.t0 + 500),"headers":{}}"#
            + "\n"
        let r = try export([try dir.write("srv.4.1.ndjson", server)])
        XCTAssertEqual(r.har?.count, 0)
        XCTAssertEqual(r.context.whyEmpty("har"),
                       "no client-side HTTP exchange: the 1 exchange was a server's (HAR holds a client's view; --chrome-trace and --otlp-json have them)")
        let quiet = try export([try dir.write("q.5.1.ndjson", Line.start(pid: 5, ts: Self.t0, exe: "/q")
            + conn(1, peer: "10.0.0.9:80", bytesIn: 0, bytesOut: 0, requests: 0, error: "ECONNREFUSED"))])
        XCTAssertEqual(quiet.context.whyEmpty("har"), "no HTTP exchange was decoded: no connection carried a byte")
    }
}
