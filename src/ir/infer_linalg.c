/* Shape and type inference for the 'linalg' family (see ops.inc): matrix
 * products, softmax, reductions, arg-reductions, CumSum, TopK. Einsum lives
 * in infer_einsum.c. */
#include <stdio.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/linalg.h"

/* ------------------------------------------------------------ helpers */

#define DT(x) (1u << (x))
#define DT_FLOATS (DT(PRECIS_FLOAT32) | DT(PRECIS_FLOAT16) | DT(PRECIS_FLOAT64) | DT(PRECIS_BFLOAT16))
#define DT_WIDE_INTS (DT(PRECIS_INT32) | DT(PRECIS_INT64) | DT(PRECIS_UINT32) | DT(PRECIS_UINT64))
#define DT_ALL_INTS                                                                                \
    (DT_WIDE_INTS | DT(PRECIS_INT8) | DT(PRECIS_UINT8) | DT(PRECIS_INT16) | DT(PRECIS_UINT16))
#define DT_Q8 (DT(PRECIS_INT8) | DT(PRECIS_UINT8))

static const char *k_in_names_ab[] = {"A", "B"};

/* Input i must be present; its dtype must be in `mask`. */
static precis_status need_in(pr_infer *ic, int i, const char *what, uint32_t mask) {
    if (!pr_in_present(ic, i))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "required input %d ('%s') is missing", i, what);
    pr_dtype dt = ic->in[i].dtype;
    if ((unsigned)dt > 31u || !(mask & DT(dt))) {
        char list[256];
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d ('%s') has dtype %s, expected one of: %s",
                         i, what, pr_dtype_name(dt), pr_dtype_mask_str(mask, list, sizeof list));
    }
    return PRECIS_OK;
}

static precis_status same_dtype(pr_infer *ic, int i, const char *wi, int j, const char *wj) {
    if (ic->in[i].dtype != ic->in[j].dtype)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "inputs '%s' (%s) and '%s' (%s) must have the same dtype",
                         wi, pr_dtype_name(ic->in[i].dtype), wj, pr_dtype_name(ic->in[j].dtype));
    return PRECIS_OK;
}

static const char *shp(pr_infer *ic, int i, char *buf, size_t cap) {
    return pr_shape_str(ic->g, ic->in[i].dtype, ic->in[i].rank, ic->in[i].dims, buf, cap);
}

/* Numpy broadcast of two dims. false when both are known and incompatible. */
static bool bcast_dim(int64_t x, int64_t y, int64_t *o) {
    if (x == 1) *o = y;
    else if (y == 1 || x == y) *o = x;
    else if (x >= 0 && y >= 0) return false;
    else if (x >= 0) *o = x;
    else if (y >= 0) *o = y;
    else *o = PR_DIM_UNKNOWN;
    return true;
}

/* Two dims that must be equal: fails only when both are known and differ. */
static bool dims_compatible(int64_t x, int64_t y) { return !(x >= 0 && y >= 0 && x != y); }

/* ------------------------------------------------------------ MatMul family */

