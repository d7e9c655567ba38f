// The headline and the per-host sections of the text report: HOSTS, HOST LATENCY, HTTP
// STATUS, SLOWEST REQUESTS, DROPS.

extension TextReport {
    static let hostsShown = 20
    static let latencyHostsShown = 10
    static let statusesShown = 12

    /// At most 8 lines: what ran, connections, HTTP, latency, vitals, stalls, losses.
    func headlineLines(_ r: Report) -> [String] {
        let h = r.headline
        var out = [bold("wedjat report") + ": " + Format.count(h.processes, "process", "processes")
                   + " (" + Format.count(h.logs, "log") + "), " + span(h.startTs, h.endTs) + " UTC ("
                   + Format.duration(h.spanUs) + ")"]
        func row(_ label: String, _ text: String) { out.append("  " + bold(label.padding(toLength: 12, withPad: " ", startingAt: 0)) + text) }

        var conns = "\(h.connections)"
        if h.errors > 0 {
            conns += ", " + paint("\(h.errors) failed", .red) + (h.connectionErrorRate.map { " (" + percent($0) + ")" } ?? "")
        }
        conns += "; " + Format.bytes(h.bytesIn) + " in, " + Format.bytes(h.bytesOut) + " out"
        if h.dnsLookups > 0 {
            conns += "; " + Format.count(h.dnsLookups, "DNS lookup") + (h.dnsErrors > 0 ? ", " + paint("\(h.dnsErrors) failed", .red) : "")
        }
        row("connections", conns)

        if h.httpRequests > 0 {
            var http = Format.count(Int(h.httpRequests), "request")
            var rates: [String] = []
            if let r = h.networkErrorRate { rates.append("network errors " + paint(percent(r), r > 0 ? .red : nil)) }
            if let r = h.httpErrorRate {
                rates.append("HTTP errors " + paint(percent(r), r > 0 ? .red : nil)
                             + " (4xx " + percent(h.clientErrorRate ?? 0) + ", 5xx " + percent(h.serverErrorRate ?? 0) + ")")
            }
            if !rates.isEmpty { http += "; " + rates.joined(separator: ", ") }
            if let o = h.handedOff {
                var handed: [String] = []
                if o.joined > 0 { handed.append("\(o.joined) answered by a forked child (joined)") }
                if o.withoutResponse > 0 {
                    handed.append(paint("\(o.withoutResponse) handed off to a forked child whose log was not read", .yellow))
                }
                if o.withoutRequest > 0 {
                    handed.append(paint("\(o.withoutRequest) answered by a forked child whose parent's log was not read", .yellow))
                }
                if !handed.isEmpty { http += "; " + handed.joined(separator: ", ") }
            }
            row("HTTP", http)
        }
        if let c = r.coverage, let line = coverageLine(c) { row("coverage", line) }
        if let failures = r.dnsFailures, !failures.isEmpty { row("DNS", dnsFailureLine(failures, lookups: h.dnsLookups)) }

        var latency: [String] = []
        func phase(_ name: String, _ p: Report.Percentiles?, p99: Bool) {
            guard let p else { return }
            latency.append(name + " p50 " + Format.duration(p.p50) + (p99 ? ", p99 " + Format.duration(p.p99) : ""))
        }
        phase("TTFB", h.ttfbUs, p99: true)
        phase("total", h.durationUs, p99: true)
        phase("connect", h.connectUs, p99: false)
        phase("TLS", h.tlsUs, p99: false)
        phase("DNS", h.dnsUs, p99: false)
        if !latency.isEmpty { row("latency", latency.joined(separator: "; ")) }

        var vitals: [String] = []
        if let c = h.cpuTimeUs { vitals.append("CPU time " + Format.duration(c)) }
        if let m = h.peakRssBytes { vitals.append("peak RSS " + Format.bytes(m)) }
        if !vitals.isEmpty { row("vitals", vitals.joined(separator: ", ")) }

        if let n = h.stalls, n > 0 {
            row("stalls", paint("\(n)", .yellow) + (h.longestStallUs.map { ", longest " + Format.duration($0) } ?? ""))
        }

        // What was lost, and the warnings that say more.
        var lost: [String] = []
        if h.droppedEvents > 0 { lost.append(Format.count(Int(h.droppedEvents), "event")) }
        if h.droppedRecords > 0 { lost.append(Format.count(Int(h.droppedRecords), "record")) }
        if h.captureDropped > 0 { lost.append(Format.count(Int(h.captureDropped), "capture slot")) }
        var loss = lost.isEmpty ? [] : ["dropped " + lost.joined(separator: ", ")]
        if h.untrackedConnections > 0 { loss.append(Format.count(Int(h.untrackedConnections), "untracked connection")) }
        if let b = h.bytesAfterEnd { loss.append(Format.bytes(b) + " moved after their connection ended") }
        row("losses", paint(loss.isEmpty ? "0 drops" : loss.joined(separator: "; "), loss.isEmpty ? nil : .yellow)
            + "; " + paint(Format.count(h.warnings, "warning"), h.warnings > 0 ? .yellow : nil))
        return out
    }

