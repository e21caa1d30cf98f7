/* Shape inference and parameter plan of Resize (opsets 10-19) and Upsample
 * (opsets 1-9). The kernels are in src/backends/ref/ref_resize.c. */
#include <math.h>
#include <string.h>

#include "ir/infer_tensor.h"

/* Float values of input i into buf (cap): count, -1 unknown, -2 error. */
static int in_floats(pr_infer *ic, int i, const char *what, double *buf, int cap) {
    const pr_tinfo *t = &ic->in[i];
    if (!pr_dtype_info(t->dtype)->is_float) {
        pr_inferf(ic, PRECIS_ERR_SHAPE, "%s must be a float tensor, got %s", what,
                  pr_dtype_name(t->dtype));
        return -2;
    }
    int64_t n = pr_infer_in_numel(ic, i);
    if (n < 0 || (!t->value && n != 0)) return -1;
    if (n > cap) {
        pr_inferf(ic, PRECIS_ERR_SHAPE, "%s has %lld values, at most %d expected", what,
                  (long long)n, cap);
        return -2;
    }
    for (int64_t j = 0; j < n; j++) buf[j] = pr_load_f64(t->value, t->dtype, j);
    return (int)n;
}

static precis_status parse_mode(pr_infer *ic, pr_resize_plan *p, bool upsample) {
    const char *mode = pr_attr_str(ic->node, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0)
        p->mode = PR_RESIZE_NEAREST;
    else if (strcmp(mode, "linear") == 0)
        p->mode = PR_RESIZE_LINEAR;
    else if (upsample && strcmp(mode, "bilinear") == 0)
        p->mode = PR_RESIZE_LINEAR;
    else if (!upsample && ic->node->opset >= 11 && strcmp(mode, "cubic") == 0)
        p->mode = PR_RESIZE_CUBIC;
    else
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "mode '%s' is not valid (%s)", mode,
                         upsample                ? "nearest or linear"
                         : ic->node->opset >= 11 ? "nearest, linear or cubic"
                                                 : "nearest or linear");
    p->coord = PR_COORD_ASYMMETRIC;
    p->nearest = PR_NEAREST_SIMPLE;
    p->cubic_a = -0.75;
    if (upsample || ic->node->opset < 11) return PRECIS_OK;

    static const struct {
        const char *name;
        int v;
        int64_t from, until;
    } coords[] = {
        {"half_pixel", PR_COORD_HALF_PIXEL, 11, 1000},
        {"half_pixel_symmetric", PR_COORD_HALF_PIXEL_SYMMETRIC, 11, 1000},
        {"pytorch_half_pixel", PR_COORD_PYTORCH_HALF_PIXEL, 11, 1000},
        {"align_corners", PR_COORD_ALIGN_CORNERS, 11, 1000},
        {"asymmetric", PR_COORD_ASYMMETRIC, 11, 1000},
        {"tf_half_pixel_for_nn", PR_COORD_TF_HALF_PIXEL_FOR_NN, 11, 13},
        {"tf_crop_and_resize", PR_COORD_TF_CROP_AND_RESIZE, 11, 1000},
    };
    const char *c = pr_attr_str(ic->node, "coordinate_transformation_mode", "half_pixel");
    size_t i;
    for (i = 0; i < sizeof coords / sizeof coords[0]; i++)
        if (strcmp(c, coords[i].name) == 0 && ic->node->opset < coords[i].until) break;
    if (i == sizeof coords / sizeof coords[0])
        return pr_inferf(ic, PRECIS_ERR_SHAPE,
                         "coordinate_transformation_mode '%s' is not valid at opset %lld", c,
                         (long long)ic->node->opset);
    p->coord = coords[i].v;
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
    const char *nm = pr_attr_str(ic->node, "nearest_mode", "round_prefer_floor");
    for (i = 0; i < 4; i++)
        if (strcmp(nm, nearest[i]) == 0) break;
    if (i == 4)
        return pr_inferf(
            ic, PRECIS_ERR_SHAPE,
            "nearest_mode '%s' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil",
            nm);
    p->nearest = (int)i;
    p->cubic_a = pr_attr_float(ic->node, "cubic_coeff_a", -0.75f);
    p->exclude_outside = pr_attr_int(ic->node, "exclude_outside", 0) != 0;
    p->extrapolation = pr_attr_float(ic->node, "extrapolation_value", 0.0f);
    p->antialias = ic->node->opset >= 18 && pr_attr_int(ic->node, "antialias", 0) != 0 &&
                   p->mode != PR_RESIZE_NEAREST;
    return PRECIS_OK;
}

