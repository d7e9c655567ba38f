import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// A big log is read on several cores. The file is cut into blocks of `parallelBlockBytes` at
// fixed offsets; a line belongs to the block its first byte is in. Each block is read
// (`pread`), cut into lines and decoded into records by a thread of its own, which reads past
// its block's end for the rest of its last line and skips the start of its first bytes up to
// the first line that begins in it. The calling thread takes the blocks back in file order and
// applies each line (warnings, process_start rules, `onRecord`) exactly as the one-thread path
// does, so the records, their line numbers and the warnings are the same. The bytes are
// copied from the kernel by the thread that parses them (in its core's cache) and not by the
// applying thread, which the others wait for. Memory: `threads × 3` blocks in flight.

extension LogReader {

    /// Bytes read from the file, reused from block to block (no fresh pages per block).
    private final class Buffer: @unchecked Sendable {
        private(set) var base: UnsafeMutableRawPointer
        private(set) var capacity: Int
        init(capacity: Int) {
            self.capacity = Swift.max(1, capacity)
            base = .allocate(byteCount: self.capacity, alignment: 16)
        }
        /// Room for `count` bytes, keeping the first `keep`.
        func reserve(_ count: Int, keeping keep: Int) {
            guard count > capacity else { return }
            let bigger = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
            if keep > 0 { bigger.copyMemory(from: base, byteCount: keep) }
            base.deallocate()
            base = bigger
            capacity = count
        }
        deinit { base.deallocate() }
    }

    /// A block's decoded lines, in order, applied by the applying thread and released on a
    /// decoding one.
    private typealias Results = GrowingBuffer<LineResult>

    /// One block's outcome, filled by a decoding thread.
    private final class Job: @unchecked Sendable {
        /// The block's first byte in the file.
        let start: Int
        var results: Results?
        /// How many of the block's bytes the file has (for progress and the empty-file warning).
        var bytes = 0
        /// The file ends within this block (or at its end): no block after it has lines.
        var atEnd = false
        /// The last line has no newline (the file ends in it).
        var lastLineOpen = false
        /// A read failed: the block's lines are not applied, nor any after it.
        var readError: String?
        let done = DispatchSemaphore(value: 0)
        init(start: Int) { self.start = start }
        deinit { results?.release() }
    }

    /// A block's decoded lines, once applied, for another thread to release.
    private final class Released: @unchecked Sendable {
        private let results: Results
        init(_ results: Results) { self.results = results }
        func release() { results.release() }
    }

    /// Parse buffers and read buffers, one per decoding thread at a time.
    private final class Pool: @unchecked Sendable {
        private var documents: [JSONDocument] = []
        private var buffers: [Buffer] = []
        private let lock = NSLock()
        let keepStringMaps: Bool
        init(keepStringMaps: Bool) { self.keepStringMaps = keepStringMaps }
        func takeDocument() -> JSONDocument {
            lock.lock(); defer { lock.unlock() }
            if let d = documents.popLast() { return d }
            let d = JSONDocument()
            d.keepStringMaps = keepStringMaps
            return d
        }
        func give(_ d: JSONDocument) { lock.lock(); documents.append(d); lock.unlock() }
        func takeBuffer(capacity: Int) -> Buffer {
            lock.lock(); defer { lock.unlock() }
            return buffers.popLast() ?? Buffer(capacity: capacity)
        }
        func give(_ b: Buffer) { lock.lock(); buffers.append(b); lock.unlock() }
    }

    /// `pread` until `count` bytes or the end of the file; the bytes read, or the error.
    private static func readFully(_ fd: Int32, _ into: UnsafeMutableRawPointer, _ count: Int, at offset: Int) -> Result<Int, ReadError> {
        var n = 0
        while n < count {
            let got = pread(fd, into + n, count - n, off_t(offset + n))
            if got < 0 {
                if errno == EINTR { continue }
                return .failure(ReadError(message: String(cString: strerror(errno))))
            }
            if got == 0 { break }
            n += got
        }
        return .success(n)
    }

    private struct ReadError: Error { let message: String }

    /// What bytes past a block's end are read with it, for the rest of its last line.
    private static let lookAhead = 16 * 1024

