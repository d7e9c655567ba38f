import CWedjatCommon
#if canImport(Glibc)
import Glibc
#endif

// What the aggregator needs to know about the process image it reports on.
public struct ProcessContext {
    public var pid: Int
    public var initMonoNs: UInt64
    public var initRealNs: UInt64
    public var maxConnections: Int
    public var redaction: HTTPRedaction
    public var httpRecordsPerSecond: Int
    /// The parent's log, in a forked child (its inherited connections name it).
    public var parentLog: String?
    public init(pid: Int, initMonoNs: UInt64, initRealNs: UInt64, maxConnections: Int,
                redaction: HTTPRedaction = HTTPRedaction(), httpRecordsPerSecond: Int = 200, parentLog: String? = nil) {
        self.httpRecordsPerSecond = httpRecordsPerSecond
        self.parentLog = parentLog
        self.pid = pid
        self.initMonoNs = initMonoNs
        self.initRealNs = initRealNs
        self.maxConnections = maxConnections
        self.redaction = redaction
    }
    // Monotonic event time -> microseconds since the epoch (one offset for the whole image).
    public func epochMicros(_ mono: UInt64) -> Int {
        let delta = Int64(bitPattern: mono &- initMonoNs)
        return Int((Int64(bitPattern: initRealNs) &+ delta) / 1000)
    }
}

// One open connection: its open event, the name its peer was resolved from, and the HTTP
// exchanges of its byte streams (raw, and TLS plaintext when the app used a TLS library), from
// what the C framer handed over: HTTP/1 framed, or HTTP/2 frames to decode here.
final class OpenConnection {
    var event: wj_event { didSet { peerTextCache = nil } }
    // The peer as the http records print it, formatted once per connection (inet_ntop and the
    // String cost about 1,500 instructions a record); again if the open event learns another.
    private var peerTextCache: String?? = nil
    var peerText: String? {
        if let cached = peerTextCache { return cached }
        let text = Addresses.format(event.peer)
        peerTextCache = .some(text)
        return text
    }
    let host: ResolvedNames.Match?
    var raw: HTTP1Framed?
    var plain: HTTP1Framed?
    var h2raw: HTTP2Connection?
    var h2plain: HTTP2Connection?
    var requests = 0
    var messages = 0                        // framer events seen
    // A forked child's connection from its parent: the offsets it took over.
    var inherited = false
    var baseIn: UInt64 = 0, baseOut: UInt64 = 0
    // The summary the last exchange went to (a connection's exchanges mostly share one):
    // found again by comparing its key, without hashing it. Valid while summaryEpoch matches.
    var summaryKey: HTTPSummaryKey?
    var summaryIndex = 0
    var summaryEpoch = -1
    // The raw key of the last counted-only exchange (method, host bytes as the framer gave
    // them): the next one compares these, and builds Strings only when they differ.
    var summaryMethod: [UInt8] = []
    var summaryHost: [UInt8]? = nil
    var summaryRaw: (minor: UInt8, status: Int?, error: String?, tls: Bool) = (0, nil, nil, false)
    init(event: wj_event, host: ResolvedNames.Match?) {
        self.event = event
        self.host = host
    }
    // Its HTTP/2 decoder, if its HTTP stream was HTTP/2 (a server that spoke first with a
    // SETTINGS frame to a client that then spoke HTTP/1 leaves an undecided one: not this).
    var http2: HTTP2Connection? {
        guard let h2 = h2plain ?? h2raw else { return nil }
        if h2.state == .detecting && (plain ?? raw) != nil { return nil }
        return h2
    }
}

// Turns network events into records. Owns the open-connection table (bounded by
// maxConnections) and an output buffer; hands batches of whole lines to `sink`, which
// returns false when they could not be written (then they are counted as dropped).
public final class Aggregator {
    public let context: ProcessContext
    private let sink: (UnsafeRawBufferPointer) -> Bool
    private let errnoName: (Int32) -> String
    // Whether an exchange starting at this mono gets an `http` record (the C framer's budget,
    // shared: HTTP/2 exchanges draw on it as HTTP/1 ones do).
    private let recordTake: (UInt64) -> Bool
    /// wj_agent_api.http_counts_take: what the hooks counted in C, by summary key.
    public typealias CountsTake = (UInt32, UnsafeMutablePointer<wj_http_count>, UnsafeMutablePointer<UInt32>,
                                   UnsafeMutablePointer<UInt32>) -> Int32
    private let countsTake: CountsTake?
    private var open: [UInt64: OpenConnection] = [:]
    // Records are written straight into the batch that goes to the sink.
    private let line = JSONLine(capacity: Aggregator.flushThreshold + 8192)
    private var pendingLines = [Int](repeating: 0, count: RecordType.count)
    private var writtenLines = [Int](repeating: 0, count: RecordType.count)
    private var resolved = ResolvedNames()
    /// Records written, by type.
    public var written: [String: Int] {
        var d: [String: Int] = [:]
        for t in 0..<RecordType.count where writtenLines[t] > 0 { d[RecordType(rawValue: t)!.name] = writtenLines[t] }
        return d
    }
    // In name order (process_end lists them so). No CaseIterable and no [String: Int] on the
    // way: their generic metadata would be built at a short process's first record (~30 us).
    enum RecordType: Int {
        case connection, dns, http, httpSummary
        static let count = 4
        var name: String {
            switch self {
            case .connection: return "connection"
            case .dns: return "dns"
            case .http: return "http"
            case .httpSummary: return "http_summary"
            }
        }
        var quotedName: StaticString {
            switch self {
            case .connection: return "\"connection\""
            case .http: return "\"http\""
            case .httpSummary: return "\"http_summary\""
            case .dns: return "\"dns\""
            }
        }
    }
    public private(set) var droppedRecords: UInt64 = 0
    public private(set) var untrackedConnections: UInt64 = 0
    public private(set) var unparsedHTTP: UInt64 = 0   // exchanges cut short by a gap in the capture
    private var early: [UInt64: [wj_payload]] = [:]
    public private(set) var earlyStashed = 0
    private var summaryIndex: [HTTPSummaryKey: Int] = [:]   // into summaryEntries
    private var summaryEntries: [HTTPSummaryEntry] = []
    private var summaryEpoch = 0                              // +1 each time they are written
    // Of the last payload: no lookup for the next. Unretained: it is in `open` until removed,
    // and it is cleared before (close, exit).
    private unowned(unsafe) var lastConn: OpenConnection?
    private var lastSummaryMono: UInt64 = 0
    static let summaryIntervalNs: UInt64 = 10_000_000_000

