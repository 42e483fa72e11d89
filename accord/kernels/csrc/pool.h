/* A fixed team of threads that run one task together, and the barrier they meet at inside it. */
#ifndef ACCORD_POOL_H
#define ACCORD_POOL_H

typedef void (*pool_task)(void *ctx, int ith, int nth);

/* Sets the team's size (the calling thread counts as one); returns the size in effect. */
int pool_set_threads(int n);
int pool_threads(void);

/* Runs task(ctx, ith, nth) on every member, the caller as ith 0; returns when all have returned.
 * Callers on other threads wait their turn. */
void pool_run(pool_task task, void *ctx);

/* Inside a task: waits until all nth members have arrived. */
void pool_barrier(int nth);

#endif
