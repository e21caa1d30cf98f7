// The small-K streaming 1x1 int8 convolution on Hopper (the QT tile of
// pr_cu_q1x1_s8, "q1x1 st 128x256"): for the 1x1s whose bytes dwarf their
// MMAs (ResNet-50's K 64..256 convs with a residual: each output byte needs
// K / 2 MACs or fewer), where the k-streamed ws tile (cu_q1x1_ws.cu) spends
// its time waiting on its residual loads and its stores.
//
// A persistent block (one an SM, 288 threads: 2 consumer warpgroups + 1
// producer warp) owns a 256-column block n0 and every gridDim.x-th M tile of
// BM rows (64 or 128):
// - the weights [256][K] (K <= 256) land once in shared memory by TMA (64-byte
//   swizzle, k64 chunks: the wgmma descriptors' layout) and stay;
// - the producer's lane 0 streams each tile's A [BM][K] (k64 boxes, 64-byte
//   swizzle) AND its residual [BM][256] (two 128-column boxes, 128-byte
//   swizzle) by TMA into a ring of ST stages, full (expect-tx) / empty
//   mbarriers, ST - 2 tiles ahead of the consumers;
// - both consumer warpgroups take every tile, warpgroup w columns 128 w ..
//   128 w + 127 (m64n128k32 wgmma, MI = BM / 64 row blocks, 64 MI
//   accumulators a thread), then requantize (cu_q1x1.cu's fast epilogue:
//   per-channel scale and bias, residual int8 / uint8 / biased, ReLU before
//   or after, int8 / uint8 / biased storage) into the stage's residual
//   bytes in place, fence.proxy.async, a named barrier, and one thread stores
//   the 128-column half by a TMA bulk tensor store (clipped at M and Nout);
//   the stage goes back to the producer once that store has read it
//   (cp.async.bulk.wait_group.read, one tile later: no warp waits on a
//   store that was just issued).
// The 128-byte swizzle of the residual / output boxes makes the epilogue's
// 2-byte accesses (8 rows x 8 bytes a warp) conflict-free.
//
// Each consumer waits on every stage in tile order (a warpgroup whose
// column half lies past Nout leaves at once; the empty barriers count the
// active ones), so a full-barrier parity wait is never a lap ahead: the fill
// a lap earlier is one this warpgroup already consumed.
//
// Stride 1 only, K % 16 == 0, K <= 256; the fast epilogue only (float / NCHW
// y, other activations: cudaErrorInvalidValue, the timed choice skips it).
// x int8 / biased uint8 (s8 form) or uint8 (u8 x s8, no acc_off). Rows past
// M and k past K are the copies' zero fill. BM: 128 for K <= 128, else 64
// (the ring stays >= 4 stages deep). Measurement knobs: PRECIS_CUDA_Q1X1ST_F=1
// / 2 / 3 forces BM 64 / BM 128 / BM 128 on 4 consumer warpgroups (each 64
// rows x 128 columns: twice the warps in flight, 64 accumulators a thread);
// PRECIS_CUDA_Q1X1ST_NS=n the ring depth; PRECIS_CUDA_Q1X1ST_GX=n caps the
// blocks a column block (the tests: the ring laps many times on small tensors).
//
// Built only for sm_90a (CMakeLists.txt: precis_sm90a); PRECIS_NO_SM90A
// builds a stub that refuses every call. PRECIS_CUDA_Q1X1ST=0 (cuda_qgemm.c)
// leaves the tile out of the timed choice.
#ifdef PRECIS_NO_SM90A
#include "backends/cuda/cu_common.cuh"

extern "C" int pr_cu_q1x1_st_s8(void *stream, const void *x, const void *w,
                                const pr_cu_igemm *p, const pr_cu_qepi *q) {
    (void)stream, (void)x, (void)w, (void)p, (void)q;
    return (int)cudaErrorNotSupported;
}
#else
#include <stdlib.h>

#include "backends/cuda/cu_q1x1.cuh"

using namespace prmma;
using namespace prq1;

#include "backends/cuda/cu_tma.cuh"
#include "backends/cuda/cu_wgmma.cuh"

