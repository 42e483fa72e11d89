/* Choosing a row's next token: greedy, or a Gumbel-max draw over the tokens top-k / top-p keep.
 *
 * The rules are those of accord/kernels/sampling.py (filter_logits): scores are logits / T; top-k keeps
 * the k best; top-p then keeps the best tokens while the probability mass before each (softmax over
 * what top-k kept) is below top_p. The draw is argmax(score + Gumbel noise) over the kept tokens, the
 * noise of token v a pure function of (seed, step, v) -- the same splitmix64 stream as the CUDA kernel
 * in accord/kernels/cuda.py, so a seed draws the same token on either device from the same logits.
 *
 * Why here: with SmolLM2's defaults (T 0.2, top-p 0.9) torch sorted the whole vocabulary for every
 * token, ~4.6 ms a row -- as long as the model step. Here the nucleus is found among the best few
 * tokens (a partial selection, widened only while the mass it holds is below top_p).
 *
 * Three more things keep a row's cost far below a step's (it runs on the engine thread, between steps):
 *   - argmax is a vector max and then a search for its first index, and the partial selection skips
 *     32 tokens at a time where none is above its least;
 *   - the softmax's total skips the tokens whose term is below what a double can hold next to the
 *     best token's 1 (exp(-60) < 1e-26: their sum over any vocabulary changes nothing);
 *   - a draw over the whole vocabulary computes a token's Gumbel noise only if the token could still
 *     win (could_win below); the others are refused by comparing their uniform with a table.
 */
#include "sample.h"

#include "pool.h"

/* The portable vectors (SSE2 width: this file is built for every x86-64 CPU). */
#define TARGET
#define LANES 4
#include "vec.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

static uint64_t splitmix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* log(-log(u)), minus the Gumbel noise of token v, for the uniform u in (0, 1) that (key, v) gives. */
static float neg_gumbel(uint64_t key, int v) {
    uint64_t h = splitmix(key + (uint64_t)v);
    double u = ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return (float)log(-log(u));
}

/* Better of two (score, index) pairs: higher score, then lower index. */
static int better(float s, int i, float best, int best_i) { return s > best || (s == best && i < best_i); }

/* The largest of `from` and x[0..n) (n a multiple of LANES), NaNs passed over: a value replaces the
 * lane's best only when it compares above it, as in the plain loop `if (x[i] > top) top = x[i]`. */
static float stretch_max(const float *x, int n, float from) {
    vf top = vsplat(from);
    for (int i = 0; i < n; i += LANES) top = vmax(vload(x + i), top);
    return vmaxall(top);
}

/* The first index of the largest value, NaNs passed over (0 when every value is NaN). */
static int argmax(const float *x, int n) {
    int bulk = n - n % LANES;
    float top = stretch_max(x, bulk, -INFINITY);
    for (int i = bulk; i < n; i++) top = x[i] > top ? x[i] : top;
    for (int i = 0; i < n; i++) {
        if (x[i] == top) return i;
    }
    return 0;
}

/* Terms exp(s - top) below exp(-SKIP) are left out of a softmax's total (see the header). */
#define SKIP 60.0f

/* The sum of exp(s[i] - top): the terms in float32 (vexp, about 1e-7 relative, as the torch reference's
 * own float32 softmax), added up in double. */
static double softmax_total(const float *s, int n, float top) {
    double lane[LANES] = {0.0}, total = 0.0; /* a sum per lane: independent adds, not one long chain */
    vf t = vsplat(top), floor = vsplat(-SKIP);
    int i = 0;
    for (; i + LANES <= n; i += LANES) {
        vf d = vload(s + i) - t;
        float terms[LANES];
        vstore(terms, vselect(d > floor, vexp(d), vsplat(0.0f)));
        for (int j = 0; j < LANES; j++) lane[j] += terms[j];
    }
    for (int j = 0; j < LANES; j++) total += lane[j];
    for (; i < n; i++) {
        if (s[i] - top > -SKIP) total += expf(s[i] - top);
    }
    return total;
}

