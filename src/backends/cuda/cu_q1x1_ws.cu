// The warp-specialized K-streamed 1x1 int8 convolution on Hopper (the QS
// tile of pr_cu_q1x1_s8, "q1x1 ws 128x128"): a block is 2 consumer
// warpgroups and one producer warp (288 threads, 224 registers a thread at
// most). The producer's lane 0 streams (M tile, 64-byte k chunk) steps into
// a ring of ST stages through TMA (cp.async.bulk.tensor; A [M][K] and the
// weights [Nout][K] as tiled maps with the 64-byte swizzle the wgmma
// descriptors read: chunk ^= (row >> 1) & 3), each stage's full barrier
// completing on the copies' bytes, its empty barrier on the consumer's 4
// warps. The block owns one 128-column tile and every gridDim.x-th M tile
// (persistent); its tiles alternate between the consumer warpgroups
// (ping-pong: tile t is warpgroup t & 1's, 128 x 128, two m64n128k32 wgmma
// a k32), so one warpgroup's epilogue (cu_q1x1.cuh's q1_epilogue on its own
// staging rows, a named barrier) runs during the other's MMAs. Order
// barriers (one a warpgroup, 4 warp arrivals a tile) start tile t's MMAs only
// once tile t - 1's have passed their waits: the ping-pong, and what keeps
// each full-barrier wait within one lap of the ring (a parity wait cannot
// tell phase n from n - 2: without it, at K >= 11 * 64 the second
// warpgroup's first wait passed on an unfilled stage). Up to two wgmma
// groups in flight a warpgroup: step s's issued, then step s - 1's waited
// for and its stage released. The residual tile is cp.async'd by the
// warpgroup at its tile's start, waited for before the epilogue.
//
// Stride 1 maps A as [M][C]; stride 2 (H == 2 OH, W >= 2 OW - 1) as a 3D
// map {C, OW, N * OH} with global strides 2 C and 2 W C bytes: a tile is R
// whole output rows (OW * R <= 128 rows, the rest of the 128 unused). The
// maps are encoded at each launch (host work only: cuTensorMapEncodeTiled
// through cudaGetDriverEntryPointByVersion) and passed as __grid_constant__.
// x int8 / biased uint8 (s8 form) or uint8 (u8 x s8, no acc_off): as
// cu_q1x1_wg.cu. Rows past M and k past K are the copies' zero fill.
//
// Built only for sm_90a (CMakeLists.txt: precis_sm90a); PRECIS_NO_SM90A
// builds a stub that refuses every call. PRECIS_CUDA_Q1X1WS=0 (cuda_qgemm.c)
// leaves the tile out of the timed choice.
#ifdef PRECIS_NO_SM90A
#include "backends/cuda/cu_common.cuh"

extern "C" int pr_cu_q1x1_ws_s8(void *stream, const void *x, const void *w,
                                const pr_cu_igemm *p, const pr_cu_qepi *q) {
    (void)stream, (void)x, (void)w, (void)p, (void)q;
    return (int)cudaErrorNotSupported;
}
#else
#include <cuda.h>

#include "backends/cuda/cu_q1x1.cuh"

using namespace prmma;
using namespace prq1;

#include "backends/cuda/cu_tma.cuh"
#include "backends/cuda/cu_wgmma.cuh"

namespace {

constexpr int BM = 128, BN = 128, BK = 64, T = 288, ST_MAX = 12;
constexpr int SA = BM * BK, SB = BN * BK, ZS = BN + 16;

// EPI as k_q1x1's; S2: the stride-2 3D map (R output rows of OW a tile);
// ST stages (chosen at launch)
template <bool U8, int EPI, bool S2>
__global__ void __launch_bounds__(T, 1)
    k_q1x1_ws(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb,
              pr_cu_igemm p, pr_cu_qepi q, int ST, int R) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr bool FAST = EPI > 0;
    extern __shared__ __align__(1024) unsigned char dsm[];
    unsigned char *smem = dsm + ((1024 - (smem_u32(dsm) & 1023)) & 1023);
    signed char *sa = (signed char *)smem, *sb = sa + ST * SA;
    unsigned char *sz = (unsigned char *)(sb + ST * SB); // 2 x [BM][ZS] (FAST)
    float *cs = (float *)(sz + (FAST ? 2 * BM * ZS : 0)); // scale [BN], bias [BN]
    int *co = (int *)(cs + 2 * BN);                       // acc_off [BN]
    uint64_t *bars = (uint64_t *)(co + BN); // full [ST], empty [ST], order [2]
    const uint32_t full0 = smem_u32(bars), empty0 = full0 + 8 * ST, ord0 = empty0 + 8 * ST;

    const int tid = threadIdx.x, warp = tid >> 5;
    const int64_t M = p.N * p.OH * p.OW;
    const int RB = S2 ? R * (int)p.OW : BM; // output rows a tile
    const int MT = S2 ? (int)((p.N * p.OH + R - 1) / R) : (int)((M + BM - 1) / BM);
    const int n0 = blockIdx.y * BN;
    const int KCH = (int)((p.K + BK - 1) / BK);
    const uint32_t bytes = (uint32_t)(RB + BN) * BK;

