import ArgumentParser
import Foundation
import WedjatAnalysis

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command with wedjat preloaded and summarise its logs on stderr.",
        discussion: """
            Example: wedjat run --dir /tmp/logs -- curl -s http://127.0.0.1:8080/

            The library is <directory of the wedjat executable>/../lib/libwedjat.so, or $WEDJAT_LIB.

            Exit status: the command's; a command killed by a signal makes wedjat die of the same signal. \
            125 when wedjat cannot start the command, 126 when it is not executable, 127 when it is not found.
            """)

    @Option(help: "Log directory (created 0700). Default: $WEDJAT_DIR if set, else ./wedjat-logs.")
    var dir: String?

    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments (after --).")
    var command: [String] = []

    /// ArgumentParser keeps a leading "--" in a passthrough capture.
    private var argv: [String] { command.first == "--" ? Array(command.dropFirst()) : command }

    func validate() throws {
        // The passthrough capture also swallows a bare `--help`; nobody runs a program called that.
        if command.first == "--help" || command.first == "-h" { throw CleanExit.helpRequest(self) }
        guard let program = argv.first, !program.isEmpty else {
            throw ValidationError("missing command: wedjat run [--dir D] -- COMMAND [ARGS...]")
        }
    }

    func run() throws {
        let argv = self.argv
        let program = argv[0]
        var env = Environment.current()

        guard let library = locateLibrary(env: env) else { throw ExitCode(125) }

        let logDir = absolutePath(dir ?? env["WEDJAT_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "wedjat-logs")
        do {
            try FileManager.default.createDirectory(atPath: logDir, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            printError("wedjat: cannot create the log directory \(logDir): \(describe(error))")
            throw ExitCode(125)
        }

        let preload = env["LD_PRELOAD"].flatMap { $0.isEmpty ? nil : $0 }
        env["LD_PRELOAD"] = preload.map { library + ":" + $0 } ?? library
        env["WEDJAT_DIR"] = logDir
        // Same checks as the library's, before the program runs. On a terminal the library says
        // them itself, once (docs: Configuration): saying them here too would be twice.
        let configWarnings = ConfigValidator.validate(env.dictionary)
        let libraryWarns = isatty(STDERR_FILENO) == 1
        if !libraryWarns { for w in configWarnings { printError("wedjat: warning: \(w)") } }

        if let path = Executable.resolve(program, searchPath: env["PATH"]),
           Executable.linkage(ofFile: path) == .staticELF {
            printError("wedjat: \(program) is statically linked; LD_PRELOAD cannot watch it")
        }

        let before = Set(logNames(in: logDir))
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        // A second of slack: the library's clock anchor and this one may differ by a little.
        let runStart = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000 - 1_000_000
        var childPid: Int32 = 0
        let outcome: ChildOutcome
        switch ChildProcess.run(argv: argv, environment: env.entries, pid: &childPid) {
        case .failure(let err):
            switch err.code {
            case ENOENT:
                // As a shell says it: a path that does not exist is not a "command".
                printError("wedjat: \(program): " + (program.contains("/") ? "No such file or directory" : "command not found"))
                throw ExitCode(127)
            case EACCES, EISDIR, ENOEXEC, EPERM:
                printError("wedjat: \(program): \(String(cString: strerror(err.code)))")
                throw ExitCode(126)
            default:
                printError("wedjat: cannot start \(program): \(String(cString: strerror(err.code)))")
                throw ExitCode(125)
            }
        case .success(let o):
            outcome = o
        }

        let lines = summary(logDir: logDir, before: before, rootPid: Int(childPid), sinceTs: runStart)
        // No watched process: the library never said the configuration warnings.
        if libraryWarns, lines.first?.hasPrefix("wedjat: no logs") == true {
            for w in configWarnings { printError("wedjat: warning: \(w)") }
        }
        for line in lines { printError(line) }

        switch outcome {
        case .exited(let code):
            throw ExitCode(code)
        case .signaled(let sig):
            ChildProcess.dieLike(signal: sig)
            throw ExitCode(128 + sig)
        }
    }

    /// `<real dir of this executable>/../lib/libwedjat.so`, or $WEDJAT_LIB. Reports and returns
    /// nil when it is missing: running the command unwatched would silently produce nothing.
    private func locateLibrary(env: Environment) -> String? {
        let path: String
        if let override = env["WEDJAT_LIB"], !override.isEmpty {
            path = absolutePath(override)
        } else {
            guard let exe = realPath("/proc/self/exe") else {
                printError("wedjat: cannot resolve /proc/self/exe; set WEDJAT_LIB to the path of libwedjat.so")
                return nil
            }
            let dir = (exe as NSString).deletingLastPathComponent
            path = ((dir as NSString).appendingPathComponent("../lib/libwedjat.so") as NSString).standardizingPath
        }
        guard access(path, R_OK) == 0 else {
            printError("wedjat: the wedjat library is missing: \(path) (\(String(cString: strerror(errno))))")
            printError("wedjat: install wedjat with its lib/ directory, or set WEDJAT_LIB=/path/to/libwedjat.so")
            return nil
        }
        // The dynamic loader splits LD_PRELOAD on both.
        if path.contains(":") || path.contains(" ") {
            printError("wedjat: the library path contains ':' or a space, which LD_PRELOAD cannot express: \(path)")
            return nil
        }
        return path
    }

    /// The run's own processes (the started one and its descendants), not other programs that
    /// wrote into the same directory meanwhile.
    private func summary(logDir: String, before: Set<String>, rootPid: Int, sinceTs: Int64) -> [String] {
        let fresh = logNames(in: logDir).filter { !before.contains($0) }.sorted().map { logDir + "/" + $0 }
        let (run, others) = RunSummary.runLogs(fresh, rootPid: rootPid, sinceTs: sinceTs)
        guard !run.isEmpty else { return RunSummary.noLogs(logDir: logDir) }
        do {
            let analysis = try RunAnalysis.load(paths: run, collectRequests: false)
            return RunSummary.lines(report: Report(analysis: analysis), logDir: logDir, others: others)
        } catch {
            return RunSummary.unreadable(logDir: logDir, reason: error.description)
        }
    }
}

/// The log files directly in `dir` (the library writes no subdirectories).
private func logNames(in dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".ndjson") }
}

private func absolutePath(_ p: String) -> String {
    let full = p.hasPrefix("/") ? p : FileManager.default.currentDirectoryPath + "/" + p
    return (full as NSString).standardizingPath
}

private func realPath(_ p: String) -> String? {
    guard let r = realpath(p, nil) else { return nil }
    defer { free(r) }
    return String(cString: r)
}

private func describe(_ error: Error) -> String {
    if let e = error as? CocoaError, let u = e.underlying as? POSIXError { return String(cString: strerror(u.code.rawValue)) }
    return error.localizedDescription
}

/// The environment as an ordered list (the child gets it in the same order), with lookup.
struct Environment {
    private(set) var entries: [(String, String)]

    static func current() -> Environment {
        var out: [(String, String)] = []
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") {
                out.append((String(s[..<eq]), String(s[s.index(after: eq)...])))
            }
            p += 1
        }
        return Environment(entries: out)
    }

    subscript(name: String) -> String? {
        get { entries.first { $0.0 == name }?.1 }
        set {
            entries.removeAll { $0.0 == name }
            if let newValue { entries.append((name, newValue)) }
        }
    }

    var dictionary: [String: String] {
        Dictionary(entries, uniquingKeysWith: { first, _ in first })
    }
}
