// A 1x1 int8 convolution built for memory bandwidth (the Q1X1 tiles of
// pr_cu_igemm_s8): pr_cu_igemm's contract (NHWC int8 / uint8 / biased uint8
// x, w [Nout][K], pr_cu_qepi epilogue) restricted to kh = kw = 1 and no
// padding (any stride). Every ResNet-50 1x1 at int8 moves more bytes than
// it computes (arithmetic intensity ~2KN / (K + 2N) <= ~170 ops/byte vs the
// H100's ~590), so the kernel is shaped for bytes in flight, not for MMA:
//
// - a persistent grid (blocks per SM from the occupancy query), each block
//   one column tile n0 (BN output channels) and every gridDim.x-th M tile;
// - the block's weights [BN][K] loaded once into shared memory (K <= ~512:
//   where the footprint exceeds the device's shared memory the launch
//   refuses, cudaErrorInvalidValue, and the timed choice skips the tile;
//   k_q1x1k below, and cu_q1x1_wg.cu on Hopper, stream them with A instead);
// - the A tile (BM rows x K bytes) AND the residual tile (BM x BN bytes) of
//   the next NS - 1 M tiles in flight (cp.async) while this tile's MMAs
//   (mma.sync m16n8k32) and epilogue run;
// - the epilogue in registers, reading the residual from shared memory and
//   writing the requantized bytes back in its place, then 16-byte coalesced
//   stores of the whole tile.
//
// Shared rows of A / W are Kp bytes (K rounded up to 64, or to 128 above
// 64), 16-byte chunks XOR-swizzled (cu_mma.cuh's swz for 64-byte rows, else
// chunk ^ (row & 7)) so ldmatrix's 8-row reads are conflict-free; the
// residual / output staging rows are BN + 16 bytes (conflict-free 2-byte
// accesses from the mma layout). K % 16 == 0 (padding chunks zero-filled:
// the weights' zeros cancel a uint8 x's flipped padding).
//
// Fast epilogue (q1x1_fast_ok; EPI 1..3): int8 / uint8 NHWC y, act ReLU or
// none, no or an int8 / uint8 residual, N % 16 == 0, y / z 16-byte aligned;
// else (EPI 0) each element through igemm_epi_general (float y, NCHW, other
// activations). Hopper converts int <-> float at 16 lanes a clock per SM (a
// quarter of an FFMA's rate): an epilogue with three conversions an element
// (I2F acc, I2F residual, F2I out) runs at ~5 elements a clock per SM, which
// bounds layer1's conv3 (205M outputs) near 0.17 ms before any byte moves.
// So the fast epilogue converts only the accumulator (I2F); the residual
// byte becomes a float by PRMT into the mantissa of 2^23 and one FADD, the
// output byte by clamping in float, adding 1.5 * 2^23 (the FADD rounds to
// nearest even, as rintf) and taking the low byte of the bits. Everything
// is pre-multiplied by 1 / y_scale (scale, bias, residual scale: as
// cuBLASLt's fused route does), so requantized bytes may land one unit from
// igemm's epilogue, as any route from ref's float sums.
#include "backends/cuda/cu_q1x1.cuh"

using namespace prmma;
using namespace prq1;

