/* The CUDA int8 kernels on uint8 activations (the u8 grid the CPU build
 * gives non-negative tensors: scale amax / 255, zero point 0) against ref's
 * uint8 semantics: every kernel that reads or writes a uint8 tensor in an
 * int8 plan, padding cases included. The GEMMs read a uint8 X as the int8
 * X - 128 (IMMA is signed only) and add 128 * sum_k W back (cuda_qgemm.c):
 * the im2col copy (generic, 16-channel and stem kernels), the implicit GEMM
 * (each tile, its vector and general epilogues; the stem on a space-to-depth
 * copy), a matmul's A copy, the
 * cuBLASLt fused epilogue (its float bias takes the correction); the
 * depthwise conv reads uint8 as it is. Requantized outputs may land one unit
 * off (int32 sums vs ref's float32 sums, as for int8); moves (max pooling,
 * Resize, Quantize) must be exact. The GEMM cases run twice: as stored
 * plainly, then in biased storage (cuda_qbias.h: every uint8 input and
 * output held as q - 128 on the device, PRECIS_CUDA_U8_BIAS=all, the
 * harness flipping its device copies): the im2col padding and the implicit
 * GEMM's become -128, cuBLASLt reads x and writes y as stored (no flipped
 * copy, no flip pass) and takes a biased residual (+128 * beta in its bias);
 * the depthwise conv writes a biased y, MaxPool takes the int8 max of
 * biased bytes. Exits 77 (ctest skip) without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "cuda_check.h"

#include "backends/cuda/cuda_impls.h"

static const pr_dtype U8 = PRECIS_UINT8, I8 = PRECIS_INT8;
static const cc_tolerance EXACT = {0.0f, 0.0f}, Q_TOL = {1.0f, 0.0f}, QF_TOL = {2e-3f, 1e-4f};

/* n random bytes in [lo, hi] (int8 or uint8 by the range). */
static void *rand_bytes(void *buf, int64_t n, int lo, int hi) {
    unsigned char *b = buf;
    for (int64_t i = 0; i < n; i++)
        b[i] = (unsigned char)(lo + (int)cc_rand(0.0f, (float)(hi - lo + 1)));
    return buf;
}

/* QConv with a uint8 x (x_scale 0.01), y_type yt (0: float). */
static void qconv_node(tnode *t, int k, int stride, int pad, int yt, float ys) {
    cu_fused_node(t, PR_OP_QConv, "QConv");
    n_ints(t, "pads", (int64_t[]){pad, pad, pad, pad}, 4);
    n_ints(t, "strides", (int64_t[]){stride, stride}, 2);
    n_ints(t, "kernel_shape", (int64_t[]){k, k}, 2);
    n_float(t, "x_scale", 0.01f);
    if (yt) {
        n_int(t, "y_type", yt);
        n_float(t, "y_scale", ys);
    }
}

/* In the biased pass: the device copies of the uint8 tensors in mask (bits
 * of cu_bias_io) are flipped; the label says which pass. */
static bool biased;
static const char *io(unsigned mask, const char *label) {
    static char buf[160];
    cu_bias_io = biased ? mask : 0;
    snprintf(buf, sizeof buf, "%s%s", biased ? "[biased] " : "", label);
    return buf;
}
enum { B_X = 1u, B_Z = 1u << 4, B_Y = 1u << 16 };

