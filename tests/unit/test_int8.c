/* INT8 builds end to end on the small test models (tests/data): calibrate on
 * random .npy samples, build for the CPU backend and for ref (the QDQ graph,
 * "fake quantization": the oracle), and check
 *   - CPU int8 agrees with the ref QDQ graph (the int8 kernels implement the
 *     QDQ semantics),
 *   - both stay close to FP32,
 *   - the int8 ops really ran (inspect: QConv/QMatMul steps with int8 dtypes),
 *   - the calibration cache round-trips (same engine output from the cache
 *     without data; a cache for another model is refused),
 *   - every calibrator builds,
 *   - bad options fail with a message,
 *   - odd_cnn: a dead channel of denormal weights stays on the int8 kernel
 *     (and keeps its bias); a Conv1d stays float next to int8 and the whole
 *     still matches the QDQ graph;
 *   - se_cnn: the squeeze-excitation Mul, the residual and FPN Adds (Relu
 *     absorbed), the Sub of a constant and both average pools run as
 *     QBinary / QPool: no float elementwise or pooling step is left and the
 *     only conversion is the input's QuantizeLinear;
 *   - outlier_mlp: the LayerNorm output (2 channels 25x the rest) is
 *     smoothed (a per-channel QuantizeLinear step), the CPU
 *     still matches the QDQ graph (which holds the smoothing Mul), smoothing
 *     is closer to fp32 than --smooth off, and a bad alpha is refused;
 *   - fp8 on ref: Q/DQ of the linear layers only, close to fp32; cpu refuses. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "precis/precis.h"

static char dir[256];

static precis_tensor *rand_input(precis_ctx *ctx, int rank, const int64_t *dims, unsigned seed) {
    precis_tensor *t = NULL;
    precis_tensor_create(ctx, PRECIS_FLOAT32, rank, dims, &t);
    float *p = precis_tensor_data(t);
    for (int64_t i = 0; i < precis_tensor_numel(t); i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f * 2 - 1;
    }
    return t;
}

static double cosine(const precis_tensor *a, const precis_tensor *b) {
    if (!a || !b || precis_tensor_numel(a) != precis_tensor_numel(b)) return -2;
    const float *x = precis_tensor_data_const(a), *y = precis_tensor_data_const(b);
    double xy = 0, xx = 0, yy = 0;
    for (int64_t i = 0; i < precis_tensor_numel(a); i++) {
        xy += (double)x[i] * y[i];
        xx += (double)x[i] * x[i];
        yy += (double)y[i] * y[i];
    }
    return xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1 : 0);
}

/* Calibration folder: n random samples of dims. */
static void make_calib(precis_ctx *ctx, const char *sub, int rank, const int64_t *dims, int n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    mkdir(p, 0755);
    for (int i = 0; i < n; i++) {
        precis_tensor *t = rand_input(ctx, rank, dims, 100u + (unsigned)i);
        snprintf(p, sizeof p, "%s/%s/%03d.npy", dir, sub, i);
        CHECK(precis_tensor_save_npy(ctx, t, p) == PRECIS_OK);
        precis_tensor_destroy(t);
    }
}

/* Build (backend, precision) and run one input; outputs into out[]. */
static precis_status build_run(precis_ctx *ctx, const char *model, precis_build_options *o,
                               const char *in_name, const precis_tensor *in, precis_tensor **out,
                               precis_engine **keep) {
    precis_engine *e = NULL;
    precis_status st = precis_build(ctx, model, o, &e);
    if (st) {
        fprintf(stderr, "build %s %s: %s\n", o->backend ? o->backend : "cpu", o->precision,
                precis_last_error(ctx));
        return st;
    }
    precis_context *c = NULL;
    st = precis_context_create(ctx, e, &c);
    if (!st) st = precis_context_run(ctx, c, 1, &in_name, &in, out);
    if (st) fprintf(stderr, "run: %s\n", precis_last_error(ctx));
    precis_context_destroy(c);
    if (keep) *keep = e;
    else precis_engine_destroy(e);
    return st;
}

