import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif
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
        // The skipped slots kept their old laps: over the next laps, in bursts that fill the
        // ring, every event still comes out once and in order, and none is taken early.
        var next: UInt64 = 100
        for _ in 0..<5 {
            for _ in 0..<8 { ev.conn_id = next; next += 1; XCTAssertEqual(wj_ring_push(ring, &ev), 1) }
            XCTAssertEqual(wj_ring_push(ring, &ev), 0, "full")
            for k in 0..<8 {
                XCTAssertEqual(wj_ring_pop(ring, &out), 1)
                XCTAssertEqual(out.conn_id, next - 8 + UInt64(k))
            }
            XCTAssertEqual(wj_ring_pop(ring, &out), 0)
        }
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
    // Variable-length slots (captured bytes): producers push only the header and `len` bytes,
    // the consumer copies out only those, while both run at once around a small ring for many
    // laps. Every popped slot must hold exactly what one producer wrote (a producer never
    // overwrites a slot the consumer has not finished with), each item arrives once, and each
    // refused push is counted.
    func testVariableLengthSlotsUnderConcurrency() { variableLengthSlots(inPlace: false) }

    /// The same, the consumer reading each slot where it is (wj_ring_peek, as the agent's
    /// drain does) and releasing it after: read twice with a pause between, a slot must not
    /// change while it is held.
    func testSlotsReadInPlaceUnderConcurrency() { variableLengthSlots(inPlace: true) }

    private func variableLengthSlots(inPlace: Bool) {
        let capacity = 128
        let ring = wj_ring_create(UInt64(capacity), UInt64(MemoryLayout<wj_payload>.size))!
        defer { wj_ring_destroy(ring) }
        let head = MemoryLayout<wj_payload>.offset(of: \wj_payload.data)!
        let lenAt = MemoryLayout<wj_payload>.offset(of: \wj_payload.len)!
        let room = MemoryLayout<wj_payload>.size - head
        let producers = 3, perProducer = 10_000
        let pushed = UnsafeMutablePointer<Int>.allocate(capacity: producers)
        pushed.initialize(repeating: 0, count: producers)
        defer { pushed.deallocate() }
        let failed = UnsafeMutablePointer<Int>.allocate(capacity: producers)
        failed.initialize(repeating: 0, count: producers)
        defer { failed.deallocate() }
        let lock = NSLock()
        var done = 0
        var popped = 0, bad = 0
        // The consumer on a thread of its own: concurrentPerform may run its iterations on
        // fewer threads than asked, and producers that wait for room need a running consumer.
        let finished = DispatchSemaphore(value: 0)
        let deadline = Date().addingTimeInterval(20)   // a broken ring fails, it does not hang
        let consumer = Thread {
            var out = wj_payload()
            var spins = 0
            func check(_ p: UnsafePointer<wj_payload>) {
                let len = Int(p.pointee.len)
                let seed = UInt8(truncatingIfNeeded: p.pointee.conn_id)
                let d = UnsafeRawPointer(p) + head
                if len > room || (0..<len).contains(where: { d.load(fromByteOffset: $0, as: UInt8.self) != seed &+ UInt8(truncatingIfNeeded: $0) }) { bad += 1 }
                if p.pointee.offset != UInt64(len) { bad += 1 }
            }
            while true {
                var pos: UInt64 = 0
                if inPlace, let slot = wj_ring_peek(ring, &pos) {
                    popped += 1
                    let p = slot.assumingMemoryBound(to: wj_payload.self)
                    check(p)
                    if popped % 64 == 0 { usleep(50) }   // held a while: producers wait for it
                    check(p)
                    wj_ring_release_slot(ring, pos)
                } else if !inPlace, wj_ring_pop_var(ring, &out, head, lenAt) != 0 {
                    popped += 1
                    withUnsafePointer(to: &out) { check($0) }
                } else if lock.withLock({ done }) == producers {
                    spins += 1
                    if spins > 1000 { break }
                } else if Date() > deadline {
                    break
                }
            }
            finished.signal()
        }
        consumer.start()
        DispatchQueue.concurrentPerform(iterations: producers) { t in
            var p = wj_payload()
            for i in 0..<perProducer {
                let len = (i * 37 + t * 11) % (room + 1)
                p.conn_id = UInt64(t * perProducer + i)
                let seed = UInt8(truncatingIfNeeded: p.conn_id)
                p.len = UInt32(len)
                p.offset = UInt64(len)
                withUnsafeMutableBytes(of: &p.data) { d in for k in 0..<len { d[k] = seed &+ UInt8(truncatingIfNeeded: k) } }
                // A full ring drops (and counts) the push: try again until it goes in, so that
                // every item travels and the ring goes around a couple of thousand times.
                while wj_ring_push_n(ring, &p, head + len) == 0 && Date() < deadline { failed[t] += 1; usleep(10) }
                if Date() >= deadline { break }
                pushed[t] += 1
            }
            lock.withLock { done += 1 }
        }
        finished.wait()
        let total = (0..<producers).reduce(0) { $0 + pushed[$1] }
        let failures = (0..<producers).reduce(0) { $0 + failed[$1] }
        XCTAssertEqual(bad, 0, "slots read back differently from how they were written")
        XCTAssertEqual(total, producers * perProducer)
        XCTAssertEqual(popped, total, "every pushed slot popped once")
        XCTAssertEqual(wj_ring_dropped(ring), UInt64(failures), "each refused push counted as a drop")
    }
}
