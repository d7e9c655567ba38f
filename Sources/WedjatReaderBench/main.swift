import WedjatAnalysis
#if canImport(Glibc)
import Glibc
#endif

// wedjat-reader-bench LOG: the reader's stages on LOG, one line each (scripts/bench/report.sh):
//   parse <lines> <bytes> <seconds>      JSONDocument's parse only
//   decode <lines> <bytes> <seconds>     parse + decode into records (headers checked, not decoded)
let args = CommandLine.arguments
guard args.count == 2 else {
    print("usage: wedjat-reader-bench LOG.ndjson")
    exit(2)
}
for (name, run) in [("parse", { ReaderBenchmark.parse(args[1]) }), ("decode", { ReaderBenchmark.decode(args[1], headers: false) })] {
    guard let t = run() else { print("cannot read \(args[1])"); exit(1) }
    print(name, t.lines, t.bytes, t.seconds)
}
