/* Attention (ops.inc) on the CPU: Y = softmax(scale * Q K' + M) V in one
 * kernel, float32 / bfloat16 / float16 operands (each input may have its own
 * dtype; Y has Q's), sums in float32.
 *
 * Work is split into tasks of (batch element, block of query rows), run in
 * parallel with OpenMP; a task:
 *   1. K' [D, Sk] and V [Sk, Dv] in the product's operand format, once per
 *      batch element (a thread keeps them for its next row block):
 *      float32 rows, read in place when already float32 with unit stride,
 *      else packed (16 x 16 register transposes for K [Sk, D], dtype
 *      conversions, a plain gather for broadcast strides); or, when Q, K, V
 *      are all bfloat16 and the CPU has AVX512-BF16, bf16 pairs along the
 *      reduced dim (the "dp" mode: vdpbf16ps does two products per lane);
 *   2. scores = scale * Q K' (+ a mask row shared by all query rows, added
 *      on store) by a register-tiled product (14 rows x 32 columns) into a
 *      float32 panel [rows, Sk];
 *   3. per row: + any other mask row (any dtype, broadcast strides) and the
 *      max in one pass; exp(s - max) (kn_exp16, as k_softmax.c) and its sum
 *      in a second, stored as float32 (or rounded to bf16 pairs in dp mode,
 *      as the Softmax output of an unfused bf16 plan is); the division by
 *      the sum is left to step 4;
 *   4. Y block = P V by the same tiled product, each row scaled by 1 / sum,
 *      straight into Y when it is float32, else through a float32 panel
 *      rounded on store.
 * Row blocks hold at most AK_PANEL score floats (L2-sized) and are made
 * small enough that every thread gets several tasks. The scalar fallback
 * (PRECIS_CPU_ISA=scalar) runs the same steps in float32 with plain loops. */
#define PR_KN_INTERNAL
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_norm.h"
#include "backends/cpu/vec.h"

#define AK_MR 14           /* rows of a register tile */
#define AK_NR 32           /* columns of a register tile */
#define AK_PANEL 32768     /* most score floats per task */
#define AK_MIN_FLOPS 65536 /* below this much work one thread runs it all */

typedef struct ak_state {
    bool v512;
    bool bf; /* AVX512-BF16 dot products (Q, K, V all bfloat16, D even) */
} ak_state;

/* ------------------------------------------------------------ registry */

static bool ak_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Attention || n->n_inputs < 3 || n->n_outputs != 1) return false;
    if (pr_attr_int(n, "heads_bshd", 0)) return false; /* a CUDA plan's folded transposes */
    if (pr_attr_int(n, "y_type", 0)) return false;     /* e4m3 Y: cuda fp8 plans */
    int y = pr_node_out(n, 0), q = pr_node_in(n, 0);
    if (y < 0 || q < 0) return false;
    for (int i = 0; i < n->n_inputs && i < 4; i++) {
        int t = pr_node_in(n, i);
        if (t < 0 && i == 3) continue;
        if (t < 0 || !kn_act_dtype(g->tensors[t].dtype) || g->tensors[t].layout != PR_LAYOUT_PLAIN)
            return false;
        if (i < 3 && g->tensors[t].rank >= 0 && g->tensors[t].rank < 2) return false;
    }
    const pr_tensor *Y = &g->tensors[y];
    if (n->n_inputs > 4 || Y->layout != PR_LAYOUT_PLAIN) return false;
    return Y->dtype == PRECIS_UNDEFINED || Y->dtype == g->tensors[q].dtype;
}

static precis_status ak_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    ak_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
    s->v512 = kn_have_avx512();
    s->bf = s->v512 && pr_cpu_features_get()->avx512_bf16;
    for (int i = 0; i < 3; i++) s->bf = s->bf && g->tensors[n->inputs[i]].dtype == PRECIS_BFLOAT16;
    *state = s;
    return PRECIS_OK;
}

static const char *ak_describe(void *state) {
    const ak_state *s = state;
    return s->bf ? "attention:avx512_bf16" : s->v512 ? "attention:avx512" : "attention:scalar";
}

static void ak_destroy(void *state) { free(state); }

/* ------------------------------------------------------------ tiled product */

