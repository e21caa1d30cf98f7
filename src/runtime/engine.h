/* precis_engine and precis_context internals. */
#ifndef PR_RUNTIME_ENGINE_H
#define PR_RUNTIME_ENGINE_H

#include "backends/cpu/cpu.h"
#include "runtime/api.h"

typedef struct pr_step {
    int node;                  /* index in e->g->nodes */
    const pr_cpu_impl *impl;   /* NULL: the ref kernel */
    void *state;
    const char *kernel;        /* arena string: "impl detail" or "ref" */
    const char **origins;      /* arena: original node names */
    int n_origins;
} pr_step;

/* Shape range of one graph input (dims -1 where the input dim is static). */
typedef struct pr_profile {
    int tensor;
    int rank;
    int64_t min[PR_MAX_RANK], opt[PR_MAX_RANK], max[PR_MAX_RANK];
} pr_profile;

struct precis_engine {
    pr_graph *g;
    pr_step *steps;
    int n_steps;
    int num_threads;
    const char *precision, *backend, *target, *requires, *shapes; /* arena strings */
    pr_profile *prof;
    int n_prof;
    int *first_def, *last_use; /* per tensor: step producing it / last step reading it */
};

/* Parse "name:MIN/OPT/MAX,..." against g's inputs into *prof (malloc'd). */
precis_status pr_parse_profile(const pr_graph *g, const char *spec, pr_profile **prof, int *n,
                               pr_err *e);

#endif
