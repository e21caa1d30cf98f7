/* The FP16 CPU impls (src/backends/cpu/kernels_f16.h) against ref.
 *
 *   test_cpu_f16                 the cases on the best ISA, then itself again
 *                                capped by PRECIS_CPU_ISA: "avx512" (when the
 *                                best is AMX), "avx2" (F16C) and "scalar"
 *   test_cpu_f16 avx512|avx2|scalar   the cases on that ISA only
 *   test_cpu_f16 bench           GFLOP/s: the 1024^3 GEMM, 3x3 64->64 and other
 *                                convs at 56x56, attention matmuls, 1 and 2
 *                                threads; the f16-accumulation experiment
 *   test_cpu_f16 benchconv C M HW k group threads reps
 *   test_cpu_f16 benchbmm heads M K N threads reps
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/f16_gemm.h"
#include "backends/cpu/kernels_f16.h"
#include "cpu_check.h"
#include "ir/act.h"

static const pr_cpu_impl *const CONV = &pr_cpu_impl_f16_conv;
static const pr_cpu_impl *const MM = &pr_cpu_impl_f16_matmul;

/* largest |impl - ref| seen, conv and matmul cases, and the case */
static float worst[2];
static char worst_case[2][64];
static void note(int which, float w, const char *label) {
    if (w > worst[which]) {
        worst[which] = w;
        snprintf(worst_case[which], sizeof worst_case[which], "%s", label);
    }
}

/* ------------------------------------------------------------ helpers */

static void set_act(tnode *t, const char *prefix, int kind) {
    static const char *const alpha[] = {"act_alpha", "act2_alpha"};
    static const char *const beta[] = {"act_beta", "act2_beta"};
    int w = strcmp(prefix, "act2") == 0;
    if (!kind) return;
    n_str(t, prefix, pr_act_names[kind]);
    switch (kind) {
    case PR_ACT_LEAKY_RELU: n_float(t, alpha[w], 0.1f); break;
    case PR_ACT_CLIP:
        n_float(t, alpha[w], -0.5f);
        n_float(t, beta[w], 0.7f);
        break;
    case PR_ACT_HARD_SIGMOID:
        n_float(t, alpha[w], 0.2f);
        n_float(t, beta[w], 0.5f);
        break;
    default: break;
    }
}

typedef struct convp {
    int64_t n, c, h, w, m, kh, kw, s, p, g, d;
    bool bias, z;
    int act, act2;
    const char *auto_pad;
    const int64_t *pads4; /* begin h, begin w, end h, end w */
} convp;

static void conv_case(const char *label, convp p, int threads) {
    tnode t;
    const bool fused = p.act || p.z;
    n_init(&t, fused ? PR_OP_FusedConv : PR_OP_Conv, fused ? "FusedConv" : "Conv", 17);
    if (fused) t.node.domain = PR_FUSED_DOMAIN;
    if (!p.s) p.s = 1;
    if (!p.g) p.g = 1;
    if (!p.d) p.d = 1;
    int64_t pads[4] = {p.p, p.p, p.p, p.p};
    if (p.pads4) memcpy(pads, p.pads4, sizeof pads);
    if (p.auto_pad) n_str(&t, "auto_pad", p.auto_pad);
    else n_ints(&t, "pads", pads, 4);
    if (p.s > 1) n_ints(&t, "strides", (int64_t[]){p.s, p.s}, 2);
    if (p.d > 1) n_ints(&t, "dilations", (int64_t[]){p.d, p.d}, 2);
    if (p.g > 1) n_int(&t, "group", p.g);
    set_act(&t, "act", p.act);
    set_act(&t, "act2", p.act2);
    int64_t oh, ow;
    if (p.auto_pad) {
        oh = (p.h + p.s - 1) / p.s;
        ow = (p.w + p.s - 1) / p.s;
    } else {
        oh = (p.h + pads[0] + pads[2] - p.d * (p.kh - 1) - 1) / p.s + 1;
        ow = (p.w + pads[1] + pads[3] - p.d * (p.kw - 1) - 1) / p.s + 1;
    }
    cc_input in[4] = {
        {"x", 4, {p.n, p.c, p.h, p.w}, .nhwc = true},
        {"w", 4, {p.m, p.c / p.g, p.kh, p.kw}, .init = true},
        {p.bias ? "b" : NULL, 1, {p.m}, .init = true},
        {p.z ? "z" : NULL, 4, {p.n, p.m, oh, ow}, .nhwc = true},
    };
    int n_in = p.z ? 4 : p.bias ? 3 : 2;
    note(0, cc_run(&t, n_in, in, 1, (bool[]){true}, PRECIS_FLOAT16, CONV, threads, label), label);
}

typedef struct mmp {
    pr_op op;
    int ra, rb;
    int64_t ad[4], bd[4];
    bool binit, ta, tb;
    float alpha, beta;
    int nbias; /* 0: none; 1: scalar; else [N] */
    int biasrank;
    int act, act2;
    int ry;
    int64_t yd[4]; /* for the residual; ry 0: none */
} mmp;

