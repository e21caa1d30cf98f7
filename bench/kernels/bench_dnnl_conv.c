/* GFLOP/s of oneDNN convolutions with activations in NHWC (what precis's
 * layout pass keeps between convs) vs the blocked nChw16c layout, float32
 * and bfloat16, 1 and 2 threads, plus the same NHWC conv through precis's
 * dnnl.conv impl (prepare once, run: shows the per-run overhead of memory
 * objects and the stream). Not built by CMake (add it to bench/CMakeLists.txt
 * to have it built); by hand, after building the library:
 *   cc -O2 -std=c11 -fopenmp -DPRECIS_HAVE_DNNL=1 -Iinclude -Isrc \
 *      bench/kernels/bench_dnnl_conv.c build-dnnl/libprecis.a \
 *      -ldnnl -lprotobuf-c -lm -o bench_dnnl_conv
 *   ./bench_dnnl_conv [--seconds S] [--threads 1|2]
 * Each number is the best of runs taken for S seconds (default 1) per case
 * (the median in brackets): the best run is the one least disturbed by
 * other work on the machine. */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dnnl.h>

#include "backends/cpu/dnnl_common.h"
#include "runtime/tensor.h"

typedef struct shape {
    const char *what;
    int64_t N, C, H, W, M, k, pad, group;
} shape;

static const shape shapes[] = {
    {"3x3 64->64 56x56", 1, 64, 56, 56, 64, 3, 1, 1},
    {"depthwise 3x3 64ch 56x56", 1, 64, 56, 56, 64, 3, 1, 64},
    {"1x1 64->256 56x56", 1, 64, 56, 56, 256, 1, 0, 1},
    {"3x3 32->32 10x10 (overhead)", 1, 32, 10, 10, 32, 3, 1, 1},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double flops(const shape *s) {
    return 2.0 * (double)(s->N * s->M * s->H * s->W) * (double)(s->C / s->group) *
           (double)(s->k * s->k);
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        dnnl_status_t st_ = (x);                                                                   \
        if (st_ != dnnl_success) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #x, (int)st_);                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef void (*run_fn)(void *ctx);

/* best and median seconds per call */
static void timeit(run_fn f, void *ctx, double secs, double *best, double *med) {
    for (int i = 0; i < 3; i++) f(ctx);
    double t[4096];
    int n = 0;
    double start = now();
    while (n < 4096 && (now() - start < secs || n < 5)) {
        double t0 = now();
        f(ctx);
        t[n++] = now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    *best = t[0];
    *med = t[n / 2];
}

typedef struct prim_ctx {
    dnnl_primitive_t p;
    dnnl_stream_t s;
    dnnl_exec_arg_t args[3];
} prim_ctx;

static void run_prim(void *v) {
    prim_ctx *c = v;
    CK(dnnl_primitive_execute(c->p, c->s, 3, c->args));
    CK(dnnl_stream_wait(c->s));
}

/* oneDNN directly: src/dst in `tag`, weights `any` (reordered once). */
static void bench_raw(dnnl_engine_t eng, const shape *s, dnnl_data_type_t dt, dnnl_format_tag_t tag,
                      int threads, double secs, char *impl, size_t cap, double *gf, double *gfm) {
    omp_set_num_threads(threads);
    int64_t OH = s->H + 2 * s->pad - s->k + 1, OW = s->W + 2 * s->pad - s->k + 1;
    dnnl_memory_desc_t smd, wmd, wany, dmd;
    dnnl_dims_t sd = {s->N, s->C, s->H, s->W}, dd = {s->N, s->M, OH, OW};
    CK(dnnl_memory_desc_init_by_tag(&smd, 4, sd, dt, tag));
    CK(dnnl_memory_desc_init_by_tag(&dmd, 4, dd, dt, tag));
    if (s->group > 1) {
        dnnl_dims_t wd = {s->group, s->M / s->group, s->C / s->group, s->k, s->k};
        CK(dnnl_memory_desc_init_by_tag(&wmd, 5, wd, dnnl_f32, dnnl_goihw));
        CK(dnnl_memory_desc_init_by_tag(&wany, 5, wd, dt, dnnl_format_tag_any));
    } else {
        dnnl_dims_t wd = {s->M, s->C, s->k, s->k};
        CK(dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dnnl_f32, dnnl_oihw));
        CK(dnnl_memory_desc_init_by_tag(&wany, 4, wd, dt, dnnl_format_tag_any));
    }
    dnnl_dims_t st = {1, 1}, pad = {s->pad, s->pad};
    dnnl_convolution_desc_t cd;
    CK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                          &smd, &wany, NULL, &dmd, st, pad, pad));
    dnnl_primitive_desc_t pd;
    CK(dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL));
    const char *name = NULL;
    CK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name));
    snprintf(impl, cap, "%s", name);
    const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    size_t ss = dnnl_memory_desc_get_size(&smd), ds = dnnl_memory_desc_get_size(&dmd);
    size_t ws = dnnl_memory_desc_get_size(&wmd), wqs = dnnl_memory_desc_get_size(wq);
    void *src = aligned_alloc(64, (ss + 63) / 64 * 64),
         *dst = aligned_alloc(64, (ds + 63) / 64 * 64);
    float *w = aligned_alloc(64, (ws + 63) / 64 * 64);
    void *wp = aligned_alloc(64, (wqs + 63) / 64 * 64);
    /* non-zero inputs: small multiples of 1/8, exact in bf16 */
    for (size_t i = 0; i < ss / (dt == dnnl_f32 ? 4 : 2); i++) {
        float v = (float)((int)(i % 13) - 6) * 0.125f;
        if (dt == dnnl_f32) {
            ((float *)src)[i] = v;
        } else {
            uint32_t b;
            memcpy(&b, &v, 4);
            ((uint16_t *)src)[i] = (uint16_t)(b >> 16);
        }
    }
    for (size_t i = 0; i < ws / 4; i++) w[i] = (float)(i % 7) * 0.01f;
    prim_ctx c;
    CK(dnnl_stream_create(&c.s, eng, dnnl_stream_default_flags));
    dnnl_memory_t ms, mw, mwp, md;
    CK(dnnl_memory_create(&ms, &smd, eng, src));
    CK(dnnl_memory_create(&mw, &wmd, eng, w));
    CK(dnnl_memory_create(&mwp, wq, eng, wp));
    CK(dnnl_memory_create(&md, &dmd, eng, dst));
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t rp;
    CK(dnnl_reorder_primitive_desc_create(&rpd, &wmd, eng, wq, eng, NULL));
    CK(dnnl_primitive_create(&rp, rpd));
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, mw}, {DNNL_ARG_TO, mwp}};
    CK(dnnl_primitive_execute(rp, c.s, 2, ra));
    CK(dnnl_stream_wait(c.s));
    CK(dnnl_primitive_create(&c.p, pd));
    c.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, ms};
    c.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mwp};
    c.args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, md};
    double best, med;
    timeit(run_prim, &c, secs, &best, &med);
    *gf = flops(s) / best * 1e-9;
    *gfm = flops(s) / med * 1e-9;
    dnnl_primitive_destroy(c.p);
    dnnl_primitive_destroy(rp);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(mw);
    dnnl_memory_destroy(mwp);
    dnnl_memory_destroy(md);
    dnnl_stream_destroy(c.s);
    free(src);
    free(dst);
    free(w);
    free(wp);
}

