// simdjson 3 (Debian's libsimdjson-dev) on every line of an NDJSON log, as wedjat's reader
// would use it: each line parsed and validated whole (DOM), its "type" field read; then the
// same with simdjson's own NDJSON batch parser (parse_many). Prints, one line each:
//   dom <lines> <bytes> <seconds>
//   many <documents> <bytes> <seconds>
// Build: g++ -O3 -std=c++17 -o simdjson_parse simdjson_parse.cpp -lsimdjson
#include <simdjson.h>
#include <chrono>
#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
    if (argc != 2) { std::fprintf(stderr, "usage: %s LOG.ndjson\n", argv[0]); return 2; }
    simdjson::padded_string text;
    if (simdjson::padded_string::load(argv[1]).get(text)) { std::fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    simdjson::dom::parser parser;
    size_t lines = 0, ok = 0;
    auto t0 = std::chrono::steady_clock::now();
    const char *p = text.data(), *end = p + text.size();
    while (p < end) {
        const char *nl = static_cast<const char *>(std::memchr(p, '\n', end - p));
        if (!nl) nl = end;
        simdjson::dom::element doc;
        // The line is inside the padded file: its padding is the bytes that follow.
        if (!parser.parse(p, nl - p, false).get(doc)) {
            std::string_view type;
            if (!doc["type"].get(type)) ok++;
        }
        lines++;
        p = nl + 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    std::printf("dom %zu %zu %.6f\n", ok, text.size(), std::chrono::duration<double>(t1 - t0).count());
    size_t docs = 0;
    auto t2 = std::chrono::steady_clock::now();
    simdjson::dom::document_stream stream;
    if (!parser.parse_many(text).get(stream)) {
        for (auto d : stream) { std::string_view type; if (!d["type"].get(type)) docs++; }
    }
    auto t3 = std::chrono::steady_clock::now();
    std::printf("many %zu %zu %.6f\n", docs, text.size(), std::chrono::duration<double>(t3 - t2).count());
    (void)lines;
    return 0;
}
