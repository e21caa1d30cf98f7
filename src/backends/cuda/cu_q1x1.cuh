// What cu_q1x1.cu's kernels (mma.sync) and cu_q1x1_wg.cu's (Hopper wgmma)
// share: the shared-row swizzle, the fast-epilogue test, the column and
// residual loads and the tile's epilogue (cu_q1x1.cu's top comment says how
// the fast epilogue requantizes).
#ifndef PR_BACKENDS_CUDA_CU_Q1X1_CUH
#define PR_BACKENDS_CUDA_CU_Q1X1_CUH

#include "backends/cuda/cu_igemm_epi.cuh"
#include "backends/cuda/cu_mma.cuh"

namespace prq1 {

using namespace prmma;

// byte offset of 16-byte chunk c of shared row `row` (Kp bytes a row)
static __device__ __forceinline__ int qsw(int row, int c, int Kp) {
    return Kp == 64 ? swz(row, c) : row * Kp + ((c ^ (row & 7)) << 4);
}

// x's byte offset of output row m's pixel (s1: stride 1, row m itself); 32-bit
// math: M and x's size < 2^31 (pr_cu_q1x1_s8 / _wg_s8 / _ws_s8 refuse more)
static __device__ __forceinline__ int64_t q1_row(const pr_cu_igemm &p, bool s1, int64_t m) {
    if (s1) return m * p.C;
    const int mi = (int)m, OW = (int)p.OW, OH = (int)p.OH;
    const int ow = mi % OW, u = mi / OW, oh = u % OH, b = u / OH;
    return (int64_t)(((b * (int)p.H + oh * p.sh) * (int)p.W + ow * p.sw) * (int)p.C);
}

// one m16n8k32 s8 x s8 -> s32 mma.sync into c
__device__ __forceinline__ void q1_mma8(int *c, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One 32-byte k step ks of a warp's MI x NJ mma.sync blocks (cu_q1x1.cu's
// tiles): A [BM][Kp] from row wm * TM, the weights B [BN][Kp] from row wn *
// TN (qsw rows), xflip XORed into A's fragments (uint8 x read as x - 128).
template <int MI, int NJ, int TM, int TN>
__device__ __forceinline__ void q1_mma_k32(int (&acc)[MI][NJ][4], const signed char *A,
                                           const signed char *B, int Kp, int ks, int wm, int wn,
                                           int lane, uint32_t xflip) {
    uint32_t af[MI][4], bf[NJ][2];
#pragma unroll
    for (int i = 0; i < MI; i++) {
        int row = wm * TM + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldsm4(af[i], smem_u32(&A[qsw(row, ks * 2 + (lane >> 4), Kp)]));
#pragma unroll
        for (int v = 0; v < 4; v++) af[i][v] ^= xflip;
    }
#pragma unroll
    for (int j = 0; j < NJ; j += 2) {
        int row = wn * TN + j * 8 + (lane & 7) + (lane >> 4) * 8;
        ldsm_b2(bf[j], bf[j + 1], smem_u32(&B[qsw(row, ks * 2 + ((lane >> 3) & 1), Kp)]));
    }
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) q1_mma8(acc[i][j], af[i], bf[j]);
}

// EPI: 0 general; 1 fast, no residual; 2 fast + residual; 3 fast, ReLU before the residual
static inline bool q1x1_fast_ok(const pr_cu_qepi *q) {
    return igemm_fast_ok(q) && q->N % 16 == 0 && ((uintptr_t)q->y & 15) == 0 &&
           ((uintptr_t)q->z & 15) == 0;
}

// the float of byte k of u, plus 2^23 (exact): PRMT into 0x4B000000's low byte
static __device__ __forceinline__ float q1_byte_f(uint32_t u, int k) {
    return __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540u + (uint32_t)k));
}

// cp.async.wait_group with a run-time depth: at most n - 2 groups pending
static __device__ __forceinline__ void cp_wait_ring(int n) {
    switch (n) {
    case 2: cp_wait<0>(); break;
    case 3: cp_wait<1>(); break;
    case 4: cp_wait<2>(); break;
    case 5: cp_wait<3>(); break;
    default: cp_wait<4>(); break;
    }
}

// Two adjacent columns' outputs of the fast epilogue (EPI 1..3) at *zp, where
// EPI >= 2 finds their residual bytes (read first, in place): accumulators a0 /
// a1 requantized (of: acc_off, sc / bi: scale and bias), the residual added
// (ReLU before it for EPI 3), clamped to [lo, hi] (ReLU before without a
// residual, or after: the clamp's lo) and stored as two bytes (^ yflip)
template <int EPI>
__device__ __forceinline__ void q1_pair(unsigned short *zp, int a0, int a1, int2 of, float2 sc,
                                        float2 bi, uint32_t zflip, float zc, float zs, float lo,
                                        float hi, uint32_t yflip) {
    float e0 = (float)(a0 + of.x) * sc.x + bi.x;
    float e1 = (float)(a1 + of.y) * sc.y + bi.y;
    if (EPI >= 2) {
        if (EPI == 3) {
            e0 = fmaxf(e0, 0.0f);
            e1 = fmaxf(e1, 0.0f);
        }
        uint32_t zz = (uint32_t)*zp ^ zflip;
        e0 = fmaf(q1_byte_f(zz, 0) - zc, zs, e0);
        e1 = fmaf(q1_byte_f(zz, 1) - zc, zs, e1);
    }
    e0 = fminf(fmaxf(e0, lo), hi) + 12582912.0f;
    e1 = fminf(fmaxf(e1, lo), hi) + 12582912.0f;
    *zp = (unsigned short)(__byte_perm(__float_as_uint(e0), __float_as_uint(e1), 0x0040u) ^ yflip);
}

