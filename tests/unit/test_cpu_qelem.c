/* The CPU backend's INT8 elementwise and pooling impls against the ref
 * backend (split from test_cpu_int8.c): qbinary (QBinary: Add/Sub/Mul, every
 * int8/uint8/float32 operand and output combination, same shape, per-channel
 * (NHWC tiles, small images), scalar, spatial and batch broadcasts, either
 * operand order, float initializer operands, plain/NHWC/mixed layouts, every
 * act, in place: bit-exact but for transcendental acts) and QPool in the pool
 * impl (GlobalAveragePool and AveragePool windows, plain and NHWC, int8 and
 * uint8 in, float32/int8/uint8 out). Also speed prints: QBinary / QPool
 * against the float kernels on det's SE shapes (no timed assertion).
 *
 * The process runs everything with the best ISA, then runs itself again
 * with PRECIS_CPU_ISA=scalar for our own kernels' portable fallbacks. */
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

/* ------------------------------------------------------------ QBinary, QPool */

static const float AS_S8 = 1.0f / 40, AS_U8 = 1.0f / 90, BS_S8 = 1.0f / 50, BS_U8 = 1.0f / 70;

static void qbinary_node(qnode *q, const char *kind, pr_dtype a, pr_dtype b, pr_dtype y,
                         const char *act, float alpha, float beta) {
    qn_init(q, PR_OP_QBinary, "QBinary", 1, true);
    qn_str(q, "kind", kind);
    if (a != PRECIS_FLOAT32) qn_float(q, "a_scale", a == PRECIS_UINT8 ? AS_U8 : AS_S8);
    if (b != PRECIS_FLOAT32) qn_float(q, "b_scale", b == PRECIS_UINT8 ? BS_U8 : BS_S8);
    if (y != PRECIS_FLOAT32) {
        qn_int(q, "y_type", y);
        qn_float(q, "y_scale", y == PRECIS_UINT8 ? 0.02f : 0.03f);
    }
    if (act) qn_act(q, "act", act, alpha, beta);
}

/* The int8 kinds of operand b: an activation of a's shape, per channel
 * (N,C,1,1 activation; C,1,1 float initializer), scalar, a spatial map
 * broadcast over channels, a whole [1,C,H,W] over the batch. */
typedef struct qb_shape {
    const char *name;
    int rank;
    int64_t dims[4];
    bool init; /* b as a float32 initializer */
} qb_shape;

static void qbinary_one(const char *kind, pr_dtype ad, pr_dtype bd, pr_dtype yd,
                        const qb_shape *bs, const int64_t *adims, bool nhwc, bool swap,
                        const qact *act, int th, bool inplace) {
    qnode q;
    bool exact = !act || act->name[0] == 'R' || act->name[0] == 'C' || act->name[0] == 'H';
    pr_dtype da = swap ? bd : ad, db = swap ? ad : bd;
    qbinary_node(&q, kind, da, db, yd, act ? act->name : NULL, act ? act->alpha : 0,
                 act ? act->beta : 0);
    qc_in x = q_act("a", 4, adims, ad, nhwc), z;
    if (bs->init) {
        int64_t n = pr_numel(bs->rank, bs->dims);
        float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++) v[i] = cc_rand(-1.5f, 1.5f);
        z = q_init("b", bs->rank, bs->dims, PRECIS_FLOAT32, v);
        free(v);
    } else {
        z = q_act("b", bs->rank, bs->dims, bd, nhwc);
    }
    qc_in in[2] = {swap ? z : x, swap ? x : z};
    in[0].name = "a";
    in[1].name = "b";
    char label[200];
    snprintf(label, sizeof label, "qbinary %s %s%s%s -> %s, b %s%s, %s%s, %d threads", kind,
             dn(in[0].dt), swap ? " (b first) " : ", ", dn(in[1].dt), dn(yd), bs->name,
             bs->init ? " init" : "", nhwc ? "nhwc" : "plain", act ? act->name : "", th);
    qc_threads = th;
    qc_prep p;
    if (qc_prepare(&p, &q.t, 2, in, 1, nhwc, &pr_cpu_impl_qbinary, th, label)) {
        qc_exec(&p, in, -1, PRECIS_UNDEFINED, 1, exact, label);
        if (inplace) {
            /* the impl sees the output's dims (inferred in a real graph) */
            pr_tensor *y = &p.gi->tensors[pr_node_out(&p.gi->nodes[0], 0)];
            y->rank = 4;
            y->dtype = yd;
            memcpy(y->dims, adims, 4 * sizeof *adims);
            bool same_size = pr_dtype_size(yd) == pr_dtype_size(ad);
            CHECK(pr_cpu_impl_qbinary.inplace_input(p.gi, &p.gi->nodes[0]) == (same_size ? 0 : -1));
            if (same_size) qc_exec(&p, in, 0, PRECIS_UNDEFINED, 1, exact, label);
        }
    }
    qc_release(&p);
    qc_free(in, 2);
}

