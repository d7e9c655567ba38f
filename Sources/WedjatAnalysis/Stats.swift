/// Latency percentiles in microseconds, as an HdrHistogram (3 significant digits) gives them:
/// values exact below 2048 us, memory that does not grow with the number of values. The
/// buckets are HdrHistogram's, counted by `BucketCounts` (BucketCounts.swift): the values and
/// percentiles the `Histogram` library gave, from counts we can walk quickly. A histogram is
/// about 48 KiB however few values it holds, and each value written to it lands on a cache line
/// of its own: a run with many hosts has many stats, and on a log of 400 of them those writes
/// missed the cache a fifth of the applying thread's time. So values are first kept as they
/// come, appended (four to a cache line, no search), up to as many as fit in the histogram's
/// memory (`smallLimit`); percentiles of them are computed with the same bucketing, identical
/// to what the histogram would say. Past that, they move into the histogram. Either way a stat
/// holds at most about 48 KiB.
public struct DurationStats: Sendable {
    /// Values kept before a histogram (3 significant digits): 3,072 of 16 bytes, the 48 KiB of
    /// the histogram's initial counts.
    static let smallLimit = BucketLayout.threeDigits.length(covering: initialHighest) * MemoryLayout<UInt32>.size
        / MemoryLayout<ValueCount>.stride
    /// The same for the coarse (2 digits) histograms: 448, 7 KiB.
    static let coarseSmallLimit = BucketLayout.twoDigits.length(covering: initialHighest) * MemoryLayout<UInt32>.size
        / MemoryLayout<ValueCount>.stride
    private let smallLimit: Int
    /// The values before a histogram, in the order they came (a value may come more than once).
    private var small: [ValueCount] = []
    /// The total of `small`'s counts.
    private var smallTotal: UInt64 = 0
    /// Made when `small` is full, with 32-bit counts (half the memory of 64-bit ones: a busy
    /// host has several such stats); moved to 64-bit counts before its total would pass
    /// UInt32.max.
    private var narrow: BucketCounts<UInt32>?
    private var wide: BucketCounts<UInt64>?
    /// The smallest and largest values recorded (exact: the buckets only know their ranges).
    private var lo = UInt64.max, hi: UInt64 = 0
    /// Set once a histogram is made, and once it counts in 64 bits (flags, not tests of the
    /// optionals, on the hot path).
    private var inHistogram = false
    private var isWide = false

    private struct ValueCount: Sendable {
        var value: UInt64
        var count: UInt64
    }

    /// 2 significant digits (values within 1%) instead of 3: a histogram of about 7 KiB
    /// instead of 48, for the many small distributions of endpoints.
    private let coarse: Bool

    public init() { smallLimit = DurationStats.smallLimit; coarse = false }
    /// For tests: 0 puts every value into the histogram from the first.
    init(smallLimit: Int) { self.smallLimit = smallLimit; coarse = false }
    init(coarse: Bool) { smallLimit = coarse ? DurationStats.coarseSmallLimit : DurationStats.smallLimit; self.coarse = coarse }

    /// Values that came from `http_summary` distributions, not from single observations.
    public private(set) var approximateCount = 0

    public mutating func record(_ us: Int64) {
        record(UInt64(Swift.max(0, us)), count: 1)
    }

    mutating func record(_ value: UInt64, count: UInt64) {
        if inHistogram {
            recordInHistogram(value, count: count)
        } else if small.count < smallLimit {
            lo = Swift.min(lo, value)
            hi = Swift.max(hi, value)
            // Never more room than the limit (an array doubles: 2,048 would become 4,096).
            if small.count == small.capacity, small.count * 2 > smallLimit { small.reserveCapacity(smallLimit) }
            small.append(ValueCount(value: value, count: count))
            smallTotal &+= count
        } else {
            narrow = BucketCounts(layout: layout, highest: Self.initialHighest)
            inHistogram = true
            for v in small { recordInHistogram(v.value, count: v.count) }
            recordInHistogram(value, count: count)
            small = []
            smallTotal = 0
        }
    }

    /// Sized for values up to about a second from the start (12,288 counts at 3 digits): most
    /// latencies are below that; longer ones grow it.
    private static let initialHighest: UInt64 = 1 << 20

    private var layout: BucketLayout { coarse ? .twoDigits : .threeDigits }

