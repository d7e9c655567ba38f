import XCTest
@testable import WedjatLive

final class FileTailTests: XCTestCase {
    var dir: LiveTempDir!
    var scratch = [UInt8](repeating: 0, count: 16)   // small: lines span chunks

    override func setUpWithError() throws { dir = try LiveTempDir() }
    override func tearDown() { dir.remove() }

    private func lines(_ tail: FileTail, until: Int64 = .max, stopAfter: Int = .max) -> [String] {
        var out: [String] = []
        tail.readLines(scratch: &scratch, until: until) { line, _ in
            guard out.count < stopAfter else { return false }
            out.append(String(decoding: line, as: UTF8.self))
            return true
        }
        return out
    }

    func testHandsOutCompleteLinesAsTheyAreAppended() throws {
        let path = dir.append("a.ndjson", "first line\nsecond li")
        let tail = try XCTUnwrap(FileTail(path: path, offset: 0))
        XCTAssertEqual(lines(tail), ["first line"])
        XCTAssertEqual(tail.offset, 11, "the unfinished line is not consumed")
        XCTAssertEqual(lines(tail), [], "nothing new")
        dir.append("a.ndjson", "ne\nthird\n")
        XCTAssertEqual(lines(tail), ["second line", "third"])
        XCTAssertEqual(tail.offset, 29)
        XCTAssertEqual(tail.linesRead, 3)
    }

    func testStoppingLeavesTheLineForNextTimeAndSetOffsetRewinds() throws {
        let path = dir.append("b.ndjson", "one\ntwo\nthree\n")
        let tail = try XCTUnwrap(FileTail(path: path, offset: 0))
        XCTAssertEqual(lines(tail, stopAfter: 1), ["one"])
        XCTAssertEqual(tail.offset, 4)
        XCTAssertEqual(lines(tail), ["two", "three"])
        tail.setOffset(4)
        XCTAssertEqual(lines(tail, until: 8), ["two"], "reading stops at `until`")
    }

    func testStartingAtTheEndSkipsALineBeingWritten() throws {
        let path = dir.append("c.ndjson", "old\nhalf of a li")
        let tail = try XCTUnwrap(FileTail(path: path, offset: nil))
        XCTAssertEqual(tail.offset, 16)
        dir.append("c.ndjson", "ne\nnew\n")
        XCTAssertEqual(lines(tail), ["new"], "the rest of the cut line is not a line")
        let atBoundary = dir.append("d.ndjson", "old\n")
        let tail2 = try XCTUnwrap(FileTail(path: atBoundary, offset: nil))
        dir.append("d.ndjson", "new\n")
        XCTAssertEqual(lines(tail2), ["new"])
    }

    func testOverlongLinesAreSkippedAndCounted() throws {
        let path = dir.append("e.ndjson", "ok\n" + String(repeating: "x", count: 100) + "\nafter\n")
        let tail = try XCTUnwrap(FileTail(path: path, offset: 0))
        var out: [String] = []
        tail.readLines(scratch: &scratch, maxLineBytes: 50) { line, _ in out.append(String(decoding: line, as: UTF8.self)); return true }
        XCTAssertEqual(out, ["ok", "after"])
        XCTAssertEqual(tail.longLinesSkipped, 1)
        XCTAssertEqual(tail.offset, 110)
    }

    func testDeletedFileIsStillReadAndSaysSo() throws {
        let path = dir.append("f.ndjson", "a\nb\n")
        let tail = try XCTUnwrap(FileTail(path: path, offset: 0))
        unlink(path)
        XCTAssertTrue(tail.status().deleted)
        XCTAssertEqual(lines(tail), ["a", "b"])
    }
}
