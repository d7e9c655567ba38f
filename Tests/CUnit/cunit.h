// A minimal harness for the C unit tests of the interposer's pure parts (run.sh).
#ifndef WEDJAT_CUNIT_H
#define WEDJAT_CUNIT_H
#include <stdio.h>
#include <string.h>

extern int cunit_failures, cunit_checks;
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        cunit_checks++;                                                           \
        if (!(cond)) {                                                            \
            cunit_failures++;                                                     \
            fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)
#define CHECK_STR(got, want)                                                      \
    CHECK(strcmp((got), (want)) == 0, "got \"%s\", want \"%s\"", (got), (want))

void test_lifecycle(void);
void test_redact(void);
void test_ring(void);
void test_h1_stash(void);
void test_close_in_flight(void);
void test_direct(void);
void test_json(void);
void test_agent_ceil(void);
#endif
