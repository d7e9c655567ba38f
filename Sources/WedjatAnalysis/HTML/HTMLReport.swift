import Foundation

/// `wedjat report --html`: one self-contained page (inline CSS, script and SVG; a Content
/// Security Policy that forbids loading anything) with the run's summary, a waterfall of its
/// HTTP requests, latency distributions per host, CPU and memory per process and a flame graph
/// of stall stacks. Everything from the logs is escaped (HTMLText) and reaches the script
/// only through the DOM. The page is complete without the script, which adds the filter, the
/// flame graph's zoom and the row counts.
public struct HTMLReport {
    /// Stall stacks in folded form (`FoldedStacks.render`), "" when there were none.
    public var foldedStacks: String
    /// Why the stall stacks could not be had, shown in their place.
    public var stallError: String?
    /// Processes with CPU and memory charts, and hosts with latency charts (the busiest first).
    public var processLimit = 16
    public var hostLimit = 24

    public init(foldedStacks: String = "", stallError: String? = nil) {
        self.foldedStacks = foldedStacks
        self.stallError = stallError
    }

    public func render(_ analysis: RunAnalysis, report: Report) -> String {
        render(analysis, report: report, requests: analysis.requests)
    }

    /// `requests`: the analysis's own, or (tests) one fed with other limits.
    func render(_ analysis: RunAnalysis, report: Report, requests: RequestCollector) -> String {
        let h = report.headline
        var out: [String] = []
        out.append("<!DOCTYPE html>")
        out.append("<html lang=\"en\"><head><meta charset=\"utf-8\">")
        out.append("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">")
        out.append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        out.append("<title>wedjat report: \(Format.count(h.processes, "process", "processes")), \(HTMLText.escape(Format.duration(h.spanUs)))</title>")
        out.append("<style>\n" + HTMLAssets.css + "</style></head>")
        out.append("<body data-js=\"off\">")
        out.append(summary(report))
        out.append(waterfalls(analysis, requests))
        out.append(latencies(requests, report: report))
        out.append(vitals(analysis, report: report))
        out.append(stalls())
        out.append(warnings(report))
        out.append("<script>\n" + HTMLAssets.script + "</script>")
        out.append("</body></html>")
        return out.joined(separator: "\n") + "\n"
    }

    // MARK: summary

    private func summary(_ r: Report) -> String {
        let h = r.headline
        func item(_ name: String, _ value: String, _ sub: String = "", bad: Bool = false) -> String {
            "<div class=\"stat\(bad ? " bad" : "")\"><dt>\(HTMLText.escape(name))</dt><dd>\(HTMLText.escape(value))</dd>"
                + (sub.isEmpty ? "" : "<dd class=\"sub\">\(HTMLText.escape(sub))</dd>") + "</div>"
        }
        var classes = StatusClasses()
        for row in r.http { classes.s4xx += row.statusClasses.s4xx; classes.s5xx += row.statusClasses.s5xx }
        let errors = Int64(h.errors) + h.httpErrors + Int64(h.dnsErrors)
        var errorParts: [String] = []
        if h.errors > 0 { errorParts.append(Format.count(h.errors, "connection")) }
        if h.httpErrors > 0 { errorParts.append("\(h.httpErrors) HTTP") }
        if h.dnsErrors > 0 { errorParts.append("\(h.dnsErrors) DNS") }
        var lost: [String] = []
        if h.droppedEvents > 0 { lost.append(Format.count(Int(h.droppedEvents), "dropped event")) }
        if h.droppedRecords > 0 { lost.append(Format.count(Int(h.droppedRecords), "dropped record")) }
        if h.captureDropped > 0 { lost.append(Format.count(Int(h.captureDropped), "dropped capture slot")) }
        let items = [
            item("processes", String(h.processes), Format.count(h.logs, "log")),
            item("duration", Format.duration(h.spanUs), "from " + Format.timestamp(h.startTs) + " UTC"),
            item("HTTP requests", String(h.httpRequests),
                 classes.s4xx + classes.s5xx > 0 ? "\(classes.s4xx) 4xx, \(classes.s5xx) 5xx" : ""),
            item("errors", String(errors), errorParts.joined(separator: ", "), bad: errors > 0),
            item("connections", String(h.connections), Format.bytes(h.bytesIn) + " in, " + Format.bytes(h.bytesOut) + " out"),
            item("DNS lookups", String(h.dnsLookups)),
            item("warnings", String(h.warnings), lost.joined(separator: ", "), bad: !lost.isEmpty),
        ]
        return "<header><h1>wedjat report</h1>\n<dl class=\"summary\">" + items.joined() + "</dl></header>"
    }

    // MARK: waterfall

    private static let phaseNames: [(cls: String, client: String, server: String)] = [
        ("dns", "DNS", "DNS"), ("connect", "connect", "connect"), ("tls", "TLS", "TLS"),
        ("send", "send", "request in"), ("wait", "wait (TTFB)", "handler"), ("receive", "receive", "response out"),
    ]

    private func waterfalls(_ analysis: RunAnalysis, _ collector: RequestCollector) -> String {
        let selection = collector.selection()
        var out = ["<section id=\"requests\"><h2>Requests</h2>"]
        let summarized = analysis.http.values.reduce(Int64(0)) { $0 + $1.summarized }
        if collector.requestsSeen == 0 {
            out.append("<p class=\"empty\">No HTTP exchanges were recorded"
                       + (summarized > 0 ? " one by one (\(summarized) were only counted, in http_summary records)." : ".") + "</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        let shown = selection.first.count + selection.slowest.count
        var note = "One row per HTTP exchange (<code>http</code> records), grouped by process, on a shared time axis. "
            + "The first exchange of a connection also shows how the connection was made. Hover a row for its numbers."
        if shown < collector.requestsSeen {
            note += " Shown: the first \(selection.first.count) of \(collector.requestsSeen) by start time and the "
                + "\(selection.slowest.count) slowest of the others; \(collector.requestsSeen - shown) are left out."
        }
        if summarized > 0 {
            note += " \(summarized) more exchanges were over the writer's record budget and were only counted (http_summary)."
        }
        out.append("<p class=\"note\">\(note)</p>")
        out.append("<div class=\"legend\">" + Self.phaseNames.map { p in
            "<span><i class=\"ph \(p.cls)\"></i>\(HTMLText.escape(p.client == p.server ? p.client : p.client + " / " + p.server))</span>"
        }.joined() + "<span><i class=\"ph cut\"></i>no response</span>"
            + "<span class=\"hint\">(client / server rows)</span></div>")
        out.append("<p class=\"tools\"><input type=\"search\" id=\"wf-filter\" placeholder=\"filter rows: host, path, status, program\" aria-label=\"filter rows\">"
                   + " <span id=\"wf-count\" data-rows=\"\(shown)\"></span></p>")
        out.append(waterfall(selection.first, analysis: analysis, id: "wf-first", title: nil))
        if !selection.slowest.isEmpty {
            out.append(waterfall(selection.slowest, analysis: analysis, id: "wf-slowest",
                                 title: "The \(selection.slowest.count) slowest of the other requests"))
        }
        return out.joined(separator: "\n") + "</section>"
    }

    private func waterfall(_ rows: [WaterfallRequest], analysis: RunAnalysis, id: String, title: String?) -> String {
        let t0 = rows.map(\.startTs).min() ?? 0
        let t1 = rows.map(\.endTs).max() ?? t0
        let span = Double(Swift.max(1, t1 - t0))
        let step = Axis.niceStep(span, target: 8)
        func pct(_ ts: Int64) -> Double { Double(ts - t0) / span * 100 }
        var out: [String] = []
        if let title { out.append("<h3>\(HTMLText.escape(title))</h3>") }
        out.append("<div class=\"wf\" id=\"\(id)\" style=\"--tick:\(Format.fixed(step / span * 100, 4))%\">")
        var ticks = ""
        var t = 0.0
        while t <= span * 1.0001 {
            ticks += "<span style=\"left:\(Format.fixed(t / span * 100, 3))%\">\(HTMLText.escape(Axis.time(t)))</span>"
            t += step
        }
        out.append("<div class=\"wf-head\"><span class=\"wf-label\">from \(HTMLText.escape(Format.timestamp(t0))) UTC</span>"
                   + "<span class=\"wf-axis\">\(ticks)</span><span class=\"wf-time\">total</span></div>")

        // Processes in the order of their first request, rows by start.
        var groups: [Int: [WaterfallRequest]] = [:]
        for r in rows { groups[r.file, default: []].append(r) }
        let firstStart = groups.mapValues { $0.map(\.startTs).min()! }
        let order = groups.keys.sorted { a, b in
            firstStart[a]! != firstStart[b]! ? firstStart[a]! < firstStart[b]! : a < b
        }
        for file in order {
            let log = analysis.logs[file]
            let group = groups[file]!.sorted { ($0.startTs, $0.seq) < ($1.startTs, $1.seq) }
            let all = log.recordCounts["http"] ?? group.count
            out.append("<div class=\"wf-proc\" title=\"\(HTMLText.escape(log.path))\">\(HTMLText.escape(log.program)) "
                       + "<span class=\"pid\">pid \(log.pid)</span> · "
                       + (group.count == all ? Format.count(all, "request") : "\(group.count) of \(Format.count(all, "request"))")
                       + "</div>")
            for r in group { out.append(row(r, program: log.program, pct: pct)) }
        }
        out.append("</div>")
        return out.joined(separator: "\n")
    }

    private func row(_ r: WaterfallRequest, program: String, pct: (Int64) -> Double) -> String {
        let h = r.http
        let server = h.role == "server"
        let s = r.setup
        var phases: [(cls: String, start: Int64, end: Int64)] = []
        func phase(_ cls: String, _ start: Int64?, _ end: Int64?) {
            if let start, let end, end >= start { phases.append((cls, start, end)) }
        }
        phase("dns", s?.dnsStartTs, s?.dnsEndTs)
        if !server { phase("connect", s?.openTs, s?.connectEndTs) }
        phase("tls", server ? s?.openTs : s?.connectEndTs ?? s?.openTs, s?.tlsEndTs)
        let requestEnd = h.requestEndTs ?? r.requestStartTs
        phase("send", r.requestStartTs, requestEnd)
        if let responseStart = h.responseStartTs {
            phase("wait", requestEnd, responseStart)
            phase("receive", responseStart, h.responseEndTs ?? responseStart)
        } else {
            phase("cut", requestEnd, r.endTs)
        }

        var lines = ["\(program) (pid \(h.pid)) \(h.method ?? "?") \(h.scheme ?? "http")://\(h.host ?? h.peer ?? "?")\(h.path ?? "")"]
        lines.append((h.status.map { "status \($0)" } ?? "no response") + (h.error.map { ", error \($0)" } ?? "")
                     + " · \(server ? "server" : "client") · peer \(h.peer ?? "?")"
                     + (h.connId.map { " · connection \($0)" } ?? "") + (h.reused == true ? " (reused)" : ""))
        lines.append("starts \(Format.timestamp(r.startTs)) UTC")
        for p in phases {
            let name = p.cls == "cut" ? "no response, waited" : Self.phaseNames.first { $0.cls == p.cls }.map { server ? $0.server : $0.client } ?? p.cls
            lines.append("\(name): \(Format.duration(p.end - p.start))")
        }
        var totals = "total \(Format.duration(r.totalUs))"
        if let t = h.ttfbUs { totals += " · TTFB \(Format.duration(t))" }
        if let v = s?.tlsVersion { totals += " · \(v)" }
        lines.append(totals)
        lines.append("\(Format.bytes(h.requestHeaderBytes + h.requestBodyBytes)) request, "
                     + "\(Format.bytes(h.responseHeaderBytes + h.responseBodyBytes)) response")

        let statusClass: String
        switch h.status {
        case .some(200 ..< 300): statusClass = "s2"
        case .some(300 ..< 400): statusClass = "s3"
        case .some(400 ..< 500): statusClass = "s4"
        case .some(500 ..< 600): statusClass = "s5"
        case .some: statusClass = "s1"
        case nil: statusClass = "s0"
        }
        let status = h.status.map(String.init) ?? "—"
        let label = "\(h.method ?? "?") \(h.host ?? h.peer ?? "?")\(h.path ?? "")"
        let bars = phases.map { p in
            "<i class=\"ph \(p.cls)\" style=\"left:\(Format.fixed(pct(p.start), 3))%;width:\(Format.fixed(pct(p.end) - pct(p.start), 3))%\"></i>"
        }.joined()
        return "<div class=\"wf-row\(h.error != nil || (h.status ?? 0) >= 500 ? " bad" : "")\" title=\"\(HTMLText.escape(lines.joined(separator: "\n")))\">"
            + "<span class=\"wf-label\"><b class=\"st \(statusClass)\">\(HTMLText.escape(status))</b>"
            + "<span class=\"role\">\(server ? "←" : "→")</span>\(HTMLText.escape(label))"
            + (h.error.map { " <span class=\"err\">\(HTMLText.escape($0))</span>" } ?? "") + "</span>"
            + "<span class=\"wf-track\">\(bars)</span><span class=\"wf-time\">\(HTMLText.escape(Format.duration(r.totalUs)))</span></div>"
    }

    // MARK: latency per host

    private func latencies(_ requests: RequestCollector, report: Report) -> String {
        var out = ["<section id=\"latency\"><h2>Latency by host</h2>"]
        let rows = report.http.filter { $0.ttfbUs != nil || $0.durationUs != nil }
        if rows.isEmpty {
            out.append("<p class=\"empty\">No HTTP latencies were recorded.</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        var note = "Share of exchanges that had their first response byte (TTFB) and their last one (total) within a time, log scale."
        if rows.count > hostLimit { note += " The \(hostLimit) hosts with the most requests, of \(rows.count)." }
        if report.http.contains(where: { $0.summarized > 0 }) {
            note += " Exchanges only counted in http_summary records are placed at the upper end of their percentile band."
        }
        out.append("<p class=\"note\">\(HTMLText.escape(note))</p>")
        out.append("<div class=\"legend\"><span><i class=\"ln ttfb\"></i>TTFB</span><span><i class=\"ln total\"></i>total</span></div>")
        out.append("<div class=\"cards\">")
        for row in rows.prefix(hostLimit) {
            func pcts(_ p: Report.Percentiles?) -> String {
                guard let p else { return "-" }
                return "p50 \(Format.duration(p.p50)), p95 \(Format.duration(p.p95)), p99 \(Format.duration(p.p99))"
            }
            let chart = requests.hosts[HTTPKey(role: row.role, host: row.host)]
                .map { HTMLCharts.latencyCDF($0, label: "latency CDF of " + row.key) }
                ?? "<p class=\"empty\">No curve: only the first \(RequestCollector.hostLimit) hosts seen keep one.</p>"
            out.append("<div class=\"card host\"><h3>\(HTMLText.escape(row.key))</h3>"
                       + "<p class=\"facts\">\(HTMLText.escape(Format.count(Int(row.requests), "request")))"
                       + (row.errors > 0 ? ", <span class=\"badtext\">\(row.errors) failed</span>" : "") + "<br>"
                       + "TTFB \(HTMLText.escape(pcts(row.ttfbUs)))<br>total \(HTMLText.escape(pcts(row.durationUs)))</p>"
                       + chart + "</div>")
        }
        out.append("</div>")
        return out.joined(separator: "\n") + "</section>"
    }

    // MARK: CPU and memory

    private func vitals(_ analysis: RunAnalysis, report: Report) -> String {
        var out = ["<section id=\"vitals\"><h2>CPU and memory</h2>"]
        if report.vitals.isEmpty {
            out.append("<p class=\"empty\">No sample records (WEDJAT_SAMPLE_MS=0, or no process lived to be sampled).</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        var note = "From <code>sample</code> records: CPU in percent of one core, resident memory; time from the process's start."
        if report.vitals.count > processLimit {
            note += " The \(processLimit) busiest processes of \(report.vitals.count)."
        }
        out.append("<p class=\"note\">\(note)</p>")
        out.append("<div class=\"cards\">")
        let byPath = Dictionary(analysis.logs.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        for v in report.vitals.prefix(processLimit) {
            guard let log = byPath[v.log] else { continue }
            let points = Self.downsample(log.vitals.points.sorted { $0.ts < $1.ts }, to: 240)
            let start = Swift.min(log.startTs, points.first?.ts ?? log.startTs)
            let end = Swift.max(log.lastKnownTs, points.last?.ts ?? start)
            var facts = [Format.count(v.samples, "sample")]
            if let c = v.cpuPct { facts.append("CPU avg \(Format.fixed(c.avg, 1))%, max \(Format.fixed(c.max, 1))%") }
            if let m = v.rssBytes { facts.append("RSS max \(Format.bytes(m.max))") }
            let cpu = HTMLCharts.timeline(points.map { .init(ts: $0.ts, value: $0.cpuPct) }, startTs: start, endTs: end,
                                          top: 100, cssClass: "cpu", label: "CPU of \(v.program) pid \(v.pid)") {
                Format.fixed($0, $0 < 10 && $0 != 0 ? 1 : 0) + "%"
            }
            let rss = HTMLCharts.timeline(points.map { .init(ts: $0.ts, value: $0.rssBytes.map(Double.init)) }, startTs: start,
                                          endTs: end, top: 1024 * 1024, cssClass: "rss", label: "RSS of \(v.program) pid \(v.pid)") {
                Format.bytes(Int64($0))
            }
            out.append("<div class=\"card proc\" title=\"\(HTMLText.escape(v.log))\"><h3>\(HTMLText.escape(v.program)) <span class=\"pid\">pid \(v.pid)</span></h3>"
                       + "<p class=\"facts\">\(HTMLText.escape(facts.joined(separator: " · ")))</p>"
                       + "<div class=\"chart-title\">CPU %</div>" + cpu
                       + "<div class=\"chart-title\">RSS</div>" + (v.memoryUnavailable.map { "<p class=\"empty\">memory unavailable: \(HTMLText.escape($0))</p>" } ?? rss)
                       + "</div>")
        }
        out.append("</div>")
        return out.joined(separator: "\n") + "</section>"
    }

    /// At most `limit` points: runs of neighbours merged as the text report's series are.
    static func downsample(_ points: [VitalsStats.Point], to limit: Int) -> [VitalsStats.Point] {
        guard points.count > limit else { return points }
        return (0 ..< limit).map { c in
            VitalsStats.merge(Array(points[c * points.count / limit ..< (c + 1) * points.count / limit]))
        }
    }

    // MARK: stalls

    private func stalls() -> String {
        var out = ["<section id=\"stalls\"><h2>Stalls</h2>"]
        if let stallError {
            out.append("<p class=\"empty badtext\">Stall stacks could not be read: \(HTMLText.escape(stallError))</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        let graph = FlameGraph(folded: foldedStacks)
        if graph.total > 0 {
            out.append("<p class=\"note\">Stacks of stalled threads (<code>stall</code> records), outermost frame at the bottom, "
                       + "each frame as wide as its share of the \(graph.total) samples. Click a frame to zoom, the bottom one to zoom out.</p>")
        }
        if !graph.badLines.isEmpty {
            out.append("<p class=\"note badtext\">Folded lines not understood: "
                       + graph.badLines.map(String.init).joined(separator: ", ") + ".</p>")
        }
        out.append(graph.html())
        return out.joined(separator: "\n") + "</section>"
    }

    // MARK: warnings

    private func warnings(_ r: Report) -> String {
        guard !r.warnings.isEmpty else { return "" }
        let shown = r.warnings.prefix(50)
        var out = ["<section id=\"warnings\"><h2>Warnings</h2><ul class=\"warnings\">"]
        for w in shown { out.append("<li>\(HTMLText.escape(w.text))</li>") }
        out.append("</ul>")
        if r.warnings.count > shown.count {
            out.append("<p class=\"note\">\(r.warnings.count - shown.count) more: see <code>wedjat report</code>.</p>")
        }
        return out.joined(separator: "\n") + "</section>"
    }
}
