/* Pieces of precis_sensitivity (sens.c) that automatic protection (protect.c)
 * reuses: the option checks, the temporary calibration cache, the analysis
 * over an eval set opened once, and the rule selecting exactly one node. */
#ifndef PR_SENS_RUN_H
#define PR_SENS_RUN_H

#include <stddef.h>

#include "sens/sens_eval.h"

/* The checks of precis_sensitivity (int8, cpu, eval and calibration data
 * given, eval data exists); `what` names the caller in the message. */
precis_status pr_sens_check(precis_ctx *ctx, const precis_build_options *o,
                            const char *eval_data, const char *what);

/* A fresh temporary folder `dir` and the cache path `path` inside it. */
precis_status pr_sens_tmp_cache(char *dir, size_t dir_cap, char *path, size_t path_cap,
                                pr_err *err);

/* The analysis over ev (opened by the caller, left open: its reference
 * outputs stay for more candidates), every build reading `cache`. */
precis_status pr_sens_analyse(precis_ctx *ctx, const char *onnx_path,
                              const precis_build_options *o, pr_sens_eval *ev, const char *cache,
                              precis_sens **out);

/* "SEL:TYPE" selecting exactly the node `name` (malloc'd; NULL: out of memory). */
char *pr_sens_exact_rule(const char *name, const char *type);

#endif