static void mm_case(const char *label, mmp p, int threads) {
    tnode t;
    const char *nm = p.op == PR_OP_Gemm ? "Gemm" : p.op == PR_OP_MatMul ? "MatMul" : "FusedMatMul";
    n_init(&t, p.op, nm, 17);
    if (p.op == PR_OP_FusedMatMul) t.node.domain = PR_FUSED_DOMAIN;
    if (p.ta) n_int(&t, "transA", 1);
    if (p.tb) n_int(&t, "transB", 1);
    if (p.alpha != 0) n_float(&t, "alpha", p.alpha);
    if (p.beta != 0) n_float(&t, "beta", p.beta);
    set_act(&t, "act", p.act);
    set_act(&t, "act2", p.act2);
    cc_input in[4] = {{.name = "a", .rank = p.ra},
                      {"b", p.rb, {0}, .init = p.binit},
                      {.name = NULL},
                      {.name = NULL}};
    memcpy(in[0].dims, p.ad, sizeof p.ad);
    memcpy(in[1].dims, p.bd, sizeof p.bd);
    int n_in = 2;
    if (p.nbias) {
        in[2].name = "bias";
        in[2].init = true;
        in[2].rank = p.biasrank ? p.biasrank : 1;
        for (int d = 0; d < in[2].rank; d++) in[2].dims[d] = 1;
        in[2].dims[in[2].rank - 1] = p.nbias;
        n_in = 3;
    }
    if (p.ry) {
        in[3].name = "z";
        in[3].rank = p.ry;
        memcpy(in[3].dims, p.yd, sizeof p.yd);
        n_in = 4;
    }
    note(1, cc_run(&t, n_in, in, 1, NULL, PRECIS_FLOAT16, MM, threads, label), label);
}

/* ------------------------------------------------------------ cases */

