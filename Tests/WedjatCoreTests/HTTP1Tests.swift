import XCTest
import WedjatCore

/// Feeds an HTTP1Stream the way the capturer does: per direction, consecutive stream offsets.
private final class Wire {
    let s: HTTP1Stream
    var off: [HTTPDirection: UInt64] = [.out: 0, .in: 0]
    var out: [HTTPExchange] = []

    init(_ role: HTTPRole = .client, redaction: HTTPRedaction = .init(), maxHeaderBytes: Int = 64 * 1024) {
        s = HTTP1Stream(role: role, redaction: redaction, maxHeaderBytes: maxHeaderBytes)
    }

    /// One segment holding all of `text`.
    func send(_ dir: HTTPDirection, _ text: String, mono: UInt64) {
        send(dir, Array(text.utf8), mono: mono)
    }

    func send(_ dir: HTTPDirection, _ bytes: [UInt8], mono: UInt64, ioEnd: UInt64? = nil) {
        let o = off[dir]!
        s.feed(dir, offset: o, bytes: bytes, ioEnd: ioEnd ?? o + UInt64(bytes.count), mono: mono)
        off[dir] = max(o + UInt64(bytes.count), ioEnd ?? 0)
        collect()
    }

    /// A call that moved `n` bytes of which none were captured.
    func uncaptured(_ dir: HTTPDirection, _ n: UInt64, mono: UInt64) {
        let o = off[dir]!
        s.feed(dir, offset: o, bytes: [], ioEnd: o + n, mono: mono)
        off[dir] = o + n
        collect()
    }

    /// A call of `text` of which only the bytes from offset `from` on were captured.
    func sendCapturedFrom(_ dir: HTTPDirection, _ text: String, from: UInt64, mono: UInt64) {
        let o = off[dir]!
        let b = Array(text.utf8)
        let skip = Int(min(max(from, o) - o, UInt64(b.count)))
        s.feed(dir, offset: o + UInt64(skip), bytes: Array(b[skip...]), ioEnd: o + UInt64(b.count), mono: mono)
        off[dir] = o + UInt64(b.count)
        collect()
    }

    func finish(mono: UInt64) {
        s.finish(mono: mono)
        collect()
    }

    func collect() { out += s.takeCompleted() }
}

private func describe(_ e: HTTPExchange, times: Bool = false) -> String {
    var d = "#\(e.index) \(e.method) \(e.host ?? "-") \(e.path) -> \(e.status.map(String.init) ?? "nil") interim=\(e.interim)"
    d += " req=\(e.requestHeaderBytes)+\(e.requestBodyBytes) resp=\(e.responseHeaderBytes)+\(e.responseBodyBytes)"
    d += " complete=\(e.complete) upgraded=\(e.upgraded) error=\(e.error ?? "-")"
    d += " headers=" + e.headers.map { "\($0.0)=\($0.1)" }.joined(separator: ";")
    if times {
        func t(_ v: UInt64?) -> String { v.map(String.init) ?? "nil" }
        d += " t=\(t(e.requestStart)),\(t(e.requestEnd)),\(t(e.responseStart)),\(t(e.responseEnd))"
    }
    return d
}

private func n(_ s: String) -> UInt64 { UInt64(s.utf8.count) }

/// xorshift64* with a fixed seed: reproducible fuzzing without Foundation.
private struct XorShift {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
}

// A conversation exercising keep-alive, pipelining, bodies of every framing and interim responses.
private let convOut = [
    "GET /a?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t/1\r\n\r\n",
    "POST /b HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nExpect: 100-continue\r\n\r\nhello",
    "PUT /c HTTP/1.1\r\nhost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
    "HEAD /d HTTP/1.1\r\nHost: h\r\n\r\n",
]
private let convIn = [
    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/html\r\n\r\nabc",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4\r\nwxyz\r\n10;ext=\"q\"\r\n0123456789abcdef\r\n0\r\nTrailer: x\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 100\r\n\r\n",
]

final class HTTP1Tests: XCTestCase {

    // MARK: basic exchanges

