/* TensorProto decoding: raw_data, typed fields and external data files. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx/onnx_internal.h"
#include "runtime/tensor.h"

pr_dtype pr_onnx_dtype(int32_t v) { return (pr_dtype)(v < 0 ? 0 : v); }

void *pr_onnx_graph_alloc(void *ud, const pr_const *shape) {
    pr_graph *g = ud;
    return pr_arena_alloc(g->arena, shape->nbytes);
}

/* ------------------------------------------------------------ external data */

/* Parse a non-negative decimal integer (the whole string). */
static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* True if location has a ".." path component ('/' or '\\' separated). */
static bool has_dotdot(const char *loc) {
    const char *p = loc;
    while (*p) {
        const char *q = p;
        while (*q && *q != '/' && *q != '\\') q++;
        if (q - p == 2 && p[0] == '.' && p[1] == '.') return true;
        p = *q ? q + 1 : q;
    }
    return false;
}

static bool is_absolute(const char *loc) {
    if (loc[0] == '/' || loc[0] == '\\') return true;
    /* Windows drive ("C:...") */
    if (((loc[0] >= 'A' && loc[0] <= 'Z') || (loc[0] >= 'a' && loc[0] <= 'z')) && loc[1] == ':')
        return true;
    return false;
}

/* Reads the external data of tp (nbytes expected) into memory from alloc. */
static precis_status read_external(const Onnx__TensorProto *tp, const char *what,
                                   const char *base_dir, pr_onnx_alloc_fn alloc, void *ud,
                                   pr_const *out, pr_err *e) {
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (!kv || !kv->key) continue;
        if (strcmp(kv->key, "location") == 0) loc = pr_onnx_str(kv->value);
        else if (strcmp(kv->key, "offset") == 0) off_s = pr_onnx_str(kv->value);
        else if (strcmp(kv->key, "length") == 0) len_s = pr_onnx_str(kv->value);
    }
    if (!loc || !*loc)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: external data without a 'location'", what);
    if (is_absolute(loc))
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "%s: external data location '%s' is an absolute path (refused: it must be "
                       "relative to the model's directory)",
                       what, loc);
    if (has_dotdot(loc))
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "%s: external data location '%s' escapes the model's directory (refused)",
                       what, loc);
    if (!base_dir)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: external data in '%s' but the model was loaded from memory without a "
                       "base directory",
                       what, loc);
    uint64_t offset = 0, length = 0;
    if (off_s && !parse_u64(off_s, &offset))
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: external data offset '%s' is not a valid number",
                       what, off_s);
    if (len_s && !parse_u64(len_s, &length))
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: external data length '%s' is not a valid number",
                       what, len_s);
    if (len_s && length != out->nbytes)
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "%s: external data length %llu does not match the declared shape (%zu bytes)",
                       what, (unsigned long long)length, out->nbytes);

    precis_status st = PRECIS_OK;
    char *path = NULL, *real = NULL, *rbase = NULL;
    FILE *f = NULL;
    size_t bl = strlen(base_dir), ll = strlen(loc);
    path = malloc(bl + ll + 2);
    if (!path) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
    memcpy(path, base_dir, bl);
    path[bl] = '/';
    memcpy(path + bl + 1, loc, ll + 1);
    real = realpath(path, NULL);
    if (!real) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: cannot open external data file '%s': %s", what, path,
                     strerror(errno));
        goto done;
    }
    rbase = realpath(base_dir, NULL);
    if (!rbase) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: cannot resolve model directory '%s': %s", what,
                     base_dir, strerror(errno));
        goto done;
    }
    size_t rl = strlen(rbase);
    if (rl > 1 && rbase[rl - 1] == '/') rl--;
    bool inside = rl == 1 && rbase[0] == '/' ? real[0] == '/'
                                             : strncmp(real, rbase, rl) == 0 && real[rl] == '/';
    if (!inside) {
        st = pr_errf(e, PRECIS_ERR_PARSE,
                     "%s: external data location '%s' resolves to '%s', outside the model's "
                     "directory (refused)",
                     what, loc, real);
        goto done;
    }
    f = fopen(real, "rb");
    if (!f) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: cannot open external data file '%s': %s", what, path,
                     strerror(errno));
        goto done;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: external data '%s' is not a regular file", what, path);
        goto done;
    }
    uint64_t fsize = (uint64_t)sb.st_size;
    if (offset > fsize || out->nbytes > fsize - offset) {
        st = pr_errf(e, PRECIS_ERR_IO,
                     "%s: external data file '%s' is too short: need %zu bytes at offset %llu, "
                     "file has %llu",
                     what, path, out->nbytes, (unsigned long long)offset,
                     (unsigned long long)fsize);
        goto done;
    }
    if (offset > (uint64_t)LONG_MAX || fseeko(f, (off_t)offset, SEEK_SET) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: cannot seek to offset %llu in '%s'", what,
                     (unsigned long long)offset, path);
        goto done;
    }
    out->data = alloc(ud, out);
    if (!out->data) {
        st = pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory allocating %zu bytes", what,
                     out->nbytes);
        goto done;
    }
    if (out->nbytes && fread(out->data, 1, out->nbytes, f) != out->nbytes) {
        st = pr_errf(e, PRECIS_ERR_IO, "%s: short read from external data file '%s'", what, path);
        goto done;
    }
