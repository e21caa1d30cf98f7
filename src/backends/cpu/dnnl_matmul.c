/* oneDNN matrix products: MatMul, Gemm and FusedMatMul, float32 or bfloat16.
 *
 * Two modes:
 *   - constant B (a float32 2-D initializer): B' = alpha * B (transB folded)
 *     is packed once into the layout the primitive wants (format `any`); A of
 *     any rank >= 2 has its batch dims folded into M. A per-column constant
 *     bias (times beta for Gemm) is the primitive's bias argument.
 *   - B an activation (attention: Q.K^T, P.V): plain strides, numpy batch
 *     broadcasting (dims of 1), transA/transB (2-D operands) as strides,
 *     alpha as a scale post-op.
 * Other biases (Gemm's C of shape [M, N] or [M, 1], activation biases) are a
 * binary-add post-op (beta != 1 on an activation C: scale(1/beta), add,
 * scale(beta)). Then act, the residual Z (sum post-op, Z copied into the
 * output first unless it is already there) and act2. One primitive per
 * concrete shape and thread count (pr_dnnl_cache); matmuls on activations
 * are made lazily per shape (prepare makes one for the graph's shape). */
#include "backends/cpu/dnnl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRECIS_HAVE_DNNL

typedef struct mm_state {
    pr_dtype dt;
    bool const_b; /* mode: constant B packed, else B an activation */
    bool ta, tb;
    float alpha, beta;
    int64_t K, N; /* constant B: B' is K x N */
    pr_dnnl_weights w;
    /* bias: none, the primitive's bias argument (constant, per column: N
     * floats), or a binary post-op (constant: f32 data of bias_dims; else the
     * activation input 2) */
    enum { BIAS_NONE, BIAS_ARG, BIAS_BINARY } bias_kind;
    bool bias_const;
    float *bias;
    int bias_rank;
    int64_t bias_dims[PR_MAX_RANK];
    bool beta_trick; /* activation C with beta != 1 */
    bool has_z;
    pr_act act, act2;
    pr_dnnl_cache cache;
    char desc[96];
} mm_state;

/* keys: constant B: M, Mb, Nb (binary bias, folded to 2-D; 0 if none),
 * threads. Activation B: R, A dims, B dims, bias dims (each padded to rank
 * R with leading 1s; bias 0s if none), threads. */

static bool is_init(const pr_tensor *t) { return t && (t->flags & PR_T_INIT) && t->data; }

static bool act_dt_ok(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 || (dt == PRECIS_BFLOAT16 && pr_dnnl_bf16_ok());
}

static bool plain_layout(const pr_tensor *t) {
    return t->rank != 4 || t->layout == PR_LAYOUT_PLAIN;
}

static bool all_known(int rank, const int64_t *d) {
    for (int i = 0; i < rank; i++)
        if (!pr_dim_known(d[i])) return false;
    return true;
}

/* Does a constant bias vary only along the last dim (per column of N)? */
static bool bias_per_col(const pr_tensor *b, int64_t N) {
    for (int i = 0; i + 1 < b->rank; i++)
        if (b->dims[i] != 1) return false;
    int64_t last = b->rank ? b->dims[b->rank - 1] : 1;
    return last == 1 || last == N;
}

static void mm_fill(mm_state *s, const pr_graph *g, const pr_node *n);
static dnnl_status_t mm_chain(const mm_state *s, const dnnl_memory_desc_t *bin_md, pr_dnnl_po *po,
                              int *bin_idx);

