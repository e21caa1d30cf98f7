/* fold_attention_mask (cuda plans, from fold_attention_heads): an attention
 * mask built as the broadcast of a key-padding row is kept as that row.
 *
 *   M [B,1,1,S] (bool) -> And(T, M) [-> Expand(shape)] -> C [B,1,S,S]
 *   -> Where(C, X, Y) -> W [B,1,S,S] -> Attention mask (every reader)
 *   with T a constant all-true bool (HF masking_utils' bidirectional mask:
 *   q_idx >= 0, folded to an initializer for static shapes)
 *   => Where(M, X, Y) -> W [B,1,1,S] -> Attention mask
 *
 * And with an all-true T is M broadcast, Expand only broadcasts and Where is
 * element-wise, so W's elements are those of the new W broadcast back; the
 * Attention broadcasts its mask as Add does (ops.inc), so only the readers'
 * view changes: none but Attention mask inputs may read W, the new W keeps
 * W's rank and its batch dims (all but the last two), and its last two dims
 * are W's or 1. Static shapes only (every dim known). BERT / MiniLM b64 ran
 * the And and the Where over [B,1,S,S] (1 M elements: 12.9 + 8.0 us under
 * ncu), and the flash kernel staged [B,1,S,S] mask tiles; now 8 K elements
 * and a mask row per batch (rs 0: cuda_attention.c's broadcast-rows load).
 * PRECIS_CUDA_MASK_ROW=0 keeps the [B,1,S,S] mask. The dead And / Expand go
 * when nothing else reads them (pr_fold_attention_heads compacts after).
 * The same entry point folds Add(Add(a, b), c) -> Sum(a, b, c) (fold_add3:
 * the embeddings' word + token type + position sum as one cu.sum3 launch;
 * PRECIS_CUDA_SUM3=0 keeps the Adds).
 * And the identities in HF's key-padding chain in front of that Where
 * (fold_mask_ids): Cast(int64 -> bool) -> Flatten [B*S,1] -> Gather(axis 0,
 * I) with I the constant b * S + s -> Reshape -> Cast(bool -> bool) -> Where.
 * A Gather along axis 0 whose constant indices are 0, 1, ..., n - 1 with n
 * the data's first dim is a Reshape to its output shape (the same elements in
 * the same order), a Cast to the dtype it reads (same layout, same dims) an
 * Identity: both become aliases in cuda plans (cuda_move.c) instead of two
 * launches on [B,S]. PRECIS_CUDA_MASK_IDS=0 keeps them (A/B). */
#include <stdlib.h>
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass_plan.h"

static bool all_true(const pr_graph *g, int t) {
    if (!pr_is_init(g, t) || g->tensors[t].dtype != PRECIS_BOOL) return false;
    const unsigned char *p = g->tensors[t].data;
    int64_t n = pr_numel(g->tensors[t].rank, g->tensors[t].dims);
    if (n < 0 || (size_t)n > g->tensors[t].nbytes) return false;
    for (int64_t i = 0; i < n; i++)
        if (!p[i]) return false;
    return true;
}

/* ns (rank r) = the broadcast of the known tensors ts right-aligned at rank r;
 * false if one is unknown, longer than r, or they do not broadcast. */
static bool bcast_shape(const pr_graph *g, const int *ts, int nt, int r, int64_t *ns) {
    for (int d = 0; d < r; d++) ns[d] = 1;
    for (int i = 0; i < nt; i++) {
        const pr_tensor *t = &g->tensors[ts[i]];
        if (!pr_dims_known(t) || t->rank > r) return false;
        for (int d = 0; d < t->rank; d++) {
            int64_t v = t->dims[d], *o = &ns[r - t->rank + d];
            if (v == 1) continue;
            if (*o != 1 && *o != v) return false;
            *o = v;
        }
    }
    return true;
}

