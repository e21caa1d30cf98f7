/* The CUDA executor behind a precis_context of a "cuda" engine.
 *
 * One stream per context. Inputs are copied host -> pinned staging -> device
 * in one transfer, every device step is launched on the stream, outputs come
 * back device -> pinned staging, and the run synchronizes once at the end.
 * Activations live in one device arena planned per input-shape signature
 * (runtime/mem_plan.h, as the CPU context does): the first run with new
 * shapes allocates each tensor stream-ordered (cudaMallocAsync) and records
 * the sizes, later runs place every tensor at its planned offset.
 *
 * Steps with no CUDA kernel run the ref kernel on the host: their inputs are
 * copied back (a synchronization), their outputs stay on the host and are
 * copied up when a device step reads them. Integer vectors that shape
 * inference needs (shape arithmetic) are read back the same way.
 *
 * CUDA graphs: when the first run of a signature touched the host for
 * nothing, the second run is captured whole (input copy, every step, output
 * copy) and instantiated, and every later run with the same shapes replays
 * it: one launch. PRECIS_CUDA_GRAPHS=0 in the environment turns this off. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/cuda_util.h"
#include "ir/infer.h"
#include "runtime/engine.h"
#include "runtime/exec.h"
#include "runtime/mem_plan.h"
#include "runtime/tensor.h"

#define MAX_IO 64

enum { S_NONE = 0, S_VIEW = 1, S_OWN = 2, S_ARENA = 3 };

struct pr_cuda_ctx {
    const precis_engine *e;
    pr_cuda_exec x;
    pr_buf *dv, *hv;          /* per tensor: device / host value */
    unsigned char *ds, *hs;   /* their states */
    int64_t *sig;
    int sig_len;
    bool planned;
    size_t *size, *offset;    /* device memory plan */
    unsigned char *arena;
    size_t arena_bytes, arena_cap;
    unsigned char *pin;       /* pinned staging: inputs, then outputs */
    size_t pin_cap;
    unsigned char *dev_in;
    size_t dev_in_cap;
    size_t *in_off, *out_off; /* per graph input / output: offset in the staging */
    size_t in_total;
    pr_buf *out_meta;         /* per graph output: dtype and dims of the captured run */
    cudaEvent_t ev[2];        /* after the input upload, before the output download */
    double device_ms;         /* GPU time between them in the last run */
    cudaGraphExec_t gexec;
    int graph_state;          /* 0 not tried, 1 ready, -1 not for this signature */
    bool graphs_on, touched_host, used_graph;
    int profiling, prof_runs;
    double *prof;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t al256(size_t v) { return (v + 255) & ~(size_t)255; }

/* Large host copies (to and from the pinned staging) on all cores. */
static void par_memcpy(void *dst, const void *src, size_t n) {
    const size_t chunk = (size_t)1 << 20;
    if (n < 4 * chunk) {
        memcpy(dst, src, n);
        return;
    }
    long nc = (long)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nc; i++) {
        size_t off = (size_t)i * chunk, len = off + chunk > n ? n - off : chunk;
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
}

static void drop_graph(pr_cuda_ctx *c) {
    if (c->gexec) cudaGraphExecDestroy(c->gexec);
    c->gexec = NULL;
    c->graph_state = 0;
}

void pr_cuda_ctx_destroy(pr_cuda_ctx *c) {
    if (!c) return;
    if (c->x.stream) cudaStreamSynchronize((cudaStream_t)c->x.stream);
    drop_graph(c);
    for (int i = 0; i < 2; i++)
        if (c->ev[i]) cudaEventDestroy(c->ev[i]);
    if (c->arena) cudaFree(c->arena);
    if (c->dev_in) cudaFree(c->dev_in);
    if (c->pin) cudaFreeHost(c->pin);
    pr_cuda_exec_fini(&c->x);
    free(c->dv);
    free(c->hv);
    free(c->ds);
    free(c->hs);
    free(c->sig);
    free(c->size);
    free(c->offset);
    free(c->in_off);
    free(c->out_off);
    free(c->out_meta);
    free(c->prof);
    free(c);
}

