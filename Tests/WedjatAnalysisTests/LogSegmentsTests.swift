import XCTest
@testable import WedjatAnalysis

/// Rotated logs read as one (docs/LOG_FORMAT.md, "Segments"): the fixtures split into
/// segments give the same report and exports as the whole files.
final class LogSegmentsTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    /// Every log of a fixture directory split into segments of `lines` lines, in `dir`/`name`.
    private func split(_ fixture: String, lines: Int, removeFirst: Int = 0) throws -> (path: String, files: [String]) {
        let out = dir.path + "/\(fixture)-\(lines)-\(removeFirst)"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        var files: [String] = []
        var warnings: [ReaderWarning] = []
        for f in LogReader.logFiles(in: [testsDir + "/Fixtures/" + fixture], warnings: &warnings) {
            files += try SegmentSplitter.split(f, into: out, linesPerSegment: lines, removeFirst: removeFirst).files
        }
        return (out, files)
    }

    /// The report as JSON, without what rotation changes on purpose: where things are
    /// (directories, the slowest exchanges' segment file and line) and the `segments` rows.
    private func comparableReport(_ path: String) throws -> NSDictionary {
        let text = try JSONReport.render(Report(analysis: try RunAnalysis.load(paths: [path])))
            .replacingOccurrences(of: path + "/", with: "")
        var object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
        object["processes"] = (object["processes"] as! [[String: Any]]).map { row in
            var row = row; row["segments"] = nil; return row
        }
        object["slowest"] = (object["slowest"] as! [[String: Any]]).map { row in
            var row = row; row["log"] = nil; row["line"] = nil; return row
        }
        // A damaged line is named by the segment file it is in.
        object["warnings"] = (object["warnings"] as! [[String: Any]]).map { row in
            guard row["kind"] as? String == "reader" else { return row }
            var row = row; row["file"] = nil; row["line"] = nil; row["text"] = nil; return row
        }
        return object as NSDictionary
    }

    func testSplitFixturesReportAsTheWholeFiles() throws {
        var ignored: [ReaderWarning] = []
        for fixture in ["run1", "http", "export", "vitals", "stalls"] {
            let whole = testsDir + "/Fixtures/" + fixture
            for lines in [1, 2, 5] {
                let (path, files) = try split(fixture, lines: lines)
                XCTAssertGreaterThan(files.count, LogReader.logFiles(in: [whole], warnings: &ignored).count, "\(fixture): the split made segments")
                // The stalls and vitals fixtures name no `log`: the split adds one (as every real
                // log has), which only the process tree uses.
                XCTAssertEqual(try comparableReport(path), try comparableReport(whole),
                               "\(fixture) split every \(lines) lines reports differently")
            }
        }
    }

    func testProcessRowSaysHowManySegments() throws {
        let (path, _) = try split("http", lines: 3)
        let report = Report(analysis: try RunAnalysis.load(paths: [path]))
        let curl = try XCTUnwrap(report.processes.first { $0.program == "curl" })
        // 13 records after process_start, 3 a segment: 5 segments.
        XCTAssertEqual(curl.segments?.read, 5)
        XCTAssertEqual(curl.segments?.firstSegment, 0)
        XCTAssertEqual(curl.segments?.removed, 0)
        XCTAssertEqual(curl.log, path + "/curl.5000.1763782600000001.ndjson", "the log is named by its segment 0")
        XCTAssertFalse(report.warnings.contains { $0.kind == "segments_removed" })
        XCTAssertEqual(report.warnings.filter { $0.kind == "reader" }.map(\.text), [])
    }

    func testExportsOfSplitLogsEqualTheWholeOnes() throws {
        let (path, _) = try split("export", lines: 2)
        func export(_ p: String) throws -> (context: ExportContext, texts: [String]) {
            var requests: [String] = []
            let r = try ExportStream.run(paths: [p], outputs: .init(har: ExportText(), trace: ExportText(),
                                                                     otlp: { requests.append($0.text); return true }))
            return (r.context, [r.har!.text, r.trace!.text] + requests)
        }
        let whole = try export(testsDir + "/Fixtures/export"), rotated = try export(path)
        XCTAssertEqual(rotated.context.images.count, whole.context.images.count)
        XCTAssertEqual(rotated.texts, whole.texts, "the HAR, the trace and the OTLP requests")
    }

    func testDiffOfARunAndItsSegmentedCopyShowsNoChange() throws {
        let (path, _) = try split("diff/b", lines: 2)
        let whole = Report(analysis: try RunAnalysis.load(paths: [testsDir + "/Fixtures/diff/b"]))
        let rotated = Report(analysis: try RunAnalysis.load(paths: [path]))
        let d = try RunDiff(a: whole, pathA: "whole", b: rotated, pathB: "segments", thresholds: [])
        XCTAssertGreaterThan(d.metrics.count, 10)
        XCTAssertEqual(d.metrics.filter { ($0.change ?? 0) != 0 || ($0.a == nil) != ($0.b == nil) }.map(\.metric), [])
        XCTAssertEqual(d.hosts.flatMap(\.metrics).filter { ($0.change ?? 0) != 0 }.map(\.metric), [])
    }

    func testRemovedSegmentsAreSaidWithTheSpanCovered() throws {
        let source = testsDir + "/Fixtures/vitals/sleeper.6004.1763782700002000.ndjson"
        let split = try SegmentSplitter.split(source, into: dir.path, linesPerSegment: 10, removeFirst: 2)
        XCTAssertEqual(split.removed.count, 2)
        let firstLeft = try String(contentsOfFile: split.files[0], encoding: .utf8)
        let coversFrom = try XCTUnwrap(SegmentSplitter.field(String(firstLeft.split(separator: "\n")[0]), "segment_start_ts"))

        let analysis = try RunAnalysis.load(paths: [dir.path])
        XCTAssertEqual(analysis.logs.count, 1)
        let log = analysis.logs[0]
        XCTAssertEqual(log.segments.firstSegment, 2)
        XCTAssertEqual(log.segments.removed, 2)
        XCTAssertEqual(log.segments.removedRecords, 24, "2 segments of process_start, 10 lines and segment_end")
        XCTAssertEqual(log.start?.pid, 6004, "the first remaining segment's process_start identifies the process")

        let report = Report(analysis: analysis)
        let row = try XCTUnwrap(report.processes.first?.segments)
        XCTAssertEqual(row.firstSegment, 2)
        XCTAssertEqual(row.coversFromTs, coversFrom)
        XCTAssertEqual(row.coversToTs, log.lastKnownTs)
        let warning = try XCTUnwrap(report.warnings.first { $0.kind == "segments_removed" })
        XCTAssertTrue(warning.message.hasPrefix("segments 0-1 of this log were removed (2 recorded by retention,"), warning.message)
        XCTAssertTrue(warning.message.contains("its numbers cover \(Format.timestamp(coversFrom)) to"), warning.message)
        // The text report shows it among the warnings.
        XCTAssertTrue(TextReport().render(report).contains("sleeper: segments 0-1 of this log were removed"))
    }

    func testGroupingOrdersSegmentsAndWarnsAboutCopiesAndGaps() throws {
        let source = testsDir + "/Fixtures/run1/curl.4243.1763782510053001.ndjson"
        let split = try SegmentSplitter.split(source, into: dir.path, linesPerSegment: 1)
        XCTAssertEqual(split.files.count, 6)
        // A copy of segment 2 elsewhere, and segment 4 gone.
        let copy = try dir.write("copy/curl.4243.1763782510053001.2.ndjson",
                                 try String(contentsOfFile: split.files[2], encoding: .utf8))
        try FileManager.default.removeItem(atPath: split.files[4])
        var warnings: [ReaderWarning] = []
        let files = [split.files[5], copy, split.files[3], split.files[2], split.files[0], split.files[1]]
        let logs = LogSegments.group(files, warnings: &warnings)
        XCTAssertEqual(logs.count, 1)
        XCTAssertEqual(logs[0].key, "/tmp/wedjat-1000/curl.4243.1763782510053001.ndjson")
        XCTAssertEqual(logs[0].files.map(\.segment), [0, 1, 2, 3, 5])
        XCTAssertEqual(logs[0].files[2].path, copy, "the first file found for a segment is kept")
        XCTAssertEqual(logs[0].path, split.files[0])
        XCTAssertEqual(warnings.map(\.description), [
            "\(split.files[2]): segment 2 of /tmp/wedjat-1000/curl.4243.1763782510053001.ndjson is also in \(copy); this copy is skipped",
            "\(split.files[5]): segment 4 is missing before this one (after \(split.files[3])): records in between are not read",
        ])
    }

    func testLaterSegmentsProcessStartIsNotARecordOfItsOwn() throws {
        let source = testsDir + "/Fixtures/run1/curl.4243.1763782510053001.ndjson"
        let split = try SegmentSplitter.split(source, into: dir.path, linesPerSegment: 2)
        var reader = LogReader()
        var origins: [LogReader.RecordOrigin] = []
        var types: [String] = []
        try reader.read(paths: [dir.path]) { (origin: LogReader.RecordOrigin, record) in
            origins.append(origin); types.append(recordTypeName(record))
        }
        XCTAssertEqual(reader.warnings, [])
        XCTAssertEqual(types.filter { $0 == "process_start" }.count, 1)
        XCTAssertEqual(types.filter { $0 == "segment_end" }.count, split.files.count - 1)
        XCTAssertEqual(Set(origins.map(\.log)), [split.files[0]])
        // The last record is segment 2's last line, line 3 of that file (process_start, 2 records).
        XCTAssertEqual(origins.last?.file, split.files[2])
        XCTAssertEqual(origins.last?.line, 3)
        XCTAssertEqual(types.last, "process_end")
    }
}
