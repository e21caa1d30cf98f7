/* inspect PLAN --svg FILE: the plan's steps as a graph, one box per step in
 * execution order, filled by the dtype the step computes in. Boxes whose
 * original nodes asked for a precision that was not met get a thick red
 * border (the reasons in a tooltip), met requests a check mark; conversions
 * precis inserted (Cast, Reorder, Quantize: steps with no original node)
 * are small and grey. Long plans wrap into columns. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { BOX_W = 300, BOX_H = 50, INS_W = 190, INS_H = 22, GAP = 14, GUTTER = 90, MARGIN = 20,
       HEADER = 96, MAX_TIP_NODES = 24 };

typedef struct box {
    int col, x, y, w, h;
    int inserted, unmet, met;
} box;

static int utf8_len(const unsigned char *p) {
    unsigned c = *p;
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    for (int k = 1; k < len; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    return len == 2 && c < 0xC2 ? 0 : len;
}

/* Escapes characters [from, to) of s: &<>"' as entities, control bytes and
 * invalid UTF-8 as '?'. */
static void xml_chars(FILE *f, const unsigned char *p, int from, int to) {
    for (int i = 0; *p && i < to; i++) {
        int len = utf8_len(p);
        unsigned c = *p;
        if (i < from) { /* skipped */
        } else if (len == 0) {
            fputc('?', f);
        } else if (len > 1) {
            fwrite(p, 1, (size_t)len, f);
        } else if (c == '&') fputs("&amp;", f);
        else if (c == '<') fputs("&lt;", f);
        else if (c == '>') fputs("&gt;", f);
        else if (c == '"') fputs("&quot;", f);
        else if (c == '\'') fputs("&apos;", f);
        else if (c < 0x20 && c != '\n' && c != '\t') fputc('?', f);
        else fputc((int)c, f);
        p += len ? len : 1;
    }
}

/* Escaped text, at most max characters (0: all): a longer one keeps its
 * start and its end ("/encoder/lay...self/MatMul"), where names differ. */
void xml_text(FILE *f, const char *s, int max) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int n = 0;
    for (const unsigned char *q = p; *q; n++) q += utf8_len(q) ? utf8_len(q) : 1;
    if (!max || n <= max) {
        xml_chars(f, p, 0, n);
        return;
    }
    int head = (max - 3) / 2, tail = max - 3 - head;
    xml_chars(f, p, 0, head);
    fputs("...", f);
    xml_chars(f, p, n - tail, n);
}

/* Fill colour classes: 0 fp32, 1 bf16, 2 fp16, 3 int8/uint8/fp8, 4 other, 5 inserted. */
static const char *const k_fill[] = {"#9ecae1", "#c2a5cf", "#a1d99b", "#fdae6b", "#f0f0b8", "#e0e0e0"};
static const char *const k_label[] = {"fp32", "bf16", "fp16", "int8/uint8/fp8", "other dtype",
                                      "inserted conversion"};

static int dtype_class(precis_dtype t) {
    return t == PRECIS_FLOAT32 ? 0 : t == PRECIS_BFLOAT16 ? 1 : t == PRECIS_FLOAT16 ? 2
           : t == PRECIS_INT8 || t == PRECIS_UINT8 || t == PRECIS_FLOAT8E4M3FN ? 3 : 4;
}

