/* The pool impl's int8/uint8 kernels (k_pool.h; the impl, its float pools
 * and the dispatch are in k_pool.c). See k_pool.c's top for what they do. */
#define PR_KN_INTERNAL
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_norm.h"
#include "backends/cpu/k_pool.h"
#include "backends/cpu/vec.h"
#include "backends/ref/ref_conv.h"

/* ------------------------------------------------------------ int8 max */

/* Bytes in the unsigned order: v ^ flip (flip 0x80 for int8, 0 for uint8);
 * the identity (padding) is 0. */

static void kq_row_scalar(const uint8_t *xp, uint8_t *yrow, uint8_t flip, const kp_geom *g,
                          int64_t oy, uint8_t *rb) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    uint8_t *r = rb + g->pl;
    memset(r, 0, (size_t)g->W);
    for (int64_t ky = y0; ky < y1; ky++) {
        const uint8_t *xr = xp + (offy + ky * g->dh) * g->W;
        for (int64_t i = 0; i < g->W; i++) {
            const uint8_t v = xr[i] ^ flip;
            r[i] = v > r[i] ? v : r[i];
        }
    }
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        const uint8_t *w = rb + ox * g->sw;
        uint8_t a = 0;
        for (int64_t kx = 0; kx < g->kw; kx++) a = w[kx * g->dw] > a ? w[kx * g->dw] : a;
        yrow[ox] = a ^ flip;
    }
}

static void kq_nhwc_row_scalar(const uint8_t *xn, uint8_t *yrow, uint8_t flip, const kp_geom *g,
                               int64_t C, int64_t oy, uint8_t *acc) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        memset(acc, 0, (size_t)C);
        for (int64_t ky = y0; ky < y1; ky++)
            for (int64_t kx = x0; kx < x1; kx++) {
                const uint8_t *xs = xn + ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C;
                for (int64_t c = 0; c < C; c++) {
                    const uint8_t v = xs[c] ^ flip;
                    acc[c] = v > acc[c] ? v : acc[c];
                }
            }
        for (int64_t c = 0; c < C; c++) yrow[ox * C + c] = acc[c] ^ flip;
    }
}

KN_AVX512 static inline __mmask64 kq_tail(int64_t n) {
    return n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
}

/* rb: L + 64 bytes of slack past the padded row (stride-1 vector reads) */
KN_AVX512 static void kq_row_512(const uint8_t *xp, uint8_t *yrow, uint8_t flip, const kp_geom *g,
                                 int64_t oy, uint8_t *rb) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const __m512i fl = _mm512_set1_epi8((char)flip);
    uint8_t *r = rb + g->pl;
    for (int64_t i = 0; i < g->W; i += 64) {
        const __mmask64 m = kq_tail(g->W - i);
        __m512i a = _mm512_setzero_si512();
        for (int64_t ky = y0; ky < y1; ky++) {
            __m512i v = _mm512_maskz_loadu_epi8(m, xp + (offy + ky * g->dh) * g->W + i);
            a = _mm512_max_epu8(a, _mm512_xor_si512(v, fl));
        }
        _mm512_mask_storeu_epi8(r + i, m, a);
    }
    if (g->sw != 1) {
        for (int64_t ox = 0; ox < g->Wo; ox++) {
            const uint8_t *w = rb + ox * g->sw;
            uint8_t a = 0;
            for (int64_t kx = 0; kx < g->kw; kx++) a = w[kx * g->dw] > a ? w[kx * g->dw] : a;
            yrow[ox] = a ^ flip;
        }
        return;
    }
    for (int64_t ox = 0; ox < g->Wo; ox += 64) {
        const __mmask64 m = kq_tail(g->Wo - ox);
        __m512i a = _mm512_setzero_si512();
        for (int64_t kx = 0; kx < g->kw; kx++)
            a = _mm512_max_epu8(a, _mm512_loadu_si512((const void *)(rb + ox + kx * g->dw)));
        _mm512_mask_storeu_epi8(yrow + ox, m, _mm512_xor_si512(a, fl));
    }
}

