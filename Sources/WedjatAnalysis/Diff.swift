import Foundation

// `wedjat diff RUN_A RUN_B`: the headline numbers of two runs side by side, overall and per
// host, and thresholds on their changes (`--fail-if`) for a CI regression gate.
// docs/REPORT_JSON.md documents the JSON form (`diff_version`) and the threshold syntax.

/// How a metric's values are written and compared.
public enum MetricUnit: String, Codable, Sendable {
    /// A number of things.
    case count
    /// A ratio from 0 to 1, shown as a percentage; changes in percentage points.
    case rate
    /// Microseconds.
    case us
    case bytes
}

/// One number of both runs: `change` is `b - a`, `relative` is `change / a` (absent when `a`
/// is 0, or either value is missing).
public struct DiffRow: Codable, Sendable {
    public var metric: String
    public var unit: MetricUnit
    public var a: Double?
    public var b: Double?
    public var change: Double?
    public var relative: Double?
    /// Each run's own spread of the value, `[low, high]`: a percentile's 95% confidence range
    /// (Report.Percentiles), a rate's (p ± 1.96·√(p(1−p)/n)); absent for values without one.
    public var aRange: [Double]?
    public var bRange: [Double]?
    /// Whether the change is beyond the spread: the two ranges do not overlap. Absent without ranges.
    public var significant: Bool?

    init(metric: String, unit: MetricUnit, a: Double?, b: Double?, aRange: [Double]? = nil, bRange: [Double]? = nil) {
        self.metric = metric; self.unit = unit; self.a = a; self.b = b
        self.aRange = a == nil ? nil : aRange
        self.bRange = b == nil ? nil : bRange
        if let ra = self.aRange, let rb = self.bRange { significant = ra[1] < rb[0] || rb[1] < ra[0] }
        // Rounded to 6 decimals, as the report's rates: 0.166667, not 0.16666666666666666.
        func round6(_ v: Double) -> Double { (v * 1e6).rounded() / 1e6 }
        if let a, let b {
            change = unit == .rate ? round6(b - a) : b - a
            relative = a != 0 ? round6((b - a) / a) : nil
        }
    }
}

/// A `--fail-if` expression: `METRIC[@HOST] OP VALUE`.
public struct Threshold: Codable, Sendable, Equatable {
    public enum Comparison: String, Codable, Sendable { case above = ">", atLeast = ">=", below = "<", atMost = "<=" }

    /// What VALUE is compared with.
    public enum Measure: String, Codable, Sendable {
        /// `+10%`: B's change relative to A, in percent.
        case relativeChange = "relative_change"
        /// `+0.5pp`: B's change in percentage points (rates).
        case pointsChange = "points_change"
        /// `+5ms`, `+3`: B's change in the metric's unit.
        case change
        /// `250ms`, `1%`, `0`: B's own value.
        case value
    }

    public var expression: String
    public var metric: String
    /// What `@` names: a host as the report prints it (`http://localhost:23080`, `localhost:23080`,
    /// or `localhost` for any port), an endpoint (`GET /items/{n}`, `/slow`, `localhost:23080/slow`;
    /// numbers and ids in the path are folded as the report folds them), or `*` for every
    /// endpoint. nil: the whole run.
    public var target: String?
    public var comparison: Comparison
    public var measure: Measure
    /// In the metric's unit (microseconds, bytes, count, a 0...1 ratio for a rate value);
    /// percent for `relativeChange`, points for `pointsChange`.
    public var limit: Double

    public static let syntax = """
        METRIC[@TARGET] OP VALUE, OP one of > >= < <=. TARGET: a host as the report prints it \
        (http://localhost:8080, localhost:8080, or localhost for any port), an endpoint (GET /items/{n}, \
        /slow, localhost:8080/slow), or * for every endpoint; one that matches nothing in either run is an \
        error. VALUE with a sign is a change from A to B: +10% (relative), +0.5pp (percentage points, rates \
        only), +5ms or +3 (in the metric's unit); without a sign it is B's own value: 250ms, 1.5%, 512MiB, 0. \
        Units: us, ms, s; B, KiB, MiB, GiB; % for rates. Examples: 'ttfb.p99>+10%' 'http.error_rate>+0.5pp' \
        'rss.peak>+20%' 'drops>0' 'total.p95@api.example.com>300ms' 'ttfb.p95@GET /slow>+10%' 'ttfb.p95@*>+25%'
        """

