/* LayerNormalization and InstanceNormalization for float32/bfloat16/float16
 * activations.
 *
 * Statistics are two-pass (mean, then the centred sum of squares), summed in
 * float vectors over blocks of KN_BLK elements and in double across blocks;
 * the normalisation itself is float. LayerNormalization normalises rows of
 * prod(X.dims[axis:]) elements (rows in parallel); Scale and B broadcast to
 * those dims and may be initializers (converted in prepare) or run-time
 * inputs; the optional Mean and InvStdDev outputs are written.
 * InstanceNormalization normalises every (n, c) plane: plain tensors plane by
 * plane, NHWC tensors by chunks of pixels read contiguously (per-channel
 * partial sums in parallel, combined in double). The output may alias the
 * input (all statistics are read before writing). */
#define PR_KN_INTERNAL
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/kernels_norm.h"

#define KN_BLK 1024

/* ------------------------------------------------------------ shared */

/* p (dtype pdt, rank prank, dims pdims) broadcast to dims nd[0..r) into
 * `inner` floats. */
static void kn_bcast(const void *p, pr_dtype pdt, int prank, const int64_t *pdims, int r,
                     const int64_t *nd, int64_t inner, float *out) {
    int64_t st[PR_MAX_RANK], idx[PR_MAX_RANK] = {0}, acc = 1;
    for (int d = r - 1; d >= 0; d--) {
        int pd = d - (r - prank);
        int64_t dim = pd >= 0 ? pdims[pd] : 1;
        st[d] = dim == 1 ? 0 : acc;
        acc *= dim;
    }
    for (int64_t i = 0; i < inner; i++) {
        int64_t off = 0;
        for (int d = 0; d < r; d++) off += idx[d] * st[d];
        out[i] = kn_ldparam(p, pdt, off);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < nd[d]) break;
            idx[d] = 0;
        }
    }
}

static bool kn_param_dtype(pr_dtype dt) { return kn_act_dtype(dt) || dt == PRECIS_FLOAT64; }

/* Mean and population variance of n contiguous values. */
static void kn_stats_scalar(const void *x, pr_dtype dt, int64_t n, double *mean, double *var) {
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; i++) s += kn_ld1(x, dt, i);
    const double m = n > 0 ? s / (double)n : 0.0;
    const float mf = (float)m;
    for (int64_t i = 0; i < n; i++) {
        const float d = kn_ld1(x, dt, i) - mf;
        q += (double)d * d;
    }
    *mean = m;
    *var = n > 0 ? q / (double)n : 0.0;
}

