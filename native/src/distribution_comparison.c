/*
 * compareLogDistributions (src/backend/types.ts): per row of two [rows, vocab] log-distributions,
 * the exact KL(p‖q), the exact TV(p, q), the row sums of p and q, and the ids of p's top tokens,
 * in one pass over both arrays. Every exact-KL measurement of a trust-region update compares
 * full next-token distributions at each of an agent's tokens (SmolLM2: 49,152 entries a row);
 * written op by op in JavaScript (tokenKl, tokenTotalVariation, two exp copies for the rank
 * shift) it took 44 s of a 365 s update phase in a profile of one SmolLM2-shape team stage.
 *
 * Hand-written because nothing serves it: no library on the CPU fuses a full-vocabulary KL,
 * TV and top-k over log-probabilities, and op by op (exp into new arrays, then reductions)
 * would read and write several [rows, vocab] arrays where this reads two once. The formulas
 * are those of src/rl/kl.ts and total-variation.ts (expm1 forms, split KL below d = −1, the
 * −∞ cases, float64 sums, the TV clamp), so results agree with them to float32 rounding.
 *
 * The work is three exponentials per entry in float64 (e^log p, e^log q, and expm1 of −d and
 * of −|d|, d = log p − log q): float32 exp would round p·d²/2 for p ≈ q to nothing, and libm's
 * exp/expm1 do not vectorize without -ffast-math (glibc's libmvec has them, but only behind
 * -ffast-math or its mangled names, and not on every platform we build on). exp_and_expm1
 * below is a few ulp, branch-free, and runs eight doubles a vector with AVX-512 (four with
 * AVX2). The top-k needs one compare per 16 floats: a lane can enter the kept set only when it
 * reaches the worst kept value, which after the first few hundred entries is rare.
 *
 * Measured on a loaded 2-core AMD EPYC (Zen 4, AVX-512) VM, one chunk of 341 positions ×
 * 49,152 (16.8 M entries): this kernel takes 77–82 ms of CPU time on one thread (about 12
 * cycles an entry). Through EvidenceCollector.add, against the JavaScript path it replaces, in
 * one process with interleaved runs (medians of 7): 0.083 against 1.18 CPU-seconds (14×), and
 * 0.158 against 2.58 s wall at a load average of 11 (16×), 0.175 against 2.62 s at 19 (15×).
 * Single-thread CPU time of variants, interleaved: expm1(−d) derived from expm1(−|d|) by a
 * division, 77 ms, against a fourth exponential, 84 ms; without ranking, 69 ms; the ranking
 * test per 64 entries instead of per 16, 75 ms (kept simple); exact 2^k in one factor where no
 * lane underflows, behind a branch, 85 ms.
 *
 * Rows are independent: tasks take blocks of rows, every row is computed by one task in one
 * order, so results do not depend on the thread count.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels.h"
#include "parallel.h"
#include "reduce.h"

typedef int64_t wide_mask __attribute__((vector_size(HALF_WIDTH * sizeof(int64_t))));
typedef uint64_t wide_bits __attribute__((vector_size(HALF_WIDTH * sizeof(uint64_t))));

static inline vwide wide_broadcast(double value) { return (vwide){0} + value; }

static inline vwide wide_select(wide_mask mask, vwide chosen, vwide otherwise) {
  return (vwide)(((wide_mask)chosen & mask) | ((wide_mask)otherwise & ~mask));
}

static inline double lane_sum(vwide value) {
  double total = 0;
  for (int lane = 0; lane < HALF_WIDTH; lane++) total += value[lane];
  return total;
}

static const double inverse_ln2 = 1.44269504088896338700e+00;
/* ln 2 in two parts (fdlibm's): ln2_hi has 21 trailing zero bits, so k·ln2_hi is exact. */
static const double ln2_hi = 6.93147180369123816490e-01;
static const double ln2_lo = 1.90821492927058770002e-10;
/* 1.5·2^52: adding it rounds a double below 2^51 to an integer, held in the low mantissa bits. */
static const double round_shift = 6755399441055744.0;

/* 2^n for the integer n that `shifted` = n + round_shift holds, built in the exponent field. */
static inline vwide power_of_two(vwide shifted) {
  wide_bits bits = ((wide_bits)shifted + 1023) << 52;
  return (vwide)bits;
}

typedef struct {
  vwide exponential; /* e^x */
  vwide minus_one;   /* e^x − 1 */
} exponentials;

