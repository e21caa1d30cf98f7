/* precis build --protect auto: automatic protection (precis_protect), the
 * rules file, the report (protect_report.c) and the plan built with the
 * chosen set; the external metric command (--metric-cmd). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "protect_report.h"

void usage_protect(FILE *f) {
    fprintf(f,
            "usage: precis build MODEL.onnx --precision int8 --calib-data D --eval-data E\n"
            "                    --protect auto (--min-cosine Y | --min-top1 P | --min-sqnr DB |\n"
            "                    --max-drop X | --metric-cmd CMD)... [--metric-goal max|min]\n"
            "                    [--min-metric V | --max-metric V] [--metric-name NAME]\n"
            "                    [--metric-output NAME]\n"
            "                    [--max-protected N|P%%] [--protect-to fp32|bf16|fp16]\n"
            "                    [--protect-report OUT/] [--allow-exceed] [--eval-batches N]\n"
            "                    [--latency-runs N] [--progress] [build options] -o OUT.plan\n\n"
            "Finds the smallest, cheapest set of layers to keep in higher precision in the\n"
            "int8 build so that the outputs meet the budget against the fp32 engine on the\n"
            "eval data, within the layer budget (--max-protected, default 10%% of the\n"
            "layers precis sensitivity lists), then builds OUT.plan with it. Every budget\n"
            "condition must hold: --min-cosine (worst sample, worst output), --min-top1\n"
            "(agreement with fp32, 0.99 or 99%%), --min-sqnr (dB), --max-drop X (at most X\n"
            "below the fp32 engine's own score: the user metric's when --metric-cmd is given,\n"
            "else top-1; 0.5%% or 0.005), --min-metric/--max-metric V (the user metric).\n"
            "--metric-output compares one model output only.\n\n"
            "--metric-cmd \"python3 m.py {dir} {ref}\": for each candidate precis writes its\n"
            "outputs for the eval set into {dir} as out<K>/<BATCH>.npy (K the model output\n"
            "index, BATCH six digits), the fp32 engine's into {ref} the same way, runs the\n"
            "command (sh -c) and reads one number from the last line of its stdout; the fp32\n"
            "engine is scored first (with {dir} = {ref}). --metric-goal: whether higher\n"
            "(max, default) or lower (min) is better; --metric-name labels it in the report.\n\n"
            "Writes OUT.plan.rules.json (the chosen set as a --rules file: edit it and pass it\n"
            "back to precis build --rules) and with --protect-report OUT/: protect.json\n"
            "(every verified set with its metrics and latency, the baselines, the command),\n"
            "protect.md, protect.svg (accuracy vs latency) and the sensitivity report with\n"
            "the chosen layers marked. --protect-to bf16/fp16 keeps the layers in that type\n"
            "where the CPU has kernels (a note says where not). A budget not met within the\n"
            "layer budget: one line with the best set found and exit status 9, unless\n"
            "--allow-exceed (search past the layer budget).\n\n%s",
            k_exit_codes);
}

/* ------------------------------------------------------ the metric command */

typedef struct ext_metric {
    char root[64], dir[128], ref[128];
    const char *cmd;
    int ref_done;
    char err[1024];
} ext_metric;

static precis_status ext_batch(void *u, int b, int n, const precis_tensor *const *cand,
                               const precis_tensor *const *ref) {
    ext_metric *m = u;
    (void)ref;
    const char *dir = m->ref_done ? m->dir : m->ref;
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_status st = PRECIS_OK;
    for (int k = 0; k < n && !st; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/out%d", dir, k);
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            snprintf(m->err, sizeof m->err, "--metric-cmd: cannot create '%s'", path);
            st = PRECIS_ERR_IO;
            break;
        }
        snprintf(path, sizeof path, "%s/out%d/%06d.npy", dir, k, b);
        if ((st = precis_tensor_save_npy(ctx, cand[k], path)))
            snprintf(m->err, sizeof m->err, "--metric-cmd: %s", precis_last_error(ctx));
    }
    precis_ctx_destroy(ctx);
    return st;
}

/* cmd with {dir} and {ref} replaced. */
static int expand(const char *cmd, const char *dir, const char *ref, char *out, size_t cap) {
    size_t n = 0;
    for (const char *c = cmd; *c; c++) {
        const char *v = !strncmp(c, "{dir}", 5) ? dir : !strncmp(c, "{ref}", 5) ? ref : NULL;
        int w = v ? snprintf(out + n, cap - n, "%s", v) : snprintf(out + n, cap - n, "%c", *c);
        if (w < 0 || (size_t)w >= cap - n) return -1;
        n += (size_t)w;
        if (v) c += 4;
    }
    return 0;
}

