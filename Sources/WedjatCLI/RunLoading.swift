import ArgumentParser
import Foundation
import WedjatAnalysis

/// Reads the logs of one run for `report` and `diff`: a progress bar on a terminal, and when
/// nothing can be read, why (the reader's warnings, then a hint) and exit status 2.
func loadRun(_ inputs: [String], slowest: Int = 10, label: String = "", html: Bool = false) throws -> RunAnalysis {
    var reader = LogReader()
    // The report shows no logged header: checked, not decoded.
    reader.decodeHeaders = false
    reader.threads = readThreads()
    var ignored: [ReaderWarning] = []
    let progress = ProgressBar(total: LogReader.totalBytes(LogReader.logFiles(in: inputs, warnings: &ignored)),
                               label: label.isEmpty ? "reading logs" : "reading " + label)
    if let progress { reader.onProgress = { progress.update($0) } }
    defer { progress?.finish() }
    do {
        return try RunAnalysis.load(paths: inputs, reader: reader, slowest: slowest, collectRequests: html)
    } catch {
        progress?.finish()
        // Say why nothing was readable: the per-line warnings are the explanation.
        for w in error.warnings { printError("wedjat: " + w.description) }
        printError("wedjat: error: \(error.description)")
        if case .noLogFiles = error.error {
            printError("wedjat: logs are written by programs run with `wedjat run -- CMD` (into ./wedjat-logs)"
                       + " or with LD_PRELOAD (into $WEDJAT_DIR, default /tmp/wedjat-$UID)")
        }
        throw ExitCode(2)
    }
}

/// Threads that read a big log: the CPUs wedjat may use, or WEDJAT_READ_THREADS (for
/// benchmarks: 1 reads on the calling thread only).
func readThreads() -> Int {
    if let v = ProcessInfo.processInfo.environment["WEDJAT_READ_THREADS"].flatMap(Int.init), v >= 1 { return min(v, 64) }
    return LogReader.defaultThreads
}

/// `reading logs  [#####·····]  45%  450.0 MiB / 1.0 GiB  120.3 MiB/s` on stderr, redrawn at
/// most ten times a second, only when stderr is a terminal and only once reading has taken
/// half a second (a short input never shows it); erased at the end.
final class ProgressBar {
    private let total: Int64
    private let label: String
    private let start = Date()
    private var lastDraw = Date.distantPast
    private var shown = false

    /// nil when stderr is not a terminal.
    init?(total: Int64, label: String) {
        guard isatty(STDERR_FILENO) == 1, total > 0 else { return nil }
        self.total = total
        self.label = label
    }

    func update(_ done: Int64) {
        let now = Date()
        let elapsed = now.timeIntervalSince(start)
        guard elapsed >= 0.5, now.timeIntervalSince(lastDraw) >= 0.1 else { return }
        lastDraw = now
        shown = true
        let fraction = Swift.min(1, Double(done) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled)
        let rate = Int64(Double(done) / elapsed)
        let line = "\(label)  [\(bar)]  \(Format.fixed(fraction * 100, 0))%  \(Format.bytes(done)) / \(Format.bytes(total))"
            + "  \(Format.bytes(rate))/s"
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
    }

    func finish() {
        guard shown else { return }
        shown = false
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
