import XCTest
import CWedjatCommon
import WedjatCore

/// What the interposer does with an HTTP connection's bytes (CShims/interposer/framing.c):
/// frame them in C, hand the framer's events to the aggregator as payload-ring slots.
final class FramingFeeder {
    struct Key: Hashable { var id: UInt64; var plain: Bool }
    var framers: [Key: UnsafeMutablePointer<wj_h1>] = [:]
    var roles: [UInt64: Int] = [:]
    var budget = wj_budget()
    var perSecond: Int64
    weak var agg: Aggregator?
    var current = Key(id: 0, plain: false)
    var now: UInt64 = 0

    /// Whole exchanges past the budget counted in C (wedjat_http_counts.h), as the interposer does.
    var countInC = false
    var hint: Int32 = -1
    var taken = 0

    init(perSecond: Int, countInC: Bool = false) {
        self.perSecond = Int64(perSecond)
        self.countInC = countInC
    }

    func sink() -> wj_h1_sink {
        var sk = wj_h1_sink()
        sk.ctx = Unmanaged.passUnretained(self).toOpaque()
        sk.head_cap = 8192
        sk.msg = { ctx, m in
            let f = Unmanaged<FramingFeeder>.fromOpaque(ctx!).takeUnretainedValue()
            var p = wj_payload()
            p.kind = UInt16(WJ_EV_HTTP_MSG)
            p.flags = f.current.plain ? UInt16(WJ_PAYLOAD_PLAIN) : 0
            p.conn_id = f.current.id
            p.conn_slot = 9
            p.t = f.now
            p.len = UInt32(MemoryLayout<wj_h1_msg>.size)
            withUnsafeMutableBytes(of: &p.data) { $0.baseAddress!.copyMemory(from: m!, byteCount: MemoryLayout<wj_h1_msg>.size) }
            withUnsafePointer(to: p) { f.agg?.handlePayload($0) }
        }
        sk.head = { ctx, isRequest, seq, offset, q, n in
            let f = Unmanaged<FramingFeeder>.fromOpaque(ctx!).takeUnretainedValue()
            var p = wj_payload()
            p.kind = UInt16(WJ_EV_HTTP_HEAD)
            p.flags = UInt16((f.current.plain ? WJ_PAYLOAD_PLAIN : 0) | (isRequest != 0 ? WJ_PAYLOAD_REQUEST : 0))
            p.conn_id = f.current.id
            p.conn_slot = 9
            p.t = f.now
            p.io_end = UInt64(seq)
            let room = MemoryLayout.size(ofValue: p.data)
            var off = 0
            while off < n {
                let k = min(room, n - off)
                withUnsafeMutableBytes(of: &p.data) { $0.baseAddress!.copyMemory(from: q! + off, byteCount: k) }
                p.offset = offset + UInt64(off)
                p.len = UInt32(k)
                withUnsafePointer(to: p) { f.agg?.handlePayload($0) }
                off += k
            }
        }
        sk.want_detail = { ctx, mono in
            let f = Unmanaged<FramingFeeder>.fromOpaque(ctx!).takeUnretainedValue()
            return wj_budget_take(&f.budget, f.perSecond, mono)
        }
        if countInC {
            sk.exchange = { ctx, req, resp in
                let f = Unmanaged<FramingFeeder>.fromOpaque(ctx!).takeUnretainedValue()
                let took = wj_http_count_exchange(f.roles[f.current.id] == Int(WJ_ROLE_SERVER) ? 1 : 0, f.current.plain ? 1 : 0,
                                                  req, resp, &f.hint)
                f.taken += Int(took)
                return took
            }
        }
        return sk
    }

    func framer(_ key: Key) -> UnsafeMutablePointer<wj_h1> {
        if let h = framers[key] { return h }
        let h = UnsafeMutablePointer<wj_h1>.allocate(capacity: 1)
        wj_h1_init(h, roles[key.id] == Int(WJ_ROLE_SERVER) ? 0 : 1)
        framers[key] = h
        return h
    }

