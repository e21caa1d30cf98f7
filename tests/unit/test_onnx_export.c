/* ONNX export (src/onnx/onnx_export.c): round trips. Small IR graphs built
 * here (fused ops with every activation, residuals and trans flags, nodes at
 * old opsets, ops newer than the graph's opset, Q/DQ with per-axis scales)
 * and the zoo models (from $PRECIS_CACHE, skipped when missing, optimized by
 * pr_optimize) are run on the ref backend, exported, re-imported and run
 * again: outputs must agree. The file must never carry the ai.precis domain.
 * Also: attributes of every kind and model metadata survive; subgraphs,
 * precis-only ops and unwritable paths fail with a one-line message. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/act.h"
#include "ir/infer.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/pass_plan.h"
#include "runtime/api.h"

#include "check.h"

/* ---------------------------------------------------------------- builder */

typedef struct tb {
    pr_graph *g;
    pr_err e;
    int64_t opset;
    uint64_t rng;
} tb;

static float frand(tb *b) {
    b->rng ^= b->rng << 13;
    b->rng ^= b->rng >> 7;
    b->rng ^= b->rng << 17;
    return (float)((double)(b->rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void tb_begin(tb *b, int64_t opset) {
    memset(b, 0, sizeof *b);
    b->g = pr_graph_create();
    b->opset = opset;
    b->rng = 0x2545F4914F6CDD1Dull;
    pr_graph *g = b->g;
    g->name = "test_graph";
    g->opsets = pr_arena_alloc(g->arena, 4 * sizeof(pr_opset));
    g->opsets[0].domain = "";
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    g->inputs = pr_arena_alloc(g->arena, 16 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 16 * sizeof(int));
}

static int tb_t(tb *b, const char *name) { return pr_graph_get_tensor(b->g, name, &b->e); }

/* A float32 graph input; dims < -1 index symbolic names "S0", "S1" ... */
static void tb_in(tb *b, const char *name, int rank, const int64_t *dims) {
    int t = tb_t(b, name);
    pr_tensor *x = &b->g->tensors[t];
    x->dtype = PRECIS_FLOAT32;
    x->rank = rank;
    for (int d = 0; d < rank; d++) {
        x->dims[d] = dims[d];
        if (dims[d] < -1) {
            char s[8];
            snprintf(s, sizeof s, "S%d", (int)(-2 - dims[d]));
            x = &b->g->tensors[t];
            b->g->tensors[t].dims[d] = pr_graph_sym(b->g, s);
        }
    }
    x->flags |= PR_T_INPUT;
    b->g->inputs[b->g->n_inputs++] = t;
}

static void tb_data(tb *b, const char *name, pr_dtype dt, int rank, const int64_t *dims, void *d) {
    pr_graph_own(b->g, d);
    int t = tb_t(b, name);
    pr_tensor *x = &b->g->tensors[t];
    x->dtype = dt;
    x->rank = rank;
    if (rank > 0) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    x->data = d;
    x->nbytes = (size_t)pr_numel(rank, dims) * pr_dtype_size(dt);
    x->flags |= PR_T_INIT;
}

/* A float32 initializer: vals, or random in [-1, 1) when NULL. */
static void tb_const(tb *b, const char *name, int rank, const int64_t *dims, const float *vals) {
    int64_t n = pr_numel(rank, dims);
    float *d = pr_edit_alloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) d[i] = vals ? vals[i] : frand(b);
    tb_data(b, name, PRECIS_FLOAT32, rank, dims, d);
}

static void tb_scalar(tb *b, const char *name, float v) { tb_const(b, name, 0, NULL, &v); }

static void tb_consti(tb *b, const char *name, int n, const int64_t *vals) {
    int64_t *d = pr_edit_alloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (n) memcpy(d, vals, (size_t)n * sizeof *d);
    int64_t dim = n;
    tb_data(b, name, PRECIS_INT64, 1, &dim, d);
}

/* An int8 / uint8 initializer: random (-127..127 / 0..255) or all `fill`. */
static void tb_const8(tb *b, const char *name, pr_dtype dt, int rank, const int64_t *dims,
                      bool random, int fill) {
    int64_t n = pr_numel(rank, dims);
    uint8_t *d = pr_edit_alloc((size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        d[i] =
            random ? (uint8_t)(int8_t)(frand(b) * (dt == PRECIS_INT8 ? 127 : 255)) : (uint8_t)fill;
    tb_data(b, name, dt, rank, dims, d);
}

/* A node; ins/outs are space-separated tensor names ("-": omitted input).
 * op may be "ai.precis:FusedConv" or "com.example:Op". */
static int tb_node(tb *b, const char *op, const char *name, const char *ins, const char *outs) {
    char buf[512];
    int ti[16], to[16], ni = 0, no = 0;
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " "))
        ti[ni++] = strcmp(s, "-") ? tb_t(b, s) : -1;
    snprintf(buf, sizeof buf, "%s", outs);
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " ")) to[no++] = tb_t(b, s);
    int k = pr_graph_add_node(b->g, ni, no, 0, &b->e);
    pr_node *n = &b->g->nodes[k];
    const char *colon = strchr(op, ':');
    n->name = pr_arena_strdup(b->g->arena, name);
    if (colon) {
        n->domain = pr_arena_strndup(b->g->arena, op, (size_t)(colon - op));
        op = colon + 1;
    } else {
        n->domain = "";
    }
    n->op_type = pr_arena_strdup(b->g->arena, op);
    n->op = pr_op_lookup_domain(n->domain, op);
    n->opset = !strcmp(n->domain, PR_FUSED_DOMAIN) ? 1 : b->opset;
    for (int i = 0; i < ni; i++) n->inputs[i] = ti[i];
    for (int i = 0; i < no; i++) {
        n->outputs[i] = to[i];
        b->g->tensors[to[i]].producer = k;
    }
    return k;
}

static void tb_out(tb *b, const char *name) {
    int t = tb_t(b, name);
    b->g->tensors[t].flags |= PR_T_OUTPUT;
    b->g->outputs[b->g->n_outputs++] = t;
}

static void tb_i(tb *b, int ni, const char *name, int64_t v) {
    pr_node_set_int(b->g, ni, name, v, &b->e);
}
static void tb_f(tb *b, int ni, const char *name, float v) {
    pr_node_set_float(b->g, ni, name, v, &b->e);
}
static void tb_s(tb *b, int ni, const char *name, const char *s) {
    pr_node_set_string(b->g, ni, name, s, &b->e);
}
static void tb_is(tb *b, int ni, const char *name, const int64_t *v, int n) {
    pr_node_set_ints(b->g, ni, name, v, n, &b->e);
}

/* act attributes (prefix "act" / "act2") with parameters that exercise them. */
static void tb_act(tb *b, int ni, const char *prefix, int kind) {
    if (kind == PR_ACT_NONE) return;
    pr_act a = {(pr_act_kind)kind, 0, 0};
    if (kind == PR_ACT_LEAKY_RELU) a.alpha = 0.1f;
    if (kind == PR_ACT_CLIP) a.alpha = -0.5f, a.beta = 0.7f;
    if (kind == PR_ACT_HARD_SIGMOID) a.alpha = 0.2f, a.beta = 0.5f;
    pr_node_set_act(b->g, ni, prefix, &a, &b->e);
}