/* Columns of about equal height, the drawing about 1.6 times wider than tall. */
static int layout(box *b, int n, int *width, int *height) {
    double total = 0;
    for (int i = 0; i < n; i++) total += (b[i].inserted ? INS_H : BOX_H) + GAP;
    int cols = (int)ceil(sqrt(1.6 * total / (BOX_W + GUTTER)));
    if (cols < 1) cols = 1;
    double limit = total / cols + BOX_H + GAP; /* slack: cols columns hold it all */
    if (limit < 600) limit = 600;
    int col = 0, y = 0, maxy = 0;
    for (int i = 0; i < n; i++) {
        int h = b[i].inserted ? INS_H : BOX_H, w = b[i].inserted ? INS_W : BOX_W;
        if (y > 0 && y + h > limit) col++, y = 0;
        b[i].col = col;
        b[i].w = w;
        b[i].h = h;
        b[i].x = MARGIN + col * (BOX_W + GUTTER) + (BOX_W - w) / 2;
        b[i].y = HEADER + y;
        y += h + GAP;
        if (y > maxy) maxy = y;
    }
    *width = 2 * MARGIN + (col + 1) * (BOX_W + GUTTER) - GUTTER;
    if (*width < 840) *width = 840;
    *height = HEADER + maxy + MARGIN;
    return col + 1;
}

static void edge(FILE *f, const box *s, const box *t, int adjacent) {
    if (s->col == t->col && adjacent) {
        fprintf(f, "<line class=\"edge\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#555\" "
                   "marker-end=\"url(#arrow)\"/>\n",
                s->x + s->w / 2, s->y + s->h, t->x + t->w / 2, t->y);
    } else if (s->col == t->col) { /* an arc in the gutter on the right */
        int x1 = s->x + s->w, y1 = s->y + s->h / 2, x2 = t->x + t->w, y2 = t->y + t->h / 2;
        int bulge = 14 + (int)(2.0 * sqrt((double)(y2 - y1)));
        int xr = MARGIN + s->col * (BOX_W + GUTTER) + BOX_W + (bulge > GUTTER - 8 ? GUTTER - 8 : bulge);
        fprintf(f, "<path class=\"edge\" d=\"M%d %d C%d %d %d %d %d %d\" fill=\"none\" stroke=\"#777\" "
                   "stroke-opacity=\"0.7\" marker-end=\"url(#arrow)\"/>\n",
                x1, y1, xr, y1, xr, y2, x2, y2);
    } else { /* into a later column: right edge to left edge */
        int x1 = s->x + s->w, y1 = s->y + s->h / 2, x2 = t->x, y2 = t->y + t->h / 2;
        fprintf(f, "<path class=\"edge\" d=\"M%d %d C%d %d %d %d %d %d\" fill=\"none\" stroke=\"#999\" "
                   "stroke-opacity=\"0.45\" marker-end=\"url(#arrow)\"/>\n",
                x1, y1, x1 + GUTTER / 2, y1, x2 - GUTTER / 2, y2, x2, y2);
    }
}

static void tooltip(FILE *f, const precis_engine *e, int i, const precis_step_info *si) {
    fprintf(f, "<title>step %d: ", i);
    xml_text(f, si->name, 0);
    fprintf(f, "\nop ");
    xml_text(f, si->op, 0);
    fprintf(f, ", %s, %s\nkernel ", dtype_short(si->compute), si->layout);
    xml_text(f, si->kernel, 0);
    if (!si->num_origins) fprintf(f, "\n(inserted by precis)");
    else fprintf(f, "\n%d original node%s:", si->num_origins, si->num_origins == 1 ? "" : "s");
    for (int k = 0; k < si->num_origins && k < MAX_TIP_NODES; k++) {
        fputs(k ? ", " : " ", f);
        xml_text(f, si->origins[k], 0);
    }
    if (si->num_origins > MAX_TIP_NODES) fputs(", ...", f);
    int nn = precis_engine_num_nodes(e);
    for (int k = 0; k < nn; k++) {
        precis_node_info ni;
        if (precis_engine_node(e, k, &ni) || ni.step != i || (!ni.req_compute && !ni.req_output))
            continue;
        fprintf(f, "\n%s ", ni.honored ? "met:" : "NOT MET:");
        xml_text(f, ni.name, 0);
        fprintf(f, " asked %s/%s, runs %s/%s", dtype_short(ni.req_compute), dtype_short(ni.req_output),
                dtype_short(ni.compute), dtype_short(ni.output));
        if (ni.reason[0]) {
            fputs(": ", f);
            xml_text(f, ni.reason, 0);
        }
    }
    fputs("</title>", f);
}

