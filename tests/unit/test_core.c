/* Unit tests for src/core and src/ir basics: errors, arena, dtype
 * conversions, graph tensor table, symbolic dims, numel overflow. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/err.h"
#include "ir/graph.h"
#include "ir/ops.h"

#include "check.h"
#include "e4m3_table.h"

static void test_err(void) {
    pr_err e = {0};
    CHECK(pr_errf(&e, PRECIS_ERR_IO, "cannot open '%s'", "x.onnx") == PRECIS_ERR_IO);
    CHECK(strcmp(e.msg, "cannot open 'x.onnx'") == 0);
    pr_err_prefix(&e, "loading %d", 3);
    CHECK(strcmp(e.msg, "loading 3: cannot open 'x.onnx'") == 0);
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    pr_errf(&e, PRECIS_ERR_PARSE, "%s", big);
    pr_err_prefix(&e, "%s", big); /* must truncate, not overflow */
    CHECK(strlen(e.msg) < PR_ERR_MSG_MAX);
    pr_err_clear(&e);
    CHECK(e.status == PRECIS_OK && e.msg[0] == 0);
}

static void test_arena(void) {
    pr_arena *a = pr_arena_create();
    CHECK(a != NULL);
    for (int i = 0; i < 1000; i++) {
        unsigned char *p = pr_arena_alloc(a, (size_t)(i % 97) + 1);
        CHECK(((uintptr_t)p & 63) == 0);
        CHECK(p[0] == 0);
        memset(p, 0xab, (size_t)(i % 97) + 1);
    }
    void *big = pr_arena_alloc(a, 1 << 20);
    CHECK(big != NULL && ((uintptr_t)big & 63) == 0);
    char *s = pr_arena_strndup(a, "hello world", 5);
    CHECK(strcmp(s, "hello") == 0);
    CHECK(pr_arena_alloc(a, SIZE_MAX - 10) == NULL);
    pr_arena_destroy(a);
}

static void test_f16(void) {
    /* every finite half round-trips exactly through float */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t x = (uint16_t)h;
        if ((x & 0x7c00) == 0x7c00 && (x & 0x3ff)) continue; /* NaN */
        if (pr_f32_to_f16(pr_f16_to_f32(x)) != x) bad++;
    }
    CHECK(bad == 0);
    CHECK(pr_f16_to_f32(0x3c00) == 1.0f);
    CHECK(pr_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    CHECK(pr_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(pr_f32_to_f16(65520.0f) == 0x7c00); /* rounds to inf */
    CHECK(pr_f32_to_f16(1.0f + ldexpf(1.0f, -11)) == 0x3c00); /* tie to even */
    CHECK(pr_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)) == 0x3c02);
    CHECK(isnan(pr_f16_to_f32(pr_f32_to_f16(NAN))));
    CHECK(pr_bf16_to_f32(pr_f32_to_bf16(1.0f)) == 1.0f);
    CHECK(pr_f32_to_bf16(1.0f + ldexpf(1.0f, -8)) == 0x3f80); /* tie to even */
    CHECK(isnan(pr_bf16_to_f32(pr_f32_to_bf16(NAN))));
}

/* FLOAT8E4M3FN against ml_dtypes' table (e4m3_table.h): every code's value,
 * round-to-nearest-even at every midpoint and its neighbours, and ONNX's
 * saturation (ml_dtypes gives NaN out of range; QuantizeLinear saturates). */
