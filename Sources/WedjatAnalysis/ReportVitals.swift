import Foundation

// The VITALS and STARTUP parts of a report (docs/REPORT_JSON.md, `vitals[]` and `startup[]`).

extension Report {
    /// Columns of the downsampled series (and of the text report's sparklines).
    public static let seriesColumns = 40

    public struct Spread: Codable, Sendable {
        public var min: Double
        public var avg: Double
        public var max: Double
    }

    public struct ByteSpread: Codable, Sendable {
        public var min: Int64
        public var avg: Int64
        public var max: Int64
    }

    public struct ThreadRow: Codable, Sendable {
        public var tid: Int
        public var name: String?
        public var cpuPct: Double
    }

    public struct EnergyRow: Codable, Sendable {
        public var energyJ: Double
        public var watts: Double?
        public var intervalUs: Int64
    }

    public struct BatteryRow: Codable, Sendable {
        public var name: String?
        public var capacityPct: Int?
        public var status: String?
    }

    public struct SeriesRow: Codable, Sendable {
        public var startTs: Int64
        public var endTs: Int64
        /// Mean CPU % of the samples of each column; null where none had it.
        public var cpuPct: [Double?]
        /// Largest RSS of the samples of each column; null where none had it.
        public var rssBytes: [Int64?]
    }

    public struct VitalsRow: Codable, Sendable {
        public var log: String
        public var pid: Int
        public var program: String
        public var samples: Int
        public var durationUs: Int64
        public var cpuTimeUs: Int64?
        public var cpuPct: Spread?
        public var cpuSparkline: String
        public var rssBytes: ByteSpread?
        public var rssSparkline: String
        /// Why no sample had `memory`, when none did.
        public var memoryUnavailable: String?
        public var peakRssBytes: Int64?
        public var virtualBytesMax: Int64?
        public var threadsMax: Int?
        public var fdsMax: Int?
        public var voluntaryCtxSwitches: Int64?
        public var involuntaryCtxSwitches: Int64?
        public var minorFaults: Int64?
        public var majorFaults: Int64?
        public var systemBusyPct: Double?
        public var busiestThread: ThreadRow?
        public var energy: EnergyRow?
        public var energyUnavailable: String?
        public var batteries: [BatteryRow]?
        public var batteryUnavailable: String?
        public var series: SeriesRow
        /// Event loops per thread, from the samples' `loops` (ReportStalls.swift).
        public var loops: [LoopRow]?
    }

    public struct StartupSpread: Codable, Sendable {
        public var count: Int
        /// The lower median.
        public var median: Int64
        public var max: Int64
    }

    public struct StartupProcess: Codable, Sendable {
        public var log: String
        public var pid: Int
        public var execSource: String?
        public var constructorUs: Int64?
        public var mainUs: Int64?
        public var readyUs: Int64?
        public var readyCall: String?
        /// `ready_us`, else `main_us`, else `constructor_us`.
        public var totalUs: Int64?
    }

    public struct StartupRow: Codable, Sendable {
        public var program: String
        public var processes: Int
        public var constructorUs: StartupSpread?
        public var mainUs: StartupSpread?
        public var readyUs: StartupSpread?
        public var readyCalls: [NameCount]
        /// Processes whose times count from the kernel's start time (`exec_source: process_start`).
        public var coarse: Int
        /// The largest `exec_resolution_us` of those.
        public var coarseResolutionUs: Int64?
        public var slowest: StartupProcess
    }

    static func round1(_ v: Double) -> Double { (v * 10).rounded() / 10 }
    static func round3(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }

