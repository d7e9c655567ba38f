// Cost of WedjatCore's HTTP/1.x parser per message (one request + its response), next to
// the cost of one loopback round trip of a ~300-byte message measured in the same run.
//   wedjat-http-bench [--messages N] [--rounds R] [--max-ns NS]
// Exits 1 when the realistic-segment cost exceeds --max-ns (default 1000).
import WedjatCore
#if canImport(Glibc)
import Glibc
#endif

func nowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

var messages = 200_000
var rounds = 5
var maxNs = 1000.0
var parseOnly = false   // for profiling: no byte-at-a-time run, no round trips
var h2 = false          // the HTTP/2 decoder instead (H2Bench.swift)
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--messages": messages = Int(args.popFirst() ?? "") ?? messages
    case "--rounds": rounds = Int(args.popFirst() ?? "") ?? rounds
    case "--max-ns": maxNs = Double(args.popFirst() ?? "") ?? maxNs
    case "--parse-only": parseOnly = true
    case "--h2": h2 = true
    default:
        print("usage: wedjat-http-bench [--messages N] [--rounds R] [--max-ns NS] [--parse-only] [--h2]")
        exit(2)
    }
}
if h2 { runH2Bench(messages: messages, rounds: rounds) }

// A typical browser-ish request (~300 header bytes) and a JSON API response (~250 header
// bytes, 64-byte body).
let request = Array((
    "GET /api/v2/orders/12345/items?expand=product&page=2 HTTP/1.1\r\n" +
    "Host: shop.example.com\r\n" +
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
    "Accept: application/json\r\n" +
    "Accept-Encoding: gzip, deflate, br\r\n" +
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc\r\n" +
    "Cookie: session=0123456789abcdef\r\n\r\n").utf8)
let body = Array(String(repeating: "{\"id\":12345,\"ok\":true}", count: 3).prefix(64).utf8)
let responseHead = Array((
    "HTTP/1.1 200 OK\r\n" +
    "Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n" +
    "Server: nginx/1.24.0\r\n" +
    "Content-Type: application/json; charset=utf-8\r\n" +
    "Content-Length: \(body.count)\r\n" +
    "Cache-Control: private, max-age=0, no-cache\r\n" +
    "X-Request-Id: 6f1c2a9e-1b2c-4d5e-8f90-123456789abc\r\n\r\n").utf8)
let response = responseHead + body

/// ns per message: `count` exchanges on one keep-alive connection, each direction fed in
/// segments of `step` bytes (0: one segment per message). Verifies the result.
func parseRun(count: Int, step: Int) -> Double {
    let s = HTTP1Stream(role: .client)
    var outOff: UInt64 = 0, inOff: UInt64 = 0, mono: UInt64 = 1
    var done = 0, bytesChecked: UInt64 = 0
    func feed(_ dir: HTTPDirection, _ msg: [UInt8], _ off: inout UInt64) {
        msg.withUnsafeBytes { raw in
            if step == 0 {
                s.feed(dir, offset: off, bytes: raw, ioEnd: off + UInt64(raw.count), mono: mono)
            } else {
                var at = 0
                while at < raw.count {
                    let n = min(step, raw.count - at)
                    s.feed(dir, offset: off + UInt64(at), bytes: UnsafeRawBufferPointer(rebasing: raw[at..<at + n]),
                           ioEnd: off + UInt64(at + n), mono: mono)
                    at += n
                }
            }
        }
        off += UInt64(msg.count)
        mono += 1
    }
    let t0 = nowNs()
    for i in 0..<count {
        feed(.out, request, &outOff)
        feed(.in, response, &inOff)
        if i & 15 == 15 || i == count - 1 {
            for e in s.takeCompleted() {
                done += 1
                bytesChecked &+= e.responseBodyBytes
            }
        }
    }
    let t1 = nowNs()
    guard done == count, bytesChecked == UInt64(count * body.count), s.state == .http else {
        print("parser result wrong: \(done)/\(count) exchanges, state \(s.state)")
        exit(3)
    }
    return Double(t1 - t0) / Double(count)
}

func readFull(_ fd: Int32, _ p: UnsafeMutableRawPointer, _ n: Int) -> Bool {
    var got = 0
    while got < n {
        let r = read(fd, p + got, n - got)
        if r <= 0 { if r < 0 && errno == EINTR { continue }; return false }
        got += r
    }
    return true
}

