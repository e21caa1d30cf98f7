/* precis_protect: automatic protection (precis.h). The search itself is in
 * protect_search.c; here: the budget, verifying a set (an int8 build with
 * the set's layers in protect_to, evaluated over the sensitivity's eval set
 * and timed), the cost model, the baselines and the accessors. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/batch_split.h"
#include "sens/protect_impl.h"
#include "sens/sens_run.h"

/* Everything a verification needs. */
typedef struct prot_run {
    precis_ctx *ctx;
    precis_protection *p;
    pr_sens_eval *ev;
    const char *onnx, *cache, *type;
    const precis_build_options *o;
    const precis_protect_options *po;
    int out_k; /* the compared output, -1: all */
    int runs;
    double *cost;
    int progress, verified, expect;
    double t0;
    pr_sens_acc *acc;
    char label[16];
    unsigned char *noted; /* per layer: a protect_to note was given */
} prot_run;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void note(precis_protection *p, const char *fmt, const char *a, const char *b) {
    char line[512];
    int w = snprintf(line, sizeof line, fmt, a, b);
    if (w < 0) return;
    char *q = realloc(p->notes, p->notes_len + (size_t)w + 2);
    if (!q) return;
    p->notes = q;
    memcpy(q + p->notes_len, line, (size_t)w);
    p->notes_len += (size_t)w;
    q[p->notes_len++] = '\n';
    q[p->notes_len] = 0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of `runs` timed runs of context c on the first eval batch (after
 * warm_up: the batch-split trial's runs). */
static precis_status time_ctx(prot_run *r, precis_context *c, double *ms_out, double *samples,
                              int k) {
    precis_tensor **set, *out[PR_SENS_MAX_IO] = {0};
    precis_status st = pr_sens_eval_batch(r->ev, 0, &set);
    if (st) return st;
    double t = now_s();
    st = precis_context_run(r->ctx, c, r->ev->ni, r->ev->names, (const precis_tensor *const *)set,
                            out);
    for (int j = 0; j < r->ev->no; j++) precis_tensor_destroy(out[j]), out[j] = NULL;
    if (st) return st;
    if (samples) samples[k] = 1e3 * (now_s() - t);
    if (ms_out) *ms_out = 1e3 * (now_s() - t);
    return PRECIS_OK;
}

static precis_status warm_up(prot_run *r, precis_context *c) {
    precis_status st = PRECIS_OK;
    for (int w = 0; !st && w < PR_SPLIT_TRIAL_RUNS; w++) st = time_ctx(r, c, NULL, NULL, 0);
    return st;
}

static precis_status median_ms(prot_run *r, precis_engine *e, double *ms) {
    precis_context *c = NULL;
    double *v = calloc((size_t)r->runs, sizeof *v);
    precis_status st = v ? precis_context_create(r->ctx, e, &c) : PRECIS_ERR_OOM;
    if (!st) st = warm_up(r, c);
    for (int i = 0; !st && i < r->runs; i++) st = time_ctx(r, c, NULL, v, i);
    if (!st) {
        qsort(v, (size_t)r->runs, sizeof *v, cmp_d);
        *ms = v[r->runs / 2];
    }
    precis_context_destroy(c);
    free(v);
    return st;
}

/* The budget value of condition c in m / user. */
static double cond_value(const prot_cond *c, const precis_sens_metrics *m, double user) {
    if (!strcmp(c->metric, "cosine")) return m->cosine;
    if (!strcmp(c->metric, "top1")) return m->top1;
    if (!strcmp(c->metric, "sqnr")) return m->sqnr_db;
    return user;
}

static pr_prot_verdict verdict(const precis_protection *p, const precis_sens_metrics *m,
                               double user) {
    pr_prot_verdict v = {INFINITY, isnan(m->sqnr_db) ? 0 : fmin(m->sqnr_db, 300)};
    for (int i = 0; i < p->n_cond; i++) {
        const prot_cond *c = &p->cond[i];
        double x = cond_value(c, m, user);
        double margin = c->kind == PRECIS_BUDGET_MIN ? x - c->threshold : c->threshold - x;
        if (isnan(margin)) margin = -INFINITY;
        double s = margin / (c->scale > 0 ? c->scale : 1);
        if (s < v.score) v.score = s;
    }
    return v;
}

/* The rules protecting the set `in` after the caller's; *n_out rules. */
static precis_status set_rules(prot_run *r, const unsigned char *in, const char ***out, int *n_out) {
    const precis_sens *s = r->p->sens;
    int n = r->o->n_layer_precision;
    for (int i = 0; i < r->p->n; i++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, i, &l);
        if (in[i]) n += l.num_fused;
    }
    const char **rs = calloc((size_t)(n ? n : 1), sizeof *rs);
    if (!rs) return pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
    int k = 0;
    for (int i = 0; i < r->o->n_layer_precision; i++) rs[k++] = r->o->layer_precision[i];
    for (int i = 0; i < r->p->n; i++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, i, &l);
        for (int j = 0; in[i] && j < l.num_fused; j++)
            if (!(rs[k++] = pr_sens_exact_rule(l.fused[j], r->type))) {
                *out = rs, *n_out = k - 1;
                return pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
            }
    }
    *out = rs;
    *n_out = k;
    return PRECIS_OK;
}

