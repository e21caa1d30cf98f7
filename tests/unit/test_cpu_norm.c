/* CPU-backend kernels for normalization, Softmax, pooling and Resize
 * (src/backends/cpu/k_softmax.c, k_norm.c, k_pool.c, k_resize.c) checked
 * against the ref kernels with tests/unit/cpu_check.h: every op x float32 /
 * bfloat16 / float16 x odd and large shapes x plain / NHWC x 1 and 2 threads.
 *
 * The process runs the cases with the best ISA the machine has, then runs
 * itself again with PRECIS_CPU_ISA=scalar so that the portable fallbacks are
 * checked too (a run started with PRECIS_CPU_ISA set runs once). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu/kernels_norm.h"
#include "cpu_check.h"

static const pr_dtype DTS[3] = {PRECIS_FLOAT32, PRECIS_BFLOAT16, PRECIS_FLOAT16};
static const char *dtn(pr_dtype d) { return pr_dtype_name(d); }

/* Runs a case for every dtype, on 1 thread and, when the input is large
 * enough for the kernels to split the work (32768 elements), 2 threads. */
static void run_all(const tnode *t, int n_in, const cc_input *in, int n_out, const bool *out_nhwc,
                    const pr_cpu_impl *impl, const char *what) {
    const int max_th = pr_numel(in[0].rank, in[0].dims) >= 16384 ? 2 : 1;
    for (int d = 0; d < 3; d++)
        for (int th = 1; th <= max_th; th++) {
            char label[160];
            snprintf(label, sizeof label, "%s %s t%d", what, dtn(DTS[d]), th);
            cc_run(t, n_in, in, n_out, out_nhwc, DTS[d], impl, th, label);
        }
}

/* ------------------------------------------------------------ Softmax */

static void softmax_case(pr_op op, const char *name, int64_t opset, bool has_axis, int64_t axis,
                         int rank, const int64_t *dims, float lo, float hi) {
    tnode t;
    n_init(&t, op, name, opset);
    if (has_axis) n_int(&t, "axis", axis);
    cc_input in[1] = {{"x", rank, {0}, .lo = lo, .hi = hi}};
    memcpy(in[0].dims, dims, (size_t)rank * sizeof(int64_t));
    char what[128];
    snprintf(what, sizeof what, "%s-%lld axis %lld rank %d [%lld..] range %g", name,
             (long long)opset, (long long)(has_axis ? axis : -99), rank, (long long)dims[0], hi);
    run_all(&t, 1, in, 1, NULL, &pr_cpu_impl_softmax, what);
}

static void test_softmax(void) {
    /* attention-style masks: -inf and -1e9 entries, a row with one finite
     * value (LogSoftmax: -3e4, as cc_run counts -inf == -inf as a mismatch) */
    static float masked[2][4 * 50];
    for (int lg = 0; lg < 2; lg++)
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < 50; i++) {
                const float big = lg ? -3e4f : -INFINITY;
                float v = cc_rand(-6, 6);
                if (r == 0 && i % 3 == 0) v = big;
                if (r == 1 && i > 20) v = lg ? -3e4f : -1e9f;
                if (r == 2 && i != 17) v = big;
                masked[lg][r * 50 + i] = v;
            }
    for (int lg = 0; lg < 2; lg++)
        for (int ax = 0; ax < 2; ax++) {
            tnode t;
            n_init(&t, lg ? PR_OP_LogSoftmax : PR_OP_Softmax, lg ? "LogSoftmax" : "Softmax", 13);
            n_int(&t, "axis", ax ? 1 : 0);
            cc_input in[1] = {{"x", 2, {ax ? 4 : 50, ax ? 50 : 4}, .data = masked[lg]}};
            run_all(&t, 1, in, 1, NULL, &pr_cpu_impl_softmax,
                    lg ? "logsoftmax masked" : "softmax masked");
        }
    for (int lg = 0; lg < 2; lg++) {
        pr_op op = lg ? PR_OP_LogSoftmax : PR_OP_Softmax;
        const char *nm = lg ? "LogSoftmax" : "Softmax";
        softmax_case(op, nm, 13, false, 0, 2, (int64_t[]){4, 37}, 0, 0);
        softmax_case(op, nm, 13, true, -1, 3, (int64_t[]){3, 5, 128}, -80, 80);
        softmax_case(op, nm, 13, true, 2, 3, (int64_t[]){2, 3, 1001}, -80, 80);
        softmax_case(op, nm, 13, true, -1, 2, (int64_t[]){64, 1024}, -8, 8);
        softmax_case(op, nm, 13, true, 1, 4, (int64_t[]){2, 33, 7, 5}, -80, 80);
        softmax_case(op, nm, 13, true, 0, 2, (int64_t[]){19, 200}, 0, 0);
        softmax_case(op, nm, 13, true, 1, 3, (int64_t[]){8, 64, 130}, -20, 20);
        softmax_case(op, nm, 11, false, 0, 4, (int64_t[]){2, 3, 4, 5}, 0, 0);
        softmax_case(op, nm, 11, true, 2, 4, (int64_t[]){3, 2, 7, 9}, -80, 80);
        softmax_case(op, nm, 1, true, 4, 4, (int64_t[]){3, 2, 7, 9}, 0, 0); /* axis == rank */
        softmax_case(op, nm, 13, true, -1, 1, (int64_t[]){1}, 0, 0);
    }
}

