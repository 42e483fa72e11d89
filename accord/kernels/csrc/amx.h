/* Prompt products on AMX tiles (isa_amx.c; included by forward.h where AMX_PROMPTS is defined).
 *
 * A prompt row's product stays float32-accurate against the weights' exact values, as on the other
 * instruction sets, but runs on the tile unit's bf16 dot products:
 *   - each activation x is split exactly into three bf16 parts, x = hi + mid + lo (hi keeps the top 8
 *     bits of the significand, mid the next 8 of what is left, lo the rest), once per product
 *     (amx_split_part);
 *   - a weight block is d * q + m (Q4_1), d * (q - 8) (Q4_0) or d * q (Q8_0) with q a small integer,
 *     which bf16 holds exactly; so a group's blocks become bf16 tiles of those integers
 *     (amx_unpack_group), and every product of a part and an integer is exact;
 *   - per block of 32 and tile of 16 rows, three tdpbf16ps (lo, mid, then hi) sum x . q in float32 for
 *     the group's 16 weight rows, and the block's scales follow in float32: d * sum, plus m * sum(x)
 *     for Q4_1.
 * The sums run in the tile unit's float32, in its own order: a row's numbers differ from the AVX-512
 * float path in the last bits (both are within float32 rounding of the exact product), but they are
 * the same on every CPU with AMX and never depend on the other rows of a tile (rows past the end of the
 * step are zero). So this is an instruction set of its own, `ATEN_CPU_CAPABILITY=avx512` lowers it, and
 * decode rows take the AVX-512 8-bit products unchanged.
 *
 * Why decode rows stay off the tiles: a tile version of their 8-bit product (tdpbsud on a block of the
 * rows' bytes and the group's weight bytes, which the packed layout already is: the same integer sums,
 * so the same numbers) measured 0.6-0.8x the AVX-512 product at 2-4 rows, 0.9-1.1x at 8 and 1.1-1.2x
 * at 16 (3072 x 576 Q4_1, 2 threads, Xeon). Each tile operation costs 5-15 ns here whatever it holds
 * (a product into another sums tile than the last 15 ns, a tile store 9-10 ns, one accumulating into
 * the same tile 6 ns), so a block's load, zero, product and store take about 20 ns for any number of
 * rows, against about 4 ns a row on vpdpbusd; with the scaling on top, the tiles pay only for steps of
 * more than about 16 rows.
 *
 * Order: a member unpacks up to AMX_GROUPS groups, then takes the step's rows a tile of 16 at a time,
 * and for each block loads the tile's three parts once and multiplies them with each of its groups'
 * weights in turn (AMX_STEP). Tiles: 0, 1, 2 hold 16 rows of a block of the lo, mid and hi parts; 3 and
 * 6 take turns as a block of a group's weights (16 rows of pairs: weights 2k and 2k + 1 of each of the
 * group's 16 rows); 4 and 5 take turns as the sums, so one step's sums are stored out while the next
 * step's are made. A step's sums are scaled SCALE_BEHIND steps later, once their store has reached the
 * cache (a vector load of bytes a tile has just stored waits for them). The same tiles (all 16 rows of
 * 64 bytes) serve the attention of amx_attention.h.
 *
 * What bounds it (a 512-token SmolLM2 prompt, 2 threads, Xeon, builds taking turns): not the tile
 * products -- with one of the three parts' products left out the prompt ran at the same speed -- but
 * the scaling after them: with amx_scale left out it ran 20-35% faster. Scaling the sums 6 steps
 * behind instead of 3, or moving the sums ring and the accumulators apart, changed nothing.
 *
 * Not worth it, measured: scaled weight tiles. A Q4 block's d * q is exactly two bf16 parts, so a
 * tile could sum a row across all its blocks with no scaling between them, but that takes six tile
 * products a block instead of three, and the products are what the tile unit is bound by: three
 * take about 21 ns a block of 16 rows with their loads, zeroing and store overlapped, six about 43
 * ns even with nothing else to do (a loop of tile operations alone, Xeon), more than the scaling
 * that they would save costs. */

