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
 *       Also int8/uint8/bool tensors (the data movement is dtype-agnostic).
 *   pr_cpu_impl_qbinary  (k_qelem.c) QBinary (INT8 Add, Sub, Mul): int8,
 *       uint8 or float operands, numpy broadcasting and layouts as binary,
 *       the act epilogue, float or requantized int8/uint8 output.
 *   pr_cpu_impl_quantize / pr_cpu_impl_dequantize  (k_quant.c) per-tensor
 *       QuantizeLinear (float32/bfloat16/float16 -> int8/uint8, x / scale
 *       rounded half to even and saturated as ref) and DequantizeLinear
 *       (int8/uint8 -> float32/bfloat16/float16); scalar scale initializer,
 *       zero point absent or an all-zero initializer. Layout-agnostic.
 *   pr_cpu_impl_qdwconv  (k_qdwconv.c) depthwise QConv (group == C == M),
 *       NHWC int8/uint8 src, int8/uint8/float32 out, bias, act, act2; needs
 *       AVX512-VNNI (declined otherwise: dnnl.qconv runs it).
 *   pr_cpu_impl_qfc  (k_qfc.c) QConv of 1x1 images with a 1x1 kernel (the
 *       squeeze-excitation FCs after a GlobalAveragePool): a matrix-vector
 *       product per image, bias, act, act2, int8/uint8/float32 out, no Z.
 *   pr_cpu_impl_q1x1  (k_q1x1.c) 1x1 stride-1 QConv on NHWC images, IC a
 *       multiple of 4 up to 256, OC >= max(16, IC) (or 8 from up to 32),
 *       int8/uint8 out, act none/Relu/Clip/HardSwish/Swish, act2 none/Affine,
 *       no Z (but OC 8 with no act: an int8/uint8 Z); images over 4096
 *       pixels run a dnnl.qconv primitive kept in its state; needs
 *       AVX512-VNNI (declined otherwise).
 *   pr_cpu_impl_qstem  (k_qstem.c) 3x3 stride-2 QConv of 1..4 NHWC input
 *       channels into 8 (PP-OCR cls's stem), int8/uint8 in and
 *       out, pads 0/1, act none/Relu/Clip/HardSwish, act2 none/Affine, no
 *       Z; needs AVX512-VNNI and VBMI (declined otherwise).
 *   pr_cpu_impl_qamx  (k_qamx.c) QConv, group 1, any kernel / stride /
 *       dilation, pads >= 0, on AMX-INT8 tiles (an implicit GEMM), NHWC
 *       int8/uint8 in and out, act none/Relu/Clip/HardSwish/Swish, act2
 *       none/Affine, an int8/uint8 Z with Swish or no act; needs AMX-INT8 (palette 1 set by hand: no cpuid
 *       leaf 0x1D needed); HardSwish convs oneDNN would run only with
 *       PRECIS_QAMX_HSW=1 (rounding). PRECIS_QAMX=0 declines everything (A/B).
 *
 * describe() gives "<impl>.avx512" or "<impl>.scalar". */
#ifndef PR_BACKENDS_CPU_KERNELS_H
#define PR_BACKENDS_CPU_KERNELS_H

#include "backends/cpu/cpu.h"
#include "ir/act.h"

extern const pr_cpu_impl pr_cpu_impl_eltwise;
extern const pr_cpu_impl pr_cpu_impl_binary;
extern const pr_cpu_impl pr_cpu_impl_move;
extern const pr_cpu_impl pr_cpu_impl_quantize;
extern const pr_cpu_impl pr_cpu_impl_dequantize;
extern const pr_cpu_impl pr_cpu_impl_qbinary;
extern const pr_cpu_impl pr_cpu_impl_qdwconv;
extern const pr_cpu_impl pr_cpu_impl_qfc;
extern const pr_cpu_impl pr_cpu_impl_q1x1;
extern const pr_cpu_impl pr_cpu_impl_qstem;
extern const pr_cpu_impl pr_cpu_impl_qamx;
/* AMX-INT8 tiles usable here (cpuid, the kernel's XTILEDATA permission) and
 * not switched off by PRECIS_QAMX=0 (k_qamx.c) */
bool pr_cpu_qamx_available(void);

/* The broadcasting driver of the binary kernels (k_binary.c), shared with
 * QBinary. A row function computes o[i] = f(a[i sa], b[i sb]) for i < n (a,
 * b, o at the row's first elements; strides in elements; param passed
 * through). pr_cpu_bin_run computes o = f(a, b) with numpy broadcasting,
 * each operand and the output stored plain or NHWC (lay_*: PR_LAYOUT_*; NHWC
 * only means something at rank 4): the dims are merged into rows along
 * which every operand has stride 1 or 0, which go to fn, else (operands in
 * different layouts) to strided. Up to `threads` OpenMP threads. */
typedef void (*pr_cpu_bin_row)(const void *a, int64_t sa, const void *b, int64_t sb, void *o,
                               int64_t n, const void *param);
precis_status pr_cpu_bin_run(pr_kernel *k, const pr_buf *a, int lay_a, const pr_buf *b, int lay_b,
                             pr_buf *o, int lay_o, pr_cpu_bin_row fn, pr_cpu_bin_row strided,
                             const void *param, int threads);
/* Whether a binary node may run NHWC as far as operand t is concerned: a
 * rank-4 activation (it becomes NHWC with the rest), or a tensor whose dims
 * are all 1 but the channel's (per-channel or scalar, rank <= 4). */
bool pr_cpu_bin_nhwc_operand(const pr_tensor *t);
/* The storage layout of t for a kernel (initializers are plain; NHWC only
 * at rank 4, or when the rank is not known yet). */
int pr_cpu_layout_of(const pr_tensor *t);

/* A rank-4 tensor N,C,H,W (dims nchw, elements of es bytes) from plain to
 * NHWC storage (to_nhwc) or back; src and dst do not overlap. */
void pr_cpu_nchw_nhwc(const void *src, void *dst, const int64_t *nchw, size_t es, bool to_nhwc,
                      int threads);
/* out[i] = scale * q[i] (q int8/uint8; out float32/bfloat16/float16, rounded
 * to nearest even) for n elements, up to `threads` OpenMP threads; AVX-512
 * when allowed (as DequantizeLinear). */
void pr_cpu_dequant_q8(const void *q, pr_dtype qdt, float scale, void *out, pr_dtype odt,
                       int64_t n, int threads);
/* x[i] = act(x[i]) for n float32 values in place (k_eltwise.c; pv_act /
 * pr_act_apply), up to `threads` OpenMP threads. */
void pr_cpu_act_f32(float *x, int64_t n, const pr_act *a, int threads);
/* The late INT8 epilogue (k_qact.c): for rows x rows of C float32 values
 * (rows xs >= C values apart), R = act2(act(x) + z_scale * Z) and
 * y = saturate(round_half_even(R * inv_y)) into int8/uint8 ydt; z (int8/
 * uint8 zdt, dense rows of C like y) may be NULL, act/act2 NULL or NONE;
 * y may be z. Up to `threads` OpenMP threads. */
void pr_cpu_qact_rows(const float *x, int64_t xs, int64_t rows, int64_t C, const pr_act *act,
                      const pr_act *act2, const void *z, pr_dtype zdt, float z_scale, void *y,
                      pr_dtype ydt, float inv_y, int threads);

#endif