/* ---------------------------------------------------------------- running */

static uint64_t in_rng = 42;

static precis_tensor *rand_input(precis_ctx *ctx, const pr_tensor *x) {
    int64_t d[PR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) d[i] = pr_dim_known(x->dims[i]) ? x->dims[i] : 2;
    precis_tensor *t = NULL;
    if (precis_tensor_create(ctx, x->dtype, x->rank, d, &t)) return NULL;
    void *p = precis_tensor_data(t);
    for (int64_t i = 0; i < precis_tensor_numel(t); i++) {
        in_rng ^= in_rng << 13;
        in_rng ^= in_rng >> 7;
        in_rng ^= in_rng << 17;
        double u = (double)(in_rng >> 11) / 9007199254740992.0;
        pr_store_f64(p, x->dtype, i, pr_dtype_info(x->dtype)->is_float ? u * 6.0 - 3.0 : u < 0.5);
    }
    return t;
}

#define MAXIO 16

static bool run(precis_ctx *ctx, precis_model *m, precis_tensor **ins, precis_tensor **outs) {
    const char *names[MAXIO];
    for (int i = 0; i < m->g->n_inputs; i++) names[i] = m->g->tensors[m->g->inputs[i]].name;
    precis_session *s = NULL;
    precis_status st = precis_session_create(ctx, m, NULL, &s);
    if (!st)
        st = precis_session_run(ctx, s, m->g->n_inputs, names, (const precis_tensor *const *)ins,
                                outs);
    precis_session_destroy(s);
    if (st) fprintf(stderr, "run: %s\n", precis_last_error(ctx));
    return st == PRECIS_OK;
}

/* Max over outputs of max|a-b| / max|a| and of 1 - cosine; false when a
 * shape, dtype or NaN position differs. */
static bool compare(precis_tensor **a, precis_tensor **b, int n, double *rel, double *cosd) {
    *rel = *cosd = 0;
    for (int k = 0; k < n; k++) {
        const precis_tensor *x = a[k], *y = b[k];
        if (!x || !y || precis_tensor_dtype(x) != precis_tensor_dtype(y) ||
            precis_tensor_rank(x) != precis_tensor_rank(y) ||
            memcmp(precis_tensor_dims(x), precis_tensor_dims(y),
                   (size_t)precis_tensor_rank(x) * sizeof(int64_t)))
            return false;
        pr_dtype dt = precis_tensor_dtype(x);
        const void *p = precis_tensor_data_const(x), *q = precis_tensor_data_const(y);
        double md = 0, ma = 0, dot = 0, na = 0, nb = 0;
        for (int64_t i = 0; i < precis_tensor_numel(x); i++) {
            double u = pr_load_f64(p, dt, i), v = pr_load_f64(q, dt, i);
            if (isnan(u) || isnan(v)) {
                if (isnan(u) != isnan(v)) return false;
                continue;
            }
            md = fmax(md, fabs(u - v));
            ma = fmax(ma, fabs(u));
            dot += u * v, na += u * u, nb += v * v;
        }
        double r = ma > 0 ? md / ma : md;
        double c = na > 0 && nb > 0 ? 1 - dot / sqrt(na * nb) : (na == nb ? 0 : 1);
        *rel = fmax(*rel, r);
        *cosd = fmax(*cosd, c);
    }
    return true;
}

/* No node or opset of g is in the precis domain. */
static bool no_precis_domain(const pr_graph *g) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].domain, PR_FUSED_DOMAIN)) return false;
    for (int i = 0; i < g->n_opsets; i++)
        if (!strcmp(g->opsets[i].domain, PR_FUSED_DOMAIN)) return false;
    return true;
}

static int count_op(const pr_graph *g, const char *op) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += !strcmp(g->nodes[i].op_type, op);
    return c;
}

static const pr_node *find_op(const pr_graph *g, const char *op) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].op_type, op)) return &g->nodes[i];
    return NULL;
}

/* With $PRECIS_EXPORT_DUMP set to a directory, each exported hand-built
 * model is also written there as NNN_<what>.onnx with its inputs and ref
 * outputs as NNN_<what>.in<i>.npy / .out<i>.npy, for
 * tests/onnx/check_export_ort.py --unit-dump to run in ONNX Runtime. */
static void dump(precis_ctx *ctx, const char *what, const void *buf, size_t len,
                 precis_tensor **ins, int n_in, precis_tensor **outs, int n_out) {
    static int seq;
    const char *dir = getenv("PRECIS_EXPORT_DUMP");
    if (!dir || !dir[0]) return;
    char base[512], path[1024];
    snprintf(base, sizeof base, "%03d_%s", seq++, what);
    for (char *c = base; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            *c = '_';
    snprintf(path, sizeof path, "%s/%s.onnx", dir, base);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(buf, 1, len, f);
        fclose(f);
    }
    for (int i = 0; i < n_in; i++) {
        snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, base, i);
        precis_tensor_save_npy(ctx, ins[i], path);
    }
    for (int i = 0; i < n_out; i++) {
        snprintf(path, sizeof path, "%s/%s.out%d.npy", dir, base, i);
        precis_tensor_save_npy(ctx, outs[i], path);
    }
}

/* Run m0 on ref (inputs given, or random), export it, re-import, run again,
 * compare. Returns the re-imported model (caller destroys) or NULL on a
 * failure (reported as a failed CHECK naming `what`). */
static precis_model *round_trip_model(precis_ctx *ctx, precis_model *m0, precis_tensor **given,
                                      double rel_tol, double cos_tol, const char *what,
                                      bool dumpable) {
    precis_tensor *ins[MAXIO] = {0}, *o0[MAXIO] = {0}, *o1[MAXIO] = {0};
    precis_model *m1 = NULL;
    void *buf = NULL;
    size_t len = 0;
    bool ok = false;
    pr_graph *g = m0->g;
    for (int i = 0; i < g->n_inputs; i++)
        ins[i] = given ? given[i] : rand_input(ctx, &g->tensors[g->inputs[i]]);
    if (!run(ctx, m0, ins, o0)) goto done;
    pr_err e = {0};
    if (pr_onnx_save_memory(g, &buf, &len, &e)) {
        fprintf(stderr, "%s: export: %s\n", what, e.msg);
        goto done;
    }
    if (dumpable) dump(ctx, what, buf, len, ins, g->n_inputs, o0, g->n_outputs);
    if (precis_model_load_memory(ctx, buf, len, NULL, &m1)) {
        fprintf(stderr, "%s: re-import: %s\n", what, precis_last_error(ctx));
        goto done;
    }
    if (m1->g->n_inputs != g->n_inputs || m1->g->n_outputs != g->n_outputs) {
        fprintf(stderr, "%s: inputs/outputs differ\n", what);
        goto done;
    }
    if (!run(ctx, m1, ins, o1)) goto done;
    double rel, cosd;
    if (!compare(o0, o1, g->n_outputs, &rel, &cosd)) {
        fprintf(stderr, "%s: outputs differ in shape, dtype or NaNs\n", what);
        goto done;
    }
    ok = rel <= rel_tol && cosd <= cos_tol && no_precis_domain(m1->g);
    if (!ok)
        fprintf(stderr, "%s: rel %.3g (tol %.3g), 1-cos %.3g (tol %.3g), precis domain %s\n", what,
                rel, rel_tol, cosd, cos_tol, no_precis_domain(m1->g) ? "absent" : "PRESENT");
done:
    CHECK(ok);
    if (!ok) fprintf(stderr, "  round trip failed: %s\n", what);
    for (int i = 0; i < MAXIO; i++) {
        if (!given) precis_tensor_destroy(ins[i]);
        precis_tensor_destroy(o0[i]);
        precis_tensor_destroy(o1[i]);
    }
    free(buf);
    if (!ok) {
        precis_model_destroy(m1);
        m1 = NULL;
    }
    return m1;
}

