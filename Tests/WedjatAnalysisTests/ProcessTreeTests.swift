import XCTest
@testable import WedjatAnalysis

final class ProcessTreeTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    /// The tree as `pid label` lines indented by depth, for readable assertions.
    private func outline(_ paths: [String]? = nil) throws -> [String] {
        let tree = ProcessTree(logs: try RunAnalysis.load(paths: paths ?? [dir.path]).logs)
        var lines: [String] = []
        func walk(_ n: ProcessNode, _ depth: Int) {
            lines.append(String(repeating: "  ", count: depth) + "\(tree.logs[n.images[0]].pid) \(tree.label(n))")
            n.children.forEach { walk($0, depth + 1) }
        }
        tree.roots.forEach { walk($0, 0) }
        return lines
    }

    func testForkThenExecChainUnderParentLog() throws {
        // bash 100 forks 101; 101 (a bash copy) execs curl. The logs were written elsewhere
        // (/var/tmp/w): references must match by base name.
        try dir.write("bash.100.1000.ndjson", Line.start(pid: 100, ts: 1000, exe: "/bin/bash", ppid: 1)
                      + #"{"type":"fork","ts":1500,"pid":100,"child_pid":101}"# + "\n"
                      + Line.end(pid: 100, ts: 9000))
        try dir.write("bash.101.1600.ndjson", Line.start(pid: 101, ts: 1600, exe: "/bin/bash", ppid: 100,
                                                         parentLog: "/var/tmp/w/bash.100.1000.ndjson", ticks: 42)
                      + Line.end(pid: 101, ts: 1700, reason: "exec", status: nil))
        try dir.write("curl.101.1800.ndjson", Line.start(pid: 101, ts: 1800, exe: "/usr/bin/curl", ppid: 100,
                                                         parentLog: "/var/tmp/w/bash.100.1000.ndjson",
                                                         execFrom: "/var/tmp/w/bash.101.1600.ndjson", ticks: 42)
                      + Line.conn(pid: 101, ts: 2000) + Line.end(pid: 101, ts: 2500))
        XCTAssertEqual(try outline(), [
            "100 bash",
            "  101 bash → exec → curl",
        ])
        let tree = ProcessTree(logs: try RunAnalysis.load(paths: [dir.path]).logs)
        XCTAssertEqual(tree.processCount, 2)
        XCTAssertEqual(tree.logs.count, 3)
        XCTAssertEqual(tree.execPredecessor.map { $0.map { tree.logs[$0].fileName } },
                       [nil, nil, "bash.101.1600.ndjson"])
    }

    func testExecChainBySamePidAndStartTicksWithoutExecFrom() throws {
        try dir.write("sh.200.1000.ndjson", Line.start(pid: 200, ts: 1000, exe: "/bin/sh", ticks: 7)
                      + Line.end(pid: 200, ts: 1100, reason: "exec", status: nil))
        try dir.write("env.200.1200.ndjson", Line.start(pid: 200, ts: 1200, exe: "/usr/bin/env", ticks: 7)
                      + Line.end(pid: 200, ts: 1300, reason: "exec", status: nil))
        try dir.write("python3.200.1400.ndjson", Line.start(pid: 200, ts: 1400, exe: "/usr/bin/python3", ticks: 7))
        // Same pid, different process (pid reused later): not part of the chain.
        try dir.write("sh.200.9000.ndjson", Line.start(pid: 200, ts: 9000, exe: "/bin/sh", ticks: 99))
        XCTAssertEqual(try outline(), [
            "200 sh → exec → env → exec → python3",
            "200 sh",
        ])
    }

    func testPpidFallbackPicksTheImageAliveAtStart() throws {
        // Two processes had pid 300 (reuse); the child of the second one must hang under it.
        try dir.write("make.300.1000.ndjson", Line.start(pid: 300, ts: 1000, exe: "/usr/bin/make", ppid: 1)
                      + Line.end(pid: 300, ts: 2000))
        try dir.write("ninja.300.5000.ndjson", Line.start(pid: 300, ts: 5000, exe: "/usr/bin/ninja", ppid: 1)
                      + Line.end(pid: 300, ts: 8000))
        try dir.write("cc.301.6000.ndjson", Line.start(pid: 301, ts: 6000, exe: "/usr/bin/cc", ppid: 300)
                      + Line.end(pid: 301, ts: 7000))
        // Its parent has no process_end (killed): alive as far as we know.
        try dir.write("ld.302.9500.ndjson", Line.start(pid: 302, ts: 9500, exe: "/usr/bin/ld", ppid: 303))
        try dir.write("collect2.303.9000.ndjson", Line.start(pid: 303, ts: 9000, exe: "/usr/bin/collect2", ppid: 1))
        // ppid of a process that is not in the logs: a root.
        try dir.write("cron.400.100.ndjson", Line.start(pid: 400, ts: 100, exe: "/usr/sbin/cron", ppid: 1))
        XCTAssertEqual(try outline(), [
            "400 cron",
            "300 make",
            "300 ninja",
            "  301 cc",
            "303 collect2",
            "  302 ld",
        ])
    }

    func testCyclicParentLogsDoNotLoseProcesses() throws {
        try dir.write("a.1.100.ndjson", Line.start(pid: 1, ts: 100, exe: "/a", parentLog: "b.2.200.ndjson"))
        try dir.write("b.2.200.ndjson", Line.start(pid: 2, ts: 200, exe: "/b", parentLog: "a.1.100.ndjson"))
        XCTAssertEqual(try outline(), ["1 a", "  2 b"])
    }
}
