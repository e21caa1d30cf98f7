// Depthwise 2-D convolution (group == C == K: one filter a channel) with its
// epilogue in the same pass: y = act2(act1(conv(x) + bias) + z), float32
// accumulation. Memory bound, so the layouts are read the way they are laid
// out:
//   NHWC  a thread computes V consecutive channels of one output pixel
//         (16-byte loads of x for fp16/bf16 with C % 8 == 0, float4 for
//         float32 with C % 4 == 0, narrower otherwise); a warp covers
//         consecutive channel groups, then pixels: coalesced loads and stores.
//   NCHW  a thread computes one output element, consecutive threads along the
//         output row.
// Weights are float32 [kh * kw][C] (tap-major, channels fastest), bias
// float32 [C] (or NULL); z (the residual) has y's type and layout (or NULL).
// Pads may differ at the two ends: taps outside the input are skipped.
#include "backends/cuda/cu_int8.cuh"

template <int BYTES> struct raw_of;
template <> struct raw_of<16> { typedef uint4 t; };
template <> struct raw_of<8> { typedef uint2 t; };
template <> struct raw_of<4> { typedef unsigned t; };
template <> struct raw_of<2> { typedef unsigned short t; };
template <> struct raw_of<1> { typedef signed char t; };

template <typename T, int V> struct vec_io {
    typedef typename raw_of<sizeof(T) * V>::t R;
    __device__ static __forceinline__ void load(const T *p, float *v) {
        R r = *reinterpret_cast<const R *>(p);
        const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
        for (int j = 0; j < V; j++) v[j] = tof(e[j]);
    }
    __device__ static __forceinline__ void store(T *p, const float *v) {
        R r;
        T *e = reinterpret_cast<T *>(&r);
#pragma unroll
        for (int j = 0; j < V; j++) e[j] = fromf<T>(v[j]);
        *reinterpret_cast<R *>(p) = r;
    }
};
template <typename T> struct vec_io<T, 1> {
    __device__ static __forceinline__ void load(const T *p, float *v) { v[0] = tof(*p); }
    __device__ static __forceinline__ void store(T *p, const float *v) { *p = fromf<T>(v[0]); }
};

// The epilogue: act1 and act2 general (act_apply) but kept out of line of the
// tap loop; the common case (act1 Clip/Relu/none, no z, no act2) is inline.
template <int V>
__device__ __forceinline__ void dw_epilogue(float *acc, const float *zv, const pr_cu_dw &p) {
#pragma unroll
    for (int j = 0; j < V; j++) {
        float r = act_apply(p.a1, acc[j]);
        if (zv) r += zv[j];
        acc[j] = act_apply(p.a2, r);
    }
}

template <typename T, int V>
__global__ void __launch_bounds__(256) k_dw_nhwc(const T *__restrict__ x, const float *__restrict__ w,
                                                 const float *__restrict__ bias, const T *__restrict__ z,
                                                 T *__restrict__ y, pr_cu_dw p, int64_t total) {
    const int CV = (int)(p.C / V);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int cv = (int)(i % CV);
        int64_t t = i / CV;
        int ow = (int)(t % p.OW);
        t /= p.OW;
        int oh = (int)(t % p.OH);
        int64_t n = t / p.OH;
        int c0 = cv * V;
        float acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = bias ? bias[c0 + j] : 0.0f;
        int h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
        const T *xn = x + n * p.H * p.W * p.C + c0;
        for (int r = 0; r < p.kh; r++) {
            int h = h0 + r * p.dh;
            if (h < 0 || h >= p.H) continue;
            for (int s = 0; s < p.kw; s++) {
                int ww = w0 + s * p.dw;
                if (ww < 0 || ww >= p.W) continue;
                float xv[V], wv[V];
                vec_io<T, V>::load(xn + ((int64_t)h * p.W + ww) * p.C, xv);
                const float *wt = w + (r * p.kw + s) * p.C + c0;
#pragma unroll
                for (int j = 0; j < V; j++) wv[j] = __ldg(wt + j);
#pragma unroll
                for (int j = 0; j < V; j++) acc[j] = fmaf(xv[j], wv[j], acc[j]);
            }
        }
        int64_t yo = ((n * p.OH + oh) * p.OW + ow) * p.C + c0;
        if (z) {
            float zv[V];
            vec_io<T, V>::load(z + yo, zv);
            dw_epilogue<V>(acc, zv, p);
        } else {
            dw_epilogue<V>(acc, nullptr, p);
        }
        vec_io<T, V>::store(y + yo, acc);
    }
}

