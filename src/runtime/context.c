/* precis_context: runs an engine's steps on one thread. Activations live in
 * one arena per context, planned per input-shape signature (mem_plan.c):
 * the first run with new input shapes allocates each tensor on the heap and
 * records the sizes; later runs with those shapes place every tensor at its
 * planned offset (a tensor whose size still differs falls back to the heap). */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/infer.h"
#include "runtime/batch_split.h"
#include "runtime/engine.h"
#include "runtime/tactics.h"
#include "runtime/exec.h"
#include "runtime/mem_plan.h"
#include "runtime/tensor.h"

#define MAX_IO 64

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/qblock.h"

enum { V_NONE = 0, V_VIEW = 1, V_HEAP = 2, V_ARENA = 3 };

struct precis_context {
    const precis_engine *e;
    pr_cpu_exec x;
    pr_buf *vals;
    unsigned char *state;
    int64_t *sym;
    /* memory plan for one input-shape signature */
    int64_t *sig;
    int sig_len;
    bool planned;
    size_t *size; /* per tensor: bytes seen in the planning run (0: not planned) */
    size_t *offset;
    unsigned char *arena;
    size_t arena_bytes, arena_cap;
    /* profiling */
    int profiling, prof_runs;
    double *prof;
    /* observer (calibration): every computed tensor, right after its step */
    pr_observe_fn observe;
    void *observe_user;
    /* backend "cuda": the executor that runs the steps (cuda_context.c) */
    pr_cuda_ctx *cuda;
    /* threads of this context's kernels (the engine's; 1 in a worker) */
    int threads;
    /* batch splitting (batch_split.h): a worker context runs one sample of
     * its parent's batch (inputs are not checked against the built range);
     * the parent keeps one worker per thread and its verdict for the
     * input-shape signature it last saw */
    bool is_worker;
    const pr_split_info *patches; /* a worker's: its parent's split */
    precis_context **workers;
    int n_workers, split_used;
    int64_t *split_sig;
    int split_sig_len, split_state; /* 1 splittable, -1 not, 0 unknown */
    pr_split_info split;
    /* auto mode: the first six runs of a signature alternate whole and
     * split (runs 1-2 warm up: planning, the workers' first runs), runs 3-6
     * are timed, and the faster way by the minimum of its two timings is
     * kept (one timing each picked either way from process to process on a
     * loaded machine: PP-OCR cls int8 b8, NOTES.md session 10) */
    int split_trial, split_pick; /* pick: 1 split, -1 whole, 0 undecided */
    bool time_whole;
    double split_ms[2]; /* whole, split */
    double run_t0;
    /* output shapes of every step for the planned signature, when no output
     * shape depends on a value computed at run time (shapes_static()): the
     * runs after the planning one skip shape inference */
    pr_tinfo *tcache;
    bool tcache_ok;
    int shapes_static; /* 1 yes, -1 no, 0 not known yet */
};

void pr_context_observe(precis_context *c, pr_observe_fn fn, void *user) {
    c->observe = fn;
    c->observe_user = user;
}

