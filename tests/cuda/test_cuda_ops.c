/* Every CUDA impl against the ref backend on random inputs, in float32
 * (tight tolerance), float16 and bfloat16 (loose): matrix products with
 * each epilogue split, attention on both paths, convolutions (fused cuDNN
 * and our epilogue), elementwise with broadcasting, data movement, Gather,
 * Softmax, LayerNorm, reductions, pooling and Resize (the INT8 and FP8 impls:
 * test_cuda_int8.c). Exits 77 (ctest skip) without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cuda_check.h"

#include "backends/cuda/cuda_impls.h"
#include "passes/pass.h"

static const pr_dtype DTS[3] = {PRECIS_FLOAT32, PRECIS_FLOAT16, PRECIS_BFLOAT16};

#define ALL_DT(call_with_d)                                                                        \
    for (int di = 0; di < 3; di++) {                                                               \
        pr_dtype D = DTS[di];                                                                      \
        char label[128];                                                                           \
        call_with_d;                                                                               \
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
    cu_fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Relu");
    cc_input a[3] = {{.name = "a", .rank = 3, .dims = {2, 33, 64}}, {.name = "w", .rank = 2, .dims = {64, 48}, .init = true},
                     {.name = "b", .rank = 1, .dims = {48}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "matmul bias+relu %s", cu_dtn(D)),
            cu_run(&t, 3, a, 1, D, &pr_cuda_impl_gemm, label)));
    /* erf GELU: cuBLASLt's GELU (tanh form) for fp16/bf16, our epilogue kernel for fp32 */
    cu_fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Gelu");
    ALL_DT((snprintf(label, sizeof label, "matmul bias+gelu(erf) %s", cu_dtn(D)),
            cu_run(&t, 3, a, 1, D, &pr_cuda_impl_gemm, label)));
    /* residual: C operand (no act before it) then relu; and act before Z */
    cu_fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act2", "Relu");
    cc_input az[4] = {{.name = "a", .rank = 2, .dims = {17, 40}}, {.name = "w", .rank = 2, .dims = {24, 40}, .init = true},
                      {.name = "b", .rank = 1, .dims = {24}, .init = true}, {.name = "z", .rank = 2, .dims = {17, 24}}};
    n_int(&t, "transB", 1);
    ALL_DT((snprintf(label, sizeof label, "matmul transB bias+residual+relu %s", cu_dtn(D)),
            cu_run(&t, 4, az, 1, D, &pr_cuda_impl_gemm, label)));
    cu_fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Sigmoid");
    n_str(&t, "act2", "Tanh");
    n_float(&t, "alpha", 0.5f);
    n_int(&t, "transB", 1);
    ALL_DT((snprintf(label, sizeof label, "matmul alpha sigmoid,+Z,tanh %s", cu_dtn(D)),
            cu_run(&t, 4, az, 1, D, &pr_cuda_impl_gemm, label)));
    /* activation x activation, batched; and B broadcast over the batch */
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    cc_input bb[2] = {{.name = "a", .rank = 4, .dims = {2, 3, 5, 7}}, {.name = "b", .rank = 4, .dims = {2, 3, 7, 9}}};
    ALL_DT((snprintf(label, sizeof label, "matmul batched act x act %s", cu_dtn(D)),
            cu_run(&t, 2, bb, 1, D, &pr_cuda_impl_gemm, label)));
    cc_input bc[2] = {{.name = "a", .rank = 3, .dims = {4, 5, 7}}, {.name = "b", .rank = 3, .dims = {1, 7, 6}}};
    ALL_DT((snprintf(label, sizeof label, "matmul B broadcast batch %s", cu_dtn(D)),
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
    cu_fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Gelu");
    cc_input sk1[3] = {{.name = "a", .rank = 3, .dims = {1, 128, 768}},
                       {.name = "w", .rank = 2, .dims = {768, 256}, .init = true, .data = w1},
                       {.name = "b", .rank = 1, .dims = {256}, .init = true, .data = b1}};
    ALL_DT((snprintf(label, sizeof label, "matmul bias+gelu M128 K768 %s", cu_dtn(D)),
            cu_run_tol(&t, 3, sk1, 1, D, &pr_cuda_impl_gemm, long_k_tol(D), label)));
    cu_fused_node(&t, PR_OP_FusedMatMul, "FusedMatMul");
    cc_input sk2[4] = {{.name = "a", .rank = 3, .dims = {1, 128, 1024}},
                       {.name = "w", .rank = 2, .dims = {1024, 192}, .init = true, .data = w2},
                       {.name = "b", .rank = 1, .dims = {192}, .init = true, .data = b2},
                       {.name = "z", .rank = 3, .dims = {1, 128, 192}}};
    ALL_DT((snprintf(label, sizeof label, "matmul bias+residual M128 K1024 %s", cu_dtn(D)),
            cu_run_tol(&t, 4, sk2, 1, D, &pr_cuda_impl_gemm, long_k_tol(D), label)));
    /* Gemm transA with a C row */
    n_init(&t, PR_OP_Gemm, "Gemm", 13);
    n_int(&t, "transA", 1);
    n_float(&t, "beta", 0.5f);
    cc_input g[3] = {{.name = "a", .rank = 2, .dims = {30, 8}}, {.name = "w", .rank = 2, .dims = {30, 20}, .init = true},
                     {.name = "c", .rank = 1, .dims = {20}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "gemm transA beta*C %s", cu_dtn(D)),
            cu_run(&t, 3, g, 1, D, &pr_cuda_impl_gemm, label)));
}

