import Foundation
import XCTest
@testable import WedjatAnalysis

/// The OTLP export writes spans and data points straight from the records (OTLPSpanWriter); the
/// reference is the JSON tree of `OTLPExport.httpSpan`/`dnsSpan`/`Point.json`, which WedjatLive
/// shares. Every record variant below must give the same bytes both ways.
final class OTLPSpanWriterTests: XCTestCase {
    /// Deterministic picks from each list (a linear congruential generator), so thousands of
    /// combinations cover every pair of field values without the full product.
    private struct Picker {
        var state: UInt64
        mutating func pick<T>(_ options: [T]) -> T {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return options[Int((state >> 33) % UInt64(options.count))]
        }
    }

    private static func image() -> ProcessLog {
        var log = ProcessLog(path: "/logs/app.4242.1000.ndjson")
        log.add(.processStart(ProcessStart(ts: 1_763_782_510_000_000, pid: 4242)))
        return log
    }

    private static func httpRecord(_ p: inout Picker, ts: Int64) -> HTTPRecord {
        var h = HTTPRecord(ts: ts, pid: 4242, connId: p.pick([7, nil, -3, 1 << 40]), role: p.pick(["client", "server", "proxy"]),
                           scheme: p.pick(["https", nil, "http"]), method: p.pick(["GET", "POST", "BREW", nil, "get", "CONNECT"]),
                           host: p.pick(["api.local", "api.local:8443", "[::1]:8080", nil, "é.example:80", "a\"b", "h:99999", "x:1:2"]),
                           path: p.pick(["/v1/items?x=1", "/plain", "http://abs/x?q", "example.com:443", "", nil, "/\u{301}x?y",
                                         "*", "/a?", "/tab\there", "/q?REDACTED"]),
                           status: p.pick([200, 404, 503, nil, 101, -1]),
                           peer: p.pick(["10.0.0.1:443", "[fe80::1]:80", "10.0.0.1", nil, "10.0.0.2:65535"]),
                           requestIndex: p.pick([0, 3, nil]),
                           version: p.pick(["HTTP/1.1", "HTTP/1.0", "HTTP/2", nil]),
                           responseVersion: p.pick([nil, "HTTP/1.0", "HTTP/1.1"]),
                           requestStartTs: ts - p.pick([1000, 0, 5]),
                           responseStartTs: p.pick([nil, ts - 10]),
                           responseEndTs: p.pick([nil, ts, ts - 2000]),
                           requestBodyBytes: p.pick([0, 64, -1]),
                           responseBodyBytes: p.pick([0, 512, 1 << 33]),
                           error: p.pick([nil, "incomplete", "desync", "handed_off", "parse"]),
                           headers: p.pick([[:], ["request.user-agent": "curl/8.5"], ["request.user-agent": "ua\u{1}\n\"x\""]]))
        h.grpc = p.pick([nil, GRPCRecord(service: "pkg.Svc", method: "Get", status: 5, statusName: "NOT_FOUND"),
                         GRPCRecord(service: "pkg.Svc", method: "Get", status: 0), GRPCRecord(method: "Get", status: 13),
                         GRPCRecord(service: "s", method: "m", status: 2, statusName: nil)])
        return h
    }

    func testHTTPSpansWrittenFromTheRecordAreTheirJSON() {
        let image = Self.image()
        let prefix = OTLPExport.IDHash(image: image)
        let alpn = ConnectionRecord(ts: 0, pid: 4242, role: "client", tls: TLSInfo(alpn: "h2"))
        var p = Picker(state: 19)
        var checked = 0, failed = 0, errors = 0
        for i in 0 ..< 5000 {
            let h = Self.httpRecord(&p, ts: 1_763_782_511_000_000 + Int64(i))
            let connection = p.pick([nil, alpn])
            let reference = OTLPExport.httpSpan(h, connection: connection, image: image)!
            let w = OTLPSpanWriter(capacity: 64)
            w.httpSpan(h, start: h.requestStartTs!, connection: connection, image: prefix)
            let expected = String(decoding: reference.json.renderedBytes(), as: UTF8.self)
            let actual = String(decoding: w.bytes, as: UTF8.self)
            if actual != expected {
                failed += 1
                if failed <= 3 { XCTFail("record \(i): \(h)\nwritten:  \(actual)\nexpected: \(expected)") }
            }
            if reference.error != nil { errors += 1 }
            checked += 1
        }
        XCTAssertEqual(failed, 0)
        XCTAssertEqual(checked, 5000)
        XCTAssertGreaterThan(errors, 500, "failed spans (with a status) are among the variants")
    }

