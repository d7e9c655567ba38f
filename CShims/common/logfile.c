// The per-process NDJSON file. Writes are batches of whole lines; a batch either lands
// whole or is dropped and counted (a short write is cut back with ftruncate), so a reader
// never sees half a line from wedjat, even on a full disk.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wedjat_common.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sys_raw.h"

static int sys_fstat(int fd, struct stat *st) { return (int)syscall(SYS_fstat, fd, st); }
static int sys_lstat(const char *p, struct stat *st) {
    return (int)syscall(SYS_newfstatat, AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW);
}
static int sys_mkdir(const char *p, int mode) { return (int)syscall(SYS_mkdirat, AT_FDCWD, p, mode); }

int wj_ensure_dir(const char *dir, char *why, size_t why_len) {
    char path[WJ_PATH_MAX];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) { snprintf(why, why_len, "bad directory name"); return 0; }
    memcpy(path, dir, len + 1);
    // mkdir -p, each new level 0700; the common case (it exists) costs one lstat, the one below.
    struct stat st;
    int existed = sys_lstat(dir, &st) == 0;
    int made = existed || sys_mkdir(path, 0700) == 0 || errno == EEXIST;
    for (size_t i = 1; !made && i <= len; i++) {
        if (path[i] == '/' || path[i] == 0) {
            char c = path[i];
            path[i] = 0;
            if (sys_mkdir(path, 0700) != 0 && errno != EEXIST) {
                snprintf(why, why_len, "cannot create %.300s: %s", path, strerror(errno));
                return 0;
            }
            path[i] = c;
        }
    }
    if (!existed && sys_lstat(dir, &st) != 0) { snprintf(why, why_len, "cannot stat %s: %s", dir, strerror(errno)); return 0; }
    if (S_ISLNK(st.st_mode)) {
        // A link is followed only if it is ours and points to a directory of ours: a link
        // someone else planted (the classic attack on a predictable /tmp path) is refused,
        // for root as for anyone.
        if (st.st_uid != geteuid()) {
            snprintf(why, why_len, "%s is a link owned by uid %u", dir, (unsigned)st.st_uid);
            return 0;
        }
        if (syscall(SYS_newfstatat, AT_FDCWD, dir, &st, 0) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(why, why_len, "%s is a link to something that is not a directory", dir);
            return 0;
        }
        if (st.st_uid != geteuid()) {
            snprintf(why, why_len, "%s is a link to a directory owned by uid %u", dir, (unsigned)st.st_uid);
            return 0;
        }
    }
    if (!S_ISDIR(st.st_mode)) { snprintf(why, why_len, "%s is not a directory", dir); return 0; }
    // Someone else's directory is only acceptable when sticky (like /tmp): O_EXCL|O_NOFOLLOW
    // creation is safe there. A non-sticky directory others can write to is not. The same
    // for root: being able to write anywhere is no reason to write where others can tamper.
    int others_write = (st.st_mode & 0022) != 0;
    int sticky = (st.st_mode & S_ISVTX) != 0;
    if ((st.st_uid != geteuid() || others_write) && !sticky) {
        snprintf(why, why_len, "%s is writable by others or owned by uid %u", dir, (unsigned)st.st_uid);
        return 0;
    }
    return 1;
}

void wj_logfile_set_header(wj_logfile *lf, const char *header, size_t len) {
    pthread_mutex_lock(&lf->lock);
    lf->header = header;
    lf->header_len = len;
    lf->header_landed = 0;
    pthread_mutex_unlock(&lf->lock);
}

void wj_logfile_init(wj_logfile *lf, const char *path, uint64_t max_bytes) {
    memset(lf, 0, sizeof *lf);
    pthread_mutex_init(&lf->lock, NULL);
    atomic_store(&lf->fd, -1);
    lf->max_bytes = max_bytes;
    lf->pid = wj_sys_getpid();
    snprintf(lf->path, sizeof lf->path, "%s", path);
}

int wj_logfile_fd(wj_logfile *lf) { return atomic_load(&lf->fd); }

