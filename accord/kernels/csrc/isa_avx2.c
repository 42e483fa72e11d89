/* The decode kernels for CPUs with AVX2, FMA and F16C (Haswell and Zen on). */
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma,f16c")))
#define NAME(x) x##_avx2
#define TILE 4
#define ALWAYS static inline __attribute__((always_inline)) TARGET

#define LANES 8
#include "vec.h"

/* An empty asm that takes v in a vector register and gives it back: the compiler cannot regroup the
 * adds into v across it. Without it GCC 12 turns each row's chain of adds into a tree, whose many
 * partial products do not fit in sixteen registers and go through the stack (integer adds are exact, so
 * either order gives the same sums). */
#define KEEP_IN_REGISTER(v) __asm__("" : "+x"(v))

ALWAYS __m256i broadcast4(const int8_t *x) {
    int32_t v;
    memcpy(&v, x, sizeof v);
    return _mm256_set1_epi32(v);
}

/* Eight rows of a group (half h) against mt activation rows.
 *
 * Four-bit weights: maddubs multiplies unsigned weights by signed activations and adds pairs into 16
 * bits. Each run of 32 weight bytes is unpacked once and multiplied with every row of the tile, so a
 * row keeps one 16-bit sum per block (at most 8 * 2 * 15 * 127 = 30480 whatever the order of the
 * adds, so it is exact) and only the tile's sums, accumulators and the run in hand are live: with
 * KEEP_IN_REGISTER, all of them fit in registers. Q8_0's weights are signed, so each run moves their
 * sign onto the activations (|w| * sign(x, w)) and is widened on its own (a pair may reach
 * 2 * 128 * 127), in the same order, run outermost. */
ALWAYS void half_dots(const uint8_t *group, const int kind, int nb, const qacts *a, int m0, const int mt, int h,
                      float *res) {
    size_t gb = group_block_bytes(kind), sb = scales_bytes(kind);
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[TILE];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < mt; t++) acc[t] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = group + b * gb, *runs = blk + sb + h * 32;
        if (h == 0) prefetch_ahead(blk, gb); /* the second half finds the group in cache */
        __m256i sum[TILE];
        const int8_t *x = a->q + (size_t)m0 * a->cols + b * QBLOCK;
        if (kind == KIND_Q8_0) {
            _Pragma("GCC unroll 8")
            for (int k = 0; k < 8; k++) {
                __m256i w = _mm256_loadu_si256((const __m256i *)(runs + k * GROUP * 4)), wa = _mm256_abs_epi8(w);
                _Pragma("GCC unroll 4")
                for (int t = 0; t < mt; t++) {
                    __m256i xk = broadcast4(x + (size_t)t * a->cols + 4 * k);
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wa, _mm256_sign_epi8(xk, w)), ones);
                    sum[t] = k == 0 ? p : _mm256_add_epi32(sum[t], p);
                    KEEP_IN_REGISTER(sum[t]);
                }
            }
        } else {
            _Pragma("GCC unroll 4")
            for (int k = 0; k < 4; k++) {
                __m256i raw = _mm256_loadu_si256((const __m256i *)(runs + k * GROUP * 4));
                __m256i lo = _mm256_and_si256(raw, low), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
                _Pragma("GCC unroll 4")
                for (int t = 0; t < mt; t++) {
                    const int8_t *xt = x + (size_t)t * a->cols;
                    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(xt + 4 * k)),
                                                 _mm256_maddubs_epi16(hi, broadcast4(xt + 4 * k + 16)));
                    sum[t] = k == 0 ? p : _mm256_add_epi16(sum[t], p);
                    KEEP_IN_REGISTER(sum[t]);
                }
            }
            _Pragma("GCC unroll 4")
            for (int t = 0; t < mt; t++) sum[t] = _mm256_madd_epi16(sum[t], ones);
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + h * 16)));
        __m256 m = kind == KIND_Q4_1 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + 2 * GROUP + h * 16)))
                   : kind == KIND_Q4_0 ? _mm256_mul_ps(d, _mm256_set1_ps(-8.0f))
                                       : _mm256_setzero_ps();
        _Pragma("GCC unroll 4")
        for (int t = 0; t < mt; t++) {
            int row = m0 + t;
            __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(a->d[(size_t)row * nb + b]));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[t]), scale, acc[t]);
            acc[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(a->s[(size_t)row * nb + b]), acc[t]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int t = 0; t < mt; t++) _mm256_storeu_ps(res + t * GROUP + h * 8, acc[t]);
}

/* Both halves of a group (see forward.h). */
ALWAYS void dots(const uint8_t *group, const int kind, int nb, const qacts *a, int m0, const int mt, float *res) {
    half_dots(group, kind, nb, a, m0, mt, 0, res);
    half_dots(group, kind, nb, a, m0, mt, 1, res);
}

/* res[t][i] = x[m0 + t] . row i of the group, from the group unpacked weight-major (wf[k][GROUP]): a
 * fused multiply-add per weight, in order of k. */
ALWAYS void float_dots(const float *wf, int cols, const float *x, size_t xstride, int m0, const int mt, float *res) {
    __m256 lo[TILE], hi[TILE];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < mt; t++) lo[t] = hi[t] = _mm256_setzero_ps();
    for (int k = 0; k < cols; k++) {
        __m256 wl = _mm256_loadu_ps(wf + (size_t)k * GROUP), wh = _mm256_loadu_ps(wf + (size_t)k * GROUP + 8);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < mt; t++) {
            __m256 xv = _mm256_broadcast_ss(x + (size_t)(m0 + t) * xstride + k);
            lo[t] = _mm256_fmadd_ps(xv, wl, lo[t]);
            hi[t] = _mm256_fmadd_ps(xv, wh, hi[t]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int t = 0; t < mt; t++) {
        _mm256_storeu_ps(res + t * GROUP, lo[t]);
        _mm256_storeu_ps(res + t * GROUP + 8, hi[t]);
    }
}

#include "forward.h"
