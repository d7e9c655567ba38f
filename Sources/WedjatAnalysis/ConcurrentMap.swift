import Dispatch

extension Array {
    /// `map` on every core: for the report's rows, each a few percentile walks over its
    /// histograms (the longest single step after reading). The order is `map`'s.
    func concurrentMap<T>(_ transform: (Element) -> T) -> [T] {
        guard count > 16, LogReader.defaultThreads > 1 else { return map(transform) }
        let out = UnsafeMutablePointer<T>.allocate(capacity: count)
        defer { out.deallocate() }
        withoutActuallyEscaping(transform) { transform in
            withUnsafeBufferPointer { input in
                // Chunks of rows rather than single ones: fewer hand-offs.
                let chunk = Swift.max(1, input.count / (LogReader.defaultThreads * 4))
                let chunks = (input.count + chunk - 1) / chunk
                DispatchQueue.concurrentPerform(iterations: chunks) { c in
                    for i in c * chunk ..< Swift.min(input.count, (c + 1) * chunk) {
                        (out + i).initialize(to: transform(input[i]))
                    }
                }
            }
        }
        return Array<T>(unsafeUninitializedCapacity: count) { buffer, n in
            buffer.baseAddress!.moveInitialize(from: out, count: count)
            n = count
        }
    }
}