static bool mm_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_MatMul && n->op != PR_OP_Gemm && n->op != PR_OP_FusedMatMul) return false;
    const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, 1), *Y = pr_node_tout(g, n, 0);
    const pr_tensor *C = n->op != PR_OP_MatMul ? pr_node_tin(g, n, 2) : NULL;
    const pr_tensor *Z = n->op == PR_OP_FusedMatMul ? pr_node_tin(g, n, 3) : NULL;
    int max_in = n->op == PR_OP_MatMul ? 2 : n->op == PR_OP_Gemm ? 3 : 4;
    if (!A || !B || !Y || n->n_inputs > max_in) return false;
    if (!act_dt_ok(A->dtype) || A->rank < 2 || !plain_layout(A)) return false;
    if (Y->dtype != PRECIS_UNDEFINED && Y->dtype != A->dtype) return false;
    if (!plain_layout(Y)) return false;
    bool ta = pr_attr_int(n, "transA", 0) != 0, tb = pr_attr_int(n, "transB", 0) != 0;
    if (n->op == PR_OP_MatMul) ta = tb = false;
    if (n->op == PR_OP_Gemm && (A->rank != 2 || B->rank != 2)) return false;
    if (ta && A->rank != 2) return false;
    bool cb = is_init(B) && B->dtype == PRECIS_FLOAT32 && B->rank == 2 && all_known(2, B->dims);
    if (cb) {
        int64_t K = B->dims[tb ? 1 : 0], N = B->dims[tb ? 0 : 1];
        if (K == 0 || N == 0) return false;
        int64_t Ka = A->dims[ta ? 0 : A->rank - 1];
        if (pr_dim_known(Ka) && Ka != K) return false;
    } else {
        if (B->dtype != A->dtype || B->rank < 2 || !plain_layout(B)) return false;
        if (tb && B->rank != 2) return false;
        int R = A->rank > B->rank ? A->rank : B->rank;
        if (R > PR_MAX_RANK) return false;
    }
    if (C) {
        if (is_init(C)) {
            if (C->dtype != PRECIS_FLOAT32 || !all_known(C->rank, C->dims)) return false;
        } else if (C->dtype != PRECIS_FLOAT32 && C->dtype != A->dtype) {
            return false;
        }
        int yr = A->rank > B->rank ? A->rank : B->rank;
        if (C->rank > yr || (C->rank == 4 && !plain_layout(C))) return false;
    }
    if (n->op == PR_OP_FusedMatMul) {
        pr_act a1, a2;
        if (!pr_act_from_node(n, "act", &a1) || !pr_act_from_node(n, "act2", &a2)) return false;
        if (Z && (Z->dtype != A->dtype || !plain_layout(Z))) return false;
    }
    /* the epilogue must make a chain oneDNN computes correctly */
    mm_state s;
    memset(&s, 0, sizeof s);
    mm_fill(&s, g, n);
    pr_dnnl_po po = {0};
    dnnl_memory_desc_t bin;
    const dnnl_dims_t one = {1, 1};
    int idx;
    bool ok = dnnl_memory_desc_init_by_tag(&bin, 2, one, dnnl_f32, dnnl_ab) == dnnl_success &&
              mm_chain(&s, s.bias_kind == BIAS_BINARY ? &bin : NULL, &po, &idx) == dnnl_success;
    pr_dnnl_po_destroy(&po);
    return ok;
}

static int mm_inplace_input(const pr_graph *g, const pr_node *n) {
    return n->op == PR_OP_FusedMatMul && pr_node_in(n, 3) >= 0 ? 3 : -1;
}

/* dims padded on the left with 1s to rank R */
static void pad_dims(int rank, const int64_t *d, int R, int64_t *out) {
    for (int i = 0; i < R; i++) out[i] = i < R - rank ? 1 : d[i - (R - rank)];
}

/* A rank-2 desc of a matrix stored transposed ([cols, rows] row-major). */
static dnnl_status_t md_2d(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, bool trans,
                           dnnl_data_type_t dt) {
    dnnl_dims_t d = {rows, cols};
    dnnl_dims_t s = {trans ? 1 : cols, trans ? rows : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, d, dt, s);
}

/* A rank-R operand stored row-major with dims `stored`; with trans, the
 * matrix is the transpose of the stored last two dims (strides swapped). */
