// INT8 kernels: im2col of int8 activations for the IMMA GEMMs, the
// dequantize-bias-activation-requantize epilogue after them, Quantize /
// DequantizeLinear, QBinary and the int8 global average pool.
//
// Requantization mirrors the ref backend (backends/ref/ref_fused.c q_run):
// the real result r (float32) is multiplied by 1 / y_scale, rounded half to
// even (rintf) and saturated. The GEMM sums exactly in int32 where ref sums
// dequantized float32 products, so the float r may differ in its last bits
// and a value on a rounding boundary may land one unit away.
#include "backends/cuda/cu_int8.cuh"

// ------------------------------------------------------------------ im2col

__device__ __forceinline__ uint4 pack16(const unsigned char *v) {
    uint4 o;
    o.x = v[0] | v[1] << 8 | v[2] << 16 | (unsigned)v[3] << 24;
    o.y = v[4] | v[5] << 8 | v[6] << 16 | (unsigned)v[7] << 24;
    o.z = v[8] | v[9] << 8 | v[10] << 16 | (unsigned)v[11] << 24;
    o.w = v[12] | v[13] << 8 | v[14] << 16 | (unsigned)v[15] << 24;
    return o;
}

// col[m, k] for m = (b, oh, ow), k = (r, s, c) (channel fastest), zeros for
// taps in the padding and for k in [K, Kp).
__global__ void k_im2col(const signed char *__restrict__ x, signed char *__restrict__ col,
                         pr_cu_im2col p, int64_t n) {
    int64_t K = (int64_t)p.kh * p.kw * p.C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = i / p.Kp, k = i - m * p.Kp;
        signed char v = p.x_u8 == PR_CU_X_U8B ? (signed char)-128 : 0; // the real zero
        if (k < K) {
            int64_t c = k % p.C, t = k / p.C;
            int s = (int)(t % p.kw), r = (int)(t / p.kw);
            int64_t ow = m % p.OW, t2 = m / p.OW, oh = t2 % p.OH, b = t2 / p.OH;
            int64_t h = oh * p.sh - p.ph + (int64_t)r * p.dh, w = ow * p.sw - p.pw + (int64_t)s * p.dw;
            if (h >= 0 && h < p.H && w >= 0 && w < p.W)
                v = x[b * p.sN + c * p.sC + h * p.sH + w * p.sW];
        }
        col[i] = (signed char)(v ^ (p.x_u8 == PR_CU_X_U8 ? 0x80 : 0));
    }
}

// NHWC with C % 16 == 0: 16 channels (one uint4) a thread.
__global__ void k_im2col_v16(const uint4 *__restrict__ x, uint4 *__restrict__ col,
                             pr_cu_im2col p, int64_t n) {
    int64_t C16 = p.C / 16, K16 = (int64_t)p.kh * p.kw * C16, Kp16 = p.Kp / 16;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = i / Kp16, k = i - m * Kp16;
        const unsigned pad = p.x_u8 == PR_CU_X_U8B ? 0x80808080u : 0u; // the real zero
        uint4 v = make_uint4(pad, pad, pad, pad);
        if (k < K16) {
            int64_t c = k % C16, t = k / C16;
            int s = (int)(t % p.kw), r = (int)(t / p.kw);
            int64_t ow = m % p.OW, t2 = m / p.OW, oh = t2 % p.OH, b = t2 / p.OH;
            int64_t h = oh * p.sh - p.ph + (int64_t)r * p.dh, w = ow * p.sw - p.pw + (int64_t)s * p.dw;
            if (h >= 0 && h < p.H && w >= 0 && w < p.W) v = x[((b * p.H + h) * p.W + w) * C16 + c];
        }
        if (p.x_u8 == PR_CU_X_U8) {
            v.x ^= 0x80808080u;
            v.y ^= 0x80808080u;
            v.z ^= 0x80808080u;
            v.w ^= 0x80808080u;
        }
        col[i] = v;
    }
}

