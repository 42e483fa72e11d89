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

/* The token chosen for each of `rows` rows of `vocab` logits into `chosen`, the rows shared among the
 * kernels' thread team (idle between steps). Returns 0, or -1 when scratch memory could not be had. */
int sample_rows(const float *logits, int rows, int vocab, const sampling_params *p, int *chosen);

#endif
