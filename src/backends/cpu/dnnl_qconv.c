/* oneDNN INT8 convolution: QConv (ops.inc), 2-D (rank 4), groups and
 * depthwise included.
 *
 *   src   int8 or uint8 activations (uint8 is VNNI's native operand; int8
 *         costs oneDNN a compensation term), plain or NHWC. The primitive
 *         always works on NHWC (oneDNN 2.6 has no fast int8 convolution on
 *         nchw: it falls to ref_int8); plain tensors (a graph the layout pass
 *         has not seen) are transposed into scratch and back;
 *   wei   the int8 initializer, reordered once into the primitive's layout
 *         (format `any`); a plain copy is kept for primitives of other
 *         shapes that want another layout (int8 weights carry compensation
 *         and are not reordered from one blocked layout to another);
 *   acc   s32, times the output scales x_scale * w_scale[m] per output
 *         channel (times 1/y_scale when folded, see pr_dnnl_qepi);
 *   bias  float32, added by oneDNN 2.x to the accumulator before the scales,
 *         so it is passed as B[m] / (x_scale * w_scale[m]);
 *   epilogue act, residual Z (sum or binary post-op), act2, 1/y_scale
 *         (pr_dnnl_qepi); dst int8/uint8 (saturated, rounded to nearest
 *         even) or float32.
 * A channel with w_scale[m] == 0 has real weights 0: its int8 weights are
 * zeroed and its scale set to 1, so the bias stays finite.
 * Output channels padded: a conv with a kernel bigger than 1x1, OC > 16 not
 * a multiple of 16, NHWC src and output and no residual runs with OC rounded
 * up to 16 (zero weights) into scratch, and the OC real channels are copied
 * out (oneDNN 2.6's int8 kernels lose ~30% on OC 24: det's 3x3 96->24 at
 * 160² 2.7 -> 1.85 ms in the model; 1x1 convs gain nothing after the copy,
 * and cls's 3x3 3->8 stem lost 7 us padded to 16).
 * A float32 output of fewer than 16 channels with a Sigmoid/Tanh/Gelu/Swish
 * act gets the act afterwards over the whole buffer (pr_cpu_act_f32): in
 * oneDNN's post-op each pixel's few values take a vector (det's last 1x1
 * 24 -> 4 + Sigmoid at 320²: 0.51 -> ~0.2 ms).
 * Late INT8 epilogue: an int8/uint8 output (NHWC in and out) whose act is
 * Swish or Sigmoid, with an int8/uint8 residual or none, runs the primitive
 * with float32 output (scales and bias only) into scratch, then act,
 * residual, act2 and the quantization in one pass (pr_cpu_qact_rows):
 * oneDNN 2.6's Swish post-op costs ~0.24 ns per output value (a 1x1 32->32
 * at 80x80, one thread: 0.023 ms bare, 0.073 with Swish), more than writing
 * float32 and the pass together (YOLOv8n's every conv). PRECIS_QCONV_LATE=0
 * keeps the post-op chain.
 * One primitive per concrete (N, H, W, threads), created in prepare for the
 * graph's shape (representative dims when symbolic) and lazily for others
 * (pr_dnnl_cache), as dnnl_conv.c. */
#include "backends/cpu/dnnl_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRECIS_HAVE_DNNL

#include "backends/cpu/kernels.h"
#include "ir/infer_conv.h"

typedef struct qconv_state {
    pr_dtype xdt;
    int src_layout, dst_layout;
    int64_t G, IC, OC, KH, KW;
    int64_t OCp; /* the primitive's output channels (OC, or OC padded) */
    pr_act late;  /* act applied over the float output after the primitive */
    bool late_ok;     /* the late INT8 epilogue may apply (see the top) ... */
    size_t late_max;  /* ... to primitives of at most this many float32 bytes out */
    pr_dnnl_qepi pq;  /* the primitive's epilogue then: float32, scales and bias */
    float *oscale; /* OC output scales */
    float *bias;   /* OC, in accumulator units, or NULL */
    int8_t *wq;    /* plain int8 weights (zeroed channels applied) */
    pr_dnnl_qepi q;
    pr_dnnl_weights w;
    pr_dnnl_cache cache;
    char desc[96];
} qconv_state;

