/* Our own CUDA kernels (cu_*.cu), callable from C. Every launcher enqueues
 * on `stream` (a cudaStream_t), never synchronizes, and returns the
 * cudaError_t of the launch (0: launched). Dtypes are precis_dtype values
 * read at run time: any operand may be float32, float16, bfloat16 (and,
 * where noted, float64 or an integer type); values are computed in float32.
 * Shapes are row-major; strides in elements. */
#ifndef PR_BACKENDS_CUDA_CU_KERNELS_H
#define PR_BACKENDS_CUDA_CU_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PR_CU_MAXR 8

/* An activation as in ir/act.h (kind is a pr_act_kind). */
typedef struct pr_cu_act {
    int kind;
    float alpha, beta;
} pr_cu_act;

/* y[i] = post(pre(y[i] + bias[(i / bdiv) % bmod]) + z[i]) over n elements,
 * in place; bias and z may be NULL. */
int pr_cu_epilogue(void *stream, void *y, int ydt, int64_t n, const void *bias, int bdt,
                   int64_t bdiv, int64_t bmod, pr_cu_act pre, const void *z, int zdt,
                   pr_cu_act post);

/* Depthwise 2-D convolution (group == C == K) with its epilogue:
 * y = a2(a1(conv(x) + bias) + z). x, z, y of type dt (float32, float16,
 * bfloat16), N,C,H,W or (nhwc) N,H,W,C; w float32 [kh * kw][C]; bias float32
 * [C] or NULL; z NULL or y's shape. pt / pl: the top / left pads (the bottom /
 * right ones follow from OH / OW). cu_dwconv.cu. */
typedef struct pr_cu_dw {
    int64_t N, C, H, W, OH, OW;
    int kh, kw, sh, sw, pt, pl, dh, dw;
    int nhwc;
    pr_cu_act a1, a2;
    int px; /* 4: four output pixels a thread (fp16/bf16 NHWC with C % 8 == 0, 3x3 / 5x5,
             * stride 1 or 2, no dilation along W; else one; C % 8 != 0: an error);
             * PR_CU_DW_TILE + 0..5: a block an output tile from a shared-memory input tile
             * (fp16/bf16 NHWC, C % 8 == 0, 3x3 / 5x5, equal strides 1 or 2, no dilation,
             * N <= 65535; else an error); other: one */
} pr_cu_dw;
enum { PR_CU_DW_TILE = 16, PR_CU_DW_TILES = 6 };
int pr_cu_dwconv(void *stream, int dt, const void *x, const float *w, const float *bias,
                 const void *z, void *y, const pr_cu_dw *p);

/* Elementwise ops over a strided walk: operand 0 is the output, 1..3 the
 * inputs (NULL when the op takes fewer); dims is the output's shape. */
enum pr_cu_ew_op {
    PR_EW_COPY = 0, /* out = a (a conversion: exact for integers up to 2^53) */
    /* binary */
    PR_EW_ADD, PR_EW_SUB, PR_EW_MUL, PR_EW_DIV, PR_EW_POW, PR_EW_MAX, PR_EW_MIN, PR_EW_MOD,
    PR_EW_PRELU,
    /* comparisons and logic (bool out) */
    PR_EW_EQ, PR_EW_LT, PR_EW_LE, PR_EW_GT, PR_EW_GE, PR_EW_AND, PR_EW_OR, PR_EW_XOR,
    /* out = cond ? a : b  (operands 1 cond, 2 a, 3 b) */
    PR_EW_WHERE,
    /* unary (alpha, beta as the ONNX attributes) */
    PR_EW_ACT, /* act.kind in `act` */
    PR_EW_SQRT, PR_EW_EXP, PR_EW_LOG, PR_EW_NEG, PR_EW_ABS, PR_EW_RECIP, PR_EW_FLOOR,
    PR_EW_CEIL, PR_EW_ROUND, PR_EW_SIGN, PR_EW_ERF, PR_EW_SIN, PR_EW_COS, PR_EW_TAN,
    PR_EW_ELU, PR_EW_SELU, PR_EW_CELU, PR_EW_SOFTPLUS, PR_EW_SOFTSIGN, PR_EW_MISH,
    PR_EW_NOT, PR_EW_ISNAN, PR_EW_THRELU, PR_EW_ATAN, PR_EW_ASIN, PR_EW_ACOS, PR_EW_SINH,
    PR_EW_COSH,
    PR_EW_COUNT
};

