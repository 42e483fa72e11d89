/* GGML blocks -> the packed layout -> float32. See common.h for both layouts. */
#include "pack.h"

#include "pool.h"

size_t packed_size(int kind, int rows, int cols) {
    return (size_t)((rows + GROUP - 1) / GROUP) * (size_t)(cols / QBLOCK) * group_block_bytes(kind);
}

static void pack_block(const uint8_t *src, int kind, int i, uint8_t *dst) {
    memcpy(dst + 2 * i, src, 2); /* d */
    const uint8_t *weights = src + 2;
    uint8_t *runs = dst + scales_bytes(kind);
    if (kind == KIND_Q4_1) {
        memcpy(dst + 2 * GROUP + 2 * i, src + 2, 2); /* m */
        weights = src + 4;
    }
    int n_runs = kind == KIND_Q8_0 ? 8 : 4;
    for (int k = 0; k < n_runs; k++) memcpy(runs + (size_t)k * GROUP * 4 + 4 * i, weights + 4 * k, 4);
}

typedef struct {
    const uint8_t *raw;
    int kind, rows, cols;
    uint8_t *out;
} pack_job;

static void pack_task(void *ctx, int ith, int nth) {
    pack_job *job = ctx;
    int nb = job->cols / QBLOCK, groups = (job->rows + GROUP - 1) / GROUP;
    size_t bb = block_bytes(job->kind), gb = group_block_bytes(job->kind);
    for (int g = ith; g < groups; g += nth) {
        uint8_t *group = job->out + (size_t)g * nb * gb;
        memset(group, 0, (size_t)nb * gb); /* rows past the end stay zero: d = 0 */
        for (int i = 0; i < GROUP && g * GROUP + i < job->rows; i++) {
            const uint8_t *row = job->raw + (size_t)(g * GROUP + i) * nb * bb;
            for (int b = 0; b < nb; b++) pack_block(row + b * bb, job->kind, i, group + b * gb);
        }
    }
}

void pack_matrix(const uint8_t *raw, int kind, int rows, int cols, uint8_t *out) {
    pack_job job = {raw, kind, rows, cols, out};
    pool_run(pack_task, &job);
}

void unpack_row(const qmatrix *w, int r, float *out) {
    int nb = w->cols / QBLOCK, i = r % GROUP;
    const uint8_t *group = group_data(w, r / GROUP);
    size_t gb = group_block_bytes(w->kind);
    for (int b = 0; b < nb; b++, out += QBLOCK) {
        const uint8_t *blk = group + b * gb, *runs = blk + scales_bytes(w->kind);
        float d = half_to_float(read_u16(blk + 2 * i));
        if (w->kind == KIND_Q8_0) {
            for (int k = 0; k < 8; k++) {
                const int8_t *q = (const int8_t *)(runs + k * GROUP * 4 + 4 * i);
                for (int j = 0; j < 4; j++) out[4 * k + j] = d * (float)q[j];
            }
            continue;
        }
        for (int k = 0; k < 4; k++) {
            const uint8_t *q = runs + k * GROUP * 4 + 4 * i;
            for (int j = 0; j < 4; j++) {
                if (w->kind == KIND_Q4_1) {
                    float m = half_to_float(read_u16(blk + 2 * GROUP + 2 * i));
                    out[4 * k + j] = d * (float)(q[j] & 0x0F) + m;
                    out[16 + 4 * k + j] = d * (float)(q[j] >> 4) + m;
                } else {
                    out[4 * k + j] = d * (float)((q[j] & 0x0F) - 8);
                    out[16 + 4 * k + j] = d * (float)((q[j] >> 4) - 8);
                }
            }
        }
    }
}

typedef struct {
    const qmatrix *w;
    float *out;
} unpack_job;

static void unpack_task(void *ctx, int ith, int nth) {
    unpack_job *job = ctx;
    int per = (job->w->rows + nth - 1) / nth;
    int r1 = (ith + 1) * per < job->w->rows ? (ith + 1) * per : job->w->rows;
    for (int r = ith * per; r < r1; r++) unpack_row(job->w, r, job->out + (size_t)r * job->w->cols);
}

void unpack_matrix(const qmatrix *w, float *out) {
    unpack_job job = {w, out};
    pool_run(unpack_task, &job);
}
