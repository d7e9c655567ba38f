// The byte-level part of HTTP2Connection: frames, streams, header fields. State lives in value
// types held by one class pointer (HTTP2Connection.core), as in HTTP1Parser.swift.
#if canImport(Glibc)
import Glibc
#endif

/// gRPC message framing on one side of a stream: 1-byte flag, 4-byte length, message.
struct H2MessageCount {
    var left: UInt64 = 0        // bytes of the current message still to come
    var prefixHave: UInt8 = 0   // prefix bytes seen of the next message (0...4)
    var length: UInt32 = 0
    var messages = 0
    var lost = false            // a prefix byte was not captured: the count is unknown
}

/// Why a stream ended short; its exchange's `error` when output.
enum H2StreamError: Equatable {
    case incomplete, desync, parse
    case rstStream(UInt32), goaway(UInt32)

    var text: String {
        switch self {
        case .incomplete: return "incomplete"
        case .desync: return "desync"
        case .parse: return "parse"
        case .rstStream(let code): return "rst_stream:" + HTTP2ErrorCode.name(code)
        case .goaway(let code): return "goaway:" + HTTP2ErrorCode.name(code)
        }
    }
}

/// One stream. What every stream counts is in plain fields, so that a stream only counted (past
/// the record budget, nearly all at a busy server's rate) is made, moved and dropped as bytes;
/// what only a record needs (path, headers, gRPC) is in `detail`, made for detailed streams.
struct H2Stream {
    var id: UInt32
    var index: Int
    var method = ""               // (short strings: stored inline, nothing to retain)
    var host: String?
    var status: Int?
    var interim = 0
    var requestStart: UInt64?
    var requestEnd: UInt64?
    var responseStart: UInt64?
    var responseEnd: UInt64?
    var requestHeaderBytes: UInt64 = 0
    var requestBodyBytes: UInt64 = 0
    var responseHeaderBytes: UInt64 = 0
    var responseBodyBytes: UInt64 = 0
    var error: H2StreamError?
    var complete = false
    var detailed = true
    var requestHeaders = false  // the request's header block was seen (a later one: trailers)
    var responseFinal = false   // a final (non-1xx) response block was seen (a later one: trailers)
    var requestDone = false
    var responseDone = false
    var grpc = false
    var isConnect = false
    var pushed = false
    var resetByClient: Bool?    // who sent the RST_STREAM that ended it
    var upgradedStream = false  // stream 1 of an h2c upgrade (its detail has the HTTP/1 request's exchange)
    var detail: H2Detail?

    init(id: UInt32, index: Int) {
        self.id = id
        self.index = index
    }

    var errorText: String? { error?.text }

    /// The exchange this stream is, as a record or a test sees it, its strings moved into it
    /// (with its detail's path, headers and gRPC details): once, when the stream is output.
    mutating func takeExchange() -> HTTPExchange {
        // (Made here and filled in place: built from a copy or an optional, Swift copied it
        // whole twice and destroyed the copies.)
        if upgradedStream, var e = detail?.upgraded?.ex {
            fill(&e)
            return e
        }
        var e = HTTPExchange(index: index, method: "", path: "", version: "HTTP/2")
        fill(&e)
        return e
    }

    private mutating func fill(_ e: inout HTTPExchange) {
        e.index = index
        swap(&e.method, &method)
        swap(&e.host, &host)
        e.status = status
        e.interim = interim
        e.requestStart = requestStart
        e.requestEnd = requestEnd
        e.responseStart = responseStart
        e.responseEnd = responseEnd
        e.requestHeaderBytes = requestHeaderBytes
        e.requestBodyBytes = requestBodyBytes
        e.responseHeaderBytes = responseHeaderBytes
        e.responseBodyBytes = responseBodyBytes
        if let error { e.error = error.text }
        e.complete = complete
        e.detailed = detailed
        e.isConnect = isConnect
        if responseFinal { e.responseVersion = "HTTP/2" }
        if e.http2 == nil { e.http2 = HTTP2Details(streamId: id) }
        e.http2!.streamId = id
        e.http2!.pushed = pushed
        if let byClient = resetByClient { e.http2!.resetBy = byClient ? "client" : "server" }
        guard let d = detail else { return }
        swap(&e.path, &d.path)
        swap(&e.headers, &d.headers)
        swap(&e.http2!.grpc, &d.grpc)
        if grpc, e.http2!.grpc != nil {
            e.http2!.grpc!.requestMessages = d.requestCount.lost ? nil : d.requestCount.messages
            e.http2!.grpc!.responseMessages = d.responseCount.lost ? nil : d.responseCount.messages
        }
    }
}

/// What only a detailed stream keeps: its exchange's path, headers and gRPC details (the
/// other fields are the stream's), and the gRPC message counts.
final class H2Detail {
    var path = ""
    var headers: [(String, String)] = []
    var grpc: GRPCDetails?
    var requestCount = H2MessageCount()
    var responseCount = H2MessageCount()
    /// Stream 1 of an h2c upgrade: the HTTP/1 request's exchange (its other fields), boxed so
    /// that every other detail stays small.
    var upgraded: Upgraded?

    final class Upgraded {
        let ex: HTTPExchange
        init(_ ex: HTTPExchange) { self.ex = ex }
    }
}