typedef struct pr_cu_ew {
    int op;
    pr_cu_act act; /* PR_EW_ACT */
    float alpha, beta;
    int rank;
    int64_t dims[PR_CU_MAXR];
    int64_t st[4][PR_CU_MAXR];
    int64_t off[4]; /* element offset of each operand's first element */
    void *p[4];
    int dt[4];
} pr_cu_ew;

int pr_cu_elementwise(void *stream, const pr_cu_ew *w);
/* float32 x N,C,H,W -> fp16/bf16 (ydt) y N,H,W,C for C 1, 3 or 4 (else an
 * error): the plan input's Cast with its Reorder (cu_elem.cu). */
int pr_cu_cast_nhwc(void *stream, const float *x, void *y, int ydt, int64_t n, int64_t c,
                    int64_t hw);

/* Softmax (log: LogSoftmax) over L elements of stride inner, for each of
 * outer * inner rows. */
int pr_cu_softmax(void *stream, const void *x, int xdt, void *y, int ydt, int64_t outer,
                  int64_t L, int64_t inner, int log);

/* LayerNormalization over rows of L: y = (x - mean) / sqrt(var + eps) *
 * gamma + beta; gamma/beta of L elements (beta may be NULL). yq (may be NULL):
 * also yq = e4m3(y as stored / qs) (LayerNorm q_scale; fp16/bf16 rows of L % 8
 * == 0 and L <= 1024 in the same pass, others by a second kernel). */
int pr_cu_layernorm(void *stream, const void *x, int xdt, const void *gamma, int gdt,
                    const void *beta, int bdt, void *y, int ydt, int64_t rows, int64_t L,
                    float eps, void *yq, float qs);

/* An additive attention mask broadcast over (batch..., Sq, Sk). */
typedef struct pr_cu_mask {
    const void *p; /* NULL: no mask */
    int dt;
    int nbd;
    int64_t bdims[PR_CU_MAXR], bst[PR_CU_MAXR];
    int64_t rs, cs;
} pr_cu_mask;

/* p[b, i, :] = softmax(scale * s[b, i, :] + mask[b, i, :]) for nb * sq rows
 * of sk float32 scores (contiguous); p contiguous in pdt. */
int pr_cu_attn_softmax(void *stream, const float *s, void *p, int pdt, int64_t nb, int64_t sq,
                       int64_t sk, float scale, const pr_cu_mask *m);

/* Attention on any geometry (backends/ref/ref.h pr_attn_geom), one block
 * per query row: the fallback where batched GEMMs do not apply. */
typedef struct pr_cu_attn {
    int nbd;
    int64_t bdims[PR_CU_MAXR], nb, sq, sk, d, dv;
    float scale;
    int kt, has_mask;
    const void *op[4]; /* Q, K, V, M */
    int dt[4];
    int64_t bst[4][PR_CU_MAXR], rs[4], cs[4];
    void *y;
    int ydt;
    int64_t ybst[PR_CU_MAXR], yrs; /* Y's batch and row strides */
} pr_cu_attn;
int pr_cu_attention(void *stream, const pr_cu_attn *a);

/* Fused (flash-style) attention, fp16 or bf16 (dt), D = Dv in {32, 64, 128}:
 * Y = softmax(scale Q K' + M) V per flat batch index b in [0, nb), Q K V Y
 * rows of D contiguous elements (16-byte aligned) at row strides rs[0..2],
 * rs[4]; operand o of batch b starts at the offset sum_d i_d * bst[o][d]
 * (o: Q K V M Y, i_d the index of b in bdims, unused leading dims 1); M
 * (m NULL: none) float32, fp16 or bf16 at rows rs[3] and columns mcs apart;
 * yq > 0: Y stored e4m3 (strides in its elements, bytes). */
