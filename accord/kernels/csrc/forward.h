/* A decode step and a matrix product, written once and compiled per instruction set.
 *
 * Included by isa_*.c after they define:
 *   TARGET        the function attribute that selects the instruction set (empty for the baseline)
 *   NAME(x)       x with the instruction set's suffix
 *   TILE          how many activation rows group_dots() takes at once
 *   group_dots()  the dot products of one group of GROUP weight rows with up to TILE activation rows
 *
 *   group_float_dots()  the same in float32 against a group unpacked to float32
 * and may define float_dots2(), the float32 products of two groups at once, with PAIRED_FLOAT_DOTS 1.
 *
 * Strategy. The weights are read once per step in the packed layout (common.h): each group of rows is
 * multiplied with every activation row of the step while it is in cache. Two kinds of step:
 *   - decode rows: activations are quantised to 8 bits per block of 32 (as llama.cpp does), so a
 *     block's dot product is integer arithmetic and the block's scales are applied in float;
 *   - prompt rows ("precise"): activations stay float32 and each group is unpacked to float32 --
 *     exactly ggml's values -- once per step, then multiplied with every row. A prompt's keys and
 *     values are what every later token attends to, so they get the more precise product.
 * Everything else -- norms, rotary embedding, attention over the paged cache, SiLU -- runs in float32
 * on the portable vector type `vf`. A prompt row attends over positions 0..pos of its sequence, after
 * every row of the step has stored its key and value, in runs of consecutive rows that read each cache
 * block once (attend_run).
 *
 * Batch invariance: a row's numbers never depend on the other rows of the step, on how a prompt was
 * cut into chunks, or on how many threads share the step. Each output value is computed by one thread,
 * through the same sequence of operations whatever the tile holds, and attention reads only the row's
 * own sequence.
 */
#include "model.h"
#include "pack.h"
#include "pool.h"

/* Whether prompt products run on AMX tiles here (isa_amx.c defines AMX_PROMPTS): it sets the size of a
 * member's share of the unpacked-weights scratch (UNPACKED_FLOATS). */
#ifdef AMX_PROMPTS
#define PROMPT_TILES 1
#else
#define PROMPT_TILES 0
#endif

/* -- activations ------------------------------------------------------------------------------ */



/* Quantise blocks [b0, b1) of a row of `cols` floats into row `m` of `a`. */
INLINE void quantize_blocks(const float *x, int cols, qacts *a, int m, int b0, int b1) {
    int nb = cols / QBLOCK;
    int8_t *q = a->q + (size_t)m * a->cols;
    float *d = a->d + (size_t)m * nb;
    float *s = a->s + (size_t)m * nb;
    for (int b = b0; b < b1; b++) {
        const float *xb = x + b * QBLOCK;
        vf top = vsplat(0.0f);
        for (int c = 0; c < QBLOCK; c += LANES) top = vmax(top, vabs(vload(xb + c)));
        float amax = vmaxall(top);
        float scale = amax / 127.0f;
        float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        vi total = {0};
        for (int c = 0; c < QBLOCK; c += LANES) {
            vi qc = __builtin_convertvector(vround(vload(xb + c) * inv), vi);
            vq bytes = __builtin_convertvector(qc, vq);
            memcpy(q + b * QBLOCK + c, &bytes, sizeof bytes);
            total += qc;
        }
        int32_t sum = 0;
        for (int j = 0; j < LANES; j++) sum += total[j];
        d[b] = scale;
        s[b] = scale * (float)sum;
    }
}

INLINE void quantize_row(const float *x, int cols, qacts *a, int m) { quantize_blocks(x, cols, a, m, 0, cols / QBLOCK); }

/* Columns [c0, c1) of x / sqrt(mean(x^2) + eps) * weight into `out` (the mean is over the whole row). */
INLINE void rms_norm_part(const float *x, const float *weight, int dim, float eps, float *out, int c0, int c1) {
    vf acc = vsplat(0.0f);
    for (int i = 0; i < dim; i += LANES) {
        vf v = vload(x + i);
        acc += v * v;
    }
    float inv = 1.0f / sqrtf(vsum(acc) / (float)dim + eps);
    for (int i = c0; i < c1; i += LANES) vstore(out + i, vload(x + i) * inv * vload(weight + i));
}

INLINE void rms_norm(const float *x, const float *weight, int dim, float eps, float *out) {
    rms_norm_part(x, weight, dim, eps, out, 0, dim);
}

/* This member's share [b0, b1) of n blocks (every member gets a part of every row). */
INLINE void share_blocks(int n, int ith, int nth, int *b0, int *b1) {
    *b0 = n * ith / nth;
    *b1 = n * (ith + 1) / nth;
}

/* -- matrix products -------------------------------------------------------------------------- */

/* One call per kind and tile size, each a copy specialised to its constants: the compiler keeps a
 * constant tile's accumulators in registers. Tile sizes past TILE never occur (mt <= TILE). */
#define AT_MOST_TILE(n) ((n) <= TILE ? (n) : TILE)
#define BY_TILE(CALL)                                  \
    switch (mt) {                                      \
        case 1: CALL(1); break;                        \
        case 2: CALL(AT_MOST_TILE(2)); break;          \
        case 3: CALL(AT_MOST_TILE(3)); break;          \
        case 4: CALL(AT_MOST_TILE(4)); break;          \
        case 5: CALL(AT_MOST_TILE(5)); break;          \
        case 6: CALL(AT_MOST_TILE(6)); break;          \
        case 7: CALL(AT_MOST_TILE(7)); break;          \
        default: CALL(AT_MOST_TILE(8)); break;         \
    }

