/* Einsum: equation parser (shared with the ref kernel) and shape inference. */
#include <stdio.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/linalg.h"

static int letter_index(char c) {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    return -1;
}

/* One term of the equation: letters (index 0..51) and at most one '...'. */
typedef struct term {
    int n;             /* entries, the ellipsis counting as one */
    int item[PR_EINSUM_MAX_LABELS]; /* letter index, or -1 for '...' */
    bool ell;
} term;

/* Parse [s, end) into t; whitespace skipped. */
static int parse_term(const char *s, const char *end, term *t, const char *what, char *msg,
                      size_t cap) {
    t->n = 0;
    t->ell = false;
    while (s < end) {
        char c = *s;
        if (c == ' ' || c == '\t') {
            s++;
            continue;
        }
        if (c == '.') {
            if (end - s < 3 || s[1] != '.' || s[2] != '.') {
                snprintf(msg, cap, "%s: '.' must be part of '...'", what);
                return -1;
            }
            if (t->ell) {
                snprintf(msg, cap, "%s: more than one '...'", what);
                return -1;
            }
            t->ell = true;
            if (t->n >= PR_EINSUM_MAX_LABELS) goto too_many;
            t->item[t->n++] = -1;
            s += 3;
            continue;
        }
        int li = letter_index(c);
        if (li < 0) {
            snprintf(msg, cap, "%s: invalid character '%c' (labels are letters a-z, A-Z)", what, c);
            return -1;
        }
        if (t->n >= PR_EINSUM_MAX_LABELS) goto too_many;
        t->item[t->n++] = li;
        s++;
    }
    return 0;
too_many:
    snprintf(msg, cap, "%s: too many labels", what);
    return -1;
}

int pr_einsum_parse(const char *eq, int n_ops, const int *ranks, pr_einsum *es, char *msg,
                    size_t cap) {
    memset(es, 0, sizeof *es);
    if (n_ops < 1 || n_ops > PR_EINSUM_MAX_OPS) {
        snprintf(msg, cap, "%d operands given, 1 to %d supported", n_ops, PR_EINSUM_MAX_OPS);
        return -1;
    }
    es->n_ops = n_ops;
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    term terms[PR_EINSUM_MAX_OPS];
    int nt = 0;
    const char *s = eq;
    for (;;) {
        const char *comma = memchr(s, ',', (size_t)(lhs_end - s));
        const char *e = comma ? comma : lhs_end;
        if (nt >= n_ops) {
            snprintf(msg, cap, "more terms than the %d inputs", n_ops);
            return -1;
        }
        char what[32];
        snprintf(what, sizeof what, "term %d", nt);
        if (parse_term(s, e, &terms[nt], what, msg, cap)) return -1;
        nt++;
        if (!comma) break;
        s = comma + 1;
    }
    if (nt != n_ops) {
        snprintf(msg, cap, "%d input terms but the node has %d inputs", nt, n_ops);
        return -1;
    }
    /* ellipsis widths */
    int n_ell = 0, ell_w[PR_EINSUM_MAX_OPS];
    for (int o = 0; o < n_ops; o++) {
        int letters = terms[o].n - (terms[o].ell ? 1 : 0);
        ell_w[o] = 0;
        if (ranks[o] < 0) {
            snprintf(msg, cap, "input %d has unknown rank", o);
            return -1;
        }
        if (terms[o].ell) {
            ell_w[o] = ranks[o] - letters;
            if (ell_w[o] < 0) {
                snprintf(msg, cap, "term %d has %d labels but input %d has rank %d", o, letters,
                         o, ranks[o]);
                return -1;
            }
        } else if (letters != ranks[o]) {
            snprintf(msg, cap, "term %d has %d labels but input %d has rank %d", o, letters, o,
                     ranks[o]);
            return -1;
        }
        if (ell_w[o] > n_ell) n_ell = ell_w[o];
    }
    es->n_ell = n_ell;
    es->n_labels = n_ell;
    int letter_label[52], count[52];
    for (int i = 0; i < 52; i++) letter_label[i] = -1, count[i] = 0;
    for (int o = 0; o < n_ops; o++) {
        int r = 0;
        es->rank[o] = ranks[o];
        for (int i = 0; i < terms[o].n; i++) {
            int li = terms[o].item[i];
            if (li < 0) {
                for (int j = n_ell - ell_w[o]; j < n_ell; j++) es->label[o][r++] = j;
                continue;
            }
            if (letter_label[li] < 0) {
                letter_label[li] = es->n_labels;
                es->letter[es->n_labels] = li < 26 ? (char)('a' + li) : (char)('A' + li - 26);
                es->n_labels++;
            }
            count[li]++;
            es->label[o][r++] = letter_label[li];
        }
    }
    if (arrow) {
        term out;
        if (parse_term(arrow + 2, arrow + strlen(arrow), &out, "output", msg, cap)) return -1;
        bool used[52] = {false};
        for (int i = 0; i < out.n; i++) {
            int li = out.item[i];
            if (li < 0) {
                for (int j = 0; j < n_ell; j++) es->out_label[es->out_rank++] = j;
                continue;
            }
            char c = li < 26 ? (char)('a' + li) : (char)('A' + li - 26);
            if (letter_label[li] < 0) {
                snprintf(msg, cap, "output label '%c' does not appear in any input", c);
                return -1;
            }
            if (used[li]) {
                snprintf(msg, cap, "output label '%c' appears twice", c);
                return -1;
            }
            used[li] = true;
            es->out_label[es->out_rank++] = letter_label[li];
        }
    } else {
        for (int j = 0; j < n_ell; j++) es->out_label[es->out_rank++] = j;
        /* letters seen exactly once, in ASCII order (upper case first) */
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < 26; i++) {
                int li = pass == 0 ? 26 + i : i;
                if (count[li] == 1) es->out_label[es->out_rank++] = letter_label[li];
            }
    }
    if (es->out_rank > PR_MAX_RANK) {
        snprintf(msg, cap, "output rank %d exceeds the supported maximum %d", es->out_rank,
                 PR_MAX_RANK);
        return -1;
    }
    return 0;
}

