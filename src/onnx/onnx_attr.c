/* AttributeProto import (every kind, subgraphs recursively) and Constant nodes. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "onnx/onnx_internal.h"

/* The attribute kind: the declared type, or (old models without `type`)
 * guessed from the field that is set. */
static int attr_kind(const Onnx__AttributeProto *ap) {
    if (ap->has_type) return (int)ap->type;
    if (ap->has_f) return PR_ATTR_FLOAT;
    if (ap->has_i) return PR_ATTR_INT;
    if (ap->has_s) return PR_ATTR_STRING;
    if (ap->t) return PR_ATTR_TENSOR;
    if (ap->g) return PR_ATTR_GRAPH;
    if (ap->sparse_tensor) return PR_ATTR_SPARSE_TENSOR;
    if (ap->tp) return PR_ATTR_TYPE_PROTO;
    if (ap->n_floats) return PR_ATTR_FLOATS;
    if (ap->n_ints) return PR_ATTR_INTS;
    if (ap->n_strings) return PR_ATTR_STRINGS;
    if (ap->n_tensors) return PR_ATTR_TENSORS;
    if (ap->n_graphs) return PR_ATTR_GRAPHS;
    if (ap->n_sparse_tensors) return PR_ATTR_SPARSE_TENSORS;
    if (ap->n_type_protos) return PR_ATTR_TYPE_PROTOS;
    return PR_ATTR_UNDEFINED;
}

static precis_status import_subgraph(pr_onnx_imp *im, pr_graph *g, const Onnx__GraphProto *gp,
                                     const char *what, pr_graph **out, pr_err *e) {
    *out = NULL;
    if (im->depth >= PR_ONNX_MAX_DEPTH)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: subgraphs nested deeper than %d", what,
                       PR_ONNX_MAX_DEPTH);
    pr_graph *sub = pr_graph_create();
    if (!sub) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
    if (!pr_graph_add_subgraph(g, sub)) {
        pr_graph_destroy(sub);
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
    }
    im->depth++;
    precis_status st = pr_onnx_import_graph(im, gp, sub, e);
    im->depth--;
    if (st) {
        pr_err_prefix(e, "%s", what);
        return st;
    }
    *out = sub;
    return PRECIS_OK;
}

