/* The squeeze-excitation tail of a fused block (qblock.h): the gate Mul
 * M (T int8/uint8 times a float32 gate per image and channel, requantized)
 * and the 1x1 projection P that reads M's output, as one kernel that never
 * makes M's output. The gate is folded into P's weights, per image:
 *   P(M(T)) = sum_c W[o,c] w_scale[o] (t_scale T[c] g[c]) + B[o] + real Z
 *           = t_scale w_scale[o] sum_c (W[o,c] g[c]) T[c] + ...
 * so u[o,c] = W[o,c] g[c] is requantized per output channel (u's largest
 * magnitude to 127, rounded half to even) and vpdpbusd sums it against T's
 * bytes as q1x1 does (k_q1x1.h; an int8 T biased by 128, -128 * sum(u') in
 * the start). M's rounding of T g to its own int8 grid is replaced by this
 * rounding of the weights: a different INT8 approximation of the same real
 * product, so not bit-exact with the unfused M -> P (tested against ref with
 * a tolerance; cls accuracy in NOTES.md). Per image it costs OC x IC
 * float operations instead of M's H x W x IC. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_q1x1.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/qblock.h"

struct pr_seproj {
    int ti;                 /* M's input holding T (the other is the gate) */
    pr_dtype tdt, ydt, zdt; /* zdt PRECIS_UNDEFINED: no residual */
    int64_t IC, OC, OCv, ICq;
    float t_scale, y_inv, z_scale;
    float *wf;   /* [IC][OC] P's int8 weights as float, transposed */
    float *ws;   /* [OC] */
    float *bias; /* [OC] B / y_scale (0 without B) */
    bool amx;    /* the projection on AMX tiles (sp_amx_ok) */
    int64_t ICs; /* quads of a weight column: ICq, or K rounded to 64 / 4 (AMX) */
};

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static pr_dtype y_type(const pr_node *n) {
    switch (pr_attr_int(n, "y_type", 1)) {
    case 3: return PRECIS_INT8;
    case 2: return PRECIS_UINT8;
    default: return PRECIS_UNDEFINED;
    }
}

static bool pos_finite(float v) { return v > 0.0f && isfinite(v) && isfinite(1.0f / v); }

