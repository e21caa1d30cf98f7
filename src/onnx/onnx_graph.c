/* GraphProto import into the IR, validation and topological sorting. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_internal.h"

#define OOM(what) pr_errf(e, PRECIS_ERR_OOM, "out of memory importing %s", what)

static const char *type_kind_name(int c) {
    switch (c) {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "sparse tensor";
    default: return "unknown";
    }
}

/* Set tensor t's declared type/shape from a ValueInfoProto type. `strict`:
 * non-tensor types are refused (top-level graph inputs/outputs). */
static precis_status apply_type(pr_graph *g, int t, const Onnx__TypeProto *tp, const char *role,
                                bool strict, pr_err *e) {
    const char *name = g->tensors[t].name;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return PRECIS_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        if (!strict) return PRECIS_OK;
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "%s '%s' has %s type: only tensors are supported", role, name,
                       type_kind_name((int)tp->value_case));
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt) return PRECIS_OK;
    const Onnx__TensorShapeProto *sh = tt->shape;
    if (sh && sh->n_dim > PR_MAX_RANK)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s '%s': rank %zu exceeds the maximum of %d",
                       role, name, sh->n_dim, PR_MAX_RANK);
    int64_t dims[PR_MAX_RANK];
    int rank = sh ? (int)sh->n_dim : -1;
    for (int i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        dims[i] = PR_DIM_UNKNOWN;
        if (!d) continue;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value >= 0) dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && d->dim_param[0]) {
            dims[i] = pr_graph_sym(g, d->dim_param);
        }
    }
    pr_tensor *pt = &g->tensors[t];
    if (tt->has_elem_type) pt->dtype = pr_onnx_dtype(tt->elem_type);
    pt->rank = rank;
    for (int i = 0; i < rank; i++) pt->dims[i] = dims[i];
    return PRECIS_OK;
}

/* Arrays of graph inputs/outputs: allocated once with the right size. */
static precis_status alloc_index(pr_graph *g, int **arr, size_t n, pr_err *e) {
    if (n > (size_t)INT_MAX / 2) return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "too many graph inputs/outputs");
    *arr = pr_arena_alloc(g->arena, (n ? n : 1) * sizeof(int));
    return *arr ? PRECIS_OK : OOM("graph inputs/outputs");
}

