/* ONNX export, node by node: precis-internal ops written as standard ONNX,
 * ops newer than the exported opset decomposed, nodes imported at an older
 * opset rewritten where the op's definition changed since.
 *
 * The exported default-domain opset E is max(13, the model's); a node's
 * `opset` field says which definition its attributes follow. Rewrites:
 *   Squeeze / Unsqueeze / Split (< 13)     axes / split attribute -> input
 *   ReduceSum (< 13), other Reduce* (< 18 when E >= 18)
 *                                          axes attribute -> input (and back
 *                                          when a node is newer than E)
 *   Split (E >= 18, no split input)        num_outputs = number of outputs
 *   Softmax / LogSoftmax / Hardmax (< 13)  the op on the 2-D coercion at
 *                                          `axis`: unchanged when axis is the
 *                                          last dim, else Flatten(axis) -> op
 *                                          (axis 1) -> Reshape(Shape(X))
 *   Pad (< 11), Clip (< 11)                pads/value, min/max -> inputs
 *   Slice (< 10), TopK (< 10), Reshape (< 5)  attributes -> inputs
 *   Upsample (any), Resize (10)            Resize-13 with asymmetric
 *                                          coordinates, nearest_mode floor
 *                                          (upsampling) / ceil (downsampling)
 *   Resize (11, 12) tf_half_pixel_for_nn   half_pixel with the matching
 *                                          nearest_mode (floor -> round_prefer_
 *                                          ceil, round_prefer_floor -> ceil)
 *   BatchNormalization                     spatial / is_test / consumed_inputs
 *                                          dropped, training outputs dropped
 *                                          (refused when used)
 *   Dropout                                Identity (refused when the mask is used)
 *   Scatter                                ScatterElements
 *   Concat (< 4)                           explicit axis 1
 *   any (< 7)                              consumed_inputs / is_test /
 *                                          broadcast dropped (legacy broadcast
 *                                          along `axis` refused)
 * Fused ops as the standard ops they stand for: FusedConv / FusedMatMul ->
 * Conv / Gemm / MatMul + epilogue ops, Attention -> MatMul, Mul, Add,
 * Softmax, MatMul (a Transpose for K unless k_transposed).
 * Decompositions when E lacks the op: Gelu (20) -> erf or tanh form,
 * LayerNormalization (17) -> ReduceMean/Sub/Mul/ReduceMean/Add/Sqrt/Div
 * (float16/bfloat16 inputs normalized in float32, as stash_type 1), then
 * Mul scale, Add bias; HardSwish (14) -> x * HardSigmoid(1/6, 1/2); Mish (18)
 * -> x * Tanh(Softplus(x)). The exported opset is never raised: a file that
 * declares max(13, the model's opset) keeps every other node's definition
 * (but a graph with float8 tensors, an fp8 QDQ model, is written at 19 at
 * least: the first opset with float8 QuantizeLinear / DequantizeLinear).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_export_internal.h"

#define T(t) pr_ex_tensor(x, (t))
#define MAX_IN 8

static pr_dtype dtype_of(const pr_ex *x, int t) {
    if (t < 0 || x->g->tensors[t].dtype == PRECIS_UNDEFINED) return PRECIS_FLOAT32;
    return x->g->tensors[t].dtype;
}

static int rank_of(const pr_ex *x, int t) { return t < 0 ? -1 : x->g->tensors[t].rank; }

static precis_status refuse(pr_ex *x, const pr_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static precis_status refuse(pr_ex *x, const pr_node *n, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pr_errf(x->e, PRECIS_ERR_UNSUPPORTED, "cannot export node '%s' (%s%s%s, opset %lld): %s",
                   n->name, n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type,
                   (long long)n->opset, msg);
}

/* Is output i of n read by a node or listed as a graph output? */
static bool out_used(const pr_ex *x, const pr_node *n, int i) {
    int t = pr_node_out(n, i);
    return t >= 0 && x->uses[t] > 0;
}

/* The node's inputs' names into ins (room for MAX_IN); their count. */
static int node_ins(pr_ex *x, const pr_node *n, const char **ins) {
    int k = n->n_inputs < MAX_IN ? n->n_inputs : MAX_IN;
    for (int i = 0; i < MAX_IN; i++) ins[i] = i < k ? T(n->inputs[i]) : NULL;
    return k;
}

/* "<node>/<what>" constant base names. */
static const char *cbase(const pr_node *n, const char *what, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", n->name, what);
    return buf;
}

/* Copy with the op's skip list plus, before opset 7, the legacy attributes. */
static precis_status copy_skip(pr_ex *x, const pr_node *n, const char *op, const char *const *ins,
                               int n_in, int n_out, const char *const *skip,
                               Onnx__NodeProto **out) {
    const char *all[24];
    int k = 0;
    for (; skip && skip[k] && k < 16; k++) all[k] = skip[k];
    if (n->opset < 7) {
        all[k++] = "consumed_inputs";
        all[k++] = "is_test";
        all[k++] = "broadcast";
    }
    all[k] = NULL;
    return pr_ex_copy(x, n, op, ins, n_in, n_out, all, out);
}

