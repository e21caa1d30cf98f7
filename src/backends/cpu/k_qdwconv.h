/* Private to the depthwise INT8 convolution (k_qdwconv.c: the kernels and
 * the run; k_qdwconv_prep.c: supports, weights packing, the small-image
 * tables): the state both sides share. */
#ifndef PR_BACKENDS_CPU_K_QDWCONV_H
#define PR_BACKENDS_CPU_K_QDWCONV_H

#include "backends/cpu/cpu.h"
#include "ir/act.h"

#define QDW_MAXK 16 /* kernel rows/columns handled */

/* qdw_state.sat (PRECIS_QACT_SAT=0 at prepare: QDW_SAT_NONE). The blocks of
 * 64 channels store through saturating int32 -> int16 -> int8 packs, and a
 * float under -2^31 converts to INT_MIN, which they saturate to the range's
 * low end too: so the output clamp's max is redundant, and so is an act's
 * lower bound whose output rounds to that end or below (rint, the clamps
 * and the saturation are monotone); the clamp's min too where the values
 * are bounded under 2^31 (by the act's upper bound, or by the sums' bound
 * |F| <= (KH KW 255 128 |sc| + |B|) for acts that do not grow |F|). The
 * same bytes. No act2 in any.
 *   QDW_SAT_CLIP       Clip, rint(alpha / y_scale) at or under the low
 *                      end: min(F, beta) / y_scale (Relu6 into uint8: 3 of
 *                      8 operations gone);
 *   QDW_SAT_RELU       Relu into uint8, unbounded: min(F / y_scale, 255);
 *   QDW_SAT_FREE_NONE  bounded, no act (or Relu into uint8): F / y_scale;
 *   QDW_SAT_FREE_RELU  bounded Relu into int8: max(F, 0) / y_scale;
 *   QDW_SAT_FREE_HSW   bounded HardSwish: hswish(F) / y_scale. */
enum {
    QDW_SAT_NONE,
    QDW_SAT_CLIP,
    QDW_SAT_RELU,
    QDW_SAT_FREE_NONE,
    QDW_SAT_FREE_RELU,
    QDW_SAT_FREE_HSW
};

typedef struct qdw_state {
    pr_dtype xdt, ydt;
    int64_t C, KH, KW, nqh, nblk;
    pr_act act, act2;
    float inv, lo, hi;
    bool lin;      /* the last block is linear (see qdw_lin_ok) */
    int sat;       /* the packed blocks' fused epilogue without the clamps the packs
                      make redundant: QDW_SAT_* (pr_qdw_prepare) */
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
    /* images of IH <= 2 rows as column pairs (qdw_img_tables; PRECIS_QDW_PAIRS=0:
     * the quads): each lane's dword holds rows 0, 1 of two adjacent columns,
     * and wimg[IH - 1][oh] is [nblk][(KW + 1) / 2][4][64], a pair's bytes
     * (kernel rows of image rows 0, 1 at column 2 j, then at 2 j + 1) */
    bool img_pairs;
    /* the direct path (k_qdwdirect.c): uint8 src of 8, 16, 24 or 32 channels */
    bool direct;
    int64_t Cv;        /* lcm(C, 16): lanes of the weight patterns */
    float *dwf;        /* [KH * KW][Cv] the weights as floats, lane l channel l % C */
    float *dsc, *dbi;  /* [Cv] x_scale * w_scale, B, lane l channel l % C */
    int32_t *dwq;      /* 3-column kernels with VNNI: [KH][Cv] the row's 3 weights
                          as bytes w0 w1 w2 0 (dd_flat4), or NULL */
    int32_t *dwt;      /* 3x3 kernels with VNNI: [KW][Cv] a column's 3 weights as
                          bytes w0 w1 w2 0 (dd_convert3: the 3 rows an output row
                          reads as one row of dwords), or NULL (PRECIS_QDW_ROWS3=0) */
    void *big;         /* dnnl.qconv's state for images over QDW_DIRECT_MAX_PIX
                          (PRECIS_QDW_DIRECT_BIG=0 only) */
} qdw_state;

/* The direct path's image limit (input pixels) for one band of all rows;
 * larger images run in bands of output rows (or on s->big, see above). */
#define QDW_DIRECT_MAX_PIX 4096


bool pr_qdw_supports(const pr_graph *g, const pr_node *n);
precis_status pr_qdw_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                             void **state, pr_err *e);
void pr_qdw_destroy(void *state);
/* Whether the epilogue fuses (see qdw_ep in k_qdwconv.c). */
bool pr_qdw_fused(const qdw_state *s);
/* Whether node n goes to the direct path (src uint8, 8-32 channels, a
 * fused epilogue); its weights and the fallback (k_qdwdirect.c). */
bool pr_qdw_direct_ok(const pr_graph *g, const pr_node *n);
bool pr_qdw_direct_big(void);
precis_status pr_qdw_direct_prepare(qdw_state *s, const pr_graph *g, const pr_node *n,
                                    const pr_cpu_cfg *cfg, const int8_t *w, const float *ws,
                                    const float *bv, float xs);
void pr_qdw_direct_free(qdw_state *s);
/* Image batch X (N, IH, IW, C) -> Y with the geometry of qdw_run; scratch
 * from x. */
precis_status pr_qdw_direct_run(const qdw_state *s, pr_kernel *k, pr_cpu_exec *x,
                                const int64_t geo[10]);
/* Whether a block may run this state inside its region (no oneDNN in it). */
bool pr_qdw_block_ok(const void *state);

#endif
