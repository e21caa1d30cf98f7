// Fused attention for fp16 / bf16 (flash style): one block of 4 warps takes
// 64 query rows of one (batch, head); it walks the keys 64 at a time, the
// K and V tiles staged in shared memory, S = Q K' and O += P V on Tensor
// Cores (mma.sync m16n8k16, float32 accumulators), the softmax online in
// float32 (running max and sum per row, exp2 of log2e-scaled scores). The
// scores never reach memory. Operands are read through their row and batch
// strides, so a head split / merge transpose can be folded into the loads
// and the store (pr_cu_flash).
#include "backends/cuda/cu_common.cuh"

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

// 16 bytes global -> shared without registers; in == false writes zeros.
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool in) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(a), "l"(gmem),
                 "r"(in ? 16 : 0));
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

// NW warps of 16 query rows each (BQ = 16 NW rows a block).
template <typename T, int D, int NW>
__global__ __launch_bounds__(NW * 32, D <= 64 ? 512 / (NW * 32) : 1) void k_flash(pr_cu_flash p) {
    constexpr int NT = NW * 32, BQ = NW * 16;
    constexpr int LD = D + 8; // padded rows: conflict-free fragment loads and ldmatrix
    __shared__ __align__(16) T Ks[BK * LD];
    __shared__ __align__(16) T Vs[BK * LD];
    // the mask tile in its own type (staged: p.mvec; rows padded by 16 bytes)
    // where it fits the 48 KB of static shared memory
    constexpr bool MST = D <= 64 && BQ * (BK * 4 + 16) + 2 * BK * LD * 2 <= 48 * 1024;
    constexpr int MRF = BK * 4 + 16, MRH = BK * 2 + 16;
    __shared__ __align__(16) char Ms[MST ? BQ * MRF : 16];
    const T *tag = nullptr;
    int64_t off[5] = {0, 0, 0, 0, 0}, bb = blockIdx.x;
#pragma unroll
    for (int d = PR_CU_FLASH_NB - 1; d >= 0; d--) { // static indices: no local copy of p
        int64_t i = bb % p.bdims[d];
        bb /= p.bdims[d];
#pragma unroll
        for (int o = 0; o < 5; o++) off[o] += i * p.bst[o][d];
    }
    const T *Q = (const T *)p.q + off[0], *K = (const T *)p.k + off[1];
    const T *V = (const T *)p.v + off[2];
    T *Y = (T *)p.y + off[4];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t sq = p.sq, sk = p.sk;
    const int64_t r0 = (int64_t)blockIdx.y * BQ + warp * 16 + g, r1 = r0 + 8;
    const bool ok0 = r0 < sq, ok1 = r1 < sq;

    uint32_t qa[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        int c = kk * 16 + t * 2;
        qa[kk][0] = ld32(Q + r0 * p.rs[0] + c, ok0);
        qa[kk][1] = ld32(Q + r1 * p.rs[0] + c, ok1);
        qa[kk][2] = ld32(Q + r0 * p.rs[0] + c + 8, ok0);
        qa[kk][3] = ld32(Q + r1 * p.rs[0] + c + 8, ok1);
    }
    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    // mask rows r0 / r1 (where the tile is not staged)
    const int64_t mcs = p.mcs, mo0 = off[3] + r0 * p.rs[3], mo1 = off[3] + r1 * p.rs[3];
    const int mdt = p.m ? p.mdt : 0;
    const float scale = p.scale;
    const int64_t rsk = p.rs[1], rsv = p.rs[2];
    const int64_t qb = (int64_t)blockIdx.y * BQ;

    for (int64_t k0 = 0; k0 < sk; k0 += BK) {
        __syncthreads(); // the previous tile's shared-memory reads are done
        // K and V tiles straight into shared memory (cp.async, zero-filled past sk)
        for (int c = threadIdx.x; c < BK * D / 8; c += NT) {
            int r = c / (D / 8), cc = (c % (D / 8)) * 8;
            bool in = k0 + r < sk;
            cp_async16(&Ks[r * LD + cc], in ? K + (k0 + r) * rsk + cc : K, in);
            cp_async16(&Vs[r * LD + cc], in ? V + (k0 + r) * rsv + cc : V, in);
        }
        // a whole mask tile with 16-byte rows: the same way, in its own type
        const bool mtile = MST && mdt && p.mvec && k0 + BK <= sk;
        const bool mf32 = mdt == DT_F32;
        const int mrow = mf32 ? MRF : MRH; // bytes a staged mask row
        if (mtile) {
            const int cpr = mf32 ? BK / 4 : BK / 8, es = mf32 ? 4 : 2;
            for (int c = threadIdx.x; c < BQ * cpr; c += NT) {
                int r = c / cpr, cc = (c % cpr) * (16 / es);
                bool in = qb + r < sq;
                const char *src = (const char *)p.m + (off[3] + (qb + r) * p.rs[3] + k0 + cc) * es;
                cp_async16(&Ms[r * mrow + cc * es], in ? src : (const char *)p.m, in);
            }
        }
        asm volatile("cp.async.commit_group;\n\tcp.async.wait_all;" ::: "memory");
        __syncthreads();
        float s[BK / 8][4];
#pragma unroll
        for (int n = 0; n < BK / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                const T *kr = &Ks[(n * 8 + g) * LD + kk * 16 + t * 2];
                mma(s[n], qa[kk], *reinterpret_cast<const uint32_t *>(kr),
                    *reinterpret_cast<const uint32_t *>(kr + 8), tag);
            }
        }
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int n = 0; n < BK / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int64_t col = k0 + n * 8 + t * 2 + (e & 1);
                float mv = 0.0f;
                if (mtile) {
                    const int rr = warp * 16 + g + (e < 2 ? 0 : 8), cl = n * 8 + t * 2 + (e & 1);
                    const char *mp = &Ms[rr * (mf32 ? MRF : MRH) + cl * (mf32 ? 4 : 2)];
                    mv = mf32              ? *reinterpret_cast<const float *>(mp)
                         : mdt == DT_F16 ? __half2float(*reinterpret_cast<const __half *>(mp))
                                         : __bfloat162float(*reinterpret_cast<const __nv_bfloat16 *>(mp));
                } else if (mdt && col < sk && (e < 2 ? ok0 : ok1)) {
                    mv = ldf(p.m, mdt, (e < 2 ? mo0 : mo1) + col * mcs);
                }
                float v = col < sk ? fmaf(s[n][e], scale, mv) * LOG2E : -INFINITY;
                s[n][e] = v;
                if (e < 2) mx0 = fmaxf(mx0, v);
                else mx1 = fmaxf(mx1, v);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float b0 = mx0 == -INFINITY ? 0.0f : mx0, b1 = mx1 == -INFINITY ? 0.0f : mx1;
        const float c0 = exp2f(m0 - b0), c1 = exp2f(m1 - b1);
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
            s[n][0] = exp2f(s[n][0] - b0);
            s[n][1] = exp2f(s[n][1] - b0);
            s[n][2] = exp2f(s[n][2] - b1);
            s[n][3] = exp2f(s[n][3] - b1);
        }
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t a[4] = {pack2(s[2 * kk][0], s[2 * kk][1], tag),
                             pack2(s[2 * kk][2], s[2 * kk][3], tag),
                             pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], tag),
                             pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], tag)};
            // the row sums from the rounded P that the product uses
            float2 f;
            f = unpack2(a[0], tag), l0 += f.x + f.y;
            f = unpack2(a[2], tag), l0 += f.x + f.y;
            f = unpack2(a[1], tag), l1 += f.x + f.y;
            f = unpack2(a[3], tag), l1 += f.x + f.y;
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
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float i0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, i1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        int c = j * 8 + t * 2;
        if (ok0) *reinterpret_cast<uint32_t *>(Y + r0 * p.rs[4] + c) = pack2(o[j][0] * i0, o[j][1] * i0, tag);
        if (ok1) *reinterpret_cast<uint32_t *>(Y + r1 * p.rs[4] + c) = pack2(o[j][2] * i1, o[j][3] * i1, tag);
    }
}

