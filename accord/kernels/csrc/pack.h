/* Moving matrices between GGML's blocks, the packed layout (common.h) and float32 rows. */
#ifndef ACCORD_PACK_H
#define ACCORD_PACK_H

#include "common.h"

size_t packed_size(int kind, int rows, int cols);

/* Packs GGML rows [rows][cols / 32 blocks] into `out` (packed_size bytes), on the thread team. */
void pack_matrix(const uint8_t *raw, int kind, int rows, int cols, uint8_t *out);

/* Row r of a packed matrix as float32, exactly as ggml defines its blocks. */
void unpack_row(const qmatrix *w, int r, float *out);

/* Every row ([rows][cols] float32), on the thread team. */
void unpack_matrix(const qmatrix *w, float *out);

#endif