KN_AVX512 static void kq_nhwc_row_512(const uint8_t *xn, uint8_t *yrow, uint8_t flip,
                                      const kp_geom *g, int64_t C, int64_t oy) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const __m512i fl = _mm512_set1_epi8((char)flip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        for (int64_t c = 0; c < C; c += 64) {
            const __mmask64 m = kq_tail(C - c);
            __m512i a = _mm512_setzero_si512();
            for (int64_t ky = y0; ky < y1; ky++)
                for (int64_t kx = x0; kx < x1; kx++) {
                    const int64_t o = ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C + c;
                    __m512i v = _mm512_maskz_loadu_epi8(m, xn + o);
                    a = _mm512_max_epu8(a, _mm512_xor_si512(v, fl));
                }
            _mm512_mask_storeu_epi8(yrow + ox * C + c, m, _mm512_xor_si512(a, fl));
        }
    }
}

/* Output row q % Ho of image q / Ho (NHWC max pooling). */
static void kq_max_task(const uint8_t *xd, uint8_t *yd, uint8_t flip, const kp_geom *g, int64_t C,
                        int64_t q, bool v512, uint8_t *acc) {
    const int64_t n = q / g->Ho, oy = q % g->Ho;
    const uint8_t *xn = xd + n * g->H * g->W * C;
    uint8_t *yrow = yd + (n * g->Ho + oy) * g->Wo * C;
    if (v512)
        kq_nhwc_row_512(xn, yrow, flip, g, C, oy);
    else
        kq_nhwc_row_scalar(xn, yrow, flip, g, C, oy, acc);
}

precis_status pr_kq_maxpool(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                                pr_buf *Y, kp_geom *g) {
    const int64_t N = X->dims[0], C = X->dims[1];
    const uint8_t flip = X->dtype == PRECIS_INT8 ? 0x80 : 0;
    const uint8_t *xd = X->data;
    uint8_t *yd = Y->data;
    const bool v512 = s->v512;
    const int64_t work = Y->numel * g->kh * g->kw + X->numel;
    if (s->nhwc) {
        const int64_t tasks = N * g->Ho;
        const int nt = kn_threads(x->num_threads, work, tasks);
        const size_t per = (size_t)((C + 63) & ~(int64_t)63);
        uint8_t *acc = NULL;
        if (!v512 && !(acc = pr_cpu_scratch(x, (size_t)nt * per)))
            return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
            for (int64_t q = 0; q < tasks; q++) kq_max_task(xd, yd, flip, g, C, q, v512, acc);
            return PRECIS_OK;
        }
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++)
            kq_max_task(xd, yd, flip, g, C, q, v512,
                        acc ? acc + (size_t)omp_get_thread_num() * per : NULL);
        return PRECIS_OK;
    }
    int64_t L = g->pl + g->W + g->pr, need = (g->Wo - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    if (need > L) L = need;
    const size_t per = (size_t)((L + 64 + 63) & ~(int64_t)63);
    const int64_t tasks = N * C * g->Ho;
    const int nt = kn_threads(x->num_threads, work, tasks);
    uint8_t *scr = pr_cpu_scratch(x, (size_t)nt * per);
    if (!scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
#pragma omp parallel num_threads(nt)
    {
        uint8_t *rb = scr + (size_t)omp_get_thread_num() * per;
        memset(rb, 0, per); /* the pads stay identity */
#pragma omp for schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t pl = q / g->Ho, oy = q % g->Ho;
            const uint8_t *xp = xd + pl * g->H * g->W;
            uint8_t *yrow = yd + (pl * g->Ho + oy) * g->Wo;
            if (v512)
                kq_row_512(xp, yrow, flip, g, oy, rb);
            else
                kq_row_scalar(xp, yrow, flip, g, oy, rb);
        }
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ int8 average (QPool) */

/* QPool: R = pool(xs * X), Y = R (float32) or saturate(round(R * inv)).
 * Sums of the bytes are exact integers; R = xs * sum / count in double
 * (windows: sum * (xs / count)), rounded to float (the ref sums the real
 * values in float, so R may differ in its last bits and a requantized Y by
 * one unit near halves). */
static inline void kq_put(void *y, pr_dtype ydt, int64_t i, float r, float inv) {
    if (ydt == PRECIS_FLOAT32)
        ((float *)y)[i] = r;
    else if (ydt == PRECIS_UINT8)
        ((uint8_t *)y)[i] = (uint8_t)ps_q8_round(r * inv, 0.0f, 255.0f);
    else
        ((int8_t *)y)[i] = (int8_t)ps_q8_round(r * inv, -128.0f, 127.0f);
}

/* Sum of n bytes (int8 when flip is 0x80, else uint8). */
static int64_t kq_sum_scalar(const uint8_t *x, int64_t n, uint8_t flip) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) s += flip ? (int64_t)(int8_t)x[i] : (int64_t)x[i];
    return s;
}

