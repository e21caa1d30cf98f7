/*
 * precis — mixed-precision inference optimizer and runtime.
 *
 * Public C API. Everything a program (including the `precis` CLI) needs is
 * declared here; nothing else under include/ is public.
 *
 * Conventions
 *  - Every call that can fail returns a precis_status. On failure a one-line
 *    message is stored in the precis_ctx passed to (or owning) the call and is
 *    read with precis_last_error(ctx). The library never exits or aborts on
 *    bad input.
 *  - Handles are opaque. Every type has a _create/_load and a _destroy.
 *    Destroy functions accept NULL.
 *  - Borrowed pointers are documented with "valid until ...".
 *  - A precis_ctx is not thread-safe: use one per thread.
 *
 * Tensors are dense, row-major (C order). Shapes are arrays of int64 dims.
 */
#ifndef PRECIS_PRECIS_H
#define PRECIS_PRECIS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PRECIS_VERSION_MAJOR 0
#define PRECIS_VERSION_MINOR 1
#define PRECIS_VERSION_PATCH 0

/* Maximum tensor rank supported anywhere in precis. */
#define PRECIS_MAX_RANK 8

/* Status codes. These are also the CLI's exit codes (see precis --help). */
typedef enum precis_status {
    PRECIS_OK = 0,
    PRECIS_ERR_INVALID_ARG = 2, /* bad argument, bad input tensor (name, shape, dtype) */
    PRECIS_ERR_IO = 3,          /* file missing, unreadable, unwritable */
    PRECIS_ERR_PARSE = 4,       /* malformed model, protobuf, .npy */
    PRECIS_ERR_UNSUPPORTED = 5, /* op, attribute or dtype precis cannot run */
    PRECIS_ERR_SHAPE = 6,       /* inconsistent shapes or types in the graph */
    PRECIS_ERR_OOM = 7,         /* allocation failed or a size exceeds limits */
    PRECIS_ERR_INTERNAL = 8     /* a bug in precis */
} precis_status;

/* Element types; the values are ONNX's TensorProto.DataType values. */
typedef enum precis_dtype {
    PRECIS_UNDEFINED = 0,
    PRECIS_FLOAT32 = 1,
    PRECIS_UINT8 = 2,
    PRECIS_INT8 = 3,
    PRECIS_UINT16 = 4,
    PRECIS_INT16 = 5,
    PRECIS_INT32 = 6,
    PRECIS_INT64 = 7,
    PRECIS_STRING = 8,
    PRECIS_BOOL = 9,
    PRECIS_FLOAT16 = 10,
    PRECIS_FLOAT64 = 11,
    PRECIS_UINT32 = 12,
    PRECIS_UINT64 = 13,
    PRECIS_BFLOAT16 = 16,
    PRECIS_FLOAT8E4M3FN = 17 /* e4m3, finite only (max 448), ONNX FLOAT8E4M3FN */
} precis_dtype;

/* "float32", "int64", ... ; "undefined" for unknown values. Static string. */
const char *precis_dtype_name(precis_dtype dt);
/* Size of one element in bytes, 0 for UNDEFINED/STRING/unknown. */
size_t precis_dtype_size(precis_dtype dt);

/* Library version string, e.g. "0.1.0". */
const char *precis_version(void);

/* ---------------------------------------------------------------- context */

typedef struct precis_ctx precis_ctx;

/* Returns NULL only if memory is exhausted. */
precis_ctx *precis_ctx_create(void);
void precis_ctx_destroy(precis_ctx *ctx);
/* The message of the last failed call made with this ctx; "" if none.
 * Valid until the next call that uses ctx. */
const char *precis_last_error(const precis_ctx *ctx);
precis_status precis_last_status(const precis_ctx *ctx);

/* ----------------------------------------------------------------- tensor */

typedef struct precis_tensor precis_tensor;

