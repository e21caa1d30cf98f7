/* precis build / bench / inspect PLAN: the engine commands. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "ort_bench.h"

void usage_build(FILE *f) {
    fprintf(f,
            "usage: precis build MODEL.onnx -o OUT.plan [--precision fp32|bf16|fp16|int8|fp8]\n"
            "                    [--threads N] [--shapes NAME:MIN/OPT/MAX[,...]]\n"
            "                    [--device cpu|cuda] [--backend cpu|cuda|ref] [--no-optimize]\n"
            "                    [--verbose]\n"
            "                    [--calib-data DIR|LIST] [--calib-preprocess SPEC]\n"
            "                    [--calibrator percentile|entropy|minmax|mse] [--percentile P]\n"
            "                    [--calib-cache FILE] [--calib-batches N] [--smooth off|ALPHA]\n"
            "                    [--layer-precision SEL:TYPE]... [--layer-output-type SEL:TYPE]...\n"
            "                    [--rules FILE.json] [--strict] [--timing-cache FILE]\n"
            "       precis build MODEL.onnx --precision int8 --calib-data D --eval-data E\n"
            "                    --protect auto BUDGET... -o OUT.plan  (precis build --protect\n"
            "                    --help: automatic protection)\n\n"
            "Optimizes MODEL (constant folding, BatchNorm folding, Conv/MatMul fusion with\n"
            "bias, activation and residual add, LayerNorm/GELU recognition), chooses the\n"
            "precision and layout of every tensor and a CPU kernel for every node, and\n"
            "writes the engine plan. --device cuda builds for the NVIDIA GPU of this machine\n"
            "(cuBLASLt, cuDNN and precis's kernels; fp32, fp16, bf16, int8, fp8); nodes with no GPU\n"
            "kernel run on the host (\"ref(host)\" in inspect). --timing-cache FILE keeps the\n"
            "GPU algorithm choices timed during the build and reuses them in later builds on\n"
            "the same GPU and CUDA/cuBLASLt/cuDNN versions (another GPU or version: refused). --shapes gives the range of dynamic input dims\n"
            "(dims as 1x3x224x224; one shape fixes them); runs outside it are refused.\n"
            "--threads is the thread count the plan runs with (default: all cores).\n\n"
            "int8 calibrates on --calib-data: a folder of .npy files (one subfolder per\n"
            "input for several inputs), a list file, or an image folder with\n"
            "--calib-preprocess 'resize=256,crop=224,mean=0.485:0.456:0.406,std=...'.\n"
            "--calib-cache keeps the statistics: an existing cache that matches the model\n"
            "(and data) is used without running the data; another calibrator re-derives\n"
            "the scales from it in seconds. Inputs of MatMuls with constant weights whose\n"
            "per-channel ranges spread over 4x their median (transformers' LayerNorm and\n"
            "GELU outputs) are smoothed: per-channel factors max|x|^a / max|w|^(1-a) move\n"
            "the outlier channels' range into the weights (SmoothQuant; --smooth ALPHA sets\n"
            "a, default 0.8; --smooth off).\n"
            "fp8 (--device cuda, Hopper): calibrated the same way (default calibrator minmax),\n"
            "the MatMuls with constant weights get FLOAT8E4M3FN activations and weights, one\n"
            "scale each (amax / 448), on cuBLASLt's FP8 GEMMs; the rest runs fp16.\n\n"
            "Per-layer precision: --layer-precision SEL:TYPE sets the type nodes compute in,\n"
            "--layer-output-type SEL:TYPE the type their outputs are stored and passed on\n"
            "in (TYPE fp32, fp16, bf16; int8 / fp8 in those builds). SEL is an exact node name,\n"
            "a shell glob over names ('LayerNorm*', '/encoder/layer.*/attention/*'),\n"
            "'re:REGEX' or 'op:OPTYPE' ('op:Softmax'). --rules FILE.json gives the same as\n"
            "{\"rules\": [{\"select\": \"op:Softmax\", \"precision\": \"fp32\"}]} (applied first).\n"
            "Later rules win. Fusion never merges nodes whose requests differ. A request\n"
            "that cannot be met falls back with a warning (--strict: the build fails);\n"
            "`precis inspect PLAN` shows requested and actual per node.\n\n%s",
            k_exit_codes);
}

void usage_bench(FILE *f) {
    fprintf(f,
            "usage: precis bench MODEL.onnx|PLAN [--precision P] [--threads N] [--shapes SPEC]\n"
            "                    [--shape NAME=1x3x224x224]... [--input NAME=FILE.npy]...\n"
            "                    [--warmup N] [--iterations N] [--profile [--profile-out F]]\n"
            "                    [--json]\n"
            "                    [--vs-ort [MODEL.onnx]]\n\n"
            "Times one execution context: latency p50/p90/p99 over the iterations after\n"
            "the warm-up, throughput (batch items per second, batch = dim 0 of the first\n"
            "input), the activation arena and peak RSS. Inputs are random unless given;\n"
            "--shape sets the dims of a dynamic input. --profile adds the time share of\n"
            "every step and saves it as JSON (for a plan: PLAN.profile.json, which\n"
            "`precis inspect PLAN` then shows; --profile-out sets the file). --vs-ort runs ONNX Runtime (python3 onnxruntime) on the same\n"
            "model, inputs and thread count in the same run and prints the latency ratio.\n\n%s",
            k_exit_codes);
}

int is_plan_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char m[8] = {0};
    size_t n = fread(m, 1, 8, f);
    fclose(f);
    return n == 8 && memcmp(m, "PRECISPL", 8) == 0;
}


precis_build_options engine_build_opts(const engine_args *a) {
    precis_build_options o = {0};
    o.precision = a->precision;
    o.backend = a->backend;
    o.num_threads = a->threads;
    o.shapes = a->shapes;
    o.verbose = a->verbose;
    o.no_optimize = a->no_optimize;
    o.calib_data = a->calib_data;
    o.calib_preprocess = a->calib_preprocess;
    o.calibrator = a->calibrator;
    o.calib_cache = a->calib_cache;
    o.timing_cache = a->timing_cache;
    o.percentile = a->percentile;
    o.smooth = a->smooth;
    o.calib_batches = a->calib_batches;
    o.progress = isatty(2);
    o.layer_precision = a->layer_prec;
    o.n_layer_precision = a->n_layer_prec;
    o.layer_output_type = a->layer_out;
    o.n_layer_output_type = a->n_layer_out;
    o.rules_file = a->rules;
    o.strict = a->strict;
    return o;
}

/* Consumes one engine option at argv[*i]; 1 if taken, 0 if not ours, -1 on
 * a usage error (message printed). */