KN_AVX512 static int64_t kq_sum_512(const uint8_t *x, int64_t n, uint8_t flip) {
    const __m512i fl = _mm512_set1_epi8((char)flip), z = _mm512_setzero_si512();
    __m512i acc = z;
    for (int64_t i = 0; i < n; i += 64) {
        const __mmask64 m = kq_tail(n - i);
        const __m512i b = _mm512_maskz_loadu_epi8(m, x + i);
        const __m512i v = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(b, fl));
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, z)); /* 8 sums of 8 bytes */
    }
    const int64_t s = _mm512_reduce_add_epi64(acc);
    return flip ? s - 128 * n : s; /* int8 x = (x ^ 0x80) - 128 */
}

/* NHWC: acc[c] += x[p * C + c] over P pixels, int32 (C padded to 64 in acc). */
static void kq_acc_scalar(const uint8_t *x, int64_t P, int64_t C, bool s8, int32_t *acc) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t c = 0; c < C; c++)
            acc[c] += s8 ? (int32_t)(int8_t)x[p * C + c] : (int32_t)x[p * C + c];
}

/* acc[c..c+64) += pixel rows, 64 channels at a time (acc padded to 64).
 * The bytes are summed in 16-bit lanes over runs of up to 256 pixels (256 *
 * -128 and 256 * 127 fit int16, 256 * 255 fits uint16: exact) and widened
 * into the int32 sums after each run: per 64 bytes two widening loads and
 * two adds instead of four extracts, four widenings and four adds. */
#define KQ_RUN16 256
KN_AVX512 static inline __m512i kq_w16(const uint8_t *p, __mmask32 m, bool s8) {
    const __m256i v = _mm256_maskz_loadu_epi8(m, p);
    return s8 ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}
KN_AVX512 static inline __m512i kq_w32(__m256i h, bool s8) {
    return s8 ? _mm512_cvtepi16_epi32(h) : _mm512_cvtepu16_epi32(h);
}
KN_AVX512 static void kq_acc_512(const uint8_t *x, int64_t P, int64_t C, bool s8, int32_t *acc) {
    for (int64_t c = 0; c < C; c += 64) {
        const __mmask64 m = kq_tail(C - c);
        const __mmask32 m0 = (__mmask32)m, m1 = (__mmask32)(m >> 32);
        __m512i a0 = _mm512_loadu_si512((const void *)(acc + c));
        __m512i a1 = _mm512_loadu_si512((const void *)(acc + c + 16));
        __m512i a2 = _mm512_loadu_si512((const void *)(acc + c + 32));
        __m512i a3 = _mm512_loadu_si512((const void *)(acc + c + 48));
        for (int64_t p0 = 0; p0 < P; p0 += KQ_RUN16) {
            const int64_t p1 = P - p0 < KQ_RUN16 ? P : p0 + KQ_RUN16;
            __m512i h0 = _mm512_setzero_si512(), h1 = _mm512_setzero_si512();
            if (m1)
                for (int64_t p = p0; p < p1; p++) {
                    h0 = _mm512_add_epi16(h0, kq_w16(x + p * C + c, m0, s8));
                    h1 = _mm512_add_epi16(h1, kq_w16(x + p * C + c + 32, m1, s8));
                }
            else /* a tail of <= 32 channels */
                for (int64_t p = p0; p < p1; p++)
                    h0 = _mm512_add_epi16(h0, kq_w16(x + p * C + c, m0, s8));
            a0 = _mm512_add_epi32(a0, kq_w32(_mm512_castsi512_si256(h0), s8));
            a1 = _mm512_add_epi32(a1, kq_w32(_mm512_extracti64x4_epi64(h0, 1), s8));
            a2 = _mm512_add_epi32(a2, kq_w32(_mm512_castsi512_si256(h1), s8));
            a3 = _mm512_add_epi32(a3, kq_w32(_mm512_extracti64x4_epi64(h1, 1), s8));
        }
        _mm512_storeu_si512((void *)(acc + c), a0);
        _mm512_storeu_si512((void *)(acc + c + 16), a1);
        _mm512_storeu_si512((void *)(acc + c + 32), a2);
        _mm512_storeu_si512((void *)(acc + c + 48), a3);
    }
}

