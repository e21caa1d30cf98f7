/* Engines and execution contexts: the memory planner; engines built from the
 * small test models agree with the ref session; plans round-trip through a
 * file; broken plans and out-of-range inputs are refused; many contexts on
 * one engine at once give identical results (run under TSan in CI). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "precis/precis.h"
#include "ir/graph.h"
#include "plan/plan_file.h"
#include "runtime/mem_plan.h"
#include "runtime/tactics.h"

static void test_mem_plan(void) {
    /* a chain a->b->c->d with sizes; b aliases a; e lives across everything */
    pr_mem_item it[] = {
        {1000, 0, 1, -1}, {1000, 1, 2, 0}, {500, 2, 3, -1}, {700, 3, 4, -1}, {64, 0, 4, -1},
    };
    size_t off[5];
    size_t total = pr_mem_plan(it, 5, off);
    CHECK(total != SIZE_MAX);
    CHECK(off[1] == off[0]);
    for (int i = 0; i < 5; i++) CHECK(off[i] % 64 == 0);
    /* slots alive at the same time: {a,b} [0,2] with c [2,3] and e; c with d and e; d with e */
    int pairs[][2] = {{0, 2}, {0, 4}, {2, 3}, {2, 4}, {3, 4}};
    for (int k = 0; k < 5; k++) {
        int i = pairs[k][0], j = pairs[k][1];
        CHECK(off[i] + it[i].bytes <= off[j] || off[j] + it[j].bytes <= off[i]);
    }
    CHECK(total <= 1024 + 512 + 704 + 64 + 1024);
}

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

static double max_rel(const precis_tensor *a, const precis_tensor *b) {
    if (precis_tensor_numel(a) != precis_tensor_numel(b)) return INFINITY;
    const float *x = precis_tensor_data_const(a), *y = precis_tensor_data_const(b);
    double m = 0, s = 0;
    for (int64_t i = 0; i < precis_tensor_numel(a); i++) s = fmax(s, fabs(y[i]));
    for (int64_t i = 0; i < precis_tensor_numel(a); i++) m = fmax(m, fabs(x[i] - y[i]));
    return m / (s > 0 ? s : 1);
}

