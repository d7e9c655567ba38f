import Histogram
import XCTest
@testable import WedjatAnalysis

final class StatsTests: XCTestCase {
    func testPercentilesOfOneToHundredAreExact() {
        var d = DurationStats()
        for v in (1 ... 100).reversed() { d.record(Int64(v)) }
        XCTAssertEqual(d.count, 100)
        XCTAssertEqual(d.percentile(50), 50)
        XCTAssertEqual(d.percentile(95), 95)
        XCTAssertEqual(d.percentile(99), 99)
        XCTAssertEqual(d.percentile(100), 100)
        XCTAssertEqual(d.max, 100)
    }

    func testPercentilesOfSkewedLatencies() {
        // 90 fast (1 ms), 9 slow (50 ms), 1 very slow (2 s).
        var d = DurationStats()
        for _ in 0 ..< 90 { d.record(1000) }
        for _ in 0 ..< 9 { d.record(50000) }
        d.record(2_000_000)
        XCTAssertEqual(d.percentile(50), 1000)
        // Above 2048 us the histogram keeps 3 significant digits.
        XCTAssertEqual(Double(d.percentile(95)!), 50000, accuracy: 50)
        XCTAssertEqual(Double(d.percentile(99)!), 50000, accuracy: 50)
        XCTAssertEqual(d.percentile(99.9), 2_000_000)
        XCTAssertEqual(d.max, 2_000_000)
    }

    /// A stat holding few values computes its percentiles without a histogram: they must be
    /// exactly the histogram's, whatever the values (0, exact below 2048, rounded above, past
    /// the histogram's initial range, repeated, summaries' weighted bands), and so must count
    /// and max; one value past the limit moves them into a histogram with nothing changed.
    func testFewValuesGiveTheHistogramsPercentiles() {
        var rng = SystemRandomNumberGenerator()
        let ps = [0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100]
        for round in 0 ..< 300 {
            var few = DurationStats(), all = DurationStats(smallLimit: 0)
            let n = Int.random(in: 1 ... DurationStats.smallLimit + 1, using: &rng)
            for _ in 0 ..< n {
                let v: Int64
                switch Int.random(in: 0 ..< 5, using: &rng) {
                case 0: v = Int64.random(in: 0 ... 3, using: &rng)
                case 1: v = Int64.random(in: 0 ... 2047, using: &rng)
                case 2: v = Int64.random(in: 2048 ... 300_000, using: &rng)
                case 3: v = Int64.random(in: 1 << 20 ... 1 << 34, using: &rng)
                default: v = [1000, 2049, 4097, 65_535][Int.random(in: 0 ..< 4, using: &rng)]
                }
                few.record(v)
                all.record(v)
            }
            if round % 3 == 0 {
                let s = SummaryDistribution(count: Int64.random(in: 1 ... 5000, using: &rng), p50: 180, p90: 4100, p99: 90_000, max: 2_000_001)
                few.record(summary: s)
                all.record(summary: s)
            }
            XCTAssertEqual(few.count, all.count, "round \(round)")
            XCTAssertEqual(few.max, all.max, "round \(round)")
            XCTAssertEqual(few.percentiles(ps), all.percentiles(ps), "round \(round): \(n) values")
        }
    }

    /// Histograms count in 32 bits until a stat's total would pass UInt32.max, then in 64:
    /// the move keeps every count, the exact smallest and largest values, and the percentiles
    /// the library's own 64-bit histogram gives for the same values.
    func testCountsPastUInt32MoveTo64BitsWithNothingLost() {
        var d = DurationStats(smallLimit: 0)
        var reference = Histogram<UInt64>(highestTrackableValue: 1 << 20, numberOfSignificantValueDigits: .three)
        reference.autoResize = true
        let values: [(UInt64, UInt64)] = [(0, 1), (150, 3_000_000_000), (2049, 1), (90_001, 7),
                                          (2049, 1_500_000_000), (5_000_003, 1), (77, UInt64(UInt32.max) + 5)]
        for (value, count) in values {
            d.record(value, count: count)
            _ = reference.record(value, count: count)
            XCTAssertEqual(UInt64(d.count), reference.totalCount)
            XCTAssertEqual(d.max, Int64(reference.maxRecorded))
            let ps = [0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100]
            XCTAssertEqual(d.percentiles(ps), ps.map { Int64(reference.valueAtPercentile($0)) }, "after \(value) × \(count)")
        }
        XCTAssertGreaterThan(d.count, Int(UInt32.max))
    }

    func testEmptyHasNoPercentiles() {
        let d = DurationStats()
        XCTAssertNil(d.percentile(50))
        XCTAssertNil(d.max)
    }

