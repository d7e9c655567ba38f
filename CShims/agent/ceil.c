// The one libm function the embedded agent calls (the stdlib's Dictionary and Set round their
// capacities up with it), defined here so that libwedjat-agent.so does not need libm: curl,
// nginx, git and most short programs do not load it, and loading it with the agent cost every
// such process a library more to find, map and relocate. Compiled into the agent only
// (scripts/build-lib.sh); hidden, like everything in the agent but its entry point.
__attribute__((visibility("hidden"))) double ceil(double x) {
    // NaN, infinities and every |x| >= 2^52 are integral already.
    if (!(__builtin_fabs(x) < 4503599627370496.0)) return x;
    double t = (double)(long long)x;   // rounded toward zero, exactly
    if (t < x) t += 1.0;
    return __builtin_copysign(t, x);   // ceil(-0.5) is -0.0
}
