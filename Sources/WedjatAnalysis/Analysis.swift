import Foundation

/// One log file, i.e. one process image, summarised while streaming: counts and totals, not
/// the records themselves, so a run of any size fits in memory.
public struct ProcessLog: Sendable {
    /// The file path as it was found (argument, or directory + relative path).
    public let path: String
    public var start: ProcessStart?
    /// nil when the process never reached its end hook: killed by a signal (or still running).
    public var end: ProcessEnd?
    public var latestDrops: DropsRecord?
    /// Records of each type read (the type as written: `warning`, `exec_failed` for notes).
    public var recordCounts: [String: Int] {
        var out = noteCounts
        for (k, n) in kindCounts.enumerated() where n > 0 { out[ProcessLog.kindNames[k]] = n }
        return out
    }
    /// Per record kind (`kindIndex`), and notes per type: counting by a string key per record
    /// cost a hash of the type name for every line.
    private var kindCounts = [Int](repeating: 0, count: ProcessLog.kindNames.count)
    private var noteCounts: [String: Int] = [:]
    private static let kindNames = ["process_start", "connection", "fork", "drops", "process_end", "dns", "http",
                                    "http_summary", "sample", "startup", "stall", "modules", "segment_end",
                                    "segments_removed"]
    public var forks = 0
    public var connections = 0
    public var bytesIn: Int64 = 0
    public var bytesOut: Int64 = 0
    public var errors = 0
    public var openAtExit = 0
    public var dnsLookups = 0
    public var dnsErrors = 0
    /// HTTP exchanges: `http` records plus `http_summary` counts, and those with an error.
    public var httpRequests: Int64 = 0
    public var httpErrors: Int64 = 0
    /// `http` records of exchanges handed off to a forked child whose half was not found
    /// (not errors: the response was written by the child; Handoff.swift).
    public var httpHandedOff: Int64 = 0
    /// Connections inherited from the parent (`inherited_from`): the same sockets as the
    /// parent's records, counted once in the run's totals.
    public var inheritedConnections = 0
    /// `warning` and `exec_failed` records, in file order.
    public var notes: [NoteRecord] = []
    /// `sample` records, summarised.
    public var vitals = VitalsStats()
    /// The image's `startup` record (the first one, if a file had several).
    public var startup: StartupRecord?
    /// `modules` records by `gen`: the address maps of this file's stalls (Stalls.swift).
    public var modules: [Int: ModulesRecord] = [:]
    /// The segments of a rotated log: how many, and what retention removed (LogSegments.swift).
    public var segments = SegmentCoverage()
    public var firstTs: Int64 = .max
    public var lastTs: Int64 = .min
    /// pid seen in records, for files whose process_start is missing.
    var recordPid: Int?

    public init(path: String) { self.path = path }

    public var fileName: String { (path as NSString).lastPathComponent }

    /// `<prog>.<pid>.<start_us>.ndjson`, used when the file has no process_start.
    var nameParts: (prog: String, pid: Int?)? {
        let parts = fileName.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts.last == "ndjson" else { return nil }
        return (parts[0 ..< parts.count - 3].joined(separator: "."), Int(parts[parts.count - 3]))
    }

    public var pid: Int { start?.pid ?? recordPid ?? nameParts?.pid ?? 0 }

    public var program: String {
        if let exe = start?.exe, !exe.isEmpty { return (exe as NSString).lastPathComponent }
        if let prog = nameParts?.prog, !prog.isEmpty { return prog }
        if let a0 = start?.argv.first, !a0.isEmpty { return (a0 as NSString).lastPathComponent }
        return "?"
    }

    /// When this image started (library initialisation), or its first record.
    public var startTs: Int64 { start?.ts ?? firstTs }
    /// When the kernel created the process (shared by an exec chain); may predate `startTs`.
    public var kernelStartTs: Int64 { start?.processStartTs ?? startTs }
    /// The end as known: process_end, else the last record (a killed process's last flush).
    public var lastKnownTs: Int64 { end?.ts ?? Swift.max(lastTs, startTs) }

