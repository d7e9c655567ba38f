/// Compact JSON written straight into bytes, for the exports' hot paths (a span, a trace
/// event): no tree of values, no intermediate strings. Commas are placed by the writer, which
/// remembers for each open object or array whether it has a member yet.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []
    private var first: [Bool] = []
    /// Pretty-printing: spaces per level (0: compact), and how deep the value written sits in
    /// its document (as ExportJSON.rendered(indent:level:) lays it out).
    private let indent: Int
    private let baseLevel: Int

    init(capacity: Int = 4096, indent: Int = 0, level: Int = 0) {
        bytes.reserveCapacity(capacity)
        self.indent = indent
        self.baseLevel = level
    }

    private static let spaces = [UInt8](repeating: 0x20, count: 256)

    @inline(__always) private mutating func newline(_ level: Int) {
        bytes.append(0x0A)
        let n = min(indent * level, JSONBytes.spaces.count)
        JSONBytes.spaces.withUnsafeBufferPointer { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0 ..< n])) }
    }

    var count: Int { bytes.count }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        first.removeAll(keepingCapacity: true)
        pendingValue = false
    }

    @inline(__always) private mutating func separate() {
        guard let last = first.last else { return }
        if !last { bytes.append(UInt8(ascii: ",")) } else { first[first.count - 1] = false }
        if indent > 0 { newline(baseLevel + first.count) }
    }

    /// `{`, as a value (in an array, or after `key`).
    mutating func openObject() { valueStart(); bytes.append(UInt8(ascii: "{")); first.append(true) }
    mutating func closeObject() { closing(); bytes.append(UInt8(ascii: "}")) }
    mutating func openArray() { valueStart(); bytes.append(UInt8(ascii: "[")); first.append(true) }
    mutating func closeArray() { closing(); bytes.append(UInt8(ascii: "]")) }

    /// A container with members ends on its own line when pretty.
    @inline(__always) private mutating func closing() {
        let empty = first.removeLast()
        if indent > 0, !empty { newline(baseLevel + first.count) }
    }

    /// A member's name; its value follows (a call that writes a value, or open...).
    mutating func key(_ k: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        if indent > 0 { bytes.append(0x20) }
        // The value that follows must not get a comma of its own.
        pendingValue = true
    }

    /// A member's name made at run time. (Not `key(_: String)`: a string literal would pick that
    /// overload over the StaticString one, and every constant name would go through a String.)
    mutating func key(dynamic k: String) {
        separate()
        writeString(k)
        bytes.append(UInt8(ascii: ":"))
        if indent > 0 { bytes.append(0x20) }
        pendingValue = true
    }

    /// After `key`, the next value closes the member: the marker pushed by `key` goes.
    private var pendingValue = false
    @inline(__always) private mutating func valueStart() {
        if pendingValue {
            pendingValue = false
        } else {
            separate()
        }
    }

    // Values. `openObject`/`openArray` after `key` go through `valueStart` too.
    mutating func object(_ body: (inout JSONBytes) -> Void) {
        openObject()
        body(&self)
        closeObject()
    }

    mutating func array(_ body: (inout JSONBytes) -> Void) {
        openArray()
        body(&self)
        closeArray()
    }

    mutating func string(_ s: String) { valueStart(); writeString(s) }

    mutating func int(_ v: Int64) { valueStart(); writeInt(v) }

    /// An integer as a JSON string (OTLP's 64-bit integers).
    mutating func intString(_ v: Int64) {
        valueStart()
        bytes.append(UInt8(ascii: "\""))
        writeInt(v)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func bool(_ v: Bool) { valueStart(); if v { appendStatic("true") } else { appendStatic("false") } }

    @inline(__always) private mutating func appendStatic(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// `units / 10^decimals` exactly, trailing zeros trimmed (as ExportJSON.fixed).
    mutating func fixed(_ units: Int64, _ decimals: Int) {
        valueStart()
        var scale: UInt64 = 1
        for _ in 0 ..< decimals { scale *= 10 }
        let m = units.magnitude
        if units < 0 { bytes.append(UInt8(ascii: "-")) }
        writeInt(Int64(m / scale))
        var frac = m % scale
        guard frac > 0 else { return }
        var digits = decimals
        while frac % 10 == 0 { frac /= 10; digits -= 1 }
        bytes.append(UInt8(ascii: "."))
        // Leading zeros of the fraction, then its digits.
        var width = 1, f = frac
        while f >= 10 { f /= 10; width += 1 }
        for _ in 0 ..< digits - width { bytes.append(0x30) }
        writeInt(Int64(frac))
    }

    /// A string from part of another (a header's name after its prefix): no new String.
    mutating func string(_ s: Substring) {
        valueStart()
        var s = s
        s.withUTF8 { u in
            var clean = true
            for c in u where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { clean = false; break }
            if clean {
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: u)
                bytes.append(UInt8(ascii: "\""))
            }
            if !clean { writeString(String(decoding: u, as: UTF8.self)) }
        }
    }

    /// JSON text made elsewhere, as one value.
    mutating func raw(_ text: [UInt8]) { valueStart(); bytes.append(contentsOf: text) }
    mutating func raw(_ text: String) { valueStart(); bytes.append(contentsOf: text.utf8) }

    /// Bytes outside any value (a document's frame, a newline).
    mutating func literal(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    @inline(__always) private mutating func writeInt(_ v: Int64) {
        if v == 0 { bytes.append(UInt8(ascii: "0")); return }
        var m = v.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while m > 0 { d[n] = UInt8(m % 10) + 0x30; m /= 10; n += 1 }
            if v < 0 { bytes.append(UInt8(ascii: "-")) }
            for i in stride(from: n - 1, through: 0, by: -1) { bytes.append(d[i]) }
        }
    }

    private mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { u in
            var clean = true
            for c in u where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { clean = false; break }
            if clean { bytes.append(contentsOf: u); return }
            for c in u {
                switch c {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case 0 ..< 0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 15)]])
                default: bytes.append(c)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

