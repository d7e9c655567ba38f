import Foundation

/// `connection` records (a quarter of a busy client's log by bytes) decoded straight from the
/// line's bytes in one pass, as HTTPLineDecoder does for `http` lines.
///
/// Only lines in the plain shape wedjat writes are taken: `{"type":"connection",` first, every
/// other key one of the record's own or one wedjat writes that the record leaves out (the
/// connect-end and first/last byte times, `tcp_info`), each at most once; values of the types
/// the record wants (or null); strings of printable ASCII without escapes; integers without
/// fraction or exponent; `tls` an object of its own keys. Anything else (an escape, a byte over
/// 0x7F, a key of a newer writer, the rare `http_undecoded` and `inherited_from` objects, a wrong
/// type, invalid JSON, a repeated key) returns nil, and the line goes through `JSONDocument` and
/// `Record.decode(_:)`, which decide what it is and word any error. So a line taken here is
/// valid JSON and decodes to the very record the general path makes from it
/// (`ConnectionLineDecoderTests` hold the two side by side).
enum ConnectionLineDecoder {
    private static let prefix: StaticString = #"{"type":"connection","#

    /// `strings`: the reading thread's (StringCache.swift).
    static func decode(_ line: UnsafeRawBufferPointer, strings: StringCache = StringCache()) -> ConnectionRecord? {
        let plen = prefix.utf8CodeUnitCount
        guard line.count > plen, let base = line.baseAddress,
              memcmp(base, prefix.utf8Start, plen) == 0 else { return nil }
        var s = PlainJSONScanner(p: base.assumingMemoryBound(to: UInt8.self), n: line.count, i: plen, strings: strings)
        return s.connection()
    }

    /// The record's keys and the ones it leaves out (`ignored*`), as bits of `seen`.
    fileprivate enum Key: Int {
        case ts, pid, tid, connId, fd, transport, family, role, local, peer, openTs, closeTs, durationUs, connectUs
        case bytesIn, bytesOut, error, openAtExit, host, errorPhase, tls, shutdownTs, httpRequests, dnsUs
        case httpVersion, httpStopped, httpNone, forkedWhileOpen
        case ignoredConnectEndTs, ignoredFirstByteOutTs, ignoredFirstByteInTs, ignoredLastByteTs, ignoredTCPInfo
    }

    /// The `tls` object's keys, as bits of its `seen`.
    fileprivate enum TLSKey: Int {
        case library, startTs, endTs, handshakeUs, version, alpn, phaseUs
    }
}

private extension PlainJSONScanner {
    /// The record's key named by the bytes `r`, nil for any other.
    func connectionKey(_ r: Range<Int>) -> ConnectionLineDecoder.Key? {
        switch r.count {
        case 2: return keyIs(r, "ts") ? .ts : keyIs(r, "fd") ? .fd : nil
        case 3: return keyIs(r, "pid") ? .pid : keyIs(r, "tid") ? .tid : keyIs(r, "tls") ? .tls : nil
        case 4: return keyIs(r, "role") ? .role : keyIs(r, "peer") ? .peer : keyIs(r, "host") ? .host : nil
        case 5: return keyIs(r, "local") ? .local : keyIs(r, "error") ? .error : nil
        case 6: return keyIs(r, "family") ? .family : keyIs(r, "dns_us") ? .dnsUs : nil
        case 7: return keyIs(r, "conn_id") ? .connId : keyIs(r, "open_ts") ? .openTs : nil
        case 8: return keyIs(r, "close_ts") ? .closeTs : keyIs(r, "bytes_in") ? .bytesIn : keyIs(r, "tcp_info") ? .ignoredTCPInfo : nil
        case 9: return keyIs(r, "transport") ? .transport : keyIs(r, "bytes_out") ? .bytesOut : keyIs(r, "http_none") ? .httpNone : nil
        case 10: return keyIs(r, "connect_us") ? .connectUs : nil
        case 11: return keyIs(r, "duration_us") ? .durationUs : keyIs(r, "shutdown_ts") ? .shutdownTs : keyIs(r, "error_phase") ? .errorPhase : nil
        case 12: return keyIs(r, "open_at_exit") ? .openAtExit : keyIs(r, "http_version") ? .httpVersion
            : keyIs(r, "http_stopped") ? .httpStopped : keyIs(r, "last_byte_ts") ? .ignoredLastByteTs : nil
        case 13: return keyIs(r, "http_requests") ? .httpRequests : nil
        case 14: return keyIs(r, "connect_end_ts") ? .ignoredConnectEndTs : nil
        case 16: return keyIs(r, "first_byte_in_ts") ? .ignoredFirstByteInTs : nil
        case 17: return keyIs(r, "first_byte_out_ts") ? .ignoredFirstByteOutTs : keyIs(r, "forked_while_open") ? .forkedWhileOpen : nil
        default: return nil
        }
    }

