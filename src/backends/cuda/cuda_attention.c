/* Attention (ops.inc: Y = softmax(scale Q K' + M) V) on the GPU.
 *
 * Where Q, K and V are device activations of one float type whose batch
 * dims flatten to one stride each (or broadcast whole) and whose rows are
 * contiguous, it runs as three launches: the scores S = Q K' by a batched
 * cuBLASLt GEMM into float32 scratch (Tensor Cores for fp16/bf16), a
 * float32 softmax of scale * S + M written in the activation type, and
 * Y = P V by a second batched GEMM. Any other geometry (broadcast heads, a
 * float32 K / V beside fp16 Q, strided rows) runs our per-query-row kernel,
 * which reads every operand through its broadcast strides.
 * y_type 17 (ops.inc; pass_fp8_quant.c): Y in e4m3, y_scale, written by the
 * fused kernel's store (only where the fused kernel runs: other geometries
 * are refused, and ref runs the node). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_tcache.h"

#define MAX_SHAPES 8
#define MAX_SK_ROWKERNEL 12000

typedef struct attn_geo { /* the batched-GEMM form */
    int64_t nb, sq, sk, d, dv;
    int64_t ldq, ldk, ldv, sbq, sbk, sbv;
} attn_geo;

typedef struct attn_plan {
    attn_geo g;
    cublasLtMatrixLayout_t lk, lq, ls, lv, lp, ly;
    cublasLtMatmulAlgo_t a1, a2;
} attn_plan;

typedef struct attn_state {
    pr_dtype dt;
    bool kt;
    cublasLtMatmulDesc_t d1, d2;
    pthread_mutex_t mu;
    attn_plan plans[MAX_SHAPES];
    int n_plans;
    struct { /* the fused kernel's timed form per geometry: keys split over warps or not */
        int64_t nb, sq, sk;
        int split;
    } fch[MAX_SHAPES];
    int n_fch;
    void *tc; /* timing cache (pr_cuda_tcache) or NULL */
    bool noted;
    bool yq; /* y_type: e4m3 Y (the fused kernel only) */
    char what[320];
} attn_state;

static const char *static_path(const pr_graph *g, const pr_node *n, pr_err *e);

static bool attn_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Attention || n->n_inputs < 3 || n->n_outputs != 1) return false;
    pr_dtype yd = pr_cu_tdt(g, n->outputs[0]);
    bool yq = pr_attr_int(n, "y_type", 0) != 0;
    if (yq && (yd != PRECIS_FLOAT8E4M3FN || !(pr_attr_float(n, "y_scale", 0.0f) > 0.0f)))
        return false;
    if (yq) yd = pr_cu_tdt(g, n->inputs[0]);
    if (!pr_cu_float(yd) || pr_cu_tdt(g, n->inputs[0]) != yd) return false;
    for (int i = 0; i < n->n_inputs && i < 4; i++)
        if (n->inputs[i] >= 0 && !pr_cu_float(pr_cu_tdt(g, n->inputs[i]))) return false;
    for (int i = 0; i < 3; i++)
        if (n->inputs[i] < 0) return false;
    if (yq) { /* e4m3 Y: the fused kernel's store only */
        pr_err quiet = {0};
        const char *path = static_path(g, n, &quiet);
        return path && !strcmp(path, "flash");
    }
    return true;
}

/* Does operand o flatten its batch dims to one stride (*sb)? */
static bool flat_batch(const pr_attn_geom *a, int o, int64_t *sb) {
    int64_t s = -1, span = 1;
    for (int d = a->nbd - 1; d >= 0; d--) {
        if (a->bdims[d] == 1) continue;
        int64_t st = a->bst[o][d];
        if (s < 0) s = st; /* innermost batch dim: the stride per batch step */
        else if (st != s * span) return false;
        span *= a->bdims[d];
    }
    *sb = s < 0 ? 0 : s;
    if (*sb == 0) /* broadcast over every batch dim, or over none */
        for (int d = 0; d < a->nbd; d++)
            if (a->bdims[d] > 1 && a->bst[o][d] != 0) return false;
    return true;
}