/* Infer b's graph, round-trip it (tolerance rel_tol); returns the
 * re-imported model or NULL. b's graph is destroyed. */
static precis_model *round_trip(tb *b, double rel_tol, const char *what) {
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m0 = calloc(1, sizeof *m0), *m1 = NULL;
    m0->g = b->g;
    if (b->e.status) {
        fprintf(stderr, "%s: build: %s\n", what, b->e.msg);
        CHECK(!"graph built");
    } else if (pr_graph_infer(b->g, &b->e)) {
        fprintf(stderr, "%s: infer: %s\n", what, b->e.msg);
        CHECK(!"graph inferred");
    } else {
        m1 = round_trip_model(ctx, m0, NULL, rel_tol, 1.0, what, true);
    }
    precis_model_destroy(m0);
    precis_ctx_destroy(ctx);
    return m1;
}

/* ------------------------------------------------------------- fused ops */

static void test_fused_conv(void) {
    static const int64_t opsets[] = {13, 14, 17, 20};
    for (size_t oi = 0; oi < sizeof opsets / sizeof *opsets; oi++) {
        for (int k = 0; k < PR_ACT_COUNT; k++) {
            for (int v = 0; v < 2; v++) {
                tb b;
                tb_begin(&b, opsets[oi]);
                tb_in(&b, "X", 4, (int64_t[]){1, 4, 6, 6});
                int ni;
                if (v == 0) { /* bias, act, residual, act2 */
                    tb_in(&b, "Z", 4, (int64_t[]){1, 6, 6, 6});
                    tb_const(&b, "W", 4, (int64_t[]){6, 4, 3, 3}, NULL);
                    tb_const(&b, "B", 1, (int64_t[]){6}, NULL);
                    ni = tb_node(&b, "ai.precis:FusedConv", "conv", "X W B Z", "Y");
                    tb_is(&b, ni, "pads", (int64_t[]){1, 1, 1, 1}, 4);
                    tb_act(&b, ni, "act", k);
                    tb_act(&b, ni, "act2", (k + 5) % PR_ACT_COUNT);
                } else { /* grouped, strided, no bias, act only */
                    tb_const(&b, "W", 4, (int64_t[]){6, 2, 3, 3}, NULL);
                    ni = tb_node(&b, "ai.precis:FusedConv", "conv", "X W", "Y");
                    tb_i(&b, ni, "group", 2);
                    tb_is(&b, ni, "strides", (int64_t[]){2, 2}, 2);
                    tb_is(&b, ni, "kernel_shape", (int64_t[]){3, 3}, 2);
                    tb_act(&b, ni, "act", k);
                }
                tb_out(&b, "Y");
                char what[128];
                snprintf(what, sizeof what, "FusedConv opset %lld act %s variant %d",
                         (long long)opsets[oi], pr_act_names[k], v);
                precis_model *m = round_trip(&b, 1e-5, what);
                if (!m) continue;
                const pr_graph *g = m->g;
                CHECK(count_op(g, "Conv") == 1);
                CHECK(pr_graph_opset(g, "") == opsets[oi]);
                const pr_node *c = find_op(g, "Conv");
                CHECK(c && !strcmp(c->name, "conv")); /* the main node keeps the name */
                if (v == 1) CHECK(c && pr_attr_int(c, "group", 1) == 2);
                if (k == PR_ACT_GELU) CHECK(count_op(g, "Gelu") == (opsets[oi] >= 20));
                if (k == PR_ACT_HARD_SWISH) CHECK(count_op(g, "HardSwish") == (opsets[oi] >= 14));
                /* node names are unique */
                for (int i = 0; i < g->n_nodes; i++)
                    for (int j = 0; j < i; j++) CHECK(strcmp(g->nodes[i].name, g->nodes[j].name));
                precis_model_destroy(m);
            }
        }
    }
}

static void test_fused_matmul(void) {
    /* 2-D: Gemm with every trans flag combination */
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb_ = t >> 1;
        tb b;
        tb_begin(&b, 13);
        tb_in(&b, "A", 2, ta ? (int64_t[]){5, 3} : (int64_t[]){3, 5});
        tb_in(&b, "Z", 2, (int64_t[]){3, 4});
        tb_const(&b, "Bw", 2, tb_ ? (int64_t[]){4, 5} : (int64_t[]){5, 4}, NULL);
        tb_const(&b, "bias", 1, (int64_t[]){4}, NULL);
        int ni = tb_node(&b, "ai.precis:FusedMatMul", "mm", "A Bw bias Z", "Y");
        if (ta) tb_i(&b, ni, "transA", 1);
        if (tb_) tb_i(&b, ni, "transB", 1);
        tb_f(&b, ni, "alpha", 0.5f);
        tb_act(&b, ni, "act", 1 + t);
        tb_act(&b, ni, "act2", 5 + t);
        tb_out(&b, "Y");
        char what[64];
        snprintf(what, sizeof what, "FusedMatMul 2-D transA %d transB %d", ta, tb_);
        precis_model *m = round_trip(&b, 1e-5, what);
        if (m) {
            const pr_node *gm = find_op(m->g, "Gemm");
            CHECK(gm && count_op(m->g, "MatMul") == 0);
            CHECK(gm && pr_attr_int(gm, "transA", 0) == ta && pr_attr_int(gm, "transB", 0) == tb_);
            CHECK(gm && pr_attr_float(gm, "alpha", 1) == 0.5f && !strcmp(gm->name, "mm"));
        }
        precis_model_destroy(m);
    }
    /* 2-D with a [M, N] bias and a [M, 1] bias: still Gemm */
    for (int v = 0; v < 2; v++) {
        tb b;
        tb_begin(&b, 13);
        tb_in(&b, "A", 2, (int64_t[]){3, 5});
        tb_const(&b, "Bw", 2, (int64_t[]){5, 4}, NULL);
        tb_const(&b, "bias", 2, v ? (int64_t[]){3, 1} : (int64_t[]){3, 4}, NULL);
        tb_node(&b, "ai.precis:FusedMatMul", "mm", "A Bw bias", "Y");
        tb_out(&b, "Y");
        precis_model *m = round_trip(&b, 1e-5, "FusedMatMul 2-D, 2-D bias");
        if (m) CHECK(count_op(m->g, "Gemm") == 1);
        precis_model_destroy(m);
    }
    /* 3-D: MatMul (+ Transpose for transB), every activation */
    for (int k = 0; k < PR_ACT_COUNT; k++) {
        int tb_ = k & 1;
        tb b;
        tb_begin(&b, 17);
        tb_in(&b, "A", 3, (int64_t[]){2, 3, 5});
        tb_in(&b, "Z", 3, (int64_t[]){2, 3, 4});
        tb_const(&b, "Bw", 2, tb_ ? (int64_t[]){4, 5} : (int64_t[]){5, 4}, NULL);
        tb_const(&b, "bias", 1, (int64_t[]){4}, NULL);
        int ni =
            tb_node(&b, "ai.precis:FusedMatMul", "mm", k % 3 ? "A Bw bias Z" : "A Bw bias", "Y");
        if (tb_) tb_i(&b, ni, "transB", 1);
        if (k % 2) tb_f(&b, ni, "alpha", 1.5f);
        tb_act(&b, ni, "act", k);
        if (k % 3) tb_act(&b, ni, "act2", (k + 3) % PR_ACT_COUNT);
        tb_out(&b, "Y");
        char what[64];
        snprintf(what, sizeof what, "FusedMatMul 3-D act %s", pr_act_names[k]);
        precis_model *m = round_trip(&b, 1e-5, what);
        if (m) {
            CHECK(count_op(m->g, "MatMul") == 1 && count_op(m->g, "Gemm") == 0);
            CHECK(count_op(m->g, "Transpose") == tb_);
        }
        precis_model_destroy(m);
    }
    /* batched activations on both sides (attention scores), scaled */
    tb b;
    tb_begin(&b, 13);
    tb_in(&b, "Q", 4, (int64_t[]){1, 2, 3, 8});
    tb_in(&b, "K", 4, (int64_t[]){1, 2, 8, 3});
    int ni = tb_node(&b, "ai.precis:FusedMatMul", "scores", "Q K", "S");
    tb_f(&b, ni, "alpha", 0.125f);
    tb_out(&b, "S");
    precis_model_destroy(round_trip(&b, 1e-5, "FusedMatMul batched, alpha"));
}

