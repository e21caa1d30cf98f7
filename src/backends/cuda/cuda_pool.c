/* Spatial nodes on the GPU (NCHW, rank 4): MaxPool (no Indices output),
 * AveragePool, GlobalAveragePool, GlobalMaxPool, and Resize / Upsample in
 * nearest or (non-antialiased) linear mode over the last two dims. The
 * window geometry comes from the ref backend's pr_refconv_geom and the
 * resize parameters from pr_resize_plan_make, so all three backends read
 * the attributes one way. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_qbias.h"
#include "backends/ref/ref_conv.h"
#include "ir/infer_tensor.h"

static bool resize_ok(const pr_graph *g, const pr_node *n) {
    const char *mode = pr_attr_str(n, "mode", "nearest");
    if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "bilinear")) return false;
    if (pr_attr_int(n, "antialias", 0)) return false;
    const char *ct = pr_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    if (!strcmp(ct, "tf_crop_and_resize") || !strcmp(ct, "half_pixel_symmetric")) return false;
    const pr_tensor *X = &g->tensors[n->inputs[0]];
    /* parameter inputs (roi, scales, sizes) must be known at build time */
    for (int i = 1; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && !pr_cu_is_init(g, n->inputs[i]) &&
            pr_numel(g->tensors[n->inputs[i]].rank, g->tensors[n->inputs[i]].dims) != 0)
            return false;
    return X->rank == 4;
}

static bool pool_supports(const pr_graph *g, const pr_node *n) {
    int x = pr_node_in(n, 0), y = pr_node_out(n, 0);
    if (x < 0 || y < 0 || n->n_outputs != 1) return false;
    if (pr_cu_tdt(g, y) != pr_cu_tdt(g, x)) return false;
    if (!pr_cu_float(pr_cu_tdt(g, x))) { /* int8: max pooling, nearest Resize (values move) */
        pr_dtype d = pr_cu_tdt(g, x);
        if (n->op == PR_OP_Resize || n->op == PR_OP_Upsample)
            return (d == PRECIS_INT8 || d == PRECIS_UINT8) && resize_ok(g, n) &&
                   !strcmp(pr_attr_str(n, "mode", "nearest"), "nearest");
        return (d == PRECIS_INT8 || d == PRECIS_UINT8) && n->op == PR_OP_MaxPool &&
               g->tensors[x].rank == 4;
    }
    switch (n->op) {
    case PR_OP_GlobalAveragePool: case PR_OP_GlobalMaxPool:
        return g->tensors[x].rank >= 3;
    case PR_OP_MaxPool: case PR_OP_AveragePool:
        return g->tensors[x].rank == 4;
    case PR_OP_Resize: case PR_OP_Upsample:
        return resize_ok(g, n);
    default:
        return false;
    }
}

static bool pool_packs(const pr_graph *g, const pr_node *n, int i) { return i > 0; }

/* Pooling reads N,H,W,C as well (float types); Resize does not. */
static bool pool_nhwc_ok(const pr_graph *g, const pr_node *n) {
    return n->op != PR_OP_Resize && n->op != PR_OP_Upsample && pool_supports(g, n) &&
           g->tensors[n->inputs[0]].rank == 4;
}

static bool is_nhwc(const pr_kernel *k, int t) {
    return t >= 0 && k->g->tensors[t].layout == PR_LAYOUT_NHWC;
}

/* The state of a MaxPool passing biased uint8 storage on (cuda_qbias.h):
 * run as the int8 max of the bytes; every other node has none (NULL). */
static const char biased_max[] = "cu.spatial (uint8 stored biased: int8 max)";

/* The state of a MaxPool fused into the stem conv before it (cuda_qgemm.c,
 * pr_cu_pool_fused): that conv wrote the pooled tensor into the head of its
 * output X; Y shares X's buffer (pool_inplace: nothing to do) or gets a copy
 * of the head (the engine's first, planning run allocates each tensor alone). */
static const char fused_max[] = "cu.spatial (MaxPool fused into the stem conv: no pass)";

static int pool_inplace(const pr_graph *g, const pr_node *n) {
    return pr_cu_pool_fused(g, n) ? 0 : -1;
}

static precis_status pool_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                  void **out, pr_err *e) {
    *out = pr_cu_pool_fused(g, n) ? (void *)fused_max
           : n->op == PR_OP_MaxPool && pr_cu_u8_biased(g, pr_node_in(n, 0)) ? (void *)biased_max
                                                                            : NULL;
    return PRECIS_OK;
}

