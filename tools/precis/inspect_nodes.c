/* inspect PLAN: the per-original-node precision table (requested vs actual,
 * accumulator, the step it runs in, rules and reasons), as text or JSON. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The step's name when the node runs fused into another node's step. */
static const char *fused_into(const precis_engine *e, const precis_node_info *ni) {
    precis_step_info si;
    if (ni->step < 0 || precis_engine_step(e, ni->step, &si) || !strcmp(si.name, ni->name))
        return "";
    return si.name;
}

static void req_str(precis_dtype c, precis_dtype o, char *buf, size_t cap) {
    if (!c && !o) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%s/%s", dtype_short(c), dtype_short(o));
}

void inspect_nodes_text(const precis_engine *e) {
    int n = precis_engine_num_nodes(e), asked = 0, unmet = 0;
    if (!n) {
        printf("\n(no per-node report: the plan was built by an older precis)\n");
        return;
    }
    for (int i = 0; i < n; i++) {
        precis_node_info ni;
        precis_engine_node(e, i, &ni);
        asked += ni.req_compute || ni.req_output;
        unmet += !ni.honored;
    }
    printf("\nnodes      %d original nodes, %d with precision requests, %d not met\n", n, asked,
           unmet);
    int scales = 0;
    for (int i = 0; i < n; i++) {
        precis_node_info ni;
        precis_engine_node(e, i, &ni);
        scales |= ni.scales[0] != 0;
    }
    printf("%-36s %-14s %5s %-28s %-11s %-11s %-5s %s%s\n", "node", "op", "step", "fused into",
           "requested", "actual", "acc", scales ? "scales                              " : "",
           "rules / reason");
    for (int i = 0; i < n; i++) {
        precis_node_info ni;
        precis_engine_node(e, i, &ni);
        char rq[32], ac[32], st[16];
        req_str(ni.req_compute, ni.req_output, rq, sizeof rq);
        if (ni.step < 0) snprintf(ac, sizeof ac, "folded");
        else snprintf(ac, sizeof ac, "%s/%s%s", dtype_short(ni.compute), dtype_short(ni.output),
                      ni.output_in_kernel ? "*" : "");
        snprintf(st, sizeof st, "%d", ni.step);
        printf("%-36.36s %-14.14s %5s %-28.28s %-11s %-11s %-5s ", ni.name, ni.op,
               ni.step < 0 ? "-" : st, fused_into(e, &ni), rq, ac, dtype_short(ni.accumulator));
        if (scales) printf("%-35s ", ni.scales);
        printf("%s%s%s%s\n", ni.honored ? "" : "NOT MET: ", ni.reason, ni.reason[0] && ni.rules[0] ? "; " : "",
               ni.rules);
    }
    printf("(requested and actual are compute/output types; * : the output stays inside the "
           "fused kernel)\n");
    if (scales)
        printf("(scales: x/a/b/z int8 input, w per-channel weights MIN..MAX/COUNT, y int8 output; "
               "real value = scale * q)\n");
}

/* "x=0.1 w=0.01..0.2/64" as JSON members: "x": 0.1, "w": {"min": .., "max": .., "count": 64} */
static void json_scales(const char *s) {
    int first = 1;
    while (s && *s) {
        const char *eq = strchr(s, '='), *end = strchr(s, ' ');
        if (!end) end = s + strlen(s);
        if (!eq || eq > end) break;
        double lo = 0, hi = 0;
        int cnt = 0;
        printf("%s\"%.*s\": ", first ? "" : ", ", (int)(eq - s), s);
        if (sscanf(eq + 1, "%lf..%lf/%d", &lo, &hi, &cnt) == 3)
            printf("{\"min\": %.9g, \"max\": %.9g, \"count\": %d}", lo, hi, cnt);
        else
            printf("%.9g", sscanf(eq + 1, "%lf", &lo) == 1 ? lo : 0.0);
        first = 0;
        s = *end ? end + 1 : end;
    }
}

void inspect_nodes_json(const precis_engine *e) {
    int n = precis_engine_num_nodes(e);
    printf(",\n \"nodes\": [");
    for (int i = 0; i < n; i++) {
        precis_node_info ni;
        precis_engine_node(e, i, &ni);
        printf("%s\n  {\"name\": ", i ? "," : "");
        json_str(ni.name);
        printf(", \"op\": ");
        json_str(ni.op);
        printf(", \"step\": %d, \"fused_into\": ", ni.step);
        json_str(fused_into(e, &ni));
        printf(", \"requested\": {\"compute\": \"%s\", \"output\": \"%s\"}",
               dtype_short(ni.req_compute), dtype_short(ni.req_output));
        printf(", \"actual\": {\"compute\": \"%s\", \"output\": \"%s\", \"accumulator\": \"%s\", "
               "\"output_in_kernel\": %s}",
               dtype_short(ni.compute), dtype_short(ni.output), dtype_short(ni.accumulator),
               ni.output_in_kernel ? "true" : "false");
        printf(", \"honored\": %s, \"rules\": ", ni.honored ? "true" : "false");
        json_str(ni.rules);
        printf(", \"reason\": ");
        json_str(ni.reason);
        printf(", \"scales\": {");
        json_scales(ni.scales);
        printf("}}");
    }
    printf("]");
}
