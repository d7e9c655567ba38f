import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Something wrong with the input that did not stop the reading: the line (or file) is
/// skipped or read partially, every other record is kept.
public struct ReaderWarning: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    /// 1-based line number; nil when the warning is about the whole file.
    public var line: Int?
    public var message: String

    public init(file: String, line: Int?, message: String) {
        self.file = file; self.line = line; self.message = message
    }

    public var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}

/// Input from which no report can be made.
public enum LogReaderError: Error, Equatable, CustomStringConvertible {
    case noLogFiles(paths: [String])
    case noRecords(files: Int)

    public var description: String {
        switch self {
        case .noLogFiles(let paths):
            let list = paths.isEmpty ? "(no paths given)" : paths.joined(separator: ", ")
            return "no wedjat logs (*.ndjson) found in \(list)"
        case .noRecords(let files):
            return "no readable wedjat records in \(files) log file\(files == 1 ? "" : "s")"
        }
    }
}

/// Streams NDJSON logs line by line: a file is read in fixed-size chunks and each line is
/// parsed in place (JSONDocument), so memory stays bounded by the chunk size plus the longest
/// line (itself capped), whatever the file size.
public struct LogReader {
    public var chunkSize: Int
    /// Longer lines are skipped (with a warning) instead of being buffered without limit.
    public var maxLineBytes: Int
    /// Past this many warnings in one file, the rest are only counted: a file of garbage must
    /// not turn into a gigabyte of warnings.
    public var maxWarningsPerFile: Int
    /// Called after every chunk with the bytes read so far over all files (a progress bar).
    public var onProgress: ((Int64) -> Void)?
    public internal(set) var warnings: [ReaderWarning] = []
    public private(set) var filesRead = 0
    public internal(set) var recordsRead = 0
    public internal(set) var bytesRead: Int64 = 0
    /// One parse buffer for every line.
    private let document = JSONDocument()
    /// Threads that decode lines (LogReaderParallel.swift): the calling thread takes the records
    /// in order, the others parse and decode the blocks ahead of it. 1: all on the calling thread.
    public var threads: Int
    /// Files at least this big are read that way (smaller ones are not worth a thread).
    public var parallelMinBytes: Int64 = 4 << 20
    /// Bytes of one block handed to a decoding thread.
    var parallelBlockBytes = 1 << 20
    /// `http` records' logged headers: decoded (the exports show them), or only checked
    /// (the report does not use them, and their strings cost a tenth of the reading).
    public var decodeHeaders: Bool {
        get { document.keepStringMaps }
        set { document.keepStringMaps = newValue }
    }

    public init(chunkSize: Int = 256 * 1024, maxLineBytes: Int = 16 * 1024 * 1024, maxWarningsPerFile: Int = 100,
                threads: Int = LogReader.defaultThreads) {
        self.chunkSize = max(1, chunkSize)
        self.maxLineBytes = max(1, maxLineBytes)
        self.maxWarningsPerFile = max(1, maxWarningsPerFile)
        self.threads = max(1, threads)
    }

    /// The CPUs this process may run on, at most 8.
    public static let defaultThreads = max(1, min(8, ProcessInfo.processInfo.activeProcessorCount))

