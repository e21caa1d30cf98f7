// Row kernels: Softmax / LogSoftmax, LayerNormalization (and EmbedLayerNorm:
// the embeddings' lookups and sum in its row load), the softmax of the
// attention scores, a general fused attention (one block per query row) and
// reductions. Sums in float32.
#include "backends/cuda/cu_common.cuh"

// ----------------------------------------------------------------- softmax

// One warp per contiguous row.
__global__ void k_softmax_warp(const void *x, int xdt, void *y, int ydt, int64_t rows,
                               int64_t L, int log) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int64_t b = row * L;
    float m = -INFINITY;
    for (int64_t j = lane; j < L; j += 32) m = fmaxf(m, ldf(x, xdt, b + j));
    m = warp_max(m);
    float s = 0.0f;
    for (int64_t j = lane; j < L; j += 32) s += expf(ldf(x, xdt, b + j) - m);
    s = warp_sum(s);
    float ls = logf(s), inv = 1.0f / s;
    for (int64_t j = lane; j < L; j += 32) {
        float v = ldf(x, xdt, b + j) - m;
        stf(y, ydt, b + j, log ? v - ls : expf(v) * inv);
    }
}

// One block per contiguous row (long rows).
__global__ void k_softmax_block(const void *x, int xdt, void *y, int ydt, int64_t L, int log) {
    __shared__ float sh[32];
    int64_t b = blockIdx.x * L;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) m = fmaxf(m, ldf(x, xdt, b + j));
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) s += expf(ldf(x, xdt, b + j) - m);
    s = block_sum(s, sh);
    float ls = logf(s), inv = 1.0f / s;
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
        float v = ldf(x, xdt, b + j) - m;
        stf(y, ydt, b + j, log ? v - ls : expf(v) * inv);
    }
}

// One thread per strided row (the axis is not the last).
__global__ void k_softmax_strided(const void *x, int xdt, void *y, int ydt, int64_t outer,
                                  int64_t L, int64_t inner, int log) {
    int64_t n = outer * inner;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < n;
         r += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = (r / inner) * L * inner + r % inner;
        float m = -INFINITY, s = 0.0f;
        for (int64_t j = 0; j < L; j++) m = fmaxf(m, ldf(x, xdt, b + j * inner));
        for (int64_t j = 0; j < L; j++) s += expf(ldf(x, xdt, b + j * inner) - m);
        float ls = logf(s), inv = 1.0f / s;
        for (int64_t j = 0; j < L; j++) {
            float v = ldf(x, xdt, b + j * inner) - m;
            stf(y, ydt, b + j * inner, log ? v - ls : expf(v) * inv);
        }
    }
}

extern "C" int pr_cu_softmax(void *stream, const void *x, int xdt, void *y, int ydt,
                             int64_t outer, int64_t L, int64_t inner, int log) {
    cudaStream_t s = (cudaStream_t)stream;
    if (outer * L * inner <= 0) return 0;
    if (inner == 1 && L <= 2048) {
        int64_t blocks = (outer + 7) / 8;
        k_softmax_warp<<<(unsigned)blocks, 256, 0, s>>>(x, xdt, y, ydt, outer, L, log);
    } else if (inner == 1) {
        k_softmax_block<<<(unsigned)outer, 512, 0, s>>>(x, xdt, y, ydt, L, log);
    } else {
        k_softmax_strided<<<grid_for(outer * inner, 128), 128, 0, s>>>(x, xdt, y, ydt, outer, L,
                                                                      inner, log);
    }
    return launch_result();
}

// --------------------------------------------------------------- layernorm

__global__ void k_layernorm_warp(const void *x, int xdt, const void *g, int gdt, const void *bb,
                                 int bdt, void *y, int ydt, int64_t rows, int64_t L, float eps) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    int64_t b = row * L;
    float s = 0.0f;
    for (int64_t j = lane; j < L; j += 32) s += ldf(x, xdt, b + j);
    float mean = warp_sum(s) / (float)L;
    float q = 0.0f;
    for (int64_t j = lane; j < L; j += 32) {
        float d = ldf(x, xdt, b + j) - mean;
        q += d * d;
    }
    float rstd = rsqrtf(warp_sum(q) / (float)L + eps);
    for (int64_t j = lane; j < L; j += 32) {
        float v = (ldf(x, xdt, b + j) - mean) * rstd * ldf(g, gdt, j);
        if (bb) v += ldf(bb, bdt, j);
        stf(y, ydt, b + j, v);
    }
}

__global__ void k_layernorm_block(const void *x, int xdt, const void *g, int gdt, const void *bb,
                                  int bdt, void *y, int ydt, int64_t L, float eps) {
    __shared__ float sh[32];
    int64_t b = blockIdx.x * L;
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) s += ldf(x, xdt, b + j);
    float mean = block_sum(s, sh) / (float)L;
    float q = 0.0f;
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
        float d = ldf(x, xdt, b + j) - mean;
        q += d * d;
    }
    float rstd = rsqrtf(block_sum(q, sh) / (float)L + eps);
    for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
        float v = (ldf(x, xdt, b + j) - mean) * rstd * ldf(g, gdt, j);
        if (bb) v += ldf(bb, bdt, j);
        stf(y, ydt, b + j, v);
    }
}

