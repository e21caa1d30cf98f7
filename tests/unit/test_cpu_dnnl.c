/* The oneDNN impls of the CPU backend (dnnl.conv, dnnl.deconv, dnnl.matmul)
 * against the ref backend (cpu_check.h): convolutions of many geometries
 * (kernels 1/3/5/7, strides, pads, auto_pad, dilation, groups, depthwise,
 * batch 1 and 3, odd sizes), every fused activation, the residual, both
 * layouts, float32 and bfloat16, 1 and 2 threads; transposed convolutions;
 * MatMul/Gemm/FusedMatMul with constant and activation B; symbolic dims
 * (primitives made per concrete shape); the residual in place; one prepared
 * state run from two threads at once. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "cpu_check.h"

static const pr_dtype DTS[2] = {PRECIS_FLOAT32, PRECIS_BFLOAT16};
static bool have_bf16;

static void fused(tnode *t, pr_op op, const char *type) {
    n_init(t, op, type, 1);
    t->node.domain = PR_FUSED_DOMAIN;
}

/* Runs a case for every dtype (bf16 where oneDNN has it natively) and both
 * layouts of the rank-4 activations, threads alternating 1 and 2 unless
 * both_threads. For bf16 the float32 initializers get values exact in bf16
 * (the impl converts weights to bf16; ref would see the unrounded ones and
 * the difference grows with the reduction length, beyond cc_tol). */
static int case_no;
static int64_t red_len; /* reduction length of the cases run next (0: small) */
static void run_all(const tnode *t, int n_in, cc_input *in, bool layouts, bool both_threads,
                    const pr_cpu_impl *impl, const char *what) {
    for (int d = 0; d < 2; d++) {
        if (DTS[d] == PRECIS_BFLOAT16 && !have_bf16) continue;
        for (int l = 0; l < (layouts ? 2 : 1); l++) {
            for (int th = 1; th <= 2; th++) {
                if (!both_threads && th != 1 + (case_no + d + l) % 2) continue;
                for (int i = 0; i < n_in; i++)
                    if (in[i].name && !in[i].init && in[i].rank == 4) in[i].nhwc = l == 1;
                char label[160];
                snprintf(label, sizeof label, "%s [%s %s %dt]", what, pr_dtype_name(DTS[d]),
                         l ? "nhwc" : "plain", th);
                bool out_nhwc = l == 1;
                float *wdata[CC_MAX_IO] = {0};
                for (int i = 0; i < n_in; i++) {
                    if (!in[i].name || !in[i].init || DTS[d] != PRECIS_BFLOAT16) continue;
                    int64_t ne = pr_numel(in[i].rank, in[i].dims);
                    wdata[i] = malloc((size_t)(ne ? ne : 1) * sizeof(float));
                    for (int64_t q = 0; q < ne; q++)
                        wdata[i][q] = cc_round(cc_rand(-1, 1), PRECIS_BFLOAT16);
                    in[i].data = wdata[i];
                }
                /* float32: summation order differs; grows with sqrt of the length */
                cc_tolerance tol = cc_tol(DTS[d]);
                if (red_len > 64) tol.abs *= sqrtf((float)red_len / 64.0f);
                cc_run_tol(t, n_in, in, 1, &out_nhwc, DTS[d], impl, th, tol, label);
                for (int i = 0; i < n_in; i++) {
                    if (wdata[i]) in[i].data = NULL;
                    free(wdata[i]);
                }
            }
        }
    }
    case_no++;
}

/* ------------------------------------------------------------ conv */

typedef struct conv_case {
    const char *name;
    int64_t N, C, H, W, M, kh, kw, group, sh, sw, dh, dw, pads[4];
    const char *auto_pad;
    bool bias;
} conv_case;

static const conv_case conv_cases[] = {
    {"1x1", 1, 16, 9, 11, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL, true},
    {"3x3 pad 1", 1, 16, 13, 13, 16, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, true},
    {"3x3 stride 2 asym pads batch 3",
     3,
     8,
     15,
     17,
     12,
     3,
     3,
     1,
     2,
     2,
     1,
     1,
     {1, 0, 0, 1},
     NULL,
     true},
    {"5x5 pad 2", 1, 4, 12, 10, 8, 5, 5, 1, 1, 1, 1, 1, {2, 2, 2, 2}, NULL, false},
    {"7x7 stride 2 pad 3", 1, 3, 23, 23, 16, 7, 7, 1, 2, 2, 1, 1, {3, 3, 3, 3}, NULL, true},
    {"3x3 dilation 2", 1, 8, 14, 14, 8, 3, 3, 1, 1, 1, 2, 2, {2, 2, 2, 2}, NULL, true},
    {"3x3 dilation 2x3 stride 2x1",
     1,
     8,
     13,
     16,
     8,
     3,
     3,
     1,
     2,
     1,
     2,
     3,
     {1, 2, 2, 3},
     NULL,
     false},
    {"groups 4", 1, 16, 9, 9, 32, 3, 3, 4, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, true},
    {"depthwise", 1, 32, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, true},
    {"depthwise stride 2 batch 3",
     3,
     24,
     15,
     15,
     24,
     3,
     3,
     24,
     2,
     2,
     1,
     1,
     {1, 1, 1, 1},
     NULL,
     true},
    {"depthwise 5x5 multiplier 2",
     1,
     16,
     11,
     11,
     32,
     5,
     5,
     16,
     1,
     1,
     1,
     1,
     {2, 2, 2, 2},
     NULL,
     false},
    {"SAME_UPPER stride 2", 1, 8, 11, 12, 8, 3, 3, 1, 2, 2, 1, 1, {0, 0, 0, 0}, "SAME_UPPER", true},
    {"SAME_LOWER 4x4", 1, 4, 9, 9, 6, 4, 4, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "SAME_LOWER", true},
    {"VALID", 1, 8, 10, 7, 5, 3, 3, 1, 1, 1, 1, 1, {0, 0, 0, 0}, "VALID", true},
    {"1x1 stride 2", 1, 16, 10, 9, 8, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL, false},
    {"1x7", 1, 8, 6, 13, 8, 1, 7, 1, 1, 1, 1, 1, {0, 3, 0, 3}, NULL, true},
    {"3x3 64->64 28x28", 1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, true},
};

static void conv_node(tnode *t, const conv_case *c, bool is_fused) {
    if (is_fused)
        fused(t, PR_OP_FusedConv, "FusedConv");
    else
        n_init(t, PR_OP_Conv, "Conv", 11);
    n_ints(t, "kernel_shape", (int64_t[]){c->kh, c->kw}, 2);
    n_ints(t, "strides", (int64_t[]){c->sh, c->sw}, 2);
    n_ints(t, "dilations", (int64_t[]){c->dh, c->dw}, 2);
    if (c->group != 1) n_int(t, "group", c->group);
    if (c->auto_pad)
        n_str(t, "auto_pad", c->auto_pad);
    else
        n_ints(t, "pads", c->pads, 4);
}

