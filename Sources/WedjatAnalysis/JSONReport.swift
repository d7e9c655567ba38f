import Foundation

/// Renders a `Report` as one JSON document (fields: docs/REPORT_JSON.md). Keys are sorted and
/// slashes unescaped so the output is stable and diffable.
public enum JSONReport {
    public static func render(_ report: Report) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(report)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
