/// Renders a `Report` for a terminal: a headline that fits a screen, then hosts, statuses,
/// the slowest exchanges, peers, stalls, vitals, start-up, processes, tree, drops, warnings.
/// Long sections show their first rows and say how many more `--format json` lists.
/// Colour is the caller's decision (TTY and NO_COLOR are CLI concerns); with `color: false`
/// the output is plain text, which is what the golden files hold.
public struct TextReport {
    public var color: Bool
    /// Columns the report fits in: the terminal's, or `defaultWidth` when not on one.
    public var width: Int
    public static let defaultWidth = 100

    public init(color: Bool = false, width: Int = TextReport.defaultWidth) {
        self.color = color
        self.width = max(40, width)
    }

    /// Rows shown of the long sections.
    static let processesShown = 30
    /// Rows of PROCESSES that quiet processes may fill (after the notable ones).
    static let quietFill = 10
    static let treeChildrenShown = 20
    static let treeLinesShown = 60
    /// Quiet children (no network in their whole subtrees) of a node are one line from this many.
    static let treeQuietFolded = 3
    /// Warnings shown of each kind: many killed processes must not hide a damaged line.
    static let warningsShown = 10

    public func render(_ r: Report) -> String {
        var out = headlineLines(r)
        out += hostLines(r.http)
        out += coverageLines(r)
        out += statusLines(r.statuses, requests: r.headline.httpRequests)
        out += slowestLines(r)
        out += peerLines(r)
        out += stallsLines(r.stalls)
        out += vitalsLines(r.vitals)
        out += startupLines(r.startup)
        out += processLines(r.processes)
        out += treeLines(r)
        out += dropLines(r.drops)
        out += warningLines(r.warnings)
        return out.flatMap(fit).joined(separator: "\n") + "\n"
    }

    /// A line wider than the report is wrapped at a space (continuations indented under its
    /// text); tables fit already (their flexible columns give way).
    func fit(_ line: String) -> [String] {
        guard TextReport.visibleCount(line) > width else { return [line] }
        // The line's own indent (past any colour escape at its start), and 4 more.
        var lead = 0, inEscape = false
        for c in line {
            if inEscape { if c == "m" { inEscape = false }; continue }
            if c == "\u{1B}" { inEscape = true; continue }
            guard c == " " else { break }
            lead += 1
        }
        let indent = String(repeating: " ", count: min(lead + 4, width / 2))
        var out: [String] = []
        var rest = Substring(line)
        var first = true
        while TextReport.visibleCount(String(rest)) + (first ? 0 : indent.count) > width {
            let room = width - (first ? 0 : indent.count)
            // The last space within the room, counting visible characters only.
            // Preferably after a `;` (between the parts of a line), else at the last space.
            // A space between a number and its unit or its label (`3.4 MiB`, `pid 23540`) is cut
            // only when the line has no other space to cut at.
            var visible = 0, cut: Substring.Index?, clause: Substring.Index?, clauseVisible = 0, i = rest.startIndex, inEscape = false
            var glued: Substring.Index?
            var previous: Character = " "
            while i < rest.endIndex, visible <= room {
                let c = rest[i]
                if inEscape { if c == "m" { inEscape = false } } else if c == "\u{1B}" { inEscape = true } else {
                    if c == " ", visible > room / 3 {
                        let next = rest.index(after: i) < rest.endIndex ? rest[rest.index(after: i)] : " "
                        if TextReport.glues(previous, next) { glued = i } else {
                            cut = i
                            if previous == ";" { clause = i; clauseVisible = visible }
                        }
                    }
                    visible += 1
                    previous = c
                }
                i = rest.index(after: i)
            }
            if let c = clause, clauseVisible > room / 2 { cut = c }
            if cut == nil { cut = glued }
            guard let at = cut else {
                // One word longer than the room (a path): cut inside it.
                var visible = 0, j = rest.startIndex, inEscape = false
                while j < rest.endIndex {
                    let c = rest[j]
                    if inEscape { if c == "m" { inEscape = false } } else if c == "\u{1B}" { inEscape = true } else {
                        if visible == room { break }
                        visible += 1
                    }
                    j = rest.index(after: j)
                }
                out.append((first ? "" : indent) + String(rest[..<j]))
                rest = rest[j...]
                first = false
                continue
            }
            var head = rest[..<at]
            while head.last == " " { head = head.dropLast() }
            out.append((first ? "" : indent) + String(head))
            rest = rest[rest.index(after: at)...]
            while rest.first == " " { rest = rest.dropFirst() }
            first = false
        }
        out.append((first ? "" : indent) + String(rest))
        return out
    }

