/* Binary elementwise kernels with numpy broadcasting (kernels.h): Add, Sub,
 * Mul, Div, Max, Min; Pow with a constant scalar exponent.
 *
 * One plan covers every broadcast pattern and layout: each operand gets its
 * element strides per output dim (from its own storage order, plain or
 * NHWC; 0 where it is broadcast), the dims are put into the output's storage
 * order, size-1 dims dropped and neighbours merged while every operand stays
 * contiguous (or stays broadcast) across them. What is left is a set of
 * "rows" of the innermost dim in which each operand has stride 1 or 0:
 *   same shape           one row, strides (1, 1)
 *   scalar operand       one row, (1, 0)
 *   [N] bias on [.., N]  rows of N, (1, 1), the bias restarting every row
 *   per-channel, plain   rows of H*W, (1, 0)
 *   per-channel, NHWC    rows of C, (1, 1)
 * Row functions are instantiated per op x dtype (all operands of one dtype)
 * and per op for mixed dtypes (a float32 initializer beside bf16/f16
 * activations); other inner strides (operands of different layouts) take a
 * scalar strided path. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_COUNT, B_POW = B_COUNT };
/* Pow by a constant: x^2, sqrt, x^3, 1/x, powf */
enum { P_SQ, P_SQRT, P_CUBE, P_RECIP, P_GEN, P_COUNT };

typedef struct bparam {
    pr_dtype da, db, dout;
    float e; /* Pow exponent */
} bparam;

/* o[i] = a[i sa] op b[i sb], i < n (pr_cpu_bin_row; its param a bparam).
 * The typed and mixed functions take sa, sb in {0, 1}; the strided one
 * anything. Pow: b unused. */
typedef pr_cpu_bin_row bin_fn;

/* ------------------------------------------------------------------ scalar */

PR_INLINE float s_bop(int op, float x, float y) {
    switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_MAX: return (x > y || x != x) ? x : y; /* NaN propagates, as ref */
    case B_MIN: return (x < y || x != x) ? x : y;
    default: return x;
    }
}

PR_INLINE void s_bin_t(int op, pr_dtype da, pr_dtype db, pr_dtype dout, const void *a, int64_t sa,
                       const void *b, int64_t sb, void *o, int64_t n) {
    if (sa && sb) {
        for (int64_t i = 0; i < n; i++)
            ps_store(o, i, dout, s_bop(op, ps_load(a, i, da), ps_load(b, i, db)));
    } else if (sa) {
        float y = ps_load(b, 0, db);
        for (int64_t i = 0; i < n; i++) ps_store(o, i, dout, s_bop(op, ps_load(a, i, da), y));
    } else if (sb) {
        float x = ps_load(a, 0, da);
        for (int64_t i = 0; i < n; i++) ps_store(o, i, dout, s_bop(op, x, ps_load(b, i, db)));
    } else {
        float v = s_bop(op, ps_load(a, 0, da), ps_load(b, 0, db));
        for (int64_t i = 0; i < n; i++) ps_store(o, i, dout, v);
    }
}

PR_INLINE float s_pow(int kind, float x, float e) {
    switch (kind) {
    case P_SQ: return x * x;
    case P_SQRT: return sqrtf(x);
    case P_CUBE: return x * x * x;
    case P_RECIP: return 1.0f / x;
    default: return powf(x, e);
    }
}

PR_INLINE void s_pow_t(int kind, pr_dtype dt, const void *a, void *o, int64_t n, float e) {
    for (int64_t i = 0; i < n; i++) ps_store(o, i, dt, s_pow(kind, ps_load(a, i, dt), e));
}

/* Any strides, any dtypes: the rare rows of operands in different layouts. */
#define DEF_STRIDED(op)                                                                            \
    static void st_##op(const void *a, int64_t sa, const void *b, int64_t sb, void *o, int64_t n,  \
                        const void *pv) {                                                          \
        const bparam *p = pv;                                                                      \
        for (int64_t i = 0; i < n; i++)                                                            \
            ps_store(o, i, p->dout,                                                                \
                     s_bop(op, ps_load(a, i *sa, p->da), ps_load(b, i *sb, p->db)));               \
    }

