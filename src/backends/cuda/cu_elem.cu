// Elementwise kernels: the fused epilogue of GEMMs and convolutions, the
// strided n-ary walk (unary, binary with broadcast, comparisons, Where,
// casts and every data movement that is a strided copy: Transpose, Slice,
// Expand, Concat), Gather and fill.
#include "backends/cuda/cu_common.cuh"

__global__ void k_epilogue(void *y, int ydt, int64_t n, const void *bias, int bdt, int64_t bdiv,
                           int64_t bmod, pr_cu_act pre, const void *z, int zdt, pr_cu_act post) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = ldf(y, ydt, i);
        if (bias) v += ldf(bias, bdt, (i / bdiv) % bmod);
        v = act_apply(pre, v);
        if (z) v += ldf(z, zdt, i);
        stf(y, ydt, i, act_apply(post, v));
    }
}

// Same for the common fp16 case (B: an fp16 or float32 bias), two elements a thread.
template <typename B>
__global__ void k_epilogue_h2(__half2 *y, int64_t n2, const B *bias, int64_t bdiv,
                              int64_t bmod, pr_cu_act pre, const __half2 *z, pr_cu_act post) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n2;
         i += (int64_t)gridDim.x * blockDim.x) {
        float2 v = __half22float2(y[i]);
        if (bias) {
            v.x += tof(bias[((2 * i) / bdiv) % bmod]);
            v.y += tof(bias[((2 * i + 1) / bdiv) % bmod]);
        }
        v.x = act_apply(pre, v.x);
        v.y = act_apply(pre, v.y);
        if (z) {
            float2 w = __half22float2(z[i]);
            v.x += w.x;
            v.y += w.y;
        }
        y[i] = __floats2half2_rn(act_apply(post, v.x), act_apply(post, v.y));
    }
}

// Eight fp16 elements a thread (16-byte loads and stores).
template <typename B>
__global__ void k_epilogue_h8(uint4 *y, int64_t n8, const B *bias, int64_t bdiv,
                              int64_t bmod, pr_cu_act pre, const uint4 *z, pr_cu_act post) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint4 v = y[i], w = z ? z[i] : make_uint4(0, 0, 0, 0);
        __half2 *h = (__half2 *)&v, *hz = (__half2 *)&w;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float2 f = __half22float2(h[k]);
            if (bias) {
                f.x += tof(bias[((8 * i + 2 * k) / bdiv) % bmod]);
                f.y += tof(bias[((8 * i + 2 * k + 1) / bdiv) % bmod]);
            }
            f.x = act_apply(pre, f.x);
            f.y = act_apply(pre, f.y);
            if (z) {
                float2 g = __half22float2(hz[k]);
                f.x += g.x;
                f.y += g.y;
            }
            h[k] = __floats2half2_rn(act_apply(post, f.x), act_apply(post, f.y));
        }
        y[i] = v;
    }
}

extern "C" int pr_cu_epilogue(void *stream, void *y, int ydt, int64_t n, const void *bias,
                              int bdt, int64_t bdiv, int64_t bmod, pr_cu_act pre, const void *z,
                              int zdt, pr_cu_act post) {
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    bool bf32 = bias && bdt == DT_F32;
    if (ydt == DT_F16 && (!bias || bdt == DT_F16 || bf32) && (!z || zdt == DT_F16) && n % 8 == 0 &&
        ((uintptr_t)y & 15) == 0 && ((uintptr_t)z & 15) == 0) {
        if (bf32)
            k_epilogue_h8<float><<<grid_for(n / 8, 256), 256, 0, s>>>(
                (uint4 *)y, n / 8, (const float *)bias, bdiv, bmod, pre, (const uint4 *)z, post);
        else
            k_epilogue_h8<__half><<<grid_for(n / 8, 256), 256, 0, s>>>(
                (uint4 *)y, n / 8, (const __half *)bias, bdiv, bmod, pre, (const uint4 *)z, post);
    } else if (ydt == DT_F16 && (!bias || bdt == DT_F16 || bf32) && (!z || zdt == DT_F16) &&
               n % 2 == 0 && ((uintptr_t)y & 3) == 0 && ((uintptr_t)z & 3) == 0) {
        if (bf32)
            k_epilogue_h2<float><<<grid_for(n / 2, 256), 256, 0, s>>>(
                (__half2 *)y, n / 2, (const float *)bias, bdiv, bmod, pre, (const __half2 *)z,
                post);
        else
            k_epilogue_h2<__half><<<grid_for(n / 2, 256), 256, 0, s>>>(
                (__half2 *)y, n / 2, (const __half *)bias, bdiv, bmod, pre, (const __half2 *)z,
                post);
    } else {
        k_epilogue<<<grid_for(n, 256), 256, 0, s>>>(y, ydt, n, bias, bdt, bdiv, bmod, pre, z, zdt,
                                                    post);
    }
    return launch_result();
}