static void step_box(FILE *f, const precis_engine *e, int i, const box *b) {
    precis_step_info si;
    precis_engine_step(e, i, &si);
    int cls = b->inserted ? 5 : dtype_class(si.compute);
    fprintf(f, "<g class=\"step%s%s%s\" id=\"step%d\" data-dtype=\"%s\">", b->inserted ? " inserted" : "",
            b->unmet ? " unmet" : "", b->met ? " met" : "", i, dtype_short(si.compute));
    tooltip(f, e, i, &si);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" ", b->x, b->y, b->w,
            b->h, k_fill[cls]);
    if (b->unmet) fprintf(f, "stroke=\"#d62728\" stroke-width=\"4\"/>");
    else if (b->inserted) fprintf(f, "stroke=\"#888\" stroke-dasharray=\"3 2\"/>");
    else fprintf(f, "stroke=\"#333\"/>");
    if (b->inserted) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#444\">%d ", b->x + 6, b->y + 15, i);
        xml_text(f, si.op, 14);
        fprintf(f, " %s</text>", dtype_short(si.compute));
    } else {
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" font-weight=\"bold\">%d ", b->x + 6, b->y + 14, i);
        xml_text(f, si.name, 40 - snprintf(NULL, 0, "%d", i) - 2 * b->met);
        fprintf(f, "</text><text x=\"%d\" y=\"%d\" font-size=\"10\">", b->x + 6, b->y + 28);
        int op_len = (int)strlen(si.op) < 18 ? (int)strlen(si.op) : 18;
        xml_text(f, si.op, 18);
        fputs(" | ", f);
        xml_text(f, si.kernel, 44 - op_len);
        fprintf(f, "</text><text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#333\">%s %s, %d node%s</text>",
                b->x + 6, b->y + 42, dtype_short(si.compute), si.layout, si.num_origins,
                si.num_origins == 1 ? "" : "s");
    }
    if (b->met && !b->unmet) /* a check mark: requests met */
        fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"7\" fill=\"#2ca02c\"/><path d=\"M%d %d l3 3 l5 -6\" "
                   "stroke=\"#fff\" stroke-width=\"2\" fill=\"none\"/>",
                b->x + b->w - 10, b->y + 10, b->x + b->w - 14, b->y + 10);
    fputs("</g>\n", f);
}

static void legend(FILE *f, const char *plan_path, const precis_engine *e, int n, const int *counts,
                   int unmet, int met) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", MARGIN, MARGIN + 8);
    xml_text(f, plan_path, 0);
    fprintf(f, "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"11\">precision %s, target ", MARGIN,
            MARGIN + 26, precis_engine_precision(e));
    xml_text(f, precis_engine_target(e), 0);
    fprintf(f, ", %d steps; precision requests: %d steps met, %d NOT met (hover a box for "
               "details)</text>\n", n, met, unmet);
    int x = MARGIN;
    for (int c = 0; c < 6; c++) {
        char label[64];
        int len = snprintf(label, sizeof label, "%s (%d)", k_label[c], counts[c]);
        fprintf(f, "<g class=\"legend\"><rect x=\"%d\" y=\"%d\" width=\"16\" height=\"12\" fill=\"%s\" "
                   "stroke=\"#333\"/><text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text></g>\n",
                x, MARGIN + 36, k_fill[c], x + 20, MARGIN + 46, label);
        x += 36 + 7 * len;
    }
    int y = MARGIN + 56;
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"16\" height=\"12\" fill=\"#fff\" stroke=\"#d62728\" "
               "stroke-width=\"3\"/><text x=\"%d\" y=\"%d\" font-size=\"11\">request not met</text>\n"
               "<circle cx=\"%d\" cy=\"%d\" r=\"7\" fill=\"#2ca02c\"/><text x=\"%d\" y=\"%d\" "
               "font-size=\"11\">requests met</text>\n",
            MARGIN, y, MARGIN + 20, y + 10, MARGIN + 150, y + 6, MARGIN + 162, y + 10);
}

