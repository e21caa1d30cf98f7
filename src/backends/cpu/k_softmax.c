/* Softmax and LogSoftmax (every opset) for float32/bfloat16/float16.
 *
 * opset < 13 coerces the input to 2-D at `axis` and normalises rows of
 * prod(d[axis:]) elements; opset >= 13 normalises along the single dim
 * `axis`. When nothing follows the normalised dims (always for opset < 13,
 * and axis = -1 for opset >= 13) rows are contiguous: three passes per row
 * (max, exp + sum into the output or a float row, scale), rows in parallel.
 * Otherwise lines are strided by `inner`: tiles of up to KS_TILE lines are
 * normalised together, vectorised across the lines (three passes over the
 * input, exp evaluated twice, no scratch). Output may alias the input. */
#define PR_KN_INTERNAL
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/kernels_norm.h"

#define KS_TILE 128

typedef struct ks_state {
    bool log, v512;
} ks_state;

static bool ks_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Softmax && n->op != PR_OP_LogSoftmax) return false;
    int xi = pr_node_in(n, 0), yi = pr_node_out(n, 0);
    if (xi < 0 || yi < 0) return false;
    const pr_tensor *x = &g->tensors[xi], *y = &g->tensors[yi];
    if (!kn_act_dtype(x->dtype)) return false;
    if (y->dtype != PRECIS_UNDEFINED && y->dtype != x->dtype) return false;
    if (x->layout != PR_LAYOUT_PLAIN || y->layout != PR_LAYOUT_PLAIN) return false;
    return true;
}

static int ks_inplace(const pr_graph *g, const pr_node *n) { return 0; }

static precis_status ks_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    ks_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
    s->log = n->op == PR_OP_LogSoftmax;
    s->v512 = kn_have_avx512();
    *state = s;
    return PRECIS_OK;
}

static const char *ks_describe(void *state) {
    const ks_state *s = state;
    return s->v512 ? "softmax:avx512" : "softmax:scalar";
}

static void ks_destroy(void *state) { free(state); }

/* ------------------------------------------------------------ scalar */

/* One contiguous row: x (dtype dt) -> y (dt); t: float row (n) or NULL when
 * dt is float32 (y then holds the exponentials). */
static void ks_row_scalar(const void *x, void *y, pr_dtype dt, int64_t n, bool lg, float *t) {
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        float v = kn_ld1(x, dt, i);
        m = v > m ? v : m;
    }
    double s = 0;
    if (lg) {
        for (int64_t i = 0; i < n; i++) s += expf(kn_ld1(x, dt, i) - m);
        const float ls = logf((float)s);
        for (int64_t i = 0; i < n; i++) kn_st1(y, dt, i, (kn_ld1(x, dt, i) - m) - ls);
        return;
    }
    float *e = t ? t : (float *)y;
    for (int64_t i = 0; i < n; i++) {
        float v = expf(kn_ld1(x, dt, i) - m);
        e[i] = v;
        s += v;
    }
    for (int64_t i = 0; i < n; i++) kn_st1(y, dt, i, (float)(e[i] / s));
}

/* Lines of length n and stride inner, columns [0, w) of a tile. */
static void ks_tile_scalar(const void *x, void *y, pr_dtype dt, int64_t n, int64_t inner, int64_t w,
                           bool lg) {
    float m[KS_TILE];
    double s[KS_TILE];
    for (int64_t c = 0; c < w; c++) {
        m[c] = -INFINITY;
        s[c] = 0;
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t c = 0; c < w; c++) {
            float v = kn_ld1(x, dt, j * inner + c);
            m[c] = v > m[c] ? v : m[c];
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t c = 0; c < w; c++) s[c] += expf(kn_ld1(x, dt, j * inner + c) - m[c]);
    if (lg) {
        float ls[KS_TILE];
        for (int64_t c = 0; c < w; c++) ls[c] = logf((float)s[c]);
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < w; c++)
                kn_st1(y, dt, j * inner + c, (kn_ld1(x, dt, j * inner + c) - m[c]) - ls[c]);
    } else {
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < w; c++)
                kn_st1(y, dt, j * inner + c,
                       (float)(expf(kn_ld1(x, dt, j * inner + c) - m[c]) / s[c]));
    }
}

