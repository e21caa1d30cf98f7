/* pass_fp8_quant.c (cuda fp8 plans): an e4m3 QuantizeLinear after a
 * LayerNorm (-> LayerNorm q_scale, output 1) or after an Attention and a
 * Reshape (-> Attention y_type 17) goes into the node. The graph is built
 * twice, one copy folded; ref runs both (ops.inc's semantics of the fused
 * forms) and every output must agree byte for byte. Then the cases the pass
 * must leave alone: no heads folded, a scale that is not constant, an
 * Attention of dynamic shape. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "ir/infer.h"
#include "passes/graph_edit.h"
#include "passes/pass_plan.h"
#include "runtime/api.h"

#include "check.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float rnd(float lo, float hi) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((double)(rng >> 11) / 9007199254740992.0);
}

static pr_err err;

static int act(pr_graph *g, const char *name, pr_dtype dt, int rank, const int64_t *dims) {
    int t = pr_graph_get_tensor(g, name, &err);
    g->tensors[t].dtype = dt;
    g->tensors[t].rank = rank;
    memcpy(g->tensors[t].dims, dims, (size_t)rank * sizeof *dims);
    return t;
}

static int init(pr_graph *g, const char *name, pr_dtype dt, int rank, const int64_t *dims,
                const float *v) {
    int64_t n = pr_numel(rank, dims);
    void *d = pr_edit_alloc((size_t)(n ? n : 1) * pr_dtype_size(dt));
    pr_ref_from_f32(v, n, dt, d);
    return pr_graph_add_init(g, name, dt, rank, dims, d, &err);
}

static int node(pr_graph *g, pr_op op, int opset, const char *name, int n_in, const int *ins,
                int out) {
    int ni = pr_node_new(g, op, opset, name, n_in, 1, &err);
    for (int i = 0; i < n_in; i++) pr_node_set_input(g, NULL, ni, i, ins[i], &err);
    pr_node_set_output(g, ni, 0, out, &err);
    return ni;
}

static void mark(pr_graph *g, int t, bool input) {
    g->tensors[t].flags |= input ? PR_T_INPUT : PR_T_OUTPUT;
    if (input) g->inputs[g->n_inputs++] = t;
    else g->outputs[g->n_outputs++] = t;
}

/* heads: the Attention has its head transposes folded (heads_bshd 15), as in
 * a cuda plan; scale_init: QuantizeLinear's scales are initializers. */
