/* The INT8 step of precis_build: calibration statistics (from a matching
 * cache, or by running the calibration data through an FP32 engine of the
 * same optimized graph), QDQ insertion, optional QDQ export, lowering to the
 * int8 ops. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/calib_data.h"
#include "onnx/onnx_export.h"
#include "passes/graph_edit.h"
#include "quant/calib.h"
#include "quant/quantize.h"
#include "runtime/engine.h"
#include "runtime/tensor.h"

static precis_status hash_file(const char *path, uint64_t *h, pr_err *e) {
    FILE *f = fopen(path, "rb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "cannot read '%s'", path);
    unsigned char buf[1 << 16];
    size_t n;
    *h = PR_HASH_INIT;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) *h = pr_hash64(*h, buf, n);
    bool bad = ferror(f) != 0;
    fclose(f);
    return bad ? pr_errf(e, PRECIS_ERR_IO, "error reading '%s'", path) : PRECIS_OK;
}

/* The graph the statistics name: op types and tensor names in node order. */
static uint64_t hash_graph(const pr_graph *g) {
    uint64_t h = PR_HASH_INIT;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        h = pr_hash64(h, n->op_type, strlen(n->op_type) + 1);
        for (int j = 0; j < n->n_inputs + n->n_outputs; j++) {
            int t = j < n->n_inputs ? n->inputs[j] : n->outputs[j - n->n_inputs];
            const char *nm = t >= 0 ? g->tensors[t].name : "";
            h = pr_hash64(h, nm, strlen(nm) + 1);
        }
    }
    return h;
}

typedef struct observer {
    pr_calib_stats *stats;
    const pr_graph *target; /* names of the graph being quantized */
    int *index;             /* per engine tensor: stats index, -1 skip, -2 not looked up */
    unsigned char *chan;    /* per engine tensor: also gather per-channel max |x| */
} observer;

/* Is target tensor t the A operand of a MatMul with a constant rank-2
 * weight (a linear layer the quantizer may smooth: quantize.h)? */
static bool linear_input(const pr_graph *g, int t) {
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        if ((n->op != PR_OP_MatMul && n->op != PR_OP_FusedMatMul) || pr_node_in(n, 0) != t ||
            pr_attr_int(n, "transA", 0))
            continue;
        int w = pr_node_in(n, 1);
        if (pr_is_init(g, w) && g->tensors[w].rank == 2) return true;
    }
    return false;
}

