/* QMatMul and QConv (ir/ops.inc, INT8) on cuBLASLt's IMMA Tensor Core
 * GEMMs: int8 x int8 -> int32, then one epilogue kernel (cu_int8.cu) that
 * dequantizes with a_scale * w_scale[n], adds the bias, applies act, the
 * residual Z and act2 and requantizes (or writes float).
 *
 * Row-major Y[M, N] = A[M, K] x W^T with both operands K-contiguous: in
 * cuBLASLt's column-major terms D[N, M] = op_T(W [K, N]) x A [K, M], the
 * "TN" form IMMA needs. W is packed at prepare as int8 [N][Kp] (Kp: K
 * rounded up, zero-filled). QConv: a 1x1 stride-1 unpadded conv on NHWC
 * with C % 4 == 0 reads X itself as A; every other conv (group 1) first
 * writes an im2col copy of X (int8, k = (r, s, c)) into scratch. W is int8;
 * X int8, or uint8 (a non-negative tensor on the u8 grid, as the CPU build
 * quantizes it): IMMA takes signed operands only, so a uint8 X is read as
 * the int8 X - 128 (each byte XOR 0x80: in the im2col copy, in a copy of a
 * matmul's A, or in the implicit GEMM's registers; padding, real zero,
 * becomes -128) and the exact int32 correction 128 * sum_k W[n][k] is added
 * to every sum (pr_cu_qepi.acc_off; in cuBLASLt's fused epilogue, to its
 * float bias; a 1x1 "direct" conv reads such a flipped copy of X). A uint8
 * Y from cuBLASLt's fused epilogue: it writes Y - 128 as int8 (the bias less
 * 128; saturation at -128 is the ReLU) and one pass flips the bytes back.
 * Biased storage (cuda_qbias.h): a uint8 tensor whose producer and every
 * consumer are this impl's GEMMs is stored as the int8 byte q - 128: read
 * as it is (no flipped copy, no XOR; padding -128), written so by the
 * epilogues (cuBLASLt's fused one without the flip pass), and as a
 * residual Z read as z + 128 (in cuBLASLt's fused epilogue: 128 * beta
 * folded into its bias).
 *
 * A QConv on NHWC with C % 16 == 0 may instead run our implicit-GEMM kernel
 * (cu_igemm.cu: no im2col copy, requantization in its epilogue; on Hopper
 * also its wgmma tiles, cu_igemm_wg.cu): at a shape's first run the cuBLASLt
 * route and each of the kernel's tiles are timed and the fastest kept (and
 * recorded in the timing cache). PRECIS_CUDA_WGMMA=0 leaves the wgmma tiles
 * out (A/B). A 1x1 unpadded QConv also times the Q1X1 tiles (cu_q1x1.cu: a
 * persistent kernel built for memory bandwidth, the next tiles' x and
 * residual loads in flight during this one's MMAs and epilogue);
 * PRECIS_CUDA_Q1X1=0 leaves them out (A/B); PRECIS_CUDA_Q1X1K=0 only the
 * K-streamed ones (their weights not resident: K 512..2048 too);
 * PRECIS_CUDA_Q1X1WS=0 the warp-specialized one (cu_q1x1_ws.cu: TMA producer,
 * ping-pong wgmma consumers); PRECIS_CUDA_Q1X1ST=0 the small-K streaming one
 * (cu_q1x1_st.cu: K <= 256, resident weights, TMA loads and stores).
 *
 * A stride-2 QConv over C <= 4 channels (the stem: 7x7 s2 over RGB) has no
 * 16-channel rows for that kernel; its candidates are instead the implicit
 * GEMM on a space-to-depth copy of X (pr_cu_s2d_s8: each 2x2 block of pixels
 * one pixel of 16 channels, (dy, dx, c), zero-padded): a stride-1 conv with
 * ceil((kh + 2 * ceil(ph / 2) - ph) / 2) taps a side and pads ceil(ph / 2),
 * whose weights are W rearranged (zero where a tap falls outside kh x kw).
 * The same sums in another order: exact in int32. It replaces a kh*kw*C-byte
 * im2col row per output pixel (ResNet-50 b256: 514 MB) by 16 bytes per 2x2
 * input pixels. PRECIS_CUDA_S2D=0 keeps such convs on the im2col route.
 *
 * The stem's MaxPool (3x3 stride 2, pads 1, ceil_mode 0: ResNet's) fused
 * (pr_cu_stem_pool_node, a pure function of the graph, which cuda_pool.c's
 * prepare asks too): when such a space-to-depth conv on the stem kernel
 * (Nout % 16 == 0, no residual, int8 / uint8 NHWC y, ReLU or none) has that
 * MaxPool as its output's only reader, it runs pr_cu_stem_pool_s8 (no timed
 * choice: the one route) and writes the pooled tensor into the head of its
 * own output buffer; the MaxPool then has nothing to do (its output shares
 * that buffer, cuda_pool.c's inplace_input) or copies the head.
 * PRECIS_CUDA_STEM_POOL=0 keeps the two steps (A/B). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_lt_int8.h"
#include "backends/cuda/cuda_qbias.h"
#include "backends/cuda/cuda_tcache.h"
#include "backends/ref/ref_conv.h"

typedef struct qgemm_state {
    bool conv, direct;   /* QConv; 1x1 NHWC conv reading X as A */
    bool x_u8;           /* X uint8, read as X - 128 (see the top) */
    bool x_b, y_b, z_b;  /* X / Y / Z uint8 in biased storage (cuda_qbias.h) */
    int *acc_off;        /* device int32 [N]: 128 * sum_k W[n][k] when x_u8 */
    int64_t N, K, Kp;    /* output channels, true and padded reduction length */
    int64_t kh, kw, C;
    float a_scale;       /* x_scale (or a_scale * alpha) */
    float *w_scale, *bias; /* device float32 */
    int64_t n_wscale;
    void *w;             /* device int8 [N][Kp] */
    pr_cu_act pre, post;
    int z_input;
    float z_scale, y_inv;
    pr_lt_i8 lt;
    bool fused;         /* lt requantizes in cuBLASLt's epilogue (int8 out, no kernel after) */
    bool y_u8;          /* fused with a uint8 Y: lt writes Y - 128, then a flip pass */
    float *alpha;       /* device [N]: a_scale * w_scale[n] / y_scale, when fused */
    float *bias_q;      /* device [N]: bias / y_scale, when fused */
    void *tc;           /* the timing cache or NULL */
    bool ig_ok;         /* the implicit-GEMM kernel runs it (NHWC int8 x, C % 16 == 0) */
    bool s2d;           /* ... on a space-to-depth copy of x (stride 2, C <= 4; see the top) */
    void *w2;           /* device int8 [N][K2]: W for the space-to-depth form */
    int64_t K2;
    int s2_kh, s2_kw, s2_ph, s2_pw; /* its taps a side and top / left pads */
    int64_t pad_h, pad_w; /* the pads W was rearranged for */
    bool pool;          /* the MaxPool after it fused (pr_cu_stem_pool_node) */
    int pool_pe_h, pool_pe_w; /* its bottom / right pads (0 or 1) */
    bool pool_said;     /* PRECIS_VERBOSE's line printed */
    pthread_mutex_t mu; /* guards routes */
    bool mu_ok;
    struct {
        int64_t m;
        int route; /* ROUTE_LT, or a pr_cu_igemm tile */
    } routes[PR_LT_I8_SHAPES];
    int n_routes;
    char what[200];
    char what_ig[240];
} qgemm_state;

