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
#include "backends/cuda/cu_mma.cuh"

#include <atomic>

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

// The epilogue on V outputs at element yo of y (z, when given, the residual at
// the same place), then the store.
template <typename T, int V>
__device__ __forceinline__ void dw_store(T *y, const T *z, int64_t yo, float *acc,
                                         const pr_cu_dw &p) {
    if (z) {
        float zv[V];
        vec_io<T, V>::load(z + yo, zv);
        dw_epilogue<V>(acc, zv, p);
    } else {
        dw_epilogue<V>(acc, nullptr, p);
    }
    vec_io<T, V>::store(y + yo, acc);
}

// V float32 weights: 16-byte loads where V allows (w rows are 16-byte aligned
// when C % 4 == 0, which V >= 4 implies).
template <int V> struct wload {
    __device__ static __forceinline__ void get(const float *p, float *v) {
#pragma unroll
        for (int j = 0; j < V; j += 4) {
            float4 q = __ldg(reinterpret_cast<const float4 *>(p + j));
            v[j] = q.x;
            v[j + 1] = q.y;
            v[j + 2] = q.z;
            v[j + 3] = q.w;
        }
    }
};
template <> struct wload<2> {
    __device__ static __forceinline__ void get(const float *p, float *v) {
        float2 q = __ldg(reinterpret_cast<const float2 *>(p));
        v[0] = q.x;
        v[1] = q.y;
    }
};
template <> struct wload<1> {
    __device__ static __forceinline__ void get(const float *p, float *v) { v[0] = __ldg(p); }
};

// KS: the window (KS x KS) known at compile time, the tap loops unrolled so
// that every load of a thread is in flight at once (at batch 1 the grid is
// about one wave and a run-time loop waited on each tap in turn); 0: any
// window at run time. Indices are 32-bit: the launcher splits the batch so
// that one launch covers fewer than 2^31 outputs.
template <typename T, int V, int KS>
__global__ void __launch_bounds__(256) k_dw_nhwc(const T *__restrict__ x, const float *__restrict__ w,
                                                 const float *__restrict__ bias, const T *__restrict__ z,
                                                 T *__restrict__ y, pr_cu_dw p, int total) {
    const int CV = (int)p.C / V, OW = (int)p.OW, OH = (int)p.OH, H = (int)p.H, W = (int)p.W,
              C = (int)p.C;
    const int kh = KS ? KS : p.kh, kw = KS ? KS : p.kw;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int cv = i % CV, t = i / CV;
        int ow = t % OW;
        t /= OW;
        int oh = t % OH, n = t / OH;
        int c0 = cv * V;
        float acc[V];
        if (bias) wload<V>::get(bias + c0, acc);
        else
#pragma unroll
            for (int j = 0; j < V; j++) acc[j] = 0.0f;
        int h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
        const T *xn = x + (int64_t)n * H * W * C + c0;
#pragma unroll
        for (int r = 0; r < kh; r++) {
            int h = h0 + r * p.dh;
            if (h < 0 || h >= H) continue;
#pragma unroll
            for (int s = 0; s < kw; s++) {
                int ww = w0 + s * p.dw;
                if (ww < 0 || ww >= W) continue;
                float xv[V], wv[V];
                vec_io<T, V>::load(xn + (h * W + ww) * C, xv);
                wload<V>::get(w + (r * kw + s) * C + c0, wv);
#pragma unroll
                for (int j = 0; j < V; j++) acc[j] = fmaf(xv[j], wv[j], acc[j]);
            }
        }
        dw_store<T, V>(y, z, (((int64_t)n * OH + oh) * OW + ow) * C + c0, acc, p);
    }
}

