/* Precision choice for float nodes: each node's target is its request
 * (prec_req.h) or the build's precision; a node computes in bf16/fp16 when
 * the CPU backend has a kernel for it with its float activations in that
 * type (weights stay float32 initializers; kernels convert them once), else
 * in float32 (a request not met is noted). A tensor is stored in its
 * producer's compute type; consumers read it in the type asked of the
 * producer's output (if any), then Casts go where a consumer wants another
 * type. Shape and Size read no data and take either. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cuda/cuda.h"
#include "passes/convert.h"
#include "passes/pass_plan.h"
#include "passes/prec_req.h"

static bool is_act(const pr_graph *g, int t, pr_dtype dt) {
    return t >= 0 && g->tensors[t].dtype == dt && !(g->tensors[t].flags & PR_T_INIT);
}

static bool dtype_free(const pr_node *n) { return n->op == PR_OP_Shape || n->op == PR_OP_Size; }

/* cuda: a QuantizeLinear reads its float input in the type it is stored in
 * (the kernel takes float32/float16/bfloat16): an fp16 Cast before it would
 * round a float32 tensor (a graph input) twice, off the CPU's int8 grid. */
static bool reads_as_stored(const pr_node *n, bool cuda) {
    return cuda && n->op == PR_OP_QuantizeLinear;
}

/* An int8 op of an int8 plan: its compute type is int8 whatever the build's
 * float type; only its float outputs (if any) take one. */
static bool int8_op(const pr_node *n) {
    return n->op == PR_OP_QConv || n->op == PR_OP_QMatMul || n->op == PR_OP_QBinary ||
           n->op == PR_OP_QPool || n->op == PR_OP_DequantizeLinear;
}

/* Try n with its float32 activations set to low (and, for rank-4 ones, in
 * either layout); restores everything. */
static bool try_low(pr_graph *g, const pr_node *n, pr_dtype low, bool cuda) {
    int ts[128], k = 0;
    for (int i = 0; i < n->n_inputs && k < 64; i++)
        if (is_act(g, n->inputs[i], PRECIS_FLOAT32)) ts[k++] = n->inputs[i];
    for (int i = 0; i < n->n_outputs && k < 128; i++)
        if (is_act(g, n->outputs[i], PRECIS_FLOAT32)) ts[k++] = n->outputs[i];
    if (!k) return false;
    for (int i = 0; i < k; i++) g->tensors[ts[i]].dtype = low;
    bool ok = false;
#ifdef PRECIS_HAVE_CUDA
    if (cuda) {
        ok = pr_cuda_find_impl(g, n) != NULL;
        for (int i = 0; i < k; i++) g->tensors[ts[i]].dtype = PRECIS_FLOAT32;
        return ok;
    }
#endif
    for (int lay = 0; lay < 2 && !ok; lay++) {
        uint8_t saved[128];
        for (int i = 0; i < k; i++) {
            saved[i] = g->tensors[ts[i]].layout;
            if (lay && g->tensors[ts[i]].rank == 4) g->tensors[ts[i]].layout = PR_LAYOUT_NHWC;
        }
        const pr_cpu_impl *im = pr_cpu_find_impl(g, n);
        ok = im != NULL && (!lay || (im->nhwc_ok && im->nhwc_ok(g, n)));
        for (int i = 0; i < k; i++) g->tensors[ts[i]].layout = saved[i];
    }
    for (int i = 0; i < k; i++) g->tensors[ts[i]].dtype = PRECIS_FLOAT32;
    return ok;
}

static bool float_act(const pr_graph *g, int t) {
    return t >= 0 && pr_prec_is_float(g->tensors[t].dtype) && !(g->tensors[t].flags & PR_T_INIT);
}

precis_status pr_plan_precision(pr_graph *g, pr_dtype dflt, pr_err *e) {
    return pr_plan_precision_backend(g, dflt, false, e);
}

