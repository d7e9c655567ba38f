import Foundation

// Exchanges a server handed to a forked child (a CGI server: the parent reads the request,
// forks, the child writes the response). The log has two halves (docs/LOG_FORMAT.md, `http`):
// the parent's record with the request and `error: "handed_off"`, and the child's with only the
// response, on a connection whose record says `inherited_from: {log, conn_id}` (the parent's).
// Every view joins them into one exchange, counted once, in the parent's log, with the child's
// status (docs/REPORT_JSON.md, "Handed-off exchanges").

extension HTTPRecord {
    /// The parent's half of an exchange a forked child answered.
    public var isHandedOff: Bool { error == "handed_off" }
    /// A forked child's half: the response to a request its parent read (no request side).
    public var isContinuation: Bool {
        method == nil && path == nil && requestStartTs == nil && (status != nil || responseStartTs != nil)
    }
    /// An error of the exchange itself: `handed_off` only says where the response went.
    public var failed: Bool { error != nil && error != "handed_off" }

    /// The parent's half with the child's response.
    func joined(withResponse c: HTTPRecord) -> HTTPRecord {
        var h = self
        h.ts = Swift.max(ts, c.ts)
        h.status = c.status
        h.interimResponses = c.interimResponses
        let responseVersion = c.responseVersion ?? c.version
        h.responseVersion = responseVersion == version ? nil : responseVersion
        h.responseStartTs = c.responseStartTs
        h.responseEndTs = c.responseEndTs
        h.responseHeaderBytes = c.responseHeaderBytes
        h.responseBodyBytes = c.responseBodyBytes
        h.complete = c.complete
        h.upgraded = c.upgraded
        h.error = c.error
        for (k, v) in c.headers where k.hasPrefix("response.") { h.headers[k] = v }
        h.ttfbUs = nil; h.waitUs = nil; h.durationUs = nil
        h.takeDurationsFromTimes()
        h.continuedBy = c.pid
        return h
    }
}

/// Pairs the halves while the logs are read (they come in any order: the parent's log may be
/// read before or after the child's, and a child's `http` records come before its connection's
/// record, which names the parent). A record that is not a half passes at once; a half waits for
/// its other half, and the pair comes out as one record in the parent's log. What never finds
/// its other half comes out as it is at the end. At most `limit` halves wait (memory); past
/// that, halves pass unjoined and are counted.
struct HandoffJoin {
    struct Origin: Sendable {
        /// The log (its first segment's path), the file holding the line, the line.
        var log: String
        var file: String?
        var line: Int
    }

    struct Item {
        var record: Record
        var origin: Origin
        /// A joined exchange: the parent's half with the child's response.
        var joined: Bool
    }

    static let defaultLimit = 65_536
    let limit: Int

    /// A parent's exchange: its log's file name (a child names the parent's log by the path the
    /// writer saw, the reader by the path it was given: the file name is what both share),
    /// conn_id and request_index.
    private struct ExchangeKey: Hashable {
        var log: String
        var connId: Int64
        var index: Int
    }

    private struct ChildConnection: Hashable {
        var log: String
        var connId: Int64
    }

    private struct Half {
        var seq: Int
        var record: HTTPRecord
        var origin: Origin
    }

    /// Parents' halves waiting for the child's, and children's waiting for the parent's.
    private var parents: [ExchangeKey: Half] = [:]
    private var children: [ExchangeKey: Half] = [:]
    /// Children's halves waiting for their connection's record (which names the parent).
    private var unplaced: [ChildConnection: [Half]] = [:]
    /// Children's connections already named, for halves that come after the record.
    private var placed: [ChildConnection: ChildConnection] = [:]
    private var seq = 0
    private(set) var waiting = 0
    /// Pairs joined, and halves that passed unjoined because `limit` halves were waiting.
    private(set) var joinedCount = 0
    private(set) var overLimit = 0
    /// Out: what is ready, in order (filled by `take` and `finish`).
    var ready: [Item] = []

