/* The model a decode step runs: a Llama-family stack of layers whose matrices are GGML blocks. */
#ifndef ACCORD_MODEL_H
#define ACCORD_MODEL_H

#include "common.h"

typedef struct {
    const float *attn_norm;
    const float *ffn_norm;
    qmatrix qkv;     /* Q, K and V stacked by rows */
    qmatrix out;
    qmatrix gate_up; /* gate, then up */
    qmatrix down;
} layer;

typedef struct {
    int n_layers, dim, n_heads, n_kv_heads, head_dim, n_ff;
    float eps;
    layer *layers;
    const float *out_norm;
    qmatrix head;
    const float *rope; /* [max_pos][head_dim / 2][2]: cos and sin of each position and frequency */
    int max_pos;
    uint16_t *kv;      /* bf16 [n_layers][2][n_kv_heads][n_blocks][block_size][head_dim] */
    int n_blocks, block_size;
    /* How many of each row's leading logits are recomputed exactly (forward.h, head_part). */
    int refine_top;
    /* Scratch for a step, grown to fit its rows (and the team, for the attention scores). */
    int cap_rows, cap_threads;
    int8_t *aq;
    float *ad, *as, *qkv, *attn, *gu, *hidden, *scores;
} model;

/* One decode step: `rows` tokens, each of its own sequence. */
typedef struct {
    model *m;
    int rows;
    float *x;               /* [rows][dim] embeddings in, the residual stream while it runs */
    const int32_t *pos;     /* [rows] position of each token */
    const int32_t *tables;  /* [rows][table_stride] each sequence's cache blocks, in order */
    int table_stride;
    float *logits;          /* [rows][head.rows] out */
} step;

/* The output projection of given hidden rows (a prompt's last rows), leaders refined. */
typedef struct {
    model *m;
    int rows;
    const float *hidden;    /* [rows][dim] final normalised hidden states */
    float *logits;          /* [rows][head.rows] out */
} head_job;

/* One matrix product: out[m][r] = x[m] . w[r] for `rows` activation rows, activations quantised first. */
typedef struct {
    const qmatrix *w;
    int rows;
    const float *x;
    float *out;
    qacts acts;
} product;

/* What each instruction set provides, each run by every member of the team. */
typedef struct {
    void (*step)(void *ctx, int ith, int nth);       /* step */
    void (*product)(void *ctx, int ith, int nth);    /* product */
    void (*logits)(void *ctx, int ith, int nth);     /* head_job */
} isa_ops;

extern const isa_ops ops_generic, ops_avx2, ops_avx512;

#endif
