/* The engine file (.plan): writer, reader and validation.
 *
 * Byte layout, format version 1 (PR_PLAN_VERSION). Every integer is
 * little-endian and fixed width; offsets are in bytes from the start of the
 * file unless said otherwise. docs/plan-format.md has the same for users.
 *
 * Header (32 bytes) and section table (n_sections x 24 bytes):
 *     0  char[8]  magic "PRECISPL"
 *     8  u32      format version (1)
 *    12  u32      checksum: CRC-32C (Castagnoli, reflected, init/xorout
 *                 0xFFFFFFFF) of every byte from offset 16 to the end
 *    16  u64      total file size in bytes
 *    24  u32      n_sections (10 in version 1)
 *    28  u32      reserved, 0
 *    32  n_sections x { u32 id, u32 count, u64 offset, u64 size }
 * Every section id 1..10 appears exactly once; a section lies inside the file
 * after the section table. Sections are written in id order, each 8-byte
 * aligned, zero padding between them; DATA is 64-byte aligned.
 *
 *   id section  count            content
 *    1 STRINGS  strings          string entries { u32 len, len bytes, 0 }; a
 *                                string is referred to by the u32 offset of
 *                                its entry in this section, 0xFFFFFFFF = none.
 *                                Strings may contain NULs (len counts them).
 *    2 MODEL    1                { u32 graph name, producer_name,
 *                                producer_version, domain, doc, reserved;
 *                                i64 ir_version, model_version } (40 bytes)
 *    3 SYMS     n_syms           u32 string per symbolic dim name
 *    4 OPSETS   n_opsets         { u32 domain, u32 reserved, i64 version }
 *    5 METADATA n_metadata       { u32 key, u32 value }
 *    6 TENSORS  n_tensors        104-byte records: { u32 name, u32 flags,
 *                                i32 producer (-1: none), u8 layout,
 *                                u8[3] reserved, shaped }
 *    7 NODES    n_nodes          variable-length node records, below
 *    8 INPUTS   n_inputs         i32 tensor index
 *    9 OUTPUTS  n_outputs        i32 tensor index
 *   10 DATA     n_blobs          tensor data, each blob 64-byte aligned
 *
 * shaped (88 bytes, tensors and constant attributes):
 *     { u32 dtype, i32 rank (-1: unknown), i64 dims[8] (dims past rank 0),
 *       u64 data offset (from file start, 64-aligned, inside DATA;
 *           0xFFFFFFFFFFFFFFFF: no data), u64 nbytes }
 *   A dim d >= 0 is known, -1 unknown, d <= -2 the symbolic dim SYMS[-2-d].
 *   With data: dtype has a fixed size, all dims known, nbytes = numel x size.
 *   Blobs are stored once: tensors sharing a buffer (a Constant node's output
 *   and its value attribute) share the blob.
 *
 * node record:
 *     u32 name, op_type, domain, n_inputs, n_outputs, n_attrs, n_origins,
 *     u32 reserved, i64 opset,
 *     i32 inputs[n_inputs], i32 outputs[n_outputs] (tensor index, -1 omitted),
 *     u32 origins[n_origins] (strings),
 *     n_attrs x attribute { u32 name, u32 type (pr_attr_type),
 *                           u32 ref_attr_name (string or none), u32 n,
 *                           payload by type:
 *       UNDEFINED: nothing       FLOAT: u32 IEEE bits      INT: i64
 *       STRING: u32 string (its len is s_len)              TENSOR: shaped
 *       FLOATS: n x u32 bits     INTS: n x i64             STRINGS: n x u32
 *       TENSORS: n x shaped }
 *   n is 0 for the scalar kinds. GRAPH, GRAPHS, SPARSE_TENSOR(S) and
 *   TYPE_PROTO(S) attributes cannot be saved (PRECIS_ERR_UNSUPPORTED).
 *
 * Loading checks, in this order: magic, version, file size against the
 * header, checksum, the section table, then every string reference, index,
 * count, rank, dim, dtype, layout and data range. The node's pr_op is looked
 * up again from domain/op_type. A loaded graph's strings point into the file
 * (the string table keeps them NUL-terminated) and tensor data points into the
 * read-only mapping (or into the caller's buffer for pr_plan_load_memory
 * without copy); writing to initializer data of a loaded plan faults.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_POPULATE */

#include "plan/plan_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define PR_PLAN_HAVE_SSE42 1
#endif

#define PLAN_MAGIC "PRECISPL"
#define HDR_FIXED 32u
#define SEC_ENTRY 24u
#define REC_MODEL 40u
#define REC_SHAPED 88u
#define REC_TENSOR 104u
#define REC_OPSET 16u
#define REC_KV 8u
#define REC_NODE 40u
#define REC_ATTR 16u
#define NO_STR 0xFFFFFFFFu
#define NO_DATA UINT64_MAX
#define DATA_ALIGN 64u
/* Largest layout value a plan may hold; keep in step with pr_layout. */
#define PLAN_MAX_LAYOUT PR_LAYOUT_NHWC

enum {
    SEC_STRINGS = 1,
    SEC_MODEL,
    SEC_SYMS,
    SEC_OPSETS,
    SEC_METADATA,
    SEC_TENSORS,
    SEC_NODES,
    SEC_INPUTS,
    SEC_OUTPUTS,
    SEC_DATA,
    N_SEC = SEC_DATA
};
#define HDR_SIZE (HDR_FIXED + N_SEC * SEC_ENTRY)

static const char *const k_sec_name[N_SEC + 1] = {"?",      "strings",  "model",   "syms",
                                                  "opsets", "metadata", "tensors", "nodes",
                                                  "inputs", "outputs",  "data"};

/* ------------------------------------------------------------ byte order */

static inline uint32_t ld32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ld64(const unsigned char *p) {
    return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32;
}
static inline void st32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}
static inline void st64(unsigned char *p, uint64_t v) {
    st32(p, (uint32_t)v);
    st32(p + 4, (uint32_t)(v >> 32));
}

static bool host_little_endian(void) {
    const uint16_t x = 1;
    unsigned char c;
    memcpy(&c, &x, 1);
    return c == 1;
}

static inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/* --------------------------------------------------------------- CRC-32C */

