/* oneDNN (2.6, C API) glue shared by the CPU backend's dnnl impls
 * (dnnl_conv.c, dnnl_matmul.c, and the INT8 dnnl_qconv.c, dnnl_qmatmul.c):
 * the engine, streams, status messages, memory-desc and post-op helpers, the
 * INT8 epilogue (pr_dnnl_qepi), one-time weight reorders, and a per-state
 * cache of primitives keyed by concrete shape.
 *
 * Without oneDNN (PRECIS_HAVE_DNNL undefined) the five impls still exist but
 * support nothing (dnnl_common.c defines them), and pr_dnnl_stream_create()
 * fails, so callers need no #ifdef of their own (the context only skips
 * creating a stream).
 *
 * Threads: oneDNN (OpenMP build) fixes the thread count of a primitive when it
 * is created (omp_get_max_threads() of the creating thread), so primitives are
 * created with the thread count of the run that uses them and the cache key
 * includes it. */
#ifndef PR_BACKENDS_CPU_DNNL_COMMON_H
#define PR_BACKENDS_CPU_DNNL_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/cpu.h"

extern const pr_cpu_impl pr_cpu_impl_dnnl_conv;   /* Conv, FusedConv (2-D, rank 4) */
extern const pr_cpu_impl pr_cpu_impl_dnnl_deconv; /* ConvTranspose (2-D, rank 4) */
extern const pr_cpu_impl pr_cpu_impl_dnnl_matmul; /* MatMul, Gemm, FusedMatMul */
extern const pr_cpu_impl pr_cpu_impl_dnnl_qconv;   /* QConv (INT8, 2-D, rank 4) */
extern const pr_cpu_impl pr_cpu_impl_dnnl_qmatmul; /* QMatMul (INT8) */

/* The oneDNN state of one execution context (pr_cpu_exec's dnnl_stream): a
 * dnnl_stream_t on the CPU engine and the memory objects of every primitive
 * entry the context has run, created on its first run and re-pointed only
 * when a buffer moves (saves ~0.2 us per argument per step). NULL with e set
 * when oneDNN is missing or fails. */
void *pr_dnnl_stream_create(pr_err *e);
void pr_dnnl_stream_destroy(void *stream);
/* Whether oneDNN's effective ISA includes AMX (after the engine's ISA guard,
 * dnnl_common.c); false without oneDNN. */
bool pr_dnnl_uses_amx(void);

#ifdef PRECIS_HAVE_DNNL
#include <pthread.h>

#include <dnnl.h>

#include "ir/act.h"

/* The process-wide CPU engine, created once (thread-safe); NULL with e set
 * when creation failed. */
dnnl_engine_t pr_dnnl_engine(pr_err *e);
/* "invalid arguments" ... for a dnnl_status_t. */
const char *pr_dnnl_status_str(dnnl_status_t s);
/* PRECIS_OK for dnnl_success; else sets e to "<what>: oneDNN <status>" and
 * returns PRECIS_ERR_UNSUPPORTED (unimplemented), PRECIS_ERR_OOM (out of
 * memory) or PRECIS_ERR_INTERNAL. */
precis_status pr_dnnl_check(dnnl_status_t s, pr_err *e, const char *what);
/* Whether oneDNN runs bf16 convolutions and matmuls natively here (checked
 * once by creating small primitive descriptors; reference kernels do not
 * count). */
bool pr_dnnl_bf16_ok(void);

/* dnnl_f32 / dnnl_bf16 for float32 / bfloat16; dnnl_data_type_undef else. */
dnnl_data_type_t pr_dnnl_dt(pr_dtype dt);
/* As pr_dnnl_dt, and dnnl_s8 / dnnl_u8 for int8 / uint8. */
dnnl_data_type_t pr_dnnl_qdt(pr_dtype dt);
/* Row-major (plain) desc of rank 1..12. */
dnnl_status_t pr_dnnl_md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims,
                               dnnl_data_type_t dt);
/* Rank-4 activation N,C,H,W in the physical layout of a tensor (pr_layout). */
dnnl_status_t pr_dnnl_md_act4(dnnl_memory_desc_t *md, const int64_t *nchw, dnnl_data_type_t dt,
                              int layout);