static precis_status import_node(pr_onnx_imp *im, pr_graph *g, const Onnx__NodeProto *np,
                                 size_t idx, pr_err *e) {
    if (np->n_input > INT_MAX / 2 || np->n_output > INT_MAX / 2 || np->n_attribute > INT_MAX / 2)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node %zu: too many inputs/outputs/attributes",
                       idx);
    int ni = pr_graph_add_node(g, (int)np->n_input, (int)np->n_output, (int)np->n_attribute, e);
    if (ni < 0) return PRECIS_ERR_OOM;
    pr_node *n = &g->nodes[ni];
    const char *op_type = pr_onnx_str(np->op_type), *domain = pr_onnx_str(np->domain);
    n->op_type = pr_arena_strdup(g->arena, op_type);
    n->domain = pr_arena_strdup(g->arena, domain);
    if (np->name && np->name[0]) {
        n->name = pr_arena_strdup(g->arena, np->name);
    } else {
        char buf[64];
        snprintf(buf, sizeof buf, "_%zu", idx);
        size_t ol = strlen(op_type), bl = strlen(buf);
        char *s = pr_arena_alloc(g->arena, ol + bl + 1);
        if (s) {
            memcpy(s, op_type, ol);
            memcpy(s + ol, buf, bl + 1);
        }
        n->name = s;
    }
    if (!n->op_type || !n->domain || !n->name) return OOM("a node");
    if (!op_type[0])
        return pr_errf(e, PRECIS_ERR_PARSE, "node '%s' (index %zu) has no op_type", n->name, idx);
    n->op = pr_op_lookup_domain(domain, op_type);
    n->opset = pr_graph_opset(im->top, domain);
    for (size_t i = 0; i < np->n_input; i++) {
        const char *in = pr_onnx_str(np->input[i]);
        if (!in[0]) continue;
        int t = pr_graph_get_tensor(g, in, e);
        if (t < 0) return PRECIS_ERR_OOM;
        g->nodes[ni].inputs[i] = t;
    }
    for (size_t i = 0; i < np->n_output; i++) {
        const char *on = pr_onnx_str(np->output[i]);
        if (!on[0]) continue;
        int t = pr_graph_get_tensor(g, on, e);
        if (t < 0) return PRECIS_ERR_OOM;
        pr_tensor *pt = &g->tensors[t];
        n = &g->nodes[ni];
        if (pt->producer >= 0)
            return pr_errf(e, PRECIS_ERR_PARSE,
                           "tensor '%s' is produced twice: by node '%s' and by node '%s'", on,
                           g->nodes[pt->producer].name, n->name);
        if (pt->flags & PR_T_INIT)
            return pr_errf(e, PRECIS_ERR_PARSE,
                           "tensor '%s' is an initializer and also the output of node '%s'", on,
                           n->name);
        if (pt->flags & PR_T_INPUT)
            return pr_errf(e, PRECIS_ERR_PARSE,
                           "tensor '%s' is a graph input and also the output of node '%s'", on,
                           n->name);
        pt->producer = ni;
        n->outputs[i] = t;
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        if (!np->attribute[i])
            return pr_errf(e, PRECIS_ERR_PARSE, "node '%s': attribute %zu is missing",
                           g->nodes[ni].name, i);
        pr_attr a;
        precis_status st = pr_onnx_import_attr(im, g, &g->nodes[ni], np->attribute[i], &a, e);
        if (st) return st;
        g->nodes[ni].attrs[i] = a;
    }
    n = &g->nodes[ni];
    if (n->op == PR_OP_Constant)
        return pr_onnx_constant_output(g, ni, e);
    return PRECIS_OK;
}

