/* QMatMul of an fp8 plan (ir/ops.inc: A and B float8e4m3fn, one scale each)
 * on cuBLASLt's FP8 Tensor Core GEMMs (sm_89+; the H100's QGMMA).
 *
 * Row-major Y[M, N] = A[M, K] x W^T with both operands K-contiguous: in
 * cuBLASLt's column-major terms D[N, M] = op_T(W [K, N]) x A [K, M] (the
 * "TN" form FP8 needs). W is packed at prepare as e4m3 [N][K]. The scales
 * are per tensor (cuBLASLt on sm_90 takes scalar A/B/D scales): its A scale
 * pointer holds w_scale, the B scale a_scale, and for an fp8 Y the D scale
 * 1 / y_scale, so D = e4m3(act(alpha * a_scale * w_scale * acc + beta * Z +
 * bias) / y_scale) in one call: bias (fp16/bf16), ReLU or GELU (tanh form)
 * and the residual Z (as C, beta 1; only with no activation before it) run
 * in cuBLASLt's epilogue (a 16-bit bias: fp16 / bf16 as C, bf16 for a float32
 * Y). Y is float16/bfloat16 (float32 where a rule asks), or float8e4m3fn when
 * the consumer quantizes anyway. Should cuBLASLt have no algorithm with the
 * activation in its epilogue, the activation runs in our epilogue kernel
 * after it (16-bit Y only). Algorithms: the fastest of the heuristic's
 * candidates per M, timed on the call's buffers (or the timing cache's). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_tcache.h"

#define F8_SHAPES 16

typedef struct f8_plan {
    int64_t m;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
} f8_plan;

typedef struct f8_state {
    int64_t N, K;
    pr_dtype ydt;
    cudaDataType_t yct, cct; /* D's type; C's: fp16 or bf16 (fp32 for a float32 D) */
    cudaDataType_t bct;      /* the bias's: C's, bf16 for a float32 D (cuBLASLt's FP8 table) */
    void *w;                 /* device e4m3 [N][K] */
    float *scales;           /* device: w_scale, a_scale, 1 / y_scale at [0], [4], [8] */
    void *bias;              /* device, cct */
    float alpha;
    bool has_z;
    pr_cu_act own_act; /* run by our kernel after the GEMM (cuBLASLt had none) */
    cublasLtEpilogue_t epi;
    cublasLtMatmulDesc_t desc;
    void *tc;
    pthread_mutex_t mu;
    bool mu_ok;
    f8_plan plans[F8_SHAPES];
    int n_plans;
    bool timed_note; /* what[] names the first shape's choice */
    char what[320];
} f8_state;

static bool f8(pr_dtype d) { return d == PRECIS_FLOAT8E4M3FN; }
static bool h16(pr_dtype d) { return d == PRECIS_FLOAT16 || d == PRECIS_BFLOAT16; }
static bool fl(pr_dtype d) { return h16(d) || d == PRECIS_FLOAT32; }
static bool lt_act_kind(int k) {
    return k == PR_ACT_NONE || k == PR_ACT_RELU || k == PR_ACT_GELU || k == PR_ACT_GELU_TANH;
}

