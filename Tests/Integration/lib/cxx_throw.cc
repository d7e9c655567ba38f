// cxx_throw.cc: the C++ exception cost check for the stall sampler. Makes the main thread a
// loop thread (one poll), stalls it for 300 ms (so wedjat loads libunwind and samples it),
// then throws and catches N exceptions (argv[1], default 100000) through a few frames and
// prints the count and the seconds that took, then the objects that define the unwinder's
// entry points as the program calls them (its own GOT) and as the global scope resolves them
// now: "unwinder RaiseException-called RaiseException-global Find_FDE-global".
#include <dlfcn.h>
#include <unwind.h>
#include <poll.h>
#include <stdexcept>
#include <chrono>
#include <cstdio>
#include <cstdlib>

[[gnu::noinline]] static void thrower(int depth) {
    if (depth == 0) throw std::runtime_error("x");
    thrower(depth - 1);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    poll(nullptr, 0, 0);
    auto spin_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < spin_end) {}
    poll(nullptr, 0, 0);
    auto t0 = std::chrono::steady_clock::now();
    long caught = 0;
    for (long i = 0; i < n; i++) {
        try { thrower(3); } catch (const std::exception &) { caught++; }
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%ld %.4f\n", caught, s);
    auto object_of = [](void *p) -> const char * {
        Dl_info info;
        return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "none";
    };
    printf("unwinder %s %s %s\n", object_of((void *)&_Unwind_RaiseException),
           object_of(dlsym(RTLD_DEFAULT, "_Unwind_RaiseException")), object_of(dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE")));
    return caught == n ? 0 : 1;
}
