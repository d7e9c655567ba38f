import Foundation
import XCTest
@testable import WedjatAnalysis

/// The log reader's own JSON parser, against Foundation's JSONSerialization as the reference:
/// the same texts accepted and rejected, the same values, on hand-picked cases and on
/// thousands of randomly damaged log lines (seeded; WEDJAT_PROPERTY_ROUNDS for more).
final class JSONDocumentTests: XCTestCase {
    /// The document as Foundation objects (duplicate keys: the last one wins, as in Foundation).
    private func foundationValue(_ doc: JSONDocument, _ node: Int) -> Any {
        switch doc.kind(node) {
        case .null: return NSNull()
        case .true: return NSNumber(value: true)
        case .false: return NSNumber(value: false)
        case .string: return doc.string(node)!
        case .number:
            if let i = doc.int64(node) { return NSNumber(value: i) }
            return NSNumber(value: doc.double(node)!)
        case .array: return doc.elements(node).map { foundationValue(doc, $0) }
        case .object:
            var d: [String: Any] = [:]
            for (k, v) in doc.members(node) { d[doc.string(k)!] = foundationValue(doc, v) }
            return d
        }
    }

    /// nil when rejected.
    private func parse(_ bytes: [UInt8]) -> Any? {
        let doc = JSONDocument()
        guard bytes.withUnsafeBytes({ doc.parse($0) }) else { return nil }
        return foundationValue(doc, 0)
    }

    private func reference(_ bytes: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    }

    /// Same verdict, and the same value when accepted.
    private func agree(_ bytes: [UInt8]) -> String? {
        let mine = parse(bytes), theirs = reference(bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        switch (mine, theirs) {
        case (nil, nil): return nil
        case (let m?, nil): return "accepted what Foundation rejects: \(text) → \(m)"
        case (nil, let t?):
            // Foundation (on Linux) takes a trailing comma in an array or object, and NUL bytes
            // around a number; RFC 8259 and this parser do not. Anything else it accepts must
            // be accepted.
            let strict = text.replacingOccurrences(of: #",\s*([\]}])"#, with: "$1", options: .regularExpression)
                .trimmingCharacters(in: CharacterSet(charactersIn: "\u{0}"))
            if strict != text, let m = parse(Array(strict.utf8)), same(m, t) { return nil }
            return "rejected what Foundation accepts: \(text) \(bytes) → \(t)"
        case (let m?, let t?):
            return same(m, t) ? nil : "different value: \(text): \(m) vs \(t)"
        }
    }

    private static let boolClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    private func same(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (is NSNull, is NSNull): return true
        case (let x as String, let y as String): return x == y
        case (let x as [Any], let y as [Any]): return x.count == y.count && zip(x, y).allSatisfy(same)
        case (let x as [String: Any], let y as [String: Any]):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { same(v, $0) } ?? false }
        case (let x as NSNumber, let y as NSNumber):
            let xb = ObjectIdentifier(type(of: x)) == Self.boolClass, yb = ObjectIdentifier(type(of: y)) == Self.boolClass
            return xb == yb && x.compare(y) == .orderedSame
        default: return false
        }
    }

    func testHandPickedTexts() {
        let texts = [
            #"{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-0.5e-3,"g":""}"#, "{}", "[]", " { } ", "\t[1,\n2]\r\n",
            #"{"s":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}"#, #""\u0041""#, "0", "-0", "1.5", "1E+2", "123456789012345678",
            "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "+1", "1e", "1e+", "tru", "nul",
            "\"abc", "\"a\u{01}b\"", "[1] x", "\"\\x\"", "\"\\u12g4\"", "[\"\u{7F}\"]", "{\"k\":[{\"k\":[{}]}]}",
            "1 2", "\"\\u00\"", "[-]", "[1e5]", "[0.0]", "[-1.25E-2]", "\"é中😀\"",
        ]
        for t in texts {
            if let problem = agree(Array(t.utf8)) { XCTFail(problem) }
        }
    }

