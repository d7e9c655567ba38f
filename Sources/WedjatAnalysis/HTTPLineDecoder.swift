import Foundation

/// `http` records, the busiest lines of a log, decoded straight from the line's bytes in one
/// pass: no parse tape, no search for each field, no string made for a key.
///
/// Only lines in the plain shape wedjat writes are taken: `{"type":"http",` first, every
/// other key one of the record's own (each at most once), values of the types the record wants
/// (or null), strings of printable ASCII without escapes, integers without fraction or
/// exponent, `headers` an object of such strings. Anything else (an escape, a byte over 0x7F,
/// a key of a newer writer, HTTP/2's `stream_id`, a wrong type, invalid JSON, a repeated key)
/// returns nil, and the line goes through `JSONDocument` and `Record.decode(_:)`, which decide
/// what it is and word any error. So a line taken here is valid JSON and decodes to the very
/// record the general path makes from it (LogReaderTests' `HTTPLineDecoderTests` hold the two
/// side by side).
enum HTTPLineDecoder {
    private static let prefix: StaticString = #"{"type":"http","#

    /// `strings`: the reading thread's (StringCache.swift).
    static func decode(_ line: UnsafeRawBufferPointer, keepHeaders: Bool, strings: StringCache = StringCache()) -> HTTPRecord? {
        let plen = prefix.utf8CodeUnitCount
        guard line.count > plen, let base = line.baseAddress,
              memcmp(base, prefix.utf8Start, plen) == 0 else { return nil }
        var s = Scanner(p: base.assumingMemoryBound(to: UInt8.self), n: line.count, i: plen, strings: strings)
        return s.http(keepHeaders: keepHeaders)
    }

    /// The record's keys, as bits of `seen`.
    private enum Key: Int {
        case ts, pid, tid, connId, role, scheme, method, host, path, status, interimResponses, peer, requestIndex, reused
        case version, responseVersion, requestStartTs, requestEndTs, responseStartTs, responseEndTs, ttfbUs, waitUs
        case durationUs, requestHeaderBytes, requestBodyBytes, responseHeaderBytes, responseBodyBytes, complete, upgraded
        case error, headers
    }

    private struct Scanner {
        let p: UnsafePointer<UInt8>
        let n: Int
        var i: Int
        let strings: StringCache

        @inline(__always) mutating func skipSpace() {
            while i < n {
                let c = p[i]
                guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
                i += 1
            }
        }

        /// After an object's member: true past a `,` (another member follows), false past the
        /// closing `}`, nil for anything else.
        @inline(__always) mutating func nextMember() -> Bool? {
            skipSpace()
            guard i < n else { return nil }
            if p[i] == UInt8(ascii: ",") {
                i += 1
                skipSpace()
                return true
            }
            guard p[i] == UInt8(ascii: "}") else { return nil }
            i += 1
            return false
        }

