/* `bench_imma attn [iterations]`: the fused fp16 attention kernel
 * (cu_flash.cu) on BERT-base / MiniLM shapes (batch 64 and 1, 12 heads,
 * sequence 128), heads folded ([B, S, H, D] operands) or not ([B, H, S, D]),
 * without a mask, with a key mask [B, 1, 1, S] and with a full mask
 * [B, 1, S, S] in float32 and fp16 (the fp16 one staged through shared
 * memory in tiles as the plans do, and loaded a thread for comparison). One
 * JSON object a line: median ms. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_util.h"

int bench_attn(int argc, char **argv, pr_cuda_exec *x, pr_err *e);

static int cmp_f(const void *a, const void *b) {
    float u = *(const float *)a, v = *(const float *)b;
    return u < v ? -1 : u > v;
}

static void fill(void *p, size_t n_half) {
    unsigned short *h = malloc(n_half * 2);
    uint32_t s = 12345;
    for (size_t i = 0; i < n_half; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (unsigned short)(0x3000 + (s >> 22)); /* small positive fp16 values */
    }
    cudaMemcpy(p, h, n_half * 2, cudaMemcpyHostToDevice);
    free(h);
}

int bench_attn(int argc, char **argv, pr_cuda_exec *x, pr_err *e) {
    int it = argc >= 3 ? atoi(argv[2]) : 50;
    if (it < 1) it = 1;
    const int64_t H = 12, S = 128;
    cudaStream_t st = (cudaStream_t)x->stream;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int bi = 0; bi < 2; bi++)
        for (int di = 0; di < 2; di++)
            for (int folded = 0; folded < 2; folded++)
                for (int mk = 0; mk < 5; mk++) {
                    const int64_t B = bi ? 1 : 64, D = di ? 32 : 64;
                    size_t n = (size_t)(B * H * S * D);
                    void *q, *k, *v, *y, *m;
                    size_t mb = (size_t)(B * S * S) * 4;
                    if (cudaMalloc(&q, n * 2) || cudaMalloc(&k, n * 2) || cudaMalloc(&v, n * 2) ||
                        cudaMalloc(&y, n * 2) || cudaMalloc(&m, mb)) {
                        fprintf(stderr, "cudaMalloc failed\n");
                        return 1;
                    }
                    fill(q, n), fill(k, n), fill(v, n);
                    cudaMemset(m, 0, mb);
                    pr_cu_flash f;
                    memset(&f, 0, sizeof f);
                    f.dt = 10; /* PRECIS_FLOAT16 */
                    f.d = (int)D;
                    f.nb = B * H;
                    f.sq = f.sk = S;
                    f.scale = 0.125f;
                    f.q = q, f.k = k, f.v = v, f.y = y;
                    f.bdims[2] = B, f.bdims[3] = H;
                    f.bdims[0] = f.bdims[1] = 1;
                    for (int o = 0; o < 5; o++) {
                        if (o == 3) continue;
                        f.bst[o][2] = S * H * D;
                        f.bst[o][3] = folded ? D : S * D;
                        f.rs[o] = folded ? H * D : D;
                    }
                    const char *mn = "none";
                    if (mk) {
                        f.m = m;
                        f.mdt = mk >= 3 ? 10 : 1;
                        f.mcs = 1;
                        f.mvec = mk == 3; /* as cuda_attention.c: 16-bit masks of distinct rows */
                        f.bst[3][2] = mk == 1 ? S : S * S;
                        f.rs[3] = mk == 1 ? 0 : S;
                        mn = mk == 1   ? "f32 [B,1,1,S]"
                             : mk == 2 ? "f32 [B,1,S,S]"
                             : mk == 3 ? "f16 [B,1,S,S]"
                                       : "f16 [B,1,S,S] per thread";
                    }
                    float *ms = malloc((size_t)it * sizeof *ms);
                    int rc = pr_cu_flash_attention(x->stream, &f);
                    for (int i = 0; i < it && !rc; i++) {
                        cudaEventRecord(a, st);
                        rc = pr_cu_flash_attention(x->stream, &f);
                        cudaEventRecord(b, st);
                        cudaEventSynchronize(b);
                        cudaEventElapsedTime(&ms[i], a, b);
                    }
                    if (rc) {
                        fprintf(stderr, "flash attention: %s\n", cudaGetErrorString((cudaError_t)rc));
                        return 1;
                    }
                    qsort(ms, (size_t)it, sizeof *ms, cmp_f);
                    double fl = 4.0 * (double)(B * H) * S * S * D;
                    printf("{\"bench\": \"attn\", \"batch\": %lld, \"heads\": %lld, \"seq\": %lld, "
                           "\"d\": %lld, \"folded\": %d, \"mask\": \"%s\", \"ms\": %.4f, "
                           "\"tflops\": %.1f}\n",
                           (long long)B, (long long)H, (long long)S, (long long)D, folded, mn,
                           ms[it / 2], fl / (ms[it / 2] * 1e9));
                    free(ms);
                    cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(y), cudaFree(m);
                }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    (void)e;
    return 0;
}
