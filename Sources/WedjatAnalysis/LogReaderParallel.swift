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

    /// One block's outcome, filled by a decoding thread.
    private final class Job: @unchecked Sendable {
        enum Kind {
            /// Whole lines, separated by newlines (the last one's newline is not included).
            case lines([UInt8])
            /// Bytes that end no line yet (part of a long one).
            case none
            /// A line longer than `maxLineBytes`: skipped with a warning.
            case tooLong
        }
        let kind: Kind
        var results: [LineResult] = []
        let done = DispatchSemaphore(value: 0)
        init(_ kind: Kind) { self.kind = kind }
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
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, parallelBlockBytes), alignment: 16)
        defer { block.deallocate() }

        func submit(_ job: Job) {
            guard case .lines(let bytes) = job.kind else { job.done.signal(); return }
            queue.async {
                let document = pool.take()
                var out: [LineResult] = []
                bytes.withUnsafeBytes { all in
                    var start = 0
                    while true {
                        let nl = start < all.count
                            ? memchr(all.baseAddress! + start, 0x0A, all.count - start).map { all.baseAddress!.distance(to: UnsafeRawPointer($0)) } ?? all.count
                            : all.count
                        out.append(LogReader.decodeLine(UnsafeRawBufferPointer(rebasing: all[start ..< nl]), document: document,
                                                        maxLineBytes: maxLine))
                        if nl >= all.count { break }
                        start = nl + 1
                    }
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
            case .lines:
                for r in job.results {
                    state.lineNo += 1
                    reader.apply(r, state: &state, complete: true, onRecord: onRecord)
                }
            }
            reader.bytesRead += Int64(bytes)
            reader.onProgress?(reader.bytesRead)
        }

        var readFailed: String?
        while true {
            var n = 0
            while n < block.count {
                let got = Glibc.read(fd, block.baseAddress! + n, block.count - n)
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
            var bytes = UnsafeRawBufferPointer(rebasing: block[0 ..< n])
            if skipping {
                // The rest of an over-long line: its warning was given when it grew too big.
                guard let nl = memchr(bytes.baseAddress!, 0x0A, n) else { jobs.append((Job(.none), n)); submit(jobs.last!.job); continue }
                let after = bytes.baseAddress!.distance(to: UnsafeRawPointer(nl)) + 1
                bytes = UnsafeRawBufferPointer(rebasing: bytes[after...])
                skipping = false
            }
            // Whole lines go out; the last partial one waits for the next block.
            var lastNL = -1
            // (memrchr is a GNU extension Swift does not import.)
            var i = bytes.count - 1
            while i >= 0 { if bytes[i] == 0x0A { lastNL = i; break }; i -= 1 }
            var job: Job?
            if lastNL >= 0 {
                var lines = carry
                lines.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<lastNL]))
                carry = Array(UnsafeRawBufferPointer(rebasing: bytes[(lastNL + 1)...]))
                job = Job(.lines(lines))
            } else {
                carry.append(contentsOf: bytes)
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
