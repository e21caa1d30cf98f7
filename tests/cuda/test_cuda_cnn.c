/* The CNN conv kernels of phase 10 against ref: our fp16/bf16 implicit-GEMM
 * conv (cu_hconv.cu) forced (PRECIS_CUDA_HCONV=1) with each tile
 * (PRECIS_CUDA_HCONV_TILE), NHWC: 1x1 convs (the expand / project convs of
 * MobileNet-style blocks: ReLU6, residual, no bias; C not a multiple of the
 * 32-element k step, M not a multiple of the tile), 3x3 with stride 2 and
 * asymmetric pads, dilation, and its direct form for C % 8 != 0 (a stem);
 * the small-k 1x1 tiles (k32, k32d, k32l: K 8 / 16 / 24 / 32, Nout 16..144);
 * then the timed choice. Exits 77 (ctest skip)
 * without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"

#include "backends/cuda/cuda_impls.h"

static const bool Y1[1] = {true};

typedef struct hc_case {
    int C, K, k, stride, dil, asym, bias, resid;
    const char *act, *act2;
} hc_case;

static const hc_case CASES[] = {
    {16, 96, 1, 1, 1, 0, 1, 0, "Clip", NULL},   /* expand 1x1 + ReLU6 */
    {144, 24, 1, 1, 1, 0, 1, 1, NULL, NULL},    /* project 1x1 + residual */
    {40, 136, 1, 1, 1, 0, 0, 1, NULL, "Relu"},  /* no bias, residual then ReLU */
    {24, 32, 3, 2, 1, 1, 1, 0, "HardSwish", NULL},
    {8, 16, 3, 1, 2, 0, 1, 0, "Clip", NULL},    /* dilation 2 */
    {3, 32, 3, 2, 1, 1, 1, 0, "Clip", NULL},    /* a stem: the direct form (C % 8 != 0) */
    {4, 16, 1, 1, 1, 0, 0, 1, "Relu", NULL},    /* direct, no bias, residual */
    {24, 144, 1, 1, 1, 0, 1, 0, "Clip", NULL},  /* k32: K 24 (padded to 32), Nout 144 */
    {32, 16, 1, 1, 1, 0, 0, 1, NULL, "Relu"},   /* k32: K 32, Nout 16, residual then ReLU */
    {8, 40, 1, 1, 1, 0, 1, 1, "Relu", NULL},    /* k32: K 8, Nout 40 (of 48 rows), residual */
    {16, 64, 1, 1, 1, 0, 1, 0, NULL, NULL},     /* k32l: no act */
    {24, 40, 1, 1, 1, 0, 0, 0, "HardSwish", NULL}, /* k32l: no bias, the general act path */
    {16, 96, 1, 1, 1, 0, 1, 0, "Relu", NULL},   /* k32l: ReLU */
};

