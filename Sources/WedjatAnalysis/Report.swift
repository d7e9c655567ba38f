import Foundation

// The content of a report, independent of its rendering: TextReport and JSONReport both
// render this one value, so the two formats cannot drift apart. Field names become the JSON
// keys (snake_case); docs/REPORT_JSON.md documents them.

public struct Report: Codable, Sendable {
    /// docs/REPORT_JSON.md: incremented when a field changes meaning or disappears.
    public static let currentVersion = 4
    public var reportVersion = Report.currentVersion
    public var headline: Headline
    public var processes: [ProcessRow]
    public var peers: [PeerRow]
    /// Per host: HTTP exchanges and the connections attributed to the host (ReportHosts.swift).
    public var http: [HTTPRow]
    /// Exchanges by final status code, most frequent first.
    public var statuses: [StatusRow]
    /// The slowest exchanges, slowest first.
    public var slowest: [SlowRow]
    /// Per endpoint (method + path template of one host), by requests (ReportEndpoints).
    public var endpoints: [EndpointRow]
    /// The slowest groups of exchanges only counted in `http_summary` records (not candidates
    /// for `slowest`: they have no single durations).
    public var slowestSummarized: [SummarizedRow]
    public var connectionStats: ConnectionStatsRow
    /// Connections with bytes: decoded, not decoded (why), other protocols (Coverage.swift);
    /// nil when no connection carried a byte.
    public var coverage: CoverageSection?
    /// Failed lookups by name and error, the most frequent first; nil when none failed.
    public var dnsFailures: [DNSFailureRow]?
    public var tree: [TreeNode]
    /// Processes with `sample` records, busiest first (ReportVitals.swift).
    public var vitals: [VitalsRow]
    /// `startup` records by program, slowest first.
    public var startup: [StartupRow]
    /// Stalls, symbolized (ReportStalls.swift); nil when no log had stall detection on.
    public var stalls: StallsSection?
    /// Processes that lost data (dropped events, records, capture slots, untracked connections).
    public var drops: [DropRow]
    public var warnings: [WarningItem]

    public struct Headline: Codable, Sendable {
        public var processes: Int
        public var logs: Int
        public var startTs: Int64
        public var endTs: Int64
        public var spanUs: Int64
        public var connections: Int
        public var bytesIn: Int64
        public var bytesOut: Int64
        public var errors: Int
        public var dnsLookups: Int
        public var dnsErrors: Int
        /// HTTP exchanges (`http` records plus `http_summary` counts) and those with an error.
        public var httpRequests: Int64
        public var httpErrors: Int64
        /// Exchanges handed off to a forked child (Handoff.swift): joined with the child's half,
        /// and halves left alone (the other one not in the logs); nil when there were none.
        public var handedOff: HandedOff?
        /// Ratios from 0 to 1 (ReportHosts.swift); absent when their denominator is 0.
        public var connectionErrorRate: Double?
        public var networkErrorRate: Double?
        public var httpErrorRate: Double?
        public var clientErrorRate: Double?
        public var serverErrorRate: Double?
        /// Over all exchanges, client connects, TLS phases and lookups.
        public var ttfbUs: Percentiles?
        public var durationUs: Percentiles?
        public var connectUs: Percentiles?
        public var tlsUs: Percentiles?
        public var dnsUs: Percentiles?
        /// Absent when no log had stall detection on.
        public var stalls: Int?
        public var longestStallUs: Int64?
        /// Summed CPU time and the largest peak RSS of the processes with samples.
        public var cpuTimeUs: Int64?
        public var peakRssBytes: Int64?
        public var droppedEvents: Int64
        public var droppedRecords: Int64
        public var captureDropped: Int64
        public var untrackedConnections: Int64
        public var warnings: Int
        /// Bytes moved by socket calls that returned after their connection had ended (in no
        /// connection's counts); absent when none.
        public var bytesAfterEnd: Int64? = nil
    }