static void test_qbinary(void) {
    static const char *kinds[3] = {"Add", "Sub", "Mul"};
    static const pr_dtype DT[3] = {PRECIS_INT8, PRECIS_UINT8, PRECIS_FLOAT32};
    const int64_t A[4] = {2, 21, 9, 13};
    const qb_shape same = {"same", 4, {2, 21, 9, 13}, false};
    const qb_shape shapes[] = {
        {"N,C,1,1", 4, {2, 21, 1, 1}, false}, {"1,C,1,1", 4, {1, 21, 1, 1}, false},
        {"C,1,1", 3, {21, 1, 1}, true},       {"scalar", 0, {0}, true},
        {"[1]", 1, {1}, false},               {"N,1,H,W", 4, {2, 1, 9, 13}, false},
        {"1,C,H,W", 4, {1, 21, 9, 13}, false},
    };
    /* every dtype combination and kind, same shape, both layouts */
    int k = 0;
    for (int kd = 0; kd < 3; kd++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                for (int o = 0; o < 3; o++, k++)
                    qbinary_one(kinds[kd], DT[i], DT[j], DT[o], &same, A, k % 2, false, NULL,
                                1 + k % 2, false);
    /* broadcasts, operand order, layouts */
    k = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int l = 0; l < 2; l++)
            for (int sw = 0; sw < 2; sw++, k++) {
                pr_dtype bd = shapes[s].init ? PRECIS_FLOAT32 : DT[k % 2];
                qbinary_one(kinds[k % 3], DT[(k + 1) % 2], bd, DT[k % 3], &shapes[s], A, l, sw,
                            NULL, 1 + k % 2, false);
            }
    /* activations */
    for (size_t i = 0; i < sizeof ACTS / sizeof ACTS[0]; i++)
        qbinary_one("Add", PRECIS_INT8, PRECIS_UINT8, DT[i % 3], &same, A, i % 2, false, &ACTS[i],
                    1, false);
    /* in place, large enough for two threads (tails: C 37) */
    const int64_t big[4] = {1, 37, 41, 43};
    const qb_shape bsame = {"same", 4, {1, 37, 41, 43}, false}, bpc = {"N,C,1,1", 4, {1, 37, 1, 1},
                                                                        false};
    for (int l = 0; l < 2; l++) {
        qbinary_one("Add", PRECIS_INT8, PRECIS_INT8, PRECIS_UINT8, &bsame, big, l, false, NULL, 2,
                    true);
        qbinary_one("Mul", PRECIS_INT8, PRECIS_UINT8, PRECIS_INT8, &bpc, big, l, false, NULL, 2,
                    true);
        qbinary_one("Sub", PRECIS_UINT8, PRECIS_INT8, PRECIS_FLOAT32, &bsame, big, l, false, NULL,
                    2, true); /* no sharing: float out */
    }
    /* per channel on a small image (the NHWC tile shorter than 16 pixels) */
    const int64_t tiny[4] = {2, 70, 3, 2};
    const qb_shape tpc = {"N,C,1,1", 4, {2, 70, 1, 1}, false};
    for (int sw = 0; sw < 2; sw++)
        qbinary_one("Sub", PRECIS_UINT8, PRECIS_INT8, PRECIS_INT8, &tpc, tiny, true, sw, NULL, 1,
                    false);
    /* the SE gate (qv_mul_tile): int8/uint8 x a float per-channel gate ->
     * int8/uint8, PP-OCR cls's 200 channels x 2x96, both operand orders,
     * 1-2 threads; then gates of inf, NaN and 1e30 (the checked path) */
    const int64_t se[4] = {2, 200, 2, 96}, se2[4] = {1, 40, 3, 7};
    const qb_shape sepc = {"N,C,1,1 gate", 4, {2, 200, 1, 1}, false},
                   sepc2 = {"N,C,1,1 gate", 4, {1, 40, 1, 1}, false};
    k = 0;
    for (int ad = 0; ad < 2; ad++)
        for (int yd = 0; yd < 2; yd++)
            for (int sw = 0; sw < 2; sw++, k++) {
                qbinary_one("Mul", DT[ad], PRECIS_FLOAT32, DT[yd], &sepc, se, true, sw, NULL,
                            1 + k % 2, false);
                qbinary_one("Mul", DT[ad], PRECIS_FLOAT32, DT[yd], &sepc2, se2, true, sw, NULL, 1,
                            false);
            }
    for (int v = 0; v < 3; v++) {
        qnode q;
        qbinary_node(&q, "Mul", PRECIS_INT8, PRECIS_FLOAT32, PRECIS_INT8, NULL, 0, 0);
        qc_in in[2] = {q_act("a", 4, se2, PRECIS_INT8, true),
                       q_act("b", 4, sepc2.dims, PRECIS_FLOAT32, true)};
        float *gv = in[1].data;
        gv[5] = v == 0 ? INFINITY : v == 1 ? NAN : 1e30f;
        gv[6] = -gv[5];
        qc_run(&q.t, 2, in, 1, true, &pr_cpu_impl_qbinary, 1, 0, true,
               v == 0 ? "qbinary gate inf" : v == 1 ? "qbinary gate NaN" : "qbinary gate 1e30");
        qc_free(in, 2);
    }
    /* mixed layouts (a NHWC, b a plain rank-4 activation): the strided rows */
    {
        qnode q;
        qbinary_node(&q, "Add", PRECIS_INT8, PRECIS_UINT8, PRECIS_INT8, NULL, 0, 0);
        qc_in in[2] = {q_act("a", 4, A, PRECIS_INT8, true), q_act("b", 4, A, PRECIS_UINT8, false)};
        qc_run(&q.t, 2, in, 1, true, &pr_cpu_impl_qbinary, 2, 0, true, "qbinary mixed layouts");
        qc_free(in, 2);
    }
    /* declined: no kind, bad scale */
    qnode q;
    qbinary_node(&q, "Div", PRECIS_INT8, PRECIS_INT8, PRECIS_FLOAT32, NULL, 0, 0);
    qc_in in[2] = {q_act("a", 4, A, PRECIS_INT8, false), q_act("b", 4, A, PRECIS_INT8, false)};
    CHECK(!qc_supports(&q.t, 2, in, false, &pr_cpu_impl_qbinary));
    qn_init(&q, PR_OP_QBinary, "QBinary", 1, true);
    qn_str(&q, "kind", "Add");
    qn_float(&q, "a_scale", 0.0f);
    qn_float(&q, "b_scale", 1.0f);
    CHECK(!qc_supports(&q.t, 2, in, false, &pr_cpu_impl_qbinary));
    qc_free(in, 2);
}

