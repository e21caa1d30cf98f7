/* Unit tests of the 'linalg' family: shape inference with symbolic and
 * unknown dims, validation messages, and kernel semantics the ONNX node
 * tests do not reach (old-opset Softmax coercion, opset-18 reductions,
 * empty-set reductions, GEMM blocking tails, integer matmuls, exact
 * requantization rounding, TopK ties, Einsum fast and generic paths). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "ir/graph.h"
#include "ir/infer.h"
#include "runtime/exec.h"
#include "runtime/tensor.h"

#include "check.h"
#include "tnode.h"

#define U PR_DIM_UNKNOWN
#define MAXIO 8

static pr_graph *g;
static int64_t N, M; /* symbolic dims */

/* ------------------------------------------------------------ node setup */

/* ------------------------------------------------------------ inference */

static pr_tinfo tin[MAXIO], tout[MAXIO];
static pr_err err;

static void ti(int i, pr_dtype dt, int rank, const int64_t *dims, const void *value) {
    memset(&tin[i], 0, sizeof tin[i]);
    tin[i].dtype = dt;
    tin[i].rank = rank;
    for (int d = 0; d < rank; d++) tin[i].dims[d] = dims[d];
    tin[i].value = value;
}

static precis_status infer(tnode *t, int n_in, int n_out) {
    memset(tout, 0, sizeof tout);
    for (int j = 0; j < MAXIO; j++) tout[j].rank = -1;
    t->node.n_inputs = n_in;
    t->node.n_outputs = n_out;
    pr_err_clear(&err);
    pr_infer ic = {g, &t->node, n_in, tin, n_out, tout, &err};
    return pr_infer_table[t->node.op](&ic);
}

static void test_infer_matmul(void) {
    tnode t;
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    ti(0, PRECIS_FLOAT32, 3, (int64_t[]){N, 3, 4}, NULL);
    ti(1, PRECIS_FLOAT32, 2, (int64_t[]){4, M}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, 3, M}));
    ti(0, PRECIS_FLOAT32, 1, (int64_t[]){4}, NULL);
    ti(1, PRECIS_FLOAT32, 3, (int64_t[]){N, 4, 5}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, 5}));
    ti(0, PRECIS_FLOAT32, 3, (int64_t[]){2, 3, 4}, NULL);
    ti(1, PRECIS_FLOAT32, 1, (int64_t[]){4}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){2, 3}));
    ti(0, PRECIS_FLOAT32, 1, (int64_t[]){4}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 0, NULL));
    ti(0, PRECIS_FLOAT32, 4, (int64_t[]){1, N, 2, 3}, NULL);
    ti(1, PRECIS_FLOAT32, 3, (int64_t[]){5, 3, 4}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 4, (int64_t[]){1, 5, 2, 4}));
    ti(0, PRECIS_FLOAT32, 3, (int64_t[]){2, 2, 3}, NULL);
    ti(1, PRECIS_FLOAT32, 3, (int64_t[]){3, 3, 5}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "batch"));
    ti(0, PRECIS_FLOAT32, 2, (int64_t[]){2, 3}, NULL);
    ti(1, PRECIS_FLOAT32, 2, (int64_t[]){4, 5}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "inner dimensions differ"));
    ti(1, PRECIS_FLOAT64, 2, (int64_t[]){3, 5}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "same dtype"));
    ti(1, PRECIS_FLOAT32, -1, NULL, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && tout[0].rank == -1 && tout[0].dtype == PRECIS_FLOAT32);

    n_init(&t, PR_OP_Gemm, "Gemm", 13);
    n_int(&t, "transA", 1);
    n_int(&t, "transB", 1);
    ti(0, PRECIS_FLOAT32, 2, (int64_t[]){4, N}, NULL);
    ti(1, PRECIS_FLOAT32, 2, (int64_t[]){M, 4}, NULL);
    ti(2, PRECIS_FLOAT32, 1, (int64_t[]){M}, NULL);
    CHECK(infer(&t, 3, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, M}));
    ti(2, PRECIS_FLOAT32, 2, (int64_t[]){3, 1}, NULL);
    CHECK(infer(&t, 3, 1) == PRECIS_OK); /* 3 vs symbolic N: cannot tell */
    ti(0, PRECIS_FLOAT32, 2, (int64_t[]){4, 2}, NULL);
    CHECK(infer(&t, 3, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "cannot be broadcast"));
    CHECK(infer(&t, 2, 1) == PRECIS_OK); /* C optional from opset 11 */
    t.node.opset = 9;
    CHECK(infer(&t, 2, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "required"));

    n_init(&t, PR_OP_MatMulInteger, "MatMulInteger", 10);
    ti(0, PRECIS_UINT8, 2, (int64_t[]){N, 7}, NULL);
    ti(1, PRECIS_INT8, 2, (int64_t[]){7, 3}, NULL);
    ti(2, PRECIS_UINT8, 1, (int64_t[]){N}, NULL);
    ti(3, PRECIS_INT8, 1, (int64_t[]){3}, NULL);
    CHECK(infer(&t, 4, 1) == PRECIS_OK && tout[0].dtype == PRECIS_INT32 &&
          dims_eq(&tout[0], 2, (int64_t[]){N, 3}));
    ti(3, PRECIS_INT8, 1, (int64_t[]){4}, NULL);
    CHECK(infer(&t, 4, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "b_zero_point"));
    ti(3, PRECIS_UINT8, 1, (int64_t[]){3}, NULL);
    CHECK(infer(&t, 4, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "same dtype"));
}

