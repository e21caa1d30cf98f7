#define _POSIX_C_SOURCE 200809L /* munmap */

#include "ir/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

pr_graph *pr_graph_create(void) {
    pr_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arena = pr_arena_create();
    if (!g->arena) {
        free(g);
        return NULL;
    }
    g->name = "";
    g->producer_name = g->producer_version = g->domain = g->doc = "";
    return g;
}

void pr_graph_destroy(pr_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_subgraphs; i++) pr_graph_destroy(g->subgraphs[i]);
    free(g->subgraphs);
    for (int i = 0; i < g->n_owned; i++) free(g->owned[i]);
    free(g->owned);
    free(g->tensors);
    free(g->nodes);
    free(g->syms);
    free(g->hash);
    pr_arena_destroy(g->arena);
    if (g->map_addr) munmap(g->map_addr, g->map_len);
    free(g);
}

bool pr_graph_add_subgraph(pr_graph *g, pr_graph *sub) {
    if (g->n_subgraphs == g->cap_subgraphs) {
        int cap = g->cap_subgraphs ? 2 * g->cap_subgraphs : 4;
        pr_graph **n = realloc(g->subgraphs, (size_t)cap * sizeof *n);
        if (!n) return false;
        g->subgraphs = n;
        g->cap_subgraphs = cap;
    }
    g->subgraphs[g->n_subgraphs++] = sub;
    sub->parent = g;
    return true;
}

bool pr_graph_own(pr_graph *g, void *p) {
    if (g->n_owned == g->cap_owned) {
        int cap = g->cap_owned ? 2 * g->cap_owned : 16;
        void **n = realloc(g->owned, (size_t)cap * sizeof *n);
        if (!n) return false;
        g->owned = n;
        g->cap_owned = cap;
    }
    g->owned[g->n_owned++] = p;
    return true;
}

bool pr_graph_own_mapping(pr_graph *g, void *addr, size_t len) {
    if (g->map_addr) return false;
    g->map_addr = addr;
    g->map_len = len;
    return true;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool rehash(pr_graph *g, int cap) {
    int *h = malloc((size_t)cap * sizeof *h);
    if (!h) return false;
    for (int i = 0; i < cap; i++) h[i] = -1;
    for (int t = 0; t < g->n_tensors; t++) {
        uint64_t k = hash_str(g->tensors[t].name) & (uint64_t)(cap - 1);
        while (h[k] >= 0) k = (k + 1) & (uint64_t)(cap - 1);
        h[k] = t;
    }
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
    return true;
}

int pr_graph_find_tensor(const pr_graph *g, const char *name) {
    if (!g->hash_cap) return -1;
    uint64_t k = hash_str(name) & (uint64_t)(g->hash_cap - 1);
    while (g->hash[k] >= 0) {
        if (strcmp(g->tensors[g->hash[k]].name, name) == 0) return g->hash[k];
        k = (k + 1) & (uint64_t)(g->hash_cap - 1);
    }
    return -1;
}

int pr_graph_get_tensor(pr_graph *g, const char *name, pr_err *e) {
    int t = pr_graph_find_tensor(g, name);
    if (t >= 0) return t;
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 64;
        pr_tensor *n = realloc(g->tensors, (size_t)cap * sizeof *n);
        if (!n) goto oom;
        g->tensors = n;
        g->cap_tensors = cap;
    }
    if ((g->n_tensors + 1) * 2 > g->hash_cap) {
        if (!rehash(g, g->hash_cap ? 2 * g->hash_cap : 128)) goto oom;
    }
    pr_tensor *tt = &g->tensors[g->n_tensors];
    memset(tt, 0, sizeof *tt);
    tt->name = pr_arena_strdup(g->arena, name);
    if (!tt->name) goto oom;
    tt->rank = -1;
    tt->producer = -1;
    t = g->n_tensors++;
    uint64_t k = hash_str(name) & (uint64_t)(g->hash_cap - 1);
    while (g->hash[k] >= 0) k = (k + 1) & (uint64_t)(g->hash_cap - 1);
    g->hash[k] = t;
    return t;
oom:
    pr_errf(e, PRECIS_ERR_OOM, "out of memory adding tensor '%s'", name);
    return -1;
}