    /// Whether a space between these two characters joins a number to its unit or label
    /// (`3.4 MiB`, `12 ms`, `pid 23540`, `peak 29.2`): a line is not wrapped there if it can be
    /// wrapped elsewhere.
    static func glues(_ before: Character, _ after: Character) -> Bool {
        (before.isNumber && (after.isLetter || after == "%")) || (before.isLetter && after.isNumber)
    }

    /// Characters a terminal shows (colour escapes left out).
    static func visibleCount(_ s: String) -> Int {
        var n = 0, inEscape = false
        for c in s {
            if inEscape { if c == "m" { inEscape = false } } else if c == "\u{1B}" { inEscape = true } else { n += 1 }
        }
        return n
    }

    /// Processes, one row per process: an exec chain (a shell or an interpreter shim that execs
    /// the real program) is one row, named by its last program, the ones before it as `via`.
    /// Those with network activity, a failure or losses come first; the quiet rest is counted by
    /// program when it does not fit.
    func processLines(_ processes: [Report.ProcessRow]) -> [String] {
        var out = ["", bold("PROCESSES")]
        var next: [String: Int] = [:]
        for (i, p) in processes.enumerated() { if let from = p.execFrom { next[from] = i } }
        let inChain = Set(processes.compactMap(\.execFrom))
        var chains: [[Report.ProcessRow]] = []
        let byLog = Dictionary(processes.map { ($0.log, $0) }, uniquingKeysWith: { a, _ in a })
        for p in processes where p.execFrom.flatMap({ byLog[$0] }) == nil {
            var chain = [p]
            var seen: Set<String> = [p.log]
            while let n = next[chain.last!.log], seen.insert(processes[n].log).inserted { chain.append(processes[n]) }
            chains.append(chain)
        }
        _ = inChain
        func notable(_ c: [Report.ProcessRow]) -> Bool {
            c.contains { $0.connections > 0 || $0.httpRequests > 0 || $0.killed || $0.reason == "abort"
                || ($0.reason != "exec" && ($0.exitStatus ?? 0) != 0)
                || $0.droppedEvents + $0.droppedRecords + $0.captureDropped + $0.untrackedConnections > 0 }
        }
        // Quiet processes (no network, exit 0: a shell's subshells, an interpreter shim's
        // helpers) only fill the table up to `quietFill` rows; the rest are counted by program.
        let loud = chains.filter(notable)
        let quiet = chains.filter { !notable($0) }
        let ordered = Array(loud.prefix(Self.processesShown))
            + quiet.prefix(Swift.max(0, Self.quietFill - loud.count))
            + loud.dropFirst(Self.processesShown) + quiet.dropFirst(Swift.max(0, Self.quietFill - loud.count))
        let shownCount = Swift.min(loud.count, Self.processesShown) + Swift.min(quiet.count, Swift.max(0, Self.quietFill - loud.count))
        var procTable = Table(header: ["PID", "PROGRAM", "EXE", "DURATION", "STATUS", "CONNS", "IN", "OUT", "DROPS"],
                              rightAligned: [0, 3, 5, 6, 7, 8], flexible: [1, 2, 4])
        // The status is cut last (`killed by SIGTERM` says more than a path); narrow, the
        // executable's path then the duration are left out (and said).
        procTable.cutLast = [4]
        procTable.droppable = [2, 3]
        for c in ordered.prefix(shownCount) {
            let last = c.last!
            var via: [String] = []
            // Each program once (a shim chain alternates env and bash several times).
            for p in c.dropLast() where !via.contains(p.program) && p.program != last.program { via.append(p.program) }
            let drops = c.reduce(Int64(0)) { $0 + $1.droppedEvents + $1.droppedRecords + $1.captureDropped + $1.untrackedConnections }
            procTable.add([
                Cell(String(last.pid)), Cell(last.program + (via.isEmpty ? "" : " (via " + via.joined(separator: " → ") + ")")),
                Cell(last.exe ?? "-", cutLeft: true), Cell(Format.duration(c.reduce(Int64(0)) { $0 + $1.durationUs })),
                Cell(last.status, last.killed || (last.exitStatus ?? 0) != 0 || last.reason == "abort" ? .red : nil),
                Cell(String(c.reduce(0) { $0 + $1.connections })), Cell(Format.bytes(c.reduce(Int64(0)) { $0 + $1.bytesIn })),
                Cell(Format.bytes(c.reduce(Int64(0)) { $0 + $1.bytesOut })), Cell(String(drops), drops > 0 ? .yellow : nil),
            ])
        }
        out += procTable.render(self)
        let droppedColumns = procTable.dropped(self)
        if !droppedColumns.isEmpty {
            out.append(dim("  (" + droppedColumns.joined(separator: ", ") + " left out at this width: a wider terminal, or --format json)"))
        }
        let rest = ordered.dropFirst(shownCount)
        if !rest.isEmpty {
            var byProgram: [String: Int] = [:]
            for c in rest { byProgram[c.last!.program, default: 0] += 1 }
            let allQuiet = rest.allSatisfy { !notable($0) }
            out.append("  … " + Format.count(rest.count, "more process", "more processes")
                       + (allQuiet ? " without network activity" : "") + ": "
                       + rankedCounts(byProgram).prefix(6).map { "\($0.name)×\($0.count)" }.joined(separator: ", ")
                       + (byProgram.count > 6 ? ", …" : "") + " (--format json lists all)")
        }
        return out
    }

