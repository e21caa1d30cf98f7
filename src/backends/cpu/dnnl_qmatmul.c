/* oneDNN INT8 matrix products: QMatMul (ops.inc).
 *
 * Two modes, as dnnl_matmul.c:
 *   - constant B: an int8 2-D initializer ([K, N], or [N, K] with transB),
 *     packed once into the layout the primitive wants (a plain copy is kept
 *     for primitives of other shapes); A of any rank >= 2 has its batch dims
 *     folded into M (transA: A 2-D, as strides);
 *   - B an int8 activation (attention: Q.K^T, P.V): plain strides, numpy
 *     batch broadcasting, transA/transB (2-D operands) as strides. A uint8 B
 *     is declined (oneDNN 2.6 takes s8 weights only).
 * A is int8 or uint8. The s32 accumulator is scaled per output column by
 * alpha * a_scale * b_scale[n] (b_scale [N] or [1]; times 1/y_scale when
 * folded, see pr_dnnl_qepi). The bias (a float32 initializer of one value or
 * one per column) is oneDNN's bias argument, which 2.x adds before the
 * scales: it is passed as bias[n] / (alpha * a_scale * b_scale[n]). A column
 * with a zero scale has real values 0: with constant B its int8 weights are
 * zeroed and its scale set to 1; with an activation B and a bias such nodes
 * are declined. Then act, the residual Z, act2 and 1/y_scale
 * (pr_dnnl_qepi); the output is int8/uint8 (saturated, rounded to nearest
 * even) or float32. One primitive per concrete shape and thread count
 * (pr_dnnl_cache). */
#include "backends/cpu/dnnl_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRECIS_HAVE_DNNL

typedef struct qmm_state {
    pr_dtype adt;
    bool const_b, ta, tb;
    int64_t K, N;    /* constant B: op(B) is K x N */
    int64_t n_sc;    /* output scales: 1 or per column */
    float *oscale;   /* n_sc values */
    int64_t n_bias;  /* bias values (1 or per column), 0: none */
    float *bias;     /* in accumulator units */
    int8_t *wq;      /* constant B: the stored int8 weights (zeroed columns applied) */
    pr_dnnl_qepi q;
    pr_dnnl_weights w;
    pr_dnnl_cache cache;
    char desc[96];
} qmm_state;

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static bool is_init(const pr_tensor *t) { return t && (t->flags & PR_T_INIT) && t->data; }

static bool plain_layout(const pr_tensor *t) {
    return t->rank != 4 || t->layout == PR_LAYOUT_PLAIN;
}

static pr_dtype y_dtype(const pr_node *n) {
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    return yt == PRECIS_INT8 || yt == PRECIS_UINT8 || yt == PRECIS_FLOAT32 ? (pr_dtype)yt
                                                                           : PRECIS_UNDEFINED;
}

/* Does a bias vary only along the last dim? Sets its length (1 or N). */
static bool bias_len(const pr_tensor *b, int64_t *len) {
    for (int i = 0; i + 1 < b->rank; i++)
        if (b->dims[i] != 1) return false;
    *len = b->rank ? b->dims[b->rank - 1] : 1;
    return pr_dim_known(*len) && *len >= 1;
}

/* Scale of column n (of n_sc) before folding: alpha * a_scale * b_scale[n]. */
static float col_scale(const pr_node *n, const float *bs, int64_t i) {
    return pr_attr_float(n, "alpha", 1.0f) * pr_attr_float(n, "a_scale", 1.0f) * bs[i];
}