// One warp per row held in registers (NPL values a lane): one read, one write.
template <typename T, int NPL>
__global__ void k_layernorm_reg(const T *__restrict__ x, const void *g, int gdt, const void *bb,
                                int bdt, T *__restrict__ y, int64_t rows, int L, float eps) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T *xr = x + row * L;
    T *yr = y + row * L;
    float v[NPL], s = 0.0f;
#pragma unroll
    for (int k = 0; k < NPL; k++) {
        int j = lane + 32 * k;
        v[k] = j < L ? tof(xr[j]) : 0.0f;
        s += v[k];
    }
    float mean = warp_sum(s) / (float)L, q = 0.0f;
#pragma unroll
    for (int k = 0; k < NPL; k++) {
        float d = lane + 32 * k < L ? v[k] - mean : 0.0f;
        q += d * d;
    }
    float rstd = rsqrtf(warp_sum(q) / (float)L + eps);
#pragma unroll
    for (int k = 0; k < NPL; k++) {
        int j = lane + 32 * k;
        if (j >= L) break;
        float o = (v[k] - mean) * rstd * ldf(g, gdt, j);
        if (bb) o += ldf(bb, bdt, j);
        yr[j] = fromf<T>(o);
    }
}

// x / s correctly rounded (as x / s) from qr = RN(1 / s): q = RN(x qr) is within
// an ulp and one FMA residual step rounds it right (Markstein; s > 0 and normal).
// Five instructions for div.rn's ~10 (its MUFU.RCP + FCHK branch); an x / s that
// overflows (q infinite: the residual is NaN) keeps q. The LayerNorm's fp8 output
// spent most of its instructions in the divisions (ncu: 14 cycles an issued
// instruction, issue-bound, at BERT b64).
__device__ __forceinline__ float q8_div(float x, float s, float qr) {
    float q = __fmul_rn(x, qr);
    float e = fmaf(-s, q, x);
    float r = fmaf(e, qr, q);
    return r == r ? r : q;
}
// Two floats -> two e4m3 codes (x in the low byte), RN, saturated: to_e4m3's numbers.
__device__ __forceinline__ unsigned e4m3x2(float2 f) {
    return (unsigned)__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3);
}

// Scale and B of one 16-byte chunk c (8 elements): float32 as two 16-byte loads
// each (from global memory or the block's staged copy), else element by element.
__device__ __forceinline__ void ln_gb8(const void *g, int gdt, const void *bb, int bdt, int c,
                                       float *gv, float *bv) {
    if (gdt == DT_F32 && (!bb || bdt == DT_F32)) { // float32 Scale / B: 32-byte loads
        const float4 *g4 = reinterpret_cast<const float4 *>(g) + 2 * c;
        float4 a = g4[0], b = g4[1];
        gv[0] = a.x, gv[1] = a.y, gv[2] = a.z, gv[3] = a.w;
        gv[4] = b.x, gv[5] = b.y, gv[6] = b.z, gv[7] = b.w;
        if (bb) {
            const float4 *b4 = reinterpret_cast<const float4 *>(bb) + 2 * c;
            a = b4[0], b = b4[1];
            bv[0] = a.x, bv[1] = a.y, bv[2] = a.z, bv[3] = a.w;
            bv[4] = b.x, bv[5] = b.y, bv[6] = b.z, bv[7] = b.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            gv[i] = ldf(g, gdt, c * 8 + i);
            if (bb) bv[i] = ldf(bb, bdt, c * 8 + i);
        }
    }
}

// One output chunk of the vector LayerNorms: y = (v - mean) rstd Scale + B
// stored as T (16 bytes at yc) and, when yq, e4m3(y / qs) of the stored y
// (8 bytes at yq): QuantizeLinear's numbers (cu_fp8.cu's k_q8_vec).
template <typename T, bool FQ>
__device__ __forceinline__ void ln_out8(const float *v, float mean, float rstd, const void *g,
                                        int gdt, const void *bb, int bdt, int c, uint4 *yc,
                                        uint2 *yq, float qs, float qr) {
    uint4 w;
    T *h = reinterpret_cast<T *>(&w);
    float gv[8], bv[8];
    ln_gb8(g, gdt, bb, bdt, c, gv, bv);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        float o = (v[i] - mean) * rstd * gv[i];
        if (bb) o += bv[i];
        h[i] = fromf<T>(o);
    }
    *yc = w;
    if (yq) {
        unsigned p[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float a = tof(h[2 * i]), b = tof(h[2 * i + 1]);
            float2 f = FQ ? make_float2(q8_div(a, qs, qr), q8_div(b, qs, qr))
                          : make_float2(a / qs, b / qs);
            p[i] = e4m3x2(f);
        }
        uint2 u;
        u.x = p[0] | (p[1] << 16);
        u.y = p[2] | (p[3] << 16);
        *yq = u;
    }
}

// 16 B global -> shared without registers (cp.async, sm_80+).
__device__ __forceinline__ void ln_cp16(void *dst, const void *src) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(src));
}

