import WedjatSymbols

/// The Trace Event Format export (docs/EXPORTS.md, "Trace"), written while the logs are read:
/// each record becomes its events at once. `ts` are microseconds since the Unix epoch (exact
/// integers; viewers show time from the first event); `otherData.wedjat_time_zero_us` is the
/// earliest time of the logs.
///
/// Complete (`X`) events on one track must nest. Records arrive roughly in the order they
/// ended, so each track remembers only until when it is busy: a slice goes on the first track
/// of its kind free at its start, else on a new one. Lookups and stalls go on their thread (a
/// lookup inside the stall around it nests there); connections (with their connect and TLS
/// phases inside) on "connections" tracks, exchanges on "HTTP" tracks of their process; CPU and
/// memory of `sample` records as counter tracks. What is held: a few numbers per track.
final class TraceStream: ExportConsumer {
    /// Synthetic thread ids start above Linux's largest pid (2^22), below 2^31.
    static let firstSyntheticTid = 1 << 30
    /// Frames of a stall's stack in its slice's `args`.
    static let stackFrames = 16

    private var text: ExportText
    private var line = JSONBytes(capacity: 1024)
    private var events = 0
    private var nextTid = TraceStream.firstSyntheticTid
    /// Per process: connection and exchange tracks. Per thread: its own track and overflow ones.
    private var connectionTracks: [Int: Tracks] = [:]
    private var exchangeTracks: [Int: Tracks] = [:]
    private var threadTracks: [ThreadKey: Tracks] = [:]
    private var trackNames: [ThreadKey: String] = [:]
    /// Thread names from stalls.
    private var threadNames: [ThreadKey: String] = [:]
    private var pidsWithEvents = Set<Int>()
    private var symbolizer: Symbolizer?

    struct ThreadKey: Hashable, Comparable {
        var pid: Int
        var tid: Int
        static func < (a: ThreadKey, b: ThreadKey) -> Bool { (a.pid, a.tid) < (b.pid, b.tid) }
    }

    init(text: ExportText) {
        self.text = text
        self.text.append("{\"traceEvents\":[\n")
    }

    /// Tracks of one kind: each is free from `busyUntil` on; `nest` tracks (a thread's) also take
    /// a slice inside or around the ones they hold (the last few are remembered for that).
    struct Tracks {
        var tids: [Int] = []
        var busyUntil: [Int64] = []
        /// nest only: recent slices per track, and the end of those forgotten.
        var recent: [[(Int64, Int64)]] = []
        var forgottenEnd: [Int64] = []
        let nest: Bool
        static let remembered = 32

        init(nest: Bool) { self.nest = nest }

        /// The track index for [start, end], a new one when none fits (`newTid` gives its id).
        mutating func place(_ start: Int64, _ end: Int64, newTid: () -> Int) -> Int {
            for i in tids.indices where fits(i, start, end) { take(i, start, end); return i }
            tids.append(newTid())
            busyUntil.append(.min)
            recent.append([])
            forgottenEnd.append(.min)
            take(tids.count - 1, start, end)
            return tids.count - 1
        }

        private func fits(_ i: Int, _ start: Int64, _ end: Int64) -> Bool {
            if busyUntil[i] <= start { return true }
            guard nest, start >= forgottenEnd[i] else { return false }
            // Disjoint from, inside, or around each slice the track holds.
            return recent[i].allSatisfy { a, b in b <= start || end <= a || (a <= start && end <= b) || (start <= a && b <= end) }
        }

        private mutating func take(_ i: Int, _ start: Int64, _ end: Int64) {
            busyUntil[i] = max(busyUntil[i], end)
            guard nest else { return }
            recent[i].append((start, end))
            if recent[i].count > Self.remembered {
                // Forget the one that ended first; nothing may start before its end on this track.
                let j = recent[i].indices.min { recent[i][$0].1 < recent[i][$1].1 }!
                forgottenEnd[i] = max(forgottenEnd[i], recent[i][j].1)
                recent[i].remove(at: j)
            }
        }
    }

    private func newTid() -> Int {
        defer { nextTid += 1 }
        return nextTid
    }

    func add(_ record: Record, context: ExportContext) {
        switch record {
        case .dns(let d): lookup(d)
        case .stall(let s): stall(s, context: context)
        case .connection(let c): connection(c, image: context.image)
        case .http(let h): exchange(h, image: context.image)
        case .sample(let s): counters(s)
        default: break
        }
    }

    func endImage(_ image: Int, context: ExportContext) {}

    // MARK: slices

