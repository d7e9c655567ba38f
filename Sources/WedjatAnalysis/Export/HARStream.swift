#if canImport(Glibc)
import Glibc
#endif
import Dispatch
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
///
/// Entries are rendered on other threads, a batch at a time, while this one goes on reading
/// (the reader's own threads decode the lines ahead of it): a batch's entries are numbered here,
/// in the order they are known, so the document is the same as rendering them one by one. At the
/// end the merge's output goes to the sink from another thread, a chunk at a time.
final class HARStream: ExportConsumer {
    static let defaultRunLength = 4096
    let runLength: Int
    /// Entries a rendering job takes, and the jobs rendered or rendering at once (memory: about
    /// `batchSize × maxBatches` entries besides the sort buffer).
    static let batchSize = 128
    static let maxBatches = 8

    private var text: ExportText
    /// First exchanges waiting for their connection's record, by conn_id (this image's). Kept
    /// and handed on as `Record`s: one reference each, where an `HTTPRecord` copied is a
    /// retain of each of its strings here and a release of each on the rendering thread.
    private var waiting: [Int64: Record] = [:]
    private var buffer: [Entry] = []
    private var runs: [(offset: Int64, end: Int64, count: Int)] = []
    private var spill: UnsafeMutablePointer<FILE>?
    static let spillBlockSize = 64 << 10
    /// The spill's stdio buffer (it must outlive the FILE).
    private var spillBlock: UnsafeMutablePointer<CChar>?
    private var spillPath: String?
    private var spillFailed: String?
    private var seq: Int64 = 0
    private var entries = 0
    private var serverSide = 0
    private var unplaced = 0

    struct Entry {
        var start: Int64
        var seq: Int64
        /// Part of its batch's rendered bytes (kept alive by the entries that point into it).
        var bytes: ArraySlice<UInt8>
    }

    /// Exchanges to render on another thread, numbered from `firstSeq`.
    private final class Batch: @unchecked Sendable {
        /// `.http` records, with their connection's `.connection` record when it is known.
        var items: [(r: Record, t: ExchangeTimings, c: Record?)] = []
        let firstSeq: Int64
        /// Their sort keys (HAR's `startedDateTime`), kept by the reading thread.
        var starts: [Int64] = []
        /// The entries, one after another, and where each ends (filled by the rendering thread).
        var bytes: [UInt8] = []
        var ends: [Int] = []
        let done = DispatchSemaphore(value: 0)
        init(firstSeq: Int64) {
            self.firstSeq = firstSeq
            items.reserveCapacity(HARStream.batchSize)
            starts.reserveCapacity(HARStream.batchSize)
        }

        func render() {
            // At its depth in the document: log.entries[i].
            let w = HARWriter(capacity: items.count * 2048)
            var times = ISO8601Cache()
            ends.reserveCapacity(items.count)
            for item in items {
                guard case .http(let h) = item.r else { continue }   // only .http is added
                if case .connection(let c)? = item.c {
                    HARExport.writeEntry(h, timings: item.t, connection: c, into: w, times: &times)
                } else {
                    HARExport.writeEntry(h, timings: item.t, connection: nil, into: w, times: &times)
                }
                ends.append(w.count)
            }
            items = []
            bytes = w.take()
        }
    }

    private var batch: Batch?
    /// Submitted, in order, not yet taken into the sort buffer.
    private var rendering: [Batch] = []

    init(text: ExportText, runLength: Int = HARStream.defaultRunLength) {
        self.text = text
        self.runLength = max(1, runLength)
    }