/* ------------------------------------------------------------------ AVX-512 */
#ifdef PR_CPU_X86
PR_VINLINE __m512 v_bop(int op, __m512 x, __m512 y) {
    switch (op) {
    case B_ADD: return _mm512_add_ps(x, y);
    case B_SUB: return _mm512_sub_ps(x, y);
    case B_MUL: return _mm512_mul_ps(x, y);
    case B_DIV: return _mm512_div_ps(x, y);
    case B_MAX: /* vmaxps gives y when either is NaN: keep a NaN x */
        return _mm512_mask_mov_ps(_mm512_max_ps(x, y), _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
    case B_MIN:
        return _mm512_mask_mov_ps(_mm512_min_ps(x, y), _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
    default: return x;
    }
}

PR_VINLINE void v_bin_t(int op, pr_dtype da, pr_dtype db, pr_dtype dout, const void *a, int64_t sa,
                        const void *b, int64_t sb, void *o, int64_t n) {
    int64_t i = 0;
    if (sa && sb) {
        for (; i + 32 <= n; i += 32) {
            __m512 x0 = pv_load(a, i, da), x1 = pv_load(a, i + 16, da);
            __m512 y0 = pv_load(b, i, db), y1 = pv_load(b, i + 16, db);
            pv_store(o, i, dout, v_bop(op, x0, y0));
            pv_store(o, i + 16, dout, v_bop(op, x1, y1));
        }
        for (; i + 16 <= n; i += 16)
            pv_store(o, i, dout, v_bop(op, pv_load(a, i, da), pv_load(b, i, db)));
        if (i < n) {
            __mmask16 m = pv_tail(n - i);
            pv_store_m(o, i, dout, v_bop(op, pv_load_m(a, i, da, m), pv_load_m(b, i, db, m)), m);
        }
    } else if (sa) {
        __m512 y = _mm512_set1_ps(ps_load(b, 0, db));
        for (; i + 32 <= n; i += 32) {
            __m512 x0 = pv_load(a, i, da), x1 = pv_load(a, i + 16, da);
            pv_store(o, i, dout, v_bop(op, x0, y));
            pv_store(o, i + 16, dout, v_bop(op, x1, y));
        }
        for (; i + 16 <= n; i += 16) pv_store(o, i, dout, v_bop(op, pv_load(a, i, da), y));
        if (i < n) {
            __mmask16 m = pv_tail(n - i);
            pv_store_m(o, i, dout, v_bop(op, pv_load_m(a, i, da, m), y), m);
        }
    } else if (sb) {
        __m512 x = _mm512_set1_ps(ps_load(a, 0, da));
        for (; i + 16 <= n; i += 16) pv_store(o, i, dout, v_bop(op, x, pv_load(b, i, db)));
        if (i < n) {
            __mmask16 m = pv_tail(n - i);
            pv_store_m(o, i, dout, v_bop(op, x, pv_load_m(b, i, db, m)), m);
        }
    } else {
        __m512 v = v_bop(op, _mm512_set1_ps(ps_load(a, 0, da)), _mm512_set1_ps(ps_load(b, 0, db)));
        for (; i + 16 <= n; i += 16) pv_store(o, i, dout, v);
        if (i < n) pv_store_m(o, i, dout, v, pv_tail(n - i));
    }
}

PR_VINLINE void v_pow_t(int kind, pr_dtype dt, const void *a, void *o, int64_t n, float e) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = pv_load(a, i, dt), r;
        switch (kind) {
        case P_SQ: r = _mm512_mul_ps(x, x); break;
        case P_SQRT: r = _mm512_sqrt_ps(x); break;
        case P_CUBE: r = _mm512_mul_ps(_mm512_mul_ps(x, x), x); break;
        default: r = _mm512_div_ps(_mm512_set1_ps(1.0f), x); break;
        }
        pv_store(o, i, dt, r);
    }
    if (i < n)
        s_pow_t(kind, dt, (const char *)a + i * (int64_t)pr_dtype_size(dt),
                (char *)o + i * (int64_t)pr_dtype_size(dt), n - i, e);
}
#endif

