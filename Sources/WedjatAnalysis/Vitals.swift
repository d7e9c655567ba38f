import Foundation

/// One process image's `sample` records, summarised while streaming: running min/avg/max and
/// a bounded time series (at most `maxPoints`; when full, neighbouring points are merged, so
/// a process sampled for days still takes a few tens of KiB).
public struct VitalsStats: Sendable {
    static let maxPoints = 2048

    struct Point: Sendable {
        var ts: Int64
        var cpuPct: Double?
        var rssBytes: Int64?
        /// How many samples this point stands for (after merging).
        var weight: Int
    }

    public private(set) var samples = 0
    var points: [Point] = []
    private var sorted = true

    public private(set) var cpuMin: Double?
    public private(set) var cpuMax: Double?
    private var cpuSum = 0.0, cpuCount = 0
    private var cpuWeighted = 0.0, cpuWeightUs: Int64 = 0
    public private(set) var rssMin: Int64?
    public private(set) var rssMax: Int64?
    private var rssSum = 0.0, rssCount = 0
    public private(set) var peakRss: Int64?
    public private(set) var virtualMax: Int64?
    public private(set) var threadsMax: Int?
    public private(set) var fdsMax: Int?
    /// user + system since the process started, from the latest sample.
    public private(set) var cpuTimeUs: Int64?
    private var busySum = 0.0, busyCount = 0
    public private(set) var voluntaryCtxSwitches: Int64?
    public private(set) var involuntaryCtxSwitches: Int64?
    public private(set) var minorFaults: Int64?
    public private(set) var majorFaults: Int64?
    public private(set) var energyJ = 0.0
    public private(set) var energyIntervalUs: Int64 = 0
    public private(set) var energySamples = 0
    public private(set) var raplUnavailable: String?
    public private(set) var batteries: [SampleRecord.Battery]?
    public private(set) var batteryUnavailable: String?
    /// Why `memory` was unavailable, in the latest sample without it.
    public private(set) var memoryUnavailable: String?
    private var latestTs: Int64 = .min
    /// Per thread: name and the sum of cpu_pct × interval_us while it was among the top ones.
    private var threadPctUs: [Int: (name: String?, pctUs: Double)] = [:]
    private var sampledUs: Int64 = 0
    /// The samples' `loops`, per thread (Stalls.swift).
    public private(set) var loops = LoopStatsByThread()

    public init() {}

    mutating func add(_ s: SampleRecord) {
        samples += 1
        loops.add(s)
        if let last = points.last, s.ts < last.ts { sorted = false }
        points.append(Point(ts: s.ts, cpuPct: s.cpuTotalPct, rssBytes: s.rssBytes, weight: 1))
        if points.count > Self.maxPoints { compact() }

        if let c = s.cpuTotalPct {
            cpuMin = Swift.min(cpuMin ?? c, c); cpuMax = Swift.max(cpuMax ?? c, c)
            cpuSum += c; cpuCount += 1
            if let i = s.intervalUs, i > 0 { cpuWeighted += c * Double(i); cpuWeightUs += i }
        }
        if let why = s.unavailable["memory"] { memoryUnavailable = why }
        if let r = s.rssBytes {
            rssMin = Swift.min(rssMin ?? r, r); rssMax = Swift.max(rssMax ?? r, r)
            rssSum += Double(r); rssCount += 1
        }
        if let p = s.peakRssBytes ?? s.rssBytes { peakRss = Swift.max(peakRss ?? p, p) }
        if let v = s.virtualBytes { virtualMax = Swift.max(virtualMax ?? v, v) }
        if let t = s.threads { threadsMax = Swift.max(threadsMax ?? t, t) }
        if let f = s.fds { fdsMax = Swift.max(fdsMax ?? f, f) }
        if let u = s.cpuUserUs, let y = s.cpuSystemUs { cpuTimeUs = Swift.max(cpuTimeUs ?? 0, u + y) }
        if let b = s.systemBusyPct { busySum += b; busyCount += 1 }
        // Running totals: the largest is the latest.
        func most(_ a: Int64?, _ b: Int64?) -> Int64? { b.map { Swift.max(a ?? $0, $0) } ?? a }
        voluntaryCtxSwitches = most(voluntaryCtxSwitches, s.voluntaryCtxSwitches)
        involuntaryCtxSwitches = most(involuntaryCtxSwitches, s.involuntaryCtxSwitches)
        minorFaults = most(minorFaults, s.minorFaults)
        majorFaults = most(majorFaults, s.majorFaults)
        if let e = s.raplEnergyJ {
            energyJ += e; energySamples += 1
            energyIntervalUs += s.raplIntervalUs ?? s.intervalUs ?? 0
        }
        if let i = s.intervalUs, i > 0 {
            sampledUs += i
            for t in s.topThreads where threadPctUs[t.tid] != nil || threadPctUs.count < 256 {
                let old = threadPctUs[t.tid]
                threadPctUs[t.tid] = (t.name ?? old?.name, (old?.pctUs ?? 0) + t.cpuPct * Double(i))
            }
        }
        if s.ts >= latestTs {
            latestTs = s.ts
            if let why = s.unavailable["rapl"] ?? s.unavailable["energy"] { raplUnavailable = why }
            if let b = s.batteries { batteries = b; batteryUnavailable = nil }
            if let why = s.unavailable["battery"] { batteryUnavailable = why }
        }
    }

