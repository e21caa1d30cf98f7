// Warp-specialized implicit-GEMM int8 convolution on Hopper's wgmma: the
// contract of cu_igemm_wg.cu (NHWC x int8, uint8 or biased uint8, C % 16 ==
// 0; w packed [Nout][K], k = (r, s, c); pr_cu_qepi epilogue), with the loads
// taken off the MMA warps. A block = BM / 64 consumer warpgroups (each 64
// rows of the BM-row M tile, all BN columns: wgmma from shared memory, then
// the epilogue) + PW producer warps (the im2col gather and the weight rows
// by cp.async into a ring of ST stages of 64 bytes of k, the same
// 64-byte-swizzled rows as cu_igemm_wg.cu).
//
// Per stage s two mbarriers (cu_tma.cuh): full[s] (one arrival a producer
// thread once its cp.async group of that stage completed, after
// fence.proxy.async: the wgmma reads through the async proxy) and empty[s]
// (lane 0 of each consumer warp once the wgmma group that read the stage
// completed). The producer keeps LAG = ST - 3 cp.async groups in flight
// beyond the one it waits for, so a consumer's release of stage kt - 2 is
// never on the path of full[kt]. No block-wide barrier in the k loop; the
// consumers keep one wgmma group in flight while waiting for the next stage.
// BM 128 with a producer warpgroup: setmaxnreg gives the producer PREG
// registers and the consumers the rest. The row setup is 32-bit (the
// launcher refuses x, w or M of 2^31).
//
// The epilogue is cu_igemm_epi.cuh's: staged over the ring once every stage
// was consumed (a named barrier over the consumer threads; the producer has
// exited by then), or, persistent (PS), in its own buffer while the producer
// already fills the ring with the block's next tile.
//
// Forms (pr_cu_igemm_wg_s8 calls pr_cu_igemm_ws_s8 for the tiles
// PR_CU_IGEMM_WG128x128 and WG128x256 unless PRECIS_CUDA_IGEMM_WS=0, the A/B
// switch giving back the cu_igemm_wg.cu forms): WG128x128 -> by default the
// ping-pong form (PP below, phase 19w: 128 x 128 tiles where Nout > 64, else
// 128 x 64; a producer warpgroup, setmaxnreg 56 / 224, one persistent block
// an SM, a ring of 9 / 12 stages); PRECIS_CUDA_IGEMM_WS=1 phase 18w's BM 128
// x BN 128 (2 producer warps, 2 blocks an SM) where Nout > 64, else BM 128 x
// BN 64 (2 producer warps, 3 blocks an SM); WG128x256 -> BM 128 x BN 256
// (producer warpgroup, setmaxnreg 56 / 224, 1 block an SM). PRECIS_CUDA_IGEMM_WS=2
// (experiment, timed slower) runs WG128x128 as BM 256 x BN 128 (4 consumer +
// 1 producer warpgroups, 1 block an SM) / BN 64 persistent (its own
// staged-rows buffer, 2 blocks an SM). sm_90a only.
//
// Phase 20w: the tile PR_CU_IGEMM_TI128x128 (pr_cu_igemm_ti_s8, k_igemm_ti
// below): PP's consumers fed by TMA -- A by the im2col form of the copy
// (cu_igemm_ti.cuh), the weights by a tiled map -- one producer lane, and
// for biased uint8 x three warps rewriting the padding rows. Its own timed
// candidate (cuda_qgemm.c; PRECIS_CUDA_IGEMM_TI=0 leaves it out).
#ifdef PRECIS_NO_SM90A
#include "backends/cuda/cu_common.cuh"

extern "C" int pr_cu_igemm_ws_s8(void *stream, const void *x, const void *w,
                                 const pr_cu_igemm *p, const pr_cu_qepi *q) {
    (void)stream, (void)x, (void)w, (void)p, (void)q;
    return (int)cudaErrorNotSupported;
}
extern "C" int pr_cu_igemm_ti_s8(void *stream, const void *x, const void *w,
                                 const pr_cu_igemm *p, const pr_cu_qepi *q) {
    (void)stream, (void)x, (void)w, (void)p, (void)q;
    return (int)cudaErrorNotSupported;
}
#else
#include "backends/cuda/cu_igemm_epi.cuh"
#include "backends/cuda/cu_mma.cuh"

using namespace prmma;

#include "backends/cuda/cu_igemm_ti.cuh"
#include "backends/cuda/cu_tma.cuh"
#include "backends/cuda/cu_wgmma.cuh"

