// HPACK (RFC 7541) header-block decoding for the HTTP/2 decoder, by libnghttp2's
// nghttp2_hd_inflate_*: a well-kept decoder that is on every machine that has curl. It is
// loaded with dlopen the first time a connection needs it (CWedjatNghttp2), never linked.
// One HPACKDecoder per direction of a connection: each holds that direction's dynamic table.
import CWedjatNghttp2
#if canImport(Glibc)
import Glibc
#endif

/// The libnghttp2 functions, once loaded.
public struct NGHTTP2Library: @unchecked Sendable {
    let api: UnsafePointer<wj_nghttp2_api>

    /// libnghttp2.so.14, loaded on first use; nil when it cannot be (not installed).
    public static var shared: NGHTTP2Library? {
        wj_nghttp2_load().map { NGHTTP2Library(api: $0) }
    }

    /// Another file name (tests: a library that is not there). Not cached.
    public static func open(_ soname: String) -> NGHTTP2Library? {
        wj_nghttp2_open(soname).map { NGHTTP2Library(api: $0) }
    }

    /// libnghttp2's own version string ("1.52.0").
    public var version: String { api.pointee.version.map { String(cString: $0) } ?? "?" }
    public var hasEncoder: Bool {
        api.pointee.deflate_new != nil && api.pointee.deflate_hd != nil && api.pointee.deflate_bound != nil
    }
}

/// One direction's HPACK decoding context (its dynamic table). Not thread-safe.
public final class HPACKDecoder {
    let api: UnsafePointer<wj_nghttp2_api>
    private var inflater: OpaquePointer?
    private var pool: OpaquePointer?     // the inflater's allocations (wj_nghttp2_inflater_new)
    private var inBlock = false
    /// The largest dynamic table size the decoder's side allowed (SETTINGS_HEADER_TABLE_SIZE;
    /// 4096 until it says otherwise).
    public private(set) var maxTableSize: UInt32 = 4096
    private var pendingMax: UInt32?
    /// Table insertions not yet given to libnghttp2 (see decodeBlock).
    private var deferred = DeferredInsertions()
    /// The table's current limit as libnghttp2 holds it; nil: insertions are never deferred.
    private var tableLimit: Int?
    private var scratch: [UInt8] = []       // a wanted insertion, rewritten not to insert
    /// The last wanted fields decoded from Huffman-coded literals, by their coded bytes.
    private var recent = RecentFields()
    /// The last whole block that changed nothing in libnghttp2's table, with what decoding it
    /// gave.
    private var memo = BlockMemo()
    /// Counts what may change the table as a reference sees it: bytes given to libnghttp2
    /// (but for a literal that does not index, rewritten or alone), insertions deferred.
    private var tableVersion = 0
    /// The block decodeBlock last walked: a new number for each (a repeat keeps it). With
    /// `repeated` and `remembered`, a caller can keep what a block meant to it and, when the
    /// same bytes come again, use that instead of its fields (decodeBlock's fieldsOfRepeat).
    public private(set) var blockSerial = 0
    /// The last decodeBlock was a repeat of the block `blockSerial` (its fields given only if
    /// asked).
    public private(set) var repeated = false
    /// The block `blockSerial` is remembered: its bytes again are a repeat.
    public var remembered: Bool { memo.kept }

    public init?(_ lib: NGHTTP2Library) {
        api = lib.api
        var p: OpaquePointer?
        var pool: OpaquePointer?
        guard wj_nghttp2_inflater_new(api, &p, &pool) == 0, let p else { return nil }
        inflater = p
        self.pool = pool
        readTableLimit()
    }

    deinit { release() }

    /// The inflater and its pool let go (the context is unusable from now on).
    private func release() {
        deferred.free()
        recent.free()
        memo.free()
        if let inflater { api.pointee.inflate_del(inflater) }
        inflater = nil
        wj_nghttp2_pool_free(pool)
        pool = nil
    }

    /// The decoder's side advertised SETTINGS_HEADER_TABLE_SIZE = `size`. A larger limit is
    /// applied at once (between blocks): it only lets the encoder signal a larger table, which
    /// it does in the blocks themselves. A smaller one is not applied: the encoder must then
    /// signal the smaller size itself, which decodes the same, and the decoder does not hold
    /// the peer to a limit the peer may not have acknowledged yet.
    public func allowTableSize(_ size: UInt32) {
        guard size > maxTableSize else { return }
        if inBlock { pendingMax = max(pendingMax ?? 0, size); return }
        apply(size)
    }