/* ---------------------------------------------------------- instantiation */

#define DT_F32 PRECIS_FLOAT32
#define DT_BF16 PRECIS_BFLOAT16
#define DT_F16 PRECIS_FLOAT16
#define BOPS(X) X(B_ADD) X(B_SUB) X(B_MUL) X(B_DIV) X(B_MAX) X(B_MIN)
#define POWS(X) X(P_SQ) X(P_SQRT) X(P_CUBE) X(P_RECIP)

BOPS(DEF_STRIDED)
#define ENT_ST(op) [op] = st_##op,
static const bin_fn st_tab[B_COUNT] = {BOPS(ENT_ST)};

/* Row functions per op for the dtype combinations that occur: all operands
 * of one dtype (columns 0-2), a float32 initializer beside bf16/f16
 * activations (3-6), anything else through per-vector dtype switches (7). */
#define DEF_S1(op, tag, A, B, O)                                                                   \
    static void s_##op##_##tag(const void *a, int64_t sa, const void *b, int64_t sb, void *o,      \
                               int64_t n, const void *p) {                                         \
        (void)p;                                                                                   \
        s_bin_t(op, DT_##A, DT_##B, DT_##O, a, sa, b, sb, o, n);                                   \
    }
#define DEF_S(op)                                                                                  \
    DEF_S1(op, F32, F32, F32, F32)                                                                 \
    DEF_S1(op, BF16, BF16, BF16, BF16) DEF_S1(op, F16, F16, F16, F16)                              \
        DEF_S1(op, BF16_F32, BF16, F32, BF16) DEF_S1(op, F16_F32, F16, F32, F16)                   \
            DEF_S1(op, F32_BF16, F32, BF16, BF16)                                                  \
                DEF_S1(op, F32_F16, F32, F16, F16) static void s_##op##_mix(                       \
                    const void *a, int64_t sa, const void *b, int64_t sb, void *o, int64_t n,      \
                    const void *pv) {                                                              \
        const bparam *p = pv;                                                                      \
        s_bin_t(op, p->da, p->db, p->dout, a, sa, b, sb, o, n);                                    \
    }
BOPS(DEF_S)
#define NCOL 8
#define ENT_S(op)                                                                                  \
    [op] = {s_##op##_F32,     s_##op##_BF16,     s_##op##_F16,     s_##op##_BF16_F32,              \
            s_##op##_F16_F32, s_##op##_F32_BF16, s_##op##_F32_F16, s_##op##_mix},
static const bin_fn s_tab[B_COUNT][NCOL] = {BOPS(ENT_S)};

#define DEF_SP1(k, dt)                                                                             \
    static void sp_##k##_##dt(const void *a, int64_t sa, const void *b, int64_t sb, void *o,       \
                              int64_t n, const void *p) {                                          \
        (void)sa, (void)b, (void)sb;                                                               \
        s_pow_t(k, DT_##dt, a, o, n, ((const bparam *)p)->e);                                      \
    }
#define DEF_SP(k) DEF_SP1(k, F32) DEF_SP1(k, BF16) DEF_SP1(k, F16)
POWS(DEF_SP)
DEF_SP(P_GEN)
#define ENT_SP(k) [k] = {sp_##k##_F32, sp_##k##_BF16, sp_##k##_F16},
static const bin_fn sp_tab[P_COUNT][3] = {POWS(ENT_SP) ENT_SP(P_GEN)};

#ifdef PR_CPU_X86
#define DEF_V1(op, tag, A, B, O)                                                                   \
    static PR_AVX512 void v_##op##_##tag(const void *a, int64_t sa, const void *b, int64_t sb,     \
                                         void *o, int64_t n, const void *p) {                      \
        (void)p;                                                                                   \
        v_bin_t(op, DT_##A, DT_##B, DT_##O, a, sa, b, sb, o, n);                                   \
    }
#define DEF_V(op)                                                                                  \
    DEF_V1(op, F32, F32, F32, F32)                                                                 \
    DEF_V1(op, BF16, BF16, BF16, BF16) DEF_V1(op, F16, F16, F16, F16)                              \
        DEF_V1(op, BF16_F32, BF16, F32, BF16) DEF_V1(op, F16_F32, F16, F32, F16)                   \
            DEF_V1(op, F32_BF16, F32, BF16, BF16)                                                  \
                DEF_V1(op, F32_F16, F32, F16, F16) static PR_AVX512 void v_##op##_mix(             \
                    const void *a, int64_t sa, const void *b, int64_t sb, void *o, int64_t n,      \
                    const void *pv) {                                                              \
        const bparam *p = pv;                                                                      \
        v_bin_t(op, p->da, p->db, p->dout, a, sa, b, sb, o, n);                                    \
    }