func writeFull(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Bool {
    var put = 0
    while put < n {
        let r = write(fd, p + put, n - put)
        if r <= 0 { if r < 0 && errno == EINTR { continue }; return false }
        put += r
    }
    return true
}

/// An echo peer in a child process; ns per round trip (write + read each way) of `size` bytes.
func roundTrip(parentFd: Int32, childFd: Int32, size: Int, count: Int) -> Double {
    let pid = fork()
    if pid == 0 {
        close(parentFd)
        let buf = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        while readFull(childFd, buf, size), writeFull(childFd, buf, size) {}
        _exit(0)
    }
    close(childFd)
    let buf = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
    memset(buf, 65, size)
    for _ in 0..<1000 { _ = writeFull(parentFd, buf, size); _ = readFull(parentFd, buf, size) }   // warm up
    let t0 = nowNs()
    for _ in 0..<count {
        guard writeFull(parentFd, buf, size), readFull(parentFd, buf, size) else { print("round trip failed"); exit(3) }
    }
    let t1 = nowNs()
    close(parentFd)
    var st: Int32 = 0
    waitpid(pid, &st, 0)
    return Double(t1 - t0) / Double(count)
}

func unixRoundTrip(size: Int, count: Int) -> Double {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { print("socketpair failed"); exit(3) }
    return roundTrip(parentFd: fds[0], childFd: fds[1], size: size, count: count)
}

func tcpRoundTrip(size: Int, count: Int) -> Double {
    let ls = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { ap in
        ap.withMemoryRebound(to: sockaddr.self, capacity: 1) { sp in
            bind(ls, sp, len) == 0 && listen(ls, 1) == 0 && getsockname(ls, sp, &len) == 0
        }
    }
    guard ok else { print("tcp listen failed"); exit(3) }
    let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    let connected = withUnsafePointer(to: &addr) { ap in
        ap.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, len) == 0 }
    }
    let a = accept(ls, nil, nil)
    guard connected, a >= 0 else { print("tcp connect failed"); exit(3) }
    close(ls)
    var one: Int32 = 1
    setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(a, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    return roundTrip(parentFd: c, childFd: a, size: size, count: count)
}

func median(_ v: [Double]) -> Double {
    let s = v.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

func fmt(_ v: Double) -> String {
    let r = (v * 10).rounded() / 10
    return "\(r)"
}

print("# wedjat-http-bench: request \(request.count) B (headers), response \(responseHead.count) B headers + \(body.count) B body; \(messages) messages x \(rounds) rounds, median")
_ = parseRun(count: messages / 10, step: 0)            // warm up
var seg: [Double] = [], split: [Double] = [], byte: [Double] = [], unix: [Double] = [], tcp: [Double] = []
let byteMessages = max(1, messages / 20)
for _ in 0..<rounds {
    seg.append(parseRun(count: messages, step: 0))
    if parseOnly { continue }
    split.append(parseRun(count: messages, step: 128))
    byte.append(parseRun(count: byteMessages, step: 1))
    unix.append(unixRoundTrip(size: 300, count: 20_000))
    tcp.append(tcpRoundTrip(size: 300, count: 20_000))
}
if parseOnly {
    print("parse, one segment per message: \(fmt(median(seg))) ns/message")
    exit(0)
}
let segNs = median(seg), splitNs = median(split), byteNs = median(byte)
let unixNs = median(unix), tcpNs = median(tcp)
print("parse, one segment per message:           \(fmt(segNs)) ns/message")
print("parse, 128-byte segments:                 \(fmt(splitNs)) ns/message")
print("parse, byte at a time (worst case):       \(fmt(byteNs)) ns/message (\(byteMessages) messages)")
print("round trip of 300 B, AF_UNIX socketpair:  \(fmt(unixNs)) ns")
print("round trip of 300 B, TCP 127.0.0.1:       \(fmt(tcpNs)) ns")
print("ratio parse/round trip: \(fmt(segNs / unixNs * 100))% of AF_UNIX, \(fmt(segNs / tcpNs * 100))% of TCP loopback")
if segNs > maxNs {
    print("FAIL: \(fmt(segNs)) ns/message > \(fmt(maxNs))")
    exit(1)
}
print("OK: \(fmt(segNs)) ns/message <= \(fmt(maxNs))")
