import Foundation
import XCTest
@testable import WedjatAnalysis

/// The one-pass decoder of `connection` lines (ConnectionLineDecoder) beside the general path
/// (the parse into a JSONDocument, then `Record.decode`): every line, good or bad, must come out
/// the same (the same record, or the same error); the lines the fast path declines go to the
/// general path.
final class ConnectionLineDecoderTests: XCTestCase {
    static let canonical = #"{"type":"connection","ts":1763782510030945,"pid":4242,"tid":4244,"conn_id":1,"fd":6,"transport":"tcp","family":"ipv4","role":"client","local":"192.168.1.10:32769","peer":"10.0.199.200:443","open_ts":1763782510000000,"close_ts":1763782510030945,"duration_us":30945,"connect_us":259,"connect_end_ts":1763782510000259,"tls":{"library":"openssl","start_ts":1763782510000269,"end_ts":1763782510002128,"handshake_us":1859,"phase_us":1869,"version":"TLSv1.3","alpn":"http/1.1"},"first_byte_out_ts":1763782510002133,"first_byte_in_ts":1763782510005830,"last_byte_ts":1763782510030895,"shutdown_ts":null,"bytes_in":86694,"bytes_out":1212,"http_requests":5,"http_none":null,"tcp_info":{"rtt_us":212,"rttvar_us":15,"retransmits":0,"total_retrans":0,"lost":0},"host":"api-199.example.com","dns_us":2695,"error":null,"error_phase":null,"open_at_exit":false}"#

    /// Both paths on one line: (fast path taken, general result, result through `Record.decode`).
    private func both(_ bytes: UnsafeRawBufferPointer) -> (fast: Bool, general: Result<Record, LineDecodeError>, viaDecode: Result<Record, LineDecodeError>) {
        let doc = JSONDocument()
        let fast = ConnectionLineDecoder.decode(bytes) != nil
        let general = Result { () throws(LineDecodeError) in try Record.decodeParsed(bytes, into: doc) }
        let via = Result { () throws(LineDecodeError) in try Record.decode(bytes, into: doc) }
        return (fast, general, via)
    }

    private func assertSame(_ line: String, fast expectFast: Bool? = nil, file: StaticString = #filePath, line l: UInt = #line) {
        var line = line
        let r = line.withUTF8 { both(UnsafeRawBufferPointer($0)) }
        XCTAssertEqual(r.viaDecode, r.general, line, file: file, line: l)
        if let expectFast { XCTAssertEqual(r.fast, expectFast, "fast path on \(line)", file: file, line: l) }
    }

    private func replacing(_ old: String, _ new: String) -> String {
        precondition(Self.canonical.contains(old))
        return Self.canonical.replacingOccurrences(of: old, with: new)
    }