// PX consecutive output pixels of a row a thread (stride SW, no dilation
// along W; p.px == 4 asks for it): each input column and each row's weights
// are loaded once for the PX outputs, (PX - 1) * SW + KS column loads a row
// instead of PX * KS (the one-pixel form above is bound by its L1 loads at
// batch 32: 3-8x the time of its bytes).
template <typename T, int V, int KS, int SW, int PX>
__global__ void __launch_bounds__(256) k_dw_nhwc_px(const T *__restrict__ x, const float *__restrict__ w,
                                                    const float *__restrict__ bias, const T *__restrict__ z,
                                                    T *__restrict__ y, pr_cu_dw p, int total) {
    const int CV = (int)p.C / V, OW = (int)p.OW, OH = (int)p.OH, H = (int)p.H, W = (int)p.W,
              C = (int)p.C, OWB = (OW + PX - 1) / PX;
    constexpr int NC = (PX - 1) * SW + KS;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int cv = i % CV, t = i / CV;
        int owb = t % OWB;
        t /= OWB;
        int oh = t % OH, n = t / OH;
        int c0 = cv * V, ow0 = owb * PX;
        float acc[PX][V];
#pragma unroll
        for (int q = 0; q < PX; q++) {
            if (bias) wload<V>::get(bias + c0, acc[q]);
            else
#pragma unroll
                for (int j = 0; j < V; j++) acc[q][j] = 0.0f;
        }
        int h0 = oh * p.sh - p.pt, w0 = ow0 * SW - p.pl;
        const T *xn = x + (int64_t)n * H * W * C + c0;
#pragma unroll
        for (int r = 0; r < KS; r++) {
            int h = h0 + r * p.dh;
            if (h < 0 || h >= H) continue;
            float wv[KS][V];
#pragma unroll
            for (int s = 0; s < KS; s++) wload<V>::get(w + (r * KS + s) * C + c0, wv[s]);
            const T *xr = xn + h * W * C;
#pragma unroll
            for (int col = 0; col < NC; col++) {
                int ww = w0 + col;
                if (ww < 0 || ww >= W) continue;
                float xv[V];
                vec_io<T, V>::load(xr + ww * C, xv);
#pragma unroll
                for (int q = 0; q < PX; q++) {
                    const int s = col - q * SW;
                    if (s >= 0 && s < KS)
#pragma unroll
                        for (int j = 0; j < V; j++) acc[q][j] = fmaf(xv[j], wv[s][j], acc[q][j]);
                }
            }
        }
#pragma unroll
        for (int q = 0; q < PX; q++) {
            if (ow0 + q >= OW) break;
            dw_store<T, V>(y, z, (((int64_t)n * OH + oh) * OW + ow0 + q) * C + c0, acc[q], p);
        }
    }
}

// A block computes an output tile (TW columns x RG * TH rows x 16 channels)
// of NB images in turn from shared-memory copies of their input tiles with
// the halo (each input read once from global memory: 16-byte cp.async, zero
// padding; the next image's tile loads while this one computes), fp16/bf16
// NHWC, C % 8 == 0, KS x KS window, stride S in both directions, no
// dilation (p.px == PR_CU_DW_TILE + cfg asks for it). A thread takes CPT
// channels and a column of TH outputs: its KS * KS * CPT float32 weights in
// registers (loaded once a block), each input row of its strip read once
// from shared memory (KS vectors of CPT channels) and used for every output
// row it touches. Stride 2: even and odd input columns are stored apart so
// that a warp's reads (consecutive output columns) hit consecutive words.
template <int S> __device__ __forceinline__ int dwt_col(int ix, int half_w) {
    return S == 1 ? ix : (ix & 1) * half_w + (ix >> 1);
}

