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
    private var open: [UInt64: wj_event] = [:]
    private var line = JSONLine(capacity: 512)
    private var pending: [UInt8] = []
    private var pendingLines: [String: Int] = [:]
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
            if ev.err != 0 {
                connection(open: ev, closeMono: ev.t_end, bytesIn: 0, bytesOut: 0, tid: ev.tid, error: ev.err, atExit: false)
            } else if open.count < context.maxConnections {
                open[ev.conn_id] = ev
            } else {
                untrackedConnections += 1
            }
        case Int32(WJ_EV_CONN_CLOSE):
            var opened: wj_event
            if let known = open.removeValue(forKey: ev.conn_id) {
                opened = known
            } else {
                // The open event was lost (ring full) or not kept (table full): still report
                // what the close carries rather than nothing.
                opened = ev
                opened.kind = UInt16(WJ_EV_CONN_OPEN)
                opened.t_end = 0
            }
            connection(open: opened, closeMono: ev.t_end, bytesIn: ev.bytes_in, bytesOut: ev.bytes_out,
                       tid: ev.tid, error: ev.err, atExit: false)
        default:
            break
        }
    }

    // Writes what is pending. With `final`, every connection still open is reported first
    // (open_at_exit), its byte counts read live through `openCounters(fd, conn_id)`.
    public func flush(final: Bool, endMono: UInt64, tid: Int,
                      openCounters: (Int32, UInt64) -> (UInt64, UInt64)?) {
        if final {
            for ev in open.values.sorted(by: { $0.conn_id < $1.conn_id }) {
                let (bytesIn, bytesOut) = openCounters(ev.fd, ev.conn_id) ?? (0, 0)
                connection(open: ev, closeMono: endMono, bytesIn: bytesIn, bytesOut: bytesOut, tid: Int32(tid),
                           error: 0, atExit: true)
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

    private func connection(open ev: wj_event, closeMono: UInt64, bytesIn: UInt64, bytesOut: UInt64,
                            tid: Int32, error: Int32, atExit: Bool) {
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
        let blockingConnect = ev.role == UInt8(WJ_ROLE_CLIENT) && ev.t_end >= ev.t_start && ev.t_end != 0
            && (ev.a & UInt64(WJ_OPEN_NONBLOCKING)) == 0
        line.field("connect_us", blockingConnect ? Int((ev.t_end - ev.t_start) / 1000) : nil)
        line.field("bytes_in", bytesIn)
        line.field("bytes_out", bytesOut)
        line.field("error", error != 0 ? errnoName(error) : nil)
        line.field("open_at_exit", atExit)
        finishRecord("connection")
    }
}
