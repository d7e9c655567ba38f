import Foundation

/// A record and the process image (log file) it came from: `conn_id`s and thread ids only
/// mean something within one image.
public struct InImage<Value: Sendable>: Sendable {
    /// Index into `ExportInput.images`.
    public var image: Int
    public var value: Value
}

/// A `stall` record without its stacks (those are for the folded export and the report).
public struct ExportStall: Sendable, Equatable {
    public var pid: Int
    public var tid: Int?
    public var thread: String?
    /// `loop` or `blocked`.
    public var kind: String
    public var startTs: Int64
    public var endTs: Int64
    public var cpuUs: Int64?
    public var call: String?
    public var after: String?
    public var peer: String?
    public var host: String?
    public var result: String?
    public var ongoing: Bool

    init(_ s: StallRecord) {
        pid = s.pid; tid = s.tid; thread = s.thread; kind = s.kind
        endTs = s.endTs ?? s.ts
        startTs = s.startTs ?? (endTs - s.durationUs)
        cpuUs = s.cpuUs; call = s.call; after = s.after; peer = s.peer; host = s.host; result = s.result
        ongoing = s.ongoing
    }
}

/// What the exports need from a run, gathered in one streaming pass: the records they turn
/// into entries, spans and slices (those are the output, so they are kept; only the kinds the
/// asked-for formats use), and per image only its summary (`ProcessLog`: counts, not records).
public struct ExportInput: Sendable {
    /// The kinds of records kept.
    public struct Contents: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Client-side `http` records only (HAR's view).
        public static let clientExchanges = Contents(rawValue: 1)
        public static let serverExchanges = Contents(rawValue: 2)
        /// Every connection.
        public static let connections = Contents(rawValue: 4)
        /// Only connections that carried a kept exchange (for their set-up phases and protocol).
        public static let httpConnections = Contents(rawValue: 8)
        public static let lookups = Contents(rawValue: 16)
        public static let stalls = Contents(rawValue: 32)
        public static let all: Contents = [.clientExchanges, .serverExchanges, .connections, .lookups, .stalls]
    }

    public let contents: Contents
    /// One per log file with a good record, in reading order.
    public private(set) var images: [ProcessLog] = []
    public private(set) var exchanges: [InImage<HTTPRecord>] = []
    public private(set) var connections: [InImage<ConnectionRecord>] = []
    public private(set) var lookups: [InImage<DNSRecord>] = []
    public private(set) var stalls: [InImage<ExportStall>] = []
    /// `http_summary` records of the kept roles (OTLP adds their durations to its histograms).
    public private(set) var summaries: [InImage<HTTPSummaryRecord>] = []
    /// Exchanges only counted in `http_summary` records (past the writer's record budget):
    /// no timings of their own, so no HAR entry, span or slice.
    public private(set) var summarizedExchanges: Int64 = 0
    /// Of those, the ones whose durations the OTLP histograms can take (exact bucket counts).
    public private(set) var summarizedInHistograms: Int64 = 0
    /// Of those, the client side's (HAR's view).
    public private(set) var summarizedClientExchanges: Int64 = 0
    /// `http` records not kept (their role is not in `contents`).
    public private(set) var leftOutExchanges = 0
    /// The earliest `ts` (or phase start) of any record: the trace's time zero.
    public private(set) var earliestTs: Int64?
    public private(set) var warnings: [ReaderWarning] = []
    private var imageIndex: [String: Int] = [:]

    public init(contents: Contents = .all) { self.contents = contents }

    /// Reads `paths` (files or directories, as `wedjat report` does). Throws when nothing was
    /// readable; the failure carries the reader's warnings.
    public static func load(paths: [String], contents: Contents = .all,
                            reader: LogReader = LogReader()) throws(LoadFailure) -> ExportInput {
        var input = ExportInput(contents: contents)
        var reader = reader
        do {
            try reader.read(paths: paths) { file, _, record in input.add(record, file: file) }
        } catch {
            throw LoadFailure(error: error, warnings: reader.warnings)
        }
        input.warnings = reader.warnings
        return input
    }