    static let flushThreshold = 64 * 1024
    static let payloadDataOffset = MemoryLayout<wj_payload>.offset(of: \wj_payload.data)!
    static let payloadCapacity = MemoryLayout<wj_payload>.size - payloadDataOffset

    public init(context: ProcessContext, errnoName: @escaping (Int32) -> String,
                recordTake: ((UInt64) -> Bool)? = nil,
                countsTake: CountsTake? = nil,
                sink: @escaping (UnsafeRawBufferPointer) -> Bool) {
        self.context = context
        self.countsTake = countsTake
        self.errnoName = errnoName
        if let recordTake {
            self.recordTake = recordTake
        } else {
            var budget = RecordBudget(perSecond: context.httpRecordsPerSecond, burst: context.httpRecordsPerSecond * 10)
            self.recordTake = { budget.take(mono: $0) }
        }
        self.sink = sink
    }

    public var openConnectionCount: Int { open.count }

    public func handle(_ ev: wj_event) {
        switch Int32(ev.kind) {
        case Int32(WJ_EV_CONN_OPEN):
            if let known = open[ev.conn_id] {
                // A UDP socket connect()ed or used after its creation: its addresses and role.
                if ev.peer.family != 0 { known.event.peer = ev.peer }
                if ev.local.family != 0 { known.event.local = ev.local }
                if ev.role != UInt8(WJ_ROLE_UNKNOWN) { known.event.role = ev.role }
                return
            }
            // The name is looked up now, in event order: a later lookup must not change it.
            let host = ev.role == UInt8(WJ_ROLE_CLIENT) ? resolved.lookup(ev.peer, connectStartMono: ev.t_start, tid: ev.tid) : nil
            if ev.err != 0 {
                connection(open: ev, host: host, close: nil, closeMono: ev.t_end, tid: ev.tid, error: ev.err, atExit: false,
                           requests: 0)
            } else if open.count < context.maxConnections {
                let conn = OpenConnection(event: ev, host: host)
                if (ev.flags & UInt32(WJ_OPEN_INHERITED)) != 0 {
                    conn.inherited = true
                    conn.baseIn = ev.bytes_in
                    conn.baseOut = ev.bytes_out
                }
                open[ev.conn_id] = conn
                if let waiting = early.removeValue(forKey: ev.conn_id) {
                    for var p in waiting { withUnsafePointer(to: &p) { handlePayload($0) } }
                }
            } else {
                untrackedConnections += 1
            }
        case Int32(WJ_EV_CONN_CLOSE):
            if lastConn?.event.conn_id == ev.conn_id { lastConn = nil }
            if let known = open.removeValue(forKey: ev.conn_id) {
                // Wake-up pairs that never carried a byte (curl makes one per transfer) are noise.
                if known.event.role == UInt8(WJ_ROLE_PAIR) && ev.bytes_in == 0 && ev.bytes_out == 0 { return }
                finishHTTP(known, close: ev, mono: ev.t_end)
                connection(open: known.event, host: known.host, close: ev, closeMono: ev.t_end, tid: ev.tid,
                           error: ev.err, atExit: false, requests: known.requests, httpConn: known)
            } else {
                // The open event was lost (ring full) or not kept (table full): still report
                // what the close carries rather than nothing.
                var opened = ev
                opened.kind = UInt16(WJ_EV_CONN_OPEN)
                opened.t_end = 0
                connection(open: opened, host: nil, close: ev, closeMono: ev.t_end, tid: ev.tid, error: ev.err,
                           atExit: false, requests: 0)
            }
        default:
            break
        }
    }

