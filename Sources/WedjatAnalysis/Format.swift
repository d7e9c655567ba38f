#if canImport(Glibc)
import Glibc
#endif

/// Human formatting shared by the text report and `wedjat run`'s summary. Pure functions of
/// their input (UTC, no locale) so golden files are stable on any machine.
public enum Format {
    /// `512 B`, `1.2 KiB`, `3.4 MiB`.
    public static func bytes(_ n: Int64) -> String {
        if n < 1024 { return "\(n) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var v = Double(n) / 1024
        var u = 0
        while v >= 1024, u < units.count - 1 { v /= 1024; u += 1 }
        return fixed(v, 1) + " " + units[u]
    }

    /// Milliseconds with three decimals, for latency columns: `23.456`.
    public static func ms(_ us: Int64) -> String { fixed(Double(us) / 1000, 3) }

    /// `850 us`, `23.456 ms`, `1.204 s`, `2m03.4s`, `1h02m03s`.
    public static func duration(_ us: Int64) -> String {
        if us < 0 { return "-" + duration(-us) }
        if us < 1000 { return "\(us) us" }
        if us < 1_000_000 { return fixed(Double(us) / 1000, 3) + " ms" }
        if us < 60_000_000 { return fixed(Double(us) / 1_000_000, 3) + " s" }
        let s = us / 1_000_000
        if s < 3600 {
            let tenths = (us % 60_000_000) / 100_000
            return "\(s / 60)m" + pad2(tenths / 10) + ".\(tenths % 10)s"
        }
        return "\(s / 3600)h" + pad2(s / 60 % 60) + "m" + pad2(s % 60) + "s"
    }

    /// Three significant digits, for table columns: `850 us`, `6.22 ms`, `50.7 ms`, `401 ms`,
    /// `1.20 s`, `2m03.4s`.
    public static func shortDuration(_ us: Int64) -> String {
        if us < 0 { return "-" + shortDuration(-us) }
        if us < 1000 { return "\(us) us" }
        func sig(_ v: Double, _ unit: String) -> String {
            let digits = v < 9.995 ? 2 : v < 99.95 ? 1 : 0
            return fixed(v, digits) + " " + unit
        }
        if us < 999_500 { return sig(Double(us) / 1000, "ms") }
        if us < 60_000_000 { return sig(Double(us) / 1_000_000, "s") }
        return duration(us)
    }

    /// `2025-11-22 03:35:10.123` (UTC) from microseconds since the epoch.
    public static func timestamp(_ us: Int64) -> String {
        var t = time_t(us / 1_000_000)
        var tm = tm()
        gmtime_r(&t, &tm)
        let msec = Int((us % 1_000_000) / 1000)
        return "\(Int(tm.tm_year) + 1900)-\(pad2(Int64(tm.tm_mon) + 1))-\(pad2(Int64(tm.tm_mday))) "
            + "\(pad2(Int64(tm.tm_hour))):\(pad2(Int64(tm.tm_min))):\(pad2(Int64(tm.tm_sec))).\(pad3(msec))"
    }

    /// `1 error`, `2 errors`.
    public static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
    }

    /// `12.34%` of a 0...1 ratio; `<0.01%` for a small non-zero one (6 errors in 263,900
    /// requests are not 0.00%). The text report and the HTML page both say it so.
    public static func percent(_ r: Double) -> String {
        r > 0 && r < 0.00005 ? "<0.01%" : fixed(r * 100, 2) + "%"
    }

    public static func fixed(_ v: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0 ..< decimals { scale *= 10 }
        let r = Int64((abs(v) * scale).rounded())
        let whole = r / Int64(scale)
        var frac = String(r % Int64(scale))
        while frac.count < decimals { frac = "0" + frac }
        return (v < 0 && r != 0 ? "-" : "") + "\(whole)" + (decimals > 0 ? "." + frac : "")
    }

    private static func pad2(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    private static func pad3(_ n: Int) -> String { n < 10 ? "00\(n)" : n < 100 ? "0\(n)" : "\(n)" }
}