static void test_qpool(void) {
    static const pr_dtype QT[2] = {PRECIS_INT8, PRECIS_UINT8};
    static const pr_dtype YT[3] = {PRECIS_FLOAT32, PRECIS_INT8, PRECIS_UINT8};
    static const struct {
        const char *name;
        int64_t dims[4];
    } gc[] = {{"C70 40x37 (chunks)", {2, 70, 40, 37}}, {"C5 3x3", {1, 5, 3, 3}},
              {"C130 1x1", {1, 130, 1, 1}}, {"C16 90x100", {1, 16, 90, 100}}};
    int k = 0;
    for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 2; l++, k++) {
                pr_dtype yt = YT[k % 3];
                qnode q;
                qn_init(&q, PR_OP_QPool, "QPool", 1, true);
                qn_str(&q, "kind", "GlobalAveragePool");
                qn_float(&q, "x_scale", QT[d] == PRECIS_UINT8 ? 0.01f : 0.02f);
                if (yt != PRECIS_FLOAT32) {
                    qn_int(&q, "y_type", yt);
                    qn_float(&q, "y_scale", 0.002f);
                }
                qc_in in[1] = {q_act("x", 4, gc[i].dims, QT[d], l)};
                char label[128];
                snprintf(label, sizeof label, "qpool global %s %s -> %s %s", gc[i].name, dn(QT[d]),
                         dn(yt), l ? "nhwc" : "plain");
                qc_run(&q.t, 1, in, 1, false, &pr_cpu_impl_pool, 1 + k % 2, 1, false, label);
                qc_free(in, 1);
            }
    static const struct {
        const char *name;
        int64_t dims[4], kh, kw, s, p;
        int cip, ceil;
    } pc[] = {
        {"3x3 s1 p1", {2, 20, 9, 11}, 3, 3, 1, 1, 0, 0},
        {"3x3 s1 p1 count_include_pad", {1, 70, 9, 11}, 3, 3, 1, 1, 1, 0},
        {"2x2 s2", {1, 16, 12, 14}, 2, 2, 2, 0, 0, 0},
        {"3x2 s2 ceil", {1, 9, 7, 9}, 3, 2, 2, 0, 0, 1},
        {"3x3 s2 p1 ceil count_include_pad", {1, 6, 8, 8}, 3, 3, 2, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++)
        for (int d = 0; d < 2; d++)
            for (int l = 0; l < 2; l++, k++) {
                pr_dtype yt = YT[k % 3];
                qnode q;
                qn_init(&q, PR_OP_QPool, "QPool", 1, true);
                qn_str(&q, "kind", "AveragePool");
                qn_ints(&q, "kernel_shape", (int64_t[]){pc[i].kh, pc[i].kw}, 2);
                qn_ints(&q, "strides", (int64_t[]){pc[i].s, pc[i].s}, 2);
                qn_ints(&q, "pads", (int64_t[]){pc[i].p, pc[i].p, pc[i].p, pc[i].p}, 4);
                if (pc[i].cip) qn_int(&q, "count_include_pad", 1);
                if (pc[i].ceil) qn_int(&q, "ceil_mode", 1);
                /* scales of no simple ratio: window means of integers would
                 * otherwise land on exact halves, rounded either way */
                qn_float(&q, "x_scale", 0.0153f);
                if (yt != PRECIS_FLOAT32) {
                    qn_int(&q, "y_type", yt);
                    qn_float(&q, "y_scale", 0.0107f);
                }
                qc_in in[1] = {q_act("x", 4, pc[i].dims, QT[d], l)};
                char label[128];
                snprintf(label, sizeof label, "qpool average %s %s -> %s %s", pc[i].name,
                         dn(QT[d]), dn(yt), l ? "nhwc" : "plain");
                qc_run(&q.t, 1, in, 1, l, &pr_cpu_impl_pool, 1 + k % 2, 1, false, label);
                qc_free(in, 1);
            }
    /* the 16-bit runs of the NHWC sums: every byte at its type's extreme
     * over 300 pixels (a run of 256, then 44) and over 256 (one full run),
     * 200 channels (a 64-channel block with an 8-channel tail) */
    static const int64_t ext[2][4] = {{2, 200, 15, 20}, {1, 200, 16, 16}};
    for (int i = 0; i < 2; i++)
        for (int d = 0; d < 2; d++)
            for (int v = 0; v < 2; v++) {
                qnode q;
                qn_init(&q, PR_OP_QPool, "QPool", 1, true);
                qn_str(&q, "kind", "GlobalAveragePool");
                qn_float(&q, "x_scale", 0.01f);
                qn_int(&q, "y_type", QT[d]);
                qn_float(&q, "y_scale", 0.01f);
                qc_in in[1] = {q_act("x", 4, ext[i], QT[d], true)};
                const int64_t ne = qc_numel(&in[0]);
                uint8_t *xb = in[0].data;
                for (int64_t j = 0; j < ne; j++) /* uint8 255 / int8 127, or 0 / -128 */
                    xb[j] = v ? (QT[d] == PRECIS_UINT8 ? 255 : 127) : (QT[d] == PRECIS_UINT8 ? 0 : 0x80);
                if (v) xb[ne / 2] ^= 1; /* one value off the extreme */
                char label[128];
                snprintf(label, sizeof label, "qpool global extremes %lldx%lld %s %s",
                         (long long)ext[i][2], (long long)ext[i][3], dn(QT[d]), v ? "max" : "min");
                qc_run(&q.t, 1, in, 1, false, &pr_cpu_impl_pool, 1, 1, false, label);
                qc_free(in, 1);
            }
    /* a float X is not a QPool */
    qnode q;
    qn_init(&q, PR_OP_QPool, "QPool", 1, true);
    qn_str(&q, "kind", "GlobalAveragePool");
    qn_float(&q, "x_scale", 0.1f);
    qc_in in[1] = {q_act("x", 4, (int64_t[]){1, 4, 6, 6}, PRECIS_FLOAT32, false)};
    CHECK(!qc_supports(&q.t, 1, in, false, &pr_cpu_impl_pool));
    qc_free(in, 1);
}

