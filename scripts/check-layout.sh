#!/usr/bin/env bash
# Checks the layout of libwedjat.so's writable data (CShims/common/include/wedjat_common.h):
#   - no array of 1 KiB or more among the small state (before wj_proc), where it would push
#     the state every process touches over more pages;
#   - what every process writes (the small state, wj_proc's first pages, the output buffer and
#     the event ring's first slots) within the first 2 MiB of the data: one page table, not
#     one per region, made again in every forked child.
#   scripts/check-layout.sh path/to/libwedjat.so
set -euo pipefail
lib=${1:?usage: $0 path/to/libwedjat.so}
nm -n -S --defined-only "$lib" | awk '
    function hex(s,   i, c, v) { v = 0; s = tolower(s)
        for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
        return v }
    NF == 4 && $3 ~ /^[bBdD]$/ { addr[++n] = hex($1); size[n] = hex($2); name[n] = $4; if (!first) first = hex($1) }
    END {
        bad = 0
        for (i = 1; i <= n; i++) if (name[i] == "wj_proc") proc = addr[i]
        if (!proc) { print "check-layout: no wj_proc in the library"; exit 1 }
        for (i = 1; i <= n; i++) {
            if (addr[i] < proc && size[i] >= 1024) {
                printf "check-layout: %s (%d bytes) sits in the small state: mark it WJ_BIG or WJ_COLD\n", name[i], size[i]
                bad = 1
            }
            if ((name[i] == "out_raw" || name[i] == "event_slots") && addr[i] + 4096 - first > 2 * 1024 * 1024) {
                printf "check-layout: %s starts %d KiB into the data, past the first 2 MiB\n", name[i], (addr[i] - first) / 1024
                bad = 1
            }
            if (name[i] == "out_raw") seen_out = 1
            if (name[i] == "event_slots") seen_ring = 1
        }
        if (!seen_out || !seen_ring) { print "check-layout: out_raw or event_slots not found"; bad = 1 }
        if (!bad) printf "check-layout: %d data symbols, the small state before wj_proc, the output buffer and the ring in the first 2 MiB\n", n
        exit bad
    }'