static pr_graph *build(bool heads, bool scale_init) {
    rng = 0x9E3779B97F4A7C15ull; /* the same weights each build */
    pr_graph *g = pr_graph_create();
    g->inputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    const pr_dtype H = PRECIS_FLOAT16, F8 = PRECIS_FLOAT8E4M3FN;
    const int64_t xd[3] = {2, 6, 64}, hd[4] = {2, 6, 2, 32}, one = 1, c64 = 64;
    float gv[64], bv[64], s1 = 0.02f, s2 = 0.004f, z = 0, shape[3] = {2, 6, 64};
    for (int i = 0; i < 64; i++) gv[i] = rnd(-2, 2), bv[i] = rnd(-1, 1);
    int x = act(g, "x", H, 3, xd), y = act(g, "y", H, 3, xd), yq = act(g, "yq", F8, 3, xd);
    int d1 = act(g, "d1", PRECIS_FLOAT32, 3, xd);
    int ga = init(g, "gamma", H, 1, &c64, gv), be = init(g, "beta", H, 1, &c64, bv);
    int sc1 = scale_init ? init(g, "s1", PRECIS_FLOAT32, 0, &one, &s1)
                         : act(g, "s1", PRECIS_FLOAT32, 0, &one);
    int sc2 = init(g, "s2", PRECIS_FLOAT32, 0, &one, &s2), zp = init(g, "zp", F8, 0, &one, &z);
    mark(g, x, true);
    if (!scale_init) mark(g, sc1, true);
    int ln = node(g, PR_OP_LayerNormalization, 17, "ln", 3, (int[]){x, ga, be}, y);
    pr_node_set_float(g, ln, "epsilon", 1e-5f, &err);
    node(g, PR_OP_QuantizeLinear, 19, "q1", 3, (int[]){y, sc1, zp}, yq);
    node(g, PR_OP_DequantizeLinear, 19, "dq1", 2, (int[]){yq, sc1}, d1);
    mark(g, y, false); /* Y has a second reader: the graph's output */
    mark(g, d1, false);
    int q = act(g, "q", H, 4, hd), k = act(g, "k", H, 4, hd), v = act(g, "v", H, 4, hd);
    int a = act(g, "a", H, 4, hd), r = act(g, "r", H, 3, xd), rq = act(g, "rq", F8, 3, xd);
    int d2 = act(g, "d2", PRECIS_FLOAT32, 3, xd);
    int64_t three = 3;
    float dims[3] = {shape[0], shape[1], shape[2]};
    int sh = init(g, "shape", PRECIS_INT64, 1, &three, dims);
    mark(g, q, true);
    mark(g, k, true);
    mark(g, v, true);
    int at = node(g, PR_OP_Attention, 1, "attn", 3, (int[]){q, k, v}, a);
    pr_node_set_float(g, at, "scale", 0.2f, &err);
    if (heads) pr_node_set_int(g, at, "heads_bshd", 15, &err);
    node(g, PR_OP_Reshape, 14, "reshape", 2, (int[]){a, sh}, r);
    node(g, PR_OP_QuantizeLinear, 19, "q2", 3, (int[]){r, sc2, zp}, rq);
    node(g, PR_OP_DequantizeLinear, 19, "dq2", 2, (int[]){rq, sc2}, d2);
    mark(g, d2, false);
    CHECK(err.status == PRECIS_OK);
    if (err.status) fprintf(stderr, "build: %s\n", err.msg);
    return g;
}

static int count(const pr_graph *g, pr_op op) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += g->nodes[i].op == op;
    return c;
}

static const pr_node *find(const pr_graph *g, pr_op op) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op) return &g->nodes[i];
    return NULL;
}

/* Run g on ref (the inputs from one seed): the outputs, malloc'd bytes. */
static bool run(pr_graph *g, void **outs, size_t *nb) {
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m = calloc(1, sizeof *m);
    m->g = g;
    precis_tensor *in[8] = {0}, *out[8] = {0};
    const char *names[8];
    uint64_t keep = rng;
    rng = 12345;
    bool ok = true;
    for (int i = 0; i < g->n_inputs; i++) {
        const pr_tensor *x = &g->tensors[g->inputs[i]];
        names[i] = x->name;
        precis_tensor_create(ctx, (precis_dtype)x->dtype, x->rank, x->dims, &in[i]);
        int64_t n = precis_tensor_numel(in[i]);
        float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
        for (int64_t j = 0; j < n; j++) f[j] = x->dtype == PRECIS_FLOAT32 && n == 1 ? 0.02f
                                                                                   : rnd(-3, 3);
        pr_ref_from_f32(f, n, x->dtype, precis_tensor_data(in[i]));
        free(f);
    }
    rng = keep;
    precis_session *s = NULL;
    precis_status st = precis_session_create(ctx, m, NULL, &s);
    if (!st) st = precis_session_run(ctx, s, g->n_inputs, names, (const precis_tensor *const *)in,
                                     out);
    if (st) {
        fprintf(stderr, "run: %s\n", precis_last_error(ctx));
        ok = false;
    }
    for (int i = 0; ok && i < g->n_outputs; i++) {
        nb[i] = precis_tensor_nbytes(out[i]);
        outs[i] = malloc(nb[i] ? nb[i] : 1);
        memcpy(outs[i], precis_tensor_data(out[i]), nb[i]);
    }
    precis_session_destroy(s);
    for (int i = 0; i < 8; i++) {
        precis_tensor_destroy(in[i]);
        precis_tensor_destroy(out[i]);
    }
    m->g = NULL;
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
    return ok;
}

