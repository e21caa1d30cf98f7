/* Calibration data: the samples fed to a model to calibrate INT8, streamed
 * one batch at a time (never all in memory).
 *
 * Sources (`path`):
 *   - a folder of .npy files, sorted by name (strcmp; names starting with
 *     '.' are skipped): for a one-input model each file is one sample or one
 *     batch of that input; for a model with several inputs the folder holds
 *     one subfolder per input, named like the input ('/', '\\', ':', '*',
 *     '?', '"', '<', '>', '|' and control characters replaced by '_'), each
 *     with the same number of .npy files, matched by sorted order (a
 *     one-input model may use this layout too). A folder that mixes files and
 *     subfolders, .npy files and images, or holds a file of another extension,
 *     or a subfolder naming no input, is refused;
 *   - a list file (any other regular file): one line per batch, either a
 *     path (one-input model; the whole trimmed line, spaces allowed, an
 *     optional `name=` prefix) or `name=path name=path ...` separated by
 *     blanks (paths without blanks); relative paths are relative to the list
 *     file; blank lines and lines starting with '#' are skipped. Entries may
 *     be .npy files or images;
 *   - a single .npy or image file: one batch of a one-input model;
 *   - a folder of images (.png, .jpg/.jpeg, .ppm/.pgm/.pnm, any case; a
 *     folder holding no .npy file), for a one-input image model (or an
 *     input's subfolder holding only images), which needs a preprocessing
 *     spec: each image is decoded, resized, cropped and normalized into one
 *     sample (batch dim 1) of the input.
 *
 * Preprocessing spec (`preprocess`, required when any entry is an image,
 * refused when none is; NULL or "" is none): comma-separated key=value items
 * (details and the exact resize/crop arithmetic in io/image.h):
 *   resize=S        shorter side to S (bilinear, aspect kept); or resize=HxW
 *   crop=S|HxW      centre crop (default: the input's H, W)
 *   mean=a:b:c      subtracted after scaling (per channel, in the output
 *                   channel order, so b:g:r for order=bgr); one value: all
 *   std=a:b:c       divided by after the mean (nonzero); one value: all
 *   scale=F         pixel values (0..255) are multiplied by F first (default 1/255)
 *   order=rgb|bgr   channel order (default rgb)
 *   layout=nchw|nhwc (default nchw)
 * The final H, W must match the input's static dims (or fill symbolic ones).
 * Image inputs must be float32, rank 4, with 3 (or symbolic) channels.
 *
 * Each batch gives one float/int tensor per model input, in the dtype the
 * model declares (npy data must already have it; images give float32), with
 * leading batch dim: a sample without it (rank one less than the input) gets
 * a batch dim of 1. Shapes are checked against the input's known dims.
 */
#ifndef PR_IO_CALIB_DATA_H
#define PR_IO_CALIB_DATA_H

#include <stdint.h>

#include "core/err.h"
#include "precis/precis.h"

/* What the model expects for one input. dims[i] < 0: any size. */
typedef struct pr_calib_input {
    const char *name;
    precis_dtype dtype;
    int rank;
    int64_t dims[PRECIS_MAX_RANK];
} pr_calib_input;

typedef struct pr_calib_source pr_calib_source;

/* Open a source and list its batches (no sample is decoded yet). Checks the
 * layout of the folder / list against the inputs; errors name the file. */
precis_status pr_calib_source_open(const char *path, const char *preprocess,
                                   const pr_calib_input *inputs, int n_inputs,
                                   pr_calib_source **out, pr_err *e);
void pr_calib_source_close(pr_calib_source *s);

/* Number of batches (files or list lines). */
int pr_calib_source_batches(const pr_calib_source *s);

/* 64-bit hash of the data: FNV-1a 64 over every file's bytes (each
 * followed by its length) in batch order, then the normalized preprocessing
 * spec (pr_image_prep_normalize; empty for .npy data). File names and
 * locations do not enter it. Computed at open (reads the files once,
 * without decoding; a file that cannot be read fails the open). */
uint64_t pr_calib_source_hash(const pr_calib_source *s);

/* Load batch i (0-based): tensors[k] for inputs[k], new handles owned by the
 * caller (precis_tensor_destroy). Errors name the file. */
precis_status pr_calib_source_load(pr_calib_source *s, int i, precis_tensor **tensors,
                                   pr_err *e);

/* Samples in batch i (its leading dim), known after load; before: -1. */
int64_t pr_calib_source_samples(const pr_calib_source *s, int i);

#endif
