import XCTest
import CWedjatCommon
@testable import WedjatCore

final class JSONAndRedactionTests: XCTestCase {
    private func redact(_ previous: String?, _ arg: String) -> String {
        var out = [CChar](repeating: 0, count: 512)
        if let previous { wj_redact_arg(previous, arg, &out, out.count) } else { wj_redact_arg(nil, arg, &out, out.count) }
        return String(cString: out)
    }

    func testURLsLoseUserinfoQueryAndFragment() {
        XCTAssertEqual(redact(nil, "https://user:pw@example.com:8443/a/b?token=x&y=2#frag"),
                       "https://***@example.com:8443/a/b?***#***")
        XCTAssertEqual(redact(nil, "http://127.0.0.1:8080/"), "http://127.0.0.1:8080/")
        XCTAssertEqual(redact(nil, "http://h/p?q"), "http://h/p?***")
    }

    func testSecretOptionsAndAssignments() {
        XCTAssertEqual(redact("-u", "alice:secret"), "***")
        XCTAssertEqual(redact("--password", "hunter2"), "***")
        XCTAssertEqual(redact("-H", "Authorization: Bearer abc"), "Authorization: ***")
        XCTAssertEqual(redact("-H", "Content-Type: text/plain"), "Content-Type: text/plain")
        XCTAssertEqual(redact(nil, "--api-token=abc"), "--api-token=***")
        XCTAssertEqual(redact(nil, "DB_PASSWORD=abc"), "DB_PASSWORD=***")
        XCTAssertEqual(redact(nil, "--header=Cookie: a=b"), "--header=Cookie: ***")
        XCTAssertEqual(redact(nil, "-uuser:pw"), "-u***")
        XCTAssertEqual(redact(nil, "-HAuthorization: Bearer abc"), "-HAuthorization: ***")
        XCTAssertEqual(redact(nil, "-HHost: example.org"), "-HHost: example.org")
        XCTAssertEqual(redact(nil, "--user=alice:pw"), "--user=***")
        XCTAssertEqual(redact(nil, "Authorization: Bearer abc"), "Authorization: ***")
        XCTAssertEqual(redact(nil, "X-Api-Key: abc"), "X-Api-Key: ***")
        XCTAssertEqual(redact(nil, "token Bearer abc"), "token Bearer ***")
        XCTAssertEqual(redact(nil, "Note: hello"), "Note: hello")
        XCTAssertEqual(redact(nil, "-v"), "-v")
        XCTAssertEqual(redact(nil, "file.txt"), "file.txt")
    }

