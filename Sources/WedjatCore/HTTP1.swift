// Incremental HTTP/1.x parser for the bytes the interposer captures on one connection.
// Public surface: HTTP1Stream (one per connection), HTTPExchange (its output), HTTPRedaction.
// The byte-level work is in HTTP1Parser.swift. No Foundation: this is linked into the agent.
//
// Input model. For each I/O call the capturer delivers a segment: the direction, the stream
// offset of the first captured byte, the captured bytes (possibly fewer than the call moved),
// ioEnd (the stream offset just past the last byte the call moved) and the call's
// CLOCK_MONOTONIC time. wantFrom(dir) tells the capturer from which offset bytes are needed
// next; it is nondecreasing and UInt64.max means "never again".
//
// Timing rules (all times are the `mono` of a segment passed to feed):
// - A message starts at the segment that holds its first byte (leading empty lines between
//   messages are ignored) and ends at the segment that holds its last byte.
// - A skipped body region (Content-Length body, chunk data) whose last byte was not captured
//   ends at the first segment with ioEnd past that byte: that call moved it. wantFrom asks for
//   the last byte of the region, so the capturer delivers that segment.
// - A close-delimited response body (no Content-Length, not chunked) ends at the last segment
//   fed in the response direction after the one that ended the headers, if any was fed (the
//   capturer is told .max, so normally none is), else at the mono passed to finish(mono:).
//   Its body byte count is what segments showed moving (ioEnd), a lower bound if the capturer
//   stopped delivering.
// - Body byte counts are bytes on the wire after the header block: for chunked messages they
//   include chunk-size lines, CRLFs, the last chunk and trailers, so header + body bytes = the
//   message's bytes on the stream. responseHeaderBytes sums the interim (1xx) and final heads.

public enum HTTPDirection: Sendable {
    case out    // the application sent these bytes
    case `in`   // the application received them
}

public enum HTTPRole: Sendable {
    case client  // the app sends requests (out) and receives responses (in)
    case server  // the app receives requests (in) and sends responses (out)
}

public enum HTTP1State: Sendable, Equatable {
    case detecting  // no complete request line yet
    case http       // parsing
    case notHTTP    // the first bytes were not HTTP/1.x: nothing more is parsed
    case desynced   // a gap in needed bytes or malformed input: nothing more is parsed
    case tunnel     // after 101 Switching Protocols or a 2xx answer to CONNECT
    case closed     // finish(mono:) was called on an HTTP stream
}

/// What is removed from request targets. `WEDJAT_REDACT` style: "query,userinfo,fragment",
/// "all" or "none".
public struct HTTPRedaction: Sendable, Equatable {
    public var query = true      // "/p?a=b" -> "/p?REDACTED"
    public var userinfo = true   // "http://u:pw@h/p" -> "http://REDACTED@h/p"
    public var fragment = true   // "/p#frag" -> "/p"

    public init() {}
    public init(query: Bool, userinfo: Bool, fragment: Bool) {
        self.query = query
        self.userinfo = userinfo
        self.fragment = fragment
    }

    public static let none = HTTPRedaction(query: false, userinfo: false, fragment: false)
    public static let all = HTTPRedaction()

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Comma-separated, case-insensitive, blanks around items ignored: any of query, userinfo,
    /// fragment; or exactly one of all / none. Throws on an empty or unknown item.
    public init(parsing text: String) throws(ParseError) {
        self = .none
        var items: [String] = []
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            var s = Substring(raw)
            while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
            while let l = s.last, l == " " || l == "\t" { s.removeLast() }
            items.append(s.lowercased())
        }
        for item in items {
            switch item {
            case "query": query = true
            case "userinfo": userinfo = true
            case "fragment": fragment = true
            case "all", "none":
                guard items.count == 1 else {
                    throw ParseError(message: "'\(item)' cannot be combined with other items in '\(text)'")
                }
                if item == "all" { self = .all }
            case "":
                throw ParseError(message: "empty item in '\(text)' (expected query, userinfo, fragment, all or none)")
            default:
                throw ParseError(message: "unknown item '\(item)' (expected query, userinfo, fragment, all or none)")
            }
        }
    }
}

/// One request and its final response.
extension Array where Element == HTTPExchange {
    /// Hands each exchange to `body` in order, leaving the array empty with its buffer. Each is
    /// moved out (popLast, the buffer first reversed by moves): handed over in place, it was
    /// copied for the call (a retain of every field) and the copy destroyed after it.
    mutating func drainInOrder(_ body: (HTTPExchange) -> Void) {
        withUnsafeMutableBufferPointer { $0.reverse() }
        while let ex = popLast() { body(ex) }
    }
}

public struct HTTPExchange {
    public var index: Int                 // 0-based on this connection; reused connection == index > 0
    public var method: String
    public var host: String?              // authority of an absolute-form/CONNECT target, else the Host header
    public var path: String               // request target, redacted per HTTPRedaction
    public var status: Int?               // final status (101 included); nil if none was seen
    public var version: String            // the request line's: "HTTP/1.1" or "HTTP/1.0"
    public var responseVersion: String?   // the final response's status line's; nil if none was seen
    public var interim: Int = 0           // 1xx responses (other than 101) before the final one
    public var requestHeaderBytes: UInt64 = 0
    public var requestBodyBytes: UInt64 = 0
    public var responseHeaderBytes: UInt64 = 0
    public var responseBodyBytes: UInt64 = 0
    public var requestStart: UInt64?
    public var requestEnd: UInt64?
    public var responseStart: UInt64?     // first byte of the first response, interim included
    public var responseEnd: UInt64?
    /// Allowlisted headers only: Host, User-Agent, Content-Type, Content-Length, keyed
    /// "request.<lowercased name>" / "response.<lowercased name>", in arrival order.
    public var headers: [(String, String)] = []
    public var complete = false           // the final response was read to its end
    public var error: String?             // "incomplete", "desync" or "parse"
    public var upgraded = false           // 101 or CONNECT 2xx: parsing stopped after it
    /// False when the stream's owner said at the request's start that it will only count this
    /// exchange (HTTP1Stream.wantsDetail): `path` is then "" and `headers` is empty; method,
    /// host, status, byte counts and times are all there.
    public var detailed = true
    /// HTTP/2 streams only (version "HTTP/2"): stream id, push, reset, gRPC (HTTP2.swift).
    public var http2: HTTP2Details? = nil

