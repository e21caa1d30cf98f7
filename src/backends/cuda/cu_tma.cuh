// Hopper shared-memory barrier (mbarrier), TMA (cp.async.bulk.tensor) and
// register-reallocation wrappers for the warp-specialized tiles (cu_igemm_ws.cu,
// cu_q1x1_ws.cu: producer warps fill a ring of stages -- by cp.async or TMA --,
// consumer warpgroups wait on per-stage "full" barriers and hand stages back on
// "empty" ones; no block-wide barrier per k step).
// Device code only in an sm_90 pass (try_wait.parity and setmaxnreg need it;
// setmaxnreg needs sm_90a). They live in the including file's anonymous
// namespace.
#ifndef PRECIS_CU_TMA_CUH
#define PRECIS_CU_TMA_CUH

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

} // namespace

#endif
