// Fused attention for fp16 / bf16 (flash style): one block of 4 warps takes
// 64 query rows of one (batch, head); it walks the keys 64 at a time, the
// K and V tiles double-buffered in shared memory through cp.async (K read by
// ldmatrix, V by ldmatrix.trans), S = Q K' and O += P V on Tensor
// Cores (mma.sync m16n8k16, float32 accumulators), the softmax online in
// float32 (running max and sum per row, exp2 of log2e-scaled scores). The
// scores never reach memory. Operands are read through their row and batch
// strides, so a head split / merge transpose can be folded into the loads
// and the store (pr_cu_flash).
#include "backends/cuda/cu_common.cuh"

#include <stdlib.h>
#include <string.h>

namespace {

constexpr int BK = 64;
constexpr float LOG2E = 1.4426950408889634f;

__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
                                    const __half *) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
                                    const __nv_bfloat16 *) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack2(float x, float y, const __half *) {
    __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<uint32_t *>(&h);
}
__device__ __forceinline__ uint32_t pack2(float x, float y, const __nv_bfloat16 *) {
    __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<uint32_t *>(&h);
}
__device__ __forceinline__ float2 unpack2(uint32_t v, const __half *) {
    return __half22float2(*reinterpret_cast<__half2 *>(&v));
}
__device__ __forceinline__ float2 unpack2(uint32_t v, const __nv_bfloat16 *) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&v));
}

__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const void *p) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

template <typename T>
__device__ __forceinline__ uint32_t ld32(const T *p, bool ok) {
    return ok ? *reinterpret_cast<const uint32_t *>(p) : 0u;
}

// The (batch, head) offsets of block row blockIdx.x in each operand.
__device__ __forceinline__ void batch_offsets(const pr_cu_flash &p, int64_t off[5]) {
    unsigned bb = blockIdx.x; // nb < 2^31: 32-bit divisions
#pragma unroll
    for (int o = 0; o < 5; o++) off[o] = 0;
#pragma unroll
    for (int d = PR_CU_FLASH_NB - 1; d >= 0; d--) { // static indices: no local copy of p
        const unsigned bd = (unsigned)p.bdims[d], i = bb % bd;
        bb /= bd;
#pragma unroll
        for (int o = 0; o < 5; o++) off[o] += i * p.bst[o][d];
    }
}

// Q rows r0 / r1 as m16n8k16 A fragments.
template <typename T, int D>
__device__ __forceinline__ void load_q(const T *Q, int64_t rs, int64_t r0, int64_t r1, bool ok0,
                                       bool ok1, int t, uint32_t qa[D / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        int c = kk * 16 + t * 2;
        qa[kk][0] = ld32(Q + r0 * rs + c, ok0);
        qa[kk][1] = ld32(Q + r1 * rs + c, ok1);
        qa[kk][2] = ld32(Q + r0 * rs + c + 8, ok0);
        qa[kk][3] = ld32(Q + r1 * rs + c + 8, ok1);
    }
}

// The mask values of key tile k0 for rows r0 / r1 (offsets mo0 / mo1), a thread's
// fragment columns; zeros where !on.
template <typename T>
__device__ __forceinline__ void mask_regs(const pr_cu_flash &p, bool on, bool mpair, int64_t mcs,
                                          int64_t mo0, int64_t mo1, bool ok0, bool ok1,
                                          int64_t k0, int64_t sk, int t, float mk[BK / 8][4]) {
    const int mdt = p.mdt;
    #pragma unroll
            for (int n = 0; n < BK / 8; n++)
    #pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int64_t col = k0 + n * 8 + t * 2, mo = (h ? mo1 : mo0) + col * mcs;
                    float a = 0.0f, b = 0.0f;
                    if (on && (h ? ok1 : ok0)) {
                        if (mpair && col + 1 < sk) {
                            if (mdt == DT_F32) {
                                float2 f = *reinterpret_cast<const float2 *>((const float *)p.m + mo);
                                a = f.x, b = f.y;
                            } else {
                                uint32_t w = *reinterpret_cast<const uint32_t *>((const T *)p.m + mo);
                                float2 f = mdt == DT_F16 ? unpack2(w, (const __half *)nullptr)
                                                         : unpack2(w, (const __nv_bfloat16 *)nullptr);
                                a = f.x, b = f.y;
                            }
                        } else {
                            if (col < sk) a = ldf(p.m, mdt, mo);
                            if (col + 1 < sk) b = ldf(p.m, mdt, mo + mcs);
                        }
                    }
                    mk[n][2 * h] = a;
                    mk[n][2 * h + 1] = b;
                }
}

