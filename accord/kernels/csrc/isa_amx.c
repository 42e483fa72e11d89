/* The kernels for CPUs with AMX tiles and their bf16 dot products (Sapphire Rapids on): decode rows as
 * on AVX-512, prompt rows on the tiles (amx.h). */
#include "model.h"

/* AMX intrinsics came with GCC 11 and Clang 12: an older compiler builds the other instruction sets
 * and reports no AMX. */
#if defined(__clang__) ? __clang_major__ >= 12 : __GNUC__ >= 11

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TARGET \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,amx-tile,amx-bf16")))
#define NAME(x) x##_amx
#define TILE 8
#define ALWAYS static inline __attribute__((always_inline)) TARGET
#define AMX_PROMPTS 1

#define LANES 16
#include "vec.h"

#include "avx512.h"
#include "forward.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int amx_usable(void) {
    static int usable = -1;
    if (usable < 0) {
        unsigned a, b, c, d;
        __builtin_cpu_init();
        int cpu = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 22)) && (d & (1u << 24)) &&
                  __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) && __builtin_cpu_supports("avx512vnni");
        /* The tile state is large, so Linux hands it out on request only (arch_prctl, Linux 5.16 on). */
        usable = cpu && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
    }
    return usable;
}

#else

const isa_ops ops_amx = {0};

int amx_usable(void) { return 0; }

#endif