    private func apply(_ size: UInt32) {
        guard catchUp() else { return }
        tableVersion &+= 1
        if api.pointee.inflate_change_table_size(inflater, Int(size)) == 0 { maxTableSize = size }
        readTableLimit()
    }

    private func readTableLimit() {
        guard let inflater, let f = api.pointee.inflate_get_max_dynamic_table_size else { tableLimit = nil; return }
        tableLimit = f(inflater)
    }

    /// Decodes the next `count` bytes of a header block (a fragment may end anywhere: the
    /// decoder keeps a partial field); `final` when they end the block. Calls `field` with each
    /// decoded field's name and value (valid only during the call). False on a decoding error:
    /// the context is then unusable (the dynamic table can no longer be trusted).
    public func decode(_ p: UnsafePointer<UInt8>?, _ count: Int, final: Bool,
                       _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        if !inBlock { guard catchUp() else { return false } }
        tableVersion &+= 1
        let ok = inflate(p, count, final: final, field)
        if ok && !inBlock { readTableLimit() }
        return ok
    }

    /// libnghttp2's decoding of the next bytes, as they are.
    private func inflate(_ p: UnsafePointer<UInt8>?, _ count: Int, final: Bool,
                         _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        guard let inflater else { return false }
        inBlock = true
        var nv = wj_nghttp2_nv()
        var inp = p
        var left = count
        while true {
            var flags: Int32 = 0
            let rv = api.pointee.inflate_hd(inflater, &nv, &flags, inp, left, final ? 1 : 0)
            if rv < 0 || rv > left {
                release()
                return false
            }
            if rv > 0 { inp = inp.map { $0 + rv }; left -= rv }
            if flags & Int32(WJ_NGHTTP2_HD_INFLATE_EMIT) != 0 {
                field(UnsafeBufferPointer(start: nv.name, count: nv.namelen),
                      UnsafeBufferPointer(start: nv.value, count: nv.valuelen))
            }
            if flags & Int32(WJ_NGHTTP2_HD_INFLATE_FINAL) != 0 {
                _ = api.pointee.inflate_end_headers(inflater)
                inBlock = false
                if let m = pendingMax { pendingMax = nil; apply(m) }
                return true
            }
            if flags & Int32(WJ_NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0 {
                // A final block must end in FINAL; otherwise more input is awaited.
                if final {
                    release()
                    return false
                }
                return true
            }
        }
    }

    var handle: OpaquePointer? { inflater }

    /// Gives up: the context is unusable from now on.
    func fail() -> Bool {
        release()
        return false
    }

    /// Whether decoding failed (the context is gone).
    public var failed: Bool { inflater == nil }

    /// Current dynamic table size in RFC 7541 bytes (entries + 32 each); nil if unknown.
    public var dynamicTableSize: Int? {
        guard catchUp(), let inflater, let f = api.pointee.inflate_get_dynamic_table_size else { return nil }
        return f(inflater)
    }

    /// The dynamic table, newest first (tests).
    public var dynamicTable: [(String, String)]? {
        guard catchUp(), let inflater, let count = api.pointee.inflate_get_num_table_entries,
              let entry = api.pointee.inflate_get_table_entry else { return nil }
        let n = count(inflater)
        guard n > 61 else { return [] }
        var out: [(String, String)] = []
        for i in 62...n {   // 1-based; 1...61 is the static table
            guard let e = entry(inflater, i) else { break }
            out.append((String(decoding: UnsafeBufferPointer(start: e.pointee.name, count: e.pointee.namelen), as: UTF8.self),
                        String(decoding: UnsafeBufferPointer(start: e.pointee.value, count: e.pointee.valuelen), as: UTF8.self)))
        }
        return out
    }
}

/// HPACK encoding by libnghttp2's deflater: for tests, benchmarks and the fuzz target's
/// seeds; the agent uses it once, for the Huffman codes of the names it reads
/// (HPACKStatic.huffmanWanted).
public final class HPACKEncoder {
    let api: UnsafePointer<wj_nghttp2_api>
    private var deflater: OpaquePointer?

    public init?(_ lib: NGHTTP2Library, maxTableSize: Int = 4096) {
        api = lib.api
        guard lib.hasEncoder, let new = api.pointee.deflate_new else { return nil }
        var p: OpaquePointer?
        guard new(&p, maxTableSize) == 0, let p else { return nil }
        deflater = p
    }

    deinit {
        if let deflater, let del = api.pointee.deflate_del { del(deflater) }
    }

    public func changeTableSize(_ size: Int) {
        if let f = api.pointee.deflate_change_table_size { _ = f(deflater, size) }
    }

