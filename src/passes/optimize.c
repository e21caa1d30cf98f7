/* The default optimization pipeline (pr_optimize) and the pass runner. */
#include <stdio.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"

precis_status pr_pass_run(const pr_pass *p, pr_graph *g, pr_pass_ctx *pc) {
    int before = pc->changes;
    precis_status st = p->run(g, pc);
    if (st) return st;
    if (pc->verbose > 0) fprintf(stderr, "pass %s: %d rewrites\n", p->name, pc->changes - before);
    return PRECIS_OK;
}

precis_status pr_optimize(pr_graph *g, pr_pass_ctx *pc) {
    /* fold_bn before fuse_conv (BN after a plain Conv), layernorm and gelu
     * before fuse_matmul (Gelu becomes an epilogue), prec_late right after them
     * (op: rules on the recognized ops, before anything fuses with them), fuse_attention after
     * fuse_matmul (the 1/sqrt(d) scale is then the scores' alpha), deconv_s2d after
     * fuse_conv (the ConvTranspose has its bias and BN) and before a second
     * fuse_conv (its 1x1 Conv takes the activation), dce again at the end for
     * what fusion left unused */
    static const pr_pass *const pipeline[] = {
        &pr_pass_fold_constants, &pr_pass_dce,        &pr_pass_fold_bn,
        &pr_pass_fuse_layernorm, &pr_pass_fuse_gelu,  &pr_pass_prec_late, &pr_pass_fuse_matmul,
        &pr_pass_fuse_attention, &pr_pass_fuse_conv,  &pr_pass_deconv_s2d,
        &pr_pass_fuse_conv,      &pr_pass_dce,
    };
    for (size_t i = 0; i < sizeof pipeline / sizeof pipeline[0]; i++) {
        precis_status st = pr_pass_run(pipeline[i], g, pc);
        if (st) return st;
    }
    return pr_graph_check(g, pc->err);
}
