/* The GPU an engine runs on, per-context execution state (stream, cuBLASLt
 * and cuDNN handles, workspace, scratch), error messages, and helpers the
 * impls share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_util.h"
#include "backends/cuda/cuda_tcache.h"
#include "ir/act.h"

#define WS_DEFAULT ((size_t)32 << 20)

/* ------------------------------------------------------------- errors */

precis_status pr_cu_fail(pr_err *e, cudaError_t r, const char *call) {
    char name[64];
    snprintf(name, sizeof name, "%s", call);
    char *p = strchr(name, '(');
    if (p) *p = 0;
    return pr_errf(e, r == cudaErrorMemoryAllocation ? PRECIS_ERR_OOM : PRECIS_ERR_INTERNAL,
                   "%s: %s (%s)", name, cudaGetErrorString(r), cudaGetErrorName(r));
}

precis_status pr_lt_fail(pr_err *e, cublasStatus_t r, const char *call) {
    char name[64];
    snprintf(name, sizeof name, "%s", call);
    char *p = strchr(name, '(');
    if (p) *p = 0;
    return pr_errf(e, r == CUBLAS_STATUS_ALLOC_FAILED ? PRECIS_ERR_OOM : PRECIS_ERR_INTERNAL,
                   "%s: %s (%s)", name, cublasLtGetStatusString(r), cublasLtGetStatusName(r));
}

precis_status pr_dnn_fail(pr_err *e, cudnnStatus_t r, const char *call) {
    char name[64], last[256] = "";
    snprintf(name, sizeof name, "%s", call);
    char *p = strchr(name, '(');
    if (p) *p = 0;
    cudnnGetLastErrorString(last, sizeof last);
    return pr_errf(e, r == CUDNN_STATUS_ALLOC_FAILED ? PRECIS_ERR_OOM : PRECIS_ERR_INTERNAL,
                   "%s: %s%s%s", name, cudnnGetErrorString(r), last[0] ? ": " : "", last);
}

/* --------------------------------------------------------------- exec */

precis_status pr_cuda_exec_init(pr_cuda_exec *x, pr_err *e) {
    precis_status st = PRECIS_OK;
    memset(x, 0, sizeof *x);
    cudaStream_t s = NULL;
    cublasLtHandle_t lt = NULL;
    cudnnHandle_t dnn = NULL;
    int dev = 0;
    CU_TRY(cudaGetDevice(&dev));
    CU_TRY(cudaDeviceGetAttribute(&x->sm_count, cudaDevAttrMultiProcessorCount, dev));
    CU_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    x->stream = s;
    LT_TRY(cublasLtCreate(&lt));
    x->lt = lt;
    DNN_TRY(cudnnCreate(&dnn));
    x->dnn = dnn;
    DNN_TRY(cudnnSetStream(dnn, s));
    if ((st = pr_cuda_workspace(x, WS_DEFAULT, e))) goto fail;
    return PRECIS_OK;
fail:
    pr_cuda_exec_fini(x);
    return st;
}

void pr_cuda_exec_fini(pr_cuda_exec *x) {
    if (x->stream) cudaStreamSynchronize((cudaStream_t)x->stream);
    if (x->ws) cudaFree(x->ws);
    if (x->scratch) cudaFree(x->scratch);
    if (x->dnn) cudnnDestroy((cudnnHandle_t)x->dnn);
    if (x->lt) cublasLtDestroy((cublasLtHandle_t)x->lt);
    if (x->stream) cudaStreamDestroy((cudaStream_t)x->stream);
    memset(x, 0, sizeof *x);
}

static precis_status grow(pr_cuda_exec *x, void **p, size_t *have, size_t bytes, const char *what,
                          pr_err *e) {
    precis_status st = PRECIS_OK;
    if (bytes <= *have) return PRECIS_OK;
    if (x->capturing)
        return pr_errf(e, PRECIS_ERR_INTERNAL,
                       "the %s must grow (%zu bytes) during a CUDA graph capture", what, bytes);
    size_t want = bytes + bytes / 4;
    void *np = NULL;
    if (x->stream) CU_TRY(cudaStreamSynchronize((cudaStream_t)x->stream));
    if (*p) cudaFree(*p);
    *p = NULL;
    *have = 0;
    CU_TRY(cudaMalloc(&np, want));
    *p = np;
    *have = want;
    return PRECIS_OK;
fail:
    return st;
}

void *pr_cuda_scratch(pr_cuda_exec *x, size_t bytes, pr_err *e) {
    if (grow(x, &x->scratch, &x->scratch_bytes, bytes ? bytes : 1, "scratch buffer", e))
        return NULL;
    return x->scratch;
}

