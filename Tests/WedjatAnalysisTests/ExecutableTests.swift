import XCTest
@testable import WedjatAnalysis

final class ExecutableTests: XCTestCase {
    var dir: TempDir!

    override func setUpWithError() throws { dir = try TempDir() }
    override func tearDown() { dir.remove() }

    /// A minimal little-endian ELF64 executable header with the given program header types.
    private func elf(_ types: [UInt32]) -> Data {
        var b = [UInt8](repeating: 0, count: 64 + 56 * types.count)
        b[0 ..< 4] = [0x7F, 0x45, 0x4C, 0x46]
        b[4] = 2; b[5] = 1; b[6] = 1          // ELFCLASS64, little endian, version
        b[16] = 2                              // ET_EXEC
        b[32] = 64                             // e_phoff
        b[54] = 56                             // e_phentsize
        b[56] = UInt8(types.count)             // e_phnum
        for (i, t) in types.enumerated() {
            withUnsafeBytes(of: t.littleEndian) { b.replaceSubrange(64 + i * 56 ..< 64 + i * 56 + 4, with: $0) }
        }
        return Data(b)
    }

    func testStaticAndDynamicELF() throws {
        let s = dir.path + "/static", d = dir.path + "/dynamic"
        try elf([6, 1, 1]).write(to: URL(fileURLWithPath: s))        // PHDR, LOAD, LOAD
        try elf([6, 3, 1]).write(to: URL(fileURLWithPath: d))        // PHDR, INTERP, LOAD
        XCTAssertEqual(Executable.linkage(ofFile: s), .staticELF)
        XCTAssertEqual(Executable.linkage(ofFile: d), .dynamic)
    }

    func testScriptsAndMissingFilesAreNotELF() throws {
        let script = try dir.write("run.sh", "#!/bin/sh\necho hi\n")
        XCTAssertEqual(Executable.linkage(ofFile: script), .notELF)
        XCTAssertEqual(Executable.linkage(ofFile: dir.path + "/missing"), .notELF)
    }

    func testRealShellIsDynamic() throws {
        let sh = try XCTUnwrap(Executable.resolve("sh", searchPath: "/usr/bin:/bin"))
        XCTAssertEqual(Executable.linkage(ofFile: sh), .dynamic)
    }

    func testResolveFollowsPathOrder() throws {
        let tool = try dir.write("b/tool", "#!/bin/sh\n")
        chmod(tool, 0o755)
        try dir.write("a/tool", "not executable\n")
        XCTAssertEqual(Executable.resolve("tool", searchPath: "\(dir.path)/a:\(dir.path)/b"), tool)
        XCTAssertNil(Executable.resolve("tool", searchPath: "\(dir.path)/a"))
        XCTAssertEqual(Executable.resolve("./x", searchPath: nil), "./x")
    }
}
