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
