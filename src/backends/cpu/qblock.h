/* Fused INT8 blocks of the CPU backend (k_qblock.c): a run of consecutive
 * steps of an int8 plan that form an inverted-residual (MBConv) block with
 * a squeeze-excitation ([expand 1x1] -> depthwise -> GlobalAveragePool ->
 * FC -> FC -> gate Mul [-> 1x1 projection]) runs as one step. With a batch
 * of at least two images and threads: one OpenMP parallel region for the
 * whole block, each thread taking its share of the images through every
 * member; else the members in turn, each with the context's threads.
 *
 * The members keep their own impls and prepared states (each still checked
 * against ref on its own) and their outputs (the engine's memory plan keeps
 * every tensor a block reads or writes alive across the whole block), so
 * this composition computes the same bytes as the members one by one. The
 * gate Mul and a projection after it that qualifies (pr_seproj_ok) are
 * fused instead (k_qseproj.c: the gate folded into the projection's
 * weights, per image; not bit-exact, tested against ref with a tolerance):
 * the Mul's output is never made. Measured (NOTES.md session 11): the
 * composition alone gains nothing on PP-OCR cls, the fused SE tail ~15 us
 * of its b1 run.
 *
 * The engine (runtime/engine.c) asks pr_cpu_block_match at every step after
 * preparing them; the context (runtime/context.c) runs a block's head with
 * its members' kernels (member by member while an observer watches the
 * tensors). PRECIS_QBLOCK=0 at engine build or load time turns blocks off,
 * PRECIS_QBLOCK_SEPROJ=0 the fused SE tail (A/B timing); inspect shows
 * "qblock[i/n]" before each member's kernel. */
#ifndef PR_BACKENDS_CPU_QBLOCK_H
#define PR_BACKENDS_CPU_QBLOCK_H

#include "backends/cpu/cpu.h"

#define PR_CPU_BLOCK_MAX 8 /* members */

typedef struct pr_cpu_block pr_cpu_block;

/* The steps from index 0 of nodes/impls/states (n of them, consecutive
 * steps of the engine): the number of leading steps that form a block
 * (>= 2), with *out its state (malloc'd), or 0 (no block here, *out NULL).
 * -1 on OOM (e set). */
int pr_cpu_block_match(const pr_graph *g, const pr_node *const *nodes,
                       const pr_cpu_impl *const *impls, void *const *states, int n,
                       pr_cpu_block **out, pr_err *e);
/* Run the block: ks[i] is member i's kernel (its inputs and outputs
 * allocated with their full shapes, as for a step of its own); x the
 * context's exec (its per-thread sub-execs are made here, freed by
 * pr_cpu_exec_free_subs). */
precis_status pr_cpu_block_run(const pr_cpu_block *b, pr_kernel *ks, pr_cpu_exec *x);
/* What runs member i instead of its own impl ("seproj ..." for a fused SE
 * tail), or NULL: its impl. */
const char *pr_cpu_block_member(const pr_cpu_block *b, int i);
void pr_cpu_block_destroy(pr_cpu_block *b);

/* Private to k_qblock.c: the SE tail (gate Mul M, then 1x1 projection P
 * reading M's output alone) fused, the gate folded into P's weights per
 * image (k_qseproj.c says how; not bit-exact with M -> P). ok: whether
 * M and P qualify (PRECIS_QBLOCK_SEPROJ=0: never). run: images [n0, n1) of
 * M's operands (km) into P's output (kp; M's output is not written), part
 * `part` of `parts` of each image's pixels, one thread, scratch from x. */
typedef struct pr_seproj pr_seproj;
bool pr_seproj_ok(const pr_graph *g, const pr_node *m, const pr_node *p);
pr_seproj *pr_seproj_new(const pr_graph *g, const pr_node *m, const pr_node *p);
precis_status pr_seproj_run(const pr_seproj *s, const pr_kernel *km, const pr_kernel *kp,
                            int64_t n0, int64_t n1, int part, int parts, pr_cpu_exec *x);
void pr_seproj_free(pr_seproj *s);
bool pr_seproj_amx(const pr_seproj *s); /* its sums on AMX tiles */

/* Frees the per-thread execs a block run made on x (not x itself). */
void pr_cpu_exec_free_subs(pr_cpu_exec *x);

#endif
