/* The CPU backend's INT8 impls against the ref backend: dnnl.qconv (QConv:
 * 1x1/3x3/7x7, strides, pads, dilations, groups, depthwise, odd channel
 * counts (output channels padded), uint8 and int8 src, int8/uint8/float32 out, bias, every
 * activation, the residual Z as int8/uint8/float32, act2, plain and NHWC,
 * symbolic shapes, Z in place), dnnl.qmatmul (QMatMul: constant 2-D weights,
 * transA/transB, batched activation x activation, scalar and per-column
 * scales, alpha, bias, Z), quantize/dequantize (float32/bfloat16/float16,
 * ties, NaN, inf, saturation: bit-exact), and the int8/uint8 paths of the
 * move impl (Concat, Transpose, Reorder, Slice, Split, Reshape) and of
 * MaxPool (exact). QBinary and QPool: test_cpu_qelem.c; qdwconv (the own
 * depthwise kernels): test_cpu_qdw.c. Also speed prints: a
 * 3x3 64->64 56x56 QConv against the float32 FusedConv of dnnl.conv, and the
 * int8 depthwise kernels (no timed assertion).
 *
 * Tolerance: int8/uint8 outputs of QConv/QMatMul may differ from ref by one
 * unit (ref rounds a float32 R computed in another order; values within an
 * ulp of a half round either way); the fraction that differs is reported.
 * float32 outputs: 1e-4 of the output's largest magnitude.
 *
 * The process runs everything with the best ISA, then runs itself again
 * with PRECIS_CPU_ISA=scalar for our own kernels' portable fallbacks (the
 * oneDNN impls do not depend on that cap). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_norm.h"
#include "cpu_check_qconv.h"

/* ------------------------------------------------------------ QConv */
static void test_qconv_geometry(void) {
    static const pr_dtype YT[3] = {PRECIS_INT8, PRECIS_UINT8, PRECIS_FLOAT32};
    static const pr_dtype XT[2] = {PRECIS_UINT8, PRECIS_INT8};
    int k = 0;
    for (size_t i = 0; i < sizeof qconv_cases / sizeof qconv_cases[0]; i++)
        for (int x = 0; x < 2; x++)
            for (int l = 0; l < 2; l++)
                for (int y = 0; y < 3; y++, k++)
                    qconv_one(&qconv_cases[i], XT[x], YT[y], k % 3 != 2, PRECIS_UNDEFINED, l == 1,
                              NULL, NULL, 1 + k % 2, qconv_cases[i].name);
}

static void test_qconv_epilogue(void) {
    static const qconv_case c = {"epilogue", 1, 16, 10, 9, 16, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1},
                                 NULL};
    static const qconv_case dw = {"dw epilogue", 1, 24, 9, 8, 24, 3, 3, 24, 1, 1, 1, 1,
                                  {1, 1, 1, 1}, NULL};
    const qact relu = ACTS[0];
    /* float32 out of fewer than 16 channels: transcendental acts applied
     * after the primitive (dnnl_qconv.c), others in its post-ops */
    static const qconv_case few = {"4 channels", 2, 24, 9, 10, 4, 1, 1, 1, 1, 1, 1, 1,
                                   {0, 0, 0, 0}, NULL};
    for (int a = 0; a < N_ACTS; a++) {
        qconv_one(&few, PRECIS_UINT8, PRECIS_FLOAT32, a % 2, PRECIS_UNDEFINED, true, &ACTS[a],
                  NULL, 1 + a % 2, "float out");
        qconv_one(&qconv_cases[3], PRECIS_INT8, PRECIS_FLOAT32, true, PRECIS_UNDEFINED, a % 2,
                  &ACTS[a], NULL, 2, "float out");
    }
    for (int a = 0; a < N_ACTS; a++) {
        const qact *A = &ACTS[a];
        qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_UNDEFINED, true, A, NULL, 1, "act");
        qconv_one(&c, PRECIS_INT8, PRECIS_FLOAT32, true, PRECIS_UNDEFINED, false, A, NULL, 2,
                  "act");
        qconv_one(&c, PRECIS_UINT8, PRECIS_UINT8, a % 2, PRECIS_INT8, true, &relu, A, 1,
                  "residual");
        qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_FLOAT32, a % 2, A, NULL, 2,
                  "f32 residual");
        qconv_one(&c, PRECIS_INT8, PRECIS_FLOAT32, true, PRECIS_UINT8, !(a % 2), A, &relu, 1,
                  "residual into f32");
        qconv_one(&dw, PRECIS_UINT8, PRECIS_UINT8, true, PRECIS_UINT8, true, A, A, 1,
                  "depthwise residual");
    }
    /* residuals of every dtype pairing, no activations */
    static const pr_dtype Z[3] = {PRECIS_INT8, PRECIS_UINT8, PRECIS_FLOAT32};
    static const pr_dtype Y[3] = {PRECIS_INT8, PRECIS_UINT8, PRECIS_FLOAT32};
    for (int z = 0; z < 3; z++)
        for (int y = 0; y < 3; y++)
            for (int l = 0; l < 2; l++)
                qconv_one(&c, PRECIS_UINT8, Y[y], l == 0, Z[z], l == 1, NULL, NULL, 1 + l,
                          "residual only");
    /* same-kind eltwise pairs with other parameters (oneDNN 2.6 would use
     * the first one's): the encodings must not collide */
    const qact clip_a = {"Clip", -0.5f, 2.0f}, clip_b = {"Clip", 0.0f, 1.0f};
    const qact leaky = {"LeakyRelu", 0.1f, 0}, leaky2 = {"LeakyRelu", 0.3f, 0};
    const qact hsig = {"HardSigmoid", 0.2f, 0.5f};
    qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_INT8, true, &clip_a, &clip_b, 1,
              "clip pair (folded)");
    qconv_one(&c, PRECIS_UINT8, PRECIS_FLOAT32, true, PRECIS_INT8, true, &clip_a, &clip_b, 1,
              "clip pair");
    qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_INT8, false, &leaky, &relu, 2,
              "leaky + relu");
    qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_INT8, false, &relu, &leaky, 2,
              "relu + leaky");
    qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_INT8, true, &hsig, &relu, 1,
              "hardsigmoid (linear) then 1/y_scale");
    qconv_one(&c, PRECIS_UINT8, PRECIS_UINT8, true, PRECIS_FLOAT32, true, &hsig, &clip_b, 1,
              "hardsigmoid, f32 Z, clip, 1/y_scale");
    /* HardSigmoid or LeakyRelu twice with other parameters: no encoding
     * left, declined */
    qnode q;
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_INT8);
    qn_act(&q, "act", "HardSigmoid", 0.2f, 0.5f);
    qn_act(&q, "act2", "HardSigmoid", 0.1f, 0.4f);
    qn_float(&q, "z_scale", ZS);
    qc_in in[5];
    qconv_inputs(&c, PRECIS_UINT8, true, PRECIS_INT8, true, in);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_dnnl_qconv));
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_INT8);
    qn_act(&q, "act", leaky.name, leaky.alpha, 0);
    qn_act(&q, "act2", leaky2.name, leaky2.alpha, 0);
    qn_float(&q, "z_scale", ZS);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_dnnl_qconv));
    /* act2 without Z applies to act's output (the scalar affine after
     * PP-LCNetV3's hardswish), folded or not */
    const qact hsw = {"HardSwish", 0, 0}, aff = {"Affine", 0.8f, -0.3f}, aff0 = {"Affine", 1.7f, 0};
    qconv_one(&c, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_UNDEFINED, true, &hsw, &aff, 1,
              "hardswish + affine, no Z");
    qconv_one(&c, PRECIS_UINT8, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, &relu, &aff, 2,
              "relu + affine (folded), no Z");
    qconv_one(&c, PRECIS_INT8, PRECIS_FLOAT32, true, PRECIS_UNDEFINED, false, &relu, &aff0, 1,
              "relu + scale, f32 out, no Z");
    qconv_one(&dw, PRECIS_UINT8, PRECIS_INT8, true, PRECIS_UNDEFINED, true, &hsw, &aff, 2,
              "dw hardswish + affine, no Z");
    /* an unknown y_type, weights that are not an initializer: declined */
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_INT8);
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_FLOAT32);
    qn_int(&q, "y_type", 6);
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_dnnl_qconv));
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_INT8);
    in[1].init = false;
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_dnnl_qconv));
    in[1].init = true;
    qc_free(in, 5);
}

