// libFuzzer target for the HTTP/2 decoder: the input is split into segments at positions the
// input itself chooses, alternating directions, with gaps and skipped ranges (the capture's
// wantFrom honoured or not), so frames, HPACK blocks (libnghttp2, dlopen'ed as in the agent)
// and stream bookkeeping see arbitrary bytes and arbitrary segmentation. Byte 0: bit 0 the
// role, bit 1 start the client direction with the preface (the fuzzer need not find it).
// The same segments go to a second decoder whose streams are all detailed: a stream only
// counted in the first (its repeated blocks not given again, H2BlockEffect) must be the same
// stream, method, host, status, sizes, times and error as there.
import CWedjatNghttp2

let fuzzLibrary = NGHTTP2Library.shared

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard size > 2 else { return 0 }
    let role: HTTPRole = bytes[0] & 1 == 0 ? .client : .server
    let conn = HTTP2Connection(role: role, library: fuzzLibrary, maxHeaderBlockBytes: 1024 + Int(bytes[1]) * 64,
                               maxStreams: 1 + Int(bytes[1] & 63))
    conn.wantsDetail = { mono in (mono / 1000) & 1 == 0 }   // (mono moves by ctl * 1000)
    let every = HTTP2Connection(role: role, library: fuzzLibrary, maxHeaderBlockBytes: 1024 + Int(bytes[1]) * 64,
                                maxStreams: 1 + Int(bytes[1] & 63))
    var got: [String] = [], want: [String] = []
    var offsets: [UInt64] = [0, 0]
    let clientDir: HTTPDirection = role == .client ? .out : .in
    if bytes[0] & 2 != 0 {
        conn.feed(clientDir, offset: 0, bytes: HTTP2Connection.preface, mono: 1)
        every.feed(clientDir, offset: 0, bytes: HTTP2Connection.preface, mono: 1)
        offsets[clientDir == .out ? 0 : 1] = UInt64(HTTP2Connection.preface.count)
    }
    var i = 2, mono: UInt64 = 2
    while i < size {
        let ctl = bytes[i]
        i += 1
        let n = min(Int(ctl & 0x3f) + 1, size - i)
        let dirIndex = Int(ctl >> 7)
        let dir: HTTPDirection = dirIndex == 0 ? .out : .in
        var offset = offsets[dirIndex]
        // bit 6: honour the decoder's wantFrom (skip), as the capturer does
        if ctl & 0x40 != 0 { offset = max(offset, min(conn.wantFrom(dir), offset + 4096)) }
        // (both decoders want the same bytes: only detail differs)
        let chunk = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[i..<(i + n)])
        conn.feed(dir, offset: offset, bytes: chunk, ioEnd: offset + UInt64(n), mono: mono)
        every.feed(dir, offset: offset, bytes: chunk, ioEnd: offset + UInt64(n), mono: mono)
        offsets[dirIndex] = offset + UInt64(n)
        mono += UInt64(ctl) * 1000
        i += n
        conn.drainCompleted { check($0); got.append(counted($0)) }
        every.drainCompleted { want.append(counted($0)) }
    }
    let line = JSONLine()
    line.http2ConnectionFields(conn)
    _ = conn.noneReason
    conn.finish(mono: mono + 1)
    every.finish(mono: mono + 1)
    for ex in conn.takeCompleted() { check(ex); got.append(counted(ex)) }
    for ex in every.takeCompleted() { want.append(counted(ex)) }
    if got != want || conn.failure != every.failure { fatalError("counted streams differ from detailed ones:\n\(got)\n\(want)") }
    return 0
}

/// What a counted stream keeps (all but path, headers and gRPC details).
private func counted(_ e: HTTPExchange) -> String {
    func t(_ v: UInt64?) -> String { v.map(String.init) ?? "-" }
    return "\(e.http2?.streamId ?? 0) #\(e.index) \(e.method) \(e.host ?? "-") \(e.status ?? -1) \(e.interim)"
        + " \(e.requestHeaderBytes)+\(e.requestBodyBytes) \(e.responseHeaderBytes)+\(e.responseBodyBytes)"
        + " \(t(e.requestStart)),\(t(e.requestEnd)),\(t(e.responseStart)),\(t(e.responseEnd)) \(e.complete) \(e.error ?? "-")"
        + " \(e.http2?.pushed ?? false) \(e.http2?.resetBy ?? "-")"
}

private func check(_ ex: HTTPExchange) {
    // invariants the records rely on
    if let s = ex.requestStart, let e = ex.requestEnd, e < s { fatalError("request ends before it starts") }
    if ex.complete && ex.error != nil { fatalError("complete with an error") }
    guard let h2 = ex.http2, h2.streamId != 0 else { fatalError("an HTTP/2 exchange without its stream") }
    let line = JSONLine()
    line.beginObject()
    line.http2Fields(ex)
    line.endObject()
    _ = ex.path.utf8.count + (ex.host?.utf8.count ?? 0)
}
