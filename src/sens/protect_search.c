/* The search of automatic protection (protect_search.h). */
#include "sens/protect_search.h"

#include <stdlib.h>
#include <string.h>

int pr_prot_better(const pr_prot_verdict *a, const pr_prot_verdict *b) {
    if (a->score > b->score + 1e-9) return 1;
    if (a->score < b->score - 1e-9) return 0;
    return a->aux > b->aux + 1e-6;
}

static precis_status verify(const pr_prot_oracle *o, const unsigned char *in, const char *label,
                            pr_prot_verdict *v) {
    return o->verify(o->user, in, label, v);
}

static int count(const unsigned char *in, int n) {
    int c = 0;
    for (int i = 0; i < n; i++) c += in[i] != 0;
    return c;
}

/* The chosen layers ordered by cost, costliest first (index order without costs). */
static void by_cost(const pr_prot_search *s, const unsigned char *in, int *out, int *m) {
    *m = 0;
    for (int i = 0; i < s->n; i++)
        if (in[i]) out[(*m)++] = i;
    for (int a = 1; s->cost && a < *m; a++)
        for (int b = a; b > 0 && s->cost[out[b]] > s->cost[out[b - 1]]; b--) {
            int t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
}

/* Adds layers until the budget holds or the layer budget is spent: the next
 * ranked layer when it closes at least its share of the gap (the gap over
 * the layer slots left), else the best of it and the next probe-1 ranked
 * layers by measured gain. */
static precis_status grow(const pr_prot_search *s, const pr_prot_oracle *o, unsigned char *cur,
                          pr_prot_verdict *vc) {
    precis_status st;
    int probe = s->probe > 0 ? s->probe : 1;
    while (vc->score < 0 && count(cur, s->n) < s->max_layers) {
        int best = -1, first = -1, tried = 0, left = s->max_layers - count(cur, s->n);
        pr_prot_verdict vb = *vc, vf = {0, 0};
        double need = -vc->score / left;
        for (int r = 0; r < s->n && tried < probe; r++) {
            int k = s->rank[r];
            if (cur[k]) continue;
            pr_prot_verdict v;
            cur[k] = 1;
            st = verify(o, cur, tried ? "probe" : "greedy", &v);
            cur[k] = 0;
            if (st) return st;
            if (!tried++) first = k, vf = v;
            if (pr_prot_better(&v, &vb)) best = k, vb = v;
            /* the ranking was right when the next layer closes its share of the gap */
            if (best == first && v.score - vc->score >= need) break;
        }
        if (first < 0) break; /* every layer protected */
        if (best < 0) best = first, vb = vf; /* nothing helps alone: trust the ranking */
        cur[best] = 1;
        *vc = vb;
    }
    return PRECIS_OK;
}

/* Drops the layers not needed, costliest first. */
static precis_status prune(const pr_prot_search *s, const pr_prot_oracle *o, unsigned char *cur,
                           int *order) {
    int m;
    by_cost(s, cur, order, &m);
    for (int j = 0; j < m && m > 0; j++) {
        pr_prot_verdict v;
        cur[order[j]] = 0;
        precis_status st = verify(o, cur, "prune", &v);
        if (st) return st;
        if (v.score < 0) cur[order[j]] = 1;
    }
    return PRECIS_OK;
}

/* Swaps a chosen layer for a cheaper unchosen one (up to two tries each, in
 * rank order) where the budget still holds. */
static precis_status swap(const pr_prot_search *s, const pr_prot_oracle *o, unsigned char *cur,
                          int *order) {
    int m;
    by_cost(s, cur, order, &m);
    for (int j = 0; j < m; j++) {
        int l = order[j], tries = 0;
        for (int r = 0; r < s->n && tries < 2; r++) {
            int k = s->rank[r];
            if (cur[k] || s->cost[k] >= s->cost[l]) continue;
            pr_prot_verdict v;
            cur[l] = 0, cur[k] = 1, tries++;
            precis_status st = verify(o, cur, "swap", &v);
            if (st) return st;
            if (v.score >= 0) break;
            cur[l] = 1, cur[k] = 0;
        }
    }
    return PRECIS_OK;
}

precis_status pr_prot_greedy(const pr_prot_search *s, const pr_prot_oracle *o,
                             unsigned char *chosen, int *met) {
    int *order = malloc((size_t)(s->n ? s->n : 1) * sizeof *order);
    if (!order) return PRECIS_ERR_OOM;
    pr_prot_verdict vc;
    precis_status st = verify(o, chosen, count(chosen, s->n) ? "seed" : "all-int8", &vc);
    if (!st) st = grow(s, o, chosen, &vc);
    *met = !st && vc.score >= 0;
    if (!st && *met) st = prune(s, o, chosen, order);
    if (!st && *met && s->cost) st = swap(s, o, chosen, order);
    free(order);
    return st;
}

precis_status pr_prot_block(int n, const pr_prot_oracle *o, int *lo, int *hi, int *met) {
    unsigned char *in = calloc((size_t)(n ? n : 1), 1);
    if (!in) return PRECIS_ERR_OOM;
    precis_status st = PRECIS_OK;
    pr_prot_verdict v;
#define TRY_BLOCK(a, b)                                                                            \
    (memset(in, 0, (size_t)n), memset(in + (a), 1, (size_t)((b) - (a))),                          \
     st = verify(o, in, "block", &v))
    *lo = *hi = 0, *met = 1;
    if (TRY_BLOCK(0, 0)) goto done; /* nothing to protect */
    if (v.score >= 0) goto done;
    *hi = n, *met = 0;
    if (TRY_BLOCK(0, n)) goto done;
    if (v.score < 0) goto done;
    *met = 1;
    int a = 0, b = n; /* [0, b) meets; [0, a) does not (a = 0: nothing tried) */
    while (b - a > 1) {
        int m = (a + b) / 2;
        if (TRY_BLOCK(0, m)) goto done;
        if (v.score >= 0) b = m;
        else a = m;
    }
    *hi = b;
    a = 0; /* [a, hi) meets */
    int c = b; /* [c, hi) does not (c = hi: empty) */
    while (c - a > 1) {
        int m = (a + c) / 2;
        if (TRY_BLOCK(m, *hi)) goto done;
        if (v.score >= 0) a = m;
        else c = m;
    }
    *lo = a;
#undef TRY_BLOCK
done:
    free(in);
    return st;
}