static int open_log(wj_logfile *lf) {
    int reopen = lf->ino != 0;
    int fd = -1;
    if (reopen) {
        // The file we had: append to it if it is still there and still ours.
        fd = wj_sys_open(lf->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd >= 0) {
            struct stat st;
            if (sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != lf->ino ||
                (uint64_t)st.st_dev != lf->dev) {
                wj_sys_close(fd);
                fd = -1;
            }
        }
    }
    if (fd < 0) {
        if (!reopen) {
            char dir[WJ_PATH_MAX];
            snprintf(dir, sizeof dir, "%s", lf->path);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir) {
                *slash = 0;
                if (!wj_ensure_dir(dir, lf->error, sizeof lf->error)) { lf->failed = 1; return -1; }
            }
        }
        fd = wj_sys_open(lf->path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && !reopen && errno == EEXIST) {
            // Created by an earlier attempt of ours that lost its fd before noting the file:
            // take it if it is a regular file of ours (never someone else's, never a link).
            fd = wj_sys_open(lf->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
            struct stat st;
            if (fd >= 0 && (sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
                wj_sys_close(fd);
                fd = -1;
                errno = EEXIST;
            }
        }
        if (fd < 0 && reopen && errno == EEXIST) {
            // Our file was moved away and something else took its name: use a new name.
            char alt[WJ_PATH_MAX];
            snprintf(alt, sizeof alt, "%.*s.r%d", (int)(sizeof alt - 16), lf->path, lf->reopen_count + 1);
            memcpy(lf->path, alt, sizeof alt);
            fd = wj_sys_open(lf->path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        }
        if (fd < 0) {
            snprintf(lf->error, sizeof lf->error, "cannot create %.300s: %s", lf->path, strerror(errno));
            if (!reopen) lf->failed = 1;
            return -1;
        }
        lf->size = 0;
    }
    struct stat st;
    if (sys_fstat(fd, &st) == 0) {
        lf->dev = (uint64_t)st.st_dev;
        lf->ino = (uint64_t)st.st_ino;
        lf->size = (uint64_t)st.st_size;
    }
    if (reopen) lf->reopen_count++;
    atomic_store(&lf->fd, fd);
    return fd;
}

// Is lf->fd still our file, at our path? Catches a file moved away or deleted (the path then
// names nothing, or another file). A path that cannot be looked at any more (a process that
// dropped to another user after opening its log) says nothing: the fd is still ours.
static int still_ours(wj_logfile *lf, int fd) {
    struct stat st;
    if (sys_fstat(fd, &st) != 0) return 0;
    if ((uint64_t)st.st_dev != lf->dev || (uint64_t)st.st_ino != lf->ino) return 0;
    lf->size = (uint64_t)st.st_size;  // also notices truncation by someone else
    struct stat at;
    int r = (int)syscall(SYS_newfstatat, AT_FDCWD, lf->path, &at, AT_SYMLINK_NOFOLLOW);
    if (r != 0 && errno != ENOENT && errno != ENOTDIR) return 1;
    if (r != 0 || (uint64_t)at.st_ino != lf->ino || (uint64_t)at.st_dev != lf->dev) {
        // Moved or deleted under us: keep the old fd out of use and create the path again.
        wj_sys_close(fd);
        lf->ino = 1;  // "reopen" path, but the identity check will fail and we create anew
        return 0;
    }
    return 1;
}

#define WJ_FS_RESERVE (64 * 1024)

// Whole or nothing: a short write is cut back so the file never ends in half a line. Two
// pieces (the header and the first lines) go in one writev.
static int write_all(wj_logfile *lf, int fd, const char *a, size_t a_len, const char *b, size_t b_len) {
    size_t len = a_len + b_len, done = 0;
    while (done < len) {
        struct iovec iov[2];
        int n_iov = 0;
        if (done < a_len) iov[n_iov++] = (struct iovec){(void *)(a + done), a_len - done};
        size_t b_done = done > a_len ? done - a_len : 0;
        if (b_len > b_done) iov[n_iov++] = (struct iovec){(void *)(b + b_done), b_len - b_done};
        long n = syscall(SYS_writev, fd, iov, n_iov);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    if (done == len) {
        lf->size += len;
        return 1;
    }
    if (done > 0) syscall(SYS_ftruncate, fd, (long)lf->size);
    return 0;
}

static void drop(wj_logfile *lf, size_t len) {
    lf->dropped_writes++;
    lf->dropped_bytes += len;
}

int wj_logfile_write(wj_logfile *lf, const char *buf, size_t len) {
    int saved_errno = errno;
    int ok = 0;
    pthread_mutex_lock(&lf->lock);
    if (lf->failed || len == 0) { if (len) drop(lf, len); goto out; }
    int fd = atomic_load(&lf->fd);
    if (fd >= 0 && !still_ours(lf, fd)) {
        atomic_store(&lf->fd, -1);
        fd = -1;
    }
    if (fd < 0) fd = open_log(lf);
    if (fd < 0) { drop(lf, len); goto out; }

    struct rlimit fs;
    uint64_t limit = lf->max_bytes;
    if (getrlimit(RLIMIT_FSIZE, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY && (uint64_t)fs.rlim_cur < limit)
        limit = (uint64_t)fs.rlim_cur;  // past it the kernel would send SIGXFSZ to the app
    // The last 1/16 (at most 64 KiB) is kept for process_end: a full log still says how the
    // process ended and what was dropped.
    uint64_t reserve = limit / 16 < 65536 ? limit / 16 : 65536;
    if (!lf->final_phase) limit -= reserve;
    if (lf->size + len > limit) { drop(lf, len); goto out; }
    // The same for the file system: the last WJ_FS_RESERVE bytes free on it are left for
    // process_end, so a log on a full disk still ends properly once a little space came back.
    // (f_blocks 0: no size limit, e.g. an unbounded tmpfs.)
    if (!lf->final_phase && !lf->reserve_ok) {
        struct statfs fs;
        if (syscall(SYS_fstatfs, fd, &fs) == 0 && fs.f_blocks > 0 &&
            (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize < len + WJ_FS_RESERVE) {
            drop(lf, len);
            goto out;
        }
    }

    // Every file begins with its header (process_start): a file created anew (the old one was
    // moved or deleted), emptied by someone, or whose first write failed gets it first.
    if (lf->header && (!lf->header_landed || lf->size == 0)) {
        if (lf->size + lf->header_len + len > limit || !write_all(lf, fd, lf->header, lf->header_len, buf, len)) {
            drop(lf, len);
            goto out;
        }
        lf->header_landed = 1;
        ok = 1;
        goto out;
    }
    if (write_all(lf, fd, buf, len, 0, 0)) ok = 1;
    else drop(lf, len);
out:
    pthread_mutex_unlock(&lf->lock);
    errno = saved_errno;
    return ok;
}

void wj_logfile_close(wj_logfile *lf) {
    pthread_mutex_lock(&lf->lock);
    int fd = atomic_exchange(&lf->fd, -1);
    if (fd >= 0) wj_sys_close(fd);
    pthread_mutex_unlock(&lf->lock);
}

int wj_logfile_open_now(wj_logfile *lf) {
    pthread_mutex_lock(&lf->lock);
    int fd = atomic_load(&lf->fd);
    if (fd < 0 && !lf->failed) fd = open_log(lf);
    pthread_mutex_unlock(&lf->lock);
    return fd >= 0;
}
