/* deconv_s2d: a ConvTranspose whose kernel equals its stride (no overlap:
 * every output pixel comes from one input pixel) becomes a 1x1 Conv to
 * s*s*Cout channels and a DepthToSpace (DCR):
 *
 *   y[n, co, h*s+i, w*s+j] = sum_ci x[n, ci, h, w] W[ci, co, i, j] + B[co]
 *   W'[(i*s + j)*Cout + co, ci] = W[ci, co, i, j],  B'[(i*s + j)*Cout + co] = B[co]
 *
 * (the 2x2 stride-2 upsamplings of segmentation/DB heads: oneDNN's direct
 * deconvolution runs them at a few GFLOPS, a 1x1 conv at full rate, and the
 * 1x1 conv can be INT8). Then the DepthToSpace moves down past what acts per
 * element or per channel on its output, so that the conv can fuse them:
 * single-input elementwise ops (Relu, Sigmoid, Clip with constant bounds...)
 * and Add/Sub/Mul/Div by a constant along the channel axis (repeated for the
 * s*s sub-channels).
 *
 * Conditions: rank 4, group 1, constant float32 W (and B), kernel = strides
 * (square), dilations 1, no pads, output_padding or output_shape, auto_pad
 * NOTSET. Runs after fuse_conv (the ConvTranspose has taken its bias and
 * BatchNorm by then) and before a second fuse_conv. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"

static bool ints_all(const pr_node *n, const char *name, int64_t want, int count) {
    const int64_t *v;
    int nv = pr_attr_ints(n, name, &v);
    if (nv < 0) return true;
    if (count >= 0 && nv != count) return false;
    for (int i = 0; i < nv; i++)
        if (v[i] != want) return false;
    return true;
}

/* The block size s if node ni is a ConvTranspose this pass rewrites, else 0. */
static int64_t candidate(const pr_graph *g, int ni) {
    const pr_node *n = &g->nodes[ni];
    if (n->op != PR_OP_ConvTranspose || n->domain[0] || n->n_inputs < 2 || n->n_inputs > 3 ||
        n->n_outputs != 1)
        return 0;
    int x = n->inputs[0], w = n->inputs[1], b = pr_node_in(n, 2), y = n->outputs[0];
    if (!pr_is_f32(g, x) || !pr_is_f32(g, y) || g->tensors[x].rank != 4 || !pr_is_init(g, w))
        return 0;
    const pr_tensor *W = &g->tensors[w];
    if (W->dtype != PRECIS_FLOAT32 || W->rank != 4) return 0;
    int64_t s = W->dims[2];
    if (s < 2 || s > 8 || W->dims[3] != s || W->dims[0] < 1 || W->dims[1] < 1) return 0;
    if (b >= 0 && (!pr_is_init(g, b) || g->tensors[b].dtype != PRECIS_FLOAT32 ||
                   pr_numel(g->tensors[b].rank, g->tensors[b].dims) != W->dims[1]))
        return 0;
    if (pr_attr_int(n, "group", 1) != 1 || strcmp(pr_attr_str(n, "auto_pad", "NOTSET"), "NOTSET"))
        return 0;
    const int64_t *v;
    if (pr_attr_ints(n, "output_shape", &v) >= 0) return 0;
    int nk = pr_attr_ints(n, "kernel_shape", &v);
    if (nk >= 0 && (nk != 2 || v[0] != s || v[1] != s)) return 0;
    if (!ints_all(n, "strides", s, 2) || pr_attr_ints(n, "strides", &v) < 0) return 0;
    if (!ints_all(n, "dilations", 1, 2) || !ints_all(n, "pads", 0, 4) ||
        !ints_all(n, "output_padding", 0, 2))
        return 0;
    if (pr_dim_known(g->tensors[x].dims[1]) && g->tensors[x].dims[1] != W->dims[0]) return 0;
    return s;
}