int engine_opt(engine_args *a, int argc, char **argv, int *i, void (*usage)(FILE *)) {
    const char *o = argv[*i];
    int more = *i + 1 < argc;
    const char **dst = !strcmp(o, "--precision") ? &a->precision
                       : !strcmp(o, "--backend") ? &a->backend
                       : !strcmp(o, "--device") ? &a->backend
                       : !strcmp(o, "--shapes")  ? &a->shapes
                       : !strcmp(o, "--calib-data") ? &a->calib_data
                       : !strcmp(o, "--calib-preprocess") ? &a->calib_preprocess
                       : !strcmp(o, "--calibrator") ? &a->calibrator
                       : !strcmp(o, "--calib-cache") ? &a->calib_cache
                       : !strcmp(o, "--timing-cache") ? &a->timing_cache
                       : !strcmp(o, "--rules") ? &a->rules
                                                 : NULL;
    if (dst) {
        if (!more) return usage_error(usage, "%s needs a value", o), -1;
        *dst = argv[++*i];
        return 1;
    }
    if (!strcmp(o, "--threads")) {
        if (!more) return usage_error(usage, "%s needs a number", o), -1;
        char *end;
        long v = strtol(argv[++*i], &end, 10);
        if (*end || v < 1 || v > 1024) return usage_error(usage, "bad --threads value '%s'", argv[*i]), -1;
        a->threads = (int)v;
        return 1;
    }
    if (!strcmp(o, "--percentile") || !strcmp(o, "--calib-batches")) {
        if (!more) return usage_error(usage, "%s needs a number", o), -1;
        char *end;
        double v = strtod(argv[++*i], &end);
        if (*end || !(v > 0) || (o[2] == 'p' && v > 100) || (o[2] == 'c' && v != floor(v)))
            return usage_error(usage, "bad value '%s'", argv[*i]), -1;
        if (o[2] == 'p') a->percentile = v;
        else a->calib_batches = v > 1e9 ? 1000000000 : (int)v;
        return 1;
    }
    if (!strcmp(o, "--smooth")) {
        if (!more) return usage_error(usage, "%s needs 'off' or an alpha in (0, 1)", o), -1;
        char *end;
        const char *v = argv[++*i];
        double al = strcmp(v, "off") ? strtod(v, &end) : -1;
        if (strcmp(v, "off") && (*end || !(al > 0 && al < 1)))
            return usage_error(usage, "bad --smooth value '%s' (off or an alpha in (0, 1))", v), -1;
        a->smooth = al;
        return 1;
    }
    if (!strcmp(o, "--layer-precision") || !strcmp(o, "--layer-output-type")) {
        bool lp = o[8] == 'p';
        if (!more) return usage_error(usage, "%s needs SELECTOR:TYPE", o), -1;
        int *n = lp ? &a->n_layer_prec : &a->n_layer_out;
        if (*n >= 256) return usage_error(usage, "more than 256 %s rules: use --rules FILE", o), -1;
        (lp ? a->layer_prec : a->layer_out)[(*n)++] = argv[++*i];
        return 1;
    }
    if (!strcmp(o, "--strict")) return a->strict = 1, 1;
    if (!strcmp(o, "--verbose") || !strcmp(o, "-v")) return a->verbose++, 1;
    if (!strcmp(o, "--no-optimize")) return a->no_optimize = 1, 1;
    return 0;
}