namespace {

constexpr int BK = ROW_BYTES;

// BM rows a tile: BM / 64 consumer warpgroups (2 BM threads), each 64 rows x BN
template <int BM, int BN, int ST> __host__ __device__ constexpr int ring_bytes() {
    return ST * (BM + BN) * BK;
}
// the epilogue's staged rows (floats; padded: conflict-free float2 writes)
template <int BM, int BN> __host__ __device__ constexpr int stage_bytes() {
    return BM * (BN + 8) * 4;
}
// PS (persistent): the staged rows get their own buffer (the ring is being
// refilled with the next tile meanwhile); else they reuse the ring
// PP (ping-pong): each consumer warpgroup its own staged rows, 128 x PCW
// floats (the epilogue in column passes of PCW)
template <int BN> __host__ __device__ constexpr int pp_cw() { return BN < 64 ? BN : 64; }
template <int BN, int RM = 128> __host__ __device__ constexpr int pp_stage_bytes() {
    return RM * (pp_cw<BN>() + 8) * 4;
}
template <int BM, int BN, bool PS, bool PP> __host__ __device__ constexpr int stage_all() {
    return PP ? 2 * pp_stage_bytes<BN, BM>() : PS ? stage_bytes<BM, BN>() : 0;
}
// + the barriers: full[ST], empty[ST], order[2] (PP)
template <int BM, int BN, int ST, bool PS, bool PP> constexpr int smem_bytes() {
    return ring_bytes<BM, BN, ST>() + stage_all<BM, BN, PS, PP>() + 2 * ST * 8 + 16 + 1024;
}
static_assert(smem_bytes<128, 128, 9, true, true>() <= 232448 &&
                  smem_bytes<128, 64, 12, true, true>() <= 232448,
              "ping-pong forms fit in 227 KB");
// PW producer warps; with a whole producer warpgroup and BM 128 (RR) the
// registers a thread: the cap at entry (65536 / (threads * MINB), multiple
// of 8) and the consumers' share after the producer drops to PREG
constexpr int PREG = 56;
template <int BM, int PW, int MINB> __host__ __device__ constexpr int consumer_regs() {
    return (((65536 / ((2 * BM + 32 * PW) * MINB)) & ~7) * (2 * BM + 32 * PW) - PREG * 32 * PW) /
               (2 * BM) & ~7;
}

// PP's consumer warpgroups (see k_igemm_ws): tiles i of this block (t =
// blockIdx.x + i gridDim.x) with i % 2 == wg; RM rows a tile (128: two m64
// wgmma a k32 step; 64: one, TI's 64 x 256 tiles)
template <int BN, int ST, bool U8, bool FAST, int RM = 128>
__device__ __forceinline__ void pp_consumer(const signed char *sa, const signed char *sb,
                                            unsigned char *stg, uint32_t full0, uint32_t empty0,
                                            uint32_t order0, const pr_cu_igemm &p,
                                            const pr_cu_qepi &q, bool nocvt, int Mi, int tn,
                                            int ntiles, int KT) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int SA = RM * BK, SB = BN * BK, ACC = BN / 2, CW = pp_cw<BN>(), SP = CW + 8;
    constexpr bool TWO = RM == 128;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wg = warp >> 2, ltid = tid & 127, gq = lane >> 2, t4 = lane & 3,
              wrow = (warp & 3) * 16;
    float *stage = (float *)(stg + wg * pp_stage_bytes<BN, RM>());
    int g = 0, i = 0; // k steps of the block's tiles before this one; the tile's index
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x, i++, g += KT) {
        if ((i & 1) != wg) continue;
        const int m0 = t / tn * RM, n0 = t % tn * BN;
        int acc0[ACC], acc1[ACC];
#pragma unroll
        for (int j = 0; j < ACC; j++) acc0[j] = acc1[j] = 0;
        if (i > 0) mbar_wait(order0 + wg * 8, ((i - 1) >> 1) & 1); // tile i - 1 all filled
        for (int kt = 0; kt < KT; kt++) {
            const int gs = g + kt, st = gs % ST;
            mbar_wait(full0 + st * 8, (gs / ST) & 1);
            __syncwarp(); // converged for the .aligned wgmma instructions
            uint32_t a = smem_u32(sa + st * SA), b = smem_u32(sb + st * SB);
#pragma unroll
            for (int j = 0; j < ACC; j++) {
                reg_fence(acc0[j]);
                if (TWO) reg_fence(acc1[j]);
            }
            wg_fence();
            wgmma<BN>::template run<U8>(acc0, wg_desc(a), wg_desc(b));
            wgmma<BN>::template run<U8>(acc0, wg_desc(a + 32), wg_desc(b + 32));
            if (TWO) {
                wgmma<BN>::template run<U8>(acc1, wg_desc(a + 64 * BK), wg_desc(b));
                wgmma<BN>::template run<U8>(acc1, wg_desc(a + 64 * BK + 32), wg_desc(b + 32));
            }
            wg_commit();
            wg_wait<1>();
#pragma unroll
            for (int j = 0; j < ACC; j++) {
                reg_fence(acc0[j]);
                if (TWO) reg_fence(acc1[j]);
            }
            if (kt > 0 && lane == 0) mbar_arrive(empty0 + ((gs - 1) % ST) * 8);
        }
        if (lane == 0) mbar_arrive(order0 + (wg ^ 1) * 8); // the other may start tile i + 1
        wg_wait<0>();
#pragma unroll
        for (int j = 0; j < ACC; j++) {
            reg_fence(acc0[j]);
            if (TWO) reg_fence(acc1[j]);
        }
        if (lane == 0) mbar_arrive(empty0 + ((g + KT - 1) % ST) * 8); // the tile's last stage

        if (FAST) {
            const bool pre = q.pre.kind == ACT_RELU;
#pragma unroll
            for (int c0 = 0; c0 < BN; c0 += CW) { // column passes
                named_sync(2 + wg, 128); // the previous pass's / tile's reads done
#pragma unroll
                for (int j = c0 / 8; j < (c0 + CW) / 8; j++) {
                    int nl = j * 8 + t4 * 2, n = n0 + nl;
                    igemm_col2 cs = igemm_cols(q, n, n < p.Nout);
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        *(float2 *)&stage[(wrow + gq + h * 8) * SP + igemm_scol(nl - c0)] =
                            igemm_pre(cs, acc0[j * 4 + h * 2], acc0[j * 4 + h * 2 + 1], pre);
                        if (TWO)
                            *(float2 *)&stage[(64 + wrow + gq + h * 8) * SP +
                                              igemm_scol(nl - c0)] =
                                igemm_pre(cs, acc1[j * 4 + h * 2], acc1[j * 4 + h * 2 + 1], pre);
                    }
                }
                named_sync(2 + wg, 128);
                igemm_store_rows<CW, SP, 128, RM>(q, stage, m0, n0 + c0, Mi, p.Nout, ltid,
                                                  nocvt);
            }
        } else {
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                int n = n0 + j * 8 + t4 * 2;
#pragma unroll
                for (int h = 0; h < RM / 32; h++) {
                    int m = m0 + (h >> 1) * 64 + wrow + gq + (h & 1) * 8;
                    const int *ac = h >> 1 ? acc1 : acc0;
                    if (m >= Mi) continue;
                    if (n < p.Nout) igemm_epi_general(&q, ac[j * 4 + (h & 1) * 2], m, n);
                    if (n + 1 < p.Nout)
                        igemm_epi_general(&q, ac[j * 4 + (h & 1) * 2 + 1], m, n + 1);
                }
            }
        }
    }