    func feed(id: UInt64, out: Bool, offset: UInt64, _ bytes: [UInt8], at: UInt64, plain: Bool) {
        let key = Key(id: id, plain: plain)
        let h = framer(key)
        current = key
        now = at
        var sk = sink()
        bytes.withUnsafeBufferPointer { b in
            if out && roles[id] != Int(WJ_ROLE_SERVER) { wj_h1_announce(h, &sk, offset, b.baseAddress, b.count, at) }
            wj_h1_feed(h, &sk, out ? 1 : 0, offset, b.baseAddress, b.count, offset + UInt64(b.count), at)
        }
    }

    /// The connection ends: its framers hand over what they hold, before its close event.
    func end(id: UInt64, at: UInt64) {
        for plain in [false, true] {
            let key = Key(id: id, plain: plain)
            guard let h = framers.removeValue(forKey: key) else { continue }
            current = key
            now = at
            var sk = sink()
            wj_h1_finish(h, &sk, at, Int32(WJ_H1_ERR_INCOMPLETE))
            h.deallocate()
        }
    }
}

// The aggregator's HTTP path: bytes framed in C -> message events -> http records, the
// per-second record budget and the http_summary records past it.
final class AggregatorHTTPTests: XCTestCase {
    var lines: [[String: Any]] = []
    var feeder = FramingFeeder(perSecond: 200)

    private func makeAggregator(recordsPerSecond: Int = 200, countInC: Bool = false) -> Aggregator {
        lines = []
        feeder = FramingFeeder(perSecond: recordsPerSecond, countInC: countInC)
        wj_http_counts_forked()   // the C table starts empty
        let ctx = ProcessContext(pid: 7, initMonoNs: 1_000_000_000, initRealNs: 1_700_000_000_000_000_000,
                                 maxConnections: 16, httpRecordsPerSecond: recordsPerSecond)
        let agg = Aggregator(context: ctx, errnoName: { "E\($0)" },
                             countsTake: countInC ? { wj_http_counts_take($0, $1, $2, $3) } : nil,
                             sink: { [unowned self] buf in
            for l in String(decoding: buf, as: UTF8.self).split(separator: "\n") {
                self.lines.append(try! JSONSerialization.jsonObject(with: Data(l.utf8)) as! [String: Any])
            }
            return true
        })
        feeder.agg = agg
        return agg
    }

    private func open(_ id: UInt64, slot: UInt32 = 9, role: Int = Int(WJ_ROLE_CLIENT), at: UInt64) -> wj_event {
        feeder.roles[id] = role
        var ev = wj_event()
        ev.kind = UInt16(WJ_EV_CONN_OPEN)
        ev.role = UInt8(role)
        ev.transport = UInt8(WJ_TRANSPORT_TCP)
        ev.conn_id = id
        ev.conn_slot = slot
        ev.flags = UInt32(WJ_OPEN_HTTP)
        ev.t_start = at
        ev.t_end = at + 1000
        ev.peer.family = UInt16(AF_INET)
        ev.peer.port = 80
        return ev
    }

    private func close(_ id: UInt64, at: UInt64) -> wj_event {
        feeder.end(id: id, at: at)
        var ev = wj_event()
        ev.kind = UInt16(WJ_EV_CONN_CLOSE)
        ev.conn_id = id
        ev.t_end = at
        return ev
    }

    // Feeds `text` as one call of the connection.
    private func payload(_ agg: Aggregator, _ id: UInt64, out: Bool, offset: UInt64, _ text: String, at: UInt64,
                         plain: Bool = false) {
        feeder.feed(id: id, out: out, offset: offset, Array(text.utf8), at: at, plain: plain)
    }

    // One request in (at `at`) and its response out (`after` ns later) on server connection
    // `id`; offsets are the connection's stream positions, advanced past the bytes.
    private func serverExchange(_ agg: Aggregator, _ id: UInt64, _ req: String, _ resp: String, at: UInt64,
                                after: UInt64, inOff: inout UInt64, outOff: inout UInt64) {
        payload(agg, id, out: false, offset: inOff, req, at: at)
        inOff += UInt64(req.utf8.count)
        payload(agg, id, out: true, offset: outOff, resp, at: at + after)
        outOff += UInt64(resp.utf8.count)
    }