/* Attention -> [Transpose] MatMul [Mul] [Add] Softmax MatMul */
static void test_attention(void) {
    for (int kt = 0; kt < 2; kt++) {
        tb b;
        tb_begin(&b, 17);
        tb_in(&b, "Q", 4, (int64_t[]){2, 3, 5, 8});
        tb_in(&b, "K", 4, kt ? (int64_t[]){2, 3, 8, 7} : (int64_t[]){2, 3, 7, 8});
        tb_in(&b, "V", 4, (int64_t[]){2, 3, 7, 4});
        if (!kt) tb_in(&b, "M", 4, (int64_t[]){2, 1, 1, 7});
        int ni = tb_node(&b, "ai.precis:Attention", "attn", kt ? "Q K V" : "Q K V M", "Y");
        tb_i(&b, ni, "k_transposed", kt);
        if (!kt) tb_f(&b, ni, "scale", 0.35f);
        tb_out(&b, "Y");
        precis_model *m = round_trip(&b, 1e-5, kt ? "Attention k_transposed" : "Attention mask");
        if (m) {
            CHECK(count_op(m->g, "MatMul") == 2 && count_op(m->g, "Softmax") == 1);
            CHECK(count_op(m->g, "Transpose") == !kt && count_op(m->g, "Mul") == !kt &&
                  count_op(m->g, "Add") == !kt);
        }
        precis_model_destroy(m);
    }
}

static void test_reorder(void) {
    tb b;
    tb_begin(&b, 13);
    tb_in(&b, "X", 4, (int64_t[]){1, 3, 5, 5});
    tb_const(&b, "W", 4, (int64_t[]){4, 3, 1, 1}, NULL);
    int r = tb_node(&b, "ai.precis:Reorder", "X/to_nhwc", "X", "Xn");
    tb_s(&b, r, "to", "nhwc");
    int c = tb_node(&b, "ai.precis:FusedConv", "conv", "Xn W", "Yn");
    tb_act(&b, c, "act", PR_ACT_RELU);
    r = tb_node(&b, "ai.precis:Reorder", "Yn/to_plain", "Yn", "Yp");
    tb_s(&b, r, "to", "plain");
    tb_node(&b, "Sigmoid", "sig", "Yp", "S");
    r = tb_node(&b, "ai.precis:Reorder", "S/to_plain", "S", "Y"); /* a graph output */
    tb_s(&b, r, "to", "plain");
    tb_out(&b, "Y");
    precis_model *m = round_trip(&b, 0, "Reorder");
    if (m) {
        CHECK(count_op(m->g, "Reorder") == 0);
        CHECK(count_op(m->g, "Identity") == 1); /* the one writing graph output Y */
        const pr_node *cv = find_op(m->g, "Conv");
        CHECK(cv && !strcmp(m->g->tensors[cv->inputs[0]].name, "X"));
        CHECK(pr_graph_find_tensor(m->g, "Yp") < 0 && pr_graph_find_tensor(m->g, "Y") >= 0);
    }
    precis_model_destroy(m);
}

/* ------------------------------------------------------- opset rewrites */

static void test_axes_inputs(void) {
    /* opset 11: attributes that became inputs in 13 */
    tb b;
    tb_begin(&b, 11);
    tb_in(&b, "X", 2, (int64_t[]){3, 4});
    int n = tb_node(&b, "Unsqueeze", "unsq", "X", "U");
    tb_is(&b, n, "axes", (int64_t[]){0, 3}, 2);
    n = tb_node(&b, "Squeeze", "sq", "U", "S");
    tb_is(&b, n, "axes", (int64_t[]){-1}, 1);
    n = tb_node(&b, "Split", "split", "S", "P1 P2");
    tb_i(&b, n, "axis", 2);
    tb_is(&b, n, "split", (int64_t[]){1, 3}, 2);
    n = tb_node(&b, "ReduceSum", "rsum", "P2", "R");
    tb_is(&b, n, "axes", (int64_t[]){2}, 1);
    tb_i(&b, n, "keepdims", 0);
    n = tb_node(&b, "ReduceMean", "rmean", "P1", "M");
    tb_is(&b, n, "axes", (int64_t[]){1}, 1);
    tb_out(&b, "R");
    tb_out(&b, "M");
    precis_model *m = round_trip(&b, 0, "Squeeze/Unsqueeze/Split/ReduceSum at opset 11");
    if (m) {
        CHECK(pr_graph_opset(m->g, "") == 13);
        const pr_node *s = find_op(m->g, "Split");
        CHECK(s && s->n_inputs == 2 && !pr_attr_find(s, "split"));
        const pr_node *r = find_op(m->g, "ReduceSum");
        CHECK(r && r->n_inputs == 2 && !pr_attr_find(r, "axes"));
        r = find_op(m->g, "ReduceMean"); /* axes stay an attribute until 18 */
        CHECK(r && r->n_inputs == 1 && pr_attr_find(r, "axes"));
    }
    precis_model_destroy(m);

    /* opset 18 graph with nodes imported at 13: Reduce axes and Split's count */
    tb_begin(&b, 18);
    tb_in(&b, "X", 2, (int64_t[]){3, 4});
    n = tb_node(&b, "ReduceMax", "rmax", "X", "R");
    b.g->nodes[n].opset = 13;
    tb_is(&b, n, "axes", (int64_t[]){1}, 1);
    n = tb_node(&b, "Split", "split", "X", "P1 P2");
    b.g->nodes[n].opset = 13;
    tb_i(&b, n, "axis", 1);
    tb_out(&b, "R");
    tb_out(&b, "P1");
    tb_out(&b, "P2");
    m = round_trip(&b, 0, "ReduceMax / Split at opset 13 in an opset 18 graph");
    if (m) {
        const pr_node *r = find_op(m->g, "ReduceMax");
        CHECK(r && r->n_inputs == 2 && !pr_attr_find(r, "axes"));
        const pr_node *s = find_op(m->g, "Split");
        CHECK(s && pr_attr_int(s, "num_outputs", 0) == 2);
    }
    precis_model_destroy(m);
}

