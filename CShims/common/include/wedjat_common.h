// Shared between the interposer (hooks) and the Swift aggregator: the event layout, the
// lock-free event ring, the log file writer and the configuration parser. Nothing here
// hooks anything, so unit tests can link it without interposing the test runner.
#ifndef WEDJAT_COMMON_H
#define WEDJAT_COMMON_H

#include <stdint.h>
#include <stddef.h>
#include <stdatomic.h>

// Where state lives decides what a short process pays for it: every page written is a page
// fault (a few microseconds in a VM), pages never touched cost nothing, and every 2 MiB
// region with a page in it costs a page table, made again in each forked child. The link
// sorts input sections by name (--sort-section=name), so .bss is laid out as:
//   ".bss"          the small state of every file: a short process touches most of it, and it
//                   starts in the page of .got.plt and .data, which the loader dirties anyway;
//   ".bss.0tail"    wj_proc (WJ_HOT_TAIL): its first pages are hot, the rest (the log's closed
//                   segments) is not;
//   ".bss.1cold"    smaller buffers touched now and then (WJ_COLD);
//   ".bss.2hot"     big arrays whose first pages every process writes (WJ_BIG_HOT): the
//                   output buffer and the event ring's slots;
//   ".bss.~big"     arrays, buffers and rings, touched only when used (WJ_BIG).
// So all a short process touches is in the first 2 MiB. scripts/check-layout.sh keeps it so:
// no array of 1 KiB or more in the small state.
// Alignment stays small (64): a page-aligned array would start .bss on a page of its own.
#define WJ_BIG __attribute__((section(".bss.~big"), aligned(64)))
// Smaller state that a short process seldom touches (error texts, probe results, buffers of
// rare records): after the hot small state, so that it does not spread over more pages.
#define WJ_COLD __attribute__((section(".bss.1cold")))
#define WJ_BIG_HOT __attribute__((section(".bss.2hot"), aligned(64)))
#define WJ_HOT_TAIL __attribute__((section(".bss.0tail")))
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------- events

enum {
    WJ_EV_CONN_OPEN = 1,   // a connection began: connect() returned (any result), accept()
                           // returned a socket, socket()/socketpair() made a UDP or pair socket
    WJ_EV_CONN_CLOSE = 2,  // its last fd was closed (close, dup2 over it, close_range, exit)
    WJ_EV_FORK = 3,        // fork() returned in the parent; a = child pid
    WJ_EV_DNS = 4,         // a resolver call returned (wj_dns_event, on the DNS ring)
    WJ_EV_PAYLOAD = 5,     // bytes the app moved on a connection (wj_payload, payload ring)
    WJ_EV_TLS = 6,         // a TLS handshake on a connection ended (t_start..t_end)
    WJ_EV_HTTP_MSG = 7,    // an HTTP/1 message framed (payload ring: data is a wj_h1_msg)
    WJ_EV_HTTP_HEAD = 8,   // header-block bytes of a detailed exchange (payload ring; io_end: its index)
};

enum { WJ_ROLE_CLIENT = 1, WJ_ROLE_SERVER = 2, WJ_ROLE_PAIR = 3, WJ_ROLE_UNKNOWN = 4 };
enum { WJ_TRANSPORT_TCP = 1, WJ_TRANSPORT_UDP = 2, WJ_TRANSPORT_UNIX = 3 };

// A socket address reduced to what the log needs; fits IPv4 and IPv6. Unix socket paths
// travel in the event's `path` field (family AF_UNIX here).
typedef struct wj_addr {
    uint16_t family;  // AF_INET, AF_INET6, AF_UNIX, or 0 when unknown
    uint16_t port;    // host byte order
    uint32_t scope_id;
    uint8_t bytes[16];
} wj_addr;

#define WJ_UNIX_PATH_MAX 64
#define WJ_ALPN_MAX 16