    /// The headline's `coverage`: `12 of 15 HTTP connections decoded (98.1% of their 1.2 MiB);
    /// not decoded: 2 http2, 1 not_http`; nil when no connection carried a byte. COVERAGE says more.
    func coverageLine(_ c: Report.CoverageSection) -> String? {
        guard c.connections > 0 else { return nil }
        return paint(CoverageText.short(c), c.undecoded.contains { $0.connections > 0 } ? .yellow : nil)
    }

    /// COVERAGE: the connections that carried bytes, by what became of their bytes, with where
    /// they went; only when some were not decoded HTTP (a run of decoded HTTP alone needs none).
    func coverageLines(_ r: Report) -> [String] {
        guard let c = r.coverage, c.connections > 0,
              !c.undecoded.isEmpty || !c.otherProtocols.isEmpty || c.notParsed != nil || c.failed != nil else { return [] }
        var out = ["", bold("COVERAGE") + " (connections that carried bytes; reasons as the log names them)"]
        var table = Table(header: ["WHAT", "CONNS", "IN", "OUT", "WHERE"], rightAligned: [1, 2, 3], flexible: [4])
        if c.httpConnections > 0 {
            table.add([Cell("HTTP decoded"), Cell(String(c.decodedConnections)), Cell(Format.bytes(c.decodedBytesIn)),
                       Cell(Format.bytes(c.decodedBytesOut)),
                       Cell(c.decodedBytesShare.map { CoverageText.percent($0) + " of the HTTP connections' bytes" } ?? "")])
        }
        func add(_ what: String, _ g: Report.CoverageGroup, _ colour: Colour?) {
            let n = g.connections + (g.partly ?? 0)
            table.add([Cell(what, colour), Cell(g.connections == 0 && n > 0 ? "+\(n)" : String(n)),
                       Cell(Format.bytes(g.bytesIn)), Cell(Format.bytes(g.bytesOut)), Cell(g.examples.joined(separator: ", "))])
        }
        for g in c.undecoded { add("not decoded: " + (g.reason ?? "?"), g, g.connections > 0 ? .yellow : nil) }
        for g in c.otherProtocols { add(g.kind == "udp" ? "other protocol: udp" : "other protocol: \(g.kind ?? "?") (not HTTP)", g, nil) }
        if let p = c.notParsed { add("not parsed", p, nil) }
        if let f = c.failed { add("failed before a request", f, nil) }
        out += table.render(self)
        var notes: [String] = []
        if c.undecoded.contains(where: { ($0.partly ?? 0) > 0 }) {
            notes.append("+N: decoded connections whose bytes after their exchanges were not (IN, OUT: those bytes)")
        }
        if c.notParsed != nil { notes.append("not parsed: HTTP parsing off (WEDJAT_HTTP=0), or a log older than http_requests") }
        if c.failed != nil { notes.append("failed before a request: connection errors (CONNECTIONS BY PEER)") }
        if !notes.isEmpty { out.append(dim("  " + notes.joined(separator: "; "))) }
        return out
    }