static dnnl_status_t md_stored(dnnl_memory_desc_t *md, int R, const int64_t *stored, bool trans,
                               dnnl_data_type_t dt) {
    dnnl_dims_t d, st;
    int64_t stride = 1;
    for (int i = R - 1; i >= 0; i--) {
        d[i] = stored[i];
        st[i] = stride;
        stride *= stored[i] > 0 ? stored[i] : 1;
    }
    if (trans) {
        int64_t t = d[R - 1];
        d[R - 1] = d[R - 2];
        d[R - 2] = t;
        t = st[R - 1];
        st[R - 1] = st[R - 2];
        st[R - 2] = t;
    }
    return dnnl_memory_desc_init_by_strides(md, R, d, dt, st);
}

typedef struct mm_ctx {
    mm_state *s;
} mm_ctx;

/* Post-ops: [scale(pre)] [add bias] [scale(beta)] act [sum act2], where
 * pre is alpha (activation B; constant B has it folded into the weights)
 * divided by beta when an activation C is added as alpha/beta*AB + C and then
 * scaled by beta. */
static dnnl_status_t mm_chain1(const mm_state *s, const dnnl_memory_desc_t *bin_md, pr_dnnl_po *po,
                               int *bin_idx) {
    dnnl_status_t r = dnnl_success;
    float pre = (s->const_b ? 1.0f : s->alpha) / (s->beta_trick ? s->beta : 1.0f);
    *bin_idx = -1;
    if (pre != 1.0f) r = pr_dnnl_po_scale(po, pre);
    if (r == dnnl_success && bin_md) {
        r = pr_dnnl_po_binary(po, dnnl_binary_add, bin_md, bin_idx);
        if (r == dnnl_success && s->beta_trick) r = pr_dnnl_po_scale(po, s->beta);
    }
    if (r == dnnl_success) r = pr_dnnl_po_act(po, &s->act);
    if (r == dnnl_success && s->has_z) r = pr_dnnl_po_sum(po);
    if (r == dnnl_success) r = pr_dnnl_po_act(po, &s->act2);
    return r;
}

/* po (zeroed or initialised) := the chain, trying both preferences */
static dnnl_status_t mm_chain(const mm_state *s, const dnnl_memory_desc_t *bin_md, pr_dnnl_po *po,
                              int *bin_idx) {
    dnnl_status_t r = dnnl_unimplemented;
    for (int pref = 0; pref < 2 && r != dnnl_success; pref++) {
        pr_dnnl_po_destroy(po);
        if ((r = pr_dnnl_po_init(po)) != dnnl_success) return r;
        po->pref = pref;
        r = mm_chain1(s, bin_md, po, bin_idx);
    }
    return r;
}

/* Common tail: desc, pd (with the key's thread count), weights, primitive. */
static precis_status mm_finish(mm_state *s, pr_dnnl_entry *ent, int threads,
                               const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *wmd,
                               const dnnl_memory_desc_t *bmd, const dnnl_memory_desc_t *dmd,
                               const dnnl_memory_desc_t *bin_md, pr_err *e) {
    precis_status st;
    dnnl_matmul_desc_t md;
    pr_dnnl_po po = {0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int bin_idx;
    PR_TRY(pr_dnnl_check(dnnl_matmul_desc_init(&md, smd, wmd, bmd, dmd), e, "matmul desc"));
    PR_TRY(pr_dnnl_check(mm_chain(s, bin_md, &po, &bin_idx), e, "post-ops"));
    PR_TRY(pr_dnnl_check(pr_dnnl_attr(&attr, po.po), e, "attributes"));
    dnnl_engine_t eng = pr_dnnl_engine(e);
    if (!eng) {
        st = e->status;
        goto fail;
    }
    int saved = pr_dnnl_threads_set(threads);
    st = pr_dnnl_check(dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL), e, "matmul");
    const dnnl_memory_desc_t *want =
        st ? NULL : dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (!st && s->const_b) st = pr_dnnl_weights_for(&s->w, want, ent, e);
    if (!st) st = pr_dnnl_entry_set_prim(ent, pd, e);
    pr_dnnl_threads_restore(saved);
    if (st) goto fail;
    pr_dnnl_entry_arg(ent, DNNL_ARG_SRC, smd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_WEIGHTS, s->const_b ? want : wmd);
    if (bmd) pr_dnnl_entry_arg(ent, DNNL_ARG_BIAS, bmd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_DST, dmd);
    if (bin_md)
        pr_dnnl_entry_arg(ent, DNNL_ARG_ATTR_MULTIPLE_POST_OP(bin_idx) | DNNL_ARG_SRC_1, bin_md);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    pr_dnnl_po_destroy(&po);
    return st;
}