/* ------------------------------------------------------------ LayerNorm */

static void test_layernorm(void) {
    tnode t;
    /* scale + bias initializers, last axis */
    n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
    n_float(&t, "epsilon", 1e-5f);
    {
        cc_input in[3] = {{"x", 2, {4, 768}, .lo = -3, .hi = 5},
                          {"s", 1, {768}, .init = true},
                          {"b", 1, {768}, .init = true}};
        run_all(&t, 3, in, 1, NULL, &pr_cpu_impl_layernorm, "layernorm [4,768] init");
    }
    {
        cc_input in[3] = {{"x", 2, {64, 1024}, .init = false},
                          {"s", 1, {1024}, .init = true},
                          {"b", 1, {1024}, .init = true}};
        run_all(&t, 3, in, 3, NULL, &pr_cpu_impl_layernorm, "layernorm [64,1024] stats");
    }
    {
        cc_input in[2] = {{"x", 2, {3, 5000}, .lo = 10, .hi = 12}, {"s", 1, {5000}, .init = true}};
        run_all(&t, 2, in, 1, NULL, &pr_cpu_impl_layernorm, "layernorm [3,5000] no bias");
    }
    /* axis 1, parameters broadcast from [33] / [7,33], run-time inputs */
    n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
    n_int(&t, "axis", 1);
    {
        cc_input in[3] = {{"x", 3, {2, 7, 33}, .init = false},
                          {"s", 1, {33}, .init = true},
                          {"b", 2, {7, 33}, .init = true}};
        run_all(&t, 3, in, 3, NULL, &pr_cpu_impl_layernorm, "layernorm axis 1 bcast");
    }
    {
        cc_input in[3] = {{"x", 3, {2, 7, 33}, .init = false},
                          {"s", 2, {7, 33}, .init = false},
                          {"b", 1, {1}, .init = false}};
        run_all(&t, 3, in, 1, NULL, &pr_cpu_impl_layernorm, "layernorm axis 1 runtime params");
    }
    n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
    n_int(&t, "axis", -2);
    n_float(&t, "epsilon", 1e-3f);
    {
        cc_input in[3] = {{"x", 4, {2, 3, 5, 17}, .init = false},
                          {"s", 2, {5, 17}, .init = true},
                          {"b", 2, {5, 17}, .init = false}};
        run_all(&t, 3, in, 3, NULL, &pr_cpu_impl_layernorm, "layernorm axis -2");
    }
}

/* ------------------------------------------------------------ InstanceNorm */

static void instnorm_case(int rank, const int64_t *dims, bool nhwc, bool init) {
    tnode t;
    n_init(&t, PR_OP_InstanceNormalization, "InstanceNormalization", 6);
    n_float(&t, "epsilon", 1e-4f);
    cc_input in[3] = {{"x", rank, {0}, .nhwc = nhwc, .lo = -2, .hi = 3},
                      {"s", 1, {dims[1]}, .init = init},
                      {"b", 1, {dims[1]}, .init = init}};
    memcpy(in[0].dims, dims, (size_t)rank * sizeof(int64_t));
    char what[128];
    snprintf(what, sizeof what, "instnorm [%lld,%lld,..] rank %d %s %s", (long long)dims[0],
             (long long)dims[1], rank, nhwc ? "nhwc" : "plain", init ? "init" : "runtime");
    run_all(&t, 3, in, 1, (bool[]){nhwc}, &pr_cpu_impl_instnorm, what);
}

static void test_instnorm(void) {
    for (int l = 0; l < 2; l++) {
        instnorm_case(4, (int64_t[]){2, 5, 9, 11}, l, true);
        instnorm_case(4, (int64_t[]){1, 37, 17, 13}, l, l == 0);
        instnorm_case(4, (int64_t[]){2, 32, 40, 40}, l, true);
    }
    instnorm_case(3, (int64_t[]){2, 4, 50}, false, true);
}

/* ------------------------------------------------------------ pooling */

typedef struct pool_cfg {
    int64_t k[2], s[2], p[4], d[2];
    int ceil, cip;
    const char *auto_pad;
} pool_cfg;