KN_AVX512 static void kn_stats_512(const void *x, pr_dtype dt, int64_t n, double *mean,
                                   double *var) {
    double s = 0, q = 0;
    for (int64_t b = 0; b < n; b += KN_BLK) {
        const int64_t e = b + KN_BLK < n ? b + KN_BLK : n;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        int64_t i = b;
        for (; i + 32 <= e; i += 32) {
            a0 = _mm512_add_ps(a0, kn_ld16(x, dt, i));
            a1 = _mm512_add_ps(a1, kn_ld16(x, dt, i + 16));
        }
        for (; i + 16 <= e; i += 16) a0 = _mm512_add_ps(a0, kn_ld16(x, dt, i));
        if (i < e) a1 = _mm512_add_ps(a1, kn_ld16z(x, dt, i, kn_tail(e - i)));
        s += _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
    const double m = n > 0 ? s / (double)n : 0.0;
    const __m512 vm = _mm512_set1_ps((float)m);
    for (int64_t b = 0; b < n; b += KN_BLK) {
        const int64_t e = b + KN_BLK < n ? b + KN_BLK : n;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
        int64_t i = b;
        for (; i + 32 <= e; i += 32) {
            __m512 d0 = _mm512_sub_ps(kn_ld16(x, dt, i), vm);
            __m512 d1 = _mm512_sub_ps(kn_ld16(x, dt, i + 16), vm);
            a0 = _mm512_fmadd_ps(d0, d0, a0);
            a1 = _mm512_fmadd_ps(d1, d1, a1);
        }
        for (; i + 16 <= e; i += 16) {
            __m512 d0 = _mm512_sub_ps(kn_ld16(x, dt, i), vm);
            a0 = _mm512_fmadd_ps(d0, d0, a0);
        }
        if (i < e) {
            const __mmask16 tm = kn_tail(e - i);
            __m512 d1 = _mm512_maskz_sub_ps(tm, kn_ld16z(x, dt, i, tm), vm);
            a1 = _mm512_fmadd_ps(d1, d1, a1);
        }
        q += _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    }
    *mean = m;
    *var = n > 0 ? q / (double)n : 0.0;
}

/* y = (x - m) * a + b over n contiguous values (InstanceNormalization). */
KN_AVX512 static void kn_affine_512(const void *x, void *y, pr_dtype dt, int64_t n, float m,
                                    float a, float b) {
    const __m512 vm = _mm512_set1_ps(m), va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        kn_st16(y, dt, i, _mm512_fmadd_ps(_mm512_sub_ps(kn_ld16(x, dt, i), vm), va, vb));
    if (i < n) {
        const __mmask16 tm = kn_tail(n - i);
        kn_st16m(y, dt, i, _mm512_fmadd_ps(_mm512_sub_ps(kn_ld16z(x, dt, i, tm), vm), va, vb), tm);
    }
}

static void kn_affine_scalar(const void *x, void *y, pr_dtype dt, int64_t n, float m, float a,
                             float b) {
    for (int64_t i = 0; i < n; i++) kn_st1(y, dt, i, (kn_ld1(x, dt, i) - m) * a + b);
}

/* ========================================================== LayerNormalization */

typedef struct kl_state {
    bool v512;
    int64_t axis;
    float eps;
    int64_t inner;       /* length of the prepared parameters (0: none) */
    float *scale, *bias; /* prepared from initializers, or NULL */
} kl_state;

static bool kl_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_LayerNormalization) return false;
    if (pr_attr_float(n, "q_scale", 0.0f) != 0.0f) return false; /* e4m3 output 1: cuda plans */
    int xi = pr_node_in(n, 0), si = pr_node_in(n, 1), bi = pr_node_in(n, 2), yi = pr_node_out(n, 0);
    if (xi < 0 || si < 0 || yi < 0) return false;
    const pr_tensor *X = &g->tensors[xi], *S = &g->tensors[si], *Y = &g->tensors[yi];
    if (!kn_act_dtype(X->dtype) || !kn_param_dtype(S->dtype)) return false;
    if (bi >= 0 && !kn_param_dtype(g->tensors[bi].dtype)) return false;
    if (Y->dtype != PRECIS_UNDEFINED && Y->dtype != X->dtype) return false;
    if (X->layout != PR_LAYOUT_PLAIN || Y->layout != PR_LAYOUT_PLAIN) return false;
    if (X->rank == 0) return false;
    for (int o = 1; o < n->n_outputs && o < 3; o++) {
        int ti = pr_node_out(n, o);
        if (ti < 0) continue;
        pr_dtype dt = g->tensors[ti].dtype;
        if (dt != PRECIS_UNDEFINED && !kn_param_dtype(dt)) return false;
    }
    return true;
}

static int kl_inplace(const pr_graph *g, const pr_node *n) { return 0; }

static void kl_destroy(void *state) {
    kl_state *s = state;
    if (!s) return;
    free(s->scale);
    free(s->bias);
    free(s);
}

/* Parameter tensor t broadcast to X's trailing dims nd[0..r), when every
 * dim is known; NULL otherwise (or on OOM: then built at run time). */