/* Output shape of numpy matmul of inputs ia, ib into out (rank -1 if unknown). */
static precis_status matmul_shape(pr_infer *ic, int ia, int ib, pr_tinfo *out) {
    const pr_tinfo *a = &ic->in[ia], *b = &ic->in[ib];
    char s1[160], s2[160];
    out->rank = -1;
    if (a->rank < 0 || b->rank < 0) return PRECIS_OK;
    if (a->rank == 0 || b->rank == 0)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "operands must have rank >= 1, got %s and %s",
                         shp(ic, ia, s1, sizeof s1), shp(ic, ib, s2, sizeof s2));
    int64_t ad[PR_MAX_RANK + 1], bd[PR_MAX_RANK + 1];
    int ra = a->rank, rb = b->rank;
    if (ra == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
        ra = 2;
    } else {
        memcpy(ad, a->dims, (size_t)ra * sizeof *ad);
    }
    if (rb == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
        rb = 2;
    } else {
        memcpy(bd, b->dims, (size_t)rb * sizeof *bd);
    }
    if (!dims_compatible(ad[ra - 1], bd[rb - 2]))
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "inner dimensions differ: A is %s (K=%lld), B is %s (K=%lld)",
                         shp(ic, ia, s1, sizeof s1), (long long)ad[ra - 1],
                         shp(ic, ib, s2, sizeof s2), (long long)bd[rb - 2]);
    int nba = ra - 2, nbb = rb - 2, nb = nba > nbb ? nba : nbb;
    int r = 0;
    for (int d = 0; d < nb; d++) {
        int ja = d - (nb - nba), jb = d - (nb - nbb);
        int64_t x = ja >= 0 ? ad[ja] : 1, y = jb >= 0 ? bd[jb] : 1;
        if (!bcast_dim(x, y, &out->dims[r++]))
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "batch dimensions cannot be broadcast: A is %s, B is %s",
                             shp(ic, ia, s1, sizeof s1), shp(ic, ib, s2, sizeof s2));
    }
    if (a->rank > 1) out->dims[r++] = ad[ra - 2];
    if (b->rank > 1) out->dims[r++] = bd[rb - 1];
    out->rank = r;
    return PRECIS_OK;
}

precis_status pr_infer_MatMul(pr_infer *ic) {
    precis_status st;
    uint32_t ok = DT_FLOATS | DT_WIDE_INTS;
    for (int i = 0; i < 2; i++)
        if ((st = need_in(ic, i, k_in_names_ab[i], ok))) return st;
    if ((st = same_dtype(ic, 0, "A", 1, "B"))) return st;
    ic->out[0].dtype = ic->in[0].dtype;
    return matmul_shape(ic, 0, 1, &ic->out[0]);
}

precis_status pr_infer_Gemm(pr_infer *ic) {
    precis_status st;
    uint32_t ok = DT_FLOATS | DT_WIDE_INTS;
    char s1[160], s2[160];
    for (int i = 0; i < 2; i++)
        if ((st = need_in(ic, i, k_in_names_ab[i], ok))) return st;
    if ((st = same_dtype(ic, 0, "A", 1, "B"))) return st;
    bool has_c = pr_in_present(ic, 2);
    if (!has_c && ic->node->opset < 11)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "input C is required before opset 11 (node has opset %lld)",
                         (long long)ic->node->opset);
    if (has_c && (st = same_dtype(ic, 0, "A", 2, "C"))) return st;
    ic->out[0].dtype = ic->in[0].dtype;
    const pr_tinfo *a = &ic->in[0], *b = &ic->in[1];
    if (a->rank >= 0 && a->rank != 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "A must be 2-D, got %s", shp(ic, 0, s1, sizeof s1));
    if (b->rank >= 0 && b->rank != 2)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "B must be 2-D, got %s", shp(ic, 1, s1, sizeof s1));
    bool ta = pr_attr_int(ic->node, "transA", 0) != 0, tb = pr_attr_int(ic->node, "transB", 0) != 0;
    int64_t M = a->rank == 2 ? a->dims[ta ? 1 : 0] : PR_DIM_UNKNOWN;
    int64_t Ka = a->rank == 2 ? a->dims[ta ? 0 : 1] : PR_DIM_UNKNOWN;
    int64_t Kb = b->rank == 2 ? b->dims[tb ? 1 : 0] : PR_DIM_UNKNOWN;
    int64_t N = b->rank == 2 ? b->dims[tb ? 0 : 1] : PR_DIM_UNKNOWN;
    if (!dims_compatible(Ka, Kb))
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "inner dimensions differ: A%s is %s (K=%lld), B%s is %s (K=%lld)",
                         ta ? "^T" : "", shp(ic, 0, s1, sizeof s1), (long long)Ka, tb ? "^T" : "",
                         shp(ic, 1, s2, sizeof s2), (long long)Kb);
    if (has_c) {
        const pr_tinfo *c = &ic->in[2];
        if (c->rank > 2)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "C must have rank <= 2, got %s",
                             shp(ic, 2, s1, sizeof s1));
        int64_t mn[2] = {M, N};
        for (int d = 0; d < c->rank; d++) {
            int64_t cd = c->dims[d], od = mn[2 - c->rank + d];
            if (cd != 1 && !dims_compatible(cd, od))
                return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                 "C %s cannot be broadcast to the output [%lld,%lld]",
                                 shp(ic, 2, s1, sizeof s1), (long long)M, (long long)N);
        }
    }
    ic->out[0].rank = 2;
    ic->out[0].dims[0] = M;
    ic->out[0].dims[1] = N;
    return PRECIS_OK;
}