/* Median ms of one node on impl (inputs in, NHWC where marked; output
 * dtype ydt of dims ydims), 0 if it does not run. */
static double bench_node(const tnode *t, int n_in, const qc_in *in, bool nhwc,
                         const pr_cpu_impl *impl, pr_dtype ydt, const int64_t *ydims, int th) {
    pr_err e = {0};
    double ms = 0;
    qc_prep p;
    qc_threads = th;
    if (qc_prepare(&p, t, n_in, in, 1, nhwc, impl, th, "bench")) {
        pr_buf b[2], y;
        const pr_buf *bp[2];
        for (int i = 0; i < n_in; i++) {
            pr_buf_alloc(&b[i], in[i].dt, in[i].rank, in[i].dims, "in", &e);
            memcpy(b[i].data, in[i].data, b[i].nbytes);
            bp[i] = &b[i];
        }
        pr_buf_alloc(&y, ydt, 4, ydims, "y", &e);
        ms = time_runs(impl, p.state, p.gi, n_in, bp, &y, th, 41);
        for (int i = 0; i < n_in; i++) pr_buf_free(&b[i]);
        pr_buf_free(&y);
    }
    qc_release(&p);
    return ms;
}

/* QBinary / QPool against the float kernels on PP-OCRv4 det's largest SE
 * block shapes (NHWC 96x160x160): x * se (per channel), x + y, global
 * average pool; 1 and 2 threads. */
