import XCTest
@testable import WedjatCore
import CWedjatNghttp2

/// RFC 7541 Appendix C.3 to C.6 through libnghttp2's decoder (loaded with dlopen), each block
/// whole, split at every byte boundary, and byte by byte: the same fields and the same dynamic
/// table after each block.
final class HPACKTests: XCTestCase {
    private func hex(_ s: String) -> [UInt8] {
        let digits = Array(s.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    private struct Step {
        var block: [UInt8]
        var fields: [(String, String)]
        var table: [(String, String)]
        var size: Int
    }

    private let date1 = "Mon, 21 Oct 2013 20:13:21 GMT", date2 = "Mon, 21 Oct 2013 20:13:22 GMT"
    private let loc = "https://www.example.com"
    private let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
    // A dynamic table size update to 256, the size Appendix C.5 and C.6 assume (an encoder
    // signals it this way when the decoder's SETTINGS lowered the limit).
    private let sizeUpdate256: [UInt8] = [0x3f, 0xe1, 0x01]

    private var requests: (plain: [Step], huffman: [Step]) {
        let f1 = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]
        let f2 = f1 + [("cache-control", "no-cache")]
        let f3 = [(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"),
                  ("custom-key", "custom-value")]
        let t1 = [(":authority", "www.example.com")]
        let t2 = [("cache-control", "no-cache")] + t1
        let t3 = [("custom-key", "custom-value")] + t2
        let plain = [
            Step(block: hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"), fields: f1, table: t1, size: 57),
            Step(block: hex("8286 84be 5808 6e6f 2d63 6163 6865"), fields: f2, table: t2, size: 110),
            Step(block: hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"), fields: f3, table: t3, size: 164),
        ]
        let huffman = [
            Step(block: hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"), fields: f1, table: t1, size: 57),
            Step(block: hex("8286 84be 5886 a8eb 1064 9cbf"), fields: f2, table: t2, size: 110),
            Step(block: hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"), fields: f3, table: t3, size: 164),
        ]
        return (plain, huffman)
    }

    private var responses: (plain: [Step], huffman: [Step]) {
        let f1 = [(":status", "302"), ("cache-control", "private"), ("date", date1), ("location", loc)]
        let f2 = [(":status", "307"), ("cache-control", "private"), ("date", date1), ("location", loc)]
        let f3 = [(":status", "200"), ("cache-control", "private"), ("date", date2), ("location", loc),
                  ("content-encoding", "gzip"), ("set-cookie", cookie)]
        let t1 = [("location", loc), ("date", date1), ("cache-control", "private"), (":status", "302")]
        let t2 = [(":status", "307"), ("location", loc), ("date", date1), ("cache-control", "private")]
        let t3 = [("set-cookie", cookie), ("content-encoding", "gzip"), ("date", date2)]
        let plain = [
            Step(block: sizeUpdate256 + hex("""
                4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d
                """), fields: f1, table: t1, size: 222),
            Step(block: hex("4803 3330 37c1 c0bf"), fields: f2, table: t2, size: 222),
            Step(block: hex("""
                88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31
                """), fields: f3, table: t3, size: 215),
        ]
        let huffman = [
            Step(block: sizeUpdate256 + hex("""
                4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3
                """), fields: f1, table: t1, size: 222),
            Step(block: hex("4883 640e ffc1 c0bf"), fields: f2, table: t2, size: 222),
            Step(block: hex("""
                88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                9587 3160 65c0 03ed 4ee5 b106 3d50 07
                """), fields: f3, table: t3, size: 215),
        ]
        return (plain, huffman)
    }

    private func library() throws -> NGHTTP2Library {
        guard let lib = NGHTTP2Library.shared else { throw XCTSkip("libnghttp2.so.14 is not installed") }
        return lib
    }

    private func pairs(_ f: [(String, String)]) -> [String] { f.map { "\($0.0): \($0.1)" } }

    /// Decodes the steps in order; block `splitBlock` is fed in pieces cut at `cuts`.
    private func run(_ steps: [Step], _ lib: NGHTTP2Library, splitBlock: Int = -1, cuts: [Int] = [],
                     file: StaticString = #filePath, line: UInt = #line) {
        let d = HPACKDecoder(lib)!
        for (b, step) in steps.enumerated() {
            var got: [(String, String)] = []
            let bounds = b == splitBlock ? [0] + cuts + [step.block.count] : [0, step.block.count]
            step.block.withUnsafeBufferPointer { buf in
                for k in 0..<(bounds.count - 1) {
                    let from = bounds[k], to = bounds[k + 1]
                    let ok = d.decode(buf.baseAddress! + from, to - from, final: k == bounds.count - 2) { n, v in
                        got.append((String(decoding: n, as: UTF8.self), String(decoding: v, as: UTF8.self)))
                    }
                    XCTAssertTrue(ok, "block \(b) cuts \(cuts): decoding failed", file: file, line: line)
                }
            }
            XCTAssertEqual(pairs(got), pairs(step.fields), "block \(b) cuts \(cuts)", file: file, line: line)
            XCTAssertEqual(pairs(d.dynamicTable ?? []), pairs(step.table), "table after block \(b) cuts \(cuts)", file: file, line: line)
            XCTAssertEqual(d.dynamicTableSize, step.size, "table size after block \(b)", file: file, line: line)
        }
    }

    private func everySplit(_ steps: [Step]) throws {
        let lib = try library()
        run(steps, lib)
        for (b, step) in steps.enumerated() {
            for k in 1..<step.block.count { run(steps, lib, splitBlock: b, cuts: [k]) }
            run(steps, lib, splitBlock: b, cuts: Array(1..<step.block.count))   // byte by byte
        }
    }

    func testC3RequestsWithoutHuffman() throws { try everySplit(requests.plain) }
    func testC4RequestsWithHuffman() throws { try everySplit(requests.huffman) }
    func testC5ResponsesWithoutHuffman() throws { try everySplit(responses.plain) }
    func testC6ResponsesWithHuffman() throws { try everySplit(responses.huffman) }

    /// `fast` is `full` less some fields, in order, each of them one nobody reads (no wanted
    /// field is ever missing). The number passed over.
    @discardableResult
    private func assertFastIsFullLessUnread(_ fast: [(String, String)], _ full: [(String, String)], _ what: String,
                                            file: StaticString = #filePath, line: UInt = #line) -> Int {
        var j = 0, skipped = 0
        for f in full {
            if j < fast.count, fast[j] == f { j += 1; continue }
            XCTAssertFalse(HPACKStatic.wantedNames.contains(f.0), "\(what): wanted \(f.0) missing from the fast path's fields",
                           file: file, line: line)
            skipped += 1
        }
        XCTAssertEqual(j, fast.count, "\(what): the fast path's fields in order", file: file, line: line)
        return skipped
    }

    /// `block` decoded whole by libnghttp2 (through `a`) and by the fast path (through `b`):
    /// both field lists (a decoding that fails fails the test).
    private func decodeBoth(_ a: HPACKDecoder, _ b: HPACKDecoder, _ block: [UInt8], _ what: String,
                            file: StaticString = #filePath, line: UInt = #line) -> (full: [(String, String)], fast: [(String, String)]) {
        var full: [(String, String)] = [], fast: [(String, String)] = []
        XCTAssertTrue(a.decode(block, block.count, final: true) { full.append((String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self))) },
                      "\(what): libnghttp2 decodes it", file: file, line: line)
        XCTAssertTrue(block.withUnsafeBufferPointer { buf in
            b.decodeBlock(buf.baseAddress!, buf.count) { fast.append((String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self))) }
        }, "\(what): the fast path decodes it", file: file, line: line)
        return (full, fast)
    }

    /// decodeBlock (whole blocks, fields nobody reads skipped, insertions deferred) gives what
    /// decode gives, less the skipped fields, and leaves the same dynamic table: the RFC
    /// examples and blocks of every representation the encoder makes (indexed, incremental,
    /// never indexed).
    func testWholeBlockFastPathMatchesLibnghttp2() throws {
        let lib = try library()
        for steps in [requests.plain, requests.huffman, responses.plain, responses.huffman] {
            let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
            for (k, step) in steps.enumerated() {
                var full: [(String, String)] = [], fast: [(String, String)] = []
                XCTAssertTrue(a.decode(step.block, step.block.count, final: true) { full.append((String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self))) })
                XCTAssertTrue(step.block.withUnsafeBufferPointer { buf in
                    b.decodeBlock(buf.baseAddress!, buf.count) { fast.append((String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self))) }
                })
                assertFastIsFullLessUnread(fast, full, "RFC block \(k)")
                XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(a.dynamicTable ?? []))
            }
        }
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
        var rng = SystemRandomNumberGenerator()
        let names = [":status", ":method", ":path", ":authority", "server", "date", "etag", "content-type", "content-length",
                     "user-agent", "grpc-status", "grpc-message", "x-custom", "set-cookie", "host", "accept-ranges"]
        var skippedSeen = 0
        for round in 0..<400 {
            var fields: [(String, String)] = []
            for _ in 0..<Int.random(in: 1...10, using: &rng) {
                let name = names.randomElement(using: &rng)!
                let value = ["200", "404", "GET", "/", "/index.html", "x", String(repeating: "v", count: Int.random(in: 0...80, using: &rng)),
                             "Tue, 24 Nov 2026 11:28:00 GMT"].randomElement(using: &rng)!
                fields.append((name, value))
            }
            let block = enc.encode(fields, neverIndex: round % 3 == 0)
            let (full, fast) = decodeBoth(a, b, block, "round \(round)")
            XCTAssertEqual(pairs(full), pairs(fields), "round \(round): libnghttp2 decodes what was encoded")
            skippedSeen += assertFastIsFullLessUnread(fast, full, "round \(round)")
            if round % 5 == 4 {   // not every round: insertions stay deferred across blocks between
                XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(a.dynamicTable ?? []), "round \(round): the same table")
            }
        }
        XCTAssertGreaterThan(skippedSeen, 100, "fields were passed over")
    }

