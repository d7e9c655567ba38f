import XCTest
import CWedjatCommon
import WedjatCore

final class AggregatorTests: XCTestCase {
    var lines: [[String: Any]] = []
    var sinkWorks = true

    private func makeAggregator(maxConnections: Int = 16) -> Aggregator {
        lines = []
        let ctx = ProcessContext(pid: 77, initMonoNs: 1_000_000_000, initRealNs: 1_700_000_000_000_000_000,
                                 maxConnections: maxConnections)
        return Aggregator(context: ctx, errnoName: { $0 == ECONNREFUSED ? "ECONNREFUSED" : "E\($0)" }, sink: { [unowned self] buf in
            guard self.sinkWorks else { return false }
            let text = String(decoding: buf, as: UTF8.self)
            XCTAssertTrue(text.hasSuffix("\n"), "whole lines only")
            for l in text.split(separator: "\n") {
                self.lines.append(try! JSONSerialization.jsonObject(with: Data(l.utf8)) as! [String: Any])
            }
            return true
        })
    }

    private func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> wj_addr {
        var addr = wj_addr()
        addr.family = UInt16(AF_INET)
        addr.port = port
        addr.bytes.0 = a; addr.bytes.1 = b; addr.bytes.2 = c; addr.bytes.3 = d
        return addr
    }

    private func openEvent(id: UInt64, fd: Int32 = 5, start: UInt64, end: UInt64, role: Int = Int(WJ_ROLE_CLIENT),
                           err: Int32 = 0, nonblocking: Bool = false) -> wj_event {
        var ev = wj_event()
        ev.kind = UInt16(WJ_EV_CONN_OPEN)
        ev.role = UInt8(role)
        ev.conn_id = id
        ev.fd = fd
        ev.tid = 78
        ev.t_start = start
        ev.t_end = end
        ev.err = err
        ev.flags = nonblocking ? UInt32(WJ_OPEN_NONBLOCKING) : 0
        ev.local = ipv4(127, 0, 0, 1, port: 40000)
        ev.peer = ipv4(127, 0, 0, 1, port: 8080)
        return ev
    }

    private func closeEvent(id: UInt64, at: UInt64, bytesIn: UInt64, bytesOut: UInt64) -> wj_event {
        var ev = wj_event()
        ev.kind = UInt16(WJ_EV_CONN_CLOSE)
        ev.conn_id = id
        ev.fd = 5
        ev.tid = 79
        ev.t_end = at
        ev.bytes_in = bytesIn
        ev.bytes_out = bytesOut
        return ev
    }

    func testConnectionRecordFromOpenAndClose() {
        let agg = makeAggregator()
        agg.handle(openEvent(id: 1, start: 1_000_500_000, end: 1_000_600_000))
        var close = closeEvent(id: 1, at: 1_002_500_000, bytesIn: 1234, bytesOut: 78)
        close.t_connected = 1_000_600_000
        close.t_first_out = 1_000_700_000
        close.t_first_in = 1_001_700_000
        close.t_last_io = 1_002_400_000
        agg.handle(close)
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        XCTAssertEqual(lines.count, 1)
        let r = lines[0]
        XCTAssertEqual(r["type"] as? String, "connection")
        XCTAssertEqual(r["pid"] as? Int, 77)
        XCTAssertEqual(r["tid"] as? Int, 79)
        XCTAssertEqual(r["role"] as? String, "client")
        XCTAssertEqual(r["peer"] as? String, "127.0.0.1:8080")
        XCTAssertEqual(r["local"] as? String, "127.0.0.1:40000")
        XCTAssertEqual(r["family"] as? String, "ipv4")
        XCTAssertEqual(r["open_ts"] as? Int, 1_700_000_000_000_500)   // init + 0.5 ms
        XCTAssertEqual(r["close_ts"] as? Int, 1_700_000_000_002_500)
        XCTAssertEqual(r["ts"] as? Int, 1_700_000_000_002_500)
        XCTAssertEqual(r["duration_us"] as? Int, 2000)
        XCTAssertEqual(r["connect_us"] as? Int, 100)
        XCTAssertEqual(r["connect_end_ts"] as? Int, 1_700_000_000_000_600)
        XCTAssertEqual(r["first_byte_out_ts"] as? Int, 1_700_000_000_000_700)
        XCTAssertEqual(r["first_byte_in_ts"] as? Int, 1_700_000_000_001_700)
        XCTAssertEqual(r["last_byte_ts"] as? Int, 1_700_000_000_002_400)
        XCTAssertTrue(r["host"] is NSNull)
        XCTAssertEqual(r["bytes_in"] as? Int, 1234)
        XCTAssertEqual(r["bytes_out"] as? Int, 78)
        XCTAssertTrue(r["error"] is NSNull)
        XCTAssertEqual(r["open_at_exit"] as? Bool, false)
        XCTAssertEqual(agg.recordCounts(), "\"connection\":1,")
    }

