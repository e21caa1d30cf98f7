/* Reference kernels for the 'tensor' family (see ops.inc): shape
 * manipulation and generation. Indexing ops (Gather*, Scatter*, OneHot,
 * NonZero) are in ref_index.c, Resize/Upsample in ref_resize.c.
 *
 * Data movement works on bytes (element size from pr_dtype_size), so every
 * fixed-size dtype is supported. The executor has run the op's inference on
 * the concrete inputs: outputs are allocated with the right dims. */
#include "backends/ref/ref_tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

void pr_kic_init(pr_kic *c, pr_kernel *k) {
    memset(c, 0, sizeof *c);
    int n = k->n_in < PR_REF_KIC_MAX ? k->n_in : PR_REF_KIC_MAX;
    for (int i = 0; i < n; i++) {
        pr_tinfo *t = &c->tin[i];
        const pr_buf *b = k->in[i];
        t->rank = -1;
        if (!b) continue;
        t->dtype = b->dtype;
        t->rank = b->rank;
        if (b->rank > 0) memcpy(t->dims, b->dims, (size_t)b->rank * sizeof(int64_t));
        t->value = b->data;
    }
    c->ic.g = NULL;
    c->ic.node = k->node;
    c->ic.n_in = n;
    c->ic.in = c->tin;
    c->ic.n_out = 0;
    c->ic.out = NULL;
    c->ic.err = k->err;
}

void pr_fill_elems(void *dst, const void *val, int64_t n, size_t es) {
    unsigned char *d = dst;
    const unsigned char *v = val;
    bool zero = true;
    for (size_t b = 0; b < es; b++) zero = zero && v[b] == 0;
    if (zero) {
        memset(d, 0, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: memset(d, v[0], (size_t)n); return;
    case 2: {
        uint16_t x;
        memcpy(&x, v, 2);
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = x;
        return;
    }
    case 4: {
        uint32_t x;
        memcpy(&x, v, 4);
        for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = x;
        return;
    }
    case 8: {
        uint64_t x;
        memcpy(&x, v, 8);
        for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = x;
        return;
    }
    default:
        for (int64_t i = 0; i < n; i++) memcpy(d + (size_t)i * es, v, es);
    }
}

/* One row of a strided copy: n elements at source stride s (elements). */
static void copy_row(unsigned char *d, const unsigned char *s, int64_t n, int64_t st, size_t es) {
    if (st == 1) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
    if (st == 0) {
        pr_fill_elems(d, s, n, es);
        return;
    }
    switch (es) {
#define ROW(T)                                                                                     \
    {                                                                                              \
        T *dd = (T *)(void *)d;                                                                    \
        const T *ss = (const T *)(const void *)s;                                                  \
        for (int64_t i = 0; i < n; i++) dd[i] = ss[i * st];                                        \
        return;                                                                                    \
    }
    case 1: ROW(uint8_t)
    case 2: ROW(uint16_t)
    case 4: ROW(uint32_t)
    case 8: ROW(uint64_t)
#undef ROW
    default:
        for (int64_t i = 0; i < n; i++) memcpy(d + (size_t)i * es, s + i * st * (ptrdiff_t)es, es);
    }
}

void pr_copy_strided(void *dst, const void *src, int rank, const int64_t *dims_in,
                     const int64_t *sstr_in, size_t es) {
    int64_t dims[PR_COPY_MAX_RANK + 1], st[PR_COPY_MAX_RANK + 1];
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims_in[i] == 0) return;
        if (dims_in[i] == 1) continue;
        if (r > 0 && st[r - 1] == sstr_in[i] * dims_in[i]) { /* merge with the previous dim */
            dims[r - 1] *= dims_in[i];
            st[r - 1] = sstr_in[i];
            continue;
        }
        dims[r] = dims_in[i];
        st[r] = sstr_in[i];
        r++;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (r == 0) {
        memcpy(d, s, es);
        return;
    }
    int64_t n = dims[r - 1], inner_st = st[r - 1];
    int64_t idx[PR_COPY_MAX_RANK + 1] = {0};
    int64_t off = 0;
    size_t row = (size_t)n * es;
    for (;;) {
        copy_row(d, s + off * (ptrdiff_t)es, n, inner_st, es);
        d += row;
        int k = r - 2;
        while (k >= 0) {
            off += st[k];
            if (++idx[k] < dims[k]) break;
            off -= st[k] * dims[k];
            idx[k] = 0;
            k--;
        }
        if (k < 0) break;
    }
}