    /// One `X` event: `args` written by the closure.
    private func slice(_ name: String, cat: StaticString, start: Int64, end: Int64, pid: Int, tid: Int,
                       args: (inout JSONBytes) -> Void) {
        line.removeAll()
        line.openObject()
        line.key("name"); line.string(name)
        line.key("cat"); line.string(String(describing: cat))
        line.key("ph"); line.string("X")
        line.key("ts"); line.int(start)
        line.key("dur"); line.int(max(0, end - start))
        line.key("pid"); line.int(Int64(pid))
        line.key("tid"); line.int(Int64(tid))
        line.key("args"); line.object(args)
        line.closeObject()
        emit()
        pidsWithEvents.insert(pid)
    }

    private func emit() {
        if events > 0 { text.append(",\n") }
        text.append(bytes: line.bytes)
        events += 1
    }

    /// A track of a thread (`tid` itself, or an overflow one beside it).
    private func threadTrack(pid: Int, tid: Int, start: Int64, end: Int64) -> Int {
        let key = ThreadKey(pid: pid, tid: tid)
        var tracks = threadTracks[key] ?? Tracks(nest: true)
        // The thread's own id for its first track.
        var own = tracks.tids.isEmpty
        let i = tracks.place(start, end) {
            defer { own = false }
            return own ? tid : self.newTid()
        }
        threadTracks[key] = tracks
        let placed = tracks.tids[i]
        if i > 0, trackNames[ThreadKey(pid: pid, tid: placed)] == nil {
            trackNames[ThreadKey(pid: pid, tid: placed)] = "\u{1}\(tid)\u{1}(overlapping \(i))"
        }
        return placed
    }

    private func lookup(_ d: DNSRecord) {
        let tid = d.tid ?? d.pid
        // The duration is exact (nanoseconds, rounded once); `ts - start_ts` may differ by 1 us.
        let start = d.startTs ?? (d.ts - (d.durationUs ?? 0))
        let end = d.durationUs.map { start + $0 } ?? d.ts
        let track = threadTrack(pid: d.pid, tid: tid, start: start, end: end)
        slice("\(d.api ?? "dns") \(d.name ?? "?")", cat: "dns", start: start, end: end, pid: d.pid, tid: track) { a in
            if let v = d.name { a.key("name"); a.string(v) }
            if let v = d.api { a.key("api"); a.string(v) }
            if let v = d.durationUs { a.key("duration_us"); a.int(v) }
            a.key("answers"); a.int(Int64(d.answers))
            if !d.addresses.isEmpty { a.key("addresses"); a.array { for x in d.addresses { $0.string(x) } } }
            if let v = d.error { a.key("error"); a.string(v) }
        }
    }

    private func stall(_ s: StallRecord, context: ExportContext) {
        let end = s.endTs ?? s.ts
        let start = s.startTs ?? (end - s.durationUs)
        let tid = s.tid ?? s.pid
        if let thread = s.thread { threadNames[ThreadKey(pid: s.pid, tid: tid)] = thread }
        let frames = stack(s, context: context)
        let track = threadTrack(pid: s.pid, tid: tid, start: start, end: end)
        let name = s.kind == "blocked" ? "stall in \(s.call ?? "a call")" : "stall (\(s.kind))"
        slice(name, cat: "stall", start: start, end: end, pid: s.pid, tid: track) { a in
            a.key("kind"); a.string(s.kind)
            if let v = s.thread { a.key("thread"); a.string(v) }
            a.key("duration_us"); a.int(end - start)
            if let v = s.cpuUs { a.key("cpu_us"); a.int(v) }
            if let v = s.after { a.key("after"); a.string(v) }
            if let v = s.call { a.key("call"); a.string(v) }
            if let v = s.peer { a.key("peer"); a.string(v) }
            if let v = s.host { a.key("host"); a.string(v) }
            if let v = s.result { a.key("result"); a.string(v) }
            if s.ongoing { a.key("ongoing"); a.bool(true) }
            // The first sample's stack, innermost first, symbolized as the report does.
            if let f = frames.first {
                a.key("function"); a.string(f.function ?? f.text)
                a.key("stack"); a.array { for x in frames.prefix(Self.stackFrames) { $0.string(x.text) } }
                if frames.count > Self.stackFrames { a.key("stack_frames"); a.int(Int64(frames.count)) }
            } else if let why = s.stackUnavailable {
                a.key("stack_unavailable"); a.string(why)
            }
        }
    }

    /// The stall's first sample, symbolized against its image's `modules` record.
    private func stack(_ s: StallRecord, context: ExportContext) -> [Report.StallFrame] {
        guard let sample = s.samples.first, !sample.frames.isEmpty else { return [] }
        if symbolizer == nil { symbolizer = Symbolizer() }
        let modules = s.modulesGen.flatMap { context.images[context.image].modules[$0] }
        let map = ModuleMap(modules?.modules ?? [])
        return symbolizer!.symbolize(stack: sample.frames, in: map, firstIsExact: s.firstFrameIsExact(sample))
            .map(Report.StallFrame.init)
    }

