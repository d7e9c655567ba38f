import CElfutils
#if canImport(Glibc)
import Glibc
#endif

// Turns the raw return addresses of a stall's stack into function+offset and file:line, from
// the binaries on disk, after the process is gone (docs/SYMBOLIZATION.md). Symbols come from
// the ELF symbol tables (libelf), lines from DWARF (libdw's dwfl). A module whose file on disk
// is not the one that was loaded (build-id differs, file gone) is not guessed at: its frames
// stay `module+0xoff` and `problems` says why.

/// One object of a `modules` record: where it was mapped in the process.
public struct ModuleMapping: Sendable, Hashable {
    public var path: String
    /// Load bias: ELF virtual address + base = address in memory.
    public var base: UInt64
    /// The memory its PT_LOAD segments covered, `hi` exclusive.
    public var lo: UInt64
    public var hi: UInt64
    /// `NT_GNU_BUILD_ID` in lowercase hex, `""` when the object had none.
    public var buildId: String

    public init(path: String, base: UInt64, lo: UInt64, hi: UInt64, buildId: String) {
        self.path = path; self.base = base; self.lo = lo; self.hi = hi; self.buildId = buildId.lowercased()
    }

    /// The file's base name: `libc.so.6`, `[vdso]`.
    public var name: String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// The modules of one `modules` record, searchable by address.
public struct ModuleMap: Sendable {
    public let modules: [ModuleMapping]
    /// The process the record is of: addresses in no module are looked up in its perf map
    /// (PerfMap.swift). nil: they stay raw.
    public let process: PerfMapProcess?

    public init(_ modules: [ModuleMapping], process: PerfMapProcess? = nil) {
        self.modules = modules.filter { $0.hi > $0.lo }.sorted { $0.lo < $1.lo }
        self.process = process
    }

    /// The module whose mapped range holds `address`.
    public func module(containing address: UInt64) -> ModuleMapping? {
        var lo = 0, hi = modules.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if modules[mid].lo <= address { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0, address < modules[lo - 1].hi else { return nil }
        return modules[lo - 1]
    }
}

/// One symbolized address.
public struct SymbolizedFrame: Sendable, Equatable {
    public var address: UInt64
    /// nil when no module of the map holds the address.
    public var module: ModuleMapping?
    /// `address - base`: the ELF virtual address in the module's file (what `addr2line -e` takes).
    public var moduleOffset: UInt64?
    /// Demangled; nil when unknown (no usable file, no symbol covering the address).
    public var function: String?
    /// From the function's start to `address`.
    public var functionOffset: UInt64?
    /// Source file and line of the call (of the instruction before a return address).
    public var file: String?
    public var line: Int?
    /// The perf map the function name came from (JIT or interpreter code, in no module).
    public var perfMap: String?
    /// Names of the perf map entries of different names that all cover the address (its code
    /// space was reused during the run); `function` is nil then.
    public var perfMapCandidates: [String]?

    public init(address: UInt64) { self.address = address }

    /// `function`, else `module+0xoff`, else `0xaddress`: what a folded stack shows. A name from
    /// a perf map says so: `JS:*busy /app/x.js:3:18 (perf map)`, `a | b (perf map, ambiguous)`.
    public var name: String {
        if let function { return perfMap == nil ? function : function + " (perf map)" }
        if let candidates = perfMapCandidates {
            let shown = candidates.prefix(3).joined(separator: " | ") + (candidates.count > 3 ? " | ..." : "")
            return shown + " (perf map, ambiguous)"
        }
        if let module, let moduleOffset { return module.name + "+0x" + String(moduleOffset, radix: 16) }
        return "0x" + String(address, radix: 16)
    }

    /// `function+0x1a (file.c:42)`, `libfoo.so+0x1234`, `0x7f0012345678`,
    /// `JS:*busy /app/x.js:3:18+0x1a (perf map)`.
    public var text: String {
        if let function, perfMap != nil {
            return function + (functionOffset.map { "+0x" + String($0, radix: 16) } ?? "") + " (perf map)"
        }
        var s = name
        if function != nil, let functionOffset { s += "+0x" + String(functionOffset, radix: 16) }
        if let file, let line {
            let base = file.lastIndex(of: "/").map { String(file[file.index(after: $0)...]) } ?? file
            s += " (\(base):\(line))"
        }
        return s
    }
}

/// Why a module's frames could not be symbolized, or (`perfMap`) why frames outside every
/// module could not be named from the process's perf map.
public struct ModuleProblem: Sendable, Equatable {
    public var path: String
    public var buildId: String
    public var reason: String
    /// `path` is a perf map (`/tmp/perf-PID.map`), not a module.
    public var perfMap = false
}

public final class Symbolizer {
    /// Where separate debug files are looked for: `<dir>/.build-id/xx/rest.debug`, and by
    /// `.gnu_debuglink` name.
    public let debugDirectories: [String]
    /// One per module that could not be (fully) used, in the order they were met.
    public private(set) var problems: [ModuleProblem] = []
    /// Where runtimes write perf maps (`/tmp`; a test points it elsewhere).
    public let perfMapDirectory: String

