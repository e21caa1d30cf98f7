/* The CUDA backend's INT8 and FP8 impls against the ref backend on random
 * inputs (split from test_cuda_ops.c): QConv / QMatMul on cuBLASLt IMMA and
 * the implicit GEMM (each tile), their epilogues, the int8 depthwise conv,
 * Quantize / Dequantize, QBinary, QPool, whole small CNN blocks, and the FP8
 * GEMMs and quantize steps. Requantized outputs may land one unit off (int32
 * sums vs ref's float32 sums). Exits 77 (ctest skip) without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cuda_check.h"

#include "backends/cuda/cuda_impls.h"
#include "passes/pass.h"

static const pr_dtype DTS[3] = {PRECIS_FLOAT32, PRECIS_FLOAT16, PRECIS_BFLOAT16};

/* ------------------------------------------------------------------ INT8 */

/* n random int8 values in [lo, hi] (static storage, one pool per call site). */
static int8_t *rand_i8(int8_t *buf, int64_t n, int lo, int hi) {
    for (int64_t i = 0; i < n; i++) buf[i] = (int8_t)(lo + (int)cc_rand(0.0f, (float)(hi - lo + 1)));
    return buf;
}

/* Requantized outputs may land one unit off (int32 sums vs ref's float32
 * sums of dequantized products); float outputs agree to float rounding. */
static const cc_tolerance Q_TOL = {1.0f, 0.0f}, QF_TOL = {2e-3f, 1e-4f};

static void qconv_node(tnode *t, int k, int stride, int pad, float ys) {
    cu_fused_node(t, PR_OP_QConv, "QConv");
    n_ints(t, "pads", (int64_t[]){pad, pad, pad, pad}, 4);
    n_ints(t, "strides", (int64_t[]){stride, stride}, 2);
    n_ints(t, "kernel_shape", (int64_t[]){k, k}, 2);
    n_float(t, "x_scale", 0.02f);
    if (ys > 0) {
        n_int(t, "y_type", 3);
        n_float(t, "y_scale", ys);
    }
}

static void test_int8(void) {
    printf("int8\n");
    static int8_t xb[8 * 32 * 13 * 11], wb[64 * 32 * 7 * 7], zb[8 * 64 * 13 * 11], b2[8 * 64 * 13 * 11];
    tnode t;
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8;
    /* QConv 3x3 NCHW: im2col, int8 out with relu */
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {2, 16, 13, 11}, .dtype = I8,
                      .raw = rand_i8(xb, 2 * 16 * 13 * 11, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {32, 16, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 32 * 16 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {32}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                     {.name = "b", .rank = 1, .dims = {32}, .init = true},
                     {.name = "z", .rank = 4, .dims = {2, 32, 13, 11}, .dtype = I8,
                      .raw = rand_i8(zb, 2 * 32 * 13 * 11, -128, 127)}};
    qconv_node(&t, 3, 1, 1, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, "qconv3x3 relu -> int8");
    qconv_node(&t, 3, 2, 1, 0);
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, "qconv3x3 s2 -> float");
    qconv_node(&t, 3, 1, 1, 0.05f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_tol(&t, 5, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "qconv3x3 +int8 residual+relu -> int8");
    /* NHWC: the 16-channel im2col and the direct 1x1 */
    cc_input h[5] = {a[0], a[1], a[2], a[3], a[4]};
    h[0].nhwc = h[4].nhwc = true;
    h[0].dims[0] = h[4].dims[0] = 8;
    h[0].raw = rand_i8(xb, 8 * 16 * 13 * 11, -128, 127);
    h[4].raw = rand_i8(zb, 8 * 32 * 13 * 11, -128, 127);
    qconv_node(&t, 3, 1, 1, 0.05f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_lay(&t, 5, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "nhwc qconv3x3 +residual+relu -> int8");
    cc_input p1[4] = {h[0], a[1], a[2], a[3]};
    p1[1].dims[1] = 16;
    p1[1].dims[2] = p1[1].dims[3] = 1;
    p1[1].dims[0] = 64;
    p1[2].dims[0] = p1[3].dims[0] = 64;
    qconv_node(&t, 1, 1, 0, 0.04f);
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "nhwc qconv1x1 direct -> int8");
    /* the stem: 7x7 s2 over 3 channels (K = 147 padded to 160) */
    cc_input st[4] = {{.name = "x", .rank = 4, .dims = {2, 3, 21, 19}, .dtype = I8,
                       .raw = rand_i8(xb, 2 * 3 * 21 * 19, -128, 127)},
                      {.name = "w", .rank = 4, .dims = {16, 3, 7, 7}, .init = true, .dtype = I8,
                       .raw = rand_i8(wb, 16 * 3 * 49, -127, 127)},
                      {.name = "ws", .rank = 1, .dims = {16}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    qconv_node(&t, 7, 2, 3, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "qconv7x7 s2 stem nchw -> nhwc int8");
    /* QMatMul */
    cc_input m[4] = {{.name = "a", .rank = 3, .dims = {4, 8, 64}, .dtype = I8,
                      .raw = rand_i8(xb, 4 * 8 * 64, -128, 127)},
                     {.name = "b", .rank = 2, .dims = {64, 48}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 64 * 48, -127, 127)},
                     {.name = "bs", .rank = 1, .dims = {48}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                     {.name = "bias", .rank = 1, .dims = {48}, .init = true}};
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.03f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.04f);
    n_str(&t, "act", "Relu");
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, "qmatmul bias+relu -> int8");
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.03f);
    n_int(&t, "transB", 1);
    cc_input mt[4] = {m[0], m[1], m[2], m[3]};
    mt[1].dims[0] = 48;
    mt[1].dims[1] = 64;
    cu_run_tol(&t, 4, mt, 1, PRECIS_FLOAT16, &pr_cuda_impl_qgemm, (cc_tolerance){4e-3f, 4e-3f},
               "qmatmul transB -> fp16");
    /* Quantize / Dequantize, QBinary, QPool, int8 MaxPool */
    static const float qs[1] = {0.02f};
    static const int8_t zp[1] = {0};
    cc_input q[3] = {{.name = "x", .rank = 4, .dims = {2, 8, 5, 7}, .lo = -3, .hi = 3},
                     {.name = "s", .rank = 0, .init = true, .data = qs},
                     {.name = "zp", .rank = 0, .init = true, .dtype = I8, .raw = zp}};
    n_init(&t, PR_OP_QuantizeLinear, "QuantizeLinear", 13);
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "quantize fp32 -> int8");
    cc_input dq[3] = {{.name = "x", .rank = 4, .dims = {2, 8, 5, 7}, .dtype = I8,
                       .raw = rand_i8(xb, 560, -128, 127)}, q[1], q[2]};
    n_init(&t, PR_OP_DequantizeLinear, "DequantizeLinear", 13);
    cu_run_tol(&t, 3, dq, 1, PRECIS_FLOAT16, &pr_cuda_impl_qelem, cc_tol(PRECIS_FLOAT16),
               "dequantize int8 -> fp16");
    cc_input bi[2] = {{.name = "a", .rank = 4, .dims = {8, 64, 13, 11}, .dtype = I8, .nhwc = true,
                       .raw = rand_i8(zb, 8 * 64 * 13 * 11, -128, 127)},
                      {.name = "b", .rank = 4, .dims = {8, 64, 13, 11}, .dtype = I8, .nhwc = true,
                       .raw = rand_i8(b2, 8 * 64 * 13 * 11, -128, 127)}};
    cu_fused_node(&t, PR_OP_QBinary, "QBinary");
    n_str(&t, "kind", "Add");
    n_str(&t, "act", "Relu");
    n_float(&t, "a_scale", 0.02f);
    n_float(&t, "b_scale", 0.03f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.04f);
    cu_run_lay(&t, 2, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
               "nhwc qbinary add+relu -> int8");
    cc_input bb[2] = {dq[0], {.name = "b", .rank = 4, .dims = {1, 8, 1, 1}, .lo = -1, .hi = 1}};
    cu_fused_node(&t, PR_OP_QBinary, "QBinary");
    n_str(&t, "kind", "Mul");
    n_float(&t, "a_scale", 0.02f);
    cu_run_tol(&t, 2, bb, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, QF_TOL,
               "qbinary mul int8 x float broadcast -> float");
    cu_fused_node(&t, PR_OP_QPool, "QPool");
    n_str(&t, "kind", "GlobalAveragePool");
    n_float(&t, "x_scale", 0.02f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.01f);
    cu_run_lay(&t, 1, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
               "nhwc qpool global average -> int8");
    n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
    n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    cu_run_lay(&t, 1, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_pool, (cc_tolerance){0, 0},
               "nhwc maxpool int8");
}

/* Compute capability 9.0: the wgmma tiles run (elsewhere a forced one fails). */
static bool wgmma_dev(void) {
    int dev = 0;
    struct cudaDeviceProp pr;
    return !cudaGetDevice(&dev) && !cudaGetDeviceProperties(&pr, dev) && pr.major == 9 &&
           pr.minor == 0;
}

/* The implicit-GEMM int8 conv (cu_igemm.cu) on NHWC int8, each tile forced
 * through PRECIS_CUDA_IGEMM (t0..t8; t4..t8 the wgmma tiles, on Hopper
 * only), then the timed choice: K not a multiple of the 64-byte stage, M and
 * Nout not multiples of a tile, stride 2, dilation 2, 1x1, residual, float
 * output. */
static void test_igemm(void) {
    printf("int8 implicit gemm\n");
    static int8_t xb[8 * 48 * 13 * 11], wb[40 * 48 * 9], zb[8 * 40 * 13 * 11];
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8;
    tnode t;
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {8, 48, 13, 11}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(xb, 8 * 48 * 13 * 11, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {40, 48, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 40 * 48 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {40}, .init = true, .lo = 1e-3f, .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {40}, .init = true},
                     {.name = "z", .rank = 4, .dims = {8, 40, 13, 11}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(zb, 8 * 40 * 13 * 11, -128, 127)}};
    static const char *const tiles[PR_CU_IGEMM_Q1X1_FIRST] = {"t0", "t1", "t2", "t3", "t4",
                                                              "t5", "t6", "t7", "t8"};
    char label[96];
    for (int i = 0; i < PR_CU_IGEMM_Q1X1_FIRST; i++) {
        if (i >= PR_CU_IGEMM_WG_FIRST && !wgmma_dev()) continue;
        setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
        qconv_node(&t, 3, 1, 1, 0.08f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "igemm %s 3x3 +residual+relu -> int8", tiles[i]);
        cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
    }
    setenv("PRECIS_CUDA_IGEMM", "t0", 1);
    qconv_node(&t, 3, 2, 1, 0);
    cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               "igemm t0 3x3 s2 -> float");
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               "igemm t0 3x3 s2 -> float nchw");
    setenv("PRECIS_CUDA_IGEMM", "t2", 1);
    qconv_node(&t, 3, 1, 2, 0.08f);
    n_ints(&t, "dilations", (int64_t[]){2, 2}, 2);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "igemm t2 3x3 dilation 2 relu -> int8");
    cc_input p1[4] = {a[0], a[1], a[2], a[3]};
    p1[1].dims[2] = p1[1].dims[3] = 1;
    setenv("PRECIS_CUDA_IGEMM", "t3", 1);
    qconv_node(&t, 1, 2, 0, 0.05f);
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "igemm t3 1x1 s2 -> int8");
    setenv("PRECIS_CUDA_IGEMM", "1", 1);
    qconv_node(&t, 1, 1, 0, 0);
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT16, &pr_cuda_impl_qgemm, (cc_tolerance){4e-3f, 4e-3f},
               "igemm timed 1x1 -> fp16");
    unsetenv("PRECIS_CUDA_IGEMM");
    qconv_node(&t, 3, 1, 1, 0.08f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               "igemm or cublasLt (timed) 3x3 relu+residual -> int8");
}

