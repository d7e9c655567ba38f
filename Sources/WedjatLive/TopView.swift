import Foundation
import WedjatAnalysis

/// Renders `TopSnapshot`s: a screen for a terminal, or key=value lines (one per process and
/// host per interval) when the output is not one.
public struct TopView {
    public enum SortKey: String, CaseIterable {
        case requests, errors, p99, cpu, rss, pid, name

        /// The key that selects it on screen.
        public var letter: Character {
            switch self {
            case .requests: "r"
            case .errors: "e"
            case .p99: "l"
            case .cpu: "c"
            case .rss: "m"
            case .pid: "p"
            case .name: "n"
            }
        }

        public init?(letter: Character) {
            guard let k = SortKey.allCases.first(where: { $0.letter == letter }) else { return nil }
            self = k
        }
    }

    public var sort: SortKey
    public var directory: String

    public init(directory: String, sort: SortKey = .requests) { self.directory = directory; self.sort = sort }

    func sorted(_ rows: [TopSnapshot.ProcessRow]) -> [TopSnapshot.ProcessRow] {
        rows.sorted { a, b in
            // Ended processes last, whatever the order.
            if a.ended != b.ended { return !a.ended }
            func desc<T: Comparable>(_ x: T?, _ y: T?) -> Bool? {
                switch (x, y) {
                case let (x?, y?) where x != y: return x > y
                case (_?, nil): return true
                case (nil, _?): return false
                default: return nil
                }
            }
            let decided: Bool?
            switch sort {
            case .requests: decided = desc(a.rates.requestsPerS, b.rates.requestsPerS)
            case .errors: decided = desc(a.rates.errorPct, b.rates.errorPct)
            case .p99: decided = desc(a.rates.p99Us, b.rates.p99Us)
            case .cpu: decided = desc(a.cpuPct, b.cpuPct)
            case .rss: decided = desc(a.rssBytes, b.rssBytes)
            case .pid: decided = a.pid != b.pid ? a.pid < b.pid : nil
            case .name: decided = a.program != b.program ? a.program < b.program : nil
            }
            return decided ?? (a.pid < b.pid)
        }
    }

    func sortedHosts(_ hosts: [TopSnapshot.HostRow]) -> [TopSnapshot.HostRow] {
        hosts.sorted { a, b in
            switch sort {
            case .errors where a.rates.errorPct != b.rates.errorPct: return (a.rates.errorPct ?? -1) > (b.rates.errorPct ?? -1)
            case .p99 where a.rates.p99Us != b.rates.p99Us: return (a.rates.p99Us ?? -1) > (b.rates.p99Us ?? -1)
            case .name, .pid: return a.label < b.label
            default:
                return a.rates.requestsPerS != b.rates.requestsPerS ? a.rates.requestsPerS > b.rates.requestsPerS : a.label < b.label
            }
        }
    }

    // MARK: screen

    static let header = ["PID", "PROGRAM", "REQ/S", "ERR%", "P50 ms", "P99 ms", "CONNS", "LOOP%", "CPU%", "RSS", "STALLS"]