    public var durationUs: Int64 { end?.durationUs ?? (lastKnownTs - startTs) }
    public var droppedEvents: Int64 { end?.droppedEvents ?? latestDrops?.droppedEvents ?? 0 }
    public var droppedRecords: Int64 { end?.droppedRecords ?? latestDrops?.droppedRecords ?? 0 }
    /// Only `process_end` carries these: 0 for a killed process (unknown).
    public var captureDropped: Int64 { end?.captureDropped ?? 0 }
    public var bytesAfterEnd: Int64 { end?.bytesAfterEnd ?? 0 }
    public var untrackedConnections: Int64 { end?.untrackedConnections ?? 0 }
    /// Killed: no end hook ran, or a signal's default action ended it after wedjat wrote the end.
    public var killed: Bool { end == nil || end?.reason == "signal" }

    mutating func add(_ record: Record) {
        firstTs = Swift.min(firstTs, record.ts)
        lastTs = Swift.max(lastTs, record.ts)
        switch record {
        case .processStart: kindCounts[0] += 1
        case .connection: kindCounts[1] += 1
        case .fork: kindCounts[2] += 1
        case .drops: kindCounts[3] += 1
        case .processEnd: kindCounts[4] += 1
        case .dns: kindCounts[5] += 1
        case .note(let n): noteCounts[n.type, default: 0] += 1
        case .http: kindCounts[6] += 1
        case .httpSummary: kindCounts[7] += 1
        case .sample: kindCounts[8] += 1
        case .startup: kindCounts[9] += 1
        case .stall: kindCounts[10] += 1
        case .modules: kindCounts[11] += 1
        case .segmentEnd: kindCounts[12] += 1
        case .segmentsRemoved: kindCounts[13] += 1
        }
        switch record {
        case .processStart(let s):
            start = s
            segments.add(record)
        case .segmentEnd, .segmentsRemoved:
            segments.add(record)
        case .connection(let c):
            recordPid = recordPid ?? c.pid
            connections += 1
            if c.inheritedFrom != nil { inheritedConnections += 1 }
            bytesIn += c.bytesIn
            bytesOut += c.bytesOut
            if c.error != nil { errors += 1 }
            if c.openAtExit { openAtExit += 1 }
        case .fork(let f):
            recordPid = recordPid ?? f.pid
            forks += 1
        case .drops(let d):
            recordPid = recordPid ?? d.pid
            // Running totals: the newest one is the answer.
            if latestDrops.map({ d.ts >= $0.ts }) ?? true { latestDrops = d }
        case .processEnd(let e):
            recordPid = recordPid ?? e.pid
            end = e
        case .dns(let d):
            recordPid = recordPid ?? d.pid
            dnsLookups += 1
            if d.error != nil { dnsErrors += 1 }
        case .note(let n):
            recordPid = recordPid ?? n.pid
            if notes.count < 100 { notes.append(n) }
        case .http(let h):
            recordPid = recordPid ?? h.pid
            httpRequests += 1
            if h.failed { httpErrors += 1 }
            if h.isHandedOff { httpHandedOff += 1 }
        case .httpSummary(let h):
            recordPid = recordPid ?? h.pid
            httpRequests += Swift.max(0, h.count)
            httpErrors += Swift.max(0, h.errors)
        case .sample(let v):
            recordPid = recordPid ?? v.pid
            vitals.add(v)
        case .startup(let v):
            recordPid = recordPid ?? v.pid
            if startup == nil { startup = v }
        case .stall(let v):
            recordPid = recordPid ?? v.pid
        case .modules(let m):
            recordPid = recordPid ?? m.pid
            modules[m.gen] = m
        }
    }
}

