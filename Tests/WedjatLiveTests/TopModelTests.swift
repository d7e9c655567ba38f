import XCTest
@testable import WedjatLive

/// `wedjat top`'s aggregation and rendering on logs written as the test goes.
final class TopModelTests: XCTestCase {
    var dir: LiveTempDir!
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    let ts0: Int64 = 1_000_000_000_000_000
    var logName: String { "server.\(LiveLine.pid).1.ndjson" }

    override func setUpWithError() throws { dir = try LiveTempDir() }
    override func tearDown() { dir.remove() }

    private func exchanges(_ n: Int, from: Int64, duration: (Int) -> Int64 = { _ in 1000 }, status: (Int) -> Int = { _ in 200 },
                           host: String = "127.0.0.1:8080") -> String {
        (0 ..< n).map { LiveLine.http(ts: from + Int64($0), duration: duration($0), status: status($0), conn: $0, host: host) }.joined()
    }

    func testRatesPercentilesAndHostsOfTheInterval() throws {
        dir.append(logName, LiveLine.start(logName, dir: dir.path))
        let model = TopModel(directory: dir.path, now: t0, fromStart: true)
        model.poll(now: t0)
        _ = model.snapshot(now: t0)
        // 200 exchanges in 2 s: 10 of them 404, durations 1..200 ms; 50 to another host.
        dir.append(logName, exchanges(200, from: ts0, duration: { Int64($0 + 1) * 1000 }, status: { $0 % 20 == 0 ? 404 : 200 })
                   + exchanges(50, from: ts0 + 1000, host: "api.local") + LiveLine.sample(ts: ts0 + 2_000_000, cpu: 73.5, busy: 61)
                   + LiveLine.stall(ts: ts0 + 2_000_000))
        model.poll(now: t0 + 2)
        let s = model.snapshot(now: t0 + 2)
        XCTAssertEqual(s.seconds, 2)
        let p = try XCTUnwrap(s.processes.first)
        XCTAssertEqual(s.processes.count, 1)
        XCTAssertEqual(p.pid, LiveLine.pid)
        XCTAssertEqual(p.program, "server")
        XCTAssertEqual(p.rates.requestsPerS, 125)
        XCTAssertFalse(p.rates.estimated)
        XCTAssertEqual(p.rates.errorPct ?? -1, 4, accuracy: 1e-9, "10 of 250")
        XCTAssertEqual(p.cpuPct, 73.5)
        XCTAssertEqual(p.loopBusyPct, 61)
        XCTAssertEqual(p.openConnections, 7)
        XCTAssertEqual(p.rssBytes, 10 << 20)
        XCTAssertEqual(p.stalls, 1)
        XCTAssertEqual(s.newStalls.map(\.detail), ["after epoll_wait, 100% on CPU"])
        let main = try XCTUnwrap(p.hosts.first { $0.label == "server ← 127.0.0.1:8080" })
        XCTAssertEqual(main.rates.requestsPerS, 100)
        XCTAssertEqual(main.rates.errorPct ?? -1, 5, accuracy: 1e-9)
        // HdrHistogram's 3 significant digits.
        XCTAssertEqual(Double(main.rates.p50Us ?? 0), 100_000, accuracy: 100)
        XCTAssertEqual(Double(main.rates.p99Us ?? 0), 198_000, accuracy: 198)
        XCTAssertEqual(p.hosts.first { $0.label == "server ← api.local" }?.rates.requestsPerS, 25)

        // The next interval starts from zero; the sample stays (the latest one).
        model.poll(now: t0 + 3)
        let next = model.snapshot(now: t0 + 3)
        XCTAssertEqual(next.processes.first?.rates.requestsPerS, 0)
        XCTAssertEqual(next.processes.first?.stalls, 0)
        XCTAssertEqual(next.processes.first?.stallsTotal, 1)
        XCTAssertEqual(next.processes.first?.cpuPct, 73.5)
    }

    func testSummarizedExchangesAreAnEstimatedRate() throws {
        dir.append(logName, LiveLine.start(logName, dir: dir.path))
        let model = TopModel(directory: dir.path, now: t0, fromStart: true)
        model.poll(now: t0)
        _ = model.snapshot(now: t0)
        // Two summary flushes 10 s apart; the second counts 20,000 exchanges: 2,000 a second.
        dir.append(logName, LiveLine.summary(ts: ts0, count: 5000, first: ts0 - 9_000_000, last: ts0)
                   + LiveLine.summary(ts: ts0 + 10_000_000, count: 20000, first: ts0 + 1, last: ts0 + 9_999_000)
                   + exchanges(10, from: ts0 + 10_000_001))
        model.poll(now: t0 + 1)
        let p = try XCTUnwrap(model.snapshot(now: t0 + 1).processes.first)
        XCTAssertEqual(p.rates.requestsPerS, 2010, "10 records a second and 20,000 over 10 s")
        XCTAssertTrue(p.rates.estimated)
        XCTAssertTrue(TopView(directory: dir.path).screen(model.snapshot(now: t0 + 2), width: 120, height: 30)
            .joined(separator: "\n").contains("~2000"), "shown with ~")
        // Two windows (20 s) later without a new flush, the estimate is dropped.
        model.poll(now: t0 + 25)
        XCTAssertEqual(model.snapshot(now: t0 + 25).processes.first?.rates.requestsPerS, 0)
    }