    /// Reads, cuts and decodes the lines that begin in `job`'s block.
    private static func decodeBlock(_ job: Job, fd: Int32, blockBytes: Int, maxLine: Int, pool: Pool, expectedLines: Int) {
        defer { job.done.signal() }
        let buffer = pool.takeBuffer(capacity: blockBytes + 1 + lookAhead)
        defer { pool.give(buffer) }
        var out = Results(capacity: Swift.max(16, expectedLines))
        defer { job.results = out }
        // The window: the file's bytes [from, from + have) are at buffer.base.
        // From the byte before the block, to tell whether a line begins at its first byte.
        var from = Swift.max(0, job.start - 1)
        var have = 0
        var eof = false
        func read(upTo count: Int) -> Bool {
            buffer.reserve(count, keeping: have)
            switch readFully(fd, buffer.base + have, count - have, at: from + have) {
            case .failure(let e):
                job.readError = e.message
                return false
            case .success(let n):
                if n < count - have { eof = true }
                have += n
                return true
            }
        }
        guard read(upTo: blockBytes + 1 + lookAhead) else { return }
        let blockEnd = job.start + blockBytes   // in the file
        job.bytes = Swift.max(0, Swift.min(blockBytes, from + have - job.start))
        job.atEnd = eof && from + have <= blockEnd
        var bytes = UnsafeRawPointer(buffer.base)
        func newline(after offset: Int) -> Int? {
            let i = offset - from
            guard i < have, let p = memchr(bytes + i, 0x0A, have - i) else { return nil }
            return from + bytes.distance(to: UnsafeRawPointer(p))
        }
        // Where the first line of the block begins.
        var line = job.start
        if job.start > 0 {
            var scanFrom = from
            while true {
                if let nl = newline(after: scanFrom) {
                    line = nl + 1
                    break
                }
                // No newline yet: the line that began before this block goes on past what was
                // read. Only its end matters here.
                if eof || from + have >= blockEnd { return }
                scanFrom = from + have
                from = scanFrom; have = 0
                guard read(upTo: blockBytes + 1 + lookAhead) else { return }
                bytes = UnsafeRawPointer(buffer.base)
            }
        }
        let document = pool.takeDocument()
        defer { pool.give(document) }
        while line < blockEnd {
            if let nl = newline(after: line) {
                out.append(LogReader.decodeLine(UnsafeRawBufferPointer(start: bytes + (line - from), count: nl - line),
                                                document: document, maxLineBytes: maxLine))
                line = nl + 1
                continue
            }
            if eof {
                // The file ends in this line: no newline (a write cut short).
                if line < from + have {
                    out.append(LogReader.decodeLine(UnsafeRawBufferPointer(start: bytes + (line - from), count: from + have - line),
                                                    document: document, maxLineBytes: maxLine))
                    job.lastLineOpen = true
                }
                return
            }
            if from + have - line > maxLine {
                // Too long whatever follows: skipped; the next line begins after its newline,
                // which may be far on.
                out.append(.tooLong)
                var scanFrom = from + have
                while true {
                    from = scanFrom; have = 0
                    guard read(upTo: lookAhead) else { return }
                    bytes = UnsafeRawPointer(buffer.base)
                    if let nl = newline(after: from) { line = nl + 1; break }
                    if eof { return }
                    scanFrom = from + have
                }
                if line >= blockEnd { return }
                // Back to whole lines from there.
                from = line; have = 0
                guard read(upTo: blockEnd - line + lookAhead) else { return }
                bytes = UnsafeRawPointer(buffer.base)
                continue
            }
            // The line goes on past what was read: the window moves to it and reads on.
            if line > from {
                let keep = from + have - line
                buffer.base.copyMemory(from: buffer.base + (line - from), byteCount: keep)
                from = line; have = keep
            }
            guard read(upTo: Swift.max(2 * have, have + lookAhead)) else { return }
            bytes = UnsafeRawPointer(buffer.base)
        }
    }

    mutating func readInParallel(fd: Int32, path: String, onRecord: (String, Int, Record) -> Void) {
        var state = FileState(path: path)
        let pool = Pool(keepStringMaps: decodeHeaders)
        let maxLine = maxLineBytes
        let queue = DispatchQueue.global(qos: .userInitiated)
        // Three blocks a thread: with two, the decoders (one of them often waiting for a core
        // the applying thread holds) finished the window and sat idle while the oldest block
        // was applied; on two cores a fifth of the run had one core idle (docs/PERFORMANCE.md,
        // "2026-11-29 (night)").
        let inFlight = max(2, threads * 3)
        let blockBytes = max(1, parallelBlockBytes)
        var jobs: [Job] = []   // in file order, not yet applied
        var nextStart = 0
        var ended = false       // a block reached the end of the file, or failed
        var fileBytes = 0
        var expectedLines = 256
        var readFailed: String?

        func submit() {
            let job = Job(start: nextStart)
            nextStart += blockBytes
            jobs.append(job)
            let expected = expectedLines
            queue.async {
                LogReader.decodeBlock(job, fd: fd, blockBytes: blockBytes, maxLine: maxLine, pool: pool, expectedLines: expected)
            }
        }

        /// The oldest block, waited for and applied.
        func deliverOldest(_ reader: inout LogReader) {
            let job = jobs.removeFirst()
            job.done.wait()
            if ended { return }   // past the end of the file or a failed read: not applied
            if let why = job.readError {
                readFailed = why
                ended = true
                return
            }
            if job.atEnd { ended = true }
            fileBytes += job.bytes
            guard let results = job.results else { return }
            job.results = nil   // released below
            expectedLines = max(expectedLines, results.count + results.count / 8)
            for k in 0 ..< results.count {
                state.lineNo += 1
                let open = job.lastLineOpen && k == results.count - 1
                reader.apply(results.base[k], state: &state, complete: !open, onRecord: onRecord)
            }
            // The block's records are released on a decoding thread: a record's strings and
            // dictionaries are dozens of atomic decrements, and this thread is the one the
            // others wait for.
            let done = Released(results)
            queue.async { done.release() }
            reader.bytesRead += Int64(job.bytes)
            reader.onProgress?(reader.bytesRead)
        }

        while !ended || !jobs.isEmpty {
            while !ended, jobs.count < inFlight { submit() }
            if jobs.isEmpty { break }
            deliverOldest(&self)
        }
        // Every thread is done with the file before it is closed.
        for job in jobs { job.done.wait() }
        if let why = readFailed {
            warnings.append(ReaderWarning(file: path, line: state.lineNo + 1, message: "read error: \(why); rest of file skipped"))
            return
        }
        if fileBytes == 0 {
            warnings.append(ReaderWarning(file: path, line: nil, message: "empty file"))
        }
        if state.suppressed > 0 {
            warnings.append(ReaderWarning(file: path, line: nil,
                                          message: "\(state.suppressed) more problem\(state.suppressed == 1 ? "" : "s") in this file not shown"))
        }
    }
}
