/* Image decoding (PNG, JPEG, binary PPM/PGM) and the preprocessing that turns
 * a decoded image into one float32 sample of an image model's input.
 *
 * Decoding gives 8-bit RGB, whatever the file holds: grey is expanded to
 * three equal channels, alpha is dropped (not composited), 16-bit PNG samples
 * keep their high byte and PPM/PGM samples with maxval != 255 are rescaled to
 * 0..255 (rounded). The format is found from the file's first bytes, not its
 * name. Images over PR_IMAGE_MAX_SIDE pixels on a side are refused. Corrupt
 * or truncated files (JPEG included: libjpeg's "premature end" warnings are
 * errors here) fail with a one-line message naming the file; nothing is
 * printed.
 *
 * Preprocessing (in this order):
 *   1. resize: the shorter side to S with the longer side scaled by the same
 *      factor and truncated (torchvision's rule: long' = floor(S * long /
 *      short)), or to exactly H x W. Bilinear interpolation with half-pixel
 *      centres: output pixel x samples the input at (x + 0.5) * in / out - 0.5,
 *      clamped to [0, in - 1], weighting the two nearest pixels. This is
 *      torch.nn.functional.interpolate(mode='bilinear', align_corners=False,
 *      antialias=False) computed in float; it equals PIL's BILINEAR when
 *      enlarging (up to PIL's rounding to 8 bits) but not when shrinking, where
 *      PIL widens its filter (antialiasing) and this does not.
 *   2. centre crop to H x W: top = round((in_h - H) / 2), left likewise,
 *      halves rounded to even (torchvision's center_crop, Python's round). A
 *      crop larger than the (resized) image fails.
 *   3. per pixel and channel: (v * scale - mean[c]) / std[c], c counted in the
 *      output channel order (for order=bgr the mean and std are given as
 *      b:g:r).
 *   4. channel order rgb or bgr, layout NCHW ([1,3,H,W]) or NHWC ([1,H,W,3]).
 */
#ifndef PR_IO_IMAGE_H
#define PR_IO_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/tensor.h"

#define PR_IMAGE_MAX_SIDE 16384

/* A decoded image: h rows of w pixels of 3 bytes (R, G, B). */
typedef struct pr_image {
    int w, h;
    unsigned char *rgb; /* malloc'd, w * h * 3 bytes */
} pr_image;

/* Decode an in-memory PNG / JPEG / PPM / PGM file into *out (freed with
 * pr_image_free, also after a failure). `what` names the file in messages. */
precis_status pr_image_decode(const void *buf, size_t len, const char *what, pr_image *out,
                              pr_err *e);
/* Read and decode the file at path. */
precis_status pr_image_load(const char *path, pr_image *out, pr_err *e);
void pr_image_free(pr_image *im);

/* A parsed preprocessing spec (see calib_data.h for its text form). */
typedef struct pr_image_prep {
    int resize_short;         /* > 0: shorter side to this */
    int resize_h, resize_w;   /* > 0: exactly this size */
    int crop_h, crop_w;       /* > 0: given; 0: the input's H, W where known */
    float scale;              /* default 1/255 */
    float mean[3], std[3];    /* defaults 0 and 1 */
    bool bgr, nhwc;
} pr_image_prep;

/* Parse "key=value,key=value,..." into *out. Fails (INVALID_ARG) naming the
 * item that is unknown, repeated or malformed. */
precis_status pr_image_prep_parse(const char *spec, pr_image_prep *out, pr_err *e);

/* The spec in a normal form (every key, defaults filled in, fixed order and
 * number format), so that equal specs give equal strings. Returns buf. */
const char *pr_image_prep_normalize(const pr_image_prep *p, char *buf, size_t cap);

/* Run the preprocessing on im into a new float32 tensor [1,3,H,W] (NCHW) or
 * [1,H,W,3] (NHWC). def_h/def_w: the crop size to use when the spec gives
 * none (the input's H and W), or <= 0 for none (then H, W are the resized
 * size). Fails naming `what` when the crop does not fit or sizes exceed
 * PR_IMAGE_MAX_SIDE. */
precis_status pr_image_prep_run(const pr_image *im, const pr_image_prep *p, int def_h, int def_w,
                                const char *what, precis_tensor **out, pr_err *e);

#endif
