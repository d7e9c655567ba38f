import Foundation

/// One JSON text (a log line) parsed into a flat list of nodes, a "tape", without
/// materialising any value: a field becomes a Swift value only when the decoder asks for it.
/// That, and reusing one document for every line, is what makes reading a log fast (about
/// 8 times Foundation's JSONSerialization, which builds a dictionary of boxed values per line).
///
/// The whole text is validated as RFC 8259 JSON (grammar, UTF-8, no raw control characters in
/// strings, nesting at most `maxDepth`), so a line damaged anywhere is rejected as a whole,
/// even in a field the decoder never reads. Numbers are validated by their grammar; their
/// value is read on demand.
final class JSONDocument {
    enum Kind: UInt8 { case null, `true`, `false`, number, string, array, object }

    struct Node {
        var kind: Kind
        /// A string with backslash escapes (it must be unescaped, not copied).
        var escaped: Bool
        /// A string's content without the quotes, a number's text; a container's brackets.
        var start: Int32
        var end: Int32
        /// The index of the node after this value and everything it contains.
        var next: Int32
    }

    /// Objects of strings (`http.headers`) are decoded when true, only checked when false.
    var keepStringMaps = true

    /// The strings this document's lines repeat (a document is one thread's at a time).
    let strings = StringCache()

    /// Deeper texts are rejected: recursion stays bounded whatever a line holds.
    static let maxDepth = 512

    // Bytes and nodes in buffers of our own, reused from line to line: reading them through
    // a pointer costs no bounds or exclusivity check (this is the reader's hot path).
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private(set) var count = 0
    private var nodes: NodeBuffer

    init() {
        capacity = 4096
        storage = .allocate(capacity: capacity)
        nodes = NodeBuffer(capacity: 256)
    }

    deinit {
        storage.deallocate()
        nodes.base.deallocate()
    }

    /// Parses `text` (copied: the document owns its bytes). On success node 0 is the root.
    func parse(_ text: UnsafeRawBufferPointer) -> Bool {
        if text.count > capacity {
            storage.deallocate()
            capacity = Swift.max(text.count, capacity * 2)
            storage = .allocate(capacity: capacity)
        }
        if let base = text.baseAddress { storage.update(from: base.assumingMemoryBound(to: UInt8.self), count: text.count) }
        count = text.count
        nodes.count = 0
        hintObject = -1
        guard text.count < Int(Int32.max) else { return false }
        var parser = Parser(p: UnsafePointer(storage), n: count)
        return parser.parseDocument(into: &nodes)
    }

    var rootIsObject: Bool { nodes.count > 0 && nodes.base[0].kind == .object }

    var nodeCount: Int { nodes.count }

    // MARK: access (node indices come from this document's `nodes`)

    /// Where the last `find` stopped: a decoder asks for fields mostly in the order the writer
    /// wrote them, so the search starts after the previous hit and usually ends at once.
    private var hintObject = -1
    private var hintKey = 0

    /// The value of `key` in the object at `object`, or nil when absent (with a repeated key,
    /// any one of them).
    func find(_ key: String, in object: Int) -> Int? {
        var key = key
        return key.withUTF8 { k -> Int? in
            let n = nodes.base, bytes = storage
            let end = Int(n[object].next)
            let first = object + 1
            let from = hintObject == object && hintKey < end ? hintKey : first
            if let hit = scan(k, n, bytes, from: from, to: end) ?? (from > first ? scan(k, n, bytes, from: first, to: from) : nil) {
                hintObject = object
                hintKey = Int(n[hit + 1].next)
                return hit + 1
            }
            return nil
        }
    }