static TARGET void group_dots(const uint8_t *group, int kind, int nb, const qacts *a, int m0, int mt, float *res) {
#define Q4_0_DOTS(n) dots(group, KIND_Q4_0, nb, a, m0, n, res)
#define Q4_1_DOTS(n) dots(group, KIND_Q4_1, nb, a, m0, n, res)
#define Q8_0_DOTS(n) dots(group, KIND_Q8_0, nb, a, m0, n, res)
    if (kind == KIND_Q4_0) {
        BY_TILE(Q4_0_DOTS)
    } else if (kind == KIND_Q4_1) {
        BY_TILE(Q4_1_DOTS)
    } else {
        BY_TILE(Q8_0_DOTS)
    }
}

static TARGET void group_float_dots(const float *wf, int cols, const float *x, size_t xstride, int m0, int mt,
                                    float *res) {
#define FLOAT_DOTS(n) float_dots(wf, cols, x, xstride, m0, n, res)
    BY_TILE(FLOAT_DOTS)
}

#ifndef PAIRED_FLOAT_DOTS
/* Where the instruction set does not pair groups, float_product_part() never takes two at once; this
 * definition (one group, then the other: the same numbers) only keeps its one loop compiling. */
#define PAIRED_FLOAT_DOTS 0
INLINE void float_dots2(const float *wf, const float *wf2, int cols, const float *x, size_t xstride, int m0,
                        const int mt, float *res, float *res2) {
    float_dots(wf, cols, x, xstride, m0, mt, res);
    float_dots(wf2, cols, x, xstride, m0, mt, res2);
}
#endif

/* Two groups at once (wf and wf2, results in res and res2): each activation value read serves both. */
static TARGET void group_float_dots2(const float *wf, const float *wf2, int cols, const float *x, size_t xstride,
                                     int m0, int mt, float *res, float *res2) {
#define FLOAT_DOTS2(n) float_dots2(wf, wf2, cols, x, xstride, m0, n, res, res2)
    BY_TILE(FLOAT_DOTS2)
}

/* Units of work (a matrix's groups, a prompt's attention tasks) are claimed CLAIM at a time
 * (pool_claim): few enough claims that their cost is lost in the work, small enough that the last
 * claims even out. */
#define CLAIM 4

/* Member `owner`'s share of `units` units: [u0, u1). */
INLINE void share(int units, int owner, int nth, int *u0, int *u1) {
    int per = (units + nth - 1) / nth;
    *u0 = owner * per < units ? owner * per : units;
    *u1 = *u0 + per < units ? *u0 + per : units;
}

/* The units a member does in one phase, claimed CLAIM at a time (next_unit): its own share first, then
 * the others' leftovers. Each unit is done whole by the member that claims it, with the same operations
 * whoever that is, so the numbers do not depend on who claimed what. */
typedef struct {
    int units;
    int ith, nth, set;
    int done;   /* shares this member has claimed all of: its own, then the next members' in turn */
    int u, end; /* what is left of its current claim */
} claims;

INLINE claims claim_units(int units, int ith, int nth) {
    claims c = {units, ith, nth, pool_share(ith), 0, 0, 0};
    return c;
}

/* The next unit to do, or -1 when every share is claimed. */
INLINE int next_unit(claims *c) {
    while (c->u == c->end) {
        if (c->done == c->nth) return -1;
        int owner = (c->ith + c->done) % c->nth, o0, o1;
        share(c->units, owner, c->nth, &o0, &o1);
        int at = o0 + pool_claim(c->set, owner) * CLAIM;
        if (at < o1) {
            c->u = at;
            c->end = at + CLAIM < o1 ? at + CLAIM : o1;
        } else {
            c->done++;
        }
    }
    return c->u++;
}

/* res [mt][GROUP] into out rows m0.., columns of group g (those that exist). */
INLINE void put(const qmatrix *w, int g, const float *res, int m0, int mt, float *out, size_t ostride, int accumulate) {
    int n = w->rows - g * GROUP < GROUP ? w->rows - g * GROUP : GROUP;
    for (int t = 0; t < mt; t++) {
        float *o = out + (size_t)(m0 + t) * ostride + (size_t)g * GROUP;
        const float *r = res + t * GROUP;
        if (accumulate) {
            for (int i = 0; i < n; i++) o[i] += r[i];
        } else {
            memcpy(o, r, (size_t)n * sizeof(float));
        }
    }
}

/* This member's share of out[m][r] (+)= w[r] . acts[m], 8-bit activations, every activation row. */
INLINE void product_part(const qmatrix *w, const qacts *a, int rows, float *out, size_t ostride,
                         int accumulate, int ith, int nth) {
    int nb = w->cols / QBLOCK;
    float res[TILE * GROUP];
    claims c = claim_units(matrix_groups(w), ith, nth);
    for (int g; (g = next_unit(&c)) >= 0;) {
        const uint8_t *group = group_data(w, g);
        for (int m0 = 0; m0 < rows; m0 += TILE) {
            int mt = rows - m0 < TILE ? rows - m0 : TILE;
            group_dots(group, w->kind, nb, a, m0, mt, res);
            put(w, g, res, m0, mt, out, ostride, accumulate);
        }
    }
}

/* Group g of w as float32, weight-major: wf[k * GROUP + i] is weight k of the group's row i, computed
 * as ggml defines it (a multiply, then an add: never fused). */