    func testInvalidUTF8AndControlCharactersAreRejected() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
                               [0x22, 0xE2, 0x82, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0x00, 0x22],
                               [0x22, 0x0A, 0x22]] {
            XCTAssertNil(parse(bytes), "\(bytes)")
        }
        XCTAssertEqual(parse([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22]) as? String, "😀")
    }

    func testNestingIsBounded() {
        let deep = String(repeating: "[", count: JSONDocument.maxDepth) + String(repeating: "]", count: JSONDocument.maxDepth)
        XCTAssertNotNil(parse(Array(deep.utf8)))
        let tooDeep = "[" + deep + "]"
        XCTAssertNil(parse(Array(tooDeep.utf8)))
        XCTAssertNil(parse(Array(String(repeating: "{\"a\":", count: 100_000).utf8)))
    }

    func testIntegersAreExact() {
        func int(_ t: String) -> Int64? {
            let doc = JSONDocument()
            var t = t
            return t.withUTF8 { doc.parse(UnsafeRawBufferPointer($0)) } ? doc.int64(0) : nil
        }
        XCTAssertEqual(int("9223372036854775807"), Int64.max)
        XCTAssertEqual(int("-9223372036854775808"), Int64.min)
        XCTAssertNil(int("9223372036854775808"))
        XCTAssertEqual(int("1e3"), 1000)
        XCTAssertEqual(int("2.0"), 2)
        XCTAssertNil(int("1.5"))
        XCTAssertNil(int("1e400"))
        XCTAssertNil(int("\"1\""))
    }

    func testFieldLookupInAnyOrder() throws {
        let doc = JSONDocument()
        var t = #"{"type":"x","a":1,"n":{"a":2,"b":3},"b":4,"a\u0062":5}"#
        XCTAssertTrue(t.withUTF8 { doc.parse(UnsafeRawBufferPointer($0)) })
        // Out of order, repeated, nested in between, escaped key, absent.
        for (key, want) in [("b", 4), ("a", 1), ("b", 4), ("ab", 5), ("a", 1)] {
            XCTAssertEqual(doc.find(key, in: 0).flatMap(doc.int64), Int64(want), key)
            let n = try XCTUnwrap(doc.find("n", in: 0))
            XCTAssertEqual(doc.find("b", in: n).flatMap(doc.int64), 3)
        }
        XCTAssertNil(doc.find("zz", in: 0))
        XCTAssertNil(doc.find("", in: 0))
    }

    /// Damaged log lines: every verdict and value as Foundation's.
    func testRandomlyDamagedLinesAgreeWithFoundation() {
        let rounds = Int(ProcessInfo.processInfo.environment["WEDJAT_PROPERTY_ROUNDS"] ?? "") ?? 3000
        var rng = LogReaderPropertyTests.Rng(state: 0xD0C)
        let lines = LogReaderPropertyTests.goodLines.map { Array($0.utf8.dropLast()) } + [
            Array(#"{"type":"http","ts":1,"pid":2,"path":"/a\u00e9?b=\"c\"","headers":{"request.host":"x"},"n":-1.5e2,"ok":true}"#.utf8),
            Array(#"{"type":"sample","ts":3,"pid":4,"cpu":{"total_pct":12.5},"top_threads":[{"tid":1,"cpu_pct":0.0}],"x":[[],{}]}"#.utf8),
        ]
        let alphabet = Array("{}[]\":,\\-+.eE0123456789 tfnul\u{7F}".utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF]
        var failures = 0
        for _ in 0 ..< rounds {
            var b = lines[rng.below(lines.count)]
            for _ in 0 ..< 1 + rng.below(3) {
                switch rng.below(4) {
                case 0: b = Array(b.prefix(rng.below(b.count + 1)))
                case 1 where !b.isEmpty: b[rng.below(b.count)] = alphabet[rng.below(alphabet.count)]
                case 2: b.insert(alphabet[rng.below(alphabet.count)], at: rng.below(b.count + 1))
                default: if !b.isEmpty { b.remove(at: rng.below(b.count)) }
                }
            }
            if let problem = agree(b) {
                failures += 1
                if failures <= 10 { XCTFail(problem) }
            }
        }
        XCTAssertEqual(failures, 0)
    }

    /// `present`: which of some keys an object has, in one pass, escaped keys and nested objects
    /// included (a nested object's keys are not the outer one's).
    func testPresentKeys() {
        let doc = JSONDocument()
        let text = Array(#"{"a":1,"http_none":"x","n":{"inherited_from":2},"forked\u005fwhile_open":true,"":0}"#.utf8)
        XCTAssertTrue(text.withUnsafeBytes { doc.parse($0) })
        XCTAssertEqual(doc.present(["http_none", "http_undecoded", "forked_while_open", "inherited_from", ""], in: 0), 0b10101)
        XCTAssertEqual(doc.present(["inherited_from"], in: doc.find("n", in: 0)!), 1)
    }
}