static precis_status copy_same(pr_kernel *k) {
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    if (!x || !y) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "missing input or output");
    if (x->nbytes != y->nbytes)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "input has %zu bytes, output %zu", x->nbytes,
                          y->nbytes);
    if (y->nbytes) memmove(y->data, x->data, y->nbytes);
    return PRECIS_OK;
}

precis_status pr_ref_need_in(pr_kernel *k, int n) {
    for (int i = 0; i < n; i++)
        if (!pr_kin(k, i)) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input %d is missing", i);
    if (k->n_out < 1 || !k->out[0])
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "output is missing");
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Constant */

precis_status ref_Constant(pr_kernel *k) {
    pr_buf *y = k->n_out > 0 ? k->out[0] : NULL;
    if (!y) return PRECIS_OK;
    const pr_node *n = k->node;
    for (int i = 0; i < n->n_attrs; i++) {
        const pr_attr *a = &n->attrs[i];
        if (!a->name) continue;
        const void *src = NULL;
        size_t nb = 0;
        if (strcmp(a->name, "value") == 0 && a->type == PR_ATTR_TENSOR && a->t) {
            src = a->t->data;
            nb = a->t->nbytes;
        } else if (strcmp(a->name, "value_float") == 0) {
            src = &a->f;
            nb = sizeof(float);
        } else if (strcmp(a->name, "value_int") == 0) {
            src = &a->i;
            nb = sizeof(int64_t);
        } else if (strcmp(a->name, "value_floats") == 0) {
            src = a->floats;
            nb = (size_t)a->n * sizeof(float);
        } else if (strcmp(a->name, "value_ints") == 0) {
            src = a->ints;
            nb = (size_t)a->n * sizeof(int64_t);
        } else {
            continue;
        }
        if (nb != y->nbytes)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "attribute '%s' holds %zu bytes, output %zu",
                              a->name, nb, y->nbytes);
        if (nb && !src)
            return pr_kernelf(k, PRECIS_ERR_PARSE, "attribute '%s' has no data", a->name);
        if (nb) memcpy(y->data, src, nb);
        return PRECIS_OK;
    }
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "no supported value attribute");
}

/* ------------------------------------------------------------ reshapes */

precis_status ref_Reshape(pr_kernel *k) { return copy_same(k); }
precis_status ref_Flatten(pr_kernel *k) { return copy_same(k); }
precis_status ref_Squeeze(pr_kernel *k) { return copy_same(k); }
precis_status ref_Unsqueeze(pr_kernel *k) { return copy_same(k); }

/* ------------------------------------------------------------ Transpose */

precis_status ref_Transpose(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int r = x->rank;
    const int64_t *perm;
    int np = pr_attr_ints(k->node, "perm", &perm);
    if (np >= 0 && np != r)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "perm length %d != rank %d", np, r);
    int64_t xs[PR_MAX_RANK], ss[PR_MAX_RANK];
    pr_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        int64_t p = np >= 0 ? perm[i] : r - 1 - i;
        if (p < 0 || p >= r)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "perm entry %lld out of range", (long long)p);
        ss[i] = xs[p];
    }
    if (y->numel) pr_copy_strided(y->data, x->data, r, y->dims, ss, pr_dtype_size(x->dtype));
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Concat / Split */

