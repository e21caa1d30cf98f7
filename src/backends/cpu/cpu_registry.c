/* The CPU backend's kernel registry: impls in priority order. A node no impl
 * takes runs on its ref kernel. */
#include "backends/cpu/cpu.h"

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_f16.h"
#include "backends/cpu/kernels_norm.h"
#include "backends/cpu/dnnl_common.h"

const pr_cpu_impl *const pr_cpu_impls[] = {
    &pr_cpu_impl_qfc, &pr_cpu_impl_qamx, &pr_cpu_impl_q1x1, &pr_cpu_impl_qdwconv, &pr_cpu_impl_qstem, &pr_cpu_impl_dnnl_qconv, &pr_cpu_impl_dnnl_qmatmul,
    &pr_cpu_impl_quantize, &pr_cpu_impl_dequantize, &pr_cpu_impl_qbinary,
    &pr_cpu_impl_f16_conv, &pr_cpu_impl_f16_matmul,
    &pr_cpu_impl_dnnl_conv, &pr_cpu_impl_dnnl_deconv, &pr_cpu_impl_dnnl_matmul,
    &pr_cpu_impl_eltwise,
    &pr_cpu_impl_binary, &pr_cpu_impl_move, &pr_cpu_impl_softmax, &pr_cpu_impl_attention,
    &pr_cpu_impl_layernorm, &pr_cpu_impl_pool, &pr_cpu_impl_resize,
    &pr_cpu_impl_instnorm,
};
const int pr_cpu_num_impls = (int)(sizeof pr_cpu_impls / sizeof pr_cpu_impls[0]);

const pr_cpu_impl *pr_cpu_find_impl(const pr_graph *g, const pr_node *n) {
    for (int i = 0; i < pr_cpu_num_impls; i++) {
        const pr_cpu_impl *im = pr_cpu_impls[i];
        if (im && im->name && im->supports && im->supports(g, n)) return im;
    }
    return NULL;
}
