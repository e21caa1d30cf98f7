/* Test helper for machines without a GPU: rewrites a CPU plan's metadata to
 * say it was built for the cuda backend (sm_90), so that the CLI test can
 * check what loading a cuda plan on such a machine says.
 *
 *   cuda_plan_stub IN.plan OUT.plan */
#include <stdio.h>
#include <string.h>

#include "plan/plan_file.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: cuda_plan_stub IN.plan OUT.plan\n");
        return 2;
    }
    pr_err e = {0};
    pr_graph *g = NULL;
    if (pr_plan_load(argv[1], &g, &e)) {
        fprintf(stderr, "cuda_plan_stub: %s\n", e.msg);
        return 1;
    }
    for (int i = 0; i < g->n_metadata; i++) {
        const char *k = g->metadata[i].key;
        if (!strcmp(k, "precis.backend")) g->metadata[i].value = "cuda";
        else if (!strcmp(k, "precis.target")) g->metadata[i].value = "cuda:sm_90";
        else if (!strcmp(k, "precis.requires")) g->metadata[i].value = "sm_90";
    }
    int rc = pr_plan_save(g, argv[2], &e) ? 1 : 0;
    if (rc) fprintf(stderr, "cuda_plan_stub: %s\n", e.msg);
    pr_graph_destroy(g);
    return rc;
}
