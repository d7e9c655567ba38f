import WedjatSymbols

// The STALLS part of a report (docs/REPORT_JSON.md, `stalls`) and the event loops of VITALS
// (`vitals[].loops`).

extension Report {
    public struct StallFrame: Codable, Sendable {
        /// `0x...`, as logged.
        public var address: String
        /// The module's path; omitted when no module of the map holds the address.
        public var module: String?
        /// `0x...`: the address in the module's file (`address - base`).
        public var moduleOffset: String?
        public var function: String?
        public var functionOffset: Int64?
        public var file: String?
        public var line: Int?
        /// `function+0x1a (file.c:42)`, `libfoo.so+0x1234` or `0x7f...`.
        public var text: String
    }

    public struct StallRow: Codable, Sendable {
        public var log: String
        public var pid: Int
        public var program: String
        public var tid: Int?
        public var thread: String?
        public var kind: String
        public var startTs: Int64?
        public var endTs: Int64?
        public var durationUs: Int64
        public var cpuUs: Int64?
        /// `cpu_us / duration_us`, percent: near 100 a busy thread, near 0 one that waited (off-CPU).
        public var onCpuPct: Double?
        public var after: String?
        public var call: String?
        public var fd: Int?
        public var peer: String?
        public var host: String?
        public var result: String?
        public var ongoing: Bool
        public var samples: Int
        public var samplesLost: Int64
        /// Later samples whose functions differ from the first one's.
        public var samplesDiffering: Int
        /// The first sample's stack, innermost first; `[]` when no sample was taken.
        public var stack: [StallFrame]
        /// Why no stack could be taken, when the library said.
        public var stackUnavailable: String?
        /// Index in `groups`.
        public var group: Int
    }

    public struct StallGroup: Codable, Sendable {
        public var kind: String
        public var call: String?
        /// The functions of the first sample (`module+0xoff` where unknown), innermost first.
        public var stack: [String]
        public var count: Int
        public var totalUs: Int64
        public var maxUs: Int64
        public var cpuUs: Int64
        /// `program/thread` of its stalls, at most 8.
        public var threads: [String]
    }

    public struct SymbolWarning: Codable, Sendable {
        /// The module's path; omitted for a stall whose `modules` record is missing.
        public var module: String?
        public var buildId: String?
        public var message: String
        /// The line as the text report prints it.
        public var text: String
    }

    public struct StallsSection: Codable, Sendable {
        /// The smallest threshold of the run: stalls are the times over it.
        public var thresholdUs: Int64
        /// All stalls read (also those not kept).
        public var count: Int
        public var totalUs: Int64
        public var byKind: [NameCount]
        /// Stalls counted but not kept (past the longest `StallCollection.defaultKeep`).
        public var notKept: Int
        /// The kept stalls, longest first.
        public var stalls: [StallRow]
        /// Stalls of the same kind and call with the same functions in their first sample,
        /// by total duration.
        public var groups: [StallGroup]
        public var symbolWarnings: [SymbolWarning]
    }

    public struct LoopRow: Codable, Sendable {
        public var tid: Int
        public var thread: String?
        public var samples: Int
        public var iterations: Int64
        /// Iterations (wait calls returned) per second, over the samples that list the thread.
        public var perS: Double?
        public var busyPct: Double?
        public var busyPctMax: Double?
        public var maxBusyUs: Int64?
    }

    /// The stall threshold the library uses when `WEDJAT_STALL_MS` is not set.
    static let defaultStallThresholdUs: Int64 = 250_000

