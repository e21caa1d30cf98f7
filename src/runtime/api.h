/* Internal definitions behind the public handles. */
#ifndef PR_RUNTIME_API_H
#define PR_RUNTIME_API_H

#include "ir/graph.h"
#include "precis/precis.h"

struct precis_ctx {
    pr_err err;
};

struct precis_model {
    pr_graph *g;
    /* cached summary storage (precis_model_summarize) */
    void *summary_mem;
};

/* Public description of tensor t of g. */
void pr_value_info(const pr_graph *g, int t, precis_value_info *out);

/* Record an error in ctx (which may be NULL) and return st. */
precis_status pr_ctx_fail(precis_ctx *ctx, precis_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
