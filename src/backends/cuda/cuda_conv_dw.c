/* The forms of our depthwise kernel (cu_dwconv.cu, pr_cu_dw.px) for the cuda
 * Conv impl: one output pixel a thread (1), four along a row (4), a block an
 * output tile from a shared-memory input tile (PR_CU_DW_TILE + 0..5); which
 * shapes each takes, and the timed choice among them. */
#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_impls.h"

const char *pr_cu_dw_form_name(int px) {
    static const char *const tiles[PR_CU_DW_TILES] = {" tile 8x8", " tile 16x8", " tile 4x4",
                                                      " tile 16x8 wide", " tile 8x16 wide",
                                                      " tile 8x4 wide"};
    return px == 4                                          ? " 4 pixels a thread"
           : (unsigned)(px - PR_CU_DW_TILE) < PR_CU_DW_TILES ? tiles[px - PR_CU_DW_TILE]
                                                             : "";
}

bool pr_cu_dw_form_ok(const pr_cu_dw *p, int dt, int px) {
    bool h16 = p->nhwc && dt != (int)PRECIS_FLOAT32 && p->C % 8 == 0 && p->kh == p->kw &&
               (p->kh == 3 || p->kh == 5) && p->dw == 1;
    if (px == 1) return true;
    if (px == 4) return h16 && (p->sw == 1 || p->sw == 2);
    return (unsigned)(px - PR_CU_DW_TILE) < PR_CU_DW_TILES && h16 && p->dh == 1 &&
           p->sh == p->sw && (p->sh == 1 || p->sh == 2) && p->N <= 65535;
}

/* 10 launches a timing, the forms interleaved, the minimum of two rounds
 * after a warm-up round (one launch of a few-microsecond kernel is mostly
 * launch overhead, and clocks ramp during the first timings: phase 8's
 * lesson). A form that fails is dropped; none timed: the one-pixel form. */
int pr_cu_dw_fastest(void *stream, int dt, pr_cu_dw *p, const void *x, const float *w,
                     const float *bias, const void *z, void *y) {
    static const int forms[] = {1, 4, PR_CU_DW_TILE, PR_CU_DW_TILE + 1, PR_CU_DW_TILE + 2,
                                PR_CU_DW_TILE + 3, PR_CU_DW_TILE + 4, PR_CU_DW_TILE + 5};
    enum { NF = sizeof forms / sizeof forms[0] };
    float best[NF];
    cudaStream_t st = (cudaStream_t)stream;
    cudaEvent_t a = NULL, b = NULL;
    bool bad = cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess;
    for (int f = 0; f < NF; f++) best[f] = pr_cu_dw_form_ok(p, dt, forms[f]) ? -1 : -2;
    for (int round = 0; round < 3 && !bad; round++)
        for (int f = 0; f < NF && !bad; f++) {
            if (best[f] == -2) continue;
            p->px = forms[f];
            bool fail = cudaEventRecord(a, st) != cudaSuccess;
            for (int i = 0; i < 10 && !fail; i++)
                fail = pr_cu_dwconv(st, dt, x, w, bias, z, y, p) != 0;
            float ms = 0;
            fail = fail || cudaEventRecord(b, st) != cudaSuccess ||
                   cudaEventSynchronize(b) != cudaSuccess ||
                   cudaEventElapsedTime(&ms, a, b) != cudaSuccess;
            if (fail) {
                cudaGetLastError();
                best[f] = -2;
            } else if (round > 0 && (best[f] < 0 || ms < best[f])) {
                best[f] = ms;
            }
        }
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    int px = 1;
    float bt = -1;
    for (int f = 0; f < NF; f++)
        if (best[f] >= 0 && (bt < 0 || best[f] < bt)) {
            bt = best[f];
            px = forms[f];
        }
    p->px = px;
    return px;
}