    // MARK: - blocks written by hand: nginx's way, and every representation at random

    /// A string literal: Huffman-coded as libnghttp2's encoder codes it, or raw.
    private func literal(_ v: String, huffman: Bool, _ enc: HPACKEncoder) -> [UInt8] {
        if huffman {
            let b = enc.encode([("x", v)], neverIndex: true)   // 0x10, "x", then the value
            return Array(b[3...])
        }
        let bytes = Array(v.utf8)
        precondition(bytes.count < 127)
        return [UInt8(bytes.count)] + bytes
    }

    /// An integer with an N-bit prefix, the prefix's other bits `flags`.
    private func integer(_ v: Int, prefix: Int, flags: UInt8) -> [UInt8] {
        let mask = (1 << prefix) - 1
        if v < mask { return [flags | UInt8(v)] }
        var out = [flags | UInt8(mask)], r = v - mask
        while r >= 128 { out.append(UInt8(r & 0x7f | 0x80)); r >>= 7 }
        out.append(UInt8(r))
        return out
    }

    /// nginx's responses: every field inserted (a static name, or a literal one not indexed),
    /// none ever referred to. Decoded whole blocks give the wanted fields, the table caught up
    /// equals libnghttp2's own, and what is kept for later stays bounded.
    func testInsertionsNeverReferredToAreDeferredAndDropped() throws {
        let lib = try library()
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
        for r in 0..<600 {
            let date = "Mon, 07 Dec 2026 18:\(10 + r % 50):\(10 + r % 49) GMT"
            var block: [UInt8] = [0x88]                                                  // :status 200
            block += [0x40 | 54] + literal("nginx/1.22.1", huffman: true, enc)           // server
            block += [0x40 | 33] + literal(date, huffman: true, enc)                     // date
            block += [0x40 | 31] + literal("text/html", huffman: r % 2 == 0, enc)        // content-type
            block += [0x40 | 28] + literal("\(600 + r)", huffman: false, enc)            // content-length
            block += [0x40 | 44] + literal(date, huffman: true, enc)                     // last-modified
            block += [0x00] + literal("etag", huffman: true, enc) + literal("\"6756-25e\"", huffman: true, enc)
            block += [0x00] + literal("accept-ranges", huffman: true, enc) + literal("bytes", huffman: false, enc)
            if r % 10 == 3 { block += [0x40] + literal("grpc-status", huffman: true, enc) + literal("0", huffman: false, enc) }
            if r % 10 == 7 { block += [0x00] + literal("grpc-message", huffman: false, enc) + literal("ok", huffman: false, enc) }
            let (full, fast) = decodeBoth(a, b, block, "response \(r)")
            XCTAssertEqual(assertFastIsFullLessUnread(fast, full, "response \(r)"), 5, "response \(r): server, date, last-modified, etag, accept-ranges passed over")
            XCTAssertEqual(fast.map { $0.0 }.prefix(3), [":status", "content-type", "content-length"])
            XCTAssertLessThan(b.deferredBytes, 2048, "response \(r): bounded")
            if r % 100 == 99 { XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(a.dynamicTable ?? []), "response \(r): the same table") }
        }
    }

    /// The same response block again and again (nginx within one second), now and then another
    /// one, a reference into the table or a smaller limit between them: a repeated block gives
    /// libnghttp2's fields less the unread ones, and the table caught up is libnghttp2's.
    func testRepeatedBlocksGiveTheSameAsDecoding() throws {
        let lib = try library()
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
        var repeats = 0
        var last: [UInt8] = []
        for r in 0..<400 {
            let second = r / 9
            var block: [UInt8] = r == 200 ? integer(1024, prefix: 5, flags: 0x20) : []
            block += [0x88] + [0x40 | 54] + literal("nginx/1.22.1", huffman: true, enc)
            block += [0x40 | 33] + literal("Mon, 07 Dec 2026 19:\(10 + second % 50):00 GMT", huffman: true, enc)
            block += [0x40 | 31] + literal(second % 3 == 0 ? "text/html" : "application/grpc", huffman: true, enc)
            block += [0x40 | 28] + literal("606", huffman: false, enc)
            block += [0x00] + literal("etag", huffman: true, enc) + literal("\"\(second)\"", huffman: true, enc)
            if r % 37 == 36 { block += [0xbe] }   // index 62: the newest entry
            if block == last { repeats += 1 }
            last = block
            let (full, fast) = decodeBoth(a, b, block, "block \(r)")
            XCTAssertEqual(assertFastIsFullLessUnread(fast, full, "block \(r)"), r % 37 == 36 ? 3 : 3, "block \(r): server, date, etag unread")
            if r % 50 == 49 || r == 199 || r == 201 {
                XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(a.dynamicTable ?? []), "block \(r): the same table")
            }
        }
        XCTAssertGreaterThan(repeats, 250, "blocks repeated")
    }

    /// A client's requests: inserted once, then the same block of references again and again
    /// (h2load), now and then a new insertion that moves the indices: a repeated block is given
    /// again only while the table is as it was, so the fields are always libnghttp2's.
    func testRepeatedReferencesFollowTheTable() throws {
        let lib = try library()
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
        for r in 0..<300 {
            var block: [UInt8] = [0x82, 0x87]
            if r == 0 || r % 23 == 0 {
                block += [0x41] + literal("host\(r).example:8443", huffman: r % 2 == 0, enc)      // :authority, inserted
                block += [0x44] + literal("/p\(r)", huffman: false, enc)                           // :path, inserted
                block += [0x40 | 58] + literal("h2load nghttp2/1.52.0", huffman: true, enc)       // user-agent, inserted
            } else {
                block += [0xc0, 0xbf, 0xbe]   // the three newest entries
            }
            if r % 41 == 40 { block += [0x40] + literal("x-other", huffman: false, enc) + literal("\(r)", huffman: false, enc) }
            if r % 29 == 28 {
                // An insertion in a block that comes in two fragments (not the whole-block path):
                // the next block of references must not be given as it was before it.
                let ins = [0x40] + literal("x-split", huffman: false, enc) + literal("\(r)", huffman: false, enc)
                XCTAssertTrue(a.decode(ins, ins.count, final: true) { _, _ in })
                XCTAssertTrue(b.decode(ins, 3, final: false) { _, _ in })
                XCTAssertTrue(ins.withUnsafeBufferPointer { b.decode($0.baseAddress! + 3, ins.count - 3, final: true) { _, _ in } })
            }
            let (full, fast) = decodeBoth(a, b, block, "block \(r)")
            XCTAssertEqual(assertFastIsFullLessUnread(fast, full, "block \(r)"), r % 41 == 40 ? 2 : 1, "block \(r): :scheme (and x-other) unread")
            if r % 60 == 59 { XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(a.dynamicTable ?? []), "block \(r): the same table") }
        }
    }

    /// A table limit raised to 64 KiB: what is deferred outgrows its 8 KiB and is caught up,
    /// and an insertion larger than that goes to libnghttp2 at once; the table stays the
    /// encoder's and references into it read the right entries.
    func testLargeTableCatchesUpWhenTheDeferredBytesFillUp() throws {
        let lib = try library()
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
        a.allowTableSize(65536)
        b.allowTableSize(65536)
        var maxKept = 0
        for r in 0..<120 {
            var block: [UInt8] = r == 0 ? integer(65536, prefix: 5, flags: 0x20) : []
            for k in 0..<4 {
                let value = String(repeating: "\(k)", count: r == 60 && k == 0 ? 15000 : 100) + "-\(r)"
                block += [0x40 | 54] + literal(value, huffman: true, enc)
            }
            if r % 30 == 29 { block += integer(62 + r % 7, prefix: 7, flags: 0x80) }   // an entry of the table
            let (full, fast) = decodeBoth(a, b, block, "block \(r)")
            assertFastIsFullLessUnread(fast, full, "block \(r)")
            if r % 30 == 29 { XCTAssertEqual(fast.count, 1, "block \(r): the referenced entry, read") }
            maxKept = max(maxKept, b.deferredBytes)
            XCTAssertLessThanOrEqual(b.deferredBytes, 8192, "block \(r)")
        }
        XCTAssertGreaterThan(maxKept, 6000, "the deferred bytes filled up")
        XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(a.dynamicTable ?? []))
        XCTAssertEqual(b.dynamicTableSize, a.dynamicTableSize)
    }

    /// Every representation at random (indexed static and dynamic, insertions with static,
    /// literal and dynamic names, literals not indexed, size updates, values long enough to
    /// evict), over tables of several limits: the fast path's fields are libnghttp2's less
    /// unread ones, and the table caught up is libnghttp2's.
    func testRandomRepresentationsAgainstLibnghttp2() throws {
        let lib = try library()
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        var rng = SystemRandomNumberGenerator()
        let names = ["content-type", "x-custom", "grpc-status", "server", "user-agent", "etag", ":path", "grpc-message", "x-a"]
        var skippedSeen = 0
        for limit in [4096, 256, 100, 0] {
            let a = HPACKDecoder(lib)!, b = HPACKDecoder(lib)!
            var entries = 0   // entries in a's table now (61 + entries is the last valid index)
            for round in 0..<300 {
                var block: [UInt8] = []
                if round == 0 || Int.random(in: 0..<40, using: &rng) == 0 {
                    block += integer(round == 0 ? limit : Int.random(in: 0...limit, using: &rng), prefix: 5, flags: 0x20)
                }
                // Dynamic indices are valid as the table stood at the block's start only until
                // an insertion or a size update moves or evicts entries.
                var refsValid = block.isEmpty
                for _ in 0..<Int.random(in: 1...8, using: &rng) {
                    let value = String(repeating: "v", count: Int.random(in: 0...(limit > 200 ? 90 : 20), using: &rng)) + "\(round)"
                    let huffman = Bool.random(using: &rng)
                    switch Int.random(in: 0..<8, using: &rng) {
                    case 0: block += integer(Int.random(in: 1...61, using: &rng), prefix: 7, flags: 0x80)
                    case 1 where entries > 0 && refsValid: block += integer(62 + Int.random(in: 0..<entries, using: &rng), prefix: 7, flags: 0x80)
                    case 2:
                        refsValid = false
                        block += integer(Int.random(in: 1...61, using: &rng), prefix: 6, flags: 0x40) + literal(value, huffman: huffman, enc)
                    case 3:
                        refsValid = false
                        block += [0x40] + literal(names.randomElement(using: &rng)!, huffman: Bool.random(using: &rng), enc) + literal(value, huffman: huffman, enc)
                    case 4 where entries > 0 && refsValid:   // a dynamic name, inserted or not
                        let inserted = Bool.random(using: &rng)
                        refsValid = !inserted
                        block += integer(62 + Int.random(in: 0..<entries, using: &rng), prefix: inserted ? 6 : 4,
                                         flags: inserted ? 0x40 : 0x00)
                        block += literal(value, huffman: huffman, enc)
                    case 5: block += integer(Int.random(in: 1...61, using: &rng), prefix: 4, flags: 0x10) + literal(value, huffman: huffman, enc)
                    case 6: block += [0x00] + literal(names.randomElement(using: &rng)!, huffman: Bool.random(using: &rng), enc) + literal(value, huffman: huffman, enc)
                    default: block += [0x82]
                    }
                }
                let (full, fast) = decodeBoth(a, b, block, "limit \(limit) round \(round)")
                skippedSeen += assertFastIsFullLessUnread(fast, full, "limit \(limit) round \(round)")
                let ta = a.dynamicTable ?? []
                entries = ta.count
                if round % 7 == 6 { XCTAssertEqual(pairs(b.dynamicTable ?? []), pairs(ta), "limit \(limit) round \(round): the same table") }
            }
        }
        XCTAssertGreaterThan(skippedSeen, 300)
    }

    func testGarbageFails() throws {
        let lib = try library()
        let d = HPACKDecoder(lib)!
        // Index 0 is not a valid indexed field; then the context is unusable.
        XCTAssertFalse(d.decode([0x80], 1, final: true) { _, _ in })
        XCTAssertTrue(d.failed)
        XCTAssertFalse(d.decode([0x82], 1, final: true) { _, _ in })
        // A block cut in the middle of a literal and declared final.
        let e = HPACKDecoder(lib)!
        let block = hex("8286 8441 0f77 7777 2e65")
        XCTAssertFalse(e.decode(block, block.count, final: true) { _, _ in })
    }

    func testTableSizeLimitFollowsTheDecodersSettings() throws {
        let lib = try library()
        let update8192: [UInt8] = [0x3f, 0xe1, 0x3f]   // dynamic table size update to 8192
        let d = HPACKDecoder(lib)!
        XCTAssertFalse(d.decode(update8192 + [0x82], 4, final: true) { _, _ in }, "above the default 4096")
        let e = HPACKDecoder(lib)!
        e.allowTableSize(8192)
        var n = 0
        XCTAssertTrue(e.decode(update8192 + [0x82], 4, final: true) { _, _ in n += 1 })
        XCTAssertEqual(n, 1)
        // A lower limit is not enforced by the decoder: the encoder signals it in the block.
        let f = HPACKDecoder(lib)!
        f.allowTableSize(0)
        XCTAssertEqual(f.maxTableSize, 4096)
        XCTAssertTrue(f.decode([0x82], 1, final: true) { _, _ in })
    }

    /// The inflater allocates from a pool of its own when libnghttp2 takes an allocator
    /// (nghttp2_hd_inflate_new2, in every 1.x): blocks freed by one field serve the next, and
    /// a table that grows past the pool's sizes (a 3,000-byte value) still decodes.
    func testPooledInflaterDecodesLargeAndRepeatedFields() throws {
        let lib = try library()
        var p: OpaquePointer?, pool: OpaquePointer?
        XCTAssertEqual(wj_nghttp2_inflater_new(lib.api, &p, &pool), 0)
        XCTAssertNotNil(pool, "libnghttp2 has nghttp2_hd_inflate_new2")
        lib.api.pointee.inflate_del(p)
        wj_nghttp2_pool_free(pool)
        let d = HPACKDecoder(lib)!
        // A literal with incremental indexing, name "x-big" (new), a 3,000-byte value, then the
        // same field by its index (62) a hundred times.
        let value = [UInt8](repeating: UInt8(ascii: "v"), count: 3000)
        var block: [UInt8] = [0x40, 0x05] + Array("x-big".utf8) + [0x7f, 0xb9, 0x16] + value
        block += [UInt8](repeating: 0xbe, count: 100)
        var fields = 0, bytes = 0
        XCTAssertTrue(d.decode(block, block.count, final: true) { _, v in fields += 1; bytes += v.count })
        XCTAssertEqual(fields, 101)
        XCTAssertEqual(bytes, 101 * 3000)
    }

    func testMissingLibrary() {
        XCTAssertNil(NGHTTP2Library.open("libnghttp2-not-there.so.99"))
    }

    func testEncoderRoundTrip() throws {
        let lib = try library()
        guard let enc = HPACKEncoder(lib) else { throw XCTSkip("no deflater") }
        let d = HPACKDecoder(lib)!
        for _ in 0..<3 {
            let fields = [(":method", "POST"), (":path", "/x"), ("content-type", "application/grpc"), ("x-long", String(repeating: "v", count: 300))]
            let block = enc.encode(fields)
            var got: [(String, String)] = []
            XCTAssertTrue(d.decode(block, block.count, final: true) { got.append((String(decoding: $0, as: UTF8.self), String(decoding: $1, as: UTF8.self))) })
            XCTAssertEqual(pairs(got), pairs(fields))
        }
    }
}