static precis_status ext_finish(void *u, double *score) {
    ext_metric *m = u;
    char cmd[8192], line[256] = "", buf[256];
    const char *dir = m->ref_done ? m->dir : m->ref;
    if (expand(m->cmd, dir, m->ref, cmd, sizeof cmd - 128)) {
        snprintf(m->err, sizeof m->err, "--metric-cmd: the command is too long");
        return PRECIS_ERR_INVALID_ARG;
    }
    size_t l = strlen(cmd);
    snprintf(cmd + l, sizeof cmd - l, " 2>%s/stderr.txt", m->root);
    fflush(stderr);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(m->err, sizeof m->err, "--metric-cmd '%s': cannot run it", m->cmd);
        return PRECIS_ERR_IO;
    }
    while (fgets(buf, sizeof buf, p))
        if (strspn(buf, " \t\r\n") < strlen(buf)) memcpy(line, buf, sizeof line);
    int rc = pclose(p);
    if (rc != 0) {
        char path[128], last[256] = "", b2[256];
        snprintf(path, sizeof path, "%s/stderr.txt", m->root);
        FILE *e = fopen(path, "r");
        while (e && fgets(b2, sizeof b2, e))
            if (strspn(b2, " \t\r\n") < strlen(b2)) memcpy(last, b2, sizeof last);
        if (e) fclose(e);
        last[strcspn(last, "\r\n")] = 0;
        int code = rc > 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : rc;
        snprintf(m->err, sizeof m->err, "--metric-cmd '%s' exited with status %d%s%s", m->cmd,
                 code, last[0] ? ": " : "", last);
        return PRECIS_ERR_IO;
    }
    char *end;
    line[strcspn(line, "\r\n")] = 0;
    *score = strtod(line, &end);
    if (end == line || strspn(end, " \t") != strlen(end) || isnan(*score)) {
        snprintf(m->err, sizeof m->err, "--metric-cmd '%s': its last output line '%.60s' is not "
                 "a number", m->cmd, line);
        return PRECIS_ERR_PARSE;
    }
    m->ref_done = 1;
    return PRECIS_OK;
}

static const char *ext_error(void *u) { return ((ext_metric *)u)->err; }

static void rm_tree(const char *dir) {
    char cmd[256];
    if (!dir[0] || strncmp(dir, "/tmp/", 5)) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "precis: warning: cannot remove %s\n", dir);
}

/* ------------------------------------------------------------- arguments */

/* "0.5%" -> 0.005, "0.01" -> 0.01; -1 when not a number. */
static int parse_share(const char *s, double *v) {
    char *end;
    *v = strtod(s, &end);
    if (end == s || isnan(*v)) return -1;
    if (*end == '%') *v /= 100, end++;
    return *end ? -1 : 0;
}

typedef struct prot_args {
    const char *eval, *report, *metric_cmd, *output, *protect_to, *metric_name;
    int eval_batches, max_count, allow_exceed, progress, runs, goal_min;
    double max_frac;
    precis_budget budget[8];
    int n_budget, drop_pending;
    double drop;
} prot_args;

static int add_budget(prot_args *p, const char *metric, int kind, double v) {
    if (p->n_budget == 8) return -1;
    p->budget[p->n_budget++] = (precis_budget){metric, kind, v};
    return 0;
}

