/* QBinary (ops.inc): INT8 Add, Sub, Mul (kernels.h).
 *
 *   R = act(kind(a_scale * A, b_scale * B)),  Y = R (float) or
 *   Y = saturate(round_half_even(R * (1 / y_scale))) (int8/uint8)
 * computed in float32 with the ref's operations in the ref's order (real
 * operands as scale * (float)q, the op, the activation, the multiplication
 * by the reciprocal of y_scale, rounding half to even): results
 * agree with ref_QBinary bit for bit but for Sigmoid, Tanh, Gelu and Swish
 * activations (pv_act's ~1e-6). Operands are int8, uint8 or float
 * (float32/bfloat16/float16, their scale ignored); outputs float32 or
 * int8/uint8 as y_type says.
 *
 * Broadcasting and layouts come from the binary kernels' driver
 * (pr_cpu_bin_run): same shape, per-channel (plain: rows of H*W against one
 * value), scalar, and any numpy broadcast; per-channel operands on NHWC
 * tensors run against a tile of their real values (qb_run_tiled). Rows where
 * every operand has stride 1 or 0 run vectorized (AVX-512; row functions
 * instantiated per op for int8/uint8/float32 operands and outputs, plus one
 * generic per op for bfloat16/float16), others (operands of different layouts)
 * and PRECIS_CPU_ISA=scalar run portable C. In place on input 0 when it has
 * the output's shape, layout and element size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

enum { QB_ADD, QB_SUB, QB_MUL, QB_COUNT };

typedef struct qbparam {
    pr_dtype da, db, dout;
    float sa, sb, inv; /* operand scales (1 for float operands), 1 / y_scale */
    float lo, hi;      /* the output byte type's range */
    pr_act act;
    int op;
} qbparam;

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

/* ------------------------------------------------------------------ scalar */

PR_INLINE float qs_load(const void *p, int64_t i, pr_dtype dt, float s) {
    return q8(dt) ? ps_q8_load(p, i, dt == PRECIS_UINT8) * s : ps_load(p, i, dt);
}

PR_INLINE float qs_op(int op, float x, float y) {
    return op == QB_ADD ? x + y : op == QB_SUB ? x - y : x * y;
}

/* Any strides, any dtypes: the portable path and the strided rows. */
static void qb_row_scalar(const void *a, int64_t sa, const void *b, int64_t sb, void *o, int64_t n,
                          const void *pv) {
    const qbparam *p = pv;
    for (int64_t i = 0; i < n; i++) {
        float r = qs_op(p->op, qs_load(a, i * sa, p->da, p->sa), qs_load(b, i * sb, p->db, p->sb));
        r = pr_act_apply(&p->act, r);
        if (p->dout == PRECIS_UINT8)
            ((uint8_t *)o)[i] = (uint8_t)ps_q8_round(r * p->inv, p->lo, p->hi);
        else if (p->dout == PRECIS_INT8)
            ((int8_t *)o)[i] = (int8_t)ps_q8_round(r * p->inv, p->lo, p->hi);
        else
            ps_store(o, i, p->dout, r);
    }
}

/* ------------------------------------------------------------------ AVX-512 */
#ifdef PR_CPU_X86

/* Activations other than none, out of line (rare; keeps the rows small). */
static PR_AVX512 __attribute__((noinline)) __m512 qv_act(const pr_act *a, __m512 x) {
    return pv_act(a, x);
}

PR_VINLINE __m512 qv_load(const void *p, int64_t i, pr_dtype dt, __m512 s) {
    return q8(dt) ? _mm512_mul_ps(pv_q8_load(p, i, dt == PRECIS_UINT8), s) : pv_load(p, i, dt);
}
PR_VINLINE __m512 qv_load_m(const void *p, int64_t i, pr_dtype dt, __m512 s, __mmask16 m) {
    return q8(dt) ? _mm512_mul_ps(pv_q8_load_m(p, i, dt == PRECIS_UINT8, m), s)
                  : pv_load_m(p, i, dt, m);
}

