import Foundation

// Typed views of the NDJSON records described in docs/LOG_FORMAT.md.
// Decoding is field by field (not Codable) so that one odd field gives a precise warning,
// unknown fields are ignored, and `null` is accepted wherever the format allows it.

/// The log schema this reader understands.
public let supportedSchema = 1

public struct ProcessStart: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var schema: Int
    public var wedjatVersion: String?
    public var exe: String?
    public var argv: [String]
    public var argvMode: String?
    public var ppid: Int?
    public var parentLog: String?
    public var execFrom: String?
    public var log: String?
    public var hostname: String?
    public var processStartTs: Int64?
    public var procStartTicks: Int64?
    public var configWarnings: [String]
    /// `config.stall_ms`: the stall threshold (0: detection off); nil for logs older than it.
    public var stallMs: Int?
    /// Rotated logs (LogSegments.swift): which segment this copy of the line begins, and when
    /// that segment began; nil in a log that never rotated.
    public var segment: Int?
    public var segmentStartTs: Int64?
    /// Logical CPUs the process may run on.
    public var cpus: Int?

    public init(ts: Int64, pid: Int, tid: Int? = nil, schema: Int = supportedSchema, wedjatVersion: String? = nil,
                exe: String? = nil, argv: [String] = [], argvMode: String? = nil, ppid: Int? = nil,
                parentLog: String? = nil, execFrom: String? = nil, log: String? = nil, hostname: String? = nil,
                processStartTs: Int64? = nil, procStartTicks: Int64? = nil, configWarnings: [String] = [],
                stallMs: Int? = nil, segment: Int? = nil, segmentStartTs: Int64? = nil, cpus: Int? = nil) {
        self.ts = ts; self.pid = pid; self.tid = tid; self.schema = schema; self.wedjatVersion = wedjatVersion
        self.exe = exe; self.argv = argv; self.argvMode = argvMode; self.ppid = ppid; self.parentLog = parentLog
        self.execFrom = execFrom; self.log = log; self.hostname = hostname; self.processStartTs = processStartTs
        self.procStartTicks = procStartTicks; self.configWarnings = configWarnings; self.stallMs = stallMs
        self.segment = segment; self.segmentStartTs = segmentStartTs; self.cpus = cpus
    }
}

public struct ConnectionRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var connId: Int64?
    public var fd: Int?
    public var transport: String?
    public var family: String?
    public var role: String
    public var local: String?
    public var peer: String?
    public var openTs: Int64?
    public var closeTs: Int64?
    public var durationUs: Int64?
    public var connectUs: Int64?
    public var bytesIn: Int64
    public var bytesOut: Int64
    public var error: String?
    public var openAtExit: Bool
    /// The name the app resolved the peer address from, when wedjat saw the lookup.
    public var host: String?
    /// `connect`, `io`, `tls` (or another phase a newer writer names); nil for older logs.
    public var errorPhase: String?
    public var tls: TLSInfo?
    public var shutdownTs: Int64?
    /// HTTP/1 requests or HTTP/2 streams seen on it; nil when HTTP parsing was off, for UDP,
    /// or in older logs.
    public var httpRequests: Int64?
    /// "HTTP/2" for a connection decoded as HTTP/2; `httpStopped` why its decoding stopped.
    public var httpVersion: String?
    public var httpStopped: String?
    /// The lookup that led to this connection (client only, when it is this connection's own).
    public var dnsUs: Int64?
    /// Why an HTTP-eligible connection that carried bytes has no decoded exchange (`not_http`,
    /// `http2`, `tls_not_hooked`, ...: docs/LOG_FORMAT.md); nil otherwise or in older logs.
    public var httpNone: String?
    /// The bytes that were not decoded, and why: all of them with `httpNone`, or those after
    /// decoding stopped partway; nil when everything was decoded (or the log is older).
    public var httpUndecoded: Undecoded?
    /// The process forked while the connection was open: a child may have continued it.
    public var forkedWhileOpen: Bool
    /// In a forked child: the parent's connection this one continues (its log and conn_id).
    public var inheritedFrom: Inherited?

    public struct Undecoded: Sendable, Equatable {
        public var reason: String
        public var bytesIn: Int64
        public var bytesOut: Int64
        public init(reason: String, bytesIn: Int64, bytesOut: Int64) {
            self.reason = reason; self.bytesIn = bytesIn; self.bytesOut = bytesOut
        }
    }

    public struct Inherited: Sendable, Equatable, Hashable {
        public var log: String
        public var connId: Int64
        public init(log: String, connId: Int64) { self.log = log; self.connId = connId }
    }

    public init(ts: Int64, pid: Int, tid: Int? = nil, connId: Int64? = nil, fd: Int? = nil, transport: String? = "tcp",
                family: String? = "ipv4", role: String, local: String? = nil, peer: String? = nil,
                openTs: Int64? = nil, closeTs: Int64? = nil, durationUs: Int64? = nil, connectUs: Int64? = nil,
                bytesIn: Int64 = 0, bytesOut: Int64 = 0, error: String? = nil, openAtExit: Bool = false,
                host: String? = nil, errorPhase: String? = nil, tls: TLSInfo? = nil, shutdownTs: Int64? = nil,
                httpRequests: Int64? = nil, dnsUs: Int64? = nil, httpVersion: String? = nil, httpStopped: String? = nil,
                httpNone: String? = nil, httpUndecoded: Undecoded? = nil,
                forkedWhileOpen: Bool = false, inheritedFrom: Inherited? = nil) {
        self.ts = ts; self.pid = pid; self.tid = tid; self.connId = connId; self.fd = fd; self.transport = transport
        self.family = family; self.role = role; self.local = local; self.peer = peer; self.openTs = openTs
        self.closeTs = closeTs; self.durationUs = durationUs; self.connectUs = connectUs; self.bytesIn = bytesIn
        self.bytesOut = bytesOut; self.error = error; self.openAtExit = openAtExit; self.host = host
        self.errorPhase = errorPhase; self.tls = tls; self.shutdownTs = shutdownTs; self.httpRequests = httpRequests
        self.dnsUs = dnsUs; self.httpVersion = httpVersion; self.httpStopped = httpStopped
        self.httpNone = httpNone; self.httpUndecoded = httpUndecoded
        self.forkedWhileOpen = forkedWhileOpen; self.inheritedFrom = inheritedFrom
    }

    /// `duration_us`, or `close_ts - open_ts` when an older writer left it out.
    public var effectiveDurationUs: Int64? {
        if let durationUs, durationUs >= 0 { return durationUs }
        if let openTs, let closeTs, closeTs >= openTs { return closeTs - openTs }
        return nil
    }
}