/// Everything the two directions share: streams, output, state, the two HPACK contexts.
struct H2Shared {
    var state: HTTP2State = .detecting
    var failure: String?
    let redaction: HTTPRedaction
    let maxHeaderBlockBytes: Int
    let maxStreams: Int
    var streams: [H2Stream] = []
    var completed: [H2Stream] = []
    var requestCount = 0
    var lastClientStream: UInt32 = 0
    var goaway: (by: String, code: UInt32, lastStreamId: UInt32)?
    var wantsDetail: ((UInt64) -> Bool)?
    let library: NGHTTP2Library?
    // [0]: blocks the client sends (decoded by the server's context), [1]: the server's.
    var hpack: [HPACKDecoder?] = [nil, nil]
    var tableSize: [UInt32] = [4096, 4096]   // SETTINGS_HEADER_TABLE_SIZE allowed for each

    init(redaction: HTTPRedaction, library: NGHTTP2Library?, maxHeaderBlockBytes: Int, maxStreams: Int) {
        self.redaction = redaction
        self.library = library
        self.maxHeaderBlockBytes = maxHeaderBlockBytes
        self.maxStreams = maxStreams
    }

    var live: Bool { state == .http2 || state == .detecting }
    /// The method and authority of the connection's last stream: the same on every stream as a
    /// rule, made into a String (checked as UTF-8) once.
    var lastMethod = RecentText(), lastAuthority = RecentText()

    func find(_ id: UInt32) -> Int? {
        streams.withUnsafeBufferPointer { b in
            for i in 0..<b.count where b[i].id == id { return i }
            return nil
        }
    }

    /// The decoder stops: open streams are output, with error "desync" for a capture gap and
    /// "parse" for anything else.
    mutating func fail(_ reason: String) {
        guard live else { return }
        if state == .detecting && streams.isEmpty {
            state = .notHTTP2
            failure = reason
            return
        }
        state = .failed
        failure = reason
        let error: H2StreamError = reason == "desync" ? .desync : .parse
        for i in streams.indices where !streams[i].responseDone {
            // (A stream whose response ended is output as it is.)
            streams[i].error = streams[i].error ?? error
            streams[i].complete = false
        }
        streams.sort { $0.index < $1.index }
        while !streams.isEmpty { emit(0) }
    }

    /// Output stream i if both sides are done.
    mutating func maybeComplete(_ i: Int) {
        guard streams[i].requestDone && streams[i].responseDone else { return }
        emit(i)
    }

    mutating func emit(_ i: Int) {
        // In the order they opened: a server answers the oldest first, find meets it first.
        completed.append(streams.remove(at: i))
    }

    mutating func newStream(id: UInt32, startMono: UInt64, pushed: Bool) -> Int? {
        if streams.count >= maxStreams { fail("too_many_streams"); return nil }
        let detailed = wantsDetail?(startMono) ?? true
        // Made in place in the array: built in a local and appended, it was copied (a retain
        // of every field) and the local destroyed.
        streams.append(H2Stream(id: id, index: requestCount))
        let i = streams.count - 1
        streams[i].requestStart = startMono
        streams[i].pushed = pushed
        streams[i].detailed = detailed
        if detailed {
            let d = H2Detail()
            d.headers.reserveCapacity(4)
            streams[i].detail = d
        }
        requestCount += 1
        return i
    }
}

enum H2BlockKind: UInt8 {
    case none, request, requestTrailers, response, responseTrailers, push, ignore
}

/// What a request or response block did to a fresh stream (field() on its fields): the same
/// block again does the same, without its fields being given.
struct H2BlockEffect {
    var kind = H2BlockKind.none
    var serial = -1               // HPACKDecoder.blockSerial of the block
    var method = ""
    var host: String?
    var isConnect = false
    var grpc = false
    var status = 0
}

// (Methods of the stream, called on it in place in the array: passed as an argument, or to a
// non-mutating method, it was copied.)
extension H2Stream {
    /// Nothing set yet that a block's fields set: what they do is all of it.
    mutating func fresh(for kind: H2BlockKind) -> Bool {
        switch kind {
        case .request: return method.isEmpty && host == nil && !isConnect && !grpc
        case .response: return !grpc
        default: return false
        }
    }

    /// What the block did to this fresh stream, into `e`.
    mutating func give(_ e: inout H2BlockEffect) {
        e.method = method
        e.host = host
        e.isConnect = isConnect
        e.grpc = grpc
    }

    mutating func take(_ e: H2BlockEffect) {
        if e.kind == .request {
            method = e.method
            host = e.host
            isConnect = e.isConnect
        }
        grpc = e.grpc
    }
}

enum H2Phase: UInt8 {
    case preface   // the client's 24-byte preface
    case header    // a 9-byte frame header
    case fixed     // fixed-size payload fields (pad length, priority, ids, codes, one setting)
    case block     // a header block fragment
    case data      // a DATA payload (skipped, but for gRPC message prefixes)
    case skip      // bytes not needed, until skipEnd
    case idle      // nothing more from this direction (before an upgrade, or done)
}

