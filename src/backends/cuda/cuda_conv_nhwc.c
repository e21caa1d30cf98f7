/* The layout choice of the cuda Conv impl (cuda_conv.c): which convs run
 * NHWC, and so which activations the layout pass keeps NHWC. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_impls.h"

/* NHWC for the Tensor Core types (cuDNN's fp16/bf16 kernels are NHWC
 * natively) where the channels fill Tensor Core tiles: output channels and
 * input channels per group multiples of 8 (or depthwise), and the batch is
 * not tiny. Measured on an H200 (ResNet-50 fp16, CUDA graphs, GPU ms):
 * batch 256 NHWC 9.7 / NCHW 28.8, batch 32 3.3 / 4.7, batch 1 2.5 / 1.3 (the
 * legacy cuDNN API's NHWC kernels are slow on one image); a 3-channel stem
 * stays NCHW (batch 256: 3.3 ms NHWC, 2.1 ms NCHW). */
#define NHWC_MIN_BATCH 8

/* Two rank-4 activations of different dims into one node (a squeeze-and-
 * excitation Mul of [N, C, H, W] by [N, C, 1, 1]): elementwise kernels take
 * NHWC only without broadcasting, so such a node gets Reorders around it. */
static bool bcast4(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Mul && n->op != PR_OP_Add && n->op != PR_OP_Sub && n->op != PR_OP_Div)
        return false;
    const pr_tensor *first = NULL;
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        if (t < 0 || g->tensors[t].rank != 4 || pr_cu_is_init(g, t)) continue;
        if (!first) first = &g->tensors[t];
        else if (memcmp(first->dims, g->tensors[t].dims, 4 * sizeof first->dims[0])) return true;
    }
    return false;
}

/* MobileNet-style graphs (every dense conv 1x1 or a few-channel stem,
 * the rest depthwise, no squeeze-and-excitation broadcast) go NHWC at any
 * batch: our kernels run all of them in NHWC (measured, H100,
 * EfficientNet-Lite0 fp16 b1: 0.78 ms NCHW on cuDNN, 0.32 ms NHWC on ours;
 * PP-OCRv4 rec b1, whose SE blocks broadcast, 1.07 -> 1.18 ms NHWC: hence
 * bcast4); other graphs keep the rule above (PRECIS_CUDA_HCONV=0: always). */
static bool small_batch_nhwc(const pr_graph *g) {
    const char *hv = getenv("PRECIS_CUDA_HCONV");
    if (hv && !strcmp(hv, "0")) return false;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (bcast4(g, n)) return false;
        if ((n->op != PR_OP_Conv && n->op != PR_OP_FusedConv) ||
            n->n_inputs < 2 || n->inputs[1] < 0)
            continue;
        const pr_tensor *W = &g->tensors[n->inputs[1]];
        if (W->rank != 4 || pr_attr_int(n, "group", 1) != 1) continue; /* depthwise / grouped */
        if (W->dims[2] * W->dims[3] > 1 &&
            W->dims[0] * W->dims[1] * W->dims[2] * W->dims[3] > HC_DIRECT_MAX)
            return false;
    }
    return true;
}

bool pr_cu_conv_nhwc_ok(const pr_graph *g, const pr_node *n) {
    pr_dtype dt = pr_cu_tdt(g, n->outputs[0]);
    if (dt != PRECIS_FLOAT16 && dt != PRECIS_BFLOAT16) return false;
    const pr_tensor *W = &g->tensors[n->inputs[1]], *X = &g->tensors[n->inputs[0]];
    int64_t k = W->dims[0], cg = W->dims[1];
    const char *mb = getenv("PRECIS_CUDA_NHWC_MIN_BATCH"); /* an experiment's knob */
    int64_t min_batch = mb ? atoll(mb) : small_batch_nhwc(g) ? 1 : NHWC_MIN_BATCH;
    if (pr_dim_known(X->dims[0]) && X->dims[0] < min_batch) return false;
    if (k % 8 == 0 && (cg % 8 == 0 || cg == 1)) return true;
    /* few channels (a stem): our direct kernel writes NHWC (cu_hconv.cu) */
    const char *hv = getenv("PRECIS_CUDA_HCONV");
    return k % 8 == 0 && pr_attr_int(n, "group", 1) == 1 && !(hv && !strcmp(hv, "0")) &&
           W->dims[2] * W->dims[3] * cg * k <= HC_DIRECT_MAX;
}