#define ROUTE_LT (-1)

static bool wgmma_on(void);
static bool q1x1_on(void);

static bool q8(pr_dtype d) { return d == PRECIS_INT8; }

static bool qgemm_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_QConv && n->op != PR_OP_QMatMul) return false;
    int x = pr_node_in(n, 0), w = pr_node_in(n, 1), ws = pr_node_in(n, 2), y = pr_node_out(n, 0);
    if (x < 0 || w < 0 || ws < 0 || y < 0) return false;
    pr_dtype xd = pr_cu_tdt(g, x);
    if ((!q8(xd) && xd != PRECIS_UINT8) || !q8(pr_cu_tdt(g, w)) || !pr_cu_is_init(g, w) ||
        !pr_cu_is_init(g, ws) || pr_cu_tdt(g, ws) != PRECIS_FLOAT32)
        return false;
    pr_dtype yd = pr_cu_tdt(g, y);
    if (!q8(yd) && yd != PRECIS_UINT8 && !pr_cu_float(yd)) return false;
    int b = pr_node_in(n, 3), z = pr_node_in(n, 4);
    if (b >= 0 && (!pr_cu_is_init(g, b) || pr_cu_tdt(g, b) != PRECIS_FLOAT32)) return false;
    if (z >= 0 && pr_cu_is_init(g, z)) return false;
    pr_act a;
    if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
    const pr_tensor *X = &g->tensors[x], *W = &g->tensors[w];
    if (n->op == PR_OP_QConv) {
        if (X->rank != 4 || W->rank != 4 || pr_attr_int(n, "group", 1) != 1) return false;
        return true;
    }
    /* QMatMul: A [..., K] row-major, W [K, N] (or [N, K] transB) */
    if (pr_attr_int(n, "transA", 0) || X->rank < 2 || W->rank != 2) return false;
    int64_t K = X->dims[X->rank - 1];
    return pr_dim_known(K) && K % 4 == 0;
}

static bool qgemm_nhwc_ok(const pr_graph *g, const pr_node *n) {
    return n->op == PR_OP_QConv && qgemm_supports(g, n);
}

static bool qgemm_packs(const pr_graph *g, const pr_node *n, int i) {
    (void)g;
    (void)n;
    return i == 1 || i == 2 || i == 3;
}

static void qgemm_destroy(void *p) {
    qgemm_state *s = p;
    if (!s) return;
    pr_lt_i8_fini(&s->lt);
    if (s->mu_ok) pthread_mutex_destroy(&s->mu);
    if (s->w) cudaFree(s->w);
    if (s->w2) cudaFree(s->w2);
    if (s->w_scale) cudaFree(s->w_scale);
    if (s->bias) cudaFree(s->bias);
    if (s->alpha) cudaFree(s->alpha);
    if (s->bias_q) cudaFree(s->bias_q);
    if (s->acc_off) cudaFree(s->acc_off);
    free(s);
}

static int64_t up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }


/* W as int8 [N][Kp], k in Kp order (conv: (r, s, c); matmul: k). */
static signed char *pack_weights(const pr_graph *g, const pr_node *n, qgemm_state *s) {
    const pr_tensor *W = &g->tensors[n->inputs[1]];
    const signed char *w = W->data;
    signed char *p = calloc((size_t)(s->N * s->Kp), 1);
    if (!p || !w) {
        free(p);
        return NULL;
    }
    if (s->conv) { /* W [N, C, kh, kw] */
        for (int64_t o = 0; o < s->N; o++)
            for (int64_t c = 0; c < s->C; c++)
                for (int64_t r = 0; r < s->kh; r++)
                    for (int64_t q = 0; q < s->kw; q++)
                        p[o * s->Kp + (r * s->kw + q) * s->C + c] =
                            w[((o * s->C + c) * s->kh + r) * s->kw + q];
        return p;
    }
    bool tb = pr_attr_int(n, "transB", 0) != 0;
    for (int64_t o = 0; o < s->N; o++)
        for (int64_t k = 0; k < s->K; k++) p[o * s->Kp + k] = tb ? w[o * s->K + k] : w[k * s->N + o];
    return p;
}

/* W rearranged for the space-to-depth form (see the top): int8 [N][K2], k =
 * (t, u, (dy * 2 + dx) * C + c) for the original tap (2t + dy - 2 * PT + ph,
 * 2u + dx - 2 * PU + pw), zero where that is outside kh x kw or c >= C. */
static signed char *pack_s2d(const pr_graph *g, const pr_node *n, qgemm_state *s) {
    const signed char *w = g->tensors[n->inputs[1]].data;
    int ph = (int)s->pad_h, pw = (int)s->pad_w;
    s->s2_ph = (ph + 1) / 2;
    s->s2_pw = (pw + 1) / 2;
    s->s2_kh = (int)(s->kh + 2 * s->s2_ph - ph + 1) / 2;
    s->s2_kw = (int)(s->kw + 2 * s->s2_pw - pw + 1) / 2;
    s->K2 = (int64_t)s->s2_kh * s->s2_kw * 16;
    signed char *p = w ? calloc((size_t)(s->N * s->K2), 1) : NULL;
    if (!p) return NULL;
    for (int64_t o = 0; o < s->N; o++)
        for (int t = 0; t < s->s2_kh; t++)
            for (int u = 0; u < s->s2_kw; u++)
                for (int d = 0; d < 4; d++) {
                    int64_t ky = 2 * t + (d >> 1) - 2 * s->s2_ph + ph;
                    int64_t kx = 2 * u + (d & 1) - 2 * s->s2_pw + pw;
                    if (ky < 0 || ky >= s->kh || kx < 0 || kx >= s->kw) continue;
                    for (int64_t c = 0; c < s->C; c++)
                        p[o * s->K2 + (t * s->s2_kw + u) * 16 + d * s->C + c] =
                            w[((o * s->C + c) * s->kh + ky) * s->kw + kx];
                }
    return p;
}

/* The fused form: int8 or uint8 out (NHWC or a matmul), act ReLU or none,
 * and a residual (int8, same layout) only with no activation before it.
 * Chosen when cuBLASLt has an algorithm for it; else the int32 + kernel
 * form. A uint8 out is written as int8 Y - 128 (bias - 128; the ReLUs are
 * then the saturation at -128, as 0 is for uint8) and flipped after. */
