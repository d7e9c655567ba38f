import Foundation
@testable import WedjatAnalysis

/// Seeded random damage to one good log line, for the tests that hold a one-pass decoder to the
/// general path (HTTPLineDecoderTests, ConnectionLineDecoderTests): one to three edits a copy
/// (a byte removed, inserted, replaced, or a digit changed for another, which often leaves a
/// good line for the fast path). `WEDJAT_PROPERTY_ROUNDS` sets the copies (4,000 by default).
enum DamagedLines {
    static var rounds: Int { Int(ProcessInfo.processInfo.environment["WEDJAT_PROPERTY_ROUNDS"] ?? "") ?? 4000 }

    static func forEach(of line: String, seed: UInt64, _ body: ([UInt8]) -> Void) {
        var rng = SplitMix(state: seed)   // the reservoir sample's generator (RequestCollector.swift)
        let alphabet = Array(#"{}[]":,.-+eE0123456789 tfnul\"x/é"#.utf8) + [0x00, 0x09, 0x0A, 0x7F, 0x80, 0xFF]
        let base = Array(line.utf8)
        for _ in 0 ..< rounds {
            var b = base
            for _ in 0 ..< 1 + Int(rng.next() % 3) {
                let at = Int(rng.next() % UInt64(b.count))
                switch rng.next() % 4 {
                case 0: b.remove(at: at)
                case 1: b.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                case 2: b[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                default:
                    if b[at] >= 0x30, b[at] <= 0x39 { b[at] = 0x30 + UInt8(rng.next() % 10) }
                }
            }
            body(b)
        }
    }
}
