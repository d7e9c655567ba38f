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
    private var batch = JSONBytes(capacity: 1 << 20)
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
    private var histograms: [Int: (client: OTLPExport.HistogramSet, server: OTLPExport.HistogramSet, dns: OTLPExport.HistogramSet)] = [:]

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
            if s.role == "server" { histograms[image, default: Self.empty].server.add(d, b, attributes: attributes) }
            else { histograms[image, default: Self.empty].client.add(d, b, attributes: attributes) }
        case .dns(let d):
            guard let duration = d.durationUs else { return }
            histograms[image, default: Self.empty].dns.record(duration, attributes: OTLPExport.dnsMetricAttributes(d))
            if let s = OTLPExport.dnsSpan(d, image: context.images[image]) { span(image: image, context: context) { s.write(into: &$0) } }
        default:
            break
        }
    }

    private static var empty: (client: OTLPExport.HistogramSet, server: OTLPExport.HistogramSet, dns: OTLPExport.HistogramSet) {
        (OTLPExport.HistogramSet(), OTLPExport.HistogramSet(), OTLPExport.HistogramSet())
    }

    private func exchange(_ h: HTTPRecord, connection: ConnectionRecord?, context: ExportContext) {
        let image = context.image
        guard let start = h.requestStartTs else { return }
        let attributes = OTLPExport.httpMetricAttributes(h, connection: connection)
        let duration = max(0, h.endTs - start)
        if h.role == "server" { histograms[image, default: Self.empty].server.record(duration, attributes: attributes) }
        else { histograms[image, default: Self.empty].client.record(duration, attributes: attributes) }
        if let s = OTLPExport.httpSpan(h, connection: connection, image: context.images[image]) {
            span(image: image, context: context) { s.write(into: &$0) }
        }
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
    private func span(image: Int, context: ExportContext, _ write: (inout JSONBytes) -> Void) {
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
        write(&batch)
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
        text.append(bytes: batch.bytes)
        stopped = !emit(ExportDocument(body: text, count: inBatch, notes: []))
        batch.removeAll()
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
    /// life (cumulative, from the image's start to its end).
    private func metricsDocument(_ context: ExportContext) -> ExportDocument {
        var resourceMetrics: [ExportJSON] = []
        var count = 0
        for (i, image) in context.images.enumerated() {
            guard let sets = histograms[i] else { continue }
            let start = image.startTs * 1000, end = image.lastKnownTs * 1000
            var metrics: [ExportJSON] = []
            for (name, description, set) in [
                ("http.client.request.duration", "Duration of HTTP client requests.", sets.client),
                ("http.server.request.duration", "Duration of HTTP server requests.", sets.server),
                ("dns.lookup.duration", "Measures the time taken to perform a DNS lookup.", sets.dns),
            ] where !set.points.isEmpty {
                count += set.points.count
                metrics.append(.object([
                    ("name", .string(name)), ("description", .string(description)), ("unit", .string("s")),
                    ("histogram", .object([
                        ("dataPoints", .array(set.points.map { $0.json(start: start, end: end) })),
                        ("aggregationTemporality", .int(OTLPExport.temporalityCumulative)),
                    ])),
                ]))
            }
            guard !metrics.isEmpty else { continue }
            resourceMetrics.append(.object([
                ("resource", .raw(resource(i, context))),
                ("scopeMetrics", .array([.object([("scope", .raw(scope(context))), ("metrics", .array(metrics))])])),
            ]))
        }
        return ExportDocument(text: ExportJSON.object([("resourceMetrics", .array(resourceMetrics))]).rendered(), count: count, notes: [])
    }
}
