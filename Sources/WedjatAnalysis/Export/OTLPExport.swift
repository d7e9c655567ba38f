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
    static let boundariesUs: [Int64] = [5_000, 10_000, 25_000, 50_000, 75_000, 100_000, 250_000, 500_000, 750_000,
                                        1_000_000, 2_500_000, 5_000_000, 7_500_000, 10_000_000]

    /// OTLP enum values.
    enum SpanKind: Int64 { case server = 2, client = 3 }
    static let statusError: Int64 = 2
    static let temporalityCumulative: Int64 = 2

    // MARK: spans

    static let knownMethods: Set<String> = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "QUERY", "TRACE"]

    /// One span of an HTTP exchange, written into `w` (OTLPStream).
    static func writeHTTPSpan(_ h: HTTPRecord, connection: ConnectionRecord?, image: ProcessLog, into w: inout JSONBytes) {
        guard let start = h.requestStartTs else { return }
        let isServer = h.role == "server"
        let method = h.method ?? ""
        let known = knownMethods.contains(method)
        var attrs = Attributes()
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
        let errorType = httpErrorType(h)
        attrs.add("error.type", errorType)

        let identity = "http/\(h.role)/\(h.connId.map(String.init) ?? "ts\(h.ts)")/\(h.requestIndex.map(String.init) ?? "-")"
        let ids = SpanIDs(image: image, identity: identity)
        w.openObject()
        w.key("traceId"); w.string(ids.traceId)
        w.key("spanId"); w.string(ids.spanId)
        w.key("name"); w.string(known ? method : "HTTP")
        w.key("kind"); w.int((isServer ? SpanKind.server : SpanKind.client).rawValue)
        w.key("startTimeUnixNano"); w.intString(start * 1000)
        w.key("endTimeUnixNano"); w.intString(max(start, h.endTs) * 1000)
        w.key("attributes"); attrs.write(into: &w)
        if let errorType {
            w.key("status"); w.object { $0.key("message"); $0.string(errorType); $0.key("code"); $0.int(statusError) }
        }
        w.closeObject()
    }

    /// The semantic conventions' `error.type`: a client's 4xx and 5xx, a server's 5xx (as the
    /// status code), an exchange cut short or unparsable (wedjat's `error`); a capture gap
    /// (`desync`) only when it hid the status.
    static func httpErrorType(_ h: HTTPRecord) -> String? { errorType(role: h.role, status: h.status, error: h.error) }

    static func errorType(role: String, status: Int?, error: String?) -> String? {
        if let status, status >= (role == "server" ? 500 : 400) { return String(status) }
        switch error {
        case "incomplete"?, "parse"?: return error
        case let e? where status == nil: return e
        default: return nil
        }
    }

    static func httpMetricAttributes(_ h: HTTPRecord, connection: ConnectionRecord?) -> Attributes {
        metricAttributes(method: h.method, scheme: h.schemeOrHTTP, role: h.role, server: h.server,
                         version: h.protocolVersion(connection: connection), status: h.status, errorType: httpErrorType(h))
    }

    /// An `http_summary`'s: its key holds the same fields (no peer: a client summary without a
    /// host names no server address).
    static func summaryMetricAttributes(_ s: HTTPSummaryRecord) -> Attributes {
        let scheme = s.scheme ?? "http"
        let version: String? = switch s.version { case "HTTP/1.0"?: "1.0"; case "HTTP/1.1"?: "1.1"; default: nil }
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
    static func foldable(_ s: HTTPSummaryRecord) -> (durations: SummaryDistribution, counts: BoundedCounts)? {
        guard let d = s.durationUs, let b = d.buckets, b.bounds == boundariesUs else { return nil }
        return (d, b)
    }

    static func writeDNSSpan(_ d: DNSRecord, image: ProcessLog, into w: inout JSONBytes) {
        guard let duration = d.durationUs else { return }
        let start = d.startTs ?? (d.ts - duration)
        var attrs = Attributes()
        attrs.add("dns.question.name", d.name ?? "")
        if !d.addresses.isEmpty { attrs.add("dns.answers", strings: d.addresses) }
        attrs.add("wedjat.dns.api", d.api)
        attrs.add("error.type", d.error)
        let ids = SpanIDs(image: image, identity: "dns/\(d.tid.map(String.init) ?? "-")/\(start)/\(d.name ?? "")")
        w.openObject()
        w.key("traceId"); w.string(ids.traceId)
        w.key("spanId"); w.string(ids.spanId)
        w.key("name"); w.string(d.api ?? "dns lookup")
        w.key("kind"); w.int(SpanKind.client.rawValue)
        w.key("startTimeUnixNano"); w.intString(start * 1000)
        w.key("endTimeUnixNano"); w.intString((start + max(0, duration)) * 1000)
        w.key("attributes"); attrs.write(into: &w)
        if let error = d.error {
            w.key("status"); w.object { $0.key("message"); $0.string(error); $0.key("code"); $0.int(statusError) }
        }
        w.closeObject()
    }

    // MARK: resource, scope

    /// The process image as an OpenTelemetry resource (`service.name` is the program).
    static func resource(_ image: ProcessLog) -> ExportJSON {
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
        return .object([("attributes", attrs.json)])
    }

    // MARK: building blocks

    /// OTLP `KeyValue`s, in the order added; nil values are left out. Compared and hashed by
    /// their keys and values (an attribute set is a histogram's data point key).
    struct Attributes: Hashable {
        enum Value: Hashable {
            case string(String)
            case int(Int64)
            case strings([String])
        }
        private(set) var pairs: [(key: String, value: Value)] = []

        mutating func add(_ key: String, _ value: String?) { if let value { pairs.append((key, .string(value))) } }
        mutating func add(_ key: String, _ value: Int64?) { if let value { pairs.append((key, .int(value))) } }
        mutating func add(_ key: String, strings: [String]) { pairs.append((key, .strings(strings))) }

        var json: ExportJSON {
            .array(pairs.map { p in
                let v: ExportJSON
                switch p.value {
                case .string(let s): v = .object([("stringValue", .string(s))])
                case .int(let n): v = .object([("intValue", .string(String(n)))])
                case .strings(let l): v = .object([("arrayValue", .object([("values", .array(l.map { .object([("stringValue", .string($0))]) }))]))])
                }
                return .object([("key", .string(p.key)), ("value", v)])
            })
        }

        func write(into w: inout JSONBytes) {
            w.array { w in
                for p in pairs {
                    w.openObject()
                    w.key("key"); w.string(p.key)
                    w.key("value")
                    switch p.value {
                    case .string(let s): w.object { $0.key("stringValue"); $0.string(s) }
                    case .int(let n): w.object { $0.key("intValue"); $0.intString(n) }
                    case .strings(let l):
                        w.object { o in
                            o.key("arrayValue")
                            o.object { a in a.key("values"); a.array { for x in l { $0.object { $0.key("stringValue"); $0.string(x) } } } }
                        }
                    }
                    w.closeObject()
                }
            }
        }

        static func == (a: Attributes, b: Attributes) -> Bool {
            a.pairs.count == b.pairs.count && zip(a.pairs, b.pairs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        }
        func hash(into hasher: inout Hasher) {
            for p in pairs { hasher.combine(p.key); hasher.combine(p.value) }
        }
    }

    /// Histograms of one metric, one data point per distinct attribute set (in first-seen order).
    struct HistogramSet {
        private(set) var points: [Point] = []
        private var index: [Attributes: Int] = [:]

        mutating func record(_ us: Int64, attributes: Attributes) {
            points[point(attributes)].record(us)
        }

        /// Counts aggregated elsewhere on the same bounds (an `http_summary`'s).
        mutating func add(_ d: SummaryDistribution, _ b: BoundedCounts, attributes: Attributes) {
            guard d.count > 0 else { return }
            points[point(attributes)].add(d, b)
        }

        private mutating func point(_ attributes: Attributes) -> Int {
            if let known = index[attributes] { return known }
            index[attributes] = points.count
            points.append(Point(attributes: attributes))
            return points.count - 1
        }

        struct Point {
            var attributes: Attributes
            var count: Int64 = 0
            var sumUs: Int64 = 0
            var minUs: Int64 = .max
            var maxUs: Int64 = .min
            var buckets = [Int64](repeating: 0, count: OTLPExport.boundariesUs.count + 1)

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

            func json(start: Int64, end: Int64) -> ExportJSON {
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
    struct SpanIDs {
        var traceId: String
        var spanId: String

        init(image: ProcessLog, identity: String) {
            let base = "\(image.pid)/\(image.startTs)/\(identity)"
            traceId = SpanIDs.hex(SpanIDs.fnv1a(base, seed: 1)) + SpanIDs.hex(SpanIDs.fnv1a(base, seed: 2))
            spanId = SpanIDs.hex(SpanIDs.fnv1a(base, seed: 3))
        }

        static func fnv1a(_ s: String, seed: UInt8) -> UInt64 {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            h ^= UInt64(seed)
            h = h &* 0x0000_0100_0000_01b3
            for byte in s.utf8 {
                h ^= UInt64(byte)
                h = h &* 0x0000_0100_0000_01b3
            }
            h ^= h >> 33
            h = h &* 0xff51_afd7_ed55_8ccd
            h ^= h >> 33
            h = h &* 0xc4ce_b9fe_1a85_ec53
            h ^= h >> 33
            return h == 0 ? 1 : h
        }

        static func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
    }
}
