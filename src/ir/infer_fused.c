/* Shape inference for the precis-internal fused ops (ops.inc, family fused):
 * each defers to the op it extends and checks the epilogue operands. */
#include "ir/act.h"
#include "ir/infer.h"

#include <math.h>
#include <string.h>

static precis_status check_acts(pr_infer *ic) {
    pr_act a;
    if (!pr_act_from_node(ic->node, "act", &a) || !pr_act_from_node(ic->node, "act2", &a))
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "unknown activation '%s' / '%s'",
                         pr_attr_str(ic->node, "act", ""), pr_attr_str(ic->node, "act2", ""));
    return PRECIS_OK;
}

/* Z (input zi) must have the output's shape where both are known. */
static precis_status check_residual(pr_infer *ic, int zi) {
    if (!pr_in_present(ic, zi)) return PRECIS_OK;
    const pr_tinfo *z = &ic->in[zi], *y = &ic->out[0];
    if (z->dtype != y->dtype)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual has dtype %s, output %s",
                         pr_dtype_name(z->dtype), pr_dtype_name(y->dtype));
    if (z->rank < 0 || y->rank < 0) return PRECIS_OK;
    if (z->rank != y->rank) return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual rank differs");
    for (int i = 0; i < y->rank; i++)
        if (pr_dim_known(z->dims[i]) && pr_dim_known(y->dims[i]) && z->dims[i] != y->dims[i])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual dim %d is %lld, output has %lld", i,
                             (long long)z->dims[i], (long long)y->dims[i]);
    return PRECIS_OK;
}

/* In a bf16/fp16 plan the activations are low precision while weights and
 * biases stay float32 initializers (kernels convert them once): shapes are
 * inferred as if the weights had the activation's dtype. */
static bool low_float(pr_dtype d) { return d == PRECIS_BFLOAT16 || d == PRECIS_FLOAT16; }

precis_status pr_infer_FusedConv(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    pr_infer sub = *ic;
    sub.n_in = ic->n_in < 3 ? ic->n_in : 3;
    pr_tinfo in3[3];
    if (ic->n_in >= 2 && low_float(ic->in[0].dtype)) {
        for (int i = 0; i < sub.n_in; i++) {
            in3[i] = ic->in[i];
            if (i && in3[i].dtype == PRECIS_FLOAT32) in3[i].dtype = ic->in[0].dtype;
        }
        sub.in = in3;
    }
    if ((st = pr_infer_Conv(&sub))) return st;
    return check_residual(ic, 3);
}

precis_status pr_infer_FusedMatMul(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    pr_tinfo ab[2];
    for (int i = 0; i < 2; i++) {
        if ((st = pr_infer_need_input(ic, i, i ? "B" : "A"))) return st;
        ab[i] = ic->in[i];
        if (i && low_float(ic->in[0].dtype) && ab[i].dtype == PRECIS_FLOAT32)
            ab[i].dtype = ic->in[0].dtype;
        bool tr = pr_attr_int(ic->node, i ? "transB" : "transA", 0) != 0;
        if (!tr) continue;
        if (ab[i].rank != 2)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "trans%s needs a 2-D operand", i ? "B" : "A");
        int64_t d = ab[i].dims[0];
        ab[i].dims[0] = ab[i].dims[1];
        ab[i].dims[1] = d;
        ab[i].value = NULL;
    }
    pr_infer sub = *ic;
    sub.n_in = 2;
    sub.in = ab;
    if ((st = pr_infer_MatMul(&sub))) return st;
    if (pr_in_present(ic, 2) && ic->in[2].dtype != ic->out[0].dtype &&
        ic->in[2].dtype != PRECIS_FLOAT32)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "bias has dtype %s, output %s",
                         pr_dtype_name(ic->in[2].dtype), pr_dtype_name(ic->out[0].dtype));
    return check_residual(ic, 3);
}

/* Attention: the shapes of MatMul(Q, K') -> Add(., M) -> MatMul(., V), with
 * the float checks of a fused node (K, V, M may stay float32 beside a
 * bf16/fp16 Q). */
