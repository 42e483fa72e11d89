/* The decode kernels for CPUs with AVX-512 and its 8-bit dot product (VNNI: Ice Lake, Sapphire Rapids,
 * Zen 4 on). */
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define NAME(x) x##_avx512
#define TILE 8
#define ALWAYS static inline __attribute__((always_inline)) TARGET

#define LANES 16
#include "vec.h"

#include "avx512.h"
#include "forward.h"