INLINE void unpack_group(const qmatrix *w, int g, float *wf) {
    int nb = w->cols / QBLOCK;
    const uint8_t *group = group_data(w, g);
    size_t gb = group_block_bytes(w->kind), sb = scales_bytes(w->kind);
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = group + b * gb, *runs = blk + sb;
        float *out = wf + (size_t)b * QBLOCK * GROUP;
        for (int c = 0; c < GROUP; c += LANES) { /* rows c .. c + LANES - 1 of the group */
            vf d = vhalf(blk + 2 * c);
            if (w->kind == KIND_Q8_0) {
                for (int k = 0; k < 8; k++) {
                    vi v;
                    memcpy(&v, runs + (k * GROUP + c) * 4, sizeof v);
                    for (int j = 0; j < 4; j++) {
                        /* Byte j to the top, shifted as unsigned (a signed shift past the top is
                         * undefined behaviour), then back down with its sign. */
                        vi q = (vi)((vu)v << (24 - 8 * j)) >> 24;
                        vstore(out + (4 * k + j) * GROUP + c, __builtin_convertvector(q, vf) * d);
                    }
                }
                continue;
            }
            vf m = w->kind == KIND_Q4_1 ? vhalf(blk + 2 * GROUP + 2 * c) : vsplat(0.0f);
            for (int k = 0; k < 4; k++) {
                vi v;
                memcpy(&v, runs + (k * GROUP + c) * 4, sizeof v);
                for (int j = 0; j < 4; j++) {
                    vf lo = __builtin_convertvector((v >> (8 * j)) & 0x0F, vf);
                    vf hi = __builtin_convertvector((v >> (8 * j + 4)) & 0x0F, vf);
                    float *o_lo = out + (4 * k + j) * GROUP + c, *o_hi = out + (16 + 4 * k + j) * GROUP + c;
                    if (w->kind == KIND_Q4_1) {
                        vstore(o_lo, d * lo + m);
                        vstore(o_hi, d * hi + m);
                    } else {
                        vstore(o_lo, d * (lo - 8.0f));
                        vstore(o_hi, d * (hi - 8.0f));
                    }
                }
            }
        }
    }
}

/* This member's share of out[m][r] (+)= w[r] . x[m] in float32 (x rows `xstride` apart); `wf` is the
 * member's own scratch of UNPACKED_FLOATS(cols, 0) floats. Where the instruction set multiplies two groups at
 * once (PAIRED_FLOAT_DOTS 1: one vector holds a group's row of weights, so a pair lets each activation
 * value read serve two multiply-adds), groups are claimed and unpacked two at a time. Each output
 * value still takes the same sequence of multiply-adds, so the numbers are those of one at a time. */
#ifdef AMX_PROMPTS
#include "amx.h"
#endif
INLINE void float_product_part(const qmatrix *w, const float *x, size_t xstride, int rows, float *out,
                               size_t ostride, int accumulate, float *wf, uint8_t *split, int ith, int nth) {
#ifdef AMX_PROMPTS /* on the tiles (amx.h); `split`: the team's split of x */
    amx_product_part(w, x, xstride, rows, out, ostride, accumulate, wf, split, ith, nth);
#else
    (void)split;
    float res[TILE * GROUP], res2[TILE * GROUP], *wf2 = wf + (size_t)w->cols * GROUP;
    claims c = claim_units(matrix_groups(w), ith, nth);
    for (int g; (g = next_unit(&c)) >= 0;) {
        int g2 = PAIRED_FLOAT_DOTS ? next_unit(&c) : -1;
        unpack_group(w, g, wf);
        if (g2 >= 0) unpack_group(w, g2, wf2);
        for (int m0 = 0; m0 < rows; m0 += TILE) {
            int mt = rows - m0 < TILE ? rows - m0 : TILE;
            if (g2 >= 0) {
                group_float_dots2(wf, wf2, w->cols, x, xstride, m0, mt, res, res2);
                put(w, g2, res2, m0, mt, out, ostride, accumulate);
            } else {
                group_float_dots(wf, w->cols, x, xstride, m0, mt, res);
            }
            put(w, g, res, m0, mt, out, ostride, accumulate);
        }
    }
#endif
}

static TARGET void NAME(product_task)(void *ctx, int ith, int nth) {
    product *p = ctx;
    for (int m = ith; m < p->rows; m += nth) quantize_row(p->x + (size_t)m * p->w->cols, p->w->cols, &p->acts, m);
    pool_barrier(nth);
    product_part(p->w, &p->acts, p->rows, p->out, (size_t)p->w->rows, 0, ith, nth);
}

static TARGET void NAME(float_product_task)(void *ctx, int ith, int nth) {
    product *p = ctx;
    float *wf = p->scratch + (size_t)ith * UNPACKED_FLOATS(p->w->cols, PROMPT_TILES);
    float_product_part(p->w, p->x, (size_t)p->w->cols, p->rows, p->out, (size_t)p->w->rows, 0, wf, p->split, ith, nth);
}

/* -- attention -------------------------------------------------------------------------------- */

/* Rotate each pair (v[2i], v[2i+1]) by the angle of position `pos` and frequency i: two products and
 * a sum each, rounded apart as ggml rounds them.
 *
 * Kept out of the loop vectoriser: GCC 12 at -O3 turns this loop, a complex multiplication in shape,
 * into vfmaddsub (a fused multiply-add) in spite of -ffp-contract=off, wherever it can vectorise it --
 * which it can without -fwrapv and cannot with it. The queries and keys then moved by a rounding with
 * the build's flags (the top logits of a two-token prompt by 0.002). */
