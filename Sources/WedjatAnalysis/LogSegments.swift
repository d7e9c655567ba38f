import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Rotated logs (docs/LOG_FORMAT.md, "Segments"): a process's log is a sequence of files, each
// beginning with a copy of the process's `process_start` line (`segment`, `segment_start_ts`).
// Readers treat them as one log: grouped by `process_start.log` (never by parsing names), read
// in segment order, the copies of `process_start` after the first left out.

/// `segment_end`: the last line of a segment closed because the next one began.
public struct SegmentEndRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    /// The next segment's path, and this segment's size.
    public var next: String?
    public var bytes: Int64?
    public init(ts: Int64, pid: Int, next: String? = nil, bytes: Int64? = nil) {
        self.ts = ts; self.pid = pid; self.next = next; self.bytes = bytes
    }
}

/// `segments_removed`: the writer deleted old closed segments of this process (retention).
public struct SegmentsRemovedRecord: Sendable, Equatable {
    public var ts: Int64
    public var pid: Int
    public var segments: [String]
    public var bytes: Int64?
    /// The records they held, when the writer knew.
    public var records: Int64?
    /// `retain_mb` or `dir_retain_mb`.
    public var reason: String?
    /// How many of them `wedjat ship` had not sent.
    public var unshipped: Int64
    public init(ts: Int64, pid: Int, segments: [String], bytes: Int64? = nil, records: Int64? = nil,
                reason: String? = nil, unshipped: Int64 = 0) {
        self.ts = ts; self.pid = pid; self.segments = segments; self.bytes = bytes; self.records = records
        self.reason = reason; self.unshipped = unshipped
    }
}

extension Record {
    static func decodeSegmentRecord(_ f: Fields, ts: Int64, pid: Int) throws(RecordDecodeError) -> Record {
        if f.type == "segment_end" {
            return .segmentEnd(SegmentEndRecord(ts: ts, pid: pid, next: try f.string("next"), bytes: try f.int64("bytes")))
        }
        return .segmentsRemoved(SegmentsRemovedRecord(
            ts: ts, pid: pid, segments: try f.strings("segments") ?? [], bytes: try f.int64("bytes"),
            records: try f.int64("records"), reason: try f.string("reason"), unshipped: try f.int64("unshipped") ?? 0))
    }
}

/// One file of a log, and its place in the sequence.
public struct LogSegmentFile: Sendable, Equatable {
    public var path: String
    /// `process_start.segment` of the file (0 when absent: a log that never rotated).
    public var segment: Int
    public init(path: String, segment: Int) { self.path = path; self.segment = segment }
}

/// The files of one process image's log, in segment order.
public struct SegmentedLog: Sendable, Equatable {
    /// `process_start.log` (the path segment 0 was written as), or the file's own path when
    /// its first line names none.
    public var key: String
    public var files: [LogSegmentFile]
    /// The path its records are filed under: segment 0's file when it is there, else the
    /// earliest one left.
    public var path: String { files[0].path }
}

public enum LogSegments {
    /// Groups `files` into logs: by the `log` of their first line, segments in order; the logs
    /// in the order of their first file in `files`. Two files claiming one segment keep the
    /// first (a warning names both); segments missing between two present ones are warned
    /// about. Segments missing before the first present one were removed by retention: the
    /// log itself says so (`segments_removed`, `process_start.segment`).
    public static func group(_ files: [String], warnings: inout [ReaderWarning]) -> [SegmentedLog] {
        var logs: [SegmentedLog] = []
        var index: [String: Int] = [:]
        for path in files {
            let head = firstLine(of: path)
            let key = head?.log ?? path
            let file = LogSegmentFile(path: path, segment: head?.segment ?? 0)
            if let i = index[key] {
                logs[i].files.append(file)
            } else {
                index[key] = logs.count
                logs.append(SegmentedLog(key: key, files: [file]))
            }
        }
        for i in logs.indices where logs[i].files.count > 1 {
            // Stable: equal segments keep their order in `files`, so the first found is kept.
            let sorted = logs[i].files.enumerated().sorted { ($0.element.segment, $0.offset) < ($1.element.segment, $1.offset) }
                .map(\.element)
            var kept: [LogSegmentFile] = []
            for f in sorted {
                if let last = kept.last, last.segment == f.segment {
                    warnings.append(ReaderWarning(file: f.path, line: nil, message:
                        "segment \(f.segment) of \(logs[i].key) is also in \(last.path); this copy is skipped"))
                    continue
                }
                if let last = kept.last, f.segment > last.segment + 1 {
                    let gap = f.segment - last.segment - 1
                    let which = gap == 1 ? "segment \(last.segment + 1) is" : "segments \(last.segment + 1)-\(f.segment - 1) are"
                    warnings.append(ReaderWarning(file: f.path, line: nil, message:
                        "\(which) missing before this one (after \(last.path)): records in between are not read"))
                }
                kept.append(f)
            }
            logs[i].files = kept
        }
        return logs
    }

