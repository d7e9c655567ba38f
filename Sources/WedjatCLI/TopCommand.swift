import ArgumentParser
import Foundation
import WedjatLive
#if canImport(Glibc)
import Glibc
#endif

/// `wedjat top [DIR]`: the processes writing logs into DIR, live, from their growing logs.
struct TopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Watch the processes writing logs into a directory, live.",
        discussion: """
            Refreshed every second from the growing logs (no connection to the watched processes): per \
            process and per host the requests a second, error rate (status >= 400, or cut short), p50 and \
            p99 of the interval's exchanges, open connections, the busiest event loop's busy share, CPU \
            (% of one core), RSS and stalls; the latest stalls below. Keys: r e l c m p n sort by requests, \
            errors, p99, CPU, RSS, pid, name; q quits. A rate marked ~ includes exchanges only counted in \
            http_summary records (past WEDJAT_HTTP_RECORDS a second), which come every 10 s: that part is \
            the latest 10 s window's rate. When stdout is not a terminal (or with --lines), prints one \
            key=value line per process and host each interval, and one per stall.
            """)

    @Argument(help: "The log directory. Default: $WEDJAT_DIR, else ./wedjat-logs.")
    var dir: String?

    @Option(help: "Seconds between refreshes (0.2 to 60).")
    var interval: Double = 1

    @Option(help: "Sort by: \(TopView.SortKey.allCases.map(\.rawValue).joined(separator: ", ")).")
    var sort: String = "requests"

    @Option(help: "Stop after this many intervals.")
    var count: Int?

    @Flag(help: "Print lines, not a screen, even on a terminal.")
    var lines = false

    @Flag(help: "Read the logs already there from their beginning (default: only what is appended from now on).")
    var fromStart = false

    func validate() throws {
        guard (0.2 ... 60).contains(interval) else { throw ValidationError("--interval must be between 0.2 and 60 seconds") }
        guard TopView.SortKey(rawValue: sort) != nil else {
            throw ValidationError("--sort must be one of \(TopView.SortKey.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
    }

    func run() throws {
        let path = try followedDirectory(dir)
        let model = TopModel(directory: path, fromStart: fromStart)
        var view = TopView(directory: path, sort: TopView.SortKey(rawValue: sort)!)
        if !lines && isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1 {
            try TopScreen.run(model: model, view: &view, interval: interval, count: count)
        } else {
            setvbuf(stdout, nil, _IOLBF, 0)
            var done = 0
            var next = Date().addingTimeInterval(interval)
            model.poll(budget: interval * 0.6)
            while count.map({ done < $0 }) ?? true {
                let wait = next.timeIntervalSinceNow
                if wait > 0 { usleep(useconds_t(wait * 1_000_000)) }
                next = TopScreen.nextTick(after: next, interval: interval)
                model.poll(budget: interval * 0.6)
                let snapshot = model.snapshot()
                for w in snapshot.warnings { printError("wedjat: warning: " + w) }
                for line in view.lines(snapshot) { print(line) }
                done += 1
            }
        }
    }
}

/// The directory `top` and `ship` follow: the argument, else $WEDJAT_DIR, else ./wedjat-logs;
/// exit status 2 when it is not a directory.
func followedDirectory(_ argument: String?) throws -> String {
    let env = ProcessInfo.processInfo.environment
    let path = argument ?? env["WEDJAT_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "wedjat-logs"
    var isDir: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue else {
        printError("wedjat: error: \(path): no such directory (logs go to $WEDJAT_DIR, or ./wedjat-logs under `wedjat run`)")
        throw ExitCode(2)
    }
    return path
}

/// The full-screen mode: alternate screen, keys read unbuffered, the terminal restored on
/// `q`, on the end of `--count`, and on SIGINT, SIGTERM, SIGHUP.
enum TopScreen {
    nonisolated(unsafe) static var saved = termios()
    static let leave = "\u{1B}[?25h\u{1B}[?1049l"

    static func run(model: TopModel, view: inout TopView, interval: Double, count: Int?) throws {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { throw ExitCode(1) }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { _ in
                tcsetattr(STDIN_FILENO, TCSANOW, &TopScreen.saved)
                TopScreen.leave.withCString { _ = Glibc.write(STDOUT_FILENO, $0, strlen($0)) }
                _exit(0)
            }
        }
        write("\u{1B}[?1049h\u{1B}[?25l")
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            write(leave)
        }
        model.poll(budget: interval * 0.6)
        var snapshot = model.snapshot()
        var done = 0
        var next = Date().addingTimeInterval(interval)
        draw(view, snapshot)
        while count.map({ done < $0 }) ?? true {
            var fds = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let wait = max(0, Int32(next.timeIntervalSinceNow * 1000))
            if poll(&fds, 1, wait) > 0 {
                var key: UInt8 = 0
                if read(STDIN_FILENO, &key, 1) == 1 {
                    let c = Character(Unicode.Scalar(key))
                    if c == "q" || c == "Q" { return }
                    if let k = TopView.SortKey(letter: Character(c.lowercased())) { view.sort = k; draw(view, snapshot) }
                }
                continue
            }
            next = nextTick(after: next, interval: interval)
            model.poll(budget: interval * 0.6)
            snapshot = model.snapshot()
            draw(view, snapshot)
            done += 1
        }
    }

    /// The next refresh: one interval on; when reading fell behind by more than that, one
    /// interval from now (no burst of empty intervals to catch up).
    static func nextTick(after previous: Date, interval: Double) -> Date {
        let next = previous.addingTimeInterval(interval)
        return next < Date() ? Date().addingTimeInterval(interval) : next
    }

    static func draw(_ view: TopView, _ snapshot: TopSnapshot) {
        var size = winsize()
        let ok = ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0
        let width = ok ? Int(size.ws_col) : 100, height = ok ? Int(size.ws_row) : 40
        let lines = view.screen(snapshot, width: width, height: height)
        write("\u{1B}[H" + lines.joined(separator: "\u{1B}[K\r\n") + "\u{1B}[K\u{1B}[J")
    }

    static func write(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            var done = 0
            while done < buf.count {
                let n = Glibc.write(STDOUT_FILENO, buf.baseAddress! + done, buf.count - done)
                if n <= 0 { if errno == EINTR { continue }; return }
                done += n
            }
        }
    }
}
