/* The timing cache file (see cuda_tcache.h). */
#define _POSIX_C_SOURCE 200809L
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_tcache.h"

#define MAGIC "precis-timing-cache 1"
#define NF 5
static const char *const fields[NF] = {"gpu", "compute", "cuda_runtime", "cublasLt", "cudnn"};

typedef struct tc_entry {
    char *key;
    unsigned char *val;
    size_t n;
    bool used; /* read or added by this process: what pr_cuda_tcache_text writes */
} tc_entry;

struct pr_cuda_tcache {
    char *path;  /* NULL: in memory only (a plan's choices, or a build without a file) */
    char *label; /* the path, or "the plan's timed choices": for messages */
    char have[NF][256];
    tc_entry *ents;
    int n, cap, hits, added;
    pthread_mutex_t mu;
};

static void header_of(const char *name, const char *arch, char (*h)[256]) {
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    snprintf(h[0], 256, "%s", name);
    snprintf(h[1], 256, "%s", arch);
    snprintf(h[2], 256, "%d", rt);
    snprintf(h[3], 256, "%zu", cublasLtGetVersion());
    snprintf(h[4], 256, "%zu", cudnnGetVersion());
}

static int find(const pr_cuda_tcache *c, const char *key) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->ents[i].key, key)) return i;
    return -1;
}

static bool add(pr_cuda_tcache *c, const char *key, const void *val, size_t n) {
    int i = find(c, key);
    if (i >= 0) {
        if (c->ents[i].n != n) return false;
        memcpy(c->ents[i].val, val, n);
        return true;
    }
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        tc_entry *ne = realloc(c->ents, (size_t)cap * sizeof *ne);
        if (!ne) return false;
        c->ents = ne;
        c->cap = cap;
    }
    tc_entry *t = &c->ents[c->n];
    t->key = strdup(key);
    t->val = malloc(n ? n : 1);
    t->n = n;
    if (!t->key || !t->val) {
        free(t->key);
        free(t->val);
        return false;
    }
    memcpy(t->val, val, n);
    t->used = false;
    c->n++;
    return true;
}

static int hexval(int ch) {
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Reads an existing file into c; refuses another header. */
static precis_status load(pr_cuda_tcache *c, FILE *f, pr_err *e) {
    char line[4096];
    unsigned char val[1024];
    int ln = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, MAGIC, strlen(MAGIC)))
        return pr_errf(e, PRECIS_ERR_PARSE, "timing cache '%s': not a precis timing cache",
                       c->label);
    while (fgets(line, sizeof line, f)) {
        ln++;
        line[strcspn(line, "\r\n")] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) continue;
        *tab = 0;
        const char *v = tab + 1;
        if (ln <= NF) { /* header fields in order */
            if (strcmp(line, fields[ln - 1]))
                return pr_errf(e, PRECIS_ERR_PARSE, "timing cache '%s': line %d: expected '%s'",
                               c->label, ln + 1, fields[ln - 1]);
            if (strcmp(v, c->have[ln - 1]))
                return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                               "timing cache '%s' was made for %s %s, this machine has %s %s: "
                               "use another file or delete it",
                               c->label, fields[ln - 1], v, fields[ln - 1], c->have[ln - 1]);
            continue;
        }
        size_t hl = strlen(v), n = hl / 2;
        if (hl % 2 || n > sizeof val)
            return pr_errf(e, PRECIS_ERR_PARSE, "timing cache '%s': line %d: bad value", c->label,
                           ln + 1);
        for (size_t i = 0; i < n; i++) {
            int a = hexval(v[2 * i]), b = hexval(v[2 * i + 1]);
            if (a < 0 || b < 0)
                return pr_errf(e, PRECIS_ERR_PARSE, "timing cache '%s': line %d: bad value",
                               c->label, ln + 1);
            val[i] = (unsigned char)(a * 16 + b);
        }
        if (!add(c, line, val, n)) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    if (ln < NF)
        return pr_errf(e, PRECIS_ERR_PARSE, "timing cache '%s': header cut short", c->label);
    return PRECIS_OK;
}

static pr_cuda_tcache *tc_new(const char *path, const char *name, const char *arch) {
    pr_cuda_tcache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->path = path ? strdup(path) : NULL;
    c->label = strdup(path ? path : "the plan's timed choices");
    if ((path && !c->path) || !c->label) {
        free(c->path);
        free(c->label);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    header_of(name, arch, c->have);
    return c;
}

precis_status pr_cuda_tcache_open(const char *path, const char *name, const char *arch,
                                  pr_cuda_tcache **out, pr_err *e) {
    *out = NULL;
    pr_cuda_tcache *c = tc_new(path, name, arch);
    if (!c) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f) {
        precis_status st = load(c, f, e);
        fclose(f);
        if (st) {
            pr_cuda_tcache_close(c);
            return st;
        }
    } else if (path && errno != ENOENT) {
        precis_status st = pr_errf(e, PRECIS_ERR_IO, "timing cache '%s': %s", path,
                                   strerror(errno));
        pr_cuda_tcache_close(c);
        return st;
    }
    *out = c;
    return PRECIS_OK;
}

