/* ONNX export: the ModelProto writer (graph, initializers, value infos,
 * attributes, opsets, metadata) and the helpers the op rewrites use
 * (onnx_export_ops.c). See onnx_export.h for what is written. */
#define _POSIX_C_SOURCE 200809L

#include "onnx/onnx_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_export_internal.h"
#include "precis/precis.h"

/* Largest message protobuf (and so every ONNX reader) accepts. */
#define PR_EX_MAX_BYTES ((size_t)2147483647)

/* ------------------------------------------------------------ string set */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool set_has(const pr_ex_set *s, const char *k) {
    if (!s->cap) return false;
    for (size_t i = hash_str(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->v[i]) return false;
        if (strcmp(s->v[i], k) == 0) return true;
    }
}

/* Adds k (borrowed); false on OOM. */
static bool set_add(pr_ex_set *s, const char *k) {
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        const char **v = calloc(cap, sizeof *v);
        if (!v) return false;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i]) continue;
            size_t j = hash_str(s->v[i]) & (cap - 1);
            while (v[j]) j = (j + 1) & (cap - 1);
            v[j] = s->v[i];
        }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    size_t i = hash_str(k) & (s->cap - 1);
    for (; s->v[i]; i = (i + 1) & (s->cap - 1))
        if (strcmp(s->v[i], k) == 0) return true;
    s->v[i] = k;
    s->n++;
    return true;
}

static void set_free(pr_ex_set *s) {
    free(s->v);
    s->v = NULL;
    s->cap = s->n = 0;
}

/* -------------------------------------------------------------- helpers */

static void *ex_alloc(pr_ex *x, size_t n) {
    void *p = pr_arena_alloc(x->a, n ? n : 1);
    if (!p) x->oom = true;
    return p;
}

/* "<a>/<b>" or "<a>/<b>_<k>" (k >= 2) in the arena. */
static char *ex_join(pr_ex *x, const char *a, const char *b, int k) {
    char suffix[32] = "";
    if (k >= 2) snprintf(suffix, sizeof suffix, "_%d", k);
    size_t la = strlen(a), lb = b ? strlen(b) : 0, ls = strlen(suffix);
    char *r = ex_alloc(x, la + lb + ls + 2);
    if (!r) return NULL;
    memcpy(r, a, la);
    size_t p = la;
    if (b) {
        r[p++] = '/';
        memcpy(r + p, b, lb);
        p += lb;
    }
    memcpy(r + p, suffix, ls + 1);
    return r;
}

precis_status pr_ex_status(pr_ex *x, const pr_node *n) {
    if (!x->oom) return PRECIS_OK;
    if (n) return pr_errf(x->e, PRECIS_ERR_OOM, "out of memory exporting node '%s'", n->name);
    return pr_errf(x->e, PRECIS_ERR_OOM, "out of memory exporting the model");
}

const char *pr_ex_tensor(pr_ex *x, int t) {
    if (t < 0 || t >= x->g->n_tensors) return "";
    x->used[t] = 1;
    return x->tname[t];
}

const char *pr_ex_fresh(pr_ex *x, const char *base, const char *suffix) {
    for (int k = 1; k < 1000000; k++) {
        char *c = ex_join(x, base && base[0] ? base : "precis", suffix, k);
        if (!c) return "";
        if (pr_graph_find_tensor(x->g, c) < 0 && !set_has(&x->tensor_names, c)) {
            if (!set_add(&x->tensor_names, c)) x->oom = true;
            return c;
        }
    }
    x->oom = true;
    return "";
}

/* A unique node name: `name` itself when not written yet (and, for a
 * derived name, not the name of some IR node), else name_2, name_3 ... */
static const char *node_name(pr_ex *x, const char *name, bool original) {
    if (!name || !name[0]) name = "node";
    for (int k = 1; k < 1000000; k++) {
        const char *c = k == 1 ? name : ex_join(x, name, NULL, k);
        if (!c) return "";
        bool taken =
            set_has(&x->node_names, c) || ((k > 1 || !original) && set_has(&x->reserved_nodes, c));
        if (taken) continue;
        if (!set_add(&x->node_names, c)) x->oom = true;
        return c;
    }
    x->oom = true;
    return "";
}

