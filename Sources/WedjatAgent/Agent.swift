import CWedjatCommon
import WedjatCore

// libwedjat-agent.so: the Swift aggregator, dlopen()ed by libwedjat.so's agent thread.
// Every entry point is called with the agent lock held, one thread at a time.

nonisolated(unsafe) private var api: UnsafePointer<wj_agent_api>?
nonisolated(unsafe) private var aggregator: Aggregator?
nonisolated(unsafe) private var aggregatorGeneration: UInt64 = .max
// The same, unretained: the per-message entry point uses it without a retain/release pair
// (on a busy server that pair was 4% of the agent's time). `aggregator` keeps it alive.
nonisolated(unsafe) private var unretainedAggregator: Unmanaged<Aggregator>?

@_cdecl("wedjat_agent_init")
public func wedjatAgentInit(_ given: UnsafePointer<wj_agent_api>?, _ ops: UnsafeMutablePointer<wj_agent_ops>?) -> Int32 {
    guard let given, let ops, given.pointee.version == UInt32(WJ_AGENT_API_VERSION),
          given.pointee.size == UInt32(MemoryLayout<wj_agent_api>.size),
          given.pointee.process_size == UInt32(MemoryLayout<wj_process>.stride),
          given.pointee.config_size == UInt32(MemoryLayout<wj_config>.stride),
          given.pointee.logfile_size == UInt32(MemoryLayout<wj_logfile>.stride),
          given.pointee.event_size == UInt32(MemoryLayout<wj_event>.stride),
          given.pointee.payload_size == UInt32(MemoryLayout<wj_payload>.stride),
          given.pointee.dns_size == UInt32(MemoryLayout<wj_dns_event>.stride) else { return -1 }
    api = given
    ops.pointee.handle = { ev in if let ev { current().handle(ev.pointee) } }
    ops.pointee.handle_dns = { ev in if let ev { current().handleDNS(ev.pointee) } }
    ops.pointee.handle_payload = { p in
        guard let p else { return }
        if let agg = unretainedAggregator, aggregatorGeneration == api!.pointee.proc!.pointee.generation {
            agg._withUnsafeGuaranteedRef { $0.handlePayload(p) }
        } else {
            current().handlePayload(p)
        }
    }
    ops.pointee.flush = { final, endMono, tid in
        current().flush(final: final != 0, endMono: endMono, tid: Int(tid), openCounters: { slot, id in
            var live = wj_event()
            return api!.pointee.conn_snapshot(slot, id, &live) != 0 ? live : nil
        })
    }
    ops.pointee.record_counts = { buf, cap in
        guard let buf, cap > 0 else { return 0 }
        let bytes = Array(current().recordCounts().utf8.prefix(cap - 1))
        for (i, b) in bytes.enumerated() { buf[i] = CChar(bitPattern: b) }
        buf[bytes.count] = 0
        return bytes.count
    }
    ops.pointee.dropped_records = { current().droppedRecords }
    ops.pointee.untracked_connections = { current().untrackedConnections }
    ops.pointee.open_connections = { UInt64(current().openConnectionCount) }
    return 0
}

// The aggregator of this process image; a forked child starts a new one (the copy it
// inherited describes the parent's connections).
private func current() -> Aggregator {
    let proc = api!.pointee.proc!
    if let agg = aggregator, aggregatorGeneration == proc.pointee.generation { return agg }
    let redact = proc.pointee.config.redact
    let context = ProcessContext(pid: Int(proc.pointee.pid), initMonoNs: proc.pointee.init_mono_ns,
                                 initRealNs: proc.pointee.init_real_ns,
                                 maxConnections: Int(proc.pointee.config.max_connections),
                                 redaction: HTTPRedaction(query: redact & Int32(WJ_REDACT_QUERY) != 0,
                                                          userinfo: redact & Int32(WJ_REDACT_USERINFO) != 0,
                                                          fragment: redact & Int32(WJ_REDACT_FRAGMENT) != 0),
                                 httpRecordsPerSecond: Int(proc.pointee.config.http_records),
                                 parentLog: withUnsafeBytes(of: proc.pointee.parent_log) { raw -> String? in
                                     let s = String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
                                     return s.isEmpty ? nil : s
                                 })
    let agg = Aggregator(
        context: context,
        errnoName: { api!.pointee.errno_name($0).map { String(cString: $0) } ?? "EUNKNOWN" },
        recordTake: { api!.pointee.http_record_take($0) != 0 },
        countsTake: { api!.pointee.http_counts_take($0, $1, $2, $3) },
        sink: { buf in
            wj_logfile_write(&proc.pointee.log, buf.baseAddress!.assumingMemoryBound(to: CChar.self), buf.count) != 0
        })
    aggregator = agg
    unretainedAggregator = Unmanaged.passUnretained(agg)
    aggregatorGeneration = proc.pointee.generation
    return agg
}
