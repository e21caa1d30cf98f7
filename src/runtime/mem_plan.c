#include "runtime/mem_plan.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct slot {
    size_t bytes, off;
    int first, last;
} slot;

static int root_of(const pr_mem_item *it, int i) {
    while (it[i].alias >= 0) i = it[i].alias;
    return i;
}

static int by_size_desc(const void *a, const void *b) {
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->first - y->first;
}

static size_t align64(size_t v) { return (v + 63) & ~(size_t)63; }

size_t pr_mem_plan(const pr_mem_item *items, int n, size_t *offset) {
    slot *s = calloc((size_t)(n ? n : 1), sizeof *s);
    slot **order = malloc((size_t)(n ? n : 1) * sizeof *order);
    slot **placed = malloc((size_t)(n ? n : 1) * sizeof *placed);
    if (!s || !order || !placed) {
        free(s);
        free(order);
        free(placed);
        return SIZE_MAX;
    }
    for (int i = 0; i < n; i++) s[i].first = -1;
    for (int i = 0; i < n; i++) {
        offset[i] = SIZE_MAX;
        if (!items[i].bytes) continue;
        slot *r = &s[root_of(items, i)];
        size_t b = align64(items[i].bytes);
        if (r->first < 0) {
            r->first = items[i].first;
            r->last = items[i].last;
        } else {
            if (items[i].first < r->first) r->first = items[i].first;
            if (items[i].last > r->last) r->last = items[i].last;
        }
        if (b > r->bytes) r->bytes = b;
    }
    int ns = 0;
    for (int i = 0; i < n; i++)
        if (s[i].bytes) order[ns++] = &s[i];
    qsort(order, (size_t)ns, sizeof *order, by_size_desc);
    size_t total = 0;
    int np = 0;
    for (int k = 0; k < ns; k++) {
        slot *c = order[k];
        /* candidate offsets: 0 and the end of every placed slot that overlaps in time */
        size_t best = SIZE_MAX;
        for (int cand = -1; cand < np; cand++) {
            size_t off = cand < 0 ? 0 : placed[cand]->off + placed[cand]->bytes;
            if (cand >= 0 && (placed[cand]->last < c->first || placed[cand]->first > c->last))
                continue;
            if (off >= best) continue;
            int ok = 1;
            for (int j = 0; j < np && ok; j++) {
                const slot *p = placed[j];
                if (p->last < c->first || p->first > c->last) continue;
                if (off < p->off + p->bytes && p->off < off + c->bytes) ok = 0;
            }
            if (ok) best = off;
        }
        c->off = best;
        placed[np++] = c;
        if (best + c->bytes > total) total = best + c->bytes;
    }
    for (int i = 0; i < n; i++)
        if (items[i].bytes) offset[i] = s[root_of(items, i)].off;
    free(s);
    free(order);
    free(placed);
    return total;
}