static void conv_inputs(const conv_case *c, cc_input *in) {
    memset(in, 0, 4 * sizeof *in);
    in[0] = (cc_input){.name = "x", .rank = 4, .dims = {c->N, c->C, c->H, c->W}};
    in[1] = (cc_input){
        .name = "w", .rank = 4, .dims = {c->M, c->C / c->group, c->kh, c->kw}, .init = true};
    if (c->bias) in[2] = (cc_input){.name = "b", .rank = 1, .dims = {c->M}, .init = true};
}

static void test_conv(void) {
    tnode t;
    cc_input in[4];
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
        const conv_case *c = &conv_cases[i];
        conv_node(&t, c, false);
        conv_inputs(c, in);
        char what[96];
        snprintf(what, sizeof what, "conv %s", c->name);
        red_len = c->C / c->group * c->kh * c->kw;
        run_all(&t, c->bias ? 3 : 2, in, true, true, &pr_cpu_impl_dnnl_conv, what);
    }
    red_len = 0;
    /* mixed layouts: nhwc in, plain out and the reverse */
    const conv_case *c = &conv_cases[2];
    conv_node(&t, c, false);
    conv_inputs(c, in);
    in[0].nhwc = true;
    bool out_plain = false, out_nhwc = true;
    cc_run(&t, 3, in, 1, &out_plain, PRECIS_FLOAT32, &pr_cpu_impl_dnnl_conv, 1, "conv nhwc->plain");
    in[0].nhwc = false;
    cc_run(&t, 3, in, 1, &out_nhwc, PRECIS_FLOAT32, &pr_cpu_impl_dnnl_conv, 2, "conv plain->nhwc");
}

/* Every activation, alone and as act2 after the residual. */
static void test_fused_conv(void) {
    static const conv_case c = {"fused", 1, 16, 10, 9, 16,           3,    3,
                                1,       1, 1,  1,  1, {1, 1, 1, 1}, NULL, true};
    static const struct {
        const char *act;
        float alpha, beta;
    } acts[] = {
        {"Relu", 0, 0},
        {"LeakyRelu", 0.1f, 0},
        {"Clip", -0.5f, 0.7f},
        {"Sigmoid", 0, 0},
        {"HardSigmoid", 0.2f, 0.5f},
        {"HardSwish", 0, 0},
        {"Tanh", 0, 0},
        {"Gelu", 0, 0},
        {"GeluTanh", 0, 0},
        {"Swish", 0, 0},
    };
    tnode t;
    cc_input in[4];
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        for (int z = 0; z < 2; z++) {
            conv_node(&t, &c, true);
            n_str(&t, z ? "act2" : "act", acts[a].act);
            n_float(&t, z ? "act2_alpha" : "act_alpha", acts[a].alpha);
            n_float(&t, z ? "act2_beta" : "act_beta", acts[a].beta);
            conv_inputs(&c, in);
            int n_in = 3;
            if (z) {
                /* act before the residual too */
                n_str(&t, "act", "Relu");
                in[3] = (cc_input){.name = "z", .rank = 4, .dims = {c.N, c.M, c.H, c.W}};
                n_in = 4;
            }
            char what[96];
            snprintf(what, sizeof what, "fused conv %s%s", z ? "residual + act2 " : "act ",
                     acts[a].act);
            run_all(&t, n_in, in, true, false, &pr_cpu_impl_dnnl_conv, what);
        }
    }
    /* Swish / Sigmoid above ran after the primitive (outputs in cache: dnnl_conv.c); the
     * oneDNN post-op path too */
    setenv("PRECIS_CONV_LATE", "0", 1);
    for (int a = 0; a < 2; a++) {
        conv_node(&t, &c, true);
        n_str(&t, "act", a ? "Swish" : "Sigmoid");
        conv_inputs(&c, in);
        run_all(&t, 3, in, true, false, &pr_cpu_impl_dnnl_conv,
                a ? "fused conv act Swish (post-op)" : "fused conv act Sigmoid (post-op)");
    }
    unsetenv("PRECIS_CONV_LATE");
    /* fewer than 16 output channels: transcendental acts are applied after
     * the primitive over the whole buffer (float32; bf16/fp16 in post-ops) */
    static const conv_case few = {"fused 4 out", 2, 24, 7, 9, 4,           1,    1,
                                  1,             1, 1,  1, 1, {0, 0, 0, 0}, NULL, true};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        conv_node(&t, &few, true);
        n_str(&t, "act", acts[a].act);
        n_float(&t, "act_alpha", acts[a].alpha);
        n_float(&t, "act_beta", acts[a].beta);
        conv_inputs(&few, in);
        char what[96];
        snprintf(what, sizeof what, "fused conv 4 channels act %s", acts[a].act);
        run_all(&t, 3, in, true, false, &pr_cpu_impl_dnnl_conv, what);
    }
    /* residual without activations, no bias; residual with a depthwise conv */
    conv_node(&t, &c, true);
    conv_inputs(&c, in);
    in[2] = (cc_input){.name = NULL};
    in[3] = (cc_input){.name = "z", .rank = 4, .dims = {c.N, c.M, c.H, c.W}};
    run_all(&t, 4, in, true, false, &pr_cpu_impl_dnnl_conv, "fused conv residual only");
    const conv_case *dw = &conv_cases[9];
    conv_node(&t, dw, true);
    n_str(&t, "act", "Clip");
    n_float(&t, "act_alpha", 0.0f);
    n_float(&t, "act_beta", 6.0f);
    conv_inputs(dw, in);
    in[3] = (cc_input){.name = "z", .rank = 4, .dims = {dw->N, dw->M, 8, 8}};
    run_all(&t, 4, in, true, false, &pr_cpu_impl_dnnl_conv, "fused depthwise relu6 + residual");

    /* act2 without a residual applies to act's output (hardswish then the
     * scalar affine of PP-LCNetV3) */
    conv_node(&t, &c, true);
    n_str(&t, "act", "HardSwish");
    n_str(&t, "act2", "Affine");
    n_float(&t, "act2_alpha", 0.8f);
    n_float(&t, "act2_beta", -0.3f);
    conv_inputs(&c, in);
    run_all(&t, 3, in, true, false, &pr_cpu_impl_dnnl_conv, "fused conv hardswish + affine");

    /* not taken: unknown activations */
    float *w = calloc(16 * 16 * 9, sizeof(float));
    float *data[4] = {NULL, w, w, NULL};
    pr_dtype dt[4] = {PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32};
    conv_node(&t, &c, true);
    n_str(&t, "act", "Softplus");
    pr_graph *gg = cc_graph(&t, 3, in, dt, data, 1, NULL, true);
    CHECK(!pr_cpu_impl_dnnl_conv.supports(gg, &gg->nodes[0]));
    pr_graph_destroy(gg);
    free(w);
}

