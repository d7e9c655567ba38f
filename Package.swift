// swift-tools-version: 6.0
import PackageDescription

// libwedjat.so is the C interposer (CShims/interposer + CShims/common), built by
// scripts/build-lib.sh with cc. It loads libwedjat-agent.so (WedjatAgent + WedjatCore, the
// Swift aggregator) the first time there is something to aggregate; scripts/build-lib.sh
// compiles those two targets' sources as Embedded Swift for it. Here they are ordinary targets
// (the unit tests, the benchmarks). Neither may pull in Foundation, Dispatch or Concurrency,
// nor use what Embedded Swift lacks (existentials of Error, dynamic casts, reflection).
let agentSwiftFlags: [SwiftSetting] = [
    .unsafeFlags([
        "-Xfrontend", "-disable-implicit-concurrency-module-import",
        "-Xfrontend", "-disable-implicit-string-processing-module-import",
    ]),
]

let package = Package(
    name: "wedjat",
    products: [
        .executable(name: "wedjat-cli", targets: ["WedjatCLI"]),
        .executable(name: "wedjat-http-bench", targets: ["WedjatHTTPBench"]),
        .executable(name: "wedjat-reader-bench", targets: ["WedjatReaderBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The tests' reference for DurationStats' buckets and percentiles (BucketCounts.swift).
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
    ],
    targets: [
        // Event layout, ring buffer, log file writer, configuration parser: no hooks, unit-testable.
        .target(name: "CWedjatCommon", path: "CShims/common",
                cSettings: [.unsafeFlags(["-O2", "-fvisibility=hidden"])]),
        // In-process aggregation: events -> records -> NDJSON lines. No Foundation.
        .target(name: "WedjatCore", dependencies: ["CWedjatCommon", "CWedjatNghttp2"], swiftSettings: agentSwiftFlags),
        // libnghttp2's HPACK decoder, declared here and dlopen'ed on first use (no link-time
        // dependency): the HTTP/2 decoder's header blocks.
        .target(name: "CWedjatNghttp2", path: "Sources/CWedjatNghttp2",
                cSettings: [.unsafeFlags(["-O2", "-fvisibility=hidden"])]),
        // libwedjat-agent.so's entry point (wedjat_agent_init) and glue to WedjatCore.
        .target(name: "WedjatAgent", dependencies: ["WedjatCore", "CWedjatCommon"], swiftSettings: agentSwiftFlags),
        // libelf and libdw (elfutils) for the symbolizer, and libstdc++'s C++ demangler.
        .systemLibrary(name: "CElfutils", path: "Sources/CElfutils"),
        // Stall stacks: return addresses -> function+offset, file:line, from the binaries on disk.
        .target(name: "WedjatSymbols", dependencies: ["CElfutils"]),
        // Post-run analysis: log reader, process tree, report. Foundation is fine here.
        // Release builds leave out the dynamic exclusivity checks: the reader's parse buffers
        // are class properties read and written per byte and per field, where the checks cost
        // about 4% of `wedjat report`'s time (docs/PERFORMANCE.md); debug builds, which the
        // tests run, keep them, so a violation still traps there.
        .target(name: "WedjatAnalysis", dependencies: ["WedjatSymbols"],
                swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
        // zlib (gzip for `wedjat ship`), from the system.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // Following growing logs: `wedjat top` and `wedjat ship` (OTLP/HTTP protobuf).
        .target(name: "WedjatLive", dependencies: ["WedjatAnalysis", "CZlib"]),
        .executableTarget(name: "WedjatCLI", dependencies: [
            "WedjatAnalysis", "WedjatLive",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Benchmark of the HTTP/1.x parser (scripts/bench/http_parse.sh).
        .executableTarget(name: "WedjatHTTPBench", dependencies: ["WedjatCore"]),
        // The log reader's stages, beside simdjson's parser (scripts/bench/report.sh).
        .executableTarget(name: "WedjatReaderBench", dependencies: ["WedjatAnalysis"]),
        .testTarget(name: "WedjatCoreTests", dependencies: ["WedjatCore", "CWedjatCommon", "CWedjatNghttp2"]),
        .testTarget(name: "WedjatLiveTests", dependencies: ["WedjatLive", "WedjatAnalysis"]),
        .testTarget(name: "WedjatAnalysisTests", dependencies: ["WedjatAnalysis", "WedjatSymbols", .product(name: "Histogram", package: "hdrhistogram-swift")], exclude: ["Fixtures", "Golden"]),
    ],
    swiftLanguageModes: [.v5]
)
