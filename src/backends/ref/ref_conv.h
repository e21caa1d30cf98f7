/* Internals shared by the ref kernels of the 'conv' family
 * (ref_conv.c, ref_conv_pool.c, ref_conv_norm.c). Not a public interface. */
#ifndef PR_BACKENDS_REF_REF_CONV_H
#define PR_BACKENDS_REF_REF_CONV_H

#include "backends/ref/ref.h"
#include "ir/infer_conv.h"

/* Window geometry in canonical 3-D form: 1-D and 2-D problems get leading
 * spatial dims of size 1 (kernel 1, stride 1, dilation 1, no padding). */
typedef struct rc_geom3 {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_sz, out_sz, k_sz; /* products of in, out, k */
} rc_geom3;

/* Range [lo, hi) of g in [0, G) with 0 <= g * s + off < T (s > 0). */
static inline void rc_valid_range(int64_t off, int64_t s, int64_t T, int64_t G, int64_t *lo,
                                  int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = T - off <= 0 ? 0 : (T - off + s - 1) / s;
    if (l > G) l = G;
    if (h > G) h = G;
    if (h < l) h = l;
    *lo = l;
    *hi = h;
}

/* Builds the geometry of node k for input x (rank >= 3). w_kernel: kernel dims
 * from the weights (conv kinds) or NULL (pools). Fails (UNSUPPORTED) for more
 * than 3 spatial dims and when the output buffer disagrees. */
precis_status pr_refconv_geom(pr_kernel *k, pr_conv_kind kind, const pr_buf *x,
                              const int64_t *w_kernel, const pr_buf *y, rc_geom3 *g);

/* A float32 copy of any numeric buffer (malloc'd; NULL on OOM). */
float *pr_refconv_to_f32(const pr_buf *b);
/* Writes n float values into b converted to b's dtype (integers rounded to
 * nearest even and saturated; NaN becomes 0). */
void pr_refconv_from_f32(pr_buf *b, const float *src);
/* Values of a small numeric buffer as doubles (malloc'd; NULL on OOM or when b
 * is NULL). */
double *pr_refconv_to_f64(const pr_buf *b);

#endif