Onnx__NodeProto *pr_ex_node(pr_ex *x, const char *op_type, const char *domain, const char *name,
                            bool original_name, int n_in, const char *const *in, int n_out,
                            const char *const *out) {
    Onnx__NodeProto *n = ex_alloc(x, sizeof *n);
    if (!n) return NULL;
    onnx__node_proto__init(n);
    while (n_in > 0 && (!in[n_in - 1] || !in[n_in - 1][0])) n_in--; /* trailing omitted */
    n->input = ex_alloc(x, (size_t)(n_in > 0 ? n_in : 1) * sizeof(char *));
    n->output = ex_alloc(x, (size_t)(n_out > 0 ? n_out : 1) * sizeof(char *));
    if (!n->input || !n->output) return NULL;
    for (int i = 0; i < n_in; i++) n->input[i] = (char *)(in[i] ? in[i] : "");
    for (int i = 0; i < n_out; i++) n->output[i] = (char *)(out[i] ? out[i] : "");
    n->n_input = (size_t)n_in;
    n->n_output = (size_t)n_out;
    n->op_type = (char *)op_type;
    n->domain = (char *)(domain ? domain : "");
    n->name = (char *)node_name(x, name, original_name);
    if (x->n_nodes == x->cap_nodes) {
        size_t cap = x->cap_nodes ? 2 * x->cap_nodes : 256;
        Onnx__NodeProto **v = realloc(x->nodes, cap * sizeof *v);
        if (!v) {
            x->oom = true;
            return NULL;
        }
        x->nodes = v;
        x->cap_nodes = cap;
    }
    x->nodes[x->n_nodes++] = n;
    return n;
}

const char *pr_ex_opn(pr_ex *x, const char *op_type, const char *base, int n_in,
                      const char *const *in, Onnx__NodeProto **np) {
    const char *out = pr_ex_fresh(x, base, op_type);
    char *name = ex_join(x, base && base[0] ? base : "precis", op_type, 1);
    Onnx__NodeProto *n = name ? pr_ex_node(x, op_type, "", name, false, n_in, in, 1, &out) : NULL;
    if (np) *np = n;
    return out;
}

const char *pr_ex_op1(pr_ex *x, const char *op_type, const char *base, const char *a,
                      Onnx__NodeProto **np) {
    return pr_ex_opn(x, op_type, base, 1, &a, np);
}

const char *pr_ex_op2(pr_ex *x, const char *op_type, const char *base, const char *a,
                      const char *b) {
    const char *in[2] = {a, b};
    return pr_ex_opn(x, op_type, base, 2, in, NULL);
}

void pr_ex_finish(pr_ex *x, const char *cur, const char *out, const char *base) {
    if (x->oom) return;
    Onnx__NodeProto *last = x->n_nodes ? x->nodes[x->n_nodes - 1] : NULL;
    if (last && last->n_output >= 1 && last->output[0] == cur) {
        last->output[0] = (char *)out;
        return;
    }
    char *name = ex_join(x, base && base[0] ? base : "precis", "Identity", 1);
    if (name) pr_ex_node(x, "Identity", "", name, false, 1, &cur, 1, &out);
}

/* ------------------------------------------------------------ attributes */

static Onnx__AttributeProto *new_attr(pr_ex *x, Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type) {
    if (!n) return NULL;
    Onnx__AttributeProto *a = ex_alloc(x, sizeof *a);
    Onnx__AttributeProto **v = ex_alloc(x, (n->n_attribute + 1) * sizeof *v);
    if (!a || !v) return NULL;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute) memcpy(v, n->attribute, n->n_attribute * sizeof *v);
    v[n->n_attribute] = a;
    n->attribute = v;
    n->n_attribute++;
    return a;
}

