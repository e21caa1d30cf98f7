/* Calibration data sources: .npy folders (one subfolder per input for
 * multi-input models), list files and image folders. See calib_data.h. */
#define _POSIX_C_SOURCE 200809L

#include "io/calib_data.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/image.h"
#include "io/npy.h"

enum { K_OTHER, K_NPY, K_IMAGE };

#define MAX_LIST_BYTES ((size_t)64 << 20)
#define IMAGE_EXTS ".png, .jpg, .jpeg, .ppm, .pgm, .pnm"

struct pr_calib_source {
    int n_inputs;
    pr_calib_input *inputs; /* names owned */
    int n_batches, cap;
    char **paths;           /* [batch * n_inputs + input], owned */
    unsigned char *kinds;   /* K_NPY / K_IMAGE per path */
    int64_t *samples;       /* per batch, -1 until loaded */
    bool have_prep;
    pr_image_prep prep;
    uint64_t hash;
};

/* ------------------------------------------------------------ helpers */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fnv1a_u64(uint64_t h, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    return fnv1a(h, b, 8);
}

static int file_kind(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return K_OTHER;
    char ext[8];
    size_t n = strlen(dot + 1);
    if (n == 0 || n >= sizeof ext) return K_OTHER;
    for (size_t i = 0; i <= n; i++) {
        char c = dot[1 + i];
        ext[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    if (!strcmp(ext, "npy")) return K_NPY;
    static const char *const img[] = {"png", "jpg", "jpeg", "ppm", "pgm", "pnm"};
    for (size_t i = 0; i < sizeof img / sizeof img[0]; i++)
        if (!strcmp(ext, img[i])) return K_IMAGE;
    return K_OTHER;
}

static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    bool slash = a && dir[a - 1] != '/';
    char *p = malloc(a + slash + b + 1);
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (slash) p[a] = '/';
    memcpy(p + a + slash, name, b + 1);
    return p;
}

/* The subfolder name of an input: characters not allowed in file names
 * (on POSIX or Windows) replaced by '_'; "." and ".." become "_". */
static void folder_name(const char *in, char *out, size_t cap) {
    size_t n = 0;
    for (; in[n] && n + 1 < cap; n++) {
        unsigned char c = (unsigned char)in[n];
        out[n] = (c < 32 || strchr("/\\:*?\"<>|", c)) ? '_' : (char)c;
    }
    out[n] = '\0';
    if (!strcmp(out, ".") || !strcmp(out, "..")) snprintf(out, cap, "_");
}

static void fmt_dims(char *buf, size_t cap, int rank, const int64_t *dims) {
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < rank && n < cap; i++) {
        if (dims[i] < 0)
            n += (size_t)snprintf(buf + n, cap - n, "%s?", i ? "," : "");
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "", (long long)dims[i]);
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* ---------------------------------------------------------------- dirs */

typedef struct dent {
    char *name;
    bool dir;
} dent;

static int dent_cmp(const void *a, const void *b) {
    return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

static void free_dents(dent *d, int n) {
    for (int i = 0; i < n; i++) free(d[i].name);
    free(d);
}

/* The entries of dir (hidden ones, starting with '.', skipped), sorted by
 * name. Entries that are neither folders nor regular files fail. */
static precis_status list_dir(const char *dir, dent **out, int *n_out, pr_err *e) {
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return pr_errf(e, PRECIS_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    dent *v = NULL;
    int n = 0, cap = 0;
    precis_status st = PRECIS_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *full = join(dir, de->d_name);
        struct stat sb;
        if (!full) {
            st = pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory listing the folder", dir);
            goto fail;
        }
        if (stat(full, &sb) != 0 || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode))) {
            st = pr_errf(e, PRECIS_ERR_IO, "%s: not a regular file or folder", full);
            free(full);
            goto fail;
        }
        free(full);
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            dent *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                st = pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory listing the folder", dir);
                goto fail;
            }
            v = nv;
        }
        v[n].name = strdup(de->d_name);
        v[n].dir = S_ISDIR(sb.st_mode);
        if (!v[n].name) {
            st = pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory listing the folder", dir);
            goto fail;
        }
        n++;
    }
    closedir(d);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, dent_cmp);
    *out = v;
    *n_out = n;
    return PRECIS_OK;
