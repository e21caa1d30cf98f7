/* MatMul, Gemm and FusedMatMul through cuBLASLt: float32 (exact fp32 FMA,
 * no TF32), float16 and bfloat16 on Tensor Cores with float32
 * accumulation. Weights (an initializer B) are converted to the activation
 * type and uploaded once; bias, ReLU and tanh-GELU run in cuBLASLt's
 * epilogue, a residual Z with no activation before it as the C operand
 * (D = act(alpha A B + C + bias)); whatever of act(...) + Z -> act2 is left
 * runs in one pass of our epilogue kernel. Row-major Y = A' B' is computed as
 * the column-major Y^T = B'^T A'^T. The algorithm per shape is the fastest of
 * cuBLASLt's top proposals (pr_cu_lt_choose; cached under a lock, kept in the
 * timing cache), chosen at prepare when the shapes are static. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_tcache.h"

#define MAX_SHAPES 16

typedef struct shape_plan {
    int64_t m, batch, sa, sb; /* key: rows, batch count, batch strides of A and B */
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} shape_plan;

typedef struct gemm_state {
    pr_dtype dt;
    cudaDataType_t cdt;
    bool trans_a, trans_b, b_packed, use_c;
    int64_t K, N; /* when B is packed */
    float alpha;
    void *w, *bias; /* device, dt */
    cublasLtMatmulDesc_t desc;
    cublasLtEpilogue_t epi;
    bool own;           /* our epilogue kernel after the matmul */
    pr_cu_act pre, post;
    bool own_z;         /* it adds Z */
    int z_input;        /* input index of Z, or -1 */
    void *tc; /* timing cache (pr_cuda_tcache) or NULL */
    pthread_mutex_t mu;
    shape_plan plans[MAX_SHAPES];
    int n_plans;
    bool timed_note; /* what[] names the first shape's choice */
    char what[320];
} gemm_state;

static cudaDataType_t cuda_dt(pr_dtype dt) {
    return dt == PRECIS_FLOAT16 ? CUDA_R_16F : dt == PRECIS_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* Can cuBLASLt's epilogue apply act kind to a dt output? Its GELU is the
 * tanh form; for fp16/bf16 outputs it also stands for erf-GELU (|difference|
 * <= 5e-4 absolute, |x| ~ 2: about an fp16 ulp of the output there; one
 * pass over the output less) unless PRECIS_CUDA_GELU_EXACT=1. */
static bool lt_act(int kind, pr_dtype dt) {
    static int exact = -1;
    if (exact < 0) {
        const char *v = getenv("PRECIS_CUDA_GELU_EXACT");
        exact = v && !strcmp(v, "1");
    }
    if (kind == PR_ACT_GELU) return !exact && (dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16);
    return kind == PR_ACT_NONE || kind == PR_ACT_RELU || kind == PR_ACT_GELU_TANH;
}

static bool gemm_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_MatMul && n->op != PR_OP_Gemm && n->op != PR_OP_FusedMatMul) return false;
    if (n->n_inputs < 2 || n->n_outputs < 1) return false;
    int a = n->inputs[0], b = n->inputs[1], y = n->outputs[0];
    if (a < 0 || b < 0 || y < 0) return false;
    pr_dtype dt = pr_cu_tdt(g, y);
    if (!pr_cu_float(dt) || pr_cu_tdt(g, a) != dt || pr_cu_is_init(g, a)) return false;
    const pr_tensor *A = &g->tensors[a], *B = &g->tensors[b];
    if (A->rank < 2 || B->rank < 2) return false;
    bool binit = pr_cu_is_init(g, b);
    if (binit ? (!pr_cu_float(B->dtype) || B->rank != 2) : B->dtype != dt) return false;
    if (n->op == PR_OP_Gemm) {
        if (A->rank != 2 || B->rank != 2) return false;
        int c = pr_node_in(n, 2);
        if (c >= 0) {
            if (!binit || !pr_cu_is_init(g, c)) return false;
            int64_t N = pr_attr_int(n, "transB", 0) ? B->dims[0] : B->dims[1];
            int64_t cn = pr_numel(g->tensors[c].rank, g->tensors[c].dims);
            if (!(cn == 1 || (cn == N && g->tensors[c].dims[g->tensors[c].rank - 1] == N)))
                return false;
        }
        return true;
    }
    if (n->op == PR_OP_FusedMatMul) {
        if (pr_attr_int(n, "transA", 0) && A->rank != 2) return false;
        if (pr_attr_int(n, "transB", 0) && B->rank != 2) return false;
        pr_act x;
        if (!pr_act_from_node(n, "act", &x) || !pr_act_from_node(n, "act2", &x)) return false;
        int bias = pr_node_in(n, 2), z = pr_node_in(n, 3);
        if (bias >= 0) {
            if (!binit || !pr_cu_is_init(g, bias)) return false;
            int64_t N = pr_attr_int(n, "transB", 0) ? B->dims[0] : B->dims[1];
            const pr_tensor *T = &g->tensors[bias];
            if (pr_numel(T->rank, T->dims) != N || T->dims[T->rank - 1] != N) return false;
        }
        if (z >= 0 && (pr_cu_tdt(g, z) != dt || pr_cu_is_init(g, z))) return false;
    }
    return true;
}

