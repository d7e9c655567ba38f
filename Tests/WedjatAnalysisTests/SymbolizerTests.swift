import Foundation
import XCTest
@testable import WedjatSymbols

/// A program of Fixtures/symbols, compiled with debug info into a temp dir at test time and run:
/// the return addresses of its stack (glibc's backtrace) and its loaded objects, as a stall
/// sample and a `modules` record would carry them.
struct StackFixture {
    static let sources = testsDir + "/Fixtures/symbols"

    let binary: String
    /// Innermost first.
    let frames: [UInt64]
    let modules: [ModuleMapping]
    /// The program's own output: `{"frames":[...],"modules":[...]}`.
    let output: [String: Any]

    var map: ModuleMap { ModuleMap(modules) }

    /// Compiles `source` (`stack.c` with gcc, `stack.cpp` with g++) to `dir/name`.
    @discardableResult
    static func build(_ source: String, into dir: String, name: String, flags: [String] = []) throws -> String {
        let out = dir + "/" + name
        let compiler = source.hasSuffix(".cpp") ? "g++" : "gcc"
        try run(compiler, ["-g", "-O0", "-I", sources, "-o", out, sources + "/" + source] + flags)
        return out
    }

    static func run(_ binary: String) throws -> StackFixture {
        let text = try run(binary, [])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let frames = try XCTUnwrap(object["frames"] as? [String]).map { try XCTUnwrap(UInt64($0.dropFirst(2), radix: 16)) }
        let modules = try XCTUnwrap(object["modules"] as? [[String: String]]).map { m in
            func hex(_ k: String) throws -> UInt64 { try XCTUnwrap(UInt64(try XCTUnwrap(m[k]).dropFirst(2), radix: 16)) }
            return ModuleMapping(path: try XCTUnwrap(m["path"]), base: try hex("base"), lo: try hex("lo"), hi: try hex("hi"),
                                 buildId: try XCTUnwrap(m["build_id"]))
        }
        return StackFixture(binary: binary, frames: frames, modules: modules, output: object)
    }

    /// The 1-based line of `/* CALL callee */` in a fixture source.
    static func line(calling callee: String, in file: String) throws -> Int {
        let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let hits = lines.indices.filter { lines[$0].contains("/* CALL \(callee) */") }
        XCTAssertEqual(hits.count, 1, "marker CALL \(callee) in \(file)")
        return try XCTUnwrap(hits.first) + 1
    }

    /// Runs a tool, returns its stdout; fails with its stderr when it fails.
    @discardableResult
    static func run(_ tool: String, _ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : "/usr/bin/" + tool)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw NSError(domain: "fixture", code: Int(p.terminationStatus), userInfo: [
                NSLocalizedDescriptionKey: "\(tool) \(args.joined(separator: " ")): " + String(decoding: stderr, as: UTF8.self)])
        }
        return String(decoding: stdout, as: UTF8.self)
    }
}

