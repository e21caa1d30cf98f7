/* Shared by the cuda Conv impl's files (cuda_conv.c, cuda_conv_nhwc.c, cuda_conv_dw.c). */
#ifndef PR_BACKENDS_CUDA_CUDA_CONV_H
#define PR_BACKENDS_CUDA_CUDA_CONV_H

#include <stdbool.h>

#include "ir/graph.h"

/* Our direct conv for few input channels (C % 8 != 0) takes a stem whose
 * weights are at most this many (EfficientNet's 3x3x3x32 = 864: FMA math,
 * a thread a pixel; ResNet-50's 7x7x3x64 = 9408 stays on cuDNN NCHW). */
#define HC_DIRECT_MAX 4096

/* Does the Conv / FusedConv n (supported by the impl) run NHWC? */
bool pr_cu_conv_nhwc_ok(const pr_graph *g, const pr_node *n);

struct pr_cu_dw;
/* Our depthwise kernel's forms (pr_cu_dw.px: 1, 4, PR_CU_DW_TILE + i;
 * cuda_conv_dw.c): the name describe() appends, whether the form takes p's
 * shape in type dt, and the fastest form for p on these buffers (timed;
 * p->px is left at it). */
const char *pr_cu_dw_form_name(int px);
bool pr_cu_dw_form_ok(const struct pr_cu_dw *p, int dt, int px);
int pr_cu_dw_fastest(void *stream, int dt, struct pr_cu_dw *p, const void *x, const float *w,
                     const float *bias, const void *z, void *y);

#endif