/* CPU int8 agrees with the ref QDQ graph and stays close to FP32, output by output. */
static void check_agree(const char *model, precis_tensor **cpu, precis_tensor **ref,
                        precis_tensor **f32, int n) {
    for (int k = 0; k < n; k++) {
        double c_ref = cosine(cpu[k], ref[k]), c_f32 = cosine(cpu[k], f32[k]);
        printf("%s output %d: cos(int8 cpu, int8 ref QDQ) %.7f, cos(int8, fp32) %.5f\n", model,
               k, c_ref, c_f32);
        CHECK(c_ref > 0.9999);
        CHECK(c_f32 > 0.99);
    }
}

static int count_steps(const precis_engine *e, const char *op, precis_dtype dt) {
    int n = 0;
    for (int i = 0; i < precis_engine_num_steps(e); i++) {
        precis_step_info si;
        precis_engine_step(e, i, &si);
        if (!strcmp(si.op, op) && (dt == PRECIS_UNDEFINED || si.compute == dt)) n++;
    }
    return n;
}

static void test_cnn(void) {
    precis_ctx *ctx = precis_ctx_create();
    const char *model = "data/small_cnn.onnx";
    int64_t dims[4] = {1, 3, 16, 16};
    make_calib(ctx, "cnn", 4, dims, 8);
    char calib[512], cache[512];
    snprintf(calib, sizeof calib, "%s/cnn", dir);
    snprintf(cache, sizeof cache, "%s/cnn.cache", dir);
    precis_tensor *in = rand_input(ctx, 4, dims, 7);
    precis_tensor *f32[2] = {0}, *cpu[2] = {0}, *ref[2] = {0}, *cached[2] = {0};
    precis_build_options o = {.precision = "fp32", .num_threads = 1};
    CHECK(build_run(ctx, model, &o, "input", in, f32, NULL) == PRECIS_OK);
    o.precision = "int8";
    o.calib_data = calib;
    o.calib_cache = cache;
    o.calibrator = "minmax";
    precis_engine *e = NULL;
    CHECK(build_run(ctx, model, &o, "input", in, cpu, &e) == PRECIS_OK);
    CHECK(access(cache, R_OK) == 0);
    if (e) {
        /* the convs and the Gemm ran as int8 ops; the tail ran float */
        CHECK(count_steps(e, "QConv", PRECIS_UNDEFINED) == 4);
        CHECK(count_steps(e, "QMatMul", PRECIS_UNDEFINED) == 1);
        CHECK(count_steps(e, "FusedConv", PRECIS_UNDEFINED) == 0);
        CHECK(count_steps(e, "Softmax", PRECIS_FLOAT32) == 1);
        CHECK(!strcmp(precis_engine_precision(e), "int8"));
    }
    precis_engine_destroy(e);
    o.backend = "ref";
    CHECK(build_run(ctx, model, &o, "input", in, ref, NULL) == PRECIS_OK);
    check_agree("small_cnn", cpu, ref, f32, 2);
    /* the cache alone (no data) gives the same engine */
    o.backend = NULL;
    o.calib_data = NULL;
    CHECK(build_run(ctx, model, &o, "input", in, cached, NULL) == PRECIS_OK);
    CHECK(cosine(cached[0], cpu[0]) > 0.9999999);
    /* another calibrator re-derives scales from the cache */
    precis_tensor *ent[2] = {0};
    o.calibrator = "entropy";
    CHECK(build_run(ctx, model, &o, "input", in, ent, NULL) == PRECIS_OK);
    CHECK(cosine(ent[0], f32[0]) > 0.98);
    for (int k = 0; k < 2; k++) precis_tensor_destroy(ent[k]);
    const char *cals[] = {"percentile", "mse"};
    for (int i = 0; i < 2; i++) {
        o.calibrator = cals[i];
        CHECK(build_run(ctx, model, &o, "input", in, ent, NULL) == PRECIS_OK);
        CHECK(cosine(ent[0], f32[0]) > 0.98);
        for (int k = 0; k < 2; k++) precis_tensor_destroy(ent[k]), ent[k] = NULL;
    }
    /* this cache refuses another model */
    precis_engine *bad = NULL;
    o.calibrator = NULL;
    CHECK(precis_build(ctx, "data/small_mlp.onnx", &o, &bad) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(precis_last_error(ctx), "another model") != NULL);
    /* bad options */
    o.calib_cache = NULL;
    CHECK(precis_build(ctx, model, &o, &bad) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(precis_last_error(ctx), "calib") != NULL);
    o.calib_data = calib;
    o.calibrator = "nosuch";
    CHECK(precis_build(ctx, model, &o, &bad) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(precis_last_error(ctx), "nosuch") != NULL);
    o.calibrator = NULL;
    o.calib_data = "/nonexistent/calib";
    CHECK(precis_build(ctx, model, &o, &bad) != PRECIS_OK);
    CHECK(strstr(precis_last_error(ctx), "/nonexistent/calib") != NULL);
    CHECK(bad == NULL);
    for (int k = 0; k < 2; k++) {
        precis_tensor_destroy(f32[k]);
        precis_tensor_destroy(cpu[k]);
        precis_tensor_destroy(ref[k]);
        precis_tensor_destroy(cached[k]);
    }
    precis_tensor_destroy(in);
    precis_ctx_destroy(ctx);
}