static void conv_cases(bool full) {
    /* 1x1 stride 1: direct GEMM over pixels */
    conv_case("conv 1x1 17->33",
              (convp){.n = 1, .c = 17, .h = 9, .w = 9, .m = 33, .kh = 1, .kw = 1, .bias = true}, 1);
    conv_case("conv 1x1 64->40 b2",
              (convp){.n = 2,
                      .c = 64,
                      .h = 7,
                      .w = 5,
                      .m = 40,
                      .kh = 1,
                      .kw = 1,
                      .bias = true,
                      .act = PR_ACT_RELU},
              2);
    conv_case("conv 1x1 s2 16->24",
              (convp){.n = 1, .c = 16, .h = 9, .w = 8, .m = 24, .kh = 1, .kw = 1, .s = 2}, 2);
    /* im2col */
    conv_case(
        "conv 3x3 8->16 b2",
        (convp){.n = 2, .c = 8, .h = 9, .w = 9, .m = 16, .kh = 3, .kw = 3, .p = 1, .bias = true},
        1);
    conv_case("conv 3x3 s2 3->17",
              (convp){.n = 1,
                      .c = 3,
                      .h = 15,
                      .w = 13,
                      .m = 17,
                      .kh = 3,
                      .kw = 3,
                      .s = 2,
                      .p = 1,
                      .bias = true},
              2);
    conv_case("conv 5x5 33->32",
              (convp){.n = 1,
                      .c = 33,
                      .h = 11,
                      .w = 10,
                      .m = 32,
                      .kh = 5,
                      .kw = 5,
                      .p = 2,
                      .bias = true,
                      .act = PR_ACT_SWISH},
              2);
    conv_case("conv 5x5 s2 nopad",
              (convp){.n = 2, .c = 5, .h = 13, .w = 12, .m = 9, .kh = 5, .kw = 5, .s = 2}, 1);
    conv_case("conv 3x3 dil2",
              (convp){.n = 1,
                      .c = 6,
                      .h = 12,
                      .w = 11,
                      .m = 10,
                      .kh = 3,
                      .kw = 3,
                      .p = 2,
                      .d = 2,
                      .bias = true},
              2);
    conv_case("conv 3x3 asym pads",
              (convp){.n = 1,
                      .c = 7,
                      .h = 8,
                      .w = 9,
                      .m = 12,
                      .kh = 3,
                      .kw = 3,
                      .pads4 = (const int64_t[]){0, 1, 2, 0}},
              1);
    conv_case("conv 3x3 SAME_UPPER s2",
              (convp){.n = 1,
                      .c = 4,
                      .h = 10,
                      .w = 9,
                      .m = 8,
                      .kh = 3,
                      .kw = 3,
                      .s = 2,
                      .auto_pad = "SAME_UPPER"},
              2);
    conv_case(
        "conv 3x3 K=4608",
        (convp){.n = 1, .c = 512, .h = 5, .w = 6, .m = 40, .kh = 3, .kw = 3, .p = 1, .bias = true},
        2);
    conv_case("conv 1x1 K=1024 M=300",
              (convp){.n = 1, .c = 1024, .h = 3, .w = 4, .m = 300, .kh = 1, .kw = 1, .bias = true},
              2);
    /* shapes for the direct AMX convolution (one group, C padded to 32 at
     * little cost): column blocks of 32 with 16- and 32-row tails */
    conv_case(
        "conv 3x3 64->64 wide",
        (convp){.n = 1, .c = 64, .h = 5, .w = 45, .m = 64, .kh = 3, .kw = 3, .p = 1, .bias = true},
        2);
    conv_case("conv 3x3 s2 30->40 b2 +Z",
              (convp){.n = 2,
                      .c = 30,
                      .h = 11,
                      .w = 37,
                      .m = 40,
                      .kh = 3,
                      .kw = 3,
                      .s = 2,
                      .p = 1,
                      .bias = true,
                      .z = true,
                      .act = PR_ACT_RELU,
                      .act2 = PR_ACT_SWISH},
              2);
    conv_case("conv 5x5 dil2 32->17",
              (convp){.n = 1, .c = 32, .h = 12, .w = 20, .m = 17, .kh = 5, .kw = 5, .p = 3, .d = 2},
              1);
    conv_case(
        "conv 1x1 s2 96->70",
        (convp){.n = 1, .c = 96, .h = 9, .w = 35, .m = 70, .kh = 1, .kw = 1, .s = 2, .bias = true},
        2);
    conv_case("conv 3x3 asym 64",
              (convp){.n = 1,
                      .c = 64,
                      .h = 6,
                      .w = 17,
                      .m = 33,
                      .kh = 3,
                      .kw = 3,
                      .pads4 = (const int64_t[]){1, 0, 0, 2}},
              1);
    conv_case("conv 7x7 s2 SAME 32",
              (convp){.n = 1,
                      .c = 32,
                      .h = 13,
                      .w = 14,
                      .m = 16,
                      .kh = 7,
                      .kw = 7,
                      .s = 2,
                      .auto_pad = "SAME_UPPER"},
              2);
    /* groups */
    conv_case("conv 3x3 group 2",
              (convp){.n = 1,
                      .c = 8,
                      .h = 7,
                      .w = 7,
                      .m = 12,
                      .kh = 3,
                      .kw = 3,
                      .p = 1,
                      .g = 2,
                      .bias = true},
              2);
    conv_case("conv 3x3 group 4 b2",
              (convp){.n = 2,
                      .c = 16,
                      .h = 6,
                      .w = 6,
                      .m = 16,
                      .kh = 3,
                      .kw = 3,
                      .p = 1,
                      .g = 4,
                      .bias = true,
                      .z = true,
                      .act = PR_ACT_RELU},
              1);
    conv_case("conv 1x1 group 3",
              (convp){.n = 1, .c = 12, .h = 5, .w = 5, .m = 9, .kh = 1, .kw = 1, .g = 3}, 1);
    conv_case("conv dw mult 2",
              (convp){.n = 1,
                      .c = 6,
                      .h = 7,
                      .w = 7,
                      .m = 12,
                      .kh = 3,
                      .kw = 3,
                      .p = 1,
                      .g = 6,
                      .bias = true},
              2);
    /* depthwise */
    conv_case("conv dw 3x3 33",
              (convp){.n = 1,
                      .c = 33,
                      .h = 10,
                      .w = 9,
                      .m = 33,
                      .kh = 3,
                      .kw = 3,
                      .p = 1,
                      .g = 33,
                      .bias = true,
                      .act = PR_ACT_CLIP,
                      .z = true,
                      .act2 = PR_ACT_RELU},
              2);
    conv_case("conv dw 5x5 s2 17 b2",
              (convp){.n = 2,
                      .c = 17,
                      .h = 11,
                      .w = 12,
                      .m = 17,
                      .kh = 5,
                      .kw = 5,
                      .s = 2,
                      .p = 2,
                      .g = 17,
                      .bias = true},
              1);
    conv_case("conv dw 3x3 s2 64",
              (convp){.n = 1,
                      .c = 64,
                      .h = 9,
                      .w = 9,
                      .m = 64,
                      .kh = 3,
                      .kw = 3,
                      .s = 2,
                      .p = 1,
                      .g = 64,
                      .act = PR_ACT_HARD_SWISH},
              2);
    conv_case("conv dw 3x3 dil3",
              (convp){.n = 1,
                      .c = 18,
                      .h = 11,
                      .w = 12,
                      .m = 18,
                      .kh = 3,
                      .kw = 3,
                      .p = 3,
                      .d = 3,
                      .g = 18,
                      .bias = true},
              1);
    conv_case("conv dw 3x3 s2 dil2 b2",
              (convp){.n = 2,
                      .c = 40,
                      .h = 13,
                      .w = 12,
                      .m = 40,
                      .kh = 3,
                      .kw = 3,
                      .s = 2,
                      .p = 2,
                      .d = 2,
                      .g = 40},
              2);
    conv_case(
        "conv dw 3x3 3",
        (convp){
            .n = 2, .c = 3, .h = 6, .w = 5, .m = 3, .kh = 3, .kw = 3, .p = 1, .g = 3, .bias = true},
        1);
    /* residual and every activation */
    for (int a = 1; a < PR_ACT_COUNT; a++) {
        char label[64];
        snprintf(label, sizeof label, "conv 3x3 act %s", pr_act_names[a]);
        conv_case(label,
                  (convp){.n = 1,
                          .c = 8,
                          .h = 6,
                          .w = 7,
                          .m = 20,
                          .kh = 3,
                          .kw = 3,
                          .p = 1,
                          .bias = true,
                          .act = a},
                  1 + a % 2);
        if (!full && a > 3) continue;
        snprintf(label, sizeof label, "conv 1x1 +Z act2 %s", pr_act_names[a]);
        conv_case(label,
                  (convp){.n = 2,
                          .c = 24,
                          .h = 4,
                          .w = 5,
                          .m = 17,
                          .kh = 1,
                          .kw = 1,
                          .bias = true,
                          .act = PR_ACT_RELU,
                          .z = true,
                          .act2 = a},
                  2 - a % 2);
        snprintf(label, sizeof label, "conv dw act %s", pr_act_names[a]);
        conv_case(label,
                  (convp){.n = 1,
                          .c = 20,
                          .h = 5,
                          .w = 6,
                          .m = 20,
                          .kh = 3,
                          .kw = 3,
                          .p = 1,
                          .g = 20,
                          .bias = true,
                          .act = a},
                  2);
    }
}