    const bool zu8 = q.z && q.zdt == DT_U8;
    const uint32_t zflip = q.z && !zu8 ? 0x80808080u : 0u;
    const float zc = 8388608.0f + (q.z && !zu8 && !q.z_bias ? 128.0f : 0.0f);
    const float ys = FAST ? q.y_inv : 1.0f;
    const float zs = q.z_scale * ys;
    q1_cols<BN, T>(cs, co, q, n0, p.Nout, ys);
    if (tid == 0) {
        for (int i = 0; i < ST; i++) {
            mbar_init(full0 + 8 * i, 1);
            mbar_init(empty0 + 8 * i, 4);
        }
        mbar_init(ord0, 4);
        mbar_init(ord0 + 8, 4);
        mbar_init_fence();
    }
    __syncthreads();

    const int first = blockIdx.x, step = gridDim.x;
    if (warp == 8) { // the producer
        if ((tid & 31) == 0) {
            tma_prefetch_map(&ma);
            tma_prefetch_map(&mb);
            int s = 0;
#pragma unroll 1
            for (int mt = first; mt < MT; mt += step)
#pragma unroll 1
                for (int kc = 0; kc < KCH; kc++, s++) {
                    const int buf = s % ST;
                    const uint32_t ph = (uint32_t)(s / ST) & 1;
                    mbar_wait(empty0 + 8 * buf, ph ^ 1);
                    const uint32_t fb = full0 + 8 * buf;
                    mbar_expect_tx(fb, bytes);
                    if (S2)
                        tma_3d(smem_u32(sa + buf * SA), &ma, kc * BK, 0, mt * R, fb);
                    else
                        tma_2d(smem_u32(sa + buf * SA), &ma, kc * BK, mt * BM, fb);
                    tma_2d(smem_u32(sb + buf * SB), &mb, kc * BK, n0, fb);
                }
        }
        return;
    }

    const int wg = warp >> 2, ltid = tid & 127;
    unsigned char *Z = sz + wg * BM * ZS;
    const bool post = q.post.kind == ACT_RELU || (EPI == 1 && q.pre.kind == ACT_RELU);
#pragma unroll 1
    for (int it = wg;; it += 2) {
        const int mt = first + it * step;
        if (mt >= MT) break;
        const int64_t m0 = (int64_t)mt * RB, Ml = M < m0 + RB ? M : m0 + RB;
        if (EPI >= 2) {
            q1_load_z<BM, BN, 128>(Z, q, m0, n0, Ml, p.Nout, ltid);
            cp_commit();
        }
        int acc[2][BN / 8][4];
        int *a0 = &acc[0][0][0], *a1 = &acc[1][0][0];
#pragma unroll
        for (int i = 0; i < BN; i++) a0[i] = 0;
        // the ping-pong order: this tile's MMAs after the other warpgroup's
        // for tile it - 1 (its phase (it - 1) / 2 of order[wg ^ 1]); also what
        // keeps every full-barrier wait within one ring lap of the producer
        if (it > 0) mbar_wait(ord0 + 8 * (wg ^ 1), (uint32_t)((it - 1) >> 1) & 1);
        int s = it * KCH;
#pragma unroll 1
        for (int kc = 0; kc < KCH; kc++, s++) {
            const int buf = s % ST;
            mbar_wait(full0 + 8 * buf, (uint32_t)(s / ST) & 1);
            const uint32_t a = smem_u32(sa + buf * SA), b = smem_u32(sb + buf * SB);
#pragma unroll
            for (int i = 0; i < BN; i++) reg_fence(a0[i]);
            wg_fence();
            wgmma<BN>::template run<U8>(a0, wg_desc(a), wg_desc(b));
            wgmma<BN>::template run<U8>(a1, wg_desc(a + 64 * BK), wg_desc(b));
            wgmma<BN>::template run<U8>(a0, wg_desc(a + 32), wg_desc(b + 32));
            wgmma<BN>::template run<U8>(a1, wg_desc(a + 64 * BK + 32), wg_desc(b + 32));
            wg_commit();
            wg_wait<1>();
#pragma unroll
            for (int i = 0; i < BN; i++) reg_fence(a0[i]);
            if (kc > 0 && (tid & 31) == 0) mbar_arrive(empty0 + 8 * ((s - 1) % ST));
        }
        if ((tid & 31) == 0) mbar_arrive(ord0 + 8 * wg); // this tile's waits passed
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < BN; i++) reg_fence(a0[i]);
        if ((tid & 31) == 0) mbar_arrive(empty0 + 8 * ((s - 1) % ST));
        if (EPI >= 2) {
            cp_wait<0>();
            named_sync(1 + wg, 128); // every thread's residual bytes landed
        }
        q1_epilogue<BM, BN, 4, 1, EPI, true>(acc, Z, cs, co, p, q, m0, n0, Ml, zflip, zc, zs,
                                             post, ltid, 1 + wg);
        if (FAST) named_sync(1 + wg, 128); // Z read out before the next tile's residual
    }
