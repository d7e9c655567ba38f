import XCTest
import WedjatAnalysis
@testable import WedjatLive

/// `wedjat ship` against an in-process collector: every span exactly once across failures,
/// restarts between a batch's two requests, new segments; checkpoints and `.done` files.
final class ShipperTests: XCTestCase {
    var dir: LiveTempDir!

    override func setUpWithError() throws { dir = try LiveTempDir() }
    override func tearDown() { dir.remove() }

    /// Decodes what it is sent (gzip, protobuf) and keeps span ids and histogram counts.
    final class Collector {
        var spanIDs: [String] = []
        var histogramCounts: [String: UInt64] = [:]
        var requests: [String] = []
        /// Answers to give, in order, before accepting: nil = refuse the connection, a status = that answer.
        var failures: [Int?] = []
        /// Fail every request for this signal (restart tests).
        var failSignal: String?
        /// The answer's body for traces requests (an ExportTraceServiceResponse).
        var tracesAnswer = Data()

        func transport(_ body: Data, _ signal: String, _ type: String, _ encoding: String?) throws -> OTLPSender.Answer {
            if signal == failSignal { throw OTLPSender.Failure(description: "down on purpose") }
            if !failures.isEmpty {
                let f = failures.removeFirst()
                throw OTLPSender.Failure(description: "failure \(f.map(String.init) ?? "refused")", status: f)
            }
            requests.append(signal)
            XCTAssertEqual(type, "application/x-protobuf")
            XCTAssertEqual(encoding, "gzip")
            let raw = try Gzip.decompress([UInt8](body))
            let request = try ProtoReader(raw)
            for rs in request.all(1).compactMap(\.message) {
                for scope in rs.all(2).compactMap(\.message) {
                    if signal == "traces" {
                        for span in scope.all(2).compactMap(\.message) {
                            spanIDs.append(span.first(2)!.bytesValue!.map { String(format: "%02x", $0) }.joined())
                        }
                    } else {
                        for metric in scope.all(2).compactMap(\.message) {
                            guard let h = metric.first(9)?.message else { continue }
                            for p in h.all(1).compactMap(\.message) {
                                histogramCounts[metric.first(1)!.string!, default: 0] += p.first(4)!.uint64!
                            }
                        }
                    }
                }
            }
            return OTLPSender.Answer(url: "test", status: 200, partialSuccess: nil, body: signal == "traces" ? tracesAnswer : Data())
        }
    }

    private func shipper(_ c: Collector, spansPerRequest: Int = 1000) -> Shipper {
        var o = Shipper.Options(endpoint: "http://collector.test")
        o.spansPerRequest = spansPerRequest
        return Shipper(directory: dir.path, options: o, transport: c.transport, say: { _ in })
    }

    /// Steps until caught up, moving the clock past every backoff.
    @discardableResult
    private func drain(_ s: Shipper, from now: inout Date, steps: Int = 200) -> Int {
        var n = 0
        while n < steps {
            n += 1
            now = now.addingTimeInterval(1)
            if s.step(now: now) == .idle && s.step(now: now) == .idle { break }
        }
        return n
    }

    /// A live log of `exchanges` server exchanges in 3 segments, and its expected span ids.
    private func writeLog(exchanges: Int = 30) -> [String] {
        let name = "server.\(LiveLine.pid).1.ndjson"
        var lines: [[String]] = [[], [], []]
        for i in 0 ..< exchanges {
            lines[i * 3 / exchanges].append(LiveLine.http(ts: 1_000_000_000_000_000 + Int64(i) * 1000, conn: i, index: 0))
        }
        for seg in 0 ..< 3 {
            let file = seg == 0 ? name : "server.\(LiveLine.pid).1.\(seg).ndjson"
            var text = LiveLine.start(name, dir: dir.path, segment: seg) + lines[seg].joined()
            if seg < 2 { text += LiveLine.segmentEnd(ts: 1_000_000_001_000_000, next: dir.path + "/server.\(LiveLine.pid).1.\(seg + 1).ndjson") }
            dir.append(file, text)
        }
        return (0 ..< exchanges).map { i in
            var image = ProcessLog(path: name)
            image.start = ProcessStart(ts: 1_000_000_000_000_000, pid: LiveLine.pid)
            return OTLPExport.SpanIDs(image: image, identity: "http/server/\(i)/0").spanId
        }
    }

