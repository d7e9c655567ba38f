// libFuzzer target: the WEDJAT_* parser with arbitrary variable values. It must never crash,
// must keep every field within its documented range, and must keep its strings terminated.
#include "wedjat_common.h"
#include <stdlib.h>
#include <string.h>

static const char *names[] = {"WEDJAT_DIR", "WEDJAT_DISABLE", "WEDJAT_ARGV", "WEDJAT_FLUSH_MS",
                              "WEDJAT_MAX_CONNECTIONS", "WEDJAT_LOG_MAX_MB"};
static char values[6][300];
static int present[6];

static const char *lookup(const char *name, void *ctx) {
    (void)ctx;
    for (int i = 0; i < 6; i++)
        if (strcmp(name, names[i]) == 0) return present[i] ? values[i] : 0;
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    // Split the input on 0xff bytes into up to six values.
    memset(present, 0, sizeof present);
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && k < 6; i++) {
        if (i == size || data[i] == 0xff) {
            size_t n = i - start;
            if (n > sizeof values[k] - 1) n = sizeof values[k] - 1;
            memcpy(values[k], data + start, n);
            values[k][n] = 0;
            present[k] = data[start % (size ? size : 1)] != 'x';  // some runs leave variables unset
            k++;
            start = i + 1;
        }
    }
    wj_config cfg;
    wj_config_parse(&cfg, lookup, 0, 1000);
    if (cfg.flush_ms < 10 || cfg.flush_ms > 60000) abort();
    if (cfg.max_connections < 16 || cfg.max_connections > 1048576) abort();
    if (cfg.log_max_mb < 1 || cfg.log_max_mb > 1048576) abort();
    if (cfg.argv_mode < 0 || cfg.argv_mode > 2) abort();
    if (cfg.warning_count < 0 || cfg.warning_count > WJ_MAX_WARNINGS) abort();
    if (strnlen(cfg.dir, sizeof cfg.dir) == sizeof cfg.dir || cfg.dir[0] != '/') abort();
    for (int i = 0; i < cfg.warning_count; i++)
        if (strnlen(cfg.warnings[i], WJ_WARNING_LEN) == WJ_WARNING_LEN) abort();
    return 0;
}