/* ------------------------------------------------------------ deconv */

static void test_deconv(void) {
    static const struct {
        const char *name;
        int64_t N, C, H, W, M, k, s, p, op, group, dil;
        bool bias;
        const char *auto_pad;
    } cs[] = {
        {"k2 s2 (PP-OCR det)", 1, 16, 10, 10, 8, 2, 2, 0, 0, 1, 1, true, NULL},
        {"k3 s2 p1 output_padding 1", 1, 8, 7, 9, 8, 3, 2, 1, 1, 1, 1, true, NULL},
        {"k4 s2 p1 groups 2 batch 3", 3, 8, 6, 5, 6, 4, 2, 1, 0, 2, 1, false, NULL},
        {"k3 s1 p2 dilation 2", 1, 4, 9, 8, 4, 3, 1, 2, 0, 1, 2, true, NULL},
        {"k3 s2 SAME_UPPER", 1, 8, 5, 6, 4, 3, 2, 0, 0, 1, 1, true, "SAME_UPPER"},
        {"depthwise k2 s2", 1, 16, 8, 8, 16, 2, 2, 0, 0, 16, 1, true, NULL},
        {"k3 s2 p0 output_padding 1", 1, 6, 5, 4, 5, 3, 2, 0, 1, 1, 1, true, NULL},
    };
    tnode t;
    cc_input in[3];
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        n_init(&t, PR_OP_ConvTranspose, "ConvTranspose", 11);
        n_ints(&t, "strides", (int64_t[]){cs[i].s, cs[i].s}, 2);
        if (cs[i].auto_pad)
            n_str(&t, "auto_pad", cs[i].auto_pad);
        else
            n_ints(&t, "pads", (int64_t[]){cs[i].p, cs[i].p, cs[i].p, cs[i].p}, 4);
        if (cs[i].op) n_ints(&t, "output_padding", (int64_t[]){cs[i].op, cs[i].op}, 2);
        if (cs[i].group != 1) n_int(&t, "group", cs[i].group);
        if (cs[i].dil != 1) n_ints(&t, "dilations", (int64_t[]){cs[i].dil, cs[i].dil}, 2);
        memset(in, 0, sizeof in);
        in[0] = (cc_input){.name = "x", .rank = 4, .dims = {cs[i].N, cs[i].C, cs[i].H, cs[i].W}};
        in[1] = (cc_input){.name = "w",
                           .rank = 4,
                           .dims = {cs[i].C, cs[i].M / cs[i].group, cs[i].k, cs[i].k},
                           .init = true};
        if (cs[i].bias) in[2] = (cc_input){.name = "b", .rank = 1, .dims = {cs[i].M}, .init = true};
        char what[96];
        snprintf(what, sizeof what, "deconv %s", cs[i].name);
        run_all(&t, cs[i].bias ? 3 : 2, in, true, false, &pr_cpu_impl_dnnl_deconv, what);
    }
}

/* ------------------------------------------------------------ matmul */