/* Loads a plan or builds the ONNX model in memory. */
static precis_status open_engine(precis_ctx *ctx, const engine_args *a, precis_engine **e) {
    if (is_plan_file(a->model)) {
        if (a->precision || a->shapes || a->backend)
            fprintf(stderr, "precis: note: %s is a plan; --precision/--shapes/--backend are "
                            "fixed at build time and ignored\n", a->model);
        return precis_engine_load(ctx, a->model, a->threads, e);
    }
    precis_build_options o = engine_build_opts(a);
    return precis_build(ctx, a->model, &o, e);
}

void usage_export_qdq(FILE *f) {
    fprintf(f,
            "usage: precis export-qdq MODEL.onnx -o OUT.onnx --calib-data DIR|LIST\n"
            "                    [--calib-preprocess SPEC] [--calibrator C] [--percentile P]\n"
            "                    [--calib-cache FILE] [--calib-batches N] [--shapes SPEC]\n"
            "                    [--smooth off|ALPHA] [--threads N] [--verbose]\n"
            "                    [--precision int8|fp8]\n\n"
            "Calibrates MODEL exactly as `precis build --precision int8` (or fp8) does and writes the\n"
            "result as standard QDQ ONNX (QuantizeLinear/DequantizeLinear around the int8\n"
            "nodes, int8 weights per output channel) that ONNX Runtime and other runtimes\n"
            "load. The graph is precis's optimized one (BatchNorm folded, fusions written\n"
            "back as standard ops). fp8: the linear layers' activations and weights as\n"
            "FLOAT8E4M3FN with one scale each (QuantizeLinear/DequantizeLinear of opset 19).\n\n%s",
            k_exit_codes);
}

/* After a build: how many nodes the precision rules hit, and a warning for
 * each request not met (the first 10). */
static void report_requests(const precis_engine *e) {
    int n = precis_engine_num_nodes(e), asked = 0, unmet = 0;
    for (int i = 0; i < n; i++) {
        precis_node_info ni;
        precis_engine_node(e, i, &ni);
        asked += ni.req_compute || ni.req_output;
        if (ni.honored) continue;
        if (unmet++ < 10) {
            char what[128];
            if (ni.req_compute && ni.compute != ni.req_compute &&
                !(ni.req_compute == PRECIS_INT8 && ni.compute == PRECIS_UINT8))
                snprintf(what, sizeof what, "compute %s, runs %s", dtype_short(ni.req_compute),
                         ni.step < 0 ? "nothing" : dtype_short(ni.compute));
            else
                snprintf(what, sizeof what, "output %s, passes on %s", dtype_short(ni.req_output),
                         ni.step < 0 ? "nothing" : dtype_short(ni.output));
            fprintf(stderr, "precis: warning: node '%s' (%s): requested %s: %s\n", ni.name, ni.op,
                    what, ni.reason);
        }
    }
    if (unmet > 10) fprintf(stderr, "precis: warning: ... and %d more (see precis inspect)\n", unmet - 10);
    if (asked)
        printf("precision rules: %d nodes with requests, %d met, %d not met\n", asked,
               asked - unmet, unmet);
}

