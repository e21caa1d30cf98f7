/* Row-wise nodes on the GPU: Softmax / LogSoftmax (any axis, opset < 13
 * flattening too), LayerNormalization (Scale and B of the normalized
 * shape's size; Mean / InvStdDev outputs stay on the host; q_scale: the e4m3
 * second output written in the same pass, ops.inc), EmbedLayerNorm (the
 * embeddings' Gathers + Sum + LayerNorm, passes/pass_embed_ln.c), and the
 * Reduce* family (axes from attributes or an initializer). Sums in float32. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "ir/linalg.h"

typedef struct norm_state {
    float eps, qs; /* qs: LayerNorm q_scale (0: none) */
    bool emb;      /* EmbedLayerNorm */
} norm_state;

int pr_cu_embed_layernorm(void *stream, const void *w0, int w0dt, int64_t v0, const void *i0,
                          int i0dt, const void *w1, int w1dt, int64_t v1, const void *i1,
                          int i1dt, const void *p, int pdt, int64_t prow, const void *gamma,
                          int gdt, const void *beta, int bdt, void *y, int ydt, int64_t rows,
                          int64_t L, float eps, void *yq, float qs); /* cu_norm.cu */

/* EmbedLayerNorm (ops.inc; passes/pass_embed_ln.c makes only this form): fp16 /
 * bf16 Y over L % 8 == 0 <= 1024, float tables / P / Scale / B, int indices. */
static bool embed_supports(const pr_graph *g, const pr_node *n) {
    int y = pr_node_out(n, 0);
    pr_dtype ydt = pr_cu_tdt(g, y);
    if (y < 0 || (ydt != PRECIS_FLOAT16 && ydt != PRECIS_BFLOAT16) || n->n_inputs < 6 ||
        n->n_inputs > 7 || pr_node_out(n, 2) >= 0)
        return false;
    for (int i = 0; i < n->n_inputs; i++) {
        int t = pr_node_in(n, i);
        pr_dtype dt = pr_cu_tdt(g, t);
        if (i == 6 && t < 0) continue;
        if (i == 1 || i == 3 ? dt != PRECIS_INT64 && dt != PRECIS_INT32 : !pr_cu_float(dt))
            return false;
    }
    float qs = pr_attr_float(n, "q_scale", 0.0f);
    if (qs != 0.0f)
        return qs > 0.0f && n->n_outputs <= 2 &&
               (pr_node_out(n, 1) < 0 || pr_cu_tdt(g, pr_node_out(n, 1)) == PRECIS_FLOAT8E4M3FN);
    return pr_node_out(n, 1) < 0;
}

static bool norm_supports(const pr_graph *g, const pr_node *n) {
    if (n->op == PR_OP_EmbedLayerNorm) return embed_supports(g, n);
    int x = pr_node_in(n, 0), y = pr_node_out(n, 0);
    if (x < 0 || y < 0 || !pr_cu_float(pr_cu_tdt(g, x)) || !pr_cu_float(pr_cu_tdt(g, y)))
        return false;
    if (n->op == PR_OP_Softmax || n->op == PR_OP_LogSoftmax) return n->n_outputs == 1;
    if (n->op != PR_OP_LayerNormalization) return false;
    if (pr_attr_float(n, "q_scale", 0.0f) != 0.0f) { /* output 1: Y in e4m3 */
        int q = pr_node_out(n, 1);
        if (!(pr_attr_float(n, "q_scale", 0.0f) > 0.0f) || n->n_outputs > 2 || q < 0 ||
            pr_cu_tdt(g, q) != PRECIS_FLOAT8E4M3FN)
            return false;
    } else if (pr_node_out(n, 1) >= 0 || pr_node_out(n, 2) >= 0) {
        return false;
    }
    if (pr_attr_int(n, "stash_type", 1) != 1) return false;
    const pr_tensor *X = &g->tensors[x];
    if (X->rank < 1) return false;
    int64_t axis = pr_attr_int(n, "axis", -1);
    if (axis < 0) axis += X->rank;
    if (axis < 0 || axis >= X->rank) return false;
    int64_t L = pr_numel(X->rank - (int)axis, X->dims + axis);
    for (int i = 1; i <= 2; i++) {
        int t = pr_node_in(n, i);
        if (t < 0) {
            if (i == 1) return false;
            continue;
        }
        if (!pr_cu_float(pr_cu_tdt(g, t))) return false;
        int64_t pn = pr_numel(g->tensors[t].rank, g->tensors[t].dims);
        if (L < 0 || pn != L) return false; /* a full-size Scale / B only */
    }
    return true;
}

