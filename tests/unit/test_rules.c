/* Precision rules (passes/prec_rules.h) and the JSON reader under them
 * (core/json.h): selector kinds, last-rule-wins, no-match errors naming the
 * closest names, rules files and their errors. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/json.h"
#include "passes/prec_rules.h"

static pr_graph *toy_graph(void) {
    static const char *const names[][2] = {
        {"/encoder/layer.0/attention/self/Softmax", "Softmax"},
        {"/encoder/layer.0/attention/output/LayerNorm/LayerNormalization", "LayerNormalization"},
        {"/encoder/layer.1/attention/self/Softmax", "Softmax"},
        {"LayerNorm_final", "LayerNormalization"},
        {"/pooler/dense/MatMul", "MatMul"},
        {"ReduceMean_3", "ReduceMean"},
    };
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    for (size_t i = 0; g && i < sizeof names / sizeof names[0]; i++) {
        int k = pr_graph_add_node(g, 0, 0, 0, &e);
        if (k < 0) return NULL;
        g->nodes[k].name = names[i][0];
        g->nodes[k].op_type = names[i][1];
    }
    return g;
}

static int count_hits(const pr_prec_rule *r, const pr_graph *g) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += pr_rule_matches(r, g->nodes[i].name, g->nodes[i].op_type);
    return n;
}

static void test_selectors(void) {
    pr_graph *g = toy_graph();
    CHECK(g != NULL);
    if (!g) return;
    pr_err e = {0};
    pr_prec_rules rs = {0};
    CHECK(pr_rules_add(&rs, "LayerNorm*:fp32", PR_RULE_COMPUTE, "--layer-precision", &e) == 0);
    CHECK(pr_rules_add(&rs, "*attention/self/*:fp16", PR_RULE_COMPUTE, "--layer-precision", &e) == 0);
    CHECK(pr_rules_add(&rs, "re:layer\\.[01]/attention/output:bf16", PR_RULE_COMPUTE, "x", &e) == 0);
    CHECK(pr_rules_add(&rs, "op:LayerNormalization:fp32", PR_RULE_COMPUTE, "x", &e) == 0);
    CHECK(pr_rules_add(&rs, "op:Reduce*:int8", PR_RULE_OUTPUT, "x", &e) == 0);
    CHECK(pr_rules_add(&rs, "/pooler/dense/MatMul:int8", PR_RULE_COMPUTE, "x", &e) == 0);
    CHECK(rs.n == 6);
    CHECK(rs.r[0].kind == PR_SEL_GLOB && rs.r[0].type == PRECIS_FLOAT32);
    CHECK(rs.r[2].kind == PR_SEL_REGEX && rs.r[2].type == PRECIS_BFLOAT16);
    CHECK(rs.r[3].kind == PR_SEL_OP && !strcmp(rs.r[3].pattern, "LayerNormalization"));
    CHECK(rs.r[5].kind == PR_SEL_EXACT && rs.r[5].type == PRECIS_INT8);
    CHECK(count_hits(&rs.r[0], g) == 1);  /* LayerNorm_final only: the glob is anchored */
    CHECK(count_hits(&rs.r[1], g) == 2);  /* '*' crosses '/' */
    CHECK(count_hits(&rs.r[2], g) == 1);  /* regex searches */
    CHECK(count_hits(&rs.r[3], g) == 2);
    CHECK(count_hits(&rs.r[4], g) == 1);
    CHECK(count_hits(&rs.r[5], g) == 1);
    CHECK(pr_rules_check(&rs, g, &e) == 0);
    /* the later rule of the same kind wins; output rules are separate */
    const char *ln = "/encoder/layer.0/attention/output/LayerNorm/LayerNormalization";
    CHECK(pr_rules_decide(&rs, PR_RULE_COMPUTE, ln, "LayerNormalization") == 3);
    CHECK(pr_rules_decide(&rs, PR_RULE_COMPUTE, "LayerNorm_final", "LayerNormalization") == 3);
    CHECK(pr_rules_decide(&rs, PR_RULE_OUTPUT, "LayerNorm_final", "LayerNormalization") == -1);
    CHECK(pr_rules_decide(&rs, PR_RULE_OUTPUT, "ReduceMean_3", "ReduceMean") == 4);
    CHECK(pr_rules_decide(&rs, PR_RULE_COMPUTE, "nothing", "Add") == -1);
    CHECK(!strcmp(pr_rule_type_name(PRECIS_BFLOAT16), "bf16"));

    /* a selector that matches nothing names itself and the closest names */
    CHECK(pr_rules_add(&rs, "LayerNorm_finl:fp32", PR_RULE_COMPUTE, "--layer-precision", &e) == 0);
    CHECK(pr_rules_check(&rs, g, &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "'LayerNorm_finl:fp32'") && strstr(e.msg, "closest: 'LayerNorm_final'"));
    CHECK(strstr(e.msg, "--layer-precision") != NULL);
    pr_rules_free(&rs);
    CHECK(pr_rules_add(&rs, "op:Softmx:fp32", PR_RULE_COMPUTE, "--layer-precision", &e) == 0);
    CHECK(pr_rules_check(&rs, g, &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "op type") && strstr(e.msg, "closest: 'Softmax'"));
    pr_rules_free(&rs);
    pr_graph_destroy(g);
}