static __attribute__((noinline, optimize("no-tree-vectorize"))) TARGET void rotate(const model *md, int pos, const float *v, float *out) {
    const float *rot = md->rope + (size_t)pos * md->head_dim;
    for (int i = 0; i < md->head_dim; i += 2) {
        float a = v[i], b = v[i + 1], c = rot[i], s = rot[i + 1];
        out[i] = a * c - b * s;
        out[i + 1] = a * s + b * c;
    }
}

/* Keys and values of one cache block: bf16 [block_size][head_dim] as the cache tensor is laid out --
 * except that a block's keys are stored transposed, [head_dim][block_size], so the scores of a whole
 * block are one multiply-add per dimension over 16 positions at once, with no horizontal sums. The
 * cache is the C step's alone once it runs (torch's attention never reads it then). */
INLINE uint16_t *cache_block(const model *md, int l, int kv, int g, int block) {
    size_t index = (((size_t)l * 2 + kv) * md->n_kv_heads + g) * md->n_blocks + block;
    return md->kv + index * md->block_size * md->head_dim;
}

/* The cache block that holds position t of row m's sequence. */
INLINE int slot_block(const step *s, int m, int t) {
    return s->tables[(size_t)s->row_table[m] * s->table_stride + t / s->m->block_size];
}

/* The key (rotated) and the value of KV head g of row m, rounded to bf16 as the cache holds them. */
INLINE void current_kv(const step *s, int l, int m, int g, uint16_t *k, uint16_t *v) {
    const model *md = s->m;
    int hd = md->head_dim;
    const float *qkv = md->qkv + (size_t)m * md->layers[l].qkv.rows;
    float rotated[hd];
    rotate(md, s->pos[m], qkv + (size_t)(md->n_heads + g) * hd, rotated);
    const float *value = qkv + (size_t)(md->n_heads + md->n_kv_heads + g) * hd;
    for (int i = 0; i < hd; i++) {
        k[i] = float_to_bf16(rotated[i]);
        v[i] = float_to_bf16(value[i]);
    }
}

/* Store the key and value of KV head g of row m in the row's cache slot. */
INLINE void store_kv(const step *s, int l, int m, int g) {
    const model *md = s->m;
    int hd = md->head_dim, pos = s->pos[m], bs = md->block_size;
    uint16_t k[hd], v[hd];
    current_kv(s, l, m, g, k, v);
    int block = slot_block(s, m, pos), offset = pos % bs;
    uint16_t *kc = cache_block(md, l, 0, g, block) + offset;
    memcpy(cache_block(md, l, 1, g, block) + (size_t)offset * hd, v, sizeof v);
    for (int i = 0; i < hd; i++) kc[(size_t)i * bs] = k[i];
}

/* out[i] += p[t] * values[t][i] over the `count` positions of a block of values (float32, [count][hd]),
 * the positions in order. Four vectors of the head's dimensions go at once: four chains of adds that
 * overlap, where one would wait on each add; each element's adds are in the same order either way. */
INLINE void weigh_values(float *out, const float *p, const float *values, int count, int hd) {
    int i = 0;
    for (; i + 4 * LANES <= hd; i += 4 * LANES) {
        vf a0 = vload(out + i), a1 = vload(out + i + LANES), a2 = vload(out + i + 2 * LANES);
        vf a3 = vload(out + i + 3 * LANES);
        for (int t = 0; t < count; t++) {
            vf w = vsplat(p[t]);
            const float *v = values + (size_t)t * hd + i;
            a0 += w * vload(v);
            a1 += w * vload(v + LANES);
            a2 += w * vload(v + 2 * LANES);
            a3 += w * vload(v + 3 * LANES);
        }
        vstore(out + i, a0);
        vstore(out + i + LANES, a1);
        vstore(out + i + 2 * LANES, a2);
        vstore(out + i + 3 * LANES, a3);
    }
    for (; i < hd; i += LANES) {
        vf acc = vload(out + i);
        for (int t = 0; t < count; t++) acc += vsplat(p[t]) * vload(values + (size_t)t * hd + i);
        vstore(out + i, acc);
    }
}

/* Row m's attention output for query head h (head_dim floats; a group's heads follow one another). */
INLINE float *head_out(const model *md, int m, int h) {
    return md->attn + ((size_t)m * md->n_heads + h) * md->head_dim;
}

/* Scores of hpg query heads (q[j], rotated) against one block of keys (float32, [hd][bs], transposed
 * as the cache holds them): head j's into out + j * stride. Four chains over the dimensions (added in a
 * fixed order), so the adds overlap; two vectors of positions at once where the block holds them,
 * sharing each query value. */
INLINE void block_scores(const float *q, int hpg, const float *block, int hd, float scale, float *out, size_t stride) {
    const int bs = CACHE_BLOCK;
    for (int j = 0; j < hpg; j++) {
        const float *qj = q + (size_t)j * hd;
        float *o = out + (size_t)j * stride;
        int c = 0;
        for (; c + 2 * LANES <= bs; c += 2 * LANES) {
            vf lo[4] = {vsplat(0.0f), vsplat(0.0f), vsplat(0.0f), vsplat(0.0f)};
            vf hi[4] = {vsplat(0.0f), vsplat(0.0f), vsplat(0.0f), vsplat(0.0f)};
            const float *k = block + c;
            for (int i = 0; i < hd; i += 4, k += 4 * bs) {
                for (int r = 0; r < 4; r++) {
                    vf x = vsplat(qj[i + r]);
                    lo[r] += x * vload(k + r * bs);
                    hi[r] += x * vload(k + r * bs + LANES);
                }
            }
            vstore(o + c, ((lo[0] + lo[1]) + (lo[2] + lo[3])) * scale);
            vstore(o + c + LANES, ((hi[0] + hi[1]) + (hi[2] + hi[3])) * scale);
        }
        for (; c < bs; c += LANES) {
            vf acc[4] = {vsplat(0.0f), vsplat(0.0f), vsplat(0.0f), vsplat(0.0f)};
            const float *k = block + c;
            for (int i = 0; i < hd; i += 4, k += 4 * bs) {
                for (int r = 0; r < 4; r++) acc[r] += vsplat(qj[i + r]) * vload(k + r * bs);
            }
            vstore(o + c, ((acc[0] + acc[1]) + (acc[2] + acc[3])) * scale);
        }
    }
}