bool pr_seproj_ok(const pr_graph *g, const pr_node *m, const pr_node *p) {
#ifndef PR_CPU_X86
    (void)g, (void)m, (void)p;
    return false;
#else
    if (!pr_cpu_use_vnni("PRECIS_QBLOCK_SEPROJ")) return false;
    if (m->op != PR_OP_QBinary || strcmp(pr_attr_str(m, "kind", ""), "Mul") != 0 ||
        m->n_inputs != 2 || m->n_outputs != 1 || p->op != PR_OP_QConv || p->n_inputs < 3)
        return false;
    pr_act a;
    if (!pr_act_from_node(m, "act", &a) || a.kind != PR_ACT_NONE) return false;
    const int t3 = m->outputs[0];
    if (t3 < 0 || p->inputs[0] != t3 || (g->tensors[t3].flags & PR_T_OUTPUT)) return false;
    for (int i = 0; i < g->n_nodes; i++) { /* P alone reads M's output (it is never made) */
        const pr_node *n = &g->nodes[i];
        if (n == p || !n->op_type) continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == t3) return false;
    }
    for (int j = 1; j < p->n_inputs; j++)
        if (p->inputs[j] == t3) return false;
    int ti = -1;
    for (int j = 0; j < 2; j++) {
        const pr_tensor *t = pr_node_tin(g, m, j);
        if (t && q8(t->dtype) && t->layout == PR_LAYOUT_NHWC && t->rank == 4) ti = j;
    }
    if (ti < 0) return false;
    const pr_tensor *G = pr_node_tin(g, m, 1 - ti), *T = pr_node_tin(g, m, ti);
    if (!G || G->dtype != PRECIS_FLOAT32 || (G->flags & PR_T_INIT) || G->rank != 4) return false;
    if (!pos_finite(pr_attr_float(m, ti ? "b_scale" : "a_scale", 0.0f))) return false;
    /* P: 1x1, stride 1, group 1, no pads, no act, int8/uint8 out, residual
     * int8/uint8 or none, OC a multiple of 16 up to 64, IC of 4 */
    const pr_tensor *W = pr_node_tin(g, p, 1), *ws = pr_node_tin(g, p, 2);
    const pr_tensor *B = pr_node_tin(g, p, 3), *Z = pr_node_tin(g, p, 4);
    const pr_tensor *Y = pr_node_tout(g, p, 0);
    if (!W || !(W->flags & PR_T_INIT) || !W->data || W->dtype != PRECIS_INT8 || W->rank != 4 ||
        W->dims[2] != 1 || W->dims[3] != 1 || W->dims[1] != T->dims[1] || W->dims[1] % 4 ||
        W->dims[1] > 256 || W->dims[0] % 16 || W->dims[0] > 64 || W->dims[0] < 16)
        return false;
    if (!ws || !(ws->flags & PR_T_INIT) || !ws->data || ws->dtype != PRECIS_FLOAT32 ||
        pr_numel(ws->rank, ws->dims) != W->dims[0])
        return false;
    if (B && (!(B->flags & PR_T_INIT) || !B->data || B->dtype != PRECIS_FLOAT32 ||
              pr_numel(B->rank, B->dims) != W->dims[0]))
        return false;
    if (Z && (!q8(Z->dtype) || Z->layout != PR_LAYOUT_NHWC ||
              !pos_finite(pr_attr_float(p, "z_scale", 0.0f))))
        return false;
    if (!Y || Y->layout != PR_LAYOUT_NHWC || !q8(Y->dtype) || y_type(p) != Y->dtype ||
        !pos_finite(pr_attr_float(p, "y_scale", 0.0f)))
        return false;
    if (pr_attr_int(p, "group", 1) != 1 || !pr_act_from_node(p, "act", &a) ||
        a.kind != PR_ACT_NONE || !pr_act_from_node(p, "act2", &a) || a.kind != PR_ACT_NONE)
        return false;
    const int64_t *v;
    int nv = pr_attr_ints(p, "strides", &v);
    for (int i = 0; i < nv; i++)
        if (v[i] != 1) return false;
    nv = pr_attr_ints(p, "pads", &v);
    for (int i = 0; i < nv; i++)
        if (v[i] != 0) return false;
    const char *ap = pr_attr_str(p, "auto_pad", "NOTSET");
    return strcmp(ap, "NOTSET") == 0 || strcmp(ap, "VALID") == 0;
#endif
}

/* The projection's sums on AMX-INT8 tiles (sp_amx_range) where the CPU has
 * them, unless PRECIS_SEPROJ_AMX=0 (read when the block is made: A/B). */
static bool sp_amx_ok(void) {
    const char *e = getenv("PRECIS_SEPROJ_AMX");
    return !(e && !strcmp(e, "0")) && pr_cpu_qamx_available();
}

bool pr_seproj_amx(const pr_seproj *s) { return s && s->amx; }

void pr_seproj_free(pr_seproj *s) {
    if (!s) return;
    free(s->wf);
    free(s->ws);
    free(s->bias);
    free(s);
}

pr_seproj *pr_seproj_new(const pr_graph *g, const pr_node *m, const pr_node *p) {
    pr_seproj *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ti = pr_node_tin(g, m, 0)->dtype == PRECIS_FLOAT32 ? 1 : 0;
    s->tdt = pr_node_tin(g, m, s->ti)->dtype;
    s->t_scale = pr_attr_float(m, s->ti ? "b_scale" : "a_scale", 1.0f);
    const pr_tensor *W = pr_node_tin(g, p, 1), *ws = pr_node_tin(g, p, 2);
    const pr_tensor *B = pr_node_tin(g, p, 3), *Z = pr_node_tin(g, p, 4);
    s->ydt = pr_node_tout(g, p, 0)->dtype;
    s->zdt = Z ? Z->dtype : PRECIS_UNDEFINED;
    s->OC = W->dims[0];
    s->IC = W->dims[1];
    s->OCv = s->OC / 16;
    s->ICq = s->IC / 4;
    s->amx = sp_amx_ok();
    s->ICs = s->amx ? (s->IC + 63) / 64 * 16 : s->ICq;
    s->y_inv = 1.0f / pr_attr_float(p, "y_scale", 1.0f);
    s->z_scale = Z ? pr_attr_float(p, "z_scale", 1.0f) : 0.0f;
    s->wf = malloc((size_t)(s->OC * s->IC) * sizeof(float));
    s->ws = malloc((size_t)s->OC * sizeof(float));
    s->bias = malloc((size_t)s->OC * sizeof(float));
    if (!s->wf || !s->ws || !s->bias) {
        pr_seproj_free(s);
        return NULL;
    }
    const int8_t *w = W->data;
    for (int64_t o = 0; o < s->OC; o++)
        for (int64_t c = 0; c < s->IC; c++) s->wf[c * s->OC + o] = (float)w[o * s->IC + c];
    for (int64_t o = 0; o < s->OC; o++) {
        s->ws[o] = ((const float *)ws->data)[o];
        s->bias[o] = B ? ((const float *)B->data)[o] * s->y_inv : 0.0f;
    }
    return s;
}

