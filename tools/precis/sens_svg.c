/* precis sensitivity: the ranked per-layer bar chart (OUT/sensitivity.svg).
 * One row per layer, most sensitive first: an orange bar for the layer alone
 * in int8, a blue one for everything int8 but the layer, on one axis of the
 * ranking metric; a dashed line marks the all-int8 baseline. Hovering a row
 * shows every number of the layer. Rows are 18 px: 100 layers fit in about
 * 1,900 px. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "sens_report.h"

enum { ROW = 18, LABEL_W = 340, CHART_W = 520, RIGHT = 90, MARGIN = 16, HEADER = 92, AXIS = 26 };

static const char *const k_axis_names[] = {"SQNR dB (higher is better)", "cosine (higher is better)",
                                           "relative L2 (lower is better)", "KL (lower is better)",
                                           "top-1 agreement (higher is better)"};

static void tip_metrics(FILE *f, const char *what, const precis_sens_metrics *m) {
    fprintf(f, "\n%s: cosine %.6f, SQNR %.2f dB, rel L2 %.4g", what, m->cosine, m->sqnr_db,
            m->rel_l2);
    if (!isnan(m->kl)) fprintf(f, ", KL %.4g", m->kl);
    if (!isnan(m->top1)) fprintf(f, ", top-1 %.2f%%", 100 * m->top1);
}

int sens_svg_write(const precis_sens *s, const char *model, sens_metric metric,
                   const int *order, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int n = precis_sens_num_layers(s);
    precis_sens_metrics b8;
    precis_sens_baseline(s, 0, &b8);
    double base = sens_metric_value(&b8, metric);
    /* axis range over every finite value shown */
    double lo = INFINITY, hi = -INFINITY;
    if (isfinite(base)) lo = hi = base;
    for (int i = 0; i < n; i++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, i, &l);
        double v[2] = {sens_metric_value(&l.only, metric), sens_metric_value(&l.all_but, metric)};
        for (int k = 0; k < 2; k++)
            if (isfinite(v[k])) lo = fmin(lo, v[k]), hi = fmax(hi, v[k]);
    }
    if (!isfinite(lo)) lo = 0, hi = 1;
    if (metric == SM_SQNR || metric == SM_REL_L2 || metric == SM_KL) lo = fmin(lo, 0);
    if (metric == SM_TOP1) hi = fmax(hi, 1);
    if (hi - lo < 1e-12) hi = lo + 1;
    double pad = (hi - lo) * 0.04;
    if (metric == SM_COSINE || metric == SM_TOP1) lo -= pad;
    int x0 = MARGIN + LABEL_W, w = 2 * MARGIN + LABEL_W + CHART_W + RIGHT;
    int h = HEADER + n * ROW + AXIS + MARGIN;
#define X(v) (x0 + (int)lround(((v) - lo) / (hi - lo) * CHART_W))
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
               "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            w, h, w, h);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">INT8 sensitivity "
               "per layer: ", MARGIN);
    xml_text(f, model, 70);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" fill=\"#444\">%d layers, most sensitive first; "
               "%d eval batches; against the fp32 engine's outputs (worst over outputs)</text>\n",
            MARGIN, n, precis_sens_eval_batches(s));
    fprintf(f, "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"10\" fill=\"#e6550d\"/>"
               "<text x=\"%d\" y=\"61\">this layer int8, the rest fp32</text>\n"
               "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"10\" fill=\"#3182bd\"/>"
               "<text x=\"%d\" y=\"61\">everything int8 but this layer</text>\n"
               "<line x1=\"%d\" y1=\"57\" x2=\"%d\" y2=\"57\" stroke=\"#333\" "
               "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"61\">all-int8 baseline</text>\n",
            MARGIN, MARGIN + 16, MARGIN + 220, MARGIN + 236, MARGIN + 450, MARGIN + 474,
            MARGIN + 478);
    fprintf(f, "<text x=\"%d\" y=\"80\" font-weight=\"bold\">%s</text>\n", x0,
            k_axis_names[metric]);
    for (int r = 0; r < n; r++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, order[r], &l);
        int y = HEADER + r * ROW;
        fprintf(f, "<g class=\"layer\"><title>#%d ", r + 1);
        xml_text(f, l.name, 0);
        fputs(" (", f);
        xml_text(f, l.op, 0);
        fputs(")", f);
        tip_metrics(f, "int8 alone", &l.only);
        tip_metrics(f, "all int8 but this", &l.all_but);
        if (isfinite(l.local_sqnr_db)) fprintf(f, "\nlocal SQNR %.2f dB", l.local_sqnr_db);
        fputs("</title>\n", f);
        if (r % 2) fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n",
                           MARGIN, y, w - 2 * MARGIN, ROW);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d. ", x0 - 6, y + 13, r + 1);
        xml_text(f, l.name, 52);
        fputs("</text>\n", f);
        double v[2] = {sens_metric_value(&l.only, metric), sens_metric_value(&l.all_but, metric)};
        static const char *const fill[2] = {"#e6550d", "#3182bd"};
        for (int k = 0; k < 2; k++) {
            if (isnan(v[k])) continue;
            double c = isfinite(v[k]) ? v[k] : v[k] > 0 ? hi : lo;
            int bw = X(c) - x0;
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"7\" fill=\"%s\"/>\n", x0,
                    y + 2 + 7 * k, bw > 0 ? bw : 0, fill[k]);
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#444\">%.4g</text></g>\n", x0 + CHART_W + 6,
                y + 13, v[0]);
    }
    int ya = HEADER + n * ROW;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", x0, ya,
            x0 + CHART_W, ya);
    for (int t = 0; t <= 4; t++) {
        double v = lo + (hi - lo) * t / 4;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
                   "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.4g</text>\n",
                X(v), ya, X(v), ya + 4, X(v), ya + 16, v);
    }
    if (isfinite(base))
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\" "
                   "stroke-dasharray=\"4 3\"/>\n",
                X(base), HEADER - 4, X(base), ya);
#undef X
    fputs("</svg>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}