static int coord_code(int c) {
    switch (c) {
    case PR_COORD_ASYMMETRIC: return 1;
    case PR_COORD_ALIGN_CORNERS: return 2;
    case PR_COORD_PYTORCH_HALF_PIXEL: return 3;
    case PR_COORD_TF_HALF_PIXEL_FOR_NN: return 4;
    default: return 0;
    }
}

static precis_status resize_run(pr_kernel *k, pr_cuda_exec *x) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    pr_infer ic;
    pr_tinfo tin[8];
    pr_cu_kernel_infer(k, &ic, tin, 8);
    pr_resize_plan p;
    bool known = false;
    if ((st = pr_resize_plan_make(&ic, &p, &known))) return st;
    if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "resize parameters not known");
    if (p.mode == PR_RESIZE_CUBIC || p.antialias || X->dims[0] != Y->dims[0] ||
        X->dims[1] != Y->dims[1])
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "cu.resize: only nearest/linear over H, W");
    pr_cu_resize r = {p.mode == PR_RESIZE_NEAREST ? 0 : 1,
                      coord_code(p.coord),
                      p.nearest == PR_NEAREST_SIMPLE ? 4 : p.nearest,
                      X->dims[0] * X->dims[1],
                      X->dims[2],
                      X->dims[3],
                      Y->dims[2],
                      Y->dims[3],
                      (float)p.scale[2],
                      (float)p.scale[3]};
    KL_TRY(pr_cu_resize_run(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype, &r));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

static precis_status pool_run(void *s, pr_kernel *k, pr_cuda_exec *x) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_node *n = k->node;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    if (Y->numel == 0) return PRECIS_OK;
    if (n->op == PR_OP_Resize || n->op == PR_OP_Upsample) return resize_run(k, x);
    if (s == fused_max) { /* the pooled tensor is X's head */
        if (X->nbytes < Y->nbytes)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "fused MaxPool: %zu bytes in, %zu out",
                              X->nbytes, Y->nbytes);
        if (Y->data != X->data)
            CU_TRY(cudaMemcpyAsync(Y->data, X->data, Y->nbytes, cudaMemcpyDeviceToDevice,
                                   (cudaStream_t)x->stream));
        return PRECIS_OK;
    }
    bool nhwc = is_nhwc(k, n->inputs[0]);
    if (n->op == PR_OP_GlobalAveragePool || n->op == PR_OP_GlobalMaxPool) {
        int64_t N = X->dims[0], C = X->dims[1], planes = N * C;
        int64_t hw = X->numel / (planes ? planes : 1);
        float *part = pr_cuda_scratch(x, (size_t)pr_cu_gpool_scratch(N, C, hw, nhwc) * 4, e);
        if (!part) goto fail;
        KL_TRY(pr_cu_gpool(x->stream, X->data, (int)X->dtype, Y->data, (int)Y->dtype, N, C, hw,
                           nhwc, n->op == PR_OP_GlobalMaxPool, 1.0f, 1.0f, part));
        return PRECIS_OK;
    }
    rc_geom3 g;
    if ((st = pr_refconv_geom(k, PR_CONV_KIND_POOL, X, NULL, Y, &g))) return st;
    pr_cu_pool p = {n->op == PR_OP_MaxPool ? 0 : 1,
                    (int)(pr_attr_int(n, "count_include_pad", 0) == 1),
                    X->dims[0], X->dims[1], X->dims[2], X->dims[3], Y->dims[2], Y->dims[3],
                    (int)g.k[1], (int)g.k[2], (int)g.s[1], (int)g.s[2], (int)g.pb[1],
                    (int)g.pb[2], (int)g.d[1], (int)g.d[2], (int)g.pe[1], (int)g.pe[2], nhwc};
    int dt = s == biased_max ? (int)PRECIS_INT8 : (int)X->dtype;
    KL_TRY(pr_cu_pool2d(x->stream, X->data, dt, Y->data, s == biased_max ? dt : (int)Y->dtype, &p));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", n->name);
    return st;
}

static const char *pool_describe(void *p) { return p ? (const char *)p : "cu.spatial"; }

const pr_cuda_impl pr_cuda_impl_pool = {
    .name = "cu.pool",
    .supports = pool_supports,
    .nhwc_ok = pool_nhwc_ok,
    .packs = pool_packs,
    .inplace_input = pool_inplace,
    .prepare = pool_prepare,
    .run = pool_run,
    .describe = pool_describe,
};
