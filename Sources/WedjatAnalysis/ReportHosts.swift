import Foundation

// The per-host parts of a report (docs/REPORT_JSON.md: `http[]`, `statuses[]`, `slowest[]`,
// `drops[]` and the headline's rates and percentiles).

extension Report {
    public struct StatusCount: Codable, Sendable {
        public var status: Int
        public var count: Int64
    }

    public struct HostCount: Codable, Sendable {
        /// The `http[].key` of the host.
        public var key: String
        public var count: Int64
    }

    public struct StatusRow: Codable, Sendable {
        /// The final status; absent for exchanges without a response.
        public var status: Int?
        public var count: Int64
        /// `count` over all exchanges.
        public var share: Double
        /// The hosts that answered it, most first (at most `statusHosts`).
        public var hosts: [HostCount]
        public var moreHosts: Int
    }

    public struct SlowRow: Codable, Sendable {
        public var log: String
        public var line: Int
        public var pid: Int
        public var program: String
        public var ts: Int64
        public var role: String
        public var scheme: String?
        public var method: String?
        public var host: String
        public var path: String?
        public var status: Int?
        public var error: String?
        public var reused: Bool?
        public var requestStartTs: Int64?
        /// The set-up of the connection, for the exchange that opened it.
        public var dnsUs: Int64?
        public var connectUs: Int64?
        public var tlsUs: Int64?
        /// The phases (docs/REPORT_JSON.md, "Durations"): send + wait + receive = `duration_us`;
        /// for the exchange that opened its connection, `blocked_us` + `dns_us` + `connect_us`
        /// (TLS included) = `setup_us`, and `elapsed_us` = `setup_us` + `duration_us`.
        public var blockedUs: Int64?
        public var sendUs: Int64?
        public var waitUs: Int64?
        public var ttfbUs: Int64?
        public var receiveUs: Int64?
        public var durationUs: Int64
        public var setupUs: Int64?
        public var elapsedUs: Int64
        public var requestBytes: Int64
        public var responseBytes: Int64
        /// HTTP/2 streams only (absent for HTTP/1): `HTTP/2`, the stream id, and for gRPC the
        /// call (`package.Service/Method`) and its status's name.
        public var version: String?
        public var streamId: Int?
        public var grpcMethod: String?
        public var grpcStatus: String?
    }

    /// A group of exchanges only counted in `http_summary` records (SummarizedGroups).
    public struct SummarizedRow: Codable, Sendable {
        public var role: String
        public var host: String
        public var method: String?
        public var status: Int?
        public var error: String?
        public var count: Int64
        public var p99Us: Int64?
        public var maxUs: Int64?
    }

    public struct DropRow: Codable, Sendable {
        public var log: String
        public var pid: Int
        public var program: String
        public var droppedEvents: Int64
        public var droppedRecords: Int64
        public var captureDropped: Int64
        public var untrackedConnections: Int64
        public var killed: Bool
    }

    /// Hosts named per status code.
    static let statusHosts = 5

    /// `n / d` rounded to 6 decimals; nil when `d` is 0.
    static func rate(_ n: Int64, _ d: Int64) -> Double? {
        d > 0 ? (Double(n) / Double(d) * 1e6).rounded() / 1e6 : nil
    }

    static func hostRows(_ analysis: RunAnalysis) -> [HTTPRow] {
        analysis.http.values
            .sorted {
                if $0.requests != $1.requests { return $0.requests > $1.requests }
                if $0.connections.count != $1.connections.count { return $0.connections.count > $1.connections.count }
                return $0.key < $1.key
            }
            .concurrentMap { h in
                let schemes = h.schemes.sorted()
                let prefix = schemes.count == 1 ? schemes[0] + "://" : schemes == ["http", "https"] ? "http(s)://" : ""
                let arrow = h.key.role == "client" ? "client → " : h.key.role == "server" ? "server ← " : h.key.role + " ↔ "
                let c = h.statusClasses
                return HTTPRow(
                    key: arrow + prefix + h.key.host, role: h.key.role, host: h.key.host, schemes: schemes,
                    requests: h.requests, records: h.records, summarized: h.summarized,
                    statusClasses: c, errors: h.errors,
                    errorNames: h.topErrors.map { ErrorCount(name: $0.name, count: $0.count) },
                    requestBytes: h.requestBytes, responseBytes: h.responseBytes,
                    bytesIn: h.bytesIn, bytesOut: h.bytesOut,
                    activeSpanUs: h.firstTs.flatMap { a in h.lastTs.map { $0 - a } },
                    ttfbUs: Percentiles(h.ttfb), durationUs: Percentiles(h.durations),
                    statusCodes: h.statusCodes.map { StatusCount(status: $0.key, count: $0.value) }
                        .sorted { $0.count != $1.count ? $0.count > $1.count : $0.status < $1.status },
                    reused: h.reused, connections: h.connections.count, connectionErrors: h.connections.errors,
                    failedConnections: h.failedConnections, attempts: h.attempts, networkErrors: h.networkErrors,
                    networkErrorRate: rate(h.networkErrors, h.attempts),
                    httpErrorRate: rate(c.s4xx + c.s5xx, h.requests),
                    clientErrorRate: rate(c.s4xx, h.requests), serverErrorRate: rate(c.s5xx, h.requests),
                    dnsUs: Percentiles(h.connections.dns), connectUs: Percentiles(h.connections.connect),
                    tlsUs: Percentiles(h.connections.tls),
                    throughputBytesPerS: h.rateBytesPerS, handedOff: h.handedOff > 0 ? h.handedOff : nil)
            }
    }

