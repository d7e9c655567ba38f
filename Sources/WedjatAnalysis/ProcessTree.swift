import Foundation

/// One process: the images of an exec chain (same pid, `bash → exec → curl`), and the
/// processes it created.
public struct ProcessNode: Sendable {
    /// Indexes into `ProcessTree.logs`, oldest image first.
    public var images: [Int]
    public var children: [ProcessNode] = []
}

/// Parent/child structure of a run, derived from process_start fields only (fork records
/// are not needed, and a parent may be unwatched).
public struct ProcessTree: Sendable {
    /// The logs, sorted by start time (then path): the order used everywhere in reports.
    public let logs: [ProcessLog]
    public let roots: [ProcessNode]
    /// For each log: the log it was exec'd from (same process), if known.
    public let execPredecessor: [Int?]
    /// For each log: the image of the parent process its process was created from, if known.
    public let parentImage: [Int?]

    public init(logs unsorted: [ProcessLog]) {
        let logs = unsorted.sorted { ($0.startTs, $0.path) < ($1.startTs, $1.path) }
        self.logs = logs
        let n = logs.count

        // File references in process_start are absolute paths at record time; the logs may have
        // been moved since, so fall back to the base name.
        var byPath: [String: Int] = [:]
        var byName: [String: [Int]] = [:]
        for (i, l) in logs.enumerated() {
            byPath[l.path] = i
            if let own = l.start?.log { byPath[own] = byPath[own] ?? i }
            byName[l.fileName, default: []].append(i)
        }
        func resolve(_ ref: String?, from i: Int) -> Int? {
            guard let ref, !ref.isEmpty else { return nil }
            if let j = byPath[ref], j != i { return j }
            let candidates = (byName[(ref as NSString).lastPathComponent] ?? []).filter { $0 != i }
            let dir = (logs[i].path as NSString).deletingLastPathComponent
            return candidates.first { (logs[$0].path as NSString).deletingLastPathComponent == dir } ?? candidates.first
        }

        // 1. Exec chains: exec_from, else same pid + proc_start_ticks (an exec keeps both).
        var pred = [Int?](repeating: nil, count: n)
        var succ = [Int?](repeating: nil, count: n)
        for i in 0 ..< n {
            var p = resolve(logs[i].start?.execFrom, from: i)
            if let j = p, !(logs[j].startTs <= logs[i].startTs && succ[j] == nil) { p = nil }
            if p == nil, let ticks = logs[i].start?.procStartTicks {
                p = (0 ..< i).last { j in
                    logs[j].pid == logs[i].pid && logs[j].start?.procStartTicks == ticks && succ[j] == nil
                }
            }
            if let j = p { pred[i] = j; succ[j] = i }
        }
        var chainOf = [Int](repeating: 0, count: n)
        var chains: [[Int]] = []
        for i in 0 ..< n where pred[i] == nil {
            var chain = [i]
            var k = i
            while let s = succ[k] { chain.append(s); k = s }
            for m in chain { chainOf[m] = chains.count }
            chains.append(chain)
        }

        // 2. Parent of each chain: parent_log, else the image of pid == ppid alive when the
        //    process was created (the latest one started before it, for reused pids).
        var parentImg = [Int?](repeating: nil, count: n)
        var parentChain = [Int?](repeating: nil, count: chains.count)
        for (c, chain) in chains.enumerated() {
            let head = chain[0]
            var parent: Int? = nil
            for i in chain {
                if let p = resolve(logs[i].start?.parentLog, from: i), chainOf[p] != c { parent = p; break }
            }
            if parent == nil, let ppid = logs[head].start?.ppid, ppid > 0 {
                // The kernel start time is coarse (clock ticks), the image start is late (library
                // init); accept either being inside the parent's lifetime.
                for t in [logs[head].kernelStartTs, logs[head].startTs] where parent == nil {
                    parent = (0 ..< n).filter { j in
                        guard logs[j].pid == ppid, chainOf[j] != c else { return false }
                        let from = pred[j] == nil ? min(logs[j].startTs, logs[j].kernelStartTs) : logs[j].startTs
                        let to = logs[j].end?.ts ?? .max   // no process_end: alive as far as we know
                        return from <= t && t <= to
                    }.max { logs[$0].startTs < logs[$1].startTs }
                }
            }
            if let p = parent {
                for i in chain { parentImg[i] = p }   // every image of a process has the same parent
                parentChain[c] = chainOf[p]
            }
        }
        // Malformed references could form a cycle; cut it so every process is shown once.
        for c in 0 ..< chains.count {
            var seen: Set<Int> = [c]
            var k = parentChain[c]
            while let p = k {
                if p == c {
                    parentChain[c] = nil
                    for i in chains[c] { parentImg[i] = nil }
                    break
                }
                if !seen.insert(p).inserted { break }   // a cycle above c: cut when its member comes
                k = parentChain[p]
            }
        }

        var childrenOf = [[Int]](repeating: [], count: chains.count)
        var rootChains: [Int] = []
        for c in 0 ..< chains.count {
            if let p = parentChain[c] { childrenOf[p].append(c) } else { rootChains.append(c) }
        }
        func node(_ c: Int) -> ProcessNode {
            ProcessNode(images: chains[c], children: childrenOf[c].map(node))
        }
        // Chains were numbered in head start order, so children and roots are in start order.
        roots = rootChains.map(node)
        execPredecessor = pred
        parentImage = parentImg
    }

    /// `bash → exec → curl` for an exec chain.
    public func label(_ node: ProcessNode) -> String {
        node.images.map { logs[$0].program }.joined(separator: " → exec → ")
    }

    /// Number of processes (exec chains), as opposed to logs (images).
    public var processCount: Int {
        func count(_ n: ProcessNode) -> Int { 1 + n.children.reduce(0) { $0 + count($1) } }
        return roots.reduce(0) { $0 + count($1) }
    }
}
