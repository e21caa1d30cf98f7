/* The evaluation set of a sensitivity analysis: the eval data streamed batch
 * by batch with the fp32 engine's outputs as reference (kept in memory up to
 * a budget, recomputed beyond it), and running one candidate engine over it
 * into per-output metric sums, optionally observing one tensor of its to
 * compare it with the same tensor of another engine (the local error). */
#ifndef PR_SENS_EVAL_H
#define PR_SENS_EVAL_H

#include <stdbool.h>

#include "io/calib_data.h"
#include "runtime/engine.h"
#include "sens/sens_metrics.h"

#define PR_SENS_MAX_IO 64

typedef struct pr_sens_eval {
    precis_ctx *ctx;
    pr_calib_source *src;
    int batches;
    int64_t samples;                   /* dim 0 of the first input, summed over batches */
    precis_engine *ref;                /* the fp32 engine: the reference outputs */
    precis_context *refc;
    int ni, no;
    const char *names[PR_SENS_MAX_IO]; /* input names, in the reference engine's order */
    /* compared outputs: the float32 ones (engine output index) and what applies to each */
    int n_cmp;
    int cmp[PR_SENS_MAX_IO];
    bool kl[PR_SENS_MAX_IO], top1[PR_SENS_MAX_IO], decided, counted;
    /* per batch: inputs then reference outputs (ni + no handles), or NULL when not kept */
    precis_tensor ***keep;
    size_t kept_bytes;
    precis_tensor *tmp[2 * PR_SENS_MAX_IO]; /* the current batch when not kept */
    /* when set, pr_sens_eval_run also hands every batch's candidate and
     * reference outputs (all no of them, engine order) to hook */
    precis_status (*hook)(void *user, int batch, int n, const precis_tensor *const *cand,
                          const precis_tensor *const *ref);
    void *hook_user;
} pr_sens_eval;

/* Builds the fp32 reference engine from o (precision fp32, no precision
 * rules) and opens eval_data against its inputs (at most max_batches > 0). */
precis_status pr_sens_eval_open(pr_sens_eval *ev, precis_ctx *ctx, const char *onnx_path,
                                const precis_build_options *o, const char *eval_data,
                                int max_batches);
void pr_sens_eval_close(pr_sens_eval *ev);

/* Inputs and reference outputs of batch b: (*set)[0..ni) the inputs, then
 * the no reference outputs; valid until the next call. */
precis_status pr_sens_eval_batch(pr_sens_eval *ev, int b, precis_tensor ***set);

/* One tensor to compare between two engines: `capture` copies it (as plain
 * float32: int8 dequantized, NHWC reordered) during a run of the first
 * engine, then `capture` false adds the energies of the second engine's
 * value of it against the copy. target: the tensor's index in the observed
 * engine's graph (-1: none). */
typedef struct pr_sens_local {
    const precis_engine *e;
    int target;
    bool capture;
    float *ref, *cur;
    int64_t n, cap_ref, cap_cur;
    double sig, noise;
    bool seen, mismatch;
} pr_sens_local;

/* Runs engine e over every batch and adds each compared output's metrics to
 * acc[k] (n_cmp accumulators). e NULL: the reference engine against itself.
 * With cap: every batch first runs cap_engine with cap->capture (its
 * observer target set by the caller), then e with the observer cmp. */
precis_status pr_sens_eval_run(pr_sens_eval *ev, precis_engine *e, pr_sens_acc *acc,
                               precis_engine *cap_engine, pr_sens_local *cap,
                               pr_sens_local *cmp);

/* The observer of a pr_sens_local (pr_context_observe). */
precis_status pr_sens_local_observe(void *user, const pr_graph *g, int t, const pr_buf *v,
                                    pr_err *e);
void pr_sens_local_free(pr_sens_local *l);

#endif
