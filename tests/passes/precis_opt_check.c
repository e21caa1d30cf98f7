/* precis_opt_check: run a model on the ref backend before and after the
 * optimization passes (pr_optimize) and compare.
 *
 *   precis_opt_check [options] MODEL.onnx [INPUT.npy | NAME=INPUT.npy ...]
 *
 * Inputs not given are random (float: uniform [-1, 1), integers: 0 or 1)
 * with the declared shape; --shape NAME=2x3x48x320 sets shapes that are not
 * fully declared. --static makes the graph inputs' dims those of the inputs
 * given (as an engine built for fixed shapes) before optimizing; --dump
 * prints the optimized graph. Paths starting with "cache:" are relative to $PRECIS_CACHE
 * (default ~/.cache/precis); a missing model then exits 77 (ctest: skipped).
 *
 * Prints the node count before/after, the rewrites per pass, the op
 * histogram after, and per output max abs diff, max abs diff / max |ref| and
 * 1 - cosine. Fails (exit 1) when an output disagrees (--cos, --rel), when
 * the optimized graph is inconsistent, or when an --expect does not hold:
 *   --expect 'LayerNormalization>=5'   --expect 'BatchNormalization==0'
 *   --expect 'nodes<=300'              (op_type or "nodes"; >=, <=, ==)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "precis/precis.h"
#include "runtime/api.h"

#define MAX_ARGS 64

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* "cache:rel" -> $PRECIS_CACHE/rel (static buffer per call slot). */
static const char *resolve(const char *p, char *buf, size_t cap) {
    if (strncmp(p, "cache:", 6) != 0) return p;
    const char *c = getenv("PRECIS_CACHE");
    if (c && c[0])
        snprintf(buf, cap, "%s/%s", c, p + 6);
    else
        snprintf(buf, cap, "%s/.cache/precis/%s", getenv("HOME") ? getenv("HOME") : ".", p + 6);
    return buf;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static int parse_dims(const char *s, int64_t *d) {
    int r = 0;
    while (*s && r < PRECIS_MAX_RANK) {
        char *end;
        d[r++] = strtoll(s, &end, 10);
        if (end == s) return -1;
        s = *end == 'x' ? end + 1 : end;
        if (*end && *end != 'x') return -1;
    }
    return r;
}

static precis_tensor *random_input(precis_ctx *ctx, const precis_value_info *vi,
                                   const char *shape) {
    int64_t d[PRECIS_MAX_RANK];
    int r = vi->rank;
    if (shape) {
        r = parse_dims(shape, d);
        if (r < 0) return NULL;
    } else {
        if (r < 0) return NULL;
        for (int i = 0; i < r; i++) {
            d[i] = vi->dims[i];
            if (d[i] < 0) {
                fprintf(stderr, "input '%s': dim %d is not known; give --shape %s=...\n", vi->name,
                        i, vi->name);
                return NULL;
            }
        }
    }
    precis_tensor *t;
    if (precis_tensor_create(ctx, vi->dtype, r, d, &t)) return NULL;
    int64_t n = precis_tensor_numel(t);
    void *p = precis_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        switch (vi->dtype) {
        case PRECIS_FLOAT32: ((float *)p)[i] = (float)(urand() * 2 - 1); break;
        case PRECIS_FLOAT64: ((double *)p)[i] = urand() * 2 - 1; break;
        case PRECIS_INT64: ((int64_t *)p)[i] = urand() < 0.5 ? 0 : 1; break;
        case PRECIS_INT32: ((int32_t *)p)[i] = urand() < 0.5 ? 0 : 1; break;
        case PRECIS_BOOL:
        case PRECIS_UINT8: ((uint8_t *)p)[i] = urand() < 0.5 ? 0 : 1; break;
        default:
            fprintf(stderr, "input '%s': cannot make random %s\n", vi->name,
                    precis_dtype_name(vi->dtype));
            precis_tensor_destroy(t);
            return NULL;
        }
    }
    return t;
}