static void test_attention(void) {
    printf("attention\n");
    tnode t;
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    cc_input a[4] = {{.name = "q", .rank = 4, .dims = {2, 4, 16, 32}}, {.name = "k", .rank = 4, .dims = {2, 4, 24, 32}}, {.name = "v", .rank = 4, .dims = {2, 4, 24, 32}},
                     {.name = "m", .rank = 4, .dims = {2, 1, 1, 24}, .init = true, .lo = -3, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention + mask (flash fp16/bf16, gemm fp32) %s", cu_dtn(D)),
            cu_run(&t, 4, a, 1, D, &pr_cuda_impl_attention, label)));
    /* several key tiles, partial query / key tiles, a per-query mask, D 64 and 128 */
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    cc_input f[4] = {{.name = "q", .rank = 4, .dims = {2, 3, 130, 64}}, {.name = "k", .rank = 4, .dims = {2, 3, 200, 64}}, {.name = "v", .rank = 4, .dims = {2, 3, 200, 64}},
                     {.name = "m", .rank = 4, .dims = {2, 1, 130, 200}, .lo = -6, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention D 64, 130 x 200, per-query mask %s", cu_dtn(D)),
            cu_run(&t, 4, f, 1, D, &pr_cuda_impl_attention, label)));
    /* a key mask broadcast over the query rows, staged in whole tiles */
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    cc_input fk[4] = {{.name = "q", .rank = 4, .dims = {2, 2, 100, 32}}, {.name = "k", .rank = 4, .dims = {2, 2, 128, 32}}, {.name = "v", .rank = 4, .dims = {2, 2, 128, 32}},
                      {.name = "m", .rank = 4, .dims = {2, 1, 1, 128}, .lo = -6, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention D 32, key mask [B,1,1,128] %s", cu_dtn(D)),
            cu_run(&t, 4, fk, 1, D, &pr_cuda_impl_attention, label)));
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.088f);
    cc_input h[3] = {{.name = "q", .rank = 3, .dims = {3, 70, 128}}, {.name = "k", .rank = 3, .dims = {3, 65, 128}}, {.name = "v", .rank = 3, .dims = {3, 65, 128}}};
    ALL_DT((snprintf(label, sizeof label, "attention D 128, 70 x 65 %s", cu_dtn(D)),
            cu_run(&t, 3, h, 1, D, &pr_cuda_impl_attention, label)));
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.25f);
    n_int(&t, "k_transposed", 1);
    cc_input b[3] = {{.name = "q", .rank = 3, .dims = {3, 9, 16}}, {.name = "k", .rank = 3, .dims = {3, 16, 21}}, {.name = "v", .rank = 3, .dims = {3, 21, 8}}};
    ALL_DT((snprintf(label, sizeof label, "attention k_transposed %s", cu_dtn(D)),
            cu_run(&t, 3, b, 1, D, &pr_cuda_impl_attention, label)));
    /* head transposes folded in (heads_bshd): Q K V Y stored [B, S, H, D] */
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    n_int(&t, "heads_bshd", 15);
    cc_input hs[4] = {{.name = "q", .rank = 4, .dims = {2, 40, 3, 64}}, {.name = "k", .rank = 4, .dims = {2, 70, 3, 64}}, {.name = "v", .rank = 4, .dims = {2, 70, 3, 64}},
                      {.name = "m", .rank = 4, .dims = {2, 1, 1, 70}, .init = true, .lo = -3, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention heads_bshd (flash fp16/bf16, row kernel fp32) %s", cu_dtn(D)),
            cu_run(&t, 4, hs, 1, D, &pr_cuda_impl_attention, label)));
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.17f);
    n_int(&t, "heads_bshd", 5);
    cc_input hq[3] = {{.name = "q", .rank = 4, .dims = {2, 33, 2, 32}}, {.name = "k", .rank = 4, .dims = {2, 2, 33, 32}}, {.name = "v", .rank = 4, .dims = {2, 33, 2, 32}}};
    ALL_DT((snprintf(label, sizeof label, "attention heads_bshd Q and V only %s", cu_dtn(D)),
            cu_run(&t, 3, hq, 1, D, &pr_cuda_impl_attention, label)));
    /* qkv_heads: Q, K, V thirds of one [B, S, 3HD] tensor (the packed projection GEMM);
     * each slot gets its own copy of it here, in ref and on the GPU alike */
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.125f);
    n_int(&t, "heads_bshd", 15);
    n_int(&t, "qkv_heads", 3);
    cc_input pk[4] = {{.name = "p", .rank = 3, .dims = {2, 50, 3 * 3 * 64}},
                      {.name = "p", .rank = 3, .dims = {2, 50, 3 * 3 * 64}},
                      {.name = "p", .rank = 3, .dims = {2, 50, 3 * 3 * 64}},
                      {.name = "m", .rank = 4, .dims = {2, 1, 1, 50}, .init = true, .lo = -3, .hi = 0}};
    ALL_DT((snprintf(label, sizeof label, "attention qkv_heads packed (flash fp16/bf16) %s", cu_dtn(D)),
            cu_run(&t, 4, pk, 1, D, &pr_cuda_impl_attention, label)));
    /* y_type 17 (fp8 plans): Y stored e4m3 by the flash kernel (fp16 / bf16 only); ref
     * quantizes its float32 Y, the kernel its fp16 / bf16 Y: the codes differ by the
     * attention's own tolerance over y_scale plus one e4m3 step (1/8; 2^-9 subnormal) */
    static const pr_dtype low[2] = {PRECIS_FLOAT16, PRECIS_BFLOAT16};
    for (int i = 0; i < 2; i++) {
        char label[128];
        const cc_tolerance at = cc_tol(low[i]);
        cc_tolerance f8 = {at.abs / 0.004f + 5e-3f, at.rel + 0.126f};
        cu_fused_node(&t, PR_OP_Attention, "Attention");
        n_float(&t, "scale", 0.125f);
        n_int(&t, "heads_bshd", 15);
        n_int(&t, "qkv_heads", 3);
        n_int(&t, "y_type", PRECIS_FLOAT8E4M3FN);
        n_float(&t, "y_scale", 0.004f);
        snprintf(label, sizeof label, "attention qkv_heads -> e4m3 (y_type) %s", cu_dtn(low[i]));
        cu_run_tol(&t, 4, pk, 1, low[i], &pr_cuda_impl_attention, f8, label);
        cu_fused_node(&t, PR_OP_Attention, "Attention");
        n_float(&t, "scale", 0.125f);
        n_int(&t, "heads_bshd", 15);
        n_int(&t, "y_type", PRECIS_FLOAT8E4M3FN);
        n_float(&t, "y_scale", 0.01f);
        f8.abs = at.abs / 0.01f + 5e-3f;
        snprintf(label, sizeof label, "attention heads_bshd -> e4m3 (y_type) %s", cu_dtn(low[i]));
        cu_run_tol(&t, 4, hs, 1, low[i], &pr_cuda_impl_attention, f8, label);
    }
    /* K an initializer (float32 beside low Q): the row kernel */
    cu_fused_node(&t, PR_OP_Attention, "Attention");
    n_float(&t, "scale", 0.25f);
    cc_input c[3] = {{.name = "q", .rank = 3, .dims = {2, 9, 16}}, {.name = "k", .rank = 2, .dims = {21, 16}, .init = true},
                     {.name = "v", .rank = 3, .dims = {2, 21, 24}}};
    ALL_DT((snprintf(label, sizeof label, "attention K initializer (row kernel) %s", cu_dtn(D)),
            cu_run(&t, 3, c, 1, D, &pr_cuda_impl_attention, label)));
}