static void pool_case(pr_op op, const char *name, int64_t opset, const pool_cfg *c,
                      const int64_t *dims, bool nhwc) {
    tnode t;
    n_init(&t, op, name, opset);
    if (op == PR_OP_MaxPool || op == PR_OP_AveragePool) {
        n_ints(&t, "kernel_shape", c->k, 2);
        if (c->s[0]) n_ints(&t, "strides", c->s, 2);
        if (c->auto_pad)
            n_str(&t, "auto_pad", c->auto_pad);
        else
            n_ints(&t, "pads", c->p, 4);
        if (c->d[0]) n_ints(&t, "dilations", c->d, 2);
        if (c->ceil) n_int(&t, "ceil_mode", 1);
        if (c->cip) n_int(&t, "count_include_pad", 1);
    }
    cc_input in[1] = {{"x", 4, {dims[0], dims[1], dims[2], dims[3]}, .nhwc = nhwc}};
    char what[200];
    snprintf(what, sizeof what,
             "%s [%lld,%lld,%lld,%lld] k%lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld "
             "d%lld ceil%d cip%d %s %s",
             name, (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3],
             (long long)c->k[0], (long long)c->k[1], (long long)c->s[0], (long long)c->s[1],
             (long long)c->p[0], (long long)c->p[1], (long long)c->p[2], (long long)c->p[3],
             (long long)c->d[0], c->ceil, c->cip, c->auto_pad ? c->auto_pad : "",
             nhwc ? "nhwc" : "plain");
    run_all(&t, 1, in, 1, (bool[]){nhwc}, &pr_cpu_impl_pool, what);
}