    /// The longest first line looked at: `process_start` holds the command line (cut at about
    /// 32 KiB) and the configuration.
    static let firstLineLimit = 128 * 1024

    /// `log` and `segment` of the file's first line when it is a `process_start`; nil otherwise
    /// (the reader then warns about the file as it reads it).
    public static func firstLine(of path: String) -> (log: String?, segment: Int?)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var filled = 0
        while true {
            if let nl = buffer[0 ..< filled].firstIndex(of: 0x0A) {
                return buffer.withUnsafeBytes { processStartIdentity(UnsafeRawBufferPointer(rebasing: $0[0 ..< nl])) }
            }
            if filled == buffer.count {
                guard buffer.count < firstLineLimit else { return nil }
                buffer += [UInt8](repeating: 0, count: buffer.count)
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            filled += n
        }
    }

    /// `log` and `segment` of a `process_start` line (nil for any other line).
    static func processStartIdentity(_ line: UnsafeRawBufferPointer) -> (log: String?, segment: Int?)? {
        let doc = JSONDocument()
        guard doc.parse(line), doc.rootIsObject,
              let type = doc.find("type", in: 0).flatMap(doc.string), type == "process_start" else { return nil }
        let log = doc.find("log", in: 0).flatMap(doc.string)
        let segment = doc.find("segment", in: 0).flatMap(doc.int64).map { Int(truncatingIfNeeded: $0) }
        return (log, segment)
    }
}

/// What the segments of one log say about its completeness: how many were read, and which
/// ones retention removed (so which time span the remaining ones cover).
public struct SegmentCoverage: Sendable, Equatable {
    /// The segment the log's first remaining file begins (0: the log is whole from its start).
    public var firstSegment = 0
    /// When that segment began (`process_start.segment_start_ts`), for a log missing its start.
    public var firstSegmentStartTs: Int64?
    /// Segments read: the first one and one more per `segment_end`.
    public var segmentsRead = 1
    /// From `segments_removed` records: segments deleted, their bytes and records (those the
    /// writer knew), and how many `wedjat ship` had not sent.
    public var removed = 0
    public var removedBytes: Int64 = 0
    public var removedRecords: Int64 = 0
    public var unshipped: Int64 = 0
    public var reasons: [String] = []

    public init() {}

    /// True for a log that rotated (or lost segments).
    public var isSegmented: Bool { firstSegment > 0 || segmentsRead > 1 || removed > 0 }
    /// True when the log's beginning is gone: its counts cover only part of the process's life.
    public var missesStart: Bool { firstSegment > 0 }

    mutating func add(_ record: Record) {
        switch record {
        case .processStart(let s):
            firstSegment = max(0, s.segment ?? 0)
            firstSegmentStartTs = s.segmentStartTs
        case .segmentEnd:
            segmentsRead += 1
        case .segmentsRemoved(let r):
            removed += r.segments.count
            removedBytes += max(0, r.bytes ?? 0)
            removedRecords += max(0, r.records ?? 0)
            unshipped += max(0, r.unshipped)
            if let reason = r.reason, !reasons.contains(reason) { reasons.append(reason) }
        default:
            break
        }
    }
}