static void test_softmax_old(void) {
    static const char *const ops[] = {"Softmax", "LogSoftmax", "Hardmax"};
    for (int sym = 0; sym < 2; sym++)
        for (int o = 0; o < 3; o++)
            for (int64_t axis = -1; axis <= 2; axis++) {
                tb b;
                tb_begin(&b, 12);
                tb_in(&b, "X", 3, (int64_t[]){sym ? -2 : 2, 3, 4});
                int n = tb_node(&b, ops[o], "sm", "X", "Y");
                if (axis != 1) tb_i(&b, n, "axis", axis);
                tb_out(&b, "Y");
                char what[64];
                snprintf(what, sizeof what, "%s opset 12 axis %lld%s", ops[o], (long long)axis,
                         sym ? " symbolic batch" : "");
                precis_model *m = round_trip(&b, 1e-6, what);
                if (m) {
                    bool last = axis == -1 || axis == 2;
                    CHECK(count_op(m->g, "Flatten") == !last);
                    CHECK(count_op(m->g, "Shape") == (!last && sym));
                }
                precis_model_destroy(m);
            }
}

static void test_resize_old(void) {
    /* Resize-10, Upsample-9 (scales input), Upsample-7 (attribute), nearest
     * and linear, up and down */
    for (int v = 0; v < 6; v++) {
        tb b;
        int64_t opset = v < 2 ? 10 : v < 4 ? 9 : 7;
        const char *op = v < 2 ? "Resize" : "Upsample";
        bool linear = v & 1;
        tb_begin(&b, opset);
        tb_in(&b, "X", 4, (int64_t[]){1, 2, 4, 5});
        float sc[4] = {1, 1, v == 0 ? 0.6f : 2.0f, v == 0 ? 0.7f : 3.0f};
        int n;
        if (opset >= 9) {
            tb_const(&b, "scales", 1, (int64_t[]){4}, sc);
            n = tb_node(&b, op, "rs", "X scales", "Y");
        } else {
            n = tb_node(&b, op, "rs", "X", "Y");
            b.g->nodes[n].attrs = NULL;
            float *f = pr_arena_alloc(b.g->arena, sizeof sc);
            memcpy(f, sc, sizeof sc);
            pr_node_set_int(b.g, n, "scales", 0, &b.e);
            pr_attr *a = &b.g->nodes[n].attrs[0];
            a->type = PR_ATTR_FLOATS;
            a->floats = f;
            a->n = 4;
        }
        tb_s(&b, n, "mode", linear ? "linear" : "nearest");
        tb_out(&b, "Y");
        char what[64];
        snprintf(what, sizeof what, "%s-%lld %s", op, (long long)opset,
                 linear ? "linear" : "nearest");
        precis_model *m = round_trip(&b, 1e-6, what);
        if (m) {
            const pr_node *r = find_op(m->g, "Resize");
            CHECK(r && count_op(m->g, "Upsample") == 0);
            CHECK(r && !strcmp(pr_attr_str(r, "coordinate_transformation_mode", ""), "asymmetric"));
            if (!linear)
                CHECK(r && !strcmp(pr_attr_str(r, "nearest_mode", ""), v == 0 ? "ceil" : "floor"));
        }
        precis_model_destroy(m);
    }
    /* Resize-11 tf_half_pixel_for_nn (removed in 13) */
    for (int v = 0; v < 4; v++) {
        tb b;
        tb_begin(&b, 11);
        tb_in(&b, "X", 4, (int64_t[]){1, 2, 5, 7});
        float sc[4] = {1, 1, v & 1 ? 0.6f : 1.7f, v & 1 ? 0.45f : 2.5f};
        tb_const(&b, "scales", 1, (int64_t[]){4}, sc);
        tb_const(&b, "roi", 1, (int64_t[]){0}, NULL);
        int n = tb_node(&b, "Resize", "rs", "X roi scales", "Y");
        tb_s(&b, n, "coordinate_transformation_mode", "tf_half_pixel_for_nn");
        if (v & 2) tb_s(&b, n, "nearest_mode", "floor");
        tb_out(&b, "Y");
        precis_model *m = round_trip(&b, 0, "Resize-11 tf_half_pixel_for_nn");
        if (m) {
            const pr_node *r = find_op(m->g, "Resize");
            CHECK(r && !strcmp(pr_attr_str(r, "coordinate_transformation_mode", ""), "half_pixel"));
        }
        precis_model_destroy(m);
    }
}

static void test_misc_old(void) {
    /* opset 9: Slice/TopK attributes, Pad-2, Clip-6, Dropout, BatchNormalization-7 */
    tb b;
    tb_begin(&b, 9);
    tb_in(&b, "X", 4, (int64_t[]){1, 3, 4, 6});
    int n = tb_node(&b, "Slice", "slice", "X", "S");
    tb_is(&b, n, "starts", (int64_t[]){1, 0}, 2);
    tb_is(&b, n, "ends", (int64_t[]){4, 5}, 2);
    tb_is(&b, n, "axes", (int64_t[]){2, 3}, 2);
    n = tb_node(&b, "TopK", "topk", "S", "V I");
    tb_i(&b, n, "k", 2);
    n = tb_node(&b, "Pad", "pad", "X", "P");
    b.g->nodes[n].opset = 2;
    tb_is(&b, n, "pads", (int64_t[]){0, 0, 1, 2, 0, 0, 2, 1}, 8);
    tb_f(&b, n, "value", 1.5f);
    n = tb_node(&b, "Clip", "clip", "P", "C");
    b.g->nodes[n].opset = 6;
    tb_f(&b, n, "min", -0.5f);
    tb_f(&b, n, "max", 0.25f);
    tb_node(&b, "Dropout", "drop", "C", "D");
    tb_const(&b, "sc", 1, (int64_t[]){3}, NULL);
    tb_const(&b, "bi", 1, (int64_t[]){3}, NULL);
    tb_const(&b, "mu", 1, (int64_t[]){3}, NULL);
    tb_const(&b, "var", 1, (int64_t[]){3}, (float[]){0.5f, 1.0f, 2.0f});
    n = tb_node(&b, "BatchNormalization", "bn", "D sc bi mu var", "Y");
    b.g->nodes[n].opset = 7;
    tb_i(&b, n, "spatial", 1);
    tb_out(&b, "V");
    tb_out(&b, "I");
    tb_out(&b, "Y");
    precis_model *m = round_trip(&b, 1e-6, "Slice/TopK/Pad/Clip/Dropout/BN at old opsets");
    if (m) {
        CHECK(count_op(m->g, "Dropout") == 0 && count_op(m->g, "Identity") == 1);
        const pr_node *p = find_op(m->g, "Pad");
        CHECK(p && p->n_inputs == 3 && !pr_attr_find(p, "pads"));
        const pr_node *c = find_op(m->g, "Clip");
        CHECK(c && c->n_inputs == 3 && !pr_attr_find(c, "min"));
        const pr_node *bn = find_op(m->g, "BatchNormalization");
        CHECK(bn && !pr_attr_find(bn, "spatial"));
    }
    precis_model_destroy(m);
}

