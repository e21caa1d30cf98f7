/* pass_attn_mask.c (cuda plans): Where(Expand(And(all-true, M)), X, Y) read
 * only as Attention masks becomes Where(M, X, Y) of M's broadcast shape
 * ([B,1,1,S] for HF's [B,1,S,S] padding mask). The graph is built twice, one
 * copy folded; ref runs both and every output must agree byte for byte.
 * Then the cases the pass must leave alone: a constant that is not all true,
 * a mask with another reader, the A/B switch. The same pass folds the
 * embeddings' Add(Add(a, b), c) into Sum(a, b, c) (cu.sum3): ref outputs
 * byte-equal before / after (float32 and fp16, either operand order), left
 * when the inner sum is a graph output or has another reader, or under
 * PRECIS_CUDA_SUM3=0. And the mask chain's identities (HF's Cast -> Flatten ->
 * Gather(b * S + s) -> Reshape -> Cast(bool -> bool) -> Where): the Gather
 * becomes a Reshape, the bool Cast an Identity, ref outputs byte-equal;
 * left for indices that are not 0..n-1 and under PRECIS_CUDA_MASK_IDS=0. */
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

/* HF's mask chain in front of two Attentions. all_true: the And's constant
 * is all true (else one element is false); expose: W is also a graph output. */
static pr_graph *build(bool all_true, bool expose) {
    pr_graph *g = pr_graph_create();
    g->inputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    const pr_dtype F = PRECIS_FLOAT32, B = PRECIS_BOOL;
    const int64_t qd[4] = {2, 2, 8, 16}, md[4] = {2, 1, 1, 8}, td[4] = {1, 1, 8, 1},
                  wd[4] = {2, 1, 8, 8}, four = 4, one = 1;
    float tv[8] = {1, 1, 1, 1, 1, 1, 1, 1}, shape[4] = {2, 1, 8, 8}, zero = 0, big = -10000;
    if (!all_true) tv[3] = 0;
    int mf = act(g, "mf", F, 4, md), m = act(g, "m", B, 4, md), c = act(g, "c", B, 4, wd);
    int ce = act(g, "ce", B, 4, wd), w = act(g, "w", F, 4, wd);
    int q = act(g, "q", F, 4, qd), k = act(g, "k", F, 4, qd), v = act(g, "v", F, 4, qd);
    int y1 = act(g, "y1", F, 4, qd), y2 = act(g, "y2", F, 4, qd);
    int t = init(g, "t", B, 4, td, tv), sh = init(g, "shape", PRECIS_INT64, 1, &four, shape);
    int x0 = init(g, "x0", F, 0, &one, &zero), x1 = init(g, "x1", F, 0, &one, &big);
    mark(g, mf, true);
    mark(g, q, true);
    mark(g, k, true);
    mark(g, v, true);
    node(g, PR_OP_Less, 13, "less", 2, (int[]){mf, x0}, m);
    node(g, PR_OP_And, 7, "and", 2, (int[]){t, m}, c);
    node(g, PR_OP_Expand, 13, "expand", 2, (int[]){c, sh}, ce);
    node(g, PR_OP_Where, 16, "where", 3, (int[]){ce, x0, x1}, w);
    int a1 = node(g, PR_OP_Attention, 1, "attn1", 4, (int[]){q, k, v, w}, y1);
    int a2 = node(g, PR_OP_Attention, 1, "attn2", 4, (int[]){y1, k, v, w}, y2);
    pr_node_set_float(g, a1, "scale", 0.25f, &err);
    pr_node_set_float(g, a2, "scale", 0.25f, &err);
    mark(g, y2, false);
    if (expose) mark(g, w, false);
    CHECK(err.status == PRECIS_OK);
    if (err.status) fprintf(stderr, "build: %s\n", err.msg);
    return g;
}

