/* Reference kernels of the 'tensor' family's indexing ops: Gather,
 * GatherElements, GatherND, ScatterElements (and the deprecated Scatter),
 * ScatterND, OneHot, NonZero.
 * Every index read from tensor data is normalised (negative counts from the
 * end) and bounds-checked before use; an out-of-range index fails with a
 * message naming it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref_tensor.h"

/* The "axis" attribute (default 0), normalised. */
static precis_status get_axis(pr_kernel *k, int rank, int64_t *axis) {
    int a = 0; /* never read on failure; silences -Wmaybe-uninitialized at -O3 */
    precis_status st = pr_kernel_axis(k, pr_attr_int(k->node, "axis", 0), rank, &a);
    *axis = a;
    return st;
}

/* Index value i of an int32/int64 buffer, normalised into [0, n); fails
 * naming the offending index. */
static precis_status load_index(pr_kernel *k, const pr_buf *idx, int64_t i, int64_t n, int axis,
                                int64_t *out) {
    int64_t v = idx->dtype == PRECIS_INT32 ? ((const int32_t *)idx->data)[i]
                                           : ((const int64_t *)idx->data)[i];
    int64_t w = v < 0 ? v + n : v;
    if (w < 0 || w >= n)
        return pr_kernelf(
            k, PRECIS_ERR_INVALID_ARG,
            "index %lld (at position %lld) is out of range [%lld, %lld] for axis %d of size %lld",
            (long long)v, (long long)i, (long long)-n, (long long)n - 1, axis, (long long)n);
    *out = w;
    return PRECIS_OK;
}

static precis_status check_index_dtype(pr_kernel *k, const pr_buf *idx, bool int64_only) {
    if (idx->dtype == PRECIS_INT64 || (!int64_only && idx->dtype == PRECIS_INT32)) return PRECIS_OK;
    return pr_kernelf(k, PRECIS_ERR_SHAPE, "indices must be %s, got %s",
                      int64_only ? "int64" : "int32 or int64", pr_dtype_name(idx->dtype));
}

static inline void copy_elem(unsigned char *d, const unsigned char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es);
    }
}

/* ------------------------------------------------------------ Gather */

precis_status ref_Gather(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 2);
    if (st) return st;
    const pr_buf *x = k->in[0], *idx = k->in[1];
    pr_buf *y = k->out[0];
    if ((st = check_index_dtype(k, idx, false))) return st;
    int64_t axis;
    if ((st = get_axis(k, x->rank, &axis))) return st;
    size_t es = pr_dtype_size(x->dtype);
    int64_t outer = pr_dims_prod(x->dims, 0, (int)axis), n = x->dims[axis];
    size_t inner = (size_t)pr_dims_prod(x->dims, (int)axis + 1, x->rank) * es;
    if (y->nbytes != (size_t)outer * (size_t)idx->numel * inner)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output size mismatch");
    int64_t *ii = malloc(((size_t)idx->numel + 1) * sizeof *ii);
    if (!ii) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int64_t j = 0; j < idx->numel; j++)
        if ((st = load_index(k, idx, j, n, (int)axis, &ii[j]))) {
            free(ii);
            return st;
        }
    unsigned char *d = y->data;
    const unsigned char *s = x->data;
    if (inner)
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < idx->numel; j++, d += inner)
                memcpy(d, s + ((size_t)o * (size_t)n + (size_t)ii[j]) * inner, inner);
    free(ii);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ GatherElements / ScatterElements */

/* Walks every element of `idx` (same rank as data x): calls fn with the flat
 * position in idx and the flat offset in x of the addressed element. */
typedef precis_status (*elem_fn)(void *ctx, int64_t pos, int64_t xoff);

static precis_status walk_elements(pr_kernel *k, const pr_buf *x, const pr_buf *idx, int64_t axis,
                                   elem_fn fn, void *ctx) {
    int r = x->rank;
    if (idx->rank != r)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "indices have rank %d, data has rank %d", idx->rank,
                          r);
    for (int d = 0; d < r; d++)
        if (d != axis && idx->dims[d] > x->dims[d])
            return pr_kernelf(k, PRECIS_ERR_SHAPE,
                              "indices dim %d (%lld) exceeds the data's (%lld)", d,
                              (long long)idx->dims[d], (long long)x->dims[d]);
    if (idx->numel == 0) return PRECIS_OK;
    int64_t xs[PR_MAX_RANK], c[PR_MAX_RANK] = {0};
    pr_strides(r, x->dims, xs);
    int64_t n = x->dims[axis], base = 0; /* base: offset of c without the axis term */
    for (int64_t pos = 0; pos < idx->numel; pos++) {
        int64_t v = 0;
        precis_status st = load_index(k, idx, pos, n, (int)axis, &v);
        if (st) return st;
        if ((st = fn(ctx, pos, base + v * xs[axis]))) return st;
        for (int d = r - 1; d >= 0; d--) {
            if (d != axis) base += xs[d];
            if (++c[d] < idx->dims[d]) break;
            if (d != axis) base -= xs[d] * idx->dims[d];
            c[d] = 0;
        }
    }
    return PRECIS_OK;
}

