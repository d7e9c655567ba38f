// The Swift runtime's command-line support, replaced for libwedjat-agent.so. The runtime's own
// (CommandLine.cpp) comes with a static initializer that, in a library loaded with dlopen,
// reads the host's /proc/self/maps to find its argv: about 0.5 ms in a process with many
// libraries, paid by every watched process whose agent loads. The agent never uses
// CommandLine.arguments, so these definitions keep that object out of the link: the
// arguments are empty.
#include <stddef.h>

__attribute__((visibility("hidden"))) char **_swift_stdlib_getUnsafeArgvArgc(int *argc) {
    static char *empty[] = {0};
    if (argc) *argc = 0;
    return empty;
}

__attribute__((visibility("hidden"))) void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    (void)argv;
    (void)argc;
}
