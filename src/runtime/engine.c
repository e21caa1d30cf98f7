/* precis_engine: build (ONNX -> passes -> precision -> layouts -> kernels),
 * save/load as a .plan file, and what inspect reports. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/engine.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/infer.h"
#include "onnx/onnx_import.h"
#include "passes/convert.h"
#include "passes/pass.h"
#include "passes/pass_plan.h"
#include "passes/prec_req.h"
#include "plan/plan_file.h"
#include "backends/cpu/qblock.h"
#include "runtime/exec.h"
#include "runtime/tactics.h"

/* ------------------------------------------------------------- profiles */

static int parse_dims(const char *s, const char *end, int64_t *d) {
    int r = 0;
    while (s < end) {
        char *q;
        long long v = strtoll(s, &q, 10);
        if (q == s || v < 1 || r >= PR_MAX_RANK) return -1;
        d[r++] = v;
        s = q;
        if (s < end && *s != 'x' && *s != 'X') return -1;
        if (s < end) s++;
    }
    return r;
}

precis_status pr_parse_profile(const pr_graph *g, const char *spec, pr_profile **prof, int *n,
                               pr_err *e) {
    *prof = NULL;
    *n = 0;
    if (!spec || !spec[0]) return PRECIS_OK;
    pr_profile *p = calloc((size_t)g->n_inputs + 1, sizeof *p);
    if (!p) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    const char *s = spec;
    while (*s) {
        const char *comma = strchr(s, ',');
        const char *end = comma ? comma : s + strlen(s);
        const char *colon = memchr(s, ':', (size_t)(end - s));
        if (!colon) {
            pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: '%.*s' is not NAME:MIN/OPT/MAX",
                    (int)(end - s), s);
            goto fail;
        }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(colon - s), s);
        int t = pr_graph_find_tensor(g, name);
        if (t < 0 || !(g->tensors[t].flags & PR_T_INPUT)) {
            pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: '%s' is not an input of the model", name);
            goto fail;
        }
        pr_profile *q = &p[*n];
        for (int k = 0; k < *n; k++)
            if (p[k].tensor == t) {
                pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: '%s' given twice", name);
                goto fail;
            }
        q->tensor = t;
        const char *parts[4] = {colon + 1, NULL, NULL, NULL};
        int np = 1;
        for (const char *c = colon + 1; c < end; c++)
            if (*c == '/' && np < 3) parts[np++] = c + 1;
        int64_t *dst[3] = {q->min, q->opt, q->max};
        int rank = -1;
        for (int k = 0; k < np; k++) {
            const char *pe = k + 1 < np ? parts[k + 1] - 1 : end;
            int r = parse_dims(parts[k], pe, dst[k]);
            if (r < 1 || (rank >= 0 && r != rank)) {
                pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: bad dims for '%s' in '%.*s'", name,
                        (int)(end - s), s);
                goto fail;
            }
            rank = r;
        }
        if (np != 1 && np != 3) {
            pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: '%s' needs MIN/OPT/MAX or one shape",
                    name);
            goto fail;
        }
        if (np == 1) {
            memcpy(q->opt, q->min, sizeof q->opt);
            memcpy(q->max, q->min, sizeof q->max);
        }
        q->rank = rank;
        const pr_tensor *x = &g->tensors[t];
        if (x->rank >= 0 && x->rank != rank) {
            pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: '%s' has rank %d, the profile gives %d",
                    name, x->rank, rank);
            goto fail;
        }
        for (int d = 0; d < rank; d++) {
            if (q->min[d] > q->opt[d] || q->opt[d] > q->max[d]) {
                pr_errf(e, PRECIS_ERR_INVALID_ARG, "--shapes: '%s' dim %d: need MIN <= OPT <= MAX",
                        name, d);
                goto fail;
            }
            if (x->rank >= 0 && pr_dim_known(x->dims[d]) &&
                (q->min[d] != x->dims[d] || q->max[d] != x->dims[d])) {
                pr_errf(e, PRECIS_ERR_INVALID_ARG,
                        "--shapes: '%s' dim %d is fixed at %lld in the model", name, d,
                        (long long)x->dims[d]);
                goto fail;
            }
        }
        (*n)++;
        s = comma ? comma + 1 : end;
    }
    *prof = p;
    return PRECIS_OK;
fail:
    free(p);
    *n = 0;
    return e->status;
}

/* ----------------------------------------------------------- metadata */