// ---------------------------------------------------------- strided n-ary

__device__ __forceinline__ float ew_unary(const pr_cu_ew &w, float x) {
    switch (w.op) {
    case PR_EW_ACT: return act_apply(w.act, x);
    case PR_EW_SQRT: return sqrtf(x);
    case PR_EW_EXP: return expf(x);
    case PR_EW_LOG: return logf(x);
    case PR_EW_NEG: return -x;
    case PR_EW_ABS: return fabsf(x);
    case PR_EW_RECIP: return 1.0f / x;
    case PR_EW_FLOOR: return floorf(x);
    case PR_EW_CEIL: return ceilf(x);
    case PR_EW_ROUND: return rintf(x);
    case PR_EW_SIGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    case PR_EW_ERF: return erff(x);
    case PR_EW_SIN: return sinf(x);
    case PR_EW_COS: return cosf(x);
    case PR_EW_TAN: return tanf(x);
    case PR_EW_ATAN: return atanf(x);
    case PR_EW_ASIN: return asinf(x);
    case PR_EW_ACOS: return acosf(x);
    case PR_EW_SINH: return sinhf(x);
    case PR_EW_COSH: return coshf(x);
    case PR_EW_ELU: return x < 0.0f ? w.alpha * (expf(x) - 1.0f) : x;
    case PR_EW_SELU: return x <= 0.0f ? w.beta * (w.alpha * expf(x) - w.alpha) : w.beta * x;
    case PR_EW_CELU: return fmaxf(0.0f, x) + fminf(0.0f, w.alpha * (expf(x / w.alpha) - 1.0f));
    case PR_EW_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    case PR_EW_SOFTSIGN: return x / (1.0f + fabsf(x));
    case PR_EW_MISH: return x * tanhf(x > 20.0f ? x : log1pf(expf(x)));
    case PR_EW_NOT: return x == 0.0f ? 1.0f : 0.0f;
    case PR_EW_ISNAN: return isnan(x) ? 1.0f : 0.0f;
    case PR_EW_THRELU: return x > w.alpha ? x : 0.0f;
    default: return x;
    }
}

__device__ __forceinline__ float ew_binary(int op, float a, float b) {
    switch (op) {
    case PR_EW_ADD: return a + b;
    case PR_EW_SUB: return a - b;
    case PR_EW_MUL: return a * b;
    case PR_EW_DIV: return a / b;
    case PR_EW_POW: return powf(a, b);
    case PR_EW_MAX: return fmaxf(a, b);
    case PR_EW_MIN: return fminf(a, b);
    case PR_EW_MOD: return fmodf(a, b);
    case PR_EW_PRELU: return a < 0.0f ? a * b : a;
    case PR_EW_EQ: return a == b;
    case PR_EW_LT: return a < b;
    case PR_EW_LE: return a <= b;
    case PR_EW_GT: return a > b;
    case PR_EW_GE: return a >= b;
    case PR_EW_AND: return (a != 0.0f) && (b != 0.0f);
    case PR_EW_OR: return (a != 0.0f) || (b != 0.0f);
    case PR_EW_XOR: return (a != 0.0f) != (b != 0.0f);
    default: return 0.0f;
    }
}

