import WedjatSymbols

/// Stall stacks in the folded format of flamegraph.pl (and speedscope, inferno, ...): one line
/// per distinct stack, `program;thread;outermost;...;innermost`, a space, and its weight: the
/// microseconds of stall time its samples stand for (`sampleWeights`), so a frame's width is the
/// time the stalled threads spent in it, not how often it was sampled (a loop stall is sampled
/// at 1, 2, ... 8, 16, 32 ... times the threshold: counting samples would weigh a stall's later
/// stacks less and a short stall's as much as a long one's). Frames are function names
/// (`module+0xoff` where the symbol is unknown, `0x...` outside any module); names keep their
/// spaces (the weight is the last field), and `;` becomes `:` so it never splits a frame. Only
/// the kept stalls count (Stalls.swift).
public enum FoldedStacks {
    public static func render(_ analysis: RunAnalysis) throws -> String {
        render(analysis, symbolizer: Symbolizer())
    }

    static func render(_ analysis: RunAnalysis, symbolizer: Symbolizer) -> String {
        let stacks = StallStacks(analysis: analysis, symbolizer: symbolizer)
        var weights: [String: Int64] = [:]
        for k in analysis.stalls.longest {
            let prefix = [analysis.logs[k.log].program, k.stall.thread ?? k.stall.tid.map { "tid \($0)" } ?? "?"]
            let drawn = k.stall.samples.filter { !$0.frames.isEmpty }
            for (sample, weight) in zip(drawn, sampleWeights(k.stall, drawn)) where weight > 0 {
                let frames = stacks.frames(sample, of: k).reversed().map(\.name)
                weights[(prefix + frames).map(frame).joined(separator: ";"), default: 0] += weight
            }
        }
        return weights.keys.sorted().map { "\($0) \(weights[$0]!)\n" }.joined()
    }

    /// The stall time each of `samples` (the stall's samples that have a stack, in order) stands
    /// for, in microseconds, adding up to the stall's `duration_us`: every moment of the stall is
    /// given to the sample nearest to it in time (the first one also takes the stall's start,
    /// the last one its end; a blocked stall's one sample, taken when the call returned, takes
    /// all of it). Samples without a time share the stall equally.
    static func sampleWeights(_ stall: StallRecord, _ samples: [StallRecord.Sample]) -> [Int64] {
        let n = samples.count
        guard n > 0 else { return [] }
        let duration = Swift.max(0, stall.durationUs)
        let start = stall.startTs ?? ((stall.endTs ?? stall.ts) - duration)
        let end = start + duration
        let times = samples.compactMap(\.ts)
        guard times.count == n else {
            var w = [Int64](repeating: duration / Int64(n), count: n)
            w[0] += duration - w[0] * Int64(n)
            return w
        }
        let t = times.map { Swift.min(Swift.max($0, start), end) }
        var out: [Int64] = []
        out.reserveCapacity(n)
        var lo = start
        for i in 0 ..< n {
            let hi = i == n - 1 ? end : Swift.max(lo, t[i] + (t[i + 1] - t[i]) / 2)
            out.append(Swift.max(0, hi - lo))
            lo = hi
        }
        return out
    }

    /// One frame, safe inside a folded line: no `;`, no line breaks or tabs.
    static func frame(_ name: String) -> String {
        var s = ""
        s.reserveCapacity(name.utf8.count)
        for c in name {
            switch c {
            case ";": s.append(":")
            case "\n", "\r", "\t", "\r\n": s.append(" ")
            default: s.append(c)
            }
        }
        return s.isEmpty ? "?" : s
    }
}