/// Everything a report needs about one run, built in one streaming pass over the logs.
public struct RunAnalysis: Sendable {
    /// One per file that held at least one good record, in reading order.
    public private(set) var logs: [ProcessLog] = []
    public private(set) var peers: [PeerKey: PeerStats] = [:]
    public var http: [HTTPKey: HTTPStats] { tally.http }
    public private(set) var connectionStats = ConnectionStats()
    /// What share of the traffic was decoded, and why the rest was not (Coverage.swift).
    public private(set) var coverage = CoverageStats()
    /// Failed lookups by name and error.
    public private(set) var dnsFailures = DNSFailures()
    /// The longest stalls of the run, the rest counted (Stalls.swift).
    public private(set) var stalls = StallCollection()
    /// Single requests for the HTML report's waterfall (a bounded selection).
    public private(set) var requests = RequestCollector()
    /// All exchanges together, and all lookups (`dns` records): the headline's percentiles.
    public var ttfb: DurationStats { tally.ttfb }
    public var durations: DurationStats { tally.durations }
    public private(set) var dnsDurations = DurationStats()
    public private(set) var slowest: SlowestRequests
    public private(set) var summarizedGroups = SummarizedGroups()
    public var endpoints: EndpointCollection { tally.endpoints }
    /// The hosts' exchanges and connections, the percentiles of all exchanges, the endpoints.
    private var tally = ExchangeTally()
    /// The current log's lookups, for the set-up of the slowest exchanges.
    private var lookups = LookupTracker()
    public private(set) var readerWarnings: [ReaderWarning] = []
    public private(set) var filesRead = 0
    private var index: [String: Int] = [:]
    private var lastFile = "", lastIndex = -1
    /// The host of each connection an `http` record of the current log named, until that
    /// connection's record arrives (conn_ids are per log; files are read one after the other).
    private var connectionHosts: [Int64: HTTPKey] = [:]
    private var connectionHostsLog = -1
    /// Exchanges handed off to a forked child: their two halves, joined (Handoff.swift).
    private var handoffs = HandoffJoin()
    /// While `load` reads: the endpoints and the run's TTFB and total durations, kept on a
    /// thread of their own (the thread that applies the records in order is the reader's
    /// bottleneck); joined by `finish()`.
    private var side: SideAggregator?

    /// `slowest`: how many of the slowest exchanges to keep.
    /// Whether single requests are collected for the HTML waterfall (only the HTML report draws
    /// them: the text and JSON reports skip that work).
    public let collectsRequests: Bool

    public init(slowest: Int = 10, collectRequests: Bool = true) {
        self.slowest = SlowestRequests(limit: slowest)
        collectsRequests = collectRequests
    }

    /// Reads `paths` (files or directories). Throws when there is nothing to report on; the
    /// failure carries the reader's warnings so the caller can show why.
    public static func load(paths: [String], reader: LogReader = LogReader(), slowest: Int = 10,
                            collectRequests: Bool = true) throws(LoadFailure) -> RunAnalysis {
        var analysis = RunAnalysis(slowest: slowest, collectRequests: collectRequests)
        var reader = reader
        // From two cores: the hand-off costs about 4% more CPU than one thread doing it all, and
        // the applying thread, which the decoders wait for, is that much lighter (on two cores
        // the wall fell by a sixth, docs/PERFORMANCE.md "2026-11-29 (night)"; on 2026-11-28,
        // before records were indirect and the reader's blocks read by their decoders, it was
        // a loss).
        if reader.threads >= SideAggregator.minThreads { analysis.side = SideAggregator() }
        do {
            try reader.read(paths: paths) { (origin: LogReader.RecordOrigin, record) in
                analysis.add(record, file: origin.log, line: origin.line, segmentFile: origin.file)
            }
        } catch {
            analysis.joinSide()
            throw LoadFailure(error: error, warnings: reader.warnings)
        }
        analysis.finish()
        analysis.readerWarnings = reader.warnings
        analysis.filesRead = reader.filesRead
        return analysis
    }

