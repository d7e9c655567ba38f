import Foundation

// The requests the HTML report draws one by one. The rest of the analysis keeps summaries;
// this keeps a bounded selection of `http` records (the earliest and the slowest), the
// set-up of their connections (lookup, connect, TLS) and per-host latency histograms.

/// One HTTP exchange of the waterfall: the `http` record and, for the first exchange of a
/// connection, how that connection was set up.
public struct WaterfallRequest: Sendable {
    /// Arrival order among all `http` records: ties are broken by it, so output is stable.
    public var seq: Int
    /// Index of the log in `RunAnalysis.logs`.
    public var file: Int
    public var http: HTTPRecord
    /// nil for a reused connection, or when its `connection` record was not seen.
    public var setup: ConnectionSetup?

    /// The exchange's own start: the request's first byte.
    public var requestStartTs: Int64 { http.requestStartTs ?? http.ts - Swift.max(0, http.durationUs ?? 0) }
    /// The response's last byte; for an exchange cut short, when its record was written (the
    /// connection's end).
    public var endTs: Int64 { Swift.max(http.responseEndTs ?? http.ts, requestStartTs) }
    /// From the first set-up phase (lookup, connect) to the end.
    public var startTs: Int64 { Swift.min(setup?.firstTs ?? requestStartTs, requestStartTs) }
    public var totalUs: Int64 { endTs - startTs }
    /// The first exchange on its connection: the one that waited for the set-up.
    var opensConnection: Bool { (http.requestIndex ?? (http.reused == true ? 1 : 0)) == 0 }
}

/// The phases of a connection before its first request, from its `connection` record and the
/// `dns` record of the lookup that resolved its peer.
public struct ConnectionSetup: Sendable, Equatable {
    public var dnsStartTs: Int64?
    public var dnsEndTs: Int64?
    /// Client: `connect` called; server: `accept` returned.
    public var openTs: Int64?
    public var connectEndTs: Int64?
    public var tlsEndTs: Int64?
    public var tlsVersion: String?
    /// Which lookup `dnsStartTs` came from (several connections may match one lookup).
    var lookupSeq: Int?

    var firstTs: Int64? { [dnsStartTs, openTs].compactMap { $0 }.min() }
}

/// Latencies in logarithmic buckets (20 a decade, from 1 us to 10^10 us): enough for a CDF
/// drawn a few hundred pixels wide, and a fixed size per host.
public struct LatencyHistogram: Sendable {
    static let bucketsPerDecade = 20
    static let bucketCount = 200
    public private(set) var counts = [Int64](repeating: 0, count: bucketCount)
    public private(set) var total: Int64 = 0

    static func bucket(_ us: Int64) -> Int {
        guard us > 1 else { return 0 }
        let b = Int((log10(Double(us)) * Double(bucketsPerDecade)).rounded(.down))
        return Swift.min(bucketCount - 1, Swift.max(0, b))
    }

    /// The upper edge of bucket `i`, in microseconds.
    static func upperEdge(_ i: Int) -> Double { pow(10, Double(i + 1) / Double(bucketsPerDecade)) }

    mutating func record(_ us: Int64, count: Int64 = 1) {
        counts[Self.bucket(us)] += count
        total += count
    }

    /// An `http_summary` distribution, its bands placed at their upper ends as the text report does.
    mutating func record(summary d: SummaryDistribution) {
        let w = DurationStats.summaryWeights(count: d.count)
        for (value, weight) in [(d.p50, w.0), (d.p90, w.1), (d.p99, w.2), (d.max, w.3)] where weight > 0 {
            record(value, count: Int64(weight))
        }
    }
}

/// TTFB and total duration of one (role, host), as `HTTPStats` groups them.
public struct HostLatency: Sendable {
    public var ttfb = LatencyHistogram()
    public var total = LatencyHistogram()
}

public struct RequestCollector: Sendable {
    /// How many of the earliest and of the slowest requests are kept.
    public let firstLimit: Int
    public let slowestLimit: Int
    /// Hosts whose latencies are kept: the first ones seen.
    public static let hostLimit = 64
    /// `http` records seen.
    public private(set) var requestsSeen = 0
    public private(set) var hosts: [HTTPKey: HostLatency] = [:]

    /// A superset of the selection, cut back to it whenever it doubles.
    private var candidates: [WaterfallRequest] = []
    private var setups: [ConnectionKey: ConnectionSetup] = [:]
    /// Connections of kept requests that opened them: only their records are looked at.
    private var wanted: Set<ConnectionKey> = []
    /// The lookups of the file being read, by name: the latest one of each.
    private var lookups: [String: Lookup] = [:]
    private var lookupFile = -1
    private var lookupCount = 0

    /// What is held: at most about twice the selection, however many requests were seen.
    var heldCount: (requests: Int, connections: Int) { (candidates.count, setups.count) }

