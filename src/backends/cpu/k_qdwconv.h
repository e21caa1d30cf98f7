/* Private to the depthwise INT8 convolution (k_qdwconv.c: the kernels and
 * the run; k_qdwconv_prep.c: supports, weights packing, the small-image
 * tables): the state both sides share. */
#ifndef PR_BACKENDS_CPU_K_QDWCONV_H
#define PR_BACKENDS_CPU_K_QDWCONV_H

#include "backends/cpu/cpu.h"
#include "ir/act.h"

#define QDW_MAXK 16 /* kernel rows/columns handled */

typedef struct qdw_state {
    pr_dtype xdt, ydt;
    int64_t C, KH, KW, nqh, nblk;
    pr_act act, act2;
    float inv, lo, hi;
    bool lin;      /* the last block is linear (see qdw_lin_ok) */
    int64_t ng;    /* its 16-channel groups (1..2) */
    int8_t *wp;    /* [nblk][KW][nqh][4][64] */
    int32_t *init; /* [nblk][4][16] accumulator start (compensation) */
    int32_t *qcomp; /* [nblk][nqh][4][16] a quad's share of it, negated (int8 src) */
    float *sc, *bias; /* [nblk][4][16] x_scale * w_scale, B */
    /* images of IH <= 4 rows (qdw_img_tables): per IH and output row, the
     * weights of one quad holding the image's rows [nblk][KW][4][64] and
     * the start; img_oh[IH - 1] the OH they were made for (0: none) */
    int8_t *wimg[4][4];
    int32_t *iinit[4][4];
    int64_t img_oh[4], img_pt, img_sh;
} qdw_state;


bool pr_qdw_supports(const pr_graph *g, const pr_node *n);
precis_status pr_qdw_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                             void **state, pr_err *e);
void pr_qdw_destroy(void *state);
/* Whether the epilogue fuses (see qdw_ep in k_qdwconv.c). */
bool pr_qdw_fused(const qdw_state *s);

#endif
