/* precis sensitivity: the ranked per-layer bar chart (OUT/sensitivity.svg).
 * One row per layer, most sensitive first, two panels:
 *   left (orange): the metric with this layer alone in int8, the rest fp32;
 *   right (blue): with everything int8 but this layer, the change against the
 *   all-int8 baseline, signed so that right of zero is better (what keeping
 *   the layer float buys).
 * Hovering a row shows every number of the layer. Rows are 18 px: 100 layers
 * fit in about 1,900 px. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sens_report.h"

enum { ROW = 18, LABEL_W = 330, A_W = 380, B_W = 260, GAP = 70, MARGIN = 16, HEADER = 96,
       AXIS = 30 };

static const char *const k_axis_names[] = {"SQNR dB", "cosine", "relative L2", "KL",
                                           "top-1 agreement"};

static void tip_metrics(FILE *f, const char *what, const precis_sens_metrics *m) {
    fprintf(f, "\n%s: cosine %.6f, SQNR %.2f dB, rel L2 %.4g", what, m->cosine, m->sqnr_db,
            m->rel_l2);
    if (!isnan(m->kl)) fprintf(f, ", KL %.4g", m->kl);
    if (!isnan(m->top1)) fprintf(f, ", top-1 %.2f%%", 100 * m->top1);
}

/* A round tick step giving about 4 intervals over span. */
static double tick_step(double span) {
    double p = pow(10, floor(log10(span / 4))), r = span / 4 / p;
    return p * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
}

typedef struct axis {
    int x, w;
    double lo, hi;
} axis;

static int ax_x(const axis *a, double v) {
    double c = v < a->lo ? a->lo : v > a->hi ? a->hi : v;
    return a->x + (int)lround((c - a->lo) / (a->hi - a->lo) * a->w);
}

static void ticks(FILE *f, const axis *a, int y) {
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", a->x, y,
            a->x + a->w, y);
    double st = tick_step(a->hi - a->lo);
    for (double v = ceil(a->lo / st) * st; v <= a->hi + st * 1e-9; v += st) {
        double t = fabs(v) < st * 1e-9 ? 0 : v;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>"
                   "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                ax_x(a, t), y, ax_x(a, t), y + 4, ax_x(a, t), y + 16, t);
    }
}

/* A bar from `from` to v on axis a (clipped; infinite values to the edge). */
static void bar(FILE *f, const axis *a, double from, double v, int y, const char *fill) {
    if (isnan(v)) return;
    int x1 = ax_x(a, from), x2 = ax_x(a, isfinite(v) ? v : v > 0 ? a->hi : a->lo);
    int x = x1 < x2 ? x1 : x2, w = x1 < x2 ? x2 - x1 : x1 - x2;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"10\" fill=\"%s\"/>\n", x, y,
            w ? w : 1, fill);
}

