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
        var s = PlainJSONScanner(p: base.assumingMemoryBound(to: UInt8.self), n: line.count, i: plen, strings: strings)
        return s.http(keepHeaders: keepHeaders)
    }

    /// The record's keys, as bits of `seen`.
    fileprivate enum Key: Int {
        case ts, pid, tid, connId, role, scheme, method, host, path, status, interimResponses, peer, requestIndex, reused
        case version, responseVersion, requestStartTs, requestEndTs, responseStartTs, responseEndTs, ttfbUs, waitUs
        case durationUs, requestHeaderBytes, requestBodyBytes, responseHeaderBytes, responseBodyBytes, complete, upgraded
        case error, headers
    }
}

private extension PlainJSONScanner {
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

    /// The record's key named by the bytes `r`, nil for any other.
    func key(_ r: Range<Int>) -> HTTPLineDecoder.Key? {
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