precis_status pr_cuda_ctx_create(const precis_engine *e, pr_cuda_ctx **out, pr_err *err) {
    pr_err *e_ = err;
    *out = NULL;
    const pr_graph *g = e->g;
    size_t nt = (size_t)g->n_tensors + 1;
    pr_cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) return pr_errf(e_, PRECIS_ERR_OOM, "out of memory");
    c->e = e;
    c->dv = calloc(nt, sizeof *c->dv);
    c->hv = calloc(nt, sizeof *c->hv);
    c->ds = calloc(nt, 1);
    c->hs = calloc(nt, 1);
    c->size = calloc(nt, sizeof *c->size);
    c->offset = calloc(nt, sizeof *c->offset);
    c->in_off = calloc((size_t)g->n_inputs + 1, sizeof *c->in_off);
    c->out_off = calloc((size_t)g->n_outputs + 1, sizeof *c->out_off);
    c->out_meta = calloc((size_t)g->n_outputs + 1, sizeof *c->out_meta);
    c->prof = calloc((size_t)e->n_steps + 1, sizeof *c->prof);
    if (!c->dv || !c->hv || !c->ds || !c->hs || !c->size || !c->offset || !c->in_off ||
        !c->out_off || !c->out_meta || !c->prof) {
        pr_cuda_ctx_destroy(c);
        return pr_errf(e_, PRECIS_ERR_OOM, "out of memory");
    }
    precis_status st = pr_cuda_exec_init(&c->x, err);
    for (int i = 0; !st && i < 2; i++) {
        cudaError_t r = cudaEventCreate(&c->ev[i]);
        if (r != cudaSuccess) st = pr_cu_fail(err, r, "cudaEventCreate");
    }
    if (st) {
        pr_cuda_ctx_destroy(c);
        return st;
    }
    const char *env = getenv("PRECIS_CUDA_GRAPHS");
    c->graphs_on = !(env && !strcmp(env, "0"));
    *out = c;
    return PRECIS_OK;
}

void pr_cuda_ctx_set_profiling(pr_cuda_ctx *c, int on) {
    c->profiling = on;
    c->prof_runs = 0;
    memset(c->prof, 0, (size_t)c->e->n_steps * sizeof *c->prof);
}
double pr_cuda_ctx_step_seconds(const pr_cuda_ctx *c, int i) {
    return i >= 0 && i < c->e->n_steps ? c->prof[i] : 0;
}
int pr_cuda_ctx_profiled_runs(const pr_cuda_ctx *c) { return c->prof_runs; }
size_t pr_cuda_ctx_arena_bytes(const pr_cuda_ctx *c) { return c->arena_bytes; }
int pr_cuda_ctx_used_graph(const pr_cuda_ctx *c) { return c->used_graph; }
double pr_cuda_ctx_device_ms(const pr_cuda_ctx *c) { return c->device_ms; }

/* Does the input-shape signature match the planned one? Stores it if not. */
static bool same_signature(pr_cuda_ctx *c, const pr_graph *g, const pr_buf *vals) {
    int len = 0;
    for (int k = 0; k < g->n_inputs; k++) len += 1 + vals[g->inputs[k]].rank;
    int64_t tmp[1024];
    if (len > 1024) return false;
    int p = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const pr_buf *b = &vals[g->inputs[k]];
        tmp[p++] = b->rank;
        for (int d = 0; d < b->rank; d++) tmp[p++] = b->dims[d];
    }
    if (c->sig && c->sig_len == len && memcmp(c->sig, tmp, (size_t)len * sizeof *tmp) == 0)
        return true;
    free(c->sig);
    c->sig = malloc((size_t)(len ? len : 1) * sizeof *tmp);
    c->sig_len = c->sig ? len : 0;
    if (c->sig) memcpy(c->sig, tmp, (size_t)len * sizeof *tmp);
    return false;
}