BOPS(DEF_V)
#define ENT_V(op)                                                                                  \
    [op] = {v_##op##_F32,     v_##op##_BF16,     v_##op##_F16,     v_##op##_BF16_F32,              \
            v_##op##_F16_F32, v_##op##_F32_BF16, v_##op##_F32_F16, v_##op##_mix},
static const bin_fn v_tab[B_COUNT][NCOL] = {BOPS(ENT_V)};

#define DEF_VP1(k, dt)                                                                             \
    static PR_AVX512 void vp_##k##_##dt(const void *a, int64_t sa, const void *b, int64_t sb,      \
                                        void *o, int64_t n, const void *p) {                       \
        (void)sa, (void)b, (void)sb;                                                               \
        v_pow_t(k, DT_##dt, a, o, n, ((const bparam *)p)->e);                                      \
    }
#define DEF_VP(k) DEF_VP1(k, F32) DEF_VP1(k, BF16) DEF_VP1(k, F16)
POWS(DEF_VP)
#define ENT_VP(k) [k] = {vp_##k##_F32, vp_##k##_BF16, vp_##k##_F16},
static const bin_fn vp_tab[P_COUNT][3] = {POWS(ENT_VP) ENT_SP(P_GEN)};
#endif

static int dt_index(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 ? 0 : dt == PRECIS_BFLOAT16 ? 1 : dt == PRECIS_FLOAT16 ? 2 : -1;
}

/* Column of s_tab / v_tab for operand dtypes a, b and output dtype o. */
static int bin_col(pr_dtype a, pr_dtype b, pr_dtype o) {
    if (a == b && b == o) return dt_index(a);
    if (a == o && b == PRECIS_FLOAT32)
        return o == PRECIS_BFLOAT16 ? 3 : o == PRECIS_FLOAT16 ? 4 : 7;
    if (b == o && a == PRECIS_FLOAT32)
        return o == PRECIS_BFLOAT16 ? 5 : o == PRECIS_FLOAT16 ? 6 : 7;
    return 7;
}

/* ------------------------------------------------------------------ plan */

typedef struct bplan {
    int nr;                     /* merged dims, [0] innermost */
    int64_t cd[PR_MAX_RANK];    /* their sizes */
    int64_t cs[2][PR_MAX_RANK]; /* operand strides (elements) */
    int64_t n, rows;            /* cd[0], numel / n */
} bplan;

/* Element strides of b's logical dims in its storage order. */
static void own_strides(const pr_buf *b, int layout, int64_t *st) {
    if (b->rank == 4 && layout == PR_LAYOUT_NHWC) {
        int64_t C = b->dims[1], H = b->dims[2], W = b->dims[3];
        st[0] = H * W * C, st[1] = 1, st[2] = W * C, st[3] = C;
        return;
    }
    pr_strides(b->rank, b->dims, st);
}

static precis_status make_plan(pr_kernel *k, const pr_buf *const in[2], const int lay[2],
                               const pr_buf *o, int out_lay, bplan *pl) {
    int r = o->rank;
    int ord[PR_MAX_RANK];
    for (int d = 0; d < r; d++) ord[d] = d;
    if (r == 4 && out_lay == PR_LAYOUT_NHWC) ord[1] = 2, ord[2] = 3, ord[3] = 1;
    int64_t st[2][PR_MAX_RANK];
    for (int j = 0; j < 2; j++) {
        const pr_buf *b = in[j];
        int64_t own[PR_MAX_RANK];
        if (b->rank > r)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "input %d has rank %d > output rank %d", j,
                              b->rank, r);
        own_strides(b, lay[j], own);
        for (int d = 0; d < r; d++) {
            int jd = d - (r - b->rank);
            int64_t dim = jd >= 0 ? b->dims[jd] : 1;
            if (dim != 1 && dim != o->dims[d])
                return pr_kernelf(k, PRECIS_ERR_SHAPE,
                                  "input %d dim %d (%lld) does not broadcast to %lld", j, jd,
                                  (long long)dim, (long long)o->dims[d]);
            st[j][d] = dim == 1 ? 0 : own[jd];
        }
    }
    int nr = 0;
    for (int i = r - 1; i >= 0; i--) {
        int d = ord[i];
        if (o->dims[d] == 1) continue;
        bool merge = nr > 0;
        for (int j = 0; merge && j < 2; j++) merge = st[j][d] == pl->cs[j][nr - 1] * pl->cd[nr - 1];
        if (merge) {
            pl->cd[nr - 1] *= o->dims[d];
            continue;
        }
        pl->cd[nr] = o->dims[d];
        for (int j = 0; j < 2; j++) pl->cs[j][nr] = st[j][d];
        nr++;
    }
    if (nr == 0) {
        pl->cd[0] = 1;
        pl->cs[0][0] = pl->cs[1][0] = 0;
        nr = 1;
    }
    pl->nr = nr;
    pl->n = pl->cd[0];
    pl->rows = pl->n ? o->numel / pl->n : 0;
    return PRECIS_OK;
}

