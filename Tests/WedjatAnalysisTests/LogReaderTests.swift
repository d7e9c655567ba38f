import XCTest
@testable import WedjatAnalysis

final class LogReaderTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    /// Reads `paths` and returns the records with their locations, plus the warnings as text.
    private func read(_ paths: [String], chunkSize: Int = 256 * 1024, maxLine: Int = 1 << 20)
        throws -> (records: [(String, Int, Record)], warnings: [String]) {
        var reader = LogReader(chunkSize: chunkSize, maxLineBytes: maxLine)
        var records: [(String, Int, Record)] = []
        try reader.read(paths: paths) { records.append(($0, $1, $2)) }
        return (records, reader.warnings.map(\.description))
    }

    func testGoodFileHasNoWarnings() throws {
        let f = try dir.write("a.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/a")
                              + Line.conn(pid: 1, ts: 150) + Line.end(pid: 1, ts: 200))
        let r = try read([f])
        XCTAssertEqual(r.warnings, [])
        XCTAssertEqual(r.records.map(\.1), [1, 2, 3])
        guard case .connection(let c) = r.records[1].2 else { return XCTFail("not a connection") }
        XCTAssertEqual(c.peer, "10.0.0.1:443")
        XCTAssertEqual(c.bytesIn, 10)
        XCTAssertEqual(c.durationUs, 1000)
    }

    func testTruncatedLastLineIsSkippedWithWarning() throws {
        let f = try dir.write("t.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/t")
                              + Line.conn(pid: 1, ts: 150) + #"{"type":"connection","ts":16"#)
        let r = try read([f])
        XCTAssertEqual(r.warnings, ["\(f):3: truncated last line (no trailing newline); skipped"])
        XCTAssertEqual(r.records.count, 2)
    }

    func testCompleteLastLineWithoutNewlineIsKept() throws {
        let f = try dir.write("k.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/k")
                              + Line.end(pid: 1, ts: 200).dropLast())
        let r = try read([f])
        XCTAssertEqual(r.warnings, ["\(f):2: last line has no trailing newline; kept"])
        XCTAssertEqual(r.records.count, 2)
    }

    func testGarbageAndMissingTypeAndBadFieldLines() throws {
        let f = try dir.write("g.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/g")
                              + "this is not json\n"
                              + "[1,2,3]\n"
                              + #"{"ts":120,"pid":1}"# + "\n"
                              + #"{"type":"connection","ts":130,"pid":1,"role":"client","bytes_in":"many"}"# + "\n"
                              + #"{"type":"fork","ts":140,"pid":1}"# + "\n"
                              + "\n"
                              + Line.conn(pid: 1, ts: 150))
        let r = try read([f])
        XCTAssertEqual(r.warnings, [
            "\(f):2: invalid JSON; skipped",
            "\(f):3: not a JSON object; skipped",
            "\(f):4: record has no \"type\"; skipped",
            "\(f):5: connection: field \"bytes_in\" must be an integer; record skipped",
            "\(f):6: fork: field \"child_pid\" must be an integer; record skipped",
        ])
        // The good lines around the bad ones are all kept, with their own line numbers.
        XCTAssertEqual(r.records.map(\.1), [1, 8])
    }

    func testUnknownTypeWarnsOncePerTypePerFile() throws {
        let body = Line.start(pid: 1, ts: 100, exe: "/bin/u")
            + #"{"type":"quic","ts":110,"pid":1}"# + "\n"
            + #"{"type":"quic","ts":111,"pid":1}"# + "\n"
            + #"{"type":"tls","ts":112,"pid":1}"# + "\n"
            + Line.end(pid: 1, ts: 200)
        let f1 = try dir.write("u.1.1.ndjson", body)
        let f2 = try dir.write("u.2.1.ndjson", body)
        let r = try read([f1, f2])
        let note = "; skipped (further ones in this file not reported)"
        XCTAssertEqual(r.warnings, [
            "\(f1):2: unknown record type \"quic\"\(note)",
            "\(f1):4: unknown record type \"tls\"\(note)",
            "\(f2):2: unknown record type \"quic\"\(note)",
            "\(f2):4: unknown record type \"tls\"\(note)",
        ])
        XCTAssertEqual(r.records.count, 4)
    }

    func testNewerSchemaWarnsOnceAndKeepsKnownFields() throws {
        let f = try dir.write("n.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/n", schema: 3)
                              + Line.conn(pid: 1, ts: 150) + Line.end(pid: 1, ts: 200))
        let r = try read([f])
        XCTAssertEqual(r.warnings, ["\(f):1: schema 3 is newer than the supported schema 1; reading the known fields only"])
        XCTAssertEqual(r.records.count, 3)
    }

    func testFirstLineNotProcessStart() throws {
        let f = try dir.write("f.1.1.ndjson", Line.conn(pid: 7, ts: 150) + Line.end(pid: 7, ts: 200))
        let r = try read([f])
        XCTAssertEqual(r.warnings, ["\(f):1: first record is \"connection\", not process_start"])
        XCTAssertEqual(r.records.count, 2)
        // Still attributed to its process, whose pid comes from the records.
        let a = try RunAnalysis.load(paths: [f])
        XCTAssertEqual(a.logs.map(\.pid), [7])
        XCTAssertEqual(a.logs.map(\.program), ["f"])
    }

    func testSecondProcessStartIsSkipped() throws {
        let f = try dir.write("s.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/s")
                              + Line.start(pid: 1, ts: 101, exe: "/bin/other"))
        let r = try read([f])
        XCTAssertEqual(r.warnings, ["\(f):2: second process_start in one file; skipped"])
        XCTAssertEqual(r.records.count, 1)
    }

    func testLinesSplitAcrossTinyChunks() throws {
        // A 7-byte buffer forces every line across many reads.
        let f = try dir.write("c.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/c")
                              + Line.conn(pid: 1, ts: 150) + "garbage\n" + Line.end(pid: 1, ts: 200))
        let r = try read([f], chunkSize: 7)
        XCTAssertEqual(r.warnings, ["\(f):3: invalid JSON; skipped"])
        XCTAssertEqual(r.records.map(\.1), [1, 2, 4])
    }

    func testOverlongLineIsSkippedWithBoundedBuffer() throws {
        let long = #"{"type":"connection","ts":1,"pid":1,"role":"client","peer":""# + String(repeating: "x", count: 5000) + "\"}\n"
        let f = try dir.write("l.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/l") + long + Line.end(pid: 1, ts: 200))
        let r = try read([f], chunkSize: 64, maxLine: 1000)
        XCTAssertEqual(r.warnings, ["\(f):2: line longer than 1000 bytes; skipped"])
        XCTAssertEqual(r.records.map(\.1), [1, 3])
    }

    func testDirectoryIsSearchedRecursivelyForNdjsonOnly() throws {
        try dir.write("b.2.1.ndjson", Line.start(pid: 2, ts: 100, exe: "/bin/b"))
        try dir.write("sub/deeper/a.3.1.ndjson", Line.start(pid: 3, ts: 100, exe: "/bin/a"))
        try dir.write("notes.txt", "not a log\n")
        let r = try read([dir.path])
        XCTAssertEqual(r.warnings, [])
        XCTAssertEqual(r.records.map(\.0), [dir.path + "/b.2.1.ndjson", dir.path + "/sub/deeper/a.3.1.ndjson"])
    }

    func testEmptyDirectoryIsAnError() throws {
        XCTAssertThrowsError(try read([dir.path])) { error in
            XCTAssertEqual(error as? LogReaderError, .noLogFiles(paths: [dir.path]))
            XCTAssertEqual("\(error)", "no wedjat logs (*.ndjson) found in \(dir.path)")
        }
    }

    func testFilesWithoutAnyGoodRecordAreAnError() throws {
        let f = try dir.write("e.1.1.ndjson", "")
        let g = try dir.write("g.1.1.ndjson", "nonsense\n")
        var reader = LogReader()
        XCTAssertThrowsError(try reader.read(paths: [f, g]) { _, _, _ in }) { error in
            XCTAssertEqual(error as? LogReaderError, .noRecords(files: 2))
        }
        XCTAssertEqual(reader.warnings.map(\.description), ["\(f): empty file", "\(g):1: invalid JSON; skipped"])
    }

    func testMissingPathIsAWarningNotACrash() throws {
        let f = try dir.write("a.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/a"))
        let r = try read([dir.path + "/nope", f])
        XCTAssertEqual(r.warnings, ["\(dir.path)/nope: no such file or directory"])
        XCTAssertEqual(r.records.count, 1)
    }

    func testLoadFailureCarriesWarnings() throws {
        let g = try dir.write("g.1.1.ndjson", "{\n")
        XCTAssertThrowsError(try RunAnalysis.load(paths: [g])) { error in
            guard let failure = error as? LoadFailure else { return XCTFail("\(error)") }
            XCTAssertEqual(failure.error, .noRecords(files: 1))
            XCTAssertEqual(failure.warnings.map(\.description), ["\(g):1: invalid JSON; skipped"])
        }
    }

    func testBooleansAreNotIntegers() throws {
        let f = try dir.write("b.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/b")
                              + #"{"type":"drops","ts":true,"pid":1}"# + "\n"
                              + #"{"type":"drops","ts":150,"pid":1,"dropped_events":4.0,"dropped_records":0}"# + "\n")
        let r = try read([f])
        XCTAssertEqual(r.warnings, ["\(f):2: drops: field \"ts\" must be an integer; record skipped"])
        guard case .drops(let d) = r.records.last?.2 else { return XCTFail("no drops record") }
        XCTAssertEqual(d.droppedEvents, 4)
    }
}

