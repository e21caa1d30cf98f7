/* Constant folding and dead code elimination.
 *
 * fold_constants: a node whose present inputs are all initializers is run once
 * with the ref kernel and its outputs become initializers owned by the graph
 * (outputs over PR_FOLD_MAX_BYTES stay computed at run time). Constant nodes,
 * whose value the loader already stored as an initializer, are removed. When
 * every graph input has static dims (e.g. an engine built for fixed shapes),
 * Shape/Size of tensors whose dims follow from them fold too, and with them
 * the shape arithmetic after (Gather, Concat, Range, ConstantOfShape, ...).
 *
 * dce: nodes none of whose outputs reaches a graph output are removed.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/infer.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "runtime/exec.h"
#include "runtime/tensor.h"

#define PR_FOLD_MAX_BYTES ((size_t)64 << 20)

static bool has_value(const pr_graph *g, int t) {
    const pr_tensor *x = &g->tensors[t];
    return (x->flags & PR_T_INIT) && (x->data || x->nbytes == 0) && x->rank >= 0;
}

static bool has_subgraph(const pr_node *n) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].type == PR_ATTR_GRAPH || n->attrs[i].type == PR_ATTR_GRAPHS) return true;
    return false;
}

/* Shape and Size of a tensor whose dims are all known: which Shape/Size
 * nodes read a tensor whose dims follow from the graph inputs' declared dims
 * and the initializers alone? Decided by a fresh inference pass with every
 * other tensor's type forgotten, so that dims declared by value_info (a
 * tracing exporter's sizes, possibly wrong for other inputs) never count.
 * Returns a per-node flag array (NULL when none or on failure). */
static unsigned char *static_shape_nodes(pr_graph *g) {
    bool any = false;
    for (int i = 0; i < g->n_nodes && !any; i++) {
        const pr_node *n = &g->nodes[i];
        any = !n->domain[0] && (n->op == PR_OP_Shape || n->op == PR_OP_Size) && n->n_inputs == 1;
    }
    for (int k = 0; k < g->n_inputs && any; k++) {
        const pr_tensor *x = &g->tensors[g->inputs[k]];
        if (pr_numel(x->rank, x->dims) < 0) any = false; /* a dynamic input */
    }
    if (!any) return NULL;
    pr_tensor *saved = malloc((size_t)g->n_tensors * sizeof *saved);
    unsigned char *ok = calloc((size_t)g->n_nodes + 1, 1);
    if (!saved || !ok) {
        free(saved);
        free(ok);
        return NULL;
    }
    int nt = g->n_tensors;
    memcpy(saved, g->tensors, (size_t)nt * sizeof *saved);
    for (int t = 0; t < nt; t++) {
        pr_tensor *x = &g->tensors[t];
        if (x->flags & (PR_T_INPUT | PR_T_INIT)) continue;
        x->dtype = PRECIS_UNDEFINED;
        x->rank = -1;
        x->data = NULL;
        x->nbytes = 0;
        x->flags &= ~(uint32_t)PR_T_FOLDED;
    }
    pr_err e = {0};
    bool inferred = pr_graph_infer(g, &e) == PRECIS_OK;
    for (int i = 0; i < g->n_nodes && inferred; i++) {
        const pr_node *n = &g->nodes[i];
        if (n->domain[0] || (n->op != PR_OP_Shape && n->op != PR_OP_Size) || n->n_inputs != 1 ||
            n->inputs[0] < 0)
            continue;
        const pr_tensor *x = &g->tensors[n->inputs[0]];
        ok[i] = pr_numel(x->rank, x->dims) >= 0;
    }
    /* restore every tensor as it was (inference adds no tensors) */
    memcpy(g->tensors, saved, (size_t)nt * sizeof *saved);
    free(saved);
    return ok;
}

/* Can node n be folded: known op, at least one input, every present input an
 * initializer (or, for Shape/Size, static dims), no output known to be too
 * large? */
static bool foldable(const pr_graph *g, const pr_node *n, bool static_shape) {
    if (static_shape) return true;
    if (n->op == PR_OP_UNKNOWN || n->n_inputs == 0 || n->n_inputs > 64 || n->n_outputs > 64 ||
        has_subgraph(n) || !pr_exec_supported_op(n))
        return false;
    int present = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        if (!has_value(g, n->inputs[k])) return false;
        present++;
    }
    if (!present) return false;
    for (int j = 0; j < n->n_outputs; j++) {
        int t = n->outputs[j];
        if (t < 0) continue;
        const pr_tensor *y = &g->tensors[t];
        int64_t ne = pr_numel(y->rank, y->dims);
        size_t es = pr_dtype_size(y->dtype);
        if (ne >= 0 && es && (size_t)ne > PR_FOLD_MAX_BYTES / es) return false;
    }
    return true;
}

