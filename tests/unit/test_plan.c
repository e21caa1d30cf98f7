/* The engine file (.plan): save -> load round trips of programmatic graphs
 * (every attribute kind, symbolic dims, layouts, origins, metadata, data of
 * every dtype) and of real ONNX models, and loads of missing, empty,
 * truncated, bit-flipped, foreign and crafted files (valid checksum, bad
 * contents) that must fail with one clear message and never crash. Run from
 * tests/ (ctest sets the working directory). */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_import.h"
#include "passes/pass.h"
#include "plan/plan_file.h"
#include "runtime/api.h"

#include "check.h"

/* Not in plan_file.h: the two CRC-32C paths, checked against each other. */
uint32_t pr_plan_crc32c(uint32_t crc, const void *buf, size_t n);
uint32_t pr_plan_crc32c_portable(uint32_t crc, const void *buf, size_t n);

/* ---------------------------------------------------- independent CRC-32C */

static uint32_t crc_bitwise(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
    }
    return ~c;
}

static uint32_t crc_table[256];
static uint32_t crc_tab(const unsigned char *p, size_t n) {
    if (!crc_table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
            crc_table[i] = c;
        }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return ~c;
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void wr64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
/* Recompute the header checksum (what a careful forger would do). */
static void fix_crc(unsigned char *b, size_t len) { wr32(b + 12, crc_tab(b + 16, len - 16)); }

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_crc(void) {
    const char *v = "123456789";
    CHECK(pr_plan_crc32c(0, v, 9) == 0xE3069283u);
    CHECK(pr_plan_crc32c_portable(0, v, 9) == 0xE3069283u);
    CHECK(pr_plan_crc32c(0, v, 0) == 0);
    /* over 1 MiB: the hardware path's three interleaved chains */
    size_t n = ((size_t)3 << 20) + 12345;
    unsigned char *b = malloc(n);
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)rng();
    CHECK(crc_bitwise(b, 1000) == crc_tab(b, 1000));
    /* unaligned starts, odd lengths, chaining */
    for (size_t off = 0; off < 9; off += 3) {
        size_t len = n - off - 3;
        uint32_t w = crc_tab(b + off, len);
        CHECK(pr_plan_crc32c(0, b + off, len) == w);
        CHECK(pr_plan_crc32c_portable(0, b + off, len) == w);
        uint32_t c = pr_plan_crc32c(0, b + off, 5000 + off);
        CHECK(pr_plan_crc32c(c, b + off + 5000 + off, len - 5000 - off) == w);
        c = pr_plan_crc32c_portable(0, b + off, 77);
        CHECK(pr_plan_crc32c_portable(c, b + off + 77, len - 77) == w);
    }
    for (size_t len = 0; len < 100; len++) {
        uint32_t w = crc_tab(b + 1, len);
        CHECK(pr_plan_crc32c(0, b + 1, len) == w && pr_plan_crc32c_portable(0, b + 1, len) == w);
    }
    free(b);
}

/* ------------------------------------------------------------ deep compare */

#define SAME(cond, ...)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  graphs differ: ");                                                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [%s]\n", #cond);                                                     \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

/* Required strings: the writer stores NULL as "". */
static bool seq(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }
static bool opt_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static bool data_eq(const void *a, const void *b, size_t n) {
    if (!a || !b) return !a && !b;
    return n == 0 || memcmp(a, b, n) == 0;
}

static bool const_eq(const pr_const *a, const pr_const *b) {
    SAME(a->dtype == b->dtype && a->rank == b->rank && a->nbytes == b->nbytes, "const header");
    for (int i = 0; i < a->rank; i++) SAME(a->dims[i] == b->dims[i], "const dim %d", i);
    SAME(data_eq(a->data, b->data, a->nbytes), "const data");
    SAME(!b->data || (uintptr_t)b->data % 64 == 0, "const data alignment");
    return true;
}

static bool attr_eq(const pr_attr *a, const pr_attr *b) {
    SAME(seq(a->name, b->name), "attr name %s", a->name);
    SAME(a->type == b->type, "attr %s type", a->name);
    SAME(opt_eq(a->ref_attr_name, b->ref_attr_name), "attr %s ref_attr_name", a->name);
    switch (a->type) {
    case PR_ATTR_FLOAT: SAME(!memcmp(&a->f, &b->f, 4), "attr %s float bits", a->name); break;
    case PR_ATTR_INT: SAME(a->i == b->i, "attr %s int", a->name); break;
    case PR_ATTR_STRING:
        SAME(a->s_len == b->s_len && b->s && !memcmp(a->s, b->s, a->s_len) && !b->s[b->s_len],
             "attr %s string", a->name);
        break;
    case PR_ATTR_TENSOR:
        if (!const_eq(a->t, b->t)) return false;
        break;
    case PR_ATTR_FLOATS:
        SAME(a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, 4 * (size_t)a->n)),
             "attr %s floats", a->name);
        break;
    case PR_ATTR_INTS:
        SAME(a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, 8 * (size_t)a->n)), "attr %s ints",
             a->name);
        break;
    case PR_ATTR_STRINGS:
        SAME(a->n == b->n, "attr %s strings count", a->name);
        for (int i = 0; i < a->n; i++) SAME(seq(a->strings[i], b->strings[i]), "strings[%d]", i);
        break;
    case PR_ATTR_TENSORS:
        SAME(a->n == b->n, "attr %s tensors count", a->name);
        for (int i = 0; i < a->n; i++)
            if (!const_eq(&a->tensors[i], &b->tensors[i])) return false;
        break;
    default: break;
    }
    return true;
}

static bool graph_eq(const pr_graph *a, const pr_graph *b) {
    SAME(seq(a->name, b->name) && seq(a->producer_name, b->producer_name) &&
             seq(a->producer_version, b->producer_version) && seq(a->domain, b->domain) &&
             seq(a->doc, b->doc),
         "model strings");
    SAME(a->ir_version == b->ir_version && a->model_version == b->model_version, "versions");
    SAME(a->n_syms == b->n_syms, "n_syms");
    for (int i = 0; i < a->n_syms; i++) SAME(seq(a->syms[i], b->syms[i]), "sym %d", i);
    SAME(a->n_opsets == b->n_opsets, "n_opsets");
    for (int i = 0; i < a->n_opsets; i++)
        SAME(seq(a->opsets[i].domain, b->opsets[i].domain) &&
                 a->opsets[i].version == b->opsets[i].version,
             "opset %d", i);
    SAME(a->n_metadata == b->n_metadata, "n_metadata");
    for (int i = 0; i < a->n_metadata; i++)
        SAME(seq(a->metadata[i].key, b->metadata[i].key) &&
                 seq(a->metadata[i].value, b->metadata[i].value),
             "metadata %d", i);
    SAME(a->n_tensors == b->n_tensors, "n_tensors %d vs %d", a->n_tensors, b->n_tensors);
    for (int i = 0; i < a->n_tensors; i++) {
        const pr_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        SAME(seq(x->name, y->name), "tensor %d name", i);
        SAME(pr_graph_find_tensor(b, x->name) == i, "tensor '%s' lookup", x->name);
        SAME(x->dtype == y->dtype && x->rank == y->rank && x->flags == y->flags &&
                 x->layout == y->layout && x->producer == y->producer && x->nbytes == y->nbytes,
             "tensor '%s' fields", x->name);
        for (int k = 0; k < x->rank; k++)
            SAME(x->dims[k] == y->dims[k], "tensor '%s' dim %d", x->name, k);
        SAME(data_eq(x->data, y->data, x->nbytes), "tensor '%s' data", x->name);
        SAME(!y->data || (uintptr_t)y->data % 64 == 0, "tensor '%s' data alignment", x->name);
    }
    SAME(a->n_nodes == b->n_nodes, "n_nodes");
    for (int i = 0; i < a->n_nodes; i++) {
        const pr_node *x = &a->nodes[i], *y = &b->nodes[i];
        SAME(seq(x->name, y->name) && seq(x->op_type, y->op_type) && seq(x->domain, y->domain),
             "node %d strings", i);
        SAME(x->op == y->op && x->opset == y->opset, "node '%s' op/opset", x->name);
        SAME(x->n_inputs == y->n_inputs && x->n_outputs == y->n_outputs &&
                 x->n_attrs == y->n_attrs && x->n_origins == y->n_origins,
             "node '%s' counts", x->name);
        for (int k = 0; k < x->n_inputs; k++)
            SAME(x->inputs[k] == y->inputs[k], "node '%s' in %d", x->name, k);
        for (int k = 0; k < x->n_outputs; k++)
            SAME(x->outputs[k] == y->outputs[k], "node '%s' out %d", x->name, k);
        for (int k = 0; k < x->n_origins; k++)
            SAME(seq(x->origins[k], y->origins[k]), "node '%s' origin %d", x->name, k);
        for (int k = 0; k < x->n_attrs; k++)
            if (!attr_eq(&x->attrs[k], &y->attrs[k])) return false;
    }
    SAME(a->n_inputs == b->n_inputs && a->n_outputs == b->n_outputs, "graph io counts");
    for (int i = 0; i < a->n_inputs; i++) SAME(a->inputs[i] == b->inputs[i], "graph input %d", i);
    for (int i = 0; i < a->n_outputs; i++)
        SAME(a->outputs[i] == b->outputs[i], "graph output %d", i);
    return true;
}