static void test_matmul(void) {
    tnode t;
    cc_input in[4];
    const pr_cpu_impl *mm = &pr_cpu_impl_dnnl_matmul;

    /* MatMul, constant B, A of rank 2/3/4 */
    static const int64_t ad[][5] = {{2, 7, 13}, {3, 2, 5, 13}, {4, 2, 3, 5, 13}, {2, 1, 64}};
    for (int i = 0; i < 4; i++) {
        n_init(&t, PR_OP_MatMul, "MatMul", 13);
        memset(in, 0, sizeof in);
        in[0] = (cc_input){.name = "a", .rank = (int)ad[i][0]};
        memcpy(in[0].dims, &ad[i][1], (size_t)ad[i][0] * sizeof(int64_t));
        int64_t K = ad[i][ad[i][0]];
        in[1] = (cc_input){.name = "b", .rank = 2, .dims = {K, i == 3 ? 33 : 9}, .init = true};
        char what[64];
        snprintf(what, sizeof what, "matmul rank %d x const", (int)ad[i][0]);
        run_all(&t, 2, in, false, true, mm, what);
    }

    /* Gemm: transA/transB, alpha, beta, C of every broadcast shape */
    static const struct {
        const char *name;
        int ta, tb;
        float alpha, beta;
        int crank;
        int64_t cdims[2];
        bool cinit, binit;
    } gs[] = {
        {"transB C[N]", 0, 1, 1.0f, 1.0f, 1, {9}, true, true},
        {"alpha beta C[M,N]", 0, 0, 0.5f, 2.0f, 2, {7, 9}, true, true},
        {"transA C scalar", 1, 0, 1.5f, 0.5f, 0, {0}, true, true},
        {"C[M,1]", 0, 1, 1.0f, 1.0f, 2, {7, 1}, true, true},
        {"activation C[M,N] beta 0.5", 0, 1, 1.0f, 0.5f, 2, {7, 9}, false, true},
        {"activation C[N]", 0, 0, 2.0f, 1.0f, 1, {9}, false, true},
        {"activation B transA transB", 1, 1, 0.25f, 3.0f, 1, {9}, true, false},
        {"activation B, activation C[M,1]", 0, 0, 1.0f, 1.0f, 2, {7, 1}, false, false},
        {"no C", 0, 1, 1.0f, 1.0f, -1, {0}, true, true},
    };
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
        n_init(&t, PR_OP_Gemm, "Gemm", 13);
        if (gs[i].ta) n_int(&t, "transA", 1);
        if (gs[i].tb) n_int(&t, "transB", 1);
        n_float(&t, "alpha", gs[i].alpha);
        n_float(&t, "beta", gs[i].beta);
        int64_t M = 7, K = 11, N = 9;
        memset(in, 0, sizeof in);
        in[0] = (cc_input){.name = "a", .rank = 2, .dims = {gs[i].ta ? K : M, gs[i].ta ? M : K}};
        in[1] = (cc_input){.name = "b",
                           .rank = 2,
                           .dims = {gs[i].tb ? N : K, gs[i].tb ? K : N},
                           .init = gs[i].binit};
        int n_in = 2;
        if (gs[i].crank >= 0) {
            in[2] = (cc_input){.name = "c",
                               .rank = gs[i].crank,
                               .dims = {gs[i].cdims[0], gs[i].cdims[1]},
                               .init = gs[i].cinit};
            n_in = 3;
        }
        char what[96];
        snprintf(what, sizeof what, "gemm %s", gs[i].name);
        run_all(&t, n_in, in, false, true, mm, what);
    }

    /* FusedMatMul, constant B: bias + every activation, residual + act2 */
    static const char *const acts[] = {"Relu",      "LeakyRelu", "Clip", "Sigmoid",  "HardSigmoid",
                                       "HardSwish", "Tanh",      "Gelu", "GeluTanh", "Swish"};
    for (int a = 0; a < 10; a++) {
        for (int z = 0; z < 2; z++) {
            fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
            n_str(&t, z ? "act2" : "act", acts[a]);
            n_float(&t, z ? "act2_alpha" : "act_alpha", a == 2 ? -0.5f : 0.2f);
            n_float(&t, z ? "act2_beta" : "act_beta", a == 2 ? 0.8f : 0.5f);
            if (a % 3 == 0) n_float(&t, "alpha", 0.7f);
            if (a % 2) n_int(&t, "transB", 1);
            memset(in, 0, sizeof in);
            in[0] = (cc_input){.name = "a", .rank = 3, .dims = {2, 5, 24}};
            in[1] = (cc_input){
                .name = "b", .rank = 2, .dims = {a % 2 ? 17 : 24, a % 2 ? 24 : 17}, .init = true};
            in[2] = (cc_input){.name = "bias", .rank = 1, .dims = {17}, .init = true};
            int n_in = 3;
            if (z) {
                in[3] = (cc_input){.name = "z", .rank = 3, .dims = {2, 5, 17}};
                n_in = 4;
            }
            char what[96];
            snprintf(what, sizeof what, "fused matmul %s%s", z ? "residual + act2 " : "act ",
                     acts[a]);
            run_all(&t, n_in, in, false, false, mm, what);
        }
    }
    /* residual without bias, transA */
    fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_int(&t, "transA", 1);
    memset(in, 0, sizeof in);
    in[0] = (cc_input){.name = "a", .rank = 2, .dims = {16, 6}};
    in[1] = (cc_input){.name = "b", .rank = 2, .dims = {16, 10}, .init = true};
    in[3] = (cc_input){.name = "z", .rank = 2, .dims = {6, 10}};
    run_all(&t, 4, in, false, true, mm, "fused matmul transA residual");

    /* B an activation: batched, broadcast batch dims */
    static const struct {
        int ra, rb;
        int64_t a[4], b[4];
    } bs[] = {
        {4, 4, {2, 3, 6, 8}, {2, 3, 8, 5}}, {4, 4, {2, 1, 6, 8}, {1, 3, 8, 5}},
        {2, 3, {6, 8}, {2, 8, 5}},          {3, 2, {3, 6, 8}, {8, 5}},
        {3, 3, {4, 1, 16}, {4, 16, 7}},     {2, 2, {9, 3}, {3, 4}},
    };
    for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++) {
        n_init(&t, PR_OP_MatMul, "MatMul", 13);
        memset(in, 0, sizeof in);
        in[0] = (cc_input){.name = "a", .rank = bs[i].ra};
        in[1] = (cc_input){.name = "b", .rank = bs[i].rb};
        memcpy(in[0].dims, bs[i].a, sizeof bs[i].a);
        memcpy(in[1].dims, bs[i].b, sizeof bs[i].b);
        char what[64];
        snprintf(what, sizeof what, "matmul activation x activation %zu", i);
        run_all(&t, 2, in, false, true, mm, what);
    }
    /* attention-like: alpha, an additive mask (activation bias), residual */
    for (int v = 0; v < 3; v++) {
        fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
        n_float(&t, "alpha", 0.125f);
        if (v == 2) n_str(&t, "act", "Tanh");
        memset(in, 0, sizeof in);
        in[0] = (cc_input){.name = "q", .rank = 4, .dims = {2, 4, 6, 16}};
        in[1] = (cc_input){.name = "kt", .rank = 4, .dims = {2, 4, 16, 6}};
        int n_in = 2;
        if (v >= 1) {
            in[2] = (cc_input){.name = "mask", .rank = 4, .dims = {2, 1, 1, 6}, .init = v == 2};
            n_in = 3;
        }
        if (v == 2) {
            in[3] = (cc_input){.name = "z", .rank = 4, .dims = {2, 4, 6, 6}};
            n_in = 4;
        }
        char what[64];
        snprintf(what, sizeof what, "fused attention matmul %d", v);
        run_all(&t, n_in, in, false, true, mm, what);
    }
    /* transposed 2-D operand against a batched activation */
    fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_int(&t, "transA", 1);
    memset(in, 0, sizeof in);
    in[0] = (cc_input){.name = "a", .rank = 2, .dims = {8, 6}};
    in[1] = (cc_input){.name = "b", .rank = 3, .dims = {2, 8, 5}};
    run_all(&t, 2, in, false, true, mm, "fused matmul transA x batched activation");
    fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_int(&t, "transB", 1);
    n_float(&t, "alpha", 0.5f);
    memset(in, 0, sizeof in);
    in[0] = (cc_input){.name = "a", .rank = 3, .dims = {3, 4, 8}};
    in[1] = (cc_input){.name = "b", .rank = 2, .dims = {7, 8}};
    run_all(&t, 2, in, false, true, mm, "fused matmul batched x transB activation");
    /* constant B with an activation bias of the output's shape */
    fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Relu");
    memset(in, 0, sizeof in);
    in[0] = (cc_input){.name = "a", .rank = 3, .dims = {2, 3, 10}};
    in[1] = (cc_input){.name = "b", .rank = 2, .dims = {10, 12}, .init = true};
    in[2] = (cc_input){.name = "bias", .rank = 3, .dims = {2, 3, 12}};
    run_all(&t, 3, in, false, true, mm, "fused matmul full activation bias");
}

/* ------------------------------------------- prepared state, run directly */

/* A prepared impl on a graph whose dims may be symbolic; runs on concrete
 * inputs checked against ref. */
typedef struct prepared {
    const pr_cpu_impl *impl;
    const tnode *t;
    int n_in;
    cc_input gin[CC_MAX_IO]; /* graph dims */
    float *init[CC_MAX_IO];
    pr_dtype act_dt;
    bool out_nhwc;
    pr_graph *gi;
    void *state;
} prepared;