static void rules_free(prot_run *r, const char **rs, int n) {
    for (int i = r->o->n_layer_precision; rs && i < n; i++) free((char *)rs[i]);
    free(rs);
}

static precis_status build_set(prot_run *r, const unsigned char *in, precis_engine **e) {
    const char **rs = NULL;
    int n = 0;
    precis_status st = set_rules(r, in, &rs, &n);
    if (!st) {
        precis_build_options b = *r->o;
        b.precision = "int8";
        b.calib_cache = r->cache;
        b.qdq_path = NULL;
        b.progress = b.verbose = b.strict = 0;
        b.layer_precision = rs;
        b.n_layer_precision = n;
        st = pr_build_engine(r->ctx, r->onnx, &b, false, e);
    }
    rules_free(r, rs, n);
    return st;
}

/* protect_to not honoured for a protected layer: one note per layer. */
static void check_honoured(prot_run *r, const precis_engine *e, const unsigned char *in) {
    if (!strcmp(r->type, "fp32")) return;
    for (int i = 0; i < r->p->n; i++) {
        if (!in[i] || r->noted[i]) continue;
        precis_sens_layer l;
        precis_sens_layer_get(r->p->sens, i, &l);
        for (int k = 0; k < e->n_nodes; k++)
            if (!strcmp(e->nodes[k].name, l.name) && !e->nodes[k].honored) {
                char what[64];
                snprintf(what, sizeof what, "%s (%s)", r->type, e->nodes[k].reason);
                note(r->p, "--protect-to %s not honoured for layer '%s': it falls back", what,
                     l.name);
                r->noted[i] = 1;
            }
    }
}

static precis_status user_hook(void *u, int b, int n, const precis_tensor *const *cand,
                               const precis_tensor *const *ref) {
    const precis_user_metric *m = u;
    return m->batch(m->user, b, n, cand, ref);
}

/* The user metric's finish, with its message on failure. */
static precis_status user_finish(prot_run *r, double *score) {
    const precis_user_metric *m = r->po->user;
    precis_status st = m->finish(m->user, score);
    if (st)
        pr_errf(&r->ctx->err, st, "%s", m->error && m->error(m->user) ? m->error(m->user)
                                                                       : "user metric failed");
    return st;
}

/* Evaluates engine e (NULL: the reference) into *m (worst over the compared outputs) and *user. */
static precis_status evaluate(prot_run *r, precis_engine *e, precis_sens_metrics *m, double *user) {
    pr_sens_eval *ev = r->ev;
    for (int k = 0; k < ev->n_cmp; k++) pr_sens_acc_init(&r->acc[k]);
    bool u = r->po->user != NULL;
    ev->hook = u ? user_hook : NULL;
    ev->hook_user = u ? (void *)r->po->user : NULL;
    precis_status st = pr_sens_eval_run(ev, e, r->acc, NULL, NULL, NULL);
    ev->hook = NULL;
    if (st) return st;
    *user = NAN;
    if (u && (st = user_finish(r, user))) return st;
    *m = (precis_sens_metrics){NAN, NAN, NAN, NAN, NAN};
    for (int k = 0; k < ev->n_cmp; k++) {
        if (r->out_k >= 0 && k != r->out_k) continue;
        precis_sens_metrics w;
        pr_sens_acc_result(&r->acc[k], &w);
        pr_sens_worst(m, &w);
    }
    return PRECIS_OK;
}