static bool qmm_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QMatMul || n->n_inputs > 5 || n->n_inputs < 3) return false;
    const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2), *C = pr_node_tin(g, n, 3);
    const pr_tensor *Z = pr_node_tin(g, n, 4), *Y = pr_node_tout(g, n, 0);
    if (!A || !B || !S || !Y) return false;
    if (!q8(A->dtype) || A->rank < 2 || !plain_layout(A) || !plain_layout(Y)) return false;
    pr_dtype ydt = y_dtype(n);
    if (ydt == PRECIS_UNDEFINED || (Y->dtype != PRECIS_UNDEFINED && Y->dtype != ydt)) return false;
    bool ta = pr_attr_int(n, "transA", 0) != 0, tb = pr_attr_int(n, "transB", 0) != 0;
    if (ta && A->rank != 2) return false;
    if (B->dtype != PRECIS_INT8 || B->rank < 2 || (tb && B->rank != 2)) return false;
    bool cb = is_init(B);
    int64_t N = B->dims[tb ? 0 : B->rank - 1], K = B->dims[tb ? 1 : B->rank - 2];
    if (cb) {
        if (B->rank != 2 || !pr_dim_known(K) || !pr_dim_known(N) || K == 0 || N == 0) return false;
        int64_t Ka = A->dims[ta ? 0 : A->rank - 1];
        if (pr_dim_known(Ka) && Ka != K) return false;
    } else {
        if (!plain_layout(B) || (A->rank > B->rank ? A->rank : B->rank) > PR_MAX_RANK) return false;
    }
    if (!is_init(S) || S->dtype != PRECIS_FLOAT32 || S->rank != 1) return false;
    int64_t ns = S->dims[0];
    if (ns != 1 && (!pr_dim_known(N) || ns != N)) return false;
    float as = pr_attr_float(n, "a_scale", 0.0f), alpha = pr_attr_float(n, "alpha", 1.0f);
    if (!(as > 0.0f) || !isfinite(as) || !isfinite(alpha)) return false;
    int64_t nb = 0;
    if (C) {
        if (!is_init(C) || C->dtype != PRECIS_FLOAT32 || !bias_len(C, &nb)) return false;
        if (nb != 1 && ((pr_dim_known(N) && nb != N) || (ns != 1 && nb != ns))) return false;
    }
    const float *bs = S->data, *bv = C ? C->data : NULL;
    int64_t nv = nb > ns ? nb : ns;
    for (int64_t i = 0; i < nv; i++) {
        float cs = col_scale(n, bs, ns == 1 ? 0 : i);
        if (!isfinite(bs[ns == 1 ? 0 : i]) || !isfinite(cs)) return false;
        if (cs == 0.0f && !cb && bv) return false;
        if (bv && cs != 0.0f && !isfinite(bv[nb == 1 ? 0 : i] / cs)) return false;
    }
    if (Z && (!plain_layout(Z) || (Y->rank >= 0 && Z->rank != Y->rank))) return false;
    pr_dnnl_qepi q;
    if (!pr_dnnl_qepi_init(&q, n, Z ? Z->dtype : PRECIS_UNDEFINED, ydt)) return false;
    return pr_dnnl_qepi_ok(&q);
}

static int qmm_inplace_input(const pr_graph *g, const pr_node *n) {
    const pr_tensor *Z = pr_node_tin(g, n, 4);
    if (n->op != PR_OP_QMatMul || !Z) return -1;
    pr_dnnl_qepi q;
    if (!pr_dnnl_qepi_init(&q, n, Z->dtype, y_dtype(n))) return -1;
    return pr_dnnl_qepi_z_inplace(&q) ? 4 : -1;
}

