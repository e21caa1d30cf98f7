// The host's tensor maps of the 3x3 ping-pong tile fed by TMA im2col
// (cu_igemm_ws.cu's k_igemm_ti, phase 20w): the weights as a tiled map, the
// NHWC int8 activation as an im2col one (cuTensorMapEncodeIm2col; the device's
// copy is cu_tma.cuh's tma_im2col_4d). In the including file's anonymous
// namespace, after cu_tma.cuh.
#ifndef PRECIS_CU_IGEMM_TI_CUH
#define PRECIS_CU_IGEMM_TI_CUH

#include "backends/cuda/cu_tma.cuh"

namespace {

typedef CUresult (*ti_im2col_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                 const cuuint64_t *, const cuuint64_t *, const int *, const int *,
                                 cuuint32_t, cuuint32_t, const cuuint32_t *,
                                 CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// the int8 weights [rows][K] (K % 16 == 0) as a tiled map, box {64, box_rows},
// the 64-byte swizzle the wgmma descriptors read, zero fill past K / rows
inline bool ti_encode_w(CUtensorMap *m, const void *w, int64_t K, int64_t rows, int box_rows) {
    tmap_encode_fn fn = tmap_encoder();
    const cuuint64_t d[2] = {(cuuint64_t)K, (cuuint64_t)rows}, st[1] = {(cuuint64_t)K};
    const cuuint32_t b[2] = {64, (cuuint32_t)box_rows}, es[2] = {1, 1};
    return fn && fn(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)w, d, st, b, es,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// the NHWC int8 activation [N, H, W, C] (C % 16 == 0) as an im2col map: 64
// channels a pixel, `pixels` pixels a copy, the 64-byte swizzle; the box's
// bases run over the output grid (lower corner -pad, upper corner so that
// the last base is (O - 1) * stride - pad; element strides = the conv's
// strides), the taps come as the copy's offsets. False where the corners
// differ between W and H, leave the 4D range [-128, 127], or the driver
// refuses.
inline bool ti_encode_x(CUtensorMap *m, const void *x, int64_t N, int64_t H, int64_t W, int64_t C,
                        int64_t OH, int64_t OW, int sh, int sw, int ph, int pw, int pixels) {
    static ti_im2col_fn fn;
    if (!fn) fn = (ti_im2col_fn)tma_entry("cuTensorMapEncodeIm2col");
    const int64_t uw = (OW - 1) * sw - pw - (W - 1), uh = (OH - 1) * sh - ph - (H - 1);
    // equal corners in W and H (so the corners' order in the map cannot matter:
    // cuda.h names them {D, H, W}, the copy's offsets come as {W, H, D})
    if (pw != ph || uw != uh || pw > 128 || uw < -128 || uw > 127 || sh < 1 || sw < 1 ||
        sh > 8 || sw > 8)
        return false;
    const int lower[2] = {-pw, -ph}, upper[2] = {(int)uw, (int)uh}; // {W, H}
    const cuuint64_t d[4] = {(cuuint64_t)C, (cuuint64_t)W, (cuuint64_t)H, (cuuint64_t)N};
    const cuuint64_t st[3] = {(cuuint64_t)C, (cuuint64_t)(W * C), (cuuint64_t)(H * W * C)};
    const cuuint32_t es[4] = {1, (cuuint32_t)sw, (cuuint32_t)sh, 1};
    return fn && fn(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, (void *)x, d, st, lower, upper, 64,
                    (cuuint32_t)pixels, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

} // namespace

#endif
