import Histogram

/// Latency percentiles in microseconds. Backed by an HdrHistogram (3 significant digits), so
/// memory does not grow with the number of connections and values are exact below 2048 us.
public struct DurationStats: Sendable {
    private var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)

    public init() {}

    public mutating func record(_ us: Int64) {
        histogram.record(UInt64(Swift.max(0, us)))
    }

    public var count: Int { Int(histogram.totalCount) }

    /// nil when nothing was recorded (a percentile of nothing is not 0).
    public func percentile(_ p: Double) -> Int64? {
        count == 0 ? nil : Int64(histogram.valueAtPercentile(p))
    }

    public var max: Int64? { count == 0 ? nil : Int64(histogram.maxRecorded) }
}

/// Connections are grouped by who talked to whom: a client by the peer it connected to, a
/// server by the local address it accepted on (the peers of a server are ephemeral ports).
public struct PeerKey: Hashable, Sendable, Comparable {
    public var role: String
    public var address: String

    public init(role: String, address: String) {
        self.role = role; self.address = address
    }

    public init(_ c: ConnectionRecord) {
        role = c.role
        switch c.role {
        case "server": address = c.local ?? "?"
        default: address = c.peer ?? "?"
        }
    }

    public var label: String {
        switch role {
        case "client": "client → \(address)"
        case "server": "server ← \(address)"
        default: "\(role) ↔ \(address)"
        }
    }

    public static func < (a: PeerKey, b: PeerKey) -> Bool { a.label < b.label }
}

public struct PeerStats: Sendable {
    public let key: PeerKey
    public private(set) var count = 0
    public private(set) var bytesIn: Int64 = 0
    public private(set) var bytesOut: Int64 = 0
    public private(set) var errors = 0
    public private(set) var errorNames: [String: Int] = [:]
    public private(set) var openAtExit = 0
    /// Names the app resolved this address from (a client's peer), when wedjat saw the lookups.
    public private(set) var hosts: Set<String> = []
    /// Durations of connections that did not fail: a refused connect takes microseconds and
    /// would drag the percentiles of the real ones down; failures are counted in `errors`.
    public private(set) var durations = DurationStats()

    public init(key: PeerKey) { self.key = key }

    public mutating func add(_ c: ConnectionRecord) {
        count += 1
        bytesIn += c.bytesIn
        bytesOut += c.bytesOut
        if c.openAtExit { openAtExit += 1 }
        if let h = c.host, hosts.count < 8 { hosts.insert(h) }
        if let e = c.error {
            errors += 1
            errorNames[e, default: 0] += 1
        } else if let d = c.effectiveDurationUs {
            durations.record(d)
        }
    }

    /// Errno names, most frequent first (ties by name, so output is stable).
    public var topErrors: [(name: String, count: Int)] {
        errorNames.map { (name: $0.key, count: $0.value) }
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.name < $1.name }
    }
}
