/* Unit tests of the 'conv' family: static shape inference (symbolic dims,
 * auto_pad, ConvTranspose output_shape, LayerNormalization statistics) and
 * randomized checks of the ref kernels' fast paths (im2col + blocked GEMM,
 * 1x1, depthwise, col2im, integer GEMM) against naive loops in double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "ir/graph.h"
#include "ir/infer.h"

#include "check.h"
#include "tnode.h"

static pr_graph *g;

static void ti(pr_tinfo *t, pr_dtype dt, int rank, const int64_t *dims) {
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->rank = rank;
    for (int d = 0; d < rank; d++) t->dims[d] = dims[d];
}

static precis_status infer(tnode *t, int n_in, const pr_tinfo *in, int n_out, pr_tinfo *out,
                           pr_err *e) {
    for (int j = 0; j < n_out; j++) {
        memset(&out[j], 0, sizeof out[j]);
        out[j].rank = -1;
    }
    pr_infer ic = {g, &t->node, n_in, in, n_out, out, e};
    return pr_infer_table[t->node.op](&ic);
}

#define U PR_DIM_UNKNOWN

static void test_infer(void) {
    int64_t B = pr_graph_sym(g, "batch"), H = pr_graph_sym(g, "H"), W = pr_graph_sym(g, "W");
    pr_tinfo in[9], out[5];
    pr_err e;
    tnode t;

    /* 3x3 pad 1 stride 1 keeps symbolic H, W and the batch */
    n_init(&t, PR_OP_Conv, "Conv", 11);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    ti(&in[0], PRECIS_FLOAT32, 4, (int64_t[]){B, 8, H, W});
    ti(&in[1], PRECIS_FLOAT32, 4, (int64_t[]){16, 8, 3, 3});
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){B, 16, H, W}));

    /* stride 2: unknown spatial dims; SAME_UPPER stride 1 keeps them */
    n_init(&t, PR_OP_Conv, "Conv", 11);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){B, 16, U, U}));
    n_init(&t, PR_OP_Conv, "Conv", 11);
    n_str(&t, "auto_pad", "SAME_UPPER");
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){B, 16, H, W}));

    /* known dims: SAME_LOWER stride 2 dilation 2, group 2 */
    n_init(&t, PR_OP_Conv, "Conv", 11);
    n_str(&t, "auto_pad", "SAME_LOWER");
    n_ints(&t, "strides", (int64_t[]){2, 3}, 2);
    n_ints(&t, "dilations", (int64_t[]){2, 2}, 2);
    n_int(&t, "group", 2);
    ti(&in[0], PRECIS_FLOAT32, 4, (int64_t[]){1, 8, 11, 10});
    ti(&in[1], PRECIS_FLOAT32, 4, (int64_t[]){6, 4, 3, 3});
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){1, 6, 6, 4}));
    /* wrong channel count for the group */
    ti(&in[1], PRECIS_FLOAT32, 4, (int64_t[]){6, 8, 3, 3});
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_ERR_SHAPE && strstr(e.msg, "channels"));

    /* ConvTranspose: output_shape and output_padding */
    n_init(&t, PR_OP_ConvTranspose, "ConvTranspose", 11);
    n_ints(&t, "strides", (int64_t[]){3, 2}, 2);
    n_ints(&t, "output_shape", (int64_t[]){10, 8}, 2);
    ti(&in[0], PRECIS_FLOAT32, 4, (int64_t[]){1, 1, 3, 3});
    ti(&in[1], PRECIS_FLOAT32, 4, (int64_t[]){1, 2, 3, 3});
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){1, 2, 10, 8}));
    n_init(&t, PR_OP_ConvTranspose, "ConvTranspose", 11);
    n_ints(&t, "strides", (int64_t[]){3, 2}, 2);
    n_ints(&t, "output_padding", (int64_t[]){1, 1}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 0, 1, 2}, 4);
    n_int(&t, "group", 1);
    CHECK(infer(&t, 2, in, 1, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){1, 2, 8, 6}));

    /* MaxPool ceil_mode (last window must start inside) and Indices */
    n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
    n_ints(&t, "kernel_shape", (int64_t[]){2, 2}, 2);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    n_int(&t, "ceil_mode", 1);
    ti(&in[0], PRECIS_FLOAT32, 4, (int64_t[]){B, 3, 5, 6});
    CHECK(infer(&t, 1, in, 2, out, &e) == PRECIS_OK);
    CHECK(dims_eq(&out[0], 4, (int64_t[]){B, 3, 3, 4}));
    CHECK(out[1].dtype == PRECIS_INT64 && dims_eq(&out[1], 4, (int64_t[]){B, 3, 3, 4}));
    n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
    CHECK(infer(&t, 1, in, 1, out, &e) == PRECIS_ERR_SHAPE && strstr(e.msg, "kernel_shape"));

    /* LayerNormalization: Mean/InvStdDev are float32 (stash_type) with 1s from axis */
    n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
    n_int(&t, "axis", -2);
    ti(&in[0], PRECIS_FLOAT16, 3, (int64_t[]){B, 4, 8});
    ti(&in[1], PRECIS_FLOAT16, 1, (int64_t[]){8});
    ti(&in[2], PRECIS_UNDEFINED, 0, NULL);
    CHECK(infer(&t, 3, in, 3, out, &e) == PRECIS_OK);
    CHECK(out[0].dtype == PRECIS_FLOAT16 && dims_eq(&out[0], 3, (int64_t[]){B, 4, 8}));
    CHECK(out[1].dtype == PRECIS_FLOAT32 && dims_eq(&out[1], 3, (int64_t[]){B, 1, 1}));
    ti(&in[1], PRECIS_FLOAT16, 1, (int64_t[]){5});
    CHECK(infer(&t, 3, in, 3, out, &e) == PRECIS_ERR_SHAPE);

    /* QLinearConv: output type from y_zero_point; per-channel w_scale size */
    n_init(&t, PR_OP_QLinearConv, "QLinearConv", 10);
    ti(&in[0], PRECIS_UINT8, 4, (int64_t[]){1, 4, 9, 9});
    ti(&in[1], PRECIS_FLOAT32, 0, NULL);
    ti(&in[2], PRECIS_UINT8, 0, NULL);
    ti(&in[3], PRECIS_INT8, 4, (int64_t[]){6, 4, 3, 3});
    ti(&in[4], PRECIS_FLOAT32, 1, (int64_t[]){6});
    ti(&in[5], PRECIS_INT8, 1, (int64_t[]){6});
    ti(&in[6], PRECIS_FLOAT32, 0, NULL);
    ti(&in[7], PRECIS_UINT8, 0, NULL);
    ti(&in[8], PRECIS_INT32, 1, (int64_t[]){6});
    CHECK(infer(&t, 9, in, 1, out, &e) == PRECIS_OK);
    CHECK(out[0].dtype == PRECIS_UINT8 && dims_eq(&out[0], 4, (int64_t[]){1, 6, 7, 7}));
    ti(&in[4], PRECIS_FLOAT32, 1, (int64_t[]){5});
    CHECK(infer(&t, 9, in, 1, out, &e) == PRECIS_ERR_SHAPE && strstr(e.msg, "w_scale"));
}

