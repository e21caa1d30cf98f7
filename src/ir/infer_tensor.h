/* Parameter "plans" of the 'tensor' family shared by shape inference
 * (src/ir/infer_tensor.c, infer_resize.c) and the reference kernels
 * (src/backends/ref/ref_tensor.c, ref_resize.c), so that both read the
 * attributes and parameter inputs (starts, pads, scales, ...) with one piece
 * of code and agree on every rule (clamping, defaults, opset differences).
 *
 * Each maker reads ic->node and ic->in[] (dtype/rank/dims/value) and never
 * touches ic->out. `*known` is set to false when a value it needs is not
 * known (static inference); then only the fields documented as such are set.
 * A kernel calls the maker with a pr_infer built from its buffers (all values
 * known), see pr_kernel_infer_ctx in ref_tensor.c.
 */
#ifndef PR_IR_INFER_TENSOR_H
#define PR_IR_INFER_TENSOR_H

#include "ir/infer.h"

/* Slice: per input axis, the first index, the step and the number of
 * elements taken (len[a] == in dim and step 1, start 0 for untouched axes).
 * len[a] is PR_DIM_UNKNOWN when the input dim is not known; a symbolic input
 * dim that is taken whole gives len[a] = that dim. When *known is false only
 * `sliced` is set (which axes are sliced, all of them when the axes are not
 * known). */
typedef struct pr_slice_plan {
    int rank;
    bool sliced[PR_MAX_RANK];
    int64_t start[PR_MAX_RANK], step[PR_MAX_RANK], len[PR_MAX_RANK];
} pr_slice_plan;
precis_status pr_slice_plan_make(pr_infer *ic, pr_slice_plan *p, bool *known);

/* Split: the size of each of the n_out parts along *axis (PR_DIM_UNKNOWN
 * where unknown). sizes has room for ic->n_out entries; *known says whether
 * all sizes are known. */
precis_status pr_split_plan_make(pr_infer *ic, int n_out, int *axis, int64_t *sizes, bool *known);

/* Pad: pads at the beginning / end of every axis, the mode and the constant
 * value as one element of the input's dtype. *known false: nothing set except
 * mode. */
enum { PR_PAD_CONSTANT = 0, PR_PAD_REFLECT, PR_PAD_EDGE, PR_PAD_WRAP };
typedef struct pr_pad_plan {
    int rank;
    int mode;
    int64_t begin[PR_MAX_RANK], end[PR_MAX_RANK];
    unsigned char value[16]; /* constant, in the input dtype */
} pr_pad_plan;
precis_status pr_pad_plan_make(pr_infer *ic, pr_pad_plan *p, bool *known);

/* Resize and Upsample. */
enum { PR_RESIZE_NEAREST = 0, PR_RESIZE_LINEAR, PR_RESIZE_CUBIC };
enum {
    PR_COORD_HALF_PIXEL = 0,
    PR_COORD_HALF_PIXEL_SYMMETRIC,
    PR_COORD_PYTORCH_HALF_PIXEL,
    PR_COORD_ALIGN_CORNERS,
    PR_COORD_ASYMMETRIC,
    PR_COORD_TF_HALF_PIXEL_FOR_NN,
    PR_COORD_TF_CROP_AND_RESIZE
};
enum {
    PR_NEAREST_ROUND_PREFER_FLOOR = 0,
    PR_NEAREST_ROUND_PREFER_CEIL,
    PR_NEAREST_FLOOR,
    PR_NEAREST_CEIL,
    PR_NEAREST_SIMPLE /* opset-10 Resize and Upsample: floor, ceil when downsampling */
};
typedef struct pr_resize_plan {
    int rank;
    int mode, coord, nearest;
    double cubic_a, extrapolation;
    bool exclude_outside, antialias;
    /* Per axis: output size (PR_DIM_UNKNOWN / symbolic when not known), the
     * scale used by the coordinate transform (out/in when sizes are given),
     * and the region of interest (0 and 1 unless tf_crop_and_resize). */
    int64_t out[PR_MAX_RANK];
    double scale[PR_MAX_RANK];
    double roi_start[PR_MAX_RANK], roi_end[PR_MAX_RANK];
} pr_resize_plan;
/* For Resize and Upsample nodes (dispatches on ic->node->op). *known false:
 * rank, the attributes and, where they could be derived, out[] are set. */
precis_status pr_resize_plan_make(pr_infer *ic, pr_resize_plan *p, bool *known);

/* NonZero: is the element at p (es bytes of dtype dt) non-zero (floats: +-0
 * are zero, NaN is not); number of non-zero elements of a buffer. */
bool pr_elem_nonzero(const unsigned char *p, pr_dtype dt, size_t es);
int64_t pr_count_nonzero(const void *data, pr_dtype dt, int64_t n);

/* Helpers shared by the infer_*.c files of the family. */
/* Fixed-size float or integer dtype (Range, OneHot). */
static inline bool pr_infer_numeric_dtype(pr_dtype dt) {
    const pr_dtype_traits *t = pr_dtype_info(dt);
    return t->size && (t->is_float || t->is_int);
}
/* Fails (UNSUPPORTED) for dtypes without fixed-size storage (string). */
precis_status pr_infer_check_storable(pr_infer *ic, pr_dtype dt);

#endif
