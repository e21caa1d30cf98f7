/* The INT8 plan's other ops on the GPU (kernels in cu_int8.cu):
 * QuantizeLinear / DequantizeLinear with one scale and a zero (or absent)
 * zero point (also to and from float8e4m3fn: cu_fp8.cu), QBinary (Add, Sub, Mul with
 * broadcast) and QPool (global average, or a 2-D average window; either layout). Outputs
 * are requantized as ref does (sat(round_half_even)). A QuantizeLinear to int8 / uint8
 * may read a plain rank-4 x and write NHWC (the Reorder after a plan input's quantize
 * folded into it: pass_layout.c). */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/ref/ref_conv.h"
#include "passes/graph_edit.h"

typedef struct qel_state {
    float scale, a_scale, b_scale, y_inv;
    int ew_op;
    bool avg;   /* QPool kind AveragePool (else GlobalAveragePool) */
    bool nhwc;  /* QuantizeLinear: plain x -> NHWC y */
    pr_cu_act act;
    char what[96];
} qel_state;

static bool qint(pr_dtype d) { return d == PRECIS_INT8 || d == PRECIS_UINT8; }
static bool qf8(pr_dtype d) { return d == PRECIS_FLOAT8E4M3FN; }

/* A per-tensor scale and a zero (or no) zero point. */
static bool qdq_params(const pr_graph *g, const pr_node *n, float *s) {
    float z = 0;
    int zp = pr_node_in(n, 2);
    if (!pr_const_scalar(g, pr_node_in(n, 1), s) || !(*s > 0.0f)) return false;
    return zp < 0 || (pr_const_scalar(g, zp, &z) && z == 0.0f);
}

static bool qel_supports(const pr_graph *g, const pr_node *n) {
    int x = pr_node_in(n, 0), y = pr_node_out(n, 0);
    if (x < 0 || y < 0 || pr_cu_is_init(g, x)) return false;
    pr_dtype xd = pr_cu_tdt(g, x), yd = pr_cu_tdt(g, y);
    float s;
    switch (n->op) {
    case PR_OP_QuantizeLinear:
        if (g->tensors[x].layout != g->tensors[y].layout &&
            (g->tensors[x].layout != PR_LAYOUT_PLAIN || g->tensors[y].layout != PR_LAYOUT_NHWC ||
             g->tensors[y].rank != 4 || !qint(yd)))
            return false;
        return pr_cu_float(xd) && (qint(yd) || qf8(yd)) && qdq_params(g, n, &s);
    case PR_OP_DequantizeLinear:
        return (qint(xd) || qf8(xd)) && pr_cu_float(yd) && qdq_params(g, n, &s);
    case PR_OP_QBinary: {
        const char *k = pr_attr_str(n, "kind", "");
        int b = pr_node_in(n, 1);
        pr_act a;
        if (strcmp(k, "Add") && strcmp(k, "Sub") && strcmp(k, "Mul")) return false;
        if (b < 0 || !pr_act_from_node(n, "act", &a)) return false;
        pr_dtype bd = pr_cu_tdt(g, b);
        return (qint(xd) || pr_cu_float(xd)) && (qint(bd) || pr_cu_float(bd)) &&
               (qint(yd) || pr_cu_float(yd)) && g->tensors[y].rank <= PR_CU_MAXR;
    }
    case PR_OP_QPool: {
        const char *k = pr_attr_str(n, "kind", "");
        const int64_t *ks;
        bool avg = !strcmp(k, "AveragePool") && pr_attr_ints(n, "kernel_shape", &ks) == 2;
        return (avg || !strcmp(k, "GlobalAveragePool")) && qint(xd) &&
               (qint(yd) || pr_cu_float(yd)) && g->tensors[x].rank == 4;
    }
    default:
        return false;
    }
}

/* Elementwise in the same layout everywhere: rank-4 operands of Y's shape. */
static bool qel_nhwc_ok(const pr_graph *g, const pr_node *n) {
    if (!qel_supports(g, n)) return false;
    if (n->op == PR_OP_QPool) return true;
    const pr_tensor *Y = &g->tensors[n->outputs[0]];
    int nin = n->op == PR_OP_QBinary ? 2 : 1;
    for (int i = 0; i < nin; i++) {
        const pr_tensor *X = &g->tensors[n->inputs[i]];
        if (X->rank != 4 || Y->rank != 4) return false;
        for (int d = 0; d < 4; d++)
            if (X->dims[d] != Y->dims[d] || !pr_dim_known(X->dims[d])) return false;
    }
    return true;
}

static bool qel_packs(const pr_graph *g, const pr_node *n, int i) {
    (void)g;
    return (n->op == PR_OP_QuantizeLinear || n->op == PR_OP_DequantizeLinear) && i > 0;
}

