// A bounded JSON line builder over a caller's buffer: no allocation, no locks, so the
// interposer can write its own records from any exit path. Output past the capacity is cut
// and `overflow` set; callers check it and drop the record rather than write a broken line.
// Keys (the `key` arguments; 0: an array element, no key) are wedjat's own field names:
// printable ASCII without `"` or `\`, written as they are. Values are escaped.
#ifndef WEDJAT_JSON_H
#define WEDJAT_JSON_H
#include <stddef.h>
#include <stdint.h>

typedef struct wj_json {
    char *buf;
    size_t cap;
    size_t len;
    int comma;
    int overflow;
} wj_json;

void wj_json_init(wj_json *j, char *buf, size_t cap);
void wj_json_begin(wj_json *j);                    // {
void wj_json_end(wj_json *j);                      // }
void wj_json_begin_array(wj_json *j, const char *key);
void wj_json_end_array(wj_json *j);
void wj_json_begin_object(wj_json *j, const char *key);
void wj_json_key(wj_json *j, const char *key);
void wj_json_str(wj_json *j, const char *key, const char *value);            // NULL -> null
void wj_json_strn(wj_json *j, const char *key, const char *value, size_t n);
void wj_json_int(wj_json *j, const char *key, int64_t value);
void wj_json_uint(wj_json *j, const char *key, uint64_t value);
void wj_json_bool(wj_json *j, const char *key, int value);
void wj_json_null(wj_json *j, const char *key);
void wj_json_raw(wj_json *j, const char *raw);     // trusted JSON fragment
// Members formatted before by this writer ("k":v,"k2":v2), after a comma when one is due.
void wj_json_members(wj_json *j, const char *members, size_t n);
void wj_json_newline(wj_json *j);

// argv redaction (WEDJAT_ARGV=redact): writes the redacted form of `arg` into out.
// `previous` is the argument before it (secret-taking options redact their value).
void wj_redact_arg(const char *previous, const char *arg, char *out, size_t cap);
#endif