static float *kl_prep_param(const pr_tensor *t, int r, const int64_t *nd, int64_t inner) {
    if (!(t->flags & PR_T_INIT) || !t->data || t->rank > r || inner <= 0) return NULL;
    for (int d = 0; d < t->rank; d++) {
        int64_t pd = t->dims[t->rank - 1 - d], xd = nd[r - 1 - d];
        if (pd != 1 && pd != xd) return NULL;
    }
    float *f = malloc((size_t)inner * sizeof(float));
    if (f) kn_bcast(t->data, t->dtype, t->rank, t->dims, r, nd, inner, f);
    return f;
}

static precis_status kl_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    kl_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
    s->v512 = kn_have_avx512();
    s->axis = pr_attr_int(n, "axis", -1);
    s->eps = pr_attr_float(n, "epsilon", 1e-5f);
    const pr_tensor *X = &g->tensors[pr_node_in(n, 0)];
    int64_t axis = s->axis;
    if (X->rank > 0 && axis >= -X->rank && axis < X->rank) {
        if (axis < 0) axis += X->rank;
        const int r = X->rank - (int)axis;
        const int64_t *nd = X->dims + axis;
        const int64_t inner = pr_numel(r, nd);
        int si = pr_node_in(n, 1), bi = pr_node_in(n, 2);
        if (inner > 0) {
            s->scale = kl_prep_param(&g->tensors[si], r, nd, inner);
            if (s->scale && bi >= 0) {
                s->bias = kl_prep_param(&g->tensors[bi], r, nd, inner);
                if (!s->bias) {
                    free(s->scale);
                    s->scale = NULL;
                }
            }
            if (s->scale) s->inner = inner;
        }
    }
    *state = s;
    return PRECIS_OK;
}

static const char *kl_describe(void *state) {
    const kl_state *s = state;
    return s->v512 ? "layernorm:avx512" : "layernorm:scalar";
}

KN_AVX512 static void kl_row_512(const void *x, void *y, pr_dtype dt, int64_t n, const float *sc,
                                 const float *bi, float eps, double *mo, double *io) {
    double m, v;
    kn_stats_512(x, dt, n, &m, &v);
    const double inv = 1.0 / sqrt(v + (double)eps);
    const __m512 vm = _mm512_set1_ps((float)m), vi = _mm512_set1_ps((float)inv);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 t = _mm512_mul_ps(_mm512_sub_ps(kn_ld16(x, dt, i), vm), vi);
        __m512 b = bi ? _mm512_loadu_ps(bi + i) : _mm512_setzero_ps();
        kn_st16(y, dt, i, _mm512_fmadd_ps(t, _mm512_loadu_ps(sc + i), b));
    }
    if (i < n) {
        const __mmask16 tm = kn_tail(n - i);
        __m512 t = _mm512_mul_ps(_mm512_sub_ps(kn_ld16z(x, dt, i, tm), vm), vi);
        __m512 b = bi ? _mm512_maskz_loadu_ps(tm, bi + i) : _mm512_setzero_ps();
        kn_st16m(y, dt, i, _mm512_fmadd_ps(t, _mm512_maskz_loadu_ps(tm, sc + i), b), tm);
    }
    *mo = m;
    *io = inv;
}

static void kl_row_scalar(const void *x, void *y, pr_dtype dt, int64_t n, const float *sc,
                          const float *bi, float eps, double *mo, double *io) {
    double m, v;
    kn_stats_scalar(x, dt, n, &m, &v);
    const double inv = 1.0 / sqrt(v + (double)eps);
    const float mf = (float)m, fi = (float)inv;
    for (int64_t i = 0; i < n; i++)
        kn_st1(y, dt, i, (kn_ld1(x, dt, i) - mf) * fi * sc[i] + (bi ? bi[i] : 0.0f));
    *mo = m;
    *io = inv;
}

