/* Shape and type inference for the 'elem' family (see ops.inc): elementwise
 * unary/binary/variadic ops, comparisons, logic, casts and (de)quantization.
 *
 * Type constraints are those of the newest ONNX version <= 17 of each op (the
 * kernels accept them for every older version too); semantics that changed
 * between versions (legacy broadcast before opset 7, Clip's attribute form
 * before 11, Cast's string 'to' before 6, Dropout's inputs from 12) follow
 * node->opset.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ir/infer.h"

/* dtype sets as bit masks over pr_dtype */
#define M_(dt) (1u << (dt))
#define T_F (M_(PRECIS_FLOAT32) | M_(PRECIS_FLOAT64) | M_(PRECIS_FLOAT16) | M_(PRECIS_BFLOAT16))
#define T_S (M_(PRECIS_INT8) | M_(PRECIS_INT16) | M_(PRECIS_INT32) | M_(PRECIS_INT64))
#define T_U (M_(PRECIS_UINT8) | M_(PRECIS_UINT16) | M_(PRECIS_UINT32) | M_(PRECIS_UINT64))
#define T_I (T_S | T_U)
#define T_N (T_F | T_I)
#define T_B M_(PRECIS_BOOL)
#define T_ALL (T_N | T_B)

static bool in_mask(pr_dtype dt, uint32_t m) {
    return (int)dt > 0 && (int)dt <= PR_DTYPE_MAX && ((m >> dt) & 1);
}

/* Input i given by the node but its type not yet known (static pass after an
 * unsupported op): nothing to check; the outputs stay partly unknown. */
static bool in_unknown(const pr_infer *ic, int i) {
    return i < ic->n_in && ic->in[i].dtype == PRECIS_UNDEFINED && i < ic->node->n_inputs &&
           ic->node->inputs[i] >= 0;
}

/* Input i must be present with a dtype in m. */
static precis_status need(pr_infer *ic, int i, uint32_t m) {
    if (in_unknown(ic, i)) return PRECIS_OK;
    if (!pr_in_present(ic, i))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d is missing or has an unknown type", i);
    pr_dtype dt = ic->in[i].dtype;
    if (in_mask(dt, m)) return PRECIS_OK;
    if (pr_dtype_size(dt) == 0)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                         "input %d has dtype %s, which precis does not support", i,
                         pr_dtype_name(dt));
    char buf[256];
    return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d has dtype %s; expected one of: %s", i,
                     pr_dtype_name(dt), pr_dtype_mask_str(m, buf, sizeof buf));
}

/* Inputs i and j (both present) must have the same dtype. */
static precis_status same(pr_infer *ic, int i, int j) {
    if (ic->in[i].dtype == ic->in[j].dtype || in_unknown(ic, i) || in_unknown(ic, j))
        return PRECIS_OK;
    return pr_inferf(ic, PRECIS_ERR_SHAPE,
                     "input %d has dtype %s but input %d has dtype %s; they must be the same", j,
                     pr_dtype_name(ic->in[j].dtype), i, pr_dtype_name(ic->in[i].dtype));
}

/* Optional input i, if present, must hold one element (a scalar). */
static precis_status scalar_in(pr_infer *ic, int i, const char *what) {
    if (!pr_in_present(ic, i)) return PRECIS_OK;
    int64_t n = pr_infer_in_numel(ic, i);
    if (n >= 0 && n != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s (input %d) must be a scalar, has %lld elements",
                         what, i, (long long)n);
    return PRECIS_OK;
}

/* ------------------------------------------------------------------ unary */

static precis_status unary(pr_infer *ic, uint32_t m, pr_dtype out) {
    precis_status st = need(ic, 0, m);
    if (st) return st;
    pr_infer_copy(ic, 0, 0);
    if (out != PRECIS_UNDEFINED) ic->out[0].dtype = out;
    return PRECIS_OK;
}

#define UNARY(op, mask)                                                                            \
    precis_status pr_infer_##op(pr_infer *ic) { return unary(ic, mask, PRECIS_UNDEFINED); }
