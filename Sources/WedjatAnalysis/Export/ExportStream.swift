// The exports read the logs once, as `wedjat report` does, and write as they read: what stays
// in memory is bounded by processes, threads, hosts and open connections, never by the number
// of records (docs/EXPORTS.md, "Memory"). Each format is a consumer of the record stream.

/// What every consumer shares while the logs are read: the process images so far (their
/// summaries, `ProcessLog`), the current image's lookups, the exchanges only counted in
/// `http_summary` records, the earliest time seen.
public final class ExportContext {
    /// One per log file with a good record, in reading order.
    public private(set) var images: [ProcessLog] = []
    /// The image of the record being handed out.
    public private(set) var image = -1
    var lookups = LookupTracker()
    /// Exchanges only counted in `http_summary` records (no timings of their own: no HAR entry,
    /// span or slice); those the OTLP histograms can take (exact bucket counts); the client side's.
    public private(set) var summarizedExchanges: Int64 = 0
    public private(set) var summarizedInHistograms: Int64 = 0
    public private(set) var summarizedClientExchanges: Int64 = 0
    /// The earliest time of any record (its `ts` or the start of what it describes).
    public private(set) var earliestTs: Int64?
    public private(set) var warnings: [ReaderWarning] = []
    private var imageIndex: [String: Int] = [:]
    /// What share of the traffic was decoded (Coverage.swift), and the `http` records read.
    public private(set) var coverage = CoverageStats()
    public private(set) var httpRecords = 0
    public private(set) var clientHTTPRecords = 0

    /// `2 HTTP connections were not decoded (http2: 2): their exchanges are not in the HAR`, when
    /// some HTTP traffic was not decoded; nil when all of it was.
    public func undecodedNote(in format: String) -> String? {
        guard let c = Report.coverageSection(coverage), !c.undecoded.isEmpty else { return nil }
        let whole = c.undecoded.reduce(0) { $0 + $1.connections }, partly = c.undecoded.reduce(0) { $0 + ($1.partly ?? 0) }
        var what: [String] = []
        if whole > 0 { what.append("\(whole) HTTP connection\(whole == 1 ? " was" : "s were") not decoded") }
        if partly > 0 { what.append("\(partly) \(partly == 1 ? "was" : "were") decoded only partly") }
        return what.joined(separator: " and ") + " (" + c.undecoded.map { "\($0.reason ?? "?"): \($0.connections + ($0.partly ?? 0))" }.joined(separator: ", ")
            + "; `wedjat report` says more): \(whole + partly == 1 ? "its" : "their") exchanges are not in the \(format)"
    }

    /// Why an export has nothing to write: `no HTTP exchange was decoded: 3 connections carried
    /// HTTP/2 (http_none: http2)`. `what`: the format's view (`har`, `trace`, `otlp`).
    public func whyEmpty(_ what: String) -> String {
        let summarized = what == "har" ? summarizedClientExchanges : summarizedExchanges
        switch what {
        case "har" where clientHTTPRecords == 0 && httpRecords > 0:
            return "no client-side HTTP exchange: the \(httpRecords) exchange\(httpRecords == 1 ? " was" : "s were") a server's "
                + "(HAR holds a client's view; --chrome-trace and --otlp-json have them)"
        case "har" where clientHTTPRecords > 0:
            return "none of the \(clientHTTPRecords) client exchange\(clientHTTPRecords == 1 ? "" : "s") had a request start"
        case "trace" where images.isEmpty:
            return "no process in the logs"
        case "trace":
            return "no connection, exchange, lookup, stall or sample in the logs"
        default:
            break
        }
        if summarized > 0 {
            return "the \(summarized) HTTP exchange\(summarized == 1 ? " was" : "s were") only counted in http_summary records "
                + "(past WEDJAT_HTTP_RECORDS a second), which have no single exchanges"
        }
        let why = CoverageText.whyNoExchange(Report.coverageSection(coverage))
        return (what == "otlp" ? "no HTTP exchange or DNS lookup was recorded: " : "no HTTP exchange was decoded: ") + why
    }

    /// Exchanges handed off to a forked child, joined with the child's half (Handoff.swift).
    public internal(set) var handoffs = (joined: 0, unjoinedParents: 0, unjoinedChildren: 0, overLimit: 0)

    /// Makes `file`'s image current for `body` only (a joined exchange coming out of reading
    /// order belongs to its parent's image); the consumers' per-image state is not touched.
    func visit(_ file: String, _ body: () -> Void) {
        let current = image
        _ = enter(file)
        body()
        image = current
    }

    /// Makes `file`'s image current (a new one the first time); true when it changed.
    func enter(_ file: String) -> Bool {
        if image >= 0, images[image].path == file { return false }
        if let known = imageIndex[file] {
            image = known
        } else {
            image = images.count
            imageIndex[file] = image
            images.append(ProcessLog(path: file))
        }
        return true
    }