    /// Expands the arguments: a file is taken as is, a directory contributes every `*.ndjson`
    /// below it (recursively, sorted so reports are reproducible). Paths that do not exist
    /// become warnings.
    public static func logFiles(in paths: [String], warnings: inout [ReaderWarning]) -> [String] {
        var out: [String] = []
        var seen = Set<String>()
        let fm = FileManager.default
        for path in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else {
                warnings.append(ReaderWarning(file: path, line: nil, message: "no such file or directory"))
                continue
            }
            var found: [String] = []
            if isDir.boolValue {
                let base = path.hasSuffix("/") ? String(path.dropLast()) : path
                for case let rel as String in fm.enumerator(atPath: path) ?? FileManager.DirectoryEnumerator()
                where rel.hasSuffix(".ndjson") {
                    let full = base + "/" + rel
                    var sub: ObjCBool = false
                    if fm.fileExists(atPath: full, isDirectory: &sub), !sub.boolValue { found.append(full) }
                }
                found.sort()
            } else {
                found = [path]
            }
            for f in found where seen.insert(f).inserted { out.append(f) }
        }
        return out
    }

    /// The total size of `files` (for a progress bar); files that cannot be read count 0.
    public static func totalBytes(_ files: [String]) -> Int64 {
        files.reduce(0) { total, f in
            var st = stat()
            return total + (stat(f, &st) == 0 ? Int64(st.st_size) : 0)
        }
    }

    /// Where a record was read: the log it belongs to (the path of its first segment, which
    /// names the process image), and the file and line it is on (a later segment's, for a
    /// rotated log).
    public struct RecordOrigin: Sendable {
        public var log: String
        public var file: String
        public var line: Int
    }

    /// Reads every log under `paths`, calling `onRecord(log, line, record)` for each good record
    /// in file order (the segments of a rotated log as one log: LogSegments.swift). Throws only
    /// when there is nothing to report on.
    public mutating func read(paths: [String], onRecord: (String, Int, Record) -> Void) throws(LogReaderError) {
        try read(paths: paths) { (origin: RecordOrigin, record) in onRecord(origin.log, origin.line, record) }
    }

    /// `read(paths:)` with each record's exact origin.
    public mutating func read(paths: [String], onRecord: (RecordOrigin, Record) -> Void) throws(LogReaderError) {
        let files = LogReader.logFiles(in: paths, warnings: &warnings)
        try read(files: files, paths: paths, onRecord: onRecord)
    }

    /// `read(paths:)` on files already listed by `logFiles` (`paths` only names them in an error).
    public mutating func read(files: [String], paths: [String], onRecord: (String, Int, Record) -> Void) throws(LogReaderError) {
        try read(files: files, paths: paths) { (origin: RecordOrigin, record) in onRecord(origin.log, origin.line, record) }
    }

    public mutating func read(files: [String], paths: [String], onRecord: (RecordOrigin, Record) -> Void) throws(LogReaderError) {
        guard !files.isEmpty else { throw .noLogFiles(paths: paths) }
        for log in LogSegments.group(files, warnings: &warnings) {
            for (i, segment) in log.files.enumerated() {
                // A later segment begins with a copy of the log's process_start: left out.
                var copySkipped = i == 0
                readFile(segment.path) { file, line, record in
                    if !copySkipped, case .processStart = record {
                        copySkipped = true
                        return
                    }
                    onRecord(RecordOrigin(log: log.path, file: file, line: line), record)
                }
            }
        }
        guard recordsRead > 0 else { throw .noRecords(files: files.count) }
    }

    /// Reads one file; problems become warnings, never errors.
    public mutating func readFile(_ path: String, onRecord: (String, Int, Record) -> Void) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            warnings.append(ReaderWarning(file: path, line: nil, message: "cannot open: \(String(cString: strerror(errno)))"))
            return
        }
        defer { close(fd) }
        filesRead += 1
        var st = stat()
        if threads > 1, fstat(fd, &st) == 0, Int64(st.st_size) >= parallelMinBytes {
            readInParallel(fd: fd, path: path, onRecord: onRecord)
            return
        }

        var state = FileState(path: path)
        var pending: [UInt8] = []        // bytes of the current line, when it spans chunks
        var skippingLongLine = false
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { chunk.deallocate() }
        let base = UnsafeRawPointer(chunk.baseAddress!)
        var fileBytes = 0

        while true {
            let n = Glibc.read(fd, chunk.baseAddress, chunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                warnings.append(ReaderWarning(file: path, line: state.lineNo + 1,
                                              message: "read error: \(String(cString: strerror(errno))); rest of file skipped"))
                return
            }
            if n == 0 { break }
            fileBytes += n
            var start = 0
            while start < n {
                // memchr: the newline scan is the hot loop on big files.
                guard let found = memchr(base + start, 0x0A, n - start) else {
                    if !skippingLongLine { pending.append(contentsOf: UnsafeRawBufferPointer(start: base + start, count: n - start)) }
                    if pending.count > maxLineBytes {
                        state.lineNo += 1
                        warn(&state, "line longer than \(maxLineBytes) bytes; skipped")
                        pending = []
                        skippingLongLine = true
                    }
                    break
                }
                let nl = base.distance(to: UnsafeRawPointer(found))
                if skippingLongLine {
                    // The rest of an over-long line: its warning was given when it grew too big.
                    skippingLongLine = false
                } else {
                    state.lineNo += 1
                    if pending.isEmpty {
                        handleLine(UnsafeRawBufferPointer(start: base + start, count: nl - start), state: &state,
                                   complete: true, onRecord: onRecord)
                    } else {
                        pending.append(contentsOf: UnsafeRawBufferPointer(start: base + start, count: nl - start))
                        pending.withUnsafeBytes { handleLine($0, state: &state, complete: true, onRecord: onRecord) }
                        pending.removeAll(keepingCapacity: true)
                    }
                }
                start = nl + 1
            }
            bytesRead += Int64(n)
            onProgress?(bytesRead)
        }
        if !skippingLongLine, !pending.isEmpty {
            state.lineNo += 1
            pending.withUnsafeBytes { handleLine($0, state: &state, complete: false, onRecord: onRecord) }
        }
        if fileBytes == 0 {
            warnings.append(ReaderWarning(file: path, line: nil, message: "empty file"))
        }
        if state.suppressed > 0 {
            warnings.append(ReaderWarning(file: path, line: nil,
                                          message: "\(state.suppressed) more problem\(state.suppressed == 1 ? "" : "s") in this file not shown"))
        }
    }

    /// A warning about the current line of the file, unless the file already had its share.
    mutating func warn(_ state: inout FileState, _ message: String) {
        state.warningCount += 1
        if state.warningCount > maxWarningsPerFile {
            state.suppressed += 1
        } else {
            warnings.append(ReaderWarning(file: state.path, line: state.lineNo, message: message))
        }
    }

    struct FileState {
        let path: String
        var lineNo = 0
        var sawRecord = false
        var sawStart = false
        var unknownTypesWarned = Set<String>()
        var warningCount = 0
        var suppressed = 0
    }

    /// What one line is, before the file's state is applied: decoding needs only the line (and
    /// a parse buffer), so it can run on any thread.
    enum LineResult: Sendable {
        case blank
        /// Over `maxLineBytes`: not parsed.
        case tooLong
        case record(Record)
        case failed(LineDecodeError)
    }

    static func decodeLine(_ bytes: UnsafeRawBufferPointer, document: JSONDocument, maxLineBytes: Int) -> LineResult {
        if bytes.count > maxLineBytes { return .tooLong }
        // Blank lines carry nothing; they are not worth a warning.
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return .blank }
        do {
            return .record(try Record.decode(bytes, into: document))
        } catch {
            return .failed(error)
        }
    }

    private mutating func handleLine(_ bytes: UnsafeRawBufferPointer, state: inout FileState, complete: Bool,
                                     onRecord: (String, Int, Record) -> Void) {
        apply(LogReader.decodeLine(bytes, document: document, maxLineBytes: maxLineBytes), state: &state, complete: complete,
              onRecord: onRecord)
    }

    /// A decoded line in its file: warnings, the process_start rules, then the record.
    mutating func apply(_ result: LineResult, state: inout FileState, complete: Bool,
                        onRecord: (String, Int, Record) -> Void) {
        func warn(_ message: String) { self.warn(&state, message) }
        let record: Record
        switch result {
        case .blank:
            return
        case .tooLong:
            warn("line longer than \(maxLineBytes) bytes; skipped")
            return
        case .record(let r):
            record = r
        case .failed(let error):
            switch error {
            case .invalidJSON:
                warn(complete ? "invalid JSON; skipped" : "truncated last line (no trailing newline); skipped")
            case .notAnObject:
                warn(complete ? "not a JSON object; skipped" : "truncated last line (no trailing newline); skipped")
            case .record(.missingType):
                warn("record has no \"type\"; skipped")
            case .record(.unknownType(let type)):
                // Newer writers may add types; say so once per type and file, not per line.
                if state.unknownTypesWarned.insert(type).inserted {
                    warn("unknown record type \"\(type)\"; skipped (further ones in this file not reported)")
                }
            case .record(.badField(let type, let field, let expected)):
                warn("\(type): field \"\(field)\" must be \(expected); record skipped")
            }
            return
        }
        if !complete {
            // A whole record whose newline never landed (the writer stopped mid-write): keep it.
            warn("last line has no trailing newline; kept")
        }
        let firstRecord = !state.sawRecord
        state.sawRecord = true
        if case .processStart(let start) = record {
            if state.sawStart {
                warn("second process_start in one file; skipped")
                return
            }
            state.sawStart = true
            if start.schema > supportedSchema {
                warn("schema \(start.schema) is newer than the supported schema \(supportedSchema); reading the known fields only")
            }
        } else if firstRecord {
            warn("first record is \"\(recordTypeName(record))\", not process_start")
        }
        recordsRead += 1
        onRecord(state.path, state.lineNo, record)
    }
}

