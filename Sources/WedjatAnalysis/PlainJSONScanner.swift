import Foundation

/// The pieces of a one-pass reader of wedjat's own plain JSON lines (HTTPLineDecoder,
/// ConnectionLineDecoder): whitespace, members, strings of printable ASCII without escapes,
/// integers that fit in 64 bits, booleans and null. Each returns nil (or false) for anything
/// else, and the decoder then gives the line to the general path (JSONDocument and
/// `Record.decode`), which decides what it is and words any error.
struct PlainJSONScanner {
    let p: UnsafePointer<UInt8>
    let n: Int
    var i: Int
    let strings: StringCache

    @inline(__always) mutating func skipSpace() {
        while i < n {
            let c = p[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
        }
    }

    /// After an object's member: true past a `,` (another member follows), false past the
    /// closing `}`, nil for anything else.
    @inline(__always) mutating func nextMember() -> Bool? {
        skipSpace()
        guard i < n else { return nil }
        if p[i] == UInt8(ascii: ",") {
            i += 1
            skipSpace()
            return true
        }
        guard p[i] == UInt8(ascii: "}") else { return nil }
        i += 1
        return false
    }

    /// A string of printable ASCII without escapes, the opening quote at `i`: its bytes' range.
    @inline(__always) mutating func plainString() -> Range<Int>? {
        guard i < n, p[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        let start = i
        // Eight bytes at a time while none is a quote, a backslash, a control character,
        // DEL or non-ASCII (each test is exact: nonzero only when some byte matches, and its
        // lowest set bit is in the first byte that matches, since a borrow only runs upwards).
        // That first byte ends the string when it is the quote; anything else is the general
        // path's, as in the byte loop below (for the last few bytes of a line).
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        while n - i >= 8 {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            let special = hasZero(w ^ (ones &* 0x22)) | hasZero(w ^ (ones &* 0x5C)) | hasZero(w ^ (ones &* 0x7F))
                | (w & highs) | ((w &- ones &* 0x20) & ~w & highs)
            if special != 0 {
                let at = i + (special.trailingZeroBitCount >> 3)
                guard p[at] == UInt8(ascii: "\"") else { return nil }
                i = at + 1
                return start ..< at
            }
            i += 8
        }
        while i < n {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return start ..< i - 1
            }
            // Control characters (invalid), escapes and non-ASCII: the general path's.
            guard c >= 0x20, c < 0x7F, c != UInt8(ascii: "\\") else { return nil }
            i += 1
        }
        return nil
    }

    @inline(__always) func text(_ r: Range<Int>) -> String {
        strings.string(p + r.lowerBound, r.count)
    }

    /// `null`: consumed, true.
    @inline(__always) mutating func null() -> Bool {
        guard n - i >= 4, p[i] == UInt8(ascii: "n"), p[i + 1] == UInt8(ascii: "u"), p[i + 2] == UInt8(ascii: "l"),
              p[i + 3] == UInt8(ascii: "l") else { return false }
        i += 4
        return true
    }

    /// .some(nil) for null; nil when the value is not a plain string or null.
    @inline(__always) mutating func optionalString() -> String?? {
        if null() { return .some(nil) }
        guard let r = plainString() else { return nil }
        return .some(text(r))
    }

    /// An integer as JSON writes it (no fraction, no exponent, no leading zero) that fits
    /// in 64 bits; .some(nil) for null.
    @inline(__always) mutating func optionalInt() -> Int64?? {
        if null() { return .some(nil) }
        guard i < n else { return nil }
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i < n, p[i] >= 0x30, p[i] <= 0x39 else { return nil }
        if p[i] == 0x30 {
            i += 1
            // `0` alone (`01` is not JSON); `0.5`, `0e1` are the general path's.
            if i < n, (p[i] >= 0x30 && p[i] <= 0x39) || p[i] == UInt8(ascii: ".") || p[i] | 0x20 == UInt8(ascii: "e") { return nil }
            return .some(0)
        }
        let start = i
        var value: Int64 = 0
        // Eight digits at a time (a timestamp has 16), while all eight are digits: each
        // byte 0x30-0x3F, and still at most 0x3F with 6 added (no carry between bytes);
        // then the eight turned into their value by three multiplications (simdjson's
        // parse_eight_digits_unrolled). Past 16 digits, one by one.
        while n - i >= 8, i - start <= 8 {
            let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            guard w & 0xF0F0_F0F0_F0F0_F0F0 == 0x3030_3030_3030_3030,
                  (w &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0 == 0x3030_3030_3030_3030 else { break }
            var v = ((w & 0x0F0F_0F0F_0F0F_0F0F) &* 2561) >> 8
            v = ((v & 0x00FF_00FF_00FF_00FF) &* 6_553_601) >> 16
            v = ((v & 0x0000_FFFF_0000_FFFF) &* 42_949_672_960_001) >> 32
            value = value &* 100_000_000 &+ Int64(v)
            i += 8
        }
        while i < n, p[i] >= 0x30, p[i] <= 0x39 {
            value = value &* 10 &+ Int64(p[i] &- 0x30)
            i += 1
        }
        if i - start <= 18 {
            // Up to 18 digits cannot overflow.
            if negative { value = -value }
        } else {
            value = 0
            for k in start ..< i {
                let d = Int64(p[k] - 0x30)
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (v, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
                if o1 || o2 { return nil }
                value = v
            }
        }
        if i < n, p[i] == UInt8(ascii: ".") || p[i] | 0x20 == UInt8(ascii: "e") { return nil }
        return .some(value)
    }

    @inline(__always) mutating func optionalBool() -> Bool?? {
        if null() { return .some(nil) }
        if n - i >= 4, p[i] == UInt8(ascii: "t"), p[i + 1] == UInt8(ascii: "r"), p[i + 2] == UInt8(ascii: "u"),
           p[i + 3] == UInt8(ascii: "e") {
            i += 4
            return .some(true)
        }
        if n - i >= 5, p[i] == UInt8(ascii: "f"), p[i + 1] == UInt8(ascii: "a"), p[i + 2] == UInt8(ascii: "l"),
           p[i + 3] == UInt8(ascii: "s"), p[i + 4] == UInt8(ascii: "e") {
            i += 5
            return .some(false)
        }
        return nil
    }

    @inline(__always) func keyIs(_ r: Range<Int>, _ name: StaticString) -> Bool {
        r.count == name.utf8CodeUnitCount && memcmp(p + r.lowerBound, name.utf8Start, r.count) == 0
    }

    /// `:` between a key and its value, with the spaces around it.
    @inline(__always) mutating func colon() -> Bool {
        skipSpace()
        guard i < n, p[i] == UInt8(ascii: ":") else { return false }
        i += 1
        skipSpace()
        return true
    }
}
