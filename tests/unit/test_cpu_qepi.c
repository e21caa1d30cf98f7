/* The INT8 epilogue paths of the CPU backend against the ref backend:
 * dnnl.qconv's late epilogue (Swish/Sigmoid into int8/uint8: the primitive
 * writes float32, pr_cpu_qact_rows requantizes; padded output channels,
 * residuals in place, act2, batches cut into image groups under the float
 * budget and the post-op chain over it, 1 and 2 threads), pr_cpu_qact_rows
 * itself against double precision (every act pairing plans use, padded
 * rows, NaN and huge values), and qfc (1x1 convs of 1x1 images, the
 * squeeze-excitation FCs: every act, act2, int8/uint8 in, int8/uint8/float32
 * out, zero weight scales, what it declines). Tolerances as test_cpu_int8.c:
 * int8/uint8 outputs may differ from ref by one unit near halves.
 *
 * The process runs everything with the best ISA, then runs itself again
 * with PRECIS_CPU_ISA=scalar for the portable paths of k_qact.c and k_qfc.c
 * (--own-kernels: the oneDNN cases are skipped there). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "cpu_check_qconv.h"

/* The late INT8 epilogue (Swish/Sigmoid into int8/uint8: float32 primitive
 * output, then pr_cpu_qact_rows): padded output channels, residuals, act2,
 * in place, batches, sizes over one work chunk, 1 and 2 threads. */
static void test_qconv_late(void) {
    const qact swish = {"Swish", 0, 0}, sigm = {"Sigmoid", 0, 0}, relu = ACTS[0];
    const qact clip = {"Clip", -0.5f, 2.0f};
    static const qconv_case big = {"1x1 32->32 40x40", 1, 32, 40, 40, 32, 1, 1, 1, 1, 1, 1, 1,
                                   {0, 0, 0, 0}, NULL};
    static const qconv_case bigpad = {"3x3 16->40 33x31 padded batch 2", 2, 16, 33, 31, 40, 3, 3,
                                      1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL};
    static const qconv_case odd = {"1x1 24->7 batch 3", 3, 24, 9, 10, 7, 1, 1, 1, 1, 1, 1, 1,
                                   {0, 0, 0, 0}, NULL};
    const qconv_case *cs[] = {&qconv_cases[15], &qconv_cases[16], &big, &bigpad, &odd,
                              &qconv_cases[8]};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int t = 1; t <= 2; t++) {
            qconv_one(cs[i], PRECIS_INT8, PRECIS_INT8, true, PRECIS_UNDEFINED, true, &swish, NULL,
                      t, "late swish");
            qconv_one(cs[i], PRECIS_UINT8, PRECIS_UINT8, t == 1, PRECIS_UNDEFINED, true, &sigm,
                      NULL, t, "late sigmoid");
            qconv_one(cs[i], PRECIS_INT8, PRECIS_INT8, true, PRECIS_INT8, true, &swish, NULL, t,
                      "late swish + residual");
            qconv_one(cs[i], PRECIS_UINT8, PRECIS_UINT8, true, PRECIS_INT8, true, &sigm, &relu, t,
                      "late sigmoid + residual + relu");
            qconv_one(cs[i], PRECIS_INT8, PRECIS_INT8, true, PRECIS_UINT8, true, &swish, &clip, t,
                      "late swish + u8 residual + clip");
        }
    /* a small budget (read at prepare): batches cut into groups of images
     * (5 = 2 + 2 + 1: two primitives), images over it on the post-op chain */
    static const qconv_case b5 = {"3x3 8->16 4x4 batch 5", 5, 8, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1,
                                  {1, 1, 1, 1}, NULL};
    static const qconv_case b3 = {"1x1 8->16 5x5 batch 3", 3, 8, 5, 5, 16, 1, 1, 1, 1, 1, 1, 1,
                                  {0, 0, 0, 0}, NULL};
    setenv("PRECIS_QCONV_LATE_KB", "2", 1);
    for (int t = 1; t <= 2; t++) {
        qconv_one(&b5, PRECIS_INT8, PRECIS_INT8, true, PRECIS_UNDEFINED, true, &swish, NULL, t,
                  "late swish, groups of 2 images");
        qconv_one(&b5, PRECIS_INT8, PRECIS_INT8, true, PRECIS_INT8, true, &swish, &relu, t,
                  "late swish + residual, groups of 2 images");
        qconv_one(&b3, PRECIS_UINT8, PRECIS_UINT8, true, PRECIS_UINT8, true, &sigm, NULL, t,
                  "late sigmoid + residual, image by image");
        qconv_one(&bigpad, PRECIS_INT8, PRECIS_INT8, true, PRECIS_UNDEFINED, true, &swish, NULL,
                  t, "swish over the budget (post-op chain)");
    }
    unsetenv("PRECIS_QCONV_LATE_KB");
    /* in place over the residual */
    static const qconv_case c = {"late in place", 1, 16, 9, 9, 16, 3, 3, 1, 1, 1, 1, 1,
                                 {1, 1, 1, 1}, NULL};
    qnode q;
    qconv_node(&q, &c, PRECIS_INT8, PRECIS_INT8);
    qn_act(&q, "act", swish.name, 0, 0);
    qn_float(&q, "z_scale", ZS);
    qc_in in[5];
    qconv_inputs(&c, PRECIS_INT8, true, PRECIS_INT8, true, in);
    qc_prep p;
    qc_threads = 1;
    if (qc_prepare(&p, &q.t, 5, in, 1, true, &pr_cpu_impl_dnnl_qconv, 1, "late in place")) {
        CHECK(pr_cpu_impl_dnnl_qconv.inplace_input(p.gi, &p.gi->nodes[0]) == 4);
        qc_exec(&p, in, 4, PRECIS_UNDEFINED, 1, false, "late in place");
    }
    qc_release(&p);
    qc_free(in, 5);
}

