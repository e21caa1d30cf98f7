/* Backend-aware planning passes run by the engine builder after the graph
 * optimizations: precision (activation dtypes) then layouts. Both ask the
 * CPU backend (pr_cpu_find_impl) what it can run. */
#ifndef PR_PASSES_PASS_PLAN_H
#define PR_PASSES_PASS_PLAN_H

#include "ir/graph.h"

/* Store float activations as `low` (PRECIS_BFLOAT16 or PRECIS_FLOAT16)
 * wherever the producing node has a CPU kernel for it; Casts at the
 * boundaries (one per tensor and direction); graph inputs and outputs keep
 * their dtypes. */
precis_status pr_plan_precision(pr_graph *g, pr_dtype low, pr_err *e);

/* Choose NHWC or plain for every rank-4 activation; insert Reorders. */
precis_status pr_plan_layouts(pr_graph *g, pr_err *e);

#endif