    func peerLines(_ r: Report) -> [String] {
        var out = ["", bold("CONNECTIONS BY PEER")]
        guard !r.peers.isEmpty else { return out + ["  (no connections)"] }
        var peerTable = Table(header: ["PEER", "COUNT", "IN", "OUT", "P50", "P95", "P99", "ERRORS"],
                              rightAligned: [1, 2, 3, 4, 5, 6], flexible: [0, 7])
        for p in r.peers {
            let pct = p.durationUs
            var errors = String(p.errors)
            if !p.errorNames.isEmpty {
                // The three most common are enough to see what went wrong.
                let names = p.errorNames.prefix(3).map { $0.count == p.errors ? $0.name : "\($0.name)×\($0.count)" }
                errors += " (" + names.joined(separator: ", ") + (p.errorNames.count > 3 ? ", …" : "") + ")"
            }
            peerTable.add([
                Cell(p.key), Cell(String(p.count)), Cell(Format.bytes(p.bytesIn)), Cell(Format.bytes(p.bytesOut)),
                Cell(pct.map { Format.shortDuration($0.p50) } ?? "-"), Cell(pct.map { Format.shortDuration($0.p95) } ?? "-"),
                Cell(pct.map { Format.shortDuration($0.p99) } ?? "-"), Cell(errors, p.errors > 0 ? .red : nil),
            ])
        }
        out += peerTable.render(self)
        out += connectionLines(r.connectionStats)
        return out
    }

