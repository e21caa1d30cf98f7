/* Graph editing helpers shared by the optimization passes (src/passes/pass_*.c).
 *
 * Use counts. pr_uses counts, per tensor, the node input slots that read it
 * (a node reading a tensor twice counts twice), plus one per listing as a
 * graph output, plus one per reference from a subgraph (If/Loop bodies reading
 * an outer-scope tensor). A tensor is "private" to a consumer when it has
 * exactly one use and that use is a node input: only then may a pass absorb
 * the consumer into the producer. The counts are kept up to date by the
 * editing functions below (pr_node_set_input, pr_node_kill, pr_fuse_absorb);
 * tensors added after pr_uses_build (new initializers) are not counted.
 *
 * Dead nodes. pr_node_kill marks a node dead (op_type NULL, no inputs or
 * outputs) and clears the producer of its outputs; pr_graph_compact drops the
 * dead nodes, recomputes every tensor's producer and restores topological
 * order (stable: nodes already in order keep it).
 *
 * Fusion. A fused node is usually an existing node retyped in place
 * (pr_node_retype: Conv -> FusedConv) that then absorbs the chain after it
 * (pr_fuse_absorb): it takes over the output tensor of the chain's last node,
 * so graph output names never change, moves into that node's slot (so the
 * node order stays topological: every input of the fused node exists there)
 * and records the originals it covers (pr_node.origins, in graph order).
 *
 * Errors: functions that allocate return a precis_status (PRECIS_ERR_OOM with
 * a message via pr_errf); they never exit.
 */
#ifndef PR_PASSES_GRAPH_EDIT_H
#define PR_PASSES_GRAPH_EDIT_H

#include <stdbool.h>

#include "ir/act.h"
#include "ir/graph.h"

/* ------------------------------------------------------------ use counts */

typedef struct pr_uses {
    int *n;  /* per tensor index < cap */
    int cap; /* g->n_tensors when built */
    /* Dim classes: dim d of tensor t (t < cap) is element t*PR_MAX_RANK + d of
     * a union-find whose classes hold dims proven equal at run time (from
     * inference's known and named dims, and from the ops: elementwise
     * broadcast, MatMul, Transpose, Reshape with 0, Concat, Conv/pools that
     * keep the size, ...); val is a class's known size or -1. */
    int *uf;
    int64_t *uf_val;
    int uf_n;
} pr_uses;

precis_status pr_uses_build(const pr_graph *g, pr_uses *u, pr_err *e);
void pr_uses_free(pr_uses *u);
/* Uses of tensor t (0 for tensors added after the build). */
int pr_uses_of(const pr_uses *u, int t);
void pr_uses_add(pr_uses *u, int t, int delta);

static inline bool pr_node_dead(const pr_node *n) { return n->op_type == NULL; }
static inline bool pr_is_graph_output(const pr_graph *g, int t) {
    return t >= 0 && (g->tensors[t].flags & PR_T_OUTPUT) != 0;
}
static inline bool pr_is_init(const pr_graph *g, int t) {
    return t >= 0 && (g->tensors[t].flags & PR_T_INIT) && g->tensors[t].data;
}
/* Node ni is a live standard-domain `op` with one output. */
static inline bool pr_live_op(const pr_graph *g, int ni, pr_op op) {
    return ni >= 0 && !pr_node_dead(&g->nodes[ni]) && g->nodes[ni].op == op &&
           !g->nodes[ni].domain[0] && g->nodes[ni].n_outputs == 1;
}
/* Every dim of t known and positive. */
static inline bool pr_dims_known(const pr_tensor *t) {
    if (t->rank < 0) return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] <= 0) return false;
    return true;
}

/* The nodes reading tensor t (a node once per input slot), up to cap into
 * nodes[]; returns the number of uses by live nodes. */
int pr_consumers(const pr_graph *g, int t, int *nodes, int cap);
/* The only consumer of t: t has exactly one use (so it is not a graph output)
 * and that is an input of a live node, whose index is returned; -1 otherwise. */
int pr_single_consumer(const pr_graph *g, const pr_uses *u, int t);
/* Index of the live node producing t, or -1. */
int pr_producer(const pr_graph *g, int t);

/* -------------------------------------------------------------- editing */

/* Mark node ni dead: its inputs lose a use, its outputs lose their producer.
 * u may be NULL. */
void pr_node_kill(pr_graph *g, pr_uses *u, int ni);
/* Drop dead nodes, recompute producers, restore topological order. Fails
 * (PRECIS_ERR_INTERNAL) on a cycle or a tensor produced twice. */
precis_status pr_graph_compact(pr_graph *g, pr_err *e);
/* Check that nodes are in topological order, producers are right and no node
 * is dead; PRECIS_ERR_INTERNAL naming the first problem otherwise. */
precis_status pr_graph_check(const pr_graph *g, pr_err *e);

/* Append a new node of op (op_type its name; domain PR_FUSED_DOMAIN for the
 * fused family, else ""), named name (copied), with n_in inputs and n_out
 * outputs set to -1. Returns its index, or -1 (e set). Pointers to nodes are
 * invalidated. */
int pr_node_new(pr_graph *g, pr_op op, int64_t opset, const char *name, int n_in, int n_out,
                pr_err *e);
/* Change a node's op in place (op, op_type, domain; opset if > 0). */
void pr_node_retype(pr_graph *g, int ni, pr_op op, int64_t opset);
/* Set input slot i (growing the input list with -1 as needed) to tensor t
 * (-1: omitted), keeping use counts (u may be NULL). */
