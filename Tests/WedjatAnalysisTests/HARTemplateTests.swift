import Foundation
import XCTest
@testable import WedjatAnalysis

/// HARExport writes an entry as a template (literal keys, punctuation and indents between the
/// values). The oracle here writes the same entry through JSONBytes' structured calls (key, open,
/// close, with the document's indent and the entry's level), as the export did before in its own
/// writer; every entry of every shape must come out byte for byte the same.
final class HARTemplateTests: XCTestCase {
    /// The entry through the structured calls.
    private static func structured(_ h: HTTPRecord, _ t: ExchangeTimings, _ c: ConnectionRecord?, into w: inout JSONBytes) {
        let fallback = c?.negotiatedHTTPVersion.map { "HTTP/" + $0 } ?? HARExport.unknownMinorVersion
        let responded = h.responseStartTs != nil
        func millis(_ us: Int64) { w.fixed(us, 3) }
        func phase(_ us: Int64?) { if let us { millis(us) } else { w.int(-1) } }
        func headers(_ prefix: String, _ w: inout JSONBytes) {
            w.openArray()
            for (k, v) in h.headers.sorted(by: { $0.key < $1.key }) where k.hasPrefix(prefix) {
                w.openObject()
                w.key("name"); w.string(String(k.dropFirst(prefix.count)))
                w.key("value"); w.string(v)
                w.closeObject()
            }
            w.closeArray()
        }
        w.openObject()
        w.key("startedDateTime"); w.string(ExportTime.iso8601(t.startTs))
        w.key("time"); millis(t.elapsed)
        w.key("request")
        w.openObject()
        w.key("method"); w.string(h.method ?? "")
        let target = h.path ?? ""
        w.key("url")
        w.string(target.hasPrefix("/") ? h.schemeOrHTTP + "://" + (h.host ?? h.peer ?? "") + target : h.url)
        w.key("httpVersion"); w.string(h.version ?? fallback)
        w.key("cookies"); w.openArray(); w.closeArray()
        w.key("headers"); headers("request.", &w)
        w.key("queryString")
        w.openArray()
        if let path = h.path, path.contains("?"), let query = h.targetQuery, query != "REDACTED", !query.isEmpty {
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ s: Substring) -> String { String(s).removingPercentEncoding ?? String(s) }
                w.openObject()
                w.key("name"); w.string(decoded(parts[0]))
                w.key("value"); w.string(parts.count > 1 ? decoded(parts[1]) : "")
                w.closeObject()
            }
        }
        w.closeArray()
        w.key("headersSize"); w.int(h.requestHeaderBytes > 0 ? h.requestHeaderBytes : -1)
        w.key("bodySize"); w.int(h.requestBodyBytes)
        w.closeObject()
        w.key("response")
        w.openObject()
        w.key("status"); w.int(Int64(h.status ?? 0))
        w.key("statusText"); w.string("")
        w.key("httpVersion"); w.string(!responded ? "" : h.finalResponseVersion ?? fallback)
        w.key("cookies"); w.openArray(); w.closeArray()
        w.key("headers"); headers("response.", &w)
        w.key("content")
        w.openObject()
        w.key("size"); w.int(responded ? h.responseBodyBytes : 0)
        w.key("mimeType"); w.string(h.headers["response.content-type"] ?? "")
        w.closeObject()
        w.key("redirectURL"); w.string("")
        w.key("headersSize"); w.int(responded ? h.responseHeaderBytes : -1)
        w.key("bodySize"); w.int(responded ? h.responseBodyBytes : -1)
        w.closeObject()
        w.key("cache"); w.openObject(); w.closeObject()
        w.key("timings")
        w.openObject()
        w.key("blocked"); phase(t.blocked)
        w.key("dns"); phase(t.dns)
        w.key("connect"); phase(t.connect)
        w.key("send"); millis(t.send)
        w.key("wait"); millis(t.wait)
        w.key("receive"); millis(t.receive)
        w.key("ssl"); phase(t.ssl)
        w.closeObject()
        if let peer = h.peer { w.key("serverIPAddress"); w.string(AddressParts.split(peer).host) }
        if let id = h.connId { w.key("connection"); w.string("\(h.pid)-\(id)") }
        w.key("_pid"); w.int(Int64(h.pid))
        if let i = h.requestIndex { w.key("_request_index"); w.int(Int64(i)) }
        if let e = h.error { w.key("_error"); w.string(e) }
        if let id = h.streamId { w.key("_stream_id"); w.int(Int64(id)) }
        if h.pushed { w.key("_pushed"); w.bool(true) }
        if let g = h.grpc {
            w.key("_grpc")
            w.openObject()
            if let v = g.service { w.key("service"); w.string(v) }
            if let v = g.method { w.key("method"); w.string(v) }
            if let v = g.status { w.key("status"); w.int(Int64(v)) }
            if let v = g.statusName { w.key("status_name"); w.string(v) }
            w.closeObject()
        }
        if let c = h.continuedBy { w.key("_continued_by_pid"); w.int(Int64(c)) }
        w.closeObject()
    }

    func testHARTemplateIsTheLayout() throws {
        var rng = SplitMix(state: 0x4841_5254)
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        let connections: [ConnectionRecord?] = try [nil,
            #"{"type":"connection","ts":9900,"pid":7,"conn_id":5,"role":"client","peer":"10.0.0.1:443","open_ts":4000,"close_ts":9900,"connect_us":300,"tls":{"handshake_us":400,"alpn":"h2"}}"#,
            #"{"type":"connection","ts":9900,"pid":7,"conn_id":5,"role":"client","peer":"10.0.0.1:80","open_ts":4500,"close_ts":9900,"connect_us":50}"#,
        ].map { line in
            guard let line else { return nil }
            guard case .connection(let c) = try Record.decode(line: line) else { throw XCTSkip("not a connection") }
            return c
        }
        var shapes = Set<String>()
        for i in 0 ..< 3000 {
            var fields: [String] = [#""type":"http""#, #""ts":9000"#, #""pid":7"#, #""role":"client""#, #""request_start_ts":5000"#]
            func maybe(_ s: String) { if rng.next() % 2 == 0 { fields.append(s) } }
            maybe(pick([#""method":"GET""#, #""method":"POST""#]))
            maybe(pick([#""path":"/a""#, #""path":"/a?x=1&y=%20z&&k""#, #""path":"/a?REDACTED""#, #""path":"http://abs/x?q""#,
                        #""path":"""#, #""path":"/\u00e9?\u00e9=1""#, #""path":"example.com:443""#]))
            maybe(pick([#""host":"h.example""#, #""host":"h:8443""#]))
            maybe(pick([#""peer":"10.0.0.1:443""#, #""peer":"[::1]:8443""#, #""peer":"::1""#]))
            maybe(pick([#""scheme":"https""#, #""scheme":"http""#]))
            maybe(pick([#""version":"HTTP/1.1""#, #""version":"HTTP/2""#]))
            maybe(#""response_version":"HTTP/1.0""#)
            maybe(pick([#""status":200"#, #""status":404"#, #""status":101"#]))
            maybe(#""request_end_ts":5100"#)
            maybe(#""response_start_ts":8000"#)
            maybe(#""response_end_ts":8900"#)
            maybe(#""request_header_bytes":120"#)
            maybe(#""request_body_bytes":7"#)
            maybe(#""response_header_bytes":90"#)
            maybe(#""response_body_bytes":606"#)
            maybe(pick([#""headers":{}"#, #""headers":{"request.host":"h","request.accept":"*/*","response.content-type":"text/plain","other":"x"}"#,
                        #""headers":{"request.":"empty","request.a":"\"q\"\\ \u00e9\n","response.z":"\u0001"}"#,
                        #""headers":{"response.content-type":"application/json","response.b":"2","response.a":"1"}"#]))
            maybe(pick([#""error":"reset""#, #""error":"cut \"short\"""#]))
            maybe(pick([#""request_index":0"#, #""request_index":3"#]))
            maybe(#""conn_id":5"#)
            maybe(#""stream_id":3"#)
            maybe(pick([#""grpc":{}"#, #""grpc":{"service":"pkg.Svc","method":"Get","status":5,"status_name":"NOT_FOUND"}"#,
                        #""grpc":{"status":0}"#]))
            let line = "{" + fields.joined(separator: ",") + "}"
            guard case .http(var h) = try Record.decode(line: line) else { return XCTFail("not http: \(line)") }
            if rng.next() % 4 == 0 { h.pushed = true }
            if rng.next() % 4 == 0 { h.continuedBy = 8 }
            let c = pick(connections)
            guard let t = ExchangeTimings(h, connection: c, lookup: nil) else { continue }
            let a = HARWriter()
            var b = JSONBytes(indent: 2, level: 3)
            var times = ISO8601Cache()
            HARExport.writeEntry(h, timings: t, connection: c, into: a, times: &times)
            Self.structured(h, t, c, into: &b)
            let template = String(decoding: a.take(), as: UTF8.self), oracle = String(decoding: b.bytes, as: UTF8.self)
            XCTAssertEqual(template, oracle, "entry \(i): \(line)")
            if template != oracle { return }
            shapes.insert(fields.map { String($0.prefix(12)) }.sorted().joined())
        }
        XCTAssertGreaterThan(shapes.count, 1000)
    }
}
