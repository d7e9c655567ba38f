import Foundation

/// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) from the client-side `http`
/// records, with the connect, TLS and DNS phases of their connections. Unknown values are
/// `-1` (sizes, phases that do not apply) or `""` (strings), as the spec allows.
public enum HARExport {
    /// `httpVersion` when the record has none (logs written before it had): what TLS negotiated
    /// (ALPN), else `HTTP/1.x`: such logs hold nothing but HTTP/1.0 and HTTP/1.1 (HTTP/2 streams
    /// always say `HTTP/2`), so that much is known, and HAR viewers show it as the protocol.
    static let unknownMinorVersion = "HTTP/1.x"

    /// One entry, written into `w` at depth 0 (the merge writes the separators between entries).
    /// `times`: the writer's last formatted second (entries come nearly in time order).
    ///
    /// Written as a template: the keys, punctuation and indents of the document's layout (indent
    /// 2, the entry at level 3: its members at 8 spaces) as literal runs between the values,
    /// where a generic writer works each out from its nesting (rendering was half of the export's
    /// CPU). The same bytes as JSONBytes' layout: ExportTests' golden HAR, and
    /// `testHARTemplateIsTheLayout`, which renders entries of every shape both ways.
    static func writeEntry(_ h: HTTPRecord, timings t: ExchangeTimings, connection c: ConnectionRecord?, into w: HARWriter,
                           times: inout ISO8601Cache) {
        let fallback = c?.negotiatedHTTPVersion.map { "HTTP/" + $0 } ?? unknownMinorVersion
        let responded = h.responseStartTs != nil
        func millis(_ us: Int64) { w.fixed(us, 3) }
        func phase(_ us: Int64?) { if let us { millis(us) } else { w.literal("-1") } }
        w.literal("{\n        \"startedDateTime\": "); w.iso8601(t.startTs, cache: &times)
        w.literal(",\n        \"time\": "); millis(t.elapsed)
        w.literal(",\n        \"request\": {\n          \"method\": "); w.string(h.method ?? "")
        // h.url, written in parts when it is made of parts.
        let target = h.path ?? ""
        w.literal(",\n          \"url\": ")
        if target.hasPrefix("/") { w.url(h.schemeOrHTTP, h.host ?? h.peer ?? "", target) } else { w.string(h.url) }
        w.literal(",\n          \"httpVersion\": "); w.string(h.version ?? fallback)
        w.literal(",\n          \"cookies\": [],\n          \"headers\": "); writeHeaders(h, side: "request.", into: w)
        w.literal(",\n          \"queryString\": "); writeQueryString(h, into: w)
        w.literal(",\n          \"headersSize\": "); w.int(h.requestHeaderBytes > 0 ? h.requestHeaderBytes : -1)
        w.literal(",\n          \"bodySize\": "); w.int(h.requestBodyBytes)
        w.literal("\n        },\n        \"response\": {\n          \"status\": "); w.int(Int64(h.status ?? 0))
        // No response: nothing to say; a response without a final status line: version unknown.
        w.literal(",\n          \"statusText\": \"\",\n          \"httpVersion\": ")
        w.string(!responded ? "" : h.finalResponseVersion ?? fallback)
        w.literal(",\n          \"cookies\": [],\n          \"headers\": "); writeHeaders(h, side: "response.", into: w)
        w.literal(",\n          \"content\": {\n            \"size\": "); w.int(responded ? h.responseBodyBytes : 0)
        w.literal(",\n            \"mimeType\": "); w.string(h.headers["response.content-type"] ?? "")
        w.literal("\n          },\n          \"redirectURL\": \"\",\n          \"headersSize\": ")
        w.int(responded ? h.responseHeaderBytes : -1)
        w.literal(",\n          \"bodySize\": "); w.int(responded ? h.responseBodyBytes : -1)
        w.literal("\n        },\n        \"cache\": {},\n        \"timings\": {\n          \"blocked\": "); phase(t.blocked)
        w.literal(",\n          \"dns\": "); phase(t.dns)
        w.literal(",\n          \"connect\": "); phase(t.connect)
        w.literal(",\n          \"send\": "); millis(t.send)
        w.literal(",\n          \"wait\": "); millis(t.wait)
        w.literal(",\n          \"receive\": "); millis(t.receive)
        w.literal(",\n          \"ssl\": "); phase(t.ssl)
        w.literal("\n        }")
        if let peer = h.peer { w.literal(",\n        \"serverIPAddress\": "); w.string(AddressParts.split(peer).host) }
        // Unique within the run (local ports are reused), and the same for every exchange of a
        // connection, which is written before the connection's record.
        if let id = h.connId { w.literal(",\n        \"connection\": "); w.string(Int64(h.pid), UInt8(ascii: "-"), Int64(id)) }
        w.literal(",\n        \"_pid\": "); w.int(Int64(h.pid))
        if let i = h.requestIndex { w.literal(",\n        \"_request_index\": "); w.int(Int64(i)) }
        if let e = h.error { w.literal(",\n        \"_error\": "); w.string(e) }
        // HTTP/2: the stream (streams of one connection share `connection`), gRPC's outcome.
        if let id = h.streamId { w.literal(",\n        \"_stream_id\": "); w.int(Int64(id)) }
        if h.pushed { w.literal(",\n        \"_pushed\": true") }
        if let g = h.grpc {
            w.literal(",\n        \"_grpc\": ")
            var first = true
            func member(_ key: StaticString) {
                w.literal(first ? "{\n          \"" : ",\n          \"")
                w.literal(key)
                w.literal("\": ")
                first = false
            }
            if let v = g.service { member("service"); w.string(v) }
            if let v = g.method { member("method"); w.string(v) }
            if let v = g.status { member("status"); w.int(Int64(v)) }
            if let v = g.statusName { member("status_name"); w.string(v) }
            w.literal(first ? "{}" : "\n        }")
        }
        if let c = h.continuedBy { w.literal(",\n        \"_continued_by_pid\": "); w.int(Int64(c)) }
        w.literal("\n      }")
    }

