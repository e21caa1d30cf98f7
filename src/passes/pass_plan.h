/* Backend-aware planning passes run by the engine builder after the graph
 * optimizations: precision (activation dtypes) then layouts. Both ask the
 * CPU backend (pr_cpu_find_impl) what it can run. */
#ifndef PR_PASSES_PASS_PLAN_H
#define PR_PASSES_PASS_PLAN_H

#include "ir/graph.h"

/* Give every float node a compute type: its precision request
 * (node->req_compute) or dflt (FLOAT32, BFLOAT16 or FLOAT16; others mean
 * FLOAT32), where the CPU backend has a kernel for it in that type; store
 * each float activation in its producer's type, pass it on in the type
 * requested for the producer's output (node->req_output) and insert Casts
 * at the boundaries (one per tensor and target); graph inputs and outputs
 * keep their dtypes. */
precis_status pr_plan_precision(pr_graph *g, pr_dtype dflt, pr_err *e);
/* The same for the cuda backend (cuda true: asks pr_cuda_find_impl, plain
 * layouts only) or the cpu backend. */
precis_status pr_plan_precision_backend(pr_graph *g, pr_dtype dflt, bool cuda, pr_err *e);

/* Choose NHWC or plain for every rank-4 activation; insert Reorders. */
precis_status pr_plan_layouts(pr_graph *g, pr_err *e);
/* The same for the cuda backend (cuda true: asks the CUDA impls' nhwc_ok). */
precis_status pr_plan_layouts_backend(pr_graph *g, bool cuda, pr_err *e);

/* cuda: fold the head split / merge Transposes around fp16/bf16 Attention
 * nodes into the node (attribute heads_bshd; pass_attn_heads.c). */
precis_status pr_fold_attention_heads(pr_graph *g, pr_err *e);
/* cuda (called by pr_fold_attention_heads, before its compaction): an Attention
 * mask Where(And(all-true, M) [-> Expand]) of a broadcast row M becomes
 * Where(M) of M's shape (pass_attn_mask.c; PRECIS_CUDA_MASK_ROW=0 keeps it);
 * Add(Add(a, b), c) with a private inner sum becomes Sum(a, b, c), one
 * kernel (PRECIS_CUDA_SUM3=0 keeps the Adds); a Gather whose constant indices
 * are 0..n-1 becomes a Reshape and a Cast to its input's own dtype an Identity,
 * both free aliases (PRECIS_CUDA_MASK_IDS=0 keeps them). */
precis_status pr_fold_attention_mask(pr_graph *g, pr_err *e);

/* cuda fp8 plans, after fold_attention_heads: e4m3 QuantizeLinear steps after
 * a LayerNorm (attribute q_scale: a second output) or an Attention (y_type 17)
 * go into the node (pass_fp8_quant.c; PRECIS_CUDA_FP8_FUSEQ=0 keeps them). */
precis_status pr_fold_fp8_quantize(pr_graph *g, pr_err *e);
/* cuda plans (called by pr_fold_fp8_quantize, also without fp8): the
 * embeddings' Gather(W0, I0), Gather(W1, I1), Sum(., ., P) and LayerNorm as one
 * EmbedLayerNorm node (pass_embed_ln.c; PRECIS_CUDA_EMBED_LN=0 keeps them). */
precis_status pr_fold_embed_layernorm(pr_graph *g, pr_err *e);

#endif
