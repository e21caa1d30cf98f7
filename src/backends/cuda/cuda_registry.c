/* The CUDA backend's kernel registry: impls in priority order. A node no
 * impl takes runs its ref kernel on the host ("ref(host)"). */
#include "backends/cuda/cuda_impls.h"

const pr_cuda_impl *const pr_cuda_impls[] = {
    &pr_cuda_impl_gemm, &pr_cuda_impl_attention, &pr_cuda_impl_conv,
    &pr_cuda_impl_eltwise, &pr_cuda_impl_move, &pr_cuda_impl_gather,
    &pr_cuda_impl_norm, &pr_cuda_impl_reduce, &pr_cuda_impl_pool,
    &pr_cuda_impl_qdwconv, &pr_cuda_impl_qgemm, &pr_cuda_impl_qelem, &pr_cuda_impl_fp8,
};
const int pr_cuda_num_impls = (int)(sizeof pr_cuda_impls / sizeof pr_cuda_impls[0]);

const pr_cuda_impl *pr_cuda_find_impl(const pr_graph *g, const pr_node *n) {
    for (int i = 0; i < pr_cuda_num_impls; i++) {
        const pr_cuda_impl *im = pr_cuda_impls[i];
        if (im && im->supports && im->supports(g, n)) return im;
    }
    return NULL;
}