/* A post-op chain under construction. oneDNN 2.6's jit kernels keep one
 * eltwise injector per algorithm, so two eltwise post-ops of the same
 * algorithm with different alpha/beta silently compute both with the first
 * one's parameters (measured: linear(2), linear(0.5) gives 4x; relu(0.1),
 * relu(0) leaks). The builder picks an equivalent encoding that does not
 * collide (relu(0) as clip_v2(0, inf) or clip; clip_v2 as clip; a scale
 * linear(s) as pow(s, 1)) and fails with dnnl_unimplemented when none is
 * left; supports() runs the same construction to refuse such chains.
 * Callers build a chain with pref 0, then again with pref 1 (which moves
 * relu/clip_v2/linear out of the way of a later act that has no
 * alternative, e.g. Relu then LeakyRelu). */
#define PR_DNNL_MAX_ELT 16
typedef struct pr_dnnl_po {
    dnnl_post_ops_t po;
    int pref; /* 1: try the alternative encodings first (set after init) */
    int n_elt;
    dnnl_alg_kind_t alg[PR_DNNL_MAX_ELT];
    float alpha[PR_DNNL_MAX_ELT], beta[PR_DNNL_MAX_ELT];
} pr_dnnl_po;

dnnl_status_t pr_dnnl_po_init(pr_dnnl_po *p);
void pr_dnnl_po_destroy(pr_dnnl_po *p);
/* act (nothing for PR_ACT_NONE) */
dnnl_status_t pr_dnnl_po_act(pr_dnnl_po *p, const pr_act *act);
/* x * s */
dnnl_status_t pr_dnnl_po_scale(pr_dnnl_po *p, float s);
dnnl_status_t pr_dnnl_po_sum(pr_dnnl_po *p);
/* dst := scale * (dst's old contents read as dt) + ...; dt undef: dst's type */
dnnl_status_t pr_dnnl_po_sum2(pr_dnnl_po *p, float scale, dnnl_data_type_t dt);
/* binary post-op; *idx: its position (for DNNL_ARG_ATTR_MULTIPLE_POST_OP) */
dnnl_status_t pr_dnnl_po_binary(pr_dnnl_po *p, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *md,
                                int *idx);
/* p (zeroed or initialised) := act, then with a residual sum and act2,
 * trying both preferences. */
dnnl_status_t pr_dnnl_po_epilogue(pr_dnnl_po *p, const pr_act *act, bool residual,
                                  const pr_act *act2);
/* Whether act, then (with a residual) sum and act2, make a valid chain. */
bool pr_dnnl_epilogue_ok(const pr_act *act, bool residual, const pr_act *act2);

/* ------------------------------------------------- INT8 epilogue (QConv,
 * QMatMul): R = act2(act(acc * oscale + bias) + real Z), Y = R or
 * saturate(round_half_even(R / y_scale)).
 *
 * oneDNN 2.x adds the f32 bias to the s32 accumulator before the output
 * scales (measured), so callers pass bias / (x_scale * w_scale[c]). The
 * residual Z, by the dtypes of Z and Y:
 *   SUM      same element size (int8/uint8 into int8/uint8, f32 into f32):
 *            Z is (copied) in dst's buffer, a sum post-op (scale z_scale,
 *            data type Z's) reads it;
 *   DEQUANT  int8/uint8 Z, f32 Y: z_scale * Z is written into dst, then sum;
 *   BINARY   f32 Z, int8/uint8 Y: a binary-add post-op reads Z.
 * folded: with an int8/uint8 Y and act/act2 positively homogeneous (none,
 * Relu, LeakyRelu, Clip with its bounds scaled), 1/y_scale goes into the
 * output scales and the sum scale instead of a last linear post-op. */
typedef enum { PR_QZ_NONE, PR_QZ_SUM, PR_QZ_DEQUANT, PR_QZ_BINARY } pr_qz_mode;

typedef struct pr_dnnl_qepi {
    pr_act act, act2;
    pr_qz_mode z_mode;
    pr_dtype z_dt, y_dt;
    float z_scale, y_scale; /* y_scale 1 for a float32 Y */
    bool folded;
} pr_dnnl_qepi;