    private var files: [ModuleKey: ElfModule?] = [:]
    /// Per process: its perf map once looked for (nil: none usable), and whether an ambiguous
    /// address was met in it.
    private var perfMaps: [PerfMapProcess: (path: String, map: PerfMap)?] = [:]
    private var ambiguityNoted: Set<String> = []
    private var resolved: [AddressKey: Resolution] = [:]
    /// Kept alive for the Dwfl sessions, which point at it.
    private let callbacks: UnsafeMutablePointer<Dwfl_Callbacks>
    private let debugPath: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

    public init(debugDirectories: [String] = ["/usr/lib/debug"], perfMapDirectory: String = "/tmp") {
        self.debugDirectories = debugDirectories
        self.perfMapDirectory = perfMapDirectory
        // Symbolizing must never reach the network: libdw asks a debuginfod server when this is set.
        unsetenv("DEBUGINFOD_URLS")
        elf_version(UInt32(EV_CURRENT))
        // libdw's syntax: the file's own directory, its .debug/, then each debug root.
        debugPath = .allocate(capacity: 1)
        debugPath.initialize(to: strdup(([":.debug"] + debugDirectories).joined(separator: ":")))
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: Dwfl_Callbacks(find_elf: dwfl_build_id_find_elf,
                                                find_debuginfo: dwfl_standard_find_debuginfo,
                                                section_address: dwfl_offline_section_address,
                                                debuginfo_path: debugPath))
    }

    deinit {
        files.removeAll()   // each ElfModule ends its Dwfl session, which still uses the callbacks
        callbacks.deallocate()
        free(debugPath.pointee)
        debugPath.deallocate()
    }

    /// Symbolizes one stack, innermost frame first. Addresses are return addresses (the
    /// instruction before each is looked up), but for the first one when `firstIsExact`: the
    /// instruction a signal interrupted.
    public func symbolize(stack: [UInt64], in map: ModuleMap, firstIsExact: Bool = false) -> [SymbolizedFrame] {
        stack.enumerated().map { i, a in symbolize(a, in: map, returnAddress: !(i == 0 && firstIsExact)) }
    }

    /// - Parameter returnAddress: look up `address - 1`, the call instruction, so a call that
    ///   ends a function is not attributed to the next one.
    public func symbolize(_ address: UInt64, in map: ModuleMap, returnAddress: Bool = true) -> SymbolizedFrame {
        var frame = SymbolizedFrame(address: address)
        guard let module = map.module(containing: address), address >= module.base else {
            if let process = map.process { namePerfMapFrame(&frame, process: process, returnAddress: returnAddress) }
            return frame
        }
        frame.module = module
        let fileAddress = address - module.base
        frame.moduleOffset = fileAddress
        let key = AddressKey(module: ModuleKey(module), fileAddress: fileAddress, returnAddress: returnAddress)
        let r: Resolution
        if let cached = resolved[key] {
            r = cached
        } else {
            r = elfModule(module).map { $0.resolve(fileAddress, returnAddress: returnAddress) } ?? Resolution()
            resolved[key] = r
        }
        frame.function = r.function
        frame.functionOffset = r.functionOffset
        frame.file = r.file
        frame.line = r.line
        return frame
    }