static int build_or_export(int argc, char **argv, bool qdq) {
    void (*usage)(FILE *) = qdq ? usage_export_qdq : usage_build;
    for (int i = 0; !qdq && i < argc; i++)
        if (!strcmp(argv[i], "--protect")) return cmd_build_protect(argc, argv);
    engine_args a = {0};
    const char *out = NULL;
    if (qdq) a.precision = "int8";
    for (int i = 0; i < argc; i++) {
        int r = engine_opt(&a, argc, argv, &i, usage);
        if (r < 0) return 1;
        if (r) continue;
        const char *o = argv[i];
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            if (i + 1 >= argc) return usage_error(usage, "%s needs a file", o);
            out = argv[++i];
        } else if (o[0] == '-') {
            return usage_error(usage, "unknown option '%s'", o);
        } else if (!a.model) {
            a.model = o;
        } else {
            return usage_error(usage, "unexpected argument '%s'", o);
        }
    }
    if (!a.model) return usage_error(usage, "missing MODEL.onnx%s", "");
    if (!out) return usage_error(usage, "missing -o %s", qdq ? "OUT.onnx" : "OUT.plan");
    if (qdq && a.precision && strcmp(a.precision, "int8") && strcmp(a.precision, "fp8"))
        return usage_error(usage, "export-qdq writes int8 or fp8 (not --precision %s)",
                           a.precision);
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_engine *e = NULL;
    double t0 = now_ms();
    precis_build_options bo = engine_build_opts(&a);
    if (qdq) bo.qdq_path = out;
    /* fp8 QDQ: the build behind the export needs no cpu fp8 kernels (ref runs QDQ) */
    if (qdq && !a.backend && !strcmp(bo.precision, "fp8")) bo.backend = "ref";
    precis_status st = precis_build(ctx, a.model, &bo, &e);
    double t1 = now_ms();
    if (!st && !qdq) st = precis_engine_save(ctx, e, out);
    int rc = 0;
    if (st) {
        rc = fail(ctx, st);
    } else {
        int n = precis_engine_num_steps(e), ref = 0, host = 0, orig = 0;
        char host_ops[256] = "";
        for (int i = 0; i < n; i++) {
            precis_step_info si;
            precis_engine_step(e, i, &si);
            ref += !strcmp(si.kernel, "ref") || !strcmp(si.kernel, "ref(host)");
            if (!strcmp(si.kernel, "ref(host)")) {
                size_t l = strlen(host_ops);
                if (host++ < 8 && l + strlen(si.op) + 3 < sizeof host_ops)
                    snprintf(host_ops + l, sizeof host_ops - l, "%s%s", l ? ", " : "", si.op);
            }
            orig += si.num_origins;
        }
        if (host)
            fprintf(stderr,
                    "precis: warning: %d step%s run%s on the host with device copies around "
                    "them (no GPU kernel): %s%s\n",
                    host, host == 1 ? "" : "s", host == 1 ? "s" : "", host_ops,
                    host > 8 ? ", ..." : "");
        printf("%s %s -> %s in %.0f ms: precision %s, %d threads, target %s\n",
               qdq ? "exported" : "built", a.model, out,
               t1 - t0, precis_engine_precision(e), precis_engine_num_threads(e),
               precis_engine_target(e));
        printf("%d steps for %d original nodes; %d steps on the ref fallback\n", n, orig, ref);
        report_requests(e);
    }
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
    return rc;
}

int cmd_build(int argc, char **argv) { return build_or_export(argc, argv, false); }
int cmd_export_qdq(int argc, char **argv) { return build_or_export(argc, argv, true); }

/* ------------------------------------------------------------------ bench */

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double pct(const double *sorted, int n, double p) {
    if (n <= 0) return 0;
    double r = p / 100.0 * (n - 1);
    int lo = (int)floor(r), hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (r - lo);
}