static bool prep_make(prepared *p, const pr_cpu_impl *impl, const tnode *t, int n_in,
                      const cc_input *gin, pr_dtype act_dt, bool out_nhwc, int threads) {
    memset(p, 0, sizeof *p);
    p->impl = impl;
    p->t = t;
    p->n_in = n_in;
    p->act_dt = act_dt;
    p->out_nhwc = out_nhwc;
    memcpy(p->gin, gin, (size_t)n_in * sizeof *gin);
    pr_dtype dts[CC_MAX_IO];
    for (int i = 0; i < n_in; i++) {
        dts[i] = gin[i].init ? PRECIS_FLOAT32 : act_dt;
        if (!gin[i].name || !gin[i].init) continue;
        int64_t ne = pr_numel(gin[i].rank, gin[i].dims);
        p->init[i] = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        for (int64_t k = 0; k < ne; k++) p->init[i][k] = cc_rand(-1, 1);
    }
    p->gi = cc_graph(t, n_in, gin, dts, p->init, 1, &p->out_nhwc, true);
    bool ok = p->gi && impl->supports(p->gi, &p->gi->nodes[0]);
    CHECK(ok);
    if (!ok) return false;
    pr_err e = {0};
    pr_cpu_cfg cfg = {.num_threads = threads};
    precis_status st = impl->prepare(p->gi, &p->gi->nodes[0], &cfg, &p->state, &e);
    CHECK(st == PRECIS_OK);
    if (st) fprintf(stderr, "prepare failed: %s\n", e.msg);
    return st == PRECIS_OK;
}

static void prep_free(prepared *p) {
    if (p->state) p->impl->destroy(p->state);
    pr_graph_destroy(p->gi);
    for (int i = 0; i < CC_MAX_IO; i++) free(p->init[i]);
}

/* Inputs for concrete dims (activations random) in ref (f32 plain) and impl
 * (act dtype, layouts) form; the ref output. */
typedef struct run_io {
    pr_buf rin[CC_MAX_IO], iin[CC_MAX_IO], rout;
    const pr_buf *rinp[CC_MAX_IO], *iinp[CC_MAX_IO];
} run_io;

static bool io_make(const prepared *p, const int64_t (*dims)[PR_MAX_RANK], run_io *io) {
    memset(io, 0, sizeof *io);
    pr_err e = {0};
    cc_input cin[CC_MAX_IO];
    pr_dtype rdt[CC_MAX_IO];
    float *plain[CC_MAX_IO] = {0};
    memcpy(cin, p->gin, sizeof cin);
    for (int i = 0; i < p->n_in; i++) {
        rdt[i] = PRECIS_FLOAT32;
        if (!cin[i].name) continue;
        if (!cin[i].init) memcpy(cin[i].dims, dims[i], sizeof cin[i].dims);
        pr_dtype idt = cin[i].init ? PRECIS_FLOAT32 : p->act_dt;
        pr_buf_alloc(&io->rin[i], PRECIS_FLOAT32, cin[i].rank, cin[i].dims, "in", &e);
        pr_buf_alloc(&io->iin[i], idt, cin[i].rank, cin[i].dims, "in", &e);
        float *r = io->rin[i].data;
        int64_t ne = io->rin[i].numel;
        for (int64_t k = 0; k < ne; k++)
            r[k] = cin[i].init ? p->init[i][k] : cc_round(cc_rand(-1, 1), p->act_dt);
        plain[i] = r;
        float *tmp = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        if (cin[i].nhwc && !cin[i].init)
            cc_nchw_to_nhwc(r, tmp, cin[i].dims);
        else
            memcpy(tmp, r, (size_t)ne * sizeof(float));
        pr_ref_from_f32(tmp, ne, idt, io->iin[i].data);
        free(tmp);
        io->rinp[i] = &io->rin[i];
        io->iinp[i] = &io->iin[i];
    }
    pr_graph *gr = cc_graph(p->t, p->n_in, cin, rdt, plain, 1, NULL, false);
    pr_buf rout[1];
    precis_status st = pr_exec_node(gr, &gr->nodes[0], io->rinp, rout, 1, &e);
    pr_graph_destroy(gr);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "ref failed: %s\n", e.msg);
        return false;
    }
    io->rout = rout[0];
    return true;
}

static void io_free(run_io *io) {
    for (int i = 0; i < CC_MAX_IO; i++) {
        pr_buf_free(&io->rin[i]);
        pr_buf_free(&io->iin[i]);
    }
    pr_buf_free(&io->rout);
}

/* Runs the prepared impl on io's inputs into out (allocated here unless
 * inplace: then out is input `inplace`'s buffer). */
static precis_status io_run(const prepared *p, run_io *io, pr_cpu_exec *x, int inplace, pr_buf *out,
                            pr_err *e) {
    if (inplace >= 0) {
        *out = io->iin[inplace];
    } else {
        precis_status st = pr_buf_alloc(out, p->act_dt, io->rout.rank, io->rout.dims, "y", e);
        if (st) return st;
    }
    pr_buf *outp[1] = {out};
    pr_kernel k = {p->gi, &p->gi->nodes[0], p->n_in, io->iinp, 1, outp, e, x->num_threads};
    return p->impl->run(p->state, &k, x);
}

static bool io_compare(const prepared *p, const run_io *io, const pr_buf *out, const char *label) {
    int64_t ne = io->rout.numel;
    float *v = malloc((size_t)(ne ? ne : 1) * sizeof(float));
    float *v2 = malloc((size_t)(ne ? ne : 1) * sizeof(float));
    pr_ref_to_f32(out->data, out->dtype, ne, v);
    if (p->out_nhwc)
        cc_nhwc_to_nchw(v, v2, io->rout.dims);
    else
        memcpy(v2, v, (size_t)ne * sizeof(float));
    const float *r = io->rout.data;
    cc_tolerance tol = cc_tol(p->act_dt);
    if (red_len > 64) tol.abs *= sqrtf((float)red_len / 64.0f);
    int bad = 0;
    for (int64_t q = 0; q < ne; q++) {
        float d = fabsf(v2[q] - r[q]);
        if (!(d <= tol.abs + tol.rel * fabsf(r[q])) && bad++ < 3)
            fprintf(stderr, "%s: element %lld: impl %g, ref %g\n", label, (long long)q, v2[q],
                    r[q]);
    }
    CHECK(bad == 0);
    free(v);
    free(v2);
    return bad == 0;
}

static void check_shapes(prepared *p, int n_shapes, const int64_t (*shapes)[CC_MAX_IO][PR_MAX_RANK],
                         int threads, const char *what) {
    pr_err e = {0};
    pr_cpu_exec x = {threads, pr_dnnl_stream_create(&e), NULL, 0, NULL, 0};
    CHECK(x.dnnl_stream != NULL);
    for (int s = 0; s < n_shapes; s++) {
        run_io io;
        if (!io_make(p, shapes[s], &io)) continue;
        pr_buf out;
        char label[96];
        snprintf(label, sizeof label, "%s shape %d", what, s);
        precis_status st = io_run(p, &io, &x, -1, &out, &e);
        CHECK(st == PRECIS_OK);
        if (st)
            fprintf(stderr, "%s: run failed: %s\n", label, e.msg);
        else
            io_compare(p, &io, &out, label);
        pr_buf_free(&out);
        io_free(&io);
    }
    pr_dnnl_stream_destroy(x.dnnl_stream);
    free(x.scratch);
}