// Any layout, Kp % 16 == 0: one 16-byte chunk of a col row a thread (the
// stem: 3 channels NCHW); the row's pixel decoded once, (r, s, c) stepped.
__global__ void k_im2col_c16(const signed char *__restrict__ x, uint4 *__restrict__ col,
                             pr_cu_im2col p, int64_t n) {
    const int K = p.kh * p.kw * (int)p.C, Kp16 = (int)(p.Kp / 16), C = (int)p.C;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = i / Kp16;
        int k = (int)(i - m * Kp16) * 16;
        int ow = (int)(m % p.OW);
        int64_t t2 = m / p.OW;
        int oh = (int)(t2 % p.OH);
        int64_t b = t2 / p.OH;
        int c = k % C, tap = k / C, s = tap % p.kw, r = tap / p.kw;
        const signed char *xb = x + b * p.sN;
        unsigned char v[16];
#pragma unroll
        for (int e = 0; e < 16; e++) {
            signed char val = p.x_u8 == PR_CU_X_U8B ? (signed char)-128 : 0; // the real zero
            int h = oh * p.sh - p.ph + r * p.dh, w = ow * p.sw - p.pw + s * p.dw;
            if (k + e < K && h >= 0 && h < p.H && w >= 0 && w < p.W)
                val = xb[c * p.sC + h * p.sH + w * p.sW];
            v[e] = (unsigned char)val ^ (p.x_u8 == PR_CU_X_U8 ? 0x80 : 0);
            if (++c == C) {
                c = 0;
                if (++s == p.kw) {
                    s = 0;
                    r++;
                }
            }
        }
        uint4 o = pack16(v);
        col[i] = o;
    }
}

extern "C" int pr_cu_im2col_s8(void *stream, const void *x, void *col, const pr_cu_im2col *p) {
    int64_t M = p->N * p->OH * p->OW;
    if (M <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    bool nhwc = p->sC == 1 && p->sW == p->C && p->sH == p->W * p->C && p->sN == p->H * p->sH;
    if (nhwc && p->C % 16 == 0 && p->Kp % 16 == 0 && ((uintptr_t)x & 15) == 0 &&
        ((uintptr_t)col & 15) == 0) {
        int64_t n = M * (p->Kp / 16);
        k_im2col_v16<<<grid_for(n, 256), 256, 0, s>>>((const uint4 *)x, (uint4 *)col, *p, n);
    } else if (p->Kp % 16 == 0 && ((uintptr_t)col & 15) == 0) {
        int64_t n = M * (p->Kp / 16);
        k_im2col_c16<<<grid_for(n, 256), 256, 0, s>>>((const signed char *)x, (uint4 *)col, *p, n);
    } else {
        int64_t n = M * p->Kp;
        k_im2col<<<grid_for(n, 256), 256, 0, s>>>((const signed char *)x, (signed char *)col, *p,
                                                    n);
    }
    return launch_result();
}

// --------------------------------------------------------- space-to-depth

// One output pixel (16 bytes) a thread. C a template argument (1..4): the
// 16 bytes stay in registers (a runtime C indexed a local-memory array: 16
// bytes of stack a thread); I: the index type (32-bit division where the
// pixel count fits).
template <int C, typename I>
__global__ void k_s2d(const signed char *__restrict__ x, uint4 *__restrict__ y, pr_cu_s2d p,
                      int64_t Hs, int64_t Ws, int64_t n) {
    const unsigned char zero = p.x_u8 == PR_CU_X_U8B ? 0x80 : 0; // the real zero as stored
    const I ws = (I)Ws, hs = (I)Hs;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        I ii = (I)i, t = ii / ws, S = ii - t * ws, b = t / hs, R = t - b * hs;
        unsigned char v[16];
#pragma unroll
        for (int e = 0; e < 16; e++) v[e] = zero;
#pragma unroll
        for (int d = 0; d < 4; d++) {
            int64_t h = 2 * (int64_t)R + (d >> 1), w = 2 * (int64_t)S + (d & 1);
            if (h >= p.H || w >= p.W) continue;
            const signed char *px = x + (int64_t)b * p.sN + h * p.sH + w * p.sW;
#pragma unroll
            for (int c = 0; c < C; c++) v[d * C + c] = (unsigned char)px[c * p.sC];
        }
        y[i] = pack16(v);
    }
}

template <int C>
void launch_s2d(cudaStream_t s, const void *x, void *y, const pr_cu_s2d *p, int64_t Hs,
                int64_t Ws, int64_t n) {
    if (n < (1LL << 31))
        k_s2d<C, int><<<grid_for(n, 256), 256, 0, s>>>((const signed char *)x, (uint4 *)y, *p,
                                                        Hs, Ws, n);
    else
        k_s2d<C, int64_t><<<grid_for(n, 256), 256, 0, s>>>((const signed char *)x, (uint4 *)y,
                                                            *p, Hs, Ws, n);
}