    /// The fork/exec tree; a node shows its first children, and the whole tree its first lines.
    func treeLines(_ r: Report) -> [String] {
        var out = ["", bold("PROCESS TREE")]
        let byLog = Dictionary(r.processes.map { ($0.log, $0) }, uniquingKeysWith: { a, _ in a })
        var lines = 0, cut = 0
        func count(_ n: Report.TreeNode) -> Int { 1 + n.children.reduce(0) { $0 + count($1) } }
        func quiet(_ n: Report.TreeNode) -> Bool {
            n.logs.allSatisfy { byLog[$0].map { $0.connections == 0 && $0.httpRequests == 0 } ?? true } && n.children.allSatisfy(quiet)
        }
        func walk(_ n: Report.TreeNode, prefix: String, connector: String, childPrefix: String) {
            guard lines < Self.treeLinesShown else { cut += count(n); return }
            lines += 1
            var facts: [String] = []
            if let last = n.logs.last.flatMap({ byLog[$0] }) { facts.append(last.status) }
            let conns = n.logs.compactMap { byLog[$0] }.reduce(0) { $0 + $1.connections }
            if conns > 0 { facts.append(Format.count(conns, "connection")) }
            out.append(prefix + dim(connector) + "\(n.pid) \(n.label)" + (facts.isEmpty ? "" : "  (" + facts.joined(separator: ", ") + ")"))
            // Children that, with all theirs, had no network activity (a shell's subshells, an
            // interpreter shim's helpers) are one line when there are several.
            let quietCount = n.children.reduce(0) { $0 + count($1) }
            if quietCount >= Self.treeQuietFolded, n.children.allSatisfy(quiet) {
                var byProgram: [String: Int] = [:], failed = 0
                func tally(_ c: Report.TreeNode) {
                    byProgram[c.programs.last ?? c.label, default: 0] += 1
                    if let p = c.logs.last.flatMap({ byLog[$0] }), p.killed || p.reason == "abort" || (p.reason != "exec" && (p.exitStatus ?? 0) != 0) {
                        failed += 1
                    }
                    c.children.forEach(tally)
                }
                n.children.forEach(tally)
                lines += 1
                out.append(prefix + dim(childPrefix) + dim("└─ ") + "… " + Format.count(quietCount, "process", "processes")
                           + " without network activity: "
                           + rankedCounts(byProgram).prefix(4).map { "\($0.name)×\($0.count)" }.joined(separator: ", ")
                           + (byProgram.count > 4 ? ", …" : "") + (failed > 0 ? "; \(failed) exited non-zero" : ""))
                return
            }
            let shown = n.children.prefix(Self.treeChildrenShown)
            let hidden = n.children.dropFirst(Self.treeChildrenShown)
            for (i, c) in shown.enumerated() {
                let last = i == shown.count - 1 && hidden.isEmpty
                walk(c, prefix: prefix + dim(childPrefix), connector: last ? "└─ " : "├─ ",
                     childPrefix: last ? "   " : "│  ")
            }
            if !hidden.isEmpty, lines < Self.treeLinesShown {
                lines += 1
                let n = hidden.reduce(0) { $0 + count($1) }
                out.append(prefix + dim(childPrefix) + dim("└─ ") + "… " + Format.count(n, "more process", "more processes"))
            } else {
                cut += hidden.reduce(0) { $0 + count($1) }
            }
        }
        for root in r.tree { walk(root, prefix: "  ", connector: "", childPrefix: "") }
        out += more(cut, "process", "processes", what: "in the tree")
        return out
    }

    /// Warnings last, where they are seen after the data they qualify.
    func warningLines(_ warnings: [Report.WarningItem]) -> [String] {
        guard !warnings.isEmpty else { return ["", bold("WARNINGS") + ": none"] }
        var out = ["", paint(bold("WARNINGS (\(warnings.count))"), .yellow)]
        var kinds: [String] = []
        for w in warnings where !kinds.contains(w.kind) { kinds.append(w.kind) }
        for kind in kinds {
            let ofKind = warnings.filter { $0.kind == kind }
            for w in ofKind.prefix(Self.warningsShown) { out.append("  " + w.text) }
            out += more(ofKind.count - Self.warningsShown, "warning", what: "of this kind (\(kind))")
        }
        return out
    }