precis_status pr_onnx_import_graph(pr_onnx_imp *im, const Onnx__GraphProto *gp, pr_graph *g,
                                   pr_err *e) {
    precis_status st;
    g->name = pr_arena_strdup(g->arena, pr_onnx_str(gp->name));
    if (!g->name) return OOM("the graph name");
    if (g != im->top && im->top->n_opsets) {
        g->opsets = pr_arena_alloc(g->arena, (size_t)im->top->n_opsets * sizeof(pr_opset));
        if (!g->opsets) return OOM("opsets");
        for (int i = 0; i < im->top->n_opsets; i++) {
            g->opsets[i].version = im->top->opsets[i].version;
            g->opsets[i].domain = pr_arena_strdup(g->arena, im->top->opsets[i].domain);
            if (!g->opsets[i].domain) return OOM("opsets");
        }
        g->n_opsets = im->top->n_opsets;
    }
    if (gp->n_sparse_initializer)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "sparse initializers are not supported ('%s')",
                       gp->sparse_initializer[0] && gp->sparse_initializer[0]->values
                           ? pr_onnx_str(gp->sparse_initializer[0]->values->name)
                           : "?");
    /* initializers */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp) return pr_errf(e, PRECIS_ERR_PARSE, "initializer %zu is missing", i);
        const char *name = pr_onnx_str(tp->name);
        char what[300];
        snprintf(what, sizeof what, "initializer '%s'", name);
        if (!name[0]) return pr_errf(e, PRECIS_ERR_PARSE, "initializer %zu has no name", i);
        if (pr_graph_find_tensor(g, name) >= 0)
            return pr_errf(e, PRECIS_ERR_PARSE, "initializer '%s' is defined twice", name);
        int t = pr_graph_get_tensor(g, name, e);
        if (t < 0) return PRECIS_ERR_OOM;
        pr_const c;
        st = pr_onnx_tensor_decode(tp, what, im->base_dir, false, pr_onnx_graph_alloc, g, &c, e);
        if (st) return st;
        pr_tensor *pt = &g->tensors[t];
        pt->dtype = c.dtype;
        pt->rank = c.rank;
        memcpy(pt->dims, c.dims, sizeof pt->dims);
        pt->data = c.data;
        pt->nbytes = c.nbytes;
        pt->flags |= PR_T_INIT;
    }
    /* inputs (those that are also initializers are initializers) */
    bool strict = g == im->top;
    PR_TRY(alloc_index(g, &g->inputs, gp->n_input, e));
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *name = vi ? pr_onnx_str(vi->name) : "";
        if (!name[0]) return pr_errf(e, PRECIS_ERR_PARSE, "graph input %zu has no name", i);
        int t = pr_graph_get_tensor(g, name, e);
        if (t < 0) return PRECIS_ERR_OOM;
        if (g->tensors[t].flags & PR_T_INIT) continue;
        if (g->tensors[t].flags & PR_T_INPUT)
            return pr_errf(e, PRECIS_ERR_PARSE, "graph input '%s' is declared twice", name);
        PR_TRY(apply_type(g, t, vi->type, "graph input", strict, e));
        g->tensors[t].flags |= PR_T_INPUT;
        g->inputs[g->n_inputs++] = t;
    }
    /* nodes */
    for (size_t i = 0; i < gp->n_node; i++) {
        if (!gp->node[i]) return pr_errf(e, PRECIS_ERR_PARSE, "node %zu is missing", i);
        if (i >= INT_MAX / 2) return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "too many nodes");
        PR_TRY(import_node(im, g, gp->node[i], i, e));
    }
    /* outputs */
    PR_TRY(alloc_index(g, &g->outputs, gp->n_output, e));
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *name = vi ? pr_onnx_str(vi->name) : "";
        if (!name[0]) return pr_errf(e, PRECIS_ERR_PARSE, "graph output %zu has no name", i);
        int t = pr_graph_get_tensor(g, name, e);
        if (t < 0) return PRECIS_ERR_OOM;
        pr_tensor *pt = &g->tensors[t];
        if (!(pt->flags & PR_T_INIT)) {
            /* declared type; a Constant's known shape is kept */
            PR_TRY(apply_type(g, t, vi->type, "graph output", strict, e));
        }
        g->tensors[t].flags |= PR_T_OUTPUT;
        g->outputs[g->n_outputs++] = t;
    }
    /* value_info: only fills what is not known yet */
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        const char *name = vi ? pr_onnx_str(vi->name) : "";
        if (!name[0]) continue;
        int t = pr_graph_find_tensor(g, name);
        if (t < 0) continue; /* describes nothing in this graph */
        const pr_tensor *pt = &g->tensors[t];
        if (pt->flags & (PR_T_INIT | PR_T_INPUT | PR_T_OUTPUT)) continue;
        PR_TRY(apply_type(g, t, vi->type, "value_info", false, e));
    }
    return PRECIS_OK;
fail:
    return st;
}

/* ------------------------------------------------------------- validation */

static bool defined_here(const pr_graph *g, int t) {
    const pr_tensor *pt = &g->tensors[t];
    return pt->producer >= 0 || (pt->flags & (PR_T_INPUT | PR_T_INIT));
}

/* Is `name` defined in g or (for subgraphs) an enclosing scope? */
static bool defined_in_scope(const pr_graph *g, const char *name) {
    for (; g; g = g->parent) {
        int t = pr_graph_find_tensor(g, name);
        if (t >= 0 && defined_here(g, t)) return true;
    }
    return false;
}

/* Growable int vector. */
typedef struct ivec {
    int *v;
    size_t n, cap;
} ivec;