    /// One header block. Names must be lowercase (HTTP/2). neverIndex: every field as a
    /// literal never indexed (what nginx does with its response fields).
    public func encode(_ fields: [(String, String)], neverIndex: Bool = false) -> [UInt8] {
        var names = fields.map { Array($0.0.utf8) }
        var values = fields.map { Array($0.1.utf8) }
        var out: [UInt8] = []
        names.withUnsafeMutableBufferPointer { nb in
            values.withUnsafeMutableBufferPointer { vb in
                var nvs: [wj_nghttp2_nv] = []
                var keep: [UnsafeMutablePointer<UInt8>] = []
                for i in 0..<fields.count {
                    let n = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, nb[i].count))
                    n.assignBits(from: nb[i], count: nb[i].count)
                    let v = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, vb[i].count))
                    v.assignBits(from: vb[i], count: vb[i].count)
                    keep.append(n)
                    keep.append(v)
                    nvs.append(wj_nghttp2_nv(name: n, value: v, namelen: nb[i].count, valuelen: vb[i].count, flags: neverIndex ? 1 : 0))
                }
                let bound = api.pointee.deflate_bound!(deflater, nvs, nvs.count)
                out = [UInt8](repeating: 0, count: bound)
                let n = out.withUnsafeMutableBufferPointer { api.pointee.deflate_hd!(deflater, $0.baseAddress, bound, nvs, nvs.count) }
                out.removeSubrange(max(0, n)...)
                for p in keep { p.deallocate() }
            }
        }
        return out
    }
}

// MARK: - the fast path for whole blocks

/// RFC 7541 Appendix A.
enum HPACKStatic {
    static let table: [(StaticString, StaticString)] = [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""), ("cache-control", ""),
        ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
        ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""), ("date", ""), ("etag", ""),
        ("expect", ""), ("expires", ""), ("from", ""), ("host", ""), ("if-match", ""), ("if-modified-since", ""),
        ("if-none-match", ""), ("if-range", ""), ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""),
        ("location", ""), ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""),
        ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""), ("set-cookie", ""),
        ("strict-transport-security", ""), ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""),
        ("www-authenticate", ""),
    ]

    /// The names whose values the HTTP/2 decoder reads (HTTP2Decoder's `field`): every other
    /// field of a whole block may be passed over undecoded.
    static let wantedNames: [String] = [":authority", ":method", ":path", ":status", "host", "user-agent",
                                        "content-type", "content-length", "grpc-status", "grpc-message"]
    private static let wantedIndex: [Bool] = table.map { entry in
        wantedNames.contains(String(decoding: UnsafeBufferPointer(start: entry.0.utf8Start, count: entry.0.utf8CodeUnitCount), as: UTF8.self))
    }

    /// Whether the static name at 1-based `index` is wanted.
    static func wanted(_ index: Int) -> Bool { index >= 1 && index <= 61 && wantedIndex[index - 1] }

    static func nameLength(_ index: Int) -> Int { table[index - 1].0.utf8CodeUnitCount }

    static let wantedRaw = ByteStrings(wantedNames.map { Array($0.utf8) })

    /// The wanted names as HPACK's Huffman code writes them (RFC 7541 Appendix B, padded with
    /// ones), taken from libnghttp2's own encoder; nil when it has none (then a Huffman-coded
    /// literal name is decoded to be read).
    static let huffmanWanted: ByteStrings? = {
        guard let lib = NGHTTP2Library.shared, let enc = HPACKEncoder(lib) else { return nil }
        var out: [[UInt8]] = []
        for name in wantedNames {
            // A field named "x" whose value is the name, never indexed: 0x10, "x" raw, then the value.
            let block = enc.encode([("x", name)], neverIndex: true)
            guard block.count >= 4, block[0] == 0x10, block[1] == 0x01, block[2] == UInt8(ascii: "x"),
                  block[3] & 0x80 != 0, Int(block[3] & 0x7f) == block.count - 4 else { return nil }
            out.append(Array(block[4...]))
        }
        return ByteStrings(out)
    }()
}

/// A few short byte strings, looked up by length first (most names are no wanted name's length).
struct ByteStrings: Sendable {
    private let bytes: [UInt8]
    private let spans: [(at: Int, count: Int)]
    private let lengths: UInt64   // bit n: some string has n bytes (n < 64)

