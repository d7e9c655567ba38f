import CWedjatCommon

// What the aggregator needs to know about the process image it reports on.
public struct ProcessContext {
    public var pid: Int
    public var initMonoNs: UInt64
    public var initRealNs: UInt64
    public var maxConnections: Int
    public init(pid: Int, initMonoNs: UInt64, initRealNs: UInt64, maxConnections: Int) {
        self.pid = pid
        self.initMonoNs = initMonoNs
        self.initRealNs = initRealNs
        self.maxConnections = maxConnections
    }
    // Monotonic event time -> microseconds since the epoch (one offset for the whole image).
    public func epochMicros(_ mono: UInt64) -> Int {
        let delta = Int64(bitPattern: mono &- initMonoNs)
        return Int((Int64(bitPattern: initRealNs) &+ delta) / 1000)
    }
}

// Turns network events into records. Owns the open-connection table (bounded by
// maxConnections) and an output buffer; hands batches of whole lines to `sink`, which
// returns false when they could not be written (then they are counted as dropped).
public final class Aggregator {
    public let context: ProcessContext
    private let sink: (UnsafeRawBufferPointer) -> Bool
    private let errnoName: (Int32) -> String
    private var open: [UInt64: (event: wj_event, host: ResolvedNames.Match?)] = [:]
    private var line = JSONLine(capacity: 512)
    private var pending: [UInt8] = []
    private var pendingLines: [String: Int] = [:]
    private var resolved = ResolvedNames()
    public private(set) var written: [String: Int] = [:]
    public private(set) var droppedRecords: UInt64 = 0
    public private(set) var untrackedConnections: UInt64 = 0

    static let flushThreshold = 64 * 1024

    public init(context: ProcessContext, errnoName: @escaping (Int32) -> String,
                sink: @escaping (UnsafeRawBufferPointer) -> Bool) {
        self.context = context
        self.errnoName = errnoName
        self.sink = sink
        pending.reserveCapacity(Aggregator.flushThreshold + 4096)
    }

    public var openConnectionCount: Int { open.count }

