// Resolving the real functions. dlsym(RTLD_NEXT) makes no allocation on glibc 2.36; objects
// loaded RTLD_LOCAL are searched too (see find_in_loaded).
#include "real.h"
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"

wj_real_table wj_real;

// Objects loaded RTLD_LOCAL (a TLS library that Python's _ssl module brought in) are not
// in RTLD_NEXT's reach, yet the app's calls into them land here: look through every
// loaded object for the definition.
typedef struct { const char *names[256]; int n; } loaded_objects;

static int collect_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    loaded_objects *lo = (loaded_objects *)data;
    if (info->dlpi_name && info->dlpi_name[0] && lo->n < 256) lo->names[lo->n++] = info->dlpi_name;
    return 0;
}

static void *find_in_loaded(const char *name) {
    loaded_objects lo;
    lo.n = 0;
    dl_iterate_phdr(collect_object, &lo);  // no dlopen inside the callback: it holds a lock
    Dl_info self;
    dladdr((void *)&find_in_loaded, &self);
    for (int i = 0; i < lo.n; i++) {
        if (self.dli_fname && strcmp(lo.names[i], self.dli_fname) == 0) continue;
        void *h = dlopen(lo.names[i], RTLD_NOLOAD | RTLD_LAZY);
        if (!h) continue;
        void *p = dlsym(h, name);
        dlclose(h);
        if (p && p != dlsym(RTLD_DEFAULT, name)) return p;  // not our own export
    }
    return 0;
}

void wj_real_warm_for_children(void) {
    (void)WJ_REAL(_exit);
    (void)WJ_REAL(exit);
    (void)WJ_REAL(execve);
}

void *wj_resolve(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) p = find_in_loaded(name);
    if (!p) {
        static const char msg[] = "wedjat: a function it needs is missing; aborting\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        syscall(SYS_exit_group, 127);
    }
    return p;
}