    @inline(__always)
    private mutating func recordInHistogram(_ value: UInt64, count: UInt64) {
        lo = Swift.min(lo, value)
        hi = Swift.max(hi, value)
        if !isWide {
            // Through the optional, never a copy: a copy would duplicate the counts on each write.
            if count <= UInt64(UInt32.max) - narrow!.total {
                narrow!.record(value, count: UInt32(truncatingIfNeeded: count))
                return
            }
            // The same buckets in 64 bits: the same percentiles.
            wide = BucketCounts<UInt64>(narrow!)
            narrow = nil
            isWide = true
        }
        wide!.record(value, count: count)
    }

    /// Merges an already aggregated distribution (an `http_summary`'s `{count, p50, p90, p99, max}`).
    /// Its values cannot be recovered, so each quantile band is recorded at its upper end:
    /// ranks 1...⌈n·0.5⌉ at p50, up to ⌈n·0.9⌉ at p90, up to ⌈n·0.99⌉ at p99, the rest at max
    /// (at least one: the max is a real observation). Every value is placed at or above where
    /// it really was, so percentiles of the merged data are upper bounds, never understated
    /// (within the summary's own ~6% precision); with one summary alone, p50/p90/p99/max come
    /// back as recorded, and p95 reads p99.
    public mutating func record(summary d: SummaryDistribution) {
        guard d.count > 0 else { return }
        let w = DurationStats.summaryWeights(count: d.count)
        for (value, weight) in [(d.p50, w.0), (d.p90, w.1), (d.p99, w.2), (d.max, w.3)] where weight > 0 {
            record(UInt64(Swift.max(0, value)), count: weight)
        }
        approximateCount += Int(d.count)
    }

    /// Weights of (p50, p90, p99, max) for a summary of `n` values; they add up to `n`.
    static func summaryWeights(count n: Int64) -> (UInt64, UInt64, UInt64, UInt64) {
        let n = UInt64(Swift.max(0, n))
        guard n > 0 else { return (0, 0, 0, 0) }
        // ⌈n·k/100⌉ without overflow, kept below n so the max band holds at least one value.
        func rank(_ k: UInt64) -> UInt64 { Swift.min(n - 1, n / 100 * k + (n % 100 * k + 99) / 100) }
        let r50 = rank(50), r90 = Swift.max(r50, rank(90)), r99 = Swift.max(r90, rank(99))
        return (r50, r90 - r50, r99 - r90, n - r99)
    }

    public var count: Int {
        if let total = narrow?.total ?? wide?.total { return Int(total) }
        return Int(smallTotal)
    }

    /// nil when nothing was recorded (a percentile of nothing is not 0).
    public func percentile(_ p: Double) -> Int64? { percentiles([p])?[0] }

    /// Several percentiles (ascending) in one pass over the recorded values, each the value
    /// HdrHistogram's `valueAtPercentile` gives; nil when nothing was recorded.
    public func percentiles(_ ps: [Double]) -> [Int64]? {
        if let narrow { return DurationStats.percentiles(ps, of: narrow, lo: lo, hi: hi) }
        if let wide { return DurationStats.percentiles(ps, of: wide, lo: lo, hi: hi) }
        guard !small.isEmpty else { return nil }
        // The histogram's walk over the few values: their buckets in ascending order, each
        // reported at its highest equivalent value with the count up to it; the smallest value
        // is 0 if one was recorded, else the smallest, and the largest is the largest recorded.
        let layout = layout
        if small.count > 32 {
            // Counted into a histogram of their own, once: a sort of a few thousand values
            // cost several times the walk.
            var h = BucketCounts<UInt64>(layout: layout, highest: hi)
            for v in small { h.record(v.value, count: v.count) }
            return DurationStats.percentiles(ps, of: h, lo: lo, hi: hi)
        }
        let sorted = small.sorted { $0.value < $1.value }
        var byBucket: [(lowest: UInt64, highest: UInt64, count: UInt64)] = []
        for v in sorted {
            let lowest = layout.lowestEquivalent(v.value)
            if let last = byBucket.last, last.lowest == lowest {
                byBucket[byBucket.count - 1].count += v.count
            } else {
                byBucket.append((lowest, layout.highestEquivalent(v.value), v.count))
            }
        }
        let total = byBucket.reduce(0) { $0 + $1.count }
        var walk = PercentileWalk(ps, total: total, lo: lo, hi: hi)
        var cumulative: UInt64 = 0
        for b in byBucket {
            cumulative += b.count
            if !walk.offer(b.highest, upTo: cumulative) { break }
        }
        return walk.finish()
    }