/* A zero point / scale input: scalar or 1-element (per tensor), or 1-D of
 * length `len` (per row of A / per column of B), or for N-D operands a
 * tensor of the operand's rank with a 1 in dimension `one_dim`. */
static precis_status check_qparam(pr_infer *ic, int i, const char *what, int op, int one_dim) {
    const pr_tinfo *q = &ic->in[i], *x = &ic->in[op];
    char s1[160], s2[160];
    if (q->rank < 0 || x->rank < 0) return PRECIS_OK;
    int64_t n = pr_numel(q->rank, q->dims);
    if (n == 1 || q->rank == 0) return PRECIS_OK;
    int r = x->rank;
    if (q->rank == 1 && r >= 2) {
        int64_t len = x->dims[one_dim == r - 1 ? r - 2 : r - 1];
        if (dims_compatible(q->dims[0], len)) return PRECIS_OK;
    }
    if (q->rank == r && r >= 2) {
        bool good = true;
        for (int d = 0; d < r; d++) {
            int64_t qd = q->dims[d];
            if (d == one_dim) good = good && (qd == 1 || qd < 0);
            else good = good && (qd == 1 || dims_compatible(qd, x->dims[d]));
        }
        if (good) return PRECIS_OK;
    }
    return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s %s does not match operand %s (expected a scalar, a "
                     "1-D per-%s vector, or the operand's shape with dim %d of size 1)",
                     what, shp(ic, i, s1, sizeof s1), shp(ic, op, s2, sizeof s2),
                     op == 0 ? "row" : "column", one_dim);
}

precis_status pr_infer_MatMulInteger(pr_infer *ic) {
    precis_status st;
    if ((st = need_in(ic, 0, "A", DT_Q8)) || (st = need_in(ic, 1, "B", DT_Q8))) return st;
    static const char *zn[2] = {"a_zero_point", "b_zero_point"};
    for (int j = 0; j < 2; j++) {
        if (!pr_in_present(ic, 2 + j)) continue;
        if ((st = same_dtype(ic, j, k_in_names_ab[j], 2 + j, zn[j]))) return st;
        int r = ic->in[j].rank;
        if ((st = check_qparam(ic, 2 + j, zn[j], j, j == 0 ? r - 1 : r - 2))) return st;
    }
    ic->out[0].dtype = PRECIS_INT32;
    return matmul_shape(ic, 0, 1, &ic->out[0]);
}