/* Where node wi: rewritten (1), left (0). */
static int fold_where(pr_graph *g, pr_uses *u, int wi, pr_err *e) {
    const pr_node *w = &g->nodes[wi];
    if (w->n_inputs != 3) return 0;
    int t = pr_node_out(w, 0);
    if (t < 0 || pr_is_graph_output(g, t) || !pr_dims_known(&g->tensors[t])) return 0;
    int cons[64];
    int nc = pr_consumers(g, t, cons, 64);
    if (nc < 1 || nc > 64) return 0;
    for (int k = 0; k < nc; k++) { /* readers: Attention masks only */
        const pr_node *a = &g->nodes[cons[k]];
        if (a->op != PR_OP_Attention || pr_node_in(a, 3) != t) return 0;
        for (int i = 0; i < 3; i++)
            if (pr_node_in(a, i) == t) return 0;
    }
    int c = pr_node_in(w, 0), p = pr_producer(g, c), ex = -1;
    if (pr_live_op(g, p, PR_OP_Expand) && pr_single_consumer(g, u, c) == wi) {
        ex = p;
        c = pr_node_in(&g->nodes[p], 0);
        p = pr_producer(g, c);
    }
    if (!pr_live_op(g, p, PR_OP_And) || g->nodes[p].n_inputs != 2 || pr_is_graph_output(g, c))
        return 0;
    int a0 = pr_node_in(&g->nodes[p], 0), a1 = pr_node_in(&g->nodes[p], 1), m;
    if (all_true(g, a0)) m = a1;
    else if (all_true(g, a1)) m = a0;
    else return 0;
    if (m < 0 || g->tensors[m].dtype != PRECIS_BOOL) return 0;
    const pr_tensor *T = &g->tensors[t];
    int r = T->rank, ts[3] = {m, pr_node_in(w, 1), pr_node_in(w, 2)};
    int64_t ns[PR_MAX_RANK];
    if (r < 2 || ts[1] < 0 || ts[2] < 0 || !bcast_shape(g, ts, 3, r, ns)) return 0;
    bool smaller = false;
    for (int d = 0; d < r; d++) {
        if (ns[d] == T->dims[d]) continue;
        if (d < r - 2 || ns[d] != 1) return 0;
        smaller = true;
    }
    if (!smaller) return 0;
    if (pr_node_set_input(g, u, wi, 0, m, e)) return -1;
    memcpy(g->tensors[t].dims, ns, sizeof ns[0] * (size_t)r);
    if (ex >= 0 && pr_uses_of(u, pr_node_out(&g->nodes[ex], 0)) == 0) pr_node_kill(g, u, ex);
    if (pr_uses_of(u, pr_node_out(&g->nodes[p], 0)) == 0) pr_node_kill(g, u, p);
    return 1;
}

static bool f3dt(const pr_graph *g, int t) {
    pr_dtype d = g->tensors[t].dtype;
    return d == PRECIS_FLOAT32 || d == PRECIS_FLOAT16 || d == PRECIS_BFLOAT16;
}

/* Add node oi: Add(Add(a, b), c) (either operand order) -> Sum(a, b, c) in
 * oi's place when the inner Add's output T has oi as its only reader, is no
 * graph output and has oi's output dtype (ref Sum folds pairwise into the
 * output: RN(RN(a + b) + c), the Adds' numbers; float addition commutes), all
 * float32 / fp16 / bf16 (cuda_elem.c's cu.sum3). Rewritten (1), left (0). */
static int fold_add3(pr_graph *g, pr_uses *u, int oi, pr_err *e) {
    const pr_node *o = &g->nodes[oi];
    if (o->n_inputs != 2 || o->n_attrs || pr_node_out(o, 0) < 0) return 0;
    int y = pr_node_out(o, 0);
    if (!f3dt(g, y)) return 0;
    for (int j = 0; j < 2; j++) {
        int t = pr_node_in(o, j), c = pr_node_in(o, 1 - j);
        if (t < 0 || c < 0 || pr_is_graph_output(g, t) || pr_single_consumer(g, u, t) != oi)
            continue;
        int p = pr_producer(g, t);
        if (!pr_live_op(g, p, PR_OP_Add) || g->nodes[p].n_inputs != 2 || g->nodes[p].n_attrs)
            continue;
        int a = pr_node_in(&g->nodes[p], 0), b = pr_node_in(&g->nodes[p], 1);
        if (a < 0 || b < 0 || !f3dt(g, a) || !f3dt(g, b) || !f3dt(g, c) || !f3dt(g, t) ||
            g->tensors[t].dtype != g->tensors[y].dtype)
            continue;
        if (pr_node_set_input(g, u, oi, 0, a, e) || pr_node_set_input(g, u, oi, 1, b, e) ||
            pr_node_set_input(g, u, oi, 2, c, e) || pr_node_merge_origins(g, oi, &p, 1, e))
            return -1;
        pr_node_retype(g, oi, PR_OP_Sum, 13);
        if (pr_uses_of(u, t) == 0) pr_node_kill(g, u, p);
        return 1;
    }
    return 0;
}

/* Gather node gi along axis 0 with constant indices 0..n-1 (n = the data's
 * first dim) -> Reshape(data, Y's dims). Rewritten (1), left (0). */
