import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// posix_spawnp's error number: ENOENT is "command not found" for the caller.
struct SpawnError: Error {
    var code: Int32
}

enum ChildOutcome {
    case exited(Int32)
    case signaled(Int32)
}

/// The pid SIGTERM/SIGHUP are forwarded to; 0 while there is none. Atomic because a signal
/// handler reads it.
private let forwardTarget = Atomic<Int32>(0)

private func forwardSignal(_ sig: Int32) {
    let pid = forwardTarget.load(ordering: .relaxed)
    if pid > 0 { kill(pid, sig) }
}

/// Runs a command the way a shell runs a foreground job: same stdin/stdout/stderr (no pipes),
/// same process group, so the terminal's Ctrl-C reaches it directly.
enum ChildProcess {
    /// `pid`: set to the child's pid once it is started.
    static func run(argv: [String], environment: [(String, String)], pid childPid: inout Int32) -> Result<ChildOutcome, SpawnError> {
        // Like a shell: the terminal's SIGINT/SIGQUIT go to the whole foreground group; only
        // the child should act on them. Signals that were already ignored stay ignored (the
        // child inherits that, as it would from a shell).
        let interactive: [Int32] = [SIGINT, SIGQUIT]
        let forwarded: [Int32] = [SIGTERM, SIGHUP]
        var previous: [Int32: sighandler_t?] = [:]
        for sig in interactive { previous[sig] = signal(sig, SIG_IGN) }
        // An inherited SIGCHLD=SIG_IGN would make the kernel reap the child before waitpid.
        previous[SIGCHLD] = signal(SIGCHLD, SIG_DFL)

        // Block the forwarded signals until the child's pid is known, so one that arrives
        // during the spawn is delivered (and forwarded) afterwards instead of being lost.
        var block = sigset_t(), oldMask = sigset_t()
        sigemptyset(&block)
        for sig in forwarded { sigaddset(&block, sig) }
        sigprocmask(SIG_BLOCK, &block, &oldMask)
        for sig in forwarded {
            let old = signal(sig, forwardSignal)
            previous[sig] = old
            if isIgnored(old) { signal(sig, SIG_IGN) }   // e.g. under nohup: keep ignoring
        }

        var defaults = sigset_t()
        sigemptyset(&defaults)
        for sig in interactive + forwarded where !isIgnored(previous[sig] ?? nil) { sigaddset(&defaults, sig) }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setsigmask(&attr, &oldMask)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var cArgv: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.0)=\($0.1)") } + [nil]
        defer {
            for p in cArgv { free(p) }
            for p in cEnv { free(p) }
        }

        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], nil, &attr, &cArgv, &cEnv)
        if rc == 0 { forwardTarget.store(pid, ordering: .relaxed); childPid = pid }
        sigprocmask(SIG_SETMASK, &oldMask, nil)

        defer {
            // Back to how wedjat started, so the summary step behaves like a normal program.
            forwardTarget.store(0, ordering: .relaxed)
            for (sig, handler) in previous { signal(sig, handler) }
        }
        guard rc == 0 else { return .failure(SpawnError(code: rc)) }

        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .success(.exited(127)) }
        }
        // <sys/wait.h> macros, which Swift does not import.
        let sig = status & 0x7F
        if sig == 0 { return .success(.exited((status >> 8) & 0xFF)) }
        return .success(.signaled(sig))
    }

    private static func isIgnored(_ h: sighandler_t?) -> Bool {
        guard let h else { return false }
        return unsafeBitCast(h, to: Int.self) == 1   // SIG_IGN is (sighandler_t)1
    }

    /// Dies of `sig` so the caller (a shell) sees what happened to the child, without leaving
    /// a core file of wedjat that could overwrite the child's. Returns only if the signal does
    /// not terminate (the caller then exits 128+sig).
    static func dieLike(signal sig: Int32) {
        fflush(nil)   // all streams; no reference to the global `stdout`
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        let core = __rlimit_resource_t(RLIMIT_CORE.rawValue)
        getrlimit(core, &noCore)
        noCore.rlim_cur = 0
        setrlimit(core, &noCore)
        signal(sig, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, sig)
        sigprocmask(SIG_UNBLOCK, &set, nil)
        raise(sig)
    }
}
