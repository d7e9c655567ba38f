import Foundation
import WedjatAnalysis

/// One export request's content for one process image (a resource): its spans, or its
/// metrics. Encoded as OTLP protobuf (`ExportTraceServiceRequest`,
/// `ExportMetricsServiceRequest`; field numbers from opentelemetry-proto's trace.proto,
/// metrics.proto, common.proto, resource.proto) or as OTLP/JSON.
package struct OTLPResourceBatch {
    package var resource: OTLPExport.Attributes
    package var scopeName = "wedjat"
    package var scopeVersion: String?
    package var spans: [OTLPExport.Span] = []
    package var metrics: [OTLPMetric] = []

    package init(resource: OTLPExport.Attributes, scopeVersion: String?) {
        self.resource = resource
        self.scopeVersion = scopeVersion
    }

    /// Data points over all metrics.
    package var dataPoints: Int { metrics.reduce(0) { $0 + $1.pointCount } }

    // MARK: protobuf

    package func tracesProtobuf() -> [UInt8] {
        var w = ProtoWriter()
        w.message(1) { rs in                           // ExportTraceServiceRequest.resource_spans
            rs.message(1) { Self.writeResource(&$0, resource) }
            rs.message(2) { ss in                      // ResourceSpans.scope_spans
                ss.message(1) { writeScope(&$0) }
                for span in spans { ss.message(2) { Self.writeSpan(&$0, span) } }
            }
        }
        return w.bytes
    }

    package func metricsProtobuf() -> [UInt8] {
        var w = ProtoWriter()
        w.message(1) { rm in                           // ExportMetricsServiceRequest.resource_metrics
            rm.message(1) { Self.writeResource(&$0, resource) }
            rm.message(2) { sm in                      // ResourceMetrics.scope_metrics
                sm.message(1) { writeScope(&$0) }
                for m in metrics { sm.message(2) { Self.writeMetric(&$0, m) } }
            }
        }
        return w.bytes
    }

    private func writeScope(_ w: inout ProtoWriter) {
        w.string(1, scopeName)
        if let scopeVersion { w.string(2, scopeVersion) }
    }

    static func writeResource(_ w: inout ProtoWriter, _ attributes: OTLPExport.Attributes) {
        writeAttributes(&w, field: 1, attributes)
    }

    static func writeAttributes(_ w: inout ProtoWriter, field: Int, _ attributes: OTLPExport.Attributes) {
        for pair in attributes.pairs {
            w.message(field) { kv in
                kv.string(1, pair.key)
                kv.message(2) { writeValue(&$0, pair.value) }
            }
        }
    }

    static func writeValue(_ w: inout ProtoWriter, _ value: OTLPExport.AttributeValue) {
        switch value {
        case .string(let s): w.string(1, s, always: true)
        case .int(let n): w.int64(3, n, always: true)
        case .double(let d): w.double(4, d, always: true)
        case .strings(let list):
            w.message(5) { array in
                for s in list { array.message(1) { $0.string(1, s, always: true) } }
            }
        }
    }

    static func writeSpan(_ w: inout ProtoWriter, _ s: OTLPExport.Span) {
        w.bytes(1, bigEndian(s.ids.traceHigh) + bigEndian(s.ids.traceLow))
        w.bytes(2, bigEndian(s.ids.span))
        w.string(5, s.name)
        w.int64(6, s.kind.rawValue)
        w.fixed64(7, UInt64(max(0, s.startUs)) * 1000)
        w.fixed64(8, UInt64(max(0, s.endUs)) * 1000)
        writeAttributes(&w, field: 9, s.attributes)
        if let error = s.error {
            w.message(15) { st in
                st.string(2, error)
                st.int64(3, OTLPExport.statusError)
            }
        }
    }

    static func bigEndian(_ v: UInt64) -> [UInt8] { (0 ..< 8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) } }

    static func writeMetric(_ w: inout ProtoWriter, _ m: OTLPMetric) {
        w.string(1, m.name)
        w.string(2, m.description)
        w.string(3, m.unit)
        switch m.data {
        case .gauge(let points):
            w.message(5) { g in for p in points { g.message(1) { writeNumber(&$0, p) } } }
        case .sum(let points, let temporality, let monotonic):
            w.message(7) { s in
                for p in points { s.message(1) { writeNumber(&$0, p) } }
                s.int64(2, temporality)
                s.bool(3, monotonic)
            }
        case .histogram(let points, let temporality):
            w.message(9) { h in
                for p in points { h.message(1) { writeHistogramPoint(&$0, p) } }
                h.int64(2, temporality)
            }
        }
    }

    static func writeNumber(_ w: inout ProtoWriter, _ p: OTLPMetric.NumberPoint) {
        w.fixed64(2, UInt64(max(0, p.startUs ?? 0)) * 1000)
        w.fixed64(3, UInt64(max(0, p.timeUs)) * 1000)
        switch p.value {
        case .double(let d): w.double(4, d, always: true)
        case .int(let n): w.sfixed64(6, n, always: true)
        }
        writeAttributes(&w, field: 7, p.attributes)
    }

    static func writeHistogramPoint(_ w: inout ProtoWriter, _ p: OTLPMetric.HistogramPoint) {
        let point = p.point
        w.fixed64(2, UInt64(max(0, p.startUs)) * 1000)
        w.fixed64(3, UInt64(max(0, p.timeUs)) * 1000)
        w.fixed64(4, UInt64(max(0, point.count)), always: true)
        w.double(5, Double(point.sumUs) / 1e6, always: true)
        w.packedFixed64(6, point.buckets.map { UInt64(max(0, $0)) })
        w.packedDouble(7, OTLPExport.boundariesUs.map { Double($0) / 1e6 })
        writeAttributes(&w, field: 9, point.attributes)
        if point.count > 0 {
            w.double(11, Double(point.minUs) / 1e6, always: true)
            w.double(12, Double(point.maxUs) / 1e6, always: true)
        }
    }

    // MARK: JSON

    package func tracesJSON() -> String {
        let spansJSON = ExportJSON.array(spans.map(\.json))
        return ExportJSON.object([("resourceSpans", .array([.object([
            ("resource", .object([("attributes", resource.json)])),
            ("scopeSpans", .array([.object([("scope", scopeJSON), ("spans", spansJSON)])])),
        ])]))]).rendered()
    }

    package func metricsJSON() -> String {
        ExportJSON.object([("resourceMetrics", .array([.object([
            ("resource", .object([("attributes", resource.json)])),
            ("scopeMetrics", .array([.object([("scope", scopeJSON), ("metrics", .array(metrics.map(\.json)))])])),
        ])]))]).rendered()
    }

    private var scopeJSON: ExportJSON {
        var members: [(String, ExportJSON)] = [("name", .string(scopeName))]
        if let scopeVersion { members.append(("version", .string(scopeVersion))) }
        return .object(members)
    }
}