    /// Targets are host or endpoint ones: the metrics they have.
    var isEndpointTarget: Bool { Threshold.isEndpoint(target) }
    static func isEndpoint(_ target: String?) -> Bool {
        guard let t = target else { return false }
        var rest = Substring(t)
        for scheme in ["http(s)://", "https://", "http://"] { if let r = rest.range(of: scheme) { rest = rest[r.upperBound...] } }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        return t == "*" || rest.contains("/")
    }

    public init(parsing text: String) throws(DiffError) {
        func bad(_ why: String) -> DiffError { .badThreshold(text, why) }
        guard let opStart = text.firstIndex(where: { $0 == ">" || $0 == "<" }) else { throw bad("no comparison (> >= < <=)") }
        var rest = text[text.index(after: opStart)...].filter { !$0.isWhitespace }[...]
        var op = String(text[opStart])
        if rest.first == "=" { op += "="; rest = rest.dropFirst() }
        comparison = Comparison(rawValue: op)!
        let left = text[..<opStart].trimmingCharacters(in: .whitespaces)
        if let at = left.firstIndex(of: "@") {
            metric = String(left[..<at]).trimmingCharacters(in: .whitespaces)
            let t = String(left[left.index(after: at)...]).trimmingCharacters(in: .whitespaces)
            guard !t.isEmpty else { throw bad("empty target after @") }
            target = t
            let endpoint = Threshold.isEndpoint(t)
            let units = endpoint ? DiffMetrics.endpointUnits : DiffMetrics.hostUnits
            guard units[metric] != nil else {
                throw bad("\"\(metric)\" is not a per-\(endpoint ? "endpoint" : "host") metric (those are: "
                          + units.keys.sorted().joined(separator: ", ") + ")")
            }
        } else {
            metric = left
            guard DiffMetrics.units[metric] != nil else {
                throw bad("unknown metric \"\(metric)\" (known: " + DiffMetrics.units.keys.sorted().joined(separator: ", ") + ")")
            }
        }
        let unit = (target == nil ? DiffMetrics.units : Threshold.isEndpoint(target) ? DiffMetrics.endpointUnits : DiffMetrics.hostUnits)[metric]!
        expression = text

        var value = String(rest)
        let signed = value.first == "+" || value.first == "-"
        let negative = value.first == "-"
        if signed { value.removeFirst() }
        // The suffix: letters and %.
        let numberEnd = value.firstIndex { !($0.isNumber || $0 == ".") } ?? value.endIndex
        guard let number = Double(value[..<numberEnd]), number.isFinite else { throw bad("no number in \"\(rest)\"") }
        let suffix = String(value[numberEnd...])
        let sign = negative ? -1.0 : 1.0
        switch suffix {
        case "%" where signed:
            measure = .relativeChange
            limit = sign * number
        case "pp":
            guard signed, unit == .rate else { throw bad("pp (percentage points) is for a change of a rate: +0.5pp") }
            measure = .pointsChange
            limit = sign * number
        default:
            guard let scaled = Threshold.scale(number, suffix, unit) else {
                throw bad("\"\(suffix)\" is not a unit of \(metric) (\(Threshold.unitHelp(unit)))")
            }
            measure = signed ? .change : .value
            limit = sign * scaled
        }
    }

    static func scale(_ n: Double, _ suffix: String, _ unit: MetricUnit) -> Double? {
        switch (unit, suffix) {
        case (.us, "us"), (.us, "µs"), (.us, ""): n
        case (.us, "ms"): n * 1000
        case (.us, "s"): n * 1_000_000
        case (.bytes, "B"), (.bytes, ""): n
        case (.bytes, "KiB"), (.bytes, "K"): n * 1024
        case (.bytes, "MiB"), (.bytes, "M"): n * 1024 * 1024
        case (.bytes, "GiB"), (.bytes, "G"): n * 1024 * 1024 * 1024
        case (.rate, "%"): n / 100
        case (.rate, ""): n
        case (.count, ""): n
        default: nil
        }
    }

    static func unitHelp(_ unit: MetricUnit) -> String {
        switch unit {
        case .us: "us, ms, s"
        case .bytes: "B, KiB, MiB, GiB"
        case .rate: "% or a fraction; pp for a change"
        case .count: "a plain number"
        }
    }