/* kq_put of n int32 sums as (float)(xs * sum / P) in double, the scalar
 * path's operations in its order (IEEE: the same results), at y + i. */
KN_AVX512 static void kq_put_div_512(void *y, pr_dtype ydt, int64_t i, const int32_t *sum,
                                     int64_t n, double xs, int64_t P, float inv) {
    const __m512d x8 = _mm512_set1_pd(xs), p8 = _mm512_set1_pd((double)P);
    const bool u8 = ydt == PRECIS_UINT8;
    const __m512 vi = _mm512_set1_ps(inv), lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f),
                 hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : kn_tail(n - c);
        const __m512i a = _mm512_maskz_loadu_epi32(m, sum + c);
        const __m256 r0 = _mm512_cvtpd_ps(_mm512_div_pd(
            _mm512_mul_pd(x8, _mm512_cvtepi32_pd(_mm512_castsi512_si256(a))), p8));
        const __m256 r1 = _mm512_cvtpd_ps(_mm512_div_pd(
            _mm512_mul_pd(x8, _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1))), p8));
        const __m512 r = _mm512_insertf32x8(_mm512_castps256_ps512(r0), r1, 1);
        if (ydt == PRECIS_FLOAT32)
            _mm512_mask_storeu_ps((float *)y + i + c, m, r);
        else
            pv_q8_store_m(y, i + c, pv_q8_round(_mm512_mul_ps(r, vi), lo, hi), m);
    }
}

static inline size_t kq_pad64(int64_t n) { return (size_t)((n + 63) & ~(int64_t)63); }

precis_status pr_kq_global_avg(const kp_state *s, pr_kernel *k, pr_cpu_exec *x,
                                   const pr_buf *X, pr_buf *Y) {
    if (X->rank < 3) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 3");
    const int64_t N = X->dims[0], C = X->dims[1], planes = N * C;
    if (Y->numel != planes) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Y size mismatch");
    if (planes == 0) return PRECIS_OK;
    const int64_t P = X->numel / planes;
    const uint8_t flip = X->dtype == PRECIS_INT8 ? 0x80 : 0;
    const uint8_t *xd = X->data;
    const double xs = s->xs;
    if (!s->nhwc) {
        const int nt = kn_threads(x->num_threads, X->numel, planes);
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t pl = 0; pl < planes; pl++) {
            const uint8_t *xp = xd + pl * P;
            const int64_t sum = s->v512 ? kq_sum_512(xp, P, flip) : kq_sum_scalar(xp, P, flip);
            kq_put(Y->data, Y->dtype, pl, P > 0 ? (float)(xs * (double)sum / (double)P) : 0.0f,
                   s->inv);
        }
        return PRECIS_OK;
    }
    if (X->rank != 4) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "NHWC input must have rank 4");
    /* chunks of pixels summed per channel in parallel, then combined */
    const int64_t nch = P > 0 ? (P + KN_NHWC_CHUNK - 1) / KN_NHWC_CHUNK : 1, tasks = N * nch;
    const size_t Cp = kq_pad64(C);
    int32_t *part = pr_cpu_scratch(x, (size_t)tasks * Cp * sizeof(int32_t));
    if (!part) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const int nt = kn_threads(x->num_threads, X->numel, tasks);
