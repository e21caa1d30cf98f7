/* ONNX model and TensorProto files: reading, decoding, model metadata. */
#define _POSIX_C_SOURCE 200809L

#include "onnx/onnx_import.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx/onnx_internal.h"

#define BAD_MODEL "not a valid ONNX model: protobuf decoding failed (truncated or garbled?)"

/* ------------------------------------------------------- nesting depth walk */

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (int s = 0; s < 70 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        if (s < 64) r |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

static const ProtobufCFieldDescriptor *field_by_id(const ProtobufCMessageDescriptor *d,
                                                   uint64_t id) {
    for (unsigned i = 0; i < d->n_fields; i++)
        if (d->fields[i].id == id) return &d->fields[i];
    return NULL;
}

/* false only when nesting exceeds the limit; malformed data returns true. */
static bool depth_walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                       int depth) {
    if (depth > PR_ONNX_MAX_DEPTH) return false;
    while (p < end) {
        uint64_t key, v;
        if (!read_varint(&p, end, &key)) return true;
        switch (key & 7) {
        case 0:
            if (!read_varint(&p, end, &v)) return true;
            break;
        case 1:
            if (end - p < 8) return true;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return true;
            p += 4;
            break;
        case 2: {
            if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p)) return true;
            const ProtobufCFieldDescriptor *f = d ? field_by_id(d, key >> 3) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                !depth_walk(f->descriptor, p, p + v, depth + 1))
                return false;
            p += v;
            break;
        }
        default: return true; /* groups / invalid: protobuf-c decides */
        }
    }
    return true;
}

bool pr_onnx_depth_ok(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len) {
    return depth_walk(d, buf, buf + len, 0);
}

/* ------------------------------------------------------------------ model */

/* Names in messages come from the file: keep the message on one line. */
static precis_status one_line(pr_err *e, precis_status st) {
    if (e && st)
        for (char *p = e->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return st;
}

static const char *dup_str(pr_graph *g, const char *s, bool *ok) {
    const char *r = pr_arena_strdup(g->arena, pr_onnx_str(s));
    if (!r) *ok = false;
    return r ? r : "";
}

static precis_status import_model(const Onnx__ModelProto *m, const char *base_dir, pr_graph *g,
                                  pr_err *e) {
    if (!m->graph) return pr_errf(e, PRECIS_ERR_PARSE, "not a valid ONNX model: it has no graph");
    bool ok = true;
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    g->model_version = m->has_model_version ? m->model_version : 0;
    g->producer_name = dup_str(g, m->producer_name, &ok);
    g->producer_version = dup_str(g, m->producer_version, &ok);
    g->domain = dup_str(g, m->domain, &ok);
    g->doc = dup_str(g, m->doc_string, &ok);
    if (m->n_opset_import > 100000 || m->n_metadata_props > 1000000)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "too many opset imports or metadata entries");
    g->opsets = pr_arena_alloc(g->arena, (m->n_opset_import + 1) * sizeof(pr_opset));
    g->metadata = pr_arena_alloc(g->arena, (m->n_metadata_props + 1) * sizeof(pr_kv));
    if (!g->opsets || !g->metadata) ok = false;
    for (size_t i = 0; ok && i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o) continue;
        g->opsets[g->n_opsets].domain = dup_str(g, o->domain, &ok);
        g->opsets[g->n_opsets].version = o->has_version ? o->version : 0;
        g->n_opsets++;
    }
    for (size_t i = 0; ok && i < m->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *kv = m->metadata_props[i];
        if (!kv) continue;
        g->metadata[g->n_metadata].key = dup_str(g, kv->key, &ok);
        g->metadata[g->n_metadata].value = dup_str(g, kv->value, &ok);
        g->n_metadata++;
    }
    if (!ok) return pr_errf(e, PRECIS_ERR_OOM, "out of memory importing model metadata");
    pr_onnx_imp im = {.base_dir = base_dir, .top = g, .depth = 0};
    precis_status st = pr_onnx_import_graph(&im, m->graph, g, e);
    if (st) return st;
    return pr_onnx_validate(g, e);
}

precis_status pr_onnx_load_memory(const void *buf, size_t len, const char *base_dir,
                                  pr_graph **out, pr_err *e) {
    if (!out) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_onnx_load_memory: NULL argument");
    *out = NULL;
    if (!buf && len) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_onnx_load_memory: NULL buffer");
    static const uint8_t empty[1] = {0};
    if (!buf) buf = empty;
    if (!pr_onnx_depth_ok(&onnx__model_proto__descriptor, buf, len))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "not a supported ONNX model: messages nested deeper than %d levels",
                       PR_ONNX_MAX_DEPTH);
    Onnx__ModelProto *m =
        (Onnx__ModelProto *)protobuf_c_message_unpack(&onnx__model_proto__descriptor, NULL, len, buf);
    if (!m) return pr_errf(e, PRECIS_ERR_PARSE, BAD_MODEL);
    precis_status st = PRECIS_OK;
    pr_graph *g = pr_graph_create();
    if (!g) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory loading the model");
        goto done;
    }
    st = import_model(m, base_dir, g, e);
    if (st) {
        pr_graph_destroy(g);
        g = NULL;
    }