static void pad_dims(int rank, const int64_t *d, int R, int64_t *out) {
    for (int i = 0; i < R; i++) out[i] = i < R - rank ? 1 : d[i - (R - rank)];
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

/* Common tail: desc, attributes (scales, post-ops), pd with the key's
 * thread count, weights (constant B), primitive, arguments. R: dst rank. */
static precis_status qmm_finish(qmm_state *s, pr_dnnl_entry *ent, int threads, int R, int64_t N,
                                const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *wmd,
                                const dnnl_memory_desc_t *dmd, pr_err *e) {
    precis_status st;
    dnnl_matmul_desc_t md;
    pr_dnnl_po po = {0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t bmd, zmd;
    memset(&bmd, 0, sizeof bmd);
    memset(&zmd, 0, sizeof zmd);
    if (s->n_bias) {
        if (s->n_bias != 1 && s->n_bias != N)
            return pr_errf(e, PRECIS_ERR_SHAPE, "bias has %lld values for %lld columns",
                           (long long)s->n_bias, (long long)N);
        int64_t bd[PR_MAX_RANK];
        for (int i = 0; i < R; i++) bd[i] = 1;
        bd[R - 1] = s->n_bias;
        PR_TRY(pr_dnnl_check(pr_dnnl_md_plain(&bmd, R, bd, dnnl_f32), e, "bias desc"));
    }
    if (s->n_sc != 1 && s->n_sc != N)
        return pr_errf(e, PRECIS_ERR_SHAPE, "%lld scales for %lld columns", (long long)s->n_sc,
                       (long long)N);
    if (s->q.z_mode == PR_QZ_BINARY)
        PR_TRY(pr_dnnl_check(pr_dnnl_md_plain(&zmd, R, dmd->dims, dnnl_f32), e, "residual desc"));
    PR_TRY(pr_dnnl_check(dnnl_matmul_desc_init(&md, smd, wmd, s->n_bias ? &bmd : NULL, dmd), e,
                         "matmul desc"));
    int z_idx = -1;
    PR_TRY(pr_dnnl_check(pr_dnnl_qepi_chain(&po, &s->q, &zmd, &z_idx), e, "post-ops"));
    PR_TRY(pr_dnnl_check(pr_dnnl_attr(&attr, po.po), e, "attributes"));
    PR_TRY(pr_dnnl_check(dnnl_primitive_attr_set_output_scales(
                             attr, s->n_sc, s->n_sc > 1 ? 1 << (R - 1) : 0, s->oscale),
                         e, "output scales"));
    dnnl_engine_t eng = pr_dnnl_engine(e);
    if (!eng) {
        st = e->status;
        goto fail;
    }
    int saved = pr_dnnl_threads_set(threads);
    st = pr_dnnl_check(dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL), e, "int8 matmul");
    const dnnl_memory_desc_t *want =
        st ? NULL : dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (!st && s->const_b) st = pr_dnnl_weights_for(&s->w, want, ent, e);
    if (!st) st = pr_dnnl_entry_set_prim(ent, pd, e);
    pr_dnnl_threads_restore(saved);
    if (st) goto fail;
    pr_dnnl_entry_arg(ent, DNNL_ARG_SRC, smd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_WEIGHTS, s->const_b ? want : wmd);
    if (s->n_bias) pr_dnnl_entry_arg(ent, DNNL_ARG_BIAS, &bmd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_DST, dmd);
    if (z_idx >= 0)
        pr_dnnl_entry_arg(ent, DNNL_ARG_ATTR_MULTIPLE_POST_OP(z_idx) | DNNL_ARG_SRC_1, &zmd);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    pr_dnnl_po_destroy(&po);
    return st;
}

/* constant B, key: M, threads */
enum { KC_M, KC_THREADS, KC_COUNT };

static precis_status qmm_create_const(void *vctx, const int64_t *key, int nkey,
                                      pr_dnnl_entry *ent, pr_err *e) {
    qmm_state *s = vctx;
    int64_t M = key[KC_M];
    ent->out_dims[0] = M;
    ent->out_dims[1] = s->N;
    if (M == 0) return PRECIS_OK;
    dnnl_memory_desc_t smd, wmd, dmd;
    precis_status st;
    int64_t ad[2] = {s->ta ? s->K : M, s->ta ? M : s->K}, od[2] = {M, s->N};
    dnnl_dims_t wd = {s->K, s->N};
    PR_TRY(pr_dnnl_check(md_stored(&smd, 2, ad, s->ta, pr_dnnl_qdt(s->adt)), e, "src desc"));
    PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&wmd, 2, wd, dnnl_s8, dnnl_format_tag_any), e,
                         "weights desc"));
    PR_TRY(pr_dnnl_check(pr_dnnl_md_plain(&dmd, 2, od, pr_dnnl_qdt(s->q.y_dt)), e, "dst desc"));
    st = qmm_finish(s, ent, (int)key[KC_THREADS], 2, s->N, &smd, &wmd, &dmd, e);