/* One model three ways on one random input: fp32, int8 on the CPU (its engine
 * kept in e for the caller's checks) and int8 as the ref backend's QDQ graph;
 * calibration: n_cal random samples in dir/sub. */
typedef struct trio {
    precis_ctx *ctx;
    precis_tensor *in, *f32[2], *cpu[2], *ref[2];
    precis_engine *e;
    int n_out;
} trio;

static void trio_run(trio *t, const char *model, const char *input, const char *sub, int rank,
                     const int64_t *dims, int n_cal, unsigned seed, int n_out) {
    memset(t, 0, sizeof *t);
    t->ctx = precis_ctx_create();
    t->n_out = n_out;
    make_calib(t->ctx, sub, rank, dims, n_cal);
    char calib[512];
    snprintf(calib, sizeof calib, "%s/%s", dir, sub);
    t->in = rand_input(t->ctx, rank, dims, seed);
    precis_build_options o = {.precision = "fp32", .num_threads = 2};
    CHECK(build_run(t->ctx, model, &o, input, t->in, t->f32, NULL) == PRECIS_OK);
    o.precision = "int8";
    o.calib_data = calib;
    CHECK(build_run(t->ctx, model, &o, input, t->in, t->cpu, &t->e) == PRECIS_OK);
    o.backend = "ref";
    CHECK(build_run(t->ctx, model, &o, input, t->in, t->ref, NULL) == PRECIS_OK);
}

/* The CPU int8 outputs agree with ref's and with fp32; frees everything. */
static void trio_done(trio *t, const char *label) {
    check_agree(label, t->cpu, t->ref, t->f32, t->n_out);
    precis_engine_destroy(t->e);
    for (int k = 0; k < 2; k++) {
        precis_tensor_destroy(t->f32[k]);
        precis_tensor_destroy(t->cpu[k]);
        precis_tensor_destroy(t->ref[k]);
    }
    precis_tensor_destroy(t->in);
    precis_ctx_destroy(t->ctx);
}

static void test_mlp(void) {
    int64_t dims[3] = {2, 5, 32};
    trio t;
    trio_run(&t, "data/small_mlp.onnx", "x", "mlp", 3, dims, 6, 9, 1);
    if (t.e) CHECK(count_steps(t.e, "QMatMul", PRECIS_UNDEFINED) >= 1);
    trio_done(&t, "small_mlp");
}