/* key: M, Mb, Nb, bias dtype, threads */
enum { KA_M, KA_MB, KA_NB, KA_BDT, KA_THREADS, KA_COUNT };

static precis_status mm_create_const(void *vctx, const int64_t *key, int nkey, pr_dnnl_entry *ent,
                                     pr_err *e) {
    mm_state *s = ((mm_ctx *)vctx)->s;
    int64_t M = key[KA_M];
    ent->out_dims[0] = M;
    ent->out_dims[1] = s->N;
    if (M == 0) return PRECIS_OK;
    dnnl_data_type_t dt = pr_dnnl_dt(s->dt);
    dnnl_memory_desc_t smd, wmd, bmd, dmd, bin;
    precis_status st;
    dnnl_dims_t wd = {s->K, s->N}, bd = {1, s->N};
    PR_TRY(pr_dnnl_check(md_2d(&smd, M, s->K, s->ta, dt), e, "src desc"));
    PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&wmd, 2, wd, dt, dnnl_format_tag_any), e,
                         "weights desc"));
    PR_TRY(pr_dnnl_check(md_2d(&dmd, M, s->N, false, dt), e, "dst desc"));
    if (s->bias_kind == BIAS_ARG)
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_f32, dnnl_ab), e,
                             "bias desc"));
    if (s->bias_kind == BIAS_BINARY)
        PR_TRY(pr_dnnl_check(md_2d(&bin, key[KA_MB], key[KA_NB], false,
                                   s->bias_const ? dnnl_f32 : (dnnl_data_type_t)key[KA_BDT]),
                             e, "bias desc"));
    st = mm_finish(s, ent, (int)key[KA_THREADS], &smd, &wmd, s->bias_kind == BIAS_ARG ? &bmd : NULL,
                   &dmd, s->bias_kind == BIAS_BINARY ? &bin : NULL, e);
fail:
    return st;
}

static precis_status mm_create_act(void *vctx, const int64_t *key, int nkey, pr_dnnl_entry *ent,
                                   pr_err *e) {
    mm_state *s = ((mm_ctx *)vctx)->s;
    int R = (int)key[0];
    const int64_t *ad = key + 1, *bd = key + 1 + R, *cd = key + 1 + 2 * R;
    int64_t bdt = key[1 + 3 * R], threads = key[2 + 3 * R];
    int64_t M = s->ta ? ad[R - 1] : ad[R - 2], K = s->ta ? ad[R - 2] : ad[R - 1];
    int64_t Kb = s->tb ? bd[R - 1] : bd[R - 2], N = s->tb ? bd[R - 2] : bd[R - 1];
    if (K != Kb)
        return pr_errf(e, PRECIS_ERR_SHAPE, "inner dimensions differ: %lld vs %lld", (long long)K,
                       (long long)Kb);
    int64_t od[PR_MAX_RANK];
    bool empty = M == 0 || N == 0;
    for (int i = 0; i < R - 2; i++) {
        if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1)
            return pr_errf(e, PRECIS_ERR_SHAPE, "batch dims %lld and %lld do not broadcast",
                           (long long)ad[i], (long long)bd[i]);
        od[i] = ad[i] == 1 ? bd[i] : ad[i];
        if (od[i] == 0) empty = true;
    }
    od[R - 2] = M;
    od[R - 1] = N;
    memcpy(ent->out_dims, od, (size_t)R * sizeof *od);
    if (empty) return PRECIS_OK;
    if (K == 0) return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "inner dimension 0");
    dnnl_data_type_t dt = pr_dnnl_dt(s->dt);
    dnnl_memory_desc_t smd, wmd, dmd, bin;
    precis_status st;
    PR_TRY(pr_dnnl_check(md_stored(&smd, R, ad, s->ta, dt), e, "src desc"));
    PR_TRY(pr_dnnl_check(md_stored(&wmd, R, bd, s->tb, dt), e, "weights desc"));
    PR_TRY(pr_dnnl_check(pr_dnnl_md_plain(&dmd, R, od, dt), e, "dst desc"));
    if (s->bias_kind == BIAS_BINARY) {
        for (int i = 0; i < R; i++)
            if (cd[i] != 1 && cd[i] != od[i])
                return pr_errf(e, PRECIS_ERR_SHAPE, "bias does not broadcast to the output");
        PR_TRY(pr_dnnl_check(
            pr_dnnl_md_plain(&bin, R, cd, s->bias_const ? dnnl_f32 : (dnnl_data_type_t)bdt), e,
            "bias desc"));
    }
    st = mm_finish(s, ent, (int)threads, &smd, &wmd, NULL, &dmd,
                   s->bias_kind == BIAS_BINARY ? &bin : NULL, e);
