import Foundation
#if canImport(Glibc)
import Glibc
#endif
import WedjatAnalysis

/// A kept-alive HTTP/1.1 connection for `http://` collectors: POSTs one request at a time and
/// reads its answer (Content-Length, chunked, or until close). `wedjat ship` sends a request
/// or two a second for as long as it runs; a new URLSession per request costs milliseconds of
/// CPU each on Linux, this a few microseconds. (`https://` goes through OTLPSender.)
public final class HTTPConnection {
    public let host: String
    public let port: Int
    /// The path prefix of the endpoint (`/otlp` in `http://host:4318/otlp`), without a trailing slash.
    public let basePath: String
    public var timeoutSeconds: Double
    private var fd: Int32 = -1
    /// Requests answered on the current connection (a reused one may have been closed by the
    /// server meanwhile).
    private var answered = 0

    /// nil unless `endpoint` is an `http://host[:port][/path]` URL.
    public init?(endpoint: String, timeoutSeconds: Double) {
        guard let url = URL(string: endpoint), url.scheme?.lowercased() == "http", let host = url.host, !host.isEmpty else { return nil }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = url.port ?? 80
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
        self.timeoutSeconds = timeoutSeconds
    }

    deinit { disconnect() }

    public func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
        answered = 0
    }

    /// POSTs `body` to `basePath/v1/<signal>`. Throws OTLPSender.Failure: `status` set for an
    /// answer outside 2xx, nil when there was none (refused, timed out, cut).
    public func post(signal: String, body: Data, contentType: String, contentEncoding: String?) throws -> OTLPSender.Answer {
        let path = basePath + "/v1/" + signal
        let target = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)"
        var head = "POST \(path) HTTP/1.1\r\nHost: \(host.contains(":") ? "[\(host)]" : host):\(port)\r\n"
            + "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nUser-Agent: wedjat-ship\r\n"
        if let contentEncoding { head += "Content-Encoding: \(contentEncoding)\r\n" }
        head += "\r\n"
        let request = Data(head.utf8) + body
        // A kept-alive connection the server closed while idle fails before any answer: that
        // request never reached it, so it is sent once more on a new connection.
        for attempt in 0 ..< 2 {
            let reused = fd >= 0 && answered > 0
            do {
                if fd < 0 { try connect(target) }
                try send(request, target)
                let (status, answerBody, keepAlive) = try readAnswer(target)
                answered += 1
                if !keepAlive { disconnect() }
                guard (200 ..< 300).contains(status) else {
                    let text = String(decoding: answerBody.prefix(500), as: UTF8.self)
                    throw OTLPSender.Failure(description: "\(target): HTTP \(status)" + (text.isEmpty ? "" : ": \(text)"), status: status)
                }
                return OTLPSender.Answer(url: target, status: status, partialSuccess: nil, body: answerBody)
            } catch let failure as Cut where reused && attempt == 0 && !failure.answerStarted {
                disconnect()
                continue
            } catch let failure as Cut {
                disconnect()
                throw OTLPSender.Failure(description: failure.description)
            } catch {
                if (error as? OTLPSender.Failure)?.status == nil { disconnect() }
                throw error
            }
        }
        throw OTLPSender.Failure(description: "\(target): the connection was closed twice before an answer")
    }

    /// The connection broke: before the answer began, or during it.
    struct Cut: Error, CustomStringConvertible {
        var description: String
        var answerStarted: Bool
    }

    private var deadline: Double = 0
    private func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Waits for `events` on the socket until the request's deadline.
    private func wait(_ events: Int16, _ target: String, answerStarted: Bool) throws {
        while true {
            let left = deadline - now()
            guard left > 0 else { throw Cut(description: "\(target): no answer within \(Int(timeoutSeconds)) s", answerStarted: true) }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&p, 1, Int32(min(left * 1000 + 1, 60_000)))
            if n > 0 { return }
            if n < 0 && errno != EINTR { throw Cut(description: "\(target): poll: \(String(cString: strerror(errno)))", answerStarted: answerStarted) }
        }
    }

    private func connect(_ target: String) throws {
        deadline = now() + timeoutSeconds
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw OTLPSender.Failure(description: "\(target): cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            ai = a.pointee.ai_next
            let s = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), a.pointee.ai_protocol)
            guard s >= 0 else { lastError = String(cString: strerror(errno)); continue }
            fd = s
            if Glibc.connect(s, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                do {
                    try wait(Int16(POLLOUT), target, answerStarted: false)
                    var err: Int32 = 0
                    var len = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
                    if err == 0 {
                        var one: Int32 = 1
                        setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                        answered = 0
                        return
                    }
                    lastError = err == ECONNREFUSED ? "connection refused (is a collector listening?)" : String(cString: strerror(err))
                } catch {
                    lastError = "connect timed out"
                }
            } else {
                lastError = errno == ECONNREFUSED ? "connection refused (is a collector listening?)" : String(cString: strerror(errno))
            }
            close(s)
            fd = -1
        }
        throw OTLPSender.Failure(description: "\(target): \(lastError)")
    }

    private func send(_ request: Data, _ target: String) throws {
        deadline = now() + timeoutSeconds
        var sent = 0
        try request.withUnsafeBytes { raw in
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n > 0 { sent += n; continue }
                if n < 0 && (errno == EAGAIN || errno == EINTR) { try wait(Int16(POLLOUT), target, answerStarted: false); continue }
                throw Cut(description: "\(target): send: \(String(cString: strerror(errno)))", answerStarted: false)
            }
        }
    }

    /// Status, body, and whether the connection may be used again.
    private func readAnswer(_ target: String) throws -> (Int, Data, Bool) {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        /// Reads more; false at the end of the stream.
        func more() throws -> Bool {
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n > 0 { buffer += chunk[0 ..< n]; return true }
                if n == 0 { return false }
                if errno == EAGAIN || errno == EINTR { try wait(Int16(POLLIN), target, answerStarted: !buffer.isEmpty); continue }
                throw Cut(description: "\(target): \(String(cString: strerror(errno)))", answerStarted: !buffer.isEmpty)
            }
        }
        let headerEnd: Int
        while true {
            if let r = find(buffer, Array("\r\n\r\n".utf8)) { headerEnd = r; break }
            guard buffer.count < 64 * 1024 else { throw Cut(description: "\(target): answer headers over 64 KiB", answerStarted: true) }
            guard try more() else {
                throw Cut(description: "\(target): the connection was closed before an answer", answerStarted: !buffer.isEmpty)
            }
        }
        let head = String(decoding: buffer[0 ..< headerEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw Cut(description: "\(target): not an HTTP answer", answerStarted: true)
        }
        var headers: [String: String] = [:]
        for l in lines {
            guard let c = l.firstIndex(of: ":") else { continue }
            headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)
        }
        var keepAlive = statusLine[0] == "HTTP/1.1" ? headers["connection"]?.lowercased() != "close"
                                                     : headers["connection"]?.lowercased() == "keep-alive"
        buffer.removeFirst(headerEnd + 4)
        var body = [UInt8]()
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            while true {
                while find(buffer, [13, 10]) == nil { guard try more() else { throw Cut(description: "\(target): answer cut", answerStarted: true) } }
                let eol = find(buffer, [13, 10])!
                let sizeText = String(decoding: buffer[0 ..< eol], as: UTF8.self).split(separator: ";")[0]
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                    throw Cut(description: "\(target): bad chunk size", answerStarted: true)
                }
                buffer.removeFirst(eol + 2)
                if size == 0 {
                    while find(buffer, [13, 10]) == nil { guard try more() else { break } }
                    break
                }
                while buffer.count < size + 2 { guard try more() else { throw Cut(description: "\(target): answer cut", answerStarted: true) } }
                body += buffer[0 ..< size]
                buffer.removeFirst(size + 2)
            }
        } else if let length = headers["content-length"].flatMap({ Int($0) }) {
            while buffer.count < length { guard try more() else { throw Cut(description: "\(target): answer cut", answerStarted: true) } }
            body = Array(buffer.prefix(length))
        } else if status == 204 || status == 304 {
            body = []
        } else {
            while try more() {}
            body = buffer
            keepAlive = false
        }
        return (status, Data(body), keepAlive)
    }

    private func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0 ... haystack.count - needle.count where haystack[i] == needle[0] {
            if haystack[i ..< i + needle.count].elementsEqual(needle) { return i }
        }
        return nil
    }
}
