// Exchanges from what the C framer (CShims/common/http1.c) hands over: one message event per
// request and per response, paired by their exchange index (each direction counts its own
// messages, so which thread's event comes first does not matter), plus the header blocks of
// detailed exchanges and a STOP when the stream is not parsed further. The output is the same
// HTTPExchange the Swift parser (HTTP1Stream, the oracle of the differential tests) produces,
// built only for detailed exchanges: a counted-only one goes out as its two messages, so that
// its summary costs no String and no allocation.
import CWedjatCommon
#if canImport(Glibc)
import Glibc
#endif

/// A counted-only exchange: its two messages (valid during the callback), and its error.
public struct CountedExchange {
    public let request: UnsafePointer<wj_h1_msg>
    public let response: UnsafePointer<wj_h1_msg>?   // nil when no response was seen
    public let error: String?

    @inline(__always) private static func has(_ m: UnsafePointer<wj_h1_msg>, _ flag: Int32) -> Bool {
        (Int32(m.pointee.flags) & flag) != 0
    }
    public var hasHost: Bool { CountedExchange.has(request, Int32(WJ_H1_M_HOST_TARGET) | Int32(WJ_H1_M_HOST_FIELD)) }
    public var requestMinor: UInt8 { request.pointee.minor }
    public var status: Int? {
        guard let r = response, CountedExchange.has(r, Int32(WJ_H1_M_HEADERS)) else { return nil }
        return Int(r.pointee.status)
    }
    public var requestStart: UInt64 { request.pointee.t_first }
    public var requestEnd: UInt64? { CountedExchange.has(request, Int32(WJ_H1_M_ENDED)) ? request.pointee.t_end : nil }
    public var responseStart: UInt64? { response?.pointee.t_first }
    public var responseEnd: UInt64? {
        guard let r = response, CountedExchange.has(r, Int32(WJ_H1_M_ENDED)) else { return nil }
        return r.pointee.t_end
    }
    public var requestBytes: UInt64 {
        (CountedExchange.has(request, Int32(WJ_H1_M_HEADERS)) ? request.pointee.header_bytes : 0)
            + (CountedExchange.has(request, Int32(WJ_H1_M_ENDED)) ? request.pointee.body_bytes : 0)
    }
    public var responseBytes: UInt64 {
        guard let r = response else { return 0 }
        return r.pointee.header_bytes + (CountedExchange.has(r, Int32(WJ_H1_M_ENDED)) ? r.pointee.body_bytes : 0)
    }
    /// The method and host bytes, for comparing without building Strings.
    public func withMethod<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeBytes(of: request.pointee.method) { body(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(request.pointee.method_len)))) }
    }
    public func withHost<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeBytes(of: request.pointee.host) { body(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(request.pointee.host_len)))) }
    }
    public var ttfbNs: UInt64? {
        guard let s = responseStart, s >= requestStart else { return nil }
        return s - requestStart
    }
    public var durationNs: UInt64? {
        guard let e = responseEnd, e >= requestStart else { return nil }
        return e - requestStart
    }
}

public final class HTTP1Framed {
    public let role: HTTPRole
    let redaction: HTTPRedaction
    /// A forked child's stream from its parent: a response whose request the parent read (or
    /// sent) goes out alone, with the parent's exchange index.
    public let inherited: Bool
    public private(set) var state: HTTP1State = .detecting
    /// The state when the connection ended (before the end's own STOP), nil until then.
    public private(set) var stateAtFinish: HTTP1State?
    /// Requests whose request line was seen (exchanges started).
    public private(set) var requestCount = 0
    /// Message events that came after the stream stopped, or too far ahead to be kept.
    public private(set) var lateMessages = 0
    /// Responses whose request never came before the stream stopped (its sender was still in
    /// its call when another thread read the answer and closed the connection): not paired,
    /// counted on the connection (`http_unpaired_responses`).
    public private(set) var unpairedResponses = 0
    /// Exchanges the C side took whole (counted where they ended, http_counts.c): they came as
    /// no message. Known from the `answered` every message carries (see `drain`).
    public private(set) var countedInC = 0
    private var countedInCTaken = 0
    /// The exchanges counted in C since the last call.
    public func takeCountedInC() -> Int {
        defer { countedInCTaken = countedInC }
        return countedInC - countedInCTaken
    }
    private var answeredBelow = 0
    private var sawMessage = false
    /// Where decoding stopped (the last STOP's stream offsets, request and response side), and
    /// why: what the first bytes looked like (WJ_H1_WHY_*), the error of the stop.
    public private(set) var stopOffsets: (request: UInt64, response: UInt64)?
    public private(set) var firstBytes: Int32 = Int32(WJ_H1_WHY_OTHER)
    public private(set) var stopError: String?

