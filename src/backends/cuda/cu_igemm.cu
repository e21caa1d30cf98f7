// Implicit-GEMM int8 convolution on the Tensor Cores (mma.sync m16n8k32
// s8 x s8 -> s32) for NHWC activations, with no im2col copy: each block
// gathers its A tile (rows m = (b, oh, ow), bytes k = (r, s, c)) straight
// from x with cp.async (zero-filled outside the image; -128 bytes stored for
// a uint8 x in biased storage), B from the packed
// weights [N][K] (k in the same order), through a multistage shared-memory
// pipeline, and requantizes in its epilogue (pr_cu_qepi: scales, bias,
// act, residual, act2, int8/uint8/float out).
//
// Tiles: 64 bytes of k per stage; shared rows of 64 bytes, the four
// 16-byte chunks swizzled by (row >> 1) & 3 so that ldmatrix reads 8 rows
// of one chunk without bank conflicts (cu_mma.cuh, shared with cu_hconv.cu).
#include "backends/cuda/cu_igemm_epi.cuh"
#include "backends/cuda/cu_mma.cuh"

using namespace prmma;

namespace {

constexpr int BK = ROW_BYTES; // bytes of k a stage

__device__ __forceinline__ void mma8(int *c, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// BM x BN output tile, WM x WN warps, ST pipeline stages; FAST: see the epilogue.
template <int BM, int BN, int WM, int WN, int ST, bool FAST>
__global__ void __launch_bounds__(WM *WN * 32, WM *WN == 8 ? 2 : 1)
    k_igemm(const signed char *__restrict__ x, const signed char *__restrict__ w,
            pr_cu_igemm p, pr_cu_qepi q, bool nocvt) {
    constexpr int T = WM * WN * 32, TM = BM / WM, TN = BN / WN, MI = TM / 16, NJ = TN / 8;
    constexpr int AP = BM * 4 / T, BP = BN * 4 / T; // 16-byte chunks a thread loads per stage
    static_assert(AP >= 1 && BP >= 1 && NJ % 2 == 0, "tile shape");
    __shared__ __align__(128) signed char smem[ST * (BM + BN) * BK];
    signed char(*sa)[BM * BK] = (signed char(*)[BM * BK])smem;
    signed char(*sb)[BN * BK] = (signed char(*)[BN * BK])(smem + ST * BM * BK);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const int64_t M = p.N * p.OH * p.OW;
    const int64_t m0 = (int64_t)blockIdx.x * BM;
    const int n0 = blockIdx.y * BN;
    const int chunk = tid & 3; // this thread's 16-byte chunk of each row it loads
    const int KT = (int)((p.K + BK - 1) / BK);
    const int Ki = (int)p.K, Ci = (int)p.C; // K < 2^31: checked by the launcher
    const uint32_t xflip = p.x_u8 == PR_CU_X_U8 ? 0x80808080u : 0u; // uint8 x read as x - 128
    const bool xpad = p.x_u8 == PR_CU_X_U8B; // biased x: padding -128 stored (see load)

    // rows this thread gathers: image base and the top-left input tap
    int64_t abase[AP];
    int aih[AP], aiw[AP];
    for (int i = 0; i < AP; i++) {
        int64_t m = m0 + (tid >> 2) + i * (T / 4);
        if (m < M) {
            int64_t ow = m % p.OW, t = m / p.OW, oh = t % p.OH, b = t / p.OH;
            abase[i] = b * p.H * p.W * p.C;
            aih[i] = (int)(oh * p.sh - p.ph);
            aiw[i] = (int)(ow * p.sw - p.pw);
        } else {
            abase[i] = 0;
            aih[i] = -(1 << 28); // never inside the image
            aiw[i] = 0;
        }
    }

    auto load = [&](int stage, int kt) {
        int kk = kt * BK + chunk * 16;
        bool kok = kk < Ki;
        int tap = kk / Ci, c = kk - tap * Ci;
        int r = tap / p.kw, s = tap - r * p.kw;
#pragma unroll
        for (int i = 0; i < AP; i++) {
            int row = (tid >> 2) + i * (T / 4);
            int ih = aih[i] + r * p.dh, iw = aiw[i] + s * p.dw;
            bool ok = kok && ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
            const signed char *src = ok ? x + abase[i] + ((int64_t)ih * p.W + iw) * p.C + c : x;
            if (xpad && kok && !ok) // biased x's padding: the byte -128 (the real zero), stored
                // directly: this stage's buffer was last read before the loop's __syncthreads
                // (a cp.async from one constant row of 0x80 bytes instead made every block
                // read the same L2 line: 3x3 convs on 14x14 maps ran 1.7x slower)
                *(uint4 *)&sa[stage][swz(row, chunk)] =
                    make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
            else
                cp16(smem_u32(&sa[stage][swz(row, chunk)]), src, ok);
        }
#pragma unroll
        for (int i = 0; i < BP; i++) {
            int row = (tid >> 2) + i * (T / 4);
            int n = n0 + row;
            bool ok = kok && n < p.Nout;
            const signed char *src = ok ? w + (int64_t)n * p.K + kk : w;
            cp16(smem_u32(&sb[stage][swz(row, chunk)]), src, ok);
        }
    };

    int acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
        for (int j = 0; j < NJ; j++)
            for (int v = 0; v < 4; v++) acc[i][j][v] = 0;

    for (int s = 0; s < ST - 1; s++) {
        if (s < KT) load(s, s);
        cp_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        cp_wait<ST - 2>();
        __syncthreads();
        int nk = kt + ST - 1;
        if (nk < KT) load(nk % ST, nk);
        cp_commit();
        const signed char *A = sa[kt % ST], *B = sb[kt % ST];
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            uint32_t af[MI][4], bf[NJ][2];
#pragma unroll
            for (int i = 0; i < MI; i++) {
                int row = wm * TM + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                ldsm4(af[i], smem_u32(&A[swz(row, ks * 2 + (lane >> 4))]));
                af[i][0] ^= xflip;
                af[i][1] ^= xflip;
                af[i][2] ^= xflip;
                af[i][3] ^= xflip;
            }
#pragma unroll
            for (int j = 0; j < NJ; j += 2) {
                int row = wn * TN + j * 8 + (lane & 7) + (lane >> 4) * 8;
                ldsm_b2(bf[j], bf[j + 1], smem_u32(&B[swz(row, ks * 2 + ((lane >> 3) & 1))]));
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NJ; j++) mma8(acc[i][j], af[i], bf[j]);
        }
    }
    cp_wait<0>();

    // epilogue (cu_igemm_epi.cuh): c0, c1 at (row g, cols 2t, 2t+1); c2, c3 at
    // row g + 8. FAST: staged in shared memory one warp row (wm) at a time.
    const int g = lane >> 2, t4 = lane & 3;
    if (FAST) {
        constexpr int SP = BN + 8; // padded stage row (floats): conflict-free float2 writes
        static_assert(TM * SP * 4 <= ST * (BM + BN) * BK, "stage fits");
        float *stage = (float *)smem;
        const bool pre = q.pre.kind == ACT_RELU;
        __syncthreads(); // the pipeline's buffers are free
        for (int ph = 0; ph < WM; ph++) {
            if (wm == ph) {
#pragma unroll
                for (int j = 0; j < NJ; j++) {
                    int nl = wn * TN + j * 8 + t4 * 2, n = n0 + nl;
                    igemm_col2 cs = igemm_cols(q, n, n < p.Nout);
#pragma unroll
                    for (int i = 0; i < MI; i++)
#pragma unroll
                        for (int h = 0; h < 2; h++)
                            *(float2 *)&stage[(i * 16 + g + h * 8) * SP + igemm_scol(nl)] =
                                igemm_pre(cs, acc[i][j][h * 2], acc[i][j][h * 2 + 1], pre);
                }
            }
            __syncthreads();
            igemm_store_rows<BN, SP, T, TM>(q, stage, m0 + ph * TM, n0, M, p.Nout, tid,
                                            nocvt);
            __syncthreads();
        }
    } else {
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            int n = n0 + wn * TN + j * 8 + t4 * 2;
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int64_t m = m0 + wm * TM + i * 16 + g + h * 8;
                    if (m >= M) continue;
                    if (n < p.Nout) igemm_epi_general(&q, acc[i][j][h * 2], m, n);
                    if (n + 1 < p.Nout) igemm_epi_general(&q, acc[i][j][h * 2 + 1], m, n + 1);
                }
        }
    }
}

