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

            Exit status: 0 when every output was written or sent, 1 when one failed (a file that cannot be \
            written, a collector that refused or did not answer), 2 when there was nothing to read.
            """)

    @Option(name: .customLong("har"), help: ArgumentHelp("HTTP exchanges (client side) as HAR 1.2.", valueName: "FILE"))
    var har: String?

    @Option(name: .customLong("chrome-trace"),
            help: ArgumentHelp("Connections, HTTP, DNS and stalls as Trace Event JSON (Perfetto, chrome://tracing).", valueName: "FILE"))
    var chromeTrace: String?

    @Option(name: .customLong("otlp-json"),
            help: ArgumentHelp("OpenTelemetry spans and metrics in the OTLP file format (JSON Lines: the traces request, then the metrics request).", valueName: "FILE"))
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

            if let har {
                failed = !write(HARExport.render(input), to: har, what: "HAR entries") || failed
            }
            if let chromeTrace {
                failed = !write(ChromeTraceExport.render(input), to: chromeTrace, what: "trace events") || failed
            }
            if otlpJSON != nil || otlpURL != nil {
                let traces = OTLPExport.traces(input)
                let metrics = OTLPExport.metrics(input)
                for note in traces.notes + metrics.notes { printError("wedjat: note: \(note)") }
                if let otlpJSON {
                    let lines = OTLPExport.jsonLines(traces: traces, metrics: metrics)
                    failed = !write(lines, to: otlpJSON, what: "spans and metric data points", notes: false) || failed
                }
                if let otlpURL {
                    failed = !send(traces, signal: "traces", what: "spans", to: otlpURL) || failed
                    failed = !send(metrics, signal: "metrics", what: "metric data points", to: otlpURL) || failed
                }
            }
        }

        if let folded {
            do {
                let analysis = try RunAnalysis.load(paths: inputs)
                let text = try FoldedStacks.render(analysis)
                let lines = text.split(separator: "\n").count
                failed = !write(ExportDocument(text: text, count: lines, notes: []), to: folded, what: "folded stacks") || failed
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

    /// Writes one output and says so on stderr; false (after saying why) when it could not.
    private func write(_ doc: ExportDocument, to path: String, what: String, notes: Bool = true) -> Bool {
        if notes { for note in doc.notes { printError("wedjat: note: \(note)") } }
        do {
            if path == "-" {
                FileHandle.standardOutput.write(Data(doc.text.utf8))
            } else {
                try Data(doc.text.utf8).write(to: URL(fileURLWithPath: path))
            }
        } catch {
            printError("wedjat: error: cannot write \(path): \((error as NSError).localizedDescription)")
            return false
        }
        printError("wedjat: wrote \(doc.count) \(what) to \(path == "-" ? "standard output" : path)")
        return true
    }

    private func send(_ doc: ExportDocument, signal: String, what: String, to endpoint: String) -> Bool {
        do {
            let answer = try OTLPSender(endpoint: endpoint, timeoutSeconds: otlpTimeout).send(doc.text, signal: signal)
            printError("wedjat: sent \(doc.count) \(what) to \(answer.url): HTTP \(answer.status)")
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