    /// The logged headers of one side (`request.` or `response.`), sorted by key, as
    /// `{name, value}` objects with the name after the prefix. Found by their dictionary
    /// indices, on the stack: no String, Substring or array made per entry (this was an eighth of
    /// the export's time).
    private static func writeHeaders(_ h: HTTPRecord, side prefix: StaticString, into w: HARWriter) {
        let headers = h.headers
        var first = true
        if !headers.isEmpty {
            withUnsafeTemporaryAllocation(of: [String: String].Index.self, capacity: headers.count) { picked in
                var n = 0
                var i = headers.startIndex
                while i != headers.endIndex {
                    if hasPrefix(headers.keys[i], prefix) { picked.initializeElement(at: n, to: i); n += 1 }
                    headers.formIndex(after: &i)
                }
                var side = UnsafeMutableBufferPointer(rebasing: picked[0 ..< n])
                if n > 1 { side.sort { headers.keys[$0] < headers.keys[$1] } }
                for index in side {
                    w.literal(first ? "[\n            {\n              \"name\": " : ",\n            {\n              \"name\": ")
                    first = false
                    w.string(headers.keys[index], droppingFirst: prefix.utf8CodeUnitCount)
                    w.literal(",\n              \"value\": "); w.string(headers.values[index])
                    w.literal("\n            }")
                }
                _ = side.deinitialize()
            }
        }
        w.literal(first ? "[]" : "\n          ]")
    }

    /// `k.hasPrefix(prefix)`, on the bytes when the name goes on with ASCII (a combining mark
    /// right after the prefix would make hasPrefix say no: left to it).
    private static func hasPrefix(_ k: String, _ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        let bytes = k.utf8.withContiguousStorageIfAvailable { u -> Bool? in
            guard u.count >= n, memcmp(u.baseAddress!, prefix.utf8Start, n) == 0 else { return false }
            return u.count == n || u[n] < 0x80 ? true : nil
        }
        switch bytes {
        case true??: return true
        case false??: return false
        default: return k.hasPrefix(prefix.description)
        }
    }

    /// The query's parameters, unless wedjat redacted it (`?REDACTED` hides how many there were).
    private static func writeQueryString(_ h: HTTPRecord, into w: HARWriter) {
        var first = true
        // Most targets have no `?` at all: seen on the bytes before looking for the character.
        if let path = h.path, path.utf8.contains(UInt8(ascii: "?")), let query = h.targetQuery, query != "REDACTED", !query.isEmpty {
            for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ s: Substring) -> String { String(s).removingPercentEncoding ?? String(s) }
                w.literal(first ? "[\n            {\n              \"name\": " : ",\n            {\n              \"name\": ")
                first = false
                w.string(decoded(parts[0]))
                w.literal(",\n              \"value\": "); w.string(parts.count > 1 ? decoded(parts[1]) : "")
                w.literal("\n            }")
            }
        }
        w.literal(first ? "[]" : "\n          ]")
    }
}