fail:
    closedir(d);
    free_dents(v, n);
    return st;
}

/* Set (or grow) room for batch b, then set its path for input k. */
static precis_status put_path(pr_calib_source *s, int b, int k, char *path, int kind, pr_err *e) {
    if (!path) return pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
    if (b >= s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        while (cap <= b) cap *= 2;
        size_t m = (size_t)cap * (size_t)s->n_inputs;
        char **p = realloc(s->paths, m * sizeof *p);
        if (p) s->paths = p;
        unsigned char *kd = p ? realloc(s->kinds, m) : NULL;
        if (kd) s->kinds = kd;
        if (!p || !kd) {
            free(path);
            return pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
        }
        size_t old = (size_t)s->cap * (size_t)s->n_inputs;
        memset(s->paths + old, 0, (m - old) * sizeof *p);
        s->cap = cap;
    }
    size_t at = (size_t)b * (size_t)s->n_inputs + (size_t)k;
    s->paths[at] = path;
    s->kinds[at] = (unsigned char)kind;
    if (b >= s->n_batches) s->n_batches = b + 1;
    return PRECIS_OK;
}

/* The files of one flat folder as input k's samples: all .npy or all images. */
static precis_status add_folder_files(pr_calib_source *s, const char *dir, const dent *d, int n,
                                      int k, pr_err *e) {
    int first_npy = -1, first_img = -1;
    for (int i = 0; i < n; i++) {
        int kind = file_kind(d[i].name);
        if (kind == K_OTHER)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "%s/%s: unknown file type (want .npy or an image: " IMAGE_EXTS ")", dir,
                           d[i].name);
        if (kind == K_NPY && first_npy < 0) first_npy = i;
        if (kind == K_IMAGE && first_img < 0) first_img = i;
    }
    if (first_npy >= 0 && first_img >= 0)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: folder mixes .npy files (%s) and images (%s)", dir, d[first_npy].name,
                       d[first_img].name);
    for (int i = 0; i < n; i++) {
        precis_status st = put_path(s, i, k, join(dir, d[i].name), file_kind(d[i].name), e);
        if (st != PRECIS_OK) return st;
    }
    return PRECIS_OK;
}

static precis_status open_dir(pr_calib_source *s, const char *path, pr_err *e) {
    dent *d = NULL, *sd = NULL;
    int n = 0, nsd = 0, n_dirs = 0, first_dir = -1, first_file = -1;
    char *sub = NULL;
    precis_status st = list_dir(path, &d, &n, e);
    if (st != PRECIS_OK) return st;
    if (n == 0) {
        st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: empty folder (no .npy files or images)", path);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        if (d[i].dir) {
            n_dirs++;
            if (first_dir < 0) first_dir = i;
        } else if (first_file < 0) {
            first_file = i;
        }
    }
    if (n_dirs && n_dirs < n) {
        st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                     "%s: folder mixes subfolders (%s) and files (%s); use files for a one-input "
                     "model or one subfolder per input",
                     path, d[first_dir].name, d[first_file].name);
        goto fail;
    }
    if (!n_dirs) {
        if (s->n_inputs > 1) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                         "%s: the model has %d inputs ('%s', '%s'%s): the folder needs one "
                         "subfolder per input, named like it",
                         path, s->n_inputs, s->inputs[0].name, s->inputs[1].name,
                         s->n_inputs > 2 ? ", ..." : "");
            goto fail;
        }
        st = add_folder_files(s, path, d, n, 0, e);
        goto done;
    }
    /* one subfolder per input, each subfolder naming an input */
    for (int i = 0; i < n; i++) {
        bool used = false;
        char fn[512];
        for (int k = 0; k < s->n_inputs && !used; k++) {
            folder_name(s->inputs[k].name, fn, sizeof fn);
            used = !strcmp(fn, d[i].name);
        }
        if (!used) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s/%s: subfolder matches no model input", path,
                         d[i].name);
            goto fail;
        }
    }
    for (int k = 0; k < s->n_inputs; k++) {
        char fn[512];
        folder_name(s->inputs[k].name, fn, sizeof fn);
        bool found = false;
        for (int i = 0; i < n && !found; i++) found = !strcmp(fn, d[i].name);
        if (!found) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: no subfolder '%s' for input '%s'", path,
                         fn, s->inputs[k].name);
            goto fail;
        }
    }
    int count0 = -1;
    char fn0[512] = "";
    for (int k = 0; k < s->n_inputs; k++) {
        char fn[512];
        folder_name(s->inputs[k].name, fn, sizeof fn);
        sub = join(path, fn);
        if (!sub) {
            st = pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
            goto fail;
        }
        PR_TRY(list_dir(sub, &sd, &nsd, e));
        if (nsd == 0) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: empty folder (no .npy files or images)",
                         sub);
            goto fail;
        }
        for (int i = 0; i < nsd; i++)
            if (sd[i].dir) {
                st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                             "%s/%s: unexpected folder inside an input's subfolder", sub,
                             sd[i].name);
                goto fail;
            }
        if (count0 >= 0 && nsd != count0) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                         "%s: subfolder '%s' holds %d files but '%s' holds %d (inputs are matched "
                         "by sorted order)",
                         path, fn0, count0, fn, nsd);
            goto fail;
        }
        if (count0 < 0) {
            count0 = nsd;
            snprintf(fn0, sizeof fn0, "%s", fn);
        }
        PR_TRY(add_folder_files(s, sub, sd, nsd, k, e));
        free_dents(sd, nsd);
        sd = NULL;
        nsd = 0;
        free(sub);
        sub = NULL;
    }
    goto done;
