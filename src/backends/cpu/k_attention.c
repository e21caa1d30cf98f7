/* Attention (ops.inc) on the CPU: Y = softmax(scale * Q K' + M) V in one
 * kernel, float32 arithmetic for float32 / bfloat16 / float16 operands (each
 * input may have its own dtype; Y has Q's).
 *
 * Work is split into tasks of (batch element, block of query rows), run in
 * parallel with OpenMP; a task:
 *   1. K' as float32 [D, Sk] rows: read in place when K is float32, stored
 *      [D, Sk] (k_transposed) with unit key stride; else packed (16 x 16
 *      register transposes for K [Sk, D], conversions, or a plain gather
 *      for broadcast strides). V likewise as float32 [Sk, Dv] rows, Q's
 *      block as float32 [rows, D]. A thread keeps its packed K and V for the
 *      next task of the same batch element.
 *   2. scores = scale * Q K' by a register-tiled product (14 rows x 32
 *      columns on AVX-512), into a float32 panel [rows, Sk];
 *   3. per row: + the mask row (any dtype, broadcast strides) and the max
 *      in one pass, exp(s - max) (kn_exp16, as k_softmax.c) and its sum in a
 *      second; the division by the sum is left to step 4;
 *   4. Y block = P V by the same tiled product, each row scaled by 1 / sum,
 *      straight into Y when it is float32, else through a float32 panel
 *      rounded on store.
 * Row blocks hold at most AK_PANEL score floats (L2-sized) and are made
 * small enough that every thread gets several tasks. The scalar fallback
 * (PRECIS_CPU_ISA=scalar) runs the same steps with plain loops. */
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
} ak_state;

/* ------------------------------------------------------------ registry */

static bool ak_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Attention || n->n_inputs < 3 || n->n_outputs != 1) return false;
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
    *state = s;
    return PRECIS_OK;
}

static const char *ak_describe(void *state) {
    const ak_state *s = state;
    return s->v512 ? "attention:avx512" : "attention:scalar";
}

static void ak_destroy(void *state) { free(state); }

/* ------------------------------------------------------------ tiled product */

/* Row i of C[mr x n] = rsc[i] * (row i of A[mr x K] B[K x n]), n <= AK_NR
 * given as the two lane masks of the 32 columns; A's row i at A + i*lda
 * (lda may be 0), B's row k at B + k*ldb, C's row i at C + i*ldc (all
 * float32). */
typedef void (*ak_tile_fn)(int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                           __mmask16 m0, __mmask16 m1, const float *rsc, float *C, int64_t ldc);

KN_AVX512 static inline __attribute__((always_inline)) void
ak_tile512(const int mr, int64_t K, const float *restrict A, int64_t lda, const float *restrict B,
           int64_t ldb, __mmask16 m0, __mmask16 m1, const float *restrict rsc, float *restrict C,
           int64_t ldc) {
    __m512 c0[AK_MR], c1[AK_MR];
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K; k++) {
        const __m512 b0 = _mm512_maskz_loadu_ps(m0, B + k * ldb);
        const __m512 b1 = _mm512_maskz_loadu_ps(m1, B + k * ldb + 16);
#pragma GCC unroll 14
        for (int i = 0; i < mr; i++) {
            const __m512 a = _mm512_set1_ps(A[i * lda + k]);
            c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
        }
    }
#pragma GCC unroll 14
    for (int i = 0; i < mr; i++) {
        const __m512 r = _mm512_set1_ps(rsc[i]);
        _mm512_mask_storeu_ps(C + i * ldc, m0, _mm512_mul_ps(c0[i], r));
        _mm512_mask_storeu_ps(C + i * ldc + 16, m1, _mm512_mul_ps(c1[i], r));
    }
}

