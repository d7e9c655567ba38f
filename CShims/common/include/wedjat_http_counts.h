// HTTP/1 exchanges past the record budget, counted where they end: on the app's thread, in the
// hook that moved the response's last byte, into a fixed table of summary keys. No event, no
// copy to the aggregator: it takes the table's counts when it writes http_summary records
// (wedjat_agent_api.h, http_counts_take) and adds them to its own for the same key.
#ifndef WEDJAT_HTTP_COUNTS_H
#define WEDJAT_HTTP_COUNTS_H
#include "wedjat_agent_api.h"
#include "wedjat_http1.h"

#ifdef __cplusplus
extern "C" {
#endif

// One exchange that ended whole (wedjat_http1.h, wj_h1_sink.exchange). `hint` is the caller's
// cache of the key it used last (start at -1). 0 when it could not be counted here (the
// table is full or could not be mapped): the caller hands the messages over instead.
int wj_http_count_exchange(int server, int tls, const wj_h1_msg *req, const wj_h1_msg *resp, int32_t *hint);
// The agent's side (wj_agent_api.http_counts_take).
int wj_http_counts_take(uint32_t index, wj_http_count *out, uint32_t *duration_hist, uint32_t *ttfb_hist);
// In a forked child: the parent's counts are the parent's (the table is let go; a new one
// is mapped at the child's first count). Also what tests use to start from nothing.
void wj_http_counts_forked(void);

#ifdef __cplusplus
}
#endif
#endif