/* Runs model on the ref session and on an engine of the given precision. */
static void check_model(const char *path, const char *input, int rank, const int64_t *dims,
                        const char *precision, double tol) {
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m = NULL;
    precis_session *s = NULL;
    precis_engine *e = NULL, *e2 = NULL;
    precis_context *c = NULL, *c2 = NULL;
    precis_tensor *x = rand_input(ctx, rank, dims, 7), *ref[4] = {0}, *got[4] = {0},
                  *got2[4] = {0};
    const char *names[] = {input};
    const precis_tensor *in[] = {x};
    CHECK(precis_model_load(ctx, path, &m) == PRECIS_OK);
    CHECK(precis_session_create(ctx, m, NULL, &s) == PRECIS_OK);
    CHECK(precis_session_run(ctx, s, 1, names, in, ref) == PRECIS_OK);
    precis_build_options o = {.precision = precision, .backend = "cpu", .num_threads = 2};
    /* the save/load check below compares runs bit for bit: the timed choices
     * (Winograd or direct for conv2, 16->16 3x3; the batch-split trial of runs
     * 1-6) are made before the save and travel in the plan (runtime/tactics.h) */
    precis_status st = precis_build(ctx, path, &o, &e);
    CHECK(st == PRECIS_OK);
    if (st) fprintf(stderr, "%s %s: %s\n", path, precision, precis_last_error(ctx));
    if (!e) goto done;
    CHECK(precis_context_create(ctx, e, &c) == PRECIS_OK);
    int nout = precis_engine_num_outputs(e);
    for (int rep = 0; rep < 7; rep++) { /* planning run, arena runs, the split trial */
        for (int k = 0; k < nout; k++) precis_tensor_destroy(got[k]), got[k] = NULL;
        st = precis_context_run(ctx, c, 1, names, in, got);
        CHECK(st == PRECIS_OK);
        if (st) {
            fprintf(stderr, "%s %s run: %s\n", path, precision, precis_last_error(ctx));
            goto done;
        }
        for (int k = 0; k < nout; k++) {
            double err = max_rel(got[k], ref[k]);
            CHECK(err <= tol);
            if (!(err <= tol)) fprintf(stderr, "%s %s output %d: rel err %g\n", path, precision, k, err);
        }
    }
    CHECK(precis_context_arena_bytes(c) > 0);
    /* save, load, same results bit for bit */
    char plan[] = "/tmp/precis-test-XXXXXX";
    int fd = mkstemp(plan);
    close(fd);
    CHECK(precis_engine_save(ctx, e, plan) == PRECIS_OK);
    if (!strcmp(precision, "fp32") && strstr(path, "cnn")) { /* both choices were timed */
        pr_graph *pg = NULL;
        pr_err pe = {0};
        CHECK(pr_plan_load(plan, &pg, &pe) == PRECIS_OK);
        const char *tac = NULL;
        for (int i = 0; pg && i < pg->n_metadata; i++)
            if (!strcmp(pg->metadata[i].key, "precis.tactics")) tac = pg->metadata[i].value;
        CHECK(tac && strstr(tac, "conv.winograd ") && strstr(tac, "batch.split t2 "));
        if (!(tac && strstr(tac, "conv.winograd ") && strstr(tac, "batch.split t2 ")))
            fprintf(stderr, "precis.tactics: '%s'\n", tac ? tac : "(none)");
        pr_graph_destroy(pg);
    }
    st = precis_engine_load(ctx, plan, 0, &e2);
    CHECK(st == PRECIS_OK);
    if (st) fprintf(stderr, "load: %s\n", precis_last_error(ctx));
    if (e2) {
        CHECK(precis_engine_num_steps(e2) == precis_engine_num_steps(e));
        CHECK(precis_context_create(ctx, e2, &c2) == PRECIS_OK);
        CHECK(precis_context_run(ctx, c2, 1, names, in, got2) == PRECIS_OK);
        for (int k = 0; k < nout && got2[k]; k++)
            CHECK(memcmp(precis_tensor_data(got2[k]), precis_tensor_data(got[k]),
                         precis_tensor_nbytes(got[k])) == 0);
    }
    /* a truncated plan is refused with a message */
    FILE *f = fopen(plan, "r+b");
    if (f) {
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fclose(f);
        CHECK(truncate(plan, len / 2) == 0);
        precis_engine *bad = NULL;
        CHECK(precis_engine_load(ctx, plan, 0, &bad) == PRECIS_ERR_PARSE);
        CHECK(bad == NULL && strlen(precis_last_error(ctx)) > 0);
    }
    unlink(plan);
done:
    for (int k = 0; k < 4; k++) {
        precis_tensor_destroy(ref[k]);
        precis_tensor_destroy(got[k]);
        precis_tensor_destroy(got2[k]);
    }
    precis_tensor_destroy(x);
    precis_context_destroy(c);
    precis_context_destroy(c2);
    precis_engine_destroy(e);
    precis_engine_destroy(e2);
    precis_session_destroy(s);
    precis_model_destroy(m);
    precis_ctx_destroy(ctx);
}

/* ---- concurrency: contexts on one engine in parallel threads */
typedef struct job {
    const precis_engine *e;
    const precis_tensor *x;
    precis_tensor *out;
    int ok;
} job;

