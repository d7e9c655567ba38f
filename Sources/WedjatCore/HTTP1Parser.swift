// The byte-level part of HTTP1Stream. Everything is scanned on raw bytes; Strings are built
// only for the fields an HTTPExchange keeps. State lives in value types held by one class
// pointer (HTTP1Stream.core), so that no call pays a dynamic exclusivity check.
#if canImport(Glibc)
import Glibc
#endif

/// Everything except the two per-direction parsers: exchanges, output, stream state.
struct HTTP1Shared {
    var state: HTTP1State = .detecting
    let redaction: HTTPRedaction
    let maxHeaderBytes: Int
    var exs: [HTTPExchange] = []      // started, not yet completed; exs[0] has index `base`
    var base = 0
    var requestCount = 0
    var responseNext = 0              // index of the exchange the next response answers
    var completed: [HTTPExchange] = []
    var resumeRequests = false        // a CONNECT/Upgrade request got a non-tunnel answer
    var stash: [(offset: UInt64, bytes: [UInt8], ioEnd: UInt64, mono: UInt64)] = []
    var stashBytes = 0
    var wantsDetail: ((UInt64) -> Bool)?

    static let maxPending = 1024

    var live: Bool { state == .http || state == .detecting }

    /// Move finished exchanges (both messages done) to `completed`, in order.
    mutating func emitReady() {
        var n = 0
        while n < exs.count, exs[n].requestDone, exs[n].responseDone { n += 1 }
        guard n > 0 else { return }
        // Moved, not copied: no retain/release of every String of every exchange.
        if n == 1, exs.count == 1 {
            completed.append(exs.removeLast())
        } else {
            for _ in 0..<n { completed.append(exs.removeFirst()) }
        }
        base += n
    }

    /// Stop parsing: every unfinished exchange is output; `current` gets `error`, the others
    /// "desync" (or "incomplete" when `state` is .closed).
    mutating func stop(_ newState: HTTP1State, error: String?, current: Int) {
        state = newState
        let other = newState == .closed ? "incomplete" : "desync"
        for k in exs.indices where exs[k].error == nil {
            exs[k].error = (base + k == current ? error : nil) ?? other
        }
        completed.append(contentsOf: exs)
        exs.removeAll()
        base = requestCount
        stash.removeAll()
    }

    mutating func fail(_ error: String, current: Int) {
        if state == .detecting { stop(.notHTTP, error: nil, current: -1); return }
        stop(.desynced, error: error, current: current)
    }
}

struct HTTP1Dir {
    enum Phase: UInt8 {
        // Line phases: bytes are needed contiguously from `pos`.
        case startLine, headers, chunkSize, chunkCRLF, trailers
        // Skip phases.
        case body          // Content-Length body until skipEnd
        case chunkData     // chunk data until skipEnd
        case untilClose    // close-delimited response body
        case paused        // request side after CONNECT/Upgrade, until the answer
    }

    let isRequest: Bool
    var phase: Phase = .startLine
    var pos: UInt64 = 0            // next stream offset to examine (line phases)
    var skipEnd: UInt64 = 0        // end of the region being skipped
    var line: [UInt8] = []         // the start of a line that continues in a later segment
    var blockBytes = 0             // bytes of the current header block / chunk line so far
    var started = false            // the current message's first byte was seen
    var msgStart: UInt64 = 0
    var msgStartMono: UInt64 = 0
    var bodyStart: UInt64 = 0
    var ex = -1                    // index of the exchange of the current message
    // Framing facts of the current message.
    var contentLength: UInt64 = 0
    var hasContentLength = false
    var chunked = false
    var transferEncoding = false
    var upgrade = false
    var status = 0
    var minorVersion: UInt8 = 1    // of the current message's start line: HTTP/1.<minorVersion>
    // Close-delimited body.
    var closeMaxIoEnd: UInt64 = 0
    var closeLastMono: UInt64 = 0
    var closeSeen = false
    var segIoEnd: UInt64 = 0       // ioEnd of the segment being fed

    init(isRequest: Bool) { self.isRequest = isRequest }