precis_status pr_infer_Attention(pr_infer *ic) {
    static const char *const names[4] = {"Q", "K", "V", "mask"};
    precis_status st;
    pr_tinfo in[4];
    const int n = pr_in_present(ic, 3) ? 4 : 3;
    for (int i = 0; i < n; i++) {
        if ((st = pr_infer_need_input(ic, i, names[i]))) return st;
        in[i] = ic->in[i];
        in[i].value = NULL;
        if (!pr_dtype_info(in[i].dtype)->is_float)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s has dtype %s, not a float type", names[i],
                             pr_dtype_name(in[i].dtype));
        if (i && low_float(in[0].dtype) && in[i].dtype == PRECIS_FLOAT32)
            in[i].dtype = in[0].dtype;
        if (i < 3 && in[i].rank >= 0 && in[i].rank < 2)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must have rank >= 2, got %d", names[i],
                             in[i].rank);
    }
    /* heads_bshd bit i (Q K V; 8: Y): stored with axes r-3 and r-2 swapped */
    const int64_t hb = pr_attr_int(ic->node, "heads_bshd", 0);
    /* qkv_heads H: Q, K, V are thirds of P [..., S, 3HD], each stored [..., S, H, D] */
    const int64_t qh = pr_attr_int(ic->node, "qkv_heads", 0);
    if (qh) {
        if ((hb & 7) != 7 || pr_attr_int(ic->node, "k_transposed", 0) || qh < 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "qkv_heads needs heads_bshd bits 0-2 and k_transposed 0");
        for (int i = 0; i < 3; i++) {
            int r = in[i].rank;
            if (r < 0) continue;
            int64_t c = in[i].dims[r - 1];
            if (r < 2 || r + 1 > PR_MAX_RANK || (pr_dim_known(c) && c % (3 * qh)))
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "qkv_heads %lld: %s [.., %lld] is not "
                                 "[.., S, 3 * heads * D]", (long long)qh, names[i], (long long)c);
            in[i].dims[r - 1] = qh;
            in[i].dims[r] = pr_dim_known(c) ? c / (3 * qh) : c;
            in[i].rank = r + 1;
        }
    }
    for (int i = 0; i < 3; i++)
        if (hb >> i & 1) {
            int r = in[i].rank;
            if (r >= 0 && r < 3)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "heads_bshd: %s needs rank >= 3", names[i]);
            if (r < 0) continue;
            int64_t d = in[i].dims[r - 2];
            in[i].dims[r - 2] = in[i].dims[r - 3];
            in[i].dims[r - 3] = d;
        }
    if (pr_attr_int(ic->node, "k_transposed", 0) == 0 && in[1].rank >= 2) {
        int r = in[1].rank;
        int64_t d = in[1].dims[r - 1];
        in[1].dims[r - 1] = in[1].dims[r - 2];
        in[1].dims[r - 2] = d;
    }
    /* scores S = Q x K', then S + M, then (S + M) x V */
    pr_tinfo sm[2], pv[2];
    memset(sm, 0, sizeof sm);
    pr_infer sub = *ic;
    sub.n_in = 2;
    sub.in = in;
    sub.n_out = 1;
    sub.out = &sm[0];
    sm[0].rank = -1;
    if ((st = pr_infer_MatMul(&sub))) return st;
    if (n == 4 && sm[0].rank >= 0) {
        sm[1] = in[3];
        sub.in = sm;
        int idx[2] = {0, 1};
        if ((st = pr_infer_broadcast(&sub, 2, idx, &sm[0].rank, sm[0].dims))) return st;
    } else if (n == 4) {
        sm[0].rank = -1;
    }
    pv[0] = sm[0];
    pv[1] = in[2];
    sub.in = pv;
    sub.out = ic->out;
    if ((st = pr_infer_MatMul(&sub))) return st;
    pr_tinfo *y = &ic->out[0];
    if ((hb & 8) && y->rank >= 0 && y->rank < 3)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "heads_bshd: Y needs rank >= 3");
    if ((hb & 8) && y->rank >= 3) {
        int64_t d = y->dims[y->rank - 2];
        y->dims[y->rank - 2] = y->dims[y->rank - 3];
        y->dims[y->rank - 3] = d;
    }
    const int64_t yt = pr_attr_int(ic->node, "y_type", 0);
    if (yt) { /* ops.inc: Y quantized to e4m3 */
        if (yt != PRECIS_FLOAT8E4M3FN || !(pr_attr_float(ic->node, "y_scale", 0.0f) > 0.0f))
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "y_type must be 17 (float8e4m3fn) with a "
                             "y_scale > 0, got %lld", (long long)yt);
        y->dtype = PRECIS_FLOAT8E4M3FN;
    }
    return PRECIS_OK;
}

precis_status pr_infer_Reorder(pr_infer *ic) {
    precis_status st = pr_infer_need_input(ic, 0, "X");
    if (st) return st;
    const char *to = pr_attr_str(ic->node, "to", "");
    if (strcmp(to, "plain") != 0 && strcmp(to, "nhwc") != 0)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "unknown layout '%s'", to);
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
}

/* ------------------------------------------------------------------ INT8 */

