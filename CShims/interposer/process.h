// The process image wedjat reports on: identity (pid, program, log paths), configuration,
// clock anchor. Set once at initialisation and again in a forked child (lifecycle.c); read
// by everyone else.
#ifndef WEDJAT_PROCESS_H
#define WEDJAT_PROCESS_H
#include "base.h"
#include "wedjat_agent_api.h"

WJ_HIDDEN extern wj_process wj_proc;

// Reads the configuration and the image's identity (exe, program name, pid, clock anchor, log
// path). No file is opened. Returns 0 when wedjat must stay out of the way (AT_SECURE,
// WEDJAT_DISABLE).
WJ_HIDDEN int wj_process_configure(void);
// A new identity for this image (a forked child): pid, clock anchor, log path.
WJ_HIDDEN void wj_process_new_identity(void);
// The log path again, after the log directory changed (the exec chain's, see records.h).
WJ_HIDDEN void wj_process_new_identity_path(void);

WJ_HIDDEN const char *wj_errno_name(int err);
// CLOCK_MONOTONIC ns -> microseconds since the Unix epoch, through the image's clock anchor.
WJ_HIDDEN int64_t wj_epoch_us(uint64_t mono_ns);
#endif
