import XCTest
import CWedjatCommon
@testable import WedjatCore

/// The C framer (CShims/common/http1.c) behind HTTP1Framed, fed as the interposer feeds it:
/// a client announces each outgoing segment first.
final class FramerWire {
    let h: UnsafeMutablePointer<wj_h1>
    var sink = wj_h1_sink()
    let framed: HTTP1Framed
    let client: Bool
    let wantDetail: (UInt64) -> Bool
    var off: [HTTPDirection: UInt64] = [.out: 0, .in: 0]
    var out: [HTTPExchange] = []
    var pauseLost = false
    var messages = 0
    /// With `whole`, the sink is offered whole exchanges (wj_h1_sink.exchange) and takes them
    /// (true), as the interposer's counting does, or declines them (false).
    let takeWhole: Bool
    var taken = 0

    init(_ role: HTTPRole, redaction: HTTPRedaction = .init(), headCap: UInt32 = 1 << 20,
         whole: Bool? = nil, wantDetail: @escaping (UInt64) -> Bool = { _ in true }) {
        takeWhole = whole ?? false
        client = role == .client
        framed = HTTP1Framed(role: role, redaction: redaction)
        self.wantDetail = wantDetail
        h = .allocate(capacity: 1)
        wj_h1_init(h, client ? 1 : 0)
        sink.ctx = Unmanaged.passUnretained(self).toOpaque()
        sink.head_cap = headCap
        sink.msg = { ctx, m in
            let w = Unmanaged<FramerWire>.fromOpaque(ctx!).takeUnretainedValue()
            w.messages += 1
            if Int32(m!.pointee.kind) == Int32(WJ_H1_STOP), (Int32(m!.pointee.flags) & Int32(WJ_H1_M_PAUSE_LOST)) != 0 {
                w.pauseLost = true
            }
            w.framed.message(m!)
        }
        sink.head = { ctx, isRequest, seq, _, p, n in
            let w = Unmanaged<FramerWire>.fromOpaque(ctx!).takeUnretainedValue()
            w.framed.head(isRequest: isRequest != 0, seq: seq, bytes: UnsafeRawBufferPointer(start: p, count: n))
        }
        sink.want_detail = { ctx, mono in
            Unmanaged<FramerWire>.fromOpaque(ctx!).takeUnretainedValue().wantDetail(mono) ? 1 : 0
        }
        if whole != nil {
            sink.exchange = { ctx, req, resp in
                let w = Unmanaged<FramerWire>.fromOpaque(ctx!).takeUnretainedValue()
                guard w.takeWhole else { return 0 }
                w.taken += 1
                w.out.append(HTTP1Framed.exchange(counted: CountedExchange(request: req!, response: resp!, error: nil)))
                return 1
            }
        }
    }

    deinit { h.deallocate() }

    func send(_ dir: HTTPDirection, _ bytes: [UInt8], mono: UInt64) {
        let o = off[dir]!
        bytes.withUnsafeBufferPointer { b in
            if client && dir == .out { wj_h1_announce(h, &sink, o, b.baseAddress, b.count, mono) }
            wj_h1_feed(h, &sink, dir == .out ? 1 : 0, o, b.baseAddress, b.count, o + UInt64(b.count), mono)
        }
        off[dir] = o + UInt64(bytes.count)
        out += framed.takeCompleted()
    }

    func finish(mono: UInt64) {
        wj_h1_finish(h, &sink, mono, Int32(WJ_H1_ERR_INCOMPLETE))
        out += framed.takeCompleted()
    }

    /// The framer's own state (the assembler learns it only from a STOP).
    var state: HTTP1State {
        switch wj_h1_state(h) {
        case Int32(WJ_H1_DETECTING): return .detecting
        case Int32(WJ_H1_HTTP): return .http
        case Int32(WJ_H1_NOT_HTTP): return .notHTTP
        case Int32(WJ_H1_TUNNEL): return .tunnel
        case Int32(WJ_H1_CLOSED): return .closed
        default: return .desynced
        }
    }
}

