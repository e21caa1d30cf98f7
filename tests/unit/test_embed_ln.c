/* pass_embed_ln.c (cuda plans): Gather(W0, I0), Gather(W1, I1) -> Sum(., ., P)
 * -> LayerNormalization becomes one EmbedLayerNorm node (ops.inc). The graph
 * is built twice, one copy folded; ref runs both (ref_EmbedLayerNorm runs the
 * Gathers, the Sum and the LayerNorm's own ref kernels) and every output must
 * agree byte for byte: fp16 with B, bf16 without B and with the e4m3 output
 * (q_scale), indices from run()'s random inputs (negative ones included:
 * counted from the end). Then what the pass must leave: a float32 sum, a Gather
 * output that is also a graph output, P first in the Sum, the A/B switch
 * PRECIS_CUDA_EMBED_LN=0; and the entry point cuda plans call
 * (pr_fold_fp8_quantize) folds it too. Float32 tables whose Gathers store the
 * sum's type fold (MiniLM's plans), Gathers storing float32 into an fp16 sum do
 * not. Also the op's shape inference. */
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

enum { MODE_PLAIN, MODE_EXPOSE, MODE_PFIRST };

static pr_graph *build(pr_dtype dt, bool with_b, bool q, int mode) {
    pr_graph *g = pr_graph_create();
    g->inputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    const int64_t w0d[2] = {10, 16}, w1d[2] = {4, 16}, pd[3] = {1, 4, 16}, id[2] = {2, 4},
                  xd[3] = {2, 4, 16}, ld = 16;
    float w0[160], w1[64], pv[64], sv[16], bv[16];
    rng = 4242;
    for (int i = 0; i < 160; i++) w0[i] = rnd(-1, 1);
    for (int i = 0; i < 64; i++) w1[i] = rnd(-0.5f, 0.5f), pv[i] = rnd(-1, 1);
    for (int i = 0; i < 16; i++) sv[i] = rnd(0.5f, 1.5f), bv[i] = rnd(-0.2f, 0.2f);
    int W0 = init(g, "w0", dt, 2, w0d, w0), W1 = init(g, "w1", dt, 2, w1d, w1);
    int P = init(g, "p", dt, 3, pd, pv), S = init(g, "scale", dt, 1, &ld, sv);
    int B = with_b ? init(g, "bias", dt, 1, &ld, bv) : -1;
    int I0 = act(g, "i0", PRECIS_INT64, 2, id), I1 = act(g, "i1", PRECIS_INT64, 2, id);
    int g0 = act(g, "g0", dt, 3, xd), g1 = act(g, "g1", dt, 3, xd), x = act(g, "x", dt, 3, xd);
    int y = act(g, "y", dt, 3, xd);
    mark(g, I0, true);
    mark(g, I1, true);
    node(g, PR_OP_Gather, 13, "word", 2, (int[]){W0, I0}, g0);
    node(g, PR_OP_Gather, 13, "token_type", 2, (int[]){W1, I1}, g1);
    node(g, PR_OP_Sum, 13, "sum", 3, mode == MODE_PFIRST ? (int[]){P, g0, g1} : (int[]){g0, g1, P}, x);
    int ln = node(g, PR_OP_LayerNormalization, 17, "ln", with_b ? 3 : 2, (int[]){x, S, B}, y);
    pr_node_set_float(g, ln, "epsilon", 1e-5f, &err);
    mark(g, y, false);
    if (q) {
        int yq = act(g, "yq", PRECIS_FLOAT8E4M3FN, 3, xd);
        pr_node_set_float(g, ln, "q_scale", 0.02f, &err);
        pr_node_set_output(g, ln, 1, yq, &err);
        mark(g, yq, false);
    }
    if (mode == MODE_EXPOSE) mark(g, g0, false);
    CHECK(err.status == PRECIS_OK);
    if (err.status) fprintf(stderr, "build: %s\n", err.msg);
    return g;
}

