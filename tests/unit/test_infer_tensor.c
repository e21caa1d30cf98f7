/* Unit tests of the 'tensor' family's static shape inference: symbolic dims
 * propagate, missing values give partial shapes (rank, unknown dims), bad
 * parameters fail with a message. The kernels are covered by the ONNX
 * conformance tests. */
#include <stdio.h>
#include <string.h>

#include "ir/graph.h"
#include "ir/infer.h"

#include "check.h"
#include "tnode.h"

static pr_graph *g;
static int64_t N, M; /* symbolic dims */

typedef struct tcase {
    tnode t;
    pr_tinfo in[6];
    pr_tinfo out[4];
    pr_err err;
    precis_status st;
} tcase;

static void t_init(tcase *c, pr_op op, const char *name, int64_t opset) {
    memset(c, 0, sizeof *c);
    n_init(&c->t, op, name, opset);
}

static void t_in(tcase *c, int i, pr_dtype dt, int rank, const int64_t *dims, const void *value) {
    c->in[i].dtype = dt;
    c->in[i].rank = rank;
    for (int d = 0; d < rank; d++) c->in[i].dims[d] = dims[d];
    c->in[i].value = value;
}

static precis_status t_run(tcase *c, int n_in, int n_out) {
    for (int j = 0; j < 4; j++) c->out[j].rank = -1;
    pr_infer ic = {g, &c->t.node, n_in, c->in, n_out, c->out, &c->err};
    c->st = pr_infer_table[c->t.node.op](&ic);
    return c->st;
}

#define U PR_DIM_UNKNOWN

static void test_reshape(void) {
    tcase c;
    int64_t x[3] = {N, 3, 4}, one[1] = {2};
    int64_t shape_a[2] = {0, -1}, shape_b[2] = {-1, 12}, shape_c[2] = {5, -1};
    t_init(&c, PR_OP_Reshape, "Reshape", 14);
    t_in(&c, 0, PRECIS_FLOAT32, 3, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, one, shape_a);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 12}));
    c.in[1].value = shape_b;
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 12}));
    c.in[1].value = shape_c; /* 5 * ? = N*12: unknown */
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){5, U}));
    c.in[1].value = NULL; /* value unknown: rank from the shape's length */
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){U, U}));
    int64_t known[3] = {2, 3, 4};
    t_in(&c, 0, PRECIS_FLOAT32, 3, known, NULL);
    c.in[1].value = shape_c; /* 24 elements into [5,-1] */
    CHECK(t_run(&c, 2, 1) == PRECIS_ERR_SHAPE && strstr(c.err.msg, "cannot reshape") != NULL);
}

static void test_transpose_concat(void) {
    tcase c;
    int64_t x[4] = {N, 3, M, 5}, perm[4] = {0, 2, 3, 1};
    t_init(&c, PR_OP_Transpose, "Transpose", 13);
    n_ints(&c.t, "perm", perm, 4);
    t_in(&c, 0, PRECIS_FLOAT16, 4, x, NULL);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){N, M, 5, 3}) &&
          c.out[0].dtype == PRECIS_FLOAT16);

    int64_t a[2] = {N, 3}, b[2] = {N, 5};
    t_init(&c, PR_OP_Concat, "Concat", 13);
    n_int(&c.t, "axis", -1);
    t_in(&c, 0, PRECIS_FLOAT32, 2, a, NULL);
    t_in(&c, 1, PRECIS_FLOAT32, 2, b, NULL);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 8}));
    c.t.attrs[0].i = 0;
    CHECK(t_run(&c, 2, 1) == PRECIS_ERR_SHAPE); /* 3 vs 5 on dim 1 */
    t_in(&c, 1, PRECIS_FLOAT32, 2, a, NULL);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){U, 3}));
}

static void test_squeeze_unsqueeze_flatten(void) {
    tcase c;
    int64_t x[3] = {N, 1, 3}, ax1[1] = {1}, ax0[1] = {0}, len1[1] = {1};
    t_init(&c, PR_OP_Squeeze, "Squeeze", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 3, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, len1, ax1);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 3}));
    c.in[1].value = NULL; /* axes unknown, one of them: rank 2 */
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && c.out[0].rank == 2);
    c.in[1].value = (int64_t[]){2};
    CHECK(t_run(&c, 2, 1) == PRECIS_ERR_SHAPE && strstr(c.err.msg, "size 3") != NULL);
    t_init(&c, PR_OP_Squeeze, "Squeeze", 11); /* attribute form */
    n_ints(&c.t, "axes", ax1, 1);
    t_in(&c, 0, PRECIS_FLOAT32, 3, x, NULL);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 3}));

    t_init(&c, PR_OP_Unsqueeze, "Unsqueeze", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 3, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, len1, ax0);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){1, N, 1, 3}));

    int64_t y[3] = {N, 3, 4};
    t_init(&c, PR_OP_Flatten, "Flatten", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 3, y, NULL);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 12}));
    n_int(&c.t, "axis", 2);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){U, 4}));
}