/* NHWC in, plain out and the reverse, with residuals (transposes in scratch) */
static void test_qconv_mixed_layouts(void) {
    const qconv_case *c = &qconv_cases[2];
    static const pr_dtype ZY[4][2] = {{PRECIS_UNDEFINED, PRECIS_UINT8},
                                      {PRECIS_INT8, PRECIS_INT8},
                                      {PRECIS_UINT8, PRECIS_FLOAT32},
                                      {PRECIS_FLOAT32, PRECIS_INT8}};
    for (int v = 0; v < 4; v++)
        for (int l = 0; l < 2; l++) {
            qnode q;
            qconv_node(&q, c, PRECIS_UINT8, ZY[v][1]);
            qn_act(&q, "act", "Relu", 0, 0);
            if (ZY[v][0] == PRECIS_INT8 || ZY[v][0] == PRECIS_UINT8) qn_float(&q, "z_scale", ZS);
            qc_in in[5];
            qconv_inputs(c, PRECIS_UINT8, true, ZY[v][0], !l, in);
            in[0].nhwc = l; /* X in the other layout than Y (and Z) */
            char label[96];
            snprintf(label, sizeof label, "qconv %s in, %s out, z %s -> %s", l ? "nhwc" : "plain",
                     l ? "plain" : "nhwc", dn(ZY[v][0]), dn(ZY[v][1]));
            qc_run(&q.t, ZY[v][0] != PRECIS_UNDEFINED ? 5 : 4, in, 1, !l, &pr_cpu_impl_dnnl_qconv,
                   1 + l, 1, false, label);
            qc_free(in, 5);
        }
}

/* w_scale entries of 0 (an all-zero channel): the output is the bias */
static void test_qconv_zero_scale(void) {
    const qconv_case *c = &qconv_cases[1];
    qnode q;
    qconv_node(&q, c, PRECIS_UINT8, PRECIS_FLOAT32);
    qc_in in[5];
    qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    float *ws = in[2].data;
    ws[0] = ws[5] = ws[c->M - 1] = 0.0f;
    qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_dnnl_qconv, 1, 1, false, "qconv zero w_scale");
    qconv_node(&q, c, PRECIS_UINT8, PRECIS_INT8);
    qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_dnnl_qconv, 2, 1, false, "qconv zero w_scale int8");
    qc_free(in, 5);
}

#define SYM(i) pr_dim_from_sym(i)

static void test_qconv_symbolic(void) {
    static const qconv_case c = {"sym", 1, 8, 10, 10, 12, 3, 3, 1, 2, 2, 1, 1, {0}, "SAME_UPPER"};
    qnode q;
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_UINT8);
    qn_act(&q, "act", "Relu", 0, 0);
    qc_in in[5];
    qconv_inputs(&c, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    qc_in gin[4];
    memcpy(gin, in, sizeof gin);
    gin[0].dims[0] = SYM(0);
    gin[0].dims[2] = SYM(1);
    gin[0].dims[3] = SYM(2);
    static const int64_t shapes[5][4] = {
        {1, 8, 10, 10}, {2, 8, 7, 9}, {1, 8, 10, 10}, {3, 8, 1, 33}, {1, 8, 32, 32}};
    for (int th = 2; th >= 1; th--) {
        qc_prep p;
        qc_threads = 2;
        if (qc_prepare(&p, &q.t, 4, gin, 1, true, &pr_cpu_impl_dnnl_qconv, 2, "qconv symbolic")) {
            qc_threads = th;
            for (int s = 0; s < 5; s++) {
                qc_in x = q_act("x", 4, shapes[s], PRECIS_UINT8, true);
                qc_in run[4] = {x, in[1], in[2], in[3]};
                char label[96];
                snprintf(label, sizeof label, "qconv symbolic shape %d %dt", s, th);
                qc_exec(&p, run, -1, PRECIS_UNDEFINED, 1, false, label);
                free(x.data);
            }
        }
        qc_release(&p);
    }
    qc_free(in, 5);
}

/* The output in Z's buffer (the planner's in-place case). */
static void test_qconv_inplace(void) {
    static const qconv_case c = {"inplace", 1, 16, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1},
                                 NULL};
    const qact relu = ACTS[0];
    static const pr_dtype ZY[3][2] = {{PRECIS_INT8, PRECIS_INT8},
                                      {PRECIS_UINT8, PRECIS_INT8},
                                      {PRECIS_FLOAT32, PRECIS_FLOAT32}};
    for (int v = 0; v < 6; v++) {
        bool nhwc = v < 3;
        qnode q;
        qconv_node(&q, &c, PRECIS_UINT8, ZY[v % 3][1]);
        qn_act(&q, "act", relu.name, 0, 0);
        qn_act(&q, "act2", relu.name, 0, 0);
        if (ZY[v % 3][0] != PRECIS_FLOAT32) qn_float(&q, "z_scale", ZS);
        qc_in in[5];
        qconv_inputs(&c, PRECIS_UINT8, true, ZY[v % 3][0], nhwc, in);
        qc_prep p;
        qc_threads = 1;
        if (qc_prepare(&p, &q.t, 5, in, 1, nhwc, &pr_cpu_impl_dnnl_qconv, 1, "qconv in place")) {
            CHECK(pr_cpu_impl_dnnl_qconv.inplace_input(p.gi, &p.gi->nodes[0]) == 4);
            qc_exec(&p, in, 4, PRECIS_UNDEFINED, 1, false, "qconv in place");
        }
        qc_release(&p);
        qc_free(in, 5);
    }
    /* no sharing where Z and Y differ in size */
    qnode q;
    qconv_node(&q, &c, PRECIS_UINT8, PRECIS_INT8);
    qc_in in[5];
    qconv_inputs(&c, PRECIS_UINT8, true, PRECIS_FLOAT32, true, in);
    cc_input cc[5];
    pr_dtype dt[5];
    float *fd[5];
    to_cc(in, 5, cc, dt, fd, true);
    pr_graph *g = cc_graph(&q.t, 5, cc, dt, fd, 1, (bool[]){true}, true);
    CHECK(pr_cpu_impl_dnnl_qconv.inplace_input(g, &g->nodes[0]) == -1);
    pr_graph_destroy(g);
    qc_free(in, 5);
}

/* ------------------------------------------------------------ QMatMul */

typedef struct qmm_case {
    const char *name;
    int ra, rb;
    int64_t a[4], b[4]; /* stored dims */
    pr_dtype adt;
    bool binit, ta, tb, per_col, bias;
    float alpha;
    pr_dtype ydt, zdt;
    const char *act, *act2;
} qmm_case;