/* cuDNN rounds the convolution to the output type before its fused bias (and
 * our epilogue reads it back the same way): two roundings, so two ulps. */
static void conv_node(tnode *t, bool fused, int stride, int group) {
    if (fused) cu_fused_node(t, PR_OP_FusedConv, "FusedConv");
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
    ALL_DT((snprintf(label, sizeof label, "conv3x3 bias+relu %s", cu_dtn(D)),
            cu_run_tol(&t, 3, a, 1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label)));
    conv_node(&t, false, 2, 1);
    ALL_DT((snprintf(label, sizeof label, "conv3x3 stride 2 bias %s", cu_dtn(D)),
            cu_run_tol(&t, 3, a, 1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label)));
    conv_node(&t, true, 1, 1);
    n_str(&t, "act2", "Relu");
    cc_input z[4] = {a[0], a[1], a[2], {.name = "z", .rank = 4, .dims = {2, 32, 13, 11}}};
    ALL_DT((snprintf(label, sizeof label, "conv3x3 bias+residual+relu %s", cu_dtn(D)),
            cu_run_tol(&t, 4, z, 1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label)));
    cu_fused_node(&t, PR_OP_FusedConv, "FusedConv");
    n_ints(&t, "pads", (int64_t[]){0, 0, 1, 1}, 4);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_int(&t, "group", 16);
    n_str(&t, "act", "Relu");
    cc_input as[3] = {{.name = "x", .rank = 4, .dims = {2, 16, 12, 10}},
                      {.name = "w", .rank = 4, .dims = {16, 1, 3, 3}, .init = true},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "depthwise s2 asymmetric pads %s", cu_dtn(D)),
            cu_run_tol(&t, 3, as, 1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label)));
    conv_node(&t, true, 1, 16);
    n_str(&t, "act", "HardSwish");
    cc_input dw[3] = {{.name = "x", .rank = 4, .dims = {2, 16, 13, 11}}, {.name = "w", .rank = 4, .dims = {16, 1, 3, 3}, .init = true},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "depthwise conv + hardswish %s", cu_dtn(D)),
            cu_run_tol(&t, 3, dw, 1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label)));
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
        snprintf(label, sizeof label, "nhwc conv3x3 bias+relu %s", cu_dtn(D));
        cu_run_lay(&t, 3, a, 1, Y1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
        conv_node(&t, true, 1, 1);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "nhwc conv3x3 bias+residual+relu %s", cu_dtn(D));
        cu_run_lay(&t, 4, a, 1, Y1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
        conv_node(&t, true, 2, 16);
        n_str(&t, "act", "HardSwish");
        cc_input dw[3] = {a[0], {.name = "w", .rank = 4, .dims = {16, 1, 3, 3}, .init = true},
                          {.name = "b", .rank = 1, .dims = {16}, .init = true}};
        snprintf(label, sizeof label, "nhwc depthwise s2 + hardswish %s", cu_dtn(D));
        cu_run_lay(&t, 3, dw, 1, Y1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
        cu_fused_node(&t, PR_OP_FusedConv, "FusedConv");
        n_ints(&t, "pads", (int64_t[]){0, 0, 1, 1}, 4);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_int(&t, "group", 16);
        snprintf(label, sizeof label, "nhwc depthwise s2 asymmetric pads %s", cu_dtn(D));
        cu_run_lay(&t, 3, dw, 1, Y1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
        n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
        n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
        snprintf(label, sizeof label, "nhwc maxpool 3x3 s2 %s", cu_dtn(D));
        cu_run_lay(&t, 1, a, 1, Y1, D, &pr_cuda_impl_pool, cc_tol(D), label);
        n_init(&t, PR_OP_GlobalAveragePool, "GlobalAveragePool", 1);
        snprintf(label, sizeof label, "nhwc global average pool %s", cu_dtn(D));
        cu_run_lay(&t, 1, a, 1, Y1, D, &pr_cuda_impl_pool, cc_tol(D), label);
        n_init(&t, PR_OP_Add, "Add", 14);
        cc_input ad[2] = {a[3], a[3]};
        ad[1].name = "z2";
        snprintf(label, sizeof label, "nhwc add %s", cu_dtn(D));
        cu_run_lay(&t, 2, ad, 1, Y1, D, &pr_cuda_impl_eltwise, cc_tol(D), label);
        /* Reorder both ways: ref is the identity on logical values */
        n_init(&t, PR_OP_Reorder, "Reorder", 1);
        t.node.domain = PR_FUSED_DOMAIN;
        n_str(&t, "to", "nhwc");
        cc_input pl[1] = {{.name = "x", .rank = 4, .dims = {2, 5, 7, 3}}};
        snprintf(label, sizeof label, "reorder plain -> nhwc %s", cu_dtn(D));
        cu_run_lay(&t, 1, pl, 1, Y1, D, &pr_cuda_impl_move, cc_tol(D), label);
        n_init(&t, PR_OP_Reorder, "Reorder", 1);
        t.node.domain = PR_FUSED_DOMAIN;
        n_str(&t, "to", "plain");
        cc_input nh[1] = {{.name = "x", .rank = 4, .dims = {2, 5, 7, 3}, .nhwc = true}};
        snprintf(label, sizeof label, "reorder nhwc -> plain %s", cu_dtn(D));
        cu_run_lay(&t, 1, nh, 1, NULL, D, &pr_cuda_impl_move, cc_tol(D), label);
    }
}

static void test_eltwise(void) {
    printf("eltwise\n");
    tnode t;
    n_init(&t, PR_OP_Add, "Add", 14);
    cc_input ab[2] = {{.name = "a", .rank = 4, .dims = {2, 3, 4, 5}}, {.name = "b", .rank = 3, .dims = {3, 1, 5}}};
    ALL_DT((snprintf(label, sizeof label, "add broadcast %s", cu_dtn(D)),
            cu_run(&t, 2, ab, 1, D, &pr_cuda_impl_eltwise, label)));
    /* contiguous rows of 8k elements: 16 bytes a thread for fp16/bf16 (position embeddings) */
    cc_input a8[2] = {{.name = "a", .rank = 3, .dims = {4, 6, 24}}, {.name = "b", .rank = 2, .dims = {6, 24}}};
    ALL_DT((snprintf(label, sizeof label, "add rows of 24, batch broadcast %s", cu_dtn(D)),
            cu_run(&t, 2, a8, 1, D, &pr_cuda_impl_eltwise, label)));
    /* a float32 initializer beside fp16 / bf16 rows (the position embeddings' Add): 8 elements
     * a thread, converted */
    cc_input a8i[2] = {{.name = "a", .rank = 3, .dims = {4, 6, 24}}, {.name = "b", .rank = 2, .dims = {6, 24}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "add float32 initializer rows of 24 %s", cu_dtn(D)),
            cu_run(&t, 2, a8i, 1, D, &pr_cuda_impl_eltwise, label)));
    /* Sum of three (pass_attn_mask.c's embeddings fold, cu.sum3): rows of 8k with a float32
     * initializer broadcast over the batch (8 elements a thread), and odd shapes with
     * broadcasts (the scalar kernel) */
    n_init(&t, PR_OP_Sum, "Sum", 13);
    cc_input s8[3] = {{.name = "a", .rank = 3, .dims = {4, 6, 24}}, {.name = "b", .rank = 3, .dims = {4, 6, 24}},
                      {.name = "c", .rank = 2, .dims = {6, 24}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "sum3 rows of 24, float32 initializer %s", cu_dtn(D)),
            cu_run(&t, 3, s8, 1, D, &pr_cuda_impl_eltwise, label)));
    cc_input s1[3] = {{.name = "a", .rank = 3, .dims = {3, 5, 7}}, {.name = "b", .rank = 2, .dims = {5, 1}},
                      {.name = "c", .rank = 3, .dims = {3, 1, 7}}};
    ALL_DT((snprintf(label, sizeof label, "sum3 broadcast [3,5,7] %s", cu_dtn(D)),
            cu_run(&t, 3, s1, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Mul, "Mul", 14);
    cc_input m8[2] = {{.name = "a", .rank = 2, .dims = {5, 16}}, {.name = "b", .rank = 2, .dims = {5, 16}}};
    ALL_DT((snprintf(label, sizeof label, "mul flat %s", cu_dtn(D)),
            cu_run(&t, 2, m8, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Div, "Div", 14);
    cc_input ad[2] = {{.name = "a", .rank = 3, .dims = {2, 7, 9}}, {.name = "b", .rank = 1, .dims = {9}, .init = true, .lo = 1, .hi = 2}};
    ALL_DT((snprintf(label, sizeof label, "div by float32 initializer %s", cu_dtn(D)),
            cu_run(&t, 2, ad, 1, D, &pr_cuda_impl_eltwise, label)));
    static const struct { pr_op op; const char *name; } un[] = {
        {PR_OP_Sigmoid, "Sigmoid"}, {PR_OP_Tanh, "Tanh"}, {PR_OP_Erf, "Erf"},
        {PR_OP_Gelu, "Gelu"}, {PR_OP_HardSwish, "HardSwish"}, {PR_OP_Exp, "Exp"},
        {PR_OP_Softplus, "Softplus"}, {PR_OP_Neg, "Neg"},
    };
    cc_input u[1] = {{.name = "x", .rank = 3, .dims = {3, 5, 7}, .lo = -3, .hi = 3}};
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
        n_init(&t, un[i].op, un[i].name, 20);
        ALL_DT((snprintf(label, sizeof label, "%s %s", un[i].name, cu_dtn(D)),
                cu_run(&t, 1, u, 1, D, &pr_cuda_impl_eltwise, label)));
    }
    n_init(&t, PR_OP_Clip, "Clip", 6);
    n_float(&t, "min", -0.5f);
    n_float(&t, "max", 1.5f);
    ALL_DT((snprintf(label, sizeof label, "clip %s", cu_dtn(D)),
            cu_run(&t, 1, u, 1, D, &pr_cuda_impl_eltwise, label)));
    /* Cast float32 -> act and int64 -> act */
    n_init(&t, PR_OP_Cast, "Cast", 13);
    n_int(&t, "to", PRECIS_FLOAT32);
    static const int64_t ids[6] = {0, 1, 1, 0, 1, 1};
    cc_input ci[1] = {{.name = "m", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = ids}};
    ALL_DT((snprintf(label, sizeof label, "cast int64 -> %s", cu_dtn(D)),
            cu_run(&t, 1, ci, 1, D, &pr_cuda_impl_eltwise, label)));
    /* float32 -> act, 8 elements a thread (k_cast8: contiguous, a multiple of 8) */
    static float cf[4 * 72];
    for (int i = 0; i < 4 * 72; i++) cf[i] = cc_rand(-60000, 60000) / (float)(1 + i % 9);
    cc_input cv[1] = {{.name = "x", .rank = 2, .dims = {4, 72}, .dtype = PRECIS_FLOAT32, .raw = cf}};
    ALL_DT((snprintf(label, sizeof label, "cast float32 [4,72] -> %s", cu_dtn(D)),
            cu_run(&t, 1, cv, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Where, "Where", 16);
    static const unsigned char cond[12] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1};
    cc_input w[3] = {{.name = "c", .rank = 2, .dims = {3, 4}, .dtype = PRECIS_BOOL, .raw = cond}, {.name = "a", .rank = 2, .dims = {3, 4}},
                     {.name = "b", .rank = 1, .dims = {4}}};
    ALL_DT((snprintf(label, sizeof label, "where broadcast %s", cu_dtn(D)),
            cu_run(&t, 3, w, 1, D, &pr_cuda_impl_eltwise, label)));
    n_init(&t, PR_OP_Greater, "Greater", 13);
    cc_input gt[2] = {{.name = "a", .rank = 2, .dims = {4, 6}}, {.name = "b", .rank = 2, .dims = {1, 6}}};
    ALL_DT((snprintf(label, sizeof label, "greater -> bool %s", cu_dtn(D)),
            cu_run(&t, 2, gt, 1, D, &pr_cuda_impl_eltwise, label)));
}

static void test_move(void) {
    printf("move\n");
    tnode t;
    n_init(&t, PR_OP_Transpose, "Transpose", 13);
    n_ints(&t, "perm", (int64_t[]){0, 2, 1, 3}, 4);
    cc_input x[1] = {{.name = "x", .rank = 4, .dims = {2, 5, 3, 8}}};
    ALL_DT((snprintf(label, sizeof label, "transpose 0213 %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Concat, "Concat", 13);
    n_int(&t, "axis", 1);
    cc_input c[3] = {{.name = "a", .rank = 3, .dims = {2, 3, 5}}, {.name = "b", .rank = 3, .dims = {2, 1, 5}}, {.name = "c", .rank = 3, .dims = {2, 4, 5}}};
    ALL_DT((snprintf(label, sizeof label, "concat axis 1 %s", cu_dtn(D)),
            cu_run(&t, 3, c, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Slice, "Slice", 13);
    static const int64_t st[2] = {1, -1}, en[2] = {7, -100}, ax[2] = {1, 2}, sp[2] = {2, -2};
    cc_input s[5] = {{.name = "x", .rank = 3, .dims = {2, 9, 7}},
                     {.name = "s", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = st},
                     {.name = "e", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = en},
                     {.name = "a", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = ax},
                     {.name = "p", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = sp}};
    ALL_DT((snprintf(label, sizeof label, "slice steps 2, -2 %s", cu_dtn(D)),
            cu_run(&t, 5, s, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Expand, "Expand", 13);
    static const int64_t shp[3] = {3, 4, 5};
    cc_input e[2] = {{.name = "x", .rank = 2, .dims = {4, 1}},
                     {.name = "s", .rank = 1, .dims = {3}, .init = true, .dtype = PRECIS_INT64, .raw = shp}};
    ALL_DT((snprintf(label, sizeof label, "expand %s", cu_dtn(D)),
            cu_run(&t, 2, e, 1, D, &pr_cuda_impl_move, label)));
    n_init(&t, PR_OP_Reshape, "Reshape", 14);
    static const int64_t rs[2] = {6, -1};
    cc_input r[2] = {{.name = "x", .rank = 3, .dims = {2, 3, 4}},
                     {.name = "s", .rank = 1, .dims = {2}, .init = true, .dtype = PRECIS_INT64, .raw = rs}};
    ALL_DT((snprintf(label, sizeof label, "reshape %s", cu_dtn(D)),
            cu_run(&t, 2, r, 1, D, &pr_cuda_impl_move, label)));
    for (int crd = 0; crd < 2; crd++) {
        n_init(&t, PR_OP_DepthToSpace, "DepthToSpace", 13);
        n_int(&t, "blocksize", 2);
        n_str(&t, "mode", crd ? "CRD" : "DCR");
        cc_input ds[1] = {{.name = "x", .rank = 4, .dims = {2, 12, 3, 5}}};
        ALL_DT((snprintf(label, sizeof label, "depthtospace %s %s", crd ? "CRD" : "DCR", cu_dtn(D)),
                cu_run(&t, 1, ds, 1, D, &pr_cuda_impl_move, label)));
    }
    n_init(&t, PR_OP_Gather, "Gather", 13);
    static const int64_t gi[6] = {3, 0, 99, -1, 42, 7};
    cc_input g[2] = {{.name = "tab", .rank = 2, .dims = {100, 16}, .init = true},
                     {.name = "i", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = gi}};
    ALL_DT((snprintf(label, sizeof label, "gather embedding %s", cu_dtn(D)),
            cu_run(&t, 2, g, 1, D, &pr_cuda_impl_gather, label)));
    /* rows of 24: a float32 table into fp16 / bf16 rows 8 elements a thread (k_gather8) */
    cc_input g24[2] = {{.name = "tab", .rank = 2, .dims = {100, 24}, .init = true},
                       {.name = "i", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = gi}};
    ALL_DT((snprintf(label, sizeof label, "gather rows of 24 %s", cu_dtn(D)),
            cu_run(&t, 2, g24, 1, D, &pr_cuda_impl_gather, label)));
    /* rows of 5 elements: not whole 16-byte chunks (the element loop) */
    cc_input g5[2] = {{.name = "tab", .rank = 2, .dims = {100, 5}, .init = true},
                      {.name = "i", .rank = 2, .dims = {2, 3}, .dtype = PRECIS_INT64, .raw = gi}};
    ALL_DT((snprintf(label, sizeof label, "gather rows of 5 %s", cu_dtn(D)),
            cu_run(&t, 2, g5, 1, D, &pr_cuda_impl_gather, label)));
}

static void test_rows(void) {
    printf("rows\n");
    tnode t;
    n_init(&t, PR_OP_Softmax, "Softmax", 13);
    cc_input x[1] = {{.name = "x", .rank = 3, .dims = {4, 7, 130}, .lo = -5, .hi = 5}};
    ALL_DT((snprintf(label, sizeof label, "softmax last axis %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_Softmax, "Softmax", 13);
    n_int(&t, "axis", 1);
    ALL_DT((snprintf(label, sizeof label, "softmax axis 1 %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_LogSoftmax, "LogSoftmax", 11);
    ALL_DT((snprintf(label, sizeof label, "logsoftmax opset 11 %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_norm, label)));
    n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
    n_float(&t, "epsilon", 1e-5f);
    cc_input l[3] = {{.name = "x", .rank = 3, .dims = {3, 5, 96}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {96}, .init = true},
                     {.name = "b", .rank = 1, .dims = {96}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm %s", cu_dtn(D)),
            cu_run(&t, 3, l, 1, D, &pr_cuda_impl_norm, label)));
    /* 16-byte chunks a lane (fp16/bf16, L % 8 == 0): 3 chunks a lane; L 100: the scalar kernel */
    cc_input l2[3] = {{.name = "x", .rank = 2, .dims = {9, 768}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {768}, .init = true},
                      {.name = "b", .rank = 1, .dims = {768}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 768 %s", cu_dtn(D)),
            cu_run(&t, 3, l2, 1, D, &pr_cuda_impl_norm, label)));
    cc_input l3[3] = {{.name = "x", .rank = 2, .dims = {5, 100}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {100}, .init = true},
                      {.name = "b", .rank = 1, .dims = {100}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 100 %s", cu_dtn(D)),
            cu_run(&t, 3, l3, 1, D, &pr_cuda_impl_norm, label)));
    /* L 384 (MiniLM): two rows a warp, 16 lanes of 3 chunks; 7 rows: a half-warp past the end */
    cc_input l4[3] = {{.name = "x", .rank = 2, .dims = {7, 384}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {384}, .init = true},
                      {.name = "b", .rank = 1, .dims = {384}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 384 %s", cu_dtn(D)),
            cu_run(&t, 3, l4, 1, D, &pr_cuda_impl_norm, label)));
    /* no B (the staged Scale alone: k_layernorm_vec's SG), 33 rows: a block and a row past it */
    cc_input l5[2] = {{.name = "x", .rank = 2, .dims = {33, 384}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {384}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 384 no B %s", cu_dtn(D)),
            cu_run(&t, 2, l5, 1, D, &pr_cuda_impl_norm, label)));
    cc_input l6[2] = {{.name = "x", .rank = 2, .dims = {9, 1024}, .lo = -2, .hi = 3}, {.name = "g", .rank = 1, .dims = {1024}, .init = true}};
    ALL_DT((snprintf(label, sizeof label, "layernorm 1024 no B %s", cu_dtn(D)),
            cu_run(&t, 2, l6, 1, D, &pr_cuda_impl_norm, label)));
    /* q_scale (fp8 plans): output 1 = e4m3(Y / q_scale), in the same pass (768: fp16 / bf16
     * chunks) or by the quantize kernel after it (100; float32); ref quantizes its float32 Y,
     * the GPU its rounded Y: one e4m3 step (1/8) apart at most */
    n_float(&t, "q_scale", 0.01f);
    ALL_DT((snprintf(label, sizeof label, "layernorm 768 + e4m3 (q_scale) %s", cu_dtn(D)),
            cu_run_tol(&t, 3, l2, 2, D, &pr_cuda_impl_norm, (cc_tolerance){5e-3f, 0.126f}, label)));
    ALL_DT((snprintf(label, sizeof label, "layernorm 100 + e4m3 (q_scale) %s", cu_dtn(D)),
            cu_run_tol(&t, 3, l3, 2, D, &pr_cuda_impl_norm, (cc_tolerance){5e-3f, 0.126f}, label)));
    ALL_DT((snprintf(label, sizeof label, "layernorm 384 + e4m3 (q_scale) %s", cu_dtn(D)),
            cu_run_tol(&t, 3, l4, 2, D, &pr_cuda_impl_norm, (cc_tolerance){5e-3f, 0.126f}, label)));
    /* EmbedLayerNorm (pass_embed_ln.c: the embeddings' two Gathers + Sum + LayerNorm, one
     * kernel; fp16 / bf16 Y): ref sums and normalizes in float32, the GPU rounds the sum to
     * the activation type first (as the Gathers and the Sum it replaces): a looser tolerance. Indices from
     * the end too; 35 rows: a half-warp past the end at L 384 (two rows a warp). Tables as
     * float32 initializers (converted in the kernel, MiniLM's position table P) or
     * activations of the tested type; L 768: a warp a row; with the e4m3 output. */
    static const int64_t ev0[35] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -1, -2, -3, -4, 12, 13,
                                    14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, -30};
    static const int64_t ev1[35] = {0, 1, 1, 0, -1, -2, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0,
                                    1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0};
    for (int di = 1; di < 3; di++) {
        pr_dtype D = DTS[di];
        char label[128];
        cc_tolerance et = D == PRECIS_FLOAT16 ? (cc_tolerance){4e-3f, 8e-3f} : (cc_tolerance){3e-2f, 5e-2f};
        cu_fused_node(&t, PR_OP_EmbedLayerNorm, "EmbedLayerNorm");
        n_float(&t, "epsilon", 1e-12f);
        cc_input e1[7] = {{.name = "w0", .rank = 2, .dims = {30, 384}, .init = true}, {.name = "i0", .rank = 2, .dims = {5, 7}, .dtype = PRECIS_INT64, .raw = ev0},
                          {.name = "w1", .rank = 2, .dims = {2, 384}, .init = true}, {.name = "i1", .rank = 2, .dims = {5, 7}, .dtype = PRECIS_INT64, .raw = ev1},
                          {.name = "p", .rank = 3, .dims = {1, 7, 384}, .init = true}, {.name = "g", .rank = 1, .dims = {384}, .init = true, .lo = 0.5f, .hi = 1.5f},
                          {.name = "b", .rank = 1, .dims = {384}, .init = true}};
        snprintf(label, sizeof label, "embed layernorm 384, float32 tables %s", cu_dtn(D));
        cu_run_tol(&t, 7, e1, 1, D, &pr_cuda_impl_norm, et, label);
        cc_input e2[6] = {{.name = "w0", .rank = 2, .dims = {30, 768}}, {.name = "i0", .rank = 2, .dims = {5, 7}, .dtype = PRECIS_INT64, .raw = ev0},
                          {.name = "w1", .rank = 2, .dims = {2, 768}}, {.name = "i1", .rank = 2, .dims = {5, 7}, .dtype = PRECIS_INT64, .raw = ev1},
                          {.name = "p", .rank = 3, .dims = {5, 7, 768}}, {.name = "g", .rank = 1, .dims = {768}, .init = true, .lo = 0.5f, .hi = 1.5f}};
        snprintf(label, sizeof label, "embed layernorm 768, tables as activations, no B %s", cu_dtn(D));
        cu_run_tol(&t, 6, e2, 1, D, &pr_cuda_impl_norm, et, label);
        /* Y's difference from ref (the rounded sum) over q_scale, plus one e4m3 step */
        n_float(&t, "q_scale", 0.1f);
        snprintf(label, sizeof label, "embed layernorm 384 + e4m3 (q_scale) %s", cu_dtn(D));
        cu_run_tol(&t, 7, e1, 2, D, &pr_cuda_impl_norm, (cc_tolerance){et.abs / 0.1f + 5e-3f, et.rel + 0.126f}, label);
    }
    n_init(&t, PR_OP_ReduceMean, "ReduceMean", 13);
    n_ints(&t, "axes", (int64_t[]){2, 3}, 2);
    cc_input r[1] = {{.name = "x", .rank = 4, .dims = {2, 3, 5, 6}}};
    ALL_DT((snprintf(label, sizeof label, "reducemean axes 2,3 %s", cu_dtn(D)),
            cu_run(&t, 1, r, 1, D, &pr_cuda_impl_reduce, label)));
    n_init(&t, PR_OP_ReduceSum, "ReduceSum", 13);
    n_int(&t, "keepdims", 0);
    static const int64_t ax[1] = {1};
    cc_input rs[2] = {{.name = "x", .rank = 3, .dims = {2, 37, 6}},
                      {.name = "a", .rank = 1, .dims = {1}, .init = true, .dtype = PRECIS_INT64, .raw = ax}};
    ALL_DT((snprintf(label, sizeof label, "reducesum axes input %s", cu_dtn(D)),
            cu_run(&t, 2, rs, 1, D, &pr_cuda_impl_reduce, label)));
    n_init(&t, PR_OP_ReduceL2, "ReduceL2", 13);
    n_ints(&t, "axes", (int64_t[]){-1}, 1);
    ALL_DT((snprintf(label, sizeof label, "reducel2 %s", cu_dtn(D)),
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
    ALL_DT((snprintf(label, sizeof label, "maxpool 3x3 s2 p1 %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_pool, label)));
    n_init(&t, PR_OP_AveragePool, "AveragePool", 19);
    n_ints(&t, "kernel_shape", (int64_t[]){3, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 0, 1, 1}, 4);
    n_int(&t, "count_include_pad", 1);
    n_int(&t, "ceil_mode", 1);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    ALL_DT((snprintf(label, sizeof label, "avgpool count_include_pad ceil %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_pool, label)));
    n_init(&t, PR_OP_GlobalAveragePool, "GlobalAveragePool", 1);
    ALL_DT((snprintf(label, sizeof label, "global average pool %s", cu_dtn(D)),
            cu_run(&t, 1, x, 1, D, &pr_cuda_impl_pool, label)));
    static const float sc[4] = {1, 1, 2, 1.5f};
    cc_input r[3] = {{.name = "x", .rank = 4, .dims = {2, 3, 7, 6}}, {.name = "roi", .rank = 1, .dims = {0}, .init = true},
                     {.name = "s", .rank = 1, .dims = {4}, .init = true, .data = sc}};
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "nearest");
    ALL_DT((snprintf(label, sizeof label, "resize nearest %s", cu_dtn(D)),
            cu_run(&t, 3, r, 1, D, &pr_cuda_impl_pool, label)));
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "linear");
    n_str(&t, "coordinate_transformation_mode", "align_corners");
    ALL_DT((snprintf(label, sizeof label, "resize linear align_corners %s", cu_dtn(D)),
            cu_run(&t, 3, r, 1, D, &pr_cuda_impl_pool, label)));
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
    /* the LayerNorm's A/B forms: div.rn for the e4m3 output, the packed one-pass form,
     * register caps of 6 / 8 blocks an SM, a warp a row, Scale / B from global memory
     * (FASTQ, FORM, MINB, LPR, STAGE) */
    static const char *lnv[9][5] = {{"0", "", "", "", ""}, {"", "", "6", "", ""}, {"", "", "8", "", ""},
                                    {"", "1", "", "", ""}, {"", "1", "6", "", ""}, {"", "1", "8", "", ""},
                                    {"", "", "", "32", ""}, {"", "", "", "", "0"}, {"", "", "", "32", "0"}};
    static const char *lnn[5] = {"PRECIS_CUDA_LN_FASTQ", "PRECIS_CUDA_LN_FORM", "PRECIS_CUDA_LN_MINB",
                                 "PRECIS_CUDA_LN_LPR", "PRECIS_CUDA_LN_STAGE"};
    for (int i = 0; i < 9; i++) {
        for (int j = 0; j < 5; j++)
            if (lnv[i][j][0]) setenv(lnn[j], lnv[i][j], 1);
        printf("(rows: LN fastq %s form %s minb %s lpr %s stage %s)\n", lnv[i][0], lnv[i][1], lnv[i][2],
               lnv[i][3], lnv[i][4]);
        test_rows();
        for (int j = 0; j < 5; j++) unsetenv(lnn[j]);
    }
    /* the Gathers' 64-bit index arithmetic (A/B) */
    setenv("PRECIS_CUDA_GATHER_I32", "0", 1);
    printf("(move: gather i32 0)\n");
    test_move();
    unsetenv("PRECIS_CUDA_GATHER_I32");
    test_spatial();
    cu_teardown();
    return check_report("test_cuda_ops");
}