static precis_status observe(void *user, const pr_graph *g, int t, const pr_buf *v, pr_err *e) {
    observer *ob = user;
    if (ob->index[t] == -2) {
        ob->index[t] = -1;
        const pr_tensor *x = &g->tensors[t];
        int tt = (x->flags & PR_T_INIT) ? -1 : pr_graph_find_tensor(ob->target, x->name);
        if (tt >= 0) {
            ob->index[t] = pr_calib_tensor_index(ob->stats, x->name, e);
            if (ob->index[t] < 0) return e->status;
            ob->chan[t] = linear_input(ob->target, tt);
        }
    }
    if (ob->index[t] < 0 || v->dtype != PRECIS_FLOAT32) return PRECIS_OK;
    precis_status st = pr_calib_add(ob->stats, ob->index[t], v->data, v->numel, e);
    /* rank 2-3 only: those are plain in every engine layout (rank 4 may be NHWC) */
    if (!st && ob->chan[t] && (v->rank == 2 || v->rank == 3) && v->dims[v->rank - 1] > 0)
        st = pr_calib_add_channels(ob->stats, ob->index[t], v->data, v->numel,
                                   v->dims[v->rank - 1], e);
    return st;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(int done, int total, double t0) {
    double el = now_s() - t0, eta = done ? el / done * (total - done) : 0;
    int w = 30, fill = total ? done * w / total : w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\rprecis: calibrating [%s] %d/%d batches, %.1f s, %.1f s left ", bar, done,
            total, el, eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* Run every batch of src through an FP32 engine of the same model. */
/* The batch every input of g is built for when it is one known size for
 * all (dim 0), else 0. */
static int64_t fixed_batch(const pr_graph *g) {
    int64_t b = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const pr_tensor *x = &g->tensors[g->inputs[k]];
        if (x->rank < 1 || !pr_dim_known(x->dims[0])) return 0;
        if (b && x->dims[0] != b) return 0;
        b = x->dims[0];
    }
    return b;
}

/* Copies sample i (of nb) of every input into row `row` of acc[k] (made
 * on first use: dims of the sample with batch `fixed`). */
static precis_status gather_sample(precis_tensor **in, int ni, int64_t i, int64_t nb,
                                   precis_tensor **acc, int64_t fixed, int64_t row, pr_err *err) {
    for (int k = 0; k < ni; k++) {
        const pr_buf *b = &in[k]->b;
        if (b->rank < 1 || b->dims[0] != nb)
            return pr_errf(err, PRECIS_ERR_SHAPE, "inputs of one batch differ in dim 0");
        size_t per = b->nbytes / (size_t)nb;
        if (!acc[k]) {
            int64_t d[PR_MAX_RANK];
            memcpy(d, b->dims, sizeof d);
            d[0] = fixed;
            precis_status st = pr_tensor_new(b->dtype, b->rank, d, "calibration batch", &acc[k], err);
            if (st) return st;
        }
        const pr_buf *a = &acc[k]->b;
        if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes / (size_t)fixed != per ||
            memcmp(a->dims + 1, b->dims + 1, (size_t)(b->rank - 1) * sizeof(int64_t)))
            return pr_errf(err, PRECIS_ERR_SHAPE, "samples of input %d differ in shape", k + 1);
        memcpy((char *)a->data + (size_t)row * per, (const char *)b->data + (size_t)i * per, per);
    }
    return PRECIS_OK;
}