    var wantFrom: UInt64 {
        switch phase {
        case .body, .chunkData: return skipEnd - 1
        case .untilClose: return .max
        default: return pos
        }
    }

    mutating func release() {
        line = []
    }

    // MARK: segments

    mutating func feed(_ offset: UInt64, _ p: UnsafePointer<UInt8>?, _ count: Int, _ ioEndIn: UInt64, _ mono: UInt64, _ s: inout HTTP1Shared) {
        let (capEnd, overflow) = offset.addingReportingOverflow(UInt64(count))
        if overflow { s.fail("desync", current: ex); return }
        let ioEnd = max(ioEndIn, capEnd)
        segIoEnd = ioEnd
        while true {
            switch phase {
            case .body, .chunkData:
                if ioEnd < skipEnd { return }
                pos = skipEnd
                if phase == .body {
                    endMessage(at: skipEnd, mono: mono, &s)
                    if !s.live || s.resumeRequests { return }
                } else {
                    phase = .chunkCRLF
                    blockBytes = 0
                }
            case .untilClose:
                if ioEnd > closeMaxIoEnd {
                    closeMaxIoEnd = ioEnd
                    closeLastMono = mono
                    closeSeen = true
                }
                return
            case .paused:
                if ioEnd <= pos { return }
                s.stashBytes += count
                if s.stashBytes > s.maxHeaderBytes { s.fail("desync", current: ex); return }
                let copy = count > 0 && p != nil ? Array(UnsafeBufferPointer(start: p, count: count)) : []
                s.stash.append((offset, copy, ioEnd, mono))
                return
            default:
                if pos >= capEnd {
                    // Nothing captured at or after pos; if the call moved bytes there, they are lost.
                    if ioEnd > pos { s.fail("desync", current: ex) }
                    return
                }
                if offset > pos { s.fail("desync", current: ex); return }
                guard let p else { return }
                if !consumeLines(p, count, offset, mono, &s) { return }
            }
        }
    }

    /// Line phases: consume lines from `pos` until a skip phase is entered (true, pos at its
    /// start) or the captured bytes end (true, the partial line kept) or parsing stops (false).
    private mutating func consumeLines(_ p: UnsafePointer<UInt8>, _ count: Int, _ offset: UInt64, _ mono: UInt64, _ s: inout HTTP1Shared) -> Bool {
        var i = Int(pos - offset)
        while i < count {
            let q = p + i
            let rest = count - i
            if !started, phase == .startLine {
                started = true
                msgStart = pos
                msgStartMono = mono
            }
            if phase == .startLine, line.isEmpty, q[0] != 13, q[0] != 10 {
                // Cheap early rejection (non-HTTP traffic) before looking for the line's end.
                let m = min(rest, 32)
                if !(isRequest ? HTTP1Syntax.requestLinePrefixOK(q, m) : HTTP1Syntax.statusLinePrefixOK(q, m)) {
                    s.fail("parse", current: isRequest ? -1 : s.responseNext)
                    return false
                }
            }
            guard let nl = memchr(q, 10, rest) else {
                if blockBytes + line.count + rest > s.maxHeaderBytes { tooLarge(&s); return false }
                let before = line.count
                line.append(contentsOf: UnsafeBufferPointer(start: q, count: rest))
                pos = offset + UInt64(count)
                if phase == .startLine, before > 0, before < 32, !plausibleStart(&s) { return false }
                return true
            }
            let n = UnsafeRawPointer(nl) - UnsafeRawPointer(q)
            let total = line.count + n + 1
            if blockBytes + total > s.maxHeaderBytes { tooLarge(&s); return false }
            blockBytes += total
            pos = offset + UInt64(i + n + 1)
            i += n + 1
            var ok: Bool
            if line.isEmpty {
                ok = handleLine(q, n, mono, &s)
            } else {
                var buf: [UInt8] = []
                swap(&buf, &line)
                buf.append(contentsOf: UnsafeBufferPointer(start: q, count: n))
                ok = buf.withUnsafeBufferPointer { handleLine($0.baseAddress!, $0.count, mono, &s) }
                buf.removeAll(keepingCapacity: true)
                swap(&buf, &line)
            }
            if !ok || s.resumeRequests { return false }
            switch phase {
            case .startLine, .headers, .chunkSize, .chunkCRLF, .trailers: continue
            default: return true
            }
        }
        return true
    }