/* A new tensor owning zero-initialised storage for prod(dims) elements.
 * rank 0 is a scalar (dims may be NULL). */
precis_status precis_tensor_create(precis_ctx *ctx, precis_dtype dt, int rank,
                                   const int64_t *dims, precis_tensor **out);
void precis_tensor_destroy(precis_tensor *t);
precis_dtype precis_tensor_dtype(const precis_tensor *t);
int precis_tensor_rank(const precis_tensor *t);
/* Valid until the tensor is destroyed. */
const int64_t *precis_tensor_dims(const precis_tensor *t);
int64_t precis_tensor_numel(const precis_tensor *t);
size_t precis_tensor_nbytes(const precis_tensor *t);
/* Element storage, row-major. Valid until the tensor is destroyed. */
void *precis_tensor_data(precis_tensor *t);
const void *precis_tensor_data_const(const precis_tensor *t);

/* NumPy .npy (format 1.0/2.0/3.0, little-endian, C order; dtypes f2 f4 f8 i1 i2
 * i4 i8 u1 u2 u4 u8 b1). */
precis_status precis_tensor_load_npy(precis_ctx *ctx, const char *path, precis_tensor **out);
precis_status precis_tensor_save_npy(precis_ctx *ctx, const precis_tensor *t, const char *path);
/* A serialized ONNX TensorProto (the format of ONNX's test data input_0.pb). */
precis_status precis_tensor_load_pb(precis_ctx *ctx, const char *path, precis_tensor **out);

/* ------------------------------------------------------------------ model */

typedef struct precis_model precis_model;

/* Load an ONNX model file. External data files are resolved relative to the
 * model's directory; absolute paths and paths leaving it are refused. */
precis_status precis_model_load(precis_ctx *ctx, const char *path, precis_model **out);
/* Same from memory; base_dir (may be NULL) is where external data lives. */
precis_status precis_model_load_memory(precis_ctx *ctx, const void *buf, size_t len,
                                       const char *base_dir, precis_model **out);
void precis_model_destroy(precis_model *m);

/* Description of a graph input or output. Dims: >= 0 known, -1 unknown; a
 * symbolic dim has dims[i] == -1 and dim_names[i] != NULL. */
typedef struct precis_value_info {
    const char *name;
    precis_dtype dtype;
    int rank; /* -1: unknown rank */
    int64_t dims[PRECIS_MAX_RANK];
    const char *dim_names[PRECIS_MAX_RANK];
} precis_value_info;

/* Inputs exclude initializers. The info's strings are valid until the model
 * is destroyed. */
int precis_model_num_inputs(const precis_model *m);
int precis_model_num_outputs(const precis_model *m);
precis_status precis_model_input(const precis_model *m, int i, precis_value_info *out);
precis_status precis_model_output(const precis_model *m, int i, precis_value_info *out);

/* Summary for `precis inspect`. Strings valid until the model is destroyed. */
typedef struct precis_model_summary {
    int64_t ir_version;
    const char *producer_name;
    const char *producer_version;
    const char *graph_name;
    int num_nodes;
    int num_initializers;    /* initializers plus Constant-node tensors */
    int64_t num_parameters;  /* elements in initializers and Constant nodes */
    int64_t parameter_bytes;
    int num_opsets;
    const char *const *opset_domains; /* "" is the default ai.onnx domain */
    const int64_t *opset_versions;
    int num_op_types;                 /* op histogram, sorted by count desc */
    const char *const *op_types;
    const int *op_counts;
    const int *op_supported;          /* 1 if precis can run the op type */
    int num_metadata;
    const char *const *metadata_keys;
    const char *const *metadata_values;
} precis_model_summary;

precis_status precis_model_summarize(precis_ctx *ctx, const precis_model *m,
                                     precis_model_summary *out);

/* Run shape and type inference over the graph with the dims known so far
 * (symbolic dims stay symbolic). Called by precis_model_load already; exposed
 * for tools. */
