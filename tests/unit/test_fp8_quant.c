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
#include "graph_build.h"

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
    CHECK(run(g0, o0, n0, 0.02f) && run(g1, o1, n1, 0.02f));
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