    private mutating func tooLarge(_ s: inout HTTP1Shared) {
        s.fail("parse", current: phase == .startLine && !isRequest ? s.responseNext : (phase == .startLine ? -1 : ex))
    }

    /// An incomplete first line: reject early what cannot become a request/status line.
    private mutating func plausibleStart(_ s: inout HTTP1Shared) -> Bool {
        if line[0] == 13 || line[0] == 10 { return true }
        let ok: Bool = line.withUnsafeBufferPointer { b in
            let n = min(b.count, 32)
            return isRequest ? HTTP1Syntax.requestLinePrefixOK(b.baseAddress!, n) : HTTP1Syntax.statusLinePrefixOK(b.baseAddress!, n)
        }
        if !ok { s.fail("parse", current: isRequest ? -1 : s.responseNext) }
        return ok
    }

    // MARK: lines

    private mutating func handleLine(_ q: UnsafePointer<UInt8>, _ rawLen: Int, _ mono: UInt64, _ s: inout HTTP1Shared) -> Bool {
        var n = rawLen
        if n > 0, q[n - 1] == 13 { n -= 1 }
        switch phase {
        case .startLine:
            if n == 0 {
                // Tolerate empty lines between messages, not before the first one.
                if s.state == .detecting { s.fail("parse", current: -1); return false }
                started = false
                blockBytes = 0
                return true
            }
            return isRequest ? startRequest(q, n, mono, &s) : startResponse(q, n, mono, &s)
        case .headers:
            if n == 0 { return headersDone(mono, &s) }
            return headerLine(q, n, &s)
        case .chunkSize:
            guard let size = HTTP1Syntax.chunkSize(q, n) else { s.fail("parse", current: ex); return false }
            blockBytes = 0
            if size == 0 {
                phase = .trailers
                return true
            }
            let (end, o) = pos.addingReportingOverflow(size)
            if o || end == .max { s.fail("parse", current: ex); return false }
            skipEnd = end
            phase = .chunkData
            return true
        case .chunkCRLF:
            if n != 0 { s.fail("parse", current: ex); return false }
            blockBytes = 0
            phase = .chunkSize
            return true
        case .trailers:
            if n == 0 { endMessage(at: pos, mono: mono, &s); return s.live }
            return true
        default:
            return true
        }
    }

    private mutating func resetFraming() {
        contentLength = 0
        hasContentLength = false
        chunked = false
        transferEncoding = false
        upgrade = false
    }

    private mutating func startRequest(_ q: UnsafePointer<UInt8>, _ n: Int, _ mono: UInt64, _ s: inout HTTP1Shared) -> Bool {
        guard let rl = HTTP1Syntax.requestLine(q, n) else { s.fail("parse", current: -1); return false }
        if s.exs.count >= HTTP1Shared.maxPending { s.fail("desync", current: -1); return false }
        if s.state == .detecting { s.state = .http }
        let method = String(decoding: UnsafeBufferPointer(start: q, count: rl.methodEnd), as: UTF8.self)
        let isConnect = rl.methodEnd == 7 && HTTP1Syntax.equals(q, "CONNECT")
        let target = UnsafeBufferPointer(start: q + rl.targetStart, count: rl.targetEnd - rl.targetStart)
        let detailed = s.wantsDetail?(msgStartMono) ?? true
        var path = "", host: String? = nil
        // A counted-only exchange needs the target only for its host (absolute or authority form).
        if detailed || isConnect || (target[0] != 47 && target[0] != 42) {
            (path, host) = HTTP1Syntax.redactTarget(target, s.redaction, isConnect: isConnect)
            if !detailed { path = "" }
        }
        var e = HTTPExchange(index: s.requestCount, method: method, path: path, version: HTTP1Syntax.versionName(q[n - 1]))
        e.detailed = detailed
        if detailed { e.headers.reserveCapacity(6) }
        e.host = host
        e.isConnect = isConnect
        e.pausesRequests = isConnect
        e.isHead = rl.methodEnd == 4 && HTTP1Syntax.equals(q, "HEAD")
        e.requestStart = msgStartMono
        ex = s.requestCount
        s.requestCount += 1
        s.exs.append(e)
        resetFraming()
        phase = .headers
        return true
    }

