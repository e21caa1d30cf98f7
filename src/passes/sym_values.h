/* Symbolic values of small int64 shape tensors, for the static shape pass
 * (see sym_values.c). */
#ifndef PR_PASSES_SYM_VALUES_H
#define PR_PASSES_SYM_VALUES_H

#include "ir/graph.h"

typedef struct pr_symval {
    int n;       /* number of entries; -1: nothing known */
    bool scalar; /* rank 0 (n == 1) rather than rank 1 */
    int64_t v[PR_MAX_RANK]; /* >= 0 known, <= -2 symbolic dim, -1 unknown */
} pr_symval;

/* Derive sv[output] of node n from its inputs (sv indexed by tensor;
 * entries with n == -1 are unknown). Only Shape, Gather, Concat, Slice,
 * Unsqueeze, Squeeze, Cast and Identity carry values. */
void pr_symval_node(const pr_graph *g, const pr_node *n, pr_symval *sv);
/* Fill out's unknown dims for Reshape / Expand / ConstantOfShape from the
 * symbolic values of their shape input. */
void pr_symval_refine(const pr_graph *g, const pr_node *n, const pr_symval *sv, pr_tensor *out);

#endif