fail:
    return st;
}

static void mm_destroy(void *state) {
    mm_state *s = state;
    if (!s) return;
    pr_dnnl_cache_destroy(&s->cache);
    pr_dnnl_weights_free(&s->w);
    free(s->bias);
    free(s);
}

/* Keys from concrete dims (run) or representative ones (prepare). */
static precis_status key_const(const mm_state *s, int arank, const int64_t *adims, int brank,
                               const int64_t *bdims, pr_dtype bdtype, int yrank, int threads,
                               int64_t *key, pr_err *e) {
    int64_t M = 1;
    if (s->ta) {
        M = adims[1];
        if (adims[0] != s->K) goto kbad;
    } else {
        for (int i = 0; i < arank - 1; i++) M *= adims[i];
        if (adims[arank - 1] != s->K) goto kbad;
    }
    key[KA_M] = M;
    key[KA_MB] = key[KA_NB] = key[KA_BDT] = 0;
    if (s->bias_kind == BIAS_BINARY) {
        /* fold to [Mb, Nb]: leading dims all 1 (Mb = 1) or all the output's */
        int64_t cd[PR_MAX_RANK] = {0};
        if (brank > yrank) return pr_errf(e, PRECIS_ERR_SHAPE, "bias has too many dims");
        pad_dims(brank, bdims, yrank, cd);
        bool ones = true, full = true;
        for (int i = 0; i < yrank - 1; i++) {
            int64_t yd = s->ta ? adims[1] : adims[i]; /* ta: yrank == 2 */
            if (cd[i] != 1) ones = false;
            if (cd[i] != yd) full = false;
        }
        int64_t nb = cd[yrank - 1];
        if ((!ones && !full) || (nb != 1 && nb != s->N))
            return pr_errf(e, PRECIS_ERR_SHAPE, "bias does not broadcast to the output");
        key[KA_MB] = ones ? 1 : M;
        key[KA_NB] = nb;
        key[KA_BDT] = s->bias_const ? dnnl_f32 : pr_dnnl_dt(bdtype);
    }
    key[KA_THREADS] = threads;
    return PRECIS_OK;
kbad:
    return pr_errf(e, PRECIS_ERR_SHAPE, "A's inner dimension is not %lld", (long long)s->K);
}

static int key_act(const mm_state *s, int arank, const int64_t *adims, int brank,
                   const int64_t *bdims, int crank, const int64_t *cdims, pr_dtype cdtype,
                   int threads, int64_t *key) {
    int R = arank > brank ? arank : brank;
    key[0] = R;
    pad_dims(arank, adims, R, key + 1);
    pad_dims(brank, bdims, R, key + 1 + R);
    if (s->bias_kind == BIAS_BINARY && crank <= R)
        pad_dims(crank, cdims, R, key + 1 + 2 * R);
    else
        memset(key + 1 + 2 * R, 0, (size_t)R * sizeof *key);
    key[1 + 3 * R] = s->bias_kind == BIAS_BINARY && !s->bias_const ? pr_dnnl_dt(cdtype) : 0;
    key[2 + 3 * R] = threads;
    return 3 + 3 * R;
}