#ifdef PR_CPU_X86
/* Per image: u' = round(W g * 127 / max|W g|) per output channel in q1x1's
 * layout [OCv][ICs][16][4] (quads ICq .. ICs - 1 zero: AMX's B tiles, whose
 * layout this is with ICs a multiple of 16), the int8-T start -128 sum(u')
 * and the output scale t_scale w_scale (max / 127) / y_scale. */
static Q1_VNNI void sp_weights(const pr_seproj *s, const float *gate, int8_t *wq, int32_t *comp,
                               float *sc) {
    const int64_t IC = s->IC, OC = s->OC, ICq = s->ICq;
    const bool s8 = s->tdt == PRECIS_INT8;
    const __m512i lo8 = _mm512_set1_epi32(0xff);
    for (int64_t v = 0; v < s->OCv; v++) { /* 16 output channels in the lanes */
        const float *wc = s->wf + 16 * v;
        /* four chains (max is exact: the same maximum in any order) */
        __m512 m4[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                        _mm512_setzero_ps()};
        for (int64_t c = 0; c < IC; c++)
            m4[c & 3] =
                _mm512_max_ps(m4[c & 3], _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(wc + c * OC),
                                                                     _mm512_set1_ps(gate[c]))));
        const __m512 mx = _mm512_max_ps(_mm512_max_ps(m4[0], m4[1]), _mm512_max_ps(m4[2], m4[3]));
        /* m > 0 finite: f = 127 / m, else 0 (a zero row) */
        const __mmask16 ok = _mm512_cmp_ps_mask(mx, _mm512_setzero_ps(), _CMP_GT_OQ) &
                             _mm512_cmp_ps_mask(mx, _mm512_set1_ps(INFINITY), _CMP_LT_OQ);
        const __m512 f = _mm512_maskz_div_ps(ok, _mm512_set1_ps(127.0f), mx);
        __m512i sum = _mm512_setzero_si512();
        __m512i *dst = (__m512i *)wq + v * s->ICs;
        for (int64_t k = ICq; k < s->ICs; k++)
            _mm512_store_si512((void *)(dst + k), _mm512_setzero_si512());
        for (int64_t k = 0; k < ICq; k++) {
            __m512i q[4];
            for (int j = 0; j < 4; j++) {
                const int64_t c = 4 * k + j;
                const __m512 u =
                    _mm512_mul_ps(_mm512_loadu_ps(wc + c * OC), _mm512_set1_ps(gate[c]));
                q[j] = _mm512_cvt_roundps_epi32(_mm512_mul_ps(u, f),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                sum = _mm512_add_epi32(sum, q[j]);
            }
            /* lane o's dword: the 4 channels' bytes (|q| <= 127) */
            const __m512i d =
                _mm512_or_si512(_mm512_or_si512(_mm512_and_si512(q[0], lo8),
                                                _mm512_slli_epi32(_mm512_and_si512(q[1], lo8), 8)),
                                _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(q[2], lo8), 16),
                                                _mm512_slli_epi32(q[3], 24)));
            _mm512_store_si512((void *)(dst + k), d);
        }
        _mm512_storeu_si512((void *)(comp + 16 * v),
                            s8 ? _mm512_mullo_epi32(sum, _mm512_set1_epi32(-128))
                               : _mm512_setzero_si512());
        const __m512 m127 = _mm512_div_ps(mx, _mm512_set1_ps(127.0f));
        const __m512 scv = _mm512_mul_ps(
            _mm512_mul_ps(
                _mm512_mul_ps(_mm512_set1_ps(s->t_scale), _mm512_loadu_ps(s->ws + 16 * v)), m127),
            _mm512_set1_ps(s->y_inv));
        _mm512_storeu_ps(sc + 16 * v, _mm512_maskz_mov_ps(ok, scv));
    }
}

