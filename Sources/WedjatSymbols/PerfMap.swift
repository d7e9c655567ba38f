#if canImport(Glibc)
import Glibc
#endif

// Perf maps: how JIT compilers and interpreters tell native tools (Linux perf) the names of the
// code they generate at run time, which is in no ELF file. Node's `--perf-basic-prof`,
// CPython 3.12's `-X perf` (PYTHONPERFSUPPORT=1) and the JVM's perf map agents (or
// `jcmd PID Compiler.perfmap`) write `/tmp/perf-<pid>.map`: one line per code region,
// `START SIZE NAME`, START and SIZE in hex, NAME to the end of the line. Stall frames outside
// every module of the `modules` record are looked up there (docs/SYMBOLIZATION.md).

/// One perf map file, parsed.
public struct PerfMap: Sendable {
    public struct Entry: Sendable, Equatable {
        public var start: UInt64
        public var size: UInt64
        public var name: String
        /// 1-based line in the file: a later line was written later.
        public var line: Int

        public init(start: UInt64, size: UInt64, name: String, line: Int) {
            self.start = start; self.size = size; self.name = name; self.line = line
        }

        /// Exclusive; a region reaching past the top of the address space is cut there.
        public var end: UInt64 { start.addingReportingOverflow(size).overflow ? .max : start + size }
    }

    public enum Match: Sendable, Equatable {
        case none
        /// One name covers the address (several entries of that one name: the latest).
        case symbol(Entry)
        /// Entries of different names cover it: the code space was reused during the run (a
        /// JIT recompiled or collected code there) and the map does not say which was there when
        /// the stack was taken. Sorted by line.
        case ambiguous([Entry])
    }

    /// Sorted by start, then line.
    public let entries: [Entry]
    /// Lines that are not `START SIZE NAME` (blank lines are not counted).
    public let malformedLines: Int
    /// `maxEnd[i]`: the highest end of entries[0...i], so that a lookup stops going down as
    /// soon as no earlier entry can reach the address.
    private let maxEnd: [UInt64]

    /// Parses the text of a map. Lines that do not parse are counted and passed over.
    public init(parsing text: String) {
        var list: [Entry] = []
        var bad = 0
        var lineNo = 0
        // "\r\n" is one Character in Swift: a line ends at either.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNo += 1
            if line.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            if let e = PerfMap.parse(line, lineNo: lineNo) { list.append(e) } else { bad += 1 }
        }
        self.init(entries: list, malformedLines: bad)
    }

    public init(entries: [Entry], malformedLines: Int = 0) {
        let sorted = entries.sorted { $0.start != $1.start ? $0.start < $1.start : $0.line < $1.line }
        self.entries = sorted
        self.malformedLines = malformedLines
        var m: [UInt64] = []
        m.reserveCapacity(sorted.count)
        var top: UInt64 = 0
        for e in sorted {
            top = max(top, e.end)
            m.append(top)
        }
        maxEnd = m
    }

    /// `START SIZE NAME`: hex numbers with or without `0x`, separated by spaces or tabs; the name
    /// is the rest of the line (it may hold spaces: `JS:*busy /app/x.js:3:18`).
    static func parse(_ line: Substring, lineNo: Int) -> Entry? {
        var rest = line.drop { $0 == " " || $0 == "\t" }
        func hex() -> UInt64? {
            var digits = rest.prefix { $0 != " " && $0 != "\t" }
            rest = rest.dropFirst(digits.count).drop { $0 == " " || $0 == "\t" }
            if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
            guard !digits.isEmpty, digits.count <= 16 else { return nil }
            return UInt64(digits, radix: 16)
        }
        guard let start = hex(), let size = hex() else { return nil }
        var name = rest
        while let last = name.last, last == " " || last == "\t" { name = name.dropLast() }
        guard !name.isEmpty else { return nil }
        return Entry(start: start, size: size, name: String(name), line: lineNo)
    }

    /// What covers `address` (`start <= address < start + size`).
    public func lookup(_ address: UInt64) -> Match {
        // The last entry starting at or below the address, then down while one may still reach it.
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].start <= address { lo = mid + 1 } else { hi = mid }
        }
        var covering: [Entry] = []
        var i = lo - 1
        while i >= 0, maxEnd[i] > address {
            if address < entries[i].end { covering.append(entries[i]) }
            i -= 1
        }
        guard let first = covering.first else { return .none }
        if covering.allSatisfy({ $0.name == first.name }) {
            return .symbol(covering.max { $0.line < $1.line }!)
        }
        return .ambiguous(covering.sorted { $0.line < $1.line })
    }
}