fail:
done:
    free(sub);
    free_dents(sd, nsd);
    free_dents(d, n);
    return st;
}

/* ---------------------------------------------------------------- lists */

static precis_status list_entry(pr_calib_source *s, const char *list, int line, const char *dir,
                                const char *p, size_t len, int b, int k, pr_err *e) {
    if (len == 0)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s:%d: empty path for input '%s'", list, line,
                       s->inputs[k].name);
    char *rel = malloc(len + 1);
    if (!rel) return pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
    memcpy(rel, p, len);
    rel[len] = '\0';
    int kind = file_kind(rel);
    if (kind == K_OTHER) {
        precis_status st = pr_errf(
            e, PRECIS_ERR_INVALID_ARG,
            "%s:%d: '%s': unknown file type (want .npy or an image: " IMAGE_EXTS ")", list, line,
            rel);
        free(rel);
        return st;
    }
    char *full = rel[0] == '/' || !*dir ? rel : join(dir, rel);
    if (full != rel) free(rel);
    return put_path(s, b, k, full, kind, e);
}

static precis_status open_list(pr_calib_source *s, const char *path, pr_err *e) {
    FILE *f = fopen(path, "rb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = malloc(MAX_LIST_BYTES + 1), *dir = NULL;
    size_t n = buf ? fread(buf, 1, MAX_LIST_BYTES + 1, f) : 0;
    bool rerr = ferror(f) != 0;
    fclose(f);
    precis_status st = PRECIS_OK;
    if (!buf) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", path);
    if (rerr) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: read error", path);
        goto done;
    }
    if (n > MAX_LIST_BYTES) {
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: list file larger than %zu bytes", path,
                     MAX_LIST_BYTES);
        goto done;
    }
    if (memchr(buf, '\0', n)) {
        st = pr_errf(e, PRECIS_ERR_PARSE, "%s: not a text list file (holds NUL bytes)", path);
        goto done;
    }
    buf[n] = '\0';
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    dir = malloc(dl + 1);
    if (!dir) {
        st = pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", path);
        goto done;
    }
    memcpy(dir, path, dl);
    dir[dl] = '\0';
    int line = 0, b = 0;
    char *p = buf;
    while (*p) {
        char *eol = strchr(p, '\n');
        char *next = eol ? eol + 1 : p + strlen(p);
        if (eol) *eol = '\0';
        line++;
        size_t ll = strlen(p);
        while (ll && (p[ll - 1] == '\r' || p[ll - 1] == ' ' || p[ll - 1] == '\t')) p[--ll] = '\0';
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#') {
            p = next;
            continue;
        }
        if (s->n_inputs == 1) {
            /* the whole line is the path (spaces allowed), "name=" optional */
            size_t nl = strlen(s->inputs[0].name);
            if (!strncmp(p, s->inputs[0].name, nl) && p[nl] == '=') p += nl + 1;
            PR_TRY(list_entry(s, path, line, dir, p, strlen(p), b, 0, e));
        } else {
            unsigned long long have = 0; /* bitmask of inputs given (n_inputs <= 64 here) */
            char *q = p;
            while (*q) {
                while (*q == ' ' || *q == '\t') q++;
                if (!*q) break;
                char *tok = q;
                while (*q && *q != ' ' && *q != '\t') q++;
                size_t tl = (size_t)(q - tok);
                int best = -1;
                size_t best_len = 0;
                for (int k = 0; k < s->n_inputs; k++) {
                    size_t nl = strlen(s->inputs[k].name);
                    if (nl + 1 <= tl && !strncmp(tok, s->inputs[k].name, nl) && tok[nl] == '=' &&
                        (best < 0 || nl > best_len)) {
                        best = k;
                        best_len = nl;
                    }
                }
                if (best < 0) {
                    st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                                 "%s:%d: '%.*s' is not name=path for a model input ('%s', '%s'%s)",
                                 path, line, (int)(tl > 200 ? 200 : tl), tok, s->inputs[0].name,
                                 s->inputs[1].name, s->n_inputs > 2 ? ", ..." : "");
                    goto done;
                }
                if (have >> best & 1) {
                    st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s:%d: input '%s' given twice", path,
                                 line, s->inputs[best].name);
                    goto done;
                }
                have |= 1ull << best;
                PR_TRY(list_entry(s, path, line, dir, tok + best_len + 1, tl - best_len - 1, b,
                                  best, e));
            }
            for (int k = 0; k < s->n_inputs; k++)
                if (!(have >> k & 1)) {
                    st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s:%d: no path for input '%s'", path,
                                 line, s->inputs[k].name);
                    goto done;
                }
        }
        b++;
        p = next;
    }
    if (b == 0)
        st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: list file names no data (no entry lines)",
                     path);
    goto done;