/* ------------------------------------------------------------ AVX-512 */

KN_AVX512 static void ks_row_512(const void *x, void *y, pr_dtype dt, int64_t n, bool lg,
                                 float *t) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 m0 = ninf, m1 = ninf;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm512_max_ps(m0, kn_ld16(x, dt, i));
        m1 = _mm512_max_ps(m1, kn_ld16(x, dt, i + 16));
    }
    for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(m0, kn_ld16(x, dt, i));
    const int64_t nt = n - i;
    const __mmask16 tm = kn_tail(nt);
    const int64_t nv = i;
    if (nt) m1 = _mm512_max_ps(m1, kn_ld16f(x, dt, i, tm, ninf));
    const float mx = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    const __m512 vm = _mm512_set1_ps(mx);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    if (lg) {
        for (i = 0; i + 32 <= n; i += 32) {
            s0 = _mm512_add_ps(s0, kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, i), vm)));
            s1 = _mm512_add_ps(s1, kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, i + 16), vm)));
        }
        for (; i < nv; i += 16)
            s0 = _mm512_add_ps(s0, kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, i), vm)));
        if (nt)
            s1 = _mm512_add_ps(
                s1, _mm512_maskz_mov_ps(tm, kn_exp16(_mm512_sub_ps(kn_ld16z(x, dt, i, tm), vm))));
        const float ls = logf(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
        /* (x - m) - ls as the ref computes it: m + ls rounded first would
         * cost precision for large m */
        const __m512 vls = _mm512_set1_ps(ls);
        for (i = 0; i < nv; i += 16)
            kn_st16(y, dt, i, _mm512_sub_ps(_mm512_sub_ps(kn_ld16(x, dt, i), vm), vls));
        if (nt)
            kn_st16m(y, dt, i, _mm512_sub_ps(_mm512_sub_ps(kn_ld16z(x, dt, i, tm), vm), vls), tm);
        return;
    }
    float *e = t ? t : (float *)y;
    for (i = 0; i + 32 <= n; i += 32) {
        __m512 a = kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, i), vm));
        __m512 b = kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, i + 16), vm));
        _mm512_storeu_ps(e + i, a);
        _mm512_storeu_ps(e + i + 16, b);
        s0 = _mm512_add_ps(s0, a);
        s1 = _mm512_add_ps(s1, b);
    }
    for (; i < nv; i += 16) {
        __m512 a = kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, i), vm));
        _mm512_storeu_ps(e + i, a);
        s0 = _mm512_add_ps(s0, a);
    }
    if (nt) {
        __m512 a = _mm512_maskz_mov_ps(tm, kn_exp16(_mm512_sub_ps(kn_ld16z(x, dt, i, tm), vm)));
        _mm512_mask_storeu_ps(e + i, tm, a);
        s1 = _mm512_add_ps(s1, a);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
    for (i = 0; i < nv; i += 16) kn_st16(y, dt, i, _mm512_mul_ps(_mm512_loadu_ps(e + i), inv));
    if (nt) kn_st16m(y, dt, i, _mm512_mul_ps(_mm512_maskz_loadu_ps(tm, e + i), inv), tm);
}