extension LogReaderTests {
    func testWarningsPerFileAreCapped() throws {
        let f = try dir.write("w.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/w")
                              + String(repeating: "junk\n", count: 5) + Line.end(pid: 1, ts: 200))
        var reader = LogReader(maxWarningsPerFile: 2)
        var lines: [Int] = []
        try reader.read(paths: [f]) { _, line, _ in lines.append(line) }
        XCTAssertEqual(reader.warnings.map(\.description), [
            "\(f):2: invalid JSON; skipped",
            "\(f):3: invalid JSON; skipped",
            "\(f): 3 more problems in this file not shown",
        ])
        XCTAssertEqual(lines, [1, 7])
    }
}

/// The reader on several threads gives what it gives on one: the same records with the same
/// line numbers, the same warnings, whatever the block size (lines cut anywhere).
final class ParallelReaderTests: XCTestCase {
    func testSameAsOneThread() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var lines = [String(Line.start(pid: 1, ts: 1000, exe: "/bin/x").dropLast())]
        for i in 0 ..< 300 {
            switch i % 23 {
            case 3: lines.append("")
            case 5: lines.append("{not json")
            case 7: lines.append(#"{"type":"later_type","ts":1,"pid":1}"#)
            case 11: lines.append(#"{"type":"dns","ts":"x","pid":1}"#)
            case 13: lines.append(String(repeating: "y", count: 700))   // over maxLineBytes below
            default:
                lines.append(#"{"type":"connection","ts":\#(2000 + i),"pid":1,"conn_id":\#(i),"role":"client","peer":"10.0.0.1:80","bytes_in":\#(i),"bytes_out":1}"#)
            }
        }
        // The last line without its newline: a truncated write.
        let text = lines.joined(separator: "\n") + "\n" + #"{"type":"process_end","ts":9000,"pid":1"#
        let f = try dir.write("x.1.1000.ndjson", text)
        func read(threads: Int, block: Int) -> (records: [String], warnings: [String]) {
            var reader = LogReader(maxLineBytes: 500, threads: threads)
            reader.parallelMinBytes = 0
            reader.parallelBlockBytes = block
            var out: [String] = []
            try? reader.read(paths: [f]) { _, line, r in out.append("\(line) \(recordTypeName(r)) \(r.ts)") }
            return (out, reader.warnings.map(\.description))
        }
        let one = read(threads: 1, block: 1 << 20)
        XCTAssertEqual(one.records.count, 1 + 300 - 5 * 13, "every good line once")
        for block in [7, 64, 333, 4096, 1 << 20] {
            let many = read(threads: 3, block: block)
            XCTAssertEqual(many.records, one.records, "block \(block)")
            XCTAssertEqual(many.warnings, one.warnings, "block \(block)")
            if many.warnings != one.warnings {
                print("one:", one.warnings.suffix(6).map { $0.split(separator: "/").last! })
                print("many:", many.warnings.suffix(6).map { $0.split(separator: "/").last! })
            }
        }
    }

    /// Blocks cut anywhere, over files of every shape: lines of every length around the block
    /// size and the line limit (one exactly at it), runs of empty lines, a file that ends at a
    /// block's end, with or without its last newline, an empty file, one of newlines only.
    func testRandomFilesAndBlocksSameAsOneThread() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var rng = SplitMix(state: 0x5052_4541)
        func record(_ i: Int, pad: Int) -> String {
            #"{"type":"connection","ts":\#(2000 + i),"pid":1,"conn_id":\#(i),"role":"client","peer":"\#(String(repeating: "p", count: pad))"}"#
        }
        for round in 0 ..< 60 {
            var lines = [String(Line.start(pid: 1, ts: 1000, exe: "/bin/x").dropLast())]
            for i in 0 ..< Int(rng.next() % 40) {
                switch rng.next() % 6 {
                case 0: lines.append("")
                case 1: lines.append(String(repeating: "z", count: 150 + Int(rng.next() % 100)))   // around the limit
                case 2: lines.append("{not json")
                default: lines.append(record(i, pad: Int(rng.next() % 120)))
                }
            }
            var text = lines.joined(separator: "\n")
            switch round % 4 {
            case 0: text += "\n"
            case 1: break   // the last line without its newline
            case 2: text = round % 8 == 2 ? "" : "\n\n\n"
            default: text += "\n" + String(repeating: "q", count: 200)   // an over-long last line, open
            }
            let f = try dir.write("r\(round).1.1000.ndjson", text)
            func read(threads: Int, block: Int) -> (records: [String], warnings: [String], bytes: Int64) {
                var reader = LogReader(maxLineBytes: 200, threads: threads)
                reader.parallelMinBytes = 0
                reader.parallelBlockBytes = block
                var out: [String] = []
                try? reader.read(paths: [f]) { _, line, r in out.append("\(line) \(recordTypeName(r)) \(r.ts)") }
                return (out, reader.warnings.map(\.description), reader.bytesRead)
            }
            let one = read(threads: 1, block: 1 << 20)
            let size = text.utf8.count
            for block in [1, 2, 3, 17, 199, 200, 201, Swift.max(1, size / 2), Swift.max(1, size), size + 1] {
                let many = read(threads: 2, block: block)
                XCTAssertEqual(many.records, one.records, "round \(round), block \(block)")
                XCTAssertEqual(many.warnings, one.warnings, "round \(round), block \(block)")
                XCTAssertEqual(many.bytes, Int64(size), "round \(round), block \(block)")
            }
        }
    }

    /// Lines longer than the room the reused block buffers keep for a partial line (64 KiB),
    /// good ones and over-long ones, beside short ones: the same as on one thread.
    func testLongLinesSameAsOneThread() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        var lines = [String(Line.start(pid: 1, ts: 1000, exe: "/bin/x").dropLast())]
        for i in 0 ..< 40 {
            switch i % 5 {
            case 1: lines.append(#"{"type":"warning","ts":\#(2000 + i),"pid":1,"message":"\#(String(repeating: "m", count: 90_000 + i))"}"#)
            case 3: lines.append(String(repeating: "z", count: 300_000))   // over maxLineBytes below
            default:
                lines.append(#"{"type":"connection","ts":\#(2000 + i),"pid":1,"conn_id":\#(i),"role":"client","peer":"10.0.0.1:80","bytes_in":\#(i),"bytes_out":1}"#)
            }
        }
        let f = try dir.write("x.1.1000.ndjson", lines.joined(separator: "\n") + "\n")
        func read(threads: Int, block: Int) -> (records: [String], warnings: [String]) {
            var reader = LogReader(maxLineBytes: 200_000, threads: threads)
            reader.parallelMinBytes = 0
            reader.parallelBlockBytes = block
            var out: [String] = []
            try? reader.read(paths: [f]) { _, line, r in
                if case .note(let n) = r { out.append("\(line) note \(n.message.count)") } else { out.append("\(line) \(recordTypeName(r)) \(r.ts)") }
            }
            return (out, reader.warnings.map(\.description))
        }
        let one = read(threads: 1, block: 1 << 20)
        XCTAssertEqual(one.records.count, 1 + 40 - 8, "every good line once")
        XCTAssertEqual(one.warnings.filter { $0.contains("longer than") }.count, 8)
        for block in [1000, 40_000, 70_000, 1 << 20] {
            let many = read(threads: 2, block: block)
            XCTAssertEqual(many.records, one.records, "block \(block)")
            XCTAssertEqual(many.warnings, one.warnings, "block \(block)")
        }
    }
}