template <typename T, int NW>
int launch_nw(cudaStream_t s, const pr_cu_flash &p) {
    dim3 grid((unsigned)p.nb, (unsigned)((p.sq + NW * 16 - 1) / (NW * 16)));
    switch (p.d) {
    case 32: k_flash<T, 32, NW><<<grid, NW * 32, 0, s>>>(p); break;
    case 64: k_flash<T, 64, NW><<<grid, NW * 32, 0, s>>>(p); break;
    case 128: k_flash<T, 128, NW><<<grid, NW * 32, 0, s>>>(p); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launch_result();
}

// 4 warps (64 query rows a block); 8 for D 32 (K and V read once a head at
// sequence 128: MiniLM b64 29 -> 27 us, not faster for D 64); 2 where 4
// make fewer blocks than about two per SM of an H100 (batch 1) and D <= 64.
template <typename T>
int launch(cudaStream_t s, const pr_cu_flash &p) {
    if (p.nb * ((p.sq + 63) / 64) < 264 && p.d <= 64) return launch_nw<T, 2>(s, p);
    return p.d == 32 ? launch_nw<T, 8>(s, p) : launch_nw<T, 4>(s, p);
}

} // namespace

extern "C" int pr_cu_flash_attention(void *stream, const pr_cu_flash *p) {
    if (p->nb <= 0 || p->sq <= 0) return 0;
    if (p->nb > 0x7fffffff || (p->sq + 63) / 64 > 65535) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    return p->dt == DT_F16 ? launch<__half>(s, *p)
           : p->dt == DT_BF16 ? launch<__nv_bfloat16>(s, *p)
                              : (int)cudaErrorInvalidValue;
}