/* ----------------------------------------------------------- activations */

static const char *gelu(pr_ex *x, const char *c, bool tanh_form, const char *base, pr_dtype dt) {
    Onnx__NodeProto *p = NULL;
    if (x->opset >= 20) {
        const char *y = pr_ex_op1(x, "Gelu", base, c, &p);
        if (tanh_form) pr_ex_attr_str(x, p, "approximate", "tanh");
        return y;
    }
    const char *u;
    if (!tanh_form) {
        u = pr_ex_op2(x, "Mul", base, c, pr_ex_scalar(x, dt, 0.70710678118654752440));
        u = pr_ex_op1(x, "Erf", base, u, NULL);
    } else {
        const char *x2 = pr_ex_op2(x, "Mul", base, c, c);
        const char *x3 = pr_ex_op2(x, "Mul", base, x2, c);
        const char *k = pr_ex_op2(x, "Mul", base, x3, pr_ex_scalar(x, dt, 0.044715));
        u = pr_ex_op2(x, "Add", base, c, k);
        u = pr_ex_op2(x, "Mul", base, u, pr_ex_scalar(x, dt, 0.79788456080286535588));
        u = pr_ex_op1(x, "Tanh", base, u, NULL);
    }
    u = pr_ex_op2(x, "Add", base, u, pr_ex_scalar(x, dt, 1.0));
    u = pr_ex_op2(x, "Mul", base, c, u);
    return pr_ex_op2(x, "Mul", base, u, pr_ex_scalar(x, dt, 0.5));
}

void pr_ex_act(pr_ex *x, const pr_act *a, const char *base, pr_dtype dt, const char **cur) {
    const char *c = *cur, *s;
    Onnx__NodeProto *p = NULL;
    switch (a->kind) {
    case PR_ACT_RELU: c = pr_ex_op1(x, "Relu", base, c, NULL); break;
    case PR_ACT_LEAKY_RELU:
        c = pr_ex_op1(x, "LeakyRelu", base, c, &p);
        pr_ex_attr_float(x, p, "alpha", a->alpha);
        break;
    case PR_ACT_CLIP: {
        const char *in[3] = {c, pr_ex_scalar(x, dt, a->alpha), pr_ex_scalar(x, dt, a->beta)};
        c = pr_ex_opn(x, "Clip", base, 3, in, NULL);
        break;
    }
    case PR_ACT_SIGMOID: c = pr_ex_op1(x, "Sigmoid", base, c, NULL); break;
    case PR_ACT_TANH: c = pr_ex_op1(x, "Tanh", base, c, NULL); break;
    case PR_ACT_HARD_SIGMOID:
        c = pr_ex_op1(x, "HardSigmoid", base, c, &p);
        pr_ex_attr_float(x, p, "alpha", a->alpha);
        pr_ex_attr_float(x, p, "beta", a->beta);
        break;
    case PR_ACT_HARD_SWISH:
        if (x->opset >= 14) {
            c = pr_ex_op1(x, "HardSwish", base, c, NULL);
        } else {
            s = pr_ex_op1(x, "HardSigmoid", base, c, &p);
            pr_ex_attr_float(x, p, "alpha", 1.0f / 6.0f);
            pr_ex_attr_float(x, p, "beta", 0.5f);
            c = pr_ex_op2(x, "Mul", base, c, s);
        }
        break;
    case PR_ACT_GELU: c = gelu(x, c, false, base, dt); break;
    case PR_ACT_GELU_TANH: c = gelu(x, c, true, base, dt); break;
    case PR_ACT_SWISH:
        s = pr_ex_op1(x, "Sigmoid", base, c, NULL);
        c = pr_ex_op2(x, "Mul", base, c, s);
        break;
    case PR_ACT_AFFINE:
        if (a->alpha != 1.0f) c = pr_ex_op2(x, "Mul", base, c, pr_ex_scalar(x, dt, a->alpha));
        if (a->beta != 0.0f) c = pr_ex_op2(x, "Add", base, c, pr_ex_scalar(x, dt, a->beta));
        break;
    default: break;
    }
    *cur = c;
}

static precis_status get_acts(pr_ex *x, const pr_node *n, pr_act *a1, pr_act *a2) {
    if (!pr_act_from_node(n, "act", a1))
        return refuse(x, n, "unknown activation '%s'", pr_attr_str(n, "act", ""));
    if (!pr_act_from_node(n, "act2", a2))
        return refuse(x, n, "unknown activation '%s'", pr_attr_str(n, "act2", ""));
    return PRECIS_OK;
}

/* --------------------------------------------------------- fused family */