static void test_fold(void) {
    pr_graph *g0 = build(true, true), *g1 = build(true, true);
    CHECK(pr_graph_infer(g0, &err) == PRECIS_OK && pr_graph_infer(g1, &err) == PRECIS_OK);
    CHECK(pr_fold_fp8_quantize(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_check(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_infer(g1, &err) == PRECIS_OK);
    if (err.status) fprintf(stderr, "fold: %s\n", err.msg);
    CHECK(count(g1, PR_OP_QuantizeLinear) == 0 && count(g0, PR_OP_QuantizeLinear) == 2);
    const pr_node *ln = find(g1, PR_OP_LayerNormalization), *at = find(g1, PR_OP_Attention);
    CHECK(ln && pr_attr_float(ln, "q_scale", 0) == 0.02f && ln->n_outputs == 2 &&
          g1->tensors[ln->outputs[1]].dtype == PRECIS_FLOAT8E4M3FN);
    CHECK(at && pr_attr_int(at, "y_type", 0) == PRECIS_FLOAT8E4M3FN &&
          pr_attr_float(at, "y_scale", 0) == 0.004f &&
          g1->tensors[at->outputs[0]].dtype == PRECIS_FLOAT8E4M3FN);
    void *o0[8] = {0}, *o1[8] = {0};
    size_t n0[8] = {0}, n1[8] = {0};
    CHECK(run(g0, o0, n0) && run(g1, o1, n1));
    for (int i = 0; i < 3; i++) {
        CHECK(o0[i] && o1[i] && n0[i] == n1[i] && n0[i] > 0);
        if (o0[i] && o1[i] && n0[i] == n1[i] && memcmp(o0[i], o1[i], n0[i]))
            fprintf(stderr, "output %d differs after the fold\n", i);
        CHECK(o0[i] && o1[i] && n0[i] == n1[i] && !memcmp(o0[i], o1[i], n0[i]));
        free(o0[i]);
        free(o1[i]);
    }
    pr_graph_destroy(g0);
    pr_graph_destroy(g1);
    /* A/B switch */
    pr_graph *g2 = build(true, true);
    setenv("PRECIS_CUDA_FP8_FUSEQ", "0", 1);
    CHECK(pr_graph_infer(g2, &err) == PRECIS_OK && pr_fold_fp8_quantize(g2, &err) == PRECIS_OK);
    unsetenv("PRECIS_CUDA_FP8_FUSEQ");
    CHECK(count(g2, PR_OP_QuantizeLinear) == 2);
    pr_graph_destroy(g2);
}

static void test_leave(void) {
    /* no heads folded (not the fused kernel's form), a scale that is an input */
    pr_graph *g = build(false, false);
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_fp8_quantize(g, &err) == PRECIS_OK);
    CHECK(count(g, PR_OP_QuantizeLinear) == 2);
    const pr_node *ln = find(g, PR_OP_LayerNormalization), *at = find(g, PR_OP_Attention);
    CHECK(ln && pr_attr_float(ln, "q_scale", 0) == 0 && at && !pr_attr_int(at, "y_type", 0));
    pr_graph_destroy(g);
    /* a dynamic batch: the LayerNorm folds, the Attention (static shapes only) does not */
    g = build(true, true);
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK);
    g->tensors[pr_graph_get_tensor(g, "q", &err)].dims[0] = PR_DIM_UNKNOWN;
    CHECK(pr_fold_fp8_quantize(g, &err) == PRECIS_OK);
    CHECK(count(g, PR_OP_QuantizeLinear) == 1);
    at = find(g, PR_OP_Attention);
    CHECK(at && !pr_attr_int(at, "y_type", 0));
    pr_graph_destroy(g);
}

int main(void) {
    test_fold();
    test_leave();
    return check_report("test_fp8_quant");
}
