// HTTP exchanges past the per-second record budget are not written one by one: they are
// counted here, by (role, scheme, method, host, version, status, error), and written as
// `http_summary` records, so a server doing 40,000 requests a second keeps a bounded log and
// loses no count.
import CWedjatCommon

// Log-linear histogram of microseconds: 16 sub-buckets per power of two (about 6% error),
// fixed size, no allocation after creation.
public struct DurationHistogram {
    public internal(set) var counts = [UInt64](repeating: 0, count: 64 * 16)
    public internal(set) var total: UInt64 = 0
    public internal(set) var max: UInt64 = 0
    public init() {}

    static func index(_ v: UInt64) -> Int {
        if v < 16 { return Int(v) }
        let e = 63 - v.leadingZeroBitCount          // v in [2^e, 2^(e+1))
        let sub = Int((v >> UInt64(e - 4)) & 15)    // the 4 bits after the leading one
        return (e - 3) * 16 + sub
    }

    static func lowerBound(_ i: Int) -> UInt64 {
        if i < 16 { return UInt64(i) }
        let e = i / 16 + 3, sub = UInt64(i % 16)
        return (UInt64(1) << UInt64(e)) | (sub << UInt64(e - 4))
    }

    public mutating func record(_ us: UInt64) {
        counts[DurationHistogram.index(us)] += 1
        total += 1
        if us > max { max = us }
    }

    // The value at quantile q (0...1): the middle of the bucket holding it, never above max.
    public func quantile(_ q: Double) -> UInt64 {
        guard total > 0 else { return 0 }
        let rank = UInt64((Double(total) * q).rounded(.up))
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += c
            if seen >= Swift.max(rank, 1) {
                let lo = DurationHistogram.lowerBound(i), hi = DurationHistogram.lowerBound(i + 1)
                return Swift.min(max, lo + (hi - lo) / 2)
            }
        }
        return max
    }
}

/// Exact counts on fixed bounds, with the sum and the minimum: what an OpenTelemetry explicit-
/// bucket histogram holds, so that the exporter can add summarized exchanges to its histograms
/// (the log-linear histogram's quantiles cannot be split into buckets). The bounds are
/// OpenTelemetry's for `http.*.request.duration` (5 ms to 10 s), in microseconds; they travel
/// in the record, so a reader never has to assume them.
public struct BoundedCounts {
    public static let boundsUs: [UInt64] = [5_000, 10_000, 25_000, 50_000, 75_000, 100_000, 250_000, 500_000,
                                            750_000, 1_000_000, 2_500_000, 5_000_000, 7_500_000, 10_000_000]
    public internal(set) var counts = [UInt64](repeating: 0, count: BoundedCounts.boundsUs.count + 1)
    public internal(set) var sum: UInt64 = 0
    public internal(set) var min: UInt64 = .max
    public init() {}

    /// Bucket i holds (bound[i-1], bound[i]]: upper bounds inclusive, as OpenTelemetry says.
    public mutating func record(_ us: UInt64) {
        var i = 0
        while i < BoundedCounts.boundsUs.count, us > BoundedCounts.boundsUs[i] { i += 1 }
        counts[i] += 1
        sum &+= us
        if us < min { min = us }
    }
}

public struct HTTPSummaryKey: Hashable {
    public var role: String
    public var scheme: String
    public var method: String
    public var host: String?
    public var version: String
    public var status: Int?
    public var error: String?
}

public struct HTTPSummaryEntry {
    public var count: UInt64 = 0
    public var errors: UInt64 = 0          // exchanges with an error (incomplete, desync, parse)
    public var requestBytes: UInt64 = 0
    public var responseBytes: UInt64 = 0
    public var duration = DurationHistogram()
    public var durationBuckets = BoundedCounts()
    public var ttfb = DurationHistogram()
    public var firstMono: UInt64 = .max
    public var lastMono: UInt64 = 0

    /// One more exchange. Called in place (`summaries[key, default: ...].add(...)`): a copy
    /// taken out of the dictionary and stored back would copy both histograms (16 KiB) on
    /// every exchange, since the dictionary still shares their storage while it is modified.
    public mutating func add(failed: Bool, requestBytes: UInt64, responseBytes: UInt64,
                             durationUs: UInt64?, ttfbUs: UInt64?, endMono: UInt64) {
        count += 1
        if failed { errors += 1 }
        self.requestBytes += requestBytes
        self.responseBytes += responseBytes
        if let durationUs {
            duration.record(durationUs)
            durationBuckets.record(durationUs)
        }
        if let ttfbUs { ttfb.record(ttfbUs) }
        firstMono = Swift.min(firstMono, endMono)
        lastMono = Swift.max(lastMono, endMono)
    }
}

extension DurationHistogram {
    /// Adds counts taken elsewhere (the C side's histogram of the same buckets).
    public mutating func add(counts: UnsafeBufferPointer<UInt32>, max: UInt64) {
        for (i, c) in counts.enumerated() where c > 0 && i < self.counts.count {
            self.counts[i] += UInt64(c)
            total += UInt64(c)
        }
        if max > self.max { self.max = max }
    }
}

extension BoundedCounts {
    public mutating func add(counts: UnsafeBufferPointer<UInt64>, sum: UInt64, min: UInt64) {
        for (i, c) in counts.enumerated() where i < self.counts.count { self.counts[i] += c }
        self.sum &+= sum
        if min < self.min { self.min = min }
    }
}

extension HTTPSummaryEntry {
    /// What the C side counted for the same key (http_counts.c: whole exchanges, no error).
    public mutating func merge(_ c: wj_http_count, durationHist: UnsafeBufferPointer<UInt32>, ttfbHist: UnsafeBufferPointer<UInt32>) {
        var c = c
        count += c.count
        requestBytes += c.request_bytes
        responseBytes += c.response_bytes
        duration.add(counts: durationHist, max: c.duration_max)
        ttfb.add(counts: ttfbHist, max: c.ttfb_max)
        withUnsafeBytes(of: &c.duration_bounded) { raw in
            durationBuckets.add(counts: raw.bindMemory(to: UInt64.self), sum: c.duration_sum, min: c.duration_min)
        }
        firstMono = Swift.min(firstMono, c.first_mono)
        lastMono = Swift.max(lastMono, c.last_mono)
    }
}

// Token bucket: `perSecond` records a second, bursts up to `burst`.
public struct RecordBudget {
    public let perSecond: Double
    public let burst: Double
    private var tokens: Double
    private var lastMono: UInt64 = 0
    public init(perSecond: Int, burst: Int) {
        self.perSecond = Double(perSecond)
        self.burst = Double(Swift.max(burst, perSecond))
        tokens = self.burst
    }
    public mutating func take(mono: UInt64) -> Bool {
        if mono > lastMono {
            if lastMono != 0 { tokens = Swift.min(burst, tokens + Double(mono - lastMono) / 1e9 * perSecond) }
            lastMono = mono
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