precis_status precis_model_infer_shapes(precis_ctx *ctx, precis_model *m);

/* --------------------------------------------------------------- session */

typedef struct precis_session precis_session;

typedef struct precis_session_options {
    const char *backend; /* "ref" (default when NULL) */
    int num_threads;     /* 0: backend default */
} precis_session_options;

/* A session executes a model. The model must outlive the session. */
precis_status precis_session_create(precis_ctx *ctx, const precis_model *m,
                                    const precis_session_options *opt, precis_session **out);
void precis_session_destroy(precis_session *s);

/* Run once. inputs[i] is bound to the graph input named names[i]; every graph
 * input must be given exactly once. On success outputs[j] receives a new tensor
 * (caller destroys) for graph output j, in model output order; outputs must
 * have room for precis_model_num_outputs() entries. Errors name the input and
 * the expected versus given dtype/shape. */
precis_status precis_session_run(precis_ctx *ctx, precis_session *s, int n_inputs,
                                 const char *const *names, const precis_tensor *const *inputs,
                                 precis_tensor **outputs);

/* ----------------------------------------------------------------- engine */

/* An engine is a model compiled into a plan: optimized graph (fused
 * kernels, chosen precision and layouts), weights and the prepared kernels
 * of a backend. It is immutable once built or loaded and may be shared by
 * any number of threads; each thread runs it through its own execution
 * context. */
typedef struct precis_engine precis_engine;
typedef struct precis_context precis_context;

typedef struct precis_build_options {
    const char *precision; /* "fp32" (default when NULL), "bf16", "fp16", "int8" */
    const char *backend;   /* "cpu" (default when NULL), "cuda" (NVIDIA GPU: fp32, fp16,
                            * bf16; needs a GPU to build and to load) or "ref" (unoptimized
                            * oracle) */
    int num_threads;       /* threads one run uses; 0: all cores */
    /* Shape profile for dynamic inputs, TensorRT-style:
     * "name:MIN/OPT/MAX[,name:...]", each a dims list like 1x3x224x224 (or
     * one dims list for min = opt = max). Dims fixed by a profile are
     * specialized at build time; inputs outside [MIN, MAX] are refused at
     * run time. NULL: dynamic dims stay dynamic, any size is accepted. */
    const char *shapes;
    int verbose;           /* > 0: passes and kernel choices on stderr */
    int no_optimize;       /* skip the graph passes (for debugging) */
    /* INT8 (precision "int8"): post-training calibration. Compute nodes
     * (Conv, MatMul, Gemm and what fused into them) get int8 weights per
     * output channel and int8/uint8 activations per tensor; nodes with no
     * int8 kernel stay float32. */
    const char *calib_data;       /* .npy folder, list file or image folder */
    const char *calib_preprocess; /* preprocessing spec for images (resize=256,crop=224,...) */
    const char *calibrator;       /* "percentile" (default), "entropy", "minmax", "mse" */
    double percentile;            /* for "percentile"; 0: 99.99 */
    /* Smoothing of linear layers' inputs (SmoothQuant): an activation read
     * by MatMuls with constant weights whose per-channel ranges spread over
     * more than 4x their median is quantized divided by per-channel factors
     * s = max|x|^alpha / max|w|^(1-alpha) that multiply the weights instead.
     * smooth is alpha in (0, 1); 0: the default 0.8; negative: off. */
    double smooth;
    /* Calibration cache: when the file exists it must match the model (and
     * the data, when calib_data is given) and its statistics are used
     * without running the data; otherwise it is written after calibrating. */
    const char *calib_cache;
    int calib_batches;            /* use at most this many batches; 0: all */
    const char *qdq_path;         /* also write the calibrated model as QDQ ONNX here */
    int progress;                 /* > 0: a progress line on stderr while calibrating */
    /* Per-layer precision (TensorRT's --layerPrecisions / --layerOutputTypes):
     * rules "SELECTOR:TYPE", TYPE fp32, fp16, bf16 or int8 (int8 only in int8
     * builds); SELECTOR an exact node name, a shell glob over node names
     * ("LayerNorm*", "/encoder/layer.*"), "re:REGEX" or "op:OPTYPE".
     * layer_precision sets the type a node computes in, layer_output_type
     * the type its output is stored and passed on in. Rules apply in order
     * (rules_file first, a JSON file {"rules": [{"select": ..., "precision":
     * ..., "output_type": ...}]}); the later of two rules of one kind wins.
     * A selector matching no node fails the build (naming the closest
     * names). Fusion never merges nodes whose requests differ. A request
     * that cannot be met (no kernel in that type) falls back and is reported
     * per node (precis_engine_node), or with strict fails the build. */
    const char *const *layer_precision;
    int n_layer_precision;
    const char *const *layer_output_type;
    int n_layer_output_type;
    const char *rules_file;
    int strict;
    /* CUDA: a timing cache file. The algorithm choices timed on the GPU
     * (cuBLASLt, cuDNN, int8 GEMMs) are looked up there and new ones written
     * to it (created when missing); a file made for another GPU or other
     * CUDA/cuBLASLt/cuDNN versions fails the build. NULL: none. */
    const char *timing_cache;
} precis_build_options;