static void test_fold(void) {
    pr_graph *g0 = build(true, false), *g1 = build(true, false);
    CHECK(pr_graph_infer(g0, &err) == PRECIS_OK && pr_graph_infer(g1, &err) == PRECIS_OK);
    CHECK(pr_fold_attention_mask(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_compact(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_check(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_infer(g1, &err) == PRECIS_OK);
    if (err.status) fprintf(stderr, "fold: %s\n", err.msg);
    CHECK(count(g1, PR_OP_And) == 0 && count(g1, PR_OP_Expand) == 0 &&
          count(g1, PR_OP_Where) == 1 && count(g0, PR_OP_And) == 1);
    const pr_tensor *w = &g1->tensors[pr_graph_get_tensor(g1, "w", &err)];
    CHECK(w->rank == 4 && w->dims[0] == 2 && w->dims[1] == 1 && w->dims[2] == 1 && w->dims[3] == 8);
    void *o0[8] = {0}, *o1[8] = {0};
    size_t n0[8] = {0}, n1[8] = {0};
    CHECK(run(g0, o0, n0, NAN) && run(g1, o1, n1, NAN));
    CHECK(o0[0] && o1[0] && n0[0] == n1[0] && n0[0] > 0);
    if (o0[0] && o1[0] && n0[0] == n1[0] && memcmp(o0[0], o1[0], n0[0]))
        fprintf(stderr, "the output differs after the fold\n");
    CHECK(o0[0] && o1[0] && n0[0] == n1[0] && !memcmp(o0[0], o1[0], n0[0]));
    free(o0[0]);
    free(o1[0]);
    pr_graph_destroy(g0);
    pr_graph_destroy(g1);
}

static void test_leave(void) {
    pr_graph *g = build(false, false); /* the constant has a false element */
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_attention_mask(g, &err) == PRECIS_OK);
    CHECK(count(g, PR_OP_And) == 1 && count(g, PR_OP_Expand) == 1);
    pr_graph_destroy(g);
    g = build(true, true); /* W is a graph output too */
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_attention_mask(g, &err) == PRECIS_OK);
    CHECK(count(g, PR_OP_And) == 1 && count(g, PR_OP_Expand) == 1);
    pr_graph_destroy(g);
    g = build(true, false); /* the A/B switch */
    setenv("PRECIS_CUDA_MASK_ROW", "0", 1);
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_attention_mask(g, &err) == PRECIS_OK);
    unsetenv("PRECIS_CUDA_MASK_ROW");
    CHECK(count(g, PR_OP_And) == 1 && count(g, PR_OP_Expand) == 1);
    pr_graph_destroy(g);
}

/* y = Add(Add(a, b), c) (swap: Add(c, Add(a, b))), c a [1,4,16] initializer
 * broadcast over the batch; mode 1: the inner sum is a graph output too, 2:
 * it has another reader (z = Add(t, a), an output). */
static pr_graph *build_sum(pr_dtype dt, bool swap, int mode) {
    pr_graph *g = pr_graph_create();
    g->inputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    const int64_t xd[3] = {2, 4, 16}, cd[3] = {1, 4, 16};
    float cv[64];
    rng = 777;
    for (int i = 0; i < 64; i++) cv[i] = rnd(-2, 2) * 1.37f;
    int a = act(g, "a", dt, 3, xd), b = act(g, "b", dt, 3, xd), t = act(g, "t", dt, 3, xd);
    int y = act(g, "y", dt, 3, xd), c = init(g, "c", dt, 3, cd, cv);
    mark(g, a, true);
    mark(g, b, true);
    node(g, PR_OP_Add, 14, "add1", 2, (int[]){a, b}, t);
    node(g, PR_OP_Add, 14, "add2", 2, swap ? (int[]){c, t} : (int[]){t, c}, y);
    mark(g, y, false);
    if (mode == 1) mark(g, t, false);
    if (mode == 2) {
        int z = act(g, "z", dt, 3, xd);
        node(g, PR_OP_Add, 14, "add3", 2, (int[]){t, a}, z);
        mark(g, z, false);
    }
    CHECK(err.status == PRECIS_OK);
    return g;
}

