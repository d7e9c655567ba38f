// Macros every file of the interposer uses. No declarations of anyone's functions: the
// runtime's files form layers (docs/RUNTIME.md), each including only the headers below it.
#ifndef WEDJAT_BASE_H
#define WEDJAT_BASE_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stdint.h>

#define WJ_HIDDEN __attribute__((visibility("hidden")))
#define WJ_EXPORT __attribute__((visibility("default")))
#define WJ_LIKELY(x) __builtin_expect(!!(x), 1)
#define WJ_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define WJ_TLS __thread __attribute__((tls_model("initial-exec")))

// Shared fields that many threads touch without ordering needs (plain moves on x86-64).
#define WJ_LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define WJ_STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

enum { WJ_IN = 0, WJ_OUT = 1 };

#define WEDJAT_VERSION "0.1.0"
#endif