static precis_status qel_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                 void **out, pr_err *e) {
    (void)cfg;
    qel_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->a_scale = pr_attr_float(n, "a_scale", 1.0f);
    s->b_scale = pr_attr_float(n, "b_scale", 1.0f);
    s->y_inv = 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    const char *yt = pr_dtype_name(g->tensors[n->outputs[0]].dtype);
    switch (n->op) {
    case PR_OP_QuantizeLinear: case PR_OP_DequantizeLinear:
        qdq_params(g, n, &s->scale);
        s->nhwc = g->tensors[n->inputs[0]].layout != g->tensors[n->outputs[0]].layout;
        snprintf(s->what, sizeof s->what, "cu %s%s (-> %s)",
                 n->op == PR_OP_QuantizeLinear ? "quantize" : "dequantize",
                 s->nhwc ? " + reorder to nhwc" : "", yt);
        break;
    case PR_OP_QBinary: {
        const char *k = pr_attr_str(n, "kind", "");
        s->ew_op = !strcmp(k, "Add") ? PR_EW_ADD : !strcmp(k, "Sub") ? PR_EW_SUB : PR_EW_MUL;
        s->act = pr_cu_act_of(n, "act");
        snprintf(s->what, sizeof s->what, "cu int8 %s%s%s (-> %s)", k, s->act.kind ? "+" : "",
                 s->act.kind ? pr_act_names[s->act.kind] : "", yt);
        break;
    }
    default:
        s->scale = pr_attr_float(n, "x_scale", 1.0f);
        s->avg = !strcmp(pr_attr_str(n, "kind", ""), "AveragePool");
        snprintf(s->what, sizeof s->what, "cu int8 %saverage pool (-> %s)", s->avg ? "" : "global ",
                 yt);
        break;
    }
    *out = s;
    return PRECIS_OK;
}

static const char *qel_describe(void *p) { return ((qel_state *)p)->what; }

static precis_status qel_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    qel_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_node *n = k->node;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    if (Y->numel == 0) return PRECIS_OK;
    switch (n->op) {
    case PR_OP_QuantizeLinear: case PR_OP_DequantizeLinear:
        if (s->nhwc)
            KL_TRY(pr_cu_quantize_nhwc(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype,
                                       Y->dims[0], Y->dims[1], Y->dims[2] * Y->dims[3],
                                       s->scale));
        else if (X->dtype == PRECIS_FLOAT8E4M3FN || Y->dtype == PRECIS_FLOAT8E4M3FN)
            KL_TRY(pr_cu_quant_fp8(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype,
                                   Y->numel, s->scale, n->op == PR_OP_QuantizeLinear));
        else
            KL_TRY(pr_cu_quantize(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype,
                                  Y->numel, s->scale, n->op == PR_OP_QuantizeLinear));
        break;
    case PR_OP_QBinary: {
        pr_cu_ew w;
        memset(&w, 0, sizeof w);
        const pr_buf *in[2] = {k->in[0], k->in[1]};
        if ((st = pr_cu_ew_setup(&w, Y, 2, in))) return st;
        w.op = s->ew_op;
        w.act = s->act;
        KL_TRY(pr_cu_qbinary(x->stream, &w, s->a_scale, s->b_scale, s->y_inv));
        break;
    }
    default: {
        bool nhwc = k->g->tensors[n->inputs[0]].layout == PR_LAYOUT_NHWC;
        int64_t N = X->dims[0], C = X->dims[1], hw = X->dims[2] * X->dims[3];
        if (s->avg) { /* a 2-D window: the geometry as the ref pool kernel reads it */
            rc_geom3 g;
            if ((st = pr_refconv_geom(k, PR_CONV_KIND_POOL, X, NULL, Y, &g))) return st;
            pr_cu_pool pp = {1, (int)(pr_attr_int(n, "count_include_pad", 0) == 1),
                            N, C, X->dims[2], X->dims[3], Y->dims[2], Y->dims[3],
                            (int)g.k[1], (int)g.k[2], (int)g.s[1], (int)g.s[2], (int)g.pb[1],
                            (int)g.pb[2], (int)g.d[1], (int)g.d[2], (int)g.pe[1], (int)g.pe[2],
                            nhwc};
            KL_TRY(pr_cu_qavgpool(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype, &pp,
                                  s->scale, s->y_inv));
            break;
        }
        float *part = pr_cuda_scratch(x, (size_t)pr_cu_gpool_scratch(N, C, hw, nhwc) * 4, e);
        if (!part) goto fail;
        KL_TRY(pr_cu_gpool(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype, N, C, hw,
                           nhwc, 0, s->scale, s->y_inv, part));
        break;
    }
    }
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", n->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_qelem = {
    .name = "cu.int8",
    .supports = qel_supports,
    .nhwc_ok = qel_nhwc_ok,
    .packs = qel_packs,
    .prepare = qel_prepare,
    .run = qel_run,
    .describe = qel_describe,
    .destroy = free,
};
