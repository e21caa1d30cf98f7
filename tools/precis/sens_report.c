/* precis sensitivity: ranking and the JSON / Markdown report, top 10 on stdout. */
#define _POSIX_C_SOURCE 200809L
#include "sens_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *const k_sens_metric_names[] = {"sqnr", "cosine", "rel_l2", "kl", "top1"};

int sens_metric_parse(const char *name, sens_metric *m) {
    for (int i = 0; i < 5; i++)
        if (!strcmp(name, k_sens_metric_names[i])) return *m = (sens_metric)i, 0;
    return -1;
}

double sens_metric_value(const precis_sens_metrics *x, sens_metric m) {
    switch (m) {
    case SM_SQNR: return x->sqnr_db;
    case SM_COSINE: return x->cosine;
    case SM_REL_L2: return x->rel_l2;
    case SM_KL: return x->kl;
    case SM_TOP1: return x->top1;
    }
    return NAN;
}

int sens_metric_lower_worse(sens_metric m) { return m == SM_SQNR || m == SM_COSINE || m == SM_TOP1; }

/* ranking: most sensitive first, NAN last, ties by the other mode, then by index */
static const precis_sens *g_s;
static sens_metric g_m;

static int worse_first(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
    if (a == b) return 0;
    return (sens_metric_lower_worse(g_m) ? a < b : a > b) ? -1 : 1;
}

static int cmp_layers(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    precis_sens_layer la, lb;
    precis_sens_layer_get(g_s, a, &la);
    precis_sens_layer_get(g_s, b, &lb);
    int c = worse_first(sens_metric_value(&la.only, g_m), sens_metric_value(&lb.only, g_m));
    if (!c) c = worse_first(sens_metric_value(&la.all_but, g_m), sens_metric_value(&lb.all_but, g_m)) * -1;
    return c ? c : a - b;
}

static void num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

static void metrics_json(FILE *f, const precis_sens_metrics *m) {
    fputs("{\"cosine\": ", f);
    num(f, m->cosine);
    fputs(", \"sqnr_db\": ", f);
    num(f, m->sqnr_db);
    fputs(", \"rel_l2\": ", f);
    num(f, m->rel_l2);
    fputs(", \"kl\": ", f);
    num(f, m->kl);
    fputs(", \"top1\": ", f);
    num(f, m->top1);
    fputc('}', f);
}

/* per-output metrics of layer (-1: baselines) in mode */
static void outputs_json(FILE *f, const precis_sens *s, int layer, int mode) {
    fputc('[', f);
    for (int k = 0; k < precis_sens_num_outputs(s); k++) {
        precis_sens_metrics m;
        precis_sens_output_metrics(s, layer, mode, k, &m);
        fprintf(f, "%s{\"output\": ", k ? ", " : "");
        json_fstr(f, precis_sens_output_name(s, k));
        fputs(", \"metrics\": ", f);
        metrics_json(f, &m);
        fputc('}', f);
    }
    fputc(']', f);
}