    private static func percentiles<C>(_ ps: [Double], of h: BucketCounts<C>, lo: UInt64, hi: UInt64) -> [Int64]? {
        guard h.total > 0 else { return nil }
        var walk = PercentileWalk(ps, total: h.total, lo: lo, hi: hi)
        // Nothing is counted below the smallest value's bucket.
        h.walk(from: h.layout.index(lo)) { i, upTo in
            // A bucket's value only for the buckets where a percentile falls.
            guard walk.reaches(upTo) else { return true }
            return walk.offer(h.layout.reportedValue(atIndex: i), upTo: upTo)
        }
        return walk.finish()
    }

    /// The percentiles of a walk over the buckets in ascending order: (value, count of values
    /// up to it).
    private struct PercentileWalk {
        let ps: [Double]
        let ranks: [UInt64]
        let lo: UInt64, hi: UInt64
        var out: [Int64] = []

        init(_ ps: [Double], total: UInt64, lo: UInt64, hi: UInt64) {
            self.ps = ps; self.lo = lo; self.hi = hi
            // The rank of each percentile as valueAtPercentile computes it (minus one ulp, rounded up).
            ranks = ps.map { p -> UInt64 in
                p >= 100 ? total : Swift.max(1, UInt64((Swift.max(p.nextDown, 0) * Double(total) / 100).rounded(.up)))
            }
            out.reserveCapacity(ps.count)
        }

        @inline(__always)
        func reaches(_ upTo: UInt64) -> Bool { out.count < ranks.count && upTo >= ranks[out.count] }

        /// false once every percentile is known.
        mutating func offer(_ value: UInt64, upTo: UInt64) -> Bool {
            while out.count < ranks.count, upTo >= ranks[out.count] {
                // The 0th percentile is the smallest value itself, as the library has it.
                out.append(Int64(ps[out.count] <= 0 ? lo : Swift.max(Swift.min(value, hi), lo)))
            }
            return out.count < ranks.count
        }

        mutating func finish() -> [Int64] {
            while out.count < ranks.count { out.append(Int64(hi)) }
            return out
        }
    }

    public var max: Int64? {
        if inHistogram { return count > 0 ? Int64(hi) : nil }
        return small.isEmpty ? nil : Int64(hi)
    }
}

/// Connections are grouped by who talked to whom: a client by the peer it connected to, a
/// server by the local address it accepted on (the peers of a server are ephemeral ports).
/// TCP, UDP and unix sockets are told apart: a DNS server's port 53 is both.
public struct PeerKey: Hashable, Sendable, Comparable {
    public var role: String
    public var address: String
    /// `tcp` (also for older logs without the field), `udp`, `unix`.
    public var transport: String

    public init(role: String, address: String, transport: String = "tcp") {
        self.role = role; self.address = address; self.transport = transport
    }

    public init(_ c: ConnectionRecord) {
        role = c.role
        transport = c.transport ?? "tcp"
        switch c.role {
        case "server": address = c.local ?? "?"
        default: address = c.peer ?? (transport == "udp" ? "(unconnected)" : "?")
        }
    }

    /// `client → 10.0.0.1:443`; other transports than TCP are named first: `udp client → …`.
    public var label: String {
        let arrow: String
        switch role {
        case "client": arrow = "client → \(address)"
        case "server": arrow = "server ← \(address)"
        default: arrow = "\(role) ↔ \(address)"
        }
        return transport == "tcp" ? arrow : transport + " " + arrow
    }

    public static func < (a: PeerKey, b: PeerKey) -> Bool { a.label < b.label }
}

public struct PeerStats: Sendable {
    public let key: PeerKey
    public private(set) var count = 0
    public private(set) var bytesIn: Int64 = 0
    public private(set) var bytesOut: Int64 = 0
    public private(set) var errors = 0
    public private(set) var errorNames: [String: Int] = [:]
    public private(set) var openAtExit = 0
    /// Names the app resolved this address from (a client's peer), when wedjat saw the lookups.
    public private(set) var hosts: Set<String> = []
    /// Durations of connections that did not fail: a refused connect takes microseconds and
    /// would drag the percentiles of the real ones down; failures are counted in `errors`.
    public private(set) var durations = DurationStats()

    public init(key: PeerKey) { self.key = key }

