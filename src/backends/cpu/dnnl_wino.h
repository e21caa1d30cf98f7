/* Winograd convolutions for the CPU backend's dnnl.conv (float32 3x3,
 * stride 1, dilation 1, one group, input and output channels multiples of
 * 16).
 *
 * oneDNN 2.6's Winograd kernels (jit_wino_4x3, jit_fp32_wino_2x3) need the
 * blocked nChw16c layout for src and dst, while precis keeps float feature
 * maps NHWC. The step therefore reorders its input into a staging buffer,
 * runs the Winograd primitive and reorders the output back (a residual is
 * reordered into the staged output first, for the sum post-op). Measured
 * here (1 thread, best of 30): ResNet-50's 3x3 convs 64ch 56x56 1.03 ->
 * 0.57 ms, 128ch 28x28 0.96 -> 0.41, 256ch 14x14 1.05 -> 0.49; at 7x7 the
 * gain is gone. Numerically the relative L2 error against a float64 oracle
 * grows from ~2e-7 (direct) to ~2e-7..7e-7.
 *
 * Whether it pays depends on the shape, the thread count and the reorders,
 * so the choice is made by timing both on the build machine when the
 * primitive for the graph's shape is created (TensorRT-style tactic
 * selection); the winner is what `inspect` shows. The environment variable
 * PRECIS_WINOGRAD=0 turns the path off, PRECIS_WINOGRAD=force takes it
 * wherever oneDNN has it (tests). Primitives are created when a plan is
 * loaded, so it applies to the process that loads the plan. */
#ifndef PR_BACKENDS_CPU_DNNL_WINO_H
#define PR_BACKENDS_CPU_DNNL_WINO_H

#include "backends/cpu/dnnl_common.h"

#ifdef PRECIS_HAVE_DNNL

typedef struct pr_wino_req {
    const dnnl_memory_desc_t *src, *dst; /* the tensors' own descs (nhwc or nchw) */
    const dnnl_memory_desc_t *bias;      /* NULL: none */
    const dnnl_memory_desc_t *user_wei;  /* the graph's weights (oihw) */
    const void *user;
    const dnnl_dims_t *pad_l, *pad_r;
    const_dnnl_primitive_attr_t attr; /* post-ops (the same as the direct one's) */
    bool has_z;                       /* a residual read by a sum post-op */
    int threads;
    bool take; /* chosen before (tactics.h): no timing, the Winograd path if oneDNN has it */
} pr_wino_req;

/* 0: off (PRECIS_WINOGRAD=0), 1: timed (default), 2: forced. */
int pr_dnnl_wino_mode(void);

/* Builds the staged Winograd primitive for r and times it against the direct
 * primitive `direct` (weights reordered into a temporary for the timing).
 * When the Winograd path is faster by more than 5%, ent gets it (prim, args
 * SRC/WEIGHTS/[BIAS]/DST on the staging buffers, its own weights, stage[])
 * and *won is set; otherwise ent is untouched. A shape oneDNN has no
 * Winograd kernel for is not an error (*won false). With r->take the
 * Winograd path is taken without timing. */
precis_status pr_dnnl_wino_try(const pr_wino_req *r, const_dnnl_primitive_desc_t direct,
                               pr_dnnl_entry *ent, bool *won, pr_err *e);

#endif
#endif
