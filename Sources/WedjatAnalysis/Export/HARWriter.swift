#if canImport(Glibc)
import Glibc
#endif

/// JSONBytes' pretty layout, written straight into one growing buffer: the HAR entries' writer
/// (about 45 members an entry, 200,000 entries on the 200 MB bench log). The same bytes as
/// JSONBytes with the same indent and level (ExportTests checks it); what differs is the cost:
/// no Array append or uniqueness check per byte run, and which containers have a member yet is
/// a bit mask, not an array of flags. A class: one per rendering thread, never copied.
final class HARWriter {
    private var out: GrowingBuffer<UInt8>
    var count: Int { out.count }
    private let indent: Int
    private let baseLevel: Int
    /// Open containers, and bit i set when the container at depth i has no member yet.
    private var depth = 0
    private var firstMask: UInt64 = 0
    private var pendingValue = false

    init(capacity: Int = 1 << 16, indent: Int = 2, level: Int = 3) {
        out = GrowingBuffer(capacity: max(64, capacity))
        self.indent = indent
        baseLevel = level
    }

    deinit { out.base.deallocate() }

    /// The bytes written since the last `take`, handed over; the writer starts again empty.
    func take() -> [UInt8] { out.take() }

    @inline(__always) private func reserve(_ n: Int) { out.reserve(n) }
    @inline(__always) private func put(_ b: UInt8) { out.put(b) }
    @inline(__always) private func put(_ p: UnsafeRawPointer, _ n: Int) { out.put(p, n) }

    @inline(__always) private func put(_ s: StaticString) { put(UnsafeRawPointer(s.utf8Start), s.utf8CodeUnitCount) }

    @inline(__always) private func newline(_ level: Int) {
        let n = min(indent * level, 256)
        reserve(n + 1)
        out.base[out.count] = 0x0A
        (out.base + out.count + 1).update(repeating: 0x20, count: n)
        out.count += n + 1
    }

    @inline(__always) private func separate() {
        guard depth > 0 else { return }
        let bit: UInt64 = 1 << UInt64(depth - 1)
        if firstMask & bit == 0 { put(UInt8(ascii: ",")) } else { firstMask &= ~bit }
        if indent > 0 { newline(baseLevel + depth) }
    }

    @inline(__always) private func valueStart() {
        if pendingValue { pendingValue = false } else { separate() }
    }

    @inline(__always) private func push() {
        precondition(depth < 64, "HARWriter: nested deeper than 64")
        firstMask |= 1 << UInt64(depth)
        depth += 1
    }

    @inline(__always) private func closing() {
        depth -= 1
        let bit: UInt64 = 1 << UInt64(depth)
        let empty = firstMask & bit != 0
        firstMask &= ~bit
        if indent > 0, !empty { newline(baseLevel + depth) }
    }

    func openObject() { valueStart(); put(UInt8(ascii: "{")); push() }
    func closeObject() { closing(); put(UInt8(ascii: "}")) }
    func openArray() { valueStart(); put(UInt8(ascii: "[")); push() }
    func closeArray() { closing(); put(UInt8(ascii: "]")) }

    func key(_ k: StaticString) {
        separate()
        put(UInt8(ascii: "\""))
        put(k)
        put(UInt8(ascii: "\""))
        put(UInt8(ascii: ":"))
        if indent > 0 { put(0x20) }
        pendingValue = true
    }

    func string(_ s: String) { valueStart(); rawString(s) }

    /// `s` without its first `count` bytes (a prefix of ASCII), as a JSON string.
    func string(_ s: String, droppingFirst count: Int) { valueStart(); rawString(s, droppingFirst: count) }

    func string(_ s: Substring) { valueStart(); rawString(s) }

    func int(_ v: Int64) { valueStart(); writeInt(v) }

    func bool(_ v: Bool) { valueStart(); if v { put("true") } else { put("false") } }

    /// `"<a><separator><b>"`: two integers as one string (`4242-17`), with no String made.
    func string(_ a: Int64, _ separator: UInt8, _ b: Int64) { valueStart(); rawString(a, separator, b) }