#define KQ_GAP_TASK(q)                                                                             \
    do {                                                                                           \
        const int64_t n = (q) / nch, p0 = ((q) % nch) * KN_NHWC_CHUNK;                             \
        const int64_t np = P - p0 < KN_NHWC_CHUNK ? P - p0 : KN_NHWC_CHUNK;                        \
        int32_t *acc = part + (size_t)(q) * Cp;                                                    \
        memset(acc, 0, Cp * sizeof *acc);                                                          \
        if (np <= 0) break;                                                                        \
        const uint8_t *xs8 = xd + (n * P + p0) * C;                                                \
        if (s->v512)                                                                               \
            kq_acc_512(xs8, np, C, flip != 0, acc);                                                \
        else                                                                                       \
            kq_acc_scalar(xs8, np, C, flip != 0, acc);                                             \
    } while (0)
    if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        for (int64_t q = 0; q < tasks; q++) KQ_GAP_TASK(q);
    } else {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++) KQ_GAP_TASK(q);
    }
#undef KQ_GAP_TASK
    for (int64_t n = 0; n < N; n++) {
        if (s->v512 && nch == 1 && P > 0) { /* one chunk: the sums are final */
            kq_put_div_512(Y->data, Y->dtype, n * C, part + (size_t)n * Cp, C, xs, P, s->inv);
            continue;
        }
        for (int64_t c = 0; c < C; c++) {
            int64_t sum = 0;
            for (int64_t ch = 0; ch < nch; ch++) sum += part[(size_t)(n * nch + ch) * Cp + c];
            kq_put(Y->data, Y->dtype, n * C + c,
                   P > 0 ? (float)(xs * (double)sum / (double)P) : 0.0f, s->inv);
        }
    }
    return PRECIS_OK;
}

/* kq_put of n int32 sums times f (R = (float)(sum * f), in double as the
 * scalar path) at y + i. */
KN_AVX512 static void kq_put_512(void *y, pr_dtype ydt, int64_t i, const int32_t *sum, int64_t n,
                                 double f, float inv) {
    const __m512d f8 = _mm512_set1_pd(f);
    const bool u8 = ydt == PRECIS_UINT8;
    const __m512 vi = _mm512_set1_ps(inv), lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f),
                 hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : kn_tail(n - c);
        const __m512i a = _mm512_maskz_loadu_epi32(m, sum + c);
        const __m256 r0 = _mm512_cvtpd_ps(_mm512_mul_pd(
            _mm512_cvtepi32_pd(_mm512_castsi512_si256(a)), f8));
        const __m256 r1 = _mm512_cvtpd_ps(_mm512_mul_pd(
            _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1)), f8));
        const __m512 r = _mm512_insertf32x8(_mm512_castps256_ps512(r0), r1, 1);
        if (ydt == PRECIS_FLOAT32)
            _mm512_mask_storeu_ps((float *)y + i + c, m, r);
        else
            pv_q8_store_m(y, i + c, pv_q8_round(_mm512_mul_ps(r, vi), lo, hi), m);
    }
}

/* Window sums, NHWC: one output row, every pixel's valid taps summed per
 * channel (acc: C padded to 64 int32). */
