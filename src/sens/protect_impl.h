/* The result of precis_protect (protect.c builds it, protect_api.c reads it). */
#ifndef PR_PROTECT_IMPL_H
#define PR_PROTECT_IMPL_H

#include "sens/protect_search.h"

typedef struct prot_cand {
    char label[16];
    int is_ref; /* the fp32 engine itself (not an int8 build) */
    unsigned char *in; /* per layer */
    int *layers, n_layers;
    precis_sens_metrics m;
    double user, latency_ms, cost_ms;
    pr_prot_verdict v;
} prot_cand;

typedef struct prot_cond {
    char metric[8];
    int kind;          /* PRECIS_BUDGET_MIN or _MAX after resolving */
    double threshold;  /* resolved */
    double fp32, scale; /* the fp32 engine's value; the all-int8 distance to the threshold */
} prot_cond;

struct precis_protection {
    precis_sens *sens;
    int n; /* layers */
    prot_cand *c;
    int n_c, cap_c;
    int pick[5];
    int met, max_layers;
    prot_cond cond[8];
    int n_cond;
    char *notes;
    size_t notes_len;
    double seconds;
    char **rules; /* the chosen set's rules, "SEL:TYPE" */
    int n_rules;
    const char *protect_to;
    char *user_name; /* the user metric's name; NULL: none */
};

#endif