extern "C" int pr_cu_s2d_s8(void *stream, const void *x, void *y, const pr_cu_s2d *p) {
    if (p->C < 1 || p->C > 4 || ((uintptr_t)y & 15)) return (int)cudaErrorInvalidValue;
    int64_t Hs = (p->H + 1) / 2, Ws = (p->W + 1) / 2, n = p->N * Hs * Ws;
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (p->C) {
    case 1: launch_s2d<1>(s, x, y, p, Hs, Ws, n); break;
    case 2: launch_s2d<2>(s, x, y, p, Hs, Ws, n); break;
    case 3: launch_s2d<3>(s, x, y, p, Hs, Ws, n); break;
    default: launch_s2d<4>(s, x, y, p, Hs, Ws, n); break;
    }
    return launch_result();
}

// ---------------------------------------------------------------- epilogue

__global__ void k_qepi(const int *__restrict__ acc, pr_cu_qepi q, int64_t total) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = i / q.N, n = i - m * q.N, yi = qepi_index(q, m, n);
        qepi_store(q, yi, qepi_one(q, acc[i], n, yi));
    }
}

// Row-major int8/uint8 output, N % 4 == 0: four columns a thread (int4 in, 4 bytes out).
__global__ void k_qepi_v4(const int4 *__restrict__ acc, pr_cu_qepi q, int64_t total4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total4;
         i += (int64_t)gridDim.x * blockDim.x) {
        int4 a = acc[i];
        int64_t e = 4 * i, n = e % q.N;
        uchar4 o;
        o.x = qepi_byte(q, sat_q(qepi_one(q, a.x, n, e) * q.y_inv, q.ydt));
        o.y = qepi_byte(q, sat_q(qepi_one(q, a.y, n + 1, e + 1) * q.y_inv, q.ydt));
        o.z = qepi_byte(q, sat_q(qepi_one(q, a.z, n + 2, e + 2) * q.y_inv, q.ydt));
        o.w = qepi_byte(q, sat_q(qepi_one(q, a.w, n + 3, e + 3) * q.y_inv, q.ydt));
        ((uchar4 *)q.y)[i] = o;
    }
}

// (x == y allowed: in place)
__global__ void k_u8_to_s8(const uint4 *x, uint4 *y, int64_t n16) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n16;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint4 v = x[i];
        y[i] = make_uint4(v.x ^ 0x80808080u, v.y ^ 0x80808080u, v.z ^ 0x80808080u,
                          v.w ^ 0x80808080u);
    }
}
__global__ void k_u8_to_s8_1(const unsigned char *x, unsigned char *y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] ^ 0x80;
}

extern "C" int pr_cu_u8_to_s8(void *stream, const void *x, void *y, int64_t n) {
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (n % 16 == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0)
        k_u8_to_s8<<<grid_for(n / 16, 256), 256, 0, s>>>((const uint4 *)x, (uint4 *)y, n / 16);
    else
        k_u8_to_s8_1<<<grid_for(n, 256), 256, 0, s>>>((const unsigned char *)x, (unsigned char *)y,
                                                      n);
    return launch_result();
}

extern "C" int pr_cu_qepilogue(void *stream, const int *acc, int64_t M, const pr_cu_qepi *q) {
    int64_t total = M * q->N;
    if (total <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if ((q->ydt == DT_I8 || q->ydt == DT_U8) && !q->nchw_hw && q->N % 4 == 0 &&
        ((uintptr_t)acc & 15) == 0 &&
        ((uintptr_t)q->y & 3) == 0)
        k_qepi_v4<<<grid_for(total / 4, 256), 256, 0, s>>>((const int4 *)acc, *q, total / 4);
    else
        k_qepi<<<grid_for(total, 256), 256, 0, s>>>(acc, *q, total);
    return launch_result();
}

// ---------------------------------------------------- quantize / dequantize

// QuantizeLinear: y = sat(round(x / scale)); DequantizeLinear: y = x * scale.
__global__ void k_quant(const void *x, int xdt, void *y, int ydt, int64_t n, float scale,
                        int quant) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = ldf(x, xdt, i);
        if (quant) {
            float q = sat_q(v / scale, ydt);
            if (ydt == DT_I8) ((signed char *)y)[i] = (signed char)q;
            else ((unsigned char *)y)[i] = (unsigned char)q;
        } else {
            stf(y, ydt, i, v * scale);
        }
    }
}

