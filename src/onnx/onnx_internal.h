/* Private to src/onnx/: pieces of the ONNX importer shared between its files. */
#ifndef PR_ONNX_INTERNAL_H
#define PR_ONNX_INTERNAL_H

#include "ir/graph.h"
#include "onnx.pb-c.h"

/* Deepest nesting of messages accepted (graph -> node -> attribute -> graph
 * ... ); deeper inputs are refused before protobuf-c recurses into them. */
#define PR_ONNX_MAX_DEPTH 96

/* Allocates storage for a decoded tensor whose dtype/rank/dims/nbytes are set
 * in *shape; returns NULL on OOM. The memory must stay valid as long as the
 * caller needs it (graph arena, or a precis_tensor). */
typedef void *(*pr_onnx_alloc_fn)(void *ud, const pr_const *shape);

/* Allocator putting data into g's arena (ud is the pr_graph). */
void *pr_onnx_graph_alloc(void *ud, const pr_const *shape);

/* Decode a TensorProto: checks dtype, dims (overflow, PR_MAX_TENSOR_BYTES)
 * and that the data (raw, typed fields or external file) matches the shape
 * before allocating with alloc; converts typed fields to the dense layout.
 * `what` names the tensor in messages ("initializer 'w'"). base_dir is where
 * external data lives (NULL: external data refused). If allow_no_storage,
 * dtypes without fixed-size storage (string, complex, ...) are accepted with
 * data NULL instead of failing. */
precis_status pr_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *what,
                                    const char *base_dir, bool allow_no_storage,
                                    pr_onnx_alloc_fn alloc, void *ud, pr_const *out, pr_err *e);

/* dtype of an ONNX elem_type value as stored in the IR (unknown values are
 * kept as they are; pr_dtype_name says "unknown"). */
pr_dtype pr_onnx_dtype(int32_t v);

/* Import state shared by the whole model (top graph and subgraphs). */
typedef struct pr_onnx_imp {
    const char *base_dir; /* NULL when loaded from memory without one */
    pr_graph *top;        /* the model graph (holds the opsets) */
    int depth;            /* current subgraph nesting */
} pr_onnx_imp;

/* Import one GraphProto into g (created by the caller; for subgraphs already
 * attached to its parent). Does not validate; see pr_onnx_validate. */
precis_status pr_onnx_import_graph(pr_onnx_imp *im, const Onnx__GraphProto *gp, pr_graph *g,
                                   pr_err *e);
/* Import attribute ap of node `node` (for messages) into a. */
precis_status pr_onnx_import_attr(pr_onnx_imp *im, pr_graph *g, const pr_node *node,
                                  const Onnx__AttributeProto *ap, pr_attr *a, pr_err *e);
/* For a Constant node: set its output tensor's data from its attribute. */
precis_status pr_onnx_constant_output(pr_graph *g, int node, pr_err *e);

/* Check every graph (recursively): inputs defined, single producers, graph
 * outputs produced, no cycles; sorts nodes topologically when needed. */
precis_status pr_onnx_validate(pr_graph *g, pr_err *e);

/* Refuses buffers whose messages nest deeper than PR_ONNX_MAX_DEPTH, walking
 * the wire format with the message descriptors. Only checks nesting; malformed
 * data it cannot follow is left to protobuf-c to reject. */
bool pr_onnx_depth_ok(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len);

static inline const char *pr_onnx_str(const char *s) { return s ? s : ""; }

#endif