/*
 * e^x and e^x − 1 of every lane, each within a few ulp. x = k·ln2 + r with |r| ≤ ln2/2, and
 * P = e^r − 1 = r + r²/2! + … + r¹³/13! (the first term left out is below 2^−57 relative).
 * Then e^x = (1 + P)·2^k, with 2^k applied as two factors so that results below 2^−1022
 * underflow gradually, and e^x − 1 = 2^k·P + (2^k − 1) as one fused multiply-add: 2^k − 1 is
 * exact for the k that matter (k ≥ −53) and for k = 0 this is P itself, so nothing cancels
 * near 0. x is clamped to [−746, 710] first: −∞ gives 0 and −1, large x gives +∞, and NaN
 * passes through every step.
 */
static inline exponentials exp_and_expm1(vwide x) {
  x = wide_select(x < -746.0, wide_broadcast(-746.0), x);
  x = wide_select(x > 710.0, wide_broadcast(710.0), x);
  vwide k = (x * inverse_ln2 + round_shift) - round_shift;
  vwide r = (x - k * ln2_hi) - k * ln2_lo;
  vwide p = wide_broadcast(1.0 / 6227020800.0);
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r;
  vwide half_shifted = k * 0.5 + round_shift;
  vwide first = power_of_two(half_shifted);
  vwide second = power_of_two((k - (half_shifted - round_shift)) + round_shift);
  vwide scale = first * second;
  return (exponentials){((1.0 + p) * first) * second, scale * p + (scale - 1.0)};
}

/* Per-row running sums, HALF_WIDTH lanes each. */
typedef struct {
  vwide kl, variation, old_total, new_total;
} row_sums;

/*
 * Adds the terms of HALF_WIDTH entries. The KL term is kl.ts's: p·(d + expm1(−d)) for d ≥ −1
 * (only used where d ≥ −1, so e^(−d) never overflows), p·(d − 1) + q below, q
 * where log p = −∞. The TV term is total-variation.ts's: −max(p, q)·expm1(−|d|), 0 where both
 * are −∞ (there d is NaN).
 */
static inline void add_terms(const float *old_values, const float *new_values, row_sums *sums) {
  const vwide zero = {0};
  vwide a = widen(old_values), b = widen(new_values);
  vwide p = exp_and_expm1(a).exponential;
  vwide q = exp_and_expm1(b).exponential;
  vwide d = a - b;
  vwide expm1_minus_distance = exp_and_expm1(wide_select(d > 0.0, -d, d)).minus_one;
  /* expm1(−d): for d ≥ 0 that is expm1(−|d|); for −1 ≤ d < 0, e^|d| − 1 = −y/(1 + y) with
     y = expm1(−|d|) ∈ [−0.64, 0), where 1 + y cannot cancel. A division instead of a fourth
     exponential: it runs beside the multiply-adds. */
  vwide expm1_minus_d =
      wide_select(d >= 0.0, expm1_minus_distance,
                  -expm1_minus_distance / (1.0 + expm1_minus_distance));
  wide_mask close = d >= -1.0;
  vwide kl = wide_select(close, p * (d + expm1_minus_d), p * (d - 1.0) + q);
  wide_mask old_zero = a == -INFINITY;
  sums->kl += wide_select(old_zero, q, kl);
  vwide larger = wide_select(a > b, p, q);
  wide_mask both_zero = old_zero & (b == -INFINITY);
  sums->variation += wide_select(both_zero, zero, -larger * expm1_minus_distance);
  sums->old_total += p;
  sums->new_total += q;
}

/* One kept token of a row's top list. */
typedef struct {
  float value;
  int32_t id;
} ranked;

/* a ranks below b: a smaller log-probability, or an equal one at a higher id. */
static inline bool ranks_below(ranked a, ranked b) {
  return a.value < b.value || (a.value == b.value && a.id > b.id);
}

/*
 * The `count` best entries offered so far, as a heap with the worst at the root. It starts
 * full of stand-ins (−∞ at an id above every token) that any real entry outranks.
 */
typedef struct {
  ranked *entries;
  int64_t count;
} top_list;

static void top_list_reset(top_list *list) {
  for (int64_t index = 0; index < list->count; index++)
    list->entries[index] = (ranked){-INFINITY, INT32_MAX};
}

/* The smallest value that may still enter (+∞ when nothing is kept). */
static inline float top_list_threshold(const top_list *list) {
  return list->count > 0 ? list->entries[0].value : INFINITY;
}