// fp16 / bf16 rows of L % 8 == 0 elements: one warp a row, NV 16-byte chunks
// a lane held in registers (L <= 256 NV). yq (may be NULL): also e4m3(y / qs)
// of the stored y (QuantizeLinear's numbers: cu_fp8.cu's k_q8_vec), 8 bytes a
// chunk.
// LPR lanes a row (32, or 16: two rows a warp, for rows of <= 48 chunks -- MiniLM's
// 384 = 48 chunks left lanes 16-31 one chunk and 0-15 two with a warp a row).
template <int LPR> __device__ __forceinline__ float row_sum(float v) {
#pragma unroll
    for (int o = LPR / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Scale and B (float32, nc * 2 float4 each) into shared memory by cp.async, Scale
// first: every thread of the block takes part (the waits in ln_staged_gb)
__device__ __forceinline__ void ln_stage_gb(float4 *sgb, const void *g, const void *bb, int nc) {
    for (int i = threadIdx.x; i < 2 * nc; i += blockDim.x) {
        ln_cp16(&sgb[i], reinterpret_cast<const float4 *>(g) + i);
        if (bb) ln_cp16(&sgb[2 * nc + i], reinterpret_cast<const float4 *>(bb) + i);
    }
    asm volatile("cp.async.commit_group;");
}

// ln_stage_gb's copies landed (a block barrier): Scale / B read from shared memory
__device__ __forceinline__ void ln_staged_gb(const float4 *sgb, const void *bb, int nc,
                                             const void *&gs, const void *&bs) {
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    gs = sgb;
    bs = bb ? (const void *)(sgb + 2 * nc) : nullptr;
}

// A row's mean and 1 / std from the NV x 8 values each of its LPR lanes holds (s: the
// lane's sum of them; chunks c >= nc hold zeros and are left out of the variance)
template <int NV, int LPR>
__device__ __forceinline__ void ln_stats(const float (&v)[NV][8], float s, int lane, int nc, int L,
                                         float eps, float &mean, float &rstd) {
    float q = 0.0f;
    mean = row_sum<LPR>(s) / (float)L;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (lane + LPR * k < nc)
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float d = v[k][i] - mean;
                q += d * d;
            }
    rstd = rsqrtf(row_sum<LPR>(q) / (float)L + eps);
}

// SG: float32 Scale and B staged in shared memory by cp.async at the start (they
// were loaded after the two reductions, on the path of every warp of the one wave
// a launch is: MiniLM b64 512 blocks, 0.97 waves; ncu 18 cycles an issued
// instruction); PRECIS_CUDA_LN_STAGE=0 loads them from global memory (A/B).
template <typename T, int NV, bool FQ, int MINB, int LPR = 32, bool SG = false>
__global__ __launch_bounds__(256, MINB) void k_layernorm_vec(const T *__restrict__ x, const void *g, int gdt, const void *bb,
                                int bdt, T *__restrict__ y, int64_t rows, int L, float eps,
                                uint2 *__restrict__ yq, float qs, float qr) {
    const int lane0 = threadIdx.x & 31, lane = lane0 % LPR, nc = L >> 3;
    int64_t row = (blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5)) * (32 / LPR) +
                  lane0 / LPR;
    const bool ok = row < rows; // half-warps: both halves stay for the shuffles
    __shared__ __align__(16) float4 sgb[SG ? 2 * 2 * NV * LPR : 1]; // Scale, then B
    if (SG) ln_stage_gb(sgb, g, bb, nc); // every thread stays for the barrier below
    if (LPR == 32 && !SG && !ok) return;
    if (!ok) row = 0;
    const uint4 *xr = reinterpret_cast<const uint4 *>(x + row * L);
    uint4 *yr = reinterpret_cast<uint4 *>(y + row * L);
    float v[NV][8], s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = lane + LPR * k;
        uint4 w = ok && c < nc ? xr[c] : make_uint4(0, 0, 0, 0);
        const T *h = reinterpret_cast<const T *>(&w);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            v[k][i] = tof(h[i]);
            s += v[k][i];
        }
    }
    float mean, rstd;
    ln_stats<NV, LPR>(v, s, lane, nc, L, eps, mean, rstd);
    const void *gs = g, *bs = bb;
    if (SG) ln_staged_gb(sgb, bb, nc, gs, bs);
    if (!ok) return; // past the shuffles (and the barrier)
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = lane + LPR * k;
        if (c >= nc) break;
        ln_out8<T, FQ>(v[k], mean, rstd, gs, gdt, bs, bdt, c, yr + c, yq ? yq + row * nc + c : nullptr,
                       qs, qr);
    }
}

// k_layernorm_vec with the row kept as stored (NV uint4 a lane, half the
// registers of NV x 8 floats) and both sums in one pass about a shift (the
// row's first element, so |mean - shift| stays of the spread's order: no
// cancellation in q / L - m^2), the two warp reductions interleaved. The
// output pass converts the stored values again (exact). PRECIS_CUDA_LN_FORM=1.
template <typename T, int NV, bool FQ, int MINB>
__global__ __launch_bounds__(256, MINB) void k_layernorm_pk(const T *__restrict__ x, const void *g, int gdt, const void *bb,
                               int bdt, T *__restrict__ y, int64_t rows, int L, float eps,
                               uint2 *__restrict__ yq, float qs, float qr) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31, nc = L >> 3;
    if (row >= rows) return;
    const uint4 *xr = reinterpret_cast<const uint4 *>(x + row * L);
    uint4 *yr = reinterpret_cast<uint4 *>(y + row * L);
    uint4 w[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = lane + 32 * k;
        w[k] = c < nc ? xr[c] : make_uint4(0, 0, 0, 0);
    }
    const float sh = __shfl_sync(0xffffffffu, tof(reinterpret_cast<const T *>(&w[0])[0]), 0);
    float s = 0.0f, q = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (lane + 32 * k < nc) {
            const T *h = reinterpret_cast<const T *>(&w[k]);
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float d = tof(h[i]) - sh;
                s += d;
                q = fmaf(d, d, q);
            }
        }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
        q += __shfl_xor_sync(0xffffffffu, q, o);
    }
    const float inv = 1.0f / (float)L, ds = s * inv;
    const float mean = sh + ds, rstd = rsqrtf(fmaxf(q * inv - ds * ds, 0.0f) + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = lane + 32 * k;
        if (c >= nc) break;
        const T *hx = reinterpret_cast<const T *>(&w[k]);
        float v[8];
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = tof(hx[i]);
        ln_out8<T, FQ>(v, mean, rstd, g, gdt, bb, bdt, c, yr + c, yq ? yq + row * nc + c : nullptr,
                       qs, qr);
    }
}

