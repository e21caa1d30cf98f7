/* QConv cases for the CPU backend's INT8 tests (test_cpu_int8.c,
 * test_cpu_qepi.c): a geometry (qconv_case), its node and random inputs
 * (qconv_node, qconv_inputs), the activations every impl is checked with
 * (ACTS), and qconv_one, one case against ref through the impl qconv_impl
 * points at (tests switch it: dnnl.qconv, qdwconv, qfc). */
#ifndef PR_TESTS_UNIT_CPU_CHECK_QCONV_H
#define PR_TESTS_UNIT_CPU_CHECK_QCONV_H

#include <math.h>
#include <stdio.h>

#include "backends/cpu/kernels.h"
#include "cpu_check_q8.h"

typedef struct qconv_case {
    const char *name;
    int64_t N, C, H, W, M, kh, kw, group, sh, sw, dh, dw, pads[4];
    const char *auto_pad;
} qconv_case;

static const qconv_case qconv_cases[] = {
    {"1x1", 1, 16, 9, 11, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
    {"3x3 pad 1", 1, 16, 13, 13, 16, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"3x3 stride 2 asym pads batch 3", 3, 8, 15, 17, 12, 3, 3, 1, 2, 2, 1, 1, {1, 0, 0, 1}, NULL},
    {"3x3 odd channels 5->7", 1, 5, 10, 9, 7, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"7x7 stride 2 pad 3 (stem)", 1, 3, 23, 23, 16, 7, 7, 1, 2, 2, 1, 1, {3, 3, 3, 3}, NULL},
    {"3x3 dilation 2", 1, 8, 14, 14, 8, 3, 3, 1, 1, 1, 2, 2, {2, 2, 2, 2}, NULL},
    {"groups 4", 1, 16, 9, 9, 32, 3, 3, 4, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"depthwise", 1, 32, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"depthwise stride 2 batch 2", 2, 24, 15, 15, 24, 3, 3, 24, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
    {"depthwise 5x5 multiplier 2", 1, 16, 11, 11, 32, 5, 5, 16, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
    {"depthwise odd 19 channels", 1, 19, 9, 10, 19, 3, 3, 19, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"1x1 stride 2", 1, 16, 10, 9, 8, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL},
    {"1x7", 1, 8, 6, 13, 8, 1, 7, 1, 1, 1, 1, 1, {0, 3, 0, 3}, NULL},
    {"SAME_UPPER stride 2", 1, 8, 11, 12, 8, 3, 3, 1, 2, 2, 1, 1, {0, 0, 0, 0}, "SAME_UPPER"},
    {"3x3 64->64 28x28", 1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    /* output channels padded to 32 / 48 in NHWC (dnnl_qconv.c) */
    {"3x3 20->24 padded", 1, 20, 11, 10, 24, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"3x3 stride 2 16->40 padded batch 2", 2, 16, 13, 12, 40, 3, 3, 1, 2, 2, 1, 1, {1, 0, 0, 1},
     NULL},
};

static inline int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb,
                              int64_t pe, const char *auto_pad) {
    if (auto_pad && strcmp(auto_pad, "VALID")) return (in + s - 1) / s;
    return (in + pb + pe - ((k - 1) * d + 1)) / s + 1;
}

static const float XS_U8 = 1.0f / 64, XS_S8 = 1.0f / 32, YS = 0.03f, ZS = 0.02f;

static inline void qconv_node(qnode *q, const qconv_case *c, pr_dtype xdt, pr_dtype ydt) {
    qn_init(q, PR_OP_QConv, "QConv", 1, true);
    qn_ints(q, "kernel_shape", (int64_t[]){c->kh, c->kw}, 2);
    if (c->sh != 1 || c->sw != 1) qn_ints(q, "strides", (int64_t[]){c->sh, c->sw}, 2);
    if (c->dh != 1 || c->dw != 1) qn_ints(q, "dilations", (int64_t[]){c->dh, c->dw}, 2);
    if (c->group != 1) qn_int(q, "group", c->group);
    if (c->auto_pad)
        qn_str(q, "auto_pad", c->auto_pad);
    else
        qn_ints(q, "pads", c->pads, 4);
    qn_float(q, "x_scale", xdt == PRECIS_UINT8 ? XS_U8 : XS_S8);
    if (ydt != PRECIS_FLOAT32) {
        qn_int(q, "y_type", ydt);
        qn_float(q, "y_scale", YS);
    }
}

/* X, W, w_scale, B (name NULL unless bias), Z (name NULL unless zdt) */
static inline void qconv_inputs(const qconv_case *c, pr_dtype xdt, bool bias, pr_dtype zdt,
                                bool nhwc, qc_in *in) {
    memset(in, 0, 5 * sizeof *in);
    int64_t Cg = c->C / c->group, K = Cg * c->kh * c->kw;
    in[0] = q_act("x", 4, (int64_t[]){c->N, c->C, c->H, c->W}, xdt, nhwc);
    int64_t nw = c->M * K;
    void *w = rnd_data(PRECIS_INT8, nw, -127, 127, 0, 0);
    in[1] = q_init("w", 4, (int64_t[]){c->M, Cg, c->kh, c->kw}, PRECIS_INT8, w);
    free(w);
    float *v = malloc((size_t)c->M * sizeof *v);
    for (int64_t m = 0; m < c->M; m++) v[m] = (0.5f + cc_rand(0, 1)) / (127.0f * sqrtf((float)K));
    in[2] = q_init("w_scale", 1, (int64_t[]){c->M}, PRECIS_FLOAT32, v);
    if (bias) {
        for (int64_t m = 0; m < c->M; m++) v[m] = cc_rand(-1, 1);
        in[3] = q_init("b", 1, (int64_t[]){c->M}, PRECIS_FLOAT32, v);
    }
    free(v);
    if (zdt != PRECIS_UNDEFINED) {
        int64_t oh = out_dim(c->H, c->kh, c->sh, c->dh, c->pads[0], c->pads[2], c->auto_pad);
        int64_t ow = out_dim(c->W, c->kw, c->sw, c->dw, c->pads[1], c->pads[3], c->auto_pad);
        in[4] = q_act("z", 4, (int64_t[]){c->N, c->M, oh, ow}, zdt, nhwc);
    }
}

typedef struct qact {
    const char *name;
    float alpha, beta;
} qact;

static const qact ACTS[] = {
    {"Relu", 0, 0},          {"LeakyRelu", 0.1f, 0}, {"Clip", -0.5f, 2.0f},  {"Sigmoid", 0, 0},
    {"HardSigmoid", 0.2f, 0.5f}, {"HardSwish", 0, 0}, {"Tanh", 0, 0},        {"Gelu", 0, 0},
    {"GeluTanh", 0, 0},      {"Swish", 0, 0},
};
#define N_ACTS ((int)(sizeof ACTS / sizeof ACTS[0]))

/* The impl qconv_one checks (test_qdwconv switches it). */
static const pr_cpu_impl *qconv_impl = &pr_cpu_impl_dnnl_qconv;

/* One QConv case with every option spelled out. */
static inline void qconv_one(const qconv_case *c, pr_dtype xdt, pr_dtype ydt, bool bias,
                             pr_dtype zdt, bool nhwc, const qact *a1, const qact *a2, int threads,
                             const char *what) {
    qnode q;
    qconv_node(&q, c, xdt, ydt);
    if (a1) qn_act(&q, "act", a1->name, a1->alpha, a1->beta);
    if (a2) qn_act(&q, "act2", a2->name, a2->alpha, a2->beta);
    if (zdt == PRECIS_INT8 || zdt == PRECIS_UINT8) qn_float(&q, "z_scale", ZS);
    qc_in in[5];
    qconv_inputs(c, xdt, bias, zdt, nhwc, in);
    char label[200];
    snprintf(label, sizeof label, "qconv %s [%s->%s%s z %s %s%s%s%s%s %dt]", what, dn(xdt), dn(ydt),
             bias ? " bias" : "", dn(zdt), nhwc ? "nhwc" : "plain", a1 ? " " : "",
             a1 ? a1->name : "", a2 ? " act2 " : "", a2 ? a2->name : "", threads);
    int n_in = zdt != PRECIS_UNDEFINED ? 5 : bias ? 4 : 3;
    qc_run(&q.t, n_in, in, 1, nhwc, qconv_impl, threads, 1, false, label);
    qc_free(in, 5);
}

#endif
