import Foundation
import XCTest
@testable import WedjatAnalysis
@testable import WedjatSymbols

/// Perf maps (`/tmp/perf-PID.map`): parsing, lookup, ambiguity, and their use for stall frames in
/// no module (JIT and interpreter code), with the checks that keep another process's map out.
final class PerfMapTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    // What the runtimes write, as seen on this machine and in their sources.
    static let node = """
        17bb72e4a60e 5 Eval:~ /tmp/fidp/busy.js:1:1
        17bb72e51ca6 5b JS:~busyLoop /tmp/fidp/busy.js:1:18
        7fb844005b80 284 JS:^busyLoop /tmp/fidp/busy.js:1:18
        7fb8440069c0 61c JS:*busyLoop /tmp/fidp/busy.js:1:18
        """
    static let cpython = "7f3a1c2d4000 b py::handler:/srv/c4_srv.py\n7f3a1c2d400b b py::<module>:/srv/c4_srv.py\n"
    static let jvm = "0x7f01a0001000 0x180 Interpreter\n0x7f01a0002000 0x40 Lfoo/Bar;::spin\n"

    func testParsesWhatNodeCPythonAndTheJVMWrite() {
        let n = PerfMap(parsing: PerfMapTests.node)
        XCTAssertEqual(n.malformedLines, 0)
        XCTAssertEqual(n.entries.map(\.name), ["Eval:~ /tmp/fidp/busy.js:1:1", "JS:~busyLoop /tmp/fidp/busy.js:1:18",
                                               "JS:^busyLoop /tmp/fidp/busy.js:1:18", "JS:*busyLoop /tmp/fidp/busy.js:1:18"])
        XCTAssertEqual(n.entries[3].start, 0x7fb8_4400_69c0)
        XCTAssertEqual(n.entries[3].size, 0x61c)
        XCTAssertEqual(n.entries[3].line, 4)
        let p = PerfMap(parsing: PerfMapTests.cpython)
        XCTAssertEqual(p.entries.map(\.name), ["py::handler:/srv/c4_srv.py", "py::<module>:/srv/c4_srv.py"])
        let j = PerfMap(parsing: PerfMapTests.jvm)
        XCTAssertEqual(j.entries.map(\.start), [0x7f01_a000_1000, 0x7f01_a000_2000])
        XCTAssertEqual(j.entries.map(\.size), [0x180, 0x40])
    }

    func testMalformedLinesAreCountedAndPassedOver() {
        let m = PerfMap(parsing: "\n1000 10 ok\r\nzz 10 bad hex\n2000 10\n3000\n 4000\t20\tspaced name  \n\n10000000000000000 1 too big\n")
        XCTAssertEqual(m.entries.map(\.name), ["ok", "spaced name"])
        XCTAssertEqual(m.entries.map(\.line), [2, 6])
        XCTAssertEqual(m.malformedLines, 4, "bad hex, no name, no size, over 64 bits; blank lines are not counted")
    }

    func testLookupBoundaries() {
        let m = PerfMap(parsing: "1000 10 a\n1020 10 b\n")
        XCTAssertEqual(m.lookup(0xfff), .none)
        XCTAssertEqual(m.lookup(0x1000), .symbol(m.entries[0]))
        XCTAssertEqual(m.lookup(0x100f), .symbol(m.entries[0]))
        XCTAssertEqual(m.lookup(0x1010), .none, "the end is exclusive; the gap is no one's")
        XCTAssertEqual(m.lookup(0x102f), .symbol(m.entries[1]))
        XCTAssertEqual(m.lookup(0x1030), .none)
        XCTAssertEqual(PerfMap(parsing: "").lookup(0x1000), .none)
        // Out of order in the file: sorted for the lookup, the line kept.
        let unordered = PerfMap(parsing: "2000 10 late\n1000 10 early\n")
        XCTAssertEqual(unordered.lookup(0x1005), .symbol(PerfMap.Entry(start: 0x1000, size: 0x10, name: "early", line: 2)))
        // A region reaching past the top of the address space ends there.
        XCTAssertEqual(PerfMap(parsing: "ffffffffffffff00 1000 top\n").lookup(.max - 1).name, "top")
    }

    func testAmbiguity() {
        // Code space reused: a later compilation of another function over an earlier one.
        let m = PerfMap(parsing: "1000 100 JS:~old\n1040 20 JS:*new\n2000 10 JS:*f\n2000 10 JS:*f\n3000 1000 big\n3100 10 small\n")
        XCTAssertEqual(m.lookup(0x1010), .symbol(m.entries[0]), "only the old one covers it")
        guard case let .ambiguous(both) = m.lookup(0x1045) else { return XCTFail("\(m.lookup(0x1045))") }
        XCTAssertEqual(both.map(\.name), ["JS:~old", "JS:*new"], "in the order they were written")
        // The same name twice is no ambiguity: the latest line.
        XCTAssertEqual(m.lookup(0x2005), .symbol(PerfMap.Entry(start: 0x2000, size: 0x10, name: "JS:*f", line: 4)))
        // A long region starting before a short one still counts (maxEnd walk).
        guard case let .ambiguous(nested) = m.lookup(0x3105) else { return XCTFail("\(m.lookup(0x3105))") }
        XCTAssertEqual(nested.map(\.name), ["big", "small"])
        XCTAssertEqual(m.lookup(0x3500), .symbol(m.entries[4]))
    }

    // MARK: the symbolizer

    private func process(pid: Int, start: Date = Date().addingTimeInterval(-60), end: Date? = nil, dirs: [String] = []) -> PerfMapProcess {
        PerfMapProcess(pid: pid, startTs: Int64(start.timeIntervalSince1970 * 1e6),
                       endTs: end.map { Int64($0.timeIntervalSince1970 * 1e6) }, directories: dirs)
    }

    private func setMtime(_ path: String, _ date: Date) throws {
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: path)
    }

    func testFramesOutsideModulesAreNamedFromTheMap() throws {
        let tmp = dir.path + "/tmp"
        try dir.write("tmp/perf-4242.map", PerfMapTests.node)
        let libc = ModuleMapping(path: "/nonexistent/libc.so.6", base: 0x7f00_0000_0000, lo: 0x7f00_0000_0000, hi: 0x7f00_0010_0000, buildId: "")
        let map = ModuleMap([libc], process: process(pid: 4242))
        let s = Symbolizer(perfMapDirectory: tmp)
        let jit = s.symbolize(0x7fb8_4400_6d33, in: map, returnAddress: false)
        XCTAssertEqual(jit.function, "JS:*busyLoop /tmp/fidp/busy.js:1:18")
        XCTAssertEqual(jit.functionOffset, 0x373)
        XCTAssertEqual(jit.perfMap, tmp + "/perf-4242.map")
        XCTAssertNil(jit.module)
        XCTAssertEqual(jit.name, "JS:*busyLoop /tmp/fidp/busy.js:1:18 (perf map)")
        XCTAssertEqual(jit.text, "JS:*busyLoop /tmp/fidp/busy.js:1:18+0x373 (perf map)")
        // A return address just past a region is the call at its end: still that function.
        let end: UInt64 = 0x7fb8_4400_69c0 + 0x61c
        XCTAssertEqual(s.symbolize(end, in: map).function, "JS:*busyLoop /tmp/fidp/busy.js:1:18")
        XCTAssertNil(s.symbolize(end, in: map, returnAddress: false).function, "an exact address there is past it")
        // In no region either: raw.
        XCTAssertEqual(s.symbolize(0x10, in: map).name, "0x10")
        // Addresses in a module are the module's, whatever the map says.
        XCTAssertEqual(s.symbolize(0x7f00_0000_1000, in: map).name, "libc.so.6+0x1000")
        // Without a process, no perf map is looked at.
        XCTAssertNil(s.symbolize(0x7fb8_4400_6d33, in: ModuleMap([libc])).function)
        XCTAssertEqual(s.problems.filter(\.perfMap), [])
    }

    func testAmbiguousFramesListTheirCandidatesOnce() throws {
        try dir.write("perf-7.map", "1000 100 JS:~old\n1040 20 JS:*new\n")
        let s = Symbolizer(perfMapDirectory: dir.path)
        let map = ModuleMap([], process: process(pid: 7))
        let f = s.symbolize(0x1045, in: map, returnAddress: false)
        XCTAssertNil(f.function)
        XCTAssertEqual(f.perfMapCandidates, ["JS:~old", "JS:*new"])
        XCTAssertEqual(f.name, "JS:~old | JS:*new (perf map, ambiguous)")
        _ = s.symbolize(0x1046, in: map, returnAddress: false)
        XCTAssertEqual(s.problems.map(\.path), [dir.path + "/perf-7.map"], "said once")
        XCTAssertTrue(s.problems[0].reason.contains("ambiguous"), s.problems[0].reason)
    }

    func testMissingMapIsSaidOnceAndFramesStayRaw() {
        let s = Symbolizer(perfMapDirectory: dir.path)
        let map = ModuleMap([], process: process(pid: 99, dirs: [dir.path + "/logs"]))
        XCTAssertEqual(s.symbolize(0x7fb8_4400_6d33, in: map).name, "0x7fb844006d33")
        XCTAssertEqual(s.symbolize(0x7fb8_4400_6d40, in: map).name, "0x7fb844006d40")
        XCTAssertEqual(s.problems, [ModuleProblem(
            path: dir.path + "/perf-99.map", buildId: "",
            reason: "not found: frames of pid 99 outside every loaded object (JIT or interpreter code) are shown as raw addresses",
            perfMap: true)])
    }

    func testAnotherProcessesMapIsRefused() throws {
        let started = Date().addingTimeInterval(-3600), ended = Date().addingTimeInterval(-1800)
        // Older than the process: an earlier process with the same pid.
        let old = try dir.write("a/perf-5.map", "1000 10 stale\n")
        try setMtime(old, started.addingTimeInterval(-600))
        let a = Symbolizer(perfMapDirectory: dir.path + "/a")
        XCTAssertNil(a.symbolize(0x1005, in: ModuleMap([], process: process(pid: 5, start: started, end: ended))).function)
        XCTAssertEqual(a.problems.first?.reason.hasPrefix("last written 10 min before pid 5 started: another process's map, not used"), true,
                       "\(a.problems)")
        // Written after the log ended, in /tmp: a later process with the same pid.
        let late = try dir.write("b/perf-5.map", "1000 10 later\n")
        try setMtime(late, ended.addingTimeInterval(120))
        let b = Symbolizer(perfMapDirectory: dir.path + "/b")
        XCTAssertNil(b.symbolize(0x1005, in: ModuleMap([], process: process(pid: 5, start: started, end: ended))).function)
        XCTAssertEqual(b.problems.first?.reason.hasPrefix("last written 2 min after pid 5's log ended"), true, "\(b.problems)")
        // Within the life (and the slack after the end, for the flush at exit): used.
        try setMtime(late, ended.addingTimeInterval(2))
        XCTAssertEqual(Symbolizer(perfMapDirectory: dir.path + "/b")
            .symbolize(0x1005, in: ModuleMap([], process: process(pid: 5, start: started, end: ended))).function, "later")
    }

    func testACopyNextToTheLogsComesFirst() throws {
        let started = Date().addingTimeInterval(-3600), ended = Date().addingTimeInterval(-1800)
        try dir.write("tmp/perf-6.map", "1000 10 in-tmp\n")
        try setMtime(dir.path + "/tmp/perf-6.map", ended)
        // Copied after the run (a new time): accepted next to the logs, not in /tmp.
        try dir.write("logs/perf-6.map", "1000 10 copied\n")
        let p = process(pid: 6, start: started, end: ended, dirs: [dir.path + "/logs"])
        XCTAssertEqual(Symbolizer(perfMapDirectory: dir.path + "/tmp").symbolize(0x1005, in: ModuleMap([], process: p)).function, "copied")
        try FileManager.default.removeItem(atPath: dir.path + "/logs/perf-6.map")
        XCTAssertEqual(Symbolizer(perfMapDirectory: dir.path + "/tmp").symbolize(0x1005, in: ModuleMap([], process: p)).function, "in-tmp")
    }

    func testMalformedLinesAreAProblem() throws {
        try dir.write("perf-8.map", "1000 10 ok\nnot a line\n")
        let s = Symbolizer(perfMapDirectory: dir.path)
        XCTAssertEqual(s.symbolize(0x1005, in: ModuleMap([], process: process(pid: 8))).function, "ok")
        XCTAssertEqual(s.problems.map(\.reason), ["1 lines are not START SIZE NAME and were passed over"])
    }

    /// The report: a stall of a log whose JIT frame is in the perf map next to the log. (pid
    /// 4999999 is above any pid_max: no real process writes /tmp/perf-4999999.map.)
    func testReportShowsPerfMapFramesAndWarnings() throws {
        let t0 = Int64(Date().addingTimeInterval(-10).timeIntervalSince1970 * 1e6)
        var log = try StallLog.start(pid: 4999999, ts: t0, exe: "/usr/bin/node") + StallLog.modules(pid: 4999999, ts: t0 + 1, [])
        log += try StallLog.stall(pid: 4999999, tid: 4999999, thread: "node", startTs: t0 + 100, durationUs: 400_000, cpuUs: 399_000,
                                  samples: [[0x7fb8_4400_6d33, 0x10]])
        log += try StallLog.end(pid: 4999999, ts: t0 + 500_000)
        let path = try dir.write("logs/node.4999999.1.ndjson", log)
        try dir.write("logs/perf-4999999.map", PerfMapTests.node)
        let report = Report(analysis: try RunAnalysis.load(paths: [path]))
        let s = try XCTUnwrap(report.stalls)
        XCTAssertEqual(s.stalls[0].stack.map(\.text), ["JS:*busyLoop /tmp/fidp/busy.js:1:18+0x373 (perf map)", "0x10"])
        XCTAssertEqual(s.symbolWarnings.map(\.text), [])
        let text = TextReport().render(report)
        XCTAssertTrue(text.contains("#0 JS:*busyLoop /tmp/fidp/busy.js:1:18+0x373 (perf map)"), text)
        XCTAssertTrue(try FoldedStacks.render(RunAnalysis.load(paths: [path])).contains(";JS:*busyLoop /tmp/fidp/busy.js:1:18 (perf map)"))

        // The map gone: raw addresses, and the report says where it looked and why.
        try FileManager.default.removeItem(atPath: dir.path + "/logs/perf-4999999.map")
        let gone = Report(analysis: try RunAnalysis.load(paths: [path]))
        let g = try XCTUnwrap(gone.stalls)
        XCTAssertEqual(g.stalls[0].stack.map(\.text), ["0x7fb844006d33", "0x10"])
        XCTAssertEqual(g.symbolWarnings.map(\.text), [
            "/tmp/perf-4999999.map: not found: frames of pid 4999999 outside every loaded object (JIT or interpreter code) are shown as raw addresses"])
        XCTAssertTrue(TextReport().render(gone).contains("symbols: /tmp/perf-4999999.map: not found"), TextReport().render(gone))
    }
}

private extension PerfMap.Match {
    var name: String? {
        if case let .symbol(e) = self { return e.name }
        return nil
    }
}
