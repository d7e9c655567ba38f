extension UnsafeMutablePointer where Pointee: BitwiseCopyable {
    /// The `count` values at `source` copied over the ones here (the regions may overlap), as
    /// one memmove. The stdlib's `update(from:count:)` and `initialize(from:count:)` are one
    /// too, but not in the embedded agent (scripts/build-lib.sh): there `update` copies element
    /// by element through an outlined copy function, a call a byte (nginx TLS h2: about 400
    /// instructions more a request, in HPACK's remembered blocks and the JSON writer).
    @inline(__always)
    func assignBits(from source: UnsafePointer<Pointee>, count: Int) {
        UnsafeMutableRawPointer(self).copyMemory(from: source, byteCount: count &* MemoryLayout<Pointee>.stride)
    }
}

extension UnsafeMutableRawPointer {
    /// `n` bytes from `source` (not overlapping this), for the short runs a record is made of
    /// (keys, numbers, most values): up to 32 bytes as two to four overlapping 8-byte moves
    /// or two 4-byte ones, no call and no byte loop; longer ones as one memmove. Never reads
    /// or writes outside the `n` bytes.
    @inline(__always)
    func copyShort(from source: UnsafeRawPointer, count n: Int) {
        if n >= 8 {
            if n <= 16 {
                let a = source.loadUnaligned(as: UInt64.self)
                let b = source.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
                storeBytes(of: a, as: UInt64.self)
                storeBytes(of: b, toByteOffset: n &- 8, as: UInt64.self)
            } else if n <= 32 {
                let a = source.loadUnaligned(as: UInt64.self)
                let b = source.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                let c = source.loadUnaligned(fromByteOffset: n &- 16, as: UInt64.self)
                let d = source.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
                storeBytes(of: a, as: UInt64.self)
                storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
                storeBytes(of: c, toByteOffset: n &- 16, as: UInt64.self)
                storeBytes(of: d, toByteOffset: n &- 8, as: UInt64.self)
            } else {
                copyMemory(from: source, byteCount: n)
            }
        } else if n >= 4 {
            let a = source.loadUnaligned(as: UInt32.self)
            let b = source.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self)
            storeBytes(of: a, as: UInt32.self)
            storeBytes(of: b, toByteOffset: n &- 4, as: UInt32.self)
        } else {
            var i = 0
            while i < n { storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self); i &+= 1 }
        }
    }
}
