/// Trace Event Format JSON (the JSON Object Format of Chrome's about:tracing, which Perfetto
/// loads): connections, their connect and TLS phases and HTTP exchanges, DNS lookups and stalls
/// as complete (`X`) events, timestamps in microseconds from the earliest record.
///
/// `X` events on one thread must nest. DNS lookups and stalls happen on a thread, so they go on
/// their own (pid, tid); connections overlap freely, so each process gets "connections" tracks
/// (synthetic thread ids) and every connection a place on the first one free at its start,
/// with its phases and exchanges nested inside. Whatever would overlap without nesting (a
/// pipelined request, a lookup that overlaps a stall by a microsecond) moves to another track.
public enum ChromeTraceExport {
    /// Synthetic thread ids start above Linux's largest pid (2^22), below 2^31.
    static let firstSyntheticTid = 1 << 30
    public static let contents: ExportInput.Contents = .all

    /// `text`: where to write (an `ExportText` with a sink streams to a file).
    public static func render(_ input: ExportInput, into text: ExportText = ExportText()) -> ExportDocument {
        let zero = input.earliestTs ?? 0
        var builder = Builder(zero: zero, summarizedExchanges: input.summarizedExchanges)
        let programs = programNames(input)

        // Thread-bound slices: DNS lookups and stalls on their (pid, tid).
        var threadSlices: [ThreadKey: [Slice]] = [:]
        for l in input.lookups {
            let d = l.value
            let tid = d.tid ?? d.pid
            // The duration is exact (nanoseconds, rounded once); `ts - start_ts` may differ by 1 us.
            let start = d.startTs ?? (d.ts - (d.durationUs ?? 0))
            let end = d.durationUs.map { start + $0 } ?? d.ts
            var args = JSONObject()
            args.add("name", d.name)
            args.add("api", d.api)
            args.add("duration_us", d.durationUs)
            args.add("answers", d.answers)
            if !d.addresses.isEmpty { args.add("addresses", .array(d.addresses.map { .string($0) })) }
            args.add("error", d.error)
            threadSlices[ThreadKey(pid: d.pid, tid: tid), default: []].append(
                Slice(name: "\(d.api ?? "dns") \(d.name ?? "?")", category: "dns", start: start, end: end, args: args.json.rendered()))
        }
        for s in input.stalls {
            let st = s.value
            var args = JSONObject()
            args.add("kind", st.kind)
            args.add("thread", st.thread)
            args.add("duration_us", st.endTs - st.startTs)
            args.add("cpu_us", st.cpuUs)
            args.add("after", st.after)
            args.add("call", st.call)
            args.add("peer", st.peer)
            args.add("host", st.host)
            args.add("result", st.result)
            if st.ongoing { args.add("ongoing", .bool(true)) }
            let name = st.kind == "blocked" ? "stall in \(st.call ?? "a call")" : "stall (\(st.kind))"
            threadSlices[ThreadKey(pid: st.pid, tid: st.tid ?? st.pid), default: []].append(
                Slice(name: name, category: "stall", start: st.startTs, end: st.endTs, args: args.json.rendered()))
            if let thread = st.thread { builder.threadNames[ThreadKey(pid: st.pid, tid: st.tid ?? st.pid)] = thread }
        }
        for key in threadSlices.keys.sorted() {
            var packer = Packer(nestAnywhere: true, firstTid: key.tid)
            for slice in sortedForPlacement(threadSlices[key]!) {
                let (tid, lane) = packer.place(slice, newTid: { builder.newTid() })
                if lane > 0 {
                    let base = builder.threadNames[key] ?? (key.tid == key.pid ? programs[key.pid] : nil) ?? "thread \(key.tid)"
                    builder.threadNames[ThreadKey(pid: key.pid, tid: tid)] = "\(base) (overlapping \(lane))"
                }
                builder.add(slice, pid: key.pid, tid: tid)
            }
        }

        // Connections, their phases and exchanges, per process.
        var byPid: [Int: [Slice]] = [:]
        var connectionIDs = Set<String>()
        for c in input.connections {
            let r = c.value
            guard let open = r.openTs else { continue }
            let key = r.connId.map { "\(c.image)/\($0)" }
            if let key { connectionIDs.insert(key) }
            let end = max(open, r.closeTs ?? r.ts)
            var slices = [Slice(name: connectionName(r), category: "connection", start: open, end: end,
                                args: connectionArgs(r).rendered(), key: key)]
            if let connectUs = r.connectUs, connectUs >= 0 {
                slices.append(Slice(name: "connect", category: "connection", start: open, end: open + connectUs,
                                    args: "{}", parent: key))
            }
            if let tls = r.tls, let tlsStart = tls.startTs {
                var args = JSONObject()
                args.add("library", tls.library)
                args.add("version", tls.version)
                args.add("alpn", tls.alpn)
                args.add("handshake_us", tls.handshakeUs)
                if tls.endTs == nil { args.add("finished", .bool(false)) }
                slices.append(Slice(name: "tls", category: "connection", start: tlsStart, end: max(tlsStart, tls.endTs ?? end),
                                    args: args.json.rendered(), parent: key))
            }
            byPid[r.pid, default: []].append(contentsOf: slices)
        }
        for e in input.exchanges {
            let h = e.value
            guard let start = h.requestStartTs else { continue }
            let key = h.connId.map { "\(e.image)/\($0)" }
            var args = JSONObject()
            args.add("url", h.url)
            args.add("role", h.role)
            args.add("version", h.version)
            args.add("status", h.status)
            args.add("response_version", h.responseVersion)
            args.add("request_index", h.requestIndex)
            args.add("ttfb_us", h.ttfbUs)
            args.add("request_bytes", h.requestHeaderBytes + h.requestBodyBytes)
            args.add("response_bytes", h.responseHeaderBytes + h.responseBodyBytes)
            args.add("tid", h.tid)
            args.add("error", h.error)
            byPid[h.pid, default: []].append(
                Slice(name: "\(h.method ?? "?") \(h.path ?? "")", category: "http", start: start,
                      end: max(start, h.endTs), args: args.json.rendered(), parent: key.flatMap { connectionIDs.contains($0) ? $0 : nil }))
        }
        for pid in byPid.keys.sorted() {
            var packer = Packer(nestAnywhere: false, firstTid: nil)
            for slice in sortedForPlacement(byPid[pid]!) {
                let (tid, lane) = packer.place(slice, newTid: { builder.newTid() })
                builder.threadNames[ThreadKey(pid: pid, tid: tid)] = lane == 0 ? "connections" : "connections \(lane + 1)"
                builder.add(slice, pid: pid, tid: tid)
            }
        }

        for (pid, name) in programs where builder.usedThreads.contains(where: { $0.pid == pid }) {
            builder.processNames[pid] = name
            let main = ThreadKey(pid: pid, tid: pid)
            if builder.threadNames[main] == nil { builder.threadNames[main] = name }
        }
        return builder.document(into: text)
    }