precis_status precis_context_create(precis_ctx *ctx, const precis_engine *e,
                                    precis_context **out) {
    if (!ctx || !e || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_context_create: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    const pr_graph *g = e->g;
    precis_context *c = calloc(1, sizeof *c);
    size_t nt = (size_t)g->n_tensors + 1;
    if (!c) return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    c->e = e;
    c->vals = calloc(nt, sizeof *c->vals);
    c->state = calloc(nt, 1);
    c->sym = malloc(((size_t)g->n_syms + 1) * sizeof *c->sym);
    c->size = calloc(nt, sizeof *c->size);
    c->offset = calloc(nt, sizeof *c->offset);
    c->prof = calloc((size_t)e->n_steps + 1, sizeof *c->prof);
    c->tcache = calloc(nt, sizeof *c->tcache);
    if (!c->vals || !c->state || !c->sym || !c->size || !c->offset || !c->prof || !c->tcache) {
        precis_context_destroy(c);
        return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    }
    c->x.num_threads = e->num_threads;
    c->threads = e->num_threads;
#ifdef PRECIS_HAVE_CUDA
    if (e->cuda) {
        precis_status st = pr_cuda_ctx_create(e, &c->cuda, &ctx->err);
        if (st) {
            precis_context_destroy(c);
            return st;
        }
        *out = c;
        return PRECIS_OK;
    }
#endif
#ifdef PRECIS_HAVE_DNNL /* without oneDNN no kernel uses a stream */
    c->x.dnnl_stream = pr_dnnl_stream_create(&ctx->err);
    if (!c->x.dnnl_stream) {
        precis_context_destroy(c);
        return ctx->err.status ? ctx->err.status : PRECIS_ERR_INTERNAL;
    }
#endif
    *out = c;
    return PRECIS_OK;
}

void precis_context_destroy(precis_context *c) {
    if (!c) return;
#ifdef PRECIS_HAVE_CUDA
    pr_cuda_ctx_destroy(c->cuda);
#endif
    if (c->x.dnnl_stream) pr_dnnl_stream_destroy(c->x.dnnl_stream);
    for (int i = 0; i < c->n_workers; i++) precis_context_destroy(c->workers[i]);
    free(c->workers);
    free(c->split_sig);
    pr_split_info_free(&c->split);
    free(c->x.scratch);
    pr_cpu_exec_free_subs(&c->x);
    free(c->vals);
    free(c->state);
    free(c->sym);
    free(c->sig);
    free(c->size);
    free(c->offset);
    free(c->arena);
    free(c->prof);
    free(c->tcache);
    free(c);
}

void precis_context_set_profiling(precis_context *c, int on) {
    if (!c) return;
    c->profiling = on;
    c->prof_runs = 0;
    memset(c->prof, 0, (size_t)c->e->n_steps * sizeof *c->prof);
#ifdef PRECIS_HAVE_CUDA
    if (c->cuda) pr_cuda_ctx_set_profiling(c->cuda, on);
#endif
}
double precis_context_step_seconds(const precis_context *c, int i) {
#ifdef PRECIS_HAVE_CUDA
    if (c && c->cuda) return pr_cuda_ctx_step_seconds(c->cuda, i);
#endif
    return c && i >= 0 && i < c->e->n_steps ? c->prof[i] : 0;
}
int precis_context_profiled_runs(const precis_context *c) {
#ifdef PRECIS_HAVE_CUDA
    if (c && c->cuda) return pr_cuda_ctx_profiled_runs(c->cuda);
#endif
    return c ? c->prof_runs : 0;
}
size_t precis_context_arena_bytes(const precis_context *c) {
#ifdef PRECIS_HAVE_CUDA
    if (c && c->cuda) return pr_cuda_ctx_arena_bytes(c->cuda);
#endif
    if (c && c->split_used) { /* the workers' arenas */
        size_t sum = 0;
        for (int w = 0; w < c->n_workers; w++) sum += c->workers[w]->arena_bytes;
        return sum;
    }
    return c ? c->arena_bytes : 0;
}
double precis_context_device_ms(const precis_context *c) {
#ifdef PRECIS_HAVE_CUDA
    if (c && c->cuda) return pr_cuda_ctx_device_ms(c->cuda);
#endif
    return 0;
}
int precis_context_used_cuda_graph(const precis_context *c) {
#ifdef PRECIS_HAVE_CUDA
    if (c && c->cuda) return pr_cuda_ctx_used_graph(c->cuda);
#endif
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Does the input-shape signature match *sig? Stores it there if not. */
static bool same_signature(precis_context *c, const pr_graph *g, int64_t **sig, int *sig_len) {
    int len = 0;
    for (int k = 0; k < g->n_inputs; k++) len += 1 + c->vals[g->inputs[k]].rank;
    int64_t tmp[1024];
    if (len > 1024) return false;
    int p = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const pr_buf *b = &c->vals[g->inputs[k]];
        tmp[p++] = b->rank;
        for (int d = 0; d < b->rank; d++) tmp[p++] = b->dims[d];
    }
    if (*sig && *sig_len == len && memcmp(*sig, tmp, (size_t)len * sizeof *tmp) == 0) return true;
    free(*sig);
    *sig = malloc((size_t)(len ? len : 1) * sizeof *tmp);
    *sig_len = *sig ? len : 0;
    if (*sig) memcpy(*sig, tmp, (size_t)len * sizeof *tmp);
    return false;
}

/* After a planning run: place every recorded tensor in the arena. */
static void make_plan(precis_context *c) {
    const precis_engine *e = c->e;
    const pr_graph *g = e->g;
    pr_mem_item *it = calloc((size_t)g->n_tensors + 1, sizeof *it);
    if (!it) return;
    for (int t = 0; t < g->n_tensors; t++) {
        it[t].alias = -1;
        if (!c->size[t] || e->first_def[t] < 0) continue;
        it[t].bytes = c->size[t];
        it[t].first = e->first_def[t];
        it[t].last = e->last_use[t] < e->first_def[t] ? e->first_def[t] : e->last_use[t];
    }
    /* in-place: output 0 reuses an input whose last reader is this step */
    for (int k = 0; k < e->n_steps; k++) {
        const pr_step *s = &e->steps[k];
        if (!s->impl || !s->impl->inplace_input) continue;
        const pr_node *n = &g->nodes[s->node];
        int i = s->impl->inplace_input(g, n);
        if (i < 0 || i >= n->n_inputs || n->outputs[0] < 0) continue;
        int ti = n->inputs[i], to = n->outputs[0];
        if (ti < 0 || !it[ti].bytes || it[ti].bytes != it[to].bytes || e->last_use[ti] != k)
            continue;
        bool other_use = false; /* the same tensor also feeds another input */
        for (int j = 0; j < n->n_inputs; j++) other_use |= j != i && n->inputs[j] == ti;
        if (!other_use) it[to].alias = ti;
    }
    size_t total = pr_mem_plan(it, g->n_tensors, c->offset);
    free(it);
    if (total == SIZE_MAX) return;
    if (total > c->arena_cap) {
        free(c->arena);
        c->arena = aligned_alloc(64, (total + 63) & ~(size_t)63);
        c->arena_cap = c->arena ? total : 0;
        if (!c->arena) return;
    }
    c->arena_bytes = total;
    c->planned = true;
}

static precis_status check_profile(const precis_engine *e, const pr_buf *b, int t, pr_err *err) {
    for (int k = 0; k < e->n_prof; k++) {
        const pr_profile *p = &e->prof[k];
        if (p->tensor != t) continue;
        for (int d = 0; d < p->rank && d < b->rank; d++)
            if (b->dims[d] < p->min[d] || b->dims[d] > p->max[d])
                return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                               "input '%s': dim %d is %lld, outside the built range [%lld, %lld]",
                               e->g->tensors[t].name, d, (long long)b->dims[d],
                               (long long)p->min[d], (long long)p->max[d]);
    }
    return PRECIS_OK;
}