    private mutating func startResponse(_ q: UnsafePointer<UInt8>, _ n: Int, _ mono: UInt64, _ s: inout HTTP1Shared) -> Bool {
        guard let code = HTTP1Syntax.statusLine(q, n) else { s.fail("parse", current: s.responseNext); return false }
        guard s.responseNext < s.requestCount else { s.fail("desync", current: -1); return false }  // unsolicited
        ex = s.responseNext
        status = code
        minorVersion = q[7]
        let k = ex - s.base
        if s.exs[k].responseStart == nil { s.exs[k].responseStart = msgStartMono }
        resetFraming()
        phase = .headers
        return true
    }

    private mutating func headerLine(_ q: UnsafePointer<UInt8>, _ n: Int, _ s: inout HTTP1Shared) -> Bool {
        // Field name: token characters up to ':'.
        let table = HTTP1Syntax.nameTable.utf8Start
        var c = 0
        while c < n, table[Int(q[c])] == 49 { c += 1 }       // '1': token character
        if c == 0 || c == n || q[c] != 58 { s.fail("parse", current: ex); return false }
        var vs = c + 1, ve = n
        @inline(__always) func trim() {
            while vs < ve, q[vs] == 32 || q[vs] == 9 { vs += 1 }
            while ve > vs, q[ve - 1] == 32 || q[ve - 1] == 9 { ve -= 1 }
        }
        let key: String
        switch c {
        case 4:
            guard HTTP1Syntax.nameIs(q, "host") else { return true }
            trim()
            let value = String(decoding: UnsafeBufferPointer(start: q + vs, count: ve - vs), as: UTF8.self)
            let k = ex - s.base
            if isRequest, s.exs[k].host == nil { s.exs[k].host = value }
            if s.exs[k].detailed { s.exs[k].headers.append((isRequest ? "request.host" : "response.host", value)) }
            return true
        case 7:
            if isRequest, HTTP1Syntax.nameIs(q, "upgrade") { upgrade = true }
            return true
        case 10:
            guard HTTP1Syntax.nameIs(q, "user-agent") else { return true }
            key = isRequest ? "request.user-agent" : "response.user-agent"
        case 12:
            guard HTTP1Syntax.nameIs(q, "content-type") else { return true }
            key = isRequest ? "request.content-type" : "response.content-type"
        case 14:
            guard HTTP1Syntax.nameIs(q, "content-length") else { return true }
            trim()
            guard let len = HTTP1Syntax.contentLength(q + vs, ve - vs), !hasContentLength || len == contentLength else {
                s.fail("parse", current: ex)
                return false
            }
            hasContentLength = true
            contentLength = len
            key = isRequest ? "request.content-length" : "response.content-length"
        case 17:
            guard HTTP1Syntax.nameIs(q, "transfer-encoding") else { return true }
            transferEncoding = true
            chunked = HTTP1Syntax.lastCodingIsChunked(q + c + 1, n - c - 1)
            return true
        default:
            return true
        }
        guard s.exs[ex - s.base].detailed else { return true }
        trim()
        let value = String(decoding: UnsafeBufferPointer(start: q + vs, count: ve - vs), as: UTF8.self)
        s.exs[ex - s.base].headers.append((key, value))
        return true
    }