__device__ __forceinline__ void ew_apply(const pr_cu_ew &w, const int64_t *o) {
    if (w.op == PR_EW_COPY) {
        std_(w.p[0], w.dt[0], o[0], ldd(w.p[1], w.dt[1], o[1]));
    } else if (w.op == PR_EW_WHERE) {
        bool c = ldf(w.p[1], w.dt[1], o[1]) != 0.0f;
        float v = c ? ldf(w.p[2], w.dt[2], o[2]) : ldf(w.p[3], w.dt[3], o[3]);
        stf(w.p[0], w.dt[0], o[0], v);
    } else if (w.op < PR_EW_WHERE) {
        stf(w.p[0], w.dt[0], o[0],
            ew_binary(w.op, ldf(w.p[1], w.dt[1], o[1]), ldf(w.p[2], w.dt[2], o[2])));
    } else {
        stf(w.p[0], w.dt[0], o[0], ew_unary(w, ldf(w.p[1], w.dt[1], o[1])));
    }
}

// I: the index type (int when every offset fits).
template <typename I> __global__ void k_elementwise(pr_cu_ew w, I n) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I o[4] = {(I)w.off[0], (I)w.off[1], (I)w.off[2], (I)w.off[3]}, r = i;
        for (int d = w.rank - 1; d >= 0; d--) {
            I dim = (I)w.dims[d], c = r % dim;
            r /= dim;
            o[0] += c * (I)w.st[0][d];
            o[1] += c * (I)w.st[1][d];
            o[2] += c * (I)w.st[2][d];
            o[3] += c * (I)w.st[3][d];
        }
        int64_t oo[4] = {o[0], o[1], o[2], o[3]};
        ew_apply(w, oo);
    }
}

// Rank 1 with unit or zero strides: no index arithmetic.
__global__ void k_elementwise_flat(pr_cu_ew w, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[4] = {w.off[0] + i * w.st[0][0], w.off[1] + i * w.st[1][0],
                        w.off[2] + i * w.st[2][0], w.off[3] + i * w.st[3][0]};
        ew_apply(w, o);
    }
}

// A strided copy between equal types: T moves the bits (no conversion).
template <typename T> __global__ void k_copy(const T *__restrict__ x, T *__restrict__ y,
                                             pr_cu_ew w, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int oy = (int)w.off[0], ox = (int)w.off[1], r = i;
        for (int d = w.rank - 1; d >= 0; d--) {
            int dim = (int)w.dims[d], c = r % dim;
            r /= dim;
            oy += c * (int)w.st[0][d];
            ox += c * (int)w.st[1][d];
        }
        y[oy] = x[ox];
    }
}

// The three operands' offsets of flat index i of w's (collapsed) shape, in
// 32-bit arithmetic (the 8-element kernels' callers check the sizes).
__device__ __forceinline__ void ew_offsets3(const pr_cu_ew &w, int i, int *o0, int *o1,
                                            int *o2) {
    int a = (int)w.off[0], b = (int)w.off[1], c2 = (int)w.off[2], r = i;
    for (int d = w.rank - 1; d >= 0; d--) {
        int dim = (int)w.dims[d], c = r % dim;
        r /= dim;
        a += c * (int)w.st[0][d];
        b += c * (int)w.st[1][d];
        c2 += c * (int)w.st[2][d];
    }
    *o0 = a;
    *o1 = b;
    *o2 = c2;
}

// A binary op on fp16 / bf16 operands whose rows are contiguous: 8 elements
// (16 bytes) of each a thread, computed in float32 and rounded once, as the
// scalar path does (the strided walk in units of 8; the ONNX embeddings' Adds at
// MiniLM b64 ran ~1 TB/s one element a thread).
template <typename T> __global__ void k_binary8(pr_cu_ew w, int n) {
    const uint4 *a = (const uint4 *)w.p[1], *b = (const uint4 *)w.p[2];
    uint4 *y = (uint4 *)w.p[0];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int o0, o1, o2;
        ew_offsets3(w, i, &o0, &o1, &o2);
        uint4 va = a[o1], vb = b[o2], vy;
        const T *ha = (const T *)&va, *hb = (const T *)&vb;
        T *hy = (T *)&vy;
#pragma unroll
        for (int e = 0; e < 8; e++) hy[e] = fromf<T>(ew_binary(w.op, tof(ha[e]), tof(hb[e])));
        y[o0] = vy;
    }
}