    // Parser bookkeeping.
    var requestDone = false
    var responseDone = false
    var isHead = false
    var isConnect = false
    var pausesRequests = false            // CONNECT or Upgrade: the request side waits for the answer

    init(index: Int, method: String, path: String, version: String) {
        self.index = index
        self.method = method
        self.path = path
        self.version = version
    }

    public var reused: Bool { index > 0 }
    /// Time to first byte: first response byte (interim included) minus the request's first
    /// byte. Counted from the request start, not its end, so that an upload's duration does
    /// not hide in it; see waitNs for the server's think time.
    public var ttfbNs: UInt64? { HTTPExchange.diff(responseStart, requestStart) }
    /// First response byte minus the request's last byte; nil when the response began before
    /// the request ended (early responses, 100 Continue).
    public var waitNs: UInt64? { HTTPExchange.diff(responseStart, requestEnd) }
    /// Last response byte minus the request's first byte.
    public var durationNs: UInt64? { HTTPExchange.diff(responseEnd, requestStart) }
    /// A request header value from the allowlist, by lowercase name ("host", "user-agent", ...).
    public func requestHeader(_ name: String) -> String? { header("request." + name) }
    public func responseHeader(_ name: String) -> String? { header("response." + name) }

    private func header(_ key: String) -> String? {
        for (k, v) in headers where k == key { return v }
        return nil
    }

    static func diff(_ a: UInt64?, _ b: UInt64?) -> UInt64? {
        guard let a, let b, a >= b else { return nil }
        return a - b
    }
}

/// The HTTP/1.x parser of one connection. Not thread-safe: one owner feeds it.
public final class HTTP1Stream {
    // Held through a pointer: a stored `var` of a class would cost a dynamic exclusivity check
    // (swift_beginAccess/endAccess) on every call.
    let core: UnsafeMutablePointer<HTTP1Core>

    /// maxHeaderBytes bounds a header block (start line + fields), a trailer block and a chunk
    /// size line; beyond it the exchange gets error "parse" and the stream is desynced.
    public init(role: HTTPRole, redaction: HTTPRedaction = .init(), maxHeaderBytes: Int = 64 * 1024) {
        core = .allocate(capacity: 1)
        core.initialize(to: HTTP1Core(role: role, redaction: redaction, maxHeaderBytes: max(64, maxHeaderBytes)))
    }

    deinit {
        core.deinitialize(count: 1)
        core.deallocate()
    }

    /// Asked at each request's first byte (with that segment's mono): false makes the exchange
    /// a counted-only one (HTTPExchange.detailed), which spares building its path and header
    /// strings. Unset: every exchange is detailed.
    public var wantsDetail: ((UInt64) -> Bool)? {
        get { core.pointee.sh.wantsDetail }
        set { core.pointee.sh.wantsDetail = newValue }
    }

    public func feed(_ dir: HTTPDirection, offset: UInt64, bytes: UnsafeRawBufferPointer, ioEnd: UInt64, mono: UInt64) {
        core.pointee.feed(dir, offset: offset,
                  bytes: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count,
                  ioEnd: ioEnd, mono: mono)
    }

    /// Convenience for tests and tools.
    public func feed(_ dir: HTTPDirection, offset: UInt64, bytes: [UInt8], ioEnd: UInt64? = nil, mono: UInt64) {
        bytes.withUnsafeBytes { feed(dir, offset: offset, bytes: $0, ioEnd: ioEnd ?? offset + UInt64(bytes.count), mono: mono) }
    }

    /// The stream offset from which bytes are needed next in that direction (bytes before it
    /// may be skipped); UInt64.max: none are needed any more.
    public func wantFrom(_ dir: HTTPDirection) -> UInt64 { core.pointee.wantFrom(dir) }

    /// The connection ended. A close-delimited response ends here (see the timing rules);
    /// every exchange not finished becomes available from takeCompleted() with error
    /// "incomplete". Later feeds are ignored.
    public func finish(mono: UInt64) { core.pointee.finish(mono: mono) }

    /// Exchanges finished since the last call, in request order.
    public func takeCompleted() -> [HTTPExchange] {
        var out: [HTTPExchange] = []
        swap(&out, &core.pointee.sh.completed)
        return out
    }

    /// The same, handed to `body` one by one without copying them or giving up the buffer
    /// (the aggregator's per-message path: no allocation per exchange). `body` must not feed
    /// this stream.
    public func drainCompleted(_ body: (HTTPExchange) -> Void) {
        guard !core.pointee.sh.completed.isEmpty else { return }
        var out: [HTTPExchange] = []
        swap(&out, &core.pointee.sh.completed)
        out.drainInOrder(body)
        swap(&out, &core.pointee.sh.completed)
    }

    public var state: HTTP1State { core.pointee.sh.state }
    /// Request lines seen on this connection.
    public var requestCount: Int { core.pointee.sh.requestCount }
    /// Exchanges started and not yet returned by takeCompleted() (pipelining depth + 1).
    public var pendingCount: Int { core.pointee.sh.exs.count }
}
