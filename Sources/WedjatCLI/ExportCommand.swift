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
            written, a collector that refused or did not answer), 2 when there was nothing to read.
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
            var contents: ExportInput.Contents = []
            if har != nil { contents.formUnion(HARExport.contents) }
            if chromeTrace != nil { contents.formUnion(ChromeTraceExport.contents) }
            if otlpJSON != nil || otlpURL != nil { contents.formUnion(OTLPExport.contents) }
            let input: ExportInput
            do {
                input = try ExportInput.load(paths: inputs, contents: contents)
            } catch {
                for w in error.warnings { printError("wedjat: " + w.description) }
                printError("wedjat: error: \(error.description)")
                throw ExitCode(2)
            }
            for w in input.warnings { printError("wedjat: " + w.description) }
            if let summarized = input.summarizedWarning { printError("wedjat: warning: " + summarized) }

            if let har {
                failed = !write(to: har, what: "HAR entries") { HARExport.render(input, into: $0) } || failed
            }
            if let chromeTrace {
                failed = !write(to: chromeTrace, what: "trace events") { ChromeTraceExport.render(input, into: $0) } || failed
            }
            if otlpJSON != nil || otlpURL != nil {
                failed = !exportOTLP(input) || failed
            }
        }

        if let folded {
            do {
                let analysis = try RunAnalysis.load(paths: inputs)
                let text = try FoldedStacks.render(analysis)
                let lines = text.split(separator: "\n").count
                failed = !write(to: folded, what: "folded stacks") { out in
                    var out = out
                    out.append(text)
                    return ExportDocument(body: out, count: lines, notes: [])
                } || failed
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

    /// Spans in requests of this many (an OTLP/HTTP receiver caps a request's size, 20 MiB
    /// by default in the Collector; 1,000 spans are about 2 MB of JSON).
    static let spansPerRequest = 1000

    /// Writes one output as it is rendered and says so on stderr; false (after saying why)
    /// when it could not.
    private func write(to path: String, what: String, render: (ExportText) -> ExportDocument) -> Bool {
        guard let file = OutputFile(path) else { return false }
        var doc = render(ExportText(sink: file.write))
        doc.body.flush()
        for note in doc.notes { printError("wedjat: note: \(note)") }
        guard file.close() else { return false }
        printError("wedjat: wrote \(doc.count) \(what) to \(file.name)")
        return true
    }

    /// The OTLP file (JSON Lines: trace requests, then the metrics request) and/or the
    /// collector, request by request.
    private func exportOTLP(_ input: ExportInput) -> Bool {
        var file: OutputFile?
        if let otlpJSON {
            guard let opened = OutputFile(otlpJSON) else { return false }
            file = opened
        }
        let sender = otlpURL.map { OTLPSender(endpoint: $0, timeoutSeconds: otlpTimeout) }
        var sendFailed = false
        var requests = 0
        var answers: [String: Int] = [:]
        let (spans, notes) = OTLPExport.traces(input, spansPerRequest: Self.spansPerRequest) { doc in
            file?.write(doc.body)
            file?.write(Array("\n".utf8))
            if let sender, !sendFailed {
                sendFailed = !send(doc, signal: "traces", with: sender) { answers[$0, default: 0] += 1 }
                requests += 1
            }
            // A collector that failed once gets no more; the file is still written.
            return file != nil || !sendFailed
        }
        let metrics = OTLPExport.metrics(input)
        for note in notes + metrics.notes { printError("wedjat: note: \(note)") }
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
                metricsFailed = !send(metrics, signal: "metrics", with: sender) { status in
                    printError("wedjat: sent \(metrics.count) metric data points to \(sender.url(for: "metrics")): \(status)")
                }
            }
            ok = ok && !sendFailed && !metricsFailed
        }
        return ok
    }

    /// POSTs one request; `answered` gets "HTTP 200" on success, else the error is said here.
    private func send(_ doc: ExportDocument, signal: String, with sender: OTLPSender, answered: (String) -> Void) -> Bool {
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