static precis_status kl_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const kl_state *s = state;
    const pr_buf *X = pr_kin(k, 0), *S = pr_kin(k, 1), *B = pr_kin(k, 2);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    pr_buf *MO = k->n_out > 1 ? k->out[1] : NULL, *IO = k->n_out > 2 ? k->out[2] : NULL;
    if (!X || !S || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing X, Scale or Y");
    const pr_dtype dt = X->dtype;
    if (!kn_act_dtype(dt) || Y->dtype != dt || Y->numel != X->numel)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported types %s -> %s",
                          pr_dtype_name(dt), pr_dtype_name(Y->dtype));
    if (!kn_param_dtype(S->dtype) || (B && !kn_param_dtype(B->dtype)))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "Scale/B must be float tensors");
    if (X->rank < 1) return pr_kernelf(k, PRECIS_ERR_SHAPE, "X must have rank >= 1");
    int64_t axis = s->axis;
    if (axis < -X->rank || axis >= X->rank)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "axis %lld out of range", (long long)axis);
    if (axis < 0) axis += X->rank;
    const int r = X->rank - (int)axis;
    const int64_t *nd = X->dims + axis;
    for (int i = 0; i < 2; i++) {
        const pr_buf *p = i == 0 ? S : B;
        if (!p) continue;
        if (p->rank > r) return pr_kernelf(k, PRECIS_ERR_SHAPE, "Scale/B rank too large");
        for (int d = 0; d < p->rank; d++) {
            int64_t pd = p->dims[p->rank - 1 - d], xd = nd[r - 1 - d];
            if (pd != 1 && pd != xd)
                return pr_kernelf(k, PRECIS_ERR_SHAPE,
                                  "Scale/B do not broadcast to the normalized shape");
        }
    }
    const int64_t inner = pr_numel(r, nd);
    const int64_t rows = inner > 0 ? X->numel / inner : 0;
    if (X->numel == 0) return PRECIS_OK;
    const bool prepared = s->scale && s->inner == inner && (!B || s->bias);
    const int nt = kn_threads(x->num_threads, X->numel, rows);
    const bool stats = (MO && MO->numel > 0) || (IO && IO->numel > 0);
    size_t need = prepared ? 0 : (size_t)2 * kn_pad16(inner);
    if (stats) need += (size_t)rows * 2 * sizeof(double) / sizeof(float);
    float *scr = need ? pr_cpu_scratch(x, need * sizeof(float)) : NULL;
    if (need && !scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const float *sc = s->scale, *bi = s->bias;
    double *st = NULL;
    if (stats) st = (double *)(void *)scr; /* first: 8-byte aligned */
    float *pp = scr ? scr + (stats ? (size_t)rows * 2 * 2 : 0) : NULL;
    if (!prepared) {
        float *fs = pp, *fb = pp + kn_pad16(inner);
        kn_bcast(S->data, S->dtype, S->rank, S->dims, r, nd, inner, fs);
        if (B) kn_bcast(B->data, B->dtype, B->rank, B->dims, r, nd, inner, fb);
        sc = fs;
        bi = B ? fb : NULL;
    }
    const size_t es = pr_dtype_size(dt);
    const unsigned char *xd = X->data;
    unsigned char *yd = Y->data;
    const bool v512 = s->v512;
    const float eps = s->eps;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t rw = 0; rw < rows; rw++) {
        double m, iv;
        const size_t off = (size_t)(rw * inner) * es;
        if (v512)
            kl_row_512(xd + off, yd + off, dt, inner, sc, bi, eps, &m, &iv);
        else
            kl_row_scalar(xd + off, yd + off, dt, inner, sc, bi, eps, &m, &iv);
        if (st) {
            st[rw] = m;
            st[rows + rw] = iv;
        }
    }
    for (int o = 0; o < 2 && st; o++) {
        pr_buf *b = o == 0 ? MO : IO;
        if (!b) continue;
        for (int64_t i = 0; i < rows && i < b->numel; i++)
            pr_store_f64(b->data, b->dtype, i, st[o * rows + i]);
    }
    return PRECIS_OK;
}