// image n's IH x IW input tile (16 channels from c0) into shared buffer dst
template <typename T, int S, int IH, int IW, int NT>
__device__ __forceinline__ void dwt_issue(uint4 *dst, const T *__restrict__ x, int n, int h0, int w0,
                                          int c0, int H, int W, int C) {
    constexpr int IWH = (IW + 1) / 2;
    const T *xn = x + (int64_t)n * H * W * C;
    for (int i = threadIdx.x; i < IH * IW * 2; i += NT) {
        int hf = i & 1, pix = i >> 1, iy = pix / IW, ix = pix - iy * IW;
        int h = h0 + iy, ww = w0 + ix, c = c0 + hf * 8;
        bool ok = h >= 0 && h < H && ww >= 0 && ww < W && c < C;
        prmma::cp16(prmma::smem_u32(&dst[(iy * IW + dwt_col<S>(ix, IWH)) * 2 + hf]),
                    ok ? xn + ((int64_t)h * W + ww) * C + c : x, ok);
    }
    prmma::cp_commit();
}

template <typename T, int KS, int S, int TW, int TH, int RG, int CPT>
__global__ void __launch_bounds__(16 / CPT * TW * RG)
    k_dw_tile(const T *__restrict__ x, const float *__restrict__ w, const float *__restrict__ bias,
              const T *__restrict__ z, T *__restrict__ y, pr_cu_dw p, int tiles_w, int nb) {
    constexpr int TPC = 16 / CPT, NT = TPC * TW * RG, OTH = RG * TH, IH = (OTH - 1) * S + KS,
                  IW = (TW - 1) * S + KS, IWH = (IW + 1) / 2, SR = (TH - 1) * S + KS;
    typedef typename raw_of<CPT * 2>::t R; // CPT 16-bit channels
    __shared__ __align__(16) uint4 sm[2][IH * IW * 2]; // 32 bytes (16 channels) a pixel
    const int C = (int)p.C, H = (int)p.H, W = (int)p.W, OH = (int)p.OH, OW = (int)p.OW;
    const int tx = blockIdx.x % tiles_w, ty = blockIdx.x / tiles_w;
    const int ow0 = tx * TW, oh0 = ty * OTH, c0 = blockIdx.y * 16;
    const int h0 = oh0 * S - p.pt, w0 = ow0 * S - p.pl;
    const int n0 = blockIdx.z * nb, n1 = n0 + nb < (int)p.N ? n0 + nb : (int)p.N;
    if (n0 >= n1) return;
    dwt_issue<T, S, IH, IW, NT>(sm[0], x, n0, h0, w0, c0, H, W, C);
    const int cp = threadIdx.x % TPC, rest = threadIdx.x / TPC, ox = rest % TW, rg = rest / TW;
    const int c = c0 + cp * CPT;
    const bool cok = c < C; // C % 8 == 0: all CPT channels or none
    float wr[KS * KS][CPT], b[CPT];
#pragma unroll
    for (int t = 0; t < KS * KS; t++) {
        if (cok) wload<CPT>::get(w + t * C + c, wr[t]);
        else
#pragma unroll
            for (int j = 0; j < CPT; j++) wr[t][j] = 0.0f;
    }
    if (bias && cok) wload<CPT>::get(bias + c, b);
    else
#pragma unroll
        for (int j = 0; j < CPT; j++) b[j] = 0.0f;
    const int iy0 = rg * TH * S, ow = ow0 + ox;
    for (int n = n0, k = 0; n < n1; n++, k++) {
        if (n + 1 < n1) { // the next image's tile loads while this one computes
            dwt_issue<T, S, IH, IW, NT>(sm[(k + 1) & 1], x, n + 1, h0, w0, c0, H, W, C);
            prmma::cp_wait<1>();
        } else {
            prmma::cp_wait<0>();
        }
        __syncthreads();
        const T *smt = reinterpret_cast<const T *>(sm[k & 1]);
        float acc[TH][CPT];
#pragma unroll
        for (int t = 0; t < TH; t++)
#pragma unroll
            for (int j = 0; j < CPT; j++) acc[t][j] = b[j];
#pragma unroll
        for (int j = 0; j < SR; j++) {
            float xv[KS][CPT];
#pragma unroll
            for (int s = 0; s < KS; s++) {
                R r = *reinterpret_cast<const R *>(
                    smt + ((iy0 + j) * IW + dwt_col<S>(ox * S + s, IWH)) * 16 + cp * CPT);
                const T *e = reinterpret_cast<const T *>(&r);
#pragma unroll
                for (int q = 0; q < CPT; q++) xv[s][q] = tof(e[q]);
            }
#pragma unroll
            for (int t = 0; t < TH; t++) {
                const int r = j - t * S;
                if (r >= 0 && r < KS)
#pragma unroll
                    for (int s = 0; s < KS; s++)
#pragma unroll
                        for (int q = 0; q < CPT; q++)
                            acc[t][q] = fmaf(xv[s][q], wr[r * KS + s][q], acc[t][q]);
            }
        }
        if (cok && ow < OW)
#pragma unroll
            for (int t = 0; t < TH; t++) {
                const int oh = oh0 + rg * TH + t;
                if (oh >= OH) break;
                dw_store<T, CPT>(y, z, (((int64_t)n * OH + oh) * OW + ow) * C + c, acc[t], p);
            }
        __syncthreads(); // the buffer is refilled by the next iteration's issue
    }
}