/* Build an engine from an ONNX file. */
precis_status precis_build(precis_ctx *ctx, const char *onnx_path,
                           const precis_build_options *opt, precis_engine **out);
/* Save to / load from a .plan file (see docs/plan-format.md). Loading checks
 * the format, checksum and that this CPU has the instruction sets the plan
 * was built for. num_threads 0: as built. */
precis_status precis_engine_save(precis_ctx *ctx, const precis_engine *e, const char *path);
precis_status precis_engine_load(precis_ctx *ctx, const char *plan_path, int num_threads,
                                 precis_engine **out);
void precis_engine_destroy(precis_engine *e);

int precis_engine_num_inputs(const precis_engine *e);
int precis_engine_num_outputs(const precis_engine *e);
precis_status precis_engine_input(const precis_engine *e, int i, precis_value_info *out);
precis_status precis_engine_output(const precis_engine *e, int i, precis_value_info *out);
/* Build options as recorded in the engine (strings valid until destroy). */
const char *precis_engine_precision(const precis_engine *e);
const char *precis_engine_target(const precis_engine *e);
int precis_engine_num_threads(const precis_engine *e);

/* One step (kernel launch) of the plan, for `precis inspect`. Strings valid
 * until the engine is destroyed. */
typedef struct precis_step_info {
    const char *name;      /* the step's node name (first original node) */
    const char *op;        /* op after fusion, e.g. "FusedConv" */
    const char *kernel;    /* what runs, e.g. "dnnl.conv brgconv:avx512_core" or "ref" */
    precis_dtype compute;  /* activation dtype the kernel computes in */
    const char *layout;    /* output layout: "plain" or "nhwc" */
    int num_origins;       /* original ONNX nodes this step covers */
    const char *const *origins;
} precis_step_info;

int precis_engine_num_steps(const precis_engine *e);
precis_status precis_engine_step(const precis_engine *e, int i, precis_step_info *out);
/* The steps whose outputs step i reads, for drawing the plan's graph: writes
 * min(n, cap) entries of producers, producers[j] the step computing the
 * step's j-th input, -1 for a graph input, an initializer (weight) or an
 * omitted optional input. Returns n, the step's number of inputs (it may
 * exceed cap: call again with more room), or -1 for a bad i. */
int precis_engine_step_inputs(const precis_engine *e, int i, int *producers, int cap);

/* What became of one node of the original ONNX graph: requested and actual
 * precision, where it runs and why a request was not met. Strings valid
 * until the engine is destroyed. */