    static func statusRows(_ hosts: [HTTPRow]) -> [StatusRow] {
        var byStatus: [Int?: [HostCount]] = [:]
        var total: Int64 = 0
        for h in hosts {
            total += h.requests
            for s in h.statusCodes { byStatus[s.status, default: []].append(HostCount(key: h.key, count: s.count)) }
            if h.statusClasses.noResponse > 0 {
                byStatus[nil, default: []].append(HostCount(key: h.key, count: h.statusClasses.noResponse))
            }
        }
        return byStatus.map { status, hosts -> StatusRow in
            let count = hosts.reduce(0) { $0 + $1.count }
            let ranked = hosts.sorted { $0.count != $1.count ? $0.count > $1.count : $0.key < $1.key }
            return StatusRow(status: status, count: count, share: rate(count, total) ?? 0,
                             hosts: Array(ranked.prefix(statusHosts)), moreHosts: Swift.max(0, ranked.count - statusHosts))
        }
        // Most frequent first; no-response after the codes of the same count.
        .sorted { a, b in
            if a.count != b.count { return a.count > b.count }
            return (a.status ?? Int.max) < (b.status ?? Int.max)
        }
    }

    static func slowRows(_ analysis: RunAnalysis) -> [SlowRow] {
        analysis.slowest.entries.map { e in
            let h = e.http, l = analysis.logs[e.log]
            let t = e.timings
            var row = SlowRow(
                log: e.file ?? l.path, line: e.line, pid: h.pid, program: l.program, ts: h.ts, role: h.role, scheme: h.scheme,
                method: h.method, host: HTTPKey(h).host, path: h.path, status: h.status, error: h.error, reused: h.reused,
                requestStartTs: h.requestStartTs, dnsUs: e.dnsUs, connectUs: e.connectUs, tlsUs: e.tlsUs,
                blockedUs: t?.blocked, sendUs: t?.send, waitUs: t?.wait, ttfbUs: h.ttfbUs,
                receiveUs: t?.receive, durationUs: h.durationUs ?? 0, setupUs: t?.setup,
                elapsedUs: (t?.setup ?? 0) + (h.durationUs ?? 0),
                requestBytes: h.requestHeaderBytes + h.requestBodyBytes,
                responseBytes: h.responseHeaderBytes + h.responseBodyBytes)
            if h.isHTTP2 {
                row.version = h.version
                row.streamId = h.streamId
                row.grpcMethod = h.grpc?.fullMethod
                row.grpcStatus = h.grpc.flatMap { g in g.statusName ?? g.status.map(String.init) }
            }
            return row
        }
    }

    /// Summarized groups shown beside SLOWEST.
    static let summarizedShown = 5

    static func summarizedRows(_ analysis: RunAnalysis) -> [SummarizedRow] {
        analysis.summarizedGroups.slowest(summarizedShown).map {
            SummarizedRow(role: $0.key.role, host: $0.key.host, method: $0.key.method, status: $0.key.status,
                          error: $0.key.error, count: $0.count, p99Us: $0.p99Us, maxUs: $0.maxUs)
        }
    }

    static func dropRows(_ logs: [ProcessLog]) -> [DropRow] {
        logs.filter { $0.droppedEvents > 0 || $0.droppedRecords > 0 || $0.captureDropped > 0 || $0.untrackedConnections > 0 }
            .map { DropRow(log: $0.path, pid: $0.pid, program: $0.program, droppedEvents: $0.droppedEvents,
                           droppedRecords: $0.droppedRecords, captureDropped: $0.captureDropped,
                           untrackedConnections: $0.untrackedConnections, killed: $0.killed) }
    }

    /// The headline's rates, percentiles and totals over the other sections.
    mutating func completeHeadline(_ analysis: RunAnalysis) {
        var attempts: Int64 = 0, networkErrors: Int64 = 0, s4xx: Int64 = 0, s5xx: Int64 = 0, requests: Int64 = 0
        for h in http {
            attempts += h.attempts
            networkErrors += h.networkErrors
            s4xx += h.statusClasses.s4xx
            s5xx += h.statusClasses.s5xx
            requests += h.requests
        }
        headline.connectionErrorRate = Report.rate(Int64(headline.errors), Int64(headline.connections))
        // Over a run without any exchange, every attempt is a failed connect: not a rate worth a headline.
        headline.networkErrorRate = requests > 0 ? Report.rate(networkErrors, attempts) : nil
        headline.httpErrorRate = Report.rate(s4xx + s5xx, requests)
        headline.clientErrorRate = Report.rate(s4xx, requests)
        headline.serverErrorRate = Report.rate(s5xx, requests)
        headline.ttfbUs = Percentiles(analysis.ttfb)
        headline.durationUs = Percentiles(analysis.durations)
        headline.connectUs = Percentiles(analysis.connectionStats.connects)
        headline.tlsUs = Percentiles(analysis.connectionStats.tlsPhases)
        headline.dnsUs = Percentiles(analysis.dnsDurations)
        headline.stalls = stalls?.count
        headline.longestStallUs = analysis.stalls.longest.first?.stall.durationUs
        let cpu = vitals.compactMap(\.cpuTimeUs)
        headline.cpuTimeUs = cpu.isEmpty ? nil : cpu.reduce(0, +)
        headline.peakRssBytes = vitals.compactMap { $0.peakRssBytes ?? $0.rssBytes?.max }.max()
    }
}
