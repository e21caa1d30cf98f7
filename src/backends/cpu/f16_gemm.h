/* FP16 GEMM for the CPU backend (f16_conv.c, f16_matmul.c).
 *
 *   C[M,N] (f16) = epilogue(A[M,K] (f16) x B[K,N])
 *   epilogue:  y = act2(act(alpha * acc + bias[n] + bias_c) + Z[m,n])
 *
 * Precision. Sums are accumulated in float32 and only the result is rounded
 * to f16. Accumulating in f16 (AVX512-FP16 vfmadd*ph, even in K blocks of
 * 32 summed in float32) was measured and misses the float16 tolerance of
 * tests/unit/cpu_check.h (abs 2e-3 + rel 4e-3 against float32) for outputs
 * near zero once K passes a few dozen: every f16 addition rounds the running
 * sum to 11 bits, and a K-term sum collects sqrt(K) such roundings.
 *
 * Kernels, best first (pr_f16_isa_best; PRECIS_CPU_ISA caps them):
 *   AMX     AMX-BF16 tiles, 2 x 2 tiles of 16 x 16 float32. Each operand is
 *           split into bf16 parts x = h + l; f16 values split exactly, float32
 *           weights keep 16 of 24 bits; a*b = ah*bh + ah*bl + al*bh (al*bl,
 *           under 2^-18 |a b|, dropped): three bf16 tile products per K step
 *           ("bf16x3"), accurate to about 2^-16 relative per product;
 *   AVX512  float32 FMA, 14 x 32 register tile;
 *   AVX2    float32 FMA with F16C conversions, 6 x 16;
 *   scalar  portable C.
 *
 * B is packed once (prepare) into panels of PR_F16_NR columns, zero-padded
 * past N: float32 K rows of NR (AVX512, AVX2, scalar), or for AMX the bf16
 * high and low parts in tile-B (pairs of K rows) order with K padded to 32.
 * A comes from a packer writing f16 rows (a convolution's implicit im2col)
 * or straight from a plain f16 matrix, K-block by K-block, and is widened to
 * float32 or split into bf16 parts per block.
 *
 * The driver runs a list of independent jobs (conv groups, matmul batches)
 * split into tiles of rows x columns over x->num_threads OpenMP threads; all
 * its memory is one caller-provided scratch block (pr_f16_gemm_scratch_size).
 */
#ifndef PR_BACKENDS_CPU_F16_GEMM_H
#define PR_BACKENDS_CPU_F16_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/cpu.h"
#include "ir/act.h"

#define PR_F16_NR 32 /* packed-B panel width, columns */

typedef enum pr_f16_isa {
    PR_F16_ISA_SCALAR = 0,
    PR_F16_ISA_AVX2,   /* AVX2 + FMA + F16C */
    PR_F16_ISA_AVX512, /* AVX-512 F/BW/VL */
    PR_F16_ISA_AMX,    /* AVX-512 + AMX-BF16 tiles, split products (below) */
} pr_f16_isa;

/* The best ISA our kernels may use (pr_cpu_features_get, so capped by
 * PRECIS_CPU_ISA). */
pr_f16_isa pr_f16_isa_best(void);
const char *pr_f16_isa_name(pr_f16_isa isa);

/* Floats (4-byte units) in a packed B of K x N for isa (panels zero-padded
 * to PR_F16_NR columns; AMX: K padded to 32, bf16 high and low parts). */
static inline size_t pr_f16_bpack_floats(pr_f16_isa isa, int64_t K, int64_t N) {
    int64_t np = (N + PR_F16_NR - 1) / PR_F16_NR;
    if (K < 0) K = 0;
    if (isa == PR_F16_ISA_AMX) K = (K + 31) / 32 * 32;
    return (size_t)(np * PR_F16_NR) * (size_t)K;
}
/* Pack B (element (k, n) at src[k*rs + n*cs]) into dst
 * (pr_f16_bpack_floats(isa, K, N) floats, 64-byte aligned). */
void pr_f16_pack_b_f32(pr_f16_isa isa, const float *src, int64_t rs, int64_t cs, int64_t K,
                       int64_t N, float *dst);
/* The same from f16 data (activations, per run). One panel of a larger B
 * can be packed alone: src at its first column, N its width, dst at
 * pr_f16_bpack_panel(). */
