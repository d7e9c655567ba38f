import Foundation
import WedjatAnalysis

/// The records of one stretch of one segment, turned into what `wedjat ship` sends: spans for
/// exchanges and lookups (the mapping of `wedjat export --otlp`: OTLPExport), the duration
/// histograms of the stretch (delta temporality: the stretch is the interval), and the
/// process's metrics from its `sample` records. Made again identically from the same stretch,
/// which is what lets a restarted `ship` finish a half-sent batch.
struct ShipBatch {
    let image: ProcessLog
    /// The interval the histograms cover: from the previous batch's end.
    let intervalStartUs: Int64
    private(set) var spans: [OTLPExport.Span] = []
    private var client = OTLPExport.HistogramSet()
    private var server = OTLPExport.HistogramSet()
    private var dns = OTLPExport.HistogramSet()
    private var numbers: [String: (order: Int, definition: MetricDefinition, points: [OTLPMetric.NumberPoint])] = [:]
    /// The latest record time seen: the interval's end.
    private(set) var maxTs: Int64
    private(set) var records = 0
    /// Exchanges with no span: no request start seen (as `wedjat export`), and those only
    /// counted in `http_summary` records (past the writer's record budget).
    private(set) var exchangesWithoutStart = 0
    private(set) var summarizedExchanges: Int64 = 0
    /// Of those, the ones the histograms cannot hold (a summary without bucket counts).
    private(set) var summarizedNotInHistograms: Int64 = 0
    private(set) var endRecord: String?
    private(set) var removedSegments: [SegmentsRemovedRecord] = []

    init(image: ProcessLog, intervalStartUs: Int64) {
        self.image = image
        self.intervalStartUs = intervalStartUs
        maxTs = intervalStartUs
    }

    /// Whether the record makes a span (for the caller's limit of spans a request).
    static func makesSpan(_ r: Record) -> Bool {
        switch r {
        case .http, .dns: true
        default: false
        }
    }

    mutating func add(_ record: Record) {
        records += 1
        maxTs = max(maxTs, record.ts)
        switch record {
        case .http(let h):
            if let span = OTLPExport.httpSpan(h, connection: nil, image: image) {
                spans.append(span)
            } else {
                exchangesWithoutStart += 1
            }
            guard let start = h.requestStartTs else { break }
            let attributes = OTLPExport.httpMetricAttributes(h, connection: nil)
            if h.role == "server" {
                server.record(max(0, h.endTs - start), attributes: attributes)
            } else {
                client.record(max(0, h.endTs - start), attributes: attributes)
            }
        case .httpSummary(let s):
            summarizedExchanges += max(0, s.count)
            guard let (d, b) = OTLPExport.foldable(s) else {
                summarizedNotInHistograms += max(0, s.count)
                break
            }
            let attributes = OTLPExport.summaryMetricAttributes(s)
            if s.role == "server" { server.add(d, b, attributes: attributes) } else { client.add(d, b, attributes: attributes) }
        case .dns(let d):
            if let span = OTLPExport.dnsSpan(d, image: image) { spans.append(span) }
            if let us = d.durationUs { dns.record(us, attributes: OTLPExport.dnsMetricAttributes(d)) }
        case .sample(let s):
            addSample(s)
        case .segmentEnd:
            endRecord = "segment_end"
        case .processEnd:
            endRecord = "process_end"
        case .segmentsRemoved(let r):
            removedSegments.append(r)
        default:
            break
        }
    }

    var isEmpty: Bool { spans.isEmpty && metrics().isEmpty }

    /// The histograms of the interval and the sample metrics, in a fixed order.
    func metrics() -> [OTLPMetric] {
        var out: [OTLPMetric] = []
        let end = max(intervalStartUs, maxTs)
        for (name, description, set) in [
            ("http.client.request.duration", "Duration of HTTP client requests.", client),
            ("http.server.request.duration", "Duration of HTTP server requests.", server),
            ("dns.lookup.duration", "Measures the time taken to perform a DNS lookup.", dns),
        ] where !set.isEmpty {
            out.append(OTLPMetric(name: name, description: description, unit: "s", data: .histogram(
                set.points.map { OTLPMetric.HistogramPoint(point: $0, startUs: intervalStartUs, timeUs: end) },
                temporality: OTLPExport.temporalityDelta)))
        }
        for (_, entry) in numbers.sorted(by: { $0.value.order < $1.value.order }) {
            let d = entry.definition
            let data: OTLPMetric.Data = switch d.kind {
            case .gauge: .gauge(entry.points)
            case .counter: .sum(entry.points, temporality: OTLPExport.temporalityCumulative, monotonic: true)
            case .upDownCounter: .sum(entry.points, temporality: OTLPExport.temporalityCumulative, monotonic: false)
            }
            out.append(OTLPMetric(name: d.name, description: d.description, unit: d.unit, data: data))
        }
        return out
    }

    // MARK: process metrics (semantic conventions: system/process-metrics)

