import Foundation
import XCTest
@testable import WedjatAnalysis

/// `RunAnalysis.load` with several reader threads keeps the endpoints and the run's TTFB and
/// durations on a thread of their own, and makes the report's rows on every core: the report
/// must be the one a single thread makes, byte for byte.
final class SideAggregationTests: XCTestCase {
    func testSameReportAsOneThread() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var lines = [String(Line.start(pid: 7, ts: 1000, exe: "/bin/x").dropLast())]
        // More records than one batch (2,048), more endpoints than the 1,000 kept, more than 16
        // rows of hosts and peers; summaries between them.
        for i in 0 ..< 9000 {
            let host = "h\(i % 40).example", ts = 2000 + i * 10
            if i % 997 == 5 {
                lines.append(#"{"type":"http_summary","ts":\#(ts),"pid":7,"role":"client","host":"\#(host)","count":12,"errors":1,"ttfb_us":{"count":12,"p50":40,"p90":90,"p99":400,"max":900}}"#)
                continue
            }
            lines.append(#"{"type":"http","ts":\#(ts),"pid":7,"conn_id":\#(i % 300),"role":"client","method":"GET","host":"\#(host)","path":"/item/\#(i % 1300)x","status":\#(i % 13 == 0 ? 500 : 200),"peer":"10.0.0.\#(i % 40):80","request_start_ts":\#(ts - 50 - i % 700),"response_start_ts":\#(ts - 10),"response_end_ts":\#(ts)}"#)
            if i % 30 == 0 {
                lines.append(#"{"type":"connection","ts":\#(ts),"pid":7,"conn_id":\#(i % 300),"role":"client","peer":"10.0.0.\#(i % 40):80","connect_us":\#(100 + i % 50),"bytes_in":10,"bytes_out":5}"#)
            }
        }
        let f = try dir.write("x.7.1000.ndjson", lines.joined(separator: "\n") + "\n")
        func report(threads: Int) throws -> String {
            var reader = LogReader(threads: threads)
            reader.parallelMinBytes = 0
            reader.parallelBlockBytes = 4096
            return try JSONReport.render(Report(analysis: RunAnalysis.load(paths: [f], reader: reader)))
        }
        let one = try report(threads: 1)
        XCTAssertTrue(one.contains("\"endpoints\""))
        XCTAssertEqual(try report(threads: 2), one)
        XCTAssertEqual(try report(threads: 4), one)
    }

    func testConcurrentMapKeepsOrder() {
        let xs = Array(0 ..< 1000)
        XCTAssertEqual(xs.concurrentMap { "\($0 * 3)" }, xs.map { "\($0 * 3)" })
        XCTAssertEqual([Int]().concurrentMap { $0 }, [])
        XCTAssertEqual(Array(0 ..< 17).concurrentMap { $0 + 1 }, Array(1 ..< 18))
    }
}

final class EndpointCollectionTests: XCTestCase {
    /// More distinct exchange keys than the collection remembers (its raw-key memo is cleared
    /// and refilled), folding to more endpoints than the 1,000 kept: each exchange is counted
    /// where first-seen order and folding put it, as without the memo.
    func testManyRawKeysLandWhereTheirEndpointIs() {
        var c = EndpointCollection()
        var expected: [EndpointKey: Int64] = [:]
        var order: [EndpointKey] = []
        func letters(_ n: Int) -> String { String((0 ..< 4).map { k in Character(UnicodeScalar(97 + (n >> (5 * k)) % 26)!) }) }
        for pass in 0 ..< 2 {
            for i in 0 ..< 12_000 {
                // Numbered paths fold to one endpoint per host; lettered ones are endpoints of their own.
                let path = i % 3 == 0 ? "/items/\(i)" : "/" + letters(i / 3)
                let h = HTTPRecord(ts: Int64(i), pid: 1, role: "client", method: pass == 0 ? "GET" : "GET",
                                   host: "h\(i % 5)", path: path, status: 200, ttfbUs: Int64(i % 100), durationUs: Int64(i % 300))
                c.add(h)
                var key = EndpointKey(role: "client", host: "h\(i % 5)", method: "GET", path: PathTemplate.fold(path))
                if expected[key] == nil {
                    if order.count >= EndpointCollection.limit {
                        key = EndpointKey(role: "client", host: key.host, method: "*", path: "(other)")
                        if expected[key] == nil { order.append(key) }
                    } else {
                        order.append(key)
                    }
                }
                expected[key, default: 0] += 1
            }
        }
        XCTAssertEqual(c.endpoints.mapValues(\.requests), expected)
    }
}

final class JSONReportTests: XCTestCase {
    /// The endpoints encoded on their own and put in place give the text of the report encoded
    /// in one piece, with strings that look like the structure around them.
    func testEndpointsEncodedApartGiveTheSameText() throws {
        var a = RunAnalysis()
        let file = "p.1.0.ndjson"
        a.add(.processStart(ProcessStart(ts: 1, pid: 1, exe: "/bin/p")), file: file)
        let paths = ["/a\n  ]", "/b\"  \"endpoints\" : [", "/é/[x]", "/plain", "/items/42", "/\u{1}"]
        for (i, path) in paths.enumerated() {
            a.add(.http(HTTPRecord(ts: Int64(10 + i), pid: 1, role: "client", host: "h\(i % 2)\n]", path: path, status: 200,
                                   ttfbUs: Int64(100 + i), durationUs: Int64(200 + i))), file: file)
        }
        a.finish()
        let r = Report(analysis: a)
        XCTAssertGreaterThan(r.endpoints.count, 1)
        let apart = try XCTUnwrap(JSONReport.renderInTwo(r))
        XCTAssertEqual(apart, try JSONReport.encode(r) + "\n")
        XCTAssertEqual(try JSONReport.render(r), apart)
    }
}
