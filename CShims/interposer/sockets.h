// What the socket hooks share with the I/O, fd and syscall hooks.
#ifndef WEDJAT_SOCKETS_H
#define WEDJAT_SOCKETS_H
#include "base.h"
#include "conns.h"
#include <sys/socket.h>

WJ_HIDDEN int wj_is_retry(int err);   // EAGAIN, EINTR, EINPROGRESS...: not a failure
WJ_HIDDEN void wj_to_addr(wj_addr *out, char *path, const struct sockaddr *sa, socklen_t len);
WJ_HIDDEN void wj_sock_name(int fd, wj_addr *out, char *path, int peer);
WJ_HIDDEN void wj_open_event(wj_event *ev, int fd, int role, int transport, uint64_t t_start, uint64_t t_end);
// After socket() made fd: a UDP socket is tracked from its creation.
WJ_HIDDEN void wj_socket_made(int fd, int domain, int type, int protocol);
// After accept()/accept4() returned r: a new server connection. Returns r, errno kept.
WJ_HIDDEN int wj_accepted(int r, int flags);  // flags: accept4's
// A UDP socket's first datagram tells its role.
// A forked child's first use of a connection it inherited: its open event (the parent's
// conn_id, the offsets it took over), so that its log goes on where the parent's left it.
WJ_HIDDEN void wj_inherited_first_use(wj_conn *c, int fd);
WJ_HIDDEN void wj_udp_first_io(wj_conn *c, int fd, int dir, uint64_t now);
#endif