static double value_at(const precis_tensor *t, int64_t i) {
    const void *p = precis_tensor_data_const(t);
    switch (precis_tensor_dtype(t)) {
    case PRECIS_FLOAT32: return ((const float *)p)[i];
    case PRECIS_FLOAT64: return ((const double *)p)[i];
    case PRECIS_INT64: return (double)((const int64_t *)p)[i];
    case PRECIS_INT32: return ((const int32_t *)p)[i];
    case PRECIS_INT8: return ((const int8_t *)p)[i];
    case PRECIS_UINT8:
    case PRECIS_BOOL: return ((const uint8_t *)p)[i];
    default: return NAN;
    }
}

static precis_status run(precis_ctx *ctx, precis_model *m, int n_in, const char **names,
                         precis_tensor **ins, precis_tensor **outs, double *ms) {
    precis_session *s;
    precis_status st = precis_session_create(ctx, m, NULL, &s);
    if (st) return st;
    double t0 = now_ms();
    st = precis_session_run(ctx, s, n_in, names, (const precis_tensor *const *)ins, outs);
    *ms = now_ms() - t0;
    precis_session_destroy(s);
    return st;
}

static int count_op(const pr_graph *g, const char *op) {
    if (strcmp(op, "nodes") == 0) return g->n_nodes;
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += strcmp(g->nodes[i].op_type, op) == 0;
    return c;
}

/* "Op>=N" etc.; returns 1 if it holds, 0 if not, -1 if malformed. */
static int check_expect(const pr_graph *g, const char *ex) {
    const char *ops[] = {">=", "<=", "=="};
    for (int k = 0; k < 3; k++) {
        const char *p = strstr(ex, ops[k]);
        if (!p) continue;
        char name[256];
        size_t l = (size_t)(p - ex);
        if (l == 0 || l >= sizeof name) return -1;
        memcpy(name, ex, l);
        name[l] = 0;
        long want = strtol(p + 2, NULL, 10);
        int have = count_op(g, name);
        int ok = k == 0 ? have >= want : k == 1 ? have <= want : have == want;
        printf("expect %s: %s (have %d)\n", ex, ok ? "ok" : "FAILED", have);
        return ok;
    }
    return -1;
}

/* One line per node: op, name, inputs with shapes (C: initializer) -> outputs. */
static void dump_graph(const pr_graph *g) {
    char buf[256];
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        printf("  %d %s '%s' (", i, n->op_type, n->name);
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) {
                printf("%s-", k ? ", " : "");
                continue;
            }
            const pr_tensor *x = &g->tensors[t];
            printf("%s%s%s %s", k ? ", " : "", x->flags & PR_T_INIT ? "C:" : "", x->name,
                   pr_shape_str(g, x->dtype, x->rank, x->dims, buf, sizeof buf));
        }
        printf(") -> ");
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            if (t < 0) continue;
            const pr_tensor *x = &g->tensors[t];
            printf("%s %s ", x->name, pr_shape_str(g, x->dtype, x->rank, x->dims, buf, sizeof buf));
        }
        for (int a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].type == PR_ATTR_STRING)
                printf(" %s=%s", n->attrs[a].name, n->attrs[a].s);
            else if (n->attrs[a].type == PR_ATTR_FLOAT)
                printf(" %s=%g", n->attrs[a].name, n->attrs[a].f);
        if (n->n_origins > 1) printf(" [%d origins]", n->n_origins);
        printf("\n");
    }
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every origin is an original node name, and none is covered twice (a node
 * precis inserted, e.g. deconv_s2d's DepthToSpace, covers none). */
static int check_origins(const pr_graph *g, const char **orig, int n_orig) {
    int total = 0;
    for (int i = 0; i < g->n_nodes; i++) total += g->nodes[i].n_origins ? g->nodes[i].n_origins : 1;
    const char **all = malloc((size_t)(total + 1) * sizeof *all);
    if (!all) return 0;
    int k = 0, bad = 0, fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        fused += n->n_origins > 1;
        if (!n->n_origins && pr_attr_int(n, "precis_inserted", 0)) continue;
        for (int j = 0; j < (n->n_origins ? n->n_origins : 1); j++)
            all[k++] = n->n_origins ? n->origins[j] : n->name;
    }
    qsort(all, (size_t)k, sizeof *all, cmp_str);
    for (int i = 0; i < k; i++) {
        if (i && strcmp(all[i], all[i - 1]) == 0) {
            fprintf(stderr, "origin '%s' is covered twice\n", all[i]);
            bad++;
        }
        if (!bsearch(&all[i], orig, (size_t)n_orig, sizeof *orig, cmp_str)) {
            fprintf(stderr, "origin '%s' is not an original node\n", all[i]);
            bad++;
        }
    }
    printf("origins: %d original nodes covered by %d nodes (%d fused nodes cover more than one)\n",
           k, g->n_nodes, fused);
    free(all);
    return bad == 0;
}

