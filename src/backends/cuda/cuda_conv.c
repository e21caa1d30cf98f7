/* Conv and FusedConv (2-D, NCHW or NHWC, groups, dilations; asymmetric pads
 * by padding the input into scratch first, cuDNN taking symmetric ones) through
 * cuDNN: float32 (FMA math, no TF32), float16 and bfloat16 (Tensor Core
 * math, float32 accumulation). The algorithm is chosen per input shape by
 * timing (cudnnFindConvolutionForwardAlgorithmEx), at prepare when the
 * shapes are static, else on the first run of a shape (cached under a lock).
 * Where the fused node's epilogue fits cuDNN's y = act(conv(x) + z + bias)
 * (act ReLU or identity) it runs as cudnnConvolutionBiasActivationForward;
 * when cuDNN refuses that for the chosen algorithm, or the epilogue does not
 * fit, the convolution is followed by one pass of our epilogue kernel
 * (bias, act, residual, act2). Depthwise convolutions (group == C == K)
 * also have our own kernel (cu_dwconv.cu: the epilogue in the same pass,
 * asymmetric pads without a padded copy); it is timed against cuDNN's choice
 * per shape and kept where it wins (PRECIS_CUDA_DWCONV=0: cuDNN only, 1: ours
 * wherever it applies). fp16/bf16 NHWC convs of group 1 with C % 8 == 0 and
 * K % 8 == 0 also have our implicit-GEMM kernel (cu_hconv.cu: mma.sync, the
 * epilogue fused; the 1x1 convs of MobileNet-style blocks are its case),
 * timed per shape and tile against cuDNN's choice (PRECIS_CUDA_HCONV=0:
 * cuDNN only, 1: ours wherever it applies). describe() names what runs. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_impls.h"
#include "backends/cuda/cuda_tcache.h"
#include "backends/ref/ref_conv.h"

#define MAX_SHAPES 8
#define FIND_WS ((size_t)256 << 20)

typedef struct conv_shape {
    int64_t n, h, w;
    cudnnTensorDescriptor_t xd, yd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws;
    bool fused;
    bool dw;                       /* our depthwise kernel runs it */
    int dw_px;                     /* its form (pr_cu_dw.px: 1, 4 or a tile, timed) */
    int hc;                        /* our implicit GEMM runs it: tile + 1 (0: not) */
    float t_fused, t_split, t_dw, t_hc; /* ms measured at planning (0: not timed) */
} conv_shape;

typedef struct conv_state {
    pr_dtype dt;
    cudnnDataType_t ddt;
    int64_t K, C, kh, kw;
    int group, ph, pw, sh, sw, dh, dw;
    void *w, *bias; /* device, dt; bias zeros when the node has none (fused API) */
    float *bias32;  /* device float32 bias for our epilogue after a 16-bit convolution (the
                     * bias rounded to fp16/bf16 is a second rounding where BN folding makes
                     * it large; PRECIS_CUDA_CONV_BIAS16=1: the dt copy, as before) */
    bool has_bias, has_z, fusable;
    bool nhwc; /* activations N,H,W,C and weights K,kh,kw,C/group */
    bool asym; /* pads differ at the two ends: X is padded into scratch (pt, pl, pb, pr) */
    int pt, pl, pb, pr;
    cudnnTensorFormat_t fmt;
    pr_cu_act a1, a2;
    int dw_mode;      /* 0 cuDNN only; 1 our depthwise kernel timed against it; 2 ours */
    float *dw_w, *dw_b; /* device float32 [kh * kw][C] and [C] (NULL: no bias) */
    int hc_mode;        /* 0 no implicit GEMM of ours; 1 timed against cuDNN; 2 ours */
    float *hc_w32;      /* its direct form (C % 8 != 0): float32 [kh * kw * C][K] */
    cudnnFilterDescriptor_t wd;
    cudnnTensorDescriptor_t bd;
    cudnnActivationDescriptor_t ad;
    void *tc; /* timing cache (pr_cuda_tcache) or NULL */
    pthread_mutex_t mu;
    conv_shape shapes[MAX_SHAPES];
    int n_shapes;
    char what[256];
} conv_state;

static const char *const algo_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
                                         "fft", "fft_tiling", "winograd", "winograd_nonfused"};

static bool conv_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Conv && n->op != PR_OP_FusedConv) return false;
    int x = pr_node_in(n, 0), w = pr_node_in(n, 1), b = pr_node_in(n, 2), y = pr_node_out(n, 0);
    if (x < 0 || w < 0 || y < 0) return false;
    pr_dtype dt = pr_cu_tdt(g, y);
    if (!pr_cu_float(dt) || pr_cu_tdt(g, x) != dt || pr_cu_is_init(g, x)) return false;
    if (g->tensors[x].rank != 4 || !pr_cu_is_init(g, w) || g->tensors[w].rank != 4 ||
        !pr_cu_float(g->tensors[w].dtype))
        return false;
    if (b >= 0 && (!pr_cu_is_init(g, b) || !pr_cu_float(g->tensors[b].dtype))) return false;
    const char *ap = pr_attr_str(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) return false;
    const int64_t *pads;
    int np = pr_attr_ints(n, "pads", &pads);
    if (np != -1 && np != 4) return false;
    if (n->op == PR_OP_FusedConv) {
        pr_act a;
        if (!pr_act_from_node(n, "act", &a) || !pr_act_from_node(n, "act2", &a)) return false;
        int z = pr_node_in(n, 3);
        if (z >= 0 && (pr_cu_tdt(g, z) != dt || pr_cu_is_init(g, z))) return false;
    }
    return true;
}