#endif
}

// Tiles t = blockIdx.x, + gridDim.x, ... (one a block unless PS): M tile t /
// tn, column tile t % tn. The ring's stage / phase follow a k-step count over
// all of the block's tiles, so the producer loads the next tile's first
// stages while the consumers run this tile's epilogue.
//
// PP (ping-pong, BM 128, persistent): the block's tiles alternate between
// the two consumer warpgroups, each computing a whole 128 x BN tile (two
// m64 wgmma a k32 step, BN accumulators a thread) and running its epilogue
// while the other one's MMAs go on. The ring is shared: tile i's stages are
// read by warpgroup i % 2 only (empty[] counts its 4 warps). Order
// mbarriers (order[w], 4 arrivals: each warp of the other warpgroup once
// past its last full wait of tile i - 1) hold tile i's first full wait until
// every stage of tile i - 1 was filled, so a full wait is never a ring lap
// ahead of its barrier's phase (a parity wait on a barrier one phase behind
// reads as complete: phase 18r's K >= 704 hang).
template <int BM, int BN, int ST, int MINB, int PW, bool PS, bool U8, bool FAST, bool PP = false>
__global__ void __launch_bounds__(2 * BM + 32 * PW, MINB)
    k_igemm_ws(const signed char *__restrict__ x, const signed char *__restrict__ w,
               pr_cu_igemm p, pr_cu_qepi q, bool nocvt) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int TC = 2 * BM, TP = 32 * PW; // consumer / producer threads
    constexpr bool RR = PW == 4 && BM == 128;  // setmaxnreg
    constexpr int SA = BM * BK, SB = BN * BK, NJ = BN / 8, ACC = BN / 2, LAG = ST - 3;
    constexpr int AP = BM * 4 / TP, BP = BN * 4 / TP; // 16-byte chunks a producer thread
    static_assert(LAG >= 1 && BP >= 1, "ring shape");
    extern __shared__ __align__(1024) unsigned char dsm[];
    unsigned char *smem = dsm + ((1024 - (smem_u32(dsm) & 1023)) & 1023); // swizzle atoms aligned
    signed char *sa = (signed char *)smem, *sb = (signed char *)smem + ST * SA;
    constexpr int SOFF = PS || PP ? ring_bytes<BM, BN, ST>() : 0; // the staged rows
    static_assert(PS || stage_bytes<BM, BN>() <= ring_bytes<BM, BN, ST>(), "stage fits");
    static_assert(!PP || (BM == 128 && PS), "ping-pong shape");
    const uint32_t full0 = smem_u32(smem + ring_bytes<BM, BN, ST>() + stage_all<BM, BN, PS, PP>()),
                   empty0 = full0 + ST * 8, order0 = empty0 + ST * 8;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int Mi = (int)(p.N * p.OH * p.OW); // < 2^31: checked by the launcher
    const int tn = (int)((p.Nout + BN - 1) / BN), ntiles = (Mi + BM - 1) / BM * tn;
    const int KT = (int)((p.K + BK - 1) / BK);

    if (tid == 0)
        for (int s = 0; s < ST; s++) {
            mbar_init(full0 + s * 8, TP);
            mbar_init(empty0 + s * 8, PP ? 4 : TC / 32);
        }
    if (PP && tid == 0) {
        mbar_init(order0, 4);
        mbar_init(order0 + 8, 4);
    }
    __syncthreads();

    if (warp >= TC / 32) { // ---- producer warps
        if (RR) regs_dec<PREG>();
        const int pt = tid - TC, chunk = pt & 3;
        const int Ki = (int)p.K, Ci = (int)p.C, Hi = (int)p.H, Wi = (int)p.W;
        const unsigned OWu = (unsigned)p.OW, OHu = (unsigned)p.OH;
        const bool xpad = p.x_u8 == PR_CU_X_U8B; // biased x: padding -128 stored
        int g = 0;                                // k steps loaded by this block
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
            const int m0 = t / tn * BM, n0 = t % tn * BN;
            int arow[AP], aih[AP], aiw[AP]; // a row's top-left tap: offset (may be < 0), ih, iw
#pragma unroll
            for (int i = 0; i < AP; i++) {
                int m = m0 + (pt >> 2) + i * (TP / 4);
                if (m < Mi) {
                    unsigned ow = (unsigned)m % OWu, r = (unsigned)m / OWu, oh = r % OHu,
                             b = r / OHu;
                    aih[i] = (int)oh * (int)p.sh - (int)p.ph;
                    aiw[i] = (int)ow * (int)p.sw - (int)p.pw;
                    arow[i] = ((int)b * Hi + aih[i]) * Wi * Ci + aiw[i] * Ci;
                } else {
                    arow[i] = 0;
                    aih[i] = -(1 << 28); // never inside the image
                    aiw[i] = 0;
                }
            }
            int wbase[BP];
#pragma unroll
            for (int i = 0; i < BP; i++) {
                int n = n0 + (pt >> 2) + i * (TP / 4);
                wbase[i] = n < p.Nout ? n * Ki : -1;
            }
            int kk = chunk * 16, kr = 0, ks = 0, kc = chunk * 16;
            while (kc >= Ci) {
                kc -= Ci;
                if (++ks == p.kw) ks = 0, kr++;
            }
            for (int kt = 0; kt < KT; kt++, g++) {
                const int st = g % ST;
                mbar_wait(empty0 + st * 8, ((g / ST) & 1) ^ 1);
                const bool kok = kk < Ki;
                signed char *A = sa + st * SA, *B = sb + st * SB;
                const int ihk = kr * (int)p.dh, iwk = ks * (int)p.dw;
                const int koff = ihk * Wi * Ci + iwk * Ci + kc;
#pragma unroll
                for (int i = 0; i < AP; i++) {
                    int row = (pt >> 2) + i * (TP / 4);
                    int ih = aih[i] + ihk, iw = aiw[i] + iwk;
                    bool ok = kok && (unsigned)ih < (unsigned)Hi && (unsigned)iw < (unsigned)Wi;
                    const signed char *src = ok ? x + (arow[i] + koff) : x;
                    if (xpad && kok && !ok)
                        *(uint4 *)&A[swz(row, chunk)] =
                            make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
                    else
                        cp16(smem_u32(&A[swz(row, chunk)]), src, ok);
                }
#pragma unroll
                for (int i = 0; i < BP; i++) {
                    int row = (pt >> 2) + i * (TP / 4);
                    bool ok = kok && wbase[i] >= 0;
                    cp16(smem_u32(&B[swz(row, chunk)]), ok ? w + (wbase[i] + kk) : w, ok);
                }
                cp_commit();
                kk += BK;
                kc += BK;
                while (kc >= Ci) {
                    kc -= Ci;
                    if (++ks == p.kw) ks = 0, kr++;
                }
                if (g >= LAG) {
                    cp_wait<LAG>();
                    fence_async_smem();
                    mbar_arrive(full0 + ((g - LAG) % ST) * 8);
                }
            }
        }
        cp_wait<0>();
        fence_async_smem();
        for (int j = g > LAG ? g - LAG : 0; j < g; j++) mbar_arrive(full0 + (j % ST) * 8);
        return;
    }

    // ---- consumer warpgroups 0-1
    if (RR) regs_inc<consumer_regs<BM, PW, MINB>()>();
    if (PP) {
        pp_consumer<BN, ST, U8, FAST>(sa, sb, smem + SOFF, full0, empty0, order0, p, q, nocvt,
                                      Mi, tn, ntiles, KT);
        return;
    }
    const int wg = warp >> 2, gq = lane >> 2, t4 = lane & 3, wrow = warp * 16;
    float *stage = (float *)(smem + SOFF);
    constexpr int SP = BN + 8;
    int g = 0; // k steps consumed by this block
    for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const int m0 = t / tn * BM, n0 = t % tn * BN;
        int acc[ACC];
