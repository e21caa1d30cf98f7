#include "ir/ops.h"

#include <string.h>

static const char *const k_names[PR_OP_COUNT] = {
    "?",
#define PR_OP(name, family) #name,
#include "ir/ops.inc"
#undef PR_OP
};

static const char *const k_families[PR_OP_COUNT] = {
    "?",
#define PR_OP(name, family) #family,
#include "ir/ops.inc"
#undef PR_OP
};

const char *pr_op_name(pr_op op) { return op > 0 && op < PR_OP_COUNT ? k_names[op] : "?"; }
const char *pr_op_family(pr_op op) { return op > 0 && op < PR_OP_COUNT ? k_families[op] : "?"; }

pr_op pr_op_lookup(const char *op_type) {
    for (int i = 1; i < PR_OP_COUNT; i++)
        if (strcmp(k_families[i], "fused") != 0 && strcmp(k_names[i], op_type) == 0)
            return (pr_op)i;
    return PR_OP_UNKNOWN;
}

pr_op pr_op_lookup_domain(const char *domain, const char *op_type) {
    if (!domain[0] || strcmp(domain, "ai.onnx") == 0) return pr_op_lookup(op_type);
    if (strcmp(domain, PR_FUSED_DOMAIN) != 0) return PR_OP_UNKNOWN;
    for (int i = 1; i < PR_OP_COUNT; i++)
        if (strcmp(k_families[i], "fused") == 0 && strcmp(k_names[i], op_type) == 0)
            return (pr_op)i;
    return PR_OP_UNKNOWN;
}
