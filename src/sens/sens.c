/* precis_sensitivity: per-layer INT8 sensitivity of a model (precis.h).
 *
 * Builds: the fp32 reference (sens_eval.c), the all-int8 baseline (which
 * calibrates once into the cache and lists the layers: the Conv,
 * ConvTranspose, MatMul and Gemm nodes it runs in int8, with the original
 * nodes fused into each one's step), then per layer
 *   only:    rules "*:fp32" then each fused node ":int8", plus the
 *            calibration-style fp32 engine of the same rules (same fusions,
 *            so the layer's step output has a same-named fp32 tensor);
 *   all_but: rules each fused node ":fp32";
 * every one after the caller's own rules, reading the same calibration
 * cache. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sens/sens_eval.h"
#include "sens/sens_run.h"

typedef struct sens_layer {
    char *name, *op;
    char **fused;
    int n_fused;
    pr_sens_acc *acc[2]; /* per compared output: only, all_but */
    double sig, noise;
    int has_local, only_int8;
    char *local_tensor;
    double seconds;
} sens_layer;

struct precis_sens {
    int n_out;
    char **out_names;
    pr_sens_acc *base[2]; /* fp32, int8 */
    sens_layer *L;
    int n_layers;
    int batches;
    int64_t samples;
    double seconds;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(int done, int total, double t0, double t_first) {
    double el = now_s() - t0, per = done > 2 ? (now_s() - t_first) / (done - 2) : 0;
    double left = per * (total - done);
    int w = 30, fill = total ? done * w / total : w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\rprecis: sensitivity [%s] %d/%d candidates, %.0f s, %.0f s left ", bar,
            done, total, el, left);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

static char *dup_s(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* "SEL:TYPE" selecting exactly the node `name` (a regex when the name would
 * read as a glob or a prefixed selector). */
char *pr_sens_exact_rule(const char *name, const char *type) {
    bool plain = !strpbrk(name, "*?[") && strncmp(name, "re:", 3) && strncmp(name, "op:", 3);
    size_t n = strlen(name);
    char *r = malloc(2 * n + 16 + strlen(type));
    if (!r) return NULL;
    char *w = r;
    if (plain) {
        memcpy(w, name, n);
        w += n;
    } else {
        w += sprintf(w, "re:^");
        for (const char *c = name; *c; c++) {
            if (strchr(".[]{}()\\*+?^$|", *c)) *w++ = '\\';
            *w++ = *c;
        }
        *w++ = '$';
    }
    sprintf(w, ":%s", type);
    return r;
}

typedef struct rule_set {
    const char **r;
    int n;
} rule_set;

static void rules_free(rule_set *rs, int from) {
    for (int i = from; i < rs->n; i++) free((char *)rs->r[i]);
    free(rs->r);
    rs->r = NULL;
    rs->n = 0;
}

/* The caller's rules, then (all != NULL) "all", then each fused node of l as
 * `type`. */
static precis_status rules_make(rule_set *rs, const precis_build_options *o, const char *all,
                                const sens_layer *l, const char *type, pr_err *err) {
    int n = o->n_layer_precision + 1 + l->n_fused;
    rs->r = calloc((size_t)n, sizeof *rs->r);
    rs->n = 0;
    if (!rs->r) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < o->n_layer_precision; i++) rs->r[rs->n++] = o->layer_precision[i];
    if (all && !(rs->r[rs->n++] = dup_s(all))) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < l->n_fused; i++)
        if (!(rs->r[rs->n++] = pr_sens_exact_rule(l->fused[i], type)))
            return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    return PRECIS_OK;
}

void precis_sens_destroy(precis_sens *s) {
    if (!s) return;
    for (int i = 0; i < s->n_layers; i++) {
        sens_layer *l = &s->L[i];
        free(l->name);
        free(l->op);
        for (int k = 0; k < l->n_fused; k++) free(l->fused[k]);
        free(l->fused);
        free(l->acc[0]);
        free(l->acc[1]);
        free(l->local_tensor);
    }
    free(s->L);
    for (int k = 0; k < s->n_out; k++) free(s->out_names[k]);
    free(s->out_names);
    free(s->base[0]);
    free(s->base[1]);
    free(s);
}

static pr_sens_acc *accs(int n) {
    pr_sens_acc *a = malloc((size_t)(n ? n : 1) * sizeof *a);
    for (int k = 0; a && k < n; k++) pr_sens_acc_init(&a[k]);
    return a;
}

static bool is_layer_op(const char *op) {
    return !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "MatMul") ||
           !strcmp(op, "Gemm");
}

static bool is_q8(precis_dtype t) { return t == PRECIS_INT8 || t == PRECIS_UINT8; }