static const char *meta_get(const pr_graph *g, const char *key) {
    for (int i = 0; i < g->n_metadata; i++)
        if (strcmp(g->metadata[i].key, key) == 0) return g->metadata[i].value;
    return NULL;
}

static bool meta_set(pr_graph *g, const char *key, const char *value) {
    const char *v = pr_arena_strdup(g->arena, value ? value : "");
    if (!v) return false;
    for (int i = 0; i < g->n_metadata; i++)
        if (strcmp(g->metadata[i].key, key) == 0) {
            g->metadata[i].value = v;
            return true;
        }
    pr_kv *kv = pr_arena_alloc(g->arena, (size_t)(g->n_metadata + 1) * sizeof *kv);
    if (!kv) return false;
    if (g->n_metadata) memcpy(kv, g->metadata, (size_t)g->n_metadata * sizeof *kv);
    kv[g->n_metadata].key = pr_arena_strdup(g->arena, key);
    kv[g->n_metadata].value = v;
    if (!kv[g->n_metadata].key) return false;
    g->metadata = kv;
    g->n_metadata++;
    return true;
}

/* ------------------------------------------------------------- engine */

void precis_engine_destroy(precis_engine *e) {
    if (!e) return;
    for (int i = 0; i < e->n_steps; i++) {
        pr_step *s = &e->steps[i];
        if (s->impl && s->impl->destroy && s->state) s->impl->destroy(s->state);
        if (s->cuda && s->cuda->destroy && s->state) s->cuda->destroy(s->state);
        pr_cpu_block_destroy(s->block);
    }
#ifdef PRECIS_HAVE_CUDA
    pr_cuda_dev_close(e->cuda); /* after the impls: they free device memory */
#endif
    free(e->steps);
    free(e->prof);
    free(e->first_def);
    free(e->last_use);
    pr_graph_destroy(e->g);
    pr_tactics_destroy(e->tactics);
    free(e);
}

static bool has_feature(const pr_cpu_features *f, const char *name, size_t len) {
#define F(x)                                                                                       \
    if (len == strlen(#x) && strncmp(name, #x, len) == 0) return f->x;
    F(avx2) F(fma) F(f16c) F(avx512f) F(avx512bw) F(avx512vl) F(avx512dq) F(avx512_vnni)
    F(avx512_bf16) F(avx512_fp16) F(amx_tile) F(amx_int8) F(amx_bf16)
#undef F
    return false;
}

static precis_status check_requires(const char *req, pr_err *err) {
    const pr_cpu_features *f = pr_cpu_features_get();
    for (const char *s = req; s && *s;) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (len && !has_feature(f, s, len))
            return pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                           "the plan needs the CPU feature '%.*s', which this CPU lacks "
                           "(rebuild the plan on this machine)",
                           (int)len, s);
        s = c ? c + 1 : s + len;
    }
    return PRECIS_OK;
}

/* Fused blocks (backends/cpu/qblock.h) over the prepared CPU steps. */
static precis_status find_blocks(precis_engine *e, pr_err *err) {
    const pr_graph *g = e->g;
    for (int k = 0; k < e->n_steps;) {
        const pr_node *nodes[PR_CPU_BLOCK_MAX];
        const pr_cpu_impl *impls[PR_CPU_BLOCK_MAX];
        void *states[PR_CPU_BLOCK_MAX];
        int n = 0;
        for (; n < PR_CPU_BLOCK_MAX && k + n < e->n_steps; n++) {
            nodes[n] = &g->nodes[e->steps[k + n].node];
            impls[n] = e->steps[k + n].impl;
            states[n] = e->steps[k + n].state;
        }
        pr_cpu_block *b = NULL;
        int len = pr_cpu_block_match(g, nodes, impls, states, n, &b, err);
        if (len < 0) return err->status ? err->status : PRECIS_ERR_OOM;
        if (len < 2) {
            pr_cpu_block_destroy(b);
            k++;
            continue;
        }
        e->steps[k].block = b;
        e->steps[k].block_len = len;
        for (int m = 0; m < len; m++) e->steps[k + m].block_head = k + 1;
        k += len;
    }
    return PRECIS_OK;
}

/* Steps, kernels and lifetimes for e->g; prepares every kernel. */
static precis_status engine_init(precis_engine *e, pr_err *err) {
    pr_graph *g = e->g;
    e->steps = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *e->steps);
    e->first_def = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(int));
    e->last_use = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof(int));
    if (!e->steps || !e->first_def || !e->last_use)
        return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    precis_status st;
    bool cpu = strcmp(e->backend, "cpu") == 0, cuda = strcmp(e->backend, "cuda") == 0;
    if (!e->tactics && !(e->tactics = pr_tactics_create()))
        return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    pr_cpu_cfg cfg = {e->num_threads, e->tactics, e->untimed};
