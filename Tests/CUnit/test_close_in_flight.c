// A connection whose last fd is closed while a call is still in flight on it ends when that
// call returns (conns.c): the orders that matter, made explicit on one thread (the hooks'
// brackets are what io.c calls around the real call).
#include "cunit.h"
#include "conns.h"
#include "events.h"
#include "process.h"
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

wj_process wj_proc;
static wj_event pushed[8];
static int n_pushed;
void wj_push(wj_event *ev) {
    if (n_pushed < 8) pushed[n_pushed] = *ev;
    n_pushed++;
}

static wj_conn *open_conn(int transport, int *fd_out, uint64_t *id) {
    int fd = socket(AF_INET, transport == WJ_TRANSPORT_TCP ? SOCK_STREAM : SOCK_DGRAM, 0);
    uint32_t slot;
    wj_conn *c = wj_conn_new(fd, transport, AF_INET, WJ_ROLE_CLIENT, wj_now_ns(), &slot);
    *fd_out = fd;
    *id = c ? WJ_LOAD(c->conn_id) : 0;
    return c;
}

// close(fd) as the hook does it: the drop, the real close, the event pushed.
static void close_fd(int fd) {
    wj_event ev;
    int ended = wj_fd_drop(fd, wj_now_ns(), &ev);
    close(fd);
    if (ended) wj_push(&ev);
}

void test_close_in_flight(void) {
    int fd;
    uint64_t id;
    n_pushed = 0;

    // Not busy: the close ends it at once.
    wj_conn *c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    CHECK(c != 0, "a connection");
    close_fd(fd);
    CHECK(n_pushed == 1 && pushed[0].conn_id == id && pushed[0].kind == WJ_EV_CONN_CLOSE, "ended at the close: %d", n_pushed);

    // A recv in flight on another thread when the socket is closed: nothing at the close; the
    // recv's bytes count, and its return ends the connection with them.
    n_pushed = 0;
    c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    int closed_fd = fd;
    wj_conn_call_begin(c, WJ_IN);
    uint64_t t_close = wj_now_ns();
    close_fd(fd);
    CHECK(n_pushed == 0, "no close event while the call is in flight: %d", n_pushed);
    CHECK(WJ_LOAD(c->conn_id) == id, "the connection lives on until the call returns");
    atomic_fetch_add(&c->bytes_in, 62);   // what the recv counts as it returns
    wj_conn_call_done(c, WJ_IN);
    CHECK(n_pushed == 1, "one close event at the call's return: %d", n_pushed);
    CHECK(pushed[0].conn_id == id && pushed[0].bytes_in == 62, "with the call's bytes: %llu",
          (unsigned long long)pushed[0].bytes_in);
    CHECK(pushed[0].fd == closed_fd && pushed[0].t_end >= t_close, "the closed fd, ended after the close");
    CHECK(WJ_LOAD(c->conn_id) == 0 && atomic_load(&c->state) == 0, "the slot is free again");

    // A reader and a writer in flight: the first to return leaves it to the other.
    n_pushed = 0;
    c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    wj_conn_call_begin(c, WJ_IN);
    wj_conn_call_begin(c, WJ_OUT);
    close_fd(fd);
    wj_conn_call_done(c, WJ_OUT);
    CHECK(n_pushed == 0, "the reader is still in its call: %d", n_pushed);
    wj_conn_call_done(c, WJ_IN);
    CHECK(n_pushed == 1 && pushed[0].conn_id == id, "ended by the last call: %d", n_pushed);

    // A return the closer did not see (both looked at once): the sweep ends it at its last I/O.
    n_pushed = 0;
    c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    wj_conn_call_begin(c, WJ_OUT);
    close_fd(fd);
    uint64_t last_io = WJ_LOAD(c->t_end_asked) + 5000;
    WJ_STORE(c->t_last_io, last_io);
    WJ_STORE(c->busy[WJ_OUT], 0);   // returned without looking
    wj_conns_end_overdue(wj_now_ns(), 1000000000ull);
    CHECK(n_pushed == 1 && pushed[0].conn_id == id && pushed[0].t_end == last_io, "swept, ended at its last I/O: %d",
          n_pushed);

    // A call that never returns (longjmp out of it): ended by the sweep once overdue, and its
    // stale return later ends nothing twice.
    n_pushed = 0;
    c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    wj_conn_call_begin(c, WJ_IN);
    close_fd(fd);
    wj_conns_end_overdue(wj_now_ns(), 1000000000ull);
    CHECK(n_pushed == 0, "not overdue yet: %d", n_pushed);
    wj_conns_end_overdue(wj_now_ns(), 0);
    CHECK(n_pushed == 1 && pushed[0].conn_id == id, "ended when overdue: %d", n_pushed);
    wj_conn_call_done(c, WJ_IN);
    CHECK(n_pushed == 1, "not ended twice: %d", n_pushed);

    // The round's time taken before the close (the agent's round began, the app closed, then
    // the sweep ran): the end asked is newer than `now`, so the call is not overdue (the
    // unsigned difference wrapped, and a reader still in recv lost its response).
    n_pushed = 0;
    uint64_t round_now = wj_now_ns();
    c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    wj_conn_call_begin(c, WJ_IN);
    close_fd(fd);
    wj_conns_end_overdue(round_now, 1000000000ull);
    CHECK(n_pushed == 0, "a round older than the close ends nothing: %d", n_pushed);
    wj_conn_call_done(c, WJ_IN);
    CHECK(n_pushed == 1 && pushed[0].conn_id == id, "ended when the call returned: %d", n_pushed);

    // UDP is not held for a call.
    n_pushed = 0;
    c = open_conn(WJ_TRANSPORT_UDP, &fd, &id);
    wj_conn_call_begin(c, WJ_IN);
    close_fd(fd);
    CHECK(n_pushed == 1, "a datagram socket ends at its close: %d", n_pushed);
    wj_conn_call_done(c, WJ_IN);
    CHECK(n_pushed == 1, "and only then: %d", n_pushed);

    // A fork while an end waits for a call: the child does not report the parent's connection.
    n_pushed = 0;
    c = open_conn(WJ_TRANSPORT_TCP, &fd, &id);
    wj_conn_call_begin(c, WJ_IN);
    close_fd(fd);
    wj_conns_forked();
    wj_conns_end_overdue(wj_now_ns(), 0);
    wj_conn_call_done(c, WJ_IN);
    CHECK(n_pushed == 0, "the forked child ends nothing of its parent's: %d", n_pushed);
}
