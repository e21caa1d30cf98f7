#include "core/json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct jp {
    const char *s, *end, *what;
    int line;
    const char *line_start;
    pr_err *e;
} jp;

static precis_status jerr(jp *p, const char *msg) {
    return pr_errf(p->e, PRECIS_ERR_PARSE, "%s:%d:%d: %s", p->what, p->line,
                   (int)(p->s - p->line_start) + 1, msg);
}

static void ws(jp *p) {
    while (p->s < p->end) {
        char c = *p->s;
        if (c == '\n') {
            p->line++;
            p->line_start = p->s + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            break;
        }
        p->s++;
    }
}

static void free_items(pr_json *j) {
    for (int i = 0; i < j->n; i++) {
        free_items(&j->items[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    free(j->str);
}

void pr_json_free(pr_json *j) {
    if (!j) return;
    free_items(j);
    free(j);
}

static int hex4(const char *s, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d > 15) return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* p->s at the opening quote; *out a new NUL-terminated string */
static precis_status string(jp *p, char **out) {
    const char *s = ++p->s;
    size_t cap = 0;
    while (s < p->end && *s != '"') s += (*s == '\\' && s + 1 < p->end) ? 2 : 1, cap++;
    if (s >= p->end) return jerr(p, "unterminated string");
    char *o = malloc(cap * 4 + 1), *w = o;
    if (!o) return pr_errf(p->e, PRECIS_ERR_OOM, "out of memory reading %s", p->what);
    while (*p->s != '"') {
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20) {
            free(o);
            return jerr(p, "control character in a string");
        }
        if (c != '\\') {
            *w++ = (char)c;
            p->s++;
            continue;
        }
        char x = p->s[1];
        p->s += 2;
        const char *map = strchr("\"\"\\\\//b\bf\fn\nr\rt\t", x);
        if (x && map && ((map - "\"\"\\\\//b\bf\fn\nr\rt\t") % 2) == 0) {
            *w++ = map[1];
            continue;
        }
        unsigned cp;
        if (x != 'u' || p->end - p->s < 4 || hex4(p->s, &cp)) {
            free(o);
            return jerr(p, "bad escape in a string");
        }
        p->s += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && p->end - p->s >= 6 && p->s[0] == '\\' &&
            p->s[1] == 'u') {
            unsigned lo;
            if (!hex4(p->s + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p->s += 6;
            }
        }
        w += put_utf8(w, cp);
    }
    p->s++;
    *w = 0;
    *out = o;
    return PRECIS_OK;
}

static precis_status value(jp *p, pr_json *v, int depth);

static precis_status push(jp *p, pr_json *v, int *cap) {
    if (v->n == *cap) {
        int nc = *cap ? *cap * 2 : 4;
        pr_json *ni = realloc(v->items, (size_t)nc * sizeof *ni);
        if (!ni) return pr_errf(p->e, PRECIS_ERR_OOM, "out of memory reading %s", p->what);
        v->items = ni;
        if (v->kind == PR_JSON_OBJ) {
            char **nk = realloc(v->keys, (size_t)nc * sizeof *nk);
            if (!nk) return pr_errf(p->e, PRECIS_ERR_OOM, "out of memory reading %s", p->what);
            v->keys = nk;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[0]);
    if (v->kind == PR_JSON_OBJ) v->keys[v->n] = NULL;
    v->n++;
    return PRECIS_OK;
}

static precis_status container(jp *p, pr_json *v, int depth) {
    bool obj = *p->s == '{';
    char close = obj ? '}' : ']';
    v->kind = obj ? PR_JSON_OBJ : PR_JSON_ARR;
    int cap = 0;
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        return PRECIS_OK;
    }
    for (;;) {
        precis_status st = push(p, v, &cap);
        if (st) return st;
        ws(p);
        if (obj) {
            if (p->s >= p->end || *p->s != '"') return jerr(p, "expected a key string");
            if ((st = string(p, &v->keys[v->n - 1]))) return st;
            ws(p);
            if (p->s >= p->end || *p->s != ':') return jerr(p, "expected ':'");
            p->s++;
        }
        if ((st = value(p, &v->items[v->n - 1], depth + 1))) return st;
        ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == close) {
            p->s++;
            return PRECIS_OK;
        }
        return jerr(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool word(jp *p, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n) != 0) return false;
    p->s += n;
    return true;
}

static precis_status value(jp *p, pr_json *v, int depth) {
    if (depth > JSON_MAX_DEPTH) return jerr(p, "nested too deeply");
    ws(p);
    v->line = p->line;
    if (p->s >= p->end) return jerr(p, "unexpected end of file");
    char c = *p->s;
    if (c == '{' || c == '[') return container(p, v, depth);
    if (c == '"') {
        v->kind = PR_JSON_STR;
        return string(p, &v->str);
    }
    if (word(p, "true") || word(p, "false")) {
        v->kind = PR_JSON_BOOL;
        v->num = p->s[-1] == 'e' && p->s[-2] == 'u';
        return PRECIS_OK;
    }
    if (word(p, "null")) {
        v->kind = PR_JSON_NULL;
        return PRECIS_OK;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t k = 0;
        while (p->s + k < p->end && k < sizeof buf - 1 && strchr("+-0123456789.eE", p->s[k]))
            k++;
        memcpy(buf, p->s, k);
        buf[k] = 0;
        char *end;
        v->num = strtod(buf, &end);
        if (end != buf + k) return jerr(p, "bad number");
        v->kind = PR_JSON_NUM;
        p->s += k;
        return PRECIS_OK;
    }
    return jerr(p, "unexpected character");
}

precis_status pr_json_parse(const char *text, size_t len, const char *what, pr_json **out,
                            pr_err *e) {
    *out = NULL;
    jp p = {text, text + len, what, 1, text, e};
    pr_json *j = calloc(1, sizeof *j);
    if (!j) return pr_errf(e, PRECIS_ERR_OOM, "out of memory reading %s", what);
    precis_status st = value(&p, j, 0);
    if (!st) {
        ws(&p);
        if (p.s != p.end) st = jerr(&p, "text after the JSON value");
    }
    if (st) {
        pr_json_free(j);
        return st;
    }
    *out = j;
    return PRECIS_OK;
}

const pr_json *pr_json_get(const pr_json *o, const char *key) {
    if (!o || o->kind != PR_JSON_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (o->keys[i] && strcmp(o->keys[i], key) == 0) return &o->items[i];
    return NULL;
}