    private func connection(_ r: ConnectionRecord, image: Int) {
        guard let open = r.openTs else { return }
        let end = max(open, r.closeTs ?? r.ts)
        var tracks = connectionTracks[r.pid] ?? Tracks(nest: false)
        let i = tracks.place(open, end, newTid: newTid)
        connectionTracks[r.pid] = tracks
        let tid = tracks.tids[i]
        trackNames[ThreadKey(pid: r.pid, tid: tid)] = i == 0 ? "connections" : "connections \(i + 1)"
        slice(Self.connectionName(r), cat: "connection", start: open, end: end, pid: r.pid, tid: tid) { a in
            if let v = r.connId { a.key("conn_id"); a.int(v) }
            a.key("role"); a.string(r.role)
            if let v = r.transport { a.key("transport"); a.string(v) }
            if let v = r.local { a.key("local"); a.string(v) }
            if let v = r.peer { a.key("peer"); a.string(v) }
            if let v = r.host { a.key("host"); a.string(v) }
            if let v = r.connectUs { a.key("connect_us"); a.int(v) }
            if let v = r.dnsUs { a.key("dns_us"); a.int(v) }
            if let v = r.tls?.version { a.key("tls_version"); a.string(v) }
            a.key("bytes_in"); a.int(r.bytesIn)
            a.key("bytes_out"); a.int(r.bytesOut)
            if let v = r.httpRequests { a.key("http_requests"); a.int(v) }
            if let v = r.error { a.key("error"); a.string(v) }
            if let v = r.errorPhase { a.key("error_phase"); a.string(v) }
            if r.openAtExit { a.key("open_at_exit"); a.bool(true) }
        }
        // The phases inside it, on the same track where they nest (after one another, within
        // it); elsewhere on a track of their own.
        var phaseEnd = open
        func phase(_ name: String, _ start: Int64, _ stop: Int64, args: (inout JSONBytes) -> Void) {
            var track = tid
            if start < phaseEnd || stop > end || start < open {
                var t = connectionTracks[r.pid]!
                track = t.tids[t.place(start, stop, newTid: newTid)]
                connectionTracks[r.pid] = t
                if trackNames[ThreadKey(pid: r.pid, tid: track)] == nil {
                    trackNames[ThreadKey(pid: r.pid, tid: track)] = "connections \(t.tids.firstIndex(of: track)! + 1)"
                }
            } else {
                phaseEnd = stop
            }
            slice(name, cat: "connection", start: start, end: stop, pid: r.pid, tid: track, args: args)
        }
        if let connectUs = r.connectUs, connectUs >= 0 {
            phase("connect", open, open + connectUs) { _ in }
        }
        if let tls = r.tls, let tlsStart = tls.startTs {
            phase("tls", tlsStart, max(tlsStart, tls.endTs ?? end)) { a in
                if let v = tls.library { a.key("library"); a.string(v) }
                if let v = tls.version { a.key("version"); a.string(v) }
                if let v = tls.alpn { a.key("alpn"); a.string(v) }
                if let v = tls.handshakeUs { a.key("handshake_us"); a.int(v) }
                if tls.endTs == nil { a.key("finished"); a.bool(false) }
            }
        }
    }

    private func exchange(_ h: HTTPRecord, image: Int) {
        guard let start = h.requestStartTs else { return }
        let end = max(start, h.endTs)
        var tracks = exchangeTracks[h.pid] ?? Tracks(nest: false)
        let i = tracks.place(start, end, newTid: newTid)
        exchangeTracks[h.pid] = tracks
        let tid = tracks.tids[i]
        trackNames[ThreadKey(pid: h.pid, tid: tid)] = i == 0 ? "HTTP" : "HTTP \(i + 1)"
        slice("\(h.method ?? "?") \(h.path ?? "")", cat: "http", start: start, end: end, pid: h.pid, tid: tid) { a in
            a.key("url"); a.string(h.url)
            a.key("role"); a.string(h.role)
            if let v = h.version { a.key("version"); a.string(v) }
            if let v = h.status { a.key("status"); a.int(Int64(v)) }
            if let v = h.responseVersion { a.key("response_version"); a.string(v) }
            if let v = h.connId { a.key("conn_id"); a.int(v) }
            if let v = h.requestIndex { a.key("request_index"); a.int(Int64(v)) }
            if let v = h.ttfbUs { a.key("ttfb_us"); a.int(v) }
            a.key("request_bytes"); a.int(h.requestHeaderBytes + h.requestBodyBytes)
            a.key("response_bytes"); a.int(h.responseHeaderBytes + h.responseBodyBytes)
            if let v = h.tid { a.key("tid"); a.int(Int64(v)) }
            if let v = h.error { a.key("error"); a.string(v) }
            // HTTP/2: streams of one connection overlap on parallel tracks; gRPC's outcome.
            if let v = h.streamId { a.key("stream_id"); a.int(Int64(v)) }
            if let g = h.grpc {
                if let v = g.fullMethod { a.key("grpc_method"); a.string(v) }
                if let v = g.status { a.key("grpc_status"); a.int(Int64(v)) }
                if let v = g.statusName { a.key("grpc_status_name"); a.string(v) }
            }
            if let v = h.continuedBy { a.key("continued_by_pid"); a.int(Int64(v)) }
        }
    }