#define KN_AVX512BF                                                                                \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma,avx512bf16")))

/* Row i of C[mr x n] = rsc[i] * (row i of A[mr x K] B[K x n]) + madd (a
 * float32 row of n added to every row; NULL: none), n <= AK_NR
 * given as the two lane masks of the 32 columns; A's row i at A + i*lda
 * (lda may be 0), B's row k at B + k*ldb, C's row i at C + i*ldc; strides
 * in 4-byte units. Two kinds: float32 A and B (FMA), or bfloat16 pairs
 * (dot products of 2 bf16 per 4-byte unit, AVX512-BF16: K counts pairs; A's
 * unit holds (a[2p], a[2p+1]), B's (b[2p][j], b[2p+1][j]), the low half
 * first). */
typedef void (*ak_tile_fn)(int64_t K, const void *A, int64_t lda, const void *B, int64_t ldb,
                           __mmask16 m0, __mmask16 m1, const float *rsc, const float *madd,
                           float *C, int64_t ldc);

#define AK_TILE(NAME, TARGET, T, V, LOADB, BCAST, MAC)                                             \
    TARGET static inline __attribute__((always_inline)) void NAME(                                 \
        const int mr, int64_t K, const void *Av, int64_t lda, const void *Bv, int64_t ldb,         \
        __mmask16 m0, __mmask16 m1, const float *restrict rsc, const float *restrict madd,         \
        float *restrict C, int64_t ldc) {                                                          \
        const T *restrict A = Av, *restrict B = Bv;                                                \
        __m512 c0[AK_MR], c1[AK_MR];                                                               \
        _Pragma("GCC unroll 14") for (int i = 0; i < mr; i++) {                                    \
            c0[i] = _mm512_setzero_ps();                                                           \
            c1[i] = _mm512_setzero_ps();                                                           \
        }                                                                                          \
        for (int64_t k = 0; k < K; k++) {                                                          \
            const V b0 = LOADB(m0, B + k * ldb), b1 = LOADB(m1, B + k * ldb + 16);                 \
            _Pragma("GCC unroll 14") for (int i = 0; i < mr; i++) {                                \
                const V a = BCAST(A[i * lda + k]);                                                 \
                c0[i] = MAC(c0[i], a, b0);                                                         \
                c1[i] = MAC(c1[i], a, b1);                                                         \
            }                                                                                      \
        }                                                                                          \
        const __m512 d0 = madd ? _mm512_maskz_loadu_ps(m0, madd) : _mm512_setzero_ps();            \
        const __m512 d1 = madd ? _mm512_maskz_loadu_ps(m1, madd + 16) : _mm512_setzero_ps();       \
        _Pragma("GCC unroll 14") for (int i = 0; i < mr; i++) {                                    \
            const __m512 r = _mm512_set1_ps(rsc[i]);                                               \
            _mm512_mask_storeu_ps(C + i * ldc, m0, _mm512_fmadd_ps(c0[i], r, d0));                 \
            _mm512_mask_storeu_ps(C + i * ldc + 16, m1, _mm512_fmadd_ps(c1[i], r, d1));            \
        }                                                                                          \
    }

#define AK_FMA(c, a, b) _mm512_fmadd_ps(a, b, c)
AK_TILE(ak_tile_f32, KN_AVX512, float, __m512, _mm512_maskz_loadu_ps, _mm512_set1_ps, AK_FMA)
#define AK_LDBF(m, p) ((__m512bh)_mm512_maskz_loadu_epi32(m, p))
#define AK_BCBF(w) ((__m512bh)_mm512_set1_epi32((int)(w)))
AK_TILE(ak_tile_bf, KN_AVX512BF, uint32_t, __m512bh, AK_LDBF, AK_BCBF, _mm512_dpbf16_ps)

#define AK_DEF(m)                                                                                  \
    KN_AVX512 static void ak_f32_##m(int64_t K, const void *A, int64_t lda, const void *B,         \
                                     int64_t ldb, __mmask16 m0, __mmask16 m1, const float *rsc,    \
                                     const float *madd, float *C, int64_t ldc) {                   \
        ak_tile_f32(m, K, A, lda, B, ldb, m0, m1, rsc, madd, C, ldc);                              \
    }                                                                                              \
    KN_AVX512BF static void ak_bf_##m(int64_t K, const void *A, int64_t lda, const void *B,        \
                                      int64_t ldb, __mmask16 m0, __mmask16 m1, const float *rsc,   \
                                      const float *madd, float *C, int64_t ldc) {                  \
        ak_tile_bf(m, K, A, lda, B, ldb, m0, m1, rsc, madd, C, ldc);                               \
    }