static void test_bad_specs(void) {
    pr_err e = {0};
    pr_prec_rules rs = {0};
    CHECK(pr_rules_add(&rs, "LayerNorm", PR_RULE_COMPUTE, "--layer-precision", &e) ==
          PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "no ':TYPE'") != NULL);
    CHECK(pr_rules_add(&rs, "LayerNorm:fp64", PR_RULE_COMPUTE, "s", &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "unknown type 'fp64'") != NULL);
    CHECK(pr_rules_add(&rs, ":fp32", PR_RULE_OUTPUT, "s", &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "empty selector") && strstr(e.msg, "output type"));
    CHECK(pr_rules_add(&rs, "op::fp32", PR_RULE_COMPUTE, "s", &e) == PRECIS_ERR_INVALID_ARG);
    CHECK(pr_rules_add(&rs, "re:(unclosed:fp32", PR_RULE_COMPUTE, "s", &e) ==
          PRECIS_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "bad regex") != NULL);
    CHECK(rs.n == 0);
    pr_rules_free(&rs);
}

static const char *write_tmp(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/precis_rules_%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static void test_rules_file(void) {
    pr_err e = {0};
    pr_prec_rules rs = {0};
    const char *p = write_tmp("{\"rules\": [\n"
                              "  {\"select\": \"LayerNorm*\", \"precision\": \"fp32\"},\n"
                              "  {\"select\": \"op:Softmax\", \"precision\": \"fp32\", "
                              "\"output_type\": \"fp16\"}\n]}\n");
    CHECK(pr_rules_load(&rs, p, &e) == 0);
    CHECK(rs.n == 3);
    CHECK(rs.n == 3 && rs.r[1].what == PR_RULE_COMPUTE && rs.r[2].what == PR_RULE_OUTPUT &&
          rs.r[2].type == PRECIS_FLOAT16 && strstr(rs.r[2].source, ":3"));
    pr_rules_free(&rs);
    p = write_tmp("[{\"select\": \"re:^/pooler\", \"precision\": \"int8\"}]");
    CHECK(pr_rules_load(&rs, p, &e) == 0 && rs.n == 1 && rs.r[0].kind == PR_SEL_REGEX);
    pr_rules_free(&rs);
    p = write_tmp("[{\"select\": \"op:MatMul\", \"precision\": \"fp8\"}]");
    CHECK(pr_rules_load(&rs, p, &e) == 0 && rs.n == 1 && rs.r[0].type == PRECIS_FLOAT8E4M3FN);
    pr_rules_free(&rs);

    static const struct {
        const char *text, *needle;
        precis_status st;
    } bad[] = {
        {"{\"rules\": [{\"select\": \"a\", \"precison\": \"fp32\"}]}", "unknown key \"precison\"",
         PRECIS_ERR_INVALID_ARG},
        {"{\"rules\": [{\"select\": \"a\"}]}", "neither", PRECIS_ERR_INVALID_ARG},
        {"{\"rules\": [{\"precision\": \"fp32\"}]}", "\"select\" string", PRECIS_ERR_INVALID_ARG},
        {"{\"rules\": [{\"select\": \"a\", \"precision\": \"fp4\"}]}", "unknown type 'fp4'",
         PRECIS_ERR_INVALID_ARG},
        {"{\"rules\": [{\"select\": \"a\", \"precision\": 32}]}", "must be a string",
         PRECIS_ERR_INVALID_ARG},
        {"{\"layers\": []}", "want {\"rules\"", PRECIS_ERR_INVALID_ARG},
        {"{\"rules\": [\n{\"select\": \"a\" \"precision\": \"fp32\"}]}", ":2:", PRECIS_ERR_PARSE},
        {"{\"rules\": [", "end of file", PRECIS_ERR_PARSE},
        {"", "end of file", PRECIS_ERR_PARSE},
        {"[] x", "text after", PRECIS_ERR_PARSE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = write_tmp(bad[i].text);
        precis_status st = pr_rules_load(&rs, p, &e);
        CHECK(st == bad[i].st);
        CHECK(strstr(e.msg, bad[i].needle) != NULL);
        if (st != bad[i].st || !strstr(e.msg, bad[i].needle))
            fprintf(stderr, "  case %zu: status %d msg %s\n", i, (int)st, e.msg);
        pr_rules_free(&rs);
    }
    unlink(p);
    CHECK(pr_rules_load(&rs, "/nonexistent/rules.json", &e) == PRECIS_ERR_IO);
    CHECK(strstr(e.msg, "/nonexistent/rules.json") != NULL);
}

static void test_json(void) {
    pr_err e = {0};
    pr_json *j = NULL;
    const char *t = "{\"a\": [1, -2.5e1, true, false, null], \"s\": \"x\\\"\\u00e9\\ud83d\\ude00\\n\"}";
    CHECK(pr_json_parse(t, strlen(t), "t", &j, &e) == 0);
    const pr_json *a = pr_json_get(j, "a"), *s = pr_json_get(j, "s");
    CHECK(a && a->kind == PR_JSON_ARR && a->n == 5);
    CHECK(a && a->items[1].kind == PR_JSON_NUM && a->items[1].num == -25.0);
    CHECK(a && a->items[2].kind == PR_JSON_BOOL && a->items[2].num == 1);
    CHECK(a && a->items[3].kind == PR_JSON_BOOL && a->items[3].num == 0);
    CHECK(a && a->items[4].kind == PR_JSON_NULL);
    CHECK(s && !strcmp(s->str, "x\"\xc3\xa9\xf0\x9f\x98\x80\n"));
    CHECK(pr_json_get(j, "missing") == NULL && pr_json_get(a, "a") == NULL);
    pr_json_free(j);
    static const char *const bad[] = {"{\"a\" 1}", "[1,]", "\"\\q\"", "\"abc", "[1 2]", "nul",
                                      "\"\x01\"", "{1: 2}", "-", "[\"\\u12\"]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(pr_json_parse(bad[i], strlen(bad[i]), "t", &j, &e) == PRECIS_ERR_PARSE);
        CHECK(j == NULL);
    }
    char deep[200];
    memset(deep, '[', sizeof deep);
    CHECK(pr_json_parse(deep, sizeof deep, "t", &j, &e) == PRECIS_ERR_PARSE);
    CHECK(strstr(e.msg, "deeply") != NULL);
}

int main(void) {
    test_selectors();
    test_bad_specs();
    test_rules_file();
    test_json();
    return check_report("test_rules");
}