/* --------------------------------------------------- programmatic graphs */

static int add_tensor(pr_graph *g, const char *name, pr_dtype dt, int rank, const int64_t *dims,
                      uint32_t flags) {
    pr_err e = {0};
    int t = pr_graph_get_tensor(g, name, &e);
    pr_tensor *x = &g->tensors[t];
    x->dtype = dt;
    x->rank = rank;
    for (int i = 0; i < rank; i++) x->dims[i] = dims[i];
    x->flags = flags;
    return t;
}

/* An initializer of dt with a byte pattern seeded by seed. */
static int add_init(pr_graph *g, const char *name, pr_dtype dt, int rank, const int64_t *dims,
                    int seed) {
    int t = add_tensor(g, name, dt, rank, dims, PR_T_INIT);
    pr_tensor *x = &g->tensors[t];
    x->nbytes = (size_t)pr_numel(rank, dims) * pr_dtype_size(dt);
    unsigned char *d = pr_arena_alloc(g->arena, x->nbytes);
    for (size_t i = 0; i < x->nbytes; i++) d[i] = (unsigned char)(i * 31 + (size_t)seed * 7 + 1);
    if (dt == PRECIS_BOOL)
        for (size_t i = 0; i < x->nbytes; i++) d[i] &= 1;
    x->data = d;
    return t;
}

static pr_attr *attr(pr_graph *g, int ni, int k, const char *name, pr_attr_type type) {
    pr_attr *a = &g->nodes[ni].attrs[k];
    memset(a, 0, sizeof *a);
    a->name = pr_arena_strdup(g->arena, name);
    a->type = type;
    return a;
}

static pr_const make_const(pr_graph *g, pr_dtype dt, int rank, const int64_t *dims, int seed) {
    pr_const c;
    memset(&c, 0, sizeof c);
    c.dtype = dt;
    c.rank = rank;
    for (int i = 0; i < rank; i++) c.dims[i] = dims[i];
    size_t es = pr_dtype_size(dt);
    if (es) {
        c.nbytes = (size_t)pr_numel(rank, dims) * es;
        unsigned char *d = pr_arena_alloc(g->arena, c.nbytes);
        for (size_t i = 0; i < c.nbytes; i++) d[i] = (unsigned char)(i + (size_t)seed);
        c.data = d;
    }
    return c;
}

