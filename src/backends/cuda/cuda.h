/* The CUDA backend: kernels for the nodes of an optimized plan graph on an
 * NVIDIA GPU (cuBLASLt for matrix products, cuDNN for convolutions, our own
 * kernels for the rest). Plain C: no CUDA type appears here (handles are
 * void *), so the engine and the executor include it without CUDA headers.
 *
 * Every kernel implementation ("impl") is a pr_cuda_impl, mirroring
 * pr_cpu_impl (backends/cpu/cpu.h). The engine asks the impls in registry
 * order (cuda_registry.c) whether they can run a node and takes the first
 * that says yes; a node no impl takes runs its ref kernel on the host, with
 * explicit copies around it (kernel string "ref(host)").
 *
 * Contract for an impl:
 *   - supports() looks only at the graph: op, attributes, dtypes, ranks and
 *     which inputs are initializers (PR_T_INIT); nhwc_ok() whether it also
 *     takes its rank-4 activations in NHWC (the layout pass asks; convs and
 *     what follows them go NHWC, where cuDNN's Tensor Core kernels are).
 *   - prepare() runs once per node when an engine is built or loaded: it
 *     converts and uploads the weights it packs (packs() says which inputs)
 *     and, where shapes are static, chooses algorithms by timing on the
 *     device through cfg->x. Never per run.
 *   - run() launches on x->stream and never synchronizes. Every buffer of k
 *     holds a DEVICE pointer (an input the impl packs has data NULL).
 *     Outputs are allocated by the caller with the inferred dims. run() may
 *     be called by many contexts at once on the same state (one thread
 *     each): state is read-only after prepare, except for a per-shape cache
 *     guarded by a mutex. While x->capturing (CUDA graph capture) run()
 *     must neither allocate nor synchronize: the same shapes ran before
 *     uncaptured, so every cache and buffer it needs exists.
 *   - Float activations may be float32, float16 or bfloat16 (the precision
 *     pass chooses); initializers stay in the model's dtype (float32) on the
 *     device unless the impl packs them.
 */
#ifndef PR_BACKENDS_CUDA_CUDA_H
#define PR_BACKENDS_CUDA_CUDA_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/ref/ref.h"

/* Per execution context (one thread, one stream); reused across runs. */
typedef struct pr_cuda_exec {
    void *stream;   /* cudaStream_t */
    void *lt;       /* cublasLtHandle_t */
    void *dnn;      /* cudnnHandle_t (bound to stream) */
    void *ws;       /* device workspace for cuBLASLt / cuDNN */
    size_t ws_bytes;
    void *scratch;  /* device scratch for one step (pr_cuda_scratch) */
    size_t scratch_bytes;
    bool capturing; /* inside a CUDA graph capture */
    int sm_count;
} pr_cuda_exec;

/* Create / free the stream, handles and a default workspace. */
precis_status pr_cuda_exec_init(pr_cuda_exec *x, pr_err *e);
void pr_cuda_exec_fini(pr_cuda_exec *x);
/* At least `bytes` of 256-byte-aligned device scratch, valid until the next
 * call on x (stream-ordered: fine to reuse for the next step). Grows only
 * outside a capture; NULL with e set when it cannot. */
void *pr_cuda_scratch(pr_cuda_exec *x, size_t bytes, pr_err *e);
/* Grow the library workspace to at least bytes (outside a capture). */
precis_status pr_cuda_workspace(pr_cuda_exec *x, size_t bytes, pr_err *e);

/* Build-time settings every impl sees. */
typedef struct pr_cuda_cfg {
    pr_cuda_exec *x; /* the engine's own exec, for uploads and timing at prepare */
    /* the timing cache (pr_cuda_tcache, cuda_tcache.h) or NULL: algorithm
     * choices are looked up there before timing and recorded after; an impl
     * keeps the pointer for the choices it makes at first run */
    void *tcache;
} pr_cuda_cfg;

typedef struct pr_cuda_impl {
    const char *name; /* e.g. "cublaslt.gemm", "cudnn.conv", "cu.binary" */
    bool (*supports)(const pr_graph *g, const pr_node *n);
    /* Can this impl run n with its rank-4 activations stored N,H,W,C
     * (g->tensors[t].layout == PR_LAYOUT_NHWC)? NULL: no (the layout pass
     * keeps them plain or inserts Reorders). */
    bool (*nhwc_ok)(const pr_graph *g, const pr_node *n);
    /* Does prepare() upload its own copy of input i (weights)? NULL: none. */
    bool (*packs)(const pr_graph *g, const pr_node *n, int i);
    /* Input index whose buffer output 0 may reuse, or -1. NULL: -1. */
    int (*inplace_input)(const pr_graph *g, const pr_node *n);
    precis_status (*prepare)(const pr_graph *g, const pr_node *n, const pr_cuda_cfg *cfg,
                             void **state, pr_err *e);
    precis_status (*run)(void *state, pr_kernel *k, pr_cuda_exec *x);
    /* What actually runs, e.g. "cublasLt fp16 tc bias+relu"; NULL: name. */
    const char *(*describe)(void *state);
    void (*destroy)(void *state);
} pr_cuda_impl;