    /// An address in no module: JIT or interpreter code, named by the process's perf map when
    /// there is a usable one. The lookup is of the call instruction, as for return addresses
    /// in modules.
    private func namePerfMapFrame(_ frame: inout SymbolizedFrame, process: PerfMapProcess, returnAddress: Bool) {
        let loaded: (path: String, map: PerfMap)?
        if let known = perfMaps[process] {
            loaded = known
        } else {
            switch PerfMapFile.load(for: process, tmp: perfMapDirectory) {
            case let .loaded(path, map):
                loaded = (path, map)
                if map.malformedLines > 0 {
                    problems.append(ModuleProblem(path: path, buildId: "", reason: "\(map.malformedLines) lines are not START SIZE NAME and were passed over", perfMap: true))
                }
            case let .unusable(path, reason):
                loaded = nil
                problems.append(ModuleProblem(
                    path: path, buildId: "",
                    reason: reason + ": frames of pid \(process.pid) outside every loaded object (JIT or interpreter code) are shown as raw addresses",
                    perfMap: true))
            }
            perfMaps[process] = loaded
        }
        guard let (path, map) = loaded else { return }
        let lookup = returnAddress && frame.address > 0 ? frame.address - 1 : frame.address
        switch map.lookup(lookup) {
        case .none:
            return
        case let .symbol(entry):
            frame.function = entry.name
            frame.functionOffset = frame.address - entry.start
            frame.perfMap = path
        case let .ambiguous(entries):
            frame.perfMap = path
            var names: [String] = []
            for e in entries where !names.contains(e.name) { names.append(e.name) }
            frame.perfMapCandidates = names
            if ambiguityNoted.insert(path).inserted {
                problems.append(ModuleProblem(
                    path: path, buildId: "",
                    reason: "entries of different names cover some addresses (code space reused during the run): those frames list every candidate, marked ambiguous",
                    perfMap: true))
            }
        }
    }

    /// The opened file of a module, once per (path, build-id); nil (and a problem) when unusable.
    private func elfModule(_ module: ModuleMapping) -> ElfModule? {
        let key = ModuleKey(module)
        if let known = files[key] { return known }
        var elf: ElfModule?
        do {
            elf = try ElfModule(module, callbacks: callbacks)
            if !elf!.hasSymbols {
                problems.append(ModuleProblem(path: module.path, buildId: module.buildId,
                                              reason: "no symbol table (stripped, and no debug file found)"))
            }
        } catch {
            problems.append(ModuleProblem(path: module.path, buildId: module.buildId, reason: error.reason))
        }
        files[key] = elf
        return elf
    }
}

private struct ModuleKey: Hashable {
    var path: String
    var buildId: String
    init(_ m: ModuleMapping) { path = m.path; buildId = m.buildId }
}

private struct AddressKey: Hashable {
    var module: ModuleKey
    var fileAddress: UInt64
    var returnAddress: Bool
}

private struct Resolution {
    var function: String?
    var functionOffset: UInt64?
    var file: String?
    var line: Int?
}

struct SymbolizeError: Error {
    var reason: String
}

/// One module's file, opened once: its Dwfl session (which owns the file and finds the debug
/// file) and its function symbols, sorted by address.
private final class ElfModule {
    private let dwfl: OpaquePointer
    private let dwflModule: OpaquePointer
    /// Added to a file address to get the address dwfl uses.
    private let dwflBias: UInt64
    private let symbols: SymbolTable?

    var hasSymbols: Bool { symbols != nil }

    init(_ m: ModuleMapping, callbacks: UnsafePointer<Dwfl_Callbacks>) throws(SymbolizeError) {
        guard m.path.hasPrefix("/") else {
            throw SymbolizeError(reason: m.path == "[vdso]" ? "the kernel's vDSO is not a file on disk" : "not a file path")
        }
        // Non-blocking: the path comes from a log, and a FIFO there must not hang the report.
        let fd = open(m.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw SymbolizeError(reason: "cannot open: " + String(cString: strerror(errno))) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SymbolizeError(reason: "not a regular file")
        }
        guard let dwfl = dwfl_begin(callbacks) else {
            close(fd)
            throw SymbolizeError(reason: "libdw: " + String(cString: dwfl_errmsg(-1)))
        }
        // ET_DYN placed at its own p_vaddr (base 0): dwfl addresses are then the file's addresses.
        // On success dwfl owns fd.
        guard let mod = dwfl_report_elf(dwfl, m.name, m.path, fd, 0, true) else {
            let why = String(cString: dwfl_errmsg(-1))
            dwfl_end(dwfl)
            close(fd)
            throw SymbolizeError(reason: "not a usable ELF file: " + why)
        }
        dwfl_report_end(dwfl, nil, nil)
        var bias: GElf_Addr = 0
        guard let elf = dwfl_module_getelf(mod, &bias) else {
            let why = String(cString: dwfl_errmsg(-1))
            dwfl_end(dwfl)
            throw SymbolizeError(reason: "not a usable ELF file: " + why)
        }
        let onDisk = ElfModule.buildID(elf) ?? ""
        guard onDisk == m.buildId else {
            dwfl_end(dwfl)
            let reason: String
            if m.buildId.isEmpty {
                reason = "the loaded object had no build-id but the file on disk has \(onDisk): it was replaced since the run"
            } else if onDisk.isEmpty {
                reason = "build-id \(m.buildId) was loaded, the file on disk has none: it was replaced since the run"
            } else {
                reason = "build-id mismatch: \(m.buildId) was loaded, the file on disk has \(onDisk) (rebuilt or upgraded since the run)"
            }
            throw SymbolizeError(reason: reason)
        }
        self.dwfl = dwfl
        dwflModule = mod
        dwflBias = bias
        // .symtab of the file, else of its separate debug file, else .dynsym (exported only).
        var table = SymbolTable(elf, sectionType: UInt32(SHT_SYMTAB))
        if table == nil {
            var debugBias: Dwarf_Addr = 0
            if let dwarf = dwfl_module_getdwarf(mod, &debugBias), let debugElf = dwarf_getelf(dwarf), debugElf != elf {
                table = SymbolTable(debugElf, sectionType: UInt32(SHT_SYMTAB))
            }
        }
        symbols = table ?? SymbolTable(elf, sectionType: UInt32(SHT_DYNSYM))
    }

