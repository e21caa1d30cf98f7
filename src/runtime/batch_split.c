/* Batch splitting: the proof that a run may be split per sample (see
 * batch_split.h). */
#include "runtime/batch_split.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec.h"
#include "runtime/tensor.h"

static bool no(pr_split_info *info, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool no(pr_split_info *info, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info->why, sizeof info->why, fmt, ap);
    va_end(ap);
    return false;
}

static bool is_init(const pr_graph *g, int t) { return t >= 0 && (g->tensors[t].flags & PR_T_INIT); }

/* axis normalised against rank; rank if out of range */
static int64_t norm_axis(int64_t a, int rank) {
    if (a < 0) a += rank;
    return a < 0 || a >= rank ? rank : a;
}

/* Ops that read dim 0 as the batch (images, sequences): their batched
 * activations must carry the batch there. */
static bool dim0_op(pr_op op) {
    switch (op) {
    case PR_OP_Conv: case PR_OP_ConvTranspose: case PR_OP_ConvInteger: case PR_OP_QLinearConv:
    case PR_OP_MaxPool: case PR_OP_AveragePool: case PR_OP_GlobalAveragePool:
    case PR_OP_GlobalMaxPool: case PR_OP_LpPool: case PR_OP_GlobalLpPool:
    case PR_OP_BatchNormalization: case PR_OP_InstanceNormalization: case PR_OP_LRN:
    case PR_OP_DepthToSpace: case PR_OP_SpaceToDepth: case PR_OP_FusedConv: case PR_OP_Attention:
    case PR_OP_Reorder: case PR_OP_QConv: case PR_OP_QPool: case PR_OP_Reshape:
        return true;
    default:
        return false;
    }
}

/* Ops that keep samples apart whatever axis holds the batch, when every
 * activation's dims scale with it in one axis (the dims check) — the
 * element-wise ones, moves (Transpose moves the batch axis, the dims check
 * follows it), and dim0_op(). */
static bool per_sample_op(pr_op op) {
    if (dim0_op(op)) return true;
    switch (op) {
    case PR_OP_Add: case PR_OP_Sub: case PR_OP_Mul: case PR_OP_Div: case PR_OP_Pow:
    case PR_OP_Mod: case PR_OP_Sqrt: case PR_OP_Exp: case PR_OP_Log: case PR_OP_Neg:
    case PR_OP_Abs: case PR_OP_Reciprocal: case PR_OP_Floor: case PR_OP_Ceil: case PR_OP_Round:
    case PR_OP_Sign: case PR_OP_Erf: case PR_OP_Sin: case PR_OP_Cos: case PR_OP_Tan:
    case PR_OP_Asin: case PR_OP_Acos: case PR_OP_Atan: case PR_OP_Sinh: case PR_OP_Cosh:
    case PR_OP_Asinh: case PR_OP_Acosh: case PR_OP_Atanh: case PR_OP_Tanh: case PR_OP_Sigmoid:
    case PR_OP_Relu: case PR_OP_LeakyRelu: case PR_OP_PRelu: case PR_OP_Elu: case PR_OP_Selu:
    case PR_OP_Celu: case PR_OP_Softplus: case PR_OP_Softsign: case PR_OP_ThresholdedRelu:
    case PR_OP_Shrink: case PR_OP_Mish: case PR_OP_Clip: case PR_OP_HardSigmoid:
    case PR_OP_HardSwish: case PR_OP_Gelu: case PR_OP_Min: case PR_OP_Max: case PR_OP_Sum:
    case PR_OP_Mean: case PR_OP_Equal: case PR_OP_Less: case PR_OP_LessOrEqual:
    case PR_OP_Greater: case PR_OP_GreaterOrEqual: case PR_OP_Not: case PR_OP_And: case PR_OP_Or:
    case PR_OP_Xor: case PR_OP_IsNaN: case PR_OP_IsInf: case PR_OP_BitShift: case PR_OP_Where:
    case PR_OP_Cast: case PR_OP_CastLike: case PR_OP_Identity: case PR_OP_Dropout:
    case PR_OP_Flatten: case PR_OP_Squeeze: case PR_OP_Unsqueeze: case PR_OP_Transpose:
    case PR_OP_Concat: case PR_OP_Split: case PR_OP_Slice: case PR_OP_Expand: case PR_OP_Tile:
    case PR_OP_Pad: case PR_OP_Resize: case PR_OP_Upsample: case PR_OP_QBinary:
        return true;
    default:
        return false;
    }
}