static const qmm_case qmm_cases[] = {
    {"2-D weights, per column, bias", 2, 2, {7, 40}, {40, 24}, PRECIS_UINT8, true, false, false,
     true, true, 1.0f, PRECIS_INT8, PRECIS_UNDEFINED, NULL, NULL},
    {"rank 3 x transB, scalar scale", 3, 2, {2, 5, 40}, {24, 40}, PRECIS_INT8, true, false, true,
     false, true, 1.0f, PRECIS_FLOAT32, PRECIS_UNDEFINED, NULL, NULL},
    {"transA, alpha, relu", 2, 2, {40, 7}, {40, 24}, PRECIS_UINT8, true, true, false, true, false,
     0.5f, PRECIS_UINT8, PRECIS_UNDEFINED, "Relu", NULL},
    {"odd K 13 N 9, gelu, Z int8, tanh", 2, 2, {3, 13}, {13, 9}, PRECIS_UINT8, true, false, false,
     true, true, 1.0f, PRECIS_INT8, PRECIS_INT8, "Gelu", "Tanh"},
    {"s8 x 64x33, Z f32", 2, 2, {6, 64}, {64, 33}, PRECIS_INT8, true, false, false, true, true,
     1.0f, PRECIS_FLOAT32, PRECIS_FLOAT32, NULL, NULL},
    {"sigmoid, f32 Z into int8", 2, 2, {4, 32}, {32, 16}, PRECIS_UINT8, true, false, false, true,
     true, 1.0f, PRECIS_INT8, PRECIS_FLOAT32, "Sigmoid", NULL},
    {"Z uint8 into f32, swish", 3, 2, {2, 3, 48}, {20, 48}, PRECIS_UINT8, true, false, true, true,
     true, 2.0f, PRECIS_FLOAT32, PRECIS_UINT8, "Swish", "Relu"},
    {"gemv 1x256x64", 3, 2, {1, 1, 256}, {256, 64}, PRECIS_UINT8, true, false, false, true, true,
     1.0f, PRECIS_UINT8, PRECIS_UNDEFINED, "HardSwish", NULL},
    {"attention scores s8 x s8, alpha", 4, 4, {2, 3, 6, 16}, {2, 3, 16, 5}, PRECIS_INT8, false,
     false, false, false, false, 0.25f, PRECIS_FLOAT32, PRECIS_UNDEFINED, NULL, NULL},
    {"P.V u8 x s8", 4, 4, {2, 3, 6, 5}, {2, 3, 5, 16}, PRECIS_UINT8, false, false, false, false,
     false, 1.0f, PRECIS_INT8, PRECIS_UNDEFINED, NULL, NULL},
    {"broadcast batch", 4, 4, {2, 1, 6, 16}, {1, 3, 16, 5}, PRECIS_UINT8, false, false, false,
     false, false, 1.0f, PRECIS_INT8, PRECIS_UNDEFINED, NULL, NULL},
    {"activation transB per column bias relu", 2, 2, {9, 12}, {7, 12}, PRECIS_UINT8, false, false,
     true, true, true, 1.0f, PRECIS_UINT8, PRECIS_UNDEFINED, "Relu", NULL},
    {"batched x 2-D activation, Z int8", 3, 2, {3, 4, 8}, {8, 5}, PRECIS_INT8, false, false, false,
     true, false, 1.0f, PRECIS_INT8, PRECIS_INT8, NULL, "Relu"},
};

static void qmm_node(qnode *q, const qmm_case *c) {
    qn_init(q, PR_OP_QMatMul, "QMatMul", 1, true);
    qn_float(q, "a_scale", c->adt == PRECIS_UINT8 ? XS_U8 : XS_S8);
    if (c->ta) qn_int(q, "transA", 1);
    if (c->tb) qn_int(q, "transB", 1);
    if (c->alpha != 1.0f) qn_float(q, "alpha", c->alpha);
    if (c->ydt != PRECIS_FLOAT32) {
        qn_int(q, "y_type", c->ydt);
        qn_float(q, "y_scale", YS);
    }
    if (c->act) qn_act(q, "act", c->act, 0.1f, 0.5f);
    if (c->act2) qn_act(q, "act2", c->act2, 0.1f, 0.5f);
    if (c->zdt == PRECIS_INT8 || c->zdt == PRECIS_UINT8) qn_float(q, "z_scale", ZS);
}

/* A, B, b_scale, bias, Z; returns the input count */
static int qmm_inputs(const qmm_case *c, qc_in *in) {
    memset(in, 0, 5 * sizeof *in);
    in[0] = q_act("a", c->ra, c->a, c->adt, false);
    int64_t K = c->tb ? c->b[c->rb - 1] : c->b[c->rb - 2];
    int64_t N = c->tb ? c->b[c->rb - 2] : c->b[c->rb - 1];
    if (c->binit) {
        void *w = rnd_data(PRECIS_INT8, pr_numel(c->rb, c->b), -127, 127, 0, 0);
        in[1] = q_init("b", c->rb, c->b, PRECIS_INT8, w);
        free(w);
    } else {
        in[1] = q_act("b", c->rb, c->b, PRECIS_INT8, false);
    }
    int64_t ns = c->per_col ? N : 1;
    float *v = malloc((size_t)N * sizeof *v);
    for (int64_t i = 0; i < ns; i++) v[i] = (0.5f + cc_rand(0, 1)) / (127.0f * sqrtf((float)K));
    in[2] = q_init("b_scale", 1, (int64_t[]){ns}, PRECIS_FLOAT32, v);
    if (c->bias) {
        for (int64_t i = 0; i < N; i++) v[i] = cc_rand(-1, 1);
        in[3] = q_init("bias", 1, (int64_t[]){N}, PRECIS_FLOAT32, v);
    }
    free(v);
    if (c->zdt == PRECIS_UNDEFINED) return c->bias ? 4 : 3;
    /* Y's dims */
    int R = c->ra > c->rb ? c->ra : c->rb;
    int64_t ad[4], bd[4], yd[4];
    for (int i = 0; i < R; i++) {
        ad[i] = i < R - c->ra ? 1 : c->a[i - (R - c->ra)];
        bd[i] = i < R - c->rb ? 1 : c->b[i - (R - c->rb)];
        yd[i] = ad[i] > bd[i] ? ad[i] : bd[i];
    }
    yd[R - 2] = c->ta ? c->a[1] : ad[R - 2];
    yd[R - 1] = N;
    if (c->binit) { /* constant B: Y has A's rank */
        R = c->ra;
        for (int i = 0; i < R - 1; i++) yd[i] = c->a[i];
        if (c->ta) yd[0] = c->a[1];
        yd[R - 1] = N;
    }
    in[4] = q_act("z", R, yd, c->zdt, false);
    return 5;
}