typedef struct qconv_ctx {
    qconv_state *s;
    const pr_node *node;
} qconv_ctx;

/* key: N, H, W, threads */
enum { K_N, K_H, K_W, K_THREADS, K_COUNT };

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static bool is_init(const pr_tensor *t, pr_dtype dt) {
    return t && (t->flags & PR_T_INIT) && t->data && t->dtype == dt;
}

static bool act_layout(const pr_tensor *t) {
    return t->layout == PR_LAYOUT_PLAIN || t->layout == PR_LAYOUT_NHWC;
}

/* Y's dtype from y_type (the graph's may still be undefined) */
static pr_dtype y_dtype(const pr_node *n) {
    int64_t yt = pr_attr_int(n, "y_type", PRECIS_FLOAT32);
    return yt == PRECIS_INT8 || yt == PRECIS_UINT8 || yt == PRECIS_FLOAT32 ? (pr_dtype)yt
                                                                           : PRECIS_UNDEFINED;
}

/* Channel scale x_scale * w_scale[m] as used (1 for a zero w_scale). */
static float chan_scale(float xs, float ws) { return ws == 0.0f ? 1.0f : xs * ws; }

static bool qconv_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv || n->n_inputs > 5 || n->n_inputs < 3) return false;
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2), *B = pr_node_tin(g, n, 3);
    const pr_tensor *Z = pr_node_tin(g, n, 4), *Y = pr_node_tout(g, n, 0);
    if (!X || !W || !S || !Y) return false;
    if (!q8(X->dtype) || X->rank != 4 || !act_layout(X) || !act_layout(Y)) return false;
    pr_dtype ydt = y_dtype(n);
    if (ydt == PRECIS_UNDEFINED || (Y->dtype != PRECIS_UNDEFINED && Y->dtype != ydt)) return false;
    if (!is_init(W, PRECIS_INT8) || W->rank != 4) return false;
    for (int d = 0; d < 4; d++)
        if (!pr_dim_known(W->dims[d]) || W->dims[d] == 0) return false;
    int64_t G = pr_attr_int(n, "group", 1), OC = W->dims[0], IC = W->dims[1] * G;
    if (G < 1 || OC % G) return false;
    if (pr_dim_known(X->dims[1]) && X->dims[1] != IC) return false;
    if (!is_init(S, PRECIS_FLOAT32) || S->rank != 1 || S->dims[0] != OC) return false;
    if (B && (!is_init(B, PRECIS_FLOAT32) || B->rank != 1 || B->dims[0] != OC)) return false;
    float xs = pr_attr_float(n, "x_scale", 0.0f);
    if (!(xs > 0.0f) || !isfinite(xs)) return false;
    const float *ws = S->data, *bv = B ? B->data : NULL;
    for (int64_t m = 0; m < OC; m++) {
        float cs = chan_scale(xs, ws[m]);
        if (!isfinite(ws[m]) || !isfinite(cs) || cs == 0.0f) return false;
        if (bv && !isfinite(bv[m] / cs)) return false;
    }
    const int64_t *v;
    int nv = pr_attr_ints(n, "kernel_shape", &v);
    if (nv >= 0 && (nv != 2 || v[0] != W->dims[2] || v[1] != W->dims[3])) return false;
    if ((nv = pr_attr_ints(n, "strides", &v)) >= 0 && nv != 2) return false;
    if ((nv = pr_attr_ints(n, "dilations", &v)) >= 0 && nv != 2) return false;
    if ((nv = pr_attr_ints(n, "pads", &v)) >= 0 && nv != 4) return false;
    if (Z && (Z->rank != 4 || Z->layout != Y->layout)) return false;
    pr_dnnl_qepi q;
    if (!pr_dnnl_qepi_init(&q, n, Z ? Z->dtype : PRECIS_UNDEFINED, ydt)) return false;
    return pr_dnnl_qepi_ok(&q);
}

static bool qconv_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

static bool transcendental(pr_act_kind k) {
    return k == PR_ACT_SIGMOID || k == PR_ACT_TANH || k == PR_ACT_GELU || k == PR_ACT_GELU_TANH ||
           k == PR_ACT_SWISH;
}