static bool conv_packs(const pr_graph *g, const pr_node *n, int i) { return i == 1 || i == 2; }

static bool conv_nhwc_ok(const pr_graph *g, const pr_node *n) {
    return conv_supports(g, n) && pr_cu_conv_nhwc_ok(g, n);
}

/* The element index -> bias channel mapping of the epilogue kernel. */
static int64_t bias_div(const conv_state *s, int64_t hw) { return s->nhwc ? 1 : hw; }

static void shape_free(conv_shape *c) {
    if (c->xd) cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd) cudnnDestroyTensorDescriptor(c->yd);
    if (c->cd) cudnnDestroyConvolutionDescriptor(c->cd);
}

static void conv_destroy(void *p) {
    conv_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->n_shapes; i++) shape_free(&s->shapes[i]);
    if (s->wd) cudnnDestroyFilterDescriptor(s->wd);
    if (s->bd) cudnnDestroyTensorDescriptor(s->bd);
    if (s->ad) cudnnDestroyActivationDescriptor(s->ad);
    if (s->w) cudaFree(s->w);
    if (s->dw_w) cudaFree(s->dw_w);
    if (s->dw_b) cudaFree(s->dw_b);
    if (s->bias) cudaFree(s->bias);
    if (s->bias32) cudaFree(s->bias32);
    if (s->hc_w32) cudaFree(s->hc_w32);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void describe_into(conv_state *s, const conv_shape *c) {
    const char *tn = s->dt == PRECIS_FLOAT16 ? "fp16" : s->dt == PRECIS_BFLOAT16 ? "bf16" : "fp32";
    char ep[192] = "";
    if (c && c->fused)
        snprintf(ep, sizeof ep, " fused bias%s%s", s->has_z ? "+residual" : "",
                 s->a1.kind == PR_ACT_RELU || s->a2.kind == PR_ACT_RELU ? "+relu" : "");
    else if (s->has_bias || s->has_z || s->a1.kind || s->a2.kind)
        snprintf(ep, sizeof ep, " + epilogue kernel (%s%s%s%s%s%s)", s->has_bias ? "bias" : "",
                 s->a1.kind ? "+" : "", s->a1.kind ? pr_act_names[s->a1.kind] : "",
                 s->has_z ? "+residual" : "", s->a2.kind ? " then " : "",
                 s->a2.kind ? pr_act_names[s->a2.kind] : "");
    if (c && c->t_fused > 0) {
        size_t l = strlen(ep);
        snprintf(ep + l, sizeof ep - l, " [timed: fused %.3f ms, split %.3f ms]", c->t_fused,
                 c->t_split);
    }
    if (c && c->hc) {
        static const char *const tiles[] = {"128x128", "128x64", "64x64", "128x32", "32x32 split-k 4",
                                            "k32 1x1", "k32 1x1 direct epilogue",
                                            "k32 1x1 linear store", "direct"};
        char tm[96] = "";
        if (c->t_hc > 0)
            snprintf(tm, sizeof tm, " [timed: ours %.3f ms, cudnn algo %d %.3f ms]", c->t_hc,
                     (int)c->algo, c->dw ? c->t_dw : c->fused ? c->t_fused : c->t_split);
        snprintf(s->what, sizeof s->what,
                 "cu implicit-gemm conv %s nhwc tile %s, epilogue fused (%s%s%s%s%s)%s", tn,
                 (unsigned)(c->hc - 1) < 8 ? tiles[c->hc - 1] : "?", s->has_bias ? "bias" : "",
                 s->a1.kind ? "+" : "", s->a1.kind ? pr_act_names[s->a1.kind] : "",
                 s->has_z ? "+residual" : "", s->a2.kind ? " then act2" : "", tm);
    } else if (c && c->dw) {
        char tm[96] = "";
        if (c->t_dw > 0)
            snprintf(tm, sizeof tm, " [timed: ours %.3f ms, cudnn algo %d %.3f ms]", c->t_dw,
                     (int)c->algo, c->fused ? c->t_fused : c->t_split);
        snprintf(s->what, sizeof s->what, "cu depthwise conv %s %s%s, epilogue fused (%s%s%s%s%s)%s",
                 tn, s->nhwc ? "nhwc" : "nchw", pr_cu_dw_form_name(c->dw_px),
                 s->has_bias ? "bias" : "", s->a1.kind ? "+" : "",
                 s->a1.kind ? pr_act_names[s->a1.kind] : "", s->has_z ? "+residual" : "",
                 s->a2.kind ? " then act2" : "", tm);
    } else if (c)
        snprintf(s->what, sizeof s->what, "cudnn conv %s algo %d (%s) fwd %s%s", tn,
                 (int)c->algo, (unsigned)c->algo < 8 ? algo_names[c->algo] : "?",
                 s->nhwc ? "nhwc" : "nchw", ep);
    else
        snprintf(s->what, sizeof s->what,
                 "cudnn conv %s fwd %s (algorithm timed per shape at first run)%s", tn,
                 s->nhwc ? "nhwc" : "nchw", ep);
}

/* Our depthwise kernel's geometry for input n x C x h x w as cuDNN sees it
 * (h, w include asymmetric pads, which the kernel takes as offsets). */
