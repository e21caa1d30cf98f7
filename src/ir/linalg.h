/* Helpers of the 'linalg' op family shared by shape inference (src/ir) and
 * the reference kernels (src/backends/ref): reduction axes and the Einsum
 * equation parser. */
#ifndef PR_IR_LINALG_H
#define PR_IR_LINALG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"

/* ------------------------------------------------------------ reductions */

/* Does this Reduce* node take its axes from input 1 (ReduceSum from opset 13,
 * all others from opset 18) rather than from the 'axes' attribute? */
int pr_reduce_axes_from_input(const pr_node *n, pr_op op);

/* Fill mask[0..r) with the reduced dims for the axes list axes[0..n) (n < 0:
 * not given; n == 0: empty). Without axes every dim is reduced, unless
 * noop_empty, in which case none is and *noop is set. Returns 0, or -1 with
 * a message in msg (axis out of range, axis repeated). */
int pr_reduce_mask(const int64_t *axes, int n, int r, bool noop_empty, bool *mask, bool *noop,
                   char *msg, size_t cap);

/* ------------------------------------------------------------ Einsum */

#define PR_EINSUM_MAX_OPS 16
#define PR_EINSUM_MAX_LABELS (52 + PR_MAX_RANK)

/* A parsed equation. Labels are numbered 0..n_labels-1: the first n_ell are
 * the dims covered by '...' (broadcast numpy-style, right-aligned), the rest
 * are letters. An operand dim's label may repeat (diagonal); labels absent
 * from the output are summed over. */
typedef struct pr_einsum {
    int n_ops, n_labels, n_ell;
    int rank[PR_EINSUM_MAX_OPS];
    int label[PR_EINSUM_MAX_OPS][PR_MAX_RANK];
    int out_rank;
    int out_label[PR_EINSUM_MAX_LABELS];
    char letter[PR_EINSUM_MAX_LABELS]; /* the letter of a label, 0 for '...' dims */
} pr_einsum;

/* Parse `eq` for n_ops operands of the given ranks. Returns 0, or -1 with a
 * message in msg. */
int pr_einsum_parse(const char *eq, int n_ops, const int *ranks, pr_einsum *es, char *msg,
                    size_t cap);

/* Size of every label from the operands' dims (dims[o] has es->rank[o]
 * entries; unknown/symbolic dims allowed). Dims of one label must agree or
 * be 1 (numpy broadcasting). Returns 0, or -1 with a message in msg. */
int pr_einsum_sizes(const pr_einsum *es, const int64_t *const *dims, int64_t *sizes, char *msg,
                    size_t cap);

#endif
