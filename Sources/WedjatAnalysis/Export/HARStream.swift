#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The HAR export (docs/EXPORTS.md, "HAR"), written while the logs are read. An exchange is
/// rendered as soon as it is known: at once on a reused connection, and for the first exchange
/// of a connection when the connection's record arrives (it is written when the connection
/// ends, after its exchanges), since that exchange carries the connection's set-up. So only the
/// first exchanges of open connections wait.
///
/// HAR entries are sorted by `startedDateTime`. Rendered entries are kept in a buffer of
/// `runLength`; a full buffer is sorted and written to a temporary file as a run, and the end
/// merges the runs: memory holds one buffer and a small read buffer per run, whatever the log.
final class HARStream: ExportConsumer {
    static let defaultRunLength = 4096
    let runLength: Int

    private var text: ExportText
    /// First exchanges waiting for their connection's record, by conn_id (this image's).
    private var waiting: [Int64: HTTPRecord] = [:]
    private var buffer: [Entry] = []
    private var runs: [(offset: Int64, end: Int64, count: Int)] = []
    private var spill: UnsafeMutablePointer<FILE>?
    private var spillPath: String?
    private var spillFailed: String?
    private var seq: Int64 = 0
    private var entries = 0
    private var serverSide = 0
    private var unplaced = 0

    struct Entry {
        var start: Int64
        var seq: Int64
        var bytes: [UInt8]
    }

    init(text: ExportText, runLength: Int = HARStream.defaultRunLength) {
        self.text = text
        self.runLength = max(1, runLength)
    }

    deinit {
        if let spill { fclose(spill) }
        if let spillPath { unlink(spillPath) }
    }

    func add(_ record: Record, context: ExportContext) {
        switch record {
        case .http(let h):
            guard h.role != "server" else { serverSide += 1; return }
            guard h.requestStartTs != nil else { unplaced += 1; return }
            let opens = (h.requestIndex ?? (h.reused == true ? 1 : 0)) == 0
            // A joined hand-off comes after its connection's record: no set-up to wait for.
            if opens, h.continuedBy == nil, let id = h.connId, waiting[id] == nil {
                waiting[id] = h
            } else {
                entry(h, connection: nil, lookup: nil)
            }
        case .connection(let c):
            guard let id = c.connId, let h = waiting.removeValue(forKey: id) else { return }
            entry(h, connection: c, lookup: context.lookups.lookup(of: c, file: context.image))
        default:
            break
        }
    }

    func endImage(_ image: Int, context: ExportContext) {
        // Connections never recorded (a process killed with them open): entries without set-up.
        for h in waiting.values.sorted(by: { $0.ts < $1.ts }) { entry(h, connection: nil, lookup: nil) }
        waiting.removeAll()
    }

    private func entry(_ h: HTTPRecord, connection: ConnectionRecord?, lookup: LookupSpan?) {
        guard let t = ExchangeTimings(h, connection: connection, lookup: lookup) else { unplaced += 1; return }
        // At its depth in the document: log.entries[i].
        var w = JSONBytes(capacity: 2048, indent: 2, level: 3)
        HARExport.writeEntry(h, timings: t, connection: connection, into: &w)
        buffer.append(Entry(start: t.startTs, seq: seq, bytes: w.bytes))
        seq += 1
        entries += 1
        if buffer.count >= runLength { spillBuffer() }
    }

    private static func ordered(_ a: Entry, _ b: Entry) -> Bool { (a.start, a.seq) < (b.start, b.seq) }

    /// The buffer, sorted, as one run at the end of the temporary file.
    private func spillBuffer() {
        guard spillFailed == nil else { return }
        if spill == nil {
            var template = Array((NSTemporaryDirectory() + "wedjat-har-XXXXXX").utf8CString)
            let fd = mkstemp(&template)
            guard fd >= 0, let f = fdopen(fd, "w+") else {
                spillFailed = "cannot create a temporary file: \(String(cString: strerror(errno)))"
                return
            }
            spillPath = String(cString: template)
            unlink(spillPath!)   // gone with the process, whatever happens
            spillPath = nil
            // Written in large blocks (stdio's default is 4 KiB: 78,000 writes for a 200 MB log).
            setvbuf(f, nil, _IOFBF, 1 << 20)
            spill = f
        }
        buffer.sort(by: Self.ordered)
        let offset = Int64(ftello(spill!))
        for e in buffer {
            var head = (e.start, e.seq, Int64(e.bytes.count))
            fwrite(&head, MemoryLayout.size(ofValue: head), 1, spill!)
            e.bytes.withUnsafeBufferPointer { _ = fwrite($0.baseAddress, 1, $0.count, spill!) }
        }
        if ferror(spill!) != 0 { spillFailed = "cannot write the temporary file: \(String(cString: strerror(errno)))" }
        runs.append((offset, Int64(ftello(spill!)), buffer.count))
        buffer.removeAll(keepingCapacity: true)
    }

    /// The read buffers of all runs together hold at most `mergeBuffer` (a long log has many
    /// runs: memory must not grow with it), each between 16 and 256 KiB.
    static let mergeBuffer = 16 << 20
    static func runBufferSize(runs: Int) -> Int { min(256 << 10, max(16 << 10, mergeBuffer / max(1, runs))) }

    /// A run read back in order, a record at a time, through a buffer of its own filled with
    /// `pread` (a seek and a small read per record, through one shared FILE, cost a system call
    /// pair per entry: 200,000 of each on a 200 MB log).
    private final class RunReader {
        let fd: Int32
        /// The file offset of the next byte to read into the buffer, and where the run ends.
        var offset: Int64
        let end: Int64
        var left: Int
        var current: Entry?
        private var buffer: [UInt8]
        private var pos = 0, filled = 0