static void progress_bar(prot_run *r) {
    if (!r->progress) return;
    double el = now_s() - r->t0;
    int total = r->verified > r->expect ? r->verified : r->expect;
    double left = r->verified ? el / r->verified * (total - r->verified) : 0;
    int w = 30, fill = total ? r->verified * w / total : w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\rprecis: protect [%s] %d sets verified, %.0f s, ~%.0f s left ", bar,
            r->verified, el, left);
    fflush(stderr);
}

static prot_cand *add_cand(precis_protection *p, const char *label, const unsigned char *in) {
    if (p->n_c == p->cap_c) {
        int cap = p->cap_c ? 2 * p->cap_c : 32;
        prot_cand *c = realloc(p->c, (size_t)cap * sizeof *c);
        if (!c) return NULL;
        p->c = c, p->cap_c = cap;
    }
    prot_cand *c = &p->c[p->n_c];
    memset(c, 0, sizeof *c);
    c->in = malloc((size_t)(p->n ? p->n : 1));
    c->layers = malloc((size_t)(p->n ? p->n : 1) * sizeof *c->layers);
    if (!c->in || !c->layers) {
        free(c->in), free(c->layers);
        return NULL;
    }
    memcpy(c->in, in, (size_t)p->n);
    for (int i = 0; i < p->n; i++)
        if (in[i]) c->layers[c->n_layers++] = i;
    snprintf(c->label, sizeof c->label, "%s", label);
    p->n_c++;
    return c;
}

static int find_cand(const precis_protection *p, const unsigned char *in) {
    for (int i = 0; i < p->n_c; i++)
        if (!p->c[i].is_ref && !memcmp(p->c[i].in, in, (size_t)p->n)) return i;
    return -1;
}

/* The oracle: build, evaluate, time and record a set (once per set). */
static precis_status verify(void *user, const unsigned char *in, const char *label,
                            pr_prot_verdict *v) {
    prot_run *r = user;
    precis_protection *p = r->p;
    int i = find_cand(p, in);
    if (i >= 0) {
        *v = verdict(p, &p->c[i].m, p->c[i].user);
        return PRECIS_OK;
    }
    precis_engine *e = NULL;
    precis_status st = build_set(r, in, &e);
    prot_cand *c = st ? NULL : add_cand(p, label, in);
    if (!st && !c) st = pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
    if (!st) st = evaluate(r, e, &c->m, &c->user);
    if (!st) st = median_ms(r, e, &c->latency_ms);
    if (!st) {
        check_honoured(r, e, in);
        for (int k = 0; k < c->n_layers; k++) c->cost_ms += r->cost ? r->cost[c->layers[k]] : 0;
        c->v = *v = verdict(p, &c->m, c->user);
        r->verified++;
        progress_bar(r);
    }
    precis_engine_destroy(e);
    return st;
}

/* Per-step seconds of engine e over `runs` runs of the first batch. */
static precis_status profile(prot_run *r, const precis_engine *e, double **sec) {
    precis_context *c = NULL;
    *sec = calloc((size_t)(e->n_steps ? e->n_steps : 1), sizeof **sec);
    precis_status st = *sec ? precis_context_create(r->ctx, e, &c) : PRECIS_ERR_OOM;
    if (!st) st = time_ctx(r, c, NULL, NULL, 0);
    if (!st) precis_context_set_profiling(c, 1);
    for (int i = 0; !st && i < r->runs; i++) st = time_ctx(r, c, NULL, NULL, 0);
    for (int k = 0; !st && k < e->n_steps; k++)
        (*sec)[k] = precis_context_step_seconds(c, k) / (r->runs ? r->runs : 1);
    precis_context_destroy(c);
    return st;
}

static int step_of(const precis_engine *e, const char *name) {
    for (int i = 0; i < e->n_nodes; i++)
        if (!strcmp(e->nodes[i].name, name)) return e->nodes[i].step;
    return -1;
}

/* The cost model: per layer, its step time in the protect_to engine minus
 * in the all-int8 one (ms); a profile of each engine. */
