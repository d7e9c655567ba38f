// Shared by the symbolizer fixtures: prints the loaded objects as the `modules` record's
// `modules` array (docs/LOG_FORMAT.md) and a stack as a `frames` array, so a test can write a
// realistic stall log from a real process.
#ifndef WEDJAT_FIXTURE_MODULES_H
#define WEDJAT_FIXTURE_MODULES_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void fixture_hex_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, char *out, size_t size) {
    const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        const char *name = p + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            for (unsigned i = 0; i < n->n_descsz && 2 * i + 2 < size; i++)
                snprintf(out + 2 * i, 3, "%02x", (unsigned char)desc[i]);
            return;
        }
        p = desc + ((n->n_descsz + 3) & ~3u);
    }
}

static int fixture_print_module(struct dl_phdr_info *info, size_t size, void *count) {
    (void)size;
    char exe[4096];
    const char *path = info->dlpi_name;
    if (path[0] == 0) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n < 0 ? 0 : n] = 0;
        path = exe;
    } else if (strstr(path, "linux-vdso") != NULL) {
        path = "[vdso]";
    }
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    char id[129] = "";
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t start = info->dlpi_addr + ph->p_vaddr;
            if (start < lo) lo = start;
            if (start + ph->p_memsz > hi) hi = start + ph->p_memsz;
        } else if (ph->p_type == PT_NOTE && id[0] == 0) {
            fixture_hex_build_id(info, ph, id, sizeof id);
        }
    }
    printf("%s{\"path\":\"%s\",\"base\":\"0x%lx\",\"lo\":\"0x%lx\",\"hi\":\"0x%lx\",\"build_id\":\"%s\"}",
           (*(int *)count)++ ? "," : "", path, (unsigned long)info->dlpi_addr, (unsigned long)lo,
           (unsigned long)hi, id);
    return 0;
}

/// One line: {"frames":[...],"modules":[...]}.
static void fixture_print_stack(void) {
    void *frames[32];
    int n = backtrace(frames, 32), count = 0; /* CALL backtrace */
    printf("{\"frames\":[");
    for (int i = 0; i < n; i++) printf("%s\"%p\"", i ? "," : "", frames[i]);
    printf("],\"modules\":[");
    dl_iterate_phdr(fixture_print_module, &count);
    printf("]}\n");
    fflush(stdout);
}

#endif
