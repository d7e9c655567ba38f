#if canImport(Glibc)
import Glibc
#endif

/// What the exports derive from an `http` record the same way: its URL, the server's name
/// and port, the peer's address. Only from logged values; nothing is guessed.
extension HTTPRecord {
    var schemeOrHTTP: String { scheme ?? "http" }

    /// `scheme://authority/path`. The authority is the logged host (an absolute-form target's,
    /// the Host header's, or the name the peer was resolved from), else the peer address.
    var url: String {
        let authority = host ?? peer ?? ""
        let target = path ?? ""
        if target.hasPrefix("/") { return "\(schemeOrHTTP)://\(authority)\(target)" }
        if target.contains("://") { return target }
        // CONNECT's authority-form target names the tunnel's far end.
        if method == "CONNECT", !target.isEmpty { return "\(schemeOrHTTP)://\(target)" }
        return "\(schemeOrHTTP)://\(authority)"
    }

    /// The path part of the target (before `?`), for server spans' `url.path`.
    var targetPath: String? {
        guard let path, path.hasPrefix("/") else { return nil }
        return path.firstIndex(of: "?").map { String(path[..<$0]) } ?? path
    }

    /// The query (after `?`), `REDACTED` when wedjat replaced it.
    var targetQuery: String? {
        guard let path, path.hasPrefix("/"), let q = path.firstIndex(of: "?") else { return nil }
        return String(path[path.index(after: q)...])
    }

    /// The server's name and port: from the logged host, the port from it, else (client) the
    /// peer's, else the scheme's default.
    var server: (address: String?, port: Int?) { ExportHTTP.server(host: host, peer: peer, role: role, scheme: schemeOrHTTP) }

    /// A logged header (`request.content-type`, ...).
    func header(_ name: String) -> String? { headers[name] }

    /// The end as known: the response's last byte, else the record's time (an exchange cut short
    /// is written when its connection ends).
    package var endTs: Int64 { responseEndTs ?? ts }
}

/// The rules `http` records and `http_summary` records share in exports.
enum ExportHTTP {
    /// The server's name and port: from the logged host, the port from it, else (client) the
    /// peer's, else the scheme's default.
    static func server(host: String?, peer: String?, role: String, scheme: String) -> (address: String?, port: Int?) {
        let authority = host.map(AddressParts.split)
        let port = authority?.port ?? (role == "client" ? peer.flatMap { AddressParts.split($0).port } : nil)
            ?? (scheme == "https" ? 443 : 80)
        return (authority?.host ?? (role == "client" ? peer.map { AddressParts.split($0).host } : nil), port)
    }
}

extension HTTPRecord {
    /// The version the exchange used, `2`, `1.1` or `1.0` (OpenTelemetry's
    /// `network.protocol.version`): `2` for an HTTP/2 stream; else the lower of the request
    /// line's and the final response's (a 1.1 server answering a 1.0 request speaks 1.0 to it),
    /// else the one ALPN negotiated; nil when neither was logged.
    func protocolVersion(connection: ConnectionRecord?) -> String? {
        if isHTTP2 { return "2" }
        // (Compared one by one: no array per exchange.)
        if version == "HTTP/1.0" || finalResponseVersion == "HTTP/1.0" { return "1.0" }
        if version == "HTTP/1.1" || finalResponseVersion == "HTTP/1.1" { return "1.1" }
        return connection?.negotiatedHTTPVersion
    }
}

extension ConnectionRecord {
    /// `2`, `1.1` or `1.0` when TLS negotiated it (ALPN): for logs written before `http`
    /// records had their own `version`.
    var negotiatedHTTPVersion: String? {
        switch tls?.alpn {
        case "h2": "2"
        case "http/1.1": "1.1"
        case "http/1.0": "1.0"
        default: nil
        }
    }
}

enum AddressParts {
    /// `host:port`, `[v6]:port`, `host`, `v6` → host (brackets off) and port. On the bytes:
    /// it runs for every exchange of an export.
    static func split(_ s: String) -> (host: String, port: Int?) {
        var s = s
        return s.withUTF8 { u -> (host: String, port: Int?) in
            let p = parts(u)
            return (String(decoding: UnsafeBufferPointer(rebasing: u[p.host]), as: UTF8.self), p.port)
        }
    }

    /// The same split as the host's byte range in `u` (no String made: the OTLP spans write it).
    static func parts(_ u: UnsafeBufferPointer<UInt8>) -> (host: Range<Int>, port: Int?) {
        func port(_ from: Int) -> Int? {
            guard from < u.count, u.count - from <= 5 else { return nil }
            var v = 0
            for i in from ..< u.count {
                let c = u[i]
                guard c >= 0x30, c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            return v
        }
        if u.first == UInt8(ascii: "["), let close = u.firstIndex(of: UInt8(ascii: "]")) {
            return (1 ..< close, close + 1 < u.count && u[close + 1] == UInt8(ascii: ":") ? port(close + 2) : nil)
        }
        var colon = -1, colons = 0
        for (i, c) in u.enumerated() where c == UInt8(ascii: ":") { colons += 1; colon = i }
        if colons == 1, let p = port(colon + 1) { return (0 ..< colon, p) }
        return (0 ..< u.count, nil)
    }
}

enum ExportTime {
    /// ISO 8601 in UTC with microseconds: `2025-11-22T03:35:10.202200Z`.
    static func iso8601(_ us: Int64) -> String {
        var t = time_t(floorDiv(us, 1_000_000))
        var tm = tm()
        gmtime_r(&t, &tm)
        let micros = us - floorDiv(us, 1_000_000) * 1_000_000
        return "\(Int(tm.tm_year) + 1900)-\(pad(Int(tm.tm_mon) + 1, 2))-\(pad(Int(tm.tm_mday), 2))T"
            + "\(pad(Int(tm.tm_hour), 2)):\(pad(Int(tm.tm_min), 2)):\(pad(Int(tm.tm_sec), 2)).\(pad(Int(micros), 6))Z"
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