// Blocks of `kernel` resident at once on the device (occupancy API; 0: unknown).
template <typename K> static int tile_slots(K kernel, int threads) {
    int occ = 0, dev = 0, sms = 0;
    if (cudaGetDevice(&dev) || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, threads, 0) || occ < 1)
        return 0;
    return occ * sms;
}

// Images a block (nb) for per_img blocks an image: the fewest waves x (nb + 1)
// (one image's tile load is not hidden behind another's compute).
static int tile_nb(int slots, int per_img, int N) {
    if (slots <= 0) return 1;
    int best = 1;
    int64_t bc = -1;
    for (int nb = 1; nb <= N; nb++) {
        int64_t zb = (N + nb - 1) / nb, waves = ((int64_t)per_img * zb + slots - 1) / slots;
        int64_t cost = waves * (nb + 1);
        if (bc < 0 || cost < bc) {
            bc = cost;
            best = nb;
        }
    }
    return best;
}

template <typename T, int KS, int S, int TW, int TH, int RG, int CPT>
static void launch_tile(cudaStream_t st, const T *x, const float *w, const float *b, const T *z,
                        T *y, const pr_cu_dw &p) {
    constexpr int NT = 16 / CPT * TW * RG;
    static std::atomic<int> slots_once{-1}; // this instantiation's resident blocks (any thread
    int slots = slots_once.load(std::memory_order_relaxed); // computes the same value)
    if (slots < 0) {
        slots = tile_slots(k_dw_tile<T, KS, S, TW, TH, RG, CPT>, NT);
        slots_once.store(slots, std::memory_order_relaxed);
    }
    int tw = (int)((p.OW + TW - 1) / TW), th = (int)((p.OH + RG * TH - 1) / (RG * TH)),
        cg = (int)((p.C + 15) / 16);
    int nb = tile_nb(slots, tw * th * cg, (int)p.N);
    dim3 grid((unsigned)(tw * th), (unsigned)cg, (unsigned)((p.N + nb - 1) / nb));
    k_dw_tile<T, KS, S, TW, TH, RG, CPT><<<grid, NT, 0, st>>>(x, w, b, z, y, p, tw, nb);
}

// CPT 0: the wide form, 8 channels a thread for 3x3 windows, 4 for 5x5 (the
// weights in registers: 72 / 100 floats).
template <typename T, int TW, int TH, int RG, int CPT>
static void tile_ks(cudaStream_t st, const T *x, const float *w, const float *b, const T *z, T *y,
                    const pr_cu_dw &p) {
    constexpr int C3 = CPT ? CPT : 8, C5 = CPT ? CPT : 4;
    if (p.kh == 3)
        (p.sh == 1 ? launch_tile<T, 3, 1, TW, TH, RG, C3> : launch_tile<T, 3, 2, TW, TH, RG, C3>)(st, x, w, b, z, y, p);
    else
        (p.sh == 1 ? launch_tile<T, 5, 1, TW, TH, RG, C5> : launch_tile<T, 5, 2, TW, TH, RG, C5>)(st, x, w, b, z, y, p);
}

