/* Operator enum and name table, generated from ops.inc. */
#ifndef PR_IR_OPS_H
#define PR_IR_OPS_H

typedef enum pr_op {
    PR_OP_UNKNOWN = 0,
#define PR_OP(name, family) PR_OP_##name,
#include "ir/ops.inc"
#undef PR_OP
    PR_OP_COUNT
} pr_op;

/* Name of an op ("Conv"); "?" for PR_OP_UNKNOWN. */
const char *pr_op_name(pr_op op);
/* Family name ("conv", "elem", "linalg", "tensor"). */
const char *pr_op_family(pr_op op);
/* Look up a default-domain op by type name; PR_OP_UNKNOWN if not in ops.inc. */
pr_op pr_op_lookup(const char *op_type);
/* Domain of the precis-internal (fused) ops. */
#define PR_FUSED_DOMAIN "ai.precis"
/* Look up an op by domain ("" / "ai.onnx": default ops; PR_FUSED_DOMAIN: the
 * fused family); PR_OP_UNKNOWN otherwise. */
pr_op pr_op_lookup_domain(const char *domain, const char *op_type);

#endif