const pr_cpu_impl pr_cpu_impl_layernorm = {
    .name = "layernorm",
    .supports = kl_supports,
    .nhwc_ok = NULL,
    .inplace_input = kl_inplace,
    .prepare = kl_prepare,
    .run = kl_run,
    .describe = kl_describe,
    .destroy = kl_destroy,
};

/* ====================================================== InstanceNormalization */

typedef struct ki_state {
    bool v512, nhwc;
    float eps;
    int64_t C;           /* length of the prepared parameters (0: none) */
    float *scale, *bias; /* from initializers, or NULL */
} ki_state;

static bool ki_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_InstanceNormalization) return false;
    int xi = pr_node_in(n, 0), si = pr_node_in(n, 1), bi = pr_node_in(n, 2), yi = pr_node_out(n, 0);
    if (xi < 0 || si < 0 || bi < 0 || yi < 0) return false;
    const pr_tensor *X = &g->tensors[xi], *Y = &g->tensors[yi];
    if (!kn_act_dtype(X->dtype) || !kn_param_dtype(g->tensors[si].dtype) ||
        !kn_param_dtype(g->tensors[bi].dtype))
        return false;
    if (Y->dtype != PRECIS_UNDEFINED && Y->dtype != X->dtype) return false;
    if (X->rank >= 0 && X->rank < 3) return false;
    if (X->layout != Y->layout) return false;
    if (X->layout == PR_LAYOUT_NHWC && X->rank != 4) return false;
    return X->layout == PR_LAYOUT_PLAIN || X->layout == PR_LAYOUT_NHWC;
}

static bool ki_nhwc_ok(const pr_graph *g, const pr_node *n) {
    int xi = pr_node_in(n, 0);
    return xi >= 0 && g->tensors[xi].rank == 4;
}

static int ki_inplace(const pr_graph *g, const pr_node *n) { return 0; }

static void ki_destroy(void *state) {
    ki_state *s = state;
    if (!s) return;
    free(s->scale);
    free(s->bias);
    free(s);
}

static float *ki_prep(const pr_tensor *t) {
    if (!(t->flags & PR_T_INIT) || !t->data) return NULL;
    int64_t n = pr_numel(t->rank, t->dims);
    if (n <= 0) return NULL;
    float *f = malloc((size_t)n * sizeof(float));
    if (f)
        for (int64_t i = 0; i < n; i++) f[i] = kn_ldparam(t->data, t->dtype, i);
    return f;
}

static precis_status ki_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    ki_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
    s->v512 = kn_have_avx512();
    s->eps = pr_attr_float(n, "epsilon", 1e-5f);
    const pr_tensor *X = &g->tensors[pr_node_in(n, 0)], *Y = &g->tensors[pr_node_out(n, 0)];
    s->nhwc = X->layout == PR_LAYOUT_NHWC;
    if (Y->layout != X->layout) {
        free(s);
        return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s): input and output layouts differ",
                       n->name, n->op_type);
    }
    const pr_tensor *S = &g->tensors[pr_node_in(n, 1)], *B = &g->tensors[pr_node_in(n, 2)];
    int64_t cs = pr_numel(S->rank, S->dims), cb = pr_numel(B->rank, B->dims);
    if (cs > 0 && cs == cb) {
        s->scale = ki_prep(S);
        s->bias = s->scale ? ki_prep(B) : NULL;
        if (!s->bias) {
            free(s->scale);
            s->scale = NULL;
        } else {
            s->C = cs;
        }
    }
    *state = s;
    return PRECIS_OK;
}

static const char *ki_describe(void *state) {
    const ki_state *s = state;
    return s->v512 ? (s->nhwc ? "instnorm:avx512:nhwc" : "instnorm:avx512")
                   : (s->nhwc ? "instnorm:scalar:nhwc" : "instnorm:scalar");
}

