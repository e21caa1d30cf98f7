/* MatMul / Gemm / FusedMatMul on float16 activations (kernels_f16.h).
 *
 *   - constant B (an initializer, 2-D or with leading 1s): packed in prepare;
 *     every batch dim of A is folded into the rows of one GEMM;
 *   - activation B (f16, rank >= 2): each distinct B matrix is packed per run
 *     (in parallel), then one GEMM job per output batch (numpy broadcasting
 *     of the batch dims); when B has no batch, A's batches fold into rows.
 * Gemm's C and FusedMatMul's bias must broadcast along rows (shape [N],
 * [1, N] or a single value): they become the epilogue's column bias. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/f16_gemm.h"
#include "backends/cpu/kernels_f16.h"

typedef struct mm_state {
    pr_f16_isa isa;
    bool const_b, trans_a, trans_b;
    int64_t K, N;   /* const B */
    float *bpack;   /* const B, packed */
    float *bias;    /* [nbias] or NULL */
    int64_t nbias;  /* per-column bias length (0: none) */
    int zi;         /* residual input index, or -1 */
    pr_f16_epi epi; /* bias pointer set when nbias > 0 */
    char desc[64];
} mm_state;

static bool is_float_init(const pr_tensor *t) {
    return t && (t->flags & PR_T_INIT) && t->data &&
           (t->dtype == PRECIS_FLOAT32 || t->dtype == PRECIS_FLOAT16) && t->rank >= 0 &&
           pr_numel(t->rank, t->dims) >= 0;
}

static bool is_f16_act(const pr_tensor *t) {
    return t && t->dtype == PRECIS_FLOAT16 && !(t->flags & PR_T_INIT) &&
           t->layout == PR_LAYOUT_PLAIN;
}

/* A bias that adds along rows: one value, or N values in the last dim. */
static bool col_bias_ok(const pr_tensor *b, int64_t N) {
    if (!is_float_init(b)) return false;
    int64_t ne = pr_numel(b->rank, b->dims);
    if (ne == 1) return true;
    if (b->rank < 1 || ne != b->dims[b->rank - 1]) return false;
    return !pr_dim_known(N) || ne == N;
}

/* B's N (columns of B') or PR_DIM_UNKNOWN. */
static int64_t b_cols(const pr_tensor *B, bool tb) {
    return B->rank >= 2 ? B->dims[tb ? B->rank - 2 : B->rank - 1] : PR_DIM_UNKNOWN;
}

static bool mm_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_MatMul && n->op != PR_OP_Gemm && n->op != PR_OP_FusedMatMul) return false;
    if (pr_node_out(n, 0) < 0) return false;
    const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, 1);
    const pr_tensor *Y = &g->tensors[pr_node_out(n, 0)];
    if (!A || !B || !is_f16_act(A) || A->rank < 2) return false;
    /* the output's dtype is A's (unset in a graph not yet inferred) */
    if (Y->dtype != PRECIS_FLOAT16 && Y->dtype != PRECIS_UNDEFINED) return false;
    if (Y->layout != PR_LAYOUT_PLAIN) return false;
    const bool ta = n->op != PR_OP_MatMul && pr_attr_int(n, "transA", 0);
    const bool tb = n->op != PR_OP_MatMul && pr_attr_int(n, "transB", 0);
    if ((ta && A->rank != 2) || (tb && B->rank != 2)) return false;
    if (B->flags & PR_T_INIT) {
        if (!is_float_init(B) || B->rank < 2) return false;
        for (int d = 0; d < B->rank - 2; d++)
            if (B->dims[d] != 1) return false;
    } else {
        if (!is_f16_act(B) || B->rank < 2) return false;
    }
    const int64_t N = b_cols(B, tb);
    if (n->op == PR_OP_Gemm) {
        if (A->rank != 2 || B->rank != 2) return false;
        const pr_tensor *C = pr_node_tin(g, n, 2);
        if (C && !col_bias_ok(C, N)) return false;
    } else if (n->op == PR_OP_FusedMatMul) {
        const pr_tensor *bias = pr_node_tin(g, n, 2), *Z = pr_node_tin(g, n, 3);
        if (bias && !col_bias_ok(bias, N)) return false;
        if (Z && (Z->dtype != PRECIS_FLOAT16 || Z->layout != PR_LAYOUT_PLAIN)) return false;
        pr_act a;
        if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
    }
    return true;
}

static int mm_inplace(const pr_graph *g, const pr_node *n) {
    (void)g;
    return n->op == PR_OP_FusedMatMul && pr_node_in(n, 3) >= 0 ? 3 : -1;
}

static void mm_destroy(void *p) {
    mm_state *s = p;
    if (!s) return;
    free(s->bpack);
    free(s->bias);
    free(s);
}

static float *to_f32(const pr_tensor *t) {
    int64_t ne = pr_numel(t->rank, t->dims);
    float *f = malloc((size_t)(ne > 0 ? ne : 1) * sizeof(float));
    if (f) pr_ref_to_f32(t->data, t->dtype, ne, f);
    return f;
}