static void mm_cases(bool full) {
    (void)full;
    mm_case(
        "matmul 2d",
        (mmp){.op = PR_OP_MatMul, .ra = 2, .rb = 2, .ad = {37, 64}, .bd = {64, 50}, .binit = true},
        1);
    mm_case(
        "matmul 3d",
        (mmp){
            .op = PR_OP_MatMul, .ra = 3, .rb = 2, .ad = {2, 17, 33}, .bd = {33, 65}, .binit = true},
        2);
    mm_case("matmul 4d",
            (mmp){.op = PR_OP_MatMul,
                  .ra = 4,
                  .rb = 2,
                  .ad = {2, 3, 5, 40},
                  .bd = {40, 32},
                  .binit = true},
            2);
    mm_case("matmul B [1,K,N]",
            (mmp){.op = PR_OP_MatMul,
                  .ra = 3,
                  .rb = 3,
                  .ad = {2, 9, 20},
                  .bd = {1, 20, 7},
                  .binit = true},
            1);
    mm_case("matmul K=4608",
            (mmp){.op = PR_OP_MatMul,
                  .ra = 2,
                  .rb = 2,
                  .ad = {16, 4608},
                  .bd = {4608, 40},
                  .binit = true},
            2);
    mm_case("matmul K=700 big",
            (mmp){.op = PR_OP_MatMul,
                  .ra = 2,
                  .rb = 2,
                  .ad = {300, 700},
                  .bd = {700, 600},
                  .binit = true},
            2);
    mm_case(
        "matmul gemv",
        (mmp){.op = PR_OP_MatMul, .ra = 2, .rb = 2, .ad = {1, 300}, .bd = {300, 70}, .binit = true},
        2);
    mm_case("gemm transB bias",
            (mmp){.op = PR_OP_Gemm,
                  .ra = 2,
                  .rb = 2,
                  .ad = {20, 48},
                  .bd = {35, 48},
                  .binit = true,
                  .tb = true,
                  .nbias = 35},
            1);
    mm_case("gemm alpha beta [1,N]",
            (mmp){.op = PR_OP_Gemm,
                  .ra = 2,
                  .rb = 2,
                  .ad = {20, 48},
                  .bd = {48, 35},
                  .binit = true,
                  .alpha = 0.5f,
                  .beta = 2.0f,
                  .nbias = 35,
                  .biasrank = 2},
            2);
    mm_case("gemm transA scalar C",
            (mmp){.op = PR_OP_Gemm,
                  .ra = 2,
                  .rb = 2,
                  .ad = {33, 19},
                  .bd = {33, 21},
                  .binit = true,
                  .ta = true,
                  .nbias = 1},
            2);
    mm_case("fused bias gelu +Z relu",
            (mmp){.op = PR_OP_FusedMatMul,
                  .ra = 3,
                  .rb = 2,
                  .ad = {2, 13, 64},
                  .bd = {64, 40},
                  .binit = true,
                  .nbias = 40,
                  .act = PR_ACT_GELU,
                  .act2 = PR_ACT_RELU,
                  .ry = 3,
                  .yd = {2, 13, 40}},
            2);
    mm_case("fused alpha transB +Z",
            (mmp){.op = PR_OP_FusedMatMul,
                  .ra = 2,
                  .rb = 2,
                  .ad = {30, 64},
                  .bd = {33, 64},
                  .binit = true,
                  .tb = true,
                  .alpha = 0.25f,
                  .ry = 2,
                  .yd = {30, 33}},
            1);
    mm_case("fused K=4608 bias +Z",
            (mmp){.op = PR_OP_FusedMatMul,
                  .ra = 2,
                  .rb = 2,
                  .ad = {9, 4608},
                  .bd = {4608, 33},
                  .binit = true,
                  .nbias = 33,
                  .ry = 2,
                  .yd = {9, 33}},
            2);
    for (int a = 1; a < PR_ACT_COUNT; a++) {
        char label[64];
        snprintf(label, sizeof label, "fused act %s", pr_act_names[a]);
        mm_case(label,
                (mmp){.op = PR_OP_FusedMatMul,
                      .ra = 2,
                      .rb = 2,
                      .ad = {7, 32},
                      .bd = {32, 40},
                      .binit = true,
                      .nbias = 40,
                      .act = a},
                1 + a % 2);
    }
    /* activation x activation */
    mm_case("bmm 4d",
            (mmp){.op = PR_OP_MatMul, .ra = 4, .rb = 4, .ad = {2, 3, 7, 16}, .bd = {2, 3, 16, 9}},
            2);
    mm_case("bmm broadcast B 3d",
            (mmp){.op = PR_OP_MatMul, .ra = 4, .rb = 3, .ad = {2, 3, 7, 16}, .bd = {3, 16, 9}}, 1);
    mm_case("bmm broadcast A",
            (mmp){.op = PR_OP_MatMul, .ra = 3, .rb = 4, .ad = {1, 5, 24}, .bd = {2, 3, 24, 40}}, 2);
    mm_case("bmm B 2d act",
            (mmp){.op = PR_OP_MatMul, .ra = 3, .rb = 2, .ad = {4, 7, 16}, .bd = {16, 45}}, 2);
    mm_case("bmm attention",
            (mmp){.op = PR_OP_MatMul, .ra = 4, .rb = 4, .ad = {1, 4, 50, 64}, .bd = {1, 4, 64, 50}},
            2);
    mm_case("bmm fused transB +Z",
            (mmp){.op = PR_OP_FusedMatMul,
                  .ra = 2,
                  .rb = 2,
                  .ad = {12, 20},
                  .bd = {30, 20},
                  .tb = true,
                  .nbias = 30,
                  .ry = 2,
                  .yd = {12, 30},
                  .act = PR_ACT_TANH},
            1);
    mm_case("bmm K=4608",
            (mmp){.op = PR_OP_MatMul, .ra = 3, .rb = 3, .ad = {2, 5, 4608}, .bd = {2, 4608, 17}},
            2);
}

/* Which conv kernel a shape gets (describe()). */
static void describe_case(int64_t C, int64_t M, int64_t k, int64_t stride, int64_t group,
                          const char *want) {
    tnode t;
    n_init(&t, PR_OP_Conv, "Conv", 17);
    if (stride > 1) n_ints(&t, "strides", (int64_t[]){stride, stride}, 2);
    if (group > 1) n_int(&t, "group", group);
    cc_input in[2] = {{"x", 4, {1, C, 8, 8}, .nhwc = true},
                      {"w", 4, {M, C / group, k, k}, .init = true}};
    float *w = calloc((size_t)(M * C / group * k * k), sizeof(float));
    float *data[2] = {NULL, w};
    pr_dtype dt[2] = {PRECIS_FLOAT16, PRECIS_FLOAT32};
    pr_graph *g = cc_graph(&t, 2, in, dt, data, 1, (bool[]){true}, true);
    pr_err e = {0};
    void *state = NULL;
    pr_cpu_cfg cfg = {.num_threads = 1};
    CHECK(CONV->supports(g, &g->nodes[0]));
    CHECK(CONV->prepare(g, &g->nodes[0], &cfg, &state, &e) == PRECIS_OK);
    if (state) {
        const char *d = CONV->describe(state);
        CHECK(strstr(d, want) != NULL);
        if (!strstr(d, want))
            fprintf(stderr, "conv %lld->%lld k%lld: %s, expected %s\n", (long long)C, (long long)M,
                    (long long)k, d, want);
        CONV->destroy(state);
    }
    pr_graph_destroy(g);
    free(w);
}

