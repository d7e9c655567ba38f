import Foundation
import XCTest
@testable import WedjatAnalysis

/// The one-pass decoder of `http` lines (HTTPLineDecoder) beside the general path (the parse
/// into a JSONDocument, then `Record.decode`): every line, good or bad, must come out the same
/// (the same record, or the same error), with headers kept or only checked; the lines the fast
/// path declines go to the general path.
final class HTTPLineDecoderTests: XCTestCase {
    static let canonical = #"{"type":"http","ts":1763782510005842,"pid":4242,"tid":4244,"conn_id":1,"role":"client","scheme":"https","method":"POST","host":"api-199.example.com","path":"/v1/items","status":200,"peer":"10.0.199.200:443","request_index":0,"reused":false,"request_start_ts":1763782510002133,"request_end_ts":1763782510002133,"response_start_ts":1763782510005830,"response_end_ts":1763782510005842,"ttfb_us":3697,"wait_us":3697,"duration_us":3709,"request_header_bytes":261,"request_body_bytes":64,"response_header_bytes":233,"response_body_bytes":512,"headers":{"request.host":"api-199.example.com","request.user-agent":"gateway/1.4","response.content-type":"application/json","response.content-length":"512"},"complete":true,"error":null}"#

    /// Both paths on one line: (fast path taken, general result, result through `Record.decode`).
    private func both(_ line: String, keepHeaders: Bool) -> (fast: Bool, general: Result<Record, LineDecodeError>, viaDecode: Result<Record, LineDecodeError>) {
        var line = line
        return line.withUTF8 { u in
            let bytes = UnsafeRawBufferPointer(u)
            let doc = JSONDocument()
            doc.keepStringMaps = keepHeaders
            let fast = HTTPLineDecoder.decode(bytes, keepHeaders: keepHeaders) != nil
            let general = Result { () throws(LineDecodeError) in try Record.decodeParsed(bytes, into: doc) }
            let via = Result { () throws(LineDecodeError) in try Record.decode(bytes, into: doc) }
            return (fast, general, via)
        }
    }

    private func assertSame(_ line: String, fast expectFast: Bool? = nil, file: StaticString = #filePath, line l: UInt = #line) {
        for keep in [false, true] {
            let r = both(line, keepHeaders: keep)
            XCTAssertEqual(r.viaDecode, r.general, "keepHeaders \(keep): \(line)", file: file, line: l)
            if let expectFast { XCTAssertEqual(r.fast, expectFast, "fast path on \(line)", file: file, line: l) }
        }
    }