static void set_meta(pr_buf *b, pr_dtype dt, int rank, const int64_t *dims) {
    b->dtype = dt;
    b->rank = rank;
    if (rank > 0) memcpy(b->dims, dims, (size_t)rank * sizeof(int64_t));
    b->numel = pr_numel(rank, dims);
    b->nbytes = (size_t)b->numel * pr_dtype_size(dt);
}

/* Device storage for tensor t (meta already in dv[t]): its arena slot when
 * planned for this size, else stream-ordered memory (recorded when planning). */
static precis_status dev_alloc(pr_cuda_ctx *c, int t, bool planning, pr_err *e) {
    precis_status st = PRECIS_OK;
    pr_buf *b = &c->dv[t];
    size_t need = b->nbytes;
    if (!planning && c->planned && c->offset[t] != SIZE_MAX && c->size[t] == need && need) {
        b->data = c->arena + c->offset[t];
        c->ds[t] = S_ARENA;
        return PRECIS_OK;
    }
    void *p = NULL;
    CU_TRY(cudaMallocAsync(&p, need ? need : 1, (cudaStream_t)c->x.stream));
    b->data = p;
    c->ds[t] = S_OWN;
    if (planning && c->e->first_def[t] >= 0) c->size[t] = need;
    return PRECIS_OK;
fail:
    return st;
}

static void release(pr_cuda_ctx *c, int t) {
    if (c->ds[t] == S_OWN && c->dv[t].data)
        cudaFreeAsync(c->dv[t].data, (cudaStream_t)c->x.stream);
    if (c->hs[t] == S_OWN) pr_buf_free(&c->hv[t]);
    c->ds[t] = c->hs[t] = S_NONE;
    c->dv[t].data = NULL;
    c->hv[t].data = NULL;
}

/* Host copy of a device-resident tensor (synchronizes). */
static precis_status to_host(pr_cuda_ctx *c, int t, pr_err *e) {
    precis_status st = PRECIS_OK;
    if (c->hs[t]) return PRECIS_OK;
    const pr_buf *d = &c->dv[t];
    if ((st = pr_buf_alloc(&c->hv[t], d->dtype, d->rank, d->dims, c->e->g->tensors[t].name, e)))
        return st;
    c->hs[t] = S_OWN;
    if (d->nbytes) {
        CU_TRY(cudaMemcpyAsync(c->hv[t].data, d->data, d->nbytes, cudaMemcpyDeviceToHost,
                               (cudaStream_t)c->x.stream));
        CU_TRY(cudaStreamSynchronize((cudaStream_t)c->x.stream));
    }
    c->touched_host = true;
    return PRECIS_OK;
fail:
    return st;
}

/* Device copy of a host-resident tensor. */
static precis_status to_dev(pr_cuda_ctx *c, int t, bool planning, pr_err *e) {
    precis_status st = PRECIS_OK;
    if (c->ds[t]) return PRECIS_OK;
    const pr_buf *h = &c->hv[t];
    set_meta(&c->dv[t], h->dtype, h->rank, h->dims);
    if ((st = dev_alloc(c, t, planning, e))) return st;
    if (h->nbytes)
        CU_TRY(cudaMemcpyAsync(c->dv[t].data, h->data, h->nbytes, cudaMemcpyHostToDevice,
                               (cudaStream_t)c->x.stream));
    c->touched_host = true;
    return PRECIS_OK;
fail:
    return st;
}

static precis_status grow_pin(pr_cuda_ctx *c, size_t need, pr_err *e) {
    precis_status st = PRECIS_OK;
    if (need <= c->pin_cap) return PRECIS_OK;
    if (c->x.capturing)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "staging buffer grows during a graph capture");
    CU_TRY(cudaStreamSynchronize((cudaStream_t)c->x.stream));
    if (c->pin) cudaFreeHost(c->pin);
    c->pin = NULL;
    c->pin_cap = 0;
    CU_TRY(cudaHostAlloc((void **)&c->pin, need, cudaHostAllocDefault));
    c->pin_cap = need;
    return PRECIS_OK;
fail:
    return st;
}