        /// A string of printable ASCII without escapes, the opening quote at `i`: its bytes' range.
        @inline(__always) mutating func plainString() -> Range<Int>? {
            guard i < n, p[i] == UInt8(ascii: "\"") else { return nil }
            i += 1
            let start = i
            // Eight bytes at a time while none is a quote, a backslash, a control character,
            // DEL or non-ASCII (each test is exact: nonzero only when some byte matches); the
            // word that has one goes through the byte loop below.
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            @inline(__always) func hasZero(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
            while n - i >= 8 {
                let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                let special = hasZero(w ^ (ones &* 0x22)) | hasZero(w ^ (ones &* 0x5C)) | hasZero(w ^ (ones &* 0x7F))
                    | (w & highs) | ((w &- ones &* 0x20) & ~w & highs)
                if special != 0 { break }
                i += 8
            }
            while i < n {
                let c = p[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    return start ..< i - 1
                }
                // Control characters (invalid), escapes and non-ASCII: the general path's.
                guard c >= 0x20, c < 0x7F, c != UInt8(ascii: "\\") else { return nil }
                i += 1
            }
            return nil
        }

        @inline(__always) func text(_ r: Range<Int>) -> String {
            strings.string(p + r.lowerBound, r.count)
        }

        /// `null`: consumed, true.
        @inline(__always) mutating func null() -> Bool {
            guard n - i >= 4, p[i] == UInt8(ascii: "n"), p[i + 1] == UInt8(ascii: "u"), p[i + 2] == UInt8(ascii: "l"),
                  p[i + 3] == UInt8(ascii: "l") else { return false }
            i += 4
            return true
        }

        /// .some(nil) for null; nil when the value is not a plain string or null.
        @inline(__always) mutating func optionalString() -> String?? {
            if null() { return .some(nil) }
            guard let r = plainString() else { return nil }
            return .some(text(r))
        }

        /// An integer as JSON writes it (no fraction, no exponent, no leading zero) that fits
        /// in 64 bits; .some(nil) for null.
        @inline(__always) mutating func optionalInt() -> Int64?? {
            if null() { return .some(nil) }
            guard i < n else { return nil }
            let negative = p[i] == UInt8(ascii: "-")
            if negative { i += 1 }
            guard i < n, p[i] >= 0x30, p[i] <= 0x39 else { return nil }
            if p[i] == 0x30 {
                i += 1
                // `0` alone (`01` is not JSON); `0.5`, `0e1` are the general path's.
                if i < n, (p[i] >= 0x30 && p[i] <= 0x39) || p[i] == UInt8(ascii: ".") || p[i] | 0x20 == UInt8(ascii: "e") { return nil }
                return .some(0)
            }
            let start = i
            var value: Int64 = 0
            // Eight digits at a time (a timestamp has 16), while all eight are digits: each
            // byte 0x30-0x3F, and still at most 0x3F with 6 added (no carry between bytes);
            // then the eight turned into their value by three multiplications (simdjson's
            // parse_eight_digits_unrolled). Past 16 digits, one by one.
            while n - i >= 8, i - start <= 8 {
                let w = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                guard w & 0xF0F0_F0F0_F0F0_F0F0 == 0x3030_3030_3030_3030,
                      (w &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0 == 0x3030_3030_3030_3030 else { break }
                var v = ((w & 0x0F0F_0F0F_0F0F_0F0F) &* 2561) >> 8
                v = ((v & 0x00FF_00FF_00FF_00FF) &* 6_553_601) >> 16
                v = ((v & 0x0000_FFFF_0000_FFFF) &* 42_949_672_960_001) >> 32
                value = value &* 100_000_000 &+ Int64(v)
                i += 8
            }
            while i < n, p[i] >= 0x30, p[i] <= 0x39 {
                value = value &* 10 &+ Int64(p[i] &- 0x30)
                i += 1
            }
            if i - start <= 18 {
                // Up to 18 digits cannot overflow.
                if negative { value = -value }
            } else {
                value = 0
                for k in start ..< i {
                    let d = Int64(p[k] - 0x30)
                    let (m, o1) = value.multipliedReportingOverflow(by: 10)
                    let (v, o2) = negative ? m.subtractingReportingOverflow(d) : m.addingReportingOverflow(d)
                    if o1 || o2 { return nil }
                    value = v
                }
            }
            if i < n, p[i] == UInt8(ascii: ".") || p[i] | 0x20 == UInt8(ascii: "e") { return nil }
            return .some(value)
        }

        @inline(__always) mutating func optionalBool() -> Bool?? {
            if null() { return .some(nil) }
            if n - i >= 4, p[i] == UInt8(ascii: "t"), p[i + 1] == UInt8(ascii: "r"), p[i + 2] == UInt8(ascii: "u"),
               p[i + 3] == UInt8(ascii: "e") {
                i += 4
                return .some(true)
            }
            if n - i >= 5, p[i] == UInt8(ascii: "f"), p[i + 1] == UInt8(ascii: "a"), p[i + 2] == UInt8(ascii: "l"),
               p[i + 3] == UInt8(ascii: "s"), p[i + 4] == UInt8(ascii: "e") {
                i += 5
                return .some(false)
            }
            return nil
        }

        /// `headers`: an object of plain strings (decoded when `keep`), or null.
        mutating func headers(keep: Bool) -> [String: String]?? {
            if null() { return .some(nil) }
            guard i < n, p[i] == UInt8(ascii: "{") else { return nil }
            i += 1
            var out: [String: String] = [:]
            if keep { out.reserveCapacity(8) }
            skipSpace()
            if i < n, p[i] == UInt8(ascii: "}") {
                i += 1
                return .some(out)
            }
            while true {
                guard let k = plainString() else { return nil }
                skipSpace()
                guard i < n, p[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                skipSpace()
                guard let v = plainString() else { return nil }
                if keep { out[text(k)] = text(v) }
                guard let more = nextMember() else { return nil }
                if more { continue }
                return .some(out)
            }
        }

        @inline(__always) func keyIs(_ r: Range<Int>, _ name: StaticString) -> Bool {
            r.count == name.utf8CodeUnitCount && memcmp(p + r.lowerBound, name.utf8Start, r.count) == 0
        }

        /// The record's key named by the bytes `r`, nil for any other.
        func key(_ r: Range<Int>) -> Key? {
            switch r.count {
            case 2: return keyIs(r, "ts") ? .ts : nil
            case 3: return keyIs(r, "pid") ? .pid : keyIs(r, "tid") ? .tid : nil
            case 4: return keyIs(r, "role") ? .role : keyIs(r, "host") ? .host : keyIs(r, "path") ? .path
                : keyIs(r, "peer") ? .peer : nil
            case 5: return keyIs(r, "error") ? .error : nil
            case 6: return keyIs(r, "scheme") ? .scheme : keyIs(r, "method") ? .method : keyIs(r, "status") ? .status
                : keyIs(r, "reused") ? .reused : nil
            case 7: return keyIs(r, "conn_id") ? .connId : keyIs(r, "version") ? .version : keyIs(r, "ttfb_us") ? .ttfbUs
                : keyIs(r, "wait_us") ? .waitUs : keyIs(r, "headers") ? .headers : nil
            case 8: return keyIs(r, "complete") ? .complete : keyIs(r, "upgraded") ? .upgraded : nil
            case 11: return keyIs(r, "duration_us") ? .durationUs : nil
            case 13: return keyIs(r, "request_index") ? .requestIndex : nil
            case 14: return keyIs(r, "request_end_ts") ? .requestEndTs : nil
            case 15: return keyIs(r, "response_end_ts") ? .responseEndTs : nil
            case 16: return keyIs(r, "response_version") ? .responseVersion : keyIs(r, "request_start_ts") ? .requestStartTs : nil
            case 17: return keyIs(r, "interim_responses") ? .interimResponses : keyIs(r, "response_start_ts") ? .responseStartTs : nil
            case 18: return keyIs(r, "request_body_bytes") ? .requestBodyBytes : nil
            case 19: return keyIs(r, "response_body_bytes") ? .responseBodyBytes : nil
            case 20: return keyIs(r, "request_header_bytes") ? .requestHeaderBytes : nil
            case 21: return keyIs(r, "response_header_bytes") ? .responseHeaderBytes : nil
            default: return nil
            }
        }

        /// The members after `"type":"http",` up to the closing brace and the end of the line.
        mutating func http(keepHeaders: Bool) -> HTTPRecord? {
            var seen: UInt64 = 0
            var ts: Int64?, pid: Int64?, tid: Int64?, connId: Int64?, status: Int64?, interim: Int64?, requestIndex: Int64?
            var role: String?, scheme: String?, method: String?, host: String?, path: String?, peer: String?
            var version: String?, responseVersion: String?, error: String?
            var reused: Bool?, complete: Bool?, upgraded: Bool?
            var requestStartTs: Int64?, requestEndTs: Int64?, responseStartTs: Int64?, responseEndTs: Int64?
            var ttfbUs: Int64?, waitUs: Int64?, durationUs: Int64?
            var requestHeaderBytes: Int64?, requestBodyBytes: Int64?, responseHeaderBytes: Int64?, responseBodyBytes: Int64?
            var headerMap: [String: String]?
            skipSpace()
            while true {
                guard let k = plainString(), let field = key(k) else { return nil }
                let bit: UInt64 = 1 << UInt64(field.rawValue)
                guard seen & bit == 0 else { return nil }
                seen |= bit
                skipSpace()
                guard i < n, p[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                skipSpace()
                switch field {
                case .ts: guard let v = optionalInt() else { return nil }; ts = v
                case .pid: guard let v = optionalInt() else { return nil }; pid = v
                case .tid: guard let v = optionalInt() else { return nil }; tid = v
                case .connId: guard let v = optionalInt() else { return nil }; connId = v
                case .status: guard let v = optionalInt() else { return nil }; status = v
                case .interimResponses: guard let v = optionalInt() else { return nil }; interim = v
                case .requestIndex: guard let v = optionalInt() else { return nil }; requestIndex = v
                case .requestStartTs: guard let v = optionalInt() else { return nil }; requestStartTs = v
                case .requestEndTs: guard let v = optionalInt() else { return nil }; requestEndTs = v
                case .responseStartTs: guard let v = optionalInt() else { return nil }; responseStartTs = v
                case .responseEndTs: guard let v = optionalInt() else { return nil }; responseEndTs = v
                case .ttfbUs: guard let v = optionalInt() else { return nil }; ttfbUs = v
                case .waitUs: guard let v = optionalInt() else { return nil }; waitUs = v
                case .durationUs: guard let v = optionalInt() else { return nil }; durationUs = v
                case .requestHeaderBytes: guard let v = optionalInt() else { return nil }; requestHeaderBytes = v
                case .requestBodyBytes: guard let v = optionalInt() else { return nil }; requestBodyBytes = v
                case .responseHeaderBytes: guard let v = optionalInt() else { return nil }; responseHeaderBytes = v
                case .responseBodyBytes: guard let v = optionalInt() else { return nil }; responseBodyBytes = v
                case .role: guard let v = optionalString() else { return nil }; role = v
                case .scheme: guard let v = optionalString() else { return nil }; scheme = v
                case .method: guard let v = optionalString() else { return nil }; method = v
                case .host: guard let v = optionalString() else { return nil }; host = v
                case .path: guard let v = optionalString() else { return nil }; path = v
                case .peer: guard let v = optionalString() else { return nil }; peer = v
                case .version: guard let v = optionalString() else { return nil }; version = v
                case .responseVersion: guard let v = optionalString() else { return nil }; responseVersion = v
                case .error: guard let v = optionalString() else { return nil }; error = v
                case .reused: guard let v = optionalBool() else { return nil }; reused = v
                case .complete: guard let v = optionalBool() else { return nil }; complete = v
                case .upgraded: guard let v = optionalBool() else { return nil }; upgraded = v
                case .headers: guard let v = headers(keep: keepHeaders) else { return nil }; headerMap = v
                }
                guard let more = nextMember() else { return nil }
                if more { continue }
                break
            }
            skipSpace()
            // Required: ts, pid, role (a missing or null one is the general path's error).
            guard i == n, let ts, let pid, let role else { return nil }
            var h = HTTPRecord(
                ts: ts, pid: Int(truncatingIfNeeded: pid), tid: tid.map { Int(truncatingIfNeeded: $0) }, connId: connId,
                role: role, scheme: scheme, method: method, host: host, path: path,
                status: status.map { Int(truncatingIfNeeded: $0) }, interimResponses: interim.map { Int(truncatingIfNeeded: $0) },
                peer: peer, requestIndex: requestIndex.map { Int(truncatingIfNeeded: $0) }, reused: reused,
                version: version, responseVersion: responseVersion,
                requestStartTs: requestStartTs, requestEndTs: requestEndTs, responseStartTs: responseStartTs,
                responseEndTs: responseEndTs, ttfbUs: ttfbUs, waitUs: waitUs, durationUs: durationUs,
                requestHeaderBytes: requestHeaderBytes ?? 0, requestBodyBytes: requestBodyBytes ?? 0,
                responseHeaderBytes: responseHeaderBytes ?? 0, responseBodyBytes: responseBodyBytes ?? 0,
                complete: complete, upgraded: upgraded ?? false, error: error, headers: headerMap ?? [:])
            h.takeDurationsFromTimes()
            return h
        }
    }
}