static void test_pool(void) {
    const pool_cfg cfgs[] = {
        {{3, 3}, {2, 2}, {1, 1, 1, 1}, {0, 0}, 0, 0, NULL},
        {{2, 2}, {2, 2}, {0, 0, 0, 0}, {0, 0}, 0, 0, NULL},
        {{3, 3}, {1, 1}, {1, 1, 1, 1}, {0, 0}, 0, 0, NULL},
        {{3, 3}, {2, 2}, {0, 0, 0, 0}, {0, 0}, 1, 0, NULL},
        {{3, 2}, {2, 3}, {1, 0, 2, 1}, {0, 0}, 1, 1, NULL},
        {{3, 3}, {3, 3}, {1, 1, 1, 1}, {0, 0}, 0, 1, NULL},
        {{5, 4}, {1, 2}, {2, 1, 2, 2}, {0, 0}, 0, 1, NULL},
        {{3, 3}, {1, 1}, {0, 0, 0, 0}, {2, 2}, 0, 0, NULL},
        {{3, 3}, {2, 1}, {1, 1, 1, 1}, {1, 2}, 1, 0, NULL},
        {{3, 3}, {2, 2}, {0, 0, 0, 0}, {0, 0}, 0, 0, "SAME_UPPER"},
        {{4, 4}, {3, 3}, {0, 0, 0, 0}, {0, 0}, 1, 1, "SAME_LOWER"},
        {{7, 7}, {1, 1}, {3, 3, 3, 3}, {0, 0}, 0, 0, NULL},
    };
    const int64_t shapes[][4] = {{1, 19, 23, 29}, {2, 8, 16, 16}, {1, 3, 5, 40}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
        for (int s = 0; s < 3; s++)
            for (int l = 0; l < 2; l++) {
                const pool_cfg *c = &cfgs[i];
                if (c->k[0] > shapes[s][2] + c->p[0] + c->p[2] && !c->ceil) continue;
                pool_case(PR_OP_MaxPool, "MaxPool", c->d[0] ? 12 : 11, c, shapes[s], l);
                pool_case(PR_OP_AveragePool, "AveragePool", c->d[0] ? 19 : 11, c, shapes[s], l);
            }
    /* large: parallel paths */
    const pool_cfg big = {{3, 3}, {2, 2}, {1, 1, 1, 1}, {0, 0}, 0, 0, NULL};
    for (int l = 0; l < 2; l++) {
        pool_case(PR_OP_MaxPool, "MaxPool", 12, &big, (int64_t[]){1, 64, 56, 56}, l);
        pool_case(PR_OP_AveragePool, "AveragePool", 11, &big, (int64_t[]){2, 70, 30, 31}, l);
    }
    /* global */
    const int64_t gshapes[][4] = {
        {2, 37, 7, 9}, {1, 70, 1, 1}, {1, 1280, 7, 7}, {2, 3, 61, 67}, {2, 64, 30, 30}};
    const pool_cfg none = {{0, 0}, {0, 0}, {0, 0, 0, 0}, {0, 0}, 0, 0, NULL};
    for (int s = 0; s < 5; s++)
        for (int l = 0; l < 2; l++) {
            pool_case(PR_OP_GlobalAveragePool, "GlobalAveragePool", 1, &none, gshapes[s], l);
            pool_case(PR_OP_GlobalMaxPool, "GlobalMaxPool", 1, &none, gshapes[s], l);
        }
    /* NHWC input, plain output (N,C,1,1 is stored alike) */
    for (int m = 0; m < 2; m++) {
        tnode t;
        n_init(&t, m ? PR_OP_GlobalMaxPool : PR_OP_GlobalAveragePool,
               m ? "GlobalMaxPool" : "GlobalAveragePool", 1);
        cc_input in[1] = {{"x", 4, {2, 21, 5, 6}, .nhwc = true}};
        run_all(&t, 1, in, 1, (bool[]){false}, &pr_cpu_impl_pool, "global pool nhwc -> plain");
    }
    /* rank 3, plain */
    for (int m = 0; m < 2; m++) {
        tnode t;
        n_init(&t, m ? PR_OP_GlobalMaxPool : PR_OP_GlobalAveragePool,
               m ? "GlobalMaxPool" : "GlobalAveragePool", 1);
        cc_input in[1] = {{"x", 3, {2, 5, 17}, .init = false}};
        run_all(&t, 1, in, 1, NULL, &pr_cpu_impl_pool, m ? "GlobalMaxPool rank 3" : "GAP rank 3");
    }
    /* declined: MaxPool with Indices */
    {
        tnode t;
        n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
        n_ints(&t, "kernel_shape", (int64_t[]){2, 2}, 2);
        pr_err e = {0};
        pr_graph *g = pr_graph_create();
        int ni = pr_graph_add_node(g, 1, 2, 0, &e);
        pr_node *n = &g->nodes[ni];
        n->op = t.node.op;
        n->op_type = t.node.op_type;
        n->name = "n";
        n->domain = "";
        n->opset = 12;
        n->attrs = t.node.attrs;
        n->n_attrs = t.node.n_attrs;
        int x = pr_graph_get_tensor(g, "x", &e), y = pr_graph_get_tensor(g, "y", &e),
            ix = pr_graph_get_tensor(g, "i", &e);
        g->tensors[x].dtype = PRECIS_FLOAT32;
        g->tensors[x].rank = 4;
        for (int d = 0; d < 4; d++) g->tensors[x].dims[d] = 4;
        g->nodes[ni].inputs[0] = x;
        g->nodes[ni].outputs[0] = y;
        g->nodes[ni].outputs[1] = ix;
        CHECK(!pr_cpu_impl_pool.supports(g, &g->nodes[ni]));
        g->nodes[ni].outputs[1] = -1;
        CHECK(pr_cpu_impl_pool.supports(g, &g->nodes[ni]));
        pr_graph_destroy(g);
    }
}

/* ------------------------------------------------------------ Resize */

typedef struct rs_cfg {
    const char *mode, *coord, *nearest;
    int exclude;
    float cubic_a;
} rs_cfg;

static void rs_attrs(tnode *t, const rs_cfg *c) {
    if (c->mode) n_str(t, "mode", c->mode);
    if (c->coord) n_str(t, "coordinate_transformation_mode", c->coord);
    if (c->nearest) n_str(t, "nearest_mode", c->nearest);
    if (c->exclude) n_int(t, "exclude_outside", 1);
    if (c->cubic_a != 0) n_float(t, "cubic_coeff_a", c->cubic_a);
}

/* kind 0: constant scales, 1: constant sizes, 2: run-time scales, 3: run-time sizes */
static void resize_case(int64_t opset, const rs_cfg *c, const int64_t *dims, const float *scales,
                        const int64_t *sizes, int kind, bool nhwc) {
    tnode t;
    n_init(&t, PR_OP_Resize, "Resize", opset);
    rs_attrs(&t, c);
    cc_input in[4] = {{"x", 4, {dims[0], dims[1], dims[2], dims[3]}, .nhwc = nhwc}, {.name = NULL}};
    int n_in;
    if (kind == 0 || kind == 2) {
        /* an initializer stays float32 (data); a run-time input keeps its dtype (raw) */
        if (kind == 0)
            in[2] = (cc_input){"scales", 1, {4}, .init = true, .data = scales};
        else
            in[2] = (cc_input){"scales", 1, {4}, .dtype = PRECIS_FLOAT32, .raw = scales};
        n_in = 3;
    } else {
        in[3] = (cc_input){"sizes", 1, {4}, .init = kind == 1, .dtype = PRECIS_INT64, .raw = sizes};
        n_in = 4;
    }
    char what[220];
    snprintf(what, sizeof what,
             "Resize-%lld %s %s %s excl%d [%lld,%lld,%lld,%lld] -> %s kind %d %s", (long long)opset,
             c->mode ? c->mode : "nearest", c->coord ? c->coord : "-",
             c->nearest ? c->nearest : "-", c->exclude, (long long)dims[0], (long long)dims[1],
             (long long)dims[2], (long long)dims[3], kind == 0 || kind == 2 ? "scales" : "sizes",
             kind, nhwc ? "nhwc" : "plain");
    run_all(&t, n_in, in, 1, (bool[]){nhwc}, &pr_cpu_impl_resize, what);
}

static void test_resize(void) {
    const rs_cfg cfgs[] = {
        {NULL, NULL, NULL, 0, 0},
        {"nearest", "asymmetric", "floor", 0, 0},
        {"nearest", "align_corners", "round_prefer_ceil", 0, 0},
        {"nearest", "half_pixel", "ceil", 0, 0},
        {"nearest", "pytorch_half_pixel", "round_prefer_floor", 0, 0},
        {"nearest", "half_pixel_symmetric", "floor", 0, 0},
        {"linear", "half_pixel", NULL, 0, 0},
        {"linear", "pytorch_half_pixel", NULL, 0, 0},
        {"linear", "align_corners", NULL, 0, 0},
        {"linear", "asymmetric", NULL, 0, 0},
        {"linear", "half_pixel", NULL, 1, 0},
        {"cubic", "half_pixel", NULL, 0, 0},
        {"cubic", "align_corners", NULL, 1, -0.5f},
    };
    const int64_t d1[4] = {1, 3, 7, 9}, d2[4] = {2, 19, 12, 10};
    const float up2[4] = {1, 1, 2, 2}, odd[4] = {1, 1, 1.7f, 0.6f}, down[4] = {1, 1, 0.5f, 0.5f};
    const int64_t sz1[4] = {1, 3, 17, 23}, sz2[4] = {2, 19, 5, 21};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        int64_t opset = 19;
        for (int l = 0; l < 2; l++) {
            resize_case(opset, &cfgs[i], d1, up2, NULL, 0, l);
            resize_case(opset, &cfgs[i], d2, odd, NULL, 0, l);
            resize_case(opset, &cfgs[i], d2, down, NULL, 2, l);
            resize_case(opset, &cfgs[i], d1, NULL, sz1, 1, l);
            resize_case(opset, &cfgs[i], d2, NULL, sz2, 3, l);
        }
    }
    /* tf_half_pixel_for_nn (opset 11..12), large tensors (parallel) */
    const rs_cfg tfnn = {"nearest", "tf_half_pixel_for_nn", "round_prefer_ceil", 0, 0};
    const rs_cfg lin = {"linear", "half_pixel", NULL, 0, 0};
    const rs_cfg nn = {"nearest", "asymmetric", "floor", 0, 0};
    const int64_t big[4] = {1, 32, 40, 48};
    for (int l = 0; l < 2; l++) {
        resize_case(11, &tfnn, d2, odd, NULL, 0, l);
        resize_case(13, &lin, big, up2, NULL, 0, l);
        resize_case(13, &nn, big, up2, NULL, 0, l);
    }
    /* N / C resized: handed to the ref kernel */
    const float upc[4] = {1, 2, 2, 1.5f};
    for (int l = 0; l < 2; l++) {
        resize_case(13, &nn, d1, upc, NULL, 0, l);
        resize_case(13, &lin, d1, upc, NULL, 2, l);
    }
    /* Resize-10 and Upsample-9 (X, scales) and Upsample-7 (scales attribute) */
    for (int l = 0; l < 2; l++) {
        for (int u = 0; u < 3; u++) {
            tnode t;
            if (u == 0)
                n_init(&t, PR_OP_Resize, "Resize", 10);
            else
                n_init(&t, PR_OP_Upsample, "Upsample", u == 1 ? 9 : 7);
            n_str(&t, "mode", l ? "linear" : "nearest");
            const float sc[4] = {1, 1, 2, 3};
            cc_input in[2] = {{"x", 4, {2, 5, 6, 7}, .nhwc = l},
                              {"scales", 1, {4}, .init = true, .data = sc}};
            if (u == 2) {
                pr_attr *a = n_attr(&t, "scales", PR_ATTR_FLOATS);
                static float fs[4] = {1, 1, 2, 3};
                a->floats = fs;
                a->n = 4;
            }
            char what[96];
            snprintf(what, sizeof what, "%s-%lld %s %s", t.node.op_type, (long long)t.node.opset,
                     l ? "linear" : "nearest", l ? "nhwc" : "plain");
            run_all(&t, u == 2 ? 1 : 2, in, 1, (bool[]){l}, &pr_cpu_impl_resize, what);
        }
    }
}