    /// The number compared with `limit`, from a row; nil when it cannot be computed.
    func measured(_ row: DiffRow) -> Double? {
        switch measure {
        case .value: return row.b
        case .change: return row.change
        case .pointsChange: return row.change.map { $0 * 100 }
        case .relativeChange:
            guard let a = row.a, let b = row.b else { return nil }
            if a == 0 { return b == 0 ? 0 : (b > 0 ? .infinity : -.infinity) }
            return (b - a) / abs(a) * 100
        }
    }

    func crossed(by v: Double) -> Bool {
        switch comparison {
        case .above: v > limit
        case .atLeast: v >= limit
        case .below: v < limit
        case .atMost: v <= limit
        }
    }
}

public enum DiffError: Error, CustomStringConvertible, Equatable {
    case badThreshold(String, String)
    case badReport(String, String)
    /// A `--fail-if` whose target is in neither run: a gate that cannot fail must not pass.
    case noMatch(String, String)

    public var description: String {
        switch self {
        case .badThreshold(let t, let why): "bad --fail-if '\(t)': \(why). Syntax: \(Threshold.syntax)"
        case .badReport(let path, let why): "\(path): \(why)"
        case .noMatch(let t, let known): "--fail-if '\(t)': its target matches no host or endpoint in either run (\(known))"
        }
    }
}

/// The metrics `diff` compares, by name.
public enum DiffMetrics {
    static let percentiles: [(String, KeyPath<Report.Percentiles, Int64>)] = [("p50", \.p50), ("p95", \.p95), ("p99", \.p99), ("max", \.max)]

    /// Of a whole run.
    public static let units: [String: MetricUnit] = {
        var u: [String: MetricUnit] = [
            "processes": .count, "duration": .us, "connections": .count, "requests": .count,
            "connection.error_rate": .rate, "network.error_rate": .rate, "http.error_rate": .rate,
            "http.4xx_rate": .rate, "http.5xx_rate": .rate, "cpu.time": .us, "rss.peak": .bytes,
            "stalls": .count, "drops": .count,
        ]
        for phase in ["ttfb", "total", "connect", "tls", "dns"] { for (p, _) in percentiles { u[phase + "." + p] = .us } }
        return u
    }()

    /// Of one endpoint.
    public static let endpointUnits: [String: MetricUnit] = {
        var u: [String: MetricUnit] = ["requests": .count, "http.error_rate": .rate, "http.4xx_rate": .rate, "http.5xx_rate": .rate]
        for phase in ["ttfb", "total"] { for (p, _) in percentiles { u[phase + "." + p] = .us } }
        return u
    }()

    /// Of one host.
    public static let hostUnits: [String: MetricUnit] = {
        var u: [String: MetricUnit] = [
            "requests": .count, "connections": .count, "network.error_rate": .rate, "http.error_rate": .rate,
            "http.4xx_rate": .rate, "http.5xx_rate": .rate,
        ]
        for phase in ["ttfb", "total", "connect", "tls", "dns"] { for (p, _) in percentiles { u[phase + "." + p] = .us } }
        return u
    }()

    /// A metric's value and its spread (`[low, high]`, where the report has one).
    typealias Value = (name: String, value: Double?, range: [Double]?)

    /// A rate's 95% range over `n` trials (normal approximation, with a continuity half-count).
    static func rateRange(_ p: Double?, _ n: Int64) -> [Double]? {
        guard let p, n > 0 else { return nil }
        let half = 1.96 * (p * (1 - p) / Double(n)).squareRoot() + 0.5 / Double(n)
        return [Swift.max(0, p - half), Swift.min(1, p + half)]
    }

    /// Overall metrics of a report, in display order; nil where the run has no such value.
    static func overall(_ r: Report) -> [Value] {
        let h = r.headline
        func d<T: BinaryInteger>(_ v: T?) -> Double? { v.map { Double($0) } }
        let attempts = r.http.reduce(Int64(0)) { $0 + $1.attempts }
        var out: [Value] = [
            ("processes", d(h.processes), nil), ("duration", d(h.spanUs), nil), ("connections", d(h.connections), nil),
            ("requests", d(h.httpRequests), nil),
            ("connection.error_rate", h.connectionErrorRate, rateRange(h.connectionErrorRate, Int64(h.connections))),
            ("network.error_rate", h.networkErrorRate, rateRange(h.networkErrorRate, attempts)),
            ("http.error_rate", h.httpErrorRate, rateRange(h.httpErrorRate, h.httpRequests)),
            ("http.4xx_rate", h.clientErrorRate, rateRange(h.clientErrorRate, h.httpRequests)),
            ("http.5xx_rate", h.serverErrorRate, rateRange(h.serverErrorRate, h.httpRequests)),
        ]
        out += phases([("ttfb", h.ttfbUs), ("total", h.durationUs), ("connect", h.connectUs), ("tls", h.tlsUs), ("dns", h.dnsUs)])
        out += [("cpu.time", d(h.cpuTimeUs), nil), ("rss.peak", d(h.peakRssBytes), nil), ("stalls", d(h.stalls), nil),
                ("drops", d(h.droppedEvents + h.droppedRecords + h.captureDropped + h.untrackedConnections), nil)]
        return out
    }