static void test_infer_reduce(void) {
    tnode t;
    int64_t axes1[1] = {1}, axes_bad[2] = {1, -1};
    /* opset 13 ReduceSum: axes input with unknown value */
    n_init(&t, PR_OP_ReduceSum, "ReduceSum", 13);
    ti(0, PRECIS_FLOAT32, 3, (int64_t[]){N, 1, 5}, NULL);
    ti(1, PRECIS_INT64, 1, (int64_t[]){1}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){U, 1, U}));
    n_int(&t, "keepdims", 0);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){U, U}));
    int64_t two = 2;
    ti(1, PRECIS_INT64, 1, (int64_t[]){1}, &two);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, 1}));
    /* empty axes: all, or nothing with noop_with_empty_axes */
    ti(1, PRECIS_INT64, 1, (int64_t[]){0}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 0, NULL));
    n_int(&t, "noop_with_empty_axes", 1);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, 1, 5}));
    CHECK(infer(&t, 1, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, 1, 5}));
    /* attribute axes before opset 13 (18 for the others) */
    n_init(&t, PR_OP_ReduceMean, "ReduceMean", 13);
    n_ints(&t, "axes", axes1, 1);
    ti(0, PRECIS_FLOAT16, 3, (int64_t[]){N, 4, M}, NULL);
    CHECK(infer(&t, 1, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, 1, M}) &&
          tout[0].dtype == PRECIS_FLOAT16);
    t.node.opset = 18;
    CHECK(infer(&t, 1, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "not allowed"));
    n_init(&t, PR_OP_ReduceMax, "ReduceMax", 11);
    n_ints(&t, "axes", axes_bad, 2);
    ti(0, PRECIS_FLOAT32, 2, (int64_t[]){3, 4}, NULL);
    CHECK(infer(&t, 1, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "given twice"));
    t.attrs[0].ints[1] = 2;
    CHECK(infer(&t, 1, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "out of range"));

    n_init(&t, PR_OP_ArgMax, "ArgMax", 13);
    n_int(&t, "axis", -1);
    ti(0, PRECIS_FLOAT32, 3, (int64_t[]){N, 4, 5}, NULL);
    CHECK(infer(&t, 1, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, 4, 1}) &&
          tout[0].dtype == PRECIS_INT64);
    n_int(&t, "keepdims", 0);
    CHECK(infer(&t, 1, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, 4}));

    n_init(&t, PR_OP_TopK, "TopK", 11);
    n_int(&t, "axis", 1);
    int64_t k3 = 3;
    ti(0, PRECIS_FLOAT32, 2, (int64_t[]){N, 5}, NULL);
    ti(1, PRECIS_INT64, 1, (int64_t[]){1}, NULL);
    CHECK(infer(&t, 2, 2) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, U}) &&
          dims_eq(&tout[1], 2, (int64_t[]){N, U}) && tout[1].dtype == PRECIS_INT64);
    tin[1].value = &k3;
    CHECK(infer(&t, 2, 2) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, 3}));
    k3 = 6;
    CHECK(infer(&t, 2, 2) == PRECIS_ERR_SHAPE && strstr(err.msg, "larger than"));

    n_init(&t, PR_OP_Einsum, "Einsum", 12);
    n_str(&t, "equation", "bij,bjk->bki");
    ti(0, PRECIS_FLOAT32, 3, (int64_t[]){N, 3, 4}, NULL);
    ti(1, PRECIS_FLOAT32, 3, (int64_t[]){N, 4, M}, NULL);
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, M, 3}));
    t.attrs[0].s = "...ij,...jk";
    CHECK(infer(&t, 2, 1) == PRECIS_OK && dims_eq(&tout[0], 3, (int64_t[]){N, 3, M}));
    t.attrs[0].s = "ij,jk->ik";
    CHECK(infer(&t, 2, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "rank"));

    n_init(&t, PR_OP_Softmax, "Softmax", 11);
    ti(0, PRECIS_FLOAT32, 2, (int64_t[]){N, 5}, NULL);
    CHECK(infer(&t, 1, 1) == PRECIS_OK && dims_eq(&tout[0], 2, (int64_t[]){N, 5}));
    ti(0, PRECIS_INT32, 2, (int64_t[]){N, 5}, NULL);
    CHECK(infer(&t, 1, 1) == PRECIS_ERR_SHAPE && strstr(err.msg, "float32"));
}