    private struct ConnectionKey: Hashable, Sendable {
        var file: Int
        var connId: Int64
    }

    private struct Lookup: Sendable {
        var seq: Int
        var startTs: Int64
        var endTs: Int64
    }

    public init(firstLimit: Int = 2000, slowestLimit: Int = 200) {
        self.firstLimit = firstLimit
        self.slowestLimit = slowestLimit
    }

    /// `file` is the log's index; the reader hands over one file after another, so lookups
    /// are remembered for the current file only.
    mutating func add(_ record: Record, file: Int) {
        switch record {
        case .http(let h):
            requestsSeen += 1
            let r = WaterfallRequest(seq: requestsSeen, file: file, http: h)
            if r.opensConnection, let id = h.connId { wanted.insert(ConnectionKey(file: file, connId: id)) }
            candidates.append(r)
            if candidates.count >= 2 * (firstLimit + slowestLimit) + 64 { prune() }
            addLatency(HTTPKey(h)) { l in
                if let t = h.ttfbUs { l.ttfb.record(t) }
                if let d = h.durationUs { l.total.record(d) }
            }
        case .httpSummary(let s):
            addLatency(HTTPKey(s)) { l in
                if let t = s.ttfbUs { l.ttfb.record(summary: t) }
                if let d = s.durationUs { l.total.record(summary: d) }
            }
        case .dns(let d):
            guard let name = d.name, d.error == nil else { return }
            if file != lookupFile || lookups.count >= 4096 { lookups.removeAll(); lookupFile = file }
            lookupCount += 1
            let duration = Swift.max(0, d.durationUs ?? 0)
            lookups[name] = Lookup(seq: lookupCount, startTs: d.ts - duration, endTs: d.ts)
        case .connection(let c):
            // `http` records are written before their connection's (at the response's end,
            // or at the latest when the connection ends), so the wanted set is complete here.
            guard let id = c.connId, wanted.contains(ConnectionKey(file: file, connId: id)) else { return }
            var s = ConnectionSetup(openTs: c.openTs, tlsEndTs: c.tls?.endTs, tlsVersion: c.tls?.version)
            if let open = c.openTs, let connect = c.connectUs { s.connectEndTs = open + connect }
            // The lookup that gave this peer: ended at most 1 s before the connect, as the
            // library's `dns_us` rule says.
            if c.role == "client", let host = c.host, let open = c.openTs, file == lookupFile,
               let l = lookups[host], l.endTs <= open, open - l.endTs <= 1_000_000 {
                s.dnsStartTs = l.startTs; s.dnsEndTs = l.endTs; s.lookupSeq = l.seq
            }
            setups[ConnectionKey(file: file, connId: id)] = s
        default:
            break
        }
    }

    private mutating func addLatency(_ key: HTTPKey, _ update: (inout HostLatency) -> Void) {
        if hosts[key] == nil, hosts.count >= Self.hostLimit { return }
        update(&hosts[key, default: HostLatency()])
    }

    /// The earliest `firstLimit` by start, then the `slowestLimit` slowest of the others.
    private func select() -> (first: [WaterfallRequest], slowest: [WaterfallRequest]) {
        let byStart = candidates.sorted { ($0.requestStartTs, $0.seq) < ($1.requestStartTs, $1.seq) }
        let first = Array(byStart.prefix(firstLimit))
        let slowest = byStart.dropFirst(firstLimit)
            .sorted { a, b in
                let da = a.endTs - a.requestStartTs, db = b.endTs - b.requestStartTs
                return da != db ? da > db : a.seq < b.seq
            }
            .prefix(slowestLimit)
        return (first, Array(slowest))
    }

    private mutating func prune() {
        let s = select()
        candidates = s.first + s.slowest
        wanted = Set(candidates.compactMap { r in
            r.opensConnection ? r.http.connId.map { ConnectionKey(file: r.file, connId: $0) } : nil
        })
        setups = setups.filter { wanted.contains($0.key) }
    }

    /// The selection with connection set-ups attached. A lookup that matched several
    /// connections is drawn on the earliest one only: the others reused its answer.
    public func selection() -> (first: [WaterfallRequest], slowest: [WaterfallRequest]) {
        var firstUse: [Int: Int64] = [:]
        for s in setups.values {
            if let seq = s.lookupSeq, let open = s.openTs { firstUse[seq] = Swift.min(firstUse[seq] ?? open, open) }
        }
        func attach(_ r: WaterfallRequest) -> WaterfallRequest {
            guard r.opensConnection, let id = r.http.connId, var s = setups[ConnectionKey(file: r.file, connId: id)]
            else { return r }
            if let seq = s.lookupSeq, firstUse[seq] != s.openTs {
                s.dnsStartTs = nil; s.dnsEndTs = nil; s.lookupSeq = nil
            }
            var out = r
            out.setup = s
            return out
        }
        let s = select()
        return (s.first.map(attach), s.slowest.map(attach))
    }
}