precis_status pr_infer_QLinearMatMul(pr_infer *ic) {
    precis_status st;
    static const char *names[8] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                                   "y_scale", "y_zero_point"};
    if ((st = need_in(ic, 0, names[0], DT_Q8)) || (st = need_in(ic, 3, names[3], DT_Q8))) return st;
    for (int i = 1; i < 8; i++) {
        if (i == 3) continue;
        bool scale = i == 1 || i == 4 || i == 6;
        if (!scale && !pr_in_present(ic, i)) continue; /* zero point 0, y dtype = a dtype */
        uint32_t sc = DT(PRECIS_FLOAT32) | DT(PRECIS_FLOAT16) | DT(PRECIS_BFLOAT16);
        if ((st = need_in(ic, i, names[i], scale ? sc : DT_Q8))) return st;
    }
    if (pr_in_present(ic, 2) && (st = same_dtype(ic, 0, "a", 2, "a_zero_point"))) return st;
    if (pr_in_present(ic, 5) && (st = same_dtype(ic, 3, "b", 5, "b_zero_point"))) return st;
    int ra = ic->in[0].rank, rb = ic->in[3].rank;
    if ((st = check_qparam(ic, 1, "a_scale", 0, ra - 1))) return st;
    if (pr_in_present(ic, 2) && (st = check_qparam(ic, 2, "a_zero_point", 0, ra - 1))) return st;
    if ((st = check_qparam(ic, 4, "b_scale", 3, rb - 2))) return st;
    if (pr_in_present(ic, 5) && (st = check_qparam(ic, 5, "b_zero_point", 3, rb - 2))) return st;
    for (int i = 6; i < 8; i++) {
        if (!pr_in_present(ic, i)) continue;
        int64_t n = pr_numel(ic->in[i].rank, ic->in[i].dims);
        if (n >= 0 && n != 1) {
            char s1[160];
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a scalar (per tensor), got %s",
                             names[i], shp(ic, i, s1, sizeof s1));
        }
    }
    ic->out[0].dtype = pr_in_present(ic, 7) ? ic->in[7].dtype : ic->in[0].dtype;
    return matmul_shape(ic, 0, 3, &ic->out[0]);
}

/* ------------------------------------------------------------ Softmax family */

static precis_status infer_softmax(pr_infer *ic) {
    precis_status st;
    if ((st = need_in(ic, 0, "input", DT_FLOATS))) return st;
    const pr_tinfo *x = &ic->in[0];
    if (x->rank >= 0) {
        int64_t axis = pr_attr_int(ic->node, "axis", ic->node->opset < 13 ? 1 : -1);
        int a, r = x->rank;
        /* opset < 13 coerces to 2-D at axis, which may equal rank */
        if (ic->node->opset < 13 && (axis == r || (r == 0 && axis == 0))) a = r;
        else if ((st = pr_infer_axis(ic, axis, r, &a))) return st;
        (void)a;
    }
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
}

precis_status pr_infer_Softmax(pr_infer *ic) { return infer_softmax(ic); }
precis_status pr_infer_LogSoftmax(pr_infer *ic) { return infer_softmax(ic); }
precis_status pr_infer_Hardmax(pr_infer *ic) { return infer_softmax(ic); }

/* ------------------------------------------------------------ reductions */

int pr_reduce_axes_from_input(const pr_node *n, pr_op op) {
    return (op == PR_OP_ReduceSum && n->opset >= 13) || n->opset >= 18;
}

/* Reduced-axis mask for rank r from the axes list (n entries, or n < 0 for
 * "not given"). Returns 0, or -1 with msg set. *noop set when nothing is
 * reduced because of noop_with_empty_axes. */
int pr_reduce_mask(const int64_t *axes, int n, int r, bool noop_empty, bool *mask, bool *noop,
                   char *msg, size_t cap) {
    *noop = false;
    for (int d = 0; d < r; d++) mask[d] = n <= 0 && !noop_empty;
    if (n <= 0) {
        *noop = noop_empty;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = axes[i];
        if (a < -r || a >= r) {
            snprintf(msg, cap, "axis %lld out of range for rank %d", (long long)a, r);
            return -1;
        }
        int d = (int)(a < 0 ? a + r : a);
        if (mask[d]) {
            snprintf(msg, cap, "axis %lld given twice", (long long)a);
            return -1;
        }
        mask[d] = true;
    }
    return 0;
}