/* Whether token i, with score s at `gap` = best - s >= 0 below the best noisy score so far, could
 * still beat it, judged from its uniform alone.
 *
 * It wins when s + g > best, g = -log(-log(u)): when -log(u) < exp(-gap). Since -log(u) >= 1 - u, it
 * cannot when 1 - u >= exp(-gap). With k = floor(gap), exp(-gap) <= exp(-k), so a token is refused
 * when 1 - u >= exp(-k) * (1 + 1e-3): the margin covers the float rounding of the scores and of the
 * reference's own sum, which is far smaller. 1 - u is (2^53 - (h >> 11) - 0.5) / 2^53 exactly. */
#define GAPS 38 /* exp(-38) * 2^53 < 0.5: from a gap of 38 on, no uniform can win */
static double refuse_from[GAPS]; /* 2^53 * (1 - u) at and above which gap k refuses */
static pthread_once_t refusals_once = PTHREAD_ONCE_INIT;

static void fill_refusals(void) {
    for (int k = 0; k < GAPS; k++) refuse_from[k] = exp(-(double)k) * (1.0 + 1e-3) * 9007199254740992.0;
}

static int could_win(uint64_t h, float gap) {
    if (!(gap < (float)GAPS)) return 0;
    int k = gap > 0.0f ? (int)gap : 0;
    double r = (double)((1ull << 53) - (h >> 11)) - 0.5;
    return r < refuse_from[k];
}

/* Indices of the k largest scores, best first (ties: lower index first). */
static void best_k(const float *s, int n, int k, int *out) {
    /* A min-heap of the k best so far, then sorted. */
    int size = 0;
    for (int i = 0; i < n; i++) {
        if (size == k) {
            int least = out[0];
            if (i % 32 == 0 && i + 32 <= n) { /* skip a stretch with nothing above the least */
                if (!(stretch_max(s + i, 32, -INFINITY) > s[least])) {
                    i += 31;
                    continue;
                }
            }
            if (!(s[i] > s[least])) continue;
            out[0] = i;
            for (int c = 0;;) {
                int l = 2 * c + 1, r = l + 1, m = c;
                if (l < k && (s[out[l]] < s[out[m]] || (s[out[l]] == s[out[m]] && out[l] > out[m]))) m = l;
                if (r < k && (s[out[r]] < s[out[m]] || (s[out[r]] == s[out[m]] && out[r] > out[m]))) m = r;
                if (m == c) break;
                int t = out[m];
                out[m] = out[c];
                out[c] = t;
                c = m;
            }
            continue;
        }
        int c = size++;
        out[c] = i;
        while (c > 0) {
            int p = (c - 1) / 2;
            if (!(s[out[c]] < s[out[p]] || (s[out[c]] == s[out[p]] && out[c] > out[p]))) break;
            int t = out[p];
            out[p] = out[c];
            out[c] = t;
            c = p;
        }
    }
    /* Heap sort, least first into the end: leaves out[0..k) best first. */
    for (int end = k - 1; end > 0; end--) {
        int t = out[0];
        out[0] = out[end];
        out[end] = t;
        for (int c = 0;;) {
            int l = 2 * c + 1, r = l + 1, m = c;
            if (l < end && (s[out[l]] < s[out[m]] || (s[out[l]] == s[out[m]] && out[l] > out[m]))) m = l;
            if (r < end && (s[out[r]] < s[out[m]] || (s[out[r]] == s[out[m]] && out[r] > out[m]))) m = r;
            if (m == c) break;
            t = out[m];
            out[m] = out[c];
            out[c] = t;
            c = m;
        }
    }
}