/* From n's attributes (act, act2, z_scale, y_type, y_scale) and the dtypes
 * of Z (PRECIS_UNDEFINED: none) and Y. false: not expressible here (unknown
 * activation, act2 without Z, other dtypes, bad scales). */
bool pr_dnnl_qepi_init(pr_dnnl_qepi *q, const pr_node *n, pr_dtype z_dt, pr_dtype y_dt);
/* p (zeroed or initialised) := the chain, trying both preferences; z_md:
 * Z's desc for PR_QZ_BINARY (its post-op index in *z_idx, else -1). */
dnnl_status_t pr_dnnl_qepi_chain(pr_dnnl_po *p, const pr_dnnl_qepi *q,
                                 const dnnl_memory_desc_t *z_md, int *z_idx);
/* Whether the chain can be made (supports()). */
bool pr_dnnl_qepi_ok(const pr_dnnl_qepi *q);
/* Factor for the output scales: 1/y_scale when folded, else 1. */
float pr_dnnl_qepi_oscale(const pr_dnnl_qepi *q);
/* Whether output 0 may share Z's buffer. */
bool pr_dnnl_qepi_z_inplace(const pr_dnnl_qepi *q);
/* Before executing: Z into Y's buffer as the chain expects (SUM: copy
 * unless shared; DEQUANT: z_scale * Z). Z and Y have the same numel and
 * layout. */
void pr_dnnl_qepi_prep(const pr_dnnl_qepi *q, const pr_buf *Z, pr_buf *Y, int threads);

/* Attributes with the user scratchpad mode and post-ops po (may be NULL). */
dnnl_status_t pr_dnnl_attr(dnnl_primitive_attr_t *attr, const_dnnl_post_ops_t po);

/* 64-byte-aligned allocation (free with free()); NULL on OOM. */
void *pr_dnnl_alloc(size_t bytes);
/* One-time reorder src (src_md) -> dst (dst_md), e.g. weights into the
 * layout a primitive wants. Uses its own stream. */
precis_status pr_dnnl_reorder(const dnnl_memory_desc_t *src_md, const void *src,
                              const dnnl_memory_desc_t *dst_md, void *dst, pr_err *e);

/* Saves the calling thread's OpenMP thread count and sets n (primitive
 * creation); pr_dnnl_threads_restore() puts the saved count back. */
int pr_dnnl_threads_set(int n);
void pr_dnnl_threads_restore(int saved);

/* ------------------------------------------------------ primitive cache */

#define PR_DNNL_KEY_MAX 40
#define PR_DNNL_MAX_ARGS 10
#define PR_DNNL_CACHE_CAP 128 /* entries kept per state; more are made per run */

/* One primitive for one concrete shape. args[i]/mds[i]: the memory arguments
 * (DNNL_ARG_*) and their descs, without the scratchpad; what pointer goes
 * with each is up to the impl. */
typedef struct pr_dnnl_entry {
    int64_t key[PR_DNNL_KEY_MAX];
    int nkey;
    dnnl_primitive_t prim;
    size_t scratch_bytes;
    int nargs;
    int args[PR_DNNL_MAX_ARGS];
    dnnl_memory_desc_t mds[PR_DNNL_MAX_ARGS];
    void *wei;                     /* weights in the layout this primitive wants */
    bool own_wei;                  /* wei is this entry's (else the state's shared copy) */
    int64_t out_dims[PR_MAX_RANK]; /* output dims the primitive computes */
    char impl[96];                 /* oneDNN implementation name */
    int flags;                     /* the owning impl's (dnnl_qconv.c: late epilogue) */
    /* staged execution (the Winograd path of dnnl_wino.c): stage[0] reorders
     * the input into a staging buffer, stage[1] (or NULL) the residual into
     * the staged output, prim runs on the staging buffers, stage[2] reorders
     * the output back. stage_bytes: staged input, staged output; the buffers
     * come from pr_dnnl_scratch_after(). */
    struct pr_dnnl_entry *stage[3];
    size_t stage_bytes[2];
    struct pr_dnnl_entry *next;
} pr_dnnl_entry;