/* After a planning run: place every recorded tensor in the device arena. */
static precis_status make_plan(pr_cuda_ctx *c, pr_err *e) {
    precis_status st = PRECIS_OK;
    const precis_engine *en = c->e;
    const pr_graph *g = en->g;
    pr_mem_item *it = calloc((size_t)g->n_tensors + 1, sizeof *it);
    if (!it) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int t = 0; t < g->n_tensors; t++) {
        it[t].alias = -1;
        if (!c->size[t] || en->first_def[t] < 0) continue;
        it[t].bytes = c->size[t];
        it[t].first = en->first_def[t];
        it[t].last = en->last_use[t] < en->first_def[t] ? en->first_def[t] : en->last_use[t];
    }
    for (int k = 0; k < en->n_steps; k++) {
        const pr_step *s = &en->steps[k];
        if (!s->cuda || !s->cuda->inplace_input) continue;
        const pr_node *n = &g->nodes[s->node];
        int i = s->cuda->inplace_input(g, n);
        if (i < 0 || i >= n->n_inputs || n->outputs[0] < 0) continue;
        int ti = n->inputs[i], to = n->outputs[0];
        if (ti < 0 || !it[ti].bytes || en->last_use[ti] != k) continue;
        /* same size; or a smaller output for the MaxPool fused into the stem conv
         * (cuda_pool.c: its output is the head of its input, no pass) */
        if (it[ti].bytes != it[to].bytes &&
            !(n->op == PR_OP_MaxPool && it[ti].bytes > it[to].bytes))
            continue;
        bool other = false;
        for (int j = 0; j < n->n_inputs; j++) other |= j != i && n->inputs[j] == ti;
        if (!other) it[to].alias = ti;
    }
    size_t total = pr_mem_plan(it, g->n_tensors, c->offset);
    free(it);
    if (total == SIZE_MAX) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (total > c->arena_cap) {
        CU_TRY(cudaStreamSynchronize((cudaStream_t)c->x.stream));
        if (c->arena) cudaFree(c->arena);
        c->arena = NULL;
        c->arena_cap = 0;
        CU_TRY(cudaMalloc((void **)&c->arena, total ? total : 1));
        c->arena_cap = total;
    }
    c->arena_bytes = total;
    c->planned = true;
    return PRECIS_OK;
fail:
    return st;
}

/* One device step: inputs on the device, shapes inferred, outputs allocated,
 * the impl launched. */
static precis_status device_step(pr_cuda_ctx *c, const pr_step *s, bool planning, pr_err *e) {
    precis_status st = PRECIS_OK;
    const pr_graph *g = c->e->g;
    const pr_node *n = &g->nodes[s->node];
    const pr_buf *in[MAX_IO];
    pr_buf *outp[MAX_IO];
    pr_tinfo tin[MAX_IO], tout[MAX_IO];
    for (int j = 0; j < n->n_inputs; j++) {
        int t = n->inputs[j];
        in[j] = NULL;
        memset(&tin[j], 0, sizeof tin[j]);
        tin[j].rank = -1;
        if (t < 0) continue;
        if (!c->ds[t] && !c->hs[t])
            return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s): input '%s' has no value",
                           n->name, n->op_type, g->tensors[t].name);
        bool packed = s->cuda->packs && s->cuda->packs(g, n, j);
        if (!c->ds[t] && !packed && (st = to_dev(c, t, planning, e))) return st;
        if (!c->ds[t]) { /* packed and host-only: meta for the impl, no data */
            set_meta(&c->dv[t], c->hv[t].dtype, c->hv[t].rank, c->hv[t].dims);
            c->dv[t].data = NULL;
        }
        /* small integer vectors: inference may need the values */
        if (!c->hs[t] && pr_cu_shape_like(g, t) && (st = to_host(c, t, e))) return st;
        in[j] = &c->dv[t];
        pr_tinfo_from_buf(&tin[j], in[j]);
        tin[j].value = c->hs[t] ? c->hv[t].data : NULL;
    }
    if ((st = pr_infer_step_outputs(g, n, tin, tout, e))) return st;
    for (int j = 0; j < n->n_outputs; j++) {
        int t = n->outputs[j];
        outp[j] = NULL;
        if (t < 0) continue;
        release(c, t);
        /* the plan's dtype (a low-precision node may read float32 weights) */
        pr_dtype dt = g->tensors[t].dtype != PRECIS_UNDEFINED ? g->tensors[t].dtype : tout[j].dtype;
        if (dt == PRECIS_UNDEFINED || tout[j].rank < 0 || pr_numel(tout[j].rank, tout[j].dims) < 0)
            return pr_errf(e, PRECIS_ERR_INTERNAL,
                           "node '%s' (%s): could not determine the shape of output '%s'",
                           n->name, n->op_type, g->tensors[t].name);
        set_meta(&c->dv[t], dt, tout[j].rank, tout[j].dims);
        if ((st = dev_alloc(c, t, planning, e))) return st;
        outp[j] = &c->dv[t];
    }
    pr_kernel kk = {g, n, n->n_inputs, in, n->n_outputs, outp, e, 1};
    return s->cuda->run(s->state, &kk, &c->x);
}

