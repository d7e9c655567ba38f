// What an HTTP/2 stream adds to its HTTPExchange (HTTPExchange.http2). Apart from the
// decoder (HTTP2.swift) so that HTTPExchange needs nothing else.

/// What an HTTP/2 stream adds to its exchange.
public struct HTTP2Details: Sendable, Equatable {
    public var streamId: UInt32
    /// Promised by the server (PUSH_PROMISE): the request is the promise's.
    public var pushed = false
    /// Which side sent the RST_STREAM that ended the stream ("client" or "server").
    public var resetBy: String?
    /// gRPC (request or response `content-type: application/grpc*`).
    public var grpc: GRPCDetails?

    public init(streamId: UInt32) { self.streamId = streamId }
}

public struct GRPCDetails: Sendable, Equatable {
    /// From the path "/package.Service/Method"; nil when the path is not of that form.
    public var service: String?
    public var method: String?
    /// grpc-status of the trailers (or of a trailers-only response); nil if none was seen.
    public var status: Int?
    /// grpc-message, "REDACTED" when non-empty and queries are redacted (WEDJAT_REDACT).
    public var message: String?
    /// Length-prefixed messages the client / server sent; nil when a prefix was not seen.
    public var requestMessages: Int?
    public var responseMessages: Int?

    public init() {}

    /// "OK", "CANCELLED", ... for the 17 codes of the gRPC spec, else nil.
    public static func statusName(_ code: Int) -> String? {
        let names = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
                     "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                     "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
                     "UNAUTHENTICATED"]
        return code >= 0 && code < names.count ? names[code] : nil
    }
}