static bool f8_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QMatMul) return false;
    int x = pr_node_in(n, 0), w = pr_node_in(n, 1), ws = pr_node_in(n, 2), y = pr_node_out(n, 0);
    if (x < 0 || w < 0 || ws < 0 || y < 0) return false;
    if (!f8(pr_cu_tdt(g, x)) || !f8(pr_cu_tdt(g, w)) || pr_cu_is_init(g, x) ||
        !pr_cu_is_init(g, w) || !pr_cu_is_init(g, ws) || pr_cu_tdt(g, ws) != PRECIS_FLOAT32)
        return false;
    const pr_tensor *X = &g->tensors[x], *W = &g->tensors[w], *S = &g->tensors[ws];
    if (pr_numel(S->rank, S->dims) != 1 || W->rank != 2 || X->rank < 2) return false;
    if (pr_attr_int(n, "transA", 0)) return false;
    bool tb = pr_attr_int(n, "transB", 0) != 0;
    int64_t K = X->dims[X->rank - 1], N = tb ? W->dims[0] : W->dims[1];
    if (!pr_dim_known(K) || (tb ? W->dims[1] : W->dims[0]) != K || K % 16 || N % 16) return false;
    pr_dtype yd = pr_cu_tdt(g, y); /* float32 at lowering; the plan's float type later */
    if (!fl(yd) && !f8(yd)) return false;
    int b = pr_node_in(n, 3), z = pr_node_in(n, 4);
    if (b >= 0 && (!pr_cu_is_init(g, b) || pr_cu_tdt(g, b) != PRECIS_FLOAT32 ||
                   pr_numel(g->tensors[b].rank, g->tensors[b].dims) != N))
        return false;
    pr_act a1, a2;
    if (!pr_act_from_node(n, "act", &a1) || !pr_act_from_node(n, "act2", &a2)) return false;
    if (!lt_act_kind(a1.kind) || !lt_act_kind(a2.kind)) return false;
    if (z >= 0) /* Z rides in C: no activation before it, Y's type */
        return !pr_cu_is_init(g, z) && pr_cu_tdt(g, z) == yd && fl(yd) && a1.kind == PR_ACT_NONE;
    return a2.kind == PR_ACT_NONE;
}

static bool f8_packs(const pr_graph *g, const pr_node *n, int i) {
    (void)g;
    (void)n;
    return i == 1 || i == 2 || i == 3;
}

static void plan_free(f8_plan *p) {
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->ld) cublasLtMatrixLayoutDestroy(p->ld);
    memset(p, 0, sizeof *p);
}

static void f8_destroy(void *p) {
    f8_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->n_plans; i++) plan_free(&s->plans[i]);
    if (s->desc) cublasLtMatmulDescDestroy(s->desc);
    if (s->w) cudaFree(s->w);
    if (s->scales) cudaFree(s->scales);
    if (s->bias) cudaFree(s->bias);
    if (s->mu_ok) pthread_mutex_destroy(&s->mu);
    free(s);
}


static precis_status make_layouts(const f8_state *s, int64_t M, f8_plan *p, pr_err *e) {
    precis_status st = PRECIS_OK;
    p->m = M;
    LT_TRY(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8F_E4M3, (uint64_t)s->K, (uint64_t)s->N, s->K));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8F_E4M3, (uint64_t)s->K, (uint64_t)M, s->K));
    /* C: D's own descriptor when of D's type (in place, C == D, needs the same one) */
    if (s->cct != s->yct)
        LT_TRY(cublasLtMatrixLayoutCreate(&p->lc, s->cct, (uint64_t)s->N, (uint64_t)M, s->N));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->ld, s->yct, (uint64_t)s->N, (uint64_t)M, s->N));
    return PRECIS_OK;
fail:
    plan_free(p);
    return st;
}

/* The descriptor for epilogue epi (bias and scales attached). */
static precis_status make_desc(f8_state *s, cublasLtEpilogue_t epi, pr_err *e) {
    precis_status st = PRECIS_OK;
    if (s->desc) cublasLtMatmulDescDestroy(s->desc);
    s->desc = NULL;
    s->epi = epi;
    LT_TRY(cublasLtMatmulDescCreate(&s->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    cublasLtMatmulDesc_t d = s->desc;
    LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
    /* each scale 16-byte aligned (cuBLASLt's FP8 kernels answer NOT_SUPPORTED at run time,
     * not in the heuristic, for scale pointers 4 bytes apart) */
    const float *sa = s->scales, *sb = s->scales + 4, *sd = s->scales + 8;
    LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
    if (f8(s->ydt))
        LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd,
                                              sizeof sd));
    LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (s->bias) {
        int32_t bt = (int32_t)s->bct;
        LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s->bias,
                                              sizeof s->bias));
        LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                              sizeof bt));
    }
    /* fast accumulation on by default (PRECIS_CUDA_FP8_FAST_ACCUM=0: off): BERT-base b64 fp8
     * 3.30 -> 3.06 ms, cosine vs torch fp32 0.99735 / 0.99669 (last_hidden_state / pooler;
     * 0.99735 / 0.99621 without it in phase 5), MiniLM 0.99971 / 0.99896 (phase 11t) */
    const char *fa = getenv("PRECIS_CUDA_FP8_FAST_ACCUM");
    int8_t fast = !(fa && !strcmp(fa, "0"));
    LT_TRY(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    return PRECIS_OK;
fail:
    return st;
}