    init(_ strings: [[UInt8]]) {
        // The spans' labels as the property's: an array of unlabelled tuples assigned to it is a
        // collection cast, which the embedded agent cannot make.
        var b: [UInt8] = [], s: [(at: Int, count: Int)] = [], l: UInt64 = 0
        for x in strings {
            s.append((b.count, x.count))
            b += x
            if x.count < 64 { l |= 1 << UInt64(x.count) }
        }
        bytes = b
        spans = s
        lengths = l
    }

    func contains(_ q: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard count < 64, lengths & (1 << UInt64(count)) != 0 else { return false }
        return bytes.withUnsafeBufferPointer { all in
            for span in spans where span.count == count {
                if memcmp(all.baseAddress! + span.at, q, count) == 0 {
                    return true
                }
            }
            return false
        }
    }
}

extension HPACKDecoder {
    /// A whole header block in one buffer, with the fields nobody reads passed over undecoded:
    /// - a static-table index is looked up here, a dynamic one read from libnghttp2's table;
    /// - a literal that does not index, whose name (static, or literal and compared as it is
    ///   coded) is not wanted, is passed over;
    /// - a literal that indexes (a table insertion) with a static or literal name is deferred:
    ///   its bytes are kept and given to libnghttp2 only when the table is next needed (an
    ///   index into it, a literal naming one of its entries, a size update, a block decoded in
    ///   fragments). Its value, if wanted, is decoded now from the same bytes rewritten as a
    ///   literal that does not index. Deferred insertions that are certainly evicted before
    ///   the table is needed (the ones after them fill the table limit with their least sizes)
    ///   are dropped undecoded: an encoder that inserts and never refers (nginx inserts every
    ///   response field) costs a length check per field;
    /// - every other run of the block goes to libnghttp2 as it is.
    /// `field` sees the fields in order, less the passed-over ones. The dynamic table, once
    /// caught up, is the encoder's. False on a decoding error, as decode.
    /// `fieldsOfRepeat` false: a repeat of the remembered block gives no fields (`repeated`
    /// says it was one).
    public func decodeBlock(_ p: UnsafePointer<UInt8>, _ n: Int, fieldsOfRepeat: Bool = true,
                            _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        guard inflater != nil else { return false }
        if let limit = tableLimit, memo.repeats(p, n, limit: limit, tableVersion: tableVersion) {
            // The same bytes as the last block, which changed nothing in libnghttp2's table (and
            // read from it only if it is as it was then): the same fields and the same
            // insertions (a server's responses within a second, a client's same requests).
            repeated = true
            if fieldsOfRepeat { memo.giveFields(field) }
            guard let ins = memo.insertions else { return true }
            return deferAll(ins.bytes, memo.insertTotal, ins.each, memo.insertCount, limit: limit)
        }
        repeated = false
        blockSerial &+= 1
        memo.begin(p, n, limit: tableLimit, tableVersion: tableVersion)
        let ok = walk(p, n) { name, value in
            memo.keepField(name, value)
            field(name, value)
        }
        memo.end(ok, tableVersion: tableVersion)
        return ok
    }