/* ----------------------------------------------- through precis's impl */

typedef struct impl_ctx {
    void *state;
    pr_kernel k;
    pr_cpu_exec x;
} impl_ctx;

static void run_impl(void *v) {
    impl_ctx *c = v;
    if (pr_cpu_impl_dnnl_conv.run(c->state, &c->k, &c->x)) {
        fprintf(stderr, "run failed: %s\n", c->k.err->msg);
        exit(1);
    }
}

static void bench_impl(const shape *s, pr_dtype dt, int threads, double secs, char *impl,
                       size_t cap, double *gf, double *gfm) {
    omp_set_num_threads(threads);
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    int ni = pr_graph_add_node(g, 3, 1, 0, &e);
    pr_node *n = &g->nodes[ni];
    n->name = "conv";
    n->op_type = "Conv";
    n->domain = "";
    n->op = PR_OP_Conv;
    n->opset = 11;
    /* attributes: pads and group */
    static int64_t pads[4];
    static pr_attr attrs[2];
    for (int i = 0; i < 4; i++) pads[i] = s->pad;
    attrs[0] = (pr_attr){.name = "pads", .type = PR_ATTR_INTS, .n = 4, .ints = pads};
    attrs[1] = (pr_attr){.name = "group", .type = PR_ATTR_INT, .i = s->group};
    n->attrs = attrs;
    n->n_attrs = 2;
    const char *names[3] = {"x", "w", "y"};
    int t[3];
    for (int i = 0; i < 3; i++) t[i] = pr_graph_get_tensor(g, names[i], &e);
    pr_tensor *X = &g->tensors[t[0]], *W = &g->tensors[t[1]], *Y = &g->tensors[t[2]];
    int64_t OH = s->H + 2 * s->pad - s->k + 1, OW = s->W + 2 * s->pad - s->k + 1;
    *X = (pr_tensor){.name = "x",
                     .dtype = dt,
                     .rank = 4,
                     .dims = {s->N, s->C, s->H, s->W},
                     .producer = -1,
                     .flags = PR_T_INPUT,
                     .layout = PR_LAYOUT_NHWC};
    int64_t wn = s->M * (s->C / s->group) * s->k * s->k;
    float *wd = malloc((size_t)wn * sizeof *wd);
    for (int64_t i = 0; i < wn; i++) wd[i] = (float)(i % 7) * 0.01f;
    pr_graph_own(g, wd);
    *W = (pr_tensor){.name = "w",
                     .dtype = PRECIS_FLOAT32,
                     .rank = 4,
                     .dims = {s->M, s->C / s->group, s->k, s->k},
                     .data = wd,
                     .nbytes = (size_t)wn * 4,
                     .producer = -1,
                     .flags = PR_T_INIT};
    *Y = (pr_tensor){.name = "y",
                     .dtype = dt,
                     .rank = 4,
                     .dims = {s->N, s->M, OH, OW},
                     .producer = ni,
                     .flags = PR_T_OUTPUT,
                     .layout = PR_LAYOUT_NHWC};
    n->inputs[0] = t[0];
    n->inputs[1] = t[1];
    n->n_inputs = 2;
    n->outputs[0] = t[2];
    impl_ctx c;
    memset(&c, 0, sizeof c);
    pr_cpu_cfg cfg = {.num_threads = threads};
    if (!pr_cpu_impl_dnnl_conv.supports(g, n) ||
        pr_cpu_impl_dnnl_conv.prepare(g, n, &cfg, &c.state, &e)) {
        fprintf(stderr, "prepare failed: %s\n", e.msg);
        exit(1);
    }
    snprintf(impl, cap, "%s", pr_cpu_impl_dnnl_conv.describe(c.state));
    static pr_buf xb, yb;
    pr_buf_alloc(&xb, dt, 4, X->dims, "x", &e);
    pr_buf_alloc(&yb, dt, 4, Y->dims, "y", &e);
    for (int64_t i = 0; i < xb.numel; i++)
        pr_store_f64(xb.data, dt, i, (double)((int)(i % 13) - 6) * 0.125);
    static const pr_buf *ins[2];
    static pr_buf *outs[1];
    ins[0] = &xb;
    ins[1] = NULL;
    outs[0] = &yb;
    c.k = (pr_kernel){g, n, 2, ins, 1, outs, &e, threads};
    c.x = (pr_cpu_exec){threads, pr_dnnl_stream_create(&e), NULL, 0};
    double best, med;
    timeit(run_impl, &c, secs, &best, &med);
    *gf = flops(s) / best * 1e-9;
    *gfm = flops(s) / med * 1e-9;
    pr_cpu_impl_dnnl_conv.destroy(c.state);
    pr_dnnl_stream_destroy(c.x.dnnl_stream);
    free(c.x.scratch);
    pr_buf_free(&xb);
    pr_buf_free(&yb);
    pr_graph_destroy(g);
}