typedef struct gather_ctx {
    unsigned char *dst;
    const unsigned char *src;
    size_t es;
} gather_ctx;

static precis_status gather_elem(void *ctx, int64_t pos, int64_t xoff) {
    gather_ctx *g = ctx;
    copy_elem(g->dst + (size_t)pos * g->es, g->src + (size_t)xoff * g->es, g->es);
    return PRECIS_OK;
}

precis_status ref_GatherElements(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 2);
    if (st) return st;
    const pr_buf *x = k->in[0], *idx = k->in[1];
    pr_buf *y = k->out[0];
    if ((st = check_index_dtype(k, idx, false))) return st;
    int64_t axis;
    if ((st = get_axis(k, x->rank, &axis))) return st;
    if (y->numel != idx->numel) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output size mismatch");
    gather_ctx g = {y->data, x->data, pr_dtype_size(x->dtype)};
    return walk_elements(k, x, idx, axis, gather_elem, &g);
}

/* Reductions of the scatter ops. */
enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static precis_status get_reduction(pr_kernel *k, pr_dtype dt, int *red) {
    const char *s = pr_attr_str(k->node, "reduction", "none");
    if (strcmp(s, "none") == 0)
        *red = RED_NONE;
    else if (strcmp(s, "add") == 0)
        *red = RED_ADD;
    else if (strcmp(s, "mul") == 0)
        *red = RED_MUL;
    else if (strcmp(s, "max") == 0)
        *red = RED_MAX;
    else if (strcmp(s, "min") == 0)
        *red = RED_MIN;
    else
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "unknown reduction '%s'", s);
    const pr_dtype_traits *t = pr_dtype_info(dt);
    if (*red != RED_NONE && !t->is_float && !t->is_int)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "reduction '%s' on %s is not supported", s,
                          pr_dtype_name(dt));
    return PRECIS_OK;
}

/* dst[i] = dst[i] (op) src[i] for n elements of dtype dt. Integer add/mul
 * wrap around (computed unsigned: no undefined behaviour). */
static void reduce_into(unsigned char *dst, const unsigned char *src, int64_t n, pr_dtype dt,
                        int red) {
    size_t es = pr_dtype_size(dt);
    if (red == RED_NONE) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
#define RED_INT(T)                                                                                 \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T a, b;                                                                                \
            memcpy(&a, dst + (size_t)i * sizeof(T), sizeof(T));                                    \
            memcpy(&b, src + (size_t)i * sizeof(T), sizeof(T));                                    \
            T r = red == RED_ADD   ? (T)((uint64_t)a + (uint64_t)b)                                \
                  : red == RED_MUL ? (T)((uint64_t)a * (uint64_t)b)                                \
                  : red == RED_MAX ? (a > b ? a : b)                                               \
                                   : (a < b ? a : b);                                              \
            memcpy(dst + (size_t)i * sizeof(T), &r, sizeof(T));                                    \
        }                                                                                          \
        return;                                                                                    \
    }
    switch (dt) {
    case PRECIS_INT8: RED_INT(int8_t)
    case PRECIS_UINT8: RED_INT(uint8_t)
    case PRECIS_INT16: RED_INT(int16_t)
    case PRECIS_UINT16: RED_INT(uint16_t)
    case PRECIS_INT32: RED_INT(int32_t)
    case PRECIS_UINT32: RED_INT(uint32_t)
    case PRECIS_INT64: RED_INT(int64_t)
    case PRECIS_UINT64: RED_INT(uint64_t)
    default: break;
    }
