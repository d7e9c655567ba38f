// Exchanges from what the C framer (CShims/common/http1.c) hands over: one message event per
// request and per response, paired by their exchange index (each direction counts its own
// messages, so which thread's event comes first does not matter), plus the header blocks of
// detailed exchanges and a STOP when the stream is not parsed further. The output is the same
// HTTPExchange the Swift parser (HTTP1Stream, the oracle of the differential tests) produces.
import CWedjatCommon
#if canImport(Glibc)
import Glibc
#endif

public final class HTTP1Framed {
    public let role: HTTPRole
    let redaction: HTTPRedaction
    public private(set) var state: HTTP1State = .detecting
    /// The state when the connection ended (before the end's own STOP), nil until then.
    public private(set) var stateAtFinish: HTTP1State?
    /// Requests whose request line was seen (exchanges started).
    public private(set) var requestCount = 0
    /// Message events that came after the stream stopped, or for an exchange already out.
    public private(set) var lateMessages = 0

    private var exs: [Slot] = []     // exs[0] is exchange `base`
    private var base = 0
    private var completed: [HTTPExchange] = []

    struct Slot {
        var ex: HTTPExchange?        // set once its request message came
        var response: HTTPExchange?  // response facts that came before the request's
        var requestHead: [UInt8] = []
        var responseHead: [UInt8] = []
        var requestDone = false
        var responseDone = false
    }

    public init(role: HTTPRole, redaction: HTTPRedaction = .init()) {
        self.role = role
        self.redaction = redaction
    }

    private func slot(_ seq: UInt32) -> Int? {
        let k = Int(seq) - base
        guard k >= 0 else { return nil }
        if k >= exs.count {
            guard k < exs.count + 4096 else { return nil }
            exs.append(contentsOf: repeatElement(Slot(), count: k - exs.count + 1))
        }
        return k
    }

    /// Header-block bytes of a detailed exchange's message, in stream order.
    public func head(isRequest: Bool, seq: UInt32, bytes: UnsafeRawBufferPointer) {
        guard let k = slot(seq) else { return }
        if isRequest { exs[k].requestHead.append(contentsOf: bytes) } else { exs[k].responseHead.append(contentsOf: bytes) }
    }

    public func message(_ m: UnsafePointer<wj_h1_msg>) {
        switch Int32(m.pointee.kind) {
        case Int32(WJ_H1_REQUEST): request(m)
        case Int32(WJ_H1_RESPONSE): response(m)
        case Int32(WJ_H1_STOP): stop(m)
        default: break
        }
    }

    @inline(__always) private func has(_ m: UnsafePointer<wj_h1_msg>, _ flag: Int32) -> Bool {
        (Int32(m.pointee.flags) & flag) != 0
    }

    private static func text<T>(_ tuple: inout T, _ len: Int) -> String {
        withUnsafeBytes(of: &tuple) { String(decoding: $0.prefix(len), as: UTF8.self) }
    }

    private func request(_ m: UnsafePointer<wj_h1_msg>) {
        guard state == .http || state == .detecting, let k = slot(m.pointee.seq) else { lateMessages += 1; return }
        if state == .detecting { state = .http }
        var msg = m.pointee
        let method = HTTP1Framed.text(&msg.method, Int(msg.method_len))
        let detailed = has(m, Int32(WJ_H1_M_DETAILED))
        var e = HTTPExchange(index: Int(msg.seq), method: method, path: "", version: msg.minor == 0 ? "HTTP/1.0" : "HTTP/1.1")
        e.detailed = detailed
        if has(m, Int32(WJ_H1_M_HOST_TARGET) | Int32(WJ_H1_M_HOST_FIELD)) {
            e.host = HTTP1Framed.text(&msg.host, Int(msg.host_len))
        }
        e.isHead = has(m, Int32(WJ_H1_M_HEAD))
        e.isConnect = has(m, Int32(WJ_H1_M_CONNECT))
        e.requestStart = msg.t_first
        if has(m, Int32(WJ_H1_M_HEADERS)) { e.requestHeaderBytes = msg.header_bytes }
        if has(m, Int32(WJ_H1_M_ENDED)) {
            e.requestEnd = msg.t_end
            e.requestBodyBytes = msg.body_bytes
            exs[k].requestDone = true
        }
        if detailed {
            exs[k].requestHead.withUnsafeBufferPointer { parseHead($0, isRequest: true, into: &e) }
            exs[k].requestHead = []
        }
        if let r = exs[k].response { merge(response: r, into: &e) }
        exs[k].response = nil
        exs[k].ex = e
        requestCount = max(requestCount, Int(msg.seq) + 1)
        emitReady()
    }