Q1_INLINE __m512 sp_zf(const uint8_t *z, bool s8) {
    const __m128i b = _mm_loadu_si128((const __m128i *)z);
    return _mm512_cvtepi32_ps(s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
}

/* PT (8, 4 or 1) pixels x NV vectors: sums, then r = acc sc + B (+ z_scale / y_scale
 * Z), clamped, rounded half to even, stored as bytes. */
Q1_INLINE void sp_tile(const pr_seproj *s, const __m512i *wq, const int32_t *comp, const float *sc,
                       const uint8_t *x, const uint8_t *z, uint8_t *y, int PT, int NV, __m512 lo,
                       __m512 hi, __m512 zs, bool FL) {
    const int64_t IC = s->IC, OC = s->OC, ICq = s->ICq, ICs = s->ICs;
    /* FL: an int8 T biased here (the dword through a register, broadcast
     * by the vector unit's shuffle port); else T's bytes as they are (a
     * uint8 T, or an int8 one biased beforehand, pr_q1_flip): a broadcast load */
    const uint32_t flip = FL ? 0x80808080u : 0u;
    const __m512i zero = _mm512_setzero_si512();
    const __m512i c0 = _mm512_loadu_si512((const void *)comp);
    const __m512i c1 = NV > 1 ? _mm512_loadu_si512((const void *)(comp + 16)) : zero;
    const __m512i c2 = NV > 2 ? _mm512_loadu_si512((const void *)(comp + 32)) : zero;
    const __m512i c3 = NV > 3 ? _mm512_loadu_si512((const void *)(comp + 48)) : zero;
#define SP_ACC(p) __m512i a##p##0 = c0, a##p##1 = c1, a##p##2 = c2, a##p##3 = c3
    SP_ACC(0);
    SP_ACC(1);
    SP_ACC(2);
    SP_ACC(3);
    SP_ACC(4);
    SP_ACC(5);
    SP_ACC(6);
    SP_ACC(7);
#undef SP_ACC
    for (int64_t k = 0; k < ICq; k++) {
        const __m512i w0 = _mm512_load_si512((const void *)(wq + k));
        const __m512i w1 = NV > 1 ? _mm512_load_si512((const void *)(wq + ICs + k)) : zero;
        const __m512i w2 = NV > 2 ? _mm512_load_si512((const void *)(wq + 2 * ICs + k)) : zero;
        const __m512i w3 = NV > 3 ? _mm512_load_si512((const void *)(wq + 3 * ICs + k)) : zero;
#define SP_DOT(p)                                                                                  \
    do {                                                                                           \
        const __m512i b = q1_x4(x + (p)*IC, k, flip);                                              \
        a##p##0 = q1_dp(a##p##0, b, w0);                                                           \
        if (NV > 1) a##p##1 = q1_dp(a##p##1, b, w1);                                               \
        if (NV > 2) a##p##2 = q1_dp(a##p##2, b, w2);                                               \
        if (NV > 3) a##p##3 = q1_dp(a##p##3, b, w3);                                               \
    } while (0)
        SP_DOT(0);
        if (PT > 1) {
            SP_DOT(1);
            SP_DOT(2);
            SP_DOT(3);
        }
        if (PT > 4) {
            SP_DOT(4);
            SP_DOT(5);
            SP_DOT(6);
            SP_DOT(7);
        }
#undef SP_DOT
    }
    const bool zs8 = s->zdt == PRECIS_INT8;
#define SP_OUT1(p, v)                                                                              \
    do {                                                                                           \
        __m512 r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a##p##v), _mm512_loadu_ps(sc + 16 * (v)),    \
                                   _mm512_loadu_ps(s->bias + 16 * (v)));                           \
        if (z) r = _mm512_fmadd_ps(sp_zf(z + (p)*OC + 16 * (v), zs8), zs, r);                      \
        r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);                                               \
        _mm_storeu_si128((__m128i *)(y + (p)*OC + 16 * (v)),                                       \
                         _mm512_cvtepi32_epi8(_mm512_cvt_roundps_epi32(                            \
                             r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));                  \
    } while (0)
#define SP_OUT(p)                                                                                  \
    do {                                                                                           \
        SP_OUT1(p, 0);                                                                             \
        if (NV > 1) SP_OUT1(p, 1);                                                                 \
        if (NV > 2) SP_OUT1(p, 2);                                                                 \
        if (NV > 3) SP_OUT1(p, 3);                                                                 \
    } while (0)
    SP_OUT(0);
    if (PT > 1) {
        SP_OUT(1);
        SP_OUT(2);
        SP_OUT(3);
    }
    if (PT > 4) {
        SP_OUT(4);
        SP_OUT(5);
        SP_OUT(6);
        SP_OUT(7);
    }
#undef SP_OUT
#undef SP_OUT1
}

