/* Reference kernels for the 'elem' family, part 2: Cast, CastLike, Identity,
 * Dropout, QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
 *
 * Cast semantics (no UB for any value):
 *   float -> float      correctly rounded, to nearest even; to float16 and
 *                       bfloat16 from float64 or integers through a
 *                       round-to-odd float so the result is rounded once;
 *   float -> integer    truncation toward zero, saturating; NaN gives 0;
 *   integer -> integer  modular (two's complement wraparound), as numpy;
 *   anything -> bool    x != 0 (NaN is true).
 * Quantization rounds half to even and saturates to the output type.
 */
#include <math.h>
#include <string.h>

#include "backends/ref/ref.h"

static void copy_bytes(void *dst, const void *src, size_t n) {
    if (n && dst != src) memcpy(dst, src, n);
}

/* ------------------------------------------------------------------- Cast */

/* Round-to-odd float: truncate toward zero and set the last bit when
 * inexact. A later rounding to float16/bfloat16 (>= 2 fewer bits) is then
 * the correctly rounded result of the original value. */
static float f32_odd_from_f64(double d) {
    float f = (float)d;
    if (!isfinite(f) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    uint32_t b;
    memcpy(&b, &f, 4);
    b |= 1;
    memcpy(&f, &b, 4);
    return f;
}

static float f32_odd_from_u64(uint64_t u) {
    int sh = 0;
    uint64_t m = u;
    while (m >= (UINT64_C(1) << 24)) {
        m >>= 1;
        sh++;
    }
    if (sh && (u & ((UINT64_C(1) << sh) - 1))) m |= 1;
    return ldexpf((float)m, sh);
}

static float f32_odd(const void *p, pr_dtype dt, int64_t i) {
    switch (dt) {
    case PRECIS_FLOAT32: return ((const float *)p)[i];
    case PRECIS_FLOAT64: return f32_odd_from_f64(((const double *)p)[i]);
    case PRECIS_FLOAT16: return pr_f16_to_f32(((const uint16_t *)p)[i]);
    case PRECIS_BFLOAT16: return pr_bf16_to_f32(((const uint16_t *)p)[i]);
    case PRECIS_UINT64: return f32_odd_from_u64(((const uint64_t *)p)[i]);
    default: {
        int64_t v = pr_load_i64(p, dt, i);
        float f = f32_odd_from_u64(v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
        return v < 0 ? -f : f;
    }
    }
}

/* Float -> integer: truncate toward zero, saturate, NaN -> 0 (exact bounds
 * for the 64-bit types, whose limits are not doubles). */
static void store_f2i(void *p, pr_dtype dt, int64_t i, double v) {
    if (dt == PRECIS_INT64)
        ((int64_t *)p)[i] = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN
                                                                                 : (int64_t)v;
    else if (dt == PRECIS_UINT64)
        ((uint64_t *)p)[i] = isnan(v) || v <= 0 ? 0 : v >= 0x1p64 ? UINT64_MAX : (uint64_t)v;
    else
        pr_store_f64(p, dt, i, v); /* saturating to the narrower types */
}

static void cast_elems(const void *src, pr_dtype sd, void *dst, pr_dtype dd, int64_t n) {
    const pr_dtype_traits *si = pr_dtype_info(sd), *di = pr_dtype_info(dd);
    if (sd == dd) {
        copy_bytes(dst, src, (size_t)n * si->size);
        return;
    }
    if (sd == PRECIS_FLOAT32) { /* fast paths */
        const float *s = src;
        uint16_t *h = dst;
        switch (dd) {
        case PRECIS_FLOAT16:
            for (int64_t i = 0; i < n; i++) h[i] = pr_f32_to_f16(s[i]);
            return;
        case PRECIS_BFLOAT16:
            for (int64_t i = 0; i < n; i++) h[i] = pr_f32_to_bf16(s[i]);
            return;
        case PRECIS_FLOAT64:
            for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = s[i];
            return;
        default: break;
        }
    }
    if (dd == PRECIS_FLOAT32) {
        float *d = dst;
        const uint16_t *h = src;
        switch (sd) {
        case PRECIS_FLOAT16:
            for (int64_t i = 0; i < n; i++) d[i] = pr_f16_to_f32(h[i]);
            return;
        case PRECIS_BFLOAT16:
            for (int64_t i = 0; i < n; i++) d[i] = pr_bf16_to_f32(h[i]);
            return;
        case PRECIS_FLOAT64:
            for (int64_t i = 0; i < n; i++) d[i] = (float)((const double *)src)[i];
            return;
        case PRECIS_INT64: /* directly: int64 -> double -> float could round twice */
            for (int64_t i = 0; i < n; i++) d[i] = (float)((const int64_t *)src)[i];
            return;
        case PRECIS_UINT64:
            for (int64_t i = 0; i < n; i++) d[i] = (float)((const uint64_t *)src)[i];
            return;
        default: break;
        }
    }
    if (dd == PRECIS_BOOL) {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++)
            d[i] = si->is_float ? pr_load_f64(src, sd, i) != 0 : pr_load_i64(src, sd, i) != 0;
    } else if (di->is_int && !si->is_float) {
        for (int64_t i = 0; i < n; i++)
            pr_store_u64_wrap(dst, dd, i, pr_load_u64(src, sd, i));
    } else if (dd == PRECIS_FLOAT16 || dd == PRECIS_BFLOAT16) {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) {
            float f = f32_odd(src, sd, i);
            d[i] = dd == PRECIS_FLOAT16 ? pr_f32_to_f16(f) : pr_f32_to_bf16(f);
        }
    } else if (di->is_int) { /* from a float type */
        for (int64_t i = 0; i < n; i++) store_f2i(dst, dd, i, pr_load_f64(src, sd, i));
    } else { /* to float32/float64: exact or rounded once */
        for (int64_t i = 0; i < n; i++) pr_store_f64(dst, dd, i, pr_load_f64(src, sd, i));
    }
}

