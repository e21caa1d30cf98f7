/* Activations fused into a producing kernel's epilogue (FusedConv,
 * FusedMatMul; see ops.inc). A node stores one as attributes
 * <prefix> (string: the ONNX op name, "" or absent for none),
 * <prefix>_alpha and <prefix>_beta (floats), prefix "act" or "act2".
 *
 *   Relu                      max(x, 0)
 *   LeakyRelu(alpha)          x < 0 ? alpha*x : x
 *   Clip(alpha=min, beta=max) min(max(x, alpha), beta)   (Relu6: 0, 6)
 *   Sigmoid                   1 / (1 + exp(-x))
 *   HardSigmoid(alpha, beta)  max(0, min(1, alpha*x + beta))
 *   HardSwish                 x * max(0, min(1, x/6 + 1/2))
 *   Tanh                      tanh(x)
 *   Gelu                      0.5 x (1 + erf(x / sqrt 2))
 *   GeluTanh                  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   Swish                     x * sigmoid(x)      (SiLU)
 */
#ifndef PR_IR_ACT_H
#define PR_IR_ACT_H

#include <math.h>
#include <string.h>

#include "ir/graph.h"

typedef enum pr_act_kind {
    PR_ACT_NONE = 0,
    PR_ACT_RELU,
    PR_ACT_LEAKY_RELU,
    PR_ACT_CLIP,
    PR_ACT_SIGMOID,
    PR_ACT_HARD_SIGMOID,
    PR_ACT_HARD_SWISH,
    PR_ACT_TANH,
    PR_ACT_GELU,
    PR_ACT_GELU_TANH,
    PR_ACT_SWISH,
    PR_ACT_AFFINE, /* alpha * x + beta (a scalar Mul/Add after an activation) */
    PR_ACT_COUNT
} pr_act_kind;

typedef struct pr_act {
    pr_act_kind kind;
    float alpha, beta;
} pr_act;

/* The attribute-string names, indexed by pr_act_kind ("" for NONE). */
extern const char *const pr_act_names[PR_ACT_COUNT];

/* Kind for a name ("" or NULL: NONE); -1 if unknown. */
int pr_act_kind_of(const char *name);
/* Read attributes <prefix>, <prefix>_alpha, <prefix>_beta of n. Returns false
 * (act set to NONE) if the name is unknown. */
bool pr_act_from_node(const pr_node *n, const char *prefix, pr_act *act);

static inline float pr_act_apply(const pr_act *a, float x) {
    switch (a->kind) {
    case PR_ACT_NONE: return x;
    case PR_ACT_RELU: return x < 0 ? 0.0f : x;
    case PR_ACT_LEAKY_RELU: return x < 0 ? a->alpha * x : x;
    case PR_ACT_CLIP: return x < a->alpha ? a->alpha : (x > a->beta ? a->beta : x);
    case PR_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case PR_ACT_HARD_SIGMOID: {
        float v = a->alpha * x + a->beta;
        return v < 0 ? 0.0f : (v > 1 ? 1.0f : v);
    }
    case PR_ACT_HARD_SWISH: {
        float v = x * (1.0f / 6.0f) + 0.5f;
        return x * (v < 0 ? 0.0f : (v > 1 ? 1.0f : v));
    }
    case PR_ACT_TANH: return tanhf(x);
    case PR_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case PR_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case PR_ACT_SWISH: return x / (1.0f + expf(-x));
    case PR_ACT_AFFINE: return a->alpha * x + a->beta;
    default: return x;
    }
}

#endif