// A thread's mask values of a key tile: in registers (mask_regs) ...
// (pair (n, h): the two columns n * 8 + t * 2 .. + 1 of row r0 (h 0) / r1 (h 1))
// (kLim: the columns past sk are NOT -inf in it, attend masks them)
struct MaskRegs {
    static constexpr bool kLim = true;
    const float (*v)[4];
    __device__ __forceinline__ float2 operator()(int n, int h) const {
        return make_float2(v[n][2 * h], v[n][2 * h + 1]);
    }
};
// ... or in shared memory as stored (M: its type): a thread's rows r0 / r1
// at row0 / row0 + rows8 bytes, its columns from t * 2 ...
template <typename M> struct MaskSmem {
    static constexpr bool kLim = false; // -inf stored past sk (partial tiles)
    const unsigned char *row0;
    int rows8;
    __device__ __forceinline__ float2 operator()(int n, int h) const {
        const unsigned char *q = row0 + h * rows8 + n * 8 * (int)sizeof(M);
        if constexpr (sizeof(M) == 4) return *reinterpret_cast<const float2 *>(q);
        else return unpack2(*reinterpret_cast<const uint32_t *>(q), (const M *)nullptr);
    }
};
// ... or none.
struct MaskNone {
    static constexpr bool kLim = true;
    __device__ __forceinline__ float2 operator()(int, int) const { return make_float2(0.0f, 0.0f); }
};