static void test_sum3(void) {
    for (int k = 0; k < 4; k++) {
        pr_dtype dt = k & 1 ? PRECIS_FLOAT16 : PRECIS_FLOAT32;
        pr_graph *g0 = build_sum(dt, k & 2, 0), *g1 = build_sum(dt, k & 2, 0);
        CHECK(pr_graph_infer(g0, &err) == PRECIS_OK && pr_graph_infer(g1, &err) == PRECIS_OK);
        CHECK(pr_fold_attention_mask(g1, &err) == PRECIS_OK);
        CHECK(pr_graph_compact(g1, &err) == PRECIS_OK);
        CHECK(pr_graph_check(g1, &err) == PRECIS_OK);
        CHECK(pr_graph_infer(g1, &err) == PRECIS_OK);
        if (err.status) fprintf(stderr, "sum3 fold: %s\n", err.msg);
        CHECK(count(g1, PR_OP_Add) == 0 && count(g1, PR_OP_Sum) == 1 && count(g0, PR_OP_Add) == 2);
        void *o0[8] = {0}, *o1[8] = {0};
        size_t n0[8] = {0}, n1[8] = {0};
        CHECK(run(g0, o0, n0, NAN) && run(g1, o1, n1, NAN));
        CHECK(o0[0] && o1[0] && n0[0] == n1[0] && n0[0] == 128 * pr_dtype_size(dt));
        if (o0[0] && o1[0] && n0[0] == n1[0] && memcmp(o0[0], o1[0], n0[0]))
            fprintf(stderr, "sum3 %d: the output differs after the fold\n", k);
        CHECK(o0[0] && o1[0] && n0[0] == n1[0] && !memcmp(o0[0], o1[0], n0[0]));
        free(o0[0]);
        free(o1[0]);
        pr_graph_destroy(g0);
        pr_graph_destroy(g1);
    }
    for (int mode = 1; mode <= 3; mode++) { /* left alone */
        pr_graph *g = build_sum(PRECIS_FLOAT16, false, mode == 3 ? 0 : mode);
        if (mode == 3) setenv("PRECIS_CUDA_SUM3", "0", 1);
        CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_attention_mask(g, &err) == PRECIS_OK);
        unsetenv("PRECIS_CUDA_SUM3");
        CHECK(count(g, PR_OP_Sum) == 0 && count(g, PR_OP_Add) == (mode == 2 ? 3 : 2));
        pr_graph_destroy(g);
    }
}

/* am int64 [2,8] -> Cast(bool) -> Flatten(2) [16,1] -> Gather(idx [2,1,1,8])
 * -> [2,1,1,8,1] -> Reshape [2,1,1,8] -> Cast(bool) -> Where(., 0, -10000).
 * swap: idx has two entries exchanged (no identity). */
static pr_graph *build_ids(bool swap) {
    pr_graph *g = pr_graph_create();
    g->inputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 8 * sizeof(int));
    const pr_dtype B = PRECIS_BOOL, I = PRECIS_INT64, F = PRECIS_FLOAT32;
    const int64_t ad[2] = {2, 8}, fd[2] = {16, 1}, id[4] = {2, 1, 1, 8}, gd[5] = {2, 1, 1, 8, 1},
                  four = 4, one = 1;
    float iv[16], shape[4] = {2, 1, 1, 8}, zero = 0, big = -10000;
    for (int i = 0; i < 16; i++) iv[i] = (float)i;
    if (swap) iv[3] = 4, iv[4] = 3;
    int am = act(g, "am", I, 2, ad), c = act(g, "c", B, 2, ad), f = act(g, "f", B, 2, fd);
    int ga = act(g, "ga", B, 5, gd), r = act(g, "r", B, 4, id), c5 = act(g, "c5", B, 4, id);
    int w = act(g, "w", F, 4, id);
    int ix = init(g, "ix", I, 4, id, iv), sh = init(g, "sh", I, 1, &four, shape);
    int x0 = init(g, "x0", F, 0, &one, &zero), x1 = init(g, "x1", F, 0, &one, &big);
    mark(g, am, true);
    int n1 = node(g, PR_OP_Cast, 13, "cast", 1, (int[]){am}, c);
    pr_node_set_int(g, n1, "to", PRECIS_BOOL, &err);
    int n2 = node(g, PR_OP_Flatten, 13, "flatten", 1, (int[]){c}, f);
    pr_node_set_int(g, n2, "axis", 2, &err);
    int n3 = node(g, PR_OP_Gather, 13, "gather", 2, (int[]){f, ix}, ga);
    pr_node_set_int(g, n3, "axis", 0, &err);
    node(g, PR_OP_Reshape, 14, "reshape", 2, (int[]){ga, sh}, r);
    int n5 = node(g, PR_OP_Cast, 13, "cast5", 1, (int[]){r}, c5);
    pr_node_set_int(g, n5, "to", PRECIS_BOOL, &err);
    node(g, PR_OP_Where, 16, "where", 3, (int[]){c5, x0, x1}, w);
    mark(g, w, false);
    CHECK(err.status == PRECIS_OK);
    if (err.status) fprintf(stderr, "build_ids: %s\n", err.msg);
    return g;
}

