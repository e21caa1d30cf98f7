// Device helpers shared by the kernels (cu_*.cu): loads and stores of a
// run-time dtype (precis_dtype values), the fused activations of ir/act.h,
// warp/block reductions and launch geometry.
#ifndef PR_BACKENDS_CUDA_CU_COMMON_CUH
#define PR_BACKENDS_CUDA_CU_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "backends/cuda/cu_kernels.h"

// precis_dtype values (include/precis/precis.h); the .cu files do not see
// the C headers.
enum {
    DT_F32 = 1, DT_U8 = 2, DT_I8 = 3, DT_I32 = 6, DT_I64 = 7, DT_BOOL = 9, DT_F16 = 10,
    DT_F64 = 11, DT_BF16 = 16, DT_F8 = 17 /* float8e4m3fn */
};

// float -> e4m3, round to nearest even, saturated to +-448 (NaN stays NaN): ref's pr_f32_to_e4m3
__device__ __forceinline__ unsigned char to_e4m3(float v) {
    return (unsigned char)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}
__device__ __forceinline__ float from_e4m3(unsigned char c) {
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E4M3);
    return __half2float(__half(h));
}
// pr_act_kind (ir/act.h)
enum {
    ACT_NONE = 0, ACT_RELU, ACT_LEAKY_RELU, ACT_CLIP, ACT_SIGMOID, ACT_HARD_SIGMOID,
    ACT_HARD_SWISH, ACT_TANH, ACT_GELU, ACT_GELU_TANH, ACT_SWISH, ACT_AFFINE
};

__device__ __forceinline__ float ldf(const void *p, int dt, int64_t i) {
    switch (dt) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F16: return __half2float(((const __half *)p)[i]);
    case DT_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case DT_F64: return (float)((const double *)p)[i];
    case DT_I64: return (float)((const long long *)p)[i];
    case DT_I32: return (float)((const int *)p)[i];
    case DT_I8: return (float)((const signed char *)p)[i];
    case DT_U8: case DT_BOOL: return (float)((const unsigned char *)p)[i];
    case DT_F8: return from_e4m3(((const unsigned char *)p)[i]);
    default: return 0.0f;
    }
}

__device__ __forceinline__ void stf(void *p, int dt, int64_t i, float v) {
    switch (dt) {
    case DT_F32: ((float *)p)[i] = v; break;
    case DT_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    case DT_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    case DT_F64: ((double *)p)[i] = (double)v; break;
    case DT_I64: ((long long *)p)[i] = (long long)v; break;
    case DT_I32: ((int *)p)[i] = (int)v; break;
    case DT_I8: ((signed char *)p)[i] = (signed char)v; break;
    case DT_U8: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case DT_BOOL: ((unsigned char *)p)[i] = v != 0.0f; break;
    case DT_F8: ((unsigned char *)p)[i] = to_e4m3(v); break;
    default: break;
    }
}

// Exact for the integer types (int64 up to 2^53).
__device__ __forceinline__ double ldd(const void *p, int dt, int64_t i) {
    switch (dt) {
    case DT_F64: return ((const double *)p)[i];
    case DT_I64: return (double)((const long long *)p)[i];
    case DT_I32: return (double)((const int *)p)[i];
    default: return (double)ldf(p, dt, i);
    }
}

// Float to integer as ONNX Cast: truncation toward zero (NaN/inf undefined).
__device__ __forceinline__ void std_(void *p, int dt, int64_t i, double v) {
    switch (dt) {
    case DT_F64: ((double *)p)[i] = v; break;
    case DT_I64: ((long long *)p)[i] = (long long)v; break;
    case DT_I32: ((int *)p)[i] = (int)v; break;
    case DT_F32: ((float *)p)[i] = (float)v; break;
    default: stf(p, dt, i, (float)v); break;
    }
}

// 8 elements (16-byte chunk i8 of a float32 / fp16 / bf16 array) as float
__device__ __forceinline__ void ld8f(const void *p, int dt, int64_t i8, float v[8]) {
    if (dt == DT_F32) {
        const float4 a = ((const float4 *)p)[2 * i8], b = ((const float4 *)p)[2 * i8 + 1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        return;
    }
    const uint4 w = ((const uint4 *)p)[i8];
    const unsigned short *h = (const unsigned short *)&w;
#pragma unroll
    for (int e = 0; e < 8; e++)
        v[e] = dt == DT_F16 ? __half2float(__ushort_as_half(h[e]))
                            : __bfloat162float(__ushort_as_bfloat16(h[e]));
}
// Index j of a Gather (int64 or int32, negative from the end) as a row in
// [0, axis_dim), or -1 when out of range (the row reads as zeros).
__device__ __forceinline__ int64_t gather_row(const void *idx, int idt, int64_t j,
                                              int64_t axis_dim) {
    int64_t x = idt == DT_I64 ? ((const long long *)idx)[j] : ((const int *)idx)[j];
    if (x < 0) x += axis_dim;
    return x >= 0 && x < axis_dim ? x : -1;
}

// Typed element access for the register kernels (T: float, __half, __nv_bfloat16).
__device__ __forceinline__ float tof(float v) { return v; }
__device__ __forceinline__ float tof(__half v) { return __half2float(v); }
__device__ __forceinline__ float tof(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float tof(signed char v) { return (float)v; }
__device__ __forceinline__ float tof(unsigned char v) { return (float)v; }
template <typename T> __device__ __forceinline__ T fromf(float v);
template <> __device__ __forceinline__ float fromf<float>(float v) { return v; }
template <> __device__ __forceinline__ __half fromf<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
// int8 (max pooling moves values: exact; anything else rounds and saturates)
template <> __device__ __forceinline__ signed char fromf<signed char>(float v) {
    v = rintf(v);
    return (signed char)(v < -128.0f ? -128.0f : v > 127.0f ? 127.0f : v);
}
template <> __device__ __forceinline__ unsigned char fromf<unsigned char>(float v) {
    v = rintf(v);
    return (unsigned char)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
}

__device__ __forceinline__ float act_apply(const pr_cu_act &a, float x) {
    switch (a.kind) {
    case ACT_NONE: return x;
    case ACT_RELU: return x < 0.0f ? 0.0f : x;
    case ACT_LEAKY_RELU: return x < 0.0f ? a.alpha * x : x;
    case ACT_CLIP: return x < a.alpha ? a.alpha : (x > a.beta ? a.beta : x);
    case ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ACT_HARD_SIGMOID: return fminf(1.0f, fmaxf(0.0f, a.alpha * x + a.beta));
    case ACT_HARD_SWISH: return x * fminf(1.0f, fmaxf(0.0f, x * (1.0f / 6.0f) + 0.5f));
    case ACT_TANH: return tanhf(x);
    case ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case ACT_SWISH: return x / (1.0f + expf(-x));
    case ACT_AFFINE: return a.alpha * x + a.beta;
    default: return x;
    }
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Block-wide sum / max (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. `sh` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : 0.0f;
    return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    return warp_max(v);
}

// Blocks for a grid-stride loop over n items with `threads` per block.
static inline unsigned grid_for(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    if (b > 65535LL * 32) b = 65535LL * 32;
    return (unsigned)(b < 1 ? 1 : b);
}

static inline int launch_result() { return (int)cudaGetLastError(); }

#endif
