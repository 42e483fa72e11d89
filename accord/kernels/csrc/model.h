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

/* The attention scores of one member: every head of a group, a whole number of cache blocks each. */
#define SCORE_STRIDE(md) (((size_t)(md)->max_pos + 15) / 16 * 16 * ((md)->n_heads / (md)->n_kv_heads))
/* A decode row's sequence is attended to in spans of this many positions, merged after (forward.h). */
#define SPAN 256
/* Positions in a cache block: a block's keys are one vector of 16 positions per dimension. */
#define CACHE_BLOCK 16
/* Prompt rows that attend together (forward.h, attend_run): each block of keys and values read once for
 * all of them. A run's scores (rows x heads of a group x its longest span) fit in a member's share,
 * MEMBER_SCORES floats: up to RUN_ROWS rows while their spans are at most RUN_SPAN positions, fewer
 * past that (down to one row, for which SCORE_STRIDE suffices), so that a model with a long context
 * and many threads does not hold RUN_ROWS times its longest scores per member. */
#define RUN_ROWS 16
#define RUN_SPAN 4096
#define MEMBER_SCORES(md) \
    (SCORE_STRIDE(md) > (size_t)RUN_ROWS * RUN_SPAN * ((md)->n_heads / (md)->n_kv_heads) \
         ? SCORE_STRIDE(md) \
         : (size_t)RUN_ROWS * RUN_SPAN * ((md)->n_heads / (md)->n_kv_heads))
/* Prompt rows on AMX tiles (amx.h): the float activations of a product split into three bf16 planes
 * of rows padded to a multiple of 16, then each row's sums per block of 32, shared by the team. */
#define SPLIT_ROWS(rows) (((rows) + 15) / 16 * 16)
#define SPLIT_PLANES_BYTES(rows, cols) ((size_t)SPLIT_ROWS(rows) * (size_t)(cols) * 3 * sizeof(uint16_t))
#define SPLIT_BYTES(rows, cols) \
    (SPLIT_PLANES_BYTES(rows, cols) + (size_t)SPLIT_ROWS(rows) * (size_t)((cols) / QBLOCK) * sizeof(float))
/* Groups of weights an AMX member unpacks at a time (amx.h), and a member's scratch for unpacked
 * weights, in floats: two groups as float32, or AMX_GROUPS groups as bf16 tiles (cols * 32 bytes each). */
#define AMX_GROUPS 16
#define UNPACKED_FLOATS(cols, amx) ((amx) ? (size_t)AMX_GROUPS * (size_t)(cols) * 8 : (size_t)2 * (size_t)(cols) * GROUP)
/* The most query heads one KV head may serve. */
#define MAX_GROUP 8

typedef struct {
    int n_layers, dim, n_heads, n_kv_heads, head_dim, n_ff;
    float eps;
    layer *layers;
    const float *out_norm;
    qmatrix embed; /* the token table: row t is token t's embedding */
    qmatrix head;
    const float *rope; /* [max_pos][head_dim / 2][2]: cos and sin of each position and frequency */
    int max_pos;
    uint16_t *kv;      /* bf16 [n_layers][2][n_kv_heads][n_blocks][block_size][head_dim] */
    int n_blocks, block_size;
    /* How many of each row's leading logits are recomputed exactly (forward.h, head_part). */
    int refine_top;
    /* The widest input of any matrix (dim, n_ff or n_heads * head_dim). */
    int widest;
    /* Scratch for a step, grown to fit its rows (and the team: attention scores, unpacked groups). */
    int cap_rows, cap_logits, cap_threads;
    int8_t *aq;
    float *ad, *as, *x, *h, *qkv, *attn, *gu, *hidden, *scores, *unpacked;
    float *partials; /* per decode row, span and head: output, largest score, sum (hd + 2 floats) */
    uint8_t *split;  /* AMX only: a prompt product's split activations (SPLIT_BYTES of the widest) */
} model;

/* One step: `rows` tokens of one or more sequences. Every row stores its key and value first, then
 * attends over positions 0..pos of its own sequence, so the rows of a prompt chunk may share a step. */
typedef struct {
    model *m;
    int rows;
    int precise;              /* prompt rows: float32 activations (else quantised to 8 bits) */
    float *x;                 /* [rows][dim] the residual stream (scratch) */
    const int32_t *ids;       /* [rows] the tokens */
    const int32_t *pos;       /* [rows] position of each token */
    const int32_t *tables;    /* [tables][table_stride] each sequence's cache blocks, in order */
    int table_stride;
    const int32_t *row_table; /* [rows] the table of each row's sequence */
    const int32_t *logit_rows;/* [n_logits] the rows whose logits are wanted */
    const int32_t *spans;     /* [rows + 1] decode rows: where each row's spans start in the count of all */
    int n_logits;
    float *logits;            /* [n_logits][head.rows] out */
} step;

/* The output projection of given hidden rows (a prompt's last rows), leaders refined. */
typedef struct {
    model *m;
    int rows;
    const float *hidden;    /* [rows][dim] final normalised hidden states */
    float *logits;          /* [rows][head.rows] out */
} head_job;

/* One matrix product: out[m][r] = x[m] . w[r] for `rows` activation rows (8-bit activations: quantised
 * into `acts` first; float32: against groups unpacked into `scratch`, cols * GROUP floats a member). */
typedef struct {
    const qmatrix *w;
    int rows;
    const float *x;
    float *out;
    qacts acts;
    float *scratch;
    uint8_t *split; /* AMX, float32: SPLIT_BYTES(rows, cols) */
} product;

/* What each instruction set provides, each run by every member of the team. */
typedef struct {
    void (*step)(void *ctx, int ith, int nth);       /* step */
    void (*product)(void *ctx, int ith, int nth);    /* product */
    void (*float_product)(void *ctx, int ith, int nth); /* product */
    void (*logits)(void *ctx, int ith, int nth);     /* head_job */
} isa_ops;

extern const isa_ops ops_generic, ops_avx2, ops_avx512, ops_amx;

/* Whether the CPU has AMX tiles with bf16 and the kernel lets this process use them (asked once). */
int amx_usable(void);

#endif