    /// A forked child's copy of its parent's connection (`inherited_from`) adds its bytes and
    /// its error; the parent's record counts the connection and its duration.
    public mutating func add(_ c: ConnectionRecord) {
        bytesIn += c.bytesIn
        bytesOut += c.bytesOut
        if c.inheritedFrom != nil {
            if let e = c.error { errors += 1; errorNames[e, default: 0] += 1 }
            return
        }
        count += 1
        if c.openAtExit { openAtExit += 1 }
        if let h = c.host, hosts.count < 8 { hosts.insert(h) }
        if let e = c.error {
            errors += 1
            errorNames[e, default: 0] += 1
        } else if let d = c.effectiveDurationUs {
            durations.record(d)
        }
    }

    /// Errno names, most frequent first (ties by name, so output is stable).
    public var topErrors: [(name: String, count: Int)] { rankedCounts(errorNames) }
}

/// Most frequent first, ties by name, so output is stable.
func rankedCounts<N: BinaryInteger>(_ d: [String: N]) -> [(name: String, count: N)] {
    d.map { (name: $0.key, count: $0.value) }
        .sorted { $0.count != $1.count ? $0.count > $1.count : $0.name < $1.name }
}

/// HTTP exchanges are grouped by who was talked to: (role, host). `host` is the record's
/// (absolute-form authority, `Host` header, or resolved name), else the peer address for an
/// `http` record, else `?`.
public struct HTTPKey: Hashable, Sendable, Comparable {
    public var role: String
    public var host: String

    public init(role: String, host: String) { self.role = role; self.host = host }

    public init(_ h: HTTPRecord) { self.init(role: h.role, host: h.host ?? h.peer ?? "?") }
    public init(_ s: HTTPSummaryRecord) { self.init(role: s.role, host: s.host ?? "?") }

    public static func < (a: HTTPKey, b: HTTPKey) -> Bool { (a.role, a.host) < (b.role, b.host) }

    public func hash(into hasher: inout Hasher) {
        var q = QuickHash()
        q.add(role); q.add(host)
        hasher.combine(q.value)
    }
}

/// Final statuses by class. `other`: 1xx finals (`101`) and out-of-range codes.
public struct StatusClasses: Codable, Sendable, Equatable {
    public var s2xx: Int64 = 0
    public var s3xx: Int64 = 0
    public var s4xx: Int64 = 0
    public var s5xx: Int64 = 0
    public var other: Int64 = 0
    public var noResponse: Int64 = 0

    public init() {}

    // `noResponse` becomes `no_response` through the coders' snake-case conversion, both ways.
    enum CodingKeys: String, CodingKey {
        case s2xx = "2xx", s3xx = "3xx", s4xx = "4xx", s5xx = "5xx", other, noResponse
    }

    public mutating func add(status: Int?, count: Int64 = 1) {
        switch status {
        case nil: noResponse += count
        case .some(200 ..< 300): s2xx += count
        case .some(300 ..< 400): s3xx += count
        case .some(400 ..< 500): s4xx += count
        case .some(500 ..< 600): s5xx += count
        default: other += count
        }
    }

    /// Non-zero classes in a fixed order, for the text report.
    public var nonZero: [(name: String, count: Int64)] {
        [("2xx", s2xx), ("3xx", s3xx), ("4xx", s4xx), ("5xx", s5xx), ("other", other), ("no-resp", noResponse)]
            .filter { $0.1 > 0 }.map { (name: $0.0, count: $0.1) }
    }
}

