/* Per-execution-context scratch memory (cpu.h: pr_cpu_scratch). */
#include <stdint.h>
#include <stdlib.h>

#include "backends/cpu/cpu.h"

void *pr_cpu_scratch(pr_cpu_exec *x, size_t bytes) {
    if (x->scratch && bytes <= x->scratch_bytes) return x->scratch;
    /* grow by at least half so that slowly rising requests do not realloc
     * every run; aligned_alloc wants a multiple of the alignment */
    size_t want = bytes;
    if (x->scratch && want < x->scratch_bytes + x->scratch_bytes / 2)
        want = x->scratch_bytes + x->scratch_bytes / 2;
    if (want > SIZE_MAX - 63) return NULL;
    want = (want + 63) & ~(size_t)63;
    if (!want) want = 64;
    void *p = aligned_alloc(64, want);
    if (!p) return NULL; /* the old block stays valid and owned by x */
    free(x->scratch);
    x->scratch = p;
    x->scratch_bytes = want;
    return p;
}
