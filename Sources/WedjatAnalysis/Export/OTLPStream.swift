/// The OTLP export (docs/EXPORTS.md, "OpenTelemetry"), written while the logs are read: spans
/// go out in requests of at most `spansPerRequest` as soon as a request is full, grouped by
/// resource (process image) in reading order; the duration histograms are kept per image and
/// attribute set (bounded by hosts, statuses, methods) and sent last, as one metrics request.
///
/// An exchange whose record has no `version` (logs of an older wedjat) waits for its
/// connection's record, whose ALPN may say it; every other record is written at once.
final class OTLPStream: ExportConsumer {
    private let emit: (ExportDocument) -> Bool
    private let spansPerRequest: Int
    private let batch = OTLPSpanWriter(capacity: 1 << 21)
    private var inBatch = 0
    private var openResource: Int?
    private var stopped = false
    private var spans = 0
    /// Per image: its resource and scope, rendered once.
    private var resourceJSON: [Int: String] = [:]
    private var scopeJSON: String?
    /// Exchanges without a `version`, by connection, until its record (or the image's end).
    private var waiting: [Int64: [HTTPRecord]] = [:]
    private var waitingCount = 0
    static let waitingLimit = 10_000
    private var histograms: [Int: ImageMetrics] = [:]
    /// Per image: the span ids' hash of `<pid>/<start>/`, made again only when they change (an
    /// image without process_start takes its pid and start from the records read so far).
    private var idPrefixes: [Int: (pid: Int, startTs: Int64, hash: OTLPExport.IDHash)] = [:]

    /// An image's three histograms, and which point an exchange or lookup goes to by the record
    /// fields its attributes are made of: hashing those few fields costs far less than making
    /// the attributes and hashing them, once per record.
    private struct ImageMetrics {
        var client = OTLPExport.HistogramSet()
        var server = OTLPExport.HistogramSet()
        var dns = OTLPExport.HistogramSet()
        var httpPoints: [HTTPMetricKey: Int] = [:]
        var dnsPoints: [DNSMetricKey: Int] = [:]

        mutating func record(_ h: HTTPRecord, duration: Int64, connection: ConnectionRecord?) {
            let isServer = h.role == "server"
            let key = HTTPMetricKey(h, connection: connection)
            let index: Int
            if let known = httpPoints[key] {
                index = known
            } else {
                let attributes = OTLPExport.httpMetricAttributes(h, connection: connection)
                index = isServer ? server.pointIndex(attributes) : client.pointIndex(attributes)
                httpPoints[key] = index
            }
            if isServer { server.record(duration, atPoint: index) } else { client.record(duration, atPoint: index) }
        }

        mutating func record(_ d: DNSRecord, duration: Int64) {
            let key = DNSMetricKey(name: d.name, error: d.error)
            let index: Int
            if let known = dnsPoints[key] {
                index = known
            } else {
                index = dns.pointIndex(OTLPExport.dnsMetricAttributes(d))
                dnsPoints[key] = index
            }
            dns.record(duration, atPoint: index)
        }
    }

    /// What `httpMetricAttributes` reads of an exchange (the peer only where it can name the
    /// server: a client's), so equal keys give equal attributes. Bounded as the points are,
    /// times a host's addresses.
    private struct HTTPMetricKey: Hashable {
        var method: String?
        var scheme: String?
        var role: String
        var host: String?
        var peer: String?
        var version: String?
        var status: Int?
        var error: String?

        init(_ h: HTTPRecord, connection: ConnectionRecord?) {
            method = h.method; scheme = h.scheme; role = h.role; host = h.host
            peer = h.role == "client" ? h.peer : nil
            version = h.protocolVersion(connection: connection)
            status = h.status; error = h.error
        }
    }

    private struct DNSMetricKey: Hashable {
        var name: String?
        var error: String?
    }

    init(emit: @escaping (ExportDocument) -> Bool, spansPerRequest: Int) {
        self.emit = emit
        self.spansPerRequest = max(1, spansPerRequest)
    }

    func add(_ record: Record, context: ExportContext) {
        let image = context.image
        switch record {
        case .http(let h):
            guard h.requestStartTs != nil else { return }
            if h.version == nil, h.continuedBy == nil, let id = h.connId, waitingCount < Self.waitingLimit {
                waiting[id, default: []].append(h)
                waitingCount += 1
            } else {
                exchange(h, connection: nil, context: context)
            }
        case .connection(let c):
            if let id = c.connId, let held = waiting.removeValue(forKey: id) {
                waitingCount -= held.count
                for h in held { exchange(h, connection: c, context: context) }
            }
        case .httpSummary(let s):
            guard let (d, b) = OTLPExport.foldable(s) else { return }
            let attributes = OTLPExport.summaryMetricAttributes(s)
            if s.role == "server" { histograms[image, default: ImageMetrics()].server.add(d, b, attributes: attributes) }
            else { histograms[image, default: ImageMetrics()].client.add(d, b, attributes: attributes) }
        case .dns(let d):
            guard let duration = d.durationUs else { return }
            histograms[image, default: ImageMetrics()].record(d, duration: duration)
            let prefix = idPrefix(image, context)
            span(image: image, context: context) { $0.dnsSpan(d, duration: duration, image: prefix) }
        default:
            break
        }
    }