int pr_einsum_sizes(const pr_einsum *es, const int64_t *const *dims, int64_t *sizes, char *msg,
                    size_t cap) {
    bool seen[PR_EINSUM_MAX_LABELS] = {false};
    for (int l = 0; l < es->n_labels; l++) sizes[l] = 1;
    for (int o = 0; o < es->n_ops; o++)
        for (int d = 0; d < es->rank[o]; d++) {
            int l = es->label[o][d];
            int64_t v = dims[o][d], cur = sizes[l];
            if (!seen[l]) {
                sizes[l] = v;
                seen[l] = true;
                continue;
            }
            /* numpy broadcasting: a dim of size 1 stretches to the other */
            if (v == 1 || cur == v) continue;
            if (cur == 1) sizes[l] = v;
            else if (v >= 0 && cur >= 0) goto bad;
            else if (cur < 0 && v >= 0) sizes[l] = v;
            else if (cur < 0 && v < 0) sizes[l] = PR_DIM_UNKNOWN;
            continue;
        bad:
            if (l < es->n_ell)
                snprintf(msg, cap, "'...' dimensions cannot be broadcast: %lld vs %lld (input %d)",
                         (long long)cur, (long long)v, o);
            else
                snprintf(msg, cap, "label '%c' has size %lld in one place and %lld in input %d",
                         es->letter[l], (long long)cur, (long long)v, o);
            return -1;
        }
    return 0;
}

precis_status pr_infer_Einsum(pr_infer *ic) {
    const char *eq = pr_attr_str(ic->node, "equation", NULL);
    if (!eq) return pr_inferf(ic, PRECIS_ERR_SHAPE, "attribute 'equation' is required");
    if (ic->n_in < 1) return pr_inferf(ic, PRECIS_ERR_SHAPE, "at least one input is required");
    pr_dtype dt = PRECIS_UNDEFINED;
    int ranks[PR_EINSUM_MAX_OPS];
    bool ranks_known = true;
    if (ic->n_in > PR_EINSUM_MAX_OPS)
        return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "%d inputs given, at most %d supported",
                         ic->n_in, PR_EINSUM_MAX_OPS);
    for (int i = 0; i < ic->n_in; i++) {
        if (!pr_in_present(ic, i))
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d is missing", i);
        pr_dtype d = ic->in[i].dtype;
        const pr_dtype_traits *t = pr_dtype_info(d);
        if (!t->is_float && !t->is_int)
            return pr_inferf(ic, PRECIS_ERR_SHAPE, "input %d has dtype %s, expected a numeric type",
                             i, pr_dtype_name(d));
        if (i && d != dt)
            return pr_inferf(ic, PRECIS_ERR_SHAPE,
                             "all inputs must have the same dtype: input 0 is %s, input %d is %s",
                             pr_dtype_name(dt), i, pr_dtype_name(d));
        dt = d;
        ranks[i] = ic->in[i].rank;
        if (ranks[i] < 0) ranks_known = false;
    }
    ic->out[0].dtype = dt;
    ic->out[0].rank = -1;
    if (!ranks_known) return PRECIS_OK;
    pr_einsum es;
    char msg[256];
    if (pr_einsum_parse(eq, ic->n_in, ranks, &es, msg, sizeof msg))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "equation '%s': %s", eq, msg);
    const int64_t *dims[PR_EINSUM_MAX_OPS];
    for (int i = 0; i < ic->n_in; i++) dims[i] = ic->in[i].dims;
    int64_t sizes[PR_EINSUM_MAX_LABELS];
    if (pr_einsum_sizes(&es, dims, sizes, msg, sizeof msg))
        return pr_inferf(ic, PRECIS_ERR_SHAPE, "equation '%s': %s", eq, msg);
    ic->out[0].rank = es.out_rank;
    for (int d = 0; d < es.out_rank; d++) ic->out[0].dims[d] = sizes[es.out_label[d]];
    return PRECIS_OK;
}
