// libFuzzer target for the HTTP/2 decoder: the input is split into segments at positions the
// input itself chooses, alternating directions, with gaps and skipped ranges (the capture's
// wantFrom honoured or not), so frames, HPACK blocks (libnghttp2, dlopen'ed as in the agent)
// and stream bookkeeping see arbitrary bytes and arbitrary segmentation. Byte 0: bit 0 the
// role, bit 1 start the client direction with the preface (the fuzzer need not find it).
import CWedjatNghttp2

let fuzzLibrary = NGHTTP2Library.shared

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP2(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard size > 2 else { return 0 }
    let role: HTTPRole = bytes[0] & 1 == 0 ? .client : .server
    let conn = HTTP2Connection(role: role, library: fuzzLibrary, maxHeaderBlockBytes: 1024 + Int(bytes[1]) * 64,
                               maxStreams: 1 + Int(bytes[1] & 63))
    conn.wantsDetail = { mono in mono & 1 == 0 }
    var offsets: [UInt64] = [0, 0]
    let clientDir: HTTPDirection = role == .client ? .out : .in
    if bytes[0] & 2 != 0 {
        conn.feed(clientDir, offset: 0, bytes: HTTP2Connection.preface, mono: 1)
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
        let chunk = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[i..<(i + n)])
        conn.feed(dir, offset: offset, bytes: chunk, ioEnd: offset + UInt64(n), mono: mono)
        offsets[dirIndex] = offset + UInt64(n)
        mono += UInt64(ctl) * 1000
        i += n
        conn.drainCompleted { check($0) }
    }
    let line = JSONLine()
    line.http2ConnectionFields(conn)
    _ = conn.noneReason
    conn.finish(mono: mono + 1)
    for ex in conn.takeCompleted() { check(ex) }
    return 0
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