/// A connection's `tls` object: the handshake seen through the app's TLS library.
public struct TLSInfo: Sendable, Equatable {
    public var library: String?
    public var startTs: Int64?
    public var endTs: Int64?
    /// nil when the handshake never finished.
    public var handshakeUs: Int64?
    public var version: String?
    public var alpn: String?
    /// The TLS phase as HAR's `ssl` counts it: from the connect's end (a server: the accept) to
    /// the handshake's end.
    public var phaseUs: Int64?
    public init(library: String? = nil, startTs: Int64? = nil, endTs: Int64? = nil, handshakeUs: Int64? = nil,
                version: String? = nil, alpn: String? = nil, phaseUs: Int64? = nil) {
        self.library = library; self.startTs = startTs; self.endTs = endTs; self.handshakeUs = handshakeUs
        self.version = version; self.alpn = alpn; self.phaseUs = phaseUs
    }
}

/// One HTTP/1.x exchange (`http` record).
public struct HTTPRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var connId: Int64?
    public var role: String
    public var scheme: String?
    public var method: String?
    public var host: String?
    public var path: String?
    /// The request line's version, `HTTP/1.1` or `HTTP/1.0`; nil in logs written before it was.
    public var version: String?
    /// The final response's version where it differs from `version` (the record only says it then).
    public var responseVersion: String?
    /// The final status; nil when no response was seen.
    public var status: Int?
    public var interimResponses: Int?
    public var peer: String?
    public var requestIndex: Int?
    public var reused: Bool?
    public var requestStartTs: Int64?
    public var requestEndTs: Int64?
    public var responseStartTs: Int64?
    public var responseEndTs: Int64?
    public var ttfbUs: Int64?
    public var waitUs: Int64?
    public var durationUs: Int64?
    public var requestHeaderBytes: Int64
    public var requestBodyBytes: Int64
    public var responseHeaderBytes: Int64
    public var responseBodyBytes: Int64
    public var complete: Bool?
    public var upgraded: Bool
    /// `incomplete`, `desync`, `parse`, or nil.
    public var error: String?
    /// The logged headers (`request.host`, `response.content-type`, ...).
    public var headers: [String: String]
    /// HTTP/2 streams (`version` "HTTP/2"): the stream id, push, who reset it, gRPC.
    public var streamId: Int?
    public var pushed = false
    public var resetBy: String?
    public var grpc: GRPCRecord?
    /// An exchange handed off to a forked child and joined with the child's half: the child's
    /// pid (Handoff.swift); nil otherwise.
    public var continuedBy: Int?

    public init(ts: Int64, pid: Int, tid: Int? = nil, connId: Int64? = nil, role: String, scheme: String? = "http",
                method: String? = "GET", host: String? = nil, path: String? = nil, status: Int? = nil,
                interimResponses: Int? = nil, peer: String? = nil, requestIndex: Int? = nil, reused: Bool? = nil,
                version: String? = nil, responseVersion: String? = nil,
                requestStartTs: Int64? = nil, requestEndTs: Int64? = nil, responseStartTs: Int64? = nil,
                responseEndTs: Int64? = nil, ttfbUs: Int64? = nil, waitUs: Int64? = nil, durationUs: Int64? = nil,
                requestHeaderBytes: Int64 = 0, requestBodyBytes: Int64 = 0, responseHeaderBytes: Int64 = 0,
                responseBodyBytes: Int64 = 0, complete: Bool? = nil, upgraded: Bool = false, error: String? = nil,
                headers: [String: String] = [:]) {
        self.ts = ts; self.pid = pid; self.tid = tid; self.connId = connId; self.role = role; self.scheme = scheme
        self.method = method; self.host = host; self.path = path; self.status = status
        self.interimResponses = interimResponses; self.peer = peer; self.requestIndex = requestIndex
        self.reused = reused; self.version = version; self.responseVersion = responseVersion
        self.requestStartTs = requestStartTs; self.requestEndTs = requestEndTs
        self.responseStartTs = responseStartTs; self.responseEndTs = responseEndTs; self.ttfbUs = ttfbUs
        self.waitUs = waitUs; self.durationUs = durationUs; self.requestHeaderBytes = requestHeaderBytes
        self.requestBodyBytes = requestBodyBytes; self.responseHeaderBytes = responseHeaderBytes
        self.responseBodyBytes = responseBodyBytes; self.complete = complete; self.upgraded = upgraded
        self.error = error; self.headers = headers
    }

    /// TTFB, wait and total from the record's timestamps, where it has them: the writer rounds
    /// `ttfb_us`, `duration_us` and the timestamps separately (they may differ by 1 us), and
    /// every view (the report's percentiles, the waterfall, HAR, trace, OTLP) must give one
    /// exchange one total whose phases add up (docs/REPORT_JSON.md, "Durations").
    mutating func takeDurationsFromTimes() {
        guard let start = requestStartTs else { return }
        if let first = responseStartTs {
            ttfbUs = first - start
            if let end = requestEndTs { waitUs = first >= end ? first - end : nil }
        }
        if let last = responseEndTs { durationUs = last - start }
    }

    /// The final response's version: as the record says, else the request's when a response
    /// was seen; nil without a response or in logs written before versions were.
    public var finalResponseVersion: String? { status == nil ? nil : responseVersion ?? version }

    public var isHTTP2: Bool { version == "HTTP/2" }
}

