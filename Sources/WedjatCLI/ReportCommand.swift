import ArgumentParser
import Foundation
import WedjatAnalysis

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Summarise wedjat logs: hosts, HTTP statuses, slowest requests, peers, stalls, vitals, start-up, processes, drops.",
        discussion: "A progress bar shows on stderr while a long input is read, when stderr is a terminal. "
            + "Exit status: 0 when a report was produced (even with warnings), 2 when there was nothing to read.")

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable { case text, json }
    enum ColorMode: String, ExpressibleByArgument, CaseIterable { case auto, always, never }

    @Option(help: "Output format: text, or json for the same content as one JSON document (docs/REPORT_JSON.md).")
    var format: OutputFormat = .text

    @Option(help: "Colour the text report: auto = only when stdout is a terminal and NO_COLOR is unset.")
    var color: ColorMode = .auto

    @Option(help: ArgumentHelp("Write a self-contained HTML report (waterfall, latency per host, CPU and memory, stall flame graph) to this file (- for standard output) instead of printing a report.", valueName: "file"))
    var html: String?

    @Option(help: ArgumentHelp("How many of the slowest HTTP exchanges to list.", valueName: "n"))
    var top = 10

    @Argument(help: "Log files or directories (searched recursively for *.ndjson). Default: $WEDJAT_DIR, else ./wedjat-logs.")
    var paths: [String] = []

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let inputs = paths.isEmpty ? [env["WEDJAT_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "wedjat-logs"] : paths
        let analysis = try loadRun(inputs, slowest: max(0, top), html: html != nil)
        let report = Report(analysis: analysis)
        if let html {
            try writeHTML(analysis, report, to: html)
            return
        }
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
            print(TextReport(color: useColor, width: terminalWidth()).render(report), terminator: "")
        }
    }
}

extension ReportCommand {
    /// The stall stacks are the only part that can fail (symbolizing); the page says why then.
    private func writeHTML(_ analysis: RunAnalysis, _ report: Report, to path: String) throws {
        var page = HTMLReport()
        do {
            page.foldedStacks = try FoldedStacks.render(analysis)
        } catch {
            page.stallError = String(describing: error)
            printError("wedjat: warning: stall stacks: \(error)")
        }
        do {
            let html = page.render(analysis, report: report)
            // `-`: standard output, as for every other output of wedjat.
            if path == "-" { FileHandle.standardOutput.write(Data(html.utf8)); return }
            try Data(html.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            printError("wedjat: error: cannot write \(path): \(error.localizedDescription)")
            throw ExitCode(1)
        }
    }
}

/// The terminal's width when stdout is one ($COLUMNS first, as shells set it), else the
/// report's default (100).
func terminalWidth() -> Int {
    if let c = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), c > 0 { return c }
    var w = winsize()
    if isatty(STDOUT_FILENO) == 1, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0 { return Int(w.ws_col) }
    return TextReport.defaultWidth
}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
