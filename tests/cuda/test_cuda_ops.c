/* Every CUDA impl against the ref backend on random inputs, in float32
 * (tight tolerance), float16 and bfloat16 (loose): matrix products with
 * each epilogue split, attention on both paths, convolutions (fused cuDNN
 * and our epilogue), elementwise with broadcasting, data movement, Gather,
 * Softmax, LayerNorm, reductions, pooling and Resize. Exits 77 (ctest skip)
 * without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cuda_check.h"

#include "backends/cuda/cuda_impls.h"
#include "passes/pass.h"

static const pr_dtype DTS[3] = {PRECIS_FLOAT32, PRECIS_FLOAT16, PRECIS_BFLOAT16};
static const char *dtn(pr_dtype d) {
    return d == PRECIS_FLOAT16 ? "fp16" : d == PRECIS_BFLOAT16 ? "bf16" : "fp32";
}

#define ALL_DT(call_with_d)                                                                        \
    for (int di = 0; di < 3; di++) {                                                               \
        pr_dtype D = DTS[di];                                                                      \
        char label[128];                                                                           \
        call_with_d;                                                                               \
    }

static void fused_node(tnode *t, pr_op op, const char *name) {
    n_init(t, op, name, 1);
    t->node.domain = PR_FUSED_DOMAIN;
}

/* Sums over K = 768 / 1024 of terms up to ~1 reach |partials| ~10-30, so float32 in another
 * summation order (cuBLASLt's split-K, the tiles) differs from ref by ~sqrt(K) ulp(30) ~ 6e-5
 * at outputs near zero (an H100 run: 1.3e-5 at -0.0081, split-K 16): the absolute part of the
 * float32 tolerance scales with the partial sums; 16-bit types keep theirs. */
static cc_tolerance long_k_tol(pr_dtype d) {
    return d == PRECIS_FLOAT32 ? (cc_tolerance){1e-4f, 1e-4f} : cc_tol(d);
}

static void test_gemm(void) {
    printf("gemm\n");
    tnode t;
    /* bias + relu in cuBLASLt's epilogue; fp16 K large enough for tensor cores */
    fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Relu");
    cc_input a[3] = {{.name = "a", .rank = 3, .dims = {2, 33, 64}}, {.name = "w", .rank = 2, .dims = {64, 48}, .init = true},
                     {.name = "b", .rank = 1, .dims = {48}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "matmul bias+relu %s", dtn(D)),
            cu_run(&t, 3, a, 1, D, &pr_cuda_impl_gemm, label)));
    /* erf GELU: cuBLASLt's GELU (tanh form) for fp16/bf16, our epilogue kernel for fp32 */
    fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Gelu");
    ALL_DT((snprintf(label, sizeof label, "matmul bias+gelu(erf) %s", dtn(D)),
            cu_run(&t, 3, a, 1, D, &pr_cuda_impl_gemm, label)));
    /* residual: C operand (no act before it) then relu; and act before Z */
    fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act2", "Relu");
    cc_input az[4] = {{.name = "a", .rank = 2, .dims = {17, 40}}, {.name = "w", .rank = 2, .dims = {24, 40}, .init = true},
                      {.name = "b", .rank = 1, .dims = {24}, .init = true}, {.name = "z", .rank = 2, .dims = {17, 24}}};
    n_int(&t, "transB", 1);
    ALL_DT((snprintf(label, sizeof label, "matmul transB bias+residual+relu %s", dtn(D)),
            cu_run(&t, 4, az, 1, D, &pr_cuda_impl_gemm, label)));
    fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Sigmoid");
    n_str(&t, "act2", "Tanh");
    n_float(&t, "alpha", 0.5f);
    n_int(&t, "transB", 1);
    ALL_DT((snprintf(label, sizeof label, "matmul alpha sigmoid,+Z,tanh %s", dtn(D)),
            cu_run(&t, 4, az, 1, D, &pr_cuda_impl_gemm, label)));
    /* activation x activation, batched; and B broadcast over the batch */
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    cc_input bb[2] = {{.name = "a", .rank = 4, .dims = {2, 3, 5, 7}}, {.name = "b", .rank = 4, .dims = {2, 3, 7, 9}}};
    ALL_DT((snprintf(label, sizeof label, "matmul batched act x act %s", dtn(D)),
            cu_run(&t, 2, bb, 1, D, &pr_cuda_impl_gemm, label)));
    cc_input bc[2] = {{.name = "a", .rank = 3, .dims = {4, 5, 7}}, {.name = "b", .rank = 3, .dims = {1, 7, 6}}};
    ALL_DT((snprintf(label, sizeof label, "matmul B broadcast batch %s", dtn(D)),
            cu_run(&t, 2, bc, 1, D, &pr_cuda_impl_gemm, label)));
    /* batch-1 transformer shapes (M 128, K 768 / 1024; bias + GELU, bias + residual C): the
     * algorithm timed among cuBLASLt's proposals. Weights and biases are multiples of 1/64
     * (exact in fp16 and bf16: random float32 weights rounded by the upload differ from ref's
     * by ~2^-12 (fp16) / 2^-9 (bf16) of a sum over K = 768, past the tolerance; an H100
     * run failed so before this) */
    static float w1[768 * 256], b1[256], w2[1024 * 192], b2[192];
    float *ex[4] = {w1, b1, w2, b2};
    size_t nex[4] = {768 * 256, 256, 1024 * 192, 192};
    for (int i = 0; i < 4; i++)
        for (size_t j = 0; j < nex[i]; j++) ex[i][j] = roundf(cc_rand(-1, 1) * 64) / 64;
    fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Gelu");
    cc_input sk1[3] = {{.name = "a", .rank = 3, .dims = {1, 128, 768}},
                       {.name = "w", .rank = 2, .dims = {768, 256}, .init = true, .data = w1},
                       {.name = "b", .rank = 1, .dims = {256}, .init = true, .data = b1}};
    ALL_DT((snprintf(label, sizeof label, "matmul bias+gelu M128 K768 %s", dtn(D)),
            cu_run_tol(&t, 3, sk1, 1, D, &pr_cuda_impl_gemm, long_k_tol(D), label)));
    fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    cc_input sk2[4] = {{.name = "a", .rank = 3, .dims = {1, 128, 1024}},
                       {.name = "w", .rank = 2, .dims = {1024, 192}, .init = true, .data = w2},
                       {.name = "b", .rank = 1, .dims = {192}, .init = true, .data = b2},
                       {.name = "z", .rank = 3, .dims = {1, 128, 192}}};
    ALL_DT((snprintf(label, sizeof label, "matmul bias+residual M128 K1024 %s", dtn(D)),
            cu_run_tol(&t, 4, sk2, 1, D, &pr_cuda_impl_gemm, long_k_tol(D), label)));
    /* Gemm transA with a C row */
    n_init(&t, PR_OP_Gemm, "Gemm", 13);
    n_int(&t, "transA", 1);
    n_float(&t, "beta", 0.5f);
    cc_input g[3] = {{.name = "a", .rank = 2, .dims = {30, 8}}, {.name = "w", .rank = 2, .dims = {30, 20}, .init = true},
                     {.name = "c", .rank = 1, .dims = {20}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "gemm transA beta*C %s", dtn(D)),
            cu_run(&t, 3, g, 1, D, &pr_cuda_impl_gemm, label)));
}

