import XCTest
@testable import WedjatAnalysis

final class StringCacheTests: XCTestCase {
    private func make(_ cache: StringCache, _ s: String) -> String {
        var s = s
        return s.withUTF8 { cache.string($0.baseAddress!, $0.count) }
    }

    /// Whatever the slots hold, each string comes back with its own bytes: short ones, long
    /// ones, repeated ones, and many more distinct ones than there are slots (collisions).
    func testStringsAreTheirBytes() {
        let cache = StringCache()
        var rng = SystemRandomNumberGenerator()
        var values = ["", "a", "fifteen bytes!!", "sixteen bytes!!!", "api-199.example.com", "10.0.199.200:443", "é€ unicode 𝄞 text"]
        for _ in 0 ..< 5000 {
            let n = Int.random(in: 0 ... 40, using: &rng)
            values.append(String((0 ..< n).map { _ in "abc.-:0123456789".randomElement(using: &rng)! }))
        }
        for _ in 0 ..< 3 {
            for v in values.shuffled(using: &rng) {
                let got = make(cache, v)
                XCTAssertEqual(got, v)
                XCTAssertEqual(Array(got.utf8), Array(v.utf8))
            }
        }
    }

    /// Lines decoded with one cache give the records decoded without.
    func testHTTPLinesDecodeTheSameThroughTheCache() {
        let cache = StringCache()
        for i in 0 ..< 300 {
            let line = #"{"type":"http","ts":\#(i),"pid":1,"role":"client","host":"host-\#(i % 7).example.com","# +
                #""peer":"10.0.\#(i % 5).1:443","path":"/v1/items/\#(i)","headers":{"request.user-agent":"agent-\#(i % 3)/1.0.0.0.0"}}"#
            var l = line
            let (a, b) = l.withUTF8 { u in
                (HTTPLineDecoder.decode(UnsafeRawBufferPointer(u), keepHeaders: true, strings: cache),
                 HTTPLineDecoder.decode(UnsafeRawBufferPointer(u), keepHeaders: true, strings: StringCache()))
            }
            XCTAssertNotNil(a)
            XCTAssertEqual(a, b)
            XCTAssertEqual(a?.host, "host-\(i % 7).example.com")
        }
    }
}