#define SYM(i) pr_dim_from_sym(i)

static void test_symbolic(void) {
    tnode t;
    prepared p;
    /* conv: symbolic batch and spatial dims, SAME_UPPER stride 2 */
    static const conv_case c = {"sym", 1, 8, 1, 1,   12,           3,   3, 1,
                                2,     2, 1, 1, {0}, "SAME_UPPER", true};
    conv_node(&t, &c, true);
    n_str(&t, "act", "Relu");
    cc_input gin[4] = {{.name = "x", .rank = 4, .dims = {SYM(0), 8, SYM(1), SYM(2)}, .nhwc = true},
                       {.name = "w", .rank = 4, .dims = {12, 8, 3, 3}, .init = true},
                       {.name = "b", .rank = 1, .dims = {12}, .init = true}};
    static const int64_t cshapes[4][CC_MAX_IO][PR_MAX_RANK] = {
        {{1, 8, 10, 10}}, {{2, 8, 7, 9}}, {{1, 8, 10, 10}}, {{3, 8, 1, 33}}};
    for (int d = 0; d < (have_bf16 ? 2 : 1); d++) {
        if (prep_make(&p, &pr_cpu_impl_dnnl_conv, &t, 3, gin, DTS[d], true, 2)) {
            /* 2 threads (as prepared) and 1 (another primitive) */
            check_shapes(&p, 4, cshapes, 2, d ? "symbolic conv bf16" : "symbolic conv f32");
            check_shapes(&p, 2, cshapes, 1, "symbolic conv 1 thread");
            const char *impl = p.impl->describe(p.state);
            printf("dnnl.conv symbolic %s: %s\n", pr_dtype_name(DTS[d]), impl);
        }
        prep_free(&p);
    }
    /* 64 channels, 2 threads: oneDNN packs f32 weights differently for
     * small spatial sizes, so entries need another copy of the weights */
    static const conv_case c64 = {"sym64", 1, 64, 1, 1, 64, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1},
                                  NULL, true};
    conv_node(&t, &c64, false);
    cc_input gin64[3] = {{.name = "x", .rank = 4, .dims = {1, 64, SYM(0), SYM(1)}, .nhwc = true},
                         {.name = "w", .rank = 4, .dims = {64, 64, 3, 3}, .init = true},
                         {.name = "b", .rank = 1, .dims = {64}, .init = true}};
    static const int64_t s64[4][CC_MAX_IO][PR_MAX_RANK] = {
        {{1, 64, 3, 3}}, {{1, 64, 20, 20}}, {{1, 64, 5, 4}}, {{1, 64, 3, 3}}};
    if (prep_make(&p, &pr_cpu_impl_dnnl_conv, &t, 3, gin64, PRECIS_FLOAT32, true, 2)) {
        red_len = 64 * 9;
        check_shapes(&p, 4, s64, 2, "symbolic conv 64 channels");
        red_len = 0;
    }
    prep_free(&p);
    /* deconv: symbolic spatial dims */
    n_init(&t, PR_OP_ConvTranspose, "ConvTranspose", 11);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    cc_input dgin[3] = {{.name = "x", .rank = 4, .dims = {1, 8, SYM(0), SYM(1)}, .nhwc = true},
                        {.name = "w", .rank = 4, .dims = {8, 4, 2, 2}, .init = true},
                        {.name = "b", .rank = 1, .dims = {4}, .init = true}};
    static const int64_t dshapes[2][CC_MAX_IO][PR_MAX_RANK] = {{{1, 8, 5, 7}}, {{1, 8, 16, 3}}};
    for (int d = 0; d < (have_bf16 ? 2 : 1); d++) {
        if (prep_make(&p, &pr_cpu_impl_dnnl_deconv, &t, 3, dgin, DTS[d], true, 1)) {
            check_shapes(&p, 2, dshapes, 1, "symbolic deconv");
            printf("dnnl.deconv %s: %s\n", pr_dtype_name(DTS[d]), p.impl->describe(p.state));
        }
        prep_free(&p);
    }
    /* matmul, constant B: A [batch, seq, 32] */
    fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act", "Gelu");
    cc_input mgin[3] = {{.name = "a", .rank = 3, .dims = {SYM(0), SYM(1), 32}},
                        {.name = "b", .rank = 2, .dims = {32, 20}, .init = true},
                        {.name = "bias", .rank = 1, .dims = {20}, .init = true}};
    static const int64_t mshapes[3][CC_MAX_IO][PR_MAX_RANK] = {
        {{1, 5, 32}}, {{2, 7, 32}}, {{1, 1, 32}}};
    for (int d = 0; d < (have_bf16 ? 2 : 1); d++) {
        if (prep_make(&p, &pr_cpu_impl_dnnl_matmul, &t, 3, mgin, DTS[d], false, 1)) {
            check_shapes(&p, 3, mshapes, 1, "symbolic matmul const B");
            check_shapes(&p, 1, mshapes, 2, "symbolic matmul const B 2 threads");
            printf("dnnl.matmul constant B %s: %s\n", pr_dtype_name(DTS[d]),
                   p.impl->describe(p.state));
        }
        prep_free(&p);
    }
    /* matmul, activation B: [batch, heads, seq, 16] x [batch, heads, 16, seq] */
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    cc_input agin[2] = {{.name = "q", .rank = 4, .dims = {SYM(0), 2, SYM(1), 16}},
                        {.name = "kt", .rank = 4, .dims = {SYM(0), 2, 16, SYM(1)}}};
    static const int64_t ashapes[2][CC_MAX_IO][PR_MAX_RANK] = {{{1, 2, 5, 16}, {1, 2, 16, 5}},
                                                               {{2, 2, 9, 16}, {2, 2, 16, 9}}};
    for (int d = 0; d < (have_bf16 ? 2 : 1); d++) {
        if (prep_make(&p, &pr_cpu_impl_dnnl_matmul, &t, 2, agin, DTS[d], false, 1)) {
            check_shapes(&p, 2, ashapes, 1, "symbolic matmul activation B");
            printf("dnnl.matmul activation B %s: %s\n", pr_dtype_name(DTS[d]),
                   p.impl->describe(p.state));
        }
        prep_free(&p);
    }
    /* more shapes than the cache keeps: the extra primitives are made per run */
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    cc_input sgin[2] = {{.name = "a", .rank = 2, .dims = {SYM(0), 8}},
                        {.name = "b", .rank = 2, .dims = {8, 3}, .init = true}};
    if (prep_make(&p, &pr_cpu_impl_dnnl_matmul, &t, 2, sgin, PRECIS_FLOAT32, false, 1)) {
        int n = 136; /* PR_DNNL_CACHE_CAP (128) + 8 */
        int64_t(*many)[CC_MAX_IO][PR_MAX_RANK] = calloc((size_t)n, sizeof *many);
        for (int i = 0; i < n; i++) {
            many[i][0][0] = i + 1;
            many[i][0][1] = 8;
        }
        check_shapes(&p, n, (const int64_t(*)[CC_MAX_IO][PR_MAX_RANK])many, 1, "many shapes");
        check_shapes(&p, n, (const int64_t(*)[CC_MAX_IO][PR_MAX_RANK])many, 1, "many shapes again");
        free(many);
    }
    prep_free(&p);
}