/// The `grpc` object of an HTTP/2 stream's `http` record.
public struct GRPCRecord: Sendable, Equatable {
    public var service: String?
    public var method: String?
    public var status: Int?
    public var statusName: String?
    public var message: String?
    public var requestMessages: Int?
    public var responseMessages: Int?

    public init(service: String? = nil, method: String? = nil, status: Int? = nil, statusName: String? = nil,
                message: String? = nil, requestMessages: Int? = nil, responseMessages: Int? = nil) {
        self.service = service; self.method = method; self.status = status; self.statusName = statusName
        self.message = message; self.requestMessages = requestMessages; self.responseMessages = responseMessages
    }

    /// `package.Service/Method`, the name gRPC tools give a call.
    public var fullMethod: String? {
        guard let service, let method else { return nil }
        return service + "/" + method
    }
}

/// An `http_summary` distribution: already aggregated by the writer (values within about 6%).
public struct SummaryDistribution: Sendable, Equatable {
    public var count: Int64
    public var p50: Int64
    public var p90: Int64
    public var p99: Int64
    public var max: Int64
    /// Exact counts on fixed bounds (duration only; absent in logs written before them).
    public var buckets: BoundedCounts?
    public init(count: Int64, p50: Int64, p90: Int64, p99: Int64, max: Int64, buckets: BoundedCounts? = nil) {
        self.count = count; self.p50 = p50; self.p90 = p90; self.p99 = p99; self.max = max; self.buckets = buckets
    }
}

/// Values counted exactly between fixed bounds: `counts[i]` in (bounds[i-1], bounds[i]], the
/// last one above the last bound; with their sum and minimum (an OpenTelemetry explicit-bucket
/// histogram's data).
public struct BoundedCounts: Sendable, Equatable {
    public var bounds: [Int64]
    public var counts: [Int64]
    public var sum: Int64
    public var min: Int64
    public init(bounds: [Int64], counts: [Int64], sum: Int64, min: Int64) {
        self.bounds = bounds; self.counts = counts; self.sum = sum; self.min = min
    }
}

/// Exchanges past the writer's record budget, counted per (role, scheme, method, host,
/// version, status, error).
public struct HTTPSummaryRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var role: String
    public var scheme: String?
    public var method: String?
    public var host: String?
    /// The request line's version (`HTTP/1.1`); nil in logs written before it was a key.
    public var version: String?
    public var status: Int?
    /// The exchanges' error (`incomplete`, `desync`, `parse`); nil for those without one, and
    /// in logs written before it was a key (then `errors` counts them).
    public var error: String?
    public var count: Int64
    public var errors: Int64
    public var requestBytes: Int64
    public var responseBytes: Int64
    public var firstTs: Int64?
    public var lastTs: Int64?
    public var durationUs: SummaryDistribution?
    public var ttfbUs: SummaryDistribution?

    public init(ts: Int64, pid: Int, tid: Int? = nil, role: String, scheme: String? = "http", method: String? = "GET",
                host: String? = nil, version: String? = nil, status: Int? = nil, error: String? = nil, count: Int64,
                errors: Int64 = 0, requestBytes: Int64 = 0,
                responseBytes: Int64 = 0, firstTs: Int64? = nil, lastTs: Int64? = nil,
                durationUs: SummaryDistribution? = nil, ttfbUs: SummaryDistribution? = nil) {
        self.ts = ts; self.pid = pid; self.tid = tid; self.role = role; self.scheme = scheme; self.method = method
        self.host = host; self.version = version; self.status = status; self.error = error
        self.count = count; self.errors = errors
        self.requestBytes = requestBytes; self.responseBytes = responseBytes; self.firstTs = firstTs
        self.lastTs = lastTs; self.durationUs = durationUs; self.ttfbUs = ttfbUs
    }
}

public struct DNSRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var api: String?
    public var name: String?
    public var durationUs: Int64?
    public var answers: Int
    public var error: String?
    public var tid: Int?
    /// When the call was made (`ts` is its return).
    public var startTs: Int64?
    /// Up to 8 of the addresses returned.
    public var addresses: [String]
    public init(ts: Int64, pid: Int, api: String? = nil, name: String? = nil, durationUs: Int64? = nil,
                answers: Int = 0, error: String? = nil, tid: Int? = nil, startTs: Int64? = nil, addresses: [String] = []) {
        self.ts = ts; self.pid = pid; self.api = api; self.name = name; self.durationUs = durationUs
        self.answers = answers; self.error = error; self.tid = tid; self.startTs = startTs; self.addresses = addresses
    }
}

/// A `sample` record: the process's vitals over one interval. A group wedjat could not read
/// (`{"unavailable": "<why>"}`) leaves its values nil and its reason in `unavailable`.
public struct SampleRecord: Sendable, Equatable {
    public struct ThreadCPU: Sendable, Equatable {
        public var tid: Int
        public var name: String?
        public var cpuPct: Double
        public init(tid: Int, name: String? = nil, cpuPct: Double) { self.tid = tid; self.name = name; self.cpuPct = cpuPct }
    }
    public struct Battery: Sendable, Equatable {
        public var name: String?
        public var capacityPct: Int?
        public var status: String?
        public init(name: String? = nil, capacityPct: Int? = nil, status: String? = nil) {
            self.name = name; self.capacityPct = capacityPct; self.status = status
        }
    }

