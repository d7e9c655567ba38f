import WedjatSymbols

/// Stall stacks in the folded format of flamegraph.pl (and speedscope, inferno, ...): one line
/// per distinct stack, `program;thread;outermost;...;innermost`, a space, and the number of
/// stall samples with that stack. Frames are function names (`module+0xoff` where the symbol is
/// unknown, `0x...` outside any module); names keep their spaces (the count is the last field),
/// and `;` becomes `:` so it never splits a frame. Only the kept stalls count (Stalls.swift).
public enum FoldedStacks {
    public static func render(_ analysis: RunAnalysis) throws -> String {
        render(analysis, symbolizer: Symbolizer())
    }

    static func render(_ analysis: RunAnalysis, symbolizer: Symbolizer) -> String {
        let stacks = StallStacks(analysis: analysis, symbolizer: symbolizer)
        var weights: [String: Int] = [:]
        for k in analysis.stalls.longest {
            let prefix = [analysis.logs[k.log].program, k.stall.thread ?? k.stall.tid.map { "tid \($0)" } ?? "?"]
            for sample in k.stall.samples where !sample.frames.isEmpty {
                let frames = stacks.frames(sample, of: k).reversed().map(\.name)
                weights[(prefix + frames).map(frame).joined(separator: ";"), default: 0] += 1
            }
        }
        return weights.keys.sorted().map { "\($0) \(weights[$0]!)\n" }.joined()
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
