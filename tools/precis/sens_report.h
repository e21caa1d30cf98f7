/* The report of `precis sensitivity`: ranking, JSON, Markdown, SVG and the
 * top-10 summary on stdout. */
#ifndef PRECIS_SENS_REPORT_H
#define PRECIS_SENS_REPORT_H

#include "precis/precis.h"

typedef enum { SM_SQNR, SM_COSINE, SM_REL_L2, SM_KL, SM_TOP1 } sens_metric;

/* 0 and *m set for "sqnr", "cosine", "rel_l2", "kl", "top1"; -1 otherwise. */
int sens_metric_parse(const char *name, sens_metric *m);

/* Writes OUT/sensitivity.{json,md,svg} and prints the top 10; returns the
 * exit status (one "precis: error:" line when a file cannot be written).
 * mark (NULL: none): per layer, 1 for the layers automatic protection chose,
 * marked in the chart; with a mark nothing is printed. */
int sens_report_write(const precis_sens *s, const char *model, const char *command,
                      sens_metric metric, const char *out_dir, const unsigned char *mark);

/* sens_svg.c: the ranked bar chart. order: layer indices, most sensitive first. */
int sens_svg_write(const precis_sens *s, const char *model, sens_metric metric,
                   const int *order, const unsigned char *mark, const char *path);

/* The value of metric m in x, and whether a lower value is worse. */
double sens_metric_value(const precis_sens_metrics *x, sens_metric m);
int sens_metric_lower_worse(sens_metric m);
extern const char *const k_sens_metric_names[];

#endif
