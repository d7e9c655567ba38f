// Per endpoint: method + path template (`GET /items/{n}`) of one host, so that `wedjat diff`
// sees one slow route that the host's or the run's percentiles hide.

/// A request target folded into its route: the query is dropped and the path segments that are
/// identifiers become placeholders: `{n}` for a number, `{id}` for a UUID, a long hex string or
/// a long mix of letters and digits (`/items/42?x=1` → `/items/{n}`). Readable names stay.
public enum PathTemplate {
    public static func fold(_ target: String) -> String {
        var target = target
        return target.withUTF8 { fold(bytes: $0) } ?? target
    }

    /// nil when the target is its own template (no query, no identifier): the common case
    /// costs one scan of the bytes and no allocation.
    private static func fold(bytes u: UnsafeBufferPointer<UInt8>) -> String? {
        let slash = UInt8(ascii: "/")
        var end = u.count
        var needs = false
        for (i, c) in u.enumerated() {
            if c == UInt8(ascii: "?") || c == UInt8(ascii: "#") { end = i; needs = true; break }
            if c >= 0x30 && c <= 0x39 { needs = true }
            if c == UInt8(ascii: ":"), i + 2 < u.count, u[i + 1] == slash, u[i + 2] == slash { needs = true }
        }
        guard needs else { return nil }
        var path = UnsafeBufferPointer(rebasing: u[0 ..< end])
        // An absolute-form target (a proxy's): only its path.
        if let scheme = (0 ..< max(0, path.count - 2)).first(where: { path[$0] == UInt8(ascii: ":") && path[$0 + 1] == slash && path[$0 + 2] == slash }) {
            let hostStart = scheme + 3
            let p = (hostStart ..< path.count).first { path[$0] == slash }
            path = p.map { UnsafeBufferPointer(rebasing: path[$0...]) } ?? UnsafeBufferPointer(rebasing: u[0 ..< 0])
            if path.isEmpty { return "/" }
        }
        guard path.first == slash else { return String(decoding: path, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(path.count)
        var i = 0
        while i <= path.count {
            let j = (i ..< path.count).first { path[$0] == slash } ?? path.count
            let segment = UnsafeBufferPointer(rebasing: path[i ..< j])
            if i > 0 { out.append(slash) }
            out.append(contentsOf: template(segment) ?? Array(segment))
            i = j + 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `{n}` for a number; `{id}` for a UUID, a long hex string or a long mix of letters and
    /// digits; nil: the segment stays.
    private static func template(_ s: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard !s.isEmpty else { return nil }
        var digits = 0, hex = true, word = true
        for c in s {
            let isDigit = c >= 0x30 && c <= 0x39
            let lower = c | 0x20
            let isLetter = lower >= 0x61 && lower <= 0x7A
            if isDigit { digits += 1 }
            if !(isDigit || (lower >= 0x61 && lower <= 0x66) || c == UInt8(ascii: "-")) { hex = false }
            if !(isDigit || isLetter || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")) { word = false }
        }
        if digits == s.count { return Array("{n}".utf8) }
        if hex, s.count >= 8, digits > 0 { return Array("{id}".utf8) }
        if word, s.count >= 16, digits >= 2 { return Array("{id}".utf8) }
        return nil
    }
}

public struct EndpointKey: Hashable, Sendable, Comparable {
    public var role: String
    public var host: String
    public var method: String
    /// PathTemplate.fold of the target; `?` for exchanges only counted in `http_summary` records
    /// (summaries have no path), `(other)` past the endpoint limit.
    public var path: String

    public static func < (a: EndpointKey, b: EndpointKey) -> Bool {
        (a.role, a.host, a.path, a.method) < (b.role, b.host, b.path, b.method)
    }
}

public struct EndpointStats: Sendable {
    public let key: EndpointKey
    public private(set) var requests: Int64 = 0
    public private(set) var summarized: Int64 = 0
    public private(set) var statusClasses = StatusClasses()
    /// Exchanges with an `error` (cut short, desync, parse).
    public private(set) var errors: Int64 = 0
    /// Within 1% (DurationStats' coarse histograms): a run has many endpoints.
    public private(set) var ttfb = DurationStats(coarse: true)
    public private(set) var durations = DurationStats(coarse: true)

    init(key: EndpointKey) { self.key = key }

    mutating func add(_ h: HTTPRecord) {
        requests += 1
        statusClasses.add(status: h.status)
        if h.failed { errors += 1 }
        if let t = h.ttfbUs { ttfb.record(t) }
        if let d = h.durationUs { durations.record(d) }
    }

    mutating func add(_ s: HTTPSummaryRecord) {
        let n = Swift.max(0, s.count)
        requests += n
        summarized += n
        statusClasses.add(status: s.status, count: n)
        errors += Swift.max(0, s.errors)
        if let t = s.ttfbUs { ttfb.record(summary: t) }
        if let d = s.durationUs { durations.record(summary: d) }
    }
}

/// The endpoints of a run, at most `limit` (each holds two latency distributions); the
/// exchanges of the others are counted under their host's `(other)`.
public struct EndpointCollection: Sendable {
    public static let limit = 1000
    /// In first-seen order; `index` finds them by key.
    private var stats: [EndpointStats] = []
    private var index: [EndpointKey: Int] = [:]
    /// The last exchange's raw key and its endpoint: a connection's exchanges come one after
    /// the other, mostly to the same route, and then neither the folding nor the hashing is
    /// needed again.
    private var last: (role: String, host: String?, peer: String?, method: String?, path: String?, at: Int)?
    /// The endpoint of each exchange key seen (the record's own fields, before folding), so
    /// that a known one is found by one hash, without folding its path and making its key
    /// again; at most `placedLimit`, then forgotten and learnt anew (the answer is the same: a
    /// key keeps its endpoint, and past `limit` a new one always goes to its host's `(other)`).
    private var placed: [RawKey: Int] = [:]
    private static let placedLimit = 8192

    private struct RawKey: Hashable {
        var role: String
        var host: String?
        var peer: String?
        var method: String?
        var path: String?

        func hash(into hasher: inout Hasher) {
            var q = QuickHash()
            q.add(role); q.add(host); q.add(peer); q.add(method); q.add(path)
            hasher.combine(q.value)
        }
    }

    public var endpoints: [EndpointKey: EndpointStats] {
        Dictionary(uniqueKeysWithValues: stats.map { ($0.key, $0) })
    }

    mutating func add(_ h: HTTPRecord) {
        // The peer names the endpoint's host only when the record has no host (HTTPKey): a
        // server's exchanges from many clients' ports are one endpoint, found without a hash.
        let peer = h.host == nil ? h.peer : nil
        if let l = last, l.path == h.path, l.host == h.host, l.method == h.method, l.role == h.role, l.peer == peer {
            stats[l.at].add(h)
            return
        }
        let raw = RawKey(role: h.role, host: h.host, peer: peer, method: h.method, path: h.path)
        let i: Int
        if let known = placed[raw] {
            i = known
        } else {
            i = slot(EndpointKey(role: h.role, host: HTTPKey(h).host, method: h.method ?? "?", path: PathTemplate.fold(h.path ?? "")))
            if placed.count >= Self.placedLimit { placed.removeAll(keepingCapacity: true) }
            placed[raw] = i
        }
        stats[i].add(h)
        last = (h.role, h.host, peer, h.method, h.path, i)
    }

    mutating func add(_ s: HTTPSummaryRecord) {
        let i = slot(EndpointKey(role: s.role, host: HTTPKey(s).host, method: s.method ?? "?", path: "?"))
        stats[i].add(s)
    }

    /// The endpoint's place, made when new (past `limit`: its host's `(other)`).
    private mutating func slot(_ key: EndpointKey) -> Int {
        if let i = index[key] { return i }
        let k = index.count < Self.limit ? key : EndpointKey(role: key.role, host: key.host, method: "*", path: "(other)")
        if let i = index[k] { return i }
        index[k] = stats.count
        stats.append(EndpointStats(key: k))
        return stats.count - 1
    }
}

extension Report {
    public struct EndpointRow: Codable, Sendable {
        /// `GET /items/{n}`.
        public var key: String
        public var role: String
        public var host: String
        public var method: String
        public var path: String
        public var requests: Int64
        public var summarized: Int64
        public var statusClasses: StatusClasses
        public var errors: Int64
        public var httpErrorRate: Double?
        public var ttfbUs: Percentiles?
        public var durationUs: Percentiles?
    }

    static func endpointRows(_ analysis: RunAnalysis) -> [EndpointRow] {
        analysis.endpoints.endpoints.values
            .sorted { $0.requests != $1.requests ? $0.requests > $1.requests : $0.key < $1.key }
            .concurrentMap { e in
                EndpointRow(key: e.key.method + " " + e.key.path, role: e.key.role, host: e.key.host, method: e.key.method,
                            path: e.key.path, requests: e.requests, summarized: e.summarized, statusClasses: e.statusClasses,
                            errors: e.errors, httpErrorRate: rate(e.statusClasses.s4xx + e.statusClasses.s5xx, e.requests),
                            ttfbUs: Percentiles(e.ttfb), durationUs: Percentiles(e.durations))
            }
    }
}