static void kq_avg_nhwc_row(const kp_state *s, const uint8_t *xn, void *y, pr_dtype ydt,
                            const kp_geom *g, int64_t C, int64_t oy, bool s8, int32_t *acc) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const int64_t cy = kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, s->cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        memset(acc, 0, kq_pad64(C) * sizeof *acc);
        for (int64_t ky = y0; ky < y1; ky++)
            for (int64_t kx = x0; kx < x1; kx++) {
                const uint8_t *px = xn + ((offy + ky * g->dh) * g->W + offx + kx * g->dw) * C;
                if (s->v512)
                    kq_acc_512(px, 1, C, s8, acc);
                else
                    kq_acc_scalar(px, 1, C, s8, acc);
            }
        const double cnt =
            (double)cy * (double)kp_count(ox, g->sw, g->pl, g->pr, g->dw, g->W, g->kw, s->cip);
        const double f = cnt > 0 ? (double)s->xs / cnt : 0.0;
        const int64_t o = (oy * g->Wo + ox) * C;
        if (s->v512) {
            kq_put_512(y, ydt, o, acc, C, f, s->inv);
        } else {
            for (int64_t c = 0; c < C; c++) kq_put(y, ydt, o + c, (float)(acc[c] * f), s->inv);
        }
    }
}

/* Plain: one output row of one plane, taps summed one by one. */
static void kq_avg_row(const kp_state *s, const uint8_t *xp, void *y, pr_dtype ydt,
                       const kp_geom *g, int64_t oy, bool s8) {
    int64_t y0, y1;
    const int64_t offy = oy * g->sh - g->pt;
    rc_valid_range(offy, g->dh, g->H, g->kh, &y0, &y1);
    const int64_t cy = kp_count(oy, g->sh, g->pt, g->pb, g->dh, g->H, g->kh, s->cip);
    for (int64_t ox = 0; ox < g->Wo; ox++) {
        int64_t x0, x1;
        const int64_t offx = ox * g->sw - g->pl;
        rc_valid_range(offx, g->dw, g->W, g->kw, &x0, &x1);
        int32_t sum = 0;
        for (int64_t ky = y0; ky < y1; ky++) {
            const uint8_t *r = xp + (offy + ky * g->dh) * g->W + offx;
            for (int64_t kx = x0; kx < x1; kx++)
                sum += s8 ? (int32_t)(int8_t)r[kx * g->dw] : (int32_t)r[kx * g->dw];
        }
        const double cnt =
            (double)cy * (double)kp_count(ox, g->sw, g->pl, g->pr, g->dw, g->W, g->kw, s->cip);
        kq_put(y, ydt, oy * g->Wo + ox, (float)(sum * (cnt > 0 ? (double)s->xs / cnt : 0.0)),
               s->inv);
    }
}

precis_status pr_kq_avgpool(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                                pr_buf *Y, const kp_geom *g) {
    const int64_t N = X->dims[0], C = X->dims[1];
    const bool s8 = X->dtype == PRECIS_INT8;
    const uint8_t *xd = X->data;
    unsigned char *yd = Y->data;
    const size_t ye = pr_dtype_size(Y->dtype);
    const int64_t work = Y->numel * g->kh * g->kw + X->numel;
    if (s->nhwc) {
        const int64_t tasks = N * g->Ho;
        const int nt = kn_threads(x->num_threads, work, tasks);
        const size_t per = kq_pad64(C);
        int32_t *acc = pr_cpu_scratch(x, (size_t)nt * per * sizeof(int32_t));
        if (!acc) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t n = q / g->Ho, oy = q % g->Ho;
            kq_avg_nhwc_row(s, xd + n * g->H * g->W * C, yd + (size_t)(n * g->Ho * g->Wo * C) * ye,
                            Y->dtype, g, C, oy, s8, acc + (size_t)omp_get_thread_num() * per);
        }
        return PRECIS_OK;
    }
    const int64_t tasks = N * C * g->Ho;
    const int nt = kn_threads(x->num_threads, work, tasks);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) {
        const int64_t pl = q / g->Ho, oy = q % g->Ho;
        kq_avg_row(s, xd + pl * g->H * g->W, yd + (size_t)(pl * g->Ho * g->Wo) * ye, Y->dtype, g,
                   oy, s8);
    }
    return PRECIS_OK;
}