typedef struct bjob {
    const bplan *pl;
    bin_fn fn;
    const char *a, *b;
    char *o;
    size_t ea, eb, eo;
    const void *p;
} bjob;

/* Rows [r0, r1), columns [c0, c1) of each. */
static void run_rows(const bjob *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const bplan *pl = j->pl;
    int64_t idx[PR_MAX_RANK] = {0}, oa = 0, ob = 0, rem = r0;
    for (int d = 1; d < pl->nr; d++) {
        idx[d] = rem % pl->cd[d];
        rem /= pl->cd[d];
        oa += idx[d] * pl->cs[0][d];
        ob += idx[d] * pl->cs[1][d];
    }
    int64_t sa = pl->cs[0][0], sb = pl->cs[1][0];
    for (int64_t row = r0; row < r1; row++) {
        j->fn(j->a + (oa + c0 * sa) * (int64_t)j->ea, sa, j->b + (ob + c0 * sb) * (int64_t)j->eb,
              sb, j->o + (row * pl->n + c0) * (int64_t)j->eo, c1 - c0, j->p);
        for (int d = 1; d < pl->nr; d++) {
            oa += pl->cs[0][d];
            ob += pl->cs[1][d];
            if (++idx[d] < pl->cd[d]) break;
            oa -= pl->cs[0][d] * pl->cd[d];
            ob -= pl->cs[1][d] * pl->cd[d];
            idx[d] = 0;
        }
    }
}

#define CHUNK 16384

static void run_job(const bjob *j, int64_t numel, int nt) {
    const bplan *pl = j->pl;
    if (nt <= 1 || numel < PR_CPU_PAR_MIN) {
        run_rows(j, 0, pl->rows, 0, pl->n);
        return;
    }
    if (pl->rows >= 4 * (int64_t)nt) {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), T = omp_get_num_threads();
            int64_t r0 = pl->rows * t / T, r1 = pl->rows * (t + 1) / T;
            if (r1 > r0) run_rows(j, r0, r1, 0, pl->n);
        }
        return;
    }
    int64_t pieces = (pl->n + CHUNK - 1) / CHUNK, items = pl->rows * pieces;
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t it = 0; it < items; it++) {
        int64_t row = it / pieces, c0 = (it % pieces) * CHUNK;
        int64_t c1 = c0 + CHUNK < pl->n ? c0 + CHUNK : pl->n;
        run_rows(j, row, row + 1, c0, c1);
    }
}