AK_DEF(1)
AK_DEF(2)
AK_DEF(3)
AK_DEF(4)
AK_DEF(5)
AK_DEF(6)
AK_DEF(7)
AK_DEF(8)
AK_DEF(9)
AK_DEF(10)
AK_DEF(11)
AK_DEF(12)
AK_DEF(13)
AK_DEF(14)
static const ak_tile_fn ak_tiles_f32[AK_MR + 1] = {
    NULL,       ak_f32_1,  ak_f32_2,  ak_f32_3,  ak_f32_4,  ak_f32_5,  ak_f32_6, ak_f32_7,
    ak_f32_8,   ak_f32_9,  ak_f32_10, ak_f32_11, ak_f32_12, ak_f32_13, ak_f32_14};
static const ak_tile_fn ak_tiles_bf[AK_MR + 1] = {
    NULL,      ak_bf_1,  ak_bf_2,  ak_bf_3,  ak_bf_4,  ak_bf_5,  ak_bf_6, ak_bf_7,
    ak_bf_8,   ak_bf_9,  ak_bf_10, ak_bf_11, ak_bf_12, ak_bf_13, ak_bf_14};

/* C[M x N] = A[M x K] B[K x N], row i scaled by rsc[i], + madd[0..N) on
 * every row when given (units and strides as the tiles; tiles NULL: float32
 * in portable C). */
static void ak_gemm(const ak_tile_fn *tiles, int64_t M, int64_t N, int64_t K, const void *A,
                    int64_t lda, const void *B, int64_t ldb, const float *rsc, const float *madd,
                    float *C, int64_t ldc) {
    if (!tiles) {
        const float *Af = A, *Bf = B;
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc;
            for (int64_t j = 0; j < N; j++) c[j] = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                const float a = Af[i * lda + k];
                const float *b = Bf + k * ldb;
                for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
            }
            for (int64_t j = 0; j < N; j++) c[j] = c[j] * rsc[i] + (madd ? madd[j] : 0.0f);
        }
        return;
    }
    for (int64_t j = 0; j < N; j += AK_NR) {
        const int64_t w = N - j < AK_NR ? N - j : AK_NR;
        const __mmask16 m0 = w >= 16 ? (__mmask16)0xffff : kn_tail(w);
        const __mmask16 m1 = w >= 32 ? (__mmask16)0xffff : (w > 16 ? kn_tail(w - 16) : 0);
        for (int64_t i = 0; i < M; i += AK_MR) {
            const int mr = (int)(M - i < AK_MR ? M - i : AK_MR);
            tiles[mr](K, (const uint32_t *)A + i * lda, lda, (const uint32_t *)B + j, ldb, m0, m1,
                      rsc + i, madd ? madd + j : NULL, C + i * ldc + j, ldc);
        }
    }
}

/* ------------------------------------------------------------ packing */

/* dst[i] = float(src[i * st]) for i < n. */
static void ak_row_f32(bool v512, const void *src, pr_dtype dt, int64_t st, float *dst, int64_t n) {
    if (st == 1 && v512) {
        kn_to_f32_512(src, dt, dst, n);
    } else if (st == 0) {
        const float v = n ? kn_ld1(src, dt, 0) : 0.0f;
        for (int64_t i = 0; i < n; i++) dst[i] = v;
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = kn_ld1(src, dt, i * st);
    }
}

/* dst[c * ldd + r] = float(src[r * lds + c]) for r < rows, c < cols: 16 x 16
 * register transposes. */