/* Leading dimension of a rows x cols operand with strides rs, cs: cols must
 * be contiguous (or 1 wide); 0 when it does not fit. */
static int64_t ld_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    if (cols > 1 && cs != 1) return 0;
    if (rows <= 1) return cols;
    return rs >= cols ? rs : 0;
}

static bool gemm_form(const pr_attn_geom *a, bool acts_same, attn_geo *g) {
    if (!acts_same) return false;
    memset(g, 0, sizeof *g);
    g->nb = a->nb;
    g->sq = a->Sq;
    g->sk = a->Sk;
    g->d = a->D;
    g->dv = a->Dv;
    g->ldq = ld_of(a->Sq, a->D, a->rs[0], a->cs[0]);
    g->ldk = a->kt ? ld_of(a->D, a->Sk, a->rs[1], a->cs[1]) : ld_of(a->Sk, a->D, a->rs[1], a->cs[1]);
    g->ldv = ld_of(a->Sk, a->Dv, a->rs[2], a->cs[2]);
    if (!g->ldq || !g->ldk || !g->ldv) return false;
    if (a->Sq > 1 && a->rs[0] == 0) return false; /* one query row broadcast: row kernel */
    for (int64_t d = a->nbd - 1, s = a->Sq * a->Dv; d >= 0; s *= a->bdims[d--])
        if (a->yrs != a->Dv || (a->bdims[d] > 1 && a->ybst[d] != s)) return false;
    return flat_batch(a, 0, &g->sbq) && flat_batch(a, 1, &g->sbk) && flat_batch(a, 2, &g->sbv);
}

/* Does the fused fp16/bf16 kernel (cu_flash.cu) take this geometry? Q, K
 * (not transposed), V and Y of the plan's type with rows of D = Dv in
 * {32, 64, 128} contiguous elements, strides in whole 16-byte chunks. */
