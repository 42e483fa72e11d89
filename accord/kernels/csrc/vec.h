/* The portable vector type the kernels' float work is written in, and its helpers.
 *
 * Included by isa_*.c after TARGET (the instruction set's function attribute) and LANES (its native
 * number of floats: 4 for SSE2, 8 for AVX2, 16 for AVX-512) are defined, so `vf` is always one
 * register of the target -- wider vectors the compiler would keep in memory. Code written on `vf`
 * loops in steps of LANES; every width it meets (a cache block, a group, a block of 32) is a multiple.
 */
#include <math.h>

#include "common.h"

#define INLINE static inline __attribute__((always_inline)) TARGET

typedef float vf __attribute__((vector_size(LANES * 4)));
typedef int32_t vi __attribute__((vector_size(LANES * 4)));
typedef uint32_t vu __attribute__((vector_size(LANES * 4)));
typedef uint16_t vh __attribute__((vector_size(LANES * 2)));
typedef int8_t vq __attribute__((vector_size(LANES)));

INLINE vf vload(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* x in every lane: a broadcast (written as `(vf){0} + x`, it was an add as well: the compiler may not
 * drop the add, which turns -0.0 into +0.0). */
INLINE vf vsplat(float x) {
    vf v = {x};
    return __builtin_shuffle(v, (vi){0});
}

/* LANES bf16 values as float32 (exact: the bf16 bits are the top half of the float's). On AVX-512 one
 * widening load and a shift; written on the portable types, GCC's default tuning (256-bit vectors
 * preferred) widens in eight-lane halves and puts them back together. */
INLINE vf vbf16(const uint16_t *p) {
#if LANES == 16
    __m512i bits = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16);
    return _mm512_castsi512_ps(bits);
#else
    vh h;
    memcpy(&h, p, sizeof h);
    vu bits = __builtin_convertvector(h, vu) << 16;
    vf v;
    memcpy(&v, &bits, sizeof v);
    return v;
#endif
}

/* LANES fp16 values as float32. */
INLINE vf vhalf(const uint8_t *p) {
    float t[LANES];
    for (int i = 0; i < LANES; i++) t[i] = half_to_float(read_u16(p + 2 * i));
    return vload(t);
}

INLINE vf vselect(vi mask, vf a, vf b) {
    vi ai, bi;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    vi r = (ai & mask) | (bi & ~mask);
    vf out;
    memcpy(&out, &r, sizeof out);
    return out;
}

INLINE vf vmax(vf a, vf b) { return vselect(a > b, a, b); }
INLINE vf vmin(vf a, vf b) { return vselect(a < b, a, b); }

INLINE vf vabs(vf a) {
    vi bits;
    memcpy(&bits, &a, sizeof bits);
    bits &= 0x7FFFFFFF;
    vf out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/* Round to nearest, ties to even, for |x| < 2^22: adding and taking away 1.5 * 2^23 leaves no
 * fraction bits. */
INLINE vf vround(vf x) { return (x + 12582912.0f) - 12582912.0f; }

/* The sum of the lanes, halving each time (a fixed order: the same bits for the same lanes). */
INLINE float vsum(vf v) {
    float t[LANES];
    memcpy(t, &v, sizeof t);
    for (int w = LANES / 2; w > 0; w /= 2) {
        for (int i = 0; i < w; i++) t[i] += t[i + w];
    }
    return t[0];
}

/* The largest lane (max is exact, so any order of comparisons gives it; here in registers where the
 * instruction set has the shuffles). */
INLINE float vmaxall(vf v) {
#if LANES == 16
    return _mm512_reduce_max_ps(v);
#elif LANES == 8
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
#else
    float t[LANES];
    memcpy(t, &v, sizeof t);
    for (int w = LANES / 2; w > 0; w /= 2) {
        for (int i = 0; i < w; i++) t[i] = t[i] > t[i + w] ? t[i] : t[i + w];
    }
    return t[0];
#endif
}

/* e^x, Cephes' single-precision method: x = n ln2 + r with |r| <= ln2 / 2, a degree-5 polynomial for
 * e^r, and 2^n written into the exponent bits. Relative error about 1e-7 over [-87, 88]. */
INLINE vf vexp(vf x) {
    x = vmin(vmax(x, vsplat(-87.3f)), vsplat(88.3f));
    vf n = vround(x * 1.44269504088896341f);
    vf r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vf p = vsplat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    vi e = (__builtin_convertvector(n, vi) + 127) << 23;
    vf scale;
    memcpy(&scale, &e, sizeof scale);
    return p * scale;
}