    public var ts: Int64
    public var pid: Int
    public var seq: Int?
    public var atExit: Bool
    public var intervalStartTs: Int64?
    public var intervalUs: Int64?
    public var cpuUserPct: Double?
    public var cpuSystemPct: Double?
    public var cpuTotalPct: Double?
    /// Totals since the process started.
    public var cpuUserUs: Int64?
    public var cpuSystemUs: Int64?
    public var topThreads: [ThreadCPU]
    public var systemBusyPct: Double?
    public var rssBytes: Int64?
    public var peakRssBytes: Int64?
    public var virtualBytes: Int64?
    public var threads: Int?
    public var fds: Int?
    /// Connections the aggregator tracks as open at the sample (newer writers only).
    public var openConnections: Int?
    public var voluntaryCtxSwitches: Int64?
    public var involuntaryCtxSwitches: Int64?
    public var minorFaults: Int64?
    public var majorFaults: Int64?
    public var raplEnergyJ: Double?
    public var raplWatts: Double?
    public var raplIntervalUs: Int64?
    public var batteries: [Battery]?
    /// Reasons of unavailable groups, by group name (`cpu`, `system_cpu`, `memory`, `rapl`, `battery`, ...).
    public var unavailable: [String: String]
    /// Threads that waited in an event loop during the interval (StallRecords.swift).
    public var loops: [LoopStats] = []

    public init(ts: Int64, pid: Int, seq: Int? = nil, atExit: Bool = false, intervalStartTs: Int64? = nil,
                intervalUs: Int64? = nil, cpuUserPct: Double? = nil, cpuSystemPct: Double? = nil,
                cpuTotalPct: Double? = nil, cpuUserUs: Int64? = nil, cpuSystemUs: Int64? = nil,
                topThreads: [ThreadCPU] = [], systemBusyPct: Double? = nil, rssBytes: Int64? = nil,
                peakRssBytes: Int64? = nil, virtualBytes: Int64? = nil, threads: Int? = nil, fds: Int? = nil,
                voluntaryCtxSwitches: Int64? = nil, involuntaryCtxSwitches: Int64? = nil, minorFaults: Int64? = nil,
                majorFaults: Int64? = nil, raplEnergyJ: Double? = nil, raplWatts: Double? = nil,
                raplIntervalUs: Int64? = nil, batteries: [Battery]? = nil, unavailable: [String: String] = [:]) {
        self.ts = ts; self.pid = pid; self.seq = seq; self.atExit = atExit; self.intervalStartTs = intervalStartTs
        self.intervalUs = intervalUs; self.cpuUserPct = cpuUserPct; self.cpuSystemPct = cpuSystemPct
        self.cpuTotalPct = cpuTotalPct; self.cpuUserUs = cpuUserUs; self.cpuSystemUs = cpuSystemUs
        self.topThreads = topThreads; self.systemBusyPct = systemBusyPct; self.rssBytes = rssBytes
        self.peakRssBytes = peakRssBytes; self.virtualBytes = virtualBytes; self.threads = threads; self.fds = fds
        self.voluntaryCtxSwitches = voluntaryCtxSwitches; self.involuntaryCtxSwitches = involuntaryCtxSwitches
        self.minorFaults = minorFaults; self.majorFaults = majorFaults; self.raplEnergyJ = raplEnergyJ
        self.raplWatts = raplWatts; self.raplIntervalUs = raplIntervalUs; self.batteries = batteries
        self.unavailable = unavailable
    }
}

/// A `startup` record: exec → constructor → main → ready of one process image.
public struct StartupRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var execTs: Int64?
    /// `exec` (precise) or `process_start` (the kernel's start time, in clock ticks).
    public var execSource: String?
    public var execResolutionUs: Int64?
    public var constructorUs: Int64?
    public var mainUs: Int64?
    public var readyUs: Int64?
    public var readyCall: String?

    public init(ts: Int64, pid: Int, execTs: Int64? = nil, execSource: String? = nil, execResolutionUs: Int64? = nil,
                constructorUs: Int64? = nil, mainUs: Int64? = nil, readyUs: Int64? = nil, readyCall: String? = nil) {
        self.ts = ts; self.pid = pid; self.execTs = execTs; self.execSource = execSource
        self.execResolutionUs = execResolutionUs; self.constructorUs = constructorUs; self.mainUs = mainUs
        self.readyUs = readyUs; self.readyCall = readyCall
    }
}

/// `warning` (something wedjat could not do) and `exec_failed` records: a message to show.
public struct NoteRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var type: String
    public var message: String
}

public struct ForkRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var childPid: Int
    public init(ts: Int64, pid: Int, tid: Int? = nil, childPid: Int) {
        self.ts = ts; self.pid = pid; self.tid = tid; self.childPid = childPid
    }
}

public struct DropsRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var droppedEvents: Int64
    public var droppedRecords: Int64
    public init(ts: Int64, pid: Int, droppedEvents: Int64, droppedRecords: Int64) {
        self.ts = ts; self.pid = pid; self.droppedEvents = droppedEvents; self.droppedRecords = droppedRecords
    }
}

