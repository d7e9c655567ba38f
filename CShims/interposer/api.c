// The small public API of libwedjat.so, for programs that know they may be watched (they can
// look these up with dlsym(RTLD_DEFAULT, ...) so that they still run without wedjat).
#include "context.h"
#include "lifecycle.h"


// The library version, e.g. "0.1.0".
WJ_EXPORT const char *wedjat_version(void) { return WEDJAT_VERSION; }

// 1 when this process is being recorded, 0 when wedjat stays out of the way (WEDJAT_DISABLE,
// secure execution, or before initialisation).
WJ_EXPORT int wedjat_enabled(void) { return wj_gate() == WJ_GATE_RUN; }

// Writes every pending record now (for example before a long sleep, or a planned SIGKILL).
// Returns 0 on success, -1 when nothing could be done (disabled, or called from inside wedjat).
WJ_EXPORT int wedjat_flush(void) {
    if (wj_gate() != WJ_GATE_RUN || wj_in_handler()) return -1;
    return wj_lc_flush();
}
