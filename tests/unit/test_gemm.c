/* The ref backend's GEMM (src/backends/ref/ref_gemm.h) against a plain loop
 * over random shapes, strides and tails, for every instantiation. Within a
 * depth block of PR_REF_GEMM_KB the GEMM sums in depth order, so the float
 * results must match the loop exactly, not just closely. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref_gemm.h"

#include "check.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;
static int64_t rnd(int64_t n) { /* [0, n) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

typedef struct shape {
    int64_t M, N, K, sam, sak, ldb, ldc;
    bool acc;
} shape;

/* A random problem; A transposed half the time, B and C with padded rows. */
static shape rnd_shape(void) {
    static const int64_t sizes[] = {0, 1, 3, 4, 7, 8, 9, 17, 64, 130, 300, 530};
    shape s;
    s.M = sizes[rnd(10)];
    s.N = sizes[rnd(12)];
    s.K = sizes[rnd(12)];
    if (s.M * s.N * s.K > 4000000) s.N = 9;
    bool ta = rnd(2);
    s.sam = ta ? 1 : s.K + rnd(3);
    s.sak = ta ? s.M + rnd(3) : 1;
    s.ldb = s.N + rnd(3);
    s.ldc = s.N + rnd(3);
    s.acc = rnd(2);
    return s;
}

static int64_t a_len(const shape *s) {
    return s->M && s->K ? (s->M - 1) * s->sam + (s->K - 1) * s->sak + 1 : 0;
}

/* Defines check_<sfx>(s): runs the GEMM and the plain loop on the same random
 * operands (values in [-v, v]) and compares all of C, padding included. */
#define GEMM_CHECK(sfx, T, TC, v)                                                                  \
    static bool check_##sfx(const shape *s) {                                                      \
        int64_t na = a_len(s), nb = s->K * s->ldb, nc = s->M * s->ldc;                             \
        T *A = malloc((size_t)(na + 1) * sizeof(T)), *B = malloc((size_t)(nb + 1) * sizeof(T));    \
        TC *C = malloc((size_t)(nc + 1) * sizeof(TC)), *R = malloc((size_t)(nc + 1) * sizeof(TC)); \
        if (!A || !B || !C || !R) abort();                                                         \
        for (int64_t i = 0; i < na; i++) A[i] = (T)(rnd(2 * v + 1) - v);                           \
        for (int64_t i = 0; i < nb; i++) B[i] = (T)(rnd(2 * v + 1) - v);                           \
        for (int64_t i = 0; i < nc; i++) C[i] = R[i] = (TC)(rnd(2 * v + 1) - v);                   \
        pr_ref_gemm_##sfx(s->M, s->N, s->K, A, s->sam, s->sak, B, s->ldb, C, s->ldc, s->acc);      \
        for (int64_t i = 0; i < s->M; i++)                                                         \
            for (int64_t j = 0; j < s->N; j++) {                                                   \
                TC *r = &R[i * s->ldc + j];                                                        \
                if (!s->acc) *r = 0;                                                               \
                for (int64_t k0 = 0; k0 < s->K; k0 += PR_REF_GEMM_KB) {                            \
                    TC sum = 0;                                                                    \
                    for (int64_t k = k0; k < s->K && k < k0 + PR_REF_GEMM_KB; k++)                 \
                        sum = sum + (TC)A[i * s->sam + k * s->sak] * (TC)B[k * s->ldb + j];        \
                    *r += sum;                                                                     \
                }                                                                                  \
            }                                                                                      \
        bool ok = nc == 0 || memcmp(C, R, (size_t)nc * sizeof(TC)) == 0;                           \
        free(A);                                                                                   \
        free(B);                                                                                   \
        free(C);                                                                                   \
        free(R);                                                                                   \
        return ok;                                                                                 \
    }
GEMM_CHECK(f32, float, float, 100)
GEMM_CHECK(f64, double, double, 1000)
GEMM_CHECK(u32, uint32_t, uint32_t, 1000000)
GEMM_CHECK(u64, uint64_t, uint64_t, 1000000)
GEMM_CHECK(s16s64, int16_t, int64_t, 255)
#undef GEMM_CHECK

static void test_random(void) {
    for (int t = 0; t < 60; t++) {
        shape s = rnd_shape();
        CHECK(check_f32(&s));
        CHECK(check_f64(&s));
        CHECK(check_u32(&s));
        CHECK(check_u64(&s));
        CHECK(check_s16s64(&s));
    }
}

/* Tails of every size around the strip width and the blocks. */
static void test_edges(void) {
    static const int64_t n[] = {1, 7, 8, 9, 15, 16, 511, 512, 513};
    static const int64_t k[] = {1, 3, 4, 5, 255, 256, 257};
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 7; j++) {
            shape s = {5, n[i], k[j], k[j], 1, n[i], n[i], j % 2 == 0};
            CHECK(check_f32(&s));
            CHECK(check_s16s64(&s));
        }
}

static void test_erased(void) {
    size_t es = 0;
    CHECK(pr_ref_gemm_for(PRECIS_FLOAT32, &es) && es == 4);
    CHECK(pr_ref_gemm_for(PRECIS_INT64, &es) && es == 8);
    CHECK(pr_ref_gemm_for(PRECIS_FLOAT16, &es) == NULL);
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, C[4];
    pr_ref_gemm_for(PRECIS_FLOAT32, &es)(2, 2, 3, A, 3, 1, B, 2, C, 2);
    CHECK(C[0] == 4 && C[1] == 5 && C[2] == 10 && C[3] == 11);
}

int main(void) {
    test_random();
    test_edges();
    test_erased();
    return check_report("test_gemm");
}