static void draw(FILE *f, const char *plan_path, const precis_engine *e, box *b, int n) {
    int counts[6] = {0}, unmet = 0, met = 0, width, height, cap = 16;
    for (int i = 0; i < n; i++) {
        precis_step_info si;
        precis_engine_step(e, i, &si);
        counts[b[i].inserted ? 5 : dtype_class(si.compute)]++;
        unmet += b[i].unmet;
        met += b[i].met && !b[i].unmet;
    }
    layout(b, n, &width, &height);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\">\n"
               "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
               "markerHeight=\"6\" orient=\"auto\"><path d=\"M0 0 L10 5 L0 10 z\" fill=\"#555\"/>"
               "</marker></defs>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            width, height, width, height);
    legend(f, plan_path, e, n, counts, unmet, met);
    int *prod = malloc((size_t)cap * sizeof *prod);
    for (int i = 0; prod && i < n; i++) {
        int k = precis_engine_step_inputs(e, i, prod, cap);
        if (k > cap) {
            int *p2 = realloc(prod, (size_t)k * sizeof *p2);
            if (!p2) break;
            prod = p2;
            cap = k;
            k = precis_engine_step_inputs(e, i, prod, cap);
        }
        for (int j = 0; j < k; j++) {
            int s = prod[j], dup = 0;
            for (int q = 0; q < j; q++) dup |= prod[q] == s;
            if (s >= 0 && !dup) edge(f, &b[s], &b[i], s == i - 1);
        }
    }
    free(prod);
    for (int i = 0; i < n; i++) step_box(f, e, i, &b[i]);
    fputs("</svg>\n", f);
}

int inspect_svg(const precis_engine *e, const char *plan_path, const char *out_path) {
    int n = precis_engine_num_steps(e), nn = precis_engine_num_nodes(e);
    box *b = calloc((size_t)n + 1, sizeof *b);
    if (!b) {
        fprintf(stderr, "precis: error: out of memory\n");
        return PRECIS_ERR_OOM;
    }
    for (int i = 0; i < n; i++) {
        precis_step_info si;
        precis_engine_step(e, i, &si);
        b[i].inserted = si.num_origins == 0;
    }
    for (int k = 0; k < nn; k++) {
        precis_node_info ni;
        if (precis_engine_node(e, k, &ni) || ni.step < 0 || ni.step >= n) continue;
        if (!ni.honored) b[ni.step].unmet = 1;
        else if (ni.req_compute || ni.req_output) b[ni.step].met = 1;
    }
    /* drawn in memory first: an unwritable path leaves no partial file */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) {
        free(b);
        fprintf(stderr, "precis: error: out of memory\n");
        return PRECIS_ERR_OOM;
    }
    draw(mem, plan_path, e, b, n);
    int unmet = 0;
    for (int i = 0; i < n; i++) unmet += b[i].unmet;
    free(b);
    int bad = fclose(mem) != 0;
    if (bad) {
        free(buf);
        fprintf(stderr, "precis: error: out of memory drawing '%s'\n", out_path);
        return PRECIS_ERR_OOM;
    }
    FILE *f = fopen(out_path, "wb");
    int err = f ? 0 : errno;
    if (f) {
        if (fwrite(buf, 1, len, f) != len) err = errno ? errno : EIO;
        if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
        if (err) remove(out_path);
    }
    free(buf);
    if (err) {
        fprintf(stderr, "precis: error: cannot write '%s': %s\n", out_path, strerror(err));
        return PRECIS_ERR_IO;
    }
    printf("wrote %s: %d steps, %d with a precision request not met\n", out_path, n, unmet);
    return 0;
}