#pragma unroll
        for (int i = 0; i < ACC; i++) acc[i] = 0;
        for (int kt = 0; kt < KT; kt++, g++) {
            const int st = g % ST;
            mbar_wait(full0 + st * 8, (g / ST) & 1);
            __syncwarp(); // converged for the .aligned wgmma instructions
            uint32_t a = smem_u32(sa + st * SA + wg * 64 * BK), b = smem_u32(sb + st * SB);
#pragma unroll
            for (int i = 0; i < ACC; i++) reg_fence(acc[i]);
            wg_fence();
            wgmma<BN>::template run<U8>(acc, wg_desc(a), wg_desc(b));
            wgmma<BN>::template run<U8>(acc, wg_desc(a + 32), wg_desc(b + 32));
            wg_commit();
            wg_wait<1>();
#pragma unroll
            for (int i = 0; i < ACC; i++) reg_fence(acc[i]);
            if (kt > 0 && lane == 0) mbar_arrive(empty0 + ((g - 1) % ST) * 8);
        }
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < ACC; i++) reg_fence(acc[i]);
        if (lane == 0) mbar_arrive(empty0 + ((g - 1) % ST) * 8); // the tile's last stage

        if (FAST) {
            const bool pre = q.pre.kind == ACT_RELU;
            // PS: the last tile's store loop is past its reads of the staged rows;
            // else: both warpgroups past their last wgmma read of the ring
            named_sync(1, TC);
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                int nl = j * 8 + t4 * 2, n = n0 + nl;
                igemm_col2 cs = igemm_cols(q, n, n < p.Nout);
#pragma unroll
                for (int h = 0; h < 2; h++)
                    *(float2 *)&stage[(wrow + gq + h * 8) * SP + igemm_scol(nl)] =
                        igemm_pre(cs, acc[j * 4 + h * 2], acc[j * 4 + h * 2 + 1], pre);
            }
            named_sync(1, TC);
            igemm_store_rows<BN, SP, TC, BM>(q, stage, m0, n0, Mi, p.Nout, tid, nocvt);
        } else {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                int n = n0 + j * 8 + t4 * 2;
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int m = m0 + wrow + gq + h * 8;
                    if (m >= Mi) continue;
                    if (n < p.Nout) igemm_epi_general(&q, acc[j * 4 + h * 2], m, n);
                    if (n + 1 < p.Nout) igemm_epi_general(&q, acc[j * 4 + h * 2 + 1], m, n + 1);
                }
            }
        }
    }
