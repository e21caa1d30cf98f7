/* `bench_imma conv [BATCH] [iterations]`: the int8 3x3 / 1x1-stride-2
 * convolutions of ResNet-50 (NHWC int8 in, int8 out with per-channel
 * requantization) three ways, per shape:
 *   im2col + cuBLASLt IMMA (int32 out) + our epilogue kernel (the phase-2 route),
 *   our implicit-GEMM kernel (cu_igemm.cu), each tile,
 *   cuDNN's legacy int8 convolution (x/w int8 NHWC, int32 compute, float y:
 *   INT8_EXT; per-channel scales would need one more pass, not counted).
 * One JSON object a line: milliseconds (median) and TOPS = 2 M N K / time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_lt_int8.h"

typedef struct shape {
    int c, h, k, r, s; /* in channels, in size (square), out channels, kernel, stride */
} shape;

static const shape SHAPES[] = {{64, 56, 64, 3, 1},    {128, 56, 128, 3, 2}, {128, 28, 128, 3, 1},
                               {256, 28, 256, 3, 2},  {256, 14, 256, 3, 1}, {512, 14, 512, 3, 2},
                               {512, 7, 512, 3, 1},   {256, 56, 512, 1, 2}, {512, 28, 1024, 1, 2},
                               {64, 56, 256, 1, 1},   {256, 56, 64, 1, 1}};

typedef struct ctx {
    pr_cuda_exec *x;
    void *xin, *w, *col, *y;
    int32_t *acc;
    pr_lt_i8 *lt;
    pr_cu_im2col ic;
    pr_cu_igemm ig;
    pr_cu_qepi q;
    int64_t M;
    cudnnConvolutionFwdAlgo_t algo;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    float *yf;
} ctx;

/* route: -2 im2col + cuBLASLt, -1 cuDNN, else an igemm tile. */
static int run_once(ctx *c, int route, pr_err *e) {
    cudaStream_t s = (cudaStream_t)c->x->stream;
    if (route == -2) {
        if (pr_cu_im2col_s8(s, c->xin, c->col, &c->ic)) return 1;
        if (pr_lt_i8_run(c->lt, c->x, c->M, c->w, c->col, NULL, c->acc, e)) return 1;
        return pr_cu_qepilogue(s, c->acc, c->M, &c->q) != 0;
    }
    if (route == -1) {
        float one = 1.0f, zero = 0.0f;
        return cudnnConvolutionForward((cudnnHandle_t)c->x->dnn, &one, c->xd, c->xin, c->wd, c->w,
                                       c->cd, c->algo, c->x->ws, c->x->ws_bytes, &zero, c->yd,
                                       c->yf) != CUDNN_STATUS_SUCCESS;
    }
    c->ig.tile = route;
    return pr_cu_igemm_s8(s, c->xin, c->w, &c->ig, &c->q) != 0;
}

static float timed(ctx *c, int route, int it, pr_err *e) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float best = -1, *t = calloc((size_t)it, sizeof *t);
    for (int i = -2; i < it && t; i++) {
        cudaEventRecord(e0, (cudaStream_t)c->x->stream);
        if (run_once(c, route, e)) goto done;
        cudaEventRecord(e1, (cudaStream_t)c->x->stream);
        if (cudaEventSynchronize(e1)) goto done;
        if (i >= 0) cudaEventElapsedTime(&t[i], e0, e1);
    }
    for (int i = 1; i < it; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            float v = t[j];
            t[j] = t[j - 1];
            t[j - 1] = v;
        }
    best = t ? t[it / 2] : -1;
done:
    cudaGetLastError();
    free(t);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return best;
}

/* Random bytes (a 1 MiB pattern repeated): constant operands draw less power. */
static void fill(void *d, size_t n) {
    static signed char h[1 << 20];
    uint64_t r = 88172645463325252ull;
    for (size_t i = 0; i < sizeof h; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        h[i] = (signed char)(r >> 56);
    }
    for (size_t o = 0; o < n; o += sizeof h)
        cudaMemcpy((char *)d + o, h, n - o < sizeof h ? n - o : sizeof h, cudaMemcpyHostToDevice);
}

static bool dnn_setup(ctx *c, const shape *sh, int64_t B, int pad) {
    int oh = (int)c->ic.OH;
    return cudnnCreateTensorDescriptor(&c->xd) == 0 && cudnnCreateTensorDescriptor(&c->yd) == 0 &&
           cudnnCreateFilterDescriptor(&c->wd) == 0 &&
           cudnnCreateConvolutionDescriptor(&c->cd) == 0 &&
           cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_INT8, (int)B, sh->c,
                                      sh->h, sh->h) == 0 &&
           cudnnSetFilter4dDescriptor(c->wd, CUDNN_DATA_INT8, CUDNN_TENSOR_NHWC, sh->k, sh->c,
                                      sh->r, sh->r) == 0 &&
           cudnnSetConvolution2dDescriptor(c->cd, pad, pad, sh->s, sh->s, 1, 1,
                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_INT32) == 0 &&
           cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, (int)B, sh->k,
                                      oh, oh) == 0;
}