static bool q8(pr_dtype d) { return d == PRECIS_INT8 || d == PRECIS_UINT8; }
static bool f8(pr_dtype d) { return d == PRECIS_FLOAT8E4M3FN; }

/* Output dtype from attribute y_type (absent / 1: float32; 3: int8; 2: uint8;
 * 17: float8e4m3fn, QMatMul only) and its scale; -1 (error set) when invalid. */
static int q_out_type(pr_infer *ic, pr_dtype *dt) {
    int64_t yt = pr_attr_int(ic->node, "y_type", PRECIS_FLOAT32);
    if (yt == PRECIS_FLOAT32) {
        *dt = PRECIS_FLOAT32;
        return 0;
    }
    if (yt != PRECIS_INT8 && yt != PRECIS_UINT8 &&
        !(yt == PRECIS_FLOAT8E4M3FN && ic->node->op == PR_OP_QMatMul)) {
        pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "y_type %lld is not float, int8 or uint8%s",
                  (long long)yt, ic->node->op == PR_OP_QMatMul ? " or float8e4m3fn" : "");
        return -1;
    }
    float ys = pr_attr_float(ic->node, "y_scale", 0.0f);
    if (!(ys > 0.0f) || !isfinite(ys)) {
        pr_inferf(ic, PRECIS_ERR_SHAPE, "y_scale must be a positive number");
        return -1;
    }
    *dt = (pr_dtype)yt;
    return 0;
}

static precis_status q_scale_attr(pr_infer *ic, const char *name) {
    float s = pr_attr_float(ic->node, name, 0.0f);
    if (!(s > 0.0f) || !isfinite(s))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a positive number", name);
    return PRECIS_OK;
}

/* Per-channel scale input i: float32, rank 1, n (or 1 when allow1) elements. */
static precis_status q_scale_input(pr_infer *ic, int i, const char *what, int64_t n, bool allow1) {
    precis_status st = pr_infer_need_input(ic, i, what);
    if (st) return st;
    const pr_tinfo *s = &ic->in[i];
    if (s->dtype != PRECIS_FLOAT32 || s->rank != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a 1-D float32 tensor", what);
    if (pr_dim_known(s->dims[0]) && n >= 0 && s->dims[0] != n && !(allow1 && s->dims[0] == 1))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s has %lld entries, expected %lld", what,
                         (long long)s->dims[0], (long long)n);
    return PRECIS_OK;
}

/* Residual Z (input zi): float32 of the output's shape, or int8/uint8 with z_scale. */
static precis_status q_residual(pr_infer *ic, int zi) {
    if (!pr_in_present(ic, zi)) return PRECIS_OK;
    const pr_tinfo *z = &ic->in[zi], *y = &ic->out[0];
    if (q8(z->dtype)) {
        precis_status st = q_scale_attr(ic, "z_scale");
        if (st) return st;
    } else if (!pr_dtype_info(z->dtype)->is_float || z->dtype == PRECIS_FLOAT64) {
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "residual must be float32, float16, bfloat16, int8 or uint8");
    }
    if (z->rank < 0 || y->rank < 0) return PRECIS_OK;
    if (z->rank != y->rank) return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual rank differs");
    for (int i = 0; i < y->rank; i++)
        if (pr_dim_known(z->dims[i]) && pr_dim_known(y->dims[i]) && z->dims[i] != y->dims[i])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "residual dim %d is %lld, output has %lld", i,
                             (long long)z->dims[i], (long long)y->dims[i]);
    return PRECIS_OK;
}

precis_status pr_infer_QConv(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    if ((st = pr_infer_need_input(ic, 0, "X")) || (st = pr_infer_need_input(ic, 1, "W")))
        return st;
    if (!q8(ic->in[0].dtype) || ic->in[1].dtype != PRECIS_INT8)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must be int8/uint8 and W int8, got %s, %s",
                         pr_dtype_name(ic->in[0].dtype), pr_dtype_name(ic->in[1].dtype));
    if ((st = q_scale_attr(ic, "x_scale"))) return st;
    int64_t M = ic->in[1].rank >= 1 ? ic->in[1].dims[0] : -1;
    if ((st = q_scale_input(ic, 2, "w_scale", M, false))) return st;
    pr_tinfo in3[3] = {ic->in[0], ic->in[1], {0}};
    in3[0].dtype = in3[1].dtype = PRECIS_FLOAT32;
    in3[0].value = in3[1].value = NULL;
    in3[2].rank = -1;
    int nsub = 2;
    if (pr_in_present(ic, 3)) {
        if (ic->in[3].dtype != PRECIS_FLOAT32)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "bias must be float32");
        in3[2] = ic->in[3];
        nsub = 3;
    }
    pr_infer sub = *ic;
    sub.n_in = nsub;
    sub.in = in3;
    if ((st = pr_infer_Conv(&sub))) return st;
    pr_dtype yt;
    if (q_out_type(ic, &yt)) return ic->err->status;
    ic->out[0].dtype = yt;
    return q_residual(ic, 4);
}

