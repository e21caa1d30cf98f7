/* precis's INT8 GEMM path on the GPU at one size (default 8192^3): the
 * cuBLASLt IMMA call QMatMul / QConv make (pr_lt_i8: int8 x int8 -> int32,
 * algorithm timed among the heuristic's candidates), then with the
 * requantizing epilogue kernel (per-column scales + bias + ReLU -> int8).
 * Prints one JSON object: TOPS = 2 M N K / time. Exit 77 without a GPU.
 *
 *   bench_imma [M N K] [iterations]
 *   bench_imma conv [BATCH] [iterations]   (bench_iconv.c: ResNet-50's int8 convs)
 *   bench_imma attn [iterations]           (bench_attn.c: the fused fp16 attention) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_lt_int8.h"

int bench_iconv(int argc, char **argv, pr_cuda_exec *x, pr_err *e);
int bench_attn(int argc, char **argv, pr_cuda_exec *x, pr_err *e);

static int fail(const char *what, const char *msg) {
    fprintf(stderr, "bench_imma: %s: %s\n", what, msg);
    return 1;
}

/* Median of `it` timed repetitions (ms); phase 1 adds the epilogue. */
static float timed(pr_lt_i8 *l, pr_cuda_exec *x, int64_t M, void *w, void *a, int32_t *d,
                   const pr_cu_qepi *q, int it, pr_err *e) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float *t = calloc((size_t)it, sizeof *t), med = -1;
    for (int i = -3; i < it; i++) {
        cudaEventRecord(e0, (cudaStream_t)x->stream);
        if (pr_lt_i8_run(l, x, M, w, a, NULL, d, e)) goto done;
        if (q && pr_cu_qepilogue(x->stream, d, M, q)) goto done;
        cudaEventRecord(e1, (cudaStream_t)x->stream);
        cudaEventSynchronize(e1);
        if (i >= 0) cudaEventElapsedTime(&t[i], e0, e1);
    }
    for (int i = 1; i < it; i++) /* insertion sort */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            float v = t[j];
            t[j] = t[j - 1];
            t[j - 1] = v;
        }
    med = t[it / 2];
done:
    free(t);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return med;
}

int main(int argc, char **argv) {
    int64_t M = 8192, N = 8192, K = 8192;
    int it = 20;
    if (argc >= 4 && strcmp(argv[1], "conv") != 0) {
        M = atoll(argv[1]);
        N = atoll(argv[2]);
        K = atoll(argv[3]);
    }
    if (argc >= 5 && strcmp(argv[1], "conv") != 0) it = atoi(argv[4]);
    if (it < 1) it = 1;
    pr_err e = {0};
    pr_cuda_dev *dev = NULL;
    if (pr_cuda_dev_open(&dev, &e)) {
        printf("SKIP: %s\n", e.msg);
        return 77;
    }
    pr_cuda_exec x;
    if (pr_cuda_exec_init(&x, &e)) return fail("exec", e.msg);
    if (argc >= 2 && (strcmp(argv[1], "conv") == 0 || strcmp(argv[1], "attn") == 0)) {
        int rc = strcmp(argv[1], "conv") == 0 ? bench_iconv(argc, argv, &x, &e)
                                              : bench_attn(argc, argv, &x, &e);
        pr_cuda_exec_fini(&x);
        pr_cuda_dev_close(dev);
        return rc;
    }
    void *w = NULL, *a = NULL, *y = NULL;
    int32_t *d = NULL;
    float *sc = NULL, *bias = NULL;
    if (cudaMalloc(&w, (size_t)(N * K)) || cudaMalloc(&a, (size_t)(M * K)) ||
        cudaMalloc((void **)&d, (size_t)(M * N) * 4) || cudaMalloc(&y, (size_t)(M * N)) ||
        cudaMalloc((void **)&sc, (size_t)N * 4) || cudaMalloc((void **)&bias, (size_t)N * 4))
        return fail("cudaMalloc", "out of memory");
    { /* random operands (constant ones draw less power: faster clocks than real data) */
        size_t big = (size_t)(M > N ? M : N) * (size_t)K;
        signed char *h = malloc(big);
        if (!h) return fail("malloc", "out of memory");
        uint64_t r = 88172645463325252ull;
        for (size_t i = 0; i < big; i++) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            h[i] = (signed char)(r >> 56);
        }
        cudaMemcpy(w, h, (size_t)(N * K), cudaMemcpyHostToDevice);
        cudaMemcpy(a, h + 7, (size_t)(M * K) - 7, cudaMemcpyHostToDevice);
        free(h);
    }
    cudaMemset(sc, 0, (size_t)N * 4);
    cudaMemset(bias, 0, (size_t)N * 4);
    pr_lt_i8 l;
    if (pr_lt_i8_init(&l, N, K, NULL, &e)) return fail("init", e.msg);
    pr_cu_qepi q = {N, 0, 0.01f, sc, N, bias, {1, 0, 0}, {0, 0, 0}, NULL, 0, 0, 1.0f, y, 3, 10.0f,
                    NULL, 0, 0};
    float g = timed(&l, &x, M, w, a, d, NULL, it, &e);
    float ge = g < 0 ? -1 : timed(&l, &x, M, w, a, d, &q, it, &e);
    if (g < 0 || ge < 0) return fail("run", e.msg);
    double ops = 2.0 * (double)M * (double)N * (double)K;
    printf("{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"iterations\": %d, \"gemm_ms\": %.4f, "
           "\"gemm_tops\": %.1f, \"gemm_requant_ms\": %.4f, \"gemm_requant_tops\": %.1f, "
           "\"device\": \"%s\"}\n",
           (long long)M, (long long)N, (long long)K, it, g, ops / (g * 1e9), ge,
           ops / (ge * 1e9), pr_cuda_dev_name(dev));
    pr_lt_i8_fini(&l);
    cudaFree(w);
    cudaFree(a);
    cudaFree(d);
    cudaFree(y);
    cudaFree(sc);
    cudaFree(bias);
    pr_cuda_exec_fini(&x);
    pr_cuda_dev_close(dev);
    return 0;
}