    func testClientExchangeBecomesAnHTTPRecordAndCountsOnTheConnection() {
        let agg = makeAggregator()
        agg.handle(open(1, at: 1_001_000_000))
        let req = "GET /items?token=abc HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer s3cret\r\n\r\n"
        payload(agg, 1, out: true, offset: 0, req, at: 1_002_000_000)
        let resp = "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
        payload(agg, 1, out: false, offset: 0, resp, at: 1_005_000_000)
        agg.handle(close(1, at: 1_006_000_000))
        agg.flush(final: false, endMono: 1_006_000_000, tid: 0, openCounters: { _, _ in nil })
        let http = lines.filter { $0["type"] as? String == "http" }
        XCTAssertEqual(http.count, 1)
        let h = http[0]
        XCTAssertEqual(h["method"] as? String, "GET")
        XCTAssertEqual(h["path"] as? String, "/items?REDACTED")
        XCTAssertEqual(h["host"] as? String, "api.test")
        XCTAssertEqual(h["status"] as? Int, 201)
        XCTAssertEqual(h["scheme"] as? String, "http")
        XCTAssertEqual(h["reused"] as? Bool, false)
        XCTAssertEqual(h["ttfb_us"] as? Int, 3000)
        XCTAssertEqual(h["duration_us"] as? Int, 3000)
        XCTAssertEqual(h["request_start_ts"] as? Int, 1_700_000_000_002_000)   // init + 2 ms
        XCTAssertEqual(h["response_body_bytes"] as? Int, 5)
        XCTAssertEqual(h["request_header_bytes"] as? Int, req.utf8.count)
        XCTAssertEqual(h["complete"] as? Bool, true)
        XCTAssertEqual(h["version"] as? String, "HTTP/1.1")
        XCTAssertNil(h["response_version"], "written only when it differs from the request's")
        let text = String(describing: h)
        XCTAssertFalse(text.contains("s3cret") || text.contains("abc"), "no secret reaches the record: \(text)")
        let conn = lines.first { $0["type"] as? String == "connection" }
        XCTAssertEqual(conn?["http_requests"] as? Int, 1)
    }

    /// The peer is formatted once per connection (it costs more than the rest of a record's
    /// fields): every record of the connection carries it, and it follows a peer the open event
    /// learns later.
    func testEveryRecordOfAConnectionCarriesItsPeer() {
        let agg = makeAggregator()
        var ev = open(1, at: 1_001_000_000)
        ev.peer.bytes.0 = 127
        ev.peer.bytes.3 = 1
        agg.handle(ev)
        let req = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n", resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        var inOff: UInt64 = 0, outOff: UInt64 = 0
        for k in 0..<2 {
            payload(agg, 1, out: true, offset: outOff, req, at: 1_002_000_000 + UInt64(k) * 10_000_000)
            outOff += UInt64(req.utf8.count)
            payload(agg, 1, out: false, offset: inOff, resp, at: 1_003_000_000 + UInt64(k) * 10_000_000)
            inOff += UInt64(resp.utf8.count)
        }
        var moved = ev
        moved.peer.bytes.3 = 2
        moved.peer.port = 81
        agg.handle(moved)   // the same connection's open event again, with another peer
        payload(agg, 1, out: true, offset: outOff, req, at: 1_030_000_000)
        payload(agg, 1, out: false, offset: inOff, resp, at: 1_031_000_000)
        agg.handle(close(1, at: 1_040_000_000))
        agg.flush(final: false, endMono: 1_040_000_000, tid: 0, openCounters: { _, _ in nil })
        let peers = lines.filter { $0["type"] as? String == "http" }.map { $0["peer"] as? String }
        XCTAssertEqual(peers, ["127.0.0.1:80", "127.0.0.1:80", "127.0.0.2:81"])
    }