#define PR_CU_FLASH_NB 4 /* batch dims: at most 4, right-aligned, 1-padded */
typedef struct pr_cu_flash {
    int dt, d, mdt;
    int mvec; /* mask rows 16-byte aligned with contiguous columns: staged in tiles;
                 2: one such row broadcast over the query rows (rs[3] 0), staged once */
    int split; /* D <= 64: 16 query rows a block, two warps splitting the keys (small grids) */
    int nw;    /* rows form: warps a block (2, 4, 8; 0: by the grid) */
    float yq;  /* > 0: Y is e4m3, e4m3(y / yq) of y rounded to dt (Attention y_type) */
    float yqr; /* RN(1 / yq): the quotient by one FMA residual step (cu_flash.cu fq_div) */
    int64_t bdims[PR_CU_FLASH_NB], nb, sq, sk;
    float scale;
    const void *q, *k, *v, *m;
    void *y;
    int64_t bst[5][PR_CU_FLASH_NB], rs[5], mcs;
} pr_cu_flash;
int pr_cu_flash_attention(void *stream, const pr_cu_flash *p);

/* 2-D max / average pooling on NCHW (kind 0 max, 1 average). */
typedef struct pr_cu_pool {
    int kind, count_include_pad;
    int64_t N, C, H, W, OH, OW;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int ph1, pw1; /* end pads (ph, pw: begin) */
    int nhwc;     /* x and y stored N,H,W,C */
} pr_cu_pool;
int pr_cu_pool2d(void *stream, const void *x, int xdt, void *y, int ydt, const pr_cu_pool *p);
/* Global average (max != 0: max) of x [N, C, hw] or (nhwc) [N, hw, C] into
 * y [N, C]: y = sum * x_scale / hw (max: max * x_scale), quantized by y_inv
 * when y is int8/uint8. x: a float type, int8 or uint8 (summed exactly).
 * part: device float32 scratch of pr_cu_gpool_scratch(N, C, hw, nhwc)
 * elements. */
int64_t pr_cu_gpool_scratch(int64_t N, int64_t C, int64_t hw, int nhwc);
int pr_cu_gpool(void *stream, const void *x, int xdt, void *y, int ydt, int64_t N, int64_t C,
                int64_t hw, int nhwc, int max, float x_scale, float y_inv, float *part);

/* out[o, j, i] = data[o, idx[j], i] (negative indices count from the end;
 * an index out of range gives 0). idx int32 or int64. */
int pr_cu_gather(void *stream, const void *data, int ddt, const void *idx, int idt, void *out,
                 int odt, int64_t outer, int64_t axis_dim, int64_t nidx, int64_t inner);

/* Reductions: each output element reduces x over the `red` dims (strides
 * rst) at its position in the `keep` dims (strides kst). */
enum { PR_RED_SUM, PR_RED_MEAN, PR_RED_MAX, PR_RED_MIN, PR_RED_PROD, PR_RED_L1, PR_RED_L2,
       PR_RED_SUMSQ, PR_RED_LOGSUM, PR_RED_LOGSUMEXP };
typedef struct pr_cu_reduce {
    int op;
    int nk, nr;
    int64_t kdims[PR_CU_MAXR], kst[PR_CU_MAXR];
    int64_t rdims[PR_CU_MAXR], rst[PR_CU_MAXR];
    int64_t n_out, n_red;
} pr_cu_reduce;
int pr_cu_reduce_run(void *stream, const void *x, int xdt, void *y, int ydt,
                     const pr_cu_reduce *r);

/* Resize of the last two dims of a rank-4 NCHW tensor. mode 0 nearest, 1
 * linear; coord: 0 half_pixel, 1 asymmetric, 2 align_corners,
 * 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest; nearest: 0
 * round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil. scale_h/w are
 * the output/input ratios used by the coordinate transform. */
typedef struct pr_cu_resize {
    int mode, coord, nearest;
    int64_t planes, H, W, OH, OW;
    float scale_h, scale_w;
} pr_cu_resize;
int pr_cu_resize_run(void *stream, const void *x, int xdt, void *y, int ydt,
                     const pr_cu_resize *r);

/* Fill n elements of dt with value v. */
int pr_cu_fill(void *stream, void *y, int dt, int64_t n, float v);