/* The state's scalar settings from the graph (no allocation). */
static void mm_fill(mm_state *s, const pr_graph *g, const pr_node *n) {
    const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, 1);
    const pr_tensor *C = n->op != PR_OP_MatMul ? pr_node_tin(g, n, 2) : NULL;
    const pr_tensor *Z = n->op == PR_OP_FusedMatMul ? pr_node_tin(g, n, 3) : NULL;
    s->dt = A->dtype;
    s->ta = n->op != PR_OP_MatMul && pr_attr_int(n, "transA", 0) != 0;
    s->tb = n->op != PR_OP_MatMul && pr_attr_int(n, "transB", 0) != 0;
    s->alpha = n->op != PR_OP_MatMul ? pr_attr_float(n, "alpha", 1.0f) : 1.0f;
    s->beta = n->op == PR_OP_Gemm ? pr_attr_float(n, "beta", 1.0f) : 1.0f;
    s->const_b = is_init(B) && B->dtype == PRECIS_FLOAT32 && B->rank == 2;
    if (n->op == PR_OP_FusedMatMul) {
        pr_act_from_node(n, "act", &s->act);
        pr_act_from_node(n, "act2", &s->act2);
    }
    s->has_z = Z != NULL;
    if (s->const_b) {
        s->K = B->dims[s->tb ? 1 : 0];
        s->N = B->dims[s->tb ? 0 : 1];
    }
    s->bias_kind = BIAS_NONE;
    if (C && s->beta != 0.0f) {
        s->bias_const = is_init(C);
        if (s->bias_const) {
            s->bias_kind = s->const_b && bias_per_col(C, s->N) ? BIAS_ARG : BIAS_BINARY;
        } else {
            s->bias_kind = BIAS_BINARY;
            s->beta_trick = s->beta != 1.0f;
        }
    }
}