static void test_qmatmul(void) {
    for (size_t i = 0; i < sizeof qmm_cases / sizeof qmm_cases[0]; i++) {
        const qmm_case *c = &qmm_cases[i];
        for (int th = 1; th <= 2; th++) {
            qnode q;
            qmm_node(&q, c);
            qc_in in[5];
            int n_in = qmm_inputs(c, in);
            char label[160];
            snprintf(label, sizeof label, "qmatmul %s [%s->%s %dt]", c->name, dn(c->adt),
                     dn(c->ydt), th);
            qc_run(&q.t, n_in, in, 1, false, &pr_cpu_impl_dnnl_qmatmul, th, 1, false, label);
            qc_free(in, 5);
        }
    }
    /* every activation on constant B, int8 out */
    for (int a = 0; a < N_ACTS; a++) {
        qmm_case c = qmm_cases[0];
        c.act = ACTS[a].name;
        c.zdt = a % 2 ? PRECIS_INT8 : PRECIS_UNDEFINED;
        c.act2 = a % 2 ? "Relu" : NULL;
        c.ydt = a % 3 == 2 ? PRECIS_FLOAT32 : PRECIS_INT8;
        qnode q;
        qmm_node(&q, &c);
        qc_in in[5];
        int n_in = qmm_inputs(&c, in);
        char label[160];
        snprintf(label, sizeof label, "qmatmul act %s%s", c.act, c.act2 ? " + Z + relu" : "");
        qc_run(&q.t, n_in, in, 1, false, &pr_cpu_impl_dnnl_qmatmul, 1, 1, false, label);
        qc_free(in, 5);
    }
    /* zero column scales with a bias (constant B): the bias alone */
    {
        qmm_case c = qmm_cases[0];
        c.ydt = PRECIS_FLOAT32;
        qnode q;
        qmm_node(&q, &c);
        qc_in in[5];
        int n_in = qmm_inputs(&c, in);
        float *bs = in[2].data;
        bs[0] = bs[3] = bs[23] = 0.0f;
        qc_run(&q.t, n_in, in, 1, false, &pr_cpu_impl_dnnl_qmatmul, 1, 1, false,
               "qmatmul zero b_scale");
        /* the same with an activation B is declined */
        in[1].init = false;
        CHECK(!qc_supports(&q.t, n_in, in, false, &pr_cpu_impl_dnnl_qmatmul));
        /* uint8 B is declined (oneDNN takes s8 weights) */
        in[1].init = true;
        in[1].dt = PRECIS_UINT8;
        CHECK(!qc_supports(&q.t, n_in, in, false, &pr_cpu_impl_dnnl_qmatmul));
        in[1].dt = PRECIS_INT8;
        qc_free(in, 5);
    }
    /* symbolic batch and sequence: constant B made per M */
    {
        qmm_case c = {"sym", 3, 2, {1, 5, 32}, {32, 20}, PRECIS_UINT8, true, false, false, true,
                      true, 1.0f, PRECIS_INT8, PRECIS_UNDEFINED, "Gelu", NULL};
        qnode q;
        qmm_node(&q, &c);
        qc_in in[5];
        int n_in = qmm_inputs(&c, in);
        qc_in gin[4];
        memcpy(gin, in, sizeof gin);
        gin[0].dims[0] = SYM(0);
        gin[0].dims[1] = SYM(1);
        qc_prep p;
        qc_threads = 1;
        if (qc_prepare(&p, &q.t, n_in, gin, 1, false, &pr_cpu_impl_dnnl_qmatmul, 1,
                       "qmatmul symbolic")) {
            static const int64_t shapes[4][3] = {{1, 5, 32}, {2, 7, 32}, {1, 1, 32}, {4, 33, 32}};
            for (int s = 0; s < 4; s++) {
                qc_threads = 1 + s % 2;
                qc_in a = q_act("a", 3, shapes[s], PRECIS_UINT8, false);
                qc_in run[4] = {a, in[1], in[2], in[3]};
                char label[64];
                snprintf(label, sizeof label, "qmatmul symbolic shape %d", s);
                qc_exec(&p, run, -1, PRECIS_UNDEFINED, 1, false, label);
                free(a.data);
            }
        }
        qc_release(&p);
        qc_free(in, 5);
    }
}

/* ------------------------------------------------- quantize / dequantize */

/* values that probe rounding: exact ties, NaN, infinities, huge, -0, tiny */
static void fill_special(pr_dtype dt, void *d, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++) {
        float v;
        switch (i % 11) {
        case 0: v = ((float)(i % 300) - 150.0f + 0.5f) * scale; break; /* ties */
        case 1: v = NAN; break;
        case 2: v = (i & 1) ? INFINITY : -INFINITY; break;
        case 3: v = (i & 2) ? 1e30f : -1e30f; break;
        case 4: v = -0.0f; break;
        case 5: v = 1e-40f; break;
        default: v = cc_rand(-200, 200) * scale; break;
        }
        pr_store_f64(d, dt, i, v);
    }
}