static const uint32_t k_crc32c[256] = {
    0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu, 0x26a1e7e8u,
    0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu, 0x4d43cfd0u, 0xbf284cd3u,
    0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu, 0xf165b798u, 0x030e349bu, 0xd7c45070u,
    0x25afd373u, 0x36ff2087u, 0xc494a384u, 0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u,
    0x5d1d08bfu, 0xaf768bbcu, 0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u,
    0x33ed7d2au, 0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
    0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau, 0x30e349b1u,
    0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu, 0x1642ae59u, 0xe4292d5au,
    0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au, 0x7da08661u, 0x8fcb0562u, 0x9c9bf696u,
    0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu, 0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u,
    0x67dafa54u, 0x95b17957u, 0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu,
    0xfe53516fu, 0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
    0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu, 0x3ac7f2ebu,
    0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u, 0x61c69362u, 0x93ad1061u,
    0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu, 0x4767748au, 0xb50cf789u, 0xeb1fcbadu,
    0x197448aeu, 0x0a24bb5au, 0xf84f3859u, 0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u,
    0x7198540du, 0x83f3d70eu, 0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u,
    0xa55230e6u, 0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
    0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu, 0x456cac67u,
    0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u, 0xe9141340u, 0x1b7f9043u,
    0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu, 0x92a8fc17u, 0x60c37f14u, 0x73938ce0u,
    0x81f80fe3u, 0x55326b08u, 0xa759e80bu, 0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu,
    0xf94ad42fu, 0x0b21572cu, 0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u,
    0x502036a5u, 0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
    0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u, 0x0e330a81u,
    0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du, 0x758fe5d6u, 0x87e466d5u,
    0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u, 0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u,
    0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu, 0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u,
    0x0417b1dbu, 0xf67c32d8u, 0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu,
    0x5a048dffu, 0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
    0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u, 0x590ab964u,
    0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u, 0x7fab5e8cu, 0x8dc0dd8fu,
    0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu, 0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u,
    0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u, 0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u,
    0x4f48173du, 0xbd23943eu, 0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au,
    0xc69f7b69u, 0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
    0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

/* Non-static so the unit test can check both paths against each other; not
 * part of the plan_file.h contract. crc is a previous result (0 to start). */
uint32_t pr_plan_crc32c_portable(uint32_t crc, const void *buf, size_t n);
uint32_t pr_plan_crc32c(uint32_t crc, const void *buf, size_t n);

uint32_t pr_plan_crc32c_portable(uint32_t crc, const void *buf, size_t n) {
    const unsigned char *p = buf;
    crc = ~crc;
    if (n >= 4096) { /* slicing-by-8, tables built here (8 KiB, cheap next to n) */
        uint32_t t[8][256];
        memcpy(t[0], k_crc32c, sizeof t[0]);
        for (int k = 1; k < 8; k++)
            for (int i = 0; i < 256; i++)
                t[k][i] = (t[k - 1][i] >> 8) ^ k_crc32c[t[k - 1][i] & 0xff];
        while (n >= 8) {
            uint64_t w = ld64(p) ^ crc;
            crc = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^
                  t[4][(w >> 24) & 0xff] ^ t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^
                  t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
            p += 8;
            n -= 8;
        }
    }
    while (n--) crc = k_crc32c[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#ifdef PR_PLAN_HAVE_SSE42
/* The hardware path runs three independent crc32 chains over three adjacent
 * CRC_LONG-byte stretches (the instruction has a latency of 3 and a
 * throughput of 1) and joins them with the "append CRC_LONG zero bytes"
 * operator, as in Mark Adler's crc32c.c. The operator's tables are built on
 * the stack for each large call (tens of microseconds, no shared state). */
#define CRC_LONG 8192u
#define CRC_3WAY_MIN ((size_t)1 << 20)

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1) sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) sq[n] = gf2_times(mat, mat[n]);
}

/* zeros[k][b]: the operator appending `len` (a power of two >= 2) zero bytes
 * to a raw CRC, applied to byte k of the CRC holding b. */
static void crc_zeros_tables(uint32_t zeros[4][256], size_t len) {
    uint32_t even[32], odd[32];
    odd[0] = 0x82F63B78u; /* one zero bit */
    for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two bits */
    gf2_square(odd, even); /* four bits */
    const uint32_t *op = even;
    do { /* squares: 1 byte into even, 2 into odd, ... */
        gf2_square(even, odd);
        op = even;
        len >>= 1;
        if (!len) break;
        gf2_square(odd, even);
        op = odd;
        len >>= 1;
    } while (len);
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 0; k < 4; k++) zeros[k][b] = gf2_times(op, b << (8 * k));
}

static inline uint32_t crc_shift(uint32_t zeros[4][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^
           zeros[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const void *buf,
                                                               size_t n) {
    const unsigned char *p = buf;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    if (n >= CRC_3WAY_MIN) {
        uint32_t zeros[4][256];
        crc_zeros_tables(zeros, CRC_LONG);
        while (n >= 3 * CRC_LONG) {
            uint64_t c1 = 0, c2 = 0;
            for (size_t i = 0; i < CRC_LONG; i += 8) {
                uint64_t w0, w1, w2;
                memcpy(&w0, p + i, 8);
                memcpy(&w1, p + CRC_LONG + i, 8);
                memcpy(&w2, p + 2 * CRC_LONG + i, 8);
                c = _mm_crc32_u64(c, w0);
                c1 = _mm_crc32_u64(c1, w1);
                c2 = _mm_crc32_u64(c2, w2);
            }
            c = crc_shift(zeros, (uint32_t)c) ^ (uint32_t)c1;
            c = crc_shift(zeros, (uint32_t)c) ^ (uint32_t)c2;
            p += 3 * CRC_LONG;
            n -= 3 * CRC_LONG;
        }
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

uint32_t pr_plan_crc32c(uint32_t crc, const void *buf, size_t n) {
#ifdef PR_PLAN_HAVE_SSE42
    if (__builtin_cpu_supports("sse4.2")) return crc32c_sse42(crc, buf, n);
#endif
    return pr_plan_crc32c_portable(crc, buf, n);
}

/* ------------------------------------------------------ graph validation */

/* The checks shared by save (on the in-memory graph) and load (on what was
 * read): a saved plan always loads. Return NULL when fine, else a static
 * description of what is wrong with the shape/data (into buf). */
static const char *check_shaped(pr_dtype dt, int rank, const int64_t *dims, bool has_data,
                                size_t nbytes, int n_syms, char *buf, size_t cap) {
    if ((int)dt < 0 || (int)dt > PR_DTYPE_MAX) {
        snprintf(buf, cap, "unknown dtype %d", (int)dt);
        return buf;
    }
    if (rank < -1 || rank > PR_MAX_RANK) {
        snprintf(buf, cap, "rank %d is out of range (-1..%d)", rank, PR_MAX_RANK);
        return buf;
    }
    for (int i = 0; i < rank; i++) {
        int64_t d = dims[i];
        if (d < -1 && (uint64_t)(-(d + 2)) >= (uint64_t)n_syms) {
            snprintf(buf, cap, "dim %d is symbolic dim %llu but there are %d", i,
                     (unsigned long long)(-(d + 2)), n_syms);
            return buf;
        }
    }
    if (!has_data) return NULL;
    size_t es = pr_dtype_size(dt);
    if (!es) {
        snprintf(buf, cap, "has data but dtype %s has no fixed element size", pr_dtype_name(dt));
        return buf;
    }
    int64_t numel = pr_numel(rank, dims);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / es) {
        snprintf(buf, cap, "has data but its shape is not fully known or too large");
        return buf;
    }
    if ((size_t)numel * es != nbytes) {
        snprintf(buf, cap, "data holds %zu bytes, its shape needs %zu", nbytes, (size_t)numel * es);
        return buf;
    }
    return NULL;
}

static bool attr_kind_ok(pr_attr_type t) {
    switch (t) {
    case PR_ATTR_UNDEFINED:
    case PR_ATTR_FLOAT:
    case PR_ATTR_INT:
    case PR_ATTR_STRING:
    case PR_ATTR_TENSOR:
    case PR_ATTR_FLOATS:
    case PR_ATTR_INTS:
    case PR_ATTR_STRINGS:
    case PR_ATTR_TENSORS: return true;
    default: return false;
    }
}

static const char *attr_kind_name(int t) {
    static const char *const k[] = {"UNDEFINED",      "FLOAT",      "INT",        "STRING",
                                    "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
                                    "STRINGS",        "TENSORS",    "GRAPHS",     "SPARSE_TENSOR",
                                    "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return t >= 0 && t < (int)(sizeof k / sizeof *k) ? k[t] : "unknown";
}

static precis_status check_for_save(const pr_graph *g, pr_err *e) {
    char why[160];
    if (g->n_tensors < 0 || g->n_nodes < 0 || g->n_inputs < 0 || g->n_outputs < 0 ||
        g->n_syms < 0 || g->n_opsets < 0 || g->n_metadata < 0 || (g->n_inputs && !g->inputs) ||
        (g->n_outputs && !g->outputs) || (g->n_syms && !g->syms) || (g->n_opsets && !g->opsets) ||
        (g->n_metadata && !g->metadata))
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "cannot save plan: bad element count or list");
    for (int t = 0; t < g->n_tensors; t++) {
        const pr_tensor *x = &g->tensors[t];
        if (!x->name || pr_graph_find_tensor(g, x->name) != t)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "cannot save plan: tensor %d ('%s') has no name or a duplicate name", t,
                           x->name ? x->name : "");
        const char *w = check_shaped(x->dtype, x->rank, x->dims, x->data != NULL, x->nbytes,
                                     g->n_syms, why, sizeof why);
        if (w)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG, "cannot save plan: tensor '%s': %s",
                           x->name ? x->name : "", w);
        if (x->producer < -1 || x->producer >= g->n_nodes)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "cannot save plan: tensor '%s' has producer %d (%d nodes)",
                           x->name ? x->name : "", x->producer, g->n_nodes);
        if (x->layout > PLAN_MAX_LAYOUT)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG, "cannot save plan: tensor '%s' has layout %d",
                           x->name ? x->name : "", x->layout);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        const char *nn = n->name ? n->name : "";
        if (!n->op_type)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "cannot save plan: node %d ('%s') is dead (compact the graph first)", i,
                           nn);
        if (n->n_inputs < 0 || n->n_outputs < 0 || n->n_attrs < 0 || n->n_origins < 0 ||
            (n->n_inputs && !n->inputs) || (n->n_outputs && !n->outputs) ||
            (n->n_attrs && !n->attrs) || (n->n_origins && !n->origins))
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "cannot save plan: node '%s': bad input/output/attribute/origin list",
                           nn);
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            int t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (t < -1 || t >= g->n_tensors)
                return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                               "cannot save plan: node '%s' refers to tensor %d (%d tensors)", nn,
                               t, g->n_tensors);
        }
        for (int k = 0; k < n->n_attrs; k++) {
            const pr_attr *a = &n->attrs[k];
            const char *an = a->name ? a->name : "";
            if (!attr_kind_ok(a->type))
                return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                               "cannot save plan: node '%s' (%s) attribute '%s' is of kind %s, "
                               "which a plan cannot hold",
                               nn, n->op_type ? n->op_type : "", an, attr_kind_name((int)a->type));
            bool list = a->type == PR_ATTR_FLOATS || a->type == PR_ATTR_INTS ||
                        a->type == PR_ATTR_STRINGS || a->type == PR_ATTR_TENSORS;
            const void *arr = a->type == PR_ATTR_FLOATS    ? (const void *)a->floats
                              : a->type == PR_ATTR_INTS    ? (const void *)a->ints
                              : a->type == PR_ATTR_STRINGS ? (const void *)a->strings
                                                           : (const void *)a->tensors;
            if (list && (a->n < 0 || (a->n > 0 && !arr)))
                return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                               "cannot save plan: node '%s' attribute '%s' has a bad list", nn, an);
            if (a->type == PR_ATTR_TENSOR && !a->t)
                return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                               "cannot save plan: node '%s' attribute '%s' has no tensor", nn, an);
            int nc = a->type == PR_ATTR_TENSOR ? 1 : a->type == PR_ATTR_TENSORS ? a->n : 0;
            for (int c = 0; c < nc; c++) {
                const pr_const *t = a->type == PR_ATTR_TENSOR ? a->t : &a->tensors[c];
                const char *w = check_shaped(t->dtype, t->rank, t->dims, t->data != NULL, t->nbytes,
                                             g->n_syms, why, sizeof why);
                if (w)
                    return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                                   "cannot save plan: node '%s' attribute '%s' tensor %d: %s", nn,
                                   an, c, w);
            }
        }
    }
    for (int k = 0; k < g->n_inputs + g->n_outputs; k++) {
        int t = k < g->n_inputs ? g->inputs[k] : g->outputs[k - g->n_inputs];
        if (t < 0 || t >= g->n_tensors)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "cannot save plan: graph %s %d is tensor %d (%d tensors)",
                           k < g->n_inputs ? "input" : "output",
                           k < g->n_inputs ? k : k - g->n_inputs, t, g->n_tensors);
    }
    return PRECIS_OK;
}