    // What the HTTP framer handed over for a connection (payload ring).
    public func handlePayload(_ p: UnsafePointer<wj_payload>) {
        // The bytes of one call mostly follow those of the call before on the same connection.
        var found = lastConn
        if found?.event.conn_id != p.pointee.conn_id { found = open[p.pointee.conn_id] }
        guard let conn = found else {
            // Its open event is still on its way (pushed just after the agent polled the event
            // ring). Keep them until it comes: at most 32 slots for each of 64 connections.
            if early[p.pointee.conn_id] == nil && early.count >= 64 { early.removeAll() }  // bounded
            if early[p.pointee.conn_id, default: []].count < 32 { early[p.pointee.conn_id, default: []].append(p.pointee) }
            earlyStashed += 1
            return
        }
        guard (conn.event.flags & UInt32(WJ_OPEN_HTTP)) != 0 else { return }
        let plain = (p.pointee.flags & UInt16(WJ_PAYLOAD_PLAIN)) != 0
        if Int32(p.pointee.kind) == Int32(WJ_EV_PAYLOAD) {
            http2(p, conn: conn, plain: plain)
            return
        }
        let framed: HTTP1Framed
        if let f = plain ? conn.plain : conn.raw {
            framed = f
        } else {
            framed = HTTP1Framed(role: conn.event.role == UInt8(WJ_ROLE_SERVER) ? .server : .client,
                                 redaction: context.redaction, inherited: conn.inherited)
            if plain { conn.plain = framed } else { conn.raw = framed }
        }
        lastConn = conn
        let data = UnsafeRawPointer(p) + Aggregator.payloadDataOffset
        switch Int32(p.pointee.kind) {
        case Int32(WJ_EV_HTTP_MSG):
            conn.messages += 1
            framed.message(data.assumingMemoryBound(to: wj_h1_msg.self))
        case Int32(WJ_EV_HTTP_HEAD):
            let len = Int(min(p.pointee.len, UInt32(Aggregator.payloadCapacity)))
            framed.head(isRequest: (p.pointee.flags & UInt16(WJ_PAYLOAD_REQUEST)) != 0, seq: UInt32(truncatingIfNeeded: p.pointee.io_end),
                        bytes: UnsafeRawBufferPointer(start: data, count: len))
        default:
            return
        }
        framed.drain(detailed: { http($0, conn: conn, tls: plain, tid: p.pointee.tid) },
                     counted: { counted($0, conn: conn, tls: plain) })
        conn.requests += framed.takeCountedInC()
    }

    // HTTP/2 bytes of one call (the C side walked its frames and copied what the decoder needs).
    private func http2(_ p: UnsafePointer<wj_payload>, conn: OpenConnection, plain: Bool) {
        let h2: HTTP2Connection
        if let known = plain ? conn.h2plain : conn.h2raw {
            h2 = known
        } else {
            h2 = HTTP2Connection(role: conn.event.role == UInt8(WJ_ROLE_SERVER) ? .server : .client,
                                 redaction: context.redaction)
            h2.wantsDetail = recordTake
            if plain { conn.h2plain = h2 } else { conn.h2raw = h2 }
        }
        lastConn = conn
        let len = Int(min(p.pointee.len, UInt32(Aggregator.payloadCapacity)))
        let data = UnsafeRawPointer(p) + Aggregator.payloadDataOffset
        h2.feed((p.pointee.flags & UInt16(WJ_PAYLOAD_OUT)) != 0 ? .out : .in, offset: p.pointee.offset,
                bytes: UnsafeRawBufferPointer(start: data, count: len), ioEnd: p.pointee.io_end, mono: p.pointee.t)
        h2.drain(detailed: { http($0, conn: conn, tls: plain, tid: p.pointee.tid) },
                 counted: { counted($0, conn: conn, tls: plain) })
    }

    // The connection ended. Its framers handed over everything before its close event (or, at
    // the image's end, before this flush): what is left is its state, for http_none. HTTP/2
    // streams still open end here ("incomplete").
    private func finishHTTP(_ conn: OpenConnection, close: wj_event?, mono: UInt64) {
        for (framed, tls) in [(conn.raw, false), (conn.plain, true)] {
            guard let framed else { continue }
            framed.drain(detailed: { http($0, conn: conn, tls: tls, tid: conn.event.tid) },
                         counted: { counted($0, conn: conn, tls: tls) })
            conn.requests += framed.takeCountedInC()
        }
        for (h2, tls) in [(conn.h2raw, false), (conn.h2plain, true)] {
            guard let h2 else { continue }
            h2.finish(mono: mono)
            h2.drain(detailed: { http($0, conn: conn, tls: tls, tid: conn.event.tid) },
                     counted: { counted($0, conn: conn, tls: tls) })
        }
    }

