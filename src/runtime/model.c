/* precis_model: a loaded ONNX graph plus the queries `precis inspect` uses. */
#include <stdlib.h>
#include <string.h>

#include "ir/infer.h"
#include "onnx/onnx_import.h"
#include "runtime/api.h"
#include "runtime/exec.h"

static precis_status finish_load(precis_ctx *ctx, pr_graph *g, precis_model **out) {
    precis_status st = pr_graph_infer(g, &ctx->err);
    if (st) {
        pr_graph_destroy(g);
        return st;
    }
    precis_model *m = calloc(1, sizeof *m);
    if (!m) {
        pr_graph_destroy(g);
        return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    }
    m->g = g;
    *out = m;
    return PRECIS_OK;
}

precis_status precis_model_load(precis_ctx *ctx, const char *path, precis_model **out) {
    if (!ctx || !path || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_model_load: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    pr_graph *g = NULL;
    precis_status st = pr_onnx_load_file(path, &g, &ctx->err);
    if (st) return st;
    st = finish_load(ctx, g, out);
    if (st) pr_err_prefix(&ctx->err, "%s", path);
    return st;
}

precis_status precis_model_load_memory(precis_ctx *ctx, const void *buf, size_t len,
                                       const char *base_dir, precis_model **out) {
    if (!ctx || !buf || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_model_load_memory: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    pr_graph *g = NULL;
    precis_status st = pr_onnx_load_memory(buf, len, base_dir, &g, &ctx->err);
    if (st) return st;
    return finish_load(ctx, g, out);
}

void precis_model_destroy(precis_model *m) {
    if (!m) return;
    pr_graph_destroy(m->g);
    free(m->summary_mem);
    free(m);
}

precis_status precis_model_infer_shapes(precis_ctx *ctx, precis_model *m) {
    if (!ctx || !m) return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "NULL argument");
    pr_err_clear(&ctx->err);
    return pr_graph_infer(m->g, &ctx->err);
}

int precis_model_num_inputs(const precis_model *m) { return m ? m->g->n_inputs : 0; }
int precis_model_num_outputs(const precis_model *m) { return m ? m->g->n_outputs : 0; }

void pr_value_info(const pr_graph *g, int t, precis_value_info *out) {
    const pr_tensor *x = &g->tensors[t];
    memset(out, 0, sizeof *out);
    out->name = x->name;
    out->dtype = x->dtype;
    out->rank = x->rank;
    for (int i = 0; i < x->rank; i++) {
        out->dims[i] = pr_dim_known(x->dims[i]) ? x->dims[i] : -1;
        if (pr_dim_is_sym(x->dims[i])) out->dim_names[i] = g->syms[pr_dim_sym_index(x->dims[i])];
    }
}

precis_status precis_model_input(const precis_model *m, int i, precis_value_info *out) {
    if (!m || !out || i < 0 || i >= m->g->n_inputs) return PRECIS_ERR_INVALID_ARG;
    pr_value_info(m->g, m->g->inputs[i], out);
    return PRECIS_OK;
}

precis_status precis_model_output(const precis_model *m, int i, precis_value_info *out) {
    if (!m || !out || i < 0 || i >= m->g->n_outputs) return PRECIS_ERR_INVALID_ARG;
    pr_value_info(m->g, m->g->outputs[i], out);
    return PRECIS_OK;
}

typedef struct op_count {
    const char *name;
    int count, supported;
} op_count;

static int cmp_count(const void *a, const void *b) {
    const op_count *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->name, y->name);
}

precis_status precis_model_summarize(precis_ctx *ctx, const precis_model *m,
                                     precis_model_summary *out) {
    if (!ctx || !m || !out) return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "NULL argument");
    const pr_graph *g = m->g;
    memset(out, 0, sizeof *out);
    /* Everything lives in one block owned by the model (replaced on each call). */
    int nn = g->n_nodes;
    size_t sz = (size_t)(nn + 1) * (sizeof(op_count) + 2 * sizeof(char *) + 2 * sizeof(int)) +
                (size_t)(g->n_opsets + 1) * (sizeof(char *) + sizeof(int64_t)) +
                (size_t)(g->n_metadata + 1) * 2 * sizeof(char *);
    char *mem = calloc(1, sz);
    if (!mem) return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    op_count *oc = (op_count *)mem;
    int64_t *versions = (int64_t *)(oc + nn + 1);
    const char **domains = (const char **)(versions + g->n_opsets + 1);
    const char **types = domains + g->n_opsets + 1;
    const char **mkeys = types + nn + 1;
    const char **mvals = mkeys + g->n_metadata + 1;
    int *counts = (int *)(mvals + g->n_metadata + 1);
    int *supp = counts + nn + 1;

    int nt = 0;
    for (int i = 0; i < nn; i++) {
        const pr_node *n = &g->nodes[i];
        int k = 0;
        while (k < nt && strcmp(oc[k].name, n->op_type) != 0) k++;
        if (k == nt) {
            oc[nt].name = n->op_type;
            oc[nt].supported = pr_exec_supported_op(n);
            nt++;
        }
        oc[k].count++;
    }
    qsort(oc, (size_t)nt, sizeof *oc, cmp_count);
    for (int k = 0; k < nt; k++) {
        types[k] = oc[k].name;
        counts[k] = oc[k].count;
        supp[k] = oc[k].supported;
    }
    int64_t params = 0, pbytes = 0;
    int ninit = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *x = &g->tensors[t];
        if (!(x->flags & PR_T_INIT)) continue;
        ninit++;
        int64_t ne = pr_numel(x->rank, x->dims);
        if (ne > 0) params += ne;
        pbytes += (int64_t)x->nbytes;
    }
    for (int i = 0; i < g->n_opsets; i++) {
        domains[i] = g->opsets[i].domain;
        versions[i] = g->opsets[i].version;
    }
    for (int i = 0; i < g->n_metadata; i++) {
        mkeys[i] = g->metadata[i].key;
        mvals[i] = g->metadata[i].value;
    }
    free(((precis_model *)m)->summary_mem);
    ((precis_model *)m)->summary_mem = mem;
    out->ir_version = g->ir_version;
    out->producer_name = g->producer_name;
    out->producer_version = g->producer_version;
    out->graph_name = g->name;
    out->num_nodes = nn;
    out->num_initializers = ninit;
    out->num_parameters = params;
    out->parameter_bytes = pbytes;
    out->num_opsets = g->n_opsets;
    out->opset_domains = domains;
    out->opset_versions = versions;
    out->num_op_types = nt;
    out->op_types = types;
    out->op_counts = counts;
    out->op_supported = supp;
    out->num_metadata = g->n_metadata;
    out->metadata_keys = mkeys;
    out->metadata_values = mvals;
    return PRECIS_OK;
}