KN_AVX512 static void ak_transpose512(const void *src, pr_dtype dt, int64_t lds, float *dst,
                                      int64_t ldd, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r += 16) {
        const int64_t nr = rows - r < 16 ? rows - r : 16;
        for (int64_t c = 0; c < cols; c += 16) {
            const int64_t nc = cols - c < 16 ? cols - c : 16;
            const __mmask16 cm = kn_tail(nc), rm = kn_tail(nr);
            __m512 v[16];
            for (int i = 0; i < 16; i++)
                v[i] = i < nr ? kn_ld16z(src, dt, (r + i) * lds + c, cm) : _mm512_setzero_ps();
            pv_tr16(v);
            for (int i = 0; i < nc; i++) _mm512_mask_storeu_ps(dst + (c + i) * ldd + r, rm, v[i]);
        }
    }
}

/* Operand as float32 rows: rows x n values, element (r, i) of the source at
 * r * rs + i * cs (elements of dtype dt), into dst rows of stride ldd. */
static void ak_pack(bool v512, const void *src, pr_dtype dt, int64_t rs, int64_t cs, int64_t rows,
                    int64_t n, float *dst, int64_t ldd) {
    const size_t es = pr_dtype_size(dt);
    if (v512 && cs != 1 && rs == 1 && n > 1) { /* a transpose */
        ak_transpose512(src, dt, cs, dst, ldd, n, rows);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        ak_row_f32(v512, (const char *)src + (size_t)(r * rs) * es, dt, cs, dst + r * ldd, n);
}

/* bfloat16 rows as pairs for the dot-product tiles: dst[p * ldd + c] holds
 * (src[2p][c], src[2p + 1][c]), rows of stride rs elements, c < n; the
 * missing row of an odd count reads as 0. */
KN_AVX512 static void ak_pairs512(const uint16_t *src, int64_t rs, int64_t rows, int64_t n,
                                  uint32_t *dst, int64_t ldd) {
    for (int64_t p = 0; 2 * p < rows; p++) {
        const uint16_t *r0 = src + 2 * p * rs, *r1 = r0 + rs;
        const bool odd = 2 * p + 1 == rows;
        for (int64_t c = 0; c < n; c += 16) {
            const __mmask16 t = n - c >= 16 ? (__mmask16)0xffff : kn_tail(n - c);
            const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(t, r0 + c));
            const __m512i hi =
                odd ? _mm512_setzero_si512()
                    : _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(t, r1 + c));
            _mm512_mask_storeu_epi32(dst + p * ldd + c, t,
                                     _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
    }
}

/* ------------------------------------------------------------ run */

typedef struct ak_ctx {
    pr_attn_geom a;
    bool v512;
    const void *q, *k, *v, *m;
    pr_dtype qdt, kdt, vdt, mdt;
    void *y;
    const ak_tile_fn *tiles;       /* ak_tiles_f32, ak_tiles_bf or NULL (scalar) */
    bool dp;                       /* bf16 pairs (ak_tiles_bf) */
    int64_t rb;                    /* query rows per task */
    int64_t skp, dvp;              /* padded row strides of the panels */
    bool k_direct, v_direct, q_direct;
    size_t per_thread;             /* floats of scratch per thread */
} ak_ctx;

static const void *at(const void *p, pr_dtype dt, int64_t off) {
    return (const char *)p + (size_t)off * pr_dtype_size(dt);
}

/* Pass 1 of a score row's softmax: s[j] += m[j] (m: the mask row with unit
 * stride, or NULL); returns the row's max. */
KN_AVX512 static float ak_max_row512(float *s, const void *m, pr_dtype mdt, int64_t n) {
    __m512 x = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 t = n - j >= 16 ? (__mmask16)0xffff : kn_tail(n - j);
        __m512 a = _mm512_maskz_loadu_ps(t, s + j);
        if (m) {
            a = _mm512_add_ps(a, kn_ld16z(m, mdt, j, t));
            _mm512_mask_storeu_ps(s + j, t, a);
        }
        x = _mm512_mask_max_ps(x, t, x, a);
    }
    return _mm512_reduce_max_ps(x);
}

/* Pass 2: the numerators exp(s[j] - mx) (kn_exp16) into out, float32 (s
 * itself) or bfloat16 (rounded by vcvtneps2bf16); returns their sum. The
 * division is left to P V's row scale. */
