// Incremental HTTP/2 decoder for the bytes the interposer captures on one connection (raw, or
// TLS plaintext): one HTTPExchange per stream. Public surface: HTTP2Connection (one per
// connection), HTTP2Details and GRPCDetails (what an exchange gains). The byte-level work is in
// HTTP2Decoder.swift; header blocks are decoded by libnghttp2's HPACK decoder (HPACK.swift).
// No Foundation: this is linked into the agent.
//
// Input model: the same as HTTP1Stream's (HTTP1.swift). Segments per direction, in order, each
// with the stream offset of its first captured byte, the captured bytes, ioEnd (just past the
// last byte the call moved) and the call's mono. wantFrom(dir) is the first offset still
// needed. The decoder needs every frame header, and the payloads of HEADERS, CONTINUATION,
// PUSH_PROMISE, SETTINGS, RST_STREAM and the first 8 bytes of GOAWAY; of DATA it needs only
// the pad length byte of a padded frame, and on gRPC streams the 5-byte message prefixes
// (optional: when they were not captured, that stream's message count becomes unknown). A
// needed byte not captured stops the decoder ("desync"); the rest may be skipped.
//
// Timing rules (all times are the `mono` of a segment passed to feed):
// - A stream's request starts at the segment holding the first byte of its first HEADERS
//   frame (the frame header's first byte); its response starts likewise (1xx included).
// - A side ends at the frame carrying END_STREAM: at the first segment whose ioEnd reaches the
//   frame's last byte (a HEADERS frame's: its last CONTINUATION's). wantFrom asks for a
//   skipped frame's last byte so that the capturer delivers that segment.
// - A pushed stream's request starts and ends at its PUSH_PROMISE block's end.
//
// Byte counts per stream: header bytes are the HEADERS and CONTINUATION frames (9-byte frame
// headers, padding and trailers included; a pushed stream's request: its PUSH_PROMISE frames);
// body bytes are the DATA payloads without padding (what the application sent: a 1 MB body is
// 1,048,576 whatever its framing).
//
// An exchange is output when its stream is done: both sides ended, or reset (RST_STREAM),
// refused by GOAWAY, or cut when the connection ended (finish) or the decoder stopped.

public enum HTTP2State: Sendable, Equatable {
    case detecting  // the client connection preface is not complete yet
    case http2      // decoding
    case notHTTP2   // the first bytes were not HTTP/2: nothing more is decoded
    case failed     // stopped: a needed byte was not captured, or input wedjat cannot decode (see failure)
    case closed     // finish(mono:) was called on an HTTP/2 connection
}

/// HTTP/2 error codes (RFC 9113 section 7) by name, as errors say them ("rst_stream:CANCEL").
public enum HTTP2ErrorCode {
    public static func name(_ code: UInt32) -> String {
        switch code {
        case 0x0: return "NO_ERROR"
        case 0x1: return "PROTOCOL_ERROR"
        case 0x2: return "INTERNAL_ERROR"
        case 0x3: return "FLOW_CONTROL_ERROR"
        case 0x4: return "SETTINGS_TIMEOUT"
        case 0x5: return "STREAM_CLOSED"
        case 0x6: return "FRAME_SIZE_ERROR"
        case 0x7: return "REFUSED_STREAM"
        case 0x8: return "CANCEL"
        case 0x9: return "COMPRESSION_ERROR"
        case 0xa: return "CONNECT_ERROR"
        case 0xb: return "ENHANCE_YOUR_CALM"
        case 0xc: return "INADEQUATE_SECURITY"
        case 0xd: return "HTTP_1_1_REQUIRED"
        default: return "0x" + String(code, radix: 16)
        }
    }
}

/// The HTTP/2 decoder of one connection. Not thread-safe: one owner feeds it.
public final class HTTP2Connection {
    let core: UnsafeMutablePointer<H2Core>

    /// The client connection preface (RFC 9113 3.4).
    public static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Whether bytes that begin the client side of a connection are the HTTP/2 preface: true,
    /// false (they cannot be), nil (too few bytes to tell: all match so far). Cheap: for a
    /// capturer deciding between the HTTP/1 parser and this decoder.
    public static func isPreface(_ bytes: UnsafeRawBufferPointer) -> Bool? {
        let n = min(bytes.count, preface.count)
        for i in 0..<n where bytes[i] != preface[i] { return false }
        return n == preface.count ? true : nil
    }

    /// `library` nil (libnghttp2 missing): the connection is recognized by its preface and
    /// then stops with failure "no_nghttp2", no exchange decoded.
    /// maxHeaderBlockBytes bounds one header block (all its fragments); maxStreams the streams
    /// open at once. Past either the decoder stops ("parse").
    public init(role: HTTPRole, redaction: HTTPRedaction = .init(), library: NGHTTP2Library? = NGHTTP2Library.shared,
                maxHeaderBlockBytes: Int = 256 * 1024, maxStreams: Int = 1024) {
        core = .allocate(capacity: 1)
        core.initialize(to: H2Core(role: role, redaction: redaction, library: library,
                                   maxHeaderBlockBytes: max(1024, maxHeaderBlockBytes), maxStreams: max(1, maxStreams)))
    }