/* Run node ni and turn its outputs into initializers. Returns OK with *done
 * false when the node cannot be folded (the run will report any error). */
static precis_status fold_node(pr_graph *g, pr_uses *u, int ni, bool *done, pr_err *e) {
    const pr_node *n = &g->nodes[ni];
    pr_buf bufs[64], out[64];
    const pr_buf *in[64];
    *done = false;
    for (int k = 0; k < n->n_inputs; k++) {
        in[k] = NULL;
        if (n->inputs[k] < 0) continue;
        const pr_tensor *x = &g->tensors[n->inputs[k]];
        int64_t ne = pr_numel(x->rank, x->dims);
        if (ne < 0) return PRECIS_OK;
        bool has = (x->flags & PR_T_INIT) != 0; /* else Shape/Size: dims only */
        bufs[k] = (pr_buf){x->dtype, x->rank, {0}, ne, has ? x->data : NULL, has ? x->nbytes : 0};
        memcpy(bufs[k].dims, x->dims, sizeof x->dims);
        in[k] = &bufs[k];
    }
    pr_err ee = {0};
    if (pr_exec_node(g, n, in, out, 1, &ee) != PRECIS_OK) return PRECIS_OK;
    bool ok = true;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && out[j].nbytes > PR_FOLD_MAX_BYTES) ok = false;
    precis_status st = PRECIS_OK;
    for (int j = 0; j < n->n_outputs; j++) {
        int t = n->outputs[j];
        if (t < 0) continue;
        if (!ok || st) {
            pr_buf_free(&out[j]);
            continue;
        }
        if (!pr_graph_own(g, out[j].data)) {
            pr_buf_free(&out[j]);
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory folding node '%s'", n->name);
            continue;
        }
        pr_tensor *y = &g->tensors[t];
        y->dtype = out[j].dtype;
        y->rank = out[j].rank;
        memcpy(y->dims, out[j].dims, sizeof y->dims);
        y->data = out[j].data;
        y->nbytes = out[j].nbytes;
        y->flags = (y->flags & ~(uint32_t)PR_T_FOLDED) | PR_T_INIT;
    }
    if (st || !ok) return st;
    pr_node_kill(g, u, ni);
    *done = true;
    return PRECIS_OK;
}

static precis_status fold_run(pr_graph *g, pr_pass_ctx *pc) {
    unsigned char *shape_ok = static_shape_nodes(g);
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) {
        free(shape_ok);
        return st;
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const pr_node *n = &g->nodes[ni];
        if (pr_node_dead(n)) continue;
        if (n->op == PR_OP_Constant && n->domain[0] == 0) {
            /* the loader stored the value as an initializer */
            if (n->n_outputs == 1 && n->outputs[0] >= 0 && has_value(g, n->outputs[0])) {
                pr_node_kill(g, &u, ni);
                pc->changes++;
            }
            continue;
        }
        if (!foldable(g, n, shape_ok && shape_ok[ni])) continue;
        bool done;
        if ((st = fold_node(g, &u, ni, &done, pc->err))) break;
        if (done) pc->changes++;
    }
    pr_uses_free(&u);
    free(shape_ok);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fold_constants = {"fold_constants", fold_run};

/* ------------------------------------------------------------------- DCE */

static void mark_outer(const pr_graph *g, const pr_graph *sub, unsigned char *live) {
    for (int t = 0; t < sub->n_tensors; t++) {
        const pr_tensor *x = &sub->tensors[t];
        if (x->producer >= 0 || (x->flags & (PR_T_INIT | PR_T_INPUT))) continue;
        int o = pr_graph_find_tensor(g, x->name);
        if (o >= 0) live[o] = 1;
    }
    for (int i = 0; i < sub->n_subgraphs; i++) mark_outer(g, sub->subgraphs[i], live);
}

static precis_status dce_run(pr_graph *g, pr_pass_ctx *pc) {
    unsigned char *live = calloc((size_t)g->n_tensors + 1, 1);
    if (!live) return pr_errf(pc->err, PRECIS_ERR_OOM, "out of memory in dce");
    for (int k = 0; k < g->n_outputs; k++) live[g->outputs[k]] = 1;
    /* tensors read by subgraphs stay (conservative: whether or not their node
     * is live) */
    for (int i = 0; i < g->n_subgraphs; i++) mark_outer(g, g->subgraphs[i], live);
    for (int ni = g->n_nodes - 1; ni >= 0; ni--) {
        const pr_node *n = &g->nodes[ni];
        if (pr_node_dead(n)) continue;
        bool keep = false;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && live[n->outputs[j]]) keep = true;
        if (!keep) {
            pr_node_kill(g, NULL, ni);
            pc->changes++;
            continue;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) live[n->inputs[k]] = 1;
    }
    free(live);
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_dce = {"dce", dce_run};
