import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How far `wedjat ship` got in one segment, kept in `WEDJAT_DIR/.ship/<segment file name>.pos`
/// (replaced atomically, by rename, after every answer of the collector):
///
///     {"offset":123456,"interval_start_ts":1763782510123456}
///     {"offset":123456,"interval_start_ts":...,"batch_end":234567,"traces_sent":true}
///
/// `offset`: the bytes whose records were all sent. A batch goes out as a traces request then a
/// metrics request; between the two answers the checkpoint names the batch (`batch_end`) and
/// that its spans are in, so a restart makes the same batch again from the log and sends only
/// its metrics. `ended`: the segment's last record (`segment_end`, `process_end`) was sent.
/// When a segment is all sent and will not grow, `<name>.done` replaces the `.pos` file: the
/// log writer deletes a segment under retention only once that file exists.
public struct ShipCheckpoint: Equatable {
    public var offset: Int64 = 0
    /// The end of the last interval sent: the next histograms start there.
    public var intervalStartTs: Int64?
    public var batchEnd: Int64?
    public var tracesSent = false
    public var ended: String?

    public init(offset: Int64 = 0, intervalStartTs: Int64? = nil, batchEnd: Int64? = nil, tracesSent: Bool = false,
                ended: String? = nil) {
        self.offset = offset; self.intervalStartTs = intervalStartTs; self.batchEnd = batchEnd
        self.tracesSent = tracesSent; self.ended = ended
    }

    var json: String {
        var fields = ["\"offset\":\(offset)"]
        if let intervalStartTs { fields.append("\"interval_start_ts\":\(intervalStartTs)") }
        if let batchEnd { fields.append("\"batch_end\":\(batchEnd)") }
        if tracesSent { fields.append("\"traces_sent\":true") }
        if let ended { fields.append("\"ended\":\"\(ended)\"") }
        return "{" + fields.joined(separator: ",") + "}\n"
    }

    init?(json: Data) {
        guard let o = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
              let offset = (o["offset"] as? NSNumber)?.int64Value, offset >= 0 else { return nil }
        self.offset = offset
        intervalStartTs = (o["interval_start_ts"] as? NSNumber)?.int64Value
        batchEnd = (o["batch_end"] as? NSNumber)?.int64Value
        tracesSent = (o["traces_sent"] as? Bool) ?? false
        ended = o["ended"] as? String
        if let end = batchEnd, end < offset { return nil }
    }
}

/// `WEDJAT_DIR/.ship/`: one checkpoint per segment being sent, one `.done` per segment sent.
public struct ShipState {
    public let dir: String

    public init(logDirectory: String) { dir = logDirectory + "/.ship" }

    public enum Failure: Error, CustomStringConvertible {
        case cannotCreate(String, String)
        case cannotWrite(String, String)
        public var description: String {
            switch self {
            case .cannotCreate(let p, let why): "cannot create \(p): \(why)"
            case .cannotWrite(let p, let why): "cannot write \(p): \(why)"
            }
        }
    }

    public func prepare() throws(Failure) {
        if mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw .cannotCreate(dir, String(cString: strerror(errno)))
        }
        var st = stat()
        guard stat(dir, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, access(dir, W_OK) == 0 else {
            throw .cannotCreate(dir, "there is something else by that name, or it is not writable")
        }
    }

    public func isDone(_ segment: String) -> Bool { access(dir + "/" + segment + ".done", F_OK) == 0 }

    /// The checkpoint of a segment; nil when there is none. A damaged one is reported in `problem`
    /// and read as none (the segment is then sent from its start: duplicates, never a loss).
    public func checkpoint(_ segment: String, problem: inout String?) -> ShipCheckpoint? {
        let path = dir + "/" + segment + ".pos"
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let c = ShipCheckpoint(json: data) else {
            problem = "\(path): not a checkpoint (\(data.count) bytes); the segment is sent again from its start"
            return nil
        }
        return c
    }

    public func save(_ c: ShipCheckpoint, for segment: String) throws(Failure) {
        try replace(dir + "/" + segment + ".pos", with: c.json)
    }

    /// The segment is all sent: `.done` (what the writer's retention waits for), then the
    /// checkpoint goes.
    public func markDone(_ segment: String, _ c: ShipCheckpoint) throws(Failure) {
        try replace(dir + "/" + segment + ".done", with: c.json)
        unlink(dir + "/" + segment + ".pos")
    }

    /// Removes the state of segments no longer in the log directory (deleted by retention or
    /// by hand). Returns how many.
    @discardableResult
    public func prune(present: Set<String>) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return 0 }
        var removed = 0
        for name in names {
            let segment: String
            if name.hasSuffix(".done") { segment = String(name.dropLast(5)) } else if name.hasSuffix(".pos") { segment = String(name.dropLast(4)) } else { continue }
            if !present.contains(segment), unlink(dir + "/" + name) == 0 { removed += 1 }
        }
        return removed
    }

    /// Write to a temporary name, then rename over: a reader (or a restart after kill -9) sees
    /// the old content or the new, never half of it.
    private func replace(_ path: String, with text: String) throws(Failure) {
        let tmp = path + ".tmp"
        var fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 && errno == ENOENT, mkdir(dir, 0o700) == 0 {
            // .ship/ was removed while ship ran: made again.
            fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw .cannotWrite(tmp, String(cString: strerror(errno))) }
        var ok = true
        var text = text
        text.withUTF8 { buf in
            var done = 0
            while done < buf.count {
                let n = write(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { ok = false; return }
                done += n
            }
        }
        let why = String(cString: strerror(errno))
        close(fd)
        guard ok, rename(tmp, path) == 0 else {
            unlink(tmp)
            throw .cannotWrite(path, why)
        }
    }
}