static void release(precis_context *c, int t) {
    if (c->state[t] == V_HEAP) pr_buf_free(&c->vals[t]);
    c->state[t] = V_NONE;
}

/* The inputs of step k and its outputs, allocated (arena or heap), into io. */
typedef struct step_bufs {
    const pr_buf *in[MAX_IO];
    pr_buf *outp[MAX_IO];
} step_bufs;

static precis_status step_io(precis_context *c, int k, bool planning, bool cached, step_bufs *io,
                             pr_err *err) {
    const precis_engine *e = c->e;
    const pr_graph *g = e->g;
    precis_status st;
    const pr_step *s = &e->steps[k];
    const pr_node *n = &g->nodes[s->node];
    const pr_buf **in = io->in;
    pr_buf **outp = io->outp;
    pr_tinfo tin[MAX_IO], tout[MAX_IO];
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return pr_errf(err, PRECIS_ERR_UNSUPPORTED, "node '%s': too many inputs/outputs", n->name);
    for (int j = 0; j < n->n_inputs; j++) {
        int t = n->inputs[j];
        in[j] = NULL;
        if (t >= 0 && !c->state[t]) {
            st = pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                         "node '%s' (%s): input '%s' has no value", n->name, n->op_type,
                         g->tensors[t].name);
            return st;
        }
        if (t >= 0) in[j] = &c->vals[t];
        if (!cached) pr_tinfo_from_buf(&tin[j], in[j]);
    }
    if (cached) {
        for (int j = 0; j < n->n_outputs; j++)
            tout[j] = n->outputs[j] >= 0 ? c->tcache[n->outputs[j]] : (pr_tinfo){.rank = -1};
    } else {
        if ((st = pr_infer_step_outputs(g, n, tin, tout, err))) return st;
        for (int j = 0; planning && j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) {
                c->tcache[n->outputs[j]] = tout[j];
                c->tcache[n->outputs[j]].value = NULL;
            }
    }
    for (int j = 0; j < n->n_outputs; j++) {
        int t = n->outputs[j];
        outp[j] = NULL;
        if (t < 0) continue;
        const pr_tinfo *ti = &tout[j];
        pr_buf *b = &c->vals[t];
        release(c, t);
        int64_t ne = ti->rank >= 0 ? pr_numel(ti->rank, ti->dims) : -1;
        size_t need = ne >= 0 ? (size_t)ne * pr_dtype_size(ti->dtype) : 0;
        if (!planning && ne >= 0 && c->offset[t] != SIZE_MAX && c->size[t] == need &&
            ti->dtype != PRECIS_UNDEFINED) {
            b->dtype = ti->dtype;
            b->rank = ti->rank;
            memcpy(b->dims, ti->dims, (size_t)ti->rank * sizeof(int64_t));
            b->numel = ne;
            b->nbytes = need;
            b->data = c->arena + c->offset[t];
            c->state[t] = V_ARENA;
        } else {
            if (ti->dtype == PRECIS_UNDEFINED || ne < 0) {
                st = pr_errf(err, PRECIS_ERR_INTERNAL,
                             "node '%s' (%s): could not determine the shape of output '%s'",
                             n->name, n->op_type, g->tensors[t].name);
                return st;
            }
            if ((st = pr_buf_alloc(b, ti->dtype, ti->rank, ti->dims, g->tensors[t].name,
                                   err)))
                return st;
            c->state[t] = V_HEAP;
            if (planning) c->size[t] = need;
        }
        outp[j] = b;
    }
    return PRECIS_OK;
}