static void *worker(void *arg) {
    job *j = arg;
    precis_ctx *ctx = precis_ctx_create();
    precis_context *c = NULL;
    const char *names[] = {"input"};
    const precis_tensor *in[] = {j->x};
    precis_tensor *outs[2] = {0};
    j->ok = precis_context_create(ctx, j->e, &c) == PRECIS_OK;
    for (int r = 0; r < 5 && j->ok; r++) {
        precis_tensor_destroy(outs[0]);
        precis_tensor_destroy(outs[1]);
        outs[0] = outs[1] = NULL;
        j->ok = precis_context_run(ctx, c, 1, names, in, outs) == PRECIS_OK;
    }
    j->out = outs[0];
    precis_tensor_destroy(outs[1]);
    precis_context_destroy(c);
    precis_ctx_destroy(ctx);
    return NULL;
}

static void test_concurrent(void) {
    precis_ctx *ctx = precis_ctx_create();
    precis_engine *e = NULL;
    precis_build_options o = {.precision = "fp32", .backend = "cpu", .num_threads = 1,
                              .shapes = "input:1x3x16x16/2x3x16x16/4x3x16x16"};
    CHECK(precis_build(ctx, "data/small_cnn.onnx", &o, &e) == PRECIS_OK);
    if (!e) {
        fprintf(stderr, "build: %s\n", precis_last_error(ctx));
        precis_ctx_destroy(ctx);
        return;
    }
    int64_t dims[] = {2, 3, 16, 16};
    precis_tensor *x = rand_input(ctx, 4, dims, 3);
    enum { N = 4 };
    pthread_t th[N];
    job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (job){e, x, NULL, 0};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        CHECK(jobs[i].ok && jobs[i].out);
        if (i && jobs[i].out && jobs[0].out)
            CHECK(memcmp(precis_tensor_data(jobs[i].out), precis_tensor_data(jobs[0].out),
                         precis_tensor_nbytes(jobs[0].out)) == 0);
    }
    /* outside the profile: refused, naming the input and the range */
    int64_t big[] = {8, 3, 16, 16};
    precis_tensor *y = rand_input(ctx, 4, big, 5);
    precis_context *c = NULL;
    precis_tensor *outs[2] = {0};
    const char *names[] = {"input"};
    const precis_tensor *in[] = {y};
    CHECK(precis_context_create(ctx, e, &c) == PRECIS_OK);
    CHECK(precis_context_run(ctx, c, 1, names, in, outs) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(precis_last_error(ctx), "outside the built range") != NULL);
    for (int i = 0; i < N; i++) precis_tensor_destroy(jobs[i].out);
    precis_context_destroy(c);
    precis_tensor_destroy(x);
    precis_tensor_destroy(y);
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
}

/* ---- batch splitting: per-sample runs agree with whole ones; models that
 * mix samples are never split */