static precis_status cast_to_out(pr_kernel *k) {
    const pr_buf *x = pr_kin(k, 0);
    pr_buf *y = k->out[0];
    if (!pr_dtype_size(x->dtype) || !pr_dtype_size(y->dtype))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "cast from %s to %s is not supported",
                          pr_dtype_name(x->dtype), pr_dtype_name(y->dtype));
    cast_elems(x->data, x->dtype, y->data, y->dtype, x->numel);
    return PRECIS_OK;
}

precis_status ref_Cast(pr_kernel *k) { return cast_to_out(k); }
precis_status ref_CastLike(pr_kernel *k) { return cast_to_out(k); }

precis_status ref_Identity(pr_kernel *k) {
    copy_bytes(k->out[0]->data, k->in[0]->data, k->in[0]->nbytes);
    return PRECIS_OK;
}

precis_status ref_Dropout(pr_kernel *k) {
    const pr_buf *x = pr_kin(k, 0), *r = pr_kin(k, 1), *t = pr_kin(k, 2);
    if (k->node->opset >= 12 && t && t->numel > 0 && ((const uint8_t *)t->data)[0]) {
        double ratio = r && r->numel > 0 ? pr_load_f64(r->data, r->dtype, 0) : 0.5;
        if (ratio != 0)
            return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED,
                              "training_mode=true with ratio %g drops elements at random; "
                              "precis runs inference only",
                              ratio);
    }
    copy_bytes(k->out[0]->data, x->data, x->nbytes);
    pr_buf *m = k->n_out > 1 ? k->out[1] : NULL;
    if (m && m->dtype == PRECIS_BOOL) {
        if (m->nbytes) memset(m->data, 1, m->nbytes);
    } else if (m) { /* opset < 10: the mask has the input's type */
        for (int64_t i = 0; i < m->numel; i++) pr_store_f64(m->data, m->dtype, i, 1.0);
    }
    return PRECIS_OK;
}