    /// One span in full, pinned: what the comparison above compares.
    func testHTTPSpanBytes() {
        let h = HTTPRecord(ts: 2000, pid: 4242, connId: 1, role: "client", scheme: "https", method: "GET", host: "api.local",
                           path: "/v1?a=1", status: 503, peer: "10.0.0.5:443", requestIndex: 0, version: "HTTP/1.1",
                           requestStartTs: 1000, responseStartTs: 1500, responseEndTs: 2000, requestBodyBytes: 3,
                           responseBodyBytes: 4, headers: ["request.user-agent": "curl"])
        let w = OTLPSpanWriter()
        w.httpSpan(h, start: 1000, connection: nil, image: OTLPExport.IDHash(image: Self.image()))
        let ids = OTLPExport.SpanIDs(image: Self.image(), identity: "http/client/1/0")
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self),
                       #"{"traceId":"\#(ids.traceId)","spanId":"\#(ids.spanId)","name":"GET","kind":3,"#
                       + #""startTimeUnixNano":"1000000","endTimeUnixNano":"2000000","attributes":["#
                       + #"{"key":"http.request.method","value":{"stringValue":"GET"}},{"key":"url.scheme","value":{"stringValue":"https"}},"#
                       + #"{"key":"url.full","value":{"stringValue":"https://api.local/v1?a=1"}},"#
                       + #"{"key":"server.address","value":{"stringValue":"api.local"}},{"key":"server.port","value":{"intValue":"443"}},"#
                       + #"{"key":"network.peer.address","value":{"stringValue":"10.0.0.5"}},{"key":"network.peer.port","value":{"intValue":"443"}},"#
                       + #"{"key":"network.protocol.name","value":{"stringValue":"http"}},{"key":"network.protocol.version","value":{"stringValue":"1.1"}},"#
                       + #"{"key":"http.response.status_code","value":{"intValue":"503"}},{"key":"http.request.body.size","value":{"intValue":"3"}},"#
                       + #"{"key":"http.response.body.size","value":{"intValue":"4"}},{"key":"user_agent.original","value":{"stringValue":"curl"}},"#
                       + #"{"key":"error.type","value":{"stringValue":"503"}}],"status":{"message":"503","code":2}}"#)
        XCTAssertEqual(ids.traceId.count, 32)
        XCTAssertNotEqual(ids.traceId, String(repeating: "0", count: 32))
    }

    func testDNSSpansWrittenFromTheRecordAreTheirJSON() {
        let image = Self.image()
        let prefix = OTLPExport.IDHash(image: image)
        var p = Picker(state: 7)
        for i in 0 ..< 2000 {
            let d = DNSRecord(ts: 1_763_782_511_000_000 + Int64(i), pid: 4242, api: p.pick(["getaddrinfo", nil, "gethostbyname"]),
                              name: p.pick(["api.local", nil, "", "q\"x\u{2}"]), durationUs: p.pick([0, 2695, -5]),
                              error: p.pick([nil, "EAI_NONAME"]), tid: p.pick([4244, nil, -1]),
                              startTs: p.pick([nil, 1_763_782_510_000_000]),
                              addresses: p.pick([[], ["10.0.0.1"], ["::1", "10.0.0.2", "a\\b"]]))
            let reference = OTLPExport.dnsSpan(d, image: image)!
            let w = OTLPSpanWriter(capacity: 64)
            w.dnsSpan(d, duration: d.durationUs!, image: prefix)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), String(decoding: reference.json.renderedBytes(), as: UTF8.self),
                           "record \(i): \(d)")
        }
    }

    func testAnySpanWrittenIsItsJSON() {
        var a = OTLPExport.Attributes()
        a.add("k", double: .nan)
        a.add("n", Int64.min)
        let s = OTLPExport.Span(ids: OTLPExport.SpanIDs(image: Self.image(), identity: "x"), name: "n\"", kind: .server,
                                startUs: -5, endUs: 0, attributes: a, error: "E\n")
        let w = OTLPSpanWriter()
        w.span(s)
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), String(decoding: s.json.renderedBytes(), as: UTF8.self))
    }

    /// Integers two digits at a time: every length, both signs, the extremes.
    func testIntegersAreTheirDecimals() {
        var values: [Int64] = [0, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0 ..< 18 {
            values += [power - 1, power, power + 1, -power, -(power - 1), power * 5]
            power *= 10
        }
        let w = OTLPSpanWriter(capacity: 8)
        for v in values {
            w.int(v)
            w.literal(",")
        }
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), values.map { String($0) + "," }.joined())
        XCTAssertTrue(String(decoding: w.bytes, as: UTF8.self).hasPrefix("0,9223372036854775807,-9223372036854775808,"))
    }

    /// Span ids hashed piece by piece are the ids of the whole identity string.
    func testIdsHashedInPiecesAreTheIdsOfTheString() {
        var log = ProcessLog(path: "/logs/app.-7.1000.ndjson")
        log.add(.note(NoteRecord(ts: -12, pid: -7, type: "warning", message: "m")))
        var hash = OTLPExport.IDHash(image: log)
        hash.add("http/"); hash.add(string: "server"); hash.add("/"); hash.add(Int64.min); hash.add("/"); hash.add(Int64(0))
        let whole = OTLPExport.SpanIDs(image: log, identity: "http/server/\(Int64.min)/0")
        XCTAssertEqual([hash.ids.traceId, hash.ids.spanId], [whole.traceId, whole.spanId])
        XCTAssertEqual(log.pid, -7)
        XCTAssertEqual(log.startTs, -12)
    }

    /// Data points, including the extremes of an empty one, are the bytes of `Point.json`.
    func testPointsWrittenAreTheirJSON() {
        var set = OTLPExport.HistogramSet()
        var a = OTLPExport.Attributes()
        a.add("error.type", "x")
        for us in [0, 4_999, 5_000, 5_001, 10_000_000, 10_000_001, -3] { set.record(Int64(us), attributes: a) }
        var points = set.points
        points.append(OTLPExport.HistogramSet.Point(attributes: OTLPExport.Attributes()))
        for point in points {
            let w = OTLPSpanWriter()
            w.point(point, start: 1_000_000, end: -1)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self),
                           String(decoding: point.json(start: 1_000_000, end: -1).renderedBytes(), as: UTF8.self))
        }
        XCTAssertEqual(points[0].count, 7)
        XCTAssertEqual(points[0].buckets, [4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    }

    /// The metrics request of a stream that found each exchange's point through its record's
    /// fields: the same points, in the same order, as the attributes made for every record.
    func testMetricsFoundByRecordFieldsAreThoseOfTheAttributes() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var p = Picker(state: 3)
        var body = Line.start(pid: 9, ts: 1000, exe: "/bin/app")
        var records: [HTTPRecord] = []
        for i in 0 ..< 3000 {
            let ts = Int64(10_000 + i * 10)
            var h = HTTPRecord(ts: ts, pid: 9, connId: Int64(i), role: p.pick(["client", "server"]), scheme: p.pick(["https", "http"]),
                               method: p.pick(["GET", "BREW", "POST"]), host: p.pick(["a.local", "a.local:8443", nil, "b.local"]),
                               path: "/", status: p.pick([200, 404, 503, nil]), peer: p.pick(["10.0.0.1:443", "10.0.0.2:80", "10.0.0.3", nil]),
                               requestIndex: 0, version: p.pick(["HTTP/1.1", "HTTP/1.0"]), requestStartTs: ts - p.pick([100, 60_000]),
                               responseEndTs: ts, error: p.pick([nil, "incomplete"]))
            h.headers = [:]
            records.append(h)
            body += Self.line(h)
        }
        try dir.write("app.9.1000.ndjson", body + Line.end(pid: 9, ts: 99_999_999))
        var requests: [ExportDocument] = []
        let r = try ExportStream.run(paths: [dir.path], outputs: .init(otlp: { requests.append($0); return true }))
        XCTAssertEqual(r.context.httpRecords, 3000)

        var client = OTLPExport.HistogramSet(), server = OTLPExport.HistogramSet()
        for h in records {
            let a = OTLPExport.httpMetricAttributes(h, connection: nil)
            if h.role == "server" { server.record(h.endTs - h.requestStartTs!, attributes: a) }
            else { client.record(h.endTs - h.requestStartTs!, attributes: a) }
        }
        let metrics = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(requests.last!.text.utf8)) as? [String: Any])
        let resource = try XCTUnwrap((metrics["resourceMetrics"] as? [[String: Any]])?.first)
        let written = try XCTUnwrap((resource["scopeMetrics"] as? [[String: Any]])?.first?["metrics"] as? [[String: Any]])
        XCTAssertEqual(written.map { $0["name"] as? String }, ["http.client.request.duration", "http.server.request.duration"])
        let image = r.context.images[0]
        for (metric, set) in zip(written, [client, server]) {
            let points = try XCTUnwrap((metric["histogram"] as? [String: Any])?["dataPoints"] as? [Any])
            let expected = set.points.map { $0.json(start: image.startTs * 1000, end: image.lastKnownTs * 1000).rendered() }
            XCTAssertGreaterThan(expected.count, 20)
            XCTAssertEqual(points.count, expected.count)
            let actual = try points.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self) }
            let reference = try expected.map {
                String(decoding: try JSONSerialization.data(withJSONObject: JSONSerialization.jsonObject(with: Data($0.utf8)), options: [.sortedKeys]),
                       as: UTF8.self)
            }
            XCTAssertEqual(actual, reference)
        }
        // And the text itself is the tree's: one point rendered as the request holds it.
        let first = client.points[0].json(start: image.startTs * 1000, end: image.lastKnownTs * 1000).rendered()
        XCTAssertTrue(requests.last!.text.contains("\"dataPoints\":[" + first), "the first client point, byte for byte")
    }

    /// An `http` record's line, with the fields the metrics read.
    private static func line(_ h: HTTPRecord) -> String {
        func s(_ v: String?) -> String { v.map { "\"\($0)\"" } ?? "null" }
        func n(_ v: Int?) -> String { v.map(String.init) ?? "null" }
        return #"{"type":"http","ts":\#(h.ts),"pid":9,"conn_id":\#(h.connId!),"role":"\#(h.role)","scheme":\#(s(h.scheme)),"#
            + #""method":\#(s(h.method)),"host":\#(s(h.host)),"path":"/","status":\#(n(h.status)),"peer":\#(s(h.peer)),"#
            + #""request_index":0,"version":\#(s(h.version)),"request_start_ts":\#(h.requestStartTs!),"response_end_ts":\#(h.ts),"#
            + #""error":\#(s(h.error)),"headers":{}}"# + "\n"
    }
}