    deinit { dwfl_end(dwfl) }

    func resolve(_ fileAddress: UInt64, returnAddress: Bool) -> Resolution {
        var r = Resolution()
        let lookup = returnAddress && fileAddress > 0 ? fileAddress - 1 : fileAddress
        if let sym = symbols?.symbol(containing: lookup) {
            r.function = demangle(sym.name)
            r.functionOffset = fileAddress - sym.value
        }
        // Lines need DWARF: in the file, or a debug file dwfl found (none for most system libraries).
        if let line = dwfl_module_getsrc(dwflModule, lookup &+ dwflBias) {
            var lineNo: Int32 = 0
            if let file = dwfl_lineinfo(line, nil, &lineNo, nil, nil, nil), lineNo > 0 {
                r.file = String(cString: file)
                r.line = Int(lineNo)
            }
        }
        return r
    }

    /// The `NT_GNU_BUILD_ID` note in hex, from the note sections, else the PT_NOTE segments.
    static func buildID(_ elf: OpaquePointer) -> String? {
        var scn: OpaquePointer?
        while let s = elf_nextscn(elf, scn) {
            scn = s
            var shdr = GElf_Shdr()
            guard gelf_getshdr(s, &shdr) != nil, shdr.sh_type == UInt32(SHT_NOTE),
                  let data = elf_getdata(s, nil) else { continue }
            if let id = buildID(notes: data) { return id }
        }
        // Sizes and offsets come from the file: checked before any conversion that could trap.
        var count = 0
        guard elf_getphdrnum(elf, &count) == 0 else { return nil }
        for i in 0 ..< Int32(clamping: count) {
            var phdr = GElf_Phdr()
            guard gelf_getphdr(elf, i, &phdr) != nil, phdr.p_type == UInt32(PT_NOTE),
                  let offset = Int64(exactly: phdr.p_offset), let size = Int(exactly: phdr.p_filesz),
                  let data = elf_getdata_rawchunk(elf, offset, size, ELF_T_NHDR)
            else { continue }
            if let id = buildID(notes: data) { return id }
        }
        return nil
    }

    private static func buildID(notes data: UnsafeMutablePointer<Elf_Data>) -> String? {
        var offset = 0
        while true {
            var nhdr = GElf_Nhdr()
            var nameOffset = 0, descOffset = 0
            let next = gelf_getnote(data, offset, &nhdr, &nameOffset, &descOffset)
            guard next > 0, let buf = data.pointee.d_buf else { return nil }
            let bytes = buf.assumingMemoryBound(to: UInt8.self)
            // Name "GNU\0", type NT_GNU_BUILD_ID.
            if nhdr.n_type == UInt32(NT_GNU_BUILD_ID), nhdr.n_namesz == 4,
               memcmp(bytes + nameOffset, "GNU", 4) == 0 {
                return (0 ..< Int(nhdr.n_descsz)).map { i in
                    let b = bytes[descOffset + i]
                    return String(b >> 4, radix: 16) + String(b & 0xF, radix: 16)
                }.joined()
            }
            offset = next
        }
    }
}

/// The function symbols of one symbol table, sorted by address, one name per address.
private struct SymbolTable {
    struct Symbol {
        var value: UInt64
        var size: UInt64
        var nameIndex: UInt32
        var rank: Int
    }

    private let elf: OpaquePointer
    private let stringSection: Int
    private let symbols: [Symbol]