void pr_ex_attr_int(pr_ex *x, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = new_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

void pr_ex_attr_float(pr_ex *x, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = new_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

void pr_ex_attr_ints(pr_ex *x, Onnx__NodeProto *n, const char *name, const int64_t *v, int cnt) {
    Onnx__AttributeProto *a = new_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a) return;
    a->ints = ex_alloc(x, (size_t)(cnt > 0 ? cnt : 1) * sizeof(int64_t));
    if (!a->ints) return;
    if (cnt > 0) memcpy(a->ints, v, (size_t)cnt * sizeof(int64_t));
    a->n_ints = (size_t)(cnt > 0 ? cnt : 0);
}

void pr_ex_attr_str(pr_ex *x, Onnx__NodeProto *n, const char *name, const char *s) {
    Onnx__AttributeProto *a = new_attr(x, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a) return;
    a->has_s = 1;
    a->s.data = (uint8_t *)s;
    a->s.len = strlen(s);
}

/* ---------------------------------------------------------------- tensors */

static bool host_big_endian(void) {
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 0;
}

/* A TensorProto with raw_data (little-endian). data is borrowed on
 * little-endian hosts (it must outlive the packing). */
static Onnx__TensorProto *tensor_proto(pr_ex *x, const char *name, pr_dtype dt, int rank,
                                       const int64_t *dims, const void *data, size_t nbytes,
                                       const char *what, precis_status *st) {
    *st = PRECIS_OK;
    size_t es = pr_dtype_size(dt);
    if (!es) {
        *st = pr_errf(x->e, PRECIS_ERR_UNSUPPORTED, "%s: data type %s (%d) cannot be exported",
                      what, pr_dtype_name(dt), (int)dt);
        return NULL;
    }
    int64_t numel = pr_numel(rank, dims);
    if (rank < 0 || numel < 0 || (uint64_t)numel > SIZE_MAX / es || (size_t)numel * es != nbytes ||
        (nbytes && !data)) {
        *st = pr_errf(x->e, PRECIS_ERR_INVALID_ARG,
                      "%s: its data (%zu bytes) does not match its type and shape", what, nbytes);
        return NULL;
    }
    Onnx__TensorProto *tp = ex_alloc(x, sizeof *tp);
    int64_t *d = ex_alloc(x, (size_t)(rank ? rank : 1) * sizeof(int64_t));
    if (!tp || !d) return NULL;
    onnx__tensor_proto__init(tp);
    if (rank) memcpy(d, dims, (size_t)rank * sizeof(int64_t));
    tp->dims = d;
    tp->n_dims = (size_t)rank;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)dt;
    tp->name = (char *)(name ? name : "");
    tp->has_raw_data = 1;
    tp->raw_data.len = nbytes;
    tp->raw_data.data = (uint8_t *)data;
    if (nbytes && host_big_endian() && es > 1) {
        uint8_t *c = ex_alloc(x, nbytes);
        if (!c) return NULL;
        for (size_t i = 0; i < nbytes; i += es)
            for (size_t k = 0; k < es; k++) c[i + k] = ((const uint8_t *)data)[i + es - 1 - k];
        tp->raw_data.data = c;
    }
    if (!nbytes) tp->raw_data.data = (uint8_t *)"";
    return tp;
}

static bool push_init(pr_ex *x, Onnx__TensorProto *tp) {
    if (x->n_inits == x->cap_inits) {
        size_t cap = x->cap_inits ? 2 * x->cap_inits : 64;
        Onnx__TensorProto **v = realloc(x->inits, cap * sizeof *v);
        if (!v) return false;
        x->inits = v;
        x->cap_inits = cap;
    }
    x->inits[x->n_inits++] = tp;
    return true;
}