PR_VINLINE __m512 qv_fin(int op, __m512 x, __m512 y, const qbparam *p) {
    __m512 r = op == QB_ADD ? _mm512_add_ps(x, y)
               : op == QB_SUB ? _mm512_sub_ps(x, y)
                              : _mm512_mul_ps(x, y);
    return p->act.kind == PR_ACT_NONE ? r : qv_act(&p->act, r);
}

PR_VINLINE void qv_store(void *o, int64_t i, pr_dtype dt, __m512 r, const qbparam *p) {
    if (q8(dt))
        pv_q8_store(o, i,
                    pv_q8_round(_mm512_mul_ps(r, _mm512_set1_ps(p->inv)), _mm512_set1_ps(p->lo),
                                _mm512_set1_ps(p->hi)));
    else
        pv_store(o, i, dt, r);
}
PR_VINLINE void qv_store_m(void *o, int64_t i, pr_dtype dt, __m512 r, const qbparam *p,
                           __mmask16 m) {
    if (q8(dt))
        pv_q8_store_m(o, i,
                      pv_q8_round(_mm512_mul_ps(r, _mm512_set1_ps(p->inv)), _mm512_set1_ps(p->lo),
                                  _mm512_set1_ps(p->hi)),
                      m);
    else
        pv_store_m(o, i, dt, r, m);
}

/* Strides sa, sb in {0, 1}: a stride-0 operand is one value for the row. */
PR_VINLINE void qv_row_t(int op, pr_dtype da, pr_dtype db, pr_dtype dout, const void *a, int64_t sa,
                         const void *b, int64_t sb, void *o, int64_t n, const qbparam *p) {
    const __m512 vsa = _mm512_set1_ps(p->sa), vsb = _mm512_set1_ps(p->sb);
    /* the value of a stride-0 operand (loaded where needed) */
    const __m512 xa = sa ? vsa : _mm512_set1_ps(qs_load(a, 0, da, p->sa));
    const __m512 xb = sb ? vsb : _mm512_set1_ps(qs_load(b, 0, db, p->sb));
    int64_t i = 0;
    if (!sa && !sb) {
        const __m512 r = qv_fin(op, xa, xb, p);
        for (; i + 16 <= n; i += 16) qv_store(o, i, dout, r, p);
        if (i < n) qv_store_m(o, i, dout, r, p, pv_tail(n - i));
        return;
    }
    if (sa && sb) {
        for (; i + 16 <= n; i += 16)
            qv_store(o, i, dout, qv_fin(op, qv_load(a, i, da, vsa), qv_load(b, i, db, vsb), p), p);
    } else if (sa) {
        for (; i + 16 <= n; i += 16)
            qv_store(o, i, dout, qv_fin(op, qv_load(a, i, da, vsa), xb, p), p);
    } else {
        for (; i + 16 <= n; i += 16)
            qv_store(o, i, dout, qv_fin(op, xa, qv_load(b, i, db, vsb), p), p);
    }
    if (i < n) {
        const __mmask16 m = pv_tail(n - i);
        __m512 x = sa ? qv_load_m(a, i, da, vsa, m) : xa, y = sb ? qv_load_m(b, i, db, vsb, m) : xb;
        qv_store_m(o, i, dout, qv_fin(op, x, y, p), p, m);
    }
}

#define DT_S8 PRECIS_INT8
#define DT_U8 PRECIS_UINT8
#define DT_F32 PRECIS_FLOAT32
#define QB_OPS(X) X(QB_ADD) X(QB_SUB) X(QB_MUL)