static bool flash_form(const pr_attn_geom *a, pr_dtype dt, bool acts_same, pr_dtype mdt) {
    static int env = -1;
    if (env < 0) {
        const char *v = getenv("PRECIS_CUDA_FLASH");
        env = !(v && !strcmp(v, "0"));
    }
    if (!env || !acts_same || a->kt || a->Sk <= 0 || a->D != a->Dv) return false;
    if (a->has_mask && mdt != PRECIS_FLOAT32 && mdt != PRECIS_FLOAT16 && mdt != PRECIS_BFLOAT16)
        return false;
    if (dt != PRECIS_FLOAT16 && dt != PRECIS_BFLOAT16) return false;
    if (a->D != 32 && a->D != 64 && a->D != 128) return false;
    if (a->nbd > PR_CU_FLASH_NB) return false;
    for (int o = 0; o < 3; o++) {
        if (a->cs[o] != 1 || a->rs[o] % 8) return false;
        for (int d = 0; d < a->nbd; d++)
            if (a->bst[o][d] % 8) return false;
    }
    if (a->yrs % 8) return false;
    for (int d = 0; d < a->nbd; d++)
        if (a->ybst[d] % 8) return false;
    return true;
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* Operand o (Q, K, V) at its offset in its buffer (qkv_heads: thirds of one). */
static const void *opnd(const pr_kernel *k, const pr_attn_geom *a, int o) {
    const pr_buf *b = k->in[o];
    return (const char *)b->data + (size_t)a->off0[o] * pr_dtype_size(b->dtype);
}

/* Y = the fused kernel over geometry a (flash_form holds). */
static int flash_run(pr_cuda_exec *x, const pr_attn_geom *a, pr_kernel *k, pr_dtype dt,
                     int split) {
    pr_cu_flash f;
    memset(&f, 0, sizeof f);
    const pr_buf *M = pr_kin(k, 3);
    f.dt = (int)dt;
    if (k->out[0]->dtype == PRECIS_FLOAT8E4M3FN) {
        f.yq = pr_attr_float(k->node, "y_scale", 1.0f);
        f.yqr = 1.0f / f.yq;
    }
    f.split = split;
    const char *nw = getenv("PRECIS_CUDA_FLASH_NW"); /* an experiment's override: 2, 4, 8 */
    f.nw = nw ? atoi(nw) : 0;
    f.d = (int)a->D;
    f.nb = a->nb;
    f.sq = a->Sq;
    f.sk = a->Sk;
    f.scale = a->scale;
    f.q = opnd(k, a, 0);
    f.k = opnd(k, a, 1);
    f.v = opnd(k, a, 2);
    f.m = M ? M->data : NULL;
    f.mdt = M ? (int)M->dtype : 0;
    f.y = k->out[0]->data;
    for (int d = 0; d < PR_CU_FLASH_NB; d++) { /* right-aligned, leading dims 1 */
        int s = d - (PR_CU_FLASH_NB - a->nbd);
        f.bdims[d] = s >= 0 ? a->bdims[s] : 1;
        for (int o = 0; o < 4; o++) f.bst[o][d] = s >= 0 ? a->bst[o][s] : 0;
        f.bst[4][d] = s >= 0 ? a->ybst[s] : 0;
    }
    for (int o = 0; o < 4; o++) f.rs[o] = a->rs[o];
    f.rs[4] = a->yrs;
    f.mcs = a->cs[3];
    /* a 16-bit mask of distinct rows in whole 16-byte chunks is staged in tiles (BERT b64
     * fp16 [B,1,S,S] 88 -> 65 us); float32 masks and masks broadcast over the rows
     * measured faster loaded a thread (bench_imma attn) */
    if (M && M->dtype != PRECIS_FLOAT32 && a->rs[3] != 0) {
        f.mvec = a->cs[3] == 1 && a->rs[3] % 8 == 0 && aligned16(M->data);
        for (int d = 0; d < a->nbd; d++) f.mvec = f.mvec && a->bst[3][d] % 8 == 0;
    } else if (M && M->dtype != PRECIS_FLOAT32 && a->cs[3] == 1 && aligned16(M->data)) {
        /* one key row broadcast over the query rows (pass_attn_mask.c's [B,1,1,S]):
         * the large-grid kernel stages that row once a tile (mvec 2) */
        f.mvec = 2;
        for (int d = 0; d < a->nbd; d++) f.mvec = a->bst[3][d] % 8 == 0 ? f.mvec : 0;
    }
    return pr_cu_flash_attention(x->stream, &f);
}

typedef struct flash_launch {
    pr_cuda_exec *x;
    const pr_attn_geom *a;
    pr_kernel *k;
    pr_dtype dt;
    int split;
} flash_launch;

/* 10 launches a timing: one batch-1 launch (~10 us) is about as long as the launch
 * overhead, and single-launch timings picked either form from layer to layer. */
#define FLASH_REPS 10
static bool launch_flash(void *v) {
    const flash_launch *l = v;
    for (int r = 0; r < FLASH_REPS; r++)
        if (flash_run(l->x, l->a, l->k, l->dt, l->split) != 0) return false;
    return true;
}

/* The fused kernel's form for geometry a (s->mu held): for D <= 64 on small
 * grids (fewer than 264 blocks of 64 query rows: batch 1), the rows form (BQ
 * query rows a block, every warp walking all keys) or the split form (16 query
 * rows a block, two warps each taking half the key tiles: more blocks and half
 * the serial tile walk), whichever ran faster at the first run (timed on the
 * call's buffers, 10 launches a timing, interleaved, the minimum of two rounds
 * each; kept in the timing cache). Larger grids take the rows form (H100, MiniLM b64: split 58 us vs 44).
 * PRECIS_CUDA_FLASH_SPLIT=0 / 1 forces one. Inside a capture with no choice made:
 * split. */
static int flash_split(attn_state *s, pr_cuda_exec *x, const pr_attn_geom *a, pr_kernel *k) {
    if (a->D > 64) return 0;
    const char *env = getenv("PRECIS_CUDA_FLASH_SPLIT");
    if (env && (!strcmp(env, "0") || !strcmp(env, "1"))) return env[0] == '1';
    if (a->nb * ((a->Sq + 63) / 64) >= 264) return 0;
    for (int i = 0; i < s->n_fch; i++)
        if (s->fch[i].nb == a->nb && s->fch[i].sq == a->Sq && s->fch[i].sk == a->Sk)
            return s->fch[i].split;
    if (x->capturing) return 1;
    const pr_buf *M = pr_kin(k, 3);
    char key[200];
    snprintf(key, sizeof key, "flash.split dt=%d d=%lld nb=%lld sq=%lld sk=%lld m=%d mrows=%d",
             (int)s->dt, (long long)a->D, (long long)a->nb, (long long)a->Sq, (long long)a->Sk,
             M ? (int)M->dtype : 0, M ? a->rs[3] != 0 : 0);
    int32_t v = 0;
    char note[160] = "";
    if (pr_cuda_tcache_get(s->tc, key, &v, sizeof v) && (v == 0 || v == 1)) {
        snprintf(note, sizeof note, " [nb=%lld sq=%lld: %s form, a cached choice]",
                 (long long)a->nb, (long long)a->Sq, v ? "split" : "rows");
    } else {
        flash_launch l0 = {x, a, k, s->dt, 0}, l1 = {x, a, k, s->dt, 1};
        float t0 = -1, t1 = -1;
        for (int r = 0; r < 2; r++) { /* interleaved: a GPU clocking up favours neither */
            float u0 = pr_cu_time3((cudaStream_t)x->stream, launch_flash, &l0);
            float u1 = pr_cu_time3((cudaStream_t)x->stream, launch_flash, &l1);
            if (u0 >= 0 && (t0 < 0 || u0 < t0)) t0 = u0;
            if (u1 >= 0 && (t1 < 0 || u1 < t1)) t1 = u1;
        }
        v = t1 >= 0 && (t0 < 0 || t1 < t0);
        pr_cuda_tcache_put(s->tc, key, &v, sizeof v);
        snprintf(note, sizeof note, " [timed nb=%lld sq=%lld sk=%lld: rows %.4f ms, split %.4f ms]",
                 (long long)a->nb, (long long)a->Sq, (long long)a->Sk, t0 / FLASH_REPS,
                 t1 / FLASH_REPS);
    }
    if (!s->noted) {
        size_t l = strlen(s->what);
        snprintf(s->what + l, sizeof s->what - l, "%s", note);
        s->noted = true;
    }
    if (s->n_fch == MAX_SHAPES) {
        memmove(&s->fch[0], &s->fch[1], (MAX_SHAPES - 1) * sizeof s->fch[0]);
        s->n_fch--;
    }
    s->fch[s->n_fch].nb = a->nb;
    s->fch[s->n_fch].sq = a->Sq;
    s->fch[s->n_fch].sk = a->Sk;
    s->fch[s->n_fch++].split = v;
    return v;
}

static void plan_free(attn_plan *p) {
    cublasLtMatrixLayout_t *l[6] = {&p->lk, &p->lq, &p->ls, &p->lv, &p->lp, &p->ly};
    for (int i = 0; i < 6; i++)
        if (*l[i]) cublasLtMatrixLayoutDestroy(*l[i]);
}

static void attn_destroy(void *p) {
    attn_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->n_plans; i++) plan_free(&s->plans[i]);
    if (s->d1) cublasLtMatmulDescDestroy(s->d1);
    if (s->d2) cublasLtMatmulDescDestroy(s->d2);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static cudaDataType_t cuda_dt(pr_dtype dt) {
    return dt == PRECIS_FLOAT16 ? CUDA_R_16F : dt == PRECIS_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Static shapes: which path runs (for describe). */
static const char *static_path(const pr_graph *g, const pr_node *n, pr_err *e) {
    pr_buf b[4], y;
    const pr_buf *in[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < n->n_inputs && i < 4; i++) {
        int t = n->inputs[i];
        if (t < 0) continue;
        const pr_tensor *x = &g->tensors[t];
        if (pr_numel(x->rank, x->dims) < 0) return NULL;
        memset(&b[i], 0, sizeof b[i]);
        b[i].dtype = x->dtype;
        b[i].rank = x->rank;
        memcpy(b[i].dims, x->dims, sizeof b[i].dims);
        in[i] = &b[i];
    }
    const pr_tensor *yt = &g->tensors[n->outputs[0]];
    if (pr_numel(yt->rank, yt->dims) < 0 || n->inputs[0] < 0) return NULL;
    const pr_dtype dt = g->tensors[n->inputs[0]].dtype; /* Y's, or e4m3 Y's (y_type) */
    memset(&y, 0, sizeof y);
    y.rank = yt->rank;
    memcpy(y.dims, yt->dims, sizeof y.dims);
    pr_buf *out[1] = {&y};
    pr_kernel k = {g, n, n->n_inputs < 4 ? n->n_inputs : 4, in, 1, out, e, 1};
    pr_attn_geom a;
    pr_err quiet = {0};
    k.err = &quiet;
    if (pr_attn_geom_of(&k, &a)) return NULL;
    bool same = true;
    for (int i = 0; i < 3; i++)
        same = same && g->tensors[n->inputs[i]].dtype == dt && !pr_cu_is_init(g, n->inputs[i]);
    attn_geo gg;
    pr_dtype mdt = n->n_inputs > 3 && n->inputs[3] >= 0 ? g->tensors[n->inputs[3]].dtype : 0;
    if (flash_form(&a, dt, same, mdt)) return "flash";
    return gemm_form(&a, same, &gg) ? "gemm" : "rows";
}

static precis_status attn_run(void *sp, pr_kernel *k, pr_cuda_exec *x);

static precis_status attn_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                  void **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    attn_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    s->dt = g->tensors[n->inputs[0]].dtype; /* Y's (y_type: Y is e4m3) */
    s->yq = pr_attr_int(n, "y_type", 0) != 0;
    s->tc = cfg->tcache;
    s->kt = pr_attr_int(n, "k_transposed", 0) != 0;
    /* S^T = K'^T-as-stored x Q^T (column-major): op T on K unless k_transposed */
    cublasOperation_t opk = s->kt ? CUBLAS_OP_N : CUBLAS_OP_T, opn = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescCreate(&s->d1, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(s->d1, CUBLASLT_MATMUL_DESC_TRANSA, &opk, sizeof opk));
    LT_TRY(cublasLtMatmulDescSetAttribute(s->d1, CUBLASLT_MATMUL_DESC_TRANSB, &opn, sizeof opn));
    LT_TRY(cublasLtMatmulDescCreate(&s->d2, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(s->d2, CUBLASLT_MATMUL_DESC_TRANSA, &opn, sizeof opn));
    LT_TRY(cublasLtMatmulDescSetAttribute(s->d2, CUBLASLT_MATMUL_DESC_TRANSB, &opn, sizeof opn));
    const char *path = static_path(g, n, e);
    const char *tn = s->dt == PRECIS_FLOAT16 ? "fp16" : s->dt == PRECIS_BFLOAT16 ? "bf16" : "fp32";
    if (path && !strcmp(path, "flash"))
        snprintf(s->what, sizeof s->what,
                 "cu.flash_attention %s (Q K' and P V on Tensor Cores, online fp32 softmax)%s", tn,
                 s->yq ? ", e4m3 store" : "");
    else if (path && !strcmp(path, "gemm"))
        snprintf(s->what, sizeof s->what,
                 "cublasLt %s batched QK' -> fp32 scores, softmax kernel (fp32), cublasLt PV", tn);
    else if (path)
        snprintf(s->what, sizeof s->what, "cu.attention row kernel %s (fp32 softmax)", tn);
    else
        snprintf(s->what, sizeof s->what,
                 "cublasLt %s batched QK', fp32 softmax, PV (row kernel where the geometry does "
                 "not fit)", tn);
    /* static shapes: the fused kernel's form is timed now, so that inspect names it */
    if (path && !strcmp(path, "flash") && (st = pr_cu_run_static(g, n, cfg->x, attn_run, s, 0, e)))
        goto fail;
    *out = s;
    return PRECIS_OK;
fail:
    attn_destroy(s);
    return st;
}

static const char *attn_describe(void *p) { return ((attn_state *)p)->what; }

static precis_status layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows,
                            int64_t cols, int64_t ld, int64_t batch, int64_t stride, pr_err *e) {
    precis_status st = PRECIS_OK;
    LT_TRY(cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld));
    int32_t bc = (int32_t)batch;
    LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                            &stride, sizeof stride));
    return PRECIS_OK;