static void describe_cases(void) {
    const bool amx = pr_f16_isa_best() == PR_F16_ISA_AMX;
    describe_case(64, 64, 3, 1, 1, amx ? ":direct:" : ":im2col:");
    describe_case(64, 64, 1, 2, 1, amx ? ":direct:" : ":1x1:");
    describe_case(64, 64, 1, 1, 1, ":1x1:");
    describe_case(3, 16, 3, 2, 1, ":im2col:"); /* 3 channels: no padding to 32 */
    describe_case(64, 64, 3, 1, 2, ":im2col:");
    describe_case(64, 64, 3, 1, 64, ":dw:");
    describe_case(32, 64, 3, 1, 32, ":im2col:"); /* channel multiplier 2 */
}

/* Declines: what must stay on other impls. */
static void decline_cases(void) {
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    int ni = pr_graph_add_node(g, 2, 1, 0, &e);
    int tx = pr_graph_get_tensor(g, "x", &e), tw = pr_graph_get_tensor(g, "w", &e),
        ty = pr_graph_get_tensor(g, "y", &e);
    pr_node *n = &g->nodes[ni];
    n->op = PR_OP_Conv;
    n->op_type = "Conv";
    n->name = "c";
    n->domain = "";
    n->inputs[0] = tx;
    n->inputs[1] = tw;
    n->outputs[0] = ty;
    static float wdata[8 * 4 * 3 * 3];
    pr_tensor *x = &g->tensors[tx], *w = &g->tensors[tw], *y = &g->tensors[ty];
    x->dtype = y->dtype = PRECIS_FLOAT16;
    x->rank = y->rank = w->rank = 4;
    int64_t xd[4] = {1, 4, 8, 8}, wd[4] = {8, 4, 3, 3};
    memcpy(x->dims, xd, sizeof xd);
    memcpy(w->dims, wd, sizeof wd);
    w->dtype = PRECIS_FLOAT32;
    w->flags = PR_T_INIT;
    w->data = wdata;
    w->nbytes = sizeof wdata;
    x->layout = y->layout = PR_LAYOUT_NHWC;
    CHECK(CONV->supports(g, n));
    x->layout = y->layout = PR_LAYOUT_PLAIN; /* NCHW: declined, but NHWC is possible */
    CHECK(!CONV->supports(g, n));
    CHECK(CONV->nhwc_ok(g, n));
    x->layout = y->layout = PR_LAYOUT_NHWC;
    x->dtype = y->dtype = PRECIS_FLOAT32; /* float32 activations: not ours */
    CHECK(!CONV->supports(g, n));
    CHECK(!CONV->nhwc_ok(g, n));
    x->dtype = y->dtype = PRECIS_FLOAT16;
    w->flags = 0; /* weights not constant */
    CHECK(!CONV->supports(g, n));
    w->flags = PR_T_INIT;
    /* MatMul on float32 / with a 1-D B */
    n->op = PR_OP_MatMul;
    n->op_type = "MatMul";
    x->rank = y->rank = w->rank = 2;
    x->layout = y->layout = PR_LAYOUT_PLAIN;
    x->dims[0] = 3, x->dims[1] = 8, w->dims[0] = 8, w->dims[1] = 36;
    y->dims[0] = 3, y->dims[1] = 36;
    CHECK(MM->supports(g, n));
    CHECK(MM->inplace_input == NULL || MM->inplace_input(g, n) == -1);
    x->dtype = y->dtype = PRECIS_FLOAT32;
    CHECK(!MM->supports(g, n));
    x->dtype = y->dtype = PRECIS_FLOAT16;
    w->rank = 1;
    CHECK(!MM->supports(g, n));
    pr_graph_destroy(g);
}