    static func host(_ row: Report.HTTPRow) -> [Value] {
        var out: [Value] = [
            ("requests", Double(row.requests), nil), ("connections", Double(row.connections), nil),
            ("network.error_rate", row.networkErrorRate, rateRange(row.networkErrorRate, row.attempts)),
            ("http.error_rate", row.httpErrorRate, rateRange(row.httpErrorRate, row.requests)),
            ("http.4xx_rate", row.clientErrorRate, rateRange(row.clientErrorRate, row.requests)),
            ("http.5xx_rate", row.serverErrorRate, rateRange(row.serverErrorRate, row.requests)),
        ]
        out += phases([("ttfb", row.ttfbUs), ("total", row.durationUs), ("connect", row.connectUs), ("tls", row.tlsUs),
                       ("dns", row.dnsUs)])
        return out
    }

    static func endpoint(_ row: Report.EndpointRow) -> [Value] {
        let c = row.statusClasses
        var out: [Value] = [
            ("requests", Double(row.requests), nil),
            ("http.error_rate", row.httpErrorRate, rateRange(row.httpErrorRate, row.requests)),
            ("http.4xx_rate", Report.rate(c.s4xx, row.requests), rateRange(Report.rate(c.s4xx, row.requests), row.requests)),
            ("http.5xx_rate", Report.rate(c.s5xx, row.requests), rateRange(Report.rate(c.s5xx, row.requests), row.requests)),
        ]
        out += phases([("ttfb", row.ttfbUs), ("total", row.durationUs)])
        return out
    }

    private static func phases(_ list: [(String, Report.Percentiles?)]) -> [Value] {
        list.flatMap { name, p -> [Value] in
            let ranges: [String: [Int64]?] = ["p50": p?.p50Range, "p95": p?.p95Range, "p99": p?.p99Range]
            return percentiles.map { suffix, path in
                (name + "." + suffix, p.map { Double($0[keyPath: path]) }, (ranges[suffix] ?? nil)?.map(Double.init))
            }
        }
    }
}

/// Two runs compared.
public struct RunDiff: Codable, Sendable {
    public struct RunInfo: Codable, Sendable {
        public var path: String
        public var processes: Int
        public var startTs: Int64
        public var spanUs: Int64
    }

    public struct HostDiff: Codable, Sendable {
        /// `http[].key` (from B when the host is in both).
        public var key: String
        public var role: String
        public var host: String
        /// `both`, `a` or `b`: the runs the host appears in.
        public var seenIn: String
        public var metrics: [DiffRow]
    }

    public struct EndpointDiff: Codable, Sendable {
        /// `endpoints[].key`: `GET /items/{n}`.
        public var key: String
        public var role: String
        public var host: String
        public var method: String
        public var path: String
        public var seenIn: String
        public var metrics: [DiffRow]
    }

    public struct ThresholdResult: Codable, Sendable {
        public var expression: String
        public var metric: String
        public var target: String?
        /// The hosts or endpoints the target matched (`role host` or `role host METHOD path`).
        public var matched: [String]?
        public var comparison: Threshold.Comparison
        public var measure: Threshold.Measure
        public var limit: Double
        /// What was compared with `limit` (for each row the threshold names, the worst).
        public var measured: Double?
        /// Which row that was, when the target matched several.
        public var worst: String?
        /// `fail` (crossed), `pass`, or `not_evaluated` (a run lacks the metric).
        public var status: String
        public var reason: String?
    }

    public var diffVersion = 2
    public var a: RunInfo
    public var b: RunInfo
    public var metrics: [DiffRow]
    public var hosts: [HostDiff]
    public var endpoints: [EndpointDiff]
    public var thresholds: [ThresholdResult]
    /// True when a threshold was crossed.
    public var failed: Bool