fail:
    return st;
}

static precis_status heuristic(pr_cuda_exec *x, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a,
                               cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                               cublasLtMatmulAlgo_t *algo, pr_err *e) {
    precis_status st = PRECIS_OK;
    cublasLtMatmulPreference_t pref = NULL;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = x->ws_bytes;
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t h;
    int nres = 0;
    LT_TRY(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)x->lt, d, a, b, c, c, pref, 1, &h,
                                          &nres));
    if (nres < 1) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for the attention GEMMs");
        goto fail;
    }
    *algo = h.algo;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    return st;
}

/* Called with s->mu held. */
static precis_status get_plan(attn_state *s, pr_cuda_exec *x, const attn_geo *g, attn_plan **out,
                              pr_err *e) {
    precis_status st = PRECIS_OK;
    for (int i = 0; i < s->n_plans; i++)
        if (!memcmp(&s->plans[i].g, g, sizeof *g)) {
            *out = &s->plans[i];
            return PRECIS_OK;
        }
    if (x->capturing)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "attention: new shape during a graph capture");
    attn_plan p;
    memset(&p, 0, sizeof p);
    p.g = *g;
    cudaDataType_t t = cuda_dt(s->dt);
    /* S^T [sk x sq] = K'^T [sk x d] x Q^T [d x sq] */
    if (s->kt) st = layout(&p.lk, t, g->sk, g->d, g->ldk, g->nb, g->sbk, e);
    else st = layout(&p.lk, t, g->d, g->sk, g->ldk, g->nb, g->sbk, e);
    if (st || (st = layout(&p.lq, t, g->d, g->sq, g->ldq, g->nb, g->sbq, e)) ||
        (st = layout(&p.ls, CUDA_R_32F, g->sk, g->sq, g->sk, g->nb, g->sk * g->sq, e)) ||
        /* Y^T [dv x sq] = V^T [dv x sk] x P^T [sk x sq] */
        (st = layout(&p.lv, t, g->dv, g->sk, g->ldv, g->nb, g->sbv, e)) ||
        (st = layout(&p.lp, t, g->sk, g->sq, g->sk, g->nb, g->sk * g->sq, e)) ||
        (st = layout(&p.ly, t, g->dv, g->sq, g->dv, g->nb, g->dv * g->sq, e)))
        goto fail;
    if ((st = heuristic(x, s->d1, p.lk, p.lq, p.ls, &p.a1, e)) ||
        (st = heuristic(x, s->d2, p.lv, p.lp, p.ly, &p.a2, e)))
        goto fail;
    if (s->n_plans == MAX_SHAPES) {
        plan_free(&s->plans[0]);
        memmove(&s->plans[0], &s->plans[1], (MAX_SHAPES - 1) * sizeof s->plans[0]);
        s->n_plans--;
    }
    s->plans[s->n_plans] = p;
    *out = &s->plans[s->n_plans++];
    return PRECIS_OK;