#define AK_EXP_PASS(NAME, TARGET, OUT_T, STORE)                                                    \
    TARGET static float NAME(const float *s, float mx, int64_t n, OUT_T *out) {                    \
        const __m512 vm = _mm512_set1_ps(mx);                                                      \
        __m512 acc = _mm512_setzero_ps();                                                          \
        for (int64_t j = 0; j < n; j += 16) {                                                      \
            const __mmask16 t = n - j >= 16 ? (__mmask16)0xffff : kn_tail(n - j);                  \
            const __m512 e = _mm512_maskz_mov_ps(                                                  \
                t, kn_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, s + j), vm)));                  \
            STORE(out + j, t, e);                                                                  \
            acc = _mm512_add_ps(acc, e);                                                           \
        }                                                                                          \
        return _mm512_reduce_add_ps(acc);                                                          \
    }
#define AK_ST_F32(p, t, e) _mm512_mask_storeu_ps(p, t, e)
#define AK_ST_BF(p, t, e) _mm256_mask_storeu_epi16(p, t, (__m256i)_mm512_cvtneps_pbh(e))
AK_EXP_PASS(ak_exp_f32_512, KN_AVX512, float, AK_ST_F32)
AK_EXP_PASS(ak_exp_bf_512, KN_AVX512BF, uint16_t, AK_ST_BF)

/* Both passes in portable C. */
static float ak_exp_row(float *s, const void *m, pr_dtype mdt, int64_t n) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        if (m) s[j] += kn_ld1(m, mdt, j);
        mx = s[j] > mx ? s[j] : mx;
    }
    double sum = 0;
    for (int64_t j = 0; j < n; j++) sum += s[j] = expf(s[j] - mx);
    return (float)sum;
}

/* Rows [r0, r0 + rows) of the scores sp: + mask (unless the product added
 * it: mask_done), softmax numerators in place, or with pb (bf16 pairs mode)
 * as bfloat16 rows of skp elements zero-padded to an even count; inv[i]
 * gets 1 / their sum. */
static void ak_softmax(const ak_ctx *c, float *sp, int64_t rows, int64_t r0, int64_t moff,
                       bool mask_done, float *inv, uint16_t *pb) {
    const int64_t Sk = c->a.Sk, cs = c->a.cs[3];
    for (int64_t i = 0; i < rows; i++) {
        float *s = sp + i * c->skp;
        const void *m =
            c->m && !mask_done ? at(c->m, c->mdt, moff + (r0 + i) * c->a.rs[3]) : NULL;
        if (m && cs != 1) { /* a broadcast or strided mask row: added first */
            for (int64_t j = 0; j < Sk; j++) s[j] += kn_ld1(m, c->mdt, j * cs);
            m = NULL;
        }
        float sum;
        if (!c->v512) {
            sum = ak_exp_row(s, m, c->mdt, Sk);
        } else {
            const float mx = ak_max_row512(s, m, c->mdt, Sk);
            if (pb) {
                sum = ak_exp_bf_512(s, mx, Sk, pb + i * c->skp);
                if (Sk & 1) pb[i * c->skp + Sk] = 0;
            } else {
                sum = ak_exp_f32_512(s, mx, Sk, s);
            }
        }
        inv[i] = 1.0f / sum;
    }
}

/* K' [D, Sk] and V [Sk, Dv] of batch element b in the tiles' units: float32
 * rows (in place when direct, else packed into kp / vp), or bf16 pairs. */
static void ak_pack_kv(const ak_ctx *c, const int64_t *off, float *kp, float *vp) {
    const pr_attn_geom *a = &c->a;
    const bool v5 = c->v512;
    const void *k = at(c->k, c->kdt, off[1]), *v = at(c->v, c->vdt, off[2]);
    if (c->dp) {
        if (a->kt) /* rows d of K' paired */
            ak_pairs512(k, a->rs[1], a->D, a->Sk, (uint32_t *)kp, c->skp);
        else /* K's rows hold the (d, d + 1) pairs already: a 4-byte transpose */
            ak_transpose512(k, PRECIS_FLOAT32, a->rs[1] / 2, kp, c->skp, a->Sk, a->D / 2);
        ak_pairs512(v, a->rs[2], a->Sk, a->Dv, (uint32_t *)vp, c->dvp);
        return;
    }
    if (!c->k_direct) { /* element (d, j) of K' */
        int64_t kds = a->kt ? a->rs[1] : a->cs[1], kjs = a->kt ? a->cs[1] : a->rs[1];
        ak_pack(v5, k, c->kdt, kds, kjs, a->D, a->Sk, kp, c->skp);
    }
    if (!c->v_direct) ak_pack(v5, v, c->vdt, a->rs[2], a->cs[2], a->Sk, a->Dv, vp, c->dvp);
}

