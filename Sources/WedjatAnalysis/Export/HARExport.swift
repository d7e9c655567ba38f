import Foundation

/// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) from the client-side `http`
/// records, with the connect, TLS and DNS phases of their connections. Unknown values are
/// `-1` (sizes, phases that do not apply) or `""` (strings), as the spec allows.
public enum HARExport {
    /// `httpVersion` when the record has none (logs written before it had): what TLS negotiated
    /// (ALPN), else `HTTP/1.x`: wedjat parses nothing but HTTP/1.0 and HTTP/1.1, so that much is
    /// known, and HAR viewers show it as the protocol.
    static let unknownMinorVersion = "HTTP/1.x"

    static func entry(_ h: HTTPRecord, timings t: ExchangeTimings, connection c: ConnectionRecord?) -> ExportJSON {
        let fallback = c?.negotiatedHTTPVersion.map { "HTTP/" + $0 } ?? unknownMinorVersion
        var request = JSONObject()
        request.add("method", .string(h.method ?? ""))
        request.add("url", .string(h.url))
        request.add("httpVersion", .string(h.version ?? fallback))
        request.add("cookies", .array([]))
        request.add("headers", headers(h, prefix: "request."))
        request.add("queryString", queryString(h))
        request.add("headersSize", .int(h.requestHeaderBytes > 0 ? h.requestHeaderBytes : -1))
        request.add("bodySize", .int(h.requestBodyBytes))

        let responded = h.responseStartTs != nil
        var response = JSONObject()
        response.add("status", .int(Int64(h.status ?? 0)))
        response.add("statusText", .string(""))
        // No response: nothing to say; a response without a final status line: version unknown.
        response.add("httpVersion", .string(!responded ? "" : h.finalResponseVersion ?? fallback))
        response.add("cookies", .array([]))
        response.add("headers", headers(h, prefix: "response."))
        response.add("content", .object([
            ("size", .int(responded ? h.responseBodyBytes : 0)),
            ("mimeType", .string(h.header("response.content-type") ?? "")),
        ]))
        response.add("redirectURL", .string(""))
        response.add("headersSize", .int(responded ? h.responseHeaderBytes : -1))
        response.add("bodySize", .int(responded ? h.responseBodyBytes : -1))

        func phase(_ us: Int64?) -> ExportJSON { us.map(ExportJSON.millis) ?? .int(-1) }
        var o = JSONObject()
        o.add("startedDateTime", .string(ExportTime.iso8601(t.startTs)))
        o.add("time", .millis(t.elapsed))
        o.add("request", request.json)
        o.add("response", response.json)
        o.add("cache", .object([]))
        o.add("timings", .object([
            ("blocked", phase(t.blocked)), ("dns", phase(t.dns)), ("connect", phase(t.connect)),
            ("send", .millis(t.send)), ("wait", .millis(t.wait)), ("receive", .millis(t.receive)),
            ("ssl", phase(t.ssl)),
        ]))
        o.add("serverIPAddress", h.peer.map { AddressParts.split($0).host })
        // Unique within the run (local ports are reused), and the same for every exchange of a
        // connection, which is written before the connection's record.
        if let id = h.connId { o.add("connection", "\(h.pid)-\(id)") }
        o.add("_pid", .int(Int64(h.pid)))
        o.add("_request_index", h.requestIndex)
        o.add("_error", h.error)
        return o.json
    }


    private static func headers(_ h: HTTPRecord, prefix: String) -> ExportJSON {
        .array(h.headers.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }.map {
            .object([("name", .string(String($0.key.dropFirst(prefix.count)))), ("value", .string($0.value))])
        })
    }

    /// The query's parameters, unless wedjat redacted it (`?REDACTED` hides how many there were).
    private static func queryString(_ h: HTTPRecord) -> ExportJSON {
        guard let query = h.targetQuery, query != "REDACTED", !query.isEmpty else { return .array([]) }
        return .array(query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ s: Substring) -> String { String(s).removingPercentEncoding ?? String(s) }
            return .object([("name", .string(decoded(parts[0]))),
                            ("value", .string(parts.count > 1 ? decoded(parts[1]) : ""))])
        })
    }
}

