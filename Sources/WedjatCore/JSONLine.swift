// Builds NDJSON records into a reusable byte buffer. No Foundation: this runs inside the
// watched process, once per record on wedjat's thread, so it is written for speed: one raw
// buffer grown by doubling (no per-byte Array bookkeeping), keys copied whole from static
// strings, strings copied whole unless a byte needs escaping, numbers two digits at a time.

public final class JSONLine {
    private var buf: UnsafeMutablePointer<UInt8>
    private var cap: Int
    public private(set) var count = 0
    private var needsComma = false

    public init(capacity: Int = 1024) {
        cap = max(capacity, 64)
        buf = .allocate(capacity: cap)
    }

    deinit { buf.deallocate() }

    /// The bytes written so far (a copy: for tests and tools).
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: buf, count: count)) }

    /// The bytes written so far, in place.
    public func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: buf, count: count))
    }

    public func reset() {
        count = 0
        needsComma = false
    }

    /// Forgets everything after `mark` (a `count` read earlier).
    public func truncate(to mark: Int) {
        count = min(count, max(0, mark))
    }

    @inline(__always) private func reserve(_ n: Int) {
        if count + n > cap { grow(count + n) }
    }

    private func grow(_ need: Int) {
        var c = cap * 2
        while c < need { c *= 2 }
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        fresh.assignBits(from: buf, count: count)
        buf.deallocate()
        buf = fresh
        cap = c
    }

    @inline(__always) private func put(_ b: UInt8) {
        reserve(1)
        buf[count] = b
        count += 1
    }

    @inline(__always) private func put(_ p: UnsafePointer<UInt8>, _ n: Int) {
        reserve(n)
        UnsafeMutableRawPointer(buf + count).copyShort(from: p, count: n)
        count += n
    }

    public func beginObject() { separator(); put(UInt8(ascii: "{")); needsComma = false }
    public func endObject() { put(UInt8(ascii: "}")); needsComma = true }
    public func beginArray() { separator(); put(UInt8(ascii: "[")); needsComma = false }
    public func endArray() { put(UInt8(ascii: "]")); needsComma = true }
    public func endLine() { put(UInt8(ascii: "\n")); needsComma = false }

    @inline(__always) private func separator() {
        if needsComma { put(UInt8(ascii: ",")) }
    }

    public func key(_ k: StaticString) {
        let n = k.utf8CodeUnitCount
        reserve(n + 4)
        var w = buf + count
        if needsComma { w.pointee = UInt8(ascii: ","); w += 1 }
        w.pointee = UInt8(ascii: "\"")
        UnsafeMutableRawPointer(w + 1).copyShort(from: k.utf8Start, count: n)   // keys are short
        w[1 + n] = UInt8(ascii: "\"")
        w[2 + n] = UInt8(ascii: ":")
        count = (w + 3 + n) - buf
        needsComma = false
    }

    public func key(dynamic k: String) {
        separator()
        appendQuoted(k)
        put(UInt8(ascii: ":"))
        needsComma = false
    }

    public func value(_ v: Int) { separator(); appendDecimal(v); needsComma = true }
    public func value(_ v: UInt64) {
        separator()
        appendDecimal(v > UInt64(Int.max) ? Int.max : Int(v))
        needsComma = true
    }
    public func value(_ v: Bool) {
        separator()
        let s: StaticString = v ? "true" : "false"
        put(s.utf8Start, s.utf8CodeUnitCount)
        needsComma = true
    }
    public func value(_ v: String) { separator(); appendQuoted(v); needsComma = true }
    public func null() {
        separator()
        let s: StaticString = "null"
        put(s.utf8Start, s.utf8CodeUnitCount)
        needsComma = true
    }
    public func value(_ v: String?) { if let v { value(v) } else { null() } }
    public func value(_ v: Int?) { if let v { value(v) } else { null() } }

    public func field(_ k: StaticString, _ v: Int) { key(k); value(v) }
    public func field(_ k: StaticString, _ v: UInt64) { key(k); value(v) }
    public func field(_ k: StaticString, _ v: Bool) { key(k); value(v) }
    public func field(_ k: StaticString, _ v: String) { key(k); value(v) }
    public func field(_ k: StaticString, _ v: String?) { key(k); value(v) }
    public func field(_ k: StaticString, _ v: Int?) { key(k); value(v) }
    /// A value that is already JSON (a static string).
    public func field(_ k: StaticString, raw: StaticString) {
        key(k)
        put(raw.utf8Start, raw.utf8CodeUnitCount)
        needsComma = true
    }

    private static let pairs: StaticString =
        "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849505152535455565758596061626364656667686970717273747576777879808182838485868788899091929394959697989900"

    private func appendDecimal(_ v: Int) {
        reserve(21)
        var n: UInt64
        if v < 0 {
            buf[count] = UInt8(ascii: "-")
            count += 1
            n = UInt64(bitPattern: Int64(v)).magnitudeOfNegative
        } else {
            n = UInt64(v)
        }
        // The digit count first, then the digits from the end, two at a time, in place.
        var digits = 1
        var t = n
        while t >= 10_000 { t /= 10_000; digits += 4 }   // timestamps have 16 digits
        while t >= 10 { t /= 10; digits += 1 }
        var w = buf + count + digits
        let table = JSONLine.pairs.utf8Start
        while n >= 10_000 {   // four digits a division
            let r = Int(n % 10_000)
            n /= 10_000
            let hi = r / 100, lo = r % 100
            w -= 4
            w[0] = table[2 * hi]
            w[1] = table[2 * hi + 1]
            w[2] = table[2 * lo]
            w[3] = table[2 * lo + 1]
        }
        while n >= 100 {
            let r = Int(n % 100)
            n /= 100
            w -= 2
            w[0] = table[2 * r]
            w[1] = table[2 * r + 1]
        }
        if n >= 10 {
            w -= 2
            w[0] = table[2 * Int(n)]
            w[1] = table[2 * Int(n) + 1]
        } else {
            w -= 1
            w[0] = UInt8(ascii: "0") &+ UInt8(n)
        }
        count += digits
    }

    // Bytes that JSON strings must escape: control characters, '"', '\\', and DEL.
    @inline(__always) private static func needsEscape(_ b: UInt8) -> Bool {
        b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F
    }

    private static let hex: StaticString = "0123456789abcdef"

    // JSON string escaping; invalid UTF-8 was already repaired by String's decoding. Eight
    // bytes at a time are checked for one that needs an escape (none, nearly always: then the
    // string is copied whole).
    private func appendQuoted(_ s: String) {
        var s = s
        s.withUTF8 { u in
            let n = u.count
            reserve(n + 2)
            buf[count] = UInt8(ascii: "\"")
            count += 1
            guard let base = u.baseAddress, n > 0 else { return }
            var i = 0
            while i + 8 <= n {
                let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                if JSONLine.anyNeedsEscape(w) { break }
                i += 8
            }
            if i + 8 > n {
                // The last bytes (fewer than 8) in one word too: the last 8 of the string
                // (overlapping the words before), or, in a shorter one, its bytes over a word
                // of 'a's.
                var tail: UInt64 = 0x6161_6161_6161_6161
                if n >= 8 {
                    tail = UnsafeRawPointer(base + n - 8).loadUnaligned(as: UInt64.self)
                } else {
                    withUnsafeMutableBytes(of: &tail) { $0.baseAddress!.copyShort(from: base, count: n) }
                }
                if !JSONLine.anyNeedsEscape(tail) { i = n }
            }
            while i < n, !JSONLine.needsEscape(base[i]) { i += 1 }
            if i == n {
                UnsafeMutableRawPointer(buf + count).copyShort(from: base, count: n)
                count += n
                return
            }
            appendEscaped(base, n, from: i)
        }
        put(UInt8(ascii: "\""))
    }

    // Some byte of the word is < 0x20, '"', '\\' or 0x7F (bytes >= 0x80 never are).
    @inline(__always) private static func anyNeedsEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func zeroByte(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        let control = (w &- 0x2020_2020_2020_2020) & ~w & highs
        return (control | zeroByte(w ^ 0x2222_2222_2222_2222) | zeroByte(w ^ 0x5C5C_5C5C_5C5C_5C5C)
                | zeroByte(w ^ 0x7F7F_7F7F_7F7F_7F7F)) != 0
    }

    private func appendEscaped(_ base: UnsafePointer<UInt8>, _ n: Int, from first: Int) {
        put(base, first)
        var start = first, i = first
        while i < n {
            let b = base[i]
            if !JSONLine.needsEscape(b) { i += 1; continue }
            if i > start { put(base + start, i - start) }
            switch b {
            case 0x22: put(UInt8(ascii: "\\")); put(b)
            case 0x5C: put(UInt8(ascii: "\\")); put(b)
            case 0x0A: put(UInt8(ascii: "\\")); put(UInt8(ascii: "n"))
            case 0x0D: put(UInt8(ascii: "\\")); put(UInt8(ascii: "r"))
            case 0x09: put(UInt8(ascii: "\\")); put(UInt8(ascii: "t"))
            default:
                let h = JSONLine.hex.utf8Start
                reserve(6)
                for c in [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                          h[Int(b >> 4)], h[Int(b & 0xF)]] { buf[count] = c; count += 1 }
            }
            i += 1
            start = i
        }
        if n > start { put(base + start, n - start) }
    }
}

private extension UInt64 {
    /// |v| for a negative Int64 reinterpreted as UInt64 (Int.min included).
    var magnitudeOfNegative: UInt64 { ~self &+ 1 }
}
