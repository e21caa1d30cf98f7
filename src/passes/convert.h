/* Inserting conversion nodes (Reorder for layouts, Cast for precision) into
 * a graph, shared by the layout and precision passes.
 *
 * A conversion of tensor t is placed right after t's producer (or first, for
 * graph inputs), reused for every consumer that needs the same target, and
 * marked with the int attribute "precis_inserted" = 1 (it stands for no
 * original ONNX node). pr_convert_finish puts the new nodes in place. */
#ifndef PR_PASSES_CONVERT_H
#define PR_PASSES_CONVERT_H

#include "ir/graph.h"

typedef struct pr_convert {
    int n, cap;
    struct pr_convert_ent {
        int src, target, kind, node, out;
    } *ents;
} pr_convert;

enum { PR_CONVERT_REORDER = 1, PR_CONVERT_CAST = 2 };

/* The tensor holding t converted to `target` (a pr_layout for REORDER, a
 * pr_dtype for CAST); creates the node on first use. -1 on OOM. */
int pr_convert_get(pr_graph *g, pr_convert *cv, int t, int kind, int target, pr_err *e);

/* Graph output t will be produced by a conversion: its producer now writes
 * a new tensor (returned, named "<t>/<suffix>", same dtype/dims/layout as t
 * had) and every consumer reads that; t itself keeps the name. The caller
 * then sets t's dtype/layout and calls pr_convert_output. */
int pr_convert_detach_output(pr_graph *g, int t, const char *suffix, pr_err *e);
/* Adds the node computing output t from src (kind as above); consumers that
 * later ask for src converted the same way (pr_convert_get) read t. */
precis_status pr_convert_output(pr_graph *g, pr_convert *cv, int src, int t, int kind,
                                pr_err *e);

/* Moves the new nodes right after their producers; frees cv's memory. */
precis_status pr_convert_finish(pr_graph *g, pr_convert *cv, pr_err *e);

/* Is node n an inserted conversion (attribute precis_inserted)? */
bool pr_node_inserted(const pr_node *n);

#endif