    // Exchanges not yet out, in a ring: slot (seq & mask) holds exchange seq, base <= seq <
    // base + span. Slots hold the C messages as they are (no reference counting).
    struct Slot {
        var req = wj_h1_msg()
        var resp = wj_h1_msg()
        var haveReq = false, haveResp = false, reqDone = false, respDone = false
        var readyAtStop = false      // complete, in order, when the STOP came: out without error
        var error: String?
        var reqHead: [UInt8] = []
        var respHead: [UInt8] = []
    }
    private var ring: UnsafeMutablePointer<Slot>
    private var mask: Int
    private var base = 0
    private var span = 0                 // slots from base that may hold something
    private var stopped: (newState: HTTP1State, current: Int, error: String?)?
    static let maxPending = 4096

    public init(role: HTTPRole, redaction: HTTPRedaction = .init(), inherited: Bool = false) {
        self.role = role
        self.redaction = redaction
        self.inherited = inherited
        ring = .allocate(capacity: 4)
        ring.initialize(repeating: Slot(), count: 4)
        mask = 3
    }

    deinit {
        ring.deinitialize(count: mask + 1)
        ring.deallocate()
    }

    public var pendingCount: Int { span }

    private func slot(_ seq: UInt32) -> UnsafeMutablePointer<Slot>? {
        let k = Int(seq) - base
        guard k >= 0, k < HTTP1Framed.maxPending else { return nil }
        if k > mask { grow(k + 1) }
        if k >= span { span = k + 1 }
        return ring + (Int(seq) & mask)
    }

    private func grow(_ need: Int) {
        var cap = (mask + 1) * 2
        while cap < need { cap *= 2 }
        let fresh = UnsafeMutablePointer<Slot>.allocate(capacity: cap)
        fresh.initialize(repeating: Slot(), count: cap)
        for i in 0..<span {
            let seq = base + i
            swap(&fresh[seq & (cap - 1)], &ring[seq & mask])
        }
        ring.deinitialize(count: mask + 1)
        ring.deallocate()
        ring = fresh
        mask = cap - 1
    }

    /// Header-block bytes of a detailed exchange's message, in stream order.
    public func head(isRequest: Bool, seq: UInt32, bytes: UnsafeRawBufferPointer) {
        guard let s = slot(seq) else { return }
        if isRequest { s.pointee.reqHead.append(contentsOf: bytes) } else { s.pointee.respHead.append(contentsOf: bytes) }
    }

    @inline(__always) private static func has(_ m: wj_h1_msg, _ flag: Int32) -> Bool { (Int32(m.flags) & flag) != 0 }

    /// A message event. Exchanges that are complete (or cut by a STOP) go out through the
    /// drain that follows.
    public func message(_ m: UnsafePointer<wj_h1_msg>) {
        if inherited && !sawMessage && span == 0 {
            // The exchanges answered before this image got the stream were its parent's.
            base = max(base, Int(m.pointee.answered))
            answeredBelow = base
        }
        sawMessage = true
        if Int(m.pointee.answered) > answeredBelow {
            answeredBelow = Int(m.pointee.answered)
            requestCount = max(requestCount, answeredBelow)
            skipCountedInC()
        }
        switch Int32(m.pointee.kind) {
        case Int32(WJ_H1_REQUEST):
            guard state == .http || state == .detecting, let s = slot(m.pointee.seq) else { lateMessages += 1; return }
            if state == .detecting { state = .http }
            s.pointee.req = m.pointee
            s.pointee.haveReq = true
            if HTTP1Framed.has(m.pointee, Int32(WJ_H1_M_ENDED)) { s.pointee.reqDone = true }
            requestCount = max(requestCount, Int(m.pointee.seq) + 1)
        case Int32(WJ_H1_RESPONSE):
            guard state == .http || state == .detecting, let s = slot(m.pointee.seq) else { lateMessages += 1; return }
            s.pointee.resp = m.pointee
            s.pointee.haveResp = true
            if HTTP1Framed.has(m.pointee, Int32(WJ_H1_M_ENDED)) { s.pointee.respDone = true }
            // As the Swift parser: a tunnel ends the request side too.
            if HTTP1Framed.has(m.pointee, Int32(WJ_H1_M_UPGRADED)) { s.pointee.reqDone = true }
        case Int32(WJ_H1_STOP):
            stop(m)
        default:
            break
        }
    }

