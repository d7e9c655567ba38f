import XCTest
import CWedjatCommon

final class LogFileTests: XCTestCase {
    var dir = ""

    override func setUp() {
        dir = NSTemporaryDirectory() + "wedjat-logfile-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func makeLog(_ name: String = "p.1.2.ndjson", maxBytes: UInt64 = 1 << 20) -> UnsafeMutablePointer<wj_logfile> {
        let lf = UnsafeMutablePointer<wj_logfile>.allocate(capacity: 1)
        memset(lf, 0, MemoryLayout<wj_logfile>.stride)
        wj_logfile_init(lf, dir + "/sub/" + name, maxBytes)
        return lf
    }

    @discardableResult
    private func write(_ lf: UnsafeMutablePointer<wj_logfile>, _ s: String) -> Bool {
        var bytes = Array(s.utf8)
        return wj_logfile_write(lf, &bytes, bytes.count) != 0
    }

    private func path(_ lf: UnsafeMutablePointer<wj_logfile>) -> String {
        withUnsafeBytes(of: &lf.pointee.path) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    func testCreatesLazilyWithPrivateModes() throws {
        let lf = makeLog()
        defer { wj_logfile_close(lf); lf.deallocate() }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path(lf)), "nothing before the first record")
        XCTAssertTrue(write(lf, "{\"a\":1}\n"))
        let fileAttrs = try FileManager.default.attributesOfItem(atPath: path(lf))
        XCTAssertEqual((fileAttrs[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let dirAttrs = try FileManager.default.attributesOfItem(atPath: dir + "/sub")
        XCTAssertEqual((dirAttrs[.posixPermissions] as? NSNumber)?.intValue, 0o700)
        XCTAssertEqual(try String(contentsOfFile: path(lf), encoding: .utf8), "{\"a\":1}\n")
        // Close-on-exec. (It is not moved to a high number: in a watched process the log fd lives
        // in wedjat's own thread's fd table, never in the app's.)
        let fd = wj_logfile_fd(lf)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC)
    }

    func testRefusesSymlinkAtLogPath() throws {
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        let target = dir + "/target"
        FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
        let lf = makeLog()
        defer { wj_logfile_close(lf); lf.deallocate() }
        try FileManager.default.createSymbolicLink(atPath: path(lf), withDestinationPath: target)
        XCTAssertFalse(write(lf, "x\n"))
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "keep")
        XCTAssertEqual(lf.pointee.dropped_writes, 1)
    }

    // In a watched process the log fd lives in wedjat's own fd table, out of the app's reach;
    // the identity check before each write is the backstop should anything replace it.
    func testAppClosingOrReplacingTheFdNeverReceivesLogBytes() throws {
        let lf = makeLog()
        defer { wj_logfile_close(lf); lf.deallocate() }
        XCTAssertTrue(write(lf, "one\n"))
        let fd = wj_logfile_fd(lf)
        // The app dup2s its own file onto wedjat's number (a hook would have released it; here
        // nothing did, as with a raw syscall): the identity check must notice.
        let appFile = dir + "/app.txt"
        let appFd = open(appFile, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(appFd, 0)
        XCTAssertEqual(dup2(appFd, fd), fd)
        XCTAssertTrue(write(lf, "two\n"))
        close(appFd)
        XCTAssertEqual(try String(contentsOfFile: appFile, encoding: .utf8), "", "no wedjat byte in the app's file")
        XCTAssertEqual(try String(contentsOfFile: path(lf), encoding: .utf8), "one\ntwo\n")
        XCTAssertEqual(lf.pointee.reopen_count, 1)
        close(fd)  // the app's copy
    }

    func testMovedFileIsRecreated() throws {
        let lf = makeLog()
        defer { wj_logfile_close(lf); lf.deallocate() }
        XCTAssertTrue(write(lf, "one\n"))
        try FileManager.default.moveItem(atPath: path(lf), toPath: dir + "/moved")
        XCTAssertTrue(write(lf, "two\n"))
        XCTAssertEqual(try String(contentsOfFile: dir + "/moved", encoding: .utf8), "one\n")
        XCTAssertEqual(try String(contentsOfFile: path(lf), encoding: .utf8), "two\n")
    }

    func testSizeLimitDropsWholeBatches() throws {
        let lf = makeLog(maxBytes: 10)
        defer { wj_logfile_close(lf); lf.deallocate() }
        XCTAssertTrue(write(lf, "12345678\n"))
        XCTAssertFalse(write(lf, "abc\n"))
        XCTAssertEqual(lf.pointee.dropped_writes, 1)
        XCTAssertEqual(lf.pointee.dropped_bytes, 4)
        XCTAssertEqual(try String(contentsOfFile: path(lf), encoding: .utf8), "12345678\n")
    }

    func testUnwritableDirectoryFailsOnceAndCounts() {
        let lf = UnsafeMutablePointer<wj_logfile>.allocate(capacity: 1)
        defer { lf.deallocate() }
        memset(lf, 0, MemoryLayout<wj_logfile>.stride)
        wj_logfile_init(lf, "/proc/wedjat-cannot/x.ndjson", 1 << 20)
        XCTAssertFalse(write(lf, "a\n"))
        XCTAssertFalse(write(lf, "b\n"))
        XCTAssertEqual(lf.pointee.failed, 1)
        XCTAssertEqual(lf.pointee.dropped_writes, 2)
        let why = withUnsafeBytes(of: &lf.pointee.error) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        XCTAssertTrue(why.hasPrefix("cannot create /proc/wedjat-cannot"), why)
    }
}
