// The epilogue of the implicit-GEMM int8 kernels (cu_igemm.cu: mma.sync;
// cu_igemm_wg.cu: wgmma), after their accumulators: pr_cu_qepi as
// pr_cu_qepilogue does it.
//
// Fast form (igemm_fast_ok): int8/uint8 NHWC out, act ReLU or none, no or an
// int8/uint8 residual, N % 4 == 0: the kernel stages act(acc * scale + bias)
// as float rows in shared memory, then igemm_store_rows writes them out 16
// (or 4) channels a thread (coalesced residual loads and stores). Else
// igemm_epi_general, one out-of-line call an element (an inlined general
// epilogue per accumulator would not fit the instruction cache).
//
// The 16-byte store loop converts no byte through the int <-> float units
// (Hopper runs I2F / F2I / FRND at 16 lanes a clock per SM, a quarter of
// FFMA's rate; phase 15r's lesson): the residual byte becomes a float by PRMT
// into 0x4B000000's low byte less 2^23 (exact), the output byte by clamping in
// float, adding 1.5 * 2^23 (the FADD rounds half to even, as rintf) and
// taking the low byte of the bits. Same operations on the same floats as
// qepi_one + sat_q: the bytes are those of the converting loop, which
// PRECIS_CUDA_IGEMM_EPI=0 keeps (A/B).
#ifndef PR_BACKENDS_CUDA_CU_IGEMM_EPI_CUH
#define PR_BACKENDS_CUDA_CU_IGEMM_EPI_CUH

#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cu_int8.cuh"

// PRECIS_CUDA_IGEMM_EPI=0: the 16-byte store loop converts with I2F / FRND /
// F2I as before (A/B); default the conversion-free form (see the top). Read at
// each launch (the tests switch it within one process).
static inline bool igemm_epi_nocvt(void) {
    const char *e = getenv("PRECIS_CUDA_IGEMM_EPI");
    return !(e && !strcmp(e, "0"));
}

// the float of byte k of u, plus 2^23 (exact): PRMT into 0x4B000000's low byte
static __device__ __forceinline__ float igemm_byte_f(uint32_t u, int k) {
    return __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540u + (uint32_t)k));
}

static inline bool igemm_fast_ok(const pr_cu_qepi *q) {
    bool relu_or_none = (q->pre.kind == ACT_NONE || q->pre.kind == ACT_RELU) &&
                        (q->post.kind == ACT_NONE || q->post.kind == ACT_RELU);
    return (q->ydt == DT_I8 || q->ydt == DT_U8) && !q->nchw_hw && q->N % 4 == 0 &&
           relu_or_none && (!q->z || (q->z_int && (q->zdt == DT_I8 || q->zdt == DT_U8))) &&
           ((uintptr_t)q->y & 3) == 0 && ((uintptr_t)q->z & 3) == 0;
}

static __device__ __noinline__ void igemm_epi_general(const pr_cu_qepi *q, int acc, int64_t m,
                                                      int64_t n) {
    int64_t yi = qepi_index(*q, m, n);
    qepi_store(*q, yi, qepi_one(*q, acc, n, yi));
}

// act(acc * scale + bias) of two columns n, n + 1 (in: n < Nout).
struct igemm_col2 {
    float s0, s1, b0, b1;
    int o0, o1;
};
static __device__ __forceinline__ igemm_col2 igemm_cols(const pr_cu_qepi &q, int n, bool in) {
    bool one = q.n_wscale == 1;
    igemm_col2 c;
    c.s0 = in ? q.a_scale * q.w_scale[one ? 0 : n] : 0.0f;
    c.s1 = in ? q.a_scale * q.w_scale[one ? 0 : n + 1] : 0.0f;
    c.b0 = in && q.bias ? q.bias[n] : 0.0f;
    c.b1 = in && q.bias ? q.bias[n + 1] : 0.0f;
    c.o0 = in && q.acc_off ? q.acc_off[n] : 0;
    c.o1 = in && q.acc_off ? q.acc_off[n + 1] : 0;
    return c;
}
static __device__ __forceinline__ float2 igemm_pre(const igemm_col2 &c, int a0, int a1, bool relu) {
    float r0 = (float)(a0 + c.o0) * c.s0 + c.b0, r1 = (float)(a1 + c.o1) * c.s1 + c.b1;
    if (relu) {
        r0 = fmaxf(r0, 0.0f);
        r1 = fmaxf(r1, 0.0f);
    }
    return make_float2(r0, r1);
}