    private func stop(_ m: UnsafePointer<wj_h1_msg>) {
        if HTTP1Framed.has(m.pointee, Int32(WJ_H1_M_FINISH)), stateAtFinish == nil { stateAtFinish = state }
        guard state == .http || state == .detecting else { return }
        stopOffsets = (m.pointee.header_bytes, m.pointee.body_bytes)
        firstBytes = Int32(m.pointee.why)
        let newState: HTTP1State
        switch Int32(m.pointee.state) {
        case Int32(WJ_H1_NOT_HTTP): newState = .notHTTP
        case Int32(WJ_H1_TUNNEL): newState = .tunnel
        case Int32(WJ_H1_CLOSED): newState = .closed
        default: newState = .desynced
        }
        let error: String?
        switch Int32(m.pointee.error) {
        case Int32(WJ_H1_ERR_INCOMPLETE): error = "incomplete"
        case Int32(WJ_H1_ERR_DESYNC): error = "desync"
        case Int32(WJ_H1_ERR_PARSE): error = "parse"
        case Int32(WJ_H1_ERR_HANDED_OFF): error = "handed_off"
        default: error = nil
        }
        state = newState
        stopError = error
        stopped = (newState, m.pointee.seq == UInt32.max ? -1 : Int(m.pointee.seq), error)
        // What the Swift parser had already emitted (the complete ones in request order) keeps
        // no error.
        var i = 0
        while i < span {
            let s = ring + ((base + i) & mask)
            guard s.pointee.haveReq && s.pointee.reqDone && s.pointee.respDone else { break }
            s.pointee.readyAtStop = true
            i += 1
        }
    }

    /// Exchanges before `answeredBelow` (their responses ended before a message that came) of
    /// which nothing came were taken whole in C: the ring moves past them. One whose request
    /// came alone, or whose response came, is a message pair still on its way (kept).
    private func skipCountedInC() {
        while base < answeredBelow {
            if span == 0 {
                countedInC += answeredBelow - base
                base = answeredBelow
                if state == .detecting { state = .http }
                return
            }
            let s = ring + (base & mask)
            guard !s.pointee.haveReq && !s.pointee.haveResp && s.pointee.reqHead.isEmpty && s.pointee.respHead.isEmpty else { return }
            countedInC += 1
            base += 1
            span -= 1
            if state == .detecting { state = .http }
        }
    }

    /// Hands out every exchange that is ready, in request order: detailed ones as HTTPExchange
    /// values, counted-only ones as their messages.
    public func drain(detailed: (HTTPExchange) -> Void, counted: (CountedExchange) -> Void) {
        while span > 0 {
            let s = ring + (base & mask)
            let alone = inherited && !s.pointee.haveReq && s.pointee.haveResp   // the parent had the request
            let ready = (s.pointee.haveReq || alone) && (s.pointee.reqDone || alone) && s.pointee.respDone
            if !ready && stopped == nil { return }
            if alone {
                if let stop = stopped, s.pointee.error == nil, !s.pointee.respDone {
                    s.pointee.error = stop.newState == .closed ? (stop.error == "handed_off" ? "handed_off" : "incomplete") : "desync"
                }
                detailed(responseOnly(s))
            } else if s.pointee.haveReq {
                // As the Swift parser's stop(): every exchange still held gets an error, the
                // one it was for (current) the STOP's, the others desync (incomplete at a close).
                if let stop = stopped, s.pointee.error == nil, !s.pointee.readyAtStop {
                    // At a close every exchange still open is incomplete, or handed off when a
                    // forked child went on with the connection.
                    let other = stop.newState == .closed ? (stop.error == "handed_off" ? "handed_off" : "incomplete") : "desync"
                    s.pointee.error = (base == stop.current ? stop.error : nil) ?? other
                }
                emit(s, detailed: detailed, counted: counted)
            } else if s.pointee.haveResp {
                unpairedResponses += 1
            }
            s.pointee = Slot()
            base += 1
            span -= 1
            skipCountedInC()
        }
        if stopped != nil { base = requestCount }
    }

