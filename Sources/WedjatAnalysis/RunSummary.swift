import Foundation

/// The few lines `wedjat run` prints on stderr after the command: enough to know whether
/// anything happened, and where to look for the rest.
public enum RunSummary {
    public static func lines(report r: Report, logDir: String) -> [String] {
        let h = r.headline
        var first = Format.count(h.processes, "process", "processes")
            + ", " + Format.count(h.connections, "connection")
        if h.errors > 0 { first += " (" + Format.count(h.errors, "error") + ")" }
        first += ", " + Format.bytes(h.bytesIn) + " in, " + Format.bytes(h.bytesOut) + " out"
        let drops = h.droppedEvents + h.droppedRecords
        if drops == 0 && h.captureDropped == 0 {
            first += ", no drops"
        } else {
            first += ", \(h.droppedEvents) dropped events, \(h.droppedRecords) dropped records"
            if h.captureDropped > 0 { first += ", \(h.captureDropped) capture drops" }
        }
        var lines = ["wedjat: " + first]
        if h.warnings > 0 { lines.append("wedjat: " + Format.count(h.warnings, "warning") + " (see the report)") }
        lines.append("wedjat: logs in \(logDir) (\(Format.count(h.logs, "new file"))); report: wedjat report \(shellQuote(logDir))")
        return lines
    }

    public static func noLogs(logDir: String) -> [String] {
        ["wedjat: no logs were written to \(logDir) (statically linked program, WEDJAT_DISABLE=1, or no writable directory?)"]
    }

    public static func unreadable(logDir: String, reason: String) -> [String] {
        ["wedjat: \(reason); logs in \(logDir)"]
    }

    /// Quotes a path for copy-paste into a shell, only when it needs it.
    static func shellQuote(_ s: String) -> String {
        let safe = s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-+,:@%=".contains($0)) }
        return safe && !s.isEmpty ? s : "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