void pr_f16_pack_b_f16(pr_f16_isa isa, const uint16_t *src, int64_t rs, int64_t cs, int64_t K,
                       int64_t N, float *dst);
/* Offset in floats of panel p (columns p*PR_F16_NR...) in a packed B. */
static inline size_t pr_f16_bpack_panel(pr_f16_isa isa, int64_t K, int64_t p) {
    return pr_f16_bpack_floats(isa, K, 1) * (size_t)p;
}

/* n f16 values to float32 / float32 to f16 (round to nearest even). */
void pr_f16_to_f32_n(pr_f16_isa isa, const uint16_t *src, float *dst, int64_t n);
void pr_f32_to_f16_n(pr_f16_isa isa, const float *src, uint16_t *dst, int64_t n);

typedef struct pr_f16_epi {
    float alpha;       /* scales the product only */
    const float *bias; /* per column (indexed from the job's column 0), or NULL */
    float bias_c;      /* added everywhere (a broadcast scalar bias), usually 0 */
    pr_act act, act2;  /* act2 applies only with a residual */
} pr_f16_epi;

/* One output row: out[j] = f16(act2(act(alpha*acc[j] + bias[col0+j] + bias_c) + z[j]))
 * for j < n (z may be NULL: no residual, no act2). out may equal z. */
void pr_f16_epilogue_row(pr_f16_isa isa, const pr_f16_epi *e, const float *acc, int64_t n,
                         int64_t col0, const uint16_t *z, uint16_t *out);

/* Writes rows [m0, m0+mc) x columns [k0, k0+kc) of A (f16) into dst, row i
 * at dst + i*ldd. */
typedef void (*pr_f16_pack_a_fn)(const void *ctx, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                                 uint16_t *dst, int64_t ldd);

typedef struct pr_f16_gemm_job {
    int64_t M, N, K;
    /* A: either pack_a(pack_ctx, ...) or a plain f16 matrix: element (m, k)
     * at a[m*lda + k], or a[k*lda + m] with trans_a */
    pr_f16_pack_a_fn pack_a;
    const void *pack_ctx;
    const uint16_t *a;
    int64_t lda;
    bool trans_a;
    const float *b; /* packed, pr_f16_pack_b_* */
    uint16_t *c;    /* element (m, n) at c[m*ldc + n] */
    int64_t ldc;
    const uint16_t *z; /* residual, element (m, n) at z[m*ldz + n], or NULL */
    int64_t ldz;
    const pr_f16_epi *epi;
} pr_f16_gemm_job;

/* Scratch bytes pr_f16_gemm_run needs for n_jobs jobs on nt threads. */
size_t pr_f16_gemm_scratch_size(pr_f16_isa isa, int n_jobs, int nt);
/* Runs the jobs on nt threads (OpenMP); scratch: pr_f16_gemm_scratch_size
 * bytes, 64-byte aligned. Never fails. */
void pr_f16_gemm_run(pr_f16_isa isa, const pr_f16_gemm_job *jobs, int n_jobs, int nt,
                     void *scratch);

/* ---- AMX building blocks for kernels with their own A addressing
 * (f16_conv.c's direct convolution). Only with isa PR_F16_ISA_AMX. */

/* Load / release this thread's tile configuration around AMX calls. */
void pr_f16_amx_begin(void);
void pr_f16_amx_end(void);
/* rows of n f16 values (stride lds) into their bf16 high and low parts
 * (stride ldd), zero-filled up to np (a multiple of 32). */
void pr_f16_amx_split(const uint16_t *src, int64_t lds, int64_t rows, int64_t n, int64_t np,
                      uint16_t *hi, uint16_t *lo, int64_t ldd);
/* C[16*nrt x 32] (f32, row stride ldc floats; nrt 1 or 2) = the sum over
 * K steps st < nsteps of A_st x B_st: A_st's rows r at hi/lo + aoff[st] +
 * r*arow (32 bf16 each), B_st rows [32 st, 32 st + 32) of a packed panel
 * (panel: pr_f16_bpack_panel of a B packed with depth Kp = 32 * nsteps). */
void pr_f16_amx_block(const uint16_t *hi, const uint16_t *lo, const int64_t *aoff, int64_t nsteps,
                      int64_t arow, int nrt, const float *panel, int64_t Kp, float *C, int64_t ldc);

#endif
