/// Elements in one allocation that doubles when full, for the reader's hot loops (a line's
/// parse nodes, a block's decoded lines): no uniqueness check or bounds check per append, as
/// an Array has. The owner deinitializes and deallocates `base` when done.
struct GrowingBuffer<Element> {
    var base: UnsafeMutablePointer<Element>
    var count = 0
    var capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
        base = .allocate(capacity: self.capacity)
    }

    /// The index of the new element.
    @inline(__always) @discardableResult
    mutating func append(_ element: Element) -> Int {
        if count == capacity {
            let bigger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            bigger.moveInitialize(from: base, count: count)
            base.deallocate()
            base = bigger
            capacity *= 2
        }
        (base + count).initialize(to: element)
        count += 1
        return count - 1
    }
}
