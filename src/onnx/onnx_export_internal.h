/* Private to src/onnx/onnx_export*.c: the exporter's state and the helpers
 * that build NodeProtos, shared by the model writer (onnx_export.c) and the
 * op rewrites / decompositions (onnx_export_ops.c).
 *
 * Every protobuf-c message, string and array of the model being built lives
 * in one arena (pr_ex.a) freed after packing; initializer payloads point into
 * the graph's own memory (little-endian hosts) so nothing large is copied.
 *
 * Errors: helpers that allocate set pr_ex.oom and return NULL instead of
 * failing one by one; pr_ex_status() turns a pending OOM into a status after
 * each exported node, so callers may chain helpers without checking each.
 */
#ifndef PR_ONNX_EXPORT_INTERNAL_H
#define PR_ONNX_EXPORT_INTERNAL_H

#include "ir/act.h"
#include "ir/graph.h"
#include "onnx.pb-c.h"

/* A set of strings (open addressing; the strings are borrowed). */
typedef struct pr_ex_set {
    const char **v;
    size_t cap, n;
} pr_ex_set;

#define PR_EX_SCALAR_CACHE 128

typedef struct pr_ex {
    const pr_graph *g;
    pr_err *e;
    pr_arena *a;
    int64_t opset;      /* opset written for the default domain */
    const char **tname; /* per IR tensor: its name in the file (Reorder outputs take
                         * their input's) */
    int *uses;          /* per IR tensor: node-input uses + graph-output listings */
    uint8_t *used;      /* per IR tensor: referenced by the exported graph */
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits; /* initializers made by the exporter */
    size_t n_inits, cap_inits;
    pr_ex_set reserved_nodes; /* every node name of the IR */
    pr_ex_set node_names;     /* node names written so far */
    pr_ex_set tensor_names;   /* tensor names made by the exporter */
    struct {
        pr_dtype dt;
        double v;
        const char *name;
    } scalars[PR_EX_SCALAR_CACHE];
    int n_scalars;
    bool oom;
} pr_ex;

/* OOM (message naming the node being exported) if a helper ran out of
 * memory, else PRECIS_OK. */
precis_status pr_ex_status(pr_ex *x, const pr_node *n);

/* Name of IR tensor t in the file ("" for -1); marks it used. */
const char *pr_ex_tensor(pr_ex *x, int t);
/* A new tensor name "<base>/<suffix>" (made unique). */
const char *pr_ex_fresh(pr_ex *x, const char *base, const char *suffix);

/* Appends a node named `name` (an original name is used as it is unless
 * already written; a derived one also avoids every IR node's name; either is
 * made unique with a suffix). in/out: tensor names, "" or NULL for an omitted
 * input (trailing ones are dropped). */
Onnx__NodeProto *pr_ex_node(pr_ex *x, const char *op_type, const char *domain, const char *name,
                            bool original_name, int n_in, const char *const *in, int n_out,
                            const char *const *out);
/* A default-domain node named "<base>/<op_type>" with one fresh output
 * "<base>/<op_type>" (unique); returns the output name, *np (may be NULL)
 * gets the node for attributes. */
const char *pr_ex_opn(pr_ex *x, const char *op_type, const char *base, int n_in,
                      const char *const *in, Onnx__NodeProto **np);
const char *pr_ex_op1(pr_ex *x, const char *op_type, const char *base, const char *a,
                      Onnx__NodeProto **np);
const char *pr_ex_op2(pr_ex *x, const char *op_type, const char *base, const char *a,
                      const char *b);
/* Ends a chain of nodes whose value is `cur`: the last node written (which
 * produced cur) writes `out` instead; an Identity when cur is not the last
 * node's output. */
void pr_ex_finish(pr_ex *x, const char *cur, const char *out, const char *base);

void pr_ex_attr_int(pr_ex *x, Onnx__NodeProto *n, const char *name, int64_t v);
void pr_ex_attr_float(pr_ex *x, Onnx__NodeProto *n, const char *name, float v);
void pr_ex_attr_ints(pr_ex *x, Onnx__NodeProto *n, const char *name, const int64_t *v, int cnt);
void pr_ex_attr_str(pr_ex *x, Onnx__NodeProto *n, const char *name, const char *s);
/* Copies IR attribute a of node `owner` onto n; refuses the kinds ONNX
 * files cannot carry here (GRAPH, GRAPHS, sparse, type protos, references). */
precis_status pr_ex_attr_copy(pr_ex *x, Onnx__NodeProto *n, const pr_node *owner, const pr_attr *a);

/* New initializers (data copied); return their names. */
const char *pr_ex_const(pr_ex *x, const char *base, pr_dtype dt, int rank, const int64_t *dims,
                        const void *data);
const char *pr_ex_ints(pr_ex *x, const char *base, const int64_t *v, int n);
/* A scalar of dtype dt (float32 when dt has no numeric storage), shared. */
const char *pr_ex_scalar(pr_ex *x, pr_dtype dt, double v);

/* Copy IR node n under its own name: op_type `op` (NULL: n's), domain ""
 * for the default domain, inputs ins[0..n_in) (ins NULL: n's own), the first
 * n_out outputs (-1: all), every attribute except precis_* and those named in
 * skip (NULL-terminated, may be NULL). *out (may be NULL) gets the node, for
 * more attributes. */
precis_status pr_ex_copy(pr_ex *x, const pr_node *n, const char *op, const char *const *ins,
                         int n_in, int n_out, const char *const *skip, Onnx__NodeProto **out);

/* Export IR node ni (onnx_export_ops.c): copies, rewrites or decomposes it. */
precis_status pr_ex_export_node(pr_ex *x, int ni);

/* Activation a applied to *cur (dtype dt): writes its nodes (named from
 * base), sets *cur to the result. */
void pr_ex_act(pr_ex *x, const pr_act *a, const char *base, pr_dtype dt, const char **cur);

#endif