namespace {

constexpr int NS_MAX = 6;

// BM x BN tiles, WM x WN warps, NS (2..NS_MAX, chosen at launch) buffers of
// (A, residual) tiles: NS - 1 M tiles in flight.
template <int BM, int BN, int WM, int WN, int EPI>
__global__ void __launch_bounds__(WM *WN * 32, 2)
    k_q1x1(const signed char *__restrict__ x, const signed char *__restrict__ w, pr_cu_igemm p,
           pr_cu_qepi q, int Kp, int NS) {
    constexpr int T = WM * WN * 32, TM = BM / WM, TN = BN / WN, MI = TM / 16, NJ = TN / 8;
    constexpr int ZS = BN + 16; // staging row bytes
    constexpr bool FAST = EPI > 0;
    static_assert(NJ % 2 == 0 && MI >= 1, "tile shape");
    extern __shared__ __align__(128) unsigned char q1_smem[];
    signed char *sw_ = (signed char *)q1_smem;          // [BN][Kp]
    signed char *sa = sw_ + BN * Kp;                     // NS x [BM][Kp]
    unsigned char *sz = (unsigned char *)(sa + NS * BM * Kp); // NS x [BM][ZS] (FAST)
    float *cs = (float *)(sz + (FAST ? NS * BM * ZS : 0)); // scale [BN], bias [BN]
    int *co = (int *)(cs + 2 * BN);                      // acc_off [BN]

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const int64_t M = p.N * p.OH * p.OW;
    const int MT = (int)((M + BM - 1) / BM);
    const int n0 = blockIdx.y * BN;
    const int Ki = (int)p.K, CPR = Kp / 16, KS = (Ki + 31) / 32;
    const bool s1 = p.sh == 1 && p.sw == 1 && p.OH == p.H && p.OW == p.W;
    const uint32_t xflip = p.x_u8 == PR_CU_X_U8 ? 0x80808080u : 0u; // uint8 x read as x - 128

    // the weights, once (in the first commit group, with the first tile)
    for (int idx = tid; idx < BN * CPR; idx += T) {
        int row = idx / CPR, c = idx - row * CPR, n = n0 + row;
        bool ok = n < p.Nout && c * 16 < Ki;
        cp16(smem_u32(&sw_[qsw(row, c, Kp)]), ok ? w + (int64_t)n * Ki + c * 16 : w, ok);
    }
    // the residual's real value: (byte ^ zflip) - zc (int8: flipped, less 128;
    // biased uint8: flipped; uint8: as is), times zs (/ y_scale in the fast forms)
    const bool zu8 = q.z && q.zdt == DT_U8;
    const uint32_t zflip = q.z && !zu8 ? 0x80808080u : 0u;
    const float zc = 8388608.0f + (q.z && !zu8 && !q.z_bias ? 128.0f : 0.0f);
    const float ys = FAST ? q.y_inv : 1.0f;
    const float zs = q.z_scale * ys;
    q1_cols<BN, T>(cs, co, q, n0, p.Nout, ys);

    auto load = [&](int buf, int mt) { // A and residual tiles of M tile mt into buffer buf
        int64_t m0 = (int64_t)mt * BM;
        signed char *A = sa + buf * BM * Kp;
        for (int idx = tid; idx < BM * CPR; idx += T) {
            int row = idx / CPR, c = idx - row * CPR;
            int64_t m = m0 + row;
            bool ok = m < M && c * 16 < Ki;
            int64_t base = m * p.C;
            if (!s1 && ok) {
                int64_t ow = m % p.OW, t = m / p.OW, oh = t % p.OH, b = t / p.OH;
                base = ((b * p.H + oh * p.sh) * p.W + ow * p.sw) * p.C;
            }
            cp16(smem_u32(&A[qsw(row, c, Kp)]), ok ? x + base + c * 16 : x, ok);
        }
        if (EPI >= 2) q1_load_z<BM, BN, T>(sz + buf * BM * ZS, q, m0, n0, M, p.Nout);
    };

    const int first = blockIdx.x, step = gridDim.x;
    for (int s = 0; s < NS - 1; s++) {
        int mt = first + s * step;
        if (mt < MT) load(s, mt);
        cp_commit();
    }
    const bool post = q.post.kind == ACT_RELU || (EPI == 1 && q.pre.kind == ACT_RELU);
#pragma unroll 1
    for (int it = 0;; it++) {
        const int mt = first + it * step;
        if (mt >= MT) break;
        const int buf = it % NS;
        cp_wait_ring(NS);
        __syncthreads(); // tile it landed; buffer (it - 1) % NS free (tile it - 1 done)
        {
            int nt = first + (it + NS - 1) * step;
            if (nt < MT) load((it + NS - 1) % NS, nt);
            cp_commit();
        }
        int acc[MI][NJ][4];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int v = 0; v < 4; v++) acc[i][j][v] = 0;
        const signed char *A = sa + buf * BM * Kp;
#pragma unroll 2
        for (int ks = 0; ks < KS; ks++)
            q1_mma_k32<MI, NJ, TM, TN>(acc, A, sw_, Kp, ks, wm, wn, lane, xflip);
        q1_epilogue<BM, BN, WM, WN, EPI>(acc, sz + buf * BM * ZS, cs, co, p, q,
                                         (int64_t)mt * BM, n0, M, zflip, zc, zs, post);
    }
    cp_wait<0>();
}

