/// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/), as much of it
/// as the OTLP messages `wedjat ship` sends need: varints, 64-bit fixed and double fields,
/// length-delimited strings, bytes, packed repeated fields and nested messages.
///
/// Hand-written rather than generated: OTLP's stable messages are few, only encoding is
/// needed, and it spares the CLI a protobuf runtime plus thousands of lines of generated code
/// (and CI the protoc plugin's build). The encoding is checked by decoding it with the official
/// `opentelemetry-proto` classes (Tests/Integration, test 90) and with `ProtoReader` below.
public struct ProtoWriter {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    enum WireType: UInt64 { case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5 }

    mutating func tag(_ field: Int, _ type: WireType) { varint(UInt64(field) << 3 | type.rawValue) }

    mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func fixed64(_ v: UInt64) {
        for i in 0 ..< 8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    // Fields. Proto3 leaves out default values (0, "", empty) unless `always` (a `oneof` member,
    // or a field whose presence matters).

    public mutating func uint64(_ field: Int, _ v: UInt64, always: Bool = false) {
        guard v != 0 || always else { return }
        tag(field, .varint); varint(v)
    }

    /// `int64` and enums: negative values as 10-byte two's complement varints.
    public mutating func int64(_ field: Int, _ v: Int64, always: Bool = false) {
        uint64(field, UInt64(bitPattern: v), always: always)
    }

    public mutating func bool(_ field: Int, _ v: Bool, always: Bool = false) { uint64(field, v ? 1 : 0, always: always) }

    public mutating func fixed64(_ field: Int, _ v: UInt64, always: Bool = false) {
        guard v != 0 || always else { return }
        tag(field, .fixed64); fixed64(v)
    }

    public mutating func sfixed64(_ field: Int, _ v: Int64, always: Bool = false) { fixed64(field, UInt64(bitPattern: v), always: always) }

    public mutating func double(_ field: Int, _ v: Double, always: Bool = false) {
        guard v != 0 || always else { return }
        tag(field, .fixed64); fixed64(v.bitPattern)
    }

    public mutating func bytes(_ field: Int, _ b: [UInt8], always: Bool = false) {
        guard !b.isEmpty || always else { return }
        tag(field, .lengthDelimited); varint(UInt64(b.count)); bytes += b
    }

    public mutating func string(_ field: Int, _ s: String, always: Bool = false) {
        guard !s.isEmpty || always else { return }
        tag(field, .lengthDelimited); varint(UInt64(s.utf8.count)); bytes += s.utf8
    }

    /// A nested message (always written: an empty message still says the field is set).
    /// Written in place: a one-byte length first, widened (the content moved) only for a
    /// message of 128 bytes or more, so small ones (attributes) cost no copy at all.
    public mutating func message(_ field: Int, _ build: (inout ProtoWriter) -> Void) {
        tag(field, .lengthDelimited)
        let lengthAt = bytes.count
        bytes.append(0)
        build(&self)
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
        } else {
            var prefix = ProtoWriter()
            prefix.varint(UInt64(length))
            bytes.replaceSubrange(lengthAt ... lengthAt, with: prefix.bytes)
        }
    }

    public mutating func packedFixed64(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        tag(field, .lengthDelimited); varint(UInt64(values.count * 8))
        for v in values { fixed64(v) }
    }

    public mutating func packedDouble(_ field: Int, _ values: [Double]) { packedFixed64(field, values.map(\.bitPattern)) }
}

/// Reads the wire format back: fields by number, for checking what `ProtoWriter` made and for
/// the few fields of a collector's answer (`partial_success`).
public struct ProtoReader {
    public enum Value: Equatable {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes([UInt8])
        case fixed32(UInt32)

        public var uint64: UInt64? {
            switch self { case .varint(let v), .fixed64(let v): v; case .fixed32(let v): UInt64(v); case .bytes: nil }
        }
        public var bytesValue: [UInt8]? { if case .bytes(let b) = self { b } else { nil } }
        public var string: String? { bytesValue.map { String(decoding: $0, as: UTF8.self) } }
        public var double: Double? { if case .fixed64(let v) = self { Double(bitPattern: v) } else { nil } }
        public var message: ProtoReader? { bytesValue.flatMap { try? ProtoReader($0) } }
    }

    public enum Failure: Error { case truncated, badWireType(UInt64) }

    /// Field number and value, in order.
    public private(set) var fields: [(Int, Value)] = []

    public init(_ bytes: [UInt8]) throws(Failure) {
        var i = 0
        func varint() throws(Failure) -> UInt64 {
            var v: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard i < bytes.count, shift < 64 else { throw .truncated }
                let b = bytes[i]; i += 1
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
            }
        }
        func fixed(_ n: Int) throws(Failure) -> UInt64 {
            guard i + n <= bytes.count else { throw .truncated }
            var v: UInt64 = 0
            for k in 0 ..< n { v |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
            i += n
            return v
        }
        while i < bytes.count {
            let key = try varint()
            let field = Int(key >> 3)
            switch key & 7 {
            case 0: fields.append((field, .varint(try varint())))
            case 1: fields.append((field, .fixed64(try fixed(8))))
            case 2:
                let n = Int(try varint())
                guard n >= 0, i + n <= bytes.count else { throw .truncated }
                fields.append((field, .bytes(Array(bytes[i ..< i + n]))))
                i += n
            case 5: fields.append((field, .fixed32(UInt32(try fixed(4)))))
            default: throw .badWireType(key & 7)
            }
        }
    }

    public func all(_ field: Int) -> [Value] { fields.filter { $0.0 == field }.map(\.1) }
    public func first(_ field: Int) -> Value? { fields.first { $0.0 == field }?.1 }
}