static void test_quant(void) {
    static const pr_dtype FT[3] = {PRECIS_FLOAT32, PRECIS_BFLOAT16, PRECIS_FLOAT16};
    static const int64_t sizes[5] = {1, 17, 64, 1000, 100003};
    static const float scales[2] = {0.0625f, 0.0371f};
    int k = 0;
    for (int f = 0; f < 3; f++)
        for (int z = 0; z < 3; z++) /* zero point: none (uint8), int8 0, uint8 0 */
            for (int si = 0; si < 5; si++, k++) {
                pr_dtype zdt = z == 1 ? PRECIS_INT8 : PRECIS_UINT8;
                float sc = scales[k % 2];
                qnode q;
                qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
                qc_in in[3];
                memset(in, 0, sizeof in);
                in[0] = q_act("x", 1, &sizes[si], FT[f], false);
                fill_special(FT[f], in[0].data, sizes[si], sc);
                in[1] = q_init("s", 0, NULL, PRECIS_FLOAT32, &sc);
                uint8_t zero = 0;
                if (z) in[2] = q_init("zp", 0, NULL, zdt, &zero);
                char label[96];
                snprintf(label, sizeof label, "quantize %s -> %s n=%lld", dn(FT[f]), dn(zdt),
                         (long long)sizes[si]);
                qc_run(&q.t, z ? 3 : 2, in, 1, false, &pr_cpu_impl_quantize, 1 + k % 2, 0, true,
                       label);
                qc_free(in, 3);
            }
    /* values a few ulps around x / scale = half-integers (and the clamp
     * bounds' halves): the multiply by 1 / scale (k_quant.c quant16r) must
     * give the division's bytes; scales with inexact reciprocals */
    {
        static const float nsc[5] = {0.0371f, 0.1f, 1.0f / 3.0f, 0.007f, 13.7f};
        const int64_t n = 60000;
        for (int si = 0; si < 5; si++)
            for (int z = 0; z < 2; z++) {
                const float sc = nsc[si];
                qnode q;
                qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
                qc_in in[3];
                memset(in, 0, sizeof in);
                in[0] = q_act("x", 1, &n, PRECIS_FLOAT32, false);
                float *x = in[0].data;
                for (int64_t i = 0; i < n; i++) {
                    float v = ((float)(i % 600) - 300.0f + 0.5f) * sc;
                    for (int64_t u = (i / 600) % 13 - 6; u != 0; u += u > 0 ? -1 : 1)
                        v = nextafterf(v, u > 0 ? INFINITY : -INFINITY);
                    x[i] = v;
                }
                in[1] = q_init("s", 0, NULL, PRECIS_FLOAT32, &sc);
                const uint8_t zero = 0;
                in[2] = q_init("zp", 0, NULL, z ? PRECIS_INT8 : PRECIS_UINT8, &zero);
                char label[96];
                snprintf(label, sizeof label, "quantize near halves scale %g -> %s", (double)sc,
                         z ? "int8" : "uint8");
                qc_run(&q.t, 3, in, 1, false, &pr_cpu_impl_quantize, 1 + si % 2, 0, true, label);
                qc_free(in, 3);
            }
    }
    /* the division-free correction (k_quant.c quant16m): 64 random scales
     * (random mantissas, exponents 2^-12 .. 2^6), x = fl(h scale) for
     * half-integers h up to +-300 and +-0..3 ulps around it, x = h scale
     * made exact where the product is (h scale's ulp), |x / scale| near
     * 2^20 (where the correction stops) and beyond, against ref's division */
    {
        const int64_t n = 24000;
        for (int si = 0; si < 64; si++) {
            const float sc = ldexpf(1.0f + cc_rand(0, 1), (si * 7) % 19 - 12);
            qnode q;
            qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
            qc_in in[3];
            memset(in, 0, sizeof in);
            in[0] = q_act("x", 1, &n, PRECIS_FLOAT32, false);
            float *x = in[0].data;
            for (int64_t i = 0; i < n; i++) {
                float v;
                if (i % 97 == 0) { /* around 2^20 and far past it */
                    v = ldexpf(1.0f + cc_rand(-0.01f, 0.01f), 20 + (int)(i % 5) - 2) * sc;
                    if (i & 1) v = -v;
                } else {
                    const float h = (float)(i % 601) - 300.5f;
                    v = h * sc;
                    for (int64_t u = (i / 601) % 7 - 3; u != 0; u += u > 0 ? -1 : 1)
                        v = nextafterf(v, u > 0 ? INFINITY : -INFINITY);
                }
                x[i] = v;
            }
            in[1] = q_init("s", 0, NULL, PRECIS_FLOAT32, &sc);
            const uint8_t zero = 0;
            in[2] = q_init("zp", 0, NULL, si % 2 ? PRECIS_INT8 : PRECIS_UINT8, &zero);
            char label[96];
            snprintf(label, sizeof label, "quantize halves, random scale %a", (double)sc);
            qc_run(&q.t, 3, in, 1, false, &pr_cpu_impl_quantize, 1, 0, true, label);
            qc_free(in, 3);
        }
    }
    /* NHWC tensors (layout-agnostic), 2 threads */
    {
        qnode q;
        qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
        float sc = 0.05f;
        int8_t zero = 0;
        qc_in in[3] = {q_act("x", 4, (int64_t[]){2, 19, 33, 31}, PRECIS_FLOAT32, true),
                       q_init("s", 0, NULL, PRECIS_FLOAT32, &sc),
                       q_init("zp", 0, NULL, PRECIS_INT8, &zero)};
        qc_run(&q.t, 3, in, 1, true, &pr_cpu_impl_quantize, 2, 0, true, "quantize nhwc");
        qn_init(&q, PR_OP_DequantizeLinear, "DequantizeLinear", 13, false);
        qc_in d[3] = {q_act("x", 4, (int64_t[]){2, 19, 33, 31}, PRECIS_INT8, true), in[1], in[2]};
        qc_run(&q.t, 3, d, 1, true, &pr_cpu_impl_dequantize, 2, 0, true, "dequantize nhwc");
        free(d[0].data);
        /* declined: a zero point that is not 0, a per-axis scale, scale 0 */
        qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
        ((int8_t *)in[2].data)[0] = 3;
        CHECK(!qc_supports(&q.t, 3, in, true, &pr_cpu_impl_quantize));
        ((int8_t *)in[2].data)[0] = 0;
        CHECK(qc_supports(&q.t, 3, in, true, &pr_cpu_impl_quantize));
        float s19[19];
        for (int i = 0; i < 19; i++) s19[i] = 0.1f;
        qc_in pa[2] = {in[0], q_init("s", 1, (int64_t[]){19}, PRECIS_FLOAT32, s19)};
        CHECK(!qc_supports(&q.t, 2, pa, true, &pr_cpu_impl_quantize));
        free(pa[1].data);
        /* per channel of the last axis of a plain tensor (smoothed activations): exact vs
         * ref, int8 and uint8, C = 37 (a 16-lane tail) and 64, 1 and 2 threads */
        for (int c = 0; c < 4; c++) {
            int64_t C = c % 2 ? 64 : 37;
            pr_dtype zdt = c < 2 ? PRECIS_INT8 : PRECIS_UINT8;
            float *sv = malloc((size_t)C * sizeof *sv);
            uint8_t *zv = calloc((size_t)C, 1);
            for (int64_t i = 0; i < C; i++) sv[i] = 0.003f * (float)(1 + (i * 7) % 23);
            qnode pq;
            qn_init(&pq, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
            pr_attr *ax = qn_attr(&pq, "axis", PR_ATTR_INT);
            ax->i = c == 3 ? -1 : 2;
            qc_in pc[3] = {q_act("x", 3, (int64_t[]){2, 5, C}, PRECIS_FLOAT32, false),
                           q_init("s", 1, (int64_t[]){C}, PRECIS_FLOAT32, sv),
                           q_init("zp", 1, (int64_t[]){C}, zdt, zv)};
            fill_special(PRECIS_FLOAT32, pc[0].data, 2 * 5 * C, 0.05f);
            char label[64];
            snprintf(label, sizeof label, "quantize per channel C=%lld %s", (long long)C,
                     dn(zdt));
            CHECK(qc_supports(&pq.t, 3, pc, false, &pr_cpu_impl_quantize));
            qc_run(&pq.t, 3, pc, 1, false, &pr_cpu_impl_quantize, 1 + c % 2, 0, true, label);
            /* declined: another axis, a non-zero zero point, a zero scale */
            ax->i = 1;
            CHECK(!qc_supports(&pq.t, 3, pc, false, &pr_cpu_impl_quantize));
            ax->i = 2;
            ((uint8_t *)pc[2].data)[3] = 1;
            CHECK(!qc_supports(&pq.t, 3, pc, false, &pr_cpu_impl_quantize));
            ((uint8_t *)pc[2].data)[3] = 0;
            ((float *)pc[1].data)[5] = 0.0f;
            CHECK(!qc_supports(&pq.t, 3, pc, false, &pr_cpu_impl_quantize));
            qc_free(pc, 3);
            free(sv);
            free(zv);
        }
        *(float *)in[1].data = 0.0f;
        CHECK(!qc_supports(&q.t, 2, in, true, &pr_cpu_impl_quantize));
        qc_free(in, 3);
    }
    /* a plain float32 input quantized into an NHWC output (a plan's input):
     * 1-5 channels (vpermb interleave up to 4), 8, 16 and 19 (tile
     * transpose), pieces of 1024 pixels and a tail, batch 2, int8 and uint8 */
    static const int QC[] = {1, 2, 3, 4, 5, 8, 16, 19};
    for (size_t ci = 0; ci < sizeof QC / sizeof QC[0]; ci++)
        for (int z = 0, c = QC[ci]; z < 2; z++) {
            qnode q;
            qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
            float sc = 0.031f;
            uint8_t zero = 0;
            qc_in in[3] = {q_act("x", 4, (int64_t[]){2, c, 37, 41}, PRECIS_FLOAT32, false),
                           q_init("s", 0, NULL, PRECIS_FLOAT32, &sc),
                           q_init("zp", 0, NULL, z ? PRECIS_INT8 : PRECIS_UINT8, &zero)};
            fill_special(PRECIS_FLOAT32, in[0].data, 2 * c * 37 * 41, sc);
            char label[96];
            snprintf(label, sizeof label, "quantize plain -> nhwc C=%d %s", c, z ? "int8" : "uint8");
            qc_run(&q.t, 3, in, 1, true, &pr_cpu_impl_quantize, 1 + c % 2, 0, true, label);
            if (c == 3) { /* not for DequantizeLinear, nor from bfloat16 */
                qn_init(&q, PR_OP_DequantizeLinear, "DequantizeLinear", 13, false);
                qc_in d[3] = {q_act("x", 4, (int64_t[]){2, c, 37, 41}, PRECIS_INT8, false), in[1],
                              in[2]};
                d[2].dt = PRECIS_INT8;
                CHECK(!qc_supports(&q.t, 3, d, true, &pr_cpu_impl_dequantize));
                free(d[0].data);
                qn_init(&q, PR_OP_QuantizeLinear, "QuantizeLinear", 13, false);
                qc_in b[2] = {q_act("x", 4, (int64_t[]){2, c, 37, 41}, PRECIS_BFLOAT16, false),
                              in[1]};
                CHECK(!qc_supports(&q.t, 2, b, true, &pr_cpu_impl_quantize));
                free(b[0].data);
            }
            qc_free(in, 3);
        }
    /* dequantize: every byte value, float32/bfloat16/float16 outputs */
    k = 0;
    for (int x = 0; x < 2; x++)
        for (int f = 0; f < 3; f++)
            for (int si = 0; si < 5; si++, k++) {
                pr_dtype xdt = x ? PRECIS_INT8 : PRECIS_UINT8;
                float sc = k % 2 ? 0.0371f : 3.1e-3f;
                qnode q;
                qn_init(&q, PR_OP_DequantizeLinear, "DequantizeLinear", 13, false);
                qc_in in[3];
                memset(in, 0, sizeof in);
                in[0] = q_act("x", 1, &sizes[si], xdt, false);
                for (int64_t i = 0; i < sizes[si] && i < 256; i++)
                    ((uint8_t *)in[0].data)[i] = (uint8_t)i;
                in[1] = q_init("s", 0, NULL, PRECIS_FLOAT32, &sc);
                uint8_t zero = 0;
                if (k % 3 == 0) in[2] = q_init("zp", 0, NULL, xdt, &zero);
                qc_prep p;
                char label[96];
                snprintf(label, sizeof label, "dequantize %s -> %s n=%lld", dn(xdt), dn(FT[f]),
                         (long long)sizes[si]);
                qc_threads = 1 + k % 2;
                if (qc_prepare(&p, &q.t, in[2].name ? 3 : 2, in, 1, false,
                               &pr_cpu_impl_dequantize, qc_threads, label))
                    qc_exec(&p, in, -1, FT[f], 0, true, label);
                qc_release(&p);
                qc_free(in, 3);
            }
}

/* ------------------------------------------------------------ moves, pools */

static void test_move(void) {
    static const pr_dtype QT[2] = {PRECIS_INT8, PRECIS_UINT8};
    const pr_cpu_impl *mv = &pr_cpu_impl_move;
    for (int d = 0; d < 2; d++) {
        pr_dtype dt = QT[d];
        for (int l = 0; l < 2; l++) {
            int th = 1 + (d + l) % 2;
            /* Concat along channels, and along W */
            for (int ax = 1; ax <= 3; ax += 2) {
                qnode q;
                qn_init(&q, PR_OP_Concat, "Concat", 13, false);
                qn_int(&q, "axis", ax);
                int64_t a[4] = {2, 5, 7, 9}, b[4] = {2, 3, 7, 9}, c[4] = {2, 17, 7, 9};
                if (ax == 3) a[1] = b[1] = c[1] = 6, b[3] = 70, c[3] = 1;
                qc_in in[3] = {q_act("a", 4, a, dt, l), q_act("b", 4, b, dt, l),
                               q_act("c", 4, c, dt, l)};
                char label[96];
                snprintf(label, sizeof label, "concat %s axis %d %s", dn(dt), ax, l ? "nhwc" : "");
                qc_run(&q.t, 3, in, 1, l, mv, th, 0, true, label);
                qc_free(in, 3);
            }
            { /* channel blocks of 16, 32, 64 bytes: the one-move rows of k_move.c */
                qnode q;
                qn_init(&q, PR_OP_Concat, "Concat", 13, false);
                qn_int(&q, "axis", 1);
                qc_in in[3] = {q_act("a", 4, (int64_t[]){2, 16, 7, 9}, dt, l),
                               q_act("b", 4, (int64_t[]){2, 32, 7, 9}, dt, l),
                               q_act("c", 4, (int64_t[]){2, 64, 7, 9}, dt, l)};
                qc_run(&q.t, 3, in, 1, l, mv, th, 0, true, "concat 16/32/64 channels");
                qc_free(in, 3);
            }
            /* Slice of a rank-4 tensor, Split along channels */
            {
                qnode q;
                qn_init(&q, PR_OP_Slice, "Slice", 13, false);
                int64_t st[3] = {3, 1, -2}, en[3] = {19, 8, 0}, ax[3] = {1, 2, 3}, sp[3] = {2, 1, -3};
                qc_in in[5] = {q_act("x", 4, (int64_t[]){2, 20, 9, 41}, dt, l),
                               q_init("starts", 1, (int64_t[]){3}, PRECIS_INT64, st),
                               q_init("ends", 1, (int64_t[]){3}, PRECIS_INT64, en),
                               q_init("axes", 1, (int64_t[]){3}, PRECIS_INT64, ax),
                               q_init("steps", 1, (int64_t[]){3}, PRECIS_INT64, sp)};
                qc_run(&q.t, 5, in, 1, l, mv, th, 0, true, l ? "slice int8 nhwc" : "slice int8");
                qc_free(in, 5);
                qn_init(&q, PR_OP_Split, "Split", 13, false);
                qn_int(&q, "axis", 1);
                int64_t sz[2] = {5, 7};
                qc_in si[2] = {q_act("x", 4, (int64_t[]){2, 12, 5, 37}, dt, l),
                               q_init("split", 1, (int64_t[]){2}, PRECIS_INT64, sz)};
                qc_run(&q.t, 2, si, 2, l, mv, th, 0, true, l ? "split int8 nhwc" : "split int8");
                qc_free(si, 2);
            }
            /* DepthToSpace (INT8 plans of deconv_s2d's 1x1 convs) */
            for (int m = 0; m < 2; m++) {
                qnode q;
                qn_init(&q, PR_OP_DepthToSpace, "DepthToSpace", 13, false);
                qn_int(&q, "blocksize", 2);
                qn_str(&q, "mode", m ? "CRD" : "DCR");
                qc_in in[1] = {q_act("x", 4, (int64_t[]){2, 36, 5, 9}, dt, l)};
                char label[96];
                snprintf(label, sizeof label, "depth_to_space %s %s %s", m ? "CRD" : "DCR", dn(dt),
                         l ? "nhwc" : "plain");
                qc_run(&q.t, 1, in, 1, l, mv, th, 0, true, label);
                qc_free(in, 1);
            }
            /* Reorder plain <-> NHWC (tiles of 16 and tails) */
            {
                qnode q;
                qn_init(&q, PR_OP_Reorder, "Reorder", 1, true);
                qn_str(&q, "to", l ? "plain" : "nhwc");
                qc_in in[1] = {q_act("x", 4, (int64_t[]){2, 37, 17, 19}, dt, l)};
                qc_run(&q.t, 1, in, 1, !l, mv, th, 0, true, l ? "reorder to plain" : "reorder to nhwc");
                qc_free(in, 1);
            }
        }
        /* Transposes that move the innermost dim, and one that keeps it */
        static const struct {
            int rank;
            int64_t dims[4];
            int64_t perm[4];
        } tp[] = {
            {4, {2, 37, 19, 23}, {0, 2, 3, 1}}, {4, {2, 37, 19, 23}, {0, 3, 1, 2}},
            {2, {33, 47}, {1, 0}},              {3, {5, 64, 48}, {2, 0, 1}},
            {3, {4, 5, 6}, {1, 0, 2}},
        };
        for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++) {
            qnode q;
            qn_init(&q, PR_OP_Transpose, "Transpose", 13, false);
            qn_ints(&q, "perm", tp[i].perm, tp[i].rank);
            qc_in in[1] = {q_act("x", tp[i].rank, tp[i].dims, dt, false)};
            char label[64];
            snprintf(label, sizeof label, "transpose %s %zu", dn(dt), i);
            qc_run(&q.t, 1, in, 1, false, mv, 1 + (int)i % 2, 0, true, label);
            qc_free(in, 1);
        }
        /* Reshape */
        qnode q;
        qn_init(&q, PR_OP_Reshape, "Reshape", 13, false);
        int64_t shp[2] = {6, -1};
        qc_in in[2] = {q_act("x", 3, (int64_t[]){2, 3, 40}, dt, false),
                       q_init("shape", 1, (int64_t[]){2}, PRECIS_INT64, shp)};
        qc_run(&q.t, 2, in, 1, false, mv, 1, 0, true, "reshape int8");
        qc_free(in, 2);
    }
    /* bool moves too */
    qnode q;
    qn_init(&q, PR_OP_Concat, "Concat", 13, false);
    qn_int(&q, "axis", 0);
    qc_in in[2] = {q_act("a", 2, (int64_t[]){3, 5}, PRECIS_UINT8, false),
                   q_act("b", 2, (int64_t[]){2, 5}, PRECIS_UINT8, false)};
    for (int i = 0; i < 2; i++) {
        in[i].dt = PRECIS_BOOL;
        for (int64_t j = 0; j < qc_numel(&in[i]); j++) ((uint8_t *)in[i].data)[j] &= 1;
    }
    qc_run(&q.t, 2, in, 1, false, mv, 1, 0, true, "concat bool");
    qc_free(in, 2);
}

