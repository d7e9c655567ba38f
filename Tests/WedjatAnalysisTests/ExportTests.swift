import Foundation
import XCTest
@testable import WedjatAnalysis

/// `wedjat export` on a hand-written run (Fixtures/export): curl (pid 7000) resolves api.local,
/// makes an HTTPS connection with two exchanges, a plain one with a 404 and an exchange cut
/// short, a refused connect and a failed lookup during a blocked stall, while a worker thread
/// has a loop stall; a python server (7100, killed) answers two pipelined requests on one
/// connection and a failing upload on another, and has exchanges only in an http_summary.
/// Golden files in Golden/export (regenerate with scripts/regen-golden.sh, review the diff);
/// the tests below pin the values worked out by hand.
final class ExportTests: XCTestCase {
    static let fixture = testsDir + "/Fixtures/export"
    static let goldenDir = testsDir + "/Golden/export"
    static let t0: Int64 = 1763782800000000

    /// Every format of a run, made as `wedjat export` makes them: in one pass over the logs.
    struct Exported {
        var har: ExportDocument
        var trace: ExportDocument
        /// The OTLP trace requests (all spans in one with the default), then the metrics request.
        var requests: [ExportDocument]
        var context: ExportContext
        var traces: ExportDocument { requests.count > 1 ? requests[0] : ExportDocument(text: "", count: 0, notes: []) }
        var metrics: ExportDocument { requests.last! }
        var warnings: [ReaderWarning] { context.warnings }
        var summarizedExchanges: Int64 { context.summarizedExchanges }
        var summarizedClientExchanges: Int64 { context.summarizedClientExchanges }
        var summarizedInHistograms: Int64 { context.summarizedInHistograms }
        var summarizedWarning: String? { context.summarizedWarning }
        var earliestTs: Int64? { context.earliestTs }
    }

    private func input(_ path: String = ExportTests.fixture, spansPerRequest: Int = .max,
                       stop: Bool = false) throws -> Exported {
        var requests: [ExportDocument] = []
        let r = try ExportStream.run(paths: [path], outputs: .init(
            har: ExportText(), trace: ExportText(), otlp: { requests.append($0); return !stop },
            spansPerRequest: spansPerRequest))
        return Exported(har: r.har!, trace: r.trace!, requests: requests, context: r.context)
    }

    private func check(_ actual: String, golden name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = Self.goldenDir + "/" + name
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(actual, expected, "differs from \(path); run scripts/regen-golden.sh if intended", file: file, line: line)
    }

    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    // MARK: golden files

    func testGoldenHAR() throws {
        try check(try input().har.text, golden: "fixture.har")
    }

    func testGoldenChromeTrace() throws {
        try check(try input().trace.text, golden: "fixture.trace.json")
    }

    func testGoldenOTLP() throws {
        let i = try input()
        try check(i.traces.text + "\n" + i.metrics.text + "\n", golden: "fixture.otlp.jsonl")
    }

    func testBadLineIsAWarningWithItsPlace() throws {
        let i = try input()
        XCTAssertEqual(i.warnings.map(\.description),
                       [Self.fixture + "/python3.11.7100.1763782800001000.ndjson:4: invalid JSON; skipped"])
    }

