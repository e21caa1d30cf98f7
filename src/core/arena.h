/* Bump allocator: many small allocations freed together. Not thread-safe. */
#ifndef PR_CORE_ARENA_H
#define PR_CORE_ARENA_H

#include <stddef.h>

typedef struct pr_arena pr_arena;

pr_arena *pr_arena_create(void);
void pr_arena_destroy(pr_arena *a);
/* Zeroed memory aligned to 64 bytes, or NULL when out of memory. */
void *pr_arena_alloc(pr_arena *a, size_t size);
/* Copy of s (NUL-terminated), or of the first n bytes plus NUL. NULL on OOM. */
char *pr_arena_strdup(pr_arena *a, const char *s);
char *pr_arena_strndup(pr_arena *a, const char *s, size_t n);
/* Total bytes handed out so far. */
size_t pr_arena_used(const pr_arena *a);

#endif