/* pr_cpu_qact_rows against double precision: every act and act2 pairing
 * used in plans, padded and dense rows, residuals, NaN/inf/saturation;
 * within one unit (ties of a float32 R may round either way). */
static double qa_act_ref(const char *k, double x) {
    if (!strcmp(k, "Swish")) return x / (1.0 + exp(-x));
    if (!strcmp(k, "Sigmoid")) return 1.0 / (1.0 + exp(-x));
    if (!strcmp(k, "Relu")) return x < 0 ? 0 : x;
    if (!strcmp(k, "Clip")) return x < -0.5 ? -0.5 : x > 2.0 ? 2.0 : x;
    return x;
}

static void test_qact_rows(void) {
    static const char *acts[][2] = {{"Swish", ""}, {"Sigmoid", ""}, {"Swish", "Relu"},
                                    {"Sigmoid", "Clip"}, {"Relu", "Swish"}, {"", ""}};
    const int64_t shapes[][3] = {{37, 24, 24}, {5, 7, 16}, {300, 40, 48}, {1, 70000, 70000}};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
            for (int v = 0; v < 4; v++) {
                int64_t rows = shapes[sh][0], C = shapes[sh][1], xs = shapes[sh][2];
                pr_dtype ydt = v & 1 ? PRECIS_UINT8 : PRECIS_INT8;
                pr_dtype zdt = v & 2 ? (a % 2 ? PRECIS_UINT8 : PRECIS_INT8) : PRECIS_UNDEFINED;
                pr_act A = {PR_ACT_NONE, 0, 0}, A2 = {PR_ACT_NONE, 0, 0};
                if (acts[a][0][0]) A.kind = pr_act_kind_of(acts[a][0]);
                if (acts[a][1][0]) A2.kind = pr_act_kind_of(acts[a][1]);
                if (A2.kind == PR_ACT_CLIP) A2.alpha = -0.5f, A2.beta = 2.0f;
                float *x = malloc((size_t)(rows * xs) * sizeof(float));
                uint8_t *z = malloc((size_t)(rows * C)), *y = malloc((size_t)(rows * C));
                for (int64_t i = 0; i < rows * xs; i++)
                    x[i] = (float)((i * 7919 + 13) % 4001) / 250.0f - 8.0f;
                x[0] = NAN; /* finite otherwise (a conv's outputs) */
                x[1] = 1e30f;
                x[2] = -1e30f;
                x[3] = 3e38f;
                for (int64_t i = 0; i < rows * C; i++) z[i] = (uint8_t)(i * 31 + 7);
                const float zs = 0.03f, ys = 0.021f;
                pr_cpu_qact_rows(x, xs, rows, C, &A, &A2, zdt ? z : NULL, zdt, zs, y, ydt,
                                 1.0f / ys, 1 + v % 2);
                int64_t bad = 0;
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t c = 0; c < C; c++) {
                        int64_t i = r * C + c;
                        double xv = x[r * xs + c], R;
                        if (isnan(xv)) {
                            CHECK(y[i] == 0 || zdt); /* NaN -> 0 (with Z: NaN + Z) */
                            continue;
                        }
                        R = acts[a][0][0] ? qa_act_ref(acts[a][0], xv) : xv;
                        if (zdt)
                            R += zs * (zdt == PRECIS_UINT8 ? (double)z[i] : (double)(int8_t)z[i]);
                        if (acts[a][1][0]) R = qa_act_ref(acts[a][1], R);
                        double lo = ydt == PRECIS_UINT8 ? 0 : -128;
                        double hi = ydt == PRECIS_UINT8 ? 255 : 127;
                        double q = nearbyint(R / ys);
                        q = q < lo ? lo : q > hi ? hi : q;
                        double got = ydt == PRECIS_UINT8 ? (double)y[i] : (double)(int8_t)y[i];
                        if (fabs(got - q) > 1.0) bad++;
                    }
                if (bad)
                    fprintf(stderr, "qact_rows %s/%s rows %lld C %lld xs %lld v %d: %lld off\n",
                            acts[a][0], acts[a][1], (long long)rows, (long long)C, (long long)xs, v,
                            (long long)bad);
                CHECK(bad == 0);
                free(x);
                free(z);
                free(y);
            }
}