#ifdef PRECIS_HAVE_CUDA
    pr_cuda_cfg ccfg = {cuda ? pr_cuda_dev_exec(e->cuda) : NULL,
                        cuda ? pr_cuda_dev_tcache(e->cuda) : NULL};
#endif
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if (n->op == PR_OP_Constant && n->n_outputs == 1 && n->outputs[0] >= 0 &&
            (g->tensors[n->outputs[0]].flags & PR_T_INIT))
            continue; /* the loader stored its value as an initializer */
        if ((st = pr_exec_check_supported(n, err))) return st;
        pr_step *s = &e->steps[e->n_steps];
        s->node = i;
        s->impl = cpu ? pr_cpu_find_impl(g, n) : NULL;
#ifdef PRECIS_HAVE_CUDA
        s->cuda = cuda ? pr_cuda_find_impl(g, n) : NULL;
        if (s->cuda) {
            st = s->cuda->prepare(g, n, &ccfg, &s->state, err);
            if (st == PRECIS_ERR_UNSUPPORTED) { /* e.g. no cuDNN algorithm: the host runs it */
                if (getenv("PRECIS_VERBOSE"))
                    fprintf(stderr, "precis: node '%s' (%s) runs on the host: %s\n", n->name,
                            n->op_type, err->msg);
                pr_err_clear(err);
                s->cuda = NULL;
                s->state = NULL;
            } else if (st) {
                const char *nm = s->cuda->name;
                s->cuda = NULL;
                return pr_err_prefix(err, "node '%s' (%s, %s)", n->name, n->op_type, nm);
            }
        }
#endif
        if (!s->impl && !s->cuda)
            for (int j = 0; j < n->n_outputs; j++) /* ref knows no layouts */
                if (n->outputs[j] >= 0 && g->tensors[n->outputs[j]].layout != PR_LAYOUT_PLAIN)
                    return pr_errf(err, PRECIS_ERR_INTERNAL,
                                   "node '%s' (%s): no CPU kernel for its NHWC output", n->name,
                                   n->op_type);
        if (s->impl) {
            st = s->impl->prepare(g, n, &cfg, &s->state, err);
            if (st) {
                s->impl = NULL;
                return pr_err_prefix(err, "node '%s' (%s, %s)", n->name, n->op_type,
                                     s->impl ? s->impl->name : "?");
            }
        }
        e->n_steps++;
    }
#ifdef PRECIS_HAVE_CUDA
    if (cuda) { /* weights the device steps read as they are (not packed by their impl) */
        bool *need = calloc((size_t)g->n_tensors + 1, sizeof *need);
        if (!need) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        for (int k = 0; k < e->n_steps; k++) {
            const pr_step *s = &e->steps[k];
            const pr_node *n = &g->nodes[s->node];
            for (int j = 0; s->cuda && j < n->n_inputs; j++) {
                int t = n->inputs[j];
                if (t >= 0 && (g->tensors[t].flags & PR_T_INIT) &&
                    !(s->cuda->packs && s->cuda->packs(g, n, j)))
                    need[t] = true;
            }
        }
        st = pr_cuda_dev_upload_inits(e->cuda, g, need, err);
        free(need);
        if (st) return st;
    }