static pr_cu_dw dw_params(const conv_state *s, int64_t n, int64_t h, int64_t w, int64_t oh,
                          int64_t ow) {
    pr_cu_dw p;
    memset(&p, 0, sizeof p);
    p.N = n;
    p.C = s->C;
    p.H = h - s->pt - s->pb;
    p.W = w - s->pl - s->pr;
    p.OH = oh;
    p.OW = ow;
    p.kh = (int)s->kh;
    p.kw = (int)s->kw;
    p.sh = s->sh;
    p.sw = s->sw;
    p.pt = s->asym ? s->pt : s->ph;
    p.pl = s->asym ? s->pl : s->pw;
    p.dh = s->dh;
    p.dw = s->dw;
    p.nhwc = s->nhwc;
    p.a1 = s->a1;
    p.a2 = s->a2;
    return p;
}

/* Our implicit GEMM's geometry, as dw_params. */
static pr_cu_hc hc_params(const conv_state *s, int64_t n, int64_t h, int64_t w, int64_t oh,
                          int64_t ow, int tile) {
    pr_cu_hc p;
    memset(&p, 0, sizeof p);
    p.N = n;
    p.C = s->C;
    p.H = h - s->pt - s->pb;
    p.W = w - s->pl - s->pr;
    p.OH = oh;
    p.OW = ow;
    p.Nout = s->K;
    p.K = s->kh * s->kw * s->C;
    p.kh = (int)s->kh;
    p.kw = (int)s->kw;
    p.sh = s->sh;
    p.sw = s->sw;
    p.ph = s->asym ? s->pt : s->ph;
    p.pw = s->asym ? s->pl : s->pw;
    p.dh = s->dh;
    p.dw = s->dw;
    p.tile = tile;
    p.a1 = s->a1;
    p.a2 = s->a2;
    p.w32 = s->hc_w32;
    return p;
}

/* Runs c with our depthwise kernel or implicit GEMM (pads as offsets, the
 * epilogue fused) on the unpadded X; false when c is cuDNN's. */
static bool run_ours(conv_state *s, const conv_shape *c, pr_cuda_exec *x, const pr_buf *X,
                     const pr_buf *Z, pr_buf *Y, int64_t hp, int64_t wp, int *rc) {
    if (c->dw) {
        pr_cu_dw dp = dw_params(s, X->dims[0], hp, wp, Y->dims[2], Y->dims[3]);
        dp.px = c->dw_px;
        *rc = pr_cu_dwconv(x->stream, (int)s->dt, X->data, s->dw_w, s->dw_b, Z ? Z->data : NULL,
                           Y->data, &dp);
        return true;
    }
    if (c->hc) {
        pr_cu_hc hp_ = hc_params(s, X->dims[0], hp, wp, Y->dims[2], Y->dims[3], c->hc - 1);
        *rc = pr_cu_hconv(x->stream, (int)s->dt, X->data, s->w, s->has_bias ? s->bias32 : NULL,
                          Z ? Z->data : NULL, Y->data, &hp_);
        return true;
    }
    return false;
}

/* Milliseconds per run of the fused call, of convolution + epilogue kernel,
 * of our depthwise kernel (dwp) or of our implicit GEMM (hcp) (median of 5
 * after a warm-up); nonzero on failure. */
static int time_variant(conv_state *s, pr_cuda_exec *x, const conv_shape *c, bool fused,
                        const pr_cu_dw *dwp, const pr_cu_hc *hcp, const void *xp, void *yp,
                        const void *zp, int64_t hw, float *ms) {
    cudnnHandle_t dnn = (cudnnHandle_t)x->dnn;
    cudaStream_t st = (cudaStream_t)x->stream;
    cudaEvent_t a = NULL, b = NULL;
    float t[5];
    int bad = cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess;
    float one = 1.0f, zero = 0.0f, a2 = zp ? 1.0f : 0.0f;
    for (int i = -1; i < 5 && !bad; i++) {
        bad |= cudaEventRecord(a, st) != cudaSuccess;
        if (dwp) {
            bad |= pr_cu_dwconv(st, (int)s->dt, xp, s->dw_w, s->dw_b, zp, yp, dwp) != 0;
        } else if (hcp) {
            bad |= pr_cu_hconv(st, (int)s->dt, xp, s->w, s->has_bias ? s->bias32 : NULL, zp, yp,
                               hcp) != 0;
        } else if (fused) {
            bad |= cudnnConvolutionBiasActivationForward(
                       dnn, &one, c->xd, xp, s->wd, s->w, c->cd, c->algo, x->ws, x->ws_bytes, &a2,
                       c->yd, zp ? zp : yp, s->bd, s->bias, s->ad, c->yd, yp) !=
                   CUDNN_STATUS_SUCCESS;
        } else {
            bad |= cudnnConvolutionForward(dnn, &one, c->xd, xp, s->wd, s->w, c->cd, c->algo,
                                           x->ws, x->ws_bytes, &zero, c->yd, yp) !=
                   CUDNN_STATUS_SUCCESS;
            int64_t n = c->n * s->K * hw;
            bad |= pr_cu_epilogue(st, yp, (int)s->dt, n, s->bias32 ? (void *)s->bias32 : s->bias,
                                  s->bias32 ? (int)PRECIS_FLOAT32 : (int)s->dt, bias_div(s, hw),
                                  s->K, s->a1, zp, (int)s->dt, s->a2) != 0;
        }
        bad |= cudaEventRecord(b, st) != cudaSuccess;
        bad |= cudaEventSynchronize(b) != cudaSuccess;
        if (i >= 0 && !bad) bad |= cudaEventElapsedTime(&t[i], a, b) != cudaSuccess;
    }
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    if (bad) return 1;
    for (int i = 1; i < 5; i++) /* insertion sort for the median */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            float v = t[j];
            t[j] = t[j - 1];
            t[j - 1] = v;
        }
    *ms = t[2];
    return 0;
}

