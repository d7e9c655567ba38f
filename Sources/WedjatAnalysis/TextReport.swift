/// Renders a `Report` for a terminal: a headline that fits a screen, then hosts, statuses,
/// the slowest exchanges, peers, stalls, vitals, start-up, processes, tree, drops, warnings.
/// Long sections show their first rows and say how many more `--format json` lists.
/// Colour is the caller's decision (TTY and NO_COLOR are CLI concerns); with `color: false`
/// the output is plain text, which is what the golden files hold.
public struct TextReport {
    public var color: Bool

    public init(color: Bool = false) { self.color = color }

    /// Rows shown of the long sections.
    static let processesShown = 30
    static let treeChildrenShown = 20
    static let treeLinesShown = 60
    /// Warnings shown of each kind: many killed processes must not hide a damaged line.
    static let warningsShown = 10

    public func render(_ r: Report) -> String {
        var out = headlineLines(r.headline)
        out += hostLines(r.http)
        out += statusLines(r.statuses, requests: r.headline.httpRequests)
        out += slowestLines(r.slowest, requests: r.headline.httpRequests)
        out += peerLines(r)
        out += stallsLines(r.stalls)
        out += vitalsLines(r.vitals)
        out += startupLines(r.startup)
        out += processLines(r.processes)
        out += treeLines(r)
        out += dropLines(r.drops)
        out += warningLines(r.warnings)
        return out.joined(separator: "\n") + "\n"
    }

    /// Processes, one row per log (an exec'd image has its own row, status `exec → …`).
    func processLines(_ processes: [Report.ProcessRow]) -> [String] {
        var out = ["", bold("PROCESSES")]
        var procTable = Table(header: ["PID", "PROGRAM", "EXE", "DURATION", "STATUS", "CONNS", "IN", "OUT", "DROPS"],
                              rightAligned: [0, 3, 5, 6, 7, 8])
        for p in processes.prefix(Self.processesShown) {
            let drops = p.droppedEvents + p.droppedRecords + p.captureDropped + p.untrackedConnections
            procTable.add([
                Cell(String(p.pid)), Cell(p.program), Cell(p.exe ?? "-"), Cell(Format.duration(p.durationUs)),
                Cell(p.status, p.killed || (p.exitStatus ?? 0) != 0 || p.reason == "abort" ? .red : nil),
                Cell(String(p.connections)), Cell(Format.bytes(p.bytesIn)), Cell(Format.bytes(p.bytesOut)),
                Cell(String(drops), drops > 0 ? .yellow : nil),
            ])
        }
        out += procTable.render(self)
        out += more(processes.count - Self.processesShown, "process", "processes")
        return out
    }

    func peerLines(_ r: Report) -> [String] {
        var out = ["", bold("CONNECTIONS BY PEER")]
        guard !r.peers.isEmpty else { return out + ["  (no connections)"] }
        var peerTable = Table(header: ["PEER", "COUNT", "IN", "OUT", "P50 ms", "P95 ms", "P99 ms", "ERRORS"],
                              rightAligned: [1, 2, 3, 4, 5, 6])
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
                Cell(pct.map { Format.ms($0.p50) } ?? "-"), Cell(pct.map { Format.ms($0.p95) } ?? "-"),
                Cell(pct.map { Format.ms($0.p99) } ?? "-"), Cell(errors, p.errors > 0 ? .red : nil),
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
        func walk(_ n: Report.TreeNode, prefix: String, connector: String, childPrefix: String) {
            guard lines < Self.treeLinesShown else { cut += count(n); return }
            lines += 1
            var facts: [String] = []
            if let last = n.logs.last.flatMap({ byLog[$0] }) { facts.append(last.status) }
            let conns = n.logs.compactMap { byLog[$0] }.reduce(0) { $0 + $1.connections }
            if conns > 0 { facts.append(Format.count(conns, "connection")) }
            out.append(prefix + dim(connector) + "\(n.pid) \(n.label)" + (facts.isEmpty ? "" : "  (" + facts.joined(separator: ", ") + ")"))
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
        let shown = rows.prefix(Self.vitalsShown)
        var out = ["", bold("VITALS") + (rows.count > shown.count
            ? " (busiest \(shown.count) of \(rows.count) processes with samples)" : "")]
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
        // The reasons once, not per process.
        for (what, reasons) in [("energy", energyReasons), ("battery", batteryReasons)] {
            for r in reasons {
                let who = r.pids.count == shown.count ? "" : " (pid " + r.pids.map(String.init).joined(separator: ", ") + ")"
                out.append(dim("  \(what) unavailable\(who): " + r.why))
            }
        }
        if rows.count > shown.count {
            out.append("  … " + Format.count(rows.count - shown.count, "more process", "more processes")
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
                          rightAligned: [1, 2, 3, 4])
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
        let coarse = shown.filter { $0.coarse > 0 }
        if !coarse.isEmpty {
            let res = coarse.compactMap(\.coarseResolutionUs).max()
            out.append(dim("  * " + Format.count(coarse.reduce(0) { $0 + $1.coarse }, "process", "processes")
                           + " timed from the kernel's start time (exec_source process_start, clock ticks): up to "
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
    init(_ text: String, _ colour: TextReport.Colour? = nil) { self.text = text; self.colour = colour }
}

/// Column-aligned table. Widths are measured on the plain text, colour is applied after
/// padding, so escape codes never break the alignment.
struct Table {
    let header: [String]
    let rightAligned: Set<Int>
    var rows: [[Cell]] = []

    init(header: [String], rightAligned: Set<Int>) { self.header = header; self.rightAligned = rightAligned }

    mutating func add(_ row: [Cell]) { rows.append(row) }

    func render(_ style: TextReport) -> [String] {
        var widths = header.map(\.count)
        for row in rows { for (i, c) in row.enumerated() { widths[i] = max(widths[i], c.text.count) } }
        func line(_ cells: [Cell], header: Bool) -> String {
            var parts: [String] = []
            for (i, c) in cells.enumerated() {
                let pad = String(repeating: " ", count: widths[i] - c.text.count)
                let last = i == cells.count - 1
                let text = rightAligned.contains(i) ? pad + c.text : c.text + (last ? "" : pad)
                parts.append(header ? text : style.paint(text, c.colour))
            }
            let joined = parts.joined(separator: "  ")
            return "  " + (header ? style.bold(joined) : joined)
        }
        return [line(header.map { Cell($0) }, header: true)] + rows.map { line($0, header: false) }
    }
}