static void test_maxpool(void) {
    static const struct {
        const char *name;
        int64_t dims[4], k, s, p, dil;
        int ceil;
    } pc[] = {
        {"3x3 s2 p1 C80 W70", {2, 80, 33, 70}, 3, 2, 1, 1, 0},
        {"2x2 s2 W130", {1, 16, 16, 130}, 2, 2, 0, 1, 0},
        {"3x3 s1 p1", {1, 8, 9, 9}, 3, 1, 1, 1, 0},
        {"3x3 s2 ceil", {1, 5, 10, 10}, 3, 2, 0, 1, 1},
        {"3x3 dilation 2", {1, 4, 15, 15}, 3, 1, 2, 2, 0},
        {"5x5 s3 p2 W66", {1, 3, 20, 66}, 5, 3, 2, 1, 0},
        {"3x3 s1 p1 wide", {1, 2, 7, 200}, 3, 1, 1, 1, 0},
    };
    static const pr_dtype QT[2] = {PRECIS_INT8, PRECIS_UINT8};
    int k = 0;
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 2; l++, k++) {
                qnode q;
                qn_init(&q, PR_OP_MaxPool, "MaxPool", 12, false);
                qn_ints(&q, "kernel_shape", (int64_t[]){pc[i].k, pc[i].k}, 2);
                qn_ints(&q, "strides", (int64_t[]){pc[i].s, pc[i].s}, 2);
                qn_ints(&q, "pads", (int64_t[]){pc[i].p, pc[i].p, pc[i].p, pc[i].p}, 4);
                if (pc[i].dil != 1) qn_ints(&q, "dilations", (int64_t[]){pc[i].dil, pc[i].dil}, 2);
                if (pc[i].ceil) qn_int(&q, "ceil_mode", 1);
                qc_in in[1] = {q_act("x", 4, pc[i].dims, QT[d], l)};
                char label[96];
                snprintf(label, sizeof label, "maxpool %s %s %s", pc[i].name, dn(QT[d]),
                         l ? "nhwc" : "plain");
                qc_run(&q.t, 1, in, 1, l, &pr_cpu_impl_pool, 1 + k % 2, 0, true, label);
                qc_free(in, 1);
            }
    /* AveragePool on int8 stays with ref */
    qnode q;
    qn_init(&q, PR_OP_AveragePool, "AveragePool", 11, false);
    qn_ints(&q, "kernel_shape", (int64_t[]){2, 2}, 2);
    qc_in in[1] = {q_act("x", 4, (int64_t[]){1, 4, 6, 6}, PRECIS_INT8, false)};
    CHECK(!qc_supports(&q.t, 1, in, false, &pr_cpu_impl_pool));
    qc_free(in, 1);
}

