/* qdwconv, the CPU backend's own INT8 depthwise kernels, against the ref
 * backend (split from test_cpu_int8.c): the quad layout (3x3/5x5/9x3/1x7,
 * strides, dilation, pads, SAME_UPPER, 160..260 channels and 128..159 at
 * stride 1 with a uint8 src, linear tails, the small-image path, columns
 * split over 2 threads), the 17..32-channel int8 linear layers, zero weight
 * scales, what stays on oneDNN, and the direct path (uint8 src of 8/16/24/32
 * channels; images over QDW_DIRECT_MAX_PIX in bands of rows). Tolerances as
 * test_cpu_int8.c: int8/uint8 outputs may differ from ref by one unit near
 * halves. Speed prints of these kernels: test_cpu_int8 (bench_qdw).
 *
 * The process runs everything with the best ISA, then runs itself again
 * with PRECIS_CPU_ISA=scalar (the kernels decline there: the checks skip). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "cpu_check_qconv.h"

/* qdwconv (k_qdwconv.c): depthwise geometry (channel blocks of 64 and
 * their tails, kernel rows in quads of 4, strides, dilations, pads), int8 and
 * uint8 src, every output type, bias, activations and act2, zero w_scale
 * channels, NHWC only; skipped without AVX512-VNNI (the impl declines). */
