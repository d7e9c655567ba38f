/// Decodes log lines one at a time with one reused parse buffer: for readers that follow
/// growing logs line by line (WedjatLive) rather than reading whole files (LogReader).
package final class LineDecoder {
    private let document = JSONDocument()

    package init() {}

    /// One line without its newline.
    package func decode(_ line: UnsafeRawBufferPointer) throws(LineDecodeError) -> Record {
        try Record.decode(line, into: document)
    }
}