namespace {

constexpr int BNB = 256, WN = 128, BK = 64, ST_MAX = 8, KMAX = 256;
constexpr int SW = BNB * BK; // a k64 chunk of the resident weights

// The fast epilogue (cu_q1x1.cuh's q1_epilogue, EPI 1..3) of a warpgroup's
// 64 MI x 128 accumulators into Z, its 128-byte-swizzled [64 MI][128] half of
// the stage (the residual's bytes for EPI >= 2, read first, in place); cs /
// co its columns' scale, bias (at + BNB) and acc_off.
template <int MI, int EPI>
__device__ __forceinline__ void st_epilogue(int (&acc)[MI][WN / 8][4], unsigned char *Z,
                                            const float *cs, const int *co, const pr_cu_qepi &q,
                                            uint32_t zflip, float zc, float zs, bool post,
                                            int ltid) {
    const int lane = ltid & 31, wm = ltid >> 5, g = lane >> 2, t4 = lane & 3;
    const bool u8y = q.ydt == DT_U8;
    const float lo = u8y || post ? 0.0f : -128.0f, hi = u8y ? 255.0f : 127.0f;
    const uint32_t yflip = q.y_bias ? 0x8080u : 0u;
#pragma unroll
    for (int j = 0; j < WN / 8; j++) {
        const int nl = j * 8 + t4 * 2;
        const float2 sc = *(const float2 *)&cs[nl], bi = *(const float2 *)&cs[BNB + nl];
        const int2 of = *(const int2 *)&co[nl];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = i * 64 + wm * 16 + g + h * 8;
                q1_pair<EPI>((unsigned short *)&Z[row * 128 + ((((nl >> 4) ^ (row & 7)) << 4) |
                                                               (nl & 15))],
                             acc[i][j][h * 2], acc[i][j][h * 2 + 1], of, sc, bi, zflip, zc, zs,
                             lo, hi, yflip);
            }
    }
}

// maps: ma A [M][C] (box {64, BM}), mb the weights [Nout][K] (box {64, 256}),
// mz the residual (box {128, BM}) and my the output (box {128, 64 MI}) [M][Nout]
// of row stride q.N, 128-byte swizzle; ST stages. NWG consumer warpgroups:
// 2 (warpgroup w: columns 128 w.., all BM = 64 MI rows) or 4 (warpgroup w:
// columns 128 (w & 1).., rows 64 MI (w >> 1).. of BM = 128 MI)
template <bool U8, int EPI, int MI, int NWG>
__global__ void __launch_bounds__(32 + 128 * NWG, 1)
    k_q1x1_st(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb,
              const __grid_constant__ CUtensorMap mz, const __grid_constant__ CUtensorMap my,
              pr_cu_igemm p, pr_cu_qepi q, int ST) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int T = 32 + 128 * NWG, RW = 64 * MI, BM = RW * NWG / 2, SA = BM * BK, SZ = BM * WN;
    extern __shared__ __align__(1024) unsigned char dsm[];
    unsigned char *smem = dsm + ((1024 - (smem_u32(dsm) & 1023)) & 1023);
    const int KCH = (int)((p.K + BK - 1) / BK);
    const int SS = KCH * SA + 2 * SZ; // a stage: A chunks, then the two Z halves
    unsigned char *sw = smem, *sst = smem + KCH * SW;
    float *cs = (float *)(sst + ST * SS); // scale [BNB], bias [BNB]
    int *co = (int *)(cs + 2 * BNB);      // acc_off [BNB]
    uint64_t *bars = (uint64_t *)(co + BNB); // full [ST], empty [ST], weights
    const uint32_t full0 = smem_u32(bars), empty0 = full0 + 8 * ST, wbar = empty0 + 8 * ST;

    const int tid = threadIdx.x, warp = tid >> 5;
    const int64_t M = p.N * p.OH * p.OW;
    const int MT = (int)((M + BM - 1) / BM);
    const int n0 = blockIdx.y * BNB;
    const int halves = n0 + WN < p.Nout ? 2 : 1; // consumer warpgroups with columns

    const bool zu8 = q.z && q.zdt == DT_U8;
    const uint32_t zflip = q.z && !zu8 ? 0x80808080u : 0u;
    const float zc = 8388608.0f + (q.z && !zu8 && !q.z_bias ? 128.0f : 0.0f);
    const float ys = q.y_inv, zs = q.z_scale * ys;
    q1_cols<BNB, T>(cs, co, q, n0, p.Nout, ys);
    if (tid == 0) {
        for (int i = 0; i < ST; i++) {
            mbar_init(full0 + 8 * i, 1);
            mbar_init(empty0 + 8 * i, (uint32_t)(halves * NWG / 2));
        }
        mbar_init(wbar, 1);
        mbar_init_fence();
    }
    __syncthreads();

    const int first = blockIdx.x, step = gridDim.x;
    if (warp == 4 * NWG) { // the producer
        if ((tid & 31) == 0) {
            tma_prefetch_map(&ma);
            tma_prefetch_map(&mb);
            if (EPI >= 2) tma_prefetch_map(&mz);
            mbar_expect_tx(wbar, (uint32_t)(KCH * SW));
            for (int kc = 0; kc < KCH; kc++)
                tma_2d(smem_u32(sw + kc * SW), &mb, kc * BK, n0, wbar);
            const uint32_t bytes = (uint32_t)(KCH * SA + (EPI >= 2 ? halves * SZ : 0));
            int j = 0;
#pragma unroll 1
            for (int mt = first; mt < MT; mt += step, j++) {
                const int buf = j % ST;
                mbar_wait(empty0 + 8 * buf, ((uint32_t)(j / ST) & 1) ^ 1);
                const uint32_t fb = full0 + 8 * buf;
                unsigned char *st = sst + buf * SS;
                mbar_expect_tx(fb, bytes);
                for (int kc = 0; kc < KCH; kc++)
                    tma_2d(smem_u32(st + kc * SA), &ma, kc * BK, mt * BM, fb);
                if (EPI >= 2)
                    for (int h = 0; h < halves; h++)
                        tma_2d(smem_u32(st + KCH * SA + h * SZ), &mz, n0 + h * WN, mt * BM, fb);
            }
        }
        return;
    }

    const int wg = warp >> 2, ltid = tid & 127, ch = wg & 1, r0 = (wg >> 1) * RW;
    if (ch >= halves) return; // columns past Nout: nothing to do
    const bool post = q.post.kind == ACT_RELU || (EPI == 1 && q.pre.kind == ACT_RELU);
    const float *wcs = cs + ch * WN;
    const int *wco = co + ch * WN;
    mbar_wait(wbar, 0);
    int j = 0;