/* ------------------------------------------------------------------ INT8
 * (cu_int8.cu; requantization as ref's: sat(round_half_even(r * y_inv))) */

/* im2col of an int8 activation (element strides sN, sC, sH, sW: NCHW or
 * NHWC) into col [N*OH*OW, Kp]: k = (r, s, c), channel fastest; zeros in
 * the padding and for k >= kh*kw*C. x_u8: x is uint8 (the u8 grid, zero
 * point 0) and col gets x - 128 as int8 (every byte XOR 0x80: the padding,
 * real zero, becomes -128), for IMMA, which takes signed operands only; the
 * GEMM's consumer adds 128 * sum_k w[n][k] back (pr_cu_qepi.acc_off).
 * x_u8 == PR_CU_X_U8B: x is a uint8 tensor in biased storage (each byte
 * already q - 128 as int8): copied as is, padding the byte -128 (real 0). */
enum { PR_CU_X_S8 = 0, PR_CU_X_U8 = 1, PR_CU_X_U8B = 2 };
typedef struct pr_cu_im2col {
    int64_t N, C, H, W, OH, OW, sN, sC, sH, sW, Kp;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int x_u8;
} pr_cu_im2col;
int pr_cu_im2col_s8(void *stream, const void *x, void *col, const pr_cu_im2col *p);
/* Space-to-depth of an int8 activation for a stride-2 conv over C <= 4
 * channels (the stem), so the implicit GEMM runs it as a stride-1 conv over
 * 16 channels: y NHWC [N, ceil(H/2), ceil(W/2), 16] bytes with
 * y[b][R][S][(dy * 2 + dx) * C + c] = x[b][c][2R + dy][2S + dx] (element
 * strides sN, sC, sH, sW: NCHW or NHWC); taps past the image (odd H or W)
 * the real zero of x's storage (0; -128 for x_u8 == PR_CU_X_U8B), channels
 * [4C, 16) likewise (their weights are zero). Bytes are copied as stored
 * (the GEMM reading y applies x_u8). y 16-byte aligned. */
typedef struct pr_cu_s2d {
    int64_t N, C, H, W, sN, sC, sH, sW;
    int x_u8;
} pr_cu_s2d;
int pr_cu_s2d_s8(void *stream, const void *x, void *y, const pr_cu_s2d *p);
/* y[i] = x[i] ^ 0x80 (n bytes; y == x allowed): a uint8 tensor as int8
 * x - 128 (the A operand of an int8 GEMM whose activation is on the u8
 * grid), or back. */
int pr_cu_u8_to_s8(void *stream, const void *x, void *y, int64_t n);

/* After an int8 GEMM with int32 result acc [M, N]: r = (acc + acc_off[n])
 * * a_scale * w_scale[n] + bias[n] (acc_off: 128 * sum_k w[n][k] when the
 * GEMM read a uint8 activation as x - 128, else NULL); r = pre(r); r += Z
 * (int8/uint8 times z_scale when z_int, else float); r = post(r); y = r
 * quantized (int8/uint8 y) or r.
 * nchw_hw > 0: y (and Z) are NCHW with m = (b, p), p < nchw_hw.
 * Biased uint8 storage (cuda_qbias.c): y_bias, y uint8 stored as the int8
 * byte q - 128 (q XOR 0x80); z_bias, Z such a tensor (zdt DT_I8, read as
 * z + 128). */
typedef struct pr_cu_qepi {
    int64_t N, nchw_hw;
    float a_scale;
    const float *w_scale; /* device, n_wscale entries (1: one for all) */
    int64_t n_wscale;
    const float *bias;    /* device float32 [N] or NULL */
    pr_cu_act pre, post;
    const void *z;
    int zdt, z_int;
    float z_scale;
    void *y;
    int ydt;
    float y_inv;
    const int *acc_off;   /* device int32 [N] or NULL (see above) */
    int y_bias, z_bias;   /* see above (0: plain) */
} pr_cu_qepi;
int pr_cu_qepilogue(void *stream, const int *acc, int64_t M, const pr_cu_qepi *q);