static int write_json(const precis_sens *s, const char *model, const char *command,
                      sens_metric metric, const int *order, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    precis_sens_metrics b32, b8;
    precis_sens_baseline(s, 1, &b32);
    precis_sens_baseline(s, 0, &b8);
    fputs("{\"command\": ", f);
    json_fstr(f, command);
    fputs(",\n \"model\": ", f);
    json_fstr(f, model);
    fprintf(f, ",\n \"metric\": \"%s\", \"eval_batches\": %d, \"eval_samples\": %lld, "
               "\"seconds\": %.1f, \"precis_version\": \"%s\",\n \"outputs\": [",
            k_sens_metric_names[metric], precis_sens_eval_batches(s),
            (long long)precis_sens_eval_samples(s), precis_sens_seconds(s), precis_version());
    for (int k = 0; k < precis_sens_num_outputs(s); k++) {
        if (k) fputs(", ", f);
        json_fstr(f, precis_sens_output_name(s, k));
    }
    fputs("],\n \"notes\": \"metrics are the worst over the outputs (min cosine, SQNR, top1; "
          "max rel_l2, KL); per output under 'outputs'; null: does not apply, or infinite "
          "(identical outputs)\",\n \"baselines\": {\"fp32\": ", f);
    metrics_json(f, &b32);
    fputs(", \"int8\": ", f);
    metrics_json(f, &b8);
    fputs(", \"fp32_outputs\": ", f);
    outputs_json(f, s, -1, 0);
    fputs(", \"int8_outputs\": ", f);
    outputs_json(f, s, -1, 1);
    fputs("},\n \"layers\": [", f);
    int n = precis_sens_num_layers(s);
    for (int r = 0; r < n; r++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, order[r], &l);
        fprintf(f, "%s\n  {\"rank\": %d, \"name\": ", r ? "," : "", r + 1);
        json_fstr(f, l.name);
        fputs(", \"op\": ", f);
        json_fstr(f, l.op);
        fputs(", \"fused\": [", f);
        for (int k = 0; k < l.num_fused; k++) {
            if (k) fputs(", ", f);
            json_fstr(f, l.fused[k]);
        }
        fputs("],\n   \"int8_alone\": ", f);
        metrics_json(f, &l.only);
        fputs(",\n   \"all_int8_but_this\": ", f);
        metrics_json(f, &l.all_but);
        fputs(",\n   \"local_sqnr_db\": ", f);
        num(f, l.local_sqnr_db);
        fputs(", \"local_tensor\": ", f);
        if (l.local_tensor[0]) json_fstr(f, l.local_tensor);
        else fputs("null", f);
        fprintf(f, ", \"ran_int8_alone\": %s, \"seconds\": %.2f", l.only_int8 ? "true" : "false",
                l.seconds);
        fputs(",\n   \"outputs_int8_alone\": ", f);
        outputs_json(f, s, order[r], 0);
        fputs(", \"outputs_all_int8_but_this\": ", f);
        outputs_json(f, s, order[r], 1);
        fputc('}', f);
    }
    fputs("\n ]}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* A metric as table text: "-" for NAN, "inf" for +inf. */
static void value(FILE *f, double v, sens_metric m, const char *end) {
    if (isnan(v)) fprintf(f, " -%s", end);
    else if (isinf(v)) fprintf(f, " %sinf%s", v > 0 ? "" : "-", end);
    else if (m == SM_COSINE) fprintf(f, " %.6f%s", v, end);
    else if (m == SM_SQNR) fprintf(f, " %.2f%s", v, end);
    else if (m == SM_TOP1) fprintf(f, " %.2f%%%s", 100 * v, end);
    else fprintf(f, " %.4g%s", v, end);
}

static void cell(FILE *f, double v, sens_metric m) { value(f, v, m, " |"); }

/* The metrics some output has (not NAN for the int8 baseline). */
static int applies(const precis_sens *s, sens_metric m) {
    precis_sens_metrics b;
    precis_sens_baseline(s, 0, &b);
    return !isnan(sens_metric_value(&b, m));
}

static const char *const k_md_names[] = {"SQNR dB", "cosine", "rel L2", "KL", "top-1"};

static void md_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|' || *s == '`' || *s == '*' || *s == '_' || *s == '\\') fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
}

static int write_md(const precis_sens *s, const char *model, const char *command,
                    sens_metric metric, const int *order, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int n = precis_sens_num_layers(s);
    fputs("# INT8 sensitivity: ", f);
    md_escape(f, model);
    fprintf(f, "\n\n%d layers, %d eval batches (%lld samples), %.0f s.\nCommand:\n\n    %s\n\n",
            n, precis_sens_eval_batches(s), (long long)precis_sens_eval_samples(s),
            precis_sens_seconds(s), command);
    fputs("Ranked most sensitive first by ", f);
    fprintf(f, "%s with the layer alone in int8. **alone**: this layer int8, the rest fp32; "
               "**all but**: everything int8 except this layer (fp32); both against the fp32 "
               "engine's outputs (worst over outputs). **local**: SQNR of the layer's own output "
               "(int8 alone) against the fp32 engine's same tensor.\n\n",
            k_md_names[metric]);
    int show[5], ns = 0;
    for (int m = 0; m < 5; m++)
        if (applies(s, (sens_metric)m)) show[ns++] = m;
    precis_sens_metrics b8;
    precis_sens_baseline(s, 0, &b8);
    fputs("Baseline all-int8:", f);
    for (int j = 0; j < ns; j++) {
        fprintf(f, "%s %s", j ? "," : "", k_md_names[show[j]]);
        value(f, sens_metric_value(&b8, (sens_metric)show[j]), (sens_metric)show[j], "");
    }
    fputs(". All-fp32 is the reference (cosine 1, SQNR inf).\n\n| # | layer | op |", f);
    for (int j = 0; j < ns; j++) fprintf(f, " alone %s |", k_md_names[show[j]]);
    for (int j = 0; j < ns; j++) fprintf(f, " all but %s |", k_md_names[show[j]]);
    fputs(" local SQNR dB |\n|---:|---|---|", f);
    for (int j = 0; j < 2 * ns + 1; j++) fputs("---:|", f);
    fputc('\n', f);
    for (int r = 0; r < n; r++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, order[r], &l);
        fprintf(f, "| %d | ", r + 1);
        md_escape(f, l.name);
        fprintf(f, "%s | %s |", l.only_int8 ? "" : " (not int8 alone)", l.op);
        for (int j = 0; j < ns; j++)
            cell(f, sens_metric_value(&l.only, (sens_metric)show[j]), (sens_metric)show[j]);
        for (int j = 0; j < ns; j++)
            cell(f, sens_metric_value(&l.all_but, (sens_metric)show[j]), (sens_metric)show[j]);
        cell(f, l.local_sqnr_db, SM_SQNR);
        fputc('\n', f);
    }
    fputs("\n![per-layer sensitivity](sensitivity.svg)\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

int sens_report_write(const precis_sens *s, const char *model, const char *command,
                      sens_metric metric, const char *out_dir, const unsigned char *mark) {
    int n = precis_sens_num_layers(s);
    if (!applies(s, metric)) {
        fprintf(stderr, "precis: note: --metric %s does not apply to this model's outputs: "
                        "ranking by sqnr\n", k_sens_metric_names[metric]);
        metric = SM_SQNR;
    }
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return PRECIS_ERR_OOM;
    for (int i = 0; i < n; i++) order[i] = i;
    g_s = s;
    g_m = metric;
    qsort(order, (size_t)n, sizeof *order, cmp_layers);
    char path[4096];
    const char *what = "sensitivity.json";
    snprintf(path, sizeof path, "%s/%s", out_dir, what);
    int bad = write_json(s, model, command, metric, order, path);
    if (!bad) {
        snprintf(path, sizeof path, "%s/%s", out_dir, what = "sensitivity.md");
        bad = write_md(s, model, command, metric, order, path);
    }
    if (!bad) {
        snprintf(path, sizeof path, "%s/%s", out_dir, what = "sensitivity.svg");
        bad = sens_svg_write(s, model, metric, order, mark, path);
    }
    if (bad) {
        fprintf(stderr, "precis: error: cannot write '%s': %s\n", path, strerror(errno));
        free(order);
        return PRECIS_ERR_IO;
    }
    if (mark) {
        free(order);
        return 0;
    }
    precis_sens_metrics b8;
    precis_sens_baseline(s, 0, &b8);
    printf("%d layers, %d eval batches, %.0f s; all-int8 %s %.6g\n", n,
           precis_sens_eval_batches(s), precis_sens_seconds(s), k_sens_metric_names[metric],
           sens_metric_value(&b8, metric));
    printf("%4s  %-48s %-14s %12s %12s %10s\n", "rank", "layer (most sensitive first)", "op",
           "alone", "all-but", "local dB");
    for (int r = 0; r < n && r < 10; r++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, order[r], &l);
        size_t len = strlen(l.name);
        printf("%4d  %s%-*s %-14s %12.6g %12.6g %10.2f\n", r + 1, len > 48 ? "..." : "",
               len > 48 ? 45 : 48, len > 48 ? l.name + len - 45 : l.name, l.op,
               sens_metric_value(&l.only, metric), sens_metric_value(&l.all_but, metric),
               l.local_sqnr_db);
    }
    printf("report: %s/sensitivity.{json,md,svg}\n", out_dir);
    free(order);
    return 0;
}
