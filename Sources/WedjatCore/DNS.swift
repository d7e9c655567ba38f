import CWedjatCommon
#if canImport(Glibc)
import Glibc
#endif

// Which name an address was resolved from, for the connections made to it afterwards.
// Bounded: the oldest addresses are forgotten first.
struct ResolvedNames {
    struct Entry {
        var name: String
        var durationUs: Int
        var endMono: UInt64
        var attributed = false
    }
    struct Match {
        var name: String
        var attributedDurationUs: Int?
    }

    static let capacity = 4096
    // A lookup counts as this connection's DNS phase only when it ended this shortly before
    // the connect and no earlier connection claimed it (later connections reuse the answer).
    static let attributionWindowNs: UInt64 = 1_000_000_000

    private var entries: [Key: Entry] = [:]
    private var order: [Key] = []
    private var head = 0

    struct Key: Hashable {
        var family: UInt16
        var high: UInt64
        var low: UInt64
        init(_ a: wj_addr) {
            var a = a
            family = a.family
            (high, low) = withUnsafeBytes(of: &a.bytes) { ($0.load(fromByteOffset: 0, as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self)) }
        }
    }

    mutating func note(_ addr: wj_addr, name: String, durationUs: Int, endMono: UInt64) {
        let key = Key(addr)
        if entries[key] == nil {
            if order.count < ResolvedNames.capacity {
                order.append(key)
            } else {
                entries.removeValue(forKey: order[head])
                order[head] = key
                head = (head + 1) % ResolvedNames.capacity
            }
        }
        entries[key] = Entry(name: name, durationUs: durationUs, endMono: endMono)
    }

    mutating func lookup(_ peer: wj_addr, connectStartMono: UInt64) -> Match? {
        var key = Key(peer)
        if entries[key] == nil, peer.family == UInt16(AF_INET6) {
            key = Key(ipv4Mapped(peer) ?? peer)   // ::ffff:a.b.c.d connects to a v4 answer
        }
        guard var e = entries[key] else { return nil }
        var dns: Int? = nil
        if !e.attributed && e.endMono <= connectStartMono && connectStartMono - e.endMono <= ResolvedNames.attributionWindowNs {
            dns = e.durationUs
            e.attributed = true
            entries[key] = e
        }
        return Match(name: e.name, attributedDurationUs: dns)
    }

    private func ipv4Mapped(_ a: wj_addr) -> wj_addr? {
        var a = a
        let bytes = withUnsafeBytes(of: &a.bytes) { Array($0) }
        guard bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return nil }
        var v4 = wj_addr()
        v4.family = UInt16(AF_INET)
        withUnsafeMutableBytes(of: &v4.bytes) { for i in 0..<4 { $0[i] = bytes[12 + i] } }
        return v4
    }
}

enum DNSNames {
    static func api(_ api: Int32) -> String {
        switch api {
        case Int32(WJ_DNS_GETADDRINFO): return "getaddrinfo"
        case Int32(WJ_DNS_GETHOSTBYNAME): return "gethostbyname"
        case Int32(WJ_DNS_GETHOSTBYADDR): return "gethostbyaddr"
        case Int32(WJ_DNS_GETNAMEINFO): return "getnameinfo"
        case Int32(WJ_DNS_UDP): return "udp"
        default: return "unknown"
        }
    }

    static func family(_ f: Int32) -> String {
        switch f {
        case AF_INET: return "ipv4"
        case AF_INET6: return "ipv6"
        default: return "any"
        }
    }

    // getaddrinfo/getnameinfo return EAI_* codes (negative in glibc); gethostby* set h_errno.
    static func error(_ code: Int32, api: Int32) -> String {
        if api == Int32(WJ_DNS_UDP) {   // the answer's RCODE
            let names = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"]
            return code >= 0 && Int(code) < names.count ? names[Int(code)] : "RCODE\(code)"
        }
        if api == Int32(WJ_DNS_GETADDRINFO) || api == Int32(WJ_DNS_GETNAMEINFO) {
            switch code {
            case -1: return "EAI_BADFLAGS"
            case -2: return "EAI_NONAME"
            case -3: return "EAI_AGAIN"
            case -4: return "EAI_FAIL"
            case -5: return "EAI_NODATA"
            case -6: return "EAI_FAMILY"
            case -7: return "EAI_SOCKTYPE"
            case -8: return "EAI_SERVICE"
            case -9: return "EAI_ADDRFAMILY"
            case -10: return "EAI_MEMORY"
            case -11: return "EAI_SYSTEM"
            case -12: return "EAI_OVERFLOW"
            default: return "EAI_\(code)"
            }
        }
        switch code {
        case 1: return "HOST_NOT_FOUND"
        case 2: return "TRY_AGAIN"
        case 3: return "NO_RECOVERY"
        case 4: return "NO_DATA"
        default: return "H_ERRNO_\(code)"
        }
    }
}