// The K-streamed form (the Q1X1K tiles): the same persistent grid, column
// tile and epilogue, but the weights are not resident: k runs in KC-byte
// chunks, each pipeline stage one chunk of the A tile [BM][KC] AND of the
// weights [BN][KC] (the weights re-read from L2 every M tile), so any K
// (512..2048: layer3 / layer4's convs and downsamples) and larger tiles fit.
// A flat ring of NS stages runs over (M tile, chunk) steps, NS - 1 steps in
// flight across tile boundaries (the next tile's first chunks land during
// this tile's epilogue). The residual / staging rows: 2 buffers, tile t's
// residual loaded with its last chunk's step into buffer t & 1; buffer t & 1
// was last read by tile t - 2's stores, which end before step (t - 1) * KCH
// begins, and that load is issued at step t * KCH + KCH - NS: NS <= 2 * KCH.
constexpr int KC = 128;

template <int BM, int BN, int WM, int WN, int EPI, int MINB>
__global__ void __launch_bounds__(WM *WN * 32, MINB)
    k_q1x1k(const signed char *__restrict__ x, const signed char *__restrict__ w, pr_cu_igemm p,
            pr_cu_qepi q, int NS) {
    constexpr int T = WM * WN * 32, TM = BM / WM, TN = BN / WN, MI = TM / 16, NJ = TN / 8;
    constexpr int ZS = BN + 16, CPR = KC / 16;
    constexpr bool FAST = EPI > 0;
    static_assert(NJ % 2 == 0 && MI >= 1, "tile shape");
    extern __shared__ __align__(128) unsigned char q1_smem[];
    signed char *sa = (signed char *)q1_smem;                 // NS x [BM][KC]
    signed char *sb = sa + NS * BM * KC;                       // NS x [BN][KC]
    unsigned char *sz = (unsigned char *)(sb + NS * BN * KC);  // 2 x [BM][ZS] (FAST)
    float *cs = (float *)(sz + (FAST ? 2 * BM * ZS : 0));     // scale [BN], bias [BN]
    int *co = (int *)(cs + 2 * BN);                            // acc_off [BN]

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const int64_t M = p.N * p.OH * p.OW;
    const int MT = (int)((M + BM - 1) / BM);
    const int n0 = blockIdx.y * BN;
    const int Ki = (int)p.K, KCH = (Ki + KC - 1) / KC;
    const bool s1 = p.sh == 1 && p.sw == 1 && p.OH == p.H && p.OW == p.W;
    const uint32_t xflip = p.x_u8 == PR_CU_X_U8 ? 0x80808080u : 0u;

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
        const int k0 = kc * KC, buf = s % NS;
        signed char *A = sa + buf * BM * KC, *B = sb + buf * BN * KC;
        for (int idx = tid; idx < BM * CPR; idx += T) {
            int row = idx / CPR, c = idx - row * CPR;
            int64_t m = m0 + row;
            bool ok = m < M && k0 + c * 16 < Ki;
            cp16(smem_u32(&A[qsw(row, c, KC)]), ok ? x + q1_row(p, s1, m) + k0 + c * 16 : x, ok);
        }
        for (int idx = tid; idx < BN * CPR; idx += T) {
            int row = idx / CPR, c = idx - row * CPR, n = n0 + row;
            bool ok = n < p.Nout && k0 + c * 16 < Ki;
            cp16(smem_u32(&B[qsw(row, c, KC)]), ok ? w + (int64_t)n * Ki + k0 + c * 16 : w, ok);
        }
        if (EPI >= 2 && kc == KCH - 1)
            q1_load_z<BM, BN, T>(sz + (t & 1) * BM * ZS, q, m0, n0, M, p.Nout);
    };

    for (int s = 0; s < NS - 1; s++) {
        load(s);
        cp_commit();
    }
    const bool post = q.post.kind == ACT_RELU || (EPI == 1 && q.pre.kind == ACT_RELU);
    int s = 0;
#pragma unroll 1
    for (int it = 0;; it++) {
        const int mt = first + it * step;
        if (mt >= MT) break;
        int acc[MI][NJ][4];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int v = 0; v < 4; v++) acc[i][j][v] = 0;
