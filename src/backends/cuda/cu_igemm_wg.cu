// Implicit-GEMM int8 convolution on Hopper's warpgroup Tensor Core
// instruction (wgmma.mma_async m64nNk32 s32 <- s8/u8 x s8, SASS IGMMA): the
// contract of cu_igemm.cu's k_igemm (NHWC x int8, uint8 or biased uint8,
// C % 16 == 0; w packed [Nout][K], k = (r, s, c); pr_cu_qepi epilogue) for
// the tiles PR_CU_IGEMM_WG128x64 / 128x128 / 128x256 (64 bytes of k a
// pipeline stage) and WG128x128K / 128x256K (128 bytes: two 64-byte panels).
//
// A block is 2 warpgroups (256 threads), each the owner of 64 rows of the
// 128-row M tile and all BN columns; every thread gathers A rows and B rows
// with cp.async exactly as k_igemm does (rows of 64 bytes of k, chunk ^=
// (row >> 1) & 3: that is the hardware's 64-byte swizzle, address bits
// [4:5] ^= [7:8], on stage buffers aligned to 1024 bytes), so wgmma reads
// both operands from shared memory through K-major 64B-swizzle descriptors
// (stride byte offset 512: 8 rows of 64 bytes; the 32-byte k step is +32 on
// the start address). ST stages, ST - 2 loads ahead and one wgmma group in
// flight: the stage loaded at step kt was last read by step kt - 2's group,
// complete once every thread passed step kt - 1's wgmma wait and the
// barrier of step kt. fence.proxy.async orders the cp.async / st.shared
// writes before the async proxy's reads.
//
// A uint8 x (PR_CU_X_U8) runs the u8 x s8 form: no XOR, zero padding,
// q.acc_off dropped (the sums are exact as they are). Biased storage
// (PR_CU_X_U8B) is read as int8 with -128 padding as in k_igemm.
//
// The accumulators follow the mma.sync C layout per warp (warp w of the
// block: rows 16 w + lane / 4 (+8), columns 8 j + 2 (lane % 4) (+1)), so
// the epilogue is cu_igemm_epi.cuh's, staged for all 128 rows at once.
//
// Built only for sm_90a (CMakeLists.txt: its own object library); where the
// device is not compute capability 9.0 the launch fails and the timed route
// choice (cuda_qgemm.c) skips these tiles.
#ifdef PRECIS_NO_SM90A // nvcc < 12.0 (CMakeLists.txt): no sm_90a target, every call refused
#include "backends/cuda/cu_common.cuh"

extern "C" int pr_cu_igemm_wg_s8(void *stream, const void *x, const void *w,
                                 const pr_cu_igemm *p, const pr_cu_qepi *q) {
    (void)stream, (void)x, (void)w, (void)p, (void)q;
    return (int)cudaErrorNotSupported;
}
#else
#include "backends/cuda/cu_igemm_epi.cuh"
#include "backends/cuda/cu_mma.cuh"

using namespace prmma;

#include "backends/cuda/cu_wgmma.cuh"

namespace {

constexpr int BK = ROW_BYTES, BM = 128, T = 256;


template <int BN, int ST, int P> constexpr int smem_bytes() {
    return ST * P * (BM + BN) * BK + 1024;
}

// BN columns, ST stages of P 64-byte panels of k; U8: x uint8 (u8 x s8);
// FAST: see cu_igemm_epi.cuh.
template <int BN, int ST, int P, bool U8, bool FAST>
__global__ void __launch_bounds__(T, BN == 256 ? 1 : 2)
    k_igemm_wg(const signed char *__restrict__ x, const signed char *__restrict__ w,
               pr_cu_igemm p, pr_cu_qepi q, bool nocvt) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int AP = BM * 4 / T, BP = BN * 4 / T, NJ = BN / 8, ACC = BN / 2;
    constexpr int SA = P * BM * BK, SB = P * BN * BK; // bytes of a stage's A / B
    static_assert(ST >= 3 && AP >= 1 && BP >= 1, "tile shape");
    extern __shared__ __align__(1024) unsigned char dsm[];
    unsigned char *smem = dsm + ((1024 - (smem_u32(dsm) & 1023)) & 1023); // swizzle atoms aligned
    signed char *sa = (signed char *)smem, *sb = (signed char *)smem + ST * SA;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
    const int64_t M = p.N * p.OH * p.OW;
    const int64_t m0 = (int64_t)blockIdx.x * BM;
    const int n0 = blockIdx.y * BN;
    const int chunk = tid & 3; // this thread's 16-byte chunk of each row it loads
    const int KT = (int)((p.K + P * BK - 1) / (P * BK));
    const int Ki = (int)p.K, Ci = (int)p.C; // K < 2^31: checked by the launcher
    const bool xpad = p.x_u8 == PR_CU_X_U8B; // biased x: padding -128 stored (see load)

