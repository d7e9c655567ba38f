import Foundation

// The content of a report, independent of its rendering: TextReport and JSONReport both
// render this one value, so the two formats cannot drift apart. Field names become the JSON
// keys (snake_case); docs/REPORT_JSON.md documents them.

public struct Report: Codable, Sendable {
    public var reportVersion = 1
    public var headline: Headline
    public var processes: [ProcessRow]
    public var peers: [PeerRow]
    public var tree: [TreeNode]
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
        public var droppedEvents: Int64
        public var droppedRecords: Int64
        public var warnings: Int
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
        public var droppedEvents: Int64
        public var droppedRecords: Int64
        public var parentLog: String?
        public var execFrom: String?
    }

    public struct Percentiles: Codable, Sendable {
        public var count: Int
        public var p50: Int64
        public var p95: Int64
        public var p99: Int64
        public var max: Int64
    }

    public struct ErrorCount: Codable, Sendable {
        public var name: String
        public var count: Int
    }

    public struct PeerRow: Codable, Sendable {
        public var key: String
        public var role: String
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
        /// `drops`, `no_end`, `config`, `warning` (wedjat's own), `exec_failed` or `reader`.
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
                case "exec": status = next.map { "exec → \(logs[$0].program)" } ?? "exec"
                case "exit", "_exit", "quick_exit": status = "\(end.reason) \(end.exitStatus.map(String.init) ?? "?")"
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
                openAtExit: l.openAtExit, forks: l.forks,
                droppedEvents: l.droppedEvents, droppedRecords: l.droppedRecords,
                parentLog: tree.parentImage[i].map { logs[$0].path },
                execFrom: tree.execPredecessor[i].map { logs[$0].path }))
        }

        let peerRows = analysis.peers.values
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.key < $1.key }
            .map { p in
                PeerRow(key: p.key.label + (p.hosts.isEmpty ? "" : " (" + p.hosts.sorted().joined(separator: ", ") + ")"),
                        role: p.key.role, address: p.key.address, hosts: p.hosts.sorted(), count: p.count,
                        bytesIn: p.bytesIn, bytesOut: p.bytesOut,
                        durationUs: p.durations.count == 0 ? nil : Percentiles(
                            count: p.durations.count, p50: p.durations.percentile(50)!,
                            p95: p.durations.percentile(95)!, p99: p.durations.percentile(99)!,
                            max: p.durations.max!),
                        errors: p.errors, errorNames: p.topErrors.map { ErrorCount(name: $0.name, count: $0.count) },
                        openAtExit: p.openAtExit)
            }

        func treeNode(_ n: ProcessNode) -> TreeNode {
            TreeNode(pid: logs[n.images[0]].pid, label: tree.label(n), programs: n.images.map { logs[$0].program },
                     logs: n.images.map { logs[$0].path }, children: n.children.map(treeNode))
        }

        // Warnings: what was lost first (drops, unfinished processes), then input problems.
        var warnings: [WarningItem] = []
        for l in logs where l.droppedEvents > 0 || l.droppedRecords > 0 {
            let msg = "\(l.droppedEvents) dropped event\(l.droppedEvents == 1 ? "" : "s"), "
                + "\(l.droppedRecords) dropped record\(l.droppedRecords == 1 ? "" : "s")"
            warnings.append(WarningItem(kind: "drops", file: l.path, line: nil, pid: l.pid, message: msg,
                                        text: "pid \(l.pid) \(l.program): \(msg)"))
        }
        for l in logs where l.killed {
            let msg = "no process_end: killed by a signal, or still running"
            warnings.append(WarningItem(kind: "no_end", file: l.path, line: nil, pid: l.pid, message: msg,
                                        text: "pid \(l.pid) \(l.program): \(msg) (\(l.fileName))"))
        }
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
        headline = Headline(
            processes: tree.processCount, logs: logs.count, startTs: startTs, endTs: endTs, spanUs: endTs - startTs,
            connections: logs.reduce(0) { $0 + $1.connections },
            bytesIn: logs.reduce(0) { $0 + $1.bytesIn }, bytesOut: logs.reduce(0) { $0 + $1.bytesOut },
            errors: logs.reduce(0) { $0 + $1.errors },
            dnsLookups: logs.reduce(0) { $0 + $1.dnsLookups },
            dnsErrors: logs.reduce(0) { $0 + $1.dnsErrors },
            droppedEvents: logs.reduce(0) { $0 + $1.droppedEvents },
            droppedRecords: logs.reduce(0) { $0 + $1.droppedRecords },
            warnings: warnings.count)
        processes = rows
        peers = peerRows
        self.tree = tree.roots.map(treeNode)
        self.warnings = warnings
    }
}