static void split_case(const char *path, const char *input, int rank, const int64_t *dims,
                       int threads, const char *shapes, int want_workers) {
    precis_ctx *ctx = precis_ctx_create();
    precis_engine *e = NULL;
    precis_context *c = NULL;
    precis_tensor *x = rand_input(ctx, rank, dims, 11), *whole[4] = {0}, *split[4] = {0};
    const char *names[] = {input};
    const precis_tensor *in[] = {x};
    precis_build_options o = {.precision = "fp32", .backend = "cpu", .num_threads = threads,
                              .shapes = shapes};
    CHECK(precis_build(ctx, path, &o, &e) == PRECIS_OK);
    if (!e) {
        fprintf(stderr, "%s: %s\n", path, precis_last_error(ctx));
        goto done;
    }
    CHECK(precis_context_create(ctx, e, &c) == PRECIS_OK);
    int nout = precis_engine_num_outputs(e);
    setenv("PRECIS_BATCH_SPLIT", "0", 1);
    CHECK(precis_context_run(ctx, c, 1, names, in, whole) == PRECIS_OK);
    CHECK(precis_context_split_workers(c) == 0);
    setenv("PRECIS_BATCH_SPLIT", "1", 1); /* always where allowed (no timed choice) */
    for (int rep = 0; rep < 3; rep++) { /* the workers' planning run, then arena runs */
        for (int k = 0; k < nout; k++) precis_tensor_destroy(split[k]), split[k] = NULL;
        precis_status st = precis_context_run(ctx, c, 1, names, in, split);
        CHECK(st == PRECIS_OK);
        if (st) {
            fprintf(stderr, "%s split run: %s\n", path, precis_last_error(ctx));
            break;
        }
        CHECK(precis_context_split_workers(c) == want_workers);
        if (precis_context_split_workers(c) != want_workers)
            fprintf(stderr, "%s: %d workers, want %d\n", path, precis_context_split_workers(c),
                    want_workers);
        for (int k = 0; k < nout; k++) {
            CHECK(precis_tensor_rank(split[k]) == precis_tensor_rank(whole[k]));
            for (int d = 0; d < precis_tensor_rank(whole[k]); d++)
                CHECK(precis_tensor_dims(split[k])[d] == precis_tensor_dims(whole[k])[d]);
            double err = max_rel(split[k], whole[k]);
            CHECK(err <= 1e-5);
            if (!(err <= 1e-5)) fprintf(stderr, "%s output %d: split vs whole %g\n", path, k, err);
        }
    }
    if (want_workers) CHECK(precis_context_arena_bytes(c) > 0);
    if (!want_workers && dims[0] > 1) CHECK(precis_context_split_note(c)[0] != 0);
done:
    unsetenv("PRECIS_BATCH_SPLIT");
    for (int k = 0; k < 4; k++) precis_tensor_destroy(whole[k]), precis_tensor_destroy(split[k]);
    precis_tensor_destroy(x);
    precis_context_destroy(c);
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
}

/* The default (timed) mode: runs 1-6 alternate whole and split (3-6 timed), then the faster. */
static void test_split_auto(void) {
    precis_ctx *ctx = precis_ctx_create();
    precis_engine *e = NULL;
    precis_context *c = NULL;
    int64_t dims[] = {4, 3, 16, 16};
    precis_tensor *x = rand_input(ctx, 4, dims, 5), *out[2] = {0};
    const char *names[] = {"input"};
    const precis_tensor *in[] = {x};
    precis_build_options o = {.precision = "fp32", .backend = "cpu", .num_threads = 2};
    unsetenv("PRECIS_BATCH_SPLIT");
    CHECK(precis_build(ctx, "data/small_cnn.onnx", &o, &e) == PRECIS_OK);
    if (e) CHECK(precis_context_create(ctx, e, &c) == PRECIS_OK);
    int workers[8] = {0};
    for (int r = 0; c && r < 8; r++) {
        CHECK(precis_context_run(ctx, c, 1, names, in, out) == PRECIS_OK);
        workers[r] = precis_context_split_workers(c);
        for (int k = 0; k < 2; k++) precis_tensor_destroy(out[k]), out[k] = NULL;
    }
    for (int r = 0; r < 6; r++) CHECK(workers[r] == (r % 2 ? 2 : 0));
    CHECK(workers[6] == workers[7] && (workers[6] == 2 || workers[6] == 0));
    if (c && workers[7] == 0) CHECK(strstr(precis_context_split_note(c), "faster") != NULL);
    printf("batch split, timed choice on small_cnn b4: %s\n",
           workers[7] ? "split" : precis_context_split_note(c));
    precis_tensor_destroy(x);
    precis_context_destroy(c);
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
}