/* ---------------------------------------------------------------- writer */

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
} wbuf;

typedef struct blob {
    const void *ptr;
    size_t nbytes;
    uint64_t off; /* from the start of DATA */
} blob;

typedef struct fixup {
    int sec;
    size_t pos;
} fixup;

typedef struct writer {
    wbuf sec[N_SEC + 1];
    uint32_t *shash; /* string offsets, NO_STR = empty slot */
    size_t shash_cap, n_strings;
    blob *blobs;
    size_t n_blobs, cap_blobs;
    size_t *bhash; /* blob index + 1, 0 = empty */
    size_t bhash_cap;
    uint64_t data_size;
    fixup *fix; /* data offsets to rebase once DATA's position is known */
    size_t n_fix, cap_fix;
    bool oom, too_big;
} writer;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *n = realloc(*p, c * elem);
    if (!n) return false;
    *p = n;
    *cap = c;
    return true;
}

static void wput(writer *w, int s, const void *src, size_t n) {
    wbuf *b = &w->sec[s];
    if (w->oom) return;
    if (n > SIZE_MAX - b->n || !grow((void **)&b->p, &b->cap, b->n + n, 1)) {
        w->oom = true;
        return;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void wu32(writer *w, int s, uint32_t v) {
    unsigned char b[4];
    st32(b, v);
    wput(w, s, b, 4);
}
static void wu64(writer *w, int s, uint64_t v) {
    unsigned char b[8];
    st64(b, v);
    wput(w, s, b, 8);
}
static void wi32(writer *w, int s, int32_t v) { wu32(w, s, (uint32_t)v); }
static void wi64(writer *w, int s, int64_t v) { wu64(w, s, (uint64_t)v); }

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static bool shash_insert(uint32_t *tab, size_t cap, const wbuf *strs, uint32_t off) {
    uint32_t len = ld32(strs->p + off);
    size_t k = hash_bytes(strs->p + off + 4, len) & (cap - 1);
    while (tab[k] != NO_STR) k = (k + 1) & (cap - 1);
    tab[k] = off;
    return true;
}

/* Offset of the string (interned) in STRINGS. */
static uint32_t wstr_n(writer *w, const char *s, size_t len) {
    wbuf *st = &w->sec[SEC_STRINGS];
    if (w->oom || w->too_big) return 0;
    if ((w->n_strings + 1) * 2 > w->shash_cap) {
        size_t cap = w->shash_cap ? 2 * w->shash_cap : 1024;
        uint32_t *t = malloc(cap * sizeof *t);
        if (!t) {
            w->oom = true;
            return 0;
        }
        for (size_t i = 0; i < cap; i++) t[i] = NO_STR;
        for (size_t i = 0; i < w->shash_cap; i++)
            if (w->shash[i] != NO_STR) shash_insert(t, cap, st, w->shash[i]);
        free(w->shash);
        w->shash = t;
        w->shash_cap = cap;
    }
    size_t k = hash_bytes(s, len) & (w->shash_cap - 1);
    for (; w->shash[k] != NO_STR; k = (k + 1) & (w->shash_cap - 1)) {
        uint32_t off = w->shash[k];
        if (ld32(st->p + off) == len && memcmp(st->p + off + 4, s, len) == 0) return off;
    }
    if (len > (size_t)NO_STR - 8 || st->n + len + 5 >= (size_t)NO_STR) {
        w->too_big = true;
        return 0;
    }
    uint32_t off = (uint32_t)st->n;
    wu32(w, SEC_STRINGS, (uint32_t)len);
    wput(w, SEC_STRINGS, s, len);
    wput(w, SEC_STRINGS, "", 1);
    if (w->oom) return 0;
    w->shash[k] = off;
    w->n_strings++;
    return off;
}
/* Required strings: NULL is written as "". */
static void wstr(writer *w, int s, const char *str) {
    wu32(w, s, wstr_n(w, str ? str : "", str ? strlen(str) : 0));
}
static void wstr_opt(writer *w, int s, const char *str) {
    wu32(w, s, str ? wstr_n(w, str, strlen(str)) : NO_STR);
}

/* Offset (from the start of DATA) of the blob for ptr/nbytes; a buffer seen
 * before is stored once. */
static uint64_t wblob(writer *w, const void *ptr, size_t nbytes) {
    if (w->oom) return 0;
    if ((w->n_blobs + 1) * 2 > w->bhash_cap) {
        size_t cap = w->bhash_cap ? 2 * w->bhash_cap : 256;
        size_t *t = calloc(cap, sizeof *t);
        if (!t) {
            w->oom = true;
            return 0;
        }
        for (size_t i = 0; i < w->n_blobs; i++) {
            uintptr_t v = (uintptr_t)w->blobs[i].ptr;
            size_t k = hash_bytes(&v, sizeof v) & (cap - 1);
            while (t[k]) k = (k + 1) & (cap - 1);
            t[k] = i + 1;
        }
        free(w->bhash);
        w->bhash = t;
        w->bhash_cap = cap;
    }
    uintptr_t v = (uintptr_t)ptr;
    size_t k = hash_bytes(&v, sizeof v) & (w->bhash_cap - 1);
    for (; w->bhash[k]; k = (k + 1) & (w->bhash_cap - 1)) {
        const blob *b = &w->blobs[w->bhash[k] - 1];
        if (b->ptr == ptr && b->nbytes == nbytes) return b->off;
    }
    if (!grow((void **)&w->blobs, &w->cap_blobs, w->n_blobs + 1, sizeof *w->blobs)) {
        w->oom = true;
        return 0;
    }
    uint64_t off = align_up(w->data_size, DATA_ALIGN);
    if (nbytes > UINT64_MAX / 2 - off) {
        w->too_big = true;
        return 0;
    }
    w->blobs[w->n_blobs] = (blob){ptr, nbytes, off};
    w->bhash[k] = ++w->n_blobs;
    w->data_size = off + nbytes;
    return off;
}

static void wshaped(writer *w, int s, pr_dtype dt, int rank, const int64_t *dims, const void *data,
                    size_t nbytes) {
    wu32(w, s, (uint32_t)dt);
    wi32(w, s, rank);
    for (int i = 0; i < PR_MAX_RANK; i++) wi64(w, s, i < rank ? dims[i] : 0);
    if (data) {
        uint64_t off = wblob(w, data, nbytes);
        if (!grow((void **)&w->fix, &w->cap_fix, w->n_fix + 1, sizeof *w->fix)) w->oom = true;
        if (w->oom) return;
        w->fix[w->n_fix++] = (fixup){s, w->sec[s].n};
        wu64(w, s, off);
    } else {
        wu64(w, s, NO_DATA);
    }
    wu64(w, s, (uint64_t)nbytes);
}

static void write_attr(writer *w, const pr_attr *a) {
    const int S = SEC_NODES;
    bool list = a->type == PR_ATTR_FLOATS || a->type == PR_ATTR_INTS ||
                a->type == PR_ATTR_STRINGS || a->type == PR_ATTR_TENSORS;
    int n = list ? a->n : 0;
    wstr(w, S, a->name);
    wu32(w, S, (uint32_t)a->type);
    wstr_opt(w, S, a->ref_attr_name);
    wu32(w, S, (uint32_t)n);
    switch (a->type) {
    case PR_ATTR_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &a->f, 4);
        wu32(w, S, bits);
        break;
    }
    case PR_ATTR_INT: wi64(w, S, a->i); break;
    case PR_ATTR_STRING: wu32(w, S, wstr_n(w, a->s ? a->s : "", a->s ? a->s_len : 0)); break;
    case PR_ATTR_TENSOR:
        wshaped(w, S, a->t->dtype, a->t->rank, a->t->dims, a->t->data, a->t->nbytes);
        break;
    case PR_ATTR_FLOATS:
        for (int i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &a->floats[i], 4);
            wu32(w, S, bits);
        }
        break;
    case PR_ATTR_INTS:
        for (int i = 0; i < n; i++) wi64(w, S, a->ints[i]);
        break;
    case PR_ATTR_STRINGS:
        for (int i = 0; i < n; i++) wstr(w, S, a->strings[i]);
        break;
    case PR_ATTR_TENSORS:
        for (int i = 0; i < n; i++) {
            const pr_const *t = &a->tensors[i];
            wshaped(w, S, t->dtype, t->rank, t->dims, t->data, t->nbytes);
        }
        break;
    default: break; /* UNDEFINED: no payload */
    }
}

