import XCTest
import CWedjatCommon

final class RingTests: XCTestCase {
    private func makeRing(_ capacity: Int) -> OpaquePointer {
        wj_ring_create(UInt64(capacity), UInt64(MemoryLayout<wj_event>.size))!
    }

    func testFIFOOrderAndWrapAround() {
        let ring = makeRing(8)
        defer { wj_ring_destroy(ring) }
        var next: UInt64 = 1, expected: UInt64 = 1
        // 5 laps around an 8-slot ring, interleaving pushes and pops.
        for _ in 0..<40 {
            for _ in 0..<3 {
                var ev = wj_event()
                ev.conn_id = next
                XCTAssertEqual(wj_ring_push(ring, &ev), 1)
                next += 1
            }
            var out = wj_event()
            while wj_ring_pop(ring, &out) != 0 {
                XCTAssertEqual(out.conn_id, expected)
                expected += 1
            }
        }
        XCTAssertEqual(expected, next)
        XCTAssertEqual(wj_ring_dropped(ring), 0)
    }

    func testFullRingDropsAndCounts() {
        let ring = makeRing(4)
        defer { wj_ring_destroy(ring) }
        var ev = wj_event()
        for i in 0..<10 {
            ev.conn_id = UInt64(i)
            _ = wj_ring_push(ring, &ev)
        }
        XCTAssertEqual(wj_ring_dropped(ring), 6)
        var out = wj_event()
        var got: [UInt64] = []
        while wj_ring_pop(ring, &out) != 0 { got.append(out.conn_id) }
        XCTAssertEqual(got, [0, 1, 2, 3], "the oldest events are kept, later ones dropped")
    }

    func testDiscardPendingForgetsEverything() {
        let ring = makeRing(8)
        defer { wj_ring_destroy(ring) }
        var ev = wj_event()
        for _ in 0..<5 { _ = wj_ring_push(ring, &ev) }
        wj_ring_discard_pending(ring)
        var out = wj_event()
        XCTAssertEqual(wj_ring_pop(ring, &out), 0)
        // And it keeps working afterwards.
        ev.conn_id = 42
        XCTAssertEqual(wj_ring_push(ring, &ev), 1)
        XCTAssertEqual(wj_ring_pop(ring, &out), 1)
        XCTAssertEqual(out.conn_id, 42)
    }

    func testConcurrentProducersLoseNothingBelowCapacity() {
        let ring = makeRing(1 << 14)
        defer { wj_ring_destroy(ring) }
        let threads = 4, perThread = 3000
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            var ev = wj_event()
            for i in 0..<perThread {
                ev.conn_id = UInt64(t * perThread + i + 1)
                wj_ring_push(ring, &ev)
            }
        }
        var seen = Set<UInt64>()
        var out = wj_event()
        while wj_ring_pop(ring, &out) != 0 { seen.insert(out.conn_id) }
        XCTAssertEqual(seen.count, threads * perThread)
        XCTAssertEqual(wj_ring_dropped(ring), 0)
    }
}
