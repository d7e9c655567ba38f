import Foundation
import XCTest
@testable import WedjatAnalysis

/// The report's own JSON encoder beside Foundation's JSONEncoder with the report's settings
/// (`JSONReport.foundationEncode`): byte for byte the same, on seeded values of many shapes and
/// on the reports of every log under Tests/.
final class ReportJSONEncoderTests: XCTestCase {
    /// A value of many shapes: nested structs, optionals, arrays, dictionaries keyed by strings
    /// and by integers, numbers of every size, strings with escapes and non-ASCII.
    struct Shape: Encodable {
        var camelCaseKey: Int
        var httpURLValue: String?
        var p50Us: Double?
        var s2xx: Int64
        var bytesIn: UInt64
        var tags: [String]
        var byName: [String: Int]
        var byCode: [Int: String]
        var nested: [Inner]
        var empty: [Int]
        var emptyObject: [String: Int]
        var flag: Bool?
        var nothing: Int?
        /// Optionals and small integers inside arrays reach the encoder as generic values.
        var sparse: [Int?]
        var smalls: [UInt8]
        struct Inner: Encodable {
            var aB: Double
            var rangeUS: [Int64]
            var withID: String
        }
    }

    private let strings = ["", "plain", "/v1/items/{n}", "a\"q\"b", "back\\slash", "tab\tnew\nline\r", "\u{01}\u{1f}\u{7f}",
                           "é中😀", "\u{2028}", "http://x/y?z=1"]
    private let doubles: [Double] = [0, 1, -1, 0.5, 1e-05, 0.00823, 123456789.125, 1e16, 1.5e300, 2.0 / 3.0, 100, 4.4e-3]
    private let names = ["b", "a", "B", "a10", "a9", "A9", "2xx", "10", "9", "no_response", "é", "Z", "_x", "x_y", "xY"]

    func testSameBytesAsJSONEncoder() throws {
        var rng = SplitMix(state: 0x4A53_4F4E)
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        func some<T>(_ f: () -> T) -> T? { rng.next() % 3 == 0 ? nil : f() }
        for i in 0 ..< 400 {
            var byName: [String: Int] = [:], byCode: [Int: String] = [:]
            for _ in 0 ..< Int(rng.next() % 6) { byName[pick(names)] = Int(rng.next() % 1000) }
            for _ in 0 ..< Int(rng.next() % 4) { byCode[[200, 404, 99, 100, -1][Int(rng.next() % 5)]] = pick(strings) }
            let value = Shape(camelCaseKey: Int(Int64(bitPattern: rng.next()) >> Int(rng.next() % 64)),
                              httpURLValue: some { pick(strings) }, p50Us: some { pick(doubles) * (rng.next() % 2 == 0 ? 1 : -1) },
                              s2xx: Int64(rng.next() % 10), bytesIn: rng.next(),
                              tags: (0 ..< Int(rng.next() % 4)).map { _ in pick(strings) }, byName: byName, byCode: byCode,
                              nested: (0 ..< Int(rng.next() % 3)).map { _ in
                                  Shape.Inner(aB: pick(doubles), rangeUS: [Int64(rng.next() % 100), -5], withID: pick(strings))
                              },
                              empty: [], emptyObject: [:], flag: some { rng.next() % 2 == 0 }, nothing: nil,
                              sparse: (0 ..< Int(rng.next() % 4)).map { _ in some { Int(rng.next() % 50) } },
                              smalls: (0 ..< Int(rng.next() % 3)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            XCTAssertEqual(try ReportJSONEncoder.encode(value), try JSONReport.foundationEncode(value), "value \(i)")
        }
    }

    /// A key written twice: the later value replaces the earlier one in JSONEncoder's output.
    func testAKeyWrittenTwice() throws {
        struct Twice: Encodable {
            enum K: String, CodingKey { case b, aKey, c }
            let first: Int
            func encode(to encoder: Encoder) throws {
                var c = encoder.container(keyedBy: K.self)
                try c.encode(first, forKey: .aKey)
                try c.encode("x", forKey: .c)
                try c.encode(2, forKey: .b)
                try c.encode(first + 1, forKey: .aKey)
                try c.encode(3, forKey: .b)
            }
        }
        for v in [Twice(first: 1), Twice(first: 7)] {
            XCTAssertEqual(try ReportJSONEncoder.encode([v, v]), try JSONReport.foundationEncode([v, v]))
        }
    }

    func testFallsBackWhereJSONEncoderEncodesSpecially() {
        struct WithDate: Encodable { var when = Date(timeIntervalSince1970: 0) }
        struct NotFinite: Encodable { var x = Double.infinity }
        struct DatesInAnArray: Encodable { var when: [Date?] = [nil, Date(timeIntervalSince1970: 0)] }
        XCTAssertThrowsError(try ReportJSONEncoder.encode(DatesInAnArray()))
        XCTAssertThrowsError(try ReportJSONEncoder.encode(WithDate()))
        XCTAssertThrowsError(try ReportJSONEncoder.encode(NotFinite()))
    }

    /// The report of every directory of logs under Tests/ (fixtures and golden inputs).
    func testReportsOfEveryFixture() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        var dirs = Set<String>()
        for case let path as String in FileManager.default.enumerator(atPath: root.path) ?? FileManager.DirectoryEnumerator()
        where path.hasSuffix(".ndjson") {
            dirs.insert((root.path as NSString).appendingPathComponent((path as NSString).deletingLastPathComponent))
        }
        var compared = 0
        for dir in dirs.sorted() {
            guard let analysis = try? RunAnalysis.load(paths: [dir]) else { continue }
            let report = Report(analysis: analysis)
            XCTAssertEqual(try ReportJSONEncoder.encode(report), try JSONReport.foundationEncode(report), dir)
            compared += 1
        }
        XCTAssertGreaterThan(compared, 3)
    }
}
