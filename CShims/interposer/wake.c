#include "wake.h"
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"

_Atomic uint32_t wj_wake_word;
_Atomic uint32_t wj_requests;
static _Atomic int woken;   // a producer already woke the agent for this drain

void wj_wake(void) {
    int err = errno;
    atomic_fetch_add(&wj_wake_word, 1);
    syscall(SYS_futex, (uint32_t *)&wj_wake_word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
    errno = err;
}

void wj_wake_once(void) {
    if (atomic_exchange_explicit(&woken, 1, memory_order_relaxed)) return;
    wj_wake();
}

void wj_wake_rearm(void) { atomic_store_explicit(&woken, 0, memory_order_relaxed); }