/* ------------------------------------------------------ randomized kernels */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)(rng_state >> 33);
}
static int64_t rnd_in(int64_t lo, int64_t hi) {
    return lo + (int64_t)(rnd() % (uint32_t)(hi - lo + 1));
}
static float rnd_f(void) { return (float)rnd() / 2147483648.0f - 1.0f; }

static pr_buf *buf_new(pr_dtype dt, int rank, const int64_t *dims) {
    pr_buf *b = calloc(1, sizeof *b);
    b->dtype = dt;
    b->rank = rank;
    memcpy(b->dims, dims, (size_t)rank * sizeof(int64_t));
    b->numel = pr_numel(rank, dims);
    b->nbytes = (size_t)b->numel * pr_dtype_size(dt);
    b->data = calloc(b->nbytes ? b->nbytes : 1, 1);
    return b;
}
static void buf_free(pr_buf *b) {
    if (b) free(b->data);
    free(b);
}

/* Infers the outputs of t for bufs in[], allocates them, runs the ref kernel. */
static precis_status run_kernel(tnode *t, int n_in, pr_buf **in, int n_out, pr_buf **out,
                                pr_err *e) {
    pr_tinfo ti_in[9], ti_out[3];
    for (int i = 0; i < n_in; i++) {
        if (in[i])
            ti(&ti_in[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        else
            ti(&ti_in[i], PRECIS_UNDEFINED, 0, NULL);
        ti_in[i].value = in[i] ? in[i]->data : NULL;
    }
    precis_status st = infer(t, n_in, ti_in, n_out, ti_out, e);
    if (st) return st;
    for (int j = 0; j < n_out; j++)
        out[j] = buf_new(ti_out[j].dtype, ti_out[j].rank, ti_out[j].dims);
    pr_kernel k = {NULL, &t->node, n_in, (const pr_buf *const *)in, n_out, out, e, 1};
    return pr_ref_table[t->node.op](&k);
}

/* Random Conv (1-3 spatial dims, groups, strides, dilations, pads) vs naive. */
static void conv_case(int it) {
    int nsp = (int)rnd_in(1, 3);
    int64_t group = rnd_in(1, 3), cg = rnd_in(1, 5), mg = rnd_in(1, 9), N = rnd_in(1, 2);
    if (it % 4 == 0) { /* depthwise */
        cg = 1;
        mg = rnd_in(1, 2);
        group = rnd_in(2, 6);
    }
    if (it % 7 == 3) { /* K above the GEMM's K block */
        cg = 40;
        group = 1;
    }
    int64_t C = cg * group, M = mg * group;
    int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0}, pe[3] = {0};
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    int off = 3 - nsp;
    bool pointwise = it % 5 == 1;
    for (int i = off; i < 3; i++) {
        k[i] = pointwise ? 1 : rnd_in(1, nsp == 3 ? 3 : 4);
        s[i] = pointwise ? 1 : rnd_in(1, 3);
        d[i] = pointwise ? 1 : rnd_in(1, 2);
        pb[i] = pointwise ? 0 : rnd_in(0, 2);
        pe[i] = pointwise ? 0 : rnd_in(0, 2);
        int64_t dk = (k[i] - 1) * d[i] + 1;
        in[i] = rnd_in(1, nsp == 1 ? 40 : nsp == 2 ? 19 : 8);
        if (in[i] + pb[i] + pe[i] < dk) in[i] = dk - pb[i] - pe[i] > 1 ? dk - pb[i] - pe[i] : 1;
        out[i] = (in[i] + pb[i] + pe[i] - dk) / s[i] + 1;
    }
    int64_t xd[5] = {N, C}, wd[5] = {M, cg};
    int64_t pads[6];
    for (int i = 0; i < nsp; i++) {
        xd[2 + i] = in[off + i];
        wd[2 + i] = k[off + i];
        pads[i] = pb[off + i];
        pads[nsp + i] = pe[off + i];
    }
    tnode t;
    n_init(&t, PR_OP_Conv, "Conv", 11);
    n_int(&t, "group", group);
    n_ints(&t, "strides", s + off, nsp);
    n_ints(&t, "dilations", d + off, nsp);
    n_ints(&t, "pads", pads, 2 * nsp);
    pr_buf *bin[3] = {buf_new(PRECIS_FLOAT32, nsp + 2, xd), buf_new(PRECIS_FLOAT32, nsp + 2, wd),
                      buf_new(PRECIS_FLOAT32, 1, &M)};
    for (int i = 0; i < 3; i++)
        for (int64_t j = 0; j < bin[i]->numel; j++) ((float *)bin[i]->data)[j] = rnd_f();
    pr_buf *bout[1] = {NULL};
    pr_err e;
    precis_status st = run_kernel(&t, 3, bin, 1, bout, &e);
    CHECK(st == PRECIS_OK);
    if (st) fprintf(stderr, "  %s\n", e.msg);
    if (!st) {
        const float *x = bin[0]->data, *w = bin[1]->data, *b = bin[2]->data, *y = bout[0]->data;
        const int64_t isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
        const int64_t ksz = k[0] * k[1] * k[2];
        double maxerr = 0;
        CHECK(bout[0]->numel == N * M * osz);
        for (int64_t n = 0; n < N; n++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t o = 0; o < osz; o++) {
                    int64_t ox = o % out[2], oy = o / out[2] % out[1], oz = o / out[2] / out[1];
                    double acc = b[m];
                    int64_t gi = m / mg;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t q = 0; q < ksz; q++) {
                            int64_t kx = q % k[2], ky = q / k[2] % k[1], kz = q / k[2] / k[1];
                            int64_t iz = oz * s[0] - pb[0] + kz * d[0];
                            int64_t iy = oy * s[1] - pb[1] + ky * d[1];
                            int64_t ix = ox * s[2] - pb[2] + kx * d[2];
                            if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 ||
                                ix >= in[2])
                                continue;
                            acc += (double)x[(n * C + gi * cg + c) * isz +
                                             (iz * in[1] + iy) * in[2] + ix] *
                                   w[(m * cg + c) * ksz + q];
                        }
                    double err = fabs(acc - y[(n * M + m) * osz + o]);
                    if (err > maxerr) maxerr = err;
                }
        CHECK(maxerr < 1e-4);
        if (maxerr >= 1e-4) fprintf(stderr, "  conv case %d: max error %g\n", it, maxerr);
    }
    for (int i = 0; i < 3; i++) buf_free(bin[i]);
    buf_free(bout[0]);
}

