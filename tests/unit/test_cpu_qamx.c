/* qamx (k_qamx.c), the CPU backend's own INT8 convolution on AMX-INT8 tiles
 * (an implicit GEMM: 32 output pixels x 32 output channels a block, K =
 * KH x KW x IC in 64-byte steps), checked two ways:
 *
 *   - bit for bit against dnnl.qconv on the same node, inputs and buffers
 *     (the int32 sums are exact in both, and the epilogues are the same
 *     operations: q1x1's, the late pass's for Swish and its residual);
 *   - against the ref backend (which sums dequantized floats: one unit near
 *     halves, as test_cpu_int8.c).
 *
 * Cases: 1x1 with odd pixel counts (blocks with a tail, rows loaded directly
 * from the image for IC 64 / IC under 64, packed otherwise), IC / OC not
 * multiples of 16 / 32 / 64, 3x3 stride 1 and 2 with symmetric and
 * asymmetric pads, dilation 2, 5x5, 1x7, batches, int8 and uint8 src and out,
 * with and without bias, every act it takes (none, Relu, Clip, HardSwish,
 * Swish) with and without act2 Affine, Swish with an int8 / uint8 residual,
 * no act with an int8 / uint8 residual, zero w_scale channels, 1 and 2
 * threads; what it declines. Every shape
 * rule is switched off (PRECIS_QAMX_ALL=1) so that the small cases run.
 * Where the CPU has no AMX-INT8 (or the kernel refuses the tile state) the
 * checks are skipped with a message. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "cpu_check_qconv.h"

static const qconv_case CASES[] = {
    {"1x1 16->24 9x11 (99 px)", 1, 16, 9, 11, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
    {"1x1 64->40 7x9 batch 2 (direct rows)", 2, 64, 7, 9, 40, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
     NULL},
    {"1x1 128->96 5x13 (direct, 2 K steps)", 1, 128, 5, 13, 96, 1, 1, 1, 1, 1, 1, 1,
     {0, 0, 0, 0}, NULL},
    {"1x1 36->70 11x7 (IC under 64, direct)", 1, 36, 11, 7, 70, 1, 1, 1, 1, 1, 1, 1,
     {0, 0, 0, 0}, NULL},
    {"1x1 18->33 6x7 (IC not a multiple of 4: packed)", 1, 18, 6, 7, 33, 1, 1, 1, 1, 1, 1, 1,
     {0, 0, 0, 0}, NULL},
    {"1x1 100->17 3x11 (packed, 2 K steps)", 1, 100, 3, 11, 17, 1, 1, 1, 1, 1, 1, 1,
     {0, 0, 0, 0}, NULL},
    {"1x1 stride 2 32->48 10x9", 1, 32, 10, 9, 48, 1, 1, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL},
    {"3x3 16->16 13x13 pad 1", 1, 16, 13, 13, 16, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"3x3 32->64 20x20 pad 1", 1, 32, 20, 20, 64, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    {"3x3 s2 24->40 15x17 asym pads batch 3", 3, 24, 15, 17, 40, 3, 3, 1, 2, 2, 1, 1,
     {1, 0, 0, 1}, NULL},
    {"3x3 s2 64->128 16x16 pad 1", 1, 64, 16, 16, 128, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
    {"3x3 20->24 11x10 no pads", 1, 20, 11, 10, 24, 3, 3, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
    {"3x3 dilation 2 8->16 14x14", 1, 8, 14, 14, 16, 3, 3, 1, 1, 1, 2, 2, {2, 2, 2, 2}, NULL},
    {"5x5 12->20 9x10 pad 2", 1, 12, 9, 10, 20, 5, 5, 1, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
    {"1x7 8->16 6x13", 1, 8, 6, 13, 16, 1, 7, 1, 1, 1, 1, 1, {0, 3, 0, 3}, NULL},
    {"3x3 96->24 12x20 pad 1 batch 2", 2, 96, 12, 20, 24, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1},
     NULL},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

static const qact RELU = {"Relu", 0, 0}, CLIP = {"Clip", -0.5f, 2.0f}, HSW = {"HardSwish", 0, 0},
                  SWISH = {"Swish", 0, 0}, AFF = {"Affine", 1.5f, -0.25f};

static int n_exact, n_exact_vals, n_hsw_diff;

/* qamx and dnnl.qconv on the same node and inputs (NHWC): bytes equal. */
static void vs_dnnl(const qconv_case *c, pr_dtype xdt, pr_dtype ydt, bool bias, pr_dtype zdt,
                    const qact *a1, const qact *a2, int threads, const float *zero_ws,
                    const char *what) {
    qnode q;
    qconv_node(&q, c, xdt, ydt);
    if (a1) qn_act(&q, "act", a1->name, a1->alpha, a1->beta);
    if (a2) qn_act(&q, "act2", a2->name, a2->alpha, a2->beta);
    if (zdt != PRECIS_UNDEFINED) qn_float(&q, "z_scale", ZS);
    qc_in in[5];
    qconv_inputs(c, xdt, bias, zdt, true, in);
    if (zero_ws) {
        float *ws = in[2].data;
        for (int64_t m = 0; m < c->M; m += 5) ws[m] = 0.0f;
    }
    const int n_in = zdt != PRECIS_UNDEFINED ? 5 : bias ? 4 : 3;
    char label[200];
    snprintf(label, sizeof label, "qamx vs dnnl %s %s [%s->%s%s z %s %s%s%s %dt]", c->name, what,
             dn(xdt), dn(ydt), bias ? " bias" : "", dn(zdt), a1 ? a1->name : "-",
             a2 ? " act2 " : "", a2 ? a2->name : "", threads);
    qc_prep pa, pd;
    const bool oka = qc_prepare(&pa, &q.t, n_in, in, 1, true, &pr_cpu_impl_qamx, threads, label);
    const bool okd =
        qc_prepare(&pd, &q.t, n_in, in, 1, true, &pr_cpu_impl_dnnl_qconv, threads, label);
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
        const int64_t oh = out_dim(c->H, c->kh, c->sh, c->dh, c->pads[0], c->pads[2], c->auto_pad);
        const int64_t ow = out_dim(c->W, c->kw, c->sw, c->dw, c->pads[1], c->pads[3], c->auto_pad);
        const int64_t yd4[4] = {c->N, c->M, oh, ow};
        pr_buf_alloc(&ya, ydt, 4, yd4, "ya", &e);
        pr_buf_alloc(&yd, ydt, 4, yd4, "yd", &e);
        memset(ya.data, 0x5a, ya.nbytes);
        memset(yd.data, 0xa5, yd.nbytes);
        pr_buf *oa[1] = {&ya}, *od[1] = {&yd};
        pr_cpu_exec xa = {threads, NULL, NULL, 0, NULL, 0}, xd = xa;
        xd.dnnl_stream = pr_dnnl_stream_create(&e);
        pr_kernel ka = {pa.gi, &pa.gi->nodes[0], n_in, iinp, 1, oa, &e, threads};
        pr_kernel kd = {pd.gi, &pd.gi->nodes[0], n_in, iinp, 1, od, &e, threads};
        precis_status sa = pr_cpu_impl_qamx.run(pa.state, &ka, &xa);
        CHECK(sa == PRECIS_OK);
        if (sa) fprintf(stderr, "%s: qamx failed: %s\n", label, e.msg);
        precis_status sd = pr_cpu_impl_dnnl_qconv.run(pd.state, &kd, &xd);
        CHECK(sd == PRECIS_OK);
        if (sd) fprintf(stderr, "%s: dnnl failed: %s\n", label, e.msg);
        if (!sa && !sd) {
            /* HardSwish: oneDNN's post-op rounds its own way (x * relu6(x +
             * 3) / 6 in another order): one unit on a few values near
             * halves, as q1x1 against it; bit for bit everywhere else */
            const bool hsw = a1 && !strcmp(a1->name, "HardSwish");
            const uint8_t *a = ya.data, *d = yd.data;
            int64_t bad = 0, first = -1, far = 0;
            for (size_t i = 0; i < ya.nbytes; i++) {
                const int va = ydt == PRECIS_INT8 ? (int)(int8_t)a[i] : a[i];
                const int vd = ydt == PRECIS_INT8 ? (int)(int8_t)d[i] : d[i];
                if (va != vd && bad++ == 0) first = (int64_t)i;
                if (abs(va - vd) > 1) far++;
            }
            if (hsw) {
                CHECK(far == 0 && bad * 500 <= (int64_t)ya.nbytes);
                n_hsw_diff += (int)bad;
            } else {
                CHECK(bad == 0);
            }
            if (bad)
                fprintf(stderr, "%s: %lld of %zu bytes differ (first at %lld: %d vs %d)%s\n",
                        label, (long long)bad, ya.nbytes, (long long)first, a[first], d[first],
                        hsw && !far && bad * 500 <= (int64_t)ya.nbytes
                            ? ": HardSwish, oneDNN's rounding, allowed"
                            : "");
            if (!bad) {
                n_exact++;
                n_exact_vals += (int)ya.nbytes;
            }
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

static void test_qamx(void) {
    qnode q;
    qc_in in[5];
    qconv_node(&q, &CASES[7], PRECIS_INT8, PRECIS_INT8);
    qconv_inputs(&CASES[7], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    bool ok = qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qamx);
    qc_free(in, 5);
    if (!ok) {
        printf("qamx: declined (no AMX-INT8 or no tile permission on this CPU, ISA %s): "
               "skipped\n",
               pr_cpu_isa_name());
        return;
    }
    static const pr_dtype T[2] = {PRECIS_INT8, PRECIS_UINT8};
    const qact *A1[5] = {NULL, &RELU, &CLIP, &HSW, &SWISH};
    int k = 0;
    for (int i = 0; i < N_CASES; i++)
        for (int xt = 0; xt < 2; xt++)
            for (int a = 0; a < 5; a++)
                for (int f = 0; f < 2; f++, k++) {
                    const pr_dtype yt = T[(xt + a + f) % 2];
                    const int th = 1 + k % 2;
                    const bool bias = k % 7 != 3;
                    vs_dnnl(&CASES[i], T[xt], yt, bias, PRECIS_UNDEFINED, A1[a], f ? &AFF : NULL,
                            th, NULL, "");
                    qconv_impl = &pr_cpu_impl_qamx;
                    qconv_one(&CASES[i], T[xt], yt, bias, PRECIS_UNDEFINED, true, A1[a],
                              f ? &AFF : NULL, th, "qamx vs ref");
                    qconv_impl = &pr_cpu_impl_dnnl_qconv;
                }
    /* Swish with a residual (YOLOv8n's bottlenecks), int8 / uint8 Z, act2 */
    for (int i = 0; i < N_CASES; i++)
        for (int zt = 0; zt < 2; zt++)
            for (int th = 1; th <= 2; th++) {
                const qact *a2 = (i + th) % 3 == 0 ? &AFF : NULL;
                vs_dnnl(&CASES[i], T[(i + zt) % 2], T[zt], true, T[(zt + th) % 2], &SWISH, a2, th,
                        NULL, "residual");
                qconv_impl = &pr_cpu_impl_qamx;
                qconv_one(&CASES[i], T[(i + zt) % 2], T[zt], true, T[(zt + th) % 2], true, &SWISH,
                          a2, th, "qamx residual vs ref");
                qconv_impl = &pr_cpu_impl_dnnl_qconv;
            }
    /* no act with a residual (the linear bottlenecks' projections + Add:
     * oneDNN's sum post-op, folded scales) */
    for (int i = 0; i < N_CASES; i++)
        for (int zt = 0; zt < 2; zt++) {
            const int th = 1 + (i + zt) % 2;
            vs_dnnl(&CASES[i], T[(i + zt + 1) % 2], T[zt], i % 3 != 1, T[(zt + i) % 2], NULL, NULL,
                    th, NULL, "residual, no act");
            qconv_impl = &pr_cpu_impl_qamx;
            qconv_one(&CASES[i], T[(i + zt + 1) % 2], T[zt], i % 3 != 1, T[(zt + i) % 2], true,
                      NULL, NULL, th, "qamx residual, no act vs ref");
            qconv_impl = &pr_cpu_impl_dnnl_qconv;
        }
    /* zero w_scale channels: real weights 0, the output is act(bias) */
    for (int x = 0; x < 2; x++) {
        vs_dnnl(&CASES[9], T[x], PRECIS_INT8, true, PRECIS_UNDEFINED, &HSW, NULL, 1 + x,
                (const float[]){0}, "zero w_scale");
        vs_dnnl(&CASES[2], T[x], PRECIS_UINT8, true, PRECIS_UNDEFINED, &SWISH, NULL, 1 + x,
                (const float[]){0}, "zero w_scale");
    }
    /* declined: groups, depthwise, 3 input channels, float out, plain
     * layout, a residual with Relu, SAME_UPPER */
    static const qconv_case no[] = {
        {"groups 4", 1, 16, 9, 9, 32, 3, 3, 4, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"depthwise", 1, 32, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"3 channels (stem)", 1, 3, 23, 23, 16, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"SAME_UPPER", 1, 16, 12, 12, 16, 3, 3, 1, 2, 2, 1, 1, {0, 0, 0, 0}, "SAME_UPPER"},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        qconv_node(&q, &no[i], PRECIS_INT8, PRECIS_INT8);
        qconv_inputs(&no[i], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
        if (qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qamx)) {
            printf("qamx took %s\n", no[i].name);
            CHECK(false);
        }
        qc_free(in, 5);
    }
    qconv_node(&q, &CASES[7], PRECIS_INT8, PRECIS_FLOAT32);
    qconv_inputs(&CASES[7], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qamx));
    qc_free(in, 5);
    qconv_node(&q, &CASES[7], PRECIS_INT8, PRECIS_INT8);
    qconv_inputs(&CASES[7], PRECIS_INT8, true, PRECIS_UNDEFINED, false, in);
    CHECK(!qc_supports(&q.t, 4, in, false, &pr_cpu_impl_qamx));
    qc_free(in, 5);
    qconv_node(&q, &CASES[7], PRECIS_INT8, PRECIS_INT8);
    qn_act(&q, "act", "Relu", 0, 0);
    qn_float(&q, "z_scale", ZS);
    qconv_inputs(&CASES[7], PRECIS_INT8, true, PRECIS_INT8, true, in);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_qamx));
    qc_free(in, 5);
    /* large images of small-IC expansions (over 4096 pixels, no act / Relu /
     * Clip): qamx hands them to q1x1's own rows (qa_q1big), with the shape
     * rules on (q1x1's state is made only then); 24->24 stays on the tiles */
    static const qconv_case big[] = {
        {"1x1 16->96 72x64 (q1x1 rows)", 1, 16, 72, 64, 96, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
         NULL},
        {"1x1 24->144 65x67 batch 2 (q1x1 rows)", 2, 24, 65, 67, 144, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
        {"1x1 24->24 65x67 (tiles)", 1, 24, 65, 67, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
    };
    unsetenv("PRECIS_QAMX_ALL");
    const qact *BA[3] = {NULL, &RELU, &CLIP};
    for (int i = 0; i < 3; i++)
        for (int xt = 0; xt < 2; xt++)
            for (int a = 0; a < 3; a++) {
                const int th = 1 + (i + xt + a) % 2;
                vs_dnnl(&big[i], T[xt], T[(xt + a) % 2], a != 1, PRECIS_UNDEFINED, BA[a],
                        (a + i) % 2 ? &AFF : NULL, th, NULL, "large image");
            }
    setenv("PRECIS_QAMX_ALL", "1", 1);
    /* PRECIS_QAMX=0 declines everything */
    qconv_node(&q, &CASES[8], PRECIS_INT8, PRECIS_INT8);
    qconv_inputs(&CASES[8], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    CHECK(qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qamx));
    setenv("PRECIS_QAMX", "0", 1);
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qamx));
    unsetenv("PRECIS_QAMX");
    qc_free(in, 5);
    printf("qamx: %d cases bit-identical to dnnl.qconv (%d output bytes); HardSwish: %d values "
           "one unit apart\n",
           n_exact, n_exact_vals, n_hsw_diff);
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    setenv("PRECIS_QAMX_ALL", "1", 1);
    double t0 = now_s();
    test_qamx();
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    return check_report("test_cpu_qamx");
}