    /// exec: a CGI server's framer read a request (parent); the program exec'd on the socket
    /// resumes a fresh framer from the carried counts and writes the response: the new image
    /// records the response-only half of exchange 0, on a connection inherited from the parent.
    /// A framer halfway through a message cannot be carried.
    func testExecCarriedConnectionResumesAndRecordsTheResponse() {
        let parent = UnsafeMutablePointer<wj_h1>.allocate(capacity: 1)
        defer { parent.deallocate() }
        wj_h1_init(parent, 0)
        var none = wj_h1_sink()
        let req = Array("GET /cgi-bin/x HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        req.withUnsafeBufferPointer { b in
            wj_h1_feed(parent, &none, 0, 0, b.baseAddress, 10, 10, 1)     // a request line cut short:
        }
        var carried = wj_h1_carried()
        XCTAssertEqual(wj_h1_carry(parent, &carried), 0, "not between messages")
        req.withUnsafeBufferPointer { b in
            wj_h1_feed(parent, &none, 0, 10, b.baseAddress! + 10, b.count - 10, UInt64(b.count), 2)
        }
        XCTAssertEqual(wj_h1_carry(parent, &carried), 1)
        XCTAssertEqual(carried.requests, 1)
        XCTAssertEqual(carried.answered, 0)

        let agg = makeAggregator()
        feeder.roles[3] = Int(WJ_ROLE_SERVER)
        let h = feeder.framer(FramingFeeder.Key(id: 3, plain: false))
        wj_h1_resume(h, &carried)
        var ev = open(3, role: Int(WJ_ROLE_SERVER), at: 1_001_000_000)
        ev.flags |= UInt32(WJ_OPEN_INHERITED)
        agg.handle(ev)
        payload(agg, 3, out: true, offset: 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", at: 1_002_000_000)
        agg.handle(close(3, at: 1_003_000_000))
        agg.flush(final: false, endMono: 1_003_000_000, tid: 0, openCounters: { _, _ in nil })
        let http = lines.filter { $0["type"] as? String == "http" }
        XCTAssertEqual(http.count, 1)
        XCTAssertEqual(http.first?["status"] as? Int, 200)
        XCTAssertEqual(http.first?["request_index"] as? Int, 0)
        XCTAssertNil(http.first?["method"] as? String, "the request was the parent's")
        XCTAssertNil(http.first?["error"] as? String)
        let conn = lines.first { $0["type"] as? String == "connection" }
        XCTAssertNotNil(conn?["inherited_from"])
    }

    /// An HTTP/1.0 request answered in HTTP/1.1: `version` is the request's, and
    /// `response_version` says the response's because it differs.
    func testVersionsOfTheExchange() {
        let agg = makeAggregator()
        agg.handle(open(1, at: 1_001_000_000))
        payload(agg, 1, out: true, offset: 0, "GET / HTTP/1.0\r\nHost: old.test\r\n\r\n", at: 1_002_000_000)
        payload(agg, 1, out: false, offset: 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", at: 1_003_000_000)
        agg.handle(close(1, at: 1_004_000_000))
        agg.flush(final: false, endMono: 1_004_000_000, tid: 0, openCounters: { _, _ in nil })
        let http = lines.filter { $0["type"] as? String == "http" }
        XCTAssertEqual(http.count, 1)
        XCTAssertEqual(http.first?["version"] as? String, "HTTP/1.0")
        XCTAssertEqual(http.first?["response_version"] as? String, "HTTP/1.1")
    }

    func testBytesThatArriveBeforeTheirOpenEventAreKeptUntilIt() {
        let agg = makeAggregator()
        payload(agg, 5, out: true, offset: 0, "GET /early HTTP/1.1\r\nHost: e\r\n\r\n", at: 1_002_000_000)
        agg.handle(open(5, at: 1_001_000_000))
        payload(agg, 5, out: false, offset: 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", at: 1_003_000_000)
        agg.handle(close(5, at: 1_004_000_000))
        agg.flush(final: false, endMono: 1_004_000_000, tid: 0, openCounters: { _, _ in nil })
        let http = lines.filter { $0["type"] as? String == "http" }
        XCTAssertEqual(http.map { $0["path"] as? String }, ["/early"])
        XCTAssertEqual(http.first?["complete"] as? Bool, true)
    }

    func testNonHTTPIsSaidOnTheConnection() {
        let agg = makeAggregator()
        agg.handle(open(2, at: 1_001_000_000))
        payload(agg, 2, out: true, offset: 0, "*1\r\n$4\r\nPING\r\n", at: 1_002_000_000)
        payload(agg, 2, out: false, offset: 0, "+PONG\r\n", at: 1_002_500_000)
        var c = close(2, at: 1_003_000_000)
        c.bytes_out = 14
        c.bytes_in = 7
        agg.handle(c)
        agg.flush(final: false, endMono: 1_003_000_000, tid: 0, openCounters: { _, _ in nil })
        let conn = lines.first { $0["type"] as? String == "connection" }
        XCTAssertEqual(conn?["http_requests"] as? Int, 0)
        XCTAssertEqual(conn?["http_none"] as? String, "not_http")
        XCTAssertEqual(lines.filter { $0["type"] as? String == "http" }.count, 0)
    }

    /// Every connection with bytes and no decoded exchange says why; one that stopped decoding
    /// partway says how many bytes were left undecoded.
    func testConnectionsSayWhyTheyWereNotDecoded() {
        let agg = makeAggregator()
        func run(_ id: UInt64, _ out: [UInt8], _ inBytes: [UInt8] = []) {
            agg.handle(open(id, at: 1_001_000_000))
            feeder.feed(id: id, out: true, offset: 0, out, at: 1_002_000_000, plain: false)
            if !inBytes.isEmpty { feeder.feed(id: id, out: false, offset: 0, inBytes, at: 1_003_000_000, plain: false) }
            var c = close(id, at: 1_004_000_000)
            c.bytes_out = UInt64(out.count)
            c.bytes_in = UInt64(inBytes.count)
            agg.handle(c)
        }
        run(1, [0x16, 0x03, 0x01, 0x02, 0x00, 0x01], [0x16, 0x03, 0x03])     // TLS no hook saw
        run(2, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8))             // HTTP/2 prior knowledge
        run(3, Array("*1\r\n$4\r\nPING\r\n".utf8), Array("+PONG\r\n".utf8))  // redis
        let req = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n", garbage = "GET /b HTTP/1.1\r\nno colon here\r\n\r\n"
        run(4, Array((req + garbage).utf8), Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8))
        agg.flush(final: false, endMono: 1_005_000_000, tid: 0, openCounters: { _, _ in nil })
        let conns = Dictionary(uniqueKeysWithValues: lines.filter { $0["type"] as? String == "connection" }
            .map { ($0["conn_id"] as! Int, $0) })
        XCTAssertEqual(conns[1]?["http_none"] as? String, "tls_not_hooked")
        XCTAssertEqual((conns[1]?["http_undecoded"] as? [String: Any])?["bytes_out"] as? Int, 6)
        XCTAssertEqual((conns[1]?["http_undecoded"] as? [String: Any])?["bytes_in"] as? Int, 3)
        XCTAssertEqual(conns[2]?["http_none"] as? String, "http2")
        XCTAssertEqual(conns[3]?["http_none"] as? String, "not_http")
        XCTAssertEqual((conns[3]?["http_undecoded"] as? [String: Any])?["bytes_in"] as? Int, 7)
        XCTAssertEqual(conns[4]?["http_requests"] as? Int, 2, "the good exchange and the one cut by the parse error")
        XCTAssertNil(conns[4]?["http_none"])
        let u4 = conns[4]?["http_undecoded"] as? [String: Any]
        XCTAssertEqual(u4?["reason"] as? String, "parse")
        XCTAssertEqual(u4?["bytes_out"] as? Int, garbage.utf8.count - 17, "from the bad field on")
    }

    func testTLSPlaintextIsParsedSeparatelyAndMarkedHTTPS() {
        let agg = makeAggregator()
        agg.handle(open(3, at: 1_001_000_000))
        payload(agg, 3, out: true, offset: 0, "\u{16}\u{03}\u{01}\u{00}\u{10}", at: 1_001_500_000)  // ClientHello bytes
        payload(agg, 3, out: true, offset: 0, "HEAD / HTTP/1.1\r\nHost: s.test\r\n\r\n", at: 1_002_000_000, plain: true)
        payload(agg, 3, out: false, offset: 0, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", at: 1_003_000_000, plain: true)
        agg.handle(close(3, at: 1_004_000_000))
        agg.flush(final: false, endMono: 1_004_000_000, tid: 0, openCounters: { _, _ in nil })
        let http = lines.filter { $0["type"] as? String == "http" }
        XCTAssertEqual(http.count, 1)
        XCTAssertEqual(http.first?["scheme"] as? String, "https")
        XCTAssertEqual(http.first?["response_body_bytes"] as? Int, 0, "HEAD: no body despite Content-Length")
        XCTAssertEqual(http.first?["complete"] as? Bool, true)
    }

    func testRecordsPastTheBudgetGoIntoOneSummaryWithExactCounts() {
        let agg = makeAggregator(recordsPerSecond: 2)   // burst of 20
        agg.handle(open(4, role: Int(WJ_ROLE_SERVER), at: 1_001_000_000))
        var inOff: UInt64 = 0, outOff: UInt64 = 0
        for i in 0..<50 {
            let t = 1_002_000_000 + UInt64(i) * 1_000_000   // 50 requests in 50 ms
            serverExchange(agg, 4, "GET /r/\(i) HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                           at: t, after: 400_000, inOff: &inOff, outOff: &outOff)
        }
        agg.handle(close(4, at: 1_100_000_000))
        agg.flush(final: true, endMono: 1_200_000_000, tid: 1, openCounters: { _, _ in nil })
        let http = lines.filter { $0["type"] as? String == "http" }
        let summaries = lines.filter { $0["type"] as? String == "http_summary" }
        XCTAssertEqual(http.count, 20)
        XCTAssertEqual(summaries.count, 1)
        let s = summaries[0]
        XCTAssertEqual(s["count"] as? Int, 30)
        XCTAssertEqual(s["role"] as? String, "server")
        XCTAssertEqual(s["status"] as? Int, 200)
        XCTAssertEqual((s["duration_us"] as? [String: Any])?["max"] as? Int, 400)
        XCTAssertEqual(lines.first { $0["type"] as? String == "connection" }?["http_requests"] as? Int, 50)
    }

    // One connection's exchanges usually share a summary, found again without hashing; a
    // change of status, method or host must still open its own, and a summary written (every
    // 10 s) must not be counted into again.
    func testSummariesOfOneConnectionStaySeparateByKeyAndInterval() {
        summariesOfOneConnection(countInC: false)
    }

    // The same exchanges, those past the budget counted in C where they end: the same
    // summaries (the C table's counts joined to the aggregator's), the same connection count.
    func testExchangesCountedInCGiveTheSameSummaries() {
        summariesOfOneConnection(countInC: true)
        XCTAssertEqual(feeder.taken, 14, "every whole exchange past the budget was counted in C")
    }

    private func summariesOfOneConnection(countInC: Bool, file: StaticString = #filePath, line: UInt = #line) {
        let agg = makeAggregator(recordsPerSecond: 1, countInC: countInC)   // burst of 10
        agg.handle(open(5, role: Int(WJ_ROLE_SERVER), at: 1_001_000_000))
        var inOff: UInt64 = 0, outOff: UInt64 = 0
        var t: UInt64 = 1_002_000_000
        func exchange(_ method: String, _ host: String, _ status: Int, version: String = "1.1") {
            serverExchange(agg, 5, "\(method) /x HTTP/\(version)\r\nHost: \(host)\r\n\r\n",
                           "HTTP/1.1 \(status) X\r\nContent-Length: 0\r\n\r\n", at: t, after: 100_000,
                           inOff: &inOff, outOff: &outOff)
            t += 1_000_000
        }
        for _ in 0..<10 { exchange("GET", "a", 200) }        // the burst: records
        for _ in 0..<3 { exchange("GET", "a", 200) }
        for _ in 0..<2 { exchange("GET", "a", 404) }
        exchange("POST", "a", 200)
        for _ in 0..<4 { exchange("GET", "b", 200) }
        exchange("GET", "a", 200)
        // 10 s later: the summaries so far are written; the next ones start anew.
        agg.flush(final: false, endMono: t, tid: 1, openCounters: { _, _ in nil })
        t += 11_000_000_000
        agg.flush(final: false, endMono: t, tid: 1, openCounters: { _, _ in nil })
        for _ in 0..<12 { exchange("GET", "a", 200) }     // 10 records again (the budget refilled), 2 counted
        exchange("GET", "a", 200, version: "1.0")
        // A request the connection's end cuts short: counted with its error.
        payload(agg, 5, out: false, offset: inOff, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", at: t)
        agg.handle(close(5, at: t + 1000))
        agg.flush(final: true, endMono: t + 2000, tid: 1, openCounters: { _, _ in nil })
        let summaries = lines.filter { $0["type"] as? String == "http_summary" }
        let counts = summaries.map {
            "\($0["method"]!) \($0["host"]!) \($0["version"]!) \($0["status"]!) \($0["error"]!) \($0["count"]!)"
        }
        XCTAssertEqual(counts, ["GET a HTTP/1.1 200 <null> 4", "GET a HTTP/1.1 404 <null> 2", "POST a HTTP/1.1 200 <null> 1",
                                "GET b HTTP/1.1 200 <null> 4", "GET a HTTP/1.1 200 <null> 2", "GET a HTTP/1.0 200 <null> 1",
                                "GET a HTTP/1.1 <null> incomplete 1"])
        XCTAssertEqual(summaries.map { $0["errors"] as? Int }, [0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(lines.filter { $0["type"] as? String == "http" }.count, 20)
        XCTAssertEqual(lines.first { $0["type"] as? String == "connection" }?["http_requests"] as? Int, 35)
        // Every exchange took 100 us: all in the first bucket (up to 5 ms), summed exactly.
        let first = summaries[0]["duration_us"] as? [String: Any]
        XCTAssertEqual(first?["bounds"] as? [Int], BoundedCounts.boundsUs.map { Int($0) })
        XCTAssertEqual(first?["buckets"] as? [Int], [4] + Array(repeating: 0, count: 14))
        XCTAssertEqual(first?["sum"] as? Int, 400)
        XCTAssertEqual(first?["min"] as? Int, 100)
    }

    func testBoundedCountsPutEachValueUnderItsInclusiveUpperBound() {
        var b = BoundedCounts()
        for us: UInt64 in [0, 5_000, 5_001, 10_000, 74_999, 75_000, 75_001, 10_000_000, 10_000_001, 90_000_000] { b.record(us) }
        XCTAssertEqual(b.counts, [2, 2, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2])
        XCTAssertEqual(b.sum, 0 + 5_000 + 5_001 + 10_000 + 74_999 + 75_000 + 75_001 + 10_000_000 + 10_000_001 + 90_000_000)
        XCTAssertEqual(b.min, 0)
        XCTAssertEqual(b.counts.count, BoundedCounts.boundsUs.count + 1)
    }

    func testHistogramQuantilesWithinItsPrecision() {
        var h = DurationHistogram()
        for v in 1...1000 { h.record(UInt64(v)) }
        XCTAssertEqual(h.total, 1000)
        XCTAssertEqual(h.max, 1000)
        for (q, exact) in [(0.5, 500.0), (0.9, 900.0), (0.99, 990.0)] {
            let got = Double(h.quantile(q))
            XCTAssertLessThanOrEqual(abs(got - exact) / exact, 0.07, "q\(q): \(got) vs \(exact)")
        }
        XCTAssertEqual(DurationHistogram().quantile(0.5), 0)
    }
}