/// Everything about one (role, host): its HTTP exchanges (the `http` records one by one, the
/// `http_summary` records by their counts and distributions, see
/// `DurationStats.record(summary:)`) and the connections attributed to it (RunAnalysis).
public struct HTTPStats: Sendable {
    public let key: HTTPKey
    /// Exchanges: `http` records plus the `count` of `http_summary` records.
    public private(set) var requests: Int64 = 0
    public private(set) var records = 0
    /// Exchanges known only from `http_summary` records.
    public private(set) var summarized: Int64 = 0
    public private(set) var statusClasses = StatusClasses()
    /// Final status codes (exchanges without a response are `statusClasses.noResponse`).
    public private(set) var statusCodes: [Int: Int64] = [:]
    public private(set) var errors: Int64 = 0
    /// Error names of `http` records (summaries count errors without naming them).
    public private(set) var errorNames: [String: Int] = [:]
    /// Exchanges handed off to a forked child whose half was not read: not errors, no response
    /// here (Handoff.swift).
    public private(set) var handedOff: Int64 = 0
    public private(set) var requestBytes: Int64 = 0
    public private(set) var responseBytes: Int64 = 0
    /// `http` records on a reused connection (`reused: true`).
    public private(set) var reused: Int64 = 0
    /// The host's active span: the earliest request start and the latest response end of its
    /// exchanges (summaries: their `first_ts` and `last_ts`). RATE is the bytes over it.
    public private(set) var firstTs: Int64?
    public private(set) var lastTs: Int64?
    public private(set) var schemes: Set<String> = []
    /// The last scheme inserted: most records repeat it, and a compare is cheaper than a hash.
    private var lastScheme: String?
    /// Request start → response start, of every exchange that has a response (errors included,
    /// as the writer does in summaries).
    public private(set) var ttfb = DurationStats()
    /// Request start → response end, of every exchange that has one (errors included: a
    /// cut-short exchange lasted until its connection ended).
    public private(set) var durations = DurationStats()
    /// The connections attributed to this host.
    public private(set) var connections = HostConnections()

    public init(key: HTTPKey) { self.key = key }

    public mutating func add(_ h: HTTPRecord) {
        requests += 1
        records += 1
        statusClasses.add(status: h.status)
        if let code = h.status { statusCodes[code, default: 0] += 1 }
        if h.isHandedOff {
            handedOff += 1
        } else if let e = h.error {
            errors += 1
            errorNames[e, default: 0] += 1
        }
        let bytesOut = h.requestHeaderBytes + h.requestBodyBytes, bytesIn = h.responseHeaderBytes + h.responseBodyBytes
        requestBytes += bytesOut
        responseBytes += bytesIn
        if h.reused == true { reused += 1 }
        if let s = h.scheme, s != lastScheme {
            lastScheme = s
            schemes.insert(s)
        }
        if let t = h.ttfbUs { ttfb.record(t) }
        if let d = h.durationUs { durations.record(d) }
        if let start = h.requestStartTs { firstTs = Swift.min(firstTs ?? start, start) }
        let end = h.responseEndTs ?? h.ts
        lastTs = Swift.max(lastTs ?? end, end)
    }

    /// Bytes the watched process received and sent: a client receives responses, a server requests.
    public var bytesIn: Int64 { key.role == "server" ? requestBytes : responseBytes }
    public var bytesOut: Int64 { key.role == "server" ? responseBytes : requestBytes }
    /// Both ways over the active span, in bytes per second; nil without a span of at least 1 us.
    public var rateBytesPerS: Int64? {
        guard let a = firstTs, let b = lastTs, b > a else { return nil }
        return Int64((Double(requestBytes + responseBytes) / (Double(b - a) / 1e6)).rounded())
    }

    public mutating func add(_ s: HTTPSummaryRecord) {
        let n = Swift.max(0, s.count)
        requests += n
        summarized += n
        statusClasses.add(status: s.status, count: n)
        if let code = s.status, n > 0 { statusCodes[code, default: 0] += n }
        errors += Swift.max(0, s.errors)
        requestBytes += s.requestBytes
        responseBytes += s.responseBytes
        if let sc = s.scheme { schemes.insert(sc) }
        if let t = s.ttfbUs { ttfb.record(summary: t) }
        if let d = s.durationUs { durations.record(summary: d) }
        if let f = s.firstTs { firstTs = Swift.min(firstTs ?? f, f) }
        if let l = s.lastTs { lastTs = Swift.max(lastTs ?? l, l) }
    }

    mutating func add(connection c: ConnectionRecord) { connections.add(c) }

    /// `other`'s connections in place of these (the exchanges and the connections of a host are
    /// counted on different threads: RunAnalysis' side aggregator).
    mutating func takeConnections(of other: HTTPStats) { connections = other.connections }

    public var topErrors: [(name: String, count: Int)] { rankedCounts(errorNames) }

    /// Connections that failed before carrying a request: attempts that never became an exchange.
    public var failedConnections: Int { connections.failedBeforeRequest }
    /// Exchanges plus those failed connections.
    public var attempts: Int64 { requests + Int64(failedConnections) }
    /// Failures below HTTP: exchanges with an `error` (cut short, desync, parse) plus the
    /// connections that failed before a request.
    public var networkErrors: Int64 { errors + Int64(failedConnections) }
}