template <typename T, int MINB>
static bool layernorm_pk_launch(cudaStream_t s, const T *xx, const void *g, int gdt,
                                const void *b, int bdt, T *yy, int64_t rows, int l, float eps,
                                uint2 *yq, float qs, float qr, unsigned grid, unsigned tpb) {
    if (l <= 256) k_layernorm_pk<T, 1, true, MINB><<<grid, tpb, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr);
    else if (l <= 512) k_layernorm_pk<T, 2, true, MINB><<<grid, tpb, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr);
    else if (l <= 768) k_layernorm_pk<T, 3, true, MINB><<<grid, tpb, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr);
    else if (l <= 1024) k_layernorm_pk<T, 4, true, MINB><<<grid, tpb, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr);
    else return false;
    return true;
}

template <typename T, bool FQ, int MINB, bool SG = false>
static bool layernorm_vec_launch(cudaStream_t s, const T *xx, const void *g, int gdt,
                                 const void *b, int bdt, T *yy, int64_t rows, int l, float eps,
                                 uint2 *yq, float qs, float qr, unsigned grid, unsigned tpb) {
    const char *lp = getenv("PRECIS_CUDA_LN_LPR"); // 32: a warp a row at L <= 384 too (A/B)
    const bool l16 = l <= 384 && !(lp && !strcmp(lp, "32")); // two rows a warp, 16 lanes each
    const unsigned gr = l16 ? (unsigned)((rows + 15) / 16) : grid;
#define LN_VEC(NV, LPR) k_layernorm_vec<T, NV, FQ, MINB, LPR, SG><<<gr, tpb, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr)
    if (l16) {
        if (l <= 128) LN_VEC(1, 16);
        else if (l <= 256) LN_VEC(2, 16);
        else LN_VEC(3, 16);
    } else if (l <= 256) LN_VEC(1, 32);
    else if (l <= 512) LN_VEC(2, 32);
    else if (l <= 768) LN_VEC(3, 32);
    else if (l <= 1024) LN_VEC(4, 32);
    else return false;
#undef LN_VEC
    return true;
}

template <typename T>
static bool layernorm_vec(cudaStream_t s, const void *x, const void *g, int gdt, const void *b,
                          int bdt, void *y, int64_t rows, int64_t L, float eps, void *q,
                          float qs) {
    if (L % 8 || ((uintptr_t)x & 15) || ((uintptr_t)y & 15) || ((uintptr_t)q & 7)) return false;
    if ((gdt == DT_F32 && ((uintptr_t)g & 15)) || (b && bdt == DT_F32 && ((uintptr_t)b & 15)))
        return false;
    // 8 rows a block (2 rows a block for BERT b1's 128 rows was tried: 4.5 us a
    // LayerNorm either way under ncu, the launch's floor)
    const unsigned tpb = 256;
    unsigned grid = (unsigned)((rows + 7) / 8);
    const T *xx = (const T *)x;
    T *yy = (T *)y;
    int l = (int)L;
    uint2 *yq = (uint2 *)q;
    float qr = q ? 1.0f / qs : 0.0f;
    // A/B knobs, read each launch (tests flip them): PRECIS_CUDA_LN_FASTQ=0 divides
    // (div.rn) for the e4m3 output; PRECIS_CUDA_LN_MINB=6 / 8 caps the registers
    // for 6 / 8 blocks an SM (58 registers: 4 blocks, 1.94 waves at BERT b64)
    const char *ev = getenv("PRECIS_CUDA_LN_FASTQ"), *mb = getenv("PRECIS_CUDA_LN_MINB");
    const char *fm = getenv("PRECIS_CUDA_LN_FORM");
    const int minb = mb ? atoi(mb) : 0;
    if (fm && fm[0] == '1' && !(ev && ev[0] == '0')) {
        if (minb == 8)
            return layernorm_pk_launch<T, 8>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
        if (minb == 6)
            return layernorm_pk_launch<T, 6>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
        return layernorm_pk_launch<T, 1>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
    }
    if (ev && ev[0] == '0')
        return layernorm_vec_launch<T, false, 1>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
    if (minb == 6)
        return layernorm_vec_launch<T, true, 6>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
    if (minb == 8)
        return layernorm_vec_launch<T, true, 8>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
    // float32 Scale / B staged in shared memory (k_layernorm_vec's SG; PRECIS_CUDA_LN_STAGE=0: not)
    const char *sg = getenv("PRECIS_CUDA_LN_STAGE");
    if (gdt == DT_F32 && (!b || bdt == DT_F32) && !(sg && sg[0] == '0'))
        return layernorm_vec_launch<T, true, 1, true>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
    return layernorm_vec_launch<T, true, 1>(s, xx, g, gdt, b, bdt, yy, rows, l, eps, yq, qs, qr, grid, tpb);
}

