// `wedjat-http-bench --h2`: the HTTP/2 decoder's cost per exchange (a stream: request HEADERS,
// response HEADERS + DATA), as nginx sees h2load's traffic: server role, 10 streams per
// segment (h2load -m 10), the requests' header blocks indexed by the client's dynamic table
// after the first, the responses' as nginx 1.22 writes them (`:status` indexed, five fields
// inserted into the table it never refers to, two literal names not indexed), a 606-byte body. HPACK by the libnghttp2 the agent loads. Run it under cachegrind for
// instructions per exchange (scripts/bench/h2_instructions.sh --decoder).
import WedjatCore
#if canImport(Glibc)
import Glibc
#endif

func h2Frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
    let n = payload.count
    var f: [UInt8] = [UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n), type, flags]
    f += [UInt8(truncatingIfNeeded: stream >> 24), UInt8(truncatingIfNeeded: stream >> 16),
          UInt8(truncatingIfNeeded: stream >> 8), UInt8(truncatingIfNeeded: stream)]
    return f + payload
}

func runH2Bench(messages: Int, rounds: Int) -> Never {
    guard let lib = NGHTTP2Library.shared, let clientEnc = HPACKEncoder(lib) else {
        print("libnghttp2.so.14 is not installed")
        exit(2)
    }
    let batch = 10
    let body = [UInt8](repeating: 97, count: 606)
    let requestFields = [(":method", "GET"), (":scheme", "https"), (":authority", "127.0.0.1:8443"), (":path", "/f.html"),
                         ("user-agent", "h2load nghttp2/1.52.0")]
    let responseFields = [(":status", "200"), ("server", "nginx/1.22.1"), ("date", "Tue, 24 Nov 2026 11:28:00 GMT"),
                          ("content-type", "text/html"), ("content-length", "606"),
                          ("last-modified", "Tue, 24 Nov 2026 11:27:59 GMT"), ("etag", "\"6563c0ef-25e\""), ("accept-ranges", "bytes")]
    // A response block as nginx writes it (ngx_http_v2_header_filter): :status indexed; server,
    // date, content-type, content-length (raw) and last-modified inserted with a static name;
    // etag and accept-ranges literal names, not indexed. Strings Huffman-coded where shorter.
    let coder = HPACKEncoder(lib)!
    func string(_ v: String) -> [UInt8] { Array(coder.encode([("x", v)], neverIndex: true)[3...]) }   // 0x10 "x", then v
    let raw606: [UInt8] = [3] + Array("606".utf8)
    var responseBlock: [UInt8] = [0x88]
    for (index, value) in [(54, responseFields[1].1), (33, responseFields[2].1), (31, responseFields[3].1)] {
        responseBlock += [0x40 | UInt8(index)] + string(value)
    }
    responseBlock += [0x40 | 28] + raw606 + [0x40 | 44] + string(responseFields[5].1)
    responseBlock += [0x00] + string("etag") + string(responseFields[6].1) + [0x00] + string("accept-ranges") + string("bytes")
    var clientPrelude = HTTP2Connection.preface + h2Frame(4, 0, 0, [0, 3, 0, 0, 0, 100]) + h2Frame(4, 1, 0, [])
    clientPrelude += h2Frame(8, 0, 0, [0, 0x10, 0, 0])
    let serverPrelude = h2Frame(4, 0, 0, [0, 3, 0, 0, 0, 128]) + h2Frame(4, 1, 0, [])
    let groups = max(1, messages / batch)
    // The segments, built once.
    var segments: [(HTTPDirection, [UInt8])] = [(.in, clientPrelude), (.out, serverPrelude)]
    for g in 0..<groups {
        var req: [UInt8] = [], resp: [UInt8] = []
        for k in 0..<batch {
            let id = UInt32(2 * (g * batch + k) + 1)
            req += h2Frame(1, 5, id, clientEnc.encode(requestFields))
            resp += h2Frame(1, 4, id, responseBlock) + h2Frame(0, 1, id, body)
        }
        segments.append((.in, req))
        segments.append((.out, resp))
    }
    func run() -> (ns: Double, exchanges: Int) {
        let c = HTTP2Connection(role: .server)
        var off: [UInt64] = [0, 0]
        var mono: UInt64 = 1, done = 0, bytes: UInt64 = 0
        let t0 = nowNs()
        for (dir, seg) in segments {
            let d = dir == .out ? 0 : 1
            seg.withUnsafeBytes { c.feed(dir, offset: off[d], bytes: $0, ioEnd: off[d] + UInt64(seg.count), mono: mono) }
            off[d] += UInt64(seg.count)
            mono += 1
            c.drainCompleted { e in done += 1; bytes &+= e.responseBodyBytes }
        }
        let t1 = nowNs()
        guard done == groups * batch, bytes == UInt64(done * body.count), c.failure == nil else {
            print("decoder result wrong: \(done) exchanges, failure \(c.failure ?? "-")")
            exit(3)
        }
        return (Double(t1 - t0) / Double(done), done)
    }
    print("# wedjat-http-bench --h2: server role, \(batch) streams a segment, request block \(clientEnc.encode(requestFields).count) B indexed,"
          + " response block \(responseBlock.count) B as nginx's + 606 B DATA; libnghttp2 \(lib.version); \(groups * batch) exchanges x \(rounds) rounds")
    var ns: [Double] = []
    for _ in 0..<max(1, rounds) { ns.append(run().ns) }
    ns.sort()
    print("decode: \(fmt(ns[ns.count / 2])) ns/exchange (median)")
    exit(0)
}