// Fixed-size event: the hot path fills one and pushes it; no pointers, no allocation.
typedef struct wj_event {
    uint16_t kind;
    uint8_t role;
    uint8_t transport;
    int32_t tid;
    int32_t fd;
    int32_t err;         // errno of a failed connect, or the first I/O error (CLOSE)
    uint64_t conn_id;
    uint32_t conn_slot;  // the connection's slot in the pool (for live snapshots)
    uint32_t flags;      // WJ_OPEN_* / WJ_CLOSE_*
    uint64_t t_start;    // CLOCK_MONOTONIC ns: connect call / accept return / handshake start
    uint64_t t_end;      // connect return, close time, handshake end
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint64_t a;          // kind-specific (child pid for WJ_EV_FORK)
    // CLOSE only (0 = never happened): connect seen complete, first byte out/in, last byte,
    // shutdown(), TLS handshake.
    uint64_t t_connected;
    uint64_t t_first_out;
    uint64_t t_first_in;
    uint64_t t_last_io;
    uint64_t t_shutdown;
    uint64_t t_tls_start;
    uint64_t t_tls_end;
    uint64_t plain_in;           // TLS plaintext bytes received / sent (CLOSE)
    uint64_t plain_out;
    uint16_t tls_version;        // wire version (0x0304 = TLS 1.3), 0 if no TLS seen
    uint8_t tls_lib;             // WJ_TLS_OPENSSL / WJ_TLS_GNUTLS
    uint8_t err_phase;           // where err happened: WJ_ERR_*
    char alpn[WJ_ALPN_MAX];      // ALPN protocol selected, NUL-terminated
    // CLOSE of a TCP connection: TCP_INFO just before the close (valid when has_tcp_info).
    uint32_t has_tcp_info;
    uint32_t rtt_us;
    uint32_t rttvar_us;
    uint32_t retransmits;        // current unrecovered retransmits (tcpi_retransmits)
    uint32_t total_retrans;      // over the connection's life (tcpi_total_retrans)
    uint32_t lost;               // tcpi_lost
    wj_addr local;
    wj_addr peer;
    char path[WJ_UNIX_PATH_MAX]; // unix sockets: the peer's path (or the local one), truncated
} wj_event;

// wj_event.flags for WJ_EV_CONN_OPEN. WJ_OPEN_INHERITED: a connection a forked child got from
// its parent, at the child's first use of it (conn_id is the parent's; bytes_in/bytes_out
// are the stream offsets it took over).
enum { WJ_OPEN_NONBLOCKING = 1, WJ_OPEN_HTTP = 2, WJ_OPEN_INHERITED = 4 };
// wj_event.flags for WJ_EV_CONN_CLOSE. WJ_CLOSE_FORKED: the process forked while it was open.
enum { WJ_CLOSE_AT_EXIT = 1, WJ_CLOSE_TLS = 2, WJ_CLOSE_FORKED = 4 };
enum { WJ_ERR_CONNECT = 1, WJ_ERR_IO = 2, WJ_ERR_TLS = 3 };
enum { WJ_TLS_OPENSSL = 1, WJ_TLS_GNUTLS = 2 };

// What the framers hand the aggregator about a connection's HTTP, in variable-length slots:
// - WJ_EV_HTTP_MSG: one framer event (data: a wj_h1_msg, wedjat_http1.h);
// - WJ_EV_HTTP_HEAD: header-block bytes of an exchange that gets a record (io_end: its index);
// - WJ_EV_PAYLOAD: HTTP/2 bytes a call moved: `len` bytes from stream offset `offset` (bytes
//   since the connection began in that direction: raw socket bytes, or TLS plaintext when
//   WJ_PAYLOAD_PLAIN), out of a call that moved bytes up to `io_end`. Only what the decoder
//   needs is copied (framing.c), so a slot may hold no bytes and only tell that a call moved
//   past a point; a call copying more than one slot holds pushes several, offsets ascending.
#define WJ_PAYLOAD_SLOT 512
enum { WJ_PAYLOAD_OUT = 1, WJ_PAYLOAD_PLAIN = 2, WJ_PAYLOAD_REQUEST = 4 /* WJ_EV_HTTP_HEAD: of the request */ };
typedef struct wj_payload {
    uint16_t kind;        // WJ_EV_PAYLOAD, WJ_EV_HTTP_MSG, WJ_EV_HTTP_HEAD
    uint16_t flags;       // WJ_PAYLOAD_*
    uint32_t len;         // bytes in data
    uint32_t conn_slot;
    int32_t tid;
    uint64_t conn_id;
    uint64_t offset;      // stream offset of data[0]
    uint64_t io_end;      // stream offset just past the call's last byte
    uint64_t t;           // CLOCK_MONOTONIC ns when the call returned
    uint8_t data[WJ_PAYLOAD_SLOT - 48];
} wj_payload;