static void ak_task(const ak_ctx *c, int64_t b, int64_t r0, float *ws, int64_t *packed_b) {
    const pr_attn_geom *a = &c->a;
    const int64_t rows = a->Sq - r0 < c->rb ? a->Sq - r0 : c->rb;
    int64_t off[4];
    pr_attn_offsets(a, b, off);
    float *kp = ws, *vp = kp + a->D * c->skp, *qp = vp + a->Sk * c->dvp;
    float *sp = qp + c->rb * a->D, *op = sp + c->rb * c->skp, *rsc = op + c->rb * c->dvp;
    float *inv = rsc + c->rb, *pbf = inv + c->rb, *mrow = pbf + c->rb * c->skp / 2;
    if (*packed_b != b) {
        ak_pack_kv(c, off, kp, vp);
        *packed_b = b;
    }
    /* operands of the two products (units of 4 bytes) */
    const void *qa = qp, *kb = kp, *vb = vp, *pa = sp;
    int64_t ldq = a->D, ldk = c->skp, ldv = c->dvp, ldp = c->skp, k1 = a->D, k2 = a->Sk;
    if (c->dp) {
        qa = at(c->q, c->qdt, off[0] + r0 * a->rs[0]);
        ldq = a->rs[0] / 2;
        k1 = a->D / 2;
        pa = pbf;
        ldp = c->skp / 2;
        k2 = (a->Sk + 1) / 2;
    } else {
        if (c->k_direct) {
            kb = (const float *)c->k + off[1];
            ldk = a->rs[1];
        }
        if (c->v_direct) {
            vb = (const float *)c->v + off[2];
            ldv = a->rs[2];
        }
        if (c->q_direct) {
            qa = (const float *)c->q + off[0] + r0 * a->rs[0];
            ldq = a->rs[0];
        } else {
            ak_pack(c->v512, at(c->q, c->qdt, off[0] + r0 * a->rs[0]), c->qdt, a->rs[0], a->cs[0],
                    rows, a->D, qp, a->D);
        }
    }
    for (int64_t i = 0; i < rows; i++) rsc[i] = a->scale;
    /* a mask row shared by all query rows ([.., 1, Sk]) is added by the product */
    const float *madd = NULL;
    if (c->m && a->rs[3] == 0 && a->cs[3] == 1) {
        madd = mrow;
        if (c->mdt == PRECIS_FLOAT32)
            madd = (const float *)c->m + off[3];
        else
            ak_row_f32(c->v512, at(c->m, c->mdt, off[3]), c->mdt, 1, mrow, a->Sk);
    }
    ak_gemm(c->tiles, rows, a->Sk, k1, qa, ldq, kb, ldk, rsc, madd, sp, c->skp);
    ak_softmax(c, sp, rows, r0, off[3], madd != NULL, inv, c->dp ? (uint16_t *)pbf : NULL);
    const int64_t yo = (b * a->Sq + r0) * a->Dv;
    if (c->qdt == PRECIS_FLOAT32) {
        ak_gemm(c->tiles, rows, a->Dv, k2, pa, ldp, vb, ldv, inv, NULL, (float *)c->y + yo, a->Dv);
        return;
    }
    ak_gemm(c->tiles, rows, a->Dv, k2, pa, ldp, vb, ldv, inv, NULL, op, c->dvp);
    for (int64_t i = 0; i < rows; i++) {
        void *yr = (char *)c->y + (size_t)(yo + i * a->Dv) * pr_dtype_size(c->qdt);
        if (c->v512)
            kn_from_f32_512(op + i * c->dvp, c->qdt, yr, a->Dv);
        else
            for (int64_t j = 0; j < a->Dv; j++) kn_st1(yr, c->qdt, j, op[i * c->dvp + j]);
    }
}

