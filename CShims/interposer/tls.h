// The TLS libraries' hooks (tls.c) and what the byte-counting hooks tell them.
#ifndef WEDJAT_TLS_H
#define WEDJAT_TLS_H
#include "base.h"
// Set by the byte-counting hooks while a TLS call runs on this thread: the socket it used.
WJ_HIDDEN extern __thread int wj_tls_inside __attribute__((tls_model("initial-exec")));
WJ_HIDDEN extern __thread int wj_tls_fd __attribute__((tls_model("initial-exec")));
#endif