    private mutating func headersDone(_ mono: UInt64, _ s: inout HTTP1Shared) -> Bool {
        let k = ex - s.base
        let headerBytes = pos - msgStart
        bodyStart = pos
        if isRequest {
            s.exs[k].requestHeaderBytes = headerBytes
            if upgrade { s.exs[k].pausesRequests = true }
            if transferEncoding {
                guard chunked else { s.fail("parse", current: ex); return false }
                phase = .chunkSize
                blockBytes = 0
            } else if hasContentLength, contentLength > 0 {
                return enterBody(&s)
            } else {
                endMessage(at: pos, mono: mono, &s)
            }
            return s.live
        }
        s.exs[k].responseHeaderBytes &+= headerBytes
        if status < 200 && status != 101 {           // interim
            s.exs[k].interim += 1
            phase = .startLine
            started = false
            blockBytes = 0
            return true
        }
        s.exs[k].status = status
        s.exs[k].responseVersion = HTTP1Syntax.versionName(minorVersion)
        if status == 101 || (s.exs[k].isConnect && status >= 200 && status < 300) {
            s.exs[k].upgraded = true
            s.exs[k].responseEnd = mono
            s.exs[k].complete = true
            s.exs[k].responseDone = true
            s.exs[k].requestDone = true
            s.emitReady()
            s.stop(.tunnel, error: "desync", current: -1)
            return false
        }
        if s.exs[k].isHead || status == 204 || status == 304 {
            endMessage(at: pos, mono: mono, &s)
        } else if transferEncoding {
            if chunked {
                phase = .chunkSize
                blockBytes = 0
            } else {
                enterUntilClose()
            }
        } else if hasContentLength {
            if contentLength > 0 { return enterBody(&s) }
            endMessage(at: pos, mono: mono, &s)
        } else {
            enterUntilClose()
        }
        return s.live
    }

    private mutating func enterBody(_ s: inout HTTP1Shared) -> Bool {
        let (end, o) = pos.addingReportingOverflow(contentLength)
        if o || end == .max { s.fail("parse", current: ex); return false }
        skipEnd = end
        phase = .body
        return true
    }

    /// The segment that ended the headers does not count as a body segment (see HTTP1.swift).
    private mutating func enterUntilClose() {
        phase = .untilClose
        closeMaxIoEnd = max(pos, segIoEnd)
        closeSeen = false
        closeLastMono = 0
    }

    /// The current message ended at stream offset `end` (exclusive), at time `mono`.
    mutating func endMessage(at end: UInt64, mono: UInt64, _ s: inout HTTP1Shared) {
        let k = ex - s.base
        if isRequest {
            s.exs[k].requestEnd = mono
            s.exs[k].requestBodyBytes = end - bodyStart
            s.exs[k].requestDone = true
            // After CONNECT/Upgrade, wait for the answer unless it already came.
            phase = s.exs[k].pausesRequests && !s.exs[k].responseDone ? .paused : .startLine
        } else {
            s.exs[k].responseEnd = mono
            s.exs[k].responseBodyBytes = end - bodyStart
            s.exs[k].complete = true
            s.exs[k].responseDone = true
            if s.exs[k].pausesRequests { s.resumeRequests = true }
            s.responseNext += 1
            phase = .startLine
        }
        started = false
        blockBytes = 0
        s.emitReady()
    }
}

struct HTTP1Core {
    let role: HTTPRole
    var req = HTTP1Dir(isRequest: true)
    var resp = HTTP1Dir(isRequest: false)
    var sh: HTTP1Shared

    init(role: HTTPRole, redaction: HTTPRedaction, maxHeaderBytes: Int) {
        self.role = role
        sh = HTTP1Shared(redaction: redaction, maxHeaderBytes: maxHeaderBytes)
    }

    @inline(__always) private func isRequestSide(_ dir: HTTPDirection) -> Bool {
        (dir == .out) == (role == .client)
    }

    mutating func feed(_ dir: HTTPDirection, offset: UInt64, bytes: UnsafePointer<UInt8>?, count: Int, ioEnd: UInt64, mono: UInt64) {
        guard sh.live else { return }
        if isRequestSide(dir) {
            req.feed(offset, bytes, count, ioEnd, mono, &sh)
        } else {
            if sh.state == .detecting {
                // Bytes towards the client before any request: a server-speaks-first protocol.
                if count > 0 || ioEnd > 0 { sh.stop(.notHTTP, error: nil, current: -1) }
            } else {
                resp.feed(offset, bytes, count, ioEnd, mono, &sh)
                // A CONNECT/Upgrade request was answered without a tunnel: parse the requests
                // held meanwhile before the responses that follow (same segment, from resp.pos).
                while sh.resumeRequests, sh.live {
                    resume()
                    if sh.live { resp.feed(offset, bytes, count, ioEnd, mono, &sh) }
                }
            }
        }
        if !sh.live { req.release(); resp.release() }
    }

