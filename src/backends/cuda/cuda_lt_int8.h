/* One int8 GEMM shape family on cuBLASLt (IMMA Tensor Cores): D[M, N] int32
 * (row-major) = A[M, K] x W[N, K]^T, int8 operands with K contiguous, K a
 * multiple of 4 (cuda_qgemm.c's layout). Plans per M are made on first use:
 * the fastest of cuBLASLt's heuristic candidates timed on the call's own
 * buffers (or the timing cache's choice), cached under a lock. */
#ifndef PR_BACKENDS_CUDA_CUDA_LT_INT8_H
#define PR_BACKENDS_CUDA_CUDA_LT_INT8_H

#include <pthread.h>

#include "backends/cuda/cuda_util.h"

#define PR_LT_I8_SHAPES 16

typedef struct pr_lt_i8_plan {
    int64_t m;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} pr_lt_i8_plan;

typedef struct pr_lt_i8 {
    int64_t N, K;
    void *tc; /* timing cache (pr_cuda_tcache) or NULL */
    /* fused: D int8 = sat(round(act(alpha[n] * acc + beta * C + bias[n]))) in
     * cuBLASLt's epilogue (alpha a device vector of N floats, bias device
     * float32 [N] or NULL, act ReLU or none, C int8 [M, N] when has_c) */
    bool fused, has_c;
    const float *alpha;
    float beta;
    cublasLtMatmulDesc_t desc;
    pthread_mutex_t mu;
    bool mu_ok;
    pr_lt_i8_plan plans[PR_LT_I8_SHAPES];
    int n_plans;
} pr_lt_i8;

precis_status pr_lt_i8_init(pr_lt_i8 *l, int64_t N, int64_t K, void *tcache, pr_err *e);
/* The fused form (see pr_lt_i8.fused); alpha and bias stay owned by the caller. */
precis_status pr_lt_i8_init_fused(pr_lt_i8 *l, int64_t N, int64_t K, void *tcache,
                                  const float *alpha, const float *bias, bool relu, bool has_c,
                                  float beta, pr_err *e);
void pr_lt_i8_fini(pr_lt_i8 *l);
/* Does cuBLASLt have an algorithm for l (asked for M = 512)? */
bool pr_lt_i8_probe(pr_lt_i8 *l, pr_cuda_exec *x);
/* d = a x w^T on x->stream (w: [N][K], a: [M][K] int8; d: [M][N] int32, or
 * int8 through the fused epilogue, c its int8 residual or NULL). */
precis_status pr_lt_i8_run(pr_lt_i8 *l, pr_cuda_exec *x, int64_t M, const void *w, const void *a,
                           const void *c, void *d, pr_err *e);

#endif