precis_status pr_node_set_input(pr_graph *g, pr_uses *u, int ni, int i, int t, pr_err *e);
/* Set output slot i (growing as needed) to tensor t and make ni its producer. */
precis_status pr_node_set_output(pr_graph *g, int ni, int i, int t, pr_err *e);

/* Attributes (allocated in g->arena; an existing one of that name is
 * replaced). */
precis_status pr_node_set_int(pr_graph *g, int ni, const char *name, int64_t v, pr_err *e);
precis_status pr_node_set_float(pr_graph *g, int ni, const char *name, float v, pr_err *e);
precis_status pr_node_set_string(pr_graph *g, int ni, const char *name, const char *s, pr_err *e);
precis_status pr_node_set_ints(pr_graph *g, int ni, const char *name, const int64_t *v, int n,
                               pr_err *e);
void pr_node_clear_attrs(pr_graph *g, int ni);
/* Activation attributes <prefix>, <prefix>_alpha, <prefix>_beta (ir/act.h);
 * NONE sets nothing. */
precis_status pr_node_set_act(pr_graph *g, int ni, const char *prefix, const pr_act *a, pr_err *e);

/* A new activation tensor named base + suffix (made unique with "_k"), of
 * dtype dt and dims[0..rank), no producer yet. Returns its index or -1 (e set). */
int pr_graph_new_tensor(pr_graph *g, const char *base, const char *suffix, pr_dtype dt, int rank,
                        const int64_t *dims, pr_err *e);

/* 64-byte aligned memory that free() releases (for initializer data). */
void *pr_edit_alloc(size_t nbytes);
/* A new initializer tensor named after base (made unique with a suffix)
 * holding data (malloc'd; ownership passes to the graph, also on failure).
 * Returns the tensor index or -1 (e set). */
int pr_graph_add_init(pr_graph *g, const char *base, pr_dtype dt, int rank, const int64_t *dims,
                      void *data, pr_err *e);
/* Same with a float32 copy of src (n = numel of dims). */
int pr_graph_add_init_f32(pr_graph *g, const char *base, int rank, const int64_t *dims,
                          const float *src, pr_err *e);

/* Set dst's origins to the originals of dst and of nodes[0..n) (dst may be
 * among them), in graph (index) order, without duplicates. */
precis_status pr_node_merge_origins(pr_graph *g, int dst, const int *nodes, int n, pr_err *e);
/* The fused node ni absorbs nodes[0..n) (all live, after ni or not): its
 * origins gain theirs, they die, and when out_node >= 0 (one of them) ni takes
 * over out_node's output 0 and moves into out_node's slot. Returns ni's new
 * index, or -1 (e set). */
int pr_fuse_absorb(pr_graph *g, pr_uses *u, int ni, const int *nodes, int n, int out_node,
                   pr_err *e);

/* ------------------------------------------------------- value queries */

/* Is t a float32 tensor with known rank? */
bool pr_is_f32(const pr_graph *g, int t);
/* t is a one-element initializer of a numeric type: its value as float. */
bool pr_const_scalar(const pr_graph *g, int t, float *v);
/* |v - want| <= tol * |want| */
static inline bool pr_near(float v, double want, double tol) {
    double d = (double)v - want;
    return (d < 0 ? -d : d) <= tol * (want < 0 ? -want : want);
}
/* Are t's and v's shapes provably equal at run time (same rank, every dim
 * equal: known sizes, named symbolic dims, or dims of one class in u, which
 * may be NULL)? */
bool pr_same_shape(const pr_graph *g, const pr_uses *u, int t, int v);
/* Is the float32 initializer c broadcastable against a rank-r tensor without
 * changing its shape, with every dim 1 except possibly axis `axis` (of the
 * rank-r tensor) which may be 1 or size? On success vals (size entries) gets
 * c's value per index along axis (repeated when c has 1 there). */
bool pr_const_along_axis(const pr_graph *g, int c, int r, int axis, int64_t size, float *vals);

/* --------------------------------------------------------- activations */

/* An activation found after tensor t: which, the nodes it covers and the
 * node producing its output (the last of them). */
typedef struct pr_act_match {
    pr_act act;
    int n_nodes;
    int nodes[6];
    int out_node;
} pr_act_match;

/* Does an activation follow float32 tensor t, using t privately? Single-node
 * forms: Relu, LeakyRelu, Clip (constant bounds), Sigmoid, HardSigmoid,
 * HardSwish, Tanh, Gelu (with allow_gelu). Two-use forms: x*Sigmoid(x) and
 * x*Sigmoid(x*1) (Swish), x*HardSigmoid(x) with alpha 1/6, beta 1/2 and
 * x*Clip(x+3, 0, 6)/6 (HardSwish). */
bool pr_match_act(const pr_graph *g, const pr_uses *u, int t, bool allow_gelu, pr_act_match *m);

/* Residual: the only consumer of y is an Add(y, z) (either order) with z a
 * different float32 tensor of y's exact shape and an output of that shape.
 * Returns the Add's index (and *z), or -1. */
int pr_match_residual(const pr_graph *g, const pr_uses *u, int y, int *z);

/* Input of node ni other than t for a two-input node with t at slot 0 or 1;
 * -1 when t is not an input or the node does not have two inputs. */
int pr_other_input(const pr_graph *g, int ni, int t);

#endif