// One resolver call. Rare and slow next to I/O, so it travels on its own small ring of
// larger slots instead of making every event this big.
enum { WJ_DNS_GETADDRINFO = 1, WJ_DNS_GETHOSTBYNAME = 2, WJ_DNS_GETHOSTBYADDR = 3, WJ_DNS_GETNAMEINFO = 4,
       WJ_DNS_UDP = 5 /* a query the app sent itself to port 53 and its answer */ };
#define WJ_DNS_NAME_MAX 256
#define WJ_DNS_ADDRS 8
typedef struct wj_dns_event {
    uint16_t kind;          // WJ_EV_DNS
    uint8_t api;            // WJ_DNS_*
    uint8_t n_addrs;        // addresses stored in addrs (at most WJ_DNS_ADDRS)
    int32_t tid;
    int32_t error;          // getaddrinfo/getnameinfo: EAI_* value; gethostby*: h_errno; 0 = success
    int32_t family;         // requested family (AF_UNSPEC, AF_INET, AF_INET6)
    uint32_t n_answers;     // answers returned (distinct addresses; may exceed n_addrs)
    uint32_t truncated;     // name did not fit
    uint64_t t_start;
    uint64_t t_end;
    char name[WJ_DNS_NAME_MAX];   // host name asked for (or the answer, for reverse lookups)
    char service[32];
    wj_addr addrs[WJ_DNS_ADDRS];
} wj_dns_event;

// Decimal digits of v into out (at least 21 bytes), NUL-terminated; returns their count. No
// stdio: a short process then never touches printf's code.
size_t wj_fmt_u64(char *out, uint64_t v);
size_t wj_fmt_i64(char *out, int64_t v);
// snprintf(dst, cap, "%s", src) without stdio: copies what fits, NUL-terminated; returns the
// length copied.
size_t wj_copy_str(char *dst, size_t cap, const char *src);
// strtoull(s, end, 10) for what wedjat parses (digits after blanks), strnlen, strrchr: a short
// process then never touches the libc pages of those (each is a page fault).
uint64_t wj_parse_u64(const char *s, const char **end);
size_t wj_strnlen(const char *s, size_t max);
const char *wj_strrchr(const char *s, int c);
const char *wj_strchr(const char *s, int c);
int wj_starts_with(const char *s, const char *prefix, size_t n);   // strncmp(s, prefix, n) == 0

uint64_t wj_now_ns(void);          // CLOCK_MONOTONIC
uint64_t wj_realtime_ns(void);     // CLOCK_REALTIME
int wj_gettid(void);
int wj_tid(void);             // cached wj_gettid, for event stamps only
void wj_tid_forget(void);     // in a fork child, before anything else

// ---------------------------------------------------------------- ring
// Bounded multi-producer single-consumer queue (Vyukov's, with per-slot "lap" counters
// stored relative to the slot index so that an all-zero ring is a valid empty ring: a ring
// in .bss costs nothing until used). Producers never block: when full they drop and count.

// A slot is a lap counter followed by slot_size bytes of event.
typedef struct wj_ring {
    _Alignas(64) _Atomic uint64_t enq;
    _Atomic uint64_t deq_seen;   // producers' copy of deq (may lag): a push reads no slot
    _Alignas(64) _Atomic uint64_t deq;
    _Alignas(64) _Atomic uint64_t dropped;
    unsigned char *slots;
    uint64_t mask;
    uint64_t slot_size;   // bytes of event per slot
    uint64_t stride;      // bytes per slot including the lap counter
} wj_ring;

#define WJ_RING_STRIDE(event_size) (8 + (((event_size) + 7) & ~(uint64_t)7))

