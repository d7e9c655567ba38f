import Foundation
#if canImport(Glibc)
import Glibc
#endif
import WedjatAnalysis

/// `wedjat ship`: follows a log directory and sends what the logs gain to an OTLP/HTTP
/// collector, segment by segment, each batch's position checkpointed in `.ship/` once the
/// collector accepted it (ShipCheckpoint.swift). The logs on disk are the buffer: while the
/// collector is down nothing more is read, so memory stays at one batch.
public final class Shipper {
    public struct Options {
        public var endpoint: String
        /// OTLP/JSON instead of protobuf.
        public var json = false
        public var gzip = true
        public var timeoutSeconds = 10.0
        /// Spans in one request (collectors cap a request's size).
        public var spansPerRequest = 1000
        /// Log bytes read into one batch.
        public var batchBytes = 4 << 20
        /// How often the directory is looked at and the logs read when caught up.
        public var pollSeconds = 1.0
        public var maxBackoffSeconds = 30.0

        public init(endpoint: String) { self.endpoint = endpoint }
    }

    /// Totals since the start, and what had to be skipped.
    public struct Stats: Equatable {
        public var requests = 0
        public var spans = 0
        public var dataPoints = 0
        public var bytesSent = 0
        public var batches = 0
        public var records = 0
        public var segmentsDone = 0
        public var failedAttempts = 0
        // Skipped, each counted once, when its batch is committed.
        public var unreadableLines = 0
        public var longLines = 0
        /// Spans and data points the collector refused (an HTTP 4xx that retrying cannot fix,
        /// or a partial success), and the requests.
        public var rejectedSpans = 0
        public var rejectedDataPoints = 0
        public var rejectedRequests = 0
        /// Exchanges without a span: no request start seen; only counted in `http_summary`
        /// (they are in the histograms unless `summarizedNotInHistograms`).
        public var exchangesWithoutStart = 0
        public var summarizedExchanges: Int64 = 0
        public var summarizedNotInHistograms: Int64 = 0
        /// Segments the writer deleted before they were shipped (`segments_removed.unshipped`).
        public var segmentsLost: Int64 = 0
        /// Bytes left at the end of a segment that will not grow (a writer killed mid-line).
        public var truncatedBytes: Int64 = 0
        /// Checkpoints that could not be written (`.ship/` unwritable).
        public var checkpointFailures = 0
    }

    public enum Step { case busy, idle, waiting }

    /// Sends one request; throws `OTLPSender.Failure` (`status` set when the collector answered).
    public typealias Transport = (_ body: Data, _ signal: String, _ contentType: String, _ encoding: String?) throws -> OTLPSender.Answer

    public let options: Options
    public private(set) var stats = Stats()
    let directory: LogDirectory
    let state: ShipState
    private let transport: Transport
    private let say: (String) -> Void
    private var segments: [String: SegmentShip] = [:]
    private var images: [String: ProcessLog] = [:]
    private var scratch = [UInt8](repeating: 0, count: 256 * 1024)
    private let decoder = LineDecoder()
    private var lastScan = Date.distantPast
    private var lastPrune = Date.distantPast
    private var retryAt: Date?
    private var backoff = 0.0
    private var outageSince: Date?
    private var outageAttempts = 0
    private var checkpointsFailing = false

    /// `transport` sends one request (default: OTLPSender); `say` prints a line for the user.
    public init(directory: String, options: Options, transport: Transport? = nil, say: @escaping (String) -> Void) {
        self.options = options
        self.directory = LogDirectory(path: directory)
        self.state = ShipState(logDirectory: self.directory.path)
        let sender = OTLPSender(endpoint: options.endpoint, timeoutSeconds: options.timeoutSeconds)
        if let transport {
            self.transport = transport
        } else if let connection = HTTPConnection(endpoint: options.endpoint, timeoutSeconds: options.timeoutSeconds) {
            // http://: one kept-alive connection.
            self.transport = { body, signal, type, encoding in
                try connection.post(signal: signal, body: body, contentType: type, contentEncoding: encoding)
            }
        } else {
            self.transport = { body, signal, type, encoding in
                try sender.send(body, signal: signal, contentType: type, contentEncoding: encoding)
            }
        }
        self.say = say
    }

    public func prepare() throws(ShipState.Failure) { try state.prepare() }

    /// Segments being followed (not all sent yet).
    public var openSegments: Int { segments.count }

