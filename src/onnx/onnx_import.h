/* ONNX import: protobuf-c decoding of ModelProto / TensorProto into the IR.
 * The C code for onnx.proto is generated at build time (never committed). */
#ifndef PR_ONNX_IMPORT_H
#define PR_ONNX_IMPORT_H

#include "ir/graph.h"
#include "runtime/tensor.h"

/* Load a model file. External data is resolved relative to the model's
 * directory; absolute locations and ones escaping it ("..") are refused.
 * On success *out is a graph with every tensor's declared type/shape, every
 * initializer and Constant node's data (flag PR_T_INIT), nodes with op/opset
 * resolved (PR_OP_UNKNOWN for ops precis does not know: loading still
 * succeeds; the executor refuses them naming op, domain and opset). */
precis_status pr_onnx_load_file(const char *path, pr_graph **out, pr_err *e);
precis_status pr_onnx_load_memory(const void *buf, size_t len, const char *base_dir,
                                  pr_graph **out, pr_err *e);

/* A serialized TensorProto (ONNX test data format) into a new tensor. */
precis_status pr_onnx_load_tensor_file(const char *path, precis_tensor **out, pr_err *e);

#endif
