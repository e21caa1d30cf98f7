/* Layout choice: activations between convolutions stay NHWC (what oneDNN's
 * brgconv and our FP16 convs want); every node the CPU backend can run on
 * NHWC data keeps the layout; elsewhere tensors are plain. Reorders are
 * inserted only where a producer's and a consumer's layouts differ, one per
 * tensor and target, and graph outputs are always plain. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cuda/cuda.h"
#include "passes/convert.h"
#include "passes/graph_edit.h"
#include "passes/pass_plan.h"

static bool is_float(pr_dtype d) {
    return d == PRECIS_FLOAT32 || d == PRECIS_BFLOAT16 || d == PRECIS_FLOAT16 ||
           d == PRECIS_INT8 || d == PRECIS_UINT8; /* quantized activations too */
}

/* A rank-4 float or quantized activation (not an initializer). */
static bool act4(const pr_graph *g, int t) {
    if (t < 0) return false;
    const pr_tensor *x = &g->tensors[t];
    return x->rank == 4 && is_float(x->dtype) && !(x->flags & PR_T_INIT);
}

static bool is_conv(const pr_node *n) {
    return n->op == PR_OP_Conv || n->op == PR_OP_FusedConv || n->op == PR_OP_ConvTranspose ||
           n->op == PR_OP_QConv;
}

static bool find_cuda(const pr_graph *g, const pr_node *n) {
#ifdef PRECIS_HAVE_CUDA
    return pr_cuda_find_impl(g, n) != NULL;
#else
    return false;
#endif
}

/* Would the backend run n with its rank-4 activations in NHWC? Sets the
 * layouts tentatively and restores them. */
static bool try_nhwc(pr_graph *g, const pr_node *n, bool cuda) {
    uint8_t saved[64];
    int ts[64], k = 0;
    for (int i = 0; i < n->n_inputs && k < 64; i++)
        if (act4(g, n->inputs[i])) ts[k++] = n->inputs[i];
    for (int i = 0; i < n->n_outputs && k < 64; i++)
        if (act4(g, n->outputs[i])) ts[k++] = n->outputs[i];
    if (!k) return false;
    for (int i = 0; i < k; i++) {
        saved[i] = g->tensors[ts[i]].layout;
        g->tensors[ts[i]].layout = PR_LAYOUT_NHWC;
    }
    bool ok = false;
    if (cuda) {
#ifdef PRECIS_HAVE_CUDA
        const pr_cuda_impl *cm = pr_cuda_find_impl(g, n);
        ok = cm && cm->nhwc_ok && cm->nhwc_ok(g, n);
#endif
    } else {
        const pr_cpu_impl *im = pr_cpu_find_impl(g, n);
        ok = im && im->nhwc_ok && im->nhwc_ok(g, n);
    }
    for (int i = k - 1; i >= 0; i--) g->tensors[ts[i]].layout = saved[i];
    return ok;
}

/* A QuantizeLinear (CPU and cuda) or a Cast (cuda: a plan's float32 input
 * cast to fp16 for the first conv) of a plain tensor whose only reader is an inserted
 * Reorder to NHWC writes NHWC itself when the backend's kernel takes that:
 * the Reorder goes (one pass over the data instead of two). */
static precis_status conv_into_nhwc(pr_graph *g, bool cuda, pr_err *e) {
    bool changed = false;
    for (int i = 0; i < g->n_nodes; i++) {
        pr_node *r = &g->nodes[i];
        if (pr_node_dead(r) || r->op != PR_OP_Reorder || !pr_node_inserted(r) || r->n_inputs != 1 ||
            r->n_outputs != 1)
            continue;
        int t = r->inputs[0], u = r->outputs[0], q = pr_producer(g, t), one;
        if (q < 0 ||
            (g->nodes[q].op != PR_OP_QuantizeLinear && !(cuda && g->nodes[q].op == PR_OP_Cast)) ||
            g->nodes[q].n_outputs != 1 ||
            g->tensors[t].layout != PR_LAYOUT_PLAIN || g->tensors[u].layout != PR_LAYOUT_NHWC ||
            pr_is_graph_output(g, t) || pr_consumers(g, t, &one, 1) != 1)
            continue;
        g->nodes[q].outputs[0] = u; /* tentatively, to ask the backend */
        bool ok = cuda ? find_cuda(g, &g->nodes[q]) : pr_cpu_find_impl(g, &g->nodes[q]) != NULL;
        g->nodes[q].outputs[0] = t;
        if (!ok) continue;
        pr_node_kill(g, NULL, i);
        precis_status st = pr_node_set_output(g, q, 0, u, e);
        if (st) return st;
        changed = true;
    }
    return changed ? pr_graph_compact(g, e) : PRECIS_OK;
}

precis_status pr_plan_layouts(pr_graph *g, pr_err *e) { return pr_plan_layouts_backend(g, false, e); }

precis_status pr_plan_layouts_backend(pr_graph *g, bool cuda, pr_err *e) {
    int n0 = g->n_nodes;
    bool *nhwc = calloc((size_t)(n0 ? n0 : 1), sizeof *nhwc);
    if (!nhwc) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int t = 0; t < g->n_tensors; t++) g->tensors[t].layout = PR_LAYOUT_PLAIN;
    /* 1. decide per node, in order: convs go NHWC; others follow an NHWC input */
    for (int i = 0; i < n0; i++) {
        const pr_node *n = &g->nodes[i];
        bool any_in = false;
        for (int k = 0; k < n->n_inputs; k++)
            if (act4(g, n->inputs[k]) && g->tensors[n->inputs[k]].layout == PR_LAYOUT_NHWC)
                any_in = true;
        if ((is_conv(n) || any_in) && try_nhwc(g, n, cuda)) {
            nhwc[i] = true;
            for (int k = 0; k < n->n_outputs; k++)
                if (act4(g, n->outputs[k])) g->tensors[n->outputs[k]].layout = PR_LAYOUT_NHWC;
        }
    }
    /* 2. graph outputs stay plain: the producer writes an NHWC copy */
    pr_convert cv = {0};
    precis_status st = PRECIS_OK;
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (g->tensors[t].layout != PR_LAYOUT_NHWC || g->tensors[t].producer < 0) continue;
        int nt = pr_convert_detach_output(g, t, "nhwc", e);
        if (nt < 0) goto oom;
        g->tensors[t].layout = PR_LAYOUT_PLAIN;
        if ((st = pr_convert_output(g, &cv, nt, t, PR_CONVERT_REORDER, e))) goto fail;
    }
    /* 3. reorders where a consumer wants the other layout */
    for (int i = 0; i < n0; i++) {
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int t = g->nodes[i].inputs[k];
            if (!act4(g, t)) continue;
            int want = nhwc[i] ? PR_LAYOUT_NHWC : PR_LAYOUT_PLAIN;
            if (g->tensors[t].layout == want) continue;
            int nt = pr_convert_get(g, &cv, t, PR_CONVERT_REORDER, want, e);
            if (nt < 0) goto oom;
            g->nodes[i].inputs[k] = nt;
        }
    }
    free(nhwc);
    st = pr_convert_finish(g, &cv, e);
    return st ? st : conv_into_nhwc(g, cuda, e);
oom:
    st = e->status ? e->status : pr_errf(e, PRECIS_ERR_OOM, "out of memory");
fail:
    free(nhwc);
    pr_convert_finish(g, &cv, e);
    return st;
}