/* Random ConvTranspose vs a naive scatter. */
static void convt_case(int it) {
    int nsp = (int)rnd_in(1, 3);
    int64_t group = rnd_in(1, 3), cg = rnd_in(1, 4), mg = rnd_in(1, 4), N = rnd_in(1, 2);
    if (it % 3 == 0) cg = mg = 1;
    int64_t C = cg * group, M = mg * group;
    int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0}, pe[3] = {0};
    int64_t op[3] = {0}, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    int off = 3 - nsp;
    for (int i = off; i < 3; i++) {
        k[i] = rnd_in(1, 4);
        s[i] = rnd_in(1, 3);
        d[i] = rnd_in(1, 2);
        in[i] = rnd_in(1, nsp == 3 ? 5 : 9);
        op[i] = rnd_in(0, s[i] - 1);
        int64_t full = s[i] * (in[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1;
        pb[i] = rnd_in(0, full / 3);
        pe[i] = rnd_in(0, full / 3);
        out[i] = full - pb[i] - pe[i];
    }
    int64_t xd[5] = {N, C}, wd[5] = {C, mg}, pads[6], ops[3];
    for (int i = 0; i < nsp; i++) {
        xd[2 + i] = in[off + i];
        wd[2 + i] = k[off + i];
        pads[i] = pb[off + i];
        pads[nsp + i] = pe[off + i];
        ops[i] = op[off + i];
    }
    tnode t;
    n_init(&t, PR_OP_ConvTranspose, "ConvTranspose", 11);
    n_int(&t, "group", group);
    n_ints(&t, "strides", s + off, nsp);
    n_ints(&t, "dilations", d + off, nsp);
    n_ints(&t, "pads", pads, 2 * nsp);
    n_ints(&t, "output_padding", ops, nsp);
    pr_buf *bin[2] = {buf_new(PRECIS_FLOAT32, nsp + 2, xd), buf_new(PRECIS_FLOAT32, nsp + 2, wd)};
    for (int i = 0; i < 2; i++)
        for (int64_t j = 0; j < bin[i]->numel; j++) ((float *)bin[i]->data)[j] = rnd_f();
    pr_buf *bout[1] = {NULL};
    pr_err e;
    precis_status st = run_kernel(&t, 2, bin, 1, bout, &e);
    CHECK(st == PRECIS_OK);
    if (st) fprintf(stderr, "  %s\n", e.msg);
    if (!st) {
        const float *x = bin[0]->data, *w = bin[1]->data, *y = bout[0]->data;
        const int64_t isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
        const int64_t ksz = k[0] * k[1] * k[2];
        CHECK(bout[0]->numel == N * M * osz);
        double *ref = calloc((size_t)(N * M * osz), sizeof(double));
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t p = 0; p < isz; p++) {
                    int64_t ix = p % in[2], iy = p / in[2] % in[1], iz = p / in[2] / in[1];
                    for (int64_t m = 0; m < mg; m++)
                        for (int64_t q = 0; q < ksz; q++) {
                            int64_t kx = q % k[2], ky = q / k[2] % k[1], kz = q / k[2] / k[1];
                            int64_t oz = iz * s[0] - pb[0] + kz * d[0];
                            int64_t oy = iy * s[1] - pb[1] + ky * d[1];
                            int64_t ox = ix * s[2] - pb[2] + kx * d[2];
                            if (oz < 0 || oz >= out[0] || oy < 0 || oy >= out[1] || ox < 0 ||
                                ox >= out[2])
                                continue;
                            int64_t mo = (c / cg) * mg + m;
                            ref[(n * M + mo) * osz + (oz * out[1] + oy) * out[2] + ox] +=
                                (double)x[(n * C + c) * isz + p] * w[(c * mg + m) * ksz + q];
                        }
                }
        double maxerr = 0;
        for (int64_t i = 0; i < N * M * osz; i++)
            if (fabs(ref[i] - y[i]) > maxerr) maxerr = fabs(ref[i] - y[i]);
        CHECK(maxerr < 1e-4);
        if (maxerr >= 1e-4) fprintf(stderr, "  convt case %d: max error %g\n", it, maxerr);
        free(ref);
    }
    for (int i = 0; i < 2; i++) buf_free(bin[i]);
    buf_free(bout[0]);
}