template <typename T>
static bool layernorm_reg(cudaStream_t s, const void *x, const void *g, int gdt, const void *b,
                          int bdt, void *y, int64_t rows, int64_t L, float eps) {
    unsigned grid = (unsigned)((rows + 7) / 8);
    const T *xx = (const T *)x;
    T *yy = (T *)y;
    int l = (int)L;
    if (L <= 128) k_layernorm_reg<T, 4><<<grid, 256, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps);
    else if (L <= 256) k_layernorm_reg<T, 8><<<grid, 256, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps);
    else if (L <= 512) k_layernorm_reg<T, 16><<<grid, 256, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps);
    else if (L <= 1024) k_layernorm_reg<T, 32><<<grid, 256, 0, s>>>(xx, g, gdt, b, bdt, yy, rows, l, eps);
    else return false;
    return true;
}

static int layernorm_plain(cudaStream_t s, const void *x, int xdt, const void *gamma, int gdt,
                           const void *beta, int bdt, void *y, int ydt, int64_t rows, int64_t L,
                           float eps);

extern "C" int pr_cu_layernorm(void *stream, const void *x, int xdt, const void *gamma, int gdt,
                               const void *beta, int bdt, void *y, int ydt, int64_t rows,
                               int64_t L, float eps, void *yq, float qs) {
    cudaStream_t s = (cudaStream_t)stream;
    if (rows * L <= 0) return 0;
    if (xdt == ydt && L <= 1024) {
        bool ok = xdt == DT_F16    ? layernorm_vec<__half>(s, x, gamma, gdt, beta, bdt, y, rows, L, eps, yq, qs)
                  : xdt == DT_BF16 ? layernorm_vec<__nv_bfloat16>(s, x, gamma, gdt, beta, bdt, y, rows, L, eps, yq, qs)
                                   : false;
        if (ok) return launch_result();
    }
    int r = layernorm_plain(s, x, xdt, gamma, gdt, beta, bdt, y, ydt, rows, L, eps);
    if (r || !yq) return r;
    return pr_cu_quant_fp8(stream, y, ydt, yq, DT_F8, rows * L, qs, 1); // y as stored
}

static int layernorm_plain(cudaStream_t s, const void *x, int xdt, const void *gamma, int gdt,
                           const void *beta, int bdt, void *y, int ydt, int64_t rows, int64_t L,
                           float eps) {
    if (xdt == ydt && L <= 1024) {
        bool ok;
        ok = xdt == DT_F16    ? layernorm_reg<__half>(s, x, gamma, gdt, beta, bdt, y, rows, L, eps)
                  : xdt == DT_BF16 ? layernorm_reg<__nv_bfloat16>(s, x, gamma, gdt, beta, bdt, y, rows, L, eps)
                  : xdt == DT_F32  ? layernorm_reg<float>(s, x, gamma, gdt, beta, bdt, y, rows, L, eps)
                                   : false;
        if (ok) return launch_result();
    }
    if (L <= 4096)
        k_layernorm_warp<<<(unsigned)((rows + 7) / 8), 256, 0, s>>>(x, xdt, gamma, gdt, beta, bdt,
                                                                    y, ydt, rows, L, eps);
    else
        k_layernorm_block<<<(unsigned)rows, 512, 0, s>>>(x, xdt, gamma, gdt, beta, bdt, y, ydt, L,
                                                         eps);
    return launch_result();
}

// ------------------------------------------- embeddings: Gathers + Sum + LayerNorm

// EmbedLayerNorm (ops.inc; passes/pass_embed_ln.c): X = RN(RN(g0 + g1) + P) in T
// with g0 = RN(W0[I0]), g1 = RN(W1[I1]) the Gathers' rows in T (cu_elem.cu
// k_gather8 / k_gather16; the Sum kernel's numbers: k_sum3v), then k_layernorm_vec's
// normalization and output chunk (ln_out8), so Y / Yq are the unfused cuda
// path's bytes. One pass instead of four launches (two Gathers, the Sum, the
// LayerNorm: MiniLM b64 26.6 us under ncu). Index semantics as cu_elem.cu's
// gather_row (negative from the end; out of range: a zero row).
struct pr_cu_emb_args {
    const void *w0, *w1, *p, *i0, *i1;
    int w0dt, w1dt, pdt, i0dt, i1dt;
    int64_t v0, v1, prow; // table rows; P's rows (X's row r reads P row r % prow)
};