static precis_status mm_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    *state = NULL;
    if (!mm_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by dnnl.matmul",
                       n->name, n->op_type);
    if (!pr_dnnl_engine(e)) return e->status;
    mm_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    precis_status st = pr_dnnl_cache_init(&s->cache, e);
    if (st) {
        free(s);
        return st;
    }
    float *scaled = NULL;
    const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, 1);
    const pr_tensor *C = n->op != PR_OP_MatMul ? pr_node_tin(g, n, 2) : NULL;
    mm_fill(s, g, n);
    if (s->bias_kind != BIAS_NONE && s->bias_const) {
        /* constant bias: float32, times beta (per column: N values) */
        int64_t ne = pr_numel(C->rank, C->dims);
        int64_t nb = s->bias_kind == BIAS_ARG ? s->N : ne;
        s->bias = malloc((size_t)(nb ? nb : 1) * sizeof(float));
        if (!s->bias) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        const float *cv = C->data;
        for (int64_t i = 0; i < nb; i++) s->bias[i] = s->beta * cv[ne == 1 ? 0 : i];
        s->bias_rank = C->rank;
        memcpy(s->bias_dims, C->dims, sizeof s->bias_dims);
    }
    if (s->bias_kind == BIAS_NONE) C = NULL;
    int threads = cfg && cfg->num_threads > 0 ? cfg->num_threads : 1;
    int64_t key[PR_DNNL_KEY_MAX];
    int64_t ad[PR_MAX_RANK], bd[PR_MAX_RANK];
    /* representative shape for unknown dims */
    for (int i = 0; i < A->rank; i++) ad[i] = pr_dim_known(A->dims[i]) ? A->dims[i] : 32;
    for (int i = 0; i < B->rank; i++) bd[i] = pr_dim_known(B->dims[i]) ? B->dims[i] : 32;
    mm_ctx c = {s};
    if (s->const_b) {
        /* B' = alpha * op(B), K x N row-major (transB via strides) */
        const float *bsrc = B->data;
        if (s->alpha != 1.0f) {
            int64_t ne = s->K * s->N;
            scaled = malloc((size_t)ne * sizeof *scaled);
            if (!scaled) {
                st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
                goto fail;
            }
            for (int64_t i = 0; i < ne; i++) scaled[i] = s->alpha * bsrc[i];
            bsrc = scaled;
        }
        s->w.user = bsrc;
        PR_TRY(pr_dnnl_check(md_2d(&s->w.user_md, s->K, s->N, s->tb, dnnl_f32), e, "weights desc"));
        if (s->ta)
            ad[0] = s->K;
        else
            ad[A->rank - 1] = s->K;
        /* C as in the graph: for a symbolic one the representative dims of A */
        int64_t cdims[PR_MAX_RANK];
        int crank = 0;
        if (s->bias_kind == BIAS_BINARY) {
            crank = C->rank;
            for (int i = 0; i < crank; i++) {
                int64_t d = C->dims[i];
                int ya = i + (A->rank - crank); /* the matching dim of A/Y */
                cdims[i] = pr_dim_known(d)     ? d
                           : ya == A->rank - 1 ? s->N
                                               : (ya >= 0 ? ad[s->ta ? 1 : ya] : 1);
            }
        }
        PR_TRY(key_const(s, A->rank, ad, crank, cdims, C ? C->dtype : PRECIS_UNDEFINED, A->rank,
                         threads, key, e));
        PR_TRY(pr_dnnl_cache_prime(&s->cache, key, KA_COUNT, mm_create_const, &c, e));
        if (!s->w.data) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "no primitive for the graph's shape");
            goto fail;
        }
    } else {
        /* make the inner dims agree in the representative shape */
        int64_t *ak = s->ta ? &ad[0] : &ad[A->rank - 1];
        int64_t *bk = s->tb ? &bd[1] : &bd[B->rank - 2];
        if (!pr_dim_known(A->dims[s->ta ? 0 : A->rank - 1]))
            *ak = *bk;
        else if (!pr_dim_known(B->dims[s->tb ? 1 : B->rank - 2]))
            *bk = *ak;
        int64_t cdims[PR_MAX_RANK];
        int crank = 0;
        if (s->bias_kind == BIAS_BINARY) {
            crank = C->rank;
            for (int i = 0; i < crank; i++) cdims[i] = pr_dim_known(C->dims[i]) ? C->dims[i] : 1;
        }
        int nk = key_act(s, A->rank, ad, B->rank, bd, crank, cdims, C ? C->dtype : PRECIS_UNDEFINED,
                         threads, key);
        st = pr_dnnl_cache_prime(&s->cache, key, nk, mm_create_act, &c, e);
        if (st) {
            /* only a representative shape: try again at run time */
            if (all_known(A->rank, A->dims) && all_known(B->rank, B->dims)) goto fail;
            pr_err_clear(e);
            st = PRECIS_OK;
        }
    }
    s->w.user = NULL;
    free(scaled);
    scaled = NULL;
    snprintf(s->desc, sizeof s->desc, "%s",
             s->cache.primary && s->cache.primary->impl[0] ? s->cache.primary->impl
                                                           : "dnnl.matmul");
    *state = s;
    return PRECIS_OK;
fail:
    free(scaled);
    mm_destroy(s);
    return pr_err_prefix(e, "node '%s' (%s)", n->name, n->op_type);
}