typedef struct precis_node_info {
    const char *name;            /* original ONNX node name */
    const char *op;              /* its ONNX op type */
    int step;                    /* the step running it; -1: folded away at build time */
    precis_dtype req_compute;    /* requested compute type; PRECIS_UNDEFINED: none */
    precis_dtype req_output;     /* requested output type; PRECIS_UNDEFINED: none */
    precis_dtype compute;        /* the type its step computes in (int8 for int8 kernels) */
    precis_dtype output;         /* the type its output is passed on in; for a node whose
                                  * output stays inside a fused kernel, the kernel's compute type */
    precis_dtype accumulator;    /* sums accumulate in this type; PRECIS_UNDEFINED: no sums */
    int output_in_kernel;        /* 1: its output never leaves the fused kernel */
    const char *rules;           /* the rules that hit it, "; "-separated; "" none */
    const char *reason;          /* why actual differs from requested; "" none */
    int honored;                 /* 1: every request met (also when there is none) */
    const char *scales;          /* INT8 scales of its step, "NAME=VALUE ..." items: x/a/b/z an
                                  * int8 input's scale, w the weights' per-channel scales
                                  * (MIN..MAX/COUNT), y the int8 output's; "" float nodes */
} precis_node_info;

int precis_engine_num_nodes(const precis_engine *e);
precis_status precis_engine_node(const precis_engine *e, int i, precis_node_info *out);

/* An execution context: the activation arena and per-thread state of one
 * runner. Use each context from one thread at a time. */
precis_status precis_context_create(precis_ctx *ctx, const precis_engine *e,
                                    precis_context **out);
void precis_context_destroy(precis_context *c);
/* As precis_session_run. */
precis_status precis_context_run(precis_ctx *ctx, precis_context *c, int n_inputs,
                                 const char *const *names, const precis_tensor *const *inputs,
                                 precis_tensor **outputs);
/* Per-step timing: when on, every run adds each step's wall time. */
void precis_context_set_profiling(precis_context *c, int on);
/* Accumulated seconds and run count of step i since profiling was turned on. */
double precis_context_step_seconds(const precis_context *c, int i);
int precis_context_profiled_runs(const precis_context *c);
/* Bytes of the activation arena planned for the last run's shapes (the
 * peak of live activations, after in-place reuse), and the total the context
 * holds. */
size_t precis_context_arena_bytes(const precis_context *c);
/* 1 when the context's last run was one CUDA graph launch (an engine built
 * with backend "cuda" replays a graph captured per input-shape signature
 * from its third run with those shapes on; PRECIS_CUDA_GRAPHS=0 in the
 * environment turns graphs off), else 0. */
int precis_context_used_cuda_graph(const precis_context *c);
/* GPU milliseconds of the last run of a "cuda" engine between the upload of
 * the inputs and the download of the outputs (device time only: what a
 * framework timing a model on GPU-resident tensors measures); 0 for other
 * backends. */
double precis_context_device_ms(const precis_context *c);
/* Batch splitting (CPU): when every step of the plan keeps the samples of a
 * batch apart (checked per input-shape signature) and the batch is at least
 * the thread count, a run executes its samples one by one on that many
 * workers of one thread each (activations of one sample stay in cache). The
 * number of workers of the last run, 0 when it ran whole. By default the
 * first runs of each input-shape signature time both ways (runs 1-2 whole,
 * 3-4 split) and keep the faster; PRECIS_BATCH_SPLIT=1 in the environment
 * always splits where allowed, PRECIS_BATCH_SPLIT=0 never. */
int precis_context_split_workers(const precis_context *c);
/* Why the last run was not split ("" when it was, or was never considered:
 * batch 1, splitting off, the timed choice still running), e.g. "output 'r'
 * of 'reshape_3' (Reshape) does not carry the batch in dim 0" or "whole was
 * faster here (...)". */
const char *precis_context_split_note(const precis_context *c);

/* ------------------------------------------------------------ sensitivity */