template <typename T, int NV, int LPR, bool SG>
__global__ __launch_bounds__(256, 1) void k_embed_ln(pr_cu_emb_args a, const void *g, int gdt,
                                                     const void *bb, int bdt, T *__restrict__ y,
                                                     int64_t rows, int L, float eps,
                                                     uint2 *__restrict__ yq, float qs, float qr) {
    const int lane0 = threadIdx.x & 31, lane = lane0 % LPR, nc = L >> 3;
    int64_t row = (blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5)) * (32 / LPR) +
                  lane0 / LPR;
    const bool ok = row < rows; // half-warps: both halves stay for the shuffles
    __shared__ __align__(16) float4 sgb[SG ? 2 * 2 * NV * LPR : 1]; // Scale, then B
    if (SG) ln_stage_gb(sgb, g, bb, nc); // every thread stays for the barrier below
    if (!ok) row = 0;
    const int64_t r0 = ok ? gather_row(a.i0, a.i0dt, row, a.v0) : -1;
    const int64_t r1 = ok ? gather_row(a.i1, a.i1dt, row, a.v1) : -1;
    const int64_t rp = row % a.prow;
    float v[NV][8], s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = lane + LPR * k;
        float x0[8] = {0, 0, 0, 0, 0, 0, 0, 0}, x1[8] = {0, 0, 0, 0, 0, 0, 0, 0}, xp[8];
        if (ok && c < nc) {
            if (r0 >= 0) ld8f(a.w0, a.w0dt, r0 * nc + c, x0);
            if (r1 >= 0) ld8f(a.w1, a.w1dt, r1 * nc + c, x1);
            ld8f(a.p, a.pdt, rp * nc + c, xp);
#pragma unroll
            for (int i = 0; i < 8; i++) { // the Gathers' rows in T, then the Sum's two roundings
                const float g0 = tof(fromf<T>(x0[i])), g1 = tof(fromf<T>(x1[i]));
                float t = tof(fromf<T>(g0 + g1)) + xp[i];
                v[k][i] = tof(fromf<T>(t));
                s += v[k][i];
            }
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) v[k][i] = 0.0f;
        }
    }
    float mean, rstd;
    ln_stats<NV, LPR>(v, s, lane, nc, L, eps, mean, rstd);
    const void *gs = g, *bs = bb;
    if (SG) ln_staged_gb(sgb, bb, nc, gs, bs);
    if (!ok) return; // past the shuffles (and the barrier)
    uint4 *yr = reinterpret_cast<uint4 *>(y + row * L);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        int c = lane + LPR * k;
        if (c >= nc) break;
        ln_out8<T, true>(v[k], mean, rstd, gs, gdt, bs, bdt, c, yr + c,
                         yq ? yq + row * nc + c : nullptr, qs, qr);
    }
}

template <typename T, bool SG>
static void embed_ln_launch(cudaStream_t s, const pr_cu_emb_args &a, const void *g, int gdt,
                            const void *b, int bdt, T *y, int64_t rows, int l, float eps,
                            uint2 *yq, float qs, float qr) {
    const unsigned g16 = (unsigned)((rows + 15) / 16), g32 = (unsigned)((rows + 7) / 8);
#define EMB_LN(NV, LPR, GR) k_embed_ln<T, NV, LPR, SG><<<GR, 256, 0, s>>>(a, g, gdt, b, bdt, y, rows, l, eps, yq, qs, qr)
    if (l <= 128) EMB_LN(1, 16, g16);
    else if (l <= 256) EMB_LN(2, 16, g16);
    else if (l <= 384) EMB_LN(3, 16, g16);
    else if (l <= 512) EMB_LN(2, 32, g32);
    else if (l <= 768) EMB_LN(3, 32, g32);
    else EMB_LN(4, 32, g32);
#undef EMB_LN
}

// Y (ydt fp16 / bf16, rows x L, L % 8 == 0, L <= 1024) = LayerNorm(W0[I0] + W1[I1]
// + P) as above; tables / P float32 / fp16 / bf16 rows of L; yq (may be NULL):
// e4m3(Y / qs). Returns cudaErrorInvalidValue for what the kernel does not run
// (the pass makes only what it runs), else the launch's result.
extern "C" int pr_cu_embed_layernorm(void *stream, const void *w0, int w0dt, int64_t v0,
                                     const void *i0, int i0dt, const void *w1, int w1dt,
                                     int64_t v1, const void *i1, int i1dt, const void *p, int pdt,
                                     int64_t prow, const void *gamma, int gdt, const void *beta,
                                     int bdt, void *y, int ydt, int64_t rows, int64_t L, float eps,
                                     void *yq, float qs) {
    cudaStream_t s = (cudaStream_t)stream;
    if (rows * L <= 0) return 0;
    auto al16 = [](const void *q) { return ((uintptr_t)q & 15) == 0; };
    auto fl = [](int dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; };
    auto ix = [](int dt) { return dt == DT_I64 || dt == DT_I32; };
    if (L % 8 || L > 1024 || prow <= 0 || (ydt != DT_F16 && ydt != DT_BF16) || !fl(w0dt) ||
        !fl(w1dt) || !fl(pdt) || !ix(i0dt) || !ix(i1dt) || !al16(w0) || !al16(w1) || !al16(p) ||
        !al16(y) || ((uintptr_t)yq & 7) || (gdt == DT_F32 && !al16(gamma)) ||
        (beta && bdt == DT_F32 && !al16(beta)))
        return (int)cudaErrorInvalidValue;
    pr_cu_emb_args a = {w0, w1, p, i0, i1, w0dt, w1dt, pdt, i0dt, i1dt, v0, v1, prow};
    const int l = (int)L;
    const float qr = yq ? 1.0f / qs : 0.0f;
    // float32 Scale / B staged in shared memory as the LayerNorm's default
    // (PRECIS_CUDA_LN_STAGE=0: not)
    const char *sg = getenv("PRECIS_CUDA_LN_STAGE");
    const bool stage = gdt == DT_F32 && (!beta || bdt == DT_F32) && !(sg && sg[0] == '0');
    if (ydt == DT_F16) {
        if (stage) embed_ln_launch<__half, true>(s, a, gamma, gdt, beta, bdt, (__half *)y, rows, l, eps, (uint2 *)yq, qs, qr);
        else embed_ln_launch<__half, false>(s, a, gamma, gdt, beta, bdt, (__half *)y, rows, l, eps, (uint2 *)yq, qs, qr);
    } else {
        if (stage) embed_ln_launch<__nv_bfloat16, true>(s, a, gamma, gdt, beta, bdt, (__nv_bfloat16 *)y, rows, l, eps, (uint2 *)yq, qs, qr);
        else embed_ln_launch<__nv_bfloat16, false>(s, a, gamma, gdt, beta, bdt, (__nv_bfloat16 *)y, rows, l, eps, (uint2 *)yq, qs, qr);
    }
    return launch_result();
}