/* FFT and Winograd algorithms transform the operands; in 16-bit types those
 * transforms round in 16 bits, which a plan's float32 accumulator does not
 * allow. (PP-OCRv4 det/rec fp16 picked fft_tiling for some convs on some runs,
 * and their error against ref moved between runs.) */
static bool lossy_algo(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

/* Descriptors, algorithm (timed on x/y/z buffers) and whether the fused
 * call runs, for input n x C x h x w. */
static precis_status plan_shape(conv_state *s, pr_cuda_exec *x, int64_t n, int64_t h, int64_t w,
                                int64_t oh, int64_t ow, const void *xp, void *yp, const void *zp,
                                conv_shape *out, pr_err *e) {
    precis_status st = PRECIS_OK;
    conv_shape c = {n, h, w, NULL, NULL, NULL, 0, 0, false, false, 1, 0, 0, 0, 0, 0};
    cudnnHandle_t dnn = (cudnnHandle_t)x->dnn;
    DNN_TRY(cudnnCreateTensorDescriptor(&c.xd));
    DNN_TRY(cudnnCreateTensorDescriptor(&c.yd));
    DNN_TRY(cudnnCreateConvolutionDescriptor(&c.cd));
    DNN_TRY(cudnnSetTensor4dDescriptor(c.xd, s->fmt, s->ddt, (int)n, (int)s->C, (int)h, (int)w));
    DNN_TRY(cudnnSetTensor4dDescriptor(c.yd, s->fmt, s->ddt, (int)n, (int)s->K, (int)oh, (int)ow));
    DNN_TRY(cudnnSetConvolution2dDescriptor(c.cd, s->ph, s->pw, s->sh, s->sw, s->dh, s->dw,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN_TRY(cudnnSetConvolutionGroupCount(c.cd, s->group));
    cudnnMathType_t math = s->dt == PRECIS_FLOAT32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    DNN_TRY(cudnnSetConvolutionMathType(c.cd, math));
    int on = 0, oc = 0, ohh = 0, oww = 0;
    DNN_TRY(cudnnGetConvolution2dForwardOutputDim(c.cd, c.xd, s->wd, &on, &oc, &ohh, &oww));
    if (ohh != oh || oww != ow || oc != s->K) {
        st = pr_errf(e, PRECIS_ERR_SHAPE, "cuDNN output %dx%dx%d, the graph says %lldx%lldx%lld",
                     oc, ohh, oww, (long long)s->K, (long long)oh, (long long)ow);
        goto fail;
    }
    /* the timing cache: the choice made for this problem by an earlier build */
    char key[256];
    snprintf(key, sizeof key, "cudnn.conv dt=%d fmt=%d n=%lld c=%lld h=%lld w=%lld k=%lld "
             "r=%lldx%lld p=%d,%d s=%d,%d d=%d,%d g=%d fuse=%d z=%d act=%d,%d dw=%d hc=%d v=7",
             (int)s->dt, (int)s->fmt, (long long)n, (long long)s->C, (long long)h, (long long)w,
             (long long)s->K, (long long)s->kh, (long long)s->kw, s->ph, s->pw, s->sh, s->sw,
             s->dh, s->dw, s->group, (int)s->fusable, (int)s->has_z, s->a1.kind, s->a2.kind,
             s->dw_mode, s->hc_mode);
    struct { int32_t algo, math, fused, pad; uint64_t ws; } cached;
    if (pr_cuda_tcache_get(s->tc, key, &cached, sizeof cached)) {
        c.algo = (cudnnConvolutionFwdAlgo_t)cached.algo;
        c.ws = (size_t)cached.ws;
        c.fused = cached.fused != 0;
        c.dw = (cached.pad & 1) && s->dw_mode;
        c.dw_px = cached.pad >> 8 ? cached.pad >> 8 : 1;
        c.hc = s->hc_mode ? (cached.pad >> 2) & 63 : 0;
        DNN_TRY(cudnnSetConvolutionMathType(c.cd, (cudnnMathType_t)cached.math));
        if (c.ws > x->ws_bytes && (st = pr_cuda_workspace(x, c.ws, e))) goto fail;
        *out = c;
        return PRECIS_OK;
    }
    if ((st = pr_cuda_workspace(x, FIND_WS, e))) goto fail;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    cudnnStatus_t fr = cudnnFindConvolutionForwardAlgorithmEx(
        dnn, c.xd, xp, s->wd, s->w, c.cd, c.yd, yp, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf,
        x->ws, x->ws_bytes);
    if (fr >= CUDNN_STATUS_BAD_PARAM && fr < 4000) { /* this configuration is not supported */
        pr_dnn_fail(e, fr, "cudnnFindConvolutionForwardAlgorithmEx");
        st = pr_err_prefix(e, "cuDNN refuses the convolution");
        e->status = st = PRECIS_ERR_UNSUPPORTED;
        goto fail;
    }
    DNN_TRY(fr);
    int best = -1;
    for (int i = 0; i < got && best < 0; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        if (s->dt == PRECIS_FLOAT32 && perf[i].mathType != CUDNN_FMA_MATH &&
            perf[i].mathType != CUDNN_DEFAULT_MATH)
            continue; /* float32 stays float32: no TF32 */
        if (s->dt != PRECIS_FLOAT32 && lossy_algo(perf[i].algo))
            continue; /* fp16/bf16 accumulate in float32: no transforms in 16 bits */
        best = i;
    }
    if (best < 0) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "cuDNN found no convolution algorithm (%d tried)",
                     got);
        goto fail;
    }
    c.algo = perf[best].algo;
    c.ws = perf[best].memory;
    DNN_TRY(cudnnSetConvolutionMathType(c.cd, perf[best].mathType));
    if (s->fusable) { /* does cuDNN run the fused form with this algorithm? */
        float one = 1.0f, a2 = s->has_z ? 1.0f : 0.0f;
        cudnnStatus_t r = cudnnConvolutionBiasActivationForward(
            dnn, &one, c.xd, xp, s->wd, s->w, c.cd, c.algo, x->ws, x->ws_bytes, &a2, c.yd,
            zp ? zp : yp, s->bd, s->bias, s->ad, c.yd, yp);
        c.fused = r == CUDNN_STATUS_SUCCESS;
        /* and is it faster than the convolution followed by our epilogue? */
        float tf, tu;
        if (c.fused && !time_variant(s, x, &c, true, NULL, NULL, xp, yp, zp, oh * ow, &tf) &&
            !time_variant(s, x, &c, false, NULL, NULL, xp, yp, zp, oh * ow, &tu)) {
            c.fused = tf <= tu;
            c.t_fused = tf;
            c.t_split = tu;
        }
        cudaGetLastError();
    }
    if (s->dw_mode) { /* our depthwise kernel against cuDNN's choice */
        pr_cu_dw p = dw_params(s, n, h, w, oh, ow);
        float td = 0, tc = c.fused ? c.t_fused : c.t_split;
        /* its forms (fp16/bf16 NHWC): timed, the fastest kept */
        const char *pv = getenv("PRECIS_CUDA_DW_PX"); /* tests: 1, 4 or 16.. (a tile), forced */
        c.dw_px = p.px = 1;
        if (pv && pr_cu_dw_form_ok(&p, (int)s->dt, atoi(pv))) c.dw_px = p.px = atoi(pv);
        else if (s->nhwc && s->dt != PRECIS_FLOAT32)
            c.dw_px = p.px = pr_cu_dw_fastest(x->stream, (int)s->dt, &p, xp, s->dw_w, s->dw_b, zp, yp);
        cudaGetLastError();
        if (s->dw_mode == 2) {
            c.dw = true;
        } else if (!time_variant(s, x, &c, false, &p, NULL, xp, yp, zp, oh * ow, &td) &&
                   (tc > 0 || !time_variant(s, x, &c, c.fused, NULL, NULL, xp, yp, zp, oh * ow, &tc))) {
            c.dw = td < tc;
            c.t_dw = td;
            if (c.fused) c.t_fused = tc;
            else c.t_split = tc;
        }
        cudaGetLastError();
    }
    if (s->hc_mode) { /* our implicit GEMM, each tile, against the best so far */
        float hbest = 0, tc = c.dw ? c.t_dw : c.fused ? c.t_fused : c.t_split;
        int bt = -1, t0 = 0, t1 = PR_CU_HCONV_TILES;
        const char *tv = getenv("PRECIS_CUDA_HCONV_TILE"); /* tests: one tile, forced */
        if (s->C % 8)
            t1 = (t0 = PR_CU_HCONV_DIRECT) + 1;
        else if (s->hc_mode == 2 && tv && atoi(tv) >= 0 && atoi(tv) < PR_CU_HCONV_TILES)
            t1 = (t0 = atoi(tv)) + 1;
        const char *kv = getenv("PRECIS_CUDA_HCONV_K32"); /* 0: the k32 tiles not timed (A/B) */
        bool k32_off = kv && !strcmp(kv, "0") && t1 - t0 > 1;
        const char *lv = getenv("PRECIS_CUDA_HCONV_K32L"); /* 0: the linear-store k32 not timed */
        bool k32l_off = lv && !strcmp(lv, "0") && t1 - t0 > 1;
        for (int t = t0; t < t1; t++) {
            if ((t == PR_CU_HCONV_K32 || t == PR_CU_HCONV_K32D || t == PR_CU_HCONV_K32L) && k32_off)
                continue;
            if (t == PR_CU_HCONV_K32L && k32l_off) continue;
            pr_cu_hc hp = hc_params(s, n, h, w, oh, ow, t);
            float tt;
            if (!time_variant(s, x, &c, false, NULL, &hp, xp, yp, zp, oh * ow, &tt) &&
                (bt < 0 || tt < hbest)) {
                hbest = tt;
                bt = t;
            }
        }
        if (bt >= 0 && s->hc_mode == 1 && tc <= 0 &&
            time_variant(s, x, &c, c.fused, NULL, NULL, xp, yp, zp, oh * ow, &tc))
            tc = 0;
        if (bt >= 0 && (s->hc_mode == 2 || tc <= 0 || hbest < tc)) {
            c.hc = bt + 1;
            c.t_hc = hbest;
            if (!c.dw && !c.fused) c.t_split = tc;
        }
        cudaGetLastError();
    }
    CU_TRY(cudaStreamSynchronize((cudaStream_t)x->stream));
    memset(&cached, 0, sizeof cached);
    cached.algo = (int32_t)c.algo;
    cached.math = (int32_t)perf[best].mathType;
    cached.fused = c.fused;
    cached.pad = (int32_t)c.dw | c.hc << 2 | c.dw_px << 8;
    cached.ws = c.ws;
    pr_cuda_tcache_put(s->tc, key, &cached, sizeof cached);
    *out = c;
    return PRECIS_OK;
fail:
    shape_free(&c);
    return st;
}

/* src [rows][cols] uploaded as float32 [cols][rows] (the depthwise kernel's
 * and the direct implicit GEMM's weight orders). */
static precis_status upload_transposed(const float *src, int64_t rows, int64_t cols, float **out,
                                       cudaStream_t stream, pr_err *e) {
    int64_t n = rows * cols;
    float *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    if (!t) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) t[c * rows + r] = src[r * cols + c];
    precis_status st = pr_cu_upload_as(t, n, PRECIS_FLOAT32, (void **)out, stream, e);
    free(t);
    return st;
}

