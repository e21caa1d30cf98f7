/* Checking one CPU-backend impl against the ref backend, ggml
 * test-backend-ops style (tests/unit/test_cpu_*.c):
 *
 *   tnode t; n_init(&t, PR_OP_Conv, "Conv", 17); n_ints(&t, "pads", ...);
 *   cc_input in[] = {{"x", 4, {1, 8, 9, 9}, .nhwc = true},
 *                    {"w", 4, {16, 8, 3, 3}, .init = true}};
 *   cc_run(&t, 2, in, 1, (bool[]){true}, PRECIS_BFLOAT16, &impl, 2, "conv bf16");
 *
 * Inputs are random uniform in [lo, hi) (default [-1, 1)) unless data is
 * given, rounded to the tested activation dtype so that ref and the impl see
 * the same values. ref runs the node in float32 on plain tensors; the impl
 * runs it with activations (non-initializer float inputs and the outputs) in
 * act_dt and the requested layouts (nhwc: rank-4 tensor stored N,H,W,C).
 * Outputs are compared in float32: |impl - ref| <= tol_abs + tol_rel * |ref|
 * with the per-dtype tolerance of cc_tol() unless the case gives its own.
 * Every mismatch is a failed CHECK naming the case, output and element. */
#ifndef PR_TESTS_UNIT_CPU_CHECK_H
#define PR_TESTS_UNIT_CPU_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "check.h"
#include "core/dtype.h"
#include "ir/infer.h"
#include "runtime/exec.h"
#include "runtime/tensor.h"
#include "tnode.h"

#define CC_MAX_IO 8

typedef struct cc_input {
    const char *name;
    int rank;
    int64_t dims[PR_MAX_RANK];
    bool init;         /* an initializer (weights): stays float32, data known at prepare */
    bool nhwc;         /* rank 4, stored N,H,W,C for the impl */
    const float *data; /* NULL: random */
    float lo, hi;      /* random range; both 0: [-1, 1) */
    pr_dtype dtype;    /* PRECIS_UNDEFINED: float (act_dt, or float32 if init) */
    const void *raw;   /* with a non-float dtype: the contents */
} cc_input;

typedef struct cc_tolerance {
    float abs, rel;
} cc_tolerance;

static inline cc_tolerance cc_tol(pr_dtype dt) {
    switch (dt) {
    case PRECIS_FLOAT16: return (cc_tolerance){2e-3f, 4e-3f};
    case PRECIS_BFLOAT16: return (cc_tolerance){1.6e-2f, 3e-2f};
    default: return (cc_tolerance){1e-5f, 1e-4f};
    }
}

static uint64_t cc_rng = 88172645463325252ull;
static inline float cc_rand(float lo, float hi) {
    cc_rng ^= cc_rng << 13;
    cc_rng ^= cc_rng >> 7;
    cc_rng ^= cc_rng << 17;
    return lo + (hi - lo) * (float)((cc_rng >> 11) * (1.0 / 9007199254740992.0));
}

static inline float cc_round(float v, pr_dtype dt) {
    if (dt == PRECIS_BFLOAT16) return pr_bf16_to_f32(pr_f32_to_bf16(v));
    if (dt == PRECIS_FLOAT16) return pr_f16_to_f32(pr_f32_to_f16(v));
    return v;
}

/* Plain N,C,H,W <-> N,H,W,C copies of float32 data. */
static inline void cc_nchw_to_nhwc(const float *s, float *d, const int64_t *dm) {
    int64_t N = dm[0], C = dm[1], HW = dm[2] * dm[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) d[(n * HW + p) * C + c] = s[(n * C + c) * HW + p];
}
static inline void cc_nhwc_to_nchw(const float *s, float *d, const int64_t *dm) {
    int64_t N = dm[0], C = dm[1], HW = dm[2] * dm[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) d[(n * C + c) * HW + p] = s[(n * HW + p) * C + c];
}

/* A one-node graph: inputs as given (dtype per input), outputs with dtype
 * out_dt, layouts as given. Returns NULL on failure (CHECKed). */