const char *pr_ex_const(pr_ex *x, const char *base, pr_dtype dt, int rank, const int64_t *dims,
                        const void *data) {
    const char *name = pr_ex_fresh(x, base, NULL);
    int64_t numel = pr_numel(rank, dims);
    size_t nbytes = (size_t)(numel > 0 ? numel : 0) * pr_dtype_size(dt);
    void *copy = ex_alloc(x, nbytes);
    if (x->oom || !copy) return "";
    if (nbytes) memcpy(copy, data, nbytes);
    precis_status st;
    Onnx__TensorProto *tp = tensor_proto(x, name, dt, rank, dims, copy, nbytes, name, &st);
    if (!tp || !push_init(x, tp)) x->oom = true;
    return name;
}

const char *pr_ex_ints(pr_ex *x, const char *base, const int64_t *v, int n) {
    int64_t d = n;
    return pr_ex_const(x, base, PRECIS_INT64, 1, &d, v);
}

const char *pr_ex_scalar(pr_ex *x, pr_dtype dt, double v) {
    if (!pr_dtype_size(dt) || dt == PRECIS_BOOL) dt = PRECIS_FLOAT32;
    for (int i = 0; i < x->n_scalars; i++)
        if (x->scalars[i].dt == dt && memcmp(&x->scalars[i].v, &v, sizeof v) == 0)
            return x->scalars[i].name;
    uint64_t buf = 0;
    pr_store_f64(&buf, dt, 0, v);
    char base[64];
    snprintf(base, sizeof base, "precis_const/%s_%.9g", pr_dtype_name(dt), v);
    const char *name = pr_ex_const(x, base, dt, 0, NULL, &buf);
    if (!x->oom && x->n_scalars < PR_EX_SCALAR_CACHE) {
        x->scalars[x->n_scalars].dt = dt;
        x->scalars[x->n_scalars].v = v;
        x->scalars[x->n_scalars].name = name;
        x->n_scalars++;
    }
    return name;
}

/* --------------------------------------------------------- attribute copy */