final class SymbolizerTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    private func basename(_ path: String?) -> String? { path.map { ($0 as NSString).lastPathComponent } }

    func testCStackFunctionsAndLines() throws {
        let fixture = try StackFixture.run(try StackFixture.build("stack.c", into: dir.path, name: "stack"))
        let symbolizer = Symbolizer()
        let frames = symbolizer.symbolize(stack: fixture.frames, in: fixture.map)
        XCTAssertGreaterThanOrEqual(frames.count, 7)

        XCTAssertEqual(frames.prefix(5).map(\.function), ["fixture_print_stack", "inner", "middle", "outer", "main"])
        // Each return address maps to the line of its call (middle is a static function: .symtab).
        XCTAssertEqual(frames.prefix(5).map { basename($0.file) }, ["modules.h", "stack.c", "stack.c", "stack.c", "stack.c"])
        XCTAssertEqual(frames[0].line, try StackFixture.line(calling: "backtrace", in: "modules.h"))
        XCTAssertEqual(frames[1].line, try StackFixture.line(calling: "fixture_print_stack", in: "stack.c"))
        XCTAssertEqual(frames[2].line, try StackFixture.line(calling: "inner", in: "stack.c"))
        XCTAssertEqual(frames[3].line, try StackFixture.line(calling: "middle", in: "stack.c"))
        XCTAssertEqual(frames[4].line, try StackFixture.line(calling: "outer", in: "stack.c"))
        for f in frames.prefix(5) {
            XCTAssertEqual(f.module?.path, fixture.binary)
            XCTAssertEqual(f.moduleOffset, f.address - f.module!.base)
            // A return address lies after the call, inside the function.
            let offset = try XCTUnwrap(f.functionOffset)
            XCTAssertTrue(offset > 0 && offset < 0x400, "\(f.text)")
        }
        // The offset is the one nm's symbol value gives.
        let nm = try StackFixture.run("nm", [fixture.binary])
        let innerLine = try XCTUnwrap(nm.split(separator: "\n").first { $0.hasSuffix(" T inner") })
        let innerValue = try XCTUnwrap(UInt64(innerLine.prefix { $0 != " " }, radix: 16))
        XCTAssertEqual(frames[1].functionOffset, frames[1].moduleOffset! - innerValue)
        XCTAssertEqual(frames[1].text, "inner+0x\(String(frames[1].functionOffset!, radix: 16)) (stack.c:\(frames[1].line!))")

        // glibc, from its .dynsym (Debian strips its .symtab): the exported __libc_start_main is
        // named; the static __libc_start_call_main is not, and is not given a wrong neighbour's name.
        XCTAssertEqual(frames[5].module?.name, "libc.so.6")
        XCTAssertEqual(frames[6].module?.name, "libc.so.6")
        XCTAssertEqual(frames[6].function, "__libc_start_main")
        if frames[5].function == nil { XCTAssertEqual(frames[5].name, "libc.so.6+0x" + String(frames[5].moduleOffset!, radix: 16)) }
        XCTAssertEqual(frames.last?.function, "_start")
        XCTAssertEqual(symbolizer.problems, [])
    }

    func testCxxNamesAreDemangled() throws {
        let fixture = try StackFixture.run(try StackFixture.build("stack.cpp", into: dir.path, name: "stackxx"))
        let frames = Symbolizer().symbolize(stack: fixture.frames, in: fixture.map)
        XCTAssertEqual(frames.prefix(5).map(\.function), [
            "fixture_print_stack()",
            "wedjat::fixture::(anonymous namespace)::hidden(int)",
            "wedjat::fixture::Worker<std::pair<int, long> >::operator()(std::pair<int, long> const&)",
            "long wedjat::fixture::apply<std::pair<int, long> >(std::pair<int, long> const&)",
            "main",
        ])
        XCTAssertEqual(frames[1].line, try StackFixture.line(calling: "fixture_print_stack", in: "stack.cpp"))
        XCTAssertEqual(frames[2].line, try StackFixture.line(calling: "hidden", in: "stack.cpp"))
        XCTAssertEqual(frames[3].line, try StackFixture.line(calling: "Worker::operator()", in: "stack.cpp"))
        XCTAssertEqual(frames[4].line, try StackFixture.line(calling: "apply", in: "stack.cpp"))
    }

    func testRebuiltBinaryIsReportedNotGuessed() throws {
        let binary = try StackFixture.build("stack.c", into: dir.path, name: "stack")
        let fixture = try StackFixture.run(binary)
        let loaded = try XCTUnwrap(fixture.modules.first { $0.path == binary })
        // The same source built differently: same functions, other addresses and build-id.
        try StackFixture.build("stack.c", into: dir.path, name: "stack", flags: ["-DVARIANT=2", "-O1"])
        let rebuilt = try XCTUnwrap(try StackFixture.run(binary).modules.first { $0.path == binary })
        XCTAssertNotEqual(rebuilt.buildId, loaded.buildId)

        let symbolizer = Symbolizer()
        let frames = symbolizer.symbolize(stack: fixture.frames, in: fixture.map)
        for f in frames.prefix(5) {
            XCTAssertNil(f.function)
            XCTAssertNil(f.line)
            XCTAssertEqual(f.name, "stack+0x" + String(f.address - loaded.base, radix: 16))
        }
        XCTAssertEqual(frames[6].function, "__libc_start_main", "other modules are still symbolized")
        XCTAssertEqual(symbolizer.problems.count, 1, "one problem per module, not per frame")
        let problem = try XCTUnwrap(symbolizer.problems.first)
        XCTAssertEqual(problem.path, binary)
        XCTAssertEqual(problem.reason, "build-id mismatch: \(loaded.buildId) was loaded, the file on disk has "
                       + "\(rebuilt.buildId) (rebuilt or upgraded since the run)")
    }

    func testMissingFileAndUnmappedAddress() throws {
        let binary = try StackFixture.build("stack.c", into: dir.path, name: "stack")
        let fixture = try StackFixture.run(binary)
        try FileManager.default.removeItem(atPath: binary)
        let symbolizer = Symbolizer()
        let frame = symbolizer.symbolize(fixture.frames[1], in: fixture.map)
        XCTAssertNil(frame.function)
        XCTAssertEqual(frame.module?.name, "stack")
        XCTAssertEqual(symbolizer.problems.map(\.reason), ["cannot open: No such file or directory"])

        let outside = symbolizer.symbolize(0x10, in: fixture.map)
        XCTAssertNil(outside.module)
        XCTAssertEqual(outside.name, "0x10")
        XCTAssertEqual(outside.text, "0x10")
    }

    func testNotARegularFile() throws {
        let fixture = try StackFixture.run(try StackFixture.build("stack.c", into: dir.path, name: "stack"))
        try FileManager.default.removeItem(atPath: fixture.binary)
        // A path from a log that is now a FIFO must not hang the report.
        XCTAssertEqual(mkfifo(fixture.binary, 0o600), 0)
        let symbolizer = Symbolizer()
        XCTAssertNil(symbolizer.symbolize(fixture.frames[1], in: fixture.map).function)
        XCTAssertEqual(symbolizer.problems.map(\.reason), ["not a regular file"])
    }

    /// Files that are not (whole) ELF files: each a problem, never a crash or a name.
    func testBrokenFilesAreProblems() throws {
        let binary = try StackFixture.build("stack.c", into: dir.path, name: "stack")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: binary))
        var garbage = Data([0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0])
        var state: UInt32 = 12345   // the same bytes every run
        for _ in 0 ..< 4096 {
            state = state &* 1_103_515_245 &+ 12345
            garbage.append(UInt8(truncatingIfNeeded: state >> 16))
        }
        let files = ["text": Data("not an ELF file\n".utf8), "truncated": bytes.prefix(3000), "garbage": garbage]
        var modules: [ModuleMapping] = []
        for (i, (name, content)) in files.sorted(by: { $0.key < $1.key }).enumerated() {
            let path = dir.path + "/" + name
            try content.write(to: URL(fileURLWithPath: path))
            let base = UInt64(i + 1) << 32
            // The truncated copy keeps its notes: its build-id matches, its symbol table is cut off.
            let id = name == "truncated" ? try XCTUnwrap(SymbolizerTests.buildID(binary)) : "00ff"
            modules.append(ModuleMapping(path: path, base: base, lo: base, hi: base + 0x10000, buildId: id))
        }
        let symbolizer = Symbolizer()
        let frames = symbolizer.symbolize(stack: modules.map { $0.base + 0x1100 }, in: ModuleMap(modules))
        XCTAssertEqual(frames.map(\.function), [nil, nil, nil])
        XCTAssertEqual(frames.map(\.name), ["garbage+0x1100", "text+0x1100", "truncated+0x1100"])
        XCTAssertEqual(symbolizer.problems.map(\.path), modules.map(\.path))
        XCTAssertTrue(symbolizer.problems[0].reason.hasPrefix("not a usable ELF file"), symbolizer.problems[0].reason)
        XCTAssertTrue(symbolizer.problems[1].reason.hasPrefix("not a usable ELF file"), symbolizer.problems[1].reason)
        XCTAssertEqual(symbolizer.problems[2].reason, "no symbol table (stripped, and no debug file found)")
    }

    /// A stripped binary is symbolized from its separate debug file, found by build-id under a
    /// debug directory (`.build-id/xx/rest.debug`); without it, frames stay offsets.
    func testStrippedBinaryWithSeparateDebugFile() throws {
        let binary = try StackFixture.build("stack.c", into: dir.path, name: "stack")
        let debugRoot = dir.path + "/debug"
        let fixture = try StackFixture.run(binary)
        let id = try XCTUnwrap(fixture.modules.first { $0.path == binary }?.buildId)
        let debugFile = debugRoot + "/.build-id/" + id.prefix(2) + "/" + id.dropFirst(2) + ".debug"
        try FileManager.default.createDirectory(atPath: (debugFile as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try StackFixture.run("objcopy", ["--only-keep-debug", binary, debugFile])
        try StackFixture.run("strip", ["--strip-all", binary])
        XCTAssertFalse(try StackFixture.run("readelf", ["-S", binary]).contains(".symtab"))

        let withDebug = Symbolizer(debugDirectories: [debugRoot]).symbolize(stack: fixture.frames, in: fixture.map)
        XCTAssertEqual(withDebug.prefix(5).map(\.function), ["fixture_print_stack", "inner", "middle", "outer", "main"])
        XCTAssertEqual(withDebug[2].line, try StackFixture.line(calling: "inner", in: "stack.c"))

        let without = Symbolizer(debugDirectories: [dir.path + "/nowhere"])
        let frames = without.symbolize(stack: fixture.frames, in: fixture.map)
        XCTAssertEqual(frames[1].name, "stack+0x" + String(frames[1].moduleOffset!, radix: 16))
        XCTAssertEqual(without.problems.map(\.reason), ["no symbol table (stripped, and no debug file found)"])
    }

    /// A return address is looked up one byte back (the call); the instruction a signal
    /// interrupted is looked up as it is: at a function's first byte they differ.
    func testExactAddressesAndReturnAddresses() throws {
        let fixture = try StackFixture.run(try StackFixture.build("stack.c", into: dir.path, name: "stack"))
        let nm = try StackFixture.run("nm", [fixture.binary])
        let line = try XCTUnwrap(nm.split(separator: "\n").first { $0.hasSuffix(" T outer") })
        let module = try XCTUnwrap(fixture.modules.first { $0.path == fixture.binary })
        let entry = module.base + (try XCTUnwrap(UInt64(line.prefix { $0 != " " }, radix: 16)))
        let symbolizer = Symbolizer()
        let exact = symbolizer.symbolize(stack: [entry, entry], in: fixture.map, firstIsExact: true)
        XCTAssertEqual(exact[0].function, "outer")
        XCTAssertEqual(exact[0].functionOffset, 0)
        XCTAssertEqual(exact[0].line, try StackFixture.line(calling: "middle", in: "stack.c") - 1, "the line of its opening brace")
        XCTAssertNotEqual(exact[1].function, "outer", "as a return address it belongs to the code before")
    }

    /// Each file is opened once and each address resolved once, however often it recurs.
    func testCaches() throws {
        let binary = try StackFixture.build("stack.c", into: dir.path, name: "stack")
        let fixture = try StackFixture.run(binary)
        let symbolizer = Symbolizer()
        let first = symbolizer.symbolize(stack: fixture.frames, in: fixture.map)
        // The file is gone, yet the same addresses still resolve: nothing is reopened.
        try FileManager.default.removeItem(atPath: binary)
        XCTAssertEqual(symbolizer.symbolize(stack: fixture.frames, in: fixture.map), first)
        XCTAssertEqual(symbolizer.symbolize(fixture.frames[3] + 1, in: fixture.map).function, "outer",
                       "a new address of an opened file needs no reopening")
        XCTAssertEqual(symbolizer.problems, [])
    }

    /// Swift symbols, from this test process's own stack: the runtime's demangler names them.
    func testSwiftFramesOfThisProcess() throws {
        let frames = Symbolizer().symbolize(stack: Thread.callStackReturnAddresses.map { $0.uint64Value },
                                            in: ModuleMap(try loadedModules()))
        let names = frames.compactMap(\.function)
        XCTAssertTrue(names.contains { $0.contains("SymbolizerTests.testSwiftFramesOfThisProcess()") }, "\(names)")
        XCTAssertFalse(names.contains { $0.hasPrefix("$s") }, "\(names)")
    }

    func testDemangle() {
        XCTAssertEqual(demangle("_ZN6wedjat4mainEv"), "wedjat::main()")
        XCTAssertEqual(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"), "std::vector<int, std::allocator<int> >::push_back(int const&)")
        XCTAssertEqual(demangle("$sSS5countSivg"), "Swift.String.count.getter : Swift.Int")
        XCTAssertEqual(demangle("main"), "main")
        XCTAssertEqual(demangle("_Znot_mangled"), "_Znot_mangled", "a name that does not demangle stays as it is")
    }

    /// This process's objects from /proc/self/maps: a file's mapping at offset 0 is its first
    /// PT_LOAD, at virtual address 0 in PIE executables and shared libraries, so its start is the
    /// load bias.
    private func loadedModules() throws -> [ModuleMapping] {
        var ranges: [String: (base: UInt64?, lo: UInt64, hi: UInt64)] = [:]
        for line in try String(contentsOfFile: "/proc/self/maps", encoding: .utf8).split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 6, f[5].hasPrefix("/") else { continue }
            let bounds = f[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, let offset = UInt64(f[2], radix: 16) else { continue }
            let path = f[5...].joined(separator: " ")
            var r = ranges[path] ?? (nil, bounds[0], bounds[1])
            if offset == 0, r.base == nil { r.base = bounds[0] }
            r.lo = min(r.lo, bounds[0])
            r.hi = max(r.hi, bounds[1])
            ranges[path] = r
        }
        return ranges.compactMap { path, r in
            r.base.map { ModuleMapping(path: path, base: $0, lo: r.lo, hi: r.hi, buildId: SymbolizerTests.buildID(path) ?? "") }
        }
    }

    /// The file's build-id as readelf prints it (the test trusts binutils, not the code under test).
    static func buildID(_ path: String) -> String? {
        guard let notes = try? StackFixture.run("readelf", ["-n", path]),
              let line = notes.split(separator: "\n").first(where: { $0.contains("Build ID:") }) else { return nil }
        return line.split(separator: " ").last.map(String.init)
    }
}