/* Large-K ConvInteger (several GEMM K blocks) vs exact naive int64 sums. */
static void convint_case(void) {
    const int64_t C = 300, M = 5, H = 6, W = 7;
    int64_t xd[4] = {1, C, H, W}, wd[4] = {M, C, 3, 3}, one = 1;
    pr_buf *bin[4] = {buf_new(PRECIS_UINT8, 4, xd), buf_new(PRECIS_INT8, 4, wd),
                      buf_new(PRECIS_UINT8, 0, &one), buf_new(PRECIS_INT8, 1, &M)};
    for (int64_t j = 0; j < bin[0]->numel; j++) ((uint8_t *)bin[0]->data)[j] = (uint8_t)rnd();
    for (int64_t j = 0; j < bin[1]->numel; j++) ((int8_t *)bin[1]->data)[j] = (int8_t)rnd();
    ((uint8_t *)bin[2]->data)[0] = 255;
    for (int64_t m = 0; m < M; m++) ((int8_t *)bin[3]->data)[m] = (int8_t)(m % 2 ? -128 : 127);
    tnode t;
    n_init(&t, PR_OP_ConvInteger, "ConvInteger", 10);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    pr_buf *bout[1] = {NULL};
    pr_err e;
    CHECK(run_kernel(&t, 4, bin, 1, bout, &e) == PRECIS_OK);
    const uint8_t *x = bin[0]->data;
    const int8_t *w = bin[1]->data, *wz = bin[3]->data;
    const int32_t *y = bout[0] ? bout[0]->data : NULL;
    int bad = !y;
    for (int64_t m = 0; y && m < M; m++)
        for (int64_t oy = 0; oy < H; oy++)
            for (int64_t ox = 0; ox < W; ox++) {
                int64_t acc = 0;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t ky = 0; ky < 3; ky++)
                        for (int64_t kx = 0; kx < 3; kx++) {
                            int64_t iy = oy - 1 + ky, ix = ox - 1 + kx;
                            int64_t xv = (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                             ? 255
                                             : x[(c * H + iy) * W + ix];
                            acc += (xv - 255) * (w[((m * C + c) * 3 + ky) * 3 + kx] - wz[m]);
                        }
                bad += acc != y[(m * H + oy) * W + ox];
            }
    CHECK(bad == 0);
    for (int i = 0; i < 4; i++) buf_free(bin[i]);
    buf_free(bout[0]);
}

int main(void) {
    g = pr_graph_create();
    if (!g) return 1;
    test_infer();
    for (int it = 0; it < 100; it++) conv_case(it);
    for (int it = 0; it < 40; it++) convt_case(it);
    convint_case();
    pr_graph_destroy(g);
    return check_report("test_conv");
}