    init(limit: Int = HandoffJoin.defaultLimit) { self.limit = Swift.max(0, limit) }

    static func fileName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// false when `record` is a half it keeps (what is ready is then in `ready`); true when the
    /// caller goes on with the record itself.
    mutating func take(_ record: Record, origin: @autoclosure () -> Origin) -> Bool {
        switch record {
        case .http(let h):
            // Most records are neither half: two checks of plain fields.
            if h.error != nil, h.isHandedOff { return takeParent(h, origin()) }
            if h.requestStartTs == nil, h.isContinuation { return takeChild(h, origin()) }
            return true
        case .connection(let c):
            guard let from = c.inheritedFrom, let id = c.connId else { return true }
            let child = ChildConnection(log: origin().log, connId: id)
            let parent = ChildConnection(log: Self.fileName(from.log), connId: from.connId)
            if placed.count < limit { placed[child] = parent }
            for half in unplaced.removeValue(forKey: child) ?? [] {
                waiting -= 1
                if place(half, parent: parent) { ready.append(Item(record: .http(half.record), origin: half.origin, joined: false)) }
            }
            return true
        default:
            return true
        }
    }

    private mutating func takeParent(_ h: HTTPRecord, _ o: Origin) -> Bool {
        guard let id = h.connId, let index = h.requestIndex else { return true }
        let key = ExchangeKey(log: Self.fileName(o.log), connId: id, index: index)
        if let child = children.removeValue(forKey: key) {
            waiting -= 1
            emitPair(parent: Half(seq: 0, record: h, origin: o), child: child)
            return false
        }
        guard parents[key] == nil, waiting < limit else { overLimit += 1; return true }
        parents[key] = Half(seq: next(), record: h, origin: o)
        waiting += 1
        return false
    }

    private mutating func takeChild(_ h: HTTPRecord, _ o: Origin) -> Bool {
        guard let id = h.connId, h.requestIndex != nil else { return true }
        let child = ChildConnection(log: o.log, connId: id)
        if let parent = placed[child] { return place(Half(seq: next(), record: h, origin: o), parent: parent) }
        guard waiting < limit else { overLimit += 1; return true }
        unplaced[child, default: []].append(Half(seq: next(), record: h, origin: o))
        waiting += 1
        return false
    }

    /// A child's half whose parent is known: joined, or waiting for the parent's half; true when
    /// it cannot wait (it passes as it is).
    private mutating func place(_ half: Half, parent: ChildConnection) -> Bool {
        let key = ExchangeKey(log: parent.log, connId: parent.connId, index: half.record.requestIndex ?? 0)
        if let p = parents.removeValue(forKey: key) {
            waiting -= 1
            emitPair(parent: p, child: half)
            return false
        }
        guard children[key] == nil, waiting < limit else { overLimit += 1; return true }
        children[key] = half
        waiting += 1
        return false
    }

    private mutating func emitPair(parent: Half, child: Half) {
        joinedCount += 1
        ready.append(Item(record: .http(parent.record.joined(withResponse: child.record)), origin: parent.origin, joined: true))
    }

    private mutating func next() -> Int {
        seq += 1
        return seq
    }

    /// At the end: parents' halves whose child's half was not read (the child's log is missing,
    /// or the child was killed before it answered), and children's halves without their parent's.
    private(set) var unjoinedParents = 0
    private(set) var unjoinedChildren = 0

    /// The halves that found no other half, as they are, in reading order.
    mutating func finish() {
        unjoinedParents += parents.count
        unjoinedChildren += children.count + unplaced.values.reduce(0) { $0 + $1.count }
        var rest = Array(parents.values) + Array(children.values) + unplaced.values.flatMap { $0 }
        rest.sort { $0.seq < $1.seq }
        for h in rest { ready.append(Item(record: .http(h.record), origin: h.origin, joined: false)) }
        parents.removeAll(); children.removeAll(); unplaced.removeAll(); placed.removeAll()
        waiting = 0
    }
}