/* ----------------------------------------------------------- quantization */

static float ld_float(const pr_buf *b, int64_t i) {
    return b->dtype == PRECIS_FLOAT32 ? ((const float *)b->data)[i]
                                      : (float)pr_load_f64(b->data, b->dtype, i);
}

/* x viewed as [outer, ch, inner] with one (scale, zero point) per ch. */
static precis_status qlayout(pr_kernel *k, const pr_buf *x, const pr_buf *s, const pr_buf *z,
                             int64_t *outer, int64_t *ch, int64_t *inner) {
    *outer = 1;
    *ch = 1;
    *inner = x->numel;
    if (z && z->numel != s->numel)
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG,
                          "zero point has %lld elements but scale has %lld", (long long)z->numel,
                          (long long)s->numel);
    if (s->numel == 1) return PRECIS_OK;
    int64_t axis = pr_attr_int(k->node, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (s->rank != 1 || axis < 0 || axis >= x->rank || x->dims[axis] != s->numel)
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG,
                          "scale of %lld elements does not match input axis %lld",
                          (long long)s->numel, (long long)axis);
    for (int d = 0; d < axis; d++) *outer *= x->dims[d];
    *ch = x->dims[axis];
    *inner = *ch ? x->numel / (*outer * *ch) : 0;
    return PRECIS_OK;
}

static void qrange(pr_dtype dt, float *lo, float *hi) {
    switch (dt) {
    case PRECIS_INT8: *lo = -128.0f, *hi = 127.0f; break;
    case PRECIS_UINT16: *lo = 0.0f, *hi = 65535.0f; break;
    case PRECIS_INT16: *lo = -32768.0f, *hi = 32767.0f; break;
    default: *lo = 0.0f, *hi = 255.0f; break;
    }
}

/* round(v) + zp saturated to [lo, hi]; NaN gives zp. */
static inline float qround(float v, float zp, float lo, float hi) {
    if (isnan(v)) return zp;
    v = nearbyintf(v) + zp;
    return v < lo ? lo : v > hi ? hi : v;
}

#define QUANT_LOOP(T)                                                                              \
    do {                                                                                           \
        T *q = (T *)y->data + base;                                                                \
        if (xf)                                                                                    \
            for (int64_t i = 0; i < inner; i++) q[i] = (T)qround(xf[base + i] / sc, zp, lo, hi);  \
        else                                                                                       \
            for (int64_t i = 0; i < inner; i++)                                                    \
                q[i] = (T)qround((float)(pr_load_f64(x->data, x->dtype, base + i) / sc), zp, lo,  \
                                 hi);                                                              \
    } while (0)

void pr_ref_quant_e4m3(const void *x, pr_dtype xdt, int64_t n, float s, uint8_t *q) {
    for (int64_t i = 0; i < n; i++) q[i] = pr_f32_to_e4m3((float)pr_load_f64(x, xdt, i) / s + 0.0f);
}

precis_status ref_QuantizeLinear(pr_kernel *k) {
    const pr_buf *x = pr_kin(k, 0), *s = pr_kin(k, 1), *z = pr_kin(k, 2);
    pr_buf *y = k->out[0];
    int64_t outer, ch, inner;
    precis_status st = qlayout(k, x, s, z, &outer, &ch, &inner);
    if (st) return st;
    float lo, hi;
    qrange(y->dtype, &lo, &hi);
    const float *xf = x->dtype == PRECIS_FLOAT32 ? x->data : NULL;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < ch; c++) {
            int64_t base = (o * ch + c) * inner;
            float sc = ld_float(s, c), zp = z ? (float)pr_load_i64(z->data, z->dtype, c) : 0.0f;
            switch (y->dtype) {
            case PRECIS_UINT8: QUANT_LOOP(uint8_t); break;
            case PRECIS_INT8: QUANT_LOOP(int8_t); break;
            case PRECIS_UINT16: QUANT_LOOP(uint16_t); break;
            case PRECIS_INT16: QUANT_LOOP(int16_t); break;
            case PRECIS_FLOAT8E4M3FN: { /* saturate=1: round to nearest even, clamp to +-448 */
                uint8_t *q = (uint8_t *)y->data + base;
                for (int64_t i = 0; i < inner; i++)
                    q[i] = pr_f32_to_e4m3((float)pr_load_f64(x->data, x->dtype, base + i) / sc + zp);
                break;
            }
            default: return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "output dtype %s",
                                       pr_dtype_name(y->dtype));
            }
        }
    }
    return PRECIS_OK;
}

