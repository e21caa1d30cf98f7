/* Symbolic shape values: the static pass's view of small int64 "shape
 * tensors" whose entries are known sizes or symbolic dims (batch, seq).
 *
 * Exporters compute reshape targets inside the graph
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape). Constant folding cannot
 * evaluate that chain when the input has a symbolic batch dim, so this pass
 * tracks the values entry by entry (known >= 0, symbolic <= -2, unknown -1)
 * and lets Reshape, Expand and ConstantOfShape keep symbolic output dims. */
#include <string.h>

#include "passes/sym_values.h"

static bool entry_ok(int64_t v) { return v >= 0 || pr_dim_is_sym(v); }

/* Values of tensor t as entries; false when nothing is known. */
static bool get(const pr_graph *g, const pr_symval *sv, int t, pr_symval *out) {
    if (t < 0) return false;
    if (sv[t].n >= 0) {
        *out = sv[t];
        return true;
    }
    const pr_tensor *x = &g->tensors[t];
    if (!(x->flags & (PR_T_INIT | PR_T_FOLDED)) || !x->data || x->rank > 1) return false;
    if (x->dtype != PRECIS_INT64 && x->dtype != PRECIS_INT32) return false;
    int64_t n = pr_numel(x->rank, x->dims);
    if (n < 0 || n > PR_MAX_RANK) return false;
    out->n = (int)n;
    out->scalar = x->rank == 0;
    for (int64_t i = 0; i < n; i++) out->v[i] = pr_load_i64(x->data, x->dtype, i);
    return true;
}

static int64_t norm_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

void pr_symval_node(const pr_graph *g, const pr_node *n, pr_symval *sv) {
    int o = pr_node_out(n, 0);
    if (o < 0 || g->tensors[o].dtype != PRECIS_INT64) return;
    pr_symval a, b, r = {.n = -1};
    switch (n->op) {
    case PR_OP_Shape: {
        const pr_tensor *x = n->inputs[0] >= 0 ? &g->tensors[n->inputs[0]] : NULL;
        if (!x || x->rank < 0) return;
        int64_t rk = x->rank, s = pr_attr_int(n, "start", 0), e = pr_attr_int(n, "end", rk);
        if (n->opset < 15) s = 0, e = rk;
        s = norm_index(s, rk), e = norm_index(e, rk);
        s = s < 0 ? 0 : s > rk ? rk : s;
        e = e < 0 ? 0 : e > rk ? rk : e;
        r.n = 0;
        for (int64_t i = s; i < e; i++) r.v[r.n++] = x->dims[i];
        break;
    }
    case PR_OP_Identity:
    case PR_OP_Cast:
        if (!get(g, sv, n->inputs[0], &r)) return;
        break;
    case PR_OP_Unsqueeze:
        if (!get(g, sv, n->inputs[0], &r) || !r.scalar) return;
        r.scalar = false; /* scalar -> [1] */
        break;
    case PR_OP_Squeeze:
        if (!get(g, sv, n->inputs[0], &r) || r.scalar || r.n != 1) return;
        r.scalar = true;
        break;
    case PR_OP_Gather: {
        if (pr_attr_int(n, "axis", 0) != 0 || !get(g, sv, n->inputs[0], &a) ||
            !get(g, sv, pr_node_in(n, 1), &b) || a.scalar)
            return;
        r.n = b.n;
        r.scalar = b.scalar;
        for (int i = 0; i < b.n; i++) {
            int64_t k = norm_index(b.v[i], a.n);
            if (k < 0 || k >= a.n) return;
            r.v[i] = a.v[k];
        }
        break;
    }
    case PR_OP_Concat:
        r.n = 0;
        for (int i = 0; i < n->n_inputs; i++) {
            if (!get(g, sv, n->inputs[i], &a) || a.scalar || r.n + a.n > PR_MAX_RANK) return;
            memcpy(r.v + r.n, a.v, (size_t)a.n * sizeof(int64_t));
            r.n += a.n;
        }
        break;
    case PR_OP_Slice: {
        if (n->opset < 10 || !get(g, sv, n->inputs[0], &a) || a.scalar) return;
        pr_symval st, en;
        if (!get(g, sv, pr_node_in(n, 1), &st) || !get(g, sv, pr_node_in(n, 2), &en)) return;
        /* one axis (0), step 1: the form shape computations use */
        if (st.n != 1 || en.n != 1 || pr_node_in(n, 4) >= 0) return;
        if (pr_node_in(n, 3) >= 0) {
            pr_symval ax;
            if (!get(g, sv, pr_node_in(n, 3), &ax) || ax.n != 1 || (ax.v[0] != 0 && ax.v[0] != -1))
                return;
        }
        int64_t s = norm_index(st.v[0], a.n), e = en.v[0] > a.n ? a.n : norm_index(en.v[0], a.n);
        s = s < 0 ? 0 : s > a.n ? a.n : s;
        e = e < 0 ? 0 : e > a.n ? a.n : e;
        r.n = 0;
        for (int64_t i = s; i < e; i++) r.v[r.n++] = a.v[i];
        break;
    }
    default: return;
    }
    if (r.n < 0) return;
    for (int i = 0; i < r.n; i++)
        if (!entry_ok(r.v[i])) r.v[i] = PR_DIM_UNKNOWN;
    sv[o] = r;
}

/* Fill output dims that inference left unknown from the shape input's
 * symbolic values. */
void pr_symval_refine(const pr_graph *g, const pr_node *n, const pr_symval *sv, pr_tensor *out) {
    pr_symval s;
    int shape_in = n->op == PR_OP_ConstantOfShape ? 0 : 1;
    if (n->op != PR_OP_Reshape && n->op != PR_OP_Expand && n->op != PR_OP_ConstantOfShape) return;
    if (!get(g, sv, pr_node_in(n, shape_in), &s) || s.scalar || s.n != out->rank) return;
    const pr_tensor *x = n->op == PR_OP_ConstantOfShape ? NULL : &g->tensors[n->inputs[0]];
    bool allowzero = pr_attr_int(n, "allowzero", 0) != 0;
    for (int i = 0; i < s.n; i++) {
        if (pr_dim_known(out->dims[i])) continue;
        int64_t v = s.v[i];
        if (n->op == PR_OP_Reshape && v == 0 && !allowzero && x && i < x->rank) v = x->dims[i];
        if (n->op == PR_OP_Expand && v == 1 && x && x->rank >= 0) {
            int j = i - (s.n - x->rank); /* broadcast: 1 keeps the input dim */
            v = j >= 0 ? x->dims[j] : 1;
        }
        if (pr_dim_known(v) && (n->op != PR_OP_Reshape || v > 0)) out->dims[i] = v;
        else if (pr_dim_is_sym(v)) out->dims[i] = v;
    }
}