    /// A process's name: its program, or the programs of its exec chain (`bash → curl`).
    private static func programNames(_ input: ExportInput) -> [Int: String] {
        var chains: [Int: [(ts: Int64, program: String)]] = [:]
        for image in input.images { chains[image.pid, default: []].append((image.startTs, image.program)) }
        return chains.mapValues { chain in
            var names: [String] = []
            for step in chain.sorted(by: { $0.ts < $1.ts }) where names.last != step.program { names.append(step.program) }
            return names.joined(separator: " → ")
        }
    }

    private static func connectionName(_ c: ConnectionRecord) -> String {
        let transport = c.transport ?? "tcp"
        switch c.role {
        case "client": return "\(transport) → \(c.peer ?? "?")" + (c.host.map { " (\($0))" } ?? "")
        case "server": return "\(transport) ← \(c.peer ?? "?")"
        default: return "\(transport) \(c.role) \(c.local ?? "?")"
        }
    }

    private static func connectionArgs(_ c: ConnectionRecord) -> ExportJSON {
        var args = JSONObject()
        args.add("conn_id", c.connId)
        args.add("role", c.role)
        args.add("transport", c.transport)
        args.add("local", c.local)
        args.add("peer", c.peer)
        args.add("host", c.host)
        args.add("connect_us", c.connectUs)
        args.add("dns_us", c.dnsUs)
        args.add("tls_version", c.tls?.version)
        args.add("bytes_in", c.bytesIn)
        args.add("bytes_out", c.bytesOut)
        args.add("http_requests", c.httpRequests)
        args.add("error", c.error)
        args.add("error_phase", c.errorPhase)
        if c.openAtExit { args.add("open_at_exit", .bool(true)) }
        return args.json
    }

    /// Start first; at the same start the longer first, so an enclosing slice is placed before
    /// what it encloses; at the same span a connection before its phases.
    private static func sortedForPlacement(_ slices: [Slice]) -> [Slice] {
        slices.enumerated().sorted {
            ($0.element.start, -$0.element.end, $0.element.parent == nil ? 0 : 1, $0.offset)
                < ($1.element.start, -$1.element.end, $1.element.parent == nil ? 0 : 1, $1.offset)
        }.map(\.element)
    }

    struct ThreadKey: Hashable, Comparable {
        var pid: Int
        var tid: Int
        static func < (a: ThreadKey, b: ThreadKey) -> Bool { (a.pid, a.tid) < (b.pid, b.tid) }
    }

    struct Slice {
        var name: String
        var category: String
        var start: Int64
        var end: Int64
        /// Rendered JSON: slices wait for placement as text, not trees.
        var args: String
        /// Identifies a slice that others nest in (a connection).
        var key: String? = nil
        /// The slice this one belongs inside, when it fits there.
        var parent: String? = nil
    }