    /// One round: new files, then one batch of every segment with something to send. `.busy`
    /// when a batch was full (call again at once), `.waiting` while the collector is down.
    public func step(now: Date = Date()) -> Step {
        if let retryAt, now < retryAt { return .waiting }
        if now.timeIntervalSince(lastScan) >= options.pollSeconds || segments.isEmpty {
            lastScan = now
            for file in directory.newFiles(now: now, accept: { !state.isDone($0) }) { adopt(file, now: now) }
            for w in directory.takeWarnings() { say("warning: " + w) }
        }
        if now.timeIntervalSince(lastPrune) >= 30 {
            lastPrune = now
            if let names = directory.listNames() { state.prune(present: Set(names)) }
        }
        var busy = false
        let order = segments.values.sorted { ($0.file.key, $0.file.segment) < ($1.file.key, $1.file.segment) }
        for seg in order {
            switch ship(seg, now: now) {
            case .failed:
                return .waiting
            case .sent(let full):
                busy = busy || full
            case .nothing:
                finishIfComplete(seg, now: now)
            }
        }
        return busy ? .busy : .idle
    }

    // MARK: segments

    private func adopt(_ file: LogFile, now: Date) {
        var problem: String?
        let checkpoint = state.checkpoint(file.name, problem: &problem) ?? ShipCheckpoint()
        if let problem { say("warning: " + problem) }
        guard let tail = FileTail(path: file.path, offset: checkpoint.offset) else {
            directory.forget(file.name)   // try again at the next scan
            return
        }
        if images[file.key] == nil {
            var image = ProcessLog(path: file.key)
            image.start = file.start
            images[file.key] = image
        }
        segments[file.name] = SegmentShip(file: file, tail: tail, checkpoint: checkpoint, now: now)
    }

    private enum Outcome { case nothing, sent(full: Bool), failed }

    private func ship(_ seg: SegmentShip, now: Date) -> Outcome {
        guard let image = images[seg.file.key] else { return .nothing }
        let c = seg.checkpoint
        // A batch whose spans were sent before a restart: made again exactly, up to its end.
        let pendingEnd = c.tracesSent ? c.batchEnd : nil
        var batch = ShipBatch(image: image, intervalStartUs: c.intervalStartTs ?? seg.file.start.segmentStartTs ?? seg.file.start.ts)
        var endOffset = c.offset
        var full = false
        var unreadable = 0
        seg.tail.setOffset(c.offset)
        let longBefore = seg.tail.longLinesSkipped
        let stop = seg.tail.readLines(scratch: &scratch, maxBytes: options.batchBytes, until: pendingEnd ?? .max) { line, end in
            let record: Record
            do { record = try decoder.decode(line) } catch {
                unreadable += 1
                endOffset = end
                return true
            }
            if case .processStart = record { endOffset = end; return true }   // each segment's copy
            if pendingEnd == nil, ShipBatch.makesSpan(record), batch.spans.count >= options.spansPerRequest {
                full = true
                return false
            }
            batch.add(record)
            endOffset = end
            return true
        }
        if stop == .limit && pendingEnd == nil { full = true }
        let longLines = seg.tail.longLinesSkipped - longBefore
        if endOffset == c.offset && longLines == 0 { return .nothing }
        seg.lastGrowth = now
        endOffset = max(endOffset, seg.tail.offset)

        let content = batch.resourceBatch()
        let spansInBatch = content.spans.count
        if spansInBatch > 0 && !c.tracesSent {
            guard send(content, signal: "traces", items: spansInBatch, now: now) else { return .failed }
            if !content.metrics.isEmpty {
                var half = c
                half.batchEnd = endOffset
                half.tracesSent = true
                save(half, seg)
            }
        }
        if !content.metrics.isEmpty {
            guard send(content, signal: "metrics", items: content.dataPoints, now: now) else { return .failed }
        }
        save(ShipCheckpoint(offset: endOffset, intervalStartTs: max(batch.intervalStartUs, batch.maxTs),
                            ended: batch.endRecord ?? c.ended), seg)
        commit(batch, unreadable: unreadable, longLines: longLines, seg: seg)
        return .sent(full: full)
    }

