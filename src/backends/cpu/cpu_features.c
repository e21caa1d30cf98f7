/* CPU feature detection for the CPU backend's own kernels (cpu.h).
 *
 * cpuid says what the core implements; xgetbv (XCR0) says what the OS saves
 * on context switches: AVX needs the SSE+AVX state (bits 1-2), AVX-512 also
 * the opmask and upper-ZMM state (bits 5-7), AMX the tile state (17-18).
 * (Linux also wants a per-process arch_prctl(ARCH_REQ_XCOMP_PERM) before AMX
 * tiles are used; that is the AMX user's business, not detection's.)
 *
 * PRECIS_CPU_ISA caps the result, from the lowest level up:
 *   scalar       nothing
 *   avx2         AVX2, FMA, F16C
 *   avx512       + AVX-512 F/BW/VL/DQ, VNNI, BF16
 *   avx512_fp16  + AVX512-FP16 and AMX (everything; same as unset)
 * Unknown values cap nothing. Detected once per process (pthread_once). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define PR_X86 1
#endif

static pr_cpu_features g_feat;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#ifdef PR_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(pr_cpu_features *f) {
    unsigned a, b, c, d, max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 1 || !__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx) return; /* no AVX state: nothing beyond SSE */
    uint64_t xcr0 = xgetbv0();
    bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6,
         os_amx = (xcr0 & 0x60000) == 0x60000;
    if (!os_avx) return;
    f->fma = (c >> 12) & 1;
    f->f16c = (c >> 29) & 1;
    if (max_leaf < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned max_sub = a;
    f->avx2 = (b >> 5) & 1;
    if (os_avx512) {
        f->avx512f = (b >> 16) & 1;
        f->avx512dq = (b >> 17) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
        f->avx512_vnni = (c >> 11) & 1;
        f->avx512_vbmi = (c >> 1) & 1;
        f->avx512_fp16 = (d >> 23) & 1;
        if (max_sub >= 1) {
            unsigned a1, b1, c1, d1;
            __cpuid_count(7, 1, a1, b1, c1, d1);
            (void)b1, (void)c1, (void)d1;
            f->avx512_bf16 = (a1 >> 5) & 1;
        }
    }
    if (os_amx) {
        f->amx_bf16 = (d >> 22) & 1;
        f->amx_tile = (d >> 24) & 1;
        f->amx_int8 = (d >> 25) & 1;
        /* leaf 0x1D: max palette in EAX; sub-leaf 1 describes palette 1
         * (EBX[15:0] bytes a row, ECX[15:0] rows) */
        bool palette = false;
        if (max_leaf >= 0x1d) {
            unsigned a0, b0, c0, d0;
            __cpuid_count(0x1d, 0, a0, b0, c0, d0);
            (void)b0, (void)c0, (void)d0;
            if (a0 >= 1) {
                __cpuid_count(0x1d, 1, a0, b0, c0, d0);
                palette = (b0 & 0xffff) != 0 && (c0 & 0xffff) != 0;
            }
        }
        f->amx_no_palette = f->amx_tile && !palette;
    }
}
#else
static void detect(pr_cpu_features *f) { (void)f; }
#endif

static void cap(pr_cpu_features *f, const char *isa) {
    if (!isa || !*isa) return;
    int level;
    if (!strcmp(isa, "scalar"))
        level = 0;
    else if (!strcmp(isa, "avx2"))
        level = 1;
    else if (!strcmp(isa, "avx512"))
        level = 2;
    else
        return; /* "avx512_fp16" or unknown: no cap */
    if (level < 2) {
        f->avx512f = f->avx512bw = f->avx512vl = f->avx512dq = false;
        f->avx512_vnni = f->avx512_vbmi = f->avx512_bf16 = false;
    }
    f->avx512_fp16 = false;
    f->amx_tile = f->amx_int8 = f->amx_bf16 = f->amx_no_palette = false;
    if (level < 1) f->avx2 = f->fma = f->f16c = false;
}

static void init_once(void) {
    pr_cpu_features f;
    memset(&f, 0, sizeof f);
    detect(&f);
    cap(&f, getenv("PRECIS_CPU_ISA"));
    g_feat = f;
}

const pr_cpu_features *pr_cpu_features_get(void) {
    pthread_once(&g_once, init_once);
    return &g_feat;
}

const char *pr_cpu_isa_name(void) {
    const pr_cpu_features *f = pr_cpu_features_get();
    bool avx512 = f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma && f->f16c;
    if (avx512 && f->avx512_fp16) return "avx512_fp16";
    if (avx512) return "avx512";
    if (f->avx2 && f->fma && f->f16c) return "avx2";
    return "scalar";
}

bool pr_cpu_switch_on(const char *name, int *cache) {
    int v = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv(name);
        v = !(e && !strcmp(e, "0"));
        __atomic_store_n(cache, v, __ATOMIC_RELAXED);
    }
    return v != 0;
}