fail:
    return st;
}

/* activation B, key: R, A dims, B dims (padded to rank R), threads */
static precis_status qmm_create_act(void *vctx, const int64_t *key, int nkey, pr_dnnl_entry *ent,
                                    pr_err *e) {
    qmm_state *s = vctx;
    int R = (int)key[0];
    const int64_t *ad = key + 1, *bd = key + 1 + R;
    int threads = (int)key[1 + 2 * R];
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
    dnnl_memory_desc_t smd, wmd, dmd;
    precis_status st;
    PR_TRY(pr_dnnl_check(md_stored(&smd, R, ad, s->ta, pr_dnnl_qdt(s->adt)), e, "src desc"));
    PR_TRY(pr_dnnl_check(md_stored(&wmd, R, bd, s->tb, dnnl_s8), e, "weights desc"));
    PR_TRY(pr_dnnl_check(pr_dnnl_md_plain(&dmd, R, od, pr_dnnl_qdt(s->q.y_dt)), e, "dst desc"));
    st = qmm_finish(s, ent, threads, R, N, &smd, &wmd, &dmd, e);
fail:
    return st;
}

static int key_act(int arank, const int64_t *adims, int brank, const int64_t *bdims, int threads,
                   int64_t *key) {
    int R = arank > brank ? arank : brank;
    key[0] = R;
    pad_dims(arank, adims, R, key + 1);
    pad_dims(brank, bdims, R, key + 1 + R);
    key[1 + 2 * R] = threads;
    return 2 + 2 * R;
}

static void qmm_destroy(void *state) {
    qmm_state *s = state;
    if (!s) return;
    pr_dnnl_cache_destroy(&s->cache);
    pr_dnnl_weights_free(&s->w);
    free(s->oscale);
    free(s->bias);
    free(s->wq);
    free(s);
}

/* Scales and bias in accumulator units; constant B: the weights copy with
 * zero-scale columns zeroed. */
static precis_status qmm_scales(qmm_state *s, const pr_node *n, const pr_tensor *S,
                                const pr_tensor *C, const pr_tensor *B, pr_err *e) {
    const float *bs = S->data, *bv = C ? C->data : NULL;
    float f = pr_dnnl_qepi_oscale(&s->q);
    s->n_sc = S->dims[0];
    if (C) bias_len(C, &s->n_bias);
    int64_t nv = s->n_bias > s->n_sc ? s->n_bias : s->n_sc;
    if (s->const_b) {
        s->wq = malloc((size_t)(s->K * s->N));
        if (!s->wq) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        memcpy(s->wq, B->data, (size_t)(s->K * s->N));
        /* a zero scale of a column (or of all) zeroes its weights */
        for (int64_t c = 0; c < s->N; c++) {
            if (col_scale(n, bs, s->n_sc == 1 ? 0 : c) != 0.0f) continue;
            for (int64_t k = 0; k < s->K; k++) s->wq[s->tb ? c * s->K + k : k * s->N + c] = 0;
        }
    }
    s->oscale = malloc((size_t)s->n_sc * sizeof(float));
    if (C) s->bias = malloc((size_t)nv * sizeof(float));
    if (!s->oscale || (C && !s->bias)) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int64_t i = 0; i < s->n_sc; i++) {
        float cs = col_scale(n, bs, i);
        s->oscale[i] = (cs == 0.0f && s->const_b ? 1.0f : cs) * f;
    }
    if (C) {
        for (int64_t i = 0; i < nv; i++) {
            float cs = col_scale(n, bs, s->n_sc == 1 ? 0 : i);
            s->bias[i] = bv[s->n_bias == 1 ? 0 : i] / (cs == 0.0f ? 1.0f : cs);
        }
        s->n_bias = nv;
    }
    return PRECIS_OK;
}