    // rows this thread gathers: image base and the top-left input tap
    int64_t abase[AP];
    int aih[AP], aiw[AP];
#pragma unroll
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

    // this thread's k = (r, s, c) of the next panel, advanced 64 bytes a panel
    // (panels load in order: no division in the loop)
    int kk = chunk * 16, kr = 0, ks = 0, kc = chunk * 16;
    while (kc >= Ci) {
        kc -= Ci;
        if (++ks == p.kw) ks = 0, kr++;
    }
    auto load = [&](int stage) {
#pragma unroll
        for (int pp = 0; pp < P; pp++) {
            bool kok = kk < Ki;
            signed char *A = sa + stage * SA + pp * BM * BK, *B = sb + stage * SB + pp * BN * BK;
#pragma unroll
            for (int i = 0; i < AP; i++) {
                int row = (tid >> 2) + i * (T / 4);
                int ih = aih[i] + kr * p.dh, iw = aiw[i] + ks * p.dw;
                bool ok = kok && ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
                const signed char *src =
                    ok ? x + abase[i] + ((int64_t)ih * p.W + iw) * p.C + kc : x;
                if (xpad && kok && !ok) // biased padding stored directly (cu_igemm.cu says why)
                    *(uint4 *)&A[swz(row, chunk)] =
                        make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
                else
                    cp16(smem_u32(&A[swz(row, chunk)]), src, ok);
            }
#pragma unroll
            for (int i = 0; i < BP; i++) {
                int row = (tid >> 2) + i * (T / 4);
                int n = n0 + row;
                bool ok = kok && n < p.Nout;
                const signed char *src = ok ? w + (int64_t)n * p.K + kk : w;
                cp16(smem_u32(&B[swz(row, chunk)]), src, ok);
            }
            kk += BK;
            kc += BK;
            while (kc >= Ci) {
                kc -= Ci;
                if (++ks == p.kw) ks = 0, kr++;
            }
        }
    };

    int acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; i++) acc[i] = 0;

    for (int s = 0; s < ST - 2; s++) {
        if (s < KT) load(s);
        cp_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        cp_wait<ST - 3>();
        fence_async_smem();
        __syncthreads();
        int nk = kt + ST - 2;
        if (nk < KT) load(nk % ST);
        cp_commit();
        const int st = kt % ST;
        uint32_t a = smem_u32(sa + st * SA + wg * 64 * BK), b = smem_u32(sb + st * SB);
#pragma unroll
        for (int i = 0; i < ACC; i++) reg_fence(acc[i]);
        wg_fence();
#pragma unroll
        for (int pp = 0; pp < P; pp++) {
            uint32_t ap = a + pp * BM * BK, bp = b + pp * BN * BK;
            wgmma<BN>::template run<U8>(acc, wg_desc(ap), wg_desc(bp));
            wgmma<BN>::template run<U8>(acc, wg_desc(ap + 32), wg_desc(bp + 32));
        }
        wg_commit();
        wg_wait<1>();
#pragma unroll
        for (int i = 0; i < ACC; i++) reg_fence(acc[i]);
    }
    wg_wait<0>();