/* The scores sc[0 .. span) of positions [0, n) as exponentials of their distance to the largest
 * (positions past n: zero); returns their sum and leaves the largest in *best. */
INLINE float soften(float *sc, int n, int span, float *best) {
    for (int t = n; t < span; t++) sc[t] = -INFINITY; /* past the row's position: not attended to */
    vf top = vsplat(-INFINITY);
    for (int t = 0; t < span; t += LANES) top = vmax(top, vload(sc + t));
    *best = vmaxall(top);
    for (int t = 0; t < span; t += LANES) vstore(sc + t, vexp(vload(sc + t) - *best));
    for (int t = n; t < span; t++) sc[t] = 0.0f; /* vexp's floor is tiny, not zero */
    vf total = vsplat(0.0f);
    for (int t = 0; t < span; t += LANES) total += vload(sc + t);
    return vsum(total);
}

/* The query heads of KV head g of row m, rotated to its position: q[j * hd ..] for head j of the group. */
INLINE void group_queries(const step *s, int l, int m, int g, float *q) {
    const model *md = s->m;
    int hd = md->head_dim, hpg = md->n_heads / md->n_kv_heads;
    const float *qkv = md->qkv + (size_t)m * md->layers[l].qkv.rows;
    for (int j = 0; j < hpg; j++) rotate(md, s->pos[m], qkv + (size_t)(g * hpg + j) * hd, q + (size_t)j * hd);
}

/* Attention of the query heads of KV head g (a GQA group) of decode row m over positions [t0, t1) of
 * its sequence, t0 a multiple of the block size. Each key and value is read once for the whole group.
 * (Prompt rows attend in runs: attend_run.)
 *
 * With `partial` it leaves, per head, the span's largest score, its sum of exponentials and its
 * unnormalised output, which merge() combines over the spans of a long sequence; without, the output.
 *
 * In a decode step the row's own position is not in the cache yet (it is stored after the attention
 * phase, saving a barrier): its key and value come from this step's projection, rounded to bf16 as the
 * cache would hold them, and its score is computed in the same order as a cached one's. */
INLINE void attend(const step *s, int l, int m, int g, int t0, int t1, float *scores, float *partial) {
    const model *md = s->m;
    int hd = md->head_dim, pos = s->pos[m], bs = md->block_size, own = t1 == pos + 1;
    int hpg = md->n_heads / md->n_kv_heads, n = t1 - t0, span = (n + bs - 1) / bs * bs;
    float q[MAX_GROUP * MAX_HEAD_DIM];
    group_queries(s, l, m, g, q);
    uint16_t k_own[hd], v_own[hd];
    if (own) current_kv(s, l, m, g, k_own, v_own);
    float scale = 1.0f / sqrtf((float)hd);
    /* One block of keys (or values) as float32, converted once for every head of the group. */
    float block[MAX_HEAD_DIM * CACHE_BLOCK];
    for (int b = 0; b < span / bs; b++) {
        const uint16_t *k = cache_block(md, l, 0, g, slot_block(s, m, t0 + b * bs));
        for (int i = 0; i < hd * bs; i += LANES) vstore(block + i, vbf16(k + i));
        if (own && b == span / bs - 1) {
            for (int i = 0; i < hd; i++) block[i * bs + (pos % bs)] = bf16_to_float(k_own[i]);
        }
        block_scores(q, hpg, block, hd, scale, scores + b * bs, (size_t)span);
    }
    float sums[MAX_GROUP];
    for (int j = 0; j < hpg; j++) {
        float best;
        sums[j] = soften(scores + (size_t)j * span, n, span, &best);
        if (partial) partial[(size_t)j * (hd + 2) + hd] = best;
    }
    /* Each head's output accumulates in place, over the positions in order. */
    float *out[MAX_GROUP];
    for (int j = 0; j < hpg; j++) {
        out[j] = partial ? partial + (size_t)j * (hd + 2) : head_out(md, m, g * hpg + j);
        for (int i = 0; i < hd; i += LANES) vstore(out[j] + i, vsplat(0.0f));
    }
    for (int b = 0; b < span / bs; b++) {
        const uint16_t *v = cache_block(md, l, 1, g, slot_block(s, m, t0 + b * bs));
        int count = n - b * bs < bs ? n - b * bs : bs;
        for (int i = 0; i < count * hd; i += LANES) vstore(block + i, vbf16(v + i));
        if (own && b == span / bs - 1) {
            for (int i = 0; i < hd; i++) block[(pos % bs) * hd + i] = bf16_to_float(v_own[i]);
        }
        for (int j = 0; j < hpg; j++) weigh_values(out[j], scores + (size_t)j * span + b * bs, block, count, hd);
    }
    for (int j = 0; j < hpg; j++) {
        if (partial) {
            partial[(size_t)j * (hd + 2) + hd + 1] = sums[j];
        } else {
            float inv = 1.0f / sums[j];
            for (int i = 0; i < hd; i += LANES) vstore(out[j] + i, vload(out[j] + i) * inv);
        }
    }
}

