/* A run of prompt rows attends on AMX tiles (isa_amx.c; included by forward.h after attend_run, which
 * it stands in for where the head's width is a multiple of 32).
 *
 * The same steps as attend_run, with the two products on tiles, each in float32 accuracy as amx.h's
 * products are: a float32 factor split exactly into three bf16 parts, against bf16 values the cache
 * holds exactly.
 *   - Scores: the run's queries (16 rows a tile, rows past the run zero) as three bf16 parts, against
 *     each block of keys laid out as a tile (pairs of dimensions for each of its 16 positions):
 *     3 * head_dim / 32 tdpbf16ps per block and head, then scaled as attend_run scales them.
 *   - The exponentials (soften), unchanged.
 *   - Values: per 32 positions (two cache blocks), each row's exponentials as three bf16 parts (zero
 *     past its own position), against the values laid out as tiles of 16 dimensions (pairs of
 *     positions), summed into each row's output through the tiles; then divided by the row's sum.
 * A row's numbers depend only on its own queries and sequence: what other rows of a run add to a tile
 * sits in other tile rows, and positions past a row's own add exact zeros. So a prompt gives the same
 * numbers however it is cut into chunks and runs, as on the other instruction sets. */

/* 32 words from two rows of 16: a[0], b[0], a[1], b[1], ... (a pair for each of 16 tile columns). */
INLINE __m512i amx_interleave(const uint16_t *a, const uint16_t *b) {
    _Alignas(64) static const int16_t idx[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    __m512i lo = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a));
    __m512i hi = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b));
    return _mm512_permutex2var_epi16(lo, _mm512_load_si512(idx), hi);
}

/* `n` floats of each of 16 rows (`stride` apart; rows from `rows` on, and row i's values from
 * `keep[i]` on, as zero) into three bf16 planes [3][16][width], `width` >= n. */
INLINE void amx_split_tile(const float *x, size_t stride, int rows, const int *keep, int n, int width, uint16_t *planes) {
    for (int i = 0; i < 16; i++) {
        uint16_t *hi = planes + (size_t)i * width, *mid = hi + (size_t)16 * width, *lo = mid + (size_t)16 * width;
        int upto = i < rows ? (keep && keep[i] < n ? keep[i] : n) : 0;
        if (upto < 0) upto = 0;
        for (int c = 0; c < width; c += 16) {
            __mmask16 live = c >= upto ? 0 : upto - c >= 16 ? 0xFFFF : (__mmask16)((1u << (upto - c)) - 1);
            amx_split16(_mm512_maskz_loadu_ps(live, x + (size_t)i * stride + c), hi + c, mid + c, lo + c);
        }
    }
}

