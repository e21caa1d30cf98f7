/* Precision choice for a bf16/fp16 build: a node computes in the low type
 * when the CPU backend has a kernel for it with its float activations in
 * that type (weights stay float32 initializers; kernels convert them once).
 * A tensor is stored low when its producer computes low; Casts go where a
 * consumer wants the other type. Shape and Size read no data and take
 * either. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "passes/convert.h"
#include "passes/pass_plan.h"

static bool is_act(const pr_graph *g, int t, pr_dtype dt) {
    return t >= 0 && g->tensors[t].dtype == dt && !(g->tensors[t].flags & PR_T_INIT);
}

static bool dtype_free(const pr_node *n) { return n->op == PR_OP_Shape || n->op == PR_OP_Size; }

/* Try n with its float32 activations set to low (and, for rank-4 ones, in
 * either layout); restores everything. */
static bool try_low(pr_graph *g, const pr_node *n, pr_dtype low) {
    int ts[128], k = 0;
    for (int i = 0; i < n->n_inputs && k < 64; i++)
        if (is_act(g, n->inputs[i], PRECIS_FLOAT32)) ts[k++] = n->inputs[i];
    for (int i = 0; i < n->n_outputs && k < 128; i++)
        if (is_act(g, n->outputs[i], PRECIS_FLOAT32)) ts[k++] = n->outputs[i];
    if (!k) return false;
    for (int i = 0; i < k; i++) g->tensors[ts[i]].dtype = low;
    bool ok = false;
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

precis_status pr_plan_precision(pr_graph *g, pr_dtype low, pr_err *e) {
    int n0 = g->n_nodes;
    bool *lo = calloc((size_t)(n0 ? n0 : 1), sizeof *lo);
    if (!lo) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < n0; i++) lo[i] = !dtype_free(&g->nodes[i]) && try_low(g, &g->nodes[i], low);
    /* tensors produced by low nodes become low */
    for (int i = 0; i < n0; i++) {
        if (!lo[i]) continue;
        const pr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++)
            if (is_act(g, n->outputs[k], PRECIS_FLOAT32)) g->tensors[n->outputs[k]].dtype = low;
    }
    pr_convert cv = {0};
    precis_status st = PRECIS_OK;
    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (g->tensors[t].dtype != low || g->tensors[t].producer < 0) continue;
        int nt = pr_convert_detach_output(g, t, "low", e);
        if (nt < 0) goto oom;
        g->tensors[t].dtype = PRECIS_FLOAT32;
        if ((st = pr_convert_output(g, &cv, nt, t, PR_CONVERT_CAST, e))) goto fail;
    }
    for (int i = 0; i < n0; i++) {
        if (dtype_free(&g->nodes[i])) continue;
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int t = g->nodes[i].inputs[k];
            pr_dtype want = lo[i] ? low : PRECIS_FLOAT32;
            pr_dtype other = lo[i] ? PRECIS_FLOAT32 : low;
            if (!is_act(g, t, other)) continue;
            int nt = pr_convert_get(g, &cv, t, PR_CONVERT_CAST, (int)want, e);
            if (nt < 0) goto oom;
            g->nodes[i].inputs[k] = nt;
        }
    }
    free(lo);
    return pr_convert_finish(g, &cv, e);
oom:
    st = e->status ? e->status : pr_errf(e, PRECIS_ERR_OOM, "out of memory");
fail:
    free(lo);
    pr_convert_finish(g, &cv, e);
    return st;
}
