// A C stack for SymbolizerTests: main -> outer -> middle (static) -> inner, which prints its
// return addresses and the loaded modules. Every call is on a line marked `CALL <callee>`, so
// the test finds the line numbers it expects from this file. Build with -DVARIANT=2 for a
// different binary (another build-id).
#include "modules.h"

#ifndef VARIANT
#define VARIANT 1
#endif

__attribute__((noinline)) int inner(int n) {
    fixture_print_stack(); /* CALL fixture_print_stack */
    return n + VARIANT;
}

__attribute__((noinline)) static int middle(int n) {
    int r = inner(n * 2); /* CALL inner */
    return r + 1;
}

__attribute__((noinline)) int outer(int n) {
    int r = middle(n + 3); /* CALL middle */
    return r - 1;
}

int main(void) {
    int r = outer(4); /* CALL outer */
    return r == 0;
}