fail:
done:
    free(dir);
    free(buf);
    return st;
}

/* ---------------------------------------------------------------- open */

/* Every file's bytes (with its length) in order, then the spec. */
static precis_status compute_hash(pr_calib_source *s, const char *spec_norm, pr_err *e) {
    enum { CHUNK = 1 << 16 };
    unsigned char *buf = malloc(CHUNK);
    if (!buf) return pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
    uint64_t h = fnv1a(0xcbf29ce484222325ull, "precis-calib-data-1", 19);
    h = fnv1a_u64(h, (uint64_t)s->n_inputs);
    size_t total = (size_t)s->n_batches * (size_t)s->n_inputs;
    precis_status st = PRECIS_OK;
    for (size_t i = 0; i < total; i++) {
        FILE *f = fopen(s->paths[i], "rb");
        if (!f) {
            st = pr_errf(e, PRECIS_ERR_IO, "%s: cannot open: %s", s->paths[i], strerror(errno));
            break;
        }
        uint64_t len = 0;
        size_t got;
        while ((got = fread(buf, 1, CHUNK, f)) > 0) {
            h = fnv1a(h, buf, got);
            len += got;
        }
        bool err = ferror(f) != 0;
        fclose(f);
        if (err) {
            st = pr_errf(e, PRECIS_ERR_IO, "%s: read error", s->paths[i]);
            break;
        }
        h = fnv1a_u64(h, len);
    }
    free(buf);
    size_t sl = strlen(spec_norm);
    h = fnv1a_u64(fnv1a(h, spec_norm, sl), (uint64_t)sl);
    s->hash = h;
    return st;
}