static precis_status cost_model(prot_run *r, precis_engine *e8) {
    precis_engine *hi = NULL;
    double *t8 = NULL, *th = NULL;
    precis_status st = PRECIS_OK;
    if (strcmp(r->type, "fp32")) {
        precis_build_options b = {0};
        b.precision = r->type;
        b.num_threads = r->o->num_threads;
        b.shapes = r->o->shapes;
        st = pr_build_engine(r->ctx, r->onnx, &b, false, &hi);
    }
    const precis_engine *eh = hi ? hi : r->ev->ref;
    if (!st) st = profile(r, e8, &t8);
    if (!st) st = profile(r, eh, &th);
    r->cost = st ? NULL : calloc((size_t)(r->p->n ? r->p->n : 1), sizeof *r->cost);
    for (int i = 0; r->cost && i < r->p->n; i++) {
        precis_sens_layer l;
        precis_sens_layer_get(r->p->sens, i, &l);
        int a = step_of(e8, l.name), b = step_of(eh, l.name);
        /* a layer whose int8 step is no faster costs nothing (and protecting
         * it buys nothing either: fewer layers win ties) */
        r->cost[i] = a >= 0 && b >= 0 ? fmax(0, 1e3 * (th[b] - t8[a])) : 0;
    }
    if (!st && !r->cost) st = pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
    free(t8), free(th);
    precis_engine_destroy(hi);
    return st;
}

/* Layers ranked: by the sum of two positions, in the order of how much
 * keeping the layer float repairs all-int8 ("all int8 but this": the
 * budget's score, then SQNR) and in the order of local SQNR (worst first);
 * ties by the first. */
static const precis_protection *g_rank_p;
static int by_all_but(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    precis_sens_layer x, y;
    precis_sens_layer_get(g_rank_p->sens, i, &x);
    precis_sens_layer_get(g_rank_p->sens, j, &y);
    pr_prot_verdict vx = verdict(g_rank_p, &x.all_but, NAN),
                    vy = verdict(g_rank_p, &y.all_but, NAN);
    if (pr_prot_better(&vx, &vy)) return -1;
    if (pr_prot_better(&vy, &vx)) return 1;
    return i - j;
}
static int by_local(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    precis_sens_layer x, y;
    precis_sens_layer_get(g_rank_p->sens, i, &x);
    precis_sens_layer_get(g_rank_p->sens, j, &y);
    double lx = isnan(x.local_sqnr_db) ? 1e9 : x.local_sqnr_db;
    double ly = isnan(y.local_sqnr_db) ? 1e9 : y.local_sqnr_db;
    return lx < ly ? -1 : lx > ly ? 1 : i - j;
}
static int *g_pos;
static int by_sum(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b, n = g_rank_p->n;
    int si = g_pos[i] + g_pos[n + i], sj = g_pos[j] + g_pos[n + j];
    return si != sj ? si - sj : g_pos[i] - g_pos[j];
}

static precis_status rank_layers(precis_protection *p, int *rank, pr_err *err) {
    int n = p->n;
    int *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
    g_pos = malloc((size_t)(2 * n + 1) * sizeof *g_pos);
    if (!tmp || !g_pos) {
        free(tmp), free(g_pos), g_pos = NULL;
        return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    }
    g_rank_p = p;
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < n; i++) tmp[i] = i;
        qsort(tmp, (size_t)n, sizeof *tmp, m ? by_local : by_all_but);
        for (int r = 0; r < n; r++) g_pos[m * n + tmp[r]] = r;
    }
    for (int i = 0; i < n; i++) rank[i] = i;
    qsort(rank, (size_t)n, sizeof *rank, by_sum);
    free(tmp), free(g_pos), g_pos = NULL;
    return PRECIS_OK;
}

static precis_status resolve_budget(prot_run *r, const precis_sens_metrics *ref, double ref_user) {
    precis_protection *p = r->p;
    const precis_protect_options *po = r->po;
    pr_err *err = &r->ctx->err;
    if (po->n_budget < 1 || po->n_budget > 8)
        return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                       "protect: give 1 to 8 budget conditions (--min-cosine, --max-drop, ...)");
    for (int i = 0; i < po->n_budget; i++) {
        const precis_budget *b = &po->budget[i];
        prot_cond *c = &p->cond[p->n_cond++];
        const char *m = b->metric ? b->metric : "";
        if (strcmp(m, "cosine") && strcmp(m, "top1") && strcmp(m, "sqnr") && strcmp(m, "user"))
            return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                           "protect: budget metric '%s': want cosine, top1, sqnr or user", m);
        if (!strcmp(m, "user") && !po->user)
            return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                           "protect: a budget on the user metric needs one (--metric-cmd)");
        snprintf(c->metric, sizeof c->metric, "%s", m);
        bool higher = strcmp(m, "user") || po->user->higher_better;
        c->fp32 = cond_value(c, ref, ref_user);
        if (b->kind == PRECIS_BUDGET_MAX_DROP) {
            if (!isfinite(c->fp32))
                return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                               "protect: --max-drop on %s: the fp32 engine's own value is %g",
                               m, c->fp32);
            c->kind = higher ? PRECIS_BUDGET_MIN : PRECIS_BUDGET_MAX;
            c->threshold = higher ? c->fp32 - b->threshold : c->fp32 + b->threshold;
        } else if (b->kind == PRECIS_BUDGET_MIN || b->kind == PRECIS_BUDGET_MAX) {
            c->kind = b->kind;
            c->threshold = b->threshold;
        } else {
            return pr_errf(err, PRECIS_ERR_INVALID_ARG, "protect: bad budget kind %d", b->kind);
        }
    }
    return PRECIS_OK;
}