    func testFailedConnectIsReportedImmediatelyWithErrnoName() {
        let agg = makeAggregator()
        agg.handle(openEvent(id: 2, start: 1_000_000_000, end: 1_000_050_000, err: ECONNREFUSED))
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        XCTAssertEqual(lines.first?["error"] as? String, "ECONNREFUSED")
        XCTAssertEqual(agg.openConnectionCount, 0)
    }

    func testNonBlockingConnectEndsWhenSeenComplete() {
        let agg = makeAggregator()
        agg.handle(openEvent(id: 3, start: 1_000_000_000, end: 1_000_010_000, nonblocking: true))
        agg.handle(closeEvent(id: 3, at: 1_001_000_000, bytesIn: 1, bytesOut: 1))
        var close = closeEvent(id: 5, at: 1_001_000_000, bytesIn: 1, bytesOut: 1)
        close.t_connected = 1_000_250_000
        agg.handle(openEvent(id: 5, start: 1_000_000_000, end: 1_000_010_000, nonblocking: true))
        agg.handle(close)
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        XCTAssertTrue(lines[0]["connect_us"] is NSNull, "completion never seen")
        XCTAssertEqual(lines[1]["connect_us"] as? Int, 250)
    }

    private func dnsEvent(name: String, start: UInt64, end: UInt64, addrs: [wj_addr], error: Int32 = 0) -> wj_dns_event {
        var ev = wj_dns_event()
        ev.kind = UInt16(WJ_EV_DNS)
        ev.api = UInt8(WJ_DNS_GETADDRINFO)
        ev.tid = 80
        ev.t_start = start
        ev.t_end = end
        ev.error = error
        ev.family = AF_UNSPEC
        withUnsafeMutableBytes(of: &ev.name) { raw in for (i, b) in name.utf8.enumerated() { raw[i] = b } }
        withUnsafeMutableBytes(of: &ev.addrs) { raw in
            for (i, a) in addrs.enumerated() { raw.storeBytes(of: a, toByteOffset: i * MemoryLayout<wj_addr>.stride, as: wj_addr.self) }
        }
        ev.n_addrs = UInt8(addrs.count)
        ev.n_answers = UInt32(addrs.count)
        return ev
    }

    func testDNSRecordAndHostCorrelation() {
        let agg = makeAggregator()
        let server = ipv4(127, 0, 0, 1, port: 0)
        agg.handleDNS(dnsEvent(name: "api.example", start: 1_000_000_000, end: 1_000_300_000, addrs: [server]))
        // First connection right after the lookup: its DNS phase is the lookup's duration.
        agg.handle(openEvent(id: 1, start: 1_000_400_000, end: 1_000_500_000))
        // A second lookup of the same name, then a second connection; then both close.
        agg.handleDNS(dnsEvent(name: "api.example", start: 1_000_600_000, end: 1_000_650_000, addrs: [server]))
        agg.handle(openEvent(id: 2, start: 1_000_700_000, end: 1_000_800_000))
        // A third connection reuses the answer without a lookup of its own.
        agg.handle(openEvent(id: 3, start: 1_000_900_000, end: 1_001_000_000))
        for id in 1...3 { agg.handle(closeEvent(id: UInt64(id), at: 1_002_000_000, bytesIn: 1, bytesOut: 1)) }
        agg.handleDNS(dnsEvent(name: "nope.example", start: 1_003_000_000, end: 1_003_100_000, addrs: [], error: -2))
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        let dns = lines.filter { $0["type"] as? String == "dns" }
        let conns = lines.filter { $0["type"] as? String == "connection" }
        XCTAssertEqual(dns.count, 3)
        XCTAssertEqual(dns[0]["name"] as? String, "api.example")
        XCTAssertEqual(dns[0]["duration_us"] as? Int, 300)
        XCTAssertEqual(dns[0]["addresses"] as? [String], ["127.0.0.1"])
        XCTAssertEqual(dns[0]["answers"] as? Int, 1)
        XCTAssertEqual(dns[0]["api"] as? String, "getaddrinfo")
        XCTAssertTrue(dns[0]["error"] is NSNull)
        XCTAssertEqual(dns[2]["error"] as? String, "EAI_NONAME")
        XCTAssertEqual(conns.map { $0["host"] as? String }, ["api.example", "api.example", "api.example"])
        XCTAssertEqual(conns.map { $0["dns_us"] as? Int }, [300, 50, nil])
    }