// The tile form's shapes (p.px - PR_CU_DW_TILE): output columns, rows a thread, row groups,
// channels a thread (0: wide).
template <typename T>
static int dw_tile(cudaStream_t st, const T *x, const float *w, const float *b, const T *z, T *y,
                   const pr_cu_dw &p) {
    if (!p.nhwc || p.C % 8 || p.kh != p.kw || (p.kh != 3 && p.kh != 5) || p.sh != p.sw ||
        (p.sh != 1 && p.sh != 2) || p.dh != 1 || p.dw != 1 || p.N > 65535)
        return (int)cudaErrorInvalidValue;
    switch (p.px - PR_CU_DW_TILE) {
    case 0: tile_ks<T, 8, 4, 2, 2>(st, x, w, b, z, y, p); break;  /* 8 x 8 outputs, 128 threads */
    case 1: tile_ks<T, 16, 4, 2, 2>(st, x, w, b, z, y, p); break; /* 16 x 8, 256 */
    case 2: tile_ks<T, 4, 2, 2, 2>(st, x, w, b, z, y, p); break;  /* 4 x 4, 64 */
    case 3: tile_ks<T, 16, 4, 2, 0>(st, x, w, b, z, y, p); break; /* 16 x 8 wide, 64 / 128 */
    case 4: tile_ks<T, 8, 4, 4, 0>(st, x, w, b, z, y, p); break;  /* 8 x 16 wide, 64 / 128 */
    case 5: tile_ks<T, 8, 2, 2, 0>(st, x, w, b, z, y, p); break;  /* 8 x 4 wide, 32 / 64 */
    default: return (int)cudaErrorInvalidValue;
    }
    return launch_result();
}

template <typename T, int KS>
__global__ void __launch_bounds__(256) k_dw_nchw(const T *__restrict__ x, const float *__restrict__ w,
                                                 const float *__restrict__ bias, const T *__restrict__ z,
                                                 T *__restrict__ y, pr_cu_dw p, int total) {
    const int OW = (int)p.OW, OH = (int)p.OH, H = (int)p.H, W = (int)p.W, C = (int)p.C;
    const int kh = KS ? KS : p.kh, kw = KS ? KS : p.kw;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int ow = i % OW, t = i / OW;
        int oh = t % OH, plane = t / OH; // n * C + c
        int c = plane % C;
        float acc = bias ? __ldg(bias + c) : 0.0f;
        int h0 = oh * p.sh - p.pt, w0 = ow * p.sw - p.pl;
        const T *xp = x + (int64_t)plane * H * W;
#pragma unroll
        for (int r = 0; r < kh; r++) {
            int h = h0 + r * p.dh;
            if (h < 0 || h >= H) continue;
#pragma unroll
            for (int s = 0; s < kw; s++) {
                int ww = w0 + s * p.dw;
                if (ww < 0 || ww >= W) continue;
                acc = fmaf(tof(xp[h * W + ww]), __ldg(w + (r * kw + s) * C + c), acc);
            }
        }
        float zv = z ? tof(z[i]) : 0.0f;
        dw_epilogue<1>(&acc, z ? &zv : nullptr, p);
        y[i] = fromf<T>(acc);
    }
}

// Batches per launch so that one launch stays under 2^31 outputs.
static int64_t dw_batch_chunk(const pr_cu_dw &p) {
    int64_t per = p.C * p.OH * p.OW, nb = ((int64_t)1 << 30) / (per > 0 ? per : 1);
    return nb < 1 ? 1 : nb;
}

template <typename T, int V, int KS>
static void launch_nhwc(cudaStream_t s, const T *x, const float *w, const float *b, const T *z,
                        T *y, const pr_cu_dw &p) {
    int total = (int)(p.N * p.OH * p.OW * (p.C / V));
    k_dw_nhwc<T, V, KS><<<grid_for(total, 256), 256, 0, s>>>(x, w, b, z, y, p, total);
}

