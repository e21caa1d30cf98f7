/* The precis CLI: commands and the helpers they share. Built only on the
 * public header <precis/precis.h>. */
#ifndef PRECIS_CLI_H
#define PRECIS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "precis/precis.h"

#define MAX_IO 256

extern const char k_exit_codes[];

/* Prints "precis: error: <last error>" and returns st (the exit status). */
int fail(precis_ctx *ctx, precis_status st);
/* Prints the message and the usage to stderr; returns 1. */
int usage_error(void (*usage)(FILE *), const char *fmt, const char *arg);
double now_ms(void);
/* "[1,3,?,W]" */
void shape_str(int rank, const int64_t *dims, const char *const *names, char *buf, size_t cap);
void safe_name(const char *in, char *out, size_t cap);
int mkdir_p(const char *dir);
/* prefix and argv as one shell-quoted string, for reports */
void command_line(const char *prefix, int argc, char **argv, char *buf, size_t cap);
void json_str(const char *s);
void json_fstr(FILE *f, const char *s);
void json_value_info(const precis_value_info *vi);
/* "fp32", "fp16", "bf16", "int8", "uint8", "int32", else precis_dtype_name; "-" for none */
const char *dtype_short(precis_dtype t);

/* The options of the engine commands (cmd_engine.c). */
typedef struct engine_args {
    const char *model, *precision, *backend, *shapes;
    int threads, verbose, no_optimize;
    /* int8 calibration */
    const char *calib_data, *calib_preprocess, *calibrator, *calib_cache, *timing_cache;
    double percentile;
    double smooth; /* --smooth: alpha, -1 off, 0 default */
    int calib_batches;
    /* precision rules */
    const char *layer_prec[256], *layer_out[256], *rules;
    int n_layer_prec, n_layer_out, strict;
} engine_args;
/* Consumes one engine option at argv[*i]; 1 if taken, 0 if not ours, -1 on
 * a usage error (message printed). */
int engine_opt(engine_args *a, int argc, char **argv, int *i, void (*usage)(FILE *));
precis_build_options engine_build_opts(const engine_args *a);

int cmd_build(int argc, char **argv);
/* precis build --protect auto (cmd_protect.c) */
int cmd_build_protect(int argc, char **argv);
void usage_protect(FILE *f);
int cmd_export_qdq(int argc, char **argv);
void usage_export_qdq(FILE *f);
int cmd_bench(int argc, char **argv);
void usage_build(FILE *f);
void usage_bench(FILE *f);
/* inspect of a .plan file (main.c's cmd_inspect hands over); profile: a
 * bench --profile file to show time shares from (NULL: PLAN.profile.json
 * when it exists and matches the plan); svg: draw the plan into this file
 * instead (inspect_svg) */
int inspect_plan(const char *path, int json, const char *profile, const char *svg);

/* inspect_nodes.c: the per-node precision report of a plan */
void inspect_nodes_text(const precis_engine *e);
void inspect_nodes_json(const precis_engine *e); /* ",\n \"nodes\": [...]" */

/* inspect_svg.c: the plan's steps as an SVG graph coloured by the dtype each
 * computes in, unmet precision requests outlined red; returns the exit status
 * (one "precis: error:" line and no file when it cannot write out_path) */
int inspect_svg(const precis_engine *e, const char *plan_path, const char *out_path);
/* XML-escaped text, at most max characters (0: all; a longer one keeps its
 * start and end around "..."); invalid UTF-8 and control bytes become '?'. */
void xml_text(FILE *f, const char *s, int max);

/* precis sensitivity (cmd_sens.c) */
int cmd_sensitivity(int argc, char **argv);
void usage_sensitivity(FILE *f);

/* profile_file.c: the per-step profile bench --profile writes beside a plan */
int plan_checksum(const char *plan_path, uint32_t *crc);
void profile_default_path(const char *plan_path, char *out, size_t cap);
int profile_save(const char *path, const char *plan_path, const precis_engine *e,
                 const precis_context *c, const char *inputs_desc);
/* 0: ms[n_steps] filled and info describes the profile; -1 (-2: no such file):
 * why says why not */
int profile_load(const char *path, const char *plan_path, int n_steps, double *ms,
                 char *info, size_t info_cap, char *why, size_t why_cap);
/* does the file start with the plan magic? */
int is_plan_file(const char *path);

#endif