/* Every feature of the IR a plan holds. */
static pr_graph *make_graph(void) {
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    g->name = "test_graph";
    g->producer_name = "precis-test";
    g->producer_version = "9.9";
    g->domain = "org.precis";
    g->doc = "doc with\nnewline";
    g->ir_version = 9;
    g->model_version = -3;
    int64_t batch = pr_graph_sym(g, "batch"), seqd = pr_graph_sym(g, "seq");
    g->n_opsets = 3;
    g->opsets = pr_arena_alloc(g->arena, 3 * sizeof(pr_opset));
    g->opsets[0] = (pr_opset){"", 17};
    g->opsets[1] = (pr_opset){"ai.precis", 1};
    g->opsets[2] = (pr_opset){"com.example", INT64_MAX};
    static char big[5001];
    for (int i = 0; i < 5000; i++) big[i] = (char)('a' + i % 26);
    g->n_metadata = 4;
    g->metadata = pr_arena_alloc(g->arena, 4 * sizeof(pr_kv));
    g->metadata[0] = (pr_kv){"precis.isa", "avx512"};
    g->metadata[1] = (pr_kv){"precis.precision_report", big};
    g->metadata[2] = (pr_kv){"empty", ""};
    g->metadata[3] = (pr_kv){"precis.isa", "duplicate key"};

    int64_t xd[4] = {batch, 3, seqd, PR_DIM_UNKNOWN};
    int X = add_tensor(g, "X", PRECIS_FLOAT32, 4, xd, PR_T_INPUT);
    g->tensors[X].layout = PR_LAYOUT_NHWC;
    int64_t wd[4] = {4, 3, 3, 3};
    int W = add_init(g, "W", PRECIS_FLOAT32, 4, wd, 1);
    int64_t d1[1] = {3}, d2[2] = {2, 5}, d0[2] = {0, 3};
    int inits[13];
    int ni_ = 0;
    inits[ni_++] = add_init(g, "w_f64", PRECIS_FLOAT64, 1, d1, 2);
    inits[ni_++] = add_init(g, "w_f16", PRECIS_FLOAT16, 2, d2, 3);
    inits[ni_++] = add_init(g, "w_bf16", PRECIS_BFLOAT16, 1, d1, 4);
    inits[ni_++] = add_init(g, "w_i8", PRECIS_INT8, 2, d2, 5);
    inits[ni_++] = add_init(g, "w_u8", PRECIS_UINT8, 1, d1, 6);
    inits[ni_++] = add_init(g, "w_i16", PRECIS_INT16, 1, d1, 7);
    inits[ni_++] = add_init(g, "w_u16", PRECIS_UINT16, 1, d1, 8);
    inits[ni_++] = add_init(g, "w_i32", PRECIS_INT32, 1, d1, 9);
    inits[ni_++] = add_init(g, "w_i64_scalar", PRECIS_INT64, 0, NULL, 10);
    inits[ni_++] = add_init(g, "w_u32", PRECIS_UINT32, 1, d1, 11);
    inits[ni_++] = add_init(g, "w_u64", PRECIS_UINT64, 1, d1, 12);
    inits[ni_++] = add_init(g, "w_bool", PRECIS_BOOL, 2, d2, 13);
    inits[ni_++] = add_init(g, "w_empty", PRECIS_FLOAT32, 2, d0, 14);
    int Y = add_tensor(g, "Y", PRECIS_FLOAT32, -1, NULL, PR_T_OUTPUT);
    int T = add_tensor(g, "conv_out", PRECIS_FLOAT32, 4, xd, 0);
    g->tensors[T].layout = PR_LAYOUT_NHWC;
    int U = add_tensor(g, "U", PRECIS_UNDEFINED, -1, NULL, PR_T_OUTPUT);
    int C = add_tensor(g, "C", PRECIS_INT32, 1, d1, PR_T_INIT);
    int F = add_init(g, "folded", PRECIS_INT64, 1, d1, 15);
    g->tensors[F].flags |= PR_T_FOLDED;
    add_tensor(g, "unused \xe2\x9c\x93", PRECIS_UNDEFINED, -1, NULL, 0);

    /* node 0: Constant whose output shares its data with the attribute */
    int n0 = pr_graph_add_node(g, 0, 1, 1, &e);
    g->nodes[n0].name = "const0";
    g->nodes[n0].op_type = "Constant";
    g->nodes[n0].op = pr_op_lookup_domain("", "Constant");
    g->nodes[n0].opset = 17;
    g->nodes[n0].outputs[0] = C;
    pr_attr *a = attr(g, n0, 0, "value", PR_ATTR_TENSOR);
    a->t = pr_arena_alloc(g->arena, sizeof *a->t);
    *a->t = make_const(g, PRECIS_INT32, 1, d1, 40);
    g->tensors[C].data = a->t->data;
    g->tensors[C].nbytes = a->t->nbytes;
    g->tensors[C].producer = n0;

    /* node 1: fused conv with every attribute kind and origins */
    int n1 = pr_graph_add_node(g, 3, 1, 16, &e);
    pr_node *n = &g->nodes[n1];
    n->name = "conv1";
    n->op_type = "FusedConv";
    n->domain = PR_FUSED_DOMAIN;
    n->op = pr_op_lookup_domain(PR_FUSED_DOMAIN, "FusedConv");
    n->opset = 1;
    n->inputs[0] = X;
    n->inputs[1] = W;
    n->inputs[2] = -1;
    n->outputs[0] = T;
    n->n_origins = 3;
    n->origins = pr_arena_alloc(g->arena, 3 * sizeof(char *));
    n->origins[0] = "conv1";
    n->origins[1] = "bn1";
    n->origins[2] = "relu1";
    g->tensors[T].producer = n1;
    int k = 0;
    a = attr(g, n1, k++, "alpha", PR_ATTR_FLOAT);
    a->f = 1.25f;
    a = attr(g, n1, k++, "nan", PR_ATTR_FLOAT);
    uint32_t nanbits = 0x7fc00123u;
    memcpy(&a->f, &nanbits, 4);
    a = attr(g, n1, k++, "group", PR_ATTR_INT);
    a->i = INT64_MIN;
    a = attr(g, n1, k++, "auto_pad", PR_ATTR_STRING);
    a->s = "a\0b\0";
    a->s_len = 4;
    a = attr(g, n1, k++, "empty_s", PR_ATTR_STRING);
    a->s = "";
    a->s_len = 0;
    a = attr(g, n1, k++, "pads", PR_ATTR_INTS);
    static int64_t pads[4] = {1, -2, INT64_MAX, 0};
    a->ints = pads;
    a->n = 4;
    a = attr(g, n1, k++, "no_ints", PR_ATTR_INTS);
    a->ints = pads;
    a->n = 0;
    a = attr(g, n1, k++, "scales", PR_ATTR_FLOATS);
    static float fl[3] = {0.5f, -0.0f, 1e30f};
    a->floats = fl;
    a->n = 3;
    a = attr(g, n1, k++, "names", PR_ATTR_STRINGS);
    static const char *strs[3] = {"x", "", "yz"};
    a->strings = strs;
    a->n = 3;
    a = attr(g, n1, k++, "t", PR_ATTR_TENSOR);
    a->t = pr_arena_alloc(g->arena, sizeof *a->t);
    *a->t = make_const(g, PRECIS_FLOAT16, 2, d2, 50);
    a = attr(g, n1, k++, "t_str", PR_ATTR_TENSOR); /* string dtype: no data */
    a->t = pr_arena_alloc(g->arena, sizeof *a->t);
    *a->t = make_const(g, PRECIS_STRING, 1, d1, 0);
    a = attr(g, n1, k++, "ts", PR_ATTR_TENSORS);
    a->n = 3;
    a->tensors = pr_arena_alloc(g->arena, 3 * sizeof(pr_const));
    a->tensors[0] = make_const(g, PRECIS_INT64, 1, d1, 60);
    a->tensors[1] = make_const(g, PRECIS_UINT8, 2, d0, 61);
    a->tensors[2] = make_const(g, PRECIS_FLOAT64, 0, NULL, 62);
    a = attr(g, n1, k++, "undef", PR_ATTR_UNDEFINED);
    a = attr(g, n1, k++, "ref", PR_ATTR_INT);
    a->ref_attr_name = "outer_attr";
    a = attr(g, n1, k++, "act", PR_ATTR_STRING);
    a->s = "relu";
    a->s_len = 4;
    a = attr(g, n1, k++, "act_params", PR_ATTR_FLOATS);
    a->floats = fl;
    a->n = 0;

    /* node 2: plain op, unnamed-style name */
    int n2 = pr_graph_add_node(g, 1, 1, 0, &e);
    n = &g->nodes[n2];
    n->name = "Relu_2";
    n->op_type = "Relu";
    n->op = pr_op_lookup_domain("", "Relu");
    n->opset = 14;
    n->inputs[0] = T;
    n->outputs[0] = Y;
    g->tensors[Y].producer = n2;

    /* node 3: unknown custom op with many inputs, omitted output */
    int n3 = pr_graph_add_node(g, ni_ + 1, 2, 0, &e);
    n = &g->nodes[n3];
    n->name = "custom";
    n->op_type = "Everything";
    n->domain = "com.example";
    n->opset = 3;
    for (int i = 0; i < ni_; i++) n->inputs[i] = inits[i];
    n->inputs[ni_] = C;
    n->outputs[0] = -1;
    n->outputs[1] = U;
    g->tensors[U].producer = n3;

    /* node 4: produces the folded tensor (still present) */
    int n4 = pr_graph_add_node(g, 1, 1, 0, &e);
    n = &g->nodes[n4];
    n->name = "shape_of_x";
    n->op_type = "Shape";
    n->op = pr_op_lookup_domain("", "Shape");
    n->opset = 17;
    n->inputs[0] = X;
    n->outputs[0] = F;
    g->tensors[F].producer = n4;

    g->n_inputs = 1;
    g->inputs = pr_arena_alloc(g->arena, sizeof(int));
    g->inputs[0] = X;
    g->n_outputs = 2;
    g->outputs = pr_arena_alloc(g->arena, 2 * sizeof(int));
    g->outputs[0] = Y;
    g->outputs[1] = U;
    return g;
}

