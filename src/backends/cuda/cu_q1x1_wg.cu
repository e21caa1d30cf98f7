// The K-streamed 1x1 int8 convolution on Hopper's wgmma (the QW tiles of
// pr_cu_q1x1_s8): cu_q1x1.cu's k_q1x1k (persistent grid, a block one column
// tile and every gridDim.x-th M tile, k streamed with A through a flat ring
// of (M tile, k chunk) steps, cu_q1x1.cuh's bandwidth epilogue) with the
// MMAs of cu_igemm_wg.cu: a block is 2 warpgroups (BM 128, 64 rows each, all
// BN columns), both operands read from shared memory through K-major
// 64-byte-swizzle descriptors (rows of 64 bytes of k, chunk ^= (row >> 1) &
// 3 on 1024-byte-aligned stages: cu_mma.cuh's swz), P 64-byte panels a
// stage. ST stages, ST - 2 steps loaded ahead, one wgmma group in flight:
// the stage loaded at step s was last read by step s - 2's group, complete
// once every thread passed step s - 1's wait and step s's barrier
// (fence.proxy.async before it: cp.async writes, async-proxy reads).
// Residual / staging rows: 2 buffers as k_q1x1k's; tile t's residual is
// loaded with its last step, issued ST - 2 steps ahead, and its buffer was
// last read before step (t - 1) * KCH: ST <= 2 * KCH + 1 with a residual.
//
// A uint8 x runs the u8 x s8 form (no acc_off correction, exact); int8 and
// biased uint8 x the s8 form (a 1x1 has no padding: the zero-filled k tail
// and rows past M meet zero weights / are not stored). The accumulators are
// in the mma.sync C layout per warp (warp w: rows 16 w + lane / 4 (+8),
// columns 8 j + 2 (lane % 4) (+1)), so the epilogue is q1_epilogue with 8 x
// 1 warps. The wgmma wrappers are cu_wgmma.cuh's (shared with
// cu_igemm_wg.cu).
//
// Built only for sm_90a (CMakeLists.txt: the precis_sm90a object library);
// PRECIS_NO_SM90A (nvcc < 12) builds a stub that refuses every call.
#ifdef PRECIS_NO_SM90A
#include "backends/cuda/cu_common.cuh"

extern "C" int pr_cu_q1x1_wg_s8(void *stream, const void *x, const void *w,
                                const pr_cu_igemm *p, const pr_cu_qepi *q) {
    (void)stream, (void)x, (void)w, (void)p, (void)q;
    return (int)cudaErrorNotSupported;
}
#else
#include "backends/cuda/cu_q1x1.cuh"

using namespace prmma;
using namespace prq1;

#include "backends/cuda/cu_wgmma.cuh"

namespace {

constexpr int BM = 128, BK = 64, T = 256, ST_MAX = 7; // cp_wait_ring: 4 pending at most

// BN columns, P 64-byte panels of k a stage, U8: uint8 x (u8 x s8), EPI as
// k_q1x1's; ST stages (3..ST_MAX, the deepest that fits, chosen at launch).
template <int BN, int P, bool U8, int EPI>
__global__ void __launch_bounds__(T, 1)
    k_q1x1_wg(const signed char *__restrict__ x, const signed char *__restrict__ w,
              pr_cu_igemm p, pr_cu_qepi q, int ST) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int SA = P * BM * BK, SB = P * BN * BK, ZS = BN + 16, ACC = BN / 2, NJ = BN / 8;
    constexpr bool FAST = EPI > 0;
    extern __shared__ __align__(1024) unsigned char dsm[];
    unsigned char *smem = dsm + ((1024 - (smem_u32(dsm) & 1023)) & 1023); // swizzle atoms aligned
    signed char *sa = (signed char *)smem, *sb = sa + ST * SA;
    unsigned char *sz = (unsigned char *)(sb + ST * SB); // 2 x [BM][ZS] (FAST)
    float *cs = (float *)(sz + (FAST ? 2 * BM * ZS : 0)); // scale [BN], bias [BN]
    int *co = (int *)(cs + 2 * BN);                       // acc_off [BN]