    func testEverySpanOnceAcrossSegmentsThenDone() throws {
        let expected = writeLog()
        let c = Collector()
        let s = shipper(c, spansPerRequest: 7)
        try s.prepare()
        var now = Date()
        drain(s, from: &now)
        XCTAssertEqual(c.spanIDs.sorted(), expected.sorted())
        XCTAssertEqual(c.histogramCounts["http.server.request.duration"], 30)
        // Segments 0 and 1 ended with segment_end: done. Segment 2 is the live one.
        let state = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/.ship").sorted()
        XCTAssertEqual(state, ["server.\(LiveLine.pid).1.1.ndjson.done", "server.\(LiveLine.pid).1.2.ndjson.pos",
                               "server.\(LiveLine.pid).1.ndjson.done"])
        // It grows; then the process ends: the rest goes, and the segment is done 2 s later.
        dir.append("server.\(LiveLine.pid).1.2.ndjson", LiveLine.http(ts: 1_000_000_002_000_000, conn: 99) + LiveLine.end(ts: 1_000_000_003_000_000))
        drain(s, from: &now)
        XCTAssertEqual(c.spanIDs.count, 31)
        XCTAssertEqual(s.openSegments, 1, "a process_end may still be followed by a line (exec_failed)")
        now = now.addingTimeInterval(3)
        _ = s.step(now: now)
        XCTAssertEqual(s.openSegments, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.path + "/.ship/server.\(LiveLine.pid).1.2.ndjson.done"))
        XCTAssertEqual(s.stats.segmentsDone, 3)
        XCTAssertEqual(s.stats.spans, 31)
    }

    func testCollectorDownThenBackLosesAndRepeatsNothing() throws {
        let expected = writeLog()
        let c = Collector()
        c.failures = [nil, nil, 503, 429, nil]
        let s = shipper(c, spansPerRequest: 5)
        try s.prepare()
        var now = Date()
        XCTAssertEqual(s.step(now: now), .waiting, "the first request failed")
        XCTAssertEqual(s.step(now: now), .waiting, "and nothing is tried before the backoff")
        drain(s, from: &now)
        XCTAssertEqual(c.spanIDs.sorted(), expected.sorted())
        XCTAssertEqual(Set(c.spanIDs).count, c.spanIDs.count)
        XCTAssertEqual(s.stats.failedAttempts, 5)
        XCTAssertEqual(c.histogramCounts["http.server.request.duration"], 30)
    }

    func testRestartBetweenTracesAndMetricsSendsEachOnce() throws {
        let expected = writeLog()
        let c = Collector()
        c.failSignal = "metrics"      // spans go, metrics fail: the checkpoint says "traces sent"
        var now = Date()
        let first = shipper(c, spansPerRequest: 4)
        try first.prepare()
        for _ in 0 ..< 5 { now = now.addingTimeInterval(60); _ = first.step(now: now) }
        XCTAssertEqual(c.spanIDs.count, 4, "one batch's spans went, its metrics did not")
        let pos = try String(contentsOfFile: dir.path + "/.ship/server.\(LiveLine.pid).1.ndjson.pos", encoding: .utf8)
        XCTAssertTrue(pos.contains("\"traces_sent\":true"), pos)
        // "kill -9": a new shipper on the same state.
        c.failSignal = nil
        let second = shipper(c, spansPerRequest: 4)
        drain(second, from: &now)
        XCTAssertEqual(c.spanIDs.sorted(), expected.sorted(), "nothing twice, nothing lost")
        XCTAssertEqual(c.histogramCounts["http.server.request.duration"], 30)
    }

    func testRefusedForGoodIsSkippedAndCounted() throws {
        _ = writeLog(exchanges: 6)
        let c = Collector()
        c.failures = [400]
        let s = shipper(c, spansPerRequest: 1000)
        try s.prepare()
        var now = Date()
        drain(s, from: &now)
        XCTAssertEqual(s.stats.rejectedRequests, 1)
        XCTAssertEqual(s.stats.rejectedSpans, 2, "segment 0's two spans")
        XCTAssertEqual(c.spanIDs.count, 4)
        XCTAssertTrue(s.summary().joined().contains("2 spans and 0 data points the collector refused"), s.summary().joined())
    }

    func testPartialSuccessIsCountedAndSaid() throws {
        _ = writeLog(exchanges: 3)
        let c = Collector()
        var answer = ProtoWriter()
        answer.message(1) { partial in           // ExportTraceServiceResponse.partial_success
            partial.int64(1, 1)                  // rejected_spans
            partial.string(2, "span too old")    // error_message
        }
        c.tracesAnswer = Data(answer.bytes)
        var said: [String] = []
        let s = Shipper(directory: dir.path, options: Shipper.Options(endpoint: "x"), transport: c.transport, say: { said.append($0) })
        var now = Date()
        drain(s, from: &now)
        XCTAssertEqual(c.spanIDs.count, 3)
        XCTAssertEqual(s.stats.rejectedSpans, 3, "one a request, three requests")
        XCTAssertTrue(said.contains { $0.contains("rejected 1: span too old") }, "\(said)")
    }

    func testUnwritableStateDoesNotResendWithinTheRun() throws {
        let expected = writeLog(exchanges: 9)
        // .ship is a file: no checkpoint can be written.
        try "not a directory".write(toFile: dir.path + "/.ship", atomically: true, encoding: .utf8)
        let c = Collector()
        var said: [String] = []
        let s = Shipper(directory: dir.path, options: Shipper.Options(endpoint: "x"), transport: c.transport, say: { said.append($0) })
        var now = Date()
        drain(s, from: &now)
        XCTAssertEqual(c.spanIDs.sorted(), expected.sorted(), "each once")
        XCTAssertGreaterThan(s.stats.checkpointFailures, 0)
        XCTAssertEqual(said.filter { $0.contains("a restart would send again") }.count, 1, "said once: \(said)")
    }

    func testDamagedCheckpointSendsTheSegmentAgainAndSaysSo() throws {
        _ = writeLog(exchanges: 3)
        try FileManager.default.createDirectory(atPath: dir.path + "/.ship", withIntermediateDirectories: true)
        try "garbage".write(toFile: dir.path + "/.ship/server.\(LiveLine.pid).1.ndjson.pos", atomically: true, encoding: .utf8)
        let c = Collector()
        var said: [String] = []
        let s = Shipper(directory: dir.path, options: Shipper.Options(endpoint: "x"), transport: c.transport, say: { said.append($0) })
        var now = Date()
        drain(s, from: &now)
        XCTAssertEqual(c.spanIDs.count, 3)
        XCTAssertTrue(said.contains { $0.contains("not a checkpoint") }, "\(said)")
    }

    func testCheckpointRoundTripAndPrune() throws {
        let c = ShipCheckpoint(offset: 10, intervalStartTs: 5, batchEnd: 20, tracesSent: true, ended: "segment_end")
        XCTAssertEqual(ShipCheckpoint(json: Data(c.json.utf8)), c)
        XCTAssertNil(ShipCheckpoint(json: Data(#"{"offset":30,"batch_end":20}"#.utf8)), "a batch cannot end before its start")
        let state = ShipState(logDirectory: dir.path)
        try state.prepare()
        try state.save(c, for: "a.ndjson")
        try state.markDone("b.ndjson", c)
        XCTAssertTrue(state.isDone("b.ndjson"))
        XCTAssertEqual(state.prune(present: ["b.ndjson"]), 1, "a.ndjson is gone from the directory")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state.dir), ["b.ndjson.done"])
    }
}
