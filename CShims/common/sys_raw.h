// wedjat's own system calls never go through libc's syscall(): libwedjat.so interposes that
// name (the raw calls programs make through it are seen). Every C file of the runtime
// includes this after the system headers; syscall(...) is then wj_raw_syscall(...).
#ifndef WEDJAT_SYS_RAW_H
#define WEDJAT_SYS_RAW_H
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) long wj_raw_syscall(long number, ...);
#define syscall wj_raw_syscall
#endif