static inline pr_graph *cc_graph(const tnode *t, int n_in, const cc_input *ins,
                                 const pr_dtype *in_dt, float *const *in_data, int n_out,
                                 const bool *out_nhwc, bool use_layouts) {
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    CHECK(g != NULL);
    if (!g) return NULL;
    int ni = pr_graph_add_node(g, n_in, n_out, 0, &e);
    pr_node *n = &g->nodes[ni];
    const pr_node *src = &t->node;
    n->name = src->name;
    n->op_type = src->op_type;
    n->domain = src->domain;
    n->op = src->op;
    n->opset = src->opset;
    n->attrs = src->attrs;
    n->n_attrs = src->n_attrs;
    for (int i = 0; i < n_in; i++) {
        if (!ins[i].name) continue; /* omitted optional input */
        int ti = pr_graph_get_tensor(g, ins[i].name, &e);
        pr_tensor *x = &g->tensors[ti];
        x->dtype = in_dt[i];
        x->rank = ins[i].rank;
        memcpy(x->dims, ins[i].dims, sizeof x->dims);
        x->layout = use_layouts && ins[i].nhwc ? PR_LAYOUT_NHWC : PR_LAYOUT_PLAIN;
        if (ins[i].init) {
            x->flags |= PR_T_INIT;
            int64_t ne = pr_numel(x->rank, x->dims);
            size_t es = pr_dtype_size(x->dtype);
            x->nbytes = (size_t)ne * es;
            x->data = malloc(x->nbytes ? x->nbytes : 1);
            pr_graph_own(g, x->data);
            if (x->dtype == PRECIS_FLOAT32)
                memcpy(x->data, in_data[i], x->nbytes);
            else
                memcpy(x->data, ins[i].raw, x->nbytes);
        } else {
            x->flags |= PR_T_INPUT;
        }
        g->nodes[ni].inputs[i] = ti;
    }
    for (int j = 0; j < n_out; j++) {
        char nm[16];
        snprintf(nm, sizeof nm, "y%d", j);
        int ti = pr_graph_get_tensor(g, nm, &e);
        g->tensors[ti].producer = ni;
        g->tensors[ti].flags |= PR_T_OUTPUT;
        g->tensors[ti].layout = use_layouts && out_nhwc && out_nhwc[j] ? PR_LAYOUT_NHWC : 0;
        g->nodes[ni].outputs[j] = ti;
    }
    return g;
}

/* The inputs' dtypes for ref and for the impl (activations in act_dt,
 * initializers float32, typed inputs as given) and, for float inputs, their
 * values (given or random in [lo, hi]) rounded to the impl's dtype so both
 * sides see the same numbers; plain[i] malloc'd (NULL for typed inputs). */
static inline void cc_inputs_prepare(int n_in, const cc_input *ins, pr_dtype act_dt,
                                     pr_dtype *ref_dt, pr_dtype *imp_dt, float **plain) {
    for (int i = 0; i < n_in; i++) {
        ref_dt[i] = imp_dt[i] = PRECIS_FLOAT32;
        if (!ins[i].name) continue;
        if (ins[i].dtype != PRECIS_UNDEFINED) {
            ref_dt[i] = imp_dt[i] = ins[i].dtype;
            continue;
        }
        if (!ins[i].init) imp_dt[i] = act_dt;
        int64_t ne = pr_numel(ins[i].rank, ins[i].dims);
        plain[i] = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        float lo = ins[i].lo, hi = ins[i].hi;
        if (lo == 0 && hi == 0) lo = -1, hi = 1;
        for (int64_t k = 0; k < ne; k++)
            plain[i][k] = cc_round(ins[i].data ? ins[i].data[k] : cc_rand(lo, hi), imp_dt[i]);
    }
}

/* Runs the case; returns the largest |impl - ref| over all outputs (or
 * INFINITY when something failed; every failure is also a failed CHECK). */