    /// nil when the file has no such section or it holds no function.
    init?(_ elf: OpaquePointer, sectionType: UInt32) {
        var scn: OpaquePointer?
        var shdr = GElf_Shdr()
        var found: OpaquePointer?
        while let s = elf_nextscn(elf, scn) {
            scn = s
            if gelf_getshdr(s, &shdr) != nil, shdr.sh_type == sectionType { found = s; break }
        }
        guard let found, let data = elf_getdata(found, nil), shdr.sh_entsize > 0 else { return nil }
        // The section's data as libelf read it bounds the count, not the header's claim.
        let count = Int32(clamping: min(shdr.sh_size, UInt64(data.pointee.d_size)) / shdr.sh_entsize)
        var all: [Symbol] = []
        for i in 0 ..< count {
            var sym = GElf_Sym()
            guard gelf_getsym(data, i, &sym) != nil else { continue }
            let type = Int32(sym.st_info & 0xF), binding = Int32(sym.st_info >> 4)
            guard type == STT_FUNC || type == STT_GNU_IFUNC, sym.st_shndx != UInt16(SHN_UNDEF), sym.st_value != 0,
                  let name = elf_strptr(elf, Int(shdr.sh_link), Int(sym.st_name)), name.pointee != 0 else { continue }
            all.append(Symbol(value: sym.st_value, size: sym.st_size, nameIndex: sym.st_name,
                              rank: SymbolTable.rank(name, binding: binding)))
        }
        guard !all.isEmpty else { return nil }
        // Aliases share an address (write, __write, __libc_write): keep the best-ranked name.
        all.sort { $0.value != $1.value ? $0.value < $1.value : $0.rank < $1.rank }
        var unique: [Symbol] = []
        unique.reserveCapacity(all.count)
        for s in all where unique.last?.value != s.value { unique.append(s) }
        self.elf = elf
        stringSection = Int(shdr.sh_link)
        symbols = unique
    }

    /// Lower is better: fewer leading underscores, then global over weak over local, then shorter
    /// (without the version). Ties go to the lower name-table offset, so the choice is stable.
    private static func rank(_ name: UnsafePointer<CChar>, binding: Int32) -> Int {
        var underscores = 0
        while name[underscores] == 0x5F { underscores += 1 }
        let bindingRank = binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2
        let length = strchr(name, 0x40).map { name.distance(to: $0) } ?? strlen(name)
        return underscores << 24 | bindingRank << 20 | min(length, 0xFFFFF)
    }

    /// `__libc_start_main@@GLIBC_2.34` (how .symtab names versioned definitions) without the version.
    private static func unversioned(_ name: String) -> String {
        guard let at = name.firstIndex(of: "@"), at != name.startIndex else { return name }
        return String(name[..<at])
    }

    /// The symbol covering `address`: the last one at or below it, within its size (a size-0
    /// symbol reaches to the next one).
    func symbol(containing address: UInt64) -> (name: String, value: UInt64)? {
        var lo = 0, hi = symbols.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if symbols[mid].value <= address { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return nil }
        let s = symbols[lo - 1]
        guard s.size == 0 || address - s.value < s.size,
              let name = elf_strptr(elf, stringSection, Int(s.nameIndex)) else { return nil }
        return (SymbolTable.unversioned(String(cString: name)), s.value)
    }
}

// MARK: demangling

@_silgen_name("swift_demangle")
private func swiftDemangle(_ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: UInt,
                           _ outputBuffer: UnsafeMutablePointer<CChar>?,
                           _ outputBufferSize: UnsafeMutablePointer<UInt>?,
                           _ flags: UInt32) -> UnsafeMutablePointer<CChar>?

/// C++ (`_Z...`, libstdc++'s demangler) and Swift (`$s...`, the Swift runtime's) names in
/// readable form; any other name, or one that does not demangle, as it is.
public func demangle(_ name: String) -> String {
    if name.hasPrefix("_Z") {
        var status: Int32 = 0
        if let out = __cxa_demangle(name, nil, nil, &status), status == 0 {
            defer { free(out) }
            return String(cString: out)
        }
    } else if ["$s", "$S", "$e", "_$s", "_$S", "_T0"].contains(where: name.hasPrefix) {
        let utf8 = Array(name.utf8CString)
        if let out = utf8.withUnsafeBufferPointer({ swiftDemangle($0.baseAddress, UInt($0.count - 1), nil, nil, 0) }) {
            defer { free(out) }
            return String(cString: out)
        }
    }
    return name
}
