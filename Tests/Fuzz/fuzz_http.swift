// libFuzzer target for the HTTP/1 parser: the input is split into segments at positions the
// input itself chooses, alternating directions, with gaps and skipped ranges, so every code
// path of feed/wantFrom/finish sees arbitrary bytes and arbitrary segmentation.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard size > 2 else { return 0 }
    let role: HTTPRole = bytes[0] & 1 == 0 ? .client : .server
    let stream = HTTP1Stream(role: role, maxHeaderBytes: 512 + Int(bytes[1]) * 8)
    var offsets: [UInt64] = [0, 0]
    var i = 2, mono: UInt64 = 1
    while i < size {
        let ctl = bytes[i]
        i += 1
        let n = min(Int(ctl & 0x3f) + 1, size - i)
        let dirIndex = Int(ctl >> 7)
        let dir: HTTPDirection = dirIndex == 0 ? .out : .in
        // bit 6: honour the parser's wantFrom (skip), as the capturer does
        var offset = offsets[dirIndex]
        if ctl & 0x40 != 0 { offset = max(offset, min(stream.wantFrom(dir), offset + 4096)) }
        let chunk = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[i..<(i + n)])
        stream.feed(dir, offset: offset, bytes: chunk, ioEnd: offset + UInt64(n), mono: mono)
        offsets[dirIndex] = offset + UInt64(n)
        mono += UInt64(ctl) * 1000
        i += n
        _ = stream.takeCompleted()
    }
    stream.finish(mono: mono + 1)
    for ex in stream.takeCompleted() {
        // invariants the records rely on
        if let s = ex.requestStart, let e = ex.requestEnd, e < s { fatalError("request ends before it starts") }
        _ = ex.path.utf8.count + (ex.host?.utf8.count ?? 0)
    }
    return 0
}
