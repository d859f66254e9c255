/*
 * A steady stream of software prefetches into L2 over up to two ranges of floats, `per_step`
 * floats (whole 64-byte lines) at each stream_advance: a kernel that knows which data it reads
 * next (attention's next sequence of a decode step) spreads fetching it over the work it does
 * before, so memory is busy all along rather than in bursts.
 */
#ifndef TEAMTR_PREFETCH_STREAM_H
#define TEAMTR_PREFETCH_STREAM_H

#include <stdint.h>

#define LINE_FLOATS 16

typedef struct {
  const float *start[2];
  int64_t length[2];
  int range; /* the range being fetched; 2 when done */
  int64_t position;
  int64_t per_step;
} prefetch_stream;

/* Fetches the next `per_step` floats; a NULL stream fetches nothing. */
static inline void stream_advance(prefetch_stream *stream) {
  if (!stream) return;
  for (int64_t done = 0; done < stream->per_step && stream->range < 2; done += LINE_FLOATS) {
    __builtin_prefetch(stream->start[stream->range] + stream->position, 0, 2);
    stream->position += LINE_FLOATS;
    if (stream->position >= stream->length[stream->range]) {
      stream->range++;
      stream->position = 0;
    }
  }
}

#endif
