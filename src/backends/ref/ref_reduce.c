/* Reference kernels for the reductions of the 'linalg' family: Reduce*
 * (Mean, Sum, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare) and
 * ArgMax / ArgMin.
 *
 * A reduction is planned once: size-1 dims are dropped and neighbouring dims
 * of the same kind (reduced / kept) merged, so the common cases become
 * [rows, reduced run] or [reduced, kept run] with a contiguous inner loop.
 * Float types accumulate in double; integers in 64-bit (sums and products
 * wrap like numpy's). A reduction over an empty set gives the identity
 * (0, 1, -inf/+inf or the type's min/max, NaN for the mean). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "backends/ref/ref_linalg.h"
#include "ir/linalg.h"

typedef enum rkind {
    R_SUM,
    R_MEAN,
    R_MAX,
    R_MIN,
    R_PROD,
    R_L1,
    R_L2,
    R_LOGSUM,
    R_LSE,
    R_SUMSQ,
    R_MAXFIN /* max over finite values (LogSumExp's shift) */
} rkind;

typedef struct rplan {
    int n;                      /* collapsed dims (>= 1) */
    int64_t dim[PR_MAX_RANK];
    bool red[PR_MAX_RANK];
    int64_t ostr[PR_MAX_RANK];  /* output stride, 0 for reduced dims */
    int64_t out_numel, count;   /* outputs; inputs per output */
} rplan;

static void make_plan(const pr_buf *x, const bool *mask, rplan *p) {
    p->n = 0;
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 1) continue;
        if (p->n > 0 && p->red[p->n - 1] == mask[d]) {
            p->dim[p->n - 1] *= x->dims[d];
        } else {
            p->dim[p->n] = x->dims[d];
            p->red[p->n] = mask[d];
            p->n++;
        }
    }
    if (p->n == 0) {
        p->dim[0] = 1;
        p->red[0] = false;
        p->n = 1;
    }
    int64_t s = 1;
    p->count = 1;
    for (int i = p->n - 1; i >= 0; i--) {
        if (p->red[i]) {
            p->ostr[i] = 0;
            p->count *= p->dim[i];
        } else {
            p->ostr[i] = s;
            s *= p->dim[i];
        }
    }
    p->out_numel = s;
}

/* Axes of a Reduce* node into mask; *noop when nothing is reduced. */
static precis_status reduce_mask(pr_kernel *k, int r, bool *mask) {
    const pr_node *n = k->node;
    int64_t axes[PR_MAX_RANK];
    int na = -1;
    bool noop_empty = false, noop;
    if (pr_reduce_axes_from_input(n, n->op)) {
        noop_empty = pr_attr_int(n, "noop_with_empty_axes", 0) != 0;
        const pr_buf *a = pr_kin(k, 1);
        if (a) {
            if (a->dtype != PRECIS_INT64 || a->numel > PR_MAX_RANK)
                return pr_kernelf(k, PRECIS_ERR_SHAPE, "axes must be int64 with at most %d values",
                                  PR_MAX_RANK);
            na = (int)a->numel;
            if (na) memcpy(axes, a->data, (size_t)na * sizeof *axes);
        }
    } else {
        const int64_t *p;
        na = pr_attr_ints(n, "axes", &p);
        if (na > PR_MAX_RANK)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "%d axes, at most %d supported", na, PR_MAX_RANK);
        if (na > 0) memcpy(axes, p, (size_t)na * sizeof *axes);
    }
    char msg[128];
    if (pr_reduce_mask(axes, na, r, noop_empty, mask, &noop, msg, sizeof msg))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "%s", msg);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ float passes */

static double ident_f(rkind kind) {
    switch (kind) {
    case R_PROD: return 1.0;
    case R_MAX:
    case R_MAXFIN: return -INFINITY;
    case R_MIN: return INFINITY;
    default: return 0.0;
    }
}

/* One pass over x (T = float or double) accumulating into acc[out_numel]
 * (initialised by the caller). shift: per-output shift for R_LSE. */
