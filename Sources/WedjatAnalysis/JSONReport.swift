import Dispatch
import Foundation

/// Renders a `Report` as one JSON document (fields: docs/REPORT_JSON.md). Keys are sorted and
/// slashes unescaped so the output is stable and diffable.
public enum JSONReport {
    public static func render(_ report: Report) throws -> String {
        try renderInTwo(report) ?? encode(report) + "\n"
    }

    /// ReportJSONEncoder's bytes, which are JSONEncoder's; JSONEncoder itself for what that one
    /// does not follow.
    static func encode<T: Encodable>(_ value: T) throws -> String {
        if let text = try? ReportJSONEncoder.encode(value) { return text }
        return try foundationEncode(value)
    }

    /// Foundation's JSONEncoder with the report's settings (ReportJSONEncoderTests' reference).
    static func foundationEncode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Stands for the endpoints in the rest of the report (nothing else may hold it).
    private static let marker = "\u{1}wedjat: the endpoints go here\u{1}"

    /// The endpoints (the largest table, most of a big report's text) encoded on another core
    /// while this one encodes the rest with a placeholder row in their place, then put where the
    /// placeholder array is. Encoding is the longest step after the reading, on one core.
    /// Pretty-printed JSON indents by depth alone and escapes newlines inside strings, so the
    /// array encoded alone, each line indented once more, is the text it makes in place. nil
    /// when there is nothing to share (no endpoints, or no second core) or the placeholder is
    /// not found once: then the report is encoded in one piece.
    static func renderInTwo(_ report: Report) throws -> String? {
        guard !report.endpoints.isEmpty, LogReader.defaultThreads > 1 else { return nil }
        var rest = report
        rest.endpoints = [Report.EndpointRow(key: marker, role: "", host: "", method: "", path: "", requests: 0, summarized: 0,
                                             statusClasses: StatusClasses(), errors: 0, httpErrorRate: nil, ttfbUs: nil,
                                             durationUs: nil)]
        var texts: [Result<String, Error>] = [.success(""), .success("")]
        texts.withUnsafeMutableBufferPointer { out in
            let out = UnsafeSendablePointer(out.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                out.pointer[i] = Result { try i == 0 ? encode(rest) : encode(report.endpoints) }
            }
        }
        let main = try texts[0].get(), endpoints = try texts[1].get()
        // The placeholder's key, as JSON writes it (its control characters escaped).
        let written = Array(encodedString(marker).utf8)
        let closing = Array("\n  ]".utf8), opening = Array("\n  \"endpoints\" : [".utf8), newline: [UInt8] = [0x0A]
        // Bytes, not Foundation's string search (a tenth of the encoding time on these sizes).
        return main.utf8.withContiguousStorageIfAvailable { m -> String? in
            guard let at = find(written, in: m, from: 0), find(written, in: m, from: at + 1) == nil else { return nil }
            var open = at - 1
            while open >= 0, m[open] != UInt8(ascii: "[") { open -= 1 }
            guard open + 1 >= opening.count, memcmp(m.baseAddress! + open + 1 - opening.count, opening, opening.count) == 0,
                  let close = find(closing, in: m, from: at) else { return nil }
            let rest = close + closing.count
            return endpoints.utf8.withContiguousStorageIfAvailable { e -> String in
                var lines = 0, i = 0
                while let nl = find(newline, in: e, from: i) { lines += 1; i = nl + 1 }
                return String(unsafeUninitializedCapacity: open + e.count + 2 * lines + (m.count - rest) + 1) { out in
                    var n = 0
                    func put(_ p: UnsafePointer<UInt8>, _ count: Int) {
                        (out.baseAddress! + n).update(from: p, count: count)
                        n += count
                    }
                    put(m.baseAddress!, open)
                    // Each line of the array indented once more: it sits one level down.
                    var from = 0
                    while let nl = find(newline, in: e, from: from) {
                        put(e.baseAddress! + from, nl + 1 - from)
                        out[n] = 0x20; out[n + 1] = 0x20
                        n += 2
                        from = nl + 1
                    }
                    put(e.baseAddress! + from, e.count - from)
                    put(m.baseAddress! + rest, m.count - rest)
                    out[n] = UInt8(ascii: "\n")
                    return n + 1
                }
            }
        } ?? nil
    }

    /// The first place of `needle` in `hay` at or after `from`.
    private static func find(_ needle: [UInt8], in hay: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard let base = hay.baseAddress, !needle.isEmpty else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            guard let p = memchr(base + i, Int32(needle[0]), hay.count - needle.count + 1 - i) else { return nil }
            let j = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(p))
            if memcmp(base + j, needle, needle.count) == 0 { return j }
            i = j + 1
        }
        return nil
    }

    private static func encodedString(_ s: String) -> String {
        let text = (try? encode([s])) ?? ""
        // `[\n  "…"\n]`: the string alone.
        guard let a = text.firstIndex(of: "\""), let b = text.lastIndex(of: "\"") else { return s }
        return String(text[a ... b])
    }
}

/// A pointer handed to `concurrentPerform`'s iterations, each writing its own element.
private struct UnsafeSendablePointer<T>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<T>
    init(_ p: UnsafeMutablePointer<T>) { pointer = p }
}
