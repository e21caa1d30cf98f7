/* Depthwise QConv (group == C == K, one int8 filter a channel) on our kernel
 * (cu_dwconv.cu): int8 or uint8 x in either layout, int32 sums, the QConv epilogue
 * (x_scale * w_scale[c], bias, act, residual, act2) and an int8 or float y
 * in y's layout. cuBLASLt and the implicit GEMM take group 1 only, so
 * without this impl the quantizer sent depthwise convs back to float, with a
 * DequantizeLinear before and a QuantizeLinear after each (EfficientNet-Lite0
 * int8: 16 such convs, their Q/DQ steps about a quarter of the run). */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_qbias.h"
#include "backends/ref/ref_conv.h"

typedef struct qdw_state {
    int64_t C, kh, kw;
    void *w;                      /* device int8 [kh * kw][C] */
    float *w_scale, *bias;        /* device float32 ([C] or [1]; [C] or NULL) */
    int64_t n_wscale;
    pr_cu_act pre, post;
    float x_scale, z_scale, y_inv;
    bool y_b; /* y uint8 in biased storage (cuda_qbias.h) */
    char what[160];
} qdw_state;

static bool qdw_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv) return false;
    int x = pr_node_in(n, 0), w = pr_node_in(n, 1), ws = pr_node_in(n, 2), y = pr_node_out(n, 0);
    if (x < 0 || w < 0 || ws < 0 || y < 0) return false;
    pr_dtype xd = pr_cu_tdt(g, x);
    if ((xd != PRECIS_INT8 && xd != PRECIS_UINT8) || pr_cu_tdt(g, w) != PRECIS_INT8 ||
        !pr_cu_is_init(g, w) ||
        !pr_cu_is_init(g, ws) || pr_cu_tdt(g, ws) != PRECIS_FLOAT32)
        return false;
    pr_dtype yd = pr_cu_tdt(g, y);
    if (yd != PRECIS_INT8 && yd != PRECIS_UINT8 && !pr_cu_float(yd)) return false;
    int b = pr_node_in(n, 3), z = pr_node_in(n, 4);
    if (b >= 0 && (!pr_cu_is_init(g, b) || pr_cu_tdt(g, b) != PRECIS_FLOAT32)) return false;
    if (z >= 0 && pr_cu_is_init(g, z)) return false;
    pr_act a;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
    const pr_tensor *X = &g->tensors[x], *W = &g->tensors[w];
    if (X->rank != 4 || W->rank != 4 || W->dims[1] != 1) return false;
    int64_t grp = pr_attr_int(n, "group", 1);
    return grp > 1 && grp == W->dims[0] && (!pr_dim_known(X->dims[1]) || X->dims[1] == grp);
}

static bool qdw_nhwc_ok(const pr_graph *g, const pr_node *n) { return qdw_supports(g, n); }

static bool qdw_packs(const pr_graph *g, const pr_node *n, int i) {
    (void)g;
    (void)n;
    return i == 1 || i == 2 || i == 3;
}

static void qdw_destroy(void *p) {
    qdw_state *s = p;
    if (!s) return;
    if (s->w) cudaFree(s->w);
    if (s->w_scale) cudaFree(s->w_scale);
    if (s->bias) cudaFree(s->bias);
    free(s);
}


