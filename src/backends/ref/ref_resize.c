/* Reference kernels of Resize and Upsample.
 *
 * The parameters (output sizes, scales, roi, modes) come from
 * pr_resize_plan_make (src/ir/infer_resize.c). The arithmetic follows the
 * ONNX reference implementation: every axis is resized independently
 * (interpolation is separable), the source coordinate of output index x is
 * given by coordinate_transformation_mode with length_resized = scale *
 * length_original, neighbours outside the input are clamped to the edge
 * (or dropped with exclude_outside), and tf_crop_and_resize writes
 * extrapolation_value where any axis' coordinate falls outside the input.
 *
 * nearest: a byte gather through per-axis index tables (any dtype), output
 *          rows that repeat the previous row's source are memcpy'd.
 * linear / cubic (optionally antialiased): one pass per resized axis with
 *          per-output taps (indices + weights), in float for float32 /
 *          float16 / bfloat16 and in double otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref_tensor.h"

typedef struct axis_taps {
    bool active; /* false: identity axis, no pass */
    int64_t in, out;
    int n;        /* taps per output element */
    int64_t *idx; /* [out * n] clamped source indices; nearest: [out], -1 = extrapolate */
    double *w;    /* [out * n] */
    float *wf;    /* [out * n] */
    bool *extrap; /* [out] tf_crop_and_resize: coordinate outside the input */
    bool any_extrap;
} axis_taps;

static void taps_free(axis_taps *t, int r) {
    for (int d = 0; d < r; d++) {
        free(t[d].idx);
        free(t[d].w);
        free(t[d].wf);
        free(t[d].extrap);
    }
}

double pr_resize_coord(const pr_resize_plan *p, int d, double x, int64_t in, int64_t out_int) {
    double s = p->scale[d];
    double len_in = (double)in, len_out = s * len_in;
    switch (p->coord) {
    case PR_COORD_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case PR_COORD_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out_int / len_out, center = len_in / 2;
        double off = center * (1 - adj);
        return off + (x + 0.5) / s - 0.5;
    }
    case PR_COORD_PYTORCH_HALF_PIXEL: return len_out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case PR_COORD_ALIGN_CORNERS: return len_out == 1 ? 0.0 : x * (len_in - 1) / (len_out - 1);
    case PR_COORD_ASYMMETRIC: return x / s;
    case PR_COORD_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case PR_COORD_TF_CROP_AND_RESIZE: {
        double a = p->roi_start[d], b = p->roi_end[d], v;
        if (len_out == 1)
            v = (b - a) * (len_in - 1) / 2;
        else
            v = x * (b - a) * (len_in - 1) / (len_out - 1);
        return v + a * (len_in - 1);
    }
    default: return x / s;
    }
}

int64_t pr_resize_nearest(const pr_resize_plan *p, int d, double x, int64_t in) {
    double f = floor(x), v;
    switch (p->nearest) {
    case PR_NEAREST_ROUND_PREFER_FLOOR: v = x == f ? x : (x - f <= 0.5 ? f : f + 1); break;
    case PR_NEAREST_ROUND_PREFER_CEIL: v = x == f ? x : (x - f < 0.5 ? f : f + 1); break;
    case PR_NEAREST_FLOOR: v = f; break;
    case PR_NEAREST_CEIL: v = ceil(x); break;
    default: v = p->scale[d] < 1 ? ceil(x) : f; break; /* SIMPLE */
    }
    if (!(v > 0)) return 0; /* also NaN */
    if (v >= (double)(in - 1)) return in - 1;
    return (int64_t)v;
}