/// The Swift parser, fed the same segments.
private final class SwiftWire {
    let s: HTTP1Stream
    var off: [HTTPDirection: UInt64] = [.out: 0, .in: 0]
    var out: [HTTPExchange] = []
    init(_ role: HTTPRole, redaction: HTTPRedaction = .init(), wantDetail: @escaping (UInt64) -> Bool) {
        s = HTTP1Stream(role: role, redaction: redaction)
        s.wantsDetail = wantDetail
    }
    func send(_ dir: HTTPDirection, _ bytes: [UInt8], mono: UInt64) {
        let o = off[dir]!
        s.feed(dir, offset: o, bytes: bytes, ioEnd: o + UInt64(bytes.count), mono: mono)
        off[dir] = o + UInt64(bytes.count)
        out += s.takeCompleted()
    }
    func finish(mono: UInt64) {
        s.finish(mono: mono)
        out += s.takeCompleted()
    }
}

func describeExchange(_ e: HTTPExchange) -> String {
    func t(_ v: UInt64?) -> String { v.map(String.init) ?? "nil" }
    var d = "#\(e.index) \(e.method) host=\(e.host ?? "-") path=\(e.path) \(e.version) -> \(e.status.map(String.init) ?? "nil")"
    d += " \(e.responseVersion ?? "-") interim=\(e.interim)"
    d += " req=\(e.requestHeaderBytes)+\(e.requestBodyBytes) resp=\(e.responseHeaderBytes)+\(e.responseBodyBytes)"
    d += " complete=\(e.complete) upgraded=\(e.upgraded) error=\(e.error ?? "-") detailed=\(e.detailed)"
    d += " headers=" + e.headers.map { "\($0.0)=\($0.1)" }.joined(separator: ";")
    d += " t=\(t(e.requestStart)),\(t(e.requestEnd)),\(t(e.responseStart)),\(t(e.responseEnd))"
    return d
}

/// xorshift64*: reproducible without Foundation.
struct Rand {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ a: [T]) -> T { a[below(a.count)] }
}

/// One piece of a conversation: bytes in one direction (out: the app sent them).
struct Piece {
    var dir: HTTPDirection
    var bytes: [UInt8]
}

/// Generates HTTP/1 conversations: keep-alive, pipelining, every body framing, 1xx, HEAD,
/// 204/304, CONNECT and Upgrade answered with and without a tunnel, absolute targets with
/// userinfo, repeated Host fields, empty lines between messages; then mutations.
struct ConversationGen {
    var r: Rand

    mutating func body(_ n: Int) -> String { String(repeating: "b", count: n) }

    mutating func chunked() -> String {
        var s = ""
        for _ in 0..<r.below(3) {
            let n = 1 + r.below(20)
            s += String(n, radix: 16) + (r.chance(20) ? ";ext=v" : "") + "\r\n" + body(n) + "\r\n"
        }
        s += "0\r\n" + (r.chance(30) ? "X-Trailer: t\r\n" : "") + "\r\n"
        return s
    }

    mutating func target(_ method: String) -> String {
        if method == "CONNECT" { return r.pick(["example.com:443", "u:p@h:8443"]) }
        if method == "OPTIONS", r.chance(50) { return "*" }
        return r.pick(["/", "/a/b?x=1&y=2", "/p#frag", "http://user:pw@host.example:8080/x?q=1#f", "HTTPS://H/", "/" + body(r.below(300))])
    }

