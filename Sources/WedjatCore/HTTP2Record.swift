// What HTTP/2 adds to the records (docs/LOG_FORMAT.md): the aggregator's `http()` writer
// calls http2Fields after the fields every exchange has, and its connection writer calls
// http2ConnectionFields for a connection decoded as HTTP/2. Nothing here for HTTP/1.

extension JSONLine {
    /// `stream_id`, `pushed` (only when true), `reset_by` (only after a RST_STREAM), `grpc`
    /// (only for gRPC streams with detail) of an HTTP/2 exchange; nothing for HTTP/1.
    public func http2Fields(_ ex: HTTPExchange) {
        guard let h2 = ex.http2 else { return }
        field("stream_id", Int(h2.streamId))
        if h2.pushed { field("pushed", true) }
        if let by = h2.resetBy { field("reset_by", by) }
        guard let g = h2.grpc else { return }
        key("grpc")
        beginObject()
        field("service", g.service)
        field("method", g.method)
        field("status", g.status)
        field("status_name", g.status.flatMap { GRPCDetails.statusName($0) })
        field("message", g.message)
        field("request_messages", g.requestMessages)
        field("response_messages", g.responseMessages)
        endObject()
    }

    /// For a connection: `http_version: "HTTP/2"` once its preface was seen, and when the
    /// decoder stopped before the connection's end, `http_stopped` with the reason
    /// (HTTP2Connection.failure); `goaway` when a GOAWAY was seen.
    public func http2ConnectionFields(_ c: HTTP2Connection) {
        switch c.state {
        case .http2, .closed, .failed:
            field("http_version", "HTTP/2")
        case .notHTTP2, .detecting:
            return
        }
        if c.state == .failed { field("http_stopped", c.failure) }
        if let g = c.goaway {
            key("goaway")
            beginObject()
            field("by", g.by)
            field("code", HTTP2ErrorCode.name(g.code))
            field("last_stream_id", Int(g.lastStreamId))
            endObject()
        }
    }
}

extension HTTP2Connection {
    /// The connection record's `http_none` for a connection with no exchange: "http2" when
    /// it is HTTP/2 that could not be decoded (libnghttp2 missing), "desync" / "missed_start"
    /// / "parse" when decoding stopped first, nil when the HTTP/1 reasons apply (not HTTP/2).
    public var noneReason: String? {
        switch state {
        case .notHTTP2:
            switch failure {
            case "no_nghttp2"?: return "http2"
            case "missed_start"?: return "missed_start"
            default: return nil
            }
        case .failed:
            switch failure {
            case "desync"?, "missed_start"?: return failure
            default: return "parse"
            }
        case .closed, .http2:
            return "none"
        case .detecting:
            return "incomplete"
        }
    }
}
