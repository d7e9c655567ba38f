import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// OTLP/HTTP with JSON bodies: POSTs an export request to `endpoint/v1/traces` or
/// `endpoint/v1/metrics` (as OTEL_EXPORTER_OTLP_ENDPOINT is used) and reports the answer.
public struct OTLPSender {
    public var endpoint: String
    public var timeoutSeconds: Double

    public init(endpoint: String, timeoutSeconds: Double = 10) {
        self.endpoint = endpoint
        self.timeoutSeconds = timeoutSeconds
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        /// The collector's HTTP status, when it answered (outside 2xx); nil when it did not.
        public var status: Int? = nil

        public init(description: String, status: Int? = nil) { self.description = description; self.status = status }
    }

    /// What the collector said: its HTTP status, and a partial success if it reported one.
    public struct Answer: Sendable {
        public var url: String
        public var status: Int
        /// `partialSuccess.errorMessage` and the rejected count, when the collector refused part.
        public var partialSuccess: String?
        /// The answer's body (an OTLP export response).
        public var body: Data = Data()

        public init(url: String, status: Int, partialSuccess: String? = nil, body: Data = Data()) {
            self.url = url; self.status = status; self.partialSuccess = partialSuccess; self.body = body
        }
    }

    /// `signal` is `traces` or `metrics`. Throws on a connection failure, a timeout or a status
    /// outside 2xx, with the reason.
    /// `endpoint/v1/signal`.
    public func url(for signal: String) -> String {
        (endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint) + "/v1/" + signal
    }

    public func send(_ body: ExportText, signal: String) throws(Failure) -> Answer {
        var payload = Data()
        for chunk in body.chunks { payload.append(contentsOf: chunk) }
        return try send(payload, signal: signal, contentType: "application/json")
    }

    /// POSTs `payload` as it is (`contentEncoding`: `gzip` when it is compressed).
    public func send(_ payload: Data, signal: String, contentType: String, contentEncoding: String? = nil) throws(Failure) -> Answer {
        let target = url(for: signal)
        guard let url = URL(string: target), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil else {
            throw Failure(description: "not an http(s) URL: \(endpoint)")
        }
        var request = URLRequest(url: url, timeoutInterval: timeoutSeconds)
        request.httpMethod = "POST"
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        if let contentEncoding { request.setValue(contentEncoding, forHTTPHeaderField: "Content-Encoding") }
        request.httpBody = payload

        let config = URLSessionConfiguration.ephemeral
        config.timeoutIntervalForRequest = timeoutSeconds
        config.timeoutIntervalForResource = timeoutSeconds
        config.connectionProxyDictionary = [:]
        let session = URLSession(configuration: config)
        defer { session.finishTasksAndInvalidate() }

        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        session.dataTask(with: request) { data, response, error in
            result.set(data: data, response: response, error: error)
            done.signal()
        }.resume()
        // The session's own timeouts end the task; this only guards against one that never calls back.
        guard done.wait(timeout: .now() + timeoutSeconds + 5) == .success else {
            throw Failure(description: "\(target): no answer within \(Int(timeoutSeconds)) s")
        }
        let (data, response, error) = result.get()
        if let error {
            throw Failure(description: "\(target): \(Self.reason(error))")
        }
        guard let http = response as? HTTPURLResponse else {
            throw Failure(description: "\(target): not an HTTP response")
        }
        let text = data.map { String(decoding: $0.prefix(500), as: UTF8.self) } ?? ""
        guard (200 ..< 300).contains(http.statusCode) else {
            throw Failure(description: "\(target): HTTP \(http.statusCode)" + (text.isEmpty ? "" : ": \(text)"),
                          status: http.statusCode)
        }
        return Answer(url: target, status: http.statusCode, partialSuccess: data.flatMap(Self.partialSuccess), body: data ?? Data())
    }

    private static func reason(_ error: Error) -> String {
        let e = error as NSError
        switch (e.domain, e.code) {
        case (NSURLErrorDomain, NSURLErrorCannotConnectToHost): return "connection refused (is a collector listening?)"
        case (NSURLErrorDomain, NSURLErrorTimedOut): return "timed out"
        case (NSURLErrorDomain, NSURLErrorCannotFindHost): return "unknown host"
        default: return e.localizedDescription
        }
    }

    /// `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"..."}}` (or rejectedDataPoints).
    private static func partialSuccess(_ data: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let partial = object["partialSuccess"] as? [String: Any], !partial.isEmpty else { return nil }
        let rejected = partial["rejectedSpans"] ?? partial["rejectedDataPoints"] ?? 0
        let message = partial["errorMessage"] as? String ?? ""
        if "\(rejected)" == "0", message.isEmpty { return nil }
        return "\(rejected) rejected" + (message.isEmpty ? "" : ": \(message)")
    }

    /// The completion handler runs on the session's queue; this hands its values over.
    private final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var data: Data?
        private var response: URLResponse?
        private var error: Error?

        func set(data: Data?, response: URLResponse?, error: Error?) {
            lock.lock(); defer { lock.unlock() }
            self.data = data; self.response = response; self.error = error
        }

        func get() -> (Data?, URLResponse?, Error?) {
            lock.lock(); defer { lock.unlock() }
            return (data, response, error)
        }
    }
}