/* ------------------------------------------------------------ in place */

/* Impls that declare inplace_input 0: running with the output on the
 * input's buffer gives the same bits as running out of place. */
static void inplace_case(const tnode *t, int n_in, const cc_input *ins, bool nhwc,
                         const pr_cpu_impl *impl, pr_dtype dt, int threads, const char *label) {
    pr_dtype dts[CC_MAX_IO];
    float *plain[CC_MAX_IO] = {0};
    for (int i = 0; i < n_in; i++) {
        dts[i] = ins[i].init ? PRECIS_FLOAT32 : dt;
        int64_t ne = pr_numel(ins[i].rank, ins[i].dims);
        plain[i] = malloc((size_t)ne * sizeof(float));
        for (int64_t q = 0; q < ne; q++) plain[i][q] = cc_round(cc_rand(-4, 4), dts[i]);
    }
    pr_graph *g = cc_graph(t, n_in, ins, dts, plain, 1, (bool[]){nhwc}, true);
    const pr_node *n = &g->nodes[0];
    pr_err e = {0};
    CHECK(impl->supports(g, n));
    CHECK(impl->inplace_input && impl->inplace_input(g, n) == 0);
    pr_buf in[CC_MAX_IO], y1, y2;
    const pr_buf *inp[CC_MAX_IO];
    for (int i = 0; i < n_in; i++) {
        pr_buf_alloc(&in[i], dts[i], ins[i].rank, ins[i].dims, ins[i].name, &e);
        pr_ref_from_f32(plain[i], in[i].numel, dts[i], in[i].data);
        inp[i] = &in[i];
    }
    pr_buf_alloc(&y1, dt, ins[0].rank, ins[0].dims, "y1", &e);
    pr_buf_alloc(&y2, dt, ins[0].rank, ins[0].dims, "y2", &e);
    memcpy(y2.data, in[0].data, y2.nbytes);
    void *st = NULL;
    pr_cpu_cfg cfg = {.num_threads = threads};
    CHECK(impl->prepare(g, n, &cfg, &st, &e) == PRECIS_OK);
    pr_cpu_exec x = {threads, NULL, NULL, 0, NULL, 0};
    pr_buf *o1[1] = {&y1}, *o2[1] = {&y2};
    pr_kernel k1 = {g, n, n_in, inp, 1, o1, &e, threads};
    CHECK(impl->run(st, &k1, &x) == PRECIS_OK);
    inp[0] = &y2;
    pr_kernel k2 = {g, n, n_in, inp, 1, o2, &e, threads};
    CHECK(impl->run(st, &k2, &x) == PRECIS_OK);
    bool same = memcmp(y1.data, y2.data, y1.nbytes) == 0;
    if (!same) fprintf(stderr, "%s %s t%d: in-place result differs\n", label, dtn(dt), threads);
    CHECK(same);
    impl->destroy(st);
    free(x.scratch);
    for (int i = 0; i < n_in; i++) {
        pr_buf_free(&in[i]);
        free(plain[i]);
    }
    pr_buf_free(&y1);
    pr_buf_free(&y2);
    pr_graph_destroy(g);
}

