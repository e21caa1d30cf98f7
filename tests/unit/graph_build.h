/* Graph-building helpers shared by the pass unit tests that build a small
 * graph by hand, run it on ref before and after a pass, and compare the
 * outputs byte for byte (test_attn_mask.c, test_fp8_quant.c). Header-only:
 * every function static inline, one copy per test. */
#ifndef PRECIS_TESTS_UNIT_GRAPH_BUILD_H
#define PRECIS_TESTS_UNIT_GRAPH_BUILD_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "ir/infer.h"
#include "passes/graph_edit.h"
#include "runtime/api.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static inline float rnd(float lo, float hi) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((double)(rng >> 11) / 9007199254740992.0);
}

static pr_err err;

static inline int act(pr_graph *g, const char *name, pr_dtype dt, int rank, const int64_t *dims) {
    int t = pr_graph_get_tensor(g, name, &err);
    g->tensors[t].dtype = dt;
    g->tensors[t].rank = rank;
    memcpy(g->tensors[t].dims, dims, (size_t)rank * sizeof *dims);
    return t;
}

static inline int init(pr_graph *g, const char *name, pr_dtype dt, int rank, const int64_t *dims,
                const float *v) {
    int64_t n = pr_numel(rank, dims);
    void *d = pr_edit_alloc((size_t)(n ? n : 1) * pr_dtype_size(dt));
    pr_ref_from_f32(v, n, dt, d);
    return pr_graph_add_init(g, name, dt, rank, dims, d, &err);
}

static inline int node(pr_graph *g, pr_op op, int opset, const char *name, int n_in, const int *ins,
                int out) {
    int ni = pr_node_new(g, op, opset, name, n_in, 1, &err);
    for (int i = 0; i < n_in; i++) pr_node_set_input(g, NULL, ni, i, ins[i], &err);
    pr_node_set_output(g, ni, 0, out, &err);
    return ni;
}

static inline void mark(pr_graph *g, int t, bool input) {
    g->tensors[t].flags |= input ? PR_T_INPUT : PR_T_OUTPUT;
    if (input) g->inputs[g->n_inputs++] = t;
    else g->outputs[g->n_outputs++] = t;
}

static inline int count(const pr_graph *g, pr_op op) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += g->nodes[i].op == op;
    return c;
}

static inline const pr_node *find(const pr_graph *g, pr_op op) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op) return &g->nodes[i];
    return NULL;
}

/* Run g on ref (the inputs from one seed; a one-element float32 input gets
 * `scalar` unless it is NaN): the outputs, malloc'd bytes. */
static inline bool run(pr_graph *g, void **outs, size_t *nb, float scalar) {
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
        for (int64_t j = 0; j < n; j++)
            f[j] = x->dtype == PRECIS_FLOAT32 && n == 1 && !isnan(scalar) ? scalar : rnd(-3, 3);
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

#endif