    private func exchange(_ h: HTTPRecord, connection: ConnectionRecord?, context: ExportContext) {
        let image = context.image
        guard let start = h.requestStartTs else { return }
        histograms[image, default: ImageMetrics()].record(h, duration: max(0, h.endTs - start), connection: connection)
        let prefix = idPrefix(image, context)
        span(image: image, context: context) { $0.httpSpan(h, start: start, connection: connection, image: prefix) }
    }

    private func idPrefix(_ image: Int, _ context: ExportContext) -> OTLPExport.IDHash {
        let pid = context.images[image].pid, startTs = context.images[image].startTs
        if let known = idPrefixes[image], known.pid == pid, known.startTs == startTs { return known.hash }
        let hash = OTLPExport.IDHash(pid: pid, startTs: startTs)
        idPrefixes[image] = (pid, startTs, hash)
        return hash
    }

    func endImage(_ image: Int, context: ExportContext) {
        // Their connection records never came: written with what they have.
        let held = waiting.values.flatMap { $0 }.sorted { $0.ts < $1.ts }
        waiting.removeAll()
        waitingCount = 0
        for h in held { exchange(h, connection: nil, context: context) }
    }

    // MARK: requests

    /// `{"resourceSpans":[{"resource":…,"scopeSpans":[{"scope":…,"spans":[ … ]}]}, …]}`, one line.
    private func span(image: Int, context: ExportContext, _ write: (OTLPSpanWriter) -> Void) {
        guard !stopped else { return }
        if inBatch == spansPerRequest { finishBatch() }
        guard !stopped else { return }
        if openResource != image {
            if openResource != nil { batch.literal("]}]}") } else { batch.literal("{\"resourceSpans\":[") }
            if inBatch > 0 { batch.literal(",") }
            batch.literal("{\"resource\":")
            batch.literal(dynamic: resource(image, context))
            batch.literal(",\"scopeSpans\":[{\"scope\":")
            batch.literal(dynamic: scope(context))
            batch.literal(",\"spans\":[")
            openResource = image
        } else {
            batch.literal(",")
        }
        write(batch)
        inBatch += 1
        spans += 1
    }

    private func resource(_ image: Int, _ context: ExportContext) -> String {
        if let known = resourceJSON[image] { return known }
        let r = OTLPExport.resource(context.images[image]).rendered()
        resourceJSON[image] = r
        return r
    }

    private func scope(_ context: ExportContext) -> String {
        if let s = scopeJSON { return s }
        var o = JSONObject()
        o.add("name", "wedjat")
        o.add("version", context.images.lazy.compactMap { $0.start?.wedjatVersion }.first)
        scopeJSON = o.json.rendered()
        return scopeJSON!
    }

    private func finishBatch() {
        guard inBatch > 0 else { return }
        batch.literal("]}]}]}")
        var text = ExportText()
        text.append(chunk: batch.take())
        stopped = !emit(ExportDocument(body: text, count: inBatch, notes: []))
        inBatch = 0
        openResource = nil
    }

    func finish(context: ExportContext) -> ExportDocument {
        if spans == 0 {
            stopped = !emit(ExportDocument(text: ExportJSON.object([("resourceSpans", .array([]))]).rendered(), count: 0, notes: []))
        } else {
            finishBatch()
        }
        var points = 0
        if !stopped {
            let metrics = metricsDocument(context)
            points = metrics.count
            _ = emit(metrics)
        }
        return ExportDocument(text: "", count: spans, notes: points > 0 ? [] : [])
    }

    /// `ExportMetricsServiceRequest`: per image, the three duration histograms over its whole
    /// life (cumulative, from the image's start to its end). Written as the ExportJSON tree of
    /// `Point.json` renders (ExportTests: the golden file and the points test).
    private func metricsDocument(_ context: ExportContext) -> ExportDocument {
        let w = OTLPSpanWriter()
        var count = 0
        var resources = 0
        w.literal("{\"resourceMetrics\":[")
        for (i, image) in context.images.enumerated() {
            guard let sets = histograms[i] else { continue }
            let start = image.startTs * 1000, end = image.lastKnownTs * 1000
            var metrics = 0
            for (name, description, set) in [
                ("http.client.request.duration", "Duration of HTTP client requests.", sets.client),
                ("http.server.request.duration", "Duration of HTTP server requests.", sets.server),
                ("dns.lookup.duration", "Measures the time taken to perform a DNS lookup.", sets.dns),
            ] where !set.points.isEmpty {
                count += set.points.count
                if metrics == 0 {
                    if resources > 0 { w.literal(",") }
                    w.literal("{\"resource\":"); w.literal(dynamic: resource(i, context))
                    w.literal(",\"scopeMetrics\":[{\"scope\":"); w.literal(dynamic: scope(context))
                    w.literal(",\"metrics\":[")
                    resources += 1
                } else {
                    w.literal(",")
                }
                metrics += 1
                w.literal("{\"name\":"); w.string(name)
                w.literal(",\"description\":"); w.string(description)
                w.literal(",\"unit\":\"s\",\"histogram\":{\"dataPoints\":[")
                for (j, p) in set.points.enumerated() {
                    if j > 0 { w.literal(",") }
                    w.point(p, start: start, end: end)
                }
                w.literal("],\"aggregationTemporality\":"); w.int(OTLPExport.temporalityCumulative); w.literal("}}")
            }
            if metrics > 0 { w.literal("]}]}") }
        }
        w.literal("]}")
        var text = ExportText()
        text.append(chunk: w.take())
        return ExportDocument(body: text, count: count, notes: [])
    }
}