    /// `  … 12 more processes (--format json lists all)`, or nothing.
    func more(_ n: Int, _ singular: String, _ plural: String? = nil, what: String = "") -> [String] {
        guard n > 0 else { return [] }
        return ["  … " + Format.count(n, "more " + singular, "more " + (plural ?? singular + "s"))
                + (what.isEmpty ? "" : " " + what) + " (--format json lists all)"]
    }

    /// Totals under the peer table: transports, TLS handshakes, errors by phase (the last two
    /// only when there are some).
    func connectionLines(_ c: Report.ConnectionStatsRow) -> [String] {
        func list(_ items: [Report.NameCount]) -> String { items.map { "\($0.name)×\($0.count)" }.joined(separator: ", ") }
        var lines = ["  transports: " + list(c.transports)]
        if c.tls.connections > 0 {
            var line = "  TLS: " + Format.count(c.tls.connections, "connection")
            if c.tls.unfinished > 0 { line += " (" + paint("\(c.tls.unfinished) handshake\(c.tls.unfinished == 1 ? "" : "s") unfinished", .red) + ")" }
            if let hs = c.tls.handshakeUs {
                line += ", handshake p50 " + Format.duration(hs.p50) + ", p95 " + Format.duration(hs.p95)
            }
            lines.append(line)
            var facts: [String] = []
            if !c.tls.versions.isEmpty { facts.append(list(c.tls.versions)) }
            if !c.tls.libraries.isEmpty { facts.append(list(c.tls.libraries)) }
            if !c.tls.alpn.isEmpty { facts.append("ALPN " + list(c.tls.alpn)) }
            if !facts.isEmpty { lines.append("       " + facts.joined(separator: "; ")) }
        }
        if !c.errors.isEmpty {
            // Grouped by phase, in the order rankedErrors gives (connect, tls, io, ..., unknown).
            var groups: [(phase: String, items: [String])] = []
            for e in c.errors {
                let item = "\(e.name)×\(e.count)"
                if groups.last?.phase == e.phase { groups[groups.count - 1].items.append(item) }
                else { groups.append((e.phase, [item])) }
            }
            let text = groups.map { ($0.phase == "?" ? "" : $0.phase + ": ") + $0.items.joined(separator: ", ") }
            lines.append("  errors: " + paint(text.joined(separator: "; "), .red))
        }
        return lines
    }

    /// Processes shown in VITALS, and programs in STARTUP: the report's top must fit a screen.
    static let vitalsShown = 4
    static let startupShown = 8

