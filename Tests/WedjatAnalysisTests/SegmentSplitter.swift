import Foundation

/// Makes a rotated log out of a whole one, as docs/LOG_FORMAT.md ("Segments") says the writer
/// does: segment 0 keeps the file's name, segment n is `<name>.<n>.ndjson`; every segment
/// begins with the `process_start` line plus `segment` and `segment_start_ts`; a segment with
/// a `stall` gets the latest `modules` line before its first stall; every segment but the last
/// ends with `segment_end`. `removeFirst` segments are then deleted, and the last segment
/// records it in a `segments_removed` line before its last line.
/// (Tests/Integration/fixtures/split_segments.py does the same for the shell tests.)
enum SegmentSplitter {
    struct Result {
        var files: [String]
        var removed: [String]
    }

    static func split(_ source: String, into dir: String, linesPerSegment: Int, removeFirst: Int = 0) throws -> Result {
        let text = try String(contentsOfFile: source, encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let name = (source as NSString).lastPathComponent
        let base = String(name.dropLast(".ndjson".count))
        var start = lines.removeFirst()
        precondition(start.contains("\"process_start\""), "\(source): first line is not process_start")
        if !start.contains("\"log\":") {
            start = String(start.dropLast()) + ",\"log\":\"/tmp/wedjat-test/\(name)\"}"
        }
        let pid = field(start, "pid") ?? 0
        let chunks = stride(from: 0, to: max(lines.count, 1), by: linesPerSegment).map {
            Array(lines[$0 ..< min($0 + linesPerSegment, lines.count)])
        }
        func path(_ n: Int) -> String { dir + "/" + (n == 0 ? name : "\(base).\(n).ndjson") }
        var latestModules: String?
        var segments: [[String]] = []
        for (n, chunk) in chunks.enumerated() {
            let startTs = chunk.compactMap { field($0, "ts") }.min() ?? field(start, "ts") ?? 0
            var out = [String(start.dropLast()) + ",\"segment\":\(n),\"segment_start_ts\":\(startTs)}"]
            var modulesHere = false
            for line in chunk {
                if line.contains("\"type\":\"modules\"") { latestModules = line; modulesHere = true }
                if line.contains("\"type\":\"stall\""), !modulesHere, let m = latestModules {
                    out.append(m)
                    modulesHere = true
                }
                out.append(line)
            }
            segments.append(out)
        }
        for n in segments.indices.dropLast() {
            let ts = segments[n].compactMap { field($0, "ts") }.max() ?? 0
            let bytes = segments[n].reduce(0) { $0 + $1.utf8.count + 1 }
            segments[n].append(#"{"type":"segment_end","ts":\#(ts),"pid":\#(pid),"next":"\#(path(n + 1))","bytes":\#(bytes)}"#)
        }
        let removeCount = min(removeFirst, segments.count - 1)
        var removed: [String] = []
        if removeCount > 0 {
            let gone = (0 ..< removeCount).map(path)
            let bytes = segments[0 ..< removeCount].reduce(0) { $0 + $1.reduce(0) { $0 + $1.utf8.count + 1 } }
            let records = segments[0 ..< removeCount].reduce(0) { $0 + $1.count }
            var last = segments[segments.count - 1]
            let ts = last.compactMap { field($0, "ts") }.max() ?? 0
            let list = gone.map { "\"\($0)\"" }.joined(separator: ",")
            last.insert(#"{"type":"segments_removed","ts":\#(ts),"pid":\#(pid),"segments":[\#(list)],"bytes":\#(bytes),"records":\#(records),"reason":"retain_mb","unshipped":0}"#,
                        at: max(1, last.count - 1))
            segments[segments.count - 1] = last
            removed = gone
        }
        var files: [String] = []
        for (n, segment) in segments.enumerated() where n >= removeCount {
            try Data((segment.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path(n)))
            files.append(path(n))
        }
        return Result(files: files, removed: removed)
    }

    /// A top-level integer field of a log line (the first `"key":` in it).
    static func field(_ line: String, _ key: String) -> Int64? {
        guard let r = line.range(of: "\"\(key)\":") else { return nil }
        return Int64(line[r.upperBound...].prefix { $0 == "-" || $0.isNumber })
    }
}