public struct ProcessEnd: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var tid: Int?
    public var reason: String
    public var exitStatus: Int?
    public var durationUs: Int64?
    public var records: [String: Int64]
    public var droppedEvents: Int64
    public var droppedRecords: Int64
    public var openConnections: Int64
    /// Connections not reported because a limit was reached.
    public var untrackedConnections: Int64
    /// Capture-ring slots lost: HTTP exchanges they cut short carry `error: "desync"`.
    public var captureDropped: Int64
    /// Bytes of socket calls that returned after their connection had ended: in no connection.
    public var bytesAfterEnd: Int64 = 0
    /// Reason `signal`: the signal whose default action ended the process (`SIGTERM`, ...).
    public var signal: String?
    /// Reason `exec`: the path the program asked to execute.
    public var exec: String?
    /// Reason `exec`: why the next image will not be watched (`setuid`, `static`, ...), if so.
    public var execUnwatched: String?
    public init(ts: Int64, pid: Int, tid: Int? = nil, reason: String, exitStatus: Int? = nil, durationUs: Int64? = nil,
                records: [String: Int64] = [:], droppedEvents: Int64 = 0, droppedRecords: Int64 = 0,
                openConnections: Int64 = 0, untrackedConnections: Int64 = 0, captureDropped: Int64 = 0,
                signal: String? = nil, bytesAfterEnd: Int64 = 0, exec: String? = nil, execUnwatched: String? = nil) {
        self.signal = signal
        self.exec = exec
        self.execUnwatched = execUnwatched
        self.bytesAfterEnd = bytesAfterEnd
        self.ts = ts; self.pid = pid; self.tid = tid; self.reason = reason; self.exitStatus = exitStatus
        self.durationUs = durationUs; self.records = records; self.droppedEvents = droppedEvents
        self.droppedRecords = droppedRecords; self.openConnections = openConnections
        self.untrackedConnections = untrackedConnections; self.captureDropped = captureDropped
    }
}

public indirect enum Record: Sendable, Equatable {
    case processStart(ProcessStart)
    case connection(ConnectionRecord)
    case fork(ForkRecord)
    case drops(DropsRecord)
    case processEnd(ProcessEnd)
    case dns(DNSRecord)
    case note(NoteRecord)
    case http(HTTPRecord)
    case httpSummary(HTTPSummaryRecord)
    case sample(SampleRecord)
    case startup(StartupRecord)
    case stall(StallRecord)
    case modules(ModulesRecord)
    /// A rotated log's bookkeeping (LogSegments.swift).
    case segmentEnd(SegmentEndRecord)
    case segmentsRemoved(SegmentsRemovedRecord)

    public static let knownTypes: Set<String> = ["process_start", "connection", "fork", "drops", "process_end",
                                                 "dns", "warning", "exec_failed", "http", "http_summary",
                                                 "sample", "startup", "stall", "modules",
                                                 "segment_end", "segments_removed"]

    public var ts: Int64 {
        switch self {
        case .processStart(let r): r.ts
        case .connection(let r): r.ts
        case .fork(let r): r.ts
        case .drops(let r): r.ts
        case .processEnd(let r): r.ts
        case .dns(let r): r.ts
        case .note(let r): r.ts
        case .http(let r): r.ts
        case .httpSummary(let r): r.ts
        case .sample(let r): r.ts
        case .startup(let r): r.ts
        case .stall(let r): r.ts
        case .modules(let r): r.ts
        case .segmentEnd(let r): r.ts
        case .segmentsRemoved(let r): r.ts
        }
    }
}

extension Record {
    /// `connection` fields most records lack (issue 15's): `http_none`, `http_undecoded`,
    /// `forked_while_open`, `inherited_from`, in the bits 1, 2, 4, 8 of `JSONDocument.present`.
    static let connectionRareKeys: [StaticString] = ["http_none", "http_undecoded", "forked_while_open", "inherited_from"]
}

/// Why one JSON object could not become a `Record`.
public enum RecordDecodeError: Error, Equatable {
    case missingType
    case unknownType(String)
    case badField(type: String, field: String, expected: String)
}