#undef RED_INT
    for (int64_t i = 0; i < n; i++) {
        double a = pr_load_f64(dst, dt, i), b = pr_load_f64(src, dt, i), r;
        if (dt == PRECIS_FLOAT32 || dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16) {
            float fa = (float)a, fb = (float)b;
            r = red == RED_ADD   ? fa + fb
                : red == RED_MUL ? fa * fb
                : red == RED_MAX ? fmaxf(fa, fb)
                                 : fminf(fa, fb);
            if ((red == RED_MAX || red == RED_MIN) && (isnan(fa) || isnan(fb))) r = NAN;
        } else {
            r = red == RED_ADD   ? a + b
                : red == RED_MUL ? a * b
                : red == RED_MAX ? fmax(a, b)
                                 : fmin(a, b);
            if ((red == RED_MAX || red == RED_MIN) && (isnan(a) || isnan(b))) r = NAN;
        }
        pr_store_f64(dst, dt, i, r);
    }
}

typedef struct scatter_ctx {
    unsigned char *dst;
    const unsigned char *upd;
    size_t es;
    pr_dtype dt;
    int red;
} scatter_ctx;

static precis_status scatter_elem(void *ctx, int64_t pos, int64_t xoff) {
    scatter_ctx *s = ctx;
    reduce_into(s->dst + (size_t)xoff * s->es, s->upd + (size_t)pos * s->es, 1, s->dt, s->red);
    return PRECIS_OK;
}

precis_status ref_ScatterElements(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 3);
    if (st) return st;
    const pr_buf *x = k->in[0], *idx = k->in[1], *u = k->in[2];
    pr_buf *y = k->out[0];
    if ((st = check_index_dtype(k, idx, false))) return st;
    int64_t axis;
    if ((st = get_axis(k, x->rank, &axis))) return st;
    int red;
    if ((st = get_reduction(k, x->dtype, &red))) return st;
    if (u->numel != idx->numel || u->dtype != x->dtype || y->nbytes != x->nbytes)
        return pr_kernelf(k, PRECIS_ERR_SHAPE,
                          "updates must match indices in shape and data in type");
    for (int d = 0; d < idx->rank && d < u->rank; d++)
        if (u->rank != idx->rank || u->dims[d] != idx->dims[d])
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "updates and indices must have the same shape");
    if (y->nbytes) memcpy(y->data, x->data, y->nbytes);
    scatter_ctx s = {y->data, u->data, pr_dtype_size(x->dtype), x->dtype, red};
    return walk_elements(k, x, idx, axis, scatter_elem, &s);
}

/* Scatter (opsets 9-10, deprecated at 11) is ScatterElements without reduction. */
precis_status ref_Scatter(pr_kernel *k) { return ref_ScatterElements(k); }

/* ------------------------------------------------------------ GatherND / ScatterND */

/* Offset (in elements of x) of the slice addressed by the m-tuple at
 * tuple index t, starting at data axis `first`. */
static precis_status nd_offset(pr_kernel *k, const pr_buf *x, const pr_buf *idx, int64_t t,
                               int64_t m, int first, const int64_t *xs, int64_t *off) {
    int64_t o = 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t v = 0;
        precis_status st = load_index(k, idx, t * m + j, x->dims[first + j], first + (int)j, &v);
        if (st) return st;
        o += v * xs[first + j];
    }
    *off = o;
    return PRECIS_OK;
}

precis_status ref_GatherND(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 2);
    if (st) return st;
    const pr_buf *x = k->in[0], *idx = k->in[1];
    pr_buf *y = k->out[0];
    if ((st = check_index_dtype(k, idx, true))) return st;
    int64_t b = pr_attr_int(k->node, "batch_dims", 0);
    int r = x->rank, q = idx->rank;
    if (q < 1 || b < 0 || b >= q || b >= r)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bad ranks or batch_dims");
    int64_t m = idx->dims[q - 1];
    if (m < 1 || m > r - b)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bad last indices dim %lld", (long long)m);
    for (int d = 0; d < b; d++)
        if (x->dims[d] != idx->dims[d]) return pr_kernelf(k, PRECIS_ERR_SHAPE, "batch dims differ");
    size_t es = pr_dtype_size(x->dtype);
    int64_t xs[PR_MAX_RANK];
    pr_strides(r, x->dims, xs);
    int64_t nb = pr_dims_prod(x->dims, 0, (int)b), per = pr_dims_prod(idx->dims, (int)b, q - 1);
    int64_t slice = pr_dims_prod(x->dims, (int)(b + m), r);
    int64_t bstride = pr_dims_prod(x->dims, (int)b, r);
    if (y->numel != nb * per * slice)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output size mismatch");
    unsigned char *d = y->data;
    const unsigned char *s = x->data;
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t t = 0; t < per; t++) {
            int64_t off;
            if ((st = nd_offset(k, x, idx, bi * per + t, m, (int)b, xs, &off))) return st;
            size_t nbytes = (size_t)slice * es;
            if (nbytes) memcpy(d, s + (size_t)(bi * bstride + off) * es, nbytes);
            d += nbytes;
        }
    return PRECIS_OK;
}