/* NHWC: y = (x - m[c]) * a[c] + b[c] over P pixels of C channels. */
KN_AVX512 static void ki_apply_nhwc_512(const void *x, void *y, pr_dtype dt, int64_t P, int64_t C,
                                        const float *m, const float *a, const float *b) {
    const int64_t Cv = C & ~(int64_t)15;
    const __mmask16 tm = kn_tail(C & 15);
    for (int64_t p = 0; p < P; p++) {
        const int64_t o = p * C;
        int64_t c = 0;
        for (; c < Cv; c += 16) {
            __m512 d = _mm512_sub_ps(kn_ld16(x, dt, o + c), _mm512_loadu_ps(m + c));
            kn_st16(y, dt, o + c,
                    _mm512_fmadd_ps(d, _mm512_loadu_ps(a + c), _mm512_loadu_ps(b + c)));
        }
        if (c < C) {
            __m512 d = _mm512_sub_ps(kn_ld16z(x, dt, o + c, tm), _mm512_maskz_loadu_ps(tm, m + c));
            kn_st16m(y, dt, o + c,
                     _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(tm, a + c),
                                     _mm512_maskz_loadu_ps(tm, b + c)),
                     tm);
        }
    }
}

static void ki_apply_nhwc_scalar(const void *x, void *y, pr_dtype dt, int64_t P, int64_t C,
                                 const float *m, const float *a, const float *b) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t c = 0; c < C; c++)
            kn_st1(y, dt, p * C + c, (kn_ld1(x, dt, p * C + c) - m[c]) * a[c] + b[c]);
}

/* NHWC: per image, chunks of pixels are reduced per channel in parallel
 * (contiguous reads), the chunk partials summed in double, then applied. */
static void ki_run_nhwc(const unsigned char *xd, unsigned char *yd, pr_dtype dt, int64_t N,
                        int64_t C, int64_t P, const float *sc, const float *bi, float eps,
                        bool v512, int nthreads, float *scr) {
    const size_t es = pr_dtype_size(dt);
    const int64_t nch = (P + KN_NHWC_CHUNK - 1) / KN_NHWC_CHUNK, tasks = N * nch;
    const size_t Cp = kn_pad16(C);
    float *part = scr, *mean = part + (size_t)tasks * Cp, *fa = mean + (size_t)N * Cp,
          *fb = fa + (size_t)N * Cp;
    const int nt = kn_threads(nthreads, N * P * C, tasks);
    for (int ph = 0; ph < 2; ph++) {
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t q = 0; q < tasks; q++) {
            const int64_t n = q / nch, p0 = (q % nch) * KN_NHWC_CHUNK;
            const int64_t np = P - p0 < KN_NHWC_CHUNK ? P - p0 : KN_NHWC_CHUNK;
            float *acc = part + (size_t)q * Cp;
            for (int64_t c = 0; c < C; c++) acc[c] = 0;
            const void *xs = xd + (size_t)((n * P + p0) * C) * es;
            if (v512)
                kn_nhwc_acc_512(xs, dt, np, C, ph ? KN_SQ : KN_SUM, mean + n * Cp, acc);
            else
                kn_nhwc_acc_scalar(xs, dt, np, C, ph ? KN_SQ : KN_SUM, mean + n * Cp, acc);
        }
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                double s = 0;
                for (int64_t ch = 0; ch < nch; ch++) s += part[(size_t)(n * nch + ch) * Cp + c];
                const double v = P > 0 ? s / (double)P : 0.0;
                if (ph == 0) {
                    mean[n * Cp + c] = (float)v;
                } else {
                    fa[n * Cp + c] = (float)(sc[c] / sqrt(v + (double)eps));
                    fb[n * Cp + c] = bi[c];
                }
            }
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) {
        const int64_t n = q / nch, p0 = (q % nch) * KN_NHWC_CHUNK;
        const int64_t np = P - p0 < KN_NHWC_CHUNK ? P - p0 : KN_NHWC_CHUNK;
        const size_t off = (size_t)((n * P + p0) * C) * es;
        if (v512)
            ki_apply_nhwc_512(xd + off, yd + off, dt, np, C, mean + n * Cp, fa + n * Cp,
                              fb + n * Cp);
        else
            ki_apply_nhwc_scalar(xd + off, yd + off, dt, np, C, mean + n * Cp, fa + n * Cp,
                                 fb + n * Cp);
    }
}