#endif
}

template <bool U8, int EPI, bool S2>
int launch_one(cudaStream_t s, const CUtensorMap &ma, const CUtensorMap &mb,
               const pr_cu_igemm *p, const pr_cu_qepi *q, int R) {
    auto smem_of = [&](int st) {
        return (size_t)1024 + (size_t)st * (SA + SB) + (EPI ? (size_t)2 * BM * ZS : 0) +
               (size_t)3 * BN * 4 + (size_t)16 * st + 16;
    };
    int dev = 0, sms = 0, optin = 0, occ = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)))
        return (int)e;
    int st = 0;
    for (int n = 2; n <= ST_MAX && smem_of(n) <= (size_t)optin; n++) st = n;
    if (!st) return (int)cudaErrorInvalidValue;
    size_t smem = smem_of(st);
    auto kern = k_q1x1_ws<U8, EPI, S2>;
    if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, T, smem))) {
        (void)cudaGetLastError(); // not left behind for the next launch's check
        return (int)e;
    }
    if (occ < 1) return (int)cudaErrorInvalidValue;
    int64_t MT = S2 ? (p->N * p->OH + R - 1) / R : (p->N * p->OH * p->OW + BM - 1) / BM;
    int gy = (int)((p->Nout + BN - 1) / BN);
    int64_t gx = (int64_t)occ * sms / gy;
    if (gx < 1) gx = 1;
    if (gx > MT) gx = MT;
    kern<<<dim3((unsigned)gx, (unsigned)gy), T, smem, s>>>(ma, mb, *p, *q, st, R);
    return launch_result();
}

template <bool U8, bool S2>
int launch_epi(cudaStream_t s, const CUtensorMap &ma, const CUtensorMap &mb,
               const pr_cu_igemm *p, const pr_cu_qepi *q, int R) {
    if (!q1x1_fast_ok(q)) return launch_one<U8, 0, S2>(s, ma, mb, p, q, R);
    if (!q->z) return launch_one<U8, 1, S2>(s, ma, mb, p, q, R);
    if (q->pre.kind != ACT_RELU) return launch_one<U8, 2, S2>(s, ma, mb, p, q, R);
    return launch_one<U8, 3, S2>(s, ma, mb, p, q, R);
}

template <bool U8>
int launch_u8(cudaStream_t s, const CUtensorMap &ma, const CUtensorMap &mb,
              const pr_cu_igemm *p, const pr_cu_qepi *q, int R) {
    return R ? launch_epi<U8, true>(s, ma, mb, p, q, R) : launch_epi<U8, false>(s, ma, mb, p, q, 0);
}

} // namespace

extern "C" int pr_cu_q1x1_ws_s8(void *stream, const void *x, const void *w,
                                const pr_cu_igemm *p, const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    const bool s1 = p->sh == 1 && p->sw == 1 && p->OH == p->H && p->OW == p->W;
    const bool s2 = p->sh == 2 && p->sw == 2 && p->H == 2 * p->OH && p->OW <= BM;
    if (p->kh != 1 || p->kw != 1 || p->ph || p->pw || p->C % 16 || p->K != p->C ||
        ((uintptr_t)x & 15) || ((uintptr_t)w & 15) || (p->N * p->H * p->W * p->C) >> 31 ||
        M >> 31 || (!s1 && !s2) || p->tile != PR_CU_IGEMM_QS128x128)
        return (int)cudaErrorInvalidValue;
    CUtensorMap ma, mb;
    const int R = s1 ? 0 : BM / (int)p->OW;
    const cuuint32_t bb[2] = {BK, BN};
    const cuuint64_t bd[2] = {(cuuint64_t)p->K, (cuuint64_t)p->Nout}, bs[1] = {(cuuint64_t)p->K};
    bool ok = tmap_encode(&mb, w, 2, bd, bs, bb, CU_TENSOR_MAP_SWIZZLE_64B);
    if (s1) {
        const cuuint32_t ab[2] = {BK, BM};
        const cuuint64_t ad[2] = {(cuuint64_t)p->C, (cuuint64_t)M}, as[1] = {(cuuint64_t)p->C};
        ok = ok && tmap_encode(&ma, x, 2, ad, as, ab, CU_TENSOR_MAP_SWIZZLE_64B);
    } else {
        const cuuint32_t ab[3] = {BK, (cuuint32_t)p->OW, (cuuint32_t)R};
        const cuuint64_t ad[3] = {(cuuint64_t)p->C, (cuuint64_t)p->OW,
                                  (cuuint64_t)(p->N * p->OH)},
                         as[2] = {(cuuint64_t)(2 * p->C), (cuuint64_t)(2 * p->W * p->C)};
        ok = ok && tmap_encode(&ma, x, 3, ad, as, ab, CU_TENSOR_MAP_SWIZZLE_64B);
    }
    if (!ok) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return launch_u8<true>(s, ma, mb, p, &q2, R);
    }
    return launch_u8<false>(s, ma, mb, p, q, R);
}
#endif
