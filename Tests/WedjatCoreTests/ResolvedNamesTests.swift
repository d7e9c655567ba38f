import XCTest
import CWedjatCommon
@testable import WedjatCore

/// The rule of `connection.host` (docs/LOG_FORMAT.md): a name only when it is plausibly the one
/// the app connected by.
final class ResolvedNamesTests: XCTestCase {
    private func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16 = 0) -> wj_addr {
        var addr = wj_addr()
        addr.family = UInt16(AF_INET)
        addr.port = port
        addr.bytes.0 = a; addr.bytes.1 = b; addr.bytes.2 = c; addr.bytes.3 = d
        return addr
    }

    private func mapped(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> wj_addr {
        var addr = wj_addr()
        addr.family = UInt16(AF_INET6)
        addr.port = port
        withUnsafeMutableBytes(of: &addr.bytes) { raw in
            raw[10] = 0xff; raw[11] = 0xff; raw[12] = a; raw[13] = b; raw[14] = c; raw[15] = d
        }
        return addr
    }

    private let ms: UInt64 = 1_000_000
    private let s: UInt64 = 1_000_000_000
    private var loopback: wj_addr { v4(127, 0, 0, 1) }

    /// The case of issue 15: `localhost` was resolved (for a connection to port 8080), and
    /// later the app connects to the literal 127.0.0.1 on another port, from another thread.
    func testLiteralAddressAfterALookupOfAnotherNameGetsNoName() {
        var names = ResolvedNames()
        names.note([loopback], name: "localhost", durationUs: 300, endMono: 10 * s, tid: 1, service: "8080")
        let first = names.lookup(v4(127, 0, 0, 1, port: 8080), connectStartMono: 10 * s + ms, tid: 1)
        XCTAssertEqual(first?.name, "localhost")
        XCTAssertEqual(first?.attributedDurationUs, 300)
        // Another port, no lookup of its own: the lookup's service was 8080.
        XCTAssertNil(names.lookup(v4(127, 0, 0, 1, port: 9090), connectStartMono: 10 * s + 5 * ms, tid: 2))
        XCTAssertNil(names.lookup(v4(127, 0, 0, 1, port: 9090), connectStartMono: 30 * s, tid: 1))
    }

    /// The lookup had no service (a JVM resolving its names at start): a connection from
    /// another thread, long after, to the address is not by that name; nor one right after to
    /// another port than the lookup's first connection.
    func testOldLookupOnAnotherThreadIsNotTheName() {
        var names = ResolvedNames()
        names.note([loopback], name: "localhost", durationUs: 40, endMono: 1 * s, tid: 7)
        XCTAssertNil(names.lookup(v4(127, 0, 0, 1, port: 8080), connectStartMono: 3 * s, tid: 9))

        var used = ResolvedNames()
        used.note([loopback], name: "localhost", durationUs: 40, endMono: 1 * s, tid: 7)
        XCTAssertEqual(used.lookup(v4(127, 0, 0, 1, port: 6379), connectStartMono: 1 * s + ms, tid: 8)?.name, "localhost")
        XCTAssertNil(used.lookup(v4(127, 0, 0, 1, port: 8080), connectStartMono: 1 * s + 2 * ms, tid: 9))
        // The same destination again is a reconnect: same name, no DNS phase.
        let again = used.lookup(v4(127, 0, 0, 1, port: 6379), connectStartMono: 50 * s, tid: 9)
        XCTAssertEqual(again?.name, "localhost")
        XCTAssertNil(again?.attributedDurationUs)
    }

    /// Resolve, wait, connect on one thread (test 40's third connection): the thread's latest
    /// lookup names it, with no DNS phase (1.5 s is past the window).
    func testSameThreadLatestLookup() {
        var names = ResolvedNames()
        names.note([loopback], name: "localhost", durationUs: 500, endMono: 1 * s, tid: 4, service: "8080")
        let m = names.lookup(v4(127, 0, 0, 1, port: 8080), connectStartMono: 2 * s + 500 * ms, tid: 4)
        XCTAssertEqual(m?.name, "localhost")
        XCTAssertNil(m?.attributedDurationUs)
        // Not once the thread looked up something else in between, nor past 60 s.
        var later = ResolvedNames()
        later.note([loopback], name: "localhost", durationUs: 500, endMono: 1 * s, tid: 4)
        later.note([v4(10, 0, 0, 9)], name: "db.internal", durationUs: 500, endMono: 2 * s, tid: 4)
        XCTAssertNil(later.lookup(v4(127, 0, 0, 1, port: 8080), connectStartMono: 3 * s, tid: 4))
        var old = ResolvedNames()
        old.note([loopback], name: "localhost", durationUs: 500, endMono: 1 * s, tid: 4)
        XCTAssertNil(old.lookup(v4(127, 0, 0, 1, port: 8080), connectStartMono: 62 * s, tid: 4))
    }

    /// A resolver thread (curl's, libuv's) looks up, another thread connects at once.
    func testResolverThreadWithinOneSecond() {
        var names = ResolvedNames()
        names.note([v4(10, 0, 0, 5), v4(10, 0, 0, 6)], name: "api.local", durationUs: 2000, endMono: 5 * s, tid: 21, service: "443")
        let a = names.lookup(v4(10, 0, 0, 5, port: 443), connectStartMono: 5 * s + 3 * ms, tid: 20)
        XCTAssertEqual(a?.name, "api.local")
        XCTAssertEqual(a?.attributedDurationUs, 2000)
        // The second address of the same lookup (a fallback): the same name, the phase taken.
        let b = names.lookup(v4(10, 0, 0, 6, port: 443), connectStartMono: 5 * s + 9 * ms, tid: 20)
        XCTAssertEqual(b?.name, "api.local")
        XCTAssertNil(b?.attributedDurationUs)
        // An address the lookup did not return has no name.
        XCTAssertNil(names.lookup(v4(10, 0, 0, 7, port: 443), connectStartMono: 5 * s + 9 * ms, tid: 20))
    }

    /// Two names answer the same address: the most recent lookup before the connect wins, and
    /// a lookup that ended after the connect started is not its name.
    func testMostRecentLookupOfTheAddressAndNoneFromTheFuture() {
        var names = ResolvedNames()
        let shared = v4(10, 1, 1, 1)
        names.note([shared], name: "a.example", durationUs: 10, endMono: 1 * s, tid: 1)
        names.note([shared], name: "b.example", durationUs: 10, endMono: 1 * s + 10 * ms, tid: 2)
        XCTAssertEqual(names.lookup(v4(10, 1, 1, 1, port: 80), connectStartMono: 1 * s + 20 * ms, tid: 2)?.name, "b.example")
        var future = ResolvedNames()
        future.note([shared], name: "a.example", durationUs: 10, endMono: 2 * s, tid: 1)
        XCTAssertNil(future.lookup(v4(10, 1, 1, 1, port: 80), connectStartMono: 1 * s, tid: 1))
    }

    /// A destination once named keeps its name while that name is still the address's latest
    /// lookup; a later lookup of another name for the same address ends it.
    func testReconnectKeepsTheNameUntilAnotherNameAnswersTheAddress() {
        var names = ResolvedNames()
        let addr = v4(10, 2, 2, 2)
        names.note([addr], name: "svc.local", durationUs: 10, endMono: 1 * s, tid: 1, service: "8080")
        XCTAssertEqual(names.lookup(v4(10, 2, 2, 2, port: 8080), connectStartMono: 1 * s + ms, tid: 1)?.name, "svc.local")
        XCTAssertEqual(names.lookup(v4(10, 2, 2, 2, port: 8080), connectStartMono: 300 * s, tid: 5)?.name, "svc.local")
        names.note([addr], name: "other.local", durationUs: 10, endMono: 301 * s, tid: 6)
        XCTAssertNil(names.lookup(v4(10, 2, 2, 2, port: 8080), connectStartMono: 400 * s, tid: 5))
    }

    func testIPv4MappedPeerMatchesAnIPv4Answer() {
        var names = ResolvedNames()
        names.note([v4(192, 168, 1, 10)], name: "nas.lan", durationUs: 77, endMono: 1 * s, tid: 3, service: "80")
        let m = names.lookup(mapped(192, 168, 1, 10, port: 80), connectStartMono: 1 * s + ms, tid: 3)
        XCTAssertEqual(m?.name, "nas.lan")
        XCTAssertEqual(m?.attributedDurationUs, 77)
    }

    /// Callers that do not know the thread (one `note` per answer): the answers of one lookup
    /// are grouped, and the rule works without (a).
    func testSingleAnswerCallsAreOneLookup() {
        var names = ResolvedNames()
        names.note(v4(10, 0, 0, 1), name: "multi.local", durationUs: 100, endMono: 1 * s)
        names.note(v4(10, 0, 0, 2), name: "multi.local", durationUs: 100, endMono: 1 * s)
        let a = names.lookup(v4(10, 0, 0, 1, port: 80), connectStartMono: 1 * s + ms)
        XCTAssertEqual(a?.attributedDurationUs, 100)
        let b = names.lookup(v4(10, 0, 0, 2, port: 80), connectStartMono: 1 * s + 2 * ms)
        XCTAssertEqual(b?.name, "multi.local")
        XCTAssertNil(b?.attributedDurationUs, "one lookup is one DNS phase")
        // Past the window, without a thread: only a destination named before keeps its name.
        XCTAssertEqual(names.lookup(v4(10, 0, 0, 1, port: 80), connectStartMono: 9 * s)?.name, "multi.local")
        XCTAssertNil(names.lookup(v4(10, 0, 0, 1, port: 443), connectStartMono: 9 * s))
    }

    func testBoundedMemory() {
        var names = ResolvedNames()
        for i in 0 ..< ResolvedNames.capacity + 10 {
            names.note([v4(10, 9, UInt8(i / 256), UInt8(i % 256))], name: "h\(i)", durationUs: 1, endMono: 1 * s + UInt64(i), tid: 1)
        }
        // The oldest are forgotten, the newest kept.
        XCTAssertNil(names.lookup(v4(10, 9, 0, 0, port: 80), connectStartMono: 1 * s + 100 * ms, tid: 2))
        let last = ResolvedNames.capacity + 9
        XCTAssertEqual(names.lookup(v4(10, 9, UInt8(last / 256), UInt8(last % 256), port: 80),
                                    connectStartMono: 1 * s + 100 * ms, tid: 2)?.name, "h\(last)")
    }
}