static void test_odd(void) {
    int64_t dims[4] = {2, 4, 8, 8};
    trio t;
    trio_run(&t, "data/odd_cnn.onnx", "x", "odd", 4, dims, 4, 11, 2);
    if (t.e) {
        CHECK(count_steps(t.e, "QConv", PRECIS_UNDEFINED) == 1);   /* the 2-D conv */
        CHECK(count_steps(t.e, "FusedConv", PRECIS_FLOAT32) == 1); /* the 1-D one */
        /* relu's output leaves NHWC once, for the graph output and Reshape;
         * the input is quantized straight into NHWC (no Reorder) */
        CHECK(count_steps(t.e, "Reorder", PRECIS_UNDEFINED) == 1);
        CHECK(count_steps(t.e, "QuantizeLinear", PRECIS_UNDEFINED) == 1);
    }
    /* the dead channel 3 of relu's output is its bias, 0.7, on every pixel */
    if (t.cpu[1] && precis_tensor_numel(t.cpu[1]) == 2 * 8 * 64) {
        const float *r = precis_tensor_data_const(t.cpu[1]);
        float lo = 1e9f, hi = -1e9f;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 64; i++) {
                float v = r[(b * 8 + 3) * 64 + i];
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        printf("odd_cnn dead channel: %.4f..%.4f (fp32 0.7)\n", lo, hi);
        CHECK(fabsf(lo - 0.7f) < 0.02f && fabsf(hi - 0.7f) < 0.02f);
    } else {
        CHECK(!"relu output missing");
    }
    trio_done(&t, "odd_cnn");
}

static void test_se(void) {
    int64_t dims[4] = {2, 8, 12, 12};
    trio t;
    trio_run(&t, "data/se_cnn.onnx", "input", "se", 4, dims, 6, 13, 1);
    if (t.e) {
        CHECK(count_steps(t.e, "QBinary", PRECIS_UNDEFINED) == 4); /* Mul, Add, Add+Relu, Sub */
        CHECK(count_steps(t.e, "QPool", PRECIS_UNDEFINED) == 2);
        const char *fl[] = {"Add", "Sub", "Mul", "Relu", "GlobalAveragePool", "AveragePool",
                            "DequantizeLinear"};
        for (int i = 0; i < 7; i++) {
            int n = count_steps(t.e, fl[i], PRECIS_UNDEFINED);
            if (n) printf("se_cnn: %d %s steps left\n", n, fl[i]);
            CHECK(n == 0);
        }
        CHECK(count_steps(t.e, "QuantizeLinear", PRECIS_UNDEFINED) == 1);
        CHECK(count_steps(t.e, "QBinary", PRECIS_INT8) + count_steps(t.e, "QBinary", PRECIS_UINT8) == 4);
    }
    trio_done(&t, "se_cnn");
}

static int count_kernel(const precis_engine *e, const char *kernel) {
    int n = 0;
    for (int i = 0; i < precis_engine_num_steps(e); i++) {
        precis_step_info si;
        precis_engine_step(e, i, &si);
        if (strstr(si.kernel, kernel)) n++;
    }
    return n;
}

