/* Reference kernels of the 'linalg' family along one axis: Softmax,
 * LogSoftmax, Hardmax, CumSum, TopK.
 *
 * Softmax family: opset < 13 coerces the input to 2-D at `axis` (default 1)
 * and normalises each row of the flattened [prod(d[:axis]), prod(d[axis:])];
 * opset >= 13 normalises along the single dim `axis` (default -1). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "backends/ref/ref_linalg.h"

typedef enum smode { SM_SOFTMAX, SM_LOG, SM_HARD } smode;

/* Softmax over lines of length n with element stride `inner`, T = float or
 * double; exp/log in T's precision, sums in double. mx/s: scratch of
 * `inner` entries. */
#define DEFINE_SOFTMAX(T, SFX, EXP, LOG)                                                           \
    static void softmax_##SFX(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,           \
                              smode mode, T *mx, double *s, int64_t *bi) {                         \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *xb = x + o * n * inner;                                                       \
            T *yb = y + o * n * inner;                                                             \
            for (int64_t i = 0; i < inner; i++) {                                                  \
                mx[i] = xb[i];                                                                     \
                bi[i] = 0;                                                                         \
                s[i] = 0.0;                                                                        \
            }                                                                                      \
            for (int64_t j = 1; j < n; j++) {                                                      \
                const T *xr = xb + j * inner;                                                      \
                for (int64_t i = 0; i < inner; i++)                                                \
                    if (xr[i] > mx[i]) {                                                           \
                        mx[i] = xr[i];                                                             \
                        bi[i] = j;                                                                 \
                    }                                                                              \
            }                                                                                      \
            if (mode == SM_HARD) {                                                                 \
                for (int64_t j = 0; j < n; j++) {                                                  \
                    T *yr = yb + j * inner;                                                        \
                    for (int64_t i = 0; i < inner; i++) yr[i] = bi[i] == j ? (T)1 : (T)0;          \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t j = 0; j < n; j++) {                                                      \
                const T *xr = xb + j * inner;                                                      \
                T *yr = yb + j * inner;                                                            \
                for (int64_t i = 0; i < inner; i++) {                                              \
                    T e = EXP(xr[i] - mx[i]);                                                      \
                    yr[i] = e;                                                                     \
                    s[i] += e;                                                                     \
                }                                                                                  \
            }                                                                                      \
            if (mode == SM_SOFTMAX) {                                                              \
                for (int64_t j = 0; j < n; j++) {                                                  \
                    T *yr = yb + j * inner;                                                        \
                    for (int64_t i = 0; i < inner; i++) yr[i] = (T)(yr[i] / s[i]);                 \
                }                                                                                  \
            } else {                                                                               \
                for (int64_t i = 0; i < inner; i++) s[i] = LOG((T)s[i]);                           \
                for (int64_t j = 0; j < n; j++) {                                                  \
                    const T *xr = xb + j * inner;                                                  \
                    T *yr = yb + j * inner;                                                        \
                    for (int64_t i = 0; i < inner; i++) yr[i] = (T)((xr[i] - mx[i]) - s[i]);       \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_SOFTMAX(float, f32, expf, logf)
DEFINE_SOFTMAX(double, f64, exp, log)

static precis_status softmax(pr_kernel *k, smode mode) {
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const int r = X->rank;
    const bool old = k->node->opset < 13;
    const int64_t axis = pr_attr_int(k->node, "axis", old ? 1 : -1);
    int a = r; /* old opsets: axis == rank coerces to [numel, 1] */
    if (!(old && axis == r)) {
        precis_status st = pr_kernel_axis(k, axis, r, &a);
        if (st) return st;
    }
    int64_t outer = 1, n = 1, inner = 1;
    for (int d = 0; d < a; d++) outer *= X->dims[d];
    if (old) {
        for (int d = a; d < r; d++) n *= X->dims[d];
    } else {
        n = X->dims[a];
        for (int d = a + 1; d < r; d++) inner *= X->dims[d];
    }
    if (Y->dtype != X->dtype || Y->numel != X->numel)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output does not match the input");
    if (X->numel == 0) return PRECIS_OK;
    const pr_dtype dt = X->dtype;
    if (dt != PRECIS_FLOAT32 && dt != PRECIS_FLOAT64 && !pr_lin_is_half(dt))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported", pr_dtype_name(dt));
    const size_t es = dt == PRECIS_FLOAT64 ? sizeof(double) : sizeof(float);
    void *mx = pr_lin_alloc(inner, es);
    double *s = pr_lin_alloc(inner, sizeof(double));
    int64_t *bi = pr_lin_alloc(inner, sizeof(int64_t));
    float *xt = NULL, *yt = NULL;
    precis_status st = PRECIS_OK;
    if (!mx || !s || !bi) goto oom;
    if (dt == PRECIS_FLOAT32) {
        softmax_f32(X->data, Y->data, outer, n, inner, mode, mx, s, bi);
    } else if (dt == PRECIS_FLOAT64) {
        softmax_f64(X->data, Y->data, outer, n, inner, mode, mx, s, bi);
    } else {
        xt = pr_lin_alloc(X->numel, sizeof(float));
        yt = pr_lin_alloc(X->numel, sizeof(float));
        if (!xt || !yt) goto oom;
        pr_ref_to_f32(X->data, dt, X->numel, xt);
        softmax_f32(xt, yt, outer, n, inner, mode, mx, s, bi);
        pr_ref_from_f32(yt, X->numel, dt, Y->data);
    }
    goto done;
oom:
    st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
done:
    free(mx);
    free(s);
    free(bi);
    free(xt);
    free(yt);
    return st;
}

precis_status ref_Softmax(pr_kernel *k) { return softmax(k, SM_SOFTMAX); }
precis_status ref_LogSoftmax(pr_kernel *k) { return softmax(k, SM_LOG); }
precis_status ref_Hardmax(pr_kernel *k) { return softmax(k, SM_HARD); }

/* ------------------------------------------------------------ CumSum */

/* Scan lines of length n (element stride `inner`); acc: `inner` doubles. */
#define DEFINE_CUMSUM(T, SFX)                                                                      \
    static void cumsum_##SFX(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, bool excl, \
                             bool rev, double *acc) {                                              \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            for (int64_t i = 0; i < inner; i++) acc[i] = 0.0;                                      \
            for (int64_t jj = 0; jj < n; jj++) {                                                   \
                const int64_t j = rev ? n - 1 - jj : jj;                                           \
                const T *xr = x + (o * n + j) * inner;                                             \
                T *yr = y + (o * n + j) * inner;                                                   \
                if (excl) {                                                                        \
                    for (int64_t i = 0; i < inner; i++) {                                          \
                        yr[i] = (T)acc[i];                                                         \
                        acc[i] += xr[i];                                                           \
                    }                                                                              \
                } else {                                                                           \
                    for (int64_t i = 0; i < inner; i++) {                                          \
                        acc[i] += xr[i];                                                           \
                        yr[i] = (T)acc[i];                                                         \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_CUMSUM(float, f32)
DEFINE_CUMSUM(double, f64)

precis_status ref_CumSum(pr_kernel *k) {
    const pr_buf *X = k->in[0], *A = pr_kin(k, 1);
    pr_buf *Y = k->out[0];
    const int r = X->rank;
    if (!A || (A->dtype != PRECIS_INT32 && A->dtype != PRECIS_INT64) || A->numel != 1)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis must be an int32 or int64 scalar");
    int64_t axis = (int64_t)pr_load_u64(A->data, A->dtype, 0);
    int rr = r ? r : 1; /* a scalar scans as a single element */
    if (axis < -rr || axis >= rr)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis %lld out of range for rank %d",
                          (long long)axis, r);
    const int a = (int)(axis < 0 ? axis + rr : axis);
    const bool excl = pr_attr_int(k->node, "exclusive", 0) != 0;
    const bool rev = pr_attr_int(k->node, "reverse", 0) != 0;
    int64_t outer = 1, n = r ? X->dims[a] : 1, inner = 1;
    for (int d = 0; d < a && d < r; d++) outer *= X->dims[d];
    for (int d = a + 1; d < r; d++) inner *= X->dims[d];
    if (Y->dtype != X->dtype || Y->numel != X->numel)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output does not match the input");
    if (X->numel == 0) return PRECIS_OK;
    const pr_dtype dt = X->dtype;
    double *acc = pr_lin_alloc(inner, sizeof(double));
    float *xt = NULL, *yt = NULL;
    precis_status st = PRECIS_OK;
    if (!acc) goto oom;
    if (dt == PRECIS_FLOAT32) {
        cumsum_f32(X->data, Y->data, outer, n, inner, excl, rev, acc);
    } else if (dt == PRECIS_FLOAT64) {
        cumsum_f64(X->data, Y->data, outer, n, inner, excl, rev, acc);
    } else if (pr_lin_is_half(dt)) {
        xt = pr_lin_alloc(X->numel, sizeof(float));
        yt = pr_lin_alloc(X->numel, sizeof(float));
        if (!xt || !yt) goto oom;
        pr_ref_to_f32(X->data, dt, X->numel, xt);
        cumsum_f32(xt, yt, outer, n, inner, excl, rev, acc);
        pr_ref_from_f32(yt, X->numel, dt, Y->data);
    } else if (pr_dtype_info(dt)->is_int) {
        uint64_t *ia = (uint64_t *)acc; /* same size as double */
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t i = 0; i < inner; i++) ia[i] = 0;
            for (int64_t jj = 0; jj < n; jj++) {
                const int64_t j = rev ? n - 1 - jj : jj;
                for (int64_t i = 0; i < inner; i++) {
                    const int64_t e = (o * n + j) * inner + i;
                    const uint64_t v = pr_load_u64(X->data, dt, e);
                    if (excl) {
                        pr_store_u64_wrap(Y->data, dt, e, ia[i]);
                        ia[i] += v;
                    } else {
                        ia[i] += v;
                        pr_store_u64_wrap(Y->data, dt, e, ia[i]);
                    }
                }
            }
        }
    } else {
        st = pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported", pr_dtype_name(dt));
    }
    goto done;
oom:
    st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
done:
    free(acc);
    free(xt);
    free(yt);
    return st;
}

/* ------------------------------------------------------------ TopK */

typedef struct kv {
    uint64_t key; /* order-preserving: unsigned comparison gives the value order */
    int64_t idx;
} kv;

static int cmp_desc(const void *pa, const void *pb) {
    const kv *a = pa, *b = pb;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_asc(const void *pa, const void *pb) {
    const kv *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* NaN sorts above +inf (numpy); -0 equals +0. */
static uint64_t float_key(double d) {
    if (isnan(d)) return UINT64_MAX;
    if (d == 0.0) d = 0.0;
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return (b >> 63) ? ~b : b | 0x8000000000000000u;
}

precis_status ref_TopK(pr_kernel *k) {
    const pr_buf *X = k->in[0];
    pr_buf *V = k->out[0], *I = k->n_out > 1 ? k->out[1] : NULL;
    const int r = X->rank;
    int64_t kk;
    if (k->node->opset < 10) {
        kk = pr_attr_int(k->node, "k", -1);
    } else {
        const pr_buf *K = pr_kin(k, 1);
        if (!K || K->dtype != PRECIS_INT64 || K->numel != 1)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "K must be an int64 tensor of one element");
        kk = ((const int64_t *)K->data)[0];
    }
    int a;
    precis_status st = pr_kernel_axis(k, pr_attr_int(k->node, "axis", -1), r, &a);
    if (st) return st;
    const int64_t n = X->dims[a];
    if (kk < 0 || kk > n)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "k = %lld must be in [0, %lld] (size of axis %d)",
                          (long long)kk, (long long)n, a);
    const bool largest = pr_attr_int(k->node, "largest", 1) != 0;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; d++) outer *= X->dims[d];
    for (int d = a + 1; d < r; d++) inner *= X->dims[d];
    if (V->dtype != X->dtype || V->numel != outer * kk * inner ||
        (I && (I->dtype != PRECIS_INT64 || I->numel != V->numel)))
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "outputs do not match [.., k=%lld, ..]",
                          (long long)kk);
    const pr_dtype dt = X->dtype;
    const pr_dtype_traits *tr = pr_dtype_info(dt);
    if (!tr->is_float && !tr->is_int)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported", pr_dtype_name(dt));
    if (V->numel == 0) return PRECIS_OK;
    kv *line = pr_lin_alloc(n, sizeof(kv));
    if (!line) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const size_t es = pr_dtype_size(dt);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t base = o * n * inner + i;
            for (int64_t j = 0; j < n; j++) {
                const int64_t e = base + j * inner;
                uint64_t key;
                if (dt == PRECIS_FLOAT32) key = float_key(((const float *)X->data)[e]);
                else if (tr->is_float) key = float_key(pr_load_f64(X->data, dt, e));
                else key = pr_load_u64(X->data, dt, e) ^ (tr->is_signed ? 0x8000000000000000u : 0);
                line[j].key = key;
                line[j].idx = j;
            }
            qsort(line, (size_t)n, sizeof *line, largest ? cmp_desc : cmp_asc);
            const int64_t obase = o * kk * inner + i;
            for (int64_t j = 0; j < kk; j++) {
                const int64_t oe = obase + j * inner, ie = base + line[j].idx * inner;
                memcpy((char *)V->data + (size_t)oe * es, (const char *)X->data + (size_t)ie * es, es);
                if (I) ((int64_t *)I->data)[oe] = line[j].idx;
            }
        }
    free(line);
    return PRECIS_OK;
}