    /// Failed lookups by name and error: `3 of 41 lookups failed: no-such.invalid EAI_NONAME×2, ...`.
    func dnsFailureLine(_ failures: [Report.DNSFailureRow], lookups: Int) -> String {
        let failed = failures.reduce(0) { $0 + $1.count }
        var items = failures.prefix(Self.dnsFailuresShown).map { "\($0.name) \($0.error)" + ($0.count > 1 ? "×\($0.count)" : "") }
        if failures.count > Self.dnsFailuresShown { items.append("\(failures.count - Self.dnsFailuresShown) more names (--format json lists all)") }
        return paint("\(failed) of " + Format.count(lookups, "lookup") + " failed", .red) + ": " + items.joined(separator: ", ")
    }

    static let dnsFailuresShown = 5

    /// HOSTS (requests, connections, error rates, bytes) and HOST LATENCY (phases).
    func hostLines(_ hosts: [Report.HTTPRow]) -> [String] {
        guard !hosts.isEmpty else { return [] }
        var out = ["", bold("HOSTS") + " (by requests)"]
        var table = Table(header: ["HOST", "REQS", "CONNS", "NET ERR", "4XX", "5XX", "IN", "OUT", "RATE", "TTFB P50",
                                   "TTFB P99"],
                          rightAligned: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], flexible: [0])
        table.detailColumn = 1
        // On a narrow terminal: the 4xx/5xx split is in HTTP STATUS, the rate and the connections
        // in --format json.
        table.droppable = [8, 2, 4, 5]
        table.minFlexible = 26
        for h in hosts.prefix(Self.hostsShown) {
            func rate(_ r: Double?) -> Cell { Cell(r.map(shortPercent) ?? "-", (r ?? 0) > 0 ? .red : nil) }
            table.add([
                Cell(hostLabel(h)), Cell(String(h.requests)), Cell(String(h.connections)), rate(h.networkErrorRate),
                rate(h.clientErrorRate), rate(h.serverErrorRate), Cell(Format.bytes(h.bytesIn)),
                Cell(Format.bytes(h.bytesOut)), Cell(h.throughputBytesPerS.map { Format.bytes($0) + "/s" } ?? "-"),
                Cell(ms(h.ttfbUs) { $0.p50 }), Cell(ms(h.ttfbUs) { $0.p99 }),
            ], detail: hostDetail(h))
        }
        out += table.render(self)
        let dropped = table.dropped(self)
        if !dropped.isEmpty {
            out.append(dim("  (" + dropped.joined(separator: ", ") + " left out at this width: a wider terminal, or --format json)"))
        }
        out += more(hosts.count - Self.hostsShown, "host")
        out.append(dim("  → the process was the client, ← the server. NET ERR: cut-short exchanges and failed"
                       + " connects, of both; 4XX, 5XX: of requests; IN, OUT: as the process saw them;"
                       + " RATE: both ways over the first request → last response"))
        if hosts.contains(where: { $0.summarized > 0 }) {
            let n = hosts.reduce(Int64(0)) { $0 + $1.summarized }
            out.append("  ~ includes " + Format.count(Int(n), "exchange")
                       + " known from http_summary records only: those percentiles are upper bounds")
        }

