/// Elements in one allocation that doubles when full, for the reader's hot loops (a line's
/// parse nodes, a block's decoded lines) and the export writers' bytes (HARWriter,
/// OTLPSpanWriter): no uniqueness check or bounds check per append, as an Array has. The owner
/// deinitializes and deallocates `base` when done.
struct GrowingBuffer<Element> {
    var base: UnsafeMutablePointer<Element>
    var count = 0
    var capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
        base = .allocate(capacity: self.capacity)
    }

    /// The elements deinitialized and the memory given back: the owner's last use.
    func release() {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// The index of the new element.
    @inline(__always) @discardableResult
    mutating func append(_ element: Element) -> Int {
        if count == capacity { grow(toHold: count + 1) }
        (base + count).initialize(to: element)
        count += 1
        return count - 1
    }

    /// Room for `n` more elements.
    @inline(__always) mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(toHold: count + n) }
    }

    mutating func grow(toHold needed: Int) {
        var c = capacity
        while c < needed { c *= 2 }
        let bigger = UnsafeMutablePointer<Element>.allocate(capacity: c)
        bigger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = bigger
        capacity = c
    }
}

extension GrowingBuffer where Element == UInt8 {
    @inline(__always) mutating func put(_ b: UInt8) {
        reserve(1)
        base[count] = b
        count += 1
    }

    @inline(__always) mutating func put(_ p: UnsafeRawPointer, _ n: Int) {
        reserve(n)
        (base + count).update(from: p.assumingMemoryBound(to: UInt8.self), count: n)
        count += n
    }

    /// The bytes written so far, as an Array.
    var bytes: [UInt8] { [UInt8](UnsafeBufferPointer(start: base, count: count)) }

    /// The bytes written so far, handed over; empty again, keeping its room.
    mutating func take() -> [UInt8] {
        let out = bytes
        count = 0
        return out
    }
}
