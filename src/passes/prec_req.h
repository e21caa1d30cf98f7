/* Per-node precision requests, carried through the whole build (issue 6).
 *
 * pr_prec_stamp applies the rules (prec_rules.h) to the graph as imported:
 * every node gets req_compute / req_output (PRECIS_UNDEFINED: no request)
 * and g->prec gets one entry per original node (the report's rows). From
 * then on:
 *   - fusion passes ask pr_prec_fusable before they change anything: nodes
 *     fuse only when their effective compute types (request, else the
 *     build's precision) agree and no absorbed node's requested output type
 *     would disappear inside a kernel computing in another type; a refusal
 *     is noted on the requested nodes;
 *   - the precision planners (pass_precision.c, the int8 quantizer) take
 *     each node's effective type and note why a request could not be met
 *     (pr_prec_note);
 *   - the engine writes the per-node report (requested vs actual, kernel,
 *     reason) into the plan (runtime/prec_report.c).
 * Without rules g->prec is NULL and nothing changes. */
#ifndef PR_PASSES_PREC_REQ_H
#define PR_PASSES_PREC_REQ_H

#include <stdbool.h>

#include "ir/graph.h"
#include "passes/prec_rules.h"

typedef struct pr_prec_node {
    const char *name, *op_type;       /* the original ONNX node */
    pr_dtype req_compute, req_output; /* PRECIS_UNDEFINED: none */
    const char *rules;                /* every rule that hit it, in order, "; "-separated; "" */
    const char *reason;               /* first note on why a request was not met; NULL */
    int compute_rule, output_rule;    /* 1 + index of the rule that set each request; 0 none */
} pr_prec_node;

/* An op: rule naming an op precis recognizes in decomposed form
 * (LayerNormalization, Gelu) that no node of the imported graph has:
 * applied by the pass prec_late to the recognized nodes. */
typedef struct pr_prec_late {
    const char *text, *source, *pattern;
    pr_rule_what what;
    pr_dtype type;
    int index; /* its place among all rules (a later rule on the same node wins) */
} pr_prec_late;

typedef struct pr_prec_plan {
    pr_prec_node *nodes; /* original nodes, in graph order */
    int n;
    pr_prec_late *late;
    int n_late;
    pr_dtype dflt;       /* the build's precision: FLOAT32, BFLOAT16, FLOAT16, INT8 or
                          * FLOAT8E4M3FN */
    int n_rules;         /* rules applied (0: the report has no requests) */
} pr_prec_plan;

/* Check the rules against g (a selector that hits nothing is an error
 * naming it and the closest names; an int8 rule needs an int8 build),
 * stamp the requests on the nodes and set g->prec. dflt is the build's
 * precision. Also with no rules (the report then has every node, no
 * requests). */
precis_status pr_prec_stamp(pr_graph *g, const pr_prec_rules *rs, pr_dtype dflt, pr_err *e);

/* Apply the deferred op: rules to the nodes the recognition passes made
 * (op LayerNormalization / Gelu with origins): on the node and the report
 * entries of its origins. A deferred rule that still hits nothing is the
 * usual error. */
precis_status pr_prec_apply_late(pr_graph *g, pr_err *e);

/* The compute type node n is meant to run in: its request, else the
 * build's precision (FLOAT32 when g->prec is NULL). */
pr_dtype pr_prec_effective(const pr_graph *g, const pr_node *n);

/* May node ni absorb nodes[0..n) (out_node: the node whose output the fused
 * node takes over, -1: ni keeps its own)? True when the effective compute
 * types agree and every node whose output stays inside the fused node has
 * no output-type request other than that compute type. False: nothing may
 * change; the reason is noted on the requested nodes. */
bool pr_prec_fusable(pr_graph *g, int ni, const int *nodes, int n, int out_node);

/* As pr_prec_fusable, but node f32 (one of nodes) may ask for float32 while
 * the rest compute in fp16/bf16/int8: the fused kernel computes that part in
 * float32 whatever its operands (Attention's Softmax; in int8 builds
 * Attention is a float node anyway). */
bool pr_prec_fusable_f32(pr_graph *g, int ni, const int *nodes, int n, int out_node, int f32);

/* The requests a node absorbing nodes[0..n) keeps (called by
 * pr_fuse_absorb before it kills them): an explicit compute request of any
 * of them of its own effective type (the others agree, but for a float32
 * part pr_prec_fusable_f32 let in), and out_node's output request. */
void pr_prec_merge(pr_graph *g, int ni, const int *nodes, int n, int out_node);

/* Note why n's requests are not met (printf format), on every original
 * node n covers that has a request and no note yet. */
void pr_prec_note(pr_graph *g, const pr_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The entry of an original node, or NULL. */
pr_prec_node *pr_prec_find(const pr_graph *g, const char *name);

/* FLOAT32, BFLOAT16 or FLOAT16: a type a float node computes in. */
static inline bool pr_prec_is_float(pr_dtype t) {
    return t == PRECIS_FLOAT32 || t == PRECIS_BFLOAT16 || t == PRECIS_FLOAT16;
}

/* "fp32", "fp16", "bf16", "int8", "fp8", else the dtype's name, for messages. */
const char *pr_prec_type_name(pr_dtype t);

/* Does g carry any request (compute or output) at all? */
bool pr_prec_any(const pr_graph *g);

#endif