/* Whether prompt row m + 1 goes on row m's sequence at the next position (so a run of such rows reads
 * the same cache blocks). */
INLINE int continues(const step *s, int m) {
    return s->row_table[m + 1] == s->row_table[m] && s->pos[m + 1] == s->pos[m] + 1;
}

/* Whether prompt row m joins the run that starts at row m0 (rows m0 .. m - 1): it goes on their
 * sequence at the next position, the run is short of RUN_ROWS, and the scores of all its rows, each
 * head's as long as row m's span, fit in a member's MEMBER_SCORES. */
INLINE int run_grows(const step *s, int m0, int m) {
    const model *md = s->m;
    size_t span = ((size_t)s->pos[m] + CACHE_BLOCK) / CACHE_BLOCK * CACHE_BLOCK;
    size_t need = (size_t)(m - m0 + 1) * (md->n_heads / md->n_kv_heads) * span;
    return continues(s, m - 1) && m - m0 < RUN_ROWS && need <= MEMBER_SCORES(md);
}

/* Attention of the query heads of KV head g of prompt rows m0 .. m0 + r - 1 (r <= RUN_ROWS), which
 * follow one another in one sequence, each over positions 0 .. its own. Each row gets what attend()
 * gives it alone, bit for bit: the same operations on the same values. But each block of keys and
 * values is read from the cache and converted once for every row of the run, not once a row -- a long
 * prompt's rows each read the whole sequence before them, which costs more than their arithmetic.
 * `scores`: MEMBER_SCORES floats, which the run's fit in (run_grows). */
INLINE void attend_run(const step *s, int l, int m0, int r, int g, float *scores) {
    const model *md = s->m;
    int hd = md->head_dim, bs = md->block_size, hpg = md->n_heads / md->n_kv_heads;
    int last = s->pos[m0 + r - 1] + 1, blocks = (last + bs - 1) / bs;
    size_t stride = (size_t)blocks * bs; /* each head's scores: the longest row's span */
    float q[r * hpg * hd];
    for (int i = 0; i < r; i++) group_queries(s, l, m0 + i, g, q + (size_t)i * hpg * hd);
    float scale = 1.0f / sqrtf((float)hd);
    float block[MAX_HEAD_DIM * CACHE_BLOCK];
    for (int b = 0; b < blocks; b++) {
        const uint16_t *k = cache_block(md, l, 0, g, slot_block(s, m0, b * bs));
        for (int i = 0; i < hd * bs; i += LANES) vstore(block + i, vbf16(k + i));
        for (int i = 0; i < r; i++) {
            if (b * bs <= s->pos[m0 + i]) {
                block_scores(q + (size_t)i * hpg * hd, hpg, block, hd, scale, scores + (size_t)i * hpg * stride + b * bs,
                             stride);
            }
        }
    }
    float sums[RUN_ROWS][MAX_GROUP];
    for (int i = 0; i < r; i++) {
        int n = s->pos[m0 + i] + 1, span = (n + bs - 1) / bs * bs;
        for (int j = 0; j < hpg; j++) {
            float best;
            sums[i][j] = soften(scores + ((size_t)i * hpg + j) * stride, n, span, &best);
        }
    }
    for (int i = 0; i < r; i++) {
        float *o = head_out(md, m0 + i, g * hpg);
        for (int x = 0; x < hpg * hd; x += LANES) vstore(o + x, vsplat(0.0f));
    }
    for (int b = 0; b < blocks; b++) {
        const uint16_t *v = cache_block(md, l, 1, g, slot_block(s, m0, b * bs));
        int most = last - b * bs < bs ? last - b * bs : bs;
        for (int i = 0; i < most * hd; i += LANES) vstore(block + i, vbf16(v + i));
        for (int i = 0; i < r; i++) {
            int n = s->pos[m0 + i] + 1;
            if (b * bs >= n) continue;
            int count = n - b * bs < bs ? n - b * bs : bs;
            float *o = head_out(md, m0 + i, g * hpg);
            for (int j = 0; j < hpg; j++) {
                weigh_values(o + (size_t)j * hd, scores + ((size_t)i * hpg + j) * stride + b * bs, block, count, hd);
            }
        }
    }
    for (int i = 0; i < r; i++) {
        float *o = head_out(md, m0 + i, g * hpg);
        for (int j = 0; j < hpg; j++) {
            float inv = 1.0f / sums[i][j];
            for (int x = 0; x < hd; x += LANES) vstore(o + (size_t)j * hd + x, vload(o + (size_t)j * hd + x) * inv);
        }
    }
}

#ifdef AMX_PROMPTS
#include "amx_attention.h"
#endif

/* Head h of row m from the partial results of its spans (`spans` of them): the largest score over all,
 * each span's sum and output rescaled to it. One span is the single-pass result, bit for bit. */
INLINE void merge(const step *s, int m, int h, const float *partials, int spans) {
    const model *md = s->m;
    int hd = md->head_dim;
    size_t stride = (size_t)md->n_heads * (hd + 2); /* from one span of the row to the next */
    float best = -INFINITY;
    for (int c = 0; c < spans; c++) best = partials[c * stride + hd] > best ? partials[c * stride + hd] : best;
    float total = 0.0f;
    float *out = head_out(md, m, h);
    for (int c = 0; c < spans; c++) {
        const float *p = partials + c * stride;
        float w = vexp(vsplat(p[hd] - best))[0]; /* the kernels' own exp: no C library in the numbers */
        total += p[hd + 1] * w;
        for (int i = 0; i < hd; i += LANES) {
            vf prev = c ? vload(out + i) : vsplat(0.0f);
            vstore(out + i, prev + vload(p + i) * w);
        }
    }
    float inv = 1.0f / total;
    for (int i = 0; i < hd; i += LANES) vstore(out + i, vload(out + i) * inv);
}