    private mutating func resume() {
        sh.resumeRequests = false
        guard sh.live, req.phase == .paused else { return }
        req.phase = .startLine
        req.started = false
        req.blockBytes = 0
        var stash: [(offset: UInt64, bytes: [UInt8], ioEnd: UInt64, mono: UInt64)] = []
        swap(&stash, &sh.stash)
        sh.stashBytes = 0
        for seg in stash {
            seg.bytes.withUnsafeBufferPointer { b in
                req.feed(seg.offset, b.baseAddress, b.count, seg.ioEnd, seg.mono, &sh)
            }
            if !sh.live { return }
        }
    }

    func wantFrom(_ dir: HTTPDirection) -> UInt64 {
        guard sh.live else { return .max }
        return isRequestSide(dir) ? req.wantFrom : resp.wantFrom
    }

    mutating func finish(mono: UInt64) {
        guard sh.live else { return }
        if resp.phase == .untilClose {
            let end = resp.closeSeen ? resp.closeLastMono : mono
            resp.endMessage(at: resp.closeMaxIoEnd, mono: end, &sh)
        }
        if sh.state == .detecting {
            sh.stop(.notHTTP, error: nil, current: -1)
        } else {
            sh.stop(.closed, error: "incomplete", current: -1)
        }
        req.release()
        resp.release()
    }
}

// MARK: - syntax helpers on raw bytes

enum HTTP1Syntax {
    struct RequestLine {
        var methodEnd: Int
        var targetStart: Int
        var targetEnd: Int
    }

    /// '1' at the index of each tchar (RFC 9110 5.6.2): ! # $ % & ' * + - . ^ _ ` | ~ DIGIT ALPHA.
    @inline(__always) static var nameTable: StaticString {
        """
        0000000000000000000000000000000001011111001101101111111111000000\
        0111111111111111111111111110001111111111111111111111111111101010\
        0000000000000000000000000000000000000000000000000000000000000000\
        0000000000000000000000000000000000000000000000000000000000000000
        """
    }

    @inline(__always) static func isUpper(_ b: UInt8) -> Bool { b >= 65 && b <= 90 }
    @inline(__always) static func isMethodChar(_ b: UInt8) -> Bool { isUpper(b) || b == 45 || b == 95 }  // A-Z - _
    @inline(__always) static func isTargetChar(_ b: UInt8) -> Bool { b > 32 && b < 127 }

    /// Exact bytes.
    static func equals(_ p: UnsafePointer<UInt8>, _ lit: StaticString) -> Bool {
        let l = lit.utf8Start
        for k in 0..<lit.utf8CodeUnitCount where p[k] != l[k] { return false }
        return true
    }

    /// Case-insensitive header name match against a lowercase literal of the same length.
    @inline(__always) static func nameIs(_ p: UnsafePointer<UInt8>, _ lit: StaticString) -> Bool {
        let l = lit.utf8Start
        for k in 0..<lit.utf8CodeUnitCount {
            let t = l[k], b = p[k]
            if t >= 97 { if b | 0x20 != t { return false } } else if b != t { return false }
        }
        return true
    }