int sens_svg_write(const precis_sens *s, const char *model, sens_metric metric,
                   const int *order, const unsigned char *mark, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int n = precis_sens_num_layers(s);
    precis_sens_metrics b8;
    precis_sens_baseline(s, 0, &b8);
    double base = sens_metric_value(&b8, metric);
    int sign = sens_metric_lower_worse(metric) ? 1 : -1; /* gain = sign * (v - base) */
    axis A = {MARGIN + LABEL_W, A_W, INFINITY, -INFINITY};
    axis B = {MARGIN + LABEL_W + A_W + GAP, B_W, 0, 0};
    if (isfinite(base)) A.lo = A.hi = base;
    for (int i = 0; i < n; i++) {
        precis_sens_layer l;
        precis_sens_layer_get(s, i, &l);
        double a = sens_metric_value(&l.only, metric), b = sens_metric_value(&l.all_but, metric);
        if (isfinite(a)) A.lo = fmin(A.lo, a), A.hi = fmax(A.hi, a);
        if (isfinite(b) && isfinite(base)) {
            double g = sign * (b - base);
            B.lo = fmin(B.lo, g), B.hi = fmax(B.hi, g);
        }
    }
    if (!isfinite(A.lo)) A.lo = 0, A.hi = 1;
    if (metric == SM_SQNR || metric == SM_REL_L2 || metric == SM_KL) A.lo = fmin(A.lo, 0);
    if (metric == SM_TOP1) A.hi = fmax(A.hi, 1);
    if (metric == SM_COSINE || metric == SM_TOP1) A.lo -= (A.hi - A.lo) * 0.05;
    if (A.hi - A.lo < 1e-12) A.hi = A.lo + 1;
    double bm = fmax(fabs(B.lo), fabs(B.hi));
    B.lo = -(bm > 0 ? bm : 1) * 1.05; /* symmetric around zero */
    B.hi = -B.lo;
    int w = B.x + B_W + MARGIN + 10, h = HEADER + n * ROW + AXIS + MARGIN + (mark ? 18 : 0);
    const char *base_name = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
               "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            w, h, w, h);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">INT8 sensitivity "
               "per layer: ", MARGIN);
    xml_text(f, base_name, 60);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" fill=\"#444\">%d layers, most sensitive first; "
               "%d eval batches; %s against the fp32 engine's outputs (worst over outputs); "
               "all-int8 %s %.4g</text>\n",
            MARGIN, n, precis_sens_eval_batches(s), k_axis_names[metric], k_axis_names[metric],
            base);
    fprintf(f, "<text x=\"%d\" y=\"68\" font-weight=\"bold\" fill=\"#e6550d\">this layer int8, "
               "the rest fp32: %s</text>\n<text x=\"%d\" y=\"82\" fill=\"#444\">%s is worse; "
               "dashed: all-int8</text>\n",
            A.x, k_axis_names[metric], A.x, sign > 0 ? "shorter" : "longer");
    fprintf(f, "<text x=\"%d\" y=\"68\" font-weight=\"bold\" fill=\"#3182bd\">all int8 but this "
               "layer: change vs all-int8</text>\n<text x=\"%d\" y=\"82\" fill=\"#444\">right of "
               "0: keeping it fp32 helps</text>\n",
            B.x, B.x);
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
        if (r % 2)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f2f2f2\"/>\n",
                    MARGIN, y, w - 2 * MARGIN, ROW);
        bool chosen = mark && mark[order[r]];
        if (chosen)
            fprintf(f, "<rect class=\"protected\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                       "fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\"/>\n",
                    MARGIN, y + 1, w - 2 * MARGIN, ROW - 2);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>%s%d. ", A.x - 6, y + 13,
                chosen ? " font-weight=\"bold\" fill=\"#2ca02c\"" : "", chosen ? "[protected] " : "",
                r + 1);
        xml_text(f, l.name, 50);
        fputs("</text>\n", f);
        double a = sens_metric_value(&l.only, metric), b = sens_metric_value(&l.all_but, metric);
        bar(f, &A, A.lo, a, y + 4, "#e6550d");
        if (!isnan(a))
            fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#444\">%.4g</text>\n", A.x + A.w + 4,
                    y + 13, a);
        if (isfinite(base) && !isnan(b)) bar(f, &B, 0, sign * (b - base), y + 4, "#3182bd");
        fputs("</g>\n", f);
    }
    int ya = HEADER + n * ROW;
    ticks(f, &A, ya);
    ticks(f, &B, ya);
    if (isfinite(base))
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\" "
                   "stroke-dasharray=\"4 3\"/>\n",
                ax_x(&A, base), HEADER - 4, ax_x(&A, base), ya);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", ax_x(&B, 0),
            HEADER - 4, ax_x(&B, 0), ya);
    if (mark)
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#2ca02c\">green outline: the layers "
                   "automatic protection keeps in higher precision</text>\n",
                MARGIN, ya + AXIS + 8);
    fputs("</svg>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}