/* ------------------------------------------------------------ kernels */

static pr_buf bin[MAXIO], bout[MAXIO];

static void bi(int i, pr_dtype dt, int rank, const int64_t *dims, const void *data) {
    pr_err e = {0};
    pr_buf_free(&bin[i]);
    pr_buf_alloc(&bin[i], dt, rank, dims, "in", &e);
    if (data) memcpy(bin[i].data, data, bin[i].nbytes);
}

/* Infer on the concrete inputs (absent when dtype is undefined), allocate
 * the outputs, run the ref kernel. */
static precis_status run(tnode *t, int n_in, int n_out) {
    const pr_buf *in[MAXIO];
    pr_buf *out[MAXIO];
    for (int i = 0; i < n_in; i++) {
        in[i] = bin[i].dtype ? &bin[i] : NULL;
        pr_tinfo_from_buf(&tin[i], in[i]);
    }
    precis_status st = infer(t, n_in, n_out);
    if (st) return st;
    for (int j = 0; j < n_out; j++) {
        pr_buf_free(&bout[j]);
        st = pr_buf_alloc(&bout[j], tout[j].dtype, tout[j].rank, tout[j].dims, "out", &err);
        if (st) return st;
        out[j] = &bout[j];
    }
    pr_kernel k = {g, &t->node, n_in, in, n_out, out, &err, 1};
    return pr_ref_table[t->node.op](&k);
}

static void clear_in(void) {
    for (int i = 0; i < MAXIO; i++) {
        pr_buf_free(&bin[i]);
        memset(&bin[i], 0, sizeof bin[i]);
    }
}

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* MatMul against a double-precision naive product over several shapes that
 * cross the GEMM block and strip boundaries. */
static void test_matmul_values(void) {
    static const int64_t shapes[][3] = {{37, 300, 130}, {1, 17, 5}, {4, 16, 4}, {5, 1, 9},
                                        {64, 257, 129}, {3, 33, 0}};
    unsigned seed = 1;
    tnode t;
    n_init(&t, PR_OP_MatMul, "MatMul", 13);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t Mm = shapes[s][0], Nn = shapes[s][1], K = shapes[s][2];
        clear_in();
        bi(0, PRECIS_FLOAT32, 3, (int64_t[]){2, Mm, K}, NULL);
        bi(1, PRECIS_FLOAT32, 2, (int64_t[]){K, Nn}, NULL);
        float *a = bin[0].data, *b = bin[1].data;
        for (int64_t i = 0; i < bin[0].numel; i++) a[i] = frand(&seed);
        for (int64_t i = 0; i < bin[1].numel; i++) b[i] = frand(&seed);
        CHECK(run(&t, 2, 1) == PRECIS_OK);
        const float *y = bout[0].data;
        double maxerr = 0;
        for (int64_t bt = 0; bt < 2; bt++)
            for (int64_t i = 0; i < Mm; i++)
                for (int64_t j = 0; j < Nn; j++) {
                    double acc = 0;
                    for (int64_t q = 0; q < K; q++)
                        acc += (double)a[(bt * Mm + i) * K + q] * b[q * Nn + j];
                    double e = fabs(acc - y[(bt * Mm + i) * Nn + j]);
                    if (e > maxerr) maxerr = e;
                }
        CHECK(maxerr < 1e-4);
    }
    /* int64 wraps like numpy */
    int64_t big[2] = {INT64_MAX, 2}, two[2] = {2, 1};
    clear_in();
    bi(0, PRECIS_INT64, 2, (int64_t[]){1, 2}, big);
    bi(1, PRECIS_INT64, 2, (int64_t[]){2, 1}, two);
    CHECK(run(&t, 2, 1) == PRECIS_OK && ((int64_t *)bout[0].data)[0] == 0);

    /* Gemm: transA, transB, alpha, beta, row-vector C */
    n_init(&t, PR_OP_Gemm, "Gemm", 13);
    n_int(&t, "transA", 1);
    n_int(&t, "transB", 1);
    n_float(&t, "alpha", 0.5f);
    n_float(&t, "beta", 2.0f);
    float A[6] = {1, 2, 3, 4, 5, 6}; /* [K=2, M=3] */
    float B[4] = {1, 0, 1, 1};       /* [N=2, K=2] */
    float C[2] = {10, 20};
    clear_in();
    bi(0, PRECIS_FLOAT32, 2, (int64_t[]){2, 3}, A);
    bi(1, PRECIS_FLOAT32, 2, (int64_t[]){2, 2}, B);
    bi(2, PRECIS_FLOAT32, 1, (int64_t[]){2}, C);
    CHECK(run(&t, 3, 1) == PRECIS_OK);
    /* A^T = [[1,4],[2,5],[3,6]], B^T = [[1,1],[0,1]]: A^T B^T = [[1,5],[2,7],[3,9]] */
    const float want[6] = {20.5f, 42.5f, 21, 43.5f, 21.5f, 44.5f};
    int ok = 1;
    for (int i = 0; i < 6; i++) ok &= ((float *)bout[0].data)[i] == want[i];
    CHECK(ok);
}