/* Resize nearest on int8 (the FPN upsamplings of INT8 detection plans): a
 * gather, bit-exact against ref; linear on int8 stays with ref. */
static void test_resize_q8(void) {
    static const float up2[4] = {1, 1, 2, 2}, odd[4] = {1, 1, 1.7f, 0.6f};
    static const struct {
        const char *name;
        int64_t dims[4];
        const float *sc;
    } rc[] = {{"x2 C24", {1, 24, 20, 20}, up2}, {"x2 C3 W37", {2, 3, 9, 37}, up2},
              {"1.7x0.6", {1, 16, 11, 13}, odd}};
    static const pr_dtype QT[2] = {PRECIS_INT8, PRECIS_UINT8};
    int k = 0;
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 2; l++, k++) {
                qnode q;
                qn_init(&q, PR_OP_Resize, "Resize", 13, false);
                qn_str(&q, "mode", "nearest");
                qc_in in[3] = {q_act("x", 4, rc[i].dims, QT[d], l), {.name = NULL},
                               q_init("scales", 1, (int64_t[]){4}, PRECIS_FLOAT32, rc[i].sc)};
                char label[96];
                snprintf(label, sizeof label, "resize nearest %s %s %s", rc[i].name, dn(QT[d]),
                         l ? "nhwc" : "plain");
                qc_run(&q.t, 3, in, 1, l, &pr_cpu_impl_resize, 1 + k % 2, 0, true, label);
                qc_free(in, 3);
            }
    qnode q;
    qn_init(&q, PR_OP_Resize, "Resize", 13, false);
    qn_str(&q, "mode", "linear");
    qc_in in[3] = {q_act("x", 4, (int64_t[]){1, 4, 6, 6}, PRECIS_INT8, false), {.name = NULL},
                   q_init("scales", 1, (int64_t[]){4}, PRECIS_FLOAT32, up2)};
    CHECK(!qc_supports(&q.t, 3, in, false, &pr_cpu_impl_resize));
    qc_free(in, 3);
}

/* ------------------------------------------------------------ speed */

/* Median ms of the INT8 conv c: xdt -> uint8, per-channel scales, bias,
 * relu, NHWC. */
#define OH(c) out_dim((c)->H, (c)->kh, (c)->sh, (c)->dh, (c)->pads[0], (c)->pads[2], (c)->auto_pad)
#define OW(c) out_dim((c)->W, (c)->kw, (c)->sw, (c)->dw, (c)->pads[1], (c)->pads[3], (c)->auto_pad)

static double bench_int8(const qconv_case *c, pr_dtype xdt, int th, const pr_cpu_impl *im) {
    pr_err e = {0};
    double ms = 0;
    qnode q;
    qconv_node(&q, c, xdt, PRECIS_UINT8);
    qn_act(&q, "act", "Relu", 0, 0);
    qc_in in[5];
    qconv_inputs(c, xdt, true, PRECIS_UNDEFINED, true, in);
    qc_prep p;
    if (qc_prepare(&p, &q.t, 4, in, 1, true, im, th, "bench qconv")) {
        pr_buf b[4], y;
        const pr_buf *bp[4];
        for (int i = 0; i < 4; i++) {
            pr_buf_alloc(&b[i], in[i].dt, in[i].rank, in[i].dims, "in", &e);
            memcpy(b[i].data, in[i].data, b[i].nbytes);
            bp[i] = &b[i];
        }
        pr_buf_alloc(&y, PRECIS_UINT8, 4, (int64_t[]){c->N, c->M, OH(c), OW(c)}, "y", &e);
        ms = time_runs(im, p.state, p.gi, 4, bp, &y, th, 41);
        printf("  %s src: %s\n", dn(xdt), im->describe(p.state));
        for (int i = 0; i < 4; i++) pr_buf_free(&b[i]);
        pr_buf_free(&y);
    }
    qc_release(&p);
    qc_free(in, 5);
    return ms;
}

/* Median ms of the float32 FusedConv (relu, NHWC) of the same shape through
 * dnnl.conv. */