#pragma unroll 1
        for (int kc = 0; kc < KCH; kc++, s++) {
            cp_wait_ring(NS);
            __syncthreads(); // step s landed; stage (s - 1) % NS free (step s - 1 done)
            load(s + NS - 1);
            cp_commit();
            const int buf = s % NS;
            const signed char *A = sa + buf * BM * KC, *B = sb + buf * BN * KC;
#pragma unroll
            for (int ks = 0; ks < KC / 32; ks++)
                q1_mma_k32<MI, NJ, TM, TN>(acc, A, B, KC, ks, wm, wn, lane, xflip);
        }
        q1_epilogue<BM, BN, WM, WN, EPI>(acc, sz + (it & 1) * BM * ZS, cs, co, p, q,
                                         (int64_t)mt * BM, n0, M, zflip, zc, zs, post);
    }
    cp_wait<0>();
}

// PRECIS_CUDA_Q1X1_NS (0: the launcher's choice)
int ns_env() {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("PRECIS_CUDA_Q1X1_NS");
        int n = e ? atoi(e) : 0;
        v = n >= 2 && n <= NS_MAX ? n : 0;
    }
    return v;
}

template <int BM, int BN, int WM, int WN, int EPI>
int launch_one(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
               const pr_cu_qepi *q, int Kp) {
    constexpr int T = WM * WN * 32;
    auto smem_of = [&](int ns) {
        return (size_t)BN * Kp + (size_t)ns * BM * Kp + (EPI ? (size_t)ns * BM * (BN + 16) : 0) +
               (size_t)3 * BN * 4;
    };
    int dev = 0, sms = 0, optin = 0, per_sm = 0, occ = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) ||
        (e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev)))
        return (int)e;
    // the ring depth: 3 (two M tiles in flight) where 2 blocks an SM
    // (__launch_bounds__' most) fit so, else the deepest that fits 1 block.
    // Measured (gpu_phase15r_final.md, PRECIS_CUDA_Q1X1_NS=n forces n, 2..6,
    // where it fits: A/B): the deepest ring with 2 blocks (4 at K 64) ran
    // layer1's downsample 0.237 ms vs 0.190 with 3, the rest within ~3%; 6
    // (1 block) 5-25% slower on layer1 / layer2.
    int ns = 0, ns1 = 0, force = ns_env();
    for (int n = 2; n <= NS_MAX; n++) {
        size_t sm = smem_of(n);
        if (sm > (size_t)optin) break;
        if (force && n == force) {
            ns = n;
            break;
        }
        if (n <= 3 && 2 * (sm + 1024) <= (size_t)per_sm) ns = n;
        ns1 = n;
    }
    if (force ? ns != force : ns < 3) ns = ns1;
    if (!ns) return (int)cudaErrorInvalidValue;
    size_t smem = smem_of(ns);
    auto kern = k_q1x1<BM, BN, WM, WN, EPI>;
    if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, T, smem)))
        return (int)e;
    if (occ < 1) return (int)cudaErrorInvalidValue;
    int64_t M = p->N * p->OH * p->OW, MT = (M + BM - 1) / BM;
    int gy = (int)((p->Nout + BN - 1) / BN);
    int64_t gx = (int64_t)occ * sms / gy;
    if (gx < 1) gx = 1;
    if (gx > MT) gx = MT;
    kern<<<dim3((unsigned)gx, (unsigned)gy), T, smem, s>>>((const signed char *)x,
                                                          (const signed char *)w, *p, *q, Kp, ns);
    return launch_result();
}

template <int BM, int BN, int WM, int WN>
int launch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
           const pr_cu_qepi *q) {
    int Kp = p->K <= 64 ? 64 : (int)((p->K + 127) / 128 * 128);
    if (!q1x1_fast_ok(q)) return launch_one<BM, BN, WM, WN, 0>(s, x, w, p, q, Kp);
    if (!q->z) return launch_one<BM, BN, WM, WN, 1>(s, x, w, p, q, Kp);
    if (q->pre.kind != ACT_RELU) return launch_one<BM, BN, WM, WN, 2>(s, x, w, p, q, Kp);
    return launch_one<BM, BN, WM, WN, 3>(s, x, w, p, q, Kp);
}

