/* cuBLASLt int8 GEMMs (see cuda_lt_int8.h). */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "backends/cuda/cuda_lt_int8.h"
#include "backends/cuda/cuda_tcache.h"

#define MAX_CAND 8

precis_status pr_lt_i8_init(pr_lt_i8 *l, int64_t N, int64_t K, void *tc, pr_err *e) {
    precis_status st = PRECIS_OK;
    memset(l, 0, sizeof *l);
    l->tc = tc;
    l->N = N;
    l->K = K;
    l->mu_ok = pthread_mutex_init(&l->mu, NULL) == 0;
    if (!l->mu_ok) return pr_errf(e, PRECIS_ERR_INTERNAL, "pthread_mutex_init failed");
    LT_TRY(cublasLtMatmulDescCreate(&l->desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
    return PRECIS_OK;
fail:
    return st;
}

precis_status pr_lt_i8_init_fused(pr_lt_i8 *l, int64_t N, int64_t K, void *tc,
                                  const float *alpha, const float *bias, bool relu, bool has_c,
                                  float beta, pr_err *e) {
    precis_status st = PRECIS_OK;
    memset(l, 0, sizeof *l);
    l->N = N;
    l->K = K;
    l->tc = tc;
    l->fused = true;
    l->has_c = has_c;
    l->alpha = alpha;
    l->beta = has_c ? beta : 0.0f;
    l->mu_ok = pthread_mutex_init(&l->mu, NULL) == 0;
    if (!l->mu_ok) return pr_errf(e, PRECIS_ERR_INTERNAL, "pthread_mutex_init failed");
    LT_TRY(cublasLtMatmulDescCreate(&l->desc, CUBLAS_COMPUTE_32I, CUDA_R_32F));
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
    /* BETA_HOST with beta 0 also without C: cuBLASLt offers no int8-out algorithm
     * for BETA_ZERO here (measured on an H100, cuBLASLt 13.0) */
    cublasLtPointerMode_t pm = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
    LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm,
                                          sizeof pm));
    cublasLtEpilogue_t epi = relu ? (bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU)
                                  : (bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                          sizeof epi));
    if (bias) {
        int32_t bt = CUDA_R_32F;
        LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof bias));
        LT_TRY(cublasLtMatmulDescSetAttribute(l->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                              sizeof bt));
    }
    return PRECIS_OK;
fail:
    return st;
}

static void plan_free(pr_lt_i8_plan *p) {
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
}

void pr_lt_i8_fini(pr_lt_i8 *l) {
    for (int i = 0; i < l->n_plans; i++) plan_free(&l->plans[i]);
    l->n_plans = 0;
    if (l->desc) cublasLtMatmulDescDestroy(l->desc);
    l->desc = NULL;
    if (l->mu_ok) pthread_mutex_destroy(&l->mu);
    l->mu_ok = false;
}

static cublasStatus_t call(const pr_lt_i8 *l, pr_cuda_exec *x, const pr_lt_i8_plan *p,
                           const cublasLtMatmulAlgo_t *algo, const void *w, const void *a,
                           const void *c, void *d) {
    int32_t one = 1, zero = 0;
    if (l->fused)
        return cublasLtMatmul((cublasLtHandle_t)x->lt, l->desc, l->alpha, w, p->la, a, p->lb,
                              &l->beta, c ? c : d, p->lc, d, p->lc, algo, x->ws, x->ws_bytes,
                              (cudaStream_t)x->stream);
    return cublasLtMatmul((cublasLtHandle_t)x->lt, l->desc, &one, w, p->la, a, p->lb, &zero, d,
                          p->lc, d, p->lc, algo, x->ws, x->ws_bytes, (cudaStream_t)x->stream);
}

typedef struct i8_launch {
    const pr_lt_i8 *l;
    pr_cuda_exec *x;
    const pr_lt_i8_plan *p;
    const cublasLtMatmulAlgo_t *algo;
    const void *w, *a, *c;
    void *d;
} i8_launch;

static bool launch_algo(void *v) {
    const i8_launch *k = v;
    return call(k->l, k->x, k->p, k->algo, k->w, k->a, k->c, k->d) == CUBLAS_STATUS_SUCCESS;
}

/* Median of 3 timed calls in ms, < 0 on failure. */
static float time_algo(const pr_lt_i8 *l, pr_cuda_exec *x, const pr_lt_i8_plan *p,
                       const cublasLtMatmulAlgo_t *algo, const void *w, const void *a,
                       const void *c, void *d) {
    i8_launch k = {l, x, p, algo, w, a, c, d};
    return pr_cu_time3((cudaStream_t)x->stream, launch_algo, &k);
}