    /// As JSONBytes.fixed.
    func fixed(_ units: Int64, _ decimals: Int) { valueStart(); rawFixed(units, decimals) }

    /// `2025-11-22T03:35:10.202200Z` (ExportTime.iso8601, as a JSON string) with no String made:
    /// the date and time of day come from `gmtime_r` once per second, kept in `cache`.
    func iso8601(_ us: Int64, cache: inout ISO8601Cache) { valueStart(); rawISO8601(us, cache: &cache) }

    /// `"<a>://<b><c>"`: a URL from its parts, as one string, with no String made.
    func url(_ scheme: String, _ authority: String, _ target: String) { valueStart(); rawURL(scheme, authority, target) }

    // The values alone, and literal bytes: for a layout written as a template (HARExport's
    // entries), which leaves the writer's own layout state as it found it.

    /// Bytes as they are (a template's keys, punctuation and indents).
    @inline(__always) func raw(_ s: StaticString) { put(s) }

    func rawInt(_ v: Int64) { writeInt(v) }

    func rawFixed(_ units: Int64, _ decimals: Int) { out.fixed(units, decimals) }

    func rawString(_ s: String) {
        // In place (a copy to call `withUTF8` on costs a retain and a release of a string that
        // other threads' records share).
        if s.utf8.withContiguousStorageIfAvailable({ escaped($0) }) == nil {
            var s = s
            s.withUTF8 { escaped($0) }
        }
    }

    func rawString(_ s: String, droppingFirst count: Int) {
        if s.utf8.withContiguousStorageIfAvailable({ escaped(UnsafeBufferPointer(rebasing: $0[count...])) }) == nil {
            var s = s
            s.withUTF8 { escaped(UnsafeBufferPointer(rebasing: $0[count...])) }
        }
    }

    func rawString(_ s: Substring) {
        var s = s
        s.withUTF8 { escaped($0) }
    }

    func rawString(_ a: Int64, _ separator: UInt8, _ b: Int64) {
        put(UInt8(ascii: "\""))
        writeInt(a)
        put(separator)
        writeInt(b)
        put(UInt8(ascii: "\""))
    }

    func rawISO8601(_ us: Int64, cache: inout ISO8601Cache) {
        let seconds = ISO8601Cache.floorDiv(us, 1_000_000)
        if seconds != cache.second || cache.prefix.isEmpty {
            cache.second = seconds
            let text = ExportTime.iso8601(seconds * 1_000_000)
            cache.prefix = Array(text.utf8.prefix(while: { $0 != UInt8(ascii: ".") })) + [UInt8(ascii: ".")]
        }
        reserve(cache.prefix.count + 9)
        put(UInt8(ascii: "\""))
        cache.prefix.withUnsafeBytes { put($0.baseAddress!, $0.count) }
        var micros = Int(us - seconds * 1_000_000)
        for i in stride(from: 5, through: 0, by: -1) { out.base[out.count + i] = UInt8(micros % 10) + 0x30; micros /= 10 }
        out.count += 6
        put(UInt8(ascii: "Z"))
        put(UInt8(ascii: "\""))
    }

    @inline(__always) private func writeInt(_ v: Int64) { out.decimal(v) }

    func rawURL(_ scheme: String, _ authority: String, _ target: String) {
        put(UInt8(ascii: "\""))
        var (a, b, c) = (scheme, authority, target)
        a.withUTF8 { escapedBody($0) }
        put("://")
        b.withUTF8 { escapedBody($0) }
        c.withUTF8 { escapedBody($0) }
        put(UInt8(ascii: "\""))
    }

    /// A JSON string of these bytes, escaped as JSONBytes escapes.
    private func escaped(_ u: UnsafeBufferPointer<UInt8>) {
        put(UInt8(ascii: "\""))
        escapedBody(u)
        put(UInt8(ascii: "\""))
    }

    private func escapedBody(_ u: UnsafeBufferPointer<UInt8>) { out.escapedJSON(u) }
}

/// The last second `HARWriter.iso8601` formatted (one per writer: not shared between threads).
struct ISO8601Cache {
    var second: Int64 = .min
    var prefix: [UInt8] = []
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