/* Whether every step's output shapes follow from its input shapes and the
 * graph's constants alone: every input that sets an output shape by its
 * values (Reshape's shape, Slice's bounds, Expand, Tile, Pad, Resize, Range,
 * TopK's k, ...) is a constant or computed from shapes only (Shape/Size and
 * what follows from them and constants: yolov8n's anchors, PP-OCR cls's
 * Reshape), and no op sizes its output by the data (NonZero). Then one
 * signature always gives the same shapes. */
static bool shapes_static(const precis_engine *e) {
    const pr_graph *g = e->g;
    /* from_shapes[t]: t's value depends on the input shapes only */
    bool *from_shapes = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *from_shapes);
    if (!from_shapes) return false;
    for (int t = 0; t < g->n_tensors; t++) from_shapes[t] = (g->tensors[t].flags & PR_T_INIT) != 0;
    bool ok = true;
    for (int k = 0; ok && k < e->n_steps; k++) {
        const pr_node *n = &g->nodes[e->steps[k].node];
        int lo = 1, hi = 0; /* the inputs whose values set shapes */
        switch (n->op) {
        case PR_OP_NonZero: ok = false; continue;
        case PR_OP_ConstantOfShape: case PR_OP_Range: lo = 0, hi = n->n_inputs - 1; break;
        case PR_OP_Reshape: case PR_OP_Expand: case PR_OP_Tile: case PR_OP_TopK:
        case PR_OP_Upsample: case PR_OP_OneHot: case PR_OP_Split: case PR_OP_Squeeze:
        case PR_OP_Unsqueeze: case PR_OP_ReduceMean: case PR_OP_ReduceSum: case PR_OP_ReduceMax:
        case PR_OP_ReduceMin: case PR_OP_ReduceProd: case PR_OP_ReduceL1: case PR_OP_ReduceL2:
        case PR_OP_ReduceLogSum: case PR_OP_ReduceLogSumExp: case PR_OP_ReduceSumSquare:
            hi = 1;
            break;
        case PR_OP_Slice: hi = 4; break;
        case PR_OP_Resize: case PR_OP_Pad: hi = 3; break;
        default: break;
        }
        for (int i = lo; i <= hi && i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && !from_shapes[n->inputs[i]]) ok = false;
        bool all = n->n_inputs > 0;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && !from_shapes[n->inputs[i]]) all = false;
        if (n->op == PR_OP_Shape || n->op == PR_OP_Size) all = true;
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) from_shapes[n->outputs[j]] = all;
    }
    free(from_shapes);
    return ok;
}