static precis_status mm_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    mm_state *s = state;
    const pr_buf *A = k->in[0], *B = k->in[1];
    const pr_buf *C = s->bias_kind != BIAS_NONE ? pr_kin(k, 2) : NULL;
    const pr_buf *Z = s->has_z ? pr_kin(k, 3) : NULL;
    pr_buf *Y = k->out[0];
    int threads = x->num_threads > 0 ? x->num_threads : 1;
    if (A->dtype != s->dt || Y->dtype != s->dt || (!s->const_b && B->dtype != s->dt))
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s, got %s -> %s",
                          pr_dtype_name(s->dt), pr_dtype_name(A->dtype), pr_dtype_name(Y->dtype));
    if (A->rank < 2 || B->rank < 2 || (s->ta && A->rank != 2) || (s->tb && B->rank != 2))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "operand ranks %d and %d not supported", A->rank,
                          B->rank);
    if (s->bias_kind == BIAS_BINARY && !s->bias_const && !C)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bias missing");
    if (s->has_z && (!Z || Z->nbytes != Y->nbytes || Z->dtype != Y->dtype))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    int crank = 0;
    const int64_t *cdims = NULL;
    pr_dtype cdt = PRECIS_UNDEFINED;
    if (s->bias_kind == BIAS_BINARY) {
        crank = s->bias_const ? s->bias_rank : C->rank;
        cdims = s->bias_const ? s->bias_dims : C->dims;
        cdt = s->bias_const ? PRECIS_FLOAT32 : C->dtype;
    }
    int64_t key[PR_DNNL_KEY_MAX];
    int nk;
    precis_status st;
    if (s->const_b) {
        st = key_const(s, A->rank, A->dims, crank, cdims, cdt, A->rank, threads, key, k->err);
        if (st) return pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
        nk = KA_COUNT;
    } else {
        int R = A->rank > B->rank ? A->rank : B->rank;
        if (crank > R) return pr_kernelf(k, PRECIS_ERR_SHAPE, "bias has too many dims");
        nk = key_act(s, A->rank, A->dims, B->rank, B->dims, crank, cdims, cdt, threads, key);
    }
    pr_dnnl_entry *ent;
    bool temp;
    mm_ctx c = {s};
    st = pr_dnnl_cache_get(&s->cache, key, nk, s->const_b ? mm_create_const : mm_create_act, &c,
                           &ent, &temp, k->err);
    if (st) return pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
    /* the caller's output must be what the primitive computes */
    bool ok;
    if (s->const_b) {
        ok = Y->rank == (s->ta ? 2 : A->rank) && Y->dims[Y->rank - 1] == s->N &&
             Y->numel == ent->out_dims[0] * s->N;
    } else {
        int R = (int)key[0];
        ok = Y->rank == R && memcmp(Y->dims, ent->out_dims, (size_t)R * sizeof(int64_t)) == 0;
    }
    if (!ok) {
        st = pr_kernelf(k, PRECIS_ERR_SHAPE, "output shape does not match the product");
        goto done;
    }
    if (!ent->prim) goto done; /* empty output */
    if (Z && Z->data != Y->data) memcpy(Y->data, Z->data, Y->nbytes);
    void *ptrs[PR_DNNL_MAX_ARGS];
    int np = 0;
    ptrs[np++] = A->data;
    ptrs[np++] = s->const_b ? ent->wei : B->data;
    if (s->bias_kind == BIAS_ARG) ptrs[np++] = s->bias;
    ptrs[np++] = Y->data;
    if (s->bias_kind == BIAS_BINARY) ptrs[np++] = s->bias_const ? s->bias : C->data;
    st = pr_dnnl_execute(ent, ptrs, x, k->err);
    if (st) pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
done:
    if (temp) pr_dnnl_entry_free(ent);
    return st;
}

static const char *mm_describe(void *state) {
    mm_state *s = state;
    return s && s->desc[0] ? s->desc : "dnnl.matmul";
}

const pr_cpu_impl pr_cpu_impl_dnnl_matmul = {
    .name = "dnnl.matmul",
    .supports = mm_supports,
    .nhwc_ok = NULL,
    .inplace_input = mm_inplace_input,
    .prepare = mm_prepare,
    .run = mm_run,
    .describe = mm_describe,
    .destroy = mm_destroy,
};

#endif