/* The reduction axes of a Reduce* node: attribute, or input 1 (opset 18);
 * false when they are all axes (absent) or not known. */
static bool reduce_axes(const pr_graph *g, const pr_node *n, const int64_t **ax, int *nax) {
    *nax = pr_attr_ints(n, "axes", ax);
    if (*nax > 0) return true;
    int t = n->n_inputs > 1 ? n->inputs[1] : -1;
    if (!is_init(g, t) || g->tensors[t].dtype != PRECIS_INT64 || !g->tensors[t].data) return false;
    *ax = g->tensors[t].data;
    *nax = (int)pr_numel(g->tensors[t].rank, g->tensors[t].dims);
    return *nax > 0;
}

/* Ops with an axis or other attribute that may mix samples: false with why.
 * rank0, ba0: rank and batch axis of the first batched input; ba[i]: each
 * input's batch axis (-1: not batched). */
static bool op_ok(const pr_graph *g, const pr_node *n, int rank0, int ba0, const int *ba,
                  pr_split_info *info) {
    const int64_t *v;
    int nv;
    switch (n->op) {
    case PR_OP_Softmax: case PR_OP_LogSoftmax: case PR_OP_Hardmax:
    case PR_OP_LayerNormalization: case PR_OP_LpNormalization: case PR_OP_ArgMax:
    case PR_OP_ArgMin: case PR_OP_TopK: case PR_OP_GatherElements: {
        int64_t def = 0; /* ArgMax, ArgMin, GatherElements */
        if (n->op == PR_OP_Softmax || n->op == PR_OP_LogSoftmax || n->op == PR_OP_Hardmax)
            def = n->opset >= 13 ? -1 : 1;
        else if (n->op == PR_OP_LayerNormalization || n->op == PR_OP_LpNormalization ||
                 n->op == PR_OP_TopK)
            def = -1;
        int64_t ax = norm_axis(pr_attr_int(n, "axis", def), rank0);
        /* LayerNorm normalises the axes from `axis` on, old Softmax the
         * flattened ones from `axis` on */
        bool from = n->op == PR_OP_LayerNormalization ||
                    (n->opset < 13 && (n->op == PR_OP_Softmax || n->op == PR_OP_LogSoftmax ||
                                       n->op == PR_OP_Hardmax));
        if (from ? ax <= ba0 : ax == ba0)
            return no(info, "node '%s' (%s) works along the batch axis", n->name, n->op_type);
        return true;
    }
    case PR_OP_Gather:
        if (ba[0] >= 0 && norm_axis(pr_attr_int(n, "axis", 0), rank0) == ba[0])
            return no(info, "node '%s' (Gather) gathers along the batch axis", n->name);
        return true;
    case PR_OP_CumSum: {
        int t = n->n_inputs > 1 ? n->inputs[1] : -1;
        if (!is_init(g, t) || pr_numel(g->tensors[t].rank, g->tensors[t].dims) != 1 ||
            norm_axis((int64_t)pr_load_f64(g->tensors[t].data, g->tensors[t].dtype, 0), rank0) ==
                ba0)
            return no(info, "node '%s' (CumSum) sums along the batch axis", n->name);
        return true;
    }
    case PR_OP_ReduceMean: case PR_OP_ReduceSum: case PR_OP_ReduceMax: case PR_OP_ReduceMin:
    case PR_OP_ReduceProd: case PR_OP_ReduceL1: case PR_OP_ReduceL2: case PR_OP_ReduceLogSum:
    case PR_OP_ReduceLogSumExp: case PR_OP_ReduceSumSquare:
        if (!reduce_axes(g, n, &v, &nv))
            return no(info, "node '%s' (%s) reduces over every axis", n->name, n->op_type);
        for (int i = 0; i < nv; i++)
            if (norm_axis(v[i], rank0) == ba0)
                return no(info, "node '%s' (%s) reduces over the batch axis", n->name,
                          n->op_type);
        return true;
    case PR_OP_QuantizeLinear: case PR_OP_DequantizeLinear: {
        int t = n->n_inputs > 1 ? n->inputs[1] : -1;
        if (t >= 0 && pr_numel(g->tensors[t].rank, g->tensors[t].dims) > 1 &&
            norm_axis(pr_attr_int(n, "axis", 1), rank0) == ba0)
            return no(info, "node '%s' (%s) scales per batch item", n->name, n->op_type);
        return true;
    }
    case PR_OP_Gemm: case PR_OP_FusedMatMul: case PR_OP_QMatMul: case PR_OP_MatMul:
    case PR_OP_MatMulInteger: case PR_OP_QLinearMatMul: {
        /* A [.., M, K] may carry the batch in M or a batch dim, B [.., K, N]
         * only in a batch dim; a transposed operand must not carry it */
        int b = n->op == PR_OP_QLinearMatMul ? 3 : 1;
        if ((ba[0] >= 0 && pr_attr_int(n, "transA", 0) != 0) ||
            (ba[b] >= 0 && pr_attr_int(n, "transB", 0) != 0))
            return no(info, "node '%s' (%s) transposes a batched operand", n->name, n->op_type);
        const pr_tensor *A = pr_node_tin(g, n, 0), *B = pr_node_tin(g, n, b);
        if ((ba[0] >= 0 && A && ba[0] > A->rank - 2) || (ba[b] >= 0 && B && ba[b] > B->rank - 3))
            return no(info, "node '%s' (%s) multiplies along the batch axis", n->name,
                      n->op_type);
        return true;
    }
    default:
        if (dim0_op(n->op)) {
            for (int i = 0; i < n->n_inputs; i++)
                if (ba[i] > 0)
                    return no(info, "node '%s' (%s) reads the batch in dim %d, not 0", n->name,
                              n->op_type, ba[i]);
            return true;
        }
        if (per_sample_op(n->op)) return true;
        return no(info, "node '%s' (%s) is not known to keep samples apart", n->name, n->op_type);
    }
}