/* After the all-int8 set: every condition must apply; the scales of the margins. */
static precis_status scale_budget(prot_run *r, const prot_cand *c8) {
    for (int i = 0; i < r->p->n_cond; i++) {
        prot_cond *c = &r->p->cond[i];
        double x = cond_value(c, &c8->m, c8->user);
        if (isnan(x))
            return pr_errf(&r->ctx->err, PRECIS_ERR_INVALID_ARG,
                           "protect: budget on %s: it does not apply to %s (%s)", c->metric,
                           r->out_k >= 0 ? "the output compared" : "any model output",
                           !strcmp(c->metric, "top1")
                               ? "top-1 needs [batch, classes] or probability outputs"
                               : "no value");
        double d = fabs(c->threshold - x);
        c->scale = isfinite(d) && d > 1e-12 ? d : fmax(fabs(c->threshold) * 1e-3, 1e-9);
    }
    return PRECIS_OK;
}

/* The chosen set: the cheapest (cost model, then size, then score) meeting
 * the budget within the layer budget; else the best scoring one. */
static int choose(const precis_protection *p, int limit) {
    int best = -1;
    for (int i = 0; i < p->n_c; i++) {
        const prot_cand *c = &p->c[i], *b = best >= 0 ? &p->c[best] : NULL;
        if (c->is_ref || c->n_layers > limit || c->v.score < 0) continue;
        if (!b || c->cost_ms < b->cost_ms - 1e-6 ||
            (fabs(c->cost_ms - b->cost_ms) <= 1e-6 &&
             (c->n_layers < b->n_layers ||
              (c->n_layers == b->n_layers && pr_prot_better(&c->v, &b->v)))))
            best = i;
    }
    if (best >= 0) return best;
    for (int i = 0; i < p->n_c; i++) {
        const prot_cand *c = &p->c[i];
        if (!c->is_ref && c->n_layers <= limit && (best < 0 || pr_prot_better(&c->v, &p->c[best].v)))
            best = i;
    }
    return best;
}

/* The final latencies of all-int8, all-fp32, the chosen set and the
 * baselines, measured interleaved (round robin), medians. */
static precis_status final_latency(prot_run *r) {
    precis_protection *p = r->p;
    enum { K = 5 };
    precis_engine *e[K] = {0};
    precis_context *c[K] = {0};
    double *v[K] = {0};
    int idx[K];
    precis_status st = PRECIS_OK;
    for (int k = 0; k < K; k++) idx[k] = p->pick[k];
    for (int k = 0; k < K && !st; k++) {
        if (idx[k] < 0) continue;
        for (int j = 0; j < k; j++) /* the same set twice: time it once */
            if (idx[j] == idx[k]) idx[k] = -1;
        if (idx[k] < 0) continue;
        if (p->c[idx[k]].is_ref) st = precis_context_create(r->ctx, r->ev->ref, &c[k]);
        else if (!(st = build_set(r, p->c[idx[k]].in, &e[k])))
            st = precis_context_create(r->ctx, e[k], &c[k]);
        if (!st && !(v[k] = calloc((size_t)r->runs, sizeof *v[k])))
            st = pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
        if (!st) st = warm_up(r, c[k]);
    }
    for (int i = 0; i < r->runs && !st; i++)
        for (int k = 0; k < K && !st; k++)
            if (c[k]) st = time_ctx(r, c[k], NULL, v[k], i);
    for (int k = 0; k < K; k++) {
        if (!st && c[k]) {
            qsort(v[k], (size_t)r->runs, sizeof *v[k], cmp_d);
            p->c[idx[k]].latency_ms = v[k][r->runs / 2];
        }
        precis_context_destroy(c[k]);
        precis_engine_destroy(e[k]);
        free(v[k]);
    }
    return st;
}