/* n random bytes in [lo, hi] (uint8 by the range). */
static unsigned char *rand_u8(unsigned char *buf, int64_t n, int lo, int hi) {
    for (int64_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(lo + (int)cc_rand(0.0f, (float)(hi - lo + 1)));
    return buf;
}

/* The wgmma tiles (cu_igemm_wg.cu, PRECIS_CUDA_IGEMM=t4..t8; Hopper only:
 * elsewhere they are skipped) beyond test_igemm's loop: general epilogue
 * (float out, NCHW float out), 1x1 stride 1 and 2, Nout over one BN tile
 * (264: two or three column tiles, the last partial), a uint8 x (the u8 x
 * s8 form) and the same in biased storage (PRECIS_CUDA_U8_BIAS=all: the
 * int8 form with -128 padding), the uint8 stem on its space-to-depth copy;
 * and N 256 over every tile (mma.sync's too): the 16-byte epilogue
 * (cu_igemm_epi.cuh), int8 and uint8 / biased residuals. */
static void test_igemm_wg(void) {
    if (!wgmma_dev()) {
        printf("int8 implicit gemm wgmma: skipped (not compute capability 9.0)\n");
        return;
    }
    printf("int8 implicit gemm wgmma\n");
    static int8_t xb[4 * 64 * 17 * 19], wb[264 * 64 * 9], zb[4 * 264 * 17 * 19];
    static unsigned char ub[8 * 48 * 13 * 11], uz[8 * 40 * 13 * 11], us[2 * 3 * 21 * 19];
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8, U8 = PRECIS_UINT8;
    tnode t;
    char label[128];
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {4, 64, 17, 19}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(xb, 4 * 64 * 17 * 19, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {264, 64, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 264 * 64 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {264}, .init = true, .lo = 1e-3f, .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {264}, .init = true},
                     {.name = "z", .rank = 4, .dims = {4, 264, 17, 19}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(zb, 4 * 264 * 17 * 19, -128, 127)}};
    cc_input p1[5] = {a[0], a[1], a[2], a[3], a[4]};
    p1[1].dims[2] = p1[1].dims[3] = 1;
    cc_input u[5] = {{.name = "x", .rank = 4, .dims = {8, 48, 13, 11}, .dtype = U8, .nhwc = true,
                      .raw = rand_u8(ub, 8 * 48 * 13 * 11, 0, 255)},
                     {.name = "w", .rank = 4, .dims = {40, 48, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, 40 * 48 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {40}, .init = true, .lo = 1e-3f, .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {40}, .init = true},
                     {.name = "z", .rank = 4, .dims = {8, 40, 13, 11}, .dtype = U8, .nhwc = true,
                      .raw = rand_u8(uz, 8 * 40 * 13 * 11, 0, 255)}};
    cc_input st[4] = {{.name = "x", .rank = 4, .dims = {2, 3, 21, 19}, .dtype = U8,
                       .raw = rand_u8(us, 2 * 3 * 21 * 19, 0, 255)},
                      {.name = "w", .rank = 4, .dims = {16, 3, 7, 7}, .init = true, .dtype = I8,
                       .raw = rand_i8(wb + 264 * 64 * 4, 16 * 3 * 49, -127, 127)},
                      {.name = "ws", .rank = 1, .dims = {16}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    /* N 256 (16-byte epilogue: N % 16 == 0), every tile: int8 residual, then uint8 x /
     * residual / y (plain and biased) */
    cc_input a2[5] = {a[0], a[1], a[2], a[3], a[4]};
    a2[1].dims[0] = a2[2].dims[0] = a2[3].dims[0] = a2[4].dims[1] = 256;
    static unsigned char u2x[4 * 64 * 17 * 19], u2z[4 * 256 * 17 * 19];
    cc_input u2[5] = {a2[0], a2[1], a2[2], a2[3], a2[4]};
    u2[0].dtype = u2[4].dtype = U8;
    u2[0].raw = rand_u8(u2x, 4 * 64 * 17 * 19, 0, 255);
    u2[4].raw = rand_u8(u2z, 4 * 256 * 17 * 19, 0, 255);
    static const char *const all[PR_CU_IGEMM_Q1X1_FIRST] = {"t0", "t1", "t2", "t3", "t4",
                                                            "t5", "t6", "t7", "t8"};
    for (int i = 0; i < PR_CU_IGEMM_Q1X1_FIRST; i++) {
        setenv("PRECIS_CUDA_IGEMM", all[i], 1);
        qconv_node(&t, 3, 1, 1, 0.3f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "igemm %s 3x3 N 256 +residual+relu -> int8", all[i]);
        cu_run_lay(&t, 5, a2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
        for (int b = 0; b < 2; b++) {
            if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
            cu_bias_io = b ? 1u | 1u << 4 | 1u << 16 : 0;
            cu_fused_node(&t, PR_OP_QConv, "QConv");
            n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
            n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
            n_float(&t, "x_scale", 0.01f);
            n_int(&t, "y_type", 2);
            n_float(&t, "y_scale", 0.08f);
            n_float(&t, "z_scale", 0.03f);
            n_str(&t, "act", "Relu");
            snprintf(label, sizeof label, "%sigemm %s u8 3x3 N 256 relu +u8 residual -> u8",
                     b ? "[biased] " : "", all[i]);
            cu_run_lay(&t, 5, u2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
            cu_bias_io = 0;
            unsetenv("PRECIS_CUDA_U8_BIAS");
        }
    }
    static const char *const tiles[5] = {"t4", "t5", "t6", "t7", "t8"};
    for (int i = 0; i < 5; i++) {
        setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
        qconv_node(&t, 3, 1, 1, 0.3f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "igemm %s 3x3 N 264 +residual+relu -> int8", tiles[i]);
        cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
        qconv_node(&t, 3, 2, 1, 0);
        snprintf(label, sizeof label, "igemm %s 3x3 s2 N 264 -> float", tiles[i]);
        cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
        snprintf(label, sizeof label, "igemm %s 3x3 s2 N 264 -> float nchw", tiles[i]);
        cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
        qconv_node(&t, 1, 1, 0, 0.1f);
        n_str(&t, "act", "Relu");
        snprintf(label, sizeof label, "igemm %s 1x1 N 264 relu -> int8", tiles[i]);
        cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
        qconv_node(&t, 1, 2, 0, 0.1f);
        n_float(&t, "z_scale", 0.03f);
        cc_input p2[5] = {p1[0], p1[1], p1[2], p1[3], p1[4]};
        p2[4].dims[2] = 9;
        p2[4].dims[3] = 10;
        snprintf(label, sizeof label, "igemm %s 1x1 s2 N 264 +residual -> int8", tiles[i]);
        cu_run_lay(&t, 5, p2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
        for (int b = 0; b < 2; b++) {
            if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
            cu_bias_io = b ? 1u | 1u << 4 | 1u << 16 : 0;
            cu_fused_node(&t, PR_OP_QConv, "QConv");
            n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
            n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
            n_float(&t, "x_scale", 0.01f);
            n_int(&t, "y_type", 2);
            n_float(&t, "y_scale", 0.08f);
            n_float(&t, "z_scale", 0.03f);
            n_str(&t, "act2", "Relu");
            snprintf(label, sizeof label, "%sigemm %s u8 3x3 +u8 residual+relu -> u8",
                     b ? "[biased] " : "", tiles[i]);
            cu_run_lay(&t, 5, u, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
            cu_bias_io = b ? 1u | 1u << 16 : 0;
            cu_fused_node(&t, PR_OP_QConv, "QConv");
            n_ints(&t, "pads", (int64_t[]){3, 3, 3, 3}, 4);
            n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
            n_ints(&t, "kernel_shape", (int64_t[]){7, 7}, 2);
            n_float(&t, "x_scale", 0.01f);
            n_int(&t, "y_type", 2);
            n_float(&t, "y_scale", 0.1f);
            n_str(&t, "act", "Relu");
            snprintf(label, sizeof label, "%sigemm %s u8 s2d stem 7x7 s2 -> u8",
                     b ? "[biased] " : "", tiles[i]);
            cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
            cu_bias_io = 0;
            unsetenv("PRECIS_CUDA_U8_BIAS");
        }
    }
    unsetenv("PRECIS_CUDA_IGEMM");
}

/* The warp-specialized forms of the wgmma 128x128 / 128x256 tiles
 * (cu_igemm_ws.cu: t4 is BN 64 where Nout <= 64, else 128; t5 BN 256), each
 * case also with PRECIS_CUDA_IGEMM_WS=0 (the cu_igemm_wg.cu forms): C 16 (k
 * wraps taps inside a 64-byte panel), C 48 (K 432: a partial last panel), C
 * 256 (K 2304: 36 stages, the ring wraps many times), Nout 64 / 40 / 128 /
 * 264 (partial column tiles), M partial (batch 2-4, odd H / W: 17x19, 9x11),
 * stride 2, the image border (zero fill; -128 stored for biased uint8 x),
 * int8 / uint8 / biased residual, ReLU before / after, float out (the general
 * epilogue, NHWC and NCHW); a 288-tile case for the persistent BN 64 form.
 * test_igemm_wg's loops run the default (ws). */
static void test_igemm_ws(void) {
    if (!wgmma_dev()) {
        printf("int8 implicit gemm wgmma ws: skipped (not compute capability 9.0)\n");
        return;
    }
    printf("int8 implicit gemm wgmma ws\n");
    static int8_t x16[4 * 16 * 17 * 19], x256[2 * 256 * 9 * 11], wb[264 * 256 * 9];
    static int8_t z1[4 * 264 * 17 * 19], z2[2 * 128 * 9 * 11];
    static unsigned char u16[3 * 16 * 17 * 19], uz[3 * 64 * 17 * 19];
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8, U8 = PRECIS_UINT8;
    tnode t;
    char label[160];
    rand_i8(wb, 264 * 256 * 9, -127, 127);
    /* C 16, Nout 64: x 4x16x17x19 */
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {4, 16, 17, 19}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(x16, 4 * 16 * 17 * 19, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {64, 16, 3, 3}, .init = true, .dtype = I8,
                      .raw = wb},
                     {.name = "ws", .rank = 1, .dims = {64}, .init = true, .lo = 1e-3f, .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {64}, .init = true},
                     {.name = "z", .rank = 4, .dims = {4, 64, 17, 19}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(z1, 4 * 264 * 17 * 19, -128, 127)}};
    /* C 256: x 2x256x9x11 */
    cc_input c[5] = {{.name = "x", .rank = 4, .dims = {2, 256, 9, 11}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(x256, 2 * 256 * 9 * 11, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {64, 256, 3, 3}, .init = true, .dtype = I8,
                      .raw = wb},
                     {.name = "ws", .rank = 1, .dims = {64}, .init = true, .lo = 3e-4f, .hi = 1e-3f},
                     {.name = "b", .rank = 1, .dims = {64}, .init = true},
                     {.name = "z", .rank = 4, .dims = {2, 64, 9, 11}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(z2, 2 * 128 * 9 * 11, -128, 127)}};
    cc_input u[5] = {{.name = "x", .rank = 4, .dims = {3, 16, 17, 19}, .dtype = U8, .nhwc = true,
                      .raw = rand_u8(u16, 3 * 16 * 17 * 19, 0, 255)},
                     a[1], a[2], a[3],
                     {.name = "z", .rank = 4, .dims = {3, 64, 17, 19}, .dtype = U8, .nhwc = true,
                      .raw = rand_u8(uz, 3 * 64 * 17 * 19, 0, 255)}};
    static const char *const tiles[2] = {"t4", "t5"};
    /* WS=0, the default (t4: the ping-pong form), the WS=2 experiment, WS=1
     * (phase 18w's 128x128 form) */
    for (int ws = 0; ws < 4; ws++) {
        const char *tag = ws == 1 ? "pp" : ws == 2 ? "WS=2" : ws == 3 ? "WS=1" : "WS=0";
        if (ws == 1) unsetenv("PRECIS_CUDA_IGEMM_WS");
        else setenv("PRECIS_CUDA_IGEMM_WS", ws == 2 ? "2" : ws == 3 ? "1" : "0", 1);
        for (int i = 0; i < 2; i++) {
            setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
            const int outs[3] = {64, 40, 264};
            for (int o = 0; o < 3; o++) { /* C 16 */
                cc_input a2[5] = {a[0], a[1], a[2], a[3], a[4]};
                a2[1].dims[0] = a2[2].dims[0] = a2[3].dims[0] = a2[4].dims[1] = outs[o];
                qconv_node(&t, 3, 1, 1, 0.2f);
                n_float(&t, "z_scale", 0.03f);
                n_str(&t, "act2", "Relu");
                snprintf(label, sizeof label, "igemm %s %s C 16 3x3 N %d +residual+relu -> int8",
                         tiles[i], tag, outs[o]);
                cu_run_lay(&t, 5, a2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
                qconv_node(&t, 3, 2, 1, 0);
                snprintf(label, sizeof label, "igemm %s %s C 16 3x3 s2 N %d -> float", tiles[i],
                         tag, outs[o]);
                cu_run_lay(&t, 4, a2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
            }
            const int outc[2] = {64, 128};
            for (int o = 0; o < 2; o++) { /* C 256: K 2304 */
                cc_input c2[5] = {c[0], c[1], c[2], c[3], c[4]};
                c2[1].dims[0] = c2[2].dims[0] = c2[3].dims[0] = c2[4].dims[1] = outc[o];
                qconv_node(&t, 3, 1, 1, 0.1f);
                n_float(&t, "z_scale", 0.03f);
                n_str(&t, "act", "Relu");
                snprintf(label, sizeof label, "igemm %s %s C 256 3x3 N %d relu +residual -> int8",
                         tiles[i], tag, outc[o]);
                cu_run_lay(&t, 5, c2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
                qconv_node(&t, 3, 2, 1, 0);
                snprintf(label, sizeof label, "igemm %s %s C 256 3x3 s2 N %d -> float nchw",
                         tiles[i], tag, outc[o]);
                cu_run_tol(&t, 4, c2, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
            }
            for (int b = 0; b < 2; b++) { /* uint8 x, C 16, N 64: plain and biased */
                if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
                cu_bias_io = b ? 1u | 1u << 4 | 1u << 16 : 0;
                cu_fused_node(&t, PR_OP_QConv, "QConv");
                n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
                n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
                n_float(&t, "x_scale", 0.01f);
                n_int(&t, "y_type", 2);
                n_float(&t, "y_scale", 0.05f);
                n_float(&t, "z_scale", 0.03f);
                n_str(&t, "act", "Relu");
                snprintf(label, sizeof label, "%sigemm %s %s u8 C 16 3x3 N 64 relu +u8 residual -> u8",
                         b ? "[biased] " : "", tiles[i], tag);
                cu_run_lay(&t, 5, u, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
                cu_bias_io = 0;
                unsetenv("PRECIS_CUDA_U8_BIAS");
            }
        }
    }
    /* t4 at Nout 64 over 288 M tiles: the persistent BN 64 form loops over
     * tiles (more than 2 blocks an SM on any GPU of <= 144 SMs; the ring and
     * its phases run across tiles); and the same with PRECIS_CUDA_IGEMM_WS=2
     * (the experiment: not persistent, 3 blocks an SM) */
    static int8_t xl[8 * 16 * 64 * 72], zl[8 * 64 * 64 * 72];
    cc_input l[5] = {{.name = "x", .rank = 4, .dims = {8, 16, 64, 72}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(xl, 8 * 16 * 64 * 72, -128, 127)},
                     a[1], a[2], a[3],
                     {.name = "z", .rank = 4, .dims = {8, 64, 64, 72}, .dtype = I8, .nhwc = true,
                      .raw = rand_i8(zl, 8 * 64 * 64 * 72, -128, 127)}};
    setenv("PRECIS_CUDA_IGEMM", "t4", 1);
    for (int e = 0; e <= 2; e++) { /* 0: the default, the ping-pong BN 64 (persistent) */
        if (e) setenv("PRECIS_CUDA_IGEMM_WS", e == 1 ? "1" : "2", 1);
        else unsetenv("PRECIS_CUDA_IGEMM_WS");
        qconv_node(&t, 3, 1, 1, 0.2f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "igemm t4 %s C 16 3x3 8x64x72 N 64 +residual+relu -> int8",
                 e ? e == 1 ? "WS=1" : "WS=2" : "pp");
        cu_run_lay(&t, 5, l, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
        qconv_node(&t, 3, 1, 1, 0);
        snprintf(label, sizeof label, "igemm t4 %s C 16 3x3 8x64x72 N 64 -> float",
                 e ? e == 1 ? "WS=1" : "WS=2" : "pp");
        cu_run_lay(&t, 4, l, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
    }
    /* the ping-pong form (t4, default) with several tiles a block and K over
     * the ring: C 128 (K 1152, 18 stages a tile vs the ring's 9 at BN 128 /
     * 12 at BN 64), 4x48x72 (M 13824: 108 M tiles), Nout 264 (3 column
     * tiles, the last partial): 324 tiles over a persistent grid of one
     * block an SM, so a warpgroup's first full wait of a tile falls a ring
     * lap past stages of the previous tile (the parity bug class of phase
     * 18r); and Nout 64 (BN 64, 108 tiles) */
    unsetenv("PRECIS_CUDA_IGEMM_WS");
    static int8_t xp[4 * 128 * 48 * 72], zp[4 * 264 * 48 * 72];
    cc_input pp[5] = {{.name = "x", .rank = 4, .dims = {4, 128, 48, 72}, .dtype = I8, .nhwc = true,
                       .raw = rand_i8(xp, 4 * 128 * 48 * 72, -128, 127)},
                      {.name = "w", .rank = 4, .dims = {264, 128, 3, 3}, .init = true, .dtype = I8,
                       .raw = wb},
                      {.name = "ws", .rank = 1, .dims = {264}, .init = true, .lo = 3e-4f,
                       .hi = 1e-3f},
                      {.name = "b", .rank = 1, .dims = {264}, .init = true},
                      {.name = "z", .rank = 4, .dims = {4, 264, 48, 72}, .dtype = I8, .nhwc = true,
                       .raw = rand_i8(zp, 4 * 264 * 48 * 72, -128, 127)}};
    for (int o = 0; o < 2; o++) {
        cc_input p2[5] = {pp[0], pp[1], pp[2], pp[3], pp[4]};
        p2[1].dims[0] = p2[2].dims[0] = p2[3].dims[0] = p2[4].dims[1] = o ? 64 : 264;
        qconv_node(&t, 3, 1, 1, 0.1f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "igemm t4 pp C 128 3x3 4x48x72 N %d +residual+relu -> int8",
                 o ? 64 : 264);
        cu_run_lay(&t, 5, p2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
        qconv_node(&t, 3, 1, 1, 0);
        snprintf(label, sizeof label, "igemm t4 pp C 128 3x3 4x48x72 N %d -> float", o ? 64 : 264);
        cu_run_lay(&t, 4, p2, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
    }
    unsetenv("PRECIS_CUDA_IGEMM");
    unsetenv("PRECIS_CUDA_IGEMM_WS");
}

/* The TMA im2col tile (t18, phase 20w: cu_igemm_ws.cu's k_igemm_ti), forced:
 * C 64 / 128 / 256 / 512 (K 576 .. 4608: up to 72 stages a tile over a ring
 * of 9 / 12), 3x3 pad 1 stride 1 and 2, Nout 40 / 64 (128 x 64 tiles), 128
 * / 256 / 264 / 512 (128 x 128; 264: a partial column tile; and 264 as
 * 64 x 256 with PRECIS_CUDA_IGEMM_TI=256), odd H / W (partial last M
 * tile, images whose pixels cross 128-row tiles: the copy's walk wraps to
 * the next row / image), several tiles a block (C 128, 4x48x72), int8
 * residual with ReLU after / ReLU before + residual, float out NHWC / NCHW,
 * uint8 x + residual plain and biased (the padding rows rewritten as -128) */
static void test_igemm_ti(void) {
    if (!wgmma_dev()) {
        printf("int8 implicit gemm TMA im2col: skipped (not compute capability 9.0)\n");
        return;
    }
    printf("int8 implicit gemm TMA im2col\n");
    static int8_t x64[4 * 64 * 17 * 19], x128[4 * 128 * 48 * 72], x256[2 * 256 * 9 * 11],
        x512[2 * 512 * 14 * 14], wb[512 * 512 * 9], zb[4 * 264 * 48 * 72];
    static unsigned char u64[3 * 64 * 17 * 19], uz[3 * 256 * 17 * 19];
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8, U8 = PRECIS_UINT8;
    tnode t;
    char label[160];
    rand_i8(wb, 512 * 512 * 9, -127, 127);
    rand_i8(zb, 4 * 264 * 48 * 72, -128, 127);
    setenv("PRECIS_CUDA_IGEMM", "t18", 1);
    struct {
        int n, c, h, w;
        int8_t *x;
        float lo, hi;
    } xs[4] = {{4, 64, 17, 19, x64, 1e-3f, 4e-3f},
               {4, 128, 48, 72, x128, 3e-4f, 1e-3f},
               {2, 256, 9, 11, x256, 3e-4f, 1e-3f},
               {2, 512, 14, 14, x512, 2e-4f, 6e-4f}};
    static const int outs[4][3] = {{40, 64, 264}, {64, 264, 0}, {64, 128, 0}, {512, 0, 0}};
    for (int i = 0; i < 4; i++) {
        int n = xs[i].n, c = xs[i].c, h = xs[i].h, w = xs[i].w;
        rand_i8(xs[i].x, n * c * h * w, -128, 127);
        for (int o = 0; o < 3 && outs[i][o]; o++) {
            int no = outs[i][o];
            cc_input a[5] = {{.name = "x", .rank = 4, .dims = {n, c, h, w}, .dtype = I8,
                              .nhwc = true, .raw = xs[i].x},
                             {.name = "w", .rank = 4, .dims = {no, c, 3, 3}, .init = true,
                              .dtype = I8, .raw = wb},
                             {.name = "ws", .rank = 1, .dims = {no}, .init = true, .lo = xs[i].lo,
                              .hi = xs[i].hi},
                             {.name = "b", .rank = 1, .dims = {no}, .init = true},
                             {.name = "z", .rank = 4, .dims = {n, no, h, w}, .dtype = I8,
                              .nhwc = true, .raw = zb}};
            qconv_node(&t, 3, 1, 1, 0.2f);
            n_float(&t, "z_scale", 0.03f);
            n_str(&t, "act2", "Relu");
            snprintf(label, sizeof label, "igemm t18 C %d %dx%dx%d 3x3 N %d +residual+relu -> int8",
                     c, n, h, w, no);
            cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
            if (i == 1) { /* the large one (ref's time): s1 and s2 once each */
                qconv_node(&t, 3, 2, 1, 0);
                snprintf(label, sizeof label, "igemm t18 C %d %dx%dx%d 3x3 s2 N %d -> float", c,
                         n, h, w, no);
                cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
                continue;
            }
            qconv_node(&t, 3, 1, 1, 0.1f);
            n_float(&t, "z_scale", 0.03f);
            n_str(&t, "act", "Relu");
            snprintf(label, sizeof label, "igemm t18 C %d %dx%dx%d 3x3 N %d relu +residual -> int8",
                     c, n, h, w, no);
            cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
            qconv_node(&t, 3, 2, 1, 0);
            snprintf(label, sizeof label, "igemm t18 C %d %dx%dx%d 3x3 s2 N %d -> float", c, n, h,
                     w, no);
            cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
            qconv_node(&t, 3, 2, 1, 0);
            snprintf(label, sizeof label, "igemm t18 C %d %dx%dx%d 3x3 s2 N %d -> float nchw", c,
                     n, h, w, no);
            cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL, label);
        }
    }
    { /* PRECIS_CUDA_IGEMM_TI=256: the 64 x 256 form at Nout 264 */
        setenv("PRECIS_CUDA_IGEMM_TI", "256", 1);
        cc_input a[5] = {{.name = "x", .rank = 4, .dims = {4, 64, 17, 19}, .dtype = I8,
                          .nhwc = true, .raw = x64},
                         {.name = "w", .rank = 4, .dims = {264, 64, 3, 3}, .init = true,
                          .dtype = I8, .raw = wb},
                         {.name = "ws", .rank = 1, .dims = {264}, .init = true, .lo = 1e-3f,
                          .hi = 4e-3f},
                         {.name = "b", .rank = 1, .dims = {264}, .init = true},
                         {.name = "z", .rank = 4, .dims = {4, 264, 17, 19}, .dtype = I8,
                          .nhwc = true, .raw = zb}};
        qconv_node(&t, 3, 1, 1, 0.2f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
                   "igemm t18 TI=256 C 64 4x17x19 3x3 N 264 +residual+relu -> int8");
        qconv_node(&t, 3, 2, 1, 0);
        cu_run_lay(&t, 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
                   "igemm t18 TI=256 C 64 4x17x19 3x3 s2 N 264 -> float");
        unsetenv("PRECIS_CUDA_IGEMM_TI");
    }
    for (int o = 0; o < 3; o++) { /* uint8 x, C 64, N 64 / 128 / 256: plain and biased */
        int no = 64 << o;
        cc_input u[5] = {{.name = "x", .rank = 4, .dims = {3, 64, 17, 19}, .dtype = U8,
                          .nhwc = true, .raw = rand_u8(u64, 3 * 64 * 17 * 19, 0, 255)},
                         {.name = "w", .rank = 4, .dims = {no, 64, 3, 3}, .init = true,
                          .dtype = I8, .raw = wb},
                         {.name = "ws", .rank = 1, .dims = {no}, .init = true, .lo = 1e-3f,
                          .hi = 4e-3f},
                         {.name = "b", .rank = 1, .dims = {no}, .init = true},
                         {.name = "z", .rank = 4, .dims = {3, no, 17, 19}, .dtype = U8,
                          .nhwc = true, .raw = rand_u8(uz, 3 * no * 17 * 19, 0, 255)}};
        for (int b = 0; b < 2; b++) {
            for (int s = 1; s <= 2; s++) {
                if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
                cu_bias_io = b ? 1u | 1u << 4 | 1u << 16 : 0;
                cu_fused_node(&t, PR_OP_QConv, "QConv");
                n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
                n_ints(&t, "strides", (int64_t[]){s, s}, 2);
                n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
                n_float(&t, "x_scale", 0.01f);
                n_int(&t, "y_type", 2);
                n_float(&t, "y_scale", 0.05f);
                n_float(&t, "z_scale", 0.03f);
                n_str(&t, "act", "Relu");
                if (s == 2) u[4].dims[2] = 9, u[4].dims[3] = 10;
                snprintf(label, sizeof label,
                         "%sigemm t18 u8 C 64 3x3 s%d N %d relu +u8 residual -> u8",
                         b ? "[biased] " : "", s, no);
                cu_run_lay(&t, 5, u, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
                u[4].dims[2] = 17, u[4].dims[3] = 19;
                cu_bias_io = 0;
                unsetenv("PRECIS_CUDA_U8_BIAS");
            }
        }
    }
    unsetenv("PRECIS_CUDA_IGEMM");
}

/* The plan input's QuantizeLinear with the Reorder to NHWC folded in
 * (pr_cu_quantize_nhwc): the four-pixel form (float32 x, C 1..4, H * W % 4
 * == 0) and the general one (C 5, H * W odd, PRECIS_CUDA_QNHWC_V4=0), uint8
 * and int8 y, saturating both ways: exact. */
static void test_quant_nhwc(void) {
    printf("int8 quantize to nhwc\n");
    static const float qs[1] = {0.02f};
    static const uint8_t zpu[1] = {0};
    static const int8_t zps[1] = {0};
    static const bool Q1[1] = {true};
    static const int shp[7][4] = {{2, 3, 8, 12}, {1, 1, 4, 4}, {2, 4, 6, 6}, {2, 2, 5, 4},
                                  {3, 3, 9, 7},  {2, 5, 4, 4}, {2, 3, 8, 12}};
    tnode t;
    char label[96];
    for (int i = 0; i < 7; i++)
        for (int u = 0; u < 2; u++) {
            if (i == 6) setenv("PRECIS_CUDA_QNHWC_V4", "0", 1);
            cc_input q[3] = {{.name = "x", .rank = 4,
                              .dims = {shp[i][0], shp[i][1], shp[i][2], shp[i][3]},
                              .lo = -4, .hi = 6},
                             {.name = "s", .rank = 0, .init = true, .data = qs},
                             {.name = "zp", .rank = 0, .init = true,
                              .dtype = u ? PRECIS_UINT8 : PRECIS_INT8,
                              .raw = u ? (const void *)zpu : (const void *)zps}};
            n_init(&t, PR_OP_QuantizeLinear, "QuantizeLinear", 13);
            snprintf(label, sizeof label, "quantize fp32 [%d, %d, %d, %d] -> %s nhwc%s",
                     shp[i][0], shp[i][1], shp[i][2], shp[i][3], u ? "u8" : "int8",
                     i == 6 ? " (QNHWC_V4=0)" : "");
            cu_run_lay(&t, 3, q, 1, Q1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
                       label);
            unsetenv("PRECIS_CUDA_QNHWC_V4");
        }
}

/* cu_stem.cu's kernel (route t3 of a space-to-depth conv, and its 1 x 4 warp
 * form: PRECIS_CUDA_STEM=2; PRECIS_CUDA_STEM=0: the mma.sync 64x128 tile as
 * before) and the igemm tiles' epilogue with and without its int <-> float
 * conversions (PRECIS_CUDA_IGEMM_EPI=0, wgmma 128x64): the stem 7x7 s2 pad 3
 * over 1, 3 and 4 channels (the copy's C forms); uint8 x (plain, biased:
 * PRECIS_CUDA_U8_BIAS=all) and int8 x, NCHW and NHWC x; odd H / W, batch 3,
 * OW over one 64-pixel tile (75, 66: a partial tile), Nout 16 / 64 / 80 (two
 * column blocks, the last partial); ReLU or none; int8 / uint8 y; then the
 * timed choice; and the N 256 residual epilogues (int8, uint8, biased). */
static void test_stem(void) {
    printf("int8 stem on the space-to-depth copy, igemm epilogue forms\n");
    static unsigned char ux[3 * 3 * 17 * 150];
    static int8_t sx[3 * 3 * 17 * 150], sw[80 * 4 * 49];
    static const bool Y1[1] = {true};
    /* batch, H, W, Nout, channels (the space-to-depth copy's C 1 / 3 / 4 forms) */
    static const int shp[3][5] = {{2, 21, 19, 16, 1}, {3, 17, 150, 64, 3}, {1, 9, 131, 80, 4}};
    const bool wg = wgmma_dev();
    tnode t;
    char label[160];
    rand_u8(ux, 3 * 3 * 17 * 150, 0, 255);
    rand_i8(sx, 3 * 3 * 17 * 150, -128, 127);
    rand_i8(sw, 80 * 4 * 49, -127, 127);
    /* modes: 0 stem kernel (t3), 1 t3 with PRECIS_CUDA_STEM=0, 2 wgmma 128x64 with
     * conversions, 3 wgmma 128x64 without, 4 the stem kernel's 1 x 4 warps (STEM=2) */
    static const char *const mname[5] = {"stem", "STEM=0 t3", "EPI=0 t8", "t8", "STEM=2 stem"};
    for (int si = 0; si < 3; si++)
        for (int xk = 0; xk < 3; xk++) /* uint8, biased uint8, int8 x */
            for (int v = 0; v < 4; v++) { /* bit 0: ReLU; bit 1: NHWC x (uint8 y when xk < 2) */
                const int nb = shp[si][0], H = shp[si][1], W = shp[si][2], No = shp[si][3],
                          ci = shp[si][4];
                const bool u8y = xk < 2 && (v & 1), relu = v & 1, nhwc = v >> 1;
                cc_input st[4] = {{.name = "x", .rank = 4, .dims = {nb, ci, H, W},
                                   .dtype = xk < 2 ? PRECIS_UINT8 : PRECIS_INT8, .nhwc = nhwc,
                                   .raw = xk < 2 ? (void *)ux : (void *)sx},
                                  {.name = "w", .rank = 4, .dims = {No, ci, 7, 7}, .init = true,
                                   .dtype = PRECIS_INT8, .raw = sw},
                                  {.name = "ws", .rank = 1, .dims = {No}, .init = true,
                                   .lo = 1e-3f, .hi = 6e-3f},
                                  {.name = "b", .rank = 1, .dims = {No}, .init = true}};
                for (int mode = 0; mode < 5; mode++) {
                    if ((mode == 2 || mode == 3) && !wg) continue;
                    setenv("PRECIS_CUDA_IGEMM", mode == 2 || mode == 3 ? "t8" : "t3", 1);
                    if (mode == 1) setenv("PRECIS_CUDA_STEM", "0", 1);
                    if (mode == 4) setenv("PRECIS_CUDA_STEM_POOL", "w2", 1);
                    if (mode == 2) setenv("PRECIS_CUDA_IGEMM_EPI", "0", 1);
                    if (xk == 1) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
                    cu_bias_io = xk == 1 ? 1u | (u8y ? 1u << 16 : 0) : 0;
                    cu_fused_node(&t, PR_OP_QConv, "QConv");
                    n_ints(&t, "pads", (int64_t[]){3, 3, 3, 3}, 4);
                    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
                    n_ints(&t, "kernel_shape", (int64_t[]){7, 7}, 2);
                    n_float(&t, "x_scale", 0.01f);
                    n_int(&t, "y_type", u8y ? 2 : 3);
                    n_float(&t, "y_scale", 0.1f);
                    if (relu) n_str(&t, "act", "Relu");
                    snprintf(label, sizeof label, "%s %s x %dx%dx%dx%d%s N %d%s -> %s", mname[mode],
                             xk == 0 ? "u8" : xk == 1 ? "u8 biased" : "s8", nb, ci, H, W,
                             nhwc ? " nhwc" : "", No, relu ? " relu" : "", u8y ? "u8" : "s8");
                    cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
                               label);
                    cu_bias_io = 0;
                    unsetenv("PRECIS_CUDA_U8_BIAS");
                    unsetenv("PRECIS_CUDA_STEM");
                    unsetenv("PRECIS_CUDA_IGEMM_EPI");
                }
                unsetenv("PRECIS_CUDA_IGEMM");
                if (v == 1 && xk == 0) { /* the timed choice (the stem kernel among the routes) */
                    snprintf(label, sizeof label, "timed stem u8 x %dx%dx%dx%d N %d relu -> u8",
                             nb, ci, H, W, No);
                    cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
                               label);
                }
            }
    if (!wg) return;
    /* the 16-byte store loop's residual forms with / without conversions: 3x3 N 256,
     * int8 x + int8 residual (ReLU after), uint8 x + uint8 residual (plain, biased; ReLU
     * before the add), every wgmma tile */
    static int8_t xb[2 * 64 * 9 * 11], wb[256 * 64 * 9], zb[2 * 256 * 9 * 11];
    static unsigned char xu[2 * 64 * 9 * 11], zu[2 * 256 * 9 * 11];
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {2, 64, 9, 11}, .dtype = PRECIS_INT8,
                      .nhwc = true, .raw = rand_i8(xb, 2 * 64 * 9 * 11, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {256, 64, 3, 3}, .init = true,
                      .dtype = PRECIS_INT8, .raw = rand_i8(wb, 256 * 64 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {256}, .init = true, .lo = 1e-3f,
                      .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {256}, .init = true},
                     {.name = "z", .rank = 4, .dims = {2, 256, 9, 11}, .dtype = PRECIS_INT8,
                      .nhwc = true, .raw = rand_i8(zb, 2 * 256 * 9 * 11, -128, 127)}};
    cc_input u[5] = {a[0], a[1], a[2], a[3], a[4]};
    u[0].dtype = u[4].dtype = PRECIS_UINT8;
    u[0].raw = rand_u8(xu, 2 * 64 * 9 * 11, 0, 255);
    u[4].raw = rand_u8(zu, 2 * 256 * 9 * 11, 0, 255);
    static const char *const tiles[5] = {"t4", "t5", "t6", "t7", "t8"};
    for (int i = 0; i < 5; i++)
        for (int e = 0; e < 2; e++) {
            setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
            if (e) setenv("PRECIS_CUDA_IGEMM_EPI", "0", 1);
            qconv_node(&t, 3, 1, 1, 0.3f);
            n_float(&t, "z_scale", 0.03f);
            n_str(&t, "act2", "Relu");
            snprintf(label, sizeof label, "igemm %s%s 3x3 N 256 +s8 residual+relu -> s8",
                     tiles[i], e ? " EPI=0" : "");
            cu_run_lay(&t, 5, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
            for (int b = 0; b < 2; b++) {
                if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
                cu_bias_io = b ? 1u | 1u << 4 | 1u << 16 : 0;
                cu_fused_node(&t, PR_OP_QConv, "QConv");
                n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
                n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
                n_float(&t, "x_scale", 0.01f);
                n_int(&t, "y_type", 2);
                n_float(&t, "y_scale", 0.08f);
                n_float(&t, "z_scale", 0.03f);
                n_str(&t, "act", "Relu");
                snprintf(label, sizeof label, "%sigemm %s%s u8 3x3 N 256 relu +u8 residual -> u8",
                         b ? "[biased] " : "", tiles[i], e ? " EPI=0" : "");
                cu_run_lay(&t, 5, u, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL, label);
                cu_bias_io = 0;
                unsetenv("PRECIS_CUDA_U8_BIAS");
            }
            unsetenv("PRECIS_CUDA_IGEMM_EPI");
        }
    unsetenv("PRECIS_CUDA_IGEMM");
}

/* One 1x1 QConv case of test_q1x1: x [nb, K, h, w] (int8, or uint8 when u8),
 * Nout outputs, stride st; ys > 0: int8 (uint8 when u8) out, else float;
 * act / act2 ReLU; zk: residual (0 none, 1 int8, 2 uint8); bias: the
 * biased uint8 storage of x, the residual and y (PRECIS_CUDA_U8_BIAS=all). */
static void q1x1_case(const char *tile, int nb, int K, int h, int w, int Nout, int st, float ys,
                      bool act, bool act2, int zk, bool u8, bool bias) {
    static int8_t xb[4 * 512 * 96 * 96 / 8], wb[2048 * 2048], zb[4 * 272 * 96 * 96];
    static const bool Y1[1] = {true};
    const pr_dtype I8 = PRECIS_INT8, U8 = PRECIS_UINT8;
    int oh = (h - 1) / st + 1, ow = (w - 1) / st + 1;
    if ((int64_t)nb * K * h * w > (int64_t)sizeof xb || (int64_t)Nout * K > (int64_t)sizeof wb ||
        (int64_t)nb * Nout * oh * ow > (int64_t)sizeof zb) {
        CHECK(!"q1x1_case: buffers too small");
        return;
    }
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {nb, K, h, w}, .dtype = u8 ? U8 : I8,
                      .nhwc = true, .raw = rand_i8(xb, (int64_t)nb * K * h * w, -128, 127)},
                     {.name = "w", .rank = 4, .dims = {Nout, K, 1, 1}, .init = true, .dtype = I8,
                      .raw = rand_i8(wb, (int64_t)Nout * K, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {Nout}, .init = true, .lo = 1e-3f,
                      .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {Nout}, .init = true},
                     {.name = "z", .rank = 4, .dims = {nb, Nout, oh, ow},
                      .dtype = zk == 2 ? U8 : I8, .nhwc = true,
                      .raw = rand_i8(zb, (int64_t)nb * Nout * oh * ow, -128, 127)}};
    tnode t;
    cu_fused_node(&t, PR_OP_QConv, "QConv");
    n_ints(&t, "kernel_shape", (int64_t[]){1, 1}, 2);
    n_ints(&t, "strides", (int64_t[]){st, st}, 2);
    n_float(&t, "x_scale", u8 ? 0.01f : 0.02f);
    float sc = 0.2f * sqrtf((float)K / 64.0f); /* y_scale: keep outputs inside the range */
    if (ys > 0) {
        n_int(&t, "y_type", u8 ? 2 : 3);
        n_float(&t, "y_scale", ys * sc);
    }
    if (zk) n_float(&t, "z_scale", 0.03f);
    if (act) n_str(&t, "act", "Relu");
    if (act2) n_str(&t, "act2", "Relu");
    if (bias) {
        setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
        cu_bias_io = (u8 ? 1u : 0u) | (zk == 2 ? 1u << 4 : 0u) | (ys > 0 && u8 ? 1u << 16 : 0u);
    }
    char label[160];
    snprintf(label, sizeof label, "%sq1x1 %s %dx%dx%dx%d K %d N %d s%d%s%s%s -> %s",
             bias ? "[biased] " : "", tile, nb, K, h, w, K, Nout, st, u8 ? " u8 x" : "",
             act ? " relu" : "", zk == 1 ? " +int8 residual" : zk == 2 ? " +u8 residual" : "",
             ys > 0 ? (u8 ? "u8" : "int8") : "float");
    if (act2) strncat(label, " (relu after)", sizeof label - strlen(label) - 1);
    cu_run_lay(&t, zk ? 5 : 4, a, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm,
               ys > 0 ? Q_TOL : QF_TOL, label);
    cu_bias_io = 0;
    unsetenv("PRECIS_CUDA_U8_BIAS");
}

/* The Q1X1 tiles (cu_q1x1.cu, PRECIS_CUDA_IGEMM=t9..t12), each forced: M over
 * several tiles a block (the persistent loop and its cp.async ring), M and N
 * not multiples of the tile, K 16..512 (K % 32 == 16 too), int8 / uint8 /
 * biased x, int8 / uint8 / biased residuals, ReLU before / after the add,
 * float out, N % 16 != 0 (the general epilogue), stride 2; then the timed
 * choice over K 1024 / 2048 (where the resident tiles refuse: the timing
 * skips them; the K-streamed ones, test_q1x1k, take them). */
static void test_q1x1(void) {
    printf("int8 q1x1\n");
    static const char *const tiles[4] = {"t9", "t10", "t11", "t12"};
    for (int i = 0; i < 4; i++) {
        const char *tl = tiles[i];
        setenv("PRECIS_CUDA_IGEMM", tl, 1);
        q1x1_case(tl, 4, 64, 96, 96, 272, 1, 1.0f, false, true, 1, false, false);
        q1x1_case(tl, 2, 64, 37, 29, 256, 1, 1.0f, true, false, 2, true, false);
        q1x1_case(tl, 2, 64, 37, 29, 256, 1, 1.0f, true, false, 2, true, true);
        q1x1_case(tl, 2, 48, 23, 19, 80, 1, 1.0f, false, true, 2, true, true);
        q1x1_case(tl, 3, 16, 21, 17, 64, 1, 1.0f, true, false, 0, false, false);
        q1x1_case(tl, 2, 128, 21, 17, 40, 1, 1.0f, true, false, 1, false, false);
        q1x1_case(tl, 2, 64, 21, 17, 256, 1, 1.0f, true, true, 1, false, false);
        q1x1_case(tl, 2, 256, 21, 19, 264, 1, 0.0f, false, false, 0, false, false);
        q1x1_case(tl, 2, 256, 23, 17, 128, 2, 1.0f, false, true, 1, false, false);
        q1x1_case(tl, 2, 256, 23, 17, 96, 2, 1.0f, false, true, 2, true, true);
        /* the largest K each tile's shared memory takes (about (BN + 3 BM) * K bytes) */
        q1x1_case(tl, 2, i == 3 ? 512 : i == 1 ? 768 : 384, 15, 13, 64, 1, 1.0f, true, false, 0,
                  false, false);
        q1x1_case(tl, 2, 96, 15, 13, 128, 1, 1.0f, false, true, 1, false, false);
    }
    unsetenv("PRECIS_CUDA_IGEMM");
    q1x1_case("timed", 2, 1024, 7, 9, 64, 1, 1.0f, true, false, 0, false, false);
    q1x1_case("timed", 1, 2048, 7, 7, 48, 1, 1.0f, false, true, 1, false, false);
    q1x1_case("timed", 4, 64, 30, 30, 256, 1, 1.0f, false, true, 1, false, false);
}

/* The K-streamed tiles (cu_q1x1.cu's k_q1x1k: PRECIS_CUDA_IGEMM=t13;
 * cu_q1x1_wg.cu's wgmma ones, on Hopper: t14, t15; cu_q1x1_ws.cu's
 * warp-specialized one: t16), each forced: K 512 / 1024 / 2048 (and 1040: a
 * partial 128-byte chunk), N 1024 / 2048 and partial column tiles, M over
 * several tiles a block with a residual at K 128 / 256 (the ring across
 * tiles, its depth capped by the residual buffers), stride 2, int8 / uint8 /
 * biased x and residuals, ReLU before / after, float out (the general
 * epilogue). t16 takes stride 2 only with H == 2 OH (an even H here); its
 * own cases: several M tiles a block over both consumer warpgroups with the
 * ring wrapping (at K 256 and at K 1024: more steps a tile than stages),
 * stride-2 row tiles with a partial last one. */
static void test_q1x1k(void) {
    printf("int8 q1x1k\n");
    static const char *const tiles[4] = {"t13", "t14", "t15", "t16"};
    for (int i = 0; i < 4; i++) {
        const char *tl = tiles[i];
        const bool ws = i == 3;
        if (i > 0 && !wgmma_dev()) continue;
        setenv("PRECIS_CUDA_IGEMM", tl, 1);
        q1x1_case(tl, 2, 256, 48, 48, 1024, 1, 1.0f, false, true, 1, false, false);
        q1x1_case(tl, 2, 128, 48, 48, 512, 1, 1.0f, true, false, 2, true, true);
        q1x1_case(tl, 2, 1024, 14, 14, 256, 1, 1.0f, true, false, 0, false, false);
        q1x1_case(tl, 1, 2048, 7, 7, 512, 1, 1.0f, true, false, 0, true, false);
        q1x1_case(tl, 1, 512, 7, 7, 2048, 1, 1.0f, false, true, 1, false, false);
        q1x1_case(tl, 1, 512, 7, 9, 1024, 1, 1.0f, true, false, 2, true, true);
        q1x1_case(tl, 2, 1024, 14, 14, 2048, 2, 1.0f, false, false, 0, false, false);
        q1x1_case(tl, 2, 512, ws ? 16 : 15, 13, 1024, 2, 1.0f, false, true, 1, true, true);
        q1x1_case(tl, 2, 1040, 9, 7, 80, 1, 1.0f, true, false, 1, true, false);
        q1x1_case(tl, 2, 384, 11, 9, 128, 1, 1.0f, true, false, 2, true, false);
        q1x1_case(tl, 2, 256, 21, 19, 264, 1, 0.0f, false, false, 0, false, false);
        q1x1_case(tl, 3, 48, 21, 17, 64, 1, 1.0f, true, false, 2, true, true);
        if (!ws) continue;
        q1x1_case(tl, 2, 256, 48, 40, 2048, 1, 1.0f, true, false, 1, false, false);
        q1x1_case(tl, 2, 256, 48, 40, 2048, 1, 1.0f, false, true, 2, true, true);
        q1x1_case(tl, 4, 256, 28, 28, 512, 2, 1.0f, false, true, 1, false, false);
        q1x1_case(tl, 2, 512, 28, 28, 1024, 2, 1.0f, true, false, 2, true, false);
        q1x1_case(tl, 3, 1024, 14, 14, 2048, 2, 0.0f, false, false, 0, false, false);
        q1x1_case(tl, 1, 64, 100, 6, 96, 2, 1.0f, false, false, 0, false, false);
        /* K 1024 (16 steps a tile, more than the ring) over 2 tiles a block: the order barrier */
        q1x1_case(tl, 2, 1024, 28, 28, 2048, 1, 1.0f, true, false, 2, false, false);
    }
    unsetenv("PRECIS_CUDA_IGEMM");
}

/* The CNN kernels of phase 6: our depthwise conv (forced: PRECIS_CUDA_DWCONV=1)
 * in both layouts over every vector width (C 24, 12, 6, 5), 5x5 and 3x3,
 * strides 1 and 2, asymmetric pads, ReLU6, residual + act2, no bias; global
 * pools on large maps (split into segments), int8 average pools (global and
 * windowed, both layouts), int8 nearest Resize. */
static void test_cnn(void) {
    printf("cnn\n");
    static int8_t xb[8 * 32 * 13 * 11 > 2 * 24 * 40 * 40 ? 8 * 32 * 13 * 11 : 2 * 24 * 40 * 40];
    static const bool Y1[1] = {true};
    setenv("PRECIS_CUDA_DWCONV", "1", 1);
    static const int chans[4] = {24, 12, 6, 5};
    for (int ci = 0; ci < 4; ci++)
        for (int lay = 0; lay < 2; lay++)
            for (int v = 0; v < 3; v++) {
                int C = chans[ci], k = v == 1 ? 3 : 5, st = v == 2 ? 2 : 1;
                if (lay && C % 8) continue; /* NHWC convs need C % 8 == 0 (conv_nhwc_ok) */
                tnode t;
                cu_fused_node(&t, PR_OP_FusedConv, "FusedConv");
                int64_t p = k / 2, pads[4] = {p, p, p, p};
                if (v == 2) {
                    pads[0] = 1;
                    pads[1] = 2;
                    pads[2] = 2;
                    pads[3] = 1;
                }
                n_ints(&t, "pads", pads, 4);
                n_ints(&t, "strides", (int64_t[]){st, st}, 2);
                n_ints(&t, "kernel_shape", (int64_t[]){k, k}, 2);
                n_int(&t, "group", C);
                n_str(&t, "act", "Clip");
                n_float(&t, "act_alpha", 0.0f);
                n_float(&t, "act_beta", 6.0f);
                int64_t nb = lay ? 8 : 1, oh = (13 + 2 * p - k) / st + 1, ow = (11 + 2 * p - k) / st + 1;
                if (v == 2) {
                    oh = (13 + 3 - k) / 2 + 1;
                    ow = (11 + 3 - k) / 2 + 1;
                }
                cc_input a[4] = {{.name = "x", .rank = 4, .dims = {nb, C, 13, 11}, .nhwc = lay, .lo = -3, .hi = 3},
                                 {.name = "w", .rank = 4, .dims = {C, 1, k, k}, .init = true},
                                 {.name = "b", .rank = 1, .dims = {C}, .init = true},
                                 {.name = "z", .rank = 4, .dims = {nb, C, oh, ow}, .nhwc = lay}};
                int nin = 3;
                if (v == 1) { /* residual then act2, no bias */
                    n_str(&t, "act2", "Relu");
                    a[2].name = NULL;
                    nin = 4;
                }
                for (int di = 0; di < 3; di++) {
                    pr_dtype D = DTS[di];
                    if (lay && D == PRECIS_FLOAT32) continue; /* NHWC: the 16-bit types */
                    char label[128];
                    snprintf(label, sizeof label, "dwconv ours %s C%d %dx%d s%d%s%s %s",
                             lay ? "nhwc" : "nchw", C, k, k, st, v == 2 ? " asym" : "",
                             v == 1 ? " residual+relu" : " relu6", cu_dtn(D));
                    cu_run_lay(&t, nin, a, 1, lay ? Y1 : NULL, D, &pr_cuda_impl_conv, cu_conv_tol(D), label);
                }
            }
    unsetenv("PRECIS_CUDA_DWCONV");
    static const int qch[4] = {32, 24, 12, 5};
    static int8_t wq[32 * 25], zq[8 * 32 * 13 * 11];
    for (int ci = 0; ci < 4; ci++) /* int8 depthwise QConv (cuda_qdw.c) */
        for (int v = 0; v < 3; v++) {
            int C = qch[ci], lay = v != 2, k = v == 1 ? 3 : 5, st = v == 1 ? 2 : 1;
            int64_t nb = lay ? 8 : 1, p = k / 2, oh = (13 + 2 * p - k) / st + 1,
                    ow = (11 + 2 * p - k) / st + 1;
            cc_input a[5] = {{.name = "x", .rank = 4, .dims = {nb, C, 13, 11}, .nhwc = lay,
                              .dtype = PRECIS_INT8, .raw = rand_i8(xb, nb * C * 143, -128, 127)},
                             {.name = "w", .rank = 4, .dims = {C, 1, k, k}, .init = true,
                              .dtype = PRECIS_INT8, .raw = rand_i8(wq, C * k * k, -127, 127)},
                             {.name = "ws", .rank = 1, .dims = {C}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                             {.name = "b", .rank = 1, .dims = {C}, .init = true},
                             {.name = "z", .rank = 4, .dims = {nb, C, oh, ow}, .nhwc = lay,
                              .dtype = PRECIS_INT8, .raw = rand_i8(zq, nb * C * oh * ow, -128, 127)}};
            tnode t;
            qconv_node(&t, k, st, (int)p, v == 2 ? 0.0f : 0.04f);
            n_int(&t, "group", C);
            n_str(&t, "act", "Clip");
            n_float(&t, "act_alpha", 0.0f);
            n_float(&t, "act_beta", 6.0f);
            if (v == 1) n_float(&t, "z_scale", 0.03f);
            char label[128];
            snprintf(label, sizeof label, "qconv depthwise %s C%d %dx%d s%d relu6%s -> %s",
                     lay ? "nhwc" : "nchw", C, k, k, st, v == 1 ? "+residual" : "",
                     v == 2 ? "fp16" : "int8");
            cu_run_lay(&t, v == 1 ? 5 : 4, a, 1, lay ? Y1 : NULL, v == 2 ? PRECIS_FLOAT16 : PRECIS_FLOAT32,
                       &pr_cuda_impl_qdwconv, v == 2 ? (cc_tolerance){4e-3f, 4e-3f} : Q_TOL, label);
        }
    for (int lay = 0; lay < 2; lay++) { /* 1x1 + ReLU6 (cuDNN, then our epilogue kernel) */
        tnode t;
        cu_fused_node(&t, PR_OP_FusedConv, "FusedConv");
        n_ints(&t, "kernel_shape", (int64_t[]){1, 1}, 2);
        n_str(&t, "act", "Clip");
        n_float(&t, "act_alpha", 0.0f);
        n_float(&t, "act_beta", 6.0f);
        cc_input a[3] = {{.name = "x", .rank = 4, .dims = {lay ? 8 : 1, 32, 9, 7}, .nhwc = lay, .lo = -2, .hi = 2},
                         {.name = "w", .rank = 4, .dims = {48, 32, 1, 1}, .init = true},
                         {.name = "b", .rank = 1, .dims = {48}, .init = true}};
        for (int di = lay; di < 3; di++) {
            char label[128];
            snprintf(label, sizeof label, "conv1x1 relu6 %s %s", lay ? "nhwc" : "nchw", cu_dtn(DTS[di]));
            cu_run_lay(&t, 3, a, 1, lay ? Y1 : NULL, DTS[di], &pr_cuda_impl_conv, cu_conv_tol(DTS[di]), label);
        }
    }
    for (int lay = 0; lay < 2; lay++) {
        cc_input g[1] = {{.name = "x", .rank = 4, .dims = {2, 24, 40, 40}, .nhwc = lay}};
        for (int mx = 0; mx < 2; mx++) {
            tnode t;
            if (mx) n_init(&t, PR_OP_GlobalMaxPool, "GlobalMaxPool", 1);
            else n_init(&t, PR_OP_GlobalAveragePool, "GlobalAveragePool", 1);
            for (int di = lay; di < 3; di++) {
                char label[128];
                snprintf(label, sizeof label, "global %s pool 40x40 %s %s", mx ? "max" : "average",
                         lay ? "nhwc" : "nchw", cu_dtn(DTS[di]));
                cu_run_lay(&t, 1, g, 1, lay ? Y1 : NULL, DTS[di], &pr_cuda_impl_pool, cc_tol(DTS[di]),
                           label);
            }
        }
        cc_input q[1] = {{.name = "x", .rank = 4, .dims = {2, 24, 40, 40}, .nhwc = lay,
                          .dtype = PRECIS_INT8, .raw = rand_i8(xb, 2 * 24 * 1600, -128, 127)}};
        tnode t;
        cu_fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "GlobalAveragePool");
        n_float(&t, "x_scale", 0.02f);
        n_int(&t, "y_type", 3);
        n_float(&t, "y_scale", 0.002f);
        cu_run_lay(&t, 1, q, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
                   lay ? "qpool global 40x40 nhwc -> int8" : "qpool global 40x40 nchw -> int8");
        cu_fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "AveragePool");
        n_ints(&t, "kernel_shape", (int64_t[]){3, 2}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_ints(&t, "pads", (int64_t[]){1, 0, 1, 1}, 4);
        n_int(&t, "count_include_pad", lay);
        n_float(&t, "x_scale", 0.02f);
        n_int(&t, "y_type", 3);
        n_float(&t, "y_scale", 0.01f);
        cu_run_lay(&t, 1, q, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
                   lay ? "qpool average 3x2 s2 nhwc count_include_pad -> int8"
                       : "qpool average 3x2 s2 nchw -> int8");
        cu_fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "AveragePool");
        n_ints(&t, "kernel_shape", (int64_t[]){2, 2}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_float(&t, "x_scale", 0.02f);
        cu_run_lay(&t, 1, q, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, QF_TOL,
                   lay ? "qpool average 2x2 nhwc -> float" : "qpool average 2x2 nchw -> float");
    }
    static const float sc[4] = {1, 1, 2, 2};
    cc_input r[3] = {{.name = "x", .rank = 4, .dims = {2, 24, 7, 6}, .dtype = PRECIS_INT8,
                      .raw = rand_i8(xb, 2 * 24 * 42, -128, 127)},
                     {.name = "roi", .rank = 1, .dims = {0}, .init = true},
                     {.name = "s", .rank = 1, .dims = {4}, .init = true, .data = sc}};
    tnode t;
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "nearest");
    cu_run_tol(&t, 3, r, 1, PRECIS_FLOAT32, &pr_cuda_impl_pool, (cc_tolerance){0, 0},
               "resize nearest int8");
}

/* ------------------------------------------------------------------- FP8 */

/* n random e4m3 codes of values in [-r, r) (one pool per call site). */
static uint8_t *rand_f8(uint8_t *buf, int64_t n, float r) {
    for (int64_t i = 0; i < n; i++) buf[i] = pr_f32_to_e4m3(cc_rand(-r, r));
    return buf;
}

/* The fp8 QMatMul (cuBLASLt, e4m3 x e4m3, float32 accumulation) against
 * ref's float32 sums of the dequantized products: fp16 outputs to fp16
 * rounding, fp8 outputs within one e4m3 step (1/8 relative) plus what the
 * bias costs near zero: cuBLASLt's FP8 epilogue takes a 16-bit bias (fp16
 * here: up to 2.4e-4 off for |b| < 1, i.e. 5e-3 in units of y_scale 0.05);
 * Q / DQ to and from e4m3 exactly. */
static void test_fp8(void) {
    printf("fp8\n");
    static uint8_t ab[4 * 32 * 128], wb[128 * 96];
    static const float ws[1] = {0.125f}, qs[1] = {0.05f};
    static const uint8_t zp8[1] = {0};
    const pr_dtype F8 = PRECIS_FLOAT8E4M3FN;
    const cc_tolerance H_TOL = {4e-3f, 4e-3f}, F8_TOL = {5e-3f, 0.126f};
    cc_input m[5] = {{.name = "a", .rank = 3, .dims = {4, 32, 128}, .dtype = F8,
                      .raw = rand_f8(ab, 4 * 32 * 128, 4.0f)},
                     {.name = "w", .rank = 2, .dims = {128, 96}, .init = true, .dtype = F8,
                      .raw = rand_f8(wb, 128 * 96, 2.0f)},
                     {.name = "ws", .rank = 1, .dims = {1}, .init = true, .data = ws},
                     {.name = "bias", .rank = 1, .dims = {96}, .init = true},
                     {.name = "z", .rank = 3, .dims = {4, 32, 96}}};
    tnode t;
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    n_str(&t, "act", "Gelu");
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT16, &pr_cuda_impl_fp8, H_TOL, "fp8 qmatmul bias+gelu -> fp16");
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    cu_run_tol(&t, 5, m, 1, PRECIS_BFLOAT16, &pr_cuda_impl_fp8, cc_tol(PRECIS_BFLOAT16),
               "fp8 qmatmul bias+residual -> bf16");
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    n_str(&t, "act", "Relu");
    n_int(&t, "y_type", F8);
    n_float(&t, "y_scale", 0.05f);
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT16, &pr_cuda_impl_fp8, F8_TOL, "fp8 qmatmul bias+relu -> fp8");
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul"); /* float32 out: a bf16 bias (5e-3 off at 1) */
    n_float(&t, "a_scale", 0.0625f);
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT32, &pr_cuda_impl_fp8, (cc_tolerance){8e-3f, 4e-3f},
               "fp8 qmatmul bias -> fp32");
    cc_input mt[3] = {m[0], m[1], m[2]};
    mt[1].dims[0] = 96;
    mt[1].dims[1] = 128;
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.0625f);
    n_int(&t, "transB", 1);
    cu_run_tol(&t, 3, mt, 1, PRECIS_FLOAT16, &pr_cuda_impl_fp8, H_TOL, "fp8 qmatmul transB -> fp16");
    /* Quantize (saturating: inputs reach 2x the range) / Dequantize, exact */
    cc_input q[3] = {{.name = "x", .rank = 2, .dims = {37, 64}, .lo = -45, .hi = 45},
                     {.name = "s", .rank = 0, .init = true, .data = qs},
                     {.name = "zp", .rank = 0, .init = true, .dtype = F8, .raw = zp8}};
    n_init(&t, PR_OP_QuantizeLinear, "QuantizeLinear", 19);
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT16, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "quantize fp16 -> fp8 (vector)");
    q[0].dims[1] = 63;
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "quantize fp32 -> fp8");
    cc_input dq[3] = {{.name = "x", .rank = 2, .dims = {37, 64}, .dtype = F8,
                       .raw = rand_f8(ab, 37 * 64, 400.0f)}, q[1], q[2]};
    n_init(&t, PR_OP_DequantizeLinear, "DequantizeLinear", 19);
    cu_run_tol(&t, 3, dq, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, (cc_tolerance){0, 0},
               "dequantize fp8 -> fp32");
}

/* The small-K streaming tile (cu_q1x1_st.cu, PRECIS_CUDA_IGEMM=t17: stride 1,
 * K <= 256, the fast epilogue), forced, in each form (PRECIS_CUDA_Q1X1ST_F: BM
 * 64 / 128 on 2 consumer warpgroups, BM 128 on 4; K 256 only at BM 64, where
 * the ring fits), with the default grid and with 2 blocks a column block
 * (PRECIS_CUDA_Q1X1ST_GX: the ring lapping many times): K 64 / 128 / 256, K
 * 48 / 16 / 192 (partial k chunks), N 64 / 128 (one column half idle), 256 /
 * 512 / 1024, N 272 / 80 / 320 (partial column blocks), M with a partial last
 * tile, int8 / uint8 / biased x and residuals, ReLU before / after, no
 * residual; then the timed choice with it on a layer1 conv3 shape. */
static void test_q1x1st(void) {
    printf("int8 q1x1 st\n");
    static const char *const fs[3] = {"1", "2", "3"};
    static const char *const gxs[2] = {"0", "2"};
    setenv("PRECIS_CUDA_IGEMM", "t17", 1);
    for (int f = 0; f < 3; f++)
        for (int g = 0; g < 2; g++) {
            char tl[40];
            snprintf(tl, sizeof tl, "t17 f%s gx%s", fs[f], gxs[g]);
            setenv("PRECIS_CUDA_Q1X1ST_F", fs[f], 1);
            setenv("PRECIS_CUDA_Q1X1ST_GX", gxs[g], 1);
            q1x1_case(tl, 4, 64, 96, 96, 256, 1, 1.0f, false, true, 1, false, false);
            q1x1_case(tl, 2, 64, 37, 29, 256, 1, 1.0f, true, false, 2, true, true);
            q1x1_case(tl, 2, 128, 48, 48, 512, 1, 1.0f, true, false, 2, true, true);
            q1x1_case(tl, 2, 128, 48, 48, 512, 1, 1.0f, false, false, 1, false, false);
            if (f == 0) { /* K 256: BM 64 only */
                q1x1_case(tl, 2, 256, 28, 28, 1024, 1, 1.0f, false, true, 1, false, false);
                q1x1_case(tl, 2, 256, 28, 28, 1024, 1, 1.0f, true, false, 2, false, true);
                q1x1_case(tl, 2, 256, 30, 30, 64, 1, 1.0f, true, false, 0, true, true);
            }
            q1x1_case(tl, 3, 64, 21, 17, 64, 1, 1.0f, true, false, 0, false, false);
            q1x1_case(tl, 2, 64, 41, 39, 256, 1, 1.0f, true, false, 0, true, false);
            q1x1_case(tl, 2, 128, 21, 19, 272, 1, 1.0f, false, true, 1, false, false);
            q1x1_case(tl, 2, 48, 23, 19, 80, 1, 1.0f, false, true, 2, true, true);
            q1x1_case(tl, 3, 16, 21, 17, 128, 1, 1.0f, false, false, 0, true, false);
            q1x1_case(tl, 2, f ? 128 : 192, 19, 23, 320, 1, 1.0f, true, false, 1, false, false);
        }
    unsetenv("PRECIS_CUDA_Q1X1ST_F");
    unsetenv("PRECIS_CUDA_Q1X1ST_GX");
    unsetenv("PRECIS_CUDA_IGEMM");
    q1x1_case("timed", 2, 64, 56, 56, 256, 1, 1.0f, false, true, 1, false, false);
}

/* The stem's two-node graph for test_stem_pool: x -QConv 7x7 s2 pad 3 (t)-> y -MaxPool 3x3
 * s2 pads (1, 1, pe, pe) (p)-> o; x, y, o NHWC where lay (x: xnhwc too). */
static pr_graph *sp_graph(const tnode *t, const tnode *p, pr_dtype xd, pr_dtype yd, int nb, int ci,
                          int H, int W, int No, int OH, int OW, int PH, int PW, const int8_t *w,
                          const float *ws, const float *b, bool lay, bool xnhwc) {
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    const char *names[6] = {"x", "w", "ws", "b", "y", "o"};
    const int64_t dims[6][4] = {{nb, ci, H, W}, {No, ci, 7, 7}, {No}, {No}, {nb, No, OH, OW},
                                {nb, No, PH, PW}};
    const pr_dtype dts[6] = {xd, PRECIS_INT8, PRECIS_FLOAT32, PRECIS_FLOAT32, yd, yd};
    const void *data[6] = {NULL, w, ws, b, NULL, NULL};
    int ti[6];
    for (int i = 0; i < 6; i++) {
        ti[i] = pr_graph_get_tensor(g, names[i], &e);
        pr_tensor *x = &g->tensors[ti[i]];
        x->dtype = dts[i];
        x->rank = i == 2 || i == 3 ? 1 : 4;
        memcpy(x->dims, dims[i], sizeof dims[i]);
        x->layout = lay && (i >= 4 || (i == 0 && xnhwc)) ? PR_LAYOUT_NHWC : PR_LAYOUT_PLAIN;
        if (data[i]) {
            x->flags |= PR_T_INIT;
            x->nbytes = (size_t)pr_numel(x->rank, x->dims) * pr_dtype_size(x->dtype);
            x->data = malloc(x->nbytes);
            memcpy(x->data, data[i], x->nbytes);
            pr_graph_own(g, x->data);
        }
    }
    g->tensors[ti[0]].flags |= PR_T_INPUT;
    g->tensors[ti[5]].flags |= PR_T_OUTPUT;
    const tnode *src[2] = {t, p};
    for (int k = 0; k < 2; k++) {
        int ni = pr_graph_add_node(g, k ? 1 : 4, 1, 0, &e);
        pr_node *n = &g->nodes[ni];
        n->name = src[k]->node.name;
        n->op_type = src[k]->node.op_type;
        n->domain = src[k]->node.domain;
        n->op = src[k]->node.op;
        n->opset = src[k]->node.opset;
        n->attrs = src[k]->node.attrs;
        n->n_attrs = src[k]->node.n_attrs;
        for (int i = 0; i < (k ? 1 : 4); i++) n->inputs[i] = ti[k ? 4 : i];
        n->outputs[0] = ti[k ? 5 : 4];
        g->tensors[ti[k ? 5 : 4]].producer = ni;
    }
    return g;
}

/* The stem with its MaxPool fused (cuda_qgemm.c pr_cu_stem_pool_node, cu_stem.cu's POOL
 * form): QConv 7x7 s2 pad 3 -> MaxPool 3x3 s2 pads (1, 1, pe, pe), a two-node graph run
 * by both impls as the engine would (the conv, then the MaxPool reading its output), on
 * 1 / 3 / 4 channels, uint8 (plain, biased) / int8 x, NCHW / NHWC x, batch 1-3, odd and
 * even OH / OW, OW over 1-4 64-pixel tiles (a partial last one), Nout 16 / 32 / 64 / 80,
 * ReLU or none, int8 / uint8 y. Fused with the MaxPool's own output buffer (its copy of
 * the conv's head) and sharing the conv's (no pass), and PRECIS_CUDA_STEM_POOL=0 (conv
 * then MaxPool): the fused bytes equal the unfused ones exactly, and ref's within 1 (the
 * conv's rounding, as test_stem). */
static int mode_r(int si) { return 2 + si % 3; }

static void test_stem_pool(void) {
    printf("int8 stem with its MaxPool fused\n");
    enum { XN = 3 * 4 * 64 * 64 > 2 * 3 * 224 * 224 ? 3 * 4 * 64 * 64 : 2 * 3 * 224 * 224 };
    static unsigned char ux[XN];
    static int8_t sx[XN], sw[80 * 4 * 49];
    static float ws[80], bs[80];
    rand_u8(ux, XN, 0, 255);
    rand_i8(sx, XN, -128, 127);
    rand_i8(sw, 80 * 4 * 49, -127, 127);
    for (int i = 0; i < 80; i++) {
        ws[i] = cc_rand(1e-3f, 6e-3f);
        bs[i] = cc_rand(-1.0f, 1.0f);
    }
    /* batch, H, W, Nout, channels, the MaxPool's end pad */
    static const int shp[7][6] = {{2, 21, 19, 16, 1, 1}, {3, 17, 150, 64, 3, 0},
                                  {1, 9, 131, 80, 4, 1}, {2, 16, 20, 32, 4, 0},
                                  {1, 11, 300, 16, 3, 1}, {1, 7, 511, 16, 1, 0},
                                  {1, 224, 224, 64, 3, 1}};
    char label[200];
    for (int si = 0; si < 7; si++)
        for (int xk = 0; xk < 3; xk++)    /* uint8, biased uint8, int8 x */
            for (int v = 0; v < 4; v++) { /* bit 0: ReLU, uint8 y (x uint8); bit 1: NHWC x */
                const int nb = shp[si][0], H = shp[si][1], W = shp[si][2], No = shp[si][3],
                          ci = shp[si][4], pe = shp[si][5];
                if (si == 6 && v != 1) continue; /* ResNet-50's stem: one form */
                const int OH = (H + 6 - 7) / 2 + 1, OW = (W + 6 - 7) / 2 + 1;
                const int PH = (OH + 1 + pe - 3) / 2 + 1, PW = (OW + 1 + pe - 3) / 2 + 1;
                const bool relu = v & 1, u8y = xk < 2 && relu, xnhwc = v >> 1;
                const pr_dtype xd = xk < 2 ? PRECIS_UINT8 : PRECIS_INT8,
                               yd = u8y ? PRECIS_UINT8 : PRECIS_INT8;
                const void *xr = xk < 2 ? (const void *)ux : (const void *)sx;
                tnode t, p;
                cu_fused_node(&t, PR_OP_QConv, "QConv");
                n_ints(&t, "pads", (int64_t[]){3, 3, 3, 3}, 4);
                n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
                n_ints(&t, "kernel_shape", (int64_t[]){7, 7}, 2);
                n_float(&t, "x_scale", 0.01f);
                n_int(&t, "y_type", u8y ? 2 : 3);
                n_float(&t, "y_scale", 0.1f);
                if (relu) n_str(&t, "act", "Relu");
                n_init(&p, PR_OP_MaxPool, "MaxPool", 12);
                n_ints(&p, "kernel_shape", (int64_t[]){3, 3}, 2);
                n_ints(&p, "strides", (int64_t[]){2, 2}, 2);
                n_ints(&p, "pads", (int64_t[]){1, 1, pe, pe}, 4);
                snprintf(label, sizeof label, "%s x %dx%dx%dx%d%s N %d%s -> %s, pool pads 1/%d",
                         xk == 0 ? "u8" : xk == 1 ? "u8 biased" : "s8", nb, ci, H, W,
                         xnhwc ? " nhwc" : "", No, relu ? " relu" : "", u8y ? "u8" : "s8", pe);
                /* ref: the two nodes on the host, NCHW */
                pr_err e = {0};
                pr_graph *gr = sp_graph(&t, &p, xd, yd, nb, ci, H, W, No, OH, OW, PH, PW, sw, ws,
                                        bs, false, false);
                pr_buf rin[4], ry[1], ro[1];
                memset(rin, 0, sizeof rin);
                memset(ry, 0, sizeof ry);
                memset(ro, 0, sizeof ro);
                const int64_t xdims[4] = {nb, ci, H, W}, wdims[4] = {No, ci, 7, 7};
                pr_buf_alloc(&rin[0], xd, 4, xdims, "x", &e);
                memcpy(rin[0].data, xr, rin[0].nbytes);
                pr_buf_alloc(&rin[1], PRECIS_INT8, 4, wdims, "w", &e);
                memcpy(rin[1].data, sw, rin[1].nbytes);
                pr_buf_alloc(&rin[2], PRECIS_FLOAT32, 1, (int64_t[]){No}, "ws", &e);
                memcpy(rin[2].data, ws, rin[2].nbytes);
                pr_buf_alloc(&rin[3], PRECIS_FLOAT32, 1, (int64_t[]){No}, "b", &e);
                memcpy(rin[3].data, bs, rin[3].nbytes);
                const pr_buf *rinp[4] = {&rin[0], &rin[1], &rin[2], &rin[3]}, *ryp[1] = {ry};
                bool ok = !pr_exec_node(gr, &gr->nodes[0], rinp, ry, 1, &e) &&
                          !pr_exec_node(gr, &gr->nodes[1], ryp, ro, 1, &e);
                CHECK(ok);
                if (!ok) fprintf(stderr, "%s: ref failed: %s\n", label, e.msg);
                const size_t ybytes = (size_t)nb * No * OH * OW, obytes = (size_t)nb * No * PH * PW;
                unsigned char *got[5] = {malloc(obytes), malloc(obytes), malloc(obytes),
                                         malloc(obytes), malloc(obytes)};
                /* modes: 0 fused, the MaxPool's own buffer; 1 fused, sharing the conv's,
                 * units of 2..4 pooled rows; 2 PRECIS_CUDA_STEM_POOL=0; 3 fused, a unit an
                 * image (at these batches the launcher picks 1 row a unit); 4 fused, the
                 * 2 x 2 warp layout (PRECIS_CUDA_STEM_POOL=w2; the others 1 x 4). The
                 * unfused conv pinned to the stem kernel's route, whose epilogue is the
                 * fused one's (the same bytes; cuBLASLt's may differ by 1 from ref's) */
                char rf[16];
                snprintf(rf, sizeof rf, "r%d", mode_r(si));
                for (int mode = 0; mode < 5 && ok; mode++) {
                    if (mode == 1) setenv("PRECIS_CUDA_STEM_POOL", rf, 1);
                    if (mode == 2) { /* the stem kernel's route (t3): the timed choice may
                                      * take cuBLASLt, whose epilogue rounds differently */
                        setenv("PRECIS_CUDA_STEM_POOL", "0", 1);
                        setenv("PRECIS_CUDA_IGEMM", "t3", 1);
                    }
                    if (mode == 3) setenv("PRECIS_CUDA_STEM_POOL", "r9999", 1);
                    if (mode == 4) setenv("PRECIS_CUDA_STEM_POOL", "w2", 1);
                    if (xk == 1) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
                    pr_graph *gi = sp_graph(&t, &p, xd, yd, nb, ci, H, W, No, OH, OW, PH, PW, sw,
                                            ws, bs, true, xnhwc);
                    pr_cuda_cfg cfg = {pr_cuda_dev_exec(cu_dev), NULL};
                    void *sc = NULL, *sp = NULL;
                    bool sok;
                    bool sup = pr_cuda_impl_qgemm.supports(gi, &gi->nodes[0]) &&
                               pr_cuda_impl_pool.supports(gi, &gi->nodes[1]);
                    CHECK(sup);
                    sok = sup && !pr_cuda_impl_qgemm.prepare(gi, &gi->nodes[0], &cfg, &sc, &e) &&
                            !pr_cuda_impl_pool.prepare(gi, &gi->nodes[1], &cfg, &sp, &e);
                    CHECK(sok);
                    const bool fused = sok && strstr(pr_cuda_impl_pool.describe(sp), "fused");
                    CHECK(fused == (mode != 2)); /* the fused path runs where it should */
                    int ip = pr_cuda_impl_pool.inplace_input(gi, &gi->nodes[1]);
                    CHECK(ip == (mode != 2 ? 0 : -1));
                    /* the device buffers, as the engine holds them */
                    pr_buf bx = rin[0], bw = rin[1], bws = rin[2], bb = rin[3], by = *ry, bo = *ro;
                    unsigned char *hx = malloc(rin[0].nbytes);
                    if (xnhwc) cu_bytes_to_nhwc(xr, hx, xdims, 1);
                    else memcpy(hx, xr, rin[0].nbytes);
                    if (xk == 1) cu_flip_bytes(hx, rin[0].nbytes);
                    cudaMalloc(&bx.data, rin[0].nbytes);
                    cudaMemcpy(bx.data, hx, rin[0].nbytes, cudaMemcpyHostToDevice);
                    free(hx);
                    bw.data = bws.data = bb.data = NULL; /* packed at prepare */
                    cudaMalloc(&by.data, ybytes);
                    cudaMemset(by.data, 0x5a, ybytes);
                    if (mode == 1) {
                        bo.data = by.data;
                    } else {
                        cudaMalloc(&bo.data, obytes);
                        cudaMemset(bo.data, 0x5a, obytes);
                    }
                    const pr_buf *cin[4] = {&bx, &bw, &bws, &bb}, *pin[1] = {&by};
                    pr_buf *cout_[1] = {&by}, *pout[1] = {&bo};
                    pr_kernel kc = {gi, &gi->nodes[0], 4, cin, 1, cout_, &e, 1};
                    pr_kernel kp = {gi, &gi->nodes[1], 1, pin, 1, pout, &e, 1};
                    for (int rep = 0; rep < 2 && sok; rep++) {
                        sok = !pr_cuda_impl_qgemm.run(sc, &kc, &cu_x) &&
                                !pr_cuda_impl_pool.run(sp, &kp, &cu_x) &&
                                cudaStreamSynchronize((cudaStream_t)cu_x.stream) == cudaSuccess;
                    }
                    CHECK(sok);
                    if (!sok) fprintf(stderr, "%s mode %d: failed: %s\n", label, mode, e.msg);
                    cudaMemcpy(got[mode], bo.data, obytes, cudaMemcpyDeviceToHost);
                    if (sok && mode == 0)
                        printf("  %-44s %s\n", label, pr_cuda_impl_qgemm.describe(sc));
                    if (bo.data != by.data) cudaFree(bo.data);
                    cudaFree(by.data);
                    cudaFree(bx.data);
                    if (sc) pr_cuda_impl_qgemm.destroy(sc);
                    pr_graph_destroy(gi);
                    unsetenv("PRECIS_CUDA_U8_BIAS");
                    unsetenv("PRECIS_CUDA_STEM_POOL");
                    unsetenv("PRECIS_CUDA_STEM");
                    unsetenv("PRECIS_CUDA_IGEMM");
                    ok = sok;
                }
                if (ok) { /* NHWC device bytes vs ref's NCHW; biased read back as q */
                    int bad = 0;
                    for (int mode = 0; mode < 5; mode++)
                        if (xk == 1 && u8y) cu_flip_bytes(got[mode], obytes);
                    const unsigned char *r = ro->data;
                    for (int64_t i = 0; i < (int64_t)obytes; i++) {
                        int64_t c = i % No, px = i / No % PW, py = i / No / PW % PH,
                                n = i / No / PW / PH, ri = ((n * No + c) * PH + py) * PW + px;
                        int gv = u8y ? got[0][i] : (int8_t)got[0][i];
                        int rv = u8y ? r[ri] : (int8_t)r[ri];
                        if (got[0][i] != got[1][i] || got[0][i] != got[2][i] ||
                            got[0][i] != got[3][i] || got[0][i] != got[4][i] ||
                            abs(gv - rv) > 1) {
                            if (bad++ < 3)
                                fprintf(stderr, "%s: element %lld: fused %d / shared %d / "
                                        "unfused %d / a unit an image %d / 2x2 %d, ref %d\n", label,
                                        (long long)ri, gv, u8y ? got[1][i] : (int8_t)got[1][i],
                                        u8y ? got[2][i] : (int8_t)got[2][i],
                                        u8y ? got[3][i] : (int8_t)got[3][i],
                                        u8y ? got[4][i] : (int8_t)got[4][i], rv);
                        }
                    }
                    CHECK(bad == 0);
                }
                for (int m = 0; m < 5; m++) free(got[m]);
                for (int i = 0; i < 4; i++) pr_buf_free(&rin[i]);
                pr_buf_free(ry);
                pr_buf_free(ro);
                pr_graph_destroy(gr);
            }
}

int main(void) {
    int rc = cu_setup();
    if (rc) return rc;
    test_int8();
    test_igemm();
    test_igemm_wg();
    test_igemm_ws();
    test_igemm_ti();
    test_stem();
    test_stem_pool();
    test_quant_nhwc();
    test_q1x1();
    test_q1x1k();
    test_q1x1st();
    test_cnn();
    test_fp8();
    cu_teardown();
    return check_report("test_cuda_int8");
}