static double cubic_w(double x, double A) {
    x = fabs(x);
    if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

void pr_resize_coeffs(const pr_resize_plan *p, double ratio, double scale, int n, double *c) {
    double A = p->cubic_a;
    if (!p->antialias) {
        if (p->mode == PR_RESIZE_LINEAR) {
            c[0] = 1 - ratio;
            c[1] = ratio;
        } else {
            c[0] = ((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A;
            c[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
            c[2] = ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1;
            c[3] =
                ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) -
                4 * A;
        }
        return;
    }
    double sa = scale < 1 ? scale : 1, sum = 0;
    int start = 1 - n / 2;
    for (int i = 0; i < n; i++) {
        double arg = ((double)(start + i) - ratio) * sa;
        if (p->mode == PR_RESIZE_LINEAR) {
            double v = 1 - fabs(arg);
            c[i] = v < 0 ? 0 : v > 1 ? 1 : v;
        } else {
            c[i] = cubic_w(arg, A);
        }
        sum += c[i];
    }
    for (int i = 0; i < n; i++) c[i] /= sum;
}

/* Taps per output element of an interpolating axis. */
static int tap_count(const pr_resize_plan *p, double scale) {
    if (p->mode == PR_RESIZE_NEAREST) return 1;
    if (!p->antialias || scale >= 1) return p->mode == PR_RESIZE_LINEAR ? 2 : 4;
    double sa = scale;
    double lim = p->mode == PR_RESIZE_LINEAR ? 1.0 : 2.0;
    double st = floor(-lim / sa) + 1;
    if (st < -(1 << 20)) return -1;
    return (int)(2 - 2 * st);
}

static bool is_identity(const pr_resize_plan *p, int d, int64_t in) {
    if (p->out[d] != in) return false;
    if (fabs(p->scale[d] - 1.0) > 1e-9) return false;
    if (p->coord == PR_COORD_TF_CROP_AND_RESIZE &&
        (fabs(p->roi_start[d]) > 1e-9 || fabs(p->roi_end[d] - 1.0) > 1e-9))
        return false;
    return true;
}

static precis_status build_taps(pr_kernel *k, const pr_resize_plan *p, int d, int64_t in,
                                axis_taps *t) {
    memset(t, 0, sizeof *t);
    t->in = in;
    t->out = p->out[d];
    if (is_identity(p, d, in) || t->out == 0) return PRECIS_OK;
    if (in == 0) return pr_kernelf(k, PRECIS_ERR_SHAPE, "cannot resize empty axis %d", d);
    t->active = true;
    int n = tap_count(p, p->scale[d]);
    if (n < 1 || (uint64_t)n * (uint64_t)t->out > ((uint64_t)1 << 31))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "antialias filter for scale %g is too wide",
                          p->scale[d]);
    t->n = n;
    size_t cnt = (size_t)t->out * (size_t)n;
    t->idx = malloc(cnt * sizeof *t->idx);
    t->extrap = calloc((size_t)t->out, sizeof *t->extrap);
    if (p->mode != PR_RESIZE_NEAREST) {
        t->w = malloc(cnt * sizeof *t->w);
        t->wf = malloc(cnt * sizeof *t->wf);
    }
    if (!t->idx || !t->extrap || (p->mode != PR_RESIZE_NEAREST && (!t->w || !t->wf)))
        return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    double cbuf[8], *c = n <= 8 ? cbuf : malloc((size_t)n * sizeof *c);
    if (!c) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int64_t o = 0; o < t->out; o++) {
        double x = pr_resize_coord(p, d, (double)o, in, t->out);
        if (p->coord == PR_COORD_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1))) {
            t->extrap[o] = true;
            t->any_extrap = true;
        }
        if (p->mode == PR_RESIZE_NEAREST) {
            t->idx[o] = t->extrap[o] ? -1 : pr_resize_nearest(p, d, x, in);
            continue;
        }
        if (!isfinite(x)) x = 0;
        if (x > 4.0e18) x = 4.0e18;
        if (x < -4.0e18) x = -4.0e18;
        double xf = floor(x);
        bool integer = x == xf;
        double ratio = integer ? 1.0 : x - xf;
        int64_t start = (int64_t)xf + (integer ? -(n / 2) : -(n / 2) + 1);
        pr_resize_coeffs(p, ratio, p->scale[d], n, c);
        if (p->exclude_outside) {
            double sum = 0;
            for (int i = 0; i < n; i++) {
                int64_t j = start + i;
                if (j < 0 || j >= in) c[i] = 0;
                sum += c[i];
            }
            if (sum == 0) sum = 1;
            for (int i = 0; i < n; i++) c[i] /= sum;
        }
        for (int i = 0; i < n; i++) {
            int64_t j = start + i;
            j = j < 0 ? 0 : j >= in ? in - 1 : j;
            t->idx[o * n + i] = j;
            t->w[o * n + i] = c[i];
            t->wf[o * n + i] = (float)c[i];
        }
    }
    if (c != cbuf) free(c);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ nearest */