    private func commit(_ batch: ShipBatch, unreadable: Int, longLines: Int, seg: SegmentShip) {
        stats.batches += 1
        stats.records += batch.records
        stats.unreadableLines += unreadable
        stats.longLines += longLines
        stats.exchangesWithoutStart += batch.exchangesWithoutStart
        stats.summarizedExchanges += batch.summarizedExchanges
        stats.summarizedNotInHistograms += batch.summarizedNotInHistograms
        if unreadable > 0 { say("warning: \(seg.file.path): \(unreadable) unreadable line\(unreadable == 1 ? "" : "s") skipped") }
        if longLines > 0 { say("warning: \(seg.file.path): \(longLines) line\(longLines == 1 ? "" : "s") over 16 MiB skipped") }
        for r in batch.removedSegments where r.unshipped > 0 {
            stats.segmentsLost += r.unshipped
            say("warning: \(seg.file.path): the writer removed \(r.unshipped) segment\(r.unshipped == 1 ? "" : "s") before they were"
                + " shipped (its retention passed twice WEDJAT_RETAIN_MB): their records were never sent")
        }
    }

    /// The checkpoint in memory always (what was sent is never sent again by this process),
    /// on disk when it can be: when it cannot, shipping goes on and says that a restart would
    /// send again what was sent since (duplicates, never a loss).
    private func save(_ c: ShipCheckpoint, _ seg: SegmentShip) {
        seg.checkpoint = c
        do {
            try state.save(c, for: seg.file.name)
            if checkpointsFailing {
                checkpointsFailing = false
                say("checkpoints are written again")
            }
        } catch {
            stats.checkpointFailures += 1
            if !checkpointsFailing {
                checkpointsFailing = true
                say("error: \(error.description): shipping goes on, but a restart would send again what was sent"
                    + " since the last checkpoint written")
            }
        }
    }

    /// Done when nothing more can come: its `segment_end` was sent (the process writes the next
    /// one), or after `process_end` and 2 s without growth, or it was deleted, or its process
    /// is gone and the file stopped growing (killed: no `process_end`).
    private func finishIfComplete(_ seg: SegmentShip, now: Date) {
        let (size, deleted) = seg.tail.status()
        let quiet = now.timeIntervalSince(seg.lastGrowth)
        let complete: Bool
        switch seg.checkpoint.ended {
        case "segment_end"?: complete = true
        case "process_end"?: complete = quiet >= 2
        default: complete = (deleted || !processAlive(seg.file.start.pid)) && quiet >= 5
        }
        guard complete else { return }
        if size > seg.checkpoint.offset {
            stats.truncatedBytes += size - seg.checkpoint.offset
            say("warning: \(seg.file.path): its last \(size - seg.checkpoint.offset) bytes are not a whole line (the writer stopped mid-line); skipped")
        }
        do {
            try state.markDone(seg.file.name, seg.checkpoint)
        } catch {
            stats.checkpointFailures += 1
            if !checkpointsFailing {
                checkpointsFailing = true
                say("error: \(error.description); the log writer will not remove this segment before it can be written")
            }
            return
        }
        stats.segmentsDone += 1
        segments[seg.file.name] = nil
        if !segments.values.contains(where: { $0.file.key == seg.file.key }) { images[seg.file.key] = nil }
    }

    // MARK: sending

    /// Sends one request; false when it must be tried again later (the collector is down or
    /// answered 408, 429 or 5xx). A request the collector refuses for good (another 4xx) is
    /// counted as rejected and not sent again.
    private func send(_ content: OTLPResourceBatch, signal: String, items: Int, now: Date) -> Bool {
        let body: [UInt8]
        let type: String
        if options.json {
            body = Array((signal == "traces" ? content.tracesJSON() : content.metricsJSON()).utf8)
            type = "application/json"
        } else {
            body = signal == "traces" ? content.tracesProtobuf() : content.metricsProtobuf()
            type = "application/x-protobuf"
        }
        var payload = body
        var encoding: String?
        if options.gzip {
            do {
                payload = try Gzip.compress(body)
                encoding = "gzip"
            } catch {
                say("warning: \(error.description); sending uncompressed")
            }
        }
        do {
            let answer = try transport(Data(payload), signal, type, encoding)
            stats.requests += 1
            stats.bytesSent += payload.count
            if signal == "traces" { stats.spans += items } else { stats.dataPoints += items }
            noteRejected(answer, signal: signal)
            recovered(now)
            return true
        } catch {
            let error = error as? OTLPSender.Failure ?? OTLPSender.Failure(description: "\(error)")
            if let status = error.status, (400 ..< 500).contains(status), status != 408, status != 429 {
                stats.rejectedRequests += 1
                if signal == "traces" { stats.rejectedSpans += items } else { stats.rejectedDataPoints += items }
                say("warning: the collector refused \(items) \(signal == "traces" ? "spans" : "data points") for good"
                    + " (\(error.description)); they are skipped")
                recovered(now)
                return true
            }
            stats.failedAttempts += 1
            if outageSince == nil {
                outageSince = now
                say("collector unavailable: \(error.description); retrying with backoff (up to \(Int(options.maxBackoffSeconds)) s)."
                    + " Nothing is lost: the logs are the buffer")
            }
            failed(now)
            return false
        }
    }

