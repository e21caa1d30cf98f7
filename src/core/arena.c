#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pr_block {
    struct pr_block *next;
    size_t size, used;
    _Alignas(64) unsigned char data[];
} pr_block;

struct pr_arena {
    pr_block *head;
    size_t total;
};

#define PR_ARENA_BLOCK (64 * 1024)

pr_arena *pr_arena_create(void) { return calloc(1, sizeof(pr_arena)); }

void pr_arena_destroy(pr_arena *a) {
    if (!a) return;
    pr_block *b = a->head;
    while (b) {
        pr_block *n = b->next;
        free(b);
        b = n;
    }
    free(a);
}

void *pr_arena_alloc(pr_arena *a, size_t size) {
    if (size == 0) size = 1;
    if (size > SIZE_MAX - 128) return NULL;
    size_t need = (size + 63) & ~(size_t)63;
    pr_block *b = a->head;
    if (!b || b->size - b->used < need) {
        size_t bs = need > PR_ARENA_BLOCK ? need : PR_ARENA_BLOCK;
        b = aligned_alloc(64, (sizeof(pr_block) + bs + 63) & ~(size_t)63);
        if (!b) return NULL;
        b->size = bs;
        b->used = 0;
        /* Big one-off blocks go behind the head so the head keeps its free space. */
        if (a->head && need > PR_ARENA_BLOCK) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += need;
    a->total += need;
    memset(p, 0, size);
    return p;
}

char *pr_arena_strndup(pr_arena *a, const char *s, size_t n) {
    char *p = pr_arena_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *pr_arena_strdup(pr_arena *a, const char *s) {
    return pr_arena_strndup(a, s ? s : "", s ? strlen(s) : 0);
}

size_t pr_arena_used(const pr_arena *a) { return a->total; }