/* The output in the residual's buffer (the planner's in-place case). */
static void test_inplace(void) {
    tnode t;
    prepared p;
    static const conv_case c = {"inplace", 1, 16, 9, 9, 16,           3,    3,
                                1,         1, 1,  1, 1, {1, 1, 1, 1}, NULL, true};
    conv_node(&t, &c, true);
    n_str(&t, "act", "Relu");
    n_str(&t, "act2", "Relu");
    CHECK(pr_cpu_impl_dnnl_conv.inplace_input != NULL);
    cc_input gin[4] = {{.name = "x", .rank = 4, .dims = {1, 16, 9, 9}, .nhwc = true},
                       {.name = "w", .rank = 4, .dims = {16, 16, 3, 3}, .init = true},
                       {.name = "b", .rank = 1, .dims = {16}, .init = true},
                       {.name = "z", .rank = 4, .dims = {1, 16, 9, 9}, .nhwc = true}};
    static const int64_t shape[1][CC_MAX_IO][PR_MAX_RANK] = {
        {{1, 16, 9, 9}, {0}, {0}, {1, 16, 9, 9}}};
    pr_err e = {0};
    for (int d = 0; d < (have_bf16 ? 2 : 1); d++) {
        if (prep_make(&p, &pr_cpu_impl_dnnl_conv, &t, 4, gin, DTS[d], true, 1)) {
            CHECK(pr_cpu_impl_dnnl_conv.inplace_input(p.gi, &p.gi->nodes[0]) == 3);
            run_io io;
            if (io_make(&p, shape[0], &io)) {
                pr_cpu_exec x = {1, NULL, NULL, 0, NULL, 0};
                pr_buf out;
                CHECK(io_run(&p, &io, &x, 3, &out, &e) == PRECIS_OK);
                io_compare(&p, &io, &out, "fused conv in place");
                free(x.scratch);
                io_free(&io);
            }
        }
        prep_free(&p);
    }
    fused(&t, PR_OP_FusedMatMul, "FusedMatMul");
    n_str(&t, "act2", "Tanh");
    cc_input mgin[4] = {{.name = "a", .rank = 2, .dims = {6, 24}},
                        {.name = "b", .rank = 2, .dims = {24, 10}, .init = true},
                        {.name = NULL},
                        {.name = "z", .rank = 2, .dims = {6, 10}}};
    static const int64_t mshape[1][CC_MAX_IO][PR_MAX_RANK] = {{{6, 24}, {0}, {0}, {6, 10}}};
    if (prep_make(&p, &pr_cpu_impl_dnnl_matmul, &t, 4, mgin, PRECIS_FLOAT32, false, 1)) {
        CHECK(pr_cpu_impl_dnnl_matmul.inplace_input(p.gi, &p.gi->nodes[0]) == 3);
        run_io io;
        if (io_make(&p, mshape[0], &io)) {
            pr_cpu_exec x = {1, NULL, NULL, 0, NULL, 0};
            pr_buf out;
            CHECK(io_run(&p, &io, &x, 3, &out, &e) == PRECIS_OK);
            io_compare(&p, &io, &out, "fused matmul in place");
            free(x.scratch);
            io_free(&io);
        }
    }
    prep_free(&p);
}

/* --------------------------------------------------- two threads at once */

#define CONC_SHAPES 3
#define CONC_ITERS 6

typedef struct conc_arg {
    prepared *p;
    run_io *io;     /* per shape */
    pr_buf *expect; /* per shape */
    int first;      /* shape order differs per thread */
    int mismatches, failures;
} conc_arg;

static void *conc_main(void *v) {
    conc_arg *a = v;
    pr_err e = {0};
    pr_cpu_exec x = {1, pr_dnnl_stream_create(&e), NULL, 0, NULL, 0};
    if (!x.dnnl_stream) a->failures++;
    for (int it = 0; it < CONC_ITERS; it++) {
        int s = (a->first + it) % CONC_SHAPES;
        pr_buf out;
        if (io_run(a->p, &a->io[s], &x, -1, &out, &e)) {
            a->failures++;
            continue;
        }
        if (out.nbytes != a->expect[s].nbytes ||
            memcmp(out.data, a->expect[s].data, out.nbytes) != 0)
            a->mismatches++;
        pr_buf_free(&out);
    }
    pr_dnnl_stream_destroy(x.dnnl_stream);
    free(x.scratch);
    return NULL;
}

static void concurrent(prepared *p, const int64_t (*shapes)[CC_MAX_IO][PR_MAX_RANK],
                       const char *what) {
    run_io io[CONC_SHAPES];
    pr_buf expect[CONC_SHAPES];
    pr_err e = {0};
    pr_cpu_exec x = {1, NULL, NULL, 0, NULL, 0};
    memset(expect, 0, sizeof expect);
    for (int s = 0; s < CONC_SHAPES; s++) {
        io_make(p, shapes[s], &io[s]);
        CHECK(io_run(p, &io[s], &x, -1, &expect[s], &e) == PRECIS_OK);
        io_compare(p, &io[s], &expect[s], what);
    }
    free(x.scratch);
    pthread_t th[2];
    conc_arg args[2];
    for (int i = 0; i < 2; i++) {
        args[i] = (conc_arg){p, io, expect, i, 0, 0};
        CHECK(pthread_create(&th[i], NULL, conc_main, &args[i]) == 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].failures == 0);
        CHECK(args[i].mismatches == 0);
        if (args[i].mismatches || args[i].failures)
            fprintf(stderr, "%s: thread %d: %d failures, %d mismatches\n", what, i,
                    args[i].failures, args[i].mismatches);
    }
    for (int s = 0; s < CONC_SHAPES; s++) {
        pr_buf_free(&expect[s]);
        io_free(&io[s]);
    }
}

