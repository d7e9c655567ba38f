import ArgumentParser
import Foundation
import WedjatAnalysis

/// `wedjat diff RUN_A RUN_B`: two runs side by side, and `--fail-if` thresholds for CI.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two runs: headline numbers overall and per host, with thresholds for a regression gate.",
        discussion: """
            RUN is a log directory or file (as for `wedjat report`), or a report saved with \
            `wedjat report --format json` (a .json file).

            --fail-if: \(Threshold.syntax). A threshold whose target is in neither run is an error \
            (exit 2); one that only one run has is reported as not evaluated.

            Changes within the runs' own spread (the 95% range of a percentile or a rate) are \
            marked ~ and not coloured.

            Exit status: 0; 1 when a --fail-if threshold is crossed; 2 on bad input (a run that \
            cannot be read, a malformed threshold).
            """)

    @Option(help: "Output format.")
    var format: ReportCommand.OutputFormat = .text

    @Option(help: "Colour the text: auto = only when stdout is a terminal and NO_COLOR is unset.")
    var color: ReportCommand.ColorMode = .auto

    @Option(name: .customLong("fail-if"), help: ArgumentHelp("Exit 1 when this threshold is crossed (repeatable).", valueName: "expr"))
    var failIf: [String] = []

    @Argument(help: ArgumentHelp("The two runs: A (the baseline), then B.", valueName: "run"))
    var runs: [String] = []

    func run() throws {
        guard runs.count == 2 else {
            printError("wedjat: error: diff takes two runs, A and B (got \(runs.count)); see wedjat diff --help")
            throw ExitCode(2)
        }
        // Thresholds first: a typo must not cost the reading of two runs.
        var thresholds: [Threshold] = []
        for expr in failIf {
            do { thresholds.append(try Threshold(parsing: expr)) } catch {
                printError("wedjat: error: \(error)")
                throw ExitCode(2)
            }
        }
        let a = try report(runs[0], label: "A"), b = try report(runs[1], label: "B")
        let diff: RunDiff
        do {
            diff = try RunDiff(a: a, pathA: runs[0], b: b, pathB: runs[1], thresholds: thresholds)
        } catch {
            printError("wedjat: error: \(error)")
            throw ExitCode(2)
        }
        switch format {
        case .json:
            print(try DiffJSON.render(diff), terminator: "")
        case .text:
            let env = ProcessInfo.processInfo.environment
            let useColor = color == .always || (color == .auto && isatty(STDOUT_FILENO) == 1 && env["NO_COLOR"] == nil)
            print(DiffText(color: useColor).render(diff), terminator: "")
        }
        if diff.failed { throw ExitCode(1) }
    }

    private func report(_ path: String, label: String) throws -> Report {
        var isDir: ObjCBool = false
        if path.hasSuffix(".json"), FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue {
            do { return try Report.load(json: path) } catch {
                printError("wedjat: error: \(error)")
                throw ExitCode(2)
            }
        }
        return Report(analysis: try loadRun([path], label: label))
    }
}
