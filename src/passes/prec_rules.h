/* Per-layer precision rules (TensorRT's --layerPrecisions / --layerOutputTypes,
 * with selectors that work):
 *
 *   SEL:TYPE    TYPE one of fp32, fp16, bf16, int8; SEL one of
 *     name          an exact node name of the original ONNX graph
 *     glob          a shell pattern over node names (fnmatch, '*' crosses '/'):
 *                   LayerNorm*, *attention/self/Softmax
 *     re:REGEX      a POSIX extended regex searched in node names
 *     op:OPTYPE     nodes of that ONNX op type (a glob over op types too:
 *                   op:LayerNormalization, op:Reduce*)
 *   SEL may itself contain ':'; TYPE is what follows the last one.
 *
 * A rule sets either the compute type of the nodes it selects
 * (--layer-precision) or the type their outputs are stored and passed on in
 * (--layer-output-type). Rules apply in order; when two rules of the same
 * kind hit one node the later wins (both are kept for the report). A
 * selector that matches no node is an error naming it and the closest names.
 *
 * The same rules from a JSON file:
 *   {"rules": [{"select": "LayerNorm*", "precision": "fp32"},
 *              {"select": "op:Softmax", "precision": "fp32", "output_type": "fp16"}]}
 * (a bare array of such objects is accepted too). */
#ifndef PR_PASSES_PREC_RULES_H
#define PR_PASSES_PREC_RULES_H

#include <stdbool.h>

#include "ir/graph.h"

typedef enum { PR_SEL_EXACT, PR_SEL_GLOB, PR_SEL_REGEX, PR_SEL_OP } pr_sel_kind;
typedef enum { PR_RULE_COMPUTE, PR_RULE_OUTPUT } pr_rule_what;

typedef struct pr_prec_rule {
    char *text;       /* "SEL:TYPE" as given, for messages and reports */
    char *pattern;    /* SEL without its "re:"/"op:" prefix */
    pr_sel_kind kind;
    pr_rule_what what;
    pr_dtype type;    /* FLOAT32, FLOAT16, BFLOAT16 or INT8 */
    char *source;     /* where it came from: "--layer-precision", "rules.json:3" */
    void *re;         /* compiled regex_t for PR_SEL_REGEX */
} pr_prec_rule;

typedef struct pr_prec_rules {
    pr_prec_rule *r;
    int n, cap;
} pr_prec_rules;

/* Add one "SEL:TYPE" rule; errors (exit class INVALID_ARG) name the rule and
 * what is wrong (no ':', unknown type, empty selector, bad regex). */
precis_status pr_rules_add(pr_prec_rules *rs, const char *spec, pr_rule_what what,
                           const char *source, pr_err *e);
/* Add the rules of a JSON rules file (format above). */
precis_status pr_rules_load(pr_prec_rules *rs, const char *path, pr_err *e);
void pr_rules_free(pr_prec_rules *rs);

bool pr_rule_matches(const pr_prec_rule *r, const char *node_name, const char *op_type);

/* Check every rule against the nodes of g (the graph as imported, before any
 * optimization): a rule that selects nothing is an error naming it, its
 * source and up to three closest node names (or op types for op:). */
precis_status pr_rules_check(const pr_prec_rules *rs, const pr_graph *g, pr_err *e);

/* The rule of kind `what` that decides node (name, op type): the last
 * matching one, or -1. */
int pr_rules_decide(const pr_prec_rules *rs, pr_rule_what what, const char *node_name,
                    const char *op_type);

/* "fp32" etc. for a rule type; NULL for others. */
const char *pr_rule_type_name(pr_dtype t);

#endif