/* -- the output projection -------------------------------------------------------------------- */

/* The k largest of `values` (k <= n), as a min-heap of their indices. */
INLINE void top_k(const float *values, int n, int k, int *heap) {
    for (int i = 0; i < k; i++) {
        int c = i;
        heap[c] = i;
        while (c > 0 && values[heap[(c - 1) / 2]] > values[heap[c]]) {
            int p = (c - 1) / 2, tmp = heap[p];
            heap[p] = heap[c];
            heap[c] = tmp;
            c = p;
        }
    }
    for (int i = k; i < n; i++) {
        if (i % (4 * LANES) == 0 && i + 4 * LANES <= n) { /* skip a stretch with nothing above the least */
            vf top = vmax(vmax(vload(values + i), vload(values + i + LANES)),
                          vmax(vload(values + i + 2 * LANES), vload(values + i + 3 * LANES)));
            if (!(vmaxall(top) > values[heap[0]])) {
                i += 4 * LANES - 1;
                continue;
            }
        }
        if (!(values[i] > values[heap[0]])) continue;
        heap[0] = i;
        for (int c = 0;;) {
            int l = 2 * c + 1, r = l + 1, least = c;
            if (l < k && values[heap[l]] < values[heap[least]]) least = l;
            if (r < k && values[heap[r]] < values[heap[least]]) least = r;
            if (least == c) break;
            int tmp = heap[least];
            heap[least] = heap[c];
            heap[c] = tmp;
            c = least;
        }
    }
}

INLINE qacts step_acts(const model *md, int cols) {
    qacts a = {md->aq, md->ad, md->as, cols};
    return a;
}

/* Logits of `rows` final hidden states, their activations already quantised into the step's, then
 * the leaders of each row recomputed exactly.
 *
 * The projection multiplies 8-bit activations, which moves a logit by a few hundredths -- more than
 * the gap between the two best tokens sometimes is. Only the leaders can win, so the refine_top best
 * of each row are recomputed in float32 from the stored row and the unquantised hidden state; greedy
 * decoding then picks between near-ties by the model's numbers, not by rounding. */
INLINE void head_part(model *md, int rows, const float *hidden, float *logits, int ith, int nth) {
    qacts in = step_acts(md, md->dim);
    int vocab = md->head.rows, dim = md->dim;
    product_part(&md->head, &in, rows, logits, (size_t)vocab, 0, ith, nth);
    pool_barrier(nth);
    int k = md->refine_top < vocab ? md->refine_top : vocab;
    int heap[k];
    float row[dim];
    for (int m = ith; m < rows; m += nth) {
        float *out = logits + (size_t)m * vocab;
        const float *h = hidden + (size_t)m * dim;
        top_k(out, vocab, k, heap);
        for (int j = 0; j < k; j++) {
            unpack_row(&md->head, heap[j], row);
            vf acc = vsplat(0.0f);
            for (int i = 0; i < dim; i += LANES) acc += vload(row + i) * vload(h + i);
            out[heap[j]] = vsum(acc);
        }
    }
}

/* -- the step --------------------------------------------------------------------------------- */

/* This member's share of out (+)= w . in for the step's rows: `in` holds float rows `cols` apart; a
 * decode step multiplies their quantised form, already in the step's activations. */
INLINE void project(const step *s, const qmatrix *w, const float *in, float *out, size_t ostride, int accumulate,
                    int ith, int nth) {
    const model *md = s->m;
    if (s->precise) {
        float *wf = md->unpacked + (size_t)ith * UNPACKED_FLOATS(md->widest, PROMPT_TILES);
        float_product_part(w, in, (size_t)w->cols, s->rows, out, ostride, accumulate, wf, md->split, ith, nth);
    } else {
        qacts a = step_acts(md, w->cols);
        product_part(w, &a, s->rows, out, ostride, accumulate, ith, nth);
    }
}

/* Columns [c0, c1) of silu(gate) * up of one row into `out`. */
INLINE void gated_part(const model *md, const float *gu, float *out, int c0, int c1) {
    int nff = md->n_ff;
    for (int i = c0; i < c1; i += LANES) {
        vf g = vload(gu + i), u = vload(gu + nff + i);
        vstore(out + i, g / (1.0f + vexp(-g)) * u);
    }
}

/* Every row's norm into h, this member's blocks of each (quantised too, in a decode step). */
INLINE void norm_rows(const step *s, const float *weight, int ith, int nth) {
    const model *md = s->m;
    int dim = md->dim, b0, b1;
    share_blocks(dim / QBLOCK, ith, nth, &b0, &b1);
    qacts a = step_acts(md, dim);
    for (int m = 0; m < s->rows; m++) {
        float *h = md->h + (size_t)m * dim;
        rms_norm_part(s->x + (size_t)m * dim, weight, dim, md->eps, h, b0 * QBLOCK, b1 * QBLOCK);
        if (!s->precise) quantize_blocks(h, dim, &a, m, b0, b1);
    }
}

