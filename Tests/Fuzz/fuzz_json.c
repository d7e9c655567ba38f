// libFuzzer target: argv redaction and the JSON writer. Whatever the bytes (invalid UTF-8,
// control characters, huge arguments), the output must be a terminated string and the JSON
// line must contain no raw control characters and balanced quotes.
#include "wedjat_json.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    char arg[4096], prev[64], out[512];
    size_t split = size ? data[0] % 32 : 0;
    if (split > size) split = size;
    size_t pn = split > 1 ? split - 1 : 0;
    if (pn > sizeof prev - 1) pn = sizeof prev - 1;
    memcpy(prev, data + (size ? 1 : 0), pn);
    prev[pn] = 0;
    size_t an = size - split;
    if (an > sizeof arg - 1) an = sizeof arg - 1;
    memcpy(arg, data + split, an);
    arg[an] = 0;
    wj_redact_arg(pn ? prev : 0, arg, out, sizeof out);
    if (strnlen(out, sizeof out) == sizeof out) abort();

    char line[1024];
    wj_json j;
    wj_json_init(&j, line, sizeof line);
    wj_json_begin(&j);
    wj_json_strn(&j, "a", (const char *)data, size);
    wj_json_str(&j, "b", out);
    wj_json_end(&j);
    if (j.overflow) return 0;
    if (strlen(line) != j.len) abort();
    int in_string = 0;
    for (size_t i = 0; i < j.len; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c < 0x20) abort();
        if (c == '\\') { i++; continue; }
        if (c == '"') in_string = !in_string;
    }
    if (in_string) abort();
    return 0;
}
