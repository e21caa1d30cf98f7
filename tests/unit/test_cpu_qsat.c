/* The INT8 epilogues without the clamps that the output range or the
 * saturating packs make redundant (PRECIS_QACT_SAT: k_qfc.h
 * pr_qfc_act_sat for q1x1 / qamx, k_qdwconv.h QDW_SAT_* for the depthwise
 * quad and direct paths), checked bit for bit against the same impl
 * prepared with PRECIS_QACT_SAT=0 (every clamp kept) on the same node,
 * inputs and buffers, and against ref (one unit near halves, as the
 * impls' own tests).
 *
 * Cases: Relu, Clip(0, b) with b / y_scale at 200 (the min kept), 254.5
 * (rounds to 254: kept), 254.51 and 255 (rounds to 255: dropped) and 1000,
 * Clip(-0.5, 2) with alpha / y_scale above and under -128 (int8 out), Clip
 * with alpha / y_scale one unit inside the range (the max kept),
 * HardSwish and no act with a y_scale that keeps the sums' bound under 2^30
 * and one (1e-9) that does not; no act with an int8 / uint8 residual
 * (qamx); int8 / uint8 src and out, act2 Affine (the
 * clamps kept), 1-2 threads; q1x1's tiles of 4 vectors and their 1-3
 * vector tails, its OC-8 pixel pairs, an int8 src biased chunk by chunk
 * before the clamp-free tiles (1 and 2 threads), qamx's tiles (1x1 and 3x3), q1x1's
 * rows for a large image under qamx, the depthwise quad path (3x3 / 5x5,
 * the small-image tables, a linear last block) and the direct path (8..32
 * channels, packed and vpmovdb stores), qstem (3 -> 8 stride 2: packs and
 * the packed transpose tables). Where the CPU lacks AVX512-VNNI or
 * AMX-INT8 an impl declines and its cases are skipped with a message. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "cpu_check_qconv.h"

static int n_same, n_cases_sat, n_skip;

/* Prepares impl on the node with PRECIS_QACT_SAT as given (NULL: unset). */
static bool prep(qc_prep *p, const tnode *t, int n_in, const qc_in *in, const pr_cpu_impl *impl,
                 int threads, const char *sat, const char *label) {
    if (sat)
        setenv("PRECIS_QACT_SAT", sat, 1);
    else
        unsetenv("PRECIS_QACT_SAT");
    const bool ok = qc_prepare(p, t, n_in, in, 1, true, impl, threads, label);
    unsetenv("PRECIS_QACT_SAT");
    return ok;
}

