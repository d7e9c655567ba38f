import ArgumentParser
import Foundation
import WedjatAnalysis

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Summarise wedjat logs: processes, connections per peer, HTTP per host, process tree, warnings.",
        discussion: "Exit status: 0 when a report was produced (even with warnings), 2 when there was nothing to read.")

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable { case text, json }
    enum ColorMode: String, ExpressibleByArgument, CaseIterable { case auto, always, never }

    @Option(help: "Output format.")
    var format: OutputFormat = .text

    @Option(help: "Colour the text report: auto = only when stdout is a terminal and NO_COLOR is unset.")
    var color: ColorMode = .auto

    @Argument(help: "Log files or directories (searched recursively for *.ndjson). Default: $WEDJAT_DIR, else ./wedjat-logs.")
    var paths: [String] = []

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let inputs = paths.isEmpty ? [env["WEDJAT_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "wedjat-logs"] : paths
        let analysis: RunAnalysis
        do {
            analysis = try RunAnalysis.load(paths: inputs)
        } catch {
            // Say why nothing was readable: the per-line warnings are the explanation.
            for w in error.warnings { printError("wedjat: " + w.description) }
            printError("wedjat: error: \(error.description)")
            throw ExitCode(2)
        }
        let report = Report(analysis: analysis)
        switch format {
        case .json:
            print(try JSONReport.render(report), terminator: "")
        case .text:
            let useColor: Bool
            switch color {
            case .always: useColor = true
            case .never: useColor = false
            case .auto: useColor = isatty(STDOUT_FILENO) == 1 && env["NO_COLOR"] == nil
            }
            print(TextReport(color: useColor).render(report), terminator: "")
        }
    }
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