/* The layers of the all-int8 engine e, with the original nodes of each one's step. */
static precis_status list_layers(precis_sens *s, const precis_engine *e, pr_err *err) {
    s->L = calloc((size_t)(e->n_nodes ? e->n_nodes : 1), sizeof *s->L);
    if (!s->L) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < e->n_nodes; i++) {
        const precis_node_info *ni = &e->nodes[i];
        if (!is_layer_op(ni->op) || !is_q8(ni->compute) || ni->step < 0 || !ni->name[0]) continue;
        const pr_step *st = &e->steps[ni->step];
        sens_layer *l = &s->L[s->n_layers++];
        l->name = dup_s(ni->name);
        l->op = dup_s(ni->op);
        l->fused = calloc((size_t)(st->n_origins + 1), sizeof *l->fused);
        l->acc[0] = accs(s->n_out);
        l->acc[1] = accs(s->n_out);
        if (!l->name || !l->op || !l->fused || !l->acc[0] || !l->acc[1])
            return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        for (int k = 0; k < st->n_origins; k++)
            if (st->origins[k][0] && !(l->fused[l->n_fused++] = dup_s(st->origins[k])))
                return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    }
    return PRECIS_OK;
}

/* The output tensor of the step of engine e that runs original node `name`, -1 if none. */
static int step_output(const precis_engine *e, const char *name, int *step) {
    for (int k = 0; k < e->n_steps; k++)
        for (int j = 0; j < e->steps[k].n_origins; j++)
            if (!strcmp(e->steps[k].origins[j], name)) {
                const pr_node *n = &e->g->nodes[e->steps[k].node];
                *step = k;
                return n->n_outputs ? n->outputs[0] : -1;
            }
    return -1;
}

/* Tensor of engine e named like `name` without an int8 suffix, computed by a step; -1 if none. */
static int float_twin(const precis_engine *e, const char *name) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", name);
    static const char *const suffix[] = {"/quantized", "/float"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        size_t n = strlen(buf), m = strlen(suffix[i]);
        if (n > m && !strcmp(buf + n - m, suffix[i])) buf[n - m] = 0;
    }
    int t = pr_graph_find_tensor(e->g, buf);
    return t >= 0 && e->first_def[t] >= 0 ? t : -1;
}

static precis_build_options int8_opts(const precis_build_options *o, const char *cache,
                                      const rule_set *rs) {
    precis_build_options b = *o;
    b.precision = "int8";
    b.calib_cache = cache;
    b.qdq_path = NULL;
    b.progress = 0;
    b.verbose = 0;
    b.strict = 0;
    if (rs) {
        b.layer_precision = rs->r;
        b.n_layer_precision = rs->n;
    }
    return b;
}

/* Layer l, "only" mode: the candidate and its fp32 twin, output metrics and local error. */
static precis_status run_only(precis_sens *s, sens_layer *l, pr_sens_eval *ev, const char *onnx,
                              const precis_build_options *o, const char *cache) {
    precis_ctx *ctx = ev->ctx;
    rule_set rs = {0};
    precis_engine *e = NULL, *f = NULL;
    pr_sens_local cap = {0}, cmp = {0};
    precis_status st = rules_make(&rs, o, "*:fp32", l, "int8", &ctx->err);
    if (st) goto done;
    precis_build_options b = int8_opts(o, cache, &rs);
    if ((st = pr_build_engine(ctx, onnx, &b, false, &e))) goto done;
    for (int i = 0; i < e->n_nodes; i++)
        if (!strcmp(e->nodes[i].name, l->name)) l->only_int8 = is_q8(e->nodes[i].compute);
    int step = -1, t = step_output(e, l->name, &step);
    precis_build_options fb = b;
    fb.precision = "fp32";
    if ((st = pr_build_engine(ctx, onnx, &fb, true, &f))) goto done;
    int tf = t >= 0 ? float_twin(f, e->g->tensors[t].name) : -1;
    cap = (pr_sens_local){.e = f, .target = tf, .n = -1};
    cmp = (pr_sens_local){.e = e, .target = tf >= 0 ? t : -1, .n = -1};
    st = pr_sens_eval_run(ev, e, l->acc[0], tf >= 0 ? f : NULL, tf >= 0 ? &cap : NULL, &cmp);
    if (st) goto done;
    if (tf >= 0 && !cmp.mismatch && cmp.seen) {
        l->has_local = 1;
        l->sig = cmp.sig;
        l->noise = cmp.noise;
        l->local_tensor = dup_s(f->g->tensors[tf].name);
    }
done:
    pr_sens_local_free(&cap);
    pr_sens_local_free(&cmp);
    precis_engine_destroy(e);
    precis_engine_destroy(f);
    rules_free(&rs, o->n_layer_precision);
    if (st) pr_err_prefix(&ctx->err, "sensitivity: layer '%s' int8 alone", l->name);
    (void)s;
    return st;
}