// Where output column nl of a staged row lies: each 16-column group's four
// float4s rotated by (group >> 1) & 3, so that the 16-byte reader's 8 lanes of
// a shared-memory phase (8 consecutive groups) hit distinct banks.
static __device__ __forceinline__ int igemm_scol(int nl) {
    int g = nl >> 4;
    return (g << 4) | ((((nl >> 2) + (g >> 1)) & 3) << 2) | (nl & 3);
}

// Rows [0, ROWS) of the staged tile (row stride SP floats, BN columns; row
// i is output row m0 + i, column c is n0 + c): residual, act2, requantize,
// store; T threads, tid this one's index. 16 channels a thread (16-byte
// residual loads and stores, one step's load ahead) where
// N % 16 == 0 and y / z are 16-byte aligned, else 4. nocvt: the 16-byte
// loop without int <-> float conversions (see the top).
template <int BN, int SP, int T, int ROWS>
static __device__ __forceinline__ void igemm_store_rows(const pr_cu_qepi &q, const float *stage,
                                                        int64_t m0, int n0, int64_t M,
                                                        int64_t Nout, int tid, bool nocvt) {
    const bool post = q.post.kind == ACT_RELU;
    const float zs = q.z_scale, zo = q.z_bias ? 128.0f : 0.0f;
    const bool zu8 = q.z && q.zdt == DT_U8;
    if (BN % 16 == 0 && q.N % 16 == 0 && ((uintptr_t)q.y & 15) == 0 &&
        ((uintptr_t)q.z & 15) == 0) {
        constexpr int CPR = BN / 16, IT = ROWS * CPR / T;
        static_assert(IT >= 1 && ROWS * CPR % T == 0, "16-byte epilogue shape");
        static_assert(BN % 16 == 0, "staged groups");
        auto zload = [&](int it) { // the residual's 16 bytes of step it (0 without)
            int idx = tid + it * T, row = idx / CPR, c = idx - row * CPR;
            int64_t m = m0 + row;
            int n = n0 + c * 16;
            uint4 z = make_uint4(0, 0, 0, 0);
            if (q.z && m < M && n < Nout)
                z = *(const uint4 *)((const unsigned char *)q.z + m * q.N + n);
            return z;
        };
        // not unrolled (unrolled, the wgmma 128x256 tile ran up to 1.9x slower:
        // likely instruction-cache misses, not profiled); one load in flight ahead
        uint4 zn = zload(0);
        if (nocvt) {
            // the residual's real value: (byte ^ zflip) + 2^23 - zc (int8: flipped, less
            // 128; biased int8 (+128): flipped; uint8: as is)
            const uint32_t zflip = q.z && !zu8 ? 0x80808080u : 0u;
            const float zc = 8388608.0f + (q.z && !zu8 && !q.z_bias ? 128.0f : 0.0f);
            const bool u8y = q.ydt == DT_U8;
            const float lo = u8y ? 0.0f : -128.0f, hi = u8y ? 255.0f : 127.0f;
            const uint32_t yflip = q.y_bias ? 0x80808080u : 0u;
            const float yinv = q.y_inv;
#pragma unroll 1
            for (int it = 0; it < IT; it++) {
                uint4 zc4 = zn;
                if (it + 1 < IT) zn = zload(it + 1);
                int idx = tid + it * T, row = idx / CPR, c = idx - row * CPR;
                int64_t m = m0 + row;
                int n = n0 + c * 16;
                if (m >= M || n >= Nout) continue;
                const float *sr = &stage[row * SP + c * 16];
                const uint32_t zw[4] = {zc4.x ^ zflip, zc4.y ^ zflip, zc4.z ^ zflip,
                                        zc4.w ^ zflip};
                uint32_t ow[4];
#pragma unroll
                for (int v = 0; v < 4; v++) {
                    float4 r = *(const float4 *)&sr[((v + (c >> 1)) & 3) << 2]; // igemm_scol
                    float e[4] = {r.x, r.y, r.z, r.w};
                    uint32_t u[4];
#pragma unroll
                    for (int b = 0; b < 4; b++) {
                        if (q.z) e[b] += (igemm_byte_f(zw[v], b) - zc) * zs;
                        if (post) e[b] = fmaxf(e[b], 0.0f);
                        u[b] = __float_as_uint(fminf(fmaxf(e[b] * yinv, lo), hi) + 12582912.0f);
                    }
                    ow[v] = __byte_perm(__byte_perm(u[0], u[1], 0x0040u),
                                        __byte_perm(u[2], u[3], 0x0040u), 0x5410u) ^
                            yflip;
                }
                *(uint4 *)((unsigned char *)q.y + m * q.N + n) =
                    make_uint4(ow[0], ow[1], ow[2], ow[3]);
            }
            return;
        }
#pragma unroll 1
        for (int it = 0; it < IT; it++) {
            uint4 zc = zn;
            if (it + 1 < IT) zn = zload(it + 1);
            int idx = tid + it * T, row = idx / CPR, c = idx - row * CPR;
            int64_t m = m0 + row;
            int n = n0 + c * 16;
            if (m >= M || n >= Nout) continue;
            const float *sr = &stage[row * SP + c * 16];
            const uint32_t zw[4] = {zc.x, zc.y, zc.z, zc.w};
            uint32_t ow[4];
#pragma unroll
            for (int v = 0; v < 4; v++) {
                float4 r = *(const float4 *)&sr[((v + (c >> 1)) & 3) << 2]; // igemm_scol
                float e[4] = {r.x, r.y, r.z, r.w};
                uint32_t o = 0;
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    uint32_t zb = (zw[v] >> (8 * b)) & 0xff;
                    if (zu8) e[b] += (float)zb * zs;
                    else if (q.z) e[b] += ((float)(signed char)zb + zo) * zs;
                    if (post) e[b] = fmaxf(e[b], 0.0f);
                    o |= (uint32_t)qepi_byte(q, sat_q(e[b] * q.y_inv, q.ydt)) << (8 * b);
                }
                ow[v] = o;
            }
            *(uint4 *)((unsigned char *)q.y + m * q.N + n) = make_uint4(ow[0], ow[1], ow[2], ow[3]);
        }
        return;
    }
    for (int idx = tid; idx < ROWS * (BN / 4); idx += T) {
        int row = idx / (BN / 4), c4 = idx - row * (BN / 4);
        int64_t m = m0 + row;
        int n = n0 + c4 * 4;
        if (m >= M || n >= Nout) continue;
        float4 r = *(const float4 *)&stage[row * SP + igemm_scol(c4 * 4)];
        int64_t yi = m * q.N + n;
        if (zu8) {
            uchar4 z = *(const uchar4 *)((const unsigned char *)q.z + yi);
            r.x += (float)z.x * zs;
            r.y += (float)z.y * zs;
            r.z += (float)z.z * zs;
            r.w += (float)z.w * zs;
        } else if (q.z) { // int8, or biased uint8 (z + 128)
            char4 z = *(const char4 *)((const signed char *)q.z + yi);
            r.x += ((float)z.x + zo) * zs;
            r.y += ((float)z.y + zo) * zs;
            r.z += ((float)z.z + zo) * zs;
            r.w += ((float)z.w + zo) * zs;
        }
        if (post) {
            r.x = fmaxf(r.x, 0.0f);
            r.y = fmaxf(r.y, 0.0f);
            r.z = fmaxf(r.z, 0.0f);
            r.w = fmaxf(r.w, 0.0f);
        }
        uchar4 o;
        o.x = qepi_byte(q, sat_q(r.x * q.y_inv, q.ydt));
        o.y = qepi_byte(q, sat_q(r.y * q.y_inv, q.ydt));
        o.z = qepi_byte(q, sat_q(r.z * q.y_inv, q.ydt));
        o.w = qepi_byte(q, sat_q(r.w * q.y_inv, q.ydt));
        *(uchar4 *)((unsigned char *)q.y + yi) = o;
    }
}

#endif