// ------------------------------------------------------- attention softmax

__device__ __forceinline__ int64_t bcast_off(int nbd, const int64_t *bdims, const int64_t *bst,
                                             int64_t b) {
    int64_t off = 0;
    for (int d = nbd - 1; d >= 0; d--) {
        off += (b % bdims[d]) * bst[d];
        b /= bdims[d];
    }
    return off;
}

__global__ void k_attn_softmax(const float *sc, void *p, int pdt, int64_t nb, int64_t sq,
                               int64_t sk, float scale, pr_cu_mask m) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= nb * sq) return;
    int64_t b = row / sq, i = row % sq, base = row * sk;
    int64_t mo = m.p ? bcast_off(m.nbd, m.bdims, m.bst, b) + i * m.rs : 0;
    float mx = -INFINITY;
    for (int64_t j = lane; j < sk; j += 32) {
        float v = scale * sc[base + j];
        if (m.p) v += ldf(m.p, m.dt, mo + j * m.cs);
        mx = fmaxf(mx, v);
    }
    mx = warp_max(mx);
    float s = 0.0f;
    for (int64_t j = lane; j < sk; j += 32) {
        float v = scale * sc[base + j];
        if (m.p) v += ldf(m.p, m.dt, mo + j * m.cs);
        s += expf(v - mx);
    }
    float inv = 1.0f / warp_sum(s);
    for (int64_t j = lane; j < sk; j += 32) {
        float v = scale * sc[base + j];
        if (m.p) v += ldf(m.p, m.dt, mo + j * m.cs);
        stf(p, pdt, base + j, expf(v - mx) * inv);
    }
}

// The row in registers (NPL values a lane): scores read once, P written once.
template <typename T, int NPL>
__global__ void k_attn_softmax_reg(const float *__restrict__ sc, T *__restrict__ p, int64_t nb,
                                   int64_t sq, int sk, float scale, pr_cu_mask m) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= nb * sq) return;
    int64_t b = row / sq, i = row % sq, base = row * sk;
    int64_t mo = m.p ? bcast_off(m.nbd, m.bdims, m.bst, b) + i * m.rs : 0;
    float v[NPL], mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < NPL; k++) {
        int j = lane + 32 * k;
        v[k] = -INFINITY;
        if (j < sk) {
            v[k] = scale * sc[base + j];
            if (m.p) v[k] += ldf(m.p, m.dt, mo + j * m.cs);
        }
        mx = fmaxf(mx, v[k]);
    }
    mx = warp_max(mx);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NPL; k++) {
        v[k] = lane + 32 * k < sk ? expf(v[k] - mx) : 0.0f;
        s += v[k];
    }
    float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (int k = 0; k < NPL; k++) {
        int j = lane + 32 * k;
        if (j < sk) p[base + j] = fromf<T>(v[k] * inv);
    }
}

template <typename T>
static bool attn_softmax_reg(cudaStream_t st, const float *s, void *p, int64_t nb, int64_t sq,
                             int64_t sk, float scale, const pr_cu_mask *m) {
    unsigned grid = (unsigned)((nb * sq + 7) / 8);
    T *pp = (T *)p;
    int k = (int)sk;
    if (sk <= 128) k_attn_softmax_reg<T, 4><<<grid, 256, 0, st>>>(s, pp, nb, sq, k, scale, *m);
    else if (sk <= 256) k_attn_softmax_reg<T, 8><<<grid, 256, 0, st>>>(s, pp, nb, sq, k, scale, *m);
    else if (sk <= 512) k_attn_softmax_reg<T, 16><<<grid, 256, 0, st>>>(s, pp, nb, sq, k, scale, *m);
    else if (sk <= 1024) k_attn_softmax_reg<T, 32><<<grid, 256, 0, st>>>(s, pp, nb, sq, k, scale, *m);
    else return false;
    return true;
}

