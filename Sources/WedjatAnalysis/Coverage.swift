import Foundation

// How much of the traffic wedjat decoded, and why the rest was not (docs/REPORT_JSON.md,
// `coverage`), from the connection records' `http_requests`, `http_none` and `http_undecoded`
// (docs/LOG_FORMAT.md); and the lookups that failed, by name and error (`dns_failures`).

/// The connections that carried bytes, sorted into: HTTP decoded (wholly or partly), HTTP not
/// decoded (by reason), other protocols (TCP that is not HTTP, UDP), and not parsed (HTTP
/// parsing off, or a log older than `http_requests`). Bounded: counts, and a few examples per group.
public struct CoverageStats: Sendable {
    public struct Group: Sendable, Equatable {
        /// Connections wholly in the group; for a reason of `undecoded`, also `partly`: decoded
        /// connections whose end was not (the bytes after their exchanges).
        public var connections = 0
        public var partly = 0
        public var bytesIn: Int64 = 0
        public var bytesOut: Int64 = 0
        /// Where the first connections went: `api.local:443`, `127.0.0.1:8443`, `← 127.0.0.1:8080`.
        public var examples: [String] = []
        public var bytes: Int64 { bytesIn + bytesOut }

        /// Connections whose destination was looked at for `examples`.
        var tried = 0

        /// The example is made only while the group has room for one, from its first 64
        /// connections (most connections never need one: no string is made for them).
        mutating func add(bytesIn: Int64, bytesOut: Int64, of c: ConnectionRecord, whole: Bool) {
            if whole { connections += 1 } else { partly += 1 }
            self.bytesIn += bytesIn
            self.bytesOut += bytesOut
            guard examples.count < CoverageStats.examples, tried < 64 else { return }
            tried += 1
            if let e = CoverageStats.example(c), !examples.contains(e) { examples.append(e) }
        }
    }

    static let examples = 3
    /// Reasons (and other kinds) kept apart; a writer's unknown reasons past them share `other`.
    static let maxGroups = 32

    /// Connections that carried a byte (a forked child's copy of its parent's connection adds its
    /// bytes, not a connection).
    public private(set) var connections = 0
    public private(set) var bytes: Int64 = 0
    /// HTTP connections with a decoded exchange, and their bytes that were decoded.
    public private(set) var decoded = 0
    public private(set) var decodedBytesIn: Int64 = 0
    public private(set) var decodedBytesOut: Int64 = 0
    public var decodedBytes: Int64 { decodedBytesIn + decodedBytesOut }
    /// HTTP-eligible connections whose bytes (or the end of them) were not decoded, by reason.
    public private(set) var undecoded: [String: Group] = [:]
    /// Not HTTP by nature: `tcp` (`http_none: not_http`: Redis, PostgreSQL, ...), `unix`, `udp`.
    public private(set) var otherProtocols: [String: Group] = [:]
    /// TCP or unix connections without `http_requests`: HTTP parsing off, or an older log.
    public private(set) var notParsed = Group()
    /// Connections with an error, no exchange and no reason for their bytes (a TLS handshake
    /// that failed): connection errors, not traffic left undecoded.
    public private(set) var failed = Group()

    public init() {}

