/* Internal helpers of the CUDA backend's C files (they see the CUDA, cuBLASLt
 * and cuDNN headers; nothing outside src/backends/cuda includes this).
 *
 * Every CUDA / cuBLASLt / cuDNN call is checked: a failure becomes a
 * precis_status with a message naming the call and the library's error
 * string, e.g. "cudaMalloc: out of memory (cudaErrorMemoryAllocation)". */
#ifndef PR_BACKENDS_CUDA_CUDA_UTIL_H
#define PR_BACKENDS_CUDA_CUDA_UTIL_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "backends/cuda/cuda.h"
#include "backends/cuda/cu_kernels.h"
#include "ir/infer.h"

precis_status pr_cu_fail(pr_err *e, cudaError_t r, const char *call);
precis_status pr_lt_fail(pr_err *e, cublasStatus_t r, const char *call);
precis_status pr_dnn_fail(pr_err *e, cudnnStatus_t r, const char *call);

/* Inside a function with `precis_status st;`, `pr_err *e` and a `fail:`
 * label: check one call. */
#define CU_TRY(call)                                                                               \
    do {                                                                                           \
        cudaError_t r_ = (call);                                                                   \
        if (r_ != cudaSuccess) {                                                                   \
            st = pr_cu_fail(e, r_, #call);                                                         \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
#define LT_TRY(call)                                                                               \
    do {                                                                                           \
        cublasStatus_t r_ = (call);                                                                \
        if (r_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            st = pr_lt_fail(e, r_, #call);                                                         \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
#define DNN_TRY(call)                                                                              \
    do {                                                                                           \
        cudnnStatus_t r_ = (call);                                                                 \
        if (r_ != CUDNN_STATUS_SUCCESS) {                                                          \
            st = pr_dnn_fail(e, r_, #call);                                                        \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
/* A kernel launcher's result (cudaGetLastError after the launch). */
#define KL_TRY(launch) CU_TRY((cudaError_t)(launch))

/* Is dt one of the float activation types (float32, float16, bfloat16)? */
static inline bool pr_cu_float(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 || dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16;
}
/* Types our kernels load and store (float types, the integer types, bool). */
static inline bool pr_cu_ldst(pr_dtype dt) {
    switch (dt) {
    case PRECIS_FLOAT32: case PRECIS_FLOAT16: case PRECIS_BFLOAT16: case PRECIS_FLOAT64:
    case PRECIS_INT64: case PRECIS_INT32: case PRECIS_INT8: case PRECIS_UINT8: case PRECIS_BOOL:
    case PRECIS_FLOAT8E4M3FN:
        return true;
    default:
        return false;
    }
}

/* An integer tensor of rank <= 1 (shapes, indices of shape arithmetic):
 * such values stay on the host, where shape inference reads them. A 1-D
 * tensor of a known length over 2 * PR_MAX_RANK is data, not a shape (a shape
 * or a Pad's pads has at most that many values): BERT's flattened [S] bool
 * mask was taken for one, so its Reshape ran on the host and the plan was
 * never captured as a CUDA graph. */
static inline bool pr_cu_shape_like(const pr_graph *g, int t) {
    if (t < 0) return false;
    const pr_tensor *x = &g->tensors[t];
    pr_dtype dt = x->dtype;
    bool integer = dt == PRECIS_INT64 || dt == PRECIS_INT32 || dt == PRECIS_BOOL ||
                   dt == PRECIS_INT8 || dt == PRECIS_UINT8;
    if (x->rank == 1 && pr_dim_known(x->dims[0]) && x->dims[0] > 2 * PR_MAX_RANK) return false;
    return integer && x->rank <= 1;
}

/* Tensor t's dtype, or UNDEFINED for t < 0. */
static inline pr_dtype pr_cu_tdt(const pr_graph *g, int t) {
    return t >= 0 ? g->tensors[t].dtype : PRECIS_UNDEFINED;
}
static inline bool pr_cu_is_init(const pr_graph *g, int t) {
    return t >= 0 && (g->tensors[t].flags & PR_T_INIT);
}

/* Upload n float32 values converted to dt (float32/float16/bfloat16) into a
 * new device buffer (*out, cudaFree). */
precis_status pr_cu_upload_as(const float *src, int64_t n, pr_dtype dt, void **out,
                              cudaStream_t s, pr_err *e);
/* cudaMalloc'd *d holding the `bytes` bytes at h (copied on stream s, synchronized). */
precis_status pr_cu_upload(const void *h, size_t bytes, void **d, cudaStream_t s, pr_err *e);
/* Median of 3 timed calls of launch(ctx) on stream s after one untimed (ms), for choosing
 * between kernels or algorithms; < 0 when a launch (it returns false) or an event failed.
 * Clears the CUDA error state afterwards. */
float pr_cu_time3(cudaStream_t s, bool (*launch)(void *ctx), void *ctx);
/* One cuBLASLt matmul whose algorithm is to be chosen: descriptors, sizes (for
 * messages and the split-K depth), the workspace bound, and a launcher running
 * the call with a given algorithm on the caller's buffers (true on success). */
typedef struct pr_lt_problem {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    int64_t m, n, k;
    size_t ws_bytes;
    cudaStream_t stream;
    bool (*launch)(void *ctx, const cublasLtMatmulAlgo_t *algo);
    void *ctx;
} pr_lt_problem;
typedef struct pr_lt_choice {
    cublasLtMatmulAlgo_t algo;
    float ms, ms_first; /* the winner's and the heuristic's first proposal's time; < 0 untimed */
    int n_cand, index;  /* candidates timed, the winner's place among them */
} pr_lt_choice;
/* Choose p's algorithm (cuda_ltcand.c): untimed, the heuristic's first proposal; timed, the
 * fastest of the heuristic's top 24 proposals (after a warm-up, the minimum of two passes
 * of pr_cu_time3; PRECIS_CUDA_LT_SEARCH=0: the first 8, one pass, as before phase 8). */
precis_status pr_cu_lt_choose(const pr_lt_problem *p, bool timed, pr_lt_choice *out, pr_err *e);
/* "algo ID tile T[ split-K S]" for inspect. */
void pr_cu_lt_algo_str(const cublasLtMatmulAlgo_t *a, char *buf, size_t n);
/* Static shapes: one run of an impl at prepare on zeroed scratch buffers (inputs
 * whose bit is set in skip get their dims and no data: packed weights, inputs the
 * run does not read), so that its timed choices are made at build time and
 * describe() names them. Nothing happens when a dim is unknown. */
precis_status pr_cu_run_static(const pr_graph *g, const pr_node *n, pr_cuda_exec *x,
                               precis_status (*run)(void *state, pr_kernel *k, pr_cuda_exec *x),
                               void *state, unsigned skip, pr_err *e);
/* An initializer's values as float32 (malloc'd, n elements; NULL on OOM). */
float *pr_cu_init_f32(const pr_graph *g, int t, int64_t *n);
/* A quantized conv / matmul's float parameters as host float32 arrays (malloc'd, the caller
 * frees both, also on error): the weight scales of input 2 (1 or `count`: *n_scale) and the
 * optional bias of input 3 (`count`; *bias NULL without one). `what` names the count in
 * messages ("channels", "outputs"). */
precis_status pr_cu_qparams(const pr_graph *g, const pr_node *n, int64_t count, const char *what,
                            float **scale, int64_t *n_scale, float **bias, pr_err *e);

/* The act attributes (act, act2) of a fused node as kernel descriptors. */
pr_cu_act pr_cu_act_of(const pr_node *n, const char *prefix);

/* A strided walk (pr_cu_ew) of output Y with inputs in[0..n) broadcast to
 * it (numpy rules), dims collapsed; the op is left for the caller. */
precis_status pr_cu_ew_setup(pr_cu_ew *w, const pr_buf *Y, int n, const pr_buf *const *in);

/* Build a pr_infer for k's node whose input values are the initializers'
 * host data (other inputs: dims only), for the parameter plan makers. */
void pr_cu_kernel_infer(const pr_kernel *k, pr_infer *ic, pr_tinfo *tin, int cap);

/* Collapse dims for an elementwise walk: drops size-1 dims and merges
 * neighbours that are contiguous in every operand. strides[o][d] for each
 * of n_op operands (the output first, with its own row-major strides).
 * Returns the new rank (>= 1). */
int pr_cu_collapse(int rank, int64_t *dims, int n_op, int64_t (*strides)[PR_MAX_RANK]);

#endif