    func testCJSONEscapesAndStaysValid() throws {
        var buf = [CChar](repeating: 0, count: 256)
        var j = wj_json()
        wj_json_init(&j, &buf, buf.count)
        wj_json_begin(&j)
        wj_json_str(&j, "s", "q\"b\\n\nt\t\u{1}é")
        let invalid: [CChar] = [0x61, CChar(bitPattern: 0xff), 0x62]
        wj_json_strn(&j, "bad", invalid, invalid.count)
        wj_json_int(&j, "i", -5)
        wj_json_null(&j, "n")
        wj_json_end(&j)
        XCTAssertEqual(j.overflow, 0)
        let text = String(cString: buf)
        XCTAssertEqual(text, #"{"s":"q\"b\\n\nt\t\u0001é","bad":"a\ufffdb","i":-5,"n":null}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        XCTAssertEqual(parsed?["s"] as? String, "q\"b\\n\nt\t\u{1}é")
    }

    func testCJSONOverflowIsReportedNotCut() {
        var buf = [CChar](repeating: 0, count: 16)
        var j = wj_json()
        wj_json_init(&j, &buf, buf.count)
        wj_json_begin(&j)
        wj_json_str(&j, "long", String(repeating: "x", count: 64))
        XCTAssertEqual(j.overflow, 1)
    }

    func testSwiftJSONLine() throws {
        let line = JSONLine()
        line.beginObject()
        line.field("a", 12345)
        line.field("b", "x\"y")
        line.field("c", nil as String?)
        line.field("d", UInt64(7))
        line.field("e", true)
        line.field("f", -3)
        line.endObject()
        XCTAssertEqual(String(decoding: line.bytes, as: UTF8.self), #"{"a":12345,"b":"x\"y","c":null,"d":7,"e":true,"f":-3}"#)
    }

    /// Every digit count, both signs, the extremes; every escape; growth past the capacity.
    func testSwiftJSONLineNumbersEscapesAndGrowth() throws {
        let line = JSONLine(capacity: 8)
        var expected = "["
        line.beginArray()
        var values: [Int] = [0, 1, 9, 10, 99, 100, 101, 999, 1000, Int.max, Int.min, -1, -10, -100, -12345]
        var p = 1
        for _ in 0..<18 { values.append(p); values.append(p - 1); values.append(-p); p *= 10 }
        for (i, v) in values.enumerated() {
            line.value(v)
            expected += (i > 0 ? "," : "") + String(v)
        }
        line.value(UInt64.max)
        expected += ",\(Int.max)"
        let s = "a\"b\\c\nd\re\tf\u{01}g\u{7F}h\u{1F}é日本"
        line.value(s)
        expected += #","a\"b\\c\nd\re\tf\u0001g\u007fh\u001fé日本""#
        let long = String(repeating: "abcdefgh", count: 5) + "é" + String(repeating: "x", count: 9)
        line.value(long)
        expected += ",\"\(long)\""
        for at in [0, 7, 8, 9, 15, 16, 17, 30] {   // one escape at each place in and around the 8-byte words
            var t = Array(String(repeating: "y", count: 32).utf8)
            t[at] = 0x22
            line.value(String(decoding: t, as: UTF8.self))
            expected += ",\"" + String(repeating: "y", count: at) + "\\\"" + String(repeating: "y", count: 31 - at) + "\""
        }
        line.beginObject()
        line.key(dynamic: "k\"")
        line.value("v")
        line.endObject()
        expected += #",{"k\"":"v"}"#
        line.endArray()
        expected += "]"
        XCTAssertEqual(String(decoding: line.bytes, as: UTF8.self), expected)
        line.reset()
        XCTAssertEqual(line.count, 0)
    }

    /// Every length a short copy handles by size class (0-3, 4-7, 8-16, 17-32, longer): the
    /// bytes copied exactly, none around them touched.
    func testCopyShortEveryLength() {
        for n in 0...70 {
            let src = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            var dst = [UInt8](repeating: 0xEE, count: n + 16)
            src.withUnsafeBytes { s in
                dst.withUnsafeMutableBytes { d in
                    (d.baseAddress! + 8).copyShort(from: s.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: n)
                }
            }
            XCTAssertEqual(Array(dst[8..<(8 + n)]), src, "length \(n)")
            XCTAssertEqual(Array(dst[0..<8]) + Array(dst[(8 + n)...]), [UInt8](repeating: 0xEE, count: 16), "length \(n)")
        }
    }

    /// Strings of every length up to 40 as values and as keys (the short-copy classes), between
    /// other fields.
    func testSwiftJSONLineStringsOfEveryLength() {
        let line = JSONLine(capacity: 16)
        var expected = "{"
        line.beginObject()
        for n in 0...40 {
            let v = String((0..<n).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
            line.key(dynamic: "k" + v)
            line.value(v)
            line.field("n", n)
            expected += (n > 0 ? "," : "") + "\"k\(v)\":\"\(v)\",\"n\":\(n)"
        }
        line.field("request_header_bytes", 1)   // static keys of 20, 32 and 33 bytes
        line.field("a_key_of_thirty_two_bytes_long__", 2)
        line.field("a_key_of_thirty_three_bytes_long_", 3)
        expected += #","request_header_bytes":1,"a_key_of_thirty_two_bytes_long__":2,"a_key_of_thirty_three_bytes_long_":3"#
        line.endObject()
        expected += "}"
        XCTAssertEqual(String(decoding: line.bytes, as: UTF8.self), expected)
    }

    /// One byte to escape at every place of strings of 1-20 bytes (the word checks, the last
    /// word overlapping the ones before, a short string's word): found wherever it is.
    func testSwiftJSONLineEscapeAtEveryPlace() {
        for n in 1...20 {
            for at in 0..<n {
                for (byte, escaped) in [(UInt8(0x22), "\\\""), (0x5C, "\\\\"), (0x01, "\\u0001"), (0x7F, "\\u007f")] {
                    var t = [UInt8](repeating: UInt8(ascii: "y"), count: n)
                    t[at] = byte
                    let line = JSONLine()
                    line.value(String(decoding: t, as: UTF8.self))
                    let expected = "\"" + String(repeating: "y", count: at) + escaped + String(repeating: "y", count: n - at - 1) + "\""
                    XCTAssertEqual(String(decoding: line.bytes, as: UTF8.self), expected, "length \(n), byte \(byte) at \(at)")
                }
            }
        }
    }
}