static precis_status qdw_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                 void **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    qdw_state *s = calloc(1, sizeof *s);
    signed char *wt = NULL;
    float *sf = NULL, *bf = NULL;
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    cudaStream_t stream = (cudaStream_t)cfg->x->stream;
    const pr_tensor *W = &g->tensors[n->inputs[1]];
    const signed char *w = W->data;
    s->C = W->dims[0];
    s->kh = W->dims[2];
    s->kw = W->dims[3];
    int64_t taps = s->kh * s->kw;
    if (!w || !(wt = malloc((size_t)(taps * s->C) + 1))) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    for (int64_t c = 0; c < s->C; c++) /* [C][1][kh][kw] -> [kh * kw][C] */
        for (int64_t r = 0; r < taps; r++) wt[r * s->C + c] = w[c * taps + r];
    if ((st = pr_cu_upload(wt, (size_t)(taps * s->C), &s->w, stream, e))) goto fail;
    if ((st = pr_cu_qparams(g, n, s->C, "channels", &sf, &s->n_wscale, &bf, e)) ||
        (st = pr_cu_upload(sf, (size_t)s->n_wscale * sizeof(float), (void **)&s->w_scale, stream,
                           e)) ||
        (bf && (st = pr_cu_upload(bf, (size_t)s->C * sizeof(float), (void **)&s->bias, stream, e))))
        goto fail;
    s->pre = pr_cu_act_of(n, "act");
    s->post = pr_cu_act_of(n, "act2");
    s->x_scale = pr_attr_float(n, "x_scale", 1.0f);
    s->z_scale = pr_attr_float(n, "z_scale", 1.0f);
    s->y_inv = 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    s->y_b = pr_cu_u8_biased(g, n->outputs[0]); /* for the IMMA GEMMs reading it */
    const char *an = s->pre.kind ? pr_act_names[s->pre.kind] : "";
    snprintf(s->what, sizeof s->what,
             "cu int8 depthwise conv %lldx%lld (%s x, scale+bias%s%s%s%s -> %s)",
             (long long)s->kh, (long long)s->kw,
             pr_dtype_name(g->tensors[n->inputs[0]].dtype), *an ? "+" : "", an,
             pr_node_in(n, 4) >= 0 ? "+residual" : "", s->post.kind ? "+act2" : "",
             s->y_b ? "uint8 stored biased" : pr_dtype_name(g->tensors[n->outputs[0]].dtype));
    free(wt);
    free(sf);
    free(bf);
    *out = s;
    return PRECIS_OK;
fail:
    free(wt);
    free(sf);
    free(bf);
    qdw_destroy(s);
    return st;
}

static const char *qdw_describe(void *p) { return ((qdw_state *)p)->what; }

static precis_status qdw_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    qdw_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const pr_buf *Z = k->n_in > 4 ? k->in[4] : NULL;
    if (Y->numel == 0) return PRECIS_OK;
    if (X->dims[1] != s->C)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "%lld input channels, weights for %lld",
                          (long long)X->dims[1], (long long)s->C);
    rc_geom3 gm;
    int64_t kd[2] = {s->kh, s->kw};
    if ((st = pr_refconv_geom(k, PR_CONV_KIND_CONV, X, kd, Y, &gm))) return st;
    pr_cu_qdw q;
    memset(&q, 0, sizeof q);
    q.g = (pr_cu_dw){X->dims[0], s->C, X->dims[2], X->dims[3], Y->dims[2], Y->dims[3],
                     (int)s->kh, (int)s->kw, (int)gm.s[1], (int)gm.s[2], (int)gm.pb[1],
                     (int)gm.pb[2], (int)gm.d[1], (int)gm.d[2],
                     k->g->tensors[k->node->inputs[0]].layout == PR_LAYOUT_NHWC,
                     {0, 0, 0}, {0, 0, 0}, 1};
    q.ynhwc = k->g->tensors[k->node->outputs[0]].layout == PR_LAYOUT_NHWC;
    q.x_u8 = X->dtype == PRECIS_UINT8;
    q.q.N = s->C;
    q.q.a_scale = s->x_scale;
    q.q.w_scale = s->w_scale;
    q.q.n_wscale = s->n_wscale;
    q.q.bias = s->bias;
    q.q.pre = s->pre;
    q.q.post = s->post;
    if (Z) {
        bool zl = k->g->tensors[k->node->inputs[4]].layout == PR_LAYOUT_NHWC;
        if (zl != (bool)q.ynhwc || Z->numel != Y->numel)
            return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "residual not in the output's layout");
        q.q.z = Z->data;
        q.q.zdt = (int)Z->dtype;
        q.q.z_int = Z->dtype == PRECIS_INT8 || Z->dtype == PRECIS_UINT8;
        q.q.z_scale = s->z_scale;
    }
    q.q.y = Y->data;
    q.q.ydt = (int)Y->dtype;
    q.q.y_inv = s->y_inv;
    q.q.y_bias = s->y_b;
    KL_TRY(pr_cu_qdwconv(x->stream, X->data, s->w, &q));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_qdwconv = {
    .name = "cu.qdwconv",
    .supports = qdw_supports,
    .nhwc_ok = qdw_nhwc_ok,
    .packs = qdw_packs,
    .prepare = qdw_prepare,
    .run = qdw_run,
    .describe = qdw_describe,
    .destroy = qdw_destroy,
};