static precis_status try_fused(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                               qgemm_state *s, const float *ws, const float *bias,
                               const int *off, pr_err *e) {
    precis_status st = PRECIS_OK;
    int y = n->outputs[0], z = pr_node_in(n, 4);
    bool relu_pre = s->pre.kind == PR_ACT_RELU, relu_post = s->post.kind == PR_ACT_RELU;
    bool yu = g->tensors[y].dtype == PRECIS_UINT8;
    if (g->tensors[y].dtype != PRECIS_INT8 && !yu) return PRECIS_OK;
    if (s->conv && g->tensors[y].layout != PR_LAYOUT_NHWC) return PRECIS_OK;
    if ((s->pre.kind && !relu_pre) || (s->post.kind && !relu_post)) return PRECIS_OK;
    if (z >= 0 && (s->pre.kind || (g->tensors[z].dtype != PRECIS_INT8 && !s->z_b) ||
                   g->tensors[z].layout != g->tensors[y].layout))
        return PRECIS_OK;
    if (z < 0 && relu_pre && relu_post) return PRECIS_OK; /* relu twice: fine, but rare */
    float *al = malloc((size_t)s->N * sizeof *al), *bq = malloc((size_t)s->N * sizeof *bq);
    if (!al || !bq) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    for (int64_t j = 0; j < s->N; j++) {
        al[j] = s->a_scale * ws[s->n_wscale > 1 ? j : 0] * s->y_inv;
        bq[j] = bias ? bias[j] * s->y_inv : 0.0f;
        if (off) bq[j] += (float)off[j] * al[j];
        if (s->z_b) bq[j] += 128.0f * s->z_scale * s->y_inv; /* Z stored as z - 128 */
        if (yu) bq[j] -= 128.0f;
    }
    cudaStream_t stream = (cudaStream_t)cfg->x->stream;
    if ((st = pr_cu_upload(al, (size_t)s->N * sizeof *al, (void **)&s->alpha, stream, e))) goto done;
    if ((bias || off || yu || s->z_b) &&
        (st = pr_cu_upload(bq, (size_t)s->N * sizeof *bq, (void **)&s->bias_q, stream, e)))
        goto done;
    if ((st = pr_lt_i8_init_fused(&s->lt, s->N, s->Kp, cfg->tcache, s->alpha, s->bias_q,
                                  !yu && (relu_pre || relu_post), z >= 0, s->z_scale * s->y_inv,
                                  e)))
        goto done;
    s->fused = pr_lt_i8_probe(&s->lt, cfg->x);
    s->y_u8 = s->fused && yu && !s->y_b; /* biased Y: cuBLASLt's y - 128 is the storage */
    if (!s->fused) pr_lt_i8_fini(&s->lt);
done:
    free(al);
    free(bq);
    return st;
}

/* Does QConv n run on a space-to-depth copy (see the top)? stride 2, no
 * dilation, C <= 4, explicit pads with the top / left ones inside the
 * kernel; PRECIS_CUDA_IGEMM=0 / PRECIS_CUDA_S2D=0: no. */
static bool s2d_conv(const pr_graph *g, const pr_node *n) {
    const pr_tensor *W = &g->tensors[n->inputs[1]];
    const int64_t *v;
    int ns = pr_attr_ints(n, "strides", &v);
    bool s2 = ns == 2, d1 = true;
    for (int i = 0; i < ns; i++) s2 &= v[i] == 2;
    int64_t ph = 0, pw = 0;
    int np = pr_attr_ints(n, "pads", &v);
    if (np == 4) {
        ph = v[0];
        pw = v[1];
    }
    const int64_t *dv;
    int nd = pr_attr_ints(n, "dilations", &dv);
    for (int i = 0; i < nd; i++) d1 &= dv[i] == 1;
    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    const char *ig = getenv("PRECIS_CUDA_IGEMM");
    const char *sd = getenv("PRECIS_CUDA_S2D");
    return W->rank == 4 && s2 && d1 && W->dims[1] <= 4 && strcmp(ap, "NOTSET") == 0 &&
           (np == 0 || np == 4) && ph >= 0 && pw >= 0 && ph < W->dims[2] && pw < W->dims[3] &&
           !(ig && !strcmp(ig, "0")) && !(sd && !strcmp(sd, "0"));
}

static bool stem_on(void);

/* PRECIS_CUDA_STEM_POOL=0 keeps the stem conv and its MaxPool two steps (A/B;
 * read at each prepare); default fused (see the top). */
static bool stem_pool_on(void) {
    const char *e = getenv("PRECIS_CUDA_STEM_POOL");
    return !(e && !strcmp(e, "0"));
}

/* The ints attribute name of n equal to want[0..len) (absent: equal to dflt). */
static bool ints_are(const pr_node *n, const char *name, int len, const int64_t *want, int64_t dflt) {
    const int64_t *v;
    int k = pr_attr_ints(n, name, &v); /* -1: absent */
    if (k <= 0) {
        for (int i = 0; i < len; i++)
            if (want[i] != dflt) return false;
        return true;
    }
    if (k != len) return false;
    for (int i = 0; i < len; i++)
        if (v[i] != want[i]) return false;
    return true;
}

int pr_cu_stem_pool_node(const pr_graph *g, const pr_node *n) {
    if (!stem_pool_on() || !stem_on() || n->op != PR_OP_QConv || n->n_outputs < 1 ||
        pr_cuda_find_impl(g, n) != &pr_cuda_impl_qgemm || !s2d_conv(g, n))
        return -1;
    const pr_tensor *W = &g->tensors[n->inputs[1]];
    int y = pr_node_out(n, 0);
    int64_t ph = 0, pw = 0;
    const int64_t *v;
    if (pr_attr_ints(n, "pads", &v) == 4) {
        ph = v[0];
        pw = v[1];
    }
    /* the stem kernel's conv: 4 x 4 taps over the copy (K 256), Nout % 16 == 0 */
    if ((W->dims[2] + 2 * ((ph + 1) / 2) - ph + 1) / 2 != 4 ||
        (W->dims[3] + 2 * ((pw + 1) / 2) - pw + 1) / 2 != 4 || W->dims[0] % 16 ||
        pr_node_in(n, 4) >= 0 || y < 0)
        return -1;
    pr_cu_act a1 = pr_cu_act_of(n, "act"), a2 = pr_cu_act_of(n, "act2");
    if ((a1.kind != PR_ACT_NONE && a1.kind != PR_ACT_RELU) ||
        (a2.kind != PR_ACT_NONE && a2.kind != PR_ACT_RELU))
        return -1;
    const pr_tensor *Y = &g->tensors[y];
    if ((Y->dtype != PRECIS_INT8 && Y->dtype != PRECIS_UINT8) || Y->layout != PR_LAYOUT_NHWC ||
        (Y->flags & (PR_T_OUTPUT | PR_T_INPUT | PR_T_INIT)) || Y->rank != 4 ||
        !pr_dim_known(Y->dims[3]) || Y->dims[3] > 256)
        return -1;
    int pi = -1, uses = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i].n_inputs; j++)
            if (g->nodes[i].inputs[j] == y) {
                uses++;
                pi = i;
            }
    if (uses != 1) return -1;
    const pr_node *p = &g->nodes[pi];
    int po = pr_node_out(p, 0);
    static const int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, d1[2] = {1, 1};
    if (p->op != PR_OP_MaxPool || p->inputs[0] != y || po < 0 ||
        (p->n_outputs > 1 && p->outputs[1] >= 0) || pr_cuda_find_impl(g, p) != &pr_cuda_impl_pool ||
        !ints_are(p, "kernel_shape", 2, k3, 0) || !ints_are(p, "strides", 2, s2, 1) ||
        !ints_are(p, "dilations", 2, d1, 1) || pr_attr_int(p, "ceil_mode", 0) != 0 ||
        strcmp(pr_attr_str(p, "auto_pad", "NOTSET"), "NOTSET") ||
        pr_attr_ints(p, "pads", &v) != 4 || v[0] != 1 || v[1] != 1 || v[2] < 0 || v[2] > 1 ||
        v[3] < 0 || v[3] > 1)
        return -1;
    const pr_tensor *P = &g->tensors[po];
    if (P->dtype != Y->dtype || P->layout != PR_LAYOUT_NHWC ||
        pr_cu_u8_biased(g, y) != pr_cu_u8_biased(g, po))
        return -1;
    return pi;
}