    func testOpenConnectionsAreWrittenAtExitWithLiveCounters() {
        let agg = makeAggregator()
        var ev = openEvent(id: 4, fd: 9, start: 1_000_000_000, end: 1_000_000_000, role: Int(WJ_ROLE_SERVER))
        ev.conn_slot = 12
        agg.handle(ev)
        agg.flush(final: true, endMono: 1_003_000_000, tid: 77, openCounters: { slot, id in
            XCTAssertEqual(slot, 12); XCTAssertEqual(id, 4)
            var live = wj_event()
            live.bytes_in = 10
            live.bytes_out = 20
            live.t_first_in = 1_001_000_000
            return live
        })
        XCTAssertEqual(lines.count, 1)
        XCTAssertEqual(lines[0]["open_at_exit"] as? Bool, true)
        XCTAssertEqual(lines[0]["role"] as? String, "server")
        XCTAssertEqual(lines[0]["bytes_in"] as? Int, 10)
        XCTAssertEqual(lines[0]["duration_us"] as? Int, 3000)
        XCTAssertEqual(lines[0]["first_byte_in_ts"] as? Int, 1_700_000_000_001_000)
        XCTAssertTrue(lines[0]["first_byte_out_ts"] is NSNull)
        XCTAssertEqual(agg.openConnectionCount, 0)
    }

    /// A UDP socket that was created and closed without a byte or a connect has no role: no
    /// record (the schema has no null role). One that sent has its role and is recorded.
    func testUnusedUDPSocketIsNotAConnection() {
        let agg = makeAggregator()
        for id: UInt64 in [1, 2] {
            var open = openEvent(id: id, start: 1_000_500_000, end: 1_000_500_000, role: Int(WJ_ROLE_UNKNOWN))
            open.transport = UInt8(WJ_TRANSPORT_UDP)
            open.peer = wj_addr()
            agg.handle(open)
        }
        agg.handle(closeEvent(id: 1, at: 1_000_600_000, bytesIn: 0, bytesOut: 0))
        var sent = closeEvent(id: 2, at: 1_000_700_000, bytesIn: 0, bytesOut: 40)
        sent.role = UInt8(WJ_ROLE_CLIENT)
        agg.handle(sent)
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        let connections = lines.filter { $0["type"] as? String == "connection" }
        XCTAssertEqual(connections.map { $0["conn_id"] as? Int }, [2])
        XCTAssertEqual(connections.first?["role"] as? String, "client")
        XCTAssertEqual(connections.first?["transport"] as? String, "udp")
        XCTAssertEqual(connections.first?["bytes_out"] as? Int, 40)
    }

    func testCloseWithoutOpenStillReports() {
        let agg = makeAggregator()
        var close = closeEvent(id: 9, at: 1_005_000_000, bytesIn: 5, bytesOut: 6)
        close.t_start = 1_004_000_000
        agg.handle(close)
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        XCTAssertEqual(lines.count, 1)
        XCTAssertEqual(lines[0]["bytes_in"] as? Int, 5)
        XCTAssertEqual(lines[0]["duration_us"] as? Int, 1000)
        XCTAssertTrue(lines[0]["peer"] is NSNull)
    }

    func testTableIsBoundedAndOverflowCounted() {
        let agg = makeAggregator(maxConnections: 2)
        for id in 1...5 { agg.handle(openEvent(id: UInt64(id), start: 1_000_000_000, end: 1_000_000_000)) }
        XCTAssertEqual(agg.openConnectionCount, 2)
        XCTAssertEqual(agg.untrackedConnections, 3)
    }

    func testFailedSinkCountsDroppedRecords() {
        let agg = makeAggregator()
        sinkWorks = false
        agg.handle(openEvent(id: 1, start: 1_000_000_000, end: 1_000_000_000, err: ECONNREFUSED))
        agg.handle(openEvent(id: 2, start: 1_000_000_000, end: 1_000_000_000, err: ECONNREFUSED))
        agg.flush(final: false, endMono: 0, tid: 0, openCounters: { _, _ in nil as wj_event? })
        XCTAssertEqual(agg.droppedRecords, 2)
        XCTAssertEqual(agg.recordCounts(), "")
    }

    func testIPv6Formatting() {
        var a = wj_addr()
        a.family = UInt16(AF_INET6)
        a.port = 443
        a.bytes.15 = 1
        XCTAssertEqual(Addresses.format(a), "[::1]:443")
        XCTAssertEqual(Addresses.family(a), "ipv6")
    }
}