    /// `file`: the log (its first segment's path); `line`: where the record is in
    /// `segmentFile` (1-based; `file` itself when nil), for the slowest exchanges. The halves of
    /// an exchange handed off to a forked child wait for each other (Handoff.swift): call
    /// `finish()` after the last record.
    public mutating func add(_ record: Record, file: String, line: Int = 0, segmentFile: String? = nil) {
        let pass = handoffs.take(record, origin: HandoffJoin.Origin(log: file, file: segmentFile, line: line))
        if !pass, case .http(let h) = record, h.isHandedOff {
            // The connection's record may come before the joined exchange: it is the host's.
            noteConnectionHost(h, log: logIndex(file))
        }
        if !handoffs.ready.isEmpty { drainHandoffs() }
        if pass { process(record, file: file, line: line, segmentFile: segmentFile, joined: false) }
    }

    /// The halves of handed-off exchanges that found no other half, as they are.
    public mutating func finish() {
        handoffs.finish()
        drainHandoffs()
        joinSide()
    }

    /// The side thread's work, waited for and taken back.
    private mutating func joinSide() {
        guard let side else { return }
        self.side = nil
        let theirs = side.finish()
        // The side's hosts have their exchanges; this thread's, their connections.
        var http = tally.http
        for (key, var stats) in theirs.http {
            if let mine = http[key] { stats.takeConnections(of: mine) }
            http[key] = stats
        }
        tally = theirs
        tally.http = http
    }

    /// Exchanges joined across a fork, and halves left as they were (Handoff.swift).
    public var handoffStats: (joined: Int, unjoinedParents: Int, unjoinedChildren: Int, overLimit: Int) {
        (handoffs.joinedCount, handoffs.unjoinedParents, handoffs.unjoinedChildren, handoffs.overLimit)
    }

    private mutating func drainHandoffs() {
        let items = handoffs.ready
        handoffs.ready.removeAll()
        for item in items {
            process(item.record, file: item.origin.log, line: item.origin.line, segmentFile: item.origin.file, joined: item.joined)
        }
    }

    private mutating func logIndex(_ file: String) -> Int {
        if file == lastFile { return lastIndex }
        if let known = index[file] { return known }
        let i = logs.count
        index[file] = i
        logs.append(ProcessLog(path: file))
        return i
    }

    private mutating func noteConnectionHost(_ h: HTTPRecord, key: HTTPKey? = nil, log i: Int) {
        guard let id = h.connId else { return }
        if connectionHostsLog != i { connectionHosts.removeAll(); connectionHostsLog = i }
        if connectionHosts[id] == nil { connectionHosts[id] = key ?? HTTPKey(h) }
    }

    /// `joined`: an exchange whose halves were joined, coming out of reading order (its log may
    /// not be the one being read): what depends on that order was done when its half came.
    private mutating func process(_ record: Record, file: String, line: Int, segmentFile: String?, joined: Bool) {
        let i: Int
        if file == lastFile {
            i = lastIndex
        } else {
            if let known = index[file] {
                i = known
            } else {
                i = logs.count
                index[file] = i
                logs.append(ProcessLog(path: file))
            }
            lastFile = file
            lastIndex = i
        }
        logs[i].add(record)
        if collectsRequests { requests.add(record, file: i) }
        switch record {
        case .connection(let c):
            let key = PeerKey(c)
            peers[key, default: PeerStats(key: key)].add(c)
            connectionStats.add(c)
            coverage.add(c)
            attribute(c, log: i)
            slowest.add(connection: c, log: i, lookup: lookups.lookup(of: c, file: i))
        case .http(let h):
            // The host's key is made here only for a connection's first exchange (its stats are
            // the side thread's).
            if !joined, !h.isContinuation { noteConnectionHost(h, log: i) }
            slowest.add(h, log: i, line: line, file: segmentFile == file ? nil : segmentFile)
            if let side { side.add(.http(h)) } else { tally.add(h) }
        case .httpSummary(let s):
            summarizedGroups.add(s)
            if let side { side.add(.httpSummary(s)) } else { tally.add(s) }
        case .dns(let d):
            if let us = d.durationUs { dnsDurations.record(us) }
            dnsFailures.add(d)
            lookups.add(d, file: i)
        case .stall(let s):
            stalls.add(s, log: i)
        case .modules:
            stalls.forgetUnusedModules(of: &logs[i], log: i)
        default:
            break
        }
    }
}