static precis_status calibrate(precis_ctx *ctx, const char *onnx_path,
                               const precis_build_options *o, const pr_graph *g,
                               pr_calib_source *src, int batches, pr_calib_stats *stats,
                               pr_err *err) {
    precis_build_options fo = {0};
    /* fp32 on the cpu; "fp8" only stamps the fp8 rules (pr_build_engine) */
    fo.precision = o->precision && !strcmp(o->precision, "fp8") ? "fp8" : "fp32";
    fo.backend = "cpu";
    fo.num_threads = o->num_threads;
    fo.shapes = o->shapes;
    fo.layer_precision = o->layer_precision; /* the same fusions as the int8 graph */
    fo.n_layer_precision = o->n_layer_precision;
    fo.layer_output_type = o->layer_output_type;
    fo.n_layer_output_type = o->n_layer_output_type;
    fo.rules_file = o->rules_file;
    precis_engine *fe = NULL;
    precis_context *c = NULL;
    observer ob = {stats, g, NULL, NULL};
    precis_tensor *in[PRECIS_MAX_RANK * 8] = {0}, *out[256] = {0}, *acc[PRECIS_MAX_RANK * 8] = {0};
    const char *names[PRECIS_MAX_RANK * 8];
    precis_status st = pr_build_engine(ctx, onnx_path, &fo, true, &fe);
    if (st) return pr_err_prefix(err, "calibration engine");
    int ni = fe->g->n_inputs, no = fe->g->n_outputs;
    if (ni > (int)(sizeof in / sizeof in[0]) || no > (int)(sizeof out / sizeof out[0])) {
        st = pr_errf(err, PRECIS_ERR_UNSUPPORTED, "too many model inputs/outputs to calibrate");
        goto done;
    }
    for (int k = 0; k < ni; k++) names[k] = fe->g->tensors[fe->g->inputs[k]].name;
    ob.index = malloc((size_t)(fe->g->n_tensors + 1) * sizeof *ob.index);
    ob.chan = calloc((size_t)fe->g->n_tensors + 1, 1);
    if (!ob.index || !ob.chan) {
        st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    for (int t = 0; t < fe->g->n_tensors; t++) ob.index[t] = -2;
    if ((st = precis_context_create(ctx, fe, &c))) goto done;
    pr_context_observe(c, observe, &ob);
    /* a plan built for a fixed batch B > 1 calibrates on batches of B: smaller
     * batches (single samples) are gathered B samples at a time; a last
     * partial batch is left out */
    int64_t fixed = fixed_batch(fe->g);
    int64_t filled = 0, runs = 0, samples = 0;
    double t0 = now_s();
    for (int b = 0; b < batches; b++) {
        if ((st = pr_calib_source_load(src, b, in, err))) goto done;
        int64_t nb = precis_tensor_rank(in[0]) > 0 ? precis_tensor_dims(in[0])[0] : 1;
        samples += nb;
        if (fixed > 1 && nb != fixed) {
            for (int64_t i = 0; !st && i < nb; i++) {
                if ((st = gather_sample(in, ni, i, nb, acc, fixed, filled, err))) break;
                if (++filled < fixed) continue;
                filled = 0;
                runs++;
                st = precis_context_run(ctx, c, ni, names, (const precis_tensor *const *)acc, out);
                for (int k = 0; k < no; k++) precis_tensor_destroy(out[k]), out[k] = NULL;
            }
        } else {
            runs++;
            st = precis_context_run(ctx, c, ni, names, (const precis_tensor *const *)in, out);
            for (int k = 0; k < no; k++) precis_tensor_destroy(out[k]), out[k] = NULL;
        }
        for (int k = 0; k < ni; k++) precis_tensor_destroy(in[k]), in[k] = NULL;
        if (st) {
            pr_err_prefix(err, "calibration batch %d", b + 1);
            goto done;
        }
        if (o->progress) progress(b + 1, batches, t0);
    }
    if (!runs)
        st = pr_errf(err, PRECIS_ERR_INVALID_ARG,
                     "calibration: the model is built for batch %lld and the data holds %lld "
                     "sample%s: give at least %lld",
                     (long long)fixed, (long long)samples, samples == 1 ? "" : "s",
                     (long long)fixed);
    else if (filled && (o->verbose || o->progress))
        fprintf(stderr, "precis: int8: calibration left out the last %lld sample%s (batches of "
                "%lld)\n", (long long)filled, filled == 1 ? "" : "s", (long long)fixed);
done:
    for (int k = 0; k < ni; k++) precis_tensor_destroy(acc[k]);
    precis_context_destroy(c);
    precis_engine_destroy(fe);
    free(ob.index);
    free(ob.chan);
    return st;
}

/* Float activations of g (graph inputs and node outputs the calibration
 * engine computes) with no statistics in s: their count, *first the first. */
static int missing_stats(const pr_graph *g, const pr_calib_stats *s, const char **first) {
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *x = &g->tensors[t];
        if ((x->flags & PR_T_INIT) || x->dtype != PRECIS_FLOAT32 || !x->name[0]) continue;
        bool produced = (x->flags & PR_T_INPUT) != 0;
        for (int i = 0; i < g->n_nodes && !produced; i++)
            for (int j = 0; j < g->nodes[i].n_outputs; j++)
                produced |= g->nodes[i].outputs[j] == t;
        if (!produced || pr_calib_find(s, x->name) >= 0) continue;
        if (!n++) *first = x->name;
    }
    return n;
}

/* Linear-layer inputs of g (linear_input) whose statistics lack per-channel
 * maxima: their count, *first the first. */
static int missing_channels(const pr_graph *g, const pr_calib_stats *s, const char **first) {
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_calib_tensor *v = pr_calib_get(s, pr_calib_find(s, g->tensors[t].name));
        if (!v || v->n_chan > 0 || g->tensors[t].rank < 2 || g->tensors[t].rank > 3 ||
            !linear_input(g, t))
            continue;
        if (!n++) *first = g->tensors[t].name;
    }
    return n;
}

