#if canImport(Glibc)
import Glibc
#endif

/// What `wedjat run` needs to know about the command before starting it.
public enum Executable {
    /// The file `execvp` would run: `cmd` itself when it contains a slash, else the first
    /// executable regular file named `cmd` in `path` (an empty entry means the current directory).
    public static func resolve(_ cmd: String, searchPath: String?) -> String? {
        guard !cmd.isEmpty else { return nil }
        if cmd.contains("/") { return cmd }
        let dirs = (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        for dir in dirs {
            let candidate = (dir.isEmpty ? "." : String(dir)) + "/" + cmd
            var st = stat()
            if stat(candidate, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    public enum Linkage: Equatable, Sendable {
        /// Has a PT_INTERP program header: the dynamic loader runs, LD_PRELOAD applies.
        case dynamic
        /// An ELF executable without PT_INTERP (static, static-pie): LD_PRELOAD has no effect.
        case staticELF
        /// A script, or anything else that is not an ELF executable; nothing to say about it.
        case notELF
    }

    /// Reads the ELF header and program headers only (a few hundred bytes).
    public static func linkage(ofFile path: String) -> Linkage {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .notELF }
        defer { close(fd) }
        func readAt(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 20 else { return nil }
            var buf = [UInt8](repeating: 0, count: count)
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return n == count ? buf : nil
        }
        guard let h = readAt(0, 64), h[0] == 0x7F, h[1] == 0x45, h[2] == 0x4C, h[3] == 0x46 else { return .notELF }
        let is64 = h[4] == 2
        let littleEndian = h[5] != 2
        func uint(_ bytes: ArraySlice<UInt8>) -> UInt64 {
            let ordered = littleEndian ? Array(bytes.reversed()) : Array(bytes)
            return ordered.reduce(0) { $0 << 8 | UInt64($1) }
        }
        let type = uint(h[16 ..< 18])
        guard type == 2 || type == 3 else { return .notELF }   // ET_EXEC or ET_DYN
        let phoff = is64 ? uint(h[32 ..< 40]) : uint(h[28 ..< 32])
        let phentsize = Int(is64 ? uint(h[54 ..< 56]) : uint(h[42 ..< 44]))
        let phnum = Int(is64 ? uint(h[56 ..< 58]) : uint(h[44 ..< 46]))
        // Unreadable or odd headers: do not claim "static" on a guess.
        guard phentsize >= 4, phnum < 0xFFFF, let ph = readAt(phoff, phentsize * phnum) else { return .notELF }
        for i in 0 ..< phnum {
            let base = i * phentsize
            if uint(ph[base ..< base + 4]) == 3 { return .dynamic }   // PT_INTERP
        }
        return .staticELF
    }
}