#define DEF_QV1(op, A, B, O)                                                                       \
    static PR_AVX512 void qv_##op##_##A##_##B##_##O(const void *a, int64_t sa, const void *b,      \
                                                   int64_t sb, void *o, int64_t n,                 \
                                                   const void *p) {                                \
        qv_row_t(op, DT_##A, DT_##B, DT_##O, a, sa, b, sb, o, n, p);                               \
    }
#define DEF_QV_B(op, A, O) DEF_QV1(op, A, S8, O) DEF_QV1(op, A, U8, O) DEF_QV1(op, A, F32, O)
#define DEF_QV_O(op, O) DEF_QV_B(op, S8, O) DEF_QV_B(op, U8, O) DEF_QV_B(op, F32, O)
#define DEF_QV(op)                                                                                 \
    DEF_QV_O(op, S8) DEF_QV_O(op, U8) DEF_QV_O(op, F32) static PR_AVX512 void qv_##op##_mix(       \
        const void *a, int64_t sa, const void *b, int64_t sb, void *o, int64_t n,                  \
        const void *pv) {                                                                          \
        const qbparam *p = pv;                                                                     \
        qv_row_t(op, p->da, p->db, p->dout, a, sa, b, sb, o, n, p);                                \
    }
QB_OPS(DEF_QV)

/* [op][a][b][out], each int8, uint8 or float32 */
#define ENT_QV_O(op, A, B)                                                                         \
    {qv_##op##_##A##_##B##_S8, qv_##op##_##A##_##B##_U8, qv_##op##_##A##_##B##_F32}
#define ENT_QV_B(op, A) {ENT_QV_O(op, A, S8), ENT_QV_O(op, A, U8), ENT_QV_O(op, A, F32)}
#define ENT_QV(op) [op] = {ENT_QV_B(op, S8), ENT_QV_B(op, U8), ENT_QV_B(op, F32)},
static const pr_cpu_bin_row qv_tab[QB_COUNT][3][3][3] = {QB_OPS(ENT_QV)};
#define ENT_QVM(op) [op] = qv_##op##_mix,
static const pr_cpu_bin_row qv_mix[QB_COUNT] = {QB_OPS(ENT_QVM)};

static int qv_index(pr_dtype dt) {
    return dt == PRECIS_INT8 ? 0 : dt == PRECIS_UINT8 ? 1 : dt == PRECIS_FLOAT32 ? 2 : -1;
}

/* The row function for these dtypes. */
static pr_cpu_bin_row qv_pick(int op, pr_dtype da, pr_dtype db, pr_dtype dout) {
    int ia = qv_index(da), ib = qv_index(db), io = qv_index(dout);
    if (ia < 0 || ib < 0 || io < 0) return qv_mix[op];
    return qv_tab[op][ia][ib][io];
}

/* The SE gate: o = round(((fs * f) * t) * inv) for int8/uint8 f and o and a
 * float tile t, n elements (any n), with the tile's values checked by the
 * caller (finite, |fs * 256 * t * inv| < 2^30): no NaN lanes
 * and no int32 overflow, so the clamp to the byte range is left to the
 * saturating packs (int32 -> int16 -> int8/uint8), which give the same
 * bytes. Per 64 values 4 widening loads, 4 conversions, 12 multiplications,
 * 4 rounding conversions and 3 packs + a permutation, against 4 more
 * compares and 8 more min/max in qv_row_t. */
static PR_AVX512 void qv_mul_tile(const void *f, pr_dtype fdt, float fs, const float *t, void *o,
                                  pr_dtype odt, int64_t n, float inv) {
    const __m512 vs = _mm512_set1_ps(fs), vi = _mm512_set1_ps(inv);
    const bool fu = fdt == PRECIS_UINT8, ou = odt == PRECIS_UINT8;
    const uint8_t *fb = f;
    uint8_t *ob = o;
    const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#define QV_MT(j)                                                                                   \
    _mm512_cvt_roundps_epi32(                                                                      \
        _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(pv_q8_load(fb, i + 16 * (j), fu), vs),         \
                                    _mm512_loadu_ps(t + i + 16 * (j))),                            \
                      vi),                                                                         \
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i p01 = _mm512_packs_epi32(QV_MT(0), QV_MT(1));
        const __m512i p23 = _mm512_packs_epi32(QV_MT(2), QV_MT(3));
        const __m512i b = ou ? _mm512_packus_epi16(p01, p23) : _mm512_packs_epi16(p01, p23);
        _mm512_storeu_si512((void *)(ob + i), _mm512_permutexvar_epi32(perm, b));
    }