static precis_status ex_fused_conv(pr_ex *x, const pr_node *n) {
    static const char *const conv_attrs[] = {"auto_pad",     "dilations", "group",
                                             "kernel_shape", "pads",      "strides"};
    int y = pr_node_out(n, 0);
    if (y < 0 || pr_node_in(n, 0) < 0 || pr_node_in(n, 1) < 0)
        return refuse(x, n, "needs inputs X and W and an output");
    pr_act a1, a2;
    precis_status st = get_acts(x, n, &a1, &a2);
    if (st) return st;
    pr_dtype dt = dtype_of(x, y);
    const char *ins[3] = {T(n->inputs[0]), T(n->inputs[1]), T(pr_node_in(n, 2))};
    const char *cur = pr_ex_fresh(x, n->name, "Conv");
    Onnx__NodeProto *p = pr_ex_node(x, "Conv", "", n->name, true, 3, ins, 1, &cur);
    for (int k = 0; p && k < n->n_attrs; k++) {
        const pr_attr *a = &n->attrs[k];
        for (size_t j = 0; a->name && j < sizeof conv_attrs / sizeof *conv_attrs; j++)
            if (!strcmp(a->name, conv_attrs[j]) && (st = pr_ex_attr_copy(x, p, n, a))) return st;
    }
    pr_ex_act(x, &a1, n->name, dt, &cur);
    int z = pr_node_in(n, 3);
    if (z >= 0) cur = pr_ex_op2(x, "Add", n->name, cur, T(z));
    pr_ex_act(x, &a2, n->name, dt, &cur);
    pr_ex_finish(x, cur, T(y), n->name);
    return pr_ex_status(x, n);
}

/* Can Gemm's C take `bias` for output y ([M, N])? */
static bool gemm_bias_ok(const pr_ex *x, int bias, int y) {
    if (bias < 0) return true;
    const pr_tensor *b = &x->g->tensors[bias], *Y = &x->g->tensors[y];
    int64_t m = Y->dims[0], nn = Y->dims[1];
    bool n_ok =
        b->rank >= 1 && (b->dims[b->rank - 1] == 1 ||
                         (b->dims[b->rank - 1] != PR_DIM_UNKNOWN && b->dims[b->rank - 1] == nn));
    if (b->rank == 0) return true;
    if (b->rank == 1) return n_ok;
    if (b->rank == 2) return n_ok && (b->dims[0] == 1 || (m != PR_DIM_UNKNOWN && b->dims[0] == m));
    return false;
}

static precis_status ex_fused_matmul(pr_ex *x, const pr_node *n) {
    int A = pr_node_in(n, 0), B = pr_node_in(n, 1), bias = pr_node_in(n, 2), z = pr_node_in(n, 3);
    int y = pr_node_out(n, 0);
    if (A < 0 || B < 0 || y < 0) return refuse(x, n, "needs inputs A and B and an output");
    pr_act a1, a2;
    precis_status st = get_acts(x, n, &a1, &a2);
    if (st) return st;
    bool ta = pr_attr_int(n, "transA", 0) != 0, tb = pr_attr_int(n, "transB", 0) != 0;
    float alpha = pr_attr_float(n, "alpha", 1.0f);
    int ra = rank_of(x, A), rb = rank_of(x, B), ry = rank_of(x, y);
    pr_dtype dt = dtype_of(x, y);
    const char *cur;
    Onnx__NodeProto *p;
    if (ra == 2 && rb == 2 && ry == 2 && gemm_bias_ok(x, bias, y)) {
        const char *in[3] = {T(A), T(B), bias >= 0 ? T(bias) : NULL};
        cur = pr_ex_fresh(x, n->name, "Gemm");
        p = pr_ex_node(x, "Gemm", "", n->name, true, 3, in, 1, &cur);
        if (alpha != 1.0f) pr_ex_attr_float(x, p, "alpha", alpha);
        if (ta) pr_ex_attr_int(x, p, "transA", 1);
        if (tb) pr_ex_attr_int(x, p, "transB", 1);
    } else {
        if ((ta && ra != 2) || (tb && rb != 2))
            return refuse(x, n, "transA/transB on an operand whose rank is not 2");
        static const int64_t perm[2] = {1, 0};
        const char *in[2] = {T(A), T(B)};
        for (int i = 0; i < 2; i++)
            if (i ? tb : ta) {
                in[i] = pr_ex_op1(x, "Transpose", n->name, in[i], &p);
                pr_ex_attr_ints(x, p, "perm", perm, 2);
            }
        cur = pr_ex_fresh(x, n->name, "MatMul");
        pr_ex_node(x, "MatMul", "", n->name, true, 2, in, 1, &cur);
        if (alpha != 1.0f) cur = pr_ex_op2(x, "Mul", n->name, cur, pr_ex_scalar(x, dt, alpha));
        if (bias >= 0) cur = pr_ex_op2(x, "Add", n->name, cur, T(bias));
    }
    pr_ex_act(x, &a1, n->name, dt, &cur);
    if (z >= 0) cur = pr_ex_op2(x, "Add", n->name, cur, T(z));
    pr_ex_act(x, &a2, n->name, dt, &cur);
    pr_ex_finish(x, cur, T(y), n->name);
    return pr_ex_status(x, n);
}

/* Attention -> [Transpose(K)] -> MatMul -> [Mul scale] -> [Add M] ->
 * Softmax(-1) -> MatMul(., V): the ops it was fused from. */