UNARY(Sqrt, T_F)
UNARY(Exp, T_F)
UNARY(Log, T_F)
UNARY(Neg, T_F | T_S)
UNARY(Abs, T_N)
UNARY(Reciprocal, T_F)
UNARY(Floor, T_F)
UNARY(Ceil, T_F)
UNARY(Round, T_F)
UNARY(Sign, T_N)
UNARY(Erf, T_N)
UNARY(Sin, T_F)
UNARY(Cos, T_F)
UNARY(Tan, T_F)
UNARY(Asin, T_F)
UNARY(Acos, T_F)
UNARY(Atan, T_F)
UNARY(Sinh, T_F)
UNARY(Cosh, T_F)
UNARY(Asinh, T_F)
UNARY(Acosh, T_F)
UNARY(Atanh, T_F)
UNARY(Tanh, T_F)
UNARY(Sigmoid, T_F)
UNARY(Relu, T_F | T_S)
UNARY(LeakyRelu, T_F)
UNARY(Elu, T_F)
UNARY(Selu, T_F)
UNARY(Celu, T_F)
UNARY(Softplus, T_F)
UNARY(Softsign, T_F)
UNARY(ThresholdedRelu, T_F)
UNARY(Shrink, T_N)
UNARY(Mish, T_F)
UNARY(HardSigmoid, T_F)
UNARY(HardSwish, T_F)
UNARY(Not, T_B)
UNARY(Identity, T_ALL)
#undef UNARY

precis_status pr_infer_Gelu(pr_infer *ic) {
    const char *a = pr_attr_str(ic->node, "approximate", "none");
    if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "approximate must be 'none' or 'tanh', got '%s'",
                         a);
    return unary(ic, T_F, PRECIS_UNDEFINED);
}

precis_status pr_infer_IsNaN(pr_infer *ic) { return unary(ic, T_F, PRECIS_BOOL); }
precis_status pr_infer_IsInf(pr_infer *ic) { return unary(ic, T_F, PRECIS_BOOL); }

/* ----------------------------------------------------------------- binary */

/* Opset < 7 broadcasting: with broadcast=1, B is aligned with A at 'axis'
 * (default: suffix) and the output has A's shape; with broadcast=0 the
 * shapes must be equal. */
static precis_status legacy_shape(pr_infer *ic, int *rank, int64_t *dims) {
    const pr_tinfo *a = &ic->in[0], *b = &ic->in[1];
    *rank = a->rank;
    if (a->rank > 0) memcpy(dims, a->dims, (size_t)a->rank * sizeof(int64_t));
    if (a->rank < 0 || b->rank < 0) return PRECIS_OK;
    int64_t axis = a->rank - b->rank;
    if (pr_attr_int(ic->node, "broadcast", 0)) {
        const pr_attr *ax = pr_attr_find(ic->node, "axis");
        if (ax) axis = ax->i < 0 ? ax->i + a->rank : ax->i;
    } else if (b->rank != a->rank) {
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "inputs have ranks %d and %d but broadcast=0 (opset %lld)", a->rank,
                         b->rank, (long long)ic->node->opset);
    }
    if (axis < 0 || axis + b->rank > a->rank)
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "cannot broadcast input 1 of rank %d at axis %lld to rank %d", b->rank,
                         (long long)axis, a->rank);
    for (int j = 0; j < b->rank; j++) {
        int64_t ad = a->dims[axis + j], bd = b->dims[j];
        if (pr_dim_known(ad) && pr_dim_known(bd) && ad != bd && bd != 1)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "input 1 dim %d (%lld) does not match input 0 dim %lld (%lld)", j,
                             (long long)bd, (long long)(axis + j), (long long)ad);
    }
    return PRECIS_OK;
}

/* Two inputs with dtypes in m (equal dtypes unless mixed), broadcast shape;
 * output dtype `out` or, if undefined, the input dtype. */
static precis_status binary_ex(pr_infer *ic, uint32_t m0, uint32_t m1, bool mixed, pr_dtype out,
                               bool legacy) {
    precis_status st;
    if ((st = need(ic, 0, m0)) || (st = need(ic, 1, m1))) return st;
    if (!mixed && (st = same(ic, 0, 1))) return st;
    int rank;
    int64_t dims[PR_MAX_RANK];
    if (legacy && ic->node->opset < 7)
        st = legacy_shape(ic, &rank, dims);
    else
        st = pr_infer_broadcast(ic, 2, (const int[]){0, 1}, &rank, dims);
    if (st) return st;
    pr_infer_set_out(ic, 0, out != PRECIS_UNDEFINED ? out : ic->in[0].dtype, rank, dims);
    return PRECIS_OK;
}

static precis_status binary(pr_infer *ic, uint32_t m, pr_dtype out, bool legacy) {
    return binary_ex(ic, m, m, false, out, legacy);
}