precis_status pr_resize_plan_make(pr_infer *ic, pr_resize_plan *p, bool *known) {
    if (!pr_in_present(ic, 0)) return pr_inferf(ic, PRECIS_ERR_SHAPE, "input 0 (X) is required");
    const pr_tinfo *x = &ic->in[0];
    bool upsample = ic->node->op == PR_OP_Upsample;
    int64_t opset = ic->node->opset;
    memset(p, 0, sizeof *p);
    *known = false;
    p->rank = x->rank;
    precis_status st = parse_mode(ic, p, upsample);
    if (st) return st;
    if (pr_dtype_size(x->dtype) == 0 && x->dtype != PRECIS_UNDEFINED)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "dtype %s is not supported",
                         pr_dtype_name(x->dtype));
    if (p->mode != PR_RESIZE_NEAREST && x->dtype != PRECIS_UNDEFINED &&
        !pr_dtype_info(x->dtype)->is_float && !pr_dtype_info(x->dtype)->is_int)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "%s interpolation of %s is not supported",
                         p->mode == PR_RESIZE_LINEAR ? "linear" : "cubic", pr_dtype_name(x->dtype));
    int r = x->rank;
    if (r < 0) return PRECIS_OK;
    for (int d = 0; d < r; d++) {
        p->out[d] = x->dims[d];
        p->scale[d] = 1.0;
        p->roi_start[d] = 0.0;
        p->roi_end[d] = 1.0;
    }

    /* axes (Resize-18) */
    int64_t axes[PR_MAX_RANK];
    int na = r;
    for (int d = 0; d < r; d++) axes[d] = d;
    if (!upsample && opset >= 18) {
        const int64_t *a;
        int n = pr_attr_ints(ic->node, "axes", &a);
        if (n >= 0) {
            if (n > r)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "%d axes for an input of rank %d", n, r);
            na = n;
            for (int i = 0; i < n; i++) {
                int ax;
                if ((st = pr_infer_axis(ic, a[i], r, &ax))) return st;
                for (int j = 0; j < i; j++)
                    if (axes[j] == ax)
                        return pr_inferf(ic, PRECIS_ERR_SHAPE, "axis %d is given more than once",
                                         ax);
                axes[i] = ax;
            }
        }
    }

    double scales[PR_MAX_RANK];
    int64_t sizes[PR_MAX_RANK];
    int ns = -1, nz = -1; /* counts of scales / sizes; -3 present but unknown */
    bool roi_unknown = false;
    if (upsample) {
        if (opset < 7) {
            if (r != 4) return pr_inferf(ic, PRECIS_ERR_SHAPE, "input must be 4-D, got rank %d", r);
            scales[0] = scales[1] = 1.0;
            scales[2] = pr_attr_float(ic->node, "height_scale", 1.0f);
            scales[3] = pr_attr_float(ic->node, "width_scale", 1.0f);
            ns = 4;
        } else if (opset < 9) {
            const float *f;
            int n = pr_attr_floats(ic->node, "scales", &f);
            if (n < 0) return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'scales' is required");
            if (n > PR_MAX_RANK) return pr_inferf(ic, PRECIS_ERR_SHAPE, "too many scales (%d)", n);
            for (int i = 0; i < n; i++) scales[i] = f[i];
            ns = n;
        } else {
            if (!pr_in_present(ic, 1))
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "input 1 (scales) is required");
            ns = in_floats(ic, 1, "scales", scales, PR_MAX_RANK);
            if (ns == -2) return PRECIS_ERR_SHAPE;
            if (ns == -1) ns = -3;
        }
    } else if (opset < 11) {
        if (!pr_in_present(ic, 1))
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "input 1 (scales) is required");
        ns = in_floats(ic, 1, "scales", scales, PR_MAX_RANK);
        if (ns == -2) return PRECIS_ERR_SHAPE;
        if (ns == -1) ns = -3;
    } else {
        bool have_scales = pr_in_present(ic, 2) && pr_infer_in_numel(ic, 2) != 0;
        bool have_sizes = pr_in_present(ic, 3) && pr_infer_in_numel(ic, 3) != 0;
        if (have_scales && have_sizes && pr_infer_in_numel(ic, 2) < 0) have_scales = false;
        if (have_scales && have_sizes && pr_infer_in_numel(ic, 3) < 0) have_sizes = false;
        if (have_scales && have_sizes)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "only one of 'scales' and 'sizes' may be given");
        if (!have_scales && !have_sizes)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "one of 'scales' and 'sizes' must be given");
        if (have_scales) {
            ns = in_floats(ic, 2, "scales", scales, PR_MAX_RANK);
            if (ns == -2) return PRECIS_ERR_SHAPE;
            if (ns == -1) ns = -3;
        } else {
            if (ic->in[3].dtype != PRECIS_INT64)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "sizes must be int64, got %s",
                                 pr_dtype_name(ic->in[3].dtype));
            nz = pr_infer_ints(ic, 3, sizes, PR_MAX_RANK);
            if (nz == -2) return PRECIS_ERR_SHAPE;
            if (nz == -1) nz = -3;
        }
        if (p->coord == PR_COORD_TF_CROP_AND_RESIZE && pr_in_present(ic, 1) &&
            pr_infer_in_numel(ic, 1) != 0) {
            double roi[2 * PR_MAX_RANK];
            int nr = in_floats(ic, 1, "roi", roi, 2 * PR_MAX_RANK);
            if (nr == -2) return PRECIS_ERR_SHAPE;
            if (nr == -1)
                roi_unknown = true;
            else if (nr != 2 * na)
                return pr_inferf(ic, PRECIS_ERR_SHAPE,
                                 "roi has %d values, expected %d (2 x %d axes)", nr, 2 * na, na);
            for (int i = 0; i < na && !roi_unknown; i++) {
                p->roi_start[axes[i]] = roi[i];
                p->roi_end[axes[i]] = roi[na + i];
            }
        }
    }

    if (ns == -3 || nz == -3) {
        /* values unknown: sizes' dims unknown; only untouched axes are known */
        for (int d = 0; d < r; d++) p->out[d] = PR_DIM_UNKNOWN;
        if (na < r) {
            bool on[PR_MAX_RANK] = {false};
            for (int i = 0; i < na; i++) on[axes[i]] = true;
            for (int d = 0; d < r; d++)
                if (!on[d]) p->out[d] = x->dims[d];
        }
        return PRECIS_OK;
    }
    if (ns >= 0) {
        if (ns != na) return pr_inferf(ic, PRECIS_ERR_SHAPE, "%d scales given for %d axes", ns, na);
        for (int i = 0; i < na; i++) {
            int d = (int)axes[i];
            double s = scales[i];
            if (!(s > 0) || isinf(s))
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "scale %g for axis %d must be > 0", s, d);
            if (upsample && s < 1)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "scale %g for axis %d must be >= 1", s, d);
            p->scale[d] = s;
            int64_t dim = x->dims[d];
            if (pr_dim_known(dim)) {
                double o = floor((double)dim * s);
                if (o > 4.0e18)
                    return pr_inferf(ic, PRECIS_ERR_SHAPE, "output dim %d overflows", d);
                p->out[d] = (int64_t)o;
            } else {
                p->out[d] = s == 1.0 ? dim : PR_DIM_UNKNOWN;
            }
        }
    } else {
        if (nz != na) return pr_inferf(ic, PRECIS_ERR_SHAPE, "%d sizes given for %d axes", nz, na);
        const char *pol =
            opset >= 18 ? pr_attr_str(ic->node, "keep_aspect_ratio_policy", "stretch") : "stretch";
        int policy = strcmp(pol, "stretch") == 0       ? 0
                     : strcmp(pol, "not_larger") == 0  ? 1
                     : strcmp(pol, "not_smaller") == 0 ? 2
                                                       : -1;
        if (policy < 0)
            return pr_inferf(
                ic, PRECIS_ERR_SHAPE,
                "keep_aspect_ratio_policy '%s' is not one of stretch, not_larger, not_smaller",
                pol);
        bool dims_known = true;
        for (int i = 0; i < na; i++) {
            int d = (int)axes[i];
            if (sizes[i] < 0)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "size %lld for axis %d is negative",
                                 (long long)sizes[i], d);
            int64_t dim = x->dims[d];
            if (!pr_dim_known(dim)) {
                dims_known = false;
                p->out[d] = policy ? PR_DIM_UNKNOWN : sizes[i];
                continue;
            }
            if (dim == 0 && sizes[i] > 0)
                return pr_inferf(ic, PRECIS_ERR_SHAPE, "cannot resize empty axis %d to %lld", d,
                                 (long long)sizes[i]);
            p->out[d] = sizes[i];
            p->scale[d] = dim ? (double)sizes[i] / (double)dim : 1.0;
        }
        if (policy && dims_known) {
            double s = p->scale[axes[0]];
            for (int i = 1; i < na; i++) {
                double v = p->scale[axes[i]];
                if (policy == 1 ? v < s : v > s) s = v;
            }
            for (int i = 0; i < na; i++) {
                int d = (int)axes[i];
                double o = (double)x->dims[d] * s + 0.5;
                if (!(o < 4.0e18))
                    return pr_inferf(ic, PRECIS_ERR_SHAPE, "output dim %d overflows", d);
                p->scale[d] = s;
                p->out[d] = (int64_t)o;
            }
        }
        if (!dims_known) return PRECIS_OK;
    }
    for (int d = 0; d < r; d++)
        if (!pr_dim_known(x->dims[d])) return PRECIS_OK;
    *known = !roi_unknown;
    return PRECIS_OK;
}

static precis_status infer_resize(pr_infer *ic) {
    pr_resize_plan p;
    bool known;
    precis_status st = pr_resize_plan_make(ic, &p, &known);
    if (st) return st;
    const pr_tinfo *x = &ic->in[0];
    ic->out[0].dtype = x->dtype;
    if (x->rank < 0) return PRECIS_OK;
    ic->out[0].rank = x->rank;
    for (int d = 0; d < x->rank; d++) ic->out[0].dims[d] = p.out[d];
    return PRECIS_OK;
}

precis_status pr_infer_Resize(pr_infer *ic) { return infer_resize(ic); }
precis_status pr_infer_Upsample(pr_infer *ic) { return infer_resize(ic); }
