// dlopen of libnghttp2 for the HTTP/2 decoder (see include/CWedjatNghttp2.h).
#include "CWedjatNghttp2.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// nghttp2_info: int age; int version_num; const char *version_str; const char *proto_str;
typedef struct {
    int age;
    int version_num;
    const char *version_str;
    const char *proto_str;
} wj_nghttp2_info;

static const wj_nghttp2_api *open_api(const char *soname) {
    void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (!h) return 0;
    wj_nghttp2_api *a = calloc(1, sizeof *a);
    if (!a) return 0;
#define SYM(field, name) a->field = (__typeof__(a->field))dlsym(h, name)
    SYM(inflate_new, "nghttp2_hd_inflate_new");
    SYM(inflate_new2, "nghttp2_hd_inflate_new2");
    SYM(inflate_del, "nghttp2_hd_inflate_del");
    SYM(inflate_change_table_size, "nghttp2_hd_inflate_change_table_size");
    SYM(inflate_hd, "nghttp2_hd_inflate_hd3");  // 1.61+: the same ABI, hd2 deprecated there
    if (!a->inflate_hd) SYM(inflate_hd, "nghttp2_hd_inflate_hd2");
    SYM(inflate_end_headers, "nghttp2_hd_inflate_end_headers");
    SYM(inflate_get_dynamic_table_size, "nghttp2_hd_inflate_get_dynamic_table_size");
    SYM(inflate_get_num_table_entries, "nghttp2_hd_inflate_get_num_table_entries");
    SYM(inflate_get_table_entry, "nghttp2_hd_inflate_get_table_entry");
    SYM(inflate_get_max_dynamic_table_size, "nghttp2_hd_inflate_get_max_dynamic_table_size");
    SYM(deflate_new, "nghttp2_hd_deflate_new");
    SYM(deflate_del, "nghttp2_hd_deflate_del");
    SYM(deflate_hd, "nghttp2_hd_deflate_hd");
    SYM(deflate_bound, "nghttp2_hd_deflate_bound");
    SYM(deflate_change_table_size, "nghttp2_hd_deflate_change_table_size");
#undef SYM
    const wj_nghttp2_info *(*version)(int) = (const wj_nghttp2_info *(*)(int))dlsym(h, "nghttp2_version");
    const wj_nghttp2_info *info = version ? version(0) : 0;
    a->version = info && info->version_str ? info->version_str : "?";
    if (!a->inflate_new || !a->inflate_del || !a->inflate_change_table_size || !a->inflate_hd ||
        !a->inflate_end_headers) {
        free(a);
        dlclose(h);
        return 0;
    }
    return a;  // the handle stays open for the process's life
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const wj_nghttp2_api *shared;

static void load_once(void) { shared = open_api("libnghttp2.so.14"); }

const wj_nghttp2_api *wj_nghttp2_load(void) {
    pthread_once(&once, load_once);
    return shared;
}

const wj_nghttp2_api *wj_nghttp2_open(const char *soname) { return open_api(soname); }

// ---------------------------------------------------------------- the inflater's pool

#define POOL_CLASSES 6
#define POOL_KEEP 64
static const size_t class_bytes[POOL_CLASSES] = {64, 128, 256, 512, 1024, 2048};

typedef union block {
    union block *next;     // while free
    max_align_t align;
} block;

struct wj_nghttp2_pool {
    wj_nghttp2_mem mem;
    block *free[POOL_CLASSES];
    unsigned kept[POOL_CLASSES];
};

// Each block starts with a header: its class (POOL_CLASSES: from malloc) and the bytes the
// caller may use in it. 16 bytes: what follows keeps malloc's alignment.
typedef struct { size_t cls; size_t bytes; } header;
#define HEADER_BYTES 16

static int class_of(size_t size) {
    for (int c = 0; c < POOL_CLASSES; c++)
        if (size + HEADER_BYTES <= class_bytes[c]) return c;
    return POOL_CLASSES;
}

static void *pool_malloc(size_t size, void *ud) {
    wj_nghttp2_pool *pool = ud;
    int c = class_of(size);
    header *h;
    if (c < POOL_CLASSES && pool->free[c]) {
        block *b = pool->free[c];
        pool->free[c] = b->next;
        pool->kept[c]--;
        h = (header *)(void *)b;
    } else {
        h = malloc(c < POOL_CLASSES ? class_bytes[c] : size + HEADER_BYTES);
        if (!h) return 0;
    }
    h->cls = (size_t)c;
    h->bytes = c < POOL_CLASSES ? class_bytes[c] - HEADER_BYTES : size;
    return (char *)h + HEADER_BYTES;
}

static void pool_release(void *ptr, void *ud) {
    if (!ptr) return;
    wj_nghttp2_pool *pool = ud;
    header *h = (header *)(void *)((char *)ptr - HEADER_BYTES);
    size_t c = h->cls;
    if (c < POOL_CLASSES && pool->kept[c] < POOL_KEEP) {
        block *b = (block *)(void *)h;
        b->next = pool->free[c];
        pool->free[c] = b;
        pool->kept[c]++;
        return;
    }
    free(h);
}

static void *pool_calloc(size_t n, size_t size, void *ud) {
    if (size && n > (size_t)-1 / size) return 0;
    void *p = pool_malloc(n * size, ud);
    if (p) memset(p, 0, n * size);
    return p;
}

static void *pool_realloc(void *ptr, size_t size, void *ud) {
    if (!ptr) return pool_malloc(size, ud);
    header *h = (header *)(void *)((char *)ptr - HEADER_BYTES);
    if (size <= h->bytes) return ptr;
    void *fresh = pool_malloc(size, ud);
    if (!fresh) return 0;
    memcpy(fresh, ptr, h->bytes);
    pool_release(ptr, ud);
    return fresh;
}

int wj_nghttp2_inflater_new(const wj_nghttp2_api *api, wj_nghttp2_hd_inflater **inflater, wj_nghttp2_pool **pool) {
    *pool = 0;
    if (!api->inflate_new2) return api->inflate_new(inflater);
    wj_nghttp2_pool *p = calloc(1, sizeof *p);
    if (!p) return api->inflate_new(inflater);
    p->mem = (wj_nghttp2_mem){p, pool_malloc, pool_release, pool_calloc, pool_realloc};
    int rv = api->inflate_new2(inflater, &p->mem);
    if (rv != 0) {
        free(p);
        return rv;
    }
    *pool = p;
    return 0;
}

void wj_nghttp2_pool_free(wj_nghttp2_pool *pool) {
    if (!pool) return;
    for (int c = 0; c < POOL_CLASSES; c++)
        while (pool->free[c]) {
            block *b = pool->free[c];
            pool->free[c] = b->next;
            free(b);
        }
    free(pool);
}