static bool ivec_push(ivec *a, int x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        int *n = realloc(a->v, cap * sizeof *n);
        if (!n) return false;
        a->v = n;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

/* If `name`, used but not defined in subgraph sg, resolves to a value that a
 * node of g (an enclosing graph) produces, push that node onto deps. */
static bool outer_dep(const pr_graph *sg, const pr_graph *g, const char *name, ivec *deps) {
    const pr_graph *s = sg->parent;
    while (s && s != g) { /* defined in a graph between sg and g? */
        int u = pr_graph_find_tensor(s, name);
        if (u >= 0 && defined_here(s, u)) return true;
        s = s->parent;
    }
    if (s != g) return true;
    int u = pr_graph_find_tensor(g, name);
    if (u >= 0 && g->tensors[u].producer >= 0) return ivec_push(deps, g->tensors[u].producer);
    return true;
}

/* Collect into deps the producers in `g` of names that subgraph `sg`
 * (recursively) uses without defining them itself. */
static bool outer_deps(const pr_graph *sg, const pr_graph *g, ivec *deps) {
    for (int ni = 0; ni < sg->n_nodes; ni++) {
        const pr_node *n = &sg->nodes[ni];
        for (int i = 0; i < n->n_inputs; i++) {
            int t = n->inputs[i];
            if (t >= 0 && !defined_here(sg, t) && !outer_dep(sg, g, sg->tensors[t].name, deps))
                return false;
        }
        for (int k = 0; k < n->n_attrs; k++) {
            const pr_attr *a = &n->attrs[k];
            if (a->type == PR_ATTR_GRAPH && a->g && !outer_deps(a->g, g, deps)) return false;
            if (a->type == PR_ATTR_GRAPHS)
                for (int j = 0; j < a->n; j++)
                    if (a->graphs[j] && !outer_deps(a->graphs[j], g, deps)) return false;
        }
    }
    for (int i = 0; i < sg->n_outputs; i++) {
        int t = sg->outputs[i];
        if (!defined_here(sg, t) && !outer_dep(sg, g, sg->tensors[t].name, deps)) return false;
    }
    return true;
}

/* Dependencies of node ni (producer node indices, may repeat). */
static bool node_deps(const pr_graph *g, int ni, ivec *deps) {
    deps->n = 0;
    const pr_node *n = &g->nodes[ni];
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t >= 0 && g->tensors[t].producer >= 0 && !ivec_push(deps, g->tensors[t].producer))
            return false;
    }
    for (int k = 0; k < n->n_attrs; k++) {
        const pr_attr *a = &n->attrs[k];
        if (a->type == PR_ATTR_GRAPH && a->g && !outer_deps(a->g, g, deps)) return false;
        if (a->type == PR_ATTR_GRAPHS)
            for (int j = 0; j < a->n; j++)
                if (a->graphs[j] && !outer_deps(a->graphs[j], g, deps)) return false;
    }
    return true;
}

