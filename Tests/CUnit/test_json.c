// The C records' string quoting (json.c): fixed cases, and random strings against a byte-by-byte
// oracle (the writer's former loop), whole and in buffers too small for them.
#include "cunit.h"
#include "wedjat_json.h"
#include <stdint.h>
#include <stdlib.h>

// The oracle: each byte on its own, as json.c wrote strings before it copied runs.
static size_t oracle(char *out, const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') { out[o++] = '\\'; out[o++] = (char)c; }
        else if (c == '\n') { out[o++] = '\\'; out[o++] = 'n'; }
        else if (c == '\r') { out[o++] = '\\'; out[o++] = 'r'; }
        else if (c == '\t') { out[o++] = '\\'; out[o++] = 't'; }
        else if (c < 0x20 || c == 0x7f) {
            memcpy(out + o, "\\u00", 4);
            out[o + 4] = hex[c >> 4];
            out[o + 5] = hex[c & 15];
            o += 6;
        } else if (c >= 0x80) {
            size_t len = (c >= 0xf0 && c <= 0xf4) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2 && c <= 0xdf) ? 2 : 0;
            int ok = len && i + len <= n;
            for (size_t k = 1; ok && k < len; k++) ok = (s[i + k] & 0xc0) == 0x80;
            if (ok) { memcpy(out + o, s + i, len); o += len; i += len - 1; }
            else { memcpy(out + o, "\\ufffd", 6); o += 6; }
        } else out[o++] = (char)c;
    }
    out[o++] = '"';
    out[o] = 0;
    return o;
}

static void check_one(const unsigned char *s, size_t n, const char *what) {
    static char want[8 * 1024], got[8 * 1024];
    size_t want_len = oracle(want, s, n);
    wj_json j;
    wj_json_init(&j, got, sizeof got);
    wj_json_strn(&j, 0, (const char *)s, n);
    CHECK(!j.overflow && j.len == want_len && memcmp(got, want, want_len) == 0, "%s: got %.*s, want %s", what,
          (int)j.len, got, want);
    // Too small by one byte or more: overflow, and nothing written past the first piece that did
    // not fit (the line is dropped, never written with a hole).
    size_t cap = want_len > 1 ? (size_t)(rand() % (int)want_len) + 1 : 1;
    wj_json_init(&j, got, cap);
    wj_json_strn(&j, 0, (const char *)s, n);
    CHECK(j.overflow && j.len < cap && memcmp(got, want, j.len) == 0, "%s: cap %zu, len %zu, overflow %d", what, cap,
          j.len, j.overflow);
}

void test_json(void) {
    static const struct { const char *in, *out; } cases[] = {
        {"plain", "\"plain\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"tab\there\nnl\rcr", "\"tab\\there\\nnl\\rcr\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"bad \xff end", "\"bad \\ufffd end\""},
        {"cut \xe2\x82", "\"cut \\ufffd\\ufffd\""},
        {"\x80lone", "\"\\ufffdlone\""},
        {"", "\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[256];
        wj_json j;
        wj_json_init(&j, buf, sizeof buf);
        wj_json_str(&j, 0, cases[i].in);
        CHECK_STR(buf, cases[i].out);
    }
    // A key and a value: `"k":"v"`, and a null value.
    char buf[64];
    wj_json j;
    wj_json_init(&j, buf, sizeof buf);
    wj_json_begin(&j);
    wj_json_str(&j, "k", "v");
    wj_json_str(&j, "n", 0);
    wj_json_end(&j);
    CHECK_STR(buf, "{\"k\":\"v\",\"n\":null}");
    // Members formatted before by another writer (process_start's argv, kept for forked
    // children), spliced in with the comma they need, first or after another member.
    char members[32];
    wj_json m;
    wj_json_init(&m, members, sizeof members);
    wj_json_begin_array(&m, "a");
    wj_json_int(&m, 0, 1);
    wj_json_end_array(&m);
    wj_json_str(&m, "b", "x");
    wj_json_init(&j, buf, sizeof buf);
    wj_json_begin(&j);
    wj_json_members(&j, members, m.len);
    wj_json_int(&j, "c", 2);
    wj_json_members(&j, members, m.len);
    wj_json_end(&j);
    CHECK_STR(buf, "{\"a\":[1],\"b\":\"x\",\"c\":2,\"a\":[1],\"b\":\"x\"}");
    // A key that does not fit: overflow, the line left as it was.
    wj_json_init(&j, buf, 8);
    wj_json_begin(&j);
    wj_json_str(&j, "longer", "v");
    CHECK(j.overflow && j.len == 1 && strcmp(buf, "{") == 0, "len %zu overflow %d", j.len, j.overflow);

    // Random strings drawn mostly from the bytes that matter (escapes, controls, UTF-8 leads
    // and continuations, plain ASCII), lengths 0 to 300.
    static const unsigned char alphabet[] = {'a', 'Z', ' ', '/', '"', '\\', '\n', '\r', '\t', 0x01, 0x1f, 0x7f,
                                             0x80, 0xbf, 0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
    srand(7);
    for (int round = 0; round < 3000; round++) {
        unsigned char s[300];
        size_t n = (size_t)(rand() % 301);
        for (size_t i = 0; i < n; i++)
            s[i] = rand() % 3 ? (unsigned char)(0x20 + rand() % 95) : alphabet[rand() % (int)sizeof alphabet];
        check_one(s, n, "random");
    }
}