/// Why one line is not a record.
public enum LineDecodeError: Error, Equatable {
    case invalidJSON
    case notAnObject
    case record(RecordDecodeError)
}

extension Record {
    /// Decodes one log line (without its newline).
    public static func decode(line: String) throws(LineDecodeError) -> Record {
        var line = line
        let result = line.withUTF8 { bytes in
            Result { () throws(LineDecodeError) in try decode(UnsafeRawBufferPointer(bytes), into: JSONDocument()) }
        }
        return try result.get()
    }

    /// Parses `bytes` into `document` (reused from line to line) and decodes the record.
    static func decode(_ bytes: UnsafeRawBufferPointer, into document: JSONDocument) throws(LineDecodeError) -> Record {
        // Most lines are `http` and `connection` records in wedjat's own plain shape: read in one pass.
        if let h = HTTPLineDecoder.decode(bytes, keepHeaders: document.keepStringMaps, strings: document.strings) { return .http(h) }
        if let c = ConnectionLineDecoder.decode(bytes, strings: document.strings) { return .connection(c) }
        return try decodeParsed(bytes, into: document)
    }

    /// `decode(_:into:)` without the `http` and `connection` fast paths: the line parsed into `document` first.
    static func decodeParsed(_ bytes: UnsafeRawBufferPointer, into document: JSONDocument) throws(LineDecodeError) -> Record {
        guard document.parse(bytes) else { throw .invalidJSON }
        guard document.rootIsObject else { throw .notAnObject }
        do {
            return try decode(document)
        } catch {
            throw .record(error)
        }
    }
}

func recordTypeName(_ r: Record) -> String {
    switch r {
    case .processStart: "process_start"
    case .connection: "connection"
    case .fork: "fork"
    case .drops: "drops"
    case .processEnd: "process_end"
    case .dns: "dns"
    case .note(let n): n.type
    case .http: "http"
    case .httpSummary: "http_summary"
    case .sample: "sample"
    case .startup: "startup"
    case .stall: "stall"
    case .modules: "modules"
    case .segmentEnd: "segment_end"
    case .segmentsRemoved: "segments_removed"
    }
}