precis_status pr_onnx_import_attr(pr_onnx_imp *im, pr_graph *g, const pr_node *node,
                                  const Onnx__AttributeProto *ap, pr_attr *a, pr_err *e) {
    char what[512];
    const char *aname = pr_onnx_str(ap->name);
    snprintf(what, sizeof what, "node '%s' (%s) attribute '%s'", node->name, node->op_type, aname);
    memset(a, 0, sizeof *a);
    a->name = pr_arena_strdup(g->arena, aname);
    if (!a->name) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
    if (ap->ref_attr_name && ap->ref_attr_name[0]) {
        a->ref_attr_name = pr_arena_strdup(g->arena, ap->ref_attr_name);
        if (!a->ref_attr_name) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
    }
    int kind = attr_kind(ap);
    a->type = (pr_attr_type)kind;
    precis_status st;
    size_t cnt = 0;
    switch (kind) {
    case PR_ATTR_FLOATS: cnt = ap->n_floats; break;
    case PR_ATTR_INTS: cnt = ap->n_ints; break;
    case PR_ATTR_STRINGS: cnt = ap->n_strings; break;
    case PR_ATTR_TENSORS: cnt = ap->n_tensors; break;
    case PR_ATTR_GRAPHS: cnt = ap->n_graphs; break;
    case PR_ATTR_SPARSE_TENSORS: cnt = ap->n_sparse_tensors; break;
    case PR_ATTR_TYPE_PROTOS: cnt = ap->n_type_protos; break;
    default: break;
    }
    if (cnt > (size_t)INT_MAX / 16)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: too many elements (%zu)", what, cnt);
    a->n = (int)cnt;

    switch (kind) {
    case PR_ATTR_FLOAT: a->f = ap->f; break;
    case PR_ATTR_INT: a->i = ap->i; break;
    case PR_ATTR_STRING:
        a->s = pr_arena_strndup(g->arena, ap->s.data ? (const char *)ap->s.data : "",
                                ap->s.data ? ap->s.len : 0);
        if (!a->s) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        a->s_len = ap->s.data ? ap->s.len : 0;
        break;
    case PR_ATTR_TENSOR:
        if (!ap->t) return pr_errf(e, PRECIS_ERR_PARSE, "%s: TENSOR attribute without a tensor", what);
        a->t = pr_arena_alloc(g->arena, sizeof *a->t);
        if (!a->t) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        st = pr_onnx_tensor_decode(ap->t, what, im->base_dir, true, pr_onnx_graph_alloc, g, a->t, e);
        if (st) return st;
        break;
    case PR_ATTR_GRAPH:
        if (!ap->g) return pr_errf(e, PRECIS_ERR_PARSE, "%s: GRAPH attribute without a graph", what);
        st = import_subgraph(im, g, ap->g, what, &a->g, e);
        if (st) return st;
        break;
    case PR_ATTR_FLOATS:
        a->floats = pr_arena_alloc(g->arena, cnt * sizeof(float));
        if (!a->floats) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        if (cnt) memcpy(a->floats, ap->floats, cnt * sizeof(float));
        break;
    case PR_ATTR_INTS:
        a->ints = pr_arena_alloc(g->arena, cnt * sizeof(int64_t));
        if (!a->ints) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        if (cnt) memcpy(a->ints, ap->ints, cnt * sizeof(int64_t));
        break;
    case PR_ATTR_STRINGS:
        a->strings = pr_arena_alloc(g->arena, cnt * sizeof(char *));
        if (!a->strings) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        for (size_t k = 0; k < cnt; k++) {
            const ProtobufCBinaryData *b = &ap->strings[k];
            a->strings[k] = pr_arena_strndup(g->arena, b->data ? (const char *)b->data : "",
                                             b->data ? b->len : 0);
            if (!a->strings[k]) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        }
        break;
    case PR_ATTR_TENSORS:
        a->tensors = pr_arena_alloc(g->arena, cnt * sizeof(pr_const));
        if (!a->tensors) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        for (size_t k = 0; k < cnt; k++) {
            if (!ap->tensors[k])
                return pr_errf(e, PRECIS_ERR_PARSE, "%s: tensor %zu is missing", what, k);
            char w2[600];
            snprintf(w2, sizeof w2, "%s[%zu]", what, k);
            st = pr_onnx_tensor_decode(ap->tensors[k], w2, im->base_dir, true,
                                       pr_onnx_graph_alloc, g, &a->tensors[k], e);
            if (st) return st;
        }
        break;
    case PR_ATTR_GRAPHS:
        a->graphs = pr_arena_alloc(g->arena, cnt * sizeof(pr_graph *));
        if (!a->graphs) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
        for (size_t k = 0; k < cnt; k++) {
            char w2[600];
            snprintf(w2, sizeof w2, "%s[%zu]", what, k);
            if (!ap->graphs[k])
                return pr_errf(e, PRECIS_ERR_PARSE, "%s: graph is missing", w2);
            st = import_subgraph(im, g, ap->graphs[k], w2, &a->graphs[k], e);
            if (st) return st;
        }
        break;
    case PR_ATTR_SPARSE_TENSOR:
    case PR_ATTR_SPARSE_TENSORS:
    case PR_ATTR_TYPE_PROTO:
    case PR_ATTR_TYPE_PROTOS:
    case PR_ATTR_UNDEFINED:
        break; /* kept with its kind only */
    default:
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: unknown attribute type %d", what, kind);
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Constant node */

precis_status pr_onnx_constant_output(pr_graph *g, int ni, pr_err *e) {
    pr_node *n = &g->nodes[ni];
    int out = pr_node_out(n, 0);
    if (n->n_outputs != 1 || out < 0)
        return pr_errf(e, PRECIS_ERR_PARSE, "node '%s' (Constant): must have exactly one output",
                       n->name);
    if (n->n_inputs != 0)
        return pr_errf(e, PRECIS_ERR_PARSE, "node '%s' (Constant): takes no inputs", n->name);
    const pr_attr *val = NULL;
    int nval = 0;
    for (int i = 0; i < n->n_attrs; i++) {
        const pr_attr *a = &n->attrs[i];
        if (!strncmp(a->name, "value", 5) || !strcmp(a->name, "sparse_value")) {
            val = a;
            nval++;
        }
    }
    if (nval != 1)
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "node '%s' (Constant): needs exactly one value attribute, has %d", n->name,
                       nval);
    if (val->ref_attr_name)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "node '%s' (Constant): value refers to function attribute '%s'", n->name,
                       val->ref_attr_name);
    pr_const c;
    memset(&c, 0, sizeof c);
    const char *an = val->name;
    if (!strcmp(an, "value") && val->type == PR_ATTR_TENSOR && val->t) {
        c = *val->t;
        if (!c.data || !pr_dtype_size(c.dtype))
            return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                           "node '%s' (Constant): value of type %s is not supported", n->name,
                           pr_dtype_name(c.dtype));
    } else if (!strcmp(an, "value_float") && val->type == PR_ATTR_FLOAT) {
        c.dtype = PRECIS_FLOAT32;
        c.rank = 0;
        c.nbytes = 4;
        c.data = pr_arena_alloc(g->arena, 4);
        if (c.data) memcpy(c.data, &val->f, 4);
    } else if (!strcmp(an, "value_int") && val->type == PR_ATTR_INT) {
        c.dtype = PRECIS_INT64;
        c.rank = 0;
        c.nbytes = 8;
        c.data = pr_arena_alloc(g->arena, 8);
        if (c.data) memcpy(c.data, &val->i, 8);
    } else if (!strcmp(an, "value_floats") && val->type == PR_ATTR_FLOATS) {
        c.dtype = PRECIS_FLOAT32;
        c.rank = 1;
        c.dims[0] = val->n;
        c.nbytes = (size_t)val->n * 4;
        c.data = val->floats;
    } else if (!strcmp(an, "value_ints") && val->type == PR_ATTR_INTS) {
        c.dtype = PRECIS_INT64;
        c.rank = 1;
        c.dims[0] = val->n;
        c.nbytes = (size_t)val->n * 8;
        c.data = val->ints;
    } else if (!strcmp(an, "value_string") || !strcmp(an, "value_strings") ||
               !strcmp(an, "sparse_value")) {
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (Constant): attribute '%s' is not supported",
                       n->name, an);
    } else {
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "node '%s' (Constant): attribute '%s' is unknown or has the wrong type",
                       n->name, an);
    }
    if (!c.data) return pr_errf(e, PRECIS_ERR_OOM, "node '%s' (Constant): out of memory", n->name);
    pr_tensor *t = &g->tensors[out];
    t->dtype = c.dtype;
    t->rank = c.rank;
    memcpy(t->dims, c.dims, sizeof t->dims);
    t->data = c.data;
    t->nbytes = c.nbytes;
    t->flags |= PR_T_INIT;
    return PRECIS_OK;
}