    /// nil when no log has stall detection on and none has a stall (older logs, `WEDJAT_STALL_MS=0`).
    static func stallsSection(_ analysis: RunAnalysis, symbolizer: Symbolizer = Symbolizer()) -> StallsSection? {
        let c = analysis.stalls
        let enabled = analysis.logs.compactMap { $0.start?.stallMs }.filter { $0 > 0 }
        guard c.count > 0 || !enabled.isEmpty else { return nil }
        let kept = c.longest
        let stacks = StallStacks(analysis: analysis, symbolizer: symbolizer)

        var rows: [StallRow] = []
        var groups: [StallGroup] = []
        var groupIndex: [GroupKey: Int] = [:]
        for k in kept {
            let s = k.stall, log = analysis.logs[k.log]
            let first = s.samples.first.map { stacks.frames($0, of: k) } ?? []
            let names = first.map(\.name)
            // The same addresses are the same functions; other addresses may still be.
            let differing = s.samples.dropFirst().filter { smp in
                smp.frames != s.samples[0].frames && stacks.frames(smp, of: k).map(\.name) != names
            }.count
            let key = GroupKey(kind: s.kind, call: s.call, stack: names)
            let g: Int
            if let known = groupIndex[key] {
                g = known
            } else {
                g = groups.count
                groupIndex[key] = g
                groups.append(StallGroup(kind: s.kind, call: s.call, stack: names, count: 0, totalUs: 0, maxUs: 0,
                                         cpuUs: 0, threads: []))
            }
            groups[g].count += 1
            groups[g].totalUs += s.durationUs
            groups[g].maxUs = max(groups[g].maxUs, s.durationUs)
            groups[g].cpuUs += s.cpuUs ?? 0
            let who = log.program + "/" + (s.thread ?? s.tid.map { "tid \($0)" } ?? "?")
            if groups[g].threads.count < 8, !groups[g].threads.contains(who) { groups[g].threads.append(who) }
            rows.append(StallRow(
                log: log.path, pid: s.pid, program: log.program, tid: s.tid, thread: s.thread, kind: s.kind,
                startTs: s.startTs, endTs: s.endTs, durationUs: s.durationUs, cpuUs: s.cpuUs,
                onCpuPct: s.cpuUs.flatMap { cpu in s.durationUs > 0 ? round1(min(100, Double(cpu) * 100 / Double(s.durationUs))) : nil },
                after: s.after, call: s.call, fd: s.fd, peer: s.peer, host: s.host, result: s.result, ongoing: s.ongoing,
                samples: s.samples.count, samplesLost: s.samplesLost,
                samplesDiffering: differing,
                stack: first.map(StallFrame.init), stackUnavailable: s.stackUnavailable, group: g))
        }
        // Groups by total time, then count; rows point at the new positions.
        let order = groups.indices.sorted {
            let a = groups[$0], b = groups[$1]
            if a.totalUs != b.totalUs { return a.totalUs > b.totalUs }
            if a.count != b.count { return a.count > b.count }
            return $0 < $1
        }
        var position = [Int](repeating: 0, count: groups.count)
        for (p, g) in order.enumerated() { position[g] = p }
        for i in rows.indices { rows[i].group = position[rows[i].group] }

        let thresholds = kept.compactMap(\.stall.thresholdUs).filter { $0 > 0 } + enabled.map { Int64($0) * 1000 }
        return StallsSection(
            thresholdUs: thresholds.min() ?? defaultStallThresholdUs, count: c.count, totalUs: c.totalUs,
            byKind: rankedCounts(c.countByKind).map { NameCount(name: $0.name, count: $0.count) },
            notKept: c.notKept, stalls: rows, groups: order.map { groups[$0] }, symbolWarnings: stacks.warnings)
    }

    static func loopRows(_ v: VitalsStats) -> [LoopRow]? {
        guard !v.loops.threads.isEmpty else { return nil }
        return v.loops.threads.values
            .map { t in
                LoopRow(tid: t.tid, thread: t.thread, samples: t.samples, iterations: t.iterations,
                        perS: t.perS.map(round1), busyPct: t.busyPct.map(round1), busyPctMax: t.busyPctMax.map(round1),
                        maxBusyUs: t.maxBusyUs)
            }
            // Busiest first: the loop closest to stalling.
            .sorted {
                let a = $0.busyPct ?? -1, b = $1.busyPct ?? -1
                if a != b { return a > b }
                return $0.iterations != $1.iterations ? $0.iterations > $1.iterations : $0.tid < $1.tid
            }
    }

