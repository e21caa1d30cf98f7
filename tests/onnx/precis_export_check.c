/* precis_export_check: optimize a model as precis_opt_check does
 * (pr_optimize, then shape inference) and write it back as ONNX with
 * pr_onnx_save, for tests/onnx/check_export_ort.py to run in ONNX Runtime.
 *
 *   precis_export_check [--static] [--no-opt] MODEL.onnx OUT.onnx [INPUT.npy | NAME=INPUT.npy ...]
 *
 * --static makes the graph inputs' dims those of the inputs given (an engine
 * built for fixed shapes) before optimizing; --no-opt exports the graph as
 * loaded. Paths starting with "cache:" are relative to $PRECIS_CACHE (default
 * ~/.cache/precis); a missing cache model exits 77 (ctest: skipped). Prints
 * the node counts and the op histogram of the optimized graph.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_export.h"
#include "passes/pass.h"
#include "precis/precis.h"
#include "runtime/api.h"

#define MAX_ARGS 64

static const char *resolve(const char *p, char *buf, size_t cap) {
    if (strncmp(p, "cache:", 6) != 0) return p;
    const char *c = getenv("PRECIS_CACHE");
    if (c && c[0])
        snprintf(buf, cap, "%s/%s", c, p + 6);
    else
        snprintf(buf, cap, "%s/.cache/precis/%s", getenv("HOME") ? getenv("HOME") : ".", p + 6);
    return buf;
}

static int count_op(const pr_graph *g, const char *op) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += strcmp(g->nodes[i].op_type, op) == 0;
    return c;
}

int main(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *inputs[MAX_ARGS];
    int n_inputs = 0, fixed = 0, opt = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--static"))
            fixed = 1;
        else if (!strcmp(a, "--no-opt"))
            opt = 0;
        else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "usage: precis_export_check [--static] [--no-opt] MODEL.onnx OUT.onnx "
                            "[INPUT.npy|NAME=INPUT.npy ...]\n");
            return 2;
        } else if (!model)
            model = a;
        else if (!out)
            out = a;
        else if (n_inputs < MAX_ARGS)
            inputs[n_inputs++] = a;
    }
    if (!model || !out) {
        fprintf(stderr, "precis_export_check: give a model and an output path\n");
        return 2;
    }
    char mbuf[4096];
    const char *mpath = resolve(model, mbuf, sizeof mbuf);
    FILE *f = fopen(mpath, "rb");
    if (!f) {
        printf("SKIP: %s: %s\n", mpath, strerror(errno));
        return strncmp(model, "cache:", 6) == 0 ? 77 : 3;
    }
    fclose(f);

    int rc = 1;
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m = NULL;
    if (!ctx || precis_model_load(ctx, mpath, &m)) goto fail;
    pr_graph *g = m->g;
    if (fixed) { /* as an engine built for these shapes: input dims become static */
        int ni = precis_model_num_inputs(m);
        for (int i = 0; i < ni; i++) {
            precis_value_info vi;
            precis_model_input(m, i, &vi);
            const char *file = NULL;
            size_t nl = strlen(vi.name);
            for (int k = 0; k < n_inputs; k++)
                if (!strncmp(inputs[k], vi.name, nl) && inputs[k][nl] == '=')
                    file = inputs[k] + nl + 1;
            if (!file && i < n_inputs && !strchr(inputs[i], '=')) file = inputs[i];
            if (!file) {
                fprintf(stderr, "--static: no data for input '%s'\n", vi.name);
                goto done;
            }
            char ibuf[4096];
            precis_tensor *t;
            if (precis_tensor_load_npy(ctx, resolve(file, ibuf, sizeof ibuf), &t)) goto fail;
            pr_tensor *x = &g->tensors[g->inputs[i]];
            x->rank = precis_tensor_rank(t);
            memcpy(x->dims, precis_tensor_dims(t), (size_t)x->rank * sizeof(int64_t));
            precis_tensor_destroy(t);
        }
        if (precis_model_infer_shapes(ctx, m)) goto fail;
    }
    int before = g->n_nodes;
    if (opt) {
        pr_pass_ctx pc = {&ctx->err, 0, 0};
        if (pr_optimize(g, &pc)) goto fail;
        if (precis_model_infer_shapes(ctx, m)) goto fail;
    }
    printf("nodes: %d -> %d\nops:", before, g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(g->nodes[j].op_type, g->nodes[i].op_type);
        if (!seen) printf(" %s=%d", g->nodes[i].op_type, count_op(g, g->nodes[i].op_type));
    }
    printf("\n");
    if (pr_onnx_save(g, out, &ctx->err)) goto fail;
    printf("wrote %s\n", out);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "precis_export_check: %s\n", ctx ? precis_last_error(ctx) : "out of memory");
    rc = 1;
done:
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
    return rc;
}