typedef precis_status (*pr_dnnl_create_fn)(void *ctx, const int64_t *key, int nkey,
                                           pr_dnnl_entry *ent, pr_err *e);

typedef struct pr_dnnl_cache {
    pthread_mutex_t mu;
    bool mu_init;
    pr_dnnl_entry *primary; /* set in prepare, read without the lock */
    pr_dnnl_entry *list;    /* the other entries, under mu */
    int count;
} pr_dnnl_cache;

precis_status pr_dnnl_cache_init(pr_dnnl_cache *c, pr_err *e);
/* Creates an entry for key with create(ctx, ...) (prim NULL on entry) and
 * makes it the primary one (prepare). */
precis_status pr_dnnl_cache_prime(pr_dnnl_cache *c, const int64_t *key, int nkey,
                                  pr_dnnl_create_fn create, void *ctx, pr_err *e);
/* The entry for key: the primary one, a cached one, or a new one (created
 * under the lock). When the cache is full the new entry is not kept:
 * *temp is set and the caller frees it with pr_dnnl_entry_free() after use. */
precis_status pr_dnnl_cache_get(pr_dnnl_cache *c, const int64_t *key, int nkey,
                                pr_dnnl_create_fn create, void *ctx, pr_dnnl_entry **out,
                                bool *temp, pr_err *e);
void pr_dnnl_entry_free(pr_dnnl_entry *ent);
void pr_dnnl_cache_destroy(pr_dnnl_cache *c);

/* Creates the primitive of an entry from pd (records the scratchpad size and
 * the implementation name). pd stays the caller's. */
precis_status pr_dnnl_entry_set_prim(pr_dnnl_entry *ent, const_dnnl_primitive_desc_t pd, pr_err *e);
/* Adds a memory argument to an entry. */
void pr_dnnl_entry_arg(pr_dnnl_entry *ent, int arg, const dnnl_memory_desc_t *md);

/* Weights reordered once into the layout of the first primitive that uses
 * them; primitives wanting another layout (oneDNN picks by shape, e.g. f32
 * brgconv for spatial sizes up to 7 and from 16) share a copy per layout,
 * made under the cache lock. */
#define PR_DNNL_WEI_ALT 8
typedef struct pr_dnnl_weights {
    dnnl_memory_desc_t md; /* layout of data */
    void *data;            /* NULL until the first primitive */
    dnnl_memory_desc_t user_md;
    const void *user; /* the graph's weights (user_md), during prepare only,
                       * unless the impl keeps its own copy (then other
                       * layouts are made from it, not from data) */
    int n_alt;        /* other layouts */
    dnnl_memory_desc_t alt_md[PR_DNNL_WEI_ALT];
    void *alt[PR_DNNL_WEI_ALT];
} pr_dnnl_weights;

/* Sets ent->wei/own_wei for a primitive wanting `want`: the shared copy
 * (made from user on first use) or one in that layout (made from it; owned
 * by the entry when PR_DNNL_WEI_ALT layouts exist already). */
precis_status pr_dnnl_weights_for(pr_dnnl_weights *w, const dnnl_memory_desc_t *want,
                                  pr_dnnl_entry *ent, pr_err *e);
void pr_dnnl_weights_free(pr_dnnl_weights *w);

/* `bytes` of scratch (64-byte aligned) beyond what pr_dnnl_execute(ent, ...)
 * takes from pr_cpu_scratch(x) for the primitive's scratchpad, valid through
 * that call (it asks for less than this grew the scratch to); NULL on OOM. */
void *pr_dnnl_scratch_after(const pr_dnnl_entry *ent, pr_cpu_exec *x, size_t bytes);

/* Runs ent->prim on x's stream (a temporary one when x has none) with
 * ptrs[i] for ent->args[i] and scratch from pr_cpu_scratch(x). */
precis_status pr_dnnl_execute(const pr_dnnl_entry *ent, void *const *ptrs, pr_cpu_exec *x,
                              pr_err *e);

#endif /* PRECIS_HAVE_DNNL */

#endif