bool pr_cu_pool_fused(const pr_graph *g, const pr_node *pool) {
    if (pool->op != PR_OP_MaxPool || pool->n_inputs < 1 || pool->inputs[0] < 0) return false;
    int c = g->tensors[pool->inputs[0]].producer;
    return c >= 0 && c < g->n_nodes && pr_cu_stem_pool_node(g, &g->nodes[c]) == pool - g->nodes;
}

static precis_status qgemm_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                   void **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    qgemm_state *s = calloc(1, sizeof *s);
    signed char *wp = NULL, *w2 = NULL;
    float *bf = NULL, *sf = NULL;
    int *off = NULL;
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (pthread_mutex_init(&s->mu, NULL)) {
        free(s);
        return pr_errf(e, PRECIS_ERR_OOM, "pthread_mutex_init failed");
    }
    s->mu_ok = true;
    s->tc = cfg->tcache;
    cudaStream_t stream = (cudaStream_t)cfg->x->stream;
    const pr_tensor *X = &g->tensors[n->inputs[0]], *W = &g->tensors[n->inputs[1]];
    s->conv = n->op == PR_OP_QConv;
    s->x_u8 = X->dtype == PRECIS_UINT8;
    s->x_b = s->x_u8 && pr_cu_u8_biased(g, n->inputs[0]);
    s->y_b = pr_cu_u8_biased(g, n->outputs[0]);
    s->z_b = pr_cu_u8_biased(g, pr_node_in(n, 4));
    if (s->conv) {
        s->N = W->dims[0];
        s->C = W->dims[1];
        s->kh = W->dims[2];
        s->kw = W->dims[3];
        s->K = s->C * s->kh * s->kw;
        const int64_t *v;
        int ns = pr_attr_ints(n, "strides", &v);
        bool s1 = true, p0 = true, d1 = true;
        for (int i = 0; i < ns; i++) s1 &= v[i] == 1;
        int np = pr_attr_ints(n, "pads", &v);
        for (int i = 0; i < np; i++) p0 &= v[i] == 0;
        if (np == 4) {
            s->pad_h = v[0];
            s->pad_w = v[1];
        }
        int nd = pr_attr_ints(n, "dilations", &v);
        for (int i = 0; i < nd; i++) d1 &= v[i] == 1;
        const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
        p0 &= strcmp(ap, "NOTSET") == 0 || strcmp(ap, "VALID") == 0 || s->kh * s->kw == 1;
        s->direct = s->kh == 1 && s->kw == 1 && s1 && p0 && d1 && s->C % 4 == 0 &&
                    X->layout == PR_LAYOUT_NHWC;
        s->Kp = s->direct ? s->K : up(s->K, 16);
        s->a_scale = pr_attr_float(n, "x_scale", 1.0f);
        const char *ig = getenv("PRECIS_CUDA_IGEMM");
        s->s2d = s2d_conv(g, n);
        s->ig_ok = (X->layout == PR_LAYOUT_NHWC && s->C % 16 == 0 && !(ig && !strcmp(ig, "0"))) ||
                   s->s2d;
    } else {
        bool tb = pr_attr_int(n, "transB", 0) != 0;
        s->K = tb ? W->dims[1] : W->dims[0];
        s->N = tb ? W->dims[0] : W->dims[1];
        s->Kp = s->K;
        s->a_scale = pr_attr_float(n, "a_scale", 1.0f) * pr_attr_float(n, "alpha", 1.0f);
    }
    if (!(wp = pack_weights(g, n, s))) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    if ((st = pr_cu_upload(wp, (size_t)(s->N * s->Kp), &s->w, stream, e))) goto fail;
    if (s->s2d) {
        if (!(w2 = pack_s2d(g, n, s))) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        if ((st = pr_cu_upload(w2, (size_t)(s->N * s->K2), &s->w2, stream, e))) goto fail;
        int pi = pr_cu_stem_pool_node(g, n);
        if (pi >= 0) {
            const int64_t *v;
            pr_attr_ints(&g->nodes[pi], "pads", &v);
            s->pool = true;
            s->pool_pe_h = (int)v[2];
            s->pool_pe_w = (int)v[3];
        }
    }
    if (s->x_u8) { /* 128 * sum_k W[n][k]: |.| <= 128 * 127 * K, K < 2^16 checked */
        if (s->K >= (1 << 16)) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "uint8 x with K %lld >= 65536",
                         (long long)s->K);
            goto fail;
        }
        if (!(off = malloc((size_t)s->N * sizeof *off))) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        for (int64_t o = 0; o < s->N; o++) {
            int sum = 0;
            for (int64_t k = 0; k < s->Kp; k++) sum += wp[o * s->Kp + k];
            off[o] = 128 * sum;
        }
        if ((st = pr_cu_upload(off, (size_t)s->N * sizeof *off, (void **)&s->acc_off, stream, e)))
            goto fail;
    }
    if ((st = pr_cu_qparams(g, n, s->N, "outputs", &sf, &s->n_wscale, &bf, e)) ||
        (st = pr_cu_upload(sf, (size_t)s->n_wscale * sizeof(float), (void **)&s->w_scale, stream,
                           e)) ||
        (bf && (st = pr_cu_upload(bf, (size_t)s->N * sizeof(float), (void **)&s->bias, stream, e))))
        goto fail;
    s->pre = pr_cu_act_of(n, "act");
    s->post = pr_cu_act_of(n, "act2");
    s->z_input = pr_node_in(n, 4) >= 0 ? 4 : -1;
    s->z_scale = pr_attr_float(n, "z_scale", 1.0f);
    s->y_inv = 1.0f / pr_attr_float(n, "y_scale", 1.0f);
    if ((st = try_fused(g, n, cfg, s, sf, bf, off, e))) goto fail;
    if (!s->fused && (st = pr_lt_i8_init(&s->lt, s->N, s->Kp, cfg->tcache, e))) goto fail;
    if (s->fused) {
        snprintf(s->what, sizeof s->what, "cublasLt int8 imma%s%s -> %s, requantized in its "
                 "epilogue (scale vector%s%s%s)",
                 s->conv ? (s->direct ? " 1x1 nhwc" : " im2col") : "",
                 s->x_b ? " (uint8 x stored biased)" : s->x_u8 ? " (uint8 x as x-128)" : "",
                 s->y_b ? "uint8 stored biased (y-128)"
                        : s->y_u8 ? "uint8 (as y-128, flipped)" : "int8",
                 s->bias ? "+bias" : "",
                 s->z_input >= 0 ? (s->z_b ? "+residual biased" : "+residual") : "",
                 s->pre.kind || s->post.kind ? "+Relu" : "");
    } else {
        pr_dtype yd = g->tensors[n->outputs[0]].dtype;
        const char *an = s->pre.kind ? pr_act_names[s->pre.kind] : "";
        const char *a2 = s->post.kind ? pr_act_names[s->post.kind] : "";
        snprintf(s->what, sizeof s->what, "cublasLt int8 imma%s%s -> int32, epilogue kernel "
                 "(scale+bias%s%s%s%s%s -> %s)",
                 s->conv ? (s->direct ? " 1x1 nhwc" : " im2col") : "",
                 s->x_b ? " (uint8 x stored biased)" : s->x_u8 ? " (uint8 x as x-128)" : "",
                 *an ? "+" : "", an,
                 s->z_input >= 0 ? (s->z_b ? "+residual biased" : "+residual") : "",
                 *a2 ? "+" : "", a2, s->y_b ? "uint8 stored biased" : pr_dtype_name(yd));
    }
    if (s->ig_ok)
        snprintf(s->what_ig, sizeof s->what_ig, "implicit-GEMM int8 %s%s%s (epilogue: "
                 "scale+bias%s%s%s) or %.100s, the faster per shape",
                 wgmma_on() ? (q1x1_on() ? "mma.sync/wgmma/q1x1" : "mma.sync/wgmma")
                            : q1x1_on() ? "mma.sync/q1x1" : "mma.sync",
                 s->s2d ? " on a space-to-depth copy" : "",
                 s->x_b ? " (uint8 x stored biased)" : s->x_u8 ? " (uint8 x as x-128)" : "",
                 s->pre.kind ? "+act" : "", s->z_input >= 0 ? "+residual" : "",
                 s->post.kind ? "+act2" : "", s->what);
    if (s->pool)
        snprintf(s->what_ig, sizeof s->what_ig, "implicit-GEMM int8 stem 64x64 (mma.sync) tile "
                 "on a space-to-depth copy%s, MaxPool 3x3 s2 fused (epilogue: scale+bias%s%s "
                 "-> %s, pooled)",
                 s->x_b ? " (uint8 x stored biased)" : s->x_u8 ? " (uint8 x as x-128)" : "",
                 s->pre.kind ? "+act" : "", s->post.kind ? "+act2" : "",
                 s->y_b ? "uint8 stored biased" : pr_dtype_name(g->tensors[n->outputs[0]].dtype));
    free(wp);
    free(w2);
    free(sf);
    free(bf);
    free(off);
    *out = s;
    return PRECIS_OK;
