// What the fd hooks share with the syscall() hook (the same system calls, made raw).
#ifndef WEDJAT_FDS_H
#define WEDJAT_FDS_H
#include "base.h"
#include "wedjat_common.h"

WJ_HIDDEN int wj_closing(int fd, wj_event *ev);   // before close(fd): 1 if a close event follows
WJ_HIDDEN void wj_closed(wj_event *ev);           // after it: push that event (errno kept)
WJ_HIDDEN void wj_replacing(int oldfd, int newfd);
WJ_HIDDEN int wj_duplicated(int oldfd, int newfd);
WJ_HIDDEN int wj_fcntl_done(int fd, int cmd, long arg, int r);
WJ_HIDDEN int wj_ioctl_done(int fd, unsigned long request, void *arg, int r);
WJ_HIDDEN void wj_close_range_done(unsigned lo, unsigned hi, int flags, int r);
#endif