precis_status pr_infer_Add(pr_infer *ic) { return binary(ic, T_N, PRECIS_UNDEFINED, true); }
precis_status pr_infer_Sub(pr_infer *ic) { return binary(ic, T_N, PRECIS_UNDEFINED, true); }
precis_status pr_infer_Mul(pr_infer *ic) { return binary(ic, T_N, PRECIS_UNDEFINED, true); }
precis_status pr_infer_Div(pr_infer *ic) { return binary(ic, T_N, PRECIS_UNDEFINED, true); }
precis_status pr_infer_PRelu(pr_infer *ic) {
    /* Before opset 7 a 1-D slope of size C applies per channel (axis 1). */
    const pr_tinfo *x = &ic->in[0], *s = &ic->in[1];
    if (ic->node->opset < 7 && x->rank >= 2 && s->rank == 1 && s->dims[0] == x->dims[1] &&
        s->dims[0] != 1) {
        precis_status st;
        if ((st = need(ic, 0, T_N)) || (st = same(ic, 0, 1))) return st;
        pr_infer_copy(ic, 0, 0);
        return PRECIS_OK;
    }
    return binary(ic, T_N, PRECIS_UNDEFINED, false);
}
precis_status pr_infer_And(pr_infer *ic) { return binary(ic, T_B, PRECIS_BOOL, true); }
precis_status pr_infer_Or(pr_infer *ic) { return binary(ic, T_B, PRECIS_BOOL, true); }
precis_status pr_infer_Xor(pr_infer *ic) { return binary(ic, T_B, PRECIS_BOOL, true); }
precis_status pr_infer_Equal(pr_infer *ic) { return binary(ic, T_ALL, PRECIS_BOOL, true); }
precis_status pr_infer_Less(pr_infer *ic) { return binary(ic, T_N, PRECIS_BOOL, true); }
precis_status pr_infer_Greater(pr_infer *ic) { return binary(ic, T_N, PRECIS_BOOL, true); }
precis_status pr_infer_LessOrEqual(pr_infer *ic) { return binary(ic, T_N, PRECIS_BOOL, false); }
precis_status pr_infer_GreaterOrEqual(pr_infer *ic) {
    return binary(ic, T_N, PRECIS_BOOL, false);
}

/* Pow-12+: base and exponent types are independent; output has the base type. */
precis_status pr_infer_Pow(pr_infer *ic) {
    return binary_ex(ic, T_N, T_N, true, PRECIS_UNDEFINED, true);
}

precis_status pr_infer_Mod(pr_infer *ic) {
    int64_t f = pr_attr_int(ic->node, "fmod", 0);
    if (f != 0 && f != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "fmod must be 0 or 1, got %lld", (long long)f);
    precis_status st = binary(ic, T_N, PRECIS_UNDEFINED, false);
    if (st) return st;
    if (f == 0 && in_mask(ic->in[0].dtype, T_F))
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "fmod must be 1 for floating-point inputs (%s), got 0",
                         pr_dtype_name(ic->in[0].dtype));
    return PRECIS_OK;
}

precis_status pr_infer_BitShift(pr_infer *ic) {
    const char *d = pr_attr_str(ic->node, "direction", "");
    if (strcmp(d, "LEFT") != 0 && strcmp(d, "RIGHT") != 0)
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "direction must be \"LEFT\" or \"RIGHT\", got \"%s\"", d);
    return binary(ic, T_U, PRECIS_UNDEFINED, false);
}

/* --------------------------------------------------------------- variadic */

static precis_status variadic(pr_infer *ic, uint32_t m) {
    precis_status st;
    if (ic->n_in < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "needs at least one input");
    int idx[64];
    if (ic->n_in > 64) return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "more than 64 inputs");
    for (int i = 0; i < ic->n_in; i++) {
        if ((st = need(ic, i, m)) || (st = same(ic, 0, i))) return st;
        idx[i] = i;
    }
    int rank;
    int64_t dims[PR_MAX_RANK];
    if ((st = pr_infer_broadcast(ic, ic->n_in, idx, &rank, dims))) return st;
    pr_infer_set_out(ic, 0, ic->in[0].dtype, rank, dims);
    return PRECIS_OK;
}

precis_status pr_infer_Min(pr_infer *ic) { return variadic(ic, T_N); }
precis_status pr_infer_Max(pr_infer *ic) { return variadic(ic, T_N); }
precis_status pr_infer_Sum(pr_infer *ic) { return variadic(ic, T_F); }
precis_status pr_infer_Mean(pr_infer *ic) { return variadic(ic, T_F); }

