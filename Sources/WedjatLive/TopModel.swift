import Foundation
import WedjatAnalysis

/// What `wedjat top` shows for one interval: per process and per host, from the records that
/// arrived in it (LOG_FORMAT.md), and the stalls that ended in it.
public struct TopSnapshot {
    /// When the interval ended, and how long it was.
    public var time: Date
    public var seconds: Double
    public var processes: [ProcessRow]
    /// The latest stalls (newest first), at most `TopModel.stallsKept`, and those of this
    /// interval (at most as many).
    public var stalls: [StallLine]
    public var newStalls: [StallLine]
    /// Lines that could not be read, and other problems, since the start.
    public var skippedLines: Int
    /// Log bytes not read yet: the rates are those of what was read (the reader is behind).
    public var behindBytes: Int64
    public var warnings: [String]

    public struct Rates {
        /// Exchanges a second; `estimated` when part of it comes from `http_summary` records
        /// (exchanges past the writer's record budget: counted every 10 s, so that part is the
        /// latest 10 s window's rate).
        public var requestsPerS: Double = 0
        public var estimated = false
        /// Share of exchanges with a status >= 400 or cut short (`error`), in percent.
        public var errorPct: Double?
        /// Duration percentiles of the interval's `http` records (summarized exchanges have none).
        public var p50Us: Int64?
        public var p99Us: Int64?
    }

    public struct HostRow {
        /// `server ← 127.0.0.1:8080`, `client → api.local`.
        public var label: String
        public var rates: Rates
    }

    public struct ProcessRow {
        public var pid: Int
        public var program: String
        public var log: String
        /// The process wrote `process_end` (or disappeared): shown for a few intervals more.
        public var ended: Bool
        public var rates: Rates
        public var hosts: [HostRow]
        /// From the latest `sample` record.
        public var cpuPct: Double?
        public var rssBytes: Int64?
        public var threads: Int?
        public var fds: Int?
        public var openConnections: Int?
        /// The busiest event loop's busy share, and how many loops.
        public var loopBusyPct: Double?
        public var loops: Int
        /// Connections closed in the interval, and those with an error.
        public var connectionsClosed: Int
        public var connectionErrors: Int
        public var stalls: Int
        public var stallsTotal: Int
    }

    public struct StallLine {
        public var ts: Int64
        public var pid: Int
        public var program: String
        public var thread: String
        public var kind: String
        public var durationUs: Int64
        /// `after epoll_wait`, `in connect 10.0.0.9:443 (api.example.com) ETIMEDOUT`.
        public var detail: String
        public var ongoing: Bool
    }
}

/// Follows a log directory and aggregates what arrives, interval by interval. Memory is per
/// live process and host, and per interval: it does not grow with the run's length.
public final class TopModel {
    public static let stallsKept = 20
    /// An ended process stays on screen this long.
    static let endedShownFor: TimeInterval = 5
    /// A log that stopped growing while its process is gone (killed: no `process_end`).
    static let silentAfter: TimeInterval = 5

    let directory: LogDirectory
    private var processes: [String: LiveProcess] = [:]
    private var order: [String] = []
    private var recentStalls: [TopSnapshot.StallLine] = []
    private var intervalStalls: [TopSnapshot.StallLine] = []
    private var scratch = [UInt8](repeating: 0, count: 256 * 1024)
    private let decoder = LineDecoder()
    private var lastSnapshot: Date
    private var firstScan = true
    private(set) var skippedLines = 0
    private var warnings: [String] = []

    /// `fromStart`: read existing logs from their beginning (tests, replays); by default only
    /// what is appended after `top` starts counts, and processes that ended before are left out.
    public init(directory: String, now: Date = Date(), fromStart: Bool = false) {
        self.directory = LogDirectory(path: directory)
        lastSnapshot = now
        if fromStart { firstScan = false }
    }