#define AK_DEF(m)                                                                                  \
    KN_AVX512 static void ak_tile512_##m(int64_t K, const float *A, int64_t lda, const float *B,   \
                                         int64_t ldb, __mmask16 m0, __mmask16 m1,                  \
                                         const float *rsc, float *C, int64_t ldc) {                \
        ak_tile512(m, K, A, lda, B, ldb, m0, m1, rsc, C, ldc);                                     \
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
static const ak_tile_fn ak_tiles[AK_MR + 1] = {
    NULL,          ak_tile512_1,  ak_tile512_2,  ak_tile512_3,  ak_tile512_4,
    ak_tile512_5,  ak_tile512_6,  ak_tile512_7,  ak_tile512_8,  ak_tile512_9,
    ak_tile512_10, ak_tile512_11, ak_tile512_12, ak_tile512_13, ak_tile512_14};

/* C[M x N] = A[M x K] B[K x N], row i scaled by rsc[i] (strides as the
 * tile). */
static void ak_gemm(bool v512, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, const float *rsc, float *C, int64_t ldc) {
    if (!v512) {
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc;
            for (int64_t j = 0; j < N; j++) c[j] = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                const float a = A[i * lda + k];
                const float *b = B + k * ldb;
                for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
            }
            for (int64_t j = 0; j < N; j++) c[j] *= rsc[i];
        }
        return;
    }
    for (int64_t j = 0; j < N; j += AK_NR) {
        const int64_t w = N - j < AK_NR ? N - j : AK_NR;
        const __mmask16 m0 = w >= 16 ? (__mmask16)0xffff : kn_tail(w);
        const __mmask16 m1 = w >= 32 ? (__mmask16)0xffff : (w > 16 ? kn_tail(w - 16) : 0);
        for (int64_t i = 0; i < M; i += AK_MR) {
            const int mr = (int)(M - i < AK_MR ? M - i : AK_MR);
            ak_tiles[mr](K, A + i * lda, lda, B + j, ldb, m0, m1, rsc + i, C + i * ldc + j, ldc);
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

/* ------------------------------------------------------------ run */

typedef struct ak_ctx {
    pr_attn_geom a;
    bool v512;
    const void *q, *k, *v, *m;
    pr_dtype qdt, kdt, vdt, mdt;
    void *y;
    int64_t rb;                    /* query rows per task */
    int64_t skp, dvp;              /* padded row strides of the panels */
    bool k_direct, v_direct, q_direct;
    size_t per_thread;             /* floats of scratch per thread */
} ak_ctx;

static const void *at(const void *p, pr_dtype dt, int64_t off) {
    return (const char *)p + (size_t)off * pr_dtype_size(dt);
}

/* Softmax numerators of a score row in place: s[j] = exp(s[j] + m[j] - max)
 * (m: the mask row with unit stride, or NULL); returns their sum (the
 * division is left to P V's row scale). */
KN_AVX512 static float ak_exp_row512(float *s, const void *m, pr_dtype mdt, int64_t n) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 x0 = ninf, x1 = ninf;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 a = _mm512_loadu_ps(s + j), b = _mm512_loadu_ps(s + j + 16);
        if (m) {
            a = _mm512_add_ps(a, kn_ld16(m, mdt, j));
            b = _mm512_add_ps(b, kn_ld16(m, mdt, j + 16));
            _mm512_storeu_ps(s + j, a);
            _mm512_storeu_ps(s + j + 16, b);
        }
        x0 = _mm512_max_ps(x0, a);
        x1 = _mm512_max_ps(x1, b);
    }
    for (; j < n; j += 16) {
        const __mmask16 t = n - j >= 16 ? (__mmask16)0xffff : kn_tail(n - j);
        __m512 a = _mm512_maskz_loadu_ps(t, s + j);
        if (m) {
            a = _mm512_add_ps(a, kn_ld16z(m, mdt, j, t));
            _mm512_mask_storeu_ps(s + j, t, a);
        }
        x0 = _mm512_mask_max_ps(x0, t, x0, a);
    }
    const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(x0, x1)));
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    for (j = 0; j + 32 <= n; j += 32) {
        const __m512 a = kn_exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
        const __m512 b = kn_exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j + 16), vm));
        _mm512_storeu_ps(s + j, a);
        _mm512_storeu_ps(s + j + 16, b);
        s0 = _mm512_add_ps(s0, a);
        s1 = _mm512_add_ps(s1, b);
    }
    for (; j < n; j += 16) {
        const __mmask16 t = n - j >= 16 ? (__mmask16)0xffff : kn_tail(n - j);
        const __m512 a =
            _mm512_maskz_mov_ps(t, kn_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, s + j), vm)));
        _mm512_mask_storeu_ps(s + j, t, a);
        s0 = _mm512_add_ps(s0, a);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

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

