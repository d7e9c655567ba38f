// The STALLS section of the text report and the event-loop lines of VITALS.

extension TextReport {
    /// Rows of the longest-stalls table, stack groups listed, and groups whose stack is printed.
    static let stallsShown = 10
    static let stallGroupsShown = 5
    static let stallStacksShown = 3
    static let stallFramesShown = 12
    static let loopsShown = 3

    /// Nothing when stall detection was off everywhere; one line when there was none.
    func stallsLines(_ section: Report.StallsSection?) -> [String] {
        guard let s = section else { return [] }
        // `250 ms`, as WEDJAT_STALL_MS sets it.
        let threshold = s.thresholdUs % 1000 == 0 ? "\(s.thresholdUs / 1000) ms" : Format.duration(s.thresholdUs)
        guard s.count > 0 else { return ["", bold("STALLS") + ": no stalls over " + threshold] }
        var out = ["", paint(bold("STALLS"), .yellow) + ": " + Format.count(s.count, "stall") + " over " + threshold
                   + ", " + Format.duration(s.totalUs) + " in total ("
                   + s.byKind.map { "\($0.name) \($0.count)" }.joined(separator: ", ") + "), longest first"]

        var table = Table(header: ["DURATION", "ON CPU", "KIND", "PID", "PROGRAM", "THREAD", "WHAT", "TOP FRAME"],
                          rightAligned: [0, 1, 3], flexible: [4, 5, 6, 7])
        for r in s.stalls.prefix(Self.stallsShown) {
            table.add([
                Cell(Format.duration(r.durationUs)), Cell(r.onCpuPct.map { Format.fixed($0, 0) + "%" } ?? "-"),
                Cell(r.kind), Cell(String(r.pid)), Cell(r.program), Cell(threadLabel(r)),
                Cell(what(r), r.result != nil ? .red : nil),
                Cell(clip(r.stack.first.map(frameName) ?? "(no stack" + (r.stackUnavailable.map { ": " + $0 } ?? "") + ")", 60)),
            ])
        }
        out += table.render(self)
        if s.stalls.count > Self.stallsShown {
            out.append("  … " + Format.count(s.stalls.count - Self.stallsShown, "more stall") + " (--format json lists all)")
        }
        if s.notKept > 0 {
            out.append(dim("  " + Format.count(s.notKept, "shorter stall") + " counted but not kept (only the longest "
                           + "\(StallCollection.defaultKeep) are)"))
        }

        // Groups only say more than the table when some stack recurs.
        if s.groups.count < s.stalls.count {
            out.append("  by stack (same kind, call and functions in the first sample):")
            var groups = Table(header: ["COUNT", "TOTAL", "MAX", "KIND", "STACK"], rightAligned: [0, 1, 2], flexible: [4])
            for g in s.groups.prefix(Self.stallGroupsShown) {
                groups.add([Cell(String(g.count)), Cell(Format.duration(g.totalUs)), Cell(Format.duration(g.maxUs)),
                            Cell(g.kind + (g.call.map { " " + $0 } ?? "")),
                            Cell(clip(g.stack.isEmpty ? "(no stack)" : g.stack.prefix(4).joined(separator: " ← "), 100))])
            }
            out += groups.render(self)
            if s.groups.count > Self.stallGroupsShown {
                out.append("  … " + Format.count(s.groups.count - Self.stallGroupsShown, "more stack"))
            }
        }

        // The stack of the longest stall of the first groups.
        for g in 0 ..< min(Self.stallStacksShown, s.groups.count) {
            guard let r = s.stalls.first(where: { $0.group == g }), !r.stack.isEmpty else { continue }
            var head = "  " + r.kind + " " + Format.duration(r.durationUs) + " in pid \(r.pid) " + r.program
                + ", thread " + threadLabel(r)
            if let cpu = r.cpuUs { head += ", " + Format.duration(cpu) + " on CPU" }
            head += ", " + what(r)
            if r.samples > 1 {
                head += "; " + Format.count(r.samples, "sample")
                    + (r.samplesDiffering > 0 ? ", " + Format.count(r.samplesDiffering, "later one differs", "later ones differ")
                                              : ", all the same")
            }
            out.append(head + ":")
            for (i, f) in r.stack.prefix(Self.stallFramesShown).enumerated() {
                var line = "    #\(i) " + f.text
                if f.function != nil, let m = f.module { line += dim("  " + basename(m)) }
                out.append(line)
            }
            if r.stack.count > Self.stallFramesShown {
                out.append("    … " + Format.count(r.stack.count - Self.stallFramesShown, "more frame"))
            }
        }
        for w in s.symbolWarnings { out.append(paint("  symbols: " + w.text, .yellow)) }
        return out
    }

    /// The busiest event loops of one process, under its VITALS lines.
    func loopLines(_ v: Report.VitalsRow) -> [String] {
        guard let loops = v.loops, !loops.isEmpty else { return [] }
        var out: [String] = []
        for l in loops.prefix(Self.loopsShown) {
            var line = "    loop " + (l.thread ?? "?") + " (\(l.tid)): "
            line += l.perS.map { Format.fixed($0, $0 < 10 ? 1 : 0) + " iterations/s" } ?? "\(l.iterations) iterations"
            if let b = l.busyPct {
                line += ", busy avg " + Format.fixed(b, 1) + "%"
                if let m = l.busyPctMax { line += " (max " + paint(Format.fixed(m, 1) + "%", m >= 90 ? .yellow : nil) + ")" }
            }
            if let m = l.maxBusyUs { line += ", longest busy " + Format.duration(m) }
            out.append(line)
        }
        if loops.count > Self.loopsShown {
            out.append("    … " + Format.count(loops.count - Self.loopsShown, "more loop thread"))
        }
        return out
    }

    private func threadLabel(_ r: Report.StallRow) -> String {
        switch (r.thread, r.tid) {
        case let (name?, tid?): return "\(name) (\(tid))"
        case let (name?, nil): return name
        case let (nil, tid?): return "tid \(tid)"
        default: return "?"
        }
    }

    /// loop: what it came back from; blocked: the call and what it was about.
    private func what(_ r: Report.StallRow) -> String {
        var parts: [String] = []
        if r.kind == "loop" {
            parts.append(r.after.map { "after " + $0 } ?? "busy")
        } else {
            parts.append(r.call ?? r.kind)
            if let fd = r.fd { parts.append("fd \(fd)") }
            if let peer = r.peer { parts.append(peer) }
            if let host = r.host { parts.append(r.peer == nil ? host : "(" + host + ")") }
            if let result = r.result { parts.append("→ " + result) }
        }
        if r.ongoing { parts.append("(ongoing at exit)") }
        return parts.joined(separator: " ")
    }

    private func frameName(_ f: Report.StallFrame) -> String {
        f.function ?? f.moduleOffset.map { basename(f.module ?? "?") + "+" + $0 } ?? f.address
    }

    private func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    private func clip(_ s: String, _ width: Int) -> String {
        s.count <= width ? s : String(s.prefix(width - 1)) + "…"
    }
}