/* Float32 output bytes up to which a primitive takes the late epilogue
 * (about the L2 of one core: YOLOv8n's 16x160x160 stem, 1.6 MB, ran 0.21 ->
 * 0.25 ms late; batches are cut into groups of images under it). */
#define LATE_MAX_BYTES ((size_t)1 << 20)

/* The late INT8 epilogue may apply (see the top)? */
static bool late_q8(const pr_dnnl_qepi *q, int src_layout, int dst_layout) {
    const char *env = getenv("PRECIS_QCONV_LATE");
    if (env && env[0] == '0') return false;
    return q8(q->y_dt) && (q->z_mode == PR_QZ_NONE || q->z_mode == PR_QZ_SUM) &&
           (q->act.kind == PR_ACT_SWISH || q->act.kind == PR_ACT_SIGMOID) &&
           src_layout == PR_LAYOUT_NHWC && dst_layout == PR_LAYOUT_NHWC;
}

static int qconv_inplace_input(const pr_graph *g, const pr_node *n) {
    const pr_tensor *Z = pr_node_tin(g, n, 4);
    if (n->op != PR_OP_QConv || !Z) return -1;
    pr_dnnl_qepi q;
    if (!pr_dnnl_qepi_init(&q, n, Z->dtype, y_dtype(n))) return -1;
    return pr_dnnl_qepi_z_inplace(&q) ? 4 : -1;
}

