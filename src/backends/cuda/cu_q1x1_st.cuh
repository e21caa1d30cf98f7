// Tensor-map encoding (host) and TMA bulk-store wrappers (device) for the
// 1x1 tiles that stream through the copy engine (cu_q1x1_ws.cu, cu_q1x1_st.cu).
// The store wrappers exist only in an sm_90 device pass; everything lives in
// the including file's anonymous namespace. (For the lead: the device half
// belongs with cu_tma.cuh's loads.)
#ifndef PRECIS_CU_Q1X1_ST_CUH
#define PRECIS_CU_Q1X1_ST_CUH

#include <cuda.h>
#include <stdint.h>

namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// box of map at (c0, c1) from shared address src (the box's layout, swizzle
// included, as the map's loads write it), in this thread's bulk group
__device__ __forceinline__ void tma_store_2d(const void *map, uint32_t src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::
                     "l"((uint64_t)(uintptr_t)map),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// at most N of this thread's bulk groups still reading shared memory
template <int N> __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// at most N of this thread's bulk groups not complete (writes done)
template <int N> __device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

typedef CUresult (*tmap_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                   const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                   const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's driver entry point (no libcuda link)
inline tmap_encode_fn tmap_encoder() {
    static tmap_encode_fn fn; // the same value from any thread
    if (!fn) {
        void *f = NULL;
        cudaDriverEntryPointQueryResult qr;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                             cudaEnableDefault, &qr) ||
            qr != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return NULL;
        }
        fn = (tmap_encode_fn)f;
    }
    return fn;
}

// a byte-element tiled map of rank r over base (dims d, byte strides st of
// dims 1..), box b, swizzle sw, zero fill out of bounds (stores clip there)
inline bool tmap_encode(CUtensorMap *m, const void *base, int r, const cuuint64_t *d,
                        const cuuint64_t *st, const cuuint32_t *b, CUtensorMapSwizzle sw) {
    tmap_encode_fn fn = tmap_encoder();
    const cuuint32_t es[3] = {1, 1, 1};
    return fn && fn(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, (cuuint32_t)r, (void *)base, d, st, b, es,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

} // namespace

#endif