fail:
    plan_free(&p);
    return st;
}

static precis_status attn_run(void *sp, pr_kernel *k, pr_cuda_exec *x) {
    attn_state *s = sp;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    pr_attn_geom a;
    if ((st = pr_attn_geom_of(k, &a))) return st;
    pr_buf *Y = k->out[0];
    if (Y->numel == 0) return PRECIS_OK;
    const pr_buf *M = pr_kin(k, 3);
    bool same = true;
    for (int i = 0; i < 3; i++)
        same = same && k->in[i]->dtype == s->dt && !pr_cu_is_init(k->g, k->node->inputs[i]);
    attn_geo g;
    if (flash_form(&a, s->dt, same, M ? M->dtype : 0) && aligned16(opnd(k, &a, 0)) &&
        aligned16(opnd(k, &a, 1)) && aligned16(opnd(k, &a, 2)) && aligned16(Y->data)) {
        pthread_mutex_lock(&s->mu);
        int split = flash_split(s, x, &a, k);
        pthread_mutex_unlock(&s->mu);
        KL_TRY(flash_run(x, &a, k, s->dt, split));
        return PRECIS_OK;
    }
    if (s->yq)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "an e4m3 Y (y_type) needs the fused kernel's "
                          "geometry and 16-byte aligned operands");
    if (a.Sk > 0 && !a.off0[1] && gemm_form(&a, same, &g)) {
        size_t es = pr_dtype_size(s->dt), nsc = (size_t)(g.nb * g.sq * g.sk);
        size_t off_p = (nsc * 4 + 255) & ~(size_t)255;
        unsigned char *scr = pr_cuda_scratch(x, off_p + nsc * es, e);
        if (!scr) return pr_err_prefix(e, "node '%s'", k->node->name);
        attn_plan *pl = NULL;
        pthread_mutex_lock(&s->mu);
        st = get_plan(s, x, &g, &pl, e);
        attn_plan p = pl ? *pl : (attn_plan){0};
        pthread_mutex_unlock(&s->mu);
        if (st) return pr_err_prefix(e, "node '%s'", k->node->name);
        float one = 1.0f, zero = 0.0f;
        cudaStream_t stream = (cudaStream_t)x->stream;
        float *S = (float *)scr;
        void *P = scr + off_p;
        LT_TRY(cublasLtMatmul((cublasLtHandle_t)x->lt, s->d1, &one, k->in[1]->data, p.lk,
                              k->in[0]->data, p.lq, &zero, S, p.ls, S, p.ls, &p.a1, x->ws,
                              x->ws_bytes, stream));
        pr_cu_mask m;
        memset(&m, 0, sizeof m);
        if (M) {
            m.p = M->data;
            m.dt = (int)M->dtype;
            m.nbd = a.nbd;
            for (int d = 0; d < a.nbd; d++) {
                m.bdims[d] = a.bdims[d];
                m.bst[d] = a.bst[3][d];
            }
            m.rs = a.rs[3];
            m.cs = a.cs[3];
        }
        KL_TRY(pr_cu_attn_softmax(x->stream, S, P, (int)s->dt, g.nb, g.sq, g.sk, a.scale, &m));
        LT_TRY(cublasLtMatmul((cublasLtHandle_t)x->lt, s->d2, &one, k->in[2]->data, p.lv, P, p.lp,
                              &zero, Y->data, p.ly, Y->data, p.ly, &p.a2, x->ws, x->ws_bytes,
                              stream));
        return PRECIS_OK;
    }
    if (a.Sk > MAX_SK_ROWKERNEL)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "attention over %lld keys in this geometry",
                          (long long)a.Sk);
    pr_cu_attn c;
    memset(&c, 0, sizeof c);
    c.nbd = a.nbd;
    memcpy(c.bdims, a.bdims, sizeof c.bdims);
    c.nb = a.nb;
    c.sq = a.Sq;
    c.sk = a.Sk;
    c.d = a.D;
    c.dv = a.Dv;
    c.scale = a.scale;
    c.kt = a.kt;
    c.has_mask = M != NULL;
    for (int o = 0; o < 4; o++) {
        const pr_buf *b = pr_kin(k, o);
        c.op[o] = b ? (o < 3 ? opnd(k, &a, o) : b->data) : NULL;
        c.dt[o] = b ? (int)b->dtype : 0;
        memcpy(c.bst[o], a.bst[o], sizeof c.bst[o]);
        c.rs[o] = a.rs[o];
        c.cs[o] = a.cs[o];
    }
    c.y = Y->data;
    c.ydt = (int)Y->dtype;
    memcpy(c.ybst, a.ybst, sizeof c.ybst);
    c.yrs = a.yrs;
    KL_TRY(pr_cu_attention(x->stream, &c));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_attention = {
    .name = "cu.attention",
    .supports = attn_supports,
    .prepare = attn_prepare,
    .run = attn_run,
    .describe = attn_describe,
    .destroy = attn_destroy,
};