static precis_status ki_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const ki_state *s = state;
    const pr_buf *X = pr_kin(k, 0), *S = pr_kin(k, 1), *B = pr_kin(k, 2);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !S || !B || !Y)
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing a required input");
    const pr_dtype dt = X->dtype;
    if (!kn_act_dtype(dt) || Y->dtype != dt || Y->numel != X->numel)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported types %s -> %s",
                          pr_dtype_name(dt), pr_dtype_name(Y->dtype));
    if (!kn_param_dtype(S->dtype) || !kn_param_dtype(B->dtype))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "scale/B must be float tensors");
    if (X->rank < 3) return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must have rank >= 3");
    if (s->nhwc && X->rank != 4)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "NHWC input must have rank 4");
    const int64_t N = X->dims[0], C = X->dims[1];
    const int64_t P = N * C > 0 ? X->numel / (N * C) : 0;
    if (S->numel != C || B->numel != C)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "scale and B must have %lld values", (long long)C);
    if (X->numel == 0) return PRECIS_OK;
    const float *sc = s->scale, *bi = s->bias;
    const bool prepared = sc && s->C == C;
    const size_t Cp = kn_pad16(C);
    const int64_t nch = (P + KN_NHWC_CHUNK - 1) / KN_NHWC_CHUNK;
    size_t need = prepared ? 0 : 2 * Cp;
    if (s->nhwc) need += (size_t)(N * nch + 3 * N) * Cp;
    float *scr = need ? pr_cpu_scratch(x, need * sizeof(float)) : NULL;
    if (need && !scr) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    if (!prepared) {
        for (int64_t c = 0; c < C; c++) {
            scr[c] = kn_ldparam(S->data, S->dtype, c);
            scr[Cp + c] = kn_ldparam(B->data, B->dtype, c);
        }
        sc = scr;
        bi = scr + Cp;
        scr += 2 * Cp;
    }
    const size_t es = pr_dtype_size(dt);
    const unsigned char *xd = X->data;
    unsigned char *yd = Y->data;
    const bool v512 = s->v512;
    const float eps = s->eps;
    if (s->nhwc) {
        ki_run_nhwc(xd, yd, dt, N, C, P, sc, bi, eps, v512, x->num_threads, scr);
        return PRECIS_OK;
    }
    const int nt = kn_threads(x->num_threads, X->numel, N * C);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t pl = 0; pl < N * C; pl++) {
        const int64_t c = pl % C;
        const size_t off = (size_t)(pl * P) * es;
        double m, v;
        if (v512)
            kn_stats_512(xd + off, dt, P, &m, &v);
        else
            kn_stats_scalar(xd + off, dt, P, &m, &v);
        const float a = (float)(sc[c] / sqrt(v + (double)eps));
        if (v512)
            kn_affine_512(xd + off, yd + off, dt, P, (float)m, a, bi[c]);
        else
            kn_affine_scalar(xd + off, yd + off, dt, P, (float)m, a, bi[c]);
    }
    return PRECIS_OK;
}

const pr_cpu_impl pr_cpu_impl_instnorm = {
    .name = "instnorm",
    .supports = ki_supports,
    .nhwc_ok = ki_nhwc_ok,
    .inplace_input = ki_inplace,
    .prepare = ki_prepare,
    .run = ki_run,
    .describe = ki_describe,
    .destroy = ki_destroy,
};