static precis_status run_all_but(sens_layer *l, pr_sens_eval *ev, const char *onnx,
                                 const precis_build_options *o, const char *cache) {
    precis_ctx *ctx = ev->ctx;
    rule_set rs = {0};
    precis_engine *e = NULL;
    precis_status st = rules_make(&rs, o, NULL, l, "fp32", &ctx->err);
    if (st) goto done;
    precis_build_options b = int8_opts(o, cache, &rs);
    if ((st = pr_build_engine(ctx, onnx, &b, false, &e))) goto done;
    st = pr_sens_eval_run(ev, e, l->acc[1], NULL, NULL, NULL);
done:
    precis_engine_destroy(e);
    rules_free(&rs, o->n_layer_precision);
    if (st) pr_err_prefix(&ctx->err, "sensitivity: layer '%s' fp32 in int8", l->name);
    return st;
}

precis_status pr_sens_check(precis_ctx *ctx, const precis_build_options *o,
                            const char *eval_data, const char *what) {
    if (o->precision && strcmp(o->precision, "int8"))
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "%s measures int8: precision '%s' does not apply", what, o->precision);
    if (o->backend && strcmp(o->backend, "cpu"))
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "%s needs the cpu backend (precision rules)", what);
    if (!eval_data)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "%s needs evaluation data (--eval-data)", what);
    if (!o->calib_data && !o->calib_cache)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "%s needs calibration data (--calib-data) or a calibration "
                           "cache (--calib-cache)", what);
    struct stat sb;
    if (stat(eval_data, &sb) != 0)
        return pr_ctx_fail(ctx, PRECIS_ERR_IO, "--eval-data '%s': no such file or folder",
                           eval_data);
    return PRECIS_OK;
}

precis_status precis_sensitivity(precis_ctx *ctx, const char *onnx_path,
                                 const precis_build_options *opt, const char *eval_data,
                                 int eval_batches, precis_sens **out) {
    if (!ctx || !onnx_path || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_sensitivity: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    pr_err *err = &ctx->err;
    precis_build_options def = {0};
    const precis_build_options *o = opt ? opt : &def;
    precis_status st = pr_sens_check(ctx, o, eval_data, "sensitivity");
    if (st) return st;
    pr_sens_eval ev;
    memset(&ev, 0, sizeof ev);
    char tmpdir[64] = "", cache_buf[128];
    const char *cache = o->calib_cache;
    if ((st = pr_sens_eval_open(&ev, ctx, onnx_path, o, eval_data, eval_batches))) goto fail;
    if (!cache) { /* calibrate once: a cache every candidate build reads */
        if ((st = pr_sens_tmp_cache(tmpdir, sizeof tmpdir, cache_buf, sizeof cache_buf, err)))
            goto fail;
        cache = cache_buf;
    }
    st = pr_sens_analyse(ctx, onnx_path, o, &ev, cache, out);
fail:
    pr_sens_eval_close(&ev);
    if (tmpdir[0]) {
        unlink(cache);
        rmdir(tmpdir);
    }
    return st;
}

precis_status pr_sens_tmp_cache(char *dir, size_t dir_cap, char *path, size_t path_cap,
                                pr_err *err) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, dir_cap, "%s/precis-sens-XXXXXX", t && strlen(t) < 40 ? t : "/tmp");
    if (!mkdtemp(dir)) {
        dir[0] = 0;
        return pr_errf(err, PRECIS_ERR_IO, "cannot create a temporary folder for the "
                       "calibration cache (pass --calib-cache)");
    }
    snprintf(path, path_cap, "%s/calib.cache", dir);
    return PRECIS_OK;
}