int main(int argc, char **argv) {
    const char *model = NULL, *inputs[MAX_ARGS], *expects[MAX_ARGS], *shapes[MAX_ARGS];
    int n_inputs = 0, n_expects = 0, n_shapes = 0;
    double cos_tol = 1e-6, rel_tol = 1e-4;
    int dump = 0, fixed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--expect") && i + 1 < argc && n_expects < MAX_ARGS)
            expects[n_expects++] = argv[++i];
        else if (!strcmp(a, "--shape") && i + 1 < argc && n_shapes < MAX_ARGS)
            shapes[n_shapes++] = argv[++i];
        else if (!strcmp(a, "--cos") && i + 1 < argc)
            cos_tol = atof(argv[++i]);
        else if (!strcmp(a, "--rel") && i + 1 < argc)
            rel_tol = atof(argv[++i]);
        else if (!strcmp(a, "--dump"))
            dump = 1;
        else if (!strcmp(a, "--static"))
            fixed = 1;
        else if (!strcmp(a, "--seed") && i + 1 < argc)
            rng = strtoull(argv[++i], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
        else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "usage: precis_opt_check [--expect OP>=N] [--shape NAME=AxB] "
                            "[--static] [--dump] [--cos T] "
                            "[--rel T] [--seed S] MODEL.onnx [INPUT.npy|NAME=INPUT.npy ...]\n");
            return 2;
        } else if (!model)
            model = a;
        else if (n_inputs < MAX_ARGS)
            inputs[n_inputs++] = a;
    }
    if (!model) {
        fprintf(stderr, "precis_opt_check: no model given\n");
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
    precis_tensor *ins[MAX_ARGS] = {0}, *out0[MAX_ARGS] = {0}, *out1[MAX_ARGS] = {0};
    const char *names[MAX_ARGS];
    const char **orig = NULL;
    if (precis_model_load(ctx, mpath, &m)) goto fail;
    int ni = precis_model_num_inputs(m), no = precis_model_num_outputs(m);
    if (ni > MAX_ARGS || no > MAX_ARGS) {
        fprintf(stderr, "too many inputs/outputs\n");
        goto done;
    }
    for (int i = 0; i < ni; i++) {
        precis_value_info vi;
        precis_model_input(m, i, &vi);
        names[i] = vi.name;
        const char *file = NULL, *shape = NULL;
        size_t nl = strlen(vi.name);
        for (int k = 0; k < n_inputs; k++)
            if (!strncmp(inputs[k], vi.name, nl) && inputs[k][nl] == '=') file = inputs[k] + nl + 1;
        if (!file && i < n_inputs && !strchr(inputs[i], '=')) file = inputs[i];
        for (int k = 0; k < n_shapes; k++)
            if (!strncmp(shapes[k], vi.name, nl) && shapes[k][nl] == '=')
                shape = shapes[k] + nl + 1;
        if (file) {
            char ibuf[4096];
            const char *p = resolve(file, ibuf, sizeof ibuf);
            if (precis_tensor_load_npy(ctx, p, &ins[i])) goto fail;
            printf("input %s: %s\n", vi.name, p);
        } else {
            ins[i] = random_input(ctx, &vi, shape);
            if (!ins[i]) {
                fprintf(stderr, "input '%s': cannot make a random value\n", vi.name);
                goto done;
            }
            printf("input %s: random\n", vi.name);
        }
    }
    pr_graph *g = m->g;
    if (fixed) { /* as an engine built for these shapes: input dims become static */
        for (int i = 0; i < ni; i++) {
            pr_tensor *x = &g->tensors[g->inputs[i]];
            x->rank = precis_tensor_rank(ins[i]);
            memcpy(x->dims, precis_tensor_dims(ins[i]), (size_t)x->rank * sizeof(int64_t));
        }
        if (precis_model_infer_shapes(ctx, m)) goto fail;
    }
    int before = g->n_nodes;
    orig = malloc((size_t)(before + 1) * sizeof *orig);
    if (!orig) goto done;
    for (int i = 0; i < before; i++) orig[i] = g->nodes[i].name;
    qsort(orig, (size_t)before, sizeof *orig, cmp_str);

    double ms0, ms1;
    if (run(ctx, m, ni, names, ins, out0, &ms0)) goto fail;

    pr_pass_ctx pc = {&ctx->err, 1, 0};
    double t0 = now_ms();
    if (pr_optimize(g, &pc)) goto fail;
    double opt_ms = now_ms() - t0;
    if (precis_model_infer_shapes(ctx, m)) {
        fprintf(stderr, "shape inference on the optimized graph: ");
        goto fail;
    }
    if (run(ctx, m, ni, names, ins, out1, &ms1)) goto fail;

    printf("nodes: %d -> %d (%d rewrites, %.1f ms)\n", before, g->n_nodes, pc.changes, opt_ms);
    printf("ref run: %.1f ms -> %.1f ms\n", ms0, ms1);
    /* op histogram after */
    printf("ops after:");
    for (int i = 0; i < g->n_nodes; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(g->nodes[j].op_type, g->nodes[i].op_type);
        if (!seen) printf(" %s=%d", g->nodes[i].op_type, count_op(g, g->nodes[i].op_type));
    }
    printf("\n");
    if (dump) dump_graph(g);
    rc = 0;
    if (!check_origins(g, orig, before)) rc = 1;
    for (int k = 0; k < no; k++) {
        precis_value_info vi;
        precis_model_output(m, k, &vi);
        const precis_tensor *a = out0[k], *b = out1[k];
        int64_t n = precis_tensor_numel(a);
        bool same_shape = precis_tensor_rank(a) == precis_tensor_rank(b) &&
                          precis_tensor_dtype(a) == precis_tensor_dtype(b) &&
                          n == precis_tensor_numel(b) &&
                          !memcmp(precis_tensor_dims(a), precis_tensor_dims(b),
                                  (size_t)precis_tensor_rank(a) * sizeof(int64_t));
        if (!same_shape) {
            printf("output %s: shape or dtype differs\n", vi.name);
            rc = 1;
            continue;
        }
        double maxd = 0, maxa = 0, dot = 0, na = 0, nb = 0;
        int64_t nan_mismatch = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = value_at(a, i), y = value_at(b, i);
            if (isnan(x) || isnan(y)) {
                nan_mismatch += isnan(x) != isnan(y);
                continue;
            }
            double d = fabs(x - y);
            if (d > maxd) maxd = d;
            if (fabs(x) > maxa) maxa = fabs(x);
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        double cosd = na > 0 && nb > 0 ? 1 - dot / sqrt(na * nb) : (na == nb ? 0 : 1);
        if (cosd < 0) cosd = 0;
        double rel = maxa > 0 ? maxd / maxa : maxd;
        bool ok = nan_mismatch == 0 && cosd <= cos_tol && rel <= rel_tol;
        printf("output %s: %s[%lld] max abs diff %.3g, rel %.3g, 1-cos %.3g%s\n", vi.name,
               precis_dtype_name(precis_tensor_dtype(a)), (long long)n, maxd, rel, cosd,
               ok ? "" : "  FAILED");
        if (!ok) rc = 1;
    }
    for (int k = 0; k < n_expects; k++) {
        int r = check_expect(g, expects[k]);
        if (r < 0) fprintf(stderr, "bad --expect '%s'\n", expects[k]);
        if (r != 1) rc = 1;
    }
    printf("%s\n", rc ? "FAILED" : "OK");
    goto done;
fail:
    fprintf(stderr, "precis_opt_check: %s\n", precis_last_error(ctx));
    rc = 1;
done:
    for (int i = 0; i < MAX_ARGS; i++) {
        precis_tensor_destroy(ins[i]);
        precis_tensor_destroy(out0[i]);
        precis_tensor_destroy(out1[i]);
    }
    free(orig);
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
    return rc;
}
