/* Internal helpers of the 'linalg' reference kernels (ref_linalg.c,
 * ref_reduce.c, ref_softmax.c). */
#ifndef PR_BACKENDS_REF_REF_LINALG_H
#define PR_BACKENDS_REF_REF_LINALG_H

#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"

static inline bool pr_lin_is_half(pr_dtype dt) {
    return dt == PRECIS_FLOAT16 || dt == PRECIS_BFLOAT16;
}

/* malloc(n * es) that also refuses overflowing sizes; n == 0 gives a
 * non-NULL block. NULL on failure. */
static inline void *pr_lin_alloc(int64_t n, size_t es) {
    if (n < 0 || (uint64_t)n > (SIZE_MAX / 2) / (es ? es : 1)) return NULL;
    size_t bytes = (size_t)n * es;
    return malloc(bytes ? bytes : 1);
}

#endif