static precis_status make_plan(pr_lt_i8 *l, pr_cuda_exec *x, int64_t M, const void *w,
                               const void *a, const void *c, void *d, pr_lt_i8_plan *np,
                               pr_err *e) {
    precis_status st = PRECIS_OK;
    cublasLtMatmulPreference_t pref = NULL;
    memset(np, 0, sizeof *np);
    np->m = M;
    LT_TRY(cublasLtMatrixLayoutCreate(&np->la, CUDA_R_8I, (uint64_t)l->K, (uint64_t)l->N, l->K));
    LT_TRY(cublasLtMatrixLayoutCreate(&np->lb, CUDA_R_8I, (uint64_t)l->K, (uint64_t)M, l->K));
    LT_TRY(cublasLtMatrixLayoutCreate(&np->lc, l->fused ? CUDA_R_8I : CUDA_R_32I, (uint64_t)l->N,
                                      (uint64_t)M, l->N));
    char key[128];
    snprintf(key, sizeof key, "cublaslt.int8%s m=%lld n=%lld k=%lld",
             l->fused ? (l->has_c ? " fused+c" : " fused") : "", (long long)M, (long long)l->N,
             (long long)l->K);
    cublasLtMatmulHeuristicResult_t chk;
    if (pr_cuda_tcache_get(l->tc, key, &np->algo, sizeof np->algo) &&
        cublasLtMatmulAlgoCheck((cublasLtHandle_t)x->lt, l->desc, np->la, np->lb, np->lc, np->lc,
                                &np->algo, &chk) == CUBLAS_STATUS_SUCCESS &&
        chk.workspaceSize <= x->ws_bytes)
        return PRECIS_OK; /* an earlier build's choice */
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = x->ws_bytes;
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t h[MAX_CAND];
    int nres = 0;
    LT_TRY(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)x->lt, l->desc, np->la, np->lb,
                                          np->lc, np->lc, pref, MAX_CAND, h, &nres));
    if (nres < 1) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                     "cuBLASLt has no int8 algorithm for m=%lld n=%lld k=%lld", (long long)M,
                     (long long)l->N, (long long)l->K);
        goto fail;
    }
    np->algo = h[0].algo;
    float best = -1;
    for (int i = 0; nres > 1 && i < nres; i++) {
        if (h[i].state != CUBLAS_STATUS_SUCCESS) continue;
        float t = time_algo(l, x, np, &h[i].algo, w, a, c, d);
        if (t >= 0 && (best < 0 || t < best)) {
            best = t;
            np->algo = h[i].algo;
        }
    }
    cublasLtMatmulPreferenceDestroy(pref);
    pr_cuda_tcache_put(l->tc, key, &np->algo, sizeof np->algo);
    return PRECIS_OK;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    plan_free(np);
    return st;
}

precis_status pr_lt_i8_run(pr_lt_i8 *l, pr_cuda_exec *x, int64_t M, const void *w, const void *a,
                           const void *c, void *d, pr_err *e) {
    precis_status st = PRECIS_OK;
    pr_lt_i8_plan plan;
    bool found = false;
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n_plans && !found; i++)
        if (l->plans[i].m == M) {
            plan = l->plans[i];
            found = true;
        }
    if (!found && x->capturing)
        st = pr_errf(e, PRECIS_ERR_INTERNAL, "cuBLASLt int8: new shape during a graph capture");
    if (!found && !st && !(st = make_plan(l, x, M, w, a, c, d, &plan, e))) {
        if (l->n_plans == PR_LT_I8_SHAPES) { /* full: recycle the oldest */
            plan_free(&l->plans[0]);
            memmove(&l->plans[0], &l->plans[1], (PR_LT_I8_SHAPES - 1) * sizeof l->plans[0]);
            l->n_plans--;
        }
        l->plans[l->n_plans++] = plan;
    }
    pthread_mutex_unlock(&l->mu);
    if (st) return st;
    cublasStatus_t r = call(l, x, &plan, &plan.algo, w, a, c, d);
    if (r != CUBLAS_STATUS_SUCCESS) return pr_lt_fail(e, r, "cublasLtMatmul (int8)");
    return PRECIS_OK;
}

bool pr_lt_i8_probe(pr_lt_i8 *l, pr_cuda_exec *x) {
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t h;
    int nres = 0;
    uint64_t M = 512, wsb = x->ws_bytes;
    bool ok = cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, (uint64_t)l->K, (uint64_t)l->N, l->K) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, (uint64_t)l->K, M, l->K) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatrixLayoutCreate(&lc, l->fused ? CUDA_R_8I : CUDA_R_32I, (uint64_t)l->N,
                                         M, l->N) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &wsb, sizeof wsb) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)x->lt, l->desc, la, lb, lc, lc,
                                             pref, 1, &h, &nres) == CUBLAS_STATUS_SUCCESS &&
              nres > 0;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    return ok;
}