static void test_gemm_u8(bool b) {
    biased = b;
    if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
    printf("uint8 x%s: im2col + cuBLASLt, implicit GEMM, matmul\n",
           b ? " in biased storage (q - 128)" : "");
    static unsigned char xb[8 * 48 * 13 * 11], wb[64 * 48 * 49], zb[8 * 64 * 13 * 11];
    static const bool Y1[1] = {true};
    tnode t;
    char label[128];
    /* NCHW 3x3 pad 1 (the generic im2col; Kp > K), relu -> uint8, -> int8, -> float */
    cc_input a[5] = {{.name = "x", .rank = 4, .dims = {2, 12, 13, 11}, .dtype = U8,
                      .raw = rand_bytes(xb, 2 * 12 * 143, 0, 255)},
                     {.name = "w", .rank = 4, .dims = {24, 12, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_bytes(wb, 24 * 12 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {24}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                     {.name = "b", .rank = 1, .dims = {24}, .init = true},
                     {.name = "z", .rank = 4, .dims = {2, 24, 13, 11}, .dtype = U8,
                      .raw = rand_bytes(zb, 2 * 24 * 143, 0, 255)}};
    setenv("PRECIS_CUDA_IGEMM", "0", 1);
    qconv_node(&t, 3, 1, 1, 2, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 qconv3x3 pad1 nchw relu -> u8"));
    qconv_node(&t, 3, 2, 1, 3, 0.05f);
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X, "u8 qconv3x3 s2 pad1 nchw -> int8"));
    qconv_node(&t, 3, 1, 1, 0, 0);
    cu_run_tol(&t, 4, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               io(B_X, "u8 qconv3x3 pad1 nchw -> float"));
    qconv_node(&t, 3, 1, 1, 2, 0.05f);
    n_float(&t, "z_scale", 0.02f);
    n_str(&t, "act2", "Relu");
    cu_run_tol(&t, 5, a, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Z | B_Y, "u8 qconv3x3 nchw +u8 residual+relu -> u8"));
    /* NHWC C 48: the 16-channel im2col, and a 1x1 (no direct route for uint8 x) */
    cc_input h[5] = {{.name = "x", .rank = 4, .dims = {8, 48, 13, 11}, .dtype = U8, .nhwc = true,
                      .raw = rand_bytes(xb, 8 * 48 * 143, 0, 255)},
                     {.name = "w", .rank = 4, .dims = {40, 48, 3, 3}, .init = true, .dtype = I8,
                      .raw = rand_bytes(wb, 40 * 48 * 9, -127, 127)},
                     {.name = "ws", .rank = 1, .dims = {40}, .init = true, .lo = 1e-3f, .hi = 4e-3f},
                     {.name = "b", .rank = 1, .dims = {40}, .init = true},
                     {.name = "z", .rank = 4, .dims = {8, 40, 13, 11}, .dtype = U8, .nhwc = true,
                      .raw = rand_bytes(zb, 8 * 40 * 143, 0, 255)}};
    qconv_node(&t, 3, 1, 1, 2, 0.08f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_lay(&t, 5, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Z | B_Y, "u8 nhwc qconv3x3 pad1 +u8 residual+relu -> u8"));
    cc_input p1[4] = {h[0], h[1], h[2], h[3]};
    p1[1].dims[2] = p1[1].dims[3] = 1;
    qconv_node(&t, 1, 1, 0, 2, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 nhwc qconv1x1 relu -> u8"));
    qconv_node(&t, 1, 1, 0, 3, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, p1, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X, "u8 nhwc qconv1x1 relu -> int8 (fused epilogue)"));
    cc_input pu[5] = {p1[0], p1[1], p1[2], p1[3], h[4]};
    qconv_node(&t, 1, 1, 0, 2, 0.05f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_lay(&t, 5, pu, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Z | B_Y, "u8 nhwc qconv1x1 +u8 residual+relu -> u8"));
    /* cuBLASLt's fused epilogue writing uint8 (as Y - 128, flipped after): an int8
     * residual then ReLU; an int8 x; no act (the uint8 floor alone) */
    static signed char z8[8 * 40 * 143];
    cc_input pz[5] = {p1[0], p1[1], p1[2], p1[3], h[4]};
    pz[4].dtype = I8;
    pz[4].raw = rand_bytes(z8, 8 * 40 * 143, -128, 127);
    qconv_node(&t, 1, 1, 0, 2, 0.05f);
    n_float(&t, "z_scale", 0.03f);
    n_str(&t, "act2", "Relu");
    cu_run_lay(&t, 5, pz, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 nhwc qconv1x1 +int8 residual+relu -> u8"));
    cc_input p8[4] = {p1[0], p1[1], p1[2], p1[3]};
    p8[0].dtype = I8;
    p8[0].raw = rand_bytes(xb, 8 * 48 * 143, -128, 127);
    qconv_node(&t, 1, 1, 0, 2, 0.05f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, p8, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_Y, "int8 nhwc qconv1x1 relu -> u8"));
    qconv_node(&t, 1, 1, 0, 2, 0.05f);
    cu_run_lay(&t, 4, p8, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_Y, "int8 nhwc qconv1x1 -> u8 (saturating at 0)"));
    p1[0].raw = rand_bytes(xb, 8 * 48 * 143, 0, 255);
    /* the stem kernel: 7x7 s2 pad 3 over 3 channels NCHW (K 147 -> 160) */
    cc_input st[4] = {{.name = "x", .rank = 4, .dims = {2, 3, 21, 19}, .dtype = U8,
                       .raw = rand_bytes(xb, 2 * 3 * 21 * 19, 0, 255)},
                      {.name = "w", .rank = 4, .dims = {16, 3, 7, 7}, .init = true, .dtype = I8,
                       .raw = rand_bytes(wb, 16 * 3 * 49, -127, 127)},
                      {.name = "ws", .rank = 1, .dims = {16}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                      {.name = "b", .rank = 1, .dims = {16}, .init = true}};
    qconv_node(&t, 7, 2, 3, 2, 0.1f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 qconv7x7 s2 pad3 stem -> u8 nhwc"));
    /* the same stem on the implicit GEMM over a space-to-depth copy (cuda_qgemm.c),
     * each tile: odd H and W put taps past the image inside the copy */
    static const char *const tiles[4] = {"t0", "t1", "t2", "t3"};
    for (int i = 0; i < 4; i++) {
        setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
        qconv_node(&t, 7, 2, 3, 2, 0.1f);
        n_str(&t, "act", "Relu");
        snprintf(label, sizeof label, "u8 s2d %s qconv7x7 s2 pad3 stem -> u8 nhwc", tiles[i]);
        cu_run_lay(&t, 4, st, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
                   io(B_X | B_Y, label));
    }
    /* NHWC x over 4 / 2 channels, 3x3 pad 1 / 5x5 pad 2 / 3x3 pad 0, int8 x, float out */
    setenv("PRECIS_CUDA_IGEMM", "t1", 1);
    cc_input sn[4] = {st[0], st[1], st[2], st[3]};
    sn[0].dims[1] = sn[1].dims[1] = 4;
    sn[0].nhwc = true;
    sn[1].dims[2] = sn[1].dims[3] = 3;
    qconv_node(&t, 3, 2, 1, 3, 0.1f);
    cu_run_lay(&t, 4, sn, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X, "u8 s2d t1 nhwc c4 qconv3x3 s2 pad1 -> int8"));
    qconv_node(&t, 3, 2, 0, 2, 0.1f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, sn, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 s2d t1 nhwc c4 qconv3x3 s2 pad0 relu -> u8"));
    sn[0].dims[1] = sn[1].dims[1] = 2;
    sn[1].dims[2] = sn[1].dims[3] = 5;
    qconv_node(&t, 5, 2, 2, 0, 0);
    cu_run_tol(&t, 4, sn, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               io(B_X, "u8 s2d t1 nhwc c2 qconv5x5 s2 pad2 -> float nchw"));
    static signed char xs[2 * 3 * 21 * 19];
    cc_input s8[4] = {st[0], st[1], st[2], st[3]};
    s8[0].dtype = I8;
    s8[0].raw = rand_bytes(xs, 2 * 3 * 21 * 19, -128, 127);
    qconv_node(&t, 7, 2, 3, 3, 0.1f);
    cu_run_lay(&t, 4, s8, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(0, "int8 s2d t1 qconv7x7 s2 pad3 stem -> int8 nhwc"));
    /* the implicit GEMM, each tile (K 432: not a multiple of the 64-byte stage) */
    for (int i = 0; i < 4; i++) {
        setenv("PRECIS_CUDA_IGEMM", tiles[i], 1);
        qconv_node(&t, 3, 1, 1, 2, 0.08f);
        n_float(&t, "z_scale", 0.03f);
        n_str(&t, "act2", "Relu");
        snprintf(label, sizeof label, "u8 igemm %s 3x3 pad1 +u8 residual+relu -> u8", tiles[i]);
        cu_run_lay(&t, 5, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
                   io(B_X | B_Z | B_Y, label));
    }
    setenv("PRECIS_CUDA_IGEMM", "t1", 1);
    qconv_node(&t, 3, 2, 1, 3, 0.08f);
    cu_run_lay(&t, 4, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X, "u8 igemm t1 3x3 s2 pad1 -> int8"));
    qconv_node(&t, 3, 1, 2, 2, 0.08f); /* dilation 2: pad 2 */
    n_ints(&t, "dilations", (int64_t[]){2, 2}, 2);
    n_str(&t, "act", "Clip");
    n_float(&t, "act_alpha", 0.0f);
    n_float(&t, "act_beta", 6.0f);
    cu_run_lay(&t, 4, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 igemm t1 3x3 dil2 relu6 -> u8 (general epi)"));
    qconv_node(&t, 3, 1, 1, 0, 0);
    cu_run_tol(&t, 4, h, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, QF_TOL,
               io(B_X, "u8 igemm t1 3x3 pad1 -> float nchw"));
    unsetenv("PRECIS_CUDA_IGEMM");
    qconv_node(&t, 3, 1, 1, 2, 0.08f);
    n_str(&t, "act", "Relu");
    cu_run_lay(&t, 4, h, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 igemm or cublasLt (timed) 3x3 relu -> u8"));
    /* QMatMul with a uint8 A (copied as A - 128) */
    cc_input m[4] = {{.name = "a", .rank = 3, .dims = {4, 8, 64}, .dtype = U8,
                      .raw = rand_bytes(xb, 4 * 8 * 64, 0, 255)},
                     {.name = "b", .rank = 2, .dims = {64, 48}, .init = true, .dtype = I8,
                      .raw = rand_bytes(wb, 64 * 48, -127, 127)},
                     {.name = "bs", .rank = 1, .dims = {48}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                     {.name = "bias", .rank = 1, .dims = {48}, .init = true}};
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.01f);
    n_int(&t, "y_type", 2);
    n_float(&t, "y_scale", 0.04f);
    n_str(&t, "act", "Relu");
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X | B_Y, "u8 qmatmul bias+relu -> u8"));
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.01f);
    n_int(&t, "y_type", 3);
    n_float(&t, "y_scale", 0.04f);
    cu_run_tol(&t, 4, m, 1, PRECIS_FLOAT32, &pr_cuda_impl_qgemm, Q_TOL,
               io(B_X, "u8 qmatmul bias -> int8"));
    cu_fused_node(&t, PR_OP_QMatMul, "QMatMul");
    n_float(&t, "a_scale", 0.01f);
    n_int(&t, "transB", 1);
    cc_input mt[4] = {m[0], m[1], m[2], m[3]};
    mt[1].dims[0] = 48;
    mt[1].dims[1] = 64;
    cu_run_tol(&t, 4, mt, 1, PRECIS_FLOAT16, &pr_cuda_impl_qgemm, (cc_tolerance){4e-3f, 4e-3f},
               io(B_X, "u8 qmatmul transB -> fp16"));
    cu_bias_io = 0;
    if (b) unsetenv("PRECIS_CUDA_U8_BIAS");
}