static void test_integer_matmuls(void) {
    tnode t;
    n_init(&t, PR_OP_MatMulInteger, "MatMulInteger", 10);
    uint8_t a[4] = {10, 20, 30, 40}; /* [2,2] */
    int8_t b[4] = {1, -1, 2, 3};     /* [2,2] */
    uint8_t za[2] = {10, 40};        /* per row */
    int8_t zb[2] = {1, -1};          /* per column */
    clear_in();
    bi(0, PRECIS_UINT8, 2, (int64_t[]){2, 2}, a);
    bi(1, PRECIS_INT8, 2, (int64_t[]){2, 2}, b);
    bi(2, PRECIS_UINT8, 1, (int64_t[]){2}, za);
    bi(3, PRECIS_INT8, 1, (int64_t[]){2}, zb);
    CHECK(run(&t, 4, 1) == PRECIS_OK);
    /* A-za = [[0,10],[-10,0]], B-zb = [[0,0],[1,4]] */
    const int32_t *y = bout[0].data;
    CHECK(y[0] == 10 && y[1] == 40 && y[2] == 0 && y[3] == 0);

    /* QLinearMatMul: round half to even, saturation, zero points */
    n_init(&t, PR_OP_QLinearMatMul, "QLinearMatMul", 10);
    uint8_t qa[4] = {5, 7, 1, 200}; /* [4,1] */
    uint8_t qb[1] = {1};            /* [1,1] */
    float one = 1.0f, ys = 2.0f;
    uint8_t z0 = 0, yz = 1;
    clear_in();
    bi(0, PRECIS_UINT8, 2, (int64_t[]){4, 1}, qa);
    bi(1, PRECIS_FLOAT32, 0, NULL, &one);
    bi(2, PRECIS_UINT8, 0, NULL, &z0);
    bi(3, PRECIS_UINT8, 2, (int64_t[]){1, 1}, qb);
    bi(4, PRECIS_FLOAT32, 0, NULL, &one);
    bi(5, PRECIS_UINT8, 0, NULL, &z0);
    bi(6, PRECIS_FLOAT32, 0, NULL, &ys);
    bi(7, PRECIS_UINT8, 0, NULL, &yz);
    CHECK(run(&t, 8, 1) == PRECIS_OK);
    const uint8_t *q = bout[0].data; /* 2.5->2, 3.5->4, 0.5->0, 100 (+1 each) */
    CHECK(q[0] == 3 && q[1] == 5 && q[2] == 1 && q[3] == 101);
    ys = 0.25f; /* 800 + 1 saturates */
    bi(6, PRECIS_FLOAT32, 0, NULL, &ys);
    CHECK(run(&t, 8, 1) == PRECIS_OK && ((uint8_t *)bout[0].data)[3] == 255);
}