/* A small plan for the exhaustive truncation / bit-flip loops. */
static pr_graph *make_small(void) {
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    g->name = "small";
    int64_t s = pr_graph_sym(g, "n");
    int64_t xd[2] = {s, 2}, wd[1] = {2};
    int X = add_tensor(g, "x", PRECIS_FLOAT32, 2, xd, PR_T_INPUT);
    int W = add_init(g, "w", PRECIS_FLOAT32, 1, wd, 3);
    int Y = add_tensor(g, "y", PRECIS_FLOAT32, 2, xd, PR_T_OUTPUT);
    int ni = pr_graph_add_node(g, 2, 1, 2, &e);
    pr_node *n = &g->nodes[ni];
    n->name = "add";
    n->op_type = "Add";
    n->op = pr_op_lookup_domain("", "Add");
    n->opset = 17;
    n->inputs[0] = X;
    n->inputs[1] = W;
    n->outputs[0] = Y;
    g->tensors[Y].producer = ni;
    pr_attr *a = attr(g, ni, 0, "ints", PR_ATTR_INTS);
    static int64_t v[2] = {1, 2};
    a->ints = v;
    a->n = 2;
    a = attr(g, ni, 1, "s", PR_ATTR_STRING);
    a->s = "hi";
    a->s_len = 2;
    g->n_inputs = g->n_outputs = 1;
    g->inputs = pr_arena_alloc(g->arena, sizeof(int));
    g->outputs = pr_arena_alloc(g->arena, sizeof(int));
    g->inputs[0] = X;
    g->outputs[0] = Y;
    return g;
}

static bool inside(const void *p, const void *base, size_t len) {
    return (const unsigned char *)p >= (const unsigned char *)base &&
           (const unsigned char *)p <= (const unsigned char *)base + len;
}

static bool one_line(const pr_err *e) { return e->msg[0] && !strchr(e->msg, '\n'); }

/* ------------------------------------------------------------ round trips */

