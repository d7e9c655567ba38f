/// Renders a `Report` for a terminal: headline, processes, peers, tree, warnings.
/// Colour is the caller's decision (TTY and NO_COLOR are CLI concerns); with `color: false`
/// the output is plain text, which is what the golden files hold.
public struct TextReport {
    public var color: Bool

    public init(color: Bool = false) { self.color = color }

    public func render(_ r: Report) -> String {
        var out: [String] = []
        let h = r.headline

        // Headline.
        out.append(bold("wedjat report") + ": " + Format.count(h.processes, "process", "processes")
                   + " (" + Format.count(h.logs, "log") + "), "
                   + span(h.startTs, h.endTs) + " UTC ("
                   + Format.duration(h.spanUs) + ")")
        var totals = [Format.count(h.connections, "connection"),
                      Format.bytes(h.bytesIn) + " in", Format.bytes(h.bytesOut) + " out"]
        totals.append(paint(Format.count(h.errors, "error"), h.errors > 0 ? .red : nil))
        if h.dnsLookups > 0 {
            totals.append(Format.count(h.dnsLookups, "DNS lookup") + (h.dnsErrors > 0 ? " (\(h.dnsErrors) failed)" : ""))
        }
        if h.httpRequests > 0 {
            totals.append(Format.count(Int(h.httpRequests), "HTTP request")
                          + (h.httpErrors > 0 ? paint(" (\(h.httpErrors) failed)", .red) : ""))
        }
        out.append("  " + totals.joined(separator: ", "))
        // What was lost, and the warnings that say more: a line of its own.
        var lost: [String] = []
        if h.droppedEvents > 0 { lost.append(Format.count(Int(h.droppedEvents), "event")) }
        if h.droppedRecords > 0 { lost.append(Format.count(Int(h.droppedRecords), "record")) }
        if h.captureDropped > 0 { lost.append(Format.count(Int(h.captureDropped), "capture slot")) }
        var loss = lost.isEmpty ? [] : ["dropped: " + lost.joined(separator: ", ")]
        if h.untrackedConnections > 0 { loss.append(Format.count(Int(h.untrackedConnections), "untracked connection")) }
        out.append("  " + paint(loss.isEmpty ? "0 drops" : loss.joined(separator: "; "), loss.isEmpty ? nil : .yellow)
                   + "; " + paint(Format.count(h.warnings, "warning"), h.warnings > 0 ? .yellow : nil))

        // Processes, one row per log (an exec'd image has its own row, status `exec → …`).
        out.append("")
        out.append(bold("PROCESSES"))
        var procTable = Table(header: ["PID", "PROGRAM", "EXE", "DURATION", "STATUS", "CONNS", "IN", "OUT", "DROPS"],
                              rightAligned: [0, 3, 5, 6, 7, 8])
        for p in r.processes {
            let drops = p.droppedEvents + p.droppedRecords + p.captureDropped + p.untrackedConnections
            procTable.add([
                Cell(String(p.pid)), Cell(p.program), Cell(p.exe ?? "-"), Cell(Format.duration(p.durationUs)),
                Cell(p.status, p.killed || (p.exitStatus ?? 0) != 0 || p.reason == "abort" ? .red : nil),
                Cell(String(p.connections)), Cell(Format.bytes(p.bytesIn)), Cell(Format.bytes(p.bytesOut)),
                Cell(String(drops), drops > 0 ? .yellow : nil),
            ])
        }
        out += procTable.render(self)

        // Peers.
        out.append("")
        out.append(bold("CONNECTIONS BY PEER"))
        if r.peers.isEmpty {
            out.append("  (no connections)")
        } else {
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
        }

        // HTTP exchanges, when there were any.
        if !r.http.isEmpty {
            out.append("")
            out.append(bold("HTTP BY HOST"))
            var httpTable = Table(header: ["HOST", "REQS", "STATUS", "TTFB P50", "TTFB P95", "P50 ms", "P95 ms", "P99 ms", "ERRORS"],
                                  rightAligned: [1, 3, 4, 5, 6, 7])
            for h in r.http {
                // `~`: the value includes http_summary distributions, so it is an upper bound.
                func ms(_ p: Report.Percentiles?, _ v: (Report.Percentiles) -> Int64) -> String {
                    guard let p else { return "-" }
                    return (p.summarized != nil ? "~" : "") + Format.ms(v(p))
                }
                var errors = String(h.errors)
                // http_summary records count their errors without naming them.
                let unnamed = h.errors - Int64(h.errorNames.reduce(0) { $0 + $1.count })
                var names = h.errorNames.prefix(3).map { (name: $0.name, count: Int64($0.count)) }
                if unnamed > 0 { names.append((name: "summarized", count: unnamed)) }
                if !names.isEmpty {
                    let items = names.map { $0.count == h.errors ? $0.name : "\($0.name)×\($0.count)" }
                    errors += " (" + items.joined(separator: ", ") + (h.errorNames.count > 3 ? ", …" : "") + ")"
                }
                httpTable.add([
                    Cell(h.key), Cell(String(h.requests)),
                    Cell(h.statusClasses.nonZero.map { "\($0.name)×\($0.count)" }.joined(separator: " ")),
                    Cell(ms(h.ttfbUs) { $0.p50 }), Cell(ms(h.ttfbUs) { $0.p95 }),
                    Cell(ms(h.durationUs) { $0.p50 }), Cell(ms(h.durationUs) { $0.p95 }), Cell(ms(h.durationUs) { $0.p99 }),
                    Cell(errors, h.errors > 0 ? .red : nil),
                ])
            }
            out += httpTable.render(self)
            let summarized = r.http.reduce(Int64(0)) { $0 + $1.summarized }
            if summarized > 0 {
                out.append("  ~ includes " + Format.count(Int(summarized), "exchange")
                           + " known from http_summary records only: those percentiles are upper bounds")
            }
        }

        // Tree.
        out.append("")
        out.append(bold("PROCESS TREE"))
        let byLog = Dictionary(r.processes.map { ($0.log, $0) }, uniquingKeysWith: { a, _ in a })
        func walk(_ n: Report.TreeNode, prefix: String, connector: String, childPrefix: String) {
            var facts: [String] = []
            if let last = n.logs.last.flatMap({ byLog[$0] }) { facts.append(last.status) }
            let conns = n.logs.compactMap { byLog[$0] }.reduce(0) { $0 + $1.connections }
            if conns > 0 { facts.append(Format.count(conns, "connection")) }
            out.append(prefix + dim(connector) + "\(n.pid) \(n.label)" + (facts.isEmpty ? "" : "  (" + facts.joined(separator: ", ") + ")"))
            for (i, c) in n.children.enumerated() {
                let last = i == n.children.count - 1
                walk(c, prefix: prefix + dim(childPrefix), connector: last ? "└─ " : "├─ ",
                     childPrefix: last ? "   " : "│  ")
            }
        }
        for root in r.tree { walk(root, prefix: "  ", connector: "", childPrefix: "") }

        // Warnings last, where they are seen after the data they qualify.
        out.append("")
        if r.warnings.isEmpty {
            out.append(bold("WARNINGS") + ": none")
        } else {
            out.append(paint(bold("WARNINGS (\(r.warnings.count))"), .yellow))
            for w in r.warnings { out.append("  " + w.text) }
        }
        return out.joined(separator: "\n") + "\n"
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