/* One host step: the ref kernel on host copies. */
static precis_status host_step(pr_cuda_ctx *c, const pr_step *s, pr_err *e) {
    precis_status st = PRECIS_OK;
    const pr_graph *g = c->e->g;
    const pr_node *n = &g->nodes[s->node];
    const pr_buf *in[MAX_IO];
    pr_buf *outp[MAX_IO];
    pr_tinfo tin[MAX_IO], tout[MAX_IO];
    for (int j = 0; j < n->n_inputs; j++) {
        int t = n->inputs[j];
        in[j] = NULL;
        if (t >= 0) {
            if (!c->ds[t] && !c->hs[t])
                return pr_errf(e, PRECIS_ERR_INTERNAL, "node '%s' (%s): input '%s' has no value",
                               n->name, n->op_type, g->tensors[t].name);
            if ((st = to_host(c, t, e))) return st;
            in[j] = &c->hv[t];
        }
        pr_tinfo_from_buf(&tin[j], in[j]);
    }
    if ((st = pr_infer_step_outputs(g, n, tin, tout, e))) return st;
    for (int j = 0; j < n->n_outputs; j++) {
        int t = n->outputs[j];
        outp[j] = NULL;
        if (t < 0) continue;
        release(c, t);
        if (tout[j].dtype == PRECIS_UNDEFINED || tout[j].rank < 0 ||
            pr_numel(tout[j].rank, tout[j].dims) < 0)
            return pr_errf(e, PRECIS_ERR_INTERNAL,
                           "node '%s' (%s): could not determine the shape of output '%s'",
                           n->name, n->op_type, g->tensors[t].name);
        if ((st = pr_buf_alloc(&c->hv[t], tout[j].dtype, tout[j].rank, tout[j].dims,
                               g->tensors[t].name, e)))
            return st;
        c->hs[t] = S_OWN;
        outp[j] = &c->hv[t];
    }
    c->touched_host = true;
    pr_kernel kk = {g, n, n->n_inputs, in, n->n_outputs, outp, e, c->e->num_threads};
    return pr_ref_table[n->op](&kk);
}

