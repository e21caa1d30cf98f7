/* ONNX export: write a pr_graph as a standard ONNX ModelProto (protobuf-c).
 *
 * The graph may hold precis-internal ops (domain "ai.precis", ir/ops.inc
 * family fused); they are written back as standard ONNX ops so that any ONNX
 * runtime runs the file, and "ai.precis" never appears in it:
 *   FusedConv(X, W, B?, Z?)      -> Conv [-> act] [-> Add Z] [-> act2]
 *   FusedMatMul(A, B, bias?, Z?) -> Gemm (A, B and Y of rank 2 and a bias Gemm's
 *                                   C can take) or [Transpose] MatMul
 *                                   [-> Mul alpha] [-> Add bias]; then
 *                                   [-> act] [-> Add Z] [-> act2]
 *   Reorder(X)                   -> dropped (consumers read its input; an
 *                                   Identity when its output is a graph output)
 *   other ai.precis ops (QConv, ...) -> refused: export before INT8 lowering
 * Activations (ir/act.h) become their ONNX ops: Relu, LeakyRelu, Clip (min and
 * max as inputs), Sigmoid, HardSigmoid, Tanh; HardSwish (x * HardSigmoid(1/6,
 * 1/2) below opset 14); Gelu / GeluTanh (Gelu from opset 20, else the erf /
 * tanh formula); Swish -> x * Sigmoid(x). The main node of a decomposition
 * (Conv, Gemm, MatMul) keeps the fused node's name, the
 * others are named "<name>/<op>"; node names are unique.
 *
 * Opset: the file declares opset max(13, the model's) for the default domain
 * (per-axis DequantizeLinear needs 13) and the graph's version for any other
 * domain a node uses; ir_version is max(8, the model's, what the opset
 * needs). The opset is never raised beyond that: ops newer than it are
 * decomposed (LayerNormalization below 17 -> ReduceMean/Sub/Mul/ReduceMean/
 * Add eps/Sqrt/Div, Mul scale, Add bias; Gelu below 20; HardSwish below 14;
 * Mish below 18). Nodes imported at an older opset whose op changed by then
 * are rewritten (onnx_export_ops.c lists them: Squeeze/Unsqueeze/Split/
 * ReduceSum axes attributes -> inputs, Reduce* axes at 18, Softmax/
 * LogSoftmax/Hardmax's coerced 2-D axis -> the same op when it is the last
 * axis, else Flatten/op/Reshape, Pad, Clip, Slice, TopK, Upsample and
 * Resize-10 -> Resize, BatchNormalization's legacy attributes, Dropout ->
 * Identity, ...). A node it cannot express fails with a message naming it.
 *
 * Initializers still used are written as raw_data in their dtype (little-
 * endian); the graph inputs and outputs keep their names, dtypes and dims
 * (symbolic dims as dim_param, unknown ones empty); intermediate value_info
 * is not written. Attributes of the kinds FLOAT, INT, STRING, TENSOR(S),
 * FLOATS, INTS, STRINGS are copied, except precis_* ones (planner marks);
 * GRAPH attributes (If/Loop/Scan) and the kinds precis keeps no payload for
 * are refused. Graph name, doc string, model version, domain and
 * metadata_props are copied; producer_name is "precis".
 *
 * Layouts are ignored: dims and data in the IR are always logical (pr_layout
 * only tells a backend how it stores an activation), so a graph after
 * pr_plan_layouts exports as the same model with its Reorders dropped.
 * Graphs after pr_plan_precision export their Casts as they are.
 *
 * Errors: PRECIS_ERR_UNSUPPORTED (a node or attribute with no form in the
 * file), PRECIS_ERR_INVALID_ARG (an inconsistent graph: undefined input,
 * dead node, data not matching its shape), PRECIS_ERR_IO, PRECIS_ERR_OOM,
 * each with a one-line message in e; the graph is never modified.
 */
#ifndef PR_ONNX_ONNX_EXPORT_H
#define PR_ONNX_ONNX_EXPORT_H

#include "ir/graph.h"

/* Serialize g to `path` (written to path.tmp, then renamed over path; the
 * temporary is removed on failure). */
precis_status pr_onnx_save(const pr_graph *g, const char *path, pr_err *e);
/* Serialize g into a malloc'd buffer (*out, *len; the caller frees *out).
 * On failure *out is NULL and *len 0. Files over 2 GiB are refused. */
precis_status pr_onnx_save_memory(const pr_graph *g, void **out, size_t *len, pr_err *e);

#endif
