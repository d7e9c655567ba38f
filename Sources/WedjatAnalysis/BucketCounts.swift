/// HdrHistogram's bucketing (lowest discernible value 1, 2 or 3 significant digits), for
/// `DurationStats`: the same buckets, the same value reported for each (its highest
/// equivalent value), so the same percentiles as the library's `Histogram` gave; but counts we
/// can read, so a percentile walk is a running sum over an array instead of the library's
/// iterator (which computes each bucket's value and range, and was a twentieth of the report's
/// time), and a record is an index and an add.
struct BucketLayout: Sendable, Equatable {
    /// log2 of half the sub-buckets of a bucket: 10 for 3 digits (2048 sub-buckets, values exact
    /// below 2048), 7 for 2 digits (256 sub-buckets).
    let halfMagnitude: Int

    static let threeDigits = BucketLayout(halfMagnitude: 10)
    static let twoDigits = BucketLayout(halfMagnitude: 7)

    private var halfCount: Int { 1 << halfMagnitude }
    private var subBucketMask: UInt64 { UInt64(2 << halfMagnitude) - 1 }
    /// 64 minus the bits of the largest value of bucket 0.
    private var leadingZeroCountBase: Int { 64 - (halfMagnitude + 1) }

    @inline(__always)
    func bucketIndex(_ value: UInt64) -> Int {
        leadingZeroCountBase - (value | subBucketMask).leadingZeroBitCount
    }

    /// The index of `value`'s count (HdrHistogram's `countsIndexForValue`).
    @inline(__always)
    func index(_ value: UInt64) -> Int {
        let bucket = bucketIndex(value)
        let subBucket = Int(truncatingIfNeeded: value >> UInt64(bucket))
        return ((bucket + 1) << halfMagnitude) + (subBucket - halfCount)
    }

    /// Counts needed for the values up to `value` (the library's length for a histogram
    /// resized to cover it).
    func length(covering value: UInt64) -> Int {
        var smallestUntrackable = UInt64(2 << halfMagnitude)
        var buckets = 1
        while smallestUntrackable <= value {
            if smallestUntrackable > UInt64.max / 2 { buckets += 1; break }
            smallestUntrackable <<= 1
            buckets += 1
        }
        return (buckets + 1) * halfCount
    }

    /// The lowest value counted at `index` (`valueFromIndex`).
    func lowestValue(atIndex index: Int) -> UInt64 {
        var bucket = (index >> halfMagnitude) - 1
        var subBucket = (index & (halfCount - 1)) + halfCount
        if bucket < 0 {
            subBucket -= halfCount
            bucket = 0
        }
        return UInt64(subBucket) << UInt64(bucket)
    }

    /// The value the library reports for the bucket at `index`: its highest equivalent value.
    func reportedValue(atIndex index: Int) -> UInt64 { highestEquivalent(lowestValue(atIndex: index)) }

    func lowestEquivalent(_ value: UInt64) -> UInt64 {
        let bucket = bucketIndex(value)
        return (value >> UInt64(bucket)) << UInt64(bucket)
    }

    func highestEquivalent(_ value: UInt64) -> UInt64 {
        let bucket = bucketIndex(value)
        let subBucket = value >> UInt64(bucket)
        // `sizeOfEquivalentRangeFor`: a sub-bucket past the bucket's end belongs to the next one.
        let size = UInt64(1) << UInt64(subBucket >= UInt64(2 << halfMagnitude) ? bucket + 1 : bucket)
        return lowestEquivalent(value) + size - 1
    }
}

/// The counts of one distribution on a `BucketLayout`, in `Count`-sized integers (32 bits: half
/// the memory; the caller moves to 64 before a total would pass UInt32.max). Grows to cover
/// the largest value recorded.
struct BucketCounts<Count: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
    let layout: BucketLayout
    private(set) var counts: [Count]
    private(set) var total: UInt64 = 0

    /// Sized for values up to `highest` (more grow it).
    init(layout: BucketLayout, highest: UInt64) {
        self.layout = layout
        counts = [Count](repeating: 0, count: layout.length(covering: highest))
    }

    /// The same counts in another integer size (each must fit).
    init<Other>(_ other: BucketCounts<Other>) {
        layout = other.layout
        counts = other.counts.map { Count($0) }
        total = other.total
    }

    /// `count` must fit `Count` and keep the total within it (the caller checks).
    @inline(__always)
    mutating func record(_ value: UInt64, count: Count) {
        let i = layout.index(value)
        if i >= counts.count { grow(covering: value) }
        counts.withUnsafeMutableBufferPointer { $0[i] &+= count }
        total &+= UInt64(count)
    }

    private mutating func grow(covering value: UInt64) {
        counts.append(contentsOf: repeatElement(0, count: layout.length(covering: value) - counts.count))
    }

    /// Calls `body(index, count up to and including it)` for each non-empty bucket in
    /// ascending order until it returns false, from `start` (every count below it is 0).
    func walk(from start: Int = 0, _ body: (Int, UInt64) -> Bool) {
        counts.withUnsafeBufferPointer { c in
            var upTo: UInt64 = 0
            for i in Swift.max(0, start) ..< c.count where c[i] != 0 {
                upTo &+= UInt64(c[i])
                if !body(i, upTo) { return }
                if upTo >= total { return }
            }
        }
    }
}