/* Does cuBLASLt have an algorithm for the current descriptor (M = 512)? */
static bool probe(f8_state *s, pr_cuda_exec *x) {
    f8_plan p;
    memset(&p, 0, sizeof p);
    pr_err e = {0};
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t h;
    int nres = 0;
    uint64_t wsb = x->ws_bytes;
    bool ok = make_layouts(s, 512, &p, &e) == PRECIS_OK &&
              cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &wsb, sizeof wsb) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)x->lt, s->desc, p.la, p.lb,
                                             p.lc ? p.lc : p.ld, p.ld, pref, 1, &h,
                                             &nres) == CUBLAS_STATUS_SUCCESS &&
              nres > 0;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    plan_free(&p);
    return ok;
}

static cublasLtEpilogue_t epilogue_for(int act, bool bias) {
    if (act == PR_ACT_RELU) return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    if (act == PR_ACT_GELU || act == PR_ACT_GELU_TANH)
        return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

static precis_status f8_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                void **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    f8_state *s = calloc(1, sizeof *s);
    unsigned char *wp = NULL;
    float *bf = NULL;
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->mu_ok = pthread_mutex_init(&s->mu, NULL) == 0;
    if (!s->mu_ok) {
        free(s);
        return pr_errf(e, PRECIS_ERR_INTERNAL, "pthread_mutex_init failed");
    }
    s->tc = cfg->tcache;
    cudaStream_t str = (cudaStream_t)cfg->x->stream;
    const pr_tensor *W = &g->tensors[n->inputs[1]];
    bool tb = pr_attr_int(n, "transB", 0) != 0;
    s->K = tb ? W->dims[1] : W->dims[0];
    s->N = tb ? W->dims[0] : W->dims[1];
    s->ydt = g->tensors[n->outputs[0]].dtype;
    s->yct = s->ydt == PRECIS_FLOAT16    ? CUDA_R_16F
             : s->ydt == PRECIS_BFLOAT16 ? CUDA_R_16BF
             : s->ydt == PRECIS_FLOAT32  ? CUDA_R_32F
                                         : CUDA_R_8F_E4M3;
    s->cct = s->ydt == PRECIS_BFLOAT16 ? CUDA_R_16BF
             : s->ydt == PRECIS_FLOAT32 ? CUDA_R_32F
                                        : CUDA_R_16F;
    s->bct = s->cct == CUDA_R_32F ? CUDA_R_16BF : s->cct;
    s->alpha = pr_attr_float(n, "alpha", 1.0f);
    s->has_z = pr_node_in(n, 4) >= 0;
    /* W as e4m3 [N][K] */
    const unsigned char *w = W->data;
    if (!(wp = malloc((size_t)(s->N * s->K))) || !w) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    for (int64_t o = 0; o < s->N; o++)
        for (int64_t k = 0; k < s->K; k++) wp[o * s->K + k] = tb ? w[o * s->K + k] : w[k * s->N + o];
    if ((st = pr_cu_upload(wp, (size_t)(s->N * s->K), &s->w, str, e))) goto fail;
    int64_t nws;
    float *wsc = pr_cu_init_f32(g, n->inputs[2], &nws);
    if (!wsc) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    float sc[12] = {wsc[0], 0, 0, 0, pr_attr_float(n, "a_scale", 1.0f), 0, 0, 0,
                    1.0f / pr_attr_float(n, "y_scale", 1.0f), 0, 0, 0};
    free(wsc);
    if ((st = pr_cu_upload(sc, sizeof sc, (void **)&s->scales, str, e))) goto fail;
    int b = pr_node_in(n, 3);
    if (b >= 0) {
        int64_t nb;
        if (!(bf = pr_cu_init_f32(g, b, &nb))) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        if ((st = pr_cu_upload_as(bf, s->N, s->bct == CUDA_R_16BF ? PRECIS_BFLOAT16 : PRECIS_FLOAT16,
                                  &s->bias, str, e)))
            goto fail;
    }
    pr_cu_act a1 = pr_cu_act_of(n, "act"), a2 = pr_cu_act_of(n, "act2");
    pr_cu_act act = s->has_z ? a2 : a1, none = {0, 0, 0};
    s->own_act = none;
    if ((st = make_desc(s, epilogue_for(act.kind, s->bias != NULL), e))) goto fail;
    if (!probe(s, cfg->x)) {
        /* no algorithm with the activation in the epilogue: our kernel runs it */
        if (act.kind == PR_ACT_NONE || f8(s->ydt)) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                         "node '%s': cuBLASLt has no FP8 GEMM algorithm for n=%lld k=%lld -> %s",
                         n->name, (long long)s->N, (long long)s->K, pr_dtype_name(s->ydt));
            goto fail;
        }
        s->own_act = act;
        if ((st = make_desc(s, epilogue_for(PR_ACT_NONE, s->bias != NULL), e))) goto fail;
        if (!probe(s, cfg->x)) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                         "node '%s': cuBLASLt has no FP8 GEMM algorithm for n=%lld k=%lld",
                         n->name, (long long)s->N, (long long)s->K);
            goto fail;
        }
    }
    int lt_kind = s->own_act.kind ? PR_ACT_NONE : act.kind;
    snprintf(s->what, sizeof s->what,
             "cublasLt fp8 e4m3 tc (per-tensor scales)%s%s%s%s%s -> %s%s%s",
             s->bias ? " +bias" : "", lt_kind ? " +" : "", lt_kind ? pr_act_names[lt_kind] : "",
             lt_kind == PR_ACT_GELU ? "(tanh form)" : "", s->has_z ? " +residual(C)" : "",
             pr_dtype_name(s->ydt), f8(s->ydt) ? " (D scale)" : "",
             s->own_act.kind ? ", epilogue kernel (act)" : "");
    free(wp);
    free(bf);
    *out = s;
    return PRECIS_OK;