/// The connections attributed to one host, and their set-up phases.
public struct HostConnections: Sendable {
    public private(set) var count = 0
    /// Connections with an `error` (any phase).
    public private(set) var errors = 0
    /// Connections with an error and no HTTP request on them.
    public private(set) var failedBeforeRequest = 0
    /// The connection's own lookup (`dns_us`), connect (`connect_us`) and TLS phase
    /// (`tls.phase_us`, else `tls.handshake_us`), where known.
    public private(set) var dns = DurationStats()
    public private(set) var connect = DurationStats()
    public private(set) var tls = DurationStats()

    mutating func add(_ c: ConnectionRecord) {
        count += 1
        if c.error != nil {
            errors += 1
            if (c.httpRequests ?? 0) == 0 { failedBeforeRequest += 1 }
        }
        if let d = c.dnsUs { dns.record(d) }
        if let t = c.connectUs { connect.record(t) }
        if let t = c.tls?.phaseUs ?? c.tls?.handshakeUs { tls.record(t) }
    }
}

extension HTTPKey {
    /// The host a connection was made to, written as an HTTP `Host` header would be: the name it
    /// was resolved from (else the peer's address) and the port unless it is 80 or 443; a server
    /// connection by the local address it was accepted on. nil for connections that cannot carry
    /// HTTP/1 over TCP (UDP, unix, unconnected).
    init?(connection c: ConnectionRecord) {
        guard (c.transport ?? "tcp") == "tcp", let address = c.role == "server" ? c.local : c.peer,
              let colon = address.lastIndex(of: ":") else { return nil }
        let port = address[address.index(after: colon)...]
        var name = String(address[..<colon])
        if c.role != "server", let h = c.host, !h.isEmpty { name = h.contains(":") ? "[" + h + "]" : h }
        self.init(role: c.role, host: port == "80" || port == "443" ? name : name + ":" + port)
    }
}

/// The slowest exchanges (by `duration_us`) of a run, kept while streaming: at most `limit`.
public struct SlowestRequests: Sendable {
    public struct Entry: Sendable {
        public var http: HTTPRecord
        /// Index of its log in `RunAnalysis.logs`, and its line there (in `file`, a later
        /// segment of that log, when set).
        public var log: Int
        public var line: Int
        public var file: String?
        /// The phases (ExchangeTimings.swift); the set-up ones are filled in when the
        /// connection's record arrives, for the exchange that opened it.
        public var timings: ExchangeTimings?
        /// The connection's own phases, for the JSON.
        public var dnsUs: Int64?
        public var connectUs: Int64?
        public var tlsUs: Int64?
    }

    public let limit: Int
    /// Slowest first; ties: earlier first.
    public private(set) var entries: [Entry] = []

    public init(limit: Int = 10) { self.limit = Swift.max(0, limit) }

    mutating func add(_ h: HTTPRecord, log: Int, line: Int, file: String? = nil) {
        guard limit > 0, let d = h.durationUs else { return }
        if entries.count == limit, let last = entries.last, !Self.slower(d, h.ts, than: last.http) { return }
        let i = entries.firstIndex { Self.slower(d, h.ts, than: $0.http) } ?? entries.count
        entries.insert(Entry(http: h, log: log, line: line, file: file, timings: ExchangeTimings(h, connection: nil, lookup: nil)), at: i)
        if entries.count > limit { entries.removeLast() }
    }

    /// The connection's set-up, for the kept exchange that was its first request.
    mutating func add(connection c: ConnectionRecord, log: Int, lookup: LookupSpan?) {
        guard let id = c.connId else { return }
        for i in entries.indices where entries[i].log == log && entries[i].http.connId == id && entries[i].http.reused != true {
            entries[i].dnsUs = c.dnsUs
            entries[i].connectUs = c.connectUs
            entries[i].tlsUs = c.tls?.phaseUs ?? c.tls?.handshakeUs
            entries[i].timings = ExchangeTimings(entries[i].http, connection: c, lookup: lookup)
        }
    }

    private static func slower(_ d: Int64, _ ts: Int64, than h: HTTPRecord) -> Bool {
        let other = h.durationUs ?? 0
        return d != other ? d > other : ts < h.ts
    }
}

