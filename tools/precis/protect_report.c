/* The report of precis build --protect auto (protect_report.h). */
#define _POSIX_C_SOURCE 200809L
#include "protect_report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sens_report.h"

double protect_value(const precis_budget *b, const precis_protect_candidate *c) {
    if (!strcmp(b->metric, "cosine")) return c->metrics.cosine;
    if (!strcmp(b->metric, "top1")) return c->metrics.top1;
    if (!strcmp(b->metric, "sqnr")) return c->metrics.sqnr_db;
    return c->user;
}

const char *protect_label(const precis_protection *p, const precis_budget *b) {
    return strcmp(b->metric, "user") ? b->metric : precis_protect_user_name(p);
}

int protect_chosen_size(const precis_protection *p) {
    precis_protect_candidate c;
    if (precis_protect_candidate_get(p, precis_protect_pick(p, PRECIS_PROTECT_CHOSEN), &c)) return 0;
    return c.num_layers;
}

void protect_budget_text(const precis_protection *p, const precis_protect_candidate *c, char *buf,
                         size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < precis_protect_num_budget(p) && n < cap; i++) {
        precis_budget b;
        precis_protect_budget(p, i, &b, NULL);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s %.6g (want %s %.6g)", i ? ", " : "",
                              protect_label(p, &b), protect_value(&b, c),
                              b.kind == PRECIS_BUDGET_MIN ? ">=" : "<=", b.threshold);
    }
}

static void num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

static void cand_json(FILE *f, const precis_protection *p, int i) {
    precis_protect_candidate c;
    if (i < 0 || precis_protect_candidate_get(p, i, &c)) {
        fputs("null", f);
        return;
    }
    const precis_sens *s = precis_protect_sens(p);
    fprintf(f, "{\"index\": %d, \"label\": ", i);
    json_fstr(f, c.label);
    fputs(", \"layers\": [", f);
    for (int k = 0; k < c.num_layers; k++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, c.layers[k], &l);
        fputs(k ? ", " : "", f);
        json_fstr(f, l.name);
    }
    fprintf(f, "], \"num_layers\": %d, \"metrics\": {\"cosine\": ", c.num_layers);
    num(f, c.metrics.cosine);
    fputs(", \"sqnr_db\": ", f);
    num(f, c.metrics.sqnr_db);
    fputs(", \"rel_l2\": ", f);
    num(f, c.metrics.rel_l2);
    fputs(", \"kl\": ", f);
    num(f, c.metrics.kl);
    fputs(", \"top1\": ", f);
    num(f, c.metrics.top1);
    fputs(", \"user\": ", f);
    num(f, c.user);
    fputs("}, \"score\": ", f);
    num(f, c.score);
    fprintf(f, ", \"meets\": %s, \"latency_ms\": ", c.meets ? "true" : "false");
    num(f, c.latency_ms);
    fputs(", \"cost_model_ms\": ", f);
    num(f, c.cost_ms);
    fputs("}", f);
}

