import XCTest
import CWedjatCommon

final class ConfigTests: XCTestCase {
    private func parse(_ env: [String: String]) -> wj_config {
        var cfg = wj_config()
        let box = Unmanaged.passRetained(EnvBox(env))
        defer { box.release() }
        wj_config_parse(&cfg, { name, ctx in
            let env = Unmanaged<EnvBox>.fromOpaque(ctx!).takeUnretainedValue()
            guard let name, let value = env.values[String(cString: name)] else { return nil }
            return env.cString(value)
        }, box.toOpaque(), 1000)
        return cfg
    }

    private func warnings(_ cfg: wj_config) -> [String] {
        var cfg = cfg
        return withUnsafeBytes(of: &cfg.warnings) { raw in
            (0..<Int(cfg.warning_count)).map { i in
                let w = Int(WJ_WARNING_LEN)
                return String(decoding: raw[(i * w)..<((i + 1) * w)].prefix(while: { $0 != 0 }), as: UTF8.self)
            }
        }
    }

    private func dir(_ cfg: wj_config) -> String {
        var cfg = cfg
        return withUnsafeBytes(of: &cfg.dir) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    func testDefaults() {
        let cfg = parse([:])
        XCTAssertEqual(cfg.flush_ms, 200)
        XCTAssertEqual(cfg.max_connections, 65536)
        XCTAssertEqual(cfg.log_max_mb, 256)
        XCTAssertEqual(cfg.argv_mode, Int32(WJ_ARGV_REDACT))
        XCTAssertEqual(cfg.disabled, 0)
        XCTAssertEqual(dir(cfg), "/tmp/wedjat-1000")
        XCTAssertEqual(warnings(cfg), [])
    }

    func testValidValues() {
        let cfg = parse(["WEDJAT_FLUSH_MS": "50", "WEDJAT_ARGV": "none", "WEDJAT_DIR": "/var/tmp/w",
                         "WEDJAT_DISABLE": "1", "WEDJAT_MAX_CONNECTIONS": "100", "WEDJAT_LOG_MAX_MB": "1"])
        XCTAssertEqual(cfg.flush_ms, 50)
        XCTAssertEqual(cfg.argv_mode, Int32(WJ_ARGV_NONE))
        XCTAssertEqual(dir(cfg), "/var/tmp/w")
        XCTAssertEqual(cfg.disabled, 1)
        XCTAssertEqual(cfg.max_connections, 100)
        XCTAssertEqual(cfg.log_max_mb, 1)
        XCTAssertEqual(warnings(cfg), [])
    }

    func testInvalidValuesWarnOnceAndKeepDefaults() {
        let cfg = parse(["WEDJAT_FLUSH_MS": "abc", "WEDJAT_ARGV": "everything", "WEDJAT_MAX_CONNECTIONS": "99999999999",
                         "WEDJAT_LOG_MAX_MB": "0", "WEDJAT_DISABLE": "maybe", "WEDJAT_DIR": ""])
        XCTAssertEqual(cfg.flush_ms, 200)
        XCTAssertEqual(cfg.argv_mode, Int32(WJ_ARGV_REDACT))
        XCTAssertEqual(cfg.max_connections, 65536)
        XCTAssertEqual(cfg.log_max_mb, 256)
        XCTAssertEqual(cfg.disabled, 0)
        XCTAssertEqual(dir(cfg), "/tmp/wedjat-1000")
        XCTAssertEqual(warnings(cfg), [
            "WEDJAT_DISABLE=maybe: expected 0 or 1; using 0",
            "WEDJAT_DIR=: empty; using the default",
            "WEDJAT_ARGV=everything: expected full, redact or none; using redact",
            "WEDJAT_FLUSH_MS=abc: not an integer in 10..60000; using 200",
            "WEDJAT_MAX_CONNECTIONS=99999999999: not an integer in 16..1048576; using 65536",
            "WEDJAT_LOG_MAX_MB=0: not an integer in 1..1048576; using 256",
        ])
    }

    func testEmptyRedactWarnsAndKeepsRedacting() {
        let cfg = parse(["WEDJAT_REDACT": ""])
        XCTAssertEqual(cfg.redact, Int32(WJ_REDACT_ALL))
        XCTAssertEqual(warnings(cfg), ["WEDJAT_REDACT=: empty; use none to turn redaction off; using all"])
        XCTAssertEqual(parse(["WEDJAT_REDACT": "none"]).redact, 0)
        let bad = parse(["WEDJAT_REDACT": "query,cookies"])
        XCTAssertEqual(bad.redact, Int32(WJ_REDACT_ALL), "an unknown word keeps all, not the words before it")
    }

    func testSegmentSettings() {
        let d = parse([:])
        XCTAssertEqual([d.segment_mb, d.segment_s, d.retain_mb, d.dir_retain_mb], [64, 0, 1024, 0])
        let cfg = parse(["WEDJAT_SEGMENT_MB": "0", "WEDJAT_SEGMENT_S": "3600", "WEDJAT_RETAIN_MB": "10", "WEDJAT_DIR_RETAIN_MB": "100"])
        XCTAssertEqual([cfg.segment_mb, cfg.segment_s, cfg.retain_mb, cfg.dir_retain_mb], [0, 3600, 10, 100])
        XCTAssertEqual(warnings(cfg), [])
    }

    func testUnknownVariableIsNamed() {
        var cfg = parse([:])
        let names: [String] = ["WEDJAT_FLUSHMS=10", "PATH=/bin", "WEDJAT_DIR=/x"]
        var entries: [UnsafeMutablePointer<CChar>?] = names.map { name in strdup(name) }
        entries.append(nil)
        entries.withUnsafeMutableBufferPointer { wj_config_warn_unknown(&cfg, $0.baseAddress) }
        entries.forEach { free($0) }
        XCTAssertEqual(warnings(cfg), ["WEDJAT_FLUSHMS: unknown wedjat variable; ignored"])
    }
}

// Keeps C strings alive while the C parser looks at them.
final class EnvBox {
    let values: [String: String]
    private var storage: [UnsafeMutablePointer<CChar>] = []
    init(_ values: [String: String]) { self.values = values }
    func cString(_ s: String) -> UnsafePointer<CChar> {
        let p = strdup(s)!
        storage.append(p)
        return UnsafePointer(p)
    }
    deinit { storage.forEach { free($0) } }
}
