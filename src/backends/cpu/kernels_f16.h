/* FP16 compute impls of the CPU backend (f16_conv.c, f16_matmul.c): float16
 * activations, float32 (or float16) initializer weights converted in
 * prepare, float32 accumulation (f16_gemm.h says why), f16 outputs. */
#ifndef PR_BACKENDS_CPU_KERNELS_F16_H
#define PR_BACKENDS_CPU_KERNELS_F16_H

#include "backends/cpu/cpu.h"

/* Conv / FusedConv, rank 4, X/Y (and Z) float16 in NHWC; W (and B)
 * initializers. 1x1 stride-1 as a GEMM over pixels, other convs by implicit
 * im2col into the GEMM, depthwise (group == C == M) by a direct kernel. */
extern const pr_cpu_impl pr_cpu_impl_f16_conv;
/* MatMul / Gemm / FusedMatMul on float16 activations (plain layout): a
 * constant 2-D B packed in prepare (batch dims of A folded into rows), or an
 * activation B (batched, numpy broadcasting) packed per run. */
extern const pr_cpu_impl pr_cpu_impl_f16_matmul;

#endif
