import XCTest
@testable import WedjatAnalysis

final class ConfigValidatorTests: XCTestCase {
    func testValidValuesGiveNoWarnings() {
        XCTAssertEqual(ConfigValidator.validate([
            "WEDJAT_DIR": "/tmp/w", "WEDJAT_DISABLE": "0", "WEDJAT_ARGV": "Full",
            "WEDJAT_FLUSH_MS": "10", "WEDJAT_MAX_CONNECTIONS": "1048576", "WEDJAT_LOG_MAX_MB": "1",
            "WEDJAT_LIB": "/opt/wedjat/lib/libwedjat.so", "PATH": "/bin",
        ]), [])
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_DISABLE": "yes"]), [])
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_DISABLE": ""]), [])
    }

    func testInvalidValuesGiveOneWarningEach() {
        XCTAssertEqual(ConfigValidator.validate([
            "WEDJAT_DIR": "", "WEDJAT_DISABLE": "maybe", "WEDJAT_ARGV": "all",
            "WEDJAT_FLUSH_MS": "5", "WEDJAT_MAX_CONNECTIONS": "1e6", "WEDJAT_LOG_MAX_MB": "-1",
        ]), [
            "WEDJAT_DISABLE=maybe: expected 0 or 1; using 0",
            "WEDJAT_DIR=: empty; using the default",
            "WEDJAT_ARGV=all: expected full, redact or none; using redact",
            "WEDJAT_FLUSH_MS=5: not an integer in 10..60000; using 200",
            "WEDJAT_MAX_CONNECTIONS=1e6: not an integer in 16..1048576; using 65536",
            "WEDJAT_LOG_MAX_MB=-1: not an integer in 1..1048576; using 256",
        ])
    }

    // Empty is not "redact nothing" (that is none): it warns, as the library does.
    func testRedactAndSegmentSettings() {
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_REDACT": ""]), ["WEDJAT_REDACT=: empty; use none to turn redaction off; using all"])
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_REDACT": "query,cookies"]),
                       ["WEDJAT_REDACT=query,cookies: expected all, none, or a list of query, userinfo, fragment; using all"])
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_REDACT": "Query,fragment", "WEDJAT_SEGMENT_MB": "0",
                                                 "WEDJAT_RETAIN_MB": "2048", "WEDJAT_SEGMENT_S": "3600",
                                                 "WEDJAT_DIR_RETAIN_MB": "10"]), [])
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_SEGMENT_MB": "-1"]), ["WEDJAT_SEGMENT_MB=-1: not an integer in 0..1048576; using 64"])
    }

    func testIntegerBounds() {
        XCTAssertEqual(ConfigValidator.parseInt("60000", lo: 10, hi: 60000), 60000)
        XCTAssertNil(ConfigValidator.parseInt("60001", lo: 10, hi: 60000))
        XCTAssertNil(ConfigValidator.parseInt("9", lo: 10, hi: 60000))
        XCTAssertNil(ConfigValidator.parseInt(" 20", lo: 10, hi: 60000))
        XCTAssertNil(ConfigValidator.parseInt("", lo: 10, hi: 60000))
        XCTAssertNil(ConfigValidator.parseInt("99999999999999999999999", lo: 10, hi: 60000))
    }

    func testLongDirAndUnknownNames() {
        let long = "/" + String(repeating: "d", count: 500)
        XCTAssertEqual(ConfigValidator.validate(["WEDJAT_DIR": long, "WEDJAT_FLUSHMS": "100", "WEDJATX": "1"]), [
            "WEDJAT_DIR=\(long.prefix(60)): path too long; using the default",
            "WEDJAT_FLUSHMS: unknown wedjat variable; ignored",
        ])
    }
}