static precis_status keep_rules(prot_run *r, int chosen) {
    precis_protection *p = r->p;
    const char **rs = NULL;
    int n = 0;
    precis_status st = set_rules(r, p->c[chosen].in, &rs, &n);
    if (!st) {
        int own = r->o->n_layer_precision;
        p->rules = calloc((size_t)(n - own + 1), sizeof *p->rules);
        if (!p->rules) st = pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
        for (int i = own; !st && i < n; i++) p->rules[p->n_rules++] = (char *)rs[i], rs[i] = NULL;
    }
    rules_free(r, rs, n);
    return st;
}

static precis_status search(prot_run *r) {
    precis_protection *p = r->p;
    const precis_protect_options *po = r->po;
    precis_status st;
    unsigned char *in = calloc((size_t)p->n + 1, 1);
    int *rank = malloc((size_t)(p->n + 1) * sizeof *rank);
    precis_engine *e8 = NULL;
    if (!in || !rank) {
        st = pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    pr_prot_oracle orc = {r, verify};
    pr_prot_verdict v;
    /* the fp32 engine's own values, the budget resolved against them */
    precis_sens_metrics m32;
    double u32;
    if ((st = evaluate(r, NULL, &m32, &u32))) goto done;
    if ((st = resolve_budget(r, &m32, u32))) goto done;
    memset(in, 1, (size_t)p->n);
    prot_cand *c = add_cand(p, "all-fp32", in);
    if (!c) {
        st = pr_errf(&r->ctx->err, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    c->is_ref = 1, c->m = m32, c->user = u32;
    if ((st = median_ms(r, r->ev->ref, &p->c[0].latency_ms))) goto done;
    p->pick[PRECIS_PROTECT_FP32] = 0;
    /* all-int8: the scale of each condition's margin */
    memset(in, 0, (size_t)p->n);
    if ((st = verify(r, in, "all-int8", &v))) goto done;
    p->pick[PRECIS_PROTECT_INT8] = 1;
    if ((st = scale_budget(r, &p->c[1]))) goto done;
    for (int i = 0; i < p->n_c; i++) p->c[i].v = verdict(p, &p->c[i].m, p->c[i].user);
    if ((st = build_set(r, in, &e8)) || (st = cost_model(r, e8))) goto done;
    p->c[0].cost_ms = 0;
    for (int i = 0; i < p->n; i++) p->c[0].cost_ms += r->cost[i];
    if ((st = rank_layers(p, rank, &r->ctx->err))) goto done;
    int limit = po->allow_exceed ? p->n : p->max_layers;
    pr_prot_search s = {p->n, rank, r->cost, limit, 4};
    int met;
    memset(in, 0, (size_t)p->n);
    if ((st = pr_prot_greedy(&s, &orc, in, &met))) goto done;
    /* baselines: by op type (first and last layer), contiguous block */
    memset(in, 0, (size_t)p->n);
    in[0] = in[p->n - 1] = 1;
    if ((st = verify(r, in, "op-type", &v))) goto done;
    p->pick[PRECIS_PROTECT_OPTYPE] = find_cand(p, in);
    note(p, "op-type baseline: the first and the last layer%s%s", "; Softmax and LayerNorm "
         "already run in float in precis int8 builds (no int8 kernel)", "");
    int lo, hi, bmet;
    if ((st = pr_prot_block(p->n, &orc, &lo, &hi, &bmet))) goto done;
    memset(in, 0, (size_t)p->n);
    memset(in + lo, 1, (size_t)(hi - lo));
    if ((st = verify(r, in, "block", &v))) goto done;
    p->pick[PRECIS_PROTECT_BLOCK] = find_cand(p, in);
    if (!met && bmet && hi > lo) {
        /* the ranking missed: the bisection's edge layers were each needed by
         * the block: grow from them */
        memset(in, 0, (size_t)p->n);
        in[lo] = in[hi - 1] = 1;
        if ((st = pr_prot_greedy(&s, &orc, in, &met))) goto done;
    }
    int ch = choose(p, limit);
    p->pick[PRECIS_PROTECT_CHOSEN] = ch;
    p->met = ch >= 0 && p->c[ch].v.score >= 0;
    if (r->progress) fputc('\n', stderr), r->progress = 0;
    if (ch >= 0 && (st = keep_rules(r, ch))) goto done;
    st = final_latency(r);
done:
    if (r->progress) fputc('\n', stderr), r->progress = 0;
    precis_engine_destroy(e8);
    free(in);
    free(rank);
    return st;
}

precis_status precis_protect(precis_ctx *ctx, const char *onnx_path,
                             const precis_build_options *opt, const char *eval_data,
                             int eval_batches, const precis_protect_options *po,
                             precis_protection **out) {
    if (!ctx || !onnx_path || !po || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_protect: NULL argument");
    *out = NULL;
    pr_err_clear(&ctx->err);
    pr_err *err = &ctx->err;
    precis_build_options def = {0};
    const precis_build_options *o = opt ? opt : &def;
    precis_status st = pr_sens_check(ctx, o, eval_data, "protect");
    if (st) return st;
    const char *type = po->protect_to ? po->protect_to : "fp32";
    if (strcmp(type, "fp32") && strcmp(type, "bf16") && strcmp(type, "fp16"))
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "--protect-to '%s': want fp32, bf16 or fp16", type);
    if (po->max_protected < 0 || po->max_fraction < 0 || po->max_fraction > 1)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG,
                           "--max-protected: want a count >= 1 or a share in (0%%, 100%%]");
    double t0 = now_s();
    precis_protection *p = calloc(1, sizeof *p);
    pr_sens_eval ev;
    memset(&ev, 0, sizeof ev);
    prot_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx, r.p = p, r.ev = &ev, r.onnx = onnx_path, r.cache = o->calib_cache;
    r.type = type, r.o = o, r.po = po, r.out_k = -1;
    r.runs = po->latency_runs > 0 ? po->latency_runs : 7;
    char tmpdir[64] = "", cache_buf[128];
    if (!p) return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
    for (int k = 0; k < 5; k++) p->pick[k] = -1;
    p->protect_to = type;
    if (po->user) {
        const char *un = po->user->name ? po->user->name : "user";
        if (!(p->user_name = malloc(strlen(un) + 1))) {
            precis_protect_destroy(p);
            return pr_ctx_fail(ctx, PRECIS_ERR_OOM, "out of memory");
        }
        memcpy(p->user_name, un, strlen(un) + 1);
    }
    if ((st = pr_sens_eval_open(&ev, ctx, onnx_path, o, eval_data, eval_batches))) goto fail;
    if (po->output) {
        for (int k = 0; k < ev.n_cmp; k++)
            if (!strcmp(ev.ref->g->tensors[ev.ref->g->outputs[ev.cmp[k]]].name, po->output))
                r.out_k = k;
        if (r.out_k < 0) {
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG,
                         "--metric-output '%s': no float32 output of the model has that name",
                         po->output);
            goto fail;
        }
    }
    if (!r.cache) {
        if ((st = pr_sens_tmp_cache(tmpdir, sizeof tmpdir, cache_buf, sizeof cache_buf, err)))
            goto fail;
        r.cache = cache_buf;
    }
    if ((st = pr_sens_analyse(ctx, onnx_path, o, &ev, r.cache, &p->sens))) goto fail;
    p->n = precis_sens_num_layers(p->sens);
    p->max_layers = po->max_protected > 0 ? po->max_protected
                    : (int)floor((po->max_fraction > 0 ? po->max_fraction : 0.10) * p->n + 1e-9);
    if (p->max_layers < 1) p->max_layers = 1;
    if (p->max_layers > p->n) p->max_layers = p->n;
    r.acc = malloc((size_t)ev.n_cmp * sizeof *r.acc);
    r.noted = calloc((size_t)p->n, 1);
    if (!r.acc || !r.noted) {
        st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        goto fail;
    }
    r.progress = o->progress;
    r.expect = 3 * p->max_layers + 14;
    r.t0 = now_s();
    if ((st = search(&r))) goto fail;
    p->seconds = now_s() - t0;
    *out = p;
    p = NULL;
fail:
    if (st) pr_err_prefix(err, "protect");
    free(r.acc);
    free(r.cost);
    free(r.noted);
    pr_sens_eval_close(&ev);
    if (tmpdir[0]) {
        unlink(r.cache);
        rmdir(tmpdir);
    }
    precis_protect_destroy(p);
    return st;
}