/* Depthwise int8 convolution (QConv with group == C == K; cu_dwconv.cu):
 * x int8 (or uint8 when x_u8) in g's layout (g.nhwc), w int8 [kh * kw][C],
 * int32 sums, then q as pr_cu_qepilogue with N = C (q.nchw_hw unused: y's
 * layout is ynhwc). */
typedef struct pr_cu_qdw {
    pr_cu_dw g;
    pr_cu_qepi q;
    int ynhwc;
    int x_u8;
} pr_cu_qdw;
int pr_cu_qdwconv(void *stream, const void *x, const void *w, const pr_cu_qdw *p);

/* Implicit-GEMM int8 convolution (cu_igemm.cu, mma.sync IMMA, or Hopper's
 * wgmma for the WG tiles: cu_igemm_wg.cu; no im2col
 * copy): x NHWC int8 [N, H, W, C] with C % 16 == 0, w int8 [Nout][K] with
 * k = (r, s, c) (K = kh * kw * C), both 16-byte aligned; y through q as
 * pr_cu_qepilogue (M = N * OH * OW rows). tile picks the block shape. x_u8:
 * x is uint8, read as x - 128 (XOR 0x80 after the shared-memory load: the
 * zero-filled padding becomes -128, the real zero), q.acc_off adds 128 *
 * sum_k w back. x_u8 == PR_CU_X_U8B: x in biased storage, read as is, the
 * padding the byte -128 (stored into shared memory instead of a zero-fill). */
enum { PR_CU_IGEMM_128x128, PR_CU_IGEMM_128x64, PR_CU_IGEMM_64x64, PR_CU_IGEMM_64x128,
       PR_CU_IGEMM_WG128x128, /* Hopper wgmma (cu_igemm_wg.cu, sm_90a only: elsewhere the */
       PR_CU_IGEMM_WG128x256, /* launch fails and the timed choice skips them) */
       PR_CU_IGEMM_WG128x128K, /* the same, 128 bytes of k a pipeline stage (64) */
       PR_CU_IGEMM_WG128x256K,
       PR_CU_IGEMM_WG128x64,
       PR_CU_IGEMM_Q64x256,  /* 1x1 no-pad convs only, built for bandwidth (cu_q1x1.cu: */
       PR_CU_IGEMM_Q64x64,   /* pr_cu_q1x1_s8, any arch with mma.sync int8) */
       PR_CU_IGEMM_Q128x64,
       PR_CU_IGEMM_Q64x128,
       PR_CU_IGEMM_QK128x256, /* the same contract, K streamed with A (weights not */
                              /* resident: any K; cu_q1x1.cu's k_q1x1k) */
       PR_CU_IGEMM_QW128x256, /* the same on Hopper's wgmma (cu_q1x1_wg.cu, sm_90a */
       PR_CU_IGEMM_QW128x128, /* only: elsewhere the launch fails, the timing skips it) */
       PR_CU_IGEMM_QS128x128, /* warp-specialized: TMA producer, ping-pong wgmma consumers */
                              /* (cu_q1x1_ws.cu, sm_90a only; stride 1, or 2 with H = 2 OH) */
       PR_CU_IGEMM_QT128x256, /* streaming, K <= 256: resident weights, TMA loads of A and */
                              /* the residual, TMA stores (cu_q1x1_st.cu, sm_90a, stride 1) */
       PR_CU_IGEMM_TI128x128, /* the 3x3 ping-pong tile fed by TMA im2col (cu_igemm_ws.cu, */
                              /* sm_90a only; C % 64 == 0; pr_cu_igemm_ti_s8) */
       PR_CU_IGEMM_TILES };
#define PR_CU_IGEMM_WG_FIRST PR_CU_IGEMM_WG128x128
#define PR_CU_IGEMM_Q1X1_FIRST PR_CU_IGEMM_Q64x256
#define PR_CU_IGEMM_Q1X1K_FIRST PR_CU_IGEMM_QK128x256
typedef struct pr_cu_igemm {
    int64_t N, H, W, C, OH, OW, Nout, K;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int tile;
    int x_u8;
} pr_cu_igemm;
int pr_cu_igemm_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                   const pr_cu_qepi *q);
/* The wgmma tiles of pr_cu_igemm_s8 (cu_igemm_wg.cu): cudaErrorInvalidValue
 * for another tile, cudaErrorNoKernelImageForDevice off sm_90a builds / GPUs. */