    /// decodeBlock's walk over the representations (the memo told what it reads).
    private func walk(_ p: UnsafePointer<UInt8>, _ n: Int,
                      _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        var i = 0
        var run = 0            // start of the bytes not yet handed to libnghttp2
        @inline(__always) func flush(_ end: Int) -> Bool {
            guard end > run else { return true }
            tableVersion &+= 1
            let ok = inflate(p + run, end - run, final: true, field)
            run = end
            return ok
        }
        /// An HPACK integer with an N-bit prefix at i; nil when malformed or cut.
        @inline(__always) func integer(_ prefix: Int) -> Int? {
            let mask = (1 << prefix) - 1
            var v = Int(p[i]) & mask
            i += 1
            if v < mask { return v }
            var shift = 0
            while i < n {
                let b = Int(p[i])
                i += 1
                v += (b & 0x7f) << shift
                if b & 0x80 == 0 { return v }
                shift += 7
                if shift > 28 { return nil }
            }
            return nil
        }
        /// A string literal at i: where its bytes start, how many, Huffman-coded or not.
        @inline(__always) func string() -> (at: Int, count: Int, huffman: Bool)? {
            guard i < n else { return nil }
            let huffman = p[i] & 0x80 != 0
            guard let len = integer(7), len <= n - i else { return nil }
            defer { i += len }
            return (i, len, huffman)
        }
        /// Up to here, libnghttp2 now: for a representation that reads or changes the table.
        @inline(__always) func tableNeeded(_ start: Int) -> Bool { flush(start) && catchUp() }
        while i < n {
            let start = i
            let b = p[i]
            if b & 0x80 != 0 {
                // Indexed field: static ones here, the dynamic table's read from libnghttp2.
                guard let index = integer(7) else { return false }
                if index >= 1 && index <= 61 {
                    guard flush(start) else { return false }
                    run = i
                    guard HPACKStatic.wanted(index) else { continue }   // (:scheme, ...)
                    let (name, value) = HPACKStatic.table[index - 1]
                    field(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount),
                          UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
                } else if index > 61, let entry = api.pointee.inflate_get_table_entry {
                    // (an index changes nothing: no decoding pass)
                    memo.readsTable()
                    guard tableNeeded(start), let inflater = handle else { return false }
                    run = i
                    guard let e = entry(inflater, index) else { return fail() }
                    field(UnsafeBufferPointer(start: e.pointee.name, count: e.pointee.namelen),
                          UnsafeBufferPointer(start: e.pointee.value, count: e.pointee.valuelen))
                } else {
                    memo.spoil()
                    guard tableNeeded(start), flush(i) else { return false }
                }
                continue
            }
            if b & 0xe0 == 0x20 {
                // A table size update: libnghttp2 at once, the table caught up first.
                memo.spoil()
                guard integer(5) != nil, tableNeeded(start), flush(i) else { return false }
                readTableLimit()
                continue
            }
            let inserts = b & 0x40 != 0
            guard let nameIndex = integer(inserts ? 6 : 4) else { return false }
            let strings = i   // the name's string (if literal) and the value's, to the end
            var name: (at: Int, count: Int, huffman: Bool)?
            if nameIndex == 0 {
                guard let s = string() else { return false }
                name = s
            }
            guard let value = string() else { return false }
            if nameIndex > 61 {
                // Named by a dynamic entry: reads the table as it is here.
                memo.spoil()
                guard tableNeeded(start), flush(i) else { return false }
                continue
            }
            let wanted = name.map { wantedLiteralName(p + $0.at, $0.count, huffman: $0.huffman) } ?? HPACKStatic.wanted(nameIndex)
            // A wanted field without Huffman coding is read as it is.
            let plain = wanted && !value.huffman && !(name?.huffman ?? false)
            @inline(__always) func givePlain() {
                let v = UnsafeBufferPointer(start: p + value.at, count: value.count)
                if let name {
                    field(UnsafeBufferPointer(start: p + name.at, count: name.count), v)
                } else {
                    let s = HPACKStatic.table[nameIndex - 1].0
                    field(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount), v)
                }
            }
            if !inserts {
                // Not indexed (0000) or never indexed (0001): the table is untouched.
                guard flush(start) else { return false }
                run = i   // passed over, or read here
                if plain {
                    givePlain()
                } else if wanted {
                    guard decodeOne(UnsafeBufferPointer(start: p + start, count: i - start), field) else { return false }
                }
                continue
            }
            guard let limit = tableLimit else { memo.spoil(); continue }   // no deferring: libnghttp2 in the run
            guard flush(start) else { return false }
            run = i
            if plain {
                givePlain()
            } else if wanted {
                // Its field now, from the same bytes as a literal that does not index.
                scratch.removeAll(keepingCapacity: true)
                if nameIndex < 15 {
                    scratch.append(UInt8(nameIndex))
                } else {
                    scratch.append(0x0f)
                    var v = nameIndex - 15
                    while v >= 128 { scratch.append(UInt8(v & 0x7f | 0x80)); v >>= 7 }
                    scratch.append(UInt8(v))
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + strings, count: i - strings))
                let ok = scratch.withUnsafeBufferPointer { decodeOne($0, field) }
                guard ok else { return false }
            }
            let least = 32 + (name.map { Self.leastLength($0.count, huffman: $0.huffman) } ?? HPACKStatic.nameLength(nameIndex)) +
                Self.leastLength(value.count, huffman: value.huffman)
            memo.keepInsert(UnsafeBufferPointer(start: p + start, count: i - start), least: least)
            guard defer_(UnsafeBufferPointer(start: p + start, count: i - start), least: least, limit: limit) else { return false }
        }
        return flush(n)
    }

    /// The fewest bytes `count` coded bytes decode to (a Huffman code is at most 30 bits a
    /// symbol, and up to 7 bits of padding end the string).
    static func leastLength(_ count: Int, huffman: Bool) -> Int {
        huffman ? max(0, (count * 8 - 7 + 29) / 30) : count
    }

    private func wantedLiteralName(_ q: UnsafePointer<UInt8>, _ count: Int, huffman: Bool) -> Bool {
        guard huffman else { return HPACKStatic.wantedRaw.contains(q, count) }
        guard let forms = HPACKStatic.huffmanWanted else { return true }
        return forms.contains(q, count)
    }

    /// One literal that does not index, with a static or literal name (its field is a
    /// function of its bytes alone): from the recent ones when it was decoded lately, else by
    /// libnghttp2 (and kept). nginx's `content-type` is the same bytes in every response.
    private func decodeOne(_ rep: UnsafeBufferPointer<UInt8>,
                           _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        if recent.give(rep, field) { return true }
        return inflate(rep.baseAddress, rep.count, final: true) { name, value in
            recent.keep(rep, name, value)
            field(name, value)
        }
    }

    /// Keeps a table insertion for later (the ones it certainly evicts dropped). Where there
    /// is no room, the ones kept are given to libnghttp2 first, and one too large for the
    /// room goes there at once.
    private func defer_(_ rep: UnsafeBufferPointer<UInt8>, least: Int, limit: Int) -> Bool {
        tableVersion &+= 1
        if deferred.append(rep, least: least, limit: limit) { return true }
        guard catchUp() else { return false }
        if deferred.append(rep, least: least, limit: limit) { return true }
        return inflate(rep.baseAddress, rep.count, final: true) { _, _ in }
    }

    /// A remembered block's insertions kept for later at once; one by one where they do not fit.
    private func deferAll(_ reps: UnsafePointer<UInt8>, _ total: Int, _ each: UnsafePointer<(length: Int32, least: Int32)>,
                          _ k: Int, limit: Int) -> Bool {
        tableVersion &+= 1
        if deferred.append(reps, total, each, k, limit: limit) { return true }
        var at = 0
        for j in 0..<k {
            let n = Int(each[j].length)
            guard defer_(UnsafeBufferPointer(start: reps + at, count: n), least: Int(each[j].least), limit: limit) else { return false }
            at += n
        }
        return true
    }

    /// The deferred insertions given to libnghttp2 (their fields unread): the table as the
    /// encoder has it. False on a decoding error.
    func catchUp() -> Bool {
        guard let pending = deferred.pending else { return true }
        tableVersion &+= 1
        let ok = inflate(pending.baseAddress, pending.count, final: true) { _, _ in }
        deferred.clear()
        return ok
    }

    /// Bytes of deferred insertions kept (tests).
    var deferredBytes: Int { deferred.byteCount }
}

