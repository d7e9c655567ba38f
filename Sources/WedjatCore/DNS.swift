import CWedjatCommon
#if canImport(Glibc)
import Glibc
#endif

// Which name a client connection's peer address was resolved from (`connection.host`), and
// whether that lookup was the connection's own DNS phase (`dns_us`). docs/LOG_FORMAT.md
// (`connection.host`) states the rule; in short, a name is given only when it is plausibly the
// name the app connected by:
//
// The candidate is the latest successful forward lookup, ended before the connect started,
// whose answers include the peer address (an IPv4-mapped IPv6 peer matches an IPv4 answer) and
// whose service, when it was a port number, is the peer's port. It names the connection when
//   (a) it is the latest lookup the connecting thread made, at most 60 s before (resolve, then
//       connect, on one thread);
//   (b) or it ended at most 1 s before the connect, on any thread (resolver threads: curl's,
//       libuv's), and the connections that used it so far went to the same port;
//   (c) or an earlier connection to the same address and port was given the same name: the app
//       reconnects to a destination it resolved (a pool, a resolver cache).
// Otherwise `host` is null: an address the app did not look up, or looked up long ago for
// something else (a connection to the literal 127.0.0.1 after a lookup of `localhost`), gets
// no name. The lookup is the connection's DNS phase when it ended at most 1 s before the
// connect and no earlier connection claimed it.
//
// Bounded: at most `capacity` lookups, addresses, destinations and threads are remembered, the
// oldest forgotten first.
struct ResolvedNames {
    struct Match {
        var name: String
        var attributedDurationUs: Int?
    }

    static let capacity = 4096
    /// (b), and the DNS phase: a lookup ended this shortly before the connect.
    static let attributionWindowNs: UInt64 = 1_000_000_000
    /// (a): the connecting thread's own latest lookup, at most this old.
    static let sameThreadWindowNs: UInt64 = 60_000_000_000

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

    private struct Destination: Hashable {
        var address: Key
        var port: UInt16
    }

    private struct Lookup {
        var name: String
        var durationUs: Int
        var endMono: UInt64
        /// The thread that made it; nil when the caller did not say.
        var tid: Int32?
        /// The service asked for, when it was a port number.
        var port: UInt16?
        /// A connection took it as its DNS phase.
        var dnsClaimed = false
        /// The port of the connections that used it: nil none yet, `usedPorts` > 1: several.
        var usedPort: UInt16?
        var usedPorts = 0
    }

    private var lookups = BoundedMap<UInt64, Lookup>(capacity: ResolvedNames.capacity)
    /// The latest lookup that returned each address.
    private var byAddress = BoundedMap<Key, UInt64>(capacity: ResolvedNames.capacity)
    /// Each thread's latest lookup.
    private var latestOfThread = BoundedMap<Int32, UInt64>(capacity: ResolvedNames.capacity)
    /// The name given to connections to each address and port.
    private var destinations = BoundedMap<Destination, String>(capacity: ResolvedNames.capacity)
    private var nextId: UInt64 = 1
    /// The lookup the single-address `note` is filling (consecutive calls for one lookup).
    private var filling: UInt64?

    /// A successful forward lookup: its name, answers, duration and end, the thread that made it
    /// and the service asked for (getaddrinfo's; a port number restricts the answers to it).
    mutating func note(_ addrs: [wj_addr], name: String, durationUs: Int, endMono: UInt64, tid: Int32? = nil,
                       service: String? = nil) {
        let id = nextId
        nextId += 1
        lookups[id] = Lookup(name: name, durationUs: durationUs, endMono: endMono, tid: tid,
                             port: service.flatMap { UInt16($0) })
        for a in addrs { byAddress[Key(a)] = id }
        if let tid { latestOfThread[tid] = id }
        filling = nil
    }

    /// One answer of a lookup; consecutive calls with the same name, duration and end are the
    /// answers of one lookup (callers that do not know the thread or the service).
    mutating func note(_ addr: wj_addr, name: String, durationUs: Int, endMono: UInt64) {
        if let id = filling, let l = lookups[id], l.name == name, l.durationUs == durationUs, l.endMono == endMono, l.tid == nil {
            byAddress[Key(addr)] = id
            return
        }
        note([addr], name: name, durationUs: durationUs, endMono: endMono)
        filling = nextId - 1
    }

    /// The name of a client connection to `peer` whose connect started at `connectStartMono` on
    /// thread `tid` (nil: unknown), per the rule above; nil when none is plausible. Called once
    /// per connection, in event order.
    mutating func lookup(_ peer: wj_addr, connectStartMono: UInt64, tid: Int32? = nil) -> Match? {
        var key = Key(peer)
        if byAddress[key] == nil, peer.family == UInt16(AF_INET6), let v4 = ipv4Mapped(peer) {
            key = Key(v4)   // ::ffff:a.b.c.d connects to a v4 answer
        }
        let port = peer.port
        let destination = Destination(address: key, port: port)
        guard let id = byAddress[key], var l = lookups[id], l.endMono <= connectStartMono else { return nil }
        // A destination already named keeps that name when the address's latest lookup is of
        // the same name for another service (rule c); another name ends it.
        if let wanted = l.port, wanted != port {
            return destinations[destination] == l.name ? Match(name: l.name, attributedDurationUs: nil) : nil
        }
        let age = connectStartMono - l.endMono
        let sameThread = tid != nil && l.tid == tid && latestOfThread[tid!] == id && age <= ResolvedNames.sameThreadWindowNs
        let samePort = l.usedPort == nil || (l.usedPorts == 1 && l.usedPort == port)
        let fresh = age <= ResolvedNames.attributionWindowNs && samePort
        let continuing = destinations[destination] == l.name
        guard sameThread || fresh || continuing else { return nil }
        var dns: Int? = nil
        if !l.dnsClaimed && age <= ResolvedNames.attributionWindowNs {
            dns = l.durationUs
            l.dnsClaimed = true
        }
        if l.usedPort != port { l.usedPorts += 1 }
        l.usedPort = port
        lookups[id] = l
        destinations[destination] = l.name
        return Match(name: l.name, attributedDurationUs: dns)
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

/// A dictionary of at most `capacity` keys: a new key past it forgets the oldest key inserted.
struct BoundedMap<K: Hashable, V> {
    private var values: [K: V] = [:]
    private var order: [K] = []
    private var head = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    subscript(key: K) -> V? {
        get { values[key] }
        set {
            guard let newValue else { values.removeValue(forKey: key); return }
            if values.updateValue(newValue, forKey: key) == nil {
                if order.count < capacity {
                    order.append(key)
                } else {
                    if order[head] != key { values.removeValue(forKey: order[head]) }
                    order[head] = key
                    head = (head + 1) % capacity
                }
            }
        }
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