// Eight float32 values into a float type (float32, fp16, bf16) at element 8 * i8
// of p (16-byte aligned): the reverse of cu_common.cuh's ld8f.
__device__ __forceinline__ void st8f(void *p, int dt, int64_t i8, const float v[8]) {
    if (dt == DT_F32) {
        ((float4 *)p)[2 * i8] = make_float4(v[0], v[1], v[2], v[3]);
        ((float4 *)p)[2 * i8 + 1] = make_float4(v[4], v[5], v[6], v[7]);
        return;
    }
    uint4 w;
    unsigned short *h = (unsigned short *)&w;
#pragma unroll
    for (int e = 0; e < 8; e++)
        h[e] = dt == DT_F16 ? __half_as_ushort(__float2half_rn(v[e]))
                            : __bfloat16_as_ushort(__float2bfloat16_rn(v[e]));
    ((uint4 *)p)[i8] = w;
}

// k_binary8 for float operands of mixed types (an fp16 activation plus a
// float32 initializer: MiniLM's position-embedding Add), 8 elements a thread.
__global__ void k_binary8m(pr_cu_ew w, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int o0, o1, o2;
        ew_offsets3(w, i, &o0, &o1, &o2);
        float a[8], b[8];
        ld8f(w.p[1], w.dt[1], o1, a);
        ld8f(w.p[2], w.dt[2], o2, b);
#pragma unroll
        for (int e = 0; e < 8; e++) a[e] = ew_binary(w.op, a[e], b[e]);
        st8f(w.p[0], w.dt[0], o0, a);
    }
}

// Sum(a, b, c) of float operands (passes/pass_attn_mask.c folds the ONNX
// embeddings' Add(Add(word, token type), position) into one node): y =
// RN_y(RN_y(a + b) + c), the two Adds' numbers (ref Sum folds pairwise into the
// output). One pass instead of two (MiniLM b64: k_binary8 7.9 + k_binary8m
// 8.6 us under ncu). dt 0: y; 1-3: a, b, c.
__device__ __forceinline__ float rn_dt(float v, int dt) {
    return dt == DT_F16 ? __half2float(__float2half_rn(v))
           : dt == DT_BF16 ? __bfloat162float(__float2bfloat16_rn(v)) : v;
}
__global__ void k_sum3v(pr_cu_ew w, int n) { // 8 elements a thread, rows of 16 bytes
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int o[4] = {(int)w.off[0], (int)w.off[1], (int)w.off[2], (int)w.off[3]}, r = i;
        for (int d = w.rank - 1; d >= 0; d--) {
            int dim = (int)w.dims[d], c = r % dim;
            r /= dim;
#pragma unroll
            for (int q = 0; q < 4; q++) o[q] += c * (int)w.st[q][d];
        }
        float a[8], b[8], c[8];
        ld8f(w.p[1], w.dt[1], o[1], a);
        ld8f(w.p[2], w.dt[2], o[2], b);
        ld8f(w.p[3], w.dt[3], o[3], c);
#pragma unroll
        for (int e = 0; e < 8; e++) a[e] = rn_dt(a[e] + b[e], w.dt[0]) + c[e];
        st8f(w.p[0], w.dt[0], o[0], a);
    }
}
__global__ void k_sum3(pr_cu_ew w, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[4] = {w.off[0], w.off[1], w.off[2], w.off[3]}, r = i;
        for (int d = w.rank - 1; d >= 0; d--) {
            int64_t dim = w.dims[d], c = r % dim;
            r /= dim;
            for (int q = 0; q < 4; q++) o[q] += c * w.st[q][d];
        }
        float v = rn_dt(ldf(w.p[1], w.dt[1], o[1]) + ldf(w.p[2], w.dt[2], o[2]), w.dt[0]);
        stf(w.p[0], w.dt[0], o[0], v + ldf(w.p[3], w.dt[3], o[3]));
    }
}

