import Foundation
import XCTest
@testable import WedjatAnalysis

/// `sample` and `startup` records: decoding, the VITALS and STARTUP parts of the report, and
/// Fixtures/vitals, whose numbers are worked out by hand below:
/// - server 6000: 5 samples, total_pct 10, 50, 90, 50 (1 s each) and 20 (at exit, 0.5 s):
///   avg = (10+50+90+50)·1 + 20·0.5 = 210 / 4.5 s = 46.7 %; RSS 100, 150, 200, 200, 180 MiB
///   (avg 166 MiB), VmHWM 210 MiB at exit; threads max 4, fds max 15; RAPL unavailable in the
///   first sample, then 10 + 12.5 + 10 + 5 = 37.5 J over 3.5 s = 10.71 W; thread "worker"
///   8, 45, 85, 45, 18 % → (183 + 9) / 4.5 = 42.7 %; system busy 20, 40, 30, 10 → 25 %.
/// - worker 6001..6003 (exec_source process_start, 10 ms ticks): constructor 12, 15, 30 ms
///   (median 15, max 30), main 12.5, 16, 31 ms, ready –, 20, 40 ms (lower median 20, max 40);
///   6003 has no memory group, 6002 no samples.
/// - sleeper 6004: 60 samples (→ 40 columns), sh 6005: one sample without CPU totals.
final class VitalsReportTests: XCTestCase {
    static let fixture = testsDir + "/Fixtures/vitals"
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    private func decode(_ json: String) throws -> Record {
        try Record.decode(line: json)
    }

    private func report() throws -> Report { Report(analysis: try RunAnalysis.load(paths: [Self.fixture])) }

    // MARK: decoding