precis_status ref_Concat(pr_kernel *k) {
    if (k->n_out < 1 || !k->out[0])
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "output is missing");
    pr_buf *y = k->out[0];
    int r = y->rank;
    if (r < 1) return pr_kernelf(k, PRECIS_ERR_SHAPE, "cannot concatenate scalars");
    int64_t axis = pr_attr_int(k->node, "axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis out of range");
    size_t es = pr_dtype_size(y->dtype);
    int64_t outer = pr_dims_prod(y->dims, 0, (int)axis);
    size_t *blk = malloc(((size_t)k->n_in + 1) * sizeof *blk);
    if (!blk) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < k->n_in; i++) {
        const pr_buf *x = k->in[i];
        if (!x || x->rank != r) {
            free(blk);
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "input %d is missing or has the wrong rank", i);
        }
        blk[i] = (size_t)pr_dims_prod(x->dims, (int)axis, r) * es;
    }
    unsigned char *d = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < k->n_in; i++) {
            if (blk[i])
                memcpy(d, (const unsigned char *)k->in[i]->data + (size_t)o * blk[i], blk[i]);
            d += blk[i];
        }
    free(blk);
    return PRECIS_OK;
}

precis_status ref_Split(pr_kernel *k) {
    if (!pr_kin(k, 0)) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input 0 is missing");
    const pr_buf *x = k->in[0];
    pr_kic c;
    pr_kic_init(&c, k);
    int64_t *sizes = malloc(((size_t)k->n_out + 1) * sizeof *sizes);
    if (!sizes) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    int axis = 0;
    bool known;
    precis_status st = pr_split_plan_make(&c.ic, k->n_out, &axis, sizes, &known);
    if (!st && !known) st = pr_kernelf(k, PRECIS_ERR_INTERNAL, "split sizes not known");
    if (st) {
        free(sizes);
        return st;
    }
    size_t es = pr_dtype_size(x->dtype);
    int64_t outer = pr_dims_prod(x->dims, 0, axis);
    size_t inner = (size_t)pr_dims_prod(x->dims, axis + 1, x->rank) * es;
    size_t in_blk = (size_t)x->dims[axis] * inner;
    size_t off = 0;
    for (int j = 0; j < k->n_out; j++) {
        size_t blk = (size_t)sizes[j] * inner;
        pr_buf *y = k->out[j];
        if (y) {
            if (y->nbytes != blk * (size_t)outer) {
                free(sizes);
                return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output %d has the wrong size", j);
            }
            for (int64_t o = 0; o < outer && blk; o++)
                memcpy((unsigned char *)y->data + (size_t)o * blk,
                       (const unsigned char *)x->data + (size_t)o * in_blk + off, blk);
        }
        off += blk;
    }
    free(sizes);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Slice */

precis_status ref_Slice(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    pr_kic c;
    pr_kic_init(&c, k);
    pr_slice_plan p;
    bool known;
    if ((st = pr_slice_plan_make(&c.ic, &p, &known))) return st;
    if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "slice parameters not known");
    int64_t xs[PR_MAX_RANK], ss[PR_MAX_RANK], off = 0;
    pr_strides(x->rank, x->dims, xs);
    for (int d = 0; d < x->rank; d++) {
        if (p.len[d] != y->dims[d])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output dim %d is %lld, slice gives %lld", d,
                              (long long)y->dims[d], (long long)p.len[d]);
        off += p.start[d] * xs[d];
        ss[d] = p.step[d] * xs[d];
    }
    if (y->numel == 0) return PRECIS_OK;
    size_t es = pr_dtype_size(x->dtype);
    pr_copy_strided(y->data, (const unsigned char *)x->data + off * (int64_t)es, x->rank, y->dims,
                    ss, es);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Expand / Tile */