static void test_softmax_values(void) {
    tnode t;
    float x[6] = {1, 2, 3, 4, 5, 6}; /* [1,2,3] */
    clear_in();
    bi(0, PRECIS_FLOAT32, 3, (int64_t[]){1, 2, 3}, x);
    /* opset 11, axis 1: one row of 6 */
    n_init(&t, PR_OP_Softmax, "Softmax", 11);
    CHECK(run(&t, 1, 1) == PRECIS_OK);
    double s = 0;
    for (int i = 0; i < 6; i++) s += exp(x[i]);
    CHECK(fabs(((float *)bout[0].data)[0] - exp(1) / s) < 1e-6);
    /* opset 13, axis 1: columns of 2 */
    n_init(&t, PR_OP_Softmax, "Softmax", 13);
    n_int(&t, "axis", 1);
    CHECK(run(&t, 1, 1) == PRECIS_OK);
    CHECK(fabs(((float *)bout[0].data)[0] - 1 / (1 + exp(3))) < 1e-6);
    /* Hardmax opset 11 default axis: the single max of the flattened row */
    n_init(&t, PR_OP_Hardmax, "Hardmax", 11);
    CHECK(run(&t, 1, 1) == PRECIS_OK && ((float *)bout[0].data)[5] == 1 &&
          ((float *)bout[0].data)[2] == 0);
    /* LogSoftmax of large values stays finite */
    float big[2] = {1000, 1000};
    bi(0, PRECIS_FLOAT32, 1, (int64_t[]){2}, big);
    n_init(&t, PR_OP_LogSoftmax, "LogSoftmax", 13);
    CHECK(run(&t, 1, 1) == PRECIS_OK && fabs(((float *)bout[0].data)[1] + log(2)) < 1e-6);
}

static void test_reduce_values(void) {
    tnode t;
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t axes1 = 1;
    /* opset 18 ReduceL2 with noop_with_empty_axes: |x| elementwise */
    float neg[2] = {-3, 4};
    clear_in();
    bi(0, PRECIS_FLOAT32, 1, (int64_t[]){2}, neg);
    n_init(&t, PR_OP_ReduceL2, "ReduceL2", 18);
    n_int(&t, "noop_with_empty_axes", 1);
    CHECK(run(&t, 1, 1) == PRECIS_OK && bout[0].numel == 2 && ((float *)bout[0].data)[0] == 3);
    /* without it: over everything */
    n_init(&t, PR_OP_ReduceL2, "ReduceL2", 18);
    CHECK(run(&t, 1, 1) == PRECIS_OK && bout[0].numel == 1 && ((float *)bout[0].data)[0] == 5);
    /* empty set: max -> -inf, mean -> NaN, prod -> 1, int max -> type min */
    clear_in();
    bi(0, PRECIS_FLOAT32, 2, (int64_t[]){0, 3}, NULL);
    bi(1, PRECIS_INT64, 1, (int64_t[]){1}, (int64_t[]){0});
    n_init(&t, PR_OP_ReduceMax, "ReduceMax", 18);
    CHECK(run(&t, 2, 1) == PRECIS_OK && bout[0].numel == 3 &&
          isinf(((float *)bout[0].data)[0]) && ((float *)bout[0].data)[0] < 0);
    n_init(&t, PR_OP_ReduceMean, "ReduceMean", 18);
    CHECK(run(&t, 2, 1) == PRECIS_OK && isnan(((float *)bout[0].data)[2]));
    n_init(&t, PR_OP_ReduceProd, "ReduceProd", 18);
    CHECK(run(&t, 2, 1) == PRECIS_OK && ((float *)bout[0].data)[1] == 1);
    bi(0, PRECIS_INT8, 2, (int64_t[]){0, 3}, NULL);
    n_init(&t, PR_OP_ReduceMax, "ReduceMax", 18);
    CHECK(run(&t, 2, 1) == PRECIS_OK && ((int8_t *)bout[0].data)[0] == -128);
    /* LogSumExp stable for large values */
    float lse[2] = {1000, 1000};
    clear_in();
    bi(0, PRECIS_FLOAT32, 1, (int64_t[]){2}, lse);
    n_init(&t, PR_OP_ReduceLogSumExp, "ReduceLogSumExp", 13);
    CHECK(run(&t, 1, 1) == PRECIS_OK && fabs(((float *)bout[0].data)[0] - (1000 + log(2))) < 1e-3);
    /* ReduceSum opset 11 (attribute) vs 13 (input) */
    clear_in();
    bi(0, PRECIS_FLOAT32, 2, (int64_t[]){2, 3}, x);
    n_init(&t, PR_OP_ReduceSum, "ReduceSum", 11);
    n_ints(&t, "axes", &axes1, 1);
    n_int(&t, "keepdims", 0);
    CHECK(run(&t, 1, 1) == PRECIS_OK && ((float *)bout[0].data)[1] == 15);
    bi(1, PRECIS_INT64, 1, (int64_t[]){1}, &axes1);
    n_init(&t, PR_OP_ReduceSum, "ReduceSum", 13);
    CHECK(run(&t, 2, 1) == PRECIS_OK && bout[0].rank == 2 && ((float *)bout[0].data)[0] == 6);
    /* integer mean truncates toward zero */
    int32_t xi[3] = {-1, -2, 0};
    clear_in();
    bi(0, PRECIS_INT32, 1, (int64_t[]){3}, xi);
    n_init(&t, PR_OP_ReduceMean, "ReduceMean", 13);
    CHECK(run(&t, 1, 1) == PRECIS_OK && ((int32_t *)bout[0].data)[0] == -1);
}

