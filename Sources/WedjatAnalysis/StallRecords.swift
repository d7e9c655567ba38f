import WedjatSymbols

// The `stall` and `modules` records and the `loops` of `sample` (docs/LOG_FORMAT.md).

/// A thread that stayed busy between two waits of its event loop (`loop`) or sat in one
/// blocking call (`blocked`) for longer than the threshold.
public struct StallRecord: Sendable, Equatable {
    public struct Sample: Sendable, Equatable {
        public var ts: Int64?
        /// The thread's CPU time into the stall when the stack was taken.
        public var cpuUs: Int64?
        /// Return addresses, innermost first.
        public var frames: [UInt64]
        /// Whether `frames[0]` is the instruction a signal interrupted rather than a return
        /// address; nil when the writer did not say (see `firstFrameIsExact`).
        public var interrupted: Bool?
        public init(ts: Int64? = nil, cpuUs: Int64? = nil, frames: [UInt64], interrupted: Bool? = nil) {
            self.ts = ts; self.cpuUs = cpuUs; self.frames = frames; self.interrupted = interrupted
        }
    }

    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var thread: String?
    /// `loop` or `blocked` (or a kind a newer writer adds).
    public var kind: String
    public var startTs: Int64?
    public var endTs: Int64?
    public var durationUs: Int64
    public var cpuUs: Int64?
    /// loop: the wait call the stall followed.
    public var after: String?
    /// blocked: the call, its fd, peer, host name and errno name.
    public var call: String?
    public var fd: Int?
    public var peer: String?
    public var host: String?
    public var result: String?
    public var thresholdUs: Int64?
    /// Which `modules` record of the same file maps the addresses.
    public var modulesGen: Int?
    public var samples: [Sample]
    public var samplesLost: Int64
    /// The image ended during the stall.
    public var ongoing: Bool
    /// Why no stack could be taken (no unwinder), when the writer says.
    public var stackUnavailable: String?

    public init(ts: Int64, pid: Int, tid: Int? = nil, thread: String? = nil, kind: String, startTs: Int64? = nil,
                endTs: Int64? = nil, durationUs: Int64, cpuUs: Int64? = nil, after: String? = nil, call: String? = nil,
                fd: Int? = nil, peer: String? = nil, host: String? = nil, result: String? = nil,
                thresholdUs: Int64? = nil, modulesGen: Int? = nil, samples: [Sample] = [], samplesLost: Int64 = 0,
                ongoing: Bool = false, stackUnavailable: String? = nil) {
        self.ts = ts; self.pid = pid; self.tid = tid; self.thread = thread; self.kind = kind; self.startTs = startTs
        self.endTs = endTs; self.durationUs = durationUs; self.cpuUs = cpuUs; self.after = after; self.call = call
        self.fd = fd; self.peer = peer; self.host = host; self.result = result; self.thresholdUs = thresholdUs
        self.modulesGen = modulesGen; self.samples = samples; self.samplesLost = samplesLost; self.ongoing = ongoing
        self.stackUnavailable = stackUnavailable
    }

    /// A loop sample is usually taken by a signal, so its first frame is the interrupted
    /// instruction (looked up as is); a blocked one is taken by the thread itself: all return
    /// addresses. A sample's own `interrupted` overrides.
    public func firstFrameIsExact(_ sample: Sample) -> Bool { sample.interrupted ?? (kind == "loop") }
}

/// The objects loaded in a process when a stall was taken: what maps its addresses to files.
public struct ModulesRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var gen: Int
    public var modules: [ModuleMapping]
    public init(ts: Int64, pid: Int, gen: Int, modules: [ModuleMapping]) {
        self.ts = ts; self.pid = pid; self.gen = gen; self.modules = modules
    }
}

