import Foundation
#if canImport(Glibc)
import Glibc
#endif
import WedjatAnalysis

/// A log file found in the directory, with its first line: which process image's log it is a
/// segment of (`process_start.log`), and which segment.
public struct LogFile {
    public var path: String
    public var name: String
    public var start: ProcessStart
    /// The log it belongs to: `process_start.log` (segment 0's path), else its own path.
    public var key: String { start.log ?? path }
    public var segment: Int { max(0, start.segment ?? 0) }
}

/// Watches one directory for log files (`*.ndjson`, not recursively: wedjat writes them flat).
/// A file is handed out once, when its first line (`process_start`) is complete; names that
/// disappear are forgotten, so memory follows what the directory holds, not its history.
public final class LogDirectory {
    public let path: String
    private var known = Set<String>()
    /// Files whose first line is not complete yet, since when (a file of something else gets
    /// one warning after a while, then is left alone).
    private var waiting: [String: Date] = [:]
    private let decoder = LineDecoder()
    /// Why files were not taken (once per name).
    public private(set) var warnings: [String] = []

    public init(path: String) {
        self.path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    /// Names of `*.ndjson` files in the directory, sorted; nil when it cannot be read.
    public func listNames() -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasSuffix(".ndjson"), !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    /// Files not handed out before, whose first line is there. `accept` may decline a file
    /// (already shipped, say): it is then remembered as seen all the same.
    public func newFiles(now: Date = Date(), accept: (String) -> Bool = { _ in true }) -> [LogFile] {
        guard let names = listNames() else { return [] }
        let present = Set(names)
        known.formIntersection(present)
        waiting = waiting.filter { present.contains($0.key) }
        var found: [LogFile] = []
        for name in names where !known.contains(name) {
            let full = path + "/" + name
            guard accept(name) else { known.insert(name); continue }
            guard let start = firstRecord(full) else {
                let since = waiting[name] ?? now
                waiting[name] = since
                if now.timeIntervalSince(since) > 10 {
                    warnings.append("\(full): no process_start line after 10 s; not a wedjat log, left alone")
                    known.insert(name)
                    waiting[name] = nil
                }
                continue
            }
            waiting[name] = nil
            known.insert(name)
            found.append(LogFile(path: full, name: name, start: start))
        }
        return found
    }

    /// The warnings since the last call.
    public func takeWarnings() -> [String] {
        defer { warnings = [] }
        return warnings
    }

    /// Forgets a file handed out (it will be handed out again if still there).
    public func forget(_ name: String) { known.remove(name) }

    /// The file's first line when it is a complete `process_start`.
    private func firstRecord(_ path: String) -> ProcessStart? {
        guard let tail = FileTail(path: path, offset: 0) else { return nil }
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        var start: ProcessStart?
        tail.readLines(scratch: &scratch, maxBytes: 256 * 1024, maxLineBytes: 256 * 1024) { line, _ in
            if case .processStart(let s)? = try? decoder.decode(line) { start = s }
            return false
        }
        return start
    }
}

/// Whether a process still exists (`kill(pid, 0)`: EPERM means it does, as someone else's).
func processAlive(_ pid: Int) -> Bool {
    guard pid > 0 else { return false }
    return kill(pid_t(pid), 0) == 0 || errno == EPERM
}