extension RunAnalysis {
    /// Gives a connection to a host: the one its `http` records went to; else, unless it was a
    /// clean connection without HTTP (a database, say), the host it was made to
    /// (`HTTPKey(connection:)`), so that a connect that failed before any request still counts
    /// against its host.
    private mutating func attribute(_ c: ConnectionRecord, log: Int) {
        // A forked child's copy of its parent's connection: the parent's record is the one.
        guard c.inheritedFrom == nil else { return }
        var key: HTTPKey?
        if connectionHostsLog == log, let id = c.connId { key = connectionHosts.removeValue(forKey: id) }
        if key == nil, c.error != nil || (c.httpRequests ?? 1) > 0 { key = HTTPKey(connection: c) }
        guard let key else { return }
        tally.http[key, default: HTTPStats(key: key)].add(connection: c)
    }
}

public struct LoadFailure: Error, CustomStringConvertible {
    public var error: LogReaderError
    public var warnings: [ReaderWarning]
    public var description: String { error.description }
}

/// The part of the analysis that depends on nothing else: the endpoints (in the order their
/// records come, which decides the 1,000 kept), the run's TTFB and duration percentiles, and the
/// hosts' exchanges (`HTTPStats` but their connections, which the applying thread attributes).
/// Fed in batches, in order, to a serial queue.
private final class SideAggregator: @unchecked Sendable {
    private let queue = DispatchQueue(label: "wedjat.analysis.side")
    private var batch: [Record] = []
    // Touched only on `queue` until `finish`.
    private var tally = ExchangeTally()
    /// Batches handed over and not yet done: the applying thread waits above a few (memory).
    private let slots = DispatchSemaphore(value: 4)
    private static let batchSize = 2048
    /// Reader threads (cores) from which the side thread is used.
    static let minThreads = 2

    init() { batch.reserveCapacity(Self.batchSize) }

    func add(_ r: Record) {
        batch.append(r)
        if batch.count >= Self.batchSize { flush() }
    }

    private func flush() {
        guard !batch.isEmpty else { return }
        let items = batch
        batch = []
        batch.reserveCapacity(Self.batchSize)
        slots.wait()
        queue.async { [self] in
            for i in items.indices { apply(items[i]) }
            slots.signal()
        }
    }

    /// One record, borrowed: its payload is read in place, not copied out of the record's box
    /// (a retain and a release of each of its strings).
    private func apply(_ r: borrowing Record) {
        switch r {
        case .http(let h): tally.add(h)
        case .httpSummary(let s): tally.add(s)
        default: break
        }
    }

    func finish() -> ExchangeTally {
        flush()
        return queue.sync { tally }
    }
}

/// The exchanges' statistics that depend on nothing else: the hosts' exchanges (`HTTPStats`;
/// their connections are the applying thread's to attribute), the run's TTFB and duration
/// percentiles, the endpoints (in the order their records come, which decides the 1,000 kept).
/// Kept by the applying thread, or by the side thread when there is one.
struct ExchangeTally: Sendable {
    var http: [HTTPKey: HTTPStats] = [:]
    var ttfb = DurationStats()
    var durations = DurationStats()
    var endpoints = EndpointCollection()

    mutating func add(_ h: HTTPRecord) {
        let key = HTTPKey(h)
        http[key, default: HTTPStats(key: key)].add(h)
        if let t = h.ttfbUs { ttfb.record(t) }
        if let d = h.durationUs { durations.record(d) }
        endpoints.add(h)
    }

    mutating func add(_ s: HTTPSummaryRecord) {
        let key = HTTPKey(s)
        http[key, default: HTTPStats(key: key)].add(s)
        if let t = s.ttfbUs { ttfb.record(summary: t) }
        if let d = s.durationUs { durations.record(summary: d) }
        endpoints.add(s)
    }
}