    public struct HandedOff: Codable, Sendable {
        public var joined: Int
        public var withoutResponse: Int
        public var withoutRequest: Int
    }

    public struct ProcessRow: Codable, Sendable {
        public var log: String
        public var pid: Int
        public var ppid: Int?
        public var program: String
        public var exe: String?
        public var argv: [String]
        public var startTs: Int64
        public var endTs: Int64?
        public var durationUs: Int64
        public var reason: String?
        public var exitStatus: Int?
        public var killed: Bool
        /// Human summary of how it ended: `exit 0`, `exec → curl`, `abort`, `killed?`.
        public var status: String
        public var connections: Int
        public var bytesIn: Int64
        public var bytesOut: Int64
        public var errors: Int
        public var openAtExit: Int
        public var forks: Int
        public var httpRequests: Int64
        public var droppedEvents: Int64
        public var droppedRecords: Int64
        public var captureDropped: Int64
        public var untrackedConnections: Int64
        public var parentLog: String?
        public var execFrom: String?
        /// Only for a rotated log (ReportSegments.swift).
        public var segments: SegmentsRow?
    }

    public struct Percentiles: Codable, Sendable {
        public var count: Int
        public var p50: Int64
        public var p95: Int64
        public var p99: Int64
        public var max: Int64
        /// How many of `count` came from `http_summary` distributions (then the percentiles
        /// are upper bounds); absent when none did.
        public var summarized: Int?
        /// The run's own spread of each percentile: `[low, high]`, the values at the ranks of a
        /// 95% confidence interval of that quantile (order statistics: n·q ± 1.96·√(n·q·(1−q))).
        /// `wedjat diff` calls a change significant only when the two runs' ranges do not overlap.
        public var p50Range: [Int64]?
        public var p95Range: [Int64]?
        public var p99Range: [Int64]?

        init(count: Int, p50: Int64, p95: Int64, p99: Int64, max: Int64, summarized: Int? = nil) {
            self.count = count; self.p50 = p50; self.p95 = p95; self.p99 = p99; self.max = max
            self.summarized = summarized
        }

        /// nil when nothing was recorded. One walk over the distribution for all the
        /// percentiles and their ranges.
        init?(_ d: DurationStats) {
            guard let maxValue = d.max else { return nil }
            // A range that would reach past the first or last value is not known (too few values
            // for that percentile): left out.
            let n = Double(d.count)
            var wanted: [Double] = [50, 95, 99]
            var known: [Bool] = []
            for q in [0.5, 0.95, 0.99] {
                let half = 1.96 * (n * q * (1 - q)).squareRoot()
                let lo = n * q - half, hi = n * q + half + 1
                known.append(lo >= 1 && hi <= n)
                wanted += [Swift.max(0, lo / n * 100), Swift.min(100, hi / n * 100)]
            }
            // The walk needs them in order.
            let order = wanted.indices.sorted { wanted[$0] < wanted[$1] }
            guard let sortedValues = d.percentiles(order.map { wanted[$0] }) else { return nil }
            var v = [Int64](repeating: 0, count: wanted.count)
            for (k, i) in order.enumerated() { v[i] = sortedValues[k] }
            self.init(count: d.count, p50: v[0], p95: v[1], p99: v[2],
                      max: maxValue, summarized: d.approximateCount > 0 ? d.approximateCount : nil)
            if known[0] { p50Range = [v[3], v[4]] }
            if known[1] { p95Range = [v[5], v[6]] }
            if known[2] { p99Range = [v[7], v[8]] }
        }
    }

    public struct ErrorCount: Codable, Sendable {
        public var name: String
        public var count: Int
    }

    public struct NameCount: Codable, Sendable {
        public var name: String
        public var count: Int
    }

