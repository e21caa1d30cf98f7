/* The graph IR: tensors, nodes and attributes.
 *
 * Strings, attribute payloads and initializer data live in the graph's arena
 * (or in memory the graph owns) and are freed with the graph. Tensors and
 * nodes are referred to by index (int) into g->tensors / g->nodes; the arrays
 * may move when grown, so never keep pointers to elements across additions.
 *
 * Dims: d >= 0 is a known size; PR_DIM_UNKNOWN (-1) unknown; d <= -2 is the
 * symbolic dim with name g->syms[pr_dim_sym_index(d)] (e.g. "batch").
 *
 * Every node keeps its original ONNX name for ever (name); passes that fuse or
 * rewrite nodes record which originals they cover, never rename them.
 */
#ifndef PR_IR_GRAPH_H
#define PR_IR_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/err.h"
#include "ir/ops.h"

#define PR_MAX_RANK PRECIS_MAX_RANK
#define PR_DIM_UNKNOWN ((int64_t)-1)
static inline bool pr_dim_known(int64_t d) { return d >= 0; }
static inline bool pr_dim_is_sym(int64_t d) { return d <= -2; }
static inline int pr_dim_sym_index(int64_t d) { return (int)(-2 - d); }
static inline int64_t pr_dim_from_sym(int idx) { return -2 - (int64_t)idx; }

enum {
    PR_T_INPUT = 1u << 0,  /* graph input (not an initializer) */
    PR_T_OUTPUT = 1u << 1, /* graph output */
    PR_T_INIT = 1u << 2,   /* initializer or Constant-node output: data is set */
    PR_T_FOLDED = 1u << 3, /* data set by constant folding; its node still produces it */
};

typedef struct pr_tensor {
    const char *name;
    pr_dtype dtype;        /* PRECIS_UNDEFINED until known */
    int rank;              /* -1: unknown */
    int64_t dims[PR_MAX_RANK];
    void *data;            /* PR_T_INIT: contents, row-major, pr_dtype_size aligned */
    size_t nbytes;
    int producer;          /* index of producing node, -1 if none */
    uint32_t flags;
    uint8_t layout;        /* physical layout chosen by the layout pass (pr_layout) */
} pr_tensor;

/* Physical storage order of an activation. Dims always stay logical (ONNX
 * order, e.g. N,C,H,W); only a backend that reads the layout cares. The ref
 * backend ignores it (every tensor is plain for ref), so an optimized graph
 * stays runnable on ref. */
typedef enum pr_layout {
    PR_LAYOUT_PLAIN = 0, /* row-major in the logical dims */
    PR_LAYOUT_NHWC = 1,  /* rank-4 N,C,H,W stored as N,H,W,C */
} pr_layout;

typedef enum pr_attr_type {
    PR_ATTR_UNDEFINED = 0,
    PR_ATTR_FLOAT = 1,
    PR_ATTR_INT = 2,
    PR_ATTR_STRING = 3,
    PR_ATTR_TENSOR = 4,
    PR_ATTR_GRAPH = 5,
    PR_ATTR_FLOATS = 6,
    PR_ATTR_INTS = 7,
    PR_ATTR_STRINGS = 8,
    PR_ATTR_TENSORS = 9,
    PR_ATTR_GRAPHS = 10,
    PR_ATTR_SPARSE_TENSOR = 11,
    PR_ATTR_SPARSE_TENSORS = 12,
    PR_ATTR_TYPE_PROTO = 13,
    PR_ATTR_TYPE_PROTOS = 14
} pr_attr_type;

struct pr_graph;

/* A constant tensor carried by an attribute (e.g. Constant.value). */
typedef struct pr_const {
    pr_dtype dtype;
    int rank;
    int64_t dims[PR_MAX_RANK];
    void *data;
    size_t nbytes;
} pr_const;

typedef struct pr_attr {
    const char *name;
    pr_attr_type type;
    float f;
    int64_t i;
    const char *s; /* NUL-terminated; s_len excludes the NUL (strings may hold NULs) */
    size_t s_len;
    pr_const *t;
    struct pr_graph *g;
    int n;         /* element count of the list kinds below */
    float *floats;
    int64_t *ints;
    const char **strings;
    pr_const *tensors;
    struct pr_graph **graphs;
    const char *ref_attr_name; /* set for attributes referring to a function's attribute */
} pr_attr;

typedef struct pr_node {
    const char *name;     /* original ONNX name; synthesised "<op>_<index>" if empty */
    const char *op_type;  /* as written in the model */
    const char *domain;   /* "" for the default ONNX domain */
    pr_op op;             /* PR_OP_UNKNOWN if op_type/domain not in ops.inc */
    int64_t opset;        /* opset version imported for the node's domain */
    int n_inputs;
    int *inputs;          /* tensor indices; -1 for an omitted optional input */
    int n_outputs;
    int *outputs;         /* tensor indices; -1 for an omitted optional output */
    int n_attrs;
    pr_attr *attrs;
    /* Original ONNX node names this node stands for after fusion, in graph
     * order. n_origins == 0 means just itself (name). */
    const char **origins;
    int n_origins;
    /* Precision requested by the rules (passes/prec_req.h) for what this
     * node computes in and stores its output as; PRECIS_UNDEFINED: none.
     * Fusion keeps nodes of one effective request together, so a fused
     * node carries its origins' common request. Not saved in plans (the
     * per-node report is). */
    pr_dtype req_compute, req_output;
} pr_node;

