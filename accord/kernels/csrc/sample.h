/* Choosing a row's next token (sample.c). */
#ifndef ACCORD_SAMPLE_H
#define ACCORD_SAMPLE_H

#include <stdint.h>

typedef struct {
    float temperature; /* <= 0: greedy */
    double top_p;      /* >= 1: off */
    int top_k;         /* <= 0: off */
    uint64_t seed;
    int64_t step;      /* index of the token being chosen within its request */
} sampling_params;

/* The token chosen from one row of `vocab` logits; `scores` and `order` are scratch of vocab each. */
int sample_row(const float *logits, int vocab, const sampling_params *p, float *scores, int *order);

#endif