template <typename T, int V, int KS, int SW>
static void launch_px(cudaStream_t s, const T *x, const float *w, const float *b, const T *z, T *y,
                      const pr_cu_dw &p) {
    int total = (int)(p.N * p.OH * ((p.OW + 3) / 4) * (p.C / V));
    k_dw_nhwc_px<T, V, KS, SW, 4><<<grid_for(total, 256), 256, 0, s>>>(x, w, b, z, y, p, total);
}

template <typename T, int V>
static void nhwc_ks(cudaStream_t s, const T *x, const float *w, const float *b, const T *z, T *y,
                    const pr_cu_dw &p) {
    if constexpr (V == 8) { /* four pixels a thread: fp16/bf16, 16-byte vectors only */
        if (p.px == 4 && p.dw == 1 && p.kh == p.kw && (p.kh == 3 || p.kh == 5) &&
            (p.sw == 1 || p.sw == 2)) {
            if (p.kh == 3) (p.sw == 1 ? launch_px<T, V, 3, 1> : launch_px<T, V, 3, 2>)(s, x, w, b, z, y, p);
            else (p.sw == 1 ? launch_px<T, V, 5, 1> : launch_px<T, V, 5, 2>)(s, x, w, b, z, y, p);
            return;
        }
    }
    if (p.kh == 3 && p.kw == 3) launch_nhwc<T, V, 3>(s, x, w, b, z, y, p);
    else if (p.kh == 5 && p.kw == 5) launch_nhwc<T, V, 5>(s, x, w, b, z, y, p);
    else launch_nhwc<T, V, 0>(s, x, w, b, z, y, p);
}