static void write_sections(writer *w, const pr_graph *g) {
    /* model */
    wstr(w, SEC_MODEL, g->name);
    wstr(w, SEC_MODEL, g->producer_name);
    wstr(w, SEC_MODEL, g->producer_version);
    wstr(w, SEC_MODEL, g->domain);
    wstr(w, SEC_MODEL, g->doc);
    wu32(w, SEC_MODEL, 0);
    wi64(w, SEC_MODEL, g->ir_version);
    wi64(w, SEC_MODEL, g->model_version);
    for (int i = 0; i < g->n_syms; i++) wstr(w, SEC_SYMS, g->syms[i]);
    for (int i = 0; i < g->n_opsets; i++) {
        wstr(w, SEC_OPSETS, g->opsets[i].domain);
        wu32(w, SEC_OPSETS, 0);
        wi64(w, SEC_OPSETS, g->opsets[i].version);
    }
    for (int i = 0; i < g->n_metadata; i++) {
        wstr(w, SEC_METADATA, g->metadata[i].key);
        wstr(w, SEC_METADATA, g->metadata[i].value);
    }
    for (int i = 0; i < g->n_tensors; i++) {
        const pr_tensor *t = &g->tensors[i];
        wstr(w, SEC_TENSORS, t->name);
        wu32(w, SEC_TENSORS, t->flags);
        wi32(w, SEC_TENSORS, t->producer);
        wu32(w, SEC_TENSORS, t->layout);
        wshaped(w, SEC_TENSORS, t->dtype, t->rank, t->dims, t->data, t->nbytes);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *n = &g->nodes[i];
        const int S = SEC_NODES;
        wstr(w, S, n->name);
        wstr(w, S, n->op_type);
        wstr(w, S, n->domain);
        wu32(w, S, (uint32_t)n->n_inputs);
        wu32(w, S, (uint32_t)n->n_outputs);
        wu32(w, S, (uint32_t)n->n_attrs);
        wu32(w, S, (uint32_t)n->n_origins);
        wu32(w, S, 0);
        wi64(w, S, n->opset);
        for (int k = 0; k < n->n_inputs; k++) wi32(w, S, n->inputs[k]);
        for (int k = 0; k < n->n_outputs; k++) wi32(w, S, n->outputs[k]);
        for (int k = 0; k < n->n_origins; k++) wstr(w, S, n->origins[k]);
        for (int k = 0; k < n->n_attrs; k++) write_attr(w, &n->attrs[k]);
    }
    for (int i = 0; i < g->n_inputs; i++) wi32(w, SEC_INPUTS, g->inputs[i]);
    for (int i = 0; i < g->n_outputs; i++) wi32(w, SEC_OUTPUTS, g->outputs[i]);
}

static void writer_free(writer *w) {
    for (int s = 0; s <= N_SEC; s++) free(w->sec[s].p);
    free(w->shash);
    free(w->blobs);
    free(w->bhash);
    free(w->fix);
}

/* A serialized plan: `meta` holds everything before DATA (header included,
 * checksum set); the blobs follow at data_start + blob.off. */
typedef struct plan_out {
    unsigned char *meta;
    size_t meta_size; /* == data_start */
    uint64_t total;
} plan_out;

static const unsigned char k_zeros[DATA_ALIGN];

