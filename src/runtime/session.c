/* precis_session: runs a model node by node on the ref backend. Activations
 * are freed as soon as their last consumer has run. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/api.h"
#include "runtime/exec.h"
#include "runtime/tensor.h"

struct precis_session {
    const precis_model *m;
    int num_threads;
    int *last_use; /* per tensor: index of the last node reading it; INT_MAX for outputs */
};

precis_status precis_session_create(precis_ctx *ctx, const precis_model *m,
                                    const precis_session_options *opt, precis_session **out) {
    if (!ctx || !m || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_session_create: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    if (opt && opt->backend && strcmp(opt->backend, "ref") != 0)
        return pr_ctx_fail(ctx, PRECIS_ERR_UNSUPPORTED, "unknown backend '%s' (available: ref)",
                           opt->backend);
    const pr_graph *g = m->g;
    /* Refuse ops precis cannot run now rather than halfway through a run. */
    for (int i = 0; i < g->n_nodes; i++) {
        precis_status st = pr_exec_check_supported(&g->nodes[i], &ctx->err);
        if (st) return st;
    }
    precis_session *s = calloc(1, sizeof *s);
    int *lu = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *lu);
    if (!s || !lu) {
        free(s);
        free(lu);
        return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    }
    for (int t = 0; t < g->n_tensors; t++) lu[t] = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) lu[g->nodes[i].inputs[k]] = i;
    for (int k = 0; k < g->n_outputs; k++) lu[g->outputs[k]] = INT_MAX;
    s->m = m;
    s->num_threads = opt && opt->num_threads > 0 ? opt->num_threads : 1;
    s->last_use = lu;
    *out = s;
    return PRECIS_OK;
}

void precis_session_destroy(precis_session *s) {
    if (!s) return;
    free(s->last_use);
    free(s);
}

precis_status pr_check_input(const pr_graph *g, const pr_tensor *decl, const pr_buf *b,
                                 int64_t *sym, pr_err *e) {
    char want[256], got[256];
    bool ok = decl->dtype == PRECIS_UNDEFINED || decl->dtype == b->dtype;
    if (ok && decl->rank >= 0) {
        ok = decl->rank == b->rank;
        for (int i = 0; ok && i < b->rank; i++) {
            int64_t d = decl->dims[i];
            if (pr_dim_known(d)) {
                ok = d == b->dims[i];
            } else if (pr_dim_is_sym(d)) {
                int k = pr_dim_sym_index(d);
                /* "?" is how some exporters write "unknown", not a shared dim */
                if (strcmp(g->syms[k], "?") == 0) continue;
                if (sym[k] < 0) sym[k] = b->dims[i];
                else if (sym[k] != b->dims[i]) {
                    return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                                   "input '%s': dim %d ('%s') is %lld but another input set it to %lld",
                                   decl->name, i, g->syms[k], (long long)b->dims[i],
                                   (long long)sym[k]);
                }
            }
        }
    }
    if (ok) return PRECIS_OK;
    return pr_errf(e, PRECIS_ERR_INVALID_ARG, "input '%s': expected %s, got %s", decl->name,
                   pr_shape_str(g, decl->dtype, decl->rank, decl->dims, want, sizeof want),
                   pr_shape_str(g, b->dtype, b->rank, b->dims, got, sizeof got));
}