precis_status pr_infer_QMatMul(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    if ((st = pr_infer_need_input(ic, 0, "A")) || (st = pr_infer_need_input(ic, 1, "B")))
        return st;
    if (!(q8(ic->in[0].dtype) && q8(ic->in[1].dtype)) &&
        !(f8(ic->in[0].dtype) && f8(ic->in[1].dtype)))
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "A and B must be int8/uint8 (or both float8e4m3fn), got %s, %s",
                         pr_dtype_name(ic->in[0].dtype), pr_dtype_name(ic->in[1].dtype));
    if ((st = q_scale_attr(ic, "a_scale"))) return st;
    pr_tinfo ab[2];
    for (int i = 0; i < 2; i++) {
        ab[i] = ic->in[i];
        ab[i].dtype = PRECIS_FLOAT32;
        ab[i].value = NULL;
        bool tr = pr_attr_int(ic->node, i ? "transB" : "transA", 0) != 0;
        if (!tr) continue;
        if (ab[i].rank != 2)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "trans%s needs a 2-D operand", i ? "B" : "A");
        int64_t d = ab[i].dims[0];
        ab[i].dims[0] = ab[i].dims[1];
        ab[i].dims[1] = d;
    }
    pr_infer sub = *ic;
    sub.n_in = 2;
    sub.in = ab;
    if ((st = pr_infer_MatMul(&sub))) return st;
    int64_t N = ab[1].rank >= 1 ? ab[1].dims[ab[1].rank - 1] : -1;
    if ((st = q_scale_input(ic, 2, "b_scale", N, true))) return st;
    if (pr_in_present(ic, 3) && ic->in[3].dtype != PRECIS_FLOAT32)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "bias must be float32");
    pr_dtype yt;
    if (q_out_type(ic, &yt)) return ic->err->status;
    ic->out[0].dtype = yt;
    return q_residual(ic, 4);
}

/* A QBinary / QPool operand i: int8/uint8 with a positive scale attribute,
 * or (allow_float) float32, float16 or bfloat16 (real values). */
static precis_status q_operand(pr_infer *ic, int i, const char *what, const char *scale,
                               bool allow_float) {
    precis_status st = pr_infer_need_input(ic, i, what);
    if (st) return st;
    pr_dtype d = ic->in[i].dtype;
    if (q8(d)) return q_scale_attr(ic, scale);
    if (allow_float && (d == PRECIS_FLOAT32 || d == PRECIS_FLOAT16 || d == PRECIS_BFLOAT16))
        return PRECIS_OK;
    return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be int8/uint8%s, got %s", what,
                     allow_float ? " or a float type" : "", pr_dtype_name(d));
}

/* The op named by attribute kind (an ONNX op name), PR_OP_UNKNOWN if none. */
static pr_op q_kind(const pr_node *n) { return pr_op_lookup(pr_attr_str(n, "kind", "")); }

precis_status pr_infer_QBinary(pr_infer *ic) {
    precis_status st = check_acts(ic);
    if (st) return st;
    if (pr_attr_str(ic->node, "act2", "")[0])
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "QBinary has no act2");
    pr_op kind = q_kind(ic->node);
    if (kind != PR_OP_Add && kind != PR_OP_Sub && kind != PR_OP_Mul)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "unknown kind '%s' (Add, Sub or Mul)",
                         pr_attr_str(ic->node, "kind", ""));
    if ((st = q_operand(ic, 0, "A", "a_scale", true)) ||
        (st = q_operand(ic, 1, "B", "b_scale", true)))
        return st;
    int rank;
    int64_t dims[PR_MAX_RANK];
    if ((st = pr_infer_broadcast(ic, 2, (const int[]){0, 1}, &rank, dims))) return st;
    pr_dtype yt;
    if (q_out_type(ic, &yt)) return ic->err->status;
    pr_infer_set_out(ic, 0, yt, rank, dims);
    return PRECIS_OK;
}