/* Consumes one protect option; 1 taken, 0 not ours, -1 usage error. */
static int prot_opt(prot_args *p, int argc, char **argv, int *i) {
    const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    const char **dst = !strcmp(o, "--eval-data")        ? &p->eval
                       : !strcmp(o, "--protect-report") ? &p->report
                       : !strcmp(o, "--metric-cmd")     ? &p->metric_cmd
                       : !strcmp(o, "--metric-output")  ? &p->output
                       : !strcmp(o, "--protect-to")     ? &p->protect_to
                       : !strcmp(o, "--metric-name")    ? &p->metric_name
                                                        : NULL;
    if (!strcmp(o, "--allow-exceed")) return p->allow_exceed = 1, 1;
    if (!strcmp(o, "--progress")) return p->progress = 1, 1;
    bool known = dst || !strcmp(o, "--protect") || !strcmp(o, "--eval-batches") ||
                 !strcmp(o, "--latency-runs") || !strcmp(o, "--metric-goal") ||
                 !strcmp(o, "--max-protected") || !strcmp(o, "--min-cosine") ||
                 !strcmp(o, "--min-top1") || !strcmp(o, "--min-sqnr") ||
                 !strcmp(o, "--max-drop") || !strcmp(o, "--min-metric") ||
                 !strcmp(o, "--max-metric");
    if (!known) return 0;
    if (!v) return usage_error(usage_protect, "%s needs a value", o), -1;
    ++*i;
    double x;
    char *end;
    if (dst) {
        *dst = v;
    } else if (!strcmp(o, "--protect")) {
        if (strcmp(v, "auto")) return usage_error(usage_protect, "--protect '%s': only 'auto'", v), -1;
    } else if (!strcmp(o, "--eval-batches") || !strcmp(o, "--latency-runs")) {
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1000000)
            return usage_error(usage_protect, "%s needs a positive number", o), -1;
        *(o[2] == 'e' ? &p->eval_batches : &p->runs) = (int)n;
    } else if (!strcmp(o, "--metric-goal")) {
        if (strcmp(v, "max") && strcmp(v, "min"))
            return usage_error(usage_protect, "--metric-goal '%s': want max or min", v), -1;
        p->goal_min = !strcmp(v, "min");
    } else if (!strcmp(o, "--max-protected")) {
        if (strchr(v, '%')) {
            if (parse_share(v, &x) || !(x > 0) || x > 1)
                return usage_error(usage_protect, "--max-protected '%s': want N or P% in (0, 100]", v), -1;
            p->max_frac = x;
        } else {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000000)
                return usage_error(usage_protect, "--max-protected '%s': want N or P% in (0, 100]", v), -1;
            p->max_count = (int)n;
        }
    } else {
        bool share = !strcmp(o, "--min-top1") || !strcmp(o, "--max-drop");
        if (share ? parse_share(v, &x) : (x = strtod(v, &end), end == v || *end || isnan(x)))
            return usage_error(usage_protect, "%s needs a number", o), -1;
        if (!strcmp(o, "--max-drop")) {
            if (x < 0) return usage_error(usage_protect, "%s needs a number >= 0", o), -1;
            p->drop_pending = 1, p->drop = x; /* its metric is known after parsing */
            return 1;
        }
        const char *m = !strcmp(o, "--min-cosine") ? "cosine" : !strcmp(o, "--min-top1") ? "top1"
                        : !strcmp(o, "--min-sqnr") ? "sqnr" : "user";
        if (add_budget(p, m, strncmp(o, "--max", 5) ? PRECIS_BUDGET_MIN : PRECIS_BUDGET_MAX, x))
            return usage_error(usage_protect, "too many budget conditions (%s)", o), -1;
    }
    return 1;
}

/* The best set's line when the budget is not met. */
static void not_met(const precis_protection *p, const char *model) {
    int c = precis_protect_pick(p, PRECIS_PROTECT_CHOSEN);
    precis_protect_candidate k;
    precis_protect_candidate_get(p, c, &k);
    const precis_sens *s = precis_protect_sens(p);
    char names[512] = "", val[512] = "";
    size_t n = 0;
    for (int i = 0; i < k.num_layers && n + 8 < sizeof names; i++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, k.layers[i], &l);
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", l.name);
    }
    protect_budget_text(p, &k, val, sizeof val);
    fprintf(stderr, "precis: error: %s: budget not met within %d protected layer%s of %d: best set "
            "found protects %d (%s): %s; --allow-exceed searches past the layer budget\n",
            model, precis_protect_max_layers(p), precis_protect_max_layers(p) == 1 ? "" : "s",
            precis_sens_num_layers(s), k.num_layers, n ? names : "none", val);
}

