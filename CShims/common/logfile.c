// The per-process NDJSON file. Writes are batches of whole lines; a batch either lands
// whole or is dropped and counted (a short write is cut back with ftruncate), so a reader
// never sees half a line from wedjat, even on a full disk.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wedjat_common.h"
#include "wedjat_json.h"
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
        if (st.st_uid != (uid_t)syscall(SYS_geteuid)) {
            snprintf(why, why_len, "%s is a link owned by uid %u", dir, (unsigned)st.st_uid);
            return 0;
        }
        if (syscall(SYS_newfstatat, AT_FDCWD, dir, &st, 0) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(why, why_len, "%s is a link to something that is not a directory", dir);
            return 0;
        }
        if (st.st_uid != (uid_t)syscall(SYS_geteuid)) {
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
    if ((st.st_uid != (uid_t)syscall(SYS_geteuid) || others_write) && !sticky) {
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

// Sets every field but the arrays, which are read only as far as they are written (no
// memset: in a new process the struct is untouched .bss, 26 KiB of it the closed segments,
// and each page written is a page fault).
void wj_logfile_init(wj_logfile *lf, const char *path, uint64_t max_bytes) {
    pthread_mutex_init(&lf->lock, NULL);
    atomic_store(&lf->fd, -1);
    lf->failed = 0;
    lf->pid = wj_sys_getpid();
    lf->dev = lf->ino = lf->size = 0;
    lf->max_bytes = max_bytes;
    lf->dropped_writes = lf->dropped_bytes = 0;
    lf->reopen_count = 0;
    lf->final_phase = lf->reserve_ok = 0;
    lf->header = 0;
    lf->header_len = 0;
    lf->header_landed = 0;
    wj_copy_str(lf->path, sizeof lf->path, path);
    lf->error[0] = 0;
    wj_segments *sg = &lf->seg;
    sg->segment_bytes = sg->segment_ns = sg->retain_bytes = sg->dir_retain_bytes = 0;
    sg->index = 0;
    sg->started_mono = sg->lines = 0;
    sg->n_closed = 0;
    sg->rotation_blocked = 0;
    sg->removed = sg->removed_unshipped = 0;
    sg->records_written[0] = sg->records_written[1] = sg->records_written[2] = 0;
    sg->anchor_mono = sg->anchor_real = 0;
    sg->pid = lf->pid;
    wj_copy_str(sg->base, sizeof sg->base, path);
}

void wj_logfile_set_segments(wj_logfile *lf, uint64_t segment_bytes, uint64_t segment_ns, uint64_t retain_bytes,
                             uint64_t dir_retain_bytes, uint64_t anchor_mono, uint64_t anchor_real, int pid) {
    pthread_mutex_lock(&lf->lock);
    lf->seg.segment_bytes = segment_bytes;
    lf->seg.segment_ns = segment_ns;
    lf->seg.retain_bytes = retain_bytes;
    lf->seg.dir_retain_bytes = dir_retain_bytes;
    lf->seg.anchor_mono = anchor_mono;
    lf->seg.anchor_real = anchor_real;
    lf->seg.pid = pid;
    pthread_mutex_unlock(&lf->lock);
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
            wj_copy_str(dir, sizeof dir, lf->path);
            char *slash = (char *)wj_strrchr(dir, '/');
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
            if (fd >= 0 && (sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != (uid_t)syscall(SYS_geteuid))) {
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

// Whole or nothing: a short write is cut back so the file never ends in half a line. The
// pieces (a header, its segment fields, the lines) go in one writev.
static int write_pieces(wj_logfile *lf, int fd, const struct iovec *pieces, int n_pieces) {
    size_t len = 0, done = 0;
    for (int i = 0; i < n_pieces; i++) len += pieces[i].iov_len;
    while (done < len) {
        struct iovec iov[4];
        int n_iov = 0;
        size_t skip = done;
        for (int i = 0; i < n_pieces && n_iov < 4; i++) {
            if (skip >= pieces[i].iov_len) { skip -= pieces[i].iov_len; continue; }
            iov[n_iov++] = (struct iovec){(char *)pieces[i].iov_base + skip, pieces[i].iov_len - skip};
            skip = 0;
        }
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

static int write_all(wj_logfile *lf, int fd, const char *a, size_t a_len, const char *b, size_t b_len) {
    struct iovec p[2] = {{(void *)a, a_len}, {(void *)b, b_len}};
    return write_pieces(lf, fd, p, b_len ? 2 : 1);
}

// Lines end every record (a few hundred bytes to a few KiB): memchr jumps between them.
static uint64_t count_lines(const char *buf, size_t len) {
    uint64_t n = 0;
    const char *end = buf + len;
    for (const char *p = buf; p < end && (p = memchr(p, '\n', (size_t)(end - p))) != 0; p++) n++;
    return n;
}

// ---------------------------------------------------------------- segments

static void segment_path(const wj_logfile *lf, int index, char *out, size_t cap) {
    if (index == 0) { wj_copy_str(out, cap, lf->seg.base); return; }
    size_t n = strlen(lf->seg.base);
    if (n > 7 && strcmp(lf->seg.base + n - 7, ".ndjson") == 0) n -= 7;
    snprintf(out, cap, "%.*s.%d.ndjson", (int)n, lf->seg.base, index);
}

static int64_t epoch_us(const wj_logfile *lf, uint64_t mono) {
    if (!lf->seg.anchor_real) return (int64_t)(wj_realtime_ns() / 1000);
    return ((int64_t)lf->seg.anchor_real + (int64_t)(mono - lf->seg.anchor_mono)) / 1000;
}

static void record_head(const wj_logfile *lf, wj_json *j, const char *type) {
    wj_json_begin(j);
    wj_json_str(j, "type", type);
    wj_json_int(j, "ts", epoch_us(lf, wj_now_ns()));
    wj_json_int(j, "pid", lf->seg.pid);
}

// Writes one record of the writer's own into the live segment (header first if it needs it).
static void write_own(wj_logfile *lf, int fd, const char *line, size_t len, int kind);

// The header of segment n: process_start as the caller gave it, with the segment's number and
// start in it (every segment can be read alone).
static size_t segment_fields(const wj_logfile *lf, char *buf, size_t cap) {   // cap >= 96
    (void)cap;
    size_t n = 0;
    memcpy(buf, ",\"segment\":", 11);
    n = 11 + wj_fmt_i64(buf + 11, lf->seg.index);
    memcpy(buf + n, ",\"segment_start_ts\":", 20);
    n += 20;
    n += wj_fmt_i64(buf + n, epoch_us(lf, lf->seg.started_mono));
    memcpy(buf + n, "}\n", 3);
    return n + 2;
}

static int write_header_and(wj_logfile *lf, int fd, const char *buf, size_t len) {
    char fields[96];
    size_t flen = segment_fields(lf, fields, sizeof fields);
    size_t hlen = lf->header_len;
    // The header ends with "}\n": its fields go before that brace.
    if (hlen >= 2 && lf->header[hlen - 1] == '\n' && lf->header[hlen - 2] == '}') hlen -= 2;
    else flen = 0;
    struct iovec p[3] = {{(void *)lf->header, flen ? hlen : lf->header_len}, {fields, flen}, {(void *)buf, len}};
    if (!write_pieces(lf, fd, p, 3)) return 0;
    lf->header_landed = 1;
    lf->seg.lines += 1 + count_lines(buf, len);
    return 1;
}

// Is this closed segment sent by `wedjat ship` (when ship follows the directory)? 1 when it
// may go: shipping is off, or ship marked it done.
static int shipped(const wj_logfile *lf, int index, int *shipping_on) {
    char dir[WJ_PATH_MAX], path[WJ_PATH_MAX], marker[2 * WJ_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lf->seg.base);
    char *slash = strrchr(dir, '/');
    if (!slash) return 1;
    *slash = 0;
    char ship_dir[WJ_PATH_MAX + 8];
    snprintf(ship_dir, sizeof ship_dir, "%s/.ship", dir);
    struct stat st;
    if (sys_lstat(ship_dir, &st) != 0 || !S_ISDIR(st.st_mode)) return 1;
    *shipping_on = 1;
    segment_path(lf, index, path, sizeof path);
    const char *name = strrchr(path, '/');
    snprintf(marker, sizeof marker, "%s/%s.done", ship_dir, name ? name + 1 : path);
    return sys_lstat(marker, &st) == 0;
}

// Bytes of the directory's *.ndjson files.
static uint64_t dir_bytes(const char *dir) {
    int fd = wj_sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0) return 0;
    WJ_COLD static char dents[16384];
    uint64_t total = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, dents, sizeof dents);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            unsigned short reclen = *(unsigned short *)(dents + off + 16);
            const char *name = dents + off + 19;
            size_t nl = strlen(name);
            struct stat st;
            if (nl > 7 && strcmp(name + nl - 7, ".ndjson") == 0 &&
                syscall(SYS_newfstatat, fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                total += (uint64_t)st.st_size;
            off += reclen;
        }
    }
    wj_sys_close(fd);
    return total;
}

// Retention, after a rotation: the oldest closed segments go while this process's segments
// pass WEDJAT_RETAIN_MB, or the directory's logs WEDJAT_DIR_RETAIN_MB. A segment `wedjat ship`
// has not sent yet stays until the process's segments pass twice the retention. Each removal
// is recorded in the live segment.
static void apply_retention(wj_logfile *lf, int fd) {
    wj_segments *sg = &lf->seg;
    if (!sg->n_closed || (!sg->retain_bytes && !sg->dir_retain_bytes)) return;
    uint64_t mine = lf->size;
    for (int i = 0; i < sg->n_closed; i++) mine += sg->closed[i].bytes;
    uint64_t in_dir = 0;
    char dir[WJ_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", sg->base);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (sg->dir_retain_bytes && slash) in_dir = dir_bytes(dir);
    char removed[8][WJ_PATH_MAX];
    int n_removed = 0, unshipped = 0;
    uint64_t bytes = 0, lines = 0;
    const char *reason = 0;
    while (sg->n_closed) {
        int over_mine = sg->retain_bytes && mine > sg->retain_bytes;
        int over_dir = sg->dir_retain_bytes && in_dir > sg->dir_retain_bytes;
        if (!over_mine && !over_dir) break;
        int shipping = 0;
        if (!shipped(lf, sg->closed[0].index, &shipping)) {
            // Not sent yet: kept, unless the process's segments passed twice the retention.
            if (!(sg->retain_bytes && mine > 2 * sg->retain_bytes)) break;
            unshipped++;
        }
        char path[WJ_PATH_MAX];
        segment_path(lf, sg->closed[0].index, path, sizeof path);
        if (syscall(SYS_unlinkat, AT_FDCWD, path, 0) != 0 && errno != ENOENT) break;
        if (!reason) reason = over_mine ? "retain_mb" : "dir_retain_mb";
        if (n_removed < 8) snprintf(removed[n_removed], WJ_PATH_MAX, "%s", path);
        n_removed++;
        bytes += sg->closed[0].bytes;
        lines += sg->closed[0].lines;
        mine -= sg->closed[0].bytes;
        if (in_dir >= sg->closed[0].bytes) in_dir -= sg->closed[0].bytes;
        memmove(&sg->closed[0], &sg->closed[1], (size_t)(sg->n_closed - 1) * sizeof sg->closed[0]);
        sg->n_closed--;
    }
    if (!n_removed) return;
    sg->removed += (uint64_t)n_removed;
    sg->removed_unshipped += (uint64_t)unshipped;
    WJ_COLD static char line[8 * WJ_PATH_MAX + 512];
    wj_json j;
    wj_json_init(&j, line, sizeof line);
    record_head(lf, &j, "segments_removed");
    wj_json_begin_array(&j, "segments");
    for (int i = 0; i < n_removed && i < 8; i++) wj_json_str(&j, 0, removed[i]);
    wj_json_end_array(&j);
    if (n_removed > 8) wj_json_int(&j, "segments_not_listed", n_removed - 8);
    wj_json_uint(&j, "bytes", bytes);
    wj_json_uint(&j, "records", lines);
    wj_json_str(&j, "reason", reason);
    wj_json_int(&j, "unshipped", unshipped);
    wj_json_end(&j);
    wj_json_newline(&j);
    if (!j.overflow) write_own(lf, fd, line, j.len, 1);
}

// A new segment: segment_end into the live one, then the next file (its header written with
// the first batch). 1 when the next segment is open (as lf->fd); 0 when it could not be
// created: the live segment goes on (once said in a warning).
static int rotate(wj_logfile *lf, int fd) {
    wj_segments *sg = &lf->seg;
    char next[WJ_PATH_MAX];
    segment_path(lf, sg->index + 1, next, sizeof next);
    int nfd = wj_sys_open(next, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (nfd < 0) {
        if (!sg->rotation_blocked) {
            sg->rotation_blocked = 1;
            char why[WJ_WARNING_LEN + 64];
            snprintf(why, sizeof why, "no new log segment: cannot create %.200s: %s; this segment goes on up to "
                     "WEDJAT_LOG_MAX_MB", next, strerror(errno));
            WJ_COLD static char line[1024];
            wj_json j;
            wj_json_init(&j, line, sizeof line);
            record_head(lf, &j, "warning");
            wj_json_str(&j, "kind", "segments");
            wj_json_str(&j, "message", why);
            wj_json_end(&j);
            wj_json_newline(&j);
            if (!j.overflow) write_own(lf, fd, line, j.len, 2);
        }
        return 0;
    }
    WJ_COLD static char end_line[WJ_PATH_MAX + 256];
    wj_json j;
    wj_json_init(&j, end_line, sizeof end_line);
    record_head(lf, &j, "segment_end");
    wj_json_int(&j, "segment", sg->index);
    wj_json_str(&j, "next", next);
    wj_json_uint(&j, "bytes", lf->size + 0);
    wj_json_end(&j);
    wj_json_newline(&j);
    if (!j.overflow) write_own(lf, fd, end_line, j.len, 0);
    if (sg->n_closed == WJ_MAX_CLOSED_SEGMENTS) {  // forget the oldest we track (it stays on disk)
        memmove(&sg->closed[0], &sg->closed[1], (WJ_MAX_CLOSED_SEGMENTS - 1) * sizeof sg->closed[0]);
        sg->n_closed--;
    }
    sg->closed[sg->n_closed++] = (wj_segment_info){sg->index, lf->size, sg->lines};
    wj_sys_close(fd);
    sg->index++;
    sg->started_mono = wj_now_ns();
    sg->lines = 0;
    wj_copy_str(lf->path, sizeof lf->path, next);
    struct stat st;
    if (sys_fstat(nfd, &st) == 0) {
        lf->dev = (uint64_t)st.st_dev;
        lf->ino = (uint64_t)st.st_ino;
    }
    lf->size = 0;
    lf->header_landed = 0;
    atomic_store(&lf->fd, nfd);
    return 1;
}

static int rotation_due(const wj_logfile *lf, size_t len) {
    const wj_segments *sg = &lf->seg;
    if (sg->rotation_blocked || !lf->header_landed || lf->size <= lf->header_len) return 0;
    if (sg->segment_bytes && lf->size + len > sg->segment_bytes) return 1;
    return sg->segment_ns && wj_now_ns() - sg->started_mono >= sg->segment_ns;
}

static void drop(wj_logfile *lf, size_t len) {
    lf->dropped_writes++;
    lf->dropped_bytes += len;
}

enum { WR_FAILED = -1, WR_NO_ROOM = 0, WR_OK = 1 };

// One batch, under the lock; drops are counted by the callers. `final`: the batch may use the
// room kept for process_end.
static int write_locked(wj_logfile *lf, const char *buf, size_t len, int final) {
    if (lf->failed || len == 0) return WR_FAILED;
    int fd = atomic_load(&lf->fd);
    if (fd >= 0 && !still_ours(lf, fd)) {
        atomic_store(&lf->fd, -1);
        fd = -1;
    }
    if (fd < 0) fd = open_log(lf);
    if (fd < 0) return WR_FAILED;
    if (!lf->seg.started_mono) lf->seg.started_mono = wj_now_ns();
    if (rotation_due(lf, len) && rotate(lf, fd)) {
        fd = atomic_load(&lf->fd);
        // The header and the next lines first, then what retention removed.
        if (!write_header_and(lf, fd, buf, len)) return WR_FAILED;
        apply_retention(lf, fd);
        return WR_OK;
    }

    struct rlimit fs;
    uint64_t limit = lf->max_bytes;
    if (syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY && (uint64_t)fs.rlim_cur < limit)
        limit = (uint64_t)fs.rlim_cur;  // past it the kernel would send SIGXFSZ to the app
    // The last 1/16 (at most 64 KiB) is kept for process_end: a full log still says how the
    // process ended and what was dropped.
    uint64_t reserve = limit / 16 < 65536 ? limit / 16 : 65536;
    if (!final) limit -= reserve;
    if (lf->size + len > limit) return WR_NO_ROOM;
    // The same for the file system: the last WJ_FS_RESERVE bytes free on it are left for
    // process_end, so a log on a full disk still ends properly once a little space came back.
    // (f_blocks 0: no size limit, e.g. an unbounded tmpfs.)
    if (!final && !lf->reserve_ok) {
        struct statfs fs;
        if (syscall(SYS_fstatfs, fd, &fs) == 0 && fs.f_blocks > 0 &&
            (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize < len + WJ_FS_RESERVE)
            return WR_NO_ROOM;
    }

    // Every file begins with its header (process_start): a file created anew (the old one was
    // moved or deleted), emptied by someone, or whose first write failed gets it first.
    if (lf->header && (!lf->header_landed || lf->size == 0)) {
        if (lf->size + lf->header_len + len > limit) return WR_NO_ROOM;
        return write_header_and(lf, fd, buf, len) ? WR_OK : WR_FAILED;
    }
    if (!write_all(lf, fd, buf, len, 0, 0)) return WR_FAILED;
    lf->seg.lines += count_lines(buf, len);
    return WR_OK;
}

int wj_logfile_write(wj_logfile *lf, const char *buf, size_t len) {
    int saved_errno = errno;
    pthread_mutex_lock(&lf->lock);
    int ok = write_locked(lf, buf, len, lf->final_phase) == WR_OK;
    if (!ok && len) drop(lf, len);
    pthread_mutex_unlock(&lf->lock);
    errno = saved_errno;
    return ok;
}

int wj_logfile_write_final(wj_logfile *lf, const char *buf, size_t len, size_t tail) {
    int saved_errno = errno;
    if (tail > len) tail = len;
    pthread_mutex_lock(&lf->lock);
    int r = write_locked(lf, buf, len, 0), ok = r == WR_OK;
    if (r == WR_NO_ROOM) {
        // Not all of it outside the reserve: the lines before process_end as usual, then
        // process_end, which may use the reserve.
        size_t head = len - tail;
        ok = 1;
        if (head && write_locked(lf, buf, head, 0) != WR_OK) { drop(lf, head); ok = 0; }
        if (write_locked(lf, buf + head, tail, 1) != WR_OK) { drop(lf, tail); ok = 0; }
    } else if (!ok && len) {
        drop(lf, len);
    }
    pthread_mutex_unlock(&lf->lock);
    errno = saved_errno;
    return ok;
}

static void write_own(wj_logfile *lf, int fd, const char *line, size_t len, int kind) {
    int ok;
    if (lf->header && (!lf->header_landed || lf->size == 0)) {
        ok = write_header_and(lf, fd, line, len);
    } else if ((ok = write_all(lf, fd, line, len, 0, 0))) {
        lf->seg.lines++;
    }
    if (ok) lf->seg.records_written[kind]++;
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