precis_status pr_cpu_bin_run(pr_kernel *k, const pr_buf *a, int lay_a, const pr_buf *b, int lay_b,
                             pr_buf *o, int lay_o, pr_cpu_bin_row fn, pr_cpu_bin_row strided,
                             const void *param, int threads) {
    if (o->numel == 0) return PRECIS_OK;
    const pr_buf *in[2] = {a, b};
    const int lay[2] = {lay_a, lay_b};
    bplan pl;
    precis_status st = make_plan(k, in, lay, o, lay_o, &pl);
    if (st) return st;
    int64_t sa = pl.cs[0][0], sb = pl.cs[1][0];
    if ((sa != 0 && sa != 1) || (sb != 0 && sb != 1)) fn = strided;
    bjob j = {&pl,
              fn,
              a->data,
              b->data,
              o->data,
              pr_dtype_size(a->dtype),
              pr_dtype_size(b->dtype),
              pr_dtype_size(o->dtype),
              param};
    run_job(&j, o->numel, threads);
    return PRECIS_OK;
}

/* ------------------------------------------------------------------ impl */

typedef struct bstate {
    int op;
    bool avx512;
    int lay[2], out_lay;
} bstate;

static int op_of(const pr_node *n) {
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return -1;
    switch (n->op) {
    case PR_OP_Add: return B_ADD;
    case PR_OP_Sub: return B_SUB;
    case PR_OP_Mul: return B_MUL;
    case PR_OP_Div: return B_DIV;
    case PR_OP_Max: return B_MAX;
    case PR_OP_Min: return B_MIN;
    case PR_OP_Pow: return B_POW;
    default: return -1;
    }
}

int pr_cpu_layout_of(const pr_tensor *t) {
    if (!t || (t->flags & PR_T_INIT) || (t->rank >= 0 && t->rank != 4)) return PR_LAYOUT_PLAIN;
    return t->layout;
}

static bool b_supports(const pr_graph *g, const pr_node *n) {
    int op = op_of(n);
    const pr_tensor *a = pr_node_tin(g, n, 0), *b = pr_node_tin(g, n, 1), *y = pr_node_tout(g, n, 0);
    if (op < 0 || !a || !b || !y || n->n_inputs != 2 || n->n_outputs != 1) return false;
    if (n->opset < 7 && pr_attr_int(n, "broadcast", 0)) return false; /* legacy axis rules */
    if (!pr_cpu_float_dt(a->dtype)) return false;
    if (op == B_POW) {
        /* a constant scalar exponent of any numeric dtype */
        if (!(b->flags & PR_T_INIT) || !b->data || b->rank < 0 || pr_numel(b->rank, b->dims) != 1)
            return false;
        const pr_dtype_traits *tb = pr_dtype_info(b->dtype);
        return tb->size && (tb->is_float || tb->is_int) &&
               pr_cpu_layout_of(a) == pr_cpu_layout_of(y);
    }
    return pr_cpu_float_dt(b->dtype);
}

/* All dims 1 except at most the channel dim (dim 1 of a right-aligned
 * rank-4 shape). */
static bool per_channel(const pr_tensor *t) {
    if (t->rank < 0 || t->rank > 4) return false;
    for (int d = 0; d < t->rank; d++) {
        int ld = d + 4 - t->rank; /* logical dim in N,C,H,W */
        if (ld != 1 && t->dims[d] != 1) return false;
    }
    return true;
}

bool pr_cpu_bin_nhwc_operand(const pr_tensor *t) {
    if (t->rank == 4 && !(t->flags & PR_T_INIT)) return true; /* becomes NHWC with the rest */
    return per_channel(t);
}

static bool b_nhwc_ok(const pr_graph *g, const pr_node *n) {
    if (!b_supports(g, n)) return false;
    int op = op_of(n);
    for (int i = 0; i < (op == B_POW ? 1 : 2); i++)
        if (!pr_cpu_bin_nhwc_operand(pr_node_tin(g, n, i))) return false;
    return true;
}

static bool same_dims(const pr_tensor *a, const pr_tensor *b) {
    if (a->rank < 0 || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] || a->dims[d] == PR_DIM_UNKNOWN) return false;
    return true;
}