// w: pr_cu_ew_setup's of y and the three inputs (float32 / fp16 / bf16).
// PRECIS_CUDA_SUM3V=0: the scalar kernel only (A/B, tests).
extern "C" int pr_cu_sum3(void *stream, const pr_cu_ew *w) {
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = 1;
    for (int d = 0; d < w->rank; d++) n *= w->dims[d];
    if (n <= 0) return 0;
    static int novec = -1;
    if (novec < 0) {
        const char *ev = getenv("PRECIS_CUDA_SUM3V");
        novec = ev && ev[0] == '0';
    }
    int64_t reach = n;
    for (int o = 0; o < 4; o++) {
        int64_t m = w->off[o];
        for (int d = 0; d < w->rank; d++) m += w->st[o][d] * (w->dims[d] - 1);
        if (m + 1 > reach) reach = m + 1;
    }
    int r = w->rank;
    bool ok = !novec && r >= 1 && reach < ((int64_t)1 << 31) && w->dims[r - 1] % 8 == 0;
    for (int o = 0; o < 4 && ok; o++) {
        ok = w->st[o][r - 1] == 1 && w->off[o] % 8 == 0 && ((uintptr_t)w->p[o] & 15) == 0;
        for (int d = 0; d < r - 1 && ok; d++) ok = w->st[o][d] >= 0 && w->st[o][d] % 8 == 0;
    }
    if (ok) {
        pr_cu_ew v = *w;
        v.dims[r - 1] /= 8;
        for (int o = 0; o < 4; o++) {
            v.off[o] /= 8;
            for (int d = 0; d < r - 1; d++) v.st[o][d] /= 8;
        }
        int nv = (int)(n / 8);
        k_sum3v<<<grid_for(nv, 256), 256, 0, s>>>(v, nv);
    } else {
        k_sum3<<<grid_for(n, 256), 256, 0, s>>>(*w, n);
    }
    return launch_result();
}

// A contiguous conversion between float types (float32 / fp16 / bf16), 8
// elements a thread (BERT's fp16 -> float32 last_hidden_state Cast: 28 us one
// element a thread through k_elementwise_flat at b64). Through float32: exact
// for fp16 / bf16 sources, one rounding for float32 ones (as ldd / std_).
__global__ void k_cast8(const void *__restrict__ x, int xdt, void *__restrict__ y, int ydt,
                        int64_t n8) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v[8];
        ld8f(x, xdt, i, v);
        st8f(y, ydt, i, v);
    }
}

