/* Timed choices of an engine (TensorRT's "tactics"), kept in the plan.
 *
 * Some CPU steps pick between implementations by timing them on the machine
 * (the Winograd or direct float convolution, running a batch whole or split
 * per sample). The choices change numerics at the last bits, so a plan that
 * re-timed them when loaded could compute other bits than the engine that
 * built it. Every timed choice is recorded here under a key naming the step
 * and the shape; precis_engine_save writes the table into the plan's
 * metadata (key "precis.tactics", one "key=choice" line each) and a loaded
 * engine takes a recorded choice without timing again. Shapes never timed
 * before are timed and added as usual.
 *
 * Thread-safe: contexts of one engine may run on several threads. */
#ifndef PR_RUNTIME_TACTICS_H
#define PR_RUNTIME_TACTICS_H

#include <stdbool.h>

#include "core/err.h"

typedef struct pr_tactics pr_tactics;

/* NULL on OOM. */
pr_tactics *pr_tactics_create(void);
void pr_tactics_destroy(pr_tactics *t);

/* The recorded choice for key, or -1 (none; also for t NULL). */
int pr_tactics_get(pr_tactics *t, const char *key);

/* Records (or replaces) key's choice (>= 0). False on OOM or a key the
 * text form cannot hold ('=' or a line break in it); the choice is then
 * simply not kept. */
bool pr_tactics_put(pr_tactics *t, const char *key, int choice);

/* The table as text ("key=choice\n" each, in the order recorded); the
 * caller frees it. NULL on OOM; "" for an empty table. */
char *pr_tactics_text(pr_tactics *t);

/* Adds the lines of text (pr_tactics_text's form) to t. A malformed line is
 * an error naming it (a plan whose metadata was edited by hand). */
precis_status pr_tactics_parse(pr_tactics *t, const char *text, pr_err *e);

#endif