static precis_status ex_attention(pr_ex *x, const pr_node *n) {
    int Q = pr_node_in(n, 0), K = pr_node_in(n, 1), V = pr_node_in(n, 2), M = pr_node_in(n, 3);
    int y = pr_node_out(n, 0);
    if (Q < 0 || K < 0 || V < 0 || y < 0) return refuse(x, n, "needs inputs Q, K, V and an output");
    if (pr_attr_int(n, "heads_bshd", 0))
        return refuse(x, n, "head transposes folded into the attention (a CUDA plan)");
    pr_dtype dt = dtype_of(x, y);
    if (dtype_of(x, Q) != dt || dtype_of(x, K) != dt || dtype_of(x, V) != dt ||
        (M >= 0 && dtype_of(x, M) != dt))
        return refuse(x, n, "Q, K, V and the mask must share one dtype in ONNX");
    const char *k = T(K), *cur;
    Onnx__NodeProto *p;
    if (!pr_attr_int(n, "k_transposed", 0)) {
        int r = rank_of(x, K);
        if (r < 2) return refuse(x, n, "K must have a known rank >= 2");
        int64_t perm[PR_MAX_RANK];
        for (int i = 0; i < r; i++) perm[i] = i;
        perm[r - 2] = r - 1;
        perm[r - 1] = r - 2;
        k = pr_ex_op1(x, "Transpose", n->name, k, &p);
        pr_ex_attr_ints(x, p, "perm", perm, r);
    }
    cur = pr_ex_op2(x, "MatMul", n->name, T(Q), k);
    float scale = pr_attr_float(n, "scale", 1.0f);
    if (scale != 1.0f) cur = pr_ex_op2(x, "Mul", n->name, cur, pr_ex_scalar(x, dt, scale));
    if (M >= 0) cur = pr_ex_op2(x, "Add", n->name, cur, T(M));
    cur = pr_ex_op1(x, "Softmax", n->name, cur, &p);
    pr_ex_attr_int(x, p, "axis", -1);
    const char *in[2] = {cur, T(V)};
    cur = pr_ex_fresh(x, n->name, "MatMul");
    pr_ex_node(x, "MatMul", "", n->name, true, 2, in, 1, &cur);
    pr_ex_finish(x, cur, T(y), n->name);
    return pr_ex_status(x, n);
}

/* Reorder only changes the physical layout: consumers read its input. */
static precis_status ex_reorder(pr_ex *x, const pr_node *n) {
    int in = pr_node_in(n, 0), out = pr_node_out(n, 0);
    if (out < 0) return PRECIS_OK;
    if (in < 0) return refuse(x, n, "has no input");
    if (x->g->tensors[out].flags & PR_T_OUTPUT) { /* graph outputs keep their names */
        const char *i = T(in), *o = T(out);
        pr_ex_node(x, "Identity", "", n->name, true, 1, &i, 1, &o);
    } else {
        x->tname[out] = T(in);
    }
    return pr_ex_status(x, n);
}

/* ----------------------------------------------------- opset rewrites */

/* Attribute `attr` (ints) -> input `slot` (int64 initializer), when present. */
static precis_status attr_to_input(pr_ex *x, const pr_node *n, const char *attr, int slot,
                                   const char *const *skip, Onnx__NodeProto **out) {
    if (n->n_inputs > MAX_IN) return refuse(x, n, "too many inputs (%d)", n->n_inputs);
    const char *ins[MAX_IN];
    int k = node_ins(x, n, ins);
    const int64_t *v;
    int cnt = pr_attr_ints(n, attr, &v);
    char buf[512];
    if (cnt >= 0) {
        ins[slot] = pr_ex_ints(x, cbase(n, attr, buf, sizeof buf), v, cnt);
        if (k < slot + 1) k = slot + 1;
    }
    const char *sk[8] = {attr};
    int j = 1;
    for (; skip && *skip && j < 7; skip++) sk[j++] = *skip;
    sk[j] = NULL;
    return copy_skip(x, n, NULL, ins, k, -1, sk, out);
}

/* A constant int input `slot` -> ints attribute `attr` (node newer than E). */
static precis_status input_to_attr(pr_ex *x, const pr_node *n, const char *attr, int slot) {
    if (n->n_inputs > MAX_IN) return refuse(x, n, "too many inputs (%d)", n->n_inputs);
    int t = pr_node_in(n, slot);
    const pr_tensor *pt = t >= 0 ? &x->g->tensors[t] : NULL;
    if (pt && (!(pt->flags & PR_T_INIT) || !pt->data))
        return refuse(x, n,
                      "input '%s' must be a constant to be written as attribute '%s' at "
                      "opset %lld",
                      pt->name, attr, (long long)x->opset);
    int64_t numel = pt ? pr_numel(pt->rank, pt->dims) : 0;
    if (pt && (numel < 0 || numel > 64 || !pr_dtype_info(pt->dtype)->is_int))
        return refuse(x, n, "input '%s' is not a small integer list", pt->name);
    if (pt && numel == 0 && pr_attr_int(n, "noop_with_empty_axes", 0))
        return refuse(x, n, "noop_with_empty_axes has no form at opset %lld", (long long)x->opset);
    int64_t v[64];
    for (int64_t i = 0; i < numel; i++) v[i] = pr_load_i64(pt->data, pt->dtype, i);
    const char *ins[MAX_IN];
    int k = node_ins(x, n, ins);
    if (k > slot) k = slot;
    static const char *const sk[] = {"noop_with_empty_axes", NULL};
    Onnx__NodeProto *p;
    precis_status st = copy_skip(x, n, NULL, ins, k, -1, sk, &p);
    if (st) return st;
    if (pt && numel > 0) pr_ex_attr_ints(x, p, attr, v, (int)numel);
    return pr_ex_status(x, n);
}