static inline float cc_run_tol(const tnode *t, int n_in, const cc_input *ins, int n_out,
                               const bool *out_nhwc, pr_dtype act_dt, const pr_cpu_impl *impl,
                               int threads, cc_tolerance tol, const char *label) {
    float worst = 0;
    float *plain[CC_MAX_IO] = {0};
    pr_dtype ref_dt[CC_MAX_IO], imp_dt[CC_MAX_IO];
    cc_inputs_prepare(n_in, ins, act_dt, ref_dt, imp_dt, plain);
    pr_graph *gr = cc_graph(t, n_in, ins, ref_dt, plain, n_out, out_nhwc, false);
    pr_graph *gi = cc_graph(t, n_in, ins, imp_dt, plain, n_out, out_nhwc, true);
    pr_err e = {0};
    pr_buf rin[CC_MAX_IO], iin[CC_MAX_IO], rout[CC_MAX_IO], iout[CC_MAX_IO];
    const pr_buf *rinp[CC_MAX_IO], *iinp[CC_MAX_IO];
    pr_buf *ioutp[CC_MAX_IO];
    memset(rin, 0, sizeof rin);
    memset(iin, 0, sizeof iin);
    memset(rout, 0, sizeof rout);
    memset(iout, 0, sizeof iout);
    void *state = NULL;
    precis_status st;
    for (int i = 0; i < n_in; i++) {
        rinp[i] = iinp[i] = NULL;
        if (!ins[i].name) continue;
        pr_buf_alloc(&rin[i], ref_dt[i], ins[i].rank, ins[i].dims, ins[i].name, &e);
        pr_buf_alloc(&iin[i], imp_dt[i], ins[i].rank, ins[i].dims, ins[i].name, &e);
        if (plain[i]) {
            memcpy(rin[i].data, plain[i], rin[i].nbytes);
            float *tmp = malloc((size_t)(rin[i].numel ? rin[i].numel : 1) * sizeof(float));
            if (ins[i].nhwc && !ins[i].init) cc_nchw_to_nhwc(plain[i], tmp, ins[i].dims);
            else memcpy(tmp, plain[i], rin[i].nbytes);
            pr_ref_from_f32(tmp, rin[i].numel, imp_dt[i], iin[i].data);
            free(tmp);
        } else {
            memcpy(rin[i].data, ins[i].raw, rin[i].nbytes);
            memcpy(iin[i].data, ins[i].raw, iin[i].nbytes);
        }
        rinp[i] = &rin[i];
        iinp[i] = &iin[i];
    }
    st = pr_exec_node(gr, &gr->nodes[0], rinp, rout, 1, &e);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: ref failed: %s\n", label, e.msg);
        worst = INFINITY;
        goto done;
    }
    CHECK(impl->supports(gi, &gi->nodes[0]));
    if (!impl->supports(gi, &gi->nodes[0])) {
        fprintf(stderr, "%s: %s does not support the case\n", label, impl->name);
        worst = INFINITY;
        goto done;
    }
    pr_cpu_cfg cfg = {.num_threads = threads};
    st = impl->prepare(gi, &gi->nodes[0], &cfg, &state, &e);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: prepare failed: %s\n", label, e.msg);
        worst = INFINITY;
        goto done;
    }
    for (int j = 0; j < n_out; j++) {
        pr_dtype od = rout[j].dtype == PRECIS_FLOAT32 ? act_dt : rout[j].dtype;
        pr_buf_alloc(&iout[j], od, rout[j].rank, rout[j].dims, "y", &e);
        ioutp[j] = &iout[j];
    }
    pr_cpu_exec x = {threads, NULL, NULL, 0, NULL, 0};
    pr_kernel k = {gi, &gi->nodes[0], n_in, iinp, n_out, ioutp, &e, threads};
    st = impl->run(state, &k, &x);
    free(x.scratch);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: run failed: %s\n", label, e.msg);
        worst = INFINITY;
        goto done;
    }
    for (int j = 0; j < n_out; j++) {
        int64_t ne = rout[j].numel;
        float *r = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        float *v = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        float *v2 = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        pr_ref_to_f32(rout[j].data, rout[j].dtype, ne, r);
        pr_ref_to_f32(iout[j].data, iout[j].dtype, ne, v);
        if (out_nhwc && out_nhwc[j]) cc_nhwc_to_nchw(v, v2, rout[j].dims);
        else memcpy(v2, v, (size_t)ne * sizeof(float));
        int bad = 0;
        for (int64_t q = 0; q < ne; q++) {
            float d = fabsf(v2[q] - r[q]);
            if (!(d <= tol.abs + tol.rel * fabsf(r[q])) && !(isnan(r[q]) && isnan(v2[q])) &&
                v2[q] != r[q]) { /* equal infinities match */
                if (bad++ < 3)
                    fprintf(stderr, "%s: output %d element %lld: impl %g, ref %g\n", label, j,
                            (long long)q, v2[q], r[q]);
                worst = INFINITY;
            } else if (d > worst) {
                worst = d;
            }
        }
        CHECK(bad == 0);
        free(r);
        free(v);
        free(v2);
    }
done:
    if (state && impl->destroy) impl->destroy(state);
    for (int i = 0; i < CC_MAX_IO; i++) {
        if (i < n_in && ins[i].name) {
            pr_buf_free(&rin[i]);
            pr_buf_free(&iin[i]);
        }
        if (i < n_out) {
            pr_buf_free(&rout[i]);
            pr_buf_free(&iout[i]);
        }
        free(plain[i]);
    }
    pr_graph_destroy(gr);
    pr_graph_destroy(gi);
    return worst;
}

static inline float cc_run(const tnode *t, int n_in, const cc_input *ins, int n_out,
                           const bool *out_nhwc, pr_dtype act_dt, const pr_cpu_impl *impl,
                           int threads, const char *label) {
    return cc_run_tol(t, n_in, ins, n_out, out_nhwc, act_dt, impl, threads, cc_tol(act_dt), label);
}

#endif