/* An activation at batch N (a) and at batch 1 (b): the one axis holding N
 * and 1, every other dim equal and known; -1 when there is no such axis. */
static int batch_axis(const pr_tinfo *a, const pr_tinfo *b, int64_t n) {
    if (a->rank < 1 || a->rank != b->rank) return -1;
    int ax = -1;
    for (int d = 0; d < a->rank; d++) {
        if (a->dims[d] < 0 || b->dims[d] < 0) return -1;
        if (a->dims[d] == b->dims[d]) continue;
        if (ax >= 0 || a->dims[d] != n || b->dims[d] != 1) return -1;
        ax = d;
    }
    return ax;
}

/* Reshape shape constants folded at batch n (see batch_split.h): a copy
 * with [0] = 1 for the workers, set as t1[t]'s value for the check. Only
 * constants read by nothing but Reshapes' shape inputs. */
static bool find_patches(const precis_engine *e, int64_t n, pr_tinfo *t1, pr_split_info *info) {
    const pr_graph *g = e->g;
    for (int s = 0; s < e->n_steps; s++) {
        const pr_node *nd = &g->nodes[e->steps[s].node];
        if (nd->op != PR_OP_Reshape || nd->n_inputs < 2) continue;
        int t = nd->inputs[1];
        const pr_tensor *x = &g->tensors[t];
        if (!is_init(g, t) || x->dtype != PRECIS_INT64 || x->rank != 1 || x->dims[0] < 1 ||
            !x->data || ((const int64_t *)x->data)[0] != n)
            continue;
        bool only_shape = true, seen = false;
        for (int s2 = 0; s2 < e->n_steps; s2++) {
            const pr_node *o = &g->nodes[e->steps[s2].node];
            for (int i = 0; i < o->n_inputs; i++)
                if (o->inputs[i] == t) only_shape &= o->op == PR_OP_Reshape && i == 1;
        }
        for (int i = 0; i < info->n_patches; i++) seen |= info->patch_tensor[i] == t;
        if (!only_shape || seen) continue;
        int k = info->n_patches;
        int *nt = realloc(info->patch_tensor, (size_t)(k + 1) * sizeof *nt);
        if (nt) info->patch_tensor = nt;
        int64_t **nv = realloc(info->patch_value, (size_t)(k + 1) * sizeof *nv);
        if (nv) info->patch_value = nv;
        int64_t *v = nt && nv ? malloc((size_t)x->dims[0] * sizeof *v) : NULL;
        if (!v) return no(info, "out of memory");
        memcpy(v, x->data, (size_t)x->dims[0] * sizeof *v);
        v[0] = 1;
        info->patch_tensor[k] = t;
        info->patch_value[k] = v;
        info->n_patches = k + 1;
        t1[t].value = v;
    }
    return true;
}

