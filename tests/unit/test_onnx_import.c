/* ONNX import: fixture models (tests/data/make_fixtures.py), error paths,
 * and corruption (truncation, byte flips, deep nesting) that must never crash
 * or leak. Run from tests/ (ctest sets the working directory). */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_import.h"

#include "check.h"

#define FIX "data/fixtures/"

static pr_graph *load_ok(const char *path) {
    pr_err e = {0};
    pr_graph *g = NULL;
    precis_status st = pr_onnx_load_file(path, &g, &e);
    if (st) fprintf(stderr, "unexpected failure loading %s: %s\n", path, e.msg);
    CHECK(st == PRECIS_OK && g != NULL);
    return g;
}

/* Load must fail with status st and a message containing each of the
 * given substrings (NULL-terminated list). */
static void load_fails(const char *path, precis_status st, const char *s1, const char *s2) {
    pr_err e = {0};
    pr_graph *g = NULL;
    precis_status got = pr_onnx_load_file(path, &g, &e);
    CHECK(got == st);
    CHECK(g == NULL);
    CHECK(strchr(e.msg, '\n') == NULL && e.msg[0]);
    if (s1) CHECK(strstr(e.msg, s1) != NULL);
    if (s2) CHECK(strstr(e.msg, s2) != NULL);
    if (got != st || (s1 && !strstr(e.msg, s1)) || (s2 && !strstr(e.msg, s2)))
        fprintf(stderr, "  %s: status %d, message: %s\n", path, got, e.msg);
    pr_graph_destroy(g);
}

static int T(const pr_graph *g, const char *name) {
    int t = pr_graph_find_tensor(g, name);
    if (t < 0) fprintf(stderr, "no tensor '%s'\n", name);
    return t;
}

static int N(const pr_graph *g, const char *name) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name)) return i;
    fprintf(stderr, "no node '%s'\n", name);
    return -1;
}

static bool aligned(const pr_tensor *t) {
    size_t es = pr_dtype_size(t->dtype);
    return t->data && es && (uintptr_t)t->data % es == 0;
}

/* -------------------------------------------------------------- initializers */