// 2^x (ex2.approx: 2 ulp; -inf -> 0)
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// One key tile (K / V rows k0.. in shared memory, rows LD apart) for a warp's 16
// query rows: S = Q K' (+ mask), the online softmax update, O += P V.
template <typename T, int D, typename MK>
__device__ __forceinline__ void attend(const uint32_t qa[D / 16][4], const T *Ks, const T *Vs,
                                       int LD, const MK &mk, int64_t k0, int64_t sk,
                                       float scale, int lane, float &m0, float &m1, float &l0,
                                       float &l1, float o[D / 8][4]) {
    const T *tag = nullptr;
    const int t = lane & 3;
            float s[BK / 8][4];
    #pragma unroll
            for (int n = 0; n < BK / 8; n++) {
                s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    #pragma unroll
                for (int kk = 0; kk < D / 16; kk += 2) { // K rows n*8.. : b0 b1 of kk, kk+1
                    uint32_t b[4];
                    ldsm_x4(b, &Ks[(n * 8 + (lane & 7)) * LD + kk * 16 + (lane >> 3) * 8]);
                    mma(s[n], qa[kk], b[0], b[1], tag);
                    mma(s[n], qa[kk + 1], b[2], b[3], tag);
                }
            }
            float mx0 = m0, mx1 = m1;
            const int lim = sk - k0 < BK ? (int)(sk - k0) : BK; // columns of this tile
    #pragma unroll
            for (int n = 0; n < BK / 8; n++)
    #pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float2 mv = mk(n, h);
    #pragma unroll
                    for (int u = 0; u < 2; u++) {
                        const int e = 2 * h + u;
                        float v = fmaf(s[n][e], scale, u ? mv.y : mv.x);
                        if (MK::kLim && n * 8 + t * 2 + u >= lim) v = -INFINITY;
                        s[n][e] = v;
                        if (h == 0) mx0 = fmaxf(mx0, v);
                        else mx1 = fmaxf(mx1, v);
                    }
                }
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
            const float b0 = mx0 == -INFINITY ? 0.0f : mx0, b1 = mx1 == -INFINITY ? 0.0f : mx1;
            // scores and maxima in natural units; exponents base 2 (one FFMA each)
            const float c0 = ex2((m0 - b0) * LOG2E), c1 = ex2((m1 - b1) * LOG2E);
            const float bl0 = -b0 * LOG2E, bl1 = -b1 * LOG2E;
            m0 = mx0;
            m1 = mx1;
            l0 *= c0;
            l1 *= c1;
    #pragma unroll
            for (int j = 0; j < D / 8; j++) {
                o[j][0] *= c0;
                o[j][1] *= c0;
                o[j][2] *= c1;
                o[j][3] *= c1;
            }
    #pragma unroll
            for (int n = 0; n < BK / 8; n++) {
                s[n][0] = ex2(fmaf(s[n][0], LOG2E, bl0));
                s[n][1] = ex2(fmaf(s[n][1], LOG2E, bl0));
                s[n][2] = ex2(fmaf(s[n][2], LOG2E, bl1));
                s[n][3] = ex2(fmaf(s[n][3], LOG2E, bl1));
                l0 += s[n][0] + s[n][1]; // float32 row sums (P rounds to T in the product)
                l1 += s[n][2] + s[n][3];
            }
    #pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) {
                uint32_t a[4] = {pack2(s[2 * kk][0], s[2 * kk][1], tag),
                                 pack2(s[2 * kk][2], s[2 * kk][3], tag),
                                 pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], tag),
                                 pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], tag)};
                const int mt = lane >> 3;
                const T *vr = &Vs[(kk * 16 + (mt & 1) * 8 + (lane & 7)) * LD + (mt >> 1) * 8];
    #pragma unroll
                for (int j = 0; j < D / 16; j++) {
                    uint32_t b[4];
                    ldsm_x4_t(b, vr + j * 16);
                    mma(o[2 * j], a, b[0], b[1], tag);
                    mma(o[2 * j + 1], a, b[2], b[3], tag);
                }
            }
}

__device__ __forceinline__ void quad_sum(float &l0, float &l1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
}

// Two values rounded to T (as packed by pack2) quantized to e4m3 with scale s:
// QuantizeLinear's numbers (cu_fp8.cu: to_e4m3(x / s)), low byte first.
// x / s from qr = RN(1 / s), correctly rounded: cu_norm.cu's q8_div (one FMA
// residual step; an overflowing quotient keeps RN(x qr)), ~5 instructions for
// div.rn's ~10 (p.yqr: RN(1 / s), set by cuda_attention.c).
__device__ __forceinline__ float fq_div(float x, float s, float qr) {
    float q = __fmul_rn(x, qr);
    float r = fmaf(fmaf(-s, q, x), qr, q);
    return r == r ? r : q;
}
template <typename T>
__device__ __forceinline__ uint16_t q2(uint32_t v, float s, float qr, const T *tag) {
    float2 f = unpack2(v, tag);
    f = make_float2(fq_div(f.x, s, qr), fq_div(f.y, s, qr));
    return (uint16_t)__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3); // x low: to_e4m3's
}