// VMAX: the channels of a 16-byte access (8 for 16-bit types, 4 for float32).
template <typename T, int VMAX>
static int dw_typed(cudaStream_t s, const void *xv, const float *w, const float *b, const void *zv,
                    void *yv, const pr_cu_dw &p0) {
    const int64_t chunk = dw_batch_chunk(p0) < 65535 ? dw_batch_chunk(p0) : 65535, xs = p0.C * p0.H * p0.W, ys = p0.C * p0.OH * p0.OW;
    for (int64_t n0 = 0; n0 < p0.N; n0 += chunk) {
        pr_cu_dw p = p0;
        p.N = p0.N - n0 < chunk ? p0.N - n0 : chunk;
        const T *x = (const T *)xv + n0 * xs, *z = zv ? (const T *)zv + n0 * ys : nullptr;
        T *y = (T *)yv + n0 * ys;
        if (p.px >= PR_CU_DW_TILE) {
            if constexpr (VMAX != 8) return (int)cudaErrorInvalidValue; /* fp16/bf16 only */
            else {
                int rc = dw_tile<T>(s, x, w, b, z, y, p);
                if (rc) return rc;
                continue;
            }
        }
        if (!p.nhwc) {
            int total = (int)(p.N * p.C * p.OH * p.OW);
            unsigned g = grid_for(total, 256);
            if (p.kh == 3 && p.kw == 3) k_dw_nchw<T, 3><<<g, 256, 0, s>>>(x, w, b, z, y, p, total);
            else if (p.kh == 5 && p.kw == 5) k_dw_nchw<T, 5><<<g, 256, 0, s>>>(x, w, b, z, y, p, total);
            else k_dw_nchw<T, 0><<<g, 256, 0, s>>>(x, w, b, z, y, p, total);
            continue;
        }
        constexpr int V2 = VMAX / 2, V4 = VMAX / 4 > 0 ? VMAX / 4 : 1;
        if (p.C % VMAX == 0) nhwc_ks<T, VMAX>(s, x, w, b, z, y, p);
        else if (p.px == 4) return (int)cudaErrorInvalidValue; /* four pixels: C % 8 only */
        else if (p.C % V2 == 0) nhwc_ks<T, V2>(s, x, w, b, z, y, p);
        else if (p.C % V4 == 0) nhwc_ks<T, V4>(s, x, w, b, z, y, p);
        else nhwc_ks<T, 1>(s, x, w, b, z, y, p);
    }
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
// int8 (or uint8: p.x_u8) x, int8 weights, int32 sums (exact), the QConv epilogue of cu_int8.cuh
// (qepi_one: scale, bias, act, residual, act2) and a quantized (int8/uint8)
// or float y in y's own layout. NHWC x: V channels a thread (16-byte loads
// for C % 16 == 0); NCHW x: one output a thread.
static inline int pr_cu_dt_size(int dt) {
    return dt == DT_F32 || dt == DT_I32 ? 4 : dt == DT_F16 || dt == DT_BF16 ? 2 : dt == DT_I8 || dt == DT_U8 ? 1 : 8;
}

__device__ __forceinline__ int64_t qdw_yindex(const pr_cu_qdw &p, int64_t n, int64_t c, int64_t oh,
                                              int64_t ow) {
    return p.ynhwc ? ((n * p.g.OH + oh) * p.g.OW + ow) * p.g.C + c
                   : ((n * p.g.C + c) * p.g.OH + oh) * p.g.OW + ow;
}

template <int V, int KS>
__global__ void __launch_bounds__(256) k_qdw_nhwc(const signed char *__restrict__ x,
                                                  const signed char *__restrict__ w, pr_cu_qdw p,
                                                  int total) {
    const pr_cu_dw &g = p.g;
    const int CV = (int)g.C / V, OW = (int)g.OW, OH = (int)g.OH, H = (int)g.H, W = (int)g.W,
              C = (int)g.C;
    const int kh = KS ? KS : g.kh, kw = KS ? KS : g.kw;
    typedef typename raw_of<V>::t R;
    const int xmask = p.x_u8 ? 0xff : -1; // a uint8 byte read as signed, masked back
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int cv = i % CV, t = i / CV;
        int ow = t % OW;
        t /= OW;
        int oh = t % OH, n = t / OH;
        int c0 = cv * V;
        int acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = 0;
        int h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
        const signed char *xn = x + (int64_t)n * H * W * C + c0;
#pragma unroll
        for (int r = 0; r < kh; r++) {
            int h = h0 + r * g.dh;
            if (h < 0 || h >= H) continue;
#pragma unroll
            for (int s = 0; s < kw; s++) {
                int ww = w0 + s * g.dw;
                if (ww < 0 || ww >= W) continue;
                R xr = *reinterpret_cast<const R *>(xn + (h * W + ww) * C);
                R wr = __ldg(reinterpret_cast<const R *>(w + (r * kw + s) * C + c0));
                const signed char *xe = reinterpret_cast<const signed char *>(&xr);
                const signed char *we = reinterpret_cast<const signed char *>(&wr);
#pragma unroll
                for (int j = 0; j < V; j++) acc[j] += ((int)xe[j] & xmask) * (int)we[j];
            }
        }
        if (p.ynhwc && (p.q.ydt == DT_I8 || p.q.ydt == DT_U8) && !p.q.z) { // one vector store
            R yr;
            unsigned char *ye = reinterpret_cast<unsigned char *>(&yr);
#pragma unroll
            for (int j = 0; j < V; j++)
                ye[j] = qepi_byte(p.q,
                                  sat_q(qepi_one(p.q, acc[j], c0 + j, 0) * p.q.y_inv, p.q.ydt));
            *reinterpret_cast<R *>((signed char *)p.q.y + qdw_yindex(p, n, c0, oh, ow)) = yr;
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) {
                int64_t yi = qdw_yindex(p, n, c0 + j, oh, ow);
                qepi_store(p.q, yi, qepi_one(p.q, acc[j], c0 + j, yi));
            }
        }
    }
}