static int parse_dims(const char *s, int64_t *d) {
    int r = 0;
    while (*s) {
        char *q;
        long long v = strtoll(s, &q, 10);
        if (q == s || v < 0 || r >= PRECIS_MAX_RANK) return -1;
        d[r++] = v;
        s = q;
        if (*s == 'x' || *s == 'X') s++;
        else if (*s) return -1;
    }
    return r;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Random contents: floats in [0, 1); integer inputs named like a mask get 1,
 * like token types 0, others small ids in [0, 100). */
static void fill_random(precis_tensor *t, const char *name) {
    int64_t n = precis_tensor_numel(t);
    void *p = precis_tensor_data(t);
    int mask = strstr(name, "mask") != NULL, zero = strstr(name, "type") != NULL;
    for (int64_t i = 0; i < n; i++) {
        switch (precis_tensor_dtype(t)) {
        case PRECIS_FLOAT32: ((float *)p)[i] = (float)rnd(); break;
        case PRECIS_INT64: ((int64_t *)p)[i] = zero ? 0 : mask ? 1 : (int64_t)(rnd() * 100); break;
        case PRECIS_INT32: ((int32_t *)p)[i] = zero ? 0 : mask ? 1 : (int32_t)(rnd() * 100); break;
        default: break;
        }
    }
}

/* bench --profile: the profile as JSON beside a plan (or to --profile-out),
 * for inspect. A file that cannot be written is a note, not a failure. */
static void save_profile(const char *model, const char *out, const precis_engine *e,
                         const precis_context *c, int nin, const precis_tensor *const *inputs,
                         const char *const *names, int json) {
    int plan = is_plan_file(model);
    if (!out && !plan) return;
    char path[4200], desc[1024];
    if (out) snprintf(path, sizeof path, "%s", out);
    else profile_default_path(model, path, sizeof path);
    size_t n = 0;
    desc[0] = 0;
    for (int k = 0; k < nin && n < sizeof desc; k++) {
        n += (size_t)snprintf(desc + n, sizeof desc - n, "%s%s=", k ? "," : "", names[k]);
        for (int d = 0; d < precis_tensor_rank(inputs[k]) && n < sizeof desc; d++)
            n += (size_t)snprintf(desc + n, sizeof desc - n, "%s%lld", d ? "x" : "",
                                  (long long)precis_tensor_dims(inputs[k])[d]);
    }
    if (profile_save(path, plan ? model : NULL, e, c, desc) == 0 && !json)
        printf("profile saved to %s%s\n", path, plan ? " (precis inspect shows it)" : "");
}

int cmd_bench(int argc, char **argv) {
    engine_args a = {0};
    const char *in_spec[MAX_IO], *shape_spec[MAX_IO], *ort_model = NULL, *profile_out = NULL;
    int n_in = 0, n_shape = 0, warmup = 5, iters = 50, profile = 0, json = 0, vs_ort = 0;
    for (int i = 0; i < argc; i++) {
        int r = engine_opt(&a, argc, argv, &i, usage_bench);
        if (r < 0) return 1;
        if (r) continue;
        const char *o = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage_bench(stdout);
            return 0;
        } else if (!strcmp(o, "--input") || !strcmp(o, "-i")) {
            if (!more || n_in == MAX_IO) return usage_error(usage_bench, "%s needs NAME=FILE.npy", o);
            in_spec[n_in++] = argv[++i];
        } else if (!strcmp(o, "--shape")) {
            if (!more || n_shape == MAX_IO) return usage_error(usage_bench, "%s needs NAME=DIMS", o);
            shape_spec[n_shape++] = argv[++i];
        } else if (!strcmp(o, "--warmup") || !strcmp(o, "--iterations")) {
            if (!more) return usage_error(usage_bench, "%s needs a number", o);
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 1000000 || (v == 0 && o[2] == 'i'))
                return usage_error(usage_bench, "bad count '%s'", argv[i]);
            *(o[2] == 'w' ? &warmup : &iters) = (int)v;
        } else if (!strcmp(o, "--profile")) {
            profile = 1;
        } else if (!strcmp(o, "--profile-out")) {
            if (!more) return usage_error(usage_bench, "%s needs a file name", o);
            profile_out = argv[++i];
            profile = 1;
        } else if (!strcmp(o, "--json")) {
            json = 1;
        } else if (!strcmp(o, "--vs-ort")) {
            vs_ort = 1;
            if (more && argv[i + 1][0] != '-') ort_model = argv[++i];
        } else if (o[0] == '-') {
            return usage_error(usage_bench, "unknown option '%s'", o);
        } else if (!a.model) {
            a.model = o;
        } else {
            return usage_error(usage_bench, "unexpected argument '%s'", o);
        }
    }
    if (!a.model) return usage_error(usage_bench, "missing MODEL%s", "");
    if (vs_ort && !ort_model) {
        if (is_plan_file(a.model))
            return usage_error(usage_bench, "--vs-ort with a plan needs the ONNX file: --vs-ort MODEL.onnx%s", "");
        ort_model = a.model;
    }
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_engine *e = NULL;
    precis_context *c = NULL;
    precis_tensor *inputs[MAX_IO] = {0}, *outputs[MAX_IO] = {0};
    const char *names[MAX_IO];
    double *lat = NULL, *dev = NULL;
    char tmpdir[] = "/tmp/precis-bench-XXXXXX";
    int have_tmp = 0, rc = 0;
    precis_status st;
    /* an ONNX model benchmarked at fixed --shape dims is built for exactly
     * those (min = opt = max), as a user would build it for that shape:
     * kernels are then chosen and timed for it at build time */
    char fixed[2048] = "";
    if (!a.shapes && n_shape > 0 && !is_plan_file(a.model)) {
        size_t used = 0;
        for (int j = 0; j < n_shape; j++) {
            const char *eq = strchr(shape_spec[j], '=');
            if (!eq) continue;
            int w = snprintf(fixed + used, sizeof fixed - used, "%s%.*s:%s/%s/%s", used ? "," : "",
                             (int)(eq - shape_spec[j]), shape_spec[j], eq + 1, eq + 1, eq + 1);
            if (w < 0 || (size_t)w >= sizeof fixed - used) {
                fixed[0] = 0;
                break;
            }
            used += (size_t)w;
        }
        if (fixed[0]) a.shapes = fixed;
    }
    double tb = now_ms();
    if ((st = open_engine(ctx, &a, &e))) goto error;
    double build_ms = now_ms() - tb;
    int nin = precis_engine_num_inputs(e), nout = precis_engine_num_outputs(e);
    if (nin > MAX_IO || nout > MAX_IO) {
        fprintf(stderr, "precis: error: too many inputs/outputs\n");
        rc = PRECIS_ERR_UNSUPPORTED;
        goto done;
    }
    for (int k = 0; k < nin; k++) {
        precis_value_info vi;
        precis_engine_input(e, k, &vi);
        names[k] = vi.name;
        size_t nl = strlen(vi.name);
        for (int j = 0; j < n_in && !inputs[k]; j++)
            if (!strncmp(in_spec[j], vi.name, nl) && in_spec[j][nl] == '=') {
                if ((st = precis_tensor_load_npy(ctx, in_spec[j] + nl + 1, &inputs[k]))) goto error;
            }
        if (inputs[k]) continue;
        int64_t dims[PRECIS_MAX_RANK];
        int rank = vi.rank;
        for (int d = 0; d < rank; d++) dims[d] = vi.dims[d];
        for (int j = 0; j < n_shape; j++)
            if (!strncmp(shape_spec[j], vi.name, nl) && shape_spec[j][nl] == '=') {
                rank = parse_dims(shape_spec[j] + nl + 1, dims);
                if (rank < 0) {
                    rc = usage_error(usage_bench, "bad --shape '%s'", shape_spec[j]);
                    goto done;
                }
            }
        for (int d = 0; d < rank; d++)
            if (dims[d] < 0) {
                fprintf(stderr, "precis: error: input '%s' has dynamic dims: give --shape %s=DIMS "
                                "or --input %s=FILE.npy\n", vi.name, vi.name, vi.name);
                rc = 1;
                goto done;
            }
        if (rank < 0) {
            fprintf(stderr, "precis: error: input '%s' has unknown rank: give --shape\n", vi.name);
            rc = 1;
            goto done;
        }
        if ((st = precis_tensor_create(ctx, vi.dtype, rank, dims, &inputs[k]))) goto error;
        fill_random(inputs[k], vi.name);
    }
    if ((st = precis_context_create(ctx, e, &c))) goto error;
    const precis_tensor *const *in = (const precis_tensor *const *)inputs;
    for (int w = 0; w < warmup + 1; w++) { /* + 1: the planning run */
        if ((st = precis_context_run(ctx, c, nin, names, in, outputs))) goto error;
        for (int k = 0; k < nout; k++) precis_tensor_destroy(outputs[k]), outputs[k] = NULL;
    }
    if (profile) precis_context_set_profiling(c, 1);
    lat = malloc((size_t)iters * sizeof *lat);
    dev = malloc((size_t)iters * sizeof *dev);
    if (!lat || !dev) {
        rc = PRECIS_ERR_OOM;
        goto done;
    }
    for (int it = 0; it < iters; it++) {
        double t0 = now_ms();
        if ((st = precis_context_run(ctx, c, nin, names, in, outputs))) goto error;
        lat[it] = now_ms() - t0;
        dev[it] = precis_context_device_ms(c);
        for (int k = 0; k < nout; k++) precis_tensor_destroy(outputs[k]), outputs[k] = NULL;
    }
    qsort(lat, (size_t)iters, sizeof *lat, cmp_double);
    qsort(dev, (size_t)iters, sizeof *dev, cmp_double);
    double dev50 = pct(dev, iters, 50);
    double p50 = pct(lat, iters, 50), p90 = pct(lat, iters, 90), p99 = pct(lat, iters, 99);
    int64_t batch = precis_tensor_rank(inputs[0]) > 0 ? precis_tensor_dims(inputs[0])[0] : 1;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double ort_p50 = -1;
    char ort_err[512] = "";
    char ort_ver[64] = "";
    if (vs_ort) {
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "precis: error: cannot create a temporary directory\n");
            rc = PRECIS_ERR_IO;
            goto done;
        }
        have_tmp = 1;
        char cmd[16384], py[4200];
        snprintf(py, sizeof py, "%s/ort_bench.py", tmpdir);
        FILE *f = fopen(py, "w");
        if (!f) {
            rc = PRECIS_ERR_IO;
            goto done;
        }
        fputs(k_ort_bench_py, f);
        fclose(f);
        int n = snprintf(cmd, sizeof cmd, "python3 '%s' '%s' %d %d %d", py, ort_model,
                         precis_engine_num_threads(e), warmup, iters);
        for (int k = 0; k < nin; k++) {
            char p[4300];
            snprintf(p, sizeof p, "%s/in%d.npy", tmpdir, k);
            if ((st = precis_tensor_save_npy(ctx, inputs[k], p))) goto error;
            n += snprintf(cmd + n, sizeof cmd - (size_t)n, " '%s=%s'", names[k], p);
        }
        FILE *pp = popen(cmd, "r");
        static char line[1 << 20];
        size_t got = pp ? fread(line, 1, sizeof line - 1, pp) : 0;
        line[got] = 0;
        if (pp) pclose(pp);
        char *l = strstr(line, "\"latencies_ms\": [");
        if (l) {
            l += strlen("\"latencies_ms\": [");
            double *ol = malloc((size_t)iters * sizeof *ol);
            int m = 0;
            while (ol && m < iters) {
                char *q;
                double v = strtod(l, &q);
                if (q == l) break;
                ol[m++] = v;
                l = q;
                while (*l == ',' || *l == ' ') l++;
            }
            if (m) {
                qsort(ol, (size_t)m, sizeof *ol, cmp_double);
                ort_p50 = pct(ol, m, 50);
            }
            free(ol);
            char *v = strstr(line, "\"version\": \"");
            if (v) sscanf(v + 12, "%63[^\"]", ort_ver);
        } else {
            char *er = strstr(line, "\"error\": \"");
            snprintf(ort_err, sizeof ort_err, "%s", er ? er + 10 : "onnxruntime did not run");
            char *q = strrchr(ort_err, '"');
            if (q) *q = 0;
        }
    }
    if (json) {
        printf("{\"model\": ");
        json_str(a.model);
        printf(", \"precision\": \"%s\", \"threads\": %d, \"batch\": %lld, \"warmup\": %d, "
               "\"iterations\": %d,\n \"latency_ms\": {\"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f, "
               "\"min\": %.4f},\n \"throughput_per_s\": %.3f, \"arena_bytes\": %zu, "
               "\"peak_rss_bytes\": %lld, \"build_or_load_ms\": %.1f, \"cuda_graph\": %d,\n"
               " \"device_ms_p50\": %.4f, \"device_throughput_per_s\": %.3f, "
               "\"batch_split_workers\": %d",
               precis_engine_precision(e), precis_engine_num_threads(e), (long long)batch, warmup,
               iters, p50, p90, p99, lat[0], 1e3 * (double)batch / p50,
               precis_context_arena_bytes(c), (long long)ru.ru_maxrss * 1024, build_ms,
               precis_context_used_cuda_graph(c), dev50,
               dev50 > 0 ? 1e3 * (double)batch / dev50 : 0.0, precis_context_split_workers(c));
        if (vs_ort) {
            if (ort_p50 > 0)
                printf(",\n \"ort\": {\"version\": \"%s\", \"latency_ms_p50\": %.4f, \"ratio\": %.4f}",
                       ort_ver, ort_p50, p50 / ort_p50);
            else {
                printf(",\n \"ort\": {\"error\": ");
                json_str(ort_err);
                printf("}");
            }
        }
    } else {
        printf("%s: precision %s, %d threads, batch %lld, %d iterations after %d warm-up\n",
               a.model, precis_engine_precision(e), precis_engine_num_threads(e),
               (long long)batch, iters, warmup);
        printf("latency ms   p50 %.3f   p90 %.3f   p99 %.3f   min %.3f\n", p50, p90, p99, lat[0]);
        printf("throughput   %.1f items/s\n", 1e3 * (double)batch / p50);
        printf("memory       activation arena %.2f MB, peak RSS %.1f MB\n",
               (double)precis_context_arena_bytes(c) / 1e6, (double)ru.ru_maxrss / 1024.0);
        if (precis_context_split_workers(c))
            printf("batch split  %lld samples run one by one on %d workers of 1 thread "
                   "(PRECIS_BATCH_SPLIT=0: never)\n",
                   (long long)batch, precis_context_split_workers(c));
        else if (precis_context_split_note(c)[0])
            printf("batch split  no: %s\n", precis_context_split_note(c));
        if (dev50 > 0)
            printf("gpu time     p50 %.3f ms between input upload and output download "
                   "(%.1f items/s)%s\n",
                   dev50, 1e3 * (double)batch / dev50,
                   precis_context_used_cuda_graph(c) ? ", one CUDA graph launch per run" : "");
        if (vs_ort) {
            if (ort_p50 > 0)
                printf("onnxruntime  %s p50 %.3f ms: precis/ort latency ratio %.3f (%s)\n", ort_ver,
                       ort_p50, p50 / ort_p50, p50 <= ort_p50 ? "precis faster" : "ort faster");
            else
                printf("onnxruntime  failed: %s\n", ort_err);
        }
    }
    if (profile) {
        int n = precis_engine_num_steps(e), runs = precis_context_profiled_runs(c);
        double total = 0;
        for (int i = 0; i < n; i++) total += precis_context_step_seconds(c, i);
        if (json) printf(",\n \"profile\": [");
        else printf("\nprofile (ms per run, share)\n");
        for (int i = 0; i < n; i++) {
            precis_step_info si;
            precis_engine_step(e, i, &si);
            double ms = 1e3 * precis_context_step_seconds(c, i) / (runs ? runs : 1);
            double share = total > 0 ? precis_context_step_seconds(c, i) / total : 0;
            if (json) {
                printf("%s\n  {\"step\": %d, \"name\": ", i ? "," : "", i);
                json_str(si.name);
                printf(", \"op\": ");
                json_str(si.op);
                printf(", \"kernel\": ");
                json_str(si.kernel);
                printf(", \"dtype\": \"%s\", \"layout\": \"%s\", \"ms\": %.4f, \"share\": %.4f}",
                       precis_dtype_name(si.compute), si.layout, ms, share);
            } else {
                printf("  %4d %-40.40s %-12.12s %-34.34s %8.3f %5.1f%%\n", i, si.name, si.op,
                       si.kernel, ms, 100 * share);
            }
        }
        if (json) printf("]");
        save_profile(a.model, profile_out, e, c, nin, (const precis_tensor *const *)inputs,
                     names, json);
    }
    if (json) printf("}\n");
    goto done;