// O / l for rows r0 / r1 (l summed over the quad already) into Y (p.y at
// element offset yoff): T, or e4m3 when p.yq > 0 (Attention y_type).
template <typename T, int D>
__device__ __forceinline__ void store_rows(const pr_cu_flash &p, int64_t yoff, int64_t r0,
                                           int64_t r1, bool ok0, bool ok1, int t,
                                           const float o[D / 8][4], float l0, float l1) {
    const T *tag = nullptr;
    const int64_t rs = p.rs[4];
    const float i0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, i1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    if (p.yq > 0.0f) {
        unsigned char *Y = (unsigned char *)p.y + yoff;
        const float s = p.yq, qr = p.yqr;
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            int c = j * 8 + t * 2;
            if (ok0) *reinterpret_cast<uint16_t *>(Y + r0 * rs + c) = q2(pack2(o[j][0] * i0, o[j][1] * i0, tag), s, qr, tag);
            if (ok1) *reinterpret_cast<uint16_t *>(Y + r1 * rs + c) = q2(pack2(o[j][2] * i1, o[j][3] * i1, tag), s, qr, tag);
        }
        return;
    }
    T *Y = (T *)p.y + yoff;
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        int c = j * 8 + t * 2;
        if (ok0) *reinterpret_cast<uint32_t *>(Y + r0 * rs + c) = pack2(o[j][0] * i0, o[j][1] * i0, tag);
        if (ok1) *reinterpret_cast<uint32_t *>(Y + r1 * rs + c) = pack2(o[j][2] * i1, o[j][3] * i1, tag);
    }
}

// 16 B global -> shared without registers; zero-filled where !ok.
__device__ __forceinline__ void cp16(void *dst, const void *src, bool ok) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(a), "l"(src),
                 "r"(ok ? 16 : 0));
}

// K and V rows k0 .. k0 + BK of one key tile into shared memory (rows LD
// apart), NT threads, zero rows past sk.
template <typename T, int D, int NT>
__device__ __forceinline__ void load_kv(T *ks, T *vs, const T *K, const T *V, int64_t rsk,
                                        int64_t rsv, int64_t k0, int64_t sk) {
    constexpr int CPR = D / 8, LD = D + 8; // 16-byte chunks a row
    static_assert(BK * CPR % NT == 0, "chunks a thread");
#pragma unroll
    for (int i = 0; i < BK * CPR / NT; i++) {
        const int c = threadIdx.x + i * NT, r = c / CPR, cc = (c % CPR) * 8;
        const bool ok = k0 + r < sk;
        const int64_t kr = ok ? k0 + r : 0;
        cp16(&ks[r * LD + cc], K + kr * rsk + cc, ok);
        cp16(&vs[r * LD + cc], V + kr * rsv + cc, ok);
    }
}

// Bytes of dynamic shared memory of k_flash: two stages of K and V tiles and,
// with a mask, two stages of BQ mask rows of BK columns as stored.
static inline size_t flash_smem(int d, int nw, int esz, const pr_cu_flash &p) {
    size_t b = (size_t)4 * BK * (d + 8) * esz;
    if (p.m) b += (size_t)2 * (p.mvec == 2 ? 1 : nw * 16) * (BK * (p.mdt == DT_F32 ? 4 : 2) + 16);
    return b;
}

// NW warps of 16 query rows each (BQ = 16 NW rows a block). Key tiles go
// through two stages of shared memory by cp.async: tile i + 1 (K, V and, when
// its rows are 16-byte vectors, the mask tile) loads while tile i is computed,
// with no staging registers.
// Blocks an SM is meant to hold (registers): D 64 with a float32 mask tile
// fits 3 blocks of 4 warps or 2 of 8 in shared memory. MINB > 0 overrides
// (launch_d): 8 warps at D 64 need 193 registers (ptxas, sm_90), so the 128
// register cap of 2 blocks an SM spills (~100 bytes a thread), and yet 1 block
// an SM without spills was slower (phase 14t, H100, BERT b64 fp8: the kernel
// 55.1 us at 12.5% occupancy vs 43.6 us spilling at 25%; the run 2.777 vs 2.706
// ms): the spilling form stays the default there.
constexpr int flash_minb(int d, int nw, int minb) {
    return minb > 0 ? minb : d > 64 ? 1 : nw >= 8 ? (d <= 32 ? 3 : 2) : nw == 4 ? 3 : 6;
}