extension Record {
    /// Decodes the parsed line in `doc`, whose root must be an object. Unknown fields are
    /// ignored; a required field that is missing, or any field with the wrong JSON type,
    /// rejects the record.
    static func decode(_ doc: JSONDocument) throws(RecordDecodeError) -> Record {
        guard let typeNode = doc.find("type", in: 0) else { throw .missingType }
        guard let type = doc.string(typeNode) else { throw .badField(type: "?", field: "type", expected: "a string") }
        guard knownTypes.contains(type) else { throw .unknownType(type) }
        let f = Fields(doc: doc, node: 0, type: type)
        let ts = try f.int64("ts", required: true)!
        let pid = try f.int("pid", required: true)!
        switch type {
        case "process_start":
            return .processStart(ProcessStart(
                ts: ts, pid: pid, tid: try f.int("tid"),
                // A missing schema is treated as the first one; the reader does not guess newer.
                schema: try f.int("schema") ?? supportedSchema,
                wedjatVersion: try f.string("wedjat_version"), exe: try f.string("exe"),
                argv: try f.strings("argv") ?? [], argvMode: try f.string("argv_mode"),
                ppid: try f.int("ppid"), parentLog: try f.string("parent_log"), execFrom: try f.string("exec_from"),
                log: try f.string("log"), hostname: try f.string("hostname"),
                processStartTs: try f.int64("process_start_ts"), procStartTicks: try f.int64("proc_start_ticks"),
                configWarnings: try f.strings("config_warnings") ?? [],
                stallMs: try f.object("config")?.int("stall_ms"),
                segment: try f.int("segment"), segmentStartTs: try f.int64("segment_start_ts"), cpus: try f.int("cpus")))
        case "connection":
            // Fields of issue 15 that most records lack: looked for in one pass.
            let rare = f.doc.present(Record.connectionRareKeys, in: f.node)
            return .connection(ConnectionRecord(
                ts: ts, pid: pid, tid: try f.int("tid"), connId: try f.int64("conn_id"), fd: try f.int("fd"),
                transport: try f.string("transport"), family: try f.string("family"),
                role: try f.string("role", required: true)!, local: try f.string("local"), peer: try f.string("peer"),
                openTs: try f.int64("open_ts"), closeTs: try f.int64("close_ts"),
                durationUs: try f.int64("duration_us"), connectUs: try f.int64("connect_us"),
                bytesIn: try f.int64("bytes_in") ?? 0, bytesOut: try f.int64("bytes_out") ?? 0,
                error: try f.string("error"), openAtExit: try f.bool("open_at_exit") ?? false,
                host: try f.string("host"), errorPhase: try f.string("error_phase"),
                tls: try f.object("tls").map { t throws(RecordDecodeError) in
                    TLSInfo(library: try t.string("library"), startTs: try t.int64("start_ts"),
                            endTs: try t.int64("end_ts"), handshakeUs: try t.int64("handshake_us"),
                            version: try t.string("version"), alpn: try t.string("alpn"), phaseUs: try t.int64("phase_us"))
                },
                shutdownTs: try f.int64("shutdown_ts"), httpRequests: try f.int64("http_requests"),
                dnsUs: try f.int64("dns_us"), httpVersion: try f.string("http_version"),
                httpStopped: try f.string("http_stopped"), httpNone: rare & 1 == 0 ? nil : try f.string("http_none"),
                httpUndecoded: rare & 2 == 0 ? nil : try f.object("http_undecoded").map { u throws(RecordDecodeError) in
                    ConnectionRecord.Undecoded(reason: try u.string("reason") ?? "?", bytesIn: Swift.max(0, try u.int64("bytes_in") ?? 0),
                                               bytesOut: Swift.max(0, try u.int64("bytes_out") ?? 0))
                },
                forkedWhileOpen: rare & 4 == 0 ? false : try f.bool("forked_while_open") ?? false,
                inheritedFrom: rare & 8 == 0 ? nil : try f.object("inherited_from").flatMap { i throws(RecordDecodeError) in
                    ConnectionRecord.Inherited(log: try i.string("log", required: true)!, connId: try i.int64("conn_id", required: true)!)
                }))
        case "http":
            var h = HTTPRecord(
                ts: ts, pid: pid, tid: try f.int("tid"), connId: try f.int64("conn_id"),
                role: try f.string("role", required: true)!, scheme: try f.string("scheme"),
                method: try f.string("method"), host: try f.string("host"), path: try f.string("path"),
                status: try f.int("status"), interimResponses: try f.int("interim_responses"),
                peer: try f.string("peer"), requestIndex: try f.int("request_index"), reused: try f.bool("reused"),
                version: try f.string("version"), responseVersion: try f.string("response_version"),
                requestStartTs: try f.int64("request_start_ts"), requestEndTs: try f.int64("request_end_ts"),
                responseStartTs: try f.int64("response_start_ts"), responseEndTs: try f.int64("response_end_ts"),
                ttfbUs: try f.int64("ttfb_us"), waitUs: try f.int64("wait_us"), durationUs: try f.int64("duration_us"),
                requestHeaderBytes: try f.int64("request_header_bytes") ?? 0,
                requestBodyBytes: try f.int64("request_body_bytes") ?? 0,
                responseHeaderBytes: try f.int64("response_header_bytes") ?? 0,
                responseBodyBytes: try f.int64("response_body_bytes") ?? 0,
                complete: try f.bool("complete"), upgraded: try f.bool("upgraded") ?? false,
                error: try f.string("error"), headers: try f.stringMap("headers") ?? [:])
            if let id = try f.int("stream_id") {
                h.streamId = id
                h.pushed = try f.bool("pushed") ?? false
                h.resetBy = try f.string("reset_by")
                h.grpc = try f.object("grpc").map { g throws(RecordDecodeError) in
                    GRPCRecord(service: try g.string("service"), method: try g.string("method"), status: try g.int("status"),
                               statusName: try g.string("status_name"), message: try g.string("message"),
                               requestMessages: try g.int("request_messages"), responseMessages: try g.int("response_messages"))
                }
            }
            h.takeDurationsFromTimes()
            return .http(h)
        case "http_summary":
            func distribution(_ key: String) throws(RecordDecodeError) -> SummaryDistribution? {
                try f.object(key).map { d throws(RecordDecodeError) in
                    let count = try d.int64("count", required: true)!
                    return SummaryDistribution(count: count, p50: try d.int64("p50", required: true)!,
                                               p90: try d.int64("p90", required: true)!, p99: try d.int64("p99", required: true)!,
                                               max: try d.int64("max", required: true)!, buckets: try boundedCounts(d, count: count))
                }
            }
            return .httpSummary(HTTPSummaryRecord(
                ts: ts, pid: pid, tid: try f.int("tid"), role: try f.string("role", required: true)!,
                scheme: try f.string("scheme"), method: try f.string("method"), host: try f.string("host"),
                version: try f.string("version"), status: try f.int("status"), error: try f.string("error"),
                count: try f.int64("count", required: true)!,
                errors: try f.int64("errors") ?? 0, requestBytes: try f.int64("request_bytes") ?? 0,
                responseBytes: try f.int64("response_bytes") ?? 0, firstTs: try f.int64("first_ts"),
                lastTs: try f.int64("last_ts"), durationUs: try distribution("duration_us"),
                ttfbUs: try distribution("ttfb_us")))
        case "dns":
            return .dns(DNSRecord(ts: ts, pid: pid, api: try f.string("api"), name: try f.string("name"),
                                  durationUs: try f.int64("duration_us"), answers: try f.int("answers") ?? 0,
                                  error: try f.string("error"), tid: try f.int("tid"), startTs: try f.int64("start_ts"),
                                  addresses: try f.strings("addresses") ?? []))
        case "sample":
            return .sample(try decodeSample(f, ts: ts, pid: pid))
        case "stall":
            return .stall(try decodeStall(f, ts: ts, pid: pid))
        case "modules":
            return .modules(try decodeModules(f, ts: ts, pid: pid))
        case "segment_end", "segments_removed":
            return try decodeSegmentRecord(f, ts: ts, pid: pid)
        case "startup":
            return .startup(StartupRecord(
                ts: ts, pid: pid, execTs: try f.int64("exec_ts"), execSource: try f.string("exec_source"),
                execResolutionUs: try f.int64("exec_resolution_us"), constructorUs: try f.int64("constructor_us"),
                mainUs: try f.int64("main_us"), readyUs: try f.int64("ready_us"), readyCall: try f.string("ready_call")))
        case "warning":
            return .note(NoteRecord(ts: ts, pid: pid, type: type, message: try f.string("message") ?? "?"))
        case "exec_failed":
            return .note(NoteRecord(ts: ts, pid: pid, type: type,
                                    message: "exec of \(try f.string("exec") ?? "?") failed; the image went on"))
        case "fork":
            return .fork(ForkRecord(ts: ts, pid: pid, tid: try f.int("tid"), childPid: try f.int("child_pid", required: true)!))
        case "drops":
            return .drops(DropsRecord(ts: ts, pid: pid, droppedEvents: try f.int64("dropped_events") ?? 0,
                                      droppedRecords: try f.int64("dropped_records") ?? 0))
        default: // process_end
            return .processEnd(ProcessEnd(
                ts: ts, pid: pid, tid: try f.int("tid"), reason: try f.string("reason") ?? "unknown",
                exitStatus: try f.int("exit_status"), durationUs: try f.int64("duration_us"),
                records: try f.intMap("records") ?? [:],
                droppedEvents: try f.int64("dropped_events") ?? 0, droppedRecords: try f.int64("dropped_records") ?? 0,
                openConnections: try f.int64("open_connections") ?? 0,
                untrackedConnections: try f.int64("untracked_connections") ?? 0,
                captureDropped: try f.int64("capture_dropped") ?? 0,
                signal: try f.string("signal"), bytesAfterEnd: try f.int64("bytes_after_end") ?? 0,
                exec: try f.string("exec"), execUnwatched: try f.string("exec_unwatched")))
        }
    }
}