/* Per-layer INT8 sensitivity: how much each quantizable layer (an original
 * Conv, ConvTranspose, MatMul or Gemm node that the all-int8 build runs in
 * int8) costs on the model's outputs, measured against the FP32 engine on an
 * evaluation set, two ways:
 *   only     this layer int8, everything else fp32;
 *   all_but  everything int8 except this layer (fp32);
 * with the all-fp32 and all-int8 builds as baselines, and the local error of
 * the layer in "only" mode: the SQNR of its step's output against the same
 * tensor of an fp32 engine fused like the int8 build. A "layer" is the step
 * the all-int8 build runs it in: the rules of both modes apply to every
 * original node fused into that step (its activation, folded BatchNorm,
 * residual Add), so each candidate quantizes exactly what the int8 build does.
 * Calibration runs once (into opt->calib_cache, or a temporary file) and is
 * reused by every candidate build. Memory stays bounded: the eval set is
 * streamed batch by batch (reference outputs of at most 256 MiB are kept,
 * else recomputed) and only running sums are kept. */
typedef struct precis_sens precis_sens;

/* Metrics of one build's outputs against the fp32 engine's, over the eval
 * set. A sample is one index of an output's dim 0 (rank >= 2; a rank 0/1
 * output is one sample per batch). NAN where a metric does not apply. */
typedef struct precis_sens_metrics {
    double cosine;   /* cosine similarity, the minimum over samples */
    double sqnr_db;  /* 10 log10(|ref|^2 / |x - ref|^2), the mean over the samples that differ;
                      * +inf when every sample is equal */
    double rel_l2;   /* |x - ref| / |ref|, the mean over samples */
    double kl;       /* KL(ref || x) over the last axis, the mean over rows; only for outputs
                      * whose reference rows are non-negative and sum to 1 within 1e-3
                      * (judged on the first batch); else NAN */
    double top1;     /* fraction of rows whose argmax over the last axis agrees: for rank-2
                      * outputs [batch, classes] and for probability outputs of rank > 2;
                      * else NAN */
} precis_sens_metrics;

/* For every metric, the worst over the model's outputs (min cosine, SQNR and
 * top1, max rel_l2 and KL); NAN for metrics no output has. */
enum { PRECIS_SENS_ONLY = 0, PRECIS_SENS_ALL_BUT = 1 };

typedef struct precis_sens_layer {
    const char *name;        /* the original ONNX node */
    const char *op;          /* its op type */
    int num_fused;           /* original nodes of its step in the int8 build (>= 1) */
    const char *const *fused; /* their names (the rules of both modes select these) */
    precis_sens_metrics only;    /* this layer int8, the rest fp32 (worst over outputs) */
    precis_sens_metrics all_but; /* all int8 but this layer (worst over outputs) */
    double local_sqnr_db;    /* its step output vs the fp32 tensor of that name over the
                              * eval set (10 log10 of summed energies); NAN: no such tensor */
    const char *local_tensor; /* the tensor compared; "" when none */
    int only_int8;           /* 1: in "only" mode it really ran in int8 */
    double seconds;          /* time spent on this layer's candidates */
} precis_sens_layer;

/* Run the analysis. opt: the int8 build options (calib_data or an existing
 * calib_cache, calibrator, percentile, calib_preprocess, calib_batches,
 * shapes, num_threads, and precision rules applied before the analysis'
 * own; precision must be NULL or "int8", backend NULL or "cpu"); progress
 * > 0 draws a bar with the candidate count and the time left on stderr.
 * eval_data: a source in the calibration data formats (io: .npy folder,
 * list file, image folder with calib_preprocess); eval_batches > 0 uses at
 * most that many batches. Errors name what is wrong ("--eval-data: ..."). */
precis_status precis_sensitivity(precis_ctx *ctx, const char *onnx_path,
                                 const precis_build_options *opt, const char *eval_data,
                                 int eval_batches, precis_sens **out);