static bool gemm_packs(const pr_graph *g, const pr_node *n, int i) {
    return (i == 1 && pr_cu_is_init(g, n->inputs[1])) || i == 2;
}

static void gemm_destroy(void *p) {
    gemm_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->n_plans; i++) {
        cublasLtMatrixLayoutDestroy(s->plans[i].la);
        cublasLtMatrixLayoutDestroy(s->plans[i].lb);
        cublasLtMatrixLayoutDestroy(s->plans[i].lc);
    }
    if (s->desc) cublasLtMatmulDescDestroy(s->desc);
    if (s->w) cudaFree(s->w);
    if (s->bias) cudaFree(s->bias);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static const char *act_name(int k) { return k ? pr_act_names[k] : ""; }

static precis_status gemm_run(void *p, pr_kernel *k, pr_cuda_exec *x);

static precis_status gemm_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                  void **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    gemm_state *s = calloc(1, sizeof *s);
    float *wf = NULL, *bf = NULL;
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    s->tc = cfg->tcache;
    cudaStream_t stream = (cudaStream_t)cfg->x->stream;
    s->dt = g->tensors[n->outputs[0]].dtype;
    s->cdt = cuda_dt(s->dt);
    s->trans_a = pr_attr_int(n, "transA", 0) != 0;
    s->trans_b = pr_attr_int(n, "transB", 0) != 0;
    s->alpha = n->op == PR_OP_MatMul ? 1.0f : pr_attr_float(n, "alpha", 1.0f);
    s->z_input = -1;
    int b = n->inputs[1];
    pr_cu_act a1 = {0, 0, 0}, a2 = {0, 0, 0};
    if (n->op == PR_OP_FusedMatMul) {
        a1 = pr_cu_act_of(n, "act");
        a2 = pr_cu_act_of(n, "act2");
        if (pr_node_in(n, 3) >= 0) s->z_input = 3;
    }
    if (pr_cu_is_init(g, b)) {
        int64_t nw;
        const pr_tensor *B = &g->tensors[b];
        s->K = s->trans_b ? B->dims[1] : B->dims[0];
        s->N = s->trans_b ? B->dims[0] : B->dims[1];
        if (!(wf = pr_cu_init_f32(g, b, &nw))) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        if ((st = pr_cu_upload_as(wf, nw, s->dt, &s->w, stream, e))) goto fail;
        s->b_packed = true;
        int c = pr_node_in(n, 2);
        if (c >= 0) { /* FusedMatMul bias, or Gemm's C times beta as a bias row */
            int64_t nb;
            float beta = n->op == PR_OP_Gemm ? pr_attr_float(n, "beta", 1.0f) : 1.0f;
            float *cf = pr_cu_init_f32(g, c, &nb);
            bf = malloc((size_t)s->N * sizeof *bf);
            if (!cf || !bf) {
                free(cf);
                st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
                goto fail;
            }
            for (int64_t j = 0; j < s->N; j++) bf[j] = beta * cf[nb == 1 ? 0 : j];
            free(cf);
            if ((st = pr_cu_upload_as(bf, s->N, s->dt, &s->bias, stream, e))) goto fail;
        }
    }
    /* epilogue split between cuBLASLt and our kernel */
    pr_cu_act none = {0, 0, 0}, lt = none;
    s->pre = s->post = none;
    if (s->z_input < 0) {
        if (lt_act(a1.kind, s->dt)) {
            lt = a1;
            s->post = a2;
        } else {
            s->pre = a1;
            s->post = a2;
        }
    } else if (a1.kind == PR_ACT_NONE) {
        s->use_c = true;
        if (lt_act(a2.kind, s->dt)) lt = a2;
        else s->post = a2;
    } else {
        if (lt_act(a1.kind, s->dt)) lt = a1;
        else s->pre = a1;
        s->own_z = true;
        s->post = a2;
    }
    s->own = s->pre.kind || s->post.kind || s->own_z;
    s->epi = lt.kind == PR_ACT_RELU ? (s->bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
             : lt.kind == PR_ACT_GELU_TANH || lt.kind == PR_ACT_GELU
                 ? (s->bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                 : (s->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    LT_TRY(cublasLtMatmulDescCreate(&s->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    /* column-major: "A" is our B, "B" is our A */
    cublasOperation_t opa = s->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = s->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    LT_TRY(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    LT_TRY(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &s->epi,
                                          sizeof s->epi));
    if (s->bias)
        LT_TRY(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s->bias,
                                              sizeof s->bias));
    {
        const char *tn = s->dt == PRECIS_FLOAT16 ? "fp16 tc" : s->dt == PRECIS_BFLOAT16 ? "bf16 tc" : "fp32";
        char ep[96] = "";
        size_t p = 0;
        if (s->bias) p += (size_t)snprintf(ep + p, sizeof ep - p, "+bias");
        if (lt.kind) p += (size_t)snprintf(ep + p, sizeof ep - p, "+%s", act_name(lt.kind));
        if (lt.kind == PR_ACT_GELU) p += (size_t)snprintf(ep + p, sizeof ep - p, "(tanh form)");
        if (s->use_c) p += (size_t)snprintf(ep + p, sizeof ep - p, "+residual(C)");
        char own[96] = "";
        if (s->own)
            snprintf(own, sizeof own, ", epilogue kernel (%s%s%s%s%s)", act_name(s->pre.kind),
                     s->pre.kind && s->own_z ? " " : "", s->own_z ? "+residual" : "",
                     s->post.kind && (s->pre.kind || s->own_z) ? " then " : "",
                     act_name(s->post.kind));
        snprintf(s->what, sizeof s->what, "cublasLt %s%s%s%s", tn, p ? " " : "", ep + (p ? 1 : 0),
                 own);
    }
    /* static shapes: choose the algorithm now, so that inspect names it */
    unsigned skip = (s->b_packed ? 2u : 0u) | 4u | (s->z_input == 3 ? 0u : 8u);
    if ((st = pr_cu_run_static(g, n, cfg->x, gemm_run, s, skip, e))) goto fail;
    free(wf);
    free(bf);
    *out = s;
    return PRECIS_OK;
fail:
    free(wf);
    free(bf);
    gemm_destroy(s);
    return st;
}

static const char *gemm_describe(void *p) { return ((gemm_state *)p)->what; }

static precis_status make_layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows,
                                 int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                                 pr_err *e) {
    precis_status st = PRECIS_OK;
    LT_TRY(cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld));
    if (batch > 1) {
        int32_t bc = (int32_t)batch;
        LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc,
                                                sizeof bc));
        LT_TRY(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride));
    }
    return PRECIS_OK;