/* Inputs of per-sample ops that a shape value may feed: the target shape,
 * slice bounds, pads, axes, sizes, repeats, split sizes, k. */
static bool shape_input(pr_op op, int i) {
    switch (op) {
    case PR_OP_Reshape: case PR_OP_Expand: case PR_OP_Tile: case PR_OP_Unsqueeze:
    case PR_OP_Squeeze: case PR_OP_Split: case PR_OP_TopK: case PR_OP_Upsample:
        return i == 1;
    case PR_OP_Slice: return i >= 1 && i <= 4;
    case PR_OP_Resize: case PR_OP_Pad: return i >= 1 && i <= 3;
    default: return false;
    }
}

#define META_MAX (1 << 20) /* elements of a value computed from shapes and constants */

/* A value computed from shapes that is the same at N and at 1 (e.g. anchors
 * or position ids made from H, W, or the sequence length): a constant. */
static bool invariant(const pr_buf *a, const pr_buf *b) {
    return a->dtype == b->dtype && a->rank == b->rank &&
           !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int64_t)) &&
           a->nbytes == b->nbytes && (!a->nbytes || !memcmp(a->data, b->data, a->nbytes));
}

/* The value of a Shape/Size of an activation, or of a meta op on shape
 * values and constants, at N (vn) and at 1 (v1); its tinfos. */
static bool meta_step(const pr_graph *g, const pr_node *nd, pr_tinfo *tn, pr_tinfo *t1,
                      bool *meta, pr_buf *vn, pr_buf *v1, pr_split_info *info) {
    pr_err err = {0};
    int t0 = nd->n_inputs > 0 ? nd->inputs[0] : -1;
    if (nd->n_outputs != 1 || nd->outputs[0] < 0) return no(info, "node '%s' (%s): outputs", nd->name, nd->op_type);
    int to = nd->outputs[0];
    if ((nd->op == PR_OP_Shape || nd->op == PR_OP_Size) && t0 >= 0 && !is_init(g, t0) &&
        !meta[t0]) {
        for (int v = 0; v < 2; v++) {
            const pr_tinfo *x = v ? &t1[t0] : &tn[t0];
            pr_buf *b = v ? &v1[to] : &vn[to];
            int64_t r = x->rank, s0 = 0, e0 = r;
            if (nd->op == PR_OP_Shape && nd->opset >= 15) {
                s0 = pr_attr_int(nd, "start", 0);
                e0 = pr_attr_int(nd, "end", r);
            }
            if (s0 < 0) s0 += r;
            if (e0 < 0) e0 += r;
            s0 = s0 < 0 ? 0 : s0 > r ? r : s0;
            e0 = e0 < 0 ? 0 : e0 > r ? r : e0;
            int64_t len = e0 > s0 ? e0 - s0 : 0;
            if (pr_buf_alloc(b, PRECIS_INT64, nd->op == PR_OP_Shape ? 1 : 0, &len, "shape", &err))
                return no(info, "out of memory");
            int64_t *p = b->data;
            if (nd->op == PR_OP_Size)
                p[0] = pr_numel(x->rank, x->dims);
            else
                for (int64_t d = 0; d < len; d++) p[d] = x->dims[s0 + d];
        }
    } else {
        if (!pr_exec_supported_op(nd))
            return no(info, "node '%s' (%s) reads no activation", nd->name, nd->op_type);
        const pr_buf *inN[64], *in1[64];
        pr_buf views[2][64];
        for (int i = 0; i < nd->n_inputs; i++) {
            int t = nd->inputs[i];
            inN[i] = in1[i] = NULL;
            if (t < 0) continue;
            if (meta[t]) {
                inN[i] = &vn[t];
                in1[i] = &v1[t];
                continue;
            }
            if (!is_init(g, t))
                return no(info, "node '%s' (%s) mixes shape values and activations", nd->name,
                          nd->op_type);
            const pr_tensor *x = &g->tensors[t];
            pr_buf *b = &views[0][i];
            *b = (pr_buf){x->dtype, x->rank, {0}, pr_numel(x->rank, x->dims), x->data, x->nbytes};
            memcpy(b->dims, x->dims, sizeof b->dims);
            views[1][i] = *b;
            inN[i] = &views[0][i];
            in1[i] = &views[1][i];
        }
        if (pr_exec_node((pr_graph *)g, nd, inN, &vn[to], 1, &err) ||
            pr_exec_node((pr_graph *)g, nd, in1, &v1[to], 1, &err))
            return no(info, "node '%s' (%s) on shape values: %s", nd->name, nd->op_type, err.msg);
    }
    if (vn[to].numel > META_MAX || v1[to].numel > META_MAX)
        return no(info, "node '%s' (%s) makes a large tensor from shapes", nd->name, nd->op_type);
    meta[to] = true;
    pr_tinfo_from_buf(&tn[to], &vn[to]);
    pr_tinfo_from_buf(&t1[to], &v1[to]);
    return true;
}