static TARGET void NAME(step_task)(void *ctx, int ith, int nth) {
    step *s = ctx;
    model *md = s->m;
    int rows = s->rows, dim = md->dim, adim = md->n_heads * md->head_dim, nff = md->n_ff, b0, b1;
    float *scores = md->scores + (size_t)ith * MEMBER_SCORES(md);
    /* A prompt step's rows in runs that follow one another in a sequence (attend_run). */
    int run_start[s->precise ? rows + 1 : 1], n_runs = 0;
    for (int m = 0; s->precise && m < rows; m++) {
        if (m == 0 || !run_grows(s, run_start[n_runs - 1], m)) run_start[n_runs++] = m;
    }
    run_start[n_runs] = rows;
    float *h = md->h;
    for (int m = ith; m < rows; m += nth) unpack_row(&md->embed, s->ids[m], s->x + (size_t)m * dim);
    pool_barrier(nth);
    for (int l = 0; l < md->n_layers; l++) {
        const layer *L = &md->layers[l];
        norm_rows(s, L->attn_norm, ith, nth);
        pool_barrier(nth);
        project(s, &L->qkv, h, md->qkv, (size_t)L->qkv.rows, 0, ith, nth);
        pool_barrier(nth);
        if (s->precise) { /* a prompt's rows attend to each other: every key first */
            for (int task = ith; task < rows * md->n_kv_heads; task += nth) {
                store_kv(s, l, task / md->n_kv_heads, task % md->n_kv_heads);
            }
            pool_barrier(nth);
        }
        if (s->precise) { /* many rows: a task per run of rows and group, each over its whole sequence */
            claims c = claim_units(n_runs * md->n_kv_heads, ith, nth);
            for (int task; (task = next_unit(&c)) >= 0;) {
                int run = task / md->n_kv_heads, m0 = run_start[run];
#ifdef AMX_PROMPTS
                if (md->head_dim % 32 == 0) {
                    amx_attend_run(s, l, m0, run_start[run + 1] - m0, task % md->n_kv_heads, scores);
                    continue;
                }
#endif
                attend_run(s, l, m0, run_start[run + 1] - m0, task % md->n_kv_heads, scores);
            }
            pool_barrier(nth);
        } else { /* few rows: each sequence in spans of SPAN positions, so long ones share the team */
            int hpg = md->n_heads / md->n_kv_heads;
            for (int task = ith; task < s->spans[rows] * md->n_kv_heads; task += nth) {
                int g = task % md->n_kv_heads, at = task / md->n_kv_heads, m = 0;
                while (s->spans[m + 1] <= at) m++;
                int c = at - s->spans[m], t0 = c * SPAN, t1 = t0 + SPAN < s->pos[m] + 1 ? t0 + SPAN : s->pos[m] + 1;
                attend(s, l, m, g, t0, t1, scores, md->partials + ((size_t)at * md->n_kv_heads + g) * hpg * (md->head_dim + 2));
            }
            pool_barrier(nth);
            qacts a = step_acts(md, adim);
            for (int task = ith; task < rows * md->n_heads; task += nth) {
                int m = task / md->n_heads, h = task % md->n_heads, g = h / hpg;
                size_t first = ((size_t)s->spans[m] * md->n_kv_heads + g) * hpg + h % hpg;
                merge(s, m, h, md->partials + first * (md->head_dim + 2), s->spans[m + 1] - s->spans[m]);
                int per = md->head_dim / QBLOCK; /* the head's own blocks, now complete */
                quantize_blocks(md->attn + (size_t)m * adim, adim, &a, m, h * per, (h + 1) * per);
            }
            pool_barrier(nth);
        }
        project(s, &L->out, md->attn, s->x, (size_t)dim, 1, ith, nth);
        if (!s->precise) { /* the decode rows' own keys and values, which attention took from the projection */
            for (int task = ith; task < rows * md->n_kv_heads; task += nth) {
                store_kv(s, l, task / md->n_kv_heads, task % md->n_kv_heads);
            }
        }
        pool_barrier(nth);
        norm_rows(s, L->ffn_norm, ith, nth);
        pool_barrier(nth);
        project(s, &L->gate_up, h, md->gu, (size_t)L->gate_up.rows, 0, ith, nth);
        pool_barrier(nth);
        share_blocks(nff / QBLOCK, ith, nth, &b0, &b1);
        qacts a = step_acts(md, nff);
        for (int m = 0; m < rows; m++) {
            float *act = h + (size_t)m * nff;
            gated_part(md, md->gu + (size_t)m * L->gate_up.rows, act, b0 * QBLOCK, b1 * QBLOCK);
            if (!s->precise) quantize_blocks(act, nff, &a, m, b0, b1);
        }
        pool_barrier(nth);
        project(s, &L->down, h, s->x, (size_t)dim, 1, ith, nth);
        pool_barrier(nth);
    }
    qacts in = step_acts(md, dim);
    for (int j = ith; j < s->n_logits; j += nth) {
        float *hidden = md->hidden + (size_t)j * dim;
        rms_norm(s->x + (size_t)s->logit_rows[j] * dim, md->out_norm, dim, md->eps, hidden);
        quantize_row(hidden, dim, &in, j);
    }
    pool_barrier(nth);
    head_part(md, s->n_logits, md->hidden, s->logits, ith, nth);
}

static TARGET void NAME(logits_task)(void *ctx, int ith, int nth) {
    head_job *job = ctx;
    model *md = job->m;
    qacts in = step_acts(md, md->dim);
    for (int m = ith; m < job->rows; m += nth) quantize_row(job->hidden + (size_t)m * md->dim, md->dim, &in, m);
    pool_barrier(nth);
    head_part(md, job->rows, job->hidden, job->logits, ith, nth);
}

const isa_ops NAME(ops) = {NAME(step_task), NAME(product_task), NAME(float_product_task), NAME(logits_task)};
