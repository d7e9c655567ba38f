import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// A big log is read on several cores: the calling thread reads the file in blocks cut at line
// ends and hands them out; other threads parse and decode the lines of a block into records;
// the calling thread takes the blocks back in file order and applies each line (warnings,
// process_start rules, `onRecord`) exactly as the one-thread path does, so the records, their
// line numbers and the warnings are the same. Memory: `threads × 2` blocks in flight.

extension LogReader {

    /// A block's bytes: read into straight from the file (after the previous block's partial
    /// last line), reused from block to block (no copy of the file, no fresh pages per block).
    private final class Buffer: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
        let capacity: Int
        init(capacity: Int) {
            self.capacity = capacity
            base = .allocate(byteCount: Swift.max(1, capacity), alignment: 16)
        }
        deinit { base.deallocate() }
    }

    /// A block's decoded lines, in order, taken out one by one by the applying thread (moved, not
    /// copied: a copy of a record retains each of its strings, and the array's release again).
    private typealias Results = GrowingBuffer<LineResult>

    /// One block's outcome, filled by a decoding thread.
    private final class Job: @unchecked Sendable {
        enum Kind {
            /// Whole lines in `buffer[0 ..< count]`, separated by newlines (the last one's newline
            /// is not included).
            case lines(Buffer, Int)
            /// Bytes that end no line yet (part of a long one).
            case none
            /// A line longer than `maxLineBytes`: skipped with a warning.
            case tooLong
        }
        let kind: Kind
        /// Set by the decoding thread; its lines are moved out by the applying one.
        var results: Results?
        let done = DispatchSemaphore(value: 0)
        init(_ kind: Kind) { self.kind = kind }
        deinit {
            guard let results else { return }
            results.base.deinitialize(count: results.count)
            results.base.deallocate()
        }
    }

    /// A block's decoded lines, once applied, for another thread to release.
    private final class Released: @unchecked Sendable {
        private let results: Results
        init(_ results: Results) { self.results = results }
        func release() {
            results.base.deinitialize(count: results.count)
            results.base.deallocate()
        }
    }

    /// Parse buffers, one per decoding thread at a time.
    private final class DocumentPool: @unchecked Sendable {
        private var free: [JSONDocument] = []
        private let lock = NSLock()
        let keepStringMaps: Bool
        init(keepStringMaps: Bool) { self.keepStringMaps = keepStringMaps }
        func take() -> JSONDocument {
            lock.lock(); defer { lock.unlock() }
            if let d = free.popLast() { return d }
            let d = JSONDocument()
            d.keepStringMaps = keepStringMaps
            return d
        }
        func give(_ d: JSONDocument) { lock.lock(); free.append(d); lock.unlock() }
    }

    mutating func readInParallel(fd: Int32, path: String, onRecord: (String, Int, Record) -> Void) {
        var state = FileState(path: path)
        let pool = DocumentPool(keepStringMaps: decodeHeaders)
        let maxLine = maxLineBytes
        let queue = DispatchQueue.global(qos: .userInitiated)
        let inFlight = max(2, threads * 2)
        var jobs: [(job: Job, bytes: Int)] = []   // in file order, not yet applied
        var carry: [UInt8] = []
        var skipping = false   // inside a line that was too long, until its newline
        var fileBytes = 0
        let blockBytes = max(1, parallelBlockBytes)
        var spare: [Buffer] = []   // buffers of applied blocks, for the next ones
        var expectedLines = 256
        // Room for a partial line ahead of a block's bytes in the reused buffers (a longer one
        // gets a buffer of its own).
        let carryRoom = 64 * 1024

        func submit(_ job: Job) {
            guard case .lines(let buffer, let count) = job.kind else { job.done.signal(); return }
            let capacity = expectedLines
            queue.async {
                let document = pool.take()
                var out = Results(capacity: Swift.max(16, capacity))
                let all = UnsafeRawPointer(buffer.base)
                var start = 0
                while true {
                    let nl = start < count
                        ? memchr(all + start, 0x0A, count - start).map { all.distance(to: UnsafeRawPointer($0)) } ?? count
                        : count
                    out.append(LogReader.decodeLine(UnsafeRawBufferPointer(start: all + start, count: nl - start), document: document,
                                                    maxLineBytes: maxLine))
                    if nl >= count { break }
                    start = nl + 1
                }
                pool.give(document)
                job.results = out
                job.done.signal()
            }
        }

        /// The oldest block, waited for and applied.
        func deliverOldest(_ reader: inout LogReader) {
            let (job, bytes) = jobs.removeFirst()
            job.done.wait()
            switch job.kind {
            case .tooLong:
                state.lineNo += 1
                reader.warn(&state, "line longer than \(reader.maxLineBytes) bytes; skipped")
            case .none:
                break
            case .lines(let buffer, _):
                let results = job.results!
                job.results = nil   // released below
                expectedLines = max(expectedLines, results.count + results.count / 8)
                for k in 0 ..< results.count {
                    state.lineNo += 1
                    reader.apply(results.base[k], state: &state, complete: true, onRecord: onRecord)
                }
                // The block's records are released on a decoding thread: a record's strings and
                // dictionaries are dozens of atomic decrements, and this thread is the one the
                // others wait for.
                let done = Released(results)
                queue.async { done.release() }
                if buffer.capacity == carryRoom + blockBytes { spare.append(buffer) }
            }
            reader.bytesRead += Int64(bytes)
            reader.onProgress?(reader.bytesRead)
        }

        var readFailed: String?
        while true {
            // The partial line left by the previous block goes first, then the file's next bytes.
            let buffer = carry.count <= carryRoom ? (spare.popLast() ?? Buffer(capacity: carryRoom + blockBytes))
                : Buffer(capacity: carry.count + blockBytes)
            let c = carry.count
            carry.withUnsafeBytes { if c > 0 { buffer.base.copyMemory(from: $0.baseAddress!, byteCount: c) } }
            var n = 0
            while n < blockBytes {
                let got = Glibc.read(fd, buffer.base + c + n, blockBytes - n)
                if got < 0 {
                    if errno == EINTR { continue }
                    readFailed = String(cString: strerror(errno))
                    break
                }
                if got == 0 { break }
                n += got
            }
            if readFailed != nil || n == 0 { break }
            fileBytes += n
            let filled = c + n
            var from = 0   // where this block's lines begin
            if skipping {
                // The rest of an over-long line: its warning was given when it grew too big.
                // (The carry is empty while skipping.)
                guard let nl = memchr(buffer.base, 0x0A, filled) else {
                    spare.append(buffer)
                    jobs.append((Job(.none), n)); submit(jobs.last!.job)
                    while jobs.count >= inFlight { deliverOldest(&self) }
                    continue
                }
                from = UnsafeRawPointer(buffer.base).distance(to: UnsafeRawPointer(nl)) + 1
                skipping = false
            }
            // Whole lines go out; the last partial one waits for the next block. Only the new
            // bytes can hold a newline: the carry has none.
            // (memrchr is a GNU extension Swift does not import.)
            var lastNL = -1
            let bytes = buffer.base.assumingMemoryBound(to: UInt8.self)
            var i = filled - 1
            while i >= Swift.max(from, c) { if bytes[i] == 0x0A { lastNL = i; break }; i -= 1 }
            var job: Job?
            if lastNL >= 0 {
                if from > 0 { (buffer.base).copyMemory(from: buffer.base + from, byteCount: lastNL - from) }
                carry.removeAll(keepingCapacity: true)
                carry.append(contentsOf: UnsafeRawBufferPointer(start: buffer.base + lastNL + 1, count: filled - lastNL - 1))
                job = Job(.lines(buffer, lastNL - from))
            } else {
                carry.removeAll(keepingCapacity: true)
                carry.append(contentsOf: UnsafeRawBufferPointer(start: buffer.base + from, count: filled - from))
                if buffer.capacity == carryRoom + blockBytes { spare.append(buffer) }
                if carry.count > maxLineBytes {
                    carry = []
                    skipping = true
                    job = Job(.tooLong)
                }
            }
            if let job {
                jobs.append((job, n))
                submit(job)
            } else {
                jobs.append((Job(.none), n))
                submit(jobs.last!.job)
            }
            while jobs.count >= inFlight { deliverOldest(&self) }
        }
        while !jobs.isEmpty { deliverOldest(&self) }
        if let why = readFailed {
            warnings.append(ReaderWarning(file: path, line: state.lineNo + 1, message: "read error: \(why); rest of file skipped"))
            return
        }
        if !skipping, !carry.isEmpty {
            state.lineNo += 1
            let result = carry.withUnsafeBytes { LogReader.decodeLine($0, document: pool.take(), maxLineBytes: maxLineBytes) }
            apply(result, state: &state, complete: false, onRecord: onRecord)
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
