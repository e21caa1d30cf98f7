#include "passes/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_ent(pr_convert *cv, pr_err *e) {
    if (cv->n == cv->cap) {
        int cap = cv->cap ? 2 * cv->cap : 16;
        void *p = realloc(cv->ents, (size_t)cap * sizeof *cv->ents);
        if (!p) {
            pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            return -1;
        }
        cv->ents = p;
        cv->cap = cap;
    }
    return cv->n++;
}

static const char *kind_suffix(int kind, int target) {
    if (kind == PR_CONVERT_REORDER) return target == PR_LAYOUT_NHWC ? "to_nhwc" : "to_plain";
    return pr_dtype_name((pr_dtype)target);
}

/* A conversion node src -> dst. */
static int add_node(pr_graph *g, int src, int dst, int kind, int target, pr_err *e) {
    int ni = pr_graph_add_node(g, 1, 1, 2, e);
    if (ni < 0) return -1;
    pr_node *n = &g->nodes[ni];
    char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", g->tensors[src].name, kind_suffix(kind, target));
    n->name = pr_arena_strdup(g->arena, buf);
    if (!n->name) return pr_errf(e, PRECIS_ERR_OOM, "out of memory"), -1;
    n->inputs[0] = src;
    n->outputs[0] = dst;
    n->attrs[0].name = "precis_inserted";
    n->attrs[0].type = PR_ATTR_INT;
    n->attrs[0].i = 1;
    n->attrs[1].name = "to";
    if (kind == PR_CONVERT_REORDER) {
        n->op = PR_OP_Reorder;
        n->op_type = "Reorder";
        n->domain = PR_FUSED_DOMAIN;
        n->opset = 1;
        n->attrs[1].type = PR_ATTR_STRING;
        n->attrs[1].s = target == PR_LAYOUT_NHWC ? "nhwc" : "plain";
        n->attrs[1].s_len = strlen(n->attrs[1].s);
    } else {
        n->op = PR_OP_Cast;
        n->op_type = "Cast";
        n->domain = "";
        n->opset = 13;
        n->attrs[1].type = PR_ATTR_INT;
        n->attrs[1].i = target;
    }
    g->tensors[dst].producer = ni;
    return ni;
}

static int new_tensor_like(pr_graph *g, int t, const char *suffix, pr_err *e) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", g->tensors[t].name, suffix);
    for (int k = 2; pr_graph_find_tensor(g, buf) >= 0; k++)
        snprintf(buf, sizeof buf, "%s/%s_%d", g->tensors[t].name, suffix, k);
    int nt = pr_graph_get_tensor(g, buf, e);
    if (nt < 0) return -1;
    pr_tensor *x = &g->tensors[nt];
    const pr_tensor *s = &g->tensors[t];
    x->dtype = s->dtype;
    x->rank = s->rank;
    memcpy(x->dims, s->dims, sizeof x->dims);
    x->layout = s->layout;
    x->producer = -1;
    return nt;
}

int pr_convert_get(pr_graph *g, pr_convert *cv, int t, int kind, int target, pr_err *e) {
    for (int i = 0; i < cv->n; i++)
        if (cv->ents[i].src == t && cv->ents[i].kind == kind && cv->ents[i].target == target)
            return cv->ents[i].out;
    int nt = new_tensor_like(g, t, kind_suffix(kind, target), e);
    if (nt < 0) return -1;
    if (kind == PR_CONVERT_REORDER) g->tensors[nt].layout = (uint8_t)target;
    else g->tensors[nt].dtype = (pr_dtype)target;
    int ni = add_node(g, t, nt, kind, target, e);
    int k = ni < 0 ? -1 : add_ent(cv, e);
    if (k < 0) return -1;
    cv->ents[k] = (struct pr_convert_ent){t, target, kind, ni, nt};
    return nt;
}

int pr_convert_detach_output(pr_graph *g, int t, const char *suffix, pr_err *e) {
    int nt = new_tensor_like(g, t, suffix, e);
    if (nt < 0) return -1;
    int p = g->tensors[t].producer;
    g->tensors[nt].producer = p;
    for (int i = 0; i < g->n_nodes; i++) {
        pr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t) n->inputs[k] = nt;
        if (i == p)
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] == t) n->outputs[k] = nt;
    }
    g->tensors[t].producer = -1;
    return nt;
}

precis_status pr_convert_output(pr_graph *g, pr_convert *cv, int src, int t, int kind,
                                pr_err *e) {
    int target = kind == PR_CONVERT_REORDER ? g->tensors[t].layout : (int)g->tensors[t].dtype;
    int ni = add_node(g, src, t, kind, target, e);
    int k = ni < 0 ? -1 : add_ent(cv, e);
    if (k < 0) return e->status ? e->status : PRECIS_ERR_OOM;
    /* consumers that want src converted the same way read t */
    cv->ents[k] = (struct pr_convert_ent){src, target, kind, ni, t};
    return PRECIS_OK;
}

/* Appends the conversions placed after node p (old numbering), each followed
 * by the conversions of its own output; marks them done (after = -2). */
static void emit_after(const pr_graph *g, pr_convert *cv, int *after, int p, pr_node *nodes,
                       int *m) {
    for (int i = 0; i < cv->n; i++) {
        if (after[i] != p) continue;
        after[i] = -2;
        nodes[(*m)++] = g->nodes[cv->ents[i].node];
        emit_after(g, cv, after, cv->ents[i].node, nodes, m);
    }
}

precis_status pr_convert_finish(pr_graph *g, pr_convert *cv, pr_err *e) {
    int n_old = g->n_nodes - cv->n;
    pr_node *nodes = malloc((size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *nodes);
    int *after = malloc((size_t)(cv->n ? cv->n : 1) * sizeof *after);
    if (!nodes || !after) {
        free(nodes);
        free(after);
        free(cv->ents);
        cv->ents = NULL;
        cv->n = cv->cap = 0;
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    /* a conversion goes after its source's producer (-1: before everything) */
    for (int i = 0; i < cv->n; i++) {
        int src = g->nodes[cv->ents[i].node].inputs[0];
        after[i] = g->tensors[src].producer;
    }
    int m = 0;
    for (int pass = -1; pass < n_old; pass++) {
        if (pass >= 0) nodes[m++] = g->nodes[pass];
        emit_after(g, cv, after, pass, nodes, &m);
    }
    memcpy(g->nodes, nodes, (size_t)m * sizeof *nodes);
    g->n_nodes = m;
    for (int t = 0; t < g->n_tensors; t++) g->tensors[t].producer = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0) g->tensors[g->nodes[i].outputs[k]].producer = i;
    free(nodes);
    free(after);
    free(cv->ents);
    cv->ents = NULL;
    cv->n = cv->cap = 0;
    return PRECIS_OK;
}

bool pr_node_inserted(const pr_node *n) { return pr_attr_int(n, "precis_inserted", 0) != 0; }
