#include "cunit.h"

int cunit_failures, cunit_checks;

int main(void) {
    test_lifecycle();
    test_redact();
    test_ring();
    test_h1_stash();
    test_close_in_flight();
    test_direct();
    test_json();
    test_agent_ceil();
    printf("cunit: %d checks, %d failed\n", cunit_checks, cunit_failures);
    return cunit_failures != 0;
}
