#include "core/dtype.h"

#include <math.h>
#include <stdio.h>

static const pr_dtype_traits k_traits[PR_DTYPE_MAX + 1] = {
    [PRECIS_UNDEFINED] = {"undefined", NULL, 0, false, false, false},
    [PRECIS_FLOAT32] = {"float32", "f4", 4, true, true, false},
    [PRECIS_UINT8] = {"uint8", "u1", 1, false, false, true},
    [PRECIS_INT8] = {"int8", "i1", 1, false, true, true},
    [PRECIS_UINT16] = {"uint16", "u2", 2, false, false, true},
    [PRECIS_INT16] = {"int16", "i2", 2, false, true, true},
    [PRECIS_INT32] = {"int32", "i4", 4, false, true, true},
    [PRECIS_INT64] = {"int64", "i8", 8, false, true, true},
    [PRECIS_STRING] = {"string", NULL, 0, false, false, false},
    [PRECIS_BOOL] = {"bool", "b1", 1, false, false, false},
    [PRECIS_FLOAT16] = {"float16", "f2", 2, true, true, false},
    [PRECIS_FLOAT64] = {"float64", "f8", 8, true, true, false},
    [PRECIS_UINT32] = {"uint32", "u4", 4, false, false, true},
    [PRECIS_UINT64] = {"uint64", "u8", 8, false, false, true},
    [14] = {"complex64", NULL, 0, false, false, false},
    [15] = {"complex128", NULL, 0, false, false, false},
    [PRECIS_BFLOAT16] = {"bfloat16", NULL, 2, true, true, false},
    [PRECIS_FLOAT8E4M3FN] = {"float8e4m3fn", NULL, 1, true, true, false},
};

float pr_e4m3_to_f32(uint8_t c) {
    int ex = (c >> 3) & 15, m = c & 7;
    float v = ex == 15 && m == 7 ? NAN : ex ? ldexpf(1.0f + (float)m / 8.0f, ex - 7)
                                            : ldexpf((float)m, -9);
    return (c & 0x80) ? -v : v;
}

uint8_t pr_f32_to_e4m3(float x) {
    uint8_t sign = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return (uint8_t)(sign | 0x7f);
    float a = fabsf(x);
    if (a >= 448.0f) return (uint8_t)(sign | 0x7e); /* saturate (inf too) */
    int ex;
    (void)frexpf(a, &ex);                   /* a in [2^(ex-1), 2^ex) */
    int e = ex - 1 < -6 ? -6 : ex - 1;      /* subnormals share 2^-6's quantum */
    float r = nearbyintf(ldexpf(a, 3 - e)); /* units of the quantum 2^(e-3): exact, RNE */
    r = ldexpf(r, e - 3);
    if (r >= 448.0f) return (uint8_t)(sign | 0x7e);
    if (r < 0x1p-6f) return (uint8_t)(sign | (uint8_t)ldexpf(r, 9)); /* subnormal or zero */
    float f = frexpf(r, &ex);               /* r = f 2^ex, f in [0.5, 1) */
    int mant = (int)((f * 2.0f - 1.0f) * 8.0f);
    return (uint8_t)(sign | ((ex - 1 + 7) << 3) | mant);
}

static const pr_dtype_traits k_unknown = {"unknown", NULL, 0, false, false, false};

const pr_dtype_traits *pr_dtype_info(pr_dtype dt) {
    if ((int)dt < 0 || (int)dt > PR_DTYPE_MAX) return &k_unknown;
    return &k_traits[dt];
}

const char *precis_dtype_name(precis_dtype dt) { return pr_dtype_info(dt)->name; }
size_t precis_dtype_size(precis_dtype dt) { return pr_dtype_info(dt)->size; }