static void bench_qelem(void) {
    const int64_t X[4] = {1, 96, 160, 160}, SE[4] = {1, 96, 1, 1};
    for (int th = 1; th <= 2; th++) {
        double ms[3][2];
        for (int f = 0; f < 2; f++) {
            pr_dtype xt = f ? PRECIS_FLOAT32 : PRECIS_INT8, st = f ? PRECIS_FLOAT32 : PRECIS_UINT8;
            qnode q;
            if (f) qn_init(&q, PR_OP_Mul, "Mul", 14, false);
            else qbinary_node(&q, "Mul", xt, st, xt, NULL, 0, 0);
            qc_in in[2] = {q_act("a", 4, X, xt, true), q_act("b", 4, SE, st, true)};
            const pr_cpu_impl *im = f ? &pr_cpu_impl_binary : &pr_cpu_impl_qbinary;
            ms[0][f] = bench_node(&q.t, 2, in, true, im, xt, X, th);
            qc_free(in, 2);
            if (f) qn_init(&q, PR_OP_Add, "Add", 14, false);
            else qbinary_node(&q, "Add", xt, xt, xt, NULL, 0, 0);
            qc_in in2[2] = {q_act("a", 4, X, xt, true), q_act("b", 4, X, xt, true)};
            ms[1][f] = bench_node(&q.t, 2, in2, true, im, xt, X, th);
            qc_free(in2, 2);
            if (f) {
                qn_init(&q, PR_OP_GlobalAveragePool, "GlobalAveragePool", 14, false);
            } else {
                qn_init(&q, PR_OP_QPool, "QPool", 1, true);
                qn_str(&q, "kind", "GlobalAveragePool");
                qn_float(&q, "x_scale", 0.1f);
                qn_int(&q, "y_type", PRECIS_INT8);
                qn_float(&q, "y_scale", 0.01f);
            }
            qc_in in3[1] = {q_act("x", 4, X, xt, true)};
            ms[2][f] = bench_node(&q.t, 1, in3, false, &pr_cpu_impl_pool, xt, SE, th);
            qc_free(in3, 1);
        }
        printf("speed NHWC 96x160x160, %d thread%s: x*se int8 %.3f ms / float %.3f ms, x+y int8 "
               "%.3f / %.3f, global average pool int8 %.3f / %.3f\n",
               th, th > 1 ? "s" : "", ms[0][0], ms[0][1], ms[1][0], ms[1][1], ms[2][0], ms[2][1]);
    }
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv) {
    const char *cap = getenv("PRECIS_CPU_ISA");
    bool own_only = argc > 1 && !strcmp(argv[1], "--own-kernels");
    bool bench_only = argc > 1 && !strcmp(argv[1], "--bench");
    double t0 = now_s();
    if (bench_only) {
        bench_qelem();
        return check_report("test_cpu_qelem");
    }
    test_qbinary();
    test_qpool();
    printf("[%s] %d passed, %d failed in %.1f s\n", pr_cpu_isa_name(), n_pass, n_fail,
           now_s() - t0);
    if (!own_only) {
        printf("int8/uint8 outputs (QBinary with a transcendental act, QPool): %lld of %lld "
               "(%.4f%%) differ from ref by one unit\n",
               (long long)q_diff1, (long long)q_total,
               q_total ? 100.0 * (double)q_diff1 / (double)q_total : 0.0);
        printf("float32 outputs: worst |diff| / max|ref| = %.2e\n", f_worst);
        bench_qelem();
    }
    int rc = check_report(own_only ? NULL : "test_cpu_qelem");
    if (cap || own_only) return rc;
    return q8_also_scalar(argv, rc, "test_cpu_qelem");
}