static precis_status qconv_create(void *vctx, const int64_t *key, int nkey, pr_dnnl_entry *ent,
                                  pr_err *e) {
    qconv_ctx *c = vctx;
    qconv_state *s = c->s;
    precis_status st;
    pr_conv_geom geo;
    pr_dnnl_po po = {0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int64_t in_sp[2] = {key[K_H], key[K_W]}, wk[2] = {s->KH, s->KW};
    st = pr_conv_geom_init(c->node, PR_CONV_KIND_CONV, 2, in_sp, wk, e, &geo);
    if (st) return st;
    if (!geo.pads_known || !pr_dim_known(geo.out[0]) || !pr_dim_known(geo.out[1]))
        return pr_errf(e, PRECIS_ERR_SHAPE, "convolution geometry not known for %lldx%lld",
                       (long long)key[K_H], (long long)key[K_W]);
    int64_t N = key[K_N];
    /* the late epilogue for outputs that stay in cache */
    bool late = s->late_ok && (size_t)(N * s->OCp * geo.out[0] * geo.out[1]) * sizeof(float) <=
                                  s->late_max;
    const pr_dnnl_qepi *eq = late ? &s->pq : &s->q;
    ent->flags = late;
    ent->out_dims[0] = N;
    ent->out_dims[1] = s->OC;
    ent->out_dims[2] = geo.out[0];
    ent->out_dims[3] = geo.out[1];
    if (N == 0 || key[K_H] == 0 || key[K_W] == 0 || geo.out[0] == 0 || geo.out[1] == 0)
        return PRECIS_OK; /* nothing to compute: no primitive */

    dnnl_memory_desc_t smd, wmd, bmd, dmd, zmd;
    memset(&bmd, 0, sizeof bmd);
    memset(&zmd, 0, sizeof zmd);
    int64_t sd[4] = {N, s->IC, key[K_H], key[K_W]};
    PR_TRY(pr_dnnl_check(pr_dnnl_md_act4(&smd, sd, pr_dnnl_qdt(s->xdt), PR_LAYOUT_NHWC), e,
                         "src desc"));
    int64_t pdims[4] = {N, s->OCp, geo.out[0], geo.out[1]};
    PR_TRY(pr_dnnl_check(pr_dnnl_md_act4(&dmd, pdims, pr_dnnl_qdt(eq->y_dt), PR_LAYOUT_NHWC), e,
                         "dst desc"));
    if (eq->z_mode == PR_QZ_BINARY)
        PR_TRY(pr_dnnl_check(pr_dnnl_md_act4(&zmd, ent->out_dims, dnnl_f32, PR_LAYOUT_NHWC), e,
                             "residual desc"));
    if (s->G > 1) {
        dnnl_dims_t d = {s->G, s->OC / s->G, s->IC / s->G, s->KH, s->KW};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&wmd, 5, d, dnnl_s8, dnnl_format_tag_any),
                             e, "weights desc"));
    } else {
        dnnl_dims_t d = {s->OCp, s->IC, s->KH, s->KW};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&wmd, 4, d, dnnl_s8, dnnl_format_tag_any),
                             e, "weights desc"));
    }
    if (s->bias) {
        dnnl_dims_t d = {s->OCp};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&bmd, 1, d, dnnl_f32, dnnl_a), e,
                             "bias desc"));
    }
    dnnl_dims_t strides = {geo.stride[0], geo.stride[1]};
    dnnl_dims_t dil = {geo.dil[0] - 1, geo.dil[1] - 1};
    dnnl_dims_t pl = {geo.pad_b[0], geo.pad_b[1]};
    dnnl_dims_t pr = {geo.pad_e[0], geo.pad_e[1]};
    dnnl_convolution_desc_t od;
    PR_TRY(pr_dnnl_check(dnnl_dilated_convolution_forward_desc_init(
                             &od, dnnl_forward_inference, dnnl_convolution_direct, &smd, &wmd,
                             s->bias ? &bmd : NULL, &dmd, strides, dil, pl, pr),
                         e, "convolution desc"));
    int z_idx = -1;
    PR_TRY(pr_dnnl_check(pr_dnnl_qepi_chain(&po, eq, &zmd, &z_idx), e, "post-ops"));
    PR_TRY(pr_dnnl_check(pr_dnnl_attr(&attr, po.po), e, "attributes"));
    PR_TRY(pr_dnnl_check(dnnl_primitive_attr_set_output_scales(attr, s->OCp, 1 << 1, s->oscale),
                         e, "output scales"));
    int saved = pr_dnnl_threads_set((int)key[K_THREADS]);
    dnnl_engine_t eng = pr_dnnl_engine(e);
    st = eng ? pr_dnnl_check(dnnl_primitive_desc_create(&pd, &od, attr, eng, NULL), e,
                             "int8 convolution")
             : e->status;
    if (!st)
        st = pr_dnnl_weights_for(&s->w, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                                 ent, e);
    if (!st) st = pr_dnnl_entry_set_prim(ent, pd, e);
    pr_dnnl_threads_restore(saved);
    if (st) goto fail;
    pr_dnnl_entry_arg(ent, DNNL_ARG_SRC, &smd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_WEIGHTS,
                      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    if (s->bias) pr_dnnl_entry_arg(ent, DNNL_ARG_BIAS, &bmd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_DST, &dmd);
    if (z_idx >= 0)
        pr_dnnl_entry_arg(ent, DNNL_ARG_ATTR_MULTIPLE_POST_OP(z_idx) | DNNL_ARG_SRC_1, &zmd);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    pr_dnnl_po_destroy(&po);
    return st;
}

static void qconv_destroy(void *state) {
    qconv_state *s = state;
    if (!s) return;
    pr_dnnl_cache_destroy(&s->cache);
    pr_dnnl_weights_free(&s->w);
    free(s->oscale);
    free(s->bias);
    free(s->wq);
    free(s);
}