    public func handleDNS(_ ev: wj_dns_event) {
        var ev = ev
        let name = withUnsafeBytes(of: &ev.name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let service = withUnsafeBytes(of: &ev.service) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let addrs: [wj_addr] = withUnsafeBytes(of: &ev.addrs) { raw in
            (0..<Int(min(ev.n_addrs, UInt8(WJ_DNS_ADDRS)))).map { raw.load(fromByteOffset: $0 * MemoryLayout<wj_addr>.stride, as: wj_addr.self) }
        }
        let durationUs = Int((ev.t_end &- ev.t_start) / 1000)
        let forward = Int32(ev.api) != Int32(WJ_DNS_GETHOSTBYADDR) && Int32(ev.api) != Int32(WJ_DNS_GETNAMEINFO)
        if ev.error == 0 && forward && !name.isEmpty {
            resolved.note(addrs, name: name, durationUs: durationUs, endMono: ev.t_end, tid: ev.tid,
                          service: service.isEmpty ? nil : service)
        }
        begin(.dns, mono: ev.t_end, tid: ev.tid)
        line.field("api", DNSNames.api(Int32(ev.api)))
        line.field("name", name.isEmpty ? nil : name)
        if ev.truncated != 0 { line.field("name_truncated", true) }
        line.field("service", service.isEmpty ? nil : service)
        line.field("family", DNSNames.family(ev.family))
        line.field("start_ts", context.epochMicros(ev.t_start))
        line.field("duration_us", durationUs)
        line.field("answers", Int(ev.n_answers))
        line.key("addresses")
        line.beginArray()
        for a in addrs { line.value(Addresses.format(a, withPort: false)) }
        line.endArray()
        line.field("error", ev.error == 0 ? nil : DNSNames.error(ev.error, api: Int32(ev.api)))
        finishRecord(.dns)
    }

    // Writes what is pending. With `final`, every connection still open is reported first
    // (open_at_exit), its counters and phase times read live through
    // `openCounters(slot, conn_id)`.
    public func flush(final: Bool, endMono: UInt64, tid: Int,
                      openCounters: (UInt32, UInt64) -> wj_event?) {
        if final {
            for conn in open.values.sorted(by: { $0.event.conn_id < $1.event.conn_id }) {
                let live = openCounters(conn.event.conn_slot, conn.event.conn_id)
                finishHTTP(conn, close: live, mono: endMono)
                connection(open: conn.event, host: conn.host, close: live, closeMono: endMono, tid: Int32(tid),
                           error: live?.err ?? 0, atExit: true, requests: conn.requests, httpConn: conn)
            }
            open.removeAll()
            lastConn = nil
        }
        if lastSummaryMono == 0 { lastSummaryMono = endMono }
        if final || endMono &- lastSummaryMono >= Aggregator.summaryIntervalNs {
            writeSummaries(mono: endMono, tid: Int32(tid))
            lastSummaryMono = endMono
        }
        writePending()
    }

    private func writeSummaries(mono: UInt64, tid: Int32) {
        takeCountsInC()
        let sorted = summaryIndex.map { ($0.key, summaryEntries[$0.value]) }
            .sorted { ($0.1.firstMono, $0.0.method) < ($1.1.firstMono, $1.0.method) }
        summaryIndex.removeAll(keepingCapacity: true)
        summaryEntries.removeAll(keepingCapacity: true)
        summaryEpoch += 1
        for (key, e) in sorted {
            begin(.httpSummary, mono: mono, tid: tid)
            line.field("role", key.role)
            line.field("scheme", key.scheme)
            line.field("method", key.method)
            line.field("host", key.host)
            line.field("version", key.version)
            line.field("status", key.status)
            line.field("error", key.error)
            line.field("count", e.count)
            line.field("errors", e.errors)
            line.field("request_bytes", e.requestBytes)
            line.field("response_bytes", e.responseBytes)
            line.field("first_ts", context.epochMicros(e.firstMono))
            line.field("last_ts", context.epochMicros(e.lastMono))
            for (name, h) in [("duration_us", e.duration), ("ttfb_us", e.ttfb)] {
                line.key(dynamic: name)
                if h.total == 0 { line.null(); continue }
                line.beginObject()
                line.field("count", h.total)
                line.field("p50", h.quantile(0.5))
                line.field("p90", h.quantile(0.9))
                line.field("p99", h.quantile(0.99))
                line.field("max", h.max)
                if name == "duration_us" {
                    let b = e.durationBuckets
                    line.field("min", b.min)
                    line.field("sum", b.sum)
                    numbers("bounds", BoundedCounts.boundsUs)
                    numbers("buckets", b.counts)
                }
                line.endObject()
            }
            finishRecord(.httpSummary)
        }
    }

    // What the hooks counted in C (http_counts.c) joins the summaries of the same keys.
    private func takeCountsInC() {
        guard let take = countsTake else { return }
        let out = UnsafeMutablePointer<wj_http_count>.allocate(capacity: 1)
        let hist = UnsafeMutablePointer<UInt32>.allocate(capacity: 2 * Int(WJ_COUNT_HIST))
        defer { out.deallocate(); hist.deallocate() }
        var index: UInt32 = 0
        while true {
            let got = take(index, out, hist, hist + Int(WJ_COUNT_HIST))
            if got < 0 { break }
            index += 1
            guard got > 0 else { continue }
            let c = out.pointee
            let key = HTTPSummaryKey(role: c.server != 0 ? "server" : "client", scheme: c.tls != 0 ? "https" : "http",
                                     method: HTTP1Framed.text(c.method, Int(c.method_len)),
                                     host: HTTP1Framed.text(c.host, Int(c.host_len)),
                                     version: c.minor == 0 ? "HTTP/1.0" : "HTTP/1.1", status: Int(c.status), error: nil)
            summaryEntries[entryIndex(key)].merge(c, durationHist: UnsafeBufferPointer(start: hist, count: Int(WJ_COUNT_HIST)),
                                    ttfbHist: UnsafeBufferPointer(start: hist + Int(WJ_COUNT_HIST), count: Int(WJ_COUNT_HIST)))
        }
    }

    private func numbers(_ key: StaticString, _ values: [UInt64]) {
        line.key(key)
        line.beginArray()
        for v in values { line.value(v) }
        line.endArray()
    }

    // "type":count pairs of what this aggregator wrote, for process_end (names in order: the
    // cases are declared sorted by name).
    public func recordCounts() -> String {
        var s = ""
        for t in 0..<RecordType.count where writtenLines[t] > 0 {
            s += "\"" + RecordType(rawValue: t)!.name + "\":" + String(writtenLines[t]) + ","
        }
        return s
    }

    // ------------------------------------------------------------------ records

    private func begin(_ type: RecordType, mono: UInt64, tid: Int32) {
        line.beginObject()
        line.field("type", raw: type.quotedName)
        line.field("ts", context.epochMicros(mono))
        line.field("pid", context.pid)
        line.field("tid", Int(tid))
    }

    private func finishRecord(_ type: RecordType) {
        line.endObject()
        line.endLine()
        pendingLines[type.rawValue] += 1
        if line.count >= Aggregator.flushThreshold { writePending() }
    }

    private func writePending() {
        guard line.count > 0 else { return }
        let ok = line.withBytes { sink($0) }
        for t in pendingLines.indices {
            if ok { writtenLines[t] += pendingLines[t] } else { droppedRecords += UInt64(pendingLines[t]) }
            pendingLines[t] = 0
        }
        line.reset()
    }

    private func ts(_ mono: UInt64?) -> Int? { mono.map { context.epochMicros($0) } }
    private func us(_ ns: UInt64?) -> Int? { ns.map { Int($0 / 1000) } }

    private func http(_ ex: HTTPExchange, conn: OpenConnection, tls: Bool, tid: Int32) {
        conn.requests += 1
        if ex.error == "desync" { unparsedHTTP += 1 }
        let ev = conn.event
        let endMono = ex.responseEnd ?? ex.requestEnd ?? ex.requestStart ?? ev.t_start
        guard ex.detailed else {
            let k = summarySlot(ex, conn: conn, tls: tls)
            summaryEntries[k].add(
                failed: ex.error != nil, requestBytes: ex.requestHeaderBytes + ex.requestBodyBytes,
                responseBytes: ex.responseHeaderBytes + ex.responseBodyBytes,
                durationUs: ex.durationNs.map { $0 / 1000 }, ttfbUs: ex.ttfbNs.map { $0 / 1000 }, endMono: endMono)
            return
        }
        begin(.http, mono: endMono, tid: tid)
        line.field("conn_id", ev.conn_id)
        line.field("role", raw: ev.role == UInt8(WJ_ROLE_SERVER) ? "\"server\"" : "\"client\"")
        line.field("scheme", raw: tls ? "\"https\"" : "\"http\"")
        // An inherited connection's response alone (its request was the parent's): no request fields.
        let alone = ex.method.isEmpty
        line.field("method", alone ? nil : ex.method)
        line.field("host", ex.host ?? conn.host?.name)
        line.field("path", alone ? nil : ex.path)
        line.field("version", alone ? nil : ex.version)
        line.field("status", ex.status)
        if let v = ex.responseVersion, v != ex.version || alone { line.field("response_version", v) }
        if ex.interim > 0 { line.field("interim_responses", ex.interim) }
        line.field("peer", conn.peerText)
        line.field("request_index", ex.index)
        line.field("reused", ex.index > 0)
        line.field("request_start_ts", ts(ex.requestStart))
        line.field("request_end_ts", ts(ex.requestEnd))
        line.field("response_start_ts", ts(ex.responseStart))
        line.field("response_end_ts", ts(ex.responseEnd))
        line.field("ttfb_us", us(ex.ttfbNs))
        line.field("wait_us", us(ex.waitNs))
        line.field("duration_us", us(ex.durationNs))
        line.field("request_header_bytes", ex.requestHeaderBytes)
        line.field("request_body_bytes", ex.requestBodyBytes)
        line.field("response_header_bytes", ex.responseHeaderBytes)
        line.field("response_body_bytes", ex.responseBodyBytes)
        line.key("headers")
        line.beginObject()
        for (name, value) in ex.headers { line.key(dynamic: name); line.value(value) }
        line.endObject()
        line.field("complete", ex.complete)
        if ex.upgraded { line.field("upgraded", true) }
        line.field("error", ex.error)
        line.http2Fields(ex)
        finishRecord(.http)
    }

    // A counted-only exchange (past the record budget): into its http_summary, found again by
    // comparing raw bytes with the connection's last one (no String, no hashing).
    private func counted(_ c: CountedExchange, conn: OpenConnection, tls: Bool) {
        conn.requests += 1
        if c.error == "desync" { unparsedHTTP += 1 }
        let status = c.status
        let same = conn.summaryEpoch == summaryEpoch && conn.summaryKey != nil
            && conn.summaryRaw.minor == c.requestMinor && conn.summaryRaw.status == status
            && conn.summaryRaw.error == c.error && conn.summaryRaw.tls == tls
            && c.withMethod({ conn.summaryMethod.sameBytes($0) })
            && (c.hasHost ? c.withHost({ h in conn.summaryHost.map { $0.sameBytes(h) } ?? false }) : conn.summaryHost == nil)
        let k: Int
        if same {
            k = conn.summaryIndex
        } else {
            var e = HTTP1Framed.exchange(counted: c)
            e.detailed = false
            k = summarySlot(e, conn: conn, tls: tls)
            conn.summaryMethod = c.withMethod { Array($0) }
            conn.summaryHost = c.hasHost ? c.withHost { Array($0) } : nil
            conn.summaryRaw = (c.requestMinor, status, c.error, tls)
        }
        let endMono = c.responseEnd ?? c.requestEnd ?? c.requestStart
        summaryEntries[k].add(failed: c.error != nil, requestBytes: c.requestBytes, responseBytes: c.responseBytes,
                              durationUs: c.durationNs.map { $0 / 1000 }, ttfbUs: c.ttfbNs.map { $0 / 1000 }, endMono: endMono)
    }

    // A counted-only HTTP/2 stream (past the record budget): into its http_summary, without
    // making its exchange.
    private func counted(_ s: borrowing H2Stream, conn: OpenConnection, tls: Bool) {
        conn.requests += 1
        if s.error == .desync { unparsedHTTP += 1 }
        let k = summarySlot(method: s.method, host: s.host, version: "HTTP/2", status: s.status, error: s.errorText,
                            conn: conn, tls: tls)
        let endMono = s.responseEnd ?? s.requestEnd ?? s.requestStart ?? conn.event.t_start
        summaryEntries[k].add(
            failed: s.error != nil, requestBytes: s.requestHeaderBytes + s.requestBodyBytes,
            responseBytes: s.responseHeaderBytes + s.responseBodyBytes,
            durationUs: HTTPExchange.diff(s.responseEnd, s.requestStart).map { $0 / 1000 },
            ttfbUs: HTTPExchange.diff(s.responseStart, s.requestStart).map { $0 / 1000 }, endMono: endMono)
    }

    // The index in summaryEntries of `key`'s summary, created if new.
    private func entryIndex(_ key: HTTPSummaryKey) -> Int {
        if let found = summaryIndex[key] { return found }
        summaryEntries.append(HTTPSummaryEntry())
        summaryIndex[key] = summaryEntries.count - 1
        return summaryEntries.count - 1
    }

    // The index in summaryEntries of the summary `ex` counts in, created if new.
    private func summarySlot(_ ex: HTTPExchange, conn: OpenConnection, tls: Bool) -> Int {
        summarySlot(method: ex.method, host: ex.host, version: ex.version, status: ex.status, error: ex.error, conn: conn, tls: tls)
    }

    private func summarySlot(method: String, host given: String?, version: String, status: Int?, error: String?,
                             conn: OpenConnection, tls: Bool) -> Int {
        let scheme = tls ? "https" : "http", host = given ?? conn.host?.name
        let role = conn.event.role == UInt8(WJ_ROLE_SERVER) ? "server" : "client"
        if conn.summaryEpoch == summaryEpoch, let k = conn.summaryKey, k.status == status, k.error == error,
           k.method == method, k.host == host, k.version == version, k.scheme == scheme, k.role == role {
            return conn.summaryIndex
        }
        let key = HTTPSummaryKey(role: role, scheme: scheme, method: method, host: host, version: version,
                                 status: status, error: error)
        let index = entryIndex(key)
        conn.summaryKey = key
        conn.summaryIndex = index
        conn.summaryEpoch = summaryEpoch
        return index
    }

    private static func transportName(_ t: UInt8) -> String {
        switch Int32(t) {
        case Int32(WJ_TRANSPORT_UDP): return "udp"
        case Int32(WJ_TRANSPORT_UNIX): return "unix"
        default: return "tcp"
        }
    }

    private static func roleName(_ r: UInt8) -> String? {
        switch Int32(r) {
        case Int32(WJ_ROLE_CLIENT): return "client"
        case Int32(WJ_ROLE_SERVER): return "server"
        case Int32(WJ_ROLE_PAIR): return "pair"
        default: return nil
        }
    }

    private static func tlsVersionName(_ v: UInt16) -> String? {
        switch v {
        case 0: return nil
        case 0x0300: return "SSLv3"
        case 0x0301: return "TLSv1.0"
        case 0x0302: return "TLSv1.1"
        case 0x0303: return "TLSv1.2"
        case 0x0304: return "TLSv1.3"
        default: return "0x" + String(v, radix: 16)
        }
    }

    private func address(_ a: wj_addr, path: String?) -> String? {
        if Int32(a.family) == AF_UNIX { return path.map { $0.isEmpty ? "(unnamed)" : $0 } ?? "(unnamed)" }
        return Addresses.format(a)
    }

    // `close` carries the counters and phase times (a close event, or a live snapshot at exit).
    private func connection(open ev: wj_event, host: ResolvedNames.Match?, close: wj_event?, closeMono: UInt64,
                            tid: Int32, error: Int32, atExit: Bool, requests: Int, httpConn: OpenConnection? = nil) {
        let phases = close.map { Phases($0) } ?? Phases()
        var ev = ev
        let path = withUnsafeBytes(of: &ev.path) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let transport = Int32(ev.transport != 0 ? ev.transport : close?.transport ?? 0)
        let role = close?.role != nil && close!.role != 0 ? close!.role : ev.role
        // A UDP socket never connected, sent on or received on (curl's probe for IPv6 support:
        // socket() then close()) carried nothing and has no role: not a connection.
        if transport == Int32(WJ_TRANSPORT_UDP), role == UInt8(WJ_ROLE_UNKNOWN), error == 0,
           (close?.bytes_in ?? 0) == 0, (close?.bytes_out ?? 0) == 0 {
            return
        }
        begin(.connection, mono: closeMono, tid: tid)
        line.field("conn_id", ev.conn_id)
        line.field("fd", Int(ev.fd))
        line.field("transport", Aggregator.transportName(UInt8(transport)))
        line.field("family", transport == Int32(WJ_TRANSPORT_UNIX) ? "unix" : Addresses.family(ev.peer) ?? Addresses.family(ev.local))
        line.field("role", Aggregator.roleName(role))
        let peerIsPath = transport == Int32(WJ_TRANSPORT_UNIX) && role == UInt8(WJ_ROLE_CLIENT)
        line.field("local", address(ev.local, path: peerIsPath ? nil : path))
        line.field("peer", address(ev.peer, path: peerIsPath ? path : nil))
        let openTs = context.epochMicros(ev.t_start)
        let closeTs = context.epochMicros(closeMono)
        line.field("open_ts", openTs)
        line.field("close_ts", closeTs)
        line.field("duration_us", max(0, closeTs - openTs))
        let client = ev.role == UInt8(WJ_ROLE_CLIENT) && transport != Int32(WJ_TRANSPORT_UDP)
        let blockingConnect = client && ev.t_end >= ev.t_start && ev.t_end != 0
            && (ev.flags & UInt32(WJ_OPEN_NONBLOCKING)) == 0
        // Connect end: a blocking connect's return, or when a non-blocking one was seen
        // complete (poll/epoll/select writability with a peer, SO_ERROR == 0, a repeated
        // connect, or the first byte moved).
        let connectedMono: UInt64? = !client ? nil : blockingConnect ? ev.t_end : (phases.connected != 0 ? phases.connected : nil)
        line.field("connect_us", connectedMono.map { Int(($0 &- ev.t_start) / 1000) })
        line.field("connect_end_ts", connectedMono.map { context.epochMicros($0) })
        if let close, close.t_tls_start != 0 {
            line.key("tls")
            line.beginObject()
            line.field("library", close.tls_lib == UInt8(WJ_TLS_GNUTLS) ? "gnutls" : "openssl")
            line.field("start_ts", context.epochMicros(close.t_tls_start))
            line.field("end_ts", close.t_tls_end != 0 ? context.epochMicros(close.t_tls_end) : nil)
            line.field("handshake_us", close.t_tls_end != 0 ? Int((close.t_tls_end &- close.t_tls_start) / 1000) : nil)
            // The TLS phase as browsers (HAR "ssl") and curl (appconnect - connect) count it:
            // from the connection being established (a server: the accept) to the handshake's
            // end, the client's own set-up before its first handshake call included.
            let phaseStart = client ? connectedMono : ev.t_start
            line.field("phase_us", close.t_tls_end != 0 && phaseStart != nil && close.t_tls_end >= phaseStart!
                       ? Int((close.t_tls_end - phaseStart!) / 1000) : nil)
            line.field("version", Aggregator.tlsVersionName(close.tls_version))
            var c = close
            let alpn = withUnsafeBytes(of: &c.alpn) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            line.field("alpn", alpn.isEmpty ? nil : alpn)
            line.endObject()
        } else {
            line.key("tls"); line.null()
        }
        line.field("first_byte_out_ts", phases.firstOut != 0 ? context.epochMicros(phases.firstOut) : nil)
        line.field("first_byte_in_ts", phases.firstIn != 0 ? context.epochMicros(phases.firstIn) : nil)
        line.field("last_byte_ts", phases.lastIO != 0 ? context.epochMicros(phases.lastIO) : nil)
        line.field("shutdown_ts", phases.shutdown != 0 ? context.epochMicros(phases.shutdown) : nil)
        // A connection inherited from the parent: this process's bytes, and where it came from.
        let baseIn = httpConn?.baseIn ?? 0, baseOut = httpConn?.baseOut ?? 0
        line.field("bytes_in", (close?.bytes_in ?? baseIn) &- baseIn)
        line.field("bytes_out", (close?.bytes_out ?? baseOut) &- baseOut)
        if httpConn?.inherited == true {
            line.key("inherited_from")
            line.beginObject()
            line.field("log", context.parentLog)
            line.field("conn_id", ev.conn_id)
            line.endObject()
        }
        if let close, (close.flags & UInt32(WJ_CLOSE_FORKED)) != 0 { line.field("forked_while_open", true) }
        if (ev.flags & UInt32(WJ_OPEN_HTTP)) != 0 {
            line.field("http_requests", requests)
            if let h2 = httpConn?.http2 { line.http2ConnectionFields(h2) }
            let (reason, inBytes, outBytes) = undecoded(httpConn, close: close, requests: requests)
            if requests == 0 { line.field("http_none", reason) }
            if inBytes + outBytes > 0, let reason {
                line.key("http_undecoded")
                line.beginObject()
                line.field("reason", reason)
                line.field("bytes_in", inBytes)
                line.field("bytes_out", outBytes)
                line.endObject()
            }
            let framers = [httpConn?.raw, httpConn?.plain].compactMap { $0 }
            let unpaired = framers.reduce(0) { $0 + $1.unpairedResponses }, late = framers.reduce(0) { $0 + $1.lateMessages }
            if unpaired > 0 { line.field("http_unpaired_responses", unpaired) }
            if late > 0 { line.field("http_late_messages", late) }
        }
        if phases.hasTCPInfo {
            line.key("tcp_info")
            line.beginObject()
            line.field("rtt_us", Int(phases.tcpInfo.rtt))
            line.field("rttvar_us", Int(phases.tcpInfo.rttvar))
            line.field("retransmits", Int(phases.tcpInfo.retransmits))
            line.field("total_retrans", Int(phases.tcpInfo.totalRetrans))
            line.field("lost", Int(phases.tcpInfo.lost))
            line.endObject()
        } else {
            line.key("tcp_info"); line.null()
        }
        line.field("host", host?.name)
        line.field("dns_us", host?.attributedDurationUs)
        line.field("error", error != 0 ? errnoName(error) : nil)
        let phase = close?.err_phase ?? (error != 0 ? UInt8(WJ_ERR_CONNECT) : 0)
        line.field("error_phase", error == 0 ? nil : phase == UInt8(WJ_ERR_TLS) ? "tls" : phase == UInt8(WJ_ERR_IO) ? "io" : "connect")
        line.field("open_at_exit", atExit)
        finishRecord(.connection)
    }
}

extension Aggregator {
    /// Why (part of) an HTTP-eligible connection was not decoded, and how many of its bytes in
    /// each direction were not: the HTTP stream is the TLS plaintext when a TLS library was
    /// hooked, else the raw bytes; decoding stopped where the framer's last STOP says.
    func undecoded(_ conn: OpenConnection?, close: wj_event?, requests: Int) -> (String?, UInt64, UInt64) {
        let tlsPlain = conn?.plain != nil || conn?.h2plain != nil
        let totalIn = tlsPlain ? (close?.plain_in ?? 0) : (close?.bytes_in ?? 0)
        let totalOut = tlsPlain ? (close?.plain_out ?? 0) : (close?.bytes_out ?? 0)
        var alpn = ""
        if var c = close { alpn = withUnsafeBytes(of: &c.alpn) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) } }
        if let h2 = conn?.http2 {
            if totalIn + totalOut == 0 { return ("no_bytes", 0, 0) }
            let why = h2.noneReason ?? "not_http"
            // Bytes past where decoding stopped.
            guard let at = h2.stoppedAt else { return (why, 0, 0) }
            let client = conn!.event.role != UInt8(WJ_ROLE_SERVER)
            let outDone = client ? at.client : at.server, inDone = client ? at.server : at.client
            return (why, totalIn > inDone ? totalIn - inDone : 0, totalOut > outDone ? totalOut - outDone : 0)
        }
        guard let conn, let f = conn.plain ?? conn.raw else {
            if totalIn + totalOut == 0 { return ("no_bytes", 0, 0) }
            return (alpn == "h2" ? "http2" : "no_parser", totalIn, totalOut)
        }
        let state = f.stateAtFinish ?? f.state
        if totalIn + totalOut == 0 && requests == 0 && conn.messages <= 1 { return ("no_bytes", 0, 0) }
        let reason: String
        switch state {
        case .notHTTP:
            switch f.firstBytes {
            case Int32(WJ_H1_WHY_TLS): reason = "tls_not_hooked"
            case Int32(WJ_H1_WHY_HTTP2): reason = "http2"
            default: reason = "not_http"
            }
        case .desynced: reason = f.stopError == "parse" ? "parse" : "desync"
        case .tunnel: reason = "tunnel"
        case .detecting: reason = "incomplete"
        default: reason = requests == 0 ? "incomplete" : "none"
        }
        let why = alpn == "h2" && requests == 0 ? "http2" : reason
        // Bytes past where decoding stopped (a stream that ran to its end has none).
        guard let stopAt = f.stopOffsets, state != .http, state != .closed else {
            return (why, 0, 0)
        }
        let client = f.role == .client
        let outDone = client ? stopAt.request : stopAt.response
        let inDone = client ? stopAt.response : stopAt.request
        return (why, totalIn > inDone ? totalIn - inDone : 0, totalOut > outDone ? totalOut - outDone : 0)
    }
}

// Phase times carried by a close event (CLOCK_MONOTONIC ns, 0 = did not happen).
struct Phases {
    var connected: UInt64 = 0
    var firstOut: UInt64 = 0
    var firstIn: UInt64 = 0
    var lastIO: UInt64 = 0
    var shutdown: UInt64 = 0
    var hasTCPInfo = false
    var tcpInfo = (rtt: UInt32(0), rttvar: UInt32(0), retransmits: UInt32(0), totalRetrans: UInt32(0), lost: UInt32(0))
    init() {}
    init(_ ev: wj_event) {
        connected = ev.t_connected
        firstOut = ev.t_first_out
        firstIn = ev.t_first_in
        lastIO = ev.t_last_io
        shutdown = ev.t_shutdown
        hasTCPInfo = ev.has_tcp_info != 0
        tcpInfo = (ev.rtt_us, ev.rttvar_us, ev.retransmits, ev.total_retrans, ev.lost)
    }
}

private extension Array where Element == UInt8 {
    /// The same bytes, by memcmp (elementsEqual compares them one by one, generically).
    func sameBytes(_ other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard count > 0, let o = other.baseAddress else { return true }
        return withUnsafeBufferPointer { memcmp($0.baseAddress!, o, count) == 0 }
    }
}
