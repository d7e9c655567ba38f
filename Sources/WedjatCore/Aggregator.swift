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
    public init(pid: Int, initMonoNs: UInt64, initRealNs: UInt64, maxConnections: Int,
                redaction: HTTPRedaction = HTTPRedaction(), httpRecordsPerSecond: Int = 200) {
        self.httpRecordsPerSecond = httpRecordsPerSecond
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
// parsers of its byte streams (raw, and TLS plaintext when the app used a TLS library).
final class OpenConnection {
    var event: wj_event
    let host: ResolvedNames.Match?
    var raw: HTTP1Stream?
    var plain: HTTP1Stream?
    // conn_want offsets already told, by stream (WJ_PAYLOAD_OUT | WJ_PAYLOAD_PLAIN bits: 0...3)
    var published = PublishedOffsets()
    var requests = 0
    var payloads = 0                        // capture slots seen
    // The summary the last exchange went to (a connection's exchanges mostly share one):
    // found again by comparing its key, without hashing it. Valid while summaryEpoch matches.
    var summaryKey: HTTPSummaryKey?
    var summaryIndex = 0
    var summaryEpoch = -1
    var stateBeforeFinish: HTTP1State?
    init(event: wj_event, host: ResolvedNames.Match?) {
        self.event = event
        self.host = host
    }
}

// Four optional offsets by stream number. A struct of fields, not an array: an array of
// UInt64? is a generic type whose metadata the runtime builds from its mangled name the first
// time a process's aggregator opens a connection (about 25 us).
struct PublishedOffsets {
    private var s0: UInt64?, s1: UInt64?, s2: UInt64?, s3: UInt64?
    subscript(_ i: Int) -> UInt64? {
        get {
            switch i {
            case 0: return s0
            case 1: return s1
            case 2: return s2
            default: return s3
            }
        }
        set {
            switch i {
            case 0: s0 = newValue
            case 1: s1 = newValue
            case 2: s2 = newValue
            default: s3 = newValue
            }
        }
    }
}

// The record types the aggregator writes, counted in fixed slots (a [String: Int] per count
// cost a process about 30 us of generic metadata and conformance lookups at its first record).
enum AggregatorRecord: Int {
    case connection, dns, http, httpSummary
    // In name order (process_end lists them so). Iterated by number: `allCases` is an array,
    // generic metadata again.
    static let count = 4
    static func at(_ i: Int) -> AggregatorRecord { AggregatorRecord(rawValue: i) ?? .connection }
    var name: String {
        switch self {
        case .connection: return "connection"
        case .dns: return "dns"
        case .http: return "http"
        case .httpSummary: return "http_summary"
        }
    }
}

struct RecordCounts {
    private var c0 = 0, c1 = 0, c2 = 0, c3 = 0
    subscript(_ r: AggregatorRecord) -> Int {
        get {
            switch r {
            case .connection: return c0
            case .dns: return c1
            case .http: return c2
            case .httpSummary: return c3
            }
        }
        set {
            switch r {
            case .connection: c0 = newValue
            case .dns: c1 = newValue
            case .http: c2 = newValue
            case .httpSummary: c3 = newValue
            }
        }
    }
    var total: Int { c0 + c1 + c2 + c3 }
}

// Turns network events into records. Owns the open-connection table (bounded by
// maxConnections) and an output buffer; hands batches of whole lines to `sink`, which
// returns false when they could not be written (then they are counted as dropped).
public final class Aggregator {
    public let context: ProcessContext
    private let sink: (UnsafeRawBufferPointer) -> Bool
    private let errnoName: (Int32) -> String
    // Tells the capturer which bytes the parser of (slot, conn_id, stream) needs from now on.
    private let want: (UInt32, UInt64, Int32, UInt64) -> Void
    private var open: [UInt64: OpenConnection] = [:]
    private var line = JSONLine(capacity: 512)
    private var pending: [UInt8] = []
    private var pendingLines = RecordCounts()   // records in `pending`, by type
    private var writtenCounts = RecordCounts()
    private var resolved = ResolvedNames()
    // Records written, by type.
    public var written: [String: Int] {
        var d: [String: Int] = [:]
        for i in 0..<AggregatorRecord.count where writtenCounts[.at(i)] > 0 { d[AggregatorRecord.at(i).name] = writtenCounts[.at(i)] }
        return d
    }
    public private(set) var droppedRecords: UInt64 = 0
    public private(set) var untrackedConnections: UInt64 = 0
    public private(set) var unparsedHTTP: UInt64 = 0   // exchanges cut short by a gap in the capture
    private var budget: RecordBudget
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
                want: @escaping (UInt32, UInt64, Int32, UInt64) -> Void = { _, _, _, _ in },
                sink: @escaping (UnsafeRawBufferPointer) -> Bool) {
        self.context = context
        self.errnoName = errnoName
        self.want = want
        self.sink = sink
        budget = RecordBudget(perSecond: context.httpRecordsPerSecond, burst: context.httpRecordsPerSecond * 10)
        pending.reserveCapacity(Aggregator.flushThreshold + 4096)
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
            let host = ev.role == UInt8(WJ_ROLE_CLIENT) ? resolved.lookup(ev.peer, connectStartMono: ev.t_start) : nil
            if ev.err != 0 {
                connection(open: ev, host: host, close: nil, closeMono: ev.t_end, tid: ev.tid, error: ev.err, atExit: false,
                           requests: 0)
            } else if open.count < context.maxConnections {
                open[ev.conn_id] = OpenConnection(event: ev, host: host)
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

    // Bytes of a connection, for its HTTP parser.
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
        let stream: HTTP1Stream
        if let s = plain ? conn.plain : conn.raw {
            stream = s
        } else {
            let role: HTTPRole = conn.event.role == UInt8(WJ_ROLE_SERVER) ? .server : .client
            stream = HTTP1Stream(role: role, redaction: context.redaction)
            // Past the record budget an exchange is only counted (http_summary): decided at
            // its start, so that its path and header strings are never built.
            // (The aggregator owns its connections and their streams: unowned(unsafe) saves an
            // atomic check per request.)
            stream.wantsDetail = { [unowned(unsafe) self] mono in self.budget.take(mono: mono) }
            if plain { conn.plain = stream } else { conn.raw = stream }
        }
        lastConn = conn
        conn.payloads += 1
        let dir: HTTPDirection = (p.pointee.flags & UInt16(WJ_PAYLOAD_OUT)) != 0 ? .out : .in
        // The bytes in place (not a copy of the whole slot's data array): only `len` of them
        // were copied out of the ring.
        let len = Int(min(p.pointee.len, UInt32(Aggregator.payloadCapacity)))
        let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(p) + Aggregator.payloadDataOffset, count: len)
        stream.feed(dir, offset: p.pointee.offset, bytes: bytes, ioEnd: p.pointee.io_end, mono: p.pointee.t)
        publishWants(conn, stream: stream, plain: plain)
        stream.drainCompleted { http($0, conn: conn, tls: plain, tid: p.pointee.tid) }
    }

    // Called for every captured slot: no allocation, no hashing.
    private func publishWants(_ conn: OpenConnection, stream: HTTP1Stream, plain: Bool) {
        publishWant(conn, stream: stream, plain: plain, dir: .out)
        publishWant(conn, stream: stream, plain: plain, dir: .in)
    }

    private func publishWant(_ conn: OpenConnection, stream: HTTP1Stream, plain: Bool, dir: HTTPDirection) {
        let which = Int32(dir == .out ? WJ_PAYLOAD_OUT : 0) | Int32(plain ? WJ_PAYLOAD_PLAIN : 0)
        let offset = stream.wantFrom(dir)
        if conn.published[Int(which)] != offset {
            conn.published[Int(which)] = offset
            want(conn.event.conn_slot, conn.event.conn_id, which, offset)
        }
    }

    // The connection ended (`close`: its final counters, when known). Each parser first learns
    // how far its streams went: a body whose last captured slot was dropped (a full ring)
    // still ends, at the connection's last I/O.
    private func finishHTTP(_ conn: OpenConnection, close: wj_event?, mono: UInt64) {
        conn.stateBeforeFinish = (conn.plain ?? conn.raw)?.state
        for (stream, tls) in [(conn.raw, false), (conn.plain, true)] {
            guard let stream else { continue }
            if let close {
                let last = close.t_last_io != 0 ? close.t_last_io : mono
                let (totalIn, totalOut) = tls ? (close.plain_in, close.plain_out) : (close.bytes_in, close.bytes_out)
                for (dir, total) in [(HTTPDirection.out, totalOut), (.in, totalIn)] where total > 0 {
                    stream.feed(dir, offset: total, bytes: UnsafeRawBufferPointer(start: nil, count: 0), ioEnd: total, mono: last)
                }
            }
            stream.finish(mono: mono)
            stream.drainCompleted { http($0, conn: conn, tls: tls, tid: conn.event.tid) }
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
            for a in addrs { resolved.note(a, name: name, durationUs: durationUs, endMono: ev.t_end) }
        }
        begin("dns", mono: ev.t_end, tid: ev.tid)
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
        let sorted = summaryIndex.map { ($0.key, summaryEntries[$0.value]) }
            .sorted { ($0.1.firstMono, $0.0.method) < ($1.1.firstMono, $1.0.method) }
        summaryIndex.removeAll(keepingCapacity: true)
        summaryEntries.removeAll(keepingCapacity: true)
        summaryEpoch += 1
        for (key, e) in sorted {
            begin("http_summary", mono: mono, tid: tid)
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
        for i in 0..<AggregatorRecord.count where writtenCounts[.at(i)] > 0 {
            let r = AggregatorRecord.at(i)
            s += "\"" + r.name + "\":" + String(writtenCounts[r]) + ","
        }
        return s
    }

    // ------------------------------------------------------------------ records

    private func begin(_ type: StaticString, mono: UInt64, tid: Int32) {
        line.reset()
        line.beginObject()
        line.field("type", type.description)
        line.field("ts", context.epochMicros(mono))
        line.field("pid", context.pid)
        line.field("tid", Int(tid))
    }

    private func finishRecord(_ type: AggregatorRecord) {
        line.endObject()
        line.endLine()
        pending.append(contentsOf: line.bytes)
        pendingLines[type] += 1
        if pending.count >= Aggregator.flushThreshold { writePending() }
    }

    private func writePending() {
        guard !pending.isEmpty else { return }
        let ok = pending.withUnsafeBytes { sink($0) }
        if ok {
            for i in 0..<AggregatorRecord.count { writtenCounts[.at(i)] += pendingLines[.at(i)] }
        } else {
            droppedRecords += UInt64(pendingLines.total)
        }
        pending.removeAll(keepingCapacity: true)
        pendingLines = RecordCounts()
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
        begin("http", mono: endMono, tid: tid)
        line.field("conn_id", ev.conn_id)
        line.field("role", ev.role == UInt8(WJ_ROLE_SERVER) ? "server" : "client")
        line.field("scheme", tls ? "https" : "http")
        line.field("method", ex.method)
        line.field("host", ex.host ?? conn.host?.name)
        line.field("path", ex.path)
        line.field("version", ex.version)
        line.field("status", ex.status)
        if let v = ex.responseVersion, v != ex.version { line.field("response_version", v) }
        if ex.interim > 0 { line.field("interim_responses", ex.interim) }
        line.field("peer", Addresses.format(ev.peer))
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
        finishRecord(.http)
    }

    // The index in summaryEntries of the summary `ex` counts in, created if new.
    private func summarySlot(_ ex: HTTPExchange, conn: OpenConnection, tls: Bool) -> Int {
        let scheme = tls ? "https" : "http", host = ex.host ?? conn.host?.name
        let role = conn.event.role == UInt8(WJ_ROLE_SERVER) ? "server" : "client"
        if conn.summaryEpoch == summaryEpoch, let k = conn.summaryKey, k.status == ex.status, k.error == ex.error,
           k.method == ex.method, k.host == host, k.version == ex.version, k.scheme == scheme, k.role == role {
            return conn.summaryIndex
        }
        let key = HTTPSummaryKey(role: role, scheme: scheme, method: ex.method, host: host, version: ex.version,
                                 status: ex.status, error: ex.error)
        let index: Int
        if let found = summaryIndex[key] {
            index = found
        } else {
            index = summaryEntries.count
            summaryEntries.append(HTTPSummaryEntry())
            summaryIndex[key] = index
        }
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
        begin("connection", mono: closeMono, tid: tid)
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
        line.field("bytes_in", close?.bytes_in ?? 0)
        line.field("bytes_out", close?.bytes_out ?? 0)
        if (ev.flags & UInt32(WJ_OPEN_HTTP)) != 0 {
            line.field("http_requests", requests)
            if requests == 0, let conn = httpConn {
                // Why there is none: no byte captured, not HTTP, or a gap in needed bytes.
                let why: String
                switch conn.stateBeforeFinish {
                case nil: why = conn.payloads == 0 ? "no_bytes" : "no_parser"
                case .notHTTP?: why = "not_http"
                case .desynced?: why = "desync"
                case .detecting?: why = "incomplete"
                default: why = "none"
                }
                line.field("http_none", why)
            }
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
