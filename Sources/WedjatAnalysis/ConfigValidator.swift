/// Checks WEDJAT_* variables the way the library will parse them (mirror of
/// CShims/common/config.c), so `wedjat run` can say what is wrong before the program starts
/// instead of the user finding `config_warnings` in the logs afterwards. Same rules, same
/// wording: `NAME=value: why`.
public enum ConfigValidator {
    public static let knownVariables = [
        "WEDJAT_DIR", "WEDJAT_DISABLE", "WEDJAT_ARGV", "WEDJAT_FLUSH_MS",
        "WEDJAT_MAX_CONNECTIONS", "WEDJAT_LOG_MAX_MB", "WEDJAT_LIB", "WEDJAT_HTTP", "WEDJAT_HTTP_RECORDS",
        "WEDJAT_CAPTURE_BYTES", "WEDJAT_REDACT", "WEDJAT_SAMPLE_MS", "WEDJAT_STALL_MS",
        "WEDJAT_SEGMENT_MB", "WEDJAT_SEGMENT_S", "WEDJAT_RETAIN_MB", "WEDJAT_DIR_RETAIN_MB",
    ]

    /// The library's limits: (name, lowest, highest, default).
    public static let integerSettings: [(name: String, lo: Int, hi: Int, def: Int)] = [
        ("WEDJAT_FLUSH_MS", 10, 60000, 200),
        ("WEDJAT_MAX_CONNECTIONS", 16, 1_048_576, 65536),
        ("WEDJAT_LOG_MAX_MB", 1, 1_048_576, 256),
        ("WEDJAT_CAPTURE_BYTES", 0, 65536, 8192),
        ("WEDJAT_HTTP_RECORDS", 0, 1_000_000, 200),
        ("WEDJAT_STALL_MS", 0, 3_600_000, 250),
        ("WEDJAT_SEGMENT_MB", 0, 1_048_576, 64),
        ("WEDJAT_SEGMENT_S", 0, 31_536_000, 0),
        ("WEDJAT_RETAIN_MB", 0, 1_048_576, 1024),
        ("WEDJAT_DIR_RETAIN_MB", 0, 1_048_576, 0),
    ]

    /// The library keeps 100 bytes of its path buffer for the file name.
    static let maxDirLength = 512 - 100

    /// One warning per invalid value and per unknown WEDJAT_* name, in a stable order.
    public static func validate(_ env: [String: String]) -> [String] {
        var warnings: [String] = []
        func warn(_ name: String, _ value: String, _ why: String) {
            warnings.append("\(name)=\(String(value.prefix(60))): \(why)")
        }

        if let v = env["WEDJAT_DISABLE"] {
            let yes = ["1", "true", "yes", "on"], no = ["0", "false", "no", "off", ""]
            if !(yes + no).contains(v.lowercased()) { warn("WEDJAT_DISABLE", v, "expected 0 or 1; using 0") }
        }
        if let v = env["WEDJAT_DIR"] {
            if v.isEmpty {
                warn("WEDJAT_DIR", v, "empty; using the default")
            } else if v.utf8.count > maxDirLength {
                warn("WEDJAT_DIR", v, "path too long; using the default")
            }
        }
        if let v = env["WEDJAT_ARGV"], !["full", "redact", "none"].contains(v.lowercased()) {
            warn("WEDJAT_ARGV", v, "expected full, redact or none; using redact")
        }
        if let v = env["WEDJAT_REDACT"] {
            let words = ["query", "userinfo", "fragment"]
            if v.isEmpty {
                warn("WEDJAT_REDACT", v, "empty; use none to turn redaction off; using all")
            } else if !["all", "none"].contains(v.lowercased()),
                      !v.split(separator: ",", omittingEmptySubsequences: false).allSatisfy({ words.contains($0.lowercased()) }) {
                warn("WEDJAT_REDACT", v, "expected all, none, or a list of query, userinfo, fragment; using all")
            }
        }
        for s in integerSettings {
            if let v = env[s.name], parseInt(v, lo: s.lo, hi: s.hi) == nil {
                warn(s.name, v, "not an integer in \(s.lo)..\(s.hi); using \(s.def)")
            }
        }
        // A typo in a name silently does nothing; say so.
        for name in env.keys.sorted() where name.hasPrefix("WEDJAT_") && !knownVariables.contains(name) {
            warnings.append("\(String(name.prefix(60))): unknown wedjat variable; ignored")
        }
        return warnings
    }

    /// Decimal digits only (no sign, no spaces), within lo...hi: exactly what the library accepts.
    public static func parseInt(_ s: String, lo: Int, hi: Int) -> Int? {
        guard !s.isEmpty else { return nil }
        var v = 0
        for c in s.utf8 {
            guard c >= 0x30, c <= 0x39 else { return nil }
            v = v * 10 + Int(c - 0x30)
            if v > hi { return nil }
        }
        return v >= lo ? v : nil
    }
}
