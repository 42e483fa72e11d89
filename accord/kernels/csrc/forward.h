/* A decode step and a matrix product, written once and compiled per instruction set.
 *
 * Included by isa_*.c after they define:
 *   TARGET        the function attribute that selects the instruction set (empty for the baseline)
 *   NAME(x)       x with the instruction set's suffix
 *   TILE          how many activation rows group_dots() takes at once
 *   group_dots()  the dot products of one group of GROUP weight rows with up to TILE activation rows
 *
 * Strategy. The weights are read once per step in the packed layout (common.h): each group of rows is
 * multiplied with every activation row of the step while it is in cache. Activations are quantised to
 * 8 bits per block of 32 (as llama.cpp does), so a block's dot product is integer arithmetic; the
 * block's scales are applied in float. Everything else -- norms, rotary embedding, attention over the
 * paged cache, SiLU -- runs in float32 on the portable vector type `vf`.
 *
 * Batch invariance: a row's numbers never depend on the other rows of the step or on how many threads
 * share it. Each output value is computed by one thread, through the same sequence of operations
 * whatever the tile holds, and attention reads only the row's own sequence.
 */
#include <math.h>

#include "model.h"
#include "pack.h"
#include "pool.h"

#define INLINE static inline __attribute__((always_inline)) TARGET

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
typedef uint32_t vu __attribute__((vector_size(64)));
typedef uint16_t vh __attribute__((vector_size(32)));
typedef float vf8 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));
#define LANES 16

