/// OpenTelemetry (OTLP/JSON, https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
/// spans for HTTP exchanges (CLIENT or SERVER) and DNS lookups, and the histograms
/// `http.client.request.duration`, `http.server.request.duration` and `dns.lookup.duration`,
/// with the semantic conventions' attribute names, one resource per process image.
///
/// The encoding: trace and span ids as hex, enums as integers, 64-bit integers as strings,
/// lowerCamelCase field names. Ids are hashes of the process image (pid, start) and the
/// exchange's or lookup's identity, so exporting the same logs twice gives the same ids.
public enum OTLPExport {
    /// The semantic conventions' advisory bucket boundaries for all three durations, in seconds
    /// (here in microseconds, to bucket integer durations exactly).
    package static let boundariesUs: [Int64] = [5_000, 10_000, 25_000, 50_000, 75_000, 100_000, 250_000, 500_000, 750_000,
                                        1_000_000, 2_500_000, 5_000_000, 7_500_000, 10_000_000]

    /// OTLP enum values.
    package enum SpanKind: Int64 { case server = 2, client = 3 }
    package static let statusError: Int64 = 2
    package static let temporalityDelta: Int64 = 1
    package static let temporalityCumulative: Int64 = 2

    // MARK: spans

    package static let knownMethods: Set<String> = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "QUERY", "TRACE"]

    /// `knownMethods.contains(method)` without hashing the method (once per exchange).
    static func isKnownMethod(_ method: String) -> Bool {
        switch method {
        case "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "QUERY", "TRACE": true
        default: false
        }
    }

    /// The span of an exchange (nil without a request start). `connection`: its connection's
    /// record, only needed for logs whose `http` records have no `version`.
    package static func httpSpan(_ h: HTTPRecord, connection: ConnectionRecord?, image: ProcessLog) -> Span? {
        guard let start = h.requestStartTs else { return nil }
        let isServer = h.role == "server"
        let method = h.method ?? ""
        let known = knownMethods.contains(method)
        var attrs = Attributes(capacity: 16)
        attrs.add("http.request.method", known ? method : "_OTHER")
        if !known { attrs.add("http.request.method_original", method) }
        let (serverAddress, serverPort) = h.server
        attrs.add("url.scheme", h.schemeOrHTTP)
        if isServer {
            attrs.add("url.path", h.targetPath ?? h.path ?? "")
            attrs.add("url.query", h.targetQuery)
        } else {
            attrs.add("url.full", h.url)
        }
        attrs.add("server.address", serverAddress)
        attrs.add("server.port", serverPort.map(Int64.init))
        if let peer = h.peer {
            let p = AddressParts.split(peer)
            if isServer { attrs.add("client.address", p.host); attrs.add("client.port", p.port.map(Int64.init)) }
            attrs.add("network.peer.address", p.host)
            attrs.add("network.peer.port", p.port.map(Int64.init))
        }
        attrs.add("network.protocol.name", "http")
        attrs.add("network.protocol.version", h.protocolVersion(connection: connection))
        attrs.add("http.response.status_code", h.status.map(Int64.init))
        attrs.add("http.request.body.size", h.requestBodyBytes)
        if h.responseStartTs != nil { attrs.add("http.response.body.size", h.responseBodyBytes) }
        attrs.add("user_agent.original", h.header("request.user-agent"))
        var errorType = httpErrorType(h)
        var name = known ? method : "HTTP"
        if let g = h.grpc {
            // gRPC: the RPC semantic conventions beside the HTTP ones; the span is named
            // `package.Service/Method` and fails as gRPC says (grpcErrorType).
            attrs.add("rpc.system", "grpc")
            attrs.add("rpc.service", g.service)
            attrs.add("rpc.method", g.method)
            attrs.add("rpc.grpc.status_code", g.status.map(Int64.init))
            if let full = g.fullMethod { name = full }
            errorType = errorType ?? grpcErrorType(g, server: isServer)
        }
        attrs.add("error.type", errorType)

        let identity = "http/\(h.role)/\(h.connId.map(String.init) ?? "ts\(h.ts)")/\(h.requestIndex.map(String.init) ?? "-")"
        return Span(ids: SpanIDs(image: image, identity: identity), name: name,
                    kind: isServer ? .server : .client, startUs: start, endUs: max(start, h.endTs),
                    attributes: attrs, error: errorType)
    }

    /// A gRPC call's failure as the RPC conventions say: for a client any status but OK, for a
    /// server UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS; the
    /// status's name (or its number).
    static func grpcErrorType(_ g: GRPCRecord, server: Bool) -> String? {
        guard let status = g.status, status != 0 else { return nil }
        if server && ![2, 4, 12, 13, 14, 15].contains(status) { return nil }
        return g.statusName ?? String(status)
    }

    /// The semantic conventions' `error.type`: a client's 4xx and 5xx, a server's 5xx (as the
    /// status code), an exchange cut short or unparsable (wedjat's `error`); a capture gap
    /// (`desync`) only when it hid the status.
    static func httpErrorType(_ h: HTTPRecord) -> String? { errorType(role: h.role, status: h.status, error: h.error) }

    static func errorType(role: String, status: Int?, error: String?) -> String? {
        if let status, status >= (role == "server" ? 500 : 400) { return String(status) }
        switch error {
        case "handed_off"?: return nil   // the response went to a forked child: not an error
        case "incomplete"?, "parse"?: return error
        case let e? where status == nil: return e
        default: return nil
        }
    }

    package static func httpMetricAttributes(_ h: HTTPRecord, connection: ConnectionRecord?) -> Attributes {
        metricAttributes(method: h.method, scheme: h.schemeOrHTTP, role: h.role, server: h.server,
                         version: h.protocolVersion(connection: connection), status: h.status, errorType: httpErrorType(h))
    }

    /// An `http_summary`'s: its key holds the same fields (no peer: a client summary without a
    /// host names no server address).
    package static func summaryMetricAttributes(_ s: HTTPSummaryRecord) -> Attributes {
        let scheme = s.scheme ?? "http"
        let version: String? = switch s.version { case "HTTP/1.0"?: "1.0"; case "HTTP/1.1"?: "1.1"; case "HTTP/2"?: "2"; default: nil }
        return metricAttributes(method: s.method, scheme: scheme, role: s.role,
                                server: ExportHTTP.server(host: s.host, peer: nil, role: s.role, scheme: scheme),
                                version: version, status: s.status, errorType: errorType(role: s.role, status: s.status, error: s.error))
    }

    private static func metricAttributes(method: String?, scheme: String, role: String, server: (address: String?, port: Int?),
                                         version: String?, status: Int?, errorType: String?) -> Attributes {
        var attrs = Attributes()
        let method = method ?? ""
        attrs.add("http.request.method", knownMethods.contains(method) ? method : "_OTHER")
        attrs.add("url.scheme", scheme)
        if role != "server" {
            attrs.add("server.address", server.address)
            attrs.add("server.port", server.port.map(Int64.init))
        }
        attrs.add("network.protocol.name", "http")
        attrs.add("network.protocol.version", version)
        attrs.add("http.response.status_code", status.map(Int64.init))
        attrs.add("error.type", errorType)
        return attrs
    }

    /// The part of a summary the histograms can take: its duration's exact counts, when they
    /// are on these histograms' bounds (nil for logs written before summaries had them).
    package static func foldable(_ s: HTTPSummaryRecord) -> (durations: SummaryDistribution, counts: BoundedCounts)? {
        guard let d = s.durationUs, let b = d.buckets, b.bounds == boundariesUs else { return nil }
        return (d, b)
    }

    package static func dnsMetricAttributes(_ d: DNSRecord) -> Attributes {
        var attrs = Attributes()
        attrs.add("dns.question.name", d.name ?? "")
        attrs.add("error.type", d.error)
        return attrs
    }

    /// The span of a lookup (nil without a duration).
    package static func dnsSpan(_ d: DNSRecord, image: ProcessLog) -> Span? {
        guard let duration = d.durationUs else { return nil }
        let start = d.startTs ?? (d.ts - duration)
        var attrs = Attributes()
        attrs.add("dns.question.name", d.name ?? "")
        if !d.addresses.isEmpty { attrs.add("dns.answers", strings: d.addresses) }
        attrs.add("wedjat.dns.api", d.api)
        attrs.add("error.type", d.error)
        return Span(ids: SpanIDs(image: image, identity: "dns/\(d.tid.map(String.init) ?? "-")/\(start)/\(d.name ?? "")"),
                    name: d.api ?? "dns lookup", kind: .client, startUs: start, endUs: start + max(0, duration),
                    attributes: attrs, error: d.error)
    }

    /// A span as both encodings need it (`json`: OTLP/JSON; WedjatLive encodes protobuf).
    package struct Span {
        package var ids: SpanIDs
        package var name: String
        package var kind: SpanKind
        package var startUs: Int64
        package var endUs: Int64
        package var attributes: Attributes
        /// `error.type` when the span failed: status ERROR with it as the message.
        package var error: String?

        package var json: ExportJSON {
            var span = JSONObject()
            span.add("traceId", ids.traceId)
            span.add("spanId", ids.spanId)
            span.add("name", .string(name))
            span.add("kind", .int(kind.rawValue))
            span.add("startTimeUnixNano", .string(String(startUs * 1000)))
            span.add("endTimeUnixNano", .string(String(endUs * 1000)))
            span.add("attributes", attributes.json)
            if let error { span.add("status", .object([("message", .string(error)), ("code", .int(statusError))])) }
            return span.json
        }
    }

    // MARK: resource, scope

    /// The process image as an OpenTelemetry resource (`service.name` is the program).
    static func resource(_ image: ProcessLog) -> ExportJSON {
        .object([("attributes", resourceAttributes(image).json)])
    }

    package static func resourceAttributes(_ image: ProcessLog) -> Attributes {
        var attrs = Attributes()
        attrs.add("service.name", image.program)
        attrs.add("process.pid", Int64(image.pid))
        if let s = image.start {
            attrs.add("process.parent_pid", s.ppid.map(Int64.init))
            attrs.add("process.executable.path", s.exe)
            attrs.add("process.executable.name", image.program)
            if !s.argv.isEmpty { attrs.add("process.command_args", strings: s.argv) }
            attrs.add("process.creation.time", s.processStartTs.map(ExportTime.iso8601))
            attrs.add("host.name", s.hostname)
            attrs.add("wedjat.log.file", s.log)
        }
        attrs.add("os.type", "linux")
        return attrs
    }

    // MARK: building blocks

    /// An attribute's value (OTLP `AnyValue`, the kinds wedjat uses).
    package enum AttributeValue: Hashable {
        case string(String)
        case int(Int64)
        case double(Double)
        case strings([String])

        var json: ExportJSON {
            switch self {
            case .string(let s): .object([("stringValue", .string(s))])
            case .int(let n): .object([("intValue", .string(String(n)))])
            // Attribute doubles are ratios and sizes, not exact decimals: the shortest form.
            case .double(let d): .object([("doubleValue", .raw(d.isFinite ? "\(d)" : "0"))])
            case .strings(let list): .object([("arrayValue", .object([("values", .array(list.map { .object([("stringValue", .string($0))]) }))]))])
            }
        }
    }

    /// OTLP `KeyValue`s, in the order added; nil values are left out.
    package struct Attributes: Hashable {
        package private(set) var pairs: [Pair] = []

        package struct Pair: Hashable {
            package var key: String
            package var value: AttributeValue
        }

        package init() {}

        /// Room for `capacity` pairs at once (a span's usual count: one allocation).
        package init(capacity: Int) { pairs.reserveCapacity(capacity) }

        package mutating func add(_ key: String, _ value: String?) { if let value { pairs.append(Pair(key: key, value: .string(value))) } }
        package mutating func add(_ key: String, _ value: Int64?) { if let value { pairs.append(Pair(key: key, value: .int(value))) } }
        package mutating func add(_ key: String, double value: Double?) { if let value { pairs.append(Pair(key: key, value: .double(value))) } }
        package mutating func add(_ key: String, strings: [String]) { pairs.append(Pair(key: key, value: .strings(strings))) }

        package var json: ExportJSON { .array(pairs.map { .object([("key", .string($0.key)), ("value", $0.value.json)]) }) }
    }

    /// Histograms of one metric, one data point per distinct attribute set (in first-seen order).
    package struct HistogramSet {
        package private(set) var points: [Point] = []
        private var index: [Attributes: Int] = [:]

        package init() {}

        package var isEmpty: Bool { points.isEmpty }

        package mutating func record(_ us: Int64, attributes: Attributes) {
            points[pointIndex(attributes)].record(us)
        }

        /// A duration on the point `pointIndex` gave.
        mutating func record(_ us: Int64, atPoint index: Int) { points[index].record(us) }

        /// Counts aggregated elsewhere on the same bounds (an `http_summary`'s).
        package mutating func add(_ d: SummaryDistribution, _ b: BoundedCounts, attributes: Attributes) {
            guard d.count > 0 else { return }
            points[pointIndex(attributes)].add(d, b)
        }

        /// The point of these attributes (a new one the first time).
        mutating func pointIndex(_ attributes: Attributes) -> Int {
            if let known = index[attributes] { return known }
            index[attributes] = points.count
            points.append(Point(attributes: attributes))
            return points.count - 1
        }

        package struct Point {
            package var attributes: Attributes
            package var count: Int64 = 0
            package var sumUs: Int64 = 0
            package var minUs: Int64 = .max
            package var maxUs: Int64 = .min
            package var buckets = [Int64](repeating: 0, count: OTLPExport.boundariesUs.count + 1)

            init(attributes: Attributes) { self.attributes = attributes }

            mutating func record(_ us: Int64) {
                count += 1
                sumUs += us
                minUs = min(minUs, us)
                maxUs = max(maxUs, us)
                // Bucket i holds (bound[i-1], bound[i]]: upper bounds inclusive, as OTLP says.
                buckets[OTLPExport.boundariesUs.firstIndex { us <= $0 } ?? OTLPExport.boundariesUs.count] += 1
            }

            mutating func add(_ d: SummaryDistribution, _ b: BoundedCounts) {
                count += d.count
                sumUs += b.sum
                minUs = min(minUs, b.min)
                maxUs = max(maxUs, d.max)
                for i in buckets.indices { buckets[i] += b.counts[i] }
            }

            package func json(start: Int64, end: Int64) -> ExportJSON {
                .object([
                    ("attributes", attributes.json),
                    ("startTimeUnixNano", .string(String(start))),
                    ("timeUnixNano", .string(String(end))),
                    ("count", .string(String(count))),
                    ("sum", .seconds(sumUs)),
                    ("bucketCounts", .array(buckets.map { .string(String($0)) })),
                    ("explicitBounds", .array(OTLPExport.boundariesUs.map { .seconds($0) })),
                    ("min", .seconds(minUs)),
                    ("max", .seconds(maxUs)),
                ])
            }
        }
    }

    /// Trace and span ids: hashes (FNV-1a, then MurmurHash3's finalizer to spread the bits) of
    /// the image (pid, start) and the item's identity. Stable across exports of the same logs;
    /// never all zero (an invalid id in OTLP).
    package struct SpanIDs {
        /// The trace id's two halves (big-endian: `traceHigh` is its first 8 bytes) and the span id.
        package var traceHigh: UInt64
        package var traceLow: UInt64
        package var span: UInt64

        package init(image: ProcessLog, identity: String) {
            var hash = IDHash(image: image)
            hash.add(string: identity)
            self = hash.ids
        }

        init(traceHigh: UInt64, traceLow: UInt64, span: UInt64) {
            self.traceHigh = traceHigh; self.traceLow = traceLow; self.span = span
        }

        @inline(__always) static func basis(_ seed: UInt8) -> UInt64 {
            (0xcbf2_9ce4_8422_2325 ^ UInt64(seed)) &* 0x0000_0100_0000_01b3
        }

        @inline(__always) static func finish(_ hash: UInt64) -> UInt64 {
            var h = hash
            h ^= h >> 33
            h = h &* 0xff51_afd7_ed55_8ccd
            h ^= h >> 33
            h = h &* 0xc4ce_b9fe_1a85_ec53
            h ^= h >> 33
            return h == 0 ? 1 : h
        }

        package var traceId: String { SpanIDs.hex(traceHigh) + SpanIDs.hex(traceLow) }
        package var spanId: String { SpanIDs.hex(span) }

        static func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
    }

    /// The hashes SpanIDs are made of, fed piece by piece: FNV-1a of `<pid>/<start>/<identity>`
    /// with seeds 1, 2 and 3, the three in one pass over the bytes. An image's prefix is hashed
    /// once; a span's identity is added to a copy of it, with no String made.
    package struct IDHash {
        private var h1 = SpanIDs.basis(1), h2 = SpanIDs.basis(2), h3 = SpanIDs.basis(3)

        /// After `<pid>/<start>/` of an image.
        package init(image: ProcessLog) { self.init(pid: image.pid, startTs: image.startTs) }

        init(pid: Int, startTs: Int64) {
            add(Int64(pid)); add("/"); add(startTs); add("/")
        }

        @inline(__always) mutating func add(_ u: UnsafeBufferPointer<UInt8>) {
            var a = h1, b = h2, c = h3
            for byte in u {
                let x = UInt64(byte)
                a = (a ^ x) &* 0x0000_0100_0000_01b3
                b = (b ^ x) &* 0x0000_0100_0000_01b3
                c = (c ^ x) &* 0x0000_0100_0000_01b3
            }
            h1 = a; h2 = b; h3 = c
        }

        @inline(__always) mutating func add(_ s: StaticString) {
            add(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        }

        mutating func add(string s: String) {
            var s = s
            s.withUTF8 { add($0) }
        }

        /// A decimal integer, as `"\(n)"` writes it.
        mutating func add(_ n: Int64) {
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: 20 digits and a sign
            withUnsafeMutableBytes(of: &digits) { d in
                var m = n.magnitude, i = d.count
                repeat { i -= 1; d[i] = UInt8(m % 10) + 0x30; m /= 10 } while m > 0
                if n < 0 { i -= 1; d[i] = UInt8(ascii: "-") }
                add(UnsafeBufferPointer(rebasing: d.assumingMemoryBound(to: UInt8.self)[i...]))
            }
        }

        package var ids: SpanIDs {
            SpanIDs(traceHigh: SpanIDs.finish(h1), traceLow: SpanIDs.finish(h2), span: SpanIDs.finish(h3))
        }
    }
}