precis_status ref_Expand(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    if (y->rank < x->rank)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output rank below input rank");
    for (int d = 0; d < x->rank; d++) {
        int64_t xd = x->dims[d], yd = y->dims[d + y->rank - x->rank];
        if (xd != 1 && xd != yd)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "cannot broadcast dim %d (%lld) to %lld", d,
                              (long long)xd, (long long)yd);
    }
    int64_t ss[PR_MAX_RANK];
    pr_bcast_strides(x, y->rank, y->dims, ss);
    if (y->numel) pr_copy_strided(y->data, x->data, y->rank, y->dims, ss, pr_dtype_size(x->dtype));
    return PRECIS_OK;
}

precis_status ref_Tile(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    if (y->numel == 0) return PRECIS_OK;
    if (y->rank != x->rank) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "rank mismatch");
    int64_t xs[PR_MAX_RANK], dims[PR_COPY_MAX_RANK], ss[PR_COPY_MAX_RANK];
    pr_strides(x->rank, x->dims, xs);
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 0 || y->dims[d] % x->dims[d])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL,
                              "output dim %d is not a multiple of the input's", d);
        dims[2 * d] = y->dims[d] / x->dims[d];
        ss[2 * d] = 0;
        dims[2 * d + 1] = x->dims[d];
        ss[2 * d + 1] = xs[d];
    }
    pr_copy_strided(y->data, x->data, 2 * x->rank, dims, ss, pr_dtype_size(x->dtype));
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Shape / Size / ConstantOfShape */

precis_status ref_Shape(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int64_t r = x->rank;
    int64_t s = k->node->opset >= 15 ? pr_attr_int(k->node, "start", 0) : 0;
    if (s < 0) s += r;
    s = s < 0 ? 0 : s > r ? r : s;
    if (y->dtype != PRECIS_INT64 || y->numel < 0 || s + y->numel > r)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "bad output for Shape");
    for (int64_t i = 0; i < y->numel; i++) ((int64_t *)y->data)[i] = x->dims[s + i];
    return PRECIS_OK;
}

precis_status ref_Size(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    if (k->out[0]->dtype != PRECIS_INT64 || k->out[0]->numel != 1)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "bad output for Size");
    ((int64_t *)k->out[0]->data)[0] = k->in[0]->numel;
    return PRECIS_OK;
}

precis_status ref_ConstantOfShape(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    pr_buf *y = k->out[0];
    const pr_attr *a = pr_attr_find(k->node, "value");
    size_t es = pr_dtype_size(y->dtype);
    unsigned char zero[16] = {0};
    const void *val = zero;
    if (a && a->type == PR_ATTR_TENSOR && a->t) {
        if (a->t->dtype != y->dtype || a->t->nbytes != es || !a->t->data)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "attribute 'value' must hold one %s element",
                              pr_dtype_name(y->dtype));
        val = a->t->data;
    } else if (es > sizeof zero) {
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "element too large");
    }
    pr_fill_elems(y->data, val, y->numel, es);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Range */

precis_status ref_Range(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 3);
    if (st) return st;
    pr_buf *y = k->out[0];
    pr_dtype dt = y->dtype;
    const pr_buf *s = k->in[0], *dl = k->in[2];
    if (s->numel != 1 || dl->numel != 1 || s->dtype != dt || dl->dtype != dt)
        return pr_kernelf(k, PRECIS_ERR_SHAPE,
                          "start and delta must be scalars of the output type");
    if (pr_dtype_info(dt)->is_float) {
        if (dt == PRECIS_FLOAT32) {
            float a = ((const float *)s->data)[0], b = ((const float *)dl->data)[0];
            for (int64_t i = 0; i < y->numel; i++) ((float *)y->data)[i] = a + (float)i * b;
        } else {
            double a = pr_load_f64(s->data, dt, 0), b = pr_load_f64(dl->data, dt, 0);
            for (int64_t i = 0; i < y->numel; i++) pr_store_f64(y->data, dt, i, a + (double)i * b);
        }
    } else { /* integers: wrapping */
        uint64_t a = pr_load_u64(s->data, dt, 0), b = pr_load_u64(dl->data, dt, 0);
        for (int64_t i = 0; i < y->numel; i++)
            pr_store_u64_wrap(y->data, dt, i, a + (uint64_t)i * b);
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Pad */

/* Input coordinate read for output coordinate o of an axis of size n padded
 * by `begin` in front; -1 for the constant. */
static int64_t pad_map(int64_t o, int64_t begin, int64_t n, int mode) {
    int64_t i = o - begin;
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case PR_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case PR_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t period = 2 * (n - 1);
        i %= period;
        if (i < 0) i += period;
        return i >= n ? period - i : i;
    }
    case PR_PAD_WRAP: i %= n; return i < 0 ? i + n : i;
    default: return -1;
    }
}