error:
    rc = fail(ctx, st);
done:
    if (have_tmp) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "precis: note: could not remove %s\n", tmpdir);
    }
    free(lat);
    free(dev);
    for (int k = 0; k < MAX_IO; k++) {
        precis_tensor_destroy(inputs[k]);
        precis_tensor_destroy(outputs[k]);
    }
    precis_context_destroy(c);
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
    return rc;
}

/* ---------------------------------------------------------------- inspect */

int inspect_plan(const char *path, int json, const char *profile, const char *svg) {
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_engine *e = NULL;
    precis_status st = precis_engine_load(ctx, path, 0, &e);
    if (st) {
        int rc = fail(ctx, st);
        precis_ctx_destroy(ctx);
        return rc;
    }
    if (svg) {
        int rc = inspect_svg(e, path, svg);
        precis_engine_destroy(e);
        precis_ctx_destroy(ctx);
        return rc;
    }
    int n = precis_engine_num_steps(e);
    /* time shares from bench --profile: the given file (an error when it does
     * not fit) or PLAN.profile.json (skipped with a note when stale) */
    double *ms = calloc((size_t)n + 1, sizeof *ms), total = 0;
    char ppath[4200], info[4800] = "", why[4800] = "";
    int have = 0;
    if (!ms) {
        precis_engine_destroy(e);
        precis_ctx_destroy(ctx);
        return PRECIS_ERR_OOM;
    }
    if (profile) snprintf(ppath, sizeof ppath, "%s", profile);
    else profile_default_path(path, ppath, sizeof ppath);
    int pr = profile_load(ppath, path, n, ms, info, sizeof info, why, sizeof why);
    have = pr == 0;
    if (!have && profile) {
        fprintf(stderr, "precis: error: %s\n", why);
        free(ms);
        precis_engine_destroy(e);
        precis_ctx_destroy(ctx);
        return PRECIS_ERR_INVALID_ARG;
    }
    if (pr == -1) fprintf(stderr, "precis: note: profile ignored: %s\n", why);
    for (int i = 0; have && i < n; i++) total += ms[i];
    if (json) {
        printf("{\"plan\": ");
        json_str(path);
        printf(", \"precision\": \"%s\", \"target\": ", precis_engine_precision(e));
        json_str(precis_engine_target(e));
        printf(", \"threads\": %d,", precis_engine_num_threads(e));
        if (have) {
            printf(" \"profile\": ");
            json_str(info);
            printf(", \"profile_total_ms\": %.4f,", total);
        }
        printf("\n \"steps\": [");
    } else {
        printf("plan       %s\nprecision  %s   target %s   threads %d   steps %d\n", path,
               precis_engine_precision(e), precis_engine_target(e), precis_engine_num_threads(e),
               n);
        if (have) printf("profile    %s: %.3f ms per run\n", info, total);
        printf("\n%4s  %-36s %-12s %-9s %-6s %-34s ", "step", "node", "op", "dtype", "layout",
               "kernel");
        if (have) printf("%8s %6s ", "ms", "share");
        printf("covers\n");
    }
    for (int i = 0; i < n; i++) {
        precis_step_info si;
        precis_engine_step(e, i, &si);
        if (json) {
            printf("%s\n  {\"step\": %d, \"name\": ", i ? "," : "", i);
            json_str(si.name);
            printf(", \"op\": ");
            json_str(si.op);
            printf(", \"kernel\": ");
            json_str(si.kernel);
            printf(", \"dtype\": \"%s\", \"layout\": \"%s\", ", precis_dtype_name(si.compute),
                   si.layout);
            if (have) printf("\"ms\": %.4f, \"share\": %.4f, ", ms[i], total > 0 ? ms[i] / total : 0);
            printf("\"origins\": [");
            for (int k = 0; k < si.num_origins; k++) {
                printf("%s", k ? ", " : "");
                json_str(si.origins[k]);
            }
            printf("]}");
        } else {
            printf("%4d  %-36.36s %-12.12s %-9s %-6s %-34.34s ", i, si.name, si.op,
                   precis_dtype_name(si.compute), si.layout, si.kernel);
            if (have) printf("%8.3f %5.1f%% ", ms[i], total > 0 ? 100 * ms[i] / total : 0);
            if (!si.num_origins) printf("(inserted by precis)");
            for (int k = 0; k < si.num_origins && k < 6; k++) printf("%s%s", k ? ", " : "", si.origins[k]);
            if (si.num_origins > 6) printf(", ... (%d)", si.num_origins);
            printf("\n");
        }
    }
    if (json) {
        printf("]");
        inspect_nodes_json(e);
        printf("}\n");
    } else {
        inspect_nodes_text(e);
    }
    free(ms);
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
    return 0;
}