static precis_status build(const pr_graph *g, writer *w, plan_out *o, pr_err *e) {
    memset(o, 0, sizeof *o);
    if (!g) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "cannot save plan: NULL graph");
    if (!host_little_endian())
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "plan files need a little-endian host");
    precis_status st = check_for_save(g, e);
    if (st) return st;
    write_sections(w, g);
    if (w->oom) return pr_errf(e, PRECIS_ERR_OOM, "cannot save plan: out of memory");
    if (w->too_big)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "cannot save plan: the string table exceeds 4 GiB");

    uint64_t count[N_SEC + 1] = {0}, off[N_SEC + 1] = {0};
    count[SEC_STRINGS] = w->n_strings;
    count[SEC_MODEL] = 1;
    count[SEC_SYMS] = (uint64_t)g->n_syms;
    count[SEC_OPSETS] = (uint64_t)g->n_opsets;
    count[SEC_METADATA] = (uint64_t)g->n_metadata;
    count[SEC_TENSORS] = (uint64_t)g->n_tensors;
    count[SEC_NODES] = (uint64_t)g->n_nodes;
    count[SEC_INPUTS] = (uint64_t)g->n_inputs;
    count[SEC_OUTPUTS] = (uint64_t)g->n_outputs;
    count[SEC_DATA] = w->n_blobs;
    uint64_t pos = HDR_SIZE;
    for (int s = 1; s < SEC_DATA; s++) {
        pos = align_up(pos, 8);
        off[s] = pos;
        pos += w->sec[s].n;
    }
    uint64_t data_start = align_up(pos, DATA_ALIGN);
    off[SEC_DATA] = data_start;
    o->total = data_start + w->data_size;
    if (data_start > SIZE_MAX || o->total < data_start)
        return pr_errf(e, PRECIS_ERR_OOM, "cannot save plan: too large");
    for (size_t i = 0; i < w->n_fix; i++) {
        unsigned char *p = w->sec[w->fix[i].sec].p + w->fix[i].pos;
        st64(p, ld64(p) + data_start);
    }

    unsigned char *m = calloc(1, (size_t)data_start);
    if (!m) return pr_errf(e, PRECIS_ERR_OOM, "cannot save plan: out of memory");
    memcpy(m, PLAN_MAGIC, 8);
    st32(m + 8, PR_PLAN_VERSION);
    st64(m + 16, o->total);
    st32(m + 24, N_SEC);
    st32(m + 28, 0);
    for (int s = 1; s <= N_SEC; s++) {
        unsigned char *ent = m + HDR_FIXED + (size_t)(s - 1) * SEC_ENTRY;
        st32(ent, (uint32_t)s);
        st32(ent + 4, (uint32_t)count[s]);
        st64(ent + 8, off[s]);
        st64(ent + 16, s == SEC_DATA ? w->data_size : w->sec[s].n);
        if (s != SEC_DATA && w->sec[s].n) memcpy(m + off[s], w->sec[s].p, w->sec[s].n);
    }
    /* checksum: meta after the checksum field, then blobs with their padding */
    uint32_t crc = pr_plan_crc32c(0, m + 16, (size_t)data_start - 16);
    uint64_t at = 0;
    for (size_t i = 0; i < w->n_blobs; i++) {
        const blob *b = &w->blobs[i];
        if (b->off < at) continue; /* cannot happen: blobs are appended in order */
        crc = pr_plan_crc32c(crc, k_zeros, (size_t)(b->off - at));
        crc = pr_plan_crc32c(crc, b->ptr, b->nbytes);
        at = b->off + b->nbytes;
    }
    st32(m + 12, crc);
    o->meta = m;
    o->meta_size = (size_t)data_start;
    return PRECIS_OK;
}

typedef struct sink {
    unsigned char *mem; /* memory destination, or */
    int fd;             /* file destination */
    size_t pos;
} sink;

static bool emit(sink *k, const void *p, size_t n) {
    if (k->mem) {
        if (n) memcpy(k->mem + k->pos, p, n);
        k->pos += n;
        return true;
    }
    const unsigned char *c = p;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
        ssize_t r = write(k->fd, c, chunk);
        if (r < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        c += r;
        n -= (size_t)r;
        k->pos += (size_t)r;
    }
    return true;
}

static bool emit_all(sink *k, const writer *w, const plan_out *o) {
    if (!emit(k, o->meta, o->meta_size)) return false;
    uint64_t at = 0;
    for (size_t i = 0; i < w->n_blobs; i++) {
        const blob *b = &w->blobs[i];
        if (b->off < at) continue;
        if (!emit(k, k_zeros, (size_t)(b->off - at)) || !emit(k, b->ptr, b->nbytes)) return false;
        at = b->off + b->nbytes;
    }
    return true;
}

precis_status pr_plan_save_memory(const pr_graph *g, void **buf, size_t *len, pr_err *e) {
    if (!buf || !len)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_plan_save_memory: NULL argument");
    *buf = NULL;
    *len = 0;
    writer w = {0};
    plan_out o;
    precis_status st = build(g, &w, &o, e);
    if (!st) {
        /* 64-aligned, so pr_plan_load_memory can use it in place */
        size_t total = (size_t)o.total;
        void *m = NULL;
        if (posix_memalign(&m, DATA_ALIGN, total) != 0) m = NULL;
        if (!m) {
            st = pr_errf(e, PRECIS_ERR_OOM, "cannot save plan: out of memory for %llu bytes",
                         (unsigned long long)o.total);
        } else {
            sink k = {m, -1, 0};
            emit_all(&k, &w, &o);
            *buf = m;
            *len = total;
        }
    }
    free(o.meta);
    writer_free(&w);
    return st;
}

precis_status pr_plan_save(const pr_graph *g, const char *path, pr_err *e) {
    if (!path) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_plan_save: NULL path");
    writer w = {0};
    plan_out o;
    char *tmp = NULL;
    int fd = -1;
    bool created = false;
    precis_status st = build(g, &w, &o, e);
    if (st) goto done;
    size_t pl = strlen(path);
    tmp = malloc(pl + 32);
    if (!tmp) {
        st = pr_errf(e, PRECIS_ERR_OOM, "cannot save plan: out of memory");
        goto done;
    }
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write plan '%s': %s", path, strerror(errno));
        goto done;
    }
    created = true;
    sink k = {NULL, fd, 0};
    if (!emit_all(&k, &w, &o) || fsync(fd) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write plan '%s': %s", path, strerror(errno));
        goto done;
    }
    int rc = close(fd);
    fd = -1;
    if (rc != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write plan '%s': %s", path, strerror(errno));
        goto done;
    }
    if (rename(tmp, path) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write plan '%s': rename from '%s': %s", path, tmp,
                     strerror(errno));
        goto done;
    }
    created = false;
done:
    if (fd >= 0) close(fd);
    if (created) unlink(tmp); /* our own temporary, never renamed */
    free(tmp);
    free(o.meta);
    writer_free(&w);
    return st;
}

/* ---------------------------------------------------------------- reader */

typedef struct loader {
    const unsigned char *b;
    uint64_t size;
    uint64_t off[N_SEC + 1], len[N_SEC + 1];
    uint32_t cnt[N_SEC + 1];
    pr_graph *g;
    pr_err *e;
} loader;

__attribute__((format(printf, 4, 5))) static precis_status bad(loader *L, int sec, uint64_t at,
                                                               const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (sec)
        return pr_errf(L->e, PRECIS_ERR_PARSE, "section %s, offset %llu: %s", k_sec_name[sec],
                       (unsigned long long)at, msg);
    return pr_errf(L->e, PRECIS_ERR_PARSE, "header, offset %llu: %s", (unsigned long long)at, msg);
}

static precis_status oom(loader *L) {
    return pr_errf(L->e, PRECIS_ERR_OOM, "out of memory loading the plan");
}

/* Magic, version, size and checksum of a whole plan in b[0..len). */
static precis_status check_header(const unsigned char *b, size_t len, pr_err *e) {
    if (len == 0) return pr_errf(e, PRECIS_ERR_PARSE, "not a precis plan (empty)");
    size_t m = len < 8 ? len : 8;
    if (memcmp(b, PLAN_MAGIC, m) != 0)
        return pr_errf(e, PRECIS_ERR_PARSE, "not a precis plan (no \"%s\" magic)", PLAN_MAGIC);
    if (len < HDR_FIXED)
        return pr_errf(e, PRECIS_ERR_PARSE, "truncated: %zu bytes, shorter than the %u-byte header",
                       len, HDR_FIXED);
    uint32_t ver = ld32(b + 8);
    if (ver != PR_PLAN_VERSION)
        return pr_errf(e, PRECIS_ERR_PARSE, "plan format version %u, this precis reads %d%s", ver,
                       PR_PLAN_VERSION,
                       ver > PR_PLAN_VERSION ? " (made by a newer precis: rebuild the plan)"
                                             : " (rebuild the plan)");
    uint64_t size = ld64(b + 16);
    if (size > len)
        return pr_errf(e, PRECIS_ERR_PARSE, "truncated: %zu bytes, header says %llu", len,
                       (unsigned long long)size);
    if (size < len)
        return pr_errf(e, PRECIS_ERR_PARSE, "size mismatch: %zu bytes, header says %llu", len,
                       (unsigned long long)size);
    uint32_t want = ld32(b + 12), got = pr_plan_crc32c(0, b + 16, len - 16);
    if (want != got)
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "checksum mismatch: file corrupted (CRC-32C %08x, header says %08x)", got,
                       want);
    return PRECIS_OK;
}