    private func failed(_ now: Date) {
        outageAttempts += 1
        backoff = backoff == 0 ? 0.5 : min(options.maxBackoffSeconds, backoff * 2)
        retryAt = now.addingTimeInterval(backoff)
    }

    private func recovered(_ now: Date) {
        if let since = outageSince {
            say("collector back after \(Format.fixed(now.timeIntervalSince(since), 1)) s (\(outageAttempts) failed attempt\(outageAttempts == 1 ? "" : "s"))")
        }
        outageSince = nil
        outageAttempts = 0
        backoff = 0
        retryAt = nil
    }

    /// A partial success in the answer (protobuf `partial_success`, or OTLP/JSON's).
    private func noteRejected(_ answer: OTLPSender.Answer, signal: String) {
        var rejected: Int64 = 0
        var message = ""
        if let text = answer.partialSuccess {
            message = text
            rejected = Int64(text.prefix { $0.isNumber }) ?? 0
        } else if !answer.body.isEmpty, !options.json, let response = try? ProtoReader([UInt8](answer.body)),
                  let partial = response.first(1)?.message {
            rejected = Int64(bitPattern: partial.first(1)?.uint64 ?? 0)
            message = partial.first(2)?.string ?? ""
        }
        guard rejected > 0 || !message.isEmpty else { return }
        if signal == "traces" { stats.rejectedSpans += Int(rejected) } else { stats.rejectedDataPoints += Int(rejected) }
        say("warning: the collector accepted the \(signal) request but rejected \(rejected)"
            + (message.isEmpty ? "" : ": \(message)"))
    }

    /// What was sent and skipped, for the end of the run.
    public func summary() -> [String] {
        let s = stats
        var lines = ["sent \(s.spans) spans and \(s.dataPoints) data points in \(s.requests) requests"
                     + " (\(Format.bytes(Int64(s.bytesSent)))\(options.gzip ? " gzip" : "")) to \(options.endpoint);"
                     + " \(s.records) records in \(s.batches) batches; \(s.segmentsDone) segments done"]
        if s.failedAttempts > 0 { lines.append("\(s.failedAttempts) attempts failed and were retried") }
        if s.checkpointFailures > 0 { lines.append("\(s.checkpointFailures) checkpoints could not be written to \(state.dir)") }
        var skipped: [String] = []
        if s.unreadableLines > 0 { skipped.append("\(s.unreadableLines) unreadable lines") }
        if s.longLines > 0 { skipped.append("\(s.longLines) lines over 16 MiB") }
        if s.truncatedBytes > 0 { skipped.append("\(s.truncatedBytes) bytes of unfinished last lines") }
        if s.rejectedSpans + s.rejectedDataPoints > 0 {
            skipped.append("\(s.rejectedSpans) spans and \(s.rejectedDataPoints) data points the collector refused")
        }
        if s.segmentsLost > 0 { skipped.append("\(s.segmentsLost) segments the writer removed before they were sent") }
        if s.exchangesWithoutStart > 0 { skipped.append("\(s.exchangesWithoutStart) exchanges without a request start (no span)") }
        if !skipped.isEmpty { lines.append("skipped: " + skipped.joined(separator: ", ")) }
        if s.summarizedExchanges > 0 {
            lines.append("\(s.summarizedExchanges) exchanges were only counted in http_summary records (past WEDJAT_HTTP_RECORDS):"
                         + " no spans; " + (s.summarizedNotInHistograms == 0 ? "all are in the duration histograms"
                                            : "\(s.summarizedNotInHistograms) of them are not in the histograms either (older summaries)"))
        }
        return lines
    }
}

/// One segment being sent.
final class SegmentShip {
    let file: LogFile
    let tail: FileTail
    var checkpoint: ShipCheckpoint
    var lastGrowth: Date

    init(file: LogFile, tail: FileTail, checkpoint: ShipCheckpoint, now: Date) {
        self.file = file; self.tail = tail; self.checkpoint = checkpoint; lastGrowth = now
    }
}
