// Hopper wgmma int8 helpers shared by the implicit-GEMM tiles
// (cu_igemm_wg.cu) and the K-streamed 1x1 tiles (cu_q1x1_wg.cu): the K-major
// 64-byte-swizzle operand descriptor, the fence / commit / wait wrappers and
// wgmma<BN>::run<U8>, one m64nBNk32 s32 MMA of u8 (U8) or s8 A times s8 B.
// The wrappers exist only in an sm_90a device pass (__CUDA_ARCH_FEAT_SM90_ALL);
// they live in the including file's anonymous namespace.
#ifndef PRECIS_CU_WGMMA_CUH
#define PRECIS_CU_WGMMA_CUH

#include <stdint.h>

namespace {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// K-major operand descriptor of a 64-byte-swizzled tile at shared address
// addr: start address, leading byte offset 16 (unused: a k32 slice lies in
// one swizzled row), stride byte offset 512, swizzle mode 2 (64 bytes).
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(512 >> 4) << 32) |
           ((uint64_t)2 << 62);
}
__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// keeps the compiler from moving accumulator accesses across the async MMAs
__device__ __forceinline__ void reg_fence(int &r) { asm volatile("" : "+r"(r)::"memory"); }

// The accumulator operands of one wgmma, this thread's N / 2 registers, and
// their names in the instruction ("%0,%1,...").
#define WG_R8(i)                                                                                   \
    "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]),    \
        "+r"(d[i + 6]), "+r"(d[i + 7])
#define WG_R32 WG_R8(0), WG_R8(8), WG_R8(16), WG_R8(24)
#define WG_R64 WG_R32, WG_R8(32), WG_R8(40), WG_R8(48), WG_R8(56)
#define WG_R128                                                                                    \
    WG_R64, WG_R8(64), WG_R8(72), WG_R8(80), WG_R8(88), WG_R8(96), WG_R8(104), WG_R8(112),         \
        WG_R8(120)
#define WG_S32 \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11," \
    "%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23," \
    "%24,%25,%26,%27,%28,%29,%30,%31"
#define WG_S64 \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11," \
    "%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23," \
    "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35," \
    "%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
    "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59," \
    "%60,%61,%62,%63"
#define WG_S128 \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11," \
    "%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23," \
    "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35," \
    "%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
    "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59," \
    "%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71," \
    "%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83," \
    "%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95," \
    "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107," \
    "%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119," \
    "%120,%121,%122,%123,%124,%125,%126,%127"
// D (64 x N) += A (64 x 32, desc da: TY = u8 or s8) * B (N x 32, desc db: s8)^T;
// DA / DB / P: the operand numbers of the descriptors and of scale-d (1: accumulate)
#define WG_MMA(N, TY, S, R, DA, DB, P)                                                             \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                 \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.s32." TY ".s8 {" S "},"             \
                 " %" #DA ", %" #DB ", p;\n}\n"                                                  \
                 : R                                                                               \
                 : "l"(da), "l"(db), "r"(1))

template <bool U8> __device__ __forceinline__ void wg_n64(int *d, uint64_t da, uint64_t db) {
    if (U8)
        WG_MMA(64, "u8", WG_S32, WG_R32, 32, 33, 34);
    else
        WG_MMA(64, "s8", WG_S32, WG_R32, 32, 33, 34);
}
template <bool U8> __device__ __forceinline__ void wg_n128(int *d, uint64_t da, uint64_t db) {
    if (U8)
        WG_MMA(128, "u8", WG_S64, WG_R64, 64, 65, 66);
    else
        WG_MMA(128, "s8", WG_S64, WG_R64, 64, 65, 66);
}
template <bool U8> __device__ __forceinline__ void wg_n256(int *d, uint64_t da, uint64_t db) {
    if (U8)
        WG_MMA(256, "u8", WG_S128, WG_R128, 128, 129, 130);
    else
        WG_MMA(256, "s8", WG_S128, WG_R128, 128, 129, 130);
}
#endif

template <int BN> struct wgmma;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <> struct wgmma<64> {
    template <bool U8> static __device__ __forceinline__ void run(int *d, uint64_t a, uint64_t b) {
        wg_n64<U8>(d, a, b);
    }
};
template <> struct wgmma<128> {
    template <bool U8> static __device__ __forceinline__ void run(int *d, uint64_t a, uint64_t b) {
        wg_n128<U8>(d, a, b);
    }
};
template <> struct wgmma<256> {
    template <bool U8> static __device__ __forceinline__ void run(int *d, uint64_t a, uint64_t b) {
        wg_n256<U8>(d, a, b);
    }
};
#endif

} // namespace

#endif