typedef struct pr_opset {
    const char *domain;
    int64_t version;
} pr_opset;

typedef struct pr_kv {
    const char *key, *value;
} pr_kv;

typedef struct pr_graph {
    pr_arena *arena;
    const char *name;
    pr_tensor *tensors;
    int n_tensors, cap_tensors;
    pr_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs;   /* graph inputs in declaration order, initializers excluded */
    int n_inputs;
    int *outputs;  /* graph outputs in declaration order */
    int n_outputs;
    const char **syms; /* symbolic dim names, see pr_dim_sym_index */
    int n_syms, cap_syms;
    /* model-level information (top-level graph only) */
    int64_t ir_version;
    const char *producer_name, *producer_version, *domain, *doc;
    int64_t model_version;
    pr_opset *opsets;
    int n_opsets;
    pr_kv *metadata;
    int n_metadata;
    /* name -> tensor index hash table */
    int *hash;
    int hash_cap;
    /* subgraphs of GRAPH/GRAPHS attributes, destroyed with this graph */
    struct pr_graph **subgraphs;
    int n_subgraphs, cap_subgraphs;
    struct pr_graph *parent; /* enclosing graph for a subgraph, else NULL */
    /* memory the graph owns besides the arena (e.g. large external data) */
    void **owned;
    int n_owned, cap_owned;
    /* per-original-node precision requests and report (passes/prec_req.h),
     * in the arena; NULL: no rules (every fusion allowed) */
    struct pr_prec_plan *prec;
    /* a read-only file mapping the graph owns (a loaded plan), munmap'd on destroy */
    void *map_addr;
    size_t map_len;
} pr_graph;

pr_graph *pr_graph_create(void);
void pr_graph_destroy(pr_graph *g);

/* Index of the tensor with this name, or -1. */
int pr_graph_find_tensor(const pr_graph *g, const char *name);
/* Index of the tensor with this name, creating an empty one (dtype undefined,
 * rank -1, producer -1) if absent. -1 on OOM (sets e). */
int pr_graph_get_tensor(pr_graph *g, const char *name, pr_err *e);
/* Appends a node with room for n_in inputs / n_out outputs / n_attrs attrs
 * (inputs/outputs set to -1). Returns its index or -1 on OOM. */
int pr_graph_add_node(pr_graph *g, int n_in, int n_out, int n_attrs, pr_err *e);
/* Index of symbolic dim `name`, added if absent; returns the encoded dim
 * (<= -2), or PR_DIM_UNKNOWN on OOM. */
int64_t pr_graph_sym(pr_graph *g, const char *name);
/* Takes ownership of a subgraph (destroyed with g; sets sub->parent). */
bool pr_graph_add_subgraph(pr_graph *g, pr_graph *sub);
/* Takes ownership of a malloc'd block, freed with the graph. */
bool pr_graph_own(pr_graph *g, void *p);
/* Takes ownership of a mmap'd region (munmap'd with the graph). One per graph:
 * false if the graph already owns a mapping. */
bool pr_graph_own_mapping(pr_graph *g, void *addr, size_t len);
/* Opset version imported for a domain ("" and "ai.onnx" are the same), or 0. */
int64_t pr_graph_opset(const pr_graph *g, const char *domain);

/* Number of elements for known dims; -1 if any dim is not known or the product
 * overflows int64. rank 0 gives 1. */
int64_t pr_numel(int rank, const int64_t *dims);

/* ------------------------------------------------------------ attributes */
const pr_attr *pr_attr_find(const pr_node *n, const char *name);
int64_t pr_attr_int(const pr_node *n, const char *name, int64_t def);
float pr_attr_float(const pr_node *n, const char *name, float def);
/* Default returned when absent. */
const char *pr_attr_str(const pr_node *n, const char *name, const char *def);
/* Number of ints and *out set, or -1 (and *out NULL) if absent. */
int pr_attr_ints(const pr_node *n, const char *name, const int64_t **out);
int pr_attr_floats(const pr_node *n, const char *name, const float **out);

/* Node input/output tensor index, -1 if i is past the end or omitted. */
static inline int pr_node_in(const pr_node *n, int i) {
    return i < n->n_inputs ? n->inputs[i] : -1;
}
static inline int pr_node_out(const pr_node *n, int i) {
    return i < n->n_outputs ? n->outputs[i] : -1;
}

/* The tensor of node input/output i, NULL if omitted or out of range. */
static inline const pr_tensor *pr_node_tin(const pr_graph *g, const pr_node *n, int i) {
    int t = pr_node_in(n, i);
    return t >= 0 && t < g->n_tensors ? &g->tensors[t] : NULL;
}
static inline const pr_tensor *pr_node_tout(const pr_graph *g, const pr_node *n, int i) {
    int t = pr_node_out(n, i);
    return t >= 0 && t < g->n_tensors ? &g->tensors[t] : NULL;
}

/* Human-readable "dtype[d0,d1,...]" into buf (symbolic dims by name). */
const char *pr_shape_str(const pr_graph *g, pr_dtype dt, int rank, const int64_t *dims,
                         char *buf, size_t cap);

#endif