static precis_status qmm_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                 void **state, pr_err *e) {
    *state = NULL;
    if (!qmm_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by dnnl.qmatmul",
                       n->name, n->op_type);
    if (!pr_dnnl_engine(e)) return e->status;
    qmm_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    precis_status st = pr_dnnl_cache_init(&s->cache, e);
    if (st) {
        free(s);
        return st;
    }
    const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2), *C = pr_node_tin(g, n, 3);
    const pr_tensor *Z = pr_node_tin(g, n, 4);
    s->adt = A->dtype;
    s->ta = pr_attr_int(n, "transA", 0) != 0;
    s->tb = pr_attr_int(n, "transB", 0) != 0;
    s->const_b = is_init(B);
    if (s->const_b) {
        s->K = B->dims[s->tb ? 1 : 0];
        s->N = B->dims[s->tb ? 0 : 1];
    }
    pr_dnnl_qepi_init(&s->q, n, Z ? Z->dtype : PRECIS_UNDEFINED, y_dtype(n));
    PR_TRY(qmm_scales(s, n, S, C, B, e));
    int threads = cfg && cfg->num_threads > 0 ? cfg->num_threads : 1;
    int64_t key[PR_DNNL_KEY_MAX], ad[PR_MAX_RANK], bd[PR_MAX_RANK];
    for (int i = 0; i < A->rank; i++) ad[i] = pr_dim_known(A->dims[i]) ? A->dims[i] : 32;
    for (int i = 0; i < B->rank; i++) bd[i] = pr_dim_known(B->dims[i]) ? B->dims[i] : 32;
    if (s->const_b) {
        s->w.user = s->wq;
        /* stored [K, N], or [N, K] read transposed */
        int64_t stored[2] = {s->tb ? s->N : s->K, s->tb ? s->K : s->N};
        PR_TRY(pr_dnnl_check(md_stored(&s->w.user_md, 2, stored, s->tb, dnnl_s8), e,
                             "weights desc"));
        int64_t M = 1;
        if (s->ta)
            M = ad[1];
        else
            for (int i = 0; i < A->rank - 1; i++) M *= ad[i];
        key[KC_M] = M;
        key[KC_THREADS] = threads;
        PR_TRY(pr_dnnl_cache_prime(&s->cache, key, KC_COUNT, qmm_create_const, s, e));
        if (!s->w.data) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "no primitive for the graph's shape");
            goto fail;
        }
    } else {
        int64_t *ak = s->ta ? &ad[0] : &ad[A->rank - 1];
        int64_t *bk = s->tb ? &bd[1] : &bd[B->rank - 2];
        if (!pr_dim_known(A->dims[s->ta ? 0 : A->rank - 1]))
            *ak = *bk;
        else if (!pr_dim_known(B->dims[s->tb ? 1 : B->rank - 2]))
            *bk = *ak;
        /* a per-column scale or bias fixes N */
        int64_t *bn = s->tb ? &bd[0] : &bd[B->rank - 1];
        if (!pr_dim_known(B->dims[s->tb ? 0 : B->rank - 1]) && s->n_bias > 1) *bn = s->n_bias;
        if (!pr_dim_known(B->dims[s->tb ? 0 : B->rank - 1]) && s->n_sc > 1) *bn = s->n_sc;
        int nk = key_act(A->rank, ad, B->rank, bd, threads, key);
        st = pr_dnnl_cache_prime(&s->cache, key, nk, qmm_create_act, s, e);
        if (st) {
            /* only a representative shape: try again at run time */
            bool known = true;
            for (int i = 0; i < A->rank; i++) known = known && pr_dim_known(A->dims[i]);
            for (int i = 0; i < B->rank; i++) known = known && pr_dim_known(B->dims[i]);
            if (known) goto fail;
            pr_err_clear(e);
            st = PRECIS_OK;
        }
    }
    s->w.user = s->wq; /* kept for other layouts (NULL with an activation B) */
    snprintf(s->desc, sizeof s->desc, "%s",
             s->cache.primary && s->cache.primary->impl[0] ? s->cache.primary->impl
                                                           : "dnnl.qmatmul");
    *state = s;
    return PRECIS_OK;