    func testNewSegmentsContinueTheProcessAndEndedProcessesGo() throws {
        dir.append(logName, LiveLine.start(logName, dir: dir.path, segment: 0) + exchanges(10, from: ts0)
                   + LiveLine.segmentEnd(ts: ts0 + 1, next: dir.path + "/server.\(LiveLine.pid).1.1.ndjson"))
        let model = TopModel(directory: dir.path, now: t0, fromStart: true)
        model.poll(now: t0)
        XCTAssertEqual(model.snapshot(now: t0 + 1).processes.first?.rates.requestsPerS, 10)
        dir.append("server.\(LiveLine.pid).1.1.ndjson", LiveLine.start(logName, dir: dir.path, segment: 1) + exchanges(20, from: ts0 + 100))
        model.poll(now: t0 + 2)
        var s = model.snapshot(now: t0 + 2)
        XCTAssertEqual(s.processes.count, 1, "one process, two segments")
        XCTAssertEqual(s.processes.first?.rates.requestsPerS, 20)
        dir.append("server.\(LiveLine.pid).1.1.ndjson", LiveLine.end(ts: ts0 + 200))
        model.poll(now: t0 + 3)
        s = model.snapshot(now: t0 + 3)
        XCTAssertEqual(s.processes.first?.ended, true)
        model.poll(now: t0 + 10)
        XCTAssertEqual(model.snapshot(now: t0 + 10).processes.count, 0, "gone 5 s after its end")
    }

    func testByDefaultOnlyWhatIsAppendedCountsAndEndedLogsAreLeftOut() throws {
        dir.append(logName, LiveLine.start(logName, dir: dir.path) + exchanges(500, from: ts0))
        dir.append("done.\(LiveLine.pid).2.ndjson", LiveLine.start("done.\(LiveLine.pid).2.ndjson", dir: dir.path, exe: "/bin/done")
                   + exchanges(5, from: ts0) + LiveLine.end(ts: ts0 + 10))
        let model = TopModel(directory: dir.path, now: t0)
        model.poll(now: t0)
        XCTAssertEqual(model.processCount, 1, "the ended process is not followed")
        dir.append(logName, exchanges(3, from: ts0 + 1000))
        model.poll(now: t0 + 1)
        XCTAssertEqual(model.snapshot(now: t0 + 1).processes.first?.rates.requestsPerS, 3)
    }

    func testViewSortsAndPrintsLines() throws {
        dir.append(logName, LiveLine.start(logName, dir: dir.path))
        let other = "other.\(LiveLine.pid).2.ndjson"
        dir.append(other, LiveLine.start(other, dir: dir.path, ts: ts0 + 5, exe: "/usr/bin/aaa"))
        let model = TopModel(directory: dir.path, now: t0, fromStart: true)
        model.poll(now: t0)
        _ = model.snapshot(now: t0)
        dir.append(logName, exchanges(3, from: ts0))
        dir.append(other, exchanges(30, from: ts0) + LiveLine.sample(ts: ts0, cpu: 5))
        model.poll(now: t0 + 1)
        let s = model.snapshot(now: t0 + 1)
        var view = TopView(directory: dir.path)
        XCTAssertEqual(view.sorted(s.processes).map(\.program), ["aaa", "server"], "by requests")
        view.sort = .name
        XCTAssertEqual(view.sorted(s.processes).map(\.program), ["aaa", "server"])
        view.sort = .cpu
        XCTAssertEqual(view.sorted(s.processes).map(\.program), ["aaa", "server"], "no sample sorts last")
        let screen = view.screen(s, width: 200, height: 20)
        XCTAssertTrue(screen[0].contains("2 processes"), screen[0])
        XCTAssertTrue(screen[0].hasSuffix("33.0 req/s"), screen[0])
        XCTAssertTrue(screen.contains { $0.contains("aaa") && $0.contains("30.0") }, screen.joined(separator: "\n"))
        XCTAssertTrue(view.screen(s, width: 20, height: 3).allSatisfy { $0.count <= 20 })
        let lines = view.lines(s)
        XCTAssertTrue(lines.contains { $0.contains("pid=\(LiveLine.pid) program=aaa req_s=30.0 err_pct=0.00") }, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.contains(#"host="server ← 127.0.0.1:8080" req_s=3.0"#) }, lines.joined(separator: "\n"))
        XCTAssertEqual(TopView.SortKey(letter: "l"), .p99)
    }
}