    func testKeepAliveExchangesValuesAndTimes() {
        let w = Wire()
        let req1 = "GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n\r\n"
        let resp1 = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 11\r\n\r\nhello world"
        w.send(.out, req1, mono: 100)
        XCTAssertEqual(w.s.state, .http)
        XCTAssertTrue(w.out.isEmpty)
        w.send(.in, resp1, mono: 250)
        let req2 = "POST /api HTTP/1.1\r\nHost: example.com\r\nContent-Length: 4\r\n\r\n"
        w.send(.out, req2, mono: 300)
        w.send(.out, "body", mono: 310)
        w.send(.in, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", mono: 400)
        w.send(.out, "DELETE /x/y HTTP/1.0\r\n\r\n", mono: 500)
        w.send(.in, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", mono: 600)
        w.send(.in, "ok", mono: 650)
        XCTAssertEqual(w.out.count, 3)
        XCTAssertEqual(w.s.requestCount, 3)
        guard w.out.count == 3 else { return }
        let a = w.out[0], b = w.out[1], c = w.out[2]
        XCTAssertEqual(a.index, 0)
        XCTAssertEqual(a.method, "GET")
        XCTAssertEqual(a.path, "/index.html")
        XCTAssertEqual(a.host, "example.com")
        XCTAssertEqual(a.status, 200)
        XCTAssertEqual(a.requestHeaderBytes, n(req1))
        XCTAssertEqual(a.requestBodyBytes, 0)
        XCTAssertEqual(a.responseHeaderBytes, n(resp1) - 11)
        XCTAssertEqual(a.responseBodyBytes, 11)
        XCTAssertEqual(a.requestStart, 100)
        XCTAssertEqual(a.requestEnd, 100)
        XCTAssertEqual(a.responseStart, 250)
        XCTAssertEqual(a.responseEnd, 250)
        XCTAssertEqual(a.ttfbNs, 150)
        XCTAssertEqual(a.durationNs, 150)
        XCTAssertTrue(a.complete)
        XCTAssertNil(a.error)
        XCTAssertEqual(a.requestHeader("user-agent"), "curl/8.0")
        XCTAssertEqual(a.responseHeader("content-type"), "text/html")
        XCTAssertEqual(a.responseHeader("content-length"), "11")

        XCTAssertEqual(b.index, 1)
        XCTAssertEqual(b.method, "POST")
        XCTAssertEqual(b.status, 404)
        XCTAssertEqual(b.requestHeaderBytes, n(req2))
        XCTAssertEqual(b.requestBodyBytes, 4)
        XCTAssertEqual(b.responseBodyBytes, 0)
        XCTAssertEqual(b.requestStart, 300)
        XCTAssertEqual(b.requestEnd, 310)
        XCTAssertEqual(b.responseStart, 400)
        XCTAssertEqual(b.responseEnd, 400)
        XCTAssertEqual(b.waitNs, 90)
        XCTAssertEqual(b.ttfbNs, 100)

        XCTAssertEqual(c.index, 2)
        XCTAssertEqual(c.method, "DELETE")
        XCTAssertEqual(c.path, "/x/y")
        XCTAssertNil(c.host)
        XCTAssertEqual(c.responseEnd, 650)
        XCTAssertEqual(c.responseStart, 600)
        XCTAssertTrue(w.s.takeCompleted().isEmpty, "each exchange is returned once")
        w.finish(mono: 700)
        XCTAssertEqual(w.out.count, 3, "nothing pending at close")
        XCTAssertEqual(w.s.state, .closed)
    }

    func testServerRoleSwapsDirections() {
        let w = Wire(.server)
        w.send(.in, "GET / HTTP/1.1\r\nHost: svc\r\n\r\n", mono: 10)
        w.send(.out, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", mono: 20)
        XCTAssertEqual(w.out.map { describe($0) }, ["#0 GET svc / -> 200 interim=0 req=29+0 resp=38+2 complete=true upgraded=false error=- headers=request.host=svc;response.content-length=2"])
        XCTAssertEqual(w.out.first?.requestStart, 10)
        XCTAssertEqual(w.out.first?.responseEnd, 20)
        // A server receiving a response-looking first line: not HTTP requests.
        let v = Wire(.server)
        v.send(.in, "HTTP/1.1 200 OK\r\n\r\n", mono: 1)
        XCTAssertEqual(v.s.state, .notHTTP)
    }

    func testPipeliningMatchesResponsesInOrder() {
        let w = Wire()
        w.send(.out, "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HTTP/1.1\r\nHost: h\r\n\r\n", mono: 1)
        XCTAssertEqual(w.s.requestCount, 3)
        XCTAssertEqual(w.s.pendingCount, 3)
        // HEAD's response carries Content-Length but no body: the next response follows at once.
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nAHTTP/1.1 200 OK\r\nContent-Length: 9999\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 3\r\n\r\nCCC", mono: 2)
        XCTAssertEqual(w.out.map(\.path), ["/1", "/2", "/3"])
        XCTAssertEqual(w.out.map(\.status), [200, 200, 500])
        XCTAssertEqual(w.out.map(\.responseBodyBytes), [1, 0, 3])
        XCTAssertEqual(w.out.map(\.index), [0, 1, 2])
        XCTAssertEqual(w.out.map(\.complete), [true, true, true])
        XCTAssertEqual(w.s.pendingCount, 0)
    }

    // MARK: bodies

    func testChunkedBodiesWithExtensionsAndTrailers() {
        let w = Wire()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        let body = "5;name=value\r\nhello\r\n0\r\n\r\n"
        w.send(.out, head + body, mono: 5)
        let rhead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
        w.send(.in, rhead, mono: 6)
        XCTAssertEqual(w.s.wantFrom(.in), n(rhead), "a chunk-size line is needed")
        w.send(.in, "1a\r\n", mono: 7)
        XCTAssertEqual(w.s.wantFrom(.in), n(rhead) + 4 + 0x1a - 1, "the last byte of the chunk data")
        w.send(.in, String(repeating: "z", count: 0x1a) + "\r\n", mono: 8)
        w.send(.in, "0\r\nX-Checksum: 1\r\nX-Other: 2\r\n", mono: 9)
        XCTAssertTrue(w.out.isEmpty, "the trailer block is not finished")
        w.send(.in, "\r\n", mono: 10)
        XCTAssertEqual(w.out.count, 1)
        guard let e = w.out.first else { return }
        XCTAssertEqual(e.requestHeaderBytes, n(head))
        XCTAssertEqual(e.requestBodyBytes, n(body))
        XCTAssertEqual(e.responseHeaderBytes, n(rhead))
        XCTAssertEqual(e.responseBodyBytes, 4 + 0x1a + 2 + n("0\r\nX-Checksum: 1\r\nX-Other: 2\r\n") + 2)
        XCTAssertEqual(e.responseStart, 6)
        XCTAssertEqual(e.responseEnd, 10)
        XCTAssertTrue(e.complete)
        XCTAssertEqual(w.s.wantFrom(.in), w.off[.in]!)
    }

    func testRequestWithTransferEncodingNotChunkedIsAParseError() {
        let w = Wire()
        w.send(.out, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", mono: 1)
        XCTAssertEqual(w.s.state, .desynced)
        XCTAssertEqual(w.out.first?.error, "parse")
        let c = Wire()
        c.send(.out, "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", mono: 1)
        XCTAssertEqual(c.out.first?.error, "parse", "conflicting lengths")
        let d = Wire()
        d.send(.out, "POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n", mono: 1)
        XCTAssertEqual(d.s.state, .http)
        XCTAssertEqual(d.s.requestCount, 2)
    }

    func testCloseDelimitedResponseEndsAtFinish() {
        let w = Wire()
        w.send(.out, "GET /stream HTTP/1.0\r\n\r\n", mono: 1)
        let rh = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
        w.send(.in, rh + "part", mono: 2)
        XCTAssertEqual(w.s.wantFrom(.in), .max)
        XCTAssertEqual(w.s.wantFrom(.out), n("GET /stream HTTP/1.0\r\n\r\n"))
        XCTAssertTrue(w.out.isEmpty)
        w.finish(mono: 90)
        XCTAssertEqual(w.out.count, 1)
        guard let e = w.out.first else { return }
        XCTAssertEqual(e.responseEnd, 90, "no body segment after the headers: the close")
        XCTAssertEqual(e.responseBodyBytes, 4)
        XCTAssertTrue(e.complete)
        XCTAssertNil(e.error)

        // Body segments delivered after the headers: the last one is the end.
        let v = Wire()
        v.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        v.send(.in, "HTTP/1.1 200 OK\r\n\r\n", mono: 2)
        v.send(.in, "aaaa", mono: 3)
        v.uncaptured(.in, 6, mono: 4)
        v.send(.in, [], mono: 5)          // EOF read: moves nothing
        v.finish(mono: 99)
        XCTAssertEqual(v.out.first?.responseEnd, 4)
        XCTAssertEqual(v.out.first?.responseBodyBytes, 10)
    }

    func testInterimResponsesBeforeTheFinal() {
        let w = Wire()
        let rq = "PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"
        w.send(.out, rq, mono: 10)
        let c100 = "HTTP/1.1 100 Continue\r\n\r\n"
        w.send(.in, c100, mono: 20)
        w.send(.out, "abc", mono: 30)
        let c103 = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
        w.send(.in, c103, mono: 40)
        let fin = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
        w.send(.in, fin, mono: 50)
        XCTAssertEqual(w.out.count, 1)
        guard let e = w.out.first else { return }
        XCTAssertEqual(e.status, 201)
        XCTAssertEqual(e.interim, 2)
        XCTAssertEqual(e.responseHeaderBytes, n(c100) + n(c103) + n(fin))
        XCTAssertEqual(e.requestBodyBytes, 3)
        XCTAssertEqual(e.requestEnd, 30)
        XCTAssertEqual(e.responseStart, 20)
        XCTAssertEqual(e.responseEnd, 50)
        XCTAssertNil(e.waitNs, "the response started before the request ended")
        XCTAssertEqual(e.ttfbNs, 10)
    }

    /// The request line's version and the final response's, each exactly as written: an
    /// HTTP/1.0 request, a 1.1 server answering a 1.0 client, and an interim 1.1 response
    /// before a 1.0 final one (the final one counts). No response: no response version.
    func testVersionsOfRequestAndResponse() {
        let w = Wire()
        w.send(.out, "GET /a HTTP/1.0\r\nHost: h\r\n\r\n", mono: 1)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", mono: 2)
        w.send(.out, "GET /b HTTP/1.1\r\n\r\n", mono: 3)
        w.send(.in, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 204 No Content\r\n\r\n", mono: 4)
        w.send(.out, "GET /c HTTP/1.1\r\n\r\n", mono: 5)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", mono: 6)
        w.send(.out, "GET /d HTTP/1.0\r\n\r\n", mono: 7)
        w.finish(mono: 8)
        XCTAssertEqual(w.out.map(\.path), ["/a", "/b", "/c", "/d"])
        XCTAssertEqual(w.out.map(\.version), ["HTTP/1.0", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0"])
        XCTAssertEqual(w.out.map(\.responseVersion), ["HTTP/1.1", "HTTP/1.0", "HTTP/1.1", nil])
        XCTAssertEqual(w.out.map(\.interim), [0, 1, 0, 0])
        XCTAssertEqual(w.out.last?.error, "incomplete")
        // The server's view of the same bytes: the same versions.
        let v = Wire(.server)
        v.send(.in, "POST /u HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", mono: 1)
        v.send(.out, "HTTP/1.0 201 Created\r\nContent-Length: 0\r\n\r\n", mono: 2)
        XCTAssertEqual(v.out.map(\.version), ["HTTP/1.0"])
        XCTAssertEqual(v.out.map(\.responseVersion), ["HTTP/1.0"])
    }

    /// Versions other than 1.0 and 1.1 are not HTTP/1 start lines.
    func testOtherVersionsAreNotParsed() {
        let w = Wire()
        w.send(.out, "GET / HTTP/1.2\r\n\r\n", mono: 1)
        XCTAssertEqual(w.s.state, .notHTTP)
        let v = Wire()
        v.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        v.send(.in, "HTTP/1.9 200 OK\r\n\r\n", mono: 2)
        XCTAssertEqual(v.out.map(\.error), ["parse"])
        XCTAssertEqual(v.out.map(\.responseVersion), [nil])
    }

    func testNoBodyFor204And304AndHEAD() {
        let w = Wire()
        w.send(.out, "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nIf-None-Match: x\r\n\r\nHEAD /c HTTP/1.1\r\n\r\nGET /d HTTP/1.1\r\n\r\n", mono: 1)
        // 204/304 with a (forbidden) Content-Length still have no body.
        w.send(.in, "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", mono: 2)
        w.send(.in, "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", mono: 3)
        w.send(.in, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", mono: 4)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", mono: 5)
        XCTAssertEqual(w.out.map(\.status), [204, 304, 200, 200])
        XCTAssertEqual(w.out.map(\.responseBodyBytes), [0, 0, 0, 1])
        XCTAssertEqual(w.out.map(\.responseEnd), [2, 3, 4, 5])
        XCTAssertEqual(w.s.state, .http)
    }

    // MARK: tunnels

    func testSwitchingProtocolsStopsParsing() {
        let w = Wire()
        w.send(.out, "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", mono: 1)
        XCTAssertEqual(w.s.wantFrom(.out), w.off[.out]!)
        w.send(.in, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\u{81}\u{5}hello", mono: 2)
        XCTAssertEqual(w.s.state, .tunnel)
        XCTAssertEqual(w.s.wantFrom(.out), .max)
        XCTAssertEqual(w.s.wantFrom(.in), .max)
        XCTAssertEqual(w.out.count, 1)
        XCTAssertEqual(w.out.first?.status, 101)
        XCTAssertEqual(w.out.first?.upgraded, true)
        XCTAssertEqual(w.out.first?.complete, true)
        XCTAssertEqual(w.out.first?.responseEnd, 2)
        w.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 3)
        w.finish(mono: 4)
        XCTAssertEqual(w.out.count, 1, "nothing after the upgrade")
        XCTAssertEqual(w.s.requestCount, 1)
    }

    func testConnect() {
        let w = Wire()
        w.send(.out, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\n", mono: 1)
        w.send(.in, "HTTP/1.1 407 Proxy Auth Required\r\nContent-Length: 4\r\n\r\nnope", mono: 2)
        XCTAssertEqual(w.s.state, .http, "a refused CONNECT keeps the connection HTTP")
        w.send(.out, "CONNECT user:pw@example.com:443 HTTP/1.1\r\n\r\n", mono: 3)
        w.send(.in, "HTTP/1.1 200 Connection established\r\n\r\n", mono: 4)
        XCTAssertEqual(w.s.state, .tunnel)
        w.send(.out, [0x16, 0x03, 0x01, 0x02, 0x00], mono: 5)
        XCTAssertEqual(w.out.map(\.status), [407, 200])
        XCTAssertEqual(w.out.map(\.upgraded), [false, true])
        XCTAssertEqual(w.out.map(\.path), ["example.com:443", "REDACTED@example.com:443"])
        XCTAssertEqual(w.out.map(\.host), ["example.com:443", "example.com:443"])
        XCTAssertEqual(w.out.map(\.responseBodyBytes), [4, 0])
    }

    func testRequestBytesAfterUpgradeRequestWaitForTheAnswer() {
        let w = Wire()
        // The next request arrives before the answer to the Upgrade request (out of order events):
        // it is held and parsed once the answer turns out not to switch protocols.
        w.send(.out, "GET /u HTTP/1.1\r\nUpgrade: h2c\r\n\r\nGET /n", mono: 1)
        w.send(.out, "ext HTTP/1.1\r\n\r\n", mono: 2)
        XCTAssertEqual(w.s.requestCount, 1)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", mono: 3)
        XCTAssertEqual(w.s.requestCount, 2)
        XCTAssertEqual(w.out.map(\.path), ["/u", "/next"])
        XCTAssertEqual(w.out.map(\.requestStart), [1, 1])
        XCTAssertEqual(w.out.map(\.requestEnd), [1, 2])
    }

    func testUpgradeRequestAnsweredBeforeItsBodyEnds() {
        let w = Wire()
        w.send(.out, "POST /u HTTP/1.1\r\nUpgrade: h2c\r\nContent-Length: 4\r\n\r\nab", mono: 1)
        w.send(.in, "HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n", mono: 2)
        w.send(.out, "cdGET /next HTTP/1.1\r\n\r\n", mono: 3)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", mono: 4)
        XCTAssertEqual(w.out.map(\.path), ["/u", "/next"])
        XCTAssertEqual(w.out.map(\.status), [413, 200])
        XCTAssertEqual(w.out.map(\.reused), [false, true])
        XCTAssertEqual(w.out.first?.requestEnd, 3)
        XCTAssertEqual(w.s.state, .http)
    }

    // MARK: privacy

    func testRedactionOfTargets() {
        let cases: [(String, HTTPRedaction, String, String?)] = [
            ("/p/q?token=abc&x=1", .init(), "/p/q?REDACTED", nil),
            ("/p/q?token=abc#frag", .init(), "/p/q?REDACTED", nil),
            ("/p#frag", .init(), "/p", nil),
            ("/p?q#f", .none, "/p?q#f", nil),
            ("/p?q#f", HTTPRedaction(query: false, userinfo: true, fragment: true), "/p?q", nil),
            ("/p?q#f", HTTPRedaction(query: true, userinfo: true, fragment: false), "/p?REDACTED#f", nil),
            ("http://user:pw@example.com:8080/a?b=c", .init(), "http://REDACTED@example.com:8080/a?REDACTED", "example.com:8080"),
            ("HTTPS://u@h?x", .init(), "HTTPS://REDACTED@h?REDACTED", "h"),
            ("http://user:pw@example.com/a", .none, "http://user:pw@example.com/a", "example.com"),
            ("http://example.com", .init(), "http://example.com", "example.com"),
            ("*", .init(), "*", nil),
            ("/?", .init(), "/?REDACTED", nil),
        ]
        for (target, r, path, host) in cases {
            let w = Wire(redaction: r)
            w.send(.out, "OPTIONS \(target) HTTP/1.1\r\n\r\n", mono: 1)
            w.finish(mono: 2)
            XCTAssertEqual(w.out.first?.path, path, target)
            XCTAssertEqual(w.out.first?.host, host, target)
            XCTAssertEqual(w.out.first?.error, "incomplete")
        }
    }

    func testRedactionSettingParses() throws {
        XCTAssertEqual(try HTTPRedaction(parsing: "query"), HTTPRedaction(query: true, userinfo: false, fragment: false))
        XCTAssertEqual(try HTTPRedaction(parsing: " Fragment , userinfo"), HTTPRedaction(query: false, userinfo: true, fragment: true))
        XCTAssertEqual(try HTTPRedaction(parsing: "none"), .none)
        XCTAssertEqual(try HTTPRedaction(parsing: "ALL"), HTTPRedaction())
        XCTAssertThrowsError(try HTTPRedaction(parsing: "query,cookies"))
        XCTAssertThrowsError(try HTTPRedaction(parsing: ""))
        XCTAssertThrowsError(try HTTPRedaction(parsing: "none,query"))
        XCTAssertThrowsError(try HTTPRedaction(parsing: "query,,fragment"))
        do {
            _ = try HTTPRedaction(parsing: "bogus")
        } catch let e as HTTPRedaction.ParseError {
            XCTAssertTrue(e.message.contains("bogus"), e.message)
        }
    }

    func testOnlyAllowlistedHeadersAreKept() {
        let w = Wire()
        w.send(.out, "GET /me HTTP/1.1\r\nHOST: api.example\r\nAuthorization: Bearer SECRET-A\r\nCookie: sid=SECRET-B\r\n"
               + "X-Api-Key: SECRET-C\r\nuser-agent:   ua/2  \r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n", mono: 1)
        w.send(.in, "HTTP/1.1 200 OK\r\nSet-Cookie: sid=SECRET-D\r\nContent-Type: text/plain\r\nWWW-Authenticate: SECRET-E\r\n"
               + "Content-Length: 2\r\n\r\nok", mono: 2)
        XCTAssertEqual(w.out.count, 1)
        guard let e = w.out.first else { return }
        XCTAssertEqual(e.headers.map(\.0), ["request.host", "request.user-agent", "request.content-type", "request.content-length",
                                           "response.content-type", "response.content-length"])
        XCTAssertEqual(e.headers.map(\.1), ["api.example", "ua/2", "application/json", "0", "text/plain", "2"])
        XCTAssertEqual(e.host, "api.example")
        let dump = "\(e)"
        XCTAssertTrue(dump.contains("api.example"), "the dump shows the exchange")
        XCTAssertFalse(dump.contains("SECRET"), dump)
        XCTAssertFalse(dump.lowercased().contains("cookie"), dump)
        XCTAssertFalse(dump.lowercased().contains("authoriz"), dump)
    }

    // MARK: segmentation

    private func feedConversation(_ w: Wire, outSplits: [Int], inSplits: [Int], monoBase: (UInt64, UInt64) = (1000, 1_000_000)) {
        for (dir, text, splits, base) in [(HTTPDirection.out, convOut.joined(), outSplits, monoBase.0),
                                          (HTTPDirection.in, convIn.joined(), inSplits, monoBase.1)] {
            let b = Array(text.utf8)
            var start = 0
            for cut in splits + [b.count] where cut > start {
                w.send(dir, Array(b[start..<cut]), mono: base + UInt64(start))
                start = cut
            }
        }
        w.finish(mono: 5_000_000)
    }

    func testConversationReference() {
        let w = Wire()
        feedConversation(w, outSplits: [], inSplits: [])
        let d = w.out.map { describe($0) }
        XCTAssertEqual(d, [
            "#0 GET example.com /a?REDACTED -> 200 interim=0 req=59+0 resp=63+3 complete=true upgraded=false error=- headers=request.host=example.com;request.user-agent=t/1;response.content-length=3;response.content-type=text/html",
            "#1 POST example.com /b -> 201 interim=1 req=106+5 resp=83+56 complete=true upgraded=false error=- headers=request.host=example.com;request.content-length=5;request.content-type=text/plain",
            "#2 PUT h /c -> 204 interim=0 req=56+25 resp=27+0 complete=true upgraded=false error=- headers=request.host=h",
            "#3 HEAD h /d -> 200 interim=0 req=29+0 resp=40+0 complete=true upgraded=false error=- headers=request.host=h;response.content-length=100",
        ])
        XCTAssertEqual(UInt64(convIn[1].utf8.count), 83 + 56)
    }

    func testEverySplitPointGivesTheSameExchanges() {
        let ref = Wire()
        feedConversation(ref, outSplits: [], inSplits: [])
        let expected = ref.out.map { describe($0) }
        XCTAssertEqual(expected.count, 4)
        let outLen = convOut.joined().utf8.count, inLen = convIn.joined().utf8.count
        for k in 1..<outLen {
            let w = Wire()
            feedConversation(w, outSplits: [k], inSplits: [])
            XCTAssertEqual(w.out.map { describe($0) }, expected, "out split at \(k)")
        }
        for k in 1..<inLen {
            let w = Wire()
            feedConversation(w, outSplits: [], inSplits: [k])
            XCTAssertEqual(w.out.map { describe($0) }, expected, "in split at \(k)")
        }
    }

    func testByteAtATimeGivesTheSameExchangesAndExactTimes() {
        let ref = Wire()
        feedConversation(ref, outSplits: [], inSplits: [])
        let w = Wire()
        feedConversation(w, outSplits: Array(1..<convOut.joined().utf8.count), inSplits: Array(1..<convIn.joined().utf8.count))
        XCTAssertEqual(w.out.map { describe($0) }, ref.out.map { describe($0) })
        // Each segment's mono is base + its offset: start = first byte, end = last byte.
        var o: UInt64 = 0, i: UInt64 = 0
        for (k, e) in w.out.enumerated() {
            let lo = n(convOut[k]), li = n(convIn[k])
            XCTAssertEqual(e.requestStart, 1000 + o, "#\(k)")
            XCTAssertEqual(e.requestEnd, 1000 + o + lo - 1, "#\(k)")
            XCTAssertEqual(e.responseStart, 1_000_000 + i, "#\(k)")
            XCTAssertEqual(e.responseEnd, 1_000_000 + i + li - 1, "#\(k)")
            o += lo
            i += li
        }
    }

    func testBareLineFeedsAtEverySplitPoint() {
        let req = Array("GET /lf HTTP/1.1\nHost: lf.example\nUser-Agent: x\n\n".utf8)
        let resp = Array("HTTP/1.1 200 OK\nContent-Type: a/b\nContent-Length: 2\n\nok".utf8)
        for k in 1..<req.count {
            let w = Wire()
            w.send(.out, Array(req[..<k]), mono: 1)
            w.send(.out, Array(req[k...]), mono: 2)
            w.send(.in, Array(resp[..<min(k, resp.count - 1)]), mono: 3)
            w.send(.in, Array(resp[min(k, resp.count - 1)...]), mono: 4)
            XCTAssertEqual(w.out.map { describe($0) },
                           ["#0 GET lf.example /lf -> 200 interim=0 req=49+0 resp=53+2 complete=true upgraded=false error=- headers=request.host=lf.example;request.user-agent=x;response.content-type=a/b;response.content-length=2"],
                           "split at \(k)")
        }
    }

    func testCapturerHonouringWantFromSkipsBodiesWithTheSameResult() {
        // Bodies big enough to skip; the capturer drops bytes before wantFrom of each call.
        let body = String(repeating: "b", count: 5000)
        let chunk = String(repeating: "c", count: 3000)
        let outText = "POST /x HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + body + "GET /y HTTP/1.1\r\n\r\n"
        let inText = "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + body
            + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nbb8\r\n" + chunk + "\r\nbb8\r\n" + chunk + "\r\n0\r\n\r\n"
        let ref = Wire()
        ref.send(.out, outText, mono: 1)
        ref.send(.in, inText, mono: 2)
        for step in [1, 7, 100, 1000, 4096] {
            let w = Wire()
            var captured = 0
            for (dir, text) in [(HTTPDirection.out, outText), (HTTPDirection.in, inText)] {
                let b = Array(text.utf8)
                var at = 0
                while at < b.count {
                    let end = min(at + step, b.count)
                    let from = Int(min(w.s.wantFrom(dir), UInt64(b.count)))
                    let slice = from > at ? Array(b[min(from, end)..<end]) : Array(b[at..<end])
                    captured += slice.count
                    w.s.feed(dir, offset: UInt64(min(max(from, at), end)), bytes: slice, ioEnd: UInt64(end), mono: UInt64(end))
                    at = end
                }
                w.collect()
            }
            XCTAssertEqual(w.out.map { describe($0) }, ref.out.map { describe($0) }, "step \(step)")
            XCTAssertEqual(w.out.map(\.requestEnd), [UInt64(n(outText) - n("GET /y HTTP/1.1\r\n\r\n")), UInt64(n(outText))].map { ($0 + UInt64(step) - 1) / UInt64(step) * UInt64(step) }.map { min($0, n(outText)) }, "step \(step)")
            XCTAssertEqual(w.out.last?.responseEnd, n(inText), "step \(step)")
            let total = outText.utf8.count + inText.utf8.count
            XCTAssertLessThan(captured, step <= 1000 ? total / 2 : total - 4000, "bodies were skipped at step \(step)")
        }
    }

    // MARK: gaps

    func testGapInsideASkippedBodyIsFine() {
        let w = Wire()
        w.send(.out, "GET /big HTTP/1.1\r\n\r\n", mono: 1)
        let rh = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
        w.send(.in, rh + "first bytes", mono: 2)
        let s = n(rh)
        XCTAssertEqual(w.s.wantFrom(.in), s + 100_000 - 1)
        // Calls whose bytes were not captured, then one whose capture starts at the last body byte.
        w.uncaptured(.in, 50_000, mono: 3)
        w.uncaptured(.in, 30_000, mono: 4)
        XCTAssertTrue(w.out.isEmpty)
        let o = w.off[.in]!
        let rest = s + 100_000 - o                   // bytes of the body still to come
        w.s.feed(.in, offset: s + 100_000 - 1, bytes: Array("x".utf8), ioEnd: o + rest, mono: 5)
        w.off[.in] = o + rest
        w.collect()
        XCTAssertEqual(w.out.count, 1)
        XCTAssertEqual(w.out.first?.responseEnd, 5)
        XCTAssertEqual(w.out.first?.responseBodyBytes, 100_000)
        XCTAssertEqual(w.s.state, .http)
        // The last body byte is never captured, but a call moved it: the body ended then.
        w.send(.out, "GET /again HTTP/1.1\r\n\r\n", mono: 6)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", mono: 7)
        w.uncaptured(.in, 10, mono: 8)
        XCTAssertEqual(w.out.count, 2)
        XCTAssertEqual(w.out.last?.responseEnd, 8)
        XCTAssertEqual(w.s.wantFrom(.in), w.off[.in]!)
        // Gaps inside chunk data too.
        w.send(.out, "GET /c HTTP/1.1\r\n\r\n", mono: 9)
        w.send(.in, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n", mono: 10)
        let dataStart = w.off[.in]!
        XCTAssertEqual(w.s.wantFrom(.in), dataStart + 0x1000 - 1)
        w.uncaptured(.in, 0x1000 - 1, mono: 11)
        w.send(.in, "z\r\n0\r\n\r\n", mono: 12)
        XCTAssertEqual(w.out.count, 3)
        XCTAssertEqual(w.out.last?.responseEnd, 12)
        XCTAssertEqual(w.out.last?.responseBodyBytes, n("1000\r\n") + 0x1000 + n("\r\n0\r\n\r\n"))
        XCTAssertEqual(w.s.state, .http)
    }

    func testGapInHeadersDesyncs() {
        let w = Wire()
        w.send(.out, "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n", mono: 1)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Le", mono: 2)
        w.uncaptured(.in, 5, mono: 3)                 // lost bytes inside the header block
        XCTAssertEqual(w.s.state, .desynced)
        XCTAssertEqual(w.s.wantFrom(.in), .max)
        XCTAssertEqual(w.s.wantFrom(.out), .max)
        XCTAssertEqual(w.out.map(\.error), ["desync", "desync"])
        XCTAssertEqual(w.out.map(\.complete), [false, false])
        w.send(.in, "ngth: 0\r\n\r\n", mono: 4)
        XCTAssertEqual(w.out.count, 2, "nothing after a desync")

        // A segment starting past the expected offset, between messages.
        let v = Wire()
        v.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        v.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", mono: 2)
        v.off[.out]! += 3
        v.send(.out, "T / HTTP/1.1\r\n\r\n", mono: 3)
        XCTAssertEqual(v.s.state, .desynced)
        XCTAssertEqual(v.out.map(\.error), [nil])

        // A call that moved more than was captured, inside a chunk-size line.
        let u = Wire()
        u.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        u.send(.in, Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5".utf8), mono: 2, ioEnd: 200)
        XCTAssertEqual(u.s.state, .desynced)
        XCTAssertEqual(u.out.map(\.error), ["desync"])
    }

    func testFinishMidMessageIsIncomplete() {
        let w = Wire()
        w.send(.out, "GET /1 HTTP/1.1\r\n\r\nPOST /2 HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", mono: 1)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", mono: 2)
        w.finish(mono: 3)
        XCTAssertEqual(w.out.map(\.error), ["incomplete", "incomplete"])
        XCTAssertEqual(w.out.map(\.complete), [false, false])
        XCTAssertEqual(w.out.map(\.status), [200, nil])
        XCTAssertEqual(w.out.map(\.responseEnd), [nil, nil])
        XCTAssertEqual(w.out.last?.requestEnd, nil)
        XCTAssertEqual(w.s.wantFrom(.out), .max)
    }

    // MARK: not HTTP, limits, garbage

    func testNonHTTPTrafficIsRecognisedOnTheFirstBytes() {
        let probes: [[UInt8]] = [
            Array("*1\r\n$4\r\nPING\r\n".utf8),                          // redis
            [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03],  // TLS ClientHello
            Array("SSH-2.0-OpenSSH_9.2\r\n".utf8),
            Array("PING\r\n".utf8),                                      // redis inline
            Array("get key\r\n".utf8),                                   // memcached
            Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8),              // HTTP/2 prior knowledge
            Array("GET /x HTTP/1.1x\r\n".utf8),
            Array("GET x HTTP/1.1\r\n".utf8),
            Array("\r\nGET / HTTP/1.1\r\n".utf8),
            Array("GETTTTTTTTTTTTTTTTTTTTTTT / HTTP/1.1\r\n".utf8),
            Array("GET /\u{1} HTTP/1.1\r\n".utf8),
        ]
        for p in probes {
            let w = Wire()
            w.send(.out, p, mono: 1)
            XCTAssertEqual(w.s.state, .notHTTP, "\(p)")
            XCTAssertEqual(w.s.wantFrom(.out), .max)
            XCTAssertEqual(w.s.wantFrom(.in), .max)
            w.send(.in, "HTTP/1.1 200 OK\r\n\r\n", mono: 2)
            w.finish(mono: 3)
            XCTAssertTrue(w.out.isEmpty)
            XCTAssertEqual(w.s.requestCount, 0)
        }
        // Decided on a few bytes, without waiting for a line end.
        for p in [[UInt8]([0x16, 0x03]), Array("*1".utf8), Array("GET  ".utf8), Array("GET http:/x".utf8)] {
            let w = Wire()
            w.send(.out, p, mono: 1)
            XCTAssertEqual(w.s.state, .notHTTP, "\(p)")
        }
        // Byte at a time too: "GET x" fails at the x, before any line end.
        let b = Wire()
        for ch in "GET x".utf8 {
            XCTAssertEqual(b.s.state, .detecting)
            b.send(.out, [ch], mono: 1)
        }
        XCTAssertEqual(b.s.state, .notHTTP)
        for p in ["G", "GET", "GET ", "GET /", "GET h", "GET http", "GET HTTPS://", "CONNECT h", "OPTIONS *"] {
            let w = Wire()
            w.send(.out, p, mono: 1)
            XCTAssertEqual(w.s.state, .detecting, p)
        }
        // Server speaks first (SMTP, MySQL...): not HTTP.
        let w = Wire()
        w.send(.in, "220 mail.example ESMTP\r\n", mono: 1)
        XCTAssertEqual(w.s.state, .notHTTP)
        // A gap before the first request line: cannot tell.
        let g = Wire()
        g.off[.out] = 10
        g.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        XCTAssertEqual(g.s.state, .notHTTP)
    }

    func testHeaderBlockLargerThanTheLimit() {
        let w = Wire(maxHeaderBytes: 1024)
        w.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        w.send(.in, "HTTP/1.1 200 OK\r\n", mono: 2)
        for k in 0..<40 { w.send(.in, "X-Filler-\(k): " + String(repeating: "v", count: 20) + "\r\n", mono: 3) }
        XCTAssertEqual(w.s.state, .desynced)
        XCTAssertEqual(w.out.map(\.error), ["parse"])
        XCTAssertEqual(w.s.wantFrom(.in), .max)
        // One endless line, in small segments: stopped at the limit.
        let v = Wire(maxHeaderBytes: 1024)
        v.send(.out, "GET / HTTP/1.1\r\nX-Long: ", mono: 1)
        for _ in 0..<200 { v.send(.out, String(repeating: "a", count: 10), mono: 2) }
        XCTAssertEqual(v.s.state, .desynced)
        XCTAssertEqual(v.out.map(\.error), ["parse"])
        // Exactly at the limit is fine.
        let exact = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 1024 - 16 - 5 - 2) + "\r\n\r\n"
        XCTAssertEqual(exact.utf8.count, 1024)
        let u = Wire(maxHeaderBytes: 1024)
        u.send(.out, exact, mono: 1)
        XCTAssertEqual(u.s.state, .http)
    }

    func testMalformedResponsesAreParseErrors() {
        for bad in ["HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/2 200\r\n\r\n", "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
                    "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n",
                    "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"] {
            let w = Wire()
            w.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
            w.send(.in, bad, mono: 2)
            XCTAssertEqual(w.s.state, .desynced, bad)
            XCTAssertEqual(w.out.map(\.error), ["parse"], bad)
        }
        // A response with no request outstanding.
        let w = Wire()
        w.send(.out, "GET / HTTP/1.1\r\n\r\n", mono: 1)
        w.send(.in, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 408 Timeout\r\n\r\n", mono: 2)
        XCTAssertEqual(w.s.state, .desynced)
        XCTAssertEqual(w.out.map(\.status), [200])
        XCTAssertEqual(w.out.map(\.error), [nil])
    }

    func testFuzzNeverCrashes() {
        var rng = XorShift(state: 0x9E37_79B9_7F4A_7C15)
        let seedOut = Array(convOut.joined().utf8), seedIn = Array(convIn.joined().utf8)
        let alphabet = Array("GETPOSTHP/1.0 \r\n:;0123456789abcdefContent-LengthTransfer-Encodingchunked?#@".utf8)
        var exchanges = 0, states: [String: Int] = [:], intact = 0
        let ref = Wire()
        feedConversation(ref, outSplits: [], inSplits: [])
        let reference = ref.out.map { describe($0) }
        for iter in 0..<4000 {
            let mode = iter % 4
            var out: [UInt8], inn: [UInt8]
            switch mode {
            case 0:   // random bytes, sometimes behind a valid request line
                out = (0..<rng.below(300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                if rng.below(2) == 0 { out = Array("GET / HTTP/1.1\r\n".utf8) + out }
                inn = (0..<rng.below(300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                if rng.below(2) == 0 { inn = Array("HTTP/1.1 200 OK\r\n".utf8) + inn }
            case 1:   // the conversation, intact (random segments, gaps and repeats only)
                out = seedOut
                inn = seedIn
            case 2:   // the conversation with mutations drawn from an HTTP-ish alphabet
                out = seedOut
                inn = seedIn
                for _ in 0..<(1 + rng.below(6)) {
                    if rng.below(2) == 0 {
                        out[rng.below(out.count)] = alphabet[rng.below(alphabet.count)]
                    } else {
                        inn.insert(alphabet[rng.below(alphabet.count)], at: rng.below(inn.count))
                    }
                }
            default:  // random tokens from the alphabet
                out = Array("GET / HTTP/1.1\r\n".utf8) + (0..<rng.below(200)).map { _ in alphabet[rng.below(alphabet.count)] }
                inn = (0..<rng.below(200)).map { _ in alphabet[rng.below(alphabet.count)] }
            }
            let role: HTTPRole = rng.below(4) == 0 ? .server : .client
            let limit = 64 + rng.below(512)
            let w = Wire(role, maxHeaderBytes: limit)
            // Requests go in the role's request direction, except now and then.
            var outDir: HTTPDirection = role == .client ? .out : .in
            var perturbed = limit < 111     // the conversation's largest header block
            if rng.below(16) == 0 { outDir = outDir == .out ? .in : .out; perturbed = true }
            var pos: [Int] = [0, 0]
            var offs: [UInt64] = [0, 0]
            while pos[0] < out.count || pos[1] < inn.count {
                // Mostly causal: responses do not get ahead of requests (proportionally), now and then they do.
                let behind = mode == 1 ? pos[0] >= out.count
                    : pos[1] * max(out.count, 1) < pos[0] * max(inn.count, 1) || pos[0] >= out.count
                let side = pos[1] < inn.count && (behind || (mode != 1 && rng.below(50) == 0)) && (pos[0] >= out.count || rng.below(2) == 0) ? 1 : (pos[0] < out.count ? 0 : 1)
                let data = side == 0 ? out : inn
                let len = 1 + rng.below(min(64, data.count - pos[side]))
                let chunk = Array(data[pos[side]..<pos[side] + len])
                var offset = offs[side]
                var ioEnd = offset + UInt64(len)
                let nominal = offset
                let p = rng.below(120)
                if p < 4 { perturbed = true }
                switch p {
                case 0: offset += UInt64(rng.below(10))                 // gap
                case 1: ioEnd += UInt64(rng.below(1000))                // capture shorter than the call
                case 2: offset = offset > 5 ? offset - 5 : 0            // repeated bytes
                case 3: offset = UInt64.max - UInt64(rng.below(3))     // absurd offsets
                        ioEnd = nominal
                default: break
                }
                let dir: HTTPDirection = side == 0 ? outDir : (outDir == .out ? .in : .out)
                w.s.feed(dir, offset: offset, bytes: chunk, ioEnd: ioEnd, mono: UInt64(iter))
                _ = w.s.wantFrom(.out)
                _ = w.s.wantFrom(.in)
                offs[side] += UInt64(len)
                pos[side] += len
            }
            w.finish(mono: UInt64(iter) + 1)
            let got = w.out
            XCTAssertLessThanOrEqual(got.count, w.s.requestCount)
            XCTAssertEqual(got.map(\.index), Array(0..<got.count), "each exchange once, in order")
            XCTAssertEqual(w.s.pendingCount, 0)
            XCTAssertEqual(w.s.wantFrom(.out), .max)
            for e in got where !e.complete { XCTAssertNotNil(e.error) }
            if mode == 1, !perturbed {
                XCTAssertEqual(got.map { describe($0) }, reference, "intact conversation, iteration \(iter), limit \(limit), \(role)")
                intact += 1
            }
            exchanges += got.count
            states["\(w.s.state)", default: 0] += 1
        }
        // The fuzzer must reach deep states, not only reject garbage.
        XCTAssertGreaterThan(exchanges, 2000, "\(states)")
        XCTAssertGreaterThan(intact, 400)
        XCTAssertGreaterThan(states["closed"] ?? 0, 400, "\(states)")
        XCTAssertGreaterThan(states["desynced"] ?? 0, 500, "\(states)")
        XCTAssertGreaterThan(states["notHTTP"] ?? 0, 100, "\(states)")
    }

    // A counted-only exchange (the owner's wantsDetail said no at its start) keeps what a
    // summary needs, host included, and builds neither path nor header strings.
    func testCountedOnlyExchangesKeepWhatASummaryNeeds() {
        let w = Wire(.server)
        var asked: [UInt64] = []
        w.s.wantsDetail = { mono in asked.append(mono); return mono != 20 }
        let req1 = "GET /a?q=1 HTTP/1.1\r\nHost: example.test\r\nUser-Agent: t\r\n\r\n"
        let req2 = "GET http://other.test/b HTTP/1.1\r\nHost: ignored\r\n\r\n"
        let resp = "HTTP/1.1 404 No\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc"
        for (req, t) in [(req1, UInt64(10)), (req2, 20)] {
            w.send(.in, req, mono: t)
            w.send(.out, resp, mono: t + 5)
        }
        let done = w.out
        XCTAssertEqual(asked, [10, 20])
        XCTAssertEqual(done.count, 2)
        XCTAssertTrue(done[0].detailed)
        XCTAssertEqual(done[0].path, "/a?REDACTED")
        XCTAssertEqual(done[0].requestHeader("user-agent"), "t")
        XCTAssertEqual(done[0].responseHeader("content-type"), "text/plain")
        let counted = done[1]
        XCTAssertFalse(counted.detailed)
        XCTAssertEqual(counted.path, "")
        XCTAssertTrue(counted.headers.isEmpty)
        XCTAssertEqual(counted.host, "other.test", "absolute-form target: its host")
        XCTAssertEqual(counted.method, "GET")
        XCTAssertEqual(counted.status, 404)
        XCTAssertEqual(counted.responseBodyBytes, 3)
        XCTAssertEqual(counted.requestHeaderBytes, UInt64(req2.utf8.count))
        XCTAssertEqual(counted.ttfbNs, 5)
        XCTAssertTrue(counted.complete)
    }
}
