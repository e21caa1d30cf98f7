/* The timed choice of a cuBLASLt matmul algorithm (see cuda_util.h,
 * pr_cu_lt_choose): the heuristic's proposals, then variants it does not
 * propose for small M -- split-K (the K range cut into parts that run as
 * more CTAs, partial sums reduced in float32) and the other tile sizes of
 * the leading proposals -- each checked by cublasLtMatmulAlgoCheck against
 * the workspace, timed on the call's buffers, the fastest kept. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_util.h"

#define HEUR 24      /* heuristic proposals asked for */
#define SPLIT_SRC 8  /* proposals that get split-K variants */
#define TILE_SRC 4   /* proposals that get tile variants */
#define MAX_TILES 64

typedef struct cand_set {
    cublasLtMatmulAlgo_t *a;
    int n, cap;
} cand_set;

static void add(cand_set *c, const cublasLtMatmulAlgo_t *a) {
    if (c->n >= c->cap) return;
    for (int i = 0; i < c->n; i++)
        if (!memcmp(&c->a[i], a, sizeof *a)) return;
    c->a[c->n++] = *a;
}

/* Does cuBLASLt accept algo a for these operands within ws bytes? */
static bool usable(const pr_lt_problem *p, const cublasLtMatmulAlgo_t *a) {
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    return cublasLtMatmulAlgoCheck(p->lt, p->desc, p->la, p->lb, p->lc, p->ld, a, &r) ==
               CUBLAS_STATUS_SUCCESS &&
           r.workspaceSize <= p->ws_bytes;
}

static int32_t cfg_i32(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t at) {
    int32_t v = 0;
    size_t w = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(a, at, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS)
        return -1;
    return v;
}

/* Split-K variants of a: K cut into s parts (each >= 64 deep), float32 partial sums
 * (the accumulator type: no extra rounding) reduced in a separate step. */
static void split_variants(const pr_lt_problem *p, const cublasLtMatmulAlgo_t *a, cand_set *c) {
    static const int32_t parts[] = {2, 3, 4, 6, 8, 12, 16};
    int32_t sup = 0;
    uint32_t mask = 0;
    size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &sup, sizeof sup,
                                          &w) != CUBLAS_STATUS_SUCCESS || !sup)
        return;
    if (cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &mask,
                                          sizeof mask, &w) != CUBLAS_STATUS_SUCCESS ||
        !(mask & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE))
        return;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (p->k / parts[i] < 64) break;
        cublasLtMatmulAlgo_t v = *a;
        uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        if (cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &parts[i],
                                                 sizeof parts[i]) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red,
                                                 sizeof red) != CUBLAS_STATUS_SUCCESS)
            continue;
        if (usable(p, &v)) add(c, &v);
    }
}

/* The other tile sizes a's kernel family offers. */
static void tile_variants(const pr_lt_problem *p, const cublasLtMatmulAlgo_t *a, cand_set *c) {
    uint32_t tiles[MAX_TILES];
    size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_TILE_IDS, NULL, 0, &w) !=
            CUBLAS_STATUS_SUCCESS ||
        w == 0 || w > sizeof tiles)
        return;
    if (cublasLtMatmulAlgoCapGetAttribute(a, CUBLASLT_ALGO_CAP_TILE_IDS, tiles, w, &w) !=
        CUBLAS_STATUS_SUCCESS)
        return;
    for (size_t i = 0; i < w / sizeof tiles[0]; i++) {
        if (tiles[i] == CUBLASLT_MATMUL_TILE_UNDEFINED) continue;
        cublasLtMatmulAlgo_t v = *a;
        if (cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_TILE_ID, &tiles[i],
                                                 sizeof tiles[i]) != CUBLAS_STATUS_SUCCESS)
            continue;
        if (usable(p, &v)) add(c, &v);
    }
}

typedef struct timed_launch {
    const pr_lt_problem *p;
    const cublasLtMatmulAlgo_t *a;
} timed_launch;

static bool launch_one(void *v) {
    const timed_launch *t = v;
    return t->p->launch(t->p->ctx, t->a);
}

void pr_cu_lt_algo_str(const cublasLtMatmulAlgo_t *a, char *buf, size_t n) {
    int32_t id = cfg_i32(a, CUBLASLT_ALGO_CONFIG_ID), tile = cfg_i32(a, CUBLASLT_ALGO_CONFIG_TILE_ID);
    int32_t split = cfg_i32(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    int len = snprintf(buf, n, "algo %d tile %d", (int)id, (int)tile);
    if (split > 1 && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, " split-K %d", (int)split);
}

int pr_cu_lt_splitk(const cublasLtMatmulAlgo_t *a) {
    int32_t s = cfg_i32(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    return s > 1 ? (int)s : 1;
}

precis_status pr_cu_lt_choose(const pr_lt_problem *p, bool timed, pr_lt_choice *out, pr_err *e) {
    precis_status st = PRECIS_OK;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t h[HEUR];
    cublasLtMatmulAlgo_t *all = NULL;
    memset(out, 0, sizeof *out);
    out->ms = out->ms_first = -1;
    int nres = 0;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = p->ws_bytes;
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof wsb));
    LT_TRY(cublasLtMatmulAlgoGetHeuristic(p->lt, p->desc, p->la, p->lb, p->lc, p->ld, pref,
                                          timed ? HEUR : 1, h, &nres));
    if (nres < 1) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for m=%lld n=%lld k=%lld",
                     (long long)p->m, (long long)p->n, (long long)p->k);
        goto fail;
    }
    out->algo = h[0].algo;
    if (!timed) goto done;
    /* PRECIS_CUDA_LT_SEARCH=0: the heuristic's proposals only (the earlier behaviour);
     * =splitk: the split-K variants only where there are any (for tests) */
    const char *env = getenv("PRECIS_CUDA_LT_SEARCH");
    bool search = !(env && !strcmp(env, "0"));
    bool only_split = env && !strcmp(env, "splitk");
    int cap = HEUR + (search ? SPLIT_SRC * 7 + TILE_SRC * MAX_TILES : 0);
    if (!(all = malloc((size_t)cap * sizeof *all))) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    cand_set c = {all, 0, cap};
    for (int i = 0; i < nres; i++)
        if (h[i].state == CUBLAS_STATUS_SUCCESS) add(&c, &h[i].algo);
    int n_heur = c.n;
    for (int i = 0; search && i < n_heur && i < SPLIT_SRC; i++) split_variants(p, &all[i], &c);
    int n_split = c.n;
    for (int i = 0; search && !only_split && i < n_heur && i < TILE_SRC; i++)
        tile_variants(p, &all[i], &c);
    out->n_cand = c.n;
    int first = only_split && n_split > n_heur ? n_heur : 0;
    for (int i = first; i < c.n; i++) {
        timed_launch tl = {p, &all[i]};
        float t = pr_cu_time3(p->stream, launch_one, &tl);
        if (i == first) out->ms_first = t;
        if (t >= 0 && (out->ms < 0 || t < out->ms)) {
            out->ms = t;
            out->algo = all[i];
            out->index = i;
        }
    }
    out->from_search = out->index >= n_heur;
done:
    cublasLtMatmulPreferenceDestroy(pref);
    free(all);
    return PRECIS_OK;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    free(all);
    return st;
}