precis_status pr_plan_precision_backend(pr_graph *g, pr_dtype dflt, bool cuda, pr_err *e) {
    if (!pr_prec_is_float(dflt)) dflt = PRECIS_FLOAT32; /* int8 builds: float nodes default to fp32 */
    int n0 = g->n_nodes;
    pr_dtype *dc = calloc((size_t)(n0 ? n0 : 1), sizeof *dc);
    if (!dc) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < n0; i++) {
        pr_node *n = &g->nodes[i];
        if (dtype_free(n) || reads_as_stored(n, cuda)) continue;
        pr_dtype want = pr_prec_is_float(n->req_compute) ? n->req_compute : dflt;
        /* an int8 op's float output is stored in the type its output rule asks
         * (not the float remainder's type, then cast) */
        if (int8_op(n) && !pr_prec_is_float(n->req_compute) && pr_prec_is_float(n->req_output))
            want = n->req_output;
        dc[i] = PRECIS_FLOAT32;
        if (want == PRECIS_FLOAT32) continue;
        if (try_low(g, n, want, cuda)) {
            dc[i] = want;
        } else if (n->req_compute == want) {
            bool any = false; /* nodes without float activations compute in their own types */
            for (int k = 0; k < n->n_inputs && !any; k++) any = is_act(g, n->inputs[k], PRECIS_FLOAT32);
            for (int k = 0; k < n->n_outputs && !any; k++) any = is_act(g, n->outputs[k], PRECIS_FLOAT32);
            if (any)
                pr_prec_note(g, n, "no %s kernel for %s %s", pr_prec_type_name(want), n->op_type,
                             cuda ? "on the cuda backend" : "on this CPU");
        }
    }
    /* tensors produced by low nodes become low */
    for (int i = 0; i < n0; i++) {
        if (!dc[i] || dc[i] == PRECIS_FLOAT32) continue;
        const pr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++)
            if (is_act(g, n->outputs[k], PRECIS_FLOAT32)) g->tensors[n->outputs[k]].dtype = dc[i];
    }
    pr_convert cv = {0};
    precis_status st = PRECIS_OK;
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (!float_act(g, t) || g->tensors[t].dtype == PRECIS_FLOAT32 || g->tensors[t].producer < 0)
            continue;
        int nt = pr_convert_detach_output(g, t, "low", e);
        if (nt < 0) goto oom;
        g->tensors[t].dtype = PRECIS_FLOAT32;
        if ((st = pr_convert_output(g, &cv, nt, t, PR_CONVERT_CAST, e))) goto fail;
    }
    for (int i = 0; i < n0; i++) {
        if (dtype_free(&g->nodes[i])) continue;
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int t = g->nodes[i].inputs[k], src = t;
            if (!float_act(g, t)) continue;
            /* an output type asked of the producer: consumers read that type */
            int p = g->tensors[t].producer;
            pr_dtype ro = p >= 0 ? g->nodes[p].req_output : PRECIS_UNDEFINED;
            if (pr_prec_is_float(ro) && ro != g->tensors[t].dtype &&
                (src = pr_convert_get(g, &cv, t, PR_CONVERT_CAST, (int)ro, e)) < 0)
                goto oom;
            pr_dtype want = dc[i] ? dc[i] : PRECIS_FLOAT32;
            if (reads_as_stored(&g->nodes[i], cuda)) want = g->tensors[src].dtype;
            if (g->tensors[src].dtype != want &&
                (src = pr_convert_get(g, &cv, src, PR_CONVERT_CAST, (int)want, e)) < 0)
                goto oom;
            g->nodes[i].inputs[k] = src;
        }
    }
    free(dc);
    return pr_convert_finish(g, &cv, e);
oom:
    st = e->status ? e->status : pr_errf(e, PRECIS_ERR_OOM, "out of memory");
fail:
    free(dc);
    pr_convert_finish(g, &cv, e);
    return st;
}
