/* The GEMM of the ref backend, shared by the conv family (Conv,
 * ConvTranspose, ConvInteger, QLinearConv) and the linalg family (MatMul,
 * Gemm, MatMulInteger, QLinearMatMul, Einsum).
 *
 *   pr_ref_gemm_<sfx>(M, N, K, A, sam, sak, B, ldb, C, ldc, accumulate)
 *     C[M,N] = A[M,K] * B[K,N]        (accumulate false: C overwritten)
 *     C[M,N] += A[M,K] * B[K,N]       (accumulate true)
 *   A(i,k) is A[i*sam + k*sak] (any strides: A is read as scalars),
 *   B is row-major with leading dimension ldb, C with ldc. No aliasing.
 *
 * Instantiations (operand type -> C type):
 *   f32     float  -> float
 *   f64     double -> double
 *   u32     uint32 -> uint32  (int32 and uint32 tensors: wrapping, no UB)
 *   u64     uint64 -> uint64  (int64 and uint64 tensors: wrapping)
 *   s16s64  int16  -> int64   products summed in int32 over blocks of
 *           PR_REF_GEMM_KB depth steps, then added to int64: exact when the
 *           operands are differences of 8-bit values (|a|, |b| <= 255).
 *
 * Blocking: columns in blocks of PR_REF_GEMM_NB and depth in blocks of
 * PR_REF_GEMM_KB, so that a block of B stays in L2. For 4 rows of C at a
 * time, a block's sums build up in a scratch (L1) 4 depth steps per pass over
 * B's rows, in strips of 8 columns of fixed length that gcc -O2 vectorizes
 * (the last nb % 8 columns from a zero-padded copy); then they are added to
 * (or stored in) C. Within a depth block each sum is taken in depth order,
 * so results do not depend on M, N or the strides. Single-threaded.
 * bench/kernels/bench_gemm.c measures it. */
#ifndef PR_BACKENDS_REF_REF_GEMM_H
#define PR_BACKENDS_REF_REF_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

#define PR_REF_GEMM_KB 256 /* depth block */
#define PR_REF_GEMM_NB 512 /* column block */

void pr_ref_gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t sam, int64_t sak,
                     const float *B, int64_t ldb, float *C, int64_t ldc, bool accumulate);
void pr_ref_gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t sam, int64_t sak,
                     const double *B, int64_t ldb, double *C, int64_t ldc, bool accumulate);
void pr_ref_gemm_u32(int64_t M, int64_t N, int64_t K, const uint32_t *A, int64_t sam,
                     int64_t sak, const uint32_t *B, int64_t ldb, uint32_t *C, int64_t ldc,
                     bool accumulate);
void pr_ref_gemm_u64(int64_t M, int64_t N, int64_t K, const uint64_t *A, int64_t sam,
                     int64_t sak, const uint64_t *B, int64_t ldb, uint64_t *C, int64_t ldc,
                     bool accumulate);
void pr_ref_gemm_s16s64(int64_t M, int64_t N, int64_t K, const int16_t *A, int64_t sam,
                        int64_t sak, const int16_t *B, int64_t ldb, int64_t *C, int64_t ldc,
                        bool accumulate);

/* Type-erased form (C overwritten) for dtype-generic callers. */
typedef void (*pr_ref_gemm_fn)(int64_t M, int64_t N, int64_t K, const void *A, int64_t sam,
                               int64_t sak, const void *B, int64_t ldb, void *C, int64_t ldc);
/* The overwriting GEMM for tensors of dtype dt (float32, float64, and the
 * 32/64-bit integers, wrapping) and its element size; NULL for other dtypes. */
pr_ref_gemm_fn pr_ref_gemm_for(pr_dtype dt, size_t *es);

#endif
