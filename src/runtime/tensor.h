/* precis_tensor: the public tensor handle, a pr_buf that owns its storage. */
#ifndef PR_RUNTIME_TENSOR_H
#define PR_RUNTIME_TENSOR_H

#include "backends/ref/ref.h"

struct precis_tensor {
    pr_buf b; /* b.data is owned (pr_buf_alloc) */
};

/* Largest tensor precis allocates (bytes); larger declared sizes are refused
 * with PRECIS_ERR_OOM before allocating. */
#define PR_MAX_TENSOR_BYTES ((size_t)1 << 36)

/* Fill b's dtype/rank/dims/numel/nbytes and allocate zeroed, 64-byte aligned
 * storage. Fails (and leaves b->data NULL) on negative dims, overflow,
 * sizes over PR_MAX_TENSOR_BYTES or OOM; `what` names the tensor in messages. */
precis_status pr_buf_alloc(pr_buf *b, pr_dtype dt, int rank, const int64_t *dims,
                           const char *what, pr_err *e);
void pr_buf_free(pr_buf *b);

/* New handle owning a buffer as above. */
precis_status pr_tensor_new(pr_dtype dt, int rank, const int64_t *dims, const char *what,
                            precis_tensor **out, pr_err *e);

#endif