    /// Throws when a threshold's target matches nothing in either run.
    public init(a: Report, pathA: String, b: Report, pathB: String, thresholds: [Threshold] = []) throws(DiffError) {
        func info(_ r: Report, _ path: String) -> RunInfo {
            RunInfo(path: path, processes: r.headline.processes, startTs: r.headline.startTs, spanUs: r.headline.spanUs)
        }
        self.a = info(a, pathA)
        self.b = info(b, pathB)
        metrics = RunDiff.rows(DiffMetrics.overall(a), DiffMetrics.overall(b), units: DiffMetrics.units)

        // Hosts by (role, host), in B's order then those only in A; endpoints likewise.
        struct Key: Hashable { var role: String, host: String, method: String = "", path: String = "" }
        let hostsA = Dictionary(a.http.map { (Key(role: $0.role, host: $0.host), $0) }, uniquingKeysWith: { x, _ in x })
        let hostKeysB = Set(b.http.map { Key(role: $0.role, host: $0.host) })
        var hosts: [HostDiff] = []
        func hostDiff(_ ra: Report.HTTPRow?, _ rb: Report.HTTPRow?) -> HostDiff {
            let any = (rb ?? ra)!
            return HostDiff(key: any.key, role: any.role, host: any.host, seenIn: ra != nil && rb != nil ? "both" : ra != nil ? "a" : "b",
                            metrics: RunDiff.rows(ra.map(DiffMetrics.host) ?? [], rb.map(DiffMetrics.host) ?? [],
                                                  units: DiffMetrics.hostUnits))
        }
        for rb in b.http { hosts.append(hostDiff(hostsA[Key(role: rb.role, host: rb.host)], rb)) }
        for ra in a.http where !hostKeysB.contains(Key(role: ra.role, host: ra.host)) { hosts.append(hostDiff(ra, nil)) }
        self.hosts = hosts

        func ek(_ e: Report.EndpointRow) -> Key { Key(role: e.role, host: e.host, method: e.method, path: e.path) }
        let endpointsA = Dictionary(a.endpoints.map { (ek($0), $0) }, uniquingKeysWith: { x, _ in x })
        let endpointKeysB = Set(b.endpoints.map(ek))
        var endpoints: [EndpointDiff] = []
        func endpointDiff(_ ra: Report.EndpointRow?, _ rb: Report.EndpointRow?) -> EndpointDiff {
            let any = (rb ?? ra)!
            return EndpointDiff(key: any.key, role: any.role, host: any.host, method: any.method, path: any.path,
                                seenIn: ra != nil && rb != nil ? "both" : ra != nil ? "a" : "b",
                                metrics: RunDiff.rows(ra.map(DiffMetrics.endpoint) ?? [], rb.map(DiffMetrics.endpoint) ?? [],
                                                      units: DiffMetrics.endpointUnits))
        }
        for rb in b.endpoints { endpoints.append(endpointDiff(endpointsA[ek(rb)], rb)) }
        for ra in a.endpoints where !endpointKeysB.contains(ek(ra)) { endpoints.append(endpointDiff(ra, nil)) }
        self.endpoints = endpoints

        var results: [ThresholdResult] = []
        for t in thresholds {
            var rows: [(label: String, row: DiffRow)] = []
            var matched: [String]?
            if let target = t.target {
                if t.isEndpointTarget {
                    let hits = endpoints.filter { RunDiff.endpoint($0, matches: target) }
                    matched = hits.map { "\($0.role) \($0.host) \($0.key)" }
                    rows = hits.compactMap { e in
                        e.metrics.first(where: { $0.metric == t.metric }).map { ("\(e.role) \(e.host) \(e.key)", $0) }
                    }
                } else {
                    let hits = hosts.filter { RunDiff.host($0.host, key: $0.key, matches: target) }
                    matched = hits.map { "\($0.role) \($0.host)" }
                    rows = hits.compactMap { h in h.metrics.first(where: { $0.metric == t.metric }).map { ("\(h.role) \(h.host)", $0) } }
                }
                if matched!.isEmpty {
                    let known = t.isEndpointTarget
                        ? "endpoints: " + endpoints.prefix(8).map { "\($0.host) \($0.key)" }.joined(separator: ", ") + (endpoints.count > 8 ? ", …" : "")
                        : "hosts: " + hosts.prefix(8).map(\.host).joined(separator: ", ") + (hosts.count > 8 ? ", …" : "")
                    throw .noMatch(t.expression, known)
                }
            } else {
                rows = metrics.filter { $0.metric == t.metric }.map { ("", $0) }
            }
            let values = rows.compactMap { r in t.measured(r.row).map { (r.label, $0) } }
            var result = ThresholdResult(expression: t.expression, metric: t.metric, target: t.target, matched: matched,
                                         comparison: t.comparison, measure: t.measure, limit: t.limit, measured: nil,
                                         status: "not_evaluated")
            if values.isEmpty {
                let missingA = rows.allSatisfy { $0.row.a == nil }, missingB = rows.allSatisfy { $0.row.b == nil }
                result.reason = missingA && missingB ? "neither run has it" : missingA ? "run A does not have it"
                    : missingB ? "run B does not have it" : "not computable"
            } else {
                // The value farthest past the limit decides.
                let up = t.comparison == .above || t.comparison == .atLeast
                let worst = values.max { up ? $0.1 < $1.1 : $0.1 > $1.1 }!
                result.measured = worst.1.isFinite ? worst.1 : (worst.1 > 0 ? Double.greatestFiniteMagnitude : -Double.greatestFiniteMagnitude)
                if values.count > 1 { result.worst = worst.0 }
                result.status = t.crossed(by: worst.1) ? "fail" : "pass"
                if !worst.1.isFinite { result.reason = "A is 0: any increase is infinitely large" }
            }
            results.append(result)
        }
        self.thresholds = results
        failed = results.contains { $0.status == "fail" }
    }