#undef QV_MT
    const __m512 lo = _mm512_set1_ps(ou ? 0.0f : -128.0f), hi = _mm512_set1_ps(ou ? 255.0f : 127.0f);
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : pv_tail(n - i);
        const __m512 r = _mm512_mul_ps(
            _mm512_mul_ps(_mm512_mul_ps(pv_q8_load_m(fb, i, fu, m), vs), _mm512_maskz_loadu_ps(m, t + i)),
            vi);
        pv_q8_store_m(ob, i, pv_q8_round(r, lo, hi), m);
    }
}
#endif

/* ------------------------------------------------------------------ impl */

typedef struct qbstate {
    int op;
    bool avx512;
    int lay[2], out_lay;
    float sa, sb, inv;
    pr_act act;
} qbstate;

static int op_of(const pr_node *n) {
    if (n->op != PR_OP_QBinary) return -1;
    switch (pr_op_lookup(pr_attr_str(n, "kind", ""))) {
    case PR_OP_Add: return QB_ADD;
    case PR_OP_Sub: return QB_SUB;
    case PR_OP_Mul: return QB_MUL;
    default: return -1;
    }
}

static bool scale_ok(float s) { return s > 0.0f && isfinite(s); }

/* Operand dtype ok, and its scale when quantized. */
static bool operand_ok(const pr_tensor *t, const pr_node *n, const char *scale) {
    if (!t) return false;
    if (q8(t->dtype)) return scale_ok(pr_attr_float(n, scale, 0.0f));
    return pr_cpu_float_dt(t->dtype);
}

static bool qb_supports(const pr_graph *g, const pr_node *n) {
    const pr_tensor *y = pr_node_tout(g, n, 0);
    pr_act act;
    if (op_of(n) < 0 || n->n_inputs != 2 || n->n_outputs != 1 || !y) return false;
    if (!pr_act_from_node(n, "act", &act) || pr_attr_str(n, "act2", "")[0]) return false;
    if (!operand_ok(pr_node_tin(g, n, 0), n, "a_scale") || !operand_ok(pr_node_tin(g, n, 1), n, "b_scale"))
        return false;
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    if (yt == PRECIS_FLOAT32) return y->dtype == PRECIS_UNDEFINED || y->dtype == PRECIS_FLOAT32;
    return q8((pr_dtype)yt) && scale_ok(pr_attr_float(n, "y_scale", 0.0f)) &&
           (y->dtype == PRECIS_UNDEFINED || y->dtype == (pr_dtype)yt);
}

static bool qb_nhwc_ok(const pr_graph *g, const pr_node *n) {
    return qb_supports(g, n) && pr_cpu_bin_nhwc_operand(pr_node_tin(g, n, 0)) &&
           pr_cpu_bin_nhwc_operand(pr_node_tin(g, n, 1));
}

static int qb_inplace(const pr_graph *g, const pr_node *n) {
    const pr_tensor *a = pr_node_tin(g, n, 0), *y = pr_node_tout(g, n, 0);
    if (op_of(n) < 0 || !a || !y || (a->flags & PR_T_INIT) || a->rank < 0 || a->rank != y->rank)
        return -1;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != y->dims[d] || a->dims[d] == PR_DIM_UNKNOWN) return -1;
    if (pr_dtype_size(a->dtype) != pr_dtype_size(y->dtype)) return -1;
    return pr_cpu_layout_of(a) == pr_cpu_layout_of(y) ? 0 : -1;
}

static precis_status qb_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    (void)cfg;
    if (!qb_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by qbinary",
                       n->name, n->op_type);
    qbstate *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->op = op_of(n);
#ifdef PR_CPU_X86
    s->avx512 = pr_cpu_use_avx512();
#endif
    s->lay[0] = pr_cpu_layout_of(pr_node_tin(g, n, 0));
    s->lay[1] = pr_cpu_layout_of(pr_node_tin(g, n, 1));
    s->out_lay = pr_cpu_layout_of(pr_node_tout(g, n, 0));
    s->sa = pr_attr_float(n, "a_scale", 1.0f);
    s->sb = pr_attr_float(n, "b_scale", 1.0f);
    s->inv = 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    pr_act_from_node(n, "act", &s->act);
    *state = s;
    return PRECIS_OK;
}