static double bench_fp32(const qconv_case *c, int th) {
    pr_err e = {0};
    double ms = 0;
    tnode t;
    n_init(&t, PR_OP_FusedConv, "FusedConv", 1);
    t.node.domain = PR_FUSED_DOMAIN;
    n_ints(&t, "kernel_shape", (int64_t[]){c->kh, c->kw}, 2);
    n_ints(&t, "pads", c->pads, 4);
    if (c->sh != 1 || c->sw != 1) n_ints(&t, "strides", (int64_t[]){c->sh, c->sw}, 2);
    if (c->group != 1) n_int(&t, "group", c->group);
    n_str(&t, "act", "Relu");
    cc_input fin[3] = {{.name = "x", .rank = 4, .dims = {c->N, c->C, c->H, c->W}, .nhwc = true},
                       {.name = "w", .rank = 4, .dims = {c->M, c->C / c->group, c->kh, c->kw},
                        .init = true},
                       {.name = "b", .rank = 1, .dims = {c->M}, .init = true}};
    int64_t nw = c->M * (c->C / c->group) * c->kh * c->kw;
    float *w = malloc((size_t)nw * sizeof(float)), *bias = malloc((size_t)c->M * sizeof(float));
    for (int64_t i = 0; i < nw; i++) w[i] = cc_rand(-0.1f, 0.1f);
    for (int64_t i = 0; i < c->M; i++) bias[i] = cc_rand(-1, 1);
    float *fd[3] = {NULL, w, bias};
    pr_dtype dts[3] = {PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32};
    pr_graph *g = cc_graph(&t, 3, fin, dts, fd, 1, (bool[]){true}, true);
    void *st = NULL;
    pr_cpu_cfg cfg = {.num_threads = th};
    if (pr_cpu_impl_dnnl_conv.prepare(g, &g->nodes[0], &cfg, &st, &e) == PRECIS_OK) {
        pr_buf xb, yb;
        pr_buf_alloc(&xb, PRECIS_FLOAT32, 4, fin[0].dims, "x", &e);
        pr_buf_alloc(&yb, PRECIS_FLOAT32, 4, (int64_t[]){c->N, c->M, OH(c), OW(c)}, "y", &e);
        for (int64_t i = 0; i < xb.numel; i++) ((float *)xb.data)[i] = cc_rand(0, 4);
        const pr_buf *bp[1] = {&xb};
        ms = time_runs(&pr_cpu_impl_dnnl_conv, st, g, 1, bp, &yb, th, 41);
        printf("  float32: %s\n", pr_cpu_impl_dnnl_conv.describe(st));
        pr_buf_free(&xb);
        pr_buf_free(&yb);
        pr_cpu_impl_dnnl_conv.destroy(st);
    } else {
        fprintf(stderr, "bench: fp32 conv prepare failed: %s\n", e.msg);
    }
    pr_graph_destroy(g);
    free(w);
    free(bias);
    return ms;
}

/* 3x3 64->64 56x56 (ResNet's first stage), 1 and 2 threads. */
static void bench_qconv(void) {
    static const qconv_case c = {"bench", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1},
                                 NULL};
    const double ops = 2.0 * 64 * 64 * 9 * 56 * 56;
    for (int th = 1; th <= 2; th++) {
        double u8 = bench_int8(&c, PRECIS_UINT8, th, &pr_cpu_impl_dnnl_qconv),
               s8 = bench_int8(&c, PRECIS_INT8, th, &pr_cpu_impl_dnnl_qconv);
        double f32 = bench_fp32(&c, th);
        if (u8 > 0 && s8 > 0 && f32 > 0)
            printf("speed 3x3 64->64 56x56 NHWC, %d thread%s: int8 (u8 src) %.3f ms (%.0f GOPS), "
                   "s8 src %.3f ms (%.0f GOPS), fp32 %.3f ms (%.0f GOPS): u8 int8 %.2fx faster "
                   "than fp32\n",
                   th, th > 1 ? "s" : "", u8, ops / u8 * 1e-6, s8, ops / s8 * 1e-6, f32,
                   ops / f32 * 1e-6, f32 / u8);
    }
}

/* Depthwise shapes of CenterFace, EfficientNet-Lite0, PP-OCRv4 rec: qdwconv against
 * dnnl.qconv (u8 and s8 src) and the float32 dnnl.conv, 1 and 2 threads. */
static void bench_qdw(void) {
    static const qconv_case cs[] = {
        {"192ch 40x40 3x3", 1, 192, 40, 40, 192, 3, 3, 192, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"672ch 14x14 5x5 s2", 1, 672, 14, 14, 672, 5, 5, 672, 2, 2, 1, 1, {2, 2, 2, 2}, NULL},
        {"240ch 28x28 5x5", 1, 240, 28, 28, 240, 5, 5, 240, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"480ch 12x80 5x5", 1, 480, 12, 80, 480, 5, 5, 480, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
    };
    qconv_case dummy = cs[0];
    qnode q;
    qconv_node(&q, &dummy, PRECIS_UINT8, PRECIS_UINT8);
    qc_in in[5];
    qconv_inputs(&dummy, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    bool ok = qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv);
    qc_free(in, 5);
    if (!ok) return;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int th = 1; th <= 2; th++) {
            double d[2][2], f32 = bench_fp32(&cs[i], th);
            for (int x = 0; x < 2; x++)
                for (int m = 0; m < 2; m++)
                    d[x][m] = bench_int8(&cs[i], x ? PRECIS_INT8 : PRECIS_UINT8, th,
                                         m ? &pr_cpu_impl_dnnl_qconv : &pr_cpu_impl_qdwconv);
            printf("speed depthwise %s, %d thread%s: qdwconv u8 %.3f s8 %.3f ms, dnnl.qconv u8 "
                   "%.3f s8 %.3f ms, fp32 %.3f ms\n",
                   cs[i].name, th, th > 1 ? "s" : "", d[0][0], d[1][0], d[0][1], d[1][1], f32);
        }
}

/* qstem (k_qstem.c) against dnnl.qconv on PP-OCR cls's stem (3 -> 8 at
 * 48x192, batch 1 and 8); rec's and det's (3 -> 16 at 48x320 / 640x640)
 * are declined (qstem takes 8 outputs only: 0 ms). */
static void bench_qstem(void) {
    static const qconv_case cs[] = {
        {"cls 3->8 48x192", 1, 3, 48, 192, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"cls 3->8 48x192 batch 8", 8, 3, 48, 192, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"rec 3->16 48x320", 1, 3, 48, 320, 16, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"det 3->16 640x640", 1, 3, 640, 640, 16, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int th = 1; th <= 2; th++) {
            const double a = cs[i].M == 8 ? bench_int8(&cs[i], PRECIS_INT8, th, &pr_cpu_impl_qstem)
                                          : 0.0; /* declined */
            const double b = bench_int8(&cs[i], PRECIS_INT8, th, &pr_cpu_impl_dnnl_qconv);
            const double f32 = bench_fp32(&cs[i], th);
            printf("speed stem %s, %d thread%s: qstem %.4f ms, dnnl.qconv %.4f ms, fp32 %.4f ms\n",
                   cs[i].name, th, th > 1 ? "s" : "", a, b, f32);
        }
}

int main(int argc, char **argv) {
    const char *cap = getenv("PRECIS_CPU_ISA");
    bool own_only = argc > 1 && !strcmp(argv[1], "--own-kernels");
    bool bench_only = argc > 1 && !strcmp(argv[1], "--bench");
    double t0 = now_s();
    if (bench_only) {
        if (argc > 2 && !strcmp(argv[2], "stem")) {
            bench_qstem();
            return check_report("test_cpu_int8");
        }
        bench_qconv();
        bench_qdw();
        bench_qstem();
        return check_report("test_cpu_int8");
    }
    if (!own_only) {
        test_qconv_geometry();
        test_qconv_epilogue();
        test_qconv_mixed_layouts();
        test_qconv_zero_scale();
        test_qconv_symbolic();
        test_qconv_inplace();
        test_qmatmul();
    }
    test_quant();
    test_move();
    test_maxpool();
    test_resize_q8();
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    if (!own_only) {
        printf("int8/uint8 outputs of QConv/QMatMul: %lld of %lld (%.4f%%) differ from ref by one unit\n",
               (long long)q_diff1, (long long)q_total,
               q_total ? 100.0 * (double)q_diff1 / (double)q_total : 0.0);
        printf("float32 outputs: worst |diff| / max|ref| = %.2e\n", f_worst);
        printf("oneDNN / kernel implementations used:\n");
        for (int i = 0; i < n_seen; i++) printf("  %s\n", seen[i]);
        bench_qconv();
        bench_qdw();
        bench_qstem();
    }
    int rc = check_report(own_only ? NULL : "test_cpu_int8");
    if (cap || own_only) return rc;
    return q8_also_scalar(argv, rc, "test_cpu_int8");
}