#pragma unroll 1
    for (int mt = first; mt < MT; mt += step, j++) {
        const int buf = j % ST;
        unsigned char *st = sst + buf * SS;
        mbar_wait(full0 + 8 * buf, (uint32_t)(j / ST) & 1);
        int acc[MI][WN / 8][4];
        int *a0 = &acc[0][0][0];
#pragma unroll
        for (int i = 0; i < MI * WN / 2; i++) a0[i] = 0;
#pragma unroll 1
        for (int kc = 0; kc < KCH; kc++) {
            const uint32_t a = smem_u32(st + kc * SA) + r0 * BK,
                           b = smem_u32(sw + kc * SW) + ch * WN * BK;
#pragma unroll
            for (int i = 0; i < MI * WN / 2; i++) reg_fence(a0[i]);
            wg_fence();
#pragma unroll
            for (int i = 0; i < MI; i++) {
                wgmma<WN>::template run<U8>(&acc[i][0][0], wg_desc(a + i * 64 * BK), wg_desc(b));
                wgmma<WN>::template run<U8>(&acc[i][0][0], wg_desc(a + i * 64 * BK + 32),
                                            wg_desc(b + 32));
            }
            wg_commit();
        }
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < MI * WN / 2; i++) reg_fence(a0[i]);
        unsigned char *Z = st + KCH * SA + ch * SZ + r0 * WN;
        st_epilogue<MI, EPI>(acc, Z, wcs, wco, q, zflip, zc, zs, post, ltid);
        fence_async_smem(); // the bytes, for the copy engine's read
        named_sync(1 + wg, 128);
        if (ltid == 0) {
            tma_store_2d(&my, smem_u32(Z), n0 + ch * WN, mt * BM + r0);
            bulk_commit();
            bulk_wait_read<1>(); // the previous tile's store has read its stage
            if (j > 0) mbar_arrive(empty0 + 8 * ((j - 1) % ST));
        }
    }
    if (ltid == 0) bulk_wait<0>();
#endif
}

int env_int(const char *name) {
    const char *e = getenv(name);
    return e ? atoi(e) : 0;
}

template <bool U8, int EPI, int MI, int NWG>
int launch_one(cudaStream_t s, const CUtensorMap *m, const pr_cu_igemm *p, const pr_cu_qepi *q,
               int ns) {
    constexpr int BM = 64 * MI * NWG / 2, T = 32 + 128 * NWG;
    const int KCH = (int)((p->K + BK - 1) / BK);
    const size_t SS = (size_t)KCH * BM * BK + (size_t)2 * BM * WN;
    auto smem_of = [&](int st) {
        return (size_t)1024 + (size_t)KCH * SW + (size_t)st * SS + (size_t)3 * BNB * 4 +
               (size_t)16 * st + 16;
    };
    int dev = 0, sms = 0, optin = 0, occ = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)))
        return (int)e;
    int st = 0;
    for (int n = 3; n <= ST_MAX && smem_of(n) <= (size_t)optin; n++) st = n;
    if (ns >= 3 && ns < st) st = ns;
    if (!st) return (int)cudaErrorInvalidValue;
    size_t smem = smem_of(st);
    auto kern = k_q1x1_st<U8, EPI, MI, NWG>;
    if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, T, smem))) {
        (void)cudaGetLastError(); // not left behind for the next launch's check
        return (int)e;
    }
    if (occ < 1) return (int)cudaErrorInvalidValue;
    int64_t MT = (p->N * p->OH * p->OW + BM - 1) / BM;
    int gy = (int)((p->Nout + BNB - 1) / BNB);
    int64_t gx = (int64_t)occ * sms / gy;
    if (gx < 1) gx = 1;
    if (gx > MT) gx = MT;
    const int cap = env_int("PRECIS_CUDA_Q1X1ST_GX"); // tests: many tiles a block
    if (cap > 0 && gx > cap) gx = cap;
    kern<<<dim3((unsigned)gx, (unsigned)gy), T, smem, s>>>(m[0], m[1], m[2], m[3], *p, *q, st);
    return launch_result();
}