fail:
    free(wp);
    free(w2);
    free(sf);
    free(bf);
    free(off);
    qgemm_destroy(s);
    return st;
}

static const char *qgemm_describe(void *p) {
    qgemm_state *s = p;
    return s->ig_ok ? s->what_ig : s->what;
}

/* One run's geometry: the GEMM's M, the im2col parameters (convs) and the
 * implicit-GEMM ones (when s->ig_ok). */
typedef struct qgemm_geo {
    int64_t M;
    pr_cu_im2col ic;
    pr_cu_igemm ig; /* with s->s2d: the stride-1 conv over the space-to-depth copy */
    pr_cu_s2d s2;
    pr_cu_qepi q;
} qgemm_geo;

/* The cuBLASLt route: im2col (or X itself) x W^T, requantized in cuBLASLt's
 * epilogue or by the epilogue kernel from int32. */
static precis_status run_lt(qgemm_state *s, pr_kernel *k, pr_cuda_exec *x, const qgemm_geo *o) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    int64_t M = o->M;
    bool col = s->conv && !s->direct, flip = !col && s->x_u8 && !s->x_b; /* A - 128 copied */
    size_t col_bytes = col || flip ? (size_t)up(M * s->Kp, 256) : 0;
    size_t acc_bytes = s->fused ? 0 : (size_t)(M * s->N) * sizeof(int32_t);
    char *scr = pr_cuda_scratch(x, col_bytes + acc_bytes, e);
    if (!scr) return e->status;
    const void *a = k->in[0]->data;
    if (col) {
        KL_TRY(pr_cu_im2col_s8(x->stream, a, scr, &o->ic));
        a = scr;
    } else if (flip) {
        KL_TRY(pr_cu_u8_to_s8(x->stream, a, scr, M * s->K));
        a = scr;
    }
    if (s->fused) {
        if ((st = pr_lt_i8_run(&s->lt, x, M, s->w, a, o->q.z, k->out[0]->data, e))) return st;
        if (s->y_u8) KL_TRY(pr_cu_u8_to_s8(x->stream, k->out[0]->data, k->out[0]->data, M * s->N));
        return PRECIS_OK;
    }
    int32_t *acc = (int32_t *)(scr + col_bytes);
    if ((st = pr_lt_i8_run(&s->lt, x, M, s->w, a, NULL, acc, e))) return st;
    KL_TRY(pr_cu_qepilogue(x->stream, acc, M, &o->q));
    return PRECIS_OK;
fail:
    return st;
}

/* PRECIS_CUDA_STEM=0: a space-to-depth conv's route t3 is the mma.sync 64x128
 * tile as before (A/B); default it is cu_stem.cu's kernel (pr_cu_stem_s8:
 * the 128-column tile never won the 64-column stem; the timed choice keeps
 * whichever route is fastest). */
static bool stem_on(void) {
    const char *e = getenv("PRECIS_CUDA_STEM");
    return !(e && !strcmp(e, "0"));
}
#define ROUTE_STEM PR_CU_IGEMM_64x128
static bool stem_route(const qgemm_state *s, int route) {
    return s->s2d && route == ROUTE_STEM && stem_on();
}