    deinit {
        if let spill { fclose(spill) }
        spillBlock?.deallocate()
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
                waiting[id] = record
            } else {
                entry(record, h, connection: nil, nil, lookup: nil)
            }
        case .connection(let c):
            guard let id = c.connId, let r = waiting.removeValue(forKey: id), case .http(let h) = r else { return }
            entry(r, h, connection: record, c, lookup: context.lookups.lookup(of: c, file: context.image))
        default:
            break
        }
    }

    func endImage(_ image: Int, context: ExportContext) {
        // Connections never recorded (a process killed with them open): entries without set-up.
        // By time, then conn_id: the dictionary's order (random from one run to the next) never shows.
        let open = waiting.values.compactMap { r -> (Record, HTTPRecord)? in
            guard case .http(let h) = r else { return nil }
            return (r, h)
        }
        for (r, h) in open.sorted(by: { ($0.1.ts, $0.1.connId ?? 0) < ($1.1.ts, $1.1.connId ?? 0) }) {
            entry(r, h, connection: nil, nil, lookup: nil)
        }
        waiting.removeAll()
    }

    /// `record` is `.http(h)`; `connectionRecord` is `.connection(connection)` or nil.
    private func entry(_ record: Record, _ h: HTTPRecord, connection connectionRecord: Record?, _ connection: ConnectionRecord?,
                       lookup: LookupSpan?) {
        guard let t = ExchangeTimings(h, connection: connection, lookup: lookup) else { unplaced += 1; return }
        if batch == nil { batch = Batch(firstSeq: seq) }
        batch!.items.append((record, t, connectionRecord))
        batch!.starts.append(t.startTs)
        seq += 1
        entries += 1
        if batch!.items.count >= Self.batchSize { submit() }
    }

    /// The current batch goes to a rendering thread; the oldest ones are taken in when too many wait.
    private func submit() {
        guard let b = batch else { return }
        batch = nil
        rendering.append(b)
        DispatchQueue.global(qos: .userInitiated).async {
            b.render()
            b.done.signal()
        }
        while rendering.count >= Self.maxBatches { takeOldest() }
    }

    /// The oldest batch's entries, in their order, into the sort buffer.
    private func takeOldest() {
        let b = rendering.removeFirst()
        b.done.wait()
        var from = 0
        for (i, end) in b.ends.enumerated() {
            buffer.append(Entry(start: b.starts[i], seq: b.firstSeq + Int64(i), bytes: b.bytes[from ..< end]))
            from = end
            if buffer.count >= runLength { spillBuffer() }
        }
    }

    /// Every exchange known so far rendered and in the sort buffer (or spilled).
    private func drainRendering() {
        submit()
        while !rendering.isEmpty { takeOldest() }
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
            // Written 64 KiB at a time (stdio's 4 KiB: 78,000 writes for a 200 MB log; 1 MiB blocks
            // cost more system time than 64 KiB ones here, 0.5-1.0 s against 0.35-0.4 s, a copy
            // source that no longer fits the cache). The buffer must be given: with none, glibc
            // keeps its own 4 KiB whatever the size asked.
            spillBlock = .allocate(capacity: Self.spillBlockSize)
            setvbuf(f, spillBlock, _IOFBF, Self.spillBlockSize)
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
    /// pair per entry: 200,000 of each on a 200 MB log). The current entry is read in place.
    private final class RunReader {
        let fd: Int32
        /// The file offset of the next byte to read into the buffer, and where the run ends.
        var offset: Int64
        let end: Int64
        var left: Int
        /// The current entry: its key, and where its bytes are in the buffer; `has` false at the end.
        var has = false
        var start: Int64 = 0, seq: Int64 = 0
        private var at = 0, size = 0
        private var buffer: UnsafeMutableRawBufferPointer
        private var pos = 0, filled = 0

        /// The run's pages up to here are given back (Punch); from the first whole page of the run.
        private var freedTo: Int64

        init(fd: Int32, offset: Int64, end: Int64, count: Int, bufferSize: Int) {
            self.fd = fd; self.offset = offset; self.end = end; self.left = count
            freedTo = Punch.pageUp(offset)
            buffer = .allocate(byteCount: Swift.max(1, Swift.min(bufferSize, Int(Swift.max(1, end - offset)))), alignment: 8)
            advance()
        }

        deinit { buffer.deallocate() }

        /// At least `n` unread bytes in the buffer, or false at the run's end or an error.
        private func ensure(_ n: Int) -> Bool {
            if filled - pos >= n { return true }
            if pos > 0 {
                _ = memmove(buffer.baseAddress!, buffer.baseAddress! + pos, filled - pos)
                filled -= pos
                pos = 0
            }
            if buffer.count < n {
                let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: n, alignment: 8)
                bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0 ..< filled]))
                buffer.deallocate()
                buffer = bigger
            }
            while filled < n {
                let want = Swift.min(buffer.count - filled, Int(end - offset))
                guard want > 0 else { return false }
                let got = pread(fd, buffer.baseAddress! + filled, want, off_t(offset))
                guard got > 0 else { return false }
                filled += got
                offset += Int64(got)
                // What was read is in the buffer: its whole pages leave the page cache, so the
                // document written meanwhile reuses them (the pages at the run's two ends may
                // hold a neighbouring run's bytes: kept).
                let to = Punch.pageDown(offset)
                if to - freedTo >= 64 << 10 || (offset == end && to > freedTo) {
                    Punch.hole(fd, from: freedTo, to: to)
                    freedTo = to
                }
            }
            return true
        }

        func advance() {
            pos = at + size
            at = pos; size = 0
            guard left > 0 else { has = false; return }
            let headSize = 3 * MemoryLayout<Int64>.size
            guard ensure(headSize) else { has = false; left = 0; return }
            var head: (Int64, Int64, Int64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &head) { h in
                h.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[pos ..< pos + headSize]))
            }
            pos += headSize
            let n = Int(head.2)
            guard n >= 0, ensure(n) else { has = false; left = 0; return }
            at = pos; size = n
            left -= 1
            start = head.0; seq = head.1; has = true
        }

        /// The current entry's bytes, valid until `advance`.
        var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[at ..< at + size]) }
    }

    /// Gives a file's pages back (`fallocate(FALLOC_FL_PUNCH_HOLE)`): the merge frees the spill
    /// as it reads it. A virtual machine's fresh pages cost a fault on the host at their first
    /// touch (about 1 s for 300 MB here, as much as the rest of writing the document): writing
    /// the document into the pages the spill just left avoids it. Found with dlsym (Swift's Glibc
    /// does not declare it); where it is missing or fails, nothing is freed early.
    enum Punch {
        typealias Fallocate = @convention(c) (Int32, Int32, Int, Int) -> Int32
        static var call: Fallocate? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate")
            .map { unsafeBitCast($0, to: Fallocate.self) }
        static let page: Int64 = 4096
        static func pageUp(_ x: Int64) -> Int64 { (x + page - 1) / page * page }
        static func pageDown(_ x: Int64) -> Int64 { x / page * page }

        static func hole(_ fd: Int32, from: Int64, to: Int64) {
            guard to > from, let f = call else { return }
            // FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
            if f(fd, 0x02 | 0x01, Int(from), Int(to - from)) != 0 { call = nil }
        }
    }

    /// The merged document goes to the sink from another thread, in chunks of this size, with at
    /// most `maxPendingChunks` waiting.
    static let outputChunk = 1 << 20
    static let maxPendingChunks = 3

    /// Writes `ExportText` chunks on its own thread (the merge goes on meanwhile).
    private final class ChunkWriter: @unchecked Sendable {
        private let queue = DispatchQueue(label: "wedjat.har.output")
        private let slots = DispatchSemaphore(value: HARStream.maxPendingChunks)
        private var text: ExportText
        init(_ text: ExportText) { self.text = text }

        func write(_ chunk: [UInt8]) {
            slots.wait()
            queue.async {
                self.text.append(chunk: chunk)
                self.slots.signal()
            }
        }

        /// Everything written; the text back.
        func finish() -> ExportText { queue.sync { text } }
    }

    func finish(context: ExportContext) -> ExportDocument {
        // Every entry rendered first (a spill can fail on the last ones).
        drainRendering()
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
            let separator = Array(frame.separator.utf8)
            text.append(frame.open)
            let writer = ChunkWriter(text)
            var out: [UInt8] = []
            out.reserveCapacity(Self.outputChunk + (64 << 10))
            var written = 0
            func write(_ bytes: UnsafeRawBufferPointer) {
                if written > 0 { out.append(contentsOf: separator) }
                out.append(contentsOf: bytes)
                written += 1
                if out.count >= Self.outputChunk {
                    writer.write(out)
                    out = []
                    out.reserveCapacity(Self.outputChunk + (64 << 10))
                }
            }
            func write(_ e: Entry) { e.bytes.withUnsafeBytes { write($0) } }
            if runs.isEmpty {
                buffer.sort(by: Self.ordered)
                for e in buffer { write(e) }
            } else if spillFailed != nil {
                // Sorted within each run only (the note says why).
                fflush(spill!)
                for r in runs {
                    let reader = RunReader(fd: fileno(spill!), offset: r.offset, end: r.end, count: r.count, bufferSize: 64 << 10)
                    while reader.has { write(reader.bytes); reader.advance() }
                }
                buffer.sort(by: Self.ordered)
                for e in buffer { write(e) }
            } else {
                // The buffer is the last run; then a k-way merge over a heap of the runs' heads.
                spillBuffer()
                fflush(spill!)
                let readers = runs.map { RunReader(fd: fileno(spill!), offset: $0.offset, end: $0.end, count: $0.count,
                                                   bufferSize: Self.runBufferSize(runs: runs.count)) }
                var heap = readers.indices.filter { readers[$0].has }
                func less(_ a: Int, _ b: Int) -> Bool {
                    let x = readers[a], y = readers[b]
                    return (x.start, x.seq) < (y.start, y.seq)
                }
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
                    write(readers[top].bytes)
                    readers[top].advance()
                    if !readers[top].has { heap[0] = heap[heap.count - 1]; heap.removeLast() }
                    if !heap.isEmpty { down(0) }
                }
            }
            if !out.isEmpty { writer.write(out) }
            text = writer.finish()
            text.append(frame.close)
        }
        text.append("\n")
        return ExportDocument(body: text, count: entries, notes: notes)
    }
}
