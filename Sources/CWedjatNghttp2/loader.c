// dlopen of libnghttp2 for the HTTP/2 decoder (see include/CWedjatNghttp2.h).
#include "CWedjatNghttp2.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

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
    SYM(inflate_del, "nghttp2_hd_inflate_del");
    SYM(inflate_change_table_size, "nghttp2_hd_inflate_change_table_size");
    SYM(inflate_hd, "nghttp2_hd_inflate_hd3");  // 1.61+: the same ABI, hd2 deprecated there
    if (!a->inflate_hd) SYM(inflate_hd, "nghttp2_hd_inflate_hd2");
    SYM(inflate_end_headers, "nghttp2_hd_inflate_end_headers");
    SYM(inflate_get_dynamic_table_size, "nghttp2_hd_inflate_get_dynamic_table_size");
    SYM(inflate_get_num_table_entries, "nghttp2_hd_inflate_get_num_table_entries");
    SYM(inflate_get_table_entry, "nghttp2_hd_inflate_get_table_entry");
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
