/* Convolution / pooling window geometry shared by the 'conv' family's shape
 * inference (src/ir/infer_conv.c) and its ref kernels (src/backends/ref/ref_conv*.c).
 *
 * pr_conv_geom_init() reads a node's kernel_shape, strides, dilations, pads,
 * auto_pad (and ceil_mode / output_padding / output_shape for the kinds that
 * have them), validates them against the ONNX spec and computes, for every
 * spatial dim, the output size and the effective begin/end padding (auto_pad
 * and ConvTranspose's output_shape resolved). Unknown or symbolic input dims
 * give PR_DIM_UNKNOWN outputs (or the same symbol where the op keeps the size).
 */
#ifndef PR_IR_INFER_CONV_H
#define PR_IR_INFER_CONV_H

#include "ir/graph.h"

typedef enum pr_conv_kind {
    PR_CONV_KIND_CONV,  /* Conv, ConvInteger, QLinearConv */
    PR_CONV_KIND_CONVT, /* ConvTranspose */
    PR_CONV_KIND_POOL,  /* MaxPool, AveragePool, LpPool */
} pr_conv_kind;

typedef struct pr_conv_geom {
    int nsp;                     /* number of spatial dims */
    int64_t in[PR_MAX_RANK];     /* input spatial dims (as given) */
    int64_t kernel[PR_MAX_RANK]; /* PR_DIM_UNKNOWN when not known */
    int64_t stride[PR_MAX_RANK];
    int64_t dil[PR_MAX_RANK];
    int64_t pad_b[PR_MAX_RANK];   /* effective begin padding (may be < 0 for ConvTranspose) */
    int64_t pad_e[PR_MAX_RANK];   /* effective end padding */
    int64_t out_pad[PR_MAX_RANK]; /* ConvTranspose output_padding */
    int64_t out[PR_MAX_RANK];     /* output spatial dims; PR_DIM_UNKNOWN / symbol if not known */
    bool pads_known;              /* pad_b/pad_e valid (auto_pad needs known dims) */
    bool ceil_mode;               /* pools */
} pr_conv_geom;

/* in_sp: nsp input spatial dims (unknown/symbolic allowed). w_kernel: nsp
 * kernel dims taken from the weights (Conv kinds; NULL for pools, entries may
 * be PR_DIM_UNKNOWN). Errors are written to e as "node 'n' (Op): ...". */
precis_status pr_conv_geom_init(const pr_node *node, pr_conv_kind kind, int nsp,
                                const int64_t *in_sp, const int64_t *w_kernel, pr_err *e,
                                pr_conv_geom *g);

#endif
