/* Data movement on the GPU: the reshapes (Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity, Dropout, Reorder: a device copy, or nothing when the
 * memory planner gives the output the input's buffer), and the strided
 * copies (Transpose, Slice, Expand, Concat, Split) through the n-ary kernel;
 * Gather. Integer vectors (shape arithmetic) stay on the host. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "ir/infer_tensor.h"

static bool is_reshape(pr_op op) {
    return op == PR_OP_Reshape || op == PR_OP_Flatten || op == PR_OP_Squeeze ||
           op == PR_OP_Unsqueeze || op == PR_OP_Identity || op == PR_OP_Dropout ||
           op == PR_OP_Reorder;
}

static bool move_supports(const pr_graph *g, const pr_node *n) {
    int x = pr_node_in(n, 0);
    if (x < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return false;
    pr_dtype dt = pr_cu_tdt(g, x);
    if (!pr_cu_ldst(dt) || pr_cu_shape_like(g, x)) return false;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && pr_cu_tdt(g, n->outputs[j]) != dt &&
            !(n->op == PR_OP_Dropout && j == 1))
            return false;
    if (n->op == PR_OP_Dropout) return pr_node_out(n, 1) < 0;
    if (is_reshape(n->op)) return n->n_outputs == 1;
    switch (n->op) {
    case PR_OP_Transpose: case PR_OP_Expand: case PR_OP_Split:
        return g->tensors[x].rank <= PR_MAX_RANK;
    case PR_OP_DepthToSpace: {
        const char *mode = pr_attr_str(n, "mode", "DCR");
        return g->tensors[x].rank == 4 && pr_attr_int(n, "blocksize", 0) > 0 &&
               (!strcmp(mode, "DCR") || !strcmp(mode, "CRD"));
    }
    case PR_OP_Concat:
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] < 0 || pr_cu_tdt(g, n->inputs[i]) != dt) return false;
        return true;
    case PR_OP_Slice:
        if (n->opset < 10) return true;
        for (int i = 1; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && !pr_cu_is_init(g, n->inputs[i])) return false;
        return true;
    default:
        return false;
    }
}

static bool move_packs(const pr_graph *g, const pr_node *n, int i) {
    /* parameter inputs (shapes, axes, starts...) are read on the host */
    return i > 0 && n->op != PR_OP_Concat;
}

/* A layout change of a rank-4 tensor whose H * W or C is 1 (a pooled
 * [N, C, 1, 1]) moves no byte. */
static bool same_bytes(const int64_t *d) { return d[2] * d[3] == 1 || d[1] == 1; }

static int move_inplace(const pr_graph *g, const pr_node *n) {
    const pr_tensor *X = &g->tensors[n->inputs[0]], *Y = &g->tensors[n->outputs[0]];
    if (n->op == PR_OP_Reorder && X->layout != Y->layout &&
        !(X->rank == 4 && pr_dim_known(X->dims[1]) && pr_dim_known(X->dims[2]) &&
          pr_dim_known(X->dims[3]) && same_bytes(X->dims)))
        return -1; /* a real transposition */
    return is_reshape(n->op) ? 0 : -1;
}

/* Reorder converts; it is the only move that sees NHWC. */
static bool move_nhwc_ok(const pr_graph *g, const pr_node *n) {
    return n->op == PR_OP_Reorder && move_supports(g, n);
}

static precis_status move_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                  void **out, pr_err *e) {
    *out = NULL;
    return PRECIS_OK;
}

static precis_status copy_view(pr_cuda_exec *x, pr_buf *Y, const pr_buf *X, int rank,
                               const int64_t *dims, const int64_t *xst, int64_t xoff,
                               const int64_t *yst, int64_t yoff, pr_err *e) {
    precis_status st = PRECIS_OK;
    pr_cu_ew w;
    memset(&w, 0, sizeof w);
    int64_t d[PR_MAX_RANK], s[4][PR_MAX_RANK];
    memset(s, 0, sizeof s);
    memcpy(d, dims, sizeof(int64_t) * (size_t)rank);
    memcpy(s[0], yst, sizeof(int64_t) * (size_t)rank);
    memcpy(s[1], xst, sizeof(int64_t) * (size_t)rank);
    for (int i = 0; i < rank; i++)
        if (d[i] == 0) return PRECIS_OK;
    w.op = PR_EW_COPY;
    w.rank = pr_cu_collapse(rank, d, 2, s);
    memcpy(w.dims, d, sizeof d);
    memcpy(w.st, s, sizeof s);
    w.off[0] = yoff;
    w.off[1] = xoff;
    w.p[0] = Y->data;
    w.dt[0] = (int)Y->dtype;
    w.p[1] = X->data;
    w.dt[1] = (int)X->dtype;
    KL_TRY(pr_cu_elementwise(x->stream, &w));
    return PRECIS_OK;
fail:
    return st;
}

