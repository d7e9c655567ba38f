import Foundation

/// A JSON value with ordered keys, written byte for byte the same on every run: the exports are
/// compared against golden files, and consumers diff them. Numbers from integer microseconds are
/// written as exact decimals (`.fixed`), never through a Double's shortest representation.
public indirect enum ExportJSON: Equatable, Sendable {
    case object([(String, ExportJSON)])
    case array([ExportJSON])
    case string(String)
    case int(Int64)
    /// `units / 10^decimals`, exactly, trailing zeros trimmed: `.fixed(18800, 3)` is `18.8`.
    case fixed(Int64, Int)
    case bool(Bool)
    case null
    /// JSON text rendered already (at the level it is placed at): a big document's items are
    /// rendered one by one, so only their text is held, not a tree of all of them.
    case raw(String)

    public static func == (a: ExportJSON, b: ExportJSON) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let x), .array(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.fixed(let x, let p), .fixed(let y, let q)): return x == y && p == q
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        case (.raw(let x), .raw(let y)): return x == y
        default: return false
        }
    }

    /// Milliseconds from microseconds (HAR timings).
    static func millis(_ us: Int64) -> ExportJSON { .fixed(us, 3) }
    /// Seconds from microseconds (OTLP histogram sums).
    static func seconds(_ us: Int64) -> ExportJSON { .fixed(us, 6) }

    /// Compact text; `indent` > 0 pretty-prints with that many spaces a level (`level`: how
    /// deep the value will sit in its document).
    public func rendered(indent: Int = 0, level: Int = 0) -> String {
        String(decoding: renderedBytes(indent: indent, level: level), as: UTF8.self)
    }

    /// The same as bytes (written into a byte buffer: the exports' hot path).
    public func renderedBytes(indent: Int = 0, level: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(into: &out, indent: indent, level: level)
        return out
    }

    func write(into out: inout [UInt8], indent: Int, level: Int) {
        switch self {
        case .object(let members):
            if members.isEmpty { out.append(contentsOf: [0x7B, 0x7D]); return }
            out.append(0x7B)
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(0x2C) }
                ExportJSON.newline(&out, indent, level + 1)
                ExportJSON.writeString(key, into: &out)
                out.append(0x3A)
                if indent > 0 { out.append(0x20) }
                value.write(into: &out, indent: indent, level: level + 1)
            }
            ExportJSON.newline(&out, indent, level)
            out.append(0x7D)
        case .array(let items):
            if items.isEmpty { out.append(contentsOf: [0x5B, 0x5D]); return }
            out.append(0x5B)
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(0x2C) }
                ExportJSON.newline(&out, indent, level + 1)
                item.write(into: &out, indent: indent, level: level + 1)
            }
            ExportJSON.newline(&out, indent, level)
            out.append(0x5D)
        case .string(let s): ExportJSON.writeString(s, into: &out)
        case .int(let n): out.append(contentsOf: String(n).utf8)
        case .fixed(let units, let decimals): out.append(contentsOf: ExportJSON.decimal(units, decimals).utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .raw(let text): out.append(contentsOf: text.utf8)
        }
    }

    private static let spaces = [UInt8](repeating: 0x20, count: 256)

    private static func newline(_ out: inout [UInt8], _ indent: Int, _ level: Int) {
        guard indent > 0 else { return }
        out.append(0x0A)
        let n = indent * level
        if n <= spaces.count { out.append(contentsOf: spaces[0 ..< n]) } else { out.append(contentsOf: repeatElement(0x20, count: n)) }
    }

    static func decimal(_ units: Int64, _ decimals: Int) -> String {
        guard decimals > 0 else { return String(units) }
        var scale: Int64 = 1
        for _ in 0 ..< decimals { scale *= 10 }
        let magnitude = units.magnitude
        let whole = magnitude / UInt64(scale)
        var frac = String(magnitude % UInt64(scale))
        frac = String(repeating: "0", count: decimals - frac.count) + frac
        while frac.hasSuffix("0") { frac.removeLast() }
        return (units < 0 ? "-" : "") + String(whole) + (frac.isEmpty ? "" : "." + frac)
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        var s = s
        // Most strings need no escape: one copy of their bytes.
        let clean = s.withUTF8 { u -> Bool in
            for c in u where c < 0x20 || c == 0x22 || c == 0x5C { return false }
            out.append(contentsOf: u)
            return true
        }
        if clean { out.append(0x22); return }
        for c in s.utf8 {
            switch c {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0 ..< 0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 15)]])
            default: out.append(c)
            }
        }
        out.append(0x22)
    }
}

