import XCTest
@testable import WedjatAnalysis

/// Property test of the log reader (the "fuzz the log reader" part of the reliability work):
/// thousands of logs whose lines are mutated at random (cut, bytes flipped, garbage inserted,
/// fields retyped, non-UTF-8) must never crash the reader, every untouched good line must come
/// back as a record at its own line number, and every warning must name file:line. Seeded, so
/// a failure reproduces; WEDJAT_PROPERTY_ROUNDS raises the count for a long local run.
final class LogReaderPropertyTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    /// SplitMix64: tiny, seedable, good enough to pick mutations.
    /// The reservoir sample's generator (SplitMix64), with a helper for ranges.
    struct Rng {
        private var mix: SplitMix
        init(state: UInt64) { mix = SplitMix(state: state) }
        mutating func next() -> UInt64 { mix.next() }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let goodLines: [String] = [
        Line.conn(pid: 7, ts: 150),
        #"{"type":"dns","ts":160,"pid":7,"tid":8,"api":"getaddrinfo","name":"a.b","duration_us":5,"answers":1,"addresses":["1.2.3.4"],"error":null}"# + "\n",
        #"{"type":"fork","ts":170,"pid":7,"tid":7,"child_pid":9}"# + "\n",
        #"{"type":"drops","ts":180,"pid":7,"dropped_events":1,"dropped_records":0}"# + "\n",
        #"{"type":"warning","ts":185,"pid":7,"message":"x"}"# + "\n",
    ]

    private func mutate(_ line: String, _ rng: inout Rng) -> [UInt8] {
        var b = Array(line.utf8.dropLast())  // without its newline
        switch rng.below(8) {
        case 0: b = Array(b.prefix(rng.below(b.count)))                         // cut short
        case 1:                                                                  // flip a byte
            let v = UInt8(truncatingIfNeeded: rng.next())
            b[rng.below(b.count)] = v == 0x0A ? 0x0B : v  // (a newline would make two lines)
        case 2: b.insert(contentsOf: [0xFF, 0xFE, 0x00, 0x22], at: rng.below(b.count)) // invalid UTF-8, NUL, quote
        case 3: b = Array(String(decoding: b, as: UTF8.self).replacingOccurrences(of: "\"ts\":1", with: "\"ts\":\"1").utf8)
        case 4: b = Array(String(decoding: b, as: UTF8.self).replacingOccurrences(of: "\"pid\":7", with: "\"pid\":null").utf8)
        case 5: b = Array("[1,2,3]".utf8)
        case 6: b = Array(String(repeating: "{", count: 1 + rng.below(2000)).utf8)  // deep nesting
        default: b = Array(String(decoding: b, as: UTF8.self).replacingOccurrences(of: "\"type\":\"", with: "\"type\":\"x").utf8)
        }
        return b + [0x0A]
    }

    func testMutatedLogsNeverCrashAndKeepEveryGoodLine() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["WEDJAT_PROPERTY_ROUNDS"] ?? "") ?? 300
        var rng = Rng(state: 0x5EED)
        var checkedGood = 0
        for round in 0..<rounds {
            var bytes = Array(Line.start(pid: 7, ts: 100, exe: "/bin/p").utf8)
            var goodAt: [Int] = [1]
            var lineNo = 1
            for _ in 0..<(5 + rng.below(30)) {
                lineNo += 1
                let line = Self.goodLines[rng.below(Self.goodLines.count)]
                if rng.below(3) == 0 {
                    bytes += mutate(line, &rng)
                } else {
                    bytes += Array(line.utf8)
                    goodAt.append(lineNo)
                }
            }
            if rng.below(4) == 0 { bytes += Array(#"{"type":"connec"#.utf8) }   // unfinished last line
            let path = dir.path + "/p.7.\(round).ndjson"
            FileManager.default.createFile(atPath: path, contents: Data(bytes))

            var reader = LogReader(chunkSize: 1 + rng.below(4096), maxLineBytes: 1 << 20)
            var seen: [Int] = []
            try reader.read(paths: [path]) { _, line, _ in seen.append(line) }
            // Every untouched good line is back; a mutated line may still be valid JSON of a
            // record (a flipped byte inside a string), so `seen` may hold more, never less.
            let missing = Set(goodAt).subtracting(seen)
            XCTAssertTrue(missing.isEmpty, "round \(round): good lines \(missing.sorted()) lost")
            for w in reader.warnings {
                XCTAssertEqual(w.file, path, "round \(round): warning without its file")
                XCTAssertNotNil(w.line, "round \(round): warning without a line: \(w.message)")
            }
            checkedGood += goodAt.count
        }
        XCTAssertGreaterThan(checkedGood, rounds * 5)
    }
}