precis_status pr_cuda_workspace(pr_cuda_exec *x, size_t bytes, pr_err *e) {
    return grow(x, &x->ws, &x->ws_bytes, bytes, "workspace", e);
}

/* ------------------------------------------------------------- device */

struct pr_cuda_dev {
    int id;
    char arch[16];
    char name[256];
    pr_cuda_exec x;
    void *init_block;
    void **init_ptr; /* per tensor */
    int n_tensors;
    pr_cuda_tcache *tc;
};

precis_status pr_cuda_dev_open(pr_cuda_dev **out, pr_err *e) {
    precis_status st = PRECIS_OK;
    *out = NULL;
    int n = 0;
    cudaError_t r = cudaGetDeviceCount(&n);
    if (r != cudaSuccess)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "no CUDA device: %s", cudaGetErrorString(r));
    if (n < 1)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "no CUDA device: %s",
                       cudaGetErrorString(cudaErrorNoDevice));
    pr_cuda_dev *d = calloc(1, sizeof *d);
    if (!d) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    struct cudaDeviceProp p;
    CU_TRY(cudaSetDevice(0));
    CU_TRY(cudaGetDeviceProperties(&p, 0));
    if (p.major < 9) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                     "CUDA device '%s' is sm_%d%d; precis's CUDA kernels are built for sm_90 "
                     "and newer",
                     p.name, p.major, p.minor);
        goto fail;
    }
    snprintf(d->arch, sizeof d->arch, "sm_%d%d", p.major, p.minor);
    snprintf(d->name, sizeof d->name, "%s", p.name);
    if ((st = pr_cuda_exec_init(&d->x, e))) goto fail;
    *out = d;
    return PRECIS_OK;
fail:
    free(d);
    return st;
}

void pr_cuda_dev_close(pr_cuda_dev *d) {
    if (!d) return;
    if (d->tc) { /* best effort: choices made at first runs; the build saved the rest */
        pr_err ignore = {0};
        pr_cuda_tcache_save(d->tc, &ignore);
        pr_cuda_tcache_close(d->tc);
    }
    pr_cuda_exec_fini(&d->x);
    if (d->init_block) cudaFree(d->init_block);
    free(d->init_ptr);
    free(d);
}

const char *pr_cuda_dev_arch(const pr_cuda_dev *d) { return d->arch; }
const char *pr_cuda_dev_name(const pr_cuda_dev *d) { return d->name; }
pr_cuda_exec *pr_cuda_dev_exec(pr_cuda_dev *d) { return &d->x; }

precis_status pr_cuda_dev_open_tcache(pr_cuda_dev *d, const char *path, pr_err *e) {
    if (d->tc) pr_cuda_tcache_close(d->tc);
    d->tc = NULL;
    return path ? pr_cuda_tcache_open(path, d->name, d->arch, &d->tc, e)
                : pr_cuda_tcache_open_text(NULL, d->name, d->arch, &d->tc, e);
}

precis_status pr_cuda_dev_use_plan_tcache(pr_cuda_dev *d, const char *text, bool *reused,
                                          pr_err *e) {
    if (d->tc) pr_cuda_tcache_close(d->tc);
    d->tc = NULL;
    *reused = false;
    pr_err ignore = {0};
    precis_status st = pr_cuda_tcache_open_text(text, d->name, d->arch, &d->tc, &ignore);
    if (st == PRECIS_ERR_INVALID_ARG) /* another GPU / library version: time again */
        return pr_cuda_tcache_open_text(NULL, d->name, d->arch, &d->tc, e);
    if (st) return pr_errf(e, st, "plan metadata precis.cuda_tcache: %s", ignore.msg);
    *reused = text && text[0];
    return PRECIS_OK;
}

char *pr_cuda_dev_tcache_text(const pr_cuda_dev *d) { return pr_cuda_tcache_text(d->tc); }

void *pr_cuda_dev_tcache(const pr_cuda_dev *d) { return d->tc; }

void pr_cuda_dev_tcache_counts(const pr_cuda_dev *d, int *hits, int *added) {
    int h = 0, a = 0;
    pr_cuda_tcache_counts(d->tc, &h, &a);
    if (hits) *hits = h;
    if (added) *added = a;
}

precis_status pr_cuda_dev_save_tcache(pr_cuda_dev *d, int *hits, int *added, pr_err *e) {
    pr_cuda_dev_tcache_counts(d, hits, added);
    return pr_cuda_tcache_save(d->tc, e);
}