/* ------------------------------------------------------------ bench */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_reps = 9;
static void bench_gemm(int64_t M, int64_t N, int64_t K, int nt) {
    pr_f16_isa isa = pr_f16_isa_best();
    uint16_t *a = malloc((size_t)(M * K) * 2), *c = malloc((size_t)(M * N) * 2);
    float *b = malloc((size_t)(K * N) * 4);
    float *bp = aligned_alloc(64, pr_f16_bpack_floats(isa, K, N) * 4);
    for (int64_t i = 0; i < M * K; i++) a[i] = pr_f32_to_f16(cc_rand(-1, 1));
    for (int64_t i = 0; i < K * N; i++) b[i] = cc_rand(-1, 1);
    pr_f16_pack_b_f32(isa, b, N, 1, K, N, bp);
    pr_f16_epi epi = {1.0f, NULL, 0.0f, {0}, {0}};
    pr_f16_gemm_job j = {
        .M = M, .N = N, .K = K, .a = a, .lda = K, .b = bp, .c = c, .ldc = N, .epi = &epi};
    void *scr = aligned_alloc(64, (pr_f16_gemm_scratch_size(isa, 1, nt) + 63) / 64 * 64);
    double best = 1e30;
    for (int r = 0; r < bench_reps; r++) {
        double t0 = now_s();
        pr_f16_gemm_run(isa, &j, 1, nt, scr);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    printf("gemm %lldx%lldx%lld %s %d thread%s: %.2f ms, %.1f GFLOP/s\n", (long long)M,
           (long long)N, (long long)K, pr_f16_isa_name(isa), nt, nt > 1 ? "s" : "", best * 1e3,
           2.0 * (double)M * (double)N * (double)K / best * 1e-9);
    free(a);
    free(c);
    free(b);
    free(bp);
    free(scr);
}

static void bench_conv(int64_t C, int64_t Mo, int64_t HW, int64_t k, int64_t group, int nt) {
    tnode t;
    n_init(&t, PR_OP_Conv, "Conv", 17);
    int64_t p = k / 2;
    n_ints(&t, "pads", (int64_t[]){p, p, p, p}, 4);
    if (group > 1) n_int(&t, "group", group);
    cc_input in[3] = {{"x", 4, {1, C, HW, HW}, .nhwc = true},
                      {"w", 4, {Mo, C / group, k, k}, .init = true},
                      {"b", 1, {Mo}, .init = true}};
    float *data[3];
    pr_dtype dt[3] = {PRECIS_FLOAT16, PRECIS_FLOAT32, PRECIS_FLOAT32};
    for (int i = 0; i < 3; i++) {
        int64_t ne = pr_numel(in[i].rank, in[i].dims);
        data[i] = malloc((size_t)ne * 4);
        for (int64_t q = 0; q < ne; q++) data[i][q] = cc_rand(-1, 1);
    }
    pr_graph *g = cc_graph(&t, 3, in, dt, data, 1, (bool[]){true}, true);
    pr_err e = {0};
    void *state = NULL;
    pr_cpu_cfg cfg = {.num_threads = nt};
    if (!CONV->supports(g, &g->nodes[0]) || CONV->prepare(g, &g->nodes[0], &cfg, &state, &e)) {
        printf("conv bench: not supported / prepare failed: %s\n", e.msg);
        return;
    }
    pr_buf X, Y;
    pr_buf_alloc(&X, PRECIS_FLOAT16, 4, in[0].dims, "x", &e);
    pr_buf_alloc(&Y, PRECIS_FLOAT16, 4, (int64_t[]){1, Mo, HW, HW}, "y", &e);
    pr_ref_from_f32(data[0], X.numel, PRECIS_FLOAT16, X.data);
    const pr_buf *ins[3] = {&X, NULL, NULL};
    pr_buf *outs[1] = {&Y};
    pr_cpu_exec x = {nt, NULL, NULL, 0, NULL, 0};
    pr_kernel kk = {g, &g->nodes[0], 1, ins, 1, outs, &e, nt};
    double best = 1e30;
    for (int r = 0; r < bench_reps; r++) {
        double t0 = now_s();
        CONV->run(state, &kk, &x);
        double d = now_s() - t0;
        if (d < best) best = d;
    }
    double fl = 2.0 * (double)(HW * HW) * (double)Mo * (double)(C / group * k * k);
    printf("conv %lldx%lld %lld->%lld %lldx%lld%s (%s) %d thread%s: %.3f ms, %.1f GFLOP/s\n",
           (long long)k, (long long)k, (long long)C, (long long)Mo, (long long)HW, (long long)HW,
           group > 1 ? " depthwise" : "", CONV->describe(state), nt, nt > 1 ? "s" : "", best * 1e3,
           fl / best * 1e-9);
    free(x.scratch);
    CONV->destroy(state);
    pr_buf_free(&X);
    pr_buf_free(&Y);
    pr_graph_destroy(g);
    for (int i = 0; i < 3; i++) free(data[i]);
}

/* Activation x activation batched matmul (attention): A [b,h,M,K] x B [b,h,K,N]. */
static void bench_bmm(int64_t heads, int64_t M, int64_t K, int64_t N, int nt) {
    tnode t;
    n_init(&t, PR_OP_MatMul, "MatMul", 17);
    cc_input in[2] = {{.name = "a", .rank = 4, .dims = {1, heads, M, K}},
                      {.name = "b", .rank = 4, .dims = {1, heads, K, N}}};
    float *data[2] = {NULL, NULL};
    pr_dtype dt[2] = {PRECIS_FLOAT16, PRECIS_FLOAT16};
    pr_graph *g = cc_graph(&t, 2, in, dt, data, 1, NULL, true);
    pr_err e = {0};
    void *state = NULL;
    pr_cpu_cfg cfg = {.num_threads = nt};
    if (!MM->supports(g, &g->nodes[0]) || MM->prepare(g, &g->nodes[0], &cfg, &state, &e)) {
        printf("bmm bench: not supported / prepare failed: %s\n", e.msg);
        pr_graph_destroy(g);
        return;
    }
    pr_buf A, B, Y;
    pr_buf_alloc(&A, PRECIS_FLOAT16, 4, in[0].dims, "a", &e);
    pr_buf_alloc(&B, PRECIS_FLOAT16, 4, in[1].dims, "b", &e);
    pr_buf_alloc(&Y, PRECIS_FLOAT16, 4, (int64_t[]){1, heads, M, N}, "y", &e);
    uint16_t *ad = A.data, *bd = B.data;
    for (int64_t q = 0; q < A.numel; q++) ad[q] = pr_f32_to_f16(cc_rand(-1, 1));
    for (int64_t q = 0; q < B.numel; q++) bd[q] = pr_f32_to_f16(cc_rand(-1, 1));
    const pr_buf *ins[2] = {&A, &B};
    pr_buf *outs[1] = {&Y};
    pr_cpu_exec x = {nt, NULL, NULL, 0, NULL, 0};
    pr_kernel kk = {g, &g->nodes[0], 2, ins, 1, outs, &e, nt};
    double best = 1e30;
    for (int r = 0; r < bench_reps; r++) {
        double t0 = now_s();
        MM->run(state, &kk, &x);
        double d = now_s() - t0;
        if (d < best) best = d;
    }
    double fl = 2.0 * (double)(heads * M) * (double)N * (double)K;
    printf("bmm [1,%lld,%lld,%lld]x[1,%lld,%lld,%lld] (%s) %d thread%s: %.3f ms, %.1f GFLOP/s\n",
           (long long)heads, (long long)M, (long long)K, (long long)heads, (long long)K,
           (long long)N, MM->describe(state), nt, nt > 1 ? "s" : "", best * 1e3, fl / best * 1e-9);
    free(x.scratch);
    MM->destroy(state);
    pr_buf_free(&A);
    pr_buf_free(&B);
    pr_buf_free(&Y);
    pr_graph_destroy(g);
}

/* The rejected alternative: accumulating in f16 with AVX512-FP16
 * (vfmadd231ph, 32 lanes), K blocks of kb summed in float32. Reports the
 * speed of its inner kernel and its error against float64 sums. */
#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 12
#include <immintrin.h>
#define TFP16 __attribute__((target("avx512fp16,avx512bw,avx512vl,avx512f")))
/* C[8 x 64] (float) = A[8 x K] (f16, row stride K) x B (f16, K x 64 panel) */
TFP16 static void fp16acc_kernel(const uint16_t *A, const uint16_t *B, int64_t K, int64_t kb,
                                 float *C) {
    __m512 f[8][4];
    for (int i = 0; i < 8; i++)
        for (int q = 0; q < 4; q++) f[i][q] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < K; k0 += kb) {
        __m512h h[8][2];
        for (int i = 0; i < 8; i++) h[i][0] = h[i][1] = _mm512_setzero_ph();
        int64_t ke = k0 + kb < K ? k0 + kb : K;
        for (int64_t k = k0; k < ke; k++) {
            __m512h b0 = _mm512_castsi512_ph(_mm512_loadu_si512(B + k * 64));
            __m512h b1 = _mm512_castsi512_ph(_mm512_loadu_si512(B + k * 64 + 32));
            for (int i = 0; i < 8; i++) {
                __m512h av = _mm512_castsi512_ph(_mm512_set1_epi16((short)A[i * K + k]));
                h[i][0] = _mm512_fmadd_ph(av, b0, h[i][0]);
                h[i][1] = _mm512_fmadd_ph(av, b1, h[i][1]);
            }
        }
        for (int i = 0; i < 8; i++)
            for (int q = 0; q < 2; q++) {
                __m512i v = _mm512_castph_si512(h[i][q]);
                f[i][2 * q] =
                    _mm512_add_ps(f[i][2 * q], _mm512_cvtph_ps(_mm512_castsi512_si256(v)));
                f[i][2 * q + 1] = _mm512_add_ps(f[i][2 * q + 1],
                                                _mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1)));
            }
    }
    for (int i = 0; i < 8; i++)
        for (int q = 0; q < 2; q++) {
            /* lanes of h[.][q] are columns q*32 .. q*32+31 */
            _mm512_storeu_ps(C + i * 64 + q * 32, f[i][2 * q]);
            _mm512_storeu_ps(C + i * 64 + q * 32 + 16, f[i][2 * q + 1]);
        }
}