/// Table insertions kept for HPACKDecoder.decodeBlock: their representations in order, each
/// with its length and the least size its entry can have; the oldest dropped once the newer
/// ones' least sizes fill the table limit (evicted by then whatever their real sizes). Plain
/// buffers that grow to what is needed, at most `maxBytes` (a decoder per direction of every
/// connection): a 4,096-byte table rarely needs 2 KiB (nginx's responses: 1.3).
struct DeferredInsertions {
    static let maxBytes = 8192, maxEntries = 1024
    private var bytes: UnsafeMutablePointer<UInt8>?
    private var cap = 0, start = 0, end = 0
    private var entries: UnsafeMutablePointer<(length: Int32, least: Int32)>?
    private var entryCap = 0, first = 0, last = 0
    private var leastSum = 0

    var byteCount: Int { end - start }

    /// The kept representations, oldest first; nil when there are none.
    var pending: UnsafeBufferPointer<UInt8>? {
        guard last > first, let bytes else { return nil }
        return UnsafeBufferPointer(start: bytes + start, count: end - start)
    }

    /// False when it does not fit.
    mutating func append(_ rep: UnsafeBufferPointer<UInt8>, least: Int, limit: Int) -> Bool {
        let n = rep.count
        guard let src = rep.baseAddress, n > 0 else { return true }
        guard reserve(n, 1) else { return false }
        (bytes! + end).assignBits(from: src, count: n)
        end += n
        entries![last] = (Int32(n), Int32(clamping: least))
        last += 1
        leastSum += least
        dropEvicted(limit)
        return true
    }

    /// Several at once (a remembered block's): their bytes one after another, and each one's
    /// length and least size. False when they do not fit.
    mutating func append(_ reps: UnsafePointer<UInt8>, _ total: Int, _ each: UnsafePointer<(length: Int32, least: Int32)>,
                         _ k: Int, limit: Int) -> Bool {
        guard total > 0, k > 0 else { return true }
        guard reserve(total, k) else { return false }
        (bytes! + end).assignBits(from: reps, count: total)
        end += total
        (entries! + last).assignBits(from: each, count: k)
        last += k
        for j in 0..<k { leastSum += Int(each[j].least) }
        dropEvicted(limit)
        return true
    }

