// The TLS libraries' hooks (tls.c) and what the byte-counting hooks tell them.
#ifndef WEDJAT_TLS_H
#define WEDJAT_TLS_H
#include "base.h"
// While a TLS call whose socket the library could not name runs on this thread
// (context.h WJ_T_TLS_LEARN), the byte-counting hooks set this: the socket it used.
WJ_HIDDEN extern __thread int wj_tls_fd __attribute__((tls_model("initial-exec")));
#endif