precis_status pr_sens_analyse(precis_ctx *ctx, const char *onnx_path,
                              const precis_build_options *o, pr_sens_eval *evp, const char *cache,
                              precis_sens **out) {
    pr_err *err = &ctx->err;
    double t0 = now_s();
    precis_sens *s = calloc(1, sizeof *s);
    precis_engine *e8 = NULL;
    bool bar = false;
    precis_status st;
    *out = NULL;
    if (!s) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    s->n_out = evp->n_cmp;
    s->out_names = calloc((size_t)s->n_out, sizeof *s->out_names);
    s->base[0] = accs(s->n_out);
    s->base[1] = accs(s->n_out);
    if (!s->out_names || !s->base[0] || !s->base[1]) {
        st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    for (int k = 0; k < s->n_out; k++)
        if (!(s->out_names[k] = dup_s(evp->ref->g->tensors[evp->ref->g->outputs[evp->cmp[k]]].name))) {
            st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
    if ((st = pr_sens_eval_run(evp, NULL, s->base[0], NULL, NULL, NULL))) goto fail;
    precis_build_options b8 = int8_opts(o, cache, NULL);
    b8.progress = o->progress;
    if ((st = pr_build_engine(ctx, onnx_path, &b8, false, &e8))) goto fail;
    if ((st = list_layers(s, e8, err))) goto fail;
    if (!s->n_layers) {
        st = pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                     "%s: no layer runs in int8 (no Conv, ConvTranspose, MatMul or Gemm with "
                     "an int8 kernel): nothing to analyse", onnx_path);
        goto fail;
    }
    if ((st = pr_sens_eval_run(evp, e8, s->base[1], NULL, NULL, NULL))) goto fail;
    precis_engine_destroy(e8);
    e8 = NULL;
    int total = 2 + 2 * s->n_layers, done = 2;
    double t_first = now_s();
    /* the time left counts from here (the baselines calibrated) */
    if (o->progress) progress(done, total, t0, t_first), bar = true;
    for (int i = 0; i < s->n_layers; i++) {
        sens_layer *l = &s->L[i];
        double tl = now_s();
        if ((st = run_only(s, l, evp, onnx_path, o, cache))) goto fail;
        if (o->progress) progress(++done, total, t0, t_first);
        if ((st = run_all_but(l, evp, onnx_path, o, cache))) goto fail;
        if (o->progress) progress(++done, total, t0, t_first);
        l->seconds = now_s() - tl;
    }
    s->batches = evp->batches;
    s->samples = evp->samples;
    s->seconds = now_s() - t0;
    *out = s;
    return PRECIS_OK;
fail:
    if (bar) fputc('\n', stderr); /* the error on a line of its own */
    precis_engine_destroy(e8);
    precis_sens_destroy(s);
    return st;
}

/* ------------------------------------------------------------- accessors */

int precis_sens_num_layers(const precis_sens *s) { return s ? s->n_layers : 0; }
int precis_sens_num_outputs(const precis_sens *s) { return s ? s->n_out : 0; }
const char *precis_sens_output_name(const precis_sens *s, int k) {
    return s && k >= 0 && k < s->n_out ? s->out_names[k] : "";
}
int precis_sens_eval_batches(const precis_sens *s) { return s ? s->batches : 0; }
int64_t precis_sens_eval_samples(const precis_sens *s) { return s ? s->samples : 0; }
double precis_sens_seconds(const precis_sens *s) { return s ? s->seconds : 0; }

static void worst(const precis_sens *s, const pr_sens_acc *a, precis_sens_metrics *m) {
    *m = (precis_sens_metrics){NAN, NAN, NAN, NAN, NAN};
    for (int k = 0; k < s->n_out; k++) {
        precis_sens_metrics w;
        pr_sens_acc_result(&a[k], &w);
        pr_sens_worst(m, &w);
    }
}

precis_status precis_sens_layer_get(const precis_sens *s, int i, precis_sens_layer *out) {
    if (!s || !out || i < 0 || i >= s->n_layers) return PRECIS_ERR_INVALID_ARG;
    const sens_layer *l = &s->L[i];
    memset(out, 0, sizeof *out);
    out->name = l->name;
    out->op = l->op;
    out->num_fused = l->n_fused;
    out->fused = (const char *const *)l->fused;
    worst(s, l->acc[0], &out->only);
    worst(s, l->acc[1], &out->all_but);
    out->local_sqnr_db = l->has_local ? pr_sens_sqnr_db(l->sig, l->noise) : NAN;
    out->local_tensor = l->local_tensor ? l->local_tensor : "";
    out->only_int8 = l->only_int8;
    out->seconds = l->seconds;
    return PRECIS_OK;
}

precis_status precis_sens_output_metrics(const precis_sens *s, int layer, int mode, int k,
                                         precis_sens_metrics *out) {
    if (!s || !out || layer < -1 || layer >= s->n_layers || mode < 0 || mode > 1 || k < 0 ||
        k >= s->n_out)
        return PRECIS_ERR_INVALID_ARG;
    const pr_sens_acc *a = layer < 0 ? s->base[mode] : s->L[layer].acc[mode];
    pr_sens_acc_result(&a[k], out);
    return PRECIS_OK;
}

precis_status precis_sens_baseline(const precis_sens *s, int fp32, precis_sens_metrics *out) {
    if (!s || !out) return PRECIS_ERR_INVALID_ARG;
    worst(s, s->base[fp32 ? 0 : 1], out);
    return PRECIS_OK;
}