/* ------------------------------------------------------ batch splitting */

/* PRECIS_BATCH_SPLIT: 0 off, 1 always where allowed, unset: timed choice. */
static int split_mode(void) {
    const char *v = getenv("PRECIS_BATCH_SPLIT");
    return v && v[0] == '0' ? 0 : v && v[0] == '1' ? 1 : 2;
}

int precis_context_split_workers(const precis_context *c) { return c ? c->split_used : 0; }

const char *precis_context_split_note(const precis_context *c) {
    if (!c || c->split_used || c->split_state == 0) return "";
    if (c->split_state > 0 && c->split_pick < 0) return c->split.why; /* timed: whole won */
    if (c->split_state > 0) return "";
    return c->split.why;
}

/* One worker's share: samples w, w + T, ... of the batch in c->vals, each
 * run on its own context, outputs copied into their slice of out. */
static precis_status split_worker(precis_context *c, precis_context *wk, precis_ctx *wctx, int w,
                                  int T, precis_tensor **out) {
    const pr_graph *g = c->e->g;
    const pr_split_info *si = &c->split;
    precis_tensor views[MAX_IO];
    const precis_tensor *vin[MAX_IO];
    const char *names[MAX_IO];
    precis_tensor *res[MAX_IO] = {0};
    for (int64_t smp = w; smp < si->n; smp += T) {
        for (int k = 0; k < g->n_inputs; k++) {
            const pr_buf *b = &c->vals[g->inputs[k]];
            size_t slice = b->nbytes / (size_t)si->n;
            views[k].b = *b;
            views[k].b.dims[0] = 1;
            views[k].b.numel = b->numel / si->n;
            views[k].b.nbytes = slice;
            views[k].b.data = (char *)b->data + (size_t)smp * slice;
            vin[k] = &views[k];
            names[k] = g->tensors[g->inputs[k]].name;
        }
        precis_status st = precis_context_run(wctx, wk, g->n_inputs, names, vin, res);
        for (int k = 0; !st && k < g->n_outputs; k++) {
            const pr_buf *r = &res[k]->b;
            size_t slice = out[k]->b.nbytes / (size_t)si->n;
            bool same = r->dtype == out[k]->b.dtype && r->rank == out[k]->b.rank &&
                        r->nbytes == slice && r->dims[0] == 1 &&
                        !memcmp(r->dims + 1, out[k]->b.dims + 1,
                                (size_t)(r->rank - 1) * sizeof(int64_t));
            if (!same)
                st = pr_errf(&wctx->err, PRECIS_ERR_INTERNAL,
                             "batch split: output '%s' of one sample has another shape",
                             g->tensors[g->outputs[k]].name);
            else if (slice)
                memcpy((char *)out[k]->b.data + (size_t)smp * slice, r->data, slice);
        }
        for (int k = 0; k < g->n_outputs; k++) precis_tensor_destroy(res[k]), res[k] = NULL;
        if (st) return st;
    }
    return PRECIS_OK;
}

/* The tactics key of the split choice at T threads for the current input
 * signature ("batch.split tT d0 d1 ..."); false when it does not fit. */
static bool split_key(const precis_context *c, int T, char *tk, size_t cap) {
    int tl = snprintf(tk, cap, "batch.split t%d", T);
    for (int i = 0; i < c->split_sig_len && tl > 0 && (size_t)tl + 24 < cap; i++)
        tl += snprintf(tk + tl, cap - (size_t)tl, " %lld", (long long)c->split_sig[i]);
    return tl > 0 && (size_t)tl + 24 < cap;
}