static precis_status conv_prepare(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                                  void **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    conv_state *s = calloc(1, sizeof *s);
    float *wf = NULL, *bf = NULL;
    void *tx = NULL, *ty = NULL, *tz = NULL;
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    s->tc = cfg->tcache;
    cudaStream_t stream = (cudaStream_t)cfg->x->stream;
    const pr_tensor *X = &g->tensors[n->inputs[0]], *W = &g->tensors[n->inputs[1]];
    const pr_tensor *Y = &g->tensors[n->outputs[0]];
    s->dt = Y->dtype;
    s->ddt = s->dt == PRECIS_FLOAT16    ? CUDNN_DATA_HALF
             : s->dt == PRECIS_BFLOAT16 ? CUDNN_DATA_BFLOAT16
                                        : CUDNN_DATA_FLOAT;
    s->K = W->dims[0];
    s->kh = W->dims[2];
    s->kw = W->dims[3];
    s->group = (int)pr_attr_int(n, "group", 1);
    s->C = W->dims[1] * s->group;
    const int64_t *v;
    int nv = pr_attr_ints(n, "pads", &v);
    s->ph = nv == 4 ? (int)v[0] : 0;
    s->pw = nv == 4 ? (int)v[1] : 0;
    if (nv == 4 && (v[0] != v[2] || v[1] != v[3])) {
        s->asym = true;
        s->pt = (int)v[0];
        s->pl = (int)v[1];
        s->pb = (int)v[2];
        s->pr = (int)v[3];
        s->ph = s->pw = 0; /* cuDNN sees the padded input */
    }
    nv = pr_attr_ints(n, "strides", &v);
    s->sh = nv == 2 ? (int)v[0] : 1;
    s->sw = nv == 2 ? (int)v[1] : 1;
    nv = pr_attr_ints(n, "dilations", &v);
    s->dh = nv == 2 ? (int)v[0] : 1;
    s->dw = nv == 2 ? (int)v[1] : 1;
    if (n->op == PR_OP_FusedConv) {
        s->a1 = pr_cu_act_of(n, "act");
        s->a2 = pr_cu_act_of(n, "act2");
        s->has_z = pr_node_in(n, 3) >= 0;
    }
    int b = pr_node_in(n, 2);
    s->has_bias = b >= 0;
    int k1 = s->a1.kind, k2 = s->a2.kind;
    /* (ReLU6 as cuDNN's CLIPPED_RELU: cuDNN 9 refuses it in the fused call on an H100) */
    s->fusable = s->has_z ? (k1 == PR_ACT_NONE && (k2 == PR_ACT_NONE || k2 == PR_ACT_RELU))
                          : (k2 == PR_ACT_NONE && (k1 == PR_ACT_NONE || k1 == PR_ACT_RELU));
    int64_t nw;
    if (!(wf = pr_cu_init_f32(g, n->inputs[1], &nw)) || !(bf = calloc((size_t)s->K, sizeof *bf))) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    if (s->group == s->C && s->K == s->C && W->dims[1] == 1) { /* depthwise */
        const char *dv = getenv("PRECIS_CUDA_DWCONV");
        s->dw_mode = dv && !strcmp(dv, "0") ? 0 : dv && !strcmp(dv, "1") ? 2 : 1;
    }
    /* K, 1, kh, kw -> [kh * kw][C] */
    if (s->dw_mode && (st = upload_transposed(wf, s->C, s->kh * s->kw, &s->dw_w, stream, e)))
        goto fail;
    s->nhwc = X->layout == PR_LAYOUT_NHWC;
    s->fmt = s->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    if (s->nhwc) { /* K, C/g, kh, kw -> K, kh, kw, C/g */
        int64_t cg = W->dims[1], khw = s->kh * s->kw;
        float *t = malloc((size_t)(nw ? nw : 1) * sizeof *t);
        if (!t) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        for (int64_t k = 0; k < s->K; k++)
            for (int64_t c = 0; c < cg; c++)
                for (int64_t r = 0; r < khw; r++) t[(k * khw + r) * cg + c] = wf[(k * cg + c) * khw + r];
        free(wf);
        wf = t;
    }
    if ((st = pr_cu_upload_as(wf, nw, s->dt, &s->w, stream, e))) goto fail;
    if (b >= 0) {
        int64_t nb;
        float *t = pr_cu_init_f32(g, b, &nb);
        if (!t) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        for (int64_t j = 0; j < s->K && j < nb; j++) bf[j] = t[j];
        free(t);
    }
    if ((st = pr_cu_upload_as(bf, s->K, s->dt, &s->bias, stream, e))) goto fail;
    const char *b16 = getenv("PRECIS_CUDA_CONV_BIAS16");
    if (s->has_bias && s->dt != PRECIS_FLOAT32 && !(b16 && !strcmp(b16, "1")) &&
        (st = pr_cu_upload_as(bf, s->K, PRECIS_FLOAT32, (void **)&s->bias32, stream, e)))
        goto fail;
    if (s->dw_mode && s->has_bias &&
        (st = pr_cu_upload_as(bf, s->K, PRECIS_FLOAT32, (void **)&s->dw_b, stream, e)))
        goto fail;
    int64_t kc = s->kh * s->kw * s->C; /* the GEMM's k */
    if (s->nhwc && s->group == 1 && s->dt != PRECIS_FLOAT32 && s->K % 8 == 0 &&
        (s->C % 8 == 0 || kc * s->K <= HC_DIRECT_MAX) &&
        (!s->has_bias || s->bias32)) { /* our implicit GEMM takes a float32 bias */
        const char *hv = getenv("PRECIS_CUDA_HCONV");
        s->hc_mode = hv && !strcmp(hv, "0") ? 0 : hv && !strcmp(hv, "1") ? 2 : 1;
    }
    /* the direct form: [K][kh * kw * C] -> [kh * kw * C][K] */
    if (s->hc_mode && s->C % 8 && (st = upload_transposed(wf, s->K, kc, &s->hc_w32, stream, e)))
        goto fail;
    DNN_TRY(cudnnCreateFilterDescriptor(&s->wd));
    DNN_TRY(cudnnSetFilter4dDescriptor(s->wd, s->ddt, s->fmt, (int)s->K, (int)W->dims[1],
                                       (int)s->kh, (int)s->kw));
    DNN_TRY(cudnnCreateTensorDescriptor(&s->bd));
    DNN_TRY(cudnnSetTensor4dDescriptor(s->bd, s->fmt, s->ddt, 1, (int)s->K, 1, 1));
    DNN_TRY(cudnnCreateActivationDescriptor(&s->ad));
    bool relu = k1 == PR_ACT_RELU || k2 == PR_ACT_RELU;
    DNN_TRY(cudnnSetActivationDescriptor(s->ad,
                                         relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                         CUDNN_NOT_PROPAGATE_NAN, 0.0));
    /* static shapes: choose the algorithm now, on scratch buffers */
    int64_t xn = pr_numel(X->rank, X->dims), yn = pr_numel(Y->rank, Y->dims);
    if (xn > 0 && s->asym)
        xn = X->dims[0] * X->dims[1] * (X->dims[2] + s->pt + s->pb) * (X->dims[3] + s->pl + s->pr);
    if (xn > 0 && yn > 0 && Y->rank == 4) {
        size_t es = pr_dtype_size(s->dt);
        CU_TRY(cudaMalloc(&tx, (size_t)xn * es));
        CU_TRY(cudaMalloc(&ty, (size_t)yn * es));
        CU_TRY(cudaMemsetAsync(tx, 0, (size_t)xn * es, stream));
        if (s->has_z) {
            CU_TRY(cudaMalloc(&tz, (size_t)yn * es));
            CU_TRY(cudaMemsetAsync(tz, 0, (size_t)yn * es, stream));
        }
        conv_shape c;
        if ((st = plan_shape(s, cfg->x, X->dims[0], X->dims[2] + s->pt + s->pb,
                             X->dims[3] + s->pl + s->pr, Y->dims[2], Y->dims[3], tx, ty, tz, &c,
                             e)))
            goto fail;
        c.h = X->dims[2]; /* the cache is keyed by the unpadded input */
        c.w = X->dims[3];
        s->shapes[s->n_shapes++] = c;
    }
    describe_into(s, s->n_shapes ? &s->shapes[0] : NULL);
    cudaFree(tx);
    cudaFree(ty);
    cudaFree(tz);
    free(wf);
    free(bf);
    *out = s;
    return PRECIS_OK;
fail:
    cudaFree(tx);
    cudaFree(ty);
    cudaFree(tz);
    free(wf);
    free(bf);
    conv_destroy(s);
    return st;
}