extension Record {
    fileprivate static func decodeSample(_ f: Fields, ts: Int64, pid: Int) throws(RecordDecodeError) -> SampleRecord {
        var s = SampleRecord(ts: ts, pid: pid, seq: try f.int("seq"), atExit: try f.bool("at_exit") ?? false,
                             intervalStartTs: try f.int64("interval_start_ts"), intervalUs: try f.int64("interval_us"))
        var unavailable: [String: String] = [:]
        /// A group: its fields, or nil (absent, null, or `{"unavailable": why}`, whose reason is kept).
        func group(_ g: Fields?, _ name: String) throws(RecordDecodeError) -> Fields? {
            guard let g else { return nil }
            if let why = try g.string("unavailable") { unavailable[name] = why; return nil }
            return g
        }
        if let c = try group(f.object("cpu"), "cpu") {
            s.cpuUserPct = try c.double("user_pct"); s.cpuSystemPct = try c.double("system_pct")
            s.cpuTotalPct = try c.double("total_pct"); s.cpuUserUs = try c.int64("user_us")
            s.cpuSystemUs = try c.int64("system_us")
        }
        for t in try f.objects("top_threads") ?? [] {
            s.topThreads.append(.init(tid: try t.int("tid", required: true)!, name: try t.string("name"),
                                      cpuPct: try t.double("cpu_pct", required: true)!))
        }
        if let c = try group(f.object("system_cpu"), "system_cpu") { s.systemBusyPct = try c.double("busy_pct") }
        if let m = try group(f.object("memory"), "memory") {
            s.rssBytes = try m.int64("rss_bytes"); s.peakRssBytes = try m.int64("peak_rss_bytes")
            s.virtualBytes = try m.int64("virtual_bytes")
        }
        _ = try group(f.object("cpu_freq"), "cpu_freq")
        _ = try group(f.object("system_memory"), "system_memory")
        s.threads = try f.int("threads")
        s.fds = try f.int("fds")
        s.openConnections = try f.int("open_connections")
        if let c = try group(f.object("ctx_switches"), "ctx_switches") {
            s.voluntaryCtxSwitches = try c.int64("voluntary"); s.involuntaryCtxSwitches = try c.int64("involuntary")
        }
        if let p = try group(f.object("page_faults"), "page_faults") {
            s.minorFaults = try p.int64("minor"); s.majorFaults = try p.int64("major")
        }
        if let e = try group(f.object("energy"), "energy") {
            if let r = try group(e.object("rapl"), "rapl") {
                s.raplEnergyJ = try r.double("energy_j"); s.raplWatts = try r.double("watts")
                s.raplIntervalUs = try r.int64("interval_us")
            }
            // `battery` is an array of supplies, or an object saying why there is none.
            if e.isObject("battery") {
                _ = try group(e.object("battery"), "battery")
            } else if let list = try e.objects("battery") {
                s.batteries = []
                for b in list {
                    s.batteries!.append(.init(name: try b.string("name"), capacityPct: try b.int("capacity_pct"),
                                              status: try b.string("status")))
                }
            }
        }
        s.loops = try decodeLoops(f)
        s.unavailable = unavailable
        return s
    }
}