static void test_threads(void) {
    tnode t;
    prepared p;
    /* conv with symbolic spatial dims: the threads also create primitives */
    static const conv_case c = {"threads", 1, 16, 1, 1, 16,           3,    3,
                                1,         1, 1,  1, 1, {1, 1, 1, 1}, NULL, true};
    conv_node(&t, &c, true);
    n_str(&t, "act", "Swish");
    cc_input gin[4] = {{.name = "x", .rank = 4, .dims = {1, 16, SYM(0), SYM(1)}, .nhwc = true},
                       {.name = "w", .rank = 4, .dims = {16, 16, 3, 3}, .init = true},
                       {.name = "b", .rank = 1, .dims = {16}, .init = true},
                       {.name = "z", .rank = 4, .dims = {1, 16, SYM(0), SYM(1)}, .nhwc = true}};
    static const int64_t cshapes[CONC_SHAPES][CC_MAX_IO][PR_MAX_RANK] = {
        {{1, 16, 12, 12}, {0}, {0}, {1, 16, 12, 12}},
        {{1, 16, 20, 7}, {0}, {0}, {1, 16, 20, 7}},
        {{1, 16, 5, 31}, {0}, {0}, {1, 16, 5, 31}}};
    if (prep_make(&p, &pr_cpu_impl_dnnl_conv, &t, 4, gin, PRECIS_FLOAT32, true, 1))
        concurrent(&p, cshapes, "conv from two threads");
    prep_free(&p);
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    cc_input agin[2] = {{.name = "q", .rank = 3, .dims = {2, SYM(0), 16}},
                        {.name = "kt", .rank = 3, .dims = {2, 16, SYM(0)}}};
    static const int64_t ashapes[CONC_SHAPES][CC_MAX_IO][PR_MAX_RANK] = {
        {{2, 5, 16}, {2, 16, 5}}, {{2, 9, 16}, {2, 16, 9}}, {{2, 32, 16}, {2, 16, 32}}};
    if (prep_make(&p, &pr_cpu_impl_dnnl_matmul, &t, 2, agin, PRECIS_FLOAT32, false, 1))
        concurrent(&p, ashapes, "matmul from two threads");
    prep_free(&p);
}

/* The Winograd path (dnnl_wino.h), forced: float32 3x3 convs with channels
 * a multiple of 16, plain and nhwc, with relu and with a residual (sum
 * post-op, reordered into the staged output); a second shape gets a direct
 * primitive made from the weights the state keeps. */
static void test_winograd(void) {
    setenv("PRECIS_WINOGRAD", "force", 1);
    static const conv_case c = {"wino", 1, 32, 12, 10, 48, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1},
                                NULL, true};
    static const int64_t shapes[3][CC_MAX_IO][PR_MAX_RANK] = {
        {{1, 32, 12, 10}, {0}, {0}, {1, 48, 12, 10}},
        {{2, 32, 7, 9}, {0}, {0}, {2, 48, 7, 9}},
        {{1, 32, 12, 10}, {0}, {0}, {1, 48, 12, 10}}};
    int wino = 0;
    for (int z = 0; z < 2; z++) {
        for (int l = 0; l < 2; l++) {
            tnode t;
            prepared p;
            conv_node(&t, &c, true);
            n_str(&t, "act", "Relu");
            if (z) n_str(&t, "act2", "Relu");
            cc_input gin[4] = {
                {.name = "x", .rank = 4, .dims = {1, 32, 12, 10}, .nhwc = l == 1},
                {.name = "w", .rank = 4, .dims = {48, 32, 3, 3}, .init = true},
                {.name = "b", .rank = 1, .dims = {48}, .init = true},
                {.name = "z", .rank = 4, .dims = {1, 48, 12, 10}, .nhwc = l == 1}};
            red_len = 32 * 9;
            if (prep_make(&p, &pr_cpu_impl_dnnl_conv, &t, z ? 4 : 3, gin, PRECIS_FLOAT32, l == 1,
                          1 + l)) {
                const char *impl = p.impl->describe(p.state);
                wino += strstr(impl, "wino") != NULL;
                char what[64];
                snprintf(what, sizeof what, "winograd %s%s", l ? "nhwc" : "plain",
                         z ? " residual" : "");
                check_shapes(&p, 3, shapes, 1 + l, what);
                printf("dnnl.conv %s: %s\n", what, impl);
            }
            prep_free(&p);
            red_len = 0;
        }
    }
    /* oneDNN 2.6 has the kernels wherever AVX-512 is (the CPU backend's
     * floor for dnnl.conv f32 speed); elsewhere the direct path ran */
    if (pr_cpu_features_get()->avx512f) CHECK(wino == 4);
    unsetenv("PRECIS_WINOGRAD");
}

int main(int argc, char **argv) {
    pr_err e = {0};
    void *s = pr_dnnl_stream_create(&e);
    if (!s) {
        printf("test_cpu_dnnl: skipped (%s)\n", e.msg);
        return 0;
    }
    pr_dnnl_stream_destroy(s);
    {
        /* AMX without a palette table (a VM's cpuid stops at leaf 0x1C): oneDNN's AMX
         * kernels fault there, so the engine must have capped oneDNN below AMX */
        const pr_cpu_features *f = pr_cpu_features_get();
        bool amx = pr_dnnl_uses_amx();
        if (f->amx_no_palette) CHECK(!amx);
        printf("test_cpu_dnnl: oneDNN %s AMX%s\n", amx ? "uses" : "does not use",
               f->amx_no_palette ? " (advertised without a palette table: capped)" : "");
    }
#ifdef PRECIS_TEST_NO_BF16
    have_bf16 = false;
#else
    {
        /* bf16 runs where the impl takes a bf16 conv (oneDNN natively) */
        tnode t;
        conv_node(&t, &conv_cases[0], false);
        cc_input in[4];
        conv_inputs(&conv_cases[0], in);
        float *w = calloc(16 * 24, sizeof(float));
        float *data[3] = {NULL, w, w};
        pr_dtype dt[3] = {PRECIS_BFLOAT16, PRECIS_FLOAT32, PRECIS_FLOAT32};
        pr_graph *g = cc_graph(&t, 3, in, dt, data, 1, NULL, true);
        have_bf16 = pr_cpu_impl_dnnl_conv.supports(g, &g->nodes[0]);
        pr_graph_destroy(g);
        free(w);
        if (!have_bf16) printf("test_cpu_dnnl: no native bf16 in oneDNN here, f32 only\n");
    }
#endif
    /* "threads": only the concurrency test (for a ThreadSanitizer build) */
    bool only_threads = argc > 1 && strcmp(argv[1], "threads") == 0;
    if (!only_threads) {
        test_conv();
        test_fused_conv();
        test_deconv();
        test_matmul();
        test_symbolic();
        test_inplace();
        test_winograd();
    }
    test_threads();
    return check_report("test_cpu_dnnl");
}