static precis_status qconv_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                   void **state, pr_err *e) {
    *state = NULL;
    if (!qconv_supports(g, n))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by dnnl.qconv",
                       n->name, n->op_type);
    if (!pr_dnnl_engine(e)) return e->status;
    qconv_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    precis_status st = pr_dnnl_cache_init(&s->cache, e);
    if (st) {
        free(s);
        return st;
    }
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *S = pr_node_tin(g, n, 2), *B = pr_node_tin(g, n, 3);
    const pr_tensor *Z = pr_node_tin(g, n, 4), *Y = pr_node_tout(g, n, 0);
    s->xdt = X->dtype;
    s->src_layout = X->layout;
    s->dst_layout = Y->layout;
    s->G = pr_attr_int(n, "group", 1);
    s->OC = W->dims[0];
    s->IC = W->dims[1] * s->G;
    s->KH = W->dims[2];
    s->KW = W->dims[3];
    pr_dnnl_qepi_init(&s->q, n, Z ? Z->dtype : PRECIS_UNDEFINED, y_dtype(n));
    if (late_q8(&s->q, s->src_layout, s->dst_layout)) {
        const char *kb = getenv("PRECIS_QCONV_LATE_KB");
        s->late_ok = true;
        s->late_max = kb && atol(kb) > 0 ? (size_t)atol(kb) << 10 : LATE_MAX_BYTES;
        s->pq.y_dt = PRECIS_FLOAT32; /* no act, no residual, unfolded scales */
        s->pq.y_scale = s->pq.z_scale = 1.0f;
    }
    s->OCp = s->G == 1 && s->KH * s->KW > 1 && s->OC > 16 && s->OC % 16 && !Z &&
                     s->src_layout == PR_LAYOUT_NHWC && s->dst_layout == PR_LAYOUT_NHWC
                 ? (s->OC + 15) / 16 * 16
                 : s->OC;
    if (s->q.y_dt == PRECIS_FLOAT32 && s->q.z_mode == PR_QZ_NONE && s->OC < 16 &&
        s->q.act2.kind == PR_ACT_NONE && transcendental(s->q.act.kind)) {
        s->late = s->q.act; /* a vector per pixel of OC < 16 values: see the top */
        s->q.act.kind = PR_ACT_NONE;
    }
    float xs = pr_attr_float(n, "x_scale", 1.0f), f = pr_dnnl_qepi_oscale(&s->q);
    const float *ws = S->data;
    int64_t per = W->dims[1] * s->KH * s->KW; /* weights per output channel */
    s->oscale = malloc((size_t)s->OCp * sizeof(float));
    s->wq = calloc((size_t)(s->OCp * per), 1);
    if (B) s->bias = calloc((size_t)s->OCp, sizeof(float));
    if (!s->oscale || !s->wq || (B && !s->bias)) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    memcpy(s->wq, W->data, (size_t)(s->OC * per));
    for (int64_t m = 0; m < s->OC; m++) {
        float cs = chan_scale(xs, ws[m]);
        if (ws[m] == 0.0f) memset(s->wq + m * per, 0, (size_t)per);
        s->oscale[m] = cs * f;
        if (B) s->bias[m] = ((const float *)B->data)[m] / cs;
    }
    for (int64_t m = s->OC; m < s->OCp; m++) s->oscale[m] = 1.0f; /* padding: zero weights */
    s->w.user = s->wq;
    if (s->G > 1) {
        dnnl_dims_t d = {s->G, s->OC / s->G, s->IC / s->G, s->KH, s->KW};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&s->w.user_md, 5, d, dnnl_s8, dnnl_goihw),
                             e, "weights desc"));
    } else {
        dnnl_dims_t d = {s->OCp, s->IC, s->KH, s->KW};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&s->w.user_md, 4, d, dnnl_s8, dnnl_oihw),
                             e, "weights desc"));
    }
    int64_t key[K_COUNT] = {pr_dim_known(X->dims[0]) ? X->dims[0] : 1,
                            pr_dim_known(X->dims[2]) ? X->dims[2] : 32,
                            pr_dim_known(X->dims[3]) ? X->dims[3] : 32,
                            cfg && cfg->num_threads > 0 ? cfg->num_threads : 1};
    if (key[K_N] == 0) key[K_N] = 1;
    if (key[K_H] == 0) key[K_H] = 32;
    if (key[K_W] == 0) key[K_W] = 32;
    qconv_ctx c = {s, n};
    PR_TRY(pr_dnnl_cache_prime(&s->cache, key, K_COUNT, qconv_create, &c, e));
    if (!s->w.data) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "no primitive for the graph's shape");
        goto fail;
    }
    snprintf(s->desc, sizeof s->desc, "%s%s", s->cache.primary->impl,
             s->cache.primary->flags ? "+qact" : "");
    *state = s;
    return PRECIS_OK;
fail:
    qconv_destroy(s);
    return pr_err_prefix(e, "node '%s' (%s)", n->name, n->op_type);
}

/* Images per primitive execution: the whole batch, or groups whose float32
 * output fits the late epilogue's budget when one image does. */