    /// A connection upgraded from HTTP/1.1 (`Upgrade: h2c` answered by 101): HTTP/2 begins at
    /// `clientOffset` in the client's direction (where its preface is expected, after the
    /// upgrade request) and at `serverOffset` in the server's (just after the 101 response).
    /// Stream 1 is the upgrade request (`upgraded`, its request fields and times): its
    /// response is decoded as HTTP/2.
    public convenience init(role: HTTPRole, upgradedFrom upgraded: HTTPExchange, clientOffset: UInt64, serverOffset: UInt64,
                            redaction: HTTPRedaction = .init(), library: NGHTTP2Library? = NGHTTP2Library.shared) {
        self.init(role: role, redaction: redaction, library: library)
        core.pointee.startUpgraded(upgraded, clientOffset: clientOffset, serverOffset: serverOffset)
    }

    deinit {
        core.deinitialize(count: 1)
        core.deallocate()
    }

    /// Asked at each stream's request start (with that segment's mono), as HTTP1Stream's:
    /// false makes the exchange counted-only (no path, headers or gRPC names).
    public var wantsDetail: ((UInt64) -> Bool)? {
        get { core.pointee.sh.wantsDetail }
        set { core.pointee.sh.wantsDetail = newValue }
    }

    public func feed(_ dir: HTTPDirection, offset: UInt64, bytes: UnsafeRawBufferPointer, ioEnd: UInt64, mono: UInt64) {
        core.pointee.feed(dir, offset: offset, bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                          count: bytes.count, ioEnd: ioEnd, mono: mono)
    }

    /// Convenience for tests and tools.
    public func feed(_ dir: HTTPDirection, offset: UInt64, bytes: [UInt8], ioEnd: UInt64? = nil, mono: UInt64) {
        bytes.withUnsafeBytes { feed(dir, offset: offset, bytes: $0, ioEnd: ioEnd ?? offset + UInt64(bytes.count), mono: mono) }
    }

    /// The stream offset from which bytes are needed next in that direction (bytes before it
    /// may be skipped); UInt64.max: none are needed any more.
    public func wantFrom(_ dir: HTTPDirection) -> UInt64 { core.pointee.wantFrom(dir) }

    /// The connection ended: every stream not done is output with error "incomplete" (or
    /// "goaway:CODE" after a GOAWAY with an error code); a stream whose response ended is
    /// complete even if its request never did. Later feeds are ignored.
    public func finish(mono: UInt64) { core.pointee.finish(mono: mono) }

    /// Exchanges done since the last call, in the order their streams ended.
    public func takeCompleted() -> [HTTPExchange] {
        var out: [HTTPExchange] = []
        drainCompleted { out.append($0) }
        return out
    }

    /// The same, handed to `body` one by one, keeping the buffer (no allocation per exchange).
    /// `body` must not feed this connection.
    public func drainCompleted(_ body: (HTTPExchange) -> Void) {
        drain(detailed: body, counted: { st in
            var copy = copy st
            body(copy.takeExchange())
        })
    }

    /// The same for the aggregator: a stream only counted (`wantsDetail` said false) is handed
    /// over as it is, without making its exchange.
    func drain(detailed: (HTTPExchange) -> Void, counted: (borrowing H2Stream) -> Void) {
        guard !core.pointee.sh.completed.isEmpty else { return }
        var out: [H2Stream] = []
        swap(&out, &core.pointee.sh.completed)
        // Moved out one by one (reversed, then popLast): read in place, each was copied.
        out.withUnsafeMutableBufferPointer { $0.reverse() }
        while var st = out.popLast() {
            if st.detailed { detailed(st.takeExchange()) } else { counted(st) }
        }
        swap(&out, &core.pointee.sh.completed)
    }

    public var state: HTTP2State { core.pointee.sh.state }
    /// Why decoding stopped (state .failed, or .notHTTP2 when known): "not_http2",
    /// "missed_start" (the connection's first bytes were not captured), "desync" (a needed
    /// byte was not captured later), "hpack" (a header block libnghttp2 could not decode),
    /// "frame" (malformed framing), "header_block_too_large", "too_many_streams",
    /// "no_nghttp2" (libnghttp2 is not installed). nil while decoding or after a clean end.
    public var failure: String? { core.pointee.sh.failure }
    /// Where decoding stopped (the client's and the server's stream offsets) when it stopped
    /// before the connection's end; nil while decoding, after a clean end, or for a
    /// connection that was not HTTP/2.
    public var stoppedAt: (client: UInt64, server: UInt64)? {
        let sh = core.pointee.sh
        guard sh.state == .failed || (sh.state == .notHTTP2 && sh.failure != nil && sh.failure != "not_http2") else { return nil }
        return (core.pointee.client.pos, core.pointee.server.pos)
    }
    /// Streams opened (requests and promises) on this connection.
    public var requestCount: Int { core.pointee.sh.requestCount }
    /// Streams open now.
    public var pendingCount: Int { core.pointee.sh.streams.count }
    /// The last GOAWAY seen: who sent it, its error code and last stream id.
    public var goaway: (by: String, code: UInt32, lastStreamId: UInt32)? { core.pointee.sh.goaway }
}

extension HTTPExchange {
    /// A request as another decoder saw it (tests and tools: the HTTP/1 request of an h2c
    /// upgrade).
    public static func make(method: String, path: String, host: String?, version: String = "HTTP/1.1") -> HTTPExchange {
        var e = HTTPExchange(index: 0, method: method, path: path, version: version)
        e.host = host
        return e
    }
}