/* Is v (rank <= 4) [N or 1, C, 1, 1] right-aligned against o's N, C? */
static bool per_channel_of(const pr_buf *v, const pr_buf *o) {
    int64_t d[4] = {1, 1, 1, 1};
    if (v->rank > 4) return false;
    for (int i = 0; i < v->rank; i++) d[4 - v->rank + i] = v->dims[i];
    return d[2] == 1 && d[3] == 1 && d[1] == o->dims[1] && (d[0] == 1 || d[0] == o->dims[0]);
}

/* One tile task of qb_run_tiled: image q / segs, T values from (q % segs) * T. */
typedef struct qb_tiles {
    const pr_buf *f;
    pr_buf *o;
    const float *tile;
    const qbparam *p;
    pr_cpu_bin_row fn;
    pr_dtype fd;
    float fs;
    int64_t E, T, nc, segs;
    size_t ef, eo;
    int jc;
    bool fast;
} qb_tiles;

static void qb_tile(const qb_tiles *t, int64_t q) {
    const int64_t n = q / t->segs, i0 = (q % t->segs) * t->T,
                  len = t->E - i0 < t->T ? t->E - i0 : t->T;
    const char *fp = (const char *)t->f->data + (size_t)(n * t->E + i0) * t->ef;
    const float *tp = t->tile + (t->nc > 1 ? n * t->T : 0);
    char *op = (char *)t->o->data + (size_t)(n * t->E + i0) * t->eo;
#ifdef PR_CPU_X86
    if (t->fast) {
        qv_mul_tile(fp, t->fd, t->fs, tp, op, t->p->dout, len, t->p->inv);
        return;
    }
#endif
    if (t->jc)
        t->fn(fp, 1, tp, 1, op, len, t->p);
    else
        t->fn(tp, 1, fp, 1, op, len, t->p);
}

/* NHWC output, one operand of its shape and layout, the other per channel
 * ([N|1, C, 1, 1]): the binary driver would make rows of C elements, one
 * call each. Instead the per-channel operand's real values are tiled to 16
 * pixels (16 C floats, a whole number of vectors; fewer for smaller
 * images) per image, and rows of 16 pixels run against the tile. False: the pattern does not apply (or no
 * scratch): nothing done. */
