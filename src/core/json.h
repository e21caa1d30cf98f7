/* A small JSON reader for precis's own input files (precision rules): parses
 * a whole document into a tree. Strings are UTF-8 with escapes decoded
 * (\uXXXX to UTF-8, surrogate pairs joined); numbers are doubles. Depth and
 * size are bounded; every error names the line and column. */
#ifndef PR_CORE_JSON_H
#define PR_CORE_JSON_H

#include <stddef.h>

#include "core/err.h"

typedef enum { PR_JSON_NULL, PR_JSON_BOOL, PR_JSON_NUM, PR_JSON_STR, PR_JSON_ARR, PR_JSON_OBJ } pr_json_kind;

typedef struct pr_json {
    pr_json_kind kind;
    int line;              /* where the value starts (1-based), for messages */
    double num;            /* NUM; BOOL: 0 or 1 */
    char *str;             /* STR */
    int n;                 /* ARR, OBJ: number of items */
    struct pr_json *items; /* ARR, OBJ: the values */
    char **keys;           /* OBJ: the keys, in file order */
} pr_json;

/* Parse text[0..len) (what = the file name, for messages). *out gets a tree
 * to free with pr_json_free. */
precis_status pr_json_parse(const char *text, size_t len, const char *what, pr_json **out,
                            pr_err *e);
void pr_json_free(pr_json *j);

/* The value of key in object o, or NULL (also when o is not an object). */
const pr_json *pr_json_get(const pr_json *o, const char *key);

#endif