/// A metric of `wedjat ship`: the duration histograms of an interval (delta), and the
/// process's gauges and counters from `sample` records.
package struct OTLPMetric {
    package var name: String
    package var description: String
    package var unit: String
    package var data: Data

    package enum Data {
        case gauge([NumberPoint])
        case sum([NumberPoint], temporality: Int64, monotonic: Bool)
        case histogram([HistogramPoint], temporality: Int64)
    }

    package struct NumberPoint {
        package var attributes = OTLPExport.Attributes()
        /// Cumulative sums: since when (the process's start).
        package var startUs: Int64?
        package var timeUs: Int64
        package var value: Value
        package enum Value { case int(Int64), double(Double) }
    }

    package struct HistogramPoint {
        package var point: OTLPExport.HistogramSet.Point
        package var startUs: Int64
        package var timeUs: Int64
    }

    package var pointCount: Int {
        switch data {
        case .gauge(let p): p.count
        case .sum(let p, _, _): p.count
        case .histogram(let p, _): p.count
        }
    }

    var json: ExportJSON {
        func number(_ p: NumberPoint) -> ExportJSON {
            var members: [(String, ExportJSON)] = [("attributes", p.attributes.json)]
            if let start = p.startUs { members.append(("startTimeUnixNano", .string(String(start * 1000)))) }
            members.append(("timeUnixNano", .string(String(p.timeUs * 1000))))
            switch p.value {
            case .int(let n): members.append(("asInt", .string(String(n))))
            case .double(let d): members.append(("asDouble", .raw(d.isFinite ? "\(d)" : "0")))
            }
            return .object(members)
        }
        let body: (String, ExportJSON)
        switch data {
        case .gauge(let points):
            body = ("gauge", .object([("dataPoints", .array(points.map(number)))]))
        case .sum(let points, let temporality, let monotonic):
            body = ("sum", .object([("dataPoints", .array(points.map(number))),
                                    ("aggregationTemporality", .int(temporality)), ("isMonotonic", .bool(monotonic))]))
        case .histogram(let points, let temporality):
            body = ("histogram", .object([("dataPoints", .array(points.map { $0.point.json(start: $0.startUs * 1000, end: $0.timeUs * 1000) })),
                                          ("aggregationTemporality", .int(temporality))]))
        }
        return .object([("name", .string(name)), ("description", .string(description)), ("unit", .string(unit)), body])
    }
}