#endif
}

template <int BM, int BN, int ST, int MINB, int PW, bool PS, bool U8, bool FAST, bool PP>
int launch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
           const pr_cu_qepi *q, unsigned grid) {
    constexpr int SMEM = smem_bytes<BM, BN, ST, PS, PP>();
    auto k = k_igemm_ws<BM, BN, ST, MINB, PW, PS, U8, FAST, PP>;
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // not left behind for the next launch's check
        return (int)e;
    }
    k<<<grid, 2 * BM + 32 * PW, SMEM, s>>>((const signed char *)x, (const signed char *)w, *p, *q,
                                       FAST && igemm_epi_nocvt());
    return launch_result();
}

// PS: a persistent grid of MINB blocks an SM
template <int BM, int BN, int ST, int MINB, int PW, bool PS, bool PP = false>
int dispatch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
             const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    int64_t tiles = (M + BM - 1) / BM * ((p->Nout + BN - 1) / BN);
    if (tiles > 0x7fffffff) return (int)cudaErrorInvalidValue;
    if (PS) {
        int dev = 0, sms = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (!e) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e) return (int)e;
        if (tiles > (int64_t)sms * MINB) tiles = (int64_t)sms * MINB;
    }
    unsigned grid = (unsigned)tiles;
    bool fast = igemm_fast_ok(q);
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return fast ? launch<BM, BN, ST, MINB, PW, PS, true, true, PP>(s, x, w, p, &q2, grid)
                    : launch<BM, BN, ST, MINB, PW, PS, true, false, PP>(s, x, w, p, &q2, grid);
    }
    return fast ? launch<BM, BN, ST, MINB, PW, PS, false, true, PP>(s, x, w, p, q, grid)
                : launch<BM, BN, ST, MINB, PW, PS, false, false, PP>(s, x, w, p, q, grid);
}