#endif
    for (int t = 0; t < g->n_tensors; t++) e->first_def[t] = e->last_use[t] = -1;
    for (int k = 0; k < e->n_steps; k++) {
        const pr_node *n = &g->nodes[e->steps[k].node];
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) e->first_def[n->outputs[j]] = k;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] >= 0) e->last_use[n->inputs[j]] = k;
    }
    for (int k = 0; k < g->n_outputs; k++) e->last_use[g->outputs[k]] = e->n_steps;
    if (cpu && (st = find_blocks(e, err))) return st;
    /* a block's members run interleaved (image by image): every tensor
     * they read or write lives from the block's first step to its last */
    for (int k = 0; k < e->n_steps; k++) {
        const pr_step *s = &e->steps[k];
        if (!s->block_head) continue;
        const int h = s->block_head - 1, last = h + e->steps[h].block_len - 1;
        const pr_node *n = &g->nodes[s->node];
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0 && e->first_def[n->outputs[j]] == k) {
                e->first_def[n->outputs[j]] = h;
                if (e->last_use[n->outputs[j]] < last) e->last_use[n->outputs[j]] = last;
            }
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] >= 0 && e->last_use[n->inputs[j]] < last)
                e->last_use[n->inputs[j]] = last;
    }
    /* kernel names and origins for inspect */
    for (int k = 0; k < e->n_steps; k++) {
        pr_step *s = &e->steps[k];
        const pr_node *n = &g->nodes[s->node];
        char buf[256];
        if (s->impl) {
            const char *d = s->impl->describe ? s->impl->describe(s->state) : NULL;
            if (d && strcmp(d, s->impl->name) != 0) snprintf(buf, sizeof buf, "%s %s", s->impl->name, d);
            else snprintf(buf, sizeof buf, "%s", s->impl->name);
        } else if (s->cuda) {
            const char *d = s->cuda->describe ? s->cuda->describe(s->state) : NULL;
            snprintf(buf, sizeof buf, "%s", d ? d : s->cuda->name);
        } else {
            snprintf(buf, sizeof buf, "%s", cuda ? "ref(host)" : "ref");
        }
        if (s->block_head) { /* "qblock[i/n] kernel" */
            char tmp[256];
            const pr_step *h = &e->steps[s->block_head - 1];
            const int i = k - (s->block_head - 1);
            const char *over = pr_cpu_block_member(h->block, i);
            snprintf(tmp, sizeof tmp, "qblock[%d/%d] %s", i + 1, h->block_len, over ? over : buf);
            memcpy(buf, tmp, sizeof buf);
        }
        s->kernel = pr_arena_strdup(g->arena, buf);
        if (n->n_origins > 0) {
            s->origins = n->origins;
            s->n_origins = n->n_origins;
        } else if (!pr_node_inserted(n)) {
            s->origins = pr_arena_alloc(g->arena, sizeof(char *));
            if (s->origins) s->origins[0] = n->name;
            s->n_origins = 1;
        }
        if (!s->kernel) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    }
    return PRECIS_OK;
}

static precis_status apply_profile(precis_engine *e, pr_err *err) {
    precis_status st = pr_parse_profile(e->g, e->shapes, &e->prof, &e->n_prof, err);
    if (st) return st;
    /* dims fixed by the profile (min == max) become static */
    for (int k = 0; k < e->n_prof; k++) {
        pr_tensor *x = &e->g->tensors[e->prof[k].tensor];
        if (x->rank < 0) x->rank = e->prof[k].rank;
        for (int d = 0; d < x->rank; d++)
            if (e->prof[k].min[d] == e->prof[k].max[d]) x->dims[d] = e->prof[k].min[d];
    }
    return PRECIS_OK;
}

/* Initializers no node reads any more (weights replaced by folded copies)
 * are dropped from the plan. */
static void drop_unused_inits(pr_graph *g) {
    unsigned char *used = calloc((size_t)g->n_tensors + 1, 1);
    if (!used) return;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) used[g->nodes[i].inputs[k]] = 1;
    for (int k = 0; k < g->n_outputs; k++) used[g->outputs[k]] = 1;
    for (int t = 0; t < g->n_tensors; t++) {
        pr_tensor *x = &g->tensors[t];
        if (used[t] || !(x->flags & PR_T_INIT) || x->producer >= 0) continue;
        x->flags &= ~(uint32_t)PR_T_INIT;
        x->data = NULL;
        x->nbytes = 0;
    }
    free(used);
}

static precis_dtype precision_dtype(const char *p) {
    if (strcmp(p, "bf16") == 0) return PRECIS_BFLOAT16;
    if (strcmp(p, "fp16") == 0) return PRECIS_FLOAT16;
    return PRECIS_FLOAT32;
}

static pr_dtype build_dtype(const char *p) {
    return strcmp(p, "int8") == 0   ? PRECIS_INT8
           : strcmp(p, "fp8") == 0 ? PRECIS_FLOAT8E4M3FN
                                   : precision_dtype(p);
}

#ifdef PRECIS_HAVE_CUDA
/* One run of a new cuda engine on zero inputs at its profile's opt shape, so
 * the choices the impls time at a shape's first run (the int8 convolutions'
 * routes) are made at build and travel with the plan (precis.cuda_tcache).
 * Skipped (OK) when an input dim is unknown at opt. */
