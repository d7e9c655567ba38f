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
    private var snake: [String: String] = [:]
    /// Set when something was encoded in a way this encoder does not follow (`superEncoder`).
    var unsupported = false

    func convert(_ key: String) -> String {
        if let known = snake[key] { return known }
        let converted = Self.snakeCase(key)
        snake[key] = converted
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
            // Later members of the same key replace earlier ones, as in JSONEncoder's dictionary.
            var members = o.members
            if members.count > 1 {
                var seen = Set<String>()
                if members.contains(where: { !seen.insert($0.key).inserted }) {
                    var last: [String: Int] = [:]
                    for (i, m) in members.enumerated() { last[m.key] = i }
                    members = members.enumerated().filter { last[$0.element.key] == $0.offset }.map(\.element)
                }
                members.sort { KeyCache.ordered($0.key, $1.key) }
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