    func note(_ record: Record) {
        images[image].add(record)
        noteTime(record.ts)
        switch record {
        case .http(let h):
            noteTime(h.requestStartTs)
            httpRecords += 1
            if h.role != "server" { clientHTTPRecords += 1 }
        case .connection(let c):
            noteTime(c.openTs)
            coverage.add(c)
        case .dns(let d):
            noteTime(d.startTs)
            lookups.add(d, file: image)
        case .stall(let s): noteTime(s.startTs ?? (s.endTs ?? s.ts) - s.durationUs)
        case .httpSummary(let s):
            summarizedExchanges += max(0, s.count)
            if s.role != "server" { summarizedClientExchanges += max(0, s.count) }
            if let (d, _) = OTLPExport.foldable(s) { summarizedInHistograms += min(max(0, d.count), max(0, s.count)) }
        default: break
        }
    }

    private func noteTime(_ ts: Int64?) {
        guard let ts, ts > 0 else { return }
        earliestTs = min(earliestTs ?? ts, ts)
    }

    func setWarnings(_ w: [ReaderWarning]) { warnings = w }

    /// A process's name: its program, or the programs of its exec chain (`bash → curl`).
    func programNames() -> [Int: String] {
        var chains: [Int: [(ts: Int64, program: String)]] = [:]
        for image in images { chains[image.pid, default: []].append((image.startTs, image.program)) }
        return chains.mapValues { chain in
            var names: [String] = []
            for step in chain.sorted(by: { $0.ts < $1.ts }) where names.last != step.program { names.append(step.program) }
            return names.joined(separator: " → ")
        }
    }

    /// What to say when exchanges were only counted (nil when none were).
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
}

/// A format written while the logs are read.
protocol ExportConsumer: AnyObject {
    /// Every good record, in file order; `context` has already taken it in.
    func add(_ record: Record, context: ExportContext)
    /// The records of `image` are over (the reader moves to the next file).
    func endImage(_ image: Int, context: ExportContext)
    /// All records are read: write what is left. Returns what `wedjat export` reports.
    func finish(context: ExportContext) -> ExportDocument
}

/// Reads the logs once and feeds every consumer.
public enum ExportStream {
    /// The formats asked for; nil: not written. Each document is handed over as it is written
    /// (`ExportText` with a sink), the OTLP requests one by one to `otlp` (false: stop sending).
    public struct Outputs {
        public var har: ExportText?
        public var trace: ExportText?
        public var otlp: ((ExportDocument) -> Bool)?
        public var spansPerRequest: Int
        public init(har: ExportText? = nil, trace: ExportText? = nil, otlp: ((ExportDocument) -> Bool)? = nil,
                    spansPerRequest: Int = 1000) {
            self.har = har; self.trace = trace; self.otlp = otlp; self.spansPerRequest = spansPerRequest
        }
    }

    public struct Result {
        public var har: ExportDocument?
        public var trace: ExportDocument?
        /// Spans and metric data points written, and notes.
        public var otlp: ExportDocument?
        public var context: ExportContext
    }

    public static func run(paths: [String], outputs: Outputs, reader: LogReader = LogReader()) throws(LoadFailure) -> Result {
        let context = ExportContext()
        let har = outputs.har.map { HARStream(text: $0) }
        let trace = outputs.trace.map { TraceStream(text: $0) }
        let otlp = outputs.otlp.map { OTLPStream(emit: $0, spansPerRequest: outputs.spansPerRequest) }
        let consumers: [ExportConsumer] = [har as ExportConsumer?, trace, otlp].compactMap { $0 }
        var reader = reader
        var join = HandoffJoin()
        func deliver(_ record: Record, _ file: String) {
            let previous = context.image
            if context.enter(file), previous >= 0 {
                for c in consumers { c.endImage(previous, context: context) }
            }
            context.note(record)
            for c in consumers { c.add(record, context: context) }
        }
        func drain() {
            let items = join.ready
            join.ready.removeAll()
            for item in items {
                if item.joined {
                    context.visit(item.origin.log) {
                        context.note(item.record)
                        for c in consumers { c.add(item.record, context: context) }
                    }
                } else {
                    deliver(item.record, item.origin.log)
                }
            }
        }
        do {
            try reader.read(paths: paths) { file, _, record in
                let pass = join.take(record, origin: HandoffJoin.Origin(log: file, file: nil, line: 0))
                if !join.ready.isEmpty { drain() }
                if pass { deliver(record, file) }
            }
        } catch {
            throw LoadFailure(error: error, warnings: reader.warnings)
        }
        // The halves that found no other half, as they are, in their own images.
        join.finish()
        drain()
        context.handoffs = (join.joinedCount, join.unjoinedParents, join.unjoinedChildren, join.overLimit)
        if context.image >= 0 { for c in consumers { c.endImage(context.image, context: context) } }
        context.setWarnings(reader.warnings)
        return Result(har: har?.finish(context: context), trace: trace?.finish(context: context),
                      otlp: otlp?.finish(context: context), context: context)
    }
}