static precis_status infer_reduce(pr_infer *ic, uint32_t types) {
    precis_status st;
    const pr_node *n = ic->node;
    if ((st = need_in(ic, 0, "data", types))) return st;
    const pr_tinfo *x = &ic->in[0];
    bool keep = pr_attr_int(n, "keepdims", 1) != 0;
    bool noop_empty = false;
    int64_t axes[PR_MAX_RANK];
    int na = -1; /* -1: not given */
    bool axes_unknown = false;
    int64_t axes_len = -1; /* number of axes when only the shape is known */
    ic->out[0].dtype = x->dtype;
    if (pr_reduce_axes_from_input(n, n->op)) {
        noop_empty = pr_attr_int(n, "noop_with_empty_axes", 0) != 0;
        if (pr_attr_find(n, "axes"))
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "attribute 'axes' is not allowed at opset %lld (axes are input 1)",
                             (long long)n->opset);
        if (pr_in_present(ic, 1)) {
            const pr_tinfo *t = &ic->in[1];
            if (t->dtype != PRECIS_INT64)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "axes must be int64, got %s",
                                 pr_dtype_name(t->dtype));
            if (t->rank > 1)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "axes must be 1-D, got rank %d", t->rank);
            int64_t cnt = pr_numel(t->rank, t->dims);
            if (cnt == 0) {
                na = 0;
            } else {
                int got = pr_infer_ints(ic, 1, axes, PR_MAX_RANK);
                if (got == -2) return ic->err->status;
                if (got < 0) {
                    axes_unknown = true;
                    axes_len = cnt;
                } else {
                    na = got;
                }
            }
        }
    } else {
        if (pr_in_present(ic, 1))
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "axes come from an attribute at opset %lld, not from an input",
                             (long long)n->opset);
        const int64_t *p;
        int cnt = pr_attr_ints(n, "axes", &p);
        if (cnt > PR_MAX_RANK)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "%d axes given, at most %d supported", cnt,
                             PR_MAX_RANK);
        if (cnt > 0) memcpy(axes, p, (size_t)cnt * sizeof *axes);
        na = cnt;
    }
    int r = x->rank;
    if (r < 0) {
        ic->out[0].rank = -1;
        if (!keep && !axes_unknown && na <= 0 && !noop_empty) ic->out[0].rank = 0;
        return PRECIS_OK;
    }
    if (axes_unknown) {
        if (keep) {
            ic->out[0].rank = r;
            for (int d = 0; d < r; d++) ic->out[0].dims[d] = x->dims[d] == 1 ? 1 : PR_DIM_UNKNOWN;
        } else if (axes_len > 0 && axes_len <= r) {
            ic->out[0].rank = r - (int)axes_len;
            for (int d = 0; d < ic->out[0].rank; d++) ic->out[0].dims[d] = PR_DIM_UNKNOWN;
        } else {
            ic->out[0].rank = -1;
        }
        return PRECIS_OK;
    }
    bool mask[PR_MAX_RANK], noop;
    char msg[128];
    if (pr_reduce_mask(axes, na, r, noop_empty, mask, &noop, msg, sizeof msg))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "%s", msg);
    int o = 0;
    for (int d = 0; d < r; d++) {
        if (!mask[d]) ic->out[0].dims[o++] = x->dims[d];
        else if (keep) ic->out[0].dims[o++] = 1;
    }
    ic->out[0].rank = o;
    return PRECIS_OK;
}