static void bench_fp16acc(int64_t K, int64_t kb) {
    const pr_cpu_features *f = pr_cpu_features_get();
    if (!f->avx512_fp16) {
        printf("f16-accumulation experiment: no AVX512-FP16\n");
        return;
    }
    uint16_t *A = malloc((size_t)(8 * K) * 2), *B = malloc((size_t)(K * 64) * 2);
    float C[8 * 64];
    for (int64_t i = 0; i < 8 * K; i++) A[i] = pr_f32_to_f16(cc_rand(-1, 1));
    for (int64_t i = 0; i < K * 64; i++) B[i] = pr_f32_to_f16(cc_rand(-1, 1));
    fp16acc_kernel(A, B, K, kb, C);
    cc_tolerance tol = cc_tol(PRECIS_FLOAT16);
    double maxerr = 0;
    int bad = 0;
    for (int i = 0; i < 8; i++)
        for (int n = 0; n < 64; n++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)pr_f16_to_f32(A[i * K + k]) * (double)pr_f16_to_f32(B[k * 64 + n]);
            float ref = (float)s, got = pr_f16_to_f32(pr_f32_to_f16(C[i * 64 + n]));
            double d = fabs((double)got - s);
            if (d > maxerr) maxerr = d;
            if (!(fabsf(got - ref) <= tol.abs + tol.rel * fabsf(ref))) bad++;
        }
    int reps = (int)(2000000000 / (8 * 64 * 2 * K)) + 1;
    double t0 = now_s();
    for (int r = 0; r < reps; r++) fp16acc_kernel(A, B, K, kb, C);
    double dt = now_s() - t0;
    printf("f16-accumulation kernel K=%lld block %lld: %.1f GFLOP/s (1 thread, kernel only), "
           "max |err| %.4f, %d of 512 outside the f16 tolerance\n",
           (long long)K, (long long)kb, 2.0 * 8 * 64 * (double)K * reps / dt * 1e-9, maxerr, bad);
    free(A);
    free(B);
}
#else
static void bench_fp16acc(int64_t K, int64_t kb) { (void)K, (void)kb; }
#endif

/* Accuracy of the GEMM against a float64 sum of the same operands (A
 * rounded to f16, B float32): the largest absolute error, the largest
 * share of cpu_check's f16 tolerance used, the largest error beyond the
 * final f16 rounding relative to sum |a b|, and how many results are not
 * the correctly rounded value. */