done:
    if (f) fclose(f);
    free(path);
    free(real);
    free(rbase);
    return st;
}

/* ----------------------------------------------------------------- decode */

static bool host_big_endian(void) {
    const uint16_t x = 1;
    unsigned char c;
    memcpy(&c, &x, 1);
    return c == 0;
}

static void swap_bytes(void *data, size_t n, size_t es) {
    unsigned char *p = data;
    for (size_t i = 0; i + es <= n; i += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            unsigned char t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

static const char *field_name(pr_dtype dt) {
    switch (dt) {
    case PRECIS_FLOAT32: return "float_data";
    case PRECIS_INT64: return "int64_data";
    case PRECIS_FLOAT64: return "double_data";
    case PRECIS_UINT32:
    case PRECIS_UINT64: return "uint64_data";
    default: return "int32_data";
    }
}

precis_status pr_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *what,
                                    const char *base_dir, bool allow_no_storage,
                                    pr_onnx_alloc_fn alloc, void *ud, pr_const *out, pr_err *e) {
    memset(out, 0, sizeof *out);
    if (!tp->has_data_type || tp->data_type == 0)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: tensor has no data type", what);
    pr_dtype dt = pr_onnx_dtype(tp->data_type);
    out->dtype = dt;
    if (tp->n_dims > PR_MAX_RANK)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: rank %zu exceeds the maximum of %d", what,
                       tp->n_dims, PR_MAX_RANK);
    out->rank = (int)tp->n_dims;
    uint64_t numel = 1;
    bool too_big = false;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0)
            return pr_errf(e, PRECIS_ERR_PARSE, "%s: dim %zu is negative (%lld)", what, i,
                           (long long)d);
        out->dims[i] = d;
        if (d != 0 && numel > (uint64_t)INT64_MAX / (uint64_t)d) too_big = true;
        else numel *= (uint64_t)d;
    }
    size_t es = pr_dtype_size(dt);
    if (!es) {
        if (allow_no_storage) return PRECIS_OK;
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: data type %s (%d) is not supported", what,
                       pr_dtype_name(dt), (int)tp->data_type);
    }
    /* A zero dim makes the tensor empty whatever the others say. */
    for (int i = 0; i < out->rank; i++)
        if (out->dims[i] == 0) too_big = false, numel = 0;
    if (too_big || numel > PR_MAX_TENSOR_BYTES / es) {
        char buf[256];
        return pr_errf(e, PRECIS_ERR_OOM,
                       "%s: declared shape %s is too large (limit %zu bytes)", what,
                       pr_shape_str(NULL, dt, out->rank, out->dims, buf, sizeof buf),
                       PR_MAX_TENSOR_BYTES);
    }
    out->nbytes = (size_t)numel * es;

    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        precis_status st = read_external(tp, what, base_dir, alloc, ud, out, e);
        if (st) return st;
        if (host_big_endian() && es > 1) swap_bytes(out->data, out->nbytes, es);
        if (dt == PRECIS_BOOL)
            for (size_t i = 0; i < out->nbytes; i++)
                ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
        return PRECIS_OK;
    }

    if (tp->has_raw_data) {
        if (tp->raw_data.len != out->nbytes)
            return pr_errf(e, PRECIS_ERR_PARSE,
                           "%s: raw_data holds %zu bytes but the shape needs %zu (%llu x %zu)",
                           what, tp->raw_data.len, out->nbytes, (unsigned long long)numel, es);
        out->data = alloc(ud, out);
        if (!out->data)
            return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory allocating %zu bytes", what,
                           out->nbytes);
        if (out->nbytes) memcpy(out->data, tp->raw_data.data, out->nbytes);
        if (host_big_endian() && es > 1) swap_bytes(out->data, out->nbytes, es);
        if (dt == PRECIS_BOOL)
            for (size_t i = 0; i < out->nbytes; i++)
                ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
        return PRECIS_OK;
    }

    size_t have;
    switch (dt) {
    case PRECIS_FLOAT32: have = tp->n_float_data; break;
    case PRECIS_INT64: have = tp->n_int64_data; break;
    case PRECIS_FLOAT64: have = tp->n_double_data; break;
    case PRECIS_UINT32:
    case PRECIS_UINT64: have = tp->n_uint64_data; break;
    case PRECIS_INT32:
    case PRECIS_INT16:
    case PRECIS_INT8:
    case PRECIS_UINT16:
    case PRECIS_UINT8:
    case PRECIS_BOOL:
    case PRECIS_FLOAT16:
    case PRECIS_BFLOAT16:
    case PRECIS_FLOAT8E4M3FN: have = tp->n_int32_data; break;
    default:
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: data type %s (%d) is not supported", what,
                       pr_dtype_name(dt), (int)tp->data_type);
    }
    if (have != numel)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: %s holds %zu values but the shape needs %llu",
                       what, field_name(dt), have, (unsigned long long)numel);
    out->data = alloc(ud, out);
    if (!out->data)
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory allocating %zu bytes", what,
                       out->nbytes);
    size_t n = (size_t)numel;
    void *d = out->data;
    switch (dt) {
    case PRECIS_FLOAT32:
        if (n) memcpy(d, tp->float_data, n * 4);
        break;
    case PRECIS_INT64:
        if (n) memcpy(d, tp->int64_data, n * 8);
        break;
    case PRECIS_FLOAT64:
        if (n) memcpy(d, tp->double_data, n * 8);
        break;
    case PRECIS_UINT64:
        if (n) memcpy(d, tp->uint64_data, n * 8);
        break;
    case PRECIS_UINT32:
        for (size_t i = 0; i < n; i++) ((uint32_t *)d)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case PRECIS_INT32:
        if (n) memcpy(d, tp->int32_data, n * 4);
        break;
    case PRECIS_INT16:
    case PRECIS_UINT16:
    case PRECIS_FLOAT16:
    case PRECIS_BFLOAT16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)d)[i] = (uint16_t)(uint32_t)tp->int32_data[i];
        break;
    case PRECIS_INT8:
    case PRECIS_UINT8:
    case PRECIS_FLOAT8E4M3FN:
        for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = (uint8_t)(uint32_t)tp->int32_data[i];
        break;
    case PRECIS_BOOL:
        for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = tp->int32_data[i] != 0;
        break;
    default: break;
    }
    return PRECIS_OK;
}