precis_status pr_ex_attr_copy(pr_ex *x, Onnx__NodeProto *n, const pr_node *owner,
                              const pr_attr *a) {
    const char *an = a->name ? a->name : "";
    if (a->ref_attr_name)
        return pr_errf(x->e, PRECIS_ERR_UNSUPPORTED,
                       "node '%s' (%s): attribute '%s' refers to a function attribute ('%s'): "
                       "only function bodies may do that",
                       owner->name, owner->op_type, an, a->ref_attr_name);
    Onnx__AttributeProto *p;
    precis_status st = PRECIS_OK;
    switch (a->type) {
    case PR_ATTR_FLOAT: pr_ex_attr_float(x, n, an, a->f); break;
    case PR_ATTR_INT: pr_ex_attr_int(x, n, an, a->i); break;
    case PR_ATTR_STRING:
        p = new_attr(x, n, an, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
        if (p) {
            p->has_s = 1;
            p->s.data = (uint8_t *)(a->s ? a->s : "");
            p->s.len = a->s ? a->s_len : 0;
        }
        break;
    case PR_ATTR_FLOATS:
        p = new_attr(x, n, an, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
        if (p && a->n > 0) {
            p->floats = a->floats;
            p->n_floats = (size_t)a->n;
        }
        break;
    case PR_ATTR_INTS: pr_ex_attr_ints(x, n, an, a->ints, a->n); break;
    case PR_ATTR_STRINGS:
        p = new_attr(x, n, an, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
        if (p && a->n > 0) {
            p->strings = ex_alloc(x, (size_t)a->n * sizeof *p->strings);
            if (!p->strings) break;
            for (int k = 0; k < a->n; k++) {
                const char *s = a->strings[k] ? a->strings[k] : "";
                p->strings[k].data = (uint8_t *)s;
                p->strings[k].len = strlen(s);
            }
            p->n_strings = (size_t)a->n;
        }
        break;
    case PR_ATTR_TENSOR:
    case PR_ATTR_TENSORS: {
        bool one = a->type == PR_ATTR_TENSOR;
        int cnt = one ? 1 : a->n;
        if (one && !a->t)
            return pr_errf(x->e, PRECIS_ERR_INVALID_ARG,
                           "node '%s' (%s): attribute '%s' has no tensor", owner->name,
                           owner->op_type, an);
        p = new_attr(x, n, an,
                     one ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR
                         : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
        if (!p) break;
        Onnx__TensorProto **v = ex_alloc(x, (size_t)(cnt > 0 ? cnt : 1) * sizeof *v);
        if (!v) break;
        for (int k = 0; k < cnt; k++) {
            const pr_const *c = one ? a->t : &a->tensors[k];
            char what[512];
            snprintf(what, sizeof what, "node '%s' (%s) attribute '%s'", owner->name,
                     owner->op_type, an);
            v[k] = tensor_proto(x, "", c->dtype, c->rank, c->dims, c->data, c->nbytes, what, &st);
            if (st) return st;
            if (!v[k]) break;
        }
        if (one) {
            p->t = v[0];
        } else if (cnt > 0) {
            p->tensors = v;
            p->n_tensors = (size_t)cnt;
        }
        break;
    }
    case PR_ATTR_GRAPH:
    case PR_ATTR_GRAPHS:
        return pr_errf(x->e, PRECIS_ERR_UNSUPPORTED,
                       "node '%s' (%s): attribute '%s' holds a subgraph: graphs with control flow "
                       "(If/Loop/Scan) cannot be exported",
                       owner->name, owner->op_type, an);
    default:
        return pr_errf(x->e, PRECIS_ERR_UNSUPPORTED,
                       "node '%s' (%s): attribute '%s' is of a kind precis does not keep (type %d) "
                       "and cannot be exported",
                       owner->name, owner->op_type, an, (int)a->type);
    }
    return PRECIS_OK;
}

/* ------------------------------------------------------------- node copy */

static bool skipped(const char *name, const char *const *skip) {
    if (!strncmp(name, "precis_", 7)) return true;
    for (; skip && *skip; skip++)
        if (strcmp(*skip, name) == 0) return true;
    return false;
}

precis_status pr_ex_copy(pr_ex *x, const pr_node *n, const char *op, const char *const *ins,
                         int n_in, int n_out, const char *const *skip, Onnx__NodeProto **out) {
    if (out) *out = NULL;
    const char **in = NULL, **on = NULL;
    if (!ins) n_in = n->n_inputs;
    if (n_out < 0 || n_out > n->n_outputs) n_out = n->n_outputs;
    in = ex_alloc(x, (size_t)(n_in > 0 ? n_in : 1) * sizeof *in);
    on = ex_alloc(x, (size_t)(n_out > 0 ? n_out : 1) * sizeof *on);
    if (!in || !on) return pr_ex_status(x, n);
    for (int i = 0; i < n_in; i++) in[i] = ins ? ins[i] : pr_ex_tensor(x, n->inputs[i]);
    for (int i = 0; i < n_out; i++) on[i] = pr_ex_tensor(x, n->outputs[i]);
    const char *domain = !strcmp(n->domain, "ai.onnx") ? "" : n->domain;
    Onnx__NodeProto *p =
        pr_ex_node(x, op ? op : n->op_type, domain, n->name, true, n_in, in, n_out, on);
    if (!p) return pr_ex_status(x, n);
    for (int k = 0; k < n->n_attrs; k++) {
        const pr_attr *a = &n->attrs[k];
        if (!a->name || skipped(a->name, skip)) continue;
        precis_status st = pr_ex_attr_copy(x, p, n, a);
        if (st) return st;
    }
    if (out) *out = p;
    return pr_ex_status(x, n);
}

/* ------------------------------------------------------------- the model */

static Onnx__ValueInfoProto *value_info(pr_ex *x, int t) {
    const pr_graph *g = x->g;
    const pr_tensor *pt = &g->tensors[t];
    Onnx__ValueInfoProto *vi = ex_alloc(x, sizeof *vi);
    Onnx__TypeProto *tp = ex_alloc(x, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = ex_alloc(x, sizeof *tt);
    if (!vi || !tp || !tt) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)pr_ex_tensor(x, t);
    vi->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (pt->dtype != PRECIS_UNDEFINED) {
        tt->has_elem_type = 1;
        tt->elem_type = (int32_t)pt->dtype;
    }
    if (pt->rank < 0 || pt->rank > PR_MAX_RANK) return vi;
    Onnx__TensorShapeProto *sh = ex_alloc(x, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims =
        ex_alloc(x, (size_t)(pt->rank ? pt->rank : 1) * sizeof *dims);
    if (!sh || !dims) return NULL;
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < pt->rank; d++) {
        Onnx__TensorShapeProto__Dimension *dm = ex_alloc(x, sizeof *dm);
        if (!dm) return NULL;
        onnx__tensor_shape_proto__dimension__init(dm);
        int64_t v = pt->dims[d];
        if (pr_dim_known(v)) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = v;
        } else if (pr_dim_is_sym(v) && pr_dim_sym_index(v) < g->n_syms &&
                   g->syms[pr_dim_sym_index(v)]) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = (char *)g->syms[pr_dim_sym_index(v)];
        }
        dims[d] = dm;
    }
    sh->dim = dims;
    sh->n_dim = (size_t)pt->rank;
    tt->shape = sh;
    return vi;
}

/* IR version a reader needs for default-domain opset v. */
static int64_t ir_for_opset(int64_t v) {
    if (v >= 23) return 11;
    if (v >= 21) return 10;
    if (v >= 19) return 9;
    return 8;
}

static bool default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

static precis_status build_model(pr_ex *x, Onnx__ModelProto *m) {
    const pr_graph *g = x->g;
    pr_err *e = x->e;
    precis_status st;
    /* names, use counts */
    for (int t = 0; t < g->n_tensors; t++)
        x->tname[t] = g->tensors[t].name ? g->tensors[t].name : "";
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (!n->op_type)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "node %d is dead (compact the graph before exporting)", i);
        if (n->name && !set_add(&x->reserved_nodes, n->name)) return pr_ex_status(x, NULL);
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && n->inputs[k] < g->n_tensors) x->uses[n->inputs[k]]++;
    }
    for (int i = 0; i < g->n_outputs; i++) x->uses[g->outputs[i]]++;
    /* nodes */
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            if (t >= g->n_tensors)
                return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                               "node '%s' (%s): input %d is out of range", n->name, n->op_type, k);
            const pr_tensor *pt = &g->tensors[t];
            if (pt->producer < 0 && !(pt->flags & (PR_T_INPUT | PR_T_INIT)))
                return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                               "node '%s' (%s): input %d ('%s') is not defined in the graph",
                               n->name, n->op_type, k, pt->name);
        }
        if ((st = pr_ex_export_node(x, i))) return st;
        if ((st = pr_ex_status(x, n))) return st;
    }
    /* graph inputs / outputs */
    Onnx__GraphProto *gp = ex_alloc(x, sizeof *gp);
    if (!gp) return pr_ex_status(x, NULL);
    onnx__graph_proto__init(gp);
    gp->name = (char *)(g->name && g->name[0] ? g->name : "precis");
    gp->input = ex_alloc(x, (size_t)(g->n_inputs + 1) * sizeof *gp->input);
    gp->output = ex_alloc(x, (size_t)(g->n_outputs + 1) * sizeof *gp->output);
    if (!gp->input || !gp->output) return pr_ex_status(x, NULL);
    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[gp->n_input++] = value_info(x, g->inputs[i]))) return pr_ex_status(x, NULL);
    for (int i = 0; i < g->n_outputs; i++) {
        int t = g->outputs[i];
        const pr_tensor *pt = &g->tensors[t];
        if (pt->producer < 0 && !(pt->flags & (PR_T_INPUT | PR_T_INIT)))
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "graph output '%s' is not produced by any node", pt->name);
        if (!(gp->output[gp->n_output++] = value_info(x, t))) return pr_ex_status(x, NULL);
    }
    /* initializers: the graph's (those still used), then the exporter's */
    size_t n_ir = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *pt = &g->tensors[t];
        n_ir +=
            x->used[t] && (pt->flags & PR_T_INIT) && pt->producer < 0 && !(pt->flags & PR_T_INPUT);
    }
    gp->initializer = ex_alloc(x, (n_ir + x->n_inits + 1) * sizeof *gp->initializer);
    if (!gp->initializer) return pr_ex_status(x, NULL);
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *pt = &g->tensors[t];
        if (!x->used[t] || !(pt->flags & PR_T_INIT) || pt->producer >= 0 ||
            (pt->flags & PR_T_INPUT))
            continue;
        char what[512];
        snprintf(what, sizeof what, "initializer '%s'", pt->name);
        Onnx__TensorProto *tp = tensor_proto(x, x->tname[t], pt->dtype, pt->rank, pt->dims,
                                             pt->data, pt->nbytes, what, &st);
        if (st) return st;
        if (!tp) return pr_ex_status(x, NULL);
        gp->initializer[gp->n_initializer++] = tp;
    }
    for (size_t i = 0; i < x->n_inits; i++) gp->initializer[gp->n_initializer++] = x->inits[i];
    gp->node = x->nodes;
    gp->n_node = x->n_nodes;

    /* opsets: the default domain, then every other domain a node uses */
    size_t n_dom = 1;
    Onnx__OperatorSetIdProto **ops = ex_alloc(x, (x->n_nodes + 1) * sizeof *ops);
    Onnx__OperatorSetIdProto *o0 = ex_alloc(x, sizeof *o0);
    if (!ops || !o0) return pr_ex_status(x, NULL);
    onnx__operator_set_id_proto__init(o0);
    o0->domain = (char *)"";
    o0->has_version = 1;
    o0->version = x->opset;
    ops[0] = o0;
    for (size_t i = 0; i < x->n_nodes; i++) {
        const char *d = x->nodes[i]->domain;
        if (default_domain(d)) continue;
        if (!strcmp(d, PR_FUSED_DOMAIN))
            return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s) kept the %s domain",
                           x->nodes[i]->name, x->nodes[i]->op_type, PR_FUSED_DOMAIN);
        bool seen = false;
        for (size_t k = 1; k < n_dom && !seen; k++) seen = !strcmp(ops[k]->domain, d);
        if (seen) continue;
        Onnx__OperatorSetIdProto *o = ex_alloc(x, sizeof *o);
        if (!o) return pr_ex_status(x, NULL);
        onnx__operator_set_id_proto__init(o);
        o->domain = (char *)d;
        o->has_version = 1;
        o->version = pr_graph_opset(g, d) > 0 ? pr_graph_opset(g, d) : 1;
        ops[n_dom++] = o;
    }
    /* metadata */
    Onnx__StringStringEntryProto **md = ex_alloc(x, (size_t)(g->n_metadata + 1) * sizeof *md);
    if (!md) return pr_ex_status(x, NULL);
    for (int i = 0; i < g->n_metadata; i++) {
        Onnx__StringStringEntryProto *kv = ex_alloc(x, sizeof *kv);
        if (!kv) return pr_ex_status(x, NULL);
        onnx__string_string_entry_proto__init(kv);
        kv->key = (char *)(g->metadata[i].key ? g->metadata[i].key : "");
        kv->value = (char *)(g->metadata[i].value ? g->metadata[i].value : "");
        md[i] = kv;
    }
    int64_t ir = ir_for_opset(x->opset);
    m->has_ir_version = 1;
    m->ir_version = g->ir_version > ir ? g->ir_version : ir;
    m->opset_import = ops;
    m->n_opset_import = n_dom;
    m->producer_name = (char *)"precis";
    m->producer_version = (char *)precis_version();
    m->domain = (char *)(g->domain ? g->domain : "");
    if (g->model_version) {
        m->has_model_version = 1;
        m->model_version = g->model_version;
    }
    m->doc_string = (char *)(g->doc ? g->doc : "");
    m->graph = gp;
    m->metadata_props = md;
    m->n_metadata_props = (size_t)g->n_metadata;
    return pr_ex_status(x, NULL);
}