/* Runs the batch split per sample when batch_split.h allows it: the status,
 * or -1 when the run is not split (the caller runs it whole). A split run
 * that fails is not an error: the signature is marked unsplittable and the
 * caller runs the batch whole. */
static int run_split(precis_ctx *ctx, precis_context *c, precis_tensor **outputs) {
    const precis_engine *e = c->e;
    const pr_graph *g = e->g;
    int T = c->threads;
    int mode = e->untimed ? 0 : split_mode();
    if (!mode || c->cuda || T < 1 || g->n_inputs > MAX_IO || g->n_outputs > MAX_IO) return -1;
    if (!same_signature(c, g, &c->split_sig, &c->split_sig_len) || !c->split_state) {
        const pr_buf *in[MAX_IO];
        for (int k = 0; k < g->n_inputs; k++) in[k] = &c->vals[g->inputs[k]];
        pr_split_info_free(&c->split);
        c->split_state = pr_batch_split_check(e, in, &c->split) ? 1 : -1;
        c->split_trial = c->split_pick = 0;
        c->split_ms[0] = c->split_ms[1] = INFINITY;
        if (c->split_state > 0 && c->split.n < T) {
            c->split_state = -1;
            snprintf(c->split.why, sizeof c->split.why, "batch %lld is below the %d threads",
                     (long long)c->split.n, T);
        }
    }
    if (c->split_state < 0) return -1;
    char tk[256];
    if (mode == 2 && !c->split_pick) { /* a choice the plan recorded (tactics.h) */
        int chosen = split_key(c, T, tk, sizeof tk) ? pr_tactics_get(e->tactics, tk) : -1;
        if (chosen >= 0) {
            c->split_pick = chosen ? 1 : -1;
            if (c->split_pick < 0)
                snprintf(c->split.why, sizeof c->split.why,
                         "whole was faster when the plan was timed");
        }
    }
    int trial = -1; /* the split run of the trial this is (1, 3, 5) */
    if (mode == 2 && !c->split_pick) {
        int r = c->split_trial++;
        if (r % 2 == 0) {
            c->time_whole = r > 0;
            return -1;
        }
        trial = r;
    }
    if (mode == 2 && c->split_pick < 0) return -1;
    double t0 = now();
    if (c->n_workers < T) {
        precis_context **nw = realloc(c->workers, (size_t)T * sizeof *nw);
        if (!nw) return -1;
        c->workers = nw;
        for (; c->n_workers < T; c->n_workers++) {
            if (precis_context_create(ctx, e, &nw[c->n_workers])) {
                pr_err_clear(&ctx->err); /* the batch runs whole */
                return -1;
            }
            nw[c->n_workers]->is_worker = true;
            nw[c->n_workers]->threads = 1;
            nw[c->n_workers]->x.num_threads = 1;
        }
    }
    precis_ctx *wctx[64];
    precis_status wst[64] = {0};
    if (T > 64) return -1;
    int made = 0;
    for (; made < T; made++)
        if (!(wctx[made] = precis_ctx_create())) break;
    precis_status st = made < T ? PRECIS_ERR_OOM : PRECIS_OK;
    for (int k = 0; !st && k < g->n_outputs; k++)
        st = pr_tensor_new(c->split.out_dtype[k], c->split.out_rank[k], c->split.out_dims[k],
                           g->tensors[g->outputs[k]].name, &outputs[k], &ctx->err);
    for (int w = 0; w < T; w++) {
        precis_context_set_profiling(c->workers[w], c->profiling);
        c->workers[w]->patches = &c->split;
    }
    if (!st) {
#pragma omp parallel for num_threads(T) schedule(static, 1)
        for (int w = 0; w < T; w++) wst[w] = split_worker(c, c->workers[w], wctx[w], w, T, outputs);
        for (int w = 0; w < T && !st; w++) st = wst[w];
    }
    for (int w = 0; w < made; w++) precis_ctx_destroy(wctx[w]);
    if (st) {
        for (int k = 0; k < g->n_outputs; k++) precis_tensor_destroy(outputs[k]), outputs[k] = NULL;
        pr_err_clear(&ctx->err);
        c->split_state = -1;
        snprintf(c->split.why, sizeof c->split.why, "a per-sample run failed");
        return -1;
    }
    if (c->profiling) { /* worker step times, averaged over the parallel workers */
        for (int w = 0; w < T; w++)
            for (int k = 0; k < e->n_steps; k++) c->prof[k] += c->workers[w]->prof[k] / T;
        c->prof_runs++;
    }
    c->split_used = T;
    if (trial > 1) c->split_ms[1] = fmin(c->split_ms[1], 1e3 * (now() - t0));
    if (trial == PR_SPLIT_TRIAL_RUNS - 1) {
        c->split_pick = c->split_ms[1] < c->split_ms[0] ? 1 : -1;
        if (split_key(c, T, tk, sizeof tk)) pr_tactics_put(e->tactics, tk, c->split_pick > 0);
        if (c->split_pick < 0)
            snprintf(c->split.why, sizeof c->split.why,
                     "whole was faster here (%.3f ms vs %.3f ms split, min of 2 each, timed on the first runs)",
                     c->split_ms[0], c->split_ms[1]);
    }
    return PRECIS_OK;
}