/* qfc: 1x1 convs of 1x1 images (squeeze-excitation FCs), both ISA paths */
static void test_qfc(void) {
    static const qconv_case fcs[] = {
        {"se 8->2 batch 3", 3, 8, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"se 88->22", 1, 88, 1, 1, 22, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"se 22->88 batch 2", 2, 22, 1, 1, 88, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"se 200->50 batch 8", 8, 200, 1, 1, 50, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"fc 512->70 stride 2", 2, 512, 1, 1, 70, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL},
        {"fc 17->130 SAME_UPPER", 1, 17, 1, 1, 130, 1, 1, 1, 1, 1, 1, 1, {0}, "SAME_UPPER"},
    };
    static const pr_dtype YT[3] = {PRECIS_INT8, PRECIS_UINT8, PRECIS_FLOAT32};
    static const pr_dtype XT[2] = {PRECIS_UINT8, PRECIS_INT8};
    static const qact hsig = {"HardSigmoid", 0.2f, 0.5f}, aff = {"Affine", 1.5f, -0.25f};
    const qconv_case *c0 = &fcs[0];
    qconv_impl = &pr_cpu_impl_qfc;
    int k = 0;
    for (size_t i = 0; i < sizeof fcs / sizeof fcs[0]; i++)
        for (int x = 0; x < 2; x++)
            for (int y = 0; y < 3; y++, k++)
                qconv_one(&fcs[i], XT[x], YT[y], k % 4 != 3, PRECIS_UNDEFINED, k % 2,
                          k % 3 == 0 ? &hsig : &ACTS[k % N_ACTS], k % 5 == 1 ? &aff : NULL, 1,
                          fcs[i].name);
    /* zero w_scale channels: real weights 0, the output is act(bias) */
    qnode q;
    qc_in in[5];
    qconv_node(&q, &fcs[3], PRECIS_INT8, PRECIS_UINT8);
    qn_act(&q, "act", "Relu", 0, 0);
    qconv_inputs(&fcs[3], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    float *ws = in[2].data;
    ws[0] = ws[17] = ws[49] = 0.0f;
    qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_qfc, 1, 1, false, "qfc zero w_scale");
    qc_free(in, 5);
    qconv_impl = &pr_cpu_impl_dnnl_qconv;
    /* declined: images over 1x1, a residual, groups, pads, IC over 512 */
    static const qconv_case big = {"513->8", 1, 513, 1, 1, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
                                   NULL};
    static const qconv_case padded = {"pads", 1, 8, 1, 1, 8, 1, 1, 1, 1, 1, 1, 1, {1, 1, 1, 1},
                                      NULL};
    const qconv_case *no[] = {&qconv_cases[0], &qconv_cases[6], &big, &padded};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        qconv_node(&q, no[i], PRECIS_UINT8, PRECIS_UINT8);
        qconv_inputs(no[i], PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
        CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qfc));
        qc_free(in, 5);
    }
    qconv_node(&q, c0, PRECIS_UINT8, PRECIS_UINT8);
    qconv_inputs(c0, PRECIS_UINT8, true, PRECIS_UINT8, true, in);
    CHECK(qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qfc));
    qn_float(&q, "z_scale", ZS);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_qfc));
    qc_free(in, 5);
}

static int n_vs_dnnl, n_vs_dnnl_bytes;

/* impl and other (dnnl.qconv, or impl prepared with env_b set to 0) on the
 * same node and NHWC inputs (the residual Z when zdt is int8 / uint8; act
 * a1, act2 a2, y_scale ys): bytes equal. */