static void fold_case(pr_dtype dt, bool with_b, bool q, bool entry) {
    pr_graph *g0 = build(dt, with_b, q, MODE_PLAIN), *g1 = build(dt, with_b, q, MODE_PLAIN);
    CHECK(pr_graph_infer(g0, &err) == PRECIS_OK && pr_graph_infer(g1, &err) == PRECIS_OK);
    CHECK((entry ? pr_fold_fp8_quantize(g1, &err) : pr_fold_embed_layernorm(g1, &err)) ==
          PRECIS_OK);
    CHECK(pr_graph_check(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_infer(g1, &err) == PRECIS_OK);
    if (err.status) fprintf(stderr, "fold: %s\n", err.msg);
    CHECK(count(g1, PR_OP_EmbedLayerNorm) == 1 && count(g1, PR_OP_Gather) == 0 &&
          count(g1, PR_OP_Sum) == 0 && count(g1, PR_OP_LayerNormalization) == 0 &&
          g1->n_nodes == 1);
    const pr_node *n = find(g1, PR_OP_EmbedLayerNorm);
    CHECK(n && n->n_inputs == (with_b ? 7 : 6) && n->n_outputs == (q ? 2 : 1) &&
          pr_attr_int(n, "sum_type", 0) == dt && !strcmp(n->domain, PR_FUSED_DOMAIN));
    const pr_tensor *y = &g1->tensors[pr_graph_get_tensor(g1, "y", &err)];
    CHECK(y->dtype == dt && y->rank == 3 && y->dims[0] == 2 && y->dims[1] == 4 && y->dims[2] == 16);
    void *o0[8] = {0}, *o1[8] = {0};
    size_t n0[8] = {0}, n1[8] = {0};
    CHECK(run(g0, o0, n0, NAN) && run(g1, o1, n1, NAN));
    for (int k = 0; k < (q ? 2 : 1); k++) {
        bool same = o0[k] && o1[k] && n0[k] == n1[k] && n0[k] > 0 && !memcmp(o0[k], o1[k], n0[k]);
        if (!same) fprintf(stderr, "%s output %d differs after the fold\n", pr_dtype_name(dt), k);
        CHECK(same);
        free(o0[k]);
        free(o1[k]);
    }
    pr_graph_destroy(g0);
    pr_graph_destroy(g1);
}

static void leave_case(pr_dtype dt, int mode, bool env_off) {
    pr_graph *g = build(dt, true, false, mode);
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK);
    if (env_off) setenv("PRECIS_CUDA_EMBED_LN", "0", 1);
    CHECK(pr_fold_embed_layernorm(g, &err) == PRECIS_OK);
    if (env_off) unsetenv("PRECIS_CUDA_EMBED_LN");
    CHECK(count(g, PR_OP_EmbedLayerNorm) == 0 && count(g, PR_OP_Gather) == 2 &&
          count(g, PR_OP_Sum) == 1 && count(g, PR_OP_LayerNormalization) == 1);
    pr_graph_destroy(g);
}

/* MiniLM's fp16 plans: float32 tables whose Gathers store fp16 rows (the cuda
 * Gather converts; dtypes set as the precision pass leaves them, no inference:
 * ref has no such Gather) fold too; a Gather storing float32 rows into an fp16
 * sum does not (the Sum would read them unrounded). */
static void test_convert(void) {
    for (int k = 0; k < 2; k++) {
        pr_graph *g = build(PRECIS_FLOAT16, true, false, MODE_PLAIN);
        const char *names[3] = {"w0", "w1", k ? "g0" : "p"};
        for (int i = 0; i < 3; i++) /* P stays float32-able: any float type */
            g->tensors[pr_graph_get_tensor(g, names[i], &err)].dtype = PRECIS_FLOAT32;
        CHECK(pr_fold_embed_layernorm(g, &err) == PRECIS_OK);
        CHECK(count(g, PR_OP_EmbedLayerNorm) == (k ? 0 : 1));
        pr_graph_destroy(g);
    }
}

/* pr_infer_EmbedLayerNorm: dims and dtypes, and its refusals */
static void test_infer(void) {
    pr_graph *g = build(PRECIS_FLOAT16, true, true, MODE_PLAIN);
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_embed_layernorm(g, &err) == PRECIS_OK);
    const pr_node *n = find(g, PR_OP_EmbedLayerNorm);
    CHECK(n != NULL);
    if (!n) {
        pr_graph_destroy(g);
        return;
    }
    pr_tinfo in[7], out[2];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 7; i++) {
        const pr_tensor *t = &g->tensors[n->inputs[i]];
        in[i].dtype = t->dtype;
        in[i].rank = t->rank;
        memcpy(in[i].dims, t->dims, sizeof t->dims);
    }
    pr_err e = {0};
    pr_infer ic = {g, n, 7, in, 2, out, &e};
    memset(out, 0, sizeof out);
    CHECK(pr_infer_EmbedLayerNorm(&ic) == PRECIS_OK);
    CHECK(out[0].dtype == PRECIS_FLOAT16 && out[0].rank == 3 && out[0].dims[2] == 16 &&
          out[1].dtype == PRECIS_FLOAT8E4M3FN && out[1].dims[1] == 4);
    in[1].dtype = PRECIS_FLOAT32; /* float indices */
    CHECK(pr_infer_EmbedLayerNorm(&ic) != PRECIS_OK);
    in[1].dtype = PRECIS_INT64;
    in[3].dims[1] = 5; /* I1 of another shape */
    CHECK(pr_infer_EmbedLayerNorm(&ic) != PRECIS_OK);
    in[3].dims[1] = 4;
    in[4].dims[2] = 8; /* P that does not broadcast */
    CHECK(pr_infer_EmbedLayerNorm(&ic) != PRECIS_OK);
    pr_graph_destroy(g);
}

int main(void) {
    fold_case(PRECIS_FLOAT16, true, false, false);
    fold_case(PRECIS_BFLOAT16, false, true, false);
    fold_case(PRECIS_FLOAT16, true, true, true);
    leave_case(PRECIS_FLOAT32, MODE_PLAIN, false);
    leave_case(PRECIS_FLOAT16, MODE_EXPOSE, false);
    leave_case(PRECIS_FLOAT16, MODE_PFIRST, false);
    leave_case(PRECIS_FLOAT16, MODE_PLAIN, true);
    test_convert();
    test_infer();
    return check_report("test_embed_ln");
}