precis_status precis_context_run(precis_ctx *ctx, precis_context *c, int n_inputs,
                                 const char *const *names, const precis_tensor *const *inputs,
                                 precis_tensor **outputs) {
    if (!ctx || !c || (n_inputs > 0 && (!names || !inputs)) || !outputs)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_context_run: NULL argument");
    pr_err_clear(&ctx->err);
    pr_err *err = &ctx->err;
    const precis_engine *e = c->e;
    pr_graph *g = e->g;
    precis_status st = PRECIS_OK;
    for (int k = 0; k < g->n_outputs; k++) outputs[k] = NULL;
    memset(c->state, 0, (size_t)g->n_tensors);
    for (int i = 0; i < g->n_syms; i++) c->sym[i] = -1;
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *x = &g->tensors[t];
        if (!(x->flags & PR_T_INIT)) continue;
        pr_buf *b = &c->vals[t];
        b->dtype = x->dtype;
        b->rank = x->rank;
        memcpy(b->dims, x->dims, sizeof b->dims);
        b->numel = pr_numel(x->rank, x->dims);
        b->data = x->data;
        b->nbytes = x->nbytes;
        c->state[t] = V_VIEW;
    }
    if (c->is_worker && c->patches) /* shape constants folded at the parent's batch */
        for (int i = 0; i < c->patches->n_patches; i++)
            c->vals[c->patches->patch_tensor[i]].data = c->patches->patch_value[i];
    for (int i = 0; i < n_inputs; i++) {
        int t = pr_graph_find_tensor(g, names[i] ? names[i] : "");
        if (t < 0 || !(g->tensors[t].flags & PR_T_INPUT)) {
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG, "'%s' is not an input of the model",
                         names[i] ? names[i] : "(null)");
            goto fail;
        }
        if (c->state[t]) {
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG, "input '%s' given twice", names[i]);
            goto fail;
        }
        if (!inputs[i]) {
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG, "input '%s' is NULL", names[i]);
            goto fail;
        }
        if (!c->is_worker) { /* a worker's sample comes from a checked batch */
            if ((st = pr_check_input(g, &g->tensors[t], &inputs[i]->b, c->sym, err))) goto fail;
            if ((st = check_profile(e, &inputs[i]->b, t, err))) goto fail;
        }
        c->vals[t] = inputs[i]->b;
        c->state[t] = V_VIEW;
    }
    for (int k = 0; k < g->n_inputs; k++)
        if (!c->state[g->inputs[k]]) {
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG, "missing input '%s'",
                         g->tensors[g->inputs[k]].name);
            goto fail;
        }
#ifdef PRECIS_HAVE_CUDA
    if (c->cuda) { /* the GPU executor runs every step */
        st = pr_cuda_ctx_run(c->cuda, c->vals, outputs, err);
        memset(c->state, 0, (size_t)g->n_tensors);
        return st;
    }
