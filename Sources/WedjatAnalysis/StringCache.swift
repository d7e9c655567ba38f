import Foundation

/// The strings of a reading thread's lines, made once: a log repeats the same hosts, peers,
/// addresses and names on line after line, and a string over 15 bytes (a String's inline
/// size) costs an allocation where it is decoded and a free where the record ends, often on
/// another thread. A line's string whose bytes are those of the string last kept in its slot
/// (a hash of the bytes) is that string again; otherwise it is made and kept. Equal values
/// either way: only the allocations differ.
final class StringCache {
    private static let slots = 1024
    private let table: UnsafeMutablePointer<String?>

    init() {
        table = .allocate(capacity: Self.slots)
        table.initialize(repeating: nil, count: Self.slots)
    }

    deinit {
        table.deinitialize(count: Self.slots)
        table.deallocate()
    }

    /// `count` bytes of valid UTF-8 at `p`, as a String.
    @inline(__always)
    func string(_ p: UnsafePointer<UInt8>, _ count: Int) -> String {
        if count <= 15 { return String(decoding: UnsafeBufferPointer(start: p, count: count), as: UTF8.self) }
        return kept(p, count)
    }

    private func kept(_ p: UnsafePointer<UInt8>, _ count: Int) -> String {
        // Eight bytes at a time, the last eight (overlapping) for the tail: count > 15.
        let raw = UnsafeRawPointer(p)
        var h = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
        var i = 0
        while i + 8 <= count {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 29
            i += 8
        }
        h = (h ^ raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 32
        let slot = table + Int(truncatingIfNeeded: h & UInt64(Self.slots - 1))
        if let s = slot.pointee, s.utf8.count == count,
           s.utf8.withContiguousStorageIfAvailable({ memcmp($0.baseAddress!, p, count) == 0 }) == true {
            return s
        }
        let s = String(decoding: UnsafeBufferPointer(start: p, count: count), as: UTF8.self)
        slot.pointee = s
        return s
    }
}