// capacity must be a power of two; slots (capacity * WJ_RING_STRIDE(slot_size) bytes) zeroed.
void wj_ring_init(wj_ring *r, void *slots, uint64_t capacity, uint64_t slot_size);
int wj_ring_push(wj_ring *r, const void *ev);   // 1 pushed, 0 dropped (counted)
int wj_ring_pop(wj_ring *r, void *out);         // single consumer; 1 got one, 0 empty
// Variable-length slots: only the first n bytes of the event are copied in, and out only its
// first `head` bytes plus the uint32 length found at `len_at` within them. A captured
// request line dirties two or three cache lines of the ring instead of all of its slot.
int wj_ring_push_n(wj_ring *r, const void *ev, size_t n);
int wj_ring_pop_var(wj_ring *r, void *out, size_t head, size_t len_at);
// The next published event read in place, without a copy (single consumer): NULL when empty;
// else valid, and never reused by a producer, until wj_ring_release_slot(r, *pos).
const void *wj_ring_peek(wj_ring *r, uint64_t *pos);
void wj_ring_release_slot(wj_ring *r, uint64_t pos);
// A push in progress, for a caller that must be able to give its slot back (wj_ring_abandon):
// `ring` is set (after `pos`) while the slot is claimed and not yet published.
typedef struct wj_ring_mark { void *volatile ring; volatile uint64_t pos; } wj_ring_mark;
int wj_ring_push_marked(wj_ring *r, const void *ev, size_t n, wj_ring_mark *mark);
void wj_ring_abandon(wj_ring *r, uint64_t pos);
uint64_t wj_ring_dropped(const wj_ring *r);
// After fork, in the child: forget everything pending (including slots claimed by threads
// that do not exist in the child) without touching the whole ring.
void wj_ring_discard_pending(wj_ring *r);
// A heap ring for tests and tools (the interposer's live in .bss).
wj_ring *wj_ring_create(uint64_t capacity, uint64_t slot_size);
void wj_ring_destroy(wj_ring *r);

// ---------------------------------------------------------------- configuration

enum { WJ_ARGV_FULL = 0, WJ_ARGV_REDACT = 1, WJ_ARGV_NONE = 2 };
enum { WJ_REDACT_QUERY = 1, WJ_REDACT_USERINFO = 2, WJ_REDACT_FRAGMENT = 4, WJ_REDACT_ALL = 7 };

#define WJ_PATH_MAX 512
#define WJ_MAX_WARNINGS 8
#define WJ_WARNING_LEN 200

// The scalars first, then the strings (a short process touches their first bytes), the
// warnings last (usually none): see wj_process.
typedef struct wj_config {
    int disabled;
    int argv_mode;
    int flush_ms;
    int max_connections;
    int log_max_mb;
    int http;              // parse HTTP/1 from captured bytes (WEDJAT_HTTP)
    int capture_bytes;     // most bytes captured per I/O call for the parser (WEDJAT_CAPTURE_BYTES)
    int redact;            // WJ_REDACT_* bits (WEDJAT_REDACT)
    int http_records;      // http records a second; the rest go into http_summary (WEDJAT_HTTP_RECORDS)
    int sample_ms;         // vitals sample interval, 0 = no sampling (WEDJAT_SAMPLE_MS)
    int stall_ms;          // stall threshold, 0 = no stall detection (WEDJAT_STALL_MS)
    int segment_mb;        // a new log segment past this size (WEDJAT_SEGMENT_MB, 0 = never)
    int segment_s;         // or this age (WEDJAT_SEGMENT_S, 0 = never)
    int retain_mb;         // this process's segments together (WEDJAT_RETAIN_MB, 0 = keep all)
    int dir_retain_mb;     // the log directory's logs together (WEDJAT_DIR_RETAIN_MB, 0 = no limit)
    int warning_count;
    char dir[WJ_PATH_MAX];
    char dir_env[WJ_PATH_MAX];  // WEDJAT_DIR as given (a relative one is resolved into dir)
    char warnings[WJ_MAX_WARNINGS][WJ_WARNING_LEN];
} wj_config;

// Parses WEDJAT_* from a getenv-like lookup. Invalid values: one warning each, default kept.
// No allocation; safe before main.
typedef const char *(*wj_getenv_fn)(const char *name, void *ctx);
void wj_config_parse(wj_config *cfg, wj_getenv_fn lookup, void *ctx, unsigned uid);
// Adds a warning for each WEDJAT_* name in envp that wedjat does not know (typos).
void wj_config_warn_unknown(wj_config *cfg, char *const *envp);

// ---------------------------------------------------------------- log file
// One NDJSON file per process image. Opened lazily, O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600,
// by wedjat's agent thread, whose fd table is its own (the app can neither see nor close the
// fd), or by the final flush of a process without that thread (then closed again). A file
// moved away or deleted is created again at its path.

// A log is a sequence of segments (docs/LOG_FORMAT.md, "Segments"): segment 0 at the log's
// path, segment n at <path without .ndjson>.<n>.ndjson.
#define WJ_MAX_CLOSED_SEGMENTS 1024
typedef struct wj_segment_info {
    int index;
    uint64_t bytes, lines;
} wj_segment_info;