    /// Which of `keys` the object at `object` has, as bits (bit i: `keys[i]`), in one pass over
    /// its members: for optional fields most records lack, where each `find` that misses would
    /// scan every member.
    func present(_ keys: [StaticString], in object: Int) -> UInt64 {
        let n = nodes.base, bytes = storage
        // The keys' lengths as one mask: most members are ruled out by their length alone.
        var lengths: UInt64 = 0
        for key in keys where key.utf8CodeUnitCount < 64 { lengths |= 1 << UInt64(key.utf8CodeUnitCount) }
        var found: UInt64 = 0
        let end = Int(n[object].next)
        var k = object + 1
        while k < end {
            let name = n[k]
            let length = Int(name.end - name.start)
            if name.escaped || (length < 64 && lengths & (1 << UInt64(length)) != 0) {
                for bit in 0 ..< keys.count {
                    let key = keys[bit]
                    let hit = name.escaped ? string(k) == key.description
                        : key.utf8CodeUnitCount == length && (length == 0 || memcmp(bytes + Int(name.start), key.utf8Start, length) == 0)
                    if hit { found |= 1 << UInt64(bit) }
                }
            }
            k = Int(n[k + 1].next)
        }
        return found
    }

    /// The key node named `k` among the members whose key nodes are from `from` (a key) up to `to`.
    private func scan(_ k: UnsafeBufferPointer<UInt8>, _ n: UnsafeMutablePointer<Node>, _ bytes: UnsafeMutablePointer<UInt8>,
                      from: Int, to: Int) -> Int? {
        var i = from
        while i < to {
            let name = n[i]
            if name.escaped {
                if string(i) == String(decoding: k, as: UTF8.self) { return i }
            } else if Int(name.end - name.start) == k.count,
                      k.count == 0 || memcmp(bytes + Int(name.start), k.baseAddress!, k.count) == 0 {
                return i
            }
            i = Int(n[i + 1].next)
        }
        return nil
    }

    /// The key/value node pairs of the object at `object`.
    func members(_ object: Int) -> [(key: Int, value: Int)] {
        var out: [(key: Int, value: Int)] = []
        let n = nodes.base
        let end = Int(n[object].next)
        var i = object + 1
        while i < end {
            out.append((i, i + 1))
            i = Int(n[i + 1].next)
        }
        return out
    }

    /// Calls `body(key, value)` for each member of the object at `object`, until it returns false.
    @inline(__always) func forEachMember(_ object: Int, _ body: (Int, Int) throws -> Bool) rethrows {
        let n = nodes.base
        let end = Int(n[object].next)
        var i = object + 1
        while i < end {
            guard try body(i, i + 1) else { return }
            i = Int(n[i + 1].next)
        }
    }

    /// The element nodes of the array at `array`.
    func elements(_ array: Int) -> [Int] {
        var out: [Int] = []
        let n = nodes.base
        let end = Int(n[array].next)
        var i = array + 1
        while i < end {
            out.append(i)
            i = Int(n[i].next)
        }
        return out
    }

    func kind(_ node: Int) -> Kind { nodes.base[node].kind }

    func string(_ node: Int) -> String? {
        let n = nodes.base[node]
        guard n.kind == .string else { return nil }
        let bytes = UnsafeBufferPointer(start: storage + Int(n.start), count: Int(n.end - n.start))
        return n.escaped ? Self.unescape(bytes) : strings.string(bytes.baseAddress!, bytes.count)
    }

    func bool(_ node: Int) -> Bool? {
        switch nodes.base[node].kind {
        case .true: true
        case .false: false
        default: nil
        }
    }