    public struct HTTPRow: Codable, Sendable {
        /// `client → http://api.local`, `server ← http://127.0.0.1:8080`.
        public var key: String
        public var role: String
        public var host: String
        public var schemes: [String]
        public var requests: Int64
        public var records: Int
        public var summarized: Int64
        public var statusClasses: StatusClasses
        public var errors: Int64
        public var errorNames: [ErrorCount]
        public var requestBytes: Int64
        public var responseBytes: Int64
        /// What the watched process received and sent: a client's responses and requests, a
        /// server's requests and responses.
        public var bytesIn: Int64
        public var bytesOut: Int64
        /// First request start → last response end (RATE's time).
        public var activeSpanUs: Int64?
        public var ttfbUs: Percentiles?
        public var durationUs: Percentiles?
        /// `[{status, count}]`, most frequent first.
        public var statusCodes: [StatusCount]
        public var reused: Int64
        public var connections: Int
        public var connectionErrors: Int
        public var failedConnections: Int
        public var attempts: Int64
        public var networkErrors: Int64
        public var networkErrorRate: Double?
        public var httpErrorRate: Double?
        public var clientErrorRate: Double?
        public var serverErrorRate: Double?
        public var dnsUs: Percentiles?
        public var connectUs: Percentiles?
        public var tlsUs: Percentiles?
        public var throughputBytesPerS: Int64?
        /// Exchanges handed off to a forked child whose half was not in the logs: no response
        /// here, not errors (in `status_classes.no_response`); nil when none.
        public var handedOff: Int64?
    }

    public struct ConnectionStatsRow: Codable, Sendable {
        public var transports: [NameCount]
        public var tls: TLSRow
        public var errors: [PhaseError]

        public struct TLSRow: Codable, Sendable {
            public var connections: Int
            public var handshakeUs: Percentiles?
            public var unfinished: Int
            public var versions: [NameCount]
            public var libraries: [NameCount]
            public var alpn: [NameCount]
        }

        public struct PhaseError: Codable, Sendable {
            public var phase: String
            public var name: String
            public var count: Int
        }
    }

    public struct PeerRow: Codable, Sendable {
        public var key: String
        public var role: String
        public var transport: String
        public var address: String
        /// Host names the address was resolved from (client peers), sorted.
        public var hosts: [String]
        public var count: Int
        public var bytesIn: Int64
        public var bytesOut: Int64
        /// Over the connections without error; absent when all failed.
        public var durationUs: Percentiles?
        public var errors: Int
        public var errorNames: [ErrorCount]
        public var openAtExit: Int
    }

    public struct TreeNode: Codable, Sendable {
        public var pid: Int
        public var label: String
        public var programs: [String]
        public var logs: [String]
        public var children: [TreeNode]
    }

    public struct WarningItem: Codable, Sendable {
        /// `drops`, `no_end`, `config`, `warning` (wedjat's own), `exec_failed`, `exec_unwatched`,
        /// `exec_no_log` (an exec whose next image has no log here) or `reader`.
        public var kind: String
        public var file: String?
        public var line: Int?
        public var pid: Int?
        public var message: String
        /// The line as the text report prints it.
        public var text: String
    }
}

