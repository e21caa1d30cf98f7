/* Element type traits and scalar conversions (FP16/BF16 <-> FP32). */
#ifndef PR_CORE_DTYPE_H
#define PR_CORE_DTYPE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "precis/precis.h"

typedef precis_dtype pr_dtype;

/* Type traits table, indexed by precis_dtype (0..PR_DTYPE_MAX). */
#define PR_DTYPE_MAX 17
typedef struct pr_dtype_traits {
    const char *name;     /* "float32" ... */
    const char *npy;      /* numpy descr without byte order, e.g. "f4"; NULL if none */
    uint8_t size;         /* bytes per element; 0 if not a fixed-size type */
    bool is_float, is_signed, is_int;
} pr_dtype_traits;

const pr_dtype_traits *pr_dtype_info(pr_dtype dt); /* never NULL */
static inline size_t pr_dtype_size(pr_dtype dt) { return pr_dtype_info(dt)->size; }
static inline const char *pr_dtype_name(pr_dtype dt) { return pr_dtype_info(dt)->name; }

static inline float pr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, overflow to inf, NaN preserved. */
static inline uint16_t pr_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520 -> inf */
    if (ax < 0x38800000u) {                                  /* subnormal or zero in f16 */
        if (ax < 0x33000000u) return (uint16_t)sign;         /* < 2^-25: rounds to 0 */
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t h = ((ax >> 13) - ((127 - 15) << 10));
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static inline float pr_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t pr_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* FLOAT8E4M3FN (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no
 * infinities; S.1111.111 is NaN; largest finite 448, smallest subnormal
 * 2^-9). Decoding is exact. */
float pr_e4m3_to_f32(uint8_t c);
/* Round to nearest even, saturating: |x| beyond 448 (and +-inf) gives +-448,
 * NaN gives NaN (0x7f with x's sign): ONNX's QuantizeLinear / Cast with
 * saturate=1. */
uint8_t pr_f32_to_e4m3(float x);

/* "float32, int64" for a set of dtypes given as a mask of bits 1u << dt
 * (into buf, truncated to cap; returns buf). */
const char *pr_dtype_mask_str(uint32_t mask, char *buf, size_t cap);

/* Read element i of a buffer of type dt as double / write a double into it
 * (with C conversion semantics; float16/bfloat16 via float; bool as 0/1).
 * Slow paths for generic code (casts, tests, small shape tensors). */
double pr_load_f64(const void *data, pr_dtype dt, int64_t i);
void pr_store_f64(void *data, pr_dtype dt, int64_t i, double v);
/* Exact int64 load for integer/bool types (float types truncated). */
int64_t pr_load_i64(const void *data, pr_dtype dt, int64_t i);

/* Integer element i of an integer/bool buffer, wrapped to 64 bits: signed
 * types sign-extended, unsigned ones zero-extended (uint64 keeps its bit
 * pattern), bool 0/1; 0 for other dtypes. */
static inline uint64_t pr_load_u64(const void *p, pr_dtype dt, int64_t i) {
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

/* Store the low bits of v into element i of an integer/bool buffer: C's
 * modular conversion (what numpy's astype does between integer types);
 * bool stores v != 0. Other dtypes: nothing is stored. */
static inline void pr_store_u64_wrap(void *p, pr_dtype dt, int64_t i, uint64_t v) {
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