    private func response(_ m: UnsafePointer<wj_h1_msg>) {
        guard state == .http || state == .detecting, let k = slot(m.pointee.seq) else { lateMessages += 1; return }
        let msg = m.pointee
        var r = HTTPExchange(index: Int(msg.seq), method: "", path: "", version: "")
        r.responseStart = msg.t_first
        r.responseHeaderBytes = msg.header_bytes
        r.interim = Int(msg.interim)
        if has(m, Int32(WJ_H1_M_HEADERS)) {
            r.status = Int(msg.status)
            r.responseVersion = msg.minor == 0 ? "HTTP/1.0" : "HTTP/1.1"
        }
        if has(m, Int32(WJ_H1_M_ENDED)) {
            r.responseEnd = msg.t_end
            r.responseBodyBytes = msg.body_bytes
            r.complete = true
            exs[k].responseDone = true
        }
        if has(m, Int32(WJ_H1_M_UPGRADED)) {
            r.upgraded = true
            exs[k].requestDone = true   // as the Swift parser: the tunnel ends the request side too
        }
        if has(m, Int32(WJ_H1_M_DETAILED)), !exs[k].responseHead.isEmpty {
            exs[k].responseHead.withUnsafeBufferPointer { parseHead($0, isRequest: false, into: &r) }
            exs[k].responseHead = []
        }
        if var e = exs[k].ex {
            merge(response: r, into: &e)
            exs[k].ex = e
        } else {
            exs[k].response = r
        }
        emitReady()
    }

    private func merge(response r: HTTPExchange, into e: inout HTTPExchange) {
        e.responseStart = r.responseStart
        e.responseHeaderBytes = r.responseHeaderBytes
        e.interim = r.interim
        e.status = r.status
        e.responseVersion = r.responseVersion
        e.responseEnd = r.responseEnd
        e.responseBodyBytes = r.responseBodyBytes
        e.complete = r.complete
        e.upgraded = r.upgraded
        if e.detailed { e.headers.append(contentsOf: r.headers) }
    }

    private func stop(_ m: UnsafePointer<wj_h1_msg>) {
        if has(m, Int32(WJ_H1_M_FINISH)), stateAtFinish == nil { stateAtFinish = state }
        guard state == .http || state == .detecting else { return }
        let newState: HTTP1State
        switch Int32(m.pointee.state) {
        case Int32(WJ_H1_NOT_HTTP): newState = .notHTTP
        case Int32(WJ_H1_TUNNEL): newState = .tunnel
        case Int32(WJ_H1_CLOSED): newState = .closed
        default: newState = .desynced
        }
        let current = m.pointee.seq == UInt32.max ? -1 : Int(m.pointee.seq)
        let error: String?
        switch Int32(m.pointee.error) {
        case Int32(WJ_H1_ERR_INCOMPLETE): error = "incomplete"
        case Int32(WJ_H1_ERR_DESYNC): error = "desync"
        case Int32(WJ_H1_ERR_PARSE): error = "parse"
        default: error = nil
        }
        state = newState
        let other = newState == .closed ? "incomplete" : "desync"
        for k in exs.indices {
            guard var e = exs[k].ex else { continue }   // no request seen: not an exchange
            if e.error == nil { e.error = (base + k == current ? error : nil) ?? other }
            completed.append(e)
        }
        exs.removeAll()
        base = requestCount
    }

    /// Exchanges whose request and response are both done go out, in request order.
    private func emitReady() {
        var n = 0
        while n < exs.count, exs[n].requestDone, exs[n].responseDone, exs[n].ex != nil { n += 1 }
        guard n > 0 else { return }
        for i in 0..<n { completed.append(exs[i].ex!) }
        exs.removeFirst(n)
        base += n
    }

    public func drainCompleted(_ body: (HTTPExchange) -> Void) {
        guard !completed.isEmpty else { return }
        var out: [HTTPExchange] = []
        swap(&out, &completed)
        for i in out.indices { body(out[i]) }
        out.removeAll(keepingCapacity: true)
        swap(&out, &completed)
    }

    public func takeCompleted() -> [HTTPExchange] {
        var out: [HTTPExchange] = []
        swap(&out, &completed)
        return out
    }

    /// Exchanges started and not yet out.
    public var pendingCount: Int { exs.count }

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
            var c = 0
            let table = HTTP1Syntax.nameTable.utf8Start
            while c < n, table[Int(q[c])] == 49 { c += 1 }
            guard c > 0, c < n, q[c] == 58 else { continue }
            var vs = c + 1, ve = n
            while vs < ve, q[vs] == 32 || q[vs] == 9 { vs += 1 }
            while ve > vs, q[ve - 1] == 32 || q[ve - 1] == 9 { ve -= 1 }
            let name: String
            switch c {
            case 4 where HTTP1Syntax.nameIs(q, "host"): name = "host"
            case 10 where HTTP1Syntax.nameIs(q, "user-agent"): name = "user-agent"
            case 12 where HTTP1Syntax.nameIs(q, "content-type"): name = "content-type"
            case 14 where HTTP1Syntax.nameIs(q, "content-length"):
                // A value the framer refused ended the stream: the Swift parser keeps no such field.
                guard HTTP1Syntax.contentLength(q + vs, ve - vs) != nil else { continue }
                name = "content-length"
            default: continue
            }
            let value = String(decoding: UnsafeBufferPointer(start: q + vs, count: ve - vs), as: UTF8.self)
            e.headers.append(((isRequest ? "request." : "response.") + name, value))
        }
    }
}