// TI (phase 20w): the ping-pong tile (PP above: the same consumers, ring,
// order barriers and epilogue) with A and B by the copy engine. One lane of
// the producer warpgroup issues a stage: the im2col TMA of the tile's 128
// output pixels (64 channels of one tap: the tap as the copy's offsets) and
// the tiled TMA of BN weight rows, completing on full[s] by transaction
// count (expect-tx). C % 64 == 0 (a stage is one tap's 64-channel chunk).
// The padding is the copy's zero fill; biased uint8 x (FIX) needs the byte
// -128 there instead: three more producer warps (stage g: warp 9 + g % 3)
// wait for each stage's bytes, overwrite the rows whose tap falls outside
// the image with 0x80 (whole
// 64-byte rows: the swizzle permutes 16-byte chunks within a row), fences
// and arrives on fixd[s], which the consumers wait on instead of full[s].
template <int RM, int BN, int ST> constexpr int ti_smem_bytes() {
    return ring_bytes<RM, BN, ST>() + stage_all<RM, BN, true, true>() + 3 * ST * 8 + 16 + 1024;
}
static_assert(ti_smem_bytes<128, 128, 9>() <= 232448 && ti_smem_bytes<128, 64, 12>() <= 232448 &&
                  ti_smem_bytes<64, 256, 9>() <= 232448,
              "TMA ping-pong forms fit in 227 KB");