void precis_sens_destroy(precis_sens *s);

int precis_sens_num_layers(const precis_sens *s);
/* Strings valid until s is destroyed. */
precis_status precis_sens_layer_get(const precis_sens *s, int i, precis_sens_layer *out);
/* Model outputs compared (float32 ones), and per-output metrics: layer -1
 * with mode 0 is the all-fp32 baseline, with mode 1 the all-int8 one. */
int precis_sens_num_outputs(const precis_sens *s);
const char *precis_sens_output_name(const precis_sens *s, int k);
precis_status precis_sens_output_metrics(const precis_sens *s, int layer, int mode, int k,
                                         precis_sens_metrics *out);
/* Baselines, worst over outputs: fp32 != 0 the all-fp32 build (the reference
 * itself: cosine 1, SQNR +inf), else the all-int8 build. */
precis_status precis_sens_baseline(const precis_sens *s, int fp32, precis_sens_metrics *out);
/* Eval batches and samples (dim 0 of the first input) used; wall seconds. */
int precis_sens_eval_batches(const precis_sens *s);
int64_t precis_sens_eval_samples(const precis_sens *s);
double precis_sens_seconds(const precis_sens *s);

/* ------------------------------------------------------------- protection */

/* Automatic protection: the smallest, cheapest set of layers (the layers of
 * precis_sensitivity) to keep in higher precision in an int8 build so that
 * the end-to-end metrics meet a budget. Runs the sensitivity analysis (one
 * calibration cache, one set of fp32 reference outputs for everything),
 * ranks the layers by how much keeping each one float repairs the all-int8
 * build ("all int8 but this", local SQNR breaking ties), adds layers in rank
 * order verifying each set end to end (when the next ranked layer does not
 * help, the marginal gain of the next few is measured and the best taken),
 * then drops the chosen layers not needed (costliest first) and tries
 * swapping a costly one for a cheaper one. When that misses the budget, it
 * starts again from the two edge layers of the contiguous block the
 * bisection baseline found (each one needed by that block). Each layer's latency cost comes
 * from a per-step profile of the all-int8 and the protect_to build (the step
 * time int8 saves, 0 where it saves none); the cheapest set meeting the
 * budget within the layer budget is chosen (fewer layers break ties). Every verified set is recorded with its metrics and
 * measured latency (median of latency_runs runs of the first eval batch).
 * Baselines run in the same call: protection by op type (the first and the
 * last layer; Softmax and LayerNorm already stay float in precis int8) and a
 * Polygraphy-style bisection for the smallest contiguous block of layers
 * (in graph order) meeting the budget. The final latencies of all-int8,
 * all-fp32, the chosen set and the baselines are measured interleaved. */
typedef struct precis_protection precis_protection;

/* A user metric: called with each eval batch's candidate outputs and the
 * fp32 reference's (all model outputs, engine order; valid during the call);
 * finish returns the score of the candidate over the eval set and starts
 * over. The fp32 engine itself is scored first (cand == ref), for budgets
 * relative to it. */
typedef struct precis_user_metric {
    precis_status (*batch)(void *user, int batch, int n_outputs,
                           const precis_tensor *const *cand, const precis_tensor *const *ref);
    precis_status (*finish)(void *user, double *score);
    void *user;
    /* the message of the last failure (NULL: a generic one) */
    const char *(*error)(void *user);
    int higher_better; /* 1: a higher score is better */
    const char *name;  /* for the report ("user" when NULL) */
} precis_user_metric;

/* One condition of the budget. metric: "cosine", "top1", "sqnr" (worst over
 * the compared outputs, precis_sens_metrics) or "user". */
enum {
    PRECIS_BUDGET_MIN = 0,      /* value >= threshold */
    PRECIS_BUDGET_MAX = 1,      /* value <= threshold */
    PRECIS_BUDGET_MAX_DROP = 2  /* at most threshold worse than the fp32 engine's own value */
};
typedef struct precis_budget {
    const char *metric;
    int kind;
    double threshold;
} precis_budget;