/* The step loop between the staged inputs and the staged outputs. */
static precis_status run_steps(pr_cuda_ctx *c, const pr_buf *vals, bool planning, pr_err *e) {
    precis_status st = PRECIS_OK;
    const precis_engine *en = c->e;
    const pr_graph *g = en->g;
    cudaStream_t stream = (cudaStream_t)c->x.stream;
    if (c->in_total)
        CU_TRY(cudaMemcpyAsync(c->dev_in, c->pin, c->in_total, cudaMemcpyHostToDevice, stream));
    for (int k = 0; k < g->n_inputs; k++) {
        int t = g->inputs[k];
        c->dv[t] = vals[t];
        c->dv[t].data = c->dev_in + c->in_off[k];
        c->ds[t] = S_VIEW;
        c->hv[t] = vals[t];
        c->hs[t] = S_VIEW;
    }
    CU_TRY(cudaEventRecordWithFlags(c->ev[0], stream,
                                    c->x.capturing ? cudaEventRecordExternal : 0));
    for (int k = 0; k < en->n_steps; k++) {
        const pr_step *s = &en->steps[k];
        const pr_node *n = &g->nodes[s->node];
        if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
            return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s': too many inputs/outputs",
                           n->name);
        double t0 = 0;
        if (c->profiling) {
            CU_TRY(cudaStreamSynchronize(stream));
            t0 = now_s();
        }
        st = s->cuda ? device_step(c, s, planning, e) : host_step(c, s, e);
        if (st) return st;
        if (c->profiling) {
            CU_TRY(cudaStreamSynchronize(stream));
            c->prof[k] += now_s() - t0;
        }
        for (int j = 0; j < n->n_inputs; j++) {
            int t = n->inputs[j];
            if (t >= 0 && en->last_use[t] == k && !(g->tensors[t].flags & (PR_T_INIT | PR_T_INPUT)))
                release(c, t);
        }
    }
    CU_TRY(cudaEventRecordWithFlags(c->ev[1], stream,
                                    c->x.capturing ? cudaEventRecordExternal : 0));
    /* outputs: device -> staging */
    size_t need = c->in_total;
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (!c->ds[t] && !c->hs[t])
            return pr_errf(e, PRECIS_ERR_INTERNAL, "output '%s' was not computed",
                           g->tensors[t].name);
        const pr_buf *b = c->ds[t] ? &c->dv[t] : &c->hv[t];
        c->out_meta[k] = *b;
        c->out_meta[k].data = NULL;
        c->out_off[k] = need;
        need += al256(b->nbytes);
    }
    if ((st = grow_pin(c, need, e))) return st;
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (c->ds[t] && c->dv[t].nbytes)
            CU_TRY(cudaMemcpyAsync(c->pin + c->out_off[k], c->dv[t].data, c->dv[t].nbytes,
                                   cudaMemcpyDeviceToHost, stream));
    }
    return PRECIS_OK;
fail:
    return st;
}

/* Outputs from the staging (or from host values) into new tensors. */
static precis_status take_outputs(pr_cuda_ctx *c, bool from_host_vals, precis_tensor **outputs,
                                  pr_err *e) {
    precis_status st = PRECIS_OK;
    const pr_graph *g = c->e->g;
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        const pr_buf *m = &c->out_meta[k];
        if ((st = pr_tensor_new(m->dtype, m->rank, m->dims, g->tensors[t].name, &outputs[k], e)))
            return st;
        if (!m->nbytes) continue;
        if (from_host_vals && !c->ds[t])
            memcpy(outputs[k]->b.data, c->hv[t].data, m->nbytes);
        else
            par_memcpy(outputs[k]->b.data, c->pin + c->out_off[k], m->nbytes);
    }
    return PRECIS_OK;
}

static void release_all(pr_cuda_ctx *c) {
    for (int t = 0; t < c->e->g->n_tensors; t++) {
        if (c->ds[t] == S_VIEW) c->ds[t] = S_NONE;
        if (c->hs[t] == S_VIEW) c->hs[t] = S_NONE;
        release(c, t);
    }
}

static void device_time(pr_cuda_ctx *c) {
    float ms = 0;
    c->device_ms = cudaEventElapsedTime(&ms, c->ev[0], c->ev[1]) == cudaSuccess ? ms : 0;
    cudaGetLastError();
}

static bool all_device(const precis_engine *e) {
    for (int k = 0; k < e->n_steps; k++)
        if (!e->steps[k].cuda) return false;
    return true;
}