Q1_INLINE void sp_pixels_t(const pr_seproj *restrict s, const __m512i *wq, const int32_t *comp,
                           const float *sc, const uint8_t *x, const uint8_t *z,
                           uint8_t *restrict y, int64_t P, bool FL) {
    const bool u8 = s->ydt == PRECIS_UINT8;
    const __m512 lo = _mm512_set1_ps(u8 ? 0.0f : -128.0f),
                 hi = _mm512_set1_ps(u8 ? 255.0f : 127.0f);
    const __m512 zs = _mm512_set1_ps(s->z_scale * s->y_inv);
    const int64_t IC = s->IC, OC = s->OC;
    int64_t p = 0;
#define SP_CASE(PT)                                                                                \
    switch (s->OCv) {                                                                              \
    case 1:                                                                                        \
        sp_tile(s, wq, comp, sc, x + p * IC, z ? z + p * OC : NULL, y + p * OC, PT, 1, lo, hi,     \
                zs, FL);                                                                           \
        break;                                                                                     \
    case 2:                                                                                        \
        sp_tile(s, wq, comp, sc, x + p * IC, z ? z + p * OC : NULL, y + p * OC, PT, 2, lo, hi,     \
                zs, FL);                                                                           \
        break;                                                                                     \
    case 3:                                                                                        \
        sp_tile(s, wq, comp, sc, x + p * IC, z ? z + p * OC : NULL, y + p * OC, PT, 3, lo, hi,     \
                zs, FL);                                                                           \
        break;                                                                                     \
    default:                                                                                       \
        sp_tile(s, wq, comp, sc, x + p * IC, z ? z + p * OC : NULL, y + p * OC, PT, 4, lo, hi,     \
                zs, FL);                                                                           \
        break;                                                                                     \
    }
    /* 8 pixels for 1-2 output vectors: 8-16 independent sums (4 pixels
     * left the vpdpbusd latency chains short of work) */
    if (s->OCv <= 2)
        for (; p + 8 <= P; p += 8) SP_CASE(8)
    for (; p + 4 <= P; p += 4) SP_CASE(4)
    for (; p < P; p++) SP_CASE(1)
#undef SP_CASE
}

static Q1_VNNI __attribute__((noinline)) void
sp_pixels(const pr_seproj *restrict s, const __m512i *wq, const int32_t *comp, const float *sc,
          const uint8_t *x, const uint8_t *z, uint8_t *restrict y, int64_t P) {
    sp_pixels_t(s, wq, comp, sc, x, z, y, P, false);
}
static Q1_VNNI __attribute__((noinline)) void
sp_pixels_fl(const pr_seproj *restrict s, const __m512i *wq, const int32_t *comp, const float *sc,
             const uint8_t *x, const uint8_t *z, uint8_t *restrict y, int64_t P) {
    sp_pixels_t(s, wq, comp, sc, x, z, y, P, true);
}