template <int BM, int BN, int WM, int WN, int ST>
int launch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
           const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    dim3 grid((unsigned)((M + BM - 1) / BM), (unsigned)((p->Nout + BN - 1) / BN));
    if (igemm_fast_ok(q))
        k_igemm<BM, BN, WM, WN, ST, true><<<grid, WM * WN * 32, 0, s>>>(
            (const signed char *)x, (const signed char *)w, *p, *q, igemm_epi_nocvt());
    else
        k_igemm<BM, BN, WM, WN, ST, false><<<grid, WM * WN * 32, 0, s>>>(
            (const signed char *)x, (const signed char *)w, *p, *q, false);
    return launch_result();
}

} // namespace

extern "C" int pr_cu_igemm_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                              const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->C % 16 || p->K % 16 || ((uintptr_t)x & 15) ||
        ((uintptr_t)w & 15) || (p->N * p->H * p->W * p->C) >> 31 || p->K >> 30)
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    switch (p->tile) {
    case PR_CU_IGEMM_128x128: return launch<128, 128, 2, 4, 3>(s, x, w, p, q);
    case PR_CU_IGEMM_128x64: return launch<128, 64, 2, 2, 4>(s, x, w, p, q);
    case PR_CU_IGEMM_64x64: return launch<64, 64, 2, 2, 4>(s, x, w, p, q);
    case PR_CU_IGEMM_64x128: return launch<64, 128, 2, 2, 4>(s, x, w, p, q);
    default: return pr_cu_igemm_wg_s8(stream, x, w, p, q);
    }
}