static void test_batch_split(void) {
    int64_t cnn4[] = {4, 3, 16, 16}, cnn3[] = {3, 3, 16, 16}, cnn1[] = {1, 3, 16, 16};
    int64_t mlp[] = {3, 5, 32}, sm[] = {4, 8}, tr[] = {3, 4, 6};
    split_case("data/small_cnn.onnx", "input", 4, cnn4, 2, NULL, 2);
    split_case("data/small_cnn.onnx", "input", 4, cnn3, 2, NULL, 2); /* 2 + 1 samples */
    split_case("data/small_cnn.onnx", "input", 4, cnn3, 1, NULL, 1);
    split_case("data/small_cnn.onnx", "input", 4, cnn1, 2, NULL, 0); /* batch 1: nothing to split */
    split_case("data/small_cnn.onnx", "input", 4, cnn4, 2, "input:4x3x16x16/4x3x16x16/4x3x16x16",
               2);
    split_case("data/se_cnn.onnx", "input", 4, (int64_t[]){2, 8, 12, 12}, 2, NULL, 2);
    split_case("data/small_mlp.onnx", "x", 3, mlp, 2, NULL, 2);
    split_case("data/batch_softmax.onnx", "x", 2, sm, 2, NULL, 0);   /* Softmax over the batch */
    split_case("data/batch_transpose.onnx", "x", 3, tr, 2, NULL, 0); /* moved, then mixed */
    split_case("data/batch_move.onnx", "x", 3, tr, 2, NULL, 2);      /* moved and back */
    /* the reshape's shape is computed at run time (Shape: each worker
     * computes its own), or folded to a constant holding the batch (fixed
     * shapes: patched in the workers) */
    split_case("data/batch_reshape.onnx", "x", 3, tr, 2, NULL, 2);
    split_case("data/batch_reshape.onnx", "x", 3, tr, 2, "x:3x4x6/3x4x6/3x4x6", 2);
    /* the batch size itself used as data: a worker would see 1 */
    split_case("data/batch_count.onnx", "x", 3, tr, 2, NULL, 0);
}

/* A Reshape whose shape comes from Shape/Slice/Concat: computed from the
 * input's shape only, so after the planning run of a signature the context
 * reuses the steps' output shapes (shapes_static); a new batch replans.
 * Outputs checked against relu(x) flattened, batches 3, 3, 2, 2, 3. */
static void test_shape_cache(void) {
    precis_ctx *ctx = precis_ctx_create();
    precis_engine *e = NULL;
    precis_context *c = NULL;
    precis_build_options o = {.precision = "fp32", .backend = "cpu", .num_threads = 1};
    setenv("PRECIS_BATCH_SPLIT", "0", 1);
    CHECK(precis_build(ctx, "data/batch_reshape.onnx", &o, &e) == PRECIS_OK);
    if (e) CHECK(precis_context_create(ctx, e, &c) == PRECIS_OK);
    static const int64_t batches[5] = {3, 3, 2, 2, 3};
    for (int r = 0; c && r < 5; r++) {
        int64_t dims[3] = {batches[r], 4, 6};
        precis_tensor *x = rand_input(ctx, 3, dims, 11u + (unsigned)r), *y = NULL;
        const char *names[] = {"x"};
        const precis_tensor *in[] = {x};
        CHECK(precis_context_run(ctx, c, 1, names, in, &y) == PRECIS_OK);
        if (y) {
            CHECK(precis_tensor_rank(y) == 2 && precis_tensor_dims(y)[0] == batches[r] &&
                  precis_tensor_dims(y)[1] == 24);
            const float *xv = precis_tensor_data_const(x), *yv = precis_tensor_data_const(y);
            int bad = 0;
            for (int64_t i = 0; i < batches[r] * 24 && precis_tensor_numel(y) == batches[r] * 24; i++)
                bad += yv[i] != (xv[i] > 0 ? xv[i] : 0.0f);
            CHECK(bad == 0);
        }
        precis_tensor_destroy(x);
        precis_tensor_destroy(y);
    }
    unsetenv("PRECIS_BATCH_SPLIT");
    precis_context_destroy(c);
    precis_engine_destroy(e);
    precis_ctx_destroy(ctx);
}