    func tlsKey(_ r: Range<Int>) -> ConnectionLineDecoder.TLSKey? {
        switch r.count {
        case 4: return keyIs(r, "alpn") ? .alpn : nil
        case 6: return keyIs(r, "end_ts") ? .endTs : nil
        case 7: return keyIs(r, "library") ? .library : keyIs(r, "version") ? .version : nil
        case 8: return keyIs(r, "start_ts") ? .startTs : keyIs(r, "phase_us") ? .phaseUs : nil
        case 12: return keyIs(r, "handshake_us") ? .handshakeUs : nil
        default: return nil
        }
    }

    /// `tls`: an object of its own keys (each once), or null.
    mutating func tlsObject() -> TLSInfo?? {
        if null() { return .some(nil) }
        guard i < n, p[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        var t = TLSInfo()
        skipSpace()
        if i < n, p[i] == UInt8(ascii: "}") {
            i += 1
            return .some(t)
        }
        var seen: UInt64 = 0
        while true {
            guard let k = plainString(), let field = tlsKey(k) else { return nil }
            let bit: UInt64 = 1 << UInt64(field.rawValue)
            guard seen & bit == 0 else { return nil }
            seen |= bit
            guard colon() else { return nil }
            switch field {
            case .library: guard let v = optionalString() else { return nil }; t.library = v
            case .version: guard let v = optionalString() else { return nil }; t.version = v
            case .alpn: guard let v = optionalString() else { return nil }; t.alpn = v
            case .startTs: guard let v = optionalInt() else { return nil }; t.startTs = v
            case .endTs: guard let v = optionalInt() else { return nil }; t.endTs = v
            case .handshakeUs: guard let v = optionalInt() else { return nil }; t.handshakeUs = v
            case .phaseUs: guard let v = optionalInt() else { return nil }; t.phaseUs = v
            }
            guard let more = nextMember() else { return nil }
            if !more { return .some(t) }
        }
    }

    /// `tcp_info`, which the record leaves out: null or an object of plain keys with integer or
    /// null values (only checked, so that the line is known to be valid JSON).
    mutating func skipTCPInfo() -> Bool {
        if null() { return true }
        guard i < n, p[i] == UInt8(ascii: "{") else { return false }
        i += 1
        skipSpace()
        if i < n, p[i] == UInt8(ascii: "}") {
            i += 1
            return true
        }
        while true {
            guard plainString() != nil, colon(), optionalInt() != nil, let more = nextMember() else { return false }
            if !more { return true }
        }
    }

    /// The members after `"type":"connection",` up to the closing brace and the end of the line.
    mutating func connection() -> ConnectionRecord? {
        var seen: UInt64 = 0
        var ts: Int64?, pid: Int64?, tid: Int64?, connId: Int64?, fd: Int64?
        var transport: String?, family: String?, role: String?, local: String?, peer: String?
        var openTs: Int64?, closeTs: Int64?, durationUs: Int64?, connectUs: Int64?, bytesIn: Int64?, bytesOut: Int64?
        var error: String?, openAtExit: Bool?, host: String?, errorPhase: String?, tls: TLSInfo?
        var shutdownTs: Int64?, httpRequests: Int64?, dnsUs: Int64?
        var httpVersion: String?, httpStopped: String?, httpNone: String?, forkedWhileOpen: Bool?
        skipSpace()
        while true {
            guard let k = plainString(), let field = connectionKey(k) else { return nil }
            let bit: UInt64 = 1 << UInt64(field.rawValue)
            guard seen & bit == 0 else { return nil }
            seen |= bit
            guard colon() else { return nil }
            switch field {
            case .ts: guard let v = optionalInt() else { return nil }; ts = v
            case .pid: guard let v = optionalInt() else { return nil }; pid = v
            case .tid: guard let v = optionalInt() else { return nil }; tid = v
            case .connId: guard let v = optionalInt() else { return nil }; connId = v
            case .fd: guard let v = optionalInt() else { return nil }; fd = v
            case .openTs: guard let v = optionalInt() else { return nil }; openTs = v
            case .closeTs: guard let v = optionalInt() else { return nil }; closeTs = v
            case .durationUs: guard let v = optionalInt() else { return nil }; durationUs = v
            case .connectUs: guard let v = optionalInt() else { return nil }; connectUs = v
            case .bytesIn: guard let v = optionalInt() else { return nil }; bytesIn = v
            case .bytesOut: guard let v = optionalInt() else { return nil }; bytesOut = v
            case .shutdownTs: guard let v = optionalInt() else { return nil }; shutdownTs = v
            case .httpRequests: guard let v = optionalInt() else { return nil }; httpRequests = v
            case .dnsUs: guard let v = optionalInt() else { return nil }; dnsUs = v
            case .transport: guard let v = optionalString() else { return nil }; transport = v
            case .family: guard let v = optionalString() else { return nil }; family = v
            case .role: guard let v = optionalString() else { return nil }; role = v
            case .local: guard let v = optionalString() else { return nil }; local = v
            case .peer: guard let v = optionalString() else { return nil }; peer = v
            case .error: guard let v = optionalString() else { return nil }; error = v
            case .host: guard let v = optionalString() else { return nil }; host = v
            case .errorPhase: guard let v = optionalString() else { return nil }; errorPhase = v
            case .httpVersion: guard let v = optionalString() else { return nil }; httpVersion = v
            case .httpStopped: guard let v = optionalString() else { return nil }; httpStopped = v
            case .httpNone: guard let v = optionalString() else { return nil }; httpNone = v
            case .openAtExit: guard let v = optionalBool() else { return nil }; openAtExit = v
            case .forkedWhileOpen: guard let v = optionalBool() else { return nil }; forkedWhileOpen = v
            case .tls: guard let v = tlsObject() else { return nil }; tls = v
            case .ignoredConnectEndTs, .ignoredFirstByteOutTs, .ignoredFirstByteInTs, .ignoredLastByteTs:
                guard optionalInt() != nil else { return nil }
            case .ignoredTCPInfo: guard skipTCPInfo() else { return nil }
            }
            guard let more = nextMember() else { return nil }
            if !more { break }
        }
        skipSpace()
        // Required: ts, pid, role (a missing or null one is the general path's error).
        guard i == n, let ts, let pid, let role else { return nil }
        return ConnectionRecord(
            ts: ts, pid: Int(truncatingIfNeeded: pid), tid: tid.map { Int(truncatingIfNeeded: $0) }, connId: connId,
            fd: fd.map { Int(truncatingIfNeeded: $0) }, transport: transport, family: family, role: role,
            local: local, peer: peer, openTs: openTs, closeTs: closeTs, durationUs: durationUs, connectUs: connectUs,
            bytesIn: bytesIn ?? 0, bytesOut: bytesOut ?? 0, error: error, openAtExit: openAtExit ?? false,
            host: host, errorPhase: errorPhase, tls: tls, shutdownTs: shutdownTs, httpRequests: httpRequests,
            dnsUs: dnsUs, httpVersion: httpVersion, httpStopped: httpStopped, httpNone: httpNone,
            forkedWhileOpen: forkedWhileOpen ?? false)
    }
}