static void test_qdwconv(void) {
    static const qconv_case dws[] = {
        {"dw 3x3", 1, 192, 14, 14, 192, 3, 3, 192, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 3x3 stride 2 batch 2", 2, 200, 15, 15, 200, 3, 3, 200, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 5x5 260 channels", 1, 260, 11, 9, 260, 5, 5, 260, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 211 channels asym pads", 1, 211, 9, 10, 211, 3, 3, 211, 1, 1, 1, 1, {0, 1, 2, 0}, NULL},
        {"dw dilation 2", 1, 256, 12, 13, 256, 3, 3, 256, 1, 1, 2, 2, {2, 2, 2, 2}, NULL},
        {"dw 1x7 stride 2x1", 1, 176, 8, 20, 176, 1, 7, 176, 2, 1, 1, 1, {0, 3, 0, 3}, NULL},
        {"dw 9x3 (3 quads)", 1, 170, 12, 8, 170, 9, 3, 170, 1, 1, 1, 1, {4, 1, 4, 1}, NULL},
        {"dw SAME_UPPER stride 2", 1, 168, 11, 12, 168, 3, 3, 168, 2, 2, 1, 1, {0}, "SAME_UPPER"},
        {"dw 2x2 stride 2 no pad", 1, 200, 6, 7, 200, 2, 2, 200, 2, 2, 1, 1, {0, 0, 0, 0}, NULL},
        /* quads in the padding skipped (PP-OCR cls's last stages) */
        {"dw 5x5 3x20 batch 2", 2, 168, 3, 20, 168, 5, 5, 168, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 5x5 2x19", 1, 200, 2, 19, 200, 5, 5, 200, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 5x5 stride 2x1 3x17", 1, 176, 3, 17, 176, 5, 5, 176, 2, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 5x5 one row", 1, 160, 1, 9, 160, 5, 5, 160, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 9x3 one row (no live quad but one)", 1, 160, 1, 6, 160, 9, 3, 160, 1, 1, 1, 1,
         {4, 1, 4, 1}, NULL},
        {"dw 3x3 pads 4 (rows of padding only)", 1, 160, 3, 5, 160, 3, 3, 160, 1, 1, 1, 1,
         {4, 1, 4, 1}, NULL},
        /* images of <= 4 rows: the small-image path (qdw_img_tables) */
        {"dw img 3x3 4 rows", 2, 192, 4, 11, 192, 3, 3, 192, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw img 5x5 stride 2 4 rows", 1, 168, 4, 9, 168, 5, 5, 168, 2, 2, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw img 216 ch 5x5 3 rows (linear tail)", 2, 216, 3, 21, 216, 5, 5, 216, 1, 1, 1, 1,
         {2, 2, 2, 2}, NULL},
        {"dw img 168 ch stride 2x1 3 rows", 1, 168, 3, 13, 168, 5, 5, 168, 2, 1, 1, 1,
         {2, 2, 2, 2}, NULL},
        {"dw img asym pads 3 rows", 1, 200, 3, 8, 200, 3, 3, 200, 1, 1, 1, 1, {0, 1, 1, 0}, NULL},
        {"dw img 9x3 pads 4 4 rows", 1, 160, 4, 6, 160, 9, 3, 160, 1, 1, 1, 1, {4, 1, 4, 1}, NULL},
        {"dw img 1x7 2 rows", 1, 176, 2, 12, 176, 1, 7, 176, 1, 1, 1, 1, {0, 3, 0, 3}, NULL},
        /* wide enough for 2 threads to split the columns */
        {"dw img wide 3 rows", 1, 200, 3, 70, 200, 5, 5, 200, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw img wide stride 2x1", 2, 168, 4, 41, 168, 3, 3, 168, 2, 1, 1, 1, {1, 1, 1, 1}, NULL},
        /* 128..159 channels at stride 1 (uint8 src: u8_mid_ok) */
        {"dw 144 3x3", 1, 144, 9, 10, 144, 3, 3, 144, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 128 5x5 batch 2", 2, 128, 7, 6, 128, 5, 5, 128, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
    };
    static const pr_dtype YT[3] = {PRECIS_INT8, PRECIS_UINT8, PRECIS_FLOAT32};
    static const pr_dtype XT[2] = {PRECIS_UINT8, PRECIS_INT8};
    static const qact relu6 = {"Clip", 0, 6}, hsw = {"HardSwish", 0, 0}, aff = {"Affine", 1.5f, -0.25f};
    const qact *A1[5] = {NULL, &ACTS[0], &relu6, &hsw, &ACTS[9]};
    qnode q;
    qconv_node(&q, &dws[0], PRECIS_UINT8, PRECIS_UINT8);
    qc_in in[5];
    qconv_inputs(&dws[0], PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    bool ok = qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv);
    qc_free(in, 5);
    if (!ok) {
        printf("qdwconv: declined (no AVX512-VNNI on %s): skipped\n", pr_cpu_isa_name());
        return;
    }
    qconv_impl = &pr_cpu_impl_qdwconv;
    int k = 0;
    for (size_t i = 0; i < sizeof dws / sizeof dws[0]; i++)
        for (int x = 0; x < 2; x++)
            for (int y = 0; y < 3; y++, k++)
                qconv_one(&dws[i], XT[x], YT[y], k % 4 != 3, PRECIS_UNDEFINED, true, A1[k % 5],
                          k % 3 == 1 ? &aff : NULL, 1 + k % 2, dws[i].name);
    qconv_impl = &pr_cpu_impl_dnnl_qconv;
    /* few channels (uint8 src below 160, 128 at stride 1; int8 below 40)
     * stay on oneDNN */
    static const qconv_case few[] = {
        {"dw 48", 1, 48, 9, 9, 48, 3, 3, 48, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 144 stride 2", 1, 144, 9, 9, 144, 3, 3, 144, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 127", 1, 127, 9, 9, 127, 3, 3, 127, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    };
    for (size_t i = 0; i < sizeof few / sizeof few[0]; i++)
        for (int x = 0; x < 2; x++) {
            qconv_node(&q, &few[i], XT[x], PRECIS_INT8);
            qconv_inputs(&few[i], XT[x], true, PRECIS_UNDEFINED, true, in);
            CHECK(qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv) == (XT[x] == PRECIS_INT8));
            qc_free(in, 5);
        }
    /* 17..32 channels, int8 src, fused epilogues, column stride 1: all
     * linear (qdw_lin_ok); uint8 src (17 channels: not the direct path),
     * float out, 16 channels or fewer, column
     * stride 2 stay on oneDNN */
    static const qconv_case sm[] = {
        {"dw 32 5x5 stride 2x1", 2, 32, 6, 20, 32, 5, 5, 32, 2, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw 24 3x3", 1, 24, 7, 9, 24, 3, 3, 24, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 17 3x3 stride 2x1", 1, 17, 8, 11, 17, 3, 3, 17, 2, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 30 5x5 2 rows", 1, 30, 2, 13, 30, 5, 5, 30, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
    };
    qconv_impl = &pr_cpu_impl_qdwconv;
    k = 0;
    for (size_t i = 0; i < sizeof sm / sizeof sm[0]; i++)
        for (int y = 0; y < 2; y++, k++)
            qconv_one(&sm[i], PRECIS_INT8, YT[y], k % 4 != 3, PRECIS_UNDEFINED, true,
                      (const qact *[]){NULL, &relu6, &hsw}[k % 3], k % 3 == 1 ? &aff : NULL,
                      1 + k % 2, sm[i].name);
    qconv_impl = &pr_cpu_impl_dnnl_qconv;
    for (int v = 0; v < 4; v++) {
        static const qconv_case s16 = {"dw 16", 1, 16, 5, 5, 16, 3, 3, 16, 1, 1, 1, 1,
                                       {1, 1, 1, 1}, NULL},
                                s2 = {"dw 32 stride 2", 1, 32, 8, 8, 32, 3, 3, 32, 2, 2, 1, 1,
                                      {1, 1, 1, 1}, NULL};
        const qconv_case *c = v == 2 ? &s16 : v == 3 ? &s2 : v == 0 ? &sm[2] : &sm[1];
        pr_dtype xd = v == 0 ? PRECIS_UINT8 : PRECIS_INT8;
        qconv_node(&q, c, xd, v == 1 ? PRECIS_FLOAT32 : PRECIS_INT8);
        qconv_inputs(c, xd, true, PRECIS_UNDEFINED, true, in);
        CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv));
        qc_free(in, 5);
    }
    /* declined: plain layout, a residual, a channel multiplier, groups */
    qconv_node(&q, &dws[0], PRECIS_UINT8, PRECIS_UINT8);
    qconv_inputs(&dws[0], PRECIS_UINT8, true, PRECIS_UINT8, false, in);
    CHECK(!qc_supports(&q.t, 4, in, false, &pr_cpu_impl_qdwconv));
    qn_float(&q, "z_scale", ZS);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_qdwconv));
    qc_free(in, 5);
    for (int g = 0; g < 2; g++) {
        const qconv_case *c = g ? &qconv_cases[6] : &qconv_cases[9];
        qconv_node(&q, c, PRECIS_UINT8, PRECIS_UINT8);
        qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
        CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv));
        qc_free(in, 5);
    }
    /* zero w_scale channels: real weights 0, the output is act(bias) */
    for (int x = 0; x < 2; x++) {
        const qconv_case *c = &dws[2];
        qconv_node(&q, c, XT[x], PRECIS_INT8);
        qconv_inputs(c, XT[x], true, PRECIS_UNDEFINED, true, in);
        float *ws = in[2].data;
        ws[0] = ws[70] = ws[c->M - 1] = 0.0f;
        qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_qdwconv, 2, 1, false, "qdwconv zero w_scale");
        qc_free(in, 5);
    }
}