template <typename T, int D, int NW, int MINB>
__global__ __launch_bounds__(NW * 32, flash_minb(D, NW, MINB)) void k_flash(pr_cu_flash p) {
    constexpr int NT = NW * 32, BQ = NW * 16;
    constexpr int LD = D + 8; // padded rows: conflict-free ldmatrix
    extern __shared__ __align__(16) unsigned char smem[];
    T *Ks = reinterpret_cast<T *>(smem), *Vs = Ks + 2 * BK * LD;
    unsigned char *Ms = reinterpret_cast<unsigned char *>(Vs + 2 * BK * LD);
    int64_t off[5];
    batch_offsets(p, off);
    const T *Q = (const T *)p.q + off[0], *K = (const T *)p.k + off[1];
    const T *V = (const T *)p.v + off[2];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t sq = p.sq, sk = p.sk;
    const int64_t qb = (int64_t)blockIdx.y * BQ, r0 = qb + warp * 16 + g, r1 = r0 + 8;
    const bool ok0 = r0 < sq, ok1 = r1 < sq;
    const int64_t rsk = p.rs[1], rsv = p.rs[2], rsm = p.rs[3];
    const int mdt = p.m ? p.mdt : 0;
    const int mesz = mdt == DT_F32 ? 4 : 2, mrow = BK * mesz + 16, mcpr = BK * mesz / 16;
    const unsigned char *mbase = (const unsigned char *)p.m + off[3] * mesz;
    const int64_t nt = (sk + BK - 1) / BK;

    // issue tile i's loads into stage i & 1: K, V and the mask tile by
    // cp.async (16-byte mask chunks where mvec and the tile is full), else the
    // mask element by element (zeros past sq / sk)
    auto issue = [&](int64_t i) {
        const int b = (int)(i & 1);
        const int64_t k0 = i * BK;
        load_kv<T, D, NT>(Ks + b * BK * LD, Vs + b * BK * LD, K, V, rsk, rsv, k0, sk);
        unsigned char *ms = Ms + (size_t)b * (p.mvec == 2 ? 1 : BQ) * mrow; // mvec 2: a row a stage
        if (!mdt) return;
        if (p.mvec == 2) { // one mask row for all query rows: BK columns, -inf past sk
            if (k0 + BK <= sk) {
                for (int c = threadIdx.x; c < mcpr; c += NT) cp16(ms + c * 16, mbase + k0 * mesz + c * 16, true);
            } else {
                for (int c = threadIdx.x; c < BK; c += NT) {
                    const unsigned short v = *reinterpret_cast<const unsigned short *>(mbase + (k0 + (k0 + c < sk ? c : 0)) * mesz);
                    *reinterpret_cast<unsigned short *>(ms + c * mesz) =
                        k0 + c < sk ? v : (mdt == DT_F16 ? 0xfc00 : 0xff80);
                }
            }
            return;
        }
        if (p.mvec && k0 + BK <= sk) {
            for (int c = threadIdx.x; c < BQ * mcpr; c += NT) {
                const int r = c / mcpr, cc = c % mcpr;
                const bool ok = qb + r < sq;
                cp16(ms + r * mrow + cc * 16,
                     mbase + ((ok ? qb + r : 0) * rsm + k0) * mesz + cc * 16, ok);
            }
        } else {
            for (int c = threadIdx.x; c < BQ * BK; c += NT) {
                const int r = c / BK, cc = c % BK;
                // zeros past sq, -inf past sk (attend does not check the columns)
                const bool ok = qb + r < sq && k0 + cc < sk, out = k0 + cc >= sk;
                const unsigned char *src = mbase + ((qb + r) * rsm + (k0 + cc) * p.mcs) * mesz;
                unsigned char *dst = ms + r * mrow + cc * mesz;
                if (mesz == 4)
                    *reinterpret_cast<float *>(dst) =
                        ok ? *reinterpret_cast<const float *>(src) : out ? -INFINITY : 0.0f;
                else // -inf: 0xfc00 in fp16, 0xff80 in bf16
                    *reinterpret_cast<unsigned short *>(dst) =
                        ok ? *reinterpret_cast<const unsigned short *>(src)
                           : out ? (mdt == DT_F16 ? 0xfc00 : 0xff80) : 0;
            }
        }
    };
    issue(0);
    asm volatile("cp.async.commit_group;");

    uint32_t qa[D / 16][4];
    load_q<T, D>(Q, p.rs[0], r0, r1, ok0, ok1, t, qa);
    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const float scale = p.scale;

    for (int64_t i = 0; i < nt; i++) {
        if (i + 1 < nt) issue(i + 1); // its stage was last read before the previous barrier
        asm volatile("cp.async.commit_group;");
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        const int b = (int)(i & 1);
        const T *ks = Ks + b * BK * LD, *vs = Vs + b * BK * LD;
        const bool m1r = p.mvec == 2; // one staged row read by every query row
        const unsigned char *mr =
            Ms + (m1r ? (size_t)b : (size_t)b * BQ + warp * 16 + g) * mrow + t * 2 * mesz;
        const int m8 = m1r ? 0 : 8 * mrow;
        if (mdt == DT_F32)
            attend<T, D>(qa, ks, vs, LD, MaskSmem<float>{mr, m8}, i * BK, sk, scale, lane,
                         m0, m1, l0, l1, o);
        else if (mdt == DT_F16)
            attend<T, D>(qa, ks, vs, LD, MaskSmem<__half>{mr, m8}, i * BK, sk, scale, lane,
                         m0, m1, l0, l1, o);
        else if (mdt == DT_BF16)
            attend<T, D>(qa, ks, vs, LD, MaskSmem<__nv_bfloat16>{mr, m8}, i * BK, sk, scale,
                         lane, m0, m1, l0, l1, o);
        else
            attend<T, D>(qa, ks, vs, LD, MaskNone{}, i * BK, sk, scale, lane, m0, m1, l0, l1, o);
        __syncthreads(); // stage b is read before tile i + 2 lands there
    }
    quad_sum(l0, l1);
    store_rows<T, D>(p, off[4], r0, r1, ok0, ok1, t, o, l0, l1);
}