    /// Integers of every length (eight digits at a time, then one by one), signs, and the
    /// edges of 64 bits: the fast path's value is the general path's.
    func testIntegersOfEveryLength() {
        let digits = "9876543210987654321098"
        var values: [String] = []
        for k in 1 ... 21 {
            let d = String(digits.prefix(k)), nines = String(repeating: "9", count: k)
            values += [d, "-" + d, nines, "-" + nines, "1" + String(repeating: "0", count: k - 1)]
        }
        values += ["9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
                   "12345678.5", "1234567812345678e1", "0", "-0", "1234567a"]
        for v in values {
            let line = replacing(#""request_header_bytes":261"#, #""request_header_bytes":\#(v)"#)
            assertSame(line)
            if v.count <= 19, v.allSatisfy(\.isNumber) || (v.first == "-" && v.dropFirst().allSatisfy(\.isNumber)), let n = Int64(v) {
                var l = line
                let h = l.withUTF8 { HTTPLineDecoder.decode(UnsafeRawBufferPointer($0), keepHeaders: false) }
                XCTAssertEqual(h?.requestHeaderBytes, n, v)
            }
        }
    }

    /// Strings of every length, and a quote's escape, a control character, DEL or a non-ASCII
    /// character at every place of them (the scan takes eight bytes at a time and ends at the
    /// first special byte of a word): plain ones are taken with their exact value, the others
    /// go the general way, with the same result.
    func testStringsWithASpecialByteAtEveryPlace() {
        for length in 0 ... 24 {
            let plain = String(repeating: "a", count: length)
            let line = replacing(#""path":"/v1/items""#, #""path":"\#(plain)""#)
            assertSame(line, fast: true)
            var l = line
            XCTAssertEqual(l.withUTF8 { HTTPLineDecoder.decode(UnsafeRawBufferPointer($0), keepHeaders: false)?.path }, plain)
            for at in 0 ..< length {
                for special in [#"\""#, #"\\"#, #"\u0041"#, "\u{01}", "\u{7F}", "é"] {
                    let s = String(plain.prefix(at)) + special + String(plain.dropFirst(at))
                    assertSame(replacing(#""path":"/v1/items""#, #""path":"\#(s)""#), fast: false)
                    assertSame(replacing(#""host":"api-199.example.com""#, #""host":"\#(s)""#), fast: false)
                }
            }
        }
    }

    private func replacing(_ old: String, _ new: String) -> String {
        precondition(Self.canonical.contains(old))
        return Self.canonical.replacingOccurrences(of: old, with: new)
    }

    func testWedjatsOwnLinesTakeTheFastPath() {
        assertSame(Self.canonical, fast: true)
        guard case .success(.http(let h)) = both(Self.canonical, keepHeaders: true).viaDecode else { return XCTFail("not an http record") }
        XCTAssertEqual(h.host, "api-199.example.com")
        XCTAssertEqual(h.headers["response.content-length"], "512")
        XCTAssertEqual(h.ttfbUs, 3697)
        // Headers only checked: empty, as the general path leaves them.
        guard case .success(.http(let h2)) = both(Self.canonical, keepHeaders: false).viaDecode else { return XCTFail("not an http record") }
        XCTAssertEqual(h2.headers, [:])
        // Spaces between tokens, a CR at the end, nulls, fields left out, an empty headers object.
        assertSame(Self.canonical.replacingOccurrences(of: ",", with: " ,\t").replacingOccurrences(of: ":", with: " : ") + " \r", fast: nil)
        assertSame(replacing(#""status":200"#, #""status":null"#), fast: true)
        assertSame(replacing(#""reused":false,"#, ""), fast: true)
        assertSame(replacing(#""headers":{"request.host":"api-199.example.com","request.user-agent":"gateway/1.4","response.content-type":"application/json","response.content-length":"512"}"#, #""headers":{}"#), fast: true)
        assertSame(replacing(#""headers":{"request.host""#, #""headers":null,"x":{"request.host""#), fast: false)
        assertSame(#"{"type":"http","ts":1,"pid":1,"role":"server"}"#, fast: true)
        assertSame(replacing(#""ttfb_us":3697"#, #""ttfb_us":-0"#), fast: true)
        assertSame(replacing(#""ttfb_us":3697"#, #""ttfb_us":0"#), fast: true)
        assertSame(replacing(#""ttfb_us":3697"#, #""ttfb_us":9223372036854775807"#), fast: true)
        assertSame(replacing(#""ttfb_us":3697"#, #""ttfb_us":-9223372036854775808"#), fast: true)
        // Repeated headers: the last one, as the general path has it.
        assertSame(replacing(#""request.user-agent":"gateway/1.4""#, #""request.user-agent":"a","request.user-agent":"b""#), fast: true)
    }

    func testOtherLinesGoTheGeneralWay() {
        let cases: [(String, String)] = [
            // Escapes and non-ASCII in values and keys.
            (#""host":"api-199.example.com""#, #""host":"\u00e9\ud83d\ude00\n\"x\"""#),
            (#""host":"api-199.example.com""#, "\"host\":\"caf\u{e9}.example\""),
            (#""path":"/v1/items""#, #""p\u0061th":"/v1/items""#),
            (#""path":"/v1/items""#, #""path":"/v1/\/items""#),
            (#""request.host":"api-199.example.com""#, #""request.host":"a\tb""#),
            // Lone surrogate, invalid UTF-8 is below (bytes), raw control character.
            (#""path":"/v1/items""#, #""path":"\ud800""#),
            (#""path":"/v1/items""#, "\"path\":\"/v1/\u{01}items\""),
            // Numbers out of range, with fraction or exponent, leading zeros, lone minus.
            (#""ttfb_us":3697"#, #""ttfb_us":9223372036854775808"#),
            (#""ttfb_us":3697"#, #""ttfb_us":-9223372036854775809"#),
            (#""ttfb_us":3697"#, #""ttfb_us":99999999999999999999999"#),
            (#""ttfb_us":3697"#, #""ttfb_us":1e400"#),
            (#""ttfb_us":3697"#, #""ttfb_us":3.5"#),
            (#""ttfb_us":3697"#, #""ttfb_us":3.0"#),
            (#""ttfb_us":3697"#, #""ttfb_us":37E2"#),
            (#""ttfb_us":3697"#, #""ttfb_us":0.0"#),
            (#""ttfb_us":3697"#, #""ttfb_us":0e1"#),
            (#""ttfb_us":3697"#, #""ttfb_us":0123"#),
            (#""ttfb_us":3697"#, #""ttfb_us":-"#),
            (#""ttfb_us":3697"#, #""ttfb_us":--1"#),
            (#""ttfb_us":3697"#, #""ttfb_us":+1"#),
            // Wrong types.
            (#""ttfb_us":3697"#, #""ttfb_us":"3697""#),
            (#""status":200"#, #""status":true"#),
            (#""reused":false"#, #""reused":0"#),
            (#""reused":false"#, #""reused":nul"#),
            (#""reused":false"#, #""reused":fals"#),
            (#""host":"api-199.example.com""#, #""host":7"#),
            (#""headers":{"request.host":"api-199.example.com""#, #""headers":{"request.host":1"#),
            (#""headers":{"request.host":"api-199.example.com""#, #""headers":["x""#),
            (#""role":"client""#, #""role":null"#),
            (#""role":"client","#, ""),
            (#""pid":4242,"#, ""),
            (#""ts":1763782510005842,"#, ""),
            (#""ts":1763782510005842"#, #""ts":null"#),
            // Keys the fast path does not know (a newer writer's, HTTP/2's), repeated keys.
            (#""complete":true"#, #""complete":true,"later_field":{"a":[1,2,{"b":null}]}"#),
            (#""complete":true"#, #""complete":true,"stream_id":3,"pushed":true,"reset_by":"client""#),
            (#""complete":true"#, #""complete":true,"pushed":"not looked at""#),
            (#""complete":true"#, #""complete":true,"status":404"#),
            (#""complete":true"#, #""complete":true,"type":"dns""#),
            (#""complete":true"#, #""complete":true,"":1"#),
            // Broken JSON.
            (#""complete":true"#, #""complete":true,"#),
            (#""complete":true"#, #""complete":true}"#),
            (#""complete":true"#, #""complete" true"#),
            (#""complete":true"#, #""complete":true "error":null"#),
            (#""error":null}"#, #""error":null"#),
            (#""error":null}"#, #""error":null}}"#),
            (#""error":null}"#, #""error":null} x"#),
            (#""error":null}"#, #""error":null}{}"#),
        ]
        for (old, new) in cases {
            let line = replacing(old, new)
            assertSame(line, fast: false)
        }
        // Leading space, another type, the type not first: the general path.
        assertSame(" " + Self.canonical, fast: false)
        assertSame(Self.canonical.replacingOccurrences(of: #"{"type":"http","#, with: #"{"type":"https","#), fast: false)
        assertSame(#"{"ts":1,"type":"http","pid":1,"role":"client"}"#, fast: false)
    }

    /// Invalid UTF-8 (as bytes: a Swift string cannot hold it).
    func testInvalidUTF8() {
        var bytes = Array(Self.canonical.utf8)
        let at = Array(Self.canonical.utf8).firstIndex(of: UInt8(ascii: "/"))!
        for bad: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xC3, 0xA9]] {
            bytes = Array(Self.canonical.utf8)
            bytes.replaceSubrange(at ..< at + 1, with: bad)
            bytes.withUnsafeBytes { b in
                XCTAssertNil(HTTPLineDecoder.decode(b, keepHeaders: true))
                let doc = JSONDocument()
                let general = Result { () throws(LineDecodeError) in try Record.decodeParsed(b, into: doc) }
                let via = Result { () throws(LineDecodeError) in try Record.decode(b, into: doc) }
                XCTAssertEqual(via, general)
            }
        }
    }

    /// Thousands of randomly damaged copies of wedjat's line (seeded; WEDJAT_PROPERTY_ROUNDS
    /// for more): the two paths always agree.
    func testDamagedLinesAgree() {
        var fastTaken = 0
        DamagedLines.forEach(of: Self.canonical, seed: 0x5EED_4242) { b in
            for keep in [false, true] {
                b.withUnsafeBytes { u in
                    let doc = JSONDocument()
                    doc.keepStringMaps = keep
                    if HTTPLineDecoder.decode(u, keepHeaders: keep) != nil { fastTaken += 1 }
                    let general = Result { () throws(LineDecodeError) in try Record.decodeParsed(u, into: doc) }
                    let via = Result { () throws(LineDecodeError) in try Record.decode(u, into: doc) }
                    XCTAssertEqual(via, general, String(decoding: u, as: UTF8.self))
                }
            }
        }
        XCTAssertGreaterThan(fastTaken, DamagedLines.rounds / 10, "the fast path was exercised")
    }
}