precis_status ref_ScatterND(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 3);
    if (st) return st;
    const pr_buf *x = k->in[0], *idx = k->in[1], *u = k->in[2];
    pr_buf *y = k->out[0];
    if ((st = check_index_dtype(k, idx, true))) return st;
    int red;
    if ((st = get_reduction(k, x->dtype, &red))) return st;
    int r = x->rank, q = idx->rank;
    if (q < 1) return pr_kernelf(k, PRECIS_ERR_SHAPE, "indices must have rank >= 1");
    int64_t m = idx->dims[q - 1];
    if (m < 1 || m > r)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bad last indices dim %lld", (long long)m);
    int64_t n = pr_dims_prod(idx->dims, 0, q - 1), slice = pr_dims_prod(x->dims, (int)m, r);
    if (u->dtype != x->dtype || u->numel != n * slice || y->nbytes != x->nbytes)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "updates do not match indices and data");
    size_t es = pr_dtype_size(x->dtype);
    if (y->nbytes) memcpy(y->data, x->data, y->nbytes);
    int64_t xs[PR_MAX_RANK];
    pr_strides(r, x->dims, xs);
    unsigned char *d = y->data;
    const unsigned char *us = u->data;
    for (int64_t t = 0; t < n; t++) {
        int64_t off;
        if ((st = nd_offset(k, x, idx, t, m, 0, xs, &off))) return st;
        reduce_into(d + (size_t)off * es, us + (size_t)(t * slice) * es, slice, x->dtype, red);
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ OneHot */

precis_status ref_OneHot(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 3);
    if (st) return st;
    const pr_buf *idx = k->in[0], *val = k->in[2];
    pr_buf *y = k->out[0];
    int r = y->rank;
    int64_t a = pr_attr_int(k->node, "axis", -1);
    if (a < 0) a += r;
    if (a < 0 || a >= r || idx->rank != r - 1)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis out of range");
    if (val->numel != 2 || val->dtype != y->dtype)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "values must hold [off_value, on_value]");
    size_t es = pr_dtype_size(y->dtype);
    const unsigned char *off = val->data, *on = off + es;
    int64_t depth = y->dims[a];
    int64_t outer = pr_dims_prod(y->dims, 0, (int)a), inner = pr_dims_prod(y->dims, (int)a + 1, r);
    pr_fill_elems(y->data, off, y->numel, es);
    unsigned char *d = y->data;
    bool is_float = pr_dtype_info(idx->dtype)->is_float;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t pos = o * inner + i, v;
            if (is_float) {
                double f = pr_load_f64(idx->data, idx->dtype, pos);
                if (!(fabs(f) < 9.0e18)) continue;
                v = (int64_t)f;
            } else {
                v = pr_load_i64(idx->data, idx->dtype, pos);
            }
            if (v < 0 && v >= -depth) v += depth;
            if (v < 0 || v >= depth) continue; /* out of range: all off_value */
            copy_elem(d + (size_t)((o * depth + v) * inner + i) * es, on, es);
        }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ NonZero */

precis_status ref_NonZero(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int r = x->rank;
    size_t es = pr_dtype_size(x->dtype);
    int64_t nnz = y->rank == 2 ? y->dims[1] : -1;
    if (y->dtype != PRECIS_INT64 || y->rank != 2 || y->dims[0] != r)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "bad output for NonZero");
    int64_t c[PR_MAX_RANK] = {0}, found = 0;
    int64_t *out = y->data;
    const unsigned char *p = x->data;
    for (int64_t i = 0; i < x->numel; i++) {
        if (pr_elem_nonzero(p + (size_t)i * es, x->dtype, es)) {
            if (found >= nnz) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "non-zero count changed");
            for (int d = 0; d < r; d++) out[d * nnz + found] = c[d];
            found++;
        }
        for (int d = r - 1; d >= 0; d--) {
            if (++c[d] < x->dims[d]) break;
            c[d] = 0;
        }
    }
    if (found != nnz) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "non-zero count changed");
    return PRECIS_OK;
}
