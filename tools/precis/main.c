/* precis — command line. Built only on the public header <precis/precis.h>. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

const char k_exit_codes[] =
    "Exit status:\n"
    "  0  success\n"
    "  1  usage error (unknown command or option, missing argument)\n"
    "  2  invalid input (unknown input name, wrong dtype or shape, missing input)\n"
    "  3  I/O error (file missing, unreadable or unwritable)\n"
    "  4  malformed file (ONNX protobuf, .npy)\n"
    "  5  unsupported (op, attribute or dtype precis cannot run yet)\n"
    "  6  inconsistent shapes or types in the model\n"
    "  7  out of memory or a size over precis's limits\n"
    "  8  internal error (a bug in precis: please report it)\n"
    "  9  accuracy budget not met (build --protect auto)\n";

static void usage_main(FILE *f) {
    fprintf(f,
            "precis %s — mixed-precision inference optimizer and runtime\n\n"
            "usage: precis <command> [options]\n\n"
            "Commands:\n"
            "  build     optimize a model into an engine plan (fp32, bf16, fp16, int8)\n"
            "  export-qdq  calibrate a model for int8 and write it as QDQ ONNX\n"
            "  run       run an ONNX model or a plan on .npy inputs, write .npy outputs\n"
            "  bench     time a model or plan (latency percentiles, memory, profile, vs ORT)\n"
            "  inspect   show a model's inputs, outputs and ops, or a plan's steps\n"
            "  sensitivity  per-layer int8 sensitivity against fp32, ranked, with a report\n"
            "  version   print the version\n\n"
            "'precis <command> --help' describes a command.\n\n%s",
            precis_version(), k_exit_codes);
}

static void usage_run(FILE *f) {
    fprintf(f,
            "usage: precis run MODEL.onnx|PLAN [--input NAME=FILE.npy]... [--output-dir DIR]\n"
            "                  [--backend ref|cpu|cuda] [--precision fp32|bf16|fp16] [--threads N]\n"
            "                  [--quiet]\n\n"
            "An ONNX model runs on the ref backend (the oracle) unless --backend cpu or\n"
            "--precision asks for an engine built on the fly; a plan runs its engine.\n"
            "Runs MODEL on the given inputs (NumPy .npy files). Every graph input must be\n"
            "given once; a model with a single input also accepts --input FILE.npy.\n"
            "With --output-dir each graph output is written to DIR/<name>.npy (characters\n"
            "outside [A-Za-z0-9._-] in the name become '_'); the directory is created.\n"
            "Prints each output's shape and summary statistics and the run time.\n\n%s",
            k_exit_codes);
}

static void usage_inspect(FILE *f) {
    fprintf(f,
            "usage: precis inspect MODEL.onnx|PLAN [--json] [--profile FILE]\n"
            "       precis inspect PLAN --svg OUT.svg\n\n"
            "For a plan: every step with its op after fusion, dtype, layout, the kernel\n"
            "that runs it and the original ONNX nodes it covers; with the time per run\n"
            "and share of every step when `precis bench PLAN --profile` has measured it\n"
            "(PLAN.profile.json, or --profile FILE).\n"
            "--svg OUT.svg draws the plan's steps instead, in execution order with arrows\n"
            "from the steps whose outputs each reads: boxes filled by the dtype the step\n"
            "computes in (legend at the top), a thick red border where an original node's\n"
            "precision request was not met (hover for the reason), a green check where\n"
            "requests were met; conversions precis inserted are small and grey.\n"
            "For a model:\n"
            "Shows the model's inputs and outputs (with symbolic dims), the op histogram\n"
            "(marking ops precis cannot run), parameter count, opset imports and metadata.\n"
            "--json prints the same as one JSON object.\n\n%s",
            k_exit_codes);
}

static void print_stats(const precis_tensor *t) {
    precis_dtype dt = precis_tensor_dtype(t);
    int64_t n = precis_tensor_numel(t);
    const void *p = precis_tensor_data_const(t);
    if (n == 0 || (dt != PRECIS_FLOAT32 && dt != PRECIS_INT64 && dt != PRECIS_INT32)) return;
    double mn = 0, mx = 0, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = dt == PRECIS_FLOAT32 ? ((const float *)p)[i]
                   : dt == PRECIS_INT64 ? (double)((const int64_t *)p)[i]
                                        : ((const int32_t *)p)[i];
        if (i == 0 || v < mn) mn = v;
        if (i == 0 || v > mx) mx = v;
        sum += v;
    }
    printf("  min %.6g  max %.6g  mean %.6g", mn, mx, sum / (double)n);
}

static int cmd_run(int argc, char **argv) {
    const char *model_path = NULL, *outdir = NULL, *backend = NULL, *precision = NULL;
    const char *in_spec[MAX_IO];
    int n_spec = 0, threads = 0, quiet = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_run(stdout);
            return 0;
        } else if (!strcmp(a, "--input") || !strcmp(a, "-i")) {
            if (!more) return usage_error(usage_run, "%s needs NAME=FILE.npy", a);
            if (n_spec == MAX_IO) return usage_error(usage_run, "too many inputs%s", "");
            in_spec[n_spec++] = argv[++i];
        } else if (!strcmp(a, "--output-dir") || !strcmp(a, "-o")) {
            if (!more) return usage_error(usage_run, "%s needs a directory", a);
            outdir = argv[++i];
        } else if (!strcmp(a, "--backend") || !strcmp(a, "--device")) {
            if (!more) return usage_error(usage_run, "%s needs a name", a);
            backend = argv[++i];
        } else if (!strcmp(a, "--threads")) {
            if (!more) return usage_error(usage_run, "%s needs a number", a);
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) return usage_error(usage_run, "bad --threads value '%s'", argv[i]);
            threads = (int)v;
        } else if (!strcmp(a, "--precision")) {
            if (!more) return usage_error(usage_run, "%s needs fp32, bf16 or fp16", a);
            precision = argv[++i];
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (a[0] == '-') {
            return usage_error(usage_run, "unknown option '%s'", a);
        } else if (!model_path) {
            model_path = a;
        } else {
            return usage_error(usage_run, "unexpected argument '%s'", a);
        }
    }
    if (!model_path) return usage_error(usage_run, "missing MODEL.onnx%s", "");

    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_model *m = NULL;
    precis_session *s = NULL;
    precis_engine *eng = NULL;
    precis_context *cx = NULL;
    int use_engine = is_plan_file(model_path) || precision || (backend && strcmp(backend, "ref"));
    precis_tensor *inputs[MAX_IO] = {0}, *outputs[MAX_IO] = {0};
    const char *names[MAX_IO];
    char name_buf[MAX_IO][256];
    int rc = 0;
    precis_status st;
    if (use_engine && is_plan_file(model_path)) st = precis_engine_load(ctx, model_path, threads, &eng);
    else if (use_engine)
        st = precis_build(ctx, model_path,
                          &(precis_build_options){.precision = precision, .backend = backend,
                                                  .num_threads = threads},
                          &eng);
    else
        st = precis_model_load(ctx, model_path, &m);
    if (st) goto error;
    int nout = eng ? precis_engine_num_outputs(eng) : precis_model_num_outputs(m);
    int nin = eng ? precis_engine_num_inputs(eng) : precis_model_num_inputs(m);
    if (nout > MAX_IO) {
        fprintf(stderr, "precis: error: model has %d outputs, at most %d supported\n", nout, MAX_IO);
        rc = PRECIS_ERR_UNSUPPORTED;
        goto done;
    }
    for (int i = 0; i < n_spec; i++) {
        const char *eq = strchr(in_spec[i], '=');
        const char *file = in_spec[i];
        if (eq) {
            size_t len = (size_t)(eq - in_spec[i]);
            if (len >= sizeof name_buf[i]) len = sizeof name_buf[i] - 1;
            memcpy(name_buf[i], in_spec[i], len);
            name_buf[i][len] = 0;
            file = eq + 1;
        } else if (nin == 1) {
            precis_value_info vi;
            if (eng) precis_engine_input(eng, 0, &vi);
            else precis_model_input(m, 0, &vi);
            snprintf(name_buf[i], sizeof name_buf[i], "%s", vi.name);
        } else {
            fprintf(stderr, "precis: error: --input '%s': the model has %d inputs, write NAME=FILE.npy\n",
                    in_spec[i], nin);
            rc = 1;
            goto done;
        }
        names[i] = name_buf[i];
        if ((st = precis_tensor_load_npy(ctx, file, &inputs[i]))) goto error;
    }
    precis_session_options opt = {backend, threads};
    if (eng) st = precis_context_create(ctx, eng, &cx);
    else st = precis_session_create(ctx, m, &opt, &s);
    if (st) goto error;
    double t0 = now_ms();
    const precis_tensor *const *cin = (const precis_tensor *const *)inputs;
    if (eng) st = precis_context_run(ctx, cx, n_spec, names, cin, outputs);
    else st = precis_session_run(ctx, s, n_spec, names, cin, outputs);
    if (st) goto error;
    double dt = now_ms() - t0;
    if (outdir && mkdir_p(outdir) != 0) {
        fprintf(stderr, "precis: error: cannot create output directory '%s': %s\n", outdir, strerror(errno));
        rc = PRECIS_ERR_IO;
        goto done;
    }
    for (int k = 0; k < nout; k++) {
        precis_value_info vi;
        if (eng) precis_engine_output(eng, k, &vi);
        else precis_model_output(m, k, &vi);
        char shp[256];
        shape_str(precis_tensor_rank(outputs[k]), precis_tensor_dims(outputs[k]), NULL, shp, sizeof shp);
        if (!quiet) {
            printf("%s: %s%s", vi.name, precis_dtype_name(precis_tensor_dtype(outputs[k])), shp);
            print_stats(outputs[k]);
            printf("\n");
        }
        if (outdir) {
            char fname[256], path[4096];
            safe_name(vi.name, fname, sizeof fname);
            snprintf(path, sizeof path, "%s/%s.npy", outdir, fname);
            if ((st = precis_tensor_save_npy(ctx, outputs[k], path))) goto error;
        }
    }
    if (!quiet && eng)
        printf("ran in %.1f ms (engine: %s, %s)\n", dt, precis_engine_precision(eng), precis_engine_target(eng));
    else if (!quiet)
        printf("ran in %.1f ms (backend %s)\n", dt, backend ? backend : "ref");
    goto done;
error:
    rc = fail(ctx, st);
done:
    for (int i = 0; i < MAX_IO; i++) {
        precis_tensor_destroy(inputs[i]);
        precis_tensor_destroy(outputs[i]);
    }
    precis_session_destroy(s);
    precis_context_destroy(cx);
    precis_engine_destroy(eng);
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
    return rc;
}

static int cmd_inspect(int argc, char **argv) {
    const char *model_path = NULL, *profile = NULL, *svg = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_inspect(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--profile")) {
            if (i + 1 >= argc) return usage_error(usage_inspect, "%s needs a file", a);
            profile = argv[++i];
        } else if (!strcmp(a, "--svg")) {
            if (i + 1 >= argc) return usage_error(usage_inspect, "%s needs a file", a);
            svg = argv[++i];
        } else if (a[0] == '-') {
            return usage_error(usage_inspect, "unknown option '%s'", a);
        } else if (!model_path) {
            model_path = a;
        } else {
            return usage_error(usage_inspect, "unexpected argument '%s'", a);
        }
    }
    if (!model_path) return usage_error(usage_inspect, "missing MODEL.onnx%s", "");
    if (svg && (json || profile))
        return usage_error(usage_inspect, "--svg draws the plan; it does not combine with %s",
                           json ? "--json" : "--profile");
    if (is_plan_file(model_path)) return inspect_plan(model_path, json, profile, svg);
    if (svg) {
        fprintf(stderr, "precis: error: --svg draws a plan, not a model: build one first "
                        "(precis build %s -o PLAN)\n", model_path);
        return 1;
    }
    if (profile) return usage_error(usage_inspect, "--profile applies to a plan, not '%s'", model_path);
    precis_ctx *ctx = precis_ctx_create();
    if (!ctx) return PRECIS_ERR_OOM;
    precis_model *m = NULL;
    precis_model_summary s;
    precis_status st;
    int rc = 0;
    if ((st = precis_model_load(ctx, model_path, &m)) || (st = precis_model_summarize(ctx, m, &s))) {
        rc = fail(ctx, st);
        goto done;
    }
    int nin = precis_model_num_inputs(m), nout = precis_model_num_outputs(m);
    int unsupported = 0;
    for (int i = 0; i < s.num_op_types; i++) unsupported += !s.op_supported[i];
    if (json) {
        printf("{\"model\": ");
        json_str(model_path);
        printf(", \"ir_version\": %lld, \"producer\": ", (long long)s.ir_version);
        json_str(s.producer_name);
        printf(", \"producer_version\": ");
        json_str(s.producer_version);
        printf(", \"graph\": ");
        json_str(s.graph_name);
        printf(",\n \"opsets\": {");
        for (int i = 0; i < s.num_opsets; i++) {
            printf("%s", i ? ", " : "");
            json_str(s.opset_domains[i][0] ? s.opset_domains[i] : "ai.onnx");
            printf(": %lld", (long long)s.opset_versions[i]);
        }
        printf("},\n \"inputs\": [");
        for (int i = 0; i < nin; i++) {
            precis_value_info vi;
            precis_model_input(m, i, &vi);
            printf("%s", i ? ", " : "");
            json_value_info(&vi);
        }
        printf("],\n \"outputs\": [");
        for (int i = 0; i < nout; i++) {
            precis_value_info vi;
            precis_model_output(m, i, &vi);
            printf("%s", i ? ", " : "");
            json_value_info(&vi);
        }
        printf("],\n \"nodes\": %d, \"initializers\": %d, \"parameters\": %lld, \"parameter_bytes\": %lld,\n",
               s.num_nodes, s.num_initializers, (long long)s.num_parameters, (long long)s.parameter_bytes);
        printf(" \"ops\": [");
        for (int i = 0; i < s.num_op_types; i++) {
            printf("%s{\"op\": ", i ? ", " : "");
            json_str(s.op_types[i]);
            printf(", \"count\": %d, \"supported\": %s}", s.op_counts[i], s.op_supported[i] ? "true" : "false");
        }
        printf("],\n \"metadata\": {");
        for (int i = 0; i < s.num_metadata; i++) {
            printf("%s", i ? ", " : "");
            json_str(s.metadata_keys[i]);
            printf(": ");
            json_str(s.metadata_values[i]);
        }
        printf("}}\n");
        goto done;
    }
    printf("model      %s\n", model_path);
    printf("producer   %s %s (ir_version %lld)\n", s.producer_name[0] ? s.producer_name : "?",
           s.producer_version, (long long)s.ir_version);
    printf("opsets    ");
    for (int i = 0; i < s.num_opsets; i++)
        printf(" %s:%lld", s.opset_domains[i][0] ? s.opset_domains[i] : "ai.onnx", (long long)s.opset_versions[i]);
    printf("\n\ninputs (%d)\n", nin);
    for (int i = 0; i < nin; i++) {
        precis_value_info vi;
        char shp[512];
        precis_model_input(m, i, &vi);
        shape_str(vi.rank, vi.dims, vi.dim_names, shp, sizeof shp);
        printf("  %-32s %s%s\n", vi.name, precis_dtype_name(vi.dtype), shp);
    }
    printf("outputs (%d)\n", nout);
    for (int i = 0; i < nout; i++) {
        precis_value_info vi;
        char shp[512];
        precis_model_output(m, i, &vi);
        shape_str(vi.rank, vi.dims, vi.dim_names, shp, sizeof shp);
        printf("  %-32s %s%s\n", vi.name, precis_dtype_name(vi.dtype), shp);
    }
    printf("\nnodes %d, initializers %d, parameters %lld (%.2f MB)\n", s.num_nodes, s.num_initializers,
           (long long)s.num_parameters, (double)s.parameter_bytes / 1e6);
    printf("\nops (%d types%s)\n", s.num_op_types, unsupported ? "; '!' = precis cannot run it yet" : "");
    for (int i = 0; i < s.num_op_types; i++)
        printf("  %c %-28s %d\n", s.op_supported[i] ? ' ' : '!', s.op_types[i], s.op_counts[i]);
    if (s.num_metadata) {
        printf("\nmetadata\n");
        for (int i = 0; i < s.num_metadata; i++) {
            const char *v = s.metadata_values[i];
            size_t len = strlen(v);
            printf("  %s: %.*s%s\n", s.metadata_keys[i], len > 60 ? 60 : (int)len, v, len > 60 ? "..." : "");
        }
    }
done:
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage_main(stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        if (argc > 2 && !strcmp(argv[2], "run")) usage_run(stdout);
        else if (argc > 2 && !strcmp(argv[2], "inspect")) usage_inspect(stdout);
        else if (argc > 2 && !strcmp(argv[2], "build")) usage_build(stdout);
        else if (argc > 2 && !strcmp(argv[2], "export-qdq")) usage_export_qdq(stdout);
        else if (argc > 2 && !strcmp(argv[2], "bench")) usage_bench(stdout);
        else if (argc > 2 && !strcmp(argv[2], "sensitivity")) usage_sensitivity(stdout);
        else usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("precis %s\n", precis_version());
        return 0;
    }
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 2, argv + 2);
    if (!strcmp(cmd, "build")) return cmd_build(argc - 2, argv + 2);
    if (!strcmp(cmd, "export-qdq")) return cmd_export_qdq(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "sensitivity")) return cmd_sensitivity(argc - 2, argv + 2);
    fprintf(stderr, "precis: unknown command '%s'\n\n", cmd);
    usage_main(stderr);
    return 1;
}
