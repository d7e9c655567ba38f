import Foundation
import XCTest
@testable import WedjatLive

/// A fresh directory, removed at the end of the test.
final class LiveTempDir {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "wedjat-live-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Appends `text` to `name` (created if needed), as a writer would.
    @discardableResult
    func append(_ name: String, _ text: String) -> String {
        let full = path + "/" + name
        let fd = open(full, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        precondition(fd >= 0, "cannot open \(full)")
        var text = text
        text.withUTF8 { _ = write(fd, $0.baseAddress!, $0.count) }
        close(fd)
        return full
    }
}

/// The analysis tests' fixtures (shared, not copied).
let fixturesDir = (#filePath as NSString).deletingLastPathComponent + "/../WedjatAnalysisTests/Fixtures"

/// Log lines for a process that is this test process (so it counts as alive).
enum LiveLine {
    static let pid = Int(getpid())

    static func start(_ name: String, dir: String, ts: Int64 = 1_000_000_000_000_000, segment: Int? = nil,
                      segmentStart: Int64? = nil, exe: String = "/usr/sbin/server") -> String {
        var s = #"{"type":"process_start","schema":1,"ts":\#(ts),"pid":\#(pid),"tid":\#(pid),"exe":"\#(exe)","argv":["server"],"log":"\#(dir)/\#(name)","hostname":"box","cpus":2,"wedjat_version":"0.1.0""#
        if let segment { s += #","segment":\#(segment),"segment_start_ts":\#(segmentStart ?? ts)"# }
        return s + "}\n"
    }

    static func http(ts: Int64, duration: Int64 = 1000, status: Int = 200, conn: Int = 1, index: Int = 0,
                     host: String = "127.0.0.1:8080", role: String = "server") -> String {
        #"{"type":"http","ts":\#(ts),"pid":\#(pid),"tid":\#(pid),"conn_id":\#(conn),"role":"\#(role)","scheme":"http","method":"GET","host":"\#(host)","path":"/","version":"HTTP/1.1","status":\#(status),"peer":"127.0.0.1:40000","request_index":\#(index),"request_start_ts":\#(ts - duration),"response_start_ts":\#(ts - duration / 2),"response_end_ts":\#(ts),"duration_us":\#(duration),"complete":true,"error":null}"#
            + "\n"
    }

    static func sample(ts: Int64, cpu: Double = 50, rss: Int64 = 10 << 20, busy: Double = 40) -> String {
        #"{"type":"sample","ts":\#(ts),"pid":\#(pid),"seq":0,"interval_start_ts":\#(ts - 1_000_000),"interval_us":1000000,"cpu":{"user_pct":\#(cpu),"system_pct":0,"total_pct":\#(cpu),"user_us":500000,"system_us":20000},"memory":{"rss_bytes":\#(rss),"peak_rss_bytes":\#(rss),"virtual_bytes":\#(rss * 4)},"threads":3,"fds":12,"open_connections":7,"ctx_switches":{"voluntary":10,"involuntary":2},"page_faults":{"minor":100,"major":1},"loops":[{"tid":\#(pid),"thread":"server","iterations":100,"per_s":100.0,"busy_pct":\#(busy),"max_busy_us":900}]}"#
            + "\n"
    }

    static func stall(ts: Int64, duration: Int64 = 400_000) -> String {
        #"{"type":"stall","ts":\#(ts),"pid":\#(pid),"tid":\#(pid),"thread":"server","kind":"loop","start_ts":\#(ts - duration),"end_ts":\#(ts),"duration_us":\#(duration),"cpu_us":\#(duration),"after":"epoll_wait","threshold_us":250000,"samples":[],"samples_lost":0}"#
            + "\n"
    }

    static func summary(ts: Int64, count: Int64, status: Int = 200, first: Int64, last: Int64) -> String {
        #"{"type":"http_summary","ts":\#(ts),"pid":\#(pid),"tid":0,"role":"server","scheme":"http","method":"GET","host":"127.0.0.1:8080","version":"HTTP/1.1","status":\#(status),"error":null,"count":\#(count),"errors":0,"request_bytes":0,"response_bytes":0,"first_ts":\#(first),"last_ts":\#(last),"duration_us":{"count":\#(count),"p50":100,"p90":200,"p99":300,"max":400,"min":50,"sum":\#(count * 150),"bounds":[5000,10000,25000,50000,75000,100000,250000,500000,750000,1000000,2500000,5000000,7500000,10000000],"buckets":[\#(count),0,0,0,0,0,0,0,0,0,0,0,0,0,0]}}"#
            + "\n"
    }

    static func segmentEnd(ts: Int64, next: String) -> String {
        #"{"type":"segment_end","ts":\#(ts),"pid":\#(pid),"next":"\#(next)","bytes":1}"# + "\n"
    }

    static func end(ts: Int64) -> String {
        #"{"type":"process_end","ts":\#(ts),"pid":\#(pid),"tid":\#(pid),"reason":"exit","exit_status":0}"# + "\n"
    }
}