    /// (client side pieces in conversation order, role)
    mutating func conversation() -> (pieces: [Piece], role: HTTPRole) {
        let role: HTTPRole = r.chance(50) ? .client : .server
        let reqDir: HTTPDirection = role == .client ? .out : .in
        let respDir: HTTPDirection = role == .client ? .in : .out
        var pieces: [Piece] = []
        let n = 1 + r.below(5)
        var pipelined: [String] = []
        for i in 0..<n {
            let method = r.pick(["GET", "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "CONNECT", "PATCH"])
            let v = r.chance(85) ? "HTTP/1.1" : "HTTP/1.0"
            var req = (i > 0 && r.chance(10) ? "\r\n" : "") + "\(method) \(target(method)) \(v)\r\n"
            if r.chance(85) { req += r.pick(["Host: example.com\r\n", "host: h:81\r\n", "Host:\r\n"]) }
            if r.chance(15) { req += "Host: second.example\r\n" }
            if r.chance(50) { req += "User-Agent: gen/\(r.below(9))\r\n" }
            if r.chance(20) { req += "X-Long: " + body(r.below(400)) + "\r\n" }
            let upgrade = r.chance(8)
            if upgrade { req += "Connection: Upgrade\r\nUpgrade: websocket\r\n" }
            let kind = r.below(4)
            var reqBody = ""
            if method == "POST" || method == "PUT" || method == "PATCH" {
                if kind == 0 { let b = r.below(50); req += "Content-Length: \(b)\r\nContent-Type: text/plain\r\n"; reqBody = body(b) }
                else if kind == 1 { req += "Transfer-Encoding: chunked\r\n"; reqBody = chunked() }
            }
            req += "\r\n" + reqBody
            // response
            var resp = ""
            if r.chance(15) { resp += "HTTP/1.1 100 Continue\r\n\r\n" }
            if r.chance(5) { resp += "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n" }
            let last = i == n - 1
            var status = r.pick([200, 200, 201, 204, 304, 404, 500])
            if upgrade && r.chance(60) { status = 101 }
            if method == "CONNECT" { status = r.pick([200, 407]) }
            resp += "HTTP/1.\(r.chance(90) ? 1 : 0) \(status) Reason\r\n"
            if r.chance(40) { resp += "Content-Type: text/html\r\n" }
            let tunnel = status == 101 || (method == "CONNECT" && status == 200)
            let noBody = method == "HEAD" || status == 204 || status == 304 || tunnel
            let framing = r.below(last ? 4 : 3)
            var respBody = ""
            if framing == 0 { let b = r.below(60); resp += "Content-Length: \(b)\r\n"; if !noBody { respBody = body(b) } }
            else if framing == 1 { resp += "Transfer-Encoding: chunked\r\n"; if !noBody { respBody = chunked() } }
            else if framing == 2 { resp += "Content-Length: 0\r\n" }
            else if !noBody { respBody = body(r.below(40)) }   // close-delimited (last response only)
            resp += "\r\n" + respBody
            if tunnel { resp += "TUNNEL-BYTES" }
            let pausing = method == "CONNECT" || upgrade
            if r.chance(30) && !pausing && !last {
                pipelined.append(resp)
                pieces.append(Piece(dir: reqDir, bytes: Array(req.utf8)))
            } else {
                pieces.append(Piece(dir: reqDir, bytes: Array(req.utf8)))
                for p in pipelined { pieces.append(Piece(dir: respDir, bytes: Array(p.utf8))) }
                pipelined = []
                pieces.append(Piece(dir: respDir, bytes: Array(resp.utf8)))
            }
            if tunnel { break }
        }
        for p in pipelined { pieces.append(Piece(dir: respDir, bytes: Array(p.utf8))) }
        return (pieces, role)
    }

    mutating func mutate(_ pieces: inout [Piece]) {
        guard !pieces.isEmpty else { return }
        for _ in 0..<(1 + r.below(3)) {
            let k = r.below(pieces.count)
            guard !pieces[k].bytes.isEmpty else { continue }
            let at = r.below(pieces[k].bytes.count)
            switch r.below(4) {
            case 0: pieces[k].bytes[at] = UInt8(truncatingIfNeeded: r.next())
            case 1: pieces[k].bytes.remove(at: at)
            case 2: pieces[k].bytes.insert(r.pick([13, 10, 32, 58, 48, 72]), at: at)
            default: pieces[k].bytes[at] = r.pick([13, 10, 32, 58, 48])
            }
        }
    }

    /// Cuts each piece into segments at random places (sizes 1..., sometimes whole).
    mutating func segments(_ pieces: [Piece]) -> [Piece] {
        var out: [Piece] = []
        for p in pieces {
            var i = 0
            let whole = r.chance(30)
            while i < p.bytes.count {
                let k = whole ? p.bytes.count - i : 1 + r.below(min(p.bytes.count - i, r.pick([1, 3, 7, 40, 200])))
                out.append(Piece(dir: p.dir, bytes: Array(p.bytes[i..<(i + k)])))
                i += k
            }
        }
        return out
    }
}

final class HTTP1DifferentialTests: XCTestCase {
    var skippedPauseLost = 0
    var takenWhole = 0

    /// Feeds the same segments to both; returns nil when they agree, else a description.
    func compare(_ segs: [Piece], role: HTTPRole, finish: Bool = true, whole: Bool? = nil,
                 detail: @escaping (UInt64) -> Bool) -> String? {
        let c = FramerWire(role, whole: whole, wantDetail: detail)
        let s = SwiftWire(role, wantDetail: detail)
        var mono: UInt64 = 1000
        for seg in segs {
            mono += 10
            c.send(seg.dir, seg.bytes, mono: mono)
            s.send(seg.dir, seg.bytes, mono: mono)
        }
        if finish {
            c.finish(mono: mono + 5)
            s.finish(mono: mono + 5)
        }
        if c.pauseLost { skippedPauseLost += 1; return nil }   // a documented difference (wedjat_http1.h)
        // Exchanges taken whole come out when their response ends, before older ones whose
        // request is still being sent: compared in request order.
        let cOut = whole == nil ? c.out : c.out.sorted { $0.index < $1.index }
        let a = cOut.map(describeExchange), b = s.out.map(describeExchange)
        // Without a later message (the end's STOP at the latest) the assembler cannot know yet.
        let countsAgree = whole != true || !finish || c.framed.countedInC == c.taken
        takenWhole += c.taken
        if a == b && c.state == s.s.state && countsAgree { return nil }
        var d = "C state \(c.state), Swift state \(s.s.state), taken \(c.taken), countedInC \(c.framed.countedInC)\n"
        for i in 0..<max(a.count, b.count) {
            let x = i < a.count ? a[i] : "(none)", y = i < b.count ? b[i] : "(none)"
            d += (x == y ? "  = " : "  C ") + x + "\n" + (x == y ? "" : "  S " + y + "\n")
        }
        return d
    }

    static func render(_ segs: [Piece]) -> String {
        segs.map { ($0.dir == .out ? ">" : "<") + String(decoding: $0.bytes, as: UTF8.self).debugDescription }.joined(separator: " ")
    }

    /// Generated conversations (every third mutated), compared; the number compared.
    private func compareGenerated(seed: UInt64, rounds: Int, whole: (Int) -> Bool?,
                                  detail: (Int) -> (UInt64) -> Bool) -> Int {
        var g = ConversationGen(r: Rand(state: seed))
        var failures = 0
        for round in 0..<rounds {
            var (pieces, role) = g.conversation()
            if round % 3 == 2 { g.mutate(&pieces) }
            let segs = g.segments(pieces)
            if let d = compare(segs, role: role, finish: round % 5 != 4, whole: whole(round), detail: detail(round)) {
                failures += 1
                if failures <= 3 { XCTFail("round \(round) role \(role):\n\(d)\n\(Self.render(segs))") }
            }
        }
        XCTAssertEqual(failures, 0, "of \(rounds) conversations")
        return rounds
    }

    func testGeneratedConversationsAgree() {
        let checked = compareGenerated(seed: 0x9E37_79B9_7F4A_7C15, rounds: 8000, whole: { _ in nil },
                                       detail: { $0 % 2 == 0 ? { _ in true } : { $0 % 30 != 0 } })
        // The documented difference (requests sent while waiting for the answer to CONNECT or
        // Upgrade) stays rare, so that the comparison covers nearly every conversation.
        XCTAssertLessThan(skippedPauseLost, checked / 100, "conversations left out as pause-lost")
    }

    /// Whole exchanges taken by the sink (counted in C) or declined: the exchanges taken and
    /// those that still come as messages are together what the Swift parser sees, and the
    /// assembler knows how many it did not get (HTTP1Framed.countedInC).
    func testWholeExchangesTakenOrDeclinedAgree() {
        _ = compareGenerated(seed: 0x5151_2024_0BAD_F00D, rounds: 6000, whole: { $0 % 3 != 0 },
                             detail: { $0 % 4 == 0 ? { $0 % 30 == 0 } : { _ in false } })
        XCTAssertGreaterThan(takenWhole, 3000, "exchanges taken whole: the path is exercised")
    }

    /// Header blocks of a shape already seen (wj_h1_shape): the repeated block is taken at once
    /// and only its framing fields read again, so what differs in them must still count, and
    /// a block that only looks the same (an LF moved inside a value, a name's case, a bad
    /// Content-Length) must be framed line by line, as the Swift parser frames it. Detailed
    /// messages take kept shapes too (their header bytes given at once): every exchange
    /// detailed, none, and every other one.
    func testRepeatedHeaderShapesAgree() {
        func req(_ host: String, _ extra: String = "X-Trace: 0123456789") -> String {
            "GET /r HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: load/1.0\r\n\(extra)\r\nAccept: */*\r\n\r\n"
        }
        func resp(_ cl: String, _ date: String = "Tue, 24 Nov 2026 16:00:00 GMT", body: Int? = nil,
                  name: String = "Content-Length") -> String {
            let n = body ?? Int(cl) ?? 0
            return "HTTP/1.1 200 OK\r\nServer: x\r\nDate: \(date)\r\n\(name): \(cl)\r\nConnection: keep-alive\r\n\r\n"
                + String(repeating: "b", count: n)
        }
        let exchanges: [[(String, String)]] = [
            // The same shape again and again: values of the same length differ, framing values too.
            [(req("a.example"), resp("10")), (req("b.example"), resp("20", "Tue, 24 Nov 2026 16:00:01 GMT")),
             (req("c.example"), resp("30")), (req("a.example", "X-Trace: 9876543210"), resp("05"))],
            // An LF inside a value where the kept shape has none: two lines now.
            [(req("a.example"), resp("10")), (req("a.example", "X-Trace: 01234\n6789"), resp("10")),
             (req("a.example"), resp("10", "Tue, 24 Nov\n2026 16:00:00 GMT"))],
            // A name in another case, a bad length, chunked in place of a length.
            [(req("a.example"), resp("10")), (req("a.example"), resp("10", name: "content-length")),
             (req("a.example"), resp("1x", body: 0))],
            [(req("a.example"), resp("10")), (req("a.example"), resp("chunked", body: 0, name: "Transfer-Encoding"))],
            // A value that grows by one byte: another shape.
            [(req("a.example"), resp("9")), (req("a.example"), resp("10")), (req("ab.example"), resp("10"))],
        ]
        var failures = 0
        for (k, conversation) in exchanges.enumerated() {
            for role in [HTTPRole.server, .client] {
                let out: HTTPDirection = .out, inn: HTTPDirection = .in
                let (reqDir, respDir) = role == .client ? (out, inn) : (inn, out)
                var segs: [Piece] = []
                for (q, a) in conversation {
                    segs.append(Piece(dir: reqDir, bytes: Array(q.utf8)))
                    segs.append(Piece(dir: respDir, bytes: Array(a.utf8)))
                }
                for whole in [nil, true] as [Bool?] {
                    for (name, detail) in [("none", { (_: UInt64) in false }), ("all", { (_: UInt64) in true }),
                                           ("every other", Self.alternating())] {
                        if let d = compare(segs, role: role, whole: whole, detail: detail) {
                            failures += 1
                            XCTFail("conversation \(k) role \(role) whole \(String(describing: whole)) detailed \(name):\n\(d)\n\(Self.render(segs))")
                        }
                    }
                }
            }
        }
        XCTAssertEqual(failures, 0)
    }

    /// A record budget that says yes to every other exchange of compare's conversations (its
    /// segments are 10 ns apart, a request and its response each): decided by the time, so
    /// that the C framer and the Swift parser get the same answers.
    static func alternating() -> (UInt64) -> Bool {
        { ($0 / 20) % 2 == 0 }
    }

    /// Every split point of a few conversations: two segments per piece, cut at each byte.
    func testEverySplitAgrees() {
        var g = ConversationGen(r: Rand(state: 42))
        var failures = 0
        for round in 0..<40 {
            let (pieces, role) = g.conversation()
            for k in pieces.indices {
                for cut in 1..<max(pieces[k].bytes.count, 1) {
                    var segs: [Piece] = []
                    for (j, p) in pieces.enumerated() {
                        if j == k {
                            segs.append(Piece(dir: p.dir, bytes: Array(p.bytes[..<cut])))
                            segs.append(Piece(dir: p.dir, bytes: Array(p.bytes[cut...])))
                        } else {
                            segs.append(p)
                        }
                    }
                    if let d = compare(segs, role: role, detail: { $0 % 7 != 0 }) {
                        failures += 1
                        if failures <= 3 { XCTFail("round \(round) piece \(k) cut \(cut):\n\(d)\n\(Self.render(segs))") }
                    }
                }
            }
        }
        XCTAssertEqual(failures, 0)
    }

    /// Byte by byte: every line is split everywhere at once.
    func testByteByByteAgrees() {
        var g = ConversationGen(r: Rand(state: 7))
        var failures = 0
        for round in 0..<200 {
            let (pieces, role) = g.conversation()
            var segs: [Piece] = []
            for p in pieces { for b in p.bytes { segs.append(Piece(dir: p.dir, bytes: [b])) } }
            if let d = compare(segs, role: role, detail: { _ in true }) {
                failures += 1
                if failures <= 3 { XCTFail("round \(round):\n\(d)") }
            }
        }
        XCTAssertEqual(failures, 0)
    }

    /// A client's request announced (10) before its send, and its whole response framed (30)
    /// before the request's own bytes: what a reader thread sees while the sender is still in
    /// its call.
    private func answeredBeforeSent() -> (FramerWire, [UInt8]) {
        let c = FramerWire(.client)
        let req = Array("GET /x HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        req.withUnsafeBufferPointer { wj_h1_announce(c.h, &c.sink, 0, $0.baseAddress, $0.count, 10) }
        let resp = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        resp.withUnsafeBufferPointer { wj_h1_feed(c.h, &c.sink, 0, 0, $0.baseAddress, $0.count, UInt64($0.count), 30) }
        return (c, req)
    }

    /// The send/close race: the sender is still in its call (announced, not framed) when another
    /// thread reads the answer and closes. The response cannot be paired: it is counted, not
    /// dropped silently, and no exchange is invented.
    func testResponseWhoseRequestNeverCameIsCounted() {
        let (c, _) = answeredBeforeSent()
        c.finish(mono: 40)
        XCTAssertEqual(c.out.count, 0)
        XCTAssertEqual(c.framed.unpairedResponses, 1)
        XCTAssertEqual(c.framed.lateMessages, 0)
    }

    /// The response side can be framed before the request side has framed the request: the
    /// exchange still pairs by index (Java's HttpClient, a reader thread), and the request
    /// starts when the call that sent it began (10: the announcement), before its response.
    func testResponseBeforeRequestEventPairs() {
        let (c, req) = answeredBeforeSent()
        XCTAssertEqual(c.framed.takeCompleted().count, 0, "waits for its request")
        req.withUnsafeBufferPointer { wj_h1_feed(c.h, &c.sink, 1, 0, $0.baseAddress, $0.count, UInt64($0.count), 20) }
        let out = c.framed.takeCompleted()
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(out.first.map(describeExchange),
                       "#0 GET host=h path=/x HTTP/1.1 -> 200 HTTP/1.1 interim=0 req=28+0 resp=38+2 complete=true upgraded=false error=- detailed=true headers=request.host=h;response.content-length=2 t=10,20,30,30")
    }

    /// HEAD is known to the response side from the announcement, before the request is framed.
    func testHeadAnnouncedBeforeTheResponse() {
        let c = FramerWire(.client)
        let req = Array("HEAD /x HTTP/1.1\r\n\r\n".utf8)
        req.withUnsafeBufferPointer { wj_h1_announce(c.h, &c.sink, 0, $0.baseAddress, $0.count, 10) }
        // Its Content-Length is the body a GET would have had: none follows.
        let resp = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n".utf8)
        resp.withUnsafeBufferPointer { wj_h1_feed(c.h, &c.sink, 0, 0, $0.baseAddress, $0.count, UInt64($0.count), 30) }
        req.withUnsafeBufferPointer { wj_h1_feed(c.h, &c.sink, 1, 0, $0.baseAddress, $0.count, UInt64($0.count), 20) }
        let out = c.framed.takeCompleted()
        XCTAssertEqual(out.map { $0.status }, [200])
        XCTAssertEqual(out.map { $0.responseBodyBytes }, [0])
        XCTAssertEqual(out.map { $0.complete }, [true])
        XCTAssertEqual(out.map { $0.error }, [nil])
    }
}