static precis_status norm_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                  void **out, pr_err *e) {
    norm_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->eps = pr_attr_float(n, "epsilon", 1e-5f);
    s->emb = n->op == PR_OP_EmbedLayerNorm;
    s->qs = n->op == PR_OP_LayerNormalization || n->op == PR_OP_EmbedLayerNorm
                ? pr_attr_float(n, "q_scale", 0.0f)
                : 0.0f;
    *out = s;
    return PRECIS_OK;
}

static precis_status norm_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    norm_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const pr_node *n = k->node;
    if (n->op == PR_OP_EmbedLayerNorm) {
        const pr_buf *W0 = k->in[0], *I0 = k->in[1], *W1 = k->in[2], *I1 = k->in[3];
        const pr_buf *P = k->in[4], *G = k->in[5], *B = pr_kin(k, 6);
        if (Y->numel == 0) return PRECIS_OK;
        int64_t L = Y->dims[Y->rank - 1], rows = Y->numel / L;
        if (W0->rank != 2 || W1->rank != 2 || W0->dims[1] != L || W1->dims[1] != L ||
            I0->numel != rows || I1->numel != rows || P->numel < L || P->numel % L ||
            rows % (P->numel / L) ||
            G->numel != L || (B && B->numel != L))
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "tables, indices, P or Scale/B do not fit Y");
        pr_buf *Q = s->qs > 0.0f && k->n_out > 1 ? k->out[1] : NULL;
        if (Q && Q->numel != Y->numel)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "q_scale: no e4m3 output of Y's size");
        KL_TRY(pr_cu_embed_layernorm(x->stream, W0->data, (int)W0->dtype, W0->dims[0], I0->data,
                                     (int)I0->dtype, W1->data, (int)W1->dtype, W1->dims[0],
                                     I1->data, (int)I1->dtype, P->data, (int)P->dtype,
                                     P->numel / L, G->data, (int)G->dtype, B ? B->data : NULL,
                                     B ? (int)B->dtype : 0, Y->data, (int)Y->dtype, rows, L,
                                     s->eps, Q ? Q->data : NULL, s->qs));
        return PRECIS_OK;
    }
    if (X->numel == 0) return PRECIS_OK;
    if (n->op == PR_OP_LayerNormalization) {
        int axis;
        if ((st = pr_kernel_axis(k, pr_attr_int(n, "axis", -1), X->rank, &axis))) return st;
        int64_t L = pr_numel(X->rank - axis, X->dims + axis);
        const pr_buf *G = k->in[1], *B = pr_kin(k, 2);
        if (G->numel != L || (B && B->numel != L))
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "Scale/B must have %lld elements", (long long)L);
        pr_buf *Q = s->qs > 0.0f && k->n_out > 1 ? k->out[1] : NULL;
        if (s->qs > 0.0f && (!Q || Q->numel != Y->numel))
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "q_scale: no e4m3 output of Y's size");
        KL_TRY(pr_cu_layernorm(x->stream, X->data, (int)X->dtype, G->data, (int)G->dtype,
                               B ? B->data : NULL, B ? (int)B->dtype : 0, Y->data, (int)Y->dtype,
                               X->numel / L, L, s->eps, Q ? Q->data : NULL, s->qs));
        return PRECIS_OK;
    }
    bool old = n->opset < 13;
    int axis;
    if ((st = pr_kernel_axis(k, pr_attr_int(n, "axis", old ? 1 : -1), X->rank, &axis))) return st;
    int64_t outer = pr_numel(axis, X->dims), L, inner;
    if (old) {
        L = pr_numel(X->rank - axis, X->dims + axis);
        inner = 1;
    } else {
        L = X->dims[axis];
        inner = pr_numel(X->rank - axis - 1, X->dims + axis + 1);
    }
    KL_TRY(pr_cu_softmax(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype, outer, L, inner,
                         n->op == PR_OP_LogSoftmax));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", n->name);
    return st;
}

static const char *norm_describe(void *p) {
    return p && ((const norm_state *)p)->emb ? "cu.embed_layernorm" : "cu.rows";
}