/* LayerNormalization (17), Gelu (20), HardSwish (14), Mish (18) in graphs of
 * older opsets: decomposed; kept where the opset has them. */
static void test_decompose(void) {
    static const int64_t opsets[] = {12, 13, 17, 20};
    for (size_t oi = 0; oi < sizeof opsets / sizeof *opsets; oi++) {
        int64_t E = opsets[oi] > 13 ? opsets[oi] : 13;
        for (int axis = -2; axis <= 2; axis += 3) { /* -2 and 1 on rank 3 */
            tb b;
            tb_begin(&b, opsets[oi]);
            tb_in(&b, "X", 3, (int64_t[]){2, 3, 8});
            tb_const(&b, "gamma", 2, (int64_t[]){3, 8}, NULL);
            tb_const(&b, "beta", 2, (int64_t[]){3, 8}, NULL);
            int n = tb_node(&b, "LayerNormalization", "ln", "X gamma beta", "L");
            b.g->nodes[n].opset = 17;
            tb_i(&b, n, "axis", axis == 2 ? 1 : axis);
            tb_f(&b, n, "epsilon", 1e-3f);
            n = tb_node(&b, "Gelu", "gelu", "L", "G1");
            b.g->nodes[n].opset = 20;
            n = tb_node(&b, "Gelu", "gelu_tanh", "G1", "G2");
            b.g->nodes[n].opset = 20;
            tb_s(&b, n, "approximate", "tanh");
            n = tb_node(&b, "HardSwish", "hsw", "G2", "H");
            b.g->nodes[n].opset = 14;
            n = tb_node(&b, "Mish", "mish", "H", "Y");
            b.g->nodes[n].opset = 18;
            tb_out(&b, "Y");
            char what[64];
            snprintf(what, sizeof what, "decompositions at opset %lld", (long long)opsets[oi]);
            precis_model *m = round_trip(&b, 1e-5, what);
            if (m) {
                CHECK(pr_graph_opset(m->g, "") == E);
                CHECK(count_op(m->g, "LayerNormalization") == (E >= 17));
                CHECK(count_op(m->g, "Gelu") == (E >= 20 ? 2 : 0));
                CHECK(count_op(m->g, "HardSwish") == (E >= 14));
                CHECK(count_op(m->g, "Mish") == (E >= 18));
            }
            precis_model_destroy(m);
        }
    }
}

/* ------------------------------------------------------------------ Q/DQ */