extern "C" int pr_cu_quantize(void *stream, const void *x, int xdt, void *y, int ydt, int64_t n,
                              float scale, int quant) {
    if (n <= 0) return 0;
    k_quant<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(x, xdt, y, ydt, n, scale, quant);
    return launch_result();
}

// QuantizeLinear of a plain [N, C, HW] x into NHWC y: one pixel a thread
// (the C reads of a warp's pixels coalesce along HW).
__global__ void k_quant_nhwc(const void *x, int xdt, void *y, int ydt, int64_t C, int64_t HW,
                             int64_t n, float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / HW, p = i - b * HW;
        for (int64_t c = 0; c < C; c++) {
            float q = sat_q(ldf(x, xdt, (b * C + c) * HW + p) / scale, ydt);
            if (ydt == DT_I8) ((signed char *)y)[i * C + c] = (signed char)q;
            else ((unsigned char *)y)[i * C + c] = (unsigned char)q;
        }
    }
}

// The same for float32 x, C (1..4) a template argument, HW % 4 == 0: four
// pixels a thread (C float4 loads, C 4-byte stores), 32-bit indices (I)
// where they fit. Same operations on each value (x / scale, sat_q).
template <int C, typename I>
__global__ void k_quant_nhwc_v4(const float4 *__restrict__ x, uint32_t *__restrict__ y, bool u8,
                                I HW4, I n4, float scale) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n4; i += (I)gridDim.x * blockDim.x) {
        I b = i / HW4, p = i - b * HW4;
        float v[C][4];
#pragma unroll
        for (int c = 0; c < C; c++) {
            float4 f = x[(b * C + c) * HW4 + p];
            v[c][0] = f.x;
            v[c][1] = f.y;
            v[c][2] = f.z;
            v[c][3] = f.w;
        }
        unsigned char o[4 * C];
#pragma unroll
        for (int px = 0; px < 4; px++)
#pragma unroll
            for (int c = 0; c < C; c++) {
                float q = sat_q(v[c][px] / scale, u8 ? DT_U8 : DT_I8);
                o[px * C + c] = u8 ? (unsigned char)q : (unsigned char)(signed char)q;
            }
#pragma unroll
        for (int w = 0; w < C; w++)
            y[i * C + w] = (uint32_t)o[4 * w] | (uint32_t)o[4 * w + 1] << 8 |
                           (uint32_t)o[4 * w + 2] << 16 | (uint32_t)o[4 * w + 3] << 24;
    }
}

// PRECIS_CUDA_QNHWC_V4=0: every QuantizeLinear to NHWC through k_quant_nhwc (A/B);
// read at each launch (the tests switch it within one process)
static bool quant_v4_on() {
    const char *e = getenv("PRECIS_CUDA_QNHWC_V4");
    return !(e && !strcmp(e, "0"));
}

template <int C>
void launch_quant_v4(cudaStream_t s, const void *x, void *y, bool u8, int64_t HW, int64_t n,
                     float scale) {
    int64_t n4 = n / 4;
    if (n * C < (1LL << 31))
        k_quant_nhwc_v4<C, int><<<grid_for(n4, 256), 256, 0, s>>>(
            (const float4 *)x, (uint32_t *)y, u8, (int)(HW / 4), (int)n4, scale);
    else
        k_quant_nhwc_v4<C, int64_t><<<grid_for(n4, 256), 256, 0, s>>>(
            (const float4 *)x, (uint32_t *)y, u8, HW / 4, n4, scale);
}

extern "C" int pr_cu_quantize_nhwc(void *stream, const void *x, int xdt, void *y, int ydt,
                                   int64_t N, int64_t C, int64_t HW, float scale) {
    int64_t n = N * HW;
    if (n <= 0 || C <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (xdt == DT_F32 && (ydt == DT_U8 || ydt == DT_I8) && C <= 4 && HW % 4 == 0 &&
        ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 3) == 0 && quant_v4_on()) {
        bool u8 = ydt == DT_U8;
        switch (C) {
        case 1: launch_quant_v4<1>(s, x, y, u8, HW, n, scale); break;
        case 2: launch_quant_v4<2>(s, x, y, u8, HW, n, scale); break;
        case 3: launch_quant_v4<3>(s, x, y, u8, HW, n, scale); break;
        default: launch_quant_v4<4>(s, x, y, u8, HW, n, scale); break;
        }
        return launch_result();
    }
    k_quant_nhwc<<<grid_for(n, 256), 256, 0, s>>>(x, xdt, y, ydt, C, HW, n, scale);
    return launch_result();
}