precis_status pr_calib_source_open(const char *path, const char *preprocess,
                                   const pr_calib_input *inputs, int n_inputs,
                                   pr_calib_source **out, pr_err *e) {
    *out = NULL;
    if (!path || !*path) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "calibration data: no path");
    if (!inputs || n_inputs < 1 || n_inputs > 64)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "calibration data: %d model inputs (want 1..64)",
                       n_inputs);
    for (int k = 0; k < n_inputs; k++)
        if (!inputs[k].name || inputs[k].rank < 0 || inputs[k].rank > PRECIS_MAX_RANK)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "calibration data: input %d has no name or a bad rank", k);
    pr_calib_source *s = calloc(1, sizeof *s);
    precis_status st = PRECIS_OK;
    if (!s || !(s->inputs = calloc((size_t)n_inputs, sizeof *s->inputs))) {
        free(s);
        return pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
    }
    s->n_inputs = n_inputs;
    for (int k = 0; k < n_inputs; k++) {
        s->inputs[k] = inputs[k];
        s->inputs[k].name = strdup(inputs[k].name);
        if (!s->inputs[k].name) {
            st = pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
            goto fail;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: cannot access calibration data: %s", path,
                     strerror(errno));
        goto fail;
    }
    if (S_ISDIR(sb.st_mode)) {
        PR_TRY(open_dir(s, path, e));
    } else if (S_ISREG(sb.st_mode) && file_kind(path) != K_OTHER) {
        /* one .npy file or image: one batch of a one-input model */
        if (n_inputs > 1) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                         "%s: one file cannot feed a model with %d inputs (use a folder with a "
                         "subfolder per input, or a list file)",
                         path, n_inputs);
            goto fail;
        }
        char *p = strdup(path);
        PR_TRY(put_path(s, 0, 0, p, file_kind(path), e));
    } else if (S_ISREG(sb.st_mode)) {
        PR_TRY(open_list(s, path, e));
    } else {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: not a folder or regular file", path);
        goto fail;
    }
    size_t total = (size_t)s->n_batches * (size_t)s->n_inputs;
    const char *first_img = NULL;
    for (size_t i = 0; i < total && !first_img; i++)
        if (s->kinds[i] == K_IMAGE) first_img = s->paths[i];
    bool spec = preprocess && *preprocess;
    if (spec && !first_img) {
        st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                     "%s: a preprocessing spec was given but the data is .npy (preprocessing "
                     "applies to images only)",
                     path);
        goto fail;
    }
    if (!spec && first_img) {
        st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                     "%s: images need a preprocessing spec (e.g. "
                     "resize=256,crop=224,mean=0.485:0.456:0.406,std=0.229:0.224:0.225)",
                     first_img);
        goto fail;
    }
    char norm[512] = "";
    if (spec) {
        PR_TRY(pr_image_prep_parse(preprocess, &s->prep, e));
        s->have_prep = true;
        pr_image_prep_normalize(&s->prep, norm, sizeof norm);
    }
    s->samples = malloc((size_t)s->n_batches * sizeof *s->samples);
    if (!s->samples) {
        st = pr_errf(e, PRECIS_ERR_OOM, "calibration data: out of memory");
        goto fail;
    }
    for (int i = 0; i < s->n_batches; i++) s->samples[i] = -1;
    PR_TRY(compute_hash(s, norm, e));
    *out = s;
    return PRECIS_OK;
fail:
    pr_calib_source_close(s);
    return st;
}

void pr_calib_source_close(pr_calib_source *s) {
    if (!s) return;
    size_t total = (size_t)s->cap * (size_t)s->n_inputs;
    for (size_t i = 0; s->paths && i < total; i++) free(s->paths[i]);
    free(s->paths);
    free(s->kinds);
    free(s->samples);
    for (int k = 0; s->inputs && k < s->n_inputs; k++) free((char *)s->inputs[k].name);
    free(s->inputs);
    free(s);
}

int pr_calib_source_batches(const pr_calib_source *s) { return s ? s->n_batches : 0; }

uint64_t pr_calib_source_hash(const pr_calib_source *s) { return s ? s->hash : 0; }

int64_t pr_calib_source_samples(const pr_calib_source *s, int i) {
    return s && i >= 0 && i < s->n_batches ? s->samples[i] : -1;
}

/* ---------------------------------------------------------------- load */

/* dtype and shape of t (from `path`) against input `in`; a tensor one rank
 * short gets a leading batch dim of 1. */