/* Softmax / LogSoftmax / Hardmax before opset 13: the op on the input
 * coerced to 2-D at `axis`. */
static precis_status ex_softmax_old(pr_ex *x, const pr_node *n) {
    int X = pr_node_in(n, 0), Y = pr_node_out(n, 0);
    int64_t axis = pr_attr_int(n, "axis", 1);
    int r = rank_of(x, X);
    if (X < 0 || Y < 0) return refuse(x, n, "needs an input and an output");
    if (axis == -1 || (r >= 0 && axis == r - 1)) {
        static const char *const sk[] = {"axis", NULL};
        Onnx__NodeProto *p;
        precis_status st = copy_skip(x, n, NULL, NULL, 0, -1, sk, &p);
        if (st) return st;
        pr_ex_attr_int(x, p, "axis", -1);
        return pr_ex_status(x, n);
    }
    const char *xs = T(X), *shape;
    bool known = r >= 0;
    for (int d = 0; d < r; d++) known = known && pr_dim_known(x->g->tensors[X].dims[d]);
    char buf[512];
    if (known)
        shape = pr_ex_ints(x, cbase(n, "shape", buf, sizeof buf), x->g->tensors[X].dims, r);
    else
        shape = pr_ex_op1(x, "Shape", n->name, xs, NULL);
    Onnx__NodeProto *p;
    const char *f = pr_ex_op1(x, "Flatten", n->name, xs, &p);
    pr_ex_attr_int(x, p, "axis", axis);
    const char *s = pr_ex_fresh(x, n->name, n->op_type);
    p = pr_ex_node(x, n->op_type, "", n->name, true, 1, &f, 1, &s);
    pr_ex_attr_int(x, p, "axis", 1);
    const char *y = pr_ex_op2(x, "Reshape", n->name, s, shape);
    pr_ex_finish(x, y, T(Y), n->name);
    return pr_ex_status(x, n);
}

/* Upsample (any opset) and Resize-10 -> Resize-13. */
static precis_status ex_upsample(pr_ex *x, const pr_node *n) {
    bool up = n->op == PR_OP_Upsample;
    int X = pr_node_in(n, 0);
    if (X < 0 || pr_node_out(n, 0) < 0) return refuse(x, n, "needs an input and an output");
    const char *mode = pr_attr_str(n, "mode", "nearest");
    if (!strcmp(mode, "bilinear")) mode = "linear";
    if (strcmp(mode, "nearest") && strcmp(mode, "linear"))
        return refuse(x, n, "mode '%s' is not nearest or linear", mode);
    float sc[PR_MAX_RANK];
    int ns = -1;
    const char *scales;
    char buf[512];
    if (up && n->opset < 7) {
        sc[0] = sc[1] = 1.0f;
        sc[2] = pr_attr_float(n, "height_scale", 1.0f);
        sc[3] = pr_attr_float(n, "width_scale", 1.0f);
        ns = 4;
    } else if (up && n->opset < 9) {
        const float *f;
        ns = pr_attr_floats(n, "scales", &f);
        if (ns < 0 || ns > PR_MAX_RANK) return refuse(x, n, "needs attribute 'scales'");
        memcpy(sc, f, (size_t)ns * sizeof *sc);
    }
    if (ns >= 0) {
        int64_t d = ns;
        scales = pr_ex_const(x, cbase(n, "scales", buf, sizeof buf), PRECIS_FLOAT32, 1, &d, sc);
    } else {
        int s = pr_node_in(n, 1);
        if (s < 0) return refuse(x, n, "needs input 'scales'");
        scales = T(s);
        const pr_tensor *pt = &x->g->tensors[s];
        int64_t numel = pr_numel(pt->rank, pt->dims);
        if ((pt->flags & PR_T_INIT) && pt->data && numel >= 0 && numel <= PR_MAX_RANK &&
            pr_dtype_info(pt->dtype)->is_float) {
            ns = (int)numel;
            for (int i = 0; i < ns; i++) sc[i] = (float)pr_load_f64(pt->data, pt->dtype, i);
        }
    }
    /* precis and ONNX Runtime round a nearest source index down when
     * upsampling and up when downsampling, per axis */
    bool any_up = false, any_down = false;
    for (int i = 0; i < ns; i++) any_up |= sc[i] > 1.0f, any_down |= sc[i] < 1.0f;
    if (!strcmp(mode, "nearest") && any_up && any_down)
        return refuse(x, n, "nearest mode upsampling some axes and downsampling others");
    const char *ins[3] = {T(X), NULL, scales}, *o = T(n->outputs[0]);
    Onnx__NodeProto *p = pr_ex_node(x, "Resize", "", n->name, true, 3, ins, 1, &o);
    pr_ex_attr_str(x, p, "mode", mode);
    pr_ex_attr_str(x, p, "coordinate_transformation_mode", "asymmetric");
    if (!strcmp(mode, "nearest")) pr_ex_attr_str(x, p, "nearest_mode", any_down ? "ceil" : "floor");
    return pr_ex_status(x, n);
}