/// One direction of the connection.
struct H2Dir {
    let fromClient: Bool          // the client sends these bytes
    var phase: H2Phase
    var pos: UInt64 = 0           // next stream offset to examine
    var prefaceHave = 0
    // The current frame.
    var hdr: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
    var hdrHave = 0
    var hdrMono: UInt64 = 0       // the segment holding the frame's first byte
    var type: UInt8 = 0
    var flags: UInt8 = 0
    var streamId: UInt32 = 0
    var length: UInt32 = 0
    var frameEnd: UInt64 = 0
    var padLength: UInt64 = 0
    var framesSeen = 0
    // Fixed fields.
    var fix: UInt64 = 0           // big-endian accumulation
    var fixHave = 0
    var fixNeed = 0
    var fixStep: UInt8 = 0        // what the fixed bytes are (see fixedDone)
    var settingsLeft: UInt32 = 0
    // Skip.
    var skipEnd: UInt64 = 0
    // Header block.
    var block: H2BlockKind = .none
    var blockStream: UInt32 = 0   // the stream its fields are for (a promise: the promised one)
    var blockEnd: UInt64 = 0      // end of the fragment in this frame
    var blockBytes = 0
    var blockEndStream = false    // END_STREAM on the HEADERS frame that opened the block
    var expectContinuation = false
    var blockOn: UInt32 = 0       // the stream of the frames carrying it (CONTINUATION must match)
    var blockStatus = 0
    // DATA.
    var dataEnd: UInt64 = 0       // end of the data (before padding)
    var dataStart: UInt64 = 0
    var counting = false          // gRPC prefixes are looked for in this frame
    var idx = -1                  // cached index of streamId in H2Shared.streams (check the id)
    var blockIdx = -1             // the same for blockStream
    var effect = H2BlockEffect()  // what the last remembered block did to a fresh stream
    // This direction's HPACK decoder, H2Shared.hpack's: not retained for each block.
    var decoderRef: Unmanaged<HPACKDecoder>?

    init(fromClient: Bool) {
        self.fromClient = fromClient
        phase = fromClient ? .preface : .header
    }

    var side: String { fromClient ? "client" : "server" }

    var wantFrom: UInt64 {
        switch phase {
        case .skip:
            return skipEnd > pos ? skipEnd - 1 : pos
        case .data:
            if counting { return pos }  // refined by H2Core (needs the stream's counter)
            return frameEnd > pos ? frameEnd - 1 : pos
        case .idle:
            return .max
        default:
            return pos
        }
    }

    mutating func blockStreamIndex(_ s: inout H2Shared) -> Int? {
        if blockIdx >= 0, blockIdx < s.streams.count, s.streams[blockIdx].id == blockStream { return blockIdx }
        blockIdx = s.find(blockStream) ?? -1
        return blockIdx >= 0 ? blockIdx : nil
    }

    mutating func streamIndex(_ s: inout H2Shared) -> Int? {
        if idx >= 0, idx < s.streams.count, s.streams[idx].id == streamId { return idx }
        idx = s.find(streamId) ?? -1
        return idx >= 0 ? idx : nil
    }

    // MARK: segments

    mutating func feed(_ offset: UInt64, _ p: UnsafePointer<UInt8>?, _ count: Int, _ ioEndIn: UInt64, _ mono: UInt64, _ s: inout H2Shared) {
        let (capEnd, overflow) = offset.addingReportingOverflow(UInt64(count))
        if overflow { s.fail("desync"); return }
        let ioEnd = max(ioEndIn, capEnd)
        while s.live {
            switch phase {
            case .idle:
                return
            case .skip:
                if ioEnd < skipEnd { return }
                pos = skipEnd
                if pos == frameEnd { frameDone(mono, &s) } else { phase = .header }
            case .data:
                if !counting || pos >= dataEnd {
                    phase = .skip
                    skipEnd = frameEnd
                    continue
                }
                guard let i = streamIndex(&s), let d = s.streams[i].detail else { counting = false; continue }
                let c = fromClient ? d.requestCount : d.responseCount
                if c.lost { counting = false; continue }
                if c.left > 0 {
                    // Inside a message: skip to its end (or the data's).
                    let target = min(dataEnd, pos + c.left)
                    let reach = min(target, ioEnd)
                    if reach <= pos { return }
                    if fromClient { d.requestCount.left -= reach - pos } else { d.responseCount.left -= reach - pos }
                    pos = reach
                    if pos < target { return }
                    continue
                }
                // The next prefix byte: optional.
                if pos >= capEnd || offset > pos || p == nil {
                    if pos >= capEnd && ioEnd <= pos { return }   // not moved yet
                    if fromClient { d.requestCount.lost = true } else { d.responseCount.lost = true }
                    counting = false
                    continue
                }
                var k = Int(pos - offset)
                let stop = Int(min(capEnd, dataEnd) - offset)
                var cc = c
                while k < stop {
                    let b = p![k]
                    if cc.prefixHave == 0 {
                        cc.messages += 1
                        cc.length = 0
                    } else {
                        cc.length = cc.length << 8 | UInt32(b)
                    }
                    cc.prefixHave += 1
                    k += 1
                    if cc.prefixHave == 5 {
                        cc.prefixHave = 0
                        cc.left = UInt64(cc.length)
                        break
                    }
                }
                pos = offset + UInt64(k)
                if fromClient { d.requestCount = cc } else { d.responseCount = cc }
            default:
                if pos >= capEnd {
                    // Nothing captured at or after pos; if the call moved bytes there, they are lost.
                    if ioEnd > pos { gap(&s) }
                    return
                }
                if offset > pos { gap(&s); return }
                guard let p else { return }
                consume(p + Int(pos - offset), Int(capEnd - pos), mono, &s)
            }
        }
    }

    private func gap(_ s: inout H2Shared) {
        s.fail(s.state == .detecting && framesSeen == 0 && prefaceHave == 0 ? "missed_start" : "desync")
    }