precis_status pr_cuda_ctx_run(pr_cuda_ctx *c, const pr_buf *vals, precis_tensor **outputs,
                              pr_err *e) {
    precis_status st = PRECIS_OK;
    const precis_engine *en = c->e;
    const pr_graph *g = en->g;
    cudaStream_t stream = (cudaStream_t)c->x.stream;
    c->used_graph = false;
    bool planning = !same_signature(c, g, vals) || !c->planned;
    if (planning) {
        drop_graph(c);
        c->planned = false;
        memset(c->size, 0, (size_t)g->n_tensors * sizeof *c->size);
    }
    /* stage the inputs in pinned memory */
    size_t in_total = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        c->in_off[k] = in_total;
        in_total += al256(vals[g->inputs[k]].nbytes);
    }
    if (in_total != c->in_total && !planning) drop_graph(c);
    c->in_total = in_total;
    if ((st = grow_pin(c, in_total + 256, e))) goto fail;
    if (in_total > c->dev_in_cap) {
        CU_TRY(cudaStreamSynchronize(stream));
        if (c->dev_in) cudaFree(c->dev_in);
        c->dev_in = NULL;
        c->dev_in_cap = 0;
        drop_graph(c);
        CU_TRY(cudaMalloc((void **)&c->dev_in, in_total));
        c->dev_in_cap = in_total;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        const pr_buf *b = &vals[g->inputs[k]];
        if (b->nbytes) par_memcpy(c->pin + c->in_off[k], b->data, b->nbytes);
    }
    if (c->profiling && c->graph_state == 1) drop_graph(c); /* per-step timing: eager */
    if (!planning && c->graph_state == 1) { /* replay */
        CU_TRY(cudaGraphLaunch(c->gexec, stream));
        CU_TRY(cudaStreamSynchronize(stream));
        c->used_graph = true;
        device_time(c);
        if ((st = take_outputs(c, false, outputs, e))) goto fail;
        return PRECIS_OK;
    }
    for (int t = 0; t < g->n_tensors; t++) {
        c->ds[t] = c->hs[t] = S_NONE;
        const pr_tensor *x = &g->tensors[t];
        if (!(x->flags & PR_T_INIT)) continue;
        c->hv[t] = vals[t];
        c->hs[t] = S_VIEW;
        void *dp = pr_cuda_dev_init_ptr(en->cuda, t);
        if (dp) {
            c->dv[t] = vals[t];
            c->dv[t].data = dp;
            c->ds[t] = S_VIEW;
        }
    }
    bool capture = !planning && c->graph_state == 0 && c->graphs_on && !c->profiling &&
                   !c->touched_host && all_device(en);
    if (planning) c->touched_host = false;
    if (capture) {
        CU_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        c->x.capturing = true;
        st = run_steps(c, vals, planning, e);
        cudaGraph_t graph = NULL;
        cudaError_t r = cudaStreamEndCapture(stream, &graph);
        c->x.capturing = false;
        if (!st && r == cudaSuccess && graph)
            r = cudaGraphInstantiate(&c->gexec, graph, 0);
        if (graph) cudaGraphDestroy(graph);
        if (st || r != cudaSuccess || !c->gexec) {
            /* not capturable: run this signature eagerly from now on */
            c->gexec = NULL;
            c->graph_state = -1;
            cudaGetLastError();
            release_all(c);
            pr_err_clear(e);
            return pr_cuda_ctx_run(c, vals, outputs, e);
        }
        c->graph_state = 1;
        CU_TRY(cudaGraphLaunch(c->gexec, stream));
        c->used_graph = true;
    } else if ((st = run_steps(c, vals, planning, e))) {
        goto fail;
    }
    CU_TRY(cudaStreamSynchronize(stream));
    device_time(c);
    if ((st = take_outputs(c, true, outputs, e))) goto fail;
    if (c->profiling) c->prof_runs++;
    release_all(c);
    if (planning && (st = make_plan(c, e))) goto fail;
    return PRECIS_OK;
fail:
    c->x.capturing = false;
    cudaStreamSynchronize(stream);
    release_all(c);
    for (int k = 0; k < g->n_outputs; k++) {
        precis_tensor_destroy(outputs[k]);
        outputs[k] = NULL;
    }
    return st;
}