static precis_status mm_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    (void)cfg;
    const pr_tensor *B = pr_node_tin(g, n, 1);
    mm_state *s = calloc(1, sizeof *s);
    float *bf = NULL;
    if (!s) goto oom;
    s->isa = pr_f16_isa_best();
    s->zi = -1;
    s->epi.alpha = 1.0f;
    if (n->op != PR_OP_MatMul) {
        s->trans_a = pr_attr_int(n, "transA", 0) != 0;
        s->trans_b = pr_attr_int(n, "transB", 0) != 0;
        s->epi.alpha = pr_attr_float(n, "alpha", 1.0f);
    }
    const pr_tensor *bias = NULL;
    float bscale = 1.0f;
    if (n->op == PR_OP_Gemm) {
        bias = pr_node_tin(g, n, 2);
        bscale = pr_attr_float(n, "beta", 1.0f);
    } else if (n->op == PR_OP_FusedMatMul) {
        bias = pr_node_tin(g, n, 2);
        if (pr_node_in(n, 3) >= 0) s->zi = 3;
        pr_act_from_node(n, "act", &s->epi.act);
        pr_act_from_node(n, "act2", &s->epi.act2);
    }
    if (bias && bscale != 0.0f) {
        float *v = to_f32(bias);
        if (!v) goto oom;
        int64_t ne = pr_numel(bias->rank, bias->dims);
        if (ne == 1) {
            s->epi.bias_c = bscale * v[0];
            free(v);
        } else {
            for (int64_t i = 0; i < ne; i++) v[i] *= bscale;
            s->bias = v;
            s->nbias = ne;
            s->epi.bias = v;
        }
    }
    s->const_b = (B->flags & PR_T_INIT) != 0;
    if (s->const_b) {
        const int64_t R = B->dims[B->rank - 2], Cc = B->dims[B->rank - 1];
        s->K = s->trans_b ? Cc : R;
        s->N = s->trans_b ? R : Cc;
        if (s->nbias && s->nbias != s->N) {
            const long long nbias = (long long)s->nbias, nn = (long long)s->N;
            mm_destroy(s);
            return pr_errf(e, PRECIS_ERR_SHAPE, "node '%s' (%s): bias has %lld values, N is %lld",
                           n->name, n->op_type, nbias, nn);
        }
        if (!(bf = to_f32(B))) goto oom;
        size_t fl = pr_f16_bpack_floats(s->isa, s->K, s->N);
        s->bpack = aligned_alloc(64, (fl * sizeof(float) + 63) / 64 * 64 + 64);
        if (!s->bpack) goto oom;
        if (s->trans_b) pr_f16_pack_b_f32(s->isa, bf, 1, s->K, s->K, s->N, s->bpack);
        else pr_f16_pack_b_f32(s->isa, bf, s->N, 1, s->K, s->N, s->bpack);
        free(bf);
        bf = NULL;
    }
    snprintf(s->desc, sizeof s->desc, "f16.matmul:%s:%s", s->const_b ? "packed" : "dynamic",
             pr_f16_isa_name(s->isa));
    *state = s;
    return PRECIS_OK;
oom:
    free(bf);
    mm_destroy(s);
    return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (%s): out of memory", n->name, n->op_type);
}

static size_t align64(size_t b) { return (b + 63) & ~(size_t)63; }

