import Foundation

/// The report's JSON encoder: the bytes Foundation's `JSONEncoder` writes with
/// `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]` and `.convertToSnakeCase`, at a
/// fraction of its cost (it was a tenth of `report --format json`'s time on a big log: its
/// snake-case conversion tests every key's characters against character sets, and every value
/// goes through its generic boxing). What it cannot write the same way (a Date, URL, Data or
/// Decimal, which JSONEncoder encodes specially; a non-finite number) throws, and the caller
/// encodes with JSONEncoder. `ReportJSONEncoderTests` holds the two side by side.
enum ReportJSONEncoder {
    struct Unsupported: Error {}

    static func encode<T: Encodable>(_ value: T) throws -> String {
        let keys = KeyCache()
        let root = try Self.node(value, keyCache: keys)
        if keys.unsupported { throw Unsupported() }
        var out: [UInt8] = []
        out.reserveCapacity(1 << 16)
        root.write(into: &out, indent: 0)
        return String(decoding: out, as: UTF8.self)
    }

    fileprivate static func node<T: Encodable>(_ value: T, keyCache: KeyCache) throws -> Node {
        // The common types by their metadata (a pointer compare): the casts below cost a
        // conformance lookup each, several hundred instructions a value.
        if T.self == String.self { return .string(same(value, String.self)) }
        if T.self == Int64.self { return .literal(String(same(value, Int64.self))) }
        if T.self == Int.self { return .literal(String(same(value, Int.self))) }
        if T.self == Double.self { return try .literal(number(same(value, Double.self))) }
        if T.self == Bool.self { return .literal(same(value, Bool.self) ? "true" : "false") }
        switch keyCache.kind(of: T.self, value) {
        case .composite(let convertKeys):
            let encoder = NodeEncoder(keyCache: keyCache, convertKeys: convertKeys)
            try value.encode(to: encoder)
            return encoder.result ?? .object(ObjectBox())
        case .scalar:
            break
        }
        // As it was before the metadata checks, for every type the kinds do not settle.
        switch value {
        case let v as String: return .string(v)
        case let v as Bool: return .literal(v ? "true" : "false")
        case let v as Int: return .literal(String(v))
        case let v as Int64: return .literal(String(v))
        case let v as Int32: return .literal(String(v))
        case let v as UInt64: return .literal(String(v))
        case let v as UInt32: return .literal(String(v))
        case let v as UInt: return .literal(String(v))
        case let v as Double: return try .literal(number(v))
        case let v as Float: return try .literal(number(v))
        case let v as any BinaryInteger: return .literal("\(v)")
        case is Date, is URL, is Data, is Decimal: throw Unsupported()
        default: break
        }
        let encoder = NodeEncoder(keyCache: keyCache, convertKeys: !(value is StringKeyedDictionary))
        try value.encode(to: encoder)
        return encoder.result ?? .object(ObjectBox())
    }

    /// `value` as the type it is (`T.self == U.self`, checked by the caller).
    @inline(__always)
    private static func same<T, U>(_ value: T, _: U.Type) -> U {
        withUnsafePointer(to: value) { UnsafeRawPointer($0).load(as: U.self) }
    }

    /// What `node` does with a type, worked out once per type.
    fileprivate enum Kind {
        /// Encoded through its `encode(to:)`; `convertKeys` false for a `[String: V]`.
        case composite(convertKeys: Bool)
        /// A number, string or boolean, or a type JSONEncoder encodes specially: cast each time.
        /// (An optional is composite: it encodes its wrapped value through `node` again.)
        case scalar
    }