#pragma unroll
    for (int i = 0; i < ACC; i++) reg_fence(acc[i]);
    cp_wait<0>();

    const int g = lane >> 2, t4 = lane & 3, wrow = warp * 16;
    if (FAST) {
        constexpr int SP = BN + 8; // padded stage row (floats): conflict-free float2 writes
        static_assert(BM * SP * 4 <= ST * (SA + SB), "stage fits");
        float *stage = (float *)smem;
        const bool pre = q.pre.kind == ACT_RELU;
        __syncthreads(); // every warp is past its last read of the pipeline's buffers
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            int nl = j * 8 + t4 * 2, n = n0 + nl;
            igemm_col2 cs = igemm_cols(q, n, n < p.Nout);
#pragma unroll
            for (int h = 0; h < 2; h++)
                *(float2 *)&stage[(wrow + g + h * 8) * SP + igemm_scol(nl)] =
                    igemm_pre(cs, acc[j * 4 + h * 2], acc[j * 4 + h * 2 + 1], pre);
        }
        __syncthreads();
        igemm_store_rows<BN, SP, T, BM>(q, stage, m0, n0, M, p.Nout, tid, nocvt);
    } else {
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            int n = n0 + j * 8 + t4 * 2;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int64_t m = m0 + wrow + g + h * 8;
                if (m >= M) continue;
                if (n < p.Nout) igemm_epi_general(&q, acc[j * 4 + h * 2], m, n);
                if (n + 1 < p.Nout) igemm_epi_general(&q, acc[j * 4 + h * 2 + 1], m, n + 1);
            }
        }
    }
#endif
}

template <int BN, int ST, int P, bool U8, bool FAST>
int launch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
           const pr_cu_qepi *q, dim3 grid) {
    constexpr int SMEM = smem_bytes<BN, ST, P>();
    auto k = k_igemm_wg<BN, ST, P, U8, FAST>;
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // not left behind for the next launch's check
        return (int)e;
    }
    k<<<grid, T, SMEM, s>>>((const signed char *)x, (const signed char *)w, *p, *q,
                            FAST && igemm_epi_nocvt());
    return launch_result();
}

template <int BN, int ST, int P>
int dispatch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
             const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    dim3 grid((unsigned)((M + BM - 1) / BM), (unsigned)((p->Nout + BN - 1) / BN));
    bool fast = igemm_fast_ok(q);
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return fast ? launch<BN, ST, P, true, true>(s, x, w, p, &q2, grid)
                    : launch<BN, ST, P, true, false>(s, x, w, p, &q2, grid);
    }
    return fast ? launch<BN, ST, P, false, true>(s, x, w, p, q, grid)
                : launch<BN, ST, P, false, false>(s, x, w, p, q, grid);
}

} // namespace

extern "C" int pr_cu_igemm_wg_s8(void *stream, const void *x, const void *w,
                                 const pr_cu_igemm *p, const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->C % 16 || p->K % 16 || ((uintptr_t)x & 15) || ((uintptr_t)w & 15) ||
        (p->N * p->H * p->W * p->C) >> 31 || p->K >> 30 || (M + BM - 1) / BM > 0x7fffffff)
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    // the warp-specialized forms (cu_igemm_ws.cu) of the 64-byte-stage tiles
    // unless PRECIS_CUDA_IGEMM_WS=0 (A/B; read at each launch)
    if (p->tile == PR_CU_IGEMM_WG128x128 || p->tile == PR_CU_IGEMM_WG128x256) {
        const char *e = getenv("PRECIS_CUDA_IGEMM_WS");
        if (!(e && !strcmp(e, "0"))) return pr_cu_igemm_ws_s8(stream, x, w, p, q);
    }
    switch (p->tile) {
    case PR_CU_IGEMM_WG128x128: return dispatch<128, 5, 1>(s, x, w, p, q);
    case PR_CU_IGEMM_WG128x256: return dispatch<256, 6, 1>(s, x, w, p, q);
    case PR_CU_IGEMM_WG128x128K: return dispatch<128, 3, 2>(s, x, w, p, q);
    case PR_CU_IGEMM_WG128x256K: return dispatch<256, 4, 2>(s, x, w, p, q);
    case PR_CU_IGEMM_WG128x64: return dispatch<64, 6, 1>(s, x, w, p, q);
    default: return (int)cudaErrorInvalidValue;
    }
}
#endif