INLINE vf vload(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

INLINE vf vsplat(float x) {
    vf v = {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
    return v;
}

INLINE vf vbf16(const uint16_t *p) {
    vh h;
    memcpy(&h, p, sizeof h);
    vu bits = __builtin_convertvector(h, vu) << 16;
    vf v;
    memcpy(&v, &bits, sizeof v);
    return v;
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

/* The sum of the lanes, halving the vector each time. */
#if defined(__has_builtin) && __has_builtin(__builtin_shufflevector)
INLINE float vsum(vf v) {
    vf8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    vf4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (b[0] + b[2]) + (b[1] + b[3]);
}
#else
INLINE float vsum(vf v) {
    vf8 a, b;
    memcpy(&a, &v, sizeof a);
    memcpy(&b, (const char *)&v + sizeof a, sizeof b);
    a += b;
    vf4 c, d;
    memcpy(&c, &a, sizeof c);
    memcpy(&d, (const char *)&a + sizeof c, sizeof d);
    c += d;
    return (c[0] + c[2]) + (c[1] + c[3]);
}
#endif

INLINE float vmaxall(vf v) {
    float t[LANES];
    memcpy(t, &v, sizeof t);
    for (int w = LANES / 2; w > 0; w /= 2) {
        for (int i = 0; i < w; i++) t[i] = t[i] > t[i + w] ? t[i] : t[i + w];
    }
    return t[0];
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

/* -- activations ------------------------------------------------------------------------------ */

/* Quantise one row of `cols` floats into row `m` of `a`. */
INLINE void quantize_row(const float *x, int cols, qacts *a, int m) {
    int nb = cols / QBLOCK;
    int8_t *q = a->q + (size_t)m * a->cols;
    float *d = a->d + (size_t)m * nb;
    float *s = a->s + (size_t)m * nb;
    for (int b = 0; b < nb; b++) {
        vf x0 = vload(x + b * QBLOCK), x1 = vload(x + b * QBLOCK + LANES);
        float amax = vmaxall(vmax(vabs(x0), vabs(x1)));
        float scale = amax / 127.0f;
        float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        vi q0 = __builtin_convertvector(vround(x0 * inv), vi);
        vi q1 = __builtin_convertvector(vround(x1 * inv), vi);
        int32_t t[QBLOCK];
        memcpy(t, &q0, sizeof q0);
        memcpy(t + LANES, &q1, sizeof q1);
        int32_t sum = 0;
        for (int j = 0; j < QBLOCK; j++) {
            q[b * QBLOCK + j] = (int8_t)t[j];
            sum += t[j];
        }
        d[b] = scale;
        s[b] = scale * (float)sum;
    }
}

/* x / sqrt(mean(x^2) + eps) * weight into `out`. */
INLINE void rms_norm(const float *x, const float *weight, int dim, float eps, float *out) {
    vf acc = vsplat(0.0f);
    for (int i = 0; i < dim; i += LANES) {
        vf v = vload(x + i);
        acc += v * v;
    }
    float inv = 1.0f / sqrtf(vsum(acc) / (float)dim + eps);
    for (int i = 0; i < dim; i += LANES) vstore(out + i, vload(x + i) * inv * vload(weight + i));
}

/* -- matrix products -------------------------------------------------------------------------- */

/* This member's share of the rows of `w`: out[m][r] (+)= w[r] . acts[m] for every activation row. */
INLINE void product_part(const qmatrix *w, const qacts *a, int rows, float *out, size_t ostride,
                         int accumulate, int ith, int nth) {
    int groups = matrix_groups(w), per = (groups + nth - 1) / nth;
    int g0 = ith * per, g1 = g0 + per < groups ? g0 + per : groups;
    int nb = w->cols / QBLOCK;
    float res[TILE * GROUP];
    for (int g = g0; g < g1; g++) {
        const uint8_t *group = group_data(w, g);
        int n = w->rows - g * GROUP < GROUP ? w->rows - g * GROUP : GROUP;
        for (int m0 = 0; m0 < rows; m0 += TILE) {
            int mt = rows - m0 < TILE ? rows - m0 : TILE;
            group_dots(group, w->kind, nb, a, m0, mt, res);
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
    }
}

static TARGET void NAME(product_task)(void *ctx, int ith, int nth) {
    product *p = ctx;
    for (int m = ith; m < p->rows; m += nth) quantize_row(p->x + (size_t)m * p->w->cols, p->w->cols, &p->acts, m);
    pool_barrier(nth);
    product_part(p->w, &p->acts, p->rows, p->out, (size_t)p->w->rows, 0, ith, nth);
}

/* -- attention -------------------------------------------------------------------------------- */

/* Rotate each pair (v[2i], v[2i+1]) by the angle of position `pos` and frequency i. */
INLINE void rotate(const model *md, int pos, const float *v, float *out) {
    const float *rot = md->rope + (size_t)pos * md->head_dim;
    for (int i = 0; i < md->head_dim; i += 2) {
        float a = v[i], b = v[i + 1], c = rot[i], s = rot[i + 1];
        out[i] = a * c - b * s;
        out[i + 1] = a * s + b * c;
    }
}

INLINE uint16_t *cache_row(const model *md, int l, int kv, int g, int block, int offset) {
    size_t index = ((((size_t)l * 2 + kv) * md->n_kv_heads + g) * md->n_blocks + block) * md->block_size + offset;
    return md->kv + index * md->head_dim;
}

INLINE int slot_block(const step *s, int m, int t) {
    return s->tables[(size_t)m * s->table_stride + t / s->m->block_size];
}

/* Rotate the key of KV head g of row m and store it and the value in the row's cache slot. */
INLINE void store_kv(const step *s, int l, int m, int g) {
    const model *md = s->m;
    int hd = md->head_dim, pos = s->pos[m];
    const float *qkv = md->qkv + (size_t)m * md->layers[l].qkv.rows;
    const float *k = qkv + (size_t)(md->n_heads + g) * hd;
    const float *v = qkv + (size_t)(md->n_heads + md->n_kv_heads + g) * hd;
    float rotated[hd];
    rotate(md, pos, k, rotated);
    int block = slot_block(s, m, pos), offset = pos % md->block_size;
    uint16_t *kc = cache_row(md, l, 0, g, block, offset), *vc = cache_row(md, l, 1, g, block, offset);
    for (int i = 0; i < hd; i++) {
        kc[i] = float_to_bf16(rotated[i]);
        vc[i] = float_to_bf16(v[i]);
    }
}

/* Attention of query head h of row m over positions 0..pos of its sequence. */
INLINE void attend(const step *s, int l, int m, int h, float *scores) {
    const model *md = s->m;
    int hd = md->head_dim, pos = s->pos[m];
    int g = h / (md->n_heads / md->n_kv_heads);
    const float *qkv = md->qkv + (size_t)m * md->layers[l].qkv.rows;
    float q[hd];
    rotate(md, pos, qkv + (size_t)h * hd, q);
    float scale = 1.0f / sqrtf((float)hd);
    int bs = md->block_size;
    for (int t = 0; t <= pos; t++) {
        const uint16_t *k = cache_row(md, l, 0, g, slot_block(s, m, t), t % bs);
        vf acc = vsplat(0.0f);
        for (int i = 0; i < hd; i += LANES) acc += vload(q + i) * vbf16(k + i);
        scores[t] = vsum(acc) * scale;
    }
    int n = pos + 1, tail = n - n % LANES;
    vf top = vsplat(-INFINITY);
    for (int t = 0; t < tail; t += LANES) top = vmax(top, vload(scores + t));
    float best = vmaxall(top);
    for (int t = tail; t < n; t++) best = scores[t] > best ? scores[t] : best;
    vf total = vsplat(0.0f);
    for (int t = 0; t < tail; t += LANES) {
        vf e = vexp(vload(scores + t) - best);
        vstore(scores + t, e);
        total += e;
    }
    float sum = vsum(total);
    if (tail < n) {
        float rest[LANES];
        for (int j = 0; j < LANES; j++) rest[j] = tail + j < n ? scores[tail + j] - best : -INFINITY;
        vf e = vexp(vload(rest));
        vstore(rest, e);
        for (int j = 0; tail + j < n; j++) {
            scores[tail + j] = rest[j];
            sum += rest[j];
        }
    }
    float *out = md->attn + (size_t)m * md->n_heads * hd + (size_t)h * hd;
    vf acc[MAX_HEAD_DIM / LANES];
    for (int i = 0; i < hd / LANES; i++) acc[i] = vsplat(0.0f);
    for (int t = 0; t < n; t++) {
        const uint16_t *v = cache_row(md, l, 1, g, slot_block(s, m, t), t % bs);
        vf p = vsplat(scores[t]);
        for (int i = 0; i < hd / LANES; i++) acc[i] += p * vbf16(v + i * LANES);
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < hd / LANES; i++) vstore(out + i * LANES, acc[i] * inv);
}

/* -- the step --------------------------------------------------------------------------------- */

INLINE qacts step_acts(const model *md, int cols) {
    qacts a = {md->aq, md->ad, md->as, cols};
    return a;
}

INLINE void norm_and_quantize(const model *md, const float *x, const float *weight, qacts *a, int m, float *out) {
    float tmp[md->dim];
    float *h = out ? out : tmp;
    rms_norm(x, weight, md->dim, md->eps, h);
    quantize_row(h, md->dim, a, m);
}

/* silu(gate) * up for one row, quantised. */
INLINE void gated_and_quantize(const model *md, const float *gu, qacts *a, int m) {
    int nff = md->n_ff;
    float act[nff];
    for (int i = 0; i < nff; i += LANES) {
        vf g = vload(gu + i), u = vload(gu + nff + i);
        vstore(act + i, g / (1.0f + vexp(-g)) * u);
    }
    quantize_row(act, nff, a, m);
}

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

/* The output projection of `rows` hidden rows (already quantised into the step's activations), then
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

static TARGET void NAME(step_task)(void *ctx, int ith, int nth) {
    step *s = ctx;
    model *md = s->m;
    int rows = s->rows, dim = md->dim, adim = md->n_heads * md->head_dim;
    float *scores = md->scores + (size_t)ith * md->max_pos;
    qacts in = step_acts(md, dim), attn_in = step_acts(md, adim), ff_in = step_acts(md, md->n_ff);
    for (int l = 0; l < md->n_layers; l++) {
        const layer *L = &md->layers[l];
        for (int m = ith; m < rows; m += nth) norm_and_quantize(md, s->x + (size_t)m * dim, L->attn_norm, &in, m, NULL);
        pool_barrier(nth);
        product_part(&L->qkv, &in, rows, md->qkv, (size_t)L->qkv.rows, 0, ith, nth);
        pool_barrier(nth);
        for (int task = ith; task < rows * md->n_kv_heads; task += nth) {
            store_kv(s, l, task / md->n_kv_heads, task % md->n_kv_heads);
        }
        pool_barrier(nth);
        for (int task = ith; task < rows * md->n_heads; task += nth) {
            attend(s, l, task / md->n_heads, task % md->n_heads, scores);
        }
        pool_barrier(nth);
        for (int m = ith; m < rows; m += nth) quantize_row(md->attn + (size_t)m * adim, adim, &attn_in, m);
        pool_barrier(nth);
        product_part(&L->out, &attn_in, rows, s->x, (size_t)dim, 1, ith, nth);
        pool_barrier(nth);
        for (int m = ith; m < rows; m += nth) norm_and_quantize(md, s->x + (size_t)m * dim, L->ffn_norm, &in, m, NULL);
        pool_barrier(nth);
        product_part(&L->gate_up, &in, rows, md->gu, (size_t)L->gate_up.rows, 0, ith, nth);
        pool_barrier(nth);
        for (int m = ith; m < rows; m += nth) gated_and_quantize(md, md->gu + (size_t)m * L->gate_up.rows, &ff_in, m);
        pool_barrier(nth);
        product_part(&L->down, &ff_in, rows, s->x, (size_t)dim, 1, ith, nth);
        pool_barrier(nth);
    }
    for (int m = ith; m < rows; m += nth) {
        norm_and_quantize(md, s->x + (size_t)m * dim, md->out_norm, &in, m, md->hidden + (size_t)m * dim);
    }
    pool_barrier(nth);
    head_part(md, rows, md->hidden, s->logits, ith, nth);
}

static TARGET void NAME(logits_task)(void *ctx, int ith, int nth) {
    head_job *job = ctx;
    model *md = job->m;
    qacts in = step_acts(md, md->dim);
    for (int m = ith; m < job->rows; m += nth) quantize_row(job->hidden + (size_t)m * md->dim, md->dim, &in, m);
    pool_barrier(nth);
    head_part(md, job->rows, job->hidden, job->logits, ith, nth);
}

const isa_ops NAME(ops) = {NAME(step_task), NAME(product_task), NAME(logits_task)};