// Small grids (batch 1): one block a (batch, head) and 16 query rows, its NW
// warps splitting the keys (warp w takes key tiles w, w + NW, ...; each walks
// fewer tiles, and a tile's load is its own cp.async into its own shared
// memory: no block barrier until the end), then the partial (max, sum, O) of
// the warps combined through shared memory (flash-decoding inside a block).
// Minimum blocks 1: no register cap short of 255 (the default cap spilled 16
// bytes at D 64 fp16; 212 registers without).
template <typename T, int D, int NW>
__global__ __launch_bounds__(NW * 32, 1) void k_flash_split(pr_cu_flash p) {
    constexpr int LD = D + 8;
    __shared__ __align__(16) T Ks[NW][BK * LD];
    __shared__ __align__(16) T Vs[NW][BK * LD];
    __shared__ float Mx[NW][16], Lx[NW][16];
    __shared__ float Ox[NW - 1][D / 2][32]; // [fragment value][lane]: conflict-free
    int64_t off[5];
    batch_offsets(p, off);
    const T *Q = (const T *)p.q + off[0], *K = (const T *)p.k + off[1];
    const T *V = (const T *)p.v + off[2];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t sq = p.sq, sk = p.sk;
    const int64_t r0 = (int64_t)blockIdx.y * 16 + g, r1 = r0 + 8;
    const bool ok0 = r0 < sq, ok1 = r1 < sq;
    uint32_t qa[D / 16][4];
    load_q<T, D>(Q, p.rs[0], r0, r1, ok0, ok1, t, qa);
    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const int64_t mcs = p.mcs, mo0 = off[3] + r0 * p.rs[3], mo1 = off[3] + r1 * p.rs[3];
    const bool mpair = mcs == 1 && (mo0 & 1) == 0 && (mo1 & 1) == 0;
    const int64_t rsk = p.rs[1], rsv = p.rs[2];
    T *ks = Ks[warp], *vs = Vs[warp];
    for (int64_t k0 = (int64_t)warp * BK; k0 < sk; k0 += NW * BK) {
        constexpr int CPR = D / 8; // 16-byte chunks a row
#pragma unroll 4
        for (int c = lane; c < BK * CPR; c += 32) {
            int r = c / CPR, cc = (c % CPR) * 8;
            bool ok = k0 + r < sk;
            int64_t kr = ok ? k0 + r : 0;
            cp16(&ks[r * LD + cc], K + kr * rsk + cc, ok);
            cp16(&vs[r * LD + cc], V + kr * rsv + cc, ok);
        }
        asm volatile("cp.async.commit_group;");
        float mk[BK / 8][4];
        mask_regs<T>(p, p.m != nullptr && p.mdt, mpair, mcs, mo0, mo1, ok0, ok1, k0, sk, t, mk);
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncwarp();
        attend<T, D>(qa, ks, vs, LD, MaskRegs{mk}, k0, sk, p.scale, lane, m0, m1, l0, l1, o);
        __syncwarp(); // the tile is read before the next one lands
    }
    quad_sum(l0, l1);
    if (t == 0) {
        Mx[warp][g] = m0, Mx[warp][g + 8] = m1;
        Lx[warp][g] = l0, Lx[warp][g + 8] = l1;
    }
    __syncthreads();
    float M0 = -INFINITY, M1 = -INFINITY;
#pragma unroll
    for (int w = 0; w < NW; w++) M0 = fmaxf(M0, Mx[w][g]), M1 = fmaxf(M1, Mx[w][g + 8]);
    if (M0 == -INFINITY) M0 = 0.0f;
    if (M1 == -INFINITY) M1 = 0.0f;
    const float c0 = exp2f((m0 - M0) * LOG2E), c1 = exp2f((m1 - M1) * LOG2E);
    if (warp > 0) {
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            Ox[warp - 1][4 * j][lane] = o[j][0] * c0;
            Ox[warp - 1][4 * j + 1][lane] = o[j][1] * c0;
            Ox[warp - 1][4 * j + 2][lane] = o[j][2] * c1;
            Ox[warp - 1][4 * j + 3][lane] = o[j][3] * c1;
        }
    }
    __syncthreads();
    if (warp > 0) return;
    float L0 = 0.0f, L1 = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; w++) {
        L0 += Lx[w][g] * exp2f((Mx[w][g] - M0) * LOG2E);
        L1 += Lx[w][g + 8] * exp2f((Mx[w][g + 8] - M1) * LOG2E);
    }
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        o[j][0] *= c0, o[j][1] *= c0, o[j][2] *= c1, o[j][3] *= c1;
#pragma unroll
        for (int w = 0; w < NW - 1; w++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[j][e] += Ox[w][4 * j + e][lane];
    }
    store_rows<T, D>(p, off[4], r0, r1, ok0, ok1, t, o, L0, L1);
}

