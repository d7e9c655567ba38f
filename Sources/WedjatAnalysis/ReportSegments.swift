import Foundation

// What the report says about rotated logs (LogSegments.swift): per process its segments, and
// when retention removed the oldest ones, which time span the remaining ones cover.

extension Report {
    public struct SegmentsRow: Codable, Sendable {
        /// Segments read, and the first one's number (0: the log is whole from its start).
        public var read: Int
        public var firstSegment: Int
        /// From the log's `segments_removed` records: segments removed by retention, their
        /// bytes and records, and how many of them `wedjat ship` had not sent.
        public var removed: Int
        public var removedBytes: Int64
        public var removedRecords: Int64
        public var unshipped: Int64
        /// The span the remaining segments cover: from the first one's start to the log's end.
        public var coversFromTs: Int64
        public var coversToTs: Int64
    }

    /// nil for a log that never rotated.
    static func segmentsRow(_ l: ProcessLog) -> SegmentsRow? {
        let s = l.segments
        guard s.isSegmented else { return nil }
        let from = s.missesStart ? (s.firstSegmentStartTs ?? (l.firstTs == .max ? l.startTs : l.firstTs)) : l.startTs
        return SegmentsRow(read: s.segmentsRead, firstSegment: s.firstSegment, removed: s.removed,
                           removedBytes: s.removedBytes, removedRecords: s.removedRecords, unshipped: s.unshipped,
                           coversFromTs: from, coversToTs: l.lastKnownTs)
    }

    /// A warning for each log whose oldest segments are gone: its numbers cover only the rest.
    static func segmentWarnings(_ logs: [ProcessLog]) -> [WarningItem] {
        logs.compactMap { l -> WarningItem? in
            guard l.segments.missesStart || l.segments.removed > 0, let row = segmentsRow(l) else { return nil }
            let first = row.firstSegment
            var what = first == 1 ? "segment 0 of this log was removed" : "segments 0-\(first - 1) of this log were removed"
            if first == 0 { what = Format.count(row.removed, "segment") + " of this log " + (row.removed == 1 ? "was" : "were") + " removed" }
            var facts: [String] = []
            if row.removed > 0 {
                facts.append("\(row.removed) recorded by retention")
                if row.removedBytes > 0 { facts.append(Format.bytes(row.removedBytes)) }
                if row.removedRecords > 0 { facts.append(Format.count(Int(row.removedRecords), "record")) }
                if row.unshipped > 0 { facts.append("\(row.unshipped) not shipped") }
            }
            let lifetime = row.coversToTs - l.startTs
            let message = what + (facts.isEmpty ? "" : " (" + facts.joined(separator: ", ") + ")")
                + ": its numbers cover \(Format.timestamp(row.coversFromTs)) to \(Format.timestamp(row.coversToTs))"
                + " (\(Format.duration(row.coversToTs - row.coversFromTs)) of the process's \(Format.duration(lifetime)))"
            return WarningItem(kind: "segments_removed", file: l.path, line: nil, pid: l.pid, message: message,
                               text: "pid \(l.pid) \(l.program): \(message)")
        }
    }
}