/* Depthwise QConv on uint8 x: both layouts, each vector width, padded
 * borders (3x3 and 5x5, stride 2), ReLU6 -> uint8, a uint8 residual. */
static void test_dw_u8(bool b) {
    biased = b;
    if (b) setenv("PRECIS_CUDA_U8_BIAS", "all", 1); /* y only: depthwise reads x plainly */
    printf("uint8 x: depthwise%s\n", b ? ", uint8 y in biased storage" : "");
    static unsigned char xb[8 * 32 * 143], wq[32 * 25], zq[8 * 32 * 143];
    static const bool Y1[1] = {true};
    static const int qch[4] = {32, 24, 12, 5};
    for (int ci = 0; ci < 4; ci++)
        for (int v = 0; v < 3; v++) {
            int C = qch[ci], lay = v != 2, k = v == 1 ? 3 : 5, st = v == 1 ? 2 : 1;
            int64_t nb = lay ? 8 : 2, p = k / 2, oh = (13 + 2 * p - k) / st + 1,
                    ow = (11 + 2 * p - k) / st + 1;
            cc_input a[5] = {{.name = "x", .rank = 4, .dims = {nb, C, 13, 11}, .nhwc = lay,
                              .dtype = U8, .raw = rand_bytes(xb, nb * C * 143, 0, 255)},
                             {.name = "w", .rank = 4, .dims = {C, 1, k, k}, .init = true,
                              .dtype = I8, .raw = rand_bytes(wq, C * k * k, -127, 127)},
                             {.name = "ws", .rank = 1, .dims = {C}, .init = true, .lo = 1e-3f, .hi = 6e-3f},
                             {.name = "b", .rank = 1, .dims = {C}, .init = true},
                             {.name = "z", .rank = 4, .dims = {nb, C, oh, ow}, .nhwc = lay,
                              .dtype = U8, .raw = rand_bytes(zq, nb * C * oh * ow, 0, 255)}};
            tnode t;
            qconv_node(&t, k, st, (int)p, v == 2 ? 3 : 2, 0.03f);
            n_int(&t, "group", C);
            n_str(&t, "act", "Clip");
            n_float(&t, "act_alpha", 0.0f);
            n_float(&t, "act_beta", 6.0f);
            if (v == 1) n_float(&t, "z_scale", 0.02f);
            char label[128];
            snprintf(label, sizeof label, "u8 qconv depthwise %s C%d %dx%d s%d relu6%s -> %s",
                     lay ? "nhwc" : "nchw", C, k, k, st, v == 1 ? "+u8 residual" : "",
                     v == 2 ? "int8" : "u8");
            cu_run_lay(&t, v == 1 ? 5 : 4, a, 1, lay ? Y1 : NULL, PRECIS_FLOAT32,
                       &pr_cuda_impl_qdwconv, Q_TOL, io(v == 2 ? 0 : B_Y, label));
        }
    cu_bias_io = 0;
    if (b) unsetenv("PRECIS_CUDA_U8_BIAS");
}