// The tile's epilogue (EPI as k_q1x1's): Z the tile's staging rows (the
// residual's bytes, landed, for EPI >= 2; unused for EPI 0), cs / co the
// block's scale, bias and acc_off columns, m0 / n0 the tile's origin, rows
// from M on not stored. WGL: the wgmma layout of a warpgroup's two m64
// halves (acc[i] rows 64 i + 16 wm + g) instead of 16-row steps inside the
// warp's TM rows. tid / bar: the thread's index among the WM * WN * 32 and
// the named barrier they share (-1 / 0: threadIdx.x and __syncthreads).
template <int BM, int BN, int WM, int WN, int EPI, bool WGL = false>
__device__ __forceinline__ void
q1_epilogue(int (&acc)[BM / WM / 16][BN / WN / 8][4], unsigned char *Z, const float *cs,
            const int *co, const pr_cu_igemm &p, const pr_cu_qepi &q, int64_t m0, int n0,
            int64_t M, uint32_t zflip, float zc, float zs, bool post, int tid_ = -1,
            int bar = 0) {
    constexpr int T = WM * WN * 32, TM = BM / WM, TN = BN / WN, MI = TM / 16, NJ = TN / 8;
    constexpr int ZS = BN + 16, ZC = BN / 16;
    constexpr bool FAST = EPI > 0;
    const int tid = tid_ < 0 ? (int)threadIdx.x : tid_, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN, g = lane >> 2, t4 = lane & 3;
    if (FAST) {
        // c0, c1 at (row g, cols 2t4, 2t4 + 1) of each 16 x 8 block; c2, c3 at
        // row g + 8: requantized (see the top) into the staging rows (the
        // residual's bytes, read first, in place)
        const bool u8y = q.ydt == DT_U8;
        const float lo = u8y || post ? 0.0f : -128.0f, hi = u8y ? 255.0f : 127.0f;
        const uint32_t yflip = q.y_bias ? 0x8080u : 0u;
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const int nl = wn * TN + j * 8 + t4 * 2;
            const float2 sc = *(const float2 *)&cs[nl], bi = *(const float2 *)&cs[BN + nl];
            const int2 of = *(const int2 *)&co[nl];
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = (WGL ? i * (BM / MI) + wm * 16 : wm * TM + i * 16) + g + h * 8;
                    q1_pair<EPI>((unsigned short *)&Z[row * ZS + nl], acc[i][j][h * 2],
                                 acc[i][j][h * 2 + 1], of, sc, bi, zflip, zc, zs, lo, hi, yflip);
                }
        }
        if (bar) // the tile's bytes staged
            asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "r"(T) : "memory");
        else
            __syncthreads();
        for (int idx = tid; idx < BM * ZC; idx += T) {
            int row = idx / ZC, c = idx - row * ZC;
            int64_t m = m0 + row;
            int n = n0 + c * 16;
            if (m < M && n < p.Nout)
                *(uint4 *)((unsigned char *)q.y + m * q.N + n) =
                    *(const uint4 *)&Z[row * ZS + c * 16];
        }
    } else {
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            int n = n0 + wn * TN + j * 8 + t4 * 2;
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int64_t m = m0 + (WGL ? i * (BM / MI) + wm * 16 : wm * TM + i * 16) + g + h * 8;
                    if (m >= M) continue;
                    if (n < p.Nout) igemm_epi_general(&q, acc[i][j][h * 2], m, n);
                    if (n + 1 < p.Nout) igemm_epi_general(&q, acc[i][j][h * 2 + 1], m, n + 1);
                }
        }
    }
}

// The block's columns n0 .. n0 + BN - 1: cs[0, BN) scale, cs[BN, 2 BN) bias (both
// times ys), co acc_off (zero where q has none or past Nout).
template <int BN, int T>
__device__ __forceinline__ void q1_cols(float *cs, int *co, const pr_cu_qepi &q, int n0,
                                        int64_t Nout, float ys) {
    for (int nl = threadIdx.x; nl < BN; nl += T) {
        int n = n0 + nl;
        bool in = n < Nout;
        cs[nl] = in ? q.a_scale * q.w_scale[q.n_wscale == 1 ? 0 : n] * ys : 0.0f;
        cs[BN + nl] = in && q.bias ? q.bias[n] * ys : 0.0f;
        co[nl] = in && q.acc_off ? q.acc_off[n] : 0;
    }
}

// cp.async of the residual tile (rows m0.., columns n0..) into staging rows Z
// (tid: the thread's index among the T; -1: threadIdx.x)
template <int BM, int BN, int T>
__device__ __forceinline__ void q1_load_z(unsigned char *Z, const pr_cu_qepi &q, int64_t m0,
                                          int n0, int64_t M, int64_t Nout, int tid = -1) {
    constexpr int ZS = BN + 16, ZC = BN / 16;
    for (int idx = tid < 0 ? (int)threadIdx.x : tid; idx < BM * ZC; idx += T) {
        int row = idx / ZC, c = idx - row * ZC;
        int64_t m = m0 + row;
        int n = n0 + c * 16;
        bool ok = m < M && n < Nout;
        cp16(smem_u32(&Z[row * ZS + c * 16]),
             ok ? (const unsigned char *)q.z + m * q.N + n : (const unsigned char *)q.z, ok);
    }
}

} // namespace prq1

#endif
