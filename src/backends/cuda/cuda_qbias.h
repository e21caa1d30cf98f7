/* Biased uint8 storage on the CUDA backend (cuda_qbias.c). */
#ifndef PR_BACKENDS_CUDA_CUDA_QBIAS_H
#define PR_BACKENDS_CUDA_CUDA_QBIAS_H

#include <stdbool.h>

#include "ir/graph.h"

/* Is the uint8 activation t (scale s, zero point 0, values q in 0..255)
 * stored on the device as the int8 byte q - 128 (q XOR 0x80, "biased")?
 * Only between the IMMA GEMMs (cuda_qgemm.c), which read int8 operands:
 * true when t's producer is a QConv that impl or the int8 depthwise conv
 * (cuda_qdw.c) runs and every consumer is a QConv / QMatMul that impl runs
 * reading t as X (input 0) or as the residual Z (input 4), and t is no
 * graph input or output; a MaxPool (cuda_pool.c) between such a producer
 * and GEMMs only passes the storage on (in and out biased: the int8 max of
 * the bytes, XOR 0x80 keeping the order). Then cuBLASLt
 * reads and writes t directly (no flipped copy, no flip pass), the
 * implicit GEMM reads it without the XOR, and the padding of t is the byte
 * -128 (the real zero). A pure function of the graph, so the producer's
 * and every consumer's prepare agree. PRECIS_CUDA_U8_BIAS=0: never; =all:
 * every uint8 activation (for the kernel tests of a single node only: a
 * graph's other readers would not agree). */
bool pr_cu_u8_biased(const pr_graph *g, int t);

/* The stem's MaxPool fused into its conv (cuda_qgemm.c, phase 20m): the
 * index of the MaxPool node that QConv n (a space-to-depth stem on the stem
 * kernel) computes with it, writing the pooled tensor into the head of its
 * own output buffer, or -1. A pure function of the graph (and
 * PRECIS_CUDA_STEM_POOL / _STEM / _S2D / _IGEMM), so the conv's and the
 * MaxPool's prepare agree. pr_cu_pool_fused: is MaxPool node `pool` so
 * fused (then cuda_pool.c runs it as a copy of its input's head, or nothing
 * where its output shares that buffer)? */
int pr_cu_stem_pool_node(const pr_graph *g, const pr_node *n);
bool pr_cu_pool_fused(const pr_graph *g, const pr_node *pool);

#endif
