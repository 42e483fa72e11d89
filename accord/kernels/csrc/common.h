/* Shared definitions of the decode kernels: block formats, half-precision conversion, and the portable
 * vector type the non-matmul ops are written in.
 *
 * Every op is written once. The files per instruction set (isa_generic.c, isa_avx2.c, isa_avx512.c)
 * include forward.h with their own TARGET attribute, so the same source is compiled three times: the
 * portable vector type below becomes four SSE registers, two AVX registers or one AVX-512 register.
 * Only the integer dot product of a weight block and an activation block is written with intrinsics.
 *
 * The extension is built with -ffp-contract=off: a multiply and an add are never fused behind the
 * code's back, so a row's numbers follow one fixed sequence of operations whatever the batch holds.
 */
#ifndef ACCORD_COMMON_H
#define ACCORD_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define QBLOCK 32
/* A head's width is a multiple of 16 and at most this (checked when the model is built). */
#define MAX_HEAD_DIM 256

/* Weight kinds, as GGML stores them (one block covers 32 consecutive weights of a row):
 *   Q4_0, 18 bytes: fp16 d, 16 bytes of nibbles; w = d * (q - 8)
 *   Q4_1, 20 bytes: fp16 d, fp16 m, 16 bytes of nibbles; w = d * q + m
 *   Q8_0, 34 bytes: fp16 d, 32 signed bytes; w = d * q
 * In the nibble bytes, byte j holds weight j in its low half and weight j + 16 in its high half. */
enum qkind { KIND_Q4_0 = 0, KIND_Q4_1 = 1, KIND_Q8_0 = 2 };

static inline size_t block_bytes(int kind) { return kind == KIND_Q4_0 ? 18 : kind == KIND_Q4_1 ? 20 : 34; }

/* The packed layout the kernels read. Rows go in groups of GROUP (the last group padded with zero rows);
 * a group's blocks follow one another, and one block of a group is
 *   d[GROUP] fp16, then (Q4_1) m[GROUP] fp16, then the weights in 4-byte runs:
 *   for each run k: GROUP rows x 4 bytes (row i's bytes 4k .. 4k + 3 of its block).
 * Q4 blocks have 4 runs of their nibble bytes (the low halves are weights 4k .. 4k + 3, the high
 * halves 4k + 16 .. 4k + 19); Q8_0 blocks have 8 runs of their signed bytes. So one vector load gives
 * the same four weights of 16 rows, and a block's dot products for 16 rows are a few vector ops with
 * no horizontal sum. The size is that of the GGML blocks, padding aside. */
#define GROUP 16

static inline size_t group_block_bytes(int kind) {
    return kind == KIND_Q4_0 ? GROUP * 18 : kind == KIND_Q4_1 ? GROUP * 20 : GROUP * 34;
}

static inline size_t scales_bytes(int kind) { return kind == KIND_Q4_1 ? GROUP * 4 : GROUP * 2; }

/* How far ahead of the block it multiplies a decode product asks for weights, in bytes: 4 to 7 blocks
 * of a group. A member walks its groups in memory order, and one decode row's product waits on memory;
 * why 2048 and what it gained: docs/architecture.md, "The embedded engine's threads". */
#define PREFETCH_AHEAD 2048

/* Asks for the block of `gb` bytes that lies PREFETCH_AHEAD bytes past `blk`. A prefetch never faults,
 * so past a matrix's end it only reads what follows or nothing. */
static inline void prefetch_ahead(const uint8_t *blk, size_t gb) {
    uintptr_t at = (uintptr_t)blk + PREFETCH_AHEAD;
    for (size_t o = 0; o < gb; o += 64) __builtin_prefetch((const void *)(at + o), 0, 3);
}

/* A matrix of `rows` rows of `cols` weights in the packed layout. */
typedef struct {
    const uint8_t *data;
    int kind;
    int rows;
    int cols;
} qmatrix;

static inline int matrix_groups(const qmatrix *w) { return (w->rows + GROUP - 1) / GROUP; }

static inline const uint8_t *group_data(const qmatrix *w, int g) {
    return w->data + (size_t)g * (w->cols / QBLOCK) * group_block_bytes(w->kind);
}

/* Activations quantised per block of 32: q = round(x / d), d = max|x| / 127, s = d * sum(q).
 * Rows are `cols` apart in q and `cols / 32` apart in d and s. */
typedef struct {
    int8_t *q;
    float *d;
    float *s;
    int cols;
} qacts;

static inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3FF) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t read_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* bf16 as torch rounds it: to nearest, ties to even (NaN stays NaN). */
static inline uint16_t float_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((bits >> 16) | 0x40);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static inline float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