fail:
    return st;
}

/* The operands of one call, for timing the candidate algorithms. */
typedef struct gemm_args {
    const void *a, *b, *c;
    void *y;
    float alpha, beta;
} gemm_args;

typedef struct gemm_launch {
    gemm_state *s;
    pr_cuda_exec *x;
    const shape_plan *p;
    const gemm_args *g;
} gemm_launch;

static bool launch_algo(void *v, const cublasLtMatmulAlgo_t *algo) {
    const gemm_launch *l = v;
    const gemm_args *g = l->g;
    const shape_plan *p = l->p;
    return cublasLtMatmul((cublasLtHandle_t)l->x->lt, l->s->desc, &g->alpha, g->b, p->la, g->a,
                          p->lb, &g->beta, g->c, p->lc, g->y, p->lc, algo, l->x->ws,
                          l->x->ws_bytes, (cudaStream_t)l->x->stream) == CUBLAS_STATUS_SUCCESS;
}

/* The first timed choice's description for inspect (s->what). */
static void note_choice(gemm_state *s, int64_t m, int64_t K, int64_t N, const pr_lt_choice *c) {
    if (s->timed_note || c->ms < 0) return;
    s->timed_note = true;
    char al[64];
    pr_cu_lt_algo_str(&c->algo, al, sizeof al);
    size_t l = strlen(s->what);
    snprintf(s->what + l, sizeof s->what - l,
             " [timed m=%lld n=%lld k=%lld: %s %.4f ms, best of %d; heuristic's first %.4f ms]",
             (long long)m, (long long)N, (long long)K, al, c->ms, c->n_cand, c->ms_first);
}

