import XCTest
@testable import WedjatAnalysis

/// A real run through an interpreter shim (Fixtures/shim: `wedjat run -- python3 -c ...` where
/// python3 is pyenv's shim: env and bash exec each other three times before python3.11, and
/// fork 40 helpers (subshells, readlink, basename); python makes 3 requests to a local server).
/// The shim's helpers must not fill the terminal report: one row per process in VITALS, quiet
/// processes counted in PROCESSES and folded in the tree, no number cut from its unit.
final class ShimRunTests: XCTestCase {
    static let fixture = testsDir + "/Fixtures/shim"

    private func report() throws -> Report { Report(analysis: try RunAnalysis.load(paths: [Self.fixture])) }

    private func section(_ text: String, _ name: String) -> String {
        text.components(separatedBy: "\n" + name)[1].components(separatedBy: "\n\n")[0]
    }

    func testGoldenText() throws {
        let text = TextReport(color: false).render(try report()).replacingOccurrences(of: Self.fixture, with: "Fixtures/shim")
        let golden = testsDir + "/Golden/shim.txt"
        XCTAssertEqual(text, try String(contentsOfFile: golden, encoding: .utf8),
                       "differs from \(golden); run scripts/regen-golden.sh if intended")
    }

    func testFacts() throws {
        let r = try report()
        XCTAssertEqual(r.headline.processes, 41)
        XCTAssertEqual(r.headline.logs, 79)
        XCTAssertEqual(r.headline.httpRequests, 3)
        let text = TextReport(color: false).render(r)
        // VITALS: processes, not logs; each pid once.
        let vitals = section(text, "VITALS")
        XCTAssertTrue(vitals.hasPrefix(" (busiest 4 of 41 processes with samples)"), vitals)
        let heads = vitals.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.hasPrefix("  …") }
        XCTAssertEqual(heads.count, 4, vitals)
        XCTAssertEqual(Set(heads.map { $0.split(separator: " ")[0] }).count, 4, "one row per pid: \(vitals)")
        XCTAssertTrue(heads[0].contains("python3.11"), vitals)
        // PROCESSES: the python process first, named once by its chain; quiet helpers fill at most
        // 10 rows, the rest counted.
        let processes = section(text, "PROCESSES").split(separator: "\n")
        XCTAssertTrue(processes[1].contains("python3.11 (via"), "\(processes)")
        XCTAssertEqual(processes.count, 1 + 10 + 1, "\(processes)")
        XCTAssertTrue(processes.last!.contains("… 31 more processes without network activity: bash×30, basename×1"), "\(processes)")
        XCTAssertTrue(processes[1].contains("exit 0"), "the status column is not cut: \(processes[1])")
        // PROCESS TREE: the helpers are one line.
        let tree = section(text, "PROCESS TREE").split(separator: "\n")
        XCTAssertEqual(tree.last, "  └─ … 40 processes without network activity: bash×34, readlink×5, basename×1; 5 exited non-zero")
        XCTAssertLessThanOrEqual(tree.count, 4)
        // STARTUP: a column that does not fit is left out and said, not wrapped under the table.
        let startup = section(text, "STARTUP")
        XCTAssertTrue(startup.contains("(SLOWEST left out at this width"), startup)
        let rows = startup.components(separatedBy: "  (SLOWEST")[0]
        for line in rows.split(separator: "\n") where line.hasPrefix("      ") {
            XCTFail("a table row wrapped: \(line)")
        }
        // Wide enough, nothing is left out.
        XCTAssertTrue(section(TextReport(color: false, width: 160).render(r), "STARTUP").contains("SLOWEST"))
    }

    /// At 80 columns PROCESSES leaves out the executable (then the duration) and says so, rather
    /// than wrapping every row, and the status is not cut before the program and path are.
    func testProcessesAt80Columns() throws {
        let text = TextReport(color: false, width: 80).render(try report())
        let processes = section(text, "PROCESSES").split(separator: "\n")
        XCTAssertEqual(processes[0], "    PID  PROGRAM                  DURATION  STATUS  CONNS       IN    OUT  DROPS")
        XCTAssertTrue(processes.contains { $0.contains("(EXE left out at this width") }, "\(processes)")
        for line in processes.prefix(12) where line.hasPrefix("      ") { XCTFail("a row wrapped: \(line)") }
        // Narrower still, the duration goes too.
        let narrow = section(TextReport(color: false, width: 70).render(try report()), "PROCESSES")
        XCTAssertTrue(narrow.contains("(EXE, DURATION left out at this width"), narrow)
        let cut = Table(header: ["A", "B", "C"], rightAligned: [], flexible: [0, 2])
        var t = cut
        t.cutLast = [2]
        t.add([Cell(String(repeating: "a", count: 30)), Cell("b"), Cell("killed by SIGTERM")])
        XCTAssertEqual(t.render(TextReport(width: 40))[1], "  aaaaaaaaaaaaaaa…  b  killed by SIGTERM")
    }

    /// A wrapped line is not cut between a number and its unit or label when it can be cut elsewhere.
    func testWrapKeepsNumbersWithTheirUnits() throws {
        let line = "    RSS  ████████████████████████████████████████  min 23.1 MiB  avg 24.3 MiB  max 24.6 MiB  peak 29.2 MiB"
        for width in [60, 70, 80, 90, 100] {
            let lines = TextReport(width: width).fit(line)
            for (a, b) in zip(lines, lines.dropFirst()) {
                XCTAssertFalse(a.last!.isNumber && b.drop { $0 == " " }.first!.isLetter, "cut at \(width): \(lines)")
                XCTAssertFalse(a.last!.isLetter && b.drop { $0 == " " }.first!.isNumber, "cut at \(width): \(lines)")
            }
            for l in lines { XCTAssertLessThanOrEqual(TextReport.visibleCount(l), width) }
        }
        // With no other space, it is still cut (no line wider than the report).
        let lines = TextReport(width: 40).fit("  peak 29.2 MiB " + String(repeating: "x", count: 30))
        for l in lines { XCTAssertLessThanOrEqual(TextReport.visibleCount(l), 40, "\(lines)") }
        XCTAssertTrue(TextReport.glues("4", "M") && TextReport.glues("d", "2") && !TextReport.glues(",", "w"))
    }

    /// HTML: the short helpers are one table row per process, folded when many.
    func testHTMLFoldsShortProcesses() throws {
        let analysis = try RunAnalysis.load(paths: [Self.fixture])
        let html = HTMLReport().render(analysis, report: Report(analysis: analysis))
        XCTAssertTrue(html.contains("<details id=\"few-samples-fold\"><summary><h3 class=\"inline\">40 processes with fewer than 3 samples"), html)
        let table = html.components(separatedBy: "id=\"few-samples\"")[1].components(separatedBy: "</table>")[0]
        XCTAssertEqual(table.components(separatedBy: "<tr>").count - 2, 40, "one row per process, the charted python3.11 left out")
    }
}