    /// Reads what the logs gained since the last call, for at most `budget` seconds (a writer
    /// faster than this reader must not keep it from refreshing the screen: what is left is
    /// read next time, and `behindBytes` says how much that is).
    public func poll(now: Date = Date(), budget: TimeInterval = .infinity) {
        let existing = firstScan
        firstScan = false
        for file in directory.newFiles(now: now) { adopt(file, existing: existing, now: now) }
        let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(min(budget, 3600) * 1e9)
        var more = true
        while more {
            more = false
            for key in order {
                guard let p = processes[key] else { continue }
                more = read(p, now: now) || more
            }
            if DispatchTime.now().uptimeNanoseconds >= deadline { break }
        }
        behindBytes = more ? order.compactMap { processes[$0] }.reduce(0) { $0 + $1.unreadBytes } : 0
        warnings += directory.takeWarnings()
    }

    /// Bytes the logs hold that the last poll had no time to read.
    public private(set) var behindBytes: Int64 = 0

    /// Lines read per slice: the deadline is looked at between slices.
    static let sliceBytes = 1 << 20

    /// The interval since the previous snapshot; starts the next one.
    public func snapshot(now: Date = Date()) -> TopSnapshot {
        let seconds = max(0.001, now.timeIntervalSince(lastSnapshot))
        lastSnapshot = now
        var rows: [TopSnapshot.ProcessRow] = []
        var gone: [String] = []
        for key in order {
            guard let p = processes[key] else { continue }
            if let ended = p.endedAt, now.timeIntervalSince(ended) > Self.endedShownFor { gone.append(key); continue }
            rows.append(p.row(seconds: seconds, now: now))
            p.resetInterval()
        }
        for key in gone { processes[key] = nil }
        order.removeAll { processes[$0] == nil }
        let w = warnings
        warnings = []
        let fresh = intervalStalls
        intervalStalls = []
        return TopSnapshot(time: now, seconds: seconds, processes: rows, stalls: recentStalls, newStalls: fresh,
                           skippedLines: skippedLines, behindBytes: behindBytes, warnings: w)
    }

    /// Live processes followed.
    public var processCount: Int { processes.count }

    private func adopt(_ file: LogFile, existing: Bool, now: Date) {
        let p: LiveProcess
        if let known = processes[file.key] {
            p = known
        } else {
            p = LiveProcess(file: file, now: now)
            processes[file.key] = p
            order.append(file.key)
        }
        // A log that was there before `top` started: only its latest segment matters, from its
        // end; and not at all when its process is over.
        if existing {
            if let latest = p.tails.last?.segment, latest > file.segment { return }
            p.tails.removeAll()
            guard let tail = FileTail(path: file.path, offset: nil) else { return }
            if Self.endsWithProcessEnd(file.path, decoder: decoder) || !processAlive(file.start.pid) {
                processes[file.key] = nil
                order.removeAll { $0 == file.key }
                return
            }
            p.tails.append((file.segment, tail))
        } else {
            guard let tail = FileTail(path: file.path, offset: 0) else { return }
            // Its first line is the process_start we have (or a later segment's copy of it).
            p.skipFirstLine.insert(file.path)
            p.tails.append((file.segment, tail))
            p.tails.sort { $0.segment < $1.segment }
        }
    }

    /// One slice of each of the process's segments; true when one had more than a slice.
    private func read(_ p: LiveProcess, now: Date) -> Bool {
        var finished: [Int] = []
        var more = false
        for (i, entry) in p.tails.enumerated() {
            let tail = entry.tail
            var sawLine = false
            var segmentEnded = false
            let stop = tail.readLines(scratch: &scratch, maxBytes: Self.sliceBytes) { line, _ in
                sawLine = true
                if p.skipFirstLine.remove(tail.path) != nil { return true }
                // Most lines of a busy server: read only what the view shows.
                if let h = decoder.httpEssentials(line) { p.add(h); return true }
                let record: Record
                do { record = try decoder.decode(line) } catch { skippedLines += 1; return true }
                if case .segmentEnd = record { segmentEnded = true }
                if case .stall(let s) = record { noteStall(s, p) }
                p.add(record, now: now)
                return true
            }
            if stop == .limit { more = true }
            if sawLine { p.lastGrowth = now }
            // A closed segment is done once its segment_end is read (the next one follows).
            if segmentEnded { finished.append(i) }
        }
        for i in finished.reversed() { p.tails.remove(at: i) }
        // Killed (no process_end): the log stopped and the process is gone.
        if p.endedAt == nil, now.timeIntervalSince(p.lastGrowth) > Self.silentAfter, !processAlive(p.pid) {
            p.endedAt = now
        }
        if let ended = p.endedAt, now.timeIntervalSince(ended) > Self.endedShownFor { p.tails.removeAll() }
        return more
    }