#define DEQUANT_LOOP(T)                                                                            \
    do {                                                                                           \
        const T *q = (const T *)x->data + base;                                                    \
        if (yf)                                                                                    \
            for (int64_t i = 0; i < inner; i++) yf[base + i] = ((float)q[i] - zp) * sc;            \
        else                                                                                       \
            for (int64_t i = 0; i < inner; i++)                                                    \
                pr_store_f64(y->data, y->dtype, base + i, ((float)q[i] - zp) * sc);                \
    } while (0)

precis_status ref_DequantizeLinear(pr_kernel *k) {
    const pr_buf *x = pr_kin(k, 0), *s = pr_kin(k, 1), *z = pr_kin(k, 2);
    pr_buf *y = k->out[0];
    int64_t outer, ch, inner;
    precis_status st = qlayout(k, x, s, z, &outer, &ch, &inner);
    if (st) return st;
    float *yf = y->dtype == PRECIS_FLOAT32 ? y->data : NULL;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t c = 0; c < ch; c++) {
            int64_t base = (o * ch + c) * inner;
            float sc = ld_float(s, c), zp = z ? (float)pr_load_i64(z->data, z->dtype, c) : 0.0f;
            switch (x->dtype) {
            case PRECIS_UINT8: DEQUANT_LOOP(uint8_t); break;
            case PRECIS_INT8: DEQUANT_LOOP(int8_t); break;
            case PRECIS_UINT16: DEQUANT_LOOP(uint16_t); break;
            case PRECIS_INT16: DEQUANT_LOOP(int16_t); break;
            case PRECIS_INT32: DEQUANT_LOOP(int32_t); break;
            case PRECIS_FLOAT8E4M3FN: {
                const uint8_t *q = (const uint8_t *)x->data + base;
                for (int64_t i = 0; i < inner; i++)
                    pr_store_f64(y->data, y->dtype, base + i, (pr_e4m3_to_f32(q[i]) - zp) * sc);
                break;
            }
            default: return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "input dtype %s",
                                       pr_dtype_name(x->dtype));
            }
        }
    }
    return PRECIS_OK;
}

/* uint8, per tensor: the range [min(x, 0), max(x, 0)] maps onto [0, 255]
 * (ONNX's reference: scale 1/255 when the range is empty). */
precis_status ref_DynamicQuantizeLinear(pr_kernel *k) {
    const pr_buf *x = pr_kin(k, 0);
    pr_buf *y = k->out[0], *ys = k->n_out > 1 ? k->out[1] : NULL,
           *yz = k->n_out > 2 ? k->out[2] : NULL;
    const float *xf = x->data;
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = 0; i < x->numel; i++) {
        mn = xf[i] < mn ? xf[i] : mn;
        mx = xf[i] > mx ? xf[i] : mx;
    }
    float sc = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    float zp = nearbyintf(fminf(fmaxf(0.0f - mn / sc, 0.0f), 255.0f));
    uint8_t *q = y->data;
    for (int64_t i = 0; i < x->numel; i++) q[i] = (uint8_t)qround(xf[i] / sc, zp, 0.0f, 255.0f);
    if (ys) *(float *)ys->data = sc;
    if (yz) *(uint8_t *)yz->data = (uint8_t)zp;
    return PRECIS_OK;
}
