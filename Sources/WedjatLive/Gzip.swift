import CZlib

/// gzip (RFC 1952) through zlib, for `Content-Encoding: gzip` request bodies.
public enum Gzip {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// `level` 1 (fastest) to 9; ship uses 1: OTLP compresses about 10x even so, at a fraction
    /// of the CPU of the default level.
    public static func compress(_ input: [UInt8], level: Int32 = 1) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        let initialized = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                        ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard initialized == Z_OK else { throw Failure(description: "zlib deflateInit2 failed (\(initialized))") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        let status: Int32 = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(description: "zlib deflate failed (\(status))") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Decompresses a gzip stream (tests; a collector's gzip answer).
    public static func decompress(_ input: [UInt8]) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let initialized = inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard initialized == Z_OK else { throw Failure(description: "zlib inflateInit2 failed (\(initialized))") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status: Int32 = Z_OK
        input.withUnsafeBufferPointer { inBuf in
            stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
            stream.avail_in = uInt(inBuf.count)
            repeat {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { outBuf in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = uInt(outBuf.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return outBuf.count - Int(stream.avail_out)
                }
                output += chunk[0 ..< produced]
            } while status == Z_OK
        }
        guard status == Z_STREAM_END else { throw Failure(description: "not a whole gzip stream (zlib \(status))") }
        return output
    }
}