int cmd_build_protect(int argc, char **argv) {
    engine_args a = {0};
    prot_args pa = {0};
    const char *out = NULL;
    pa.progress = isatty(2);
    for (int i = 0; i < argc; i++) {
        int r = engine_opt(&a, argc, argv, &i, usage_protect);
        if (!r) r = prot_opt(&pa, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *o = argv[i];
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage_protect(stdout);
            return 0;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            if (i + 1 >= argc) return usage_error(usage_protect, "%s needs a file", o);
            out = argv[++i];
        } else if (o[0] == '-') {
            return usage_error(usage_protect, "unknown option '%s'", o);
        } else if (!a.model) {
            a.model = o;
        } else {
            return usage_error(usage_protect, "unexpected argument '%s'", o);
        }
    }
    if (!a.model) return usage_error(usage_protect, "missing MODEL.onnx%s", "");
    if (!out) return usage_error(usage_protect, "missing -o OUT.plan%s", "");
    if (!a.precision || strcmp(a.precision, "int8"))
        return usage_error(usage_protect, "--protect auto needs --precision int8%s", "");
    if (!pa.eval) return usage_error(usage_protect, "--protect auto needs --eval-data DIR%s", "");
    if (pa.drop_pending &&
        add_budget(&pa, pa.metric_cmd ? "user" : "top1", PRECIS_BUDGET_MAX_DROP, pa.drop))
        return usage_error(usage_protect, "too many budget conditions%s", "");
    if (!pa.n_budget)
        return usage_error(usage_protect, "--protect auto needs a budget (--min-cosine, "
                           "--min-top1, --min-sqnr, --max-drop, --min-metric)%s", "");
    for (int i = 0; i < pa.n_budget; i++)
        if (!strcmp(pa.budget[i].metric, "user") && !pa.metric_cmd)
            return usage_error(usage_protect, "--min-metric/--max-metric need --metric-cmd%s", "");
    if (pa.report && mkdir_p(pa.report) != 0) {
        fprintf(stderr, "precis: error: --protect-report: cannot create folder '%s': %s\n",
                pa.report, strerror(errno));
        return PRECIS_ERR_IO;
    }
    ext_metric em = {0};
    precis_user_metric um = {ext_batch, ext_finish, &em, ext_error, !pa.goal_min, NULL};
    char cache[4096] = "", tmp_cache[96] = "";
    if (!a.calib_cache) {
        if (pa.report) {
            snprintf(cache, sizeof cache, "%s/calib.cache", pa.report);
        } else {
            snprintf(tmp_cache, sizeof tmp_cache, "/tmp/precis-protect-XXXXXX");
            if (!mkdtemp(tmp_cache)) {
                fprintf(stderr, "precis: error: cannot create a temporary folder: %s\n",
                        strerror(errno));
                return PRECIS_ERR_IO;
            }
            snprintf(cache, sizeof cache, "%s/calib.cache", tmp_cache);
        }
        a.calib_cache = cache;
    }
    if (pa.metric_cmd) {
        snprintf(em.root, sizeof em.root, "/tmp/precis-metric-XXXXXX");
        if (!mkdtemp(em.root)) {
            fprintf(stderr, "precis: error: --metric-cmd: cannot create a temporary folder: %s\n",
                    strerror(errno));
            rm_tree(tmp_cache);
            return PRECIS_ERR_IO;
        }
        snprintf(em.dir, sizeof em.dir, "%s/cand", em.root);
        snprintf(em.ref, sizeof em.ref, "%s/ref", em.root);
        mkdir(em.dir, 0777);
        mkdir(em.ref, 0777);
        em.cmd = pa.metric_cmd;
        um.name = pa.metric_name ? pa.metric_name : "metric";
    }
    precis_build_options o = engine_build_opts(&a);
    o.progress = pa.progress;
    precis_protect_options po = {pa.budget, pa.n_budget, pa.metric_cmd ? &um : NULL, pa.output,
                                 pa.max_count, pa.max_frac, pa.protect_to, pa.allow_exceed,
                                 pa.runs, pa.progress};
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_protection *p = NULL;
    precis_engine *e = NULL;
    int rc = 0;
    precis_status st = precis_protect(ctx, a.model, &o, pa.eval, pa.eval_batches, &po, &p);
    if (st) {
        rc = fail(ctx, st);
        goto done;
    }
    const char *notes = precis_protect_notes(p);
    for (const char *n = notes; *n;) {
        size_t l = strcspn(n, "\n");
        if (strncmp(n, "op-type", 7)) fprintf(stderr, "precis: note: %.*s\n", (int)l, n);
        n += l + (n[l] == '\n');
    }
    char rules[4096];
    snprintf(rules, sizeof rules, "%s.rules.json", out);
    if ((st = precis_protect_write_rules(ctx, p, rules))) {
        rc = fail(ctx, st);
        goto done;
    }
    static char cmdline[16384];
    command_line("precis build", argc, argv, cmdline, sizeof cmdline);
    if (pa.report && (rc = protect_report_write(p, a.model, cmdline, rules, pa.report))) goto done;
    protect_summary(p, stdout);
    if (!precis_protect_met(p)) {
        not_met(p, a.model);
        rc = 9;
        if (!pa.allow_exceed) goto done;
    }
    precis_build_options bo = engine_build_opts(&a);
    bo.rules_file = rules;
    bo.progress = 0;
    if (!(st = precis_build(ctx, a.model, &bo, &e))) st = precis_engine_save(ctx, e, out);
    if (st) {
        rc = fail(ctx, st);
        goto done;
    }
    printf("built %s -> %s: int8, %d layers protected in %s (rules %s)%s\n", a.model, out,
           protect_chosen_size(p), pa.protect_to ? pa.protect_to : "fp32", rules,
           pa.report ? "" : "");
done:
    precis_engine_destroy(e);
    precis_protect_destroy(p);
    precis_ctx_destroy(ctx);
    if (pa.metric_cmd) rm_tree(em.root);
    rm_tree(tmp_cache);
    return rc;
}