    /// Needed bytes at pos: `q[0..<n]` are the stream's bytes from pos on.
    private mutating func consume(_ q: UnsafePointer<UInt8>, _ n: Int, _ mono: UInt64, _ s: inout H2Shared) {
        switch phase {
        case .preface:
            let pre = HTTP2Connection.preface
            var k = 0
            while k < n, prefaceHave < pre.count {
                if q[k] != pre[prefaceHave] { s.fail("not_http2"); return }
                prefaceHave += 1
                k += 1
            }
            pos += UInt64(k)
            if prefaceHave == pre.count {
                if s.state == .detecting {
                    if s.library == nil { s.fail("no_nghttp2"); return }
                    s.state = .http2
                }
                phase = .header
            }
        case .header:
            if hdrHave == 0 && n >= 9 {
                // The whole frame header at once (the usual case).
                hdrMono = mono
                hdr = (q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8])
                pos += 9
                frameHeader(mono, &s)
                return
            }
            var k = 0
            withUnsafeMutableBytes(of: &hdr) { h in
                while k < n, hdrHave < 9 {
                    if hdrHave == 0 { hdrMono = mono }
                    h[hdrHave] = q[k]
                    hdrHave += 1
                    k += 1
                }
            }
            pos += UInt64(k)
            if hdrHave == 9 {
                hdrHave = 0
                frameHeader(mono, &s)
            }
        case .fixed:
            var k = 0
            while k < n, fixHave < fixNeed {
                fix = fix << 8 | UInt64(q[k])
                fixHave += 1
                k += 1
            }
            pos += UInt64(k)
            if fixHave == fixNeed { fixedDone(mono, &s) }
        case .block:
            let take = Int(min(UInt64(n), blockEnd - pos))
            blockFragment(q, take, mono, &s)
        default:
            return
        }
    }

    // MARK: frames

    static let data: UInt8 = 0, headers: UInt8 = 1, priority: UInt8 = 2, rstStream: UInt8 = 3, settings: UInt8 = 4,
               pushPromise: UInt8 = 5, ping: UInt8 = 6, goaway: UInt8 = 7, windowUpdate: UInt8 = 8, continuation: UInt8 = 9
    static let endStream: UInt8 = 0x1, ack: UInt8 = 0x1, endHeaders: UInt8 = 0x4, padded: UInt8 = 0x8, priorityFlag: UInt8 = 0x20

    private mutating func frameHeader(_ mono: UInt64, _ s: inout H2Shared) {
        length = UInt32(hdr.0) << 16 | UInt32(hdr.1) << 8 | UInt32(hdr.2)
        type = hdr.3
        flags = hdr.4
        streamId = (UInt32(hdr.5) << 24 | UInt32(hdr.6) << 16 | UInt32(hdr.7) << 8 | UInt32(hdr.8)) & 0x7fff_ffff
        frameEnd = pos + UInt64(length)
        padLength = 0
        framesSeen += 1
        if framesSeen == 1, type != H2Dir.settings || flags & H2Dir.ack != 0 {
            // Each side's first frame is its SETTINGS (RFC 9113 3.4).
            s.fail(s.state == .detecting ? "not_http2" : "frame")
            return
        }
        if expectContinuation, type != H2Dir.continuation || streamId != blockOn {
            s.fail("frame")
            return
        }
        switch type {
        case H2Dir.data:
            guard streamId != 0 else { s.fail("frame"); return }
            counting = false
            if flags & H2Dir.padded != 0 {
                guard length >= 1 else { s.fail("frame"); return }
                startFixed(1, step: 1)
            } else {
                startData(&s)
            }
        case H2Dir.headers:
            guard streamId != 0 else { s.fail("frame"); return }
            startBlock(mono, &s)
            let need = (flags & H2Dir.padded != 0 ? 1 : 0) + (flags & H2Dir.priorityFlag != 0 ? 5 : 0)
            if need > 0 {
                guard length >= need else { s.fail("frame"); return }
                startFixed(need, step: 2)
            } else {
                enterBlock(mono, &s)
            }
        case H2Dir.continuation:
            guard expectContinuation else { s.fail("frame"); return }
            countHeaderBytes(&s)
            enterBlock(mono, &s)
        case H2Dir.pushPromise:
            guard streamId != 0, !fromClient else { s.fail("frame"); return }
            let need = (flags & H2Dir.padded != 0 ? 1 : 0) + 4
            guard length >= need else { s.fail("frame"); return }
            block = .push
            blockStream = 0
            blockOn = streamId
            blockBytes = 0
            blockEndStream = false
            blockStatus = 0
            startFixed(need, step: 3)
        case H2Dir.rstStream:
            guard length == 4, streamId != 0 else { s.fail("frame"); return }
            startFixed(4, step: 4)
        case H2Dir.settings:
            guard streamId == 0, length % 6 == 0 else { s.fail("frame"); return }
            if flags & H2Dir.ack != 0 {
                guard length == 0 else { s.fail("frame"); return }
                frameDone(mono, &s)
            } else if length == 0 {
                frameDone(mono, &s)
            } else {
                settingsLeft = length / 6
                startFixed(6, step: 5)
            }
        case H2Dir.goaway:
            guard streamId == 0, length >= 8 else { s.fail("frame"); return }
            startFixed(8, step: 6)
        default:
            // PRIORITY, PING, WINDOW_UPDATE, extensions: not needed.
            startSkip(frameEnd, mono, &s)
        }
    }

    private mutating func startFixed(_ n: Int, step: UInt8) {
        phase = .fixed
        fix = 0
        fixHave = 0
        fixNeed = n
        fixStep = step
    }

    private mutating func startSkip(_ end: UInt64, _ mono: UInt64, _ s: inout H2Shared) {
        if end == pos {
            if pos == frameEnd { frameDone(mono, &s) } else { phase = .header }
            return
        }
        phase = .skip
        skipEnd = end
    }

    private mutating func fixedDone(_ mono: UInt64, _ s: inout H2Shared) {
        let v = fix
        switch fixStep {
        case 1:                                   // DATA pad length
            padLength = v
            guard padLength < UInt64(length) else { s.fail("frame"); return }
            startData(&s)
        case 2:                                   // HEADERS pad length and/or priority
            if flags & H2Dir.padded != 0 {
                padLength = flags & H2Dir.priorityFlag != 0 ? v >> 40 : v
                guard padLength <= UInt64(length) - UInt64(fixNeed) else { s.fail("frame"); return }
            }
            enterBlock(mono, &s)
        case 3:                                   // PUSH_PROMISE pad length, promised stream id
            if flags & H2Dir.padded != 0 {
                padLength = v >> 32
                guard padLength <= UInt64(length) - 5 else { s.fail("frame"); return }
            }
            let promised = UInt32(truncatingIfNeeded: v) & 0x7fff_ffff
            startPush(promised, &s)
            enterBlock(mono, &s)
        case 4:                                   // RST_STREAM error code
            fix = v
            frameDone(mono, &s)
        case 5:                                   // one setting
            let id = UInt16(truncatingIfNeeded: v >> 32), value = UInt32(truncatingIfNeeded: v)
            if id == 1 {
                // SETTINGS_HEADER_TABLE_SIZE: limits the blocks the other side sends.
                let other = fromClient ? 1 : 0
                s.tableSize[other] = max(s.tableSize[other], value)
                s.hpack[other]?.allowTableSize(value)
            }
            settingsLeft -= 1
            if settingsLeft > 0 { startFixed(6, step: 5) } else { frameDone(mono, &s) }
        case 6:                                   // GOAWAY last stream id, error code
            fix = v
            let last = UInt32(truncatingIfNeeded: v >> 32) & 0x7fff_ffff, code = UInt32(truncatingIfNeeded: v)
            goawayReceived(last: last, code: code, &s)
            startSkip(frameEnd, mono, &s)
        default:
            s.fail("frame")
        }
    }

    private mutating func startData(_ s: inout H2Shared) {
        dataStart = pos
        dataEnd = frameEnd - padLength
        counting = false
        // (Messages are counted for a record only.)
        if let i = streamIndex(&s), s.streams[i].grpc, let d = s.streams[i].detail {
            let c = fromClient ? d.requestCount : d.responseCount
            counting = !c.lost
        }
        phase = .data
    }

    /// A frame's last byte moved (at `mono`).
    private mutating func frameDone(_ mono: UInt64, _ s: inout H2Shared) {
        phase = .header
        switch type {
        case H2Dir.data:
            guard let i = streamIndex(&s) else { return }
            let bytes = dataEnd - dataStart
            if fromClient {
                s.streams[i].requestBodyBytes &+= bytes
            } else {
                s.streams[i].responseBodyBytes &+= bytes
            }
            if flags & H2Dir.endStream != 0 { sideEnded(i, mono, &s) }
        case H2Dir.headers, H2Dir.continuation, H2Dir.pushPromise:
            if flags & H2Dir.endHeaders != 0 {
                expectContinuation = false
                blockDone(mono, &s)
            } else {
                expectContinuation = true
            }
        case H2Dir.rstStream:
            guard let i = streamIndex(&s) else { return }
            let code = UInt32(truncatingIfNeeded: fix)
            if code == 0 && s.streams[i].responseDone {
                // NO_ERROR after the whole response: the request was not needed any more.
                s.streams[i].complete = s.streams[i].error == nil
            } else {
                s.streams[i].error = .rstStream(code)
                s.streams[i].complete = false
                s.streams[i].resetByClient = fromClient
            }
            s.emit(i)
            idx = -1
        default:
            break
        }
    }

    private mutating func sideEnded(_ i: Int, _ mono: UInt64, _ s: inout H2Shared) {
        if fromClient {
            s.streams[i].requestDone = true
            s.streams[i].requestEnd = mono
        } else {
            s.streams[i].responseDone = true
            s.streams[i].responseEnd = mono
            s.streams[i].complete = s.streams[i].error == nil
            if s.streams[i].status == nil {
                // END_STREAM before a final response: cut short.
                s.streams[i].complete = false
                s.streams[i].error = s.streams[i].error ?? .incomplete
            }
        }
        s.maybeComplete(i)
        idx = -1
    }

    private mutating func goawayReceived(last: UInt32, code: UInt32, _ s: inout H2Shared) {
        s.goaway = (side, code, last)
        // Streams the receiver opened above `last` were not processed: they end now.
        let receiverOpensOdd = !fromClient   // a server's GOAWAY refuses client (odd) streams
        var i = 0
        while i < s.streams.count {
            let id = s.streams[i].id
            if id > last, (id & 1 == 1) == receiverOpensOdd {
                s.streams[i].error = s.streams[i].error ?? .goaway(code)
                s.streams[i].complete = false
                s.emit(i)
            } else {
                i += 1
            }
        }
        idx = -1
    }

    // MARK: header blocks

    private mutating func countHeaderBytes(_ s: inout H2Shared) {
        let bytes = 9 + UInt64(length)
        guard block != .ignore, block != .none, let i = blockStreamIndex(&s) else { return }
        switch block {
        case .request, .requestTrailers, .push: s.streams[i].requestHeaderBytes &+= bytes
        default: s.streams[i].responseHeaderBytes &+= bytes
        }
    }

    /// A HEADERS frame opens a block: which stream and which message it is.
    private mutating func startBlock(_ mono: UInt64, _ s: inout H2Shared) {
        blockStream = streamId
        blockOn = streamId
        blockBytes = 0
        blockEndStream = flags & H2Dir.endStream != 0
        blockStatus = 0
        if fromClient {
            if streamId & 1 == 1, streamId > s.lastClientStream {
                // A new stream (every stream open has an id not above it: no search).
                s.lastClientStream = streamId
                if let i = s.newStream(id: streamId, startMono: hdrMono, pushed: false) {
                    block = .request
                    blockIdx = i
                } else {
                    block = .ignore
                }
            } else if let i = blockStreamIndex(&s) {
                block = s.streams[i].requestHeaders ? .requestTrailers : .request
                if block == .request { s.streams[i].requestStart = hdrMono }
            } else {
                block = .ignore   // a closed stream: decoded for the dynamic table only
            }
        } else {
            if let i = blockStreamIndex(&s) {
                if s.streams[i].responseFinal {
                    block = .responseTrailers
                } else {
                    block = .response
                    if s.streams[i].responseStart == nil { s.streams[i].responseStart = hdrMono }
                }
            } else {
                block = .ignore
            }
        }
        countHeaderBytes(&s)
    }

    private mutating func startPush(_ promised: UInt32, _ s: inout H2Shared) {
        blockStream = promised
        if promised != 0, promised & 1 == 0, s.find(promised) == nil, s.find(streamId) != nil,
           s.newStream(id: promised, startMono: hdrMono, pushed: true) != nil {
            block = .push
            countHeaderBytes(&s)
        } else {
            block = s.live ? .ignore : .none
        }
    }

    /// Bytes of the fragment in this frame start at pos.
    private mutating func enterBlock(_ mono: UInt64, _ s: inout H2Shared) {
        guard s.live else { return }
        blockEnd = frameEnd - padLength
        phase = .block
        if blockEnd == pos { blockFragment(nil, 0, mono, &s) }
    }

    private mutating func blockFragment(_ q: UnsafePointer<UInt8>?, _ n: Int, _ mono: UInt64, _ s: inout H2Shared) {
        blockBytes += n
        if blockBytes > s.maxHeaderBlockBytes { s.fail("header_block_too_large"); return }
        if decoderRef == nil {
            let dirIndex = fromClient ? 0 : 1
            guard let lib = s.library else { s.fail("no_nghttp2"); return }
            guard let d = HPACKDecoder(lib) else { s.fail("hpack"); return }
            d.allowTableSize(s.tableSize[dirIndex])
            s.hpack[dirIndex] = d   // (which keeps it)
            decoderRef = .passUnretained(d)
        }
        let final = flags & H2Dir.endHeaders != 0 && pos + UInt64(n) == blockEnd
        let ok = decoderRef!._withUnsafeGuaranteedRef { decode($0, q, n, final: final, &s) }
        if !ok { s.fail("hpack"); return }
        pos += UInt64(n)
        if pos == blockEnd {
            if frameEnd > blockEnd { startSkip(frameEnd, mono, &s) } else { frameDone(mono, &s) }
        }
    }

    /// The fragment's fields, by `decoder` (this direction's).
    private mutating func decode(_ decoder: HPACKDecoder, _ q: UnsafePointer<UInt8>?, _ n: Int, final: Bool,
                                 _ s: inout H2Shared) -> Bool {
        let kind = block
        var target = -1
        if kind != .ignore && kind != .none { target = blockStreamIndex(&s) ?? -1 }
        guard final, blockBytes == n, let q, n > 0 else {
            return decoder.decode(q, n, final: final) { name, value in
                if target >= 0 { field(kind, target, name, value, &s) }
            }
        }
        // The whole block at once (the usual case): the fast path skips unread fields. A fresh
        // counted stream given the same bytes as the block before gets what that block did (its
        // fields are not given again); nobody reads an ignored block's.
        let fresh = target >= 0 && s.streams[target].fresh(for: kind)
        let reuse = fresh && !s.streams[target].detailed && effect.kind == kind && effect.serial == decoder.blockSerial
        let ok = decoder.decodeBlock(q, n, fieldsOfRepeat: target >= 0 && !reuse) { name, value in
            if target >= 0 { field(kind, target, name, value, &s) }
        }
        if ok && fresh {
            if reuse && decoder.repeated {
                s.streams[target].take(effect)
                if kind == .response { blockStatus = effect.status }
            } else if decoder.remembered {
                effect.kind = kind
                effect.serial = decoder.blockSerial
                effect.status = blockStatus
                s.streams[target].give(&effect)
            }
        }
        return ok
    }

    /// One decoded header field of the current block, for stream index i. The names read here
    /// are HPACKStatic.wantedNames: the fast path passes every other one over undecoded.
    private mutating func field(_ kind: H2BlockKind, _ i: Int, _ name: UnsafeBufferPointer<UInt8>,
                                _ value: UnsafeBufferPointer<UInt8>, _ s: inout H2Shared) {
        let n = name.count
        guard n > 0, let np = name.baseAddress else { return }
        let detailed = s.streams[i].detailed
        @inline(__always) func str() -> String { String(decoding: value, as: UTF8.self) }
        switch kind {
        case .request, .push:
            if np[0] == 58 {   // ':'
                switch n {
                case 7:
                    if H2Names.equals(np, ":method") {
                        s.streams[i].method = s.lastMethod.text(value)
                        if value.count == 7, let v = value.baseAddress, H2Names.equals(v, "CONNECT") { s.streams[i].isConnect = true }
                    }
                case 5:
                    if H2Names.equals(np, ":path"), value.count > 0 {
                        if detailed { s.streams[i].detail?.path = HTTP1Syntax.redactTarget(value, s.redaction, isConnect: false).0 }
                    }
                case 10:
                    if H2Names.equals(np, ":authority") {
                        let v = s.lastAuthority.text(value)
                        s.streams[i].host = v
                        if detailed { s.streams[i].detail?.headers.append(("request.host", v)) }
                    }
                default:
                    break
                }
                return
            }
            switch n {
            case 4:
                if H2Names.equals(np, "host"), s.streams[i].host == nil {
                    let v = str()
                    s.streams[i].host = v
                    if detailed { s.streams[i].detail?.headers.append(("request.host", v)) }
                }
            case 10:
                if detailed, H2Names.equals(np, "user-agent") { s.streams[i].detail?.headers.append(("request.user-agent", str())) }
            case 12:
                if H2Names.equals(np, "content-type") {
                    if H2Names.isGRPC(value) { s.streams[i].grpc = true }
                    if detailed { s.streams[i].detail?.headers.append(("request.content-type", str())) }
                }
            case 14:
                if detailed, H2Names.equals(np, "content-length") { s.streams[i].detail?.headers.append(("request.content-length", str())) }
            default:
                break
            }
        case .response, .responseTrailers:
            if np[0] == 58 {
                if kind == .response, n == 7, H2Names.equals(np, ":status") { blockStatus = H2Names.status(value) ?? -1 }
                return
            }
            switch n {
            case 10:
                if detailed, H2Names.equals(np, "user-agent") { s.streams[i].detail?.headers.append(("response.user-agent", str())) }
            case 11:
                if H2Names.equals(np, "grpc-status") {
                    grpcDetails(i, &s)
                    if let d = s.streams[i].detail, d.grpc != nil { d.grpc!.status = H2Names.decimal(value) }
                }
            case 12:
                if H2Names.equals(np, "content-type") {
                    if H2Names.isGRPC(value) { s.streams[i].grpc = true }
                    if detailed { s.streams[i].detail?.headers.append(("response.content-type", str())) }
                } else if H2Names.equals(np, "grpc-message") {
                    grpcDetails(i, &s)
                    if let d = s.streams[i].detail, d.grpc != nil {
                        d.grpc!.message = value.isEmpty ? "" : s.redaction.query ? "REDACTED" : str()
                    }
                }
            case 14:
                if detailed, H2Names.equals(np, "content-length") { s.streams[i].detail?.headers.append(("response.content-length", str())) }
            default:
                break
            }
        case .requestTrailers, .ignore, .none:
            break
        }
    }

    /// The gRPC details of stream i, created on first need (detailed exchanges only).
    private func grpcDetails(_ i: Int, _ s: inout H2Shared) {
        guard s.streams[i].detailed, let d = s.streams[i].detail, d.grpc == nil else { return }
        var g = GRPCDetails()
        (g.service, g.method) = H2Names.grpcNames(d.path)
        d.grpc = g
        s.streams[i].grpc = true
    }

    /// The block ended (END_HEADERS frame's last byte at `mono`).
    private mutating func blockDone(_ mono: UInt64, _ s: inout H2Shared) {
        let kind = block
        block = .none
        guard kind != .ignore, kind != .none, let i = blockStreamIndex(&s) else { return }
        idx = -1
        switch kind {
        case .request:
            s.streams[i].requestHeaders = true
            if s.streams[i].grpc { grpcDetails(i, &s) }
            if s.streams[i].isConnect && s.streams[i].detailed, let d = s.streams[i].detail, d.path.isEmpty {
                d.path = s.streams[i].host ?? ""
            }
            if blockEndStream {
                s.streams[i].requestDone = true
                s.streams[i].requestEnd = mono
                s.maybeComplete(i)
            }
        case .requestTrailers:
            if blockEndStream {
                s.streams[i].requestDone = true
                s.streams[i].requestEnd = mono
                s.maybeComplete(i)
            }
        case .push:
            s.streams[i].requestHeaders = true
            s.streams[i].requestDone = true
            s.streams[i].requestEnd = mono
            s.streams[i].requestStart = mono
            if s.streams[i].grpc { grpcDetails(i, &s) }
        case .response:
            let status = blockStatus
            if status >= 100 && status < 200 {
                s.streams[i].interim += 1
            } else {
                s.streams[i].responseFinal = true
                s.streams[i].status = status > 0 ? status : nil
                if s.streams[i].grpc { grpcDetails(i, &s) }
            }
            if blockEndStream { sideEnded(i, mono, &s) }
        case .responseTrailers:
            if blockEndStream { sideEnded(i, mono, &s) }
        default:
            break
        }
    }
}

