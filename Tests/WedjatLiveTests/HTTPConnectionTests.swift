import XCTest
import WedjatAnalysis
@testable import WedjatLive

/// The kept-alive client against a scripted server on 127.0.0.1: one answer per request, each
/// written as the test says (Content-Length, chunked, closing the connection after).
final class HTTPConnectionTests: XCTestCase {
    /// Accepts connections on a thread; for each request read, sends the next scripted answer
    /// (`nil`: close the connection without answering). Records the requests' first lines.
    final class Server: @unchecked Sendable {
        let listener: Int32
        let port: Int
        private let lock = NSLock()
        private var answers: [String?]
        private(set) var requestLines: [String] = []
        private(set) var connections = 0

        init(answers: [String?]) {
            self.answers = answers
            let l = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(l, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            listen(l, 8)
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(l, $0, &len) } }
            listener = l
            port = Int(UInt16(bigEndian: addr.sin_port))
            Thread { self.serve() }.start()
        }

        private func next() -> String?? {
            lock.lock(); defer { lock.unlock() }
            return answers.isEmpty ? .none : .some(answers.removeFirst())
        }

        private func serve() {
            while true {
                let c = accept(listener, nil, nil)
                guard c >= 0 else { return }
                lock.lock(); connections += 1; lock.unlock()
                var buffer = [UInt8]()
                var chunk = [UInt8](repeating: 0, count: 4096)
                connection: while true {
                    // One request: headers, then Content-Length bytes.
                    while true {
                        if let end = buffer.indices.dropLast(3).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) {
                            let head = String(decoding: buffer[0 ..< end], as: UTF8.self)
                            let length = head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                            while buffer.count < end + 4 + length {
                                let n = recv(c, &chunk, chunk.count, 0)
                                if n <= 0 { break connection }
                                buffer += chunk[0 ..< n]
                            }
                            lock.lock(); requestLines.append(head.components(separatedBy: "\r\n")[0]); lock.unlock()
                            buffer.removeFirst(end + 4 + length)
                            break
                        }
                        let n = recv(c, &chunk, chunk.count, 0)
                        if n <= 0 { break connection }
                        buffer += chunk[0 ..< n]
                    }
                    guard case .some(let answer) = next(), let text = answer else { break connection }
                    _ = text.withCString { send(c, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                    if text.contains("Connection: close") { break connection }
                }
                close(c)
            }
        }

        func stop() { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
    }

    func testKeptAliveChunkedAndStatuses() throws {
        let server = Server(answers: [
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 7\r\n\r\nbad pb!",
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ])
        defer { server.stop() }
        let c = try XCTUnwrap(HTTPConnection(endpoint: "http://127.0.0.1:\(server.port)/otlp/", timeoutSeconds: 5))
        XCTAssertEqual(String(decoding: try c.post(signal: "traces", body: Data("x".utf8), contentType: "application/x-protobuf", contentEncoding: "gzip").body, as: UTF8.self), "ok")
        XCTAssertEqual(String(decoding: try c.post(signal: "metrics", body: Data(), contentType: "a/b", contentEncoding: nil).body, as: UTF8.self), "abcde")
        XCTAssertThrowsError(try c.post(signal: "traces", body: Data("y".utf8), contentType: "a/b", contentEncoding: nil)) { error in
            XCTAssertEqual((error as? OTLPSender.Failure)?.status, 400)
            XCTAssertTrue("\(error)".contains("HTTP 400: bad pb!"), "\(error)")
        }
        XCTAssertEqual(try c.post(signal: "traces", body: Data(), contentType: "a/b", contentEncoding: nil).status, 200)
        XCTAssertEqual(server.requestLines, ["POST /otlp/v1/traces HTTP/1.1", "POST /otlp/v1/metrics HTTP/1.1",
                                             "POST /otlp/v1/traces HTTP/1.1", "POST /otlp/v1/traces HTTP/1.1"])
        XCTAssertEqual(server.connections, 1, "one connection for all four")
    }

    func testAnIdleConnectionClosedByTheServerIsReplacedOnce() throws {
        // The first connection answers once, then is closed without an answer to the second
        // request (a server's idle timeout): the request goes again on a new connection.
        let server = Server(answers: ["HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", nil, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2"])
        defer { server.stop() }
        let c = try XCTUnwrap(HTTPConnection(endpoint: "http://127.0.0.1:\(server.port)", timeoutSeconds: 5))
        XCTAssertEqual(try c.post(signal: "traces", body: Data(), contentType: "a/b", contentEncoding: nil).status, 200)
        XCTAssertEqual(String(decoding: try c.post(signal: "traces", body: Data(), contentType: "a/b", contentEncoding: nil).body, as: UTF8.self), "2")
        XCTAssertEqual(server.connections, 2)
    }

    func testRefusedConnectionIsAFailureWithoutStatus() throws {
        let server = Server(answers: [])
        let port = server.port
        server.stop()
        let c = try XCTUnwrap(HTTPConnection(endpoint: "http://127.0.0.1:\(port)", timeoutSeconds: 2))
        XCTAssertThrowsError(try c.post(signal: "traces", body: Data(), contentType: "a/b", contentEncoding: nil)) { error in
            XCTAssertNil((error as? OTLPSender.Failure)?.status)
            XCTAssertTrue("\(error)".contains("connection refused"), "\(error)")
        }
        XCTAssertNil(HTTPConnection(endpoint: "https://127.0.0.1:1", timeoutSeconds: 1), "https goes through URLSession")
    }
}