static void vs_other(const pr_cpu_impl *impl, const pr_cpu_impl *other, const char *env_b,
                     const qconv_case *c, pr_dtype xdt, pr_dtype ydt, bool bias, pr_dtype zdt,
                     const qact *a1, const qact *a2, float ys, int threads) {
    qnode q;
    qconv_node(&q, c, xdt, ydt);
    if (a1) qn_act(&q, "act", a1->name, a1->alpha, a1->beta);
    if (a2) qn_act(&q, "act2", a2->name, a2->alpha, a2->beta);
    for (int i = 0; i < q.t.node.n_attrs; i++)
        if (!strcmp(q.attrs[i].name, "y_scale")) q.attrs[i].f = ys;
    const bool hz = zdt != PRECIS_UNDEFINED;
    if (hz) qn_float(&q, "z_scale", ZS);
    qc_in in[5];
    qconv_inputs(c, xdt, bias, zdt, true, in);
    const int n_in = hz ? 5 : bias ? 4 : 3;
    char label[200];
    snprintf(label, sizeof label, "%s vs %s%s%s %s [%s->%s%s z %s %s%s y_scale %g %dt]",
             impl->name, other->name, env_b ? " " : "", env_b ? env_b : "", c->name, dn(xdt),
             dn(ydt), bias ? " bias" : "", dn(zdt), a1 ? a1->name : "-", a2 ? " act2" : "",
             (double)ys, threads);
    qc_prep pa, pd;
    const bool oka = qc_prepare(&pa, &q.t, n_in, in, 1, true, impl, threads, label);
    if (env_b) setenv(env_b, "0", 1);
    const bool okd = qc_prepare(&pd, &q.t, n_in, in, 1, true, other, threads, label);
    if (env_b) unsetenv(env_b);
    CHECK(oka && okd);
    if (oka && okd) {
        pr_err e = {0};
        pr_buf iin[5], ya, yd;
        const pr_buf *iinp[5];
        memset(iin, 0, sizeof iin);
        for (int i = 0; i < n_in; i++) {
            iinp[i] = NULL;
            if (!in[i].name) continue;
            pr_buf_alloc(&iin[i], in[i].dt, in[i].rank, in[i].dims, in[i].name, &e);
            if (!in[i].init && in[i].rank == 4)
                bytes_nhwc(in[i].data, iin[i].data, in[i].dims, pr_dtype_size(in[i].dt), true);
            else
                memcpy(iin[i].data, in[i].data, iin[i].nbytes);
            iinp[i] = &iin[i];
        }
        const int64_t yd4[4] = {
            c->N, c->M, (c->H + c->pads[0] + c->pads[2] - c->dh * (c->kh - 1) - 1) / c->sh + 1,
            (c->W + c->pads[1] + c->pads[3] - c->dw * (c->kw - 1) - 1) / c->sw + 1};
        pr_buf_alloc(&ya, ydt, 4, yd4, "ya", &e);
        pr_buf_alloc(&yd, ydt, 4, yd4, "yd", &e);
        memset(ya.data, 0x5a, ya.nbytes);
        memset(yd.data, 0xa5, yd.nbytes);
        pr_buf *oa[1] = {&ya}, *od[1] = {&yd};
        pr_cpu_exec xa = {threads, NULL, NULL, 0, NULL, 0}, xd = xa;
        xd.dnnl_stream = pr_dnnl_stream_create(&e);
        pr_kernel ka = {pa.gi, &pa.gi->nodes[0], n_in, iinp, 1, oa, &e, threads};
        pr_kernel kd = {pd.gi, &pd.gi->nodes[0], n_in, iinp, 1, od, &e, threads};
        const precis_status sa = impl->run(pa.state, &ka, &xa);
        const precis_status sd = other->run(pd.state, &kd, &xd);
        CHECK(sa == PRECIS_OK && sd == PRECIS_OK);
        if (sa || sd) fprintf(stderr, "%s: status %d / %d: %s\n", label, sa, sd, e.msg);
        if (!sa && !sd) {
            size_t bad = 0;
            for (size_t i = 0; i < ya.nbytes; i++) bad += ((uint8_t *)ya.data)[i] != ((uint8_t *)yd.data)[i];
            CHECK(bad == 0);
            if (bad) fprintf(stderr, "%s: %zu of %zu bytes differ\n", label, bad, ya.nbytes);
            n_vs_dnnl++;
            n_vs_dnnl_bytes += (int)ya.nbytes;
        }
        pr_dnnl_stream_destroy(xd.dnnl_stream);
        free(xa.scratch);
        free(xd.scratch);
        pr_buf_free(&ya);
        pr_buf_free(&yd);
        for (int i = 0; i < n_in; i++)
            if (in[i].name) pr_buf_free(&iin[i]);
    }
    qc_release(&pa);
    qc_release(&pd);
    qc_free(in, 5);
}

static void vs_dnnl(const pr_cpu_impl *impl, const qconv_case *c, pr_dtype xdt, pr_dtype ydt,
                    bool bias, pr_dtype zdt, int threads) {
    vs_other(impl, &pr_cpu_impl_dnnl_qconv, NULL, c, xdt, ydt, bias, zdt, NULL, NULL, YS,
             threads);
}

/* q1x1 (k_q1x1.c): 1x1 stride-1 QConv on NHWC images, IC a multiple of 4
 * up to 256, OC from IC and 16 (or 8: pixel pairs), images over 4096
 * pixels on dnnl.qconv: pixel tiles of 4 and their tails, output vector
 * blocks of 4 and tails of 1-3 vectors and of channels, int8/uint8 src and
 * out, Relu/Clip/HardSwish/Swish and act2 Affine, 1-2 threads; skipped without
 * AVX512-VNNI (the impl declines). */