static precis_status mm_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    mm_state *s = state;
    const pr_buf *A = k->in[0], *B = k->in[1];
    const pr_buf *Z = s->zi >= 0 ? pr_kin(k, s->zi) : NULL;
    pr_buf *Y = k->out[0];
    const int nt = x->num_threads > 0 ? x->num_threads : 1;
    if (A->dtype != PRECIS_FLOAT16 || Y->dtype != PRECIS_FLOAT16 || A->rank < 2)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "f16 matmul: unexpected input/output");
    if (Z && (Z->numel != Y->numel || Z->dtype != PRECIS_FLOAT16))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    const int ra = A->rank;
    const int64_t M = A->dims[s->trans_a ? ra - 1 : ra - 2];
    const int64_t K = A->dims[s->trans_a ? ra - 2 : ra - 1];
    const uint16_t *ad = A->data, *zd = Z ? Z->data : NULL;
    uint16_t *yd = Y->data;

    if (s->const_b) {
        if (K != s->K)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "inner dimensions differ: %lld vs %lld",
                              (long long)K, (long long)s->K);
        int64_t rows = M;
        if (!s->trans_a)
            for (int d = 0; d < ra - 2; d++) rows *= A->dims[d];
        if (Y->numel != rows * s->N)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output buffer shape does not match");
        if (Y->numel == 0) return PRECIS_OK;
        pr_f16_gemm_job j;
        memset(&j, 0, sizeof j);
        j.M = rows;
        j.N = s->N;
        j.K = K;
        j.a = ad;
        j.lda = s->trans_a ? M : K;
        j.trans_a = s->trans_a;
        j.b = s->bpack;
        j.c = yd;
        j.ldc = s->N;
        j.z = zd;
        j.ldz = s->N;
        j.epi = &s->epi;
        void *mem = pr_cpu_scratch(x, pr_f16_gemm_scratch_size(s->isa, 1, nt));
        if (!mem) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory (scratch)");
        pr_f16_gemm_run(s->isa, &j, 1, nt, mem);
        return PRECIS_OK;
    }

    /* activation x activation */
    if (B->dtype != PRECIS_FLOAT16 || B->rank < 2)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "f16 matmul: unexpected B");
    const int rb = B->rank;
    const int64_t Kb = B->dims[s->trans_b ? rb - 1 : rb - 2];
    const int64_t N = B->dims[s->trans_b ? rb - 2 : rb - 1];
    if (K != Kb)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "inner dimensions differ: %lld vs %lld",
                          (long long)K, (long long)Kb);
    if (s->nbias && s->nbias != N)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bias has %lld values, N is %lld",
                          (long long)s->nbias, (long long)N);
    /* batch dims, right-aligned */
    const int nb = (ra > rb ? ra : rb) - 2;
    int64_t yb[PR_MAX_RANK], sa[PR_MAX_RANK], sb[PR_MAX_RANK];
    int64_t nbat = 1, nba = 1, nbb = 1;
    int64_t stA = 1, stB = 1;
    for (int d = nb - 1; d >= 0; d--) {
        const int da = d - (nb - (ra - 2)), db = d - (nb - (rb - 2));
        const int64_t xa = da >= 0 ? A->dims[da] : 1, xb = db >= 0 ? B->dims[db] : 1;
        if (xa != xb && xa != 1 && xb != 1)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "batch dims %lld and %lld do not broadcast",
                              (long long)xa, (long long)xb);
        yb[d] = xa == 1 ? xb : xa;
        sa[d] = xa == 1 ? 0 : stA;
        sb[d] = xb == 1 ? 0 : stB;
        stA *= xa;
        stB *= xb;
        nbat *= yb[d];
        nba *= xa;
        nbb *= xb;
    }
    if (Y->numel != nbat * M * N)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output buffer shape does not match");
    if (Y->numel == 0) return PRECIS_OK;
    const bool fold = nbb == 1 && !s->trans_a; /* A's batches become rows */
    const int njobs = fold ? 1 : (int)nbat;
    if (!fold && nbat > (1 << 24)) return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "too many batches");
    const size_t bfl = pr_f16_bpack_floats(s->isa, K, N);
    const size_t jb = align64((size_t)njobs * sizeof(pr_f16_gemm_job));
    const size_t pb = align64((size_t)nbb * bfl * sizeof(float));
    const size_t gb = pr_f16_gemm_scratch_size(s->isa, njobs, nt);
    char *mem = pr_cpu_scratch(x, jb + pb + gb);
    if (!mem) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory (scratch)");
    pr_f16_gemm_job *jobs = (pr_f16_gemm_job *)mem;
    float *bp = (float *)(mem + jb);
    const uint16_t *bd = B->data;
    const int64_t brs = s->trans_b ? 1 : N, bcs = s->trans_b ? K : 1;
    const int64_t npan = (N + PR_F16_NR - 1) / PR_F16_NR, nunits = nbb * npan;
    /* pack every B matrix, one 32-column panel per unit */
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && nunits > 1)
    for (int64_t u = 0; u < nunits; u++) {
        const int64_t bi = u / npan, p = u % npan, n0 = p * PR_F16_NR;
        const int64_t nn = N - n0 < PR_F16_NR ? N - n0 : PR_F16_NR;
        pr_f16_pack_b_f16(s->isa, bd + bi * K * N + n0 * bcs, brs, bcs, K, nn,
                          bp + bi * bfl + pr_f16_bpack_panel(s->isa, K, p));
    }
    for (int q = 0; q < njobs; q++) {
        pr_f16_gemm_job *j = &jobs[q];
        memset(j, 0, sizeof *j);
        int64_t ia = 0, ib = 0, rem = q;
        for (int d = nb - 1; d >= 0; d--) {
            const int64_t i = rem % yb[d];
            rem /= yb[d];
            ia += i * sa[d];
            ib += i * sb[d];
        }
        j->M = fold ? nba * M : M;
        j->N = N;
        j->K = K;
        j->a = ad + ia * M * K;
        j->lda = s->trans_a ? M : K;
        j->trans_a = s->trans_a;
        j->b = bp + ib * bfl;
        j->c = yd + (int64_t)q * M * N;
        j->ldc = N;
        j->z = zd ? zd + (int64_t)q * M * N : NULL;
        j->ldz = N;
        j->epi = &s->epi;
    }
    pr_f16_gemm_run(s->isa, jobs, njobs, nt, mem + jb + pb);
    return PRECIS_OK;
}

static const char *mm_describe(void *state) { return ((mm_state *)state)->desc; }

const pr_cpu_impl pr_cpu_impl_f16_matmul = {
    .name = "f16.matmul",
    .supports = mm_supports,
    .nhwc_ok = NULL,
    .inplace_input = mm_inplace,
    .prepare = mm_prepare,
    .run = mm_run,
    .describe = mm_describe,
    .destroy = mm_destroy,
};
