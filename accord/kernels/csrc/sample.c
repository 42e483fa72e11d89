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
 */
#include "sample.h"

#include <math.h>
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

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best]) best = i;
    }
    return best;
}

/* Indices of the k largest scores, best first (ties: lower index first). */
static void best_k(const float *s, int n, int k, int *out) {
    /* A min-heap of the k best so far, then sorted. */
    int size = 0;
    for (int i = 0; i < n; i++) {
        if (size == k) {
            int least = out[0];
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

int sample_row(const float *logits, int vocab, const sampling_params *p, float *scores, int *order) {
    if (p->temperature <= 0.0f) return argmax(logits, vocab);
    for (int i = 0; i < vocab; i++) scores[i] = logits[i] / p->temperature;
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
            for (int i = 0; i < vocab; i++) total += exp((double)scores[i] - top);
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
        for (int i = 0; i < vocab; i++) {
            if (scores[i] == -INFINITY) continue;
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
