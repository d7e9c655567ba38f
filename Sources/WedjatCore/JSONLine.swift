// Builds NDJSON records into a reusable byte buffer. No Foundation: this runs inside the
// watched process.

public struct JSONLine {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    public mutating func beginObject() { bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }
    public mutating func endLine() { bytes.append(UInt8(ascii: "\n")); needsComma = false }

    public mutating func key(_ k: StaticString) {
        separator()
        bytes.append(UInt8(ascii: "\""))
        k.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func key(dynamic k: String) {
        separator()
        appendQuoted(k)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    public mutating func value(_ v: Int) { separator(); appendDecimal(v); needsComma = true }
    public mutating func value(_ v: UInt64) {
        separator()
        if v > UInt64(Int.max) { appendDecimal(Int.max) } else { appendDecimal(Int(v)) }
        needsComma = true
    }
    public mutating func value(_ v: Bool) {
        separator()
        bytes.append(contentsOf: v ? Array("true".utf8) : Array("false".utf8))
        needsComma = true
    }
    public mutating func value(_ v: String) { separator(); appendQuoted(v); needsComma = true }
    public mutating func null() { separator(); bytes.append(contentsOf: [110, 117, 108, 108]); needsComma = true }
    public mutating func value(_ v: String?) { if let v { value(v) } else { null() } }
    public mutating func value(_ v: Int?) { if let v { value(v) } else { null() } }

    public mutating func field(_ k: StaticString, _ v: Int) { key(k); value(v) }
    public mutating func field(_ k: StaticString, _ v: UInt64) { key(k); value(v) }
    public mutating func field(_ k: StaticString, _ v: Bool) { key(k); value(v) }
    public mutating func field(_ k: StaticString, _ v: String) { key(k); value(v) }
    public mutating func field(_ k: StaticString, _ v: String?) { key(k); value(v) }
    public mutating func field(_ k: StaticString, _ v: Int?) { key(k); value(v) }

    private mutating func appendDecimal(_ v: Int) {
        if v == 0 { bytes.append(UInt8(ascii: "0")); return }
        var n = v
        if n < 0 {
            bytes.append(UInt8(ascii: "-"))
            if n == Int.min { bytes.append(contentsOf: Array("9223372036854775808".utf8)); return }
            n = -n
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while n > 0 {
                d[count] = UInt8(ascii: "0") &+ UInt8(n % 10)
                n /= 10
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(d[i]) }
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    // JSON string escaping; invalid UTF-8 was already repaired by String's decoding.
    private mutating func appendQuoted(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(b)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(b)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          JSONLine.hex[Int(b >> 4)], JSONLine.hex[Int(b & 0xF)]])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