/// The process whose stall frames a perf map may name: which file to look for, and the
/// process's life to check the file against (a pid is reused; the map of another process with
/// the same pid must not name this one's frames).
public struct PerfMapProcess: Sendable, Hashable {
    public var pid: Int
    /// When the kernel started the process (µs since the epoch).
    public var startTs: Int64
    /// When the log ended (`process_end`), µs; nil while it runs or when it was killed.
    public var endTs: Int64?
    /// Searched before `/tmp`: the log's own directory, for a map copied next to the logs (to
    /// symbolize elsewhere, or after /tmp was cleaned). A copy there is newer than the run: only
    /// a file older than the process is refused there.
    public var directories: [String]

    public init(pid: Int, startTs: Int64, endTs: Int64?, directories: [String] = []) {
        self.pid = pid; self.startTs = startTs; self.endTs = endTs; self.directories = directories
    }

    public var fileName: String { "perf-\(pid).map" }
}

/// Finding and checking a process's perf map.
public enum PerfMapFile {
    /// How long after the log's end a runtime may still write its map (buffered output is
    /// flushed when the process exits, after wedjat's `process_end`), and how long before the
    /// kernel's start time the file's time may seem to be (the two clocks are read differently).
    public static let slackUs: Int64 = 5_000_000

    public enum Outcome: Sendable {
        case loaded(path: String, map: PerfMap)
        /// No usable file: the reason, in words, and the path looked at last.
        case unusable(path: String, reason: String)
    }

    /// The map of `process`: `<dir>/perf-<pid>.map` for each of its directories, then `/tmp`.
    /// A file last written before the process started belongs to another process with the same
    /// pid; so does one in `/tmp` last written after the process's log ended.
    public static func load(for process: PerfMapProcess, tmp: String = "/tmp") -> Outcome {
        var lastProblem: (String, String)?
        let places = process.directories.map { ($0, true) } + [(tmp, false)]
        for (dir, isCopy) in places {
            let path = (dir.hasSuffix("/") ? String(dir.dropLast()) : dir) + "/" + process.fileName
            var st = stat()
            guard stat(path, &st) == 0 else { continue }
            guard st.st_mode & S_IFMT == S_IFREG else {
                lastProblem = (path, "not a regular file")
                continue
            }
            let mtime = Int64(st.st_mtim.tv_sec) * 1_000_000 + Int64(st.st_mtim.tv_nsec) / 1000
            if mtime < process.startTs - slackUs {
                lastProblem = (path, "last written \(seconds(process.startTs - mtime)) before pid \(process.pid) started: another process's map, not used")
                continue
            }
            if !isCopy, let end = process.endTs, mtime > end + slackUs {
                lastProblem = (path, "last written \(seconds(mtime - end)) after pid \(process.pid)'s log ended: another process's map, not used")
                continue
            }
            guard let text = readText(path) else {
                lastProblem = (path, "cannot read: " + String(cString: strerror(errno)))
                continue
            }
            return .loaded(path: path, map: PerfMap(parsing: text))
        }
        if let (path, reason) = lastProblem { return .unusable(path: path, reason: reason) }
        return .unusable(path: tmp + "/" + process.fileName, reason: "not found")
    }

    private static func seconds(_ us: Int64) -> String {
        let s = (Double(us) / 1e6).rounded()
        if s < 100 { return "\(Int(s)) s" }
        if s < 6000 { return "\(Int((s / 60).rounded())) min" }
        if s < 172_800 { return "\(Int((s / 3600).rounded())) h" }
        return "\(Int((s / 86400).rounded())) days"
    }

    /// The whole file (non-blocking open: a FIFO planted at the path must not hang the report).
    private static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            bytes.append(contentsOf: buf[0 ..< n])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