/// One thread's event loop over a sample's interval.
public struct LoopStats: Sendable, Equatable {
    public var tid: Int
    public var thread: String?
    /// Wait calls that returned.
    public var iterations: Int64
    public var perS: Double?
    /// Share of the interval spent between waits.
    public var busyPct: Double?
    public var maxBusyUs: Int64?
    public init(tid: Int, thread: String? = nil, iterations: Int64, perS: Double? = nil, busyPct: Double? = nil,
                maxBusyUs: Int64? = nil) {
        self.tid = tid; self.thread = thread; self.iterations = iterations; self.perS = perS; self.busyPct = busyPct
        self.maxBusyUs = maxBusyUs
    }
}

extension Record {
    static func decodeStall(_ f: Fields, ts: Int64, pid: Int) throws(RecordDecodeError) -> StallRecord {
        var samples: [StallRecord.Sample] = []
        for s in try f.objects("samples") ?? [] {
            samples.append(.init(ts: try s.int64("ts"), cpuUs: try s.int64("cpu_us"),
                                 frames: try s.addresses("frames") ?? [], interrupted: try s.bool("interrupted")))
        }
        return StallRecord(
            ts: ts, pid: pid, tid: try f.int("tid"), thread: try f.string("thread"),
            kind: try f.string("kind", required: true)!, startTs: try f.int64("start_ts"), endTs: try f.int64("end_ts"),
            durationUs: try f.int64("duration_us", required: true)!, cpuUs: try f.int64("cpu_us"),
            after: try f.string("after"), call: try f.string("call"), fd: try f.int("fd"), peer: try f.string("peer"),
            host: try f.string("host"), result: try f.string("result"), thresholdUs: try f.int64("threshold_us"),
            modulesGen: try f.int("modules_gen"), samples: samples, samplesLost: try f.int64("samples_lost") ?? 0,
            ongoing: try f.bool("ongoing") ?? false, stackUnavailable: try f.string("stack_unavailable"))
    }

    static func decodeModules(_ f: Fields, ts: Int64, pid: Int) throws(RecordDecodeError) -> ModulesRecord {
        var modules: [ModuleMapping] = []
        for m in try f.objects("modules") ?? [] {
            modules.append(ModuleMapping(path: try m.string("path", required: true)!,
                                         base: try m.address("base", required: true)!,
                                         lo: try m.address("lo", required: true)!, hi: try m.address("hi", required: true)!,
                                         buildId: try m.string("build_id") ?? ""))
        }
        return ModulesRecord(ts: ts, pid: pid, gen: try f.int("gen", required: true)!, modules: modules)
    }

    static func decodeLoops(_ f: Fields) throws(RecordDecodeError) -> [LoopStats] {
        var loops: [LoopStats] = []
        for l in try f.objects("loops") ?? [] {
            loops.append(LoopStats(tid: try l.int("tid", required: true)!, thread: try l.string("thread"),
                                   iterations: try l.int64("iterations") ?? 0, perS: try l.double("per_s"),
                                   busyPct: try l.double("busy_pct"), maxBusyUs: try l.int64("max_busy_us")))
        }
        return loops
    }
}

extension Fields {
    /// A `"0x..."` hex address.
    func address(_ key: String, required: Bool = false) throws(RecordDecodeError) -> UInt64? {
        let expected = "a hex address string (\"0x...\")"
        let s: String?
        do { s = try string(key, required: required) } catch { throw .badField(type: type, field: prefix + key, expected: expected) }
        guard let s else { return nil }
        guard let a = parseAddress(s) else { throw .badField(type: type, field: prefix + key, expected: expected) }
        return a
    }

    func addresses(_ key: String) throws(RecordDecodeError) -> [UInt64]? {
        let expected = "an array of hex address strings (\"0x...\")"
        let strings: [String]?
        do { strings = try self.strings(key) } catch { throw .badField(type: type, field: prefix + key, expected: expected) }
        guard let strings else { return nil }
        var out: [UInt64] = []
        out.reserveCapacity(strings.count)
        for s in strings {
            guard let a = parseAddress(s) else { throw .badField(type: type, field: prefix + key, expected: expected) }
            out.append(a)
        }
        return out
    }

    private func parseAddress(_ s: String) -> UInt64? {
        guard s.hasPrefix("0x") || s.hasPrefix("0X") else { return nil }
        return UInt64(s.dropFirst(2), radix: 16)
    }
}
