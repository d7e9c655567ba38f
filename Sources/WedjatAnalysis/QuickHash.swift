/// A quick hash of a few strings, for the keys the applying thread looks up once per record
/// (`HTTPKey`, the endpoints' raw keys): `String.hash(into:)` feeds every string's bytes through
/// SipHash one call at a time, about 150 instructions a string and a finalization per key,
/// which was a tenth of that thread's work on a log of many hosts. Here each string's bytes are
/// mixed eight at a time with a multiply and a shift, and the key gives `Hasher` one word: the
/// Dictionary still seeds and finalizes it as usual. Not a defence against crafted collisions
/// (a log is the user's own data; the worst a crafted one can do is slow a lookup).
struct QuickHash {
    private(set) var value: UInt64 = 0x243F_6A88_85A3_08D3

    private static let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15

    @inline(__always)
    private mutating func mix(_ word: UInt64) {
        value = (value ^ word) &* Self.multiplier
        value ^= value >> 29
    }

    @inline(__always)
    mutating func add(_ s: String) {
        if s.utf8.withContiguousStorageIfAvailable({ add(bytes: UnsafeRawBufferPointer($0)) }) != nil { return }
        // A string without contiguous UTF-8 (none on Linux but a bridged one): the same bytes.
        Array(s.utf8).withUnsafeBytes { add(bytes: $0) }
    }

    /// nil mixes a word of its own.
    @inline(__always)
    mutating func add(_ s: String?) {
        if let s { add(s) } else { mix(0x8000_0000_0000_0000) }
    }

    private mutating func add(bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        var i = 0
        while i + 8 <= n {
            mix(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < n {
            tail |= UInt64(bytes[i]) << shift
            shift += 8
            i += 1
        }
        // The length keeps "ab" + "c" apart from "a" + "bc".
        mix(tail ^ (UInt64(n) << 56))
    }
}
