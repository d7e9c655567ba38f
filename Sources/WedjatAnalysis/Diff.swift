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

    init(metric: String, unit: MetricUnit, a: Double?, b: Double?) {
        self.metric = metric; self.unit = unit; self.a = a; self.b = b
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
    /// A host (`http[].host`): the metric of that host's rows instead of the run's.
    public var host: String?
    public var comparison: Comparison
    public var measure: Measure
    /// In the metric's unit (microseconds, bytes, count, a 0...1 ratio for a rate value);
    /// percent for `relativeChange`, points for `pointsChange`.
    public var limit: Double

    public static let syntax = """
        METRIC[@HOST] OP VALUE, OP one of > >= < <=. VALUE with a sign is a change from A to B: \
        +10% (relative), +0.5pp (percentage points, rates only), +5ms or +3 (in the metric's unit); \
        without a sign it is B's own value: 250ms, 1.5%, 512MiB, 0. Units: us, ms, s; B, KiB, MiB, GiB; \
        % for rates. Examples: 'ttfb.p99>+10%' 'http.error_rate>+0.5pp' 'rss.peak>+20%' 'drops>0' \
        'total.p95@api.example.com>300ms'
        """

    public init(parsing text: String) throws(DiffError) {
        func bad(_ why: String) -> DiffError { .badThreshold(text, why) }
        let s = text.filter { !$0.isWhitespace }
        guard let opStart = s.firstIndex(where: { $0 == ">" || $0 == "<" }) else { throw bad("no comparison (> >= < <=)") }
        var rest = s[s.index(after: opStart)...]
        var op = String(s[opStart])
        if rest.first == "=" { op += "="; rest = rest.dropFirst() }
        comparison = Comparison(rawValue: op)!
        let left = s[..<opStart]
        if let at = left.firstIndex(of: "@") {
            metric = String(left[..<at])
            host = String(left[left.index(after: at)...])
            guard !host!.isEmpty else { throw bad("empty host after @") }
            guard DiffMetrics.hostUnits[metric] != nil else {
                throw bad("\"\(metric)\" is not a per-host metric (those are: "
                          + DiffMetrics.hostUnits.keys.sorted().joined(separator: ", ") + ")")
            }
        } else {
            metric = String(left)
            guard DiffMetrics.units[metric] != nil else {
                throw bad("unknown metric \"\(metric)\" (known: " + DiffMetrics.units.keys.sorted().joined(separator: ", ") + ")")
            }
        }
        let unit = (host == nil ? DiffMetrics.units : DiffMetrics.hostUnits)[metric]!
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

    public var description: String {
        switch self {
        case .badThreshold(let t, let why): "bad --fail-if '\(t)': \(why). Syntax: \(Threshold.syntax)"
        case .badReport(let path, let why): "\(path): \(why)"
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

    /// Of one host.
    public static let hostUnits: [String: MetricUnit] = {
        var u: [String: MetricUnit] = [
            "requests": .count, "connections": .count, "network.error_rate": .rate, "http.error_rate": .rate,
            "http.4xx_rate": .rate, "http.5xx_rate": .rate,
        ]
        for phase in ["ttfb", "total", "connect", "tls", "dns"] { for (p, _) in percentiles { u[phase + "." + p] = .us } }
        return u
    }()

    /// Overall metrics of a report, in display order; nil where the run has no such value.
    static func overall(_ r: Report) -> [(String, Double?)] {
        let h = r.headline
        func d<T: BinaryInteger>(_ v: T?) -> Double? { v.map { Double($0) } }
        var out: [(String, Double?)] = [
            ("processes", d(h.processes)), ("duration", d(h.spanUs)), ("connections", d(h.connections)),
            ("requests", d(h.httpRequests)), ("connection.error_rate", h.connectionErrorRate),
            ("network.error_rate", h.networkErrorRate), ("http.error_rate", h.httpErrorRate),
            ("http.4xx_rate", h.clientErrorRate), ("http.5xx_rate", h.serverErrorRate),
        ]
        out += phases([("ttfb", h.ttfbUs), ("total", h.durationUs), ("connect", h.connectUs), ("tls", h.tlsUs), ("dns", h.dnsUs)])
        out += [("cpu.time", d(h.cpuTimeUs)), ("rss.peak", d(h.peakRssBytes)), ("stalls", d(h.stalls)),
                ("drops", d(h.droppedEvents + h.droppedRecords + h.captureDropped + h.untrackedConnections))]
        return out
    }

    static func host(_ row: Report.HTTPRow) -> [(String, Double?)] {
        var out: [(String, Double?)] = [
            ("requests", Double(row.requests)), ("connections", Double(row.connections)),
            ("network.error_rate", row.networkErrorRate), ("http.error_rate", row.httpErrorRate),
            ("http.4xx_rate", row.clientErrorRate), ("http.5xx_rate", row.serverErrorRate),
        ]
        out += phases([("ttfb", row.ttfbUs), ("total", row.durationUs), ("connect", row.connectUs), ("tls", row.tlsUs),
                       ("dns", row.dnsUs)])
        return out
    }

    private static func phases(_ list: [(String, Report.Percentiles?)]) -> [(String, Double?)] {
        list.flatMap { name, p in
            percentiles.map { suffix, path in (name + "." + suffix, p.map { Double($0[keyPath: path]) }) }
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

    public struct ThresholdResult: Codable, Sendable {
        public var expression: String
        public var metric: String
        public var host: String?
        public var comparison: Threshold.Comparison
        public var measure: Threshold.Measure
        public var limit: Double
        /// What was compared with `limit` (for each host row the threshold names, the worst).
        public var measured: Double?
        /// `fail` (crossed), `pass`, or `not_evaluated` (a run lacks the metric).
        public var status: String
        public var reason: String?
    }

    public var diffVersion = 1
    public var a: RunInfo
    public var b: RunInfo
    public var metrics: [DiffRow]
    public var hosts: [HostDiff]
    public var thresholds: [ThresholdResult]
    /// True when a threshold was crossed.
    public var failed: Bool

    public init(a: Report, pathA: String, b: Report, pathB: String, thresholds: [Threshold] = []) {
        func info(_ r: Report, _ path: String) -> RunInfo {
            RunInfo(path: path, processes: r.headline.processes, startTs: r.headline.startTs, spanUs: r.headline.spanUs)
        }
        self.a = info(a, pathA)
        self.b = info(b, pathB)
        let overallB = Dictionary(DiffMetrics.overall(b), uniquingKeysWith: { x, _ in x })
        metrics = DiffMetrics.overall(a).map { name, va in
            DiffRow(metric: name, unit: DiffMetrics.units[name]!, a: va, b: overallB[name] ?? nil)
        }

        // Hosts by (role, host), in B's order then those only in A.
        struct Key: Hashable { var role: String, host: String }
        let rowsA = Dictionary(a.http.map { (Key(role: $0.role, host: $0.host), $0) }, uniquingKeysWith: { x, _ in x })
        let keysB = Set(b.http.map { Key(role: $0.role, host: $0.host) })
        var hosts: [HostDiff] = []
        for rb in b.http {
            let ra = rowsA[Key(role: rb.role, host: rb.host)]
            hosts.append(RunDiff.hostDiff(ra, rb))
        }
        for ra in a.http where !keysB.contains(Key(role: ra.role, host: ra.host)) { hosts.append(RunDiff.hostDiff(ra, nil)) }
        self.hosts = hosts

        var results: [ThresholdResult] = []
        for t in thresholds {
            let rows: [DiffRow]
            if let host = t.host {
                rows = hosts.filter { $0.host == host }.compactMap { h in h.metrics.first { $0.metric == t.metric } }
            } else {
                rows = metrics.filter { $0.metric == t.metric }
            }
            let values = rows.compactMap { t.measured($0) }
            var result = ThresholdResult(expression: t.expression, metric: t.metric, host: t.host, comparison: t.comparison,
                                         measure: t.measure, limit: t.limit, measured: nil, status: "not_evaluated")
            if rows.isEmpty {
                result.reason = "no host \(t.host ?? "") in either run"
            } else if values.isEmpty {
                let missingA = rows.allSatisfy { $0.a == nil }, missingB = rows.allSatisfy { $0.b == nil }
                result.reason = missingA && missingB ? "neither run has it" : missingA ? "run A does not have it"
                    : missingB ? "run B does not have it" : "not computable"
            } else {
                // The value farthest past the limit decides.
                let worst = t.comparison == .above || t.comparison == .atLeast ? values.max()! : values.min()!
                result.measured = worst.isFinite ? worst : (worst > 0 ? Double.greatestFiniteMagnitude : -Double.greatestFiniteMagnitude)
                result.status = t.crossed(by: worst) ? "fail" : "pass"
                if !worst.isFinite { result.reason = "A is 0: any increase is infinitely large" }
            }
            results.append(result)
        }
        self.thresholds = results
        failed = results.contains { $0.status == "fail" }
    }

    private static func hostDiff(_ ra: Report.HTTPRow?, _ rb: Report.HTTPRow?) -> HostDiff {
        let any = (rb ?? ra)!
        let ma = ra.map(DiffMetrics.host) ?? [], mb = rb.map(DiffMetrics.host) ?? []
        let names = (mb.isEmpty ? ma : mb).map(\.0)
        let va = Dictionary(ma, uniquingKeysWith: { x, _ in x }), vb = Dictionary(mb, uniquingKeysWith: { x, _ in x })
        return HostDiff(key: any.key, role: any.role, host: any.host,
                        seenIn: ra != nil && rb != nil ? "both" : ra != nil ? "a" : "b",
                        metrics: names.map { DiffRow(metric: $0, unit: DiffMetrics.hostUnits[$0]!, a: va[$0] ?? nil, b: vb[$0] ?? nil) })
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
        var t = Table(header: [header ?? "", "A", "B", "CHANGE"], rightAligned: [1, 2])
        for r in rows where r.a != nil || r.b != nil {
            t.add([Cell(r.metric), Cell(value(r.a, r.unit)), Cell(value(r.b, r.unit)), Cell(change(r), colour(r))])
        }
        let lines = t.render(style)
        return header == nil ? Array(lines.dropFirst()) : lines
    }

    private func value(_ v: Double?, _ unit: MetricUnit) -> String {
        guard let v else { return "-" }
        switch unit {
        case .count: return Format.fixed(v, 0)
        case .rate: return Format.fixed(v * 100, 2) + "%"
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

    /// Red where more is worse (latency, errors, CPU, memory, stalls, drops); plain otherwise.
    private func colour(_ r: DiffRow) -> TextReport.Colour? {
        guard let c = r.change, c > 0 else { return nil }
        let neutral: Set<String> = ["processes", "duration", "connections", "requests"]
        return neutral.contains(r.metric) ? nil : .red
    }

    private func measuredText(_ m: Double, _ t: RunDiff.ThresholdResult) -> String {
        let unit = (t.host == nil ? DiffMetrics.units : DiffMetrics.hostUnits)[t.metric] ?? .count
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
