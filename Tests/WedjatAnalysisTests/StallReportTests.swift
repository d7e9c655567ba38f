import Foundation
import XCTest
@testable import WedjatAnalysis
@testable import WedjatSymbols

/// Lines of a stall log, as the library writes them (docs/LOG_FORMAT.md).
enum StallLog {
    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self) + "\n"
    }

    static func hex(_ v: UInt64) -> String { "0x" + String(v, radix: 16) }

    static func start(pid: Int, ts: Int64, exe: String, stallMs: Int? = 250) throws -> String {
        var config: [String: Any] = ["sample_ms": 1000]
        if let stallMs { config["stall_ms"] = stallMs }
        return try json(["type": "process_start", "schema": 1, "ts": ts, "pid": pid, "tid": pid, "exe": exe,
                         "argv": [(exe as NSString).lastPathComponent], "config": config])
    }

    static func modules(pid: Int, ts: Int64, gen: Int = 1, _ modules: [ModuleMapping]) throws -> String {
        try json(["type": "modules", "ts": ts, "pid": pid, "gen": gen, "modules": modules.map {
            ["path": $0.path, "base": hex($0.base), "lo": hex($0.lo), "hi": hex($0.hi), "build_id": $0.buildId]
        }])
    }

    static func stall(pid: Int, tid: Int, thread: String, kind: String = "loop", startTs: Int64, durationUs: Int64,
                      cpuUs: Int64, gen: Int = 1, samples: [[UInt64]], fields: [String: Any] = [:]) throws -> String {
        var o: [String: Any] = [
            "type": "stall", "ts": startTs + durationUs, "pid": pid, "tid": tid, "thread": thread, "kind": kind,
            "start_ts": startTs, "end_ts": startTs + durationUs, "duration_us": durationUs, "cpu_us": cpuUs,
            "threshold_us": 250_000, "modules_gen": gen, "samples_lost": 0,
            "samples": samples.enumerated().map { i, frames in
                // backtrace()'s frames are all return addresses.
                ["ts": startTs + 250_000 * Int64(i + 1), "cpu_us": cpuUs, "frames": frames.map(hex),
                 "interrupted": false] as [String: Any]
            },
        ]
        if kind == "loop" { o["after"] = "epoll_wait" }
        o.merge(fields) { _, new in new }
        return try json(o)
    }

    static func end(pid: Int, ts: Int64) throws -> String {
        try json(["type": "process_end", "ts": ts, "pid": pid, "tid": pid, "reason": "exit", "exit_status": 0])
    }
}