static int64_t images_per_exec(const qconv_state *s, const pr_node *n, const pr_buf *X) {
    int64_t N = X->dims[0];
    if (!s->late_ok || N <= 1) return N;
    pr_conv_geom geo;
    int64_t in_sp[2] = {X->dims[2], X->dims[3]}, wk[2] = {s->KH, s->KW};
    pr_err tmp; /* a failure shows again when the primitive is made */
    tmp.status = PRECIS_OK;
    tmp.msg[0] = 0;
    if (pr_conv_geom_init(n, PR_CONV_KIND_CONV, 2, in_sp, wk, &tmp, &geo) || !geo.pads_known ||
        !pr_dim_known(geo.out[0]) || !pr_dim_known(geo.out[1]))
        return N;
    size_t img = (size_t)(s->OCp * geo.out[0] * geo.out[1]) * sizeof(float);
    if (img == 0 || img > s->late_max || (size_t)N * img <= s->late_max) return N;
    return (int64_t)(s->late_max / img);
}

/* One execution over N images: X, Y, Z point at the first one's data. */
static precis_status qconv_exec(qconv_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                                pr_buf *Y, const pr_buf *Z) {
    int threads = x->num_threads > 0 ? x->num_threads : 1;
    int64_t key[K_COUNT] = {X->dims[0], X->dims[2], X->dims[3], threads};
    pr_dnnl_entry *ent;
    bool temp;
    qconv_ctx c = {s, k->node};
    precis_status st =
        pr_dnnl_cache_get(&s->cache, key, K_COUNT, qconv_create, &c, &ent, &temp, k->err);
    if (st) return pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
    bool late = ent->flags != 0;
    const pr_dnnl_qepi *eq = late ? &s->pq : &s->q;
    if (Y->rank != 4 || memcmp(Y->dims, ent->out_dims, 4 * sizeof(int64_t)) != 0) {
        st = pr_kernelf(k, PRECIS_ERR_SHAPE, "output is not [%lld,%lld,%lld,%lld]",
                        (long long)ent->out_dims[0], (long long)ent->out_dims[1],
                        (long long)ent->out_dims[2], (long long)ent->out_dims[3]);
        goto done;
    }
    if (!ent->prim) goto done; /* empty output */
    void *xp = X->data, *yp = Y->data, *zp = Z ? Z->data : NULL;
    if (s->src_layout != PR_LAYOUT_NHWC || s->dst_layout != PR_LAYOUT_NHWC) {
        /* plain tensors (never late): NHWC copies in scratch beyond the scratchpad */
        size_t xb = s->src_layout == PR_LAYOUT_NHWC ? 0 : (X->nbytes + 63) & ~(size_t)63;
        size_t yb = s->dst_layout == PR_LAYOUT_NHWC ? 0 : (Y->nbytes + 63) & ~(size_t)63;
        size_t zb = yb && s->q.z_mode == PR_QZ_BINARY ? Z->nbytes : 0;
        char *buf = pr_dnnl_scratch_after(ent, x, xb + yb + zb);
        if (!buf) {
            st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
            goto done;
        }
        if (xb) {
            xp = buf;
            pr_cpu_nchw_nhwc(X->data, xp, X->dims, 1, true, threads);
        }
        if (yb) {
            yp = buf + xb;
            if (s->q.z_mode == PR_QZ_SUM) {
                pr_cpu_nchw_nhwc(Z->data, yp, Y->dims, pr_dtype_size(Z->dtype), true, threads);
            } else if (s->q.z_mode == PR_QZ_DEQUANT) {
                pr_dnnl_qepi_prep(&s->q, Z, Y, threads);
                pr_cpu_nchw_nhwc(Y->data, yp, Y->dims, sizeof(float), true, threads);
            } else if (zb) {
                zp = buf + xb + yb;
                pr_cpu_nchw_nhwc(Z->data, zp, Y->dims, sizeof(float), true, threads);
            }
        }
    }
    if (yp == Y->data && !late) pr_dnnl_qepi_prep(&s->q, Z, Y, threads);
    size_t ysz = late ? sizeof(float) : pr_dtype_size(Y->dtype);
    if (s->OCp != s->OC || late) { /* into scratch: copied out or requantized below */
        yp = pr_dnnl_scratch_after(ent, x, (size_t)(Y->numel / s->OC * s->OCp) * ysz);
        if (!yp) {
            st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
            goto done;
        }
    }
    void *ptrs[5];
    int np = 0;
    ptrs[np++] = xp;
    ptrs[np++] = ent->wei;
    if (s->bias) ptrs[np++] = s->bias;
    ptrs[np++] = yp;
    if (eq->z_mode == PR_QZ_BINARY) ptrs[np++] = zp;
    st = pr_dnnl_execute(ent, ptrs, x, k->err);
    if (st) {
        pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
    } else if (late) {
        const pr_dnnl_qepi *q = &s->q;
        pr_cpu_qact_rows(yp, s->OCp, Y->numel / s->OC, s->OC, &q->act, &q->act2,
                         Z ? Z->data : NULL, q->z_dt, q->z_scale, Y->data, q->y_dt,
                         1.0f / q->y_scale, threads);
    } else if (s->OCp != s->OC) {
        int64_t px = Y->numel / s->OC;
        size_t rb = (size_t)s->OC * ysz, pb = (size_t)s->OCp * ysz;
        int nt = px * (int64_t)rb >= 131072 ? threads : 1;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t p = 0; p < px; p++)
            memcpy((char *)Y->data + (size_t)p * rb, (const char *)yp + (size_t)p * pb, rb);
    } else if (yp != Y->data) {
        pr_cpu_nchw_nhwc(yp, Y->data, Y->dims, pr_dtype_size(Y->dtype), false, threads);
    }
    if (!st && s->late.kind != PR_ACT_NONE) pr_cpu_act_f32(Y->data, Y->numel, &s->late, threads);
