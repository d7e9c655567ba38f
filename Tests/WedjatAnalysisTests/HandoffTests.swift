import Foundation
import XCTest
@testable import WedjatAnalysis

/// A CGI server: the parent reads the request, forks, the child (an exec'd script) writes the
/// response; the parent's record has `error: "handed_off"`, the child's only the response, on a
/// connection `inherited_from` the parent's (docs/LOG_FORMAT.md). Every view must show one
/// exchange with the child's status, counted once, and no error.
final class HandoffTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    static let t0: Int64 = 1_763_783_000_000_000
    static let parentPath = "/var/log/wj/python3.100.1763783000000000.ndjson"

    private func parentLog(role: String = "server", requests: Int = 1) -> String {
        let t0 = Self.t0
        var log = #"{"type":"process_start","schema":1,"ts":\#(t0),"pid":100,"tid":100,"exe":"/usr/bin/python3","argv":["python3","cgi.py"],"ppid":1,"parent_log":null,"exec_from":null,"log":"\#(Self.parentPath)"}"#
            + "\n"
        for i in 0 ..< requests {
            let id = i + 1, base = t0 + Int64(i) * 100_000
            log += #"{"type":"http","ts":\#(base + 300),"pid":100,"tid":100,"conn_id":\#(id),"role":"\#(role)","scheme":"http","method":"GET","host":"localhost:8080","path":"/cgi-bin/hello","version":"HTTP/1.1","status":null,"peer":"127.0.0.1:5000\#(i)","request_index":0,"reused":false,"request_start_ts":\#(base + 100),"request_end_ts":\#(base + 120),"response_start_ts":null,"response_end_ts":null,"ttfb_us":null,"wait_us":null,"duration_us":null,"request_header_bytes":80,"request_body_bytes":0,"response_header_bytes":0,"response_body_bytes":0,"headers":{"request.host":"localhost:8080"},"complete":false,"error":"handed_off"}"#
                + "\n"
            log += #"{"type":"fork","ts":\#(base + 200),"pid":100,"tid":100,"child_pid":\#(101 + i)}"# + "\n"
            log += #"{"type":"connection","ts":\#(base + 300),"pid":100,"tid":100,"conn_id":\#(id),"fd":4,"transport":"tcp","family":"ipv4","role":"\#(role)","local":"127.0.0.1:8080","peer":"127.0.0.1:5000\#(i)","open_ts":\#(base + 50),"close_ts":\#(base + 300),"duration_us":250,"bytes_in":80,"bytes_out":0,"http_requests":1,"error":null,"error_phase":null,"open_at_exit":false,"forked_while_open":true}"#
                + "\n"
        }
        return log + #"{"type":"process_end","ts":\#(t0 + 900_000),"pid":100,"tid":100,"reason":"exit","exit_status":0}"# + "\n"
    }

    /// The exec'd CGI script's log: the response of the parent's exchange on conn `parentConn`.
    private func childLog(pid: Int = 101, program: String = "perl", role: String = "server", parentConn: Int = 1, status: Int = 200,
                          parentLog: String = HandoffTests.parentPath) -> String {
        let base = Self.t0 + Int64(parentConn - 1) * 100_000
        return #"{"type":"process_start","schema":1,"ts":\#(base + 1000),"pid":\#(pid),"tid":\#(pid),"exe":"/usr/bin/\#(program)","argv":["\#(program)"],"ppid":100,"parent_log":"\#(parentLog)","exec_from":null,"log":"/var/log/wj/\#(program).\#(pid).\#(base + 1000).ndjson"}"#
            + "\n"
            + #"{"type":"http","ts":\#(base + 6000),"pid":\#(pid),"tid":\#(pid),"conn_id":3,"role":"\#(role)","scheme":"http","method":null,"host":null,"path":null,"version":null,"status":\#(status),"peer":"127.0.0.1:5000\#(parentConn - 1)","request_index":0,"reused":false,"request_start_ts":null,"request_end_ts":null,"response_start_ts":\#(base + 5000),"response_end_ts":\#(base + 6000),"ttfb_us":null,"wait_us":null,"duration_us":null,"request_header_bytes":null,"request_body_bytes":null,"response_header_bytes":60,"response_body_bytes":500,"headers":{"response.content-type":"text/plain"},"complete":true,"error":null}"#
            + "\n"
            + #"{"type":"connection","ts":\#(base + 6100),"pid":\#(pid),"tid":\#(pid),"conn_id":3,"fd":1,"transport":"tcp","family":"ipv4","role":"\#(role)","local":"127.0.0.1:8080","peer":"127.0.0.1:5000\#(parentConn - 1)","open_ts":\#(base + 1000),"close_ts":\#(base + 6100),"duration_us":5100,"bytes_in":0,"bytes_out":560,"http_requests":1,"error":null,"error_phase":null,"open_at_exit":false,"inherited_from":{"log":"\#(parentLog)","conn_id":\#(parentConn)}}"#
            + "\n"
            + #"{"type":"process_end","ts":\#(base + 7000),"pid":\#(pid),"tid":\#(pid),"reason":"exit","exit_status":0}"# + "\n"
    }

    private func checkJoined(_ paths: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let analysis = try RunAnalysis.load(paths: paths)
        let r = Report(analysis: analysis)
        let h = r.headline
        XCTAssertEqual(h.httpRequests, 1, "one exchange, counted once", file: file, line: line)
        XCTAssertEqual(h.httpErrors, 0, file: file, line: line)
        XCTAssertEqual(h.networkErrorRate, 0, "not 100% network errors", file: file, line: line)
        XCTAssertEqual(h.connections, 1, "the child's copy of the socket is the same connection", file: file, line: line)
        XCTAssertEqual(h.bytesIn, 80, file: file, line: line)
        XCTAssertEqual(h.bytesOut, 560, file: file, line: line)
        XCTAssertEqual(h.handedOff?.joined, 1, file: file, line: line)
        XCTAssertEqual(h.handedOff?.withoutResponse, 0, file: file, line: line)
        XCTAssertEqual(r.statuses.map(\.status), [200], file: file, line: line)
        XCTAssertEqual(r.http.count, 1, file: file, line: line)
        let host = try XCTUnwrap(r.http.first)
        XCTAssertEqual(host.key, "server ← http://localhost:8080", file: file, line: line)
        XCTAssertEqual(host.requests, 1, file: file, line: line)
        XCTAssertEqual(host.connections, 1, file: file, line: line)
        XCTAssertEqual(host.errors, 0, file: file, line: line)
        XCTAssertNil(host.handedOff, file: file, line: line)
        // Request start (the parent's) to response start and end (the child's).
        XCTAssertEqual(host.ttfbUs?.p50, 4900, file: file, line: line)
        XCTAssertEqual(host.durationUs?.p50, 5900, file: file, line: line)
        XCTAssertEqual(host.bytesIn, 80, file: file, line: line)
        XCTAssertEqual(host.bytesOut, 560, file: file, line: line)
        // The exchange is the parent's (its connection and request).
        let parent = try XCTUnwrap(r.processes.first { $0.pid == 100 })
        XCTAssertEqual(parent.httpRequests, 1, file: file, line: line)
        XCTAssertEqual(r.processes.first { $0.pid == 101 }?.httpRequests, 0, file: file, line: line)
        let slow = try XCTUnwrap(r.slowest.first)
        XCTAssertEqual(slow.status, 200, file: file, line: line)
        XCTAssertEqual(slow.pid, 100, file: file, line: line)
        XCTAssertEqual(slow.method, "GET", file: file, line: line)
        XCTAssertNil(slow.error, file: file, line: line)
        let text = TextReport(color: false, width: 200).render(r)
        XCTAssertTrue(text.contains("  HTTP        1 request; network errors 0.00%, HTTP errors 0.00% (4xx 0.00%, 5xx 0.00%);"
                                    + " 1 answered by a forked child (joined)\n"), text, file: file, line: line)
        let page = HTMLReport().render(analysis, report: r)
        XCTAssertTrue(page.contains("handed off: the response was written by a forked child, pid 101"), file: file, line: line)
        XCTAssertFalse(page.contains("wf-row bad"), file: file, line: line)

        // The exports: one trace slice and one server span, status 200, no error.
        var otlp: [ExportDocument] = []
        let e = try ExportStream.run(paths: paths, outputs: .init(har: ExportText(), trace: ExportText(),
                                                                  otlp: { otlp.append($0); return true }))
        XCTAssertEqual(e.context.handoffs.joined, 1, file: file, line: line)
        let trace = try JSONSerialization.jsonObject(with: Data(e.trace!.text.utf8)) as! [String: Any]
        let slices = (trace["traceEvents"] as! [[String: Any]]).filter { $0["cat"] as? String == "http" }
        XCTAssertEqual(slices.count, 1, file: file, line: line)
        let args = slices.first?["args"] as? [String: Any]
        XCTAssertEqual(args?["status"] as? Int, 200, file: file, line: line)
        XCTAssertEqual(args?["continued_by_pid"] as? Int, 101, file: file, line: line)
        XCTAssertEqual(slices.first?["dur"] as? Int, 5900, file: file, line: line)
        XCTAssertEqual(slices.first?["pid"] as? Int, 100, file: file, line: line)
        XCTAssertEqual(e.otlp?.count, 1, "one span", file: file, line: line)
        let spans = otlp[0].text
        XCTAssertTrue(spans.contains(#"{"key":"http.response.status_code","value":{"intValue":"200"}}"#), spans, file: file, line: line)
        XCTAssertFalse(spans.contains("error.type"), spans, file: file, line: line)
    }

    /// The child's log read first (`perl` < `python3`), and last (`zsh` > `python3`).
    func testJoinedInEitherReadingOrder() throws {
        try dir.write("a/python3.100.1763783000000000.ndjson", parentLog())
        try dir.write("a/perl.101.1763783000001000.ndjson", childLog())
        try checkJoined([dir.path + "/a"])   // a directory: its files sorted, the child's first
        try dir.write("b/python3.100.1763783000000000.ndjson", parentLog())
        try dir.write("b/zsh.101.1763783000001000.ndjson", childLog(program: "zsh"))
        try checkJoined([dir.path + "/b"])
    }

    /// Without the child's log: one exchange without a response, handed off, not an error.
    func testParentAloneIsHandedOffNotAnError() throws {
        let r = Report(analysis: try RunAnalysis.load(paths: [try dir.write("python3.100.1.ndjson", parentLog(requests: 2))]))
        XCTAssertEqual(r.headline.httpRequests, 2)
        XCTAssertEqual(r.headline.httpErrors, 0)
        XCTAssertEqual(r.headline.networkErrorRate, 0)
        XCTAssertEqual(r.headline.handedOff?.withoutResponse, 2)
        XCTAssertEqual(r.headline.handedOff?.joined, 0)
        let host = try XCTUnwrap(r.http.first)
        XCTAssertEqual(host.handedOff, 2)
        XCTAssertEqual(host.statusClasses.noResponse, 2)
        XCTAssertEqual(host.networkErrors, 0)
        XCTAssertEqual(host.errorNames.count, 0)
        let text = TextReport(color: false).render(r)
        XCTAssertTrue(text.contains("2 handed off to a forked child whose log was not read"), text)
        XCTAssertTrue(text.contains("2 handed off to a forked child (its log not read: no response here)"), text)
    }

    /// Two CGI requests, both answered; the second child names the parent's log by another path
    /// (the writer's absolute one): the file name joins them.
    func testEachChildJoinsItsOwnExchange() throws {
        let parent = try dir.write("python3.100.1763783000000000.ndjson", parentLog(requests: 2))
        let a = try dir.write("perl.101.1.ndjson", childLog(pid: 101, parentConn: 1, status: 200))
        let b = try dir.write("perl.102.1.ndjson", childLog(pid: 102, parentConn: 2, status: 404,
                                                           parentLog: "/elsewhere/python3.100.1763783000000000.ndjson"))
        let r = Report(analysis: try RunAnalysis.load(paths: [a, b, parent]))
        XCTAssertEqual(r.headline.httpRequests, 2)
        XCTAssertEqual(r.headline.handedOff?.joined, 2)
        XCTAssertEqual(r.statuses.map { "\($0.status ?? 0)×\($0.count)" }, ["200×1", "404×1"])
        XCTAssertEqual(r.headline.clientErrorRate, 0.5)
    }

    /// A client that forks and lets its child read the response: the HAR has one entry with the
    /// child's status.
    func testClientHandoffInTheHAR() throws {
        let parent = try dir.write("python3.100.1763783000000000.ndjson", parentLog(role: "client"))
        let child = try dir.write("perl.101.1.ndjson", childLog(role: "client"))
        let e = try ExportStream.run(paths: [parent, child], outputs: .init(har: ExportText()))
        XCTAssertEqual(e.har?.count, 1)
        let har = try JSONSerialization.jsonObject(with: Data(e.har!.text.utf8)) as! [String: Any]
        let entry = try XCTUnwrap(((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])?.first)
        XCTAssertEqual((entry["response"] as? [String: Any])?["status"] as? Int, 200)
        XCTAssertEqual(entry["_continued_by_pid"] as? Int, 101)
        XCTAssertNil(entry["_error"])
        XCTAssertEqual(entry["time"] as? Double, 5.9)
    }

    /// Memory: at most `limit` halves wait; past it they pass as they are, counted.
    func testWaitingHalvesAreBounded() throws {
        var join = HandoffJoin(limit: 1)
        let o = HandoffJoin.Origin(log: "p.1.1.ndjson", file: nil, line: 1)
        func half(_ id: Int64) -> Record {
            .http(HTTPRecord(ts: 1, pid: 1, connId: id, role: "server", requestIndex: 0, requestStartTs: 1, error: "handed_off"))
        }
        XCTAssertFalse(join.take(half(1), origin: o))
        XCTAssertTrue(join.take(half(2), origin: o), "over the limit: passes")
        XCTAssertEqual(join.overLimit, 1)
        join.finish()
        XCTAssertEqual(join.ready.count, 1)
        XCTAssertEqual(join.unjoinedParents, 1)
    }
}