typedef struct wj_segments {
    uint64_t segment_bytes;    // a new segment past this size (0: never)
    uint64_t segment_ns;       // or this age (0: never)
    uint64_t retain_bytes;     // this process's segments together (0: keep all)
    uint64_t dir_retain_bytes; // the directory's *.ndjson together (0: no limit)
    int index;                 // the live segment's number
    uint64_t started_mono;     // when it began
    uint64_t lines;            // lines written into it
    int n_closed;
    int rotation_blocked;      // no new segment could be created (said once, in a warning)
    uint64_t removed, removed_unshipped;   // segments deleted by retention
    uint64_t records_written[3];           // segment_end, segments_removed, warning lines written here
    uint64_t anchor_mono, anchor_real;     // the image's clock anchor, for the records it writes
    int pid;
    char base[WJ_PATH_MAX];    // segment 0's path
    // Last (and last in wj_logfile): pages of it are touched only by a log that rotates.
    wj_segment_info closed[WJ_MAX_CLOSED_SEGMENTS];  // closed segments still on disk, oldest first
} wj_segments;

typedef struct wj_logfile {
    pthread_mutex_t lock;      // held around check+write
    _Atomic int fd;            // -1 when not open
    int failed;                // creation failed for good (bad dir): stop trying
    int pid;                   // owner pid
    uint64_t dev, ino;         // identity of the open file
    uint64_t size;             // bytes written so far (for RLIMIT_FSIZE / max size checks)
    uint64_t max_bytes;
    uint64_t dropped_writes;   // write calls (batches of whole lines) that could not land
    uint64_t dropped_bytes;
    int reopen_count;
    int final_phase;           // set for the last records (process_end): they may use the reserve
    int reserve_ok;            // set around a write of a `drops` record: it may use the file
                               // system's reserve (not the size limit's)
    const char *header;        // written first into every new or emptied file (process_start)
    size_t header_len;
    int header_landed;
    char path[WJ_PATH_MAX];    // the live segment's
    char error[WJ_WARNING_LEN]; // why the file could not be created, if it could not
    wj_segments seg;           // last: its closed segments are
} wj_logfile;

void wj_logfile_init(wj_logfile *lf, const char *path, uint64_t max_bytes);
// Segments: sizes in bytes, age in ns (0: off); the clock anchor and pid for the records the
// writer adds itself (segment_end, segments_removed, warning).
void wj_logfile_set_segments(wj_logfile *lf, uint64_t segment_bytes, uint64_t segment_ns, uint64_t retain_bytes,
                             uint64_t dir_retain_bytes, uint64_t anchor_mono, uint64_t anchor_real, int pid);
// The line every file must begin with; the buffer must stay valid. Written before the next
// batch and again whenever the file is recreated or found empty.
void wj_logfile_set_header(wj_logfile *lf, const char *header, size_t len);
// The fd currently used for the log, -1 if none (Swift cannot see _Atomic fields).
int wj_logfile_fd(wj_logfile *lf);
// Writes whole lines; returns 1 if all landed, 0 if dropped (counted in the struct).
int wj_logfile_write(wj_logfile *lf, const char *buf, size_t len);
// The image's last batch, whose last `tail` bytes are process_end: one write when all of it
// fits outside the room kept for process_end; otherwise the lines before it under the usual
// limits, then process_end with the reserve (as final_phase allows). 1 if all landed.
int wj_logfile_write_final(wj_logfile *lf, const char *buf, size_t len, size_t tail);
// Creates (or reopens) the file now, without writing; 1 when it is open.
int wj_logfile_open_now(wj_logfile *lf);
void wj_logfile_close(wj_logfile *lf);
// Create dir (0700) if missing and check it is a directory we own and others cannot write.
int wj_ensure_dir(const char *dir, char *why, size_t why_len);

// Raw syscalls: the aggregator uses these so its own I/O never goes through the hooks.
long wj_sys_write(int fd, const void *buf, size_t len);
long wj_sys_read(int fd, void *buf, size_t len);
int wj_sys_open(const char *path, int flags, int mode);
int wj_sys_close(int fd);
int wj_sys_getpid(void);
// Reads a whole small file (e.g. /proc/self/stat) into buf, NUL-terminated; returns length or -1.
// A short read is taken as the end: true of regular files, sysfs and the single-record /proc
// files wedjat reads (a multi-record one such as /proc/cpuinfo may end at a record boundary).
long wj_read_file(const char *path, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