const pr_cuda_impl pr_cuda_impl_norm = {
    .name = "cu.norm",
    .supports = norm_supports,
    .prepare = norm_prepare,
    .run = norm_run,
    .describe = norm_describe,
    .destroy = free,
};

/* ------------------------------------------------------------- Reduce* */

static int red_op(pr_op op) {
    switch (op) {
    case PR_OP_ReduceSum: return PR_RED_SUM;
    case PR_OP_ReduceMean: return PR_RED_MEAN;
    case PR_OP_ReduceMax: return PR_RED_MAX;
    case PR_OP_ReduceMin: return PR_RED_MIN;
    case PR_OP_ReduceProd: return PR_RED_PROD;
    case PR_OP_ReduceL1: return PR_RED_L1;
    case PR_OP_ReduceL2: return PR_RED_L2;
    case PR_OP_ReduceSumSquare: return PR_RED_SUMSQ;
    case PR_OP_ReduceLogSum: return PR_RED_LOGSUM;
    case PR_OP_ReduceLogSumExp: return PR_RED_LOGSUMEXP;
    default: return -1;
    }
}

static bool reduce_supports(const pr_graph *g, const pr_node *n) {
    int x = pr_node_in(n, 0), y = pr_node_out(n, 0);
    if (red_op(n->op) < 0 || x < 0 || y < 0 || n->n_outputs != 1) return false;
    if (!pr_cu_float(pr_cu_tdt(g, x)) || !pr_cu_float(pr_cu_tdt(g, y))) return false;
    int a = pr_node_in(n, 1);
    return a < 0 || (pr_cu_is_init(g, a) && g->tensors[a].dtype == PRECIS_INT64);
}

static bool reduce_packs(const pr_graph *g, const pr_node *n, int i) { return i == 1; }

static precis_status reduce_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                    void **out, pr_err *e) {
    *out = NULL;
    return PRECIS_OK;
}

static precis_status reduce_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_node *n = k->node;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    int64_t axes[PR_MAX_RANK];
    int na = -1;
    bool noop_empty = false, noop = false, mask[PR_MAX_RANK];
    if (pr_reduce_axes_from_input(n, n->op)) {
        noop_empty = pr_attr_int(n, "noop_with_empty_axes", 0) != 0;
        int a = pr_node_in(n, 1);
        if (a >= 0) {
            const pr_tensor *A = &k->g->tensors[a];
            na = (int)pr_numel(A->rank, A->dims);
            if (na > PR_MAX_RANK) return pr_kernelf(k, PRECIS_ERR_SHAPE, "too many axes");
            if (na > 0) memcpy(axes, A->data, (size_t)na * sizeof *axes);
        }
    } else {
        const int64_t *ap;
        na = pr_attr_ints(n, "axes", &ap);
        if (na > PR_MAX_RANK) return pr_kernelf(k, PRECIS_ERR_SHAPE, "too many axes");
        if (na > 0) memcpy(axes, ap, (size_t)na * sizeof *axes);
    }
    char msg[128];
    if (pr_reduce_mask(axes, na, X->rank, noop_empty, mask, &noop, msg, sizeof msg))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "%s", msg);
    int64_t xst[PR_MAX_RANK];
    pr_strides(X->rank, X->dims, xst);
    pr_cu_reduce r;
    memset(&r, 0, sizeof r);
    r.op = red_op(n->op);
    r.n_out = Y->numel;
    r.n_red = 1;
    for (int d = 0; d < X->rank; d++) {
        if (mask[d] && !noop) {
            r.rdims[r.nr] = X->dims[d];
            r.rst[r.nr++] = xst[d];
            r.n_red *= X->dims[d];
        } else {
            r.kdims[r.nk] = X->dims[d];
            r.kst[r.nk++] = xst[d];
        }
    }
    if (Y->numel == 0) return PRECIS_OK;
    KL_TRY(pr_cu_reduce_run(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype, &r));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", n->name);
    return st;
}

static const char *reduce_describe(void *p) { return "cu.reduce"; }

const pr_cuda_impl pr_cuda_impl_reduce = {
    .name = "cu.reduce",
    .supports = reduce_supports,
    .packs = reduce_packs,
    .prepare = reduce_prepare,
    .run = reduce_run,
    .describe = reduce_describe,
};
