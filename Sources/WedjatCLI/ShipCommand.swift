import ArgumentParser
import Foundation
import WedjatLive
#if canImport(Glibc)
import Glibc
#endif

/// `wedjat ship --otlp URL [DIR]`: streams what the logs of DIR gain to an OTLP/HTTP collector.
struct ShipCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ship",
        abstract: "Stream the logs of a directory to an OpenTelemetry collector as they grow.",
        discussion: """
            Follows DIR (new processes, new segments, growing files) and POSTs OTLP/HTTP to URL/v1/traces \
            and URL/v1/metrics: spans for HTTP exchanges and DNS lookups, the duration histograms of each \
            batch (delta temporality), and the processes' CPU, memory, threads, fds and event-loop \
            utilization; protobuf with gzip by default. A checkpoint per segment in DIR/.ship/ is written \
            after the collector accepts each batch, so a restart sends nothing twice and loses nothing; \
            DIR/.ship/<segment>.done tells the log writer's retention that a segment is sent. While the \
            collector is down, ship retries with backoff (up to 30 s) and reads no further: the logs are \
            the buffer. What it had to skip is said on stderr and in the summary at exit (SIGINT, SIGTERM, \
            or --until-idle). Details: docs/EXPORTS.md.
            """)

    @Option(help: "The collector's OTLP/HTTP base URL (http or https), e.g. http://127.0.0.1:4318.")
    var otlp: String

    @Argument(help: "The log directory. Default: $WEDJAT_DIR, else ./wedjat-logs.")
    var dir: String?

    @Flag(help: "Send OTLP/JSON instead of protobuf.")
    var json = false

    @Flag(help: "Send bodies uncompressed.")
    var noGzip = false

    @Option(help: "Seconds to wait for the collector's answer.")
    var timeout: Double = 10

    @Option(help: "Exit once everything is sent and nothing new came for this many seconds.")
    var untilIdle: Double?

    @Option(help: "Most spans in one request.")
    var spansPerRequest: Int = 1000

    func validate() throws {
        guard let url = URL(string: otlp), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil else {
            throw ValidationError("--otlp must be an http(s) URL such as http://127.0.0.1:4318 (got \(otlp))")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be above 0") }
        guard (1 ... 100_000).contains(spansPerRequest) else { throw ValidationError("--spans-per-request must be 1 to 100000") }
        if let untilIdle, untilIdle < 0 { throw ValidationError("--until-idle must be 0 or more") }
    }

    nonisolated(unsafe) static var stop: sig_atomic_t = 0

    func run() throws {
        let path = try followedDirectory(dir)
        var options = Shipper.Options(endpoint: otlp)
        options.json = json
        options.gzip = !noGzip
        options.timeoutSeconds = timeout
        options.spansPerRequest = spansPerRequest
        let shipper = Shipper(directory: path, options: options) { printError("wedjat ship: " + $0) }
        do { try shipper.prepare() } catch {
            printError("wedjat ship: error: \(error.description)")
            throw ExitCode(1)
        }
        for sig in [SIGINT, SIGTERM] { signal(sig) { _ in ShipCommand.stop = 1 } }
        var idleSince: Date?
        while ShipCommand.stop == 0 {
            let step = shipper.step()
            let now = Date()
            if step == .idle {
                idleSince = idleSince ?? now
                if let untilIdle, now.timeIntervalSince(idleSince!) >= untilIdle { break }
            } else {
                idleSince = nil
            }
            if step == .busy { continue }
            // Sleep in short slices so a signal is acted on at once.
            let until = now.addingTimeInterval(step == .waiting ? 0.25 : options.pollSeconds)
            while ShipCommand.stop == 0, Date() < until { usleep(50_000) }
        }
        for line in shipper.summary() { printError("wedjat ship: " + line) }
    }
}