precis_status ref_Pad(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    pr_kic c;
    pr_kic_init(&c, k);
    pr_pad_plan p;
    bool known;
    if ((st = pr_pad_plan_make(&c.ic, &p, &known))) return st;
    if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "pad parameters not known");
    int r = x->rank;
    size_t es = pr_dtype_size(x->dtype);
    for (int d = 0; d < r; d++)
        if (y->dims[d] != x->dims[d] + p.begin[d] + p.end[d])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output dim %d does not match the pads", d);
    if (y->numel == 0) return PRECIS_OK;
    if (r == 0) {
        memcpy(y->data, x->data, es);
        return PRECIS_OK;
    }
    int64_t xs[PR_MAX_RANK];
    pr_strides(r, x->dims, xs);
    int64_t n = x->dims[r - 1], m = y->dims[r - 1], b = p.begin[r - 1];
    /* last axis: [lo, hi) of the output row copies x[lo-b, hi-b) */
    int64_t lo = b < 0 ? 0 : b, hi = b + n < m ? b + n : m;
    if (hi < lo) hi = lo;
    int64_t *map = malloc((size_t)m * sizeof *map);
    if (!map) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int64_t j = 0; j < m; j++) map[j] = pad_map(j, b, n, p.mode);
    int64_t rows = y->numel / m, idx[PR_MAX_RANK] = {0};
    unsigned char *d = y->data;
    const unsigned char *src = x->data;
    size_t row = (size_t)m * es;
    for (int64_t rw = 0; rw < rows; rw++, d += row) {
        int64_t off = 0;
        bool fill = false;
        for (int a = 0; a < r - 1; a++) {
            int64_t i = pad_map(idx[a], p.begin[a], x->dims[a], p.mode);
            if (i < 0) {
                fill = true;
                break;
            }
            off += i * xs[a];
        }
        if (fill || n == 0) {
            pr_fill_elems(d, p.value, m, es);
        } else {
            const unsigned char *s = src + (size_t)off * es;
            if (hi > lo)
                memcpy(d + (size_t)lo * es, s + (size_t)(lo - b) * es, (size_t)(hi - lo) * es);
            for (int64_t j = 0; j < m; j++) {
                if (j == lo && hi > lo) j = hi;
                if (j >= m) break;
                if (map[j] < 0)
                    memcpy(d + (size_t)j * es, p.value, es);
                else
                    memcpy(d + (size_t)j * es, s + (size_t)map[j] * es, es);
            }
        }
        for (int a = r - 2; a >= 0; a--) {
            if (++idx[a] < y->dims[a]) break;
            idx[a] = 0;
        }
    }
    free(map);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ DepthToSpace / SpaceToDepth */

