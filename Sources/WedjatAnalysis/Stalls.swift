// Stalls and event loops, summarised while streaming: the longest stalls are kept whole (with
// the log they came from, whose `modules` records map their addresses), the others counted.

/// A stall and the index of its log in `RunAnalysis.logs`.
public struct KeptStall: Sendable {
    public var stall: StallRecord
    public var log: Int
}

public struct StallCollection: Sendable {
    /// How many stalls a run keeps whole: stalls are rare, but a program stuck in a slow loop for
    /// days must not fill the memory.
    public static let defaultKeep = 1000
    /// `modules` records a log keeps before dropping those no kept stall uses.
    static let modulesPerLog = 64

    public let keep: Int
    /// All stalls read, kept or not.
    public private(set) var count = 0
    public private(set) var totalUs: Int64 = 0
    public private(set) var countByKind: [String: Int] = [:]
    /// Unordered; up to 2 × `keep` between prunings.
    private var kept: [KeptStall] = []

    public init(keep: Int = StallCollection.defaultKeep) { self.keep = max(1, keep) }

    public var notKept: Int { count - min(kept.count, keep) }

    /// The kept stalls, longest first (then earliest, then by pid and thread, so it is stable).
    public var longest: [KeptStall] { Array(kept.sorted(by: StallCollection.longerFirst).prefix(keep)) }

    mutating func add(_ s: StallRecord, log: Int) {
        count += 1
        totalUs += max(0, s.durationUs)
        countByKind[s.kind, default: 0] += 1
        kept.append(KeptStall(stall: s, log: log))
        if kept.count >= 2 * keep {
            kept.sort(by: StallCollection.longerFirst)
            kept.removeLast(kept.count - keep)
        }
    }

    static func longerFirst(_ a: KeptStall, _ b: KeptStall) -> Bool {
        if a.stall.durationUs != b.stall.durationUs { return a.stall.durationUs > b.stall.durationUs }
        let at = a.stall.startTs ?? a.stall.ts, bt = b.stall.startTs ?? b.stall.ts
        if at != bt { return at < bt }
        if a.stall.pid != b.stall.pid { return a.stall.pid < b.stall.pid }
        return (a.stall.tid ?? 0) < (b.stall.tid ?? 0)
    }

    /// A program that keeps loading and unloading libraries writes a `modules` record before
    /// each stall: past `modulesPerLog`, keep only the newest and those a kept stall refers to.
    func forgetUnusedModules(of log: inout ProcessLog, log index: Int) {
        guard log.modules.count > Self.modulesPerLog, let newest = log.modules.keys.max() else { return }
        var used: Set<Int> = [newest]
        for k in kept where k.log == index { if let g = k.stall.modulesGen { used.insert(g) } }
        log.modules = log.modules.filter { used.contains($0.key) }
    }
}

/// One thread's event loop over the samples that listed it.
public struct LoopTotals: Sendable {
    public var tid: Int
    public var thread: String?
    /// Samples (intervals) in which the thread waited.
    public var samples = 0
    public var iterations: Int64 = 0
    /// Sum of those samples' intervals, and of busy % × interval over those with a busy %.
    var intervalUs: Int64 = 0
    var busyPctUs = 0.0
    var busyIntervalUs: Int64 = 0
    public var busyPctMax: Double?
    public var maxBusyUs: Int64?

    /// Iterations per second over the intervals that listed the thread.
    public var perS: Double? { intervalUs > 0 ? Double(iterations) / (Double(intervalUs) / 1e6) : nil }
    /// Mean busy %, weighted by interval.
    public var busyPct: Double? { busyIntervalUs > 0 ? busyPctUs / Double(busyIntervalUs) : nil }
}

/// The `loops` of a process's samples, per thread (at most `maxThreads`).
public struct LoopStatsByThread: Sendable {
    static let maxThreads = 256
    public private(set) var threads: [Int: LoopTotals] = [:]

    mutating func add(_ s: SampleRecord) {
        for l in s.loops where threads[l.tid] != nil || threads.count < Self.maxThreads {
            var t = threads[l.tid] ?? LoopTotals(tid: l.tid)
            t.thread = l.thread ?? t.thread
            t.samples += 1
            t.iterations += max(0, l.iterations)
            if let i = s.intervalUs, i > 0 {
                t.intervalUs += i
                if let b = l.busyPct { t.busyPctUs += b * Double(i); t.busyIntervalUs += i }
            }
            if let b = l.busyPct { t.busyPctMax = max(t.busyPctMax ?? b, b) }
            if let m = l.maxBusyUs { t.maxBusyUs = max(t.maxBusyUs ?? m, m) }
            threads[l.tid] = t
        }
    }
}