extension Report {
    public init(analysis: RunAnalysis) {
        let tree = ProcessTree(logs: analysis.logs)
        let logs = tree.logs

        var execSuccessor: [Int: Int] = [:]
        for (i, p) in tree.execPredecessor.enumerated() { if let p { execSuccessor[p] = i } }
        var rows: [ProcessRow] = []
        for (i, l) in logs.enumerated() {
            let next = execSuccessor[i]
            let status: String
            if let end = l.end {
                switch end.reason {
                case "exec":
                    if let next { status = "exec → \(logs[next].program)" }
                    else if let why = end.execUnwatched { status = "exec, not watched (\(why))" }
                    else { status = "exec, no log after it" }
                case "exit", "_exit", "quick_exit": status = "\(end.reason) \(end.exitStatus.map(String.init) ?? "?")"
                case "signal": status = "killed by \(end.signal ?? "a signal")"
                default: status = end.reason
                }
            } else {
                status = "killed?"
            }
            rows.append(ProcessRow(
                log: l.path, pid: l.pid, ppid: l.start?.ppid, program: l.program, exe: l.start?.exe,
                argv: l.start?.argv ?? [], startTs: l.startTs, endTs: l.end?.ts, durationUs: l.durationUs,
                reason: l.end?.reason, exitStatus: l.end?.exitStatus, killed: l.killed, status: status,
                connections: l.connections, bytesIn: l.bytesIn, bytesOut: l.bytesOut, errors: l.errors,
                openAtExit: l.openAtExit, forks: l.forks, httpRequests: l.httpRequests,
                droppedEvents: l.droppedEvents, droppedRecords: l.droppedRecords,
                captureDropped: l.captureDropped, untrackedConnections: l.untrackedConnections,
                parentLog: tree.parentImage[i].map { logs[$0].path },
                execFrom: tree.execPredecessor[i].map { logs[$0].path }, segments: Report.segmentsRow(l)))
        }

        let peerRows = analysis.peers.values
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.key < $1.key }
            .concurrentMap { p in
                PeerRow(key: p.key.label + (p.hosts.isEmpty ? "" : " (" + p.hosts.sorted().joined(separator: ", ") + ")"),
                        role: p.key.role, transport: p.key.transport, address: p.key.address,
                        hosts: p.hosts.sorted(), count: p.count,
                        bytesIn: p.bytesIn, bytesOut: p.bytesOut, durationUs: Percentiles(p.durations),
                        errors: p.errors, errorNames: p.topErrors.map { ErrorCount(name: $0.name, count: $0.count) },
                        openAtExit: p.openAtExit)
            }

        let httpRows = Report.hostRows(analysis)

        let cs = analysis.connectionStats
        func named(_ d: [String: Int]) -> [NameCount] { rankedCounts(d).map { NameCount(name: $0.name, count: $0.count) } }
        let connectionStats = ConnectionStatsRow(
            transports: named(cs.transports),
            tls: .init(connections: cs.tlsConnections, handshakeUs: Percentiles(cs.handshakes),
                       unfinished: cs.unfinishedHandshakes, versions: named(cs.tlsVersions),
                       libraries: named(cs.tlsLibraries), alpn: named(cs.alpn)),
            errors: cs.rankedErrors.map { .init(phase: $0.phase, name: $0.name, count: $0.count) })

        func treeNode(_ n: ProcessNode) -> TreeNode {
            TreeNode(pid: logs[n.images[0]].pid, label: tree.label(n), programs: n.images.map { logs[$0].program },
                     logs: n.images.map { logs[$0].path }, children: n.children.map(treeNode))
        }

        // Warnings: unfinished processes first, then the library's, then input problems. What
        // was dropped is the DROPS section.
        var warnings: [WarningItem] = []
        for l in logs where l.end == nil {
            let msg = "no process_end: killed by a signal, or still running"
            warnings.append(WarningItem(kind: "no_end", file: l.path, line: nil, pid: l.pid, message: msg,
                                        text: "pid \(l.pid) \(l.program): \(msg) (\(l.fileName))"))
        }
        // An exec whose next image has no log here: said, since that image's work is missing.
        for (i, l) in logs.enumerated() where l.end?.reason == "exec" && execSuccessor[i] == nil {
            let target = l.end?.exec.map { " \($0)" } ?? ""
            let kind: String, msg: String
            if let why = l.end?.execUnwatched {
                kind = "exec_unwatched"
                msg = "exec'd\(target), which wedjat cannot watch (\(Report.unwatchedReason(why)))"
            } else {
                kind = "exec_no_log"
                msg = "exec'd\(target), whose image has no log here: still running before its first flush, "
                    + "ended by a signal before it (SIGKILL, or SIGPIPE and others at their default action), "
                    + "or logging to another directory"
            }
            warnings.append(WarningItem(kind: kind, file: l.path, line: nil, pid: l.pid, message: msg,
                                        text: "pid \(l.pid) \(l.program): \(msg) (\(l.fileName))"))
        }
        warnings += Report.segmentWarnings(logs)
        for l in logs {
            for w in l.start?.configWarnings ?? [] {
                warnings.append(WarningItem(kind: "config", file: l.path, line: 1, pid: l.pid, message: w,
                                            text: "pid \(l.pid) \(l.program): configuration: \(w)"))
            }
        }
        for l in logs {
            for n in l.notes {
                warnings.append(WarningItem(kind: n.type, file: l.path, line: nil, pid: l.pid, message: n.message,
                                            text: "pid \(l.pid) \(l.program): \(n.message)"))
            }
        }
        for w in analysis.readerWarnings {
            warnings.append(WarningItem(kind: "reader", file: w.file, line: w.line, pid: nil, message: w.message,
                                        text: w.description))
        }