precis_status precis_session_run(precis_ctx *ctx, precis_session *s, int n_inputs,
                                 const char *const *names, const precis_tensor *const *inputs,
                                 precis_tensor **outputs) {
    if (!ctx || !s || (n_inputs > 0 && (!names || !inputs)) || !outputs)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_session_run: NULL argument");
    pr_err_clear(&ctx->err);
    pr_err *e = &ctx->err;
    pr_graph *g = s->m->g;
    precis_status st = PRECIS_OK;
    for (int k = 0; k < g->n_outputs; k++) outputs[k] = NULL;

    pr_buf *vals = calloc((size_t)g->n_tensors + 1, sizeof *vals);
    unsigned char *state = calloc((size_t)g->n_tensors + 1, 1); /* 1 bound view, 2 owned */
    int64_t *sym = malloc((size_t)(g->n_syms + 1) * sizeof *sym);
    if (!vals || !state || !sym) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < g->n_syms; i++) sym[i] = -1;

    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *x = &g->tensors[t];
        if (!(x->flags & PR_T_INIT)) continue;
        pr_buf *b = &vals[t];
        b->dtype = x->dtype;
        b->rank = x->rank;
        memcpy(b->dims, x->dims, sizeof b->dims);
        b->numel = pr_numel(x->rank, x->dims);
        b->data = x->data;
        b->nbytes = x->nbytes;
        state[t] = 1;
    }
    for (int i = 0; i < n_inputs; i++) {
        int t = pr_graph_find_tensor(g, names[i] ? names[i] : "");
        if (t < 0 || !(g->tensors[t].flags & PR_T_INPUT)) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "'%s' is not an input of the model",
                         names[i] ? names[i] : "(null)");
            goto fail;
        }
        if (state[t] == 3) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "input '%s' given twice", names[i]);
            goto fail;
        }
        if (!inputs[i]) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "input '%s' is NULL", names[i]);
            goto fail;
        }
        st = pr_check_input(g, &g->tensors[t], &inputs[i]->b, sym, e);
        if (st) goto fail;
        vals[t] = inputs[i]->b;
        state[t] = 3; /* bound to a caller's tensor */
    }
    for (int k = 0; k < g->n_inputs; k++) {
        if (state[g->inputs[k]] != 3) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "missing input '%s'",
                         g->tensors[g->inputs[k]].name);
            goto fail;
        }
    }

    for (int ni = 0; ni < g->n_nodes; ni++) {
        const pr_node *n = &g->nodes[ni];
        if (n->op == PR_OP_Constant && n->n_outputs == 1 && n->outputs[0] >= 0 &&
            state[n->outputs[0]])
            continue; /* the loader stored its value as an initializer */
        const pr_buf *in[64];
        pr_buf out[64];
        if (n->n_inputs > 64 || n->n_outputs > 64) {
            st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s': too many inputs/outputs", n->name);
            goto fail;
        }
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            in[k] = NULL;
            if (t < 0) continue;
            if (!state[t]) {
                st = pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                             "node '%s' (%s): input '%s' has no value (outer-scope or missing)",
                             n->name, n->op_type, g->tensors[t].name);
                goto fail;
            }
            in[k] = &vals[t];
        }
        st = pr_exec_node(g, n, in, out, s->num_threads, e);
        if (st) goto fail;
        for (int j = 0; j < n->n_outputs; j++) {
            int t = n->outputs[j];
            if (t < 0) continue;
            if (state[t] == 2) pr_buf_free(&vals[t]);
            vals[t] = out[j];
            state[t] = 2;
        }
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t >= 0 && state[t] == 2 && s->last_use[t] == ni) {
                pr_buf_free(&vals[t]);
                state[t] = 0;
            }
        }
    }

    for (int k = 0; k < g->n_outputs; k++) {
        int t = g->outputs[k];
        if (!state[t]) {
            st = pr_errf(e, PRECIS_ERR_INTERNAL, "output '%s' was not computed",
                         g->tensors[t].name);
            goto fail;
        }
        precis_tensor *o = calloc(1, sizeof *o);
        if (!o) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        bool dup = false; /* the same tensor listed twice as an output */
        for (int k2 = 0; k2 < k; k2++) dup |= g->outputs[k2] == t;
        if (state[t] == 2 && !dup && s->last_use[t] == INT_MAX) {
            o->b = vals[t]; /* move */
            state[t] = 4;
        } else {
            const pr_buf *src = &vals[t];
            st = pr_buf_alloc(&o->b, src->dtype, src->rank, src->dims, g->tensors[t].name, e);
            if (st) {
                free(o);
                goto fail;
            }
            if (src->nbytes) memcpy(o->b.data, src->data, src->nbytes);
        }
        outputs[k] = o;
    }
fail:
    if (vals)
        for (int t = 0; t < g->n_tensors; t++)
            if (state && state[t] == 2) pr_buf_free(&vals[t]);
    if (st)
        for (int k = 0; k < g->n_outputs; k++) {
            precis_tensor_destroy(outputs[k]);
            outputs[k] = NULL;
        }
    free(vals);
    free(state);
    free(sym);
    return st;
}