    private static func rows(_ ma: [DiffMetrics.Value], _ mb: [DiffMetrics.Value], units: [String: MetricUnit]) -> [DiffRow] {
        let names = (mb.isEmpty ? ma : mb).map(\.name)
        let va = Dictionary(ma.map { ($0.name, $0) }, uniquingKeysWith: { x, _ in x })
        let vb = Dictionary(mb.map { ($0.name, $0) }, uniquingKeysWith: { x, _ in x })
        return names.map { n in
            DiffRow(metric: n, unit: units[n]!, a: va[n]?.value, b: vb[n]?.value, aRange: va[n]?.range, bRange: vb[n]?.range)
        }
    }

    /// A host target: the host as the report prints it (`client → http://h:80`, `→ http://h:80`,
    /// `http://h:80`, `h:80`), or its name alone for any port.
    static func host(_ host: String, key: String, matches target: String) -> Bool {
        var t = Substring(target)
        for prefix in ["client → ", "server ← ", "→ ", "← "] where t.hasPrefix(prefix) { t = t.dropFirst(prefix.count) }
        for scheme in ["http(s)://", "https://", "http://"] where t.hasPrefix(scheme) { t = t.dropFirst(scheme.count) }
        while t.hasSuffix("/") { t = t.dropLast() }
        if t == host { return true }
        // `localhost` for `localhost:23080`; `[::1]` for `[::1]:8080`.
        if let colon = host.lastIndex(of: ":"), !host[colon...].contains("]"), host[..<colon] == t { return true }
        return false
    }

    /// An endpoint target: `*`, or `[METHOD ][HOST]/path` with the path folded as the report folds it.
    static func endpoint(_ e: EndpointDiff, matches target: String) -> Bool {
        if target == "*" { return true }
        var t = Substring(target.trimmingCharacters(in: .whitespaces))
        if let space = t.firstIndex(of: " ") {
            let method = t[..<space]
            guard method.uppercased() == e.method.uppercased() else { return false }
            t = t[space...].drop { $0 == " " }
        }
        for scheme in ["https://", "http://"] where t.hasPrefix(scheme) { t = t.dropFirst(scheme.count) }
        guard let slash = t.firstIndex(of: "/") else { return false }
        let hostPart = t[..<slash]
        if !hostPart.isEmpty, !host(e.host, key: e.host, matches: String(hostPart)) { return false }
        return PathTemplate.fold(String(t[slash...])) == e.path || String(t[slash...]) == e.path
    }
}

extension Report {
    /// A report saved with `wedjat report --format json`, for `diff` (same `report_version` only).
    public static func load(json path: String) throws(DiffError) -> Report {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .badReport(path, "cannot read: \(error.localizedDescription)")
        }
        struct Version: Decodable { var reportVersion: Int? }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let v = try? decoder.decode(Version.self, from: data) else {
            throw .badReport(path, "not a JSON report of wedjat (wedjat report --format json)")
        }
        guard v.reportVersion == Report.currentVersion else {
            throw .badReport(path, "report_version \(v.reportVersion.map(String.init) ?? "missing"), this wedjat reads "
                             + "\(Report.currentVersion): make it again with `wedjat report --format json`, or diff the logs")
        }
        do {
            return try decoder.decode(Report.self, from: data)
        } catch {
            throw .badReport(path, "not a report this wedjat can read: \(error)")
        }
    }
}