static int fold_gather_id(pr_graph *g, pr_uses *u, int gi, pr_err *e) {
    const pr_node *n = &g->nodes[gi];
    if (n->n_inputs != 2) return 0;
    int d = pr_node_in(n, 0), ix = pr_node_in(n, 1), y = pr_node_out(n, 0);
    if (d < 0 || ix < 0 || y < 0 || !pr_dims_known(&g->tensors[d]) ||
        !pr_dims_known(&g->tensors[y]) ||
        !pr_is_init(g, ix) || pr_is_init(g, d))
        return 0;
    const pr_tensor *D = &g->tensors[d], *I = &g->tensors[ix], *Y = &g->tensors[y];
    int64_t axis = pr_attr_int(n, "axis", 0);
    if (D->rank < 1 || (axis != 0 && axis != -(int64_t)D->rank) || Y->dtype != D->dtype ||
        Y->rank < 1 || Y->rank > PR_MAX_RANK)
        return 0;
    int64_t ni = pr_numel(I->rank, I->dims);
    if (I->rank < 0 || ni != D->dims[0] || pr_numel(Y->rank, Y->dims) != pr_numel(D->rank, D->dims))
        return 0;
    size_t es = I->dtype == PRECIS_INT64 ? 8 : I->dtype == PRECIS_INT32 ? 4 : 0;
    if (!es || !I->data || I->nbytes < (size_t)ni * es) return 0;
    for (int64_t i = 0; i < ni; i++) {
        int64_t v = es == 8 ? ((const int64_t *)I->data)[i] : ((const int32_t *)I->data)[i];
        if (v != i) return 0;
    }
    int64_t r = Y->rank, *sh = pr_edit_alloc(sizeof(int64_t) * (size_t)r);
    if (!sh) return pr_errf(e, PRECIS_ERR_OOM, "out of memory"), -1;
    memcpy(sh, Y->dims, sizeof(int64_t) * (size_t)r);
    int st = pr_graph_add_init(g, "mask_ids_shape", PRECIS_INT64, 1, &r, sh, e);
    if (st < 0 || pr_node_set_input(g, u, gi, 1, st, e)) return -1;
    pr_node_retype(g, gi, PR_OP_Reshape, 14);
    pr_node_clear_attrs(g, gi);
    return 1;
}

/* Cast node ci to the dtype it reads (same layout and dims) -> Identity. */
static int fold_cast_id(pr_graph *g, int ci) {
    const pr_node *n = &g->nodes[ci];
    int x = pr_node_in(n, 0), y = pr_node_out(n, 0);
    if (n->n_inputs != 1 || x < 0 || y < 0) return 0;
    const pr_tensor *X = &g->tensors[x], *Y = &g->tensors[y];
    if (X->dtype != Y->dtype || X->layout != Y->layout || !pr_dims_known(X) || X->rank != Y->rank ||
        memcmp(X->dims, Y->dims, sizeof(int64_t) * (size_t)X->rank))
        return 0;
    pr_node_retype(g, ci, PR_OP_Identity, 14);
    pr_node_clear_attrs(g, ci);
    return 1;
}

/* Also the embeddings' Add(Add(.)) -> Sum (PRECIS_CUDA_SUM3=0 keeps them) and
 * the mask chain's identity Gather / Cast (PRECIS_CUDA_MASK_IDS=0 keeps them). */
precis_status pr_fold_attention_mask(pr_graph *g, pr_err *e) {
    const char *env = getenv("PRECIS_CUDA_MASK_ROW"), *s3 = getenv("PRECIS_CUDA_SUM3");
    const char *mi = getenv("PRECIS_CUDA_MASK_IDS");
    bool mask = !(env && !strcmp(env, "0")), sum3 = !(s3 && !strcmp(s3, "0"));
    bool ids = !(mi && !strcmp(mi, "0"));
    if (!mask && !sum3 && !ids) return PRECIS_OK;
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, e);
    if (st) return st;
    for (int ni = 0; ni < g->n_nodes && !st && mask; ni++) {
        if (!pr_live_op(g, ni, PR_OP_Where)) continue;
        if (fold_where(g, &u, ni, e) < 0) st = e->status ? e->status : PRECIS_ERR_OOM;
    }
    for (int ni = 0; ni < g->n_nodes && !st && sum3; ni++) {
        if (!pr_live_op(g, ni, PR_OP_Add)) continue;
        if (fold_add3(g, &u, ni, e) < 0) st = e->status ? e->status : PRECIS_ERR_OOM;
    }
    for (int ni = 0; ni < g->n_nodes && !st && ids; ni++) {
        if (pr_live_op(g, ni, PR_OP_Cast)) fold_cast_id(g, ni);
        else if (pr_live_op(g, ni, PR_OP_Gather) && fold_gather_id(g, &u, ni, e) < 0)
            st = e->status ? e->status : PRECIS_ERR_OOM;
    }
    pr_uses_free(&u);
    return st;
}