KN_AVX512 static void ks_tile_512(const void *x, void *y, pr_dtype dt, int64_t n, int64_t inner,
                                  int64_t w, bool lg) {
    __m512 m[KS_TILE / 16], s[KS_TILE / 16];
    const int nb = (int)((w + 15) / 16);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int b = 0; b < nb; b++) {
        m[b] = ninf;
        s[b] = _mm512_setzero_ps();
    }
    const __mmask16 lm = (w & 15) ? kn_tail(w & 15) : (__mmask16)0xffff;
    for (int64_t j = 0; j < n; j++) {
        const int64_t o = j * inner;
        for (int b = 0; b < nb - 1; b++) m[b] = _mm512_max_ps(m[b], kn_ld16(x, dt, o + 16 * b));
        m[nb - 1] = _mm512_max_ps(m[nb - 1], kn_ld16f(x, dt, o + 16 * (nb - 1), lm, ninf));
    }
    for (int64_t j = 0; j < n; j++) {
        const int64_t o = j * inner;
        for (int b = 0; b < nb - 1; b++)
            s[b] = _mm512_add_ps(s[b], kn_exp16(_mm512_sub_ps(kn_ld16(x, dt, o + 16 * b), m[b])));
        const int b = nb - 1;
        s[b] = _mm512_add_ps(
            s[b], _mm512_maskz_mov_ps(
                      lm, kn_exp16(_mm512_sub_ps(kn_ld16z(x, dt, o + 16 * b, lm), m[b]))));
    }
    for (int b = 0; b < nb; b++) {
        if (lg) {
            float tmp[16];
            _mm512_storeu_ps(tmp, s[b]);
            for (int l = 0; l < 16; l++) tmp[l] = logf(tmp[l]);
            s[b] = _mm512_loadu_ps(tmp);
        } else {
            s[b] = _mm512_div_ps(_mm512_set1_ps(1.0f), s[b]);
        }
    }
    for (int64_t j = 0; j < n; j++) {
        const int64_t o = j * inner;
        for (int b = 0; b < nb; b++) {
            const __mmask16 bm = b == nb - 1 ? lm : (__mmask16)0xffff;
            __m512 d = _mm512_sub_ps(kn_ld16z(x, dt, o + 16 * b, bm), m[b]);
            __m512 r = lg ? _mm512_sub_ps(d, s[b]) : _mm512_mul_ps(kn_exp16(d), s[b]);
            kn_st16m(y, dt, o + 16 * b, r, bm);
        }
    }
}

/* ------------------------------------------------------------ run */

static precis_status ks_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const ks_state *s = state;
    const pr_buf *X = pr_kin(k, 0);
    pr_buf *Y = k->n_out > 0 ? k->out[0] : NULL;
    if (!X || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "missing input or output");
    const pr_dtype dt = X->dtype;
    if (!kn_act_dtype(dt) || Y->dtype != dt || Y->numel != X->numel)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported types %s -> %s",
                          pr_dtype_name(dt), pr_dtype_name(Y->dtype));
    const int r = X->rank;
    const bool old = k->node->opset < 13;
    const int64_t axis = pr_attr_int(k->node, "axis", old ? 1 : -1);
    int a = r;
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
    if (X->numel == 0) return PRECIS_OK;
    const size_t es = pr_dtype_size(dt);
    const unsigned char *xd = X->data;
    unsigned char *yd = Y->data;
    const bool lg = s->log, v512 = s->v512;
    if (inner == 1) {
        const int nt = kn_threads(x->num_threads, X->numel, outer);
        float *t = NULL;
        const size_t per = kn_pad16(n);
        if (dt != PRECIS_FLOAT32 && !lg) {
            t = pr_cpu_scratch(x, (size_t)nt * per * sizeof(float));
            if (!t) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        }
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t o = 0; o < outer; o++) {
            float *tt = t ? t + (size_t)omp_get_thread_num() * per : NULL;
            const void *xr = xd + (size_t)(o * n) * es;
            void *yr = yd + (size_t)(o * n) * es;
            if (v512)
                ks_row_512(xr, yr, dt, n, lg, tt);
            else
                ks_row_scalar(xr, yr, dt, n, lg, tt);
        }
        return PRECIS_OK;
    }
    const int64_t tiles = (inner + KS_TILE - 1) / KS_TILE, tasks = outer * tiles;
    const int nt = kn_threads(x->num_threads, X->numel, tasks);
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) {
        const int64_t o = q / tiles, c0 = (q % tiles) * KS_TILE;
        const int64_t w = inner - c0 < KS_TILE ? inner - c0 : KS_TILE;
        const size_t off = (size_t)(o * n * inner + c0) * es;
        if (v512)
            ks_tile_512(xd + off, yd + off, dt, n, inner, w, lg);
        else
            ks_tile_scalar(xd + off, yd + off, dt, n, inner, w, lg);
    }
    return PRECIS_OK;
}

const pr_cpu_impl pr_cpu_impl_softmax = {
    .name = "softmax",
    .supports = ks_supports,
    .nhwc_ok = NULL,
    .inplace_input = ks_inplace,
    .prepare = ks_prepare,
    .run = ks_run,
    .describe = ks_describe,
    .destroy = ks_destroy,
};