fail:
    free(wp);
    free(bf);
    f8_destroy(s);
    return st;
}

static const char *f8_describe(void *p) { return ((f8_state *)p)->what; }

typedef struct f8_args {
    const void *a, *c;
    void *d;
    float beta;
} f8_args;

/* An fp8 D has a 16-bit C layout: C must not be D then (cuBLASLt takes C == D
 * only with one descriptor for both); beta is 0 there, so C is never read and
 * the weights stand in for it. */
static cublasStatus_t call(const f8_state *s, pr_cuda_exec *x, const f8_plan *p,
                           const cublasLtMatmulAlgo_t *algo, const f8_args *g) {
    const void *c = p->lc ? s->w : g->c;
    return cublasLtMatmul((cublasLtHandle_t)x->lt, s->desc, &s->alpha, s->w, p->la, g->a, p->lb,
                          &g->beta, c, p->lc ? p->lc : p->ld, g->d, p->ld, algo, x->ws,
                          x->ws_bytes, (cudaStream_t)x->stream);
}

typedef struct f8_launch {
    const f8_state *s;
    pr_cuda_exec *x;
    const f8_plan *p;
    const f8_args *g;
} f8_launch;

static bool launch_algo(void *v, const cublasLtMatmulAlgo_t *algo) {
    const f8_launch *l = v;
    return call(l->s, l->x, l->p, algo, l->g) == CUBLAS_STATUS_SUCCESS;
}