static void gather_row(unsigned char *d, const unsigned char *s, const int64_t *idx, int64_t n,
                       size_t es, const unsigned char *fill) {
    switch (es) {
#define G(T)                                                                                       \
    {                                                                                              \
        T *dd = (T *)(void *)d, fv;                                                                \
        const T *ss = (const T *)(const void *)s;                                                  \
        if (!fill) {                                                                               \
            for (int64_t j = 0; j < n; j++) dd[j] = ss[idx[j]];                                    \
            return;                                                                                \
        }                                                                                          \
        memcpy(&fv, fill, sizeof fv);                                                              \
        for (int64_t j = 0; j < n; j++) dd[j] = idx[j] >= 0 ? ss[idx[j]] : fv;                     \
        return;                                                                                    \
    }
    case 1: G(uint8_t)
    case 2: G(uint16_t)
    case 4: G(uint32_t)
    case 8: G(uint64_t)
#undef G
    default:
        for (int64_t j = 0; j < n; j++)
            memcpy(d + (size_t)j * es, idx[j] >= 0 ? s + (size_t)idx[j] * es : fill, es);
        /* fill is only read where idx < 0, which needs fill != NULL */
    }
}

static precis_status resize_nearest(pr_kernel *k, const pr_resize_plan *p, const pr_buf *x,
                                    pr_buf *y, axis_taps *t) {
    int r = x->rank;
    size_t es = pr_dtype_size(x->dtype);
    unsigned char fill[16] = {0};
    if (es <= sizeof fill) {
        double v = p->extrapolation;
        if (pr_dtype_info(x->dtype)->is_int) v = nearbyint(v);
        pr_store_f64(fill, x->dtype, 0, v);
    }
    if (r == 0) {
        memcpy(y->data, x->data, es);
        return PRECIS_OK;
    }
    int64_t xs[PR_MAX_RANK];
    pr_strides(r, x->dims, xs);
    int64_t m = y->dims[r - 1];
    int64_t *last = malloc((size_t)m * sizeof *last);
    if (!last) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int64_t j = 0; j < m; j++) last[j] = t[r - 1].active ? t[r - 1].idx[j] : j;
    int64_t rows = y->numel / m, c[PR_MAX_RANK] = {0}, prev_off = -2;
    size_t row = (size_t)m * es;
    unsigned char *d = y->data;
    const unsigned char *s = x->data;
    for (int64_t rw = 0; rw < rows; rw++, d += row) {
        int64_t off = 0;
        for (int a = 0; a < r - 1; a++) {
            int64_t i = t[a].active ? t[a].idx[c[a]] : c[a];
            if (i < 0) {
                off = -1;
                break;
            }
            off += i * xs[a];
        }
        if (off == prev_off) {
            memcpy(d, d - row, row);
        } else if (off < 0) {
            pr_fill_elems(d, fill, m, es);
        } else {
            gather_row(d, s + (size_t)off * es, last, m, es,
                       t[r - 1].active && t[r - 1].any_extrap ? fill : NULL);
        }
        prev_off = off;
        for (int a = r - 2; a >= 0; a--) {
            if (++c[a] < y->dims[a]) break;
            c[a] = 0;
        }
    }
    free(last);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ linear / cubic */