static precis_status run_route(qgemm_state *s, pr_kernel *k, pr_cuda_exec *x, qgemm_geo *o,
                               int route) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    if (route == ROUTE_LT) return run_lt(s, k, x, o);
    o->ig.tile = route;
    const void *xa = k->in[0]->data, *w = s->w;
    if (s->s2d) {
        char *scr = pr_cuda_scratch(x, (size_t)(o->ig.N * o->ig.H * o->ig.W * 16), e);
        if (!scr) return e->status;
        KL_TRY(pr_cu_s2d_s8(x->stream, xa, scr, &o->s2));
        xa = scr;
        w = s->w2;
    }
    if (stem_route(s, route)) KL_TRY(pr_cu_stem_s8(x->stream, xa, w, &o->ig, &o->q));
    else if (route == PR_CU_IGEMM_TI128x128)
        KL_TRY(pr_cu_igemm_ti_s8(x->stream, xa, w, &o->ig, &o->q));
    else if (route >= PR_CU_IGEMM_Q1X1_FIRST)
        KL_TRY(pr_cu_q1x1_s8(x->stream, xa, w, &o->ig, &o->q));
    else KL_TRY(pr_cu_igemm_s8(x->stream, xa, w, &o->ig, &o->q));
    return PRECIS_OK;
fail:
    return st;
}

typedef struct route_launch {
    qgemm_state *s;
    pr_kernel *k;
    pr_cuda_exec *x;
    qgemm_geo *o;
    int route;
} route_launch;

static bool launch_route(void *v) {
    const route_launch *l = v;
    return run_route(l->s, l->k, l->x, l->o, l->route) == PRECIS_OK;
}

/* Median of 3 timed runs of a route after one untimed (ms; < 0: failed). */
static float time_route(qgemm_state *s, pr_kernel *k, pr_cuda_exec *x, qgemm_geo *o, int route) {
    route_launch l = {s, k, x, o, route};
    float t = pr_cu_time3((cudaStream_t)x->stream, launch_route, &l);
    pr_err_clear(k->err);
    return t;
}

static const char *const tile_names[PR_CU_IGEMM_TILES] = {
    "128x128", "128x64", "64x64", "64x128", "wgmma 128x128", "wgmma 128x256",
    "wgmma 128x128 k128", "wgmma 128x256 k128", "wgmma 128x64", "q1x1 64x256", "q1x1 64x64",
    "q1x1 128x64", "q1x1 64x128", "q1x1k 128x256", "q1x1 wgmma 128x256", "q1x1 wgmma 128x128",
    "q1x1 ws 128x128", "q1x1 st 128x256", "wgmma ti 128x128"};

/* A route's name in PRECIS_VERBOSE's lines and the description */
/* PRECIS_CUDA_IGEMM_WS=0 gives the wgmma 128x128 / 128x256 tiles back their
 * cu_igemm_wg.cu forms (A/B); default their warp-specialized forms
 * (cu_igemm_ws.cu: producer warps, mbarrier ring; BN 64 for Nout <= 64), the
 * 128x128 one as the ping-pong form (phase 19w: two consumer warpgroups on
 * alternating tiles, persistent; key " pp"); =1 phase 18w's 128x128 form
 * (key " ws"); =2 other forms, an experiment (key " ws2"). */
static bool igemm_ws_on(void) {
    const char *e = getenv("PRECIS_CUDA_IGEMM_WS");
    return !(e && !strcmp(e, "0"));
}

static bool igemm_pp_on(void) {
    const char *e = getenv("PRECIS_CUDA_IGEMM_WS");
    return !(e && (!strcmp(e, "0") || !strcmp(e, "1") || !strcmp(e, "2")));
}

static const char *route_name(const qgemm_state *s, int c) {
    if (igemm_pp_on() && c == PR_CU_IGEMM_WG128x128) return "wgmma pp 128x128";
    if (igemm_ws_on() && c == PR_CU_IGEMM_WG128x128) return "wgmma ws 128x128";
    if (igemm_ws_on() && c == PR_CU_IGEMM_WG128x256) return "wgmma ws 128x256";
    return c == ROUTE_LT ? "lt" : stem_route(s, c) ? "stem 64x64 (mma.sync)" : tile_names[c];
}

/* PRECIS_CUDA_WGMMA=0 leaves the wgmma tiles (cu_igemm_wg.cu, Hopper) out of
 * the timed choice (A/B); default on: they run only where they win. */
static bool wgmma_on(void) {
    const char *e = getenv("PRECIS_CUDA_WGMMA");
    return !(e && !strcmp(e, "0"));
}

/* PRECIS_CUDA_Q1X1=0 leaves the Q1X1 tiles (cu_q1x1.cu) out of the timed
 * choice (A/B); default on: they run only where they win. */
static bool q1x1_on(void) {
    const char *e = getenv("PRECIS_CUDA_Q1X1");
    return !(e && !strcmp(e, "0"));
}

/* PRECIS_CUDA_Q1X1K=0 leaves the K-streamed tiles (cu_q1x1.cu's k_q1x1k,
 * cu_q1x1_wg.cu's wgmma ones: any K) out of the timed choice (A/B); default on. */
static bool q1x1k_on(void) {
    const char *e = getenv("PRECIS_CUDA_Q1X1K");
    return !(e && !strcmp(e, "0"));
}

/* PRECIS_CUDA_Q1X1WS=0 leaves the warp-specialized tile (cu_q1x1_ws.cu: TMA
 * producer, ping-pong wgmma consumers) out of the timed choice (A/B); default on. */
static bool q1x1ws_on(void) {
    const char *e = getenv("PRECIS_CUDA_Q1X1WS");
    return !(e && !strcmp(e, "0"));
}

/* PRECIS_CUDA_Q1X1ST=0 leaves the small-K streaming tile (cu_q1x1_st.cu:
 * resident weights, TMA loads of A and the residual, TMA stores) out of the
 * timed choice (A/B; key " st" when on); default on. */
static bool q1x1st_on(void) {
    const char *e = getenv("PRECIS_CUDA_Q1X1ST");
    return !(e && !strcmp(e, "0"));
}

/* PRECIS_CUDA_IGEMM_TI=0 leaves the TMA im2col 3x3 tile (cu_igemm_ws.cu's
 * k_igemm_ti, phase 20w) out of the timed choice (A/B; key " ti" when on);
 * default on: it runs only where it times faster. =256: its 64 x 256 form
 * where Nout >= 256 (an experiment, timed slower; key " ti256"). */
static bool igemm_ti_on(void) {
    const char *e = getenv("PRECIS_CUDA_IGEMM_TI");
    return !(e && !strcmp(e, "0"));
}

/* The TI tile takes this conv: not 1x1 (the Q1X1 tiles' shapes), no
 * space-to-depth copy, C % 64 == 0 (a pipeline stage is one tap's
 * 64-channel chunk) */
static bool ti_shape(const qgemm_state *s, const pr_cu_igemm *g) {
    return s->conv && !s->s2d && (g->kh > 1 || g->kw > 1) && g->C % 64 == 0 &&
           g->K == g->kh * g->kw * g->C;
}