#endif
    c->split_used = 0;
    c->run_t0 = now();
    if (!c->is_worker && !c->observe) {
        int r = run_split(ctx, c, outputs);
        if (r >= 0) {
            memset(c->state, 0, (size_t)g->n_tensors);
            return (precis_status)r;
        }
    }
    for (int k = 0; c->observe && k < g->n_inputs; k++)
        if ((st = c->observe(c->observe_user, g, g->inputs[k], &c->vals[g->inputs[k]], err)))
            goto fail;
    bool planning = !same_signature(c, g, &c->sig, &c->sig_len) || !c->planned;
    if (planning) {
        c->planned = false;
        c->tcache_ok = false;
        memset(c->size, 0, (size_t)g->n_tensors * sizeof *c->size);
    }
    if (!c->shapes_static) c->shapes_static = shapes_static(e) ? 1 : -1;
    bool cached = c->tcache_ok;
    omp_set_num_threads(c->threads);
    c->x.num_threads = c->threads;

    step_bufs io[PR_CPU_BLOCK_MAX];
    for (int k = 0; k < e->n_steps;) {
        const pr_step *s = &e->steps[k];
        /* a fused block runs its members at once (qblock.h); an observer
         * (calibration, per-layer comparisons) sees every member's output */
        const int len = s->block && s->block_len > 1 && !c->observe ? s->block_len : 1;
        for (int m = 0; m < len; m++)
            if ((st = step_io(c, k + m, planning, cached, &io[m], err))) goto fail;
        double t0 = c->profiling ? now() : 0;
        if (len > 1) {
            pr_kernel ks[PR_CPU_BLOCK_MAX];
            for (int m = 0; m < len; m++) {
                const pr_node *n = &g->nodes[e->steps[k + m].node];
                ks[m] = (pr_kernel){g, n, n->n_inputs, io[m].in, n->n_outputs, io[m].outp, err,
                                    c->threads};
            }
            st = pr_cpu_block_run(s->block, ks, &c->x);
        } else {
            const pr_node *n = &g->nodes[s->node];
            pr_kernel kk = {g, n, n->n_inputs, io[0].in, n->n_outputs, io[0].outp, err,
                            c->threads};
            st = s->impl ? s->impl->run(s->state, &kk, &c->x) : pr_ref_table[n->op](&kk);
        }
        if (st) goto fail;
        if (c->profiling) c->prof[k] += now() - t0;
        for (int m = 0; m < len; m++) {
            const pr_node *n = &g->nodes[e->steps[k + m].node];
            for (int j = 0; c->observe && j < n->n_outputs; j++)
                if (io[m].outp[j] &&
                    (st = c->observe(c->observe_user, g, n->outputs[j], io[m].outp[j], err)))
                    goto fail;
            /* free what no later step reads */
            for (int j = 0; j < n->n_inputs; j++) {
                int t = n->inputs[j];
                if (t >= 0 && e->last_use[t] >= k && e->last_use[t] < k + len &&
                    c->state[t] != V_VIEW)
                    release(c, t);
            }
        }
        k += len;
    }
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (!c->state[t]) {
            st = pr_errf(err, PRECIS_ERR_INTERNAL, "output '%s' was not computed",
                         g->tensors[t].name);
            goto fail;
        }
        const pr_buf *src = &c->vals[t];
        if ((st = pr_tensor_new(src->dtype, src->rank, src->dims, g->tensors[t].name,
                                &outputs[k], err)))
            goto fail;
        if (src->nbytes) memcpy(outputs[k]->b.data, src->data, src->nbytes);
    }
    if (c->profiling) c->prof_runs++;
    for (int t = 0; t < g->n_tensors; t++) release(c, t);
    if (planning) make_plan(c);
    if (planning && c->planned && c->shapes_static > 0) c->tcache_ok = true;
    if (c->time_whole) { /* batch split's timed choice */
        c->split_ms[0] = fmin(c->split_ms[0], 1e3 * (now() - c->run_t0));
        c->time_whole = false;
    }
    return PRECIS_OK;
fail:
    for (int t = 0; t < g->n_tensors; t++) release(c, t);
    for (int k = 0; k < g->n_outputs; k++) {
        precis_tensor_destroy(outputs[k]);
        outputs[k] = NULL;
    }
    return st;
}