static precis_status move_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const pr_node *n = k->node;
    int64_t yst[PR_MAX_RANK], xst[PR_MAX_RANK], s[PR_MAX_RANK];
    int lx = k->g->tensors[n->inputs[0]].layout, ly = k->g->tensors[n->outputs[0]].layout;
    if (n->op == PR_OP_Reorder && lx != ly && X->rank == 4 && !same_bytes(X->dims)) {
        /* walk the output in its memory order, read the input through its strides */
        int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
        int64_t d[4], xs[4], ys[4];
        if (ly == PR_LAYOUT_NHWC) { /* N,C,H,W -> N,H,W,C */
            int64_t dd[4] = {N, H, W, C}, ss[4] = {C * H * W, W, 1, H * W};
            memcpy(d, dd, sizeof d);
            memcpy(xs, ss, sizeof xs);
        } else { /* N,H,W,C -> N,C,H,W */
            int64_t dd[4] = {N, C, H, W}, ss[4] = {H * W * C, 1, W * C, C};
            memcpy(d, dd, sizeof d);
            memcpy(xs, ss, sizeof xs);
        }
        pr_strides(4, d, ys);
        return copy_view(x, Y, X, 4, d, xs, 0, ys, 0, e) ? pr_err_prefix(e, "node '%s'", n->name)
                                                         : PRECIS_OK;
    }
    if (is_reshape(n->op)) {
        if (Y->data != X->data && Y->nbytes)
            CU_TRY(cudaMemcpyAsync(Y->data, X->data, Y->nbytes, cudaMemcpyDeviceToDevice,
                                   (cudaStream_t)x->stream));
        return PRECIS_OK;
    }
    pr_strides(X->rank, X->dims, xst);
    if (n->op == PR_OP_Transpose) {
        const int64_t *perm;
        int np = pr_attr_ints(n, "perm", &perm);
        for (int d = 0; d < Y->rank; d++) s[d] = xst[np == Y->rank ? perm[d] : Y->rank - 1 - d];
        pr_strides(Y->rank, Y->dims, yst);
        return copy_view(x, Y, X, Y->rank, Y->dims, s, 0, yst, 0, e) ? pr_err_prefix(e, "node '%s'", n->name) : PRECIS_OK;
    }
    if (n->op == PR_OP_DepthToSpace) {
        /* Y [N, C', H*b, W*b] is [N, C', H, b, W, b] row-major; read X through it */
        int64_t b = pr_attr_int(n, "blocksize", 1), N = X->dims[0], C = X->dims[1];
        int64_t H = X->dims[2], W = X->dims[3], Cp = C / (b * b), HW = H * W;
        bool crd = !strcmp(pr_attr_str(n, "mode", "DCR"), "CRD");
        int64_t d[6] = {N, Cp, H, b, W, b}, ys6[6];
        int64_t dcr[6] = {C * HW, HW, W, b * Cp * HW, 1, Cp * HW};
        int64_t crd6[6] = {C * HW, b * b * HW, W, b * HW, 1, HW};
        pr_strides(6, d, ys6);
        return copy_view(x, Y, X, 6, d, crd ? crd6 : dcr, 0, ys6, 0, e)
                   ? pr_err_prefix(e, "node '%s'", n->name)
                   : PRECIS_OK;
    }
    if (n->op == PR_OP_Expand) {
        pr_bcast_strides(X, Y->rank, Y->dims, s);
        pr_strides(Y->rank, Y->dims, yst);
        return copy_view(x, Y, X, Y->rank, Y->dims, s, 0, yst, 0, e) ? pr_err_prefix(e, "node '%s'", n->name) : PRECIS_OK;
    }
    if (n->op == PR_OP_Slice) {
        pr_infer ic;
        pr_tinfo tin[8];
        pr_cu_kernel_infer(k, &ic, tin, 8);
        pr_slice_plan sp;
        bool known = false;
        if ((st = pr_slice_plan_make(&ic, &sp, &known))) return st;
        if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "slice parameters not known");
        int64_t off = 0;
        for (int d = 0; d < X->rank; d++) {
            off += sp.start[d] * xst[d];
            s[d] = sp.step[d] * xst[d];
        }
        pr_strides(Y->rank, Y->dims, yst);
        return copy_view(x, Y, X, Y->rank, Y->dims, s, off, yst, 0, e) ? pr_err_prefix(e, "node '%s'", n->name) : PRECIS_OK;
    }
    int axis;
    if (n->op == PR_OP_Concat || n->op == PR_OP_Split) {
        int64_t a = pr_attr_int(n, "axis", n->op == PR_OP_Split ? 0 : 1);
        const pr_buf *ref = n->op == PR_OP_Concat ? Y : X;
        if ((st = pr_kernel_axis(k, a, ref->rank, &axis))) return st;
    }
    if (n->op == PR_OP_Concat) {
        pr_strides(Y->rank, Y->dims, yst);
        int64_t at = 0;
        for (int i = 0; i < k->n_in; i++) {
            const pr_buf *I = k->in[i];
            pr_strides(I->rank, I->dims, s);
            if ((st = copy_view(x, Y, I, I->rank, I->dims, s, 0, yst, at * yst[axis], e)))
                return pr_err_prefix(e, "node '%s'", n->name);
            at += I->dims[axis];
        }
        return PRECIS_OK;
    }
    if (n->op == PR_OP_Split) {
        int64_t at = 0;
        for (int j = 0; j < k->n_out; j++) {
            pr_buf *O = k->out[j];
            if (!O) continue;
            pr_strides(O->rank, O->dims, yst);
            if ((st = copy_view(x, O, X, O->rank, O->dims, xst, at * xst[axis], yst, 0, e)))
                return pr_err_prefix(e, "node '%s'", n->name);
            at += O->dims[axis];
        }
        return PRECIS_OK;
    }
    return pr_kernelf(k, PRECIS_ERR_INTERNAL, "cu.move cannot run %s", n->op_type);
