import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The reader's stages timed one by one on a log (scripts/bench/report.sh, beside simdjson's
/// parser on the same lines): what share of `wedjat report`'s time is JSON parsing at all.
public enum ReaderBenchmark {
    public struct Timing: Sendable {
        public var lines: Int
        public var bytes: Int
        public var seconds: Double
    }

    /// Every line of `path` (in memory first: the disk is not measured) through `body`.
    private static func eachLine(_ path: String, _ body: (UnsafeRawBufferPointer) -> Void) -> Timing? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        var lines = 0
        let t0 = DispatchTime.now().uptimeNanoseconds
        data.withUnsafeBytes { all in
            var start = 0
            while start < all.count {
                let nl = memchr(all.baseAddress! + start, 0x0A, all.count - start)
                    .map { all.baseAddress!.distance(to: UnsafeRawPointer($0)) } ?? all.count
                body(UnsafeRawBufferPointer(rebasing: all[start ..< nl]))
                lines += 1
                start = nl + 1
            }
        }
        let t1 = DispatchTime.now().uptimeNanoseconds
        return Timing(lines: lines, bytes: data.count, seconds: Double(t1 - t0) / 1e9)
    }

    /// JSONDocument's parse (full RFC 8259 validation, the tape of nodes), nothing decoded.
    public static func parse(_ path: String) -> Timing? {
        let doc = JSONDocument()
        var ok = 0
        let t = eachLine(path) { if doc.parse($0) { ok += 1 } }
        return ok > 0 ? t : nil
    }

    /// Parse and decode into records (what the reader does per line, on one thread).
    public static func decode(_ path: String, headers: Bool) -> Timing? {
        let doc = JSONDocument()
        doc.keepStringMaps = headers
        var ok = 0
        let t = eachLine(path) { if (try? Record.decode($0, into: doc)) != nil { ok += 1 } }
        return ok > 0 ? t : nil
    }
}