static bool ew_float_dt(int dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

static int elem_size(int dt) {
    switch (dt) {
    case DT_F32: case DT_I32: return 4;
    case DT_F16: case DT_BF16: return 2;
    case DT_F64: case DT_I64: return 8;
    case DT_I8: case DT_U8: case DT_BOOL: return 1;
    default: return 0;
    }
}

extern "C" int pr_cu_elementwise(void *stream, const pr_cu_ew *w) {
    cudaStream_t s = (cudaStream_t)stream;
    int64_t n = 1;
    for (int d = 0; d < w->rank; d++) n *= w->dims[d];
    if (n <= 0) return 0;
    // the largest element offset any operand reaches
    int64_t reach = n;
    for (int o = 0; o < 4; o++) {
        int64_t m = w->off[o] < 0 ? -w->off[o] : w->off[o];
        for (int d = 0; d < w->rank; d++) {
            int64_t st = w->st[o][d] < 0 ? -w->st[o][d] : w->st[o][d];
            m += st * (w->dims[d] - 1);
        }
        if (m + 1 > reach) reach = m + 1;
    }
    bool small = reach < ((int64_t)1 << 31);
    bool flat = w->rank == 1;
    for (int o = 0; o < 4 && flat; o++) flat = w->st[o][0] == 0 || w->st[o][0] == 1;
    int es = elem_size(w->dt[0]);
    if (w->op == PR_EW_COPY && w->dt[0] == w->dt[1] && es && w->rank > 1 &&
        w->st[0][w->rank - 1] == 1 && w->st[1][w->rank - 1] == 1 && small) {
        // contiguous rows on both sides: move 16, 8 or 4 bytes a thread
        int r = w->rank;
        for (int W = 16; W > es; W /= 2) {
            bool ok = (w->dims[r - 1] * es) % W == 0 && ((uintptr_t)w->p[0] % W) == 0 &&
                      ((uintptr_t)w->p[1] % W) == 0;
            for (int o = 0; o < 2 && ok; o++) {
                ok = (w->off[o] * es) % W == 0;
                for (int d = 0; d < r - 1 && ok; d++) ok = (w->st[o][d] * es) % W == 0;
            }
            if (!ok) continue;
            pr_cu_ew v = *w;
            int f = W / es;
            v.dims[r - 1] /= f;
            for (int o = 0; o < 2; o++) {
                v.off[o] /= f;
                for (int d = 0; d < r - 1; d++) v.st[o][d] /= f;
            }
            int64_t nv = n / f;
            unsigned g = grid_for(nv, 256);
            if (W == 16) k_copy<uint4><<<g, 256, 0, s>>>((const uint4 *)w->p[1], (uint4 *)w->p[0], v, (int)nv);
            else if (W == 8) k_copy<uint2><<<g, 256, 0, s>>>((const uint2 *)w->p[1], (uint2 *)w->p[0], v, (int)nv);
            else k_copy<unsigned int><<<g, 256, 0, s>>>((const unsigned int *)w->p[1], (unsigned int *)w->p[0], v, (int)nv);
            return launch_result();
        }
    }
    if (w->op == PR_EW_COPY && w->dt[0] == w->dt[1] && es) {
        if (w->rank == 1 && w->st[0][0] == 1 && w->st[1][0] == 1)
            return (int)cudaMemcpyAsync((char *)w->p[0] + w->off[0] * es,
                                        (const char *)w->p[1] + w->off[1] * es, (size_t)n * es,
                                        cudaMemcpyDeviceToDevice, s);
        if (small) {
            unsigned g = grid_for(n, 256);
            switch (es) {
            case 1: k_copy<unsigned char><<<g, 256, 0, s>>>((const unsigned char *)w->p[1], (unsigned char *)w->p[0], *w, (int)n); break;
            case 2: k_copy<unsigned short><<<g, 256, 0, s>>>((const unsigned short *)w->p[1], (unsigned short *)w->p[0], *w, (int)n); break;
            case 4: k_copy<unsigned int><<<g, 256, 0, s>>>((const unsigned int *)w->p[1], (unsigned int *)w->p[0], *w, (int)n); break;
            default: k_copy<unsigned long long><<<g, 256, 0, s>>>((const unsigned long long *)w->p[1], (unsigned long long *)w->p[0], *w, (int)n); break;
            }
            return launch_result();
        }
    }
    if (w->op == PR_EW_COPY && w->dt[0] != w->dt[1] && ew_float_dt(w->dt[0]) &&
        ew_float_dt(w->dt[1]) && w->rank == 1 && w->st[0][0] == 1 && w->st[1][0] == 1 &&
        n % 8 == 0) {
        static int off = -1; // PRECIS_CUDA_CAST8=0: the scalar path (A/B)
        if (off < 0) {
            const char *ev = getenv("PRECIS_CUDA_CAST8");
            off = ev && ev[0] == '0';
        }
        const char *x = (const char *)w->p[1] + w->off[1] * elem_size(w->dt[1]);
        char *y = (char *)w->p[0] + w->off[0] * es;
        if (!off && !((uintptr_t)x & 15) && !((uintptr_t)y & 15)) {
            k_cast8<<<grid_for(n / 8, 256), 256, 0, s>>>(x, w->dt[1], y, w->dt[0], n / 8);
            return launch_result();
        }
    }
    bool fl = true; // float operands (float32 / fp16 / bf16)
    for (int o = 0; o < 3; o++) fl = fl && (w->dt[o] == DT_F32 || w->dt[o] == DT_F16 || w->dt[o] == DT_BF16);
    if (w->op > PR_EW_COPY && w->op < PR_EW_EQ && fl && small) {
        int r = w->rank;
        bool ok = w->dims[r - 1] % 8 == 0;
        for (int o = 0; o < 3 && ok; o++) {
            ok = w->st[o][r - 1] == 1 && w->off[o] % 8 == 0 && ((uintptr_t)w->p[o] & 15) == 0;
            for (int d = 0; d < r - 1 && ok; d++) ok = w->st[o][d] % 8 == 0;
        }
        if (ok) {
            pr_cu_ew v = *w;
            v.dims[r - 1] /= 8;
            for (int o = 0; o < 3; o++) {
                v.off[o] /= 8;
                for (int d = 0; d < r - 1; d++) v.st[o][d] /= 8;
            }
            int nv = (int)(n / 8);
            const bool same = w->dt[1] == w->dt[0] && w->dt[2] == w->dt[0];
            if (same && w->dt[0] == DT_F16) k_binary8<__half><<<grid_for(nv, 256), 256, 0, s>>>(v, nv);
            else if (same && w->dt[0] == DT_BF16) k_binary8<__nv_bfloat16><<<grid_for(nv, 256), 256, 0, s>>>(v, nv);
            else k_binary8m<<<grid_for(nv, 256), 256, 0, s>>>(v, nv);
            return launch_result();
        }
    }
    if (flat)
        k_elementwise_flat<<<grid_for(n, 256), 256, 0, s>>>(*w, n);
    else if (small)
        k_elementwise<int><<<grid_for(n, 256), 256, 0, s>>>(*w, (int)n);
    else
        k_elementwise<int64_t><<<grid_for(n, 256), 256, 0, s>>>(*w, n);
    return launch_result();
}

// float32 N,C,H,W -> fp16/bf16 N,H,W,C for few channels (a network's input:
// the plan's input Cast with the Reorder folded in): a thread a pixel, each
// plane read coalesced across the warp, the pixel's C values stored together.
template <typename T, int C>
__global__ void k_cast_nhwc(const float *__restrict__ x, T *__restrict__ y, int hw, int total) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int n = i / hw, q = i - n * hw;
        const float *xp = x + (int64_t)n * C * hw + q;
        T *yp = y + (int64_t)i * C;
#pragma unroll
        for (int c = 0; c < C; c++) yp[c] = fromf<T>(__ldg(xp + (int64_t)c * hw));
    }
}