        let startTs = logs.map(\.startTs).min() ?? 0
        let endTs = logs.map(\.lastKnownTs).max() ?? startTs
        let afterEnd = logs.reduce(Int64(0)) { $0 + $1.bytesAfterEnd }
        headline = Headline(
            processes: tree.processCount, logs: logs.count, startTs: startTs, endTs: endTs, spanUs: endTs - startTs,
            connections: logs.reduce(0) { $0 + $1.connections - $1.inheritedConnections },
            bytesIn: logs.reduce(0) { $0 + $1.bytesIn }, bytesOut: logs.reduce(0) { $0 + $1.bytesOut },
            errors: logs.reduce(0) { $0 + $1.errors },
            dnsLookups: logs.reduce(0) { $0 + $1.dnsLookups },
            dnsErrors: logs.reduce(0) { $0 + $1.dnsErrors },
            httpRequests: logs.reduce(0) { $0 + $1.httpRequests },
            httpErrors: logs.reduce(0) { $0 + $1.httpErrors },
            droppedEvents: logs.reduce(0) { $0 + $1.droppedEvents },
            droppedRecords: logs.reduce(0) { $0 + $1.droppedRecords },
            captureDropped: logs.reduce(0) { $0 + $1.captureDropped },
            untrackedConnections: logs.reduce(0) { $0 + $1.untrackedConnections },
            warnings: warnings.count,
            bytesAfterEnd: afterEnd > 0 ? afterEnd : nil)
        processes = rows
        peers = peerRows
        http = httpRows
        statuses = Report.statusRows(httpRows)
        slowest = Report.slowRows(analysis)
        endpoints = Report.endpointRows(analysis)
        slowestSummarized = Report.summarizedRows(analysis)
        self.connectionStats = connectionStats
        coverage = Report.coverageSection(analysis.coverage)
        dnsFailures = analysis.dnsFailures.total > 0 ? Report.dnsFailureRows(analysis.dnsFailures) : nil
        let handoffs = analysis.handoffStats
        if handoffs.joined + handoffs.unjoinedParents + handoffs.unjoinedChildren > 0 {
            headline.handedOff = HandedOff(joined: handoffs.joined, withoutResponse: handoffs.unjoinedParents,
                                           withoutRequest: handoffs.unjoinedChildren)
        }
        self.tree = tree.roots.map(treeNode)
        vitals = Report.vitalsRows(logs)
        startup = Report.startupRows(logs)
        stalls = Report.stallsSection(analysis)
        drops = Report.dropRows(logs)
        self.warnings = warnings
        completeHeadline(analysis)
    }
}

extension Report {
    /// `process_end.exec_unwatched` in words.
    static func unwatchedReason(_ code: String) -> String {
        switch code {
        case "no_preload": return "its environment drops LD_PRELOAD"
        case "disabled": return "WEDJAT_DISABLE=1 in its environment"
        case "setuid", "setgid", "file_capabilities":
            return "\(code.replacingOccurrences(of: "_", with: " ")): the loader ignores LD_PRELOAD in secure execution"
        case "static": return "statically linked: no dynamic loader to preload wedjat"
        default: return code
        }
    }
}