typedef struct precis_protect_options {
    const precis_budget *budget; /* every condition must hold */
    int n_budget;
    const precis_user_metric *user; /* needed by a "user" condition */
    const char *output;          /* compare only this model output (NULL: all float ones) */
    int max_protected;           /* layer budget as a count; 0: see max_fraction */
    double max_fraction;         /* layer budget as a fraction of the layers; 0: 0.10 */
    const char *protect_to;      /* "fp32" (NULL), "bf16" or "fp16" */
    int allow_exceed;            /* 1: search past the layer budget when it is not enough */
    int latency_runs;            /* runs per latency median; 0: 7 */
    int progress;                /* > 0: progress bars on stderr */
} precis_protect_options;

/* opt, eval_data, eval_batches: as precis_sensitivity. The search finishing
 * without meeting the budget is not an error: precis_protect_met says so. */
precis_status precis_protect(precis_ctx *ctx, const char *onnx_path,
                             const precis_build_options *opt, const char *eval_data,
                             int eval_batches, const precis_protect_options *po,
                             precis_protection **out);
void precis_protect_destroy(precis_protection *p);

/* The analysis the search ranked from (owned by p). */
const precis_sens *precis_protect_sens(const precis_protection *p);

/* A verified set of protected layers. */
typedef struct precis_protect_candidate {
    const char *label;        /* "all-int8", "all-fp32", "greedy", "probe", "prune", "swap",
                               * "op-type", "block" */
    int num_layers;
    const int *layers;        /* indices of precis_sens layers, graph order */
    precis_sens_metrics metrics; /* worst over the compared outputs */
    double user;              /* the user metric's score; NAN: none */
    double score;             /* >= 0: meets the budget; the smallest normalised margin */
    int meets;
    double latency_ms;        /* measured, median */
    double cost_ms;           /* the cost model's estimate over all-int8 */
} precis_protect_candidate;

int precis_protect_num_candidates(const precis_protection *p);
precis_status precis_protect_candidate_get(const precis_protection *p, int i,
                                           precis_protect_candidate *out);
/* Candidate indices: which 0 the chosen set (the best found when the budget
 * is not met), 1 all-int8, 2 all-fp32, 3 the op-type baseline, 4 the block
 * baseline; -1 when absent. */
enum { PRECIS_PROTECT_CHOSEN, PRECIS_PROTECT_INT8, PRECIS_PROTECT_FP32, PRECIS_PROTECT_OPTYPE,
       PRECIS_PROTECT_BLOCK };
int precis_protect_pick(const precis_protection *p, int which);
int precis_protect_met(const precis_protection *p);          /* the chosen set meets the budget */
int precis_protect_max_layers(const precis_protection *p);   /* the layer budget as a count */
/* Condition i with its threshold resolved against the fp32 engine (a
 * MAX_DROP becomes MIN or MAX); the fp32 engine's own value in *fp32. */
precis_status precis_protect_budget(const precis_protection *p, int i, precis_budget *out,
                                    double *fp32);
int precis_protect_num_budget(const precis_protection *p);
/* Notes for the user, "\n"-separated ("" none): what protect_to could not
 * honour, what the op-type baseline could not protect. */
const char *precis_protect_notes(const precis_protection *p);
double precis_protect_seconds(const precis_protection *p);
/* The user metric's name ("user" when it has none or there is none). */
const char *precis_protect_user_name(const precis_protection *p);
/* Writes the chosen set as a rules file ({"rules": [{"select": ..,
 * "precision": ..}]}, one rule per original node of each protected layer's
 * step) that precis_build reads as rules_file. */
precis_status precis_protect_write_rules(precis_ctx *ctx, const precis_protection *p,
                                         const char *path);

#ifdef __cplusplus
}
#endif
#endif /* PRECIS_PRECIS_H */