    /// CPU (% of one core) and resident memory of each sample, as counter tracks of the process.
    private func counters(_ s: SampleRecord) {
        for (name, value) in [("CPU %", s.cpuTotalPct.map { ExportJSON.decimal(Int64(($0 * 10).rounded()), 1) }),
                              ("RSS bytes", s.rssBytes.map(String.init))] {
            guard let value else { continue }
            line.removeAll()
            line.openObject()
            line.key("name"); line.string(name)
            line.key("ph"); line.string("C")
            line.key("ts"); line.int(s.ts)
            line.key("pid"); line.int(Int64(s.pid))
            line.key("tid"); line.int(Int64(s.pid))
            line.key("args"); line.object { a in a.key(name == "CPU %" ? "cpu_pct" : "rss_bytes"); a.raw(value) }
            line.closeObject()
            emit()
            pidsWithEvents.insert(s.pid)
        }
    }

    static func connectionName(_ c: ConnectionRecord) -> String {
        let transport = c.transport ?? "tcp"
        switch c.role {
        case "client": return "\(transport) → \(c.peer ?? "?")" + (c.host.map { " (\($0))" } ?? "")
        case "server": return "\(transport) ← \(c.peer ?? "?")"
        default: return "\(transport) \(c.role) \(c.local ?? "?")"
        }
    }

    // MARK: the end

    func finish(context: ExportContext) -> ExportDocument {
        // Names, now that every process and track is known: processes by their program (the
        // exec chain's), threads by the names stalls reported, overflow tracks after their thread.
        let programs = context.programNames()
        for pid in pidsWithEvents.sorted() {
            if let name = programs[pid] { metadata("process_name", pid: pid, tid: pid, name: name) }
        }
        var names = trackNames
        for (key, name) in threadNames where names[key] == nil { names[key] = name }
        for key in threadTracks.keys where names[key] == nil && key.tid == key.pid { names[key] = programs[key.pid] }
        for key in names.keys.sorted() {
            var name = names[key]!
            // An overflow track: "<the thread's name> (overlapping n)".
            if name.hasPrefix("\u{1}"), let close = name.dropFirst().firstIndex(of: "\u{1}") {
                let tid = Int(name[name.index(after: name.startIndex) ..< close]) ?? key.tid
                let base = threadNames[ThreadKey(pid: key.pid, tid: tid)] ?? (tid == key.pid ? programs[key.pid] : nil) ?? "thread \(tid)"
                name = base + " " + name[name.index(after: close)...]
            }
            metadata("thread_name", pid: key.pid, tid: key.tid, name: name)
        }
        var other = JSONBytes(capacity: 256)
        other.object { o in
            o.key("wedjat_time_zero_us"); o.int(context.earliestTs ?? 0)
            o.key("wedjat_time_zero"); o.string(ExportTime.iso8601(context.earliestTs ?? 0))
            o.key("wedjat_ts"); o.string("microseconds since the Unix epoch")
            // Exchanges past WEDJAT_HTTP_RECORDS: counted, without slices.
            if context.summarizedExchanges > 0 { o.key("wedjat_summarized_exchanges"); o.int(context.summarizedExchanges) }
        }
        text.append("\n],\"displayTimeUnit\":\"ms\",\"otherData\":")
        text.append(bytes: other.bytes)
        text.append("}\n")
        let slices = events
        return ExportDocument(body: text, count: slices, notes: [])
    }

    private func metadata(_ kind: String, pid: Int, tid: Int, name: String) {
        line.removeAll()
        line.openObject()
        line.key("name"); line.string(kind)
        line.key("ph"); line.string("M")
        line.key("pid"); line.int(Int64(pid))
        line.key("tid"); line.int(Int64(tid))
        line.key("args"); line.object { $0.key("name"); $0.string(name) }
        line.closeObject()
        if events > 0 { text.append(",\n") }
        text.append(bytes: line.bytes)
    }
}
