/* Resize's per-axis arithmetic, shared by the ref kernel and the CPU
 * backend's fast Resize (k_resize.c) so both follow one definition. */
#ifndef PR_BACKENDS_REF_REF_RESIZE_H
#define PR_BACKENDS_REF_REF_RESIZE_H

#include "ir/infer_tensor.h"

/* Source coordinate of output index x on axis d (coordinate_transformation_mode). */
double pr_resize_coord(const pr_resize_plan *p, int d, double x, int64_t in, int64_t out_int);
/* Nearest source index for coordinate x (nearest_mode), clamped to [0, in). */
int64_t pr_resize_nearest(const pr_resize_plan *p, int d, double x, int64_t in);
/* The n interpolation weights for fractional position ratio in (0, 1] (linear:
 * 2, cubic: 4; with antialias, n taps scaled by the axis scale). */
void pr_resize_coeffs(const pr_resize_plan *p, double ratio, double scale, int n, double *c);

#endif
