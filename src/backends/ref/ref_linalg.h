/* Internal helpers of the 'linalg' reference kernels (ref_linalg.c,
 * ref_reduce.c, ref_softmax.c). */
#ifndef PR_BACKENDS_REF_REF_LINALG_H
#define PR_BACKENDS_REF_REF_LINALG_H

#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"

/* float16/bfloat16/float32 buffer -> float array of n elements. */
static inline void pr_lin_to_f32(const void *src, pr_dtype dt, int64_t n, float *dst) {
    if (dt == PRECIS_FLOAT32) {
        if (n) memcpy(dst, src, (size_t)n * sizeof(float));
    } else if (dt == PRECIS_FLOAT16) {
        const uint16_t *s = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i] = pr_f16_to_f32(s[i]);
    } else {
        const uint16_t *s = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i] = pr_bf16_to_f32(s[i]);
    }
}

/* float array -> float16/bfloat16/float32 buffer. */
static inline void pr_lin_from_f32(const float *src, int64_t n, pr_dtype dt, void *dst) {
    if (dt == PRECIS_FLOAT32) {
        if (n) memcpy(dst, src, (size_t)n * sizeof(float));
    } else if (dt == PRECIS_FLOAT16) {
        uint16_t *d = (uint16_t *)dst;
        for (int64_t i = 0; i < n; i++) d[i] = pr_f32_to_f16(src[i]);
    } else {
        uint16_t *d = (uint16_t *)dst;
        for (int64_t i = 0; i < n; i++) d[i] = pr_f32_to_bf16(src[i]);
    }
}

static inline bool pr_lin_is_half(pr_dtype dt) {
    return dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16;
}

/* malloc(n * es) that also refuses overflowing sizes; n == 0 gives a
 * non-NULL block. NULL on failure. */
static inline void *pr_lin_alloc(int64_t n, size_t es) {
    if (n < 0 || (uint64_t)n > (SIZE_MAX / 2) / (es ? es : 1)) return NULL;
    size_t bytes = (size_t)n * es;
    return malloc(bytes ? bytes : 1);
}

/* Integer element i of an integer/bool buffer, wrapped to 64 bits
 * (uint64 values keep their bit pattern). */
static inline uint64_t pr_lin_load_u64(const void *p, pr_dtype dt, int64_t i) {
    switch (dt) {
    case PRECIS_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case PRECIS_UINT8: return ((const uint8_t *)p)[i];
    case PRECIS_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case PRECIS_UINT16: return ((const uint16_t *)p)[i];
    case PRECIS_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case PRECIS_UINT32: return ((const uint32_t *)p)[i];
    case PRECIS_INT64: return (uint64_t)((const int64_t *)p)[i];
    case PRECIS_UINT64: return ((const uint64_t *)p)[i];
    case PRECIS_BOOL: return ((const uint8_t *)p)[i] ? 1u : 0u;
    default: return 0;
    }
}

/* Store the low bits of v into an integer/bool buffer (wrapping, as numpy's
 * astype does for integers). */
static inline void pr_lin_store_u64(void *p, pr_dtype dt, int64_t i, uint64_t v) {
    switch (dt) {
    case PRECIS_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case PRECIS_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PRECIS_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case PRECIS_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case PRECIS_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case PRECIS_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case PRECIS_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case PRECIS_UINT64: ((uint64_t *)p)[i] = v; break;
    case PRECIS_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

#endif