static void test_e4m3(void) {
    int bad_dec = 0, bad_enc = 0, bad_rnd = 0;
    for (int c = 0; c < 256; c++) {
        float want, got = pr_e4m3_to_f32((uint8_t)c);
        memcpy(&want, &k_e4m3_bits[c], 4);
        if (isnan(want) ? !isnan(got) : memcmp(&want, &got, 4) != 0) bad_dec++;
        if (!isnan(want) && pr_f32_to_e4m3(want) != c) bad_enc++;
    }
    for (size_t i = 0; i < sizeof k_e4m3_round / sizeof k_e4m3_round[0]; i++) {
        float x;
        memcpy(&x, &k_e4m3_round[i].x, 4);
        if (pr_f32_to_e4m3(x) != k_e4m3_round[i].code || pr_f32_to_e4m3(-x) != (k_e4m3_round[i].code | 0x80))
            bad_rnd++;
    }
    CHECK(bad_dec == 0 && bad_enc == 0 && bad_rnd == 0);
    CHECK(pr_f32_to_e4m3(448.0f) == 0x7e && pr_f32_to_e4m3(1e9f) == 0x7e);
    CHECK(pr_f32_to_e4m3(-INFINITY) == 0xfe && pr_f32_to_e4m3(470.0f) == 0x7e);
    CHECK((pr_f32_to_e4m3(NAN) & 0x7f) == 0x7f && isnan(pr_e4m3_to_f32(0xff)));
    CHECK(pr_f32_to_e4m3(ldexpf(1.0f, -11)) == 0x00); /* below half the smallest subnormal */
    CHECK(strcmp(pr_dtype_name(PRECIS_FLOAT8E4M3FN), "float8e4m3fn") == 0 &&
          pr_dtype_size(PRECIS_FLOAT8E4M3FN) == 1);
    uint8_t q[1];
    pr_store_f64(q, PRECIS_FLOAT8E4M3FN, 0, -3.3);
    CHECK(pr_load_f64(q, PRECIS_FLOAT8E4M3FN, 0) == -3.25);
}

static void test_dtype(void) {
    CHECK(pr_dtype_size(PRECIS_FLOAT32) == 4 && pr_dtype_size(PRECIS_BOOL) == 1);
    CHECK(pr_dtype_size(PRECIS_STRING) == 0 && pr_dtype_size((pr_dtype)99) == 0);
    CHECK(strcmp(pr_dtype_name(PRECIS_BFLOAT16), "bfloat16") == 0);
    int8_t i8[1];
    pr_store_f64(i8, PRECIS_INT8, 0, 1e9); /* saturates, no UB */
    CHECK(i8[0] == 127);
    pr_store_f64(i8, PRECIS_INT8, 0, NAN);
    CHECK(i8[0] == 0);
    int64_t i64[1];
    pr_store_f64(i64, PRECIS_INT64, 0, 1e300);
    CHECK(i64[0] > 0);
    CHECK(pr_load_i64((int64_t[]){-5}, PRECIS_INT64, 0) == -5);
}

static void test_graph(void) {
    pr_graph *g = pr_graph_create();
    pr_err e = {0};
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        CHECK(pr_graph_get_tensor(g, name, &e) == i);
    }
    CHECK(pr_graph_find_tensor(g, "t4321") == 4321);
    CHECK(pr_graph_find_tensor(g, "nope") == -1);
    CHECK(pr_graph_get_tensor(g, "t7", &e) == 7);
    int64_t b = pr_graph_sym(g, "batch"), s = pr_graph_sym(g, "seq");
    CHECK(pr_dim_is_sym(b) && pr_dim_is_sym(s) && b != s);
    CHECK(pr_graph_sym(g, "batch") == b);
    CHECK(strcmp(g->syms[pr_dim_sym_index(s)], "seq") == 0);
    int n = pr_graph_add_node(g, 2, 1, 1, &e);
    CHECK(n == 0 && g->nodes[0].inputs[1] == -1);
    int64_t dims[3] = {b, 3, 224};
    char buf[64];
    CHECK(strcmp(pr_shape_str(g, PRECIS_FLOAT32, 3, dims, buf, sizeof buf), "float32[batch,3,224]") == 0);
    pr_graph_destroy(g);
    int64_t huge[3] = {INT64_MAX / 2, 4, 1};
    CHECK(pr_numel(3, huge) == -1);
    CHECK(pr_numel(0, NULL) == 1);
    CHECK(pr_op_lookup("Conv") == PR_OP_Conv && pr_op_lookup("NotAnOp") == PR_OP_UNKNOWN);
    CHECK(strcmp(pr_op_name(PR_OP_Resize), "Resize") == 0);
}

int main(void) {
    test_err();
    test_arena();
    test_f16();
    test_e4m3();
    test_dtype();
    test_graph();
    return check_report(NULL);
}