template <bool U8, int MI, int NWG>
int launch_epi(cudaStream_t s, const CUtensorMap *m, const pr_cu_igemm *p, const pr_cu_qepi *q,
               int ns) {
    if (!q->z) return launch_one<U8, 1, MI, NWG>(s, m, p, q, ns);
    if (q->pre.kind != ACT_RELU) return launch_one<U8, 2, MI, NWG>(s, m, p, q, ns);
    return launch_one<U8, 3, MI, NWG>(s, m, p, q, ns);
}

// form f: 1 BM 64, 2 warpgroups; 2 BM 128, 2 warpgroups; 3 BM 128, 4 warpgroups
template <bool U8>
int launch_u8(cudaStream_t s, const CUtensorMap *m, const pr_cu_igemm *p, const pr_cu_qepi *q,
              int f, int ns) {
    return f == 3   ? launch_epi<U8, 1, 4>(s, m, p, q, ns)
           : f == 2 ? launch_epi<U8, 2, 2>(s, m, p, q, ns)
                    : launch_epi<U8, 1, 2>(s, m, p, q, ns);
}

} // namespace

extern "C" int pr_cu_q1x1_st_s8(void *stream, const void *x, const void *w,
                                const pr_cu_igemm *p, const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->kh != 1 || p->kw != 1 || p->ph || p->pw || p->C % 16 || p->K != p->C ||
        p->K > KMAX || ((uintptr_t)x & 15) || ((uintptr_t)w & 15) ||
        (p->N * p->H * p->W * p->C) >> 31 || M >> 31 || p->sh != 1 || p->sw != 1 ||
        p->OH != p->H || p->OW != p->W || p->tile != PR_CU_IGEMM_QT128x256 ||
        !q1x1_fast_ok(q))
        return (int)cudaErrorInvalidValue;
    int f = env_int("PRECIS_CUDA_Q1X1ST_F");
    if (f < 1 || f > 3) f = p->K <= 128 ? 2 : 1;
    const int bm = f == 1 ? 64 : 128, rw = f == 2 ? 128 : 64; // tile rows, a store's rows
    const int ns = env_int("PRECIS_CUDA_Q1X1ST_NS");
    CUtensorMap m[4]; // A, weights, residual, y
    const cuuint32_t ab[2] = {BK, (cuuint32_t)bm}, bb[2] = {BK, BNB}, zb[2] = {WN, (cuuint32_t)bm},
                     yb[2] = {WN, (cuuint32_t)rw};
    const cuuint64_t ad[2] = {(cuuint64_t)p->C, (cuuint64_t)M}, as[1] = {(cuuint64_t)p->C};
    const cuuint64_t bd[2] = {(cuuint64_t)p->K, (cuuint64_t)p->Nout}, bs[1] = {(cuuint64_t)p->K};
    const cuuint64_t yd[2] = {(cuuint64_t)p->Nout, (cuuint64_t)M}, ys[1] = {(cuuint64_t)q->N};
    bool ok = tmap_encode(&m[0], x, 2, ad, as, ab, CU_TENSOR_MAP_SWIZZLE_64B) &&
              tmap_encode(&m[1], w, 2, bd, bs, bb, CU_TENSOR_MAP_SWIZZLE_64B) &&
              tmap_encode(&m[3], q->y, 2, yd, ys, yb, CU_TENSOR_MAP_SWIZZLE_128B);
    if (q->z) ok = ok && tmap_encode(&m[2], q->z, 2, yd, ys, zb, CU_TENSOR_MAP_SWIZZLE_128B);
    else m[2] = m[3]; // unused
    if (!ok) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return launch_u8<true>(s, m, p, &q2, f, ns);
    }
    return launch_u8<false>(s, m, p, q, f, ns);
}
#endif
