// libnghttp2's HPACK coder, loaded at run time (dlopen), never linked: the agent has no
// link-time dependency on libnghttp2, and a process that sees no HTTP/2 never loads it.
// The declarations mirror <nghttp2/nghttp2.h> of soname libnghttp2.so.14 (stable ABI since
// 1.0; the hd_* functions since 1.10): only what the decoder (and the tests' encoder) use.
#ifndef CWEDJAT_NGHTTP2_H
#define CWEDJAT_NGHTTP2_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// nghttp2_nv
typedef struct wj_nghttp2_nv {
    uint8_t *name;
    uint8_t *value;
    size_t namelen;
    size_t valuelen;
    uint8_t flags;
} wj_nghttp2_nv;

typedef struct wj_nghttp2_hd_inflater wj_nghttp2_hd_inflater;  // nghttp2_hd_inflater
typedef struct wj_nghttp2_hd_deflater wj_nghttp2_hd_deflater;  // nghttp2_hd_deflater

enum { WJ_NGHTTP2_HD_INFLATE_FINAL = 0x01, WJ_NGHTTP2_HD_INFLATE_EMIT = 0x02 };

typedef int (*wj_nghttp2_hd_inflate_new_fn)(wj_nghttp2_hd_inflater **inflater_ptr);
typedef void (*wj_nghttp2_hd_inflate_del_fn)(wj_nghttp2_hd_inflater *inflater);
typedef int (*wj_nghttp2_hd_inflate_change_table_size_fn)(wj_nghttp2_hd_inflater *inflater, size_t max_size);
// nghttp2_hd_inflate_hd2 (and hd3 of 1.61+, the same ABI: nghttp2_ssize is ptrdiff_t)
typedef ssize_t (*wj_nghttp2_hd_inflate_hd_fn)(wj_nghttp2_hd_inflater *inflater, wj_nghttp2_nv *nv_out,
                                               int *inflate_flags, const uint8_t *in, size_t inlen, int in_final);
typedef int (*wj_nghttp2_hd_inflate_end_headers_fn)(wj_nghttp2_hd_inflater *inflater);
typedef size_t (*wj_nghttp2_hd_inflate_size_fn)(wj_nghttp2_hd_inflater *inflater);
typedef const wj_nghttp2_nv *(*wj_nghttp2_hd_inflate_get_table_entry_fn)(wj_nghttp2_hd_inflater *inflater, size_t idx);

typedef int (*wj_nghttp2_hd_deflate_new_fn)(wj_nghttp2_hd_deflater **deflater_ptr, size_t max_table_size);
typedef void (*wj_nghttp2_hd_deflate_del_fn)(wj_nghttp2_hd_deflater *deflater);
typedef ssize_t (*wj_nghttp2_hd_deflate_hd_fn)(wj_nghttp2_hd_deflater *deflater, uint8_t *buf, size_t buflen,
                                               const wj_nghttp2_nv *nva, size_t nvlen);
typedef size_t (*wj_nghttp2_hd_deflate_bound_fn)(wj_nghttp2_hd_deflater *deflater, const wj_nghttp2_nv *nva, size_t nvlen);
typedef int (*wj_nghttp2_hd_deflate_change_table_size_fn)(wj_nghttp2_hd_deflater *deflater, size_t size);

// nghttp2_mem: the allocator nghttp2_hd_inflate_new2 takes.
typedef struct wj_nghttp2_mem {
    void *mem_user_data;
    void *(*malloc)(size_t size, void *mem_user_data);
    void (*free)(void *ptr, void *mem_user_data);
    void *(*calloc)(size_t nmemb, size_t size, void *mem_user_data);
    void *(*realloc)(void *ptr, size_t size, void *mem_user_data);
} wj_nghttp2_mem;
typedef int (*wj_nghttp2_hd_inflate_new2_fn)(wj_nghttp2_hd_inflater **inflater_ptr, wj_nghttp2_mem *mem);

typedef struct wj_nghttp2_api {
    // The decoder: all required.
    wj_nghttp2_hd_inflate_new_fn inflate_new;
    wj_nghttp2_hd_inflate_del_fn inflate_del;
    wj_nghttp2_hd_inflate_change_table_size_fn inflate_change_table_size;
    wj_nghttp2_hd_inflate_hd_fn inflate_hd;
    wj_nghttp2_hd_inflate_end_headers_fn inflate_end_headers;
    // Inspection (tests): may be NULL.
    wj_nghttp2_hd_inflate_size_fn inflate_get_dynamic_table_size;
    wj_nghttp2_hd_inflate_size_fn inflate_get_num_table_entries;
    wj_nghttp2_hd_inflate_get_table_entry_fn inflate_get_table_entry;
    // The encoder (tests and benchmarks only): may be NULL.
    wj_nghttp2_hd_deflate_new_fn deflate_new;
    wj_nghttp2_hd_deflate_del_fn deflate_del;
    wj_nghttp2_hd_deflate_hd_fn deflate_hd;
    wj_nghttp2_hd_deflate_bound_fn deflate_bound;
    wj_nghttp2_hd_deflate_change_table_size_fn deflate_change_table_size;
    const char *version;  // nghttp2_version(0)->version_str, or "?"
    wj_nghttp2_hd_inflate_new2_fn inflate_new2;   // may be NULL (then no pool)
    // The table's current limit (the encoder's last size update): lets table insertions that
    // are certainly evicted before anyone can refer to them go undecoded. May be NULL.
    wj_nghttp2_hd_inflate_size_fn inflate_get_max_dynamic_table_size;
} wj_nghttp2_api;

// An inflater whose allocations come from a pool of its own: nghttp2 allocates and frees a
// buffer for nearly every field it decodes, and the pool keeps freed blocks of a few sizes for
// the next (at most 64 of each: bounded). The pool belongs to one inflater (one thread); free
// it after the inflater (wj_nghttp2_pool_free). Without inflate_new2, a plain inflater and a
// NULL pool.
typedef struct wj_nghttp2_pool wj_nghttp2_pool;
int wj_nghttp2_inflater_new(const wj_nghttp2_api *api, wj_nghttp2_hd_inflater **inflater, wj_nghttp2_pool **pool);
void wj_nghttp2_pool_free(wj_nghttp2_pool *pool);

// libnghttp2.so.14, opened RTLD_LAZY|RTLD_LOCAL on the first call (thread-safe, once per
// process): its symbols never become the program's. NULL when the library or one of the
// decoder's functions is missing; the same answer every later call.
const wj_nghttp2_api *wj_nghttp2_load(void);

// The same from another file name, not cached (tests: a missing library). A non-NULL result
// stays valid for the life of the process (the library is never closed).
const wj_nghttp2_api *wj_nghttp2_open(const char *soname);

#endif