/* qdwconv's direct path (k_qdwdirect.c): uint8 src of 8, 16 or 32 channels,
 * int8/uint8 out, fused acts; pixel pairs (8 channels, column stride 1) with
 * an odd last pixel, 8-pixel blocks and their tails, strides, dilation,
 * asymmetric pads, batch, rows split over 2 threads, images over
 * QDW_DIRECT_MAX_PIX pixels in bands of rows, 24 channels at column stride 1 (declined
 * at 2) and float out declined. */
static void test_qdw_direct(void) {
    static const qconv_case dc[] = {
        {"direct 8 3x3 stride 2x1", 2, 8, 12, 37, 8, 3, 3, 8, 2, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"direct 32 3x3", 1, 32, 6, 29, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"direct 16 5x5 stride 2", 3, 16, 9, 11, 16, 5, 5, 16, 2, 2, 1, 1, {2, 2, 2, 2}, NULL},
        {"direct 8 stride 2 (no pairs)", 1, 8, 10, 13, 8, 3, 3, 8, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"direct 32 dilation 2 asym pads", 1, 32, 8, 9, 32, 3, 3, 32, 1, 1, 2, 2, {0, 1, 2, 0},
         NULL},
        {"direct 32 wide (2 threads split rows)", 1, 32, 24, 96, 32, 3, 3, 32, 2, 1, 1, 1,
         {1, 1, 1, 1}, NULL},
        {"direct 8 over 4096 px (one band)", 1, 8, 70, 70, 8, 3, 3, 8, 1, 1, 1, 1, {1, 1, 1, 1},
         NULL},
        /* over 4096 px in bands of output rows (DD_BAND_BYTES: 4, 2 and 2
         * rows here; with 2 threads each takes half the rows, then bands) */
        {"direct 32 banded", 1, 32, 14, 300, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"direct 8 banded stride 2 dilation 2 batch 2", 2, 8, 19, 1000, 8, 3, 3, 8, 2, 2, 2, 2,
         {2, 1, 0, 2}, NULL},
        {"direct 24 5x5 banded", 1, 24, 12, 400, 24, 5, 5, 24, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"direct 24 3x3 stride 2x1", 2, 24, 12, 23, 24, 3, 3, 24, 2, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"direct 24 5x5 dilation 2x1 asym pads", 1, 24, 9, 30, 24, 5, 5, 24, 1, 1, 2, 1,
         {3, 0, 1, 2}, NULL},
        {"direct 16 7x1 one column", 1, 16, 11, 1, 16, 7, 1, 16, 1, 1, 1, 1, {3, 0, 3, 0}, NULL},
        {"direct 32 wide stride 1 batch 3", 3, 32, 5, 61, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1},
         NULL},
    };
    static const pr_dtype YT[2] = {PRECIS_UINT8, PRECIS_INT8};
    static const qact relu6 = {"Clip", 0, 6}, hsw = {"HardSwish", 0, 0}, aff = {"Affine", 1.5f, -0.25f};
    const qact *A1[4] = {&ACTS[0], NULL, &relu6, &hsw};
    qnode q;
    qc_in in[5];
    qconv_node(&q, &dc[0], PRECIS_UINT8, PRECIS_UINT8);
    qconv_inputs(&dc[0], PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    bool ok = qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv);
    qc_free(in, 5);
    if (!ok) {
        printf("qdwconv direct: declined (no AVX512-VNNI on %s): skipped\n", pr_cpu_isa_name());
        return;
    }
    qconv_impl = &pr_cpu_impl_qdwconv;
    int k = 0;
    for (size_t i = 0; i < sizeof dc / sizeof dc[0]; i++)
        for (int y = 0; y < 2; y++)
            for (int a = 0; a < 4; a++)
                for (int f = 0; f < 2; f++, k++)
                    qconv_one(&dc[i], PRECIS_UINT8, YT[y], k % 5 != 4, PRECIS_UNDEFINED, true,
                              A1[a], f ? &aff : NULL, 1 + (k / 2) % 2, dc[i].name);
    qconv_impl = &pr_cpu_impl_dnnl_qconv;
    static const qconv_case c24 = {"dw 24 stride 2", 1, 24, 6, 9, 24, 3, 3, 24, 2, 2, 1, 1,
                                   {1, 1, 1, 1}, NULL};
    for (int v = 0; v < 2; v++) {
        const qconv_case *c = v ? &dc[1] : &c24;
        qconv_node(&q, c, PRECIS_UINT8, v ? PRECIS_FLOAT32 : PRECIS_UINT8);
        qconv_inputs(c, PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
        CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qdwconv));
        qc_free(in, 5);
    }
    /* zero w_scale channels: act(bias) */
    qconv_node(&q, &dc[1], PRECIS_UINT8, PRECIS_UINT8);
    qconv_inputs(&dc[1], PRECIS_UINT8, true, PRECIS_UNDEFINED, true, in);
    float *ws = in[2].data;
    ws[0] = ws[17] = ws[31] = 0.0f;
    qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_qdwconv, 1, 1, false, "qdwconv direct zero w_scale");
    qc_free(in, 5);
}

int main(int argc, char **argv) {
    const char *cap = getenv("PRECIS_CPU_ISA");
    double t0 = now_s();
    test_qdwconv();
    test_qdw_direct();
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    int rc = check_report("test_cpu_qdw");
    if (cap) return rc;
    return q8_also_scalar(argv, rc, "test_cpu_qdw");
}
