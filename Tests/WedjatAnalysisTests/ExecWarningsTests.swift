import XCTest
@testable import WedjatAnalysis

/// An exec whose next image left no log is said in the report: its status and a warning,
/// with the reason the log gives when wedjat knew it could not watch that image.
final class ExecWarningsTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    private func execEnd(pid: Int, ts: Int64, target: String, unwatched: String?) -> String {
        #"{"type":"process_end","ts":\#(ts),"pid":\#(pid),"reason":"exec","exit_status":null,"exec":"\#(target)""#
            + (unwatched.map { #","exec_unwatched":"\#($0)""# } ?? "") + "}\n"
    }

    func testExecWithoutNextImageIsWarnedWithItsReason() throws {
        // 300 execs a setuid program (not watched), 301 execs sh, which was killed before its
        // first flush, 302 execs curl, which logged: only the first two are warnings.
        try dir.write("bash.300.1000.ndjson", Line.start(pid: 300, ts: 1000, exe: "/bin/bash", ticks: 1)
                      + execEnd(pid: 300, ts: 1100, target: "/usr/bin/sudo", unwatched: "setuid"))
        try dir.write("bash.301.1000.ndjson", Line.start(pid: 301, ts: 1000, exe: "/bin/bash", ticks: 2)
                      + execEnd(pid: 301, ts: 1100, target: "/bin/sh", unwatched: nil))
        try dir.write("bash.302.1000.ndjson", Line.start(pid: 302, ts: 1000, exe: "/bin/bash", ticks: 3)
                      + execEnd(pid: 302, ts: 1100, target: "/usr/bin/curl", unwatched: nil))
        try dir.write("curl.302.1200.ndjson", Line.start(pid: 302, ts: 1200, exe: "/usr/bin/curl", ticks: 3)
                      + Line.end(pid: 302, ts: 1300))
        let r = Report(analysis: try RunAnalysis.load(paths: [dir.path]))

        let status = Dictionary(uniqueKeysWithValues: r.processes.filter { $0.program == "bash" }.map { ($0.pid, $0.status) })
        XCTAssertEqual(status, [300: "exec, not watched (setuid)", 301: "exec, no log after it", 302: "exec → curl"])

        let execWarnings = r.warnings.filter { $0.kind.hasPrefix("exec_") }.map { "\($0.pid ?? 0) \($0.kind)" }
        XCTAssertEqual(execWarnings, ["300 exec_unwatched", "301 exec_no_log"])
        let setuid = try XCTUnwrap(r.warnings.first { $0.pid == 300 })
        XCTAssertEqual(setuid.message, "exec'd /usr/bin/sudo, which wedjat cannot watch "
                       + "(setuid: the loader ignores LD_PRELOAD in secure execution)")
        let killed = try XCTUnwrap(r.warnings.first { $0.pid == 301 })
        XCTAssertTrue(killed.message.hasPrefix("exec'd /bin/sh, whose image has no log here"), killed.message)
        XCTAssertEqual(r.headline.warnings, r.warnings.count)
    }

    func testUnwatchedReasonsInWords() {
        XCTAssertEqual(Report.unwatchedReason("static"), "statically linked: no dynamic loader to preload wedjat")
        XCTAssertEqual(Report.unwatchedReason("no_preload"), "its environment drops LD_PRELOAD")
        XCTAssertEqual(Report.unwatchedReason("file_capabilities"),
                       "file capabilities: the loader ignores LD_PRELOAD in secure execution")
        XCTAssertEqual(Report.unwatchedReason("something_new"), "something_new")
    }
}