static const char *conv_describe(void *p) { return ((conv_state *)p)->what; }

static precis_status conv_run(void *p, pr_kernel *k, pr_cuda_exec *x) {
    conv_state *s = p;
    pr_err *e = k->err;
    precis_status st = PRECIS_OK;
    const pr_buf *X = k->in[0];
    pr_buf *Y = k->out[0];
    const pr_buf *Z = s->has_z && k->n_in > 3 ? k->in[3] : NULL;
    if (X->dims[1] != s->C || Y->rank != 4)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input has %lld channels, the weights %lld",
                          (long long)X->dims[1], (long long)s->C);
    if (Y->numel == 0) return PRECIS_OK;
    const void *xp = X->data;
    int64_t hp = X->dims[2] + s->pt + s->pb, wp = X->dims[3] + s->pl + s->pr;
    conv_shape c = {0};
    bool found = false;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_shapes && !found; i++)
        if (s->shapes[i].n == X->dims[0] && s->shapes[i].h == X->dims[2] &&
            s->shapes[i].w == X->dims[3]) {
            c = s->shapes[i];
            found = true;
        }
    pthread_mutex_unlock(&s->mu);
    int rc = 0;
    if (found && run_ours(s, &c, x, X, Z, Y, hp, wp, &rc)) {
        KL_TRY(rc);
        return PRECIS_OK;
    }
    if (s->asym) { /* zero-padded copy of X in scratch */
        size_t es = pr_dtype_size(X->dtype), bytes = (size_t)(X->dims[0] * X->dims[1] * hp * wp) * es;
        unsigned char *pad = pr_cuda_scratch(x, bytes, e);
        if (!pad) return pr_err_prefix(e, "node '%s'", k->node->name);
        CU_TRY(cudaMemsetAsync(pad, 0, bytes, (cudaStream_t)x->stream));
        int64_t N = X->dims[0], C = X->dims[1], H = X->dims[2], W = X->dims[3];
        pr_cu_ew w;
        memset(&w, 0, sizeof w);
        w.op = PR_EW_COPY;
        w.rank = 4;
        if (s->nhwc) {
            int64_t d[4] = {N, H, W, C}, sy[4] = {hp * wp * C, wp * C, C, 1},
                    sx[4] = {H * W * C, W * C, C, 1};
            memcpy(w.dims, d, sizeof d);
            memcpy(w.st[0], sy, sizeof sy);
            memcpy(w.st[1], sx, sizeof sx);
            w.off[0] = (s->pt * wp + s->pl) * C;
        } else {
            int64_t d[4] = {N, C, H, W}, sy[4] = {C * hp * wp, hp * wp, wp, 1},
                    sx[4] = {C * H * W, H * W, W, 1};
            memcpy(w.dims, d, sizeof d);
            memcpy(w.st[0], sy, sizeof sy);
            memcpy(w.st[1], sx, sizeof sx);
            w.off[0] = s->pt * wp + s->pl;
        }
        w.p[0] = pad;
        w.dt[0] = (int)X->dtype;
        w.p[1] = X->data;
        w.dt[1] = (int)X->dtype;
        KL_TRY(pr_cu_elementwise(x->stream, &w));
        xp = pad;
    }
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_shapes && !found; i++) /* planned by another thread meanwhile? */
        if (s->shapes[i].n == X->dims[0] && s->shapes[i].h == X->dims[2] &&
            s->shapes[i].w == X->dims[3]) {
            c = s->shapes[i];
            found = true;
        }
    if (!found) {
        if (x->capturing) {
            st = pr_errf(e, PRECIS_ERR_INTERNAL, "cuDNN: new shape during a graph capture");
        } else if (s->n_shapes == MAX_SHAPES) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "more than %d input shapes", MAX_SHAPES);
        } else {
            st = plan_shape(s, x, X->dims[0], hp, wp, Y->dims[2], Y->dims[3], xp, Y->data,
                            Z ? Z->data : NULL, &c, e);
            c.h = X->dims[2];
            c.w = X->dims[3];
            if (!st) s->shapes[s->n_shapes++] = c;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (st) return pr_err_prefix(e, "node '%s'", k->node->name);
    if (run_ours(s, &c, x, X, Z, Y, hp, wp, &rc)) {
        KL_TRY(rc);
        return PRECIS_OK;
    }
    if (c.ws > x->ws_bytes && (st = pr_cuda_workspace(x, c.ws, e))) goto fail;
    cudnnHandle_t dnn = (cudnnHandle_t)x->dnn;
    float one = 1.0f, zero = 0.0f;
    if (c.fused) {
        float a2 = Z ? 1.0f : 0.0f;
        DNN_TRY(cudnnConvolutionBiasActivationForward(
            dnn, &one, c.xd, xp, s->wd, s->w, c.cd, c.algo, x->ws, x->ws_bytes, &a2, c.yd,
            Z ? Z->data : Y->data, s->bd, s->bias, s->ad, c.yd, Y->data));
        return PRECIS_OK;
    }
    DNN_TRY(cudnnConvolutionForward(dnn, &one, c.xd, xp, s->wd, s->w, c.cd, c.algo, x->ws,
                                    x->ws_bytes, &zero, c.yd, Y->data));
    if (s->has_bias || Z || s->a1.kind || s->a2.kind)
        KL_TRY(pr_cu_epilogue(x->stream, Y->data, (int)s->dt, Y->numel,
                              !s->has_bias ? NULL : s->bias32 ? (void *)s->bias32 : s->bias,
                              s->bias32 ? (int)PRECIS_FLOAT32 : (int)s->dt,
                              bias_div(s, Y->dims[2] * Y->dims[3]), s->K, s->a1,
                              Z ? Z->data : NULL, (int)s->dt, s->a2));
    return PRECIS_OK;
fail:
    pr_err_prefix(e, "node '%s'", k->node->name);
    return st;
}

const pr_cuda_impl pr_cuda_impl_conv = {
    .name = "cudnn.conv",
    .supports = conv_supports,
    .nhwc_ok = conv_nhwc_ok,
    .packs = conv_packs,
    .prepare = conv_prepare,
    .run = conv_run,
    .describe = conv_describe,
    .destroy = conv_destroy,
};
