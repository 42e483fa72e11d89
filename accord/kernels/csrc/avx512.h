/* The AVX-512 block products, shared by isa_avx512.c and isa_amx.c (which include this after defining
 * TARGET, NAME, TILE, ALWAYS and LANES, and vec.h). */
ALWAYS __m512i broadcast4(const int8_t *x) {
    int32_t v;
    memcpy(&v, x, sizeof v);
    return _mm512_set1_epi32(v);
}

/* The 16 rows of a group against mt activation rows: vpdpbusd adds four unsigned-by-signed byte
 * products of every row straight into its 32-bit lane. Q8_0's signed weights are made unsigned by
 * adding 128 (w ^ 0x80), which adds 128 * sum(x) to a block's sum; its offset term, -128 * d * s,
 * takes that away again, as Q4_0's takes away the 8 its nibbles are stored above zero. */
ALWAYS void dots(const uint8_t *group, const int kind, int nb, const qacts *a, int m0, const int mt, float *res) {
    size_t gb = group_block_bytes(kind), sb = scales_bytes(kind);
    const __m512i low = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8((char)0x80);
    __m512 acc[TILE];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < mt; t++) acc[t] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = group + b * gb, *runs = blk + sb;
        prefetch_ahead(blk, gb);
        __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)blk));
        __m512 m = kind == KIND_Q4_1 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + 2 * GROUP)))
                   : kind == KIND_Q4_0 ? _mm512_mul_ps(d, _mm512_set1_ps(-8.0f))
                                       : _mm512_mul_ps(d, _mm512_set1_ps(-128.0f));
        __m512i w[8];
        if (kind == KIND_Q8_0) {
            for (int k = 0; k < 8; k++) w[k] = _mm512_xor_si512(_mm512_loadu_si512(runs + k * GROUP * 4), bias);
        } else {
            for (int k = 0; k < 4; k++) {
                __m512i raw = _mm512_loadu_si512(runs + k * GROUP * 4);
                w[k] = _mm512_and_si512(raw, low);
                w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
            }
        }
        _Pragma("GCC unroll 8")
        for (int t = 0; t < mt; t++) {
            int row = m0 + t;
            const int8_t *x = a->q + (size_t)row * a->cols + b * QBLOCK;
            /* Two chains of four (integer sums: the order does not change them), half the latency. */
            __m512i even = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], broadcast4(x));
            __m512i odd = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], broadcast4(x + 4));
            for (int k = 2; k < 8; k += 2) {
                even = _mm512_dpbusd_epi32(even, w[k], broadcast4(x + 4 * k));
                odd = _mm512_dpbusd_epi32(odd, w[k + 1], broadcast4(x + 4 * k + 4));
            }
            __m512i sum = _mm512_add_epi32(even, odd);
            __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(a->d[(size_t)row * nb + b]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, acc[t]);
            acc[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(a->s[(size_t)row * nb + b]), acc[t]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < mt; t++) _mm512_storeu_ps(res + t * GROUP, acc[t]);
}

/* res[t][i] = x[m0 + t] . row i of the group, from the group unpacked weight-major (wf[k][GROUP]): a
 * fused multiply-add per weight, in order of k. */
ALWAYS void float_dots(const float *wf, int cols, const float *x, size_t xstride, int m0, const int mt, float *res) {
    __m512 acc[TILE];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < mt; t++) acc[t] = _mm512_setzero_ps();
    for (int k = 0; k < cols; k++) {
        __m512 w = _mm512_loadu_ps(wf + (size_t)k * GROUP);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < mt; t++) acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(x[(size_t)(m0 + t) * xstride + k]), w, acc[t]);
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < mt; t++) _mm512_storeu_ps(res + t * GROUP, acc[t]);
}

/* float_dots() for two groups (wf and wf2): each activation value is broadcast once for both, so a
 * weight-vector load and eight broadcasts feed sixteen multiply-adds instead of eight. Every output
 * takes the same multiply-adds in the same order as in float_dots(). */
ALWAYS void float_dots2(const float *wf, const float *wf2, int cols, const float *x, size_t xstride, int m0,
                        const int mt, float *res, float *res2) {
    __m512 acc[TILE], acc2[TILE];
    _Pragma("GCC unroll 8")
    for (int t = 0; t < mt; t++) acc[t] = acc2[t] = _mm512_setzero_ps();
    for (int k = 0; k < cols; k++) {
        __m512 w = _mm512_loadu_ps(wf + (size_t)k * GROUP), w2 = _mm512_loadu_ps(wf2 + (size_t)k * GROUP);
        _Pragma("GCC unroll 8")
        for (int t = 0; t < mt; t++) {
            __m512 xv = _mm512_set1_ps(x[(size_t)(m0 + t) * xstride + k]);
            acc[t] = _mm512_fmadd_ps(xv, w, acc[t]);
            acc2[t] = _mm512_fmadd_ps(xv, w2, acc2[t]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int t = 0; t < mt; t++) {
        _mm512_storeu_ps(res + t * GROUP, acc[t]);
        _mm512_storeu_ps(res2 + t * GROUP, acc2[t]);
    }
}
#define PAIRED_FLOAT_DOTS 1