extern const pr_cuda_impl *const pr_cuda_impls[];
extern const int pr_cuda_num_impls;
/* First impl that supports n, or NULL (ref on the host). */
const pr_cuda_impl *pr_cuda_find_impl(const pr_graph *g, const pr_node *n);

/* ------------------------------------------------------------ the device */

/* The GPU an engine runs on and the engine's device-resident data. */
typedef struct pr_cuda_dev pr_cuda_dev;

/* Opens device 0. No usable device: PRECIS_ERR_UNSUPPORTED with
 * "no CUDA device: <the CUDA error string>". */
precis_status pr_cuda_dev_open(pr_cuda_dev **out, pr_err *e);
void pr_cuda_dev_close(pr_cuda_dev *d);
/* "sm_90" (compute capability), "NVIDIA H100 80GB HBM3". */
const char *pr_cuda_dev_arch(const pr_cuda_dev *d);
const char *pr_cuda_dev_name(const pr_cuda_dev *d);
pr_cuda_exec *pr_cuda_dev_exec(pr_cuda_dev *d);
/* The timing cache file (precis_build_options.timing_cache) the device's
 * builds use: opened (refused when made for another GPU or other library
 * versions) and owned by d, saved by pr_cuda_dev_save_tcache and, for the
 * choices made at first runs, when d closes. NULL path: an in-memory cache
 * (the choices still travel with the plan: pr_cuda_dev_tcache_text). */
precis_status pr_cuda_dev_open_tcache(pr_cuda_dev *d, const char *path, pr_err *e);
/* A loaded plan's recorded choices (its precis.cuda_tcache text, NULL: none)
 * as d's cache, so the impls take them instead of timing again; *reused is
 * false (and the cache starts empty) when they were made on another GPU or
 * with other CUDA / cuBLASLt / cuDNN versions. Malformed text: an error. */
precis_status pr_cuda_dev_use_plan_tcache(pr_cuda_dev *d, const char *text, bool *reused,
                                          pr_err *e);
/* The choices this device's engines read or made, as the cache file's text
 * (malloc'd; NULL: out of memory or no cache). */
char *pr_cuda_dev_tcache_text(const pr_cuda_dev *d);
void *pr_cuda_dev_tcache(const pr_cuda_dev *d);
/* Writes the cache when it grew; *hits / *added (may be NULL) count the
 * choices reused and the new ones (pr_cuda_dev_tcache_counts). */
precis_status pr_cuda_dev_save_tcache(pr_cuda_dev *d, int *hits, int *added, pr_err *e);
void pr_cuda_dev_tcache_counts(const pr_cuda_dev *d, int *hits, int *added);
/* Upload every initializer of g with need[t] set (as stored: model dtype)
 * into one device block; pr_cuda_dev_init_ptr gives its device address
 * (NULL for tensors not uploaded). */
precis_status pr_cuda_dev_upload_inits(pr_cuda_dev *d, const pr_graph *g, const bool *need,
                                       pr_err *e);
void *pr_cuda_dev_init_ptr(const pr_cuda_dev *d, int tensor);

/* ------------------------------------------------------------ execution */

struct precis_engine;
typedef struct pr_cuda_ctx pr_cuda_ctx;

/* The CUDA executor behind a precis_context (cuda_context.c). */
precis_status pr_cuda_ctx_create(const struct precis_engine *e, pr_cuda_ctx **out, pr_err *err);
void pr_cuda_ctx_destroy(pr_cuda_ctx *c);
/* vals[t] for every graph input and initializer holds its host value
 * (checked against the graph by the caller); computes every graph output
 * into outputs[k] (new tensors). */
precis_status pr_cuda_ctx_run(pr_cuda_ctx *c, const pr_buf *vals, struct precis_tensor **outputs,
                              pr_err *err);
void pr_cuda_ctx_set_profiling(pr_cuda_ctx *c, int on);
double pr_cuda_ctx_step_seconds(const pr_cuda_ctx *c, int i);
int pr_cuda_ctx_profiled_runs(const pr_cuda_ctx *c);
size_t pr_cuda_ctx_arena_bytes(const pr_cuda_ctx *c);
/* 1 when the last run replayed (or captured) a CUDA graph. */
int pr_cuda_ctx_used_graph(const pr_cuda_ctx *c);
/* GPU milliseconds of the last run between the input upload and the output
 * download (CUDA events; host steps included when there are any). */
double pr_cuda_ctx_device_ms(const pr_cuda_ctx *c);

#endif