    /// CPU and RSS over time of the busiest processes, with their totals; nothing without samples.
    func vitalsLines(_ rows: [Report.VitalsRow]) -> [String] {
        guard !rows.isEmpty else { return [] }
        // One row per process: the programs an exec chain ran before its last (a shell, an
        // interpreter shim) have rows of their own, a sample or two each, and would fill the section.
        var seenPids: Set<Int> = []
        let perProcess = rows.filter { seenPids.insert($0.pid).inserted }
        let shown = perProcess.prefix(Self.vitalsShown)
        var out = ["", bold("VITALS") + (perProcess.count > shown.count
            ? " (busiest \(shown.count) of \(perProcess.count) processes with samples)" : "")]
        let width = shown.map { Swift.max($0.cpuSparkline.count, $0.rssSparkline.count) }.max() ?? 0
        func spark(_ s: String) -> String { s + String(repeating: " ", count: width - s.count) }
        func pct(_ v: Double) -> String { Format.fixed(v, 1) + "%" }
        // Reasons with the processes they apply to, in order of appearance.
        var energyReasons: [(why: String, pids: [Int])] = [], batteryReasons: [(why: String, pids: [Int])] = []
        func note(_ why: String, _ pid: Int, _ list: inout [(why: String, pids: [Int])]) {
            if let i = list.firstIndex(where: { $0.why == why }) { list[i].pids.append(pid) } else { list.append((why, [pid])) }
        }
        func trimmed(_ s: String) -> String {
            var s = Substring(s)
            while s.last == " " { s = s.dropLast() }
            return String(s)
        }
        for v in shown {
            var head = "  \(v.pid) \(v.program)  " + Format.count(v.samples, "sample") + " over " + Format.duration(v.durationUs)
            if let t = v.cpuTimeUs { head += ", CPU time " + Format.duration(t) }
            out.append(head)
            var cpu = "    CPU  " + spark(v.cpuSparkline)
            if let c = v.cpuPct {
                cpu += "  min " + pct(c.min) + "  avg " + pct(c.avg) + "  max " + paint(pct(c.max), c.max >= 90 ? .yellow : nil)
            }
            if let b = v.systemBusyPct { cpu += dim("  (system busy avg " + pct(b) + ")") }
            out.append(trimmed(cpu))
            var rss = "    RSS  " + spark(v.rssSparkline)
            if let m = v.rssBytes {
                rss += "  min " + Format.bytes(m.min) + "  avg " + Format.bytes(m.avg) + "  max " + Format.bytes(m.max)
            }
            if let p = v.peakRssBytes { rss += "  peak " + Format.bytes(p) }
            if let why = v.memoryUnavailable { rss = "    RSS  unavailable: " + why }
            out.append(trimmed(rss))
            var facts: [String] = []
            if let t = v.threadsMax { facts.append("threads max \(t)") }
            if let f = v.fdsMax { facts.append("fds max \(f)") }
            if let t = v.busiestThread {
                facts.append("busiest thread " + (t.name ?? "?") + " (\(t.tid)) avg " + pct(t.cpuPct))
            }
            if let minor = v.minorFaults, let major = v.majorFaults {
                facts.append("page faults \(minor) minor, " + paint("\(major) major", major > 0 ? .yellow : nil))
            }
            var energy: [String] = []
            if let e = v.energy {
                energy.append("energy " + Format.fixed(e.energyJ, 3) + " J" + (e.watts.map { " (" + Format.fixed($0, 2) + " W avg)" } ?? ""))
            } else if let why = v.energyUnavailable {
                note(why, v.pid, &energyReasons)
            }
            if let bs = v.batteries, !bs.isEmpty {
                energy.append("battery " + bs.map { b in
                    [b.name ?? "?", b.capacityPct.map { "\($0)%" }, b.status].compactMap { $0 }.joined(separator: " ")
                }.joined(separator: ", "))
            } else if let why = v.batteryUnavailable {
                note(why, v.pid, &batteryReasons)
            }
            if !facts.isEmpty { out.append("    " + facts.joined(separator: ", ")) }
            if !energy.isEmpty { out.append("    " + energy.joined(separator: "; ")) }
            out += loopLines(v)
        }
        // Energy and battery readings that were unavailable are in the JSON (`energy_unavailable`,
        // `battery_unavailable`): on a server or a VM they are on every report and say nothing.
        _ = (energyReasons, batteryReasons)
        if perProcess.count > shown.count {
            out.append("  … " + Format.count(perProcess.count - shown.count, "more process", "more processes")
                       + " with samples (--format json lists all)")
        }
        return out
    }