static precis_status warm_cuda(precis_ctx *ctx, precis_engine *e) {
    int n = e->g->n_inputs, no = e->g->n_outputs;
    precis_tensor **in = calloc((size_t)(n ? n : 1), sizeof *in);
    precis_tensor **out = calloc((size_t)(no ? no : 1), sizeof *out);
    const char **names = calloc((size_t)(n ? n : 1), sizeof *names);
    precis_context *c = NULL;
    precis_status st = PRECIS_OK;
    if (!in || !out || !names) {
        st = pr_errf(&ctx->err, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        precis_value_info vi;
        pr_value_info(e->g, e->g->inputs[i], &vi);
        int64_t d[PRECIS_MAX_RANK];
        for (int k = 0; k < vi.rank; k++) {
            d[k] = vi.dims[k];
            for (int p = 0; p < e->n_prof; p++)
                if (e->prof[p].tensor == e->g->inputs[i] && k < e->prof[p].rank &&
                    e->prof[p].opt[k] >= 0)
                    d[k] = e->prof[p].opt[k];
            if (d[k] < 0) goto done; /* no shape to run at: the first run times */
        }
        if (vi.rank < 0) goto done;
        names[i] = vi.name;
        if ((st = precis_tensor_create(ctx, vi.dtype, vi.rank, d, &in[i]))) goto done;
    }
    if ((st = precis_context_create(ctx, e, &c)) ||
        (st = precis_context_run(ctx, c, n, names, (const precis_tensor *const *)in, out)))
        pr_err_prefix(&ctx->err, "the build's run at the opt shape");
done:
    precis_context_destroy(c);
    for (int j = 0; out && j < no; j++) precis_tensor_destroy(out[j]);
    for (int i = 0; in && i < n; i++) precis_tensor_destroy(in[i]);
    free(in);
    free(out);
    free(names);
    return st;
}
#endif

precis_status precis_build(precis_ctx *ctx, const char *onnx_path, const precis_build_options *o,
                           precis_engine **out) {
    return pr_build_engine(ctx, onnx_path, o, false, out);
}

precis_status pr_build_engine(precis_ctx *ctx, const char *onnx_path,
                              const precis_build_options *o, bool calibration,
                              precis_engine **out) {
    if (!ctx || !onnx_path || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_build: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    pr_err *err = &ctx->err;
    precis_build_options def = {0};
    if (!o) o = &def;
    const char *prec = o->precision ? o->precision : "fp32";
    const char *backend = o->backend ? o->backend : "cpu";
    if (strcmp(prec, "fp32") && strcmp(prec, "bf16") && strcmp(prec, "fp16") &&
        strcmp(prec, "int8") && strcmp(prec, "fp8"))
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "unknown precision '%s' (fp32, bf16, fp16, int8 or fp8)", prec);
    if (strcmp(backend, "cpu") && strcmp(backend, "ref") && strcmp(backend, "cuda"))
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "unknown backend '%s' (cpu, cuda or ref)",
                           backend);
    /* int8 / fp8 (e4m3): calibrated and quantized (build_int8.c). A calibration
     * engine (calibration: fp32 on the cpu) is stamped with the quantized type
     * so that it fuses as the quantized build will. */
    pr_dtype bdt = build_dtype(prec);
    bool fp8 = bdt == PRECIS_FLOAT8E4M3FN;
    bool int8 = !calibration && (bdt == PRECIS_INT8 || fp8), cuda = strcmp(backend, "cuda") == 0;
    if (int8 && fp8 && strcmp(backend, "cpu") == 0)
        return pr_ctx_fail(ctx, PRECIS_ERR_UNSUPPORTED,
                           "fp8 runs on the cuda backend (Hopper FP8 Tensor Cores); the cpu "
                           "backend has no fp8 kernels (--device ref runs the fp8 QDQ model)");
#ifndef PRECIS_HAVE_CUDA
    if (cuda)
        return pr_ctx_fail(ctx, PRECIS_ERR_UNSUPPORTED,
                           "this precis was built without CUDA: the cuda backend is not available");
#endif
    if (int8 && o->no_optimize)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "int8 needs the graph passes");
    if (strcmp(backend, "ref") == 0 && strcmp(prec, "fp32") != 0 && !int8)
        return pr_ctx_fail(ctx, PRECIS_ERR_UNSUPPORTED,
                           "the ref backend runs the model as written (fp32, or int8/fp8 as QDQ)");
    pr_prec_rules rules = {0};
    precis_status st = pr_engine_rules(o, &rules, err);
    if (st) {
        pr_rules_free(&rules);
        return st;
    }
    if (rules.n && strcmp(backend, "ref") == 0) {
        pr_rules_free(&rules);
        return pr_ctx_fail(ctx, PRECIS_ERR_UNSUPPORTED,
                           "precision rules need the cpu backend (ref runs the model as written)");
    }
    precis_engine *e = calloc(1, sizeof *e);
    if (!e) {
        pr_rules_free(&rules);
        return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    }
    e->untimed = calibration;
    if (o->timing_cache && !cuda) {
        st = pr_errf(err, PRECIS_ERR_INVALID_ARG, "--timing-cache is for the cuda backend");
        goto fail;
    }