#define AMX_ROWS 16
#define SCALE_BEHIND 3
#define SUMS_RING 4 /* > SCALE_BEHIND */

/* Configured at every product: other code on the thread (oneDNN's AMX kernels, which torch runs) may
 * release the tiles between two products (TILERELEASE), after which a tile instruction faults. */
static TARGET void amx_configure(void) {
    struct {
        uint8_t palette, start_row, reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 7; t++) cfg.rows[t] = AMX_ROWS, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
}

/* 16 floats as three bf16 parts whose sum is exactly each float: the top 8 bits of its significand,
 * the next 8 of what is left, then the rest. */
INLINE void amx_split16(__m512 v, uint16_t *hi, uint16_t *mid, uint16_t *lo) {
    const __m512i top = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512 h = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), top));
    __m512 r = _mm512_sub_ps(v, h);
    __m512 md = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(r), top));
    __m512 l = _mm512_sub_ps(r, md);
    _mm256_storeu_si256((__m256i *)hi, _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(h), 16)));
    _mm256_storeu_si256((__m256i *)mid, _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(md), 16)));
    _mm256_storeu_si256((__m256i *)lo, _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(l), 16)));
}

/* Rows [ith, ith + nth, ...) of x (`rows` rows, xstride apart) into the shared split: three planes
 * of bf16 parts [3][rows16][cols], then each row's block sums [rows16][cols / 32]. Rows from `rows`
 * up to the next multiple of 16 are zero. */
INLINE void amx_split_part(const float *x, size_t xstride, int cols, int rows, uint8_t *split, int ith, int nth) {
    int rows16 = SPLIT_ROWS(rows), nb = cols / QBLOCK;
    uint16_t *planes = (uint16_t *)split;
    float *sums = (float *)(split + SPLIT_PLANES_BYTES(rows, cols));
    for (int m = ith; m < rows16; m += nth) {
        uint16_t *hi = planes + (size_t)m * cols, *mid = hi + (size_t)rows16 * cols, *lo = mid + (size_t)rows16 * cols;
        if (m >= rows) {
            memset(hi, 0, (size_t)cols * 2), memset(mid, 0, (size_t)cols * 2), memset(lo, 0, (size_t)cols * 2);
            memset(sums + (size_t)m * nb, 0, (size_t)nb * sizeof(float));
            continue;
        }
        const float *row = x + (size_t)m * xstride;
        for (int b = 0; b < nb; b++) {
            __m512 block_sum = _mm512_setzero_ps();
            for (int i = b * QBLOCK; i < (b + 1) * QBLOCK; i += 16) {
                __m512 v = _mm512_loadu_ps(row + i);
                amx_split16(v, hi + i, mid + i, lo + i);
                block_sum = _mm512_add_ps(block_sum, v);
            }
            sums[(size_t)m * nb + b] = _mm512_reduce_add_ps(block_sum);
        }
    }
}

/* The byte pairs (0, 1) and (2, 3) of each of 16 rows' 4-byte runs, as 32 words: indices into the
 * two halves of the run widened to words (rows 0-7 in the first, 8-15 in the second). */
INLINE __m512i amx_pair_index(int second) {
    _Alignas(64) int16_t idx[32];
    for (int n = 0; n < 16; n++)
        for (int j = 0; j < 2; j++) idx[2 * n + j] = (int16_t)((n < 8 ? 4 * n : 32 + 4 * (n - 8)) + 2 * second + j);
    return _mm512_load_si512(idx);
}

/* Tile rows 2r and 2r + 1 of a block from one run's 64 bytes, widened to words by `widen`. */
#define AMX_RUN_ROWS(bytes, widen, out, finish)                                                        \
    do {                                                                                               \
        __m512i a_ = widen(_mm512_castsi512_si256(bytes)), b_ = widen(_mm512_extracti64x4_epi64(bytes, 1)); \
        _mm512_storeu_si512((out), finish(_mm512_permutex2var_epi16(a_, even, b_)));                    \
        _mm512_storeu_si512((out) + 32, finish(_mm512_permutex2var_epi16(a_, odd, b_)));                \
    } while (0)

