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
    public var requestStartTs: Int64 { Self.requestStartTs(http) }
    /// The response's last byte; for an exchange cut short, when its record was written (the
    /// connection's end).
    public var endTs: Int64 { Self.endTs(http) }

    static func requestStartTs(_ h: HTTPRecord) -> Int64 { h.requestStartTs ?? h.ts - Swift.max(0, h.durationUs ?? 0) }
    static func endTs(_ h: HTTPRecord) -> Int64 { Swift.max(h.responseEndTs ?? h.ts, requestStartTs(h)) }
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
    /// The record itself, for the exchange's phases (ExchangeTimings).
    public var connection: ConnectionRecord?

    /// The connection's own lookup, when it is drawn on this connection.
    var lookup: LookupSpan? {
        guard let a = dnsStartTs, let b = dnsEndTs else { return nil }
        return LookupSpan(startTs: a, endTs: b, durationUs: b - a)
    }

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

    /// The selection so far, as two bounded heaps: the `firstLimit` earliest by start (the
    /// latest of them at the root), and the `slowestLimit` slowest of the requests that left or
    /// never entered the first (the least slow at the root). A request that leaves the first
    /// never returns to it (its root only gets earlier), so the second heap sees exactly the
    /// requests outside the final first: the selection is that of sorting everything, for
    /// O(log k) per request kept and O(1) per request passed over.
    private var first = BoundedHeap<Candidate>(nearerRoot: { Candidate.before($1, $0) })
    private var slowest = BoundedHeap<Candidate>(nearerRoot: { Candidate.slower($1, $0) })
    private var setups: [ConnectionKey: ConnectionSetup] = [:]
    /// Connections that kept requests opened: only their records are looked at. Requests that
    /// leave the selection are forgotten here lazily, when it has grown to `cleanupAt`.
    private var wanted: Set<ConnectionKey> = []
    /// The lookups of the file being read, by name: the latest one of each.
    private var lookups: [String: Lookup] = [:]
    private var lookupFile = -1
    private var lookupCount = 0
    /// For the lookups of held set-ups: the earliest connect among all connections that used it
    /// (kept or not), the one it is drawn on.
    private var lookupFirstUse: [Int: Int64] = [:]

    /// What is held: the selection, and at most about twice as many connections, however many
    /// requests were seen.
    var heldCount: (requests: Int, connections: Int) { (first.count + slowest.count + sample.count, Swift.max(setups.count, wanted.count)) }
    private var cleanupAt: Int { 2 * (firstLimit + slowestLimit + sampleLimit) + 64 }

    private struct ConnectionKey: Hashable, Sendable {
        var file: Int
        var connId: Int64
    }

    private struct Lookup: Sendable {
        var seq: Int
        var startTs: Int64
        var endTs: Int64
        /// The earliest connect of the connections that matched it.
        var firstOpenTs: Int64?
    }

    /// A request and its two sort keys, computed once. `request` is nil only while deciding
    /// whether to keep it.
    private struct Candidate: Sendable {
        var start: Int64
        var duration: Int64
        var seq: Int
        var request: WaterfallRequest?

        init(start: Int64, duration: Int64, seq: Int) { self.start = start; self.duration = duration; self.seq = seq }
        init(_ key: Candidate, _ r: WaterfallRequest) { self = key; request = r }

        /// Earlier by start; ties by arrival.
        static func before(_ a: Candidate, _ b: Candidate) -> Bool { (a.start, a.seq) < (b.start, b.seq) }
        /// Slower; ties: the earlier arrival first.
        static func slower(_ a: Candidate, _ b: Candidate) -> Bool {
            a.duration != b.duration ? a.duration > b.duration : a.seq < b.seq
        }
    }

    /// Requests sampled evenly over the run's time (not over its records: a load run records
    /// its first thousands of exchanges in its first 100 ms, then what the writer's budget
    /// allows each second): at most one per time slot, the slots as wide as needed to number at
    /// most `sampleLimit` (doubled when there are more). Which request of a slot is kept is a
    /// hash of its arrival: the same logs give the same page.
    public let sampleLimit: Int
    private var slots: [Int64: Candidate] = [:]
    private var slotOrigin: Int64?
    private var slotWidth: Int64 = 1000
    private var sample: [Candidate] { Array(slots.values) }
    /// The width of the sample's time slots, in microseconds.
    public var sampleSlotUs: Int64 { slotWidth }

    public init(firstLimit: Int = 200, slowestLimit: Int = 200, sampleLimit: Int = 1800) {
        self.firstLimit = Swift.max(0, firstLimit)
        self.slowestLimit = Swift.max(0, slowestLimit)
        self.sampleLimit = Swift.max(0, sampleLimit)
    }

    private static func rank(_ seq: Int) -> UInt64 {
        var m = SplitMix(state: UInt64(truncatingIfNeeded: seq))
        return m.next()
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    /// `file` is the log's index; the reader hands over one file after another, so lookups
    /// are remembered for the current file only.
    mutating func add(_ record: Record, file: Int) {
        switch record {
        case .http(let h):
            requestsSeen += 1
            offer(h, file: file)
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
            // The lookup that gave this peer: ended at most 1 s before the connect, as the
            // library's `dns_us` rule says. Every connection that used it counts, kept or not,
            // to know which one drew it.
            var lookup: Lookup?
            if c.role == "client", let host = c.host, let open = c.openTs, file == lookupFile,
               var l = lookups[host], l.endTs <= open, open - l.endTs <= 1_000_000 {
                l.firstOpenTs = Swift.min(l.firstOpenTs ?? open, open)
                lookups[host] = l
                if let use = lookupFirstUse[l.seq] { lookupFirstUse[l.seq] = Swift.min(use, open) }
                lookup = l
            }
            // `http` records are written before their connection's (at the response's end,
            // or at the latest when the connection ends), so the wanted set is complete here.
            guard let id = c.connId, wanted.contains(ConnectionKey(file: file, connId: id)) else { return }
            var s = ConnectionSetup(openTs: c.openTs, tlsEndTs: c.tls?.endTs, tlsVersion: c.tls?.version, connection: c)
            if let open = c.openTs, let connect = c.connectUs { s.connectEndTs = open + connect }
            if let l = lookup, let firstOpen = l.firstOpenTs {
                s.dnsStartTs = l.startTs; s.dnsEndTs = l.endTs; s.lookupSeq = l.seq
                lookupFirstUse[l.seq] = Swift.min(lookupFirstUse[l.seq] ?? firstOpen, firstOpen)
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

    /// Puts a request into the first heap, or what that pushes out (or the request itself)
    /// into the slowest. The request is copied only when it is kept.
    private mutating func offer(_ h: HTTPRecord, file: Int) {
        let start = WaterfallRequest.requestStartTs(h), duration = WaterfallRequest.endTs(h) - start
        let key = Candidate(start: start, duration: duration, seq: requestsSeen)
        if sampleLimit > 0 {
            let origin = slotOrigin ?? start
            slotOrigin = origin
            let slot = Self.floorDiv(start - origin, slotWidth)
            if slots[slot].map({ Self.rank(key.seq) < Self.rank($0.seq) }) ?? true {
                let r = WaterfallRequest(seq: requestsSeen, file: file, http: h)
                keep(r)
                slots[slot] = Candidate(key, r)
                while slots.count > sampleLimit {
                    slotWidth *= 2
                    var wider: [Int64: Candidate] = [:]
                    for (k, c) in slots {
                        let w = Self.floorDiv(k, 2)
                        if wider[w].map({ Self.rank(c.seq) < Self.rank($0.seq) }) ?? true { wider[w] = c }
                    }
                    slots = wider
                }
            }
        }
        var out: Candidate
        if firstLimit > 0, first.count < firstLimit || Candidate.before(key, first.root) {
            let r = WaterfallRequest(seq: requestsSeen, file: file, http: h)
            keep(r)
            let kept = Candidate(key, r)
            guard first.count == firstLimit else { first.push(kept); return }
            out = first.replaceRoot(with: kept)
        } else {
            out = key
        }
        guard slowestLimit > 0, slowest.count < slowestLimit || Candidate.slower(out, slowest.root) else { return }
        if out.request == nil {
            let r = WaterfallRequest(seq: requestsSeen, file: file, http: h)
            keep(r)
            out.request = r
        }
        if slowest.count < slowestLimit { slowest.push(out) } else { _ = slowest.replaceRoot(with: out) }
    }

    /// A kept request that opened its connection wants that connection's set-up.
    private mutating func keep(_ r: WaterfallRequest) {
        guard r.opensConnection, let id = r.http.connId else { return }
        wanted.insert(ConnectionKey(file: r.file, connId: id))
        if wanted.count >= cleanupAt { forgetLeftOut() }
    }

    /// Drops the set-ups (and lookups) of connections whose requests left the selection.
    private mutating func forgetLeftOut() {
        wanted = Set((first.elements + slowest.elements + sample).compactMap { c in
            guard let r = c.request, r.opensConnection, let id = r.http.connId else { return nil }
            return ConnectionKey(file: r.file, connId: id)
        })
        setups = setups.filter { wanted.contains($0.key) }
        let seqs = Set(setups.values.compactMap(\.lookupSeq))
        lookupFirstUse = lookupFirstUse.filter { seqs.contains($0.key) }
    }

    /// The earliest `firstLimit` by start, then the `slowestLimit` slowest of the others.
    private func select() -> (first: [WaterfallRequest], slowest: [WaterfallRequest]) {
        (first.elements.sorted(by: Candidate.before).compactMap(\.request),
         slowest.elements.sorted(by: Candidate.slower).compactMap(\.request))
    }

    /// The sampled requests that are neither among the first nor the slowest, by start.
    public func sampled() -> [WaterfallRequest] {
        let taken = Set((first.elements + slowest.elements).map(\.seq))
        return sample.filter { !taken.contains($0.seq) }.sorted(by: Candidate.before).compactMap(\.request).map(attach)
    }

    private func attach(_ r: WaterfallRequest) -> WaterfallRequest {
        guard r.opensConnection, let id = r.http.connId, var s = setups[ConnectionKey(file: r.file, connId: id)]
        else { return r }
        if let seq = s.lookupSeq, lookupFirstUse[seq] != s.openTs {
            s.dnsStartTs = nil; s.dnsEndTs = nil; s.lookupSeq = nil
        }
        var out = r
        out.setup = s
        return out
    }

    /// The selection with connection set-ups attached. A lookup that matched several
    /// connections is drawn on the earliest one only: the others reused its answer.
    public func selection() -> (first: [WaterfallRequest], slowest: [WaterfallRequest]) {
        let s = select()
        return (s.first.map(attach), s.slowest.map(attach))
    }
}

/// A small deterministic generator (SplitMix64) for the reservoir sample.
struct SplitMix: Sendable {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A binary heap ordered by `nearerRoot(a, b)` (`a` belongs above `b`), kept bounded by its
/// user: once full, a better element replaces the root instead of being pushed.
struct BoundedHeap<Element>: Sendable where Element: Sendable {
    private(set) var elements: [Element] = []
    private let nearerRoot: @Sendable (Element, Element) -> Bool

    init(nearerRoot: @escaping @Sendable (Element, Element) -> Bool) { self.nearerRoot = nearerRoot }

    var count: Int { elements.count }
    /// Only when not empty.
    var root: Element { elements[0] }

    mutating func push(_ e: Element) {
        elements.append(e)
        var i = elements.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard nearerRoot(elements[i], elements[parent]) else { break }
            elements.swapAt(i, parent)
            i = parent
        }
    }

    /// Replaces the root with `e` and returns the old root.
    mutating func replaceRoot(with e: Element) -> Element {
        let old = elements[0]
        elements[0] = e
        var i = 0
        let n = elements.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var top = i
            if l < n, nearerRoot(elements[l], elements[top]) { top = l }
            if r < n, nearerRoot(elements[r], elements[top]) { top = r }
            if top == i { break }
            elements.swapAt(i, top)
            i = top
        }
        return old
    }
}