    const int tid = threadIdx.x, wg = tid >> 7;
    const int64_t M = p.N * p.OH * p.OW;
    const int MT = (int)((M + BM - 1) / BM);
    const int n0 = blockIdx.y * BN;
    const int Ki = (int)p.K, KCH = (Ki + P * BK - 1) / (P * BK);
    const bool s1 = p.sh == 1 && p.sw == 1 && p.OH == p.H && p.OW == p.W;

    const bool zu8 = q.z && q.zdt == DT_U8;
    const uint32_t zflip = q.z && !zu8 ? 0x80808080u : 0u;
    const float zc = 8388608.0f + (q.z && !zu8 && !q.z_bias ? 128.0f : 0.0f);
    const float ys = FAST ? q.y_inv : 1.0f;
    const float zs = q.z_scale * ys;
    q1_cols<BN, T>(cs, co, q, n0, p.Nout, ys);

    const int first = blockIdx.x, step = gridDim.x;
    auto load = [&](int s) { // step s: chunk s % KCH of this block's M tile s / KCH
        const int t = s / KCH, kc = s - t * KCH, mt = first + t * step;
        if (mt >= MT) return;
        const int64_t m0 = (int64_t)mt * BM;
        const int buf = s % ST;
#pragma unroll
        for (int pp = 0; pp < P; pp++) {
            const int k0 = (kc * P + pp) * BK;
            signed char *A = sa + buf * SA + pp * BM * BK, *B = sb + buf * SB + pp * BN * BK;
            for (int idx = tid; idx < BM * 4; idx += T) {
                int row = idx >> 2, c = idx & 3;
                int64_t m = m0 + row;
                bool ok = m < M && k0 + c * 16 < Ki;
                cp16(smem_u32(&A[swz(row, c)]), ok ? x + q1_row(p, s1, m) + k0 + c * 16 : x, ok);
            }
            for (int idx = tid; idx < BN * 4; idx += T) {
                int row = idx >> 2, c = idx & 3, n = n0 + row;
                bool ok = n < p.Nout && k0 + c * 16 < Ki;
                cp16(smem_u32(&B[swz(row, c)]), ok ? w + (int64_t)n * Ki + k0 + c * 16 : w, ok);
            }
        }
        if (EPI >= 2 && kc == KCH - 1)
            q1_load_z<BM, BN, T>(sz + (t & 1) * BM * ZS, q, m0, n0, M, p.Nout);
    };

    for (int s = 0; s < ST - 2; s++) {
        load(s);
        cp_commit();
    }
    const bool post = q.post.kind == ACT_RELU || (EPI == 1 && q.pre.kind == ACT_RELU);
    int s = 0;
#pragma unroll 1
    for (int it = 0;; it++) {
        const int mt = first + it * step;
        if (mt >= MT) break;
        int acc[1][NJ][4];
        int *a1 = &acc[0][0][0];
#pragma unroll
        for (int i = 0; i < ACC; i++) a1[i] = 0;
#pragma unroll 1
        for (int kc = 0; kc < KCH; kc++, s++) {
            cp_wait_ring(ST - 1); // at most ST - 3 groups pending: step s landed
            fence_async_smem();
            __syncthreads(); // every thread's copies of step s; step s - 2's group done
            load(s + ST - 2);
            cp_commit();
            const int buf = s % ST;
            const uint32_t a = smem_u32(sa + buf * SA + wg * 64 * BK), b = smem_u32(sb + buf * SB);
#pragma unroll
            for (int i = 0; i < ACC; i++) reg_fence(a1[i]);
            wg_fence();
#pragma unroll
            for (int pp = 0; pp < P; pp++) {
                uint32_t ap = a + pp * BM * BK, bp = b + pp * BN * BK;
                wgmma<BN>::template run<U8>(a1, wg_desc(ap), wg_desc(bp));
                wgmma<BN>::template run<U8>(a1, wg_desc(ap + 32), wg_desc(bp + 32));
            }
            wg_commit();
            wg_wait<1>();
#pragma unroll
            for (int i = 0; i < ACC; i++) reg_fence(a1[i]);
        }
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC; i++) reg_fence(a1[i]);
        q1_epilogue<BM, BN, 8, 1, EPI>(acc, sz + (it & 1) * BM * ZS, cs, co, p, q,
                                       (int64_t)mt * BM, n0, M, zflip, zc, zs, post);
    }
    cp_wait<0>();