    /// By metadata and name: a cast to a protocol (`any BinaryInteger`) costs a scan of every
    /// conformance record of the process the first time for each type, about 100,000
    /// instructions, which a report's hundred types paid twice each.
    fileprivate static func kind<T>(of value: T) -> Kind {
        let scalars: [Any.Type] = [String.self, Bool.self, Double.self, Float.self, Int.self, Int8.self, Int16.self,
                                   Int32.self, Int64.self, UInt.self, UInt8.self, UInt16.self, UInt32.self, UInt64.self,
                                   Date.self, URL.self, Data.self, Decimal.self]
        if scalars.contains(where: { $0 == T.self }) { return .scalar }
        // `[String: V]` keeps its keys as they are; a type that only looks like one by name
        // is checked by its conformance.
        if _typeName(T.self, qualified: true).hasPrefix("Swift.Dictionary<Swift.String, ") {
            return .composite(convertKeys: !(value is StringKeyedDictionary))
        }
        return .composite(convertKeys: true)
    }

    /// As JSONEncoder writes a floating-point number: its description, without a trailing `.0`.
    static func number<F: BinaryFloatingPoint & CustomStringConvertible>(_ v: F) throws -> String {
        guard v.isFinite else { throw Unsupported() }
        var s = v.description
        if s.hasSuffix(".0") { s.removeLast(2) }
        return s
    }
}

/// `[String: V]`: JSONEncoder leaves such a dictionary's keys as they are (no snake case).
private protocol StringKeyedDictionary {}
extension Dictionary: StringKeyedDictionary where Key == String {}

/// Keys in snake case as JSONEncoder makes them, each worked out once (through JSONEncoder
/// itself: the same conversion, whatever its rules), and the order JSONEncoder sorts keys in.
private final class KeyCache {
    /// By QuickHash (a report converts a key for every member of every object).
    private var snake: [Word: String] = [:]

    private struct Word: Hashable {
        let s: String
        static func == (a: Word, b: Word) -> Bool { a.s == b.s }
        func hash(into hasher: inout Hasher) {
            var q = QuickHash()
            q.add(s)
            hasher.combine(q.value)
        }
    }
    /// Set when something was encoded in a way this encoder does not follow (`superEncoder`).
    var unsupported = false

    private var kinds: [ObjectIdentifier: ReportJSONEncoder.Kind] = [:]

    func kind<T>(of type: T.Type, _ value: T) -> ReportJSONEncoder.Kind {
        if let known = kinds[ObjectIdentifier(type)] { return known }
        let k = ReportJSONEncoder.kind(of: value)
        kinds[ObjectIdentifier(type)] = k
        return k
    }

    func convert(_ key: String) -> String {
        if let known = snake[Word(s: key)] { return known }
        let converted = Self.snakeCase(key)
        snake[Word(s: key)] = converted
        return converted
    }

    private struct OneKey: Encodable {
        let key: String
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(0, forKey: Key(stringValue: key))
        }
    }

    private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.keyEncodingStrategy = .convertToSnakeCase
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    private static func snakeCase(_ key: String) -> String {
        // `{"<converted>":0}`, decoded back (the key may need escapes).
        guard let data = try? encoder.encode(OneKey(key: key)),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let converted = object.keys.first else { return key }
        return converted
    }

    /// JSONEncoder's `.sortedKeys` order: Swift's String order (on Linux; not the case-insensitive,
    /// numeric order of Darwin's JSONSerialization).
    static func ordered(_ a: String, _ b: String) -> Bool { a < b }
}

private final class ObjectBox { var members: [(key: String, value: Node)] = [] }
private final class ArrayBox { var items: [Node] = [] }

private enum Node {
    case literal(String)
    case string(String)
    case null
    case object(ObjectBox)
    case array(ArrayBox)