    private struct GroupKey: Hashable {
        var kind: String
        var call: String?
        var stack: [String]
    }
}

extension Report.StallFrame {
    init(_ f: SymbolizedFrame) {
        address = "0x" + String(f.address, radix: 16)
        module = f.module?.path
        moduleOffset = f.moduleOffset.map { "0x" + String($0, radix: 16) }
        function = f.function
        functionOffset = f.functionOffset.map { Int64(bitPattern: $0) }
        file = f.file
        line = f.line
        text = f.text
    }
}

/// Symbolizes the kept stalls' stacks against the `modules` record each names in its own log,
/// and collects what could not be done: one warning per module, one per missing record.
final class StallStacks {
    private let analysis: RunAnalysis
    private let symbolizer: Symbolizer
    private var maps: [MapKey: ModuleMap] = [:]
    private var missing: [MapKey] = []
    /// The same frames recur in every sample of a stall: keyed by integers, not by module path.
    private var frames: [FrameKey: SymbolizedFrame] = [:]

    private struct MapKey: Hashable {
        var log: Int
        var gen: Int?
    }

    private struct FrameKey: Hashable {
        var map: MapKey
        var address: UInt64
        var exact: Bool
    }

    init(analysis: RunAnalysis, symbolizer: Symbolizer) {
        self.analysis = analysis
        self.symbolizer = symbolizer
    }

    /// The frames of one sample of `k`, innermost first.
    func frames(_ sample: StallRecord.Sample, of k: KeptStall) -> [SymbolizedFrame] {
        let key = MapKey(log: k.log, gen: k.stall.modulesGen)
        let map: ModuleMap
        if let known = maps[key] {
            map = known
        } else {
            let log = analysis.logs[k.log]
            if let gen = key.gen, let record = log.modules[gen] {
                // JIT and interpreter frames (in no module) are looked up in the process's perf map.
                let process = PerfMapProcess(pid: log.pid, startTs: log.kernelStartTs, endTs: log.end?.ts,
                                             directories: [log.path.lastIndex(of: "/").map { String(log.path[..<$0]) } ?? "."])
                map = ModuleMap(record.modules, process: process)
            } else {
                map = ModuleMap([])
                missing.append(key)
            }
            maps[key] = map
        }
        let firstIsExact = k.stall.firstFrameIsExact(sample)
        return sample.frames.enumerated().map { i, address in
            let exact = i == 0 && firstIsExact
            let fk = FrameKey(map: key, address: address, exact: exact)
            if let known = frames[fk] { return known }
            let f = symbolizer.symbolize(address, in: map, returnAddress: !exact)
            frames[fk] = f
            return f
        }
    }

    var warnings: [Report.SymbolWarning] {
        var out = symbolizer.problems.map { p -> Report.SymbolWarning in
            if p.perfMap {
                return Report.SymbolWarning(module: p.path, buildId: nil, message: p.reason, text: "\(p.path): \(p.reason)")
            }
            let name = p.path.split(separator: "/").last.map(String.init) ?? p.path
            return Report.SymbolWarning(module: p.path, buildId: p.buildId.isEmpty ? nil : p.buildId, message: p.reason,
                                        text: "\(p.path): \(p.reason); its frames are shown as \(name)+0xoffset")
        }
        for key in missing {
            let log = analysis.logs[key.log]
            let what = key.gen.map { "no modules record with gen \($0)" } ?? "stall without modules_gen"
            let message = "\(what) in \(log.fileName): addresses shown raw"
            out.append(Report.SymbolWarning(module: nil, buildId: nil, message: message,
                                            text: "pid \(log.pid) \(log.program): " + message))
        }
        return out
    }
}
