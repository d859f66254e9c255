/*
 * A decode step's attention (one query per sequence, no saved probabilities): the query heads
 * of a kv head together, one task per thread streaming its next sequence's keys and values
 * into L2 while it computes the current one. Each query is summed as attention.c's forward
 * sums a one-row block (the same attention_query.c functions), so the bits are the same.
 */
#include <stdlib.h>

#include "attention_query.h"
#include "parallel.h"

/*
 * One kv head of a decode step without saved probabilities: the query heads that share the kv
 * head run together, each key and value row read once for all of them. Every query is summed
 * as forward_task's rows == 1 path sums it (the same decode_scores, softmax_scores and
 * decode_values chains), so the bits are the same.
 */
static void decode_group(const attention_arguments *a, int64_t b, int64_t kv_head, int thread,
                         int64_t prefetch_width, prefetch_stream *stream) {
  int group = (int)(a->heads / a->kv_heads);
  int64_t keys = visible_keys(a, 0), stride = round_up_to_vector(keys);
  int64_t dim = a->head_dim, key_stride = a->kv_heads * dim;
  float *output = a->output + query_offset(a, b, 0, kv_head * group);
  float *scores = pool_scratch(thread, 0, (size_t)((group + 1) * stride) * sizeof(float));
  if (!scores) abort();
  float *valid = scores + group * stride;
  key_validity(a, b, keys, valid);
  int64_t first = 0;
  while (first < keys && valid[first] == 0.0f) first++;
  int64_t span = keys - first;
  if (span <= 0) {
    for (int64_t d = 0; d < group * dim; d++) output[d] = 0.0f;
    return;
  }
  const float *query = a->query + query_offset(a, b, 0, kv_head * group);
  const float *key = a->key + key_offset(a, b, first, kv_head);
  decode_scores(query, group, key, key_stride, span, dim, a->scale, scores, stride,
                prefetch_width, stream);
  for (int g = 0; g < group; g++) {
    float *row = scores + g * stride;
    /* The first key is real, so the row has a visible key; zeroed like forward_task if not. */
    if (!softmax_scores(row, span, span, valid + first))
      for (int64_t j = 0; j < span; j++) row[j] = 0.0f;
  }
  const float *value = a->value + key_offset(a, b, first, kv_head);
  decode_values(scores, stride, group, value, key_stride, span, dim, output, dim,
                prefetch_width, stream);
}

/* Slot of sequence b's first real key (left padding skipped), or `keys` if none. */
static int64_t first_real_key(const attention_arguments *a, int64_t b, int64_t keys) {
  int64_t first = 0;
  while (first < keys && a->key_mask && a->key_mask[b * a->key_capacity + first] == 0.0f) first++;
  return first;
}

/*
 * A decode step's task, one per thread: sequences index, index + tasks, …, each streaming the
 * next one in over its 2 · kv_heads passes of ⌈span / VECTOR_WIDTH⌉ key blocks. Measured, one
 * process, SmolLM2 shape at 16 rows: 0.53-0.59x the time of a task per (sequence, kv head)
 * without prefetching while the cache streams from memory, 1.1-1.3x when it sits in cache.
 */
typedef struct {
  const attention_arguments *a;
  int64_t tasks;
} decode_context;

static void decode_sequence_task(void *context, size_t index, int thread) {
  const decode_context *t = context;
  const attention_arguments *a = t->a;
  int64_t keys = visible_keys(a, 0), width = a->kv_heads * a->head_dim;
  for (int64_t b = (int64_t)index; b < a->batch; b += t->tasks) {
    prefetch_stream stream = {{NULL, NULL}, {0, 0}, 2, 0, 0};
    int64_t next = b + t->tasks;
    if (next < a->batch) {
      int64_t first = first_real_key(a, next, keys);
      int64_t length = (keys - first) * width;
      stream = (prefetch_stream){{a->key + key_offset(a, next, first, 0),
                                  a->value + key_offset(a, next, first, 0)},
                                 {length, length}, length > 0 ? 0 : 2, 0, 0};
      int64_t span = keys - first_real_key(a, b, keys);
      int64_t steps = 2 * a->kv_heads * ((span + VECTOR_WIDTH - 1) / VECTOR_WIDTH);
      int64_t lines = (2 * length + LINE_FLOATS - 1) / LINE_FLOATS;
      stream.per_step = steps > 0 ? (lines + steps - 1) / steps * LINE_FLOATS : 0;
    }
    /* The task's first sequence was not streamed in: its first kv head fetches whole rows. */
    bool streamed_in = b >= t->tasks;
    for (int64_t kv_head = 0; kv_head < a->kv_heads; kv_head++)
      decode_group(a, b, kv_head, thread, !streamed_in && kv_head == 0 ? width : 0, &stream);
  }
}

void attention_decode_step(const attention_arguments *a, int parallel) {
  int64_t threads = parallel ? pool_thread_count() : 1;
  decode_context decode = {a, a->batch < threads ? a->batch : threads};
  run_maybe_parallel((size_t)decode.tasks, decode_sequence_task, &decode, parallel);
}
