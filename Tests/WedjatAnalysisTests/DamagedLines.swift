import Foundation

/// Seeded random damage to one good log line, for the tests that hold a one-pass decoder to the
/// general path (HTTPLineDecoderTests, ConnectionLineDecoderTests): one to three edits a copy
/// (a byte removed, inserted, replaced, or a digit changed for another, which often leaves a
/// good line for the fast path). `WEDJAT_PROPERTY_ROUNDS` sets the copies (4,000 by default).
enum DamagedLines {
    static var rounds: Int { Int(ProcessInfo.processInfo.environment["WEDJAT_PROPERTY_ROUNDS"] ?? "") ?? 4000 }

    static func forEach(of line: String, seed: UInt64, _ body: ([UInt8]) -> Void) {
        var rng = SplitMix64(seed: seed)
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

/// SplitMix64: a small seeded generator, the same sequence on every run.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
