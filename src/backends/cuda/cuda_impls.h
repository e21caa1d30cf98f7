/* The CUDA backend's impls (one per file family), for the registry. */
#ifndef PR_BACKENDS_CUDA_CUDA_IMPLS_H
#define PR_BACKENDS_CUDA_CUDA_IMPLS_H

#include "backends/cuda/cuda_util.h"
#include "ir/act.h"

extern const pr_cuda_impl pr_cuda_impl_gemm;      /* cuda_gemm.c */
extern const pr_cuda_impl pr_cuda_impl_attention; /* cuda_attention.c */
extern const pr_cuda_impl pr_cuda_impl_conv;      /* cuda_conv.c */
extern const pr_cuda_impl pr_cuda_impl_eltwise;   /* cuda_elem.c: unary, binary, Where, Cast */
extern const pr_cuda_impl pr_cuda_impl_move;      /* cuda_move.c: reshapes, Transpose, Slice, ... */
extern const pr_cuda_impl pr_cuda_impl_gather;    /* cuda_move.c */
extern const pr_cuda_impl pr_cuda_impl_norm;      /* cuda_norm.c: Softmax, LayerNorm */
extern const pr_cuda_impl pr_cuda_impl_reduce;    /* cuda_norm.c */
extern const pr_cuda_impl pr_cuda_impl_pool;      /* cuda_pool.c: pools, Resize */
extern const pr_cuda_impl pr_cuda_impl_qdwconv;   /* cuda_qdw.c: depthwise QConv */
extern const pr_cuda_impl pr_cuda_impl_qgemm;     /* cuda_qgemm.c: QConv, QMatMul (IMMA) */
extern const pr_cuda_impl pr_cuda_impl_qelem;     /* cuda_qelem.c: Q/DQ, QBinary, QPool */
extern const pr_cuda_impl pr_cuda_impl_fp8;       /* cuda_fp8.c: fp8 QMatMul (cuBLASLt) */

#endif
