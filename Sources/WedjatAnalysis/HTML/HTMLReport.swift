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
        out.append(coverage(report))
        out.append(waterfalls(analysis, requests))
        out.append(latencies(requests, report: report))
        out.append(vitals(analysis, report: report))
        out.append(stalls(report))
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
        // The same numbers as the text and JSON reports' headline and HOSTS (docs/REPORT_JSON.md).
        var s4xx: Int64 = 0, s5xx: Int64 = 0, cutShort: Int64 = 0, failedConnects = 0
        for row in r.http {
            s4xx += row.statusClasses.s4xx; s5xx += row.statusClasses.s5xx
            cutShort += row.errors; failedConnects += row.failedConnections
        }
        func rate(_ v: Double?) -> String { v.map(Format.percent) ?? "" }
        var lost: [String] = []
        if h.droppedEvents > 0 { lost.append(Format.count(Int(h.droppedEvents), "dropped event")) }
        if h.droppedRecords > 0 { lost.append(Format.count(Int(h.droppedRecords), "dropped record")) }
        if h.captureDropped > 0 { lost.append(Format.count(Int(h.captureDropped), "dropped capture slot")) }
        if let b = h.bytesAfterEnd { lost.append(Format.bytes(b) + " moved after their connection ended") }
        let dropped = h.droppedEvents + h.droppedRecords + h.captureDropped
        let networkErrors = cutShort + Int64(failedConnects)
        let items = [
            item("processes", String(h.processes), Format.count(h.logs, "log")),
            item("duration", Format.duration(h.spanUs), "from " + Format.timestamp(h.startTs) + " UTC"),
            item("HTTP requests", String(h.httpRequests)),
            item("HTTP errors", String(s4xx + s5xx), (rate(h.httpErrorRate).isEmpty ? "" : rate(h.httpErrorRate) + ": ")
                 + "\(s4xx) 4xx, \(s5xx) 5xx", bad: s4xx + s5xx > 0),
            item("network errors", String(networkErrors), (rate(h.networkErrorRate).isEmpty ? "" : rate(h.networkErrorRate) + ": ")
                 + "\(cutShort) cut short, \(failedConnects) failed connects", bad: networkErrors > 0),
            item("connections", String(h.connections), Format.bytes(h.bytesIn) + " in, " + Format.bytes(h.bytesOut) + " out"
                 + (h.errors > 0 ? ", \(h.errors) with an error" : ""), bad: h.errors > 0),
            item("DNS lookups", String(h.dnsLookups), h.dnsErrors > 0 ? "\(h.dnsErrors) failed"
                 + (r.dnsFailures?.first.map { ": \($0.name) (\($0.error))" + ((r.dnsFailures?.count ?? 0) > 1 ? ", …" : "") } ?? "") : "",
                 bad: h.dnsErrors > 0),
            item("stalls", h.stalls.map(String.init) ?? "off", h.longestStallUs.map { "longest " + Format.duration($0) } ?? "",
                 bad: (h.stalls ?? 0) > 0),
            item("warnings", String(h.warnings), "", bad: h.warnings > 0),
        ] + (r.coverage.flatMap { c -> String? in
            guard c.httpConnections > 0 else { return nil }
            let whole = c.undecoded.reduce(0) { $0 + $1.connections }
            return item("HTTP decoded", "\(c.decodedConnections) of \(c.httpConnections)",
                        (c.decodedBytesShare.map { CoverageText.percent($0) + " of bytes" } ?? "")
                        + (c.undecoded.isEmpty ? "" : "; not: " + c.undecoded.prefix(3).map { "\($0.reason ?? "?")" }.joined(separator: ", ")),
                        bad: whole > 0)
        }.map { [$0] } ?? []) + (lost.isEmpty ? [] : [item("lost", dropped > 0 ? String(dropped) : h.bytesAfterEnd.map(Format.bytes) ?? "0",
                                   lost.joined(separator: ", "), bad: true)])
        return "<header><h1>wedjat report</h1>\n<dl class=\"summary\">" + items.joined() + "</dl></header>"
    }

    // MARK: coverage

    /// What share of the traffic was decoded and why the rest was not, and the lookups that
    /// failed: the text report's `coverage` and `DNS` lines, as cards.
    private func coverage(_ r: Report) -> String {
        var cards: [String] = []
        if let c = r.coverage, c.connections > 0 {
            var rows: [String] = []
            func row(_ what: String, _ g: Report.CoverageGroup, bad: Bool) {
                let n = g.connections + (g.partly ?? 0)
                rows.append("<tr\(bad ? " class=\"bad\"" : "")><td>\(HTMLText.escape(what))</td><td>\(n)"
                            + ((g.partly ?? 0) > 0 ? " (\(g.partly!) after decoded exchanges)" : "") + "</td>"
                            + "<td>\(HTMLText.escape(Format.bytes(g.bytes)))</td><td>\(HTMLText.escape(g.examples.joined(separator: ", ")))</td></tr>")
            }
            if c.httpConnections > 0 {
                rows.append("<tr><td>HTTP decoded</td><td>\(c.decodedConnections)</td><td>\(HTMLText.escape(Format.bytes(c.decodedBytes)))</td><td></td></tr>")
            }
            for g in c.undecoded { row("not decoded: " + (g.reason ?? "?"), g, bad: g.connections > 0) }
            for g in c.otherProtocols { row(g.kind == "udp" ? "other protocol: udp" : "other protocol: \(g.kind ?? "?") (not HTTP)", g, bad: false) }
            if let p = c.notParsed { row("not parsed (HTTP parsing off, or an older log)", p, bad: false) }
            if let f = c.failed { row("failed before a request (connection errors)", f, bad: false) }
            let headline = CoverageText.decoded(c) ?? "No HTTP connection"
            cards.append("<div class=\"card\" id=\"coverage-card\"><h3>Capture coverage</h3>"
                         + "<p class=\"facts\">\(HTMLText.escape(headline)) · \(HTMLText.escape(Format.count(c.connections, "connection"))) carried "
                         + "\(HTMLText.escape(Format.bytes(c.bytes)))</p>"
                         + "<table class=\"plain\"><tr><th>what</th><th>connections</th><th>bytes</th><th>where</th></tr>"
                         + rows.joined() + "</table>"
                         + "<p class=\"note\">Reasons as the log names them (<code>http_none</code>, <code>http_undecoded</code>): "
                         + "http2, tls_not_hooked (TLS of a library wedjat does not hook), tunnel, not_http, desync, incomplete, parse, no_bytes.</p></div>")
        }
        if let failures = r.dnsFailures, !failures.isEmpty {
            let rows = failures.prefix(50).map { f in
                "<tr class=\"bad\"><td>\(HTMLText.escape(f.name))</td><td>\(HTMLText.escape(f.error))</td><td>\(HTMLText.escape(f.api ?? ""))</td><td>\(f.count)</td></tr>"
            }.joined()
            cards.append("<div class=\"card\" id=\"dns-failures\"><h3>DNS failures</h3>"
                         + "<table class=\"plain\"><tr><th>name</th><th>error</th><th>api</th><th>count</th></tr>" + rows + "</table>"
                         + (failures.count > 50 ? "<p class=\"note\">\(failures.count - 50) more: see <code>wedjat report --format json</code>.</p>" : "")
                         + "</div>")
        }
        guard !cards.isEmpty else { return "" }
        return "<section id=\"coverage\"><h2>Coverage</h2>\n<div class=\"cards\">" + cards.joined(separator: "\n") + "</div></section>"
    }

    // MARK: waterfall

    private static let phaseNames: [(cls: String, client: String, server: String)] = [
        ("dns", "DNS", "DNS"), ("connect", "connect", "connect"), ("tls", "TLS", "TLS"),
        ("send", "send", "request in"), ("wait", "wait (TTFB)", "handler"), ("receive", "receive", "response out"),
    ]

    private func waterfalls(_ analysis: RunAnalysis, _ collector: RequestCollector) -> String {
        let selection = collector.selection()
        let sampled = collector.sampled()
        var out = ["<section id=\"requests\"><h2>Requests</h2>"]
        let summarized = analysis.http.values.reduce(Int64(0)) { $0 + $1.summarized }
        if collector.requestsSeen == 0 {
            out.append("<p class=\"empty\">No HTTP exchanges were recorded"
                       + (summarized > 0 ? " one by one (\(summarized) were only counted, in http_summary records)." : ".") + "</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        let rows = selection.first + sampled + selection.slowest
        let shown = rows.count
        var note = "One row per HTTP exchange (<code>http</code> records), grouped by process, on a shared time axis. "
            + "Bars: DNS, connect, TLS (a connection's set-up, on its first exchange), then send, wait, receive; "
            + "the time on the right is the exchange's total (request start → response end), as in the text report. "
            + "Hover a row for its phases; drag across the time axis to zoom, double-click it to zoom out."
        if shown < collector.requestsSeen {
            note += " Shown: the first \(selection.first.count) of \(collector.requestsSeen) by start, \(sampled.count) sampled "
                + "evenly over the run's time (one in each \(Format.duration(collector.sampleSlotUs)) at most) and the \(selection.slowest.count) slowest of the others; \(collector.requestsSeen - shown) are left out."
        }
        if summarized > 0 {
            note += " \(summarized) more exchanges were over the writer's record budget and were only counted (http_summary)."
        }
        out.append("<p class=\"note\">\(note)</p>")
        out.append("<div class=\"legend\">" + Self.phaseNames.map { p in
            "<span><i class=\"ph \(p.cls)\"></i>\(HTMLText.escape(p.client == p.server ? p.client : p.client + " / " + p.server))</span>"
        }.joined() + "<span><i class=\"ph cut\"></i>no response</span>"
            + "<span class=\"hint\">(client / server rows)</span></div>")
        out.append("<p class=\"tools\"><input type=\"search\" id=\"wf-filter\" placeholder=\"filter: 500, 4xx, GET, host, /path, program\" aria-label=\"filter rows\">"
                   + " <label>sort <select id=\"wf-sort\"><option value=\"start\">by start</option><option value=\"total\">slowest first</option>"
                   + "<option value=\"ttfb\">by TTFB</option><option value=\"status\">by status</option></select></label>"
                   + " <button type=\"button\" id=\"wf-reset\">zoom out</button>"
                   + " <span id=\"wf-count\" data-rows=\"\(shown)\"></span></p>")
        out.append(waterfall(rows, analysis: analysis, id: "wf-all"))
        return out.joined(separator: "\n") + "</section>"
    }

    private func waterfall(_ rows: [WaterfallRequest], analysis: RunAnalysis, id: String) -> String {
        let timed = rows.map { ($0, timings($0)) }
        let t0 = timed.map { $0.1?.startTs ?? $0.0.startTs }.min() ?? 0
        let t1 = timed.map { $0.0.endTs }.max() ?? t0
        let span = Double(Swift.max(1, t1 - t0))
        let step = Axis.niceStep(span, target: 8)
        func pct(_ ts: Int64) -> Double { Double(ts - t0) / span * 100 }
        var out: [String] = []
        out.append("<div class=\"wf\" id=\"\(id)\" data-t0=\"\(t0)\" data-span=\"\(Swift.max(1, t1 - t0))\" style=\"--tick:\(Format.fixed(step / span * 100, 4))%\">")
        var ticks = ""
        var t = 0.0
        while t <= span * 1.0001 {
            ticks += "<span style=\"left:\(Format.fixed(t / span * 100, 3))%\">\(HTMLText.escape(Axis.time(t)))</span>"
            t += step
        }
        out.append("<div class=\"wf-head\"><span class=\"wf-label\">from \(HTMLText.escape(Format.timestamp(t0))) UTC</span>"
                   + "<span class=\"wf-axis\" title=\"drag to zoom, double-click to zoom out\">\(ticks)</span><span class=\"wf-time\">total</span></div>")

        // Processes in the order of their first request, rows by start.
        var groups: [Int: [(WaterfallRequest, ExchangeTimings?)]] = [:]
        for r in timed { groups[r.0.file, default: []].append(r) }
        let firstStart = groups.mapValues { $0.map(\.0.startTs).min()! }
        let order = groups.keys.sorted { a, b in
            firstStart[a]! != firstStart[b]! ? firstStart[a]! < firstStart[b]! : a < b
        }
        // HTTP/2: the streams of each connection that overlap a stream (multiplexed with it).
        var multiplexed: [Int: Int] = [:]   // seq -> overlapping streams of its connection
        var byConnection: [String: [WaterfallRequest]] = [:]
        for (r, _) in timed where r.http.isHTTP2 {
            byConnection["\(r.file)-\(r.http.connId.map(String.init) ?? "-")", default: []].append(r)
        }
        for (_, streams) in byConnection where streams.count > 1 {
            for a in streams {
                multiplexed[a.seq] = streams.filter { b in b.seq != a.seq && b.requestStartTs < a.endTs && a.requestStartTs < b.endTs }.count
            }
        }
        for file in order {
            let log = analysis.logs[file]
            let group = groups[file]!.sorted { ($0.0.startTs, $0.0.seq) < ($1.0.startTs, $1.0.seq) }
            let all = log.recordCounts["http"] ?? group.count
            out.append("<div class=\"wf-proc\" title=\"\(HTMLText.escape(log.path))\">\(HTMLText.escape(log.program)) "
                       + "<span class=\"pid\">pid \(log.pid)</span> · "
                       + (group.count == all ? Format.count(all, "request") : "\(group.count) of \(Format.count(all, "request"))")
                       + "</div>")
            for (r, t) in group { out.append(row(r, timings: t, program: log.program, t0: t0, pct: pct, multiplexed: multiplexed[r.seq])) }
        }
        out.append("</div>")
        return out.joined(separator: "\n")
    }

    /// The exchange's phases as every view defines them (ExchangeTimings).
    private func timings(_ r: WaterfallRequest) -> ExchangeTimings? {
        ExchangeTimings(r.http, connection: r.setup?.connection, lookup: r.setup?.lookup)
    }

    private func row(_ r: WaterfallRequest, timings t: ExchangeTimings?, program: String, t0: Int64, pct: (Int64) -> Double,
                     multiplexed: Int? = nil) -> String {
        let h = r.http
        let server = h.role == "server"
        var phases: [(cls: String, start: Int64, end: Int64)] = []
        func phase(_ cls: String, _ start: Int64?, _ end: Int64?) {
            if let start, let end, end >= start { phases.append((cls, start, end)) }
        }
        // The set-up, drawn where it happened; the gaps between (blocked, idle) are not drawn.
        if let t, let c = r.setup?.connection, let open = c.openTs, t.setup != nil {
            if let dns = t.dns { phase("dns", t.startTs, t.startTs + dns) }
            if let connect = t.connect {
                let ssl = t.ssl ?? 0
                if !server { phase("connect", open, open + connect - ssl) }
                if ssl > 0 { phase("tls", open + connect - ssl, open + connect) }
            }
        }
        let requestStart = t?.requestStartTs ?? r.requestStartTs
        if let t {
            phase("send", requestStart, requestStart + t.send)
            if h.responseStartTs != nil {
                phase("wait", requestStart + t.send, requestStart + t.send + t.wait)
                phase("receive", requestStart + t.send + t.wait, t.endTs)
            } else {
                phase("cut", requestStart + t.send, t.endTs)
            }
        } else {
            phase("cut", requestStart, r.endTs)
        }
        let total = t?.total ?? (r.endTs - requestStart)

        var lines = ["\(program) (pid \(h.pid)) \(h.method ?? "?") \(h.scheme ?? "http")://\(h.host ?? h.peer ?? "?")\(h.path ?? "")"]
        if let child = h.continuedBy { lines.append("handed off: the response was written by a forked child, pid \(child)") }
        lines.append((h.status.map { "status \($0)" } ?? "no response") + (h.error.map { ", error \($0)" } ?? "")
                     + " · \(server ? "server" : "client") · peer \(h.peer ?? "?")"
                     + (h.connId.map { " · connection \($0)" } ?? "") + (h.reused == true ? " (reused)" : ""))
        if let id = h.streamId {
            lines.append("HTTP/2 stream \(id)" + (h.pushed ? " (pushed)" : "")
                         + (multiplexed.map { $0 > 0 ? ", multiplexed with \(Format.count($0, "other stream")) of its connection" : "" } ?? "")
                         + (h.resetBy.map { ", reset by the \($0)" } ?? ""))
        }
        if let g = h.grpc {
            lines.append("gRPC \(g.fullMethod ?? "?")" + (g.status.map { " status \($0)" + (g.statusName.map { " \($0)" } ?? "") } ?? " no status")
                         + (g.requestMessages.map { " · \($0) sent" } ?? "") + (g.responseMessages.map { " · \($0) received" } ?? ""))
        }
        lines.append("starts \(Format.timestamp(t?.startTs ?? requestStart)) UTC")
        if let t {
            var named: [(String, Int64?)] = []
            if t.setup != nil {
                named += [(server ? "idle (before the request)" : "blocked", t.blocked), ("DNS", t.dns)]
                named += server ? [("TLS", t.ssl)] : [("connect", t.connect.map { $0 - (t.ssl ?? 0) }), ("TLS", t.ssl)]
            }
            let phaseName = { (cls: String) in Self.phaseNames.first { $0.cls == cls }.map { server ? $0.server : $0.client } ?? cls }
            named += [(phaseName("send"), t.send), (h.responseStartTs == nil ? "no response, waited" : phaseName("wait"), t.wait),
                      (phaseName("receive"), h.responseStartTs == nil ? nil : t.receive)]
            for (name, v) in named { if let v { lines.append("\(name): \(Format.duration(v))") } }
            var totals = "total \(Format.duration(t.total)) (request → response end)"
            if let setup = t.setup { totals += " · with set-up \(Format.duration(setup + t.total))" }
            lines.append(totals)
        }
        var facts: [String] = []
        if let ttfb = h.ttfbUs { facts.append("TTFB \(Format.duration(ttfb))") }
        if let v = r.setup?.tlsVersion { facts.append(v) }
        facts.append("\(Format.bytes(h.requestHeaderBytes + h.requestBodyBytes)) request, "
                     + "\(Format.bytes(h.responseHeaderBytes + h.responseBodyBytes)) response")
        lines.append(facts.joined(separator: " · "))

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
        // data-a/data-b: the bar's ends in us from the axis's start, for the script's zoom.
        let bars = phases.map { p in
            "<i class=\"ph \(p.cls)\" data-a=\"\(p.start - t0)\" data-b=\"\(p.end - t0)\" style=\"left:\(Format.fixed(pct(p.start), 3))%;width:\(Format.fixed(pct(p.end) - pct(p.start), 3))%\"></i>"
        }.joined()
        // What the filter matches: the status (`500`, `5xx`), and the words of the request.
        var search = "\(h.method ?? "") \(h.scheme ?? "http")://\(h.host ?? h.peer ?? "")\(h.path ?? "") \(program) pid \(h.pid) \(h.error ?? "")"
        if let id = h.streamId { search += " h2 stream \(id) conn \(h.connId.map(String.init) ?? "-")" }
        if let g = h.grpc { search += " grpc \(g.statusName ?? "")" }
        // HTTP/2 streams: tagged with their connection and stream, so that a connection's
        // multiplexed streams read as such (their bars overlap on consecutive rows).
        let h2Tag = h.streamId.map { "<span class=\"h2\">h2 c\(h.connId.map(String.init) ?? "?")·s\($0)</span>" } ?? ""
        let grpcTag = h.grpc.flatMap { g in g.status.flatMap { $0 != 0 ? " <span class=\"err\">grpc \(HTMLText.escape(g.statusName ?? String($0)))</span>" : nil } } ?? ""
        // data-rec: the record (pid-conn_id-request_index), as the HAR's `connection` and the trace's args name it.
        let rec = "\(h.pid)-\(h.connId.map(String.init) ?? "-")-\(h.requestIndex.map(String.init) ?? "-")"
        return "<div class=\"wf-row\(h.failed || (h.status ?? 0) >= 500 ? " bad" : "")\" data-rec=\"\(rec)\" data-total=\"\(total)\""
            + " data-ttfb=\"\(h.ttfbUs ?? -1)\" data-status=\"\(h.status ?? 0)\" data-q=\"\(HTMLText.escape(search.lowercased()))\""
            + " title=\"\(HTMLText.escape(lines.joined(separator: "\n")))\">"
            + "<span class=\"wf-label\"><b class=\"st \(statusClass)\">\(HTMLText.escape(status))</b>"
            + "<span class=\"role\">\(server ? "←" : "→")</span>\(h2Tag)\(HTMLText.escape(label))"
            + (h.error.map { " <span class=\"err\">\(HTMLText.escape($0))</span>" } ?? "") + grpcTag + "</span>"
            + "<span class=\"wf-track\">\(bars)</span><span class=\"wf-time\">\(HTMLText.escape(Format.duration(total)))</span></div>"
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
        // A process sampled once or twice (most short ones: only their exit sample) makes a dot,
        // not a timeline: those are a table row instead.
        let charted = report.vitals.filter { $0.samples >= Self.minChartSamples }
        var note = "From <code>sample</code> records: CPU in percent of one core, resident memory; time from the process's start."
        if charted.count > processLimit {
            note += " The \(processLimit) busiest processes of \(charted.count) with \(Self.minChartSamples) samples or more."
        }
        out.append("<p class=\"note\">\(note)</p>")
        out.append("<div class=\"cards\">")
        let byPath = Dictionary(analysis.logs.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        for v in charted.prefix(processLimit) {
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
        // One row per process (its busiest program: a shell or interpreter shim that exec'd the
        // real program has a log of its own), none for a process charted above. Past
        // `fewShownOpen` rows the table is folded: short helpers must not bury the page.
        var seenPids = Set(charted.prefix(processLimit).map(\.pid))
        let few = report.vitals.filter { $0.samples < Self.minChartSamples && seenPids.insert($0.pid).inserted }
        if !few.isEmpty {
            let title = "\(few.count) process\(few.count == 1 ? "" : "es") with fewer than \(Self.minChartSamples) samples (too short for a timeline)"
            if few.count > Self.fewShownOpen {
                out.append("<details id=\"few-samples-fold\"><summary><h3 class=\"inline\">\(title)</h3> (show)</summary>")
            } else {
                out.append("<h3>\(title)</h3>")
            }
            out.append("<table class=\"plain\" id=\"few-samples\"><tr><th>program</th><th>pid</th><th>duration</th><th>samples</th><th>CPU time</th><th>CPU max</th><th>RSS max</th></tr>")
            for v in few.prefix(100) {
                out.append("<tr><td>\(HTMLText.escape(v.program))</td><td>\(v.pid)</td><td>\(HTMLText.escape(Format.duration(v.durationUs)))</td>"
                           + "<td>\(v.samples)</td><td>\(HTMLText.escape(v.cpuTimeUs.map(Format.duration) ?? "-"))</td>"
                           + "<td>\(HTMLText.escape(v.cpuPct.map { Format.fixed($0.max, 1) + "%" } ?? "-"))</td>"
                           + "<td>\(HTMLText.escape(v.rssBytes.map { Format.bytes($0.max) } ?? "-"))</td></tr>")
            }
            out.append("</table>")
            if few.count > 100 { out.append("<p class=\"note\">\(few.count - 100) more: see <code>wedjat report --format json</code>.</p>") }
            if few.count > Self.fewShownOpen { out.append("</details>") }
        }
        return out.joined(separator: "\n") + "</section>"
    }

    static let minChartSamples = 3
    /// Rows of the short processes' table shown without a click.
    static let fewShownOpen = 12

    /// At most `limit` points: runs of neighbours merged as the text report's series are.
    static func downsample(_ points: [VitalsStats.Point], to limit: Int) -> [VitalsStats.Point] {
        guard points.count > limit else { return points }
        return (0 ..< limit).map { c in
            VitalsStats.merge(Array(points[c * points.count / limit ..< (c + 1) * points.count / limit]))
        }
    }

    // MARK: stalls

    private func stalls(_ report: Report) -> String {
        var out = ["<section id=\"stalls\"><h2>Stalls</h2>"]
        let section = report.stalls
        guard (section?.count ?? 0) > 0 || !foldedStacks.isEmpty || stallError != nil else {
            out.append("<p class=\"empty\" id=\"flame-empty\">No stalls recorded"
                       + (section.map { " over " + HTMLText.escape(Format.duration($0.thresholdUs)) + "." } ?? " (stall detection was off: WEDJAT_STALL_MS=0).")
                       + "</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        if let section, section.count > 0 {
        // The same stalls as the text report's STALLS, longest first.
        out.append("<p class=\"note\">\(section.count) stall\(section.count == 1 ? "" : "s") over \(HTMLText.escape(Format.duration(section.thresholdUs))), "
                   + "\(HTMLText.escape(Format.duration(section.totalUs))) in total, longest first.</p>")
        out.append("<table class=\"plain\" id=\"stall-table\"><tr><th>duration</th><th>on CPU</th><th>kind</th><th>process</th><th>thread</th><th>what</th><th>top frame</th></tr>")
        for r in section.stalls.prefix(20) {
            let what = r.kind == "loop" ? (r.after.map { "after " + $0 } ?? "busy")
                : ([r.call ?? "blocked", r.peer, r.host, r.result.map { "→ " + $0 }].compactMap { $0 }.joined(separator: " "))
            out.append("<tr><td>\(HTMLText.escape(Format.duration(r.durationUs)))</td><td>\(HTMLText.escape(r.onCpuPct.map { Format.fixed($0, 0) + "%" } ?? "-"))</td>"
                       + "<td>\(HTMLText.escape(r.kind))</td><td>\(HTMLText.escape(r.program)) \(r.pid)</td>"
                       + "<td>\(HTMLText.escape(r.thread ?? r.tid.map { "tid \($0)" } ?? "?"))</td><td>\(HTMLText.escape(what))</td>"
                       + "<td>\(HTMLText.escape(r.stack.first?.text ?? (r.stackUnavailable.map { "(no stack: \($0))" } ?? "(no stack)")))</td></tr>")
        }
        out.append("</table>")
        if section.stalls.count > 20 { out.append("<p class=\"note\">\(section.stalls.count - 20) more: see <code>wedjat report</code>.</p>") }
        }
        if let stallError {
            out.append("<p class=\"empty badtext\">Stall stacks could not be read: \(HTMLText.escape(stallError))</p>")
            return out.joined(separator: "\n") + "</section>"
        }
        let graph = FlameGraph(folded: foldedStacks)
        if graph.total > 0 {
            out.append("<p class=\"note\">Stacks of stalled threads, outermost frame at the bottom, "
                       + "each frame as wide as its share of the \(HTMLText.escape(Format.duration(graph.total))) of stall time its samples stand for "
                       + "(each sample weighs the time nearest to it within its stall). Click a frame to zoom, the bottom one to zoom out.</p>")
            if !graph.badLines.isEmpty {
                out.append("<p class=\"note badtext\">Folded lines not understood: "
                           + graph.badLines.map(String.init).joined(separator: ", ") + ".</p>")
            }
            out.append(graph.html())
        } else {
            out.append("<p class=\"note\">No stack samples to draw a flame graph from.</p>")
        }
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