    /// The oldest dropped while the newer ones' least sizes fill the limit.
    private mutating func dropEvicted(_ limit: Int) {
        guard let entries else { return }
        while last - first > 1 && leastSum - Int(entries[first].least) >= limit {
            leastSum -= Int(entries[first].least)
            start += Int(entries[first].length)
            first += 1
        }
    }

    /// Room for n more bytes and k more entries (the kept ones moved to the front, the buffers
    /// grown); false when they do not fit.
    private mutating func reserve(_ n: Int, _ k: Int) -> Bool {
        if end + n > cap {
            if start > 0, let bytes {   // the kept ones to the front
                UnsafeMutableRawPointer(bytes).copyMemory(from: bytes + start, byteCount: end - start)
                end -= start
                start = 0
            }
            if end + n > cap {
                guard end + n <= Self.maxBytes else { return false }
                let newCap = min(Self.maxBytes, max(512, cap * 2, end + n))
                let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCap)
                if let bytes { grown.assignBits(from: bytes, count: end); bytes.deallocate() }
                bytes = grown
                cap = newCap
            }
        }
        if last + k > entryCap {
            if first > 0, let entries {
                (entries).assignBits(from: entries + first, count: last - first)
                last -= first
                first = 0
            }
            if last + k > entryCap {
                guard last + k <= Self.maxEntries else { return false }
                let newCap = min(Self.maxEntries, max(32, entryCap * 2, last + k))
                let grown = UnsafeMutablePointer<(length: Int32, least: Int32)>.allocate(capacity: newCap)
                if let entries { grown.assignBits(from: entries, count: last); entries.deallocate() }
                entries = grown
                entryCap = newCap
            }
        }
        return true
    }

    mutating func clear() {
        start = 0; end = 0; first = 0; last = 0; leastSum = 0
    }

    mutating func free() {
        bytes?.deallocate()
        entries?.deallocate()
        bytes = nil
        entries = nil
        cap = 0
        entryCap = 0
        clear()
    }
}

/// The last few wanted fields decoded from literals that do not index, by the literal's
/// bytes: a Huffman-coded value is decoded by libnghttp2 once, not again in every message
/// that repeats it. Four slots of at most 256 bytes, replaced in turn.
struct RecentFields {
    private static let slots = 4, slotBytes = 256
    private var store: UnsafeMutablePointer<UInt8>?
    private var lengths: [(key: Int, name: Int, value: Int)] = Array(repeating: (0, 0, 0), count: 4)
    private var next = 0

    func give(_ rep: UnsafeBufferPointer<UInt8>,
              _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        guard let store else { return false }
        for k in 0..<Self.slots where lengths[k].key == rep.count && rep.count > 0 {
            let slot = store + k * Self.slotBytes
            if let r = rep.baseAddress, memcmp(slot, r, rep.count) == 0 {
                let l = lengths[k]
                field(UnsafeBufferPointer(start: slot + l.key, count: l.name),
                      UnsafeBufferPointer(start: slot + l.key + l.name, count: l.value))
                return true
            }
        }
        return false
    }

    mutating func keep(_ rep: UnsafeBufferPointer<UInt8>, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        guard rep.count > 0, rep.count + name.count + value.count <= Self.slotBytes else { return }
        if store == nil { store = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.slots * Self.slotBytes) }
        let slot = store! + next * Self.slotBytes
        var at = 0
        for part in [rep, name, value] {
            if let b = part.baseAddress, part.count > 0 { (slot + at).assignBits(from: b, count: part.count) }
            at += part.count
        }
        lengths[next] = (rep.count, name.count, value.count)
        next = (next + 1) % Self.slots
    }

    mutating func free() {
        store?.deallocate()
        store = nil
        for k in 0..<Self.slots { lengths[k] = (0, 0, 0) }
    }
}