precis_status ref_DepthToSpace(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int64_t b = pr_attr_int(k->node, "blocksize", 0);
    if (x->rank != 4 || b < 1 || x->dims[1] % (b * b))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bad input or blocksize");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Co = C / (b * b);
    bool crd = strcmp(pr_attr_str(k->node, "mode", "DCR"), "CRD") == 0;
    /* output viewed as [N, Co, H, b1, W, b2] */
    int64_t dims[6] = {N, Co, H, b, W, b}, ss[6];
    ss[0] = C * H * W;
    ss[2] = W;
    ss[4] = 1;
    if (crd) { /* input [N, Co, b1, b2, H, W] */
        ss[1] = b * b * H * W;
        ss[3] = b * H * W;
        ss[5] = H * W;
    } else { /* input [N, b1, b2, Co, H, W] */
        ss[1] = H * W;
        ss[3] = b * Co * H * W;
        ss[5] = Co * H * W;
    }
    if (y->numel) pr_copy_strided(y->data, x->data, 6, dims, ss, pr_dtype_size(x->dtype));
    return PRECIS_OK;
}

precis_status ref_SpaceToDepth(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int64_t b = pr_attr_int(k->node, "blocksize", 0);
    if (x->rank != 4 || b < 1 || x->dims[2] % b || x->dims[3] % b)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bad input or blocksize");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t Ho = H / b, Wo = W / b;
    /* input [N, C, Ho, b1, Wo, b2] -> output [N, b1, b2, C, Ho, Wo] (DCR) or
     * [N, C, b1, b2, Ho, Wo] (CRD, opset 25+) */
    bool crd = strcmp(pr_attr_str(k->node, "mode", "DCR"), "CRD") == 0;
    int64_t dims[6] = {N, b, b, C, Ho, Wo};
    int64_t ss[6] = {C * H * W, W, 1, H * W, b * W, b};
    if (crd) {
        int64_t d2[6] = {N, C, b, b, Ho, Wo}, s2[6] = {C * H * W, H * W, W, 1, b * W, b};
        memcpy(dims, d2, sizeof dims);
        memcpy(ss, s2, sizeof ss);
    }
    if (y->numel) pr_copy_strided(y->data, x->data, 6, dims, ss, pr_dtype_size(x->dtype));
    return PRECIS_OK;
}

/* ------------------------------------------------------------ EyeLike / Trilu */

precis_status ref_EyeLike(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    pr_buf *y = k->out[0];
    if (y->rank != 2) return pr_kernelf(k, PRECIS_ERR_SHAPE, "output must be 2-D");
    int64_t rows = y->dims[0], cols = y->dims[1], kk = pr_attr_int(k->node, "k", 0);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < rows; i++) {
        if (kk > cols || kk < -rows) break;
        int64_t j = i + kk;
        if (j >= 0 && j < cols) pr_store_f64(y->data, y->dtype, i * cols + j, 1.0);
    }
    return PRECIS_OK;
}

precis_status ref_Trilu(pr_kernel *k) {
    precis_status st = pr_ref_need_in(k, 1);
    if (st) return st;
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int64_t kk = 0;
    const pr_buf *kb = pr_kin(k, 1);
    if (kb) {
        if (kb->numel != 1 || kb->dtype != PRECIS_INT64)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "k must be an int64 scalar");
        kk = ((const int64_t *)kb->data)[0];
    }
    bool upper = pr_attr_int(k->node, "upper", 1) != 0;
    if (x->rank < 2) return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must have rank >= 2");
    if (y->nbytes != x->nbytes) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "size mismatch");
    if (y->numel == 0) return PRECIS_OK;
    memcpy(y->data, x->data, y->nbytes);
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t lim = rows + cols + 1;
    if (kk > lim) kk = lim;
    if (kk < -lim) kk = -lim;
    size_t es = pr_dtype_size(x->dtype);
    int64_t mats = y->numel / (rows * cols);
    unsigned char *d = y->data;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++) {
            unsigned char *row = d + (size_t)((m * rows + i) * cols) * es;
            int64_t lo, hi; /* zeroed columns [lo, hi) */
            if (upper) {
                lo = 0;
                hi = i + kk; /* keep j >= i + k */
            } else {
                lo = i + kk + 1; /* keep j <= i + k */
                hi = cols;
            }
            if (lo < 0) lo = 0;
            if (hi > cols) hi = cols;
            if (hi > lo) memset(row + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
        }
    return PRECIS_OK;
}