precis_status pr_cuda_tcache_open_text(const char *text, const char *name, const char *arch,
                                       pr_cuda_tcache **out, pr_err *e) {
    *out = NULL;
    pr_cuda_tcache *c = tc_new(NULL, name, arch);
    if (!c) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (text && text[0]) {
        FILE *f = fmemopen((void *)text, strlen(text), "r");
        precis_status st = f ? load(c, f, e) : pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        if (f) fclose(f);
        if (st) {
            pr_cuda_tcache_close(c);
            return st;
        }
    }
    *out = c;
    return PRECIS_OK;
}

/* Appends s to *buf (length *len, capacity *cap); false when out of memory. */
static bool tc_cat(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t l = strlen(s);
    if (*len + l + 1 > *cap) {
        size_t nc = (*cap ? 2 * *cap : 1024) + l;
        char *nb = realloc(*buf, nc);
        if (!nb) return false;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, l + 1);
    *len += l;
    return true;
}

char *pr_cuda_tcache_text(pr_cuda_tcache *c) {
    if (!c) return NULL;
    char *buf = NULL, line[320];
    size_t len = 0, cap = 0;
    bool ok = tc_cat(&buf, &len, &cap, MAGIC "\n");
    pthread_mutex_lock(&c->mu);
    for (int i = 0; ok && i < NF; i++) {
        snprintf(line, sizeof line, "%s\t%s\n", fields[i], c->have[i]);
        ok = tc_cat(&buf, &len, &cap, line);
    }
    for (int i = 0; ok && i < c->n; i++) {
        if (!c->ents[i].used) continue;
        ok = tc_cat(&buf, &len, &cap, c->ents[i].key) && tc_cat(&buf, &len, &cap, "\t");
        for (size_t j = 0; ok && j < c->ents[i].n; j++) {
            snprintf(line, sizeof line, "%02x", c->ents[i].val[j]);
            ok = tc_cat(&buf, &len, &cap, line);
        }
        ok = ok && tc_cat(&buf, &len, &cap, "\n");
    }
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

precis_status pr_cuda_tcache_save(pr_cuda_tcache *c, pr_err *e) {
    if (!c || !c->added || !c->path) return PRECIS_OK;
    pthread_mutex_lock(&c->mu);
    size_t pl = strlen(c->path);
    char *tmp = malloc(pl + 8);
    precis_status st = PRECIS_OK;
    FILE *f = NULL;
    if (!tmp) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    snprintf(tmp, pl + 8, "%s.tmp", c->path);
    if (!(f = fopen(tmp, "w"))) {
        st = pr_errf(e, PRECIS_ERR_IO, "timing cache '%s': %s", tmp, strerror(errno));
        goto done;
    }
    fprintf(f, "%s\n", MAGIC);
    for (int i = 0; i < NF; i++) fprintf(f, "%s\t%s\n", fields[i], c->have[i]);
    for (int i = 0; i < c->n; i++) {
        fprintf(f, "%s\t", c->ents[i].key);
        for (size_t j = 0; j < c->ents[i].n; j++) fprintf(f, "%02x", c->ents[i].val[j]);
        fputc('\n', f);
    }
    if (fclose(f) != 0 || rename(tmp, c->path) != 0)
        st = pr_errf(e, PRECIS_ERR_IO, "timing cache '%s': %s", c->path, strerror(errno));
    else
        c->added = 0;
done:
    free(tmp);
    pthread_mutex_unlock(&c->mu);
    return st;
}

void pr_cuda_tcache_close(pr_cuda_tcache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        free(c->ents[i].key);
        free(c->ents[i].val);
    }
    free(c->ents);
    free(c->path);
    free(c->label);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

bool pr_cuda_tcache_get(pr_cuda_tcache *c, const char *key, void *val, size_t n) {
    if (!c) return false;
    pthread_mutex_lock(&c->mu);
    int i = find(c, key);
    bool ok = i >= 0 && c->ents[i].n == n;
    if (ok) {
        memcpy(val, c->ents[i].val, n);
        c->ents[i].used = true;
        c->hits++;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

void pr_cuda_tcache_put(pr_cuda_tcache *c, const char *key, const void *val, size_t n) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    if (add(c, key, val, n)) {
        c->ents[find(c, key)].used = true;
        c->added++;
    }
    pthread_mutex_unlock(&c->mu);
}

void pr_cuda_tcache_counts(const pr_cuda_tcache *c, int *hits, int *added) {
    *hits = c ? c->hits : 0;
    *added = c ? c->added : 0;
}