static void test_roundtrip_memory(void) {
    pr_graph *g = make_graph();
    pr_err e = {0};
    void *buf = NULL;
    size_t len = 0;
    CHECK(pr_plan_save_memory(g, &buf, &len, &e) == PRECIS_OK);
    if (!buf) {
        fprintf(stderr, "save_memory: %s\n", e.msg);
        pr_graph_destroy(g);
        return;
    }
    CHECK((uintptr_t)buf % 64 == 0);
    CHECK(len > 272 && !memcmp(buf, "PRECISPL", 8) &&
          rd32((unsigned char *)buf + 8) == PR_PLAN_VERSION);
    CHECK(rd64((unsigned char *)buf + 16) == len);

    /* in place: everything points into buf */
    pr_graph *g2 = NULL;
    CHECK(pr_plan_load_memory(buf, len, false, &g2, &e) == PRECIS_OK);
    if (!g2) fprintf(stderr, "load_memory: %s\n", e.msg);
    if (g2) {
        CHECK(graph_eq(g, g2));
        int W = pr_graph_find_tensor(g2, "W"), C = pr_graph_find_tensor(g2, "C");
        CHECK(inside(g2->tensors[W].data, buf, len));
        CHECK(inside(g2->name, buf, len));
        /* a Constant's output and its value attribute share one blob */
        CHECK(g2->tensors[C].data == g2->nodes[0].attrs[0].t->data);
        CHECK(!strcmp(g2->tensors[pr_graph_find_tensor(g2, "w_empty")].name, "w_empty"));
        CHECK(g2->tensors[pr_graph_find_tensor(g2, "w_empty")].data != NULL);
        CHECK(g2->nodes[1].op == pr_op_lookup_domain(PR_FUSED_DOMAIN, "FusedConv"));
        CHECK(g2->nodes[3].op == PR_OP_UNKNOWN);
        /* pr_graph_sym finds the loaded names */
        CHECK(pr_graph_sym(g2, "seq") == pr_dim_from_sym(1));
        /* saving the loaded graph gives the same bytes */
        void *buf2 = NULL;
        size_t len2 = 0;
        CHECK(pr_plan_save_memory(g2, &buf2, &len2, &e) == PRECIS_OK);
        CHECK(len2 == len && buf2 && !memcmp(buf, buf2, len));
        free(buf2);
        /* deterministic */
        CHECK(pr_plan_save_memory(g, &buf2, &len2, &e) == PRECIS_OK);
        CHECK(len2 == len && buf2 && !memcmp(buf, buf2, len));
        free(buf2);
        pr_graph_destroy(g2);
    }

    /* misaligned buffer without copy: copied anyway, data still 64-aligned */
    unsigned char *mis = malloc(len + 64);
    unsigned char *m1 = mis + (64 - (uintptr_t)mis % 64) % 64 + 1;
    if ((size_t)(m1 - mis) + len > len + 64) m1 -= 64;
    memcpy(m1, buf, len);
    pr_graph *g3 = NULL;
    CHECK(pr_plan_load_memory(m1, len, false, &g3, &e) == PRECIS_OK);
    if (g3) {
        CHECK(graph_eq(g, g3));
        CHECK(!inside(g3->tensors[pr_graph_find_tensor(g3, "W")].data, m1, len));
        pr_graph_destroy(g3);
    }
    free(mis);

    /* copy: independent of the caller's buffer */
    pr_graph *g4 = NULL;
    CHECK(pr_plan_load_memory(buf, len, true, &g4, &e) == PRECIS_OK);
    memset(buf, 0xAB, len);
    free(buf);
    if (g4) {
        CHECK(graph_eq(g, g4));
        pr_graph_destroy(g4);
    }

    /* every truncation of the big plan fails cleanly (in memory) */
    CHECK(pr_plan_save_memory(g, &buf, &len, &e) == PRECIS_OK);
    int bad = 0;
    for (size_t l = 0; l < len; l++) {
        pr_graph *t = NULL;
        pr_err e2 = {0};
        precis_status st = pr_plan_load_memory(buf, l, false, &t, &e2);
        if (st != PRECIS_ERR_PARSE || t || !one_line(&e2)) bad++;
        pr_graph_destroy(t);
    }
    CHECK(bad == 0);
    free(buf);

    /* bad arguments */
    CHECK(pr_plan_load_memory(NULL, 10, false, &g2, &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(pr_plan_load_memory(NULL, 0, false, &g2, &e) == PRECIS_ERR_PARSE && g2 == NULL);
    CHECK(strstr(e.msg, "not a precis plan") != NULL);
    CHECK(pr_plan_save_memory(NULL, &buf, &len, &e) == PRECIS_ERR_INVALID_ARG);
    pr_graph_destroy(g);
}

static char tmpdir[256];

static void path_in(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", tmpdir, name);
}

static int count_dir_entries(void) {
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void write_file(const char *path, const void *p, size_t n) {
    unlink(path); /* truncating a file in place makes some file systems flush it */
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static void test_file(void) {
    pr_graph *g = make_graph();
    pr_err e = {0};
    char path[512];
    path_in(path, sizeof path, "g.plan");
    CHECK(pr_plan_save(g, path, &e) == PRECIS_OK);
    CHECK(pr_plan_save(g, path, &e) == PRECIS_OK); /* overwrite */
    CHECK(count_dir_entries() == 1);               /* no temporary left */
    pr_graph *g2 = NULL;
    CHECK(pr_plan_load(path, &g2, &e) == PRECIS_OK);
    if (!g2) fprintf(stderr, "load: %s\n", e.msg);
    if (g2) {
        CHECK(graph_eq(g, g2));
        CHECK(g2->map_addr != NULL && g2->map_len > 0);
        int W = pr_graph_find_tensor(g2, "W");
        CHECK(inside(g2->tensors[W].data, g2->map_addr, g2->map_len));
        CHECK((uintptr_t)g2->tensors[W].data % 64 == 0);
        pr_graph_destroy(g2);
    }
    /* same bytes as save_memory */
    size_t flen = 0, mlen = 0;
    unsigned char *fb = read_all(path, &flen);
    void *mb = NULL;
    CHECK(pr_plan_save_memory(g, &mb, &mlen, &e) == PRECIS_OK);
    CHECK(fb && mb && flen == mlen && !memcmp(fb, mb, flen));
    free(fb);
    free(mb);

    /* a directory that does not exist */
    char nope[512];
    path_in(nope, sizeof nope, "no/such/dir/x.plan");
    e = (pr_err){0};
    CHECK(pr_plan_save(g, nope, &e) == PRECIS_ERR_IO);
    CHECK(strstr(e.msg, "no/such/dir/x.plan") != NULL && one_line(&e));
    /* a directory in place of the file */
    CHECK(pr_plan_save(g, tmpdir, &e) == PRECIS_ERR_IO);
    CHECK(count_dir_entries() == 1);

    /* loading: missing, a directory, empty */
    g2 = NULL;
    CHECK(pr_plan_load(nope, &g2, &e) == PRECIS_ERR_IO && g2 == NULL);
    CHECK(strstr(e.msg, "x.plan") != NULL && one_line(&e));
    CHECK(pr_plan_load(tmpdir, &g2, &e) == PRECIS_ERR_IO && g2 == NULL);
    char empty[512];
    path_in(empty, sizeof empty, "empty.plan");
    write_file(empty, "", 0);
    CHECK(pr_plan_load(empty, &g2, &e) == PRECIS_ERR_PARSE && g2 == NULL);
    CHECK(strstr(e.msg, "not a precis plan") != NULL && strstr(e.msg, "empty.plan") != NULL);
    write_file(empty, "hello, world, this is not a plan at all", 39);
    CHECK(pr_plan_load(empty, &g2, &e) == PRECIS_ERR_PARSE && g2 == NULL);
    CHECK(strstr(e.msg, "not a precis plan") != NULL);
    unlink(empty);

    /* subgraph attributes cannot be saved */
    pr_err e2 = {0};
    pr_attr *a = &g->nodes[1].attrs[0];
    pr_attr_type saved = a->type;
    a->type = PR_ATTR_GRAPH;
    char gp[512];
    path_in(gp, sizeof gp, "graph_attr.plan");
    CHECK(pr_plan_save(g, gp, &e2) == PRECIS_ERR_UNSUPPORTED);
    CHECK(strstr(e2.msg, "GRAPH") != NULL && strstr(e2.msg, "alpha") != NULL);
    CHECK(access(gp, F_OK) != 0);
    a->type = PR_ATTR_SPARSE_TENSOR;
    CHECK(pr_plan_save(g, gp, &e2) == PRECIS_ERR_UNSUPPORTED);
    a->type = PR_ATTR_TYPE_PROTOS;
    CHECK(pr_plan_save(g, gp, &e2) == PRECIS_ERR_UNSUPPORTED);
    a->type = saved;
    /* an inconsistent graph is refused rather than written */
    int W = pr_graph_find_tensor(g, "W");
    g->tensors[W].nbytes -= 4;
    void *b = NULL;
    size_t bl = 0;
    CHECK(pr_plan_save_memory(g, &b, &bl, &e2) == PRECIS_ERR_INVALID_ARG && b == NULL);
    CHECK(strstr(e2.msg, "'W'") != NULL);
    g->tensors[W].nbytes += 4;
    g->nodes[2].inputs[0] = g->n_tensors;
    CHECK(pr_plan_save_memory(g, &b, &bl, &e2) == PRECIS_ERR_INVALID_ARG);
    g->nodes[2].inputs[0] = pr_graph_find_tensor(g, "conv_out");
    const char *op = g->nodes[2].op_type;
    g->nodes[2].op_type = NULL; /* a dead node (pr_node_kill) */
    CHECK(pr_plan_save_memory(g, &b, &bl, &e2) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e2.msg, "dead") != NULL);
    g->nodes[2].op_type = op;
    const char *nm = g->tensors[W].name;
    g->tensors[W].name = "X"; /* duplicate name */
    CHECK(pr_plan_save_memory(g, &b, &bl, &e2) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e2.msg, "duplicate") != NULL);
    g->tensors[W].name = nm;
    CHECK(pr_plan_save_memory(g, &b, &bl, &e2) == PRECIS_OK);
    free(b);
    CHECK(count_dir_entries() == 1);
    unlink(path);
    pr_graph_destroy(g);
}

/* Every truncation and every single-bit flip of a small plan file. */
static void test_corrupt_files(void) {
    pr_graph *g = make_small();
    pr_err e = {0};
    void *vb = NULL;
    size_t len = 0;
    CHECK(pr_plan_save_memory(g, &vb, &len, &e) == PRECIS_OK);
    pr_graph_destroy(g);
    if (!vb) return;
    unsigned char *buf = vb;
    char path[512];
    path_in(path, sizeof path, "c.plan");
    int bad_trunc = 0, bad_flip = 0, bad_msg = 0;
    for (size_t l = 0; l < len; l++) {
        write_file(path, buf, l);
        pr_graph *t = NULL;
        pr_err e2 = {0};
        if (pr_plan_load(path, &t, &e2) != PRECIS_ERR_PARSE || t || !one_line(&e2)) {
            bad_trunc++;
            if (bad_trunc < 4) fprintf(stderr, "truncation %zu: %s\n", l, e2.msg);
        }
        pr_graph_destroy(t);
    }
    CHECK(bad_trunc == 0);
    unsigned char *c = malloc(len);
    for (size_t i = 0; i < len; i++) {
        memcpy(c, buf, len);
        c[i] ^= (unsigned char)(1u << (i % 8));
        write_file(path, c, len);
        pr_graph *t = NULL;
        pr_err e2 = {0};
        if (pr_plan_load(path, &t, &e2) != PRECIS_ERR_PARSE || t || !one_line(&e2)) {
            bad_flip++;
            if (bad_flip < 4) fprintf(stderr, "flip at %zu: %s\n", i, e2.msg);
        }
        if (!strstr(e2.msg, "checksum mismatch") && !strstr(e2.msg, "not a precis plan") &&
            !strstr(e2.msg, "plan format version") && !strstr(e2.msg, "header says")) {
            bad_msg++;
            if (bad_msg < 4) fprintf(stderr, "flip at %zu: %s\n", i, e2.msg);
        }
        pr_graph_destroy(t);
    }
    CHECK(bad_flip == 0);
    CHECK(bad_msg == 0);

    /* wrong magic; newer version (checksum does not cover the version) */
    memcpy(c, buf, len);
    memcpy(c, "PRECISPX", 8);
    write_file(path, c, len);
    pr_graph *t = NULL;
    CHECK(pr_plan_load(path, &t, &e) == PRECIS_ERR_PARSE && !t);
    CHECK(strstr(e.msg, "not a precis plan") != NULL && strstr(e.msg, "c.plan") != NULL);
    memcpy(c, buf, len);
    wr32(c + 8, PR_PLAN_VERSION + 1);
    write_file(path, c, len);
    CHECK(pr_plan_load(path, &t, &e) == PRECIS_ERR_PARSE && !t);
    char want[96];
    snprintf(want, sizeof want, "plan format version %d, this precis reads %d", PR_PLAN_VERSION + 1,
             PR_PLAN_VERSION);
    CHECK(strstr(e.msg, want) != NULL);
    /* trailing bytes */
    unsigned char *longer = calloc(1, len + 3);
    memcpy(longer, buf, len);
    write_file(path, longer, len + 3);
    CHECK(pr_plan_load(path, &t, &e) == PRECIS_ERR_PARSE && !t);
    CHECK(strstr(e.msg, "header says") != NULL);
    free(longer);
    /* truncated: the exact message */
    write_file(path, buf, len - 1);
    CHECK(pr_plan_load(path, &t, &e) == PRECIS_ERR_PARSE);
    snprintf(want, sizeof want, "truncated: %zu bytes, header says %zu", len - 1, len);
    CHECK(strstr(e.msg, want) != NULL);
    /* the intact file still loads */
    write_file(path, buf, len);
    CHECK(pr_plan_load(path, &t, &e) == PRECIS_OK && t);
    pr_graph_destroy(t);
    unlink(path);
    free(c);
    free(buf);
}

/* A plan with a few MB of weights: data in the mapping, a flipped bit deep in
 * the data is caught. */
static void test_big(void) {
    pr_graph *g = make_small();
    int64_t d[2] = {3, 300000};
    add_init(g, "big", PRECIS_FLOAT32, 2, d, 5);
    int64_t d2[1] = {123457};
    add_init(g, "big2", PRECIS_UINT8, 1, d2, 6);
    pr_err e = {0};
    char path[512];
    path_in(path, sizeof path, "big.plan");
    CHECK(pr_plan_save(g, path, &e) == PRECIS_OK);
    pr_graph *g2 = NULL;
    CHECK(pr_plan_load(path, &g2, &e) == PRECIS_OK);
    if (g2) {
        CHECK(graph_eq(g, g2));
        int t = pr_graph_find_tensor(g2, "big2");
        CHECK(inside(g2->tensors[t].data, g2->map_addr, g2->map_len));
        pr_graph_destroy(g2);
    }
    size_t len = 0;
    unsigned char *b = read_all(path, &len);
    CHECK(b && len > 3600000);
    if (b) {
        b[len / 2] ^= 0x10;
        write_file(path, b, len);
        g2 = NULL;
        CHECK(pr_plan_load(path, &g2, &e) == PRECIS_ERR_PARSE && !g2);
        CHECK(strstr(e.msg, "checksum mismatch") != NULL);
        free(b);
    }
    unlink(path);
    pr_graph_destroy(g);
}

/* ------------------------------------------------ crafted, valid checksum */

typedef struct planmap {
    uint64_t off[11], len[11];
    uint32_t cnt[11];
} planmap;

static planmap map_of(const unsigned char *b) {
    planmap m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < 10; i++) {
        const unsigned char *ent = b + 32 + 24 * i;
        uint32_t id = rd32(ent);
        if (id < 1 || id > 10) continue;
        m.cnt[id] = rd32(ent + 4);
        m.off[id] = rd64(ent + 8);
        m.len[id] = rd64(ent + 16);
    }
    return m;
}

enum {
    S_STRINGS = 1,
    S_MODEL,
    S_SYMS,
    S_OPSETS,
    S_META,
    S_TENSORS,
    S_NODES,
    S_INPUTS,
    S_OUTPUTS,
    S_DATA
};

/* Index of the tensor record named name. */
static int trec(const unsigned char *b, const planmap *m, const char *name) {
    for (uint32_t i = 0; i < m->cnt[S_TENSORS]; i++) {
        uint32_t ref = rd32(b + m->off[S_TENSORS] + 104 * (uint64_t)i);
        const unsigned char *s = b + m->off[S_STRINGS] + ref;
        if (rd32(s) == strlen(name) && !memcmp(s + 4, name, strlen(name))) return (int)i;
    }
    return -1;
}

#define NO_STR_TEST 0xFFFFFFFFu
static const unsigned char *base_plan;

/* Apply the edit (already done on c), fix the checksum, expect PARSE with
 * `want` in the message. */
static void expect_bad(unsigned char *c, size_t len, const char *want, int line) {
    fix_crc(c, len);
    pr_graph *g = NULL;
    pr_err e = {0};
    precis_status st = pr_plan_load_memory(c, len, false, &g, &e);
    bool ok = st == PRECIS_ERR_PARSE && !g && one_line(&e) && strstr(e.msg, want) &&
              (strstr(e.msg, "section ") || strstr(e.msg, "header"));
    if (!ok) fprintf(stderr, "line %d: want '%s', got status %d: %s\n", line, want, st, e.msg);
    CHECK(ok);
    pr_graph_destroy(g);
    memcpy(c, base_plan, len); /* reset */
}
#define BAD(want) expect_bad(c, len, want, __LINE__)

/* Random mutations with a valid checksum: each loads or fails with one
 * clean message, never crashes; whatever loads saves again. */
static void fuzz(const unsigned char *base, size_t len, int iters) {
    static const uint32_t vals[] = {
        0, 1, 2, 7, 8, 9, 64, 0x7F, 0xFF, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
    unsigned char *c = NULL;
    if (posix_memalign((void **)&c, 64, len)) return;
    int loaded = 0, failed = 0, wrong = 0, resave = 0;
    for (int it = 0; it < iters; it++) {
        memcpy(c, base, len);
        int nmut = 1 + (int)(rng() % 3);
        for (int k = 0; k < nmut; k++) {
            uint64_t pos = 16 + rng() % (len - 16);
            if (rng() % 2 && pos + 4 <= len)
                wr32(c + pos, vals[rng() % (sizeof vals / sizeof *vals)]);
            else
                c[pos] = (unsigned char)rng();
        }
        fix_crc(c, len);
        pr_graph *t = NULL;
        pr_err e2 = {0};
        precis_status st = pr_plan_load_memory(c, len, false, &t, &e2);
        if (st == PRECIS_OK) {
            loaded++;
            void *b2 = NULL;
            size_t l2 = 0;
            if (pr_plan_save_memory(t, &b2, &l2, &e2) != PRECIS_OK) {
                resave++;
                fprintf(stderr, "mutation %d loads but does not save: %s\n", it, e2.msg);
            }
            free(b2);
        } else if (st == PRECIS_ERR_PARSE && !t && one_line(&e2)) {
            failed++;
        } else {
            wrong++;
            fprintf(stderr, "mutation %d: status %d: %s\n", it, st, e2.msg);
        }
        pr_graph_destroy(t);
    }
    CHECK(wrong == 0);
    CHECK(resave == 0);
    CHECK(failed > iters / 5);
    printf("random mutations of a %zu-byte plan: %d loaded, %d refused\n", len, loaded, failed);
    free(c);
}

static void test_crafted(void) {
    pr_graph *g = make_graph();
    pr_err e = {0};
    void *vb = NULL;
    size_t len = 0;
    CHECK(pr_plan_save_memory(g, &vb, &len, &e) == PRECIS_OK);
    if (!vb) {
        pr_graph_destroy(g);
        return;
    }
    base_plan = vb;
    unsigned char *c = NULL;
    if (posix_memalign((void **)&c, 64, len)) return;
    memcpy(c, vb, len);
    planmap m = map_of(c);
    const uint64_t T = m.off[S_TENSORS], N = m.off[S_NODES];
    int iW = trec(c, &m, "W"), iX = trec(c, &m, "X"), iC = trec(c, &m, "C");
    CHECK(iW >= 0 && iX >= 0 && iC >= 0 && m.cnt[S_TENSORS] == (uint32_t)g->n_tensors);
    uint64_t W = T + 104 * (uint64_t)iW, X = T + 104 * (uint64_t)iX;
    /* the untouched copy with a recomputed checksum loads */
    fix_crc(c, len);
    pr_graph *ok = NULL;
    CHECK(pr_plan_load_memory(c, len, false, &ok, &e) == PRECIS_OK);
    pr_graph_destroy(ok);

    /* header / section table */
    wr32(c + 24, 9);
    BAD("sections");
    wr32(c + 32 + 24 * 9, 3); /* data entry claims to be syms */
    BAD("twice");
    wr32(c + 32 + 24 * 2, 77);
    BAD("unknown id");
    wr64(c + 32 + 24 * 5 + 8, len + 8); /* tensors offset */
    BAD("outside the file");
    wr64(c + 32 + 24 * 5 + 16, UINT64_MAX - 4); /* tensors size */
    BAD("outside the file");
    wr64(c + 32 + 24 * 0 + 8, 8); /* strings inside the header */
    BAD("outside the file");
    wr64(c + 32 + 24 * 9 + 8, m.off[S_DATA] - 8);
    BAD("aligned");
    wr32(c + 32 + 24 * 5 + 4, m.cnt[S_TENSORS] + 1);
    BAD("records");
    wr32(c + 32 + 24 * 5 + 4, 0xFFFFFFFFu);
    BAD("too large");
    wr32(c + 32 + 24 * 1 + 4, 2);
    BAD("model");
    wr32(c + 32 + 24 * 6 + 4, 0x7FFFFFF);
    BAD("cannot fit");
    wr64(c + 32 + 24 * 6 + 16, m.len[S_NODES] + 4); /* overlaps INPUTS */
    BAD("left after the last node");

    /* strings */
    wr32(c + m.off[S_MODEL], (uint32_t)m.len[S_STRINGS]);
    BAD("past the string table");
    wr32(c + m.off[S_MODEL], NO_STR_TEST);
    BAD("missing string");
    wr32(c + m.off[S_MODEL], 1); /* into the middle of an entry */
    BAD("string");
    {
        uint32_t first = rd32(c + m.off[S_STRINGS]); /* graph name comes first */
        c[m.off[S_STRINGS] + 4 + first] = 'x';       /* its NUL */
        BAD("not a valid string-table entry");
        wr32(c + m.off[S_STRINGS], 0xFFFFFFF0u);
        BAD("not a valid string-table entry");
    }
    wr32(c + m.off[S_META] + 4, 0xFFFFFFF0u);
    BAD("metadata value");
    wr32(c + m.off[S_SYMS], 0xFFFFFFFEu);
    BAD("symbolic dim name");
    wr32(c + m.off[S_OPSETS], 0xFFFFFFFEu);
    BAD("opset domain");

    /* tensors */
    wr32(c + T, (uint32_t)m.len[S_STRINGS] + 100);
    BAD("tensor 0");
    wr32(c + X, rd32(c + W)); /* X renamed to W */
    BAD("duplicate tensor name");
    wr32(c + W + 8, (uint32_t)g->n_nodes);
    BAD("producer");
    wr32(c + W + 8, 0xFFFFFFFEu); /* -2 */
    BAD("producer");
    c[W + 12] = 9;
    BAD("layout");
    wr32(c + W + 16, 99);
    BAD("dtype");
    wr32(c + W + 16, 8); /* string dtype with data */
    BAD("no fixed element size");
    wr32(c + W + 16, 7); /* int64: size mismatch */
    BAD("data holds");
    wr32(c + W + 20, 9);
    BAD("rank");
    wr32(c + W + 20, 0xFFFFFFFEu); /* -2 */
    BAD("rank");
    wr32(c + W + 20, 0x80000000u);
    BAD("rank");
    wr64(c + W + 24, (uint64_t)INT64_MAX); /* numel overflows */
    BAD("W");
    wr64(c + W + 24, (uint64_t)-1); /* unknown dim with data */
    BAD("not fully known");
    wr64(c + W + 24, (uint64_t)(int64_t)-9); /* symbolic dim 7 of 2 */
    BAD("symbolic dim");
    wr64(c + X + 24, (uint64_t)INT64_MIN);
    BAD("symbolic dim");
    wr64(c + W + 88, rd64(c + W + 88) + 8);
    BAD("aligned");
    wr64(c + W + 88, len + 64 - len % 64);
    BAD("outside the data section");
    wr64(c + W + 88, 0); /* aligned, but the header */
    BAD("outside the data section");
    wr64(c + W + 96, rd64(c + W + 96) + 4);
    BAD("data holds");
    {
        /* W pointing to the end of data with its true size */
        uint64_t end = m.off[S_DATA] + m.len[S_DATA];
        wr64(c + W + 88, (end - rd64(c + W + 96) + 64) & ~(uint64_t)63);
        BAD("outside the data section");
        wr64(c + W + 96, UINT64_MAX);
        BAD("W");
    }

    /* nodes: node 0 is const0 (0 inputs, 1 output, 1 TENSOR attr) */
    wr32(c + N, NO_STR_TEST);
    BAD("node 0");
    wr32(c + N + 4, 0xFFFF0000u);
    BAD("node 0");
    wr32(c + N + 40, (uint32_t)g->n_tensors);
    BAD("output 0 refers to tensor");
    wr32(c + N + 40, 0xFFFFFFFEu);
    BAD("refers to tensor -2");
    wr32(c + N + 16, 0x7FFFFFFF);
    BAD("do not fit");
    wr32(c + N + 16, 0xFFFFFFFFu);
    BAD("do not fit");
    wr32(c + N + 20, 0x10000000);
    BAD("do not fit");
    wr32(c + N + 24, 0x40000000);
    BAD("do not fit");
    wr32(c + N + 20, 0);
    BAD("node 1"); /* the attribute is read as node 1 */
    {
        uint64_t A = N + 44; /* node 0 attribute 0 */
        wr32(c + A + 4, 5);
        BAD("GRAPH");
        wr32(c + A + 4, 11);
        BAD("SPARSE_TENSOR");
        wr32(c + A + 4, 13);
        BAD("TYPE_PROTO");
        wr32(c + A + 4, 99);
        BAD("cannot be in a plan");
        wr32(c + A + 12, 3);
        BAD("count 3");
        wr32(c + A + 8, 0x7FFFFFF0u);
        BAD("attribute 0");
        wr32(c + A + 4, 7); /* TENSOR payload read as INTS with a huge n */
        wr32(c + A + 12, 0x7FFFFFFF);
        BAD("run past the end");
        wr32(c + A + 4, 9); /* TENSORS */
        wr32(c + A + 12, 100000);
        BAD("run past the end");
        wr32(c + A + 4, 8); /* STRINGS: the shaped record's words are bad refs */
        wr32(c + A + 12, 2);
        wr32(c + A + 16, 0xFFFFFFF0u);
        BAD("attribute 0");
        wr32(c + A + 16 + 4, 11); /* TENSOR rank 11 */
        BAD("rank");
        wr64(c + A + 16 + 72, 3); /* TENSOR data offset */
        BAD("aligned");
    }
    /* graph inputs / outputs */
    wr32(c + m.off[S_INPUTS], (uint32_t)g->n_tensors);
    BAD("graph input 0");
    wr32(c + m.off[S_OUTPUTS] + 4, 0xFFFFFFFFu);
    BAD("graph output 1");

    free(c);
    fuzz(vb, len, 3000);
    pr_graph *small = make_small();
    void *sb = NULL;
    size_t sl = 0;
    CHECK(pr_plan_save_memory(small, &sb, &sl, &e) == PRECIS_OK);
    if (sb) fuzz(sb, sl, 3000);
    free(sb);
    pr_graph_destroy(small);
    free(vb);
    pr_graph_destroy(g);
}

/* ------------------------------------------------------------ real models */

/* Through precis_model_load (imported and shape-inferred) when api, else
 * the plain import. */
static void roundtrip_model(const char *path, bool via_file, bool api) {
    if (path[0] == '/' && access(path, R_OK) != 0) {
        printf("skipping %s (not installed)\n", path);
        return;
    }
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m = NULL;
    pr_err e = {0};
    if (api) {
        if (precis_model_load(ctx, path, &m) != PRECIS_OK)
            fprintf(stderr, "%s: %s\n", path, precis_last_error(ctx));
    } else {
        m = calloc(1, sizeof *m);
        if (pr_onnx_load_file(path, &m->g, &e) != PRECIS_OK) {
            fprintf(stderr, "%s: %s\n", path, e.msg);
            free(m);
            m = NULL;
        }
    }
    CHECK(m != NULL);
    if (!m) {
        precis_ctx_destroy(ctx);
        return;
    }
    pr_graph *g2 = NULL;
    if (via_file) {
        char p[512];
        path_in(p, sizeof p, "model.plan");
        CHECK(pr_plan_save(m->g, p, &e) == PRECIS_OK);
        CHECK(pr_plan_load(p, &g2, &e) == PRECIS_OK);
        unlink(p);
    } else {
        void *buf = NULL;
        size_t len = 0;
        CHECK(pr_plan_save_memory(m->g, &buf, &len, &e) == PRECIS_OK);
        CHECK(pr_plan_load_memory(buf, len, true, &g2, &e) == PRECIS_OK);
        free(buf);
    }
    if (!g2) fprintf(stderr, "%s: %s\n", path, e.msg);
    if (g2) {
        bool same = graph_eq(m->g, g2);
        if (!same) fprintf(stderr, "  (model %s)\n", path);
        CHECK(same);
        pr_graph_destroy(g2);
    }
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
}

/* Run a model from ONNX and from its plan (weights in the read-only mapping):
 * the same outputs (identical unless optimized first), and the expected
 * output of the test set. */
static void run_from_plan(const char *dir, bool optimize) {
    char mp[512], ip[512], op[512];
    snprintf(mp, sizeof mp, "%s/model.onnx", dir);
    if (access(mp, R_OK) != 0) {
        printf("skipping %s (not installed)\n", mp);
        return;
    }
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m = NULL;
    CHECK(precis_model_load(ctx, mp, &m) == PRECIS_OK);
    if (!m) {
        precis_ctx_destroy(ctx);
        return;
    }
    pr_err e = {0};
    char pp[512];
    path_in(pp, sizeof pp, "run.plan");
    pr_graph *g2 = NULL;
    precis_model *mo = NULL;
    CHECK(precis_model_load(ctx, mp, &mo) == PRECIS_OK);
    if (mo && optimize) {
        pr_pass_ctx pc = {.err = &e};
        CHECK(pr_optimize(mo->g, &pc) == PRECIS_OK);
    }
    if (mo) {
        CHECK(pr_plan_save(mo->g, pp, &e) == PRECIS_OK);
        CHECK(pr_plan_load(pp, &g2, &e) == PRECIS_OK);
        if (g2) CHECK(graph_eq(mo->g, g2));
        precis_model_destroy(mo);
    }
    unlink(pp); /* the mapping stays valid */
    precis_model *m2 = calloc(1, sizeof *m2);
    m2->g = g2;
    int ni = precis_model_num_inputs(m);
    const char *names[8];
    precis_tensor *ins[8] = {NULL};
    for (int i = 0; i < ni && i < 8; i++) {
        precis_value_info vi;
        precis_model_input(m, i, &vi);
        names[i] = vi.name;
        snprintf(ip, sizeof ip, "%s/test_data_set_0/input_%d.pb", dir, i);
        CHECK(precis_tensor_load_pb(ctx, ip, &ins[i]) == PRECIS_OK);
    }
    precis_tensor *o1[4] = {NULL}, *o2[4] = {NULL}, *want = NULL;
    snprintf(op, sizeof op, "%s/test_data_set_0/output_0.pb", dir);
    CHECK(precis_tensor_load_pb(ctx, op, &want) == PRECIS_OK);
    precis_session *s1 = NULL, *s2 = NULL;
    CHECK(precis_session_create(ctx, m, NULL, &s1) == PRECIS_OK);
    CHECK(precis_session_create(ctx, m2, NULL, &s2) == PRECIS_OK);
    if (s1 && s2) {
        CHECK(precis_session_run(ctx, s1, ni, names, (const precis_tensor *const *)ins, o1) ==
              PRECIS_OK);
        precis_status st =
            precis_session_run(ctx, s2, ni, names, (const precis_tensor *const *)ins, o2);
        if (st) fprintf(stderr, "%s from plan: %s\n", dir, precis_last_error(ctx));
        CHECK(st == PRECIS_OK);
        if (o1[0] && o2[0] && want) {
            size_t nb = precis_tensor_nbytes(o1[0]);
            CHECK(nb == precis_tensor_nbytes(o2[0]));
            if (!optimize && nb == precis_tensor_nbytes(o2[0]))
                CHECK(!memcmp(precis_tensor_data(o1[0]), precis_tensor_data(o2[0]), nb));
            CHECK(precis_tensor_numel(want) == precis_tensor_numel(o2[0]));
            const float *a = precis_tensor_data(o2[0]), *b = precis_tensor_data(want);
            double md = 0;
            for (int64_t i = 0; i < precis_tensor_numel(want); i++)
                md = fmax(md, fabs((double)a[i] - (double)b[i]));
            CHECK(md < 1e-4);
        }
    }
    precis_session_destroy(s1);
    precis_session_destroy(s2);
    for (int i = 0; i < 4; i++) {
        precis_tensor_destroy(o1[i]);
        precis_tensor_destroy(o2[i]);
    }
    for (int i = 0; i < ni && i < 8; i++) precis_tensor_destroy(ins[i]);
    precis_tensor_destroy(want);
    precis_model_destroy(m2);
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
}

static void test_real_models(void) {
    roundtrip_model(
        "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx", true,
        true);
    roundtrip_model("/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx",
                    false, true);
    static const char *fixtures[] = {"typed_init.onnx", "raw_init.onnx", "constant.onnx",
                                     "metadata.onnx",   "symbolic.onnx", "optional_io.onnx"};
    for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++) {
        char p[256];
        snprintf(p, sizeof p, "data/fixtures/%s", fixtures[i]);
        roundtrip_model(p, i % 2 == 0, i != 4);
    }
    /* subgraphs (If, GRAPH/GRAPHS attributes) are refused */
    pr_graph *g = NULL;
    pr_err e = {0};
    CHECK(pr_onnx_load_file("data/fixtures/attrs.onnx", &g, &e) == PRECIS_OK);
    if (g) {
        void *b = NULL;
        size_t l = 0;
        CHECK(pr_plan_save_memory(g, &b, &l, &e) == PRECIS_ERR_UNSUPPORTED && !b);
        CHECK(strstr(e.msg, "GRAPH") != NULL);
        pr_graph_destroy(g);
    }
    const char *td = "/usr/share/libonnx-testdata/data/";
    static const char *runs[] = {"node/test_conv_with_strides_padding",
                                 "pytorch-converted/test_Conv2d", "pytorch-converted/test_Linear",
                                 "pytorch-converted/test_BatchNorm2d_eval",
                                 "pytorch-operator/test_operator_conv"};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        char d[512];
        snprintf(d, sizeof d, "%s%s", td, runs[i]);
        run_from_plan(d, false);
        run_from_plan(d, true);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/precis_test_plan_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_crc();
    test_roundtrip_memory();
    test_file();
    test_corrupt_files();
    test_big();
    test_crafted();
    test_real_models();
    rmdir(tmpdir);
    return check_report("test_plan");
}