static precis_status parse_table(loader *L) {
    const unsigned char *b = L->b;
    uint32_t ns = ld32(b + 24);
    if (ns != N_SEC)
        return bad(L, 0, 24, "%u sections, format version %d has %d", ns, PR_PLAN_VERSION, N_SEC);
    if (L->size < HDR_SIZE)
        return bad(L, 0, HDR_FIXED, "the section table runs past the end of the file (%llu bytes)",
                   (unsigned long long)L->size);
    bool seen[N_SEC + 1] = {false};
    for (uint32_t i = 0; i < ns; i++) {
        uint64_t at = HDR_FIXED + (uint64_t)i * SEC_ENTRY;
        const unsigned char *p = b + at;
        uint32_t id = ld32(p), cnt = ld32(p + 4);
        uint64_t off = ld64(p + 8), len = ld64(p + 16);
        if (id < 1 || id > N_SEC) return bad(L, 0, at, "section entry %u has unknown id %u", i, id);
        if (seen[id]) return bad(L, 0, at, "section %s appears twice", k_sec_name[id]);
        seen[id] = true;
        if (off < HDR_SIZE || off > L->size || len > L->size - off)
            return bad(L, 0, at, "section %s at [%llu, +%llu) lies outside the file (%llu bytes)",
                       k_sec_name[id], (unsigned long long)off, (unsigned long long)len,
                       (unsigned long long)L->size);
        L->off[id] = off;
        L->len[id] = len;
        L->cnt[id] = cnt;
    }
    if (L->off[SEC_DATA] % DATA_ALIGN)
        return bad(L, 0, HDR_FIXED + (SEC_DATA - 1) * SEC_ENTRY,
                   "data section offset %llu is not %u-byte aligned",
                   (unsigned long long)L->off[SEC_DATA], DATA_ALIGN);
    static const uint32_t rec[N_SEC + 1] = {
        [SEC_MODEL] = REC_MODEL,    [SEC_SYMS] = 4,
        [SEC_OPSETS] = REC_OPSET,   [SEC_METADATA] = REC_KV,
        [SEC_TENSORS] = REC_TENSOR, [SEC_INPUTS] = 4,
        [SEC_OUTPUTS] = 4,
    };
    for (int s = 1; s <= N_SEC; s++) {
        uint64_t at = HDR_FIXED + (uint64_t)(s - 1) * SEC_ENTRY;
        if (L->cnt[s] > INT_MAX / 2 && s != SEC_STRINGS && s != SEC_DATA)
            return bad(L, 0, at, "section %s: count %u is too large", k_sec_name[s], L->cnt[s]);
        if (rec[s] && (uint64_t)L->cnt[s] * rec[s] != L->len[s])
            return bad(L, 0, at, "section %s: %u records of %u bytes do not make its %llu bytes",
                       k_sec_name[s], L->cnt[s], rec[s], (unsigned long long)L->len[s]);
    }
    if (L->cnt[SEC_MODEL] != 1)
        return bad(L, 0, HDR_FIXED + (SEC_MODEL - 1) * SEC_ENTRY, "model section count %u, not 1",
                   L->cnt[SEC_MODEL]);
    if ((uint64_t)L->cnt[SEC_NODES] * REC_NODE > L->len[SEC_NODES])
        return bad(L, 0, HDR_FIXED + (SEC_NODES - 1) * SEC_ENTRY,
                   "%u nodes cannot fit in the %llu-byte node section", L->cnt[SEC_NODES],
                   (unsigned long long)L->len[SEC_NODES]);
    return PRECIS_OK;
}

/* String `ref` (NO_STR allowed when opt). */
static precis_status rstr(loader *L, int sec, uint64_t at, uint32_t ref, bool opt, const char **out,
                          size_t *len, const char *what) {
    *out = NULL;
    if (len) *len = 0;
    if (ref == NO_STR) {
        if (opt) return PRECIS_OK;
        return bad(L, sec, at, "%s: missing string", what);
    }
    uint64_t sl = L->len[SEC_STRINGS];
    if (sl < 5 || ref > sl - 5)
        return bad(L, sec, at, "%s: string reference %u is past the string table (%llu bytes)",
                   what, ref, (unsigned long long)sl);
    const unsigned char *p = L->b + L->off[SEC_STRINGS] + ref;
    uint32_t n = ld32(p);
    if (n > sl - 5 - ref || p[4 + (size_t)n] != 0)
        return bad(L, sec, at, "%s: string at %u (length %u) is not a valid string-table entry",
                   what, ref, n);
    *out = (const char *)p + 4;
    if (len) *len = n;
    return PRECIS_OK;
}

static precis_status rshaped(loader *L, int sec, uint64_t at, const char *what, pr_const *c) {
    const unsigned char *p = L->b + at;
    memset(c, 0, sizeof *c);
    pr_dtype dt = (pr_dtype)ld32(p);
    int32_t rank = (int32_t)ld32(p + 4);
    int64_t dims[PR_MAX_RANK];
    for (int i = 0; i < PR_MAX_RANK; i++) dims[i] = (int64_t)ld64(p + 8 + 8 * i);
    uint64_t doff = ld64(p + 72), nb = ld64(p + 80);
    bool has = doff != NO_DATA;
    if (nb > SIZE_MAX)
        return bad(L, sec, at, "%s: size %llu is too large", what, (unsigned long long)nb);
    if (ld32(p) > PR_DTYPE_MAX) return bad(L, sec, at, "%s: unknown dtype %u", what, ld32(p));
    char why[160];
    const char *w = check_shaped(dt, rank, dims, has, (size_t)nb, L->g->n_syms, why, sizeof why);
    if (w) return bad(L, sec, at, "%s: %s", what, w);
    c->dtype = dt;
    c->rank = rank;
    for (int i = 0; i < rank; i++) c->dims[i] = dims[i];
    c->nbytes = (size_t)nb;
    if (has) {
        uint64_t ds = L->off[SEC_DATA], de = ds + L->len[SEC_DATA];
        if (doff % DATA_ALIGN)
            return bad(L, sec, at, "%s: data offset %llu is not %u-byte aligned", what,
                       (unsigned long long)doff, DATA_ALIGN);
        if (doff < ds || doff > de || nb > de - doff)
            return bad(L, sec, at,
                       "%s: data [%llu, +%llu) lies outside the data section [%llu, %llu)", what,
                       (unsigned long long)doff, (unsigned long long)nb, (unsigned long long)ds,
                       (unsigned long long)de);
        c->data = (void *)(uintptr_t)(L->b + doff);
    }
    return PRECIS_OK;
}

