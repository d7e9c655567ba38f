// HPACK (RFC 7541) header-block decoding for the HTTP/2 decoder, by libnghttp2's
// nghttp2_hd_inflate_*: a well-kept decoder that is on every machine that has curl. It is
// loaded with dlopen the first time a connection needs it (CWedjatNghttp2), never linked.
// One HPACKDecoder per direction of a connection: each holds that direction's dynamic table.
import CWedjatNghttp2

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

    public init?(_ lib: NGHTTP2Library) {
        api = lib.api
        var p: OpaquePointer?
        var pool: OpaquePointer?
        guard wj_nghttp2_inflater_new(api, &p, &pool) == 0, let p else { return nil }
        inflater = p
        self.pool = pool
    }

    deinit { release() }

    /// The inflater and its pool let go (the context is unusable from now on).
    private func release() {
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
        if api.pointee.inflate_change_table_size(inflater, Int(size)) == 0 { maxTableSize = size }
    }

    /// Decodes the next `count` bytes of a header block (a fragment may end anywhere: the
    /// decoder keeps a partial field); `final` when they end the block. Calls `field` with each
    /// decoded field's name and value (valid only during the call). False on a decoding error:
    /// the context is then unusable (the dynamic table can no longer be trusted).
    public func decode(_ p: UnsafePointer<UInt8>?, _ count: Int, final: Bool,
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
        guard let inflater, let f = api.pointee.inflate_get_dynamic_table_size else { return nil }
        return f(inflater)
    }

    /// The dynamic table, newest first (tests).
    public var dynamicTable: [(String, String)]? {
        guard let inflater, let count = api.pointee.inflate_get_num_table_entries,
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
/// seeds, never used by the agent.
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
                    n.initialize(from: nb[i], count: nb[i].count)
                    let v = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, vb[i].count))
                    v.initialize(from: vb[i], count: vb[i].count)
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

    /// Static names whose values the decoder may log or use (1-based indices): :authority,
    /// :method, :path, :status, content-length, content-type, host, user-agent.
    static func wanted(_ index: Int) -> Bool {
        switch index {
        case 1...5, 8...14, 28, 31, 38, 58: return true
        default: return false
        }
    }
}

extension HPACKDecoder {
    /// A whole header block in one buffer, with the fields nobody reads skipped: the
    /// representations that leave the dynamic table alone are handled here (a static-table
    /// index is looked up; a literal not indexed whose static name is not `wanted` is passed
    /// over without decoding its value, Huffman or not), and every other run of the block goes
    /// to libnghttp2 as it is (so its dynamic table is the encoder's). `field` sees the fields
    /// in order, less the skipped ones. False on a decoding error, as decode.
    public func decodeBlock(_ p: UnsafePointer<UInt8>, _ n: Int,
                            _ field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        var i = 0
        var run = 0            // start of the bytes not yet handed to libnghttp2
        @inline(__always) func flush(_ end: Int) -> Bool {
            guard end > run else { return true }
            let ok = decode(p + run, end - run, final: true, field)
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
        while i < n {
            let start = i
            let b = p[i]
            if b & 0x80 != 0 {
                // Indexed field: static ones here, the dynamic table's in libnghttp2.
                guard let index = integer(7) else { return false }
                if index >= 1 && index <= 61 {
                    guard flush(start) else { return false }
                    run = i
                    let (name, value) = HPACKStatic.table[index - 1]
                    field(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount),
                          UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
                } else if index > 61, let entry = api.pointee.inflate_get_table_entry {
                    // The dynamic table as libnghttp2 holds it, read without a decoding pass
                    // (an index changes nothing). The run before it first, which may add to it.
                    guard flush(start), let inflater = handle else { return false }
                    run = i
                    guard let e = entry(inflater, index) else { return fail() }
                    field(UnsafeBufferPointer(start: e.pointee.name, count: e.pointee.namelen),
                          UnsafeBufferPointer(start: e.pointee.value, count: e.pointee.valuelen))
                }
                continue
            }
            if b & 0xe0 == 0x00 {
                // Literal without indexing (0000) or never indexed (0001): the table is untouched.
                guard let nameIndex = integer(4) else { return false }
                if nameIndex == 0 {
                    // A literal name: skip it and its value only by their lengths, into the run.
                    for _ in 0..<2 {
                        guard i < n, let len = integer(7), len <= n - i else { return false }
                        i += len
                    }
                    continue
                }
                guard i < n, let len = integer(7), len <= n - i else { return false }
                i += len
                if nameIndex <= 61 && !HPACKStatic.wanted(nameIndex) {
                    guard flush(start) else { return false }
                    run = i   // passed over
                }
                continue
            }
            // Literal with incremental indexing (01) or a table size update (001): libnghttp2.
            guard let nameIndex = integer(b & 0x40 != 0 ? 6 : 5) else { return false }
            if b & 0x40 != 0 {
                if nameIndex == 0 {
                    guard i < n, let len = integer(7), len <= n - i else { return false }
                    i += len
                }
                guard i < n, let len = integer(7), len <= n - i else { return false }
                i += len
            }
        }
        return flush(n)
    }
}