INLINE void amx_attend_run(const step *s, int l, int m0, int r, int g, float *scores) {
    const model *md = s->m;
    int hd = md->head_dim, bs = CACHE_BLOCK, hpg = md->n_heads / md->n_kv_heads, chunks = hd / 32;
    int last = s->pos[m0 + r - 1] + 1, blocks = (last + bs - 1) / bs;
    size_t stride = (size_t)blocks * bs;
    float scale = 1.0f / sqrtf((float)hd);
    int n[AMX_ROWS];
    for (int i = 0; i < AMX_ROWS; i++) n[i] = i < r ? s->pos[m0 + i] + 1 : 0;
    amx_configure();

    /* Scores. */
    float q[r * hpg * hd];
    for (int i = 0; i < r; i++) group_queries(s, l, m0 + i, g, q + (size_t)i * hpg * hd);
    uint16_t qp[hpg][3][AMX_ROWS][hd];
    for (int j = 0; j < hpg; j++) amx_split_tile(q + (size_t)j * hd, (size_t)hpg * hd, r, NULL, hd, hd, &qp[j][0][0][0]);
    _Alignas(64) uint16_t keys[chunks][AMX_ROWS][32];
    _Alignas(64) float tile[AMX_ROWS][16];
    for (int b = 0; b < blocks; b++) {
        const uint16_t *k = cache_block(md, l, 0, g, slot_block(s, m0, b * bs)); /* [hd][bs] */
        for (int c = 0; c < chunks; c++)
            for (int kk = 0; kk < 16; kk++)
                _mm512_store_si512(keys[c][kk], amx_interleave(k + (size_t)(32 * c + 2 * kk) * bs, k + (size_t)(32 * c + 2 * kk + 1) * bs));
        for (int j = 0; j < hpg; j++) {
            _tile_zero(4);
            for (int c = 0; c < chunks; c++) {
                _tile_loadd(3, keys[c], 64);
                _tile_loadd(0, &qp[j][2][0][32 * c], hd * 2);
                _tile_loadd(1, &qp[j][1][0][32 * c], hd * 2);
                _tile_loadd(2, &qp[j][0][0][32 * c], hd * 2);
                _tile_dpbf16ps(4, 0, 3);
                _tile_dpbf16ps(4, 1, 3);
                _tile_dpbf16ps(4, 2, 3);
            }
            _tile_stored(4, tile, 64);
            for (int i = 0; i < r; i++) {
                if (b * bs > s->pos[m0 + i]) continue;
                _mm512_storeu_ps(scores + ((size_t)i * hpg + j) * stride + b * bs,
                                 _mm512_mul_ps(_mm512_load_ps(tile[i]), _mm512_set1_ps(scale)));
            }
        }
    }
    float sums[RUN_ROWS][MAX_GROUP];
    for (int i = 0; i < r; i++) {
        int span = (n[i] + bs - 1) / bs * bs;
        for (int j = 0; j < hpg; j++) {
            float best;
            sums[i][j] = soften(scores + ((size_t)i * hpg + j) * stride, n[i], span, &best);
        }
    }

    /* Values, 32 positions at a time: the outputs gather in out[j][row][hd] through the tiles. */
    int dtiles = hd / 16;
    _Alignas(64) float out[hpg][AMX_ROWS][hd];
    memset(out, 0, sizeof out);
    _Alignas(64) uint16_t values[dtiles][AMX_ROWS][32];
    _Alignas(64) uint16_t pp[3][AMX_ROWS][32];
    _Alignas(64) static const uint16_t zeros[MAX_HEAD_DIM];
    for (int t0 = 0; t0 < last; t0 += 32) {
        const uint16_t *rows[32]; /* each position's values, [hd] (zeros past the run's last) */
        for (int b = 0; b < 2; b++) {
            int first = t0 + b * bs;
            const uint16_t *v = first < last ? cache_block(md, l, 1, g, slot_block(s, m0, first)) : NULL;
            for (int t = 0; t < bs; t++) rows[b * bs + t] = first + t < last ? v + (size_t)t * hd : zeros;
        }
        for (int d = 0; d < dtiles; d++)
            for (int kk = 0; kk < 16; kk++)
                _mm512_store_si512(values[d][kk], amx_interleave(rows[2 * kk] + 16 * d, rows[2 * kk + 1] + 16 * d));
        int keep[AMX_ROWS];
        for (int i = 0; i < AMX_ROWS; i++) keep[i] = n[i] - t0;
        for (int j = 0; j < hpg; j++) {
            int width = last - t0 < 32 ? last - t0 : 32;
            amx_split_tile(scores + (size_t)j * stride + t0, (size_t)hpg * stride, r, keep, width, 32, &pp[0][0][0]);
            _tile_loadd(0, pp[2], 64);
            _tile_loadd(1, pp[1], 64);
            _tile_loadd(2, pp[0], 64);
            for (int d = 0; d < dtiles; d++) {
                _tile_loadd(4, &out[j][0][16 * d], hd * 4);
                _tile_loadd(3, values[d], 64);
                _tile_dpbf16ps(4, 0, 3);
                _tile_dpbf16ps(4, 1, 3);
                _tile_dpbf16ps(4, 2, 3);
                _tile_stored(4, &out[j][0][16 * d], hd * 4);
            }
        }
    }
    _tile_release();
    for (int i = 0; i < r; i++) {
        float *o = head_out(md, m0 + i, g * hpg);
        for (int j = 0; j < hpg; j++) {
            float inv = 1.0f / sums[i][j];
            for (int x = 0; x < hd; x += LANES) vstore(o + (size_t)j * hd + x, vload(&out[j][i][x]) * inv);
        }
    }
}
