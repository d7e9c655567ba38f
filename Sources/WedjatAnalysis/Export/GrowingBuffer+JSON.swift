/// JSON values written into a byte buffer as JSONBytes writes them: what the export writers
/// (HARWriter, OTLPSpanWriter) share.
extension GrowingBuffer where Element == UInt8 {
    /// A decimal integer, two digits a division (an OTLP span has two 19-digit times): the digits from the right into a scratch area past the end, then
    /// moved to their place.
    @inline(__always) mutating func decimal(_ v: Int64) {
        reserve(42)
        if v < 0 { put(UInt8(ascii: "-")) }
        let buffer = base
        var m = v.magnitude
        let end = count + 41
        var i = end
        decimalDigitPairs.withUnsafeBufferPointer { pairs in
            while m >= 100 {
                let pair = Int(m % 100) * 2
                m /= 100
                i -= 2
                buffer[i] = pairs[pair]; buffer[i + 1] = pairs[pair + 1]
            }
            if m >= 10 {
                i -= 2
                buffer[i] = pairs[Int(m) * 2]; buffer[i + 1] = pairs[Int(m) * 2 + 1]
            } else {
                i -= 1
                buffer[i] = UInt8(m) + 0x30
            }
        }
        let n = end - i
        (buffer + count).update(from: buffer + i, count: n)
        count += n
    }

    /// `units / 10^decimals` exactly, trailing zeros trimmed (as ExportJSON.fixed).
    mutating func fixed(_ units: Int64, _ decimals: Int) {
        var scale: UInt64 = 1
        for _ in 0 ..< decimals { scale *= 10 }
        let m = units.magnitude
        if units < 0 { put(UInt8(ascii: "-")) }
        decimal(Int64(m / scale))
        var frac = m % scale
        guard frac > 0 else { return }
        var digits = decimals
        while frac % 10 == 0 { frac /= 10; digits -= 1 }
        put(UInt8(ascii: "."))
        var width = 1, f = frac
        while f >= 10 { f /= 10; width += 1 }
        for _ in 0 ..< digits - width { put(0x30) }
        decimal(Int64(frac))
    }

    /// Bytes escaped as JSONBytes escapes them, without quotes: a string written in pieces is
    /// the same text as the pieces joined (the escape is byte by byte).
    mutating func escapedJSON(_ u: UnsafeBufferPointer<UInt8>) {
        var clean = true
        for c in u where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { clean = false; break }
        if clean {
            if let p = u.baseAddress, u.count > 0 { put(UnsafeRawPointer(p), u.count) }
            return
        }
        let hex: StaticString = "0123456789abcdef"
        for c in u {
            switch c {
            case UInt8(ascii: "\""): put(UInt8(ascii: "\\")); put(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): put(UInt8(ascii: "\\")); put(UInt8(ascii: "\\"))
            case 0x0A: put(UInt8(ascii: "\\")); put(UInt8(ascii: "n"))
            case 0x0D: put(UInt8(ascii: "\\")); put(UInt8(ascii: "r"))
            case 0x09: put(UInt8(ascii: "\\")); put(UInt8(ascii: "t"))
            case 0 ..< 0x20:
                let esc: StaticString = "\\u00"
                put(UnsafeRawPointer(esc.utf8Start), esc.utf8CodeUnitCount)
                put(hex.utf8Start[Int(c >> 4)])
                put(hex.utf8Start[Int(c & 15)])
            default: put(c)
            }
        }
    }
}

/// "00" to "99", for GrowingBuffer.decimal.
let decimalDigitPairs: [UInt8] = {
    var pairs: [UInt8] = []
    for n in 0 ..< 100 { pairs.append(UInt8(0x30 + n / 10)); pairs.append(UInt8(0x30 + n % 10)) }
    return pairs
}()
