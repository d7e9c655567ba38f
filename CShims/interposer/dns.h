// Resolver hooks (dns.c) and the DNS a resolver that bypasses libc sends itself.
#ifndef WEDJAT_DNS_H
#define WEDJAT_DNS_H
#include "base.h"
#include "conns.h"
#include <sys/uio.h>
// A datagram to or from port 53 on a UDP connection: queries are remembered, answers become
// dns records.
WJ_HIDDEN void wj_dns_datagram(wj_conn *c, int dir, const void *buf, const struct iovec *iov, int iovcnt, uint64_t n);
#endif