static int write_json(const precis_protection *p, const char *model, const char *command,
                      const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const precis_sens *s = precis_protect_sens(p);
    int n = precis_sens_num_layers(s);
    fputs("{\n\"model\": ", f);
    json_fstr(f, model);
    fputs(",\n\"command\": ", f);
    json_fstr(f, command);
    fprintf(f, ",\n\"seconds\": %.1f,\n\"layers\": %d,\n\"max_protected\": %d,\n\"met\": %s,\n"
               "\"eval_batches\": %d,\n\"eval_samples\": %lld,\n\"budget\": [",
            precis_protect_seconds(p), n, precis_protect_max_layers(p),
            precis_protect_met(p) ? "true" : "false", precis_sens_eval_batches(s),
            (long long)precis_sens_eval_samples(s));
    for (int i = 0; i < precis_protect_num_budget(p); i++) {
        precis_budget b;
        double fp32;
        precis_protect_budget(p, i, &b, &fp32);
        fprintf(f, "%s{\"metric\": \"%s\", \"name\": ", i ? ", " : "", b.metric);
        json_fstr(f, protect_label(p, &b));
        fprintf(f, ", \"kind\": \"%s\", \"threshold\": ", b.kind == PRECIS_BUDGET_MIN ? "min" : "max");
        num(f, b.threshold);
        fputs(", \"fp32\": ", f);
        num(f, fp32);
        fputs("}", f);
    }
    fputs("],\n\"notes\": [", f);
    const char *nt = precis_protect_notes(p);
    for (int k = 0; *nt; k++) {
        size_t l = strcspn(nt, "\n");
        char line[600];
        snprintf(line, sizeof line, "%.*s", (int)(l < 599 ? l : 599), nt);
        fputs(k ? ", " : "", f);
        json_fstr(f, line);
        nt += l + (nt[l] == '\n');
    }
    fputs("],\n\"chosen\": ", f);
    cand_json(f, p, precis_protect_pick(p, PRECIS_PROTECT_CHOSEN));
    fputs(",\n\"baselines\": {\"all_int8\": ", f);
    cand_json(f, p, precis_protect_pick(p, PRECIS_PROTECT_INT8));
    fputs(",\n  \"all_fp32\": ", f);
    cand_json(f, p, precis_protect_pick(p, PRECIS_PROTECT_FP32));
    fputs(",\n  \"op_type\": ", f);
    cand_json(f, p, precis_protect_pick(p, PRECIS_PROTECT_OPTYPE));
    fputs(",\n  \"block\": ", f);
    cand_json(f, p, precis_protect_pick(p, PRECIS_PROTECT_BLOCK));
    fputs("},\n\"candidates\": [", f);
    for (int i = 0; i < precis_protect_num_candidates(p); i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        cand_json(f, p, i);
    }
    fputs("]\n}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static const char *const k_roles[] = {"auto (chosen)", "all-int8", "all-fp32", "op-type",
                                      "contiguous block"};

/* The summary rows of the Markdown report and the stderr lines, in order. */
static const int k_order[] = {PRECIS_PROTECT_FP32, PRECIS_PROTECT_INT8, PRECIS_PROTECT_CHOSEN,
                              PRECIS_PROTECT_OPTYPE, PRECIS_PROTECT_BLOCK};

static void md_value(FILE *f, const precis_budget *b, const precis_protect_candidate *c) {
    double v = protect_value(b, c);
    if (isnan(v)) fputs(" - |", f);
    else if (!strcmp(b->metric, "top1")) fprintf(f, " %.2f%% |", 100 * v);
    else fprintf(f, " %.6g |", v);
}

/* " | LABEL | LABEL ... |": a Markdown header cell per budget (the cell
 * before ends without its bar). */
static void md_budget_heads(FILE *f, const precis_protection *p, int nb) {
    fputs(" |", f);
    for (int i = 0; i < nb; i++) {
        precis_budget b;
        precis_protect_budget(p, i, &b, NULL);
        fprintf(f, " %s |", protect_label(p, &b));
    }
}

static int write_md(const precis_protection *p, const char *model, const char *command,
                    const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const precis_sens *s = precis_protect_sens(p);
    int n = precis_sens_num_layers(s), nb = precis_protect_num_budget(p);
    char budget[512] = "";
    size_t bl = 0;
    for (int i = 0; i < nb; i++) {
        precis_budget b;
        precis_protect_budget(p, i, &b, NULL);
        bl += (size_t)snprintf(budget + bl, sizeof budget - bl, "%s%s %s %.6g", i ? ", " : "",
                               protect_label(p, &b), b.kind == PRECIS_BUDGET_MIN ? ">=" : "<=", b.threshold);
    }
    fprintf(f, "# Automatic protection: %s\n\nBudget: %s; at most %d of %d layers protected. "
               "%s. %d sets verified in %.0f s (the sensitivity analysis included).\n\n"
               "Command:\n\n    %s\n\n",
            model, budget, precis_protect_max_layers(p), n,
            precis_protect_met(p) ? "**Met**" : "**Not met** (the best set found is shown)",
            precis_protect_num_candidates(p), precis_protect_seconds(p), command);
    fputs("| set | layers protected | %", f);
    md_budget_heads(f, p, nb);
    fputs(" latency ms | vs all-int8 |\n|---|---|---:|", f);
    for (int i = 0; i < nb + 2; i++) fputs("---:|", f);
    fputs("\n", f);
    precis_protect_candidate c8;
    precis_protect_candidate_get(p, precis_protect_pick(p, PRECIS_PROTECT_INT8), &c8);
    for (int r = 0; r < 5; r++) {
        precis_protect_candidate c;
        int i = precis_protect_pick(p, k_order[r]);
        if (i < 0 || precis_protect_candidate_get(p, i, &c)) continue;
        bool fp32 = k_order[r] == PRECIS_PROTECT_FP32;
        fprintf(f, "| %s%s%s | ", k_order[r] == PRECIS_PROTECT_CHOSEN ? "**" : "", k_roles[k_order[r]],
                k_order[r] == PRECIS_PROTECT_CHOSEN ? "**" : "");
        if (fp32) fputs("all (fp32 engine)", f);
        for (int k = 0; !fp32 && k < c.num_layers && k < 12; k++) {
            precis_sens_layer l;
            precis_sens_layer_get(s, c.layers[k], &l);
            fprintf(f, "%s`%s`", k ? ", " : "", l.name);
        }
        if (!fp32 && c.num_layers > 12) fprintf(f, ", ... (%d)", c.num_layers);
        if (!fp32 && !c.num_layers) fputs("none", f);
        fprintf(f, " | %.1f |", n ? 100.0 * c.num_layers / n : 0);
        for (int b = 0; b < nb; b++) {
            precis_budget bd;
            precis_protect_budget(p, b, &bd, NULL);
            md_value(f, &bd, &c);
        }
        fprintf(f, " %.3f | %.2fx |\n", c.latency_ms, c8.latency_ms > 0 ? c.latency_ms / c8.latency_ms : NAN);
    }
    fputs("\nLatency: median of the first eval batch, the five sets timed interleaved in one "
          "run. vs all-int8: latency ratio (lower is faster).\n", f);
    const char *nt = precis_protect_notes(p);
    if (*nt) fputs("\nNotes:\n", f);
    while (*nt) {
        size_t l = strcspn(nt, "\n");
        fprintf(f, "- %.*s\n", (int)l, nt);
        nt += l + (nt[l] == '\n');
    }
    fputs("\n![accuracy vs latency](protect.svg)\n\nEvery verified set (label: why it was tried; "
          "cost model: the step time the cost model charges over all-int8):\n\n| # | label | "
          "layers | score | meets", f);
    md_budget_heads(f, p, nb);
    fputs(" latency ms | cost model ms |\n|---:|---|---|---:|---|", f);
    for (int i = 0; i < nb + 2; i++) fputs("---:|", f);
    fputs("\n", f);
    for (int i = 0; i < precis_protect_num_candidates(p); i++) {
        precis_protect_candidate c;
        precis_protect_candidate_get(p, i, &c);
        fprintf(f, "| %d | %s | %d | %.3g | %s |", i, c.label, c.num_layers, c.score,
                c.meets ? "yes" : "no");
        for (int b = 0; b < nb; b++) {
            precis_budget bd;
            precis_protect_budget(p, b, &bd, NULL);
            md_value(f, &bd, &c);
        }
        fprintf(f, " %.3f | %.3f |\n", c.latency_ms, c.cost_ms);
    }
    fputs("\nPer-layer sensitivity with the chosen layers marked: [sensitivity.md](sensitivity.md)"
          "\n\n![per-layer sensitivity](sensitivity.svg)\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static int copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[8192];
    size_t n;
    int bad = !a || !b;
    while (!bad && (n = fread(buf, 1, sizeof buf, a)) > 0) bad = fwrite(buf, 1, n, b) != n;
    if (a) fclose(a);
    if (b && fclose(b) != 0) bad = 1;
    return bad ? -1 : 0;
}

int protect_report_write(const precis_protection *p, const char *model, const char *command,
                         const char *rules_path, const char *out_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/protect.json", out_dir);
    int bad = write_json(p, model, command, path);
    if (!bad) snprintf(path, sizeof path, "%s/protect.md", out_dir), bad = write_md(p, model, command, path);
    if (!bad) snprintf(path, sizeof path, "%s/protect.svg", out_dir), bad = protect_svg_write(p, model, path);
    if (!bad)
        snprintf(path, sizeof path, "%s/protect.rules.json", out_dir), bad = copy_file(rules_path, path);
    if (bad) {
        fprintf(stderr, "precis: error: cannot write '%s': %s\n", path, strerror(errno));
        return PRECIS_ERR_IO;
    }
    const precis_sens *s = precis_protect_sens(p);
    int n = precis_sens_num_layers(s);
    unsigned char *mark = calloc((size_t)(n ? n : 1), 1);
    if (!mark) return PRECIS_ERR_OOM;
    precis_protect_candidate c;
    if (!precis_protect_candidate_get(p, precis_protect_pick(p, PRECIS_PROTECT_CHOSEN), &c))
        for (int k = 0; k < c.num_layers; k++) mark[c.layers[k]] = 1;
    precis_budget b;
    precis_protect_budget(p, 0, &b, NULL);
    sens_metric m = !strcmp(b.metric, "cosine") ? SM_COSINE : !strcmp(b.metric, "top1") ? SM_TOP1
                                                                                          : SM_SQNR;
    int rc = sens_report_write(s, model, command, m, out_dir, mark);
    free(mark);
    return rc;
}

void protect_summary(const precis_protection *p, FILE *f) {
    const precis_sens *s = precis_protect_sens(p);
    int n = precis_sens_num_layers(s);
    precis_protect_candidate c8;
    precis_protect_candidate_get(p, precis_protect_pick(p, PRECIS_PROTECT_INT8), &c8);
    fprintf(f, "protect: %d layers, %d sets verified in %.0f s; budget %s\n", n,
            precis_protect_num_candidates(p), precis_protect_seconds(p),
            precis_protect_met(p) ? "met" : "NOT met");
    for (int r = 0; r < 5; r++) {
        precis_protect_candidate c;
        int i = precis_protect_pick(p, k_order[r]);
        if (i < 0 || precis_protect_candidate_get(p, i, &c)) continue;
        char val[512];
        protect_budget_text(p, &c, val, sizeof val);
        fprintf(f, "  %-17s %3d layers  %8.3f ms (%.2fx all-int8)  %s\n", k_roles[k_order[r]],
                k_order[r] == PRECIS_PROTECT_FP32 ? n : c.num_layers, c.latency_ms,
                c8.latency_ms > 0 ? c.latency_ms / c8.latency_ms : NAN, val);
    }
}
