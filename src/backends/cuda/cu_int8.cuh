// Requantization helpers shared by the int8 kernels (cu_int8.cu's epilogue
// after cuBLASLt, cu_igemm.cu's implicit-GEMM conv).
//
// Requantization mirrors the ref backend (backends/ref/ref_fused.c q_run):
// the real result r (float32) is multiplied by 1 / y_scale, rounded half to
// even (rintf) and saturated.
#ifndef PR_BACKENDS_CUDA_CU_INT8_CUH
#define PR_BACKENDS_CUDA_CU_INT8_CUH

#include "backends/cuda/cu_common.cuh"

__device__ __forceinline__ float sat_q(float v, int ydt) {
    v = rintf(v);
    float lo = ydt == DT_U8 ? 0.0f : -128.0f, hi = ydt == DT_U8 ? 255.0f : 127.0f;
    if (v != v) return 0.0f;
    return v < lo ? lo : v > hi ? hi : v;
}

// The byte of a quantized value v (sat_q's result) in an int8/uint8 output.
__device__ __forceinline__ unsigned char q_byte(float v) { return (unsigned char)(int)v; }

// Store r: quantized (r * yinv) for int8/uint8 outputs, else as is.
__device__ __forceinline__ void st_q(void *y, int ydt, int64_t i, float r, float yinv) {
    if (ydt == DT_I8) ((signed char *)y)[i] = (signed char)sat_q(r * yinv, ydt);
    else if (ydt == DT_U8) ((unsigned char *)y)[i] = (unsigned char)sat_q(r * yinv, ydt);
    else stf(y, ydt, i, r);
}

// The real result of output column n from its int32 sum (pr_cu_qepi); yi
// indexes the residual.
__device__ __forceinline__ float qepi_one(const pr_cu_qepi &q, int acc, int64_t n, int64_t yi) {
    if (q.acc_off) acc += q.acc_off[n];
    float r = (float)acc * (q.a_scale * q.w_scale[q.n_wscale > 1 ? n : 0]);
    if (q.bias) r += q.bias[n];
    r = act_apply(q.pre, r);
    if (q.z)
        r += q.z_int ? (ldf(q.z, q.zdt, yi) + (q.z_bias ? 128.0f : 0.0f)) * q.z_scale
                     : ldf(q.z, q.zdt, yi);
    return act_apply(q.post, r);
}

// The byte of a quantized value v (sat_q's result) in q's int8/uint8 y:
// biased uint8 storage (q.y_bias) holds v - 128 (v XOR 0x80).
__device__ __forceinline__ unsigned char qepi_byte(const pr_cu_qepi &q, float v) {
    return (unsigned char)(q_byte(v) ^ (q.y_bias ? 0x80 : 0));
}

// st_q into q's y, honouring biased storage.
__device__ __forceinline__ void qepi_store(const pr_cu_qepi &q, int64_t yi, float r) {
    if (q.ydt == DT_I8 || q.ydt == DT_U8)
        ((unsigned char *)q.y)[yi] = qepi_byte(q, sat_q(r * q.y_inv, q.ydt));
    else
        stf(q.y, q.ydt, yi, r);
}

// Index of (m, n) in y: row-major [M, N], or NCHW with m = (b, p).
__device__ __forceinline__ int64_t qepi_index(const pr_cu_qepi &q, int64_t m, int64_t n) {
    if (!q.nchw_hw) return m * q.N + n;
    int64_t b = m / q.nchw_hw, p = m - b * q.nchw_hw;
    return (b * q.N + n) * q.nchw_hw + p;
}

#endif