#ifdef PRECIS_HAVE_CUDA
    if (cuda && (st = pr_cuda_dev_open(&e->cuda, err))) goto fail;
    if (cuda && (st = pr_cuda_dev_open_tcache(e->cuda, o->timing_cache, err))) goto fail;
    if (cuda && int8 && fp8) { /* e4m3 Tensor Cores: sm_89 (Ada) and later */
        const char *arch = pr_cuda_dev_arch(e->cuda);
        int sm = arch && !strncmp(arch, "sm_", 3) ? atoi(arch + 3) : 0;
        if (sm < 89) {
            st = pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                         "fp8 needs a GPU with FP8 Tensor Cores (sm_89 or later); this %s is %s",
                         pr_cuda_dev_name(e->cuda), arch ? arch : "unknown");
            goto fail;
        }
    }
#endif
    st = pr_onnx_load_file(onnx_path, &e->g, err);
    if (st) goto fail;
    e->num_threads = o->num_threads > 0 ? o->num_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (e->num_threads < 1) e->num_threads = 1;
    e->shapes = o->shapes ? pr_arena_strdup(e->g->arena, o->shapes) : "";
    if ((st = apply_profile(e, err))) goto fail;
    if ((st = pr_graph_infer(e->g, err))) goto fail;
    /* requests on the nodes as imported; calibration fuses as the int8 build will */
    if ((st = pr_prec_stamp(e->g, &rules, calibration ? (fp8 ? bdt : PRECIS_INT8) : bdt, err)))
        goto fail;
    bool cpu = strcmp(backend, "cpu") == 0;
    if ((cpu || cuda || int8) && !o->no_optimize) {
        pr_pass_ctx pc = {err, o->verbose, 0};
        if ((st = pr_optimize(e->g, &pc))) goto fail;
        drop_unused_inits(e->g);
    } else if ((st = pr_prec_apply_late(e->g, err))) { /* nothing recognized: an error */
        goto fail;
    }
    if (int8) {
        if ((st = pr_build_int8(ctx, onnx_path, o, e->g, bdt, cpu || cuda, cuda, err))) goto fail;
        drop_unused_inits(e->g);
    }
    precis_dtype low = precision_dtype(prec);
    /* cuda int8 / fp8: the float remainder (LayerNorm, attention, GELU, softmax...)
     * in fp16 unless PRECIS_CUDA_INT8_FLOAT=fp32 */
    const char *i8f = getenv("PRECIS_CUDA_INT8_FLOAT");
    if (cuda && int8 && !(i8f && !strcmp(i8f, "fp32"))) low = PRECIS_FLOAT16;
    if ((cpu || cuda) && !calibration && (low != PRECIS_FLOAT32 || pr_prec_any(e->g)) &&
        (st = pr_plan_precision_backend(e->g, low, cuda, err)))
        goto fail;
    /* PRECIS_CUDA_LAYOUT=nchw keeps every tensor plain (to measure NHWC's gain) */
    const char *lay = getenv("PRECIS_CUDA_LAYOUT");
    bool plain_only = cuda && lay && strcmp(lay, "nchw") == 0;
    if ((cpu || cuda) && !plain_only && (st = pr_plan_layouts_backend(e->g, cuda, err)))
        goto fail;
    if (cuda && !calibration && (st = pr_fold_attention_heads(e->g, err))) goto fail;
    if (cuda && !calibration && (st = pr_fold_fp8_quantize(e->g, err))) goto fail;
    char threads[16];
    snprintf(threads, sizeof threads, "%d", e->num_threads);
    const char *req = low == PRECIS_BFLOAT16 ? "avx512f,avx512bw" : "";
    char target[64];
    snprintf(target, sizeof target, "%s", pr_cpu_isa_name());