template <typename T, int NW>
int launch_split(cudaStream_t s, const pr_cu_flash &p) {
    dim3 grid((unsigned)p.nb, (unsigned)((p.sq + 15) / 16));
    switch (p.d) {
    case 32: k_flash_split<T, 32, NW><<<grid, NW * 32, 0, s>>>(p); break;
    case 64: k_flash_split<T, 64, NW><<<grid, NW * 32, 0, s>>>(p); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launch_result();
}

template <typename T, int D, int NW, int MINB>
int launch_dm(cudaStream_t s, const pr_cu_flash &p) {
    const size_t bytes = flash_smem(D, NW, (int)sizeof(T), p);
    if (bytes > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(k_flash<T, D, NW, MINB>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)bytes);
        if (e != cudaSuccess) return (int)e;
    }
    dim3 grid((unsigned)p.nb, (unsigned)((p.sq + NW * 16 - 1) / (NW * 16)));
    k_flash<T, D, NW, MINB><<<grid, NW * 32, bytes, s>>>(p);
    return launch_result();
}

// PRECIS_CUDA_FLASH_MINB (A/B; read once): 2 = the old register caps
// everywhere, 1 = no cap for 8 warps at D 64 too (no spill, 1 block an SM),
// 4 = a cap for 4 blocks an SM of 8 warps at D 32. 8 warps at D 32 default to
// 3 blocks an SM (80 registers, 24 bytes spilled; the 2-block cap of 128 spilled
// 52 with the mask-row and e4m3 store code of phase 15t; ptxas sm_90): MiniLM b64.
static int minb_env() {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("PRECIS_CUDA_FLASH_MINB");
        v = e && e[0] >= '1' && e[0] <= '4' && !e[1] ? e[0] - '0' : 0;
    }
    return v;
}

