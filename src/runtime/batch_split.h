/* Batch splitting: running a batch of N samples as N runs of one sample.
 *
 * On the CPU the early layers of a CNN at batch 8 stream tens of MB per
 * step through memory (EfficientNet-Lite0's 112x112x96 expansions: 38 MB a
 * tensor), while one sample's activations stay in cache; and one sample per
 * thread parallelises better than splitting each small kernel over threads.
 * Measured before this existed (2 threads, Zen 5): EfficientNet-Lite0 b1 t1
 * 6.33 ms x 8 = 51 ms against 63 ms for the batch-8 run.
 *
 * It is only correct when no step mixes samples. pr_batch_split_check()
 * proves that for a plan and concrete input shapes: every input's dim 0 is
 * the same N > 1; shape inference over the steps twice, at N and at 1,
 * must give every activation dim 0 = N and 1 with the other dims equal
 * (which rejects constants folded at batch N, Reshapes that move the batch,
 * Concat/Split/Slice/Pad/Tile along it, reductions over it...), and every
 * step is an op known to treat dim 0 as independent samples, with its axis
 * not 0 where it has one (Softmax, LayerNorm, Transpose, Gather, ArgMax,
 * TopK, CumSum, reductions, per-axis quantization). Anything else: no.
 *
 * Values computed from the dims of activations (Shape, Size) and constants
 * are evaluated with the ref kernels at N and at 1: they may feed the shape
 * inputs of per-sample steps (Reshape, Expand, Slice, Resize, ...), and any
 * input where they are equal at N and at 1 (anchors, position ids).
 *
 * A Reshape whose shape constant was folded at batch N (shape[0] == N, the
 * data's dim 0 N) is accepted with that constant patched to 1 in the
 * workers, when nothing else reads the constant and the dims check holds
 * with the patch. */
#ifndef PR_RUNTIME_BATCH_SPLIT_H
#define PR_RUNTIME_BATCH_SPLIT_H

#include "runtime/engine.h"

/* The default (timed) mode's trial: the first PR_SPLIT_TRIAL_RUNS runs of an
 * input signature alternate whole and split (context.c); a caller timing a
 * context warms it up that many runs so its timings see the choice. */
#define PR_SPLIT_TRIAL_RUNS 6

typedef struct pr_split_info {
    int64_t n;              /* the batch */
    int n_outputs;          /* graph outputs, with their dims at batch n */
    pr_dtype *out_dtype;    /* malloc'd, n_outputs each */
    int *out_rank;
    int64_t (*out_dims)[PR_MAX_RANK];
    char why[160];          /* when not splittable: the first reason */
    int n_patches;          /* Reshape shape constants the workers read with [0] = 1 */
    int *patch_tensor;
    int64_t **patch_value;
} pr_split_info;

/* in: the values of the graph inputs (g->inputs order). Returns true and
 * fills info when the run may be split per sample; false with info->why set
 * otherwise. Never fails (an allocation failure answers false). */
bool pr_batch_split_check(const precis_engine *e, const pr_buf *const *in, pr_split_info *info);
void pr_split_info_free(pr_split_info *info);

#endif
