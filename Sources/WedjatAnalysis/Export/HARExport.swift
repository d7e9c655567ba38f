import Foundation

/// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) from the client-side `http`
/// records, with the connect, TLS and DNS phases of their connections. Unknown values are
/// `-1` (sizes, phases that do not apply) or `""` (strings), as the spec allows.
public enum HARExport {
    /// A client's view: server-side exchanges are left out (they are in the other exports).
    public static let contents: ExportInput.Contents = [.clientExchanges, .httpConnections, .lookups]

    /// `text`: where to write (an `ExportText` with a sink streams to a file).
    public static func render(_ input: ExportInput, into text: ExportText = ExportText()) -> ExportDocument {
        let connections = input.connectionsByID()
        let lookups = LookupIndex(input)
        // Only what sorting needs is kept; each entry is rendered when it is written.
        var entries: [(start: Int64, index: Int, timings: ExchangeTimings)] = []
        var serverSide = input.leftOutExchanges
        var unplaced = 0
        for (index, e) in input.exchanges.enumerated() {
            let h = e.value
            guard h.role != "server" else { serverSide += 1; continue }
            let connection = h.connId.flatMap { connections[ConnectionKey(image: e.image, connId: $0)] }
            let lookup = connection.flatMap { lookups.lookup(of: $0, image: e.image) }.map {
                LookupSpan(startTs: $0.startTs ?? $0.ts - ($0.durationUs ?? 0), endTs: ($0.startTs ?? $0.ts - ($0.durationUs ?? 0)) + ($0.durationUs ?? 0),
                           durationUs: $0.durationUs ?? 0)
            }
            guard let timings = ExchangeTimings(h, connection: connection, lookup: lookup) else {
                unplaced += 1
                continue
            }
            entries.append((timings.startTs, index, timings))
        }
        entries.sort { ($0.start, $0.index) < ($1.start, $1.index) }

        var notes: [String] = []
        if serverSide > 0 {
            notes.append("\(serverSide) server-side exchange\(serverSide == 1 ? "" : "s") left out of the HAR (a client's view; they are in the trace and OTLP exports)")
        }
        if unplaced > 0 {
            notes.append("\(unplaced) exchange\(unplaced == 1 ? "" : "s") without a request start left out of the HAR")
        }
        // Said in the file too (HAR's `log.comment`), for whoever opens it in a viewer; the
        // summarized exchanges are a warning of `wedjat export`'s own (ExportInput.summarizedWarning).
        var comment = notes
        if input.summarizedClientExchanges > 0 {
            let n = input.summarizedClientExchanges
            comment.append("\(n) client exchange\(n == 1 ? " was" : "s were") only counted in http_summary records (past WEDJAT_HTTP_RECORDS a second) and \(n == 1 ? "has" : "have") no entry")
        }
        let version = input.images.lazy.compactMap { $0.start?.wedjatVersion }.first ?? ""
        let log = { (entries: ExportJSON) -> ExportJSON in
            var log = JSONObject()
            log.add("version", .string("1.2"))
            log.add("creator", .object([("name", .string("wedjat")), ("version", .string(version))]))
            log.add("entries", entries)
            if !comment.isEmpty { log.add("comment", .string(comment.joined(separator: "; ") + ".")) }
            return .object([("log", log.json)])
        }
        var out = text
        if entries.isEmpty {
            out.append(log(.array([])).rendered(indent: 2))
        } else {
            let frame = ExportText.frame(log, indent: 2)
            out.append(frame.open)
            for (i, e) in entries.enumerated() {
                if i > 0 { out.append(frame.separator) }
                let exchange = input.exchanges[e.index]
                let connection = exchange.value.connId.flatMap { connections[ConnectionKey(image: exchange.image, connId: $0)] }
                // At its depth in the document: log.entries[i].
                out.append(entry(exchange.value, timings: e.timings, connection: connection).rendered(indent: 2, level: 3))
            }
            out.append(frame.close)
        }
        out.append("\n")
        return ExportDocument(body: out, count: entries.count, notes: notes)
    }

    /// `httpVersion` when the record has none (logs written before it had): what TLS negotiated
    /// (ALPN), else `HTTP/1.x`: wedjat parses nothing but HTTP/1.0 and HTTP/1.1, so that much is
    /// known, and HAR viewers show it as the protocol.
    static let unknownMinorVersion = "HTTP/1.x"

    private static func entry(_ h: HTTPRecord, timings t: ExchangeTimings, connection c: ConnectionRecord?) -> ExportJSON {
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
        if let local = c?.local, let port = AddressParts.split(local).port {
            o.add("connection", String(port))
        } else if let id = h.connId {
            o.add("connection", "\(h.pid)-\(id)")
        }
        o.add("_pid", .int(Int64(h.pid)))
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

/// The `dns` records of each image by name, to find a connection's own lookup (its `dns_us`
/// says there was one; this finds when it started).
struct LookupIndex {
    private var byName: [String: [DNSRecord]] = [:]

    init(_ input: ExportInput) {
        for l in input.lookups {
            guard let name = l.value.name else { continue }
            byName["\(l.image)/\(name)", default: []].append(l.value)
        }
    }

    /// The latest lookup of the connection's host with its `dns_us`, ended at most 1 s before
    /// the connect (the rule by which the writer gave the connection its `dns_us`).
    func lookup(of c: ConnectionRecord, image: Int) -> DNSRecord? {
        guard let host = c.host, let dnsUs = c.dnsUs, let open = c.openTs else { return nil }
        return byName["\(image)/\(host)"]?
            .filter { $0.durationUs == dnsUs && $0.ts <= open && open - $0.ts <= 1_000_000 }
            .max { $0.ts < $1.ts }
    }
}
