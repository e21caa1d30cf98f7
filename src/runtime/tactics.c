/* Timed choices of an engine: see tactics.h. */
#include "runtime/tactics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;
    int choice;
} entry;

struct pr_tactics {
    pthread_mutex_t mu;
    entry *v;
    int n, cap;
};

pr_tactics *pr_tactics_create(void) {
    pr_tactics *t = calloc(1, sizeof *t);
    if (t && pthread_mutex_init(&t->mu, NULL)) {
        free(t);
        return NULL;
    }
    return t;
}

void pr_tactics_destroy(pr_tactics *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->v[i].key);
    free(t->v);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int find(const pr_tactics *t, const char *key) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->v[i].key, key) == 0) return i;
    return -1;
}

int pr_tactics_get(pr_tactics *t, const char *key) {
    if (!t || !key) return -1;
    pthread_mutex_lock(&t->mu);
    int i = find(t, key), c = i >= 0 ? t->v[i].choice : -1;
    pthread_mutex_unlock(&t->mu);
    return c;
}

bool pr_tactics_put(pr_tactics *t, const char *key, int choice) {
    if (!t || !key || !key[0] || choice < 0 || strpbrk(key, "=\n\r")) return false;
    bool ok = true;
    pthread_mutex_lock(&t->mu);
    int i = find(t, key);
    if (i >= 0) {
        t->v[i].choice = choice;
    } else {
        if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 16;
            entry *v = realloc(t->v, (size_t)cap * sizeof *v);
            if (v) t->v = v, t->cap = cap;
        }
        char *k = t->n < t->cap ? dup(key) : NULL;
        if (k) t->v[t->n++] = (entry){k, choice};
        ok = k != NULL;
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

char *pr_tactics_text(pr_tactics *t) {
    if (!t) return dup("");
    pthread_mutex_lock(&t->mu);
    size_t len = 1;
    for (int i = 0; i < t->n; i++) len += strlen(t->v[i].key) + 16;
    char *s = malloc(len), *p = s;
    if (s) {
        *p = 0;
        for (int i = 0; i < t->n; i++) {
            size_t k = strlen(t->v[i].key);
            memcpy(p, t->v[i].key, k);
            p += k;
            p += snprintf(p, 16, "=%d\n", t->v[i].choice);
        }
    }
    pthread_mutex_unlock(&t->mu);
    return s;
}

precis_status pr_tactics_parse(pr_tactics *t, const char *text, pr_err *e) {
    if (!t || !text) return PRECIS_OK;
    int line = 0;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        line++;
        const char *eq = NULL;
        for (size_t i = len; i > 0 && !eq; i--)
            if (s[i - 1] == '=') eq = s + i - 1;
        char *end = NULL;
        long c = eq ? strtol(eq + 1, &end, 10) : -1;
        if (!eq || eq == s || end == eq + 1 || end != s + len || c < 0 || c > 1000000)
            return pr_errf(e, PRECIS_ERR_PARSE, "plan metadata precis.tactics, line %d: "
                           "expected key=choice, got '%.*s'", line, (int)(len > 80 ? 80 : len), s);
        char key[512];
        size_t kl = (size_t)(eq - s);
        if (kl >= sizeof key)
            return pr_errf(e, PRECIS_ERR_PARSE, "plan metadata precis.tactics, line %d: key too long",
                           line);
        memcpy(key, s, kl);
        key[kl] = 0;
        if (!pr_tactics_put(t, key, (int)c))
            return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        s += len + (nl ? 1 : 0);
    }
    return PRECIS_OK;
}