void *pr_cuda_dev_init_ptr(const pr_cuda_dev *d, int t) {
    return d->init_ptr && t >= 0 && t < d->n_tensors ? d->init_ptr[t] : NULL;
}

precis_status pr_cuda_dev_upload_inits(pr_cuda_dev *d, const pr_graph *g, const bool *need,
                                       pr_err *e) {
    precis_status st = PRECIS_OK;
    free(d->init_ptr);
    d->init_ptr = calloc((size_t)g->n_tensors + 1, sizeof *d->init_ptr);
    d->n_tensors = g->n_tensors;
    if (!d->init_ptr) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    size_t total = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (need[t] && (g->tensors[t].flags & PR_T_INIT))
            total += (g->tensors[t].nbytes + 255) & ~(size_t)255;
    if (!total) return PRECIS_OK;
    unsigned char *blk = NULL;
    CU_TRY(cudaMalloc((void **)&blk, total));
    d->init_block = blk;
    size_t off = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *x = &g->tensors[t];
        if (!need[t] || !(x->flags & PR_T_INIT)) continue;
        if (x->nbytes)
            CU_TRY(cudaMemcpyAsync(blk + off, x->data, x->nbytes, cudaMemcpyHostToDevice,
                                   (cudaStream_t)d->x.stream));
        d->init_ptr[t] = blk + off;
        off += (x->nbytes + 255) & ~(size_t)255;
    }
    CU_TRY(cudaStreamSynchronize((cudaStream_t)d->x.stream));
    return PRECIS_OK;
fail:
    return st;
}

/* ------------------------------------------------------------ helpers */

float *pr_cu_init_f32(const pr_graph *g, int t, int64_t *n) {
    const pr_tensor *x = &g->tensors[t];
    int64_t ne = pr_numel(x->rank, x->dims);
    *n = ne;
    if (ne < 0) return NULL;
    float *f = malloc((size_t)(ne ? ne : 1) * sizeof *f);
    if (!f) return NULL;
    pr_ref_to_f32(x->data, x->dtype, ne, f);
    return f;
}

precis_status pr_cu_upload(const void *h, size_t bytes, void **d, cudaStream_t s, pr_err *e) {
    precis_status st = PRECIS_OK;
    CU_TRY(cudaMalloc(d, bytes ? bytes : 1));
    CU_TRY(cudaMemcpyAsync(*d, h, bytes, cudaMemcpyHostToDevice, s));
    CU_TRY(cudaStreamSynchronize(s));
    return PRECIS_OK;
fail:
    return st;
}

float pr_cu_time3(cudaStream_t s, bool (*launch)(void *ctx), void *ctx) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    float t[3] = {0, 0, 0};
    bool bad = cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess;
    for (int i = -1; i < 3 && !bad; i++) {
        bad |= cudaEventRecord(e0, s) != cudaSuccess;
        bad |= !launch(ctx);
        bad |= cudaEventRecord(e1, s) != cudaSuccess;
        bad |= cudaEventSynchronize(e1) != cudaSuccess;
        if (i >= 0 && !bad) bad |= cudaEventElapsedTime(&t[i], e0, e1) != cudaSuccess;
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaGetLastError();
    if (bad) return -1;
    float lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    return t[2] < lo ? lo : t[2] > hi ? hi : t[2];
}

precis_status pr_cu_qparams(const pr_graph *g, const pr_node *n, int64_t count, const char *what,
                            float **scale, int64_t *n_scale, float **bias, pr_err *e) {
    *bias = NULL;
    if (!(*scale = pr_cu_init_f32(g, n->inputs[2], n_scale)))
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (*n_scale != 1 && *n_scale != count)
        return pr_errf(e, PRECIS_ERR_SHAPE, "%lld weight scales for %lld %s", (long long)*n_scale,
                       (long long)count, what);
    int b = pr_node_in(n, 3);
    int64_t nb = 0;
    if (b < 0) return PRECIS_OK;
    if (!(*bias = pr_cu_init_f32(g, b, &nb))) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (nb != count)
        return pr_errf(e, PRECIS_ERR_SHAPE, "bias of %lld for %lld %s", (long long)nb,
                       (long long)count, what);
    return PRECIS_OK;
}

precis_status pr_cu_upload_as(const float *src, int64_t n, pr_dtype dt, void **out,
                              cudaStream_t s, pr_err *e) {
    precis_status st = PRECIS_OK;
    *out = NULL;
    size_t es = pr_dtype_size(dt), bytes = (size_t)(n > 0 ? n : 1) * es;
    void *host = malloc(bytes), *dev = NULL;
    if (!host) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    pr_ref_from_f32(src, n, dt, host);
    CU_TRY(cudaMalloc(&dev, bytes));
    CU_TRY(cudaMemcpyAsync(dev, host, (size_t)n * es, cudaMemcpyHostToDevice, s));
    CU_TRY(cudaStreamSynchronize(s));
    free(host);
    *out = dev;
    return PRECIS_OK;
fail:
    free(host);
    if (dev) cudaFree(dev);
    return st;
}

