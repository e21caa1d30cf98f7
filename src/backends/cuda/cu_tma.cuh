// Hopper shared-memory barrier (mbarrier), TMA (cp.async.bulk.tensor: tiled and
// im2col loads, bulk stores) and register-reallocation wrappers for the
// warp-specialized tiles (cu_igemm_ws.cu, cu_q1x1_ws.cu, cu_q1x1_st.cu: producer
// warps fill a ring of stages -- by cp.async or TMA --, consumer warpgroups wait
// on per-stage "full" barriers and hand stages back on "empty" ones; no
// block-wide barrier per k step), and the host's tensor-map encoding (driver
// entry points through the runtime).
// Device code only in an sm_90 pass (try_wait.parity and setmaxnreg need it;
// setmaxnreg needs sm_90a). They live in the including file's anonymous
// namespace.
#ifndef PRECIS_CU_TMA_CUH
#define PRECIS_CU_TMA_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// a barrier of `count` arrivals a phase (one thread initializes it; a block
// barrier must follow before any other thread uses it)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// makes the barriers' initialization visible to the async proxy (TMA)
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// one arrival (release: this thread's earlier shared-memory writes are seen
// by whoever waits on the phase it completes)
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// arrives and expects `bytes` of TMA transactions in this phase
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}
// waits until the phase of parity `parity` has completed (acquire). A fresh
// barrier is in phase 0: parity 1 (the phase "before" it) counts as completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
// box of map (a __grid_constant__ CUtensorMap parameter) at coordinates
// (c0, c1[, c2]) into shared address dst, completing its bytes on barrier bar
__device__ __forceinline__ void tma_2d(uint32_t dst, const void *map, int c0, int c1,
                                       uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"((uint64_t)(uintptr_t)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void tma_3d(uint32_t dst, const void *map, int c0, int c1, int c2,
                                       uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)(uintptr_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const void *map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)(uintptr_t)map) : "memory");
}
// pixelsPerColumn pixels of map (channelsPerPixel bytes each) into dst: the
// walk starts at input position (w, h) of image n (the box's base for the
// tile's first output pixel) and reads each pixel at base + (ow_off, oh_off);
// zero outside the tensor. Completes its bytes on bar.
__device__ __forceinline__ void tma_im2col_4d(uint32_t dst, const void *map, int c, int w, int h,
                                              int n, uint16_t ow_off, uint16_t oh_off,
                                              uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(dst),
                 "l"((uint64_t)(uintptr_t)map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar),
                 "h"(ow_off), "h"(oh_off)
                 : "memory");
}
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
// a named barrier over the first `threads` threads of the block (a multiple
// of 32; id 1..15: 0 is __syncthreads')
__device__ __forceinline__ void named_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// this warpgroup's register count per thread, down / up (multiple of 8,
// 24..256); the kernel needs a register cap at entry (__launch_bounds__ with
// its blocks-per-SM argument)
template <int N> __device__ __forceinline__ void regs_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void regs_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
#endif

typedef CUresult (*tmap_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                   const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                   const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// a driver entry point through the runtime (no libcuda link); NULL when the
// driver lacks it
inline void *tma_entry(const char *name) {
    void *f = NULL;
    cudaDriverEntryPointQueryResult qr;
    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &qr) ||
        qr != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return f;
}

// cuTensorMapEncodeTiled (NULL without it)
inline tmap_encode_fn tmap_encoder() {
    static tmap_encode_fn fn; // the same value from any thread
    if (!fn) fn = (tmap_encode_fn)tma_entry("cuTensorMapEncodeTiled");
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