static int sample_row(const float *logits, int vocab, const sampling_params *p, float *scores, int *order) {
    if (p->temperature <= 0.0f) return argmax(logits, vocab);
    /* A NaN logit becomes -inf here, once: never drawn, and every comparison below stays ordered. */
    for (int i = 0; i < vocab; i++) {
        float v = logits[i] / p->temperature;
        scores[i] = v == v ? v : -INFINITY;
    }
    int limit = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
    int kept = limit;
    if (p->top_p < 1.0) {
        /* The nucleus: widen the partial selection until the mass it holds reaches top_p. */
        double top = scores[argmax(scores, vocab)], total = 0.0;
        int k = limit < 64 ? limit : 64;
        if (limit < vocab) {
            best_k(scores, vocab, limit, order);
            for (int j = 0; j < limit; j++) total += exp((double)scores[order[j]] - top);
        } else {
            total = softmax_total(scores, vocab, (float)top);
        }
        for (;;) {
            best_k(scores, vocab, k, order);
            double mass = 0.0;
            kept = 0;
            while (kept < k && (kept == 0 || mass < p->top_p)) {
                mass += exp((double)scores[order[kept]] - top) / total;
                kept++;
            }
            if (mass >= p->top_p || k == limit) break;
            k = k * 8 < limit ? k * 8 : limit;
        }
    } else if (limit < vocab) {
        best_k(scores, vocab, limit, order);
    }
    uint64_t key = splitmix(p->seed ^ splitmix((uint64_t)p->step));
    float best = -INFINITY;
    int best_i = 0x7FFFFFFF;
    if (kept == vocab && !(p->top_p < 1.0)) {
        pthread_once(&refusals_once, fill_refusals);
        /* The best-scored token first, so the bar is high from the start. */
        int first = argmax(scores, vocab);
        if (scores[first] != -INFINITY) { /* a row of nothing but -inf has no first token */
            best = scores[first] - neg_gumbel(key, first);
            best_i = first;
        }
        for (int i = 0; i < vocab; i++) {
            if (scores[i] == -INFINITY || i == first) continue;
            if (best_i != 0x7FFFFFFF && !could_win(splitmix(key + (uint64_t)i), best - scores[i])) continue;
            float s = scores[i] - neg_gumbel(key, i);
            if (better(s, i, best, best_i)) {
                best = s;
                best_i = i;
            }
        }
    } else {
        for (int j = 0; j < kept; j++) {
            int i = order[j];
            float s = scores[i] - neg_gumbel(key, i);
            if (better(s, i, best, best_i)) {
                best = s;
                best_i = i;
            }
        }
    }
    return best_i == 0x7FFFFFFF ? 0 : best_i;
}

/* Each thread's scratch for sample_row, kept between calls (the team's threads live on) and freed when
 * its thread ends. */
typedef struct {
    size_t cap;
    float *scores;
    int *order;
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void free_scratch(void *p) {
    scratch *x = p;
    free(x->scores);
    free(x->order);
    free(x);
}

static void make_scratch_key(void) { pthread_key_create(&scratch_key, free_scratch); }

static scratch *thread_scratch(int vocab) {
    pthread_once(&scratch_once, make_scratch_key);
    scratch *x = pthread_getspecific(scratch_key);
    if (!x) {
        if (!(x = calloc(1, sizeof *x))) return NULL;
        if (pthread_setspecific(scratch_key, x) != 0) {
            free(x);
            return NULL;
        }
    }
    if (x->cap < (size_t)vocab) {
        float *scores = realloc(x->scores, (size_t)vocab * sizeof *scores);
        if (scores) x->scores = scores;
        int *order = realloc(x->order, (size_t)vocab * sizeof *order);
        if (order) x->order = order;
        if (!scores || !order) return NULL;
        x->cap = (size_t)vocab;
    }
    return x;
}

typedef struct {
    const float *logits;
    int rows, vocab;
    const sampling_params *p;
    int *chosen;
} sample_job;

static void sample_task(void *ctx, int ith, int nth) {
    sample_job *job = ctx;
    scratch *x = NULL;
    for (int i = ith; i < job->rows; i += nth) {
        const float *row = job->logits + (size_t)i * job->vocab;
        if (job->p[i].temperature <= 0.0f) {
            job->chosen[i] = argmax(row, job->vocab);
        } else if (x || (x = thread_scratch(job->vocab))) {
            job->chosen[i] = sample_row(row, job->vocab, &job->p[i], x->scores, x->order);
        } else {
            job->chosen[i] = -1;
        }
    }
}

int sample_rows(const float *logits, int rows, int vocab, const sampling_params *p, int *chosen) {
    sample_job job = {logits, rows, vocab, p, chosen};
    if (rows > 1) {
        pool_run(sample_task, &job);
    } else {
        sample_task(&job, 0, 1);
    }
    for (int i = 0; i < rows; i++) {
        if (chosen[i] < 0) return -1;
    }
    return 0;
}