// ----------------------------------------------------------------- QBinary

__device__ __forceinline__ float qld(const pr_cu_ew &w, int o, int64_t i, float s) {
    int dt = w.dt[o];
    float v = ldf(w.p[o], dt, i);
    return dt == DT_I8 || dt == DT_U8 ? v * s : v;
}

__global__ void k_qbinary(pr_cu_ew w, float as, float bs, float yinv, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[3] = {w.off[0], w.off[1], w.off[2]}, r = i;
        for (int d = w.rank - 1; d >= 0; d--) {
            int64_t c = r % w.dims[d];
            r /= w.dims[d];
            o[0] += c * w.st[0][d];
            o[1] += c * w.st[1][d];
            o[2] += c * w.st[2][d];
        }
        float a = qld(w, 1, o[1], as), b = qld(w, 2, o[2], bs);
        float v = w.op == PR_EW_ADD ? a + b : w.op == PR_EW_SUB ? a - b : a * b;
        st_q(w.p[0], w.dt[0], o[0], act_apply(w.act, v), yinv);
    }
}

extern "C" int pr_cu_qbinary(void *stream, const pr_cu_ew *w, float a_scale, float b_scale,
                             float y_inv) {
    int64_t n = 1;
    for (int d = 0; d < w->rank; d++) n *= w->dims[d];
    if (n <= 0) return 0;
    k_qbinary<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*w, a_scale, b_scale, y_inv, n);
    return launch_result();
}

// ------------------------------------------------------------------- QPool

// Average pooling of int8/uint8 x over a 2-D window (QPool kind AveragePool),
// NCHW or NHWC, the window geometry and count rules of k_pool2d (cu_pool.cu):
// the sum is exact in int32, y = sum * x_scale / count, quantized by y_inv
// for int8/uint8 y.
template <typename T>
__global__ void k_qavgpool(const T *__restrict__ x, void *y, int ydt, pr_cu_pool p, float xs,
                           float yinv, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t c, oh, ow, b, t;
        if (p.nhwc) {
            c = i % p.C;
            t = i / p.C;
            ow = t % p.OW;
            t /= p.OW;
            oh = t % p.OH;
            b = t / p.OH;
        } else {
            ow = i % p.OW;
            t = i / p.OW;
            oh = t % p.OH;
            t /= p.OH;
            c = t % p.C;
            b = t / p.C;
        }
        int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
        int sum = 0, cnt = 0, ch = 0, cw = 0;
        for (int a = 0; a < p.kh; a++) {
            int64_t h = h0 + (int64_t)a * p.dh;
            ch += h >= -p.ph && h < p.H + p.ph1;
            if (h < 0 || h >= p.H) continue;
            for (int q = 0; q < p.kw; q++) {
                int64_t w = w0 + (int64_t)q * p.dw;
                if (w < 0 || w >= p.W) continue;
                int64_t src = p.nhwc ? ((b * p.H + h) * p.W + w) * p.C + c
                                     : ((b * p.C + c) * p.H + h) * p.W + w;
                sum += (int)x[src];
                cnt++;
            }
        }
        if (p.count_include_pad) {
            for (int q = 0; q < p.kw; q++) {
                int64_t w = w0 + (int64_t)q * p.dw;
                cw += w >= -p.pw && w < p.W + p.pw1;
            }
            cnt = ch * cw;
        }
        st_q(y, ydt, i, cnt > 0 ? (float)sum * xs / (float)cnt : 0.0f, yinv);
    }
}

extern "C" int pr_cu_qavgpool(void *stream, const void *x, int xdt, void *y, int ydt,
                              const pr_cu_pool *p, float x_scale, float y_inv) {
    int64_t n = p->N * p->C * p->OH * p->OW;
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (xdt == DT_I8)
        k_qavgpool<signed char><<<grid_for(n, 256), 256, 0, s>>>((const signed char *)x, y, ydt,
                                                                   *p, x_scale, y_inv, n);
    else if (xdt == DT_U8)
        k_qavgpool<unsigned char><<<grid_for(n, 256), 256, 0, s>>>((const unsigned char *)x, y,
                                                                     ydt, *p, x_scale, y_inv, n);
    else return (int)cudaErrorInvalidValue;
    return launch_result();
}
