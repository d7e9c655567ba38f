import Foundation

/// The few lines `wedjat run` prints on stderr after the command: enough to know whether
/// anything happened, and where to look for the rest.
public enum RunSummary {
    /// `others`: logs in `logDir` from other programs, not summarised.
    public static func lines(report r: Report, logDir: String, others: Int = 0) -> [String] {
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
        // Traffic that was not decoded is said: a run whose HTTP was HTTP/2 or opaque TLS must not
        // look like a run without HTTP.
        if let c = r.coverage, !c.undecoded.isEmpty {
            lines.append("wedjat: " + CoverageText.short(c) + " (the report says where)")
        }
        if h.warnings > 0 { lines.append("wedjat: " + Format.count(h.warnings, "warning") + " (see the report)") }
        lines.append("wedjat: logs in \(logDir) (\(Format.count(h.logs, "new file")) of this run"
                     + (others > 0 ? "; \(Format.count(others, "other new log")) from other programs not counted" : "")
                     + "); report: wedjat report \(shellQuote(logDir))")
        return lines
    }

    /// The logs of one run among `files` (new in the log directory since the run began): the
    /// images of the started process (`pid` == `rootPid`) and of every process it started,
    /// directly or not (by `ppid`, or `parent_log`/`exec_from` naming a log already taken),
    /// started at or after `sinceTs`. Other programs writing to the same directory meanwhile are
    /// not the run's. Returns the run's files and how many others were left out.
    public static func runLogs(_ files: [String], rootPid: Int, sinceTs: Int64) -> (run: [String], others: Int) {
        struct Start { var file: String, pid: Int, ppid: Int?, ts: Int64, parentLog: String?, execFrom: String?, log: String? }
        var starts: [Start] = []
        var unreadable: [String] = []
        for f in files {
            guard let s = firstProcessStart(f) else { unreadable.append(f); continue }
            starts.append(Start(file: f, pid: s.pid, ppid: s.ppid, ts: s.ts, parentLog: s.parentLog, execFrom: s.execFrom,
                                log: s.log))
        }
        var pids: Set<Int> = [rootPid]
        var logs: Set<String> = []
        var taken = Set<String>()
        // Parents start before their children: a few passes in start order settle it.
        let ordered = starts.sorted { $0.ts < $1.ts }
        var changed = true
        while changed {
            changed = false
            for s in ordered where !taken.contains(s.file) && s.ts >= sinceTs {
                let linked = [s.parentLog, s.execFrom].contains { $0.map(logs.contains) ?? false }
                if pids.contains(s.pid) || s.ppid.map(pids.contains) ?? false || linked {
                    taken.insert(s.file)
                    pids.insert(s.pid)
                    if let l = s.log { logs.insert(l) }
                    logs.insert(s.file)
                    changed = true
                }
            }
        }
        // A log without a readable process_start cannot be placed: kept, so it is not lost.
        let run = files.filter { taken.contains($0) || unreadable.contains($0) }
        return (run, files.count - run.count)
    }

    /// The `process_start` on the first line of a log, nil when it has none.
    static func firstProcessStart(_ path: String) -> ProcessStart? {
        guard let h = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? h.close() }
        var data = Data()
        while data.count < 1 << 20, !data.contains(0x0A), let chunk = try? h.read(upToCount: 16384), !chunk.isEmpty {
            data.append(chunk)
        }
        let line = data.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false).first ?? data
        guard case .processStart(let s)? = try? Record.decode(line: String(decoding: line, as: UTF8.self)) else { return nil }
        return s
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