int main(int argc, char **argv) {
    double secs = 1.0;
    int only_threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
    }
    dnnl_engine_t eng;
    CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    printf("%-26s %-5s %-2s %-18s %-30s %s\n", "conv", "dtype", "th", "layout", "impl",
           "GFLOP/s best [median]");
    static const dnnl_data_type_t dts[2] = {dnnl_f32, dnnl_bf16};
    static const pr_dtype pdts[2] = {PRECIS_FLOAT32, PRECIS_BFLOAT16};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        for (int d = 0; d < 2; d++) {
            for (int th = 1; th <= 2; th++) {
                if (only_threads && th != only_threads) continue;
                char impl[96];
                double gf, gfm;
                static const dnnl_format_tag_t tags[2] = {dnnl_nhwc, dnnl_nChw16c};
                static const char *const tn[2] = {"nhwc", "nChw16c"};
                for (int l = 0; l < 2; l++) {
                    bench_raw(eng, &shapes[si], dts[d], tags[l], th, secs, impl, sizeof impl, &gf,
                              &gfm);
                    printf("%-26s %-5s %-2d %-18s %-30s %7.1f [%7.1f]\n", shapes[si].what,
                           d ? "bf16" : "f32", th, tn[l], impl, gf, gfm);
                }
                bench_impl(&shapes[si], pdts[d], th, secs, impl, sizeof impl, &gf, &gfm);
                printf("%-26s %-5s %-2d %-18s %-30s %7.1f [%7.1f]\n", shapes[si].what,
                       d ? "bf16" : "f32", th, "nhwc (dnnl.conv)", impl, gf, gfm);
                fflush(stdout);
            }
        }
    }
    dnnl_engine_destroy(eng);
    return 0;
}