/* The Q1X1 tiles take this conv: 1x1, no padding (any stride). */
static bool q1x1_shape(const qgemm_state *s, const pr_cu_igemm *g) {
    return s->conv && !s->s2d && g->kh == 1 && g->kw == 1 && g->ph == 0 && g->pw == 0 &&
           g->C == g->K;
}

/* Route c among the timed candidates (wgmma / Q1X1 / Q1X1K tiles when on
 * and, for Q1X1 / Q1X1K, the shape fits). */
static bool route_cand(const qgemm_state *s, const pr_cu_igemm *g, int c, bool wg, bool q1) {
    if (c == PR_CU_IGEMM_QT128x256)
        return q1 && q1x1st_on() && q1x1_shape(s, g) && g->K <= 256 && g->sh == 1 && g->sw == 1;
    if (c == PR_CU_IGEMM_TI128x128) return wg && igemm_ti_on() && ti_shape(s, g);
    if (c == PR_CU_IGEMM_QS128x128) return q1 && q1x1ws_on() && q1x1_shape(s, g);
    if (c >= PR_CU_IGEMM_Q1X1K_FIRST) return q1 && q1x1k_on() && q1x1_shape(s, g);
    if (c >= PR_CU_IGEMM_Q1X1_FIRST) return q1 && q1x1_shape(s, g);
    if (c >= PR_CU_IGEMM_WG_FIRST) return wg;
    return true;
}

/* The route for this M: remembered, from the timing cache, or timed now
 * (PRECIS_CUDA_IGEMM: 0 cuBLASLt only, 1 implicit GEMM only, t0..t12 one
 * tile: t4..t8 the wgmma tiles, t9..t12 the Q1X1 ones, t13..t15 the K-streamed,
 * t16 the warp-specialized one, t17 the small-K streaming one, t18 the TMA im2col
 * 3x3 tile). */
