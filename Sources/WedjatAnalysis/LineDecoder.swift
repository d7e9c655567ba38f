/// Decodes log lines one at a time with one reused parse buffer: for readers that follow
/// growing logs line by line (WedjatLive) rather than reading whole files (LogReader).
package final class LineDecoder {
    private let document = JSONDocument()

    package init() {}

    /// One line without its newline.
    package func decode(_ line: UnsafeRawBufferPointer) throws(LineDecodeError) -> Record {
        try Record.decode(line, into: document)
    }

    /// What `wedjat top` needs of an `http` record, read without building the record (the
    /// line is still validated as JSON): the busiest line type, a few fields of it.
    package struct HTTPEssentials {
        package var role: String
        package var host: String?
        package var peer: String?
        package var status: Int?
        package var error: String?
        package var durationUs: Int64?

        package init(role: String, host: String?, peer: String?, status: Int?, error: String?, durationUs: Int64?) {
            self.role = role; self.host = host; self.peer = peer; self.status = status; self.error = error
            self.durationUs = durationUs
        }
    }

    private static let httpPrefix = Array(#"{"type":"http","#.utf8)

    /// nil when the line is not an `http` record as wedjat writes them (`type` first), or not
    /// valid: decode it in full then.
    package func httpEssentials(_ line: UnsafeRawBufferPointer) -> HTTPEssentials? {
        guard line.count > Self.httpPrefix.count,
              Self.httpPrefix.withUnsafeBytes({ line.starts(with: $0) }),
              document.parse(line), document.rootIsObject,
              let role = document.find("role", in: 0).flatMap(document.string) else { return nil }
        func string(_ key: String) -> String? { document.find(key, in: 0).flatMap(document.string) }
        func int(_ key: String) -> Int64? { document.find(key, in: 0).flatMap(document.int64) }
        return HTTPEssentials(role: role, host: string("host"), peer: string("peer"), status: int("status").map { Int($0) },
                              error: string("error"), durationUs: int("duration_us"))
    }
}