    public func handle(_ ev: wj_event) {
        switch Int32(ev.kind) {
        case Int32(WJ_EV_CONN_OPEN):
            // The name is looked up now, in event order: a later lookup must not change it.
            let host = ev.role == UInt8(WJ_ROLE_CLIENT) ? resolved.lookup(ev.peer, connectStartMono: ev.t_start) : nil
            if ev.err != 0 {
                connection(open: ev, host: host, closeMono: ev.t_end, bytesIn: 0, bytesOut: 0, tid: ev.tid,
                           error: ev.err, atExit: false)
            } else if open.count < context.maxConnections {
                open[ev.conn_id] = (ev, host)
            } else {
                untrackedConnections += 1
            }
        case Int32(WJ_EV_CONN_CLOSE):
            var opened: wj_event
            var host: ResolvedNames.Match? = nil
            if let known = open.removeValue(forKey: ev.conn_id) {
                opened = known.event
                host = known.host
            } else {
                // The open event was lost (ring full) or not kept (table full): still report
                // what the close carries rather than nothing.
                opened = ev
                opened.kind = UInt16(WJ_EV_CONN_OPEN)
                opened.t_end = 0
            }
            connection(open: opened, host: host, closeMono: ev.t_end, bytesIn: ev.bytes_in, bytesOut: ev.bytes_out,
                       tid: ev.tid, error: ev.err, atExit: false, phases: Phases(ev))
        default:
            break
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
        finishRecord("dns")
    }

    // Writes what is pending. With `final`, every connection still open is reported first
    // (open_at_exit), its counters and phase times read live through `openCounters(fd, conn_id)`.
    public func flush(final: Bool, endMono: UInt64, tid: Int,
                      openCounters: (Int32, UInt64) -> wj_event?) {
        if final {
            for (ev, host) in open.values.sorted(by: { $0.event.conn_id < $1.event.conn_id }) {
                let live = openCounters(ev.fd, ev.conn_id)
                connection(open: ev, host: host, closeMono: endMono, bytesIn: live?.bytes_in ?? 0, bytesOut: live?.bytes_out ?? 0,
                           tid: Int32(tid), error: 0, atExit: true, phases: live.map { Phases($0) } ?? Phases())
            }
            open.removeAll()
        }
        writePending()
    }

    // "type":count pairs of what this aggregator wrote, for process_end.
    public func recordCounts() -> String {
        written.sorted(by: { $0.key < $1.key }).map { "\"\($0.key)\":\($0.value)," }.joined()
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

    private func finishRecord(_ type: String) {
        line.endObject()
        line.endLine()
        pending.append(contentsOf: line.bytes)
        pendingLines[type, default: 0] += 1
        if pending.count >= Aggregator.flushThreshold { writePending() }
    }

    private func writePending() {
        guard !pending.isEmpty else { return }
        let ok = pending.withUnsafeBytes { sink($0) }
        if ok {
            written.merge(pendingLines, uniquingKeysWith: +)
        } else {
            droppedRecords += UInt64(pendingLines.values.reduce(0, +))
        }
        pending.removeAll(keepingCapacity: true)
        pendingLines.removeAll(keepingCapacity: true)
    }

    private func connection(open ev: wj_event, host: ResolvedNames.Match?, closeMono: UInt64, bytesIn: UInt64, bytesOut: UInt64,
                            tid: Int32, error: Int32, atExit: Bool, phases: Phases = Phases()) {
        begin("connection", mono: closeMono, tid: tid)
        line.field("conn_id", ev.conn_id)
        line.field("fd", Int(ev.fd))
        line.field("transport", "tcp")
        line.field("family", Addresses.family(ev.peer) ?? Addresses.family(ev.local))
        line.field("role", ev.role == UInt8(WJ_ROLE_SERVER) ? "server" : "client")
        line.field("local", Addresses.format(ev.local))
        line.field("peer", Addresses.format(ev.peer))
        let openTs = context.epochMicros(ev.t_start)
        let closeTs = context.epochMicros(closeMono)
        line.field("open_ts", openTs)
        line.field("close_ts", closeTs)
        line.field("duration_us", max(0, closeTs - openTs))
        let client = ev.role == UInt8(WJ_ROLE_CLIENT)
        let blockingConnect = client && ev.t_end >= ev.t_start && ev.t_end != 0
            && (ev.a & UInt64(WJ_OPEN_NONBLOCKING)) == 0
        // Connect end: a blocking connect's return, or when a non-blocking one was seen
        // complete (SO_ERROR == 0, a repeated connect, or the first byte moved).
        let connectedMono: UInt64? = !client ? nil : blockingConnect ? ev.t_end : (phases.connected != 0 ? phases.connected : nil)
        line.field("connect_us", connectedMono.map { Int(($0 &- ev.t_start) / 1000) })
        line.field("connect_end_ts", connectedMono.map { context.epochMicros($0) })
        line.field("first_byte_out_ts", phases.firstOut != 0 ? context.epochMicros(phases.firstOut) : nil)
        line.field("first_byte_in_ts", phases.firstIn != 0 ? context.epochMicros(phases.firstIn) : nil)
        line.field("last_byte_ts", phases.lastIO != 0 ? context.epochMicros(phases.lastIO) : nil)
        line.field("bytes_in", bytesIn)
        line.field("bytes_out", bytesOut)
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
        line.field("open_at_exit", atExit)
        finishRecord("connection")
    }
}

// Phase times carried by a close event (CLOCK_MONOTONIC ns, 0 = did not happen).
struct Phases {
    var connected: UInt64 = 0
    var firstOut: UInt64 = 0
    var firstIn: UInt64 = 0
    var lastIO: UInt64 = 0
    var hasTCPInfo = false
    var tcpInfo = (rtt: UInt32(0), rttvar: UInt32(0), retransmits: UInt32(0), totalRetrans: UInt32(0), lost: UInt32(0))
    init() {}
    init(_ ev: wj_event) {
        connected = ev.t_connected
        firstOut = ev.t_first_out
        firstIn = ev.t_first_in
        lastIO = ev.t_last_io
        hasTCPInfo = ev.has_tcp_info != 0
        tcpInfo = (ev.rtt_us, ev.rttvar_us, ev.retransmits, ev.total_retrans, ev.lost)
    }
}
