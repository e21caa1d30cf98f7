/* Activation memory planner: places tensors with known sizes and lifetimes
 * [first, last] (step indices, inclusive) at offsets of one arena so that
 * tensors alive at the same time never overlap. Tensors may share a slot
 * (in-place kernels): alias[t] >= 0 names the tensor whose storage t reuses;
 * the slot's lifetime is the union. Greedy: largest slot first, lowest
 * offset that fits. Offsets are 64-byte aligned. */
#ifndef PR_RUNTIME_MEM_PLAN_H
#define PR_RUNTIME_MEM_PLAN_H

#include <stddef.h>

typedef struct pr_mem_item {
    size_t bytes;  /* 0: not planned (offset left SIZE_MAX) */
    int first, last;
    int alias;     /* -1, or an earlier item whose storage this one reuses */
} pr_mem_item;

/* Fills offset[i] for every planned item; returns the arena size, or
 * SIZE_MAX on OOM. */
size_t pr_mem_plan(const pr_mem_item *items, int n, size_t *offset);

#endif
