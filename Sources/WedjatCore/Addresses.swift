import CWedjatCommon
#if canImport(Glibc)
import Glibc
#endif

// "a.b.c.d:port" and "[v6]:port", as the log format specifies.
public enum Addresses {
    public static func format(_ a: wj_addr, withPort: Bool = true) -> String? {
        var a = a
        let family = Int32(a.family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        var text = [CChar](repeating: 0, count: 64)
        let ok = withUnsafeBytes(of: &a.bytes) { raw in
            inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) != nil
        }
        guard ok else { return nil }
        let host = String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let scope = family == AF_INET6 && a.scope_id != 0 ? "%\(a.scope_id)" : ""
        if !withPort { return host + scope }
        if family == AF_INET6 { return "[\(host)\(scope)]:\(a.port)" }
        return "\(host):\(a.port)"
    }

    public static func family(_ a: wj_addr) -> String? {
        switch Int32(a.family) {
        case AF_INET: return "ipv4"
        case AF_INET6: return "ipv6"
        default: return nil
        }
    }
}