    public mutating func add(_ record: Record, file: String) {
        let image: Int
        if let known = imageIndex[file] {
            image = known
        } else {
            image = images.count
            imageIndex[file] = image
            images.append(ProcessLog(path: file))
        }
        images[image].add(record)
        noteTime(record.ts)
        switch record {
        case .http(let h):
            noteTime(h.requestStartTs)
            if contents.contains(h.role == "server" ? .serverExchanges : .clientExchanges) {
                exchanges.append(InImage(image: image, value: h))
            } else {
                leftOutExchanges += 1
            }
        case .connection(let c):
            noteTime(c.openTs)
            let carriedKeptExchange = (c.httpRequests ?? 0) > 0
                && contents.contains(c.role == "server" ? .serverExchanges : .clientExchanges)
            if contents.contains(.connections) || (contents.contains(.httpConnections) && carriedKeptExchange) {
                connections.append(InImage(image: image, value: c))
            }
        case .dns(let d):
            noteTime(d.startTs)
            if contents.contains(.lookups) { lookups.append(InImage(image: image, value: d)) }
        case .stall(let s):
            let stall = ExportStall(s)
            noteTime(stall.startTs)
            if contents.contains(.stalls) { stalls.append(InImage(image: image, value: stall)) }
        case .httpSummary(let s):
            summarizedExchanges += max(0, s.count)
            if s.role != "server" { summarizedClientExchanges += max(0, s.count) }
            if let (d, _) = OTLPExport.foldable(s) { summarizedInHistograms += min(max(0, d.count), max(0, s.count)) }
            if contents.contains(s.role == "server" ? .serverExchanges : .clientExchanges) {
                summaries.append(InImage(image: image, value: s))
            }
        default:
            break
        }
    }

    /// What to say when exchanges were only counted (nil when none were): an `http_summary`
    /// has no times of its own, so they have no HAR entry, span or slice. Their durations are
    /// in the OTLP histograms when the summary has exact bucket counts; not those of logs
    /// written before summaries had them (quantiles cannot be split into buckets), nor those
    /// of exchanges without a duration (cut short before a response).
    public var summarizedWarning: String? {
        guard summarizedExchanges > 0 else { return nil }
        let n = summarizedExchanges, inHistograms = summarizedInHistograms, left = n - inHistograms
        let histograms: String
        let why = "(no duration, or a summary without bucket counts, from an older wedjat)"
        if left == 0 {
            histograms = n == 1 ? "its duration is in the OTLP duration histograms" : "their durations are in the OTLP duration histograms"
        } else if inHistograms == 0 {
            histograms = "\(n == 1 ? "it is" : "they are") not in the OTLP duration histograms \(why)"
        } else {
            histograms = "\(inHistograms) of them are in the OTLP duration histograms, \(left) \(left == 1 ? "is" : "are") not \(why)"
        }
        return "\(n) HTTP exchange\(n == 1 ? " was" : "s were") only counted in http_summary records (past WEDJAT_HTTP_RECORDS a second):"
            + " \(n == 1 ? "it has" : "they have") no HAR entry, trace slice or span; \(histograms);"
            + " `wedjat report` counts \(n == 1 ? "it" : "them"). Raise WEDJAT_HTTP_RECORDS to record every exchange"
    }

    private mutating func noteTime(_ ts: Int64?) {
        guard let ts, ts > 0 else { return }
        earliestTs = min(earliestTs ?? ts, ts)
    }

    /// The connection records by (image, conn_id), for the exchanges made on them.
    func connectionsByID() -> [ConnectionKey: ConnectionRecord] {
        var out: [ConnectionKey: ConnectionRecord] = [:]
        for c in connections {
            guard let id = c.value.connId else { continue }
            out[ConnectionKey(image: c.image, connId: id)] = c.value
        }
        return out
    }
}

struct ConnectionKey: Hashable {
    var image: Int
    var connId: Int64
}