    public mutating func add(_ c: ConnectionRecord) {
        let total = c.bytesIn + c.bytesOut
        guard total > 0 else { return }
        let whole = c.inheritedFrom == nil
        if whole { connections += 1 }
        bytes += total
        let transport = c.transport ?? "tcp"
        if transport == "udp" {
            Self.add(&otherProtocols, "udp", c.bytesIn, c.bytesOut, c, whole: true, counted: whole)
            return
        }
        if c.httpNone == "not_http" {
            Self.add(&otherProtocols, transport, c.bytesIn, c.bytesOut, c, whole: true, counted: whole)
            return
        }
        if let requests = c.httpRequests, requests > 0 {
            if whole { decoded += 1 }
            var decodedIn = c.bytesIn, decodedOut = c.bytesOut
            if let u = c.httpUndecoded, u.bytesIn + u.bytesOut > 0 {
                let uIn = Swift.min(u.bytesIn, c.bytesIn), uOut = Swift.min(u.bytesOut, c.bytesOut)
                decodedIn -= uIn
                decodedOut -= uOut
                Self.add(&undecoded, u.reason, uIn, uOut, c, whole: false, counted: whole)
            }
            decodedBytesIn += decodedIn
            decodedBytesOut += decodedOut
            return
        }
        if c.httpNone == nil, c.httpUndecoded == nil, c.error != nil {
            // Failed (a refused TLS handshake, a reset) before any exchange, with no reason for the
            // bytes: a connection error, which the report counts as such.
            if whole { failed.add(bytesIn: c.bytesIn, bytesOut: c.bytesOut, of: c, whole: true) }
            else { failed.bytesIn += c.bytesIn; failed.bytesOut += c.bytesOut }
            return
        }
        if let reason = c.httpNone ?? c.httpUndecoded?.reason ?? (c.httpRequests != nil ? "unknown" : nil) {
            // No decoded exchange: all its bytes are undecoded (those `http_undecoded` names, if any).
            let u = c.httpUndecoded
            let uIn = u.map { Swift.min($0.bytesIn, c.bytesIn) } ?? c.bytesIn
            let uOut = u.map { Swift.min($0.bytesOut, c.bytesOut) } ?? c.bytesOut
            Self.add(&undecoded, reason, uIn, uOut, c, whole: true, counted: whole)
            decodedBytesIn += c.bytesIn - uIn
            decodedBytesOut += c.bytesOut - uOut
            return
        }
        if whole { notParsed.add(bytesIn: c.bytesIn, bytesOut: c.bytesOut, of: c, whole: true) }
        else { notParsed.bytesIn += c.bytesIn; notParsed.bytesOut += c.bytesOut }
    }

    /// `counted`: false for a forked child's copy (bytes only).
    private static func add(_ groups: inout [String: Group], _ name: String, _ bytesIn: Int64, _ bytesOut: Int64,
                            _ c: ConnectionRecord, whole: Bool, counted: Bool) {
        let key = groups[name] != nil || groups.count < maxGroups ? name : "other"
        if counted {
            groups[key, default: Group()].add(bytesIn: bytesIn, bytesOut: bytesOut, of: c, whole: whole)
        } else {
            groups[key, default: Group()].bytesIn += bytesIn
            groups[key, default: Group()].bytesOut += bytesOut
        }
    }

    /// A client's destination as the app named it (the resolved name and the port, else the
    /// peer), a server's local address after `← `.
    static func example(_ c: ConnectionRecord) -> String? {
        if c.role == "server" { return c.local.map { "← " + $0 } }
        guard let peer = c.peer else { return nil }
        if let host = c.host, (c.transport ?? "tcp") != "unix" {
            let port = AddressParts.split(peer).port
            return port.map { host + ":" + String($0) } ?? host
        }
        return peer
    }

    /// HTTP connections: decoded ones and those without a decoded exchange (not other protocols).
    public var httpConnections: Int { decoded + undecoded.values.reduce(0) { $0 + $1.connections } }
    public var undecodedBytes: Int64 { undecoded.values.reduce(0) { $0 + $1.bytes } }
}

/// Failed lookups by (name, error), the most frequent first; bounded by distinct names.
public struct DNSFailures: Sendable {
    public struct Key: Hashable, Sendable {
        public var name: String
        public var error: String
    }
    public private(set) var counts: [Key: Int] = [:]
    /// Their APIs (`getaddrinfo`, `udp`, ...), per key, the first seen.
    public private(set) var apis: [Key: String] = [:]
    /// Failures of names past `limit` distinct ones.
    public private(set) var others = 0
    public private(set) var total = 0
    static let limit = 1000

    public init() {}

    public mutating func add(_ d: DNSRecord) {
        guard let error = d.error else { return }
        total += 1
        let key = Key(name: d.name ?? "?", error: error)
        if counts[key] == nil, counts.count >= Self.limit { others += 1; return }
        counts[key, default: 0] += 1
        if apis[key] == nil, let api = d.api { apis[key] = api }
    }

    /// Most frequent first, then by name and error.
    public var ranked: [(key: Key, count: Int)] {
        counts.map { (key: $0.key, count: $0.value) }.sorted {
            $0.count != $1.count ? $0.count > $1.count : ($0.key.name, $0.key.error) < ($1.key.name, $1.key.error)
        }
    }
}

extension Report {
    /// `coverage` (docs/REPORT_JSON.md).
    public struct CoverageSection: Codable, Sendable {
        public var connections: Int
        public var bytes: Int64
        public var httpConnections: Int
        public var decodedConnections: Int
        public var decodedBytes: Int64
        public var decodedBytesIn: Int64
        public var decodedBytesOut: Int64
        public var undecodedBytes: Int64
        /// `decoded / http_connections`, `decoded_bytes / (decoded_bytes + undecoded_bytes)`.
        public var decodedShare: Double?
        public var decodedBytesShare: Double?
        public var undecoded: [CoverageGroup]
        public var otherProtocols: [CoverageGroup]
        public var notParsed: CoverageGroup?
        public var failed: CoverageGroup?
    }