// The Q1X1K launch: the ring as deep as fits (NS <= 2 * KCH with a residual,
// NS_MAX at most): for MINB 2 tiles 3 with 2 blocks an SM where that fits
// (as k_q1x1), else the deepest ring for 1 block.
template <int BM, int BN, int WM, int WN, int EPI, int MINB>
int launch_k_one(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
                 const pr_cu_qepi *q) {
    constexpr int T = WM * WN * 32;
    auto smem_of = [&](int ns) {
        return (size_t)ns * (BM + BN) * KC + (EPI ? (size_t)2 * BM * (BN + 16) : 0) +
               (size_t)3 * BN * 4;
    };
    int dev = 0, sms = 0, optin = 0, per_sm = 0, occ = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) ||
        (e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev)))
        return (int)e;
    const int kch = (int)((p->K + KC - 1) / KC);
    const int cap = EPI >= 2 && 2 * kch < NS_MAX ? 2 * kch : NS_MAX;
    int ns = 0, ns1 = 0, ns2 = 0, force = ns_env();
    for (int n = 2; n <= cap; n++) {
        size_t sm = smem_of(n);
        if (sm > (size_t)optin) break;
        if (force && n == force) ns = n;
        if (MINB == 2 && n <= 3 && 2 * (sm + 1024) <= (size_t)per_sm) ns2 = n;
        ns1 = n;
    }
    if (!force) ns = ns2 >= 3 || (ns2 && ns2 == ns1) ? ns2 : ns1;
    else if (!ns) ns = ns1;
    if (!ns) return (int)cudaErrorInvalidValue;
    size_t smem = smem_of(ns);
    auto kern = k_q1x1k<BM, BN, WM, WN, EPI, MINB>;
    if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, T, smem)))
        return (int)e;
    if (occ < 1) return (int)cudaErrorInvalidValue;
    int64_t M = p->N * p->OH * p->OW, MT = (M + BM - 1) / BM;
    int gy = (int)((p->Nout + BN - 1) / BN);
    int64_t gx = (int64_t)occ * sms / gy;
    if (gx < 1) gx = 1;
    if (gx > MT) gx = MT;
    kern<<<dim3((unsigned)gx, (unsigned)gy), T, smem, s>>>((const signed char *)x,
                                                          (const signed char *)w, *p, *q, ns);
    return launch_result();
}

template <int BM, int BN, int WM, int WN, int MINB>
int launch_k(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
             const pr_cu_qepi *q) {
    if (!q1x1_fast_ok(q)) return launch_k_one<BM, BN, WM, WN, 0, MINB>(s, x, w, p, q);
    if (!q->z) return launch_k_one<BM, BN, WM, WN, 1, MINB>(s, x, w, p, q);
    if (q->pre.kind != ACT_RELU) return launch_k_one<BM, BN, WM, WN, 2, MINB>(s, x, w, p, q);
    return launch_k_one<BM, BN, WM, WN, 3, MINB>(s, x, w, p, q);
}

} // namespace

extern "C" int pr_cu_q1x1_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                             const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0 || p->Nout <= 0) return 0;
    if (p->kh != 1 || p->kw != 1 || p->ph || p->pw || p->C % 16 || p->K != p->C ||
        ((uintptr_t)x & 15) || ((uintptr_t)w & 15) || (p->N * p->H * p->W * p->C) >> 31 ||
        p->K > 4096 || M >> 31)
        return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    switch (p->tile) {
    case PR_CU_IGEMM_Q64x256: return launch<64, 256, 2, 4>(s, x, w, p, q);
    case PR_CU_IGEMM_Q64x64: return launch<64, 64, 2, 4>(s, x, w, p, q);
    case PR_CU_IGEMM_Q128x64: return launch<128, 64, 4, 2>(s, x, w, p, q);
    case PR_CU_IGEMM_Q64x128: return launch<64, 128, 2, 4>(s, x, w, p, q);
    case PR_CU_IGEMM_QK128x256: return launch_k<128, 256, 2, 4, 1>(s, x, w, p, q);
    case PR_CU_IGEMM_QW128x256:
    case PR_CU_IGEMM_QW128x128: return pr_cu_q1x1_wg_s8(stream, x, w, p, q);
    case PR_CU_IGEMM_QS128x128: return pr_cu_q1x1_ws_s8(stream, x, w, p, q);
    case PR_CU_IGEMM_QT128x256: return pr_cu_q1x1_st_s8(stream, x, w, p, q);
    default: return (int)cudaErrorInvalidValue;
    }
}