/* The sums on AMX-INT8 tiles: per image, blocks of 32 pixels (2 A tiles of
 * 16 rows) x 32 output channels (2 B tiles, the per-image weights as
 * sp_weights lays them out), 64 bytes of K a step (TDPBSSD for an int8 T,
 * TDPBUSD for a uint8 one: no bias, no start term; the int32 sums equal
 * the vpdpbusd ones, so the epilogue, sp_tile's, makes the same bytes).
 * The A tiles are read straight from T at a row stride of IC bytes: the
 * bytes past a pixel's IC meet the weights' zero quads (ICq .. ICs), rows
 * past the part's pixels are not stored; a block whose reads would pass
 * T's end is copied into scratch first. */
#define SPA_ISA                                                                                    \
    __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c," \
                          "fma")))
typedef struct __attribute__((aligned(64))) spa_cfg {
    uint8_t palette, start_row, rsv[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} spa_cfg;
/* tiles 0-3: C (rows 0-15 x ch 0-15, 0-15 x 16-31, 16-31 x 0-15, 16-31 x
 * 16-31), 4-5: A rows 0-15 / 16-31, 6-7: B channels 0-15 / 16-31 */
static const spa_cfg spa_config = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
#define SPA_BARRIER() __asm__ volatile("" ::: "memory")

/* C[32][32] int32 (stride 32) of the 32 rows at a (stride lda) x the
 * channels of B0 (and B1 when two): rows 16-31 only when full. */
static inline __attribute__((always_inline)) SPA_ISA void
spa_mm(const uint8_t *a, int64_t lda, const int8_t *B0, const int8_t *B1, int64_t KS, int32_t *C,
       bool u8, bool two, bool full) {
    SPA_BARRIER();
    _tile_zero(0);
    if (two) _tile_zero(1);
    if (full) _tile_zero(2);
    if (full && two) _tile_zero(3);
    for (int64_t ks = 0; ks < KS; ks++) {
        _tile_loadd(4, a + ks * 64, lda);
        if (full) _tile_loadd(5, a + 16 * lda + ks * 64, lda);
        _tile_loadd(6, B0 + ks * 1024, 64);
        if (two) _tile_loadd(7, B1 + ks * 1024, 64);
        if (u8) {
            _tile_dpbusd(0, 4, 6);
            if (two) _tile_dpbusd(1, 4, 7);
            if (full) _tile_dpbusd(2, 5, 6);
            if (full && two) _tile_dpbusd(3, 5, 7);
        } else {
            _tile_dpbssd(0, 4, 6);
            if (two) _tile_dpbssd(1, 4, 7);
            if (full) _tile_dpbssd(2, 5, 6);
            if (full && two) _tile_dpbssd(3, 5, 7);
        }
    }
    _tile_stored(0, C, 128);
    if (two) _tile_stored(1, C + 16, 128);
    if (full) _tile_stored(2, C + 16 * 32, 128);
    if (full && two) _tile_stored(3, C + 16 * 32 + 16, 128);
    SPA_BARRIER();
}

/* sp_tile's epilogue of rows x NV (1 or 2) vectors of C (channels m0 ..)
 * into y / z (rows of OC bytes). */
static inline __attribute__((always_inline)) SPA_ISA void
spa_epi(const pr_seproj *s, const int32_t *C, const float *sc, const uint8_t *z, uint8_t *y,
        int64_t rows, int64_t m0, int NV, __m512 lo, __m512 hi, __m512 zs) {
    const int64_t OC = s->OC;
    const bool zs8 = s->zdt == PRECIS_INT8;
    for (int v = 0; v < NV; v++) {
        const __m512 scv = _mm512_loadu_ps(sc + m0 + 16 * v),
                     bv = _mm512_loadu_ps(s->bias + m0 + 16 * v);
        for (int64_t r = 0; r < rows; r++) {
            __m512 f = _mm512_fmadd_ps(
                _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(C + r * 32 + 16 * v))), scv,
                bv);
            if (z) f = _mm512_fmadd_ps(sp_zf(z + r * OC + m0 + 16 * v, zs8), zs, f);
            f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
            _mm_storeu_si128((__m128i *)(y + r * OC + m0 + 16 * v),
                             _mm512_cvtepi32_epi8(_mm512_cvt_roundps_epi32(
                                 f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
        }
    }
}

/* Pixels [0, P) from t (image n's part; its bytes end at tend) into y / z;
 * tiles configured. A: 32 x Kp bytes of scratch, C: 2 x 32 x 32 int32. */
static SPA_ISA __attribute__((noinline)) void
spa_pixels(const pr_seproj *s, const int8_t *wq, const float *sc, const uint8_t *t,
           const uint8_t *tend, const uint8_t *z, uint8_t *y, int64_t P, uint8_t *A, int32_t *C) {
    const int64_t IC = s->IC, OC = s->OC, KS = s->ICs / 16, Kp = KS * 64;
    const bool u8 = s->tdt == PRECIS_UINT8, yu8 = s->ydt == PRECIS_UINT8;
    const __m512 lo = _mm512_set1_ps(yu8 ? 0.0f : -128.0f), hi = _mm512_set1_ps(yu8 ? 255.0f : 127.0f);
    const __m512 zs = _mm512_set1_ps(s->z_scale * s->y_inv);
    int32_t *Cb[2] = {C, C + 32 * 32};
    int cur = 0;
    bool pend = false;
    int64_t pp = 0, prows = 0, pm0 = 0;
    int pnv = 0;
    for (int64_t p = 0; p < P; p += 32) {
        const int64_t rows = P - p < 32 ? P - p : 32;
        const bool full = rows > 16;
        const uint8_t *a = t + p * IC;
        int64_t lda = IC;
        if (tend - a < (full ? 31 : 15) * IC + Kp) { /* the tiles would read past T */
            for (int64_t r = 0; r < rows; r++) memcpy(A + r * Kp, a + r * IC, (size_t)IC);
            a = A;
            lda = Kp;
        }
        for (int64_t m0 = 0; m0 < OC; m0 += 32) {
            const int nv = OC - m0 >= 32 ? 2 : 1;
            const int8_t *B0 = wq + (m0 / 16) * s->ICs * 64;
            spa_mm(a, lda, B0, B0 + s->ICs * 64, KS, Cb[cur], u8, nv == 2, full);
            if (pend)
                spa_epi(s, Cb[cur ^ 1], sc, z ? z + pp * OC : NULL, y + pp * OC, prows, pm0, pnv,
                        lo, hi, zs);
            pend = true;
            pp = p, prows = rows, pm0 = m0, pnv = nv;
            cur ^= 1;
        }
    }
    if (pend)
        spa_epi(s, Cb[cur ^ 1], sc, z ? z + pp * OC : NULL, y + pp * OC, prows, pm0, pnv, lo, hi,
                zs);
}

static SPA_ISA void spa_config_load(void) {
    SPA_BARRIER();
    _tile_loadconfig(&spa_config);
    SPA_BARRIER();
}
static SPA_ISA void spa_release(void) {
    SPA_BARRIER();
    _tile_release();
    SPA_BARRIER();
}

/* PRECIS_SEPROJ_FLIP=0: an int8 T biased in the kernel's loop (A/B). */
static bool sp_flip_on(void) {
    static int on = -1;
    return pr_cpu_switch_on("PRECIS_SEPROJ_FLIP", &on);
}
#endif

precis_status pr_seproj_run(const pr_seproj *s, const pr_kernel *km, const pr_kernel *kp,
                            int64_t n0, int64_t n1, int part, int parts, pr_cpu_exec *x) {
    const pr_buf *T = km->in[s->ti], *G = km->in[1 - s->ti];
    const pr_buf *Z = kp->n_in > 4 ? kp->in[4] : NULL;
    pr_buf *Y = kp->out[0];
    if (!T || !G || !Y || T->dtype != s->tdt || G->dtype != PRECIS_FLOAT32 || Y->dtype != s->ydt ||
        T->rank != 4 || T->dims[1] != s->IC || G->numel != T->dims[0] * s->IC || Y->rank != 4 ||
        Y->dims[0] != T->dims[0] || Y->dims[1] != s->OC || Y->dims[2] != T->dims[2] ||
        Y->dims[3] != T->dims[3] || (s->zdt != PRECIS_UNDEFINED) != (Z != NULL) ||
        (Z && (Z->dtype != s->zdt || Z->numel != Y->numel)))
        return pr_kernelf((pr_kernel *)kp, PRECIS_ERR_SHAPE,
                          "fused SE projection: unexpected operands");
#ifdef PR_CPU_X86
    const int64_t P = T->dims[2] * T->dims[3];
    /* this part's pixels of each image, in 8-pixel steps */
    const int64_t q0 = P * part / parts / 8 * 8,
                  q1 = part + 1 == parts ? P : P * (part + 1) / parts / 8 * 8;
    if (q1 <= q0) return PRECIS_OK;
    const size_t wbytes = (size_t)(s->OCv * s->ICs * 64);
    /* an int8 T: this part of each image biased once into scratch (tb), so
     * that the tiles broadcast its dwords from memory: cls b8 t1 1337 ->
     * 1281 us with the bias left out altogether (the kernel's loop was
     * bound by its register broadcasts) */
    if (s->amx) {
        const int64_t Kp = s->ICs * 4;
        const size_t abytes = (size_t)(32 * Kp), cbytes = 2 * 32 * 32 * sizeof(int32_t);
        unsigned char *scr =
            pr_cpu_scratch(x, wbytes + abytes + cbytes + (size_t)s->OC * 2 * sizeof(float));
        if (!scr) return pr_kernelf((pr_kernel *)kp, PRECIS_ERR_OOM, "out of memory");
        int8_t *wq = (int8_t *)scr;
        uint8_t *A = scr + wbytes;
        int32_t *C = (int32_t *)(A + abytes);
        float *sc = (float *)(C + 2 * 32 * 32);
        int32_t *comp = (int32_t *)(sc + s->OC); /* not used: no start term on AMX */
        const uint8_t *tend = (const uint8_t *)T->data + T->nbytes;
        spa_config_load();
        for (int64_t n = n0; n < n1; n++) {
            sp_weights(s, (const float *)G->data + n * s->IC, wq, comp, sc);
            const int64_t p0 = n * P + q0;
            spa_pixels(s, wq, sc, (const uint8_t *)T->data + p0 * s->IC, tend,
                       Z ? (const uint8_t *)Z->data + p0 * s->OC : NULL,
                       (uint8_t *)Y->data + p0 * s->OC, q1 - q0, A, C);
        }
        spa_release();
        return PRECIS_OK;
    }
    const bool fl = s->tdt == PRECIS_INT8 && sp_flip_on();
    const size_t sbytes = wbytes + (size_t)s->OC * 2 * sizeof(float) + 64;
    const size_t tbytes = fl ? (size_t)((q1 - q0) * s->IC) + 64 : 0;
    unsigned char *scr = pr_cpu_scratch(x, sbytes + tbytes);
    if (!scr) return pr_kernelf((pr_kernel *)kp, PRECIS_ERR_OOM, "out of memory");
    int8_t *wq = (int8_t *)scr;
    int32_t *comp = (int32_t *)(scr + wbytes);
    float *sc = (float *)(comp + s->OC);
    uint8_t *tb = scr + sbytes;
    for (int64_t n = n0; n < n1; n++) {
        sp_weights(s, (const float *)G->data + n * s->IC, wq, comp, sc);
        const int64_t p0 = n * P + q0;
        const uint8_t *t = (const uint8_t *)T->data + p0 * s->IC;
        const uint8_t *tz = Z ? (const uint8_t *)Z->data + p0 * s->OC : NULL;
        uint8_t *yo = (uint8_t *)Y->data + p0 * s->OC;
        if (fl) {
            pr_q1_flip(t, tb, (q1 - q0) * s->IC);
            sp_pixels(s, (const __m512i *)wq, comp, sc, tb, tz, yo, q1 - q0);
        } else if (s->tdt == PRECIS_INT8) {
            sp_pixels_fl(s, (const __m512i *)wq, comp, sc, t, tz, yo, q1 - q0);
        } else {
            sp_pixels(s, (const __m512i *)wq, comp, sc, t, tz, yo, q1 - q0);
        }
    }
    return PRECIS_OK;
#else
    (void)n0, (void)n1, (void)part, (void)parts, (void)x;
    return pr_kernelf((pr_kernel *)kp, PRECIS_ERR_UNSUPPORTED, "needs x86 AVX512-VNNI");
#endif
}
