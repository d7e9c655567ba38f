// The C side of WedjatSymbols: elfutils' libelf (ELF files: symbol tables, notes) and libdw's
// dwfl (DWARF line tables, separate debug files), and libstdc++'s C++ demangler.
// Debian: libelf-dev, libdw-dev (scripts/deps.sh).
#ifndef WEDJAT_CELFUTILS_SHIM_H
#define WEDJAT_CELFUTILS_SHIM_H

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>

// The Itanium C++ ABI demangler (libstdc++). Returns a malloc'ed string, or NULL with
// *status < 0.
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

#endif