fail:
    pr_err_prefix(e, "node '%s'", n->name);
    return st;
}

static const char *move_describe(void *p) { return "cu.move"; }

const pr_cuda_impl pr_cuda_impl_move = {
    .name = "cu.move",
    .supports = move_supports,
    .nhwc_ok = move_nhwc_ok,
    .packs = move_packs,
    .inplace_input = move_inplace,
    .prepare = move_prepare,
    .run = move_run,
    .describe = move_describe,
};

/* ------------------------------------------------------------------ Gather */

static bool gather_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Gather || n->n_inputs != 2 || n->n_outputs != 1) return false;
    int d = n->inputs[0], i = n->inputs[1], y = n->outputs[0];
    if (d < 0 || i < 0 || y < 0) return false;
    pr_dtype it = pr_cu_tdt(g, i);
    pr_dtype dd = pr_cu_tdt(g, d), yd = pr_cu_tdt(g, y);
    /* float data (any float type out), or any type moved as it is; shape vectors stay */
    bool types = pr_cu_float(dd) ? pr_cu_float(yd) : (pr_cu_ldst(dd) && dd == yd);
    return types && !pr_cu_shape_like(g, d) && (it == PRECIS_INT64 || it == PRECIS_INT32);
}

static precis_status gather_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *D = k->in[0], *I = k->in[1];
    pr_buf *Y = k->out[0];
    int axis;
    if ((st = pr_kernel_axis(k, pr_attr_int(k->node, "axis", 0), D->rank, &axis))) return st;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= D->dims[d];
    for (int d = axis + 1; d < D->rank; d++) inner *= D->dims[d];
    KL_TRY(pr_cu_gather(x->stream, D->data, (int)D->dtype, I->data, (int)I->dtype, Y->data,
                        (int)Y->dtype, outer, D->dims[axis], I->numel, inner));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

static const char *gather_describe(void *p) { return "cu.gather"; }

const pr_cuda_impl pr_cuda_impl_gather = {
    .name = "cu.gather",
    .supports = gather_supports,
    .prepare = move_prepare,
    .run = gather_run,
    .describe = gather_describe,
};
