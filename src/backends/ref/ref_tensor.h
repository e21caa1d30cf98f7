/* Helpers shared by the ref kernels of the 'tensor' family (ref_tensor.c,
 * ref_index.c, ref_resize.c). */
#ifndef PR_BACKENDS_REF_REF_TENSOR_H
#define PR_BACKENDS_REF_REF_TENSOR_H

#include "backends/ref/ref.h"
#include "ir/infer_tensor.h"

/* Most inputs a tensor-family kernel passes to a plan maker. */
#define PR_REF_KIC_MAX 8

/* A pr_infer describing a kernel's inputs (values = the buffers' data), so
 * that kernels read parameters with the same plan makers as inference. Only
 * the first PR_REF_KIC_MAX inputs are described. */
typedef struct pr_kic {
    pr_infer ic;
    pr_tinfo tin[PR_REF_KIC_MAX];
} pr_kic;
void pr_kic_init(pr_kic *c, pr_kernel *k);

/* Largest rank of a strided copy (Tile doubles the rank). */
#define PR_COPY_MAX_RANK (2 * PR_MAX_RANK)

/* dst (contiguous, dims[0..rank)) = the view of src with element strides
 * sstr (may be 0 or negative; the caller guarantees every addressed element
 * lies in src). es: element size in bytes. */
void pr_copy_strided(void *dst, const void *src, int rank, const int64_t *dims, const int64_t *sstr,
                     size_t es);

/* Fails (INVALID_ARG) unless inputs 0..n-1 and output 0 are present. */
precis_status pr_ref_need_in(pr_kernel *k, int n);

/* Product of d[lo..hi). */
static inline int64_t pr_dims_prod(const int64_t *d, int lo, int hi) {
    int64_t p = 1;
    for (int i = lo; i < hi; i++) p *= d[i];
    return p;
}

/* Fill n elements of size es at dst with the element at val. */
void pr_fill_elems(void *dst, const void *val, int64_t n, size_t es);

#endif