static void test_smooth(void) {
    int64_t dims[3] = {2, 16, 32};
    trio t;
    trio_run(&t, "data/outlier_mlp.onnx", "x", "outlier", 3, dims, 6, 13, 1);
    if (t.e) {
        /* the LayerNorm output; the GELU output's channels spread less than 4x */
        CHECK(count_kernel(t.e, "quantize.channels") == 1);
        CHECK(count_steps(t.e, "Mul", PRECIS_UNDEFINED) == 0); /* folded into the quantize */
    }
    double on = cosine(t.cpu[0], t.f32[0]);
    /* the same without smoothing: further from fp32 */
    char calib[512];
    snprintf(calib, sizeof calib, "%s/outlier", dir);
    precis_build_options o = {.precision = "int8", .num_threads = 2, .calib_data = calib,
                              .smooth = -1};
    precis_tensor *off[1] = {0};
    precis_engine *e = NULL;
    CHECK(build_run(t.ctx, "data/outlier_mlp.onnx", &o, "x", t.in, off, &e) == PRECIS_OK);
    if (e) CHECK(count_kernel(e, "quantize.channels") == 0);
    double c_off = cosine(off[0], t.f32[0]);
    printf("outlier_mlp: cos(int8, fp32) smoothed %.6f, --smooth off %.6f\n", on, c_off);
    CHECK(on > c_off && 1 - on < 0.5 * (1 - c_off));
    precis_engine_destroy(e);
    precis_tensor_destroy(off[0]);
    o.smooth = 1.5;
    CHECK(precis_build(t.ctx, "data/outlier_mlp.onnx", &o, &e) == PRECIS_ERR_INVALID_ARG &&
          strstr(precis_last_error(t.ctx), "alpha 1.5"));
    trio_done(&t, "outlier_mlp");
}

/* fp8 (e4m3) on the ref backend: the QDQ graph of the linear layers only
 * (float8 Q/DQ steps, convs untouched), close to fp32 and apart from it; the
 * cpu backend refuses fp8 with one line. */
static void test_fp8(void) {
    precis_ctx *ctx = precis_ctx_create();
    int64_t dims[3] = {2, 5, 32};
    make_calib(ctx, "mlp8", 3, dims, 6);
    char calib[512];
    snprintf(calib, sizeof calib, "%s/mlp8", dir);
    precis_tensor *in = rand_input(ctx, 3, dims, 17), *f32[1] = {0}, *f8[1] = {0};
    precis_build_options o = {.precision = "fp32", .num_threads = 2};
    CHECK(build_run(ctx, "data/small_mlp.onnx", &o, "x", in, f32, NULL) == PRECIS_OK);
    o.precision = "fp8";
    o.calib_data = calib;
    precis_engine *e = NULL;
    CHECK(precis_build(ctx, "data/small_mlp.onnx", &o, &e) == PRECIS_ERR_UNSUPPORTED &&
          strstr(precis_last_error(ctx), "fp8 runs on the cuda backend"));
    o.backend = "ref";
    CHECK(build_run(ctx, "data/small_mlp.onnx", &o, "x", in, f8, &e) == PRECIS_OK);
    if (e) {
        CHECK(count_steps(e, "QuantizeLinear", PRECIS_UNDEFINED) == 2); /* x, the GELU output */
        CHECK(count_steps(e, "DequantizeLinear", PRECIS_UNDEFINED) == 4); /* and both weights */
        CHECK(!strcmp(precis_engine_precision(e), "fp8"));
    }
    double c = cosine(f8[0], f32[0]);
    printf("small_mlp: cos(fp8 ref QDQ, fp32) %.6f\n", c);
    CHECK(c > 0.995 && c < 1.0);
    precis_engine_destroy(e);
    e = NULL;
    /* a conv net: only its Gemm head (a linear layer) is quantized, the 4 convs stay float */
    int64_t cd[4] = {1, 3, 16, 16};
    make_calib(ctx, "cnn8", 4, cd, 4);
    snprintf(calib, sizeof calib, "%s/cnn8", dir);
    o.calib_data = calib;
    CHECK(precis_build(ctx, "data/small_cnn.onnx", &o, &e) == PRECIS_OK);
    if (e) CHECK(count_steps(e, "QuantizeLinear", PRECIS_UNDEFINED) == 1 &&
                 count_steps(e, "DequantizeLinear", PRECIS_UNDEFINED) == 2);
    precis_engine_destroy(e);
    precis_tensor_destroy(f32[0]);
    precis_tensor_destroy(f8[0]);
    precis_tensor_destroy(in);
    precis_ctx_destroy(ctx);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/precis_int8_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_cnn();
    test_mlp();
    test_odd();
    test_se();
    test_smooth();
    test_fp8();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_report("test_int8");
}