static void test_qdq(void) {
    tb b;
    tb_begin(&b, 13);
    tb_in(&b, "X", 4, (int64_t[]){1, 4, 6, 6});
    tb_scalar(&b, "x_scale", 0.025f);
    tb_const8(&b, "x_zp", PRECIS_INT8, 0, NULL, false, 0);
    tb_node(&b, "QuantizeLinear", "x_q", "X x_scale x_zp", "Xq");
    tb_node(&b, "DequantizeLinear", "x_dq", "Xq x_scale x_zp", "Xd");
    tb_const8(&b, "w_i8", PRECIS_INT8, 4, (int64_t[]){6, 4, 3, 3}, true, 0);
    float ws[6] = {0.01f, 0.02f, 0.005f, 0.03f, 0.015f, 0.008f};
    tb_const(&b, "w_scale", 1, (int64_t[]){6}, ws);
    tb_const8(&b, "w_zp", PRECIS_INT8, 1, (int64_t[]){6}, false, 0);
    int n = tb_node(&b, "DequantizeLinear", "w_dq", "w_i8 w_scale w_zp", "Wd");
    tb_i(&b, n, "axis", 0);
    tb_const(&b, "B", 1, (int64_t[]){6}, NULL);
    n = tb_node(&b, "ai.precis:FusedConv", "conv", "Xd Wd B", "C");
    tb_is(&b, n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    tb_act(&b, n, "act", PR_ACT_RELU);
    tb_scalar(&b, "c_scale", 0.05f);
    tb_const8(&b, "c_zp", PRECIS_UINT8, 0, NULL, false, 0);
    tb_node(&b, "QuantizeLinear", "c_q", "C c_scale c_zp", "Cq");
    tb_node(&b, "DequantizeLinear", "c_dq", "Cq c_scale c_zp", "Cd");
    tb_consti(&b, "shape", 2, (int64_t[]){6, 36});
    tb_node(&b, "Reshape", "flat", "Cd shape", "F");
    tb_const8(&b, "m_i8", PRECIS_INT8, 2, (int64_t[]){36, 5}, true, 0);
    tb_const(&b, "m_scale", 1, (int64_t[]){5}, (float[]){0.01f, 0.02f, 0.03f, 0.04f, 0.05f});
    n = tb_node(&b, "DequantizeLinear", "m_dq", "m_i8 m_scale", "Md");
    tb_i(&b, n, "axis", 1);
    n = tb_node(&b, "ai.precis:FusedMatMul", "fc", "F Md", "Y");
    tb_act(&b, n, "act", PR_ACT_SIGMOID);
    tb_out(&b, "Y");
    /* copies of the weight bytes to compare with after the round trip */
    int8_t w_copy[216];
    memcpy(w_copy, b.g->tensors[pr_graph_find_tensor(b.g, "w_i8")].data, sizeof w_copy);
    precis_model *m = round_trip(&b, 1e-6, "Q/DQ with per-axis weight scales");
    if (m) {
        const pr_graph *g = m->g;
        CHECK(count_op(g, "QuantizeLinear") == 2 && count_op(g, "DequantizeLinear") == 4);
        int w = pr_graph_find_tensor(g, "w_i8"), s = pr_graph_find_tensor(g, "w_scale");
        CHECK(w >= 0 && g->tensors[w].dtype == PRECIS_INT8 &&
              g->tensors[w].nbytes == sizeof w_copy &&
              !memcmp(g->tensors[w].data, w_copy, sizeof w_copy));
        CHECK(s >= 0 && g->tensors[s].rank == 1 && g->tensors[s].dims[0] == 6 &&
              !memcmp(g->tensors[s].data, ws, sizeof ws));
        int zp = pr_graph_find_tensor(g, "c_zp");
        CHECK(zp >= 0 && g->tensors[zp].dtype == PRECIS_UINT8 && g->tensors[zp].rank == 0);
        for (int i = 0; i < g->n_nodes; i++) {
            const pr_node *d = &g->nodes[i];
            if (!strcmp(d->name, "w_dq")) CHECK(pr_attr_int(d, "axis", -1) == 0);
            if (!strcmp(d->name, "m_dq")) CHECK(pr_attr_int(d, "axis", -1) == 1);
        }
        CHECK(count_op(g, "Gemm") == 1 && count_op(g, "Conv") == 1);
    }
    precis_model_destroy(m);
}

/* ------------------------------------------------- attributes, metadata */

static void test_attrs_and_metadata(void) {
    tb b;
    tb_begin(&b, 15);
    pr_graph *g = b.g;
    g->opsets[1].domain = "com.example";
    g->opsets[1].version = 3;
    g->n_opsets = 2;
    g->name = "my graph";
    g->producer_name = "maker";
    g->doc = "a doc";
    g->model_version = 7;
    g->metadata = pr_arena_alloc(g->arena, 2 * sizeof(pr_kv));
    g->metadata[0] = (pr_kv){"author", "me"};
    g->metadata[1] = (pr_kv){"license", "MIT"};
    g->n_metadata = 2;
    tb_in(&b, "X", 3, (int64_t[]){-2, 3, -3});
    tb_in(&b, "Xu", 2, (int64_t[]){PR_DIM_UNKNOWN, 4});
    int n = tb_node(&b, "com.example:Custom", "custom", "X Xu", "Y");
    tb_f(&b, n, "f", 0.25f);
    tb_i(&b, n, "i", -7);
    tb_s(&b, n, "s", "hello");
    tb_is(&b, n, "is", (int64_t[]){1, -2, 3}, 3);
    tb_i(&b, n, "precis_inserted", 1);
    tb_i(&b, n, "fs", 0);
    tb_i(&b, n, "ss", 0);
    tb_i(&b, n, "t", 0);
    tb_i(&b, n, "ts", 0);
    tb_i(&b, n, "empty_ints", 0);
    pr_node *nd = &g->nodes[n];
    static float fs[3] = {1.5f, -2.0f, 0.0f};
    static const char *ss[2] = {"a", "bc"};
    static int32_t tdata[6] = {1, 2, 3, 4, 5, 6};
    static uint16_t hdata[2] = {0x3c00, 0xc000};
    static pr_const tc = {PRECIS_INT32, 2, {2, 3}, tdata, sizeof tdata};
    static pr_const tcs[2] = {{PRECIS_FLOAT16, 1, {2}, hdata, sizeof hdata},
                              {PRECIS_INT32, 0, {0}, tdata, 4}};
    for (int k = 0; k < nd->n_attrs; k++) {
        pr_attr *a = &nd->attrs[k];
        if (!strcmp(a->name, "fs")) a->type = PR_ATTR_FLOATS, a->floats = fs, a->n = 3;
        if (!strcmp(a->name, "ss")) a->type = PR_ATTR_STRINGS, a->strings = ss, a->n = 2;
        if (!strcmp(a->name, "t")) a->type = PR_ATTR_TENSOR, a->t = &tc;
        if (!strcmp(a->name, "ts")) a->type = PR_ATTR_TENSORS, a->tensors = tcs, a->n = 2;
        if (!strcmp(a->name, "empty_ints")) a->type = PR_ATTR_INTS, a->ints = NULL, a->n = 0;
    }
    g->tensors[pr_graph_find_tensor(g, "Y")].dtype = PRECIS_FLOAT32;
    tb_out(&b, "Y");
    void *buf = NULL;
    size_t len = 0;
    pr_err e = {0};
    CHECK(pr_onnx_save_memory(g, &buf, &len, &e) == PRECIS_OK);
    pr_graph *h = NULL;
    CHECK(pr_onnx_load_memory(buf, len, NULL, &h, &e) == PRECIS_OK);
    if (h) {
        CHECK(!strcmp(h->name, "my graph") && !strcmp(h->doc, "a doc") && h->model_version == 7);
        CHECK(!strcmp(h->producer_name, "precis") && h->ir_version >= 8);
        CHECK(h->n_metadata == 2 && !strcmp(h->metadata[1].key, "license") &&
              !strcmp(h->metadata[1].value, "MIT"));
        CHECK(pr_graph_opset(h, "") == 15 && pr_graph_opset(h, "com.example") == 3);
        CHECK(h->n_opsets == 2 && no_precis_domain(h));
        const pr_tensor *x = &h->tensors[h->inputs[0]];
        CHECK(x->rank == 3 && pr_dim_is_sym(x->dims[0]) && x->dims[1] == 3 &&
              !strcmp(h->syms[pr_dim_sym_index(x->dims[0])], "S0") &&
              !strcmp(h->syms[pr_dim_sym_index(x->dims[2])], "S1"));
        x = &h->tensors[h->inputs[1]];
        CHECK(x->rank == 2 && x->dims[0] == PR_DIM_UNKNOWN && x->dims[1] == 4);
        const pr_node *c = find_op(h, "Custom");
        CHECK(c && !strcmp(c->domain, "com.example") && !strcmp(c->name, "custom"));
        if (c) {
            CHECK(!pr_attr_find(c, "precis_inserted"));
            CHECK(pr_attr_float(c, "f", 0) == 0.25f && pr_attr_int(c, "i", 0) == -7);
            CHECK(!strcmp(pr_attr_str(c, "s", ""), "hello"));
            const int64_t *iv;
            CHECK(pr_attr_ints(c, "is", &iv) == 3 && iv[1] == -2);
            CHECK(pr_attr_ints(c, "empty_ints", &iv) == 0);
            const float *fv;
            CHECK(pr_attr_floats(c, "fs", &fv) == 3 && fv[0] == 1.5f && fv[1] == -2.0f);
            const pr_attr *a = pr_attr_find(c, "ss");
            CHECK(a && a->type == PR_ATTR_STRINGS && a->n == 2 && !strcmp(a->strings[1], "bc"));
            a = pr_attr_find(c, "t");
            CHECK(a && a->type == PR_ATTR_TENSOR && a->t->dtype == PRECIS_INT32 &&
                  a->t->rank == 2 && a->t->dims[1] == 3 &&
                  !memcmp(a->t->data, tdata, sizeof tdata));
            a = pr_attr_find(c, "ts");
            CHECK(a && a->type == PR_ATTR_TENSORS && a->n == 2 &&
                  a->tensors[0].dtype == PRECIS_FLOAT16 && !memcmp(a->tensors[0].data, hdata, 4) &&
                  a->tensors[1].rank == 0 && ((int32_t *)a->tensors[1].data)[0] == 1);
        }
    }
    pr_graph_destroy(h);
    free(buf);
    pr_graph_destroy(g);
}

/* ---------------------------------------------------------------- errors */

static void expect_fail(const pr_graph *g, precis_status want, const char *s1, const char *s2) {
    void *buf = NULL;
    size_t len = 0;
    pr_err e = {0};
    precis_status st = pr_onnx_save_memory(g, &buf, &len, &e);
    CHECK(st == want && buf == NULL && len == 0);
    CHECK(e.msg[0] && strchr(e.msg, '\n') == NULL);
    if (s1) CHECK(strstr(e.msg, s1) != NULL);
    if (s2) CHECK(strstr(e.msg, s2) != NULL);
    if (st != want || (s1 && !strstr(e.msg, s1)) || (s2 && !strstr(e.msg, s2)))
        fprintf(stderr, "  unexpected: status %d, message: %s\n", st, e.msg);
    free(buf);
}

static void test_errors(void) {
    /* a GRAPH attribute (If) */
    tb b;
    tb_begin(&b, 13);
    tb_in(&b, "X", 1, (int64_t[]){2});
    tb_const8(&b, "cond", PRECIS_BOOL, 0, NULL, false, 1);
    int n = tb_node(&b, "If", "the_if", "cond", "Y");
    pr_graph *sub = pr_graph_create();
    pr_graph_add_subgraph(b.g, sub);
    tb_i(&b, n, "then_branch", 0);
    b.g->nodes[n].attrs[0].type = PR_ATTR_GRAPH;
    b.g->nodes[n].attrs[0].g = sub;
    tb_out(&b, "Y");
    expect_fail(b.g, PRECIS_ERR_UNSUPPORTED, "the_if", "subgraph");
    pr_graph_destroy(b.g);

    /* a precis-only op without a standard form; a bad activation name */
    for (int v = 0; v < 2; v++) {
        tb_begin(&b, 13);
        tb_in(&b, "X", 4, (int64_t[]){1, 2, 3, 3});
        tb_const(&b, "W", 4, (int64_t[]){2, 2, 1, 1}, NULL);
        n = tb_node(&b, v ? "ai.precis:FusedConv" : "ai.precis:QConv", "qc", "X W", "Y");
        if (v) tb_s(&b, n, "act", "Frobnicate");
        tb_out(&b, "Y");
        expect_fail(b.g, PRECIS_ERR_UNSUPPORTED, "'qc'", v ? "Frobnicate" : "QConv");
        pr_graph_destroy(b.g);
    }

    /* an input nothing defines; a dead node */
    tb_begin(&b, 13);
    tb_in(&b, "X", 1, (int64_t[]){2});
    tb_node(&b, "Add", "add", "X ghost", "Y");
    tb_out(&b, "Y");
    expect_fail(b.g, PRECIS_ERR_INVALID_ARG, "ghost", "'add'");
    pr_graph_destroy(b.g);

    /* NULL arguments */
    pr_err e = {0};
    void *buf = NULL;
    size_t len = 0;
    CHECK(pr_onnx_save_memory(NULL, &buf, &len, &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(pr_onnx_save(NULL, "x.onnx", &e) == PRECIS_ERR_INVALID_ARG);

    /* files: an unwritable path fails with one line; a good one round-trips
     * and leaves no temporary file behind */
    tb_begin(&b, 13);
    tb_in(&b, "X", 1, (int64_t[]){2});
    tb_node(&b, "Relu", "relu", "X", "Y");
    tb_out(&b, "Y");
    const char *bad = "/nonexistent-dir/precis/x.onnx";
    precis_status st = pr_onnx_save(b.g, bad, &e);
    CHECK(st == PRECIS_ERR_IO && strstr(e.msg, bad) && !strchr(e.msg, '\n'));
    char path[256], tmp[300];
    snprintf(path, sizeof path, "/tmp/precis_test_export_%d.onnx", (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(pr_onnx_save(b.g, path, &e) == PRECIS_OK);
    CHECK(access(tmp, F_OK) != 0);
    pr_graph *h = NULL;
    CHECK(pr_onnx_load_file(path, &h, &e) == PRECIS_OK);
    CHECK(h && h->n_nodes == 1 && !strcmp(h->nodes[0].op_type, "Relu"));
    pr_graph_destroy(h);
    unlink(path);
    pr_graph_destroy(b.g);
}

/* ------------------------------------------------------------ zoo models */

static const char *cache_path(const char *rel, char *buf, size_t cap) {
    const char *c = getenv("PRECIS_CACHE");
    if (c && c[0])
        snprintf(buf, cap, "%s/%s", c, rel);
    else
        snprintf(buf, cap, "%s/.cache/precis/%s", getenv("HOME") ? getenv("HOME") : ".", rel);
    return buf;
}

static void test_zoo(void) {
    static const struct {
        const char *model, *in[3];
    } zoo[] = {
        {"models/ch_PP-OCRv4_det_infer.onnx", {"data/det_page.npy"}},
        {"models/ch_PP-OCRv4_rec_infer.onnx", {"data/rec_lines.npy"}},
        {"models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"data/cls_lines.npy"}},
        {"models/minilm/all-MiniLM-L6-v2.onnx",
         {"data/minilm/eval/input_ids.npy", "data/minilm/eval/attention_mask.npy",
          "data/minilm/eval/token_type_ids.npy"}},
        {"models/efficientnet/efficientnet_lite0.onnx", {"data/efficientnet/coffee.npy"}},
        {"models/detector/320n.onnx", {"data/detector/yolo320_astronaut.npy"}},
        {"models/detector/centerface_dyn.onnx", {"data/detector/cf640_person.npy"}},
    };
    int ran = 0;
    for (size_t z = 0; z < sizeof zoo / sizeof *zoo; z++) {
        char buf[4096];
        const char *path = cache_path(zoo[z].model, buf, sizeof buf);
        if (access(path, R_OK) != 0) {
            printf("zoo: %s missing, skipped\n", path);
            continue;
        }
        precis_ctx *ctx = precis_ctx_create();
        precis_model *m0 = NULL, *m1 = NULL;
        precis_tensor *ins[MAXIO] = {0};
        bool ok = precis_model_load(ctx, path, &m0) == PRECIS_OK;
        for (int i = 0; ok && i < 3 && zoo[z].in[i]; i++) {
            char ib[4096];
            ok = precis_tensor_load_npy(ctx, cache_path(zoo[z].in[i], ib, sizeof ib), &ins[i]) ==
                 PRECIS_OK;
        }
        pr_pass_ctx pc = {&ctx->err, 0, 0};
        if (ok) ok = pr_optimize(m0->g, &pc) == PRECIS_OK;
        if (ok) ok = precis_model_infer_shapes(ctx, m0) == PRECIS_OK;
        if (!ok) {
            fprintf(stderr, "zoo %s: %s\n", zoo[z].model, precis_last_error(ctx));
            CHECK(!"zoo model loads and optimizes");
        } else {
            m1 = round_trip_model(ctx, m0, ins, 1e-4, 1e-6, zoo[z].model, false);
            if (m1)
                printf("zoo: %s: %d nodes optimized, %d exported\n", zoo[z].model, m0->g->n_nodes,
                       m1->g->n_nodes);
            ran++;
        }
        if (ok && strstr(zoo[z].model, "efficientnet")) {
            /* after layout planning (as the engine builder leaves an FP32
             * graph): the Reorders it inserted are dropped */
            precis_model_destroy(m1);
            m1 = NULL;
            ok = pr_plan_layouts(m0->g, &ctx->err) == PRECIS_OK &&
                 precis_model_infer_shapes(ctx, m0) == PRECIS_OK;
            CHECK(ok);
            if (ok) m1 = round_trip_model(ctx, m0, ins, 1e-4, 1e-6, "efficientnet planned", false);
            if (m1) {
                printf("zoo: efficientnet after layout planning: %d Reorder -> %d nodes exported\n",
                       count_op(m0->g, "Reorder"), m1->g->n_nodes);
                CHECK(count_op(m1->g, "Reorder") == 0);
            }
        }
        for (int i = 0; i < MAXIO; i++) precis_tensor_destroy(ins[i]);
        precis_model_destroy(m0);
        precis_model_destroy(m1);
        precis_ctx_destroy(ctx);
    }
    printf("zoo: %d models round-tripped\n", ran);
}

int main(void) {
    test_fused_conv();
    test_fused_matmul();
    test_attention();
    test_reorder();
    test_axes_inputs();
    test_softmax_old();
    test_resize_old();
    test_misc_old();
    test_decompose();
    test_qdq();
    test_attrs_and_metadata();
    test_errors();
    test_zoo();
    return check_report("test_onnx_export");
}
