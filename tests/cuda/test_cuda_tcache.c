/* The CUDA timing cache's text form (cuda_tcache.h), the way an engine plan
 * carries its GPU's timed choices (precis.cuda_tcache): what goes in comes
 * back, only the entries a process used are written, another GPU or a
 * malformed text is refused with the status the loader acts on. Library
 * version queries only: runs without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"

#include "backends/cuda/cuda_tcache.h"

static const char *NAME = "Test GPU", *ARCH = "sm_90";

/* text with its "gpu" header line replaced by gpu (malloc'd) */
static char *other_gpu(const char *text, const char *gpu) {
    const char *gl = strstr(text, "\ngpu\t"), *end = gl ? strchr(gl + 5, '\n') : NULL;
    if (!end) return NULL;
    size_t n = strlen(text) + strlen(gpu) + 8;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%.*s\ngpu\t%s%s", (int)(gl - text), text, gpu, end);
    return s;
}

int main(void) {
    pr_err e = {0};
    pr_cuda_tcache *c = NULL;
    CHECK(pr_cuda_tcache_open_text(NULL, NAME, ARCH, &c, &e) == PRECIS_OK && c);
    unsigned char a[3] = {1, 2, 0xff}, b[1] = {7}, v[3] = {0};
    CHECK(!pr_cuda_tcache_get(c, "qconv.route v4 k1", v, 3)); /* empty */
    pr_cuda_tcache_put(c, "qconv.route v4 k1", a, 3);
    pr_cuda_tcache_put(c, "lt.algo m=64 n=32", b, 1);
    CHECK(pr_cuda_tcache_save(c, &e) == PRECIS_OK); /* in memory: nothing to write */
    char *t1 = pr_cuda_tcache_text(c);
    CHECK(t1 && !strncmp(t1, "precis-timing-cache 1\n", 22));
    CHECK(t1 && strstr(t1, "\ngpu\tTest GPU\n") && strstr(t1, "\ncompute\tsm_90\n"));
    CHECK(t1 && strstr(t1, "\nqconv.route v4 k1\t0102ff\n") && strstr(t1, "\nlt.algo m=64 n=32\t07\n"));
    int hits = -1, added = -1;
    pr_cuda_tcache_counts(c, &hits, &added);
    CHECK(hits == 0 && added == 2);
    pr_cuda_tcache_close(c);

    /* read back: the same values; a text written after one get holds that entry only */
    c = NULL;
    CHECK(t1 && pr_cuda_tcache_open_text(t1, NAME, ARCH, &c, &e) == PRECIS_OK && c);
    CHECK(pr_cuda_tcache_get(c, "qconv.route v4 k1", v, 3) && !memcmp(v, a, 3));
    CHECK(!pr_cuda_tcache_get(c, "qconv.route v4 k1", v, 2)); /* another size: absent */
    CHECK(!pr_cuda_tcache_get(c, "qconv.route v4 k2", v, 3));
    char *t2 = pr_cuda_tcache_text(c);
    CHECK(t2 && strstr(t2, "qconv.route v4 k1\t0102ff") && !strstr(t2, "lt.algo"));
    CHECK(pr_cuda_tcache_get(c, "lt.algo m=64 n=32", v, 1) && v[0] == 7);
    pr_cuda_tcache_counts(c, &hits, &added);
    CHECK(hits == 2 && added == 0);
    pr_cuda_tcache_close(c);

    /* another GPU: refused as PRECIS_ERR_INVALID_ARG (a plan's loader then times again) */
    char *t3 = t1 ? other_gpu(t1, "Some Other GPU") : NULL;
    c = NULL;
    CHECK(t3 && pr_cuda_tcache_open_text(t3, NAME, ARCH, &c, &e) == PRECIS_ERR_INVALID_ARG && !c);
    CHECK(strstr(e.msg, "was made for gpu Some Other GPU") != NULL);
    /* malformed: PRECIS_ERR_PARSE */
    const char *bad[] = {"precis-timing-cache 1\ngpu\tTest GPU\n", "not a cache\n",
                         "precis-timing-cache 1\ncompute\tsm_90\n"};
    for (int i = 0; i < 3; i++) {
        c = NULL;
        CHECK(pr_cuda_tcache_open_text(bad[i], NAME, ARCH, &c, &e) == PRECIS_ERR_PARSE && !c);
    }
    if (t1) {
        size_t n = strlen(t1);
        char *t4 = malloc(n + 16);
        if (t4) {
            snprintf(t4, n + 16, "%sk3\t0g\n", t1); /* not hex */
            c = NULL;
            CHECK(pr_cuda_tcache_open_text(t4, NAME, ARCH, &c, &e) == PRECIS_ERR_PARSE && !c);
            free(t4);
        }
    }
    free(t1);
    free(t2);
    free(t3);
    return check_report("test_cuda_tcache");
}
