import XCTest
@testable import WedjatAnalysis

/// QuickHash: equal strings hash equal however they are stored, and the usual keys spread.
final class QuickHashTests: XCTestCase {
    private func hash(_ parts: [String?]) -> UInt64 {
        var q = QuickHash()
        for p in parts { q.add(p) }
        return q.value
    }

    func testEqualStringsHashEqualHoweverStored() {
        for s in ["", "a", "GET", "api-7.internal:8443", "/v1/items/12345/details?x=1", String(repeating: "é中", count: 40)] {
            // A small string, a native one of the same bytes, one cut out of a bigger string.
            let native = String(decoding: Array(s.utf8), as: UTF8.self)
            let cut = String(("<" + s + ">").dropFirst().dropLast())
            XCTAssertEqual(hash([s]), hash([native]), s)
            XCTAssertEqual(hash([s]), hash([cut]), s)
        }
    }

    func testBoundariesAndNilCount() {
        XCTAssertNotEqual(hash(["ab", "c"]), hash(["a", "bc"]))
        XCTAssertNotEqual(hash([nil, "x"]), hash(["", "x"]))
        XCTAssertNotEqual(hash([nil, "x"]), hash(["x", nil]))
        XCTAssertNotEqual(hash(["abcdefgh"]), hash(["abcdefgh", ""]))
    }

    func testKeysOfALogSpread() {
        var seen = Set<UInt64>()
        for host in 0 ..< 200 {
            for path in ["/", "/a", "/items/{n}", "/health"] {
                for method in ["GET", "POST"] {
                    seen.insert(hash(["client", "api-\(host).example.com", nil, method, path]))
                }
            }
        }
        XCTAssertEqual(seen.count, 200 * 4 * 2)
        // The low bits alone (a table's buckets) spread too.
        XCTAssertGreaterThan(Set(seen.map { $0 & 1023 }).count, 700)
    }
}