/// `wedjat diff` for a terminal: the runs, the overall metrics, the hosts, the thresholds.
public struct DiffText {
    public var color: Bool
    static let hostsShown = 10
    /// Per host in the text (the JSON has every metric).
    static let hostMetrics: Set<String> = ["requests", "network.error_rate", "http.error_rate", "ttfb.p50", "ttfb.p95",
                                           "ttfb.p99", "total.p50", "total.p95", "total.p99", "connect.p50", "tls.p50",
                                           "dns.p50"]

    static let endpointsShown = 8
    static let endpointMetrics: Set<String> = ["requests", "http.error_rate", "ttfb.p50", "ttfb.p95", "ttfb.p99", "total.p50",
                                               "total.p95", "total.p99"]

    public init(color: Bool = false) { self.color = color }

    public func render(_ d: RunDiff) -> String {
        let style = TextReport(color: color)
        func run(_ name: String, _ r: RunDiff.RunInfo) -> String {
            "\(name) = \(r.path) (" + Format.count(r.processes, "process", "processes") + ", "
                + Format.duration(r.spanUs) + " from " + Format.timestamp(r.startTs) + " UTC)"
        }
        var out = [style.bold("wedjat diff") + ": " + run("A", d.a), "             " + run("B", d.b), ""]
        // Set-up phases: p50 and p99 are enough on a screen.
        out += table(d.metrics.filter { !Self.setUpDetail($0.metric) }, header: "METRIC", style: style)

        if !d.hosts.isEmpty {
            out += ["", style.bold("HOSTS") + " (by requests in B; p50 of the set-up phases)"]
            for h in d.hosts.prefix(Self.hostsShown) {
                let seen = h.seenIn == "both" ? "" : h.seenIn == "a" ? "  (only in A)" : "  (only in B)"
                out.append("  " + h.key + seen)
                out += table(h.metrics.filter { Self.hostMetrics.contains($0.metric) }, header: nil, style: style)
                    .map { "  " + $0 }
            }
            if d.hosts.count > Self.hostsShown {
                out.append("  … " + Format.count(d.hosts.count - Self.hostsShown, "more host") + " (--format json lists all)")
            }
        }

        // Endpoints whose latency or errors changed beyond the runs' spread first, then by requests.
        if !d.endpoints.isEmpty {
            func moved(_ e: RunDiff.EndpointDiff) -> Bool { e.metrics.contains { $0.significant == true && ($0.change ?? 0) != 0 } }
            let ordered = d.endpoints.filter(moved) + d.endpoints.filter { !moved($0) }
            out += ["", style.bold("ENDPOINTS") + " (changed beyond the runs' spread first; total = request start → response end)"]
            for e in ordered.prefix(Self.endpointsShown) {
                let seen = e.seenIn == "both" ? "" : e.seenIn == "a" ? "  (only in A)" : "  (only in B)"
                out.append("  " + (e.role == "server" ? "← " : "→ ") + e.host + " " + e.key + seen)
                out += table(e.metrics.filter { Self.endpointMetrics.contains($0.metric) }, header: nil, style: style)
                    .map { "  " + $0 }
            }
            if d.endpoints.count > Self.endpointsShown {
                out.append("  … " + Format.count(d.endpoints.count - Self.endpointsShown, "more endpoint") + " (--format json lists all)")
            }
        }

        if !d.thresholds.isEmpty {
            out += ["", style.bold("THRESHOLDS")]
            for t in d.thresholds {
                let status: String
                switch t.status {
                case "fail": status = style.paint("FAIL", .red)
                case "pass": status = "ok  "
                default: status = style.paint("n/a ", .yellow)
                }
                var line = "  " + status + "  " + t.expression
                if let m = t.measured { line += ": " + measuredText(m, t) }
                if let w = t.worst { line += " at " + w }
                if let r = t.reason { line += " (" + r + ")" }
                out.append(line)
            }
            let failed = d.thresholds.filter { $0.status == "fail" }.count
            out.append("  " + (failed > 0 ? style.paint(Format.count(failed, "threshold") + " crossed", .red)
                               : "no threshold crossed"))
        }
        return out.joined(separator: "\n") + "\n"
    }