#ifdef PRECIS_HAVE_CUDA
    if (cuda) { /* the GPU's compute capability: kernels and algorithms were chosen for it */
        snprintf(target, sizeof target, "cuda:%s", pr_cuda_dev_arch(e->cuda));
        req = pr_cuda_dev_arch(e->cuda);
        if (!meta_set(e->g, "precis.cuda_device", pr_cuda_dev_name(e->cuda))) {
            st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
    }
#endif
    if (!meta_set(e->g, "precis.precision", prec) || !meta_set(e->g, "precis.backend", backend) ||
        !meta_set(e->g, "precis.threads", threads) || !meta_set(e->g, "precis.shapes", e->shapes) ||
        !meta_set(e->g, "precis.target", target) ||
        !meta_set(e->g, "precis.requires", req) ||
        !meta_set(e->g, "precis.version", precis_version())) {
        st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    e->precision = meta_get(e->g, "precis.precision");
    e->backend = meta_get(e->g, "precis.backend");
    e->target = meta_get(e->g, "precis.target");
    e->requires = meta_get(e->g, "precis.requires");
    if ((st = engine_init(e, err))) goto fail;
#ifdef PRECIS_HAVE_CUDA
    if (cuda && !calibration && (st = warm_cuda(ctx, e))) goto fail;
    if (cuda && o->timing_cache) {
        int hits = 0, added = 0;
        if ((st = pr_cuda_dev_save_tcache(e->cuda, &hits, &added, err))) goto fail;
        if (o->verbose)
            fprintf(stderr, "precis: timing cache '%s': %d choices reused, %d new\n",
                    o->timing_cache, hits, added);
    }
#endif
    if ((st = pr_prec_report_build(e, o->strict && !calibration, err))) goto fail;
    if (o->verbose)
        for (int k = 0; k < e->n_steps; k++)
            fprintf(stderr, "precis: step %d %s (%s): %s\n", k, e->g->nodes[e->steps[k].node].name,
                    e->g->nodes[e->steps[k].node].op_type, e->steps[k].kernel);
    pr_rules_free(&rules);
    *out = e;
    return PRECIS_OK;
fail:
    pr_rules_free(&rules);
    precis_engine_destroy(e);
    pr_err_prefix(err, "%s", onnx_path);
    return st;
}

precis_status precis_engine_save(precis_ctx *ctx, const precis_engine *e, const char *path) {
    if (!ctx || !e || !path)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_engine_save: NULL argument");
    pr_err_clear(&ctx->err);
    /* the choices timed so far travel with the plan (tactics.h) */
    char *tac = pr_tactics_text(e->tactics);
    bool ok = tac && (!tac[0] || meta_set(e->g, "precis.tactics", tac));
    free(tac);
#ifdef PRECIS_HAVE_CUDA
    if (ok && e->cuda) { /* and the GPU's (cuda_tcache.h: the timing cache's text) */
        char *tc = pr_cuda_dev_tcache_text(e->cuda);
        ok = tc && meta_set(e->g, "precis.cuda_tcache", tc);
        free(tc);
    }
#endif
    if (!ok) return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    return pr_plan_save(e->g, path, &ctx->err);
}

precis_status precis_engine_load(precis_ctx *ctx, const char *path, int num_threads,
                                 precis_engine **out) {
    if (!ctx || !path || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_engine_load: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    pr_err *err = &ctx->err;
    precis_engine *e = calloc(1, sizeof *e);
    if (!e) return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    precis_status st = pr_plan_load(path, &e->g, err);
    if (st) goto fail;
    e->precision = meta_get(e->g, "precis.precision");
    e->backend = meta_get(e->g, "precis.backend");
    e->target = meta_get(e->g, "precis.target");
    e->requires = meta_get(e->g, "precis.requires");
    e->shapes = meta_get(e->g, "precis.shapes");
    const char *th = meta_get(e->g, "precis.threads");
    if (!e->precision || !e->backend || !e->target || !e->requires || !e->shapes || !th) {
        st = pr_errf(err, PRECIS_ERR_PARSE, "not an engine plan (build metadata missing)");
        goto fail;
    }
    bool cuda = strcmp(e->backend, "cuda") == 0;
    if (strcmp(e->backend, "cpu") && strcmp(e->backend, "ref") && !cuda) {
        st = pr_errf(err, PRECIS_ERR_UNSUPPORTED, "plan built for backend '%s'", e->backend);
        goto fail;
    }
    if (cuda) {
#ifdef PRECIS_HAVE_CUDA
        if ((st = pr_cuda_dev_open(&e->cuda, err))) goto fail;
        if (strcmp(e->requires, pr_cuda_dev_arch(e->cuda))) {
            st = pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                         "the plan was built for a %s GPU, this one (%s) is %s: rebuild the plan "
                         "on this machine",
                         e->requires, pr_cuda_dev_name(e->cuda), pr_cuda_dev_arch(e->cuda));
            goto fail;
        }
        bool reused = false;
        if ((st = pr_cuda_dev_use_plan_tcache(e->cuda, meta_get(e->g, "precis.cuda_tcache"),
                                              &reused, err)))
            goto fail;
        if (!reused && meta_get(e->g, "precis.cuda_tcache") && getenv("PRECIS_VERBOSE"))
            fprintf(stderr, "precis: the plan's timed choices were made on another GPU or with "
                            "other CUDA library versions: timing again\n");
#else
        st = pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                     "the plan is for the cuda backend and this precis was built without CUDA");
        goto fail;
#endif
    } else if ((st = check_requires(e->requires, err))) {
        goto fail;
    }
    e->num_threads = num_threads > 0 ? num_threads : atoi(th);
    if (e->num_threads < 1) e->num_threads = 1;
    if ((st = pr_parse_profile(e->g, e->shapes, &e->prof, &e->n_prof, err))) goto fail;
    if (!(e->tactics = pr_tactics_create())) {
        st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    if ((st = pr_tactics_parse(e->tactics, meta_get(e->g, "precis.tactics"), err))) goto fail;
    if ((st = engine_init(e, err)) || (st = pr_prec_report_parse(e, err))) goto fail;
#ifdef PRECIS_HAVE_CUDA
    if (e->cuda && getenv("PRECIS_VERBOSE")) {
        int hits = 0, added = 0;
        pr_cuda_dev_tcache_counts(e->cuda, &hits, &added);
        fprintf(stderr, "precis: plan's timed GPU choices: %d reused, %d timed at load\n", hits,
                added);
    }
#endif
    *out = e;
    return PRECIS_OK;
fail:
    precis_engine_destroy(e);
    pr_err_prefix(err, "%s", path);
    return st;
}

int precis_engine_num_inputs(const precis_engine *e) { return e ? e->g->n_inputs : 0; }
int precis_engine_num_outputs(const precis_engine *e) { return e ? e->g->n_outputs : 0; }
precis_status precis_engine_input(const precis_engine *e, int i, precis_value_info *out) {
    if (!e || !out || i < 0 || i >= e->g->n_inputs) return PRECIS_ERR_INVALID_ARG;
    pr_value_info(e->g, e->g->inputs[i], out);
    return PRECIS_OK;
}
precis_status precis_engine_output(const precis_engine *e, int i, precis_value_info *out) {
    if (!e || !out || i < 0 || i >= e->g->n_outputs) return PRECIS_ERR_INVALID_ARG;
    pr_value_info(e->g, e->g->outputs[i], out);
    return PRECIS_OK;
}
const char *precis_engine_precision(const precis_engine *e) { return e ? e->precision : ""; }
const char *precis_engine_target(const precis_engine *e) { return e ? e->target : ""; }
int precis_engine_num_threads(const precis_engine *e) { return e ? e->num_threads : 0; }
int precis_engine_num_steps(const precis_engine *e) { return e ? e->n_steps : 0; }

precis_status precis_engine_step(const precis_engine *e, int i, precis_step_info *out) {
    if (!e || !out || i < 0 || i >= e->n_steps) return PRECIS_ERR_INVALID_ARG;
    const pr_step *s = &e->steps[i];
    const pr_node *n = &e->g->nodes[s->node];
    memset(out, 0, sizeof *out);
    out->name = n->name;
    out->op = n->op_type;
    out->kernel = s->kernel;
    out->compute = PRECIS_UNDEFINED;
    int t0 = n->n_outputs ? n->outputs[0] : -1;
    if (t0 >= 0) out->compute = e->g->tensors[t0].dtype;
    out->layout = t0 >= 0 && e->g->tensors[t0].layout == PR_LAYOUT_NHWC ? "nhwc" : "plain";
    out->num_origins = s->n_origins;
    out->origins = s->origins;
    return PRECIS_OK;
}

int precis_engine_step_inputs(const precis_engine *e, int i, int *producers, int cap) {
    if (!e || i < 0 || i >= e->n_steps || cap < 0 || (cap && !producers)) return -1;
    const pr_node *n = &e->g->nodes[e->steps[i].node];
    for (int j = 0; j < n->n_inputs && j < cap; j++) {
        int t = n->inputs[j];
        int k = t >= 0 ? e->first_def[t] : -1;
        producers[j] = k < i ? k : -1; /* a step reads only what earlier steps wrote */
    }
    return n->n_inputs;
}