/* ------------------------------------------------------------ Clip, Where */

precis_status pr_infer_Clip(pr_infer *ic) {
    precis_status st;
    if (ic->node->opset < 11) return unary(ic, T_F, PRECIS_UNDEFINED);
    if ((st = need(ic, 0, T_N))) return st;
    for (int i = 1; i <= 2; i++) {
        if (!pr_in_present(ic, i)) continue;
        if ((st = same(ic, 0, i)) || (st = scalar_in(ic, i, i == 1 ? "min" : "max"))) return st;
    }
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
}

precis_status pr_infer_Where(pr_infer *ic) {
    precis_status st;
    if ((st = need(ic, 0, T_B)) || (st = need(ic, 1, T_ALL)) || (st = need(ic, 2, T_ALL)) ||
        (st = same(ic, 1, 2)))
        return st;
    int rank;
    int64_t dims[PR_MAX_RANK];
    if ((st = pr_infer_broadcast(ic, 3, (const int[]){0, 1, 2}, &rank, dims))) return st;
    pr_infer_set_out(ic, 0, ic->in[1].dtype, rank, dims);
    return PRECIS_OK;
}

/* ------------------------------------------------------------------ casts */

static const char *const k_type_names[] = {
    [PRECIS_FLOAT32] = "FLOAT",   [PRECIS_UINT8] = "UINT8",    [PRECIS_INT8] = "INT8",
    [PRECIS_UINT16] = "UINT16",   [PRECIS_INT16] = "INT16",    [PRECIS_INT32] = "INT32",
    [PRECIS_INT64] = "INT64",     [PRECIS_STRING] = "STRING",  [PRECIS_BOOL] = "BOOL",
    [PRECIS_FLOAT16] = "FLOAT16", [PRECIS_FLOAT64] = "DOUBLE", [PRECIS_UINT32] = "UINT32",
    [PRECIS_UINT64] = "UINT64",   [14] = "COMPLEX64",          [15] = "COMPLEX128",
    [PRECIS_BFLOAT16] = "BFLOAT16",
};

precis_status pr_infer_Cast(pr_infer *ic) {
    const pr_attr *a = pr_attr_find(ic->node, "to");
    if (!a) return pr_inferf(ic, PRECIS_ERR_SHAPE, "missing attribute 'to'");
    int64_t to = -1;
    if (a->type == PR_ATTR_STRING) { /* Cast-1: the type's name */
        for (int i = 1; i < (int)(sizeof k_type_names / sizeof *k_type_names); i++)
            if (k_type_names[i] && a->s && strcasecmp(a->s, k_type_names[i]) == 0) to = i;
        if (to < 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "unknown type name to='%s'", a->s);
    } else {
        to = a->i;
    }
    if (to == PRECIS_STRING)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                         "Cast to string is not supported: precis has no string tensors");
    if (to < 1 || to > PR_DTYPE_MAX || pr_dtype_size((pr_dtype)to) == 0)
        return pr_inferf(ic, to >= 1 && to <= 23 ? PRECIS_ERR_UNSUPPORTED : PRECIS_ERR_SHAPE,
                         "cannot cast to ONNX data type %lld: %s", (long long)to,
                         to >= 1 && to <= PR_DTYPE_MAX ? "not a supported fixed-size type"
                                                       : "unknown or unsupported type");
    return unary(ic, T_ALL, (pr_dtype)to);
}

precis_status pr_infer_CastLike(pr_infer *ic) {
    precis_status st = need(ic, 1, T_ALL);
    if (st) return st;
    return unary(ic, T_ALL, ic->in[1].dtype);
}

/* ---------------------------------------------------------------- Dropout */