static precis_status pick_route(qgemm_state *s, pr_kernel *k, pr_cuda_exec *x, qgemm_geo *o,
                                int *route) {
    precis_status st = PRECIS_OK;
    *route = ROUTE_LT;
    if (!s->ig_ok) return PRECIS_OK;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_routes; i++)
        if (s->routes[i].m == o->M) {
            *route = s->routes[i].route;
            pthread_mutex_unlock(&s->mu);
            return PRECIS_OK;
        }
    const char *env = getenv("PRECIS_CUDA_IGEMM");
    char key[200];
    const pr_cu_igemm *g = &o->ig;
    const bool wg = wgmma_on(), q1 = q1x1_on();
    /* v2: the candidates gained the wgmma tiles (" nowg" without them); v3: the
     * Q1X1 tiles (" noq" without them); v4: the Q1X1K tiles (" nok"); v5: the
     * warp-specialized tile (" nows") */
    snprintf(key, sizeof key, "qconv.route v5%s%s%s%s x=%lldx%lldx%lldx%lld w=%lldx%dx%d "
             "s=%dx%d p=%dx%d d=%dx%d y=%d z=%d%s%s%s", wg ? "" : " nowg", q1 ? "" : " noq",
             q1x1k_on() ? "" : " nok", q1x1ws_on() ? "" : " nows", (long long)g->N,
             (long long)g->H, (long long)g->W, (long long)g->C, (long long)g->Nout, g->kh, g->kw,
             g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, o->q.ydt, o->q.z ? o->q.zdt : 0,
             s->fused ? " fused" : "", s->x_b ? " x=u8b" : s->x_u8 ? " x=u8" : "",
             s->s2d ? (stem_on() ? " s2d stem" : " s2d") : "");
    if (q1 && q1x1st_on()) { /* the small-K streaming tile (no version bump) */
        size_t kl = strlen(key);
        snprintf(key + kl, sizeof key - kl, " st");
    }
    if (wg && igemm_ws_on()) { /* the 128x128 / 128x256 tiles' warp-specialized forms */
        const char *e = getenv("PRECIS_CUDA_IGEMM_WS");
        size_t kl = strlen(key);
        snprintf(key + kl, sizeof key - kl,
                 e && !strcmp(e, "2") ? " ws2" : igemm_pp_on() ? " pp" : " ws");
    }
    if (wg && igemm_ti_on()) { /* phase 20w: the TMA im2col tile among the candidates */
        const char *e = getenv("PRECIS_CUDA_IGEMM_TI");
        size_t kl = strlen(key);
        snprintf(key + kl, sizeof key - kl, e && !strcmp(e, "256") ? " ti256" : " ti");
    }
    int32_t r = 0;
    char times[600] = "";
    char *tend = NULL;
    long tf = env && env[0] == 't' ? strtol(env + 1, &tend, 10) : -1;
    if (tend && tend != env + 1 && !*tend && tf >= 0 && tf < PR_CU_IGEMM_TILES) {
        *route = (int)tf;
    } else if (!env && pr_cuda_tcache_get(s->tc, key, &r, sizeof r) && r >= ROUTE_LT &&
               r < PR_CU_IGEMM_TILES && (r == ROUTE_LT || route_cand(s, g, r, wg, q1))) {
        *route = r;
    } else if (x->capturing) {
        st = pr_errf(k->err, PRECIS_ERR_INTERNAL, "int8 conv: new shape during a graph capture");
    } else {
        float best = -1;
        for (int c = (env && !strcmp(env, "1")) ? 0 : ROUTE_LT; c < PR_CU_IGEMM_TILES; c++) {
            if (c != ROUTE_LT && !route_cand(s, g, c, wg, q1)) continue;
            float t = time_route(s, k, x, o, c);
            size_t tl = strlen(times);
            snprintf(times + tl, sizeof times - tl, " %s %.4f",
                     route_name(s, c), (double)t);
            if (t >= 0 && (best < 0 || t < best)) {
                best = t;
                *route = c;
            }
        }
        r = *route;
        if (!env) pr_cuda_tcache_put(s->tc, key, &r, sizeof r);
    }
    if (!st) {
        if (s->n_routes == PR_LT_I8_SHAPES) {
            memmove(&s->routes[0], &s->routes[1], (PR_LT_I8_SHAPES - 1) * sizeof s->routes[0]);
            s->n_routes--;
        }
        s->routes[s->n_routes].m = o->M;
        s->routes[s->n_routes++].route = *route;
        if (getenv("PRECIS_VERBOSE")) { /* which route runs (inspect shows the candidates) */
            char mb[64] = ""; /* a 1x1's least traffic: x, w, y and the residual once */
            if (q1x1_shape(s, g))
                snprintf(mb, sizeof mb, " (1x1 K %lld N %lld: %.1f MB)", (long long)g->K,
                         (long long)g->Nout,
                         (double)(o->M * g->K + g->Nout * g->K +
                                  o->M * g->Nout * (int64_t)pr_dtype_size(k->out[0]->dtype) +
                                  (o->q.z ? o->M * g->Nout : 0)) / 1e6);
            fprintf(stderr, "precis: node '%s' m=%lld: %s%s%s%s\n", k->node->name,
                    (long long)o->M, *route == ROUTE_LT ? "cublasLt" : route_name(s, *route), mb,
                    *times ? ", timed ms:" : "", times);
        }
        if (*route != ROUTE_LT)
            snprintf(s->what_ig, sizeof s->what_ig, "implicit-GEMM int8 %s%s tile%s%s "
                     "(epilogue: scale+bias%s%s%s -> %s)",
                     *route >= PR_CU_IGEMM_WG_FIRST || stem_route(s, *route) ? "" : "mma.sync ",
                     route_name(s, *route),
                     s->s2d ? " on a space-to-depth copy" : "",
                     s->x_b ? " (uint8 x stored biased)" : s->x_u8 ? " (uint8 x as x-128)" : "",
                     s->pre.kind ? "+act" : "",
                     s->z_input >= 0 ? (s->z_b ? "+residual biased" : "+residual") : "",
                     s->post.kind ? "+act2" : "",
                     s->y_b ? "uint8 stored biased" : pr_dtype_name(k->out[0]->dtype));
        else
            snprintf(s->what_ig, sizeof s->what_ig, "%s", s->what);
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* The stem with its MaxPool fused: the pooled [N, PH, PW, Nout] into the head
 * of Y (cuda_pool.c's MaxPool shares or copies it). */
static precis_status run_pool(qgemm_state *s, pr_kernel *k, pr_cuda_exec *x, qgemm_geo *o) {
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    int64_t PH = (o->ig.OH + 1 + s->pool_pe_h - 3) / 2 + 1;
    int64_t PW = (o->ig.OW + 1 + s->pool_pe_w - 3) / 2 + 1;
    char *scr = pr_cuda_scratch(x, (size_t)(o->ig.N * o->ig.H * o->ig.W * 16), e);
    if (!scr) goto fail_e;
    KL_TRY(pr_cu_s2d_s8(x->stream, k->in[0]->data, scr, &o->s2));
    KL_TRY(pr_cu_stem_pool_s8(x->stream, scr, s->w2, &o->ig, &o->q, PH, PW));
    if (getenv("PRECIS_VERBOSE")) {
        pthread_mutex_lock(&s->mu);
        if (!s->pool_said)
            fprintf(stderr, "precis: node '%s' m=%lld: stem 64x64 (mma.sync) + MaxPool fused, "
                    "pooled %lldx%lld\n", k->node->name, (long long)o->M, (long long)PH,
                    (long long)PW);
        s->pool_said = true;
        pthread_mutex_unlock(&s->mu);
    }
    return PRECIS_OK;
fail:
fail_e:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st ? st : e->status;
}

static precis_status qgemm_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    qgemm_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    if (Y->numel == 0) return PRECIS_OK;
    qgemm_geo o;
    memset(&o, 0, sizeof o);
    bool x_nhwc = k->g->tensors[k->node->inputs[0]].layout == PR_LAYOUT_NHWC;
    bool y_nhwc = k->g->tensors[k->node->outputs[0]].layout == PR_LAYOUT_NHWC;
    int xm = s->x_b ? PR_CU_X_U8B : s->x_u8 ? PR_CU_X_U8 : PR_CU_X_S8;
    if (s->conv) {
        rc_geom3 gm;
        int64_t kd[2] = {s->kh, s->kw};
        if ((st = pr_refconv_geom(k, PR_CONV_KIND_CONV, X, kd, Y, &gm))) return st;
        int64_t Nb = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
        if (C != s->C)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "%lld input channels, weights for %lld",
                              (long long)C, (long long)s->C);
        o.ic = (pr_cu_im2col){Nb, C, H, W, Y->dims[2], Y->dims[3],
                              x_nhwc ? H * W * C : C * H * W, x_nhwc ? 1 : H * W,
                              x_nhwc ? W * C : W, x_nhwc ? C : 1, s->Kp,
                              (int)s->kh, (int)s->kw, (int)gm.s[1], (int)gm.s[2], (int)gm.pb[1],
                              (int)gm.pb[2], (int)gm.d[1], (int)gm.d[2], xm};
        o.ig = (pr_cu_igemm){Nb, H, W, C, o.ic.OH, o.ic.OW, s->N, s->K, o.ic.kh, o.ic.kw,
                             o.ic.sh, o.ic.sw, o.ic.ph, o.ic.pw, o.ic.dh, o.ic.dw, 0, xm};
        o.M = Nb * o.ic.OH * o.ic.OW;
        if (s->s2d) {
            if (gm.pb[1] != s->pad_h || gm.pb[2] != s->pad_w || gm.s[1] != 2 || gm.s[2] != 2)
                return pr_kernelf(k, PRECIS_ERR_INTERNAL, "space-to-depth weights for pads "
                                  "%lldx%lld stride 2, geometry pads %lldx%lld stride %lldx%lld",
                                  (long long)s->pad_h, (long long)s->pad_w, (long long)gm.pb[1],
                                  (long long)gm.pb[2], (long long)gm.s[1], (long long)gm.s[2]);
            o.s2 = (pr_cu_s2d){Nb, C, H, W, o.ic.sN, o.ic.sC, o.ic.sH, o.ic.sW, xm};
            o.ig = (pr_cu_igemm){Nb, (H + 1) / 2, (W + 1) / 2, 16, o.ic.OH, o.ic.OW, s->N, s->K2,
                                 s->s2_kh, s->s2_kw, 1, 1, s->s2_ph, s->s2_pw, 1, 1, 0, xm};
        }
    } else {
        if (X->dims[X->rank - 1] != s->K)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "K %lld, weights for %lld",
                              (long long)X->dims[X->rank - 1], (long long)s->K);
        o.M = X->numel / s->K;
    }
    const pr_buf *Z = s->z_input >= 0 ? pr_kin(k, s->z_input) : NULL;
    o.q = (pr_cu_qepi){s->N, s->conv && !y_nhwc ? Y->dims[2] * Y->dims[3] : 0, s->a_scale,
                       s->w_scale, s->n_wscale, s->bias, s->pre, s->post,
                       Z ? Z->data : NULL, Z ? (int)(s->z_b ? PRECIS_INT8 : Z->dtype) : 0,
                       Z && (Z->dtype == PRECIS_INT8 || Z->dtype == PRECIS_UINT8), s->z_scale,
                       Y->data, (int)Y->dtype, s->y_inv, s->acc_off, s->y_b, s->z_b};
    if (s->pool) return run_pool(s, k, x, &o);
    int route = ROUTE_LT;
    if ((st = pick_route(s, k, x, &o, &route)) || (st = run_route(s, k, x, &o, route)))
        pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_qgemm = {
    .name = "cublaslt.int8",
    .supports = qgemm_supports,
    .nhwc_ok = qgemm_nhwc_ok,
    .packs = qgemm_packs,
    .prepare = qgemm_prepare,
    .run = qgemm_run,
    .describe = qgemm_describe,
    .destroy = qgemm_destroy,
};