static void test_attention(void) {
    printf("attention\n");
    tnode t;
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    cc_input a[4] = {{.name = "q", .rank = 4, .dims = {2, 4, 16, 32}}, {.name = "k", .rank = 4, .dims = {2, 4, 24, 32}}, {.name = "v", .rank = 4, .dims = {2, 4, 24, 32}},
                     {.name = "m", .rank = 4, .dims = {2, 1, 1, 24}, .init = true, .lo = -3, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention + mask (flash fp16/bf16, gemm fp32) %s", dtn(D)),
            cu_run(&t, 4, a, 1, D, &pr_cuda_impl_attention, label)));
    /* several key tiles, partial query / key tiles, a per-query mask, D 64 and 128 */
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    cc_input f[4] = {{.name = "q", .rank = 4, .dims = {2, 3, 130, 64}}, {.name = "k", .rank = 4, .dims = {2, 3, 200, 64}}, {.name = "v", .rank = 4, .dims = {2, 3, 200, 64}},
                     {.name = "m", .rank = 4, .dims = {2, 1, 130, 200}, .lo = -6, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention D 64, 130 x 200, per-query mask %s", dtn(D)),
            cu_run(&t, 4, f, 1, D, &pr_cuda_impl_attention, label)));
    /* a key mask broadcast over the query rows, staged in whole tiles */
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    cc_input fk[4] = {{.name = "q", .rank = 4, .dims = {2, 2, 100, 32}}, {.name = "k", .rank = 4, .dims = {2, 2, 128, 32}}, {.name = "v", .rank = 4, .dims = {2, 2, 128, 32}},
                      {.name = "m", .rank = 4, .dims = {2, 1, 1, 128}, .lo = -6, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention D 32, key mask [B,1,1,128] %s", dtn(D)),
            cu_run(&t, 4, fk, 1, D, &pr_cuda_impl_attention, label)));
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.088f);
    cc_input h[3] = {{.name = "q", .rank = 3, .dims = {3, 70, 128}}, {.name = "k", .rank = 3, .dims = {3, 65, 128}}, {.name = "v", .rank = 3, .dims = {3, 65, 128}}};
    ALL_DT((snprintf(label, sizeof label, "attention D 128, 70 x 65 %s", dtn(D)),
            cu_run(&t, 3, h, 1, D, &pr_cuda_impl_attention, label)));
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.25f);
    n_int(&t, "k_transposed", 1);
    cc_input b[3] = {{.name = "q", .rank = 3, .dims = {3, 9, 16}}, {.name = "k", .rank = 3, .dims = {3, 16, 21}}, {.name = "v", .rank = 3, .dims = {3, 21, 8}}};
    ALL_DT((snprintf(label, sizeof label, "attention k_transposed %s", dtn(D)),
            cu_run(&t, 3, b, 1, D, &pr_cuda_impl_attention, label)));
    /* head transposes folded in (heads_bshd): Q K V Y stored [B, S, H, D] */
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    n_int(&t, "heads_bshd", 15);
    cc_input hs[4] = {{.name = "q", .rank = 4, .dims = {2, 40, 3, 64}}, {.name = "k", .rank = 4, .dims = {2, 70, 3, 64}}, {.name = "v", .rank = 4, .dims = {2, 70, 3, 64}},
                      {.name = "m", .rank = 4, .dims = {2, 1, 1, 70}, .init = true, .lo = -3, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention heads_bshd (flash fp16/bf16, row kernel fp32) %s", dtn(D)),
            cu_run(&t, 4, hs, 1, D, &pr_cuda_impl_attention, label)));
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.17f);
    n_int(&t, "heads_bshd", 5);
    cc_input hq[3] = {{.name = "q", .rank = 4, .dims = {2, 33, 2, 32}}, {.name = "k", .rank = 4, .dims = {2, 2, 33, 32}}, {.name = "v", .rank = 4, .dims = {2, 33, 2, 32}}};
    ALL_DT((snprintf(label, sizeof label, "attention heads_bshd Q and V only %s", dtn(D)),
            cu_run(&t, 3, hq, 1, D, &pr_cuda_impl_attention, label)));
    /* qkv_heads: Q, K, V thirds of one [B, S, 3HD] tensor (the packed projection GEMM);
     * each slot gets its own copy of it here, in ref and on the GPU alike */
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    n_int(&t, "heads_bshd", 15);
    n_int(&t, "qkv_heads", 3);
    cc_input pk[4] = {{.name = "p", .rank = 3, .dims = {2, 50, 3 * 3 * 64}},
                      {.name = "p", .rank = 3, .dims = {2, 50, 3 * 3 * 64}},
                      {.name = "p", .rank = 3, .dims = {2, 50, 3 * 3 * 64}},
                      {.name = "m", .rank = 4, .dims = {2, 1, 1, 50}, .init = true, .lo = -3, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention qkv_heads packed (flash fp16/bf16) %s", dtn(D)),
            cu_run(&t, 4, pk, 1, D, &pr_cuda_impl_attention, label)));
    /* K an initializer (float32 beside low Q): the row kernel */
    fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.25f);
    cc_input c[3] = {{.name = "q", .rank = 3, .dims = {2, 9, 16}}, {.name = "k", .rank = 2, .dims = {21, 16}, .init = true},
                     {.name = "v", .rank = 3, .dims = {2, 21, 24}}};
    ALL_DT((snprintf(label, sizeof label, "attention K initializer (row kernel) %s", dtn(D)),
            cu_run(&t, 3, c, 1, D, &pr_cuda_impl_attention, label)));
}

/* cuDNN rounds the convolution to the output type before its fused bias (and
 * our epilogue reads it back the same way): two roundings, so two ulps. */
static cc_tolerance conv_tol(pr_dtype d) {
    return d == PRECIS_FLOAT16    ? (cc_tolerance){4e-3f, 8e-3f}
           : d == PRECIS_BFLOAT16 ? (cc_tolerance){3.2e-2f, 6e-2f}
                                  : cc_tol(d);
}

static void conv_node(tnode *t, bool fused, int stride, int group) {
    if (fused) fused_node(t, PR_OP_FusedConv, "FusedConv");
    else n_init(t, PR_OP_Conv, "Conv", 17);
    n_ints(t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    n_ints(t, "strides", (int64_t[]){stride, stride}, 2);
    n_ints(t, "kernel_shape", (int64_t[]){3, 3}, 2);
    n_int(t, "group", group);
}

static void test_conv(void) {
    printf("conv\n");
    tnode t;
    cc_input a[3] = {{.name = "x", .rank = 4, .dims = {2, 16, 13, 11}}, {.name = "w", .rank = 4, .dims = {32, 16, 3, 3}, .init = true},
                     {.name = "b", .rank = 1, .dims = {32}, .init = true}};
    conv_node(&t, true, 1, 1);
    n_str(&t, "act", "Relu");
    ALL_DT((snprintf(label, sizeof label, "conv3x3 bias+relu %s", dtn(D)),
            cu_run_tol(&t, 3, a, 1, D, &pr_cuda_impl_conv, conv_tol(D), label)));
    conv_node(&t, false, 2, 1);
    ALL_DT((snprintf(label, sizeof label, "conv3x3 stride 2 bias %s", dtn(D)),
            cu_run_tol(&t, 3, a, 1, D, &pr_cuda_impl_conv, conv_tol(D), label)));
    conv_node(&t, true, 1, 1);
    n_str(&t, "act2", "Relu");
    cc_input z[4] = {a[0], a[1], a[2], {.name = "z", .rank = 4, .dims = {2, 32, 13, 11}}};
    ALL_DT((snprintf(label, sizeof label, "conv3x3 bias+residual+relu %s", dtn(D)),
            cu_run_tol(&t, 4, z, 1, D, &pr_cuda_impl_conv, conv_tol(D), label)));
    fused_node(&t, PR_OP_FusedConv, "FusedConv");
    n_ints(&t, "pads", (int64_t[]){0, 0, 1, 1}, 4);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_int(&t, "group", 16);
    n_str(&t, "act", "Relu");
    cc_input as[3] = {{.name = "x", .rank = 4, .dims = {2, 16, 12, 10}},
                      {.name = "w", .rank = 4, .dims = {16, 1, 3, 3}, .init = true},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "depthwise s2 asymmetric pads %s", dtn(D)),
            cu_run_tol(&t, 3, as, 1, D, &pr_cuda_impl_conv, conv_tol(D), label)));
    conv_node(&t, true, 1, 16);
    n_str(&t, "act", "HardSwish");
    cc_input dw[3] = {{.name = "x", .rank = 4, .dims = {2, 16, 13, 11}}, {.name = "w", .rank = 4, .dims = {16, 1, 3, 3}, .init = true},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "depthwise conv + hardswish %s", dtn(D)),
            cu_run_tol(&t, 3, dw, 1, D, &pr_cuda_impl_conv, conv_tol(D), label)));
}