    /// An exact integer: `12`, `-3`, `1e3` (1000), `2.0`; nil for `1.5`, out-of-range values
    /// and anything that is not a number.
    func int64(_ node: Int) -> Int64? {
        let n = nodes.base[node]
        guard n.kind == .number else { return nil }
        var i = Int(n.start)
        let end = Int(n.end)
        let negative = storage[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        var value: Int64 = 0
        while i < end {
            let c = storage[i]
            guard c >= 0x30, c <= 0x39 else { return exactInteger(double(node)) }   // fraction or exponent
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(Int64(c - 0x30)) : m.addingReportingOverflow(Int64(c - 0x30))
            if o1 || o2 { return nil }
            value = s
            i += 1
        }
        return value
    }

    private func exactInteger(_ d: Double?) -> Int64? {
        guard let d, d.isFinite, d == d.rounded(), d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else { return nil }
        return Int64(d)
    }

    /// Any number, as a Double (possibly infinite for a huge exponent).
    func double(_ node: Int) -> Double? {
        let n = nodes.base[node]
        guard n.kind == .number else { return nil }
        // strtod needs a terminated string; numbers are short.
        var buf = [CChar](repeating: 0, count: Int(n.end - n.start) + 1)
        for i in 0 ..< Int(n.end - n.start) { buf[i] = CChar(bitPattern: storage[Int(n.start) + i]) }
        return strtod(buf, nil)
    }

    /// Decodes the escapes of a validated string's content.
    private static func unescape(_ b: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(b.count)
        var i = 0
        func hex4(_ at: Int) -> UInt32 {
            var v: UInt32 = 0
            for j in at ..< at + 4 {
                let c = b[j]
                v = v << 4 | UInt32(c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x61 + 10)
            }
            return v
        }
        func append(_ scalar: UInt32) {
            let s = Unicode.Scalar(scalar) ?? "\u{FFFD}"
            out.append(contentsOf: Array(String(Character(s)).utf8))
        }
        while i < b.count {
            let c = b[i]
            guard c == UInt8(ascii: "\\") else { out.append(c); i += 1; continue }
            let e = b[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var u = hex4(i)
                i += 4
                // A surrogate pair is one scalar; a lone surrogate becomes U+FFFD.
                if u >= 0xD800, u < 0xDC00, i + 6 <= b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") {
                    let lo = hex4(i + 2)
                    if lo >= 0xDC00, lo < 0xE000 {
                        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                        i += 6
                    }
                }
                append(u)
            default: out.append(e)   // \" \\ \/
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The document's nodes: a growable buffer written by the parser.
typealias NodeBuffer = GrowingBuffer<JSONDocument.Node>

/// Recursive descent over validated bytes; every node is appended in document order.
private struct Parser {
    let p: UnsafePointer<UInt8>
    let n: Int
    var i = 0

    init(p: UnsafePointer<UInt8>, n: Int) { self.p = p; self.n = n }

    mutating func parseDocument(into nodes: inout NodeBuffer) -> Bool {
        skipSpace()
        guard value(&nodes, depth: 0) else { return false }
        skipSpace()
        return i == n
    }

    @inline(__always) mutating func skipSpace() {
        while i < n {
            let c = p[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
        }
    }

    mutating func value(_ nodes: inout NodeBuffer, depth: Int) -> Bool {
        guard i < n else { return false }
        switch p[i] {
        case UInt8(ascii: "\""): return string(&nodes)
        case UInt8(ascii: "{"): return container(&nodes, depth: depth, object: true)
        case UInt8(ascii: "["): return container(&nodes, depth: depth, object: false)
        case UInt8(ascii: "t"): return literal("true", .true, &nodes)
        case UInt8(ascii: "f"): return literal("false", .false, &nodes)
        case UInt8(ascii: "n"): return literal("null", .null, &nodes)
        default: return number(&nodes)
        }
    }

    mutating func container(_ nodes: inout NodeBuffer, depth: Int, object: Bool) -> Bool {
        guard depth < JSONDocument.maxDepth else { return false }
        let me = nodes.append(.init(kind: object ? .object : .array, escaped: false, start: Int32(i), end: Int32(i), next: 0))
        let close = UInt8(ascii: object ? "}" : "]")
        i += 1
        skipSpace()
        if i < n, p[i] == close {
            i += 1
        } else {
            while true {
                if object {
                    guard i < n, p[i] == UInt8(ascii: "\""), string(&nodes) else { return false }
                    skipSpace()
                    guard i < n, p[i] == UInt8(ascii: ":") else { return false }
                    i += 1
                    skipSpace()
                }
                guard value(&nodes, depth: depth + 1) else { return false }
                skipSpace()
                guard i < n else { return false }
                if p[i] == UInt8(ascii: ",") {
                    i += 1
                    skipSpace()
                    continue
                }
                guard p[i] == close else { return false }
                i += 1
                break
            }
        }
        nodes.base[me].end = Int32(i)
        nodes.base[me].next = Int32(nodes.count)
        return true
    }

    mutating func literal(_ word: StaticString, _ kind: JSONDocument.Kind, _ nodes: inout NodeBuffer) -> Bool {
        let w = word.utf8Start
        let len = word.utf8CodeUnitCount
        guard n - i >= len, memcmp(p + i, w, len) == 0 else { return false }
        _ = nodes.append(.init(kind: kind, escaped: false, start: Int32(i), end: Int32(i + len), next: Int32(nodes.count + 1)))
        i += len
        return true
    }

    mutating func number(_ nodes: inout NodeBuffer) -> Bool {
        let start = i
        @inline(__always) func digit() -> Bool { i < n && p[i] >= 0x30 && p[i] <= 0x39 }
        if i < n, p[i] == UInt8(ascii: "-") { i += 1 }
        guard digit() else { return false }
        if p[i] == 0x30 { i += 1 } else { while digit() { i += 1 } }
        if i < n, p[i] == UInt8(ascii: ".") {
            i += 1
            guard digit() else { return false }
            while digit() { i += 1 }
        }
        if i < n, p[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < n, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") { i += 1 }
            guard digit() else { return false }
            while digit() { i += 1 }
        }
        _ = nodes.append(.init(kind: .number, escaped: false, start: Int32(start), end: Int32(i), next: Int32(nodes.count + 1)))
        return true
    }

    /// At the opening quote. Checks escapes, control characters and UTF-8.
    mutating func string(_ nodes: inout NodeBuffer) -> Bool {
        i += 1
        let start = i
        var escaped = false
        while i < n {
            // Eight plain ASCII bytes at a time (no quote, backslash, control byte or non-ASCII:
            // the common case of a log's strings), then byte by byte.
            while i + 8 <= n {
                let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
                func zeroByte(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
                let special = zeroByte(w ^ (ones &* 0x22)) | zeroByte(w ^ (ones &* 0x5C)) | ((w &- ones &* 0x20) & ~w & highs) | (w & highs)
                if special != 0 { break }
                i += 8
            }
            guard i < n else { break }
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                _ = nodes.append(.init(kind: .string, escaped: escaped, start: Int32(start), end: Int32(i), next: Int32(nodes.count + 1)))
                i += 1
                return true
            }
            if c < 0x20 { return false }
            if c == UInt8(ascii: "\\") {
                escaped = true
                guard i + 1 < n else { return false }
                switch p[i + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 2
                case UInt8(ascii: "u"):
                    guard i + 6 <= n else { return false }
                    for j in i + 2 ..< i + 6 where !Self.isHex(p[j]) { return false }
                    i += 6
                default:
                    return false
                }
                continue
            }
            if c < 0x80 { i += 1; continue }
            guard let len = utf8Sequence(at: i) else { return false }
            i += len
        }
        return false
    }

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x66)
    }

    /// The length of the well-formed UTF-8 sequence at `at` (Unicode table 3-7), or nil.
    func utf8Sequence(at: Int) -> Int? {
        let c = p[at]
        @inline(__always) func cont(_ k: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            at + k < n && p[at + k] >= lo && p[at + k] <= hi
        }
        switch c {
        case 0xC2 ... 0xDF: return cont(1) ? 2 : nil
        case 0xE0: return cont(1, 0xA0) && cont(2) ? 3 : nil
        case 0xE1 ... 0xEC, 0xEE ... 0xEF: return cont(1) && cont(2) ? 3 : nil
        case 0xED: return cont(1, 0x80, 0x9F) && cont(2) ? 3 : nil
        case 0xF0: return cont(1, 0x90) && cont(2) && cont(3) ? 4 : nil
        case 0xF1 ... 0xF3: return cont(1) && cont(2) && cont(3) ? 4 : nil
        case 0xF4: return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : nil
        default: return nil
        }
    }
}
