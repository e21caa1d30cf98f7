/* precis_engine and precis_context internals. */
#ifndef PR_RUNTIME_ENGINE_H
#define PR_RUNTIME_ENGINE_H

#include "backends/cpu/cpu.h"
#include "backends/cuda/cuda.h"
#include "runtime/api.h"

typedef struct pr_step {
    int node;                  /* index in e->g->nodes */
    const pr_cpu_impl *impl;   /* cpu backend; NULL: the ref kernel */
    const pr_cuda_impl *cuda;  /* cuda backend; NULL: the ref kernel on the host */
    void *state;               /* of impl or cuda */
    const char *kernel;        /* arena string: "impl detail", "ref" or "ref(host)" */
    const char **origins;      /* arena: original node names */
    int n_origins;
    /* a fused block (backends/cpu/qblock.h) of steps [k, k + block_len):
     * its head k holds block and block_len; every member (the head too)
     * has block_head k + 1 (0: in no block) */
    struct pr_cpu_block *block;
    int block_len, block_head;
} pr_step;

/* Shape range of one graph input (dims -1 where the input dim is static). */
typedef struct pr_profile {
    int tensor;
    int rank;
    int64_t min[PR_MAX_RANK], opt[PR_MAX_RANK], max[PR_MAX_RANK];
} pr_profile;

struct precis_engine {
    pr_graph *g;
    pr_step *steps;
    int n_steps;
    int num_threads;
    const char *precision, *backend, *target, *requires, *shapes; /* arena strings */
    pr_profile *prof;
    int n_prof;
    int *first_def, *last_use; /* per tensor: step producing it / last step reading it */
    precis_node_info *nodes;   /* per original node (prec_report.c), arena */
    int n_nodes;
    pr_cuda_dev *cuda;         /* backend "cuda": the device and the uploaded weights */
    struct pr_tactics *tactics; /* timed choices, saved in the plan (tactics.h) */
    bool untimed; /* int8 calibration's FP32 engine: no timed choice (direct convolutions,
                   * batches run whole), so its statistics -- and the scales -- do not
                   * depend on timings: the same data gives the same plan on every build */
};

/* Called by a context after every step for each output it computed (and
 * for the graph inputs before the first step), with the tensor's index in
 * e->g and its value (in the tensor's layout); a non-OK status stops the
 * run. Set to NULL to stop observing. */
typedef precis_status (*pr_observe_fn)(void *user, const pr_graph *g, int tensor,
                                       const pr_buf *value, pr_err *e);
void pr_context_observe(precis_context *c, pr_observe_fn fn, void *user);

/* precision int8: calibrate (or read the cache), insert QDQ, export it when
 * asked, and with `lower` lower it to the int8 ops (the CPU backend; ref
 * runs the QDQ form); g is the optimized graph (build_int8.c). `cuda`: every
 * activation int8 (no uint8), as the CUDA backend's IMMA GEMMs need. */
/* qtype: PRECIS_INT8, or PRECIS_FLOAT8E4M3FN (precision fp8: the linear layers'
 * activations and weights e4m3 per tensor, scale amax / 448; quantize.h). */
precis_status pr_build_int8(precis_ctx *ctx, const char *onnx_path, const precis_build_options *o,
                            pr_graph *g, pr_dtype qtype, bool lower, bool cuda, pr_err *err);

/* precis_build, and the FP32 engine int8 calibration runs (calibration:
 * the options' precision rules shape fusion as in the int8 build, every
 * node computes in float32). */
precis_status pr_build_engine(precis_ctx *ctx, const char *onnx_path,
                              const precis_build_options *o, bool calibration,
                              precis_engine **out);

/* prec_report.c: the rules of the build options (rules file, then
 * layer_precision, then layer_output_type), the per-node report of a built
 * engine (stored as plan metadata; strict: a request not met is an error),
 * and reading it back from a loaded plan. */
struct pr_prec_rules;
precis_status pr_engine_rules(const precis_build_options *o, struct pr_prec_rules *rs, pr_err *e);
precis_status pr_prec_report_build(precis_engine *e, bool strict, pr_err *err);
precis_status pr_prec_report_parse(precis_engine *e, pr_err *err);

/* Parse "name:MIN/OPT/MAX,..." against g's inputs into *prof (malloc'd). */
precis_status pr_parse_profile(const pr_graph *g, const char *spec, pr_profile **prof, int *n,
                               pr_err *e);

#endif
