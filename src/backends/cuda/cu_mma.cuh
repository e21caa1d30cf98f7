// Shared-memory pipeline and Tensor Core helpers of the implicit-GEMM
// kernels (cu_igemm.cu: int8; cu_hconv.cu: fp16/bf16): cp.async 16-byte
// copies (zero-filled when !ok), ldmatrix, and the row swizzle of their
// 64-byte shared rows (four 16-byte chunks XORed by (row >> 1) & 3, so that
// ldmatrix reads 8 rows of one chunk without bank conflicts).
#ifndef PR_BACKENDS_CUDA_CU_MMA_CUH
#define PR_BACKENDS_CUDA_CU_MMA_CUH

#include <stdint.h>

namespace prmma {

constexpr int ROW_BYTES = 64;

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// byte offset of 16-byte chunk `chunk` of shared row `row`
__device__ __forceinline__ int swz(int row, int chunk) {
    return row * ROW_BYTES + ((chunk ^ ((row >> 1) & 3)) << 4);
}

__device__ __forceinline__ void cp16(uint32_t dst, const void *src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm4(uint32_t *r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// The mma.sync B fragments of two adjacent n8 column blocks (b0: j, b1: j + 1)
// from one ldmatrix x4: lanes 0-7 / 8-15 address rows 0-7 of the block's two
// 16-byte k chunks, lanes 16-23 / 24-31 those of the next block (the callers'
// row = j * 8 + (lane & 7) + (lane >> 4) * 8, chunk + ((lane >> 3) & 1)).
__device__ __forceinline__ void ldsm_b2(uint32_t *b0, uint32_t *b1, uint32_t addr) {
    uint32_t t[4];
    ldsm4(t, addr);
    b0[0] = t[0];
    b0[1] = t[1];
    b1[0] = t[2];
    b1[1] = t[3];
}

} // namespace prmma

#endif
