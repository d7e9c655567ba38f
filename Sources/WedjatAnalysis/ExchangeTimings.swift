// The one definition of an HTTP exchange's durations, shared by every view (text and JSON
// report, HTML waterfall, HAR, trace, OTLP): docs/REPORT_JSON.md, "Durations".
//
//   total    = request start → response end (the record's `duration_us`; cut short: → the
//              record's time). What percentiles, spans, slices and SLOWEST call the exchange's time.
//   set-up   = what the first exchange of a connection waited for before its request: the
//              connection's DNS lookup, connect, TLS, and the gaps between them (`blocked`).
//   elapsed  = set-up + total: from the first set-up phase to the response's end (HAR's `time`,
//              curl's `time_total`). A reused connection's exchange has no set-up: elapsed = total.
// The phases always add up: blocked + dns + connect (TLS inside, as HAR counts it) + send +
// wait + receive = elapsed; send + wait + receive = total.

/// A DNS lookup's start and end, as a connection's set-up needs it.
public struct LookupSpan: Sendable, Equatable {
    public var startTs: Int64
    public var endTs: Int64
    public var durationUs: Int64
}

/// The latest successful lookup of each name in the log being read, to find a connection's own
/// lookup (the one its `dns_us` came from: ended at most 1 s before the connect, same duration).
/// Bounded: a log that looks up more than `limit` distinct names starts over.
struct LookupTracker: Sendable {
    static let limit = 4096
    private var byName: [String: LookupSpan] = [:]
    private var file = -1

    mutating func add(_ d: DNSRecord, file: Int) {
        guard let name = d.name, d.error == nil, let duration = d.durationUs else { return }
        if file != self.file || byName.count >= Self.limit { byName.removeAll(keepingCapacity: true); self.file = file }
        let start = d.startTs ?? d.ts - duration
        byName[name] = LookupSpan(startTs: start, endTs: start + duration, durationUs: duration)
    }

    /// The connection's own lookup, when its `dns_us` says it had one and the lookup was seen.
    func lookup(of c: ConnectionRecord, file: Int) -> LookupSpan? {
        guard file == self.file, c.role == "client", let host = c.host, let dnsUs = c.dnsUs, let open = c.openTs,
              let l = byName[host], l.durationUs == dnsUs, l.endTs <= open + 1, open - l.endTs <= 1_000_000 else { return nil }
        return l
    }
}

/// The phases of one exchange, in microseconds; nil: does not apply (HAR's -1).
public struct ExchangeTimings: Equatable, Sendable {
    /// Where `elapsed` starts: the lookup's start, else the connect's (a server: the accept), for
    /// a connection's first exchange; the request's start otherwise.
    public var startTs: Int64
    public var requestStartTs: Int64
    /// Gaps in the set-up: lookup end → connect, and connection ready → request start (a client's
    /// own time; for a server, waiting for the client's request).
    public var blocked: Int64?
    public var dns: Int64?
    /// connect + TLS (HAR counts TLS inside connect); nil when the connect's end was not seen.
    public var connect: Int64?
    public var ssl: Int64?
    public var send: Int64
    public var wait: Int64
    public var receive: Int64

    /// Request start → response end.
    public var total: Int64 { send + wait + receive }
    /// What the connection's first exchange waited for before its request; nil on a reused one.
    public var setup: Int64? { blocked.map { $0 + (dns ?? 0) + (connect ?? 0) } }
    /// Set-up + total: HAR's `time`.
    public var elapsed: Int64 { (setup ?? 0) + total }
    public var endTs: Int64 { requestStartTs + total }

    /// `connection`: the exchange's connection record, for its set-up (only the first exchange
    /// of a connection, `request_index` 0, has one); `lookup`: that connection's own DNS lookup.
    public init?(_ h: HTTPRecord, connection c: ConnectionRecord?, lookup: LookupSpan?) {
        guard let requestStart = h.requestStartTs else { return nil }
        requestStartTs = requestStart
        let requestEnd = max(requestStart, h.requestEndTs ?? requestStart)
        // A response that began before the request ended (an early answer, 100 Continue)
        // ends the sending: the phases never overlap.
        let sendEnd = min(requestEnd, h.responseStartTs ?? requestEnd)
        send = sendEnd - requestStart
        if let responseStart = h.responseStartTs {
            wait = max(0, responseStart - sendEnd)
            receive = max(0, (h.responseEndTs ?? h.ts) - max(responseStart, sendEnd))
        } else {
            // No response: waited until the exchange was cut short (the record's time).
            wait = max(0, h.ts - sendEnd)
            receive = 0
        }
        startTs = requestStart
        guard (h.requestIndex ?? (h.reused == true ? 1 : 0)) == 0, let c, let open = c.openTs, open <= requestStart else { return }

        var start = open
        var blockedUs: Int64 = 0
        // The connection's own lookup: its `dns_us` (logs before it: the lookup the caller matched).
        if c.role != "server", let dnsUs = c.dnsUs ?? lookup?.durationUs, dnsUs >= 0 {
            dns = dnsUs
            if let lookup, lookup.endTs <= open {
                start = lookup.startTs
                blockedUs += open - lookup.endTs
            } else {
                start = open - dnsUs
            }
        }
        var ready = open
        if c.role == "server" {
            // A server's set-up is its TLS handshake, from the accept.
            if let tls = c.tls, tls.endTs != nil || tls.handshakeUs != nil, let tlsUs = tls.phaseUs ?? tls.handshakeUs, tlsUs >= 0 {
                ssl = tlsUs
                ready += tlsUs
            }
            connect = ready - open
        } else if let connectUs = c.connectUs, connectUs >= 0 {
            ready = open + connectUs
            // `phase_us` is connect end → handshake end; logs before it: the same from the times.
            if let tls = c.tls, tls.endTs != nil || tls.handshakeUs != nil,
               let tlsUs = tls.phaseUs ?? tls.endTs.map({ $0 - ready }), tlsUs >= 0 {
                ssl = tlsUs
                ready += tlsUs
            }
            connect = ready - open
        }
        if ready > requestStart {
            // A set-up that ended after the request began (TLS bytes counted as the request's):
            // cut at the request so the phases still add up.
            connect = connect.map { max(0, $0 - (ready - requestStart)) }
            ssl = ssl.map { min($0, connect ?? 0) }
            ready = requestStart
        }
        blockedUs += max(0, requestStart - ready)
        blocked = blockedUs
        startTs = start
    }
}
