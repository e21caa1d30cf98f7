/* Test helper for machines without a GPU: rewrites a CPU plan's metadata to
 * say it was built for the cuda backend (sm_90), so that the CLI test can
 * check what loading a cuda plan on such a machine says.
 *
 *   cuda_plan_stub IN.plan OUT.plan
 *
 * With a GPU, for a cuda plan: --other-gpu rewrites the GPU named in its
 * recorded timed choices (precis.cuda_tcache) to "Some Other GPU";
 * --bad-tcache cuts that text short (malformed).
 *
 *   cuda_plan_stub IN.plan OUT.plan --other-gpu|--bad-tcache */
#include <stdio.h>
#include <string.h>

#include "plan/plan_file.h"

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && (!strcmp(argv[3], "--other-gpu") ||
                                      !strcmp(argv[3], "--bad-tcache")))) {
        fprintf(stderr, "usage: cuda_plan_stub IN.plan OUT.plan [--other-gpu|--bad-tcache]\n");
        return 2;
    }
    pr_err e = {0};
    pr_graph *g = NULL;
    if (pr_plan_load(argv[1], &g, &e)) {
        fprintf(stderr, "cuda_plan_stub: %s\n", e.msg);
        return 1;
    }
    static char tc[1 << 16];
    for (int i = 0; i < g->n_metadata && argc == 4; i++) {
        const char *k = g->metadata[i].key, *v = g->metadata[i].value;
        const char *gl = strstr(v, "\ngpu\t"), *end = gl ? strchr(gl + 5, '\n') : NULL;
        if (strcmp(k, "precis.cuda_tcache")) continue;
        if (!strcmp(argv[3], "--bad-tcache")) {
            g->metadata[i].value = "precis-timing-cache 0\n";
        } else if (end && strlen(v) < sizeof tc - 32) {
            snprintf(tc, sizeof tc, "%.*s\ngpu\tSome Other GPU%s", (int)(gl - v), v, end);
            g->metadata[i].value = tc;
        }
    }
    for (int i = 0; i < g->n_metadata && argc == 3; i++) {
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