    func testPeerStatsCountsErrorsButKeepsThemOutOfLatency() {
        var p = PeerStats(key: PeerKey(role: "client", address: "127.0.0.1:8080"))
        for (i, d) in [10, 20, 30].enumerated() {
            p.add(ConnectionRecord(ts: Int64(i), pid: 1, role: "client", peer: "127.0.0.1:8080",
                                   durationUs: Int64(d), bytesIn: 100, bytesOut: 1))
        }
        p.add(ConnectionRecord(ts: 5, pid: 1, role: "client", peer: "127.0.0.1:8080", durationUs: 1, error: "ECONNREFUSED"))
        p.add(ConnectionRecord(ts: 6, pid: 1, role: "client", peer: "127.0.0.1:8080", durationUs: 1, error: "ETIMEDOUT"))
        p.add(ConnectionRecord(ts: 7, pid: 1, role: "client", peer: "127.0.0.1:8080", durationUs: 1, error: "ECONNREFUSED"))
        XCTAssertEqual(p.count, 6)
        XCTAssertEqual(p.bytesIn, 300)
        XCTAssertEqual(p.errors, 3)
        XCTAssertEqual(p.topErrors.map(\.name), ["ECONNREFUSED", "ETIMEDOUT"])
        XCTAssertEqual(p.topErrors.map(\.count), [2, 1])
        XCTAssertEqual(p.durations.count, 3)
        XCTAssertEqual(p.durations.percentile(50), 20)
        XCTAssertEqual(p.durations.percentile(99), 30)
    }

    func testPeerKeys() {
        let client = ConnectionRecord(ts: 0, pid: 1, role: "client", local: "127.0.0.1:5000", peer: "10.1.1.1:80")
        let server = ConnectionRecord(ts: 0, pid: 1, role: "server", local: "127.0.0.1:8080", peer: "127.0.0.1:5000")
        XCTAssertEqual(PeerKey(client).label, "client → 10.1.1.1:80")
        XCTAssertEqual(PeerKey(server).label, "server ← 127.0.0.1:8080")
    }

    func testDurationFallsBackToTimestamps() {
        let c = ConnectionRecord(ts: 0, pid: 1, role: "client", openTs: 1000, closeTs: 1750)
        XCTAssertEqual(c.effectiveDurationUs, 750)
    }

    func testFormatting() {
        XCTAssertEqual(Format.ms(23456), "23.456")
        XCTAssertEqual(Format.ms(5), "0.005")
        XCTAssertEqual(Format.bytes(1023), "1023 B")
        XCTAssertEqual(Format.bytes(1536), "1.5 KiB")
        XCTAssertEqual(Format.bytes(5 * 1024 * 1024), "5.0 MiB")
        XCTAssertEqual(Format.duration(850), "850 us")
        XCTAssertEqual(Format.duration(157_000), "157.000 ms")
        XCTAssertEqual(Format.duration(1_204_000), "1.204 s")
        XCTAssertEqual(Format.duration(123_400_000), "2m03.4s")
        XCTAssertEqual(Format.duration(3_723_000_000), "1h02m03s")
        XCTAssertEqual(Format.timestamp(1_763_782_510_123_456), "2025-11-22 03:35:10.123")
    }
}

/// DurationStats' own buckets (BucketCounts.swift) against the HdrHistogram library they replace.
final class BucketCountsTests: XCTestCase {
    private func values(_ rng: inout some RandomNumberGenerator) -> [UInt64] {
        var out: [UInt64] = [0, 1, 127, 128, 255, 256, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 4097, 1 << 20, (1 << 20) + 1,
                             1 << 40, (1 << 62) - 1, 1 << 62, UInt64(Int64.max)]
        for _ in 0 ..< 20000 {
            let bits = UInt64.random(in: 0 ... 63, using: &rng)
            out.append(UInt64.random(in: 0 ... (UInt64(1) << bits), using: &rng))
        }
        return out
    }

    func testLayoutIsTheLibrarys() {
        var rng = SystemRandomNumberGenerator()
        for (layout, digits) in [(BucketLayout.threeDigits, SignificantDigits.three), (BucketLayout.twoDigits, .two)] {
            let h = Histogram<UInt64>(highestTrackableValue: 1 << 20, numberOfSignificantValueDigits: digits)
            for v in values(&rng) {
                XCTAssertEqual(layout.lowestEquivalent(v), h.lowestEquivalentForValue(v), "\(v)")
                XCTAssertEqual(layout.highestEquivalent(v), h.highestEquivalentForValue(v), "\(v)")
                XCTAssertEqual(layout.reportedValue(atIndex: layout.index(v)), h.highestEquivalentForValue(v), "\(v)")
            }
        }
    }

    /// Values far past the initial range (the counts grow), in both layouts, and repeated ones:
    /// the library's percentiles, count and max.
    func testPercentilesAreTheLibrarys() {
        var rng = SystemRandomNumberGenerator()
        for round in 0 ..< 40 {
            let coarse = round % 2 == 1
            // 3 digits from the first value, or after the first 64 distinct ones; 2 digits.
            var d = coarse ? DurationStats(coarse: true) : round % 4 == 0 ? DurationStats(smallLimit: 0) : DurationStats()
            var h = Histogram<UInt64>(highestTrackableValue: 1 << 20, numberOfSignificantValueDigits: coarse ? .two : .three)
            h.autoResize = true
            for _ in 0 ..< (1 + round * 97) {
                let v = UInt64.random(in: 0 ... [300, 5000, 3_000_000, 1 << 45][round % 4], using: &rng)
                let n = UInt64.random(in: 1 ... 3, using: &rng)
                d.record(v, count: n)
                h.record(v, count: n)
            }
            let ps = [0.0, 0.1, 1, 25, 50, 90, 95, 99, 99.9, 99.99, 100]
            XCTAssertEqual(d.percentiles(ps), ps.map { Int64(h.valueAtPercentile($0)) }, "round \(round)")
            XCTAssertEqual(UInt64(d.count), h.totalCount)
            XCTAssertEqual(d.max, Int64(h.maxRecorded))
        }
    }
}