fail:
    qmm_destroy(s);
    return pr_err_prefix(e, "node '%s' (%s)", n->name, n->op_type);
}

static precis_status qmm_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    qmm_state *s = state;
    const pr_buf *A = k->in[0], *B = k->in[1];
    const pr_buf *Z = s->q.z_mode != PR_QZ_NONE ? pr_kin(k, 4) : NULL;
    pr_buf *Y = k->out[0];
    int threads = x->num_threads > 0 ? x->num_threads : 1;
    if (A->dtype != s->adt || Y->dtype != s->q.y_dt || (!s->const_b && B->dtype != PRECIS_INT8))
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s -> %s, got %s -> %s",
                          pr_dtype_name(s->adt), pr_dtype_name(s->q.y_dt), pr_dtype_name(A->dtype),
                          pr_dtype_name(Y->dtype));
    if (A->rank < 2 || B->rank < 2 || (s->ta && A->rank != 2) || (s->tb && B->rank != 2))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "operand ranks %d and %d not supported", A->rank,
                          B->rank);
    if (s->q.z_mode != PR_QZ_NONE && (!Z || Z->numel != Y->numel || Z->dtype != s->q.z_dt))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    int64_t key[PR_DNNL_KEY_MAX];
    int nk;
    if (s->const_b) {
        int64_t M = 1, Ka;
        if (s->ta) {
            M = A->dims[1];
            Ka = A->dims[0];
        } else {
            for (int i = 0; i < A->rank - 1; i++) M *= A->dims[i];
            Ka = A->dims[A->rank - 1];
        }
        if (Ka != s->K)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "A's inner dimension is not %lld",
                              (long long)s->K);
        key[KC_M] = M;
        key[KC_THREADS] = threads;
        nk = KC_COUNT;
    } else {
        nk = key_act(A->rank, A->dims, B->rank, B->dims, threads, key);
    }
    pr_dnnl_entry *ent;
    bool temp;
    precis_status st = pr_dnnl_cache_get(&s->cache, key, nk,
                                         s->const_b ? qmm_create_const : qmm_create_act, s, &ent,
                                         &temp, k->err);
    if (st) return pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
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
    pr_dnnl_qepi_prep(&s->q, Z, Y, threads);
    void *ptrs[PR_DNNL_MAX_ARGS];
    int np = 0;
    ptrs[np++] = A->data;
    ptrs[np++] = s->const_b ? ent->wei : B->data;
    if (s->n_bias) ptrs[np++] = s->bias;
    ptrs[np++] = Y->data;
    if (s->q.z_mode == PR_QZ_BINARY) ptrs[np++] = Z->data;
    st = pr_dnnl_execute(ent, ptrs, x, k->err);
    if (st) pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
done:
    if (temp) pr_dnnl_entry_free(ent);
    return st;
}

static const char *qmm_describe(void *state) {
    qmm_state *s = state;
    return s && s->desc[0] ? s->desc : "dnnl.qmatmul";
}

const pr_cpu_impl pr_cpu_impl_dnnl_qmatmul = {
    .name = "dnnl.qmatmul",
    .supports = qmm_supports,
    .nhwc_ok = NULL,
    .inplace_input = qmm_inplace_input,
    .prepare = qmm_prepare,
    .run = qmm_run,
    .describe = qmm_describe,
    .destroy = qmm_destroy,
};

#endif
