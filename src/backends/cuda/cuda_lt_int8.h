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
    cublasLtMatmulDesc_t desc;
    pthread_mutex_t mu;
    bool mu_ok;
    pr_lt_i8_plan plans[PR_LT_I8_SHAPES];
    int n_plans;
} pr_lt_i8;

precis_status pr_lt_i8_init(pr_lt_i8 *l, int64_t N, int64_t K, void *tcache, pr_err *e);
void pr_lt_i8_fini(pr_lt_i8 *l);
/* d = a x w^T on x->stream (w: [N][K], a: [M][K] int8; d: [M][N] int32). */
precis_status pr_lt_i8_run(pr_lt_i8 *l, pr_cuda_exec *x, int64_t M, const void *w, const void *a,
                           int32_t *d, pr_err *e);

#endif
