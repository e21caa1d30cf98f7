/* A node built by hand for calling shape inference and kernels directly in
 * unit tests (test_conv.c, test_linalg.c, test_infer_tensor.c):
 *   tnode t;
 *   n_init(&t, PR_OP_Conv, "Conv", 11);
 *   n_ints(&t, "pads", (int64_t[]){1, 1, 1, 1}, 4);
 * Attribute names and strings are borrowed; int lists are copied. */
#ifndef PR_TESTS_UNIT_TNODE_H
#define PR_TESTS_UNIT_TNODE_H

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include "ir/graph.h"
#include "ir/infer.h"

#define TNODE_MAX_ATTRS 16
#define TNODE_MAX_INTS 16

typedef struct tnode {
    pr_node node;
    pr_attr attrs[TNODE_MAX_ATTRS];
    int64_t ints[TNODE_MAX_ATTRS][TNODE_MAX_INTS];
} tnode;

static inline void n_init(tnode *t, pr_op op, const char *op_type, int64_t opset) {
    memset(t, 0, sizeof *t);
    t->node.name = "n";
    t->node.op_type = op_type;
    t->node.domain = "";
    t->node.op = op;
    t->node.opset = opset;
    t->node.attrs = t->attrs;
}

static inline pr_attr *n_attr(tnode *t, const char *name, pr_attr_type type) {
    assert(t->node.n_attrs < TNODE_MAX_ATTRS);
    pr_attr *a = &t->attrs[t->node.n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static inline void n_int(tnode *t, const char *name, int64_t v) {
    n_attr(t, name, PR_ATTR_INT)->i = v;
}

static inline void n_float(tnode *t, const char *name, float v) {
    n_attr(t, name, PR_ATTR_FLOAT)->f = v;
}

static inline void n_ints(tnode *t, const char *name, const int64_t *v, int n) {
    assert(n >= 0 && n <= TNODE_MAX_INTS);
    const int k = t->node.n_attrs;
    pr_attr *a = n_attr(t, name, PR_ATTR_INTS);
    if (n) memcpy(t->ints[k], v, (size_t)n * sizeof(int64_t));
    a->ints = t->ints[k];
    a->n = n;
}

static inline void n_str(tnode *t, const char *name, const char *s) {
    pr_attr *a = n_attr(t, name, PR_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
}

/* Does t have exactly this rank and these dims? */
static inline bool dims_eq(const pr_tinfo *t, int rank, const int64_t *dims) {
    if (t->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (t->dims[d] != dims[d]) return false;
    return true;
}

#endif