        // One row per phase that has values.
        var latency = Table(header: ["HOST LATENCY", "PHASE", "COUNT", "P50", "P95", "P99", "MAX"],
                            rightAligned: [2, 3, 4, 5, 6], flexible: [0])
        var listed = 0
        for h in hosts where listed < Self.latencyHostsShown {
            let phases: [(String, Report.Percentiles?)] = [("DNS", h.dnsUs), ("connect", h.connectUs), ("TLS", h.tlsUs),
                                                           ("TTFB", h.ttfbUs), ("total", h.durationUs)]
            var first = true
            for (name, p) in phases {
                guard let p else { continue }
                latency.add([Cell(first ? hostLabel(h) : ""), Cell(name), Cell(String(p.count)), Cell(ms(p) { $0.p50 }),
                             Cell(ms(p) { $0.p95 }), Cell(ms(p) { $0.p99 }), Cell(ms(p) { $0.max })])
                first = false
            }
            if !first { listed += 1 }
        }
        if listed > 0 {
            out.append("")
            out += latency.render(self)
            let withPhases = hosts.filter { [$0.dnsUs, $0.connectUs, $0.tlsUs, $0.ttfbUs, $0.durationUs].contains { $0 != nil } }.count
            out += more(withPhases - listed, "host")
        }
        return out
    }

    /// `→ http://api.local` (the client's view), `← http://127.0.0.1:8080` (the server's).
    func hostLabel(_ h: Report.HTTPRow) -> String {
        let arrow = h.role == "client" ? "→ " : h.role == "server" ? "← " : h.role + " "
        let schemes = h.schemes
        let prefix = schemes.count == 1 ? schemes[0] + "://" : schemes == ["http", "https"] ? "http(s)://" : ""
        return arrow + prefix + h.host
    }

    /// Under a host's row: its network errors, and exchanges handed off to a forked child whose
    /// log was not read (not errors).
    private func hostDetail(_ h: Report.HTTPRow) -> String? {
        var parts: [String] = []
        if h.networkErrors > 0 { parts.append(paint("network errors: " + errorText(h), .red)) }
        if let n = h.handedOff { parts.append(paint("\(n) handed off to a forked child (its log not read: no response here)", .yellow)) }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// Exchange errors by name, then connections that failed before a request.
    private func errorText(_ h: Report.HTTPRow) -> String {
        guard h.networkErrors > 0 else { return "0" }
        // http_summary records count their errors without naming them.
        var items = h.errorNames.prefix(3).map { "\($0.name)×\($0.count)" }
        let unnamed = h.errors - Int64(h.errorNames.reduce(0) { $0 + $1.count })
        if unnamed > 0 { items.append("summarized×\(unnamed)") }
        if h.failedConnections > 0 { items.append("connect failed×\(h.failedConnections)") }
        return "\(h.networkErrors) (" + items.joined(separator: ", ") + ")"
    }

    func statusLines(_ statuses: [Report.StatusRow], requests: Int64) -> [String] {
        guard requests > 0, !statuses.isEmpty else { return [] }
        var out = ["", bold("HTTP STATUS")]
        var table = Table(header: ["STATUS", "COUNT", "SHARE", "HOSTS"], rightAligned: [1, 2], flexible: [3])
        for s in statuses.prefix(Self.statusesShown) {
            let colour: Colour? = s.status.map { $0 >= 500 ? .red : $0 >= 400 ? .yellow : nil } ?? .red
            func label(_ key: String) -> String {
                key.replacingOccurrences(of: "client → ", with: "→ ").replacingOccurrences(of: "server ← ", with: "← ")
            }
            var hosts = s.hosts.map { $0.count == s.count ? label($0.key) : "\(label($0.key))×\($0.count)" }.joined(separator: ", ")
            if s.moreHosts > 0 { hosts += ", … (\(s.moreHosts) more)" }
            table.add([Cell(s.status.map(String.init) ?? "none", colour), Cell(String(s.count)), Cell(percent(s.share)),
                       Cell(hosts)])
        }
        out += table.render(self)
        out += more(statuses.count - Self.statusesShown, "status code")
        return out
    }

    func slowestLines(_ r: Report) -> [String] {
        let rows = r.slowest
        let summarized = r.http.reduce(Int64(0)) { $0 + $1.summarized }
        guard !rows.isEmpty || summarized > 0 else { return [] }
        let records = r.http.reduce(0) { $0 + $1.records }
        var out = ["", bold("SLOWEST REQUESTS") + " (\(rows.count) of " + Format.count(records, "recorded exchange")
                   + " by total; set-up: what a connection's first exchange waited for before its request)"]
        var table = Table(header: ["TOTAL", "TTFB", "SET-UP", "STATUS", "REQUEST"], rightAligned: [0, 1, 2], flexible: [4])
        table.detailColumn = 4
        for r in rows {
            let target = (r.scheme.map { $0 + "://" } ?? "") + r.host + (r.path ?? "")
            let request = (r.role == "client" ? "" : "(server) ") + (r.method ?? "?") + " " + target
            var phases: [String] = []
            // Zero-length phases say nothing (a request sent in one call has no send time). A
            // server's gap before the request is the client's, not its own: "idle".
            for (name, v) in [(r.role == "server" ? "idle" : "blocked", r.blockedUs), ("dns", r.dnsUs),
                              ("connect", r.connectUs), ("tls", r.tlsUs),
                              ("send", r.sendUs), ("wait", r.waitUs), ("receive", r.receiveUs)] {
                if let v, v > 0 { phases.append(name + " " + Format.shortDuration(v)) }
            }
            var status = r.status.map(String.init) ?? "-"
            // gRPC: a call that failed says how (its status name) beside the HTTP status.
            let grpcFailed = r.grpcStatus.map { $0 != "OK" } ?? false
            if grpcFailed, let g = r.grpcStatus { status += " grpc " + g }
            let stream = r.streamId.map { "HTTP/2 stream \($0) · " } ?? ""
            table.add([
                Cell(Format.shortDuration(r.durationUs)), Cell(r.ttfbUs.map(Format.shortDuration) ?? "-"),
                Cell(r.setupUs.map { "+" + Format.shortDuration($0) } ?? "-"),
                Cell(status + (r.error.map { " " + $0 } ?? ""), r.error != nil || (r.status ?? 0) >= 500 || grpcFailed ? .red : nil),
                Cell(request),
            ], detail: dim((phases.isEmpty ? "" : phases.joined(separator: ", ") + " · ") + stream + "pid \(r.pid) "
                           + baseName(r.log) + ":\(r.line)"))
        }
        if !rows.isEmpty { out += table.render(self) }
        if summarized > 0 {
            out.append("  + " + Format.count(Int(summarized), "exchange") + " only counted in http_summary records"
                       + " (past WEDJAT_HTTP_RECORDS; no single durations). Their slowest groups:")
            var groups = Table(header: ["P99", "MAX", "COUNT", "REQUEST", "STATUS"], rightAligned: [0, 1, 2], flexible: [3])
            for g in r.slowestSummarized {
                groups.add([Cell(g.p99Us.map { "~" + Format.shortDuration($0) } ?? "-"),
                            Cell(g.maxUs.map(Format.shortDuration) ?? "-"), Cell(String(g.count)),
                            Cell((g.role == "client" ? "" : g.role + " ") + (g.method ?? "?") + " " + g.host),
                            Cell((g.status.map(String.init) ?? "-") + (g.error.map { " " + $0 } ?? ""),
                                 g.error != nil || (g.status ?? 0) >= 500 ? .red : nil)])
            }
            out += groups.render(self)
        }
        return out
    }

    func dropLines(_ rows: [Report.DropRow]) -> [String] {
        guard !rows.isEmpty else { return [] }
        var out = ["", paint(bold("DROPS"), .yellow) + " (data wedjat lost; --format json lists all)"]
        var table = Table(header: ["PID", "PROGRAM", "EVENTS", "RECORDS", "CAPTURE", "UNTRACKED"], rightAligned: [0, 2, 3, 4, 5])
        for d in rows.prefix(Self.processesShown) {
            table.add([Cell(String(d.pid)), Cell(d.program), Cell(String(d.droppedEvents)), Cell(String(d.droppedRecords)),
                       Cell(String(d.captureDropped)), Cell(String(d.untrackedConnections))])
        }
        out += table.render(self)
        out += more(rows.count - Self.processesShown, "process", "processes")
        out.append(dim("  EVENTS: hook events lost (ring full); RECORDS: log lines not written; CAPTURE: captured bytes lost"
                       + " (their HTTP exchanges have error \"desync\"); UNTRACKED: connections over a limit"))
        return out
    }

    /// A duration with its unit, `~` first when the values include http_summary distributions
    /// (upper bounds).
    func ms(_ p: Report.Percentiles?, _ v: (Report.Percentiles) -> Int64) -> String {
        guard let p else { return "-" }
        return (p.summarized != nil ? "~" : "") + Format.shortDuration(v(p))
    }

    /// `12.34%` of a 0...1 ratio; `<0.01%` for a small non-zero one.
    func percent(_ r: Double) -> String {
        Format.percent(r)
    }

    /// `12.3%` for table columns; `<0.1%` for a small non-zero one.
    func shortPercent(_ r: Double) -> String {
        r > 0 && r < 0.0005 ? "<0.1%" : Format.fixed(r * 100, 1) + "%"
    }

    /// At most `width` characters, the cut marked with `…`.
    func shortened(_ s: String, _ width: Int) -> String {
        s.count <= width ? s : String(s.prefix(width - 1)) + "…"
    }

    func baseName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
    }
}