precis_status pr_infer_Dropout(pr_infer *ic) {
    precis_status st = unary(ic, T_F, PRECIS_UNDEFINED);
    if (st) return st;
    if (ic->node->opset >= 12) {
        if (pr_in_present(ic, 1) && ((st = need(ic, 1, T_F)) || (st = scalar_in(ic, 1, "ratio"))))
            return st;
        if (pr_in_present(ic, 2) &&
            ((st = need(ic, 2, T_B)) || (st = scalar_in(ic, 2, "training_mode"))))
            return st;
        const pr_tinfo *r = &ic->in[1], *t = &ic->in[2];
        if (pr_in_present(ic, 2) && t->value && *(const uint8_t *)t->value) {
            bool given = pr_node_in(ic->node, 1) >= 0;
            bool known = !given || (pr_in_present(ic, 1) && r->value);
            double ratio = given && known ? pr_load_f64(r->value, r->dtype, 0) : 0.5;
            if (known && ratio != 0)
                return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED,
                                 "training_mode=true with ratio %g drops elements at random; "
                                 "precis runs inference only",
                                 ratio);
        }
    }
    /* mask: bool from opset 10, the input's type before */
    pr_infer_set_out(ic, 1, ic->node->opset >= 10 ? PRECIS_BOOL : ic->in[0].dtype, ic->in[0].rank,
            ic->in[0].dims);
    return PRECIS_OK;
}

/* ----------------------------------------------------------- quantization */

#define T_Q                                                                                        \
    (M_(PRECIS_UINT8) | M_(PRECIS_INT8) | M_(PRECIS_UINT16) | M_(PRECIS_INT16) |                   \
     M_(PRECIS_FLOAT8E4M3FN))
#define T_QS (M_(PRECIS_FLOAT32) | M_(PRECIS_FLOAT16) | M_(PRECIS_BFLOAT16))

/* Scale (input 1) and zero point (input 2) against x (input 0): per tensor
 * (one element) or, from opset 13, per axis (1-D of x.dims[axis]). */
static precis_status qparams(pr_infer *ic) {
    precis_status st;
    const pr_tinfo *x = &ic->in[0], *s = &ic->in[1], *z = &ic->in[2];
    int64_t ns = pr_numel(s->rank, s->dims);
    if (pr_in_present(ic, 2) && s->rank >= 0 && z->rank >= 0) {
        bool eq = s->rank == z->rank;
        for (int d = 0; eq && d < s->rank; d++)
            eq = !pr_dim_known(s->dims[d]) || !pr_dim_known(z->dims[d]) || s->dims[d] == z->dims[d];
        if (!eq && !(ns == 1 && pr_numel(z->rank, z->dims) == 1))
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "zero point shape differs from scale shape");
    }
    if (s->rank < 0 || (s->rank <= 1 && ns == 1)) return PRECIS_OK; /* per tensor */
    if (ic->node->opset < 13 || s->rank != 1)
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "scale must be a scalar%s, has rank %d",
                         ic->node->opset < 13 ? " before opset 13" : " or 1-D", s->rank);
    if (x->rank < 0) return PRECIS_OK;
    int axis;
    if ((st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", 1), x->rank, &axis))) return st;
    if (pr_dim_known(x->dims[axis]) && pr_dim_known(s->dims[0]) && x->dims[axis] != s->dims[0])
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "per-axis scale has %lld elements but input dim %d is %lld",
                         (long long)s->dims[0], axis, (long long)x->dims[axis]);
    return PRECIS_OK;
}

precis_status pr_infer_QuantizeLinear(pr_infer *ic) {
    precis_status st;
    if ((st = need(ic, 0, T_QS | M_(PRECIS_INT32))) || (st = need(ic, 1, T_QS))) return st;
    if (pr_in_present(ic, 2) && (st = need(ic, 2, T_Q))) return st;
    if ((st = qparams(ic))) return st;
    pr_infer_copy(ic, 0, 0);
    ic->out[0].dtype = pr_node_in(ic->node, 2) >= 0 ? ic->in[2].dtype : PRECIS_UINT8;
    return PRECIS_OK;
}

precis_status pr_infer_DequantizeLinear(pr_infer *ic) {
    precis_status st;
    if ((st = need(ic, 0, T_Q | M_(PRECIS_INT32))) || (st = need(ic, 1, T_QS))) return st;
    if (pr_in_present(ic, 2) && (st = same(ic, 0, 2))) return st;
    if ((st = qparams(ic))) return st;
    pr_infer_copy(ic, 0, 0);
    ic->out[0].dtype = ic->in[1].dtype;
    return PRECIS_OK;
}

precis_status pr_infer_DynamicQuantizeLinear(pr_infer *ic) {
    precis_status st = unary(ic, M_(PRECIS_FLOAT32), PRECIS_UINT8);
    if (st) return st;
    pr_infer_set_out(ic, 1, PRECIS_FLOAT32, 0, NULL);
    pr_infer_set_out(ic, 2, PRECIS_UINT8, 0, NULL);
    return PRECIS_OK;
}