static precis_status ex_resize(pr_ex *x, const pr_node *n) {
    if (n->opset < 11) return ex_upsample(x, n);
    const char *ct = pr_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    if (n->opset >= 13 || strcmp(ct, "tf_half_pixel_for_nn") != 0)
        return copy_skip(x, n, NULL, NULL, 0, -1, NULL, NULL);
    /* nearest index m((x + 0.5) / s) == m'((x + 0.5) / s - 0.5) */
    const char *nm = pr_attr_str(n, "nearest_mode", "round_prefer_floor");
    const char *to = !strcmp(nm, "floor")                ? "round_prefer_ceil"
                     : !strcmp(nm, "round_prefer_floor") ? "ceil"
                                                         : NULL;
    if (strcmp(pr_attr_str(n, "mode", "nearest"), "nearest") || !to)
        return refuse(x, n,
                      "coordinate_transformation_mode tf_half_pixel_for_nn (removed in "
                      "opset 13) has no equivalent for this mode / nearest_mode");
    static const char *const sk[] = {"coordinate_transformation_mode", "nearest_mode", NULL};
    Onnx__NodeProto *p;
    precis_status st = copy_skip(x, n, NULL, NULL, 0, -1, sk, &p);
    if (st) return st;
    pr_ex_attr_str(x, p, "coordinate_transformation_mode", "half_pixel");
    pr_ex_attr_str(x, p, "nearest_mode", to);
    return pr_ex_status(x, n);
}

static precis_status ex_pad_old(pr_ex *x, const pr_node *n) {
    const int64_t *pads;
    int np = pr_attr_ints(n, "pads", &pads);
    if (np < 0) np = pr_attr_ints(n, "paddings", &pads);
    if (np < 0) return refuse(x, n, "needs attribute 'pads'");
    char buf[512];
    const char *ins[3] = {T(pr_node_in(n, 0)),
                          pr_ex_ints(x, cbase(n, "pads", buf, sizeof buf), pads, np), NULL};
    float v = pr_attr_float(n, "value", 0.0f);
    if (v != 0.0f) ins[2] = pr_ex_scalar(x, dtype_of(x, pr_node_in(n, 0)), v);
    static const char *const sk[] = {"pads", "paddings", "value", NULL};
    return copy_skip(x, n, NULL, ins, 3, -1, sk, NULL);
}

static precis_status ex_clip_old(pr_ex *x, const pr_node *n) {
    pr_dtype dt = dtype_of(x, pr_node_in(n, 0));
    const char *ins[3] = {T(pr_node_in(n, 0)), NULL, NULL};
    if (pr_attr_find(n, "min")) ins[1] = pr_ex_scalar(x, dt, pr_attr_float(n, "min", 0.0f));
    if (pr_attr_find(n, "max")) ins[2] = pr_ex_scalar(x, dt, pr_attr_float(n, "max", 0.0f));
    static const char *const sk[] = {"min", "max", NULL};
    return copy_skip(x, n, NULL, ins, 3, -1, sk, NULL);
}

static precis_status ex_slice_old(pr_ex *x, const pr_node *n) {
    static const char *const names[3] = {"starts", "ends", "axes"};
    const char *ins[4] = {T(pr_node_in(n, 0)), NULL, NULL, NULL};
    char buf[512];
    for (int i = 0; i < 3; i++) {
        const int64_t *v;
        int c = pr_attr_ints(n, names[i], &v);
        if (c < 0 && i < 2) return refuse(x, n, "needs attribute '%s'", names[i]);
        if (c >= 0) ins[i + 1] = pr_ex_ints(x, cbase(n, names[i], buf, sizeof buf), v, c);
    }
    static const char *const sk[] = {"starts", "ends", "axes", NULL};
    return copy_skip(x, n, NULL, ins, 4, -1, sk, NULL);
}

static precis_status ex_batchnorm(pr_ex *x, const pr_node *n) {
    for (int i = 1; i < n->n_outputs; i++)
        if (out_used(x, n, i))
            return refuse(x, n,
                          "output %d (training statistics) is used: only inference is exported", i);
    if (n->opset < 9 && pr_attr_int(n, "spatial", 1) == 0)
        return refuse(x, n, "spatial=0 (per-element statistics) has no form after opset 8");
    if (n->opset >= 14 && pr_attr_int(n, "training_mode", 0) != 0)
        return refuse(x, n, "training_mode=1: only inference is exported");
    static const char *const sk[] = {"spatial", NULL};
    return copy_skip(x, n, NULL, NULL, 0, 1, sk, NULL);
}