static void run_case(const hc_case *c, const char *mode) {
    const int64_t nb = 8, H = 15, W = 13;
    int64_t pads[4] = {0, 0, 0, 0};
    if (c->k > 1) {
        int64_t p = c->dil * (c->k / 2);
        for (int i = 0; i < 4; i++) pads[i] = p;
        if (c->asym) pads[0] = pads[1] = 0;
    }
    int64_t ek = c->dil * (c->k - 1) + 1;
    int64_t oh = (H + pads[0] + pads[2] - ek) / c->stride + 1;
    int64_t ow = (W + pads[1] + pads[3] - ek) / c->stride + 1;
    tnode t;
    n_init(&t, PR_OP_FusedConv, "FusedConv", 1);
    t.node.domain = PR_FUSED_DOMAIN;
    n_ints(&t, "pads", pads, 4);
    n_ints(&t, "strides", (int64_t[]){c->stride, c->stride}, 2);
    n_ints(&t, "dilations", (int64_t[]){c->dil, c->dil}, 2);
    n_ints(&t, "kernel_shape", (int64_t[]){c->k, c->k}, 2);
    if (c->act) n_str(&t, "act", c->act);
    if (c->act && !strcmp(c->act, "Clip")) { /* ReLU6 */
        n_float(&t, "act_alpha", 0.0f);
        n_float(&t, "act_beta", 6.0f);
    }
    if (c->act2) n_str(&t, "act2", c->act2);
    /* weights and biases multiples of 1/64: exact in fp16 and bf16 (the conv packs its
     * weights to the activation type, ref keeps float32: over k = 144 that rounding alone
     * passed the tolerance on an H100) */
    static float wx[8192], bx[256];
    for (int i = 0; i < 8192; i++) wx[i] = roundf(cc_rand(-1, 1) * 64) / 64;
    for (int i = 0; i < 256; i++) bx[i] = roundf(cc_rand(-4, 4) * 64) / 64;
    cc_input a[4] = {{.name = "x", .rank = 4, .dims = {nb, c->C, H, W}, .nhwc = true, .lo = -2, .hi = 2},
                     {.name = "w", .rank = 4, .dims = {c->K, c->C, c->k, c->k}, .init = true, .data = wx},
                     {.name = "b", .rank = 1, .dims = {c->K}, .init = true, .data = bx},
                     {.name = "z", .rank = 4, .dims = {nb, c->K, oh, ow}, .nhwc = true}};
    if (!c->bias) a[2].name = NULL;
    for (int di = 0; di < 2; di++) {
        pr_dtype D = di ? PRECIS_BFLOAT16 : PRECIS_FLOAT16;
        char label[128];
        snprintf(label, sizeof label, "hconv %s C%d K%d %dx%d s%d d%d%s%s%s %s", mode, c->C, c->K,
                 c->k, c->k, c->stride, c->dil, c->asym ? " asym" : "", c->bias ? " bias" : "",
                 c->resid ? " residual" : "", di ? "bf16" : "fp16");
        cu_run_lay(&t, c->resid ? 4 : 3, a, 1, Y1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
    }
}

/* Our depthwise conv's forms (NHWC fp16/bf16) forced by PRECIS_CUDA_DW_PX:
 * four output pixels a thread (4) and the shared-memory tiles (16..21):
 * 3x3 / 5x5, strides 1 and 2, asymmetric pads, widths that leave a partial
 * group of four / a partial tile, C % 16 == 8 (half a channel group of the
 * tiles), batch 32 (several images a block), ReLU6, residual + act2, no
 * bias. */
static void test_dw_px(const char *px) {
    setenv("PRECIS_CUDA_DWCONV", "1", 1);
    setenv("PRECIS_CUDA_DW_PX", px, 1);
    static const int chans[3] = {16, 24, 144};
    for (int ci = 0; ci < 3; ci++)
        for (int v = 0; v < 4; v++) {
            int C = chans[ci], k = v & 1 ? 5 : 3, st = v >= 2 ? 2 : 1;
            /* C 144: batch 32, so that the tiles' blocks take several images each */
            int64_t H = 15, W = 13, p = k / 2, pads[4] = {p, p, p, p}, nb = C == 144 ? 32 : 8;
            if (st == 2) { /* TF "same" for stride 2: nothing at the top / left */
                pads[0] = pads[1] = 0;
                pads[2] = pads[3] = k - 1;
            }
            int64_t oh = (H + pads[0] + pads[2] - k) / st + 1, ow = (W + pads[1] + pads[3] - k) / st + 1;
            tnode t;
            n_init(&t, PR_OP_FusedConv, "FusedConv", 1);
            t.node.domain = PR_FUSED_DOMAIN;
            n_ints(&t, "pads", pads, 4);
            n_ints(&t, "strides", (int64_t[]){st, st}, 2);
            n_ints(&t, "kernel_shape", (int64_t[]){k, k}, 2);
            n_int(&t, "group", C);
            n_str(&t, "act", "Clip");
            n_float(&t, "act_alpha", 0.0f);
            n_float(&t, "act_beta", 6.0f);
            cc_input a[4] = {{.name = "x", .rank = 4, .dims = {nb, C, H, W}, .nhwc = true, .lo = -3, .hi = 3},
                             {.name = "w", .rank = 4, .dims = {C, 1, k, k}, .init = true},
                             {.name = "b", .rank = 1, .dims = {C}, .init = true},
                             {.name = "z", .rank = 4, .dims = {nb, C, oh, ow}, .nhwc = true}};
            int nin = 3;
            if (v == 1) { /* residual then act2, no bias */
                n_str(&t, "act2", "Relu");
                a[2].name = NULL;
                nin = 4;
            }
            for (int di = 0; di < 2; di++) {
                pr_dtype D = di ? PRECIS_BFLOAT16 : PRECIS_FLOAT16;
                char label[128];
                snprintf(label, sizeof label, "dwconv px=%s C%d %dx%d s%d%s %s", px, C, k, k, st,
                         v == 1 ? " residual+relu" : " relu6", di ? "bf16" : "fp16");
                cu_run_lay(&t, nin, a, 1, Y1, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
            }
        }
    unsetenv("PRECIS_CUDA_DW_PX");
    unsetenv("PRECIS_CUDA_DWCONV");
}

/* Moves around the stem and the head: the plan's float32 input cast and
 * reordered to NHWC in one pass (a Cast writing NHWC: pass_layout.c folds
 * the Reorder into it), and a Reorder of a pooled [N, C, 1, 1] (no byte moves). */
static void test_moves(void) {
    static float xf[8 * 3 * 9 * 7];
    for (size_t i = 0; i < sizeof xf / sizeof xf[0]; i++) xf[i] = cc_rand(-3, 3);
    for (int di = 0; di < 2; di++) {
        pr_dtype D = di ? PRECIS_BFLOAT16 : PRECIS_FLOAT16;
        char label[128];
        tnode t;
        n_init(&t, PR_OP_Cast, "Cast", 13);
        n_int(&t, "to", D);
        cc_input c[1] = {{.name = "x", .rank = 4, .dims = {8, 3, 9, 7}, .dtype = PRECIS_FLOAT32, .raw = xf}};
        snprintf(label, sizeof label, "cast float32 plain -> %s nhwc", di ? "bf16" : "fp16");
        cu_run_lay(&t, 1, c, 1, Y1, D, &pr_cuda_impl_eltwise, (cc_tolerance){0, 0}, label);
        n_init(&t, PR_OP_Reorder, "Reorder", 1);
        t.node.domain = PR_FUSED_DOMAIN;
        n_str(&t, "to", "plain");
        cc_input r[1] = {{.name = "x", .rank = 4, .dims = {8, 40, 1, 1}, .nhwc = true}};
        snprintf(label, sizeof label, "reorder nhwc -> plain [8, 40, 1, 1] %s", di ? "bf16" : "fp16");
        cu_run_lay(&t, 1, r, 1, NULL, D, &pr_cuda_impl_move, (cc_tolerance){0, 0}, label);
    }
}

int main(void) {
    int rc = cu_setup();
    if (rc) return rc;
    printf("hconv\n");
    setenv("PRECIS_CUDA_HCONV", "1", 1);
    static const char *const tiles[] = {"0", "1", "2", "3", "4", "5", "6", "7"};
    static const char *const names[] = {"128x128", "128x64", "64x64", "128x32", "32x32k4", "k32",
                                        "k32d", "k32l"};
    for (int ti = 0; ti < 8; ti++) { /* k32 takes the 1x1 K <= 32 cases; cuDNN the rest */
        setenv("PRECIS_CUDA_HCONV_TILE", tiles[ti], 1);
        for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) run_case(&CASES[i], names[ti]);
    }
    unsetenv("PRECIS_CUDA_HCONV_TILE");
    unsetenv("PRECIS_CUDA_HCONV");
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) run_case(&CASES[i], "timed");
    printf("moves\n");
    test_moves();
    static const char *const forms[] = {"4", "16", "17", "18", "19", "20", "21"};
    for (int i = 0; i < 7; i++) {
        printf("depthwise, form %s\n", forms[i]);
        test_dw_px(forms[i]);
    }
    cu_teardown();
    return check_report("test_cuda_cnn");
}