/* Names in messages come from the model: keep the message on one line. */
static precis_status one_line(pr_err *e, precis_status st) {
    if (e && st)
        for (char *p = e->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return st;
}

precis_status pr_onnx_save_memory(const pr_graph *g, void **out, size_t *len, pr_err *e) {
    if (!g || !out || !len)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_onnx_save_memory: NULL argument");
    *out = NULL;
    *len = 0;
    if (g->parent)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "export: '%s' is a subgraph, not a model",
                       g->name ? g->name : "");
    precis_status st;
    pr_ex x;
    memset(&x, 0, sizeof x);
    x.g = g;
    x.e = e;
    int64_t v = pr_graph_opset(g, "");
    x.opset = v > 13 ? v : 13;
    /* float8 tensors (an fp8 QDQ graph) need QuantizeLinear / DequantizeLinear 19 */
    for (int t = 0; t < g->n_tensors && x.opset < 19; t++)
        if (g->tensors[t].dtype == PRECIS_FLOAT8E4M3FN) x.opset = 19;
    x.a = pr_arena_create();
    size_t nt = (size_t)(g->n_tensors > 0 ? g->n_tensors : 1);
    x.tname = calloc(nt, sizeof *x.tname);
    x.uses = calloc(nt, sizeof *x.uses);
    x.used = calloc(nt, sizeof *x.used);
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    uint8_t *buf = NULL;
    if (!x.a || !x.tname || !x.uses || !x.used) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory exporting the model");
        goto done;
    }
    if ((st = build_model(&x, &m))) goto done;
    size_t n = protobuf_c_message_get_packed_size(&m.base);
    if (n > PR_EX_MAX_BYTES) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                     "export: the model needs %zu bytes, more than the 2 GiB a single ONNX file "
                     "can hold (external data is not written)",
                     n);
        goto done;
    }
    buf = malloc(n ? n : 1);
    if (!buf) {
        st = pr_errf(e, PRECIS_ERR_OOM, "export: out of memory (%zu bytes)", n);
        goto done;
    }
    if (protobuf_c_message_pack(&m.base, buf) != n) {
        st = pr_errf(e, PRECIS_ERR_INTERNAL, "export: protobuf packing wrote an unexpected size");
        goto done;
    }
    *out = buf;
    *len = n;
    buf = NULL;
done:
    free(buf);
    free(x.nodes);
    free(x.inits);
    free(x.tname);
    free(x.uses);
    free(x.used);
    set_free(&x.reserved_nodes);
    set_free(&x.node_names);
    set_free(&x.tensor_names);
    pr_arena_destroy(x.a);
    return one_line(e, st);
}

precis_status pr_onnx_save(const pr_graph *g, const char *path, pr_err *e) {
    if (!g || !path || !path[0])
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_onnx_save: NULL argument");
    void *buf;
    size_t len;
    precis_status st = pr_onnx_save_memory(g, &buf, &len, e);
    if (st) return st;
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    if (!tmp) {
        free(buf);
        return pr_errf(e, PRECIS_ERR_OOM, "cannot write '%s': out of memory", path);
    }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        goto done;
    }
    bool ok = fwrite(buf, 1, len, f) == len;
    int err = ok ? 0 : errno;
    if (fflush(f) != 0 && ok) ok = false, err = errno;
    if (fclose(f) != 0 && ok) ok = false, err = errno;
    if (!ok) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write '%s': %s", path,
                     err ? strerror(err) : "short write");
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        unlink(tmp);
    }
done:
    free(tmp);
    free(buf);
    return one_line(e, st);
}
