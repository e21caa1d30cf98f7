/* The graph optimization passes (src/passes): small graphs built here, each
 * twice (one copy stays the reference), run on the ref backend before and
 * after the pass. Positive cases: outputs agree within 1e-5 (max abs diff /
 * max |ref|), the node count drops, the fused node lists its originals in
 * graph order. Negative cases: an intermediate with a second consumer or
 * that is a graph output, non-constant weights, wrong constants: no fusion. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/infer.h"
#include "passes/graph_edit.h"
#include "passes/pass.h"
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
    g->opsets = pr_arena_alloc(g->arena, sizeof(pr_opset));
    g->opsets[0].domain = "";
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    g->inputs = pr_arena_alloc(g->arena, 16 * sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, 16 * sizeof(int));
}

static int tb_t(tb *b, const char *name) { return pr_graph_get_tensor(b->g, name, &b->e); }

static void tb_in(tb *b, const char *name, int rank, const int64_t *dims) {
    int t = tb_t(b, name);
    pr_tensor *x = &b->g->tensors[t];
    x->dtype = PRECIS_FLOAT32;
    x->rank = rank;
    if (rank > 0) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    x->flags |= PR_T_INPUT;
    b->g->inputs[b->g->n_inputs++] = t;
}

/* A float32 initializer: vals, or random in [-1, 1) when NULL. */
static void tb_const(tb *b, const char *name, int rank, const int64_t *dims, const float *vals) {
    int64_t n = pr_numel(rank, dims);
    float *d = pr_edit_alloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) d[i] = vals ? vals[i] : frand(b);
    pr_graph_own(b->g, d);
    int t = tb_t(b, name);
    pr_tensor *x = &b->g->tensors[t];
    x->dtype = PRECIS_FLOAT32;
    x->rank = rank;
    if (rank > 0) memcpy(x->dims, dims, (size_t)rank * sizeof *dims);
    x->data = d;
    x->nbytes = (size_t)n * sizeof(float);
    x->flags |= PR_T_INIT;
}

static void tb_scalar(tb *b, const char *name, float v) { tb_const(b, name, 0, NULL, &v); }

static void tb_consti(tb *b, const char *name, int n, const int64_t *vals) {
    int64_t *d = pr_edit_alloc((size_t)(n ? n : 1) * sizeof(int64_t));
    memcpy(d, vals, (size_t)n * sizeof *d);
    pr_graph_own(b->g, d);
    int t = tb_t(b, name);
    pr_tensor *x = &b->g->tensors[t];
    x->dtype = PRECIS_INT64;
    x->rank = 1;
    x->dims[0] = n;
    x->data = d;
    x->nbytes = (size_t)n * sizeof(int64_t);
    x->flags |= PR_T_INIT;
}

/* A node; ins/outs are space-separated tensor names ("-": omitted input). */
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
    n->name = pr_arena_strdup(b->g->arena, name);
    n->op_type = pr_arena_strdup(b->g->arena, op);
    n->domain = "";
    n->op = pr_op_lookup(op);
    n->opset = b->opset;
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
static void tb_is(tb *b, int ni, const char *name, const int64_t *v, int n) {
    pr_node_set_ints(b->g, ni, name, v, n, &b->e);
}

typedef void (*build_fn)(tb *b, int variant);

static precis_model *make(build_fn f, int v) {
    tb b;
    f(&b, v);
    precis_status st = pr_graph_infer(b.g, &b.e);
    if (st) {
        fprintf(stderr, "infer: %s\n", b.e.msg);
        pr_graph_destroy(b.g);
        return NULL;
    }
    precis_model *m = calloc(1, sizeof *m);
    m->g = b.g;
    return m;
}

/* ------------------------------------------------------------- checking */

typedef struct outcome {
    int before, after, changes;
    double rel; /* max over outputs of max|a-b| / max|a| */
    bool ok;    /* pass, check, infer and both runs succeeded */
    precis_model *opt;
} outcome;

static uint64_t in_rng = 42;

static precis_tensor *rand_input(precis_ctx *ctx, const pr_tensor *x) {
    precis_tensor *t = NULL;
    precis_tensor_create(ctx, x->dtype, x->rank, x->dims, &t);
    float *p = precis_tensor_data(t);
    for (int64_t i = 0; i < precis_tensor_numel(t); i++) {
        in_rng ^= in_rng << 13;
        in_rng ^= in_rng >> 7;
        in_rng ^= in_rng << 17;
        p[i] = (float)((double)(in_rng >> 11) / 9007199254740992.0 * 6.0 - 3.0);
    }
    return t;
}