static void test_ids(void) {
    pr_graph *g0 = build_ids(false), *g1 = build_ids(false);
    CHECK(pr_graph_infer(g0, &err) == PRECIS_OK && pr_graph_infer(g1, &err) == PRECIS_OK);
    CHECK(pr_fold_attention_mask(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_compact(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_check(g1, &err) == PRECIS_OK);
    CHECK(pr_graph_infer(g1, &err) == PRECIS_OK);
    if (err.status) fprintf(stderr, "ids fold: %s\n", err.msg);
    CHECK(count(g1, PR_OP_Gather) == 0 && count(g1, PR_OP_Cast) == 1 &&
          count(g1, PR_OP_Identity) == 1 && count(g1, PR_OP_Reshape) == 2 &&
          count(g0, PR_OP_Gather) == 1 && count(g0, PR_OP_Cast) == 2);
    const pr_tensor *ga = &g1->tensors[pr_graph_get_tensor(g1, "ga", &err)];
    CHECK(ga->rank == 5 && ga->dims[0] == 2 && ga->dims[3] == 8 && ga->dims[4] == 1);
    void *o0[8] = {0}, *o1[8] = {0};
    size_t n0[8] = {0}, n1[8] = {0};
    CHECK(run(g0, o0, n0, NAN) && run(g1, o1, n1, NAN));
    CHECK(o0[0] && o1[0] && n0[0] == n1[0] && n0[0] == 16 * sizeof(float));
    if (o0[0] && o1[0] && n0[0] == n1[0] && memcmp(o0[0], o1[0], n0[0]))
        fprintf(stderr, "ids: the output differs after the fold\n");
    CHECK(o0[0] && o1[0] && n0[0] == n1[0] && !memcmp(o0[0], o1[0], n0[0]));
    int nz = 0; /* the inputs reach both Where branches */
    for (int i = 0; o0[0] && i < 16; i++) nz += ((const float *)o0[0])[i] != 0.0f;
    CHECK(nz > 0 && nz < 16);
    free(o0[0]);
    free(o1[0]);
    pr_graph_destroy(g0);
    pr_graph_destroy(g1);
    pr_graph *g = build_ids(true); /* not an identity index: the Gather stays */
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_attention_mask(g, &err) == PRECIS_OK);
    CHECK(count(g, PR_OP_Gather) == 1 && count(g, PR_OP_Identity) == 1);
    pr_graph_destroy(g);
    g = build_ids(false); /* the A/B switch */
    setenv("PRECIS_CUDA_MASK_IDS", "0", 1);
    CHECK(pr_graph_infer(g, &err) == PRECIS_OK && pr_fold_attention_mask(g, &err) == PRECIS_OK);
    unsetenv("PRECIS_CUDA_MASK_IDS");
    CHECK(count(g, PR_OP_Gather) == 1 && count(g, PR_OP_Cast) == 2);
    pr_graph_destroy(g);
}

int main(void) {
    test_fold();
    test_leave();
    test_sum3();
    test_ids();
    return check_report("test_attn_mask");
}