    func write(into out: inout [UInt8], indent: Int) {
        switch self {
        case .literal(let s): out.append(contentsOf: s.utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            out.append(0x0A)
            for (i, item) in a.items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")); out.append(0x0A) }
                Self.spaces(indent + 2, into: &out)
                item.write(into: &out, indent: indent + 2)
            }
            out.append(0x0A)
            Self.spaces(indent, into: &out)
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            out.append(0x0A)
            // Later members of the same key replace earlier ones, as in JSONEncoder's dictionary:
            // sorted by key and then by place, the last of each run of equal keys is kept.
            var members = o.members
            if members.count > 1 {
                let order = members.indices.sorted {
                    members[$0].key != members[$1].key ? KeyCache.ordered(members[$0].key, members[$1].key) : $0 < $1
                }
                var kept: [(key: String, value: Node)] = []
                kept.reserveCapacity(order.count)
                for (n, i) in order.enumerated() where n + 1 == order.count || members[order[n + 1]].key != members[i].key {
                    kept.append(members[i])
                }
                members = kept
            }
            for (i, m) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")); out.append(0x0A) }
                Self.spaces(indent + 2, into: &out)
                Self.writeString(m.key, into: &out)
                out.append(contentsOf: " : ".utf8)
                m.value.write(into: &out, indent: indent + 2)
            }
            out.append(0x0A)
            Self.spaces(indent, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    static func spaces(_ n: Int, into out: inout [UInt8]) {
        out.append(contentsOf: repeatElement(0x20, count: n))
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escape: their bytes in one copy.
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(contentsOf: s.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        let hex = Array("0123456789abcdef".utf8)
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\\"))
            case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0 ..< 0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(c >> 4)])
                out.append(hex[Int(c & 15)])
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// Builds the node of one value through its `encode(to:)`.
private final class NodeEncoder: Encoder {
    var codingPath: [CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]
    let keyCache: KeyCache
    let convertKeys: Bool
    var result: Node?

    init(keyCache: KeyCache, convertKeys: Bool) {
        self.keyCache = keyCache
        self.convertKeys = convertKeys
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: ObjectBox
        if case .object(let existing)? = result { box = existing } else { box = ObjectBox(); result = .object(box) }
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, keyCache: keyCache, convertKeys: convertKeys))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        let box: ArrayBox
        if case .array(let existing)? = result { box = existing } else { box = ArrayBox(); result = .array(box) }
        return UnkeyedContainer(box: box, keyCache: keyCache)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleContainer(encoder: self) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: ObjectBox
    let keyCache: KeyCache
    let convertKeys: Bool
    var codingPath: [CodingKey] { [] }

    private func name(_ key: Key) -> String { convertKeys ? keyCache.convert(key.stringValue) : key.stringValue }

    mutating func encodeNil(forKey key: Key) throws { box.members.append((name(key), .null)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.members.append((name(key), try ReportJSONEncoder.node(value, keyCache: keyCache)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = ObjectBox()
        box.members.append((name(key), .object(child)))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: child, keyCache: keyCache, convertKeys: convertKeys))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let child = ArrayBox()
        box.members.append((name(key), .array(child)))
        return UnkeyedContainer(box: child, keyCache: keyCache)
    }

    mutating func superEncoder() -> Encoder { keyCache.unsupported = true; return NodeEncoder(keyCache: keyCache, convertKeys: true) }
    mutating func superEncoder(forKey key: Key) -> Encoder { superEncoder() }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: ArrayBox
    let keyCache: KeyCache
    var codingPath: [CodingKey] { [] }
    var count: Int { box.items.count }

    mutating func encodeNil() throws { box.items.append(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { box.items.append(try ReportJSONEncoder.node(value, keyCache: keyCache)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = ObjectBox()
        box.items.append(.object(child))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: child, keyCache: keyCache, convertKeys: true))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let child = ArrayBox()
        box.items.append(.array(child))
        return UnkeyedContainer(box: child, keyCache: keyCache)
    }

    mutating func superEncoder() -> Encoder { keyCache.unsupported = true; return NodeEncoder(keyCache: keyCache, convertKeys: true) }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: NodeEncoder
    var codingPath: [CodingKey] { [] }
    mutating func encodeNil() throws { encoder.result = .null }
    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.result = try ReportJSONEncoder.node(value, keyCache: encoder.keyCache)
    }
}