pr_cu_act pr_cu_act_of(const pr_node *n, const char *prefix) {
    pr_act a;
    pr_act_from_node(n, prefix, &a);
    return (pr_cu_act){(int)a.kind, a.alpha, a.beta};
}

int pr_cu_collapse(int rank, int64_t *dims, int n_op, int64_t (*st)[PR_MAX_RANK]) {
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        if (r > 0) { /* merge with the previous kept dim when contiguous in every operand */
            bool ok = true;
            for (int o = 0; o < n_op && ok; o++) ok = st[o][r - 1] == st[o][d] * dims[d];
            if (ok) {
                dims[r - 1] *= dims[d];
                for (int o = 0; o < n_op; o++) st[o][r - 1] = st[o][d];
                continue;
            }
        }
        dims[r] = dims[d];
        for (int o = 0; o < n_op; o++) st[o][r] = st[o][d];
        r++;
    }
    if (r == 0) {
        dims[0] = 1;
        for (int o = 0; o < n_op; o++) st[o][0] = 0;
        r = 1;
    }
    return r;
}

void pr_cu_kernel_infer(const pr_kernel *k, pr_infer *ic, pr_tinfo *tin, int cap) {
    int n = k->n_in < cap ? k->n_in : cap;
    for (int i = 0; i < n; i++) {
        const pr_buf *b = k->in[i];
        memset(&tin[i], 0, sizeof tin[i]);
        if (!b) {
            tin[i].rank = -1;
            continue;
        }
        tin[i].dtype = b->dtype;
        tin[i].rank = b->rank;
        memcpy(tin[i].dims, b->dims, sizeof(int64_t) * (size_t)b->rank);
        int t = k->node->inputs[i];
        if (pr_cu_is_init(k->g, t)) tin[i].value = k->g->tensors[t].data;
    }
    *ic = (pr_infer){(pr_graph *)k->g, k->node, n, tin, 0, NULL, k->err};
}

precis_status pr_cu_run_static(const pr_graph *g, const pr_node *n, pr_cuda_exec *x,
                               precis_status (*run)(void *state, pr_kernel *k, pr_cuda_exec *x),
                               void *state, unsigned skip, pr_err *e) {
    enum { MAXIO = 8 };
    precis_status st = PRECIS_OK;
    int nin = n->n_inputs < MAXIO ? n->n_inputs : MAXIO;
    pr_buf bufs[MAXIO + 1];
    const pr_buf *in[MAXIO];
    pr_buf *outp[1] = {&bufs[MAXIO]};
    void *mem[MAXIO + 1];
    memset(bufs, 0, sizeof bufs);
    for (int i = 0; i <= MAXIO; i++) {
        mem[i] = NULL;
        if (i < MAXIO) in[i] = NULL;
    }
    if (n->n_outputs < 1 || n->outputs[0] < 0) return PRECIS_OK;
    for (int i = 0; i <= MAXIO; i++) {
        if (i < MAXIO && i >= nin) continue;
        int t = i < MAXIO ? n->inputs[i] : n->outputs[0];
        if (t < 0) continue;
        const pr_tensor *T = &g->tensors[t];
        pr_buf *b = &bufs[i];
        b->dtype = T->dtype;
        b->rank = T->rank;
        b->numel = 1;
        for (int d = 0; d < T->rank; d++) b->dims[d] = T->dims[d];
        if (i < MAXIO) in[i] = b;
        if (i < MAXIO && (skip >> i) & 1u) continue;
        for (int d = 0; d < T->rank; d++) {
            if (T->dims[d] <= 0) goto done; /* a dynamic dim: the choice waits for a run */
            b->numel *= T->dims[d];
        }
        b->nbytes = (size_t)b->numel * pr_dtype_size(T->dtype);
        CU_TRY(cudaMalloc(&mem[i], b->nbytes));
        CU_TRY(cudaMemsetAsync(mem[i], 0, b->nbytes, (cudaStream_t)x->stream));
        b->data = mem[i];
    }
    {
        pr_kernel k = {g, n, nin, in, 1, outp, e, 1};
        st = run(state, &k, x);
    }
done:
fail:
    for (int i = 0; i <= MAXIO; i++)
        if (mem[i]) cudaFree(mem[i]);
    return st;
}