#define DEFINE_REDUCE_PASS(T, SFX)                                                                 \
    static void reduce_pass_##SFX(const T *x, const rplan *p, rkind kind, double *acc,             \
                                  const double *shift) {                                           \
        const int last = p->n - 1;                                                                 \
        const int64_t inner = p->dim[last];                                                        \
        const bool inner_red = p->red[last];                                                       \
        int64_t total = 1;                                                                         \
        for (int i = 0; i < p->n; i++) total *= p->dim[i];                                         \
        const int64_t rows = inner ? total / inner : 0;                                            \
        int64_t idx[PR_MAX_RANK] = {0}, ooff = 0;                                                  \
        for (int64_t row = 0; row < rows; row++) {                                                 \
            const T *xr = x + row * inner;                                                         \
            double *a = acc + ooff;                                                                \
            if (inner_red) {                                                                       \
                double s0 = 0, s1 = 0, s2 = 0, s3 = 0, m = a[0];                                   \
                int64_t j = 0;                                                                     \
                switch (kind) {                                                                    \
                case R_SUM:                                                                        \
                case R_MEAN:                                                                       \
                case R_LOGSUM:                                                                     \
                    for (; j + 4 <= inner; j += 4) {                                               \
                        s0 += xr[j];                                                               \
                        s1 += xr[j + 1];                                                           \
                        s2 += xr[j + 2];                                                           \
                        s3 += xr[j + 3];                                                           \
                    }                                                                              \
                    for (; j < inner; j++) s0 += xr[j];                                            \
                    a[0] += (s0 + s1) + (s2 + s3);                                                 \
                    break;                                                                         \
                case R_SUMSQ:                                                                      \
                case R_L2:                                                                         \
                    for (; j + 4 <= inner; j += 4) {                                               \
                        s0 += (double)xr[j] * xr[j];                                               \
                        s1 += (double)xr[j + 1] * xr[j + 1];                                       \
                        s2 += (double)xr[j + 2] * xr[j + 2];                                       \
                        s3 += (double)xr[j + 3] * xr[j + 3];                                       \
                    }                                                                              \
                    for (; j < inner; j++) s0 += (double)xr[j] * xr[j];                            \
                    a[0] += (s0 + s1) + (s2 + s3);                                                 \
                    break;                                                                         \
                case R_L1:                                                                         \
                    for (; j < inner; j++) s0 += fabs((double)xr[j]);                              \
                    a[0] += s0;                                                                    \
                    break;                                                                         \
                case R_PROD:                                                                       \
                    for (; j < inner; j++) m *= xr[j];                                             \
                    a[0] = m;                                                                      \
                    break;                                                                         \
                case R_MAX:                                                                        \
                    for (; j < inner; j++)                                                         \
                        if (xr[j] > m || isnan(xr[j])) m = xr[j];                                  \
                    a[0] = m;                                                                      \
                    break;                                                                         \
                case R_MIN:                                                                        \
                    for (; j < inner; j++)                                                         \
                        if (xr[j] < m || isnan(xr[j])) m = xr[j];                                  \
                    a[0] = m;                                                                      \
                    break;                                                                         \
                case R_MAXFIN:                                                                     \
                    for (; j < inner; j++)                                                         \
                        if (xr[j] > m && isfinite(xr[j])) m = xr[j];                               \
                    a[0] = m;                                                                      \
                    break;                                                                         \
                case R_LSE: {                                                                      \
                    const double sh = shift[ooff];                                                 \
                    for (; j < inner; j++) s0 += exp((double)xr[j] - sh);                          \
                    a[0] += s0;                                                                    \
                    break;                                                                         \
                }                                                                                  \
                }                                                                                  \
            } else {                                                                               \
                switch (kind) {                                                                    \
                case R_SUM:                                                                        \
                case R_MEAN:                                                                       \
                case R_LOGSUM:                                                                     \
                    for (int64_t j = 0; j < inner; j++) a[j] += xr[j];                             \
                    break;                                                                         \
                case R_SUMSQ:                                                                      \
                case R_L2:                                                                         \
                    for (int64_t j = 0; j < inner; j++) a[j] += (double)xr[j] * xr[j];             \
                    break;                                                                         \
                case R_L1:                                                                         \
                    for (int64_t j = 0; j < inner; j++) a[j] += fabs((double)xr[j]);               \
                    break;                                                                         \
                case R_PROD:                                                                       \
                    for (int64_t j = 0; j < inner; j++) a[j] *= xr[j];                             \
                    break;                                                                         \
                case R_MAX:                                                                        \
                    for (int64_t j = 0; j < inner; j++)                                            \
                        if (xr[j] > a[j] || isnan(xr[j])) a[j] = xr[j];                            \
                    break;                                                                         \
                case R_MIN:                                                                        \
                    for (int64_t j = 0; j < inner; j++)                                            \
                        if (xr[j] < a[j] || isnan(xr[j])) a[j] = xr[j];                            \
                    break;                                                                         \
                case R_MAXFIN:                                                                     \
                    for (int64_t j = 0; j < inner; j++)                                            \
                        if (xr[j] > a[j] && isfinite(xr[j])) a[j] = xr[j];                         \
                    break;                                                                         \
                case R_LSE:                                                                        \
                    for (int64_t j = 0; j < inner; j++) a[j] += exp((double)xr[j] - shift[ooff + j]); \
                    break;                                                                         \
                }                                                                                  \
            }                                                                                      \
            for (int d = last - 1; d >= 0; d--) {                                                  \
                ooff += p->ostr[d];                                                                \
                if (++idx[d] < p->dim[d]) break;                                                   \
                ooff -= p->ostr[d] * p->dim[d];                                                    \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_REDUCE_PASS(float, f32)
DEFINE_REDUCE_PASS(double, f64)

/* Reduce float data (float32 or float64 in x; `dbl` says which) into
 * res[out_numel] as doubles. */
static precis_status reduce_float(pr_kernel *k, const void *x, bool dbl, const rplan *p,
                                  rkind kind, double *res) {
    double *shift = NULL;
    if (kind == R_LSE) {
        shift = pr_lin_alloc(p->out_numel, sizeof(double));
        if (!shift) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        for (int64_t i = 0; i < p->out_numel; i++) shift[i] = -INFINITY;
        if (dbl) reduce_pass_f64(x, p, R_MAXFIN, shift, NULL);
        else reduce_pass_f32(x, p, R_MAXFIN, shift, NULL);
        for (int64_t i = 0; i < p->out_numel; i++)
            if (!isfinite(shift[i])) shift[i] = 0.0;
    }
    const double id = ident_f(kind);
    for (int64_t i = 0; i < p->out_numel; i++) res[i] = id;
    if (dbl) reduce_pass_f64(x, p, kind, res, shift);
    else reduce_pass_f32(x, p, kind, res, shift);
    const double cnt = (double)p->count;
    for (int64_t i = 0; i < p->out_numel; i++) {
        switch (kind) {
        case R_MEAN: res[i] = res[i] / cnt; break;
        case R_L2: res[i] = sqrt(res[i]); break;
        case R_LOGSUM: res[i] = log(res[i]); break;
        case R_LSE: res[i] = log(res[i]) + shift[i]; break;
        default: break;
        }
    }
    free(shift);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ integer pass */

/* Order-preserving unsigned key of an integer value (see core/dtype.h's
 * pr_load_u64 for the loading). */
static uint64_t int_key(uint64_t v, bool is_signed) {
    return is_signed ? v ^ 0x8000000000000000u : v;
}

/* Smallest / largest value of an integer type, as loaded by pr_load_u64. */
static void int_bounds(pr_dtype dt, uint64_t *lo, uint64_t *hi) {
    int bits = dt == PRECIS_BOOL ? 1 : (int)pr_dtype_size(dt) * 8;
    if (dt == PRECIS_BOOL || !pr_dtype_info(dt)->is_signed) {
        *lo = 0;
        *hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    } else {
        *hi = ((uint64_t)1 << (bits - 1)) - 1;
        *lo = ~*hi; /* two's complement of -(2^(bits-1)) */
    }
}

static precis_status reduce_int(pr_kernel *k, const pr_buf *X, const rplan *p, rkind kind,
                                pr_buf *Y) {
    const pr_dtype dt = X->dtype;
    const bool sgn = pr_dtype_info(dt)->is_signed;
    uint64_t *acc = pr_lin_alloc(p->out_numel, sizeof(uint64_t));
    if (!acc) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    uint64_t lo, hi;
    int_bounds(dt, &lo, &hi);
    uint64_t id = kind == R_PROD ? 1 : kind == R_MAX ? lo : kind == R_MIN ? hi : 0;
    for (int64_t i = 0; i < p->out_numel; i++) acc[i] = id;
    const int last = p->n - 1;
    const int64_t inner = p->dim[last], istr = p->ostr[last];
    const int64_t rows = inner ? X->numel / inner : 0;
    int64_t idx[PR_MAX_RANK] = {0}, ooff = 0;
    for (int64_t row = 0; row < rows; row++) {
        for (int64_t j = 0; j < inner; j++) {
            uint64_t v = pr_load_u64(X->data, dt, row * inner + j);
            uint64_t *a = acc + ooff + j * istr;
            switch (kind) {
            case R_SUM:
            case R_MEAN:
            case R_LOGSUM: *a += v; break;
            case R_SUMSQ:
            case R_L2: *a += v * v; break;
            case R_L1: *a += (sgn && (v >> 63)) ? 0 - v : v; break;
            case R_PROD: *a *= v; break;
            case R_MAX:
                if (int_key(v, sgn) > int_key(*a, sgn)) *a = v;
                break;
            case R_MIN:
                if (int_key(v, sgn) < int_key(*a, sgn)) *a = v;
                break;
            default: break;
            }
        }
        for (int d = last - 1; d >= 0; d--) {
            ooff += p->ostr[d];
            if (++idx[d] < p->dim[d]) break;
            ooff -= p->ostr[d] * p->dim[d];
            idx[d] = 0;
        }
    }
    for (int64_t i = 0; i < p->out_numel; i++) {
        double s = sgn ? (double)(int64_t)acc[i] : (double)acc[i];
        switch (kind) {
        case R_MEAN: pr_store_f64(Y->data, Y->dtype, i, s / (double)p->count); break;
        case R_L2: pr_store_f64(Y->data, Y->dtype, i, sqrt(s)); break;
        case R_LOGSUM: pr_store_f64(Y->data, Y->dtype, i, log(s)); break;
        default: pr_store_u64_wrap(Y->data, Y->dtype, i, acc[i]); break;
        }
    }
    free(acc);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ driver */

static precis_status reduce(pr_kernel *k, rkind kind) {
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    bool mask[PR_MAX_RANK];
    precis_status st = reduce_mask(k, X->rank, mask);
    if (st) return st;
    rplan p;
    make_plan(X, mask, &p);
    if (p.out_numel != Y->numel || Y->dtype != X->dtype)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output has %lld elements of %s, expected %lld of %s",
                          (long long)Y->numel, pr_dtype_name(Y->dtype), (long long)p.out_numel,
                          pr_dtype_name(X->dtype));
    const pr_dtype dt = X->dtype;
    const pr_dtype_traits *tr = pr_dtype_info(dt);
    if (!tr->is_float && !tr->is_int && dt != PRECIS_BOOL)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported", pr_dtype_name(dt));
    if (dt == PRECIS_BOOL && kind != R_MAX && kind != R_MIN)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "bool input is only supported by ReduceMax/Min");
    if (!tr->is_float && kind != R_LSE) return reduce_int(k, X, &p, kind, Y);
    /* float types (and integers for LogSumExp) in float32 or float64 */
    double *res = pr_lin_alloc(p.out_numel, sizeof(double));
    void *tmp = NULL;
    const void *x = X->data;
    bool dbl = dt == PRECIS_FLOAT64;
    if (!res) goto oom;
    if (pr_lin_is_half(dt)) {
        if (!(tmp = pr_lin_alloc(X->numel, sizeof(float)))) goto oom;
        pr_ref_to_f32(X->data, dt, X->numel, tmp);
        x = tmp;
    } else if (!tr->is_float) {
        if (!(tmp = pr_lin_alloc(X->numel, sizeof(double)))) goto oom;
        for (int64_t i = 0; i < X->numel; i++) ((double *)tmp)[i] = pr_load_f64(X->data, dt, i);
        x = tmp;
        dbl = true;
    }
    st = reduce_float(k, x, dbl, &p, kind, res);
    if (!st) {
        if (dt == PRECIS_FLOAT32) {
            float *y = Y->data;
            for (int64_t i = 0; i < p.out_numel; i++) y[i] = (float)res[i];
        } else if (dt == PRECIS_FLOAT64) {
            memcpy(Y->data, res, (size_t)p.out_numel * sizeof(double));
        } else {
            for (int64_t i = 0; i < p.out_numel; i++) pr_store_f64(Y->data, dt, i, res[i]);
        }
    }
    free(res);
    free(tmp);
    return st;
oom:
    free(res);
    free(tmp);
    return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
}

precis_status ref_ReduceMean(pr_kernel *k) { return reduce(k, R_MEAN); }
precis_status ref_ReduceSum(pr_kernel *k) { return reduce(k, R_SUM); }
precis_status ref_ReduceMax(pr_kernel *k) { return reduce(k, R_MAX); }
precis_status ref_ReduceMin(pr_kernel *k) { return reduce(k, R_MIN); }
precis_status ref_ReduceProd(pr_kernel *k) { return reduce(k, R_PROD); }
precis_status ref_ReduceL1(pr_kernel *k) { return reduce(k, R_L1); }
precis_status ref_ReduceL2(pr_kernel *k) { return reduce(k, R_L2); }
precis_status ref_ReduceLogSum(pr_kernel *k) { return reduce(k, R_LOGSUM); }
precis_status ref_ReduceLogSumExp(pr_kernel *k) { return reduce(k, R_LSE); }
precis_status ref_ReduceSumSquare(pr_kernel *k) { return reduce(k, R_SUMSQ); }

/* ------------------------------------------------------------ ArgMax / ArgMin */

/* idx of the best element of each (outer, inner) line of length n.
 * BETTER(v, best) decides; floats: the first NaN wins (numpy). */
#define ARG_LOOP(T, BETTER)                                                                        \
    do {                                                                                           \
        const T *x = (const T *)data;                                                              \
        for (int64_t o = 0; o < outer; o++)                                                        \
            for (int64_t i = 0; i < inner; i++) {                                                  \
                const T *line = x + o * n * inner + i;                                             \
                T best = line[0];                                                                  \
                int64_t bi = 0;                                                                    \
                for (int64_t j = 1; j < n; j++) {                                                  \
                    T v = line[j * inner];                                                         \
                    if (BETTER(v, best)) {                                                         \
                        best = v;                                                                  \
                        bi = j;                                                                    \
                    }                                                                              \
                }                                                                                  \
                out[o * inner + i] = bi;                                                           \
            }                                                                                      \
    } while (0)

#define GT_FIRST(v, b) ((v) > (b))
#define GT_LAST(v, b) ((v) >= (b))
#define LT_FIRST(v, b) ((v) < (b))
#define LT_LAST(v, b) ((v) <= (b))
#define FGT_FIRST(v, b) (!isnan(b) && ((v) > (b) || isnan(v)))
#define FGT_LAST(v, b) (isnan(b) ? isnan(v) : ((v) >= (b) || isnan(v)))
#define FLT_FIRST(v, b) (!isnan(b) && ((v) < (b) || isnan(v)))
#define FLT_LAST(v, b) (isnan(b) ? isnan(v) : ((v) <= (b) || isnan(v)))

#define ARG_INT(T)                                                                                 \
    do {                                                                                           \
        if (is_max && last) ARG_LOOP(T, GT_LAST);                                                  \
        else if (is_max) ARG_LOOP(T, GT_FIRST);                                                    \
        else if (last) ARG_LOOP(T, LT_LAST);                                                       \
        else ARG_LOOP(T, LT_FIRST);                                                                \
    } while (0)
#define ARG_FLT(T)                                                                                 \
    do {                                                                                           \
        if (is_max && last) ARG_LOOP(T, FGT_LAST);                                                 \
        else if (is_max) ARG_LOOP(T, FGT_FIRST);                                                   \
        else if (last) ARG_LOOP(T, FLT_LAST);                                                      \
        else ARG_LOOP(T, FLT_FIRST);                                                               \
    } while (0)

static precis_status arg_reduce(pr_kernel *k, bool is_max) {
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    int r = X->rank;
    int a;
    precis_status st = pr_kernel_axis(k, pr_attr_int(k->node, "axis", 0), r, &a);
    if (st) return st;
    bool last = pr_attr_int(k->node, "select_last_index", 0) != 0;
    int64_t outer = 1, inner = 1, n = X->dims[a];
    for (int d = 0; d < a; d++) outer *= X->dims[d];
    for (int d = a + 1; d < r; d++) inner *= X->dims[d];
    if (Y->dtype != PRECIS_INT64 || Y->numel != outer * inner)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output is not int64 of %lld elements",
                          (long long)(outer * inner));
    if (outer * inner == 0) return PRECIS_OK;
    if (n == 0) return pr_kernelf(k, PRECIS_ERR_SHAPE, "cannot reduce over the empty axis %d", a);
    int64_t *out = Y->data;
    const void *data = X->data;
    float *tmp = NULL;
    switch (X->dtype) {
    case PRECIS_FLOAT16:
    case PRECIS_BFLOAT16:
        tmp = pr_lin_alloc(X->numel, sizeof(float));
        if (!tmp) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        pr_ref_to_f32(X->data, X->dtype, X->numel, tmp);
        data = tmp;
        ARG_FLT(float);
        break;
    case PRECIS_FLOAT32: ARG_FLT(float); break;
    case PRECIS_FLOAT64: ARG_FLT(double); break;
    case PRECIS_INT8: ARG_INT(int8_t); break;
    case PRECIS_UINT8: ARG_INT(uint8_t); break;
    case PRECIS_INT16: ARG_INT(int16_t); break;
    case PRECIS_UINT16: ARG_INT(uint16_t); break;
    case PRECIS_INT32: ARG_INT(int32_t); break;
    case PRECIS_UINT32: ARG_INT(uint32_t); break;
    case PRECIS_INT64: ARG_INT(int64_t); break;
    case PRECIS_UINT64: ARG_INT(uint64_t); break;
    default:
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported",
                          pr_dtype_name(X->dtype));
    }
    free(tmp);
    return PRECIS_OK;
}

precis_status ref_ArgMax(pr_kernel *k) { return arg_reduce(k, true); }
precis_status ref_ArgMin(pr_kernel *k) { return arg_reduce(k, false); }
