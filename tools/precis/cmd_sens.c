/* precis sensitivity: per-layer INT8 sensitivity, ranked, with a report
 * folder (sens_report.c writes it). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sens_report.h"

void usage_sensitivity(FILE *f) {
    fprintf(f,
            "usage: precis sensitivity MODEL.onnx --calib-data DIR|LIST --eval-data DIR|LIST\n"
            "                    --report OUT/ [--metric sqnr|cosine|rel_l2|kl|top1]\n"
            "                    [--eval-batches N] [--calibrator C] [--percentile P]\n"
            "                    [--calib-preprocess SPEC] [--calib-cache FILE]\n"
            "                    [--calib-batches N] [--threads N] [--shape NAME=DIMS]...\n"
            "                    [--layer-precision SEL:TYPE]... [--progress]\n\n"
            "Measures, for every layer the int8 build runs in int8 (Conv, ConvTranspose,\n"
            "MatMul, Gemm, with what fuses into each), the error on the model's outputs\n"
            "against the fp32 engine over the eval data, two ways: the layer alone in int8\n"
            "(the rest fp32) and everything int8 but the layer; with the all-fp32 and\n"
            "all-int8 baselines, and the local SQNR of the layer's own output (int8 alone)\n"
            "against the fp32 engine's. Metrics: cosine (min over samples), SQNR dB and\n"
            "relative L2 (mean), KL (probability outputs) and top-1 agreement (rank-2\n"
            "outputs, probability outputs). Calibrates once (OUT/calib.cache unless\n"
            "--calib-cache) and reuses it for every build; the eval data (same formats as\n"
            "the calibration data) is streamed batch by batch.\n\n"
            "Writes OUT/sensitivity.json (every number, the command, the baselines),\n"
            "OUT/sensitivity.md (a table ranked most sensitive first by --metric in the\n"
            "int8-alone mode; default sqnr) and OUT/sensitivity.svg (bars per layer, both\n"
            "modes), and prints the top 10. --shape NAME=DIMS fixes a dynamic input\n"
            "(1x3x224x224). --layer-precision rules apply before the analysis' own.\n"
            "A progress bar is drawn when stderr is a terminal or with --progress.\n\n%s",
            k_exit_codes);
}

static int parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 1 || v > 1000000000) return -1;
    *out = (int)v;
    return 0;
}

int cmd_sensitivity(int argc, char **argv) {
    const char *model = NULL, *eval = NULL, *report = NULL, *metric_name = "sqnr";
    const char *rules[256];
    char shapes[4096] = "";
    size_t shapes_len = 0;
    int n_rules = 0, eval_batches = 0, progress = isatty(2);
    precis_build_options o = {0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        const char **dst = !strcmp(a, "--calib-data")         ? &o.calib_data
                           : !strcmp(a, "--eval-data")        ? &eval
                           : !strcmp(a, "--report")           ? &report
                           : !strcmp(a, "--metric")           ? &metric_name
                           : !strcmp(a, "--calibrator")       ? &o.calibrator
                           : !strcmp(a, "--calib-preprocess") ? &o.calib_preprocess
                           : !strcmp(a, "--calib-cache")      ? &o.calib_cache
                                                              : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_sensitivity(stdout);
            return 0;
        } else if (dst) {
            if (!more) return usage_error(usage_sensitivity, "%s needs a value", a);
            *dst = argv[++i];
        } else if (!strcmp(a, "--eval-batches") || !strcmp(a, "--calib-batches") ||
                   !strcmp(a, "--threads")) {
            int v;
            if (!more || parse_int(argv[i + 1], &v))
                return usage_error(usage_sensitivity, "%s needs a positive number", a);
            i++;
            if (a[2] == 'e') eval_batches = v;
            else if (a[2] == 'c') o.calib_batches = v;
            else o.num_threads = v;
        } else if (!strcmp(a, "--percentile")) {
            char *end;
            if (!more || (o.percentile = strtod(argv[++i], &end), *end) || !(o.percentile > 0) ||
                o.percentile > 100)
                return usage_error(usage_sensitivity, "%s needs a number in (0, 100]", a);
        } else if (!strcmp(a, "--shape")) {
            const char *eq = more ? strchr(argv[i + 1], '=') : NULL;
            if (!eq || eq == argv[i + 1] || !eq[1])
                return usage_error(usage_sensitivity, "%s needs NAME=DIMS (x=1x3x224x224)", a);
            int w = snprintf(shapes + shapes_len, sizeof shapes - shapes_len, "%s%.*s:%s",
                             shapes_len ? "," : "", (int)(eq - argv[i + 1]), argv[i + 1], eq + 1);
            if (w < 0 || (size_t)w >= sizeof shapes - shapes_len)
                return usage_error(usage_sensitivity, "too many %s options", a);
            shapes_len += (size_t)w;
            i++;
        } else if (!strcmp(a, "--layer-precision")) {
            if (!more) return usage_error(usage_sensitivity, "%s needs SELECTOR:TYPE", a);
            if (n_rules == 256) return usage_error(usage_sensitivity, "too many %s rules", a);
            rules[n_rules++] = argv[++i];
        } else if (!strcmp(a, "--progress")) {
            progress = 1;
        } else if (a[0] == '-') {
            return usage_error(usage_sensitivity, "unknown option '%s'", a);
        } else if (!model) {
            model = a;
        } else {
            return usage_error(usage_sensitivity, "unexpected argument '%s'", a);
        }
    }
    if (!model) return usage_error(usage_sensitivity, "missing MODEL.onnx%s", "");
    if (!eval) return usage_error(usage_sensitivity, "missing --eval-data DIR%s", "");
    if (!report) return usage_error(usage_sensitivity, "missing --report OUT/%s", "");
    if (!o.calib_data && !o.calib_cache)
        return usage_error(usage_sensitivity, "missing --calib-data DIR (or --calib-cache FILE)%s",
                           "");
    sens_metric metric;
    if (sens_metric_parse(metric_name, &metric)) {
        fprintf(stderr, "precis: error: --metric '%s': want sqnr, cosine, rel_l2, kl or top1\n",
                metric_name);
        return 1;
    }
    if (mkdir_p(report) != 0) {
        fprintf(stderr, "precis: error: --report: cannot create folder '%s': %s\n", report,
                strerror(errno));
        return PRECIS_ERR_IO;
    }
    char cache[4096];
    if (!o.calib_cache) {
        snprintf(cache, sizeof cache, "%s/calib.cache", report);
        o.calib_cache = cache;
    }
    o.shapes = shapes_len ? shapes : NULL;
    o.layer_precision = rules;
    o.n_layer_precision = n_rules;
    o.progress = progress;
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_sens *s = NULL;
    precis_status st = precis_sensitivity(ctx, model, &o, eval, eval_batches, &s);
    if (st) {
        int rc = fail(ctx, st);
        precis_ctx_destroy(ctx);
        return rc;
    }
    static char cmd[16384];
    command_line("precis sensitivity", argc, argv, cmd, sizeof cmd);
    int rc = sens_report_write(s, model, cmd, metric, report, NULL);
    precis_sens_destroy(s);
    precis_ctx_destroy(ctx);
    return rc;
}
