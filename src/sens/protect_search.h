/* The search of automatic protection (protect.c), apart from building and
 * measuring: it sees the model only through an oracle that verifies a set of
 * protected layers end to end and scores it, so it is tested alone
 * (tests/unit/test_protect_search.c). */
#ifndef PR_PROTECT_SEARCH_H
#define PR_PROTECT_SEARCH_H

#include "precis/precis.h"

/* The verdict on one set: score >= 0 meets the budget (the smallest
 * normalised margin over the budget's conditions); aux a continuous
 * tie-breaker (the worst output SQNR) for sets of equal score. */
typedef struct pr_prot_verdict {
    double score, aux;
} pr_prot_verdict;

typedef struct pr_prot_oracle {
    void *user;
    /* verify the set in[n] (0/1 per layer); label says why it is tried */
    precis_status (*verify)(void *user, const unsigned char *in, const char *label,
                            pr_prot_verdict *v);
} pr_prot_oracle;

typedef struct pr_prot_search {
    int n;              /* layers */
    const int *rank;    /* all n layer indices, the most promising first */
    const double *cost; /* per layer latency cost estimate; NULL: unknown (no swaps) */
    int max_layers;     /* the layer budget */
    int probe;          /* when the next ranked layer does not help, measure this many */
} pr_prot_search;

/* Is a better than b (score, then aux)? */
int pr_prot_better(const pr_prot_verdict *a, const pr_prot_verdict *b);

/* Greedy in rank order (re-ranked by measured marginal gain when the next
 * ranked layer does not close its share of the gap to the budget) up to the
 * layer budget, then, when the budget
 * is met, dropping the layers not needed (costliest first) and swapping a
 * costly layer for a cheaper unchosen one where the budget still holds.
 * chosen[n]: the set to start from (all zero: all-int8), then the final
 * set; *met whether it meets the budget. */
precis_status pr_prot_greedy(const pr_prot_search *s, const pr_prot_oracle *o,
                             unsigned char *chosen, int *met);

/* Polygraphy-style: the smallest end hi such that protecting layers [0, hi)
 * meets the budget, then the largest start lo such that [lo, hi) still
 * does, both by bisection (assuming more protection never hurts). An empty
 * block when all-int8 meets it; *met 0 when protecting every layer does
 * not ([0, n) then). */
precis_status pr_prot_block(int n, const pr_prot_oracle *o, int *lo, int *hi, int *met);

#endif
