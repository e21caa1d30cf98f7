/* Static shape and type inference over a whole graph, with folding of small
 * constant subgraphs (Shape -> Gather -> Concat -> Reshape chains) so that
 * shapes computed in the graph become known. */
#include <stdlib.h>
#include <string.h>

#include "ir/infer.h"
#include "passes/sym_values.h"
#include "runtime/exec.h"
#include "runtime/tensor.h"

#define PR_FOLD_MAX_ELEMS 65536

static void tinfo_from_tensor(pr_tinfo *t, const pr_tensor *x) {
    memset(t, 0, sizeof *t);
    t->dtype = x->dtype;
    t->rank = x->rank;
    if (x->rank > 0) memcpy(t->dims, x->dims, (size_t)x->rank * sizeof(int64_t));
    t->value = (x->flags & (PR_T_INIT | PR_T_FOLDED)) ? x->data : NULL;
}

static precis_status merge_output(pr_graph *g, const pr_node *n, pr_tensor *x, const pr_tinfo *t,
                                  pr_err *e) {
    char a[256], b[256];
    if (t->dtype != PRECIS_UNDEFINED) {
        if (x->dtype != PRECIS_UNDEFINED && x->dtype != t->dtype)
            return pr_errf(e, PRECIS_ERR_SHAPE,
                           "node '%s' (%s): output '%s' is declared %s but computes %s", n->name,
                           n->op_type, x->name, pr_dtype_name(x->dtype), pr_dtype_name(t->dtype));
        x->dtype = t->dtype;
    }
    if (t->rank < 0) return PRECIS_OK;
    if (x->rank >= 0 && x->rank != t->rank) goto mismatch;
    if (x->rank < 0) {
        x->rank = t->rank;
        for (int i = 0; i < t->rank; i++) x->dims[i] = t->dims[i];
        return PRECIS_OK;
    }
    for (int i = 0; i < t->rank; i++) {
        int64_t d = x->dims[i], v = t->dims[i];
        if (pr_dim_known(v)) {
            if (pr_dim_known(d) && d != v) goto mismatch;
            x->dims[i] = v;
        } else if (pr_dim_is_sym(v) && !pr_dim_known(d)) {
            x->dims[i] = v;
        }
    }
    return PRECIS_OK;
mismatch:
    return pr_errf(e, PRECIS_ERR_SHAPE, "node '%s' (%s): output '%s' is declared %s but computes %s",
                   n->name, n->op_type, x->name,
                   pr_shape_str(g, x->dtype, x->rank, x->dims, a, sizeof a),
                   pr_shape_str(g, t->dtype, t->rank, t->dims, b, sizeof b));
}

/* Run the node on its known inputs and keep small outputs as folded data. */
static void try_fold(pr_graph *g, const pr_node *n) {
    if (n->op == PR_OP_Constant) return;
    bool shape_only = n->op == PR_OP_Shape || n->op == PR_OP_Size;
    pr_buf bufs[64];
    const pr_buf *in[64];
    if (n->n_inputs > 64 || n->n_outputs > 64) return;
    for (int i = 0; i < n->n_inputs; i++) {
        in[i] = NULL;
        if (n->inputs[i] < 0) continue;
        const pr_tensor *x = &g->tensors[n->inputs[i]];
        bool has = (x->flags & (PR_T_INIT | PR_T_FOLDED)) && x->data;
        if (!has && !shape_only) return;
        int64_t ne = pr_numel(x->rank, x->dims);
        if (ne < 0 || (!shape_only && ne > PR_FOLD_MAX_ELEMS)) return;
        bufs[i] = (pr_buf){x->dtype, x->rank, {0}, ne, has ? x->data : NULL,
                           (size_t)ne * pr_dtype_size(x->dtype)};
        memcpy(bufs[i].dims, x->dims, sizeof x->dims);
        in[i] = &bufs[i];
    }
    for (int j = 0; j < n->n_outputs; j++) {
        if (n->outputs[j] < 0) continue;
        const pr_tensor *y = &g->tensors[n->outputs[j]];
        int64_t ne = pr_numel(y->rank, y->dims);
        if (ne < 0 || ne > PR_FOLD_MAX_ELEMS) return;
    }
    pr_buf out[64];
    pr_err e = {0};
    if (pr_exec_node(g, n, in, out, 1, &e) != PRECIS_OK) return; /* the run reports it */
    for (int j = 0; j < n->n_outputs; j++) {
        if (n->outputs[j] < 0) continue;
        pr_tensor *y = &g->tensors[n->outputs[j]];
        void *p = pr_arena_alloc(g->arena, out[j].nbytes);
        if (p) {
            memcpy(p, out[j].data, out[j].nbytes);
            y->data = p;
            y->nbytes = out[j].nbytes;
            y->flags |= PR_T_FOLDED;
        }
        pr_buf_free(&out[j]);
    }
}

precis_status pr_graph_infer(pr_graph *g, pr_err *e) {
    pr_tinfo tin[64], tout[64];
    pr_symval *sv = malloc((size_t)(g->n_tensors + 1) * sizeof *sv);
    if (!sv) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int t = 0; t < g->n_tensors; t++) sv[t].n = -1;
    precis_status st = PRECIS_OK;
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const pr_node *n = &g->nodes[ni];
        if (n->op == PR_OP_UNKNOWN || !pr_infer_table[n->op]) continue;
        if (n->n_inputs > 64 || n->n_outputs > 64) continue;
        for (int i = 0; i < n->n_inputs; i++) {
            if (n->inputs[i] < 0) {
                memset(&tin[i], 0, sizeof tin[i]);
                tin[i].rank = -1;
            } else {
                tinfo_from_tensor(&tin[i], &g->tensors[n->inputs[i]]);
            }
        }
        memset(tout, 0, sizeof(pr_tinfo) * (size_t)n->n_outputs);
        for (int j = 0; j < n->n_outputs; j++) tout[j].rank = -1;
        pr_err ie = {0};
        pr_infer ic = {g, n, n->n_inputs, tin, n->n_outputs, tout, &ie};
        st = pr_infer_table[n->op](&ic);
        if (st == PRECIS_ERR_UNSUPPORTED) {
            st = PRECIS_OK; /* reported when run */
            continue;
        }
        if (st) {
            pr_errf(e, st, "%s", ie.msg);
            break;
        }
        for (int j = 0; j < n->n_outputs && !st; j++)
            if (n->outputs[j] >= 0) st = merge_output(g, n, &g->tensors[n->outputs[j]], &tout[j], e);
        if (st) break;
        if (n->outputs[0] >= 0) pr_symval_refine(g, n, sv, &g->tensors[n->outputs[0]]);
        pr_symval_node(g, n, sv);
        try_fold(g, n);
    }
    free(sv);
    return st;
}