    private func noteStall(_ s: StallRecord, _ p: LiveProcess) {
        var detail: String
        if s.kind == "blocked" {
            detail = "in " + (s.call ?? "?")
            if let peer = s.peer { detail += " " + peer }
            if let host = s.host { detail += " (\(host))" }
            if let result = s.result { detail += " " + result }
        } else {
            detail = s.after.map { "after " + $0 } ?? "loop busy"
            if let cpu = s.cpuUs, s.durationUs > 0 { detail += ", \(Int(Double(cpu) * 100 / Double(s.durationUs)))% on CPU" }
        }
        let line = TopSnapshot.StallLine(
            ts: s.endTs ?? s.ts, pid: s.pid, program: p.program, thread: s.thread ?? s.tid.map { "tid \($0)" } ?? "?",
            kind: s.kind, durationUs: s.durationUs, detail: detail, ongoing: s.ongoing)
        recentStalls.insert(line, at: 0)
        if recentStalls.count > Self.stallsKept { recentStalls.removeLast() }
        if intervalStalls.count < Self.stallsKept { intervalStalls.append(line) }
    }

    /// Whether the file's last line is `process_end` (reads only its last 64 KiB).
    static func endsWithProcessEnd(_ path: String, decoder: LineDecoder) -> Bool {
        guard let tail = FileTail(path: path, offset: 0) else { return false }
        let size = tail.status().size
        guard let from = FileTail(path: path, offset: max(0, size - 65536)) else { return false }
        var scratch = [UInt8](repeating: 0, count: 65536)
        var last: Record?
        var first = size > 65536   // the first line may be cut: skip it
        from.readLines(scratch: &scratch) { line, _ in
            if first { first = false; return true }
            last = try? decoder.decode(line)
            return true
        }
        if case .processEnd? = last { return true }
        return false
    }
}

/// One process image followed by `top`.
final class LiveProcess {
    let key: String
    let pid: Int
    let program: String
    /// Its open segments, oldest first.
    var tails: [(segment: Int, tail: FileTail)] = []
    /// Files whose first line (the process_start copy) is still to be skipped.
    var skipFirstLine = Set<String>()
    var endedAt: Date?
    var lastGrowth: Date

    var unreadBytes: Int64 { tails.reduce(0) { $0 + $1.tail.unfinishedBytes } }

    // The interval.
    private var total = Accumulator()
    private var hosts: [HTTPKey: Accumulator] = [:]
    private var connectionsClosed = 0
    private var connectionErrors = 0
    private var stalls = 0
    private var stallsTotal = 0
    // Latest values.
    private var sample: SampleRecord?
    /// The latest `http_summary` flush: its rates per host, until two windows have passed.
    private var summaryFlushTs: Int64?
    private var summaryWindowUs: Int64 = 10_000_000
    private var summaryRates: [HTTPKey: (requests: Double, errors: Double)] = [:]
    private var summaryValidUntil: Date?

    init(file: LogFile, now: Date) {
        key = file.key
        pid = file.start.pid
        let exe = file.start.exe ?? file.start.argv.first ?? file.name
        program = (exe as NSString).lastPathComponent
        lastGrowth = now
    }

    struct Accumulator {
        var count = 0
        var errors = 0
        var durations = DurationStats()

        /// An error: a status >= 400, or an exchange cut short or not fully seen.
        mutating func add(status: Int?, error: String?, durationUs: Int64?) {
            count += 1
            if (status ?? 0) >= 400 || error != nil { errors += 1 }
            if let d = durationUs { durations.record(d) }
        }
    }

