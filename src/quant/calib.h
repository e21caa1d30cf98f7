/* Calibration statistics and calibrators for INT8 post-training quantization.
 *
 * One pass over the calibration data feeds every activation tensor's values
 * to pr_calib_add(); memory stays bounded whatever the data size: per tensor a
 * running min/max and a histogram of |x| with PR_CALIB_BINS bins over
 * [0, width * PR_CALIB_BINS]. The range starts at the first batch's max |x|
 * (width = that / PR_CALIB_BINS) and grows by doubling (pairs of bins merged
 * exactly) when a later value is larger, so no second pass is needed to fix
 * the range. Bin b holds |x| in (b * width, (b + 1) * width] (bin 0 also
 * holds the zeros): closed on the right, so the largest value of the first
 * batch lands in the last bin and merging a pair of bins gives exactly the
 * bin a single pass at the doubled width would have chosen, edge values
 * included (the bin is ceil(|x| / width) - 1 with a correctly rounded
 * division, and halving commutes with rounding). So the histogram depends
 * only on the values and on the width sequence, not on the batch split
 * once the final width is the same, nor on the thread count.
 *
 * A calibrator turns a tensor's statistics into the threshold amax (the real
 * value mapped to the largest quantized level):
 *   minmax      amax = max |x| seen
 *   entropy     TensorRT entropy-calibrator-2: over candidate thresholds i
 *               (bins [0, i), i from `levels` to PR_CALIB_BINS), reference
 *               distribution P = hist[0..i) with the outliers hist[i..] added
 *               to the last bin, candidate Q = P quantized to `levels` levels
 *               (merged, then expanded back over the non-zero bins of P),
 *               threshold = (i + 0.5) * width of the i minimizing KL(P || Q)
 *               (the first such i; i = PR_CALIB_BINS included; calib.c
 *               documents the details and the smoothing of Q).
 *   percentile  amax = the `percentile` (e.g. 99.99) percentile of |x|
 *               (upper edge of the bin where the cumulative count reaches it)
 *   mse         the threshold among the bin edges minimizing the expected
 *               squared error of quantizing the histogram to `levels` levels
 *               with clipping (bin centres as the values).
 * entropy, percentile and mse never return more than max |x| seen (a
 * threshold past it only wastes range): theirs is clamped to it.
 * `levels` is 128 for a signed int8 tensor (symmetric, scale = amax/127) and
 * 256 for a non-negative tensor stored as uint8 (scale = amax/255).
 *
 * The calibration cache (pr_calib_cache_save/load) is a text file holding the
 * key (what the statistics were computed from) and every tensor's statistics,
 * so a different calibrator re-derives thresholds without the data. Lines
 * (fields separated by one space, each line ending in '\n'):
 *   precis-calib 1
 *   model <16 hex>  graph <16 hex>  data <16 hex>  samples <N>   (one a line)
 *   preprocess "<string>"
 *   tensors <N>
 *   tensor "<name>" <min> <max> <count> <nonfinite> <width> <K> <bin>:<count> ...
 *   channels <C> <amax> ...   (optional, after its tensor line: per-channel max |x|)
 *   end
 * Strings are %-escaped ('%', '"', space and bytes outside 0x21..0x7e as
 * %XX); doubles are written with %.17g (exact round trip); the K pairs are
 * the non-zero bins in increasing order. calib_cache.c has the details.
 *
 * A pr_calib_stats is not thread-safe: one thread at a time adds to it
 * (pr_calib_add itself may use OpenMP threads inside).
 */
#ifndef PR_QUANT_CALIB_H
#define PR_QUANT_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define PR_CALIB_BINS 2048

typedef struct pr_calib_stats pr_calib_stats;

/* Statistics of one tensor (read-only view). */
typedef struct pr_calib_tensor {
    const char *name;
    double min, max;       /* over every value seen (NaN/inf are skipped and counted) */
    uint64_t count;        /* finite values seen */
    uint64_t nonfinite;    /* NaN / inf values skipped */
    double width;          /* bin width of hist (0 until a non-zero |x| is seen) */
    const uint64_t *hist;  /* PR_CALIB_BINS counts of |x| (all zeros: hist[0] counts them) */
    int64_t n_chan;        /* channels in chan_amax (the last axis); 0: none gathered */
    const float *chan_amax; /* max finite |x| per channel of the last axis (smoothing) */
} pr_calib_tensor;

pr_calib_stats *pr_calib_create(void);
void pr_calib_destroy(pr_calib_stats *s);