    /// The HAR's entries are sorted through runs spilled to a temporary file when there are
    /// more than a buffer holds: the same document as sorting them all at once.
    /// Many entries: rendered on other threads in batches and spilled in many runs, the document
    /// is the one of a single run, whatever the batch and run boundaries; entries sorted by start,
    /// ties in reading order.
    func testHARRenderedInBatchesIsTheSameDocument() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var body = Line.start(pid: 1, ts: 1000, exe: "/c")
        let n = 1000
        for i in 0 ..< n {
            // Several exchanges share each start (ties), written in an order unlike their starts.
            let start = Int64(10_000 + (i * 7919) % (n / 4) * 1000)
            body += #"{"type":"http","ts":\#(start + 500),"pid":1,"conn_id":\#(i),"role":"client","method":"GET","host":"h","path":"/\#(i)?a=\#(i)","version":"HTTP/1.1","status":200,"request_index":\#(i % 3),"request_start_ts":\#(start),"request_end_ts":\#(start),"response_start_ts":\#(start + 400),"response_end_ts":\#(start + 500),"headers":{"request.host":"h","response.content-type":"text/plain","request.accept":"*/*"}}"# + "\n"
            body += #"{"type":"connection","ts":\#(start + 600),"pid":1,"conn_id":\#(i),"role":"client","peer":"10.0.0.1:80","open_ts":\#(start - 100),"close_ts":\#(start + 600),"connect_us":50}"# + "\n"
        }
        try dir.write("c.1.1000.ndjson", body + Line.end(pid: 1, ts: 2_000_000))
        func har(runLength: Int) throws -> String { try Self.harStream(of: dir.path, runLength: runLength) }
        let whole = try har(runLength: 100_000)
        for runLength in [1, 7, 128, 333] { XCTAssertEqual(try har(runLength: runLength), whole, "runs of \(runLength)") }
        let entries = try XCTUnwrap((try json(whole)["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.count, n)
        let keys = entries.map { ($0["startedDateTime"] as? String ?? "", Int(((($0["request"] as? [String: Any])?["url"] as? String) ?? "").split(separator: "=").last ?? "") ?? -1) }
        XCTAssertEqual(keys.map(\.0), keys.map(\.0).sorted())
        // Ties keep the order the exchanges were known in (first exchanges wait for their connection).
        XCTAssertEqual(Set(keys.map(\.1)).count, n)
        let headers = try XCTUnwrap((entries[0]["request"] as? [String: Any])?["headers"] as? [[String: String]])
        XCTAssertEqual(headers.map { $0["name"] ?? "" }, ["accept", "host"])
        XCTAssertEqual(((entries[0]["response"] as? [String: Any])?["content"] as? [String: Any])?["mimeType"] as? String, "text/plain")
    }

    /// Each side's headers: only the keys with its prefix, sorted by key, the name after the
    /// prefix (an empty one included), values escaped; a key whose prefix is followed by a
    /// combining mark is not the prefix (Swift's hasPrefix), and `content-type` is the mimeType.
    func testHARHeadersBySide() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var body = Line.start(pid: 1, ts: 1000, exe: "/c")
        body += #"{"type":"http","ts":9000,"pid":1,"conn_id":1,"role":"client","method":"GET","host":"h","path":"/","version":"HTTP/1.1","status":200,"request_index":1,"reused":true,"request_start_ts":5000,"request_end_ts":5100,"response_start_ts":8000,"response_end_ts":9000,"headers":{"request.x-b":"2","request.":"empty","request.\u0301x":"mark","requestx":"no dot","request.a":"\"q\"\\ é","response.z":"z","response.content-type":"text/html","response.a":"a","other.k":"v"}}"# + "\n"
        try dir.write("c.1.1000.ndjson", body + Line.end(pid: 1, ts: 2_000_000))
        let entries = try XCTUnwrap((try json(try Self.harStream(of: dir.path, runLength: 10))["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let request = try XCTUnwrap(entries.first?["request"] as? [String: Any]), response = try XCTUnwrap(entries.first?["response"] as? [String: Any])
        let pairs = { (side: [String: Any]) in ((side["headers"] as? [[String: String]]) ?? []).map { "\($0["name"] ?? "?")=\($0["value"] ?? "?")" } }
        XCTAssertEqual(pairs(request), ["=empty", "a=\"q\"\\ é", "x-b=2"])
        XCTAssertEqual(pairs(response), ["a=a", "content-type=text/html", "z=z"])
        XCTAssertEqual((response["content"] as? [String: Any])?["mimeType"] as? String, "text/html")
    }

    /// The HAR of the logs in `path`, through HARStream with sorted runs of `runLength` entries.
    static func harStream(of path: String, runLength: Int) throws -> String {
        let context = ExportContext()
        let stream = HARStream(text: ExportText(), runLength: runLength)
        var reader = LogReader()
        try reader.read(paths: [path]) { file, _, record in
            _ = context.enter(file)
            context.note(record)
            stream.add(record, context: context)
        }
        stream.endImage(0, context: context)
        return stream.finish(context: context).text
    }

    func testHARSortsThroughSpilledRuns() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var body = Line.start(pid: 1, ts: 1000, exe: "/c")
        // 25 exchanges, each on its own connection, written in an order unlike their starts.
        for i in 0 ..< 25 {
            let start = Int64(10_000 + (i * 7919) % 25 * 1000)
            body += #"{"type":"http","ts":\#(start + 500),"pid":1,"conn_id":\#(i),"role":"client","method":"GET","host":"h","path":"/\#(i)","version":"HTTP/1.1","status":200,"request_index":0,"request_start_ts":\#(start),"request_end_ts":\#(start),"response_start_ts":\#(start + 400),"response_end_ts":\#(start + 500)}"# + "\n"
            body += #"{"type":"connection","ts":\#(start + 600),"pid":1,"conn_id":\#(i),"role":"client","peer":"10.0.0.1:80","open_ts":\#(start - 100),"close_ts":\#(start + 600),"connect_us":50}"# + "\n"
        }
        try dir.write("c.1.1000.ndjson", body + Line.end(pid: 1, ts: 90_000))
        func har(runLength: Int) throws -> String { try Self.harStream(of: dir.path, runLength: runLength) }
        let spilled = try har(runLength: 4), whole = try har(runLength: 1000)
        XCTAssertEqual(spilled, whole)
        let entries = try XCTUnwrap((try json(whole)["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let starts = entries.compactMap { $0["startedDateTime"] as? String }
        XCTAssertEqual(starts.count, 25)
        XCTAssertEqual(starts, starts.sorted())
        // The merge's read buffers stay within 16 MiB however many runs a long log makes.
        XCTAssertEqual(HARStream.runBufferSize(runs: 10), 256 << 10)
        XCTAssertEqual(HARStream.runBufferSize(runs: 2000), 16 << 10)
        for runs in [1, 64, 65, 300, 1024] {
            XCTAssertLessThanOrEqual(runs * HARStream.runBufferSize(runs: runs), max(HARStream.mergeBuffer, runs * (16 << 10)))
        }
    }

    // MARK: HAR

    /// The data points of the first metric of the first resource of an OTLP metrics request.
    private func firstMetricPoints(_ metrics: [String: Any]) -> [[String: Any]]? {
        ((((metrics["resourceMetrics"] as? [[String: Any]])?.first?["scopeMetrics"] as? [[String: Any]])?
            .first?["metrics"] as? [[String: Any]])?.first?["histogram"] as? [String: Any])?["dataPoints"] as? [[String: Any]]
    }

    private func harEntries(_ i: Exported) throws -> [[String: Any]] {
        let log = try XCTUnwrap(try json(i.har.text)["log"] as? [String: Any])
        XCTAssertEqual(log["version"] as? String, "1.2")
        return try XCTUnwrap(log["entries"] as? [[String: Any]])
    }

    private func timings(_ e: [String: Any]) -> [String: Double] {
        (e["timings"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.doubleValue }
    }

    func testHARFirstExchangeCarriesTheConnectionsSetUp() throws {
        let entries = try harEntries(try input())
        XCTAssertEqual(entries.count, 4, "client exchanges only")
        let first = entries[0]
        // From the lookup's start (t0+10000): 200 us between the lookup and the connect, 300 us
        // between TLS done (t0+13500) and the request.
        XCTAssertEqual(first["startedDateTime"] as? String, "2025-11-22T03:40:00.010000Z")
        XCTAssertEqual(timings(first), ["blocked": 0.5, "dns": 1, "connect": 2.3, "ssl": 2, "send": 0, "wait": 2, "receive": 0.5])
        XCTAssertEqual((first["time"] as? NSNumber)?.doubleValue, 6.3)
        let request = try XCTUnwrap(first["request"] as? [String: Any])
        XCTAssertEqual(request["url"] as? String, "https://api.local/v1/items?REDACTED")
        XCTAssertEqual(request["httpVersion"] as? String, "HTTP/1.1")
        XCTAssertEqual(request["headersSize"] as? Int, 110)
        XCTAssertEqual((request["queryString"] as? [Any])?.count, 0, "a redacted query has no parameters to show")
        let response = try XCTUnwrap(first["response"] as? [String: Any])
        XCTAssertEqual(response["status"] as? Int, 200)
        XCTAssertEqual((response["content"] as? [String: Any])?["mimeType"] as? String, "application/json")
        XCTAssertEqual(first["serverIPAddress"] as? String, "10.0.0.5")
        XCTAssertEqual(first["connection"] as? String, "7000-1", "pid-conn_id: the same for every exchange of the connection")
    }

    func testHARReusedConnectionHasNoSetUpPhases() throws {
        let post = try harEntries(try input())[1]
        XCTAssertEqual((post["request"] as? [String: Any])?["method"] as? String, "POST")
        XCTAssertEqual(timings(post), ["blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0.4, "wait": 2.6, "receive": 0.1])
        XCTAssertEqual((post["request"] as? [String: Any])?["bodySize"] as? Int, 50)
    }

    func testHARPlainConnectionAndExchangeCutShort() throws {
        let entries = try harEntries(try input())
        let missing = entries[2]
        // No lookup of its own, no TLS: connect 150 us, then 50 us until the request.
        XCTAssertEqual(timings(missing), ["blocked": 0.05, "dns": -1, "connect": 0.15, "ssl": -1, "send": 0, "wait": 0.5, "receive": 0.1])
        let request = try XCTUnwrap(missing["request"] as? [String: Any])
        XCTAssertEqual(request["httpVersion"] as? String, "HTTP/1.0", "the request line's")
        XCTAssertEqual((missing["response"] as? [String: Any])?["httpVersion"] as? String, "HTTP/1.1", "the status line's (response_version)")
        let query = try XCTUnwrap(request["queryString"] as? [[String: String]])
        XCTAssertEqual(query, [["name": "q", "value": "a b"], ["name": "x", "value": ""]])

        let slow = entries[3]
        XCTAssertEqual(slow["_error"] as? String, "incomplete")
        // A record without `version` (older logs) on plain HTTP: the major version is known.
        XCTAssertEqual((slow["request"] as? [String: Any])?["httpVersion"] as? String, "HTTP/1.x")
        let response = try XCTUnwrap(slow["response"] as? [String: Any])
        XCTAssertEqual(response["httpVersion"] as? String, "", "no response")
        XCTAssertEqual(response["status"] as? Int, 0)
        XCTAssertEqual(response["bodySize"] as? Int, -1)
        XCTAssertEqual(response["headersSize"] as? Int, -1)
        // Waited from the request until the connection ended (the record's time).
        XCTAssertEqual(timings(slow)["wait"], 4)
    }

    func testHARTimingsAddUpAndEntriesAreSorted() throws {
        let entries = try harEntries(try input())
        let starts = entries.compactMap { $0["startedDateTime"] as? String }
        XCTAssertEqual(starts, starts.sorted())
        for e in entries {
            var t = timings(e)
            t["ssl"] = nil
            let sum = t.values.filter { $0 >= 0 }.reduce(0, +)
            XCTAssertEqual(sum, (e["time"] as? NSNumber)?.doubleValue ?? -1, accuracy: 0.0005)
        }
    }

    func testHARLookupNotInTheLogsStartsTheEntryAtConnectMinusDNS() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        try dir.write("c.1.1.ndjson", Line.start(pid: 1, ts: 1000, exe: "/c") + """
            {"type":"http","ts":9000,"pid":1,"conn_id":1,"role":"client","method":"GET","host":"h","path":"/","status":204,"request_index":0,"request_start_ts":5000,"request_end_ts":5100,"response_start_ts":8000,"response_end_ts":9000,"headers":{}}
            {"type":"connection","ts":9500,"pid":1,"conn_id":1,"role":"client","peer":"10.0.0.1:80","open_ts":4000,"close_ts":9500,"connect_us":500,"host":"h","dns_us":700}

            """)
        let e = try XCTUnwrap(try harEntries(try input(dir.path)).first)
        XCTAssertEqual(e["startedDateTime"] as? String, ExportTime.iso8601(4000 - 700))
        XCTAssertEqual(timings(e), ["blocked": 0.5, "dns": 0.7, "connect": 0.5, "ssl": -1, "send": 0.1, "wait": 2.9, "receive": 1])
    }

    /// Exchanges only counted in http_summary records: a warning naming every export they are
    /// missing from and why, the HAR's `log.comment` (client side only: HAR's view) and the
    /// trace's `otherData`; no HAR entry or span of theirs, and (summaries without bucket
    /// counts, as older wedjat wrote them) no histogram count either.
    func testSummarizedExchangesAreSaidNotSilent() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        try dir.write("c.1.1.ndjson", Line.start(pid: 1, ts: 1000, exe: "/c") + """
            {"type":"http","ts":9000,"pid":1,"conn_id":1,"role":"client","method":"GET","host":"h","path":"/","version":"HTTP/1.1","status":200,"request_index":0,"request_start_ts":5000,"request_end_ts":5100,"response_start_ts":8000,"response_end_ts":9000,"headers":{}}
            {"type":"http_summary","ts":20000,"pid":1,"role":"client","scheme":"http","method":"GET","host":"h","status":200,"count":40,"errors":0,"duration_us":{"count":40,"p50":3000,"p90":4000,"p99":9000,"max":9500}}
            {"type":"http_summary","ts":20000,"pid":1,"role":"server","scheme":"http","method":"GET","host":"me","status":200,"count":2,"errors":0}

            """ + Line.end(pid: 1, ts: 30000))
        let i = try input(dir.path)
        XCTAssertEqual(i.summarizedExchanges, 42)
        XCTAssertEqual(i.summarizedClientExchanges, 40)
        XCTAssertEqual(i.summarizedWarning,
                       "42 HTTP exchanges were only counted in http_summary records (past WEDJAT_HTTP_RECORDS a second):"
                       + " they have no HAR entry, trace slice or span; they are not in the OTLP duration histograms"
                       + " (no duration, or a summary without bucket counts, from an older wedjat);"
                       + " `wedjat report` counts them. Raise WEDJAT_HTTP_RECORDS to record every exchange")
        let har = try XCTUnwrap(try json(i.har.text)["log"] as? [String: Any])
        XCTAssertEqual((har["entries"] as? [Any])?.count, 1)
        XCTAssertEqual(har["comment"] as? String,
                       "40 client exchanges were only counted in http_summary records (past WEDJAT_HTTP_RECORDS a second) and have no entry.")
        let trace = try json(i.trace.text)
        XCTAssertEqual((trace["otherData"] as? [String: Any])?["wedjat_summarized_exchanges"] as? Int, 42)
        let metrics = try json(i.metrics.text)
        let points = firstMetricPoints(metrics)
        XCTAssertEqual(points?.map { $0["count"] as? String }, ["1"], "the http record only")
        XCTAssertEqual(i.traces.count, 1)
        // The fixture's summarized exchanges are a server's: not missing from a client's view.
        let fixtureHAR = try XCTUnwrap(try json(try input().har.text)["log"] as? [String: Any])
        XCTAssertEqual(fixtureHAR["comment"] as? String,
                       "3 server-side exchanges left out of the HAR (a client's view; they are in the trace and OTLP exports).")
    }

    /// HTTP/2 streams (issue 16): HAR `httpVersion` "HTTP/2" and the stream; OTLP
    /// `network.protocol.version` "2", gRPC spans named by their method with the `rpc.*`
    /// attributes and a client's non-OK status as error.type; the trace's args.
    func testHTTP2StreamsAndGRPCInEveryFormat() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        try dir.write("c.1.1.ndjson", Line.start(pid: 1, ts: 1000, exe: "/c") + """
            {"type":"http","ts":9000,"pid":1,"conn_id":1,"role":"client","scheme":"https","method":"GET","host":"h:8443","path":"/a","version":"HTTP/2","status":200,"request_index":0,"reused":false,"request_start_ts":5000,"request_end_ts":5000,"response_start_ts":8000,"response_end_ts":9000,"request_header_bytes":40,"response_header_bytes":30,"response_body_bytes":606,"headers":{"request.host":"h:8443"},"complete":true,"error":null,"stream_id":1}
            {"type":"http","ts":9500,"pid":1,"conn_id":1,"role":"client","scheme":"https","method":"POST","host":"h:8443","path":"/pkg.Svc/Get","version":"HTTP/2","status":200,"request_index":1,"reused":true,"request_start_ts":5100,"request_end_ts":5100,"response_start_ts":9400,"response_end_ts":9500,"headers":{},"complete":true,"error":null,"stream_id":3,"grpc":{"service":"pkg.Svc","method":"Get","status":5,"status_name":"NOT_FOUND","message":"REDACTED","request_messages":1,"response_messages":0}}

            """ + Line.end(pid: 1, ts: 30000))
        let i = try input(dir.path)
        let har = try XCTUnwrap(try json(i.har.text)["log"] as? [String: Any])
        let entries = try XCTUnwrap(har["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.map { ($0["request"] as? [String: Any])?["httpVersion"] as? String }, ["HTTP/2", "HTTP/2"])
        XCTAssertEqual(entries.map { ($0["response"] as? [String: Any])?["httpVersion"] as? String }, ["HTTP/2", "HTTP/2"])
        XCTAssertEqual(entries.map { $0["_stream_id"] as? Int }, [1, 3])
        XCTAssertEqual(entries.map { $0["connection"] as? String }, ["1-1", "1-1"], "streams of one connection")
        XCTAssertEqual((entries[1]["_grpc"] as? [String: Any])?["status_name"] as? String, "NOT_FOUND")

        let doc = try json(i.traces.text)
        let resources = try XCTUnwrap(doc["resourceSpans"] as? [[String: Any]])
        let spans = resources.flatMap { (($0["scopeSpans"] as? [[String: Any]])?.first?["spans"] as? [[String: Any]]) ?? [] }
        func attrs(_ o: [String: Any]) -> [String: Any] {
            var out: [String: Any] = [:]
            for kv in o["attributes"] as? [[String: Any]] ?? [] {
                let v = kv["value"] as? [String: Any] ?? [:]
                out[kv["key"] as? String ?? ""] = v["stringValue"] ?? v["intValue"]
            }
            return out
        }
        XCTAssertEqual(spans.map { $0["name"] as? String }, ["GET", "pkg.Svc/Get"])
        XCTAssertEqual(spans.map { attrs($0)["network.protocol.version"] as? String }, ["2", "2"])
        let g = attrs(spans[1])
        XCTAssertEqual(g["rpc.system"] as? String, "grpc")
        XCTAssertEqual(g["rpc.service"] as? String, "pkg.Svc")
        XCTAssertEqual(g["rpc.method"] as? String, "Get")
        XCTAssertEqual(g["rpc.grpc.status_code"] as? String, "5")
        XCTAssertEqual(g["error.type"] as? String, "NOT_FOUND")
        XCTAssertNil(attrs(spans[0])["error.type"])
        XCTAssertTrue(i.trace.text.contains("\"stream_id\":3"), "the trace's args carry the stream")
        XCTAssertTrue(i.trace.text.contains("\"grpc_status_name\":\"NOT_FOUND\""))
    }

    /// Summaries with exact bucket counts go into the OTLP histograms: on the data point of
    /// the records with the same attributes (counts, sum, min, max added), or a point of their
    /// own; one whose bounds differ from the histograms' stays out, and the warning says which.
    func testOTLPHistogramsTakeSummarizedExchangesFromTheirBucketCounts() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bounds = "[5000,10000,25000,50000,75000,100000,250000,500000,750000,1000000,2500000,5000000,7500000,10000000]"
        try dir.write("s.1.1.ndjson", Line.start(pid: 1, ts: 1000, exe: "/s") + """
            {"type":"http","ts":9000,"pid":1,"conn_id":1,"role":"server","method":"GET","host":"me:80","path":"/","version":"HTTP/1.1","status":200,"request_index":0,"request_start_ts":5000,"request_end_ts":5100,"response_start_ts":8000,"response_end_ts":9000,"headers":{}}
            {"type":"http_summary","ts":20000,"pid":1,"role":"server","scheme":"http","method":"GET","host":"me:80","version":"HTTP/1.1","status":200,"error":null,"count":5,"errors":0,"duration_us":{"count":5,"p50":3000,"p90":40000,"p99":40000,"max":40000,"min":2000,"sum":52000,"bounds":\(bounds),"buckets":[3,0,0,2,0,0,0,0,0,0,0,0,0,0,0]}}
            {"type":"http_summary","ts":20000,"pid":1,"role":"server","scheme":"http","method":"GET","host":"me:80","version":"HTTP/1.1","status":503,"error":null,"count":2,"errors":0,"duration_us":{"count":2,"p50":30,"p90":30,"p99":30,"max":30,"min":20,"sum":50,"bounds":\(bounds),"buckets":[2,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}}
            {"type":"http_summary","ts":20000,"pid":1,"role":"server","scheme":"http","method":"GET","host":"me:80","version":"HTTP/1.1","status":200,"error":null,"count":4,"errors":0,"duration_us":{"count":4,"p50":30,"p90":30,"p99":30,"max":30,"min":20,"sum":100,"bounds":[1000],"buckets":[4,0]}}

            """ + Line.end(pid: 1, ts: 30000))
        let i = try input(dir.path)
        XCTAssertEqual(i.summarizedExchanges, 11)
        XCTAssertEqual(i.summarizedInHistograms, 7)
        XCTAssertEqual(i.summarizedWarning,
                       "11 HTTP exchanges were only counted in http_summary records (past WEDJAT_HTTP_RECORDS a second):"
                       + " they have no HAR entry, trace slice or span; 7 of them are in the OTLP duration histograms, 4 are not"
                       + " (no duration, or a summary without bucket counts, from an older wedjat);"
                       + " `wedjat report` counts them. Raise WEDJAT_HTTP_RECORDS to record every exchange")
        let metrics = try json(i.metrics.text)
        let points = try XCTUnwrap(firstMetricPoints(metrics))
        func status(_ p: [String: Any]) -> Int? {
            ((p["attributes"] as? [[String: Any]])?.first { $0["key"] as? String == "http.response.status_code" }?["value"]
                as? [String: Any])?["intValue"].flatMap { Int("\($0)") }
        }
        XCTAssertEqual(points.map(status), [200, 503])
        // The record (4 ms, bucket 0) and the first summary share a point.
        XCTAssertEqual(points[0]["count"] as? String, "6")
        XCTAssertEqual((points[0]["bucketCounts"] as? [String])?.compactMap { Int($0) }, [4, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual((points[0]["sum"] as? NSNumber)?.doubleValue ?? 0, 0.056, accuracy: 1e-12)
        XCTAssertEqual((points[0]["min"] as? NSNumber)?.doubleValue, 0.002)
        XCTAssertEqual((points[0]["max"] as? NSNumber)?.doubleValue, 0.04)
        XCTAssertEqual(points[1]["count"] as? String, "2")
        XCTAssertEqual((points[1]["sum"] as? NSNumber)?.doubleValue ?? 0, 0.00005, accuracy: 1e-12)
        let errorType = (points[1]["attributes"] as? [[String: Any]])?.first { $0["key"] as? String == "error.type" }
        XCTAssertEqual((errorType?["value"] as? [String: Any])?["stringValue"] as? String, "503")
    }

    func testHAREarlyResponseEndsTheSending() throws {
        // A 417 sent while the client was still uploading: send stops at the response's start.
        let h = HTTPRecord(ts: 3000, pid: 1, role: "client", requestIndex: 1, requestStartTs: 1000, requestEndTs: 2500,
                           responseStartTs: 2000, responseEndTs: 3000)
        let t = try XCTUnwrap(ExchangeTimings(h, connection: nil, lookup: nil))
        XCTAssertEqual([t.send, t.wait, t.receive], [1000, 0, 1000])
        XCTAssertEqual(t.total, 2000)
        XCTAssertEqual(t.elapsed, 2000)
    }

    // MARK: Chrome trace

    private struct Event {
        var name: String, cat: String, ts: Int64, dur: Int64, pid: Int, tid: Int
        var end: Int64 { ts + dur }
    }

    private func traceEvents() throws -> (slices: [Event], names: [String: String]) {
        let doc = try json(try input().trace.text)
        let events = try XCTUnwrap(doc["traceEvents"] as? [[String: Any]])
        var slices: [Event] = []
        var names: [String: String] = [:]
        for e in events {
            let pid = e["pid"] as? Int ?? -1, tid = e["tid"] as? Int ?? -1
            switch e["ph"] as? String {
            case "X":
                slices.append(Event(name: e["name"] as? String ?? "", cat: e["cat"] as? String ?? "",
                                    ts: (e["ts"] as? NSNumber)?.int64Value ?? -1, dur: (e["dur"] as? NSNumber)?.int64Value ?? -1,
                                    pid: pid, tid: tid))
            case "M":
                let n = (e["args"] as? [String: Any])?["name"] as? String ?? ""
                names["\(e["name"] as? String ?? "")/\(pid)/\(tid)"] = n
            default:
                XCTFail("unexpected event \(e)")
            }
        }
        return (slices, names)
    }

    func testTraceHasEverySliceRelativeToTheEarliestRecord() throws {
        let (slices, names) = try traceEvents()
        var byCategory: [String: Int] = [:]
        for s in slices { byCategory[s.cat, default: 0] += 1 }
        // 5 connections + 2 connect phases (the refused one never connected) + 1 TLS; 7 exchanges;
        // 2 lookups; 2 stalls.
        XCTAssertEqual(byCategory, ["connection": 8, "http": 7, "dns": 2, "stall": 2])
        let lookup = try XCTUnwrap(slices.first { $0.name == "getaddrinfo api.local" })
        // Times are microseconds since the epoch; the first slice is 10 ms after the first record.
        XCTAssertEqual([lookup.ts - Self.t0, lookup.dur, Int64(lookup.pid), Int64(lookup.tid)], [10000, 1000, 7000, 7000])
        let loop = try XCTUnwrap(slices.first { $0.name == "stall (loop)" })
        XCTAssertEqual([loop.ts - Self.t0, loop.dur, Int64(loop.tid)], [50000, 300000, 7001])
        XCTAssertEqual(names["thread_name/7000/7001"], "worker")
        XCTAssertEqual(names["process_name/7100/7100"], "python3.11")
        XCTAssertEqual(slices.map(\.ts).min(), Self.t0 + 10000)
        let other = try XCTUnwrap(try json(try input().trace.text)["otherData"] as? [String: Any])
        XCTAssertEqual(other["wedjat_time_zero_us"] as? Int64, Self.t0, "the earliest time of the logs")
    }

    func testTraceSlicesNestOnEveryThread() throws {
        let (slices, _) = try traceEvents()
        var byThread: [String: [Event]] = [:]
        for s in slices { byThread["\(s.pid)/\(s.tid)", default: []].append(s) }
        for (thread, events) in byThread {
            var open: [Event] = []
            for e in events.sorted(by: { ($0.ts, -$0.dur) < ($1.ts, -$1.dur) }) {
                while let top = open.last, top.end <= e.ts { open.removeLast() }
                if let top = open.last {
                    XCTAssertLessThanOrEqual(e.end, top.end, "\(e.name) overlaps \(top.name) on \(thread) without nesting")
                }
                open.append(e)
            }
        }
    }

    func testTraceOverlapsMoveToAnotherTrack() throws {
        let (slices, names) = try traceEvents()
        // Pipelined: /b was sent before /a's response: the two overlap, on two HTTP tracks.
        let a = try XCTUnwrap(slices.first { $0.name == "GET /a" })
        let b = try XCTUnwrap(slices.first { $0.name == "GET /b" })
        XCTAssertNotEqual(a.tid, b.tid)
        XCTAssertEqual(Set([names["thread_name/7100/\(a.tid)"], names["thread_name/7100/\(b.tid)"]]), ["HTTP", "HTTP 2"])
        let conn = try XCTUnwrap(slices.first { $0.name == "tcp ← 10.0.0.9:50000" })
        XCTAssertTrue(names["thread_name/7100/\(conn.tid)"]?.hasPrefix("connections") == true)
        // The blocked stall overlaps its lookup by a few microseconds at each end.
        let stall = try XCTUnwrap(slices.first { $0.name == "stall in getaddrinfo" })
        XCTAssertNotEqual(stall.tid, 7000)
        XCTAssertEqual(names["thread_name/7000/\(stall.tid)"], "curl (overlapping 1)")
        // Phases and exchanges go inside their connection.
        let tls = try XCTUnwrap(slices.first { $0.name == "tls" })
        let https = try XCTUnwrap(slices.first { $0.name == "tcp → 10.0.0.5:443 (api.local)" })
        XCTAssertEqual(tls.tid, https.tid)
        XCTAssertEqual([tls.ts - Self.t0, tls.dur], [11600, 1900])
    }

    // MARK: OTLP

    func testOTLPSpansFollowTheSemanticConventions() throws {
        let doc = try json(try input().traces.text)
        let resources = try XCTUnwrap(doc["resourceSpans"] as? [[String: Any]])
        XCTAssertEqual(resources.count, 2)
        func attrs(_ o: [String: Any]?) -> [String: Any] {
            var out: [String: Any] = [:]
            for kv in o?["attributes"] as? [[String: Any]] ?? [] {
                let v = kv["value"] as? [String: Any] ?? [:]
                out[kv["key"] as? String ?? ""] = v["stringValue"] ?? v["intValue"] ?? v["arrayValue"]
            }
            return out
        }
        let curl = attrs(resources[0]["resource"] as? [String: Any])
        XCTAssertEqual(curl["service.name"] as? String, "curl")
        XCTAssertEqual(curl["process.pid"] as? String, "7000", "int64 as a string")
        XCTAssertEqual(curl["host.name"] as? String, "box")
        let spans = resources.flatMap { (($0["scopeSpans"] as? [[String: Any]])?.first?["spans"] as? [[String: Any]]) ?? [] }
        XCTAssertEqual(spans.count, 9)
        for s in spans {
            XCTAssertEqual((s["traceId"] as? String)?.count, 32)
            XCTAssertEqual((s["spanId"] as? String)?.count, 16)
        }
        XCTAssertEqual(Set(spans.compactMap { $0["traceId"] as? String }).count, 9)

        // Spans come in the order of the records: the lookup, then the exchanges as they ended.
        let first = try XCTUnwrap(spans.first { ($0["startTimeUnixNano"] as? String) == String((Self.t0 + 13800) * 1000) })
        XCTAssertEqual(first["name"] as? String, "GET")
        XCTAssertEqual(first["kind"] as? Int, 3)
        XCTAssertEqual(first["startTimeUnixNano"] as? String, String((Self.t0 + 13800) * 1000))
        XCTAssertEqual(first["endTimeUnixNano"] as? String, String((Self.t0 + 16300) * 1000))
        let a = attrs(first)
        XCTAssertEqual(a["url.full"] as? String, "https://api.local/v1/items?REDACTED")
        XCTAssertEqual(a["server.address"] as? String, "api.local")
        XCTAssertEqual(a["server.port"] as? String, "443")
        XCTAssertEqual(a["http.response.status_code"] as? String, "200")
        XCTAssertEqual(a["network.protocol.version"] as? String, "1.1")
        XCTAssertNil(first["status"])

        let missing = try XCTUnwrap(spans.first { attrs($0)["url.full"] as? String == "http://web.local:8080/missing?q=a%20b&x" })
        XCTAssertEqual(attrs(missing)["error.type"] as? String, "404")
        // An HTTP/1.0 request answered with HTTP/1.1: the exchange spoke 1.0.
        XCTAssertEqual(attrs(missing)["network.protocol.version"] as? String, "1.0")
        XCTAssertEqual((missing["status"] as? [String: Any])?["code"] as? Int, 2)

        let servers = spans.filter { $0["kind"] as? Int == 2 }
        XCTAssertEqual(servers.map { attrs($0)["url.path"] as? String }, ["/a", "/b", "/upload"])
        // A server's 4xx would not be an error; its 5xx is.
        XCTAssertEqual(servers.map { attrs($0)["error.type"] as? String }, [nil, nil, "500"])
        // The upload's record has no `version` (an older log) and no TLS: no version is said.
        XCTAssertEqual(servers.map { attrs($0)["network.protocol.version"] as? String }, ["1.1", "1.1", nil])

        let lookup = try XCTUnwrap(spans.first { attrs($0)["dns.question.name"] as? String == "nope.invalid" })
        XCTAssertEqual(attrs(lookup)["error.type"] as? String, "EAI_NONAME")
        XCTAssertEqual(lookup["startTimeUnixNano"] as? String, String((Self.t0 + 41000) * 1000))
    }

    func testOTLPRequestsAreBatched() throws {
        let batched = try input(spansPerRequest: 4)
        let docs = batched.requests.dropLast()   // the last one is the metrics
        XCTAssertEqual(docs.map(\.count), [4, 4, 1])
        func spanIds(_ text: String) throws -> [String] {
            let resources = try XCTUnwrap(try json(text)["resourceSpans"] as? [[String: Any]])
            return resources.flatMap { r in
                ((r["scopeSpans"] as? [[String: Any]])?.first?["spans"] as? [[String: Any]] ?? []).compactMap { $0["spanId"] as? String }
            }
        }
        // The second request holds curl's last spans and the server's first: two resources.
        XCTAssertEqual((try json(docs[1].text)["resourceSpans"] as? [Any])?.count, 2)
        XCTAssertEqual(try docs.flatMap { try spanIds($0.text) }, try spanIds(try input().traces.text))
        let stopped = try input(spansPerRequest: 4, stop: true)
        XCTAssertEqual(stopped.requests.count, 1, "emit returning false stops the export")
    }

    func testTextWithASinkHoldsOneChunk() {
        var flushed: [[UInt8]] = []
        var text = ExportText(sink: { flushed.append($0) })
        let part = String(repeating: "a", count: 700_000)
        text.append(part)
        text.append(part)
        XCTAssertEqual(flushed.map(\.count), [700_000], "the first chunk went out when the second did not fit")
        XCTAssertEqual(text.chunks.map(\.count), [700_000])
        text.flush()
        XCTAssertEqual(flushed.map(\.count), [700_000, 700_000])
        XCTAssertTrue(text.chunks.isEmpty)
    }

    /// OTLP attributes written in one pass (OTLPSpanWriter) are the bytes of their JSON tree,
    /// for every kind of value.
    func testOTLPAttributesWrittenInOnePassAreTheirJSON() {
        var a = OTLPExport.Attributes()
        a.add("http.request.method", "GET")
        a.add("url.full", "http://h/a?b=\"c\"\\d\u{1}é")
        a.add("server.port", Int64(8080))
        a.add("http.response.status_code", Int64(-1))
        a.add("ratio", double: 0.25)
        a.add("list", strings: ["x", "y\"z"])
        a.add("empty", strings: [])
        let w = OTLPSpanWriter()
        w.literal("{\"attributes\":")
        w.attributes(a)
        w.literal("}")
        let expected = ExportJSON.object([("attributes", a.json)]).renderedBytes()
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), String(decoding: expected, as: UTF8.self))
        XCTAssertEqual(String(decoding: expected, as: UTF8.self), #"{"attributes":[{"key":"http.request.method","value":{"stringValue":"GET"}},"#
            + #"{"key":"url.full","value":{"stringValue":"http://h/a?b=\"c\"\\d\u0001é"}},{"key":"server.port","value":{"intValue":"8080"}},"#
            + #"{"key":"http.response.status_code","value":{"intValue":"-1"}},{"key":"ratio","value":{"doubleValue":0.25}},"#
            + #"{"key":"list","value":{"arrayValue":{"values":[{"stringValue":"x"},{"stringValue":"y\"z"}]}}},"#
            + #"{"key":"empty","value":{"arrayValue":{"values":[]}}}]}"#)
    }

    func testOTLPIdsAreStableAcrossExports() throws {
        XCTAssertEqual(try input().traces.text, try input().traces.text)
    }

    func testOTLPHistogramsUseTheDefaultBuckets() throws {
        let doc = try json(try input().metrics.text)
        let resources = try XCTUnwrap(doc["resourceMetrics"] as? [[String: Any]])
        var points: [String: [[String: Any]]] = [:]
        for r in resources {
            for m in ((r["scopeMetrics"] as? [[String: Any]])?.first?["metrics"] as? [[String: Any]]) ?? [] {
                XCTAssertEqual(m["unit"] as? String, "s")
                let h = try XCTUnwrap(m["histogram"] as? [String: Any])
                XCTAssertEqual(h["aggregationTemporality"] as? Int, 2)
                points[m["name"] as? String ?? "", default: []] += h["dataPoints"] as? [[String: Any]] ?? []
            }
        }
        XCTAssertEqual(Set(points.keys), ["http.client.request.duration", "http.server.request.duration", "dns.lookup.duration"])
        for p in points.values.joined() {
            XCTAssertEqual((p["explicitBounds"] as? [NSNumber])?.map(\.doubleValue),
                           [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10])
            let buckets = (p["bucketCounts"] as? [String])?.compactMap { Int($0) } ?? []
            XCTAssertEqual(buckets.count, 15)
            XCTAssertEqual(String(buckets.reduce(0, +)), p["count"] as? String)
        }
        // 300 ms lands in (0.25, 0.5]; both GETs of the server share one point: 500 + 650 us.
        let slow = try XCTUnwrap(points["dns.lookup.duration"]?.first { ($0["sum"] as? NSNumber)?.doubleValue == 0.3 })
        XCTAssertEqual((slow["bucketCounts"] as? [String])?[7], "1")
        let gets = try XCTUnwrap(points["http.server.request.duration"]?.first)
        XCTAssertEqual(gets["count"] as? String, "2")
        XCTAssertEqual((gets["sum"] as? NSNumber)?.doubleValue, 0.00115)
        XCTAssertEqual((gets["min"] as? NSNumber)?.doubleValue, 0.0005)
        XCTAssertEqual((gets["max"] as? NSNumber)?.doubleValue, 0.00065)
    }

    func testOTLPSenderSaysWhenNothingListens() throws {
        // A port that was free a moment ago: bind, read it, close.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(fd, $0, len); _ = getsockname(fd, $0, &len) }
        }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        close(fd)
        XCTAssertThrowsError(try OTLPSender(endpoint: "http://127.0.0.1:\(port)", timeoutSeconds: 5).send(ExportText("{}"), signal: "traces")) {
            XCTAssertEqual(($0 as? OTLPSender.Failure)?.description,
                           "http://127.0.0.1:\(port)/v1/traces: connection refused (is a collector listening?)")
        }
        XCTAssertThrowsError(try OTLPSender(endpoint: "ftp://x").send(ExportText("{}"), signal: "traces"))
    }

    // MARK: building blocks

    func testJSONNumbersAndStringsAreExact() {
        XCTAssertEqual(ExportJSON.fixed(18800, 3).rendered(), "18.8")
        XCTAssertEqual(ExportJSON.fixed(-1500, 3).rendered(), "-1.5")
        XCTAssertEqual(ExportJSON.fixed(0, 3).rendered(), "0")
        XCTAssertEqual(ExportJSON.fixed(5, 6).rendered(), "0.000005")
        XCTAssertEqual(ExportJSON.string("a\"\\\n\u{1}é").rendered(), #""a\"\\\n\u0001é""#)
        XCTAssertEqual(ExportJSON.object([("b", .int(1)), ("a", .array([]))]).rendered(), #"{"b":1,"a":[]}"#)
    }

    /// The byte writer's numbers and strings are the tree's, to the byte.
    func testJSONBytesWritesWhatExportJSONRenders() {
        for (units, decimals) in [(0, 3), (1005, 3), (50, 3), (100, 3), (-1500, 3), (-5, 3), (18800, 3), (123456789, 6),
                                  (7, 0), (-7, 0), (Int64.max / 10, 6)] as [(Int64, Int)] {
            var w = JSONBytes()
            w.fixed(units, decimals)
            XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), ExportJSON.decimal(units, decimals), "\(units) / 10^\(decimals)")
        }
        for s in ["plain", "quote \" and \\ slash", "tab\tnew\nline", "\u{1}ctl", "ünï©ødé"] {
            var w = JSONBytes()
            w.string(s[...])
            var v = JSONBytes()
            v.string(s)
            XCTAssertEqual(w.bytes, v.bytes)
            XCTAssertEqual(String(decoding: v.bytes, as: UTF8.self), ExportJSON.string(s).rendered())
        }
    }

    /// The HAR entries' writer writes each value as JSONBytes writes it, to the byte: escapes,
    /// a name after its prefix, numbers, URLs in parts, `pid-conn` pairs, timestamps from its
    /// per-second cache (the layout around them is the entry template's: HARTemplateTests).
    func testHARWriterValuesAreJSONBytes() {
        func same(_ write: (HARWriter) -> Void, _ expected: (inout JSONBytes) -> Void, _ what: String) {
            let h = HARWriter(capacity: 16)
            var j = JSONBytes()
            write(h)
            expected(&j)
            XCTAssertEqual(String(decoding: h.take(), as: UTF8.self), String(decoding: j.bytes, as: UTF8.self), what)
            XCTAssertEqual(h.count, 0)
        }
        for s in ["plain", "quote \" and \\ tab\t\u{1} ünï", "", "é中😀\n"] {
            same({ $0.string(s) }, { $0.string(s) }, s)
            same({ $0.string("request." + s, droppingFirst: 8) }, { $0.string(s) }, "request." + s)
        }
        for i in [0, -1, 7, Int64.max, Int64.min + 1, 1_234_567] {
            same({ $0.int(i) }, { $0.int(i) }, "\(i)")
            same({ $0.fixed(i, 3) }, { $0.fixed(i, 3) }, "\(i) / 1000")
            same({ $0.string(4242, UInt8(ascii: "-"), i) }, { $0.string("4242-\(i)") }, "4242-\(i)")
        }
        same({ $0.url("https", "api\"x", "/p?q=1") }, { $0.string("https://api\"x/p?q=1") }, "url")
        var times = ISO8601Cache()
        for us in [Int64(1_763_782_800_000_001), 1_763_782_800_999_999, 1_763_782_801_000_000, 0, -1, 1_763_782_800_000_002] {
            same({ $0.iso8601(us, cache: &times) }, { $0.string(ExportTime.iso8601(us)) }, "\(us)")
        }
    }

    func testAddressesAndURLs() {
        XCTAssertEqual(AddressParts.split("[::1]:8080").host, "::1")
        XCTAssertEqual(AddressParts.split("[::1]:8080").port, 8080)
        XCTAssertEqual(AddressParts.split("::1").port, nil)
        XCTAssertEqual(AddressParts.split("api.local").host, "api.local")
        XCTAssertEqual(HTTPRecord(ts: 0, pid: 1, role: "client", method: "CONNECT", host: "proxy:3128", path: "example.org:443").url,
                       "http://example.org:443")
        XCTAssertEqual(HTTPRecord(ts: 0, pid: 1, role: "client", host: nil, path: "/x", peer: "10.0.0.1:81").url, "http://10.0.0.1:81/x")
        XCTAssertEqual(HTTPRecord(ts: 0, pid: 1, role: "client", host: "h", path: "http://other/y").url, "http://other/y")
        XCTAssertEqual(ExportTime.iso8601(1_763_782_800_000_001), "2025-11-22T03:40:00.000001Z")
    }
}