struct H2Core {
    let role: HTTPRole
    var client = H2Dir(fromClient: true)
    var server = H2Dir(fromClient: false)
    var sh: H2Shared

    init(role: HTTPRole, redaction: HTTPRedaction, library: NGHTTP2Library?, maxHeaderBlockBytes: Int, maxStreams: Int) {
        self.role = role
        sh = H2Shared(redaction: redaction, library: library, maxHeaderBlockBytes: maxHeaderBlockBytes, maxStreams: maxStreams)
    }

    @inline(__always) private func fromClient(_ dir: HTTPDirection) -> Bool {
        (dir == .out) == (role == .client)
    }

    mutating func startUpgraded(_ upgraded: HTTPExchange, clientOffset: UInt64, serverOffset: UInt64) {
        client.pos = clientOffset
        server.pos = serverOffset
        var e = upgraded
        e.index = 0
        e.version = "HTTP/2"
        e.http2 = HTTP2Details(streamId: 1)
        e.upgraded = false
        e.error = nil   // (its own are the stream's)
        var st = H2Stream(id: 1, index: 0)
        st.method = e.method
        st.host = e.host
        st.interim = e.interim
        st.requestStart = e.requestStart
        st.requestEnd = e.requestEnd
        st.responseStart = e.responseStart
        st.responseEnd = e.responseEnd
        st.requestHeaderBytes = e.requestHeaderBytes
        st.requestBodyBytes = e.requestBodyBytes
        st.responseHeaderBytes = e.responseHeaderBytes
        st.responseBodyBytes = e.responseBodyBytes
        st.detailed = e.detailed
        st.isConnect = e.isConnect
        let d = H2Detail()
        d.path = e.path
        d.headers = e.headers
        d.grpc = e.http2?.grpc
        d.upgraded = H2Detail.Upgraded(e)   // its other fields (response version, ...)
        st.detail = d
        st.upgradedStream = true
        st.requestHeaders = true
        st.requestDone = true
        sh.streams.append(st)
        sh.requestCount = 1
        sh.lastClientStream = 1
    }