/// HPACKDecoder.decodeBlock's memory of the last block that read nothing of the table (no
/// dynamic index or name, no size update): its bytes, the fields it gave and the insertions it
/// deferred. The same bytes again, under the same table limit, give the same (an encoder that
/// writes the same response fields within a second: nginx's `date` changes once a second).
/// Blocks of at most 512 bytes, 16 fields (names and values 1 KiB), 32 insertions.
struct BlockMemo {
    private static let maxBlock = 512, maxFields = 16, maxFieldBytes = 1024, maxInserts = 32
    private var block: UnsafeMutablePointer<UInt8>?
    private var bytes: UnsafeMutablePointer<UInt8>?
    private var fields: UnsafeMutablePointer<(name: Int, nameCount: Int, value: Int, valueCount: Int)>?
    private var inserts: UnsafeMutablePointer<(length: Int32, least: Int32)>?
    private var insertBytes: UnsafeMutablePointer<UInt8>?   // the insertions' bytes, one after another
    private(set) var insertTotal = 0
    private var blockCount = -1          // -1: nothing kept
    private var limit = 0
    private var fieldCount = 0, bytesUsed = 0
    private(set) var insertCount = 0
    private var keeping = false
    private var walked = 0               // the block being walked: its size
    private var reads = false            // it read the table (a dynamic index)
    private var version = 0              // the table version it was walked at (and left)

    var kept: Bool { blockCount >= 0 }

    func repeats(_ p: UnsafePointer<UInt8>, _ n: Int, limit: Int, tableVersion: Int) -> Bool {
        guard n == blockCount, limit == self.limit, !reads || tableVersion == version, let block else { return false }
        return memcmp(block, p, n) == 0
    }

    func giveFields(_ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        guard let bytes, let fields else { return }
        for k in 0..<fieldCount {
            let f = fields[k]
            field(UnsafeBufferPointer(start: bytes + f.name, count: f.nameCount),
                  UnsafeBufferPointer(start: bytes + f.value, count: f.valueCount))
        }
    }

    /// The insertions: their bytes one after another, and each one's length and least size.
    var insertions: (bytes: UnsafePointer<UInt8>, each: UnsafePointer<(length: Int32, least: Int32)>)? {
        guard insertCount > 0, let insertBytes, let inserts else { return nil }
        return (UnsafePointer(insertBytes), UnsafePointer(inserts))
    }

    mutating func begin(_ p: UnsafePointer<UInt8>, _ n: Int, limit: Int?, tableVersion: Int) {
        blockCount = -1
        reads = false
        version = tableVersion
        fieldCount = 0
        bytesUsed = 0
        insertCount = 0
        insertTotal = 0
        keeping = limit != nil && n <= Self.maxBlock
        guard keeping, let limit else { return }
        if block == nil {
            block = .allocate(capacity: Self.maxBlock)
            bytes = .allocate(capacity: Self.maxFieldBytes)
            fields = .allocate(capacity: Self.maxFields)
            inserts = .allocate(capacity: Self.maxInserts)
            insertBytes = .allocate(capacity: Self.maxBlock)
        }
        block!.assignBits(from: p, count: n)
        self.limit = limit
        walked = n
    }

    mutating func spoil() { keeping = false }

    /// The block reads the table: it is given again only while the table stays as it is now.
    mutating func readsTable() { reads = true }

    mutating func keepField(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        guard keeping else { return }
        guard fieldCount < Self.maxFields, bytesUsed + name.count + value.count <= Self.maxFieldBytes,
              let bytes, let fields else { keeping = false; return }
        if let b = name.baseAddress, name.count > 0 { (bytes + bytesUsed).assignBits(from: b, count: name.count) }
        if let b = value.baseAddress, value.count > 0 { (bytes + bytesUsed + name.count).assignBits(from: b, count: value.count) }
        fields[fieldCount] = (bytesUsed, name.count, bytesUsed + name.count, value.count)
        fieldCount += 1
        bytesUsed += name.count + value.count
    }

    mutating func keepInsert(_ rep: UnsafeBufferPointer<UInt8>, least: Int) {
        guard keeping else { return }
        guard insertCount < Self.maxInserts, insertTotal + rep.count <= Self.maxBlock, let inserts, let insertBytes,
              let src = rep.baseAddress else { keeping = false; return }
        (insertBytes + insertTotal).assignBits(from: src, count: rep.count)
        insertTotal += rep.count
        inserts[insertCount] = (Int32(rep.count), Int32(clamping: least))
        insertCount += 1
    }

    /// The walk is over: kept if it decoded, changed nothing in libnghttp2's table, and (if
    /// it read the table) deferred nothing either.
    mutating func end(_ ok: Bool, tableVersion: Int) {
        blockCount = ok && keeping && (!reads || tableVersion == version) ? walked : -1
    }

    mutating func free() {
        block?.deallocate(); bytes?.deallocate(); fields?.deallocate(); inserts?.deallocate(); insertBytes?.deallocate()
        block = nil; bytes = nil; fields = nil; inserts = nil; insertBytes = nil
        blockCount = -1
    }
}