template <typename T>
static int cast_nhwc_t(cudaStream_t s, const float *x, T *y, int c, int hw, int total) {
    unsigned g = grid_for(total, 256);
    switch (c) {
    case 1: k_cast_nhwc<T, 1><<<g, 256, 0, s>>>(x, y, hw, total); break;
    case 3: k_cast_nhwc<T, 3><<<g, 256, 0, s>>>(x, y, hw, total); break;
    case 4: k_cast_nhwc<T, 4><<<g, 256, 0, s>>>(x, y, hw, total); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launch_result();
}

extern "C" int pr_cu_cast_nhwc(void *stream, const float *x, void *y, int ydt, int64_t n,
                               int64_t c, int64_t hw) {
    if (n * hw >= ((int64_t)1 << 31) / 4 || n * hw <= 0) return (int)cudaErrorInvalidValue;
    cudaStream_t s = (cudaStream_t)stream;
    int total = (int)(n * hw);
    if (ydt == DT_F16) return cast_nhwc_t<__half>(s, x, (__half *)y, (int)c, (int)hw, total);
    if (ydt == DT_BF16)
        return cast_nhwc_t<__nv_bfloat16>(s, x, (__nv_bfloat16 *)y, (int)c, (int)hw, total);
    return (int)cudaErrorInvalidValue;
}

// ------------------------------------------------------------------ gather

__global__ void k_gather(const void *data, int ddt, const void *idx, int idt, void *out, int odt,
                         int64_t outer, int64_t axis_dim, int64_t nidx, int64_t inner) {
    int64_t n = outer * nidx * inner;
    bool same16 = ddt == odt && (ddt == DT_F16 || ddt == DT_BF16);
    bool same8 = ddt == odt && (ddt == DT_U8 || ddt == DT_I8 || ddt == DT_BOOL);
    bool same32 = ddt == odt && (ddt == DT_F32 || ddt == DT_I32);
    bool same64 = ddt == odt && (ddt == DT_I64 || ddt == DT_F64);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t in_ = i % inner, t = i / inner, j = t % nidx, o = t / nidx;
        int64_t x = gather_row(idx, idt, j, axis_dim);
        if (x < 0) {
            stf(out, odt, i, 0.0f);
            continue;
        }
        int64_t src = (o * axis_dim + x) * inner + in_;
        if (same16)
            ((unsigned short *)out)[i] = ((const unsigned short *)data)[src];
        else if (same8)
            ((unsigned char *)out)[i] = ((const unsigned char *)data)[src];
        else if (same32)
            ((unsigned int *)out)[i] = ((const unsigned int *)data)[src];
        else if (same64)
            ((unsigned long long *)out)[i] = ((const unsigned long long *)data)[src];
        else
            stf(out, odt, i, ldf(data, ddt, src));
    }
}

