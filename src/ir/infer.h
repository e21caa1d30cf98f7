/* Shape and type inference.
 *
 * Each op in ops.inc has   precis_status pr_infer_<Op>(pr_infer *ic);
 * It reads the inputs' dtype/rank/dims (and, where known, their values) and
 * fills the outputs' dtype/rank/dims. The same function serves two callers:
 *   - the static pass over the graph (dims may be unknown or symbolic, values
 *     known only for initializers, Constants and small constant-folded
 *     tensors), and
 *   - the executors at run time (all dims concrete, all values known).
 * So: never assume values are present; when a needed value is missing
 * (e.g. Reshape's shape input), set what you can (dtype, rank if known) and
 * mark unknown dims PR_DIM_UNKNOWN. Propagate symbolic dims where the output
 * dim equals an input dim (e.g. batch). Validate what the ONNX spec requires
 * (ranks, matching dims, attribute ranges) and fail with pr_inferf(), which
 * prefixes the node name and op.
 *
 * Output values are not computed here: the static pass folds small constant
 * subgraphs by running the ref kernel.
 */
#ifndef PR_IR_INFER_H
#define PR_IR_INFER_H

#include "ir/graph.h"

typedef struct pr_tinfo {
    pr_dtype dtype;       /* PRECIS_UNDEFINED: absent optional input / not yet known */
    int rank;             /* -1 unknown */
    int64_t dims[PR_MAX_RANK];
    const void *value;    /* contents (row-major) when known, else NULL */
} pr_tinfo;

typedef struct pr_infer {
    pr_graph *g;          /* for symbolic dims (pr_graph_sym) and attributes */
    const pr_node *node;
    int n_in;
    const pr_tinfo *in;   /* in[i].dtype == PRECIS_UNDEFINED for omitted inputs */
    int n_out;
    pr_tinfo *out;        /* zeroed by the caller, rank preset to -1 */
    pr_err *err;
} pr_infer;

typedef precis_status (*pr_infer_fn)(pr_infer *ic);

#define PR_OP(name, family) precis_status pr_infer_##name(pr_infer *ic);
#include "ir/ops.inc"
#undef PR_OP

/* The table, indexed by pr_op (NULL for PR_OP_UNKNOWN). */
extern const pr_infer_fn pr_infer_table[PR_OP_COUNT];

/* Fails with "node 'name' (Op): <message>". Returns the status. */
precis_status pr_inferf(pr_infer *ic, precis_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Helpers shared by the infer_*.c files. */
/* Is input i present (given and dtype known or value known)? */
static inline bool pr_in_present(const pr_infer *ic, int i) {
    return i < ic->n_in && ic->in[i].dtype != PRECIS_UNDEFINED;
}
/* Fails "input i (what) is required" when input i is absent. */
precis_status pr_infer_need_input(pr_infer *ic, int i, const char *what);
/* Sets output o (ignored past n_out); dims NULL: all PR_DIM_UNKNOWN. */
void pr_infer_set_out(pr_infer *ic, int o, pr_dtype dt, int rank, const int64_t *dims);
/* Element count of input i, -1 when absent or not known. */
int64_t pr_infer_in_numel(const pr_infer *ic, int i);
/* Copy dtype/rank/dims of input i to output o. */
void pr_infer_copy(pr_infer *ic, int o, int i);
/* Multidirectional (numpy) broadcast of inputs idx[0..n-1] into out dims;
 * symbolic dims survive when unambiguous. Fails on incompatible known dims. */
precis_status pr_infer_broadcast(pr_infer *ic, int n, const int *idx, int *rank, int64_t *dims);
/* Normalise an axis in [-rank, rank) to [0, rank); fails when out of range. */
precis_status pr_infer_axis(pr_infer *ic, int64_t axis, int rank, int *out);
/* Values of an integer input (int32/int64) as int64 into buf (cap entries):
 * returns the count, or -1 if the value is not known. Fails (-2, error set)
 * when it is too long or has a non-integer type. */
int pr_infer_ints(pr_infer *ic, int i, int64_t *buf, int cap);
/* pr_infer_ints that also knows empty inputs (count 0). */
int pr_infer_in_ints(pr_infer *ic, int i, int64_t *buf, int cap);
/* Whether input i's contents are known (value set, or no elements). */
bool pr_infer_value_known(const pr_infer *ic, int i);
/* "[2,batch,-1]" (symbolic dims by name when ic->g is set). */
const char *pr_infer_dims_str(const pr_infer *ic, int rank, const int64_t *dims, char *buf,
                              size_t cap);
/* "[2,3,-1]" */
const char *pr_ints_str(const int64_t *v, int n, char *buf, size_t cap);

/* Static pass over the whole graph: infers every tensor's dtype and dims and
 * folds small constant subgraphs (e.g. Shape->Gather->Concat) into data. */
precis_status pr_graph_infer(pr_graph *g, pr_err *e);

#endif