static int b_inplace(const pr_graph *g, const pr_node *n) {
    const pr_tensor *a = pr_node_tin(g, n, 0), *y = pr_node_tout(g, n, 0);
    if (op_of(n) < 0 || !a || !y || (a->flags & PR_T_INIT)) return -1;
    if (!same_dims(a, y) || a->dtype != y->dtype) return -1;
    return pr_cpu_layout_of(a) == pr_cpu_layout_of(y) ? 0 : -1;
}

static precis_status b_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                               void **state, pr_err *e) {
    (void)cfg;
    bstate *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->op = op_of(n);
#ifdef PR_CPU_X86
    s->avx512 = pr_cpu_use_avx512();
#endif
    s->lay[0] = pr_cpu_layout_of(pr_node_tin(g, n, 0));
    s->lay[1] = pr_cpu_layout_of(pr_node_tin(g, n, 1));
    s->out_lay = pr_cpu_layout_of(pr_node_tout(g, n, 0));
    *state = s;
    return PRECIS_OK;
}

static precis_status run_pow(const bstate *s, pr_kernel *k, const pr_buf *a, const pr_buf *b,
                             pr_buf *o, int nt) {
    int ia = dt_index(a->dtype);
    if (ia < 0 || a->dtype != o->dtype || a->numel != o->numel || b->numel != 1 ||
        !pr_dtype_size(b->dtype))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "Pow of %s by %lld elements of %s",
                          pr_dtype_name(a->dtype), (long long)b->numel, pr_dtype_name(b->dtype));
    double ev = pr_load_f64(b->data, b->dtype, 0);
    bparam p = {a->dtype, b->dtype, o->dtype, (float)ev};
    int kind = ev == 2 ? P_SQ : ev == 0.5 ? P_SQRT : ev == 3 ? P_CUBE : ev == -1 ? P_RECIP : P_GEN;
    if (ev == 1) {
        if (o->data != a->data) memcpy(o->data, a->data, o->nbytes);
        return PRECIS_OK;
    }
    bplan pl = {.nr = 1, .cd = {a->numel}, .n = a->numel, .rows = 1};
    bjob j = {&pl, sp_tab[kind][ia],        a->data, a->data, o->data, pr_dtype_size(a->dtype),
              0,   pr_dtype_size(o->dtype), &p};
#ifdef PR_CPU_X86
    if (s->avx512) j.fn = vp_tab[kind][ia];
#else
    (void)s;
#endif
    pl.cs[0][0] = 1;
    run_job(&j, a->numel, nt);
    return PRECIS_OK;
}

static precis_status b_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const bstate *s = state;
    const pr_buf *a = pr_kin(k, 0), *b = pr_kin(k, 1);
    pr_buf *o = k->n_out > 0 ? k->out[0] : NULL;
    if (!a || !b || !o) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output is missing");
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    if (s->op == B_POW) return run_pow(s, k, a, b, o, nt);
    int ia = dt_index(a->dtype), ib = dt_index(b->dtype), io = dt_index(o->dtype);
    if (ia < 0 || ib < 0 || io < 0)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtypes %s, %s -> %s are not supported",
                          pr_dtype_name(a->dtype), pr_dtype_name(b->dtype),
                          pr_dtype_name(o->dtype));
    bparam p = {a->dtype, b->dtype, o->dtype, 0};
    int col = bin_col(a->dtype, b->dtype, o->dtype);
    bin_fn fn = s_tab[s->op][col];
#ifdef PR_CPU_X86
    if (s->avx512) fn = v_tab[s->op][col];
#endif
    return pr_cpu_bin_run(k, a, s->lay[0], b, s->lay[1], o, s->out_lay, fn, st_tab[s->op], &p, nt);
}

static const char *b_describe(void *state) {
    return ((const bstate *)state)->avx512 ? "binary.avx512" : "binary.scalar";
}

static void b_destroy(void *state) { free(state); }

const pr_cpu_impl pr_cpu_impl_binary = {
    .name = "binary",
    .supports = b_supports,
    .nhwc_ok = b_nhwc_ok,
    .inplace_input = b_inplace,
    .prepare = b_prepare,
    .run = b_run,
    .describe = b_describe,
    .destroy = b_destroy,
};