    static func vitalsRows(_ logs: [ProcessLog]) -> [VitalsRow] {
        logs.filter { $0.vitals.samples > 0 }
            .map { l -> VitalsRow in
                let v = l.vitals
                let s = v.series(columns: seriesColumns)
                let cpu: Spread? = v.cpuAvg.map { Spread(min: round1(v.cpuMin!), avg: round1($0), max: round1(v.cpuMax!)) }
                let rss: ByteSpread? = v.rssAvg.map { ByteSpread(min: v.rssMin!, avg: $0, max: v.rssMax!) }
                let energy: EnergyRow? = v.energySamples > 0
                    ? EnergyRow(energyJ: round3(v.energyJ),
                                watts: v.energyIntervalUs > 0 ? (v.energyJ / (Double(v.energyIntervalUs) / 1e6) * 100).rounded() / 100 : nil,
                                intervalUs: v.energyIntervalUs)
                    : nil
                return VitalsRow(
                    log: l.path, pid: l.pid, program: l.program, samples: v.samples, durationUs: l.durationUs,
                    cpuTimeUs: v.cpuTimeUs, cpuPct: cpu,
                    // CPU from 0 to at least one full core, so an idle process does not look busy.
                    cpuSparkline: sparkline(s.cpu, top: Swift.max(100, v.cpuMax ?? 0)),
                    rssBytes: rss, rssSparkline: sparkline(s.rss.map { $0.map(Double.init) }),
                    memoryUnavailable: rss == nil ? v.memoryUnavailable : nil,
                    peakRssBytes: v.peakRss, virtualBytesMax: v.virtualMax, threadsMax: v.threadsMax, fdsMax: v.fdsMax,
                    voluntaryCtxSwitches: v.voluntaryCtxSwitches, involuntaryCtxSwitches: v.involuntaryCtxSwitches,
                    minorFaults: v.minorFaults, majorFaults: v.majorFaults, systemBusyPct: v.systemBusyAvg.map(round1),
                    busiestThread: v.busiestThread.map { ThreadRow(tid: $0.tid, name: $0.name, cpuPct: round1($0.cpuPct)) },
                    energy: energy, energyUnavailable: energy == nil ? v.raplUnavailable : nil,
                    batteries: v.batteries?.map { BatteryRow(name: $0.name, capacityPct: $0.capacityPct, status: $0.status) },
                    batteryUnavailable: v.batteries == nil ? v.batteryUnavailable : nil,
                    series: SeriesRow(startTs: s.startTs, endTs: s.endTs, cpuPct: s.cpu.map { $0.map(round1) }, rssBytes: s.rss),
                    loops: Report.loopRows(v))
            }
            // Busiest first: CPU time, then the longest-lived.
            .sorted {
                let a = $0.cpuTimeUs ?? -1, b = $1.cpuTimeUs ?? -1
                if a != b { return a > b }
                if $0.durationUs != $1.durationUs { return $0.durationUs > $1.durationUs }
                return $0.log < $1.log
            }
    }

    static func startupRows(_ logs: [ProcessLog]) -> [StartupRow] {
        var byProgram: [String: [StartupProcess]] = [:]
        for l in logs {
            guard let s = l.startup else { continue }
            byProgram[l.program, default: []].append(StartupProcess(
                log: l.path, pid: l.pid, execSource: s.execSource, constructorUs: s.constructorUs, mainUs: s.mainUs,
                readyUs: s.readyUs, readyCall: s.readyCall, totalUs: s.readyUs ?? s.mainUs ?? s.constructorUs))
        }
        func spread(_ values: [Int64?]) -> StartupSpread? {
            let v = values.compactMap { $0 }.sorted()
            guard !v.isEmpty else { return nil }
            return StartupSpread(count: v.count, median: v[(v.count - 1) / 2], max: v[v.count - 1])
        }
        let coarseResolution = Dictionary(logs.compactMap { l in l.startup.map { (l.path, $0.execResolutionUs) } },
                                          uniquingKeysWith: { a, _ in a })
        return byProgram.map { program, ps -> StartupRow in
            let slowest = ps.max {
                let a = $0.totalUs ?? -1, b = $1.totalUs ?? -1
                return a != b ? a < b : $0.log > $1.log
            }!
            var calls: [String: Int] = [:]
            for p in ps { if let c = p.readyCall { calls[c, default: 0] += 1 } }
            let coarse = ps.filter { $0.execSource == "process_start" }
            return StartupRow(
                program: program, processes: ps.count, constructorUs: spread(ps.map(\.constructorUs)),
                mainUs: spread(ps.map(\.mainUs)), readyUs: spread(ps.map(\.readyUs)),
                readyCalls: rankedCounts(calls).map { NameCount(name: $0.name, count: $0.count) },
                coarse: coarse.count, coarseResolutionUs: coarse.compactMap { coarseResolution[$0.log] ?? nil }.max(),
                slowest: slowest)
        }
        // Slowest programs first.
        .sorted {
            let a = $0.slowest.totalUs ?? -1, b = $1.slowest.totalUs ?? -1
            return a != b ? a > b : $0.program < $1.program
        }
    }
}
