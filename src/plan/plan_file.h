/* The engine file (.plan): an optimized pr_graph, its metadata and its
 * weights in one versioned, checksummed, memory-mappable file.
 *
 * The byte layout is documented at the top of plan_file.c (and in
 * docs/plan-format.md). What it holds:
 *   - the whole graph: tensors (name, dtype, rank, dims incl. symbolic dims by
 *     name, flags, layout, producer), nodes (name, op_type, domain, opset,
 *     inputs, outputs, every attribute kind precis uses, origins), graph
 *     inputs/outputs, symbolic dim names, opsets, model-level strings;
 *   - g->metadata key/value strings: the engine stores its build options,
 *     target ISA, shape profile and per-node precision report there;
 *   - initializer data, each 64-byte aligned in the file so that a loaded
 *     graph's tensor data points straight into the read-only mapping.
 * Graphs with subgraph attributes are refused (PRECIS_ERR_UNSUPPORTED).
 *
 * Loading checks magic, format version, sizes and offsets, and a checksum of
 * everything; a truncated, corrupted or foreign file fails with one clear
 * message (PRECIS_ERR_PARSE) naming what is wrong, never crashes.
 */
#ifndef PR_PLAN_PLAN_FILE_H
#define PR_PLAN_PLAN_FILE_H

#include "ir/graph.h"

#define PR_PLAN_VERSION 1

/* Serialize g to path (written to a temporary file and renamed, so a failed
 * save never leaves a half-written plan under that name). */
precis_status pr_plan_save(const pr_graph *g, const char *path, pr_err *e);
/* Serialize into a malloc'd buffer (*buf, *len). */
precis_status pr_plan_save_memory(const pr_graph *g, void **buf, size_t *len, pr_err *e);

/* Load a plan: the file is memory-mapped read-only and the mapping is owned
 * by the returned graph (unmapped by pr_graph_destroy). */
precis_status pr_plan_load(const char *path, pr_graph **out, pr_err *e);
/* Load from memory; the buffer must outlive the graph unless copy is true. */
precis_status pr_plan_load_memory(const void *buf, size_t len, bool copy, pr_graph **out,
                                  pr_err *e);

#endif