static precis_status check_tensor(precis_tensor *t, const pr_calib_input *in, const char *path,
                                  pr_err *e) {
    pr_buf *b = &t->b;
    if (b->dtype != in->dtype)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: dtype %s does not match input '%s' (%s)",
                       path, precis_dtype_name(b->dtype), in->name, precis_dtype_name(in->dtype));
    if (in->rank >= 1 && b->rank == in->rank - 1) {
        memmove(b->dims + 1, b->dims, (size_t)b->rank * sizeof b->dims[0]);
        b->dims[0] = 1;
        b->rank++;
    }
    bool ok = b->rank == in->rank;
    for (int d = 0; ok && d < in->rank; d++) ok = in->dims[d] < 0 || in->dims[d] == b->dims[d];
    if (!ok) {
        char got[160], want[160];
        fmt_dims(got, sizeof got, b->rank, b->dims);
        fmt_dims(want, sizeof want, in->rank, in->dims);
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: shape %s does not match input '%s' %s (a sample may leave out the "
                       "batch dim)",
                       path, got, in->name, want);
    }
    return PRECIS_OK;
}

static precis_status load_image(pr_calib_source *s, const pr_calib_input *in, const char *path,
                                precis_tensor **t, pr_err *e) {
    char want[160];
    fmt_dims(want, sizeof want, in->rank, in->dims);
    if (in->dtype != PRECIS_FLOAT32)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: images give float32 samples but input '%s' is %s", path, in->name,
                       precis_dtype_name(in->dtype));
    if (in->rank != 4)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: images give 4-d samples but input '%s' is %s", path, in->name, want);
    int64_t c = s->prep.nhwc ? in->dims[3] : in->dims[1];
    int64_t h = s->prep.nhwc ? in->dims[1] : in->dims[2];
    int64_t w = s->prep.nhwc ? in->dims[2] : in->dims[3];
    if (c >= 0 && c != 3)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: images give 3 channels but input '%s' %s has %lld (layout %s)", path,
                       in->name, want, (long long)c, s->prep.nhwc ? "nhwc" : "nchw");
    pr_image im;
    precis_status st = pr_image_load(path, &im, e);
    if (st != PRECIS_OK) return st;
    int dh = h > 0 && h <= PR_IMAGE_MAX_SIDE ? (int)h : 0;
    int dw = w > 0 && w <= PR_IMAGE_MAX_SIDE ? (int)w : 0;
    st = pr_image_prep_run(&im, &s->prep, dh, dw, path, t, e);
    pr_image_free(&im);
    return st;
}

precis_status pr_calib_source_load(pr_calib_source *s, int i, precis_tensor **tensors,
                                   pr_err *e) {
    if (!s || !tensors) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "calibration data: no source");
    for (int k = 0; k < s->n_inputs; k++) tensors[k] = NULL;
    if (i < 0 || i >= s->n_batches)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "calibration data: batch %d out of range (0..%d)",
                       i, s->n_batches - 1);
    precis_status st = PRECIS_OK;
    int64_t n = -1;
    int n_from = 0;
    for (int k = 0; k < s->n_inputs; k++) {
        size_t at = (size_t)i * (size_t)s->n_inputs + (size_t)k;
        const char *path = s->paths[at];
        const pr_calib_input *in = &s->inputs[k];
        if (s->kinds[at] == K_NPY) {
            PR_TRY(pr_npy_load(path, &tensors[k], e));
        } else {
            PR_TRY(load_image(s, in, path, &tensors[k], e));
        }
        PR_TRY(check_tensor(tensors[k], in, path, e));
        int64_t nk = tensors[k]->b.rank ? tensors[k]->b.dims[0] : 1;
        if (n >= 0 && nk != n) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                         "%s: %lld samples, but %s (input '%s') has %lld in the same batch", path,
                         (long long)nk, s->paths[(size_t)i * (size_t)s->n_inputs + (size_t)n_from],
                         s->inputs[n_from].name, (long long)n);
            goto fail;
        }
        n = nk;
        n_from = k;
    }
    s->samples[i] = n;
    return PRECIS_OK;
fail:
    for (int k = 0; k < s->n_inputs; k++) {
        precis_tensor_destroy(tensors[k]);
        tensors[k] = NULL;
    }
    return st;
}
