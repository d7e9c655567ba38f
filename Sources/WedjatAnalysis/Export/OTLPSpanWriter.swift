/// The OTLP export's spans and metrics, written straight into one growing buffer in the compact
/// layout: the same bytes as `OTLPExport.Span.json` and `HistogramSet.Point.json` rendered
/// (OTLPSpanWriterTests holds them against each other), at a fraction of the cost. An exchange's span is written from its record with
/// no Attributes, URL, address or identity String made on the way: on the 200 MB bench log that
/// is 200,000 spans, all on the thread that applies the records, which the readers wait for.
/// A class: one per export, never copied.
final class OTLPSpanWriter {
    private var out: GrowingBuffer<UInt8>
    var count: Int { out.count }

    init(capacity: Int = 1 << 16) {
        out = GrowingBuffer(capacity: max(64, capacity))
    }

    deinit { out.base.deallocate() }

    var bytes: [UInt8] { out.bytes }

    /// The bytes written so far, handed over; the writer starts again empty (keeping its room).
    func take() -> [UInt8] { out.take() }

    @inline(__always) private func reserve(_ n: Int) { out.reserve(n) }
    @inline(__always) private func put(_ b: UInt8) { out.put(b) }

    @inline(__always) private func put(_ u: UnsafeBufferPointer<UInt8>) {
        guard let base = u.baseAddress, u.count > 0 else { return }
        out.put(UnsafeRawPointer(base), u.count)
    }