static void test_inplace(void) {
    for (int d = 0; d < 3; d++)
        for (int th = 1; th <= 2; th++) {
            tnode t;
            n_init(&t, PR_OP_Softmax, "Softmax", 13);
            cc_input a[1] = {{"x", 2, {64, 1000}, .init = false}};
            inplace_case(&t, 1, a, false, &pr_cpu_impl_softmax, DTS[d], th, "softmax");
            n_init(&t, PR_OP_LogSoftmax, "LogSoftmax", 13);
            n_int(&t, "axis", 1);
            cc_input b[1] = {{"x", 3, {4, 100, 130}, .init = false}};
            inplace_case(&t, 1, b, false, &pr_cpu_impl_softmax, DTS[d], th, "logsoftmax axis 1");
            n_init(&t, PR_OP_LayerNormalization, "LayerNormalization", 17);
            cc_input c[3] = {{"x", 2, {64, 768}, .init = false},
                             {"s", 1, {768}, .init = true},
                             {"b", 1, {768}, .init = true}};
            inplace_case(&t, 3, c, false, &pr_cpu_impl_layernorm, DTS[d], th, "layernorm");
            n_init(&t, PR_OP_InstanceNormalization, "InstanceNormalization", 6);
            for (int l = 0; l < 2; l++) {
                cc_input i4[3] = {{"x", 4, {2, 24, 33, 35}, .nhwc = l},
                                  {"s", 1, {24}, .init = true},
                                  {"b", 1, {24}, .init = true}};
                inplace_case(&t, 3, i4, l, &pr_cpu_impl_instnorm, DTS[d], th,
                             l ? "instnorm nhwc" : "instnorm");
            }
        }
}

/* ------------------------------------------------------------ Attention */

typedef struct attn_case {
    const char *what;
    int kt;           /* k_transposed */
    float scale;
    int rank;         /* of Q, K, V */
    int64_t q[4], k[4], v[4];
    int mrank;        /* 0: no mask */
    int64_t m[4];
    bool minit;       /* the mask is a float32 initializer */
    const float *mdata; /* NULL: random */
} attn_case;

static void attn_run(const attn_case *c, int threads) {
    tnode t;
    n_init(&t, PR_OP_Attention, "Attention", 1);
    t.node.domain = PR_FUSED_DOMAIN;
    n_int(&t, "k_transposed", c->kt);
    n_float(&t, "scale", c->scale);
    cc_input in[4] = {{.name = "q", .rank = c->rank},
                      {.name = "k", .rank = c->rank},
                      {.name = "v", .rank = c->rank},
                      {.name = "m", .rank = c->mrank, .init = c->minit, .data = c->mdata}};
    memcpy(in[0].dims, c->q, sizeof c->q);
    memcpy(in[1].dims, c->k, sizeof c->k);
    memcpy(in[2].dims, c->v, sizeof c->v);
    memcpy(in[3].dims, c->m, sizeof c->m);
    for (int d = 0; d < 3; d++)
        for (int th = 1; th <= threads; th++) {
            char label[160];
            snprintf(label, sizeof label, "attention %s %s t%d", c->what, dtn(DTS[d]), th);
            cc_run(&t, c->mrank ? 4 : 3, in, 1, NULL, DTS[d], &pr_cpu_impl_attention, th, label);
        }
}

