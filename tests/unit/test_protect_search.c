/* The search of automatic protection (sens/protect_search.h) against a fake
 * oracle: 8 layers, the budget met only when layers 2 and 5 are both
 * protected (layer 7 can stand in for 5: same gain, cheaper), every other
 * layer a tiny gain. Checks greedy in rank order, re-ranking by measured
 * gain when the ranking misleads, pruning, the cheaper swap, the layer
 * budget, and the contiguous-block bisection. */
#include <string.h>

#include "check.h"
#include "sens/protect_search.h"

enum { N = 8 };

typedef struct fake {
    int calls, alt; /* alt: layer 7 stands in for 5 */
    char last[16];
} fake;

static precis_status verify(void *u, const unsigned char *in, const char *label,
                            pr_prot_verdict *v) {
    fake *f = u;
    f->calls++;
    strncpy(f->last, label, sizeof f->last - 1);
    int a = in[2], b = in[5] || (f->alt && in[7]), other = 0;
    for (int i = 0; i < N; i++) other += in[i] && i != 2 && i != 5 && !(f->alt && i == 7);
    v->score = -1 + 0.5 * a + 0.5 * b + 0.001 * other; /* >= 0 only with both */
    if (a && b) v->score = 0.01 + 0.001 * other;
    v->aux = 10 * (a + b) + other;
    return PRECIS_OK;
}

static int count(const unsigned char *in) {
    int c = 0;
    for (int i = 0; i < N; i++) c += in[i];
    return c;
}

static void test_greedy_ranked(void) {
    fake f = {0};
    pr_prot_oracle o = {&f, verify};
    int rank[N] = {2, 5, 0, 1, 3, 4, 6, 7};
    pr_prot_search s = {N, rank, NULL, 2, 4};
    unsigned char ch[N] = {0};
    int met = 0;
    CHECK(pr_prot_greedy(&s, &o, ch, &met) == PRECIS_OK);
    CHECK(met && ch[2] && ch[5] && count(ch) == 2);
    /* all-int8, +2, +5, then prune tries dropping each: 5 */
    CHECK(f.calls == 5);
}

static void test_misleading_rank(void) {
    fake f = {0};
    pr_prot_oracle o = {&f, verify};
    /* the ranking puts two useless layers first; the probe measures the next ones */
    int rank[N] = {0, 2, 1, 5, 3, 4, 6, 7};
    pr_prot_search s = {N, rank, NULL, 3, 4};
    unsigned char ch[N] = {0};
    int met = 0;
    CHECK(pr_prot_greedy(&s, &o, ch, &met) == PRECIS_OK);
    CHECK(met && ch[2] && ch[5] && count(ch) == 2);
}

static void test_prune_and_budget(void) {
    fake f = {0};
    pr_prot_oracle o = {&f, verify};
    /* nothing but 2 and 5 helps much; useless layers may come along, prune drops them */
    int rank[N] = {0, 1, 3, 4, 6, 7, 2, 5};
    pr_prot_search s = {N, rank, NULL, N, 1};
    unsigned char ch[N] = {0};
    int met = 0;
    CHECK(pr_prot_greedy(&s, &o, ch, &met) == PRECIS_OK);
    CHECK(met && ch[2] && ch[5] && count(ch) == 2);
    /* a layer budget of 1 cannot meet it */
    pr_prot_search s1 = {N, rank, NULL, 1, 4};
    memset(ch, 0, sizeof ch);
    CHECK(pr_prot_greedy(&s1, &o, ch, &met) == PRECIS_OK);
    CHECK(!met && count(ch) == 1);
}

static void test_swap_cheaper(void) {
    fake f = {0, 1, ""};
    pr_prot_oracle o = {&f, verify};
    int rank[N] = {2, 5, 7, 0, 1, 3, 4, 6};
    double cost[N] = {1, 1, 1, 1, 1, 5, 1, 0.5};
    pr_prot_search s = {N, rank, cost, 2, 4};
    unsigned char ch[N] = {0};
    int met = 0;
    CHECK(pr_prot_greedy(&s, &o, ch, &met) == PRECIS_OK);
    CHECK(met && ch[2] && ch[7] && !ch[5] && count(ch) == 2);
}

static void test_seeded(void) {
    fake f = {0};
    pr_prot_oracle o = {&f, verify};
    /* a ranking that never finds 5 within the budget; seeded with the block's edges it does */
    int rank[N] = {0, 1, 3, 4, 6, 7, 2, 5};
    pr_prot_search s = {N, rank, NULL, 2, 1};
    unsigned char ch[N] = {0};
    int met = 0;
    CHECK(pr_prot_greedy(&s, &o, ch, &met) == PRECIS_OK && !met);
    memset(ch, 0, sizeof ch);
    ch[2] = ch[5] = 1;
    CHECK(pr_prot_greedy(&s, &o, ch, &met) == PRECIS_OK);
    CHECK(met && ch[2] && ch[5] && count(ch) == 2 && !strcmp(f.last, "prune"));
}

static void test_block(void) {
    fake f = {0};
    pr_prot_oracle o = {&f, verify};
    int lo = -1, hi = -1, met = 0;
    CHECK(pr_prot_block(N, &o, &lo, &hi, &met) == PRECIS_OK);
    CHECK(met && lo == 2 && hi == 6);
    CHECK(f.calls <= 2 + 2 * 3); /* nothing, everything, then two bisections of 8 */
}

int main(void) {
    test_greedy_ranked();
    test_misleading_rank();
    test_prune_and_budget();
    test_swap_cheaper();
    test_seeded();
    test_block();
    return check_report("test_protect_search");
}
