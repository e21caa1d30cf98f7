/* The CPU backend: fast kernels for the nodes of an optimized plan graph.
 *
 * Every kernel implementation ("impl") is a pr_cpu_impl. The engine asks the
 * impls in registry order (cpu_registry.c) whether they can run a node and
 * takes the first that says yes; a node no impl takes runs on its ref kernel.
 *
 * Contract for an impl:
 *   - supports() looks only at the graph: op, attributes, dtypes, ranks,
 *     which inputs are initializers (PR_T_INIT: data known at build time),
 *     and the physical layout of each tensor (g->tensors[t].layout).
 *   - prepare() runs once per node when an engine is built or loaded: pack or
 *     reorder weights, create oneDNN primitives for the node's shapes as known
 *     in the graph (dims may be symbolic: then create them lazily on first
 *     run, cached by shape under a lock). Never per run.
 *   - run() may be called by many execution contexts at once on the same
 *     state (one thread each): state is read-only after prepare, except for
 *     a shape cache guarded by a mutex. Per-call memory comes from the
 *     context: pr_cpu_scratch(). Outputs are allocated by the caller with the
 *     inferred logical dims; a rank-4 tensor with layout PR_LAYOUT_NHWC is
 *     stored N,H,W,C. Kernels use up to x->num_threads OpenMP threads.
 *   - In-place: an impl may declare that output 0 may share input i's buffer
 *     (inplace_input); the memory planner then may (not must) pass the same
 *     pointer for both. A kernel must be correct in both cases.
 *   - Float activations may be float32, bfloat16 or float16 (the precision
 *     pass chooses); initializers (weights, biases) stay in the model's dtype
 *     (float32) and are converted in prepare().
 */
#ifndef PR_BACKENDS_CPU_CPU_H
#define PR_BACKENDS_CPU_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/ref/ref.h"

typedef struct pr_cpu_features {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512dq;
    bool avx512_vnni, avx512_vbmi, avx512_bf16, avx512_fp16;
    bool amx_tile, amx_int8, amx_bf16;
    /* AMX advertised (cpuid leaf 7) but no palette table (leaf 0x1D): seen in a VM
     * whose cpuid stops at leaf 0x1C. oneDNN 2.6 sizes its tiles from that table
     * and faults there (SIGILL on its first tile instruction), so its ISA is capped
     * below AMX (dnnl_common.c); our own AMX code loads palette 1, whose shape the
     * architecture fixes, and runs. */
    bool amx_no_palette;
} pr_cpu_features;

/* Detected once (cpuid + OS support via xgetbv); thread-safe. The
 * environment variable PRECIS_CPU_ISA=scalar|avx2|avx512 caps what our own
 * kernels use (tests force the fallbacks with it). */
const pr_cpu_features *pr_cpu_features_get(void);
/* Short name of the best ISA level our kernels use: "avx512_fp16",
 * "avx512", "avx2" or "scalar". */
const char *pr_cpu_isa_name(void);
/* An A/B switch of a kernel path: on unless the environment sets `name` to
 * "0"; read once into *cache (a static int starting at -1). */
bool pr_cpu_switch_on(const char *name, int *cache);

/* Build-time settings every impl sees. */
typedef struct pr_cpu_cfg {
    int num_threads;            /* threads a run will use (>= 1) */
    struct pr_tactics *tactics; /* the engine's timed choices (runtime/tactics.h), or NULL */
    bool untimed;               /* choose without timing (the calibration engine: engine.h) */
} pr_cpu_cfg;

/* Per execution context (one thread): reused across runs. */
typedef struct pr_cpu_exec {
    int num_threads;
    void *dnnl_stream;    /* dnnl_stream_t of the context (NULL without oneDNN) */
    void *scratch;        /* grown by pr_cpu_scratch, 64-byte aligned */
    size_t scratch_bytes;
    /* per-thread execs of a fused block's parallel region (qblock.h), made
     * by its first run, freed by pr_cpu_exec_free_subs */
    struct pr_cpu_exec *subs;
    int n_subs;
} pr_cpu_exec;

/* At least `bytes` of 64-byte-aligned scratch, valid until the next call on
 * the same exec; NULL on OOM. */
void *pr_cpu_scratch(pr_cpu_exec *x, size_t bytes);

typedef struct pr_cpu_impl {
    const char *name; /* e.g. "dnnl.conv", "eltwise" */
    bool (*supports)(const pr_graph *g, const pr_node *n);
    /* Can this impl run n with its rank-4 activation inputs/outputs in NHWC?
     * (NULL: no; the layout pass keeps or reorders them to plain). */
    bool (*nhwc_ok)(const pr_graph *g, const pr_node *n);
    /* Input index whose buffer output 0 may reuse, or -1. NULL: -1. */
    int (*inplace_input)(const pr_graph *g, const pr_node *n);
    precis_status (*prepare)(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                             void **state, pr_err *e);
    precis_status (*run)(void *state, pr_kernel *k, pr_cpu_exec *x);
    /* What actually runs, for inspect (e.g. "brgconv:avx512_core_amx_bf16");
     * may return the impl name. NULL: the impl name. */
    const char *(*describe)(void *state);
    void (*destroy)(void *state);
} pr_cpu_impl;

/* The registry, in priority order (cpu_registry.c); entries may be NULL
 * (an impl not linked in). */
extern const pr_cpu_impl *const pr_cpu_impls[];
extern const int pr_cpu_num_impls;
/* First impl that supports n, or NULL (ref fallback). */
const pr_cpu_impl *pr_cpu_find_impl(const pr_graph *g, const pr_node *n);

#endif
