/* The ref backend's GEMM: one cache-blocked kernel (ref_gemm_tmpl.inc)
 * instantiated for every element type the conv and linalg families need.
 * See ref_gemm.h. */
#include "backends/ref/ref_gemm.h"

#define GT float
#define GA float
#define GC float
#define GS f32
#include "backends/ref/ref_gemm_tmpl.inc"

#define GT double
#define GA double
#define GC double
#define GS f64
#include "backends/ref/ref_gemm_tmpl.inc"

#define GT uint32_t
#define GA uint32_t
#define GC uint32_t
#define GS u32
#include "backends/ref/ref_gemm_tmpl.inc"

#define GT uint64_t
#define GA uint64_t
#define GC uint64_t
#define GS u64
#include "backends/ref/ref_gemm_tmpl.inc"

#define GT int16_t
#define GA int32_t
#define GC int64_t
#define GS s16s64
#include "backends/ref/ref_gemm_tmpl.inc"

#define PR_GEMM_ERASED(sfx, T)                                                                  \
    static void gemm_erased_##sfx(int64_t M, int64_t N, int64_t K, const void *A, int64_t sam, \
                                  int64_t sak, const void *B, int64_t ldb, void *C,             \
                                  int64_t ldc) {                                                \
        pr_ref_gemm_##sfx(M, N, K, (const T *)A, sam, sak, (const T *)B, ldb, (T *)C, ldc,     \
                          false);                                                               \
    }
PR_GEMM_ERASED(f32, float)
PR_GEMM_ERASED(f64, double)
PR_GEMM_ERASED(u32, uint32_t)
PR_GEMM_ERASED(u64, uint64_t)
#undef PR_GEMM_ERASED

pr_ref_gemm_fn pr_ref_gemm_for(pr_dtype dt, size_t *es) {
    switch (dt) {
    case PRECIS_FLOAT32: *es = 4; return gemm_erased_f32;
    case PRECIS_FLOAT64: *es = 8; return gemm_erased_f64;
    case PRECIS_INT32:
    case PRECIS_UINT32: *es = 4; return gemm_erased_u32;
    case PRECIS_INT64:
    case PRECIS_UINT64: *es = 8; return gemm_erased_u64;
    default: return NULL;
    }
}