// RM rows a tile: 128 (BN 64 / 128) or 64 (BN 256: one m64n256 wgmma a k32
// step a warpgroup, the A copy 64 pixels; PRECIS_CUDA_IGEMM_TI=256 only)
template <int RM, int BN, int ST, bool U8, bool FAST, bool FIX>
__global__ void __launch_bounds__(384, 1)
    k_igemm_ti(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb,
               pr_cu_igemm p, pr_cu_qepi q, bool nocvt) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int SA = RM * BK, SB = BN * BK;
    extern __shared__ __align__(1024) unsigned char dsm[];
    unsigned char *smem = dsm + ((1024 - (smem_u32(dsm) & 1023)) & 1023); // swizzle atoms aligned
    signed char *sa = (signed char *)smem, *sb = (signed char *)smem + ST * SA;
    const uint32_t full0 = smem_u32(smem + ring_bytes<RM, BN, ST>() +
                                    stage_all<RM, BN, true, true>()),
                   empty0 = full0 + ST * 8, order0 = empty0 + ST * 8, fixd0 = order0 + 16;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int Mi = (int)(p.N * p.OH * p.OW); // < 2^31: checked by the launcher
    const int tn = (int)((p.Nout + BN - 1) / BN), ntiles = (Mi + RM - 1) / RM * tn;
    const int KT = (int)(p.K / BK), CC = (int)(p.C / BK);
    const int OHi = (int)p.OH, OWi = (int)p.OW;

    if (tid == 0) {
        for (int s = 0; s < ST; s++) {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, 4);
            mbar_init(fixd0 + s * 8, 1);
        }
        mbar_init(order0, 4);
        mbar_init(order0 + 8, 4);
        mbar_init_fence();
    }
    __syncthreads();

    if (warp >= 8) { // ---- the producer warpgroup
        regs_dec<PREG>();
        if (warp == 8 && lane == 0) { // the copies
            tma_prefetch_map(&ma);
            tma_prefetch_map(&mb);
            const uint32_t bytes = (uint32_t)(SA + SB);
            int g = 0;
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
                const int m0 = t / tn * RM, n0 = t % tn * BN;
                const int ow = m0 % OWi, r0 = m0 / OWi, oh = r0 % OHi, b = r0 / OHi;
                const int wb = ow * p.sw - p.pw, hb = oh * p.sh - p.ph;
                int tap = 0, cc = 0;
                for (int kt = 0; kt < KT; kt++, g++) {
                    const int st = g % ST;
                    mbar_wait(empty0 + st * 8, ((g / ST) & 1) ^ 1);
                    const uint32_t fb = full0 + st * 8;
                    mbar_expect_tx(fb, bytes);
                    const int r = tap / p.kw, s = tap - r * p.kw;
                    tma_im2col_4d(smem_u32(sa + st * SA), &ma, cc * BK, wb, hb, b,
                                  (uint16_t)(s * p.dw), (uint16_t)(r * p.dh), fb);
                    tma_2d(smem_u32(sb + st * SB), &mb, kt * BK, n0, fb);
                    if (++cc == CC) cc = 0, tap++;
                }
            }
        } else if (FIX && warp >= 9) { // biased x: the padding rows as 0x80
            // three fixer warps, stage g by warp 9 + g % 3 (each stage's wait /
            // rewrite / fence / arrive chain is serial: one warp was the
            // bottleneck, call 2's ncu)
            const int Hi = (int)p.H, Wi = (int)p.W, fw = warp - 9;
            int g = 0;
            for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
                const int m0 = t / tn * RM;
                int aih[RM / 32], aiw[RM / 32]; // a row's tap-0 position (rows past M: never fixed)
#pragma unroll
                for (int i = 0; i < RM / 32; i++) {
                    const int m = m0 + lane + 32 * i;
                    const int ow = m % OWi, oh = m / OWi % OHi;
                    aih[i] = m < Mi ? oh * p.sh - p.ph : 0;
                    aiw[i] = m < Mi ? ow * p.sw - p.pw : 0;
                }
                int tap = 0, cc = 0;
                for (int kt = 0; kt < KT; kt++, g++) {
                    if (g % 3 != fw) {
                        if (++cc == CC) cc = 0, tap++;
                        continue;
                    }
                    const int st = g % ST;
                    mbar_wait(full0 + st * 8, (g / ST) & 1); // the copy's bytes landed
                    const int r = tap / p.kw, s = tap - r * p.kw;
                    const int ihk = r * p.dh, iwk = s * p.dw;
                    bool any = false;
#pragma unroll
                    for (int i = 0; i < RM / 32; i++) {
                        const int ih = aih[i] + ihk, iw = aiw[i] + iwk;
                        if ((unsigned)ih >= (unsigned)Hi || (unsigned)iw >= (unsigned)Wi) {
                            uint4 *row = (uint4 *)(sa + st * SA + (lane + 32 * i) * BK);
                            const uint4 v = make_uint4(0x80808080u, 0x80808080u, 0x80808080u,
                                                       0x80808080u);
                            row[0] = v, row[1] = v, row[2] = v, row[3] = v;
                            any = true;
                        }
                    }
                    if (any) fence_async_smem(); // the wgmma reads through the async proxy
                    __syncwarp();
                    if (lane == 0) mbar_arrive(fixd0 + st * 8);
                    if (++cc == CC) cc = 0, tap++;
                }
            }
        }
        return;
    }

    // ---- consumer warpgroups 0-1: PP's
    regs_inc<consumer_regs<128, 4, 1>()>();
    pp_consumer<BN, ST, U8, FAST, RM>(sa, sb, smem + ring_bytes<RM, BN, ST>(),
                                      FIX ? fixd0 : full0, empty0, order0, p, q, nocvt, Mi, tn,
                                      ntiles, KT);
#endif
}

template <int RM, int BN, int ST, bool U8, bool FAST, bool FIX>
int ti_launch(cudaStream_t s, const CUtensorMap &ma, const CUtensorMap &mb, const pr_cu_igemm *p,
              const pr_cu_qepi *q, unsigned grid) {
    constexpr int SMEM = ti_smem_bytes<RM, BN, ST>();
    auto k = k_igemm_ti<RM, BN, ST, U8, FAST, FIX>;
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // not left behind for the next launch's check
        return (int)e;
    }
    k<<<grid, 384, SMEM, s>>>(ma, mb, *p, *q, FAST && igemm_epi_nocvt());
    return launch_result();
}

template <int RM, int BN, int ST, bool U8, bool FIX>
int ti_fast(cudaStream_t s, const CUtensorMap &ma, const CUtensorMap &mb, const pr_cu_igemm *p,
            const pr_cu_qepi *q, unsigned grid) {
    return igemm_fast_ok(q) ? ti_launch<RM, BN, ST, U8, true, FIX>(s, ma, mb, p, q, grid)
                            : ti_launch<RM, BN, ST, U8, false, FIX>(s, ma, mb, p, q, grid);
}