bool pr_batch_split_check(const precis_engine *e, const pr_buf *const *in, pr_split_info *info) {
    memset(info, 0, sizeof *info);
    const pr_graph *g = e->g;
    if (g->n_inputs < 1) return no(info, "no inputs");
    int64_t n = -1;
    for (int k = 0; k < g->n_inputs; k++) {
        if (in[k]->rank < 1) return no(info, "input '%s' has no batch axis", g->tensors[g->inputs[k]].name);
        if (n < 0) n = in[k]->dims[0];
        if (in[k]->dims[0] != n)
            return no(info, "inputs differ in dim 0");
    }
    if (n < 2) return no(info, "%s", ""); /* nothing to split: no note */
    info->n = n;
    size_t nt = (size_t)g->n_tensors + 1;
    pr_tinfo *tn = calloc(nt, sizeof *tn), *t1 = calloc(nt, sizeof *t1);
    bool ok = tn && t1;
    if (!ok) no(info, "out of memory");
    for (int t = 0; ok && t < g->n_tensors; t++) {
        tn[t].rank = t1[t].rank = -1;
        if (!is_init(g, t)) continue;
        const pr_tensor *x = &g->tensors[t];
        tn[t].dtype = x->dtype;
        tn[t].rank = x->rank;
        memcpy(tn[t].dims, x->dims, sizeof tn[t].dims);
        tn[t].value = x->data;
        t1[t] = tn[t];
    }
    for (int k = 0; ok && k < g->n_inputs; k++) {
        int t = g->inputs[k];
        pr_tinfo_from_buf(&tn[t], in[k]);
        tn[t].value = NULL; /* values of activations are not used */
        t1[t] = tn[t];
        t1[t].dims[0] = 1;
    }
    if (ok) ok = find_patches(e, n, t1, info);
    /* values computed from shapes (Shape/Size of an activation) and
     * constants: computed at N and at 1 with the ref kernels; they may feed
     * shape inputs of per-sample steps, and any input when equal at N and 1 */
    bool *meta = calloc(nt, sizeof *meta);
    pr_buf *vn = calloc(nt, sizeof *vn), *v1 = calloc(nt, sizeof *v1);
    if (ok && (!meta || !vn || !v1)) ok = no(info, "out of memory");
    pr_err err = {0};
    for (int s = 0; ok && s < e->n_steps; s++) {
        const pr_node *nd = &g->nodes[e->steps[s].node];
        pr_tinfo inn[64], in1[64], outn[64], out1[64];
        if (nd->n_inputs > 64 || nd->n_outputs > 64) {
            ok = no(info, "node '%s' has too many inputs", nd->name);
            break;
        }
        int rank0 = -1, ba0 = -1, ba[64];
        for (int i = 0; i < nd->n_inputs; i++) {
            int t = nd->inputs[i];
            ba[i] = -1;
            if (t < 0) {
                inn[i] = in1[i] = (pr_tinfo){.dtype = PRECIS_UNDEFINED, .rank = -1};
                continue;
            }
            inn[i] = tn[t];
            in1[i] = t1[t];
            if (is_init(g, t)) continue;
            if (meta[t]) continue;
            if ((ba[i] = batch_axis(&tn[t], &t1[t], n)) < 0) {
                ok = no(info, "tensor '%s' (input of '%s') does not carry the batch in one axis",
                        g->tensors[t].name, nd->name);
                break;
            }
            if (rank0 < 0) rank0 = tn[t].rank, ba0 = ba[i];
        }
        if (!ok) break;
        if (rank0 < 0 || nd->op == PR_OP_Shape || nd->op == PR_OP_Size) {
            /* a shape value: from shape values and constants only, or the
             * dims of an activation */
            ok = meta_step(g, nd, tn, t1, meta, vn, v1, info);
            continue;
        }
        for (int i = 0; i < nd->n_inputs && ok; i++) {
            int t = nd->inputs[i];
            if (t >= 0 && meta[t] && !shape_input(nd->op, i) && !invariant(&vn[t], &v1[t]))
                ok = no(info, "node '%s' (%s) uses a value computed from the batch size as data",
                        nd->name, nd->op_type);
        }
        if (!ok || !(ok = op_ok(g, nd, rank0, ba0, ba, info))) break;
        if (pr_infer_step_outputs(g, nd, inn, outn, &err) ||
            pr_infer_step_outputs(g, nd, in1, out1, &err)) {
            ok = no(info, "node '%s' (%s) at batch 1: %s", nd->name, nd->op_type, err.msg);
            break;
        }
        for (int j = 0; j < nd->n_outputs; j++) {
            int t = nd->outputs[j];
            if (t < 0) continue;
            int bo = batch_axis(&outn[j], &out1[j], n);
            if (bo < 0 || (bo > 0 && dim0_op(nd->op))) {
                ok = no(info, "output '%s' of '%s' (%s) does not carry the batch in %s",
                        g->tensors[t].name, nd->name, nd->op_type, bo < 0 ? "one axis" : "dim 0");
                break;
            }
            tn[t] = outn[j];
            t1[t] = out1[j];
            tn[t].value = t1[t].value = NULL;
        }
    }
    for (int k = 0; ok && k < g->n_outputs; k++)
        if (meta[g->outputs[k]])
            ok = no(info, "output '%s' is a shape value", g->tensors[g->outputs[k]].name);
    for (size_t t = 0; vn && v1 && t < nt; t++) {
        pr_buf_free(&vn[t]);
        pr_buf_free(&v1[t]);
    }
    free(vn);
    free(v1);
    free(meta);
    if (ok) {
        info->n_outputs = g->n_outputs;
        size_t no_ = (size_t)(g->n_outputs ? g->n_outputs : 1);
        info->out_dtype = malloc(no_ * sizeof *info->out_dtype);
        info->out_rank = malloc(no_ * sizeof *info->out_rank);
        info->out_dims = malloc(no_ * sizeof *info->out_dims);
        if (!info->out_dtype || !info->out_rank || !info->out_dims) ok = no(info, "out of memory");
        for (int k = 0; ok && k < g->n_outputs; k++) {
            int t = g->outputs[k];
            if (is_init(g, t) || g->tensors[t].producer < 0 || batch_axis(&tn[t], &t1[t], n) != 0) {
                ok = no(info, "output '%s' does not carry the batch", g->tensors[t].name);
                break;
            }
            info->out_dtype[k] = tn[t].dtype;
            info->out_rank[k] = tn[t].rank;
            memcpy(info->out_dims[k], tn[t].dims, sizeof info->out_dims[k]);
        }
    }
    free(tn);
    free(t1);
    if (!ok) pr_split_info_free(info);
    return ok;
}

void pr_split_info_free(pr_split_info *info) {
    for (int i = 0; i < info->n_patches; i++) free(info->patch_value[i]);
    free(info->patch_tensor);
    free(info->patch_value);
    info->patch_tensor = NULL;
    info->patch_value = NULL;
    info->n_patches = 0;
    free(info->out_dtype);
    free(info->out_rank);
    free(info->out_dims);
    info->out_dtype = NULL;
    info->out_rank = NULL;
    info->out_dims = NULL;
    info->n_outputs = 0;
}
