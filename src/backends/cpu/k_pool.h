/* Private to the pool impl (k_pool.c: float pools, the dispatch; k_qpool.c:
 * the int8/uint8 MaxPool and QPool kernels): its state, the window geometry
 * and the int8 entry points. Include after kernels_norm.h with
 * PR_KN_INTERNAL defined. */
#ifndef PR_BACKENDS_CPU_K_POOL_H
#define PR_BACKENDS_CPU_K_POOL_H

#include "backends/cpu/kernels_norm.h"
#include "backends/ref/ref_conv.h"

typedef enum { KP_MAX, KP_AVG, KP_GMAX, KP_GAVG } kp_kind;

typedef struct kp_state {
    kp_kind kind;
    bool v512, nhwc, cip;
    bool q;         /* QPool: int8/uint8 X of real value xs * X */
    float xs, inv;  /* QPool: x_scale, 1 / y_scale */
} kp_state;

/* Window geometry of one 2-D pool, in the padded frame where needed. */
typedef struct kp_geom {
    int64_t H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int64_t L; /* padded row buffer length (plain path), slack included */
} kp_geom;

/* Count of the window of output index o along one axis (as the ref). */
static inline int64_t kp_count(int64_t o, int64_t s, int64_t pb, int64_t pe, int64_t d, int64_t in,
                        int64_t k, bool cip) {
    int64_t lo, hi;
    const int64_t off = o * s - pb;
    if (cip)
        rc_valid_range(off + pb, d, in + pb + pe, k, &lo, &hi);
    else
        rc_valid_range(off, d, in, k, &lo, &hi);
    return hi - lo;
}

/* int8/uint8 MaxPool (2-D windows, plain or NHWC), QPool GlobalAveragePool
 * and AveragePool (k_qpool.c). */
precis_status pr_kq_maxpool(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                            pr_buf *Y, kp_geom *g);
precis_status pr_kq_global_avg(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                               pr_buf *Y);
precis_status pr_kq_avgpool(const kp_state *s, pr_kernel *k, pr_cpu_exec *x, const pr_buf *X,
                            pr_buf *Y, const kp_geom *g);

#endif