extern "C" int pr_cu_attn_softmax(void *stream, const float *s, void *p, int pdt, int64_t nb,
                                  int64_t sq, int64_t sk, float scale, const pr_cu_mask *m) {
    int64_t rows = nb * sq;
    if (rows * sk <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    bool ok = pdt == DT_F16    ? attn_softmax_reg<__half>(st, s, p, nb, sq, sk, scale, m)
              : pdt == DT_BF16 ? attn_softmax_reg<__nv_bfloat16>(st, s, p, nb, sq, sk, scale, m)
              : pdt == DT_F32  ? attn_softmax_reg<float>(st, s, p, nb, sq, sk, scale, m)
                               : false;
    if (ok) return launch_result();
    k_attn_softmax<<<(unsigned)((rows + 7) / 8), 256, 0, (cudaStream_t)stream>>>(
        s, p, pdt, nb, sq, sk, scale, *m);
    return launch_result();
}

// ------------------------------------------------------- general attention

__global__ void k_attention(pr_cu_attn a) {
    extern __shared__ float sc[]; // sk scores, then 32 for reductions
    float *red = sc + a.sk;
    int64_t row = blockIdx.x, b = row / a.sq, i = row % a.sq;
    int64_t ob[4];
    for (int o = 0; o < 4; o++) ob[o] = bcast_off(a.nbd, a.bdims, a.bst[o], b);
    int64_t qo = ob[0] + i * a.rs[0];
    for (int64_t j = threadIdx.x; j < a.sk; j += blockDim.x) {
        float acc = 0.0f;
        for (int64_t d = 0; d < a.d; d++) {
            int64_t ko = a.kt ? ob[1] + d * a.rs[1] + j * a.cs[1] : ob[1] + j * a.rs[1] + d * a.cs[1];
            acc += ldf(a.op[0], a.dt[0], qo + d * a.cs[0]) * ldf(a.op[1], a.dt[1], ko);
        }
        acc *= a.scale;
        if (a.has_mask) acc += ldf(a.op[3], a.dt[3], ob[3] + i * a.rs[3] + j * a.cs[3]);
        sc[j] = acc;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < a.sk; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = block_max(mx, red);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < a.sk; j += blockDim.x) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        s += e;
    }
    s = block_sum(s, red); // its barriers also order the sc[] writes
    float inv = 1.0f / s;
    for (int64_t d = threadIdx.x; d < a.dv; d += blockDim.x) {
        float acc = 0.0f;
        for (int64_t j = 0; j < a.sk; j++)
            acc += sc[j] * ldf(a.op[2], a.dt[2], ob[2] + j * a.rs[2] + d * a.cs[2]);
        stf(a.y, a.ydt, bcast_off(a.nbd, a.bdims, a.ybst, b) + i * a.yrs + d, acc * inv);
    }
}

extern "C" int pr_cu_attention(void *stream, const pr_cu_attn *a) {
    int64_t rows = a->nb * a->sq;
    if (rows <= 0 || a->dv <= 0) return 0;
    size_t shm = (size_t)(a->sk + 32) * sizeof(float);
    if (shm > 48 * 1024) return (int)cudaErrorInvalidValue;
    k_attention<<<(unsigned)rows, 128, shm, (cudaStream_t)stream>>>(*a);
    return launch_result();
}

// --------------------------------------------------------------- reductions

__device__ __forceinline__ float red_init(int op) {
    switch (op) {
    case PR_RED_MAX: case PR_RED_LOGSUMEXP: return -INFINITY;
    case PR_RED_MIN: return INFINITY;
    case PR_RED_PROD: return 1.0f;
    default: return 0.0f;
    }
}

// One warp per output element.
__global__ void k_reduce(const void *x, int xdt, void *y, int ydt, pr_cu_reduce r) {
    int64_t o = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (o >= r.n_out) return;
    int64_t base = 0, t = o;
    for (int d = r.nk - 1; d >= 0; d--) {
        base += (t % r.kdims[d]) * r.kst[d];
        t /= r.kdims[d];
    }
    float mx = -INFINITY;
    if (r.op == PR_RED_LOGSUMEXP) {
        for (int64_t j = lane; j < r.n_red; j += 32) {
            int64_t off = base, u = j;
            for (int d = r.nr - 1; d >= 0; d--) {
                off += (u % r.rdims[d]) * r.rst[d];
                u /= r.rdims[d];
            }
            mx = fmaxf(mx, ldf(x, xdt, off));
        }
        mx = warp_max(mx);
    }
    float acc = red_init(r.op);
    for (int64_t j = lane; j < r.n_red; j += 32) {
        int64_t off = base, u = j;
        for (int d = r.nr - 1; d >= 0; d--) {
            off += (u % r.rdims[d]) * r.rst[d];
            u /= r.rdims[d];
        }
        float v = ldf(x, xdt, off);
        switch (r.op) {
        case PR_RED_MAX: acc = fmaxf(acc, v); break;
        case PR_RED_MIN: acc = fminf(acc, v); break;
        case PR_RED_PROD: acc *= v; break;
        case PR_RED_L1: acc += fabsf(v); break;
        case PR_RED_L2: case PR_RED_SUMSQ: acc += v * v; break;
        case PR_RED_LOGSUMEXP: acc += expf(v - mx); break;
        default: acc += v; break;
        }
    }
    for (int s = 16; s > 0; s >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, acc, s);
        switch (r.op) {
        case PR_RED_MAX: acc = fmaxf(acc, w); break;
        case PR_RED_MIN: acc = fminf(acc, w); break;
        case PR_RED_PROD: acc *= w; break;
        default: acc += w; break;
        }
    }
    if (lane) return;
    switch (r.op) {
    case PR_RED_MEAN: acc /= (float)r.n_red; break;
    case PR_RED_L2: acc = sqrtf(acc); break;
    case PR_RED_LOGSUM: acc = logf(acc); break;
    case PR_RED_LOGSUMEXP: acc = mx + logf(acc); break;
    default: break;
    }
    stf(y, ydt, o, acc);
}

extern "C" int pr_cu_reduce_run(void *stream, const void *x, int xdt, void *y, int ydt,
                                const pr_cu_reduce *r) {
    if (r->n_out <= 0) return 0;
    k_reduce<<<(unsigned)((r->n_out + 7) / 8), 256, 0, (cudaStream_t)stream>>>(x, xdt, y, ydt,
                                                                              *r);
    return launch_result();
}