#endif
}

template <int BN, int P, bool U8, int EPI>
int launch_one(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
               const pr_cu_qepi *q) {
    auto smem_of = [&](int st) {
        return (size_t)1024 + (size_t)st * P * (BM + BN) * BK +
               (EPI ? (size_t)2 * BM * (BN + 16) : 0) + (size_t)3 * BN * 4;
    };
    int dev = 0, sms = 0, optin = 0, occ = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)))
        return (int)e;
    const int kch = (int)((p->K + P * BK - 1) / (P * BK));
    const int cap = EPI >= 2 && 2 * kch + 1 < ST_MAX ? 2 * kch + 1 : ST_MAX;
    int st = 0;
    for (int n = 3; n <= cap && smem_of(n) <= (size_t)optin; n++) st = n;
    if (!st) return (int)cudaErrorInvalidValue;
    size_t smem = smem_of(st);
    auto kern = k_q1x1_wg<BN, P, U8, EPI>;
    if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, T, smem))) {
        (void)cudaGetLastError(); // not left behind for the next launch's check
        return (int)e;
    }
    if (occ < 1) return (int)cudaErrorInvalidValue;
    int64_t M = p->N * p->OH * p->OW, MT = (M + BM - 1) / BM;
    int gy = (int)((p->Nout + BN - 1) / BN);
    int64_t gx = (int64_t)occ * sms / gy;
    if (gx < 1) gx = 1;
    if (gx > MT) gx = MT;
    kern<<<dim3((unsigned)gx, (unsigned)gy), T, smem, s>>>((const signed char *)x,
                                                          (const signed char *)w, *p, *q, st);
    return launch_result();
}

template <int BN, int P, bool U8>
int launch_epi(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
               const pr_cu_qepi *q) {
    if (!q1x1_fast_ok(q)) return launch_one<BN, P, U8, 0>(s, x, w, p, q);
    if (!q->z) return launch_one<BN, P, U8, 1>(s, x, w, p, q);
    if (q->pre.kind != ACT_RELU) return launch_one<BN, P, U8, 2>(s, x, w, p, q);
    return launch_one<BN, P, U8, 3>(s, x, w, p, q);
}

template <int BN, int P>
int launch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
           const pr_cu_qepi *q) {
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return launch_epi<BN, P, true>(s, x, w, p, &q2);
    }
    return launch_epi<BN, P, false>(s, x, w, p, q);
}

} // namespace

extern "C" int pr_cu_q1x1_wg_s8(void *stream, const void *x, const void *w,
                                const pr_cu_igemm *p, const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->kh != 1 || p->kw != 1 || p->ph || p->pw || p->C % 16 || p->K != p->C ||
        ((uintptr_t)x & 15) || ((uintptr_t)w & 15) || (p->N * p->H * p->W * p->C) >> 31 ||
        p->K > 4096 || M >> 31)
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    switch (p->tile) {
    case PR_CU_IGEMM_QW128x256: return launch<256, 1>(s, x, w, p, q);
    case PR_CU_IGEMM_QW128x128: return launch<128, 2>(s, x, w, p, q);
    default: return (int)cudaErrorInvalidValue;
    }
}
#endif