/* Rows [r0, r0 + rows) of the scores sp: + mask, softmax numerators; inv[i]
 * gets 1 / their sum. */
static void ak_softmax(const ak_ctx *c, float *sp, int64_t rows, int64_t r0, int64_t moff,
                       float *inv) {
    const int64_t Sk = c->a.Sk, cs = c->a.cs[3];
    for (int64_t i = 0; i < rows; i++) {
        float *s = sp + i * c->skp;
        const void *m = c->m ? at(c->m, c->mdt, moff + (r0 + i) * c->a.rs[3]) : NULL;
        if (m && cs != 1) { /* a broadcast or strided mask row: added first */
            for (int64_t j = 0; j < Sk; j++) s[j] += kn_ld1(m, c->mdt, j * cs);
            m = NULL;
        }
        float sum = c->v512 ? ak_exp_row512(s, m, c->mdt, Sk) : ak_exp_row(s, m, c->mdt, Sk);
        inv[i] = 1.0f / sum;
    }
}

static void ak_task(const ak_ctx *c, int64_t b, int64_t r0, float *ws, int64_t *packed_b) {
    const pr_attn_geom *a = &c->a;
    const bool v5 = c->v512;
    const int64_t rows = a->Sq - r0 < c->rb ? a->Sq - r0 : c->rb;
    int64_t off[4];
    pr_attn_offsets(a, b, off);
    float *kp = ws, *vp = kp + a->D * c->skp, *qp = vp + a->Sk * c->dvp;
    float *sp = qp + c->rb * a->D, *op = sp + c->rb * c->skp, *rsc = op + c->rb * c->dvp;
    float *inv = rsc + c->rb;
    /* K' [D, Sk] and V [Sk, Dv] as float32 rows */
    const float *kb = kp, *vb = vp;
    int64_t ldk = c->skp, ldv = c->dvp;
    if (c->k_direct) {
        kb = (const float *)c->k + off[1];
        ldk = a->rs[1];
    }
    if (c->v_direct) {
        vb = (const float *)c->v + off[2];
        ldv = a->rs[2];
    }
    if (*packed_b != b) {
        if (!c->k_direct) { /* element (d, j) of K' */
            int64_t kds = a->kt ? a->rs[1] : a->cs[1], kjs = a->kt ? a->cs[1] : a->rs[1];
            ak_pack(v5, at(c->k, c->kdt, off[1]), c->kdt, kds, kjs, a->D, a->Sk, kp, c->skp);
        }
        if (!c->v_direct)
            ak_pack(v5, at(c->v, c->vdt, off[2]), c->vdt, a->rs[2], a->cs[2], a->Sk, a->Dv, vp,
                    c->dvp);
        *packed_b = b;
    }
    const float *qb = qp;
    int64_t ldq = a->D;
    if (c->q_direct) {
        qb = (const float *)c->q + off[0] + r0 * a->rs[0];
        ldq = a->rs[0];
    } else {
        ak_pack(v5, at(c->q, c->qdt, off[0] + r0 * a->rs[0]), c->qdt, a->rs[0], a->cs[0], rows,
                a->D, qp, a->D);
    }
    for (int64_t i = 0; i < rows; i++) rsc[i] = a->scale;
    ak_gemm(v5, rows, a->Sk, a->D, qb, ldq, kb, ldk, rsc, sp, c->skp);
    ak_softmax(c, sp, rows, r0, off[3], inv);
    const int64_t yo = (b * a->Sq + r0) * a->Dv;
    if (c->qdt == PRECIS_FLOAT32) {
        ak_gemm(v5, rows, a->Dv, a->Sk, sp, c->skp, vb, ldv, inv, (float *)c->y + yo, a->Dv);
        return;
    }
    ak_gemm(v5, rows, a->Dv, a->Sk, sp, c->skp, vb, ldv, inv, op, c->dvp);
    for (int64_t i = 0; i < rows; i++) {
        void *yr = (char *)c->y + (size_t)(yo + i * a->Dv) * pr_dtype_size(c->qdt);
        if (v5)
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
    c.per_thread =
        kn_pad16(a->D * c.skp + a->Sk * c.dvp + rb * (a->D + c.skp + c.dvp + 2));
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
