/* Executing one node on concrete buffers with the ref backend: shape
 * inference on the actual inputs, output allocation, kernel call. Shared by
 * the session executor and constant folding. */
#ifndef PR_RUNTIME_EXEC_H
#define PR_RUNTIME_EXEC_H

#include "backends/ref/ref.h"
#include "ir/infer.h"

/* Fail unless precis has an inference function and a ref kernel for the node
 * (message names op, domain, opset and node). */
precis_status pr_exec_check_supported(const pr_node *n, pr_err *e);

/* 1 if precis knows the node's op (inference and ref kernel), else 0. */
int pr_exec_supported_op(const pr_node *n);

/* in[i] (NULL for omitted inputs) are the node's inputs; on success out[j]
 * (for every present output j) is allocated with pr_buf_alloc and filled.
 * On failure all out[j] are freed. */
precis_status pr_exec_node(pr_graph *g, const pr_node *n, const pr_buf *const *in, pr_buf *out,
                           int num_threads, pr_err *e);

/* A tinfo describing a concrete buffer (value = data). */
void pr_tinfo_from_buf(pr_tinfo *t, const pr_buf *b);

/* Check a given input against the graph's declaration (dtype, rank, known
 * dims); binds symbolic dims (sym[], one per g->syms entry, -1 unbound) so
 * that two inputs sharing a symbol must agree. */
precis_status pr_check_input(const pr_graph *g, const pr_tensor *decl, const pr_buf *b,
                             int64_t *sym, pr_err *e);

/* In a bf16/fp16 plan, float32 initializers (scales, biases, constant
 * operands) feed low-precision activations; kernels take them as they are.
 * Shape inference wants one dtype: relabel such inputs of these ops (the
 * executors call this on a node's input infos before inferring). */
void pr_harmonize_inputs(const pr_graph *g, const pr_node *n, pr_tinfo *tin);

/* An executor's shape inference for one step: harmonize tin, then infer
 * every output of n into tout (cleared first; rank -1 where unknown). */
precis_status pr_infer_step_outputs(const pr_graph *g, const pr_node *n, pr_tinfo *tin,
                                    pr_tinfo *tout, pr_err *e);

#endif