/* The plan for (m, batch, sa, sb), made on first use: the fastest of the
 * heuristic's top proposals on this call's buffers (pr_cu_lt_choose; the first
 * proposal when there is nothing to time on). Called with s->mu held. */
static precis_status get_plan(gemm_state *s, pr_cuda_exec *x, int64_t m, int64_t K, int64_t N,
                              int64_t batch, int64_t sa, int64_t sb, const gemm_args *g,
                              shape_plan **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    for (int i = 0; i < s->n_plans; i++) {
        shape_plan *p = &s->plans[i];
        if (p->m == m && p->batch == batch && p->sa == sa && p->sb == sb) {
            *out = p;
            return PRECIS_OK;
        }
    }
    if (x->capturing)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "cuBLASLt: new shape during a graph capture");
    shape_plan np = {m, batch, sa, sb, NULL, NULL, NULL, {{0}}};
    /* our B (column-major "A"): N x K (ld N), or K x N (ld K) transposed */
    if ((st = make_layout(&np.la, s->cdt, s->trans_b ? K : N, s->trans_b ? N : K,
                          s->trans_b ? K : N, batch, sb, e)))
        goto fail;
    /* our A (column-major "B"): K x m (ld K), or m x K (ld m) transposed */
    if ((st = make_layout(&np.lb, s->cdt, s->trans_a ? m : K, s->trans_a ? K : m,
                          s->trans_a ? m : K, batch, sa, e)))
        goto fail;
    if ((st = make_layout(&np.lc, s->cdt, N, m, N, batch, N * m, e))) goto fail;
    char key[256];
    snprintf(key, sizeof key, "cublaslt dt=%d ta=%d tb=%d epi=%d bias=%d c=%d m=%lld k=%lld "
             "n=%lld batch=%lld sa=%lld sb=%lld", (int)s->dt, (int)s->trans_a, (int)s->trans_b,
             (int)s->epi, s->bias != NULL, (int)s->use_c, (long long)m, (long long)K, (long long)N,
             (long long)batch, (long long)sa, (long long)sb);
    cublasLtMatmulHeuristicResult_t chk;
    if (g && pr_cuda_tcache_get(s->tc, key, &np.algo, sizeof np.algo) &&
        cublasLtMatmulAlgoCheck((cublasLtHandle_t)x->lt, s->desc, np.la, np.lb, np.lc, np.lc,
                                &np.algo, &chk) == CUBLAS_STATUS_SUCCESS &&
        chk.workspaceSize <= x->ws_bytes) {
        if (!s->timed_note) {
            char al[64];
            pr_cu_lt_algo_str(&np.algo, al, sizeof al);
            size_t l = strlen(s->what);
            snprintf(s->what + l, sizeof s->what - l,
                     " [m=%lld n=%lld k=%lld: %s, a cached choice]", (long long)m, (long long)N,
                     (long long)K, al);
            s->timed_note = true;
        }
        goto store; /* an earlier build's choice */
    }
    gemm_launch gl = {s, x, &np, g};
    pr_lt_problem pb = {(cublasLtHandle_t)x->lt, s->desc, np.la, np.lb, np.lc, np.lc, m, N, K,
                        x->ws_bytes, (cudaStream_t)x->stream, launch_algo, &gl};
    pr_lt_choice ch;
    if ((st = pr_cu_lt_choose(&pb, g != NULL, &ch, e))) goto fail;
    np.algo = ch.algo;
    if (g) {
        note_choice(s, m, K, N, &ch);
        pr_cuda_tcache_put(s->tc, key, &np.algo, sizeof np.algo);
    }
store:
    if (s->n_plans == MAX_SHAPES) { /* full: recycle the oldest */
        cublasLtMatrixLayoutDestroy(s->plans[0].la);
        cublasLtMatrixLayoutDestroy(s->plans[0].lb);
        cublasLtMatrixLayoutDestroy(s->plans[0].lc);
        memmove(&s->plans[0], &s->plans[1], (MAX_SHAPES - 1) * sizeof s->plans[0]);
        s->n_plans--;
    }
    s->plans[s->n_plans] = np;
    *out = &s->plans[s->n_plans++];
    return PRECIS_OK;