    /// Places slices, in start order, on tracks where `X` events nest: a slice goes inside its
    /// parent when it fits, else (as a top-level slice) on the first track free at its start, or
    /// with `nestAnywhere` on the first whose innermost open slice encloses it.
    struct Packer {
        private var lanes: [(tid: Int, open: [(end: Int64, key: String?)])] = []
        private var laneOfKey: [String: Int] = [:]
        let nestAnywhere: Bool
        let firstTid: Int?

        init(nestAnywhere: Bool, firstTid: Int?) {
            self.nestAnywhere = nestAnywhere
            self.firstTid = firstTid
        }

        /// The thread id and lane number (0 = the first track) the slice went to.
        mutating func place(_ s: Slice, newTid: () -> Int) -> (Int, Int) {
            for i in lanes.indices {
                // Ended before this one starts (viewers close a slice at its end, as here).
                while let top = lanes[i].open.last, top.end <= s.start { lanes[i].open.removeLast() }
            }
            var chosen: Int?
            if let parent = s.parent, let lane = laneOfKey[parent], lanes[lane].open.contains(where: { $0.key == parent }),
               let top = lanes[lane].open.last, top.end >= s.end {
                chosen = lane
            } else {
                chosen = lanes.indices.first { i in
                    guard let top = lanes[i].open.last else { return true }
                    return nestAnywhere && top.end >= s.end
                }
            }
            let lane: Int
            if let chosen {
                lane = chosen
            } else {
                lane = lanes.count
                lanes.append((tid: lanes.isEmpty ? (firstTid ?? newTid()) : newTid(), open: []))
            }
            lanes[lane].open.append((s.end, s.key))
            if let key = s.key { laneOfKey[key] = lane }
            return (lanes[lane].tid, lane)
        }
    }

    struct Builder {
        let zero: Int64
        var nextTid = ChromeTraceExport.firstSyntheticTid
        /// Placed slices, rendered when the document is written.
        var events: [(ts: Int64, dur: Int64, pid: Int, tid: Int, slice: Slice)] = []
        var processNames: [Int: String] = [:]
        var threadNames: [ThreadKey: String] = [:]
        private(set) var usedThreads = Set<ThreadKey>()

        /// Exchanges only counted in `http_summary` records (no slices): said in `otherData`.
        let summarizedExchanges: Int64

        init(zero: Int64, summarizedExchanges: Int64 = 0) { self.zero = zero; self.summarizedExchanges = summarizedExchanges }

        mutating func newTid() -> Int {
            defer { nextTid += 1 }
            return nextTid
        }

        mutating func add(_ s: Slice, pid: Int, tid: Int) {
            usedThreads.insert(ThreadKey(pid: pid, tid: tid))
            events.append((max(0, s.start - zero), max(0, s.end - s.start), pid, tid, s))
        }

        func document(into text: ExportText) -> ExportDocument {
            // One event a line, metadata first.
            var lines: [String] = []
            for pid in processNames.keys.sorted() {
                lines.append(metadata("process_name", pid: pid, tid: pid, name: processNames[pid]!))
            }
            // Only threads with slices: a name alone would make an empty track.
            for key in threadNames.keys.sorted() where usedThreads.contains(key) {
                lines.append(metadata("thread_name", pid: key.pid, tid: key.tid, name: threadNames[key]!))
            }
            var out = text
            out.append("{\"displayTimeUnit\":\"ms\",\"otherData\":"
                + ExportJSON.object([("wedjat_time_zero_us", .int(zero)), ("wedjat_time_zero", .string(ExportTime.iso8601(zero)))]
                    // Exchanges past WEDJAT_HTTP_RECORDS: counted, without slices.
                    + (summarizedExchanges > 0 ? [("wedjat_summarized_exchanges", .int(summarizedExchanges))] : [])).rendered()
                + ",\"traceEvents\":[\n")
            out.append(lines.joined(separator: ",\n"))
            // Start order, enclosing before enclosed: how viewers expect nested slices.
            let order = events.indices.sorted { (events[$0].ts, -events[$0].dur, $0) < (events[$1].ts, -events[$1].dur, $1) }
            for (n, i) in order.enumerated() {
                let e = events[i]
                if n > 0 || !lines.isEmpty { out.append(",\n") }
                out.append(ExportJSON.object([
                    ("name", .string(e.slice.name)), ("cat", .string(e.slice.category)), ("ph", .string("X")),
                    ("ts", .int(e.ts)), ("dur", .int(e.dur)), ("pid", .int(Int64(e.pid))), ("tid", .int(Int64(e.tid))),
                    ("args", .raw(e.slice.args)),
                ]).rendered())
            }
            out.append("\n]}\n")
            return ExportDocument(body: out, count: events.count, notes: [])
        }

        private func metadata(_ kind: String, pid: Int, tid: Int, name: String) -> String {
            ExportJSON.object([("name", .string(kind)), ("ph", .string("M")), ("pid", .int(Int64(pid))),
                               ("tid", .int(Int64(tid))), ("args", .object([("name", .string(name))]))]).rendered()
        }
    }
}