/* The other kernels of an int8 plan on uint8: max pooling (vector NHWC and
 * the typed path, padded), average pools (global, windowed with padding),
 * QBinary, Quantize / Dequantize, nearest Resize. */
static void test_elem_u8(void) {
    printf("uint8: pools, binary, quantize, resize\n");
    static unsigned char xb[8 * 64 * 143], yb[8 * 64 * 143];
    static const bool Y1[1] = {true};
    tnode t;
    cc_input bi[2] = {{.name = "a", .rank = 4, .dims = {8, 64, 13, 11}, .dtype = U8, .nhwc = true,
                       .raw = rand_bytes(xb, 8 * 64 * 143, 0, 255)},
                      {.name = "b", .rank = 4, .dims = {8, 64, 13, 11}, .dtype = U8, .nhwc = true,
                       .raw = rand_bytes(yb, 8 * 64 * 143, 0, 255)}};
    n_init(&t, PR_OP_MaxPool, "MaxPool", 12);
    n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
    n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
    n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
    cc_input pl[1] = {bi[0]}; /* NCHW */
    pl[0].nhwc = false;
    for (int pass = 0; pass < 2; pass++) { /* plain, then biased storage in and out */
        biased = pass == 1;
        if (biased) setenv("PRECIS_CUDA_U8_BIAS", "all", 1);
        cu_run_lay(&t, 1, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_pool, EXACT,
                   io(B_X | B_Y, "u8 maxpool 3x3 s2 pad1 nhwc"));
        cu_run_tol(&t, 1, pl, 1, PRECIS_FLOAT32, &pr_cuda_impl_pool, EXACT,
                   io(B_X | B_Y, "u8 maxpool 3x3 s2 pad1 nchw"));
    }
    cu_bias_io = 0;
    biased = false;
    unsetenv("PRECIS_CUDA_U8_BIAS");
    cu_fused_node(&t, PR_OP_QBinary, "QBinary");
    n_str(&t, "kind", "Add");
    n_str(&t, "act", "Relu");
    n_float(&t, "a_scale", 0.02f);
    n_float(&t, "b_scale", 0.03f);
    n_int(&t, "y_type", 2);
    n_float(&t, "y_scale", 0.04f);
    cu_run_lay(&t, 2, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL, "u8 qbinary add+relu -> u8");
    cu_fused_node(&t, PR_OP_QPool, "QPool");
    n_str(&t, "kind", "GlobalAveragePool");
    n_float(&t, "x_scale", 0.02f);
    n_int(&t, "y_type", 2);
    n_float(&t, "y_scale", 0.01f);
    cu_run_lay(&t, 1, bi, 1, Y1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL, "u8 qpool global -> u8");
    for (int lay = 0; lay < 2; lay++) {
        cu_fused_node(&t, PR_OP_QPool, "QPool");
        n_str(&t, "kind", "AveragePool");
        n_ints(&t, "kernel_shape", (int64_t[]){3, 3}, 2);
        n_ints(&t, "strides", (int64_t[]){2, 2}, 2);
        n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
        n_int(&t, "count_include_pad", lay);
        n_float(&t, "x_scale", 0.02f);
        n_int(&t, "y_type", 2);
        n_float(&t, "y_scale", 0.02f);
        cu_run_lay(&t, 1, lay ? bi : pl, 1, lay ? Y1 : NULL, PRECIS_FLOAT32, &pr_cuda_impl_qelem, Q_TOL,
                   lay ? "u8 qpool average 3x3 pad1 nhwc count_include_pad -> u8"
                       : "u8 qpool average 3x3 pad1 nchw -> u8");
    }
    static const float qs[1] = {0.02f};
    static const uint8_t zp[1] = {0};
    cc_input q[3] = {{.name = "x", .rank = 4, .dims = {2, 8, 5, 7}, .lo = -1, .hi = 6},
                     {.name = "s", .rank = 0, .init = true, .data = qs},
                     {.name = "zp", .rank = 0, .init = true, .dtype = U8, .raw = zp}};
    n_init(&t, PR_OP_QuantizeLinear, "QuantizeLinear", 13);
    cu_run_tol(&t, 3, q, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, EXACT, "quantize fp32 -> u8 (saturating)");
    static const bool Q1[1] = {true}; /* the Reorder to NHWC folded into it (pass_layout.c) */
    cu_run_lay(&t, 3, q, 1, Q1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, EXACT,
               "quantize fp32 plain -> u8 nhwc");
    static const int8_t zp8[1] = {0};
    cc_input q8[3] = {{.name = "x", .rank = 4, .dims = {3, 3, 9, 7}, .lo = -4, .hi = 4}, q[1],
                      {.name = "zp", .rank = 0, .init = true, .dtype = I8, .raw = zp8}};
    cu_run_lay(&t, 3, q8, 1, Q1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, EXACT,
               "quantize fp32 plain [3, 3, 9, 7] -> int8 nhwc");
    cc_input dq[3] = {{.name = "x", .rank = 4, .dims = {2, 8, 5, 7}, .dtype = U8,
                       .raw = rand_bytes(xb, 560, 0, 255)}, q[1], q[2]};
    n_init(&t, PR_OP_DequantizeLinear, "DequantizeLinear", 13);
    cu_run_tol(&t, 3, dq, 1, PRECIS_FLOAT32, &pr_cuda_impl_qelem, EXACT, "dequantize u8 -> fp32");
    static const float sc[4] = {1, 1, 2, 2};
    cc_input r[3] = {{.name = "x", .rank = 4, .dims = {2, 24, 7, 6}, .dtype = U8,
                      .raw = rand_bytes(xb, 2 * 24 * 42, 0, 255)},
                     {.name = "roi", .rank = 1, .dims = {0}, .init = true},
                     {.name = "s", .rank = 1, .dims = {4}, .init = true, .data = sc}};
    n_init(&t, PR_OP_Resize, "Resize", 13);
    n_str(&t, "mode", "nearest");
    cu_run_tol(&t, 3, r, 1, PRECIS_FLOAT32, &pr_cuda_impl_pool, EXACT, "u8 resize nearest");
}

int main(void) {
    int rc = cu_setup();
    if (rc) return rc;
    test_gemm_u8(false);
    test_gemm_u8(true);
    test_dw_u8(false);
    test_dw_u8(true);
    test_elem_u8();
    cu_teardown();
    return check_report("test_cuda_u8");
}
