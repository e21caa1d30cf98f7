/* precis build --protect auto: OUT/protect.svg, accuracy (the budget's first
 * condition) against measured latency for every verified set: the Pareto
 * front of those sets, the chosen set, the baselines and the all-int8 /
 * all-fp32 points on the same axes, the budget as a dashed line. Hovering a
 * point shows its set. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "protect_report.h"

enum { W = 760, H = 480, L = 80, R = 200, T = 60, B = 56 };

typedef struct pt {
    double x, y;
    int i;
} pt;

static double lo_x, hi_x, lo_y, hi_y;

static double px(double x) { return L + (x - lo_x) / (hi_x - lo_x) * (W - L - R); }
static double py(double y) {
    double c = y > hi_y ? hi_y : y < lo_y ? lo_y : y;
    return H - B - (c - lo_y) / (hi_y - lo_y) * (H - T - B);
}

static double nice_step(double span) {
    double p = pow(10, floor(log10(span / 5))), r = span / 5 / p;
    return p * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
}

static int cmp_pt(const void *a, const void *b) {
    const pt *u = a, *v = b;
    return u->x < v->x ? -1 : u->x > v->x;
}

static void marker(FILE *f, double x, double y, const char *shape, const char *fill, int r) {
    if (!strcmp(shape, "square"))
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                   "stroke=\"#000\"/>", x - r, y - r, 2 * r, 2 * r, fill);
    else if (!strcmp(shape, "diamond"))
        fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" "
                   "stroke=\"#000\"/>", x, y - r - 1, x + r + 1, y, x, y + r + 1, x - r - 1, y, fill);
    else if (!strcmp(shape, "star"))
        fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f "
                   "%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" stroke=\"#000\"/>",
                x, y - 2 * r, x + .6 * r, y - .7 * r, x + 2 * r, y - .6 * r, x + .9 * r, y + .4 * r,
                x + 1.3 * r, y + 1.9 * r, x, y + 1.1 * r, x - 1.3 * r, y + 1.9 * r, x - .9 * r,
                y + .4 * r, x - 2 * r, y - .6 * r, x - .6 * r, y - .7 * r, fill);
    else
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" stroke=\"#555\"/>", x, y,
                r, fill);
}

int protect_svg_write(const precis_protection *p, const char *model, const char *path) {
    int n = precis_protect_num_candidates(p);
    precis_budget b;
    double fp32v;
    precis_protect_budget(p, 0, &b, &fp32v);
    bool higher = b.kind == PRECIS_BUDGET_MIN;
    pt *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) return -1;
    lo_x = INFINITY, hi_x = -INFINITY, lo_y = b.threshold, hi_y = b.threshold;
    for (int i = 0; i < n; i++) {
        precis_protect_candidate c;
        precis_protect_candidate_get(p, i, &c);
        v[i] = (pt){c.latency_ms, protect_value(&b, &c), i};
        if (isfinite(v[i].x)) lo_x = fmin(lo_x, v[i].x), hi_x = fmax(hi_x, v[i].x);
        if (isfinite(v[i].y)) lo_y = fmin(lo_y, v[i].y), hi_y = fmax(hi_y, v[i].y);
    }
    if (!isfinite(lo_x)) lo_x = 0, hi_x = 1;
    double sx = hi_x - lo_x > 1e-9 ? hi_x - lo_x : fmax(hi_x, 1e-3);
    lo_x -= 0.08 * sx, hi_x += 0.08 * sx;
    if (lo_x < 0) lo_x = 0;
    double sy = hi_y - lo_y > 1e-12 ? hi_y - lo_y : fmax(fabs(hi_y) * 1e-3, 1e-6);
    lo_y -= 0.08 * sy, hi_y += 0.12 * sy;
    FILE *f = fopen(path, "w");
    if (!f) {
        free(v);
        return -1;
    }
    const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
               "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Automatic "
               "protection: ", L);
    xml_text(f, base, 50);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" fill=\"#444\">%s (%s is better) against "
               "latency (median, first eval batch) for every verified set</text>\n",
            L, protect_label(p, &b), higher ? "higher" : "lower");
    /* axes and ticks */
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
            L, H - B, W - R, H - B, L, T, L, H - B);
    double st = nice_step(hi_x - lo_x);
    for (double t = ceil(lo_x / st) * st; t <= hi_x; t += st)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/><text "
                   "x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                px(t), H - B, px(t), H - B + 4, px(t), H - B + 16, t);
    st = nice_step(hi_y - lo_y);
    for (double t = ceil(lo_y / st) * st; t <= hi_y; t += st)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/><text "
                   "x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.6g</text>\n",
                L - 4, py(t), L, py(t), L - 6, py(t) + 4, fabs(t) < st * 1e-9 ? 0 : t);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">latency ms</text>\n"
               "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">",
            (L + W - R) / 2, H - 18, (T + H - B) / 2, (T + H - B) / 2);
    xml_text(f, protect_label(p, &b), 40);
    fputs("</text>\n", f);
    /* the budget */
    fprintf(f, "<line class=\"budget\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
               "stroke=\"#d62728\" stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%.1f\" "
               "fill=\"#d62728\">budget %s %.6g</text>\n",
            L, py(b.threshold), W - R, py(b.threshold), W - R + 6, py(b.threshold) + 4,
            higher ? "&gt;=" : "&lt;=", b.threshold);
    /* the Pareto front: sets no other set beats on both axes */
    qsort(v, (size_t)n, sizeof *v, cmp_pt);
    fputs("<polyline class=\"pareto\" fill=\"none\" stroke=\"#999\" points=\"", f);
    double best = higher ? -INFINITY : INFINITY;
    for (int i = 0; i < n; i++) {
        if (isnan(v[i].y)) continue;
        if (higher ? v[i].y > best : v[i].y < best) {
            best = v[i].y;
            fprintf(f, "%.1f,%.1f ", px(v[i].x), py(v[i].y));
        }
    }
    fputs("\"/>\n", f);
    const precis_sens *s = precis_protect_sens(p);
    static const struct { int which; const char *shape, *fill, *name; } roles[] = {
        {PRECIS_PROTECT_INT8, "square", "#000", "all-int8"},
        {PRECIS_PROTECT_FP32, "square", "#fff", "all-fp32"},
        {PRECIS_PROTECT_OPTYPE, "diamond", "#ff7f0e", "op-type baseline"},
        {PRECIS_PROTECT_BLOCK, "diamond", "#1f77b4", "contiguous block baseline"},
        {PRECIS_PROTECT_CHOSEN, "star", "#2ca02c", "chosen (auto)"}};
    for (int i = 0; i < n; i++) {
        precis_protect_candidate c;
        precis_protect_candidate_get(p, v[i].i, &c);
        int role = -1;
        for (int r = 0; r < 5; r++)
            if (precis_protect_pick(p, roles[r].which) == v[i].i) role = r;
        fprintf(f, "<g class=\"%s\"><title>%s: %d layers", role >= 0 ? "role" : "candidate",
                role >= 0 ? roles[role].name : c.label, c.num_layers);
        for (int k = 0; k < c.num_layers && k < 16 && strcmp(c.label, "all-fp32"); k++) {
            precis_sens_layer l;
            precis_sens_layer_get(s, c.layers[k], &l);
            fputs(k ? ", " : " (", f);
            xml_text(f, l.name, 60);
            if (k == c.num_layers - 1 || k == 15) fputs(c.num_layers > 16 ? ", ...)" : ")", f);
        }
        fputs("\n", f);
        xml_text(f, protect_label(p, &b), 40);
        fprintf(f, " %.6g, %.3f ms</title>", v[i].y, v[i].x);
        if (role < 0) marker(f, px(v[i].x), py(v[i].y), "circle", c.meets ? "#9ecae1" : "#ddd", 4);
        fputs("</g>\n", f);
    }
    for (int r = 0; r < 5; r++) { /* on top, the chosen set last */
        int i = precis_protect_pick(p, roles[r].which);
        precis_protect_candidate c;
        if (i < 0 || precis_protect_candidate_get(p, i, &c)) continue;
        double y = protect_value(&b, &c);
        if (isnan(y)) continue;
        marker(f, px(c.latency_ms), py(isfinite(y) ? y : hi_y), roles[r].shape, roles[r].fill,
               r == 4 ? 6 : 5);
        fputs("\n", f);
        int ly = T + 14 + 18 * r;
        marker(f, W - R + 14, ly - 4, roles[r].shape, roles[r].fill, r == 4 ? 5 : 4);
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s (%d)</text>\n", W - R + 26, ly, roles[r].name,
                c.num_layers);
    }
    int ly = T + 14 + 18 * 5;
    marker(f, W - R + 14, ly - 4, "circle", "#9ecae1", 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\">other set, meets</text>\n", W - R + 26, ly);
    marker(f, W - R + 14, ly + 14, "circle", "#ddd", 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\">other set, misses</text>\n", W - R + 26, ly + 18);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#999\">grey line: Pareto front</text>\n",
            W - R + 8, ly + 36);
    fputs("</svg>\n", f);
    free(v);
    return fclose(f) == 0 ? 0 : -1;
}