// The register cap lifted (MINB 1: no spill) for 2 warps at D <= 64 (small
// grids, batch 1: blocks for a fraction of the SMs, so occupancy costs nothing;
// the 170-register cap of 6 blocks spilled ~84 bytes), and for 8 warps at D 64
// only by PRECIS_CUDA_FLASH_MINB=1 (slower: flash_minb's comment).
template <typename T, int D, int NW>
int launch_d(cudaStream_t s, const pr_cu_flash &p) {
    if constexpr (NW == 2 && D <= 64) {
        if (minb_env() != 2) return launch_dm<T, D, NW, 1>(s, p);
    }
    if constexpr (NW == 8 && D == 64) {
        if (minb_env() == 1) return launch_dm<T, D, NW, 1>(s, p);
    }
    if constexpr (NW == 8 && D == 32) { // 3 blocks an SM (default); A/B: 2 (old), 4
        if (minb_env() == 2) return launch_dm<T, D, NW, 2>(s, p);
        if (minb_env() == 4) return launch_dm<T, D, NW, 4>(s, p);
    }
    return launch_dm<T, D, NW, 0>(s, p);
}

template <typename T, int NW>
int launch_nw(cudaStream_t s, const pr_cu_flash &p) {
    switch (p.d) {
    case 32: return launch_d<T, 32, NW>(s, p);
    case 64: return launch_d<T, 64, NW>(s, p);
    case 128: return launch_d<T, 128, NW>(s, p);
    default: return (int)cudaErrorInvalidValue;
    }
}

// 8 warps (128 query rows a block: K and V read once a head at sequence 128)
// for D <= 64 (MiniLM b64 D 32: 29 -> 27 us; BERT b64 D 64: phase 13t), 4 for
// D 128; 2 where 4 make fewer blocks than about two per SM of an H100 (batch
// 1) and D <= 64. PRECIS_CUDA_FLASH_NW=2/4/8 forces (cuda_attention.c).
template <typename T>
int launch(cudaStream_t s, const pr_cu_flash &p) {
    if (p.split) return launch_split<T, 2>(s, p);
    if (p.nw == 2 || p.nw == 4 || p.nw == 8)
        return p.nw == 2 ? launch_nw<T, 2>(s, p) : p.nw == 4 ? launch_nw<T, 4>(s, p) : launch_nw<T, 8>(s, p);
    if (p.nb * ((p.sq + 63) / 64) < 264 && p.d <= 64) return launch_nw<T, 2>(s, p);
    return p.d <= 64 ? launch_nw<T, 8>(s, p) : launch_nw<T, 4>(s, p);
}

} // namespace

extern "C" int pr_cu_flash_attention(void *stream, const pr_cu_flash *p) {
    if (p->nb <= 0 || p->sq <= 0) return 0;
    if (p->nb > 0x7fffffff || (p->sq + 15) / 16 > 65535) return (int)cudaErrorInvalidValue;
    if (p->split && p->d > 64) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    return p->dt == DT_F16 ? launch<__half>(s, *p)
           : p->dt == DT_BF16 ? launch<__nv_bfloat16>(s, *p)
                              : (int)cudaErrorInvalidValue;
}