    func testDecodeSampleFromTheLogFormatDoc() throws {
        let r = try decode(#"""
            {"type":"sample","ts":1763782511123456,"pid":4242,"seq":0,"at_exit":false,
             "interval_start_ts":1763782510123456,"interval_us":1000000,
             "cpu":{"user_pct":48.9,"system_pct":1.2,"total_pct":50.1,"user_us":512000,"system_us":14000},
             "top_threads":[{"tid":4250,"name":"worker","cpu_pct":49.7},{"tid":4242,"name":"server","cpu_pct":0.4}],
             "system_cpu":{"busy_pct":27.5,"user_pct":25.5,"system_pct":2.0,"iowait_pct":0.0,"steal_pct":0.0,"interval_us":1000012},
             "cpu_freq":{"cores":[{"cpu":0,"cur_khz":2450000,"min_khz":1500000,"max_khz":3500000}]},
             "memory":{"rss_bytes":211599360,"peak_rss_bytes":211599360,"virtual_bytes":221315072},"threads":3,
             "system_memory":{"total_bytes":25276510208,"available_bytes":24763256832,"used_bytes":513253376},
             "fds":12,"ctx_switches":{"voluntary":88,"involuntary":31},"page_faults":{"minor":51641,"major":2},
             "energy":{"rapl":{"packages":1,"energy_j":12.345,"watts":12.34,"interval_us":1000001},
                       "battery":[{"name":"BAT0","capacity_pct":87,"status":"Discharging"}]},
             "wedjat":{"thread_cpu_us":1830,"sample_us":96}}
            """#)
        guard case .sample(let s) = r else { return XCTFail("not a sample: \(r)") }
        XCTAssertEqual(s.seq, 0)
        XCTAssertFalse(s.atExit)
        XCTAssertEqual(s.intervalUs, 1_000_000)
        XCTAssertEqual(s.cpuUserPct, 48.9)
        XCTAssertEqual(s.cpuSystemPct, 1.2)
        XCTAssertEqual(s.cpuTotalPct, 50.1)
        XCTAssertEqual(s.cpuUserUs, 512_000)
        XCTAssertEqual(s.topThreads, [.init(tid: 4250, name: "worker", cpuPct: 49.7), .init(tid: 4242, name: "server", cpuPct: 0.4)])
        XCTAssertEqual(s.systemBusyPct, 27.5)
        XCTAssertEqual(s.rssBytes, 211_599_360)
        XCTAssertEqual(s.peakRssBytes, 211_599_360)
        XCTAssertEqual(s.virtualBytes, 221_315_072)
        XCTAssertEqual(s.threads, 3)
        XCTAssertEqual(s.fds, 12)
        XCTAssertEqual(s.voluntaryCtxSwitches, 88)
        XCTAssertEqual(s.involuntaryCtxSwitches, 31)
        XCTAssertEqual(s.minorFaults, 51641)
        XCTAssertEqual(s.majorFaults, 2)
        XCTAssertEqual(s.raplEnergyJ, 12.345)
        XCTAssertEqual(s.raplWatts, 12.34)
        XCTAssertEqual(s.batteries, [.init(name: "BAT0", capacityPct: 87, status: "Discharging")])
        XCTAssertEqual(s.unavailable, [:])
    }

    func testUnavailableGroupsKeepTheirReasons() throws {
        let r = try decode(#"""
            {"type":"sample","ts":10,"pid":1,"seq":3,"at_exit":true,"interval_us":5000,
             "cpu":{"user_pct":1,"system_pct":0,"total_pct":1,"user_us":10,"system_us":0},"top_threads":[],
             "system_cpu":{"unavailable":"no earlier reading of /proc/stat in this process"},
             "cpu_freq":{"unavailable":"no cpufreq in sysfs"},
             "memory":{"unavailable":"cannot read /proc/self/status"},"threads":null,"fds":null,
             "energy":{"rapl":{"unavailable":"permission denied: x"},"battery":{"unavailable":"no battery"}}}
            """#)
        guard case .sample(let s) = r else { return XCTFail("not a sample: \(r)") }
        XCTAssertTrue(s.atExit)
        XCTAssertEqual(s.cpuTotalPct, 1)   // an integer is a number too
        XCTAssertNil(s.systemBusyPct)
        XCTAssertNil(s.rssBytes)
        XCTAssertNil(s.threads)
        XCTAssertNil(s.fds)
        XCTAssertNil(s.raplEnergyJ)
        XCTAssertNil(s.batteries)
        XCTAssertEqual(s.unavailable, ["system_cpu": "no earlier reading of /proc/stat in this process",
                                       "cpu_freq": "no cpufreq in sysfs", "memory": "cannot read /proc/self/status",
                                       "rapl": "permission denied: x", "battery": "no battery"])
    }

    func testDecodeStartup() throws {
        let r = try decode(#"""
            {"type":"startup","ts":1763782510123900,"pid":4242,"tid":4242,"exec_ts":1763782510121000,
             "exec_source":"exec","exec_resolution_us":1,"constructor_us":1850,"main_us":1870,
             "ready_us":2900,"ready_call":"connect"}
            """#)
        XCTAssertEqual(r, .startup(StartupRecord(ts: 1763782510123900, pid: 4242, execTs: 1763782510121000,
                                                 execSource: "exec", execResolutionUs: 1, constructorUs: 1850,
                                                 mainUs: 1870, readyUs: 2900, readyCall: "connect")))
        let never = try decode(#"{"type":"startup","ts":5,"pid":1,"exec_ts":null,"exec_source":null,"main_us":null,"ready_us":null,"ready_call":null}"#)
        XCTAssertEqual(never, .startup(StartupRecord(ts: 5, pid: 1)))
    }

    func testBadFieldsAreSkippedWithFileAndLine() throws {
        let f = try dir.write("v.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/v")
            + #"{"type":"sample","ts":110,"pid":1,"cpu":{"total_pct":"high"}}"# + "\n"
            + #"{"type":"sample","ts":120,"pid":1,"top_threads":[{"tid":2,"cpu_pct":true}]}"# + "\n"
            + #"{"type":"sample","ts":130,"pid":1,"energy":{"rapl":{"unavailable":7}}}"# + "\n"
            + #"{"type":"sample","ts":140,"pid":1,"memory":{"rss_bytes":1.5}}"# + "\n"
            + #"{"type":"sample","ts":150,"pid":1,"top_threads":{"tid":2}}"# + "\n"
            + #"{"type":"startup","ts":160,"pid":1,"main_us":"soon"}"# + "\n"
            + #"{"type":"sample","ts":170,"pid":1,"cpu":{"total_pct":3.5},"energy":{"battery":[1]}}"# + "\n"
            + #"{"type":"sample","ts":180,"pid":1,"cpu":{"total_pct":2.5}}"# + "\n"
            + Line.end(pid: 1, ts: 200))
        var reader = LogReader()
        var records: [Record] = []
        try reader.read(paths: [f]) { records.append($2) }
        XCTAssertEqual(reader.warnings.map(\.description), [
            "\(f):2: sample: field \"cpu.total_pct\" must be a number; record skipped",
            "\(f):3: sample: field \"top_threads.cpu_pct\" must be a number; record skipped",
            "\(f):4: sample: field \"energy.rapl.unavailable\" must be a string; record skipped",
            "\(f):5: sample: field \"memory.rss_bytes\" must be an integer; record skipped",
            "\(f):6: sample: field \"top_threads\" must be an array of objects; record skipped",
            "\(f):7: startup: field \"main_us\" must be an integer; record skipped",
            "\(f):8: sample: field \"energy.battery\" must be an array of objects; record skipped",
        ])
        XCTAssertEqual(records.count, 3)   // start, the good sample, end
    }

    // MARK: sparklines and series

    func testSparkline() {
        XCTAssertEqual(sparkline([0, 50, 100], top: 100), "▁▅█")
        XCTAssertEqual(sparkline([1, 2, 3, 4, 5, 6, 7, 8].map(Double.init)), "▂▃▄▅▅▆▇█")
        XCTAssertEqual(sparkline([0, nil, 0]), "▁ ▁")
        XCTAssertEqual(sparkline([250], top: 100), "█")
    }

    func testSeriesIsDownsampledAndBounded() {
        var v = VitalsStats()
        for i in 0 ..< 60 { v.add(SampleRecord(ts: Int64(i), pid: 1, intervalUs: 1, cpuTotalPct: i < 30 ? 0 : 100, rssBytes: Int64(i))) }
        let s = v.series(columns: 40)
        XCTAssertEqual(s.cpu.count, 40)
        XCTAssertEqual(s.cpu.first!, 0)
        XCTAssertEqual(s.cpu.last!, 100)
        XCTAssertEqual(s.rss.last!, 59)   // the max of the last bucket
        XCTAssertEqual(s.startTs, 0)
        XCTAssertEqual(s.endTs, 59)

        // Far more samples than points kept: the stats stay exact, the series bounded.
        var big = VitalsStats()
        for i in 0 ..< 10_000 { big.add(SampleRecord(ts: Int64(i), pid: 1, intervalUs: 1000, cpuTotalPct: Double(i % 2) * 100, rssBytes: Int64(i))) }
        XCTAssertLessThanOrEqual(big.points.count, VitalsStats.maxPoints)
        XCTAssertEqual(big.samples, 10_000)
        XCTAssertEqual(big.cpuAvg!, 50, accuracy: 1e-9)
        XCTAssertEqual(big.rssMax, 9999)
        XCTAssertEqual(big.points.reduce(0) { $0 + $1.weight }, 10_000)
        let bs = big.series(columns: 40)
        XCTAssertEqual(bs.cpu.count, 40)
        for c in bs.cpu { XCTAssertEqual(c!, 50, accuracy: 2.5) }   // a bucket may hold one 0 or 100 more
        XCTAssertEqual(bs.rss.last!, 9999)
    }

    // MARK: the fixture

    func testVitalsFacts() throws {
        let r = try report()
        XCTAssertEqual(r.vitals.map(\.pid), [6000, 6003, 6004, 6001, 6005])   // by CPU time; sh has none
        let s = r.vitals[0]
        XCTAssertEqual(s.program, "server")
        XCTAssertEqual(s.samples, 5)
        XCTAssertEqual(s.cpuTimeUs, 2_100_000)
        XCTAssertEqual(s.cpuPct?.min, 10)
        XCTAssertEqual(s.cpuPct?.avg, 46.7)
        XCTAssertEqual(s.cpuPct?.max, 90)
        let mib: Int64 = 1 << 20
        XCTAssertEqual(s.rssBytes?.min, 100 * mib)
        XCTAssertEqual(s.rssBytes?.avg, 166 * mib)
        XCTAssertEqual(s.rssBytes?.max, 200 * mib)
        XCTAssertEqual(s.peakRssBytes, 210 * mib)
        XCTAssertEqual(s.virtualBytesMax, 400 * mib)
        XCTAssertEqual(s.threadsMax, 4)
        XCTAssertEqual(s.fdsMax, 15)
        XCTAssertEqual(s.minorFaults, 51641)
        XCTAssertEqual(s.majorFaults, 2)
        XCTAssertEqual(s.voluntaryCtxSwitches, 92)
        XCTAssertEqual(s.systemBusyPct, 25)
        XCTAssertEqual(s.busiestThread?.tid, 6010)
        XCTAssertEqual(s.busiestThread?.name, "worker")
        XCTAssertEqual(s.busiestThread?.cpuPct, 42.7)
        XCTAssertEqual(s.energy?.energyJ, 37.5)
        XCTAssertEqual(s.energy?.watts, 10.71)
        XCTAssertEqual(s.energy?.intervalUs, 3_500_000)
        XCTAssertNil(s.energyUnavailable)
        XCTAssertEqual(s.batteries?.first?.capacityPct, 86)   // the latest sample's
        XCTAssertNil(s.batteryUnavailable)
        XCTAssertEqual(s.series.cpuPct, [10, 50, 90, 50, 20])
        XCTAssertEqual(s.cpuSparkline, "▂▅▇▅▂")               // 0..100 %
        XCTAssertEqual(s.rssSparkline, "▅▆██▇")               // 0..200 MiB

        let noMemory = r.vitals[1]
        XCTAssertNil(noMemory.rssBytes)
        XCTAssertEqual(noMemory.memoryUnavailable, "cannot read /proc/self/status")
        XCTAssertEqual(noMemory.energyUnavailable, "permission denied: /sys/class/powercap/intel-rapl:0/energy_uj")
        XCTAssertEqual(noMemory.batteryUnavailable, "no battery in /sys/class/power_supply")
        XCTAssertNil(noMemory.fdsMax)
        // (15·1 + 16.7·0.3) / 1.3
        XCTAssertEqual(noMemory.cpuPct?.avg, 15.4)

        let sleeper = r.vitals[2]
        XCTAssertEqual(sleeper.samples, 60)
        XCTAssertEqual(sleeper.series.cpuPct.count, 40)
        XCTAssertEqual(sleeper.cpuSparkline.count, 40)
        XCTAssertEqual(sleeper.cpuPct?.avg, 0.1)   // 6 × 1 % over 60 s
        XCTAssertEqual(sleeper.rssBytes?.avg, 9 * mib)
        XCTAssertNil(r.vitals[4].cpuTimeUs)
    }

    func testStartupFacts() throws {
        let r = try report()
        XCTAssertEqual(r.startup.map(\.program), ["worker", "server", "sleeper"])   // slowest first
        let w = r.startup[0]
        XCTAssertEqual(w.processes, 3)
        XCTAssertEqual(w.constructorUs?.median, 15_000)
        XCTAssertEqual(w.constructorUs?.max, 30_000)
        XCTAssertEqual(w.mainUs?.median, 16_000)
        XCTAssertEqual(w.mainUs?.max, 31_000)
        XCTAssertEqual(w.readyUs?.count, 2)
        XCTAssertEqual(w.readyUs?.median, 20_000)
        XCTAssertEqual(w.readyUs?.max, 40_000)
        XCTAssertEqual(w.readyCalls.map(\.name), ["poll"])
        XCTAssertEqual(w.coarse, 3)
        XCTAssertEqual(w.coarseResolutionUs, 10_000)
        XCTAssertEqual(w.slowest.pid, 6003)
        XCTAssertEqual(w.slowest.totalUs, 40_000)
        let s = r.startup[1]
        XCTAssertEqual(s.coarse, 0)
        XCTAssertEqual(s.constructorUs?.median, 1850)
        XCTAssertEqual(s.readyUs?.max, 2900)
        XCTAssertEqual(s.slowest.readyCall, "connect")
        XCTAssertNil(r.startup[2].readyUs)
        XCTAssertEqual(r.startup[2].slowest.totalUs, 850)   // never ready: main
        XCTAssertTrue(r.warnings.isEmpty)
    }

    func testTextSections() throws {
        let text = TextReport(color: false, width: 200).render(try report())
        XCTAssertTrue(text.contains("VITALS (busiest 4 of 5 processes with samples)"))
        XCTAssertTrue(text.contains("    CPU  ▂▅▇▅▂"))
        XCTAssertTrue(text.contains("min 10.0%  avg 46.7%  max 90.0%"))
        XCTAssertTrue(text.contains("peak 210.0 MiB"))
        XCTAssertTrue(text.contains("energy 37.500 J (10.71 W avg); battery BAT0 86% Discharging"))
        // Unavailable energy and battery readings are in the JSON, not on every text report.
        XCTAssertFalse(text.contains("permission denied"))
        XCTAssertTrue(text.contains("… 1 more process with samples"))
        XCTAssertTrue(text.contains("worker*"))
        XCTAssertTrue(text.contains("15.000 ms / 30.000 ms"))
        XCTAssertFalse(text.contains("\u{1B}["))
        XCTAssertTrue(TextReport(color: true).render(try report()).contains("\u{1B}[1mVITALS"))
        // No trailing blanks from padded sparklines.
        XCTAssertFalse(text.split(separator: "\n").contains { $0.hasSuffix(" ") })
    }

    func testNoVitalsNoSections() throws {
        let f = try dir.write("n.1.1.ndjson", Line.start(pid: 1, ts: 100, exe: "/bin/n") + Line.end(pid: 1, ts: 200))
        let r = Report(analysis: try RunAnalysis.load(paths: [f]))
        XCTAssertTrue(r.vitals.isEmpty)
        XCTAssertTrue(r.startup.isEmpty)
        let text = TextReport().render(r)
        XCTAssertFalse(text.contains("VITALS"))
        XCTAssertFalse(text.contains("STARTUP"))
    }

    // MARK: golden

    private func portable(_ s: String) -> String { s.replacingOccurrences(of: Self.fixture, with: "Fixtures/vitals") }

    func testGoldenText() throws {
        let expected = try String(contentsOfFile: testsDir + "/Golden/vitals.txt", encoding: .utf8)
        XCTAssertEqual(portable(TextReport(color: false).render(try report())), expected,
                       "run scripts/regen-golden.sh if intended")
    }

    func testGoldenJSON() throws {
        let expected = try String(contentsOfFile: testsDir + "/Golden/vitals.json", encoding: .utf8)
        XCTAssertEqual(portable(try JSONReport.render(try report())), expected, "run scripts/regen-golden.sh if intended")
    }
}