static bool run(precis_ctx *ctx, precis_model *m, precis_tensor **ins, precis_tensor **outs) {
    const char *names[16];
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

/* Build twice, run the pass (NULL: pr_optimize) on the second copy, compare. */
static outcome run_case(build_fn f, int v, const pr_pass *pass) {
    outcome o = {0};
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m0 = make(f, v), *m1 = make(f, v);
    precis_tensor *ins[16] = {0}, *o0[16] = {0}, *o1[16] = {0};
    if (!m0 || !m1) goto done;
    for (int i = 0; i < m0->g->n_inputs; i++)
        ins[i] = rand_input(ctx, &m0->g->tensors[m0->g->inputs[i]]);
    if (!run(ctx, m0, ins, o0)) goto done;
    o.before = m1->g->n_nodes;
    pr_pass_ctx pc = {&ctx->err, 0, 0};
    precis_status st = pass ? pr_pass_run(pass, m1->g, &pc) : pr_optimize(m1->g, &pc);
    if (!st) st = pr_graph_check(m1->g, &ctx->err);
    if (!st) st = precis_model_infer_shapes(ctx, m1);
    if (st) {
        fprintf(stderr, "pass: %s\n", precis_last_error(ctx));
        goto done;
    }
    o.after = m1->g->n_nodes;
    o.changes = pc.changes;
    if (!run(ctx, m1, ins, o1)) goto done;
    o.ok = true;
    for (int k = 0; k < m0->g->n_outputs; k++) {
        int64_t n = precis_tensor_numel(o0[k]);
        if (n != precis_tensor_numel(o1[k])) {
            o.ok = false;
            continue;
        }
        const float *a = precis_tensor_data_const(o0[k]), *b = precis_tensor_data_const(o1[k]);
        double md = 0, ma = 0;
        for (int64_t i = 0; i < n; i++) {
            md = fmax(md, fabs((double)a[i] - b[i]));
            ma = fmax(ma, fabs((double)a[i]));
            if (isnan(a[i]) != isnan(b[i])) o.ok = false;
        }
        double rel = ma > 0 ? md / ma : md;
        if (rel > o.rel) o.rel = rel;
    }
done:
    for (int i = 0; i < 16; i++) {
        precis_tensor_destroy(ins[i]);
        precis_tensor_destroy(o0[i]);
        precis_tensor_destroy(o1[i]);
    }
    precis_model_destroy(m0);
    if (!m1) { /* keep the checks going on an empty graph */
        m1 = calloc(1, sizeof *m1);
        m1->g = pr_graph_create();
    }
    o.opt = m1;
    precis_ctx_destroy(ctx);
    return o;
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

/* Does n cover exactly these originals, in this order (NULL-terminated)? */
static bool origins_are(const pr_node *n, ...) {
    va_list ap;
    va_start(ap, n);
    int k = 0;
    bool ok = n != NULL;
    for (const char *s; ok && (s = va_arg(ap, const char *)); k++) {
        const char *have =
            n->n_origins ? (k < n->n_origins ? n->origins[k] : NULL) : (k ? NULL : n->name);
        ok = have && !strcmp(have, s);
    }
    va_end(ap);
    if (ok && n->n_origins && n->n_origins != k) ok = false;
    if (!ok && n) {
        fprintf(stderr, "  origins of '%s':", n->name);
        for (int i = 0; i < n->n_origins; i++) fprintf(stderr, " %s", n->origins[i]);
        fprintf(stderr, "\n");
    }
    return ok;
}

static const char *act_of(const pr_node *n, const char *prefix) {
    return n ? pr_attr_str(n, prefix, "") : "(none)";
}

#define POSITIVE(o) CHECK((o).ok && (o).rel <= 1e-5 && (o).after < (o).before)

static void report(const char *what, const outcome *o) {
    if (!o->ok || o->rel > 1e-5)
        fprintf(stderr, "%s: ok %d rel %.3g nodes %d -> %d\n", what, o->ok, o->rel, o->before,
                o->after);
}

/* ------------------------------------------------------------ graph_edit */

static void test_graph_edit(void) {
    tb b;
    tb_begin(&b, 17);
    int64_t d[2] = {2, 3};
    tb_in(&b, "x", 2, d);
    /* deliberately out of order: Add first */
    tb_node(&b, "Add", "add", "s t", "y");
    tb_node(&b, "Relu", "relu", "x", "a");
    tb_node(&b, "Sigmoid", "sig", "a", "s");
    tb_node(&b, "Tanh", "tanh", "a", "t");
    tb_out(&b, "y");
    tb_out(&b, "a");
    pr_graph *g = b.g;
    pr_err e = {0};
    pr_uses u;
    CHECK(pr_uses_build(g, &u, &e) == PRECIS_OK);
    int ta = pr_graph_find_tensor(g, "a"), ts = pr_graph_find_tensor(g, "s");
    CHECK(pr_uses_of(&u, ta) == 3); /* two nodes and a graph output */
    CHECK(pr_single_consumer(g, &u, ta) == -1);
    CHECK(pr_single_consumer(g, &u, ts) == 0);
    CHECK(pr_graph_check(g, &e) != PRECIS_OK); /* not topological */
    CHECK(pr_graph_compact(g, &e) == PRECIS_OK);
    CHECK(pr_graph_check(g, &e) == PRECIS_OK);
    CHECK(!strcmp(g->nodes[0].name, "relu") && !strcmp(g->nodes[3].name, "add"));
    /* kill + compact */
    pr_uses_free(&u);
    CHECK(pr_uses_build(g, &u, &e) == PRECIS_OK);
    pr_node_kill(g, &u, 2); /* tanh */
    CHECK(pr_uses_of(&u, ta) == 2);
    CHECK(g->tensors[pr_graph_find_tensor(g, "t")].producer == -1);
    CHECK(pr_graph_compact(g, &e) == PRECIS_OK && g->n_nodes == 3);
    CHECK(pr_graph_check(g, &e) != PRECIS_OK); /* add reads t, which nobody computes */
    /* initializers get unique names */
    float one = 1;
    int64_t one_d = 1;
    int w1 = pr_graph_add_init_f32(g, "w", 1, &one_d, &one, &e);
    int w2 = pr_graph_add_init_f32(g, "w", 1, &one_d, &one, &e);
    CHECK(w1 >= 0 && w2 >= 0 && w1 != w2);
    CHECK(!strcmp(g->tensors[w1].name, "w") && !strcmp(g->tensors[w2].name, "w_1"));
    CHECK((g->tensors[w2].flags & PR_T_INIT) && *(float *)g->tensors[w2].data == 1.0f);
    /* attributes replace */
    CHECK(pr_node_set_int(g, 0, "k", 1, &e) == PRECIS_OK);
    CHECK(pr_node_set_int(g, 0, "k", 2, &e) == PRECIS_OK);
    CHECK(pr_attr_int(&g->nodes[0], "k", 0) == 2 && g->nodes[0].n_attrs == 1);
    int64_t iv[2] = {3, 4};
    CHECK(pr_node_set_ints(g, 0, "v", iv, 2, &e) == PRECIS_OK);
    const int64_t *ip;
    CHECK(pr_attr_ints(&g->nodes[0], "v", &ip) == 2 && ip[1] == 4);
    CHECK(pr_node_set_string(g, 0, "s", "Relu", &e) == PRECIS_OK);
    CHECK(!strcmp(pr_attr_str(&g->nodes[0], "s", ""), "Relu"));
    /* origins merge in graph order, nested origins flattened */
    int nodes[2] = {2, 1};
    CHECK(pr_node_merge_origins(g, 0, nodes, 2, &e) == PRECIS_OK);
    CHECK(origins_are(&g->nodes[0], "relu", "sig", "add", NULL));
    int n2[1] = {0};
    CHECK(pr_node_merge_origins(g, 1, n2, 1, &e) == PRECIS_OK);
    CHECK(origins_are(&g->nodes[1], "relu", "sig", "add", NULL)); /* no duplicates */
    /* a new fused node */
    int fn = pr_node_new(g, PR_OP_FusedConv, 1, "f", 4, 1, &e);
    CHECK(fn >= 0 && !strcmp(g->nodes[fn].domain, PR_FUSED_DOMAIN) &&
          !strcmp(g->nodes[fn].op_type, "FusedConv") && g->nodes[fn].n_inputs == 4);
    pr_uses_free(&u);
    pr_graph_destroy(g);
}

/* ---------------------------------------------------- fold_constants, dce */

/* v0: y = x * (Constant c1 + c2) + unused branch; v1: a node over 64 MiB */
static void build_fold(tb *b, int v) {
    tb_begin(b, 17);
    int64_t d[2] = {2, 4}, d4[1] = {4};
    tb_in(b, "x", 2, d);
    if (v == 1) {
        int64_t big[2] = {4097, 4096};
        tb_consti(b, "shape", 2, big);
        tb_scalar(b, "one", 1.0f);
        tb_node(b, "Expand", "expand", "one shape", "huge");
        tb_node(b, "ReduceSum", "rs", "huge", "hs");
        tb_node(b, "Add", "add", "x hs", "y");
        tb_out(b, "y");
        return;
    }
    tb_const(b, "c1", 1, d4, NULL); /* as the loader leaves a Constant node */
    int k = tb_node(b, "Constant", "const", "", "c1");
    pr_graph *g = b->g;
    pr_attr *a = pr_arena_alloc(g->arena, sizeof *a);
    pr_const *c = pr_arena_alloc(g->arena, sizeof *c);
    const pr_tensor *t = &g->tensors[pr_graph_find_tensor(g, "c1")];
    *c = (pr_const){t->dtype, t->rank, {4}, t->data, t->nbytes};
    a->name = "value";
    a->type = PR_ATTR_TENSOR;
    a->t = c;
    g->nodes[k].attrs = a;
    g->nodes[k].n_attrs = 1;
    tb_const(b, "c2", 1, d4, NULL);
    tb_node(b, "Add", "cadd", "c1 c2", "c3");
    tb_node(b, "Neg", "cneg", "c3", "c4");
    tb_node(b, "Mul", "mul", "x c4", "y");
    tb_node(b, "Sigmoid", "dead1", "x", "unused");
    tb_node(b, "Tanh", "dead2", "unused", "unused2");
    tb_out(b, "y");
}

static void test_fold(void) {
    outcome o = run_case(build_fold, 0, &pr_pass_fold_constants);
    report("fold", &o);
    POSITIVE(o);
    CHECK(o.after == 3 && o.changes == 3); /* Constant, Add, Neg */
    pr_graph *g = o.opt->g;
    int c4 = pr_graph_find_tensor(g, "c4");
    CHECK((g->tensors[c4].flags & PR_T_INIT) && g->tensors[c4].producer < 0 &&
          g->tensors[c4].data != NULL);
    CHECK(count_op(g, "Constant") == 0 && count_op(g, "Mul") == 1);
    /* dce removes the unused branch */
    pr_pass_ctx pc = {&(pr_err){0}, 0, 0};
    CHECK(pr_pass_run(&pr_pass_dce, g, &pc) == PRECIS_OK && pc.changes == 2 && g->n_nodes == 1);
    precis_model_destroy(o.opt);

    o = run_case(build_fold, 0, &pr_pass_dce);
    POSITIVE(o);
    CHECK(o.before == 6 && o.after == 4);
    precis_model_destroy(o.opt);

    /* over 64 MiB: not folded (and not computed) */
    precis_model *m = make(build_fold, 1);
    pr_pass_ctx pc2 = {&(pr_err){0}, 0, 0};
    CHECK(m && pr_pass_run(&pr_pass_fold_constants, m->g, &pc2) == PRECIS_OK);
    CHECK(m && count_op(m->g, "Expand") == 1);
    precis_model_destroy(m);
}

/* Static input dims: Shape(x) folds and the Reshape after it gets a constant
 * shape; Shape of a tensor whose dims only value_info gave (Reshape to a shape
 * read from an input) stays. */
static void build_static_shape(tb *b, int v) {
    (void)v;
    tb_begin(b, 17);
    int64_t dx[3] = {2, 3, 4};
    tb_in(b, "x", 3, dx);
    tb_node(b, "Shape", "shape", "x", "sx");
    tb_consti(b, "idx", 1, (int64_t[]){0});
    tb_node(b, "Gather", "gather", "sx idx", "n");
    tb_consti(b, "minus1", 1, (int64_t[]){-1});
    tb_node(b, "Concat", "concat", "n minus1", "s2");
    tb_i(b, b->g->n_nodes - 1, "axis", 0);
    tb_node(b, "Reshape", "reshape", "x s2", "out");
    tb_out(b, "out");
    /* dims from "value_info" only */
    int t = tb_t(b, "s");
    b->g->tensors[t].dtype = PRECIS_INT64;
    b->g->tensors[t].rank = 1;
    b->g->tensors[t].dims[0] = 2;
    b->g->tensors[t].flags |= PR_T_INPUT;
    b->g->inputs[b->g->n_inputs++] = t;
    tb_node(b, "Reshape", "reshape2", "x s", "r");
    int r = tb_t(b, "r");
    b->g->tensors[r].dtype = PRECIS_FLOAT32;
    b->g->tensors[r].rank = 2;
    b->g->tensors[r].dims[0] = 6;
    b->g->tensors[r].dims[1] = 4;
    tb_node(b, "Shape", "shape2", "r", "sr");
    tb_out(b, "sr");
}

static void test_static_shape(void) {
    precis_model *m = make(build_static_shape, 0);
    CHECK(m != NULL);
    if (!m) return;
    pr_graph *g = m->g;
    pr_pass_ctx pc = {&(pr_err){0}, 0, 0};
    CHECK(pr_pass_run(&pr_pass_fold_constants, g, &pc) == PRECIS_OK);
    /* Shape, Gather, Concat folded; Reshape, Reshape2, Shape2 stay */
    CHECK(g->n_nodes == 3 && count_op(g, "Shape") == 1 && count_op(g, "Reshape") == 2);
    const pr_node *sh = find_op(g, "Shape");
    CHECK(sh && !strcmp(sh->name, "shape2"));
    int s2 = pr_graph_find_tensor(g, "s2");
    CHECK(s2 >= 0 && (g->tensors[s2].flags & PR_T_INIT) &&
          ((int64_t *)g->tensors[s2].data)[0] == 2 && ((int64_t *)g->tensors[s2].data)[1] == -1);
    /* the declared dims of r survive the trial inference */
    int r = pr_graph_find_tensor(g, "r");
    CHECK(g->tensors[r].rank == 2 && g->tensors[r].dims[0] == 6);
    precis_model_destroy(m);
}

/* ----------------------------------------------------------------- fold_bn */

/* v0 Conv+BN, v1 conv output also a graph output, v2 two consumers,
 * v3 W non-constant, v4 ConvTranspose + bias Add + BN, v5 Gemm(transB) + BN,
 * v6 MatMul + BN, v7 FusedConv with act (no fold) */
static void build_bn(tb *b, int v) {
    tb_begin(b, 13);
    int64_t dx[4] = {1, 3, 5, 5}, dw[4] = {4, 3, 3, 3}, dc[1] = {4};
    int64_t dxt[4] = {1, 4, 5, 5}, dwt[4] = {4, 2, 2, 2}, d1c11[4] = {1, 4, 1, 1};
    if (v == 5 || v == 6) {
        int64_t da[2] = {2, 6}, db[2] = {6, 4}, dbt[2] = {4, 6};
        tb_in(b, "x", 2, da);
        tb_const(b, "W", 2, v == 5 ? dbt : db, NULL);
        tb_const(b, "C", 1, dc, NULL);
        int n = v == 5 ? tb_node(b, "Gemm", "lin", "x W C", "y")
                       : tb_node(b, "MatMul", "lin", "x W", "y");
        if (v == 5) {
            tb_i(b, n, "transB", 1);
            tb_f(b, n, "beta", 0.5f);
            tb_f(b, n, "alpha", 2.0f);
        }
    } else {
        tb_in(b, "x", 4, v == 4 ? dxt : dx);
        if (v == 3)
            tb_in(b, "W", 4, dw);
        else
            tb_const(b, "W", 4, v == 4 ? dwt : dw, NULL);
        tb_const(b, "B", 1, dc, NULL);
        if (v == 4) {
            int nt = tb_node(b, "ConvTranspose", "conv", "x W", "y0");
            tb_i(b, nt, "group", 2);
            tb_const(b, "tb", 4, d1c11, NULL);
            tb_node(b, "Add", "tadd", "y0 tb", "y");
        } else {
            int n = tb_node(b, "Conv", "conv", "x W B", "y");
            int64_t pads[4] = {1, 1, 1, 1};
            tb_is(b, n, "pads", pads, 4);
        }
    }
    tb_const(b, "s", 1, dc, NULL);
    tb_const(b, "bb", 1, dc, NULL);
    tb_const(b, "mean", 1, dc, NULL);
    float var[4] = {0.5f, 1.5f, 2.0f, 0.25f};
    tb_const(b, "var", 1, dc, var);
    int n = tb_node(b, "BatchNormalization", "bn", "y s bb mean var", "z");
    tb_f(b, n, "epsilon", 1e-3f);
    tb_out(b, "z");
    if (v == 1) tb_out(b, "y");
    if (v == 2) {
        tb_node(b, "Relu", "other", "y", "r");
        tb_out(b, "r");
    }
}

static void test_fold_bn(void) {
    outcome o = run_case(build_bn, 0, &pr_pass_fold_bn);
    report("bn conv", &o);
    POSITIVE(o);
    CHECK(o.after == 1 && count_op(o.opt->g, "BatchNormalization") == 0);
    CHECK(origins_are(find_op(o.opt->g, "Conv"), "conv", "bn", NULL));
    precis_model_destroy(o.opt);
    for (int v = 1; v <= 3; v++) {
        o = run_case(build_bn, v, &pr_pass_fold_bn);
        CHECK(o.ok && o.after == o.before && count_op(o.opt->g, "BatchNormalization") == 1);
        precis_model_destroy(o.opt);
    }
    o = run_case(build_bn, 4, &pr_pass_fold_bn);
    report("bn convT", &o);
    POSITIVE(o);
    CHECK(o.after == 1 &&
          origins_are(find_op(o.opt->g, "ConvTranspose"), "conv", "tadd", "bn", NULL));
    precis_model_destroy(o.opt);
    o = run_case(build_bn, 5, &pr_pass_fold_bn);
    report("bn gemm", &o);
    POSITIVE(o);
    CHECK(o.after == 1 && origins_are(find_op(o.opt->g, "Gemm"), "lin", "bn", NULL));
    precis_model_destroy(o.opt);
    o = run_case(build_bn, 6, &pr_pass_fold_bn);
    report("bn matmul", &o);
    POSITIVE(o);
    CHECK(o.after == 1 && count_op(o.opt->g, "Gemm") == 1 && count_op(o.opt->g, "MatMul") == 0);
    precis_model_destroy(o.opt);
}

/* --------------------------------------------------------------- fuse_conv */

enum {
    C_FULL, /* Conv + Mul + Add bias + Relu + residual Add + Relu */
    C_LEAKY,
    C_CLIP11,
    C_CLIP6,
    C_SIGMOID,
    C_HSIG,
    C_HSWISH,
    C_TANH,
    C_SWISH,
    C_SWISH1,
    C_XHSIG,
    C_DECOMP_HS,
    C_DECOMP_HS2,
    C_BIAS_SHAPES,
    C_NEG_TWO_USES,
    C_NEG_OUTPUT,
    C_NEG_WEIGHTS,
    C_NEG_BIAS_BCAST,
    C_NEG_RES_BCAST,
    C_POST_AFFINE,  /* HardSwish, scalar Mul, scalar Add -> act2 Affine */
    C_POST_AFFINE2, /* Relu, scalar Div, scalar Sub */
    C_NEG_POST_CH,  /* Relu, per-channel Mul: not an Affine */
    C_COUNT
};

static void build_conv(tb *b, int v) {
    tb_begin(b, v == C_CLIP6 ? 6 : 13);
    int64_t dx[4] = {2, 3, 6, 6}, dw[4] = {4, 3, 3, 3}, dc[1] = {4};
    int64_t d1c11[4] = {1, 4, 1, 1}, dc11[3] = {4, 1, 1}, dy[4] = {2, 4, 6, 6}, d1[1] = {1};
    int64_t d11w[4] = {1, 1, 1, 6};
    tb_in(b, "x", 4, dx);
    if (v == C_NEG_WEIGHTS)
        tb_in(b, "W", 4, dw);
    else
        tb_const(b, "W", 4, dw, NULL);
    tb_const(b, "B", 1, dc, NULL);
    int n = tb_node(b, "Conv", "conv", "x W B", "y");
    int64_t pads[4] = {1, 1, 1, 1};
    tb_is(b, n, "pads", pads, 4);
    const char *y = "y";
    switch (v) {
    case C_FULL:
    case C_NEG_RES_BCAST:
        tb_const(b, "sc", 4, d1c11, NULL);
        tb_node(b, "Mul", "scale", "sc y", "y1");
        tb_const(b, "bi", 3, dc11, NULL);
        tb_node(b, "Add", "bias", "y1 bi", "y2");
        tb_node(b, "Relu", "relu", "y2", "y3");
        if (v == C_FULL)
            tb_in(b, "z", 4, dy);
        else
            tb_in(b, "z", 4, (int64_t[]){2, 4, 1, 6});
        tb_node(b, "Add", "res", "z y3", "y4");
        tb_node(b, "Relu", "relu2", "y4", "out");
        tb_out(b, "out");
        return;
    case C_BIAS_SHAPES:
        tb_scalar(b, "c0", 0.25f);
        tb_node(b, "Add", "a0", "y c0", "y1");
        tb_const(b, "c1", 1, d1, NULL);
        tb_node(b, "Sub", "a1", "y1 c1", "y2");
        tb_const(b, "c2", 4, d1c11, NULL);
        tb_node(b, "Div", "a2", "y2 c2", "out");
        tb_out(b, "out");
        return;
    case C_NEG_BIAS_BCAST: /* [1,1,1,W]: not per channel */
        tb_const(b, "c", 4, d11w, NULL);
        tb_node(b, "Add", "a", "y c", "out");
        tb_out(b, "out");
        return;
    case C_LEAKY:
        n = tb_node(b, "LeakyRelu", "act", y, "out");
        tb_f(b, n, "alpha", 0.2f);
        break;
    case C_CLIP11:
        tb_scalar(b, "lo", -0.5f);
        tb_scalar(b, "hi", 0.7f);
        tb_node(b, "Clip", "act", "y lo hi", "out");
        break;
    case C_CLIP6:
        n = tb_node(b, "Clip", "act", y, "out");
        tb_f(b, n, "min", -0.3f);
        tb_f(b, n, "max", 0.4f);
        break;
    case C_SIGMOID: tb_node(b, "Sigmoid", "act", y, "out"); break;
    case C_HSIG:
        n = tb_node(b, "HardSigmoid", "act", y, "out");
        tb_f(b, n, "alpha", 0.3f);
        break;
    case C_HSWISH: tb_node(b, "HardSwish", "act", y, "out"); break;
    case C_TANH: tb_node(b, "Tanh", "act", y, "out"); break;
    case C_SWISH:
        tb_node(b, "Sigmoid", "sig", y, "s");
        tb_node(b, "Mul", "act", "s y", "out");
        break;
    case C_SWISH1:
        tb_scalar(b, "one", 1.0f);
        tb_node(b, "Mul", "m1", "y one", "y1");
        tb_node(b, "Sigmoid", "sig", "y1", "s");
        tb_node(b, "Mul", "act", "y s", "out");
        break;
    case C_XHSIG:
        n = tb_node(b, "HardSigmoid", "hs", y, "s");
        tb_f(b, n, "alpha", 1.0f / 6.0f);
        tb_node(b, "Mul", "act", "y s", "out");
        break;
    case C_DECOMP_HS:
    case C_DECOMP_HS2:
        tb_scalar(b, "three", 3.0f);
        tb_scalar(b, "zero", 0.0f);
        tb_scalar(b, "six", 6.0f);
        tb_node(b, "Add", "p3", "y three", "a");
        tb_node(b, "Clip", "clip", "a zero six", "c");
        if (v == C_DECOMP_HS) {
            tb_node(b, "Mul", "mul", "y c", "m");
            tb_node(b, "Div", "act", "m six", "out");
        } else {
            tb_node(b, "Div", "div", "c six", "m");
            tb_node(b, "Mul", "act", "m y", "out");
        }
        break;
    case C_NEG_TWO_USES:
        tb_node(b, "Relu", "act", y, "out");
        tb_node(b, "Neg", "other", y, "o2");
        tb_out(b, "o2");
        break;
    case C_NEG_OUTPUT:
        tb_node(b, "Relu", "act", y, "out");
        tb_out(b, "y");
        break;
    case C_NEG_WEIGHTS: tb_node(b, "Relu", "act", y, "out"); break;
    case C_POST_AFFINE:
        tb_node(b, "HardSwish", "act", y, "h");
        tb_scalar(b, "s", 0.8f);
        tb_node(b, "Mul", "pmul", "s h", "h1");
        tb_scalar(b, "t", -0.3f);
        tb_node(b, "Add", "padd", "h1 t", "out");
        break;
    case C_POST_AFFINE2:
        tb_node(b, "Relu", "act", y, "h");
        tb_scalar(b, "s", 4.0f);
        tb_node(b, "Div", "pdiv", "h s", "h1");
        tb_scalar(b, "t", 0.5f);
        tb_node(b, "Sub", "psub", "h1 t", "out");
        break;
    case C_NEG_POST_CH:
        tb_node(b, "Relu", "act", y, "h");
        tb_const(b, "s", 4, d1c11, NULL);
        tb_node(b, "Mul", "pmul", "h s", "out");
        break;
    }
    tb_out(b, "out");
}

static void test_fuse_conv(void) {
    outcome o = run_case(build_conv, C_FULL, &pr_pass_fuse_conv);
    report("conv full", &o);
    POSITIVE(o);
    const pr_node *f = find_op(o.opt->g, "FusedConv");
    CHECK(o.after == 1 && f && f->n_inputs == 4 && f->inputs[3] >= 0);
    CHECK(!strcmp(act_of(f, "act"), "Relu") && !strcmp(act_of(f, "act2"), "Relu"));
    CHECK(origins_are(f, "conv", "scale", "bias", "relu", "res", "relu2", NULL));
    CHECK(f && !strcmp(o.opt->g->tensors[f->outputs[0]].name, "out"));
    precis_model_destroy(o.opt);

    static const struct {
        int v;
        const char *act;
    } acts[] = {
        {C_LEAKY, "LeakyRelu"}, {C_CLIP11, "Clip"},         {C_CLIP6, "Clip"},
        {C_SIGMOID, "Sigmoid"}, {C_HSIG, "HardSigmoid"},    {C_HSWISH, "HardSwish"},
        {C_TANH, "Tanh"},       {C_SWISH, "Swish"},         {C_SWISH1, "Swish"},
        {C_XHSIG, "HardSwish"}, {C_DECOMP_HS, "HardSwish"}, {C_DECOMP_HS2, "HardSwish"},
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        o = run_case(build_conv, acts[i].v, &pr_pass_fuse_conv);
        report(acts[i].act, &o);
        POSITIVE(o);
        f = find_op(o.opt->g, "FusedConv");
        CHECK(o.after == 1 && !strcmp(act_of(f, "act"), acts[i].act));
        if (f && strcmp(act_of(f, "act"), acts[i].act))
            fprintf(stderr, "  case %d: act '%s', want '%s'\n", acts[i].v, act_of(f, "act"),
                    acts[i].act);
        CHECK(f && f->n_origins >= 2 && !strcmp(f->origins[0], "conv") &&
              !strcmp(f->origins[f->n_origins - 1], "act"));
        precis_model_destroy(o.opt);
    }
    o = run_case(build_conv, C_CLIP11, &pr_pass_fuse_conv);
    f = find_op(o.opt->g, "FusedConv");
    CHECK(f && pr_attr_float(f, "act_alpha", 0) == -0.5f &&
          pr_attr_float(f, "act_beta", 0) == 0.7f);
    precis_model_destroy(o.opt);

    o = run_case(build_conv, C_BIAS_SHAPES, &pr_pass_fuse_conv);
    report("conv bias shapes", &o);
    POSITIVE(o);
    CHECK(o.after == 1 &&
          origins_are(find_op(o.opt->g, "FusedConv"), "conv", "a0", "a1", "a2", NULL));
    precis_model_destroy(o.opt);

    /* negatives: the Conv still becomes a FusedConv, nothing else is absorbed */
    int negs[] = {C_NEG_TWO_USES, C_NEG_OUTPUT, C_NEG_BIAS_BCAST};
    for (size_t i = 0; i < sizeof negs / sizeof negs[0]; i++) {
        o = run_case(build_conv, negs[i], &pr_pass_fuse_conv);
        f = find_op(o.opt->g, "FusedConv");
        CHECK(o.ok && o.rel <= 1e-5 && o.after == o.before && f && act_of(f, "act")[0] == 0 &&
              origins_are(f, "conv", NULL));
        precis_model_destroy(o.opt);
    }
    o = run_case(build_conv, C_NEG_WEIGHTS, &pr_pass_fuse_conv);
    CHECK(o.ok && o.after == 2 && count_op(o.opt->g, "Conv") == 1 && o.changes == 0);
    precis_model_destroy(o.opt);
    /* a scalar affine after the activation -> act2 Affine */
    o = run_case(build_conv, C_POST_AFFINE, &pr_pass_fuse_conv);
    report("conv act + affine", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "FusedConv");
    CHECK(o.after == 1 && f && !strcmp(act_of(f, "act2"), "Affine") &&
          pr_attr_float(f, "act2_alpha", 0) == 0.8f && pr_attr_float(f, "act2_beta", 0) == -0.3f &&
          origins_are(f, "conv", "act", "pmul", "padd", NULL));
    precis_model_destroy(o.opt);
    o = run_case(build_conv, C_POST_AFFINE2, &pr_pass_fuse_conv);
    report("conv act + div/sub", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "FusedConv");
    CHECK(o.after == 1 && f && pr_attr_float(f, "act2_alpha", 0) == 0.25f &&
          pr_attr_float(f, "act2_beta", 0) == -0.5f);
    precis_model_destroy(o.opt);
    o = run_case(build_conv, C_NEG_POST_CH, &pr_pass_fuse_conv);
    f = find_op(o.opt->g, "FusedConv");
    CHECK(o.ok && o.rel <= 1e-5 && o.after == 2 && f && act_of(f, "act2")[0] == 0);
    precis_model_destroy(o.opt);
    /* residual that broadcasts: not a residual; the Relu before it is fused */
    o = run_case(build_conv, C_NEG_RES_BCAST, &pr_pass_fuse_conv);
    f = find_op(o.opt->g, "FusedConv");
    CHECK(o.ok && o.rel <= 1e-5 && f && (f->n_inputs < 4 || f->inputs[3] < 0) &&
          count_op(o.opt->g, "Add") == 1 && count_op(o.opt->g, "Relu") == 1);
    precis_model_destroy(o.opt);
}

/* deconv_s2d. v0: ConvTranspose 2x2 stride 2 + bias, Sigmoid, scalar Add
 * (the whole pipeline: FusedConv 1x1 with act Sigmoid, act2 Affine, then
 * DepthToSpace); v1: 3x3 stride 2 (overlapping): untouched; v2: 3x3 stride
 * 3, no bias, a per-channel Mul and a Relu after it, the Relu's output also a
 * graph output of its own: DepthToSpace sinks past both. */
static void build_deconv(tb *b, int v) {
    tb_begin(b, 13);
    int64_t k = v == 0 ? 2 : 3, s = v == 1 ? 2 : k;
    int64_t dx[4] = {2, 6, 5, 7}, dw[4] = {6, 4, k, k}, dc[1] = {4}, d1c11[4] = {1, 4, 1, 1};
    tb_in(b, "x", 4, dx);
    tb_const(b, "W", 4, dw, NULL);
    tb_const(b, "B", 1, dc, NULL);
    int n = tb_node(b, "ConvTranspose", "deconv", v == 2 ? "x W" : "x W B", "y");
    tb_is(b, n, "strides", (int64_t[]){s, s}, 2);
    tb_is(b, n, "kernel_shape", (int64_t[]){k, k}, 2);
    if (v == 2) {
        tb_const(b, "m", 4, d1c11, NULL);
        tb_node(b, "Mul", "mul", "y m", "y1");
        tb_node(b, "Relu", "relu", "y1", "out");
    } else {
        tb_node(b, "Sigmoid", "sig", "y", "y1");
        tb_scalar(b, "c", 0.5f);
        tb_node(b, "Add", "add", "y1 c", "out");
    }
    tb_out(b, "out");
}

static void test_deconv_s2d(void) {
    outcome o = run_case(build_deconv, 0, NULL);
    report("deconv 2x2 s2 pipeline", &o);
    POSITIVE(o);
    const pr_node *f = find_op(o.opt->g, "FusedConv");
    CHECK(o.after == 2 && count_op(o.opt->g, "DepthToSpace") == 1 && f &&
          !strcmp(act_of(f, "act"), "Sigmoid") && !strcmp(act_of(f, "act2"), "Affine"));
    CHECK(origins_are(f, "deconv", "sig", "add", NULL));
    precis_model_destroy(o.opt);
    o = run_case(build_deconv, 1, &pr_pass_deconv_s2d);
    CHECK(o.ok && o.changes == 0 && count_op(o.opt->g, "ConvTranspose") == 1);
    precis_model_destroy(o.opt);
    o = run_case(build_deconv, 2, &pr_pass_deconv_s2d);
    report("deconv 3x3 s3 + mul + relu", &o);
    CHECK(o.ok && o.rel <= 1e-5);
    const pr_graph *g = o.opt->g;
    CHECK(o.after == 4 && count_op(g, "ConvTranspose") == 0 && count_op(g, "Conv") == 1 &&
          g->nodes[g->n_nodes - 1].op == PR_OP_DepthToSpace);
    precis_model_destroy(o.opt);
}

/* v0: x*a + b -> Conv 1x1 (no pads): both absorbed; v1: grouped 3x3 conv
 * without pads, per-channel a and b; v2: padded conv: the Add stays (and the
 * Mul before it); v3: the Mul output also read elsewhere: only the Add. */
static void build_conv_in(tb *b, int v) {
    tb_begin(b, 13);
    int64_t dx[4] = {2, 4, 5, 5}, d1c11[4] = {1, 4, 1, 1};
    int64_t dw0[4] = {6, 4, 1, 1}, dw1[4] = {6, 2, 3, 3}, dc[1] = {6};
    tb_in(b, "x", 4, dx);
    tb_const(b, "a", 4, d1c11, NULL);
    tb_node(b, "Mul", "mul", "x a", "xa");
    if (v == 1)
        tb_const(b, "bb", 4, d1c11, NULL);
    else
        tb_scalar(b, "bb", 0.75f);
    tb_node(b, "Add", "add", "xa bb", "xb");
    tb_const(b, "W", 4, v == 0 ? dw0 : dw1, NULL);
    tb_const(b, "B", 1, dc, NULL);
    int n = tb_node(b, "Conv", "conv", "xb W B", "y");
    if (v >= 1) tb_i(b, n, "group", 2);
    if (v == 2) tb_is(b, n, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    tb_node(b, "Relu", "relu", "y", "out");
    tb_out(b, "out");
    if (v == 3) {
        tb_node(b, "Neg", "other", "xa", "o2");
        tb_out(b, "o2");
    }
}

static void test_conv_input_affine(void) {
    outcome o = run_case(build_conv_in, 0, &pr_pass_fuse_conv);
    report("conv input affine", &o);
    POSITIVE(o);
    const pr_node *f = find_op(o.opt->g, "FusedConv");
    CHECK(o.after == 1 && f && !strcmp(o.opt->g->tensors[f->inputs[0]].name, "x"));
    CHECK(origins_are(f, "mul", "add", "conv", "relu", NULL));
    precis_model_destroy(o.opt);
    o = run_case(build_conv_in, 1, &pr_pass_fuse_conv);
    report("conv input affine grouped", &o);
    POSITIVE(o);
    CHECK(o.after == 1);
    precis_model_destroy(o.opt);
    o = run_case(build_conv_in, 2, &pr_pass_fuse_conv);
    POSITIVE(o);
    CHECK(o.after == 3 && count_op(o.opt->g, "Mul") == 1 && count_op(o.opt->g, "Add") == 1);
    precis_model_destroy(o.opt);
    o = run_case(build_conv_in, 3, &pr_pass_fuse_conv);
    POSITIVE(o);
    f = find_op(o.opt->g, "FusedConv");
    CHECK(o.after == 3 && count_op(o.opt->g, "Add") == 0 && count_op(o.opt->g, "Mul") == 1 &&
          origins_are(f, "add", "conv", "relu", NULL));
    precis_model_destroy(o.opt);
}

/* ------------------------------------------------------------- fuse_matmul */

enum {
    M_FULL,       /* MatMul + bias + Gelu + residual + Relu */
    M_GEMM,       /* Gemm(transA, transB, alpha, beta, C[N]) + Relu */
    M_GEMM_FULLC, /* Gemm with C [M, N] */
    M_ATTN_DIV,   /* MatMul(a, b) / 8 */
    M_ATTN_PRE,   /* MatMul(a * 0.25, b) */
    M_SCALE,      /* MatMul + Mul [N] + Sub [N] + Tanh */
    M_NEG_ATTN,   /* MatMul(a, b) + Relu: stays */
    M_NEG_TWO_USES,
    M_COUNT
};

static void build_mm(tb *b, int v) {
    tb_begin(b, 20);
    int64_t da[3] = {2, 3, 8}, dw[2] = {8, 5}, dn[1] = {5}, dy[3] = {2, 3, 5};
    switch (v) {
    case M_FULL:
    case M_NEG_TWO_USES:
        tb_in(b, "a", 3, da);
        tb_const(b, "W", 2, dw, NULL);
        tb_node(b, "MatMul", "mm", "a W", "y");
        tb_const(b, "bias", 1, dn, NULL);
        tb_node(b, "Add", "badd", "bias y", "y1");
        if (v == M_NEG_TWO_USES) { /* y also read by Neg: the bias Add stays */
            tb_node(b, "Relu", "act", "y1", "out");
            tb_node(b, "Neg", "other", "y", "o2");
            tb_out(b, "o2");
            break;
        }
        tb_node(b, "Gelu", "gelu", "y1", "y2");
        tb_in(b, "z", 3, dy);
        tb_node(b, "Add", "res", "y2 z", "y3");
        tb_node(b, "Relu", "relu", "y3", "out");
        break;
    case M_GEMM:
    case M_GEMM_FULLC: {
        int64_t dat[2] = {8, 4}, dwt[2] = {5, 8}, dc[2] = {4, 5};
        tb_in(b, "a", 2, dat);
        tb_const(b, "W", 2, dwt, NULL);
        if (v == M_GEMM)
            tb_const(b, "C", 1, dn, NULL);
        else
            tb_const(b, "C", 2, dc, NULL);
        int n = tb_node(b, "Gemm", "gemm", "a W C", "y");
        tb_i(b, n, "transA", 1);
        tb_i(b, n, "transB", 1);
        tb_f(b, n, "alpha", 0.5f);
        tb_f(b, n, "beta", 2.0f);
        tb_node(b, "Relu", "relu", "y", "out");
        break;
    }
    case M_ATTN_DIV:
    case M_ATTN_PRE:
    case M_NEG_ATTN: {
        int64_t dq[4] = {2, 2, 3, 4}, dk[4] = {2, 2, 4, 3};
        tb_in(b, "q", 4, dq);
        tb_in(b, "k", 4, dk);
        if (v == M_ATTN_PRE) {
            tb_const(b, "s", 1, (int64_t[]){1}, (float[]){0.25f});
            tb_node(b, "Mul", "pre", "q s", "q1");
            tb_node(b, "MatMul", "mm", "q1 k", "out");
        } else if (v == M_ATTN_DIV) {
            tb_node(b, "MatMul", "mm", "q k", "y");
            tb_scalar(b, "eight", 8.0f);
            tb_node(b, "Div", "div", "y eight", "out");
        } else {
            tb_node(b, "MatMul", "mm", "q k", "y");
            tb_node(b, "Relu", "relu", "y", "out");
        }
        break;
    }
    case M_SCALE:
        tb_in(b, "a", 3, da);
        tb_const(b, "W", 2, dw, NULL);
        tb_node(b, "MatMul", "mm", "a W", "y");
        tb_const(b, "sc", 1, dn, NULL);
        tb_node(b, "Mul", "mul", "y sc", "y1");
        tb_const(b, "sh", 3, (int64_t[]){1, 1, 5}, NULL);
        tb_node(b, "Sub", "sub", "y1 sh", "y2");
        tb_node(b, "Tanh", "tanh", "y2", "out");
        break;
    }
    tb_out(b, "out");
}

static void test_fuse_matmul(void) {
    outcome o = run_case(build_mm, M_FULL, &pr_pass_fuse_matmul);
    report("mm full", &o);
    POSITIVE(o);
    const pr_node *f = find_op(o.opt->g, "FusedMatMul");
    CHECK(o.after == 1 && f && pr_node_in(f, 2) >= 0 && pr_node_in(f, 3) >= 0);
    CHECK(!strcmp(act_of(f, "act"), "Gelu") && !strcmp(act_of(f, "act2"), "Relu"));
    CHECK(origins_are(f, "mm", "badd", "gelu", "res", "relu", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_GEMM, &pr_pass_fuse_matmul);
    report("mm gemm", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "FusedMatMul");
    CHECK(o.after == 1 && f && pr_attr_int(f, "transA", 0) == 1 &&
          pr_attr_int(f, "transB", 0) == 1);
    CHECK(f && pr_attr_float(f, "alpha", 0) == 0.5f && !strcmp(act_of(f, "act"), "Relu"));
    CHECK(origins_are(f, "gemm", "relu", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_GEMM_FULLC, &pr_pass_fuse_matmul);
    report("mm gemm full C", &o);
    POSITIVE(o);
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_ATTN_DIV, &pr_pass_fuse_matmul);
    report("mm attn div", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "FusedMatMul");
    CHECK(o.after == 1 && f && pr_attr_float(f, "alpha", 0) == 0.125f);
    CHECK(origins_are(f, "mm", "div", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_ATTN_PRE, &pr_pass_fuse_matmul);
    report("mm attn pre", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "FusedMatMul");
    CHECK(o.after == 1 && f && pr_attr_float(f, "alpha", 0) == 0.25f);
    CHECK(origins_are(f, "pre", "mm", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_SCALE, &pr_pass_fuse_matmul);
    report("mm scale", &o);
    POSITIVE(o);
    CHECK(o.after == 1 &&
          origins_are(find_op(o.opt->g, "FusedMatMul"), "mm", "mul", "sub", "tanh", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_NEG_ATTN, &pr_pass_fuse_matmul);
    CHECK(o.ok && o.after == 2 && count_op(o.opt->g, "MatMul") == 1 && o.changes == 0);
    precis_model_destroy(o.opt);

    o = run_case(build_mm, M_NEG_TWO_USES, &pr_pass_fuse_matmul);
    f = find_op(o.opt->g, "FusedMatMul");
    CHECK(o.ok && o.rel <= 1e-5 && o.after == 4 && f && pr_node_in(f, 2) < 0 &&
          act_of(f, "act")[0] == 0 && count_op(o.opt->g, "Add") == 1 &&
          count_op(o.opt->g, "Relu") == 1);
    precis_model_destroy(o.opt);
}

/* ---------------------------------------------------------- fuse_layernorm */

enum { L_POW, L_MULSELF, L_NOAFFINE, L_OPSET18, L_NEG_AXIS, L_NEG_OUTPUT, L_NEG_GAMMA_BCAST };

static void build_ln(tb *b, int v) {
    tb_begin(b, v == L_OPSET18 ? 18 : 13);
    int64_t dx[3] = {2, 3, 6}, dd[1] = {6};
    tb_in(b, "x", 3, dx);
    int64_t ax = v == L_NEG_AXIS ? 1 : -1;
    int r1, r2;
    if (v == L_OPSET18) {
        tb_consti(b, "axes", 1, &ax);
        r1 = tb_node(b, "ReduceMean", "rm1", "x axes", "m");
    } else {
        r1 = tb_node(b, "ReduceMean", "rm1", "x", "m");
        tb_is(b, r1, "axes", &ax, 1);
    }
    tb_node(b, "Sub", "sub", "x m", "d");
    if (v == L_MULSELF) {
        tb_node(b, "Mul", "sq", "d d", "q");
    } else {
        tb_scalar(b, "two", 2.0f);
        tb_node(b, "Pow", "sq", "d two", "q");
    }
    if (v == L_OPSET18) {
        r2 = tb_node(b, "ReduceMean", "rm2", "q axes", "var");
    } else {
        r2 = tb_node(b, "ReduceMean", "rm2", "q", "var");
        tb_is(b, r2, "axes", &ax, 1);
    }
    tb_scalar(b, "eps", 1e-5f);
    tb_node(b, "Add", "addeps", "var eps", "ve");
    tb_node(b, "Sqrt", "sqrt", "ve", "sd");
    tb_node(b, "Div", "div", "d sd", "n");
    if (v == L_NOAFFINE) {
        tb_node(b, "Relu", "after", "n", "out");
    } else {
        if (v == L_NEG_GAMMA_BCAST)
            tb_const(b, "gamma", 3, (int64_t[]){1, 3, 1}, NULL);
        else
            tb_const(b, "gamma", 1, dd, NULL);
        tb_node(b, "Mul", "mulg", "gamma n", "ng");
        tb_const(b, "beta", 1, dd, NULL);
        tb_node(b, "Add", "addb", "ng beta", "out");
    }
    tb_out(b, "out");
    if (v == L_NEG_OUTPUT) tb_out(b, "d");
}

static void test_layernorm(void) {
    int pos[] = {L_POW, L_MULSELF, L_NOAFFINE, L_OPSET18};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        outcome o = run_case(build_ln, pos[i], &pr_pass_fuse_layernorm);
        report("layernorm", &o);
        POSITIVE(o);
        const pr_node *f = find_op(o.opt->g, "LayerNormalization");
        CHECK(f && pr_attr_int(f, "axis", 0) == -1 && pr_attr_float(f, "epsilon", 0) == 1e-5f);
        if (pos[i] == L_NOAFFINE) {
            CHECK(o.after == 2 &&
                  origins_are(f, "rm1", "sub", "sq", "rm2", "addeps", "sqrt", "div", NULL));
        } else {
            CHECK(o.after == 1 && origins_are(f, "rm1", "sub", "sq", "rm2", "addeps", "sqrt", "div",
                                              "mulg", "addb", NULL));
        }
        CHECK(f && f->n_inputs == 3 && o.opt->g->tensors[f->inputs[1]].rank == 1 &&
              o.opt->g->tensors[f->inputs[1]].dims[0] == 6);
        precis_model_destroy(o.opt);
    }
    int neg[] = {L_NEG_AXIS, L_NEG_OUTPUT};
    for (size_t i = 0; i < sizeof neg / sizeof neg[0]; i++) {
        outcome o = run_case(build_ln, neg[i], &pr_pass_fuse_layernorm);
        CHECK(o.ok && o.after == o.before && count_op(o.opt->g, "LayerNormalization") == 0);
        precis_model_destroy(o.opt);
    }
    /* gamma that is not along the last axis stays a Mul (and beta an Add) */
    outcome o = run_case(build_ln, L_NEG_GAMMA_BCAST, &pr_pass_fuse_layernorm);
    POSITIVE(o);
    CHECK(count_op(o.opt->g, "LayerNormalization") == 1 && count_op(o.opt->g, "Mul") == 1 &&
          count_op(o.opt->g, "Add") == 1);
    precis_model_destroy(o.opt);
}

/* --------------------------------------------------------------- fuse_gelu */

enum { G_ERF1, G_ERF2, G_ERF3, G_ERF_MUL, G_TANH_POW, G_TANH_MUL, G_NEG_CONST, G_NEG_USE };

static void build_gelu(tb *b, int v) {
    tb_begin(b, 13);
    int64_t dx[2] = {3, 7};
    tb_in(b, "x", 2, dx);
    tb_scalar(b, "half", 0.5f);
    tb_scalar(b, "one", 1.0f);
    if (v == G_TANH_POW || v == G_TANH_MUL) {
        tb_scalar(b, "c1", 0.044715f);
        tb_scalar(b, "c2", 0.7978845608f);
        if (v == G_TANH_POW) {
            tb_scalar(b, "three", 3.0f);
            tb_node(b, "Pow", "cube", "x three", "x3");
        } else {
            tb_node(b, "Mul", "sq", "x x", "x2");
            tb_node(b, "Mul", "cube", "x x2", "x3");
        }
        tb_node(b, "Mul", "m1", "x3 c1", "t1");
        tb_node(b, "Add", "a1", "x t1", "t2");
        tb_node(b, "Mul", "m2", "c2 t2", "t3");
        tb_node(b, "Tanh", "tanh", "t3", "e");
    } else {
        if (v == G_ERF_MUL) {
            tb_scalar(b, "isq2", 0.70710678f);
            tb_node(b, "Mul", "scale", "x isq2", "d");
        } else {
            tb_scalar(b, "sq2", v == G_NEG_CONST ? 1.6f : 1.4142135f);
            tb_node(b, "Div", "scale", "x sq2", "d");
        }
        tb_node(b, "Erf", "erf", "d", "e");
        if (v == G_NEG_USE) {
            tb_node(b, "Neg", "other", "e", "o2");
            tb_out(b, "o2");
        }
    }
    tb_node(b, "Add", "plus1", "one e", "a");
    if (v == G_ERF2) { /* x * (a * 0.5) */
        tb_node(b, "Mul", "h", "a half", "p");
        tb_node(b, "Mul", "out_mul", "x p", "out");
    } else if (v == G_ERF3) { /* (x * 0.5) * a */
        tb_node(b, "Mul", "h", "half x", "p");
        tb_node(b, "Mul", "out_mul", "p a", "out");
    } else { /* (x * a) * 0.5 */
        tb_node(b, "Mul", "h", "x a", "p");
        tb_node(b, "Mul", "out_mul", "p half", "out");
    }
    tb_out(b, "out");
}

static void test_gelu(void) {
    int pos[] = {G_ERF1, G_ERF2, G_ERF3, G_ERF_MUL, G_TANH_POW, G_TANH_MUL};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        outcome o = run_case(build_gelu, pos[i], &pr_pass_fuse_gelu);
        report("gelu", &o);
        POSITIVE(o);
        const pr_node *f = find_op(o.opt->g, "Gelu");
        bool tanh = pos[i] == G_TANH_POW || pos[i] == G_TANH_MUL;
        CHECK(o.after == 1 && f &&
              !strcmp(pr_attr_str(f, "approximate", ""), tanh ? "tanh" : "none"));
        CHECK(f && f->n_inputs == 1 && !strcmp(o.opt->g->tensors[f->inputs[0]].name, "x"));
        CHECK(f && f->n_origins >= 5 && !strcmp(f->origins[f->n_origins - 1], "out_mul"));
        if (pos[i] == G_ERF3) CHECK(origins_are(f, "scale", "erf", "plus1", "h", "out_mul", NULL));
        precis_model_destroy(o.opt);
    }
    int neg[] = {G_NEG_CONST, G_NEG_USE};
    for (size_t i = 0; i < sizeof neg / sizeof neg[0]; i++) {
        outcome o = run_case(build_gelu, neg[i], &pr_pass_fuse_gelu);
        CHECK(o.ok && o.after == o.before && count_op(o.opt->g, "Gelu") == 0);
        precis_model_destroy(o.opt);
    }
}

/* ---------------------------------------------------------- fuse_attention */

enum {
    A_BERT,     /* Transpose(k, [0,2,3,1]), MatMul, Div, Add(mask input), Softmax, MatMul */
    A_SVTR,     /* opset 12: q * s, MatMul(., Transpose(k, [0,1,3,2])), Softmax(axis 3), MatMul */
    A_KT,       /* MatMul(q, kT input), Softmax, MatMul: k_transposed 1 */
    A_CMASK,    /* MatMul, Add(constant [Sk] mask), Softmax, MatMul */
    A_NEG_PUSE, /* the probabilities are also a graph output */
    A_NEG_SUSE, /* the scores have a second consumer */
    A_NEG_AXIS, /* Softmax over axis 2 */
    A_NEG_OLD,  /* opset 11 Softmax with its default axis 1: a 2-D coercion */
};

static void build_attn(tb *b, int v) {
    bool old = v == A_SVTR || v == A_NEG_OLD;
    tb_begin(b, v == A_SVTR ? 12 : old ? 11 : 13);
    int64_t dq[4] = {2, 2, 5, 8}, dv[4] = {2, 2, 6, 4};
    tb_in(b, "q", 4, dq);
    tb_in(b, "v", 4, dv);
    const char *scores = "s";
    switch (v) {
    case A_BERT: {
        tb_in(b, "k", 4, (int64_t[]){2, 6, 2, 8});
        int t = tb_node(b, "Transpose", "tr", "k", "kt");
        tb_is(b, t, "perm", (int64_t[]){0, 2, 3, 1}, 4);
        tb_node(b, "MatMul", "mm", "q kt", "s0");
        tb_scalar(b, "sqd", 2.828427f);
        tb_node(b, "Div", "div", "s0 sqd", "s1");
        tb_in(b, "mask", 4, (int64_t[]){2, 1, 1, 6});
        tb_node(b, "Add", "add", "s1 mask", "s");
        break;
    }
    case A_SVTR: {
        tb_in(b, "k", 4, (int64_t[]){2, 2, 6, 8});
        tb_scalar(b, "qs", 0.25f);
        tb_node(b, "Mul", "pre", "q qs", "q1");
        int t = tb_node(b, "Transpose", "tr", "k", "kt");
        tb_is(b, t, "perm", (int64_t[]){0, 1, 3, 2}, 4);
        tb_node(b, "MatMul", "mm", "q1 kt", "s");
        break;
    }
    case A_CMASK:
        tb_in(b, "kt", 4, (int64_t[]){2, 2, 8, 6});
        tb_node(b, "MatMul", "mm", "q kt", "s0");
        tb_const(b, "cmask", 1, (int64_t[]){6}, (float[]){0, -1e4f, 0, 0, -2, 0});
        tb_node(b, "Add", "add", "cmask s0", "s");
        break;
    default:
        tb_in(b, "kt", 4, (int64_t[]){2, 2, 8, 6});
        tb_node(b, "MatMul", "mm", "q kt", "s");
        if (v == A_NEG_SUSE) {
            tb_node(b, "Neg", "other", "s", "o2");
            tb_out(b, "o2");
        }
        break;
    }
    int sm = tb_node(b, "Softmax", "softmax", scores, "p");
    if (v == A_SVTR) tb_i(b, sm, "axis", 3);
    if (v == A_NEG_AXIS) tb_i(b, sm, "axis", 2);
    if (v == A_NEG_PUSE) tb_out(b, "p");
    tb_node(b, "MatMul", "mm2", "p v", "out");
    tb_out(b, "out");
}

static void test_attention(void) {
    /* the whole pipeline: the scale comes through fuse_matmul's alpha */
    outcome o = run_case(build_attn, A_BERT, NULL);
    report("attention bert", &o);
    POSITIVE(o);
    const pr_node *f = find_op(o.opt->g, "Attention"), *t = find_op(o.opt->g, "Transpose");
    const int64_t *perm = NULL;
    CHECK(o.after == 2 && f && t && f->n_inputs == 4 && pr_attr_int(f, "k_transposed", 1) == 0);
    CHECK(f && pr_near(pr_attr_float(f, "scale", 0), 1 / 2.828427, 1e-6));
    CHECK(t && pr_attr_ints(t, "perm", &perm) == 4 && perm[1] == 2 && perm[2] == 1 && perm[3] == 3);
    CHECK(origins_are(f, "mm", "div", "add", "softmax", "mm2", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_attn, A_SVTR, NULL);
    report("attention svtr", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "Attention");
    CHECK(o.after == 1 && f && f->n_inputs == 3 && pr_attr_int(f, "k_transposed", 1) == 0);
    CHECK(f && pr_attr_float(f, "scale", 0) == 0.25f &&
          !strcmp(o.opt->g->tensors[f->inputs[1]].name, "k"));
    CHECK(origins_are(f, "tr", "pre", "mm", "softmax", "mm2", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_attn, A_KT, &pr_pass_fuse_attention);
    report("attention k^T", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "Attention");
    CHECK(o.after == 1 && f && pr_attr_int(f, "k_transposed", 0) == 1 &&
          pr_attr_float(f, "scale", 0) == 1.0f);
    CHECK(origins_are(f, "mm", "softmax", "mm2", NULL));
    precis_model_destroy(o.opt);

    o = run_case(build_attn, A_CMASK, &pr_pass_fuse_attention);
    report("attention constant mask", &o);
    POSITIVE(o);
    f = find_op(o.opt->g, "Attention");
    CHECK(o.after == 1 && f && f->n_inputs == 4 && pr_is_init(o.opt->g, f->inputs[3]));
    precis_model_destroy(o.opt);

    int neg[] = {A_NEG_PUSE, A_NEG_SUSE, A_NEG_AXIS, A_NEG_OLD};
    for (size_t i = 0; i < sizeof neg / sizeof neg[0]; i++) {
        o = run_case(build_attn, neg[i], &pr_pass_fuse_attention);
        CHECK(o.ok && o.rel == 0 && o.changes == 0 && count_op(o.opt->g, "Attention") == 0 &&
              count_op(o.opt->g, "Softmax") == 1);
        precis_model_destroy(o.opt);
    }
}

/* --------------------------------------------------------------- pipeline */

/* A small network touching every pass: Constant-fed bias, Conv + BN + Relu,
 * decomposed LayerNorm over the last axis, MatMul + bias + decomposed GELU,
 * a residual, and a dead branch. */
static void build_net(tb *b, int v) {
    (void)v;
    tb_begin(b, 13);
    int64_t dx[4] = {1, 3, 4, 8}, dw[4] = {4, 3, 1, 1}, dc[1] = {4}, d8[1] = {8}, dm[2] = {8, 8};
    tb_in(b, "x", 4, dx);
    tb_const(b, "W", 4, dw, NULL);
    tb_node(b, "Conv", "conv", "x W", "c");
    tb_const(b, "s", 1, dc, NULL);
    tb_const(b, "bb", 1, dc, NULL);
    tb_const(b, "mean", 1, dc, NULL);
    tb_const(b, "var", 1, dc, (float[]){1, 2, 3, 4});
    tb_node(b, "BatchNormalization", "bn", "c s bb mean var", "cb");
    tb_node(b, "Relu", "relu", "cb", "h");
    int64_t ax = -1;
    int r1 = tb_node(b, "ReduceMean", "rm1", "h", "m");
    tb_is(b, r1, "axes", &ax, 1);
    tb_node(b, "Sub", "sub", "h m", "d");
    tb_node(b, "Mul", "sq", "d d", "q");
    int r2 = tb_node(b, "ReduceMean", "rm2", "q", "var2");
    tb_is(b, r2, "axes", &ax, 1);
    tb_scalar(b, "eps", 1e-6f);
    tb_node(b, "Add", "addeps", "var2 eps", "ve");
    tb_node(b, "Sqrt", "sqrt", "ve", "sd");
    tb_node(b, "Div", "div", "d sd", "ln");
    tb_const(b, "M", 2, dm, NULL);
    tb_node(b, "MatMul", "mm", "ln M", "p");
    tb_const(b, "b0", 1, d8, NULL);
    tb_const(b, "b1", 1, d8, NULL);
    tb_node(b, "Add", "cbias", "b0 b1", "bias"); /* folded */
    tb_node(b, "Add", "badd", "p bias", "pb");
    tb_scalar(b, "sq2", 1.4142135f);
    tb_scalar(b, "one", 1.0f);
    tb_scalar(b, "half", 0.5f);
    tb_node(b, "Div", "gdiv", "pb sq2", "gd");
    tb_node(b, "Erf", "gerf", "gd", "ge");
    tb_node(b, "Add", "gadd", "ge one", "ga");
    tb_node(b, "Mul", "gmul", "pb ga", "gm");
    tb_node(b, "Mul", "gmul2", "gm half", "g");
    tb_node(b, "Add", "res", "g h", "out");
    tb_node(b, "Sigmoid", "dead", "x", "unused");
    tb_out(b, "out");
}

static void test_pipeline(void) {
    outcome o = run_case(build_net, 0, NULL);
    report("pipeline", &o);
    POSITIVE(o);
    const pr_graph *g = o.opt->g;
    CHECK(g->n_nodes == 3);
    CHECK(count_op(g, "FusedConv") == 1 && count_op(g, "LayerNormalization") == 1 &&
          count_op(g, "FusedMatMul") == 1);
    const pr_node *f = find_op(g, "FusedMatMul");
    CHECK(f && !strcmp(act_of(f, "act"), "Gelu") && pr_node_in(f, 3) >= 0);
    CHECK(origins_are(f, "mm", "badd", "gdiv", "gerf", "gadd", "gmul", "gmul2", "res", NULL));
    CHECK(origins_are(find_op(g, "FusedConv"), "conv", "bn", "relu", NULL));
    precis_model_destroy(o.opt);
}

int main(void) {
    test_graph_edit();
    test_fold();
    test_static_shape();
    test_fold_bn();
    test_fuse_conv();
    test_conv_input_affine();
    test_deconv_s2d();
    test_fuse_matmul();
    test_layernorm();
    test_gelu();
    test_attention();
    test_pipeline();
    return check_report("test_passes");
}