    /// The screen: `width` × `height` characters at most (lines cut, rows left out with a count).
    public func screen(_ s: TopSnapshot, width: Int, height: Int) -> [String] {
        var lines: [String] = []
        let live = s.processes.filter { !$0.ended }.count
        let total = s.processes.reduce(0.0) { $0 + $1.rates.requestsPerS }
        lines.append("wedjat top  \(directory)  \(Self.clock(s.time))  \(live) process\(live == 1 ? "" : "es")"
                     + "  \(Self.rate(total, estimated: s.processes.contains { $0.rates.estimated })) req/s")
        lines.append("sort: \(sort.rawValue)  (r req/s, e err%, l p99, c cpu, m rss, p pid, n name; q quits)"
                     + (s.skippedLines > 0 ? "  \(s.skippedLines) unreadable lines skipped" : "")
                     + (s.behindBytes > 0 ? "  BEHIND: \(Format.bytes(s.behindBytes)) not read yet (rates are of what was read)" : ""))
        var table: [[String]] = [Self.header]
        for p in sorted(s.processes) {
            table.append(processCells(p))
            for h in sortedHosts(p.hosts) {
                table.append(["", "  " + h.label, Self.rate(h.rates.requestsPerS, estimated: h.rates.estimated),
                              Self.pct(h.rates.errorPct), Self.ms(h.rates.p50Us), Self.ms(h.rates.p99Us),
                              "", "", "", "", ""])
            }
        }
        if s.processes.isEmpty { table.append(["", "(no process is writing a log here yet)"] + Array(repeating: "", count: 9)) }
        let stallLines = s.stalls.map(Self.stallText)
        let stallRoom = stallLines.isEmpty ? 0 : min(stallLines.count, max(2, height / 4)) + 2
        let tableRoom = max(3, height - lines.count - stallRoom)
        var rendered = Self.align(table, rightAligned: [0, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        if rendered.count > tableRoom {
            let cut = rendered.count - (tableRoom - 1)
            rendered = Array(rendered.prefix(tableRoom - 1)) + ["… \(cut) more rows (a taller terminal shows them)"]
        }
        lines += rendered
        if !stallLines.isEmpty {
            lines.append("")
            lines.append("STALLS (latest first)")
            lines += stallLines.prefix(max(0, height - lines.count))
        }
        return lines.prefix(height).map { Self.cut($0, width) }
    }

    func processCells(_ p: TopSnapshot.ProcessRow) -> [String] {
        let conns = p.openConnections.map(String.init) ?? p.fds.map { "\($0) fds" } ?? "-"
        let loop = p.loopBusyPct.map { Format.fixed($0, 0) + (p.loops > 1 ? " (\(p.loops))" : "") } ?? "-"
        let stalls = p.stalls > 0 ? "\(p.stalls) new / \(p.stallsTotal)" : String(p.stallsTotal)
        return [String(p.pid), p.program + (p.ended ? " (ended)" : ""),
                Self.rate(p.rates.requestsPerS, estimated: p.rates.estimated), Self.pct(p.rates.errorPct),
                Self.ms(p.rates.p50Us), Self.ms(p.rates.p99Us), conns, loop,
                p.cpuPct.map { Format.fixed($0, 0) } ?? "-", p.rssBytes.map(Format.bytes) ?? "-", stalls]
    }

    // MARK: lines

    /// One line per process and per host of it, then one per new stall: `key=value` fields.
    public func lines(_ s: TopSnapshot) -> [String] {
        let time = Self.iso(s.time)
        var out: [String] = []
        for p in sorted(s.processes) {
            var f = ["\(time)", "pid=\(p.pid)", "program=\(Self.quoted(p.program))"]
            f += Self.rateFields(p.rates)
            f.append("conns=\(p.openConnections.map(String.init) ?? "-")")
            f.append("fds=\(p.fds.map(String.init) ?? "-")")
            f.append("loop_pct=\(p.loopBusyPct.map { Format.fixed($0, 1) } ?? "-")")
            f.append("cpu_pct=\(p.cpuPct.map { Format.fixed($0, 1) } ?? "-")")
            f.append("rss_bytes=\(p.rssBytes.map(String.init) ?? "-")")
            f.append("closed=\(p.connectionsClosed)")
            f.append("stalls=\(p.stalls)")
            if p.ended { f.append("ended=1") }
            out.append(f.joined(separator: " "))
            for h in sortedHosts(p.hosts) {
                out.append((["\(time)", "pid=\(p.pid)", "host=\(Self.quoted(h.label))"] + Self.rateFields(h.rates)).joined(separator: " "))
            }
        }
        if s.processes.isEmpty { out.append("\(time) processes=0") }
        if s.behindBytes > 0 { out.append("\(time) behind_bytes=\(s.behindBytes)") }
        for st in s.newStalls {
            out.append("\(time) stall pid=\(st.pid) program=\(Self.quoted(st.program)) thread=\(Self.quoted(st.thread))"
                       + " kind=\(st.kind) ms=\(Format.ms(st.durationUs)) detail=\(Self.quoted(st.detail))")
        }
        return out
    }

    static func rateFields(_ r: TopSnapshot.Rates) -> [String] {
        ["req_s=\(Format.fixed(r.requestsPerS, 1))" + (r.estimated ? " estimated=1" : ""),
         "err_pct=\(r.errorPct.map { Format.fixed($0, 2) } ?? "-")",
         "p50_ms=\(r.p50Us.map(Format.ms) ?? "-")", "p99_ms=\(r.p99Us.map(Format.ms) ?? "-")"]
    }

    // MARK: formatting

    static func rate(_ r: Double, estimated: Bool) -> String {
        let text = r >= 100 ? String(Int(r.rounded())) : Format.fixed(r, 1)
        return estimated ? "~" + text : text
    }
    static func pct(_ p: Double?) -> String { p.map { Format.fixed($0, $0 < 10 ? 2 : 1) } ?? "-" }
    static func ms(_ us: Int64?) -> String { us.map(Format.ms) ?? "-" }

    static func stallText(_ s: TopSnapshot.StallLine) -> String {
        let us = s.ts % 1_000_000
        let time = clock(Date(timeIntervalSince1970: Double(s.ts / 1_000_000))) + "." + String(format: "%03d", us / 1000)
        return "  \(time)  \(s.program)[\(s.pid)] \(s.thread)  \(s.kind) \(Format.ms(s.durationUs)) ms"
            + (s.ongoing ? " (ongoing at exit)" : "") + "  \(s.detail)"
    }

    static func clock(_ d: Date) -> String {
        var t = time_t(d.timeIntervalSince1970)
        var tm = tm()
        localtime_r(&t, &tm)
        return String(format: "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec)
    }

    static func iso(_ d: Date) -> String {
        let ms = Int64((d.timeIntervalSince1970 * 1000).rounded())
        var t = time_t(ms / 1000)
        var tm = tm()
        gmtime_r(&t, &tm)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, Int(ms % 1000))
    }

    /// A value that may hold spaces or quotes, quoted when it does.
    static func quoted(_ s: String) -> String {
        guard s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || s.isEmpty else { return s }
        return "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func align(_ rows: [[String]], rightAligned: Set<Int>) -> [String] {
        guard let columns = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: columns)
        for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
        return rows.map { r in
            var line = ""
            for (i, c) in r.enumerated() {
                let pad = String(repeating: " ", count: widths[i] - c.count)
                line += (i == 0 ? "" : "  ") + (rightAligned.contains(i) ? pad + c : c + (i == r.count - 1 ? "" : pad))
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line
        }
    }

    static func cut(_ line: String, _ width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width - 1))) + "…"
    }
}