/* Min-heap of node indices (keeps the file's order among ready nodes). */
static void heap_push(int *h, int *n, int x) {
    int i = (*n)++;
    h[i] = x;
    while (i > 0 && h[(i - 1) / 2] > h[i]) {
        int p = (i - 1) / 2, t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static int heap_pop(int *h, int *n) {
    int top = h[0];
    h[0] = h[--(*n)];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && h[l] < h[m]) m = l;
        if (r < *n && h[r] < h[m]) m = r;
        if (m == i) break;
        int t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
    return top;
}

static precis_status topo_sort(pr_graph *g, pr_err *e) {
    int nn = g->n_nodes;
    if (nn == 0) return PRECIS_OK;
    precis_status st = PRECIS_OK;
    ivec deps = {0}, edges = {0}; /* edges: pairs (from, to) */
    int *indeg = NULL, *start = NULL, *adj = NULL, *heap = NULL, *order = NULL, *pos = NULL;
    pr_node *nodes = NULL;
    bool sorted = true;
    for (int i = 0; i < nn; i++) {
        if (!node_deps(g, i, &deps)) goto oom;
        for (size_t k = 0; k < deps.n; k++) {
            if (deps.v[k] >= i) sorted = false;
            if (!ivec_push(&edges, deps.v[k]) || !ivec_push(&edges, i)) goto oom;
        }
    }
    if (sorted) goto done;
    size_t ne = edges.n / 2;
    indeg = calloc((size_t)nn, sizeof *indeg);
    start = calloc((size_t)nn + 1, sizeof *start);
    adj = malloc((ne ? ne : 1) * sizeof *adj);
    heap = malloc((size_t)nn * sizeof *heap);
    order = malloc((size_t)nn * sizeof *order);
    pos = malloc((size_t)nn * sizeof *pos);
    nodes = malloc((size_t)nn * sizeof *nodes);
    if (!indeg || !start || !adj || !heap || !order || !pos || !nodes) goto oom;
    for (size_t k = 0; k < ne; k++) {
        start[edges.v[2 * k] + 1]++;
        indeg[edges.v[2 * k + 1]]++;
    }
    for (int i = 0; i < nn; i++) start[i + 1] += start[i];
    for (int i = 0; i < nn; i++) pos[i] = start[i];
    for (size_t k = 0; k < ne; k++) adj[pos[edges.v[2 * k]]++] = edges.v[2 * k + 1];
    int hn = 0, no = 0;
    for (int i = 0; i < nn; i++)
        if (!indeg[i]) heap_push(heap, &hn, i);
    while (hn) {
        int u = heap_pop(heap, &hn);
        order[no++] = u;
        for (int k = start[u]; k < start[u + 1]; k++)
            if (--indeg[adj[k]] == 0) heap_push(heap, &hn, adj[k]);
    }
    if (no < nn) {
        int bad = 0;
        while (bad < nn && !indeg[bad]) bad++;
        if (bad == nn) bad = 0;
        st = pr_errf(e, PRECIS_ERR_PARSE, "graph '%s' has a cycle involving node '%s' (%s)",
                     g->name, g->nodes[bad].name, g->nodes[bad].op_type);
        goto done;
    }
    for (int i = 0; i < nn; i++) {
        nodes[i] = g->nodes[order[i]];
        pos[order[i]] = i;
    }
    memcpy(g->nodes, nodes, (size_t)nn * sizeof *nodes);
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer >= 0) g->tensors[t].producer = pos[g->tensors[t].producer];
    goto done;
oom:
    st = pr_errf(e, PRECIS_ERR_OOM, "out of memory sorting graph '%s'", g->name);
done:
    free(deps.v);
    free(edges.v);
    free(indeg);
    free(start);
    free(adj);
    free(heap);
    free(order);
    free(pos);
    free(nodes);
    return st;
}

precis_status pr_onnx_validate(pr_graph *g, pr_err *e) {
    precis_status st;
    const char *gname = g->parent ? g->name : NULL;
    char where[300] = "";
    if (gname) snprintf(where, sizeof where, " in subgraph '%s'", gname);
    for (int ni = 0; ni < g->n_nodes; ni++) {
        const pr_node *n = &g->nodes[ni];
        for (int i = 0; i < n->n_inputs; i++) {
            int t = n->inputs[i];
            if (t < 0 || defined_here(g, t)) continue;
            if (g->parent && defined_in_scope(g->parent, g->tensors[t].name)) continue;
            return pr_errf(e, PRECIS_ERR_PARSE,
                           "node '%s' (%s)%s: input '%s' is not produced by any node and is not a "
                           "graph input or initializer",
                           n->name, n->op_type, where, g->tensors[t].name);
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int t = g->outputs[i];
        if (defined_here(g, t)) continue;
        if (g->parent && defined_in_scope(g->parent, g->tensors[t].name)) continue;
        return pr_errf(e, PRECIS_ERR_PARSE, "graph output '%s'%s is not produced by any node",
                       g->tensors[t].name, where);
    }
    for (int i = 0; i < g->n_subgraphs; i++) {
        st = pr_onnx_validate(g->subgraphs[i], e);
        if (st) return st;
    }
    return topo_sort(g, e);
}