/// Typed access to one object of a parsed line (`JSONDocument`). `null` and absent are the same (nil).
/// `bounds` and `buckets` of a summary distribution, with its `sum` and `min`: all or none.
/// Bounds strictly increasing, one bucket more than bounds, counts adding up to `count`.
private func boundedCounts(_ d: Fields, count: Int64) throws(RecordDecodeError) -> BoundedCounts? {
    guard let bounds = try d.int64s("bounds") else {
        try d.check(try d.int64s("buckets") == nil, "buckets", "absent without bounds")
        return nil
    }
    try d.check(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bounds", "strictly increasing integers")
    guard let counts = try d.int64s("buckets") else { throw d.bad("buckets", "an array of integers next to bounds") }
    try d.check(counts.count == bounds.count + 1, "buckets", "\(bounds.count + 1) counts (one more than bounds)")
    try d.check(counts.allSatisfy { $0 >= 0 }, "buckets", "counts of 0 or more")
    let (total, overflow) = counts.reduce((Int64(0), false)) { acc, c in
        let (s, o) = acc.0.addingReportingOverflow(c)
        return (s, acc.1 || o)
    }
    try d.check(!overflow && total == count, "buckets", "counts adding up to count (\(count))")
    return BoundedCounts(bounds: bounds, counts: counts, sum: try d.int64("sum", required: true)!,
                         min: try d.int64("min", required: true)!)
}

struct Fields {
    let doc: JSONDocument
    /// The object's node in `doc`.
    let node: Int
    let type: String
    /// For a nested object: its path and a dot (`tls.`), so a warning names `tls.version`.
    var prefix = ""

    init(doc: JSONDocument, node: Int, type: String, prefix: String = "") {
        self.doc = doc; self.node = node; self.type = type; self.prefix = prefix
    }

    func bad(_ key: String, _ expected: String) -> RecordDecodeError {
        .badField(type: type, field: prefix + key, expected: expected)
    }

    /// A rule across fields: `key` is blamed when it does not hold.
    func check(_ ok: Bool, _ key: String, _ expected: String) throws(RecordDecodeError) {
        if !ok { throw bad(key, expected) }
    }

    /// The value's node, nil when absent or null.
    private func raw(_ key: String, required: Bool, expected: String) throws(RecordDecodeError) -> Int? {
        guard let v = doc.find(key, in: node), doc.kind(v) != .null else {
            if required { throw bad(key, expected) }
            return nil
        }
        return v
    }

    /// A nested object, whose own fields report their errors as `key.field`.
    func object(_ key: String) throws(RecordDecodeError) -> Fields? {
        guard let v = try raw(key, required: false, expected: "an object") else { return nil }
        guard doc.kind(v) == .object else { throw bad(key, "an object") }
        return Fields(doc: doc, node: v, type: type, prefix: prefix + key + ".")
    }

    /// An array of objects, each reporting its errors as `key.field`.
    func objects(_ key: String) throws(RecordDecodeError) -> [Fields]? {
        guard let v = try raw(key, required: false, expected: "an array of objects") else { return nil }
        guard doc.kind(v) == .array else { throw bad(key, "an array of objects") }
        var out: [Fields] = []
        for e in doc.elements(v) {
            guard doc.kind(e) == .object else { throw bad(key, "an array of objects") }
            out.append(Fields(doc: doc, node: e, type: type, prefix: prefix + key + "."))
        }
        return out
    }

    func isObject(_ key: String) -> Bool { doc.find(key, in: node).map { doc.kind($0) == .object } ?? false }

    /// Any JSON number (not a boolean), finite.
    func double(_ key: String, required: Bool = false) throws(RecordDecodeError) -> Double? {
        guard let v = try raw(key, required: required, expected: "a number") else { return nil }
        guard let d = doc.double(v), d.isFinite else { throw bad(key, "a number") }
        return d
    }

    /// Exact integers only: `1.5` and out-of-range values are rejected, `1e3` is 1000.
    func int64(_ key: String, required: Bool = false) throws(RecordDecodeError) -> Int64? {
        guard let v = try raw(key, required: required, expected: "an integer") else { return nil }
        guard let n = doc.int64(v) else { throw bad(key, "an integer") }
        return n
    }

    func int(_ key: String, required: Bool = false) throws(RecordDecodeError) -> Int? {
        try int64(key, required: required).map { Int(truncatingIfNeeded: $0) }
    }

    func string(_ key: String, required: Bool = false) throws(RecordDecodeError) -> String? {
        guard let v = try raw(key, required: required, expected: "a string") else { return nil }
        guard let s = doc.string(v) else { throw bad(key, "a string") }
        return s
    }

    func bool(_ key: String) throws(RecordDecodeError) -> Bool? {
        guard let v = try raw(key, required: false, expected: "a boolean") else { return nil }
        guard let b = doc.bool(v) else { throw bad(key, "a boolean") }
        return b
    }

    func strings(_ key: String) throws(RecordDecodeError) -> [String]? {
        try array(key, "an array of strings") { doc.string($0) }
    }

    func int64s(_ key: String) throws(RecordDecodeError) -> [Int64]? {
        try array(key, "an array of integers") { doc.int64($0) }
    }

    /// An array whose every element `element` can read (nil: not one of them).
    private func array<T>(_ key: String, _ expected: String, _ element: (Int) -> T?) throws(RecordDecodeError) -> [T]? {
        guard let v = try raw(key, required: false, expected: expected) else { return nil }
        guard doc.kind(v) == .array else { throw bad(key, expected) }
        var out: [T] = []
        for e in doc.elements(v) {
            guard let x = element(e) else { throw bad(key, expected) }
            out.append(x)
        }
        return out
    }

    func stringMap(_ key: String) throws(RecordDecodeError) -> [String: String]? {
        guard let v = try raw(key, required: false, expected: "an object of strings") else { return nil }
        guard doc.kind(v) == .object else { throw bad(key, "an object of strings") }
        guard doc.keepStringMaps else {
            var allStrings = true
            doc.forEachMember(v) { _, e in allStrings = doc.kind(e) == .string; return allStrings }
            guard allStrings else { throw bad(key, "an object of strings") }
            return [:]
        }
        var out = [String: String](minimumCapacity: 8)   // no regrowth for the usual few headers
        var allStrings = true
        doc.forEachMember(v) { k, e in
            guard let s = doc.string(e) else { allStrings = false; return false }
            out[doc.string(k)!] = s
            return true
        }
        guard allStrings else { throw bad(key, "an object of strings") }
        return out
    }

    func intMap(_ key: String) throws(RecordDecodeError) -> [String: Int64]? {
        guard let v = try raw(key, required: false, expected: "an object of integers") else { return nil }
        guard doc.kind(v) == .object else { throw bad(key, "an object of integers") }
        var out: [String: Int64] = [:]
        for (k, e) in doc.members(v) {
            guard let n = doc.int64(e) else { throw bad(key, "an object of integers") }
            out[doc.string(k)!] = n
        }
        return out
    }
}