    /// Start-up times by program: median / max over its processes, and the slowest one.
    func startupLines(_ rows: [Report.StartupRow]) -> [String] {
        guard !rows.isEmpty else { return [] }
        let shown = rows.prefix(Self.startupShown)
        var out = ["", bold("STARTUP") + " (from exec; median / max over a program's processes)"]
        var table = Table(header: ["PROGRAM", "PROCS", "CONSTRUCTOR", "MAIN", "READY", "READY CALL", "SLOWEST"],
                          rightAligned: [1, 2, 3, 4], flexible: [0])
        // Narrower than all seven: the slowest process, then the ready call, are left out (and said).
        table.droppable = [6, 5]
        func spread(_ s: Report.StartupSpread?) -> String {
            guard let s else { return "-" }
            return s.count == 1 ? Format.duration(s.max) : Format.duration(s.median) + " / " + Format.duration(s.max)
        }
        for r in shown {
            let slow = r.slowest
            table.add([
                Cell(r.program + (r.coarse > 0 ? "*" : "")), Cell(String(r.processes)), Cell(spread(r.constructorUs)),
                Cell(spread(r.mainUs)), Cell(spread(r.readyUs)),
                Cell(r.readyCalls.isEmpty ? "-" : r.readyCalls.prefix(2).map(\.name).joined(separator: ", ")
                     + (r.readyCalls.count > 2 ? ", …" : "")),
                Cell("pid \(slow.pid)" + (slow.totalUs.map { " " + Format.duration($0) } ?? "")),
            ])
        }
        out += table.render(self)
        let dropped = table.dropped(self)
        if !dropped.isEmpty {
            out.append(dim("  (" + dropped.joined(separator: ", ") + " left out at this width: a wider terminal, or --format json)"))
        }
        let coarse = shown.filter { $0.coarse > 0 }
        if !coarse.isEmpty {
            let res = coarse.compactMap(\.coarseResolutionUs).max()
            out.append(dim("  * " + Format.count(coarse.reduce(0) { $0 + $1.coarse }, "process", "processes")
                           + " timed from the kernel's start of the process (its exec was not watched), in clock ticks: up to "
                           + (res.map { Format.duration($0) } ?? "one tick") + " too long"))
        }
        if rows.count > shown.count {
            out.append("  … " + Format.count(rows.count - shown.count, "more program") + " (--format json lists all)")
        }
        return out
    }

    /// `2025-11-22 03:35:10.000 → 03:35:10.600`: the date once when both ends share it.
    func span(_ from: Int64, _ to: Int64) -> String {
        let a = Format.timestamp(from), b = Format.timestamp(to)
        return a.prefix(11) == b.prefix(11) ? a + " → " + b.dropFirst(11) : a + " → " + b
    }

    // MARK: styling

    enum Colour: String { case red = "31", yellow = "33" }

    func paint(_ s: String, _ c: Colour?) -> String {
        guard color, let c else { return s }
        return "\u{1B}[\(c.rawValue)m" + s + "\u{1B}[0m"
    }
    func bold(_ s: String) -> String { color ? "\u{1B}[1m" + s + "\u{1B}[0m" : s }
    func dim(_ s: String) -> String { color && !s.isEmpty ? "\u{1B}[2m" + s + "\u{1B}[0m" : s }
}

struct Cell {
    var text: String
    var colour: TextReport.Colour?
    /// Cut at the start when too wide (a log path: its end, the file name and line, says more).
    var cutLeft = false
    init(_ text: String, _ colour: TextReport.Colour? = nil, cutLeft: Bool = false) {
        self.text = text; self.colour = colour; self.cutLeft = cutLeft
    }
}

/// Column-aligned table. Widths are measured on the plain text, colour is applied after
/// padding, so escape codes never break the alignment. When the rows are wider than the
/// report's width, the `flexible` columns (free text: hosts, paths, peers) give way, the widest
/// first, their cells cut with `…`.
struct Table {
    let header: [String]
    let rightAligned: Set<Int>
    let flexible: Set<Int>
    var rows: [[Cell]] = []
    /// A line under a row (its details), indented to the `detailColumn`.
    var details: [Int: String] = [:]
    var detailColumn = 0
    /// Columns left out, in this order, when the flexible ones cannot give enough room.
    var droppable: [Int] = []
    /// Narrowest the flexible columns are cut to.
    var minFlexible = Table.minFlexible
    /// Flexible columns cut only once the other flexible ones are at `minFlexible`.
    var cutLast: Set<Int> = []
    /// Narrowest a flexible column is cut to.
    static let minFlexible = 14