static void test_scan_topk_einsum(void) {
    tnode t;
    int32_t x[4] = {1, 2, 3, 4};
    int32_t ax = 0;
    clear_in();
    bi(0, PRECIS_INT32, 1, (int64_t[]){4}, x);
    bi(1, PRECIS_INT32, 0, NULL, &ax);
    n_init(&t, PR_OP_CumSum, "CumSum", 14);
    n_int(&t, "exclusive", 1);
    n_int(&t, "reverse", 1);
    CHECK(run(&t, 2, 1) == PRECIS_OK);
    const int32_t *c = bout[0].data;
    CHECK(c[0] == 9 && c[1] == 7 && c[2] == 4 && c[3] == 0);

    /* TopK: ties keep the lower index first, both for largest and smallest */
    float v[6] = {3, 1, 3, 2, 3, 1};
    int64_t k = 4;
    clear_in();
    bi(0, PRECIS_FLOAT32, 1, (int64_t[]){6}, v);
    bi(1, PRECIS_INT64, 1, (int64_t[]){1}, &k);
    n_init(&t, PR_OP_TopK, "TopK", 11);
    CHECK(run(&t, 2, 2) == PRECIS_OK);
    const int64_t *ix = bout[1].data;
    CHECK(ix[0] == 0 && ix[1] == 2 && ix[2] == 4 && ix[3] == 3);
    n_int(&t, "largest", 0);
    CHECK(run(&t, 2, 2) == PRECIS_OK);
    ix = bout[1].data;
    CHECK(ix[0] == 1 && ix[1] == 5 && ix[2] == 3 && ix[3] == 0 && ((float *)bout[0].data)[2] == 2);

    /* Einsum: generic path (diagonal) and GEMM path (permuted output) */
    float m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    clear_in();
    bi(0, PRECIS_FLOAT32, 2, (int64_t[]){3, 3}, m);
    n_init(&t, PR_OP_Einsum, "Einsum", 12);
    n_str(&t, "equation", "ii->i");
    CHECK(run(&t, 1, 1) == PRECIS_OK && ((float *)bout[0].data)[2] == 9);
    t.attrs[0].s = "ii";
    CHECK(run(&t, 1, 1) == PRECIS_OK && bout[0].rank == 0 && ((float *)bout[0].data)[0] == 15);
    bi(1, PRECIS_FLOAT32, 2, (int64_t[]){3, 3}, m);
    t.attrs[0].s = "ij,jk->ki";
    CHECK(run(&t, 2, 1) == PRECIS_OK);
    /* (m m)^T: (m m)[0][1] = 1*2+2*5+3*8 = 36 -> out[1][0] */
    CHECK(((float *)bout[0].data)[3] == 36);
    t.attrs[0].s = "ij,kj";
    CHECK(run(&t, 2, 1) == PRECIS_OK && ((float *)bout[0].data)[1] == 1 * 4 + 2 * 5 + 3 * 6);
}

int main(void) {
    g = pr_graph_create();
    N = pr_graph_sym(g, "N");
    M = pr_graph_sym(g, "M");
    test_infer_matmul();
    test_infer_reduce();
    test_matmul_values();
    test_integer_matmuls();
    test_softmax_values();
    test_reduce_values();
    test_scan_topk_einsum();
    clear_in();
    for (int j = 0; j < MAXIO; j++) pr_buf_free(&bout[j]);
    pr_graph_destroy(g);
    return check_report("test_linalg");
}
