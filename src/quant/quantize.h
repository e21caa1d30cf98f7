/* INT8 quantization of an optimized graph, in two steps.
 *
 * 1. pr_quantize_insert (quantize.c): the calibrated graph as explicit QDQ,
 *    the standard ONNX form (what `precis export-qdq` writes and what ref
 *    runs as the "fake-quant" oracle):
 *    - compute nodes (FusedConv, FusedMatMul, MatMul) get int8 weights:
 *      symmetric per output channel, W_q = round(W / s[c]), s[c] = max|W[c]|/127,
 *      stored as an int8 initializer read through DequantizeLinear(axis);
 *      MatMul of two activations quantizes both per tensor;
 *    - an activation tensor t is quantized when an int8 compute node reads it
 *      (or a pass-through node whose output is quantized): t -> QuantizeLinear
 *      -> t_q -> DequantizeLinear -> t_dq, and every consumer of t reads t_dq.
 *      Scales are symmetric per tensor with zero point 0: uint8 with
 *      scale amax/255 when the tensor never saw a negative value, else int8
 *      with amax/127;
 *    - elementwise nodes on rank-4 feature maps (Add, Sub, Mul whose
 *      operands are either not broadcast over H, W or constant over them:
 *      per channel / scalar; not read by a Softmax) and GlobalAveragePool /
 *      2-D AveragePool quantize their feature-map inputs like compute
 *      nodes (constants and per-channel vectors such as squeeze-excitation
 *      gates stay float); their outputs are quantized when an int8 node
 *      reads them, as any activation;
 *    - pass-through nodes (Reshape, Flatten, Transpose, Squeeze, Unsqueeze,
 *      Concat, Slice, Split, MaxPool, Identity, Resize nearest)
 *      share one scale between their data inputs and outputs (a union of
 *      tensors gets the largest amax of its members), so they can run on
 *      int8 with no requantization;
 *    - graph inputs and outputs keep their names and float values (the
 *      consumers of a quantized graph output read its QDQ copy);
 *    Node names of the inserted nodes derive from the tensor they quantize.
 *
 * 2. pr_quantize_lower (qlower.c), for the CPU and CUDA backends: DequantizeLinear ->
 *    op -> QuantizeLinear patterns become the int8 ops (ops.inc: QConv,
 *    QMatMul, QBinary, QPool; pass-through ops on int8 tensors); Q/DQ nodes
 *    left over run as standalone conversions; a QConv/QMatMul the backend
 *    (cuda: its CUDA impls, else the CPU's) cannot run goes back to float.
 *    The ref backend runs either form.
 */
#ifndef PR_QUANT_QUANTIZE_H
#define PR_QUANT_QUANTIZE_H

#include "ir/graph.h"
#include "quant/calib.h"

/* Statistics to thresholds: stats keyed by tensor name (every float
 * activation of g the calibration saw), cfg the calibrator. verbose > 0
 * prints one line per quantized tensor group. */
typedef struct pr_quant_opts {
    const pr_calib_stats *stats;
    pr_calib_cfg cfg;
    int verbose;
    /* a plan for the CUDA backend: the residual Z of an int8 conv is quantized
     * too when a compute node makes it (ResNet's downsample branch: int8 out
     * instead of a float tensor written and read back). Non-negative tensors
     * stay uint8 as for the CPU (the CUDA GEMMs read them as int8 x - 128:
     * cuda_qgemm.c), so both backends quantize to the same grid. */
    bool cuda;
    /* SmoothQuant-style smoothing of linear-layer inputs (0: off): an
     * activation x read only by MatMuls with constant rank-2 weights (and by
     * float consumers), whose per-channel max |x| (calibration) spreads over
     * more than smooth_spread times its median, is quantized as x / s with
     * s[c] = max|x_c|^alpha / max|W_c.|^(1 - alpha) (W_c. the weights' row c,
     * over every such consumer), the weights as s[c] * W_c.: the product is
     * unchanged, the outlier channels' range moves into the weights. The
     * scale of x / s is its max (from the per-channel maxima). In the QDQ
     * graph: x -> Mul(1 / s) -> Q -> DQ -> MatMul(DQ(W'_q)). */
    float smooth_alpha, smooth_spread;
    /* PRECIS_INT8 (0 reads as int8), or PRECIS_FLOAT8E4M3FN: only MatMul /
     * FusedMatMul with constant rank-2 weights are quantized (no convs, no
     * elementwise / pooling nodes, no activation x activation products), their
     * activations and weights e4m3 with one scale each (amax / 448; weights per
     * tensor: cuBLASLt's FP8 GEMMs on sm_90 take scalar scales; linear layers that
     * read one activation, such as Q, K and V, share their weights' scale), Q/DQ of
     * opset 19, quantized right before the linear layers (no pass-through runs e4m3) */
    pr_dtype qtype;
    /* every activation int8 (scale amax / 127), none uint8: TensorRT's grid, the
     * CUDA backend's before it read uint8 (PRECIS_CUDA_INT8_SIGNED=1 on cuda
     * builds). Non-negative tensors get 7 bits (EfficientNet-Lite0 top-1
     * agreement 0.875 vs 1.0 on the zoo's 8 images), no uint8 -> int8 flips
     * (H100 ResNet-50 int8 b256 9.47 vs 12.4 ms, b1 0.467 vs 0.589: NOTES.md) */
    bool signed_only;
} pr_quant_opts;

/* Defaults (precis build): alpha 0.8, spread 4 (MiniLM's FFN and QKV inputs
 * spread 4.4-25, its attention-output inputs 2.3-4.8: NOTES.md). */
#define PR_SMOOTH_ALPHA 0.8f
#define PR_SMOOTH_SPREAD 4.0f

/* Summary of what was quantized. */
typedef struct pr_quant_report {
    int compute_nodes;      /* compute nodes given int8 inputs */
    int elem_nodes;         /* elementwise / pooling nodes given int8 inputs */
    int float_nodes;        /* compute nodes left in float (and why, with verbose); Attention
                             * always is one */
    int tensors;            /* activation tensors quantized */
    int smoothed;           /* of which smoothed (per-channel factors moved into weights) */
    int weights;            /* weight initializers quantized */
} pr_quant_report;

precis_status pr_quantize_insert(pr_graph *g, const pr_quant_opts *o, pr_quant_report *rep,
                                 pr_err *e);
precis_status pr_quantize_lower(pr_graph *g, int verbose, bool cuda, pr_err *e);

/* Is node n a pass-through op that can run on int8 data unchanged
 * (pass-through of its data inputs: *data_inputs gets how many leading
 * inputs are data, Concat all)? */
bool pr_quant_passthrough(const pr_graph *g, const pr_node *n, int *data_inputs);

#endif
