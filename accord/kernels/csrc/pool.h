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

/* Work sharing inside a task, for a phase split into shares (one per member) that are claimed a unit
 * at a time: each member works through its own share, then through the others' leftovers, so a
 * member that was descheduled (more runnable threads than cores) holds the others up for one unit,
 * not for its whole share. Every member calls pool_share() once per such phase, in the same order,
 * and the phases are separated by barriers; it returns the phase's claim set for pool_claim(). */
int pool_share(int ith);

/* The next unit of owner's share in the phase with claim set `set`: 0, 1, 2, ... (past the share's
 * end once it is all claimed). */
int pool_claim(int set, int owner);

#endif