static void test_attention(void) {
    /* a row masked to one key, a row of -inf but one, ordinary rows */
    static float mask[5 * 23];
    for (int i = 0; i < 5 * 23; i++) {
        int r = i / 23, j = i % 23;
        mask[i] = r == 0 ? (j == 7 ? 0.0f : -1e9f) : r == 1 ? (j == 3 ? 0.5f : -INFINITY)
                                                             : cc_rand(-2, 2);
    }
    static const attn_case cases[] = {
        {"mask [B,1,1,Sk], Sq != Sk, D 20", 0, 0.3f, 4, {2, 3, 17, 20}, {2, 3, 23, 20},
         {2, 3, 23, 12}, 4, {2, 1, 1, 23}, false, NULL},
        {"k_transposed, no mask", 1, 0.125f, 4, {1, 2, 64, 32}, {1, 2, 32, 64}, {1, 2, 64, 32},
         0, {0}, false, NULL},
        {"mask [Sq, Sk] with -1e9 / -inf rows", 0, 1.0f, 3, {3, 5, 9}, {3, 23, 9}, {3, 23, 7},
         2, {5, 23}, false, mask},
        {"float32 initializer mask [Sk], k_transposed", 1, 0.5f, 3, {2, 6, 16}, {2, 16, 23},
         {2, 23, 17}, 1, {23}, true, mask + 46},
        {"per-row mask [B,1,Sq,1]", 0, 0.7f, 4, {2, 2, 11, 15}, {2, 2, 13, 15}, {2, 2, 13, 33},
         4, {2, 1, 11, 1}, false, NULL},
        {"one query row against a mask of 5", 0, 0.4f, 4, {1, 2, 1, 8}, {1, 2, 9, 8},
         {1, 2, 9, 5}, 4, {1, 1, 5, 9}, false, NULL},
        {"K and V shared by the heads", 0, 0.2f, 4, {2, 3, 7, 10}, {2, 1, 12, 10},
         {1, 1, 12, 6}, 0, {0}, false, NULL},
        {"D 1, Dv 1", 1, 2.0f, 3, {2, 4, 1}, {2, 1, 5}, {2, 5, 1}, 0, {0}, false, NULL},
        {"odd D 7, odd Sk 9", 0, 0.5f, 3, {2, 30, 7}, {2, 9, 7}, {2, 9, 40}, 0, {0}, false, NULL},
        {"MiniLM shape", 0, 0.17677669f, 4, {1, 12, 128, 32}, {1, 12, 128, 32},
         {1, 12, 128, 32}, 4, {1, 1, 1, 128}, false, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        attn_run(&cases[i], i + 1 == sizeof cases / sizeof cases[0] ? 2 : 1);
    /* K a float32 initializer beside bf16 / f16 Q and V (the conversion path) */
    {
        tnode t;
        n_init(&t, PR_OP_Attention, "Attention", 1);
        t.node.domain = PR_FUSED_DOMAIN;
        n_float(&t, "scale", 0.25f);
        cc_input in[3] = {{.name = "q", .rank = 3, .dims = {2, 9, 16}},
                          {.name = "k", .rank = 2, .dims = {21, 16}, .init = true},
                          {.name = "v", .rank = 3, .dims = {2, 21, 24}}};
        for (int d = 0; d < 3; d++) {
            char label[96];
            snprintf(label, sizeof label, "attention K initializer %s", dtn(DTS[d]));
            cc_run(&t, 3, in, 1, NULL, DTS[d], &pr_cpu_impl_attention, 1, label);
        }
    }
    /* row blocks smaller than Sq (few heads, 2 threads): K and V are packed
     * once per batch element and reused by the next block */
    attn_case split = {"row blocks", 0, 0.3f, 4, {1, 2, 100, 24}, {1, 2, 100, 24},
                       {1, 2, 100, 40}, 4, {1, 1, 1, 100}, false, NULL};
    attn_run(&split, 2);
}

/* Attention qkv_heads (ops.inc: Q, K, V thirds of one [B, S, 3HD] tensor, each
 * stored [B, S, H, D]) in ref equals the same attention on the three thirds
 * copied out (heads_bshd 15), bit for bit; the CPU impl refuses the form. */
static float *ref_attn(tnode *t, int n_in, const pr_buf *in, int64_t numel) {
    cc_input ins[4] = {{.name = "q"}, {.name = "k"}, {.name = "v"}, {.name = "m"}};
    pr_dtype dts[4] = {PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32};
    float *plain[4] = {0};
    for (int i = 0; i < n_in; i++) {
        ins[i].rank = in[i].rank;
        memcpy(ins[i].dims, in[i].dims, sizeof ins[i].dims);
    }
    pr_graph *g = cc_graph(t, n_in, ins, dts, plain, 1, NULL, false);
    const pr_buf *inp[4] = {&in[0], &in[1], &in[2], n_in > 3 ? &in[3] : NULL};
    pr_buf out[1];
    memset(out, 0, sizeof out);
    pr_err e = {0};
    precis_status st = pr_exec_node(g, &g->nodes[0], inp, out, 1, &e);
    CHECK(st == PRECIS_OK && out[0].numel == numel);
    if (st) fprintf(stderr, "ref attention: %s\n", e.msg);
    float *y = st ? NULL : malloc((size_t)numel * sizeof *y);
    if (y) memcpy(y, out[0].data, (size_t)numel * sizeof *y);
    if (!st) pr_buf_free(&out[0]);
    pr_graph_destroy(g);
    return y;
}

static void test_attention_packed(void) {
    const int64_t B = 2, S = 9, H = 3, D = 8, HD = H * D;
    pr_err e = {0};
    pr_buf p = {0}, q[3], m = {0};
    int64_t pd[3] = {B, S, 3 * HD}, qd[4] = {B, S, H, D}, md[4] = {B, 1, 1, S};
    pr_buf_alloc(&p, PRECIS_FLOAT32, 3, pd, "p", &e);
    pr_buf_alloc(&m, PRECIS_FLOAT32, 4, md, "m", &e);
    float *pv = p.data, *mv = m.data;
    for (int64_t i = 0; i < p.numel; i++) pv[i] = cc_rand(-1, 1);
    for (int64_t i = 0; i < m.numel; i++) mv[i] = cc_rand(-3, 0);
    for (int o = 0; o < 3; o++) {
        memset(&q[o], 0, sizeof q[o]);
        pr_buf_alloc(&q[o], PRECIS_FLOAT32, 4, qd, "q", &e);
        float *qv = q[o].data;
        for (int64_t r = 0; r < B * S; r++) /* row (b, s): [Q | K | V] of H * D each */
            memcpy(qv + r * HD, pv + r * 3 * HD + o * HD, (size_t)HD * sizeof *qv);
    }
    tnode t;
    n_init(&t, PR_OP_Attention, "Attention", 1);
    t.node.domain = PR_FUSED_DOMAIN;
    n_float(&t, "scale", 0.35f);
    n_int(&t, "heads_bshd", 15);
    pr_buf sep[4] = {q[0], q[1], q[2], m};
    float *want = ref_attn(&t, 4, sep, B * S * HD);
    n_int(&t, "qkv_heads", H);
    pr_buf pk[4] = {p, p, p, m};
    float *got = ref_attn(&t, 4, pk, B * S * HD);
    CHECK(want && got && memcmp(want, got, (size_t)(B * S * HD) * sizeof *got) == 0);
    /* the CPU impl takes no folded heads (a cuda plan's form) */
    cc_input ci[4] = {{.name = "p", .rank = 3, .dims = {B, S, 3 * HD}}, {.name = "p"},
                      {.name = "p"}, {.name = "m", .rank = 4, .dims = {B, 1, 1, S}}};
    pr_dtype dts[4] = {PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32, PRECIS_FLOAT32};
    float *plain[4] = {0};
    ci[1] = ci[2] = ci[0];
    pr_graph *g = cc_graph(&t, 4, ci, dts, plain, 1, NULL, false);
    CHECK(g && !pr_cpu_impl_attention.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    free(want);
    free(got);
    for (int o = 0; o < 3; o++) pr_buf_free(&q[o]);
    pr_buf_free(&p);
    pr_buf_free(&m);
}

/* ------------------------------------------------------------ main */

static void report_isa(void) {
    tnode t;
    n_init(&t, PR_OP_Softmax, "Softmax", 13);
    pr_err e = {0};
    void *st = NULL;
    pr_graph *g = pr_graph_create();
    int ni = pr_graph_add_node(g, 1, 1, 0, &e);
    g->nodes[ni].op = PR_OP_Softmax;
    g->nodes[ni].op_type = "Softmax";
    g->nodes[ni].name = "n";
    g->nodes[ni].domain = "";
    g->nodes[ni].opset = 13;
    pr_cpu_cfg cfg = {.num_threads = 1};
    CHECK(pr_cpu_impl_softmax.prepare(g, &g->nodes[ni], &cfg, &st, &e) == PRECIS_OK);
    const char *d = st ? pr_cpu_impl_softmax.describe(st) : "?";
    printf("test_cpu_norm: ISA %s, softmax runs %s\n", pr_cpu_isa_name(), d);
    const char *env = getenv("PRECIS_CPU_ISA");
    if (env && strcmp(env, "scalar") == 0) CHECK(strstr(d, "scalar") != NULL);
    if (st) pr_cpu_impl_softmax.destroy(st);
    pr_graph_destroy(g);
}

int main(int argc, char **argv) {
    const char *env = getenv("PRECIS_CPU_ISA");
    report_isa();
    test_softmax();
    test_layernorm();
    test_instnorm();
    test_pool();
    test_resize();
    test_attention();
    test_attention_packed();
    test_inplace();
    int rc = check_report(env ? "test_cpu_norm (PRECIS_CPU_ISA set)" : "test_cpu_norm");
    if (env) return rc;
    fflush(NULL);
    /* again with the scalar fallbacks */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("PRECIS_CPU_ISA", "scalar", 1);
        execv("/proc/self/exe", argv);
        execv(argv[0], argv);
        perror("execv");
        _exit(127);
    }
    int ws = 0;
    if (pid < 0 || waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        fprintf(stderr, "test_cpu_norm: the scalar run failed\n");
        return 1;
    }
    (void)argc;
    return rc;
}