#define REDUCE_TYPES (DT_FLOATS | DT_ALL_INTS)
precis_status pr_infer_ReduceMean(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceSum(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceMax(pr_infer *ic) {
    return infer_reduce(ic, REDUCE_TYPES | DT(PRECIS_BOOL));
}
precis_status pr_infer_ReduceMin(pr_infer *ic) {
    return infer_reduce(ic, REDUCE_TYPES | DT(PRECIS_BOOL));
}
precis_status pr_infer_ReduceProd(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceL1(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceL2(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceLogSum(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceLogSumExp(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }
precis_status pr_infer_ReduceSumSquare(pr_infer *ic) { return infer_reduce(ic, REDUCE_TYPES); }

/* ------------------------------------------------------------ ArgMax / ArgMin */

static precis_status infer_arg(pr_infer *ic) {
    precis_status st;
    if ((st = need_in(ic, 0, "data", DT_FLOATS | DT_ALL_INTS))) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = PRECIS_INT64;
    ic->out[0].rank = -1;
    if (x->rank < 0) return PRECIS_OK;
    int a;
    if ((st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", 0), x->rank, &a))) return st;
    if (x->dims[a] == 0)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot take the arg-%s over an empty axis %d",
                         ic->node->op == PR_OP_ArgMax ? "max" : "min", a);
    bool keep = pr_attr_int(ic->node, "keepdims", 1) != 0;
    int o = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d != a) ic->out[0].dims[o++] = x->dims[d];
        else if (keep) ic->out[0].dims[o++] = 1;
    }
    ic->out[0].rank = o;
    return PRECIS_OK;
}

precis_status pr_infer_ArgMax(pr_infer *ic) { return infer_arg(ic); }
precis_status pr_infer_ArgMin(pr_infer *ic) { return infer_arg(ic); }

/* ------------------------------------------------------------ CumSum, TopK */

precis_status pr_infer_CumSum(pr_infer *ic) {
    precis_status st;
    if ((st = need_in(ic, 0, "x", DT_FLOATS | DT_WIDE_INTS))) return st;
    if ((st = need_in(ic, 1, "axis", DT(PRECIS_INT32) | DT(PRECIS_INT64)))) return st;
    const pr_tinfo *ax = &ic->in[1];
    if (ax->rank > 1 || (ax->rank == 1 && ax->dims[0] >= 0 && ax->dims[0] != 1))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "axis must be a scalar, got rank %d", ax->rank);
    int64_t v;
    int got = pr_infer_ints(ic, 1, &v, 1);
    if (got == -2) return ic->err->status;
    if (got == 1 && ic->in[0].rank >= 0) {
        int a;
        if ((st = pr_infer_axis(ic, v, ic->in[0].rank, &a))) return st;
    }
    pr_infer_copy(ic, 0, 0);
    return PRECIS_OK;
}

precis_status pr_infer_TopK(pr_infer *ic) {
    precis_status st;
    if ((st = need_in(ic, 0, "X", DT_FLOATS | DT_ALL_INTS))) return st;
    const pr_tinfo *x = &ic->in[0];
    int64_t k = -1;
    if (ic->node->opset < 10) {
        const pr_attr *ka = pr_attr_find(ic->node, "k");
        if (!ka || ka->type != PR_ATTR_INT)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'k' is required at opset %lld",
                             (long long)ic->node->opset);
        k = ka->i;
    } else {
        if ((st = need_in(ic, 1, "K", DT(PRECIS_INT64)))) return st;
        const pr_tinfo *kt = &ic->in[1];
        int64_t kn = pr_numel(kt->rank, kt->dims);
        if (kt->rank > 1 || (kn >= 0 && kn != 1))
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "K must be a 1-D tensor of one element");
        int got = pr_infer_ints(ic, 1, &k, 1);
        if (got == -2) return ic->err->status;
        if (got < 0) k = -1;
        else if (k < 0)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "k must be >= 0, got %lld", (long long)k);
    }
    if (ic->node->opset < 10 && k < 0)
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "k must be >= 0, got %lld", (long long)k);
    ic->out[0].dtype = x->dtype;
    if (ic->n_out > 1) ic->out[1].dtype = PRECIS_INT64;
    if (x->rank < 0) return PRECIS_OK;
    if (x->rank == 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "X must have rank >= 1");
    int a;
    if ((st = pr_infer_axis(ic, pr_attr_int(ic->node, "axis", -1), x->rank, &a))) return st;
    if (k >= 0 && x->dims[a] >= 0 && k > x->dims[a])
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "k = %lld is larger than axis %d of size %lld",
                         (long long)k, a, (long long)x->dims[a]);
    for (int o = 0; o < ic->n_out && o < 2; o++) {
        ic->out[o].rank = x->rank;
        memcpy(ic->out[o].dims, x->dims, (size_t)x->rank * sizeof(int64_t));
        ic->out[o].dims[a] = k >= 0 ? k : PR_DIM_UNKNOWN;
    }
    return PRECIS_OK;
}