static void test_slice_split_gather(void) {
    tcase c;
    int64_t x[2] = {N, 10}, one[1] = {1};
    int64_t st[1] = {2}, en[1] = {-3}, ax[1] = {1}, big[1] = {INT64_MAX}, zero[1] = {0};
    t_init(&c, PR_OP_Slice, "Slice", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 2, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, one, st);
    t_in(&c, 2, PRECIS_INT64, 1, one, en);
    t_in(&c, 3, PRECIS_INT64, 1, one, ax);
    CHECK(t_run(&c, 4, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 5}));
    c.in[3].value = NULL; /* axes unknown: every dim unknown */
    CHECK(t_run(&c, 4, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){U, U}));
    c.in[3].value = zero; /* whole symbolic axis kept */
    c.in[1].value = zero;
    c.in[2].value = big;
    CHECK(t_run(&c, 4, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 10}));

    int64_t y[2] = {N, 6};
    t_init(&c, PR_OP_Split, "Split", 13);
    n_int(&c.t, "axis", 1);
    t_in(&c, 0, PRECIS_FLOAT32, 2, y, NULL);
    CHECK(t_run(&c, 1, 2) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 3}) &&
          dims_eq(&c.out[1], 2, (int64_t[]){N, 3}));
    CHECK(t_run(&c, 1, 4) == PRECIS_ERR_SHAPE); /* 6 into 4 equal parts */
    c.t.node.opset = 18;
    n_int(&c.t, "num_outputs", 4);
    CHECK(t_run(&c, 1, 4) == PRECIS_OK && c.out[0].dims[1] == 2 && c.out[3].dims[1] == 0);

    int64_t idx[2] = {7, M};
    t_init(&c, PR_OP_Gather, "Gather", 13);
    n_int(&c.t, "axis", 1);
    t_in(&c, 0, PRECIS_FLOAT32, 2, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 2, idx, NULL);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 3, (int64_t[]){N, 7, M}));
}

static void test_generators(void) {
    tcase c;
    int64_t x[2] = {N, 3}, three[1] = {3};
    t_init(&c, PR_OP_Shape, "Shape", 15);
    t_in(&c, 0, PRECIS_FLOAT32, 2, x, NULL);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 1, (int64_t[]){2}) &&
          c.out[0].dtype == PRECIS_INT64);
    n_int(&c.t, "start", -1);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 1, (int64_t[]){1}));

    t_init(&c, PR_OP_ConstantOfShape, "ConstantOfShape", 9);
    t_in(&c, 0, PRECIS_INT64, 1, three, NULL);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 3, (int64_t[]){U, U, U}) &&
          c.out[0].dtype == PRECIS_FLOAT32);

    float s = 1, l = 10, d = 2.5f;
    int64_t scalar[1] = {0};
    t_init(&c, PR_OP_Range, "Range", 11);
    t_in(&c, 0, PRECIS_FLOAT32, 0, scalar, &s);
    t_in(&c, 1, PRECIS_FLOAT32, 0, scalar, &l);
    t_in(&c, 2, PRECIS_FLOAT32, 0, scalar, &d);
    CHECK(t_run(&c, 3, 1) == PRECIS_OK && dims_eq(&c.out[0], 1, (int64_t[]){4}));
    c.in[1].value = NULL;
    CHECK(t_run(&c, 3, 1) == PRECIS_OK && dims_eq(&c.out[0], 1, (int64_t[]){U}));

    int64_t nz[2] = {N, 4};
    t_init(&c, PR_OP_NonZero, "NonZero", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 2, nz, NULL);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){2, U}));
    float v[4] = {0, 1, -0.0f, 3};
    int64_t nd[1] = {4};
    t_in(&c, 0, PRECIS_FLOAT32, 1, nd, v);
    CHECK(t_run(&c, 1, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){1, 2}));
}

static void test_pad_resize_tile(void) {
    tcase c;
    int64_t x[4] = {N, 3, 8, 8}, eight[1] = {8}, four[1] = {4};
    int64_t pads[8] = {0, 0, 1, 2, 0, 0, 1, 2};
    t_init(&c, PR_OP_Pad, "Pad", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 4, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, eight, pads);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){N, 3, 10, 12}));

    float scales[4] = {1, 1, 2, 0.5f};
    t_init(&c, PR_OP_Resize, "Resize", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 4, x, NULL);
    t_in(&c, 2, PRECIS_FLOAT32, 1, four, scales);
    CHECK(t_run(&c, 3, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){N, 3, 16, 4}));
    c.in[2].value = NULL;
    CHECK(t_run(&c, 3, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){U, U, U, U}));
    int64_t sizes[4] = {7, 3, 5, 5};
    t_in(&c, 3, PRECIS_INT64, 1, four, sizes);
    c.in[2].dtype = PRECIS_UNDEFINED;
    CHECK(t_run(&c, 4, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){7, 3, 5, 5}));

    int64_t reps[4] = {1, 2, 1, 3};
    t_init(&c, PR_OP_Tile, "Tile", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 4, x, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, four, reps);
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 4, (int64_t[]){N, 6, 8, 24}));

    int64_t shp[2] = {1, 1}, two[1] = {2};
    int64_t e[2] = {N, 1};
    t_init(&c, PR_OP_Expand, "Expand", 13);
    t_in(&c, 0, PRECIS_FLOAT32, 2, e, NULL);
    t_in(&c, 1, PRECIS_INT64, 1, two, (int64_t[]){1, 5});
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 5}));
    c.in[1].value = shp;
    CHECK(t_run(&c, 2, 1) == PRECIS_OK && dims_eq(&c.out[0], 2, (int64_t[]){N, 1}));
}

int main(void) {
    g = pr_graph_create();
    if (!g) return 1;
    N = pr_graph_sym(g, "N");
    M = pr_graph_sym(g, "M");
    test_reshape();
    test_transpose_concat();
    test_squeeze_unsqueeze_flatten();
    test_slice_split_gather();
    test_generators();
    test_pad_resize_tile();
    pr_graph_destroy(g);
    return check_report("test_infer_tensor");
}