static void check_inits(const char *path) {
    pr_graph *g = load_ok(path);
    if (!g) return;
    CHECK(g->n_inputs == 1 && !strcmp(g->tensors[g->inputs[0]].name, "X"));
#define INIT(name, dt)                                                                             \
    const pr_tensor *name = &g->tensors[T(g, "w_" #name)];                                         \
    CHECK(name->flags &PR_T_INIT);                                                                 \
    CHECK(!(name->flags & PR_T_INPUT));                                                            \
    CHECK(name->dtype == dt && name->rank == 1 && name->dims[0] == 3);                             \
    CHECK(name->nbytes == 3 * pr_dtype_size(dt) && aligned(name));
    INIT(f32, PRECIS_FLOAT32);
    INIT(f64, PRECIS_FLOAT64);
    INIT(f16, PRECIS_FLOAT16);
    INIT(bf16, PRECIS_BFLOAT16);
    INIT(i8, PRECIS_INT8);
    INIT(u8, PRECIS_UINT8);
    INIT(i16, PRECIS_INT16);
    INIT(u16, PRECIS_UINT16);
    INIT(i32, PRECIS_INT32);
    INIT(u32, PRECIS_UINT32);
    INIT(i64, PRECIS_INT64);
    INIT(u64, PRECIS_UINT64);
    INIT(b, PRECIS_BOOL);
#undef INIT
    const float *pf = f32->data;
    CHECK(pf[0] == 1.5f && pf[1] == -2.25f && pf[2] == 3.0f);
    const double *pd = f64->data;
    CHECK(pd[0] == 1.5 && pd[1] == -2.25 && pd[2] == 1e300);
    const uint16_t *ph = f16->data;
    CHECK(pr_f16_to_f32(ph[0]) == 1.5f && pr_f16_to_f32(ph[1]) == -2.25f &&
          pr_f16_to_f32(ph[2]) == 65504.0f);
    const uint16_t *pb = bf16->data;
    CHECK(pr_bf16_to_f32(pb[0]) == 1.5f && pr_bf16_to_f32(pb[1]) == -2.25f &&
          pr_bf16_to_f32(pb[2]) == 3.0f);
    const int8_t *p8 = i8->data;
    CHECK(p8[0] == -128 && p8[1] == 0 && p8[2] == 127);
    const uint8_t *pu8 = u8->data;
    CHECK(pu8[0] == 0 && pu8[1] == 200 && pu8[2] == 255);
    const int16_t *p16 = i16->data;
    CHECK(p16[0] == -32768 && p16[1] == 7 && p16[2] == 32767);
    const uint16_t *pu16 = u16->data;
    CHECK(pu16[0] == 0 && pu16[1] == 40000 && pu16[2] == 65535);
    const int32_t *p32 = i32->data;
    CHECK(p32[0] == INT32_MIN && p32[1] == 5 && p32[2] == INT32_MAX);
    const uint32_t *pu32 = u32->data;
    CHECK(pu32[0] == 0 && pu32[1] == 3000000000u && pu32[2] == UINT32_MAX);
    const int64_t *p64 = i64->data;
    CHECK(p64[0] == INT64_MIN && p64[1] == 5 && p64[2] == INT64_MAX);
    const uint64_t *pu64 = u64->data;
    CHECK(pu64[0] == 0 && pu64[1] == (uint64_t)1 << 63 && pu64[2] == UINT64_MAX);
    const uint8_t *pbool = b->data;
    CHECK(pbool[0] == 1 && pbool[1] == 0 && pbool[2] == 1);

    const pr_tensor *m = &g->tensors[T(g, "w_2x3")];
    CHECK(m->rank == 2 && m->dims[0] == 2 && m->dims[1] == 3 && m->nbytes == 24);
    CHECK(((const float *)m->data)[5] == 5.0f);
    const pr_tensor *s = &g->tensors[T(g, "w_scalar")];
    CHECK(s->rank == 0 && s->dtype == PRECIS_INT64 && s->nbytes == 8 &&
          *(const int64_t *)s->data == 42);
    const pr_tensor *z = &g->tensors[T(g, "w_empty")];
    CHECK(z->rank == 2 && z->dims[0] == 0 && z->nbytes == 0 && (z->flags & PR_T_INIT));
    pr_graph_destroy(g);
}

/* ------------------------------------------------------------------ constant */

static void test_constant(void) {
    pr_graph *g = load_ok(FIX "constant.onnx");
    if (!g) return;
    CHECK(g->n_nodes == 7);
    int ct = T(g, "c_t"), n0 = N(g, "const_tensor");
    CHECK(n0 >= 0 && g->nodes[n0].op == PR_OP_Constant);
    CHECK(g->tensors[ct].producer == n0);
    CHECK(g->tensors[ct].flags & PR_T_INIT);
    CHECK(g->tensors[ct].dtype == PRECIS_FLOAT32 && g->tensors[ct].rank == 1 &&
          g->tensors[ct].dims[0] == 2);
    CHECK(((const float *)g->tensors[ct].data)[1] == 2.0f);
    const pr_tensor *cf = &g->tensors[T(g, "c_f")];
    CHECK((cf->flags & PR_T_INIT) && cf->rank == 0 && cf->dtype == PRECIS_FLOAT32 &&
          *(const float *)cf->data == 0.5f);
    CHECK(N(g, "Constant_1") >= 0); /* unnamed node gets "<op>_<index>" */
    const pr_tensor *cfs = &g->tensors[T(g, "c_fs")];
    CHECK(cfs->rank == 1 && cfs->dims[0] == 3 && ((const float *)cfs->data)[2] == 3.0f);
    CHECK(cfs->flags & PR_T_OUTPUT);
    const pr_tensor *ci = &g->tensors[T(g, "c_i")];
    CHECK(ci->dtype == PRECIS_INT64 && ci->rank == 0 && *(const int64_t *)ci->data == -7);
    const pr_tensor *cis = &g->tensors[T(g, "c_is")];
    CHECK(cis->dtype == PRECIS_INT64 && cis->rank == 1 && cis->dims[0] == 2 &&
          ((const int64_t *)cis->data)[1] == 5 && aligned(cis));
    pr_graph_destroy(g);
    load_fails(FIX "constant_value_string.onnx", PRECIS_ERR_UNSUPPORTED, "const_str",
               "value_string");
    load_fails(FIX "constant_value_strings.onnx", PRECIS_ERR_UNSUPPORTED, "const_str",
               "value_strings");
}

/* ------------------------------------------------------------- external data */

static void test_external(void) {
    pr_graph *g = load_ok(FIX "ext_good.onnx");
    if (g) {
        const pr_tensor *w = &g->tensors[T(g, "W")];
        CHECK((w->flags & PR_T_INIT) && w->rank == 2 && w->nbytes == 24 && aligned(w));
        CHECK(((const float *)w->data)[0] == 0.0f && ((const float *)w->data)[5] == 5.0f);
        pr_graph_destroy(g);
    }
    load_fails(FIX "ext_abs.onnx", PRECIS_ERR_PARSE, "'W'", "/etc/hostname");
    load_fails(FIX "ext_dotdot.onnx", PRECIS_ERR_PARSE, "'W'", "../fixtures/ext_weights.bin");
    load_fails(FIX "ext_missing.onnx", PRECIS_ERR_IO, "'W'", "no_such_weights.bin");
    load_fails(FIX "ext_short.onnx", PRECIS_ERR_IO, "'W'", "too short");
    load_fails(FIX "ext_badlen.onnx", PRECIS_ERR_PARSE, "'W'", "length 20");

    /* From memory: external data needs a base directory. */
    size_t len;
    unsigned char *buf = read_all(FIX "ext_good.onnx", &len);
    CHECK(buf != NULL);
    if (buf) {
        pr_err e = {0};
        pr_graph *m = NULL;
        CHECK(pr_onnx_load_memory(buf, len, NULL, &m, &e) == PRECIS_ERR_INVALID_ARG);
        CHECK(m == NULL && strstr(e.msg, "base directory") && strstr(e.msg, "'W'"));
        CHECK(pr_onnx_load_memory(buf, len, FIX, &m, &e) == PRECIS_OK && m);
        pr_graph_destroy(m);
        free(buf);
    }

    /* Symlinks: one leaving the model directory is refused, one inside is fine. */
    char dir[] = "/tmp/precis_ext_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char model[256], link[256], target[4096], inside[256];
    snprintf(model, sizeof model, "%s/m.onnx", dir);
    snprintf(link, sizeof link, "%s/link_weights.bin", dir);
    snprintf(inside, sizeof inside, "%s/real.bin", dir);
    buf = read_all(FIX "ext_link.onnx", &len);
    FILE *f = fopen(model, "wb");
    CHECK(buf && f);
    if (f) {
        if (buf) fwrite(buf, 1, len, f);
        fclose(f);
    }
    free(buf);
    CHECK(realpath(FIX "ext_weights.bin", target) != NULL);
    CHECK(symlink(target, link) == 0);
    load_fails(model, PRECIS_ERR_PARSE, "outside", "link_weights.bin");
    unlink(link);
    buf = read_all(FIX "ext_weights.bin", &len);
    f = fopen(inside, "wb");
    if (f) {
        if (buf) fwrite(buf, 1, len, f);
        fclose(f);
    }
    free(buf);
    CHECK(symlink("real.bin", link) == 0);
    g = load_ok(model);
    if (g) CHECK(((const float *)g->tensors[T(g, "W")].data)[4] == 4.0f);
    pr_graph_destroy(g);
    unlink(link);
    unlink(inside);
    unlink(model);
    rmdir(dir);
}

/* ------------------------------------------------------ shapes and metadata */

static void test_symbolic(void) {
    pr_graph *g = load_ok(FIX "symbolic.onnx");
    if (!g) return;
    const pr_tensor *x = &g->tensors[T(g, "X")];
    CHECK(x->rank == 4 && x->dtype == PRECIS_FLOAT32);
    CHECK(pr_dim_is_sym(x->dims[0]) && x->dims[0] == x->dims[3]);
    CHECK(!strcmp(g->syms[pr_dim_sym_index(x->dims[0])], "batch"));
    CHECK(x->dims[1] == 3 && x->dims[2] == PR_DIM_UNKNOWN);
    const pr_tensor *z = &g->tensors[T(g, "Z")];
    CHECK(z->rank == -1 && z->dtype == PRECIS_INT64);
    const pr_tensor *y = &g->tensors[T(g, "Y")];
    CHECK(y->rank == 2 && y->dims[0] == x->dims[0] && pr_dim_is_sym(y->dims[1]));
    CHECK(!strcmp(g->syms[pr_dim_sym_index(y->dims[1])], "seq"));
    CHECK(g->n_syms == 2);
    const pr_tensor *t = &g->tensors[T(g, "t")];
    CHECK(t->rank == 1 && t->dims[0] == 7); /* from value_info */
    CHECK(g->n_inputs == 2 && g->n_outputs == 2);
    CHECK(g->tensors[T(g, "Y")].flags & PR_T_OUTPUT);
    char buf[128];
    pr_shape_str(g, x->dtype, x->rank, x->dims, buf, sizeof buf);
    CHECK(!strcmp(buf, "float32[batch,3,?,batch]"));
    pr_graph_destroy(g);
}

static void test_init_as_input(void) {
    pr_graph *g = load_ok(FIX "init_as_input.onnx");
    if (!g) return;
    CHECK(g->ir_version == 3);
    CHECK(g->n_inputs == 1 && !strcmp(g->tensors[g->inputs[0]].name, "X"));
    const pr_tensor *w = &g->tensors[T(g, "W")];
    CHECK((w->flags & PR_T_INIT) && !(w->flags & PR_T_INPUT));
    CHECK(((const float *)w->data)[1] == 2.0f);
    CHECK(pr_graph_opset(g, "") == 9);
    CHECK(g->nodes[N(g, "add")].opset == 9);
    pr_graph_destroy(g);
}

static void test_metadata(void) {
    pr_graph *g = load_ok(FIX "metadata.onnx");
    if (!g) return;
    CHECK(!strcmp(g->producer_name, "precis-fixtures"));
    CHECK(!strcmp(g->producer_version, "1.2.3"));
    CHECK(!strcmp(g->domain, "org.precis.test"));
    CHECK(g->model_version == 42 && g->ir_version == 8);
    CHECK(!strcmp(g->doc, "a model with metadata"));
    CHECK(!strcmp(g->name, "meta_graph"));
    CHECK(g->n_opsets == 2 && pr_graph_opset(g, "ai.onnx") == 17 &&
          pr_graph_opset(g, "com.example") == 3);
    CHECK(g->n_metadata == 2);
    bool author = false, lic = false;
    for (int i = 0; i < g->n_metadata; i++) {
        if (!strcmp(g->metadata[i].key, "author")) author = !strcmp(g->metadata[i].value, "precis");
        if (!strcmp(g->metadata[i].key, "license")) lic = !strcmp(g->metadata[i].value, "MIT");
    }
    CHECK(author && lic);
    pr_graph_destroy(g);
}

/* ---------------------------------------------------------------- attributes */

static void test_attrs(void) {
    pr_graph *g = load_ok(FIX "attrs.onnx");
    if (!g) return;
    int ni = N(g, "all_kinds");
    if (ni < 0) {
        pr_graph_destroy(g);
        return;
    }
    const pr_node *n = &g->nodes[ni];
    CHECK(n->op == PR_OP_UNKNOWN && !strcmp(n->domain, "com.example") && n->opset == 3);
    CHECK(!strcmp(n->op_type, "Everything"));
    const pr_attr *a;
    CHECK(pr_attr_float(n, "a_float", 0) == 1.25f);
    CHECK(pr_attr_int(n, "a_int", 0) == -3);
    a = pr_attr_find(n, "a_string");
    CHECK(a && a->type == PR_ATTR_STRING && !strcmp(a->s, "hello") && a->s_len == 5);
    a = pr_attr_find(n, "a_tensor");
    CHECK(a && a->type == PR_ATTR_TENSOR && a->t && a->t->dtype == PRECIS_INT32 &&
          a->t->rank == 1 && ((const int32_t *)a->t->data)[1] == 8);
    a = pr_attr_find(n, "a_graph");
    CHECK(a && a->type == PR_ATTR_GRAPH && a->g && a->g->parent == g &&
          !strcmp(a->g->name, "g1") && a->g->n_nodes == 1 && a->g->n_inputs == 1);
    const float *fl;
    CHECK(pr_attr_floats(n, "a_floats", &fl) == 2 && fl[1] == 1.5f);
    const int64_t *is;
    CHECK(pr_attr_ints(n, "a_ints", &is) == 3 && is[2] == 3);
    a = pr_attr_find(n, "a_strings");
    CHECK(a && a->type == PR_ATTR_STRINGS && a->n == 2 && !strcmp(a->strings[1], "yz"));
    a = pr_attr_find(n, "a_tensors");
    CHECK(a && a->type == PR_ATTR_TENSORS && a->n == 2 && a->tensors[1].dtype == PRECIS_INT64 &&
          ((const int64_t *)a->tensors[1].data)[0] == 3);
    a = pr_attr_find(n, "a_graphs");
    CHECK(a && a->type == PR_ATTR_GRAPHS && a->n == 2 && !strcmp(a->graphs[1]->name, "g2") &&
          a->graphs[1]->nodes[0].op == pr_op_lookup("Abs"));
    a = pr_attr_find(n, "a_sparse");
    CHECK(a && a->type == PR_ATTR_SPARSE_TENSOR);
    a = pr_attr_find(n, "a_sparses");
    CHECK(a && a->type == PR_ATTR_SPARSE_TENSORS && a->n == 1);
    a = pr_attr_find(n, "a_tp");
    CHECK(a && a->type == PR_ATTR_TYPE_PROTO);
    a = pr_attr_find(n, "a_tps");
    CHECK(a && a->type == PR_ATTR_TYPE_PROTOS && a->n == 2);

    /* If with branches referring to the outer-scope tensor 'outer' */
    const pr_node *nif = &g->nodes[N(g, "if")];
    a = pr_attr_find(nif, "then_branch");
    CHECK(a && a->type == PR_ATTR_GRAPH && a->g && a->g->parent == g);
    if (a && a->g) {
        const pr_graph *sg = a->g;
        CHECK(sg->n_nodes == 1 && sg->n_outputs == 1);
        int o = pr_graph_find_tensor(sg, "outer");
        CHECK(o >= 0 && sg->tensors[o].producer == -1);
        CHECK(sg->nodes[0].opset == 17);
    }
    CHECK(g->n_subgraphs == 5);
    int gemm = N(g, "Gemm_3");
    CHECK(gemm >= 0 && g->nodes[gemm].op == pr_op_lookup("Gemm"));
    if (gemm >= 0) CHECK(pr_attr_float(&g->nodes[gemm], "alpha", 0) == 2.0f);
    pr_graph_destroy(g);
}

/* ------------------------------------------------------------ graph checks */

static void test_graph_checks(void) {
    pr_graph *g = load_ok(FIX "unsorted.onnx");
    if (g) {
        CHECK(g->n_nodes == 2 && !strcmp(g->nodes[0].name, "first") &&
              !strcmp(g->nodes[1].name, "second"));
        CHECK(g->tensors[T(g, "B")].producer == 0 && g->tensors[T(g, "Y")].producer == 1);
        pr_graph_destroy(g);
    }
    g = load_ok(FIX "unsorted_subgraph.onnx");
    if (g) {
        /* 'late' is only used inside a nested branch: still sorted first */
        CHECK(g->n_nodes == 2 && !strcmp(g->nodes[0].name, "late_neg") &&
              !strcmp(g->nodes[1].name, "if"));
        CHECK(g->tensors[T(g, "late")].producer == 0 && g->tensors[T(g, "Y")].producer == 1);
        pr_graph_destroy(g);
    }
    load_fails(FIX "subgraph_undefined.onnx", PRECIS_ERR_PARSE, "'ghost'", "subgraph 'then'");
    g = load_ok(FIX "unknown_op.onnx");
    if (g) {
        CHECK(g->nodes[0].op == PR_OP_UNKNOWN && !strcmp(g->nodes[0].domain, "com.vendor") &&
              !strcmp(g->nodes[0].op_type, "FancyOp") && g->nodes[0].opset == 0);
        pr_graph_destroy(g);
    }
    g = load_ok(FIX "optional_io.onnx");
    if (g) {
        const pr_node *n = &g->nodes[0];
        CHECK(n->n_inputs == 2 && n->inputs[1] == -1 && n->n_outputs == 2 && n->outputs[1] == -1);
        CHECK(n->op == PR_OP_Relu);
        pr_graph_destroy(g);
    }
    load_fails(FIX "cycle.onnx", PRECIS_ERR_PARSE, "cycle", NULL);
    load_fails(FIX "dup_producer.onnx", PRECIS_ERR_PARSE, "'Y'", "twice");
    load_fails(FIX "undefined_input.onnx", PRECIS_ERR_PARSE, "'nowhere'", "'add'");
    load_fails(FIX "unproduced_output.onnx", PRECIS_ERR_PARSE, "graph output 'Y'", NULL);
    load_fails(FIX "no_graph.onnx", PRECIS_ERR_PARSE, "no graph", NULL);
    load_fails(FIX "dims_overflow.onnx", PRECIS_ERR_OOM, "'W'", "too large");
    load_fails(FIX "dims_huge.onnx", PRECIS_ERR_OOM, "'W'", "too large");
    load_fails(FIX "short_typed.onnx", PRECIS_ERR_PARSE, "'W'", "float_data holds 2");
    load_fails(FIX "short_raw.onnx", PRECIS_ERR_PARSE, "'W'", "raw_data holds 11");
    load_fails(FIX "rank9_input.onnx", PRECIS_ERR_UNSUPPORTED, "'X'", "rank 9");
    load_fails(FIX "sequence_input.onnx", PRECIS_ERR_UNSUPPORTED, "'X'", "sequence");
    load_fails(FIX "no_such_model.onnx", PRECIS_ERR_IO,
               "cannot open 'data/fixtures/no_such_model.onnx': No such file or directory", NULL);
    load_fails(FIX, PRECIS_ERR_IO, "not a regular file", NULL);
    /* every message names the file */
    load_fails(FIX "cycle.onnx", PRECIS_ERR_PARSE, "data/fixtures/cycle.onnx", NULL);

    pr_err e = {0};
    static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x34};
    CHECK(pr_onnx_load_memory(junk, sizeof junk, NULL, &g, &e) == PRECIS_ERR_PARSE && !g);
    CHECK(!strcmp(e.msg, "not a valid ONNX model: protobuf decoding failed (truncated or garbled?)"));
    CHECK(pr_onnx_load_memory(junk, sizeof junk, NULL, &g, NULL) == PRECIS_ERR_PARSE && !g);
    CHECK(pr_onnx_load_file(FIX "attrs.onnx", &g, NULL) == PRECIS_OK && g);
    pr_graph_destroy(g);
    CHECK(pr_onnx_load_file(FIX "subgraph_undefined.onnx", &g, NULL) == PRECIS_ERR_PARSE && !g);
    CHECK(pr_onnx_load_memory("", 0, NULL, &g, &e) == PRECIS_ERR_PARSE && !g);
    CHECK(strstr(e.msg, "no graph") != NULL);
}

/* --------------------------------------------------------------- corruption */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* Never crash, never leak; a failure always has a one-line message. */
static int try_load(const unsigned char *b, size_t n) {
    pr_err e = {0};
    pr_graph *g = NULL;
    precis_status st = pr_onnx_load_memory(b, n, FIX, &g, &e);
    if (st == PRECIS_OK) {
        CHECK(g != NULL);
        pr_graph_destroy(g);
        return 1;
    }
    bool good = g == NULL && e.msg[0] && !strchr(e.msg, '\n') && e.status == st;
    if (!good) fprintf(stderr, "bad failure: st %d e.status %d msg [%s]\n", st, e.status, e.msg);
    if (!good) CHECK(good);
    return 0;
}

static void test_corruption(void) {
    static const char *files[] = {FIX "attrs.onnx", FIX "typed_init.onnx", FIX "raw_init.onnx",
                                  FIX "constant.onnx", FIX "ext_good.onnx", FIX "symbolic.onnx",
                                  FIX "metadata.onnx"};
    int loaded = 0, total = 0;
    for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
        size_t len;
        unsigned char *buf = read_all(files[fi], &len);
        CHECK(buf != NULL);
        if (!buf) continue;
        CHECK(try_load(buf, len) == 1);
        /* every truncation: exact-size copies so ASan sees overreads */
        for (size_t n = 0; n < len; n++) {
            unsigned char *c = malloc(n ? n : 1);
            if (n) memcpy(c, buf, n);
            loaded += try_load(c, n);
            total++;
            free(c);
        }
        /* random byte flips */
        unsigned char *c = malloc(len);
        for (int it = 0; it < 1500; it++) {
            memcpy(c, buf, len);
            int flips = 1 + (int)(rnd() % 4);
            for (int k = 0; k < flips; k++) {
                size_t pos = (size_t)(rnd() % len);
                switch (rnd() % 3) {
                case 0: c[pos] ^= (unsigned char)(1u << (rnd() % 8)); break;
                case 1: c[pos] = (unsigned char)rnd(); break;
                default: c[pos] = (unsigned char)(rnd() % 2 ? 0xff : 0x00); break;
                }
            }
            loaded += try_load(c, len);
            total++;
        }
        free(c);
        free(buf);
    }
    fprintf(stderr, "corruption: %d of %d corrupted models still loaded\n", loaded, total);
}

