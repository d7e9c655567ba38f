import ArgumentParser
import Foundation
import WedjatAnalysis

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export wedjat logs as HAR, a Chrome/Perfetto trace, OpenTelemetry (OTLP) or folded stacks.",
        discussion: """
            Examples:
              wedjat export --har run.har wedjat-logs/
              wedjat export --chrome-trace run.json --otlp http://127.0.0.1:4318

            Several outputs can be asked for at once; FILE `-` is standard output. Formats: docs/EXPORTS.md.
            Exchanges past WEDJAT_HTTP_RECORDS, only counted in http_summary records, have no HAR entry, \
            trace slice or span (a summary has no times of its own); they are in the OTLP duration histograms \
            (a summary has exact counts on their buckets). A warning says how many.

            Exit status: 0 when every output was written or sent, 1 when one failed (a file that cannot be \
            written, a collector that refused or did not answer) or had nothing in it (a HAR without an entry, \
            a trace without an event, OTLP without a span or data point, no stall stack to fold: stderr says \
            why, e.g. the connections carried HTTP/2), 2 when there was nothing to read.
            """)

    @Option(name: .customLong("har"), help: ArgumentHelp("HTTP exchanges (client side) as HAR 1.2.", valueName: "FILE"))
    var har: String?

    @Option(name: .customLong("chrome-trace"),
            help: ArgumentHelp("Connections, HTTP, DNS and stalls as Trace Event JSON (Perfetto, chrome://tracing).", valueName: "FILE"))
    var chromeTrace: String?

    @Option(name: .customLong("otlp-json"),
            help: ArgumentHelp("OpenTelemetry spans and metrics in the OTLP file format (JSON Lines: trace requests of at most 1,000 spans, then the metrics request).", valueName: "FILE"))
    var otlpJSON: String?

    @Option(name: .customLong("otlp"),
            help: ArgumentHelp("Send the spans and metrics to an OTLP/HTTP collector (JSON to URL/v1/traces and URL/v1/metrics).", valueName: "URL"))
    var otlpURL: String?

    @Option(name: .customLong("otlp-timeout"), help: ArgumentHelp("Seconds to wait for the collector.", valueName: "SECONDS"))
    var otlpTimeout: Double = 10

    @Option(help: ArgumentHelp("Stall stacks in flamegraph.pl's folded format.", valueName: "FILE"))
    var folded: String?

    @Argument(help: "Log files or directories (searched recursively for *.ndjson). Default: $WEDJAT_DIR, else ./wedjat-logs.")
    var paths: [String] = []

    func validate() throws {
        let files = [har, chromeTrace, otlpJSON, folded].compactMap { $0 }
        guard !files.isEmpty || otlpURL != nil else {
            throw ValidationError("nothing to export: give at least one of --har, --chrome-trace, --otlp-json, --otlp, --folded")
        }
        guard files.filter({ $0 == "-" }).count <= 1 else {
            throw ValidationError("only one output can go to standard output (-)")
        }
        guard otlpTimeout > 0 else { throw ValidationError("--otlp-timeout must be positive") }
    }

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let inputs = paths.isEmpty ? [env["WEDJAT_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "wedjat-logs"] : paths
        var failed = false

        if har != nil || chromeTrace != nil || otlpJSON != nil || otlpURL != nil {
            // Every output is opened first (a path that cannot be written is said before reading),
            // then written while the logs are read once.
            var harFile: OutputFile?, traceFile: OutputFile?, otlpFile: OutputFile?
            if let har { harFile = OutputFile(har); failed = failed || harFile == nil }
            if let chromeTrace { traceFile = OutputFile(chromeTrace); failed = failed || traceFile == nil }
            if let otlpJSON { otlpFile = OutputFile(otlpJSON); failed = failed || otlpFile == nil }
            let sender = otlpURL.map { OTLPSender(endpoint: $0, timeoutSeconds: otlpTimeout) }
            var otlp = OTLPDelivery(file: otlpFile, sender: sender)
            let wantOTLP = otlpFile != nil || sender != nil
            let outputs = ExportStream.Outputs(
                har: harFile.map { f in ExportText(sink: f.write) }, trace: traceFile.map { f in ExportText(sink: f.write) },
                otlp: wantOTLP ? { doc in otlp.deliver(doc) } : nil, spansPerRequest: Self.spansPerRequest)
            let result: ExportStream.Result
            do {
                var reader = LogReader()
                reader.threads = readThreads()
                result = try ExportStream.run(paths: inputs, outputs: outputs, reader: reader)
            } catch {
                for w in error.warnings { printError("wedjat: " + w.description) }
                printError("wedjat: error: \(error.description)")
                throw ExitCode(2)
            }
            for w in result.context.warnings { printError("wedjat: " + w.description) }
            if let summarized = result.context.summarizedWarning { printError("wedjat: warning: " + summarized) }
            let context = result.context
            // An output with nothing in it says why, and fails: an empty HAR must not pass for a
            // run without HTTP when its HTTP was HTTP/2 or TLS that wedjat could not read.
            if let file = harFile, let doc = result.har {
                failed = !finish(file, doc, what: "HAR entries") || failed
                if doc.count == 0 { empty("HAR", file.name, context.whyEmpty("har")); failed = true }
            }
            if let file = traceFile, let doc = result.trace {
                failed = !finish(file, doc, what: "trace events") || failed
                if doc.count == 0 { empty("trace", file.name, context.whyEmpty("trace")); failed = true }
            }
            if wantOTLP {
                failed = !otlp.report(spans: result.otlp?.count ?? 0) || failed
                if (result.otlp?.count ?? 0) == 0 && otlp.metricPoints == 0 {
                    empty("OpenTelemetry", otlpFile?.name ?? otlpURL ?? "", context.whyEmpty("otlp"))
                    failed = true
                } else if let note = context.undecodedNote(in: "OTLP spans") {
                    printError("wedjat: note: " + note)
                }
            }
        }

        if let folded {
            do {
                let analysis = try RunAnalysis.load(paths: inputs)
                let text = try FoldedStacks.render(analysis)
                let lines = text.split(separator: "\n").count
                if lines == 0 {
                    // An empty file is not a flame graph's input (flamegraph.pl fails on it): say
                    // why there is nothing, write nothing.
                    let stalls = analysis.stalls.count
                    let why = analysis.logs.contains(where: { ($0.start?.stallMs ?? 1) > 0 })
                        ? (stalls == 0 ? "no stalls were recorded" : "the \(stalls) stall\(stalls == 1 ? " has" : "s have") no stack samples")
                        : "stall detection was off (WEDJAT_STALL_MS=0)"
                    printError("wedjat: error: no stall stacks to fold: \(why); \(folded) not written")
                    failed = true
                } else {
                    failed = !write(to: folded, what: "folded stacks") { out in
                        var out = out
                        out.append(text)
                        return ExportDocument(body: out, count: lines, notes: [])
                    } || failed
                }
            } catch let error as LoadFailure {
                for w in error.warnings { printError("wedjat: " + w.description) }
                printError("wedjat: error: \(error.description)")
                throw ExitCode(2)
            } catch {
                printError("wedjat: error: folded stacks: \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }

    /// An output written without anything in it: what it was, and why (exit status 1).
    private func empty(_ format: String, _ name: String, _ why: String) {
        printError("wedjat: error: nothing to export as \(format) (\(name)): \(why)")
    }

    /// Spans in requests of this many (an OTLP/HTTP receiver caps a request's size, 20 MiB
    /// by default in the Collector; 1,000 spans are about 2 MB of JSON).
    static let spansPerRequest = 1000

    /// The rest of a document written while reading: its end, its notes, what was written.
    private func finish(_ file: OutputFile, _ doc: ExportDocument, what: String) -> Bool {
        var body = doc.body
        body.flush()
        for note in doc.notes { printError("wedjat: note: \(note)") }
        guard file.close() else { return false }
        printError("wedjat: wrote \(doc.count) \(what) to \(file.name)")
        return true
    }

    /// Writes one output as it is rendered and says so on stderr; false (after saying why)
    /// when it could not.
    private func write(to path: String, what: String, render: (ExportText) -> ExportDocument) -> Bool {
        guard let file = OutputFile(path) else { return false }
        return finish(file, render(ExportText(sink: file.write)), what: what)
    }

    /// The OTLP requests as they come: a line of the file each, and/or a POST to the collector
    /// (trace requests to /v1/traces, the last one, the metrics, to /v1/metrics). After a failed
    /// POST no more are sent; the file is still written.
    struct OTLPDelivery {
        let file: OutputFile?
        let sender: OTLPSender?
        var requests = 0
        var sendFailed = false
        var answers: [String: Int] = [:]
        var pending: ExportDocument?
        var metrics: ExportDocument?
        /// Data points of the metrics request, once it is made.
        var metricPoints = 0

        init(file: OutputFile?, sender: OTLPSender?) { self.file = file; self.sender = sender }

        /// Trace requests come first, the metrics request last: each is held until the next
        /// shows which it was.
        mutating func deliver(_ doc: ExportDocument) -> Bool {
            if let held = pending { sendTraces(held) }
            pending = doc
            return !sendFailed || file != nil
        }

        private mutating func sendTraces(_ doc: ExportDocument) {
            file?.write(doc.body)
            file?.write(Array("\n".utf8))
            guard let sender, !sendFailed else { return }
            sendFailed = !ExportCommand.send(doc, signal: "traces", with: sender) { answers[$0, default: 0] += 1 }
            requests += 1
        }

        /// The metrics (the last request held), and what was done.
        mutating func report(spans: Int) -> Bool {
            let metrics = pending ?? ExportDocument(text: "{\"resourceMetrics\":[]}", count: 0, notes: [])
            pending = nil
            metricPoints = metrics.count
            file?.write(metrics.body)
            file?.write(Array("\n".utf8))
            var ok = true
            if let file {
                ok = file.close()
                if ok { printError("wedjat: wrote \(spans) spans and \(metrics.count) metric data points to \(file.name)") }
            }
            if let sender {
                if !sendFailed {
                    let statuses = answers.sorted { $0.key < $1.key }.map { "\($0.key)" + ($0.value > 1 ? " ×\($0.value)" : "") }
                    printError("wedjat: sent \(spans) spans in \(requests) request\(requests == 1 ? "" : "s") to "
                               + "\(sender.url(for: "traces")): \(statuses.joined(separator: ", "))")
                }
                var metricsFailed = false
                if !sendFailed {
                    metricsFailed = !ExportCommand.send(metrics, signal: "metrics", with: sender) { status in
                        printError("wedjat: sent \(metrics.count) metric data points to \(sender.url(for: "metrics")): \(status)")
                    }
                }
                ok = ok && !sendFailed && !metricsFailed
            }
            return ok
        }
    }

    /// POSTs one request; `answered` gets "HTTP 200" on success, else the error is said here.
    static func send(_ doc: ExportDocument, signal: String, with sender: OTLPSender, answered: (String) -> Void) -> Bool {
        do {
            let answer = try sender.send(doc.body, signal: signal)
            answered("HTTP \(answer.status)")
            if let partial = answer.partialSuccess {
                printError("wedjat: warning: the collector accepted only part of the \(signal): \(partial)")
            }
            return true
        } catch {
            printError("wedjat: error: OTLP \(signal): \(error.description)")
            return false
        }
    }
}

/// An output file (or standard output for `-`), written chunk by chunk; the first error is
/// said once and fails `close()`.
final class OutputFile {
    let name: String
    private let path: String
    private let handle: FileHandle
    private var failed = false

    /// nil (after saying why) when the file cannot be created.
    init?(_ path: String) {
        self.path = path
        name = path == "-" ? "standard output" : path
        if path == "-" {
            handle = FileHandle.standardOutput
            return
        }
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let h = FileHandle(forWritingAtPath: path) else {
            let dir = (path as NSString).deletingLastPathComponent
            let why = !dir.isEmpty && !FileManager.default.fileExists(atPath: dir) ? "no such directory" : "cannot create the file"
            printError("wedjat: error: cannot write \(path): \(why)")
            return nil
        }
        handle = h
    }

    func write(_ chunk: [UInt8]) {
        guard !failed else { return }
        do {
            try handle.write(contentsOf: chunk)
        } catch {
            failed = true
            printError("wedjat: error: cannot write \(path): \((error as NSError).localizedDescription)")
        }
    }

    func write(_ text: ExportText) { for chunk in text.chunks { write(chunk) } }

    /// false when a write failed.
    func close() -> Bool {
        if path != "-" { try? handle.close() }
        return !failed
    }
}