done:
    if (temp) pr_dnnl_entry_free(ent);
    return st;
}

/* The batch image by image (a shallow view of b from image n0, nn images). */
static pr_buf images(const pr_buf *b, int64_t n0, int64_t nn) {
    pr_buf v = *b;
    int64_t per = b->dims[0] ? b->numel / b->dims[0] : 0;
    v.dims[0] = nn;
    v.numel = per * nn;
    v.nbytes = (size_t)v.numel * pr_dtype_size(b->dtype);
    v.data = (char *)b->data + (size_t)(per * n0) * pr_dtype_size(b->dtype);
    return v;
}

static precis_status qconv_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    qconv_state *s = state;
    const pr_buf *X = k->in[0], *Z = s->q.z_mode != PR_QZ_NONE ? pr_kin(k, 4) : NULL;
    pr_buf *Y = k->out[0];
    if (X->dtype != s->xdt || Y->dtype != s->q.y_dt)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s -> %s, got %s -> %s",
                          pr_dtype_name(s->xdt), pr_dtype_name(s->q.y_dt), pr_dtype_name(X->dtype),
                          pr_dtype_name(Y->dtype));
    if (X->rank != 4 || X->dims[1] != s->IC)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must be [N, %lld, H, W]", (long long)s->IC);
    if (s->q.z_mode != PR_QZ_NONE && (!Z || Z->numel != Y->numel || Z->dtype != s->q.z_dt))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    int64_t N = X->dims[0], per = images_per_exec(s, k->node, X);
    if (per >= N || Y->rank != 4 || Y->dims[0] != N) return qconv_exec(s, k, x, X, Y, Z);
    for (int64_t n0 = 0; n0 < N; n0 += per) {
        int64_t nn = N - n0 < per ? N - n0 : per;
        pr_buf xv = images(X, n0, nn), yv = images(Y, n0, nn), zv;
        if (Z) zv = images(Z, n0, nn);
        precis_status st = qconv_exec(s, k, x, &xv, &yv, Z ? &zv : NULL);
        if (st) return st;
    }
    return PRECIS_OK;
}

static const char *qconv_describe(void *state) {
    qconv_state *s = state;
    return s && s->desc[0] ? s->desc : "dnnl.qconv";
}

const pr_cpu_impl pr_cpu_impl_dnnl_qconv = {
    .name = "dnnl.qconv",
    .supports = qconv_supports,
    .nhwc_ok = qconv_nhwc_ok,
    .inplace_input = qconv_inplace_input,
    .prepare = qconv_prepare,
    .run = qconv_run,
    .describe = qconv_describe,
    .destroy = qconv_destroy,
};

#endif
