import XCTest
import WedjatAnalysis
@testable import WedjatLive

/// The wire format, and the OTLP messages read back field by field with the numbers of
/// opentelemetry-proto (trace.proto, metrics.proto, common.proto). Test 90 decodes the same
/// bodies with the official Python classes.
final class ProtobufTests: XCTestCase {
    func testVarintsAndFixedAsTheSpecShowsThem() {
        var w = ProtoWriter()
        w.uint64(1, 150)                       // the encoding guide's example: 08 96 01
        XCTAssertEqual(w.bytes, [0x08, 0x96, 0x01])
        w = ProtoWriter()
        w.int64(2, -1)                         // ten bytes of two's complement
        XCTAssertEqual(w.bytes, [0x10] + [UInt8](repeating: 0xFF, count: 9) + [0x01])
        w = ProtoWriter()
        w.string(3, "testing")
        XCTAssertEqual(w.bytes, [0x1A, 0x07] + Array("testing".utf8))
        w = ProtoWriter()
        w.fixed64(4, 1)
        w.double(5, 1.5)
        XCTAssertEqual(w.bytes, [0x21, 1, 0, 0, 0, 0, 0, 0, 0, 0x29, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
        w = ProtoWriter()
        w.uint64(1, 0)
        w.string(2, "")
        XCTAssertEqual(w.bytes, [], "proto3 leaves defaults out")
        w.int64(1, 0, always: true)
        XCTAssertEqual(w.bytes, [0x08, 0x00])
    }

    func testReaderReadsBackNestedAndPacked() throws {
        var w = ProtoWriter()
        w.message(1) { inner in
            inner.string(1, "key")
            inner.packedFixed64(6, [1, 2, 300])
        }
        w.double(2, 0.25)
        let r = try ProtoReader(w.bytes)
        let inner = try XCTUnwrap(r.first(1)?.message)
        XCTAssertEqual(inner.first(1)?.string, "key")
        let packed = try XCTUnwrap(inner.first(6)?.bytesValue)
        XCTAssertEqual(packed.count, 24)
        XCTAssertEqual(packed[16], 44)   // 300 = 0x012C, little-endian
        XCTAssertEqual(packed[17], 1)
        XCTAssertEqual(r.first(2)?.double, 0.25)
        XCTAssertThrowsError(try ProtoReader([0x0A, 0x05, 0x01]), "a length past the end")
    }

    /// A batch of one exchange: its ExportTraceServiceRequest and ExportMetricsServiceRequest.
    private func batch() throws -> (ShipBatch, OTLPResourceBatch) {
        let dir = "/tmp/x"
        let start = try Record.decode(line: String(LiveLine.start("server.1.1.ndjson", dir: dir).dropLast()))
        guard case .processStart(let s) = start else { throw XCTSkip("no process_start") }
        var image = ProcessLog(path: dir + "/server.1.1.ndjson")
        image.start = s
        var b = ShipBatch(image: image, intervalStartUs: 1_000_000_000_000_000)
        b.add(try Record.decode(line: String(LiveLine.http(ts: 1_000_000_000_500_000, duration: 30_000, status: 503).dropLast())))
        b.add(try Record.decode(line: String(LiveLine.sample(ts: 1_000_000_001_000_000).dropLast())))
        return (b, b.resourceBatch())
    }

    func testTraceRequestHasTheSpanAtOTLPsFieldNumbers() throws {
        let (b, content) = try batch()
        let request = try ProtoReader(content.tracesProtobuf())
        let resourceSpans = try XCTUnwrap(request.first(1)?.message)
        let resource = try XCTUnwrap(resourceSpans.first(1)?.message)
        let attributes = resource.all(1).compactMap(\.message).map { kv in
            (kv.first(1)?.string ?? "", kv.first(2)?.message)
        }
        let service = try XCTUnwrap(attributes.first { $0.0 == "service.name" }?.1)
        XCTAssertEqual(service.first(1)?.string, "server")
        let pid = try XCTUnwrap(attributes.first { $0.0 == "process.pid" }?.1)
        XCTAssertEqual(pid.first(3)?.uint64, UInt64(LiveLine.pid), "int_value is field 3")
        let scopeSpans = try XCTUnwrap(resourceSpans.first(2)?.message)
        XCTAssertEqual(scopeSpans.first(1)?.message?.first(1)?.string, "wedjat")
        XCTAssertEqual(scopeSpans.first(1)?.message?.first(2)?.string, "0.1.0")
        let span = try XCTUnwrap(scopeSpans.first(2)?.message)
        let ids = b.spans[0].ids
        XCTAssertEqual(span.first(1)?.bytesValue, OTLPResourceBatch.bigEndian(ids.traceHigh) + OTLPResourceBatch.bigEndian(ids.traceLow))
        XCTAssertEqual(span.first(1)?.bytesValue?.map { String(format: "%02x", $0) }.joined(), ids.traceId, "the same id as OTLP/JSON's hex")
        XCTAssertEqual(span.first(2)?.bytesValue?.count, 8)
        XCTAssertEqual(span.first(5)?.string, "GET")
        XCTAssertEqual(span.first(6)?.uint64, 2, "SPAN_KIND_SERVER")
        XCTAssertEqual(span.first(7), .fixed64(1_000_000_000_470_000_000))
        XCTAssertEqual(span.first(8), .fixed64(1_000_000_000_500_000_000))
        let status = try XCTUnwrap(span.first(15)?.message)
        XCTAssertEqual(status.first(2)?.string, "503")
        XCTAssertEqual(status.first(3)?.uint64, 2, "STATUS_CODE_ERROR")
        let statusAttribute = span.all(9).compactMap(\.message).first { $0.first(1)?.string == "http.response.status_code" }
        XCTAssertEqual(statusAttribute?.first(2)?.message?.first(3)?.uint64, 503)
    }

    func testMetricsRequestHasDeltaHistogramAndProcessMetrics() throws {
        let (_, content) = try batch()
        let request = try ProtoReader(content.metricsProtobuf())
        let scopeMetrics = try XCTUnwrap(request.first(1)?.message?.first(2)?.message)
        let metrics = scopeMetrics.all(2).compactMap(\.message)
        let byName = Dictionary(metrics.map { ($0.first(1)?.string ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(Set(byName.keys), ["http.server.request.duration", "process.cpu.time", "process.cpu.utilization",
                                          "process.memory.usage", "process.memory.virtual", "process.thread.count",
                                          "process.unix.file_descriptor.count", "wedjat.connections.open",
                                          "process.context_switches", "process.paging.faults", "wedjat.event_loop.utilization"])
        let histogram = try XCTUnwrap(byName["http.server.request.duration"]?.first(9)?.message)
        XCTAssertEqual(histogram.first(2)?.uint64, 1, "AGGREGATION_TEMPORALITY_DELTA")
        let point = try XCTUnwrap(histogram.first(1)?.message)
        XCTAssertEqual(point.first(2), .fixed64(1_000_000_000_000_000_000), "starts at the interval's start")
        XCTAssertEqual(point.first(3), .fixed64(1_000_000_001_000_000_000), "ends at the latest record")
        XCTAssertEqual(point.first(4), .fixed64(1), "count")
        XCTAssertEqual(point.first(5)?.double, 0.03, "sum in seconds")
        let buckets = try XCTUnwrap(point.first(6)?.bytesValue)
        XCTAssertEqual(buckets.count, 15 * 8)
        XCTAssertEqual(buckets[3 * 8], 1, "30 ms is in (25 ms, 50 ms]")
        XCTAssertEqual(point.first(7)?.bytesValue?.count, 14 * 8, "explicit bounds")
        XCTAssertEqual(point.first(11)?.double, 0.03)
        XCTAssertEqual(point.first(12)?.double, 0.03)

        let cpu = try XCTUnwrap(byName["process.cpu.time"]?.first(7)?.message)   // Sum
        XCTAssertEqual(cpu.first(2)?.uint64, 2, "cumulative")
        XCTAssertEqual(cpu.first(3)?.uint64, 1, "monotonic")
        let user = try XCTUnwrap(cpu.all(1).compactMap(\.message).first)
        XCTAssertEqual(user.first(4)?.double, 0.5, "as_double: 500,000 us of user time")
        XCTAssertEqual(user.first(7)?.message?.first(1)?.string, "cpu.mode")
        let utilization = try XCTUnwrap(byName["process.cpu.utilization"]?.first(5)?.message?.first(1)?.message)
        XCTAssertEqual(utilization.first(4)?.double, 0.25, "50% of one core of 2 CPUs")
        let rss = try XCTUnwrap(byName["process.memory.usage"]?.first(7)?.message?.first(1)?.message)
        XCTAssertEqual(rss.first(6), .fixed64(10 << 20), "as_int (sfixed64)")
        let loop = try XCTUnwrap(byName["wedjat.event_loop.utilization"]?.first(5)?.message?.first(1)?.message)
        XCTAssertEqual(loop.first(4)?.double, 0.4)
    }

    func testGzipRoundTrip() throws {
        let body = Array(String(repeating: "span attributes ", count: 500).utf8)
        let packed = try Gzip.compress(body)
        XCTAssertEqual(Array(packed.prefix(2)), [0x1F, 0x8B], "a gzip header")
        XCTAssertLessThan(packed.count, body.count / 10)
        XCTAssertEqual(try Gzip.decompress(packed), body)
        XCTAssertThrowsError(try Gzip.decompress(Array(packed.dropLast(4))))
    }
}