static precis_status ex_layernorm(pr_ex *x, const pr_node *n) {
    int X = pr_node_in(n, 0), S = pr_node_in(n, 1), B = pr_node_in(n, 2), Y = pr_node_out(n, 0);
    if (X < 0 || S < 0 || Y < 0) return refuse(x, n, "needs inputs X and Scale and an output");
    for (int i = 1; i < n->n_outputs; i++)
        if (out_used(x, n, i))
            return refuse(x, n,
                          "output %d (Mean / InvStdDev) is used: it needs opset 17, the model "
                          "declares %lld",
                          i, (long long)x->opset);
    int64_t axis = pr_attr_int(n, "axis", -1), axes[PR_MAX_RANK];
    float eps = pr_attr_float(n, "epsilon", 1e-5f);
    int r = rank_of(x, X), na = 0;
    if (axis < 0) {
        if (axis < -PR_MAX_RANK || (r >= 0 && axis < -r)) return refuse(x, n, "axis out of range");
        for (int64_t a = axis; a < 0; a++) axes[na++] = a;
    } else {
        if (r < 0) return refuse(x, n, "axis %lld of an input of unknown rank", (long long)axis);
        if (axis >= r) return refuse(x, n, "axis out of range");
        for (int64_t a = axis; a < r; a++) axes[na++] = a;
    }
    pr_dtype dt = dtype_of(x, X);
    bool cast = dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16;
    pr_dtype cdt = cast ? PRECIS_FLOAT32 : dt;
    const char *b = n->name, *xi = T(X);
    Onnx__NodeProto *p;
    if (cast) {
        xi = pr_ex_op1(x, "Cast", b, xi, &p);
        pr_ex_attr_int(x, p, "to", PRECIS_FLOAT32);
    }
    const char *m = pr_ex_op1(x, "ReduceMean", b, xi, &p);
    pr_ex_attr_ints(x, p, "axes", axes, na);
    pr_ex_attr_int(x, p, "keepdims", 1);
    const char *d = pr_ex_op2(x, "Sub", b, xi, m);
    const char *q = pr_ex_op2(x, "Mul", b, d, d);
    const char *v = pr_ex_op1(x, "ReduceMean", b, q, &p);
    pr_ex_attr_ints(x, p, "axes", axes, na);
    pr_ex_attr_int(x, p, "keepdims", 1);
    v = pr_ex_op2(x, "Add", b, v, pr_ex_scalar(x, cdt, eps));
    v = pr_ex_op1(x, "Sqrt", b, v, NULL);
    const char *y = pr_ex_op2(x, "Div", b, d, v);
    if (cast) {
        y = pr_ex_op1(x, "Cast", b, y, &p);
        pr_ex_attr_int(x, p, "to", dt);
    }
    y = pr_ex_op2(x, "Mul", b, y, T(S));
    if (B >= 0) y = pr_ex_op2(x, "Add", b, y, T(B));
    pr_ex_finish(x, y, T(Y), b);
    return pr_ex_status(x, n);
}

/* A standalone activation the exported opset lacks (Gelu, HardSwish, Mish). */
static precis_status ex_act_node(pr_ex *x, const pr_node *n) {
    int X = pr_node_in(n, 0), Y = pr_node_out(n, 0);
    if (X < 0 || Y < 0) return refuse(x, n, "needs an input and an output");
    pr_dtype dt = dtype_of(x, Y);
    const char *cur = T(X);
    if (n->op == PR_OP_Mish) {
        const char *s = pr_ex_op1(x, "Softplus", n->name, cur, NULL);
        s = pr_ex_op1(x, "Tanh", n->name, s, NULL);
        cur = pr_ex_op2(x, "Mul", n->name, cur, s);
    } else {
        pr_act a = {PR_ACT_HARD_SWISH, 0, 0};
        if (n->op == PR_OP_Gelu) {
            const char *ap = pr_attr_str(n, "approximate", "none");
            if (strcmp(ap, "none") && strcmp(ap, "tanh"))
                return refuse(x, n, "approximate '%s' is not none or tanh", ap);
            a.kind = strcmp(ap, "tanh") ? PR_ACT_GELU : PR_ACT_GELU_TANH;
        }
        pr_ex_act(x, &a, n->name, dt, &cur);
    }
    pr_ex_finish(x, cur, T(Y), n->name);
    return pr_ex_status(x, n);
}

static bool is_reduce(pr_op op) {
    switch (op) {
    case PR_OP_ReduceMean:
    case PR_OP_ReduceSum:
    case PR_OP_ReduceMax:
    case PR_OP_ReduceMin:
    case PR_OP_ReduceProd:
    case PR_OP_ReduceL1:
    case PR_OP_ReduceL2:
    case PR_OP_ReduceLogSum:
    case PR_OP_ReduceLogSumExp:
    case PR_OP_ReduceSumSquare: return true;
    default: return false;
    }
}