static precis_status load_model(loader *L) {
    pr_graph *g = L->g;
    uint64_t at = L->off[SEC_MODEL];
    const unsigned char *p = L->b + at;
    const char **dst[5] = {&g->name, &g->producer_name, &g->producer_version, &g->domain, &g->doc};
    static const char *const what[5] = {"graph name", "producer_name", "producer_version", "domain",
                                        "doc"};
    for (int i = 0; i < 5; i++) {
        precis_status st =
            rstr(L, SEC_MODEL, at + 4 * (uint64_t)i, ld32(p + 4 * i), false, dst[i], NULL, what[i]);
        if (st) return st;
    }
    g->ir_version = (int64_t)ld64(p + 24);
    g->model_version = (int64_t)ld64(p + 32);

    int n = (int)L->cnt[SEC_SYMS];
    if (n) {
        g->syms = malloc((size_t)n * sizeof *g->syms);
        if (!g->syms) return oom(L);
        g->cap_syms = n;
        for (int i = 0; i < n; i++) {
            uint64_t a = L->off[SEC_SYMS] + 4 * (uint64_t)i;
            precis_status st =
                rstr(L, SEC_SYMS, a, ld32(L->b + a), false, &g->syms[i], NULL, "symbolic dim name");
            if (st) return st;
            g->n_syms = i + 1;
        }
    }
    n = (int)L->cnt[SEC_OPSETS];
    g->opsets = pr_arena_alloc(g->arena, (size_t)(n + 1) * sizeof *g->opsets);
    if (!g->opsets) return oom(L);
    for (int i = 0; i < n; i++) {
        uint64_t a = L->off[SEC_OPSETS] + REC_OPSET * (uint64_t)i;
        precis_status st = rstr(L, SEC_OPSETS, a, ld32(L->b + a), false, &g->opsets[i].domain, NULL,
                                "opset domain");
        if (st) return st;
        g->opsets[i].version = (int64_t)ld64(L->b + a + 8);
        g->n_opsets = i + 1;
    }
    n = (int)L->cnt[SEC_METADATA];
    g->metadata = pr_arena_alloc(g->arena, (size_t)(n + 1) * sizeof *g->metadata);
    if (!g->metadata) return oom(L);
    for (int i = 0; i < n; i++) {
        uint64_t a = L->off[SEC_METADATA] + REC_KV * (uint64_t)i;
        precis_status st = rstr(L, SEC_METADATA, a, ld32(L->b + a), false, &g->metadata[i].key,
                                NULL, "metadata key");
        if (!st)
            st = rstr(L, SEC_METADATA, a + 4, ld32(L->b + a + 4), false, &g->metadata[i].value,
                      NULL, "metadata value");
        if (st) return st;
        g->n_metadata = i + 1;
    }
    return PRECIS_OK;
}

static precis_status load_tensors(loader *L) {
    pr_graph *g = L->g;
    int n = (int)L->cnt[SEC_TENSORS], n_nodes = (int)L->cnt[SEC_NODES];
    if (n) {
        g->tensors = malloc((size_t)n * sizeof *g->tensors);
        if (!g->tensors) return oom(L);
        g->cap_tensors = n;
    }
    for (int i = 0; i < n; i++) {
        uint64_t at = L->off[SEC_TENSORS] + REC_TENSOR * (uint64_t)i;
        const unsigned char *p = L->b + at;
        char what[96];
        snprintf(what, sizeof what, "tensor %d", i);
        const char *name;
        precis_status st = rstr(L, SEC_TENSORS, at, ld32(p), false, &name, NULL, what);
        if (st) return st;
        snprintf(what, sizeof what, "tensor %d ('%.60s')", i, name);
        if (pr_graph_find_tensor(g, name) >= 0)
            return bad(L, SEC_TENSORS, at, "%s: duplicate tensor name", what);
        int32_t producer = (int32_t)ld32(p + 8);
        if (producer < -1 || producer >= n_nodes)
            return bad(L, SEC_TENSORS, at + 8, "%s: producer %d is not a node (%d nodes)", what,
                       producer, n_nodes);
        if (p[12] > PLAN_MAX_LAYOUT)
            return bad(L, SEC_TENSORS, at + 12, "%s: unknown layout %u", what, p[12]);
        pr_const c;
        st = rshaped(L, SEC_TENSORS, at + 16, what, &c);
        if (st) return st;
        int t = pr_graph_get_tensor(g, name, L->e);
        if (t < 0) return PRECIS_ERR_OOM;
        pr_tensor *x = &g->tensors[t];
        x->flags = ld32(p + 4);
        x->producer = producer;
        x->layout = p[12];
        x->dtype = c.dtype;
        x->rank = c.rank;
        memcpy(x->dims, c.dims, sizeof x->dims);
        x->data = c.data;
        x->nbytes = c.nbytes;
    }
    return PRECIS_OK;
}

static precis_status load_attr(loader *L, uint64_t *pp, uint64_t end, const char *nwhat, int k,
                               pr_attr *a) {
    pr_graph *g = L->g;
    uint64_t at = *pp;
    char what[256];
    snprintf(what, sizeof what, "%s attribute %d", nwhat, k);
    if (end - at < REC_ATTR)
        return bad(L, SEC_NODES, at, "%s runs past the end of the section", what);
    const unsigned char *p = L->b + at;
    memset(a, 0, sizeof *a);
    precis_status st = rstr(L, SEC_NODES, at, ld32(p), false, &a->name, NULL, what);
    if (st) return st;
    snprintf(what, sizeof what, "%s attribute %d ('%.60s')", nwhat, k, a->name);
    uint32_t type = ld32(p + 4), n = ld32(p + 12);
    st = rstr(L, SEC_NODES, at + 8, ld32(p + 8), true, &a->ref_attr_name, NULL, what);
    if (st) return st;
    a->type = (pr_attr_type)type;
    if (type > PR_ATTR_TYPE_PROTOS || !attr_kind_ok((pr_attr_type)type))
        return bad(L, SEC_NODES, at + 4, "%s: attribute kind %u (%s) cannot be in a plan", what,
                   type, attr_kind_name((int)type));
    bool list = type == PR_ATTR_FLOATS || type == PR_ATTR_INTS || type == PR_ATTR_STRINGS ||
                type == PR_ATTR_TENSORS;
    if (!list && n)
        return bad(L, SEC_NODES, at + 12, "%s: count %u for a %s attribute", what, n,
                   attr_kind_name((int)type));
    at += REC_ATTR;
    uint64_t rem = end - at;
    uint64_t need = 0;
    switch (type) {
    case PR_ATTR_FLOAT:
    case PR_ATTR_STRING: need = 4; break;
    case PR_ATTR_INT: need = 8; break;
    case PR_ATTR_TENSOR: need = REC_SHAPED; break;
    case PR_ATTR_FLOATS:
    case PR_ATTR_STRINGS: need = 4 * (uint64_t)n; break;
    case PR_ATTR_INTS: need = 8 * (uint64_t)n; break;
    case PR_ATTR_TENSORS: need = REC_SHAPED * (uint64_t)n; break;
    default: break;
    }
    if (need > rem || n > INT_MAX / 2)
        return bad(L, SEC_NODES, at, "%s: %llu bytes of payload run past the end of the section",
                   what, (unsigned long long)need);
    p = L->b + at;
    a->n = list ? (int)n : 0;
    switch (type) {
    case PR_ATTR_FLOAT: {
        uint32_t bits = ld32(p);
        memcpy(&a->f, &bits, 4);
        break;
    }
    case PR_ATTR_INT: a->i = (int64_t)ld64(p); break;
    case PR_ATTR_STRING: st = rstr(L, SEC_NODES, at, ld32(p), false, &a->s, &a->s_len, what); break;
    case PR_ATTR_TENSOR:
        a->t = pr_arena_alloc(g->arena, sizeof *a->t);
        if (!a->t) return oom(L);
        st = rshaped(L, SEC_NODES, at, what, a->t);
        break;
    case PR_ATTR_FLOATS:
        a->floats = pr_arena_alloc(g->arena, (size_t)n * sizeof(float));
        if (!a->floats) return oom(L);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t bits = ld32(p + 4 * (size_t)i);
            memcpy(&a->floats[i], &bits, 4);
        }
        break;
    case PR_ATTR_INTS:
        a->ints = pr_arena_alloc(g->arena, (size_t)n * sizeof(int64_t));
        if (!a->ints) return oom(L);
        for (uint32_t i = 0; i < n; i++) a->ints[i] = (int64_t)ld64(p + 8 * (size_t)i);
        break;
    case PR_ATTR_STRINGS:
        a->strings = pr_arena_alloc(g->arena, (size_t)n * sizeof(char *));
        if (!a->strings) return oom(L);
        for (uint32_t i = 0; i < n && !st; i++)
            st = rstr(L, SEC_NODES, at + 4 * (uint64_t)i, ld32(p + 4 * (size_t)i), false,
                      &a->strings[i], NULL, what);
        break;
    case PR_ATTR_TENSORS:
        a->tensors = pr_arena_alloc(g->arena, (size_t)n * sizeof(pr_const));
        if (!a->tensors) return oom(L);
        for (uint32_t i = 0; i < n && !st; i++)
            st = rshaped(L, SEC_NODES, at + REC_SHAPED * (uint64_t)i, what, &a->tensors[i]);
        break;
    default: break;
    }
    if (st) return st;
    *pp = at + need;
    return PRECIS_OK;
}