static precis_status ak_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    const ak_state *s = state;
    ak_ctx c;
    memset(&c, 0, sizeof c);
    precis_status st = pr_attn_geom_of(k, &c.a);
    if (st) return st;
    const pr_attn_geom *a = &c.a;
    pr_buf *Y = k->out[0];
    const pr_buf *M = pr_kin(k, 3);
    if (Y->dtype != k->in[0]->dtype || !kn_act_dtype(Y->dtype) || !kn_act_dtype(k->in[1]->dtype) ||
        !kn_act_dtype(k->in[2]->dtype) || (M && !kn_act_dtype(M->dtype)))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unsupported dtypes");
    if (Y->numel == 0) return PRECIS_OK;
    if (a->Sk == 0) { /* no keys: P V is a product over nothing */
        memset(Y->data, 0, Y->nbytes);
        return PRECIS_OK;
    }
    c.v512 = s->v512;
    c.q = k->in[0]->data;
    c.k = k->in[1]->data;
    c.v = k->in[2]->data;
    c.m = M ? M->data : NULL;
    c.qdt = k->in[0]->dtype;
    c.kdt = k->in[1]->dtype;
    c.vdt = k->in[2]->dtype;
    c.mdt = M ? M->dtype : PRECIS_FLOAT32;
    c.y = Y->data;
    c.dp = s->bf && c.qdt == PRECIS_BFLOAT16 && c.kdt == PRECIS_BFLOAT16 &&
           c.vdt == PRECIS_BFLOAT16 && a->D % 2 == 0 && a->cs[0] == 1 && a->cs[1] == 1 &&
           a->cs[2] == 1;
    c.tiles = c.dp ? ak_tiles_bf : c.v512 ? ak_tiles_f32 : NULL;
    c.k_direct = c.kdt == PRECIS_FLOAT32 && a->kt && a->cs[1] == 1;
    c.v_direct = c.vdt == PRECIS_FLOAT32 && (a->cs[2] == 1 || a->Dv == 1);
    c.q_direct = c.qdt == PRECIS_FLOAT32 && (a->cs[0] == 1 || a->D == 1);
    c.skp = (int64_t)kn_pad16(a->Sk);
    c.dvp = (int64_t)kn_pad16(a->Dv);
    /* rows per task: an L2-sized score panel, and several tasks per thread */
    const int64_t flops = a->nb * a->Sq * a->Sk * (a->D + a->Dv);
    int nt = x->num_threads < 1 || flops < AK_MIN_FLOPS ? 1 : x->num_threads;
    int64_t rb = a->Sq;
    const int64_t cap = AK_PANEL / c.skp > AK_MR ? AK_PANEL / c.skp / AK_MR * AK_MR : AK_MR;
    if (rb > cap) rb = cap;
    while (rb > AK_MR && a->nb * ((a->Sq + rb - 1) / rb) < 4 * (int64_t)nt)
        rb = (rb / 2 + AK_MR - 1) / AK_MR * AK_MR;
    c.rb = rb;
    const int64_t nrb = (a->Sq + rb - 1) / rb, tasks = a->nb * nrb;
    if (tasks < nt) nt = (int)tasks;
    /* K', V, Q block, scores, output block, row scales, 1 / sums, bf16 P,
     * a mask row */
    c.per_thread = kn_pad16(a->D * c.skp + a->Sk * c.dvp +
                            rb * (a->D + c.skp + c.dvp + 2 + c.skp / 2) + c.skp);
    float *ws = pr_cpu_scratch(x, (size_t)nt * c.per_thread * sizeof(float));
    if (!ws) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        int64_t packed = -1;
        /* contiguous task ranges: consecutive row blocks share K and V */
        const int64_t t0 = tasks * t / T, t1 = tasks * (t + 1) / T;
        for (int64_t q = t0; q < t1; q++)
            ak_task(&c, q / nrb, (q % nrb) * rb, ws + (size_t)t * c.per_thread, &packed);
    }
    return PRECIS_OK;
}

const pr_cpu_impl pr_cpu_impl_attention = {
    .name = "attention",
    .supports = ak_supports,
    .nhwc_ok = NULL,
    .inplace_input = NULL,
    .prepare = ak_prepare,
    .run = ak_run,
    .describe = ak_describe,
    .destroy = ak_destroy,
};