int pr_graph_add_node(pr_graph *g, int n_in, int n_out, int n_attrs, pr_err *e) {
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        pr_node *n = realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n) goto oom;
        g->nodes = n;
        g->cap_nodes = cap;
    }
    pr_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->inputs = pr_arena_alloc(g->arena, (size_t)(n_in ? n_in : 1) * sizeof(int));
    n->outputs = pr_arena_alloc(g->arena, (size_t)(n_out ? n_out : 1) * sizeof(int));
    n->attrs = pr_arena_alloc(g->arena, (size_t)(n_attrs ? n_attrs : 1) * sizeof(pr_attr));
    if (!n->inputs || !n->outputs || !n->attrs) goto oom;
    for (int i = 0; i < n_in; i++) n->inputs[i] = -1;
    for (int i = 0; i < n_out; i++) n->outputs[i] = -1;
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    n->n_attrs = n_attrs;
    n->name = n->op_type = n->domain = "";
    return g->n_nodes++;
oom:
    pr_errf(e, PRECIS_ERR_OOM, "out of memory adding a node");
    return -1;
}

int64_t pr_graph_sym(pr_graph *g, const char *name) {
    for (int i = 0; i < g->n_syms; i++)
        if (strcmp(g->syms[i], name) == 0) return pr_dim_from_sym(i);
    if (g->n_syms == g->cap_syms) {
        int cap = g->cap_syms ? 2 * g->cap_syms : 8;
        const char **n = realloc(g->syms, (size_t)cap * sizeof *n);
        if (!n) return PR_DIM_UNKNOWN;
        g->syms = n;
        g->cap_syms = cap;
    }
    const char *s = pr_arena_strdup(g->arena, name);
    if (!s) return PR_DIM_UNKNOWN;
    g->syms[g->n_syms] = s;
    return pr_dim_from_sym(g->n_syms++);
}

int64_t pr_graph_opset(const pr_graph *g, const char *domain) {
    bool dflt = !domain[0] || strcmp(domain, "ai.onnx") == 0;
    for (int i = 0; i < g->n_opsets; i++) {
        const char *d = g->opsets[i].domain;
        bool ddflt = !d[0] || strcmp(d, "ai.onnx") == 0;
        if ((dflt && ddflt) || strcmp(d, domain) == 0) return g->opsets[i].version;
    }
    return 0;
}

int64_t pr_numel(int rank, const int64_t *dims) {
    if (rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] != 0 && n > INT64_MAX / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

const pr_attr *pr_attr_find(const pr_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t pr_attr_int(const pr_node *n, const char *name, int64_t def) {
    const pr_attr *a = pr_attr_find(n, name);
    return a && a->type == PR_ATTR_INT ? a->i : def;
}

float pr_attr_float(const pr_node *n, const char *name, float def) {
    const pr_attr *a = pr_attr_find(n, name);
    if (!a) return def;
    if (a->type == PR_ATTR_FLOAT) return a->f;
    if (a->type == PR_ATTR_INT) return (float)a->i;
    return def;
}

const char *pr_attr_str(const pr_node *n, const char *name, const char *def) {
    const pr_attr *a = pr_attr_find(n, name);
    return a && a->type == PR_ATTR_STRING ? a->s : def;
}

int pr_attr_ints(const pr_node *n, const char *name, const int64_t **out) {
    const pr_attr *a = pr_attr_find(n, name);
    if (!a || (a->type != PR_ATTR_INTS && a->type != PR_ATTR_INT)) {
        *out = NULL;
        return -1;
    }
    if (a->type == PR_ATTR_INT) {
        *out = &a->i;
        return 1;
    }
    *out = a->ints;
    return a->n;
}

int pr_attr_floats(const pr_node *n, const char *name, const float **out) {
    const pr_attr *a = pr_attr_find(n, name);
    if (!a || a->type != PR_ATTR_FLOATS) {
        *out = NULL;
        return -1;
    }
    *out = a->floats;
    return a->n;
}

const char *pr_shape_str(const pr_graph *g, pr_dtype dt, int rank, const int64_t *dims,
                         char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "%s", pr_dtype_name(dt));
    if (rank < 0) {
        if (n < cap) snprintf(buf + n, cap - n, "[?]");
        return buf;
    }
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < rank && n < cap; i++) {
        const char *sep = i ? "," : "";
        if (dims[i] >= 0)
            n += (size_t)snprintf(buf + n, cap - n, "%s%lld", sep, (long long)dims[i]);
        else if (pr_dim_is_sym(dims[i]) && g && pr_dim_sym_index(dims[i]) < g->n_syms)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, g->syms[pr_dim_sym_index(dims[i])]);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s?", sep);
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}
