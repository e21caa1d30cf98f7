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

// Same for the common fp16 case, two elements a thread.
__global__ void k_epilogue_h2(__half2 *y, int64_t n2, const __half *bias, int64_t bdiv,
                              int64_t bmod, pr_cu_act pre, const __half2 *z, pr_cu_act post) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n2;
         i += (int64_t)gridDim.x * blockDim.x) {
        float2 v = __half22float2(y[i]);
        if (bias) {
            v.x += __half2float(bias[((2 * i) / bdiv) % bmod]);
            v.y += __half2float(bias[((2 * i + 1) / bdiv) % bmod]);
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

extern "C" int pr_cu_epilogue(void *stream, void *y, int ydt, int64_t n, const void *bias,
                              int bdt, int64_t bdiv, int64_t bmod, pr_cu_act pre, const void *z,
                              int zdt, pr_cu_act post) {
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (ydt == DT_F16 && (!bias || bdt == DT_F16) && (!z || zdt == DT_F16) && n % 2 == 0 &&
        ((uintptr_t)y & 3) == 0 && ((uintptr_t)z & 3) == 0) {
        k_epilogue_h2<<<grid_for(n / 2, 256), 256, 0, s>>>(
            (__half2 *)y, n / 2, (const __half *)bias, bdiv, bmod, pre, (const __half2 *)z, post);
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

__global__ void k_elementwise(pr_cu_ew w, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o[4] = {w.off[0], w.off[1], w.off[2], w.off[3]}, r = i;
        for (int d = w.rank - 1; d >= 0; d--) {
            int64_t c = r % w.dims[d];
            r /= w.dims[d];
            o[0] += c * w.st[0][d];
            o[1] += c * w.st[1][d];
            o[2] += c * w.st[2][d];
            o[3] += c * w.st[3][d];
        }
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
}

extern "C" int pr_cu_elementwise(void *stream, const pr_cu_ew *w) {
    int64_t n = 1;
    for (int d = 0; d < w->rank; d++) n *= w->dims[d];
    if (n <= 0) return 0;
    k_elementwise<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(*w, n);
    return launch_result();
}

// ------------------------------------------------------------------ gather

__global__ void k_gather(const void *data, int ddt, const void *idx, int idt, void *out, int odt,
                         int64_t outer, int64_t axis_dim, int64_t nidx, int64_t inner) {
    int64_t n = outer * nidx * inner;
    bool same16 = ddt == odt && (ddt == DT_F16 || ddt == DT_BF16);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t in_ = i % inner, t = i / inner, j = t % nidx, o = t / nidx;
        int64_t x = idt == DT_I64 ? ((const long long *)idx)[j] : ((const int *)idx)[j];
        if (x < 0) x += axis_dim;
        if (x < 0 || x >= axis_dim) {
            stf(out, odt, i, 0.0f);
            continue;
        }
        int64_t src = (o * axis_dim + x) * inner + in_;
        if (same16)
            ((unsigned short *)out)[i] = ((const unsigned short *)data)[src];
        else
            stf(out, odt, i, ldf(data, ddt, src));
    }
}

extern "C" int pr_cu_gather(void *stream, const void *data, int ddt, const void *idx, int idt,
                            void *out, int odt, int64_t outer, int64_t axis_dim, int64_t nidx,
                            int64_t inner) {
    int64_t n = outer * nidx * inner;
    if (n <= 0) return 0;
    k_gather<<<grid_for(n, 256), 256, 0, (cudaStream_t)stream>>>(data, ddt, idx, idt, out, odt,
                                                                 outer, axis_dim, nidx, inner);
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