int pr_cu_igemm_wg_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                      const pr_cu_qepi *q);
/* The warp-specialized forms of the wgmma tiles WG128x128 (BN 64 where
 * Nout <= 64; by default the ping-pong form: two consumer warpgroups on
 * alternating tiles, persistent; PRECIS_CUDA_IGEMM_WS=1 phase 18w's) and
 * WG128x256 (cu_igemm_ws.cu: a producer warpgroup, mbarrier ring);
 * pr_cu_igemm_wg_s8 calls it unless PRECIS_CUDA_IGEMM_WS=0. */
int pr_cu_igemm_ws_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                      const pr_cu_qepi *q);
/* The tile PR_CU_IGEMM_TI128x128 (cu_igemm_ws.cu, phase 20w): the ping-pong
 * form's consumers fed by the copy engine -- A by im2col TMA (one copy a
 * tap's 64-channel chunk of 128 output pixels), the weights by tiled TMA --
 * BN 64 where Nout <= 64. C % 64 == 0 and K == kh * kw * C, else
 * cudaErrorInvalidValue (also where the im2col map cannot express the
 * padding / strides); cudaErrorNotSupported off sm_90a builds. */
int pr_cu_igemm_ti_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                      const pr_cu_qepi *q);
/* The QW tiles of pr_cu_q1x1_s8 (cu_q1x1_wg.cu: K streamed, wgmma; the
 * Q1X1K tiles from PR_CU_IGEMM_Q1X1K_FIRST on stream the weights with A in
 * k chunks instead of keeping them resident: any K): cudaErrorInvalidValue
 * for another tile, cudaErrorNotSupported without an sm_90a build (nvcc <
 * 12), a launch error on another GPU. */
int pr_cu_q1x1_wg_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                     const pr_cu_qepi *q);
/* The QS tile of pr_cu_q1x1_s8 (cu_q1x1_ws.cu: a TMA producer warp, two
 * ping-pong wgmma warpgroups; stride 1, or stride 2 with H == 2 OH and OW <=
 * 128): cudaErrorInvalidValue for another tile or shape, cudaErrorNotSupported
 * without an sm_90a build, a launch error on another GPU. */
int pr_cu_q1x1_ws_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                     const pr_cu_qepi *q);
/* The QT tile of pr_cu_q1x1_s8 (cu_q1x1_st.cu: the small-K streaming form --
 * a block's weights [256][K] resident, a TMA producer warp streaming A and
 * the residual tiles into a ring, the requantized tile written back by TMA
 * bulk stores; stride 1, K <= 256, the fast epilogue only):
 * cudaErrorInvalidValue for another tile or shape, cudaErrorNotSupported
 * without an sm_90a build, a launch error on another GPU. */
int pr_cu_q1x1_st_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                     const pr_cu_qepi *q);
/* The Q1X1 tiles (cu_q1x1.cu): pr_cu_igemm_s8's contract for kh = kw = 1,
 * no padding (any stride), K == C; a persistent grid, the block's weights
 * [BN][K] in shared memory, the next M tiles' A and residual in flight
 * during this one's MMAs and epilogue. cudaErrorInvalidValue for another
 * tile, another conv, or a shape whose shared footprint (about (BN + 3 BM) *
 * K bytes) exceeds the device's. */
int pr_cu_q1x1_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                  const pr_cu_qepi *q);
/* The stem on its space-to-depth copy (cu_stem.cu): pr_cu_igemm_s8's
 * contract for C 16, kh = kw = 4, stride 1, no dilation, K 256, Nout % 16 ==
 * 0 and the fast epilogue without a residual (int8 / uint8 NHWC y of row
 * stride Nout, ReLU or none; p->tile ignored): 64-pixel output row strips in
 * shared memory, weights in registers, a persistent grid.
 * cudaErrorInvalidValue for another conv. */