const char *pr_dtype_mask_str(uint32_t m, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int dt = 1; dt <= PR_DTYPE_MAX && len < cap; dt++) {
        if (!((m >> dt) & 1)) continue;
        const char *sep = len ? ", " : "";
        int w = snprintf(buf + len, cap - len, "%s%s", sep, pr_dtype_name((pr_dtype)dt));
        if (w < 0) break;
        len += (size_t)w;
    }
    return buf;
}

double pr_load_f64(const void *p, pr_dtype dt, int64_t i) {
    switch (dt) {
    case PRECIS_FLOAT32: return ((const float *)p)[i];
    case PRECIS_FLOAT64: return ((const double *)p)[i];
    case PRECIS_FLOAT16: return pr_f16_to_f32(((const uint16_t *)p)[i]);
    case PRECIS_BFLOAT16: return pr_bf16_to_f32(((const uint16_t *)p)[i]);
    case PRECIS_INT8: return ((const int8_t *)p)[i];
    case PRECIS_UINT8: return ((const uint8_t *)p)[i];
    case PRECIS_INT16: return ((const int16_t *)p)[i];
    case PRECIS_UINT16: return ((const uint16_t *)p)[i];
    case PRECIS_INT32: return ((const int32_t *)p)[i];
    case PRECIS_UINT32: return ((const uint32_t *)p)[i];
    case PRECIS_INT64: return (double)((const int64_t *)p)[i];
    case PRECIS_UINT64: return (double)((const uint64_t *)p)[i];
    case PRECIS_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
    case PRECIS_FLOAT8E4M3FN: return pr_e4m3_to_f32(((const uint8_t *)p)[i]);
    default: return 0.0;
    }
}

/* Float -> integer conversion that never invokes undefined behaviour:
 * NaN gives 0, out-of-range values saturate. */
static int64_t sat_i64(double v, double lo, double hi) {
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void pr_store_f64(void *p, pr_dtype dt, int64_t i, double v) {
    switch (dt) {
    case PRECIS_FLOAT32: ((float *)p)[i] = (float)v; break;
    case PRECIS_FLOAT64: ((double *)p)[i] = v; break;
    case PRECIS_FLOAT16: ((uint16_t *)p)[i] = pr_f32_to_f16((float)v); break;
    case PRECIS_BFLOAT16: ((uint16_t *)p)[i] = pr_f32_to_bf16((float)v); break;
    case PRECIS_INT8: ((int8_t *)p)[i] = (int8_t)sat_i64(v, -128, 127); break;
    case PRECIS_UINT8: ((uint8_t *)p)[i] = (uint8_t)sat_i64(v, 0, 255); break;
    case PRECIS_INT16: ((int16_t *)p)[i] = (int16_t)sat_i64(v, -32768, 32767); break;
    case PRECIS_UINT16: ((uint16_t *)p)[i] = (uint16_t)sat_i64(v, 0, 65535); break;
    case PRECIS_INT32: ((int32_t *)p)[i] = (int32_t)sat_i64(v, -2147483648.0, 2147483647.0); break;
    case PRECIS_UINT32: ((uint32_t *)p)[i] = (uint32_t)sat_i64(v, 0, 4294967295.0); break;
    case PRECIS_INT64:
        ((int64_t *)p)[i] = sat_i64(v, -9223372036854775808.0, 9223372036854774784.0);
        break;
    case PRECIS_UINT64:
        ((uint64_t *)p)[i] = isnan(v) || v <= 0 ? 0 : v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
        break;
    case PRECIS_BOOL: ((uint8_t *)p)[i] = v != 0.0; break;
    case PRECIS_FLOAT8E4M3FN: ((uint8_t *)p)[i] = pr_f32_to_e4m3((float)v); break;
    default: break;
    }
}

int64_t pr_load_i64(const void *p, pr_dtype dt, int64_t i) {
    if (pr_dtype_info(dt)->is_int || dt == PRECIS_BOOL) return (int64_t)pr_load_u64(p, dt, i);
    return sat_i64(pr_load_f64(p, dt, i), -9223372036854775808.0, 9223372036854774784.0);
}
