import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The read position in one growing log file: complete lines are handed out as they are
/// appended; a line still being written waits (its bytes are read again next time, so only
/// `offset` is kept between reads: memory does not grow with the file).
public final class FileTail {
    public let path: String
    /// Bytes consumed: the end of the last complete line handed out (or skipped).
    public private(set) var offset: Int64
    /// Lines handed out since `offset` was last set from outside (for `file:line` in warnings
    /// when the tail began at 0).
    public private(set) var linesRead = 0
    /// Lines longer than the limit, skipped whole.
    public private(set) var longLinesSkipped = 0
    private var fd: Int32
    /// Set when the tail began in the middle of a line: skip to the next newline first.
    private var resync = false
    /// While skipping an over-long line: where it began.
    private var skippingFrom: Int64?

    /// Opens `path` at `offset` (its end when nil: only what is appended from now on). Nil when
    /// the file cannot be opened.
    public init?(path: String, offset: Int64? = 0) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        self.path = path
        self.fd = fd
        if let offset {
            self.offset = offset
        } else {
            var st = stat()
            let size = fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
            self.offset = size
            // Began right after a newline (the writer writes whole lines), or mid-line.
            var last: UInt8 = 0x0A
            if size > 0, pread(fd, &last, 1, off_t(size - 1)) == 1, last != 0x0A { resync = true }
        }
    }

    deinit { close(fd) }

    /// Goes back (or forward) to a line start: a batch that could not be sent is read again.
    public func setOffset(_ newOffset: Int64) {
        guard newOffset != offset else { return }
        offset = newOffset
        resync = false
        skippingFrom = nil
    }

    /// The file's current size, and whether it was deleted (retention): a deleted file is still
    /// readable through the open descriptor, and will not grow any more.
    public func status() -> (size: Int64, deleted: Bool) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return (offset, true) }
        return (Int64(st.st_size), st.st_nlink == 0)
    }

    public enum Stop { case endOfData, limit, handler }

    /// Hands each complete line appended since `offset` to `line` (its bytes without the newline,
    /// and the offset just past its newline), reading at most `maxBytes` (whole chunks) and not
    /// past `until`. `line` returns false to stop before the line it was given: `offset` stays at
    /// that line's start, so it is handed out again next time. A line longer than `maxLineBytes`
    /// is skipped (counted in `longLinesSkipped`). `scratch` is the read buffer (shared by the
    /// caller's tails).
    @discardableResult
    public func readLines(scratch: inout [UInt8], maxBytes: Int = .max, until: Int64 = .max, maxLineBytes: Int = 16 << 20,
                          _ line: (UnsafeRawBufferPointer, Int64) -> Bool) -> Stop {
        var pending: [UInt8] = []      // a line that spans chunks
        var readAt = offset
        var budget = maxBytes
        while budget > 0, readAt < until {
            let want = Int(min(Int64(scratch.count), until - readAt, Int64(budget)))
            let n = scratch.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, want, off_t(readAt)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return .endOfData }
            budget -= n
            let chunkStart = readAt
            readAt += Int64(n)
            let stopped: Bool = scratch.withUnsafeBytes { raw in
                let base = raw.baseAddress!
                var start = 0
                while start < n {
                    guard let found = memchr(base + start, 0x0A, n - start) else {
                        if skippingFrom == nil && !resync {
                            pending.append(contentsOf: UnsafeRawBufferPointer(start: base + start, count: n - start))
                            if pending.count > maxLineBytes {
                                skippingFrom = chunkStart + Int64(start) - Int64(pending.count - (n - start))
                                pending = []
                            }
                        }
                        return false
                    }
                    let nl = base.distance(to: UnsafeRawPointer(found))
                    let end = chunkStart + Int64(nl) + 1
                    if resync || skippingFrom != nil {
                        if skippingFrom != nil { longLinesSkipped += 1 }
                        resync = false
                        skippingFrom = nil
                        pending = []
                        offset = end
                    } else {
                        let keep: Bool
                        if pending.isEmpty {
                            keep = line(UnsafeRawBufferPointer(start: base + start, count: nl - start), end)
                        } else {
                            pending.append(contentsOf: UnsafeRawBufferPointer(start: base + start, count: nl - start))
                            keep = pending.withUnsafeBytes { line($0, end) }
                            pending.removeAll(keepingCapacity: true)
                        }
                        if !keep { return true }
                        offset = end
                        linesRead += 1
                    }
                    start = nl + 1
                }
                return false
            }
            if stopped { return .handler }
        }
        return readAt >= until ? .limit : (budget <= 0 ? .limit : .endOfData)
    }

    /// The bytes after the last complete line: a line still being written, or one a writer
    /// that died left without its newline.
    public var unfinishedBytes: Int64 { max(0, status().size - offset) }
}
