// FLOAT8E4M3FN conversions for the fp8 plans: QuantizeLinear (float32 /
// float16 / bfloat16 -> e4m3, x / scale rounded to nearest even and
// saturated to +-448, as ref's pr_f32_to_e4m3) and DequantizeLinear (e4m3 ->
// a float type, times scale). 16-bit inputs whose pointers and count allow it
// go 8 elements a thread (16-byte loads, 8-byte stores).
#include "backends/cuda/cu_common.cuh"

template <typename T> __device__ __forceinline__ float ld8(const T *p, int j);
template <> __device__ __forceinline__ float ld8<__half>(const __half *p, int j) {
    return __half2float(p[j]);
}
template <> __device__ __forceinline__ float ld8<__nv_bfloat16>(const __nv_bfloat16 *p, int j) {
    return __bfloat162float(p[j]);
}

template <typename T>
__global__ void k_q8_vec(const uint4 *x, uint2 *y, int64_t n8, float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint4 v = x[i];
        const T *h = reinterpret_cast<const T *>(&v);
        unsigned char q[8];
#pragma unroll
        for (int j = 0; j < 8; j++) q[j] = to_e4m3(ld8<T>(h, j) / scale);
        uint2 o;
        o.x = q[0] | (q[1] << 8) | (q[2] << 16) | ((unsigned)q[3] << 24);
        o.y = q[4] | (q[5] << 8) | (q[6] << 16) | ((unsigned)q[7] << 24);
        y[i] = o;
    }
}

__global__ void k_q8(const void *x, int xdt, unsigned char *y, int64_t n, float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = to_e4m3(ldf(x, xdt, i) / scale);
}

__global__ void k_dq8(const unsigned char *x, void *y, int ydt, int64_t n, float scale) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        stf(y, ydt, i, from_e4m3(x[i]) * scale);
}

extern "C" int pr_cu_quant_fp8(void *stream, const void *x, int xdt, void *y, int ydt, int64_t n,
                               float scale, int quant) {
    if (n <= 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (!quant) {
        k_dq8<<<grid_for(n, 256), 256, 0, s>>>((const unsigned char *)x, y, ydt, n, scale);
        return launch_result();
    }
    bool vec = (xdt == DT_F16 || xdt == DT_BF16) && n % 8 == 0 && ((uintptr_t)x & 15) == 0 &&
               ((uintptr_t)y & 7) == 0;
    if (vec && xdt == DT_F16)
        k_q8_vec<__half><<<grid_for(n / 8, 256), 256, 0, s>>>((const uint4 *)x, (uint2 *)y, n / 8,
                                                              scale);
    else if (vec)
        k_q8_vec<__nv_bfloat16><<<grid_for(n / 8, 256), 256, 0, s>>>((const uint4 *)x, (uint2 *)y,
                                                                     n / 8, scale);
    else
        k_q8<<<grid_for(n, 256), 256, 0, s>>>(x, xdt, (unsigned char *)y, n, scale);
    return launch_result();
}