int bench_iconv(int argc, char **argv, pr_cuda_exec *x, pr_err *e) {
    int64_t B = argc >= 3 ? atoll(argv[2]) : 256;
    int it = argc >= 4 ? atoi(argv[3]) : 20;
    if (B < 1 || it < 1) return 2;
    for (size_t si = 0; si < sizeof SHAPES / sizeof SHAPES[0]; si++) {
        const shape *sh = &SHAPES[si];
        int pad = sh->r / 2, oh = (sh->h + 2 * pad - sh->r) / sh->s + 1;
        int64_t K = (int64_t)sh->r * sh->r * sh->c, M = B * oh * oh;
        ctx c = {.x = x, .M = M};
        pr_lt_i8 lt;
        c.lt = &lt;
        float *sc = NULL;
        size_t xb = (size_t)(B * sh->h * sh->h * sh->c);
        if (cudaMalloc(&c.xin, xb) || cudaMalloc(&c.w, (size_t)(sh->k * K)) ||
            cudaMalloc(&c.col, (size_t)(M * K)) || cudaMalloc(&c.y, (size_t)(M * sh->k)) ||
            cudaMalloc((void **)&c.acc, (size_t)(M * sh->k) * 4) ||
            cudaMalloc((void **)&c.yf, (size_t)(M * sh->k) * 4) ||
            cudaMalloc((void **)&sc, (size_t)sh->k * 4)) {
            fprintf(stderr, "bench_imma conv: cudaMalloc failed\n");
            return 1;
        }
        fill(c.xin, xb);
        fill(c.w, (size_t)(sh->k * K));
        cudaMemset(sc, 0, (size_t)sh->k * 4);
        c.ic = (pr_cu_im2col){B, sh->c, sh->h, sh->h, oh, oh, (int64_t)sh->h * sh->h * sh->c, 1,
                              (int64_t)sh->h * sh->c, sh->c, K, sh->r, sh->r, sh->s, sh->s, pad, pad,
                              1, 1, 0};
        c.ig = (pr_cu_igemm){B, sh->h, sh->h, sh->c, oh, oh, sh->k, K, sh->r, sh->r,
                             sh->s, sh->s, pad, pad, 1, 1, 0, 0};
        c.q = (pr_cu_qepi){sh->k, 0, 0.01f, sc, sh->k, NULL, {1, 0, 0}, {0, 0, 0}, NULL, 0, 0,
                           1.0f, c.y, 3, 10.0f, NULL, 0, 0};
        double ops = 2.0 * (double)M * sh->k * (double)K;
        printf("{\"c\": %d, \"hw\": %d, \"k\": %d, \"kernel\": %d, \"stride\": %d, \"batch\": %lld",
               sh->c, sh->h, sh->k, sh->r, sh->s, (long long)B);
        if (!pr_lt_i8_init(&lt, sh->k, K, NULL, e)) {
            float t = timed(&c, -2, it, e);
            printf(", \"im2col_cublaslt_ms\": %.4f, \"im2col_cublaslt_tops\": %.0f", t,
                   ops / (t * 1e9));
            pr_lt_i8_fini(&lt);
        }
        static const char *tn[PR_CU_IGEMM_TILES] = {"128x128", "128x64", "64x64", "64x128"};
        for (int r = 0; r < PR_CU_IGEMM_TILES; r++) {
            float t = timed(&c, r, it, e);
            printf(", \"igemm_%s_ms\": %.4f, \"igemm_%s_tops\": %.0f", tn[r], t, tn[r],
                   ops / (t * 1e9));
        }
        if (dnn_setup(&c, sh, B, pad)) {
            cudnnConvolutionFwdAlgoPerf_t perf[8];
            int n = 0;
            size_t need = 0;
            c.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
            if (cudnnGetConvolutionForwardAlgorithm_v7((cudnnHandle_t)x->dnn, c.xd, c.wd, c.cd,
                                                       c.yd, 8, &n, perf) == 0)
                for (int i = 0; i < n; i++)
                    if (perf[i].status == CUDNN_STATUS_SUCCESS) {
                        c.algo = perf[i].algo;
                        break;
                    }
            cudnnGetConvolutionForwardWorkspaceSize((cudnnHandle_t)x->dnn, c.xd, c.wd, c.cd, c.yd,
                                                    c.algo, &need);
            if (need <= x->ws_bytes || !pr_cuda_workspace(x, need, e)) {
                float t = timed(&c, -1, it, e);
                printf(", \"cudnn_int8_float_out_ms\": %.4f, \"cudnn_int8_float_out_tops\": %.0f, "
                       "\"cudnn_algo\": %d", t, ops / (t * 1e9), (int)c.algo);
            }
        }
        printf("}\n");
        fflush(stdout);
        if (c.xd) cudnnDestroyTensorDescriptor(c.xd);
        if (c.yd) cudnnDestroyTensorDescriptor(c.yd);
        if (c.wd) cudnnDestroyFilterDescriptor(c.wd);
        if (c.cd) cudnnDestroyConvolutionDescriptor(c.cd);
        cudaFree(c.xin);
        cudaFree(c.w);
        cudaFree(c.col);
        cudaFree(c.y);
        cudaFree(c.acc);
        cudaFree(c.yf);
        cudaFree(sc);
    }
    return 0;
}