/* The plan for M (s->mu held): made on first use, the fastest candidate. */
static precis_status get_plan(f8_state *s, pr_cuda_exec *x, int64_t M, const f8_args *g,
                              f8_plan *out, pr_err *e) {
    precis_status st = PRECIS_OK;
    for (int i = 0; i < s->n_plans; i++)
        if (s->plans[i].m == M) {
            *out = s->plans[i];
            return PRECIS_OK;
        }
    if (x->capturing)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "cuBLASLt fp8: new shape during a graph capture");
    f8_plan np;
    memset(&np, 0, sizeof np);
    if ((st = make_layouts(s, M, &np, e))) return st;
    char key[160];
    snprintf(key, sizeof key, "cublaslt.fp8 y=%d epi=%d bias=%d c=%d m=%lld n=%lld k=%lld",
             (int)s->ydt, (int)s->epi, s->bias != NULL, (int)s->has_z, (long long)M,
             (long long)s->N, (long long)s->K);
    cublasLtMatmulHeuristicResult_t chk;
    if (pr_cuda_tcache_get(s->tc, key, &np.algo, sizeof np.algo) &&
        cublasLtMatmulAlgoCheck((cublasLtHandle_t)x->lt, s->desc, np.la, np.lb,
                                np.lc ? np.lc : np.ld, np.ld, &np.algo,
                                &chk) == CUBLAS_STATUS_SUCCESS &&
        chk.workspaceSize <= x->ws_bytes)
        goto store; /* an earlier build's choice */
    f8_launch fl = {s, x, &np, g};
    pr_lt_problem pb = {(cublasLtHandle_t)x->lt, s->desc, np.la, np.lb, np.lc ? np.lc : np.ld,
                        np.ld, M, s->N, s->K, x->ws_bytes, (cudaStream_t)x->stream, launch_algo,
                        &fl};
    pr_lt_choice ch;
    if ((st = pr_cu_lt_choose(&pb, true, &ch, e))) goto fail;
    np.algo = ch.algo;
    if (!s->timed_note && ch.ms >= 0) {
        char al[64];
        pr_cu_lt_algo_str(&ch.algo, al, sizeof al);
        size_t l = strlen(s->what);
        snprintf(s->what + l, sizeof s->what - l,
                 " [timed m=%lld: %s %.4f ms, best of %d; heuristic's first %.4f ms]",
                 (long long)M, al, ch.ms, ch.n_cand, ch.ms_first);
        s->timed_note = true;
    }
    pr_cuda_tcache_put(s->tc, key, &np.algo, sizeof np.algo);
store:
    if (s->n_plans == F8_SHAPES) { /* full: recycle the oldest */
        plan_free(&s->plans[0]);
        memmove(&s->plans[0], &s->plans[1], (F8_SHAPES - 1) * sizeof s->plans[0]);
        s->n_plans--;
    }
    s->plans[s->n_plans++] = np;
    *out = np;
    return PRECIS_OK;
fail:
    plan_free(&np);
    return st;
}

static precis_status f8_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    f8_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *A = k->in[0];
    pr_buf *Y = k->out[0];
    if (Y->numel == 0) return PRECIS_OK;
    if (A->dims[A->rank - 1] != s->K)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "K %lld, weights for %lld",
                          (long long)A->dims[A->rank - 1], (long long)s->K);
    int64_t M = A->numel / s->K;
    const pr_buf *Z = s->has_z ? pr_kin(k, 4) : NULL;
    f8_args ga = {A->data, Z ? Z->data : Y->data, Y->data, Z ? 1.0f : 0.0f};
    f8_plan plan;
    pthread_mutex_lock(&s->mu);
    st = get_plan(s, x, M, &ga, &plan, e);
    pthread_mutex_unlock(&s->mu);
    if (st) goto fail;
    cublasStatus_t r = call(s, x, &plan, &plan.algo, &ga);
    if (r != CUBLAS_STATUS_SUCCESS) {
        st = pr_lt_fail(e, r, "cublasLtMatmul (fp8)");
        goto fail;
    }
    if (s->own_act.kind) {
        pr_cu_act none = {0, 0, 0};
        KL_TRY(pr_cu_epilogue(x->stream, Y->data, (int)s->ydt, Y->numel, NULL, 0, 1, 1, s->own_act,
                              NULL, 0, none));
    }
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_fp8 = {
    .name = "cublaslt.fp8",
    .supports = f8_supports,
    .packs = f8_packs,
    .prepare = f8_prepare,
    .run = f8_run,
    .describe = f8_describe,
    .destroy = f8_destroy,
};
