/* The report of `precis build --protect auto`: protect.json, protect.md,
 * protect.svg (accuracy vs latency of every verified set) and the
 * sensitivity report with the chosen layers marked; the summary on stdout. */
#ifndef PRECIS_PROTECT_REPORT_H
#define PRECIS_PROTECT_REPORT_H

#include <stdio.h>

#include "precis/precis.h"

/* Writes OUT/protect.{json,md,svg}, OUT/protect.rules.json (a copy of
 * rules_path) and OUT/sensitivity.*; returns the exit status (one
 * "precis: error:" line when a file cannot be written). */
int protect_report_write(const precis_protection *p, const char *model, const char *command,
                         const char *rules_path, const char *out_dir);

/* The all-fp32, all-int8, chosen and baseline sets, one line each. */
void protect_summary(const precis_protection *p, FILE *f);

/* "cosine 0.98 (want >= 0.995), top1 ..." for candidate c. */
void protect_budget_text(const precis_protection *p, const precis_protect_candidate *c, char *buf,
                         size_t cap);

int protect_chosen_size(const precis_protection *p);

/* The name to show for budget condition b (the user metric's name for "user"). */
const char *protect_label(const precis_protection *p, const precis_budget *b);

/* The value of budget condition b in candidate c. */
double protect_value(const precis_budget *b, const precis_protect_candidate *c);

/* protect_svg.c: the Pareto plot of condition 0 against latency. */
int protect_svg_write(const precis_protection *p, const char *model, const char *path);

#endif