static bool file_exists(const char *p) {
    struct stat sb;
    return p && stat(p, &sb) == 0;
}

precis_status pr_build_int8(precis_ctx *ctx, const char *onnx_path, const precis_build_options *o,
                            pr_graph *g, pr_dtype qtype, bool lower, bool cuda, pr_err *err) {
    bool fp8 = qtype == PRECIS_FLOAT8E4M3FN;
    const char *qn = fp8 ? "fp8" : "int8";
    /* default percentile 99.99: entropy (TensorRT's default) collapses PP-OCRv4 rec
     * (CER 100%) and loses to percentile/minmax/mse on the other zoo models (NOTES.md) */
    pr_calib_cfg cfg = {PR_CALIB_PERCENTILE, o->percentile};
    /* fp8: max |x| (e4m3's relative step is the same over its range, so clipping
     * outliers buys little; TensorRT's FP8 recipe calibrates the max too) */
    if (fp8 && !o->calibrator) cfg.method = PR_CALIB_MINMAX;
    if (o->calibrator && !pr_calibrator_parse(o->calibrator, &cfg.method))
        return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                       "unknown calibrator '%s' (minmax, entropy, percentile or mse)",
                       o->calibrator);
    if (!(o->smooth < 1))
        return pr_errf(err, PRECIS_ERR_INVALID_ARG, "smoothing alpha %g is not in (0, 1)",
                       o->smooth);
    if (cfg.percentile != 0 && !(cfg.percentile > 0 && cfg.percentile <= 100))
        return pr_errf(err, PRECIS_ERR_INVALID_ARG, "percentile %g is not in (0, 100]",
                       cfg.percentile);
    bool have_cache = file_exists(o->calib_cache);
    if (!o->calib_data && !have_cache)
        return pr_errf(err, PRECIS_ERR_INVALID_ARG,
                       "%s needs calibration data (--calib-data) or an existing calibration "
                       "cache (--calib-cache)", qn);
    pr_calib_key key = {0};
    key.preprocess = o->calib_preprocess ? o->calib_preprocess : "";
    precis_status st = hash_file(onnx_path, &key.model, err);
    if (st) return st;
    key.graph = hash_graph(g);
    pr_calib_source *src = NULL;
    pr_calib_stats *stats = NULL, *old = NULL;
    int batches = 0;
    if (o->calib_data) {
        pr_calib_input *ins = calloc((size_t)g->n_inputs + 1, sizeof *ins);
        if (!ins) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        for (int k = 0; k < g->n_inputs; k++) {
            const pr_tensor *x = &g->tensors[g->inputs[k]];
            ins[k].name = x->name;
            ins[k].dtype = x->dtype;
            ins[k].rank = x->rank;
            for (int d = 0; d < x->rank && d < PRECIS_MAX_RANK; d++)
                ins[k].dims[d] = pr_dim_known(x->dims[d]) ? x->dims[d] : -1;
            if (x->rank > 0) ins[k].dims[0] = -1; /* any batch: calibrate() gathers them */
        }
        st = pr_calib_source_open(o->calib_data, o->calib_preprocess, ins, g->n_inputs, &src, err);
        free(ins);
        if (st) return pr_err_prefix(err, "--calib-data");
        batches = pr_calib_source_batches(src);
        if (o->calib_batches > 0 && o->calib_batches < batches) batches = o->calib_batches;
        key.data = pr_calib_source_hash(src);
        key.samples = (uint64_t)batches;
    }
    if (have_cache) {
        pr_calib_key got, want = key;
        want.graph = 0; /* another optimized graph is fine if it has every tensor this one needs */
        st = pr_calib_cache_load(o->calib_cache, src ? &want : NULL, &stats, &got, err);
        if (!st && !src && got.model != key.model)
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG,
                         "calibration cache '%s': it was made for another model", o->calib_cache);
        if (st) goto done; /* the loader's messages name the file */
        const char *miss = NULL;
        int n_miss = got.graph == key.graph ? 0 : missing_stats(g, stats, &miss);
        /* a cache from before smoothing lacks the per-channel maxima: recalibrate when the
         * data is here (else those tensors are quantized unsmoothed) */
        int n_chan = !n_miss && src && o->smooth >= 0 && !fp8 ? missing_channels(g, stats, &miss) : 0;
        if (n_miss && !src) {
            st = pr_errf(err, PRECIS_ERR_INVALID_ARG,
                         "calibration cache '%s' was made for another optimized graph (other "
                         "precision rules or precis version) and lacks %d tensor%s this build "
                         "quantizes (e.g. '%s'): pass --calib-data to recalibrate",
                         o->calib_cache, n_miss, n_miss > 1 ? "s" : "", miss);
            goto done;
        }
        if (n_miss || n_chan) {
            if ((o->progress || o->verbose) && n_miss)
                fprintf(stderr, "precis: int8: calibration cache '%s' lacks %d tensor%s of this "
                        "graph (e.g. '%s'; other precision rules?): recalibrating\n",
                        o->calib_cache, n_miss, n_miss > 1 ? "s" : "", miss);
            else if (o->progress || o->verbose)
                fprintf(stderr, "precis: int8: calibration cache '%s' lacks per-channel "
                        "statistics (e.g. '%s', for smoothing): recalibrating\n",
                        o->calib_cache, miss);
            old = stats; /* its other tensors are kept: same model and data, same values */
            stats = NULL;
        } else if (o->verbose) {
            fprintf(stderr, "precis: int8: statistics of %d tensors from '%s'%s\n",
                    pr_calib_count(stats), o->calib_cache,
                    got.graph != key.graph ? " (made for another optimized graph; it has every "
                                             "tensor this one needs)"
                                           : "");
        }
    }
    if (!stats) {
        if (!(stats = pr_calib_create())) {
            st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
            goto done;
        }
        if ((st = calibrate(ctx, onnx_path, o, g, src, batches, stats, err))) goto done;
        for (int i = 0; old && i < pr_calib_count(old); i++) {
            const pr_calib_tensor *v = pr_calib_get(old, i);
            if (pr_calib_find(stats, v->name) >= 0) continue;
            int k = pr_calib_tensor_index(stats, v->name, err);
            if (k < 0 || (st = pr_calib_set(stats, k, v, err))) {
                st = err->status;
                goto done;
            }
        }
        if (o->calib_cache && (st = pr_calib_cache_save(stats, &key, o->calib_cache, err)))
            goto done;
    }
    /* fp8: no smoothing (e4m3's exponent covers outlier channels; the Mul would be a
     * step of its own on cuda) */
    const char *sgn = getenv("PRECIS_CUDA_INT8_SIGNED"); /* the int8-only grid (quantize.h) */
    pr_quant_opts qo = {stats, cfg, o->verbose, cuda,
                        fp8 || o->smooth < 0 ? 0.0f
                        : o->smooth > 0      ? (float)o->smooth
                                             : PR_SMOOTH_ALPHA,
                        PR_SMOOTH_SPREAD, qtype, cuda && sgn && !strcmp(sgn, "1")};
    pr_quant_report rep;
    if ((st = pr_quantize_insert(g, &qo, &rep, err))) goto done;
    if (o->verbose)
        fprintf(stderr, "precis: %s (%s): %d compute nodes %s, %d float; %d elementwise/pool "
                "nodes int8; %d activations (%d smoothed), %d weights quantized\n", qn,
                pr_calibrator_name(cfg.method), rep.compute_nodes, qn, rep.float_nodes,
                rep.elem_nodes, rep.tensors, rep.smoothed, rep.weights);
    if (o->qdq_path && (st = pr_onnx_save(g, o->qdq_path, err))) goto done;
    if (lower) st = pr_quantize_lower(g, o->verbose, cuda, err);
done:
    pr_calib_destroy(old);
    pr_calib_destroy(stats);
    pr_calib_source_close(src);
    return st;
}