/// Exchanges only counted in `http_summary` records, grouped by what a summary names (role,
/// host, method, status, error), with their largest p99 and max: they have no single records for
/// SLOWEST REQUESTS, but their slowest groups can be shown beside it.
public struct SummarizedGroups: Sendable {
    public struct Key: Hashable, Sendable {
        public var role: String
        public var host: String
        public var method: String?
        public var status: Int?
        public var error: String?
    }
    public struct Group: Sendable {
        public var key: Key
        public var count: Int64 = 0
        public var p99Us: Int64?
        public var maxUs: Int64?
    }
    /// Distinct groups kept; the exchanges of others are counted in `notKept`.
    static let limit = 4096
    public private(set) var groups: [Key: Group] = [:]
    public private(set) var total: Int64 = 0
    public private(set) var notKept: Int64 = 0

    mutating func add(_ s: HTTPSummaryRecord) {
        let n = Swift.max(0, s.count)
        total += n
        let key = Key(role: s.role, host: HTTPKey(s).host, method: s.method, status: s.status, error: s.error)
        guard groups[key] != nil || groups.count < Self.limit else { notKept += n; return }
        var g = groups[key] ?? Group(key: key)
        g.count += n
        if let d = s.durationUs {
            g.p99Us = Swift.max(g.p99Us ?? d.p99, d.p99)
            g.maxUs = Swift.max(g.maxUs ?? d.max, d.max)
        }
        groups[key] = g
    }

    /// The `n` groups with the largest max duration (then p99, count).
    func slowest(_ n: Int) -> [Group] {
        Array(groups.values.sorted {
            ($0.maxUs ?? -1, $0.p99Us ?? -1, $0.count, $1.key.host) > ($1.maxUs ?? -1, $1.p99Us ?? -1, $1.count, $0.key.host)
        }.prefix(n))
    }
}

/// Facts about connections as a whole: transports, TLS handshakes, errors by phase.
public struct ConnectionStats: Sendable {
    public private(set) var transports: [String: Int] = [:]
    /// Connections with a `tls` object.
    public private(set) var tlsConnections = 0
    /// Handshakes that finished (`handshake_us` not null).
    public private(set) var handshakes = DurationStats()
    /// TLS phases as HAR counts them (`tls.phase_us`, else `handshake_us`), and clients' connects.
    public private(set) var tlsPhases = DurationStats()
    public private(set) var connects = DurationStats()
    /// Negotiated versions (an unfinished handshake may have none).
    public private(set) var tlsVersions: [String: Int] = [:]
    public private(set) var tlsLibraries: [String: Int] = [:]
    public private(set) var alpn: [String: Int] = [:]
    /// Errors by phase (`?` when the record has none: older logs) and errno name.
    public private(set) var errors: [ErrorKey: Int] = [:]

    public struct ErrorKey: Hashable, Sendable {
        public var phase: String
        public var name: String
    }

    public init() {}

    public mutating func add(_ c: ConnectionRecord) {
        if let e = c.error { errors[ErrorKey(phase: c.errorPhase ?? "?", name: e), default: 0] += 1 }
        // A forked child's copy of its parent's connection: counted with the parent's record.
        guard c.inheritedFrom == nil else { return }
        transports[c.transport ?? "?", default: 0] += 1
        if let t = c.tls {
            tlsConnections += 1
            if let h = t.handshakeUs { handshakes.record(h) }
            if let p = t.phaseUs ?? t.handshakeUs { tlsPhases.record(p) }
            if let v = t.version { tlsVersions[v, default: 0] += 1 }
            tlsLibraries[t.library ?? "?", default: 0] += 1
            if let a = t.alpn { alpn[a, default: 0] += 1 }
        }
        if let t = c.connectUs { connects.record(t) }
    }

    /// Handshakes started but not finished (the connection ended or failed during it).
    public var unfinishedHandshakes: Int { tlsConnections - handshakes.count }

    /// Phases in life-cycle order (connect, tls, io, then others by name, `?` last), names by
    /// count within a phase.
    public var rankedErrors: [(phase: String, name: String, count: Int)] {
        func order(_ p: String) -> (Int, String) {
            switch p {
            case "connect": (0, p)
            case "tls": (1, p)
            case "io": (2, p)
            case "?": (4, p)
            default: (3, p)
            }
        }
        return errors.map { (phase: $0.key.phase, name: $0.key.name, count: $0.value) }
            .sorted { a, b in
                if a.phase != b.phase { return order(a.phase) < order(b.phase) }
                return a.count != b.count ? a.count > b.count : a.name < b.name
            }
    }
}