static void test_q1x1(void) {
    static const qconv_case cs[] = {
        {"pw 32->200 2x96", 1, 32, 2, 96, 200, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 16->88 3x7 batch 2", 2, 16, 3, 7, 88, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 8->24 5x5", 1, 8, 5, 5, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 4->16 1x3", 1, 4, 1, 3, 16, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 104->104 2x9", 1, 104, 2, 9, 104, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 256->272 3x3 batch 3", 3, 256, 3, 3, 272, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 12->64 4x6 dilation 2", 1, 12, 4, 6, 64, 1, 1, 1, 1, 1, 2, 2, {0, 0, 0, 0}, NULL},
        {"pw 20->130 2x5 SAME_UPPER", 1, 20, 2, 5, 130, 1, 1, 1, 1, 1, 1, 1, {0}, "SAME_UPPER"},
        {"pw 24->60 3x3 (a block of 4 vectors, 60 channels)", 1, 24, 3, 3, 60, 1, 1, 1, 1, 1, 1,
         1, {0, 0, 0, 0}, NULL},
        {"pw 16->32 65x64 (over 4096 pixels: dnnl.qconv)", 1, 16, 65, 64, 32, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
        {"pw 8->8 24x9 (OC 8: pixel pairs)", 1, 8, 24, 9, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
         NULL},
        {"pw 4->8 3x5 batch 2 (an odd last pixel)", 2, 4, 3, 5, 8, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
    };
    static const pr_dtype YT[2] = {PRECIS_INT8, PRECIS_UINT8};
    static const pr_dtype XT[2] = {PRECIS_UINT8, PRECIS_INT8};
    static const qact relu = {"Relu", 0, 0}, relu6 = {"Clip", 0, 6}, hsw = {"HardSwish", 0, 0},
                      clip = {"Clip", -0.5f, 2.0f}, aff = {"Affine", 1.5f, -0.25f};
    const qact *A1[5] = {NULL, &relu, &relu6, &hsw, &clip};
    qnode q;
    qc_in in[5];
    qconv_node(&q, &cs[0], PRECIS_INT8, PRECIS_INT8);
    qconv_inputs(&cs[0], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    bool ok = qc_supports(&q.t, 4, in, true, &pr_cpu_impl_q1x1);
    qc_free(in, 5);
    if (!ok) {
        printf("q1x1: declined (no AVX512-VNNI on %s): skipped\n", pr_cpu_isa_name());
        return;
    }
    qconv_impl = &pr_cpu_impl_q1x1;
    int k = 0;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int x = 0; x < 2; x++)
            for (int y = 0; y < 2; y++, k++)
                qconv_one(&cs[i], XT[x], YT[y], k % 4 != 3, PRECIS_UNDEFINED, true, A1[k % 5],
                          k % 3 == 1 ? &aff : NULL, 1 + (i == 0 && k % 2), cs[i].name);
    /* saturated outputs: a y_scale small enough that q1x1_prepare's bound
     * keeps the clamp (1e-9: int32 overflow without it) and one where the
     * packs clamp (YS / 64) */
    for (int v = 0; v < 8; v++) {
        const qconv_case *c = v % 2 ? &cs[7] : &cs[0];
        pr_dtype yd = YT[(v / 2) % 2];
        qconv_node(&q, c, PRECIS_INT8, yd);
        if (v / 4) qn_act(&q, "act", "HardSwish", 0, 0);
        for (int i = 0; i < q.t.node.n_attrs; i++)
            if (!strcmp(q.attrs[i].name, "y_scale")) q.attrs[i].f = v % 4 < 2 ? 1e-9f : YS / 64;
        qconv_inputs(c, PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
        char label[160];
        snprintf(label, sizeof label, "q1x1 saturated %s -> %s, y_scale %s%s", c->name, dn(yd),
                 v % 4 < 2 ? "1e-9" : "YS/64", v / 4 ? ", HardSwish" : "");
        qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_q1x1, 1, 1, false, label);
        qc_free(in, 5);
    }
    /* Swish (YOLOv8n's C2f convs) with and without act2, every tile shape
     * above, int8/uint8 src and out, 1-2 threads */
    static const qact swish = {"Swish", 0, 0};
    static const qconv_case sp[] = { /* projections: q1x1 takes them with Swish */
        {"pw swish 96->64 5x7", 1, 96, 5, 7, 64, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw swish 256->16 3x3 batch 2", 2, 256, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
         NULL},
        {"pw swish 40->24 2x9", 1, 40, 2, 9, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        for (int v = 0; v < 4; v++, k++)
            qconv_one(&sp[i], XT[v % 2], YT[v / 2], k % 4 != 3, PRECIS_UNDEFINED, true, &swish,
                      v == 1 ? &aff : NULL, 1 + v % 2, sp[i].name);
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int v = 0; v < 4; v++, k++)
            qconv_one(&cs[i], XT[v % 2], YT[v / 2], k % 4 != 3, PRECIS_UNDEFINED, true, &swish,
                      v == 1 ? &aff : NULL, 1 + v % 2, cs[i].name);
    /* zero w_scale channels: real weights 0, the output is act(bias) */
    qconv_node(&q, &cs[1], PRECIS_INT8, PRECIS_UINT8);
    qn_act(&q, "act", "HardSwish", 0, 0);
    qconv_inputs(&cs[1], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    float *ws = in[2].data;
    ws[0] = ws[17] = ws[87] = 0.0f;
    qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_q1x1, 1, 1, false, "q1x1 zero w_scale");
    qc_free(in, 5);
    /* projections to 8 channels from up to 32 (pixel pairs; cls's 24->8),
     * and with a residual and no act (cls's 32->8 + Add: q1_rows8z, 8-pixel
     * steps, pairs, an odd last pixel): against ref, and bit for bit
     * against dnnl.qconv, which ran them before */
    static const qconv_case p8[] = {
        {"proj 24->8 6x48 batch 2", 2, 24, 6, 48, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"proj 32->8 5x7 (odd pixel count)", 1, 32, 5, 7, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
         NULL},
        {"proj 16->8 3x11 batch 3", 3, 16, 3, 11, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"proj 12->8 1x9", 1, 12, 1, 9, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"proj 32->8 37x29 (threads, chunks of 48)", 1, 32, 37, 29, 8, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
    };
    for (size_t i = 0; i < sizeof p8 / sizeof p8[0]; i++)
        for (int v = 0; v < 8; v++, k++) {
            const pr_dtype zt = v < 2 ? PRECIS_UNDEFINED : XT[v % 2];
            qconv_one(&p8[i], XT[v / 2 % 2], YT[(v / 4 + i) % 2], k % 3 != 2, zt, true,
                      zt == PRECIS_UNDEFINED ? A1[k % 5] : NULL, NULL, 1 + v % 2, p8[i].name);
            vs_dnnl(&pr_cpu_impl_q1x1, &p8[i], XT[v / 2 % 2], YT[(v / 4 + i) % 2], k % 3 != 2, zt,
                    1 + v % 2);
        }
    /* OC 24 as pixel pairs of 3 channel groups (q1_rows24): against the
     * 16-lane vectors (PRECIS_Q1X1_P24=0) bit for bit, every act, act2,
     * clamp-free and clamped (y_scale 1e-9), 8-pixel steps, pairs, an odd
     * last pixel, 2 threads; against dnnl.qconv where it rounds as q1x1
     * (not HardSwish); against ref */
    static const qconv_case c24[] = {
        {"pw 8->24 12x48 batch 2", 2, 8, 12, 48, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 16->24 5x7", 1, 16, 5, 7, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 4->24 1x9 batch 3", 3, 4, 1, 9, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 24->24 3x3", 1, 24, 3, 3, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 8->24 37x29 (threads, chunks of 48)", 1, 8, 37, 29, 24, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
    };
    for (size_t i = 0; i < sizeof c24 / sizeof c24[0]; i++)
        for (int v = 0; v < 10; v++, k++) {
            const qact *a1 = A1[v % 5], *a2 = v % 3 == 1 ? &aff : NULL;
            const pr_dtype xt = XT[(v + i) % 2], yt = YT[v / 2 % 2];
            vs_other(&pr_cpu_impl_q1x1, &pr_cpu_impl_q1x1, "PRECIS_Q1X1_P24", &c24[i], xt, yt,
                     v != 3, PRECIS_UNDEFINED, a1, a2, v == 7 ? 1e-9f : YS, 1 + v % 2);
            if (a1 != &hsw)
                vs_other(&pr_cpu_impl_q1x1, &pr_cpu_impl_dnnl_qconv, NULL, &c24[i], xt, yt,
                         v != 3, PRECIS_UNDEFINED, a1, a2, YS, 1 + v % 2);
            qconv_one(&c24[i], xt, yt, v != 3, PRECIS_UNDEFINED, true, a1, a2, 1 + v % 2,
                      c24[i].name);
        }
    /* OC 16 k + 8 with its last 8 channels as pixel pairs (q1_tail8):
     * against the half-empty vector (PRECIS_Q1X1_T8=0) bit for bit, every
     * act, act2, clamp-free and clamped, 8-pixel steps, pairs, an odd last
     * pixel, 4-vector blocks and 1-3 vector tails before it, 2 threads;
     * against dnnl.qconv (not HardSwish) and ref */
    static const qconv_case c8t[] = {
        {"pw 16->40 5x7", 1, 16, 5, 7, 40, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 32->200 2x96 batch 2", 2, 32, 2, 96, 200, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 16->88 3x9 batch 3", 3, 16, 3, 9, 88, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 24->104 1x13", 1, 24, 1, 13, 104, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 8->56 37x29 (threads, chunks of 48)", 1, 8, 37, 29, 56, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
        {"pw 4->24 3x5 (pairs24 off: t8)", 1, 4, 3, 5, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
         NULL},
    };
    for (size_t i = 0; i < sizeof c8t / sizeof c8t[0]; i++)
        for (int v = 0; v < 10; v++, k++) {
            const qact *a1 = A1[v % 5], *a2 = v % 3 == 1 ? &aff : NULL;
            const pr_dtype xt = XT[(v + i) % 2], yt = YT[v / 2 % 2];
            const bool p24 = c8t[i].M == 24; /* OC 24: t8 only with PRECIS_Q1X1_P24=0 */
            if (p24) setenv("PRECIS_Q1X1_P24", "0", 1);
            vs_other(&pr_cpu_impl_q1x1, &pr_cpu_impl_q1x1, "PRECIS_Q1X1_T8", &c8t[i], xt, yt,
                     v != 3, PRECIS_UNDEFINED, a1, a2, v == 7 ? 1e-9f : YS, 1 + v % 2);
            if (a1 != &hsw)
                vs_other(&pr_cpu_impl_q1x1, &pr_cpu_impl_dnnl_qconv, NULL, &c8t[i], xt, yt,
                         v != 3, PRECIS_UNDEFINED, a1, a2, YS, 1 + v % 2);
            qconv_one(&c8t[i], xt, yt, v != 3, PRECIS_UNDEFINED, true, a1, a2, 1 + v % 2,
                      c8t[i].name);
            if (p24) unsetenv("PRECIS_Q1X1_P24");
        }
    /* qdwconv's direct path, 3x3 kernels on dd_convert3's rows (k_qdwdirect.c):
     * bit for bit against dd_convert4's rows (PRECIS_QDW_ROWS3=0): 8 / 16 /
     * 24 / 32 channels, row strides 1 and 2, pads 0-2 (rows wholly out of
     * the image), 1-3 columns, images over 4096 pixels (bands), a batch, 2
     * threads (rows split at batch 1), dilation 2 (dwq's rows still), every
     * act, act2 */
    static const qconv_case d3[] = {
        {"dw 24 3x3 stride 2x1 12x96 batch 2", 2, 24, 12, 96, 24, 3, 3, 24, 2, 1, 1, 1,
         {1, 1, 1, 1}, NULL},
        {"dw 8 3x3 stride 2x1 24x37", 1, 8, 24, 37, 8, 3, 3, 8, 2, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 32 3x3 6x29 batch 3", 3, 32, 6, 29, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 16 3x3 5x3 pads 2", 1, 16, 5, 3, 16, 3, 3, 16, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 24 3x3 2x1 pads 0 2 2 0", 1, 24, 2, 1, 24, 3, 3, 24, 1, 1, 1, 1, {0, 2, 2, 0},
         NULL},
        {"dw 8 3x3 stride 2x1 1x2", 1, 8, 1, 2, 8, 3, 3, 8, 2, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 32 3x3 stride 2x1 70x70 (bands)", 1, 32, 70, 70, 32, 3, 3, 32, 2, 1, 1, 1,
         {1, 1, 1, 1}, NULL},
        {"dw 24 3x3 20x300 (bands)", 1, 24, 20, 300, 24, 3, 3, 24, 1, 1, 1, 1, {1, 1, 1, 1},
         NULL},
        {"dw 8 3x3 dilation 2x1", 1, 8, 9, 13, 8, 3, 3, 8, 1, 1, 2, 1, {2, 1, 2, 1}, NULL},
        {"dw 24 3x3 stride 2x1 asym pads", 1, 24, 11, 17, 24, 3, 3, 24, 2, 1, 1, 1,
         {0, 1, 2, 0}, NULL},
    };
    for (size_t i = 0; i < sizeof d3 / sizeof d3[0]; i++)
        for (int v = 0; v < 10; v++, k++) {
            const qact *a1 = A1[v % 4]; /* none, Relu, Relu6, HardSwish */
            const qact *a2 = v % 3 == 1 ? &aff : NULL;
            vs_other(&pr_cpu_impl_qdwconv, &pr_cpu_impl_qdwconv, "PRECIS_QDW_ROWS3", &d3[i],
                     PRECIS_UINT8, YT[v / 2 % 2], v != 3, PRECIS_UNDEFINED, a1, a2,
                     v == 7 ? 1e-9f : YS, 1 + v % 2);
        }
    /* qdwconv's small images of <= 2 rows as column pairs (qdw_build_pairs):
     * bit for bit against the quads (PRECIS_QDW_PAIRS=0): 1 and 2 rows, 5x5
     * and 3x3 kernels, row strides 1 and 2, 40 to 200 channels (blocks of 64
     * and the linear tail), int8 src (and uint8 from 160 channels: supports), a batch, 2 threads (columns
     * split: OW >= 32), asymmetric pads, every act, act2 */
    static const qconv_case dp[] = {
        {"dw 200 5x5 2x48 batch 2", 2, 200, 2, 48, 200, 5, 5, 200, 1, 1, 1, 1, {2, 2, 2, 2},
         NULL},
        {"dw 168 5x5 stride 2x1 2x37", 1, 168, 2, 37, 168, 5, 5, 168, 2, 1, 1, 1, {2, 2, 2, 2},
         NULL},
        {"dw 72 5x5 1x33", 1, 72, 1, 33, 72, 5, 5, 72, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 40 3x3 2x40 batch 3", 3, 40, 2, 40, 40, 3, 3, 40, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 64 3x3 stride 2 2x9", 1, 64, 2, 9, 64, 3, 3, 64, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 96 5x5 2x6 asym pads", 1, 96, 2, 6, 96, 5, 5, 96, 1, 1, 1, 1, {1, 2, 3, 0}, NULL},
    };
    for (size_t i = 0; i < sizeof dp / sizeof dp[0]; i++)
        for (int v = 0; v < 10; v++, k++) {
            const qact *a1 = A1[v % 4];
            const qact *a2 = v % 3 == 1 ? &aff : NULL;
            vs_other(&pr_cpu_impl_qdwconv, &pr_cpu_impl_qdwconv, "PRECIS_QDW_PAIRS", &dp[i],
                     v % 5 < 2 || dp[i].C < 160 ? PRECIS_INT8 : PRECIS_UINT8, /* uint8: 160+ */
                     v == 9 ? PRECIS_FLOAT32 : YT[v / 2 % 2], v != 3,
                     PRECIS_UNDEFINED, a1, a2, v == 7 ? 1e-9f : YS, 1 + v % 2);
        }
    printf("q1x1: %d cases bit-identical to dnnl.qconv or its other path (%d output bytes)\n",
           n_vs_dnnl, n_vs_dnnl_bytes);
    qconv_impl = &pr_cpu_impl_dnnl_qconv;
    /* declined: OC below IC or 16 (but 8 from up to 32), IC not a multiple of 4 or over 256,
     * stride 2, a residual (but OC 8 with no act), float out, plain layout, other acts, 1x1
     * images (qfc's) */
    static const qconv_case no[] = {
        {"oc 12", 1, 8, 4, 4, 12, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"oc 8 from 40", 1, 40, 4, 4, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"projection 64->32", 1, 64, 4, 4, 32, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"ic 6", 1, 6, 4, 4, 16, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"ic 260", 1, 260, 4, 4, 272, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"stride 2", 1, 16, 4, 4, 16, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL},
        {"1x1 image", 2, 16, 1, 1, 32, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"3x3", 1, 16, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        qconv_node(&q, &no[i], PRECIS_UINT8, PRECIS_UINT8);
        qconv_inputs(&no[i], PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
        CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_q1x1));
        qc_free(in, 5);
    }
    const qconv_case *c = &cs[2];
    qconv_node(&q, c, PRECIS_UINT8, PRECIS_FLOAT32); /* float out */
    qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_q1x1));
    qc_free(in, 5);
    qconv_node(&q, c, PRECIS_UINT8, PRECIS_UINT8); /* plain */
    qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UNDEFINED, false, in);
    CHECK(!qc_supports(&q.t, 4, in, false, &pr_cpu_impl_q1x1));
    qc_free(in, 5);
    qconv_node(&q, c, PRECIS_UINT8, PRECIS_UINT8); /* Sigmoid */
    qn_act(&q, "act", "Sigmoid", 0, 0);
    qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_q1x1));
    qc_free(in, 5);
    qconv_node(&q, c, PRECIS_UINT8, PRECIS_UINT8); /* a residual */
    qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UINT8, true, in);
    CHECK(qc_supports(&q.t, 4, in, true, &pr_cpu_impl_q1x1));
    qn_float(&q, "z_scale", ZS);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_q1x1));
    qc_free(in, 5);
    qconv_node(&q, &p8[0], PRECIS_UINT8, PRECIS_INT8); /* OC 8 + a residual + Relu */
    qn_act(&q, "act", "Relu", 0, 0);
    qn_float(&q, "z_scale", ZS);
    qconv_inputs(&p8[0], PRECIS_UINT8, true, PRECIS_INT8, true, in);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_q1x1));
    qc_free(in, 5);
}

int main(int argc, char **argv) {
    const char *cap = getenv("PRECIS_CPU_ISA");
    bool own_only = argc > 1 && !strcmp(argv[1], "--own-kernels");
    double t0 = now_s();
    if (!own_only) test_qconv_late();
    test_qact_rows();
    test_qfc();
    test_q1x1();
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    if (!own_only) {
        printf("int8/uint8 outputs: %lld of %lld (%.4f%%) differ from ref by one unit\n",
               (long long)q_diff1, (long long)q_total,
               q_total ? 100.0 * (double)q_diff1 / (double)q_total : 0.0);
        printf("kernel implementations used:\n");
        for (int i = 0; i < n_seen; i++) printf("  %s\n", seen[i]);
    }
    int rc = check_report(own_only ? NULL : "test_cpu_qepi");
    if (cap || own_only) return rc;
    return q8_also_scalar(argv, rc, "test_cpu_qepi");
}