/* NHWC (fp16 / bf16: the layout the layout pass picks for convs on the GPU) */
static void test_nhwc(void) {
    printf("nhwc\n");
    tnode t;
    static const bool Y1[1] = {true};
    /* batch 8: smaller batches stay NCHW (conv_nhwc_ok) */
    cc_input a[4] = {{.name = "x", .rank = 4, .dims = {8, 16, 13, 11}, .nhwc = true},
                     {.name = "w", .rank = 4, .dims = {32, 16, 3, 3}, .init = true},
                     {.name = "b", .rank = 1, .dims = {32}, .init = true},
                     {.name = "z", .rank = 4, .dims = {8, 32, 13, 11}, .nhwc = true}};
    for (int di = 1; di < 3; di++) {
        pr_dtype D = DTS[di];
        char label[128];
        conv_node(&t, true, 1, 1);
        n_str(&t, "act", "Relu");
        snprintf(label, sizeof label, "nhwc conv3x3 bias+relu %s", dtn(D));
        cu_run_lay(&t, 3, a, 1, Y1, D, &pr_cuda_impl_conv, conv_tol(D), label);
        conv_node(&t, true, 1, 1);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "nhwc conv3x3 bias+residual+relu %s", dtn(D));
        cu_run_lay(&t, 4, a, 1, Y1, D, &pr_cuda_impl_conv, conv_tol(D), label);
        conv_node(&t, true, 2, 16);
        n_str(&t, "act", "HardSwish");
        cc_input dw[3] = {a[0], {.name = "w", .rank = 4, .dims = {16, 1, 3, 3}, .init = true},
                          {.name = "b", .rank = 1, .dims = {16}, .init = true}};
        snprintf(label, sizeof label, "nhwc depthwise s2 + hardswish %s", dtn(D));
        cu_run_lay(&t, 3, dw, 1, Y1, D, &pr_cuda_impl_conv, conv_tol(D), label);
        fused_node(&t, PR_OP_FusedConv, "FusedConv");
        n_ints(&t, "pads", (int64_t[]){0, 0, 1, 1}, 4);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_int(&t, "group", 16);
        snprintf(label, sizeof label, "nhwc depthwise s2 asymmetric pads %s", dtn(D));
        cu_run_lay(&t, 3, dw, 1, Y1, D, &pr_cuda_impl_conv, conv_tol(D), label);
        n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
        n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
        snprintf(label, sizeof label, "nhwc maxpool 3x3 s2 %s", dtn(D));
        cu_run_lay(&t, 1, a, 1, Y1, D, &pr_cuda_impl_pool, cc_tol(D), label);
        n_init(&t, PR_OP_GlobalAveragePool, "GlobalAveragePool", 1);
        snprintf(label, sizeof label, "nhwc global average pool %s", dtn(D));
        cu_run_lay(&t, 1, a, 1, Y1, D, &pr_cuda_impl_pool, cc_tol(D), label);
        n_init(&t, PR_OP_Add, "Add", 14);
        cc_input ad[2] = {a[3], a[3]};
        ad[1].name = "z2";
        snprintf(label, sizeof label, "nhwc add %s", dtn(D));
        cu_run_lay(&t, 2, ad, 1, Y1, D, &pr_cuda_impl_eltwise, cc_tol(D), label);
        /* Reorder both ways: ref is the identity on logical values */
        n_init(&t, PR_OP_Reorder, "Reorder", 1);
        t.node.domain = PR_FUSED_DOMAIN;
        n_str(&t, "to", "nhwc");
        cc_input pl[1] = {{.name = "x", .rank = 4, .dims = {2, 5, 7, 3}}};
        snprintf(label, sizeof label, "reorder plain -> nhwc %s", dtn(D));
        cu_run_lay(&t, 1, pl, 1, Y1, D, &pr_cuda_impl_move, cc_tol(D), label);
        n_init(&t, PR_OP_Reorder, "Reorder", 1);
        t.node.domain = PR_FUSED_DOMAIN;
        n_str(&t, "to", "plain");
        cc_input nh[1] = {{.name = "x", .rank = 4, .dims = {2, 5, 7, 3}, .nhwc = true}};
        snprintf(label, sizeof label, "reorder nhwc -> plain %s", dtn(D));
        cu_run_lay(&t, 1, nh, 1, NULL, D, &pr_cuda_impl_move, cc_tol(D), label);
    }
}