fail:
    if (np.la) cublasLtMatrixLayoutDestroy(np.la);
    if (np.lb) cublasLtMatrixLayoutDestroy(np.lb);
    if (np.lc) cublasLtMatrixLayoutDestroy(np.lc);
    return st;
}

static int64_t prod(const int64_t *d, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

static precis_status gemm_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    gemm_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *A = k->in[0], *B = k->in[1];
    pr_buf *Y = k->out[0];
    int ra = A->rank, rb = B->rank, ry = Y->rank;
    int64_t K = s->trans_a ? A->dims[ra - 2] : A->dims[ra - 1];
    int64_t M = s->trans_a ? A->dims[ra - 1] : A->dims[ra - 2];
    int64_t N = s->b_packed ? s->N : (s->trans_b ? B->dims[rb - 2] : B->dims[rb - 1]);
    int64_t KB = s->b_packed ? s->K : (s->trans_b ? B->dims[rb - 1] : B->dims[rb - 2]);
    if (KB != K || Y->dims[ry - 1] != N)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "matmul shapes disagree (K %lld vs %lld)",
                          (long long)K, (long long)KB);
    if (Y->numel == 0) return PRECIS_OK;
    int64_t nbat = prod(Y->dims, ry - 2), abat = prod(A->dims, ra - 2);
    int64_t bbat = s->b_packed ? 1 : prod(B->dims, rb - 2);
    int64_t m = M, batch = 1, sa = 0, sb = 0;
    if (bbat == 1 && abat == nbat && !s->trans_a) {
        m = M * nbat; /* one GEMM over all rows of A */
    } else {
        batch = nbat;
        bool a_full = abat == nbat && ra - 2 <= ry - 2, b_full = bbat == nbat;
        if ((!a_full && abat != 1) || (!b_full && bbat != 1))
            return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED,
                              "cuBLASLt: batch dims broadcast partially (A %lld, B %lld, Y %lld)",
                              (long long)abat, (long long)bbat, (long long)nbat);
        /* equal counts with different shapes (e.g. [2,3] vs [3,2]) would be wrong */
        for (int d = 0; a_full && d < ra - 2; d++)
            if (A->dims[ra - 3 - d] != Y->dims[ry - 3 - d])
                return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "cuBLASLt: A's batch dims differ");
        for (int d = 0; b_full && bbat > 1 && d < rb - 2; d++)
            if (B->dims[rb - 3 - d] != Y->dims[ry - 3 - d])
                return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "cuBLASLt: B's batch dims differ");
        sa = abat == 1 ? 0 : M * K;
        sb = bbat == 1 ? 0 : K * N;
    }
    const void *zp = s->z_input >= 0 && s->z_input < k->n_in && k->in[s->z_input]
                         ? k->in[s->z_input]->data
                         : NULL;
    float alpha = s->alpha, beta = s->use_c && zp ? 1.0f : 0.0f;
    const void *cp = beta != 0.0f ? zp : Y->data;
    gemm_args ga = {A->data, s->b_packed ? s->w : B->data, cp, Y->data, alpha, beta};
    shape_plan *pl = NULL;
    pthread_mutex_lock(&s->mu);
    st = get_plan(s, x, m, K, N, batch, sa, sb, &ga, &pl, e);
    shape_plan plan = pl ? *pl : (shape_plan){0};
    pthread_mutex_unlock(&s->mu);
    if (st) return pr_err_prefix(e, "node '%s'", k->node->name);
    LT_TRY(cublasLtMatmul((cublasLtHandle_t)x->lt, s->desc, &alpha, s->b_packed ? s->w : B->data,
                          plan.la, A->data, plan.lb, &beta, cp, plan.lc, Y->data, plan.lc,
                          &plan.algo, x->ws, x->ws_bytes, (cudaStream_t)x->stream));
    if (s->own)
        KL_TRY(pr_cu_epilogue(x->stream, Y->data, (int)s->dt, Y->numel, NULL, 0, 1, 1, s->pre,
                              s->own_z ? zp : NULL, (int)s->dt, s->post));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_gemm = {
    .name = "cublaslt.gemm",
    .supports = gemm_supports,
    .packs = gemm_packs,
    .prepare = gemm_prepare,
    .run = gemm_run,
    .describe = gemm_describe,
    .destroy = gemm_destroy,
};
