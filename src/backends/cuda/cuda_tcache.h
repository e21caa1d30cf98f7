/* The CUDA backend's timing cache (precis build --timing-cache FILE): the
 * algorithm choices the impls time on the GPU (cuBLASLt algorithms, cuDNN
 * convolution algorithms, the int8 GEMMs), keyed by the problem (a string
 * each impl builds: op, types, shape, epilogue). A later build with the
 * same file reuses them instead of timing again.
 *
 * The file is text: a header naming the GPU, its compute capability and
 * the CUDA runtime / cuBLASLt / cuDNN versions, then one line per choice
 * ("KEY<TAB>HEX"). A file made under any other header is refused with one
 * line saying which field differs. Plain C: no CUDA type here. */
#ifndef PR_BACKENDS_CUDA_CUDA_TCACHE_H
#define PR_BACKENDS_CUDA_CUDA_TCACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

typedef struct pr_cuda_tcache pr_cuda_tcache;

/* Opens path for the device named name / arch: reads it when it exists
 * (refused when its header differs), else starts empty. */
precis_status pr_cuda_tcache_open(const char *path, const char *name, const char *arch,
                                  pr_cuda_tcache **out, pr_err *e);
/* The same, in memory (no file; pr_cuda_tcache_save does nothing): text is
 * NULL / "" (empty) or what pr_cuda_tcache_text gave, checked as a file is
 * (another GPU or library version: PRECIS_ERR_INVALID_ARG; malformed:
 * PRECIS_ERR_PARSE). An engine plan carries its choices this way. */
precis_status pr_cuda_tcache_open_text(const char *text, const char *name, const char *arch,
                                       pr_cuda_tcache **out, pr_err *e);
/* The file's text (header, then the entries this process read or added),
 * malloc'd; NULL when c is NULL or out of memory. */
char *pr_cuda_tcache_text(pr_cuda_tcache *c);
/* Writes the file when something was added since it was read. */
precis_status pr_cuda_tcache_save(pr_cuda_tcache *c, pr_err *e);
void pr_cuda_tcache_close(pr_cuda_tcache *c);
/* The value stored under key (exactly n bytes), thread-safe; false when
 * absent (c may be NULL: no cache). */
bool pr_cuda_tcache_get(pr_cuda_tcache *c, const char *key, void *val, size_t n);
void pr_cuda_tcache_put(pr_cuda_tcache *c, const char *key, const void *val, size_t n);
/* Hits and new entries so far. */
void pr_cuda_tcache_counts(const pr_cuda_tcache *c, int *hits, int *added);

#endif