precis_status pr_infer_QPool(pr_infer *ic) {
    pr_op kind = q_kind(ic->node);
    if (kind != PR_OP_GlobalAveragePool && kind != PR_OP_AveragePool)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                         "unknown kind '%s' (GlobalAveragePool or AveragePool)",
                         pr_attr_str(ic->node, "kind", ""));
    precis_status st = q_operand(ic, 0, "X", "x_scale", false);
    if (st) return st;
    pr_tinfo x = ic->in[0];
    x.dtype = PRECIS_FLOAT32;
    x.value = NULL;
    pr_infer sub = *ic;
    sub.n_in = 1;
    sub.in = &x;
    sub.n_out = 1;
    st = kind == PR_OP_AveragePool ? pr_infer_AveragePool(&sub) : pr_infer_GlobalAveragePool(&sub);
    if (st) return st;
    pr_dtype yt;
    if (q_out_type(ic, &yt)) return ic->err->status;
    ic->out[0].dtype = yt;
    return PRECIS_OK;
}

/* EmbedLayerNorm(W0, I0, W1, I1, P, Scale, B?) (ops.inc): Y = LayerNorm(Sum(
 * Gather(W0, I0), Gather(W1, I1), P)) of dtype sum_type and the Gathers' dims
 * (I0's dims + [L]); output 1 (q_scale) Y in e4m3. */
precis_status pr_infer_EmbedLayerNorm(pr_infer *ic) {
    static const char *const names[] = {"W0", "I0", "W1", "I1", "P", "Scale"};
    precis_status st;
    for (int i = 0; i < 6; i++)
        if ((st = pr_infer_need_input(ic, i, names[i]))) return st;
    int64_t sdt = pr_attr_int(ic->node, "sum_type", (int64_t)ic->in[0].dtype);
    if (sdt != PRECIS_FLOAT32 && sdt != PRECIS_FLOAT16 && sdt != PRECIS_BFLOAT16)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "sum_type must be float32, float16 or bfloat16");
    if (pr_attr_int(ic->node, "stash_type", 1) != 1 || pr_attr_int(ic->node, "axis", -1) != -1)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "stash_type 1 and axis -1 only");
    for (int i = 1; i <= 3; i += 2)
        if (ic->in[i].dtype != PRECIS_INT64 && ic->in[i].dtype != PRECIS_INT32)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be int32 or int64", names[i]);
    const pr_tinfo *W0 = &ic->in[0], *W1 = &ic->in[2], *I0 = &ic->in[1], *I1 = &ic->in[3];
    if ((W0->rank >= 0 && W0->rank != 2) || (W1->rank >= 0 && W1->rank != 2))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "the tables must have rank 2");
    const bool q = pr_attr_float(ic->node, "q_scale", 0.0f) != 0.0f;
    if (q && (!(pr_attr_float(ic->node, "q_scale", 0.0f) > 0.0f) || ic->n_out > 2))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "q_scale must be > 0, with at most 2 outputs");
    if (!q && ic->n_out > 1)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "no Mean / InvStdDev outputs");
    if (I0->rank < 0 || W0->rank < 0 || I0->rank + 1 > PR_MAX_RANK) {
        pr_infer_set_out(ic, 0, (pr_dtype)sdt, -1, NULL);
        if (q) pr_infer_set_out(ic, 1, PRECIS_FLOAT8E4M3FN, -1, NULL);
        return PRECIS_OK;
    }
    int64_t d[PR_MAX_RANK];
    memcpy(d, I0->dims, sizeof(int64_t) * (size_t)I0->rank);
    d[I0->rank] = W0->dims[1];
    const int r = I0->rank + 1;
    if (I1->rank >= 0 && I1->rank != I0->rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "I0 and I1 must have one shape");
    for (int i = 0; i < I0->rank && I1->rank >= 0; i++)
        if (pr_dim_known(I0->dims[i]) && pr_dim_known(I1->dims[i]) && I0->dims[i] != I1->dims[i])
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "I0 and I1 must have one shape");
    if (pr_dim_known(W0->dims[1]) && W1->rank == 2 && pr_dim_known(W1->dims[1]) &&
        W0->dims[1] != W1->dims[1])
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "the tables' rows differ in length");
    const pr_tinfo *P = &ic->in[4];
    if (P->rank > r) return pr_inferf(ic, PRECIS_ERR_SHAPE, "P has a larger rank than Y");
    for (int i = 0; i < P->rank; i++) {
        int64_t pd = P->dims[P->rank - 1 - i], yd = d[r - 1 - i];
        if (pr_dim_known(pd) && pr_dim_known(yd) && pd != 1 && pd != yd)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "P does not broadcast to the Gathers' shape");
    }
    pr_infer_set_out(ic, 0, (pr_dtype)sdt, r, d);
    if (q) pr_infer_set_out(ic, 1, PRECIS_FLOAT8E4M3FN, r, d);
    return PRECIS_OK;
}