    struct MetricDefinition {
        enum Kind { case gauge, counter, upDownCounter }
        var name: String
        var description: String
        var unit: String
        var kind: Kind
    }

    static let cpuTime = MetricDefinition(name: "process.cpu.time", description: "Total CPU seconds broken down by different states.", unit: "s", kind: .counter)
    static let cpuUtilization = MetricDefinition(name: "process.cpu.utilization", description: "Difference in process.cpu.time since the last measurement, divided by the elapsed time and number of CPUs available to the process.", unit: "1", kind: .gauge)
    static let memoryUsage = MetricDefinition(name: "process.memory.usage", description: "The amount of physical memory in use.", unit: "By", kind: .upDownCounter)
    static let memoryVirtual = MetricDefinition(name: "process.memory.virtual", description: "The amount of committed virtual memory.", unit: "By", kind: .upDownCounter)
    static let threadCount = MetricDefinition(name: "process.thread.count", description: "Process threads count.", unit: "{thread}", kind: .upDownCounter)
    static let fdCount = MetricDefinition(name: "process.unix.file_descriptor.count", description: "Number of unix file descriptors in use by the process.", unit: "{file_descriptor}", kind: .upDownCounter)
    static let contextSwitches = MetricDefinition(name: "process.context_switches", description: "Number of times the process has been context switched.", unit: "{context_switch}", kind: .counter)
    static let pagingFaults = MetricDefinition(name: "process.paging.faults", description: "Number of page faults the process has made.", unit: "{fault}", kind: .counter)
    static let loopUtilization = MetricDefinition(name: "wedjat.event_loop.utilization", description: "Share of the sample interval an event-loop thread spent busy between two waits (epoll_wait, poll, select).", unit: "1", kind: .gauge)
    static let openConnections = MetricDefinition(name: "wedjat.connections.open", description: "Connections wedjat tracks as open in the process.", unit: "{connection}", kind: .upDownCounter)

    private mutating func point(_ d: MetricDefinition, _ value: OTLPMetric.NumberPoint.Value, at ts: Int64,
                                attributes: OTLPExport.Attributes = OTLPExport.Attributes()) {
        let start: Int64? = d.kind == .gauge ? nil : image.kernelStartTs
        let p = OTLPMetric.NumberPoint(attributes: attributes, startUs: start, timeUs: ts, value: value)
        if numbers[d.name] == nil { numbers[d.name] = (numbers.count, d, []) }
        numbers[d.name]!.points.append(p)
    }

    private mutating func addSample(_ s: SampleRecord) {
        func attrs(_ key: String, _ value: String) -> OTLPExport.Attributes {
            var a = OTLPExport.Attributes(); a.add(key, value); return a
        }
        if let user = s.cpuUserUs { point(Self.cpuTime, .double(Double(user) / 1e6), at: s.ts, attributes: attrs("cpu.mode", "user")) }
        if let system = s.cpuSystemUs { point(Self.cpuTime, .double(Double(system) / 1e6), at: s.ts, attributes: attrs("cpu.mode", "system")) }
        if let pct = s.cpuTotalPct {
            point(Self.cpuUtilization, .double(pct / 100 / Double(max(1, image.start?.cpus ?? 1))), at: s.ts)
        }
        if let rss = s.rssBytes { point(Self.memoryUsage, .int(rss), at: s.ts) }
        if let virtual = s.virtualBytes { point(Self.memoryVirtual, .int(virtual), at: s.ts) }
        if let threads = s.threads { point(Self.threadCount, .int(Int64(threads)), at: s.ts) }
        if let fds = s.fds { point(Self.fdCount, .int(Int64(fds)), at: s.ts) }
        if let open = s.openConnections { point(Self.openConnections, .int(Int64(open)), at: s.ts) }
        if let v = s.voluntaryCtxSwitches { point(Self.contextSwitches, .int(v), at: s.ts, attributes: attrs("process.context_switch.type", "voluntary")) }
        if let v = s.involuntaryCtxSwitches { point(Self.contextSwitches, .int(v), at: s.ts, attributes: attrs("process.context_switch.type", "involuntary")) }
        if let v = s.majorFaults { point(Self.pagingFaults, .int(v), at: s.ts, attributes: attrs("system.paging.fault.type", "major")) }
        if let v = s.minorFaults { point(Self.pagingFaults, .int(v), at: s.ts, attributes: attrs("system.paging.fault.type", "minor")) }
        for loop in s.loops {
            guard let busy = loop.busyPct else { continue }
            var a = OTLPExport.Attributes()
            a.add("thread.id", Int64(loop.tid))
            a.add("thread.name", loop.thread)
            point(Self.loopUtilization, .double(busy / 100), at: s.ts, attributes: a)
        }
    }

    /// The requests' content for this batch.
    func resourceBatch() -> OTLPResourceBatch {
        var b = OTLPResourceBatch(resource: OTLPExport.resourceAttributes(image), scopeVersion: image.start?.wedjatVersion)
        b.spans = spans
        b.metrics = metrics()
        return b
    }
}