/* The table of timed choices: text round trip, refused keys and lines. */
static void test_tactics(void) {
    pr_tactics *t = pr_tactics_create(), *u = pr_tactics_create();
    pr_err e = {0};
    CHECK(t && u);
    if (!t || !u) goto done;
    CHECK(pr_tactics_get(t, "a") == -1 && pr_tactics_get(NULL, "a") == -1);
    CHECK(pr_tactics_put(t, "conv.winograd y 1x8x8 t2", 1));
    CHECK(pr_tactics_put(t, "batch.split t2 4 8 3 16 16", 0));
    CHECK(pr_tactics_put(t, "conv.winograd y 1x8x8 t2", 0)); /* replaced */
    CHECK(!pr_tactics_put(t, "a=b", 1) && !pr_tactics_put(t, "a\nb", 1) && !pr_tactics_put(t, "", 1));
    CHECK(!pr_tactics_put(t, "neg", -1));
    char *txt = pr_tactics_text(t);
    CHECK(txt && !strcmp(txt, "conv.winograd y 1x8x8 t2=0\nbatch.split t2 4 8 3 16 16=0\n"));
    CHECK(pr_tactics_parse(u, txt, &e) == PRECIS_OK);
    CHECK(pr_tactics_get(u, "conv.winograd y 1x8x8 t2") == 0);
    CHECK(pr_tactics_get(u, "batch.split t2 4 8 3 16 16") == 0);
    free(txt);
    const char *bad[] = {"novalue\n", "=1\n", "k=x\n", "k=1junk\n", "k=-3\n", "ok=1\nk=\n"};
    for (int i = 0; i < (int)(sizeof bad / sizeof *bad); i++) {
        pr_err_clear(&e);
        CHECK(pr_tactics_parse(u, bad[i], &e) == PRECIS_ERR_PARSE);
        CHECK(strstr(e.msg, "precis.tactics, line ") != NULL);
    }
    CHECK(pr_tactics_parse(u, "", &e) == PRECIS_OK && pr_tactics_parse(u, NULL, &e) == PRECIS_OK);
done:
    pr_tactics_destroy(t);
    pr_tactics_destroy(u);
}

static void test_bad_options(void) {
    precis_ctx *ctx = precis_ctx_create();
    precis_engine *e = NULL;
    precis_build_options o = {.precision = "int4", .num_threads = 1};
    CHECK(precis_build(ctx, "data/small_cnn.onnx", &o, &e) == PRECIS_ERR_INVALID_ARG);
    o = (precis_build_options){.precision = "fp32", .num_threads = 1, .shapes = "nosuch:1x3"};
    CHECK(precis_build(ctx, "data/small_cnn.onnx", &o, &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(precis_last_error(ctx), "nosuch") != NULL);
    o = (precis_build_options){.precision = "fp32", .num_threads = 1, .shapes = "input:4x3x16x16/2x3x16x16/8x3x16x16"};
    CHECK(precis_build(ctx, "data/small_cnn.onnx", &o, &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(e == NULL);
    precis_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--concurrent") == 0) { /* the TSan run */
        test_concurrent();
        return check_report("test_engine --concurrent");
    }
    test_mem_plan();
    test_bad_options();
    test_tactics();
    int64_t cnn[] = {2, 3, 16, 16}, mlp[] = {2, 5, 32};
    check_model("data/small_cnn.onnx", "input", 4, cnn, "fp32", 1e-5);
    check_model("data/small_cnn.onnx", "input", 4, cnn, "bf16", 3e-2);
    check_model("data/small_cnn.onnx", "input", 4, cnn, "fp16", 5e-3);
    check_model("data/small_mlp.onnx", "x", 3, mlp, "fp32", 1e-5);
    check_model("data/small_mlp.onnx", "x", 3, mlp, "bf16", 3e-2);
    check_model("data/small_mlp.onnx", "x", 3, mlp, "fp16", 5e-3);
    test_concurrent();
    test_batch_split();
    test_split_auto();
    test_shape_cache();
    return check_report("test_engine");
}
