/* The decode kernels' thread team.
 *
 * Theory of operation. A step of the model is one task that every member runs from start to end,
 * meeting at barriers between its phases (a matmul's rows split between members, then the next op),
 * so a step wakes the team once instead of once per op. Between phases a member spins: a phase lasts
 * microseconds, far less than a sleep and a wake-up. Between tasks a member spins a little longer
 * (SPIN_NS: the engine's own work between two steps is about that long), then sleeps on a condition
 * variable, so an idle engine uses no CPU.
 *
 * A member that spins on a machine with more runnable threads than cores yields after YIELD_SPINS
 * rounds, so the member it waits for can run.
 *
 * Work sharing (pool_share, pool_claim). A claim is an atomic add on a counter that only its owner
 * touches until its share is done, so the common case stays on the owner's cache line. Phases use two
 * sets of counters in turn: while a phase runs on one set, each member zeroes its own counter in the
 * other, which no member can still be reading (the barrier before this phase ended the last one that
 * used it).
 *
 * Tasks run one at a time: a second caller (another engine's thread) waits for the first to finish.
 *
 * After fork() the child has no members but itself (threads do not survive a fork); the team is
 * rebuilt at its next use.
 */
#define _GNU_SOURCE
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 256
#define SPIN_NS 0L
#define YIELD_SPINS 4096

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t running = PTHREAD_MUTEX_INITIALIZER; /* one task at a time, whoever calls */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t members[MAX_THREADS];
static int size = 1;      /* members, the caller included */
static int started = 0;   /* threads running (size - 1 once built) */
static int wanted = 1;    /* size asked for; the team is rebuilt to it at the next run */
static atomic_uint generation;
static unsigned built_generation;
static atomic_int finished;
static atomic_int stopping;
static pool_task current_task;
static void *current_ctx;

static atomic_int barrier_count;
static atomic_uint barrier_phase;

typedef struct {
    _Alignas(64) atomic_int next;
} claim_counter;
static claim_counter claims[2][MAX_THREADS];
static __thread int shared_phases; /* pool_share() calls by this member in the current task */

int pool_share(int ith) {
    int set = shared_phases++ & 1;
    atomic_store_explicit(&claims[set ^ 1][ith].next, 0, memory_order_relaxed);
    return set;
}

int pool_claim(int set, int owner) { return atomic_fetch_add_explicit(&claims[set][owner].next, 1, memory_order_relaxed); }

/* Before a task: every member's first phase finds its counters at zero. */
static void start_task(void) {
    for (int i = 0; i < size; i++) atomic_store_explicit(&claims[0][i].next, 0, memory_order_relaxed);
}

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

void pool_barrier(int nth) {
    if (nth <= 1) return;
    unsigned phase = atomic_load_explicit(&barrier_phase, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&barrier_count, 1, memory_order_acq_rel) == nth - 1) {
        atomic_store_explicit(&barrier_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&barrier_phase, 1, memory_order_release);
        return;
    }
    for (unsigned spins = 1; atomic_load_explicit(&barrier_phase, memory_order_acquire) == phase; spins++) {
        relax();
        if (spins % YIELD_SPINS == 0) sched_yield();
    }
}

static void *member_main(void *arg) {
    int ith = (int)(intptr_t)arg;
    /* The generation when the team was built: a task posted before this thread first runs is still
     * seen as new. */
    unsigned seen = built_generation;
    for (;;) {
        /* Spin for a while, then sleep until the next task. */
        long deadline = now_ns() + SPIN_NS;
        unsigned spins = 0;
        while (atomic_load_explicit(&generation, memory_order_acquire) == seen) {
            relax();
            if (++spins % 256 == 0 && now_ns() > deadline) {
                pthread_mutex_lock(&mutex);
                while (atomic_load_explicit(&generation, memory_order_acquire) == seen) {
                    pthread_cond_wait(&wake, &mutex);
                }
                pthread_mutex_unlock(&mutex);
                break;
            }
        }
        seen = atomic_load_explicit(&generation, memory_order_acquire);
        if (atomic_load_explicit(&stopping, memory_order_acquire)) {
            atomic_fetch_add_explicit(&finished, 1, memory_order_acq_rel);
            return NULL;
        }
        shared_phases = 0;
        current_task(current_ctx, ith, size);
        atomic_fetch_add_explicit(&finished, 1, memory_order_acq_rel);
    }
}

static void wake_members(void) {
    pthread_mutex_lock(&mutex);
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&mutex);
}

static void wait_members(void) {
    for (unsigned spins = 1; atomic_load_explicit(&finished, memory_order_acquire) < started; spins++) {
        relax();
        if (spins % YIELD_SPINS == 0) sched_yield();
    }
}

static void stop_members(void) {
    if (started == 0) return;
    atomic_store_explicit(&finished, 0, memory_order_relaxed);
    atomic_store_explicit(&stopping, 1, memory_order_release);
    wake_members();
    wait_members();
    for (int i = 1; i <= started; i++) pthread_join(members[i], NULL);
    atomic_store_explicit(&stopping, 0, memory_order_relaxed);
    started = 0;
    size = 1;
}

static void build(void) {
    stop_members();
    built_generation = atomic_load_explicit(&generation, memory_order_acquire);
    for (int i = 1; i < wanted; i++) {
        if (pthread_create(&members[i], NULL, member_main, (void *)(intptr_t)i) != 0) break;
        started++;
    }
    size = started + 1;
    wanted = size; /* a team that could not be built whole is not retried at every run */
}

static void after_fork_child(void) {
    /* The threads are gone; their handles mean nothing here. */
    started = 0;
    size = 1;
    pthread_mutex_init(&mutex, NULL);
    pthread_mutex_init(&running, NULL);
    pthread_cond_init(&wake, NULL);
    atomic_store(&barrier_count, 0);
}

int pool_set_threads(int n) {
    static int registered = 0;
    if (!registered) {
        pthread_atfork(NULL, NULL, after_fork_child);
        registered = 1;
    }
    wanted = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
    return wanted;
}

int pool_threads(void) { return wanted; }

void pool_run(pool_task task, void *ctx) {
    pthread_mutex_lock(&running);
    if (size != wanted || started != size - 1) build();
    start_task();
    shared_phases = 0;
    if (started == 0) {
        task(ctx, 0, 1);
    } else {
        current_task = task;
        current_ctx = ctx;
        atomic_store_explicit(&finished, 0, memory_order_relaxed);
        wake_members(); /* its mutex orders start_task()'s stores before the members' first claims */
        task(ctx, 0, size);
        wait_members();
    }
    pthread_mutex_unlock(&running);
}