final class StallReportTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    static let fixtureDir = testsDir + "/Fixtures/stalls"
    static let goldenDir = testsDir + "/Golden"

    func testDecodesStallModulesAndLoops() throws {
        let t0: Int64 = 1_763_782_510_000_000
        let mapping = ModuleMapping(path: "/opt/x/server", base: 0x5000, lo: 0x5000, hi: 0x9000, buildId: "AB01")
        let file = try dir.write("server.7.1.ndjson", try StallLog.start(pid: 7, ts: t0, exe: "/opt/x/server")
            + StallLog.modules(pid: 7, ts: t0 + 1, [mapping])
            + StallLog.stall(pid: 7, tid: 9, thread: "io", kind: "blocked", startTs: t0 + 10, durationUs: 612_000,
                             cpuUs: 40, samples: [[0x7123, 0x5001]],
                             fields: ["call": "connect", "fd": 7, "peer": "10.0.0.9:443", "host": "api.example.com",
                                      "result": "ETIMEDOUT", "ongoing": true, "samples_lost": 2])
            + #"{"type":"sample","ts":\#(t0 + 1_000_000),"pid":7,"interval_us":1000000,"loops":[{"tid":7,"thread":"main","iterations":1843,"per_s":1843.0,"busy_pct":12.5,"max_busy_us":5100}]}"#
            + "\n")
        let a = try RunAnalysis.load(paths: [file])
        XCTAssertEqual(a.readerWarnings, [])
        XCTAssertEqual(a.logs[0].recordCounts["stall"], 1)
        XCTAssertEqual(a.logs[0].modules[1]?.modules, [mapping])
        XCTAssertEqual(a.logs[0].modules[1]?.modules[0].buildId, "ab01", "build-ids compare in lowercase")
        let s = try XCTUnwrap(a.stalls.longest.first?.stall)
        XCTAssertEqual(s, StallRecord(ts: t0 + 612_010, pid: 7, tid: 9, thread: "io", kind: "blocked", startTs: t0 + 10,
                                      endTs: t0 + 612_010, durationUs: 612_000, cpuUs: 40, call: "connect", fd: 7,
                                      peer: "10.0.0.9:443", host: "api.example.com", result: "ETIMEDOUT",
                                      thresholdUs: 250_000, modulesGen: 1,
                                      samples: [.init(ts: t0 + 250_010, cpuUs: 40, frames: [0x7123, 0x5001], interrupted: false)],
                                      samplesLost: 2, ongoing: true))
        let loop = try XCTUnwrap(a.logs[0].vitals.loops.threads[7])
        XCTAssertEqual(loop.iterations, 1843)
        XCTAssertEqual(loop.perS, 1843)
        XCTAssertEqual(loop.busyPct, 12.5)
        XCTAssertEqual(loop.maxBusyUs, 5100)
    }

    /// A bad address is the reader's warning, with file and line; the rest of the file is read.
    func testBadAddressesAreWarningsWithTheirLine() throws {
        let t0: Int64 = 1_763_782_510_000_000
        let file = try dir.write("server.7.1.ndjson", try StallLog.start(pid: 7, ts: t0, exe: "/opt/x/server")
            + #"{"type":"stall","ts":\#(t0 + 5),"pid":7,"kind":"loop","duration_us":300000,"samples":[{"frames":["7f00"]}]}"#
            + "\n"
            + #"{"type":"modules","ts":\#(t0 + 6),"pid":7,"gen":1,"modules":[{"path":"/x","base":12,"lo":"0x0","hi":"0x1"}]}"#
            + "\n"
            + #"{"type":"stall","ts":\#(t0 + 7),"pid":7,"kind":"loop","samples":[]}"# + "\n"
            + StallLog.end(pid: 7, ts: t0 + 10))
        let a = try RunAnalysis.load(paths: [file])
        XCTAssertEqual(a.readerWarnings.map(\.description), [
            file + #":2: stall: field "samples.frames" must be an array of hex address strings ("0x..."); record skipped"#,
            file + #":3: modules: field "modules.base" must be a hex address string ("0x..."); record skipped"#,
            file + #":4: stall: field "duration_us" must be an integer; record skipped"#,
        ])
        XCTAssertEqual(a.stalls.count, 0)
        XCTAssertNotNil(a.logs[0].end)
    }

    func testOnlyTheLongestAreKept() {
        var c = StallCollection(keep: 3)
        let durations: [Int64] = [300, 900, 100, 700, 500, 800, 200, 600, 400, 1000]
        for (i, d) in durations.enumerated() {
            c.add(StallRecord(ts: Int64(i), pid: 1, tid: i, kind: "loop", startTs: Int64(i), durationUs: d), log: 0)
        }
        XCTAssertEqual(c.count, 10)
        XCTAssertEqual(c.totalUs, 5500)
        XCTAssertEqual(c.longest.map(\.stall.durationUs), [1000, 900, 800])
        XCTAssertEqual(c.notKept, 7)
        XCTAssertEqual(c.countByKind, ["loop": 10])
    }

    /// A program that keeps changing its libraries writes a `modules` record per stall: the log
    /// keeps the newest and those its kept stalls use.
    func testModulesRecordsAreBounded() {
        var a = RunAnalysis()
        let m = [ModuleMapping(path: "/x", base: 0, lo: 0x1000, hi: 0x2000, buildId: "")]
        a.add(.processStart(ProcessStart(ts: 0, pid: 1)), file: "f")
        for gen in 1 ... 200 {
            a.add(.modules(ModulesRecord(ts: Int64(gen), pid: 1, gen: gen, modules: m)), file: "f")
            if gen == 5 {
                a.add(.stall(StallRecord(ts: 5, pid: 1, kind: "loop", durationUs: 300_000, modulesGen: 5)), file: "f")
            }
        }
        XCTAssertLessThanOrEqual(a.logs[0].modules.count, StallCollection.modulesPerLog + 1)
        XCTAssertNotNil(a.logs[0].modules[5], "used by a kept stall")
        XCTAssertNotNil(a.logs[0].modules[200], "the newest")
    }

    /// A real program's stack (Fixtures/symbols/stack.c, compiled now) in a synthetic stall log:
    /// the report names the functions and lines, groups the same stacks, tells on- from off-CPU.
    func testReportSymbolizesAndGroups() throws {
        let binary = try StackFixture.build("stack.c", into: dir.path, name: "server")
        let fx = try StackFixture.run(binary)
        let t0: Int64 = 1_763_782_510_000_000
        let other = Array(fx.frames.dropFirst(2))   // a different stack: from middle outwards
        var log = try StallLog.start(pid: 42, ts: t0, exe: binary) + StallLog.modules(pid: 42, ts: t0 + 1, fx.modules)
        log += try StallLog.stall(pid: 42, tid: 42, thread: "server", startTs: t0 + 100_000, durationUs: 1_204_000,
                                  cpuUs: 1_201_000, samples: [fx.frames, fx.frames, other])
        log += try StallLog.stall(pid: 42, tid: 42, thread: "server", startTs: t0 + 2_000_000, durationUs: 400_000,
                                  cpuUs: 399_100, samples: [fx.frames])
        log += try StallLog.stall(pid: 42, tid: 43, thread: "worker", kind: "blocked", startTs: t0 + 3_000_000,
                                  durationUs: 612_000, cpuUs: 40, samples: [other],
                                  fields: ["call": "connect", "fd": 7, "peer": "10.0.0.9:443", "host": "api.example.com",
                                           "result": "ETIMEDOUT"])
        log += try StallLog.end(pid: 42, ts: t0 + 5_000_000)
        let report = Report(analysis: try RunAnalysis.load(paths: [try dir.write("server.42.1.ndjson", log)]))
        let s = try XCTUnwrap(report.stalls)

        XCTAssertEqual(s.count, 3)
        XCTAssertEqual(s.totalUs, 1_204_000 + 400_000 + 612_000)
        XCTAssertEqual(s.thresholdUs, 250_000)
        XCTAssertEqual(s.byKind.map(\.name), ["loop", "blocked"])
        XCTAssertEqual(s.stalls.map(\.durationUs), [1_204_000, 612_000, 400_000])
        XCTAssertEqual(s.stalls.map(\.onCpuPct), [99.8, 0, 99.8])
        XCTAssertEqual(s.stalls[0].samples, 3)
        XCTAssertEqual(s.stalls[0].samplesDiffering, 1)
        XCTAssertEqual(s.stalls[0].stack.prefix(5).map(\.function), ["fixture_print_stack", "inner", "middle", "outer", "main"])
        XCTAssertEqual(s.stalls[0].stack[2].line, try StackFixture.line(calling: "inner", in: "stack.c"))
        XCTAssertEqual(s.stalls[0].stack[2].module, binary)
        XCTAssertEqual(s.stalls[1].stack.first?.function, "middle")
        XCTAssertEqual(s.stalls[1].call, "connect")

        // The two loop stalls share their first sample's functions; the blocked one is apart.
        XCTAssertEqual(s.groups.map(\.count), [2, 1])
        XCTAssertEqual(s.groups[0].totalUs, 1_604_000)
        XCTAssertEqual(s.groups[0].maxUs, 1_204_000)
        XCTAssertEqual(s.groups[0].threads, ["server/server"])
        XCTAssertEqual(s.groups[0].stack.prefix(2), ["fixture_print_stack", "inner"])
        XCTAssertEqual(s.stalls.map(\.group), [0, 1, 0])
        XCTAssertEqual(s.symbolWarnings.map(\.text), [])

        // Wide enough for whole cells (a 100-column report cuts the WHAT column).
        let text = TextReport(width: 200).render(report)
        XCTAssertTrue(text.contains("STALLS: 3 stalls over 250 ms, 2.216 s in total (loop 2, blocked 1), longest first"), text)
        XCTAssertTrue(text.contains("connect fd 7 10.0.0.9:443 (api.example.com) → ETIMEDOUT"), text)
        XCTAssertTrue(text.contains("loop 1.204 s in pid 42 server, thread server (42), 1.201 s on CPU, after epoll_wait; "
                                    + "3 samples, 1 later one differs:"), text)
        let innerFrame = s.stalls[0].stack[1]
        XCTAssertTrue(text.contains("    #1 inner+0x\(String(innerFrame.functionOffset!, radix: 16)) (stack.c:\(innerFrame.line!))"), text)

        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try JSONReport.render(report).utf8)) as? [String: Any])
        let stalls = try XCTUnwrap(json["stalls"] as? [String: Any])
        XCTAssertEqual(stalls["count"] as? Int, 3)
        let first = try XCTUnwrap((stalls["stalls"] as? [[String: Any]])?.first)
        XCTAssertEqual(first["on_cpu_pct"] as? Double, 99.8)
        XCTAssertEqual(((first["stack"] as? [[String: Any]])?[1])?["function"] as? String, "inner")
    }

    func testNoStallsIsOneLine() throws {
        let t0: Int64 = 1_763_782_510_000_000
        let on = try dir.write("on/a.1.1.ndjson", try StallLog.start(pid: 1, ts: t0, exe: "/bin/a") + StallLog.end(pid: 1, ts: t0 + 5))
        let report = Report(analysis: try RunAnalysis.load(paths: [on]))
        XCTAssertEqual(report.stalls?.count, 0)
        XCTAssertTrue(TextReport().render(report).contains("\nSTALLS: no stalls over 250 ms\n"))

        // Detection off (or logs older than it): no section at all.
        let off = try dir.write("off/a.1.1.ndjson", try StallLog.start(pid: 1, ts: t0, exe: "/bin/a", stallMs: 0)
            + StallLog.end(pid: 1, ts: t0 + 5))
        let offReport = Report(analysis: try RunAnalysis.load(paths: [off]))
        XCTAssertNil(offReport.stalls)
        let offText = TextReport().render(offReport)
        XCTAssertFalse(offText.contains("STALLS"), offText)
        XCTAssertFalse(try JSONReport.render(offReport).contains("\"stalls\""))
    }

    /// The event loops of the samples: iterations per second and busy % over the intervals.
    func testLoopFPSInVitals() throws {
        let report = try fixtureReport()
        let v = try XCTUnwrap(report.vitals.first)
        let loops = try XCTUnwrap(v.loops)
        XCTAssertEqual(loops.map(\.tid), [4242, 4250], "busiest first")
        // 1843 + 920 iterations over 1 s + 2 s; busy 12.5 % for 1 s and 62.5 % for 2 s.
        XCTAssertEqual(loops[0].iterations, 2763)
        XCTAssertEqual(loops[0].perS, 921)
        XCTAssertEqual(loops[0].busyPct, 45.8)
        XCTAssertEqual(loops[0].busyPctMax, 62.5)
        XCTAssertEqual(loops[0].maxBusyUs, 1_204_000)
        XCTAssertEqual(loops[1].perS, 4)
        XCTAssertTrue(TextReport().render(report).contains(
            "    loop server (4242): 921 iterations/s, busy avg 45.8% (max 62.5%), longest busy 1.204 s\n"))
    }

    /// Fixtures/stalls: modules that are not on this machine, so every frame is `module+0xoff`
    /// on any machine; a stall whose `modules` record is missing.
    func testFixtureFacts() throws {
        let s = try XCTUnwrap(try fixtureReport().stalls)
        XCTAssertEqual(s.count, 4)
        XCTAssertEqual(s.groups.map(\.count), [2, 1, 1])
        XCTAssertEqual(s.groups[0].stack, ["server+0x41f2", "server+0x43a0", "libc.so.6+0x29d8f"])
        XCTAssertEqual(s.stalls[0].samplesDiffering, 1)
        XCTAssertEqual(s.stalls.last?.stack.map(\.text), ["0x7f1c2a2f0010", "0x55d0c3a4b600"])
        XCTAssertEqual(s.symbolWarnings.map(\.message), [
            "cannot open: No such file or directory",
            "cannot open: No such file or directory",
            "no modules record with gen 2 in server.4242.1763782510000000.ndjson: addresses shown raw",
        ])
    }

    func testTextGolden() throws {
        try check(portable(TextReport(color: false).render(try fixtureReport())), golden: "stalls.txt")
    }

    func testJSONGolden() throws {
        try check(portable(try JSONReport.render(try fixtureReport())), golden: "stalls.json")
    }

    /// The folded stacks of two real programs (C and C++), frames limited to their own binary so
    /// the golden file does not depend on this machine's libc; plus a frame of a library that is
    /// gone and an address outside every module. `WEDJAT_REGEN_GOLDEN=1` rewrites the golden file.
    func testFoldedGolden() throws {
        let t0: Int64 = 1_763_782_510_000_000
        var paths: [String] = []
        for (i, (source, name)) in [("stack.c", "cserver"), ("stack.cpp", "cxxserver")].enumerated() {
            let fx = try StackFixture.run(try StackFixture.build(source, into: dir.path, name: name))
            let own = fx.frames.filter { fx.map.module(containing: $0)?.path == fx.binary }
            let gone = ModuleMapping(path: "/nonexistent/libgone.so", base: 0x10000, lo: 0x10000, hi: 0x20000, buildId: "")
            let stack = own + [0x11234, 0x1]
            let pid = 100 + i
            var log = try StallLog.start(pid: pid, ts: t0, exe: fx.binary) + StallLog.modules(pid: pid, ts: t0 + 1, fx.modules + [gone])
            log += try StallLog.stall(pid: pid, tid: pid, thread: "main", startTs: t0 + 10, durationUs: 900_000, cpuUs: 899_000,
                                      samples: [stack, stack, Array(stack.dropFirst())])
            log += try StallLog.stall(pid: pid, tid: pid + 1, thread: "io;worker 1", startTs: t0 + 2_000_000,
                                      durationUs: 300_000, cpuUs: 299_000, samples: [stack])
            paths.append(try dir.write("\(name).\(pid).1.ndjson", log))
        }
        let analysis = try RunAnalysis.load(paths: paths)
        let folded = try FoldedStacks.render(analysis)
        XCTAssertEqual(folded.split(separator: "\n").count, 6)
        // flamegraph.pl's parse: everything up to the last space is the stack, the rest the count.
        let total = folded.split(separator: "\n").reduce(0) { n, line in
            let space = line.lastIndex(of: " ")!
            XCTAssertFalse(line[..<space].split(separator: ";").contains { $0.isEmpty }, String(line))
            return n + Int(line[line.index(after: space)...])!
        }
        // Weighed by time: the stalls' durations, 2 × (900 ms + 300 ms), in microseconds.
        XCTAssertEqual(total, 2_400_000, "the stalls' time")
        XCTAssertTrue(folded.contains("cxxserver;main;0x1;libgone.so+0x1234;_start;main;long wedjat::fixture::apply<std::pair<int, long> >(std::pair<int, long> const&);"),
                      folded)
        XCTAssertTrue(folded.contains("cserver;io:worker 1;0x1;libgone.so+0x1234;_start;main;outer;middle;inner;fixture_print_stack 300000\n"), folded)
        // The 900 ms stall's samples at 250, 500 and 750 ms: the first two (one stack) stand for
        // 0..625 ms, the third (its caller's stack) for 625..900 ms.
        XCTAssertTrue(folded.contains("cserver;main;0x1;libgone.so+0x1234;_start;main;outer;middle;inner;fixture_print_stack 625000\n"), folded)
        XCTAssertTrue(folded.contains("cserver;main;0x1;libgone.so+0x1234;_start;main;outer;middle;inner 275000\n"), folded)
        let golden = Self.goldenDir + "/stalls.folded"
        if ProcessInfo.processInfo.environment["WEDJAT_REGEN_GOLDEN"] == "1" {
            try folded.write(toFile: golden, atomically: true, encoding: .utf8)
        }
        XCTAssertEqual(folded, try String(contentsOfFile: golden, encoding: .utf8),
                       "differs from \(golden); rerun with WEDJAT_REGEN_GOLDEN=1 if intended")
    }

    /// Each sample stands for the stall time nearest to it; the weights add up to the stall.
    func testSampleWeightsAreTheTimeEachSampleStandsFor() {
        func stall(_ duration: Int64, kind: String = "loop", samples: [Int64?]) -> StallRecord {
            StallRecord(ts: 1_000 + duration, pid: 1, kind: kind, startTs: 1_000, endTs: 1_000 + duration, durationUs: duration,
                        samples: samples.map { .init(ts: $0.map { 1_000 + $0 }, frames: [1]) })
        }
        func weights(_ s: StallRecord) -> [Int64] { FoldedStacks.sampleWeights(s, s.samples) }
        // The loop sampler: at 1, 2, 3 times the threshold (250 ms) of a 900 ms stall.
        XCTAssertEqual(weights(stall(900_000, samples: [250_000, 500_000, 750_000])), [375_000, 250_000, 275_000])
        // Later samples are sparser (8, 16 × the threshold): they stand for more time.
        XCTAssertEqual(weights(stall(5_000_000, samples: [250_000, 2_000_000, 4_000_000])), [1_125_000, 1_875_000, 2_000_000])
        // A blocked stall's one sample, taken when the call returned: all of it.
        XCTAssertEqual(weights(stall(600_000, kind: "blocked", samples: [600_000])), [600_000])
        // Without times: equal shares (the remainder to the first).
        XCTAssertEqual(weights(stall(1_000_001, samples: [nil, nil, nil])), [333_335, 333_333, 333_333])
        // A sample stamped after the stall's end (an ongoing stall's last) is clamped to it.
        XCTAssertEqual(weights(stall(400_000, samples: [250_000, 900_000])), [325_000, 75_000])
        XCTAssertEqual(weights(stall(400_000, samples: [])), [])
    }

    func testFoldedFrameNamesCannotBreakTheFormat() {
        XCTAssertEqual(FoldedStacks.frame("a;b\nc\td"), "a:b c d")
        XCTAssertEqual(FoldedStacks.frame("operator new(unsigned long)"), "operator new(unsigned long)")
        XCTAssertEqual(FoldedStacks.frame(""), "?")
    }

    private func fixtureReport() throws -> Report {
        Report(analysis: try RunAnalysis.load(paths: [Self.fixtureDir]))
    }

    /// As GoldenReportTests: the paths as `wedjat report Fixtures/stalls` prints them from the
    /// test directory (scripts/regen-golden.sh).
    private func portable(_ s: String) -> String {
        s.replacingOccurrences(of: Self.fixtureDir, with: "Fixtures/stalls")
    }

    private func check(_ actual: String, golden name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = Self.goldenDir + "/" + name
        let expected = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(actual, expected, "differs from \(path); run scripts/regen-golden.sh if intended", file: file, line: line)
    }
}