template <typename T>
__global__ void __launch_bounds__(256) k_dw_nchw(const T *__restrict__ x, const float *__restrict__ w,
                                                 const float *__restrict__ bias, const T *__restrict__ z,
                                                 T *__restrict__ y, pr_cu_dw p, int64_t total) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int ow = (int)(i % p.OW);
        int64_t t = i / p.OW;
        int oh = (int)(t % p.OH);
        int64_t plane = t / p.OH; // n * C + c
        int c = (int)(plane % p.C);
        float acc = bias ? bias[c] : 0.0f;
        int h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
        const T *xp = x + plane * p.H * p.W;
        for (int r = 0; r < p.kh; r++) {
            int h = h0 + r * p.dh;
            if (h < 0 || h >= p.H) continue;
            for (int s = 0; s < p.kw; s++) {
                int ww = w0 + s * p.dw;
                if (ww < 0 || ww >= p.W) continue;
                acc = fmaf(tof(xp[(int64_t)h * p.W + ww]), __ldg(w + (r * p.kw + s) * p.C + c), acc);
            }
        }
        float zv = z ? tof(z[i]) : 0.0f;
        dw_epilogue<1>(&acc, z ? &zv : nullptr, p);
        y[i] = fromf<T>(acc);
    }
}

template <typename T, int V>
static void launch_nhwc(cudaStream_t s, const void *x, const float *w, const float *b, const void *z,
                        void *y, const pr_cu_dw &p) {
    int64_t total = p.N * p.OH * p.OW * (p.C / V);
    k_dw_nhwc<T, V><<<grid_for(total, 256), 256, 0, s>>>((const T *)x, w, b, (const T *)z, (T *)y,
                                                          p, total);
}

// VMAX: the channels of a 16-byte access (8 for 16-bit types, 4 for float32).
template <typename T, int VMAX>
static int dw_typed(cudaStream_t s, const void *x, const float *w, const float *b, const void *z,
                    void *y, const pr_cu_dw &p) {
    if (!p.nhwc) {
        int64_t total = p.N * p.C * p.OH * p.OW;
        k_dw_nchw<T><<<grid_for(total, 256), 256, 0, s>>>((const T *)x, w, b, (const T *)z,
                                                          (T *)y, p, total);
        return launch_result();
    }
    constexpr int V2 = VMAX / 2, V4 = VMAX / 4 > 0 ? VMAX / 4 : 1;
    if (p.C % VMAX == 0) launch_nhwc<T, VMAX>(s, x, w, b, z, y, p);
    else if (p.C % V2 == 0) launch_nhwc<T, V2>(s, x, w, b, z, y, p);
    else if (p.C % V4 == 0) launch_nhwc<T, V4>(s, x, w, b, z, y, p);
    else launch_nhwc<T, 1>(s, x, w, b, z, y, p);
    return launch_result();
}