/// Building objects whose optional members are left out when nil.
struct JSONObject {
    private(set) var members: [(String, ExportJSON)] = []

    mutating func add(_ key: String, _ value: ExportJSON) { members.append((key, value)) }
    mutating func add(_ key: String, _ value: String?) { if let value { members.append((key, .string(value))) } }
    mutating func add(_ key: String, _ value: Int64?) { if let value { members.append((key, .int(value))) } }
    mutating func add(_ key: String, _ value: Int?) { if let value { members.append((key, .int(Int64(value)))) } }
    mutating func add(_ key: String, _ value: Bool?) { if let value { members.append((key, .bool(value))) } }

    var json: ExportJSON { .object(members) }
}

/// A document's text in chunks of about 1 MiB: a big export is never one huge string. With a
/// sink, every full chunk goes to it (a file) at once and only the current one is held.
public struct ExportText: @unchecked Sendable {
    public typealias Sink = ([UInt8]) -> Void
    /// The chunks not handed to the sink (all of them without one).
    public private(set) var chunks: [[UInt8]] = []
    private let sink: Sink?
    static let chunkSize = 1 << 20

    public init(sink: Sink? = nil) { self.sink = sink }
    public init(_ text: String) {
        sink = nil
        append(text)
    }

    /// Hands what is held to the sink: the end of the document.
    public mutating func flush() {
        guard let sink else { return }
        for chunk in chunks where !chunk.isEmpty { sink(chunk) }
        chunks.removeAll()
    }

    public var string: String { String(decoding: chunks.joined(), as: UTF8.self) }


    public mutating func append(bytes: [UInt8]) {
        if chunks.isEmpty || chunks[chunks.count - 1].count + bytes.count > ExportText.chunkSize {
            if let sink, let full = chunks.popLast() { sink(full) }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(max(ExportText.chunkSize, bytes.count))
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(contentsOf: bytes)
    }

    /// A whole chunk made elsewhere, after what is held: with a sink, both go to it now (no copy).
    public mutating func append(chunk: [UInt8]) {
        guard !chunk.isEmpty else { return }
        if let sink {
            flush()
            sink(chunk)
        } else {
            chunks.append(chunk)
        }
    }

    public mutating func append(_ text: String) {
        let count = text.utf8.count
        if chunks.isEmpty || chunks[chunks.count - 1].count + count > ExportText.chunkSize {
            if let sink, let full = chunks.popLast() { sink(full) }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(max(ExportText.chunkSize, count))
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(contentsOf: text.utf8)
    }

    /// How to write `container(array)` with the array's items streamed in one at a time (each
    /// rendered at its depth in the document), so they are never all held at once: `open`,
    /// the items with `separator` between them, `close`. (With no items, render
    /// `container(.array([]))` instead.)
    static func frame(_ container: (ExportJSON) -> ExportJSON, indent: Int = 0)
        -> (open: String, separator: String, close: String) {
        let slot = "\u{1}items\u{1}"
        let skeleton = container(.array([.raw(slot)])).rendered(indent: indent)
        guard let at = skeleton.range(of: slot) else { preconditionFailure("container without its items array") }
        let open = String(skeleton[..<at.lowerBound])
        let lineStart = open.lastIndex(of: "\n").map { open.index(after: $0) } ?? open.endIndex
        return (open, indent > 0 ? ",\n" + open[lineStart...] : ",", String(skeleton[at.upperBound...]))
    }
}

/// One export's text and what the CLI says about it.
public struct ExportDocument: Sendable {
    public var body: ExportText
    /// Entries, events, spans...: what `wedjat export` reports as written.
    public var count: Int
    /// Things left out and why, one line each (printed on stderr).
    public var notes: [String]

    public init(body: ExportText, count: Int, notes: [String]) {
        self.body = body; self.count = count; self.notes = notes
    }

    public init(text: String, count: Int, notes: [String]) {
        self.init(body: ExportText(text), count: count, notes: notes)
    }

    /// The whole text at once (tests, small documents).
    public var text: String { body.string }
}