/* One case: impl with the clamps dropped and kept, bytes equal; then ref. */
static void same_z(const pr_cpu_impl *impl, const qconv_case *c, pr_dtype xdt, pr_dtype ydt,
                   pr_dtype zdt, const qact *a1, const qact *a2, float ys, int threads,
                   const char *what) {
    qnode q;
    qconv_node(&q, c, xdt, ydt);
    if (a1) qn_act(&q, "act", a1->name, a1->alpha, a1->beta);
    if (a2) qn_act(&q, "act2", a2->name, a2->alpha, a2->beta);
    if (zdt != PRECIS_UNDEFINED) qn_float(&q, "z_scale", ZS);
    for (int i = 0; i < q.t.node.n_attrs; i++)
        if (!strcmp(q.attrs[i].name, "y_scale")) q.attrs[i].f = ys;
    qc_in in[5];
    qconv_inputs(c, xdt, true, zdt, true, in);
    const int n_in = zdt != PRECIS_UNDEFINED ? 5 : 4;
    char label[240];
    snprintf(label, sizeof label, "qsat %s %s %s [%s->%s %s%s%s y_scale %g %dt]", impl->name,
             c->name, what, dn(xdt), dn(ydt), a1 ? a1->name : "-", a2 ? " act2 " : "",
             a2 ? a2->name : "", (double)ys, threads);
    if (!qc_supports(&q.t, n_in, in, true, impl)) {
        n_skip++;
        qc_free(in, 5);
        return;
    }
    qc_prep pk, pd;
    const bool okk = prep(&pk, &q.t, n_in, in, impl, threads, "0", label);
    const bool okd = prep(&pd, &q.t, n_in, in, impl, threads, NULL, label);
    CHECK(okk && okd);
    if (okk && okd) {
        pr_err e = {0};
        pr_buf iin[5], yk, yd;
        const pr_buf *iinp[5];
        memset(iin, 0, sizeof iin);
        for (int i = 0; i < n_in; i++) {
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
        pr_buf_alloc(&yk, ydt, 4, yd4, "yk", &e);
        pr_buf_alloc(&yd, ydt, 4, yd4, "yd", &e);
        memset(yk.data, 0x5a, yk.nbytes);
        memset(yd.data, 0xa5, yd.nbytes);
        pr_buf *ok[1] = {&yk}, *od[1] = {&yd};
        pr_cpu_exec xk = {threads, NULL, NULL, 0, NULL, 0}, xd = xk;
        pr_kernel kk = {pk.gi, &pk.gi->nodes[0], n_in, iinp, 1, ok, &e, threads};
        pr_kernel kd = {pd.gi, &pd.gi->nodes[0], n_in, iinp, 1, od, &e, threads};
        const precis_status sk = impl->run(pk.state, &kk, &xk);
        const precis_status sd = impl->run(pd.state, &kd, &xd);
        CHECK(sk == PRECIS_OK && sd == PRECIS_OK);
        if (sk || sd) fprintf(stderr, "%s: run failed: %s\n", label, e.msg);
        if (!sk && !sd) {
            const uint8_t *a = yk.data, *d = yd.data;
            const uint8_t lo = ydt == PRECIS_UINT8 ? 0 : 0x80, hi = ydt == PRECIS_UINT8 ? 255 : 127;
            int64_t bad = 0, first = -1, at_lo = 0, at_hi = 0;
            for (size_t i = 0; i < yk.nbytes; i++) {
                if (a[i] != d[i] && bad++ == 0) first = (int64_t)i;
                at_lo += a[i] == lo;
                at_hi += a[i] == hi;
            }
            CHECK(bad == 0);
            if (bad)
                fprintf(stderr,
                        "%s: %lld of %zu bytes differ (first at %lld: %d kept, %d dropped)\n", label,
                        (long long)bad, yk.nbytes, (long long)first, a[first], d[first]);
            else
                n_same++;
            n_cases_sat += at_lo > 0 && at_hi > 0;
        }
        free(xk.scratch);
        free(xd.scratch);
        pr_buf_free(&yk);
        pr_buf_free(&yd);
        for (int i = 0; i < n_in; i++) pr_buf_free(&iin[i]);
    }
    qc_release(&pk);
    qc_release(&pd);
    /* against ref, the clamps dropped */
    qc_run(&q.t, n_in, in, 1, true, impl, threads, 1, false, label);
    qc_free(in, 5);
}

static void same(const pr_cpu_impl *impl, const qconv_case *c, pr_dtype xdt, pr_dtype ydt,
                 const qact *a1, const qact *a2, float ys, int threads, const char *what) {
    same_z(impl, c, xdt, ydt, PRECIS_UNDEFINED, a1, a2, ys, threads, what);
}

static const qact RELU = {"Relu", 0, 0}, HSW = {"HardSwish", 0, 0}, AFF = {"Affine", 1.5f, -0.25f};

/* Every act / y_scale combination above on one case of impl. */
static void all_acts(const pr_cpu_impl *impl, const qconv_case *c, pr_dtype xdt, int th) {
    static const pr_dtype YT[2] = {PRECIS_UINT8, PRECIS_INT8};
    static const float T[5] = {200.0f, 254.5f, 254.51f, 255.0f, 1000.0f};
    const qact clipb = {"Clip", 0.0f, 0.25f}, clipn = {"Clip", -0.5f, 2.0f};
    /* alpha / y_scale one unit inside the range (1 for uint8, -127 for int8):
     * the max kept */
    const qact clipu = {"Clip", 0.03f, 2.0f}, clips = {"Clip", -127.0f * 0.03f, 2.0f};
    for (int y = 0; y < 2; y++) {
        const pr_dtype yd = YT[y];
        for (int t = 0; t < 5; t++) /* Relu6-like: b / y_scale = T[t] */
            same(impl, c, xdt, yd, &clipb, NULL, clipb.beta / T[t], th, "clip [0, b]");
        same(impl, c, xdt, yd, &clipb, &AFF, clipb.beta / 255.0f, th, "clip + act2");
        same(impl, c, xdt, yd, &clipn, NULL, 0.003f, th, "clip [-0.5, 2], alpha under -128");
        same(impl, c, xdt, yd, &clipn, NULL, 0.03f, th, "clip [-0.5, 2]");
        same(impl, c, xdt, yd, yd == PRECIS_UINT8 ? &clipu : &clips, NULL, 0.03f, th,
             "clip, alpha one unit inside");
        same(impl, c, xdt, yd, &RELU, NULL, YS, th, "relu");
        same(impl, c, xdt, yd, &RELU, NULL, 1e-9f, th, "relu, unbounded");
        same(impl, c, xdt, yd, &HSW, NULL, YS, th, "hardswish");
        same(impl, c, xdt, yd, &HSW, NULL, 1e-9f, th, "hardswish, unbounded");
        same(impl, c, xdt, yd, NULL, NULL, YS / 8, th, "none");
        same(impl, c, xdt, yd, NULL, NULL, 1e-9f, th, "none, unbounded");
    }
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    double t0 = now_s();
    unsetenv("PRECIS_QACT_SAT");
    static const qconv_case pw[] = {
        {"pw 16->96 5x7 (4 + 2 vectors)", 1, 16, 5, 7, 96, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 8->24 6x5 batch 2", 2, 8, 6, 5, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 4->8 3x5 (pixel pairs)", 1, 4, 3, 5, 8, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 32->200 2x9", 1, 32, 2, 9, 200, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"pw 16->40 3x5 (3 vectors, 8 lanes of the last)", 1, 16, 3, 5, 40, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
        {"pw 8->104 2x7 (4 + 3 vectors)", 1, 8, 2, 7, 104, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0},
         NULL},
        {"pw 20->96 37x29 (threads split the pixels)", 1, 20, 37, 29, 96, 1, 1, 1, 1, 1, 1, 1,
         {0, 0, 0, 0}, NULL},
    };
    for (int i = 0; i < 7; i++)
        for (int x = 0; x < 2; x++)
            all_acts(&pr_cpu_impl_q1x1, &pw[i], x ? PRECIS_INT8 : PRECIS_UINT8, 1 + (i + x) % 2);
    /* qamx: every shape rule off (small cases), then a large image of a
     * small-IC expansion (q1x1's rows under qamx, the rules on) */
    static const qconv_case qa[] = {
        {"1x1 16->24 9x11", 1, 16, 9, 11, 24, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0, 0}, NULL},
        {"3x3 32->64 10x9 pad 1", 1, 32, 10, 9, 64, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    };
    setenv("PRECIS_QAMX_ALL", "1", 1);
    for (int i = 0; i < 2; i++) all_acts(&pr_cpu_impl_qamx, &qa[i], PRECIS_UINT8, 1 + i);
    /* no act with an int8 / uint8 residual (the projections' sum) */
    for (int i = 0; i < 2; i++)
        for (int v = 0; v < 8; v++)
            same_z(&pr_cpu_impl_qamx, &qa[i], v % 2 ? PRECIS_INT8 : PRECIS_UINT8,
                   v / 2 % 2 ? PRECIS_INT8 : PRECIS_UINT8, v / 4 ? PRECIS_INT8 : PRECIS_UINT8,
                   NULL, NULL, v % 3 ? YS : 1e-9f, 1 + v % 2, "residual");
    unsetenv("PRECIS_QAMX_ALL");
    static const qconv_case big = {"1x1 16->96 72x64 (q1x1 rows)", 1, 16, 72, 64, 96, 1, 1, 1,
                                   1, 1, 1, 1, {0, 0, 0, 0}, NULL};
    const qact relu6 = {"Clip", 0.0f, 6.0f};
    same(&pr_cpu_impl_qamx, &big, PRECIS_UINT8, PRECIS_UINT8, &relu6, NULL, 6.0f / 255.0f, 2,
         "relu6");
    same(&pr_cpu_impl_qamx, &big, PRECIS_INT8, PRECIS_UINT8, &relu6, NULL, 0.03f, 1, "relu6");
    same(&pr_cpu_impl_qamx, &big, PRECIS_UINT8, PRECIS_UINT8, &RELU, NULL, YS, 1, "relu");
    /* depthwise: the quad path (int8 src from 40 channels, uint8 from 128 at
     * stride 1), small images, a linear last block; the direct path (uint8
     * src of 8..32 channels: packed 64-byte stores and vpmovdb tails) */
    static const qconv_case dw[] = {
        {"dw 3x3 144 ch", 1, 144, 9, 13, 144, 3, 3, 144, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
        {"dw 3x3 stride 2 192 ch batch 2", 2, 192, 9, 10, 192, 3, 3, 192, 2, 2, 1, 1,
         {1, 1, 1, 1}, NULL},
        {"dw 5x5 88 ch", 1, 88, 7, 12, 88, 5, 5, 88, 1, 1, 1, 1, {2, 2, 2, 2}, NULL},
        {"dw img 5x5 200 ch 2 rows (linear tail)", 1, 200, 2, 19, 200, 5, 5, 200, 1, 1, 1, 1,
         {2, 2, 2, 2}, NULL},
        {"dw direct 3x3 32 ch 20x24", 1, 32, 20, 24, 32, 3, 3, 32, 1, 1, 1, 1, {1, 1, 1, 1},
         NULL},
        {"dw direct 3x3 stride 2x1 24 ch 12x31", 1, 24, 12, 31, 24, 3, 3, 24, 2, 1, 1, 1,
         {1, 1, 1, 1}, NULL},
        {"dw direct 3x3 8 ch 9x13", 1, 8, 9, 13, 8, 3, 3, 8, 1, 1, 1, 1, {1, 1, 1, 1}, NULL},
    };
    for (int i = 0; i < 7; i++)
        for (int x = 0; x < 2; x++)
            all_acts(&pr_cpu_impl_qdwconv, &dw[i], x ? PRECIS_INT8 : PRECIS_UINT8, 1 + (i + x) % 2);
    /* qstem (k_qstem.c qs_pk_ok: packs + the packed transpose tables):
     * cls's 3 -> 8 stride-2 stem, 1 and 4 channels, odd widths (a partial
     * 16-pixel step), asymmetric pads, batches */
    static const qconv_case st[] = {
        {"stem 3->8 12x38 pad 1 batch 2", 2, 3, 12, 38, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1},
         NULL},
        {"stem 1->8 9x37 pads 0/1", 1, 1, 9, 37, 8, 3, 3, 1, 2, 2, 1, 1, {0, 1, 1, 0}, NULL},
        {"stem 4->8 11x64 pad 1 batch 3", 3, 4, 11, 64, 8, 3, 3, 1, 2, 2, 1, 1, {1, 1, 1, 1},
         NULL},
    };
    for (int i = 0; i < 3; i++)
        for (int x = 0; x < 2; x++)
            all_acts(&pr_cpu_impl_qstem, &st[i], x ? PRECIS_INT8 : PRECIS_UINT8, 1 + (i + x) % 2);
    printf("qsat: %d cases bit-identical with the clamps kept (%d reach both ends of the range); "
           "%d declined (skipped)\n",
           n_same, n_cases_sat, n_skip);
    CHECK(n_same > 0);
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    return check_report("test_cpu_qsat");
}