static precis_status ex_default(pr_ex *x, const pr_node *n) {
    int64_t v = n->opset, E = x->opset;
    if (v < 7 && pr_attr_int(n, "broadcast", 0) != 0 && pr_attr_find(n, "axis"))
        return refuse(x, n, "legacy broadcasting along 'axis' is not supported");
    Onnx__NodeProto *p;
    precis_status st;
    if (is_reduce(n->op)) {
        int64_t since = n->op == PR_OP_ReduceSum ? 13 : 18;
        if (v < since && E >= since) return attr_to_input(x, n, "axes", 1, NULL, NULL);
        if (v >= since && E < since) return input_to_attr(x, n, "axes", 1);
        return copy_skip(x, n, NULL, NULL, 0, -1, NULL, NULL);
    }
    switch (n->op) {
    case PR_OP_Squeeze:
    case PR_OP_Unsqueeze:
        if (v < 13) return attr_to_input(x, n, "axes", 1, NULL, NULL);
        break;
    case PR_OP_Split: {
        bool old = v < 13;
        bool has_split = old ? pr_attr_find(n, "split") != NULL : pr_node_in(n, 1) >= 0;
        st = old ? attr_to_input(x, n, "split", 1, NULL, &p)
                 : copy_skip(x, n, NULL, NULL, 0, -1, NULL, &p);
        if (st) return st;
        if (E >= 18 && v < 18 && !has_split) pr_ex_attr_int(x, p, "num_outputs", n->n_outputs);
        return pr_ex_status(x, n);
    }
    case PR_OP_Softmax:
    case PR_OP_LogSoftmax:
    case PR_OP_Hardmax:
        if (v < 13) return ex_softmax_old(x, n);
        break;
    case PR_OP_Pad:
        if (v < 11) return ex_pad_old(x, n);
        break;
    case PR_OP_Clip:
        if (v < 11) return ex_clip_old(x, n);
        break;
    case PR_OP_Slice:
        if (v < 10) return ex_slice_old(x, n);
        break;
    case PR_OP_TopK:
        if (v < 10) {
            int64_t k = pr_attr_int(n, "k", -1);
            char buf[512];
            const char *ins[2] = {T(pr_node_in(n, 0)),
                                  pr_ex_ints(x, cbase(n, "k", buf, sizeof buf), &k, 1)};
            static const char *const sk[] = {"k", NULL};
            return copy_skip(x, n, NULL, ins, 2, -1, sk, NULL);
        }
        break;
    case PR_OP_Reshape:
        if (v < 5) return attr_to_input(x, n, "shape", 1, NULL, NULL);
        break;
    case PR_OP_Upsample: return ex_upsample(x, n);
    case PR_OP_Resize: return ex_resize(x, n);
    case PR_OP_BatchNormalization: return ex_batchnorm(x, n);
    case PR_OP_Dropout: {
        if (out_used(x, n, 1)) return refuse(x, n, "its mask output is used");
        const char *i = T(pr_node_in(n, 0)), *o = T(pr_node_out(n, 0));
        pr_ex_node(x, "Identity", "", n->name, true, 1, &i, 1, &o);
        return pr_ex_status(x, n);
    }
    case PR_OP_Scatter: return copy_skip(x, n, "ScatterElements", NULL, 0, -1, NULL, NULL);
    case PR_OP_Cast: {
        const pr_attr *a = pr_attr_find(n, "to");
        if (a && a->type == PR_ATTR_STRING)
            return refuse(x, n, "'to' given as a type name (opset < 6)");
        break;
    }
    case PR_OP_Concat:
        if (v < 4 && !pr_attr_find(n, "axis")) {
            if ((st = copy_skip(x, n, NULL, NULL, 0, -1, NULL, &p))) return st;
            pr_ex_attr_int(x, p, "axis", 1);
            return pr_ex_status(x, n);
        }
        break;
    case PR_OP_LayerNormalization:
        if (pr_attr_float(n, "q_scale", 0.0f) != 0.0f)
            return refuse(x, n, "an e4m3 copy of Y as output 1 (q_scale: a CUDA fp8 plan)");
        if (E < 17) return ex_layernorm(x, n);
        break;
    case PR_OP_Gelu:
        if (E < 20) return ex_act_node(x, n);
        break;
    case PR_OP_HardSwish:
        if (E < 14) return ex_act_node(x, n);
        break;
    case PR_OP_Mish:
        if (E < 18) return ex_act_node(x, n);
        break;
    default: break;
    }
    return copy_skip(x, n, NULL, NULL, 0, -1, NULL, NULL);
}

precis_status pr_ex_export_node(pr_ex *x, int ni) {
    const pr_node *n = &x->g->nodes[ni];
    if (!strcmp(n->domain, PR_FUSED_DOMAIN)) {
        switch (n->op) {
        case PR_OP_FusedConv: return ex_fused_conv(x, n);
        case PR_OP_FusedMatMul: return ex_fused_matmul(x, n);
        case PR_OP_Attention: return ex_attention(x, n);
        case PR_OP_Reorder: return ex_reorder(x, n);
        default:
            return refuse(x, n,
                          "no standard ONNX form (export before the INT8 lowering: Q/DQ "
                          "nodes around float ops are what ONNX runtimes fuse)");
        }
    }
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return pr_ex_copy(x, n, NULL, NULL, 0, -1, NULL, NULL);
    return ex_default(x, n);
}