    mutating func feed(_ dir: HTTPDirection, offset: UInt64, bytes: UnsafePointer<UInt8>?, count: Int, ioEnd: UInt64, mono: UInt64) {
        guard sh.live else { return }
        if fromClient(dir) {
            client.feed(offset, bytes, count, ioEnd, mono, &sh)
        } else {
            server.feed(offset, bytes, count, ioEnd, mono, &sh)
        }
    }

    func wantFrom(_ dir: HTTPDirection) -> UInt64 {
        guard sh.live else { return .max }
        let d = fromClient(dir) ? client : server
        if d.phase == .data && d.counting {
            // A gRPC stream's DATA: its next message prefix, or the frame's last byte.
            if let i = sh.find(d.streamId), let detail = sh.streams[i].detail {
                let c = d.fromClient ? detail.requestCount : detail.responseCount
                if !c.lost {
                    let next = c.left > 0 ? d.pos + c.left : d.pos
                    if next < d.dataEnd { return next }
                }
            }
            return d.frameEnd > d.pos ? d.frameEnd - 1 : d.pos
        }
        return d.wantFrom
    }

    mutating func finish(mono: UInt64) {
        guard sh.live else { return }
        if sh.state == .detecting && sh.streams.isEmpty {
            sh.state = .notHTTP2
            if client.prefaceHave > 0 { sh.failure = "incomplete" }
            return
        }
        let cut: H2StreamError = sh.goaway.map { $0.code != 0 ? .goaway($0.code) : .incomplete } ?? .incomplete
        for i in sh.streams.indices {
            if sh.streams[i].responseDone {
                continue
            }
            sh.streams[i].complete = false
            sh.streams[i].error = sh.streams[i].error ?? cut
        }
        sh.streams.sort { $0.index < $1.index }
        while !sh.streams.isEmpty { sh.emit(0) }
        sh.state = .closed
    }
}