static void top_list_offer(top_list *list, ranked candidate) {
  ranked *entries = list->entries;
  if (list->count == 0 || !ranks_below(entries[0], candidate)) return;
  int64_t index = 0;
  for (;;) {
    int64_t child = 2 * index + 1;
    if (child >= list->count) break;
    if (child + 1 < list->count && ranks_below(entries[child + 1], entries[child])) child++;
    if (!ranks_below(entries[child], candidate)) break;
    entries[index] = entries[child];
    index = child;
  }
  entries[index] = candidate;
}

static int better_first(const void *first, const void *second) {
  ranked a = *(const ranked *)first, b = *(const ranked *)second;
  return ranks_below(b, a) ? -1 : ranks_below(a, b) ? 1 : 0;
}

/* The kept ids best first; −1 for stand-ins never displaced. */
static void top_list_write(top_list *list, int32_t *target) {
  qsort(list->entries, (size_t)list->count, sizeof(ranked), better_first);
  for (int64_t index = 0; index < list->count; index++) {
    ranked entry = list->entries[index];
    target[index] = entry.id == INT32_MAX ? -1 : entry.id;
  }
}

/*
 * One block of VECTOR_WIDTH entries starting at token `first`; only the first `valid` lanes
 * may be ranked (a padded tail). A NaN lane fails the comparison and is never ranked.
 */
static inline void add_block(const float *old_values, const float *new_values, int64_t first,
                             int valid, row_sums *sums, top_list *top) {
  vfloat values = vload(old_values);
  vint reaches = values >= vbroadcast(top_list_threshold(top));
  int any = 0;
  for (int lane = 0; lane < VECTOR_WIDTH; lane++) any |= reaches[lane];
  if (any) {
    for (int lane = 0; lane < valid; lane++)
      if (values[lane] >= top_list_threshold(top))
        top_list_offer(top, (ranked){values[lane], (int32_t)(first + lane)});
  }
  add_terms(old_values, new_values, sums);
  add_terms(old_values + HALF_WIDTH, new_values + HALF_WIDTH, sums);
}

static void compare_row(const comparison_arguments *call, int64_t row, top_list *top) {
  int64_t columns = call->columns;
  const float *old_row = call->old_log_probs + row * columns;
  const float *new_row = call->new_log_probs + row * columns;
  const vwide zero = {0};
  row_sums sums = {zero, zero, zero, zero};
  top_list_reset(top);
  int64_t j = 0;
  for (; j + VECTOR_WIDTH <= columns; j += VECTOR_WIDTH)
    add_block(old_row + j, new_row + j, j, VECTOR_WIDTH, &sums, top);
  if (j < columns) {
    /* The tail, padded with −∞ in both rows: such entries add nothing to any sum. */
    float old_tail[VECTOR_WIDTH], new_tail[VECTOR_WIDTH];
    for (int lane = 0; lane < VECTOR_WIDTH; lane++) {
      old_tail[lane] = j + lane < columns ? old_row[j + lane] : -INFINITY;
      new_tail[lane] = j + lane < columns ? new_row[j + lane] : -INFINITY;
    }
    add_block(old_tail, new_tail, j, (int)(columns - j), &sums, top);
  }
  call->kl[row] = (float)lane_sum(sums.kl);
  double half = lane_sum(sums.variation) / 2;
  call->total_variation[row] = (float)(half < 0 ? 0 : half > 1 ? 1 : half); /* NaN stays */
  call->old_total[row] = lane_sum(sums.old_total);
  call->new_total[row] = lane_sum(sums.new_total);
  top_list_write(top, call->top_tokens + row * call->top_count);
}

typedef struct {
  const comparison_arguments *call;
  int64_t rows_per_task;
} comparison_context;

static void comparison_task(void *context, size_t index, int thread) {
  const comparison_context *task = context;
  const comparison_arguments *call = task->call;
  top_list top = {NULL, call->top_count};
  if (top.count > 0) {
    top.entries = pool_scratch(thread, 0, (size_t)top.count * sizeof(ranked));
    if (!top.entries) abort();
  }
  int64_t begin, end;
  chunk_range((int64_t)index, task->rows_per_task, call->rows, &begin, &end);
  for (int64_t row = begin; row < end; row++) compare_row(call, row, &top);
}

void kernel_compare_log_distributions(const comparison_arguments *call) {
  comparison_context context = {call, rows_per_task(call->rows, call->columns, 16384)};
  pool_run((size_t)chunk_count(call->rows, context.rows_per_task), comparison_task, &context);
}