    public struct CoverageGroup: Codable, Sendable {
        /// `undecoded[]`: the reason (`http2`, `tls_not_hooked`, ...); `other_protocols[]`: the
        /// transport (`tcp`, `unix`, `udp`); `not_parsed`: absent.
        public var reason: String?
        public var kind: String?
        public var connections: Int
        /// `undecoded[]` only: decoded connections whose end was not decoded.
        public var partly: Int?
        public var bytesIn: Int64
        public var bytesOut: Int64
        public var bytes: Int64
        public var examples: [String]
    }

    public struct DNSFailureRow: Codable, Sendable {
        public var name: String
        public var error: String
        public var api: String?
        public var count: Int
    }

    static func coverageSection(_ c: CoverageStats) -> CoverageSection? {
        guard c.connections > 0 || c.bytes > 0 else { return nil }
        func sorted(_ d: [String: CoverageStats.Group]) -> [(String, CoverageStats.Group)] {
            d.map { ($0.key, $0.value) }.sorted {
                $0.1.bytes != $1.1.bytes ? $0.1.bytes > $1.1.bytes : $0.0 < $1.0
            }
        }
        let httpBytes = c.decodedBytes + c.undecodedBytes
        return CoverageSection(
            connections: c.connections, bytes: c.bytes, httpConnections: c.httpConnections, decodedConnections: c.decoded,
            decodedBytes: c.decodedBytes, decodedBytesIn: c.decodedBytesIn, decodedBytesOut: c.decodedBytesOut,
            undecodedBytes: c.undecodedBytes,
            decodedShare: rate(Int64(c.decoded), Int64(c.httpConnections)), decodedBytesShare: rate(c.decodedBytes, httpBytes),
            undecoded: sorted(c.undecoded).map { name, g in
                CoverageGroup(reason: name, kind: nil, connections: g.connections, partly: g.partly, bytesIn: g.bytesIn,
                              bytesOut: g.bytesOut, bytes: g.bytes, examples: g.examples)
            },
            otherProtocols: sorted(c.otherProtocols).map { name, g in
                CoverageGroup(reason: nil, kind: name, connections: g.connections, partly: nil, bytesIn: g.bytesIn,
                              bytesOut: g.bytesOut, bytes: g.bytes, examples: g.examples)
            },
            notParsed: c.notParsed.bytes > 0
                ? CoverageGroup(reason: nil, kind: nil, connections: c.notParsed.connections, partly: nil, bytesIn: c.notParsed.bytesIn,
                                bytesOut: c.notParsed.bytesOut, bytes: c.notParsed.bytes, examples: c.notParsed.examples)
                : nil,
            failed: c.failed.bytes > 0
                ? CoverageGroup(reason: nil, kind: nil, connections: c.failed.connections, partly: nil, bytesIn: c.failed.bytesIn,
                                bytesOut: c.failed.bytesOut, bytes: c.failed.bytes, examples: c.failed.examples)
                : nil)
    }

    static func dnsFailureRows(_ f: DNSFailures) -> [DNSFailureRow] {
        f.ranked.map { DNSFailureRow(name: $0.key.name, error: $0.key.error, api: f.apis[$0.key], count: $0.count) }
    }
}

/// The words of the coverage line, shared by the text report, the HTML page and the exports'
/// notes.
enum CoverageText {
    /// `12 of 15 HTTP connections decoded (98.1% of their 1.2 MiB)`, nil without HTTP connections.
    static func decoded(_ c: Report.CoverageSection) -> String? {
        guard c.httpConnections > 0 else { return nil }
        var s = "\(c.decodedConnections) of " + Format.count(c.httpConnections, "HTTP connection") + " decoded"
        if let share = c.decodedBytesShare {
            s += " (" + percent(share) + " of their " + Format.bytes(c.decodedBytes + c.undecodedBytes) + ")"
        }
        return s
    }