/* Index of the tensor named `name`, added (empty) if absent; -1 on OOM. */
int pr_calib_tensor_index(pr_calib_stats *s, const char *name, pr_err *e);
/* Index of `name` or -1. */
int pr_calib_find(const pr_calib_stats *s, const char *name);
int pr_calib_count(const pr_calib_stats *s);
/* View of tensor i (valid until the next add/index call). */
const pr_calib_tensor *pr_calib_get(const pr_calib_stats *s, int i);

/* Accumulate n float32 values into tensor i. May use OpenMP threads;
 * results do not depend on the thread count. */
precis_status pr_calib_add(pr_calib_stats *s, int i, const float *x, int64_t n, pr_err *e);

/* Accumulate the per-channel max |x| of n float32 values seen as rows of c
 * channels (the last axis) into tensor i; a tensor keeps one channel count
 * (another one is PRECIS_ERR_SHAPE). Non-finite values are skipped. */
precis_status pr_calib_add_channels(pr_calib_stats *s, int i, const float *x, int64_t n, int64_t c,
                                    pr_err *e);

typedef enum pr_calibrator {
    PR_CALIB_MINMAX = 0,
    PR_CALIB_ENTROPY,
    PR_CALIB_PERCENTILE,
    PR_CALIB_MSE
} pr_calibrator;

/* "minmax", "entropy", "percentile", "mse" -> *out; false if unknown. */
bool pr_calibrator_parse(const char *name, pr_calibrator *out);
const char *pr_calibrator_name(pr_calibrator c);

typedef struct pr_calib_cfg {
    pr_calibrator method;
    double percentile; /* for PR_CALIB_PERCENTILE, in (0, 100]; 0: 99.99 */
} pr_calib_cfg;

/* Threshold for tensor i quantized to `levels` levels (128 or 256; any of
 * 2..PR_CALIB_BINS is accepted). A tensor that saw only zeros (or nothing)
 * gives amax 0. entropy and mse cost O(PR_CALIB_BINS^2) (a few ms a tensor)
 * and may use OpenMP threads; the result does not depend on their number. */
precis_status pr_calib_amax(const pr_calib_stats *s, int i, const pr_calib_cfg *cfg, int levels,
                            double *amax, pr_err *e);

/* What the statistics were computed from. Two caches match when every field
 * is equal. Hashes are 64-bit, written as 16 hex digits. */
typedef struct pr_calib_key {
    uint64_t model;       /* the ONNX file's bytes */
    uint64_t graph;       /* the optimized graph the statistics name (tensor names, ops) */
    uint64_t data;        /* the calibration data's bytes (pr_calib_source_hash) */
    uint64_t samples;     /* number of calibration samples */
    const char *preprocess; /* the preprocessing spec ("" for .npy data) */
} pr_calib_key;

/* Write every tensor's statistics and the key (atomically: a temporary file
 * renamed into place). */
precis_status pr_calib_cache_save(const pr_calib_stats *s, const pr_calib_key *key,
                                  const char *path, pr_err *e);
/* Read a cache. With `expect` non-NULL, a key that differs is refused
 * (expect->graph 0: any graph; the caller checks the tensors it needs)
 * (PRECIS_ERR_INVALID_ARG) with a message naming what differs ("made for
 * another model", "another calibration data set (N samples, hash ...)",
 * "another preprocessing: '...' vs '...'"). A malformed file is
 * PRECIS_ERR_PARSE naming the line. *key_out (optional) gets the stored key
 * (its preprocess string lives in *out). */
precis_status pr_calib_cache_load(const char *path, const pr_calib_key *expect,
                                  pr_calib_stats **out, pr_calib_key *key_out, pr_err *e);

/* For pr_calib_cache_load: replace tensor i's statistics with v's (v->name
 * is ignored, v->hist and v->chan_amax copied). No validation: the caller
 * checked v. */
precis_status pr_calib_set(pr_calib_stats *s, int i, const pr_calib_tensor *v, pr_err *e);
/* A copy of str kept with the statistics (the cache's preprocessing string),
 * valid until pr_calib_destroy; NULL on OOM. pr_calib_preprocess gives it
 * back ("" when never set). */
const char *pr_calib_set_preprocess(pr_calib_stats *s, const char *str, pr_err *e);
const char *pr_calib_preprocess(const pr_calib_stats *s);

/* 64-bit FNV-1a over bytes, chained from h (start with PR_HASH_INIT). */
#define PR_HASH_INIT 0xcbf29ce484222325ull
uint64_t pr_hash64(uint64_t h, const void *p, size_t n);

#endif