    static func setUpDetail(_ metric: String) -> Bool {
        ["connect.", "tls.", "dns."].contains { metric.hasPrefix($0) } && (metric.hasSuffix(".p95") || metric.hasSuffix(".max"))
    }

    /// Rows with a value in A or B.
    private func table(_ rows: [DiffRow], header: String?, style: TextReport) -> [String] {
        var t = Table(header: [header ?? "", "A", "B", "CHANGE", "SPREAD (95%)"], rightAligned: [1, 2])
        for r in rows where r.a != nil || r.b != nil {
            var spread = ""
            if let ra = r.aRange, let rb = r.bRange {
                spread = "A " + value(ra[0], r.unit) + "–" + value(ra[1], r.unit) + ", B " + value(rb[0], r.unit) + "–" + value(rb[1], r.unit)
            }
            t.add([Cell(r.metric), Cell(value(r.a, r.unit)), Cell(value(r.b, r.unit)),
                   Cell(change(r) + (r.significant == false && (r.change ?? 0) != 0 ? " ~" : ""), colour(r)), Cell(spread)])
        }
        let lines = t.render(style)
        return header == nil ? Array(lines.dropFirst()) : lines
    }

    private func value(_ v: Double?, _ unit: MetricUnit) -> String {
        guard let v else { return "-" }
        switch unit {
        case .count: return Format.fixed(v, 0)
        case .rate: return Format.percent(v)
        case .us: return Format.duration(Int64(v.rounded()))
        case .bytes: return Format.bytes(Int64(v.rounded()))
        }
    }

    private func change(_ r: DiffRow) -> String {
        guard let c = r.change else { return r.a == nil ? "only in B" : "only in A" }
        let sign = c > 0 ? "+" : c < 0 ? "-" : ""
        var text: String
        switch r.unit {
        case .rate: return sign + Format.fixed(abs(c) * 100, 2) + "pp"
        case .count: text = sign + Format.fixed(abs(c), 0)
        case .us: text = sign + Format.duration(Int64(abs(c).rounded()))
        case .bytes: text = sign + Format.bytes(Int64(abs(c).rounded()))
        }
        if let rel = r.relative, c != 0 { text += " (" + (rel > 0 ? "+" : "") + Format.fixed(rel * 100, 2) + "%)" }
        return text
    }

    /// Red where more is worse (latency, errors, CPU, memory, stalls, drops) and the change is
    /// beyond the runs' own spread (ranges that do not overlap); a percentile of too few values
    /// to have a range never; a value without a spread (CPU time, peak RSS, a max) only when it
    /// grew by 5% or more, or from nothing. `~` marks a change within the spread.
    static let unspreadThreshold = 0.05

    private func colour(_ r: DiffRow) -> TextReport.Colour? {
        guard let c = r.change, c > 0 else { return nil }
        let neutral: Set<String> = ["processes", "duration", "connections", "requests"]
        guard !neutral.contains(r.metric) else { return nil }
        if let significant = r.significant { return significant ? .red : nil }
        // A percentile of too few values for a range: not enough to call it a change.
        if [".p50", ".p95", ".p99"].contains(where: r.metric.hasSuffix) { return nil }
        return (r.relative.map { $0 >= Self.unspreadThreshold } ?? true) ? .red : nil
    }

    private func measuredText(_ m: Double, _ t: RunDiff.ThresholdResult) -> String {
        let unit = DiffMetrics.units[t.metric] ?? DiffMetrics.hostUnits[t.metric] ?? .count
        let infinite = m == .greatestFiniteMagnitude || m == -.greatestFiniteMagnitude
        switch t.measure {
        case .relativeChange: return infinite ? (m > 0 ? "+∞%" : "-∞%") : (m >= 0 ? "+" : "") + Format.fixed(m, 2) + "%"
        case .pointsChange: return (m >= 0 ? "+" : "") + Format.fixed(m, 2) + "pp"
        case .change: return (m >= 0 ? "+" : "-") + value(abs(m), unit)
        case .value: return value(m, unit)
        }
    }
}

/// `wedjat diff --format json`: keys sorted, slashes unescaped, as the report's JSON.
public enum DiffJSON {
    public static func render(_ d: RunDiff) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(d), as: UTF8.self) + "\n"
    }
}