/* Single-input elementwise ops (the other inputs, if any, constant scalars). */
static bool unary_op(const pr_graph *g, const pr_node *n) {
    if (n->domain[0] || n->n_outputs != 1) return false;
    switch (n->op) {
    case PR_OP_Relu:
    case PR_OP_LeakyRelu:
    case PR_OP_Sigmoid:
    case PR_OP_HardSigmoid:
    case PR_OP_HardSwish:
    case PR_OP_Tanh:
    case PR_OP_Elu:
    case PR_OP_Selu:
    case PR_OP_Softplus:
    case PR_OP_Softsign:
    case PR_OP_Neg:
    case PR_OP_Abs:
    case PR_OP_Exp:
    case PR_OP_Erf: return n->n_inputs == 1;
    case PR_OP_Clip: {
        float v;
        for (int i = 1; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && !pr_const_scalar(g, n->inputs[i], &v)) return false;
        return n->n_inputs >= 1;
    }
    default: return false;
    }
}

/* Moves DepthToSpace node d (input a [N, s*s*C, H, W], output y) below the
 * single consumer of y when that is elementwise or per channel. Returns
 * whether it moved. */
static precis_status sink(pr_graph *g, pr_uses *u, int d, int64_t s, bool *moved, pr_err *e) {
    *moved = false;
    int a = g->nodes[d].inputs[0], y = g->nodes[d].outputs[0];
    int c = pr_single_consumer(g, u, y);
    if (c < 0) return PRECIS_OK;
    const pr_node *n = &g->nodes[c];
    int z = pr_node_out(n, 0), slot = -1;
    if (z < 0 || !pr_is_f32(g, z)) return PRECIS_OK;
    float *rep = NULL;
    if (unary_op(g, n)) {
        if (n->inputs[0] != y) return PRECIS_OK;
    } else {
        bool add = n->op == PR_OP_Add, sub = n->op == PR_OP_Sub;
        bool mul = n->op == PR_OP_Mul, div = n->op == PR_OP_Div;
        if (n->domain[0] || !(add || sub || mul || div) || n->n_inputs != 2 || n->n_outputs != 1)
            return PRECIS_OK;
        if ((sub || div) && n->inputs[0] != y) return PRECIS_OK;
        int k = pr_other_input(g, c, y);
        float one;
        if (k < 0 || k == y || g->tensors[k].rank > 4) return PRECIS_OK;
        if (pr_const_scalar(g, k, &one)) goto move; /* a scalar stays as it is */
        int64_t C = g->tensors[y].dims[1];
        if (!pr_dim_known(C) || C < 1) return PRECIS_OK;
        float *v = malloc((size_t)C * sizeof *v);
        rep = v ? malloc((size_t)(C * s * s) * sizeof *rep) : NULL;
        if (!rep) {
            free(v);
            return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        }
        if (!pr_const_along_axis(g, k, 4, 1, C, v)) {
            free(v);
            free(rep);
            return PRECIS_OK;
        }
        for (int64_t q = 0; q < s * s; q++) memcpy(rep + q * C, v, (size_t)C * sizeof *v);
        free(v);
        int64_t cd[4] = {1, C * s * s, 1, 1};
        char base[600];
        snprintf(base, sizeof base, "%s/s2d", g->tensors[k].name);
        int kt = pr_graph_add_init_f32(g, base, 4, cd, rep, e);
        free(rep);
        if (kt < 0) return e->status ? e->status : PRECIS_ERR_OOM;
        slot = n->inputs[0] == k ? 0 : 1;
        precis_status st = pr_node_set_input(g, u, c, slot, kt, e);
        if (st) return st;
    }
move:; /* a -> c -> a2 -> d -> z */
    int64_t ad[4];
    memcpy(ad, g->tensors[a].dims, sizeof ad);
    int a2 = pr_graph_new_tensor(g, g->tensors[z].name, "/pre_d2s", PRECIS_FLOAT32, 4, ad, e);
    if (a2 < 0) return e->status ? e->status : PRECIS_ERR_OOM;
    int yslot = g->nodes[c].inputs[0] == y ? 0 : 1;
    precis_status st = pr_node_set_input(g, u, c, yslot, a, e);
    if (!st) st = pr_node_set_output(g, c, 0, a2, e);
    if (!st) st = pr_node_set_input(g, u, d, 0, a2, e);
    if (!st) st = pr_node_set_output(g, d, 0, z, e);
    if (st) return st;
    g->tensors[y].producer = -1; /* y is unused now */
    *moved = true;
    return PRECIS_OK;
}