    /// Bytes as they are (a document's frame, a constant key and the start of its value).
    @inline(__always) func literal(_ s: StaticString) {
        put(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// JSON text made elsewhere (a resource rendered once).
    func literal(dynamic s: String) {
        var s = s
        s.withUTF8 { put($0) }
    }

    func literal(bytes: [UInt8]) { bytes.withUnsafeBufferPointer { put($0) } }

    /// A decimal integer, as JSONBytes writes it.
    @inline(__always) func int(_ v: Int64) { out.decimal(v) }

    /// `units / 10^decimals` exactly, trailing zeros trimmed (as ExportJSON.fixed).
    func fixed(_ units: Int64, _ decimals: Int) { out.fixed(units, decimals) }

    /// 64-bit words as one string of 16 lowercase hex digits each (trace and span ids). Two
    /// overloads, not a variadic one: no array per id.
    @inline(__always) func hex(_ word: UInt64) {
        reserve(18)
        put(UInt8(ascii: "\""))
        hexDigits(word)
        put(UInt8(ascii: "\""))
    }

    @inline(__always) func hex(_ high: UInt64, _ low: UInt64) {
        reserve(34)
        put(UInt8(ascii: "\""))
        hexDigits(high)
        hexDigits(low)
        put(UInt8(ascii: "\""))
    }

    @inline(__always) private func hexDigits(_ w: UInt64) {
        let digits: StaticString = "0123456789abcdef"
        reserve(16)
        for i in 0 ..< 16 { out.base[out.count + i] = digits.utf8Start[Int((w >> UInt64(60 - 4 * i)) & 0xF)] }
        out.count += 16
    }

    /// A JSON string, quotes included.
    @inline(__always) func string(_ s: String) {
        put(UInt8(ascii: "\""))
        escaped(s)
        put(UInt8(ascii: "\""))
    }

    /// A string's bytes escaped as JSONBytes escapes them, without quotes: a string written in
    /// pieces is the same text as the pieces joined (the escape is byte by byte).
    @inline(__always) func escaped(_ s: String) {
        var s = s
        s.withUTF8 { escaped($0) }
    }

    @inline(__always) func escaped(_ s: Substring) {
        var s = s
        s.withUTF8 { escaped($0) }
    }

    func escaped(_ u: UnsafeBufferPointer<UInt8>) { out.escapedJSON(u) }

    // MARK: attributes

    // `head` is everything up to the value's text: `,{"key":"url.scheme","value":{"stringValue":"`
    // (no comma for a span's first attribute), one constant instead of five pieces.

    @inline(__always) func stringAttribute(_ head: StaticString, _ value: String) {
        literal(head)
        escaped(value)
        literal("\"}}")
    }

    @inline(__always) func stringAttribute(_ head: StaticString, _ value: String?) {
        if let value { stringAttribute(head, value) }
    }

    @inline(__always) func intAttribute(_ head: StaticString, _ value: Int64) {
        literal(head)
        int(value)
        literal("\"}}")
    }

    @inline(__always) func intAttribute(_ head: StaticString, _ value: Int?) {
        if let value { intAttribute(head, Int64(value)) }
    }

    /// Any attributes, as `Attributes.json` renders them (the array).
    func attributes(_ a: OTLPExport.Attributes) {
        literal("[")
        for (i, p) in a.pairs.enumerated() {
            if i > 0 { literal(",") }
            literal("{\"key\":")
            string(p.key)
            literal(",\"value\":")
            switch p.value {
            case .string(let s):
                literal("{\"stringValue\":")
                string(s)
                literal("}")
            case .int(let n):
                literal("{\"intValue\":\"")
                int(n)
                literal("\"}")
            case .double(let d):
                literal("{\"doubleValue\":")
                literal(dynamic: d.isFinite ? "\(d)" : "0")
                literal("}")
            case .strings(let l):
                literal("{\"arrayValue\":")
                stringValues(l)
                literal("}")
            }
            literal("}")
        }
        literal("]")
    }

    /// `{"values":[{"stringValue":…},…]}`
    private func stringValues(_ list: [String]) {
        literal("{\"values\":[")
        for (j, x) in list.enumerated() {
            if j > 0 { literal(",") }
            literal("{\"stringValue\":")
            string(x)
            literal("}")
        }
        literal("]}")
    }

    // MARK: spans

    /// A span's start: its ids.
    @inline(__always) private func spanHead(_ ids: OTLPExport.SpanIDs) {
        literal("{\"traceId\":"); hex(ids.traceHigh, ids.traceLow)
        literal(",\"spanId\":"); hex(ids.span)
    }

    /// After the name: kind and times, up to the attributes' array.
    @inline(__always) private func spanTimes(kind: OTLPExport.SpanKind, startUs: Int64, endUs: Int64) {
        literal(",\"kind\":"); int(kind.rawValue)
        literal(",\"startTimeUnixNano\":\""); int(startUs * 1000)
        literal("\",\"endTimeUnixNano\":\""); int(endUs * 1000)
        literal("\",\"attributes\":")
    }

    /// After the attributes: the status of a failed span, and the end.
    @inline(__always) private func spanEnd(error: String?) {
        if let error {
            literal(",\"status\":{\"message\":")
            string(error)
            literal(",\"code\":"); int(OTLPExport.statusError); literal("}")
        }
        literal("}")
    }

    /// Any span, as `Span.json` renders it.
    func span(_ s: OTLPExport.Span) {
        spanHead(s.ids)
        literal(",\"name\":"); string(s.name)
        spanTimes(kind: s.kind, startUs: s.startUs, endUs: s.endUs)
        attributes(s.attributes)
        spanEnd(error: s.error)
    }

    /// An exchange's span: the bytes of `OTLPExport.httpSpan(h, connection:, image:)` written,
    /// for a record with a request start (`start`). `image`: the ids' hash of its image
    /// (`OTLPExport.IDHash(image:)`).
    func httpSpan(_ h: HTTPRecord, start: Int64, connection: ConnectionRecord?, image: OTLPExport.IDHash) {
        let isServer = h.role == "server"
        let method = h.method ?? ""
        let known = OTLPExport.isKnownMethod(method)
        let scheme = h.schemeOrHTTP
        var errorType = OTLPExport.httpErrorType(h)
        var name = known ? method : "HTTP"
        if let g = h.grpc {
            if let full = g.fullMethod { name = full }
            errorType = errorType ?? OTLPExport.grpcErrorType(g, server: isServer)
        }

        // The identity `http/<role>/<conn_id or ts…>/<request_index or ->`, hashed as it goes.
        var id = image
        id.add("http/"); id.add(string: h.role); id.add("/")
        if let c = h.connId { id.add(c) } else { id.add("ts"); id.add(h.ts) }
        id.add("/")
        if let r = h.requestIndex { id.add(Int64(r)) } else { id.add("-") }
        spanHead(id.ids)
        literal(",\"name\":"); string(name)
        spanTimes(kind: isServer ? .server : .client, startUs: start, endUs: max(start, h.endTs))

        literal("[")
        if known {
            stringAttribute(#"{"key":"http.request.method","value":{"stringValue":""#, method)
        } else {
            literal(#"{"key":"http.request.method","value":{"stringValue":"_OTHER"}}"#)
            stringAttribute(#",{"key":"http.request.method_original","value":{"stringValue":""#, method)
        }
        stringAttribute(#",{"key":"url.scheme","value":{"stringValue":""#, scheme)
        if isServer {
            // url.path: the target's path (before `?`), else the target as it is; url.query after `?`.
            if let path = h.path {
                if path.hasPrefix("/"), let q = path.firstIndex(of: "?") {
                    literal(#",{"key":"url.path","value":{"stringValue":""#); escaped(path[..<q]); literal("\"}}")
                    literal(#",{"key":"url.query","value":{"stringValue":""#); escaped(path[path.index(after: q)...]); literal("\"}}")
                } else {
                    stringAttribute(#",{"key":"url.path","value":{"stringValue":""#, path)
                }
            } else {
                literal(#",{"key":"url.path","value":{"stringValue":""}}"#)
            }
        } else {
            // h.url, in its parts when it is made of parts.
            let target = h.path ?? ""
            if target.hasPrefix("/") {
                literal(#",{"key":"url.full","value":{"stringValue":""#)
                escaped(scheme); literal("://"); escaped(h.host ?? h.peer ?? ""); escaped(target)
                literal("\"}}")
            } else {
                stringAttribute(#",{"key":"url.full","value":{"stringValue":""#, h.url)
            }
        }

        // server.address and server.port as ExportHTTP.server says, from the byte ranges.
        let host = h.host.map(SplitAddress.init)
        let peer = h.peer.map(SplitAddress.init)
        let isClient = h.role == "client"
        let serverPort = host?.port ?? (isClient ? peer?.port : nil) ?? (scheme == "https" ? 443 : 80)
        if let address = host ?? (isClient ? peer : nil) {
            literal(#",{"key":"server.address","value":{"stringValue":""#); address.writeHost(self); literal("\"}}")
        }
        intAttribute(#",{"key":"server.port","value":{"intValue":""#, Int64(serverPort))
        if let peer {
            if isServer {
                literal(#",{"key":"client.address","value":{"stringValue":""#); peer.writeHost(self); literal("\"}}")
                intAttribute(#",{"key":"client.port","value":{"intValue":""#, peer.port)
            }
            literal(#",{"key":"network.peer.address","value":{"stringValue":""#); peer.writeHost(self); literal("\"}}")
            intAttribute(#",{"key":"network.peer.port","value":{"intValue":""#, peer.port)
        }
        literal(#",{"key":"network.protocol.name","value":{"stringValue":"http"}}"#)
        stringAttribute(#",{"key":"network.protocol.version","value":{"stringValue":""#, h.protocolVersion(connection: connection))
        intAttribute(#",{"key":"http.response.status_code","value":{"intValue":""#, h.status)
        intAttribute(#",{"key":"http.request.body.size","value":{"intValue":""#, h.requestBodyBytes)
        if h.responseStartTs != nil {
            intAttribute(#",{"key":"http.response.body.size","value":{"intValue":""#, h.responseBodyBytes)
        }
        stringAttribute(#",{"key":"user_agent.original","value":{"stringValue":""#, h.header("request.user-agent"))
        if let g = h.grpc {
            literal(#",{"key":"rpc.system","value":{"stringValue":"grpc"}}"#)
            stringAttribute(#",{"key":"rpc.service","value":{"stringValue":""#, g.service)
            stringAttribute(#",{"key":"rpc.method","value":{"stringValue":""#, g.method)
            intAttribute(#",{"key":"rpc.grpc.status_code","value":{"intValue":""#, g.status)
        }
        stringAttribute(#",{"key":"error.type","value":{"stringValue":""#, errorType)
        literal("]")
        spanEnd(error: errorType)
    }

    /// A lookup's span: the bytes of `OTLPExport.dnsSpan(d, image:)`, for a record with a duration.
    func dnsSpan(_ d: DNSRecord, duration: Int64, image: OTLPExport.IDHash) {
        let start = d.startTs ?? (d.ts - duration)
        var id = image
        id.add("dns/")
        if let tid = d.tid { id.add(Int64(tid)) } else { id.add("-") }
        id.add("/"); id.add(start); id.add("/")
        if let name = d.name { id.add(string: name) }
        spanHead(id.ids)
        literal(",\"name\":"); string(d.api ?? "dns lookup")
        spanTimes(kind: .client, startUs: start, endUs: start + max(0, duration))
        literal("[")
        stringAttribute(#"{"key":"dns.question.name","value":{"stringValue":""#, d.name ?? "")
        if !d.addresses.isEmpty {
            literal(#",{"key":"dns.answers","value":{"arrayValue":"#)
            stringValues(d.addresses)
            literal("}}")
        }
        stringAttribute(#",{"key":"wedjat.dns.api","value":{"stringValue":""#, d.api)
        stringAttribute(#",{"key":"error.type","value":{"stringValue":""#, d.error)
        literal("]")
        spanEnd(error: d.error)
    }

    // MARK: metrics

    /// A histogram's data point, as `Point.json(start:end:)` renders it.
    func point(_ p: OTLPExport.HistogramSet.Point, start: Int64, end: Int64) {
        literal("{\"attributes\":"); attributes(p.attributes)
        literal(",\"startTimeUnixNano\":\""); int(start)
        literal("\",\"timeUnixNano\":\""); int(end)
        literal("\",\"count\":\""); int(p.count)
        literal("\",\"sum\":"); fixed(p.sumUs, 6)
        literal(",\"bucketCounts\":[")
        for (i, n) in p.buckets.enumerated() {
            literal(i == 0 ? "\"" : ",\"")
            int(n)
            literal("\"")
        }
        literal("],\"explicitBounds\":[")
        for (i, b) in OTLPExport.boundariesUs.enumerated() {
            if i > 0 { literal(",") }
            fixed(b, 6)
        }
        literal("],\"min\":"); fixed(p.minUs, 6)
        literal(",\"max\":"); fixed(p.maxUs, 6)
        literal("}")
    }
}

/// `host:port` split as AddressParts.split splits it, kept as the string and the host's byte
/// range: written without a String of the host made.
private struct SplitAddress {
    var text: String
    var host: Range<Int>
    var port: Int?

    init(_ s: String) {
        var s = s
        let parts = s.withUTF8 { AddressParts.parts($0) }
        text = s
        host = parts.host
        port = parts.port
    }

    func writeHost(_ w: OTLPSpanWriter) {
        var t = text
        t.withUTF8 { w.escaped(UnsafeBufferPointer(rebasing: $0[host])) }
    }
}