    /// The headline's short form: `2 of 5 HTTP connections decoded (98.1% of their 2.0 MiB); not
    /// decoded: 2 http2, 1 tls_not_hooked, 1 desync after its exchanges`; without HTTP
    /// connections, what the others were.
    static func short(_ c: Report.CoverageSection) -> String {
        var parts: [String] = []
        if let decoded = decoded(c) {
            parts.append(decoded)
            if !c.undecoded.isEmpty {
                parts.append("not decoded: " + c.undecoded.map { g -> String in
                    let n = g.connections + (g.partly ?? 0)
                    return "\(n) \(g.reason ?? "?")" + (g.connections == 0 ? " after decoded exchanges" : "")
                }.joined(separator: ", "))
            }
        } else {
            var other: [String] = []
            for g in c.otherProtocols { other.append("\(g.connections) \(g.kind == "udp" ? "udp" : (g.kind ?? "?") + " not HTTP")") }
            if let p = c.notParsed { other.append("\(p.connections) not parsed (HTTP parsing off, or an older log)") }
            if let f = c.failed { other.append("\(f.connections) failed before a request") }
            parts.append("no HTTP connections" + (other.isEmpty ? "" : ": " + other.joined(separator: ", ")))
        }
        return parts.joined(separator: "; ")
    }

    /// `2 http2 (1.2 MiB: 127.0.0.1:8443)`, `1 desync (12 KiB after decoded exchanges: api.local:80)`.
    static func group(_ g: Report.CoverageGroup, name: String) -> String {
        let n = g.connections + (g.partly ?? 0)
        var facts = Format.bytes(g.bytes)
        if let p = g.partly, p > 0 { facts += p == n ? " after decoded exchanges" : ", \(p) of them after decoded exchanges" }
        return "\(n) \(name) (" + facts + (g.examples.isEmpty ? "" : ": " + g.examples.joined(separator: ", ")) + ")"
    }

    /// `not decoded: ...`, `other protocols: ...`, `not parsed: ...` clauses.
    static func clauses(_ c: Report.CoverageSection, limit: Int = 4) -> [String] {
        var out: [String] = []
        func list(_ groups: [Report.CoverageGroup], name: (Report.CoverageGroup) -> String) -> String {
            var items = groups.prefix(limit).map { group($0, name: name($0)) }
            if groups.count > limit { items.append("\(groups.count - limit) more") }
            return items.joined(separator: ", ")
        }
        if !c.undecoded.isEmpty { out.append("not decoded: " + list(c.undecoded) { $0.reason ?? "?" }) }
        if !c.otherProtocols.isEmpty {
            out.append("other protocols: " + list(c.otherProtocols) { $0.kind == "udp" ? "udp" : ($0.kind ?? "?") + " not HTTP" })
        }
        if let p = c.notParsed {
            out.append("not parsed (HTTP parsing off, or an older log): " + group(p, name: p.connections == 1 ? "connection" : "connections"))
        }
        if let f = c.failed {
            out.append(group(f, name: "failed before a request"))
        }
        return out
    }

    /// Why no exchange was decoded, for an export that has nothing to write.
    static func whyNoExchange(_ c: Report.CoverageSection?) -> String {
        guard let c, c.connections > 0 else { return "no connection carried a byte" }
        var parts: [String] = []
        for g in c.undecoded {
            let n = g.connections + (g.partly ?? 0)
            let what: String
            switch g.reason {
            case "http2": what = "carried HTTP/2"
            case "tls_not_hooked": what = "carried TLS that no hooked library decrypted"
            case "tunnel": what = "were tunnels (CONNECT or Upgrade)"
            case "not_http": what = "were not HTTP"
            case "no_bytes": what = "had no captured bytes"
            case "incomplete": what = "ended before a whole request line"
            case "desync": what = "lost bytes the parser needed"
            case "parse": what = "carried malformed HTTP"
            default: what = "were not decoded"
            }
            parts.append("\(n) connection\(n == 1 ? "" : "s") \(what) (http_none: \(g.reason ?? "?"))")
        }
        for g in c.otherProtocols {
            parts.append("\(g.connections) \(g.kind == "udp" ? "UDP" : g.kind ?? "?") connection\(g.connections == 1 ? "" : "s") carried another protocol")
        }
        if let p = c.notParsed {
            parts.append("\(p.connections) connection\(p.connections == 1 ? " was" : "s were") not parsed (WEDJAT_HTTP=0, or an older log)")
        }
        if let f = c.failed {
            parts.append("\(f.connections) connection\(f.connections == 1 ? "" : "s") failed before a request")
        }
        return parts.isEmpty ? "no connection carried HTTP/1" : parts.joined(separator: ", ")
    }

    static func percent(_ r: Double) -> String {
        let p = r * 100
        return (p >= 99.95 && r < 1 ? "99.9" : Format.fixed(p, 1)) + "%"
    }
}