/* Messages nested far deeper than any real model. */
static void test_deep_nesting(void) {
    /* Build graph{node{attribute{g: graph{node{...}}}}} from the inside out:
     * GraphProto.node = 1, NodeProto.attribute = 5, AttributeProto.g = 6,
     * ModelProto.graph = 7. */
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = malloc(cap), *t = malloc(cap);
    for (int level = 0; level < 300 && len + 16 < cap; level++) {
        static const unsigned char tags[3] = {(6 << 3) | 2, (5 << 3) | 2, (1 << 3) | 2};
        unsigned char tag = tags[level % 3];
        size_t h = 0;
        t[h++] = tag;
        size_t v = len;
        do {
            t[h++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            v >>= 7;
        } while (v);
        memcpy(t + h, b, len);
        memcpy(b, t, h + len);
        len += h;
    }
    size_t h = 0;
    t[h++] = (7 << 3) | 2;
    size_t v = len;
    do {
        t[h++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    memcpy(t + h, b, len);
    pr_err e = {0};
    pr_graph *g = NULL;
    CHECK(pr_onnx_load_memory(t, h + len, NULL, &g, &e) == PRECIS_ERR_UNSUPPORTED && !g);
    CHECK(strstr(e.msg, "nested") != NULL);
    free(b);
    free(t);
}

/* -------------------------------------------------------------- tensor files */

static precis_tensor *tensor_ok(const char *path) {
    pr_err e = {0};
    precis_tensor *t = NULL;
    precis_status st = pr_onnx_load_tensor_file(path, &t, &e);
    if (st) fprintf(stderr, "unexpected failure loading %s: %s\n", path, e.msg);
    CHECK(st == PRECIS_OK && t);
    return t;
}

static void test_tensor_files(void) {
    precis_tensor *t = tensor_ok(FIX "tensor_f32.pb");
    if (t) {
        CHECK(t->b.dtype == PRECIS_FLOAT32 && t->b.rank == 2 && t->b.dims[1] == 3 &&
              t->b.numel == 6 && ((const float *)t->b.data)[5] == 2.5f);
        precis_tensor_destroy(t);
    }
    t = tensor_ok(FIX "tensor_i64.pb");
    if (t) {
        CHECK(t->b.dtype == PRECIS_INT64 && ((const int64_t *)t->b.data)[1] == (int64_t)1 << 40);
        precis_tensor_destroy(t);
    }
    t = tensor_ok(FIX "tensor_bool.pb");
    if (t) {
        CHECK(t->b.dtype == PRECIS_BOOL && ((const uint8_t *)t->b.data)[2] == 1);
        precis_tensor_destroy(t);
    }
    t = tensor_ok(FIX "tensor_f16.pb");
    if (t) {
        CHECK(t->b.dtype == PRECIS_FLOAT16 &&
              pr_f16_to_f32(((const uint16_t *)t->b.data)[2]) == 65504.0f);
        precis_tensor_destroy(t);
    }
    t = tensor_ok(FIX "tensor_scalar.pb");
    if (t) {
        CHECK(t->b.dtype == PRECIS_FLOAT64 && t->b.rank == 0 && t->b.numel == 1 &&
              *(const double *)t->b.data == 3.25);
        precis_tensor_destroy(t);
    }
    t = tensor_ok(FIX "tensor_i8_typed.pb");
    if (t) {
        const int8_t *d = t->b.data;
        CHECK(t->b.dtype == PRECIS_INT8 && d[0] == -1 && d[2] == -3 && d[3] == 4);
        precis_tensor_destroy(t);
    }
    pr_err e = {0};
    t = NULL;
    CHECK(pr_onnx_load_tensor_file(FIX "nope.pb", &t, &e) == PRECIS_ERR_IO && !t);
    CHECK(strstr(e.msg, "nope.pb") && strstr(e.msg, "No such file"));
    /* a model file is not a tensor (decodes but has nonsense fields) */
    precis_status st = pr_onnx_load_tensor_file(FIX "attrs.onnx", &t, &e);
    CHECK(st != PRECIS_OK && !t && strstr(e.msg, "attrs.onnx"));
}

int main(void) {
    check_inits(FIX "typed_init.onnx");
    check_inits(FIX "raw_init.onnx");
    test_constant();
    test_external();
    test_symbolic();
    test_init_as_input();
    test_metadata();
    test_attrs();
    test_graph_checks();
    test_tensor_files();
    test_deep_nesting();
    test_corruption();
    return check_report(NULL);
}