    private func emit(_ s: UnsafeMutablePointer<Slot>, detailed: (HTTPExchange) -> Void, counted: (CountedExchange) -> Void) {
        if HTTP1Framed.has(s.pointee.req, Int32(WJ_H1_M_DETAILED)) {
            detailed(exchange(s))
        } else {
            withUnsafePointer(to: &s.pointee.req) { req in
                if s.pointee.haveResp {
                    withUnsafePointer(to: &s.pointee.resp) { resp in
                        counted(CountedExchange(request: req, response: resp, error: s.pointee.error))
                    }
                } else {
                    counted(CountedExchange(request: req, response: nil, error: s.pointee.error))
                }
            }
        }
    }

    static func text<T>(_ tuple: T, _ len: Int) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix(len), as: UTF8.self) }
    }

    /// The exchange as the Swift parser reports it.
    private func exchange(_ s: UnsafeMutablePointer<Slot>) -> HTTPExchange {
        let q = s.pointee.req
        let detailed = HTTP1Framed.has(q, Int32(WJ_H1_M_DETAILED))
        var e = HTTPExchange(index: Int(q.seq), method: HTTP1Framed.text(q.method, Int(q.method_len)), path: "",
                             version: q.minor == 0 ? "HTTP/1.0" : "HTTP/1.1")
        e.detailed = detailed
        if HTTP1Framed.has(q, Int32(WJ_H1_M_HOST_TARGET) | Int32(WJ_H1_M_HOST_FIELD)) {
            e.host = HTTP1Framed.text(q.host, Int(q.host_len))
        }
        e.isHead = HTTP1Framed.has(q, Int32(WJ_H1_M_HEAD))
        e.isConnect = HTTP1Framed.has(q, Int32(WJ_H1_M_CONNECT))
        e.requestStart = q.t_first
        if HTTP1Framed.has(q, Int32(WJ_H1_M_HEADERS)) { e.requestHeaderBytes = q.header_bytes }
        if HTTP1Framed.has(q, Int32(WJ_H1_M_ENDED)) {
            e.requestEnd = q.t_end
            e.requestBodyBytes = q.body_bytes
        }
        if detailed { s.pointee.reqHead.withUnsafeBufferPointer { parseHead($0, isRequest: true, into: &e) } }
        if s.pointee.haveResp { addResponse(s, detailed: detailed, to: &e) }
        e.error = s.pointee.error
        return e
    }

    /// The response message's fields (and its header block, when detailed) into `e`.
    private func addResponse(_ s: UnsafeMutablePointer<Slot>, detailed: Bool, to e: inout HTTPExchange) {
        let r = s.pointee.resp
        e.responseStart = r.t_first
        e.responseHeaderBytes = r.header_bytes
        e.interim = Int(r.interim)
        if HTTP1Framed.has(r, Int32(WJ_H1_M_HEADERS)) {
            e.status = Int(r.status)
            e.responseVersion = r.minor == 0 ? "HTTP/1.0" : "HTTP/1.1"
        }
        if HTTP1Framed.has(r, Int32(WJ_H1_M_ENDED)) {
            e.responseEnd = r.t_end
            e.responseBodyBytes = r.body_bytes
            e.complete = true
        }
        if HTTP1Framed.has(r, Int32(WJ_H1_M_UPGRADED)) { e.upgraded = true }
        if detailed { s.pointee.respHead.withUnsafeBufferPointer { parseHead($0, isRequest: false, into: &e) } }
    }

    /// The response of an exchange whose request this process never saw (inherited).
    private func responseOnly(_ s: UnsafeMutablePointer<Slot>) -> HTTPExchange {
        let r = s.pointee.resp
        var e = HTTPExchange(index: Int(r.seq), method: "", path: "", version: "")
        e.detailed = HTTP1Framed.has(r, Int32(WJ_H1_M_DETAILED))
        addResponse(s, detailed: e.detailed, to: &e)
        e.error = s.pointee.error
        return e
    }

    /// Every ready exchange as an HTTPExchange (tests and tools; counted-only ones too).
    public func takeCompleted() -> [HTTPExchange] {
        var out: [HTTPExchange] = []
        drain(detailed: { out.append($0) }, counted: { c in out.append(HTTP1Framed.exchange(counted: c)) })
        return out
    }

    static func exchange(counted c: CountedExchange) -> HTTPExchange {
        let q = c.request.pointee
        var e = HTTPExchange(index: Int(q.seq), method: text(q.method, Int(q.method_len)), path: "",
                             version: q.minor == 0 ? "HTTP/1.0" : "HTTP/1.1")
        e.detailed = false
        if c.hasHost { e.host = text(q.host, Int(q.host_len)) }
        e.requestStart = q.t_first
        if has(q, Int32(WJ_H1_M_HEADERS)) { e.requestHeaderBytes = q.header_bytes }
        if has(q, Int32(WJ_H1_M_ENDED)) {
            e.requestEnd = q.t_end
            e.requestBodyBytes = q.body_bytes
        }
        if let rp = c.response {
            let r = rp.pointee
            e.responseStart = r.t_first
            e.responseHeaderBytes = r.header_bytes
            e.interim = Int(r.interim)
            if has(r, Int32(WJ_H1_M_HEADERS)) {
                e.status = Int(r.status)
                e.responseVersion = r.minor == 0 ? "HTTP/1.0" : "HTTP/1.1"
            }
            if has(r, Int32(WJ_H1_M_ENDED)) {
                e.responseEnd = r.t_end
                e.responseBodyBytes = r.body_bytes
                e.complete = true
            }
            if has(r, Int32(WJ_H1_M_UPGRADED)) { e.upgraded = true }
        }
        e.error = c.error
        return e
    }

    // The detail of a detailed message from its header block: the request target (redacted)
    // and the allowlisted fields, exactly as HTTP1Dir.headerLine keeps them. Every head of a
    // response (1xx ones included) is in the block, one after the other.
    private func parseHead(_ b: UnsafeBufferPointer<UInt8>, isRequest: Bool, into e: inout HTTPExchange) {
        guard let base = b.baseAddress, b.count > 0 else { return }
        var i = 0
        var first = true
        while i < b.count {
            guard let nl = memchr(base + i, 10, b.count - i) else { break }   // a cut last line is left out
            let start = i
            var n = UnsafeRawPointer(nl) - UnsafeRawPointer(base + i)
            i += n + 1
            if n > 0, base[start + n - 1] == 13 { n -= 1 }
            let q = base + start
            if n == 0 { first = true; continue }    // end of a block; a 1xx is followed by another
            if first {
                first = false
                if isRequest, let rl = HTTP1Syntax.requestLine(q, n) {
                    let isConnect = rl.methodEnd == 7 && HTTP1Syntax.equals(q, "CONNECT")
                    let target = UnsafeBufferPointer(start: q + rl.targetStart, count: rl.targetEnd - rl.targetStart)
                    e.path = HTTP1Syntax.redactTarget(target, redaction, isConnect: isConnect).0
                }
                continue
            }
            // Only four names are kept, of 4, 10, 12 and 14 bytes: the colon is looked for there
            // (a name that matches one of them is a token, so that colon is its first).
            let c: Int
            if n > 4, q[4] == 58 { c = 4 } else if n > 10, q[10] == 58 { c = 10 }
            else if n > 12, q[12] == 58 { c = 12 } else if n > 14, q[14] == 58 { c = 14 } else { continue }
            var vs = c + 1, ve = n
            while vs < ve, q[vs] == 32 || q[vs] == 9 { vs += 1 }
            while ve > vs, q[ve - 1] == 32 || q[ve - 1] == 9 { ve -= 1 }
            // The record's keys as literals: no String built per field and record.
            let key: String
            switch c {
            case 4 where HTTP1Syntax.nameIs(q, "host"): key = isRequest ? "request.host" : "response.host"
            case 10 where HTTP1Syntax.nameIs(q, "user-agent"): key = isRequest ? "request.user-agent" : "response.user-agent"
            case 12 where HTTP1Syntax.nameIs(q, "content-type"):
                key = isRequest ? "request.content-type" : "response.content-type"
            case 14 where HTTP1Syntax.nameIs(q, "content-length"):
                // A value the framer refused ended the stream: the Swift parser keeps no such field.
                guard HTTP1Syntax.contentLength(q + vs, ve - vs) != nil else { continue }
                key = isRequest ? "request.content-length" : "response.content-length"
            default: continue
            }
            let value = String(decoding: UnsafeBufferPointer(start: q + vs, count: ve - vs), as: UTF8.self)
            if e.headers.capacity == 0 { e.headers.reserveCapacity(4) }   // one allocation for the usual few
            e.headers.append((key, value))
        }
    }
}