/* One separable pass: src [outer, n_in, inner] -> dst [outer, n_out, inner]. */
#define DEFINE_PASS(NAME, T, WF)                                                                   \
    static void NAME(const T *src, T *dst, int64_t outer, int64_t n_in, int64_t inner,             \
                     const axis_taps *t) {                                                         \
        int64_t n_out = t->out;                                                                    \
        int n = t->n;                                                                              \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *s = src + o * n_in * inner;                                                   \
            T *dd = dst + o * n_out * inner;                                                       \
            if (inner == 1 && n == 2) {                                                            \
                for (int64_t j = 0; j < n_out; j++)                                                \
                    dd[j] =                                                                        \
                        t->WF[2 * j] * s[t->idx[2 * j]] + t->WF[2 * j + 1] * s[t->idx[2 * j + 1]]; \
                continue;                                                                          \
            }                                                                                      \
            if (inner == 1) {                                                                      \
                for (int64_t j = 0; j < n_out; j++) {                                              \
                    const int64_t *ix = t->idx + j * n;                                            \
                    const T *w = t->WF + j * n;                                                    \
                    T acc = 0;                                                                     \
                    for (int q = 0; q < n; q++) acc += w[q] * s[ix[q]];                            \
                    dd[j] = acc;                                                                   \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t j = 0; j < n_out; j++) {                                                  \
                const int64_t *ix = t->idx + j * n;                                                \
                const T *w = t->WF + j * n;                                                        \
                T *drow = dd + j * inner;                                                          \
                const T *s0 = s + ix[0] * inner;                                                   \
                T w0 = w[0];                                                                       \
                if (n == 2) {                                                                      \
                    const T *s1 = s + ix[1] * inner;                                               \
                    T w1 = w[1];                                                                   \
                    for (int64_t i = 0; i < inner; i++) drow[i] = w0 * s0[i] + w1 * s1[i];         \
                    continue;                                                                      \
                }                                                                                  \
                for (int64_t i = 0; i < inner; i++) drow[i] = w0 * s0[i];                          \
                for (int q = 1; q < n; q++) {                                                      \
                    const T *sq = s + ix[q] * inner;                                               \
                    T wq = w[q];                                                                   \
                    if (wq == 0) continue;                                                         \
                    for (int64_t i = 0; i < inner; i++) drow[i] += wq * sq[i];                     \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_PASS(pass_f32, float, wf)
DEFINE_PASS(pass_f64, double, w)
#undef DEFINE_PASS

/* Row kernels (restrict lets the compiler vectorise them at -O2). */
static void row_lerp(float *restrict d, const float *restrict a, const float *restrict b, float wa,
                     float wb, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = wa * a[i] + wb * b[i];
}
static void row_scale(float *restrict d, const float *restrict a, float w, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] = w * a[i];
}
static void row_axpy(float *restrict d, const float *restrict a, float w, int64_t n) {
    for (int64_t i = 0; i < n; i++) d[i] += w * a[i];
}

/* Interpolation of one row: out[j] = sum_q w[j*n+q] * row[idx[j*n+q]]. */
static void interp_row_f32(const float *row, float *out, const axis_taps *t) {
    const int64_t *ix = t->idx;
    const float *w = t->wf;
    int n = t->n;
    if (n == 2) {
        for (int64_t j = 0; j < t->out; j++)
            out[j] = w[2 * j] * row[ix[2 * j]] + w[2 * j + 1] * row[ix[2 * j + 1]];
        return;
    }
    for (int64_t j = 0; j < t->out; j++) {
        float acc = 0;
        for (int q = 0; q < n; q++) acc += w[j * n + q] * row[ix[j * n + q]];
        out[j] = acc;
    }
}

/* float32 with only the last two axes resized (the common image case): one
 * output row at a time, the vertical taps combined into a row buffer, then
 * the horizontal taps; no full-size intermediate. */
static precis_status resize_2d_f32(pr_kernel *k, const pr_buf *x, pr_buf *y, const axis_taps *th,
                                   const axis_taps *tw) {
    int r = x->rank;
    int64_t H = x->dims[r - 2], W = x->dims[r - 1], Ho = y->dims[r - 2], Wo = y->dims[r - 1];
    int64_t planes = (H > 0 && W > 0) ? x->numel / (H * W) : 0;
    float *tmp = malloc((size_t)(W ? W : 1) * sizeof *tmp);
    if (!tmp) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const float *xd = x->data;
    float *yd = y->data;
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = xd + pl * H * W;
        float *yp = yd + pl * Ho * Wo;
        for (int64_t oy = 0; oy < Ho; oy++) {
            const float *row = xp + oy * W;
            if (th->active) {
                int n = th->n;
                const int64_t *ix = th->idx + oy * n;
                const float *w = th->wf + oy * n;
                const float *r0 = xp + ix[0] * W;
                float w0 = w[0];
                if (n == 2) {
                    row_lerp(tmp, r0, xp + ix[1] * W, w0, w[1], W);
                } else {
                    row_scale(tmp, r0, w0, W);
                    for (int q = 1; q < n; q++)
                        if (w[q] != 0) row_axpy(tmp, xp + ix[q] * W, w[q], W);
                }
                row = tmp;
            }
            float *out = yp + oy * Wo;
            if (tw->active)
                interp_row_f32(row, out, tw);
            else
                memcpy(out, row, (size_t)Wo * sizeof *out);
        }
    }
    free(tmp);
    return PRECIS_OK;
}

static precis_status resize_interp(pr_kernel *k, const pr_resize_plan *p, const pr_buf *x,
                                   pr_buf *y, axis_taps *t) {
    int r = x->rank;
    pr_dtype dt = x->dtype;
    bool use_f32 = dt == PRECIS_FLOAT32 || dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16;
    pr_dtype wdt = use_f32 ? PRECIS_FLOAT32 : PRECIS_FLOAT64;
    size_t ws = use_f32 ? sizeof(float) : sizeof(double);
    /* passes, the shrinking ones first */
    int order[PR_MAX_RANK], np = 0;
    for (int d = 0; d < r; d++)
        if (t[d].active) order[np++] = d;
    for (int i = 1; i < np; i++)
        for (int j = i; j > 0; j--) {
            int a = order[j - 1], b = order[j];
            if ((double)t[b].out / (double)t[b].in < (double)t[a].out / (double)t[a].in) {
                order[j - 1] = b;
                order[j] = a;
            } else {
                break;
            }
        }
    if (np == 0) {
        memcpy(y->data, x->data, y->nbytes);
        return PRECIS_OK;
    }
    bool last2 = dt == PRECIS_FLOAT32 && r >= 2;
    for (int i = 0; i < np; i++) last2 = last2 && order[i] >= r - 2;
    if (last2) return resize_2d_f32(k, x, y, &t[r - 2], &t[r - 1]);
    /* intermediate sizes */
    int64_t cur[PR_MAX_RANK], maxn = 0;
    memcpy(cur, x->dims, (size_t)r * sizeof *cur);
    if (dt != wdt) maxn = x->numel;
    for (int i = 0; i < np; i++) {
        cur[order[i]] = t[order[i]].out;
        if (i < np - 1 || dt != wdt) {
            int64_t nn = pr_numel(r, cur);
            if (nn > maxn) maxn = nn;
        }
    }
    void *buf[2] = {NULL, NULL};
    if (maxn > 0) {
        for (int b = 0; b < 2; b++) {
            buf[b] = malloc((size_t)maxn * ws);
            if (!buf[b]) {
                free(buf[0]);
                return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory (%lld-element work buffer)",
                                  (long long)maxn);
            }
        }
    }
    const void *src = x->data;
    int which = 0;
    if (dt != wdt) {
        if (use_f32) {
            float *f = buf[0];
            for (int64_t i = 0; i < x->numel; i++) f[i] = (float)pr_load_f64(x->data, dt, i);
        } else {
            double *f = buf[0];
            for (int64_t i = 0; i < x->numel; i++) f[i] = pr_load_f64(x->data, dt, i);
        }
        src = buf[0];
        which = 1;
    }
    memcpy(cur, x->dims, (size_t)r * sizeof *cur);
    for (int i = 0; i < np; i++) {
        int d = order[i];
        bool last = i == np - 1;
        void *dst = last && dt == wdt ? y->data : buf[which];
        int64_t outer = 1, inner = 1;
        for (int a = 0; a < d; a++) outer *= cur[a];
        for (int a = d + 1; a < r; a++) inner *= cur[a];
        if (use_f32)
            pass_f32(src, dst, outer, cur[d], inner, &t[d]);
        else
            pass_f64(src, dst, outer, cur[d], inner, &t[d]);
        cur[d] = t[d].out;
        src = dst;
        which ^= 1;
    }
    if (src != y->data) {
        bool is_int = pr_dtype_info(dt)->is_int;
        for (int64_t i = 0; i < y->numel; i++) {
            double v = use_f32 ? (double)((const float *)src)[i] : ((const double *)src)[i];
            if (is_int) v = nearbyint(v);
            pr_store_f64(y->data, dt, i, v);
        }
    }
    free(buf[0]);
    free(buf[1]);
    return PRECIS_OK;
}

/* tf_crop_and_resize: extrapolation_value where any axis is outside. */
static void apply_extrapolation(const pr_resize_plan *p, pr_buf *y, const axis_taps *t) {
    int r = y->rank;
    bool any = false;
    for (int d = 0; d < r; d++) any = any || (t[d].active && t[d].any_extrap);
    if (!any || y->numel == 0) return;
    size_t es = pr_dtype_size(y->dtype);
    unsigned char fill[16] = {0};
    if (es > sizeof fill) return;
    double v = p->extrapolation;
    if (pr_dtype_info(y->dtype)->is_int) v = nearbyint(v);
    pr_store_f64(fill, y->dtype, 0, v);
    int64_t c[PR_MAX_RANK] = {0};
    unsigned char *d = y->data;
    for (int64_t i = 0; i < y->numel; i++) {
        bool out = false;
        for (int a = 0; a < r && !out; a++) out = t[a].active && t[a].extrap[c[a]];
        if (out) memcpy(d + (size_t)i * es, fill, es);
        for (int a = r - 1; a >= 0; a--) {
            if (++c[a] < y->dims[a]) break;
            c[a] = 0;
        }
    }
}

static precis_status resize_run(pr_kernel *k) {
    if (!pr_kin(k, 0) || k->n_out < 1 || !k->out[0])
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output missing");
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    pr_kic c;
    pr_kic_init(&c, k);
    pr_resize_plan p;
    bool known;
    precis_status st = pr_resize_plan_make(&c.ic, &p, &known);
    if (st) return st;
    if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "resize parameters not known");
    int r = x->rank;
    if (y->rank != r || y->dtype != x->dtype)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output does not match the input");
    for (int d = 0; d < r; d++)
        if (y->dims[d] != p.out[d])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output dim %d is %lld, plan says %lld", d,
                              (long long)y->dims[d], (long long)p.out[d]);
    if (y->numel == 0) return PRECIS_OK;
    axis_taps t[PR_MAX_RANK];
    memset(t, 0, sizeof t);
    for (int d = 0; d < r; d++)
        if ((st = build_taps(k, &p, d, x->dims[d], &t[d]))) goto done;
    if (p.mode == PR_RESIZE_NEAREST) {
        st = resize_nearest(k, &p, x, y, t);
    } else {
        st = resize_interp(k, &p, x, y, t);
        if (!st && p.coord == PR_COORD_TF_CROP_AND_RESIZE) apply_extrapolation(&p, y, t);
    }
done:
    taps_free(t, r);
    return st;
}

precis_status ref_Resize(pr_kernel *k) { return resize_run(k); }
precis_status ref_Upsample(pr_kernel *k) { return resize_run(k); }