    /// Halves the series: pairs of neighbours become one point (CPU: weighted mean, RSS: max).
    private mutating func compact() {
        if !sorted { points.sort { $0.ts < $1.ts }; sorted = true }
        var out: [Point] = []
        out.reserveCapacity(points.count / 2 + 1)
        var i = 0
        while i < points.count {
            if i + 1 < points.count { out.append(Self.merge([points[i], points[i + 1]])); i += 2 }
            else { out.append(points[i]); i += 1 }
        }
        points = out
    }

    static func merge(_ ps: [Point]) -> Point {
        var cpu = 0.0, cpuW = 0, rss: Int64?
        for p in ps {
            if let c = p.cpuPct { cpu += c * Double(p.weight); cpuW += p.weight }
            if let r = p.rssBytes { rss = Swift.max(rss ?? r, r) }
        }
        return Point(ts: ps[0].ts, cpuPct: cpuW > 0 ? cpu / Double(cpuW) : nil, rssBytes: rss,
                     weight: ps.reduce(0) { $0 + $1.weight })
    }

    /// CPU % over the sampled time (weighted by the intervals), else the mean of the samples.
    public var cpuAvg: Double? {
        if cpuWeightUs > 0 { return cpuWeighted / Double(cpuWeightUs) }
        return cpuCount > 0 ? cpuSum / Double(cpuCount) : nil
    }
    public var rssAvg: Int64? { rssCount > 0 ? Int64((rssSum / Double(rssCount)).rounded()) : nil }
    public var systemBusyAvg: Double? { busyCount > 0 ? busySum / Double(busyCount) : nil }

    /// The thread with the most CPU over the sampled time (mean % of one core; intervals in
    /// which it was not among the top threads count as 0).
    public var busiestThread: (tid: Int, name: String?, cpuPct: Double)? {
        guard sampledUs > 0,
              let best = threadPctUs.max(by: { $0.value.pctUs != $1.value.pctUs ? $0.value.pctUs < $1.value.pctUs : $0.key > $1.key })
        else { return nil }
        return (best.key, best.value.name, best.value.pctUs / Double(sampledUs))
    }

    /// The series in at most `columns` buckets of consecutive samples: CPU the mean, RSS the max.
    func series(columns: Int) -> (startTs: Int64, endTs: Int64, cpu: [Double?], rss: [Int64?]) {
        let ps = sorted ? points : points.sorted { $0.ts < $1.ts }
        guard !ps.isEmpty else { return (0, 0, [], []) }
        let n = ps.count, cols = Swift.min(columns, n)
        var cpu: [Double?] = [], rss: [Int64?] = []
        for c in 0 ..< cols {
            let m = Self.merge(Array(ps[c * n / cols ..< (c + 1) * n / cols]))
            cpu.append(m.cpuPct); rss.append(m.rssBytes)
        }
        return (ps[0].ts, ps[n - 1].ts, cpu, rss)
    }
}

/// `▁▂▃▄▅▆▇█` scaled from 0 to `top` (the largest value when nil); a missing value is a space.
public func sparkline(_ values: [Double?], top: Double? = nil) -> String {
    let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
    let hi = top ?? values.compactMap { $0 }.max() ?? 0
    return String(values.map { v -> Character in
        guard let v else { return " " }
        guard hi > 0 else { return blocks[0] }
        let level = Int((Swift.max(0, v) / hi * 7).rounded())
        return blocks[Swift.min(7, level)]
    })
}
