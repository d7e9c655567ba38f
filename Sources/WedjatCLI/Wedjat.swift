import ArgumentParser
import WedjatAnalysis

/// `wedjat`: run a command under the LD_PRELOAD monitor, or report on its logs.
@main
struct Wedjat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wedjat",
        abstract: "Watch a program's network connections with LD_PRELOAD, and report on them.",
        version: "wedjat " + WedjatVersion.current,
        subcommands: [RunCommand.self, ReportCommand.self, ExportCommand.self, DiffCommand.self, TopCommand.self, ShipCommand.self])
}