static void bench_accuracy(int64_t M, int64_t N, int64_t K) {
    pr_f16_isa isa = pr_f16_isa_best();
    uint16_t *a = malloc((size_t)(M * K) * 2), *c = malloc((size_t)(M * N) * 2);
    float *b = malloc((size_t)(K * N) * 4);
    float *bp = aligned_alloc(64, (pr_f16_bpack_floats(isa, K, N) * 4 + 63) / 64 * 64);
    for (int64_t i = 0; i < M * K; i++) a[i] = pr_f32_to_f16(cc_rand(-1, 1));
    for (int64_t i = 0; i < K * N; i++) b[i] = cc_rand(-1, 1);
    pr_f16_pack_b_f32(isa, b, N, 1, K, N, bp);
    pr_f16_epi epi = {1.0f, NULL, 0.0f, {0}, {0}};
    pr_f16_gemm_job j = {
        .M = M, .N = N, .K = K, .a = a, .lda = K, .b = bp, .c = c, .ldc = N, .epi = &epi};
    void *scr = aligned_alloc(64, (pr_f16_gemm_scratch_size(isa, 1, 1) + 63) / 64 * 64);
    pr_f16_gemm_run(isa, &j, 1, 1, scr);
    const cc_tolerance tol = cc_tol(PRECIS_FLOAT16);
    double max_abs = 0, max_tol = 0, max_acc = 0;
    int64_t off = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = (double)pr_f16_to_f32(a[m * K + k]) * (double)b[k * N + n];
                sum += p;
                mag += fabs(p);
            }
            const double got = pr_f16_to_f32(c[m * N + n]);
            const double want = pr_f16_to_f32(pr_f32_to_f16((float)sum));
            const double err = fabs(got - sum);
            if (err > max_abs) max_abs = err;
            if (err / (tol.abs + tol.rel * fabs(sum)) > max_tol)
                max_tol = err / (tol.abs + tol.rel * fabs(sum));
            /* beyond the rounding of the exact sum to f16 */
            const double acc = fabs(got - want) > 0 ? fabs(got - sum) - fabs(want - sum) : 0;
            if (acc / mag > max_acc) max_acc = acc / mag;
            off += got != want;
        }
    printf("accuracy %s %lldx%lldx%lld: max |err| %.2e (%.2f of the f16 tolerance), "
           "accumulation error <= %.1e * sum|ab|, %lld of %lld not correctly rounded\n",
           pr_f16_isa_name(isa), (long long)M, (long long)N, (long long)K, max_abs, max_tol,
           max_acc, (long long)off, (long long)(M * N));
    free(a);
    free(c);
    free(b);
    free(bp);
    free(scr);
}

static int bench(void) {
    printf("isa: %s\n", pr_f16_isa_name(pr_f16_isa_best()));
    bench_reps = 30;
    for (int nt = 1; nt <= 2; nt++) bench_gemm(1024, 1024, 1024, nt);
    for (int nt = 1; nt <= 2; nt++) bench_conv(64, 64, 56, 3, 1, nt);
    for (int nt = 1; nt <= 2; nt++) bench_conv(256, 64, 56, 1, 1, nt);
    for (int nt = 1; nt <= 2; nt++) bench_conv(128, 128, 56, 3, 128, nt);
    for (int nt = 1; nt <= 2; nt++) bench_bmm(12, 384, 64, 384, nt);
    for (int nt = 1; nt <= 2; nt++) bench_bmm(12, 384, 384, 64, nt);
    bench_accuracy(64, 64, 576);
    bench_accuracy(64, 64, 4608);
    bench_fp16acc(576, 576);
    bench_fp16acc(576, 32);
    bench_fp16acc(4608, 256);
    bench_fp16acc(4608, 32);
    return 0;
}

/* ------------------------------------------------------------ main */

static int run_child(const char *mode) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        char *argv[] = {(char *)"test_cpu_f16", (char *)mode, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "avx512") || !strcmp(mode, "avx2") || !strcmp(mode, "scalar"))
        setenv("PRECIS_CPU_ISA", mode, 1);
    if (!strcmp(mode, "bench")) return bench();
    if (!strcmp(mode, "benchbmm") && argc == 8) { /* heads M K N threads reps */
        bench_reps = atoi(argv[7]);
        bench_bmm(atol(argv[2]), atol(argv[3]), atol(argv[4]), atol(argv[5]), atoi(argv[6]));
        return 0;
    }
    if (!strcmp(mode, "benchconv") && argc == 9) { /* C M HW k group threads reps */
        bench_reps = atoi(argv[8]);
        bench_conv(atol(argv[2]), atol(argv[3]), atol(argv[4]), atol(argv[5]), atol(argv[6]),
                   atoi(argv[7]));
        return 0;
    }
    const char *isa = pr_f16_isa_name(pr_f16_isa_best());
    printf("f16 kernels: %s\n", isa);
    const bool full = !mode[0];
    /* a capped run uses at most the ISA it names (less on older CPUs) */
    if (mode[0])
        CHECK((int)pr_f16_isa_best() <= (!strcmp(mode, "avx512") ? PR_F16_ISA_AVX512
                                         : !strcmp(mode, "avx2") ? PR_F16_ISA_AVX2
                                                                 : PR_F16_ISA_SCALAR));
    decline_cases();
    describe_cases();
    conv_cases(full);
    mm_cases(full);
    printf("max |impl - ref|: conv %.3g (%s), matmul %.3g (%s)\n", worst[0], worst_case[0],
           worst[1], worst_case[1]);
    if (full) {
        fflush(stdout);
        if (pr_f16_isa_best() == PR_F16_ISA_AMX) CHECK(run_child("avx512") == 0);
        CHECK(run_child("avx2") == 0);
        CHECK(run_child("scalar") == 0);
    }
    char name[64];
    snprintf(name, sizeof name, "test_cpu_f16%s%s", mode[0] ? " " : "", mode);
    return check_report(name);
}
