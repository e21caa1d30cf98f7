/* qstem (k_qstem.c), the CPU backend's own INT8 stem convolution (3x3
 * stride 2 over 1..4 NHWC input channels into 8), against the ref
 * backend: PP-OCR cls's stem shape (3 -> 8 at 48x192, pads 1), odd and
 * short widths (16-pixel steps with a tail), pads 0 / 1 / asymmetric, 1, 2
 * and 4 input channels, batch, bands of output rows (one image
 * in several, 1-2 threads: the bands split), int8
 * and uint8 src and out, with and without bias, every act it takes with and
 * without act2 Affine, zero w_scale channels; what it declines. Tolerance
 * as test_cpu_int8.c: one unit near halves (ref sums dequantized floats).
 *
 * The process runs everything with the best ISA, then runs itself again
 * with PRECIS_CPU_ISA=scalar (the kernel declines there: the checks skip). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "cpu_check_qconv.h"

static void test_qstem(void) {
    static const qconv_case sc[] = {
        {"stem cls 3->8 48x192", 1, 3, 48, 192, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"stem 3->8 odd 15x37 batch 2", 2, 3, 15, 37, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1},
         NULL},
        {"stem 3->8 no pads 11x40", 1, 3, 11, 40, 8, 3, 3, 1, 2, 2, 1, 1, {0, 0, 0, 0}, NULL},
        {"stem 4->8 asym pads 10x9 batch 3", 3, 4, 10, 9, 8, 3, 3, 1, 2, 2, 1, 1, {1, 0, 0, 1},
         NULL},
        {"stem 1->8 pads 0,1,1,0 7x50", 1, 1, 7, 50, 8, 3, 3, 1, 2, 2, 1, 1, {0, 1, 1, 0}, NULL},
        {"stem 2->8 one row 3x64", 1, 2, 3, 64, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"stem 3->8 wide 40x250 (2 bands)", 2, 3, 40, 250, 8, 3, 3, 1, 2, 2, 1, 1,
         {1, 1, 1, 1}, NULL},
        {"stem 3->8 60x700 (bands of 7 rows)", 1, 3, 60, 700, 8, 3, 3, 1, 2, 2, 1, 1,
         {1, 0, 1, 1}, NULL},
    };
    static const pr_dtype XT[2] = {PRECIS_INT8, PRECIS_UINT8};
    static const pr_dtype YT[2] = {PRECIS_INT8, PRECIS_UINT8};
    static const qact relu6 = {"Clip", 0, 6}, hsw = {"HardSwish", 0, 0},
                      aff = {"Affine", 1.5f, -0.25f};
    const qact *A1[4] = {NULL, &ACTS[0], &relu6, &hsw};
    qnode q;
    qc_in in[5];
    qconv_node(&q, &sc[0], PRECIS_INT8, PRECIS_INT8);
    qconv_inputs(&sc[0], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    bool ok = qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qstem);
    qc_free(in, 5);
    if (!ok) {
        printf("qstem: declined (no AVX512-VNNI/VBMI on %s): skipped\n", pr_cpu_isa_name());
        return;
    }
    qconv_impl = &pr_cpu_impl_qstem;
    int k = 0;
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
        for (int xt = 0; xt < 2; xt++)
            for (int y = 0; y < 2; y++)
                for (int a = 0; a < 4; a++)
                    for (int f = 0; f < 2; f++, k++)
                        qconv_one(&sc[i], XT[xt], YT[y], k % 5 != 4, PRECIS_UNDEFINED, true,
                                  A1[a], f ? &aff : NULL, 1 + (k / 3) % 2, sc[i].name);
    qconv_impl = &pr_cpu_impl_dnnl_qconv;
    /* zero w_scale channels: real weights 0, the output is act(bias) */
    for (int x = 0; x < 2; x++) {
        const qconv_case *c = &sc[1];
        qconv_node(&q, c, XT[x], PRECIS_INT8);
        qn_act(&q, "act", "HardSwish", 0, 0);
        qconv_inputs(c, XT[x], true, PRECIS_UNDEFINED, true, in);
        float *ws = in[2].data;
        ws[0] = ws[5] = ws[7] = 0.0f;
        qc_run(&q.t, 4, in, 1, true, &pr_cpu_impl_qstem, 1 + x, 1, false, "qstem zero w_scale");
        qc_free(in, 5);
    }
    /* declined: stride 1, 5 input channels, 12 / 16 / 32 outputs, pads 2, float
     * out, plain layout, a residual, a 7x7 kernel, dilation 2, groups */
    static const qconv_case no[] = {
        {"stride 1", 1, 3, 12, 12, 8, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"5 channels", 1, 5, 12, 12, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"12 outputs", 1, 3, 12, 12, 12, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"16 outputs", 1, 3, 12, 12, 16, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"32 outputs", 1, 3, 12, 12, 32, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"pads 2", 1, 3, 12, 12, 8, 3, 3, 1, 2, 2, 1, 1, {2, 2, 2, 2}, NULL},
        {"7x7", 1, 3, 23, 23, 16, 7, 7, 1, 2, 2, 1, 1, {3, 3, 3, 3}, NULL},
        {"dilation 2", 1, 3, 12, 12, 8, 3, 3, 1, 2, 2, 2, 2, {2, 2, 2, 2}, NULL},
        {"groups 2", 1, 4, 12, 12, 8, 3, 3, 2, 2, 2, 1, 1, {1, 1, 1, 1}, NULL},
        {"SAME_UPPER", 1, 3, 12, 12, 8, 3, 3, 1, 2, 2, 1, 1, {0, 0, 0, 0}, "SAME_UPPER"},
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        qconv_node(&q, &no[i], PRECIS_INT8, PRECIS_INT8);
        qconv_inputs(&no[i], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
        if (qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qstem)) {
            printf("qstem took %s\n", no[i].name);
            CHECK(false);
        }
        qc_free(in, 5);
    }
    qconv_node(&q, &sc[0], PRECIS_INT8, PRECIS_FLOAT32);
    qconv_inputs(&sc[0], PRECIS_INT8, true, PRECIS_UNDEFINED, true, in);
    CHECK(!qc_supports(&q.t, 4, in, true, &pr_cpu_impl_qstem));
    qc_free(in, 5);
    qconv_node(&q, &sc[0], PRECIS_INT8, PRECIS_INT8);
    qconv_inputs(&sc[0], PRECIS_INT8, true, PRECIS_UNDEFINED, false, in);
    CHECK(!qc_supports(&q.t, 4, in, false, &pr_cpu_impl_qstem));
    qc_free(in, 5);
    qconv_node(&q, &sc[0], PRECIS_INT8, PRECIS_INT8);
    qn_float(&q, "z_scale", ZS);
    qconv_inputs(&sc[0], PRECIS_INT8, true, PRECIS_INT8, true, in);
    CHECK(!qc_supports(&q.t, 5, in, true, &pr_cpu_impl_qstem));
    qc_free(in, 5);
}

int main(int argc, char **argv) {
    const char *cap = getenv("PRECIS_CPU_ISA");
    double t0 = now_s();
    test_qstem();
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    int rc = check_report("test_cpu_qstem");
    if (cap) return rc;
    return q8_also_scalar(argv, rc, "test_cpu_qstem");
}
