#include "ir/act.h"

#include <stdio.h>

const char *const pr_act_names[PR_ACT_COUNT] = {
    "", "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
    "Tanh", "Gelu", "GeluTanh", "Swish", "Affine",
};

int pr_act_kind_of(const char *name) {
    if (!name || !name[0]) return PR_ACT_NONE;
    for (int i = 1; i < PR_ACT_COUNT; i++)
        if (strcmp(pr_act_names[i], name) == 0) return i;
    return -1;
}

bool pr_act_from_node(const pr_node *n, const char *prefix, pr_act *act) {
    char key[32];
    act->kind = PR_ACT_NONE;
    act->alpha = act->beta = 0;
    int k = pr_act_kind_of(pr_attr_str(n, prefix, ""));
    if (k < 0) return false;
    act->kind = (pr_act_kind)k;
    /* "<prefix>_alpha", "<prefix>_beta" (no snprintf: shape inference reads
     * activations on every run of a dynamic plan) */
    size_t len = strlen(prefix);
    if (len + sizeof "_alpha" > sizeof key) {
        act->kind = PR_ACT_NONE;
        return false;
    }
    memcpy(key, prefix, len);
    memcpy(key + len, "_alpha", sizeof "_alpha");
    act->alpha = pr_attr_float(n, key, 0.0f);
    memcpy(key + len, "_beta", sizeof "_beta");
    act->beta = pr_attr_float(n, key, 0.0f);
    return true;
}