static precis_status load_nodes(loader *L) {
    pr_graph *g = L->g;
    int nn = (int)L->cnt[SEC_NODES], nt = g->n_tensors;
    if (nn) {
        g->nodes = malloc((size_t)nn * sizeof *g->nodes);
        if (!g->nodes) return oom(L);
        g->cap_nodes = nn;
    }
    uint64_t p = L->off[SEC_NODES], end = p + L->len[SEC_NODES];
    for (int i = 0; i < nn; i++) {
        uint64_t at = p;
        char what[128];
        snprintf(what, sizeof what, "node %d", i);
        if (end - p < REC_NODE)
            return bad(L, SEC_NODES, at, "%s runs past the end of the section", what);
        const unsigned char *b = L->b + p;
        const char *name, *op_type, *domain;
        precis_status st = rstr(L, SEC_NODES, at, ld32(b), false, &name, NULL, what);
        if (!st) st = rstr(L, SEC_NODES, at + 4, ld32(b + 4), false, &op_type, NULL, what);
        if (!st) st = rstr(L, SEC_NODES, at + 8, ld32(b + 8), false, &domain, NULL, what);
        if (st) return st;
        snprintf(what, sizeof what, "node %d ('%.60s')", i, name);
        uint32_t n_in = ld32(b + 12), n_out = ld32(b + 16), n_attr = ld32(b + 20),
                 n_orig = ld32(b + 24);
        int64_t opset = (int64_t)ld64(b + 32);
        p += REC_NODE;
        uint64_t rem = end - p;
        if ((uint64_t)n_in + n_out + n_orig > rem / 4 || n_attr > rem / REC_ATTR ||
            n_in > INT_MAX / 4 || n_out > INT_MAX / 4 || n_attr > INT_MAX / 4 ||
            n_orig > INT_MAX / 4)
            return bad(L, SEC_NODES, at + 12,
                       "%s: %u inputs, %u outputs, %u attributes and %u origins do not fit in the "
                       "section",
                       what, n_in, n_out, n_attr, n_orig);
        int ni = pr_graph_add_node(g, (int)n_in, (int)n_out, (int)n_attr, L->e);
        if (ni < 0) return PRECIS_ERR_OOM;
        pr_node *n = &g->nodes[ni];
        n->name = name;
        n->op_type = op_type;
        n->domain = domain;
        n->op = pr_op_lookup_domain(domain, op_type);
        n->opset = opset;
        b = L->b + p;
        for (uint32_t k = 0; k < n_in + n_out; k++) {
            int32_t t = (int32_t)ld32(b + 4 * (size_t)k);
            if (t < -1 || t >= nt)
                return bad(L, SEC_NODES, p + 4 * (uint64_t)k,
                           "%s: %s %u refers to tensor %d (%d tensors)", what,
                           k < n_in ? "input" : "output", k < n_in ? k : k - n_in, t, nt);
            if (k < n_in)
                n->inputs[k] = t;
            else
                n->outputs[k - n_in] = t;
        }
        p += 4 * ((uint64_t)n_in + n_out);
        if (n_orig) {
            n->origins = pr_arena_alloc(g->arena, (size_t)n_orig * sizeof(char *));
            if (!n->origins) return oom(L);
            for (uint32_t k = 0; k < n_orig; k++) {
                st = rstr(L, SEC_NODES, p, ld32(L->b + p), false, &n->origins[k], NULL, what);
                if (st) return st;
                p += 4;
            }
            n->n_origins = (int)n_orig;
        }
        for (uint32_t k = 0; k < n_attr; k++) {
            st = load_attr(L, &p, end, what, (int)k, &n->attrs[k]);
            if (st) return st;
        }
    }
    if (p != end)
        return bad(L, SEC_NODES, p, "%llu bytes left after the last node",
                   (unsigned long long)(end - p));
    return PRECIS_OK;
}

static precis_status load_io(loader *L, int sec, int **arr, int *n_out) {
    pr_graph *g = L->g;
    int n = (int)L->cnt[sec];
    *arr = pr_arena_alloc(g->arena, (size_t)(n ? n : 1) * sizeof(int));
    if (!*arr) return oom(L);
    for (int i = 0; i < n; i++) {
        uint64_t at = L->off[sec] + 4 * (uint64_t)i;
        int32_t t = (int32_t)ld32(L->b + at);
        if (t < 0 || t >= g->n_tensors)
            return bad(L, sec, at, "graph %s %d is tensor %d (%d tensors)",
                       sec == SEC_INPUTS ? "input" : "output", i, t, g->n_tensors);
        (*arr)[i] = t;
    }
    *n_out = n;
    return PRECIS_OK;
}

/* Everything after the header checks, into the empty graph g. */
static precis_status load_body(const unsigned char *b, size_t len, pr_graph *g, pr_err *e) {
    loader L = {.b = b, .size = len, .g = g, .e = e};
    precis_status st = parse_table(&L);
    if (!st) st = load_model(&L);
    if (!st) st = load_tensors(&L);
    if (!st) st = load_nodes(&L);
    if (!st) st = load_io(&L, SEC_INPUTS, &g->inputs, &g->n_inputs);
    if (!st) st = load_io(&L, SEC_OUTPUTS, &g->outputs, &g->n_outputs);
    return st;
}

precis_status pr_plan_load(const char *path, pr_graph **out, pr_err *e) {
    if (!path || !out) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_plan_load: NULL argument");
    *out = NULL;
    if (!host_little_endian())
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "plan files need a little-endian host");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pr_errf(e, PRECIS_ERR_IO, "cannot open plan '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return pr_errf(e, PRECIS_ERR_IO, "cannot read plan '%s': not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: not a precis plan (empty file)", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return pr_errf(e, PRECIS_ERR_OOM, "%s: too large to map", path);
    }
    size_t len = (size_t)sb.st_size;
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE; /* every byte is read for the checksum anyway */
#endif
    void *m = mmap(NULL, len, PROT_READ, flags, fd, 0);
    int err = errno;
    close(fd);
    if (m == MAP_FAILED)
        return pr_errf(e, PRECIS_ERR_IO, "cannot map plan '%s': %s", path, strerror(err));
    pr_graph *g = pr_graph_create();
    if (!g || !pr_graph_own_mapping(g, m, len)) {
        pr_graph_destroy(g);
        munmap(m, len);
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", path);
    }
    precis_status st = check_header(m, len, e);
    if (!st) st = load_body(m, len, g, e);
    if (st) {
        pr_graph_destroy(g);
        pr_err_prefix(e, "%s", path);
        return st;
    }
    *out = g;
    return PRECIS_OK;
}

precis_status pr_plan_load_memory(const void *buf, size_t len, bool copy, pr_graph **out,
                                  pr_err *e) {
    if (!out || (!buf && len))
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_plan_load_memory: NULL argument");
    *out = NULL;
    if (!host_little_endian())
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "plan files need a little-endian host");
    precis_status st = check_header(buf, len, e);
    if (st) return st;
    pr_graph *g = pr_graph_create();
    if (!g) return pr_errf(e, PRECIS_ERR_OOM, "out of memory loading the plan");
    const unsigned char *b = buf;
    if (copy || (uintptr_t)b % DATA_ALIGN) { /* data must be 64-aligned: copy */
        void *c = NULL;
        if (posix_memalign(&c, DATA_ALIGN, len) != 0) c = NULL;
        if (!c || !pr_graph_own(g, c)) {
            free(c);
            pr_graph_destroy(g);
            return pr_errf(e, PRECIS_ERR_OOM, "out of memory copying a %zu-byte plan", len);
        }
        memcpy(c, b, len);
        b = c;
    }
    st = load_body(b, len, g, e);
    if (st) {
        pr_graph_destroy(g);
        return st;
    }
    *out = g;
    return PRECIS_OK;
}
