/* The decode kernels for any x86-64 CPU (SSE2), and the reference the faster ones are tested against. */
#define TARGET
#define NAME(x) x##_generic
#define TILE 4

#define LANES 4
#include "vec.h"

/* res[t][i] = row i of the group . activation row m0 + t, for t < mt (see forward.h). */
static inline __attribute__((always_inline)) void dots(const uint8_t *group, const int kind, int nb, const qacts *a,
                                                       int m0, const int mt, float *res) {
    size_t gb = group_block_bytes(kind), sb = scales_bytes(kind);
    for (int j = 0; j < mt * GROUP; j++) res[j] = 0.0f;
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = group + b * gb, *runs = blk + sb;
        prefetch_ahead(blk, gb);
        float d[GROUP], m[GROUP];
        for (int i = 0; i < GROUP; i++) {
            d[i] = half_to_float(read_u16(blk + 2 * i));
            m[i] = kind == KIND_Q4_1 ? half_to_float(read_u16(blk + 2 * GROUP + 2 * i))
                   : kind == KIND_Q4_0 ? -8.0f * d[i]
                                       : 0.0f;
        }
        for (int t = 0; t < mt; t++) {
            int row = m0 + t;
            const int8_t *x = a->q + (size_t)row * a->cols + b * QBLOCK;
            float da = a->d[(size_t)row * nb + b], sa = a->s[(size_t)row * nb + b];
            for (int i = 0; i < GROUP; i++) {
                int32_t sum = 0;
                if (kind == KIND_Q8_0) {
                    for (int k = 0; k < 8; k++) {
                        const int8_t *w = (const int8_t *)(runs + k * GROUP * 4 + 4 * i);
                        for (int j = 0; j < 4; j++) sum += w[j] * x[4 * k + j];
                    }
                } else {
                    for (int k = 0; k < 4; k++) {
                        const uint8_t *w = runs + k * GROUP * 4 + 4 * i;
                        for (int j = 0; j < 4; j++) sum += (w[j] & 0x0F) * x[4 * k + j] + (w[j] >> 4) * x[16 + 4 * k + j];
                    }
                }
                float *acc = res + t * GROUP + i;
                *acc = *acc + (float)sum * (d[i] * da);
                *acc = *acc + m[i] * sa;
            }
        }
    }
}

/* res[t][i] = x[m0 + t] . row i of the group, from the group unpacked weight-major (wf[k][GROUP]). */
static inline __attribute__((always_inline)) void float_dots(const float *wf, int cols, const float *x, size_t xstride,
                                                             int m0, const int mt, float *res) {
    for (int t = 0; t < mt; t++) {
        const float *row = x + (size_t)(m0 + t) * xstride;
        vf acc[GROUP / LANES];
        for (int c = 0; c < GROUP / LANES; c++) acc[c] = vsplat(0.0f);
        for (int k = 0; k < cols; k++) {
            vf xk = vsplat(row[k]);
            for (int c = 0; c < GROUP / LANES; c++) acc[c] = acc[c] + xk * vload(wf + (size_t)k * GROUP + c * LANES);
        }
        for (int c = 0; c < GROUP / LANES; c++) vstore(res + t * GROUP + c * LANES, acc[c]);
    }
}

#include "forward.h"