// Same type, rows of a multiple of 16 bytes (embedding lookups): one 16-byte
// chunk a thread (the one-element-a-thread loop moved MiniLM b64's 6 MB embedding
// lookups at ~250 GB/s). I: the index arithmetic's type (unsigned 32-bit where
// every chunk index fits: a 64-bit division is a ~70-instruction routine, and
// the four a thread made the lookups instruction-bound).
template <typename I>
__global__ void k_gather16(const uint4 *data, const void *idx, int idt, uint4 *out,
                           int64_t outer, int64_t axis_dim, I nidx, I cpr) {
    const I n = (I)outer * nidx * cpr;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I t = i / cpr, c = i - t * cpr, o = t / nidx, j = t - o * nidx;
        int64_t x = gather_row(idx, idt, (int64_t)j, axis_dim);
        out[i] = x < 0 ? make_uint4(0, 0, 0, 0) : data[((int64_t)o * axis_dim + x) * cpr + c];
    }
}

// Float rows of 8k elements between float types (a float32 embedding table
// into an fp16 activation): 8 elements a thread, converted.
template <typename I>
__global__ void k_gather8(const void *data, int ddt, const void *idx, int idt, void *out, int odt,
                          int64_t outer, int64_t axis_dim, I nidx, I cpr) {
    const I n = (I)outer * nidx * cpr;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I t = i / cpr, c = i - t * cpr, o = t / nidx, j = t - o * nidx;
        int64_t x = gather_row(idx, idt, (int64_t)j, axis_dim);
        float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (x >= 0) ld8f(data, ddt, ((int64_t)o * axis_dim + x) * cpr + c, v);
        st8f(out, odt, (int64_t)i, v);
    }
}

extern "C" int pr_cu_gather(void *stream, const void *data, int ddt, const void *idx, int idt,
                            void *out, int odt, int64_t outer, int64_t axis_dim, int64_t nidx,
                            int64_t inner) {
    int64_t n = outer * nidx * inner;
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    int64_t es = elem_size(ddt);
    int64_t rb = inner * es;
    // 32-bit index arithmetic where every chunk index and the grid's stride fit
    // (PRECIS_CUDA_GATHER_I32=0: 64-bit, A/B; read each launch: tests flip it)
    const char *e32 = getenv("PRECIS_CUDA_GATHER_I32");
    const bool i32 = !(e32 && e32[0] == '0') && n < ((int64_t)1 << 31);
    if (ddt == odt && es > 0 && rb % 16 == 0 && ((uintptr_t)data & 15) == 0 &&
        ((uintptr_t)out & 15) == 0) {
        int64_t cpr = rb / 16, nc = outer * nidx * cpr;
        if (i32)
            k_gather16<unsigned><<<grid_for(nc, 256), 256, 0, s>>>(
                (const uint4 *)data, idx, idt, (uint4 *)out, outer, axis_dim, (unsigned)nidx, (unsigned)cpr);
        else
            k_gather16<int64_t><<<grid_for(nc, 256), 256, 0, s>>>(
                (const uint4 *)data, idx, idt, (uint4 *)out, outer, axis_dim, nidx, cpr);
        return launch_result();
    }
    const bool fl = (ddt == DT_F32 || ddt == DT_F16 || ddt == DT_BF16) &&
                    (odt == DT_F32 || odt == DT_F16 || odt == DT_BF16);
    if (fl && inner % 8 == 0 && ((uintptr_t)data & 15) == 0 && ((uintptr_t)out & 15) == 0) {
        int64_t cpr = inner / 8, nc = outer * nidx * cpr;
        if (i32)
            k_gather8<unsigned><<<grid_for(nc, 256), 256, 0, s>>>(
                data, ddt, idx, idt, out, odt, outer, axis_dim, (unsigned)nidx, (unsigned)cpr);
        else
            k_gather8<int64_t><<<grid_for(nc, 256), 256, 0, s>>>(data, ddt, idx, idt, out, odt,
                                                                outer, axis_dim, nidx, cpr);
        return launch_result();
    }
    k_gather<<<grid_for(n, 256), 256, 0, s>>>(data, ddt, idx, idt, out, odt, outer, axis_dim,
                                              nidx, inner);
    return launch_result();
}

__global__ void k_fill(void *y, int dt, int64_t n, float v) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        stf(y, dt, i, v);
}

extern "C" int pr_cu_fill(void *stream, void *y, int dt, int64_t n, float v) {
    if (n <= 0) return 0;
    k_fill<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(y, dt, n, v);
    return launch_result();
}