// MARK: - names and values on raw bytes

enum H2Names {
    /// Exact bytes (HTTP/2 field names are lowercase).
    @inline(__always) static func equals(_ p: UnsafePointer<UInt8>, _ lit: StaticString) -> Bool {
        let l = lit.utf8Start
        for k in 0..<lit.utf8CodeUnitCount where p[k] != l[k] { return false }
        return true
    }

    /// content-type application/grpc, application/grpc+proto, application/grpc;...
    static func isGRPC(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
        guard v.count >= 16, let p = v.baseAddress else { return false }
        guard HTTP1Syntax.nameIs(p, "application/grpc") else { return false }
        if v.count == 16 { return true }
        let c = p[16]
        return c == 43 || c == 59 || c == 32   // '+' ';' ' '
    }

    static func status(_ v: UnsafeBufferPointer<UInt8>) -> Int? {
        guard v.count == 3 else { return nil }
        return decimal(v)
    }

    static func decimal(_ v: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !v.isEmpty, v.count <= 9 else { return nil }
        var n = 0
        for b in v {
            guard b >= 48, b <= 57 else { return nil }
            n = n * 10 + Int(b - 48)
        }
        return n
    }

    /// "/pkg.Service/Method" -> ("pkg.Service", "Method").
    static func grpcNames(_ path: String) -> (String?, String?) {
        let u = Array(path.utf8)
        guard u.count >= 4, u[0] == 47, let slash = u.lastIndex(of: 47), slash > 1, slash < u.count - 1 else { return (nil, nil) }
        if u[1..<slash].contains(63) || u[(slash + 1)...].contains(63) { return (nil, nil) }   // a query: not gRPC's form
        return (String(decoding: u[1..<slash], as: UTF8.self), String(decoding: u[(slash + 1)...], as: UTF8.self))
    }
}

/// A String made from bytes, kept with them: the same bytes again give it back without making
/// (and checking) a new one.
struct RecentText {
    private var bytes: [UInt8] = []
    private var string = ""

    mutating func text(_ v: UnsafeBufferPointer<UInt8>) -> String {
        guard !v.isEmpty else { return "" }
        if v.count == bytes.count, let p = v.baseAddress,
           bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, p, v.count) == 0 }) {
            return string
        }
        string = String(decoding: v, as: UTF8.self)
        bytes = Array(v)
        return string
    }
}
