// The agent's own ceil (CShims/agent/ceil.c, so that the agent needs no libm) against libm's,
// bit for bit: signed zeros, halves, the 2^52 boundary, infinities, NaN, and a million values
// from random bit patterns and random scaled integers.
#include <math.h>
#include <stdint.h>
#include "cunit.h"

#define ceil wj_agent_ceil
#include "../../CShims/agent/ceil.c"
#undef ceil

static int same(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

void test_agent_ceil(void) {
    const double fixed[] = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0000001, -2.0000001, 0.1, -0.1,
                            4503599627370495.5, -4503599627370495.5, 4503599627370496.0, -4503599627370496.0,
                            9007199254740993.0, 1e300, -1e300, 1e-300, -1e-300, 5e-324, -5e-324,
                            INFINITY, -INFINITY, NAN, 12345.678, -12345.678, 9.999999999999998};
    for (unsigned i = 0; i < sizeof fixed / sizeof *fixed; i++)
        CHECK(same(wj_agent_ceil(fixed[i]), ceil(fixed[i])), "ceil(%a): %a, libm %a", fixed[i], wj_agent_ceil(fixed[i]), ceil(fixed[i]));
    uint64_t s = 88172645463325252ull;
    int bad = 0;
    for (int i = 0; i < 1000000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double x;
        if (i & 1) x = (double)(int64_t)(s >> 11) / (double)(1u << (s & 31));
        else memcpy(&x, &s, sizeof x);
        if (!same(wj_agent_ceil(x), ceil(x)) && bad++ < 5)
            CHECK(0, "ceil(%a): %a, libm %a", x, wj_agent_ceil(x), ceil(x));
    }
    CHECK(bad == 0, "%d of a million random values differ from libm", bad);
}