done:
    protobuf_c_message_free_unpacked(&m->base, NULL);
    *out = g;
    return one_line(e, st);
}

/* Reads a whole regular file into a malloc'd buffer. */
static precis_status read_file(const char *path, uint8_t **out, size_t *len, pr_err *e) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    precis_status st = PRECIS_OK;
    uint8_t *buf = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read '%s': not a regular file", path);
        goto done;
    }
    if ((uint64_t)sb.st_size > (uint64_t)1 << 36) {
        st = pr_errf(e, PRECIS_ERR_OOM, "cannot read '%s': file too large (%lld bytes)", path,
                     (long long)sb.st_size);
        goto done;
    }
    size_t n = (size_t)sb.st_size;
    buf = malloc(n ? n : 1);
    if (!buf) {
        st = pr_errf(e, PRECIS_ERR_OOM, "cannot read '%s': out of memory (%zu bytes)", path, n);
        goto done;
    }
    if (n && fread(buf, 1, n, f) != n) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read '%s': %s", path,
                     ferror(f) ? strerror(errno) : "file shrank while reading");
        goto done;
    }
    *out = buf;
    *len = n;
    buf = NULL;
done:
    free(buf);
    fclose(f);
    return st;
}

/* Directory part of path ("." if none), malloc'd. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        char *d = malloc(2);
        if (d) memcpy(d, ".", 2);
        return d;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

precis_status pr_onnx_load_file(const char *path, pr_graph **out, pr_err *e) {
    if (!path || !out) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_onnx_load_file: NULL argument");
    *out = NULL;
    uint8_t *buf;
    size_t len;
    precis_status st = read_file(path, &buf, &len, e);
    if (st) return st;
    char *dir = dir_of(path);
    if (!dir) {
        free(buf);
        return pr_errf(e, PRECIS_ERR_OOM, "'%s': out of memory", path);
    }
    st = pr_onnx_load_memory(buf, len, dir, out, e);
    if (st) pr_err_prefix(e, "'%s'", path);
    free(dir);
    free(buf);
    return one_line(e, st);
}

/* --------------------------------------------------------- tensor files */

typedef struct tensor_sink {
    precis_tensor *t;
    const char *what;
    pr_err *e;
} tensor_sink;

static void *tensor_alloc(void *ud, const pr_const *shape) {
    tensor_sink *s = ud;
    if (pr_tensor_new(shape->dtype, shape->rank, shape->dims, s->what, &s->t, s->e)) return NULL;
    return s->t->b.data;
}

precis_status pr_onnx_load_tensor_file(const char *path, precis_tensor **out, pr_err *e) {
    if (!path || !out)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_onnx_load_tensor_file: NULL argument");
    *out = NULL;
    uint8_t *buf;
    size_t len;
    precis_status st = read_file(path, &buf, &len, e);
    if (st) return st;
    char *dir = NULL;
    Onnx__TensorProto *tp = NULL;
    char what[600];
    snprintf(what, sizeof what, "'%s'", path);
    tensor_sink sink = {NULL, what, e};
    if (!pr_onnx_depth_ok(&onnx__tensor_proto__descriptor, buf, len)) {
        st = pr_errf(e, PRECIS_ERR_PARSE, "'%s': not a valid ONNX TensorProto: nested too deep", path);
        goto done;
    }
    tp = (Onnx__TensorProto *)protobuf_c_message_unpack(&onnx__tensor_proto__descriptor, NULL, len,
                                                        buf);
    if (!tp) {
        st = pr_errf(e, PRECIS_ERR_PARSE,
                     "'%s': not a valid ONNX TensorProto: protobuf decoding failed (truncated or "
                     "garbled?)",
                     path);
        goto done;
    }
    dir = dir_of(path);
    if (!dir) {
        st = pr_errf(e, PRECIS_ERR_OOM, "'%s': out of memory", path);
        goto done;
    }
    pr_const c;
    st = pr_onnx_tensor_decode(tp, what, dir, false, tensor_alloc, &sink, &c, e);
    if (st) goto done;
    *out = sink.t;
    sink.t = NULL;
done:
    precis_tensor_destroy(sink.t);
    if (tp) protobuf_c_message_free_unpacked(&tp->base, NULL);
    free(dir);
    free(buf);
    return one_line(e, st);
}