        init(fd: Int32, offset: Int64, end: Int64, count: Int, bufferSize: Int) {
            self.fd = fd; self.offset = offset; self.end = end; self.left = count
            buffer = [UInt8](repeating: 0, count: Swift.min(bufferSize, Int(Swift.max(1, end - offset))))
            advance()
        }

        /// At least `n` unread bytes in the buffer, or false at the run's end or an error.
        private func ensure(_ n: Int) -> Bool {
            if filled - pos >= n { return true }
            if pos > 0 {
                buffer.withUnsafeMutableBytes { b in
                    _ = memmove(b.baseAddress!, b.baseAddress! + pos, filled - pos)
                }
                filled -= pos
                pos = 0
            }
            if buffer.count < n { buffer += [UInt8](repeating: 0, count: n - buffer.count) }
            while filled < n {
                let want = Swift.min(buffer.count - filled, Int(end - offset))
                guard want > 0 else { return false }
                let got = buffer.withUnsafeMutableBytes { b in pread(fd, b.baseAddress! + filled, want, off_t(offset)) }
                guard got > 0 else { return false }
                filled += got
                offset += Int64(got)
            }
            return true
        }

        func advance() {
            guard left > 0 else { current = nil; return }
            let headSize = 3 * MemoryLayout<Int64>.size
            guard ensure(headSize) else { current = nil; left = 0; return }
            var head: (Int64, Int64, Int64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &head) { h in
                buffer.withUnsafeBytes { b in h.copyMemory(from: UnsafeRawBufferPointer(rebasing: b[pos ..< pos + headSize])) }
            }
            pos += headSize
            let size = Int(head.2)
            guard size >= 0, ensure(size) else { current = nil; left = 0; return }
            let bytes = Array(buffer[pos ..< pos + size])
            pos += size
            left -= 1
            current = Entry(start: head.0, seq: head.1, bytes: bytes)
        }
    }

    func finish(context: ExportContext) -> ExportDocument {
        var notes: [String] = []
        if serverSide > 0 {
            notes.append("\(serverSide) server-side exchange\(serverSide == 1 ? "" : "s") left out of the HAR (a client's view; they are in the trace and OTLP exports)")
        }
        if unplaced > 0 {
            notes.append("\(unplaced) exchange\(unplaced == 1 ? "" : "s") without a request start left out of the HAR")
        }
        if let why = spillFailed { notes.append("entries past the first \(runLength) could not be sorted: \(why)") }
        if entries > 0, let undecoded = context.undecodedNote(in: "HAR") { notes.append(undecoded) }
        // Said in the file too (HAR's `log.comment`), for whoever opens it in a viewer.
        var comment = notes
        if context.summarizedClientExchanges > 0 {
            let n = context.summarizedClientExchanges
            comment.append("\(n) client exchange\(n == 1 ? " was" : "s were") only counted in http_summary records (past WEDJAT_HTTP_RECORDS a second) and \(n == 1 ? "has" : "have") no entry")
        }
        if entries == 0 { comment.append("No entry: " + context.whyEmpty("har")) }
        let version = context.images.lazy.compactMap { $0.start?.wedjatVersion }.first ?? ""
        let log = { (entries: ExportJSON) -> ExportJSON in
            var log = JSONObject()
            log.add("version", .string("1.2"))
            log.add("creator", .object([("name", .string("wedjat")), ("version", .string(version))]))
            log.add("entries", entries)
            if !comment.isEmpty { log.add("comment", .string(comment.joined(separator: "; ") + ".")) }
            return .object([("log", log.json)])
        }
        if entries == 0 {
            text.append(log(.array([])).rendered(indent: 2))
        } else {
            let frame = ExportText.frame(log, indent: 2)
            text.append(frame.open)
            var written = 0
            func write(_ e: Entry) {
                if written > 0 { text.append(frame.separator) }
                text.append(bytes: e.bytes)
                written += 1
            }
            if runs.isEmpty {
                buffer.sort(by: Self.ordered)
                for e in buffer { write(e) }
            } else if spillFailed != nil {
                // Sorted within each run only (the note says why).
                fflush(spill!)
                for r in runs {
                    let reader = RunReader(fd: fileno(spill!), offset: r.offset, end: r.end, count: r.count, bufferSize: 64 << 10)
                    while let e = reader.current { write(e); reader.advance() }
                }
                buffer.sort(by: Self.ordered)
                for e in buffer { write(e) }
            } else {
                // The buffer is the last run; then a k-way merge over a heap of the runs' heads.
                spillBuffer()
                fflush(spill!)
                let readers = runs.map { RunReader(fd: fileno(spill!), offset: $0.offset, end: $0.end, count: $0.count,
                                                   bufferSize: Self.runBufferSize(runs: runs.count)) }
                var heap = readers.indices.filter { readers[$0].current != nil }
                func less(_ a: Int, _ b: Int) -> Bool { Self.ordered(readers[a].current!, readers[b].current!) }
                func down(_ i: Int) {
                    var i = i
                    while true {
                        let l = 2 * i + 1, r = l + 1
                        var m = i
                        if l < heap.count, less(heap[l], heap[m]) { m = l }
                        if r < heap.count, less(heap[r], heap[m]) { m = r }
                        if m == i { return }
                        heap.swapAt(i, m)
                        i = m
                    }
                }
                for i in stride(from: heap.count / 2, through: 0, by: -1) { down(i) }
                while let top = heap.first {
                    write(readers[top].current!)
                    readers[top].advance()
                    if readers[top].current == nil { heap[0] = heap[heap.count - 1]; heap.removeLast() }
                    if !heap.isEmpty { down(0) }
                }
            }
            text.append(frame.close)
        }
        text.append("\n")
        return ExportDocument(body: text, count: entries, notes: notes)
    }
}