static bool qb_run_tiled(const qbstate *s, const pr_buf *a, const pr_buf *b, pr_buf *o,
                         const qbparam *p0, pr_cpu_exec *xc, int nt) {
    if (o->rank != 4 || o->dims[1] < 2 || o->numel == 0) return false;
    int jc; /* the per-channel operand */
    if (s->lay[0] == PR_LAYOUT_NHWC && a->rank == 4 && a->numel == o->numel && per_channel_of(b, o))
        jc = 1;
    else if (s->lay[1] == PR_LAYOUT_NHWC && b->rank == 4 && b->numel == o->numel &&
             per_channel_of(a, o))
        jc = 0;
    else
        return false;
    const pr_buf *c = jc ? b : a, *f = jc ? a : b;
    const int64_t N = o->dims[0], C = o->dims[1], E = o->numel / N, P = E / C;
    const int64_t T = (P < 16 ? P : 16) * C; /* tile: up to 16 pixels */
    const int64_t nc = c->numel / C;         /* 1 or N tiles */
    float *tile = pr_cpu_scratch(xc, (size_t)(nc * T) * sizeof(float));
    if (!tile) return false;
    const pr_dtype cd = jc ? p0->db : p0->da;
    const float cs = jc ? p0->sb : p0->sa;
    /* int8 x per-channel gate -> int8 (the SE blocks' Mul): qv_mul_tile
     * when every gate value keeps the products finite and in int32 */
    const pr_dtype fd = jc ? p0->da : p0->db;
    const float fs = jc ? p0->sa : p0->sb;
    bool fast = s->avx512 && p0->op == QB_MUL && p0->act.kind == PR_ACT_NONE && q8(fd) &&
                q8(p0->dout);
    const double bound = 1073741824.0 / (256.0 * (double)fs * (double)p0->inv);
    for (int64_t n = 0; n < nc; n++) {
        float *t = tile + n * T;
        for (int64_t j = 0; j < C; j++) {
            t[j] = qs_load(c->data, n * C + j, cd, cs);
            fast = fast && isfinite(t[j]) && fabs((double)t[j]) < bound;
        }
        for (int64_t j = C; j < T; j *= 2) /* replicate: doubling copies */
            memcpy(t + j, t, (size_t)(T - j < j ? T - j : j) * sizeof(float));
    }
    (void)fast;
    qbparam p = *p0;
    if (jc) p.db = PRECIS_FLOAT32, p.sb = 1.0f;
    else p.da = PRECIS_FLOAT32, p.sa = 1.0f;
    pr_cpu_bin_row fn = qb_row_scalar;
#ifdef PR_CPU_X86
    if (s->avx512) fn = qv_pick(s->op, p.da, p.db, p.dout);
#endif
    const size_t ef = pr_dtype_size(f->dtype), eo = pr_dtype_size(o->dtype);
    const int64_t segs = (E + T - 1) / T, tasks = N * segs;
    if (o->numel < PR_CPU_PAR_MIN) nt = 1;
    const qb_tiles t = {f, o, tile, &p, fn, fd, fs, E, T, nc, segs, ef, eo, jc, fast};
    if (nt < 2) { /* no region: even a serial one costs ~0.3 us (NOTES.md) */
        for (int64_t q = 0; q < tasks; q++) qb_tile(&t, q);
        return true;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t q = 0; q < tasks; q++) qb_tile(&t, q);
    return true;
}

static precis_status qb_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const qbstate *s = state;
    const pr_buf *a = pr_kin(k, 0), *b = pr_kin(k, 1);
    pr_buf *o = k->n_out > 0 ? k->out[0] : NULL;
    if (!a || !b || !o) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output is missing");
    bool ok_a = q8(a->dtype) || pr_cpu_float_dt(a->dtype);
    bool ok_b = q8(b->dtype) || pr_cpu_float_dt(b->dtype);
    if (!ok_a || !ok_b || (!q8(o->dtype) && o->dtype != PRECIS_FLOAT32))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtypes %s, %s -> %s are not supported",
                          pr_dtype_name(a->dtype), pr_dtype_name(b->dtype),
                          pr_dtype_name(o->dtype));
    qbparam p = {a->dtype,
                 b->dtype,
                 o->dtype,
                 q8(a->dtype) ? s->sa : 1.0f,
                 q8(b->dtype) ? s->sb : 1.0f,
                 s->inv,
                 o->dtype == PRECIS_UINT8 ? 0.0f : -128.0f,
                 o->dtype == PRECIS_UINT8 ? 255.0f : 127.0f,
                 s->act,
                 s->op};
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    pr_cpu_bin_row fn = qb_row_scalar;
#ifdef PR_CPU_X86
    if (s->avx512) fn = qv_pick(s->op, p.da, p.db, p.dout);
#endif
    if (s->out_lay == PR_LAYOUT_NHWC && xc && qb_run_tiled(s, a, b, o, &p, xc, nt))
        return PRECIS_OK;
    return pr_cpu_bin_run(k, a, s->lay[0], b, s->lay[1], o, s->out_lay, fn, qb_row_scalar, &p,
                          nt);
}

static const char *qb_describe(void *state) {
    return ((const qbstate *)state)->avx512 ? "qbinary.avx512" : "qbinary.scalar";
}

static void qb_destroy(void *state) { free(state); }

const pr_cpu_impl pr_cpu_impl_qbinary = {
    .name = "qbinary",
    .supports = qb_supports,
    .nhwc_ok = qb_nhwc_ok,
    .inplace_input = qb_inplace,
    .prepare = qb_prepare,
    .run = qb_run,
    .describe = qb_describe,
    .destroy = qb_destroy,
};