extern "C" int pr_cu_dwconv(void *stream, int dt, const void *x, const float *w, const float *bias,
                            const void *z, void *y, const pr_cu_dw *p) {
    if (p->N * p->C * p->OH * p->OW <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (dt) {
    case DT_F32: return dw_typed<float, 4>(s, x, w, bias, z, y, *p);
    case DT_F16: return dw_typed<__half, 8>(s, x, w, bias, z, y, *p);
    case DT_BF16: return dw_typed<__nv_bfloat16, 8>(s, x, w, bias, z, y, *p);
    default: return (int)cudaErrorInvalidValue;
    }
}

// ------------------------------------------------------------ int8 (QConv)
// int8 x and weights, int32 sums (exact), the QConv epilogue of cu_int8.cuh
// (qepi_one: scale, bias, act, residual, act2) and a quantized (int8/uint8)
// or float y in y's own layout. NHWC x: V channels a thread (16-byte loads
// for C % 16 == 0); NCHW x: one output a thread.
__device__ __forceinline__ int64_t qdw_yindex(const pr_cu_qdw &p, int64_t n, int64_t c, int64_t oh,
                                              int64_t ow) {
    return p.ynhwc ? ((n * p.g.OH + oh) * p.g.OW + ow) * p.g.C + c
                   : ((n * p.g.C + c) * p.g.OH + oh) * p.g.OW + ow;
}

template <int V>
__global__ void __launch_bounds__(256) k_qdw_nhwc(const signed char *__restrict__ x,
                                                  const signed char *__restrict__ w, pr_cu_qdw p,
                                                  int64_t total) {
    const pr_cu_dw &g = p.g;
    const int CV = (int)(g.C / V);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int cv = (int)(i % CV);
        int64_t t = i / CV;
        int ow = (int)(t % g.OW);
        t /= g.OW;
        int oh = (int)(t % g.OH);
        int64_t n = t / g.OH;
        int c0 = cv * V;
        int acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = 0;
        int h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
        const signed char *xn = x + n * g.H * g.W * g.C + c0;
        for (int r = 0; r < g.kh; r++) {
            int h = h0 + r * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (int s = 0; s < g.kw; s++) {
                int ww = w0 + s * g.dw;
                if (ww < 0 || ww >= g.W) continue;
                typename raw_of<V>::t xr = *reinterpret_cast<const typename raw_of<V>::t *>(
                    xn + ((int64_t)h * g.W + ww) * g.C);
                typename raw_of<V>::t wr = __ldg(reinterpret_cast<const typename raw_of<V>::t *>(
                    w + (r * g.kw + s) * g.C + c0));
                const signed char *xe = reinterpret_cast<const signed char *>(&xr);
                const signed char *we = reinterpret_cast<const signed char *>(&wr);
#pragma unroll
                for (int j = 0; j < V; j++) acc[j] += (int)xe[j] * (int)we[j];
            }
        }
        if (p.ynhwc && p.q.ydt == DT_I8 && !p.q.z) { // the common case: one vector store
            typename raw_of<V>::t yr;
            signed char *ye = reinterpret_cast<signed char *>(&yr);
#pragma unroll
            for (int j = 0; j < V; j++)
                ye[j] = (signed char)sat_q(qepi_one(p.q, acc[j], c0 + j, 0) * p.q.y_inv, DT_I8);
            *reinterpret_cast<typename raw_of<V>::t *>(
                (signed char *)p.q.y + qdw_yindex(p, n, c0, oh, ow)) = yr;
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) {
                int64_t yi = qdw_yindex(p, n, c0 + j, oh, ow);
                st_q(p.q.y, p.q.ydt, yi, qepi_one(p.q, acc[j], c0 + j, yi), p.q.y_inv);
            }
        }
    }
}

__global__ void __launch_bounds__(256) k_qdw_nchw(const signed char *__restrict__ x,
                                                  const signed char *__restrict__ w, pr_cu_qdw p,
                                                  int64_t total) {
    const pr_cu_dw &g = p.g;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int ow = (int)(i % g.OW);
        int64_t t = i / g.OW;
        int oh = (int)(t % g.OH);
        int64_t plane = t / g.OH;
        int c = (int)(plane % g.C);
        int64_t n = plane / g.C;
        int acc = 0;
        int h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
        const signed char *xp = x + plane * g.H * g.W;
        for (int r = 0; r < g.kh; r++) {
            int h = h0 + r * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (int s = 0; s < g.kw; s++) {
                int ww = w0 + s * g.dw;
                if (ww < 0 || ww >= g.W) continue;
                acc += (int)xp[(int64_t)h * g.W + ww] * (int)w[(r * g.kw + s) * g.C + c];
            }
        }
        int64_t yi = qdw_yindex(p, n, c, oh, ow);
        st_q(p.q.y, p.q.ydt, yi, qepi_one(p.q, acc, c, yi), p.q.y_inv);
    }
}

template <int V> static void qdw_launch(cudaStream_t s, const void *x, const void *w, const pr_cu_qdw &p) {
    int64_t total = p.g.N * p.g.OH * p.g.OW * (p.g.C / V);
    k_qdw_nhwc<V><<<grid_for(total, 256), 256, 0, s>>>((const signed char *)x,
                                                        (const signed char *)w, p, total);
}

extern "C" int pr_cu_qdwconv(void *stream, const void *x, const void *w, const pr_cu_qdw *p) {
    const pr_cu_dw &g = p->g;
    if (g.N * g.C * g.OH * g.OW <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (!g.nhwc) {
        int64_t total = g.N * g.C * g.OH * g.OW;
        k_qdw_nchw<<<grid_for(total, 256), 256, 0, s>>>((const signed char *)x,
                                                        (const signed char *)w, *p, total);
    } else if (g.C % 16 == 0) {
        qdw_launch<16>(s, x, w, *p);
    } else if (g.C % 8 == 0) {
        qdw_launch<8>(s, x, w, *p);
    } else if (g.C % 4 == 0) {
        qdw_launch<4>(s, x, w, *p);
    } else {
        qdw_launch<1>(s, x, w, *p);
    }
    return launch_result();
}
