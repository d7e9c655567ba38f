#if canImport(Glibc)
import Glibc
#endif

/// The HAR entries' writer: values (escaped strings, integers, fixed-point numbers, timestamps,
/// URLs from their parts) and literal runs, straight into one growing buffer. The layout is the
/// entry template's (HARExport.writeEntry): keys, punctuation and indents are literals there,
/// which makes the bytes JSONBytes' pretty layout would make (`HARTemplateTests` holds the two
/// side by side). A class: one per rendering batch, never copied.
final class HARWriter {
    private var out: GrowingBuffer<UInt8>
    var count: Int { out.count }

    init(capacity: Int = 1 << 16) {
        out = GrowingBuffer(capacity: max(64, capacity))
    }

    deinit { out.base.deallocate() }

    /// The bytes written since the last `take`, handed over; the writer starts again empty.
    func take() -> [UInt8] { out.take() }

    @inline(__always) private func put(_ b: UInt8) { out.put(b) }
    @inline(__always) private func put(_ p: UnsafeRawPointer, _ n: Int) { out.put(p, n) }

    /// Bytes as they are (the template's keys, punctuation and indents).
    @inline(__always) func literal(_ s: StaticString) { put(UnsafeRawPointer(s.utf8Start), s.utf8CodeUnitCount) }

    func int(_ v: Int64) { out.decimal(v) }

    /// As JSONBytes.fixed.
    func fixed(_ units: Int64, _ decimals: Int) { out.fixed(units, decimals) }

    /// A JSON string.
    func string(_ s: String) {
        // In place (a copy to call `withUTF8` on costs a retain and a release of a string that
        // other threads' records share).
        if s.utf8.withContiguousStorageIfAvailable({ escaped($0) }) == nil {
            var s = s
            s.withUTF8 { escaped($0) }
        }
    }

    /// `s` without its first `count` bytes (a prefix of ASCII), as a JSON string.
    func string(_ s: String, droppingFirst count: Int) {
        if s.utf8.withContiguousStorageIfAvailable({ escaped(UnsafeBufferPointer(rebasing: $0[count...])) }) == nil {
            var s = s
            s.withUTF8 { escaped(UnsafeBufferPointer(rebasing: $0[count...])) }
        }
    }

    /// `"<a><separator><b>"`: two integers as one string (`4242-17`), with no String made.
    func string(_ a: Int64, _ separator: UInt8, _ b: Int64) {
        put(UInt8(ascii: "\""))
        out.decimal(a)
        put(separator)
        out.decimal(b)
        put(UInt8(ascii: "\""))
    }

    /// `2025-11-22T03:35:10.202200Z` (ExportTime.iso8601, as a JSON string) with no String made:
    /// the date and time of day come from `gmtime_r` once per second, kept in `cache`.
    func iso8601(_ us: Int64, cache: inout ISO8601Cache) {
        let seconds = ISO8601Cache.floorDiv(us, 1_000_000)
        if seconds != cache.second || cache.prefix.isEmpty {
            cache.second = seconds
            let text = ExportTime.iso8601(seconds * 1_000_000)
            cache.prefix = Array(text.utf8.prefix(while: { $0 != UInt8(ascii: ".") })) + [UInt8(ascii: ".")]
        }
        out.reserve(cache.prefix.count + 9)
        put(UInt8(ascii: "\""))
        cache.prefix.withUnsafeBytes { put($0.baseAddress!, $0.count) }
        var micros = Int(us - seconds * 1_000_000)
        for i in stride(from: 5, through: 0, by: -1) { out.base[out.count + i] = UInt8(micros % 10) + 0x30; micros /= 10 }
        out.count += 6
        put(UInt8(ascii: "Z"))
        put(UInt8(ascii: "\""))
    }

    /// `"<a>://<b><c>"`: a URL from its parts, as one string, with no String made.
    func url(_ scheme: String, _ authority: String, _ target: String) {
        put(UInt8(ascii: "\""))
        var (a, b, c) = (scheme, authority, target)
        a.withUTF8 { out.escapedJSON($0) }
        literal("://")
        b.withUTF8 { out.escapedJSON($0) }
        c.withUTF8 { out.escapedJSON($0) }
        put(UInt8(ascii: "\""))
    }

    /// A JSON string of these bytes, escaped as JSONBytes escapes.
    private func escaped(_ u: UnsafeBufferPointer<UInt8>) {
        put(UInt8(ascii: "\""))
        out.escapedJSON(u)
        put(UInt8(ascii: "\""))
    }
}

/// The last second `HARWriter.iso8601` formatted (one per writer: not shared between threads).
struct ISO8601Cache {
    var second: Int64 = .min
    var prefix: [UInt8] = []
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