    /// "http://" or "https://", any case; returns the length of the prefix.
    static func schemePrefix(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int? {
        if n >= 7, nameIs(p, "http://") { return 7 }
        if n >= 8, nameIs(p, "https://") { return 8 }
        return nil
    }

    /// Whether the first n bytes of a request line can still become a valid one.
    static func requestLinePrefixOK(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        guard n > 0 else { return true }
        guard isUpper(p[0]) else { return false }
        var i = 1
        while i < n, isMethodChar(p[i]) { i += 1 }
        if i > 20 { return false }
        if i == n { return true }
        guard p[i] == 32 else { return false }
        i += 1
        if i == n { return true }
        let c = p[i]
        if c == 47 || c == 42 { return true }               // '/' '*'
        if i == 8, equals(p, "CONNECT") { return isTargetChar(c) }
        // absolute-form: compatible with http:// or https://
        let m = n - i
        return caseCompatible(p + i, m, "http://") || caseCompatible(p + i, m, "https://")
    }

    /// The first min(n, lit.count) bytes match the lowercase literal, letters in any case.
    private static func caseCompatible(_ p: UnsafePointer<UInt8>, _ n: Int, _ lit: StaticString) -> Bool {
        let l = lit.utf8Start
        for k in 0..<min(n, lit.utf8CodeUnitCount) {
            let t = l[k], b = p[k]
            if t >= 97 { if b | 0x20 != t { return false } } else if b != t { return false }
        }
        return true
    }

    private static func prefixMatches(_ p: UnsafePointer<UInt8>, _ n: Int, _ lit: StaticString) -> Bool {
        let l = lit.utf8Start
        for k in 0..<min(n, lit.utf8CodeUnitCount) where p[k] != l[k] { return false }
        return true
    }

    static func statusLinePrefixOK(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        prefixMatches(p, n, "HTTP/1.")
    }

    /// METHOD SP target SP HTTP/1.x (CR already stripped).
    static func requestLine(_ p: UnsafePointer<UInt8>, _ n: Int) -> RequestLine? {
        guard n >= 14, isUpper(p[0]) else { return nil }
        var i = 1
        while i < n, i <= 20, isMethodChar(p[i]) { i += 1 }
        guard i <= 20, i < n, p[i] == 32 else { return nil }
        let methodEnd = i
        i += 1
        let targetStart = i
        while i < n, isTargetChar(p[i]) { i += 1 }
        let targetEnd = i
        guard targetEnd > targetStart, n - i == 9, p[i] == 32,
              equals(p + i + 1, "HTTP/1."), p[n - 1] == 48 || p[n - 1] == 49 else { return nil }
        let c = p[targetStart]
        if methodEnd == 7, equals(p, "CONNECT") {
            // authority-form
        } else if c != 47 && c != 42, schemePrefix(p + targetStart, targetEnd - targetStart) == nil {
            return nil
        }
        return RequestLine(methodEnd: methodEnd, targetStart: targetStart, targetEnd: targetEnd)
    }

    /// "HTTP/1.0" or "HTTP/1.1" from the minor version's digit, which the start line's check
    /// allowed to be only '0' or '1'. Static strings: nothing is allocated.
    @inline(__always) static func versionName(_ minorDigit: UInt8) -> String { minorDigit == 48 ? "HTTP/1.0" : "HTTP/1.1" }

    /// HTTP/1.x SP 3DIGIT [SP reason]; returns the code.
    static func statusLine(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int? {
        guard n >= 12, equals(p, "HTTP/1."), p[7] == 48 || p[7] == 49, p[8] == 32 else { return nil }
        var code = 0
        for k in 9..<12 {
            let d = p[k] &- 48
            guard d <= 9 else { return nil }
            code = code * 10 + Int(d)
        }
        guard code >= 100, n == 12 || p[12] == 32 else { return nil }
        return code
    }

    /// 1*DIGIT, or a comma-separated list of identical values.
    static func contentLength(_ p: UnsafePointer<UInt8>, _ n: Int) -> UInt64? {
        var result: UInt64? = nil
        var i = 0
        while true {
            while i < n, p[i] == 32 || p[i] == 9 { i += 1 }
            var v: UInt64 = 0
            var digits = 0
            while i < n, p[i] >= 48, p[i] <= 57 {
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (a, o2) = m.addingReportingOverflow(UInt64(p[i] - 48))
                if o1 || o2 { return nil }
                v = a
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if let r = result, r != v { return nil }
            result = v
            while i < n, p[i] == 32 || p[i] == 9 { i += 1 }
            if i == n { return result }
            guard p[i] == 44 else { return nil }             // ','
            i += 1
        }
    }

    /// Whether the last transfer coding of a Transfer-Encoding value is "chunked".
    static func lastCodingIsChunked(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        var e = n
        while e > 0, p[e - 1] == 32 || p[e - 1] == 9 { e -= 1 }
        guard e >= 7, nameIs(p + e - 7, "chunked") else { return false }
        var s = e - 7
        while s > 0, p[s - 1] == 32 || p[s - 1] == 9 { s -= 1 }
        return s == 0 || p[s - 1] == 44
    }

    /// chunk-size [ BWS ; chunk-ext ] (CR stripped); nil if malformed or over 2^60.
    static func chunkSize(_ p: UnsafePointer<UInt8>, _ n: Int) -> UInt64? {
        var v: UInt64 = 0
        var i = 0
        while i < n {
            let b = p[i]
            let h: UInt8
            if b >= 48 && b <= 57 { h = b - 48 } else if b | 0x20 >= 97 && b | 0x20 <= 102 { h = (b | 0x20) - 87 } else { break }
            if v >> 59 != 0 { return nil }
            v = v << 4 | UInt64(h)
            i += 1
        }
        guard i > 0 else { return nil }
        while i < n, p[i] == 32 || p[i] == 9 { i += 1 }
        guard i == n || p[i] == 59 else { return nil }      // ';'
        return v
    }

    private static let redactedQuery: StaticString = "?REDACTED"
    private static let redactedUser: StaticString = "REDACTED@"

    /// The request target as reported, and the host of an absolute-form/authority-form target.
    static func redactTarget(_ t: UnsafeBufferPointer<UInt8>, _ r: HTTPRedaction, isConnect: Bool) -> (String, String?) {
        let p = t.baseAddress!, n = t.count
        var authStart = -1, authEnd = -1
        if isConnect {
            authStart = 0
            authEnd = n
        } else if let s = schemePrefix(p, n) {
            authStart = s
            authEnd = s
            while authEnd < n, p[authEnd] != 47, p[authEnd] != 63, p[authEnd] != 35 { authEnd += 1 }
        }
        var at = -1
        if authStart >= 0 {
            for k in authStart..<authEnd where p[k] == 64 { at = k }   // last '@'
        }
        var qm = -1, hash = -1
        var k = max(authEnd, 0)
        if !isConnect {
            while k < n {
                let b = p[k]
                if b == 35 { hash = k; break }
                if b == 63, qm < 0 { qm = k }
                k += 1
            }
        }
        let host: String? = authStart >= 0
            ? String(decoding: UnsafeBufferPointer(start: p + (at >= 0 ? at + 1 : authStart), count: authEnd - (at >= 0 ? at + 1 : authStart)), as: UTF8.self)
            : nil
        let cutUser = at >= 0 && r.userinfo, cutQuery = qm >= 0 && r.query, cutFrag = hash >= 0 && r.fragment
        if !(cutUser || cutQuery || cutFrag) {
            return (String(decoding: t, as: UTF8.self), host)
        }
        let pathEnd = qm >= 0 ? qm : (hash >= 0 ? hash : n)
        let path = String(unsafeUninitializedCapacity: n + redactedUser.utf8CodeUnitCount + redactedQuery.utf8CodeUnitCount) { out in
            var w = 0
            func add(_ src: UnsafePointer<UInt8>, _ count: Int) {
                guard count > 0 else { return }
                UnsafeMutableRawPointer(out.baseAddress! + w).copyMemory(from: src, byteCount: count)
                w += count
            }
            if cutUser {
                add(p, authStart)
                add(redactedUser.utf8Start, redactedUser.utf8CodeUnitCount)
                add(p + at + 1, pathEnd - at - 1)
            } else {
                add(p, pathEnd)
            }
            if qm >= 0 {
                if r.query { add(redactedQuery.utf8Start, redactedQuery.utf8CodeUnitCount) } else { add(p + qm, (hash >= 0 ? hash : n) - qm) }
            }
            if hash >= 0, !r.fragment { add(p + hash, n - hash) }
            return w
        }
        return (path, host)
    }
}