    func testWedjatsOwnLinesTakeTheFastPath() {
        assertSame(Self.canonical, fast: true)
        var line = Self.canonical
        guard case .success(.connection(let c)) = line.withUTF8({ both(UnsafeRawBufferPointer($0)) }).viaDecode else {
            return XCTFail("not a connection record")
        }
        XCTAssertEqual(c.peer, "10.0.199.200:443")
        XCTAssertEqual(c.host, "api-199.example.com")
        XCTAssertEqual(c.bytesIn, 86694)
        XCTAssertEqual(c.tls?.handshakeUs, 1859)
        XCTAssertEqual(c.tls?.alpn, "http/1.1")
        XCTAssertEqual(c.dnsUs, 2695)
        XCTAssertEqual(c.httpRequests, 5)
        // Spaces between tokens, nulls, fields left out, an empty tls object, the rare fields.
        assertSame(Self.canonical.replacingOccurrences(of: ",", with: " ,\t").replacingOccurrences(of: ":", with: " : ") + " \r")
        assertSame(replacing(#""tls":{"library":"openssl","start_ts":1763782510000269,"end_ts":1763782510002128,"handshake_us":1859,"phase_us":1869,"version":"TLSv1.3","alpn":"http/1.1"}"#, #""tls":null"#), fast: true)
        assertSame(replacing(#""tls":{"library":"openssl","start_ts":1763782510000269,"end_ts":1763782510002128,"handshake_us":1859,"phase_us":1869,"version":"TLSv1.3","alpn":"http/1.1"}"#, #""tls":{}"#), fast: true)
        assertSame(replacing(#""tcp_info":{"rtt_us":212,"rttvar_us":15,"retransmits":0,"total_retrans":0,"lost":0}"#, #""tcp_info":null"#), fast: true)
        assertSame(replacing(#""tcp_info":{"rtt_us":212,"rttvar_us":15,"retransmits":0,"total_retrans":0,"lost":0}"#, #""tcp_info":{}"#), fast: true)
        assertSame(replacing(#""http_none":null"#, #""http_none":"not_http""#), fast: true)
        assertSame(replacing(#""open_at_exit":false"#, #""open_at_exit":true,"forked_while_open":true,"http_version":"HTTP/2","http_stopped":"gap""#), fast: true)
        assertSame(replacing(#""transport":"tcp","family":"ipv4","#, ""), fast: true)
        assertSame(#"{"type":"connection","ts":1,"pid":1,"role":"server"}"#, fast: true)
    }

    func testOtherLinesGoTheGeneralWay() {
        let cases: [(String, String)] = [
            // Escapes and non-ASCII.
            (#""host":"api-199.example.com""#, #""host":"caf\u00e9""#),
            (#""host":"api-199.example.com""#, "\"host\":\"caf\u{e9}\""),
            (#""alpn":"http/1.1""#, #""alpn":"http\/1.1""#),
            // Numbers out of range, fractions, exponents.
            (#""bytes_in":86694"#, #""bytes_in":9223372036854775808"#),
            (#""bytes_in":86694"#, #""bytes_in":1.5"#),
            (#""bytes_in":86694"#, #""bytes_in":1e3"#),
            (#""rtt_us":212"#, #""rtt_us":2.5"#),
            (#""last_byte_ts":1763782510030895"#, #""last_byte_ts":"x""#),
            // Wrong types.
            (#""bytes_in":86694"#, #""bytes_in":"86694""#),
            (#""open_at_exit":false"#, #""open_at_exit":0"#),
            (#""tls":{"library":"openssl""#, #""tls":{"library":1"#),
            (#""tls":{"library":"openssl""#, #""tls":["openssl""#),
            (#""tls":{"library":"openssl""#, #""tls":"openssl","x":{"library":"openssl""#),
            (#""http_none":null"#, #""http_none":3"#),
            (#""role":"client""#, #""role":null"#),
            (#""role":"client","#, ""),
            (#""pid":4242,"#, ""),
            // Keys the fast path does not take: a newer writer's, the rare objects, repeated ones.
            (#""open_at_exit":false"#, #""open_at_exit":false,"later":[1,{"a":null}]"#),
            (#""open_at_exit":false"#, #""open_at_exit":false,"http_undecoded":{"reason":"gap","bytes_in":3,"bytes_out":-4}"#),
            (#""open_at_exit":false"#, #""open_at_exit":false,"inherited_from":{"log":"a.ndjson","conn_id":3}"#),
            (#""open_at_exit":false"#, #""open_at_exit":false,"peer":"x""#),
            (#""alpn":"http/1.1""#, #""alpn":"http/1.1","alpn":"h2""#),
            (#""alpn":"http/1.1""#, #""alpn":"http/1.1","cipher":"x""#),
            // Broken JSON.
            (#""open_at_exit":false}"#, #""open_at_exit":false"#),
            (#""open_at_exit":false}"#, #""open_at_exit":false}}"#),
            (#""open_at_exit":false}"#, #""open_at_exit":false,}"#),
            (#""lost":0}"#, #""lost":0"#),
            (#""alpn":"http/1.1"}"#, #""alpn":"http/1.1""#),
        ]
        for (old, new) in cases {
            assertSame(replacing(old, new), fast: false)
        }
        assertSame(" " + Self.canonical, fast: false)
        assertSame(#"{"ts":1,"type":"connection","pid":1,"role":"client"}"#, fast: false)
    }

    /// Thousands of randomly damaged copies of wedjat's line (seeded; WEDJAT_PROPERTY_ROUNDS
    /// for more): the two paths always agree.
    func testDamagedLinesAgree() {
        var fastTaken = 0
        DamagedLines.forEach(of: Self.canonical, seed: 0xC0_4242) { b in
            b.withUnsafeBytes { u in
                let r = both(u)
                if r.fast { fastTaken += 1 }
                XCTAssertEqual(r.viaDecode, r.general, String(decoding: u, as: UTF8.self))
            }
        }
        XCTAssertGreaterThan(fastTaken, DamagedLines.rounds / 10, "the fast path was exercised")
    }
}