/* Small integers (as words) to bf16 through a table of the 16 values a nibble can stand for. */
#define AMX_NIBBLE(words) _mm512_permutexvar_epi16((words), table)

INLINE __m512i amx_words_to_bf16(__m512i words) {
    __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(words)));
    __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(words, 1)));
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* Group g's weights as bf16 tiles, a block's tile (16 rows x 32 bf16) after another, into `tiles`:
 * tile row k holds, for each of the group's rows n, its integers 2k and 2k + 1. */
INLINE void amx_unpack_group(const qmatrix *w, int g, uint16_t *tiles) {
    int nb = w->cols / QBLOCK;
    const uint8_t *group = group_data(w, g);
    size_t gb = group_block_bytes(w->kind), sb = scales_bytes(w->kind);
    const __m512i even = amx_pair_index(0), odd = amx_pair_index(1), low = _mm512_set1_epi8(0x0F);
    _Alignas(64) uint16_t values[32] = {0};
    for (int i = 0; i < 16; i++) values[i] = float_to_bf16(w->kind == KIND_Q4_0 ? (float)(i - 8) : (float)i);
    const __m512i table = _mm512_load_si512(values);
    for (int b = 0; b < nb; b++) {
        const uint8_t *runs = group + b * gb + sb;
        uint16_t *tile = tiles + (size_t)b * AMX_ROWS * 32;
        if (w->kind == KIND_Q8_0) {
            for (int r = 0; r < 8; r++) {
                __m512i raw = _mm512_loadu_si512(runs + r * GROUP * 4);
                AMX_RUN_ROWS(raw, _mm512_cvtepi8_epi16, tile + 2 * r * 32, amx_words_to_bf16);
            }
            continue;
        }
        for (int r = 0; r < 4; r++) {
            __m512i raw = _mm512_loadu_si512(runs + r * GROUP * 4);
            __m512i lo = _mm512_and_si512(raw, low), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
            AMX_RUN_ROWS(lo, _mm512_cvtepu8_epi16, tile + 2 * r * 32, AMX_NIBBLE);
            AMX_RUN_ROWS(hi, _mm512_cvtepu8_epi16, tile + (8 + 2 * r) * 32, AMX_NIBBLE);
        }
    }
}

/* acc[t] += the block's sums, scaled: d * sum (+ m * the row's sum of x over the block, Q4_1). */
INLINE void amx_scale(const uint8_t *blk, int kind, const float *xsums, int nb, float (*sums)[GROUP], float (*acc)[GROUP]) {
    __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)blk));
    if (kind == KIND_Q4_1) {
        __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + 2 * GROUP)));
        _Pragma("GCC unroll 16")
        for (int t = 0; t < AMX_ROWS; t++) {
            __m512 a = _mm512_fmadd_ps(_mm512_load_ps(sums[t]), d, _mm512_load_ps(acc[t]));
            _mm512_store_ps(acc[t], _mm512_fmadd_ps(m, _mm512_set1_ps(xsums[(size_t)t * nb]), a));
        }
        return;
    }
    _Pragma("GCC unroll 16")
    for (int t = 0; t < AMX_ROWS; t++) _mm512_store_ps(acc[t], _mm512_fmadd_ps(_mm512_load_ps(sums[t]), d, _mm512_load_ps(acc[t])));
}

/* Step q of a tile of rows: block b of claimed group i (the groups of a block follow one another, so
 * the block's three parts are loaded once for all of them) into sums tile C, with weights tile B; the
 * last step's sums (tile PREV) stored out; the sums of step q - SCALE_BEHIND scaled. */