template <int RM, int BN, int ST>
int ti_dispatch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
                const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    int64_t tiles = (M + RM - 1) / RM * ((p->Nout + BN - 1) / BN);
    if (tiles > 0x7fffffff) return (int)cudaErrorInvalidValue;
    CUtensorMap ma, mb;
    if (!ti_encode_x(&ma, x, p->N, p->H, p->W, p->C, p->OH, p->OW, p->sh, p->sw, p->ph, p->pw,
                     RM) ||
        !ti_encode_w(&mb, w, p->K, p->Nout, BN))
        return (int)cudaErrorInvalidValue;
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (!e) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e) return (int)e;
    if (tiles > sms) tiles = sms;
    const unsigned grid = (unsigned)tiles;
    const bool fix = p->x_u8 == PR_CU_X_U8B && (p->ph || p->pw);
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return ti_fast<RM, BN, ST, true, false>(s, ma, mb, p, &q2, grid);
    }
    return fix ? ti_fast<RM, BN, ST, false, true>(s, ma, mb, p, q, grid)
               : ti_fast<RM, BN, ST, false, false>(s, ma, mb, p, q, grid);
}

} // namespace

extern "C" int pr_cu_igemm_ws_s8(void *stream, const void *x, const void *w,
                                 const pr_cu_igemm *p, const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->C % 16 || p->K % 16 || ((uintptr_t)x & 15) || ((uintptr_t)w & 15) ||
        (p->N * p->H * p->W * p->C) >> 31 || (p->Nout * p->K) >> 31 || M >> 31)
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    switch (p->tile) {
    case PR_CU_IGEMM_WG128x128: {
        // experiment PRECIS_CUDA_IGEMM_WS=2: BM 256 x BN 128 (1 block an SM) for
        // Nout > 64, BN 64 persistent (2 blocks an SM) for Nout <= 64 (both timed
        // slower than the defaults at ResNet-50's 3x3s: NOTES, phase 18w)
        // default: the ping-pong form (PP, persistent, 1 block an SM: BN 128
        // where Nout > 64, else BN 64); PRECIS_CUDA_IGEMM_WS=1: phase 18w's
        const char *e = getenv("PRECIS_CUDA_IGEMM_WS");
        if (e && !strcmp(e, "2"))
            return p->Nout > 64 ? dispatch<256, 128, 6, 1, 4, false>(s, x, w, p, q)
                                : dispatch<128, 64, 6, 2, 2, true>(s, x, w, p, q);
        if (e && !strcmp(e, "1"))
            return p->Nout > 64 ? dispatch<128, 128, 6, 2, 2, false>(s, x, w, p, q)
                                : dispatch<128, 64, 6, 3, 2, false>(s, x, w, p, q);
        // (ST: the stages that fit beside the staged rows, 217 KB in all)
        return p->Nout > 64 ? dispatch<128, 128, 9, 1, 4, true, true>(s, x, w, p, q)
                            : dispatch<128, 64, 12, 1, 4, true, true>(s, x, w, p, q);
    }
    case PR_CU_IGEMM_WG128x256: return dispatch<128, 256, 8, 1, 4, false>(s, x, w, p, q);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" int pr_cu_igemm_ti_s8(void *stream, const void *x, const void *w,
                                 const pr_cu_igemm *p, const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->tile != PR_CU_IGEMM_TI128x128 || p->C % 64 || p->K != p->kh * p->kw * p->C ||
        ((uintptr_t)x & 15) || ((uintptr_t)w & 15) || (p->N * p->H * p->W * p->C) >> 31 ||
        (p->Nout * p->K) >> 31 || (M + 128) >> 31 || p->dh < 1 || p->dw < 1 ||
        (p->kh - 1) * p->dh > 0xffff || (p->kw - 1) * p->dw > 0xffff)
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    // (ST: the stages that fit beside the staged rows, as PP's).
    // PRECIS_CUDA_IGEMM_TI=256 (experiment, timed slower: NOTES, phase 20w):
    // 64 x 256 tiles (one m64n256 wgmma a k32 step) where Nout >= 256
    const char *e = getenv("PRECIS_CUDA_IGEMM_TI");
    if (p->Nout >= 256 && e && !strcmp(e, "256")) return ti_dispatch<64, 256, 9>(s, x, w, p, q);
    return p->Nout > 64 ? ti_dispatch<128, 128, 9>(s, x, w, p, q)
                        : ti_dispatch<128, 64, 12>(s, x, w, p, q);
}
#endif
