// Which sockets' calls go straight to the kernel (context.h, conns.h): a socket known
// O_NONBLOCK in the epoch it opened in, until a child may share it (a new epoch) or the
// process's first pthread_cancel (off for good).
#include "cunit.h"
#include "conns.h"
#include <sys/socket.h>
#include <unistd.h>

_Atomic uint32_t wj_direct_epoch;

static wj_conn *pair_end(int *fd_out) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 0;
    close(sv[1]);
    uint32_t slot;
    *fd_out = sv[0];
    return wj_conn_new(sv[0], WJ_TRANSPORT_UNIX, AF_UNIX, WJ_ROLE_PAIR, wj_now_ns(), &slot);
}

static void drop(int fd) {
    wj_event ev;
    wj_fd_drop(fd, wj_now_ns(), &ev);
    close(fd);
}

void test_direct(void) {
    int fd, fd2;
    wj_conn *c = pair_end(&fd);
    CHECK(c != 0, "a connection");
    CHECK(!wj_conn_direct(c), "a new socket goes through libc");
    wj_conn_note_nonblock(c, 1);
    CHECK(wj_conn_direct(c) && WJ_LOAD(c->nonblock), "O_NONBLOCK set: direct");
    wj_conn_note_nonblock(c, 0);
    CHECK(!wj_conn_direct(c) && !WJ_LOAD(c->nonblock), "O_NONBLOCK cleared: libc again");
    wj_conn_note_nonblock(c, 1);

    // A fork, vfork or clone: nothing learnt before holds, and a socket opened before can
    // never be direct again (the child may change its flags unseen).
    wj_direct_new_epoch();
    CHECK(!wj_conn_direct(c), "after a child: libc");
    wj_conn_note_nonblock(c, 1);
    CHECK(!wj_conn_direct(c) && WJ_LOAD(c->nonblock), "a socket from before the child stays with libc");
    wj_conn *d = pair_end(&fd2);
    wj_conn_note_nonblock(d, 1);
    CHECK(wj_conn_direct(d), "a socket opened since: direct");

    // The first pthread_cancel: off for every socket, and new epochs do not bring it back.
    wj_direct_off();
    CHECK(!wj_conn_direct(d), "after a cancel: libc");
    wj_conn_note_nonblock(d, 1);
    CHECK(!wj_conn_direct(d), "marking after a cancel: still libc");
    wj_direct_new_epoch();
    drop(fd);
    drop(fd2);
    wj_conn *e = pair_end(&fd);
    wj_conn_note_nonblock(e, 1);
    CHECK(!wj_conn_direct(e) && WJ_LOAD(e->direct) == WJ_DIRECT_NONE, "off survives a new epoch");
    drop(fd);

    // The epoch never reaches the value that means "not direct" with the off bit.
    atomic_store(&wj_direct_epoch, 0x7ffffffeu);
    wj_direct_new_epoch();
    CHECK(atomic_load(&wj_direct_epoch) == 0, "the epoch wraps before 0x7fffffff: %x", atomic_load(&wj_direct_epoch));
    atomic_store(&wj_direct_epoch, 0);
}