template <int KS>
__global__ void __launch_bounds__(256) k_qdw_nchw(const signed char *__restrict__ x,
                                                  const signed char *__restrict__ w, pr_cu_qdw p,
                                                  int total) {
    const pr_cu_dw &g = p.g;
    const int OW = (int)g.OW, OH = (int)g.OH, H = (int)g.H, W = (int)g.W, C = (int)g.C;
    const int kh = KS ? KS : g.kh, kw = KS ? KS : g.kw;
    const int xmask = p.x_u8 ? 0xff : -1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int ow = i % OW, t = i / OW;
        int oh = t % OH, plane = t / OH;
        int c = plane % C, n = plane / C;
        int acc = 0;
        int h0 = oh * g.sh - g.pt, w0 = ow * g.sw - g.pl;
        const signed char *xp = x + (int64_t)plane * H * W;
#pragma unroll
        for (int r = 0; r < kh; r++) {
            int h = h0 + r * g.dh;
            if (h < 0 || h >= H) continue;
#pragma unroll
            for (int s = 0; s < kw; s++) {
                int ww = w0 + s * g.dw;
                if (ww < 0 || ww >= W) continue;
                acc += ((int)xp[h * W + ww] & xmask) * (int)__ldg(w + (r * kw + s) * C + c);
            }
        }
        int64_t yi = qdw_yindex(p, n, c, oh, ow);
        qepi_store(p.q, yi, qepi_one(p.q, acc, c, yi));
    }
}

template <int V, int KS>
static void qdw_launch(cudaStream_t s, const void *x, const void *w, const pr_cu_qdw &p) {
    const pr_cu_dw &g = p.g;
    int total = (int)(g.nhwc ? g.N * g.OH * g.OW * (g.C / V) : g.N * g.C * g.OH * g.OW);
    if (g.nhwc)
        k_qdw_nhwc<V, KS><<<grid_for(total, 256), 256, 0, s>>>((const signed char *)x,
                                                               (const signed char *)w, p, total);
    else
        k_qdw_nchw<KS><<<grid_for(total, 256), 256, 0, s>>>((const signed char *)x,
                                                             (const signed char *)w, p, total);
}

template <int V> static void qdw_ks(cudaStream_t s, const void *x, const void *w, const pr_cu_qdw &p) {
    if (p.g.kh == 3 && p.g.kw == 3) qdw_launch<V, 3>(s, x, w, p);
    else if (p.g.kh == 5 && p.g.kw == 5) qdw_launch<V, 5>(s, x, w, p);
    else qdw_launch<V, 0>(s, x, w, p);
}

extern "C" int pr_cu_qdwconv(void *stream, const void *x, const void *w, const pr_cu_qdw *p0) {
    const pr_cu_dw &g0 = p0->g;
    if (g0.N * g0.C * g0.OH * g0.OW <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t chunk = dw_batch_chunk(g0), xs = g0.C * g0.H * g0.W, ys = g0.C * g0.OH * g0.OW;
    for (int64_t n0 = 0; n0 < g0.N; n0 += chunk) { // one launch under 2^31 outputs
        pr_cu_qdw p = *p0;
        p.g.N = g0.N - n0 < chunk ? g0.N - n0 : chunk;
        const signed char *xc = (const signed char *)x + n0 * xs;
        p.q.y = (char *)p0->q.y + n0 * ys * (int64_t)pr_cu_dt_size(p0->q.ydt);
        if (p0->q.z) p.q.z = (const char *)p0->q.z + n0 * ys * (int64_t)pr_cu_dt_size(p0->q.zdt);
        if (!g0.nhwc) qdw_ks<1>(s, xc, w, p);
        else if (g0.C % 16 == 0) qdw_ks<16>(s, xc, w, p);
        else if (g0.C % 8 == 0) qdw_ks<8>(s, xc, w, p);
        else if (g0.C % 4 == 0) qdw_ks<4>(s, xc, w, p);
        else qdw_ks<1>(s, xc, w, p);
    }
    return launch_result();
}
