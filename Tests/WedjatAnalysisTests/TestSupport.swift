import Foundation
import XCTest
@testable import WedjatAnalysis

/// A fresh directory under the system temp dir, removed by the test's teardown.
final class TempDir {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "wedjat-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        let full = path + "/" + name
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The test sources' directory, found from this file so tests work from any working directory.
let testsDir = (#filePath as NSString).deletingLastPathComponent

/// Minimal JSON lines for synthetic logs.
enum Line {
    static func start(pid: Int, ts: Int64, exe: String, ppid: Int? = nil, parentLog: String? = nil,
                      execFrom: String? = nil, ticks: Int64? = nil, schema: Int = 1) -> String {
        var fields = [#""type":"process_start""#, #""schema":\#(schema)"#, #""ts":\#(ts)"#, #""pid":\#(pid)"#,
                      #""exe":"\#(exe)""#]
        fields.append(#""ppid":\#(ppid.map(String.init) ?? "null")"#)
        fields.append(#""parent_log":\#(parentLog.map { "\"\($0)\"" } ?? "null")"#)
        fields.append(#""exec_from":\#(execFrom.map { "\"\($0)\"" } ?? "null")"#)
        if let ticks { fields.append(#""proc_start_ticks":\#(ticks)"#) }
        return "{" + fields.joined(separator: ",") + "}\n"
    }

    static func end(pid: Int, ts: Int64, reason: String = "exit", status: Int? = 0) -> String {
        #"{"type":"process_end","ts":\#(ts),"pid":\#(pid),"reason":"\#(reason)","exit_status":\#(status.map(String.init) ?? "null")}"#
            + "\n"
    }

    static func conn(pid: Int, ts: Int64, peer: String = "10.0.0.1:443", duration: Int64 = 1000,
                     error: String? = nil) -> String {
        #"{"type":"connection","ts":\#(ts),"pid":\#(pid),"role":"client","peer":"\#(peer)","duration_us":\#(duration),"bytes_in":10,"bytes_out":5,"error":\#(error.map { "\"\($0)\"" } ?? "null")}"#
            + "\n"
    }
}