    func add(_ h: LineDecoder.HTTPEssentials) {
        total.add(status: h.status, error: h.error, durationUs: h.durationUs)
        hosts[HTTPKey(role: h.role, host: h.host ?? h.peer ?? "?"), default: Accumulator()]
            .add(status: h.status, error: h.error, durationUs: h.durationUs)
    }

    func add(_ record: Record, now: Date) {
        switch record {
        case .http(let h):
            add(LineDecoder.HTTPEssentials(role: h.role, host: h.host, peer: h.peer, status: h.status, error: h.error,
                                           durationUs: h.durationUs))
        case .httpSummary(let s):
            addSummary(s, now: now)
        case .connection(let c):
            connectionsClosed += 1
            if c.error != nil { connectionErrors += 1 }
        case .sample(let s):
            sample = s
        case .stall:
            stalls += 1
            stallsTotal += 1
        case .processEnd:
            endedAt = now
        default:
            break
        }
    }

    /// Summaries of one flush share their `ts`; the window is the time since the previous
    /// flush (10 s by default).
    private func addSummary(_ s: HTTPSummaryRecord, now: Date) {
        if s.ts != summaryFlushTs {
            if let previous = summaryFlushTs, s.ts > previous, s.ts - previous <= 120_000_000 {
                summaryWindowUs = s.ts - previous
            } else if let first = s.firstTs, let last = s.lastTs, last > first {
                summaryWindowUs = max(1_000_000, last - first)
            }
            summaryFlushTs = s.ts
            summaryRates = [:]
            summaryValidUntil = now.addingTimeInterval(2 * Double(summaryWindowUs) / 1e6)
        }
        let seconds = Double(summaryWindowUs) / 1e6
        let failed = Double(s.status.map { $0 >= 400 ? s.count : s.errors } ?? s.count)
        var rate = summaryRates[HTTPKey(s)] ?? (0, 0)
        rate.requests += Double(s.count) / seconds
        rate.errors += failed / seconds
        summaryRates[HTTPKey(s)] = rate
    }

    func resetInterval() {
        total = Accumulator()
        hosts = [:]
        connectionsClosed = 0
        connectionErrors = 0
        stalls = 0
    }

    func row(seconds: Double, now: Date) -> TopSnapshot.ProcessRow {
        let summaries = (summaryValidUntil.map { now < $0 } ?? false) ? summaryRates : [:]
        func rates(_ a: Accumulator?, summary: (requests: Double, errors: Double)?) -> TopSnapshot.Rates {
            var r = TopSnapshot.Rates()
            let count = Double(a?.count ?? 0), errors = Double(a?.errors ?? 0)
            r.requestsPerS = count / seconds + (summary?.requests ?? 0)
            r.estimated = (summary?.requests ?? 0) > 0
            let errorsPerS = errors / seconds + (summary?.errors ?? 0)
            if r.requestsPerS > 0 { r.errorPct = 100 * errorsPerS / r.requestsPerS }
            if let p = a?.durations.percentiles([50, 99]) { r.p50Us = p[0]; r.p99Us = p[1] }
            return r
        }
        var summaryTotal: (requests: Double, errors: Double) = (0, 0)
        for v in summaries.values { summaryTotal.requests += v.requests; summaryTotal.errors += v.errors }
        let keys = Set(hosts.keys).union(summaries.keys)
        let hostRows = keys.map { k in
            TopSnapshot.HostRow(label: k.role == "server" ? "server ← \(k.host)" : "client → \(k.host)",
                                rates: rates(hosts[k], summary: summaries[k]))
        }
        let loops = sample?.loops ?? []
        return TopSnapshot.ProcessRow(
            pid: pid, program: program, log: key, ended: endedAt != nil,
            rates: rates(total, summary: summaries.isEmpty ? nil : summaryTotal), hosts: hostRows,
            cpuPct: sample?.cpuTotalPct, rssBytes: sample?.rssBytes, threads: sample?.threads, fds: sample?.fds,
            openConnections: sample?.openConnections,
            loopBusyPct: loops.compactMap(\.busyPct).max(), loops: loops.count,
            connectionsClosed: connectionsClosed, connectionErrors: connectionErrors,
            stalls: stalls, stallsTotal: stallsTotal)
    }
}
