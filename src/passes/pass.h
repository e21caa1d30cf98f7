/* Graph optimization passes. Each pass is a small unit {name, run} that
 * rewrites a pr_graph in place and keeps it runnable on the ref backend:
 * ref(original) and ref(optimized) agree within float rounding. Fused nodes
 * record the original ONNX nodes they cover (pr_node.origins).
 *
 * A pass must leave the graph consistent: every tensor's producer index
 * correct, nodes in topological order, dead nodes removed (pr_graph_compact),
 * graph inputs and outputs keeping their names.
 */
#ifndef PR_PASSES_PASS_H
#define PR_PASSES_PASS_H

#include "ir/graph.h"

typedef struct pr_pass_ctx {
    pr_err *err;
    int verbose;  /* > 0: each pass prints "pass <name>: <n> rewrites" to stderr */
    int changes;  /* a pass adds the number of rewrites it made */
} pr_pass_ctx;

typedef struct pr_pass {
    const char *name;
    precis_status (*run)(pr_graph *g, pr_pass_ctx *pc);
} pr_pass;

/* The passes (src/passes/pass_*.c). */
extern const pr_pass pr_pass_fold_constants; /* nodes whose inputs are all initializers */
extern const pr_pass pr_pass_dce;            /* nodes no output depends on */
extern const pr_pass pr_pass_fold_bn;        /* BatchNormalization into Conv/Gemm/MatMul weights */
extern const pr_pass pr_pass_fuse_conv;      /* Conv + bias Add + act + residual Add + act2 */
extern const pr_pass pr_pass_deconv_s2d;     /* ConvTranspose kernel = stride -> Conv 1x1 + DepthToSpace */
extern const pr_pass pr_pass_fuse_matmul;    /* MatMul/Gemm + bias + act + residual */
extern const pr_pass pr_pass_fuse_attention; /* MatMul + mask Add + Softmax + MatMul -> Attention */
extern const pr_pass pr_pass_fuse_layernorm; /* decomposed LayerNorm -> LayerNormalization */
extern const pr_pass pr_pass_fuse_gelu;      /* decomposed erf/tanh GELU -> Gelu */
extern const pr_pass pr_pass_prec_late;      /* op: rules on recognized LayerNorm/Gelu (prec_req.h) */

/* Run one pass; with pc->verbose > 0 prints "pass <name>: <n> rewrites" to
 * stderr. */
precis_status pr_pass_run(const pr_pass *p, pr_graph *g, pr_pass_ctx *pc);

/* Run the default pipeline (all of the above, in a sensible order, to a
 * fixed point where it matters). */
precis_status pr_optimize(pr_graph *g, pr_pass_ctx *pc);

#endif