int pr_cu_stem_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                  const pr_cu_qepi *q);
/* The same stem with the MaxPool 3x3 stride 2 pads (1, 1, 0 or 1, 0 or 1)
 * (ceil_mode 0, no dilation) after it fused: q->y is the pooled [N, PH, PW,
 * Nout] (int8 / uint8 / biased storage: the bytes conv-then-MaxPool would
 * write), the conv's own output never written. Each pooled row / column must
 * read a conv row / column (2 (PH - 1) < OH, 2 (PW - 1) < OW), OW <= 256.
 * cudaErrorInvalidValue otherwise. */
int pr_cu_stem_pool_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                       const pr_cu_qepi *q, int64_t PH, int64_t PW);

/* Implicit-GEMM fp16/bf16 convolution (cu_hconv.cu, mma.sync, float32
 * accumulation, group 1): x NHWC [N, H, W, C] of type dt with C % 8 == 0,
 * w dt [Nout][K] with k = (r, s, c) (K = kh * kw * C), Nout % 8 == 0; y NHWC
 * [N, OH, OW, Nout] = a2(a1(conv + bias) + z); bias float32 [Nout] or NULL, z
 * NULL or y's shape. ph / pw: the top / left pads. Every pointer 16-byte
 * aligned. tile picks the block shape. */
enum { PR_CU_HCONV_128x128, PR_CU_HCONV_128x64, PR_CU_HCONV_64x64, PR_CU_HCONV_128x32,
       PR_CU_HCONV_32x32K4, /* 4 warps split k (small M, deep k: batch 1) */
       PR_CU_HCONV_K32, /* 1x1 stride 1, K <= 32, Nout <= 144: weights in shared memory once
                           a block, each warp 16-row M tiles in turn (expand convs) */
       PR_CU_HCONV_K32D, /* the same, its epilogue straight from the accumulators */
       PR_CU_HCONV_K32L, /* the same, no residual / a2: the tile packed in shared memory and
                            copied out as y's contiguous run */
       PR_CU_HCONV_TILES, /* the GEMM tiles (C % 8 == 0) */
       PR_CU_HCONV_DIRECT = PR_CU_HCONV_TILES /* any C: a thread a pixel, w32 in shared memory
                                                 (K * Nout floats <= 48 KB) */ };
typedef struct pr_cu_hc {
    int64_t N, H, W, C, OH, OW, Nout, K;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int tile;
    pr_cu_act a1, a2;
    const float *w32; /* PR_CU_HCONV_DIRECT: float32 weights [K][Nout] (w unused) */
} pr_cu_hc;
int pr_cu_hconv(void *stream, int dt, const void *x, const void *w, const float *bias,
                const void *z, void *y, const pr_cu_hc *p);

/* quant: y = sat(round(x / scale)) into int8/uint8; else y = x * scale. */
int pr_cu_quantize(void *stream, const void *x, int xdt, void *y, int ydt, int64_t n, float scale,
                   int quant);
/* The same quantization of a plain [N, C, HW] x written NHWC (a Reorder
 * folded into the plan input's QuantizeLinear: pass_layout.c). */
int pr_cu_quantize_nhwc(void *stream, const void *x, int xdt, void *y, int ydt, int64_t N,
                        int64_t C, int64_t HW, float scale);
/* FP8 (cu_fp8.cu): y (float8e4m3fn) = e4m3(x / scale) for float32/16/bf16 x
 * (round to nearest even, saturated: ref's QuantizeLinear), or x (e4m3) *
 * scale into a float y (quant 0). */
int pr_cu_quant_fp8(void *stream, const void *x, int xdt, void *y, int ydt, int64_t n,
                    float scale, int quant);
/* QBinary over a walk set up by pr_cu_ew_setup (op PR_EW_ADD/SUB/MUL, act):
 * int8/uint8 operands scaled by a_scale / b_scale; y quantized by y_inv
 * when it is int8/uint8. */
int pr_cu_qbinary(void *stream, const pr_cu_ew *w, float a_scale, float b_scale, float y_inv);
/* 2-D average pooling of int8/uint8 x (p->nhwc either layout): y = window
 * sum * x_scale / count, quantized by y_inv for int8/uint8 y. */
int pr_cu_qavgpool(void *stream, const void *x, int xdt, void *y, int ydt, const pr_cu_pool *p,
                   float x_scale, float y_inv);

#ifdef __cplusplus
}
#endif
#endif
