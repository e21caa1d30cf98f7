/* Single-threaded GFLOP/s of the ref backend's GEMM (src/backends/ref/ref_gemm.h)
 * on shapes taken from the models precis runs. Built with the project, not run
 * by ctest:
 *   build/bench/kernels/bench_gemm [--seconds S]
 * Each number is the best of samples of about 5 ms taken for S seconds
 * (default 1), which keeps the numbers stable on a noisy machine. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/ref/ref_gemm.h"

typedef struct shape {
    const char *what;
    int64_t M, N, K;
} shape;

static const shape shapes[] = {
    {"conv 3x3 64ch 56x56 (im2col)", 64, 56 * 56, 576},
    {"conv 256ch 20x20", 256, 400, 256},
    {"conv 1x1 64->128 56x56", 128, 3136, 64},
    {"matmul 512^3", 512, 512, 512},
    {"matmul skinny 1x1024x1024", 1, 1024, 1024},
    {"PP-OCR rec attention-like", 40, 120, 120},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef enum { T_F32, T_F64, T_U32, T_S16 } kind;
static const char *const kind_name[] = {"f32", "f64", "u32", "s16s64"};
static const size_t kind_in_size[] = {4, 8, 4, 2}, kind_out_size[] = {4, 8, 4, 8};

static void run(kind t, const shape *s, const void *a, const void *b, void *c) {
    switch (t) {
    case T_F32: pr_ref_gemm_f32(s->M, s->N, s->K, a, s->K, 1, b, s->N, c, s->N, false); break;
    case T_F64: pr_ref_gemm_f64(s->M, s->N, s->K, a, s->K, 1, b, s->N, c, s->N, false); break;
    case T_U32: pr_ref_gemm_u32(s->M, s->N, s->K, a, s->K, 1, b, s->N, c, s->N, false); break;
    case T_S16: pr_ref_gemm_s16s64(s->M, s->N, s->K, a, s->K, 1, b, s->N, c, s->N, false); break;
    }
}

/* Best GFLOP/s (2*M*N*K per call) over samples of about 5 ms taken for
 * `secs` seconds: the best short sample is the one least disturbed by other
 * work on the machine. */
static double measure(kind t, const shape *s, double secs) {
    const size_t ni = kind_in_size[t], no = kind_out_size[t];
    unsigned char *a = malloc((size_t)(s->M * s->K) * ni), *b = malloc((size_t)(s->K * s->N) * ni);
    unsigned char *c = malloc((size_t)(s->M * s->N) * no);
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    /* small values so that every type computes something meaningful */
    for (size_t i = 0; i < (size_t)(s->M * s->K) * ni; i++) a[i] = (unsigned char)(i * 7 % 5);
    for (size_t i = 0; i < (size_t)(s->K * s->N) * ni; i++) b[i] = (unsigned char)(i * 3 % 7);
    if (t == T_F32) {
        float *fa = (float *)a, *fb = (float *)b;
        for (int64_t i = 0; i < s->M * s->K; i++) fa[i] = (float)(i % 17) * 0.125f - 1.0f;
        for (int64_t i = 0; i < s->K * s->N; i++) fb[i] = (float)(i % 13) * 0.25f - 1.5f;
    } else if (t == T_F64) {
        double *da = (double *)a, *db = (double *)b;
        for (int64_t i = 0; i < s->M * s->K; i++) da[i] = (double)(i % 17) * 0.125 - 1.0;
        for (int64_t i = 0; i < s->K * s->N; i++) db[i] = (double)(i % 13) * 0.25 - 1.5;
    }
    const double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    double t0 = now();
    run(t, s, a, b, c); /* warm up; estimates the calls per sample */
    const double once = now() - t0;
    const long per = once > 0.005 ? 1 : (long)(0.005 / (once > 1e-7 ? once : 1e-7)) + 1;
    double best = 0;
    const double end = now() + secs;
    do {
        t0 = now();
        for (long r = 0; r < per; r++) run(t, s, a, b, c);
        const double g = flops * (double)per / (now() - t0) * 1e-9;
        if (g > best) best = g;
    } while (now() < end);
    free(a);
    free(b);
    free(c);
    return best;
}

int main(int argc, char **argv) {
    double secs = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            secs = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
            return 1;
        }
    }
    printf("%-32s %5s %5s %5s  GFLOP/s:", "shape", "M", "N", "K");
    for (int t = 0; t < 4; t++) printf(" %7s", kind_name[t]);
    printf("\n");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        printf("%-32s %5lld %5lld %5lld          ", s->what, (long long)s->M, (long long)s->N,
               (long long)s->K);
        for (int t = 0; t < 4; t++) {
            printf(" %7.2f", measure((kind)t, s, secs));
            fflush(stdout);
        }
        printf("\n");
    }
    return 0;
}