#define AMX_STEP(C, PREV, B)                                                                             \
    do {                                                                                                 \
        if (q < steps) {                                                                                 \
            if (!i) {                                                                                    \
                size_t at_ = (size_t)m0 * cols + (size_t)b * QBLOCK;                                     \
                _tile_loadd(0, lo + at_, cols * 2);                                                       \
                _tile_loadd(1, mid + at_, cols * 2);                                                      \
                _tile_loadd(2, hi + at_, cols * 2);                                                       \
            }                                                                                            \
            _tile_loadd(B, (const uint16_t *)wf + i * per_group + (size_t)b * AMX_ROWS * 32, 64);        \
            _tile_zero(C);                                                                               \
            _tile_dpbf16ps(C, 0, B);                                                                     \
            _tile_dpbf16ps(C, 1, B);                                                                     \
            _tile_dpbf16ps(C, 2, B);                                                                     \
            if (++i == n) i = 0, b++;                                                                    \
        }                                                                                                \
        if (q >= 1 && q <= steps) _tile_stored(PREV, ring[(q - 1) % SUMS_RING], GROUP * 4);              \
        if (q >= SCALE_BEHIND && q < steps + SCALE_BEHIND) {                                             \
            amx_scale(group_data(w, claimed[di]) + db * gb, w->kind, xsums + (size_t)m0 * nb + db, nb,    \
                      ring[(q - SCALE_BEHIND) % SUMS_RING], acc[di]);                                    \
            if (++di == n) di = 0, db++;                                                                 \
        }                                                                                                \
        q++;                                                                                             \
    } while (0)

/* This member's share of out[m][r] (+)= w[r] . x[m] for prompt rows; `wf` is the member's own scratch
 * (its groups' tiles), `split` the step's shared split of x (SPLIT_BYTES). Every member splits its
 * rows, then all meet, then each takes groups as float_product_part() does. */
INLINE void amx_product_part(const qmatrix *w, const float *x, size_t xstride, int rows, float *out, size_t ostride,
                             int accumulate, float *wf, uint8_t *split, int ith, int nth) {
    int cols = w->cols, nb = cols / QBLOCK, rows16 = SPLIT_ROWS(rows);
    amx_split_part(x, xstride, cols, rows, split, ith, nth);
    pool_barrier(nth);
    amx_configure();
    const uint16_t *hi = (const uint16_t *)split, *mid = hi + (size_t)rows16 * cols, *lo = mid + (size_t)rows16 * cols;
    const float *xsums = (const float *)(split + SPLIT_PLANES_BYTES(rows, cols));
    size_t gb = group_block_bytes(w->kind), per_group = (size_t)nb * AMX_ROWS * 32;
    _Alignas(64) float ring[SUMS_RING][AMX_ROWS][GROUP];
    _Alignas(64) float acc[AMX_GROUPS][AMX_ROWS][GROUP];
    claims c = claim_units(matrix_groups(w), ith, nth);
    int claimed[AMX_GROUPS];
    for (;;) {
        int n = 0;
        for (int g; n < AMX_GROUPS && (g = next_unit(&c)) >= 0;) {
            claimed[n] = g;
            amx_unpack_group(w, g, (uint16_t *)wf + n++ * per_group);
        }
        if (!n) break;
        int steps = n * nb;
        for (int m0 = 0; m0 < rows; m0 += AMX_ROWS) {
            memset(acc, 0, (size_t)n * sizeof acc[0]);
            int q = 0, b = 0, i = 0, db = 0, di = 0;
            while (q < steps + SCALE_BEHIND) {
                AMX_STEP(4, 5, 3);
                AMX_STEP(5, 4, 6);
            }
            int mt = rows - m0 < AMX_ROWS ? rows - m0 : AMX_ROWS;
            for (int j = 0; j < n; j++) put(w, claimed[j], &acc[j][0][0], m0, mt, out, ostride, accumulate);
        }
    }
    _tile_release(); /* the thread's tile state back to its initial one, which a context switch skips */
}
#undef AMX_STEP
#undef AMX_RUN_ROWS
#undef AMX_NIBBLE