static precis_status rewrite(pr_graph *g, pr_uses *u, int ni, int64_t s, pr_err *e) {
    const pr_node *n = &g->nodes[ni];
    int x = n->inputs[0], w = n->inputs[1], b = pr_node_in(n, 2), y = n->outputs[0];
    const pr_tensor *W = &g->tensors[w];
    int64_t Cin = W->dims[0], Cout = W->dims[1], S = s * s, Co = S * Cout;
    float *w2 = malloc((size_t)(Co * Cin) * sizeof *w2), *b2 = malloc((size_t)Co * sizeof *b2);
    if (!w2 || !b2) {
        free(w2);
        free(b2);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    const float *wv = W->data, *bv = b >= 0 ? g->tensors[b].data : NULL;
    for (int64_t q = 0; q < S; q++) /* q = i*s + j */
        for (int64_t co = 0; co < Cout; co++) {
            for (int64_t ci = 0; ci < Cin; ci++)
                w2[(q * Cout + co) * Cin + ci] = wv[(ci * Cout + co) * S + q];
            b2[q * Cout + co] = bv ? bv[co] : 0.0f;
        }
    int64_t wd[4] = {Co, Cin, 1, 1}, bd[1] = {Co};
    char base[600];
    snprintf(base, sizeof base, "%s/as_conv1x1", W->name);
    int tw = pr_graph_add_init_f32(g, base, 4, wd, w2, e);
    snprintf(base, sizeof base, "%s/as_conv1x1_bias", g->nodes[ni].name);
    int tb = tw < 0 ? -1 : pr_graph_add_init_f32(g, base, 1, bd, b2, e);
    free(w2);
    free(b2);
    if (tb < 0) return e->status ? e->status : PRECIS_ERR_OOM;
    int64_t md[4] = {g->tensors[x].dims[0], Co, g->tensors[x].dims[2], g->tensors[x].dims[3]};
    int mid = pr_graph_new_tensor(g, g->tensors[y].name, "/pre_d2s", PRECIS_FLOAT32, 4, md, e);
    char dname[600];
    snprintf(dname, sizeof dname, "%s/depth_to_space", g->nodes[ni].name);
    int d = mid < 0 ? -1 : pr_node_new(g, PR_OP_DepthToSpace, 13, dname, 1, 1, e);
    if (d < 0) return e->status ? e->status : PRECIS_ERR_OOM;
    g->nodes[d].req_compute = g->nodes[ni].req_compute; /* the pair keeps ni's requests */
    g->nodes[d].req_output = g->nodes[ni].req_output;
    /* the ConvTranspose becomes the Conv in place (keeping its origins) */
    pr_node_retype(g, ni, PR_OP_Conv, 11);
    pr_node_clear_attrs(g, ni);
    precis_status st = pr_node_set_ints(g, ni, "kernel_shape", (const int64_t[]){1, 1}, 2, e);
    if (!st) st = pr_node_set_input(g, u, ni, 1, tw, e);
    if (!st) st = pr_node_set_input(g, u, ni, 2, tb, e);
    if (!st) st = pr_node_set_output(g, ni, 0, mid, e);
    if (!st) st = pr_node_set_input(g, u, d, 0, mid, e);
    if (!st) st = pr_node_set_output(g, d, 0, y, e);
    if (!st) st = pr_node_set_int(g, d, "blocksize", s, e);
    if (!st) st = pr_node_set_string(g, d, "mode", "DCR", e);
    if (!st) st = pr_node_set_int(g, d, "precis_inserted", 1, e);
    for (bool moved = true; !st && moved;) st = sink(g, u, d, s, &moved, e);
    return st;
}

static precis_status deconv_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    for (int ni = 0, n0 = g->n_nodes; ni < n0 && !st; ni++) {
        int64_t s = candidate(g, ni);
        if (!s) continue;
        st = rewrite(g, &u, ni, s, pc->err);
        pc->changes++;
    }
    pr_uses_free(&u);
    if (!st) st = pr_graph_compact(g, pc->err);
    return st;
}

const pr_pass pr_pass_deconv_s2d = {"deconv_s2d", deconv_run};
