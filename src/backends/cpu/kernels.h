/* The CPU backend's own elementwise and data-movement kernels (no oneDNN):
 * AVX-512 when pr_cpu_features_get() allows it, portable scalar C otherwise
 * (PRECIS_CPU_ISA=scalar forces the latter). Float activations may be
 * float32, bfloat16 or float16 and are computed in float32.
 *
 *   pr_cpu_impl_eltwise  (k_eltwise.c) unary: Relu, LeakyRelu, Clip,
 *       Sigmoid, HardSigmoid, HardSwish, Tanh, Erf, Exp, Log, Sqrt,
 *       Reciprocal, Neg, Abs, Gelu (approximate none|tanh), Softplus, Mish;
 *       Identity; Cast between float32/bfloat16/float16. Layout-agnostic
 *       (input and output share the layout); in place on input 0.
 *   pr_cpu_impl_binary   (k_binary.c) Add, Sub, Mul, Div, Max, Min (two
 *       inputs) with numpy broadcasting, any mix of plain/NHWC operands, an
 *       initializer operand may stay float32; Pow with a constant scalar
 *       exponent. In place on input 0 when it has the output's shape.
 *   pr_cpu_impl_move     (k_move.c) Reorder, Transpose, Concat, Slice,
 *       Split, Reshape/Flatten/Squeeze/Unsqueeze (plain; in place on input 0).
 *
 * describe() gives "<impl>.avx512" or "<impl>.scalar". */
#ifndef PR_BACKENDS_CPU_KERNELS_H
#define PR_BACKENDS_CPU_KERNELS_H

#include "backends/cpu/cpu.h"

extern const pr_cpu_impl pr_cpu_impl_eltwise;
extern const pr_cpu_impl pr_cpu_impl_binary;
extern const pr_cpu_impl pr_cpu_impl_move;

#endif
