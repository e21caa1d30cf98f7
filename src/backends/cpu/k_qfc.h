/* Private to the INT8 1x1 convolution impls: qfc (k_qfc.c, 1x1 images) and
 * q1x1 (k_q1x1.c, NHWC images): their shared state and checks. */
#ifndef PR_BACKENDS_CPU_K_QFC_H
#define PR_BACKENDS_CPU_K_QFC_H

#include "backends/cpu/cpu.h"
#include "ir/act.h"
#include "ir/infer_conv.h"

/* q1x1: larger images run on the dnnl.qconv primitive in its state
 * (measured, see k_q1x1.c) */
#define Q1X1_MAX_PIX 4096

typedef struct qfc_state {
    pr_dtype xdt, ydt;
    int64_t IC, OC, OCp;
    pr_act act, act2; /* scaled by 1 / y_scale when folded */
    bool folded;
    float inv, lo, hi;
    float *wt;       /* [IC][OCp] */
    float *sc, *bi;  /* [OCp]: output scales (see the top), B / (x_scale * w_scale) */
    /* q1x1 only: int8 weights for vpdpbusd, [OCp / 16][ICq][16 lanes][4],
     * ICq = IC / 4 rounded up (zeros); the int8-src compensation [OCp] */
    int8_t *wq;
    int32_t *comp;
    int64_t ICq;
    void *big; /* dnnl.qconv's state for images over Q1X1_MAX_PIX pixels */
    bool sat;  /* every q1x1 output before the clamp is within +-2^30 (q1x1_prepare) */
    int ak;    /* the act q1x1 / qamx / qstem run (k_q1x1.h q1_epv): pr_qfc_act_sat */
    bool satpk; /* sat, and q1x1's 1-3 vector tails and OC-8 pixel pairs stored through
                   saturating packs too (PRECIS_QACT_SAT=0: only its 4-vector blocks) */
    pr_dtype zdt; /* q1x1's residual (OC 8, no act), PRECIS_UNDEFINED: none */
    float zsf;    /* its scale z_scale / y_scale */
    /* q1x1's OC 24 as 3 groups of 8 channels x pixel pairs (q1_rows24): one
     * block, [3][ICq][16 lanes][4] weight bytes (lanes 8-15 repeat 0-7),
     * then comp, sc, bi [48] each; NULL: the 16-lane vectors */
    void *g24;
    /* q1x1's OC 16 k + 8 (k > 0): the last 8 channels as pixel pairs
     * (q1_tail8; wq, comp, sc, bi repeat them in lanes 8-15 of the last
     * vector); false: a half-empty 16-lane vector (PRECIS_Q1X1_T8=0) */
    bool t8;
} qfc_state;

/* q1_epv's act for Clip with only its upper bound kept (k_q1x1.h). */
#define PR_ACT_CLIP_HI (-3)

/* The act of q's int8/uint8 outputs with the clamps dropped that the
 * output's range makes redundant (folded act, no act2): out = sat(rint(
 * clamp(r, a, b))) equals sat(rint(r)) on a side whose bound rounds to the
 * output range's end or past it (rint, the clamps and the saturation are
 * all monotone), so Relu into uint8 needs no max, and Clip(0, 6) into uint8
 * no max and, where 6 / y_scale rounds to 255 or more, no min. Exact: the
 * same bytes. PRECIS_QACT_SAT=0 (read at prepare): act.kind as it is. */
int pr_qfc_act_sat(const qfc_state *q);

/* The y_type attribute: float32, int8 or uint8, else PRECIS_UNDEFINED. */
pr_dtype pr_qfc_y_dtype(const pr_node *n);
/* A 1x1 QConv, group 1, no residual, no pads, finite scales and bias, IC up
 * to 512, supported acts (either impl's supports() adds its own). */
bool pr_qfc_common(const pr_graph *g, const pr_node *n);
/* The same with a residual input (4) allowed (q1x1's OC-8 projections). */
bool pr_qfc_common_z(const pr_graph *g, const pr_node *n);
/* The scales, biases, float weights and acts of n (pr_qfc_common holds). */
precis_status pr_qfc_state_new(const pr_graph *g, const pr_node *n, qfc_state **state,
                               pr_err *e);
void pr_qfc_destroy(void *state);
/* q1x1's own rows whatever the image size (its checks done by the caller:
 * k's X [N, IC, H, W] and Y [N, OC, H, W] of q's types; k_q1x1.c). */
precis_status pr_q1x1_rows_run(const qfc_state *q, pr_kernel *k, pr_cpu_exec *xc);
/* The run-time checks of an NHWC INT8 conv kernel that keeps a qfc_state
 * (qamx, qstem): X and Y of the prepared types, X [N, IC, H, W], the
 * geometry of a KH x KW kernel on X (pads known, not negative) into *geo,
 * Y [N, OC, OH, OW]. PRECIS_OK or the kernel's error (k->err set). */
precis_status pr_cpu_q_check_io(const qfc_state *q, pr_kernel *k, int64_t IC, int64_t OC,
                                int64_t KH, int64_t KW, pr_conv_geom *geo);

#endif