    init(header: [String], rightAligned: Set<Int>, flexible: Set<Int> = []) {
        self.header = header; self.rightAligned = rightAligned; self.flexible = flexible
    }

    mutating func add(_ row: [Cell], detail: String? = nil) {
        if let detail { details[rows.count] = detail }
        rows.append(row)
    }

    /// The header names of the columns `render` leaves out at this width.
    func dropped(_ style: TextReport) -> [String] { layout(style).dropped.map { header[$0] } }

    private func layout(_ style: TextReport) -> (widths: [Int], dropped: [Int]) {
        var widths = header.map(\.count)
        for row in rows { for (i, c) in row.enumerated() { widths[i] = max(widths[i], c.text.count) } }
        var dropped: [Int] = []
        func total() -> Int {
            let shown = widths.indices.filter { !dropped.contains($0) }
            return 2 + shown.reduce(0) { $0 + (flexible.contains($1) ? min(widths[$1], minFlexible) : widths[$1]) }
                + 2 * (shown.count - 1)
        }
        for d in droppable where total() > style.width { dropped.append(d) }
        return (widths, dropped)
    }

    func render(_ style: TextReport) -> [String] {
        var (widths, dropped) = layout(style)
        let header = self.header.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
        let rows = self.rows.map { $0.enumerated().filter { !dropped.contains($0.offset) }.map(\.element) }
        let keptIndex = self.header.indices.filter { !dropped.contains($0) }
        let flexible = Set(keptIndex.enumerated().filter { self.flexible.contains($0.element) }.map(\.offset))
        let rightAligned = Set(keptIndex.enumerated().filter { self.rightAligned.contains($0.element) }.map(\.offset))
        let detailColumn = keptIndex.filter { $0 < self.detailColumn }.count
        widths = keptIndex.map { widths[$0] }
        // 2 of indent, 2 between columns.
        var total = 2 + widths.reduce(0, +) + 2 * (widths.count - 1)
        while total > style.width {
            // The widest; of equally wide ones the rightmost (a Set's order differs from run to run).
            let cuttable = flexible.filter { widths[$0] > minFlexible }
            let first = cuttable.filter { !cutLast.contains(keptIndex[$0]) }
            guard let i = (first.isEmpty ? cuttable : first).max(by: { (widths[$0], $0) < (widths[$1], $1) }) else { break }
            let others = flexible.filter { $0 != i }.map { widths[$0] }.max() ?? minFlexible
            let cut = min(total - style.width, widths[i] - max(minFlexible, min(widths[i] - 1, others)))
            widths[i] -= max(1, cut)
            total -= max(1, cut)
        }
        func line(_ cells: [Cell], header: Bool) -> String {
            var parts: [String] = []
            for (i, c) in cells.enumerated() {
                let text = c.text.count <= widths[i] ? c.text
                    : c.cutLeft ? "…" + String(c.text.suffix(widths[i] - 1)) : String(c.text.prefix(widths[i] - 1)) + "…"
                let pad = String(repeating: " ", count: widths[i] - text.count)
                let last = i == cells.count - 1
                let padded = rightAligned.contains(i) ? pad + text : text + (last ? "" : pad)
                parts.append(header ? padded : style.paint(padded, c.colour))
            }
            let joined = parts.joined(separator: "  ")
            return "  " + (header ? style.bold(joined) : joined)
        }
        // Under the detail column, unless that leaves too little room (a narrow terminal).
        let indent = String(repeating: " ", count: min(2 + widths.prefix(detailColumn).reduce(0) { $0 + $1 + 2 }, style.width / 2))
        var out = [line(header.map { Cell($0) }, header: true)]
        for (i, row) in rows.enumerated() {
            out.append(line(row, header: false))
            if let d = details[i] { out += style.fit(indent + d) }
        }
        return out
    }
}