static void test_eltwise(void) {
    printf("eltwise\n");
    tnode t;
    n_init(&t, PR_OP_Add, "Add", 14);
    cc_input ab[2] = {{.name = "a", .rank = 4, .dims = {2, 3, 4, 5}}, {.name = "b", .rank = 3, .dims = {3, 1, 5}}};
    ALL_DT((snprintf(label, sizeof label, "add broadcast %s", dtn(D)),
            cu_run(&t, 2, ab, 1, D, &pr_cuda_impl_eltwise, label)));
    /* contiguous rows of 8k elements: 16 bytes a thread for fp16/bf16 (position embeddings) */
    cc_input a8[2] = {{.name = "a", .rank = 3, .dims = {4, 6, 24}}, {.name = "b", .rank = 2, .dims = {6, 24}}};
    ALL_DT((snprintf(label, sizeof label, "add rows of 24, batch broadcast %s", dtn(D)),
            cu_run(&t, 2, a8, 1, D, &pr_cuda_impl_eltwise, label)));
    /* a float32 initializer beside fp16 / bf16 rows (the position embeddings' Add): 8 elements
     * a thread, converted */
    cc_input a8i[2] = {{.name = "a", .rank = 3, .dims = {4, 6, 24}}, {.name = "b", .rank = 2, .dims = {6, 24}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "add float32 initializer rows of 24 %s", dtn(D)),
            cu_run(&t, 2, a8i, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Mul, "Mul", 14);
    cc_input m8[2] = {{.name = "a", .rank = 2, .dims = {5, 16}}, {.name = "b", .rank = 2, .dims = {5, 16}}};
    ALL_DT((snprintf(label, sizeof label, "mul flat %s", dtn(D)),
            cu_run(&t, 2, m8, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Div, "Div", 14);
    cc_input ad[2] = {{.name = "a", .rank = 3, .dims = {2, 7, 9}}, {.name = "b", .rank = 1, .dims = {9}, .init = true, .lo = 1, .hi = 2}};
    ALL_DT((snprintf(label, sizeof label, "div by float32 initializer %s", dtn(D)),
            cu_run(&t, 2, ad, 1, D, &pr_cuda_impl_eltwise, label)));
    static const struct { pr_op op; const char *name; } un[] = {
        {PR_OP_Sigmoid, "Sigmoid"}, {PR_OP_Tanh, "Tanh"}, {PR_OP_Erf, "Erf"},
        {PR_OP_Gelu, "Gelu"}, {PR_OP_HardSwish, "HardSwish"}, {PR_OP_Exp, "Exp"},
        {PR_OP_Softplus, "Softplus"}, {PR_OP_Neg, "Neg"},
    };
    cc_input u[1] = {{.name = "x", .rank = 3, .dims = {3, 5, 7}, .lo = -3, .hi = 3}};
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
        n_init(&t, un[i].op, un[i].name, 20);
        ALL_DT((snprintf(label, sizeof label, "%s %s", un[i].name, dtn(D)),
                cu_run(&t, 1, u, 1, D, &pr_cuda_impl_eltwise, label)));
    }
    n_init(&t, PR_OP_Clip, "Clip", 6);
    n_float(&t, "min", -0.5f);
    n_float(&t, "max", 1.5f);
    ALL_DT((snprintf(label, sizeof label, "clip %s", dtn(D)),
            cu_run(&t, 1, u, 1, D, &pr_cuda_impl_eltwise, label)));
    /* Cast float32 -> act and int64 -> act */
    n_init(&t, PR_OP_Cast, "Cast", 13);
    n_int(&t, "to", PRECIS_FLOAT32);
    static const int64_t ids[6] = {0, 1, 1, 0, 1, 1};
    cc_input ci[1] = {{.name = "m", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = ids}};
    ALL_DT((snprintf(label, sizeof label, "cast int64 -> %s", dtn(D)),
            cu_run(&t, 1, ci, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Where, "Where", 16);
    static const unsigned char cond[12] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1};
    cc_input w[3] = {{.name = "c", .rank = 2, .dims = {3, 4}, .dtype = PRECIS_BOOL, .raw = cond}, {.name = "a", .rank = 2, .dims = {3, 4}},
                     {.name = "b", .rank = 1, .dims = {4}}};
    ALL_DT((snprintf(label, sizeof label, "where broadcast %s", dtn(D)),
            cu_run(&t, 3, w, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Greater, "Greater", 13);
    cc_input gt[2] = {{.name = "a", .rank = 2, .dims = {4, 6}}, {.name = "b", .rank = 2, .dims = {1, 6}}};
    ALL_DT((snprintf(label, sizeof label, "greater -> bool %s", dtn(D)),
            cu_run(&t, 2, gt, 1, D, &pr_cuda_impl_eltwise, label)));
}

static void test_move(void) {
    printf("move\n");
    tnode t;
    n_init(&t, PR_OP_Transpose, "Transpose", 13);
    n_ints(&t, "perm", (int64_t[]){0, 2, 1, 3}, 4);
    cc_input x[1] = {{.name = "x", .rank = 4, .dims = {2, 5, 3, 8}}};
    ALL_DT((snprintf(label, sizeof label, "transpose 0213 %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Concat, "Concat", 13);
    n_int(&t, "axis", 1);
    cc_input c[3] = {{.name = "a", .rank = 3, .dims = {2, 3, 5}}, {.name = "b", .rank = 3, .dims = {2, 1, 5}}, {.name = "c", .rank = 3, .dims = {2, 4, 5}}};
    ALL_DT((snprintf(label, sizeof label, "concat axis 1 %s", dtn(D)),
            cu_run(&t, 3, c, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Slice, "Slice", 13);
    static const int64_t st[2] = {1, -1}, en[2] = {7, -100}, ax[2] = {1, 2}, sp[2] = {2, -2};
    cc_input s[5] = {{.name = "x", .rank = 3, .dims = {2, 9, 7}},
                     {.name = "s", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = st},
                     {.name = "e", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = en},
                     {.name = "a", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = ax},
                     {.name = "p", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = sp}};
    ALL_DT((snprintf(label, sizeof label, "slice steps 2, -2 %s", dtn(D)),
            cu_run(&t, 5, s, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Expand, "Expand", 13);
    static const int64_t shp[3] = {3, 4, 5};
    cc_input e[2] = {{.name = "x", .rank = 2, .dims = {4, 1}},
                     {.name = "s", .rank = 1, .dims = {3}, .init = true, .dtype = PRECIS_INT64, .raw = shp}};
    ALL_DT((snprintf(label, sizeof label, "expand %s", dtn(D)),
            cu_run(&t, 2, e, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Reshape, "Reshape", 14);
    static const int64_t rs[2] = {6, -1};
    cc_input r[2] = {{.name = "x", .rank = 3, .dims = {2, 3, 4}},
                     {.name = "s", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = rs}};
    ALL_DT((snprintf(label, sizeof label, "reshape %s", dtn(D)),
            cu_run(&t, 2, r, 1, D, &pr_cuda_impl_move, label)));
    for (int crd = 0; crd < 2; crd++) {
        n_init(&t, PR_OP_DepthToSpace, "DepthToSpace", 13);
        n_int(&t, "blocksize", 2);
        n_str(&t, "mode", crd ? "CRD" : "DCR");
        cc_input ds[1] = {{.name = "x", .rank = 4, .dims = {2, 12, 3, 5}}};
        ALL_DT((snprintf(label, sizeof label, "depthtospace %s %s", crd ? "CRD" : "DCR", dtn(D)),
                cu_run(&t, 1, ds, 1, D, &pr_cuda_impl_move, label)));
    }
    n_init(&t, PR_OP_Gather, "Gather", 13);
    static const int64_t gi[6] = {3, 0, 99, -1, 42, 7};
    cc_input g[2] = {{.name = "tab", .rank = 2, .dims = {100, 16}, .init = true},
                     {.name = "i", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = gi}};
    ALL_DT((snprintf(label, sizeof label, "gather embedding %s", dtn(D)),
            cu_run(&t, 2, g, 1, D, &pr_cuda_impl_gather, label)));
    /* rows of 24: a float32 table into fp16 / bf16 rows 8 elements a thread (k_gather8) */
    cc_input g24[2] = {{.name = "tab", .rank = 2, .dims = {100, 24}, .init = true},
                       {.name = "i", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = gi}};
    ALL_DT((snprintf(label, sizeof label, "gather rows of 24 %s", dtn(D)),
            cu_run(&t, 2, g24, 1, D, &pr_cuda_impl_gather, label)));
    /* rows of 5 elements: not whole 16-byte chunks (the element loop) */
    cc_input g5[2] = {{.name = "tab", .rank = 2, .dims = {100, 5}, .init = true},
                      {.name = "i", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = gi}};
    ALL_DT((snprintf(label, sizeof label, "gather rows of 5 %s", dtn(D)),
            cu_run(&t, 2, g5, 1, D, &pr_cuda_impl_gather, label)));
}

static void test_rows(void) {
    printf("rows\n");
    tnode t;
    n_init(&t, PR_OP_Softmax, "Softmax", 13);
    cc_input x[1] = {{.name = "x", .rank = 3, .dims = {4, 7, 130}, .lo = -5, .hi = 5}};
    ALL_DT((snprintf(label, sizeof label, "softmax last axis %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_Softmax, "Softmax", 13);
    n_int(&t, "axis", 1);
    ALL_DT((snprintf(label, sizeof label, "softmax axis 1 %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_LogSoftmax, "LogSoftmax", 11);
    ALL_DT((snprintf(label, sizeof label, "logsoftmax opset 11 %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
    n_float(&t, "epsilon", 1e-5f);
    cc_input l[3] = {{.name = "x", .rank = 3, .dims = {3, 5, 96}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {96}, .init = true},
                     {.name = "b", .rank = 1, .dims = {96}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm %s", dtn(D)),
            cu_run(&t, 3, l, 1, D, &pr_cuda_impl_norm, label)));
    /* 16-byte chunks a lane (fp16/bf16, L % 8 == 0): 3 chunks a lane; L 100: the scalar kernel */
    cc_input l2[3] = {{.name = "x", .rank = 2, .dims = {9, 768}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {768}, .init = true},
                      {.name = "b", .rank = 1, .dims = {768}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 768 %s", dtn(D)),
            cu_run(&t, 3, l2, 1, D, &pr_cuda_impl_norm, label)));
    cc_input l3[3] = {{.name = "x", .rank = 2, .dims = {5, 100}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {100}, .init = true},
                      {.name = "b", .rank = 1, .dims = {100}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 100 %s", dtn(D)),
            cu_run(&t, 3, l3, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_ReduceMean, "ReduceMean", 13);
    n_ints(&t, "axes", (int64_t[]){2, 3}, 2);
    cc_input r[1] = {{.name = "x", .rank = 4, .dims = {2, 3, 5, 6}}};
    ALL_DT((snprintf(label, sizeof label, "reducemean axes 2,3 %s", dtn(D)),
            cu_run(&t, 1, r, 1, D, &pr_cuda_impl_reduce, label)));
    n_init(&t, PR_OP_ReduceSum, "ReduceSum", 13);
    n_int(&t, "keepdims", 0);
    static const int64_t ax[1] = {1};
    cc_input rs[2] = {{.name = "x", .rank = 3, .dims = {2, 37, 6}},
                      {.name = "a", .rank = 1, .dims = {1}, .init = true, .dtype = PRECIS_INT64, .raw = ax}};
    ALL_DT((snprintf(label, sizeof label, "reducesum axes input %s", dtn(D)),
            cu_run(&t, 2, rs, 1, D, &pr_cuda_impl_reduce, label)));
    n_init(&t, PR_OP_ReduceL2, "ReduceL2", 13);
    n_ints(&t, "axes", (int64_t[]){-1}, 1);
    ALL_DT((snprintf(label, sizeof label, "reducel2 %s", dtn(D)),
            cu_run(&t, 1, r, 1, D, &pr_cuda_impl_reduce, label)));
}

static void test_spatial(void) {
    printf("spatial\n");
    tnode t;
    cc_input x[1] = {{.name = "x", .rank = 4, .dims = {2, 3, 15, 14}}};
    n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
    n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    ALL_DT((snprintf(label, sizeof label, "maxpool 3x3 s2 p1 %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_pool, label)));
    n_init(&t, PR_OP_AveragePool, "AveragePool", 19);
    n_ints(&t, "kernel_shape", (int64_t[]){3, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 0, 1, 1}, 4);
    n_int(&t, "count_include_pad", 1);
    n_int(&t, "ceil_mode", 1);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    ALL_DT((snprintf(label, sizeof label, "avgpool count_include_pad ceil %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_pool, label)));
    n_init(&t, PR_OP_GlobalAveragePool, "GlobalAveragePool", 1);
    ALL_DT((snprintf(label, sizeof label, "global average pool %s", dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_pool, label)));
    static const float sc[4] = {1, 1, 2, 1.5f};
    cc_input r[3] = {{.name = "x", .rank = 4, .dims = {2, 3, 7, 6}}, {.name = "roi", .rank = 1, .dims = {0}, .init = true},
                     {.name = "s", .rank = 1, .dims = {4}, .init = true, .data = sc}};
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "nearest");
    ALL_DT((snprintf(label, sizeof label, "resize nearest %s", dtn(D)),
            cu_run(&t, 3, r, 1, D, &pr_cuda_impl_pool, label)));
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "linear");
    n_str(&t, "coordinate_transformation_mode", "align_corners");
    ALL_DT((snprintf(label, sizeof label, "resize linear align_corners %s", dtn(D)),
            cu_run(&t, 3, r, 1, D, &pr_cuda_impl_pool, label)));
}

/* ------------------------------------------------------------------ INT8 */

/* n random int8 values in [lo, hi] (static storage, one pool per call site). */
static int8_t *rand_i8(int8_t *buf, int64_t n, int lo, int hi) {
    for (int64_t i = 0; i < n; i++) buf[i] = (int8_t)(lo + (int)cc_rand(0.0f, (float)(hi - lo + 1)));
    return buf;
}

/* Requantized outputs may land one unit off (int32 sums vs ref's float32
 * sums of dequantized products); float outputs agree to float rounding. */
static const cc_tolerance Q_TOL = {1.0f, 0.0f}, QF_TOL = {2e-3f, 1e-4f};

static void qconv_node(tnode *t, int k, int stride, int pad, float ys) {
    fused_node(t, PR_OP_QConv, "QConv");
    n_ints(t, "pads", (int64_t[]){pad, pad, pad, pad}, 4);
    n_ints(t, "strides", (int64_t[]){stride, stride}, 2);
    n_ints(t, "kernel_shape", (int64_t[]){k, k}, 2);
    n_float(t, "x_scale", 0.02f);
    if (ys > 0) {
        n_int(t, "y_type", 3);
        n_float(t, "y_scale", ys);
    }
}

static void test_int8(void) {
    printf("int8\n");
    static int8_t xb[8 * 32 * 13 * 11], wb[64 * 32 * 7 * 7], zb[8 * 64 * 13 * 11], b2[8 * 64 * 13 * 11];
    tnode t;
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8;
    /* QConv 3x3 NCHW: im2col, int8 out with relu */
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {2, 16, 13, 11}, .dtype = I8,
                      .raw = rand_i8(xb, 2 * 16 * 13 * 11, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {32, 16, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 32 * 16 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {32}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                     {.name = "b", .rank = 1, .dims = {32}, .init = true},
                     {.name = "z", .rank = 4, .dims = {2, 32, 13, 11}, .dtype = I8,
                      .raw = rand_i8(zb, 2 * 32 * 13 * 11, -128, 127)}};
    qconv_node(&t, 3, 1, 1, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, "qconv3x3 relu -> int8");
    qconv_node(&t, 3, 2, 1, 0);
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, "qconv3x3 s2 -> float");
    qconv_node(&t, 3, 1, 1, 0.05f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_tol(&t, 5, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "qconv3x3 +int8 residual+relu -> int8");
    /* NHWC: the 16-channel im2col and the direct 1x1 */
    cc_input h[5] = {a[0], a[1], a[2], a[3], a[4]};
    h[0].nhwc = h[4].nhwc = true;
    h[0].dims[0] = h[4].dims[0] = 8;
    h[0].raw = rand_i8(xb, 8 * 16 * 13 * 11, -128, 127);
    h[4].raw = rand_i8(zb, 8 * 32 * 13 * 11, -128, 127);
    qconv_node(&t, 3, 1, 1, 0.05f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_lay(&t, 5, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "nhwc qconv3x3 +residual+relu -> int8");
    cc_input p1[4] = {h[0], a[1], a[2], a[3]};
    p1[1].dims[1] = 16;
    p1[1].dims[2] = p1[1].dims[3] = 1;
    p1[1].dims[0] = 64;
    p1[2].dims[0] = p1[3].dims[0] = 64;
    qconv_node(&t, 1, 1, 0, 0.04f);
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "nhwc qconv1x1 direct -> int8");
    /* the stem: 7x7 s2 over 3 channels (K = 147 padded to 160) */
    cc_input st[4] = {{.name = "x", .rank = 4, .dims = {2, 3, 21, 19}, .dtype = I8,
                       .raw = rand_i8(xb, 2 * 3 * 21 * 19, -128, 127)},
                      {.name = "w", .rank = 4, .dims = {16, 3, 7, 7}, .init = true, .dtype = I8,
                       .raw = rand_i8(wb, 16 * 3 * 49, -127, 127)},
                      {.name = "ws", .rank = 1, .dims = {16}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    qconv_node(&t, 7, 2, 3, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "qconv7x7 s2 stem nchw -> nhwc int8");
    /* QMatMul */
    cc_input m[4] = {{.name = "a", .rank = 3, .dims = {4, 8, 64}, .dtype = I8,
                      .raw = rand_i8(xb, 4 * 8 * 64, -128, 127)},
                     {.name = "b", .rank = 2, .dims = {64, 48}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 64 * 48, -127, 127)},
                     {.name = "bs", .rank = 1, .dims = {48}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                     {.name = "bias", .rank = 1, .dims = {48}, .init = true}};
    fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.03f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.04f);
    n_str(&t, "act", "Relu");
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, "qmatmul bias+relu -> int8");
    fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.03f);
    n_int(&t, "transB", 1);
    cc_input mt[4] = {m[0], m[1], m[2], m[3]};
    mt[1].dims[0] = 48;
    mt[1].dims[1] = 64;
    cu_run_tol(&t, 4, mt, 1, PRECIS_FLOAT16, &pr_cuda_impl_qgemm, (cc_tolerance){4e-3f, 4e-3f},
               "qmatmul transB -> fp16");
    /* Quantize / Dequantize, QBinary, QPool, int8 MaxPool */
    static const float qs[1] = {0.02f};
    static const int8_t zp[1] = {0};
    cc_input q[3] = {{.name = "x", .rank = 4, .dims = {2, 8, 5, 7}, .lo = -3, .hi = 3},
                     {.name = "s", .rank = 0, .init = true, .data = qs},
                     {.name = "zp", .rank = 0, .init = true, .dtype = I8, .raw = zp}};
    n_init(&t, PR_OP_QuantizeLinear, "QuantizeLinear", 13);
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "quantize fp32 -> int8");
    cc_input dq[3] = {{.name = "x", .rank = 4, .dims = {2, 8, 5, 7}, .dtype = I8,
                       .raw = rand_i8(xb, 560, -128, 127)}, q[1], q[2]};
    n_init(&t, PR_OP_DequantizeLinear, "DequantizeLinear", 13);
    cu_run_tol(&t, 3, dq, 1, PRECIS_FLOAT16, &pr_cuda_impl_qelem, cc_tol(PRECIS_FLOAT16),
               "dequantize int8 -> fp16");
    cc_input bi[2] = {{.name = "a", .rank = 4, .dims = {8, 64, 13, 11}, .dtype = I8, .nhwc = true,
                       .raw = rand_i8(zb, 8 * 64 * 13 * 11, -128, 127)},
                      {.name = "b", .rank = 4, .dims = {8, 64, 13, 11}, .dtype = I8, .nhwc = true,
                       .raw = rand_i8(b2, 8 * 64 * 13 * 11, -128, 127)}};
    fused_node(&t, PR_OP_QBinary, "QBinary");
    n_str(&t, "kind", "Add");
    n_str(&t, "act", "Relu");
    n_float(&t, "a_scale", 0.02f);
    n_float(&t, "b_scale", 0.03f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.04f);
    cu_run_lay(&t, 2, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
               "nhwc qbinary add+relu -> int8");
    cc_input bb[2] = {dq[0], {.name = "b", .rank = 4, .dims = {1, 8, 1, 1}, .lo = -1, .hi = 1}};
    fused_node(&t, PR_OP_QBinary, "QBinary");
    n_str(&t, "kind", "Mul");
    n_float(&t, "a_scale", 0.02f);
    cu_run_tol(&t, 2, bb, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, QF_TOL,
               "qbinary mul int8 x float broadcast -> float");
    fused_node(&t, PR_OP_QPool, "QPool");
    n_str(&t, "kind", "GlobalAveragePool");
    n_float(&t, "x_scale", 0.02f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.01f);
    cu_run_lay(&t, 1, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
               "nhwc qpool global average -> int8");
    n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
    n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    cu_run_lay(&t, 1, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_pool, (cc_tolerance){0, 0},
               "nhwc maxpool int8");
}

/* The implicit-GEMM int8 conv (cu_igemm.cu) on NHWC int8, each tile forced
 * through PRECIS_CUDA_IGEMM (t0..t3), then the timed choice: K not a
 * multiple of the 64-byte stage, M and Nout not multiples of a tile,
 * stride 2, dilation 2, 1x1, residual, float output. */
static void test_igemm(void) {
    printf("int8 implicit gemm\n");
    static int8_t xb[8 * 48 * 13 * 11], wb[40 * 48 * 9], zb[8 * 40 * 13 * 11];
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8;
    tnode t;
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {8, 48, 13, 11}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(xb, 8 * 48 * 13 * 11, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {40, 48, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 40 * 48 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {40}, .init = true, .lo = 1e-3f, .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {40}, .init = true},
                     {.name = "z", .rank = 4, .dims = {8, 40, 13, 11}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(zb, 8 * 40 * 13 * 11, -128, 127)}};
    static const char *const tiles[4] = {"t0", "t1", "t2", "t3"};
    char label[96];
    for (int i = 0; i < 4; i++) {
        setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
        qconv_node(&t, 3, 1, 1, 0.08f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "igemm %s 3x3 +residual+relu -> int8", tiles[i]);
        cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
    }
    setenv("PRECIS_CUDA_IGEMM", "t0", 1);
    qconv_node(&t, 3, 2, 1, 0);
    cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               "igemm t0 3x3 s2 -> float");
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               "igemm t0 3x3 s2 -> float nchw");
    setenv("PRECIS_CUDA_IGEMM", "t2", 1);
    qconv_node(&t, 3, 1, 2, 0.08f);
    n_ints(&t, "dilations", (int64_t[]){2, 2}, 2);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "igemm t2 3x3 dilation 2 relu -> int8");
    cc_input p1[4] = {a[0], a[1], a[2], a[3]};
    p1[1].dims[2] = p1[1].dims[3] = 1;
    setenv("PRECIS_CUDA_IGEMM", "t3", 1);
    qconv_node(&t, 1, 2, 0, 0.05f);
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "igemm t3 1x1 s2 -> int8");
    setenv("PRECIS_CUDA_IGEMM", "1", 1);
    qconv_node(&t, 1, 1, 0, 0);
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT16, &pr_cuda_impl_qgemm, (cc_tolerance){4e-3f, 4e-3f},
               "igemm timed 1x1 -> fp16");
    unsetenv("PRECIS_CUDA_IGEMM");
    qconv_node(&t, 3, 1, 1, 0.08f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "igemm or cublasLt (timed) 3x3 relu+residual -> int8");
}

/* The CNN kernels of phase 6: our depthwise conv (forced: PRECIS_CUDA_DWCONV=1)
 * in both layouts over every vector width (C 24, 12, 6, 5), 5x5 and 3x3,
 * strides 1 and 2, asymmetric pads, ReLU6, residual + act2, no bias; global
 * pools on large maps (split into segments), int8 average pools (global and
 * windowed, both layouts), int8 nearest Resize. */
static void test_cnn(void) {
    printf("cnn\n");
    static int8_t xb[8 * 32 * 13 * 11 > 2 * 24 * 40 * 40 ? 8 * 32 * 13 * 11 : 2 * 24 * 40 * 40];
    static const bool Y1[1] = {true};
    setenv("PRECIS_CUDA_DWCONV", "1", 1);
    static const int chans[4] = {24, 12, 6, 5};
    for (int ci = 0; ci < 4; ci++)
        for (int lay = 0; lay < 2; lay++)
            for (int v = 0; v < 3; v++) {
                int C = chans[ci], k = v == 1 ? 3 : 5, st = v == 2 ? 2 : 1;
                if (lay && C % 8) continue; /* NHWC convs need C % 8 == 0 (conv_nhwc_ok) */
                tnode t;
                fused_node(&t, PR_OP_FusedConv, "FusedConv");
                int64_t p = k / 2, pads[4] = {p, p, p, p};
                if (v == 2) {
                    pads[0] = 1;
                    pads[1] = 2;
                    pads[2] = 2;
                    pads[3] = 1;
                }
                n_ints(&t, "pads", pads, 4);
                n_ints(&t, "strides", (int64_t[]){st, st}, 2);
                n_ints(&t, "kernel_shape", (int64_t[]){k, k}, 2);
                n_int(&t, "group", C);
                n_str(&t, "act", "Clip");
                n_float(&t, "act_alpha", 0.0f);
                n_float(&t, "act_beta", 6.0f);
                int64_t nb = lay ? 8 : 1, oh = (13 + 2 * p - k) / st + 1, ow = (11 + 2 * p - k) / st + 1;
                if (v == 2) {
                    oh = (13 + 3 - k) / 2 + 1;
                    ow = (11 + 3 - k) / 2 + 1;
                }
                cc_input a[4] = {{.name = "x", .rank = 4, .dims = {nb, C, 13, 11}, .nhwc = lay, .lo = -3, .hi = 3},
                                 {.name = "w", .rank = 4, .dims = {C, 1, k, k}, .init = true},
                                 {.name = "b", .rank = 1, .dims = {C}, .init = true},
                                 {.name = "z", .rank = 4, .dims = {nb, C, oh, ow}, .nhwc = lay}};
                int nin = 3;
                if (v == 1) { /* residual then act2, no bias */
                    n_str(&t, "act2", "Relu");
                    a[2].name = NULL;
                    nin = 4;
                }
                for (int di = 0; di < 3; di++) {
                    pr_dtype D = DTS[di];
                    if (lay && D == PRECIS_FLOAT32) continue; /* NHWC: the 16-bit types */
                    char label[128];
                    snprintf(label, sizeof label, "dwconv ours %s C%d %dx%d s%d%s%s %s",
                             lay ? "nhwc" : "nchw", C, k, k, st, v == 2 ? " asym" : "",
                             v == 1 ? " residual+relu" : " relu6", dtn(D));
                    cu_run_lay(&t, nin, a, 1, lay ? Y1 : NULL, D, &pr_cuda_impl_conv, conv_tol(D), label);
                }
            }
    unsetenv("PRECIS_CUDA_DWCONV");
    static const int qch[4] = {32, 24, 12, 5};
    static int8_t wq[32 * 25], zq[8 * 32 * 13 * 11];
    for (int ci = 0; ci < 4; ci++) /* int8 depthwise QConv (cuda_qdw.c) */
        for (int v = 0; v < 3; v++) {
            int C = qch[ci], lay = v != 2, k = v == 1 ? 3 : 5, st = v == 1 ? 2 : 1;
            int64_t nb = lay ? 8 : 1, p = k / 2, oh = (13 + 2 * p - k) / st + 1,
                    ow = (11 + 2 * p - k) / st + 1;
            cc_input a[5] = {{.name = "x", .rank = 4, .dims = {nb, C, 13, 11}, .nhwc = lay,
                              .dtype = PRECIS_INT8, .raw = rand_i8(xb, nb * C * 143, -128, 127)},
                             {.name = "w", .rank = 4, .dims = {C, 1, k, k}, .init = true,
                              .dtype = PRECIS_INT8, .raw = rand_i8(wq, C * k * k, -127, 127)},
                             {.name = "ws", .rank = 1, .dims = {C}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                             {.name = "b", .rank = 1, .dims = {C}, .init = true},
                             {.name = "z", .rank = 4, .dims = {nb, C, oh, ow}, .nhwc = lay,
                              .dtype = PRECIS_INT8, .raw = rand_i8(zq, nb * C * oh * ow, -128, 127)}};
            tnode t;
            qconv_node(&t, k, st, (int)p, v == 2 ? 0.0f : 0.04f);
            n_int(&t, "group", C);
            n_str(&t, "act", "Clip");
            n_float(&t, "act_alpha", 0.0f);
            n_float(&t, "act_beta", 6.0f);
            if (v == 1) n_float(&t, "z_scale", 0.03f);
            char label[128];
            snprintf(label, sizeof label, "qconv depthwise %s C%d %dx%d s%d relu6%s -> %s",
                     lay ? "nhwc" : "nchw", C, k, k, st, v == 1 ? "+residual" : "",
                     v == 2 ? "fp16" : "int8");
            cu_run_lay(&t, v == 1 ? 5 : 4, a, 1, lay ? Y1 : NULL, v == 2 ? PRECIS_FLOAT16 : PRECIS_FLOAT32,
                       &pr_cuda_impl_qdwconv, v == 2 ? (cc_tolerance){4e-3f, 4e-3f} : Q_TOL, label);
        }
    for (int lay = 0; lay < 2; lay++) { /* 1x1 + ReLU6 (cuDNN, then our epilogue kernel) */
        tnode t;
        fused_node(&t, PR_OP_FusedConv, "FusedConv");
        n_ints(&t, "kernel_shape", (int64_t[]){1, 1}, 2);
        n_str(&t, "act", "Clip");
        n_float(&t, "act_alpha", 0.0f);
        n_float(&t, "act_beta", 6.0f);
        cc_input a[3] = {{.name = "x", .rank = 4, .dims = {lay ? 8 : 1, 32, 9, 7}, .nhwc = lay, .lo = -2, .hi = 2},
                         {.name = "w", .rank = 4, .dims = {48, 32, 1, 1}, .init = true},
                         {.name = "b", .rank = 1, .dims = {48}, .init = true}};
        for (int di = lay; di < 3; di++) {
            char label[128];
            snprintf(label, sizeof label, "conv1x1 relu6 %s %s", lay ? "nhwc" : "nchw", dtn(DTS[di]));
            cu_run_lay(&t, 3, a, 1, lay ? Y1 : NULL, DTS[di], &pr_cuda_impl_conv, conv_tol(DTS[di]), label);
        }
    }
    for (int lay = 0; lay < 2; lay++) {
        cc_input g[1] = {{.name = "x", .rank = 4, .dims = {2, 24, 40, 40}, .nhwc = lay}};
        for (int mx = 0; mx < 2; mx++) {
            tnode t;
            if (mx) n_init(&t, PR_OP_GlobalMaxPool, "GlobalMaxPool", 1);
            else n_init(&t, PR_OP_GlobalAveragePool, "GlobalAveragePool", 1);
            for (int di = lay; di < 3; di++) {
                char label[128];
                snprintf(label, sizeof label, "global %s pool 40x40 %s %s", mx ? "max" : "average",
                         lay ? "nhwc" : "nchw", dtn(DTS[di]));
                cu_run_lay(&t, 1, g, 1, lay ? Y1 : NULL, DTS[di], &pr_cuda_impl_pool, cc_tol(DTS[di]),
                           label);
            }
        }
        cc_input q[1] = {{.name = "x", .rank = 4, .dims = {2, 24, 40, 40}, .nhwc = lay,
                          .dtype = PRECIS_INT8, .raw = rand_i8(xb, 2 * 24 * 1600, -128, 127)}};
        tnode t;
        fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "GlobalAveragePool");
        n_float(&t, "x_scale", 0.02f);
        n_int(&t, "y_type", 3);
        n_float(&t, "y_scale", 0.002f);
        cu_run_lay(&t, 1, q, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
                   lay ? "qpool global 40x40 nhwc -> int8" : "qpool global 40x40 nchw -> int8");
        fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "AveragePool");
        n_ints(&t, "kernel_shape", (int64_t[]){3, 2}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_ints(&t, "pads", (int64_t[]){1, 0, 1, 1}, 4);
        n_int(&t, "count_include_pad", lay);
        n_float(&t, "x_scale", 0.02f);
        n_int(&t, "y_type", 3);
        n_float(&t, "y_scale", 0.01f);
        cu_run_lay(&t, 1, q, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
                   lay ? "qpool average 3x2 s2 nhwc count_include_pad -> int8"
                       : "qpool average 3x2 s2 nchw -> int8");
        fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "AveragePool");
        n_ints(&t, "kernel_shape", (int64_t[]){2, 2}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_float(&t, "x_scale", 0.02f);
        cu_run_lay(&t, 1, q, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, QF_TOL,
                   lay ? "qpool average 2x2 nhwc -> float" : "qpool average 2x2 nchw -> float");
    }
    static const float sc[4] = {1, 1, 2, 2};
    cc_input r[3] = {{.name = "x", .rank = 4, .dims = {2, 24, 7, 6}, .dtype = PRECIS_INT8,
                      .raw = rand_i8(xb, 2 * 24 * 42, -128, 127)},
                     {.name = "roi", .rank = 1, .dims = {0}, .init = true},
                     {.name = "s", .rank = 1, .dims = {4}, .init = true, .data = sc}};
    tnode t;
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "nearest");
    cu_run_tol(&t, 3, r, 1, PRECIS_FLOAT32, &pr_cuda_impl_pool, (cc_tolerance){0, 0},
               "resize nearest int8");
}

/* ------------------------------------------------------------------- FP8 */

/* n random e4m3 codes of values in [-r, r) (one pool per call site). */
static uint8_t *rand_f8(uint8_t *buf, int64_t n, float r) {
    for (int64_t i = 0; i < n; i++) buf[i] = pr_f32_to_e4m3(cc_rand(-r, r));
    return buf;
}

/* The fp8 QMatMul (cuBLASLt, e4m3 x e4m3, float32 accumulation) against
 * ref's float32 sums of the dequantized products: fp16 outputs to fp16
 * rounding, fp8 outputs within one e4m3 step (1/8 relative) plus what the
 * bias costs near zero: cuBLASLt's FP8 epilogue takes a 16-bit bias (fp16
 * here: up to 2.4e-4 off for |b| < 1, i.e. 5e-3 in units of y_scale 0.05);
 * Q / DQ to and from e4m3 exactly. */
static void test_fp8(void) {
    printf("fp8\n");
    static uint8_t ab[4 * 32 * 128], wb[128 * 96];
    static const float ws[1] = {0.125f}, qs[1] = {0.05f};
    static const uint8_t zp8[1] = {0};
    const pr_dtype F8 = PRECIS_FLOAT8E4M3FN;
    const cc_tolerance H_TOL = {4e-3f, 4e-3f}, F8_TOL = {5e-3f, 0.126f};
    cc_input m[5] = {{.name = "a", .rank = 3, .dims = {4, 32, 128}, .dtype = F8,
                      .raw = rand_f8(ab, 4 * 32 * 128, 4.0f)},
                     {.name = "w", .rank = 2, .dims = {128, 96}, .init = true, .dtype = F8,
                      .raw = rand_f8(wb, 128 * 96, 2.0f)},
                     {.name = "ws", .rank = 1, .dims = {1}, .init = true, .data = ws},
                     {.name = "bias", .rank = 1, .dims = {96}, .init = true},
                     {.name = "z", .rank = 3, .dims = {4, 32, 96}}};
    tnode t;
    fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    n_str(&t, "act", "Gelu");
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT16, &pr_cuda_impl_fp8, H_TOL, "fp8 qmatmul bias+gelu -> fp16");
    fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    cu_run_tol(&t, 5, m, 1, PRECIS_BFLOAT16, &pr_cuda_impl_fp8, cc_tol(PRECIS_BFLOAT16),
               "fp8 qmatmul bias+residual -> bf16");
    fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    n_str(&t, "act", "Relu");
    n_int(&t, "y_type", F8);
    n_float(&t, "y_scale", 0.05f);
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT16, &pr_cuda_impl_fp8, F8_TOL, "fp8 qmatmul bias+relu -> fp8");
    fused_node(&t, PR_OP_QMatMul, "QMatMul"); /* float32 out: a bf16 bias (5e-3 off at 1) */
    n_float(&t, "a_scale", 0.0625f);
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT32, &pr_cuda_impl_fp8, (cc_tolerance){8e-3f, 4e-3f},
               "fp8 qmatmul bias -> fp32");
    cc_input mt[3] = {m[0], m[1], m[2]};
    mt[1].dims[0] = 96;
    mt[1].dims[1] = 128;
    fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    n_int(&t, "transB", 1);
    cu_run_tol(&t, 3, mt, 1, PRECIS_FLOAT16, &pr_cuda_impl_fp8, H_TOL, "fp8 qmatmul transB -> fp16");
    /* Quantize (saturating: inputs reach 2x the range) / Dequantize, exact */
    cc_input q[3] = {{.name = "x", .rank = 2, .dims = {37, 64}, .lo = -45, .hi = 45},
                     {.name = "s", .rank = 0, .init = true, .data = qs},
                     {.name = "zp", .rank = 0, .init = true, .dtype = F8, .raw = zp8}};
    n_init(&t, PR_OP_QuantizeLinear, "QuantizeLinear", 19);
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT16, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "quantize fp16 -> fp8 (vector)");
    q[0].dims[1] = 63;
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "quantize fp32 -> fp8");
    cc_input dq[3] = {{.name = "x", .rank = 2, .dims = {37, 64}, .dtype = F8,
                       .raw = rand_f8(ab, 37 * 64, 400.0f)}, q[1], q[2]};
    n_init(&t, PR_OP_DequantizeLinear, "DequantizeLinear", 19);
    cu_run_tol(&t, 3, dq, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "dequantize fp8 -> fp32");
}

int main(void) {
    int rc = cu_setup();
    if (rc) return rc;
    test_gemm();
    test_attention();
    /* the fused kernel's two forms for D <= 64, forced (default: timed per shape) */
    setenv("PRECIS_CUDA_FLASH_SPLIT", "1", 1);
    printf("(flash: split form)\n");
    test_attention();
    setenv("PRECIS_CUDA_FLASH_SPLIT", "0", 1);
    printf("(flash: rows form)\n");
    test_attention();
    /* the rows form's 4 and 8 warps a block: the test shapes' small grids take 2 (large
     * grids: BERT / MiniLM at batch 64 take 4 / 8) */
    static const char *nws[2] = {"4", "8"};
    for (int i = 0; i < 2; i++) {
        setenv("PRECIS_CUDA_FLASH_NW", nws[i], 1);
        printf("(flash: rows form, %s warps)\n", nws[i]);
        test_attention();
    }
    unsetenv("PRECIS_CUDA_FLASH_NW");
    unsetenv("PRECIS_CUDA_FLASH_SPLIT");
    test_conv();
    test_nhwc();
    test_eltwise();
    test_move();
    test_rows();
    test_spatial();
    test_int8();
    test_igemm();
    test_cnn();
    test_fp8();
    cu_teardown();
    return check_report("test_cuda_ops");
}
