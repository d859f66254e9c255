/*
 * Reading kernel arguments from JavaScript. A wrong type is a programming error in the
 * TypeScript layer above: it throws a JS TypeError (never a crash). Sizes that do not fit the
 * arrays throw a RangeError; those checks cost a few comparisons per call and catch the bugs
 * that would otherwise read or write out of bounds.
 */
#ifndef TEAMTR_ARGUMENTS_H
#define TEAMTR_ARGUMENTS_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernel_signatures.h"

#define MAX_ARGUMENTS 20

typedef struct {
  napi_env env;
  const char *kernel;
  napi_value values[MAX_ARGUMENTS];
  size_t count;
  bool failed; /* a JS exception is pending; stop and return */
} arguments;

/* Reads the call's arguments; throws TypeError unless exactly `expected` were passed. */
bool arguments_read(arguments *args, napi_env env, napi_callback_info info, const char *kernel,
                    size_t expected);

typedef struct {
  float *data;
  size_t length;
} float_array;

typedef struct {
  int32_t *data;
  size_t length;
} int_array;

typedef struct {
  double *data;
  size_t length;
} double_array;

/* bfloat16 bit patterns (a Uint16Array): the upper halves of float32 values. */
typedef struct {
  uint16_t *data;
  size_t length;
} bfloat16_array;

/* Float32Array argument; `nullable` accepts null/undefined (data = NULL, length 0). */
float_array arguments_floats(arguments *args, size_t index, const char *name, bool nullable);
int_array arguments_ints(arguments *args, size_t index, const char *name);
double_array arguments_doubles(arguments *args, size_t index, const char *name);
bfloat16_array arguments_bfloat16s(arguments *args, size_t index, const char *name);
/* A non-negative integer below 2^40. */
int64_t arguments_size(arguments *args, size_t index, const char *name);
double arguments_number(arguments *args, size_t index, const char *name);
bool arguments_boolean(arguments *args, size_t index, const char *name);

/* RangeError unless `array` holds at least `needed` elements (skipped for NULL arrays). */
void arguments_require(arguments *args, const char *name, size_t length, double needed);
/* RangeError with a formatted message. */
void arguments_range_error(arguments *args, const char *format, ...);
/* Whether beta is 0 (overwrite) or 1 (accumulate); a RangeError otherwise. */
bool beta_is_flag(arguments *args, double beta);

/* Elements of a batch of `count` items `stride` apart, each `item` long (0 when empty). */
double arguments_span(double count, double stride, double item);

/*
 * Table-driven reading. kernel_signatures.h (generated from src/backend/types.ts) lists each
 * kernel's arguments as X(index, c_name, "jsName", KIND) and the elements each array must hold
 * as X("jsName", c_name, needed). READ_KERNEL_ARGUMENTS(PREFIX), at the top of an entry point
 * taking (env, info), declares `args` and one local per argument named c_name, read with the
 * reader of its KIND, checks every array's length, and returns NULL with a JS error pending
 * (TypeError: wrong count or type; RangeError: an array too short for the sizes). What follows
 * it in an entry point is what sizes alone cannot say (a token id within the vocabulary, an
 * even head dimension), then one call into kernels.h.
 */
#define ARGUMENT_TYPE_FLOATS float_array
#define ARGUMENT_TYPE_OPTIONAL_FLOATS float_array
#define ARGUMENT_TYPE_INTS int_array
#define ARGUMENT_TYPE_DOUBLES double_array
#define ARGUMENT_TYPE_BFLOAT16S bfloat16_array
#define ARGUMENT_TYPE_SIZE int64_t
#define ARGUMENT_TYPE_NUMBER double
#define ARGUMENT_TYPE_BOOLEAN bool
#define ARGUMENT_READ_FLOATS(args, index, name) arguments_floats(args, index, name, false)
#define ARGUMENT_READ_OPTIONAL_FLOATS(args, index, name) arguments_floats(args, index, name, true)
#define ARGUMENT_READ_INTS(args, index, name) arguments_ints(args, index, name)
#define ARGUMENT_READ_DOUBLES(args, index, name) arguments_doubles(args, index, name)
#define ARGUMENT_READ_BFLOAT16S(args, index, name) arguments_bfloat16s(args, index, name)
#define ARGUMENT_READ_SIZE(args, index, name) arguments_size(args, index, name)
#define ARGUMENT_READ_NUMBER(args, index, name) arguments_number(args, index, name)
#define ARGUMENT_READ_BOOLEAN(args, index, name) arguments_boolean(args, index, name)
#define ARGUMENT_DECLARE_AND_READ(index, c_name, js_name, kind) \
  ARGUMENT_TYPE_##kind c_name = ARGUMENT_READ_##kind(&args, index, js_name);
/* An optional array passed as null (data NULL) is absent: nothing to check. */
#define ARGUMENT_REQUIRE(js_name, c_name, needed, kind)                      \
  if (ARGUMENT_IS_OPTIONAL_##kind == 0 || c_name.data)                        \
    arguments_require(&args, js_name, c_name.length, needed);
#define ARGUMENT_IS_OPTIONAL_FLOATS 0
#define ARGUMENT_IS_OPTIONAL_OPTIONAL_FLOATS 1
#define ARGUMENT_IS_OPTIONAL_INTS 0
#define ARGUMENT_IS_OPTIONAL_DOUBLES 0
#define ARGUMENT_IS_OPTIONAL_BFLOAT16S 0
#define READ_KERNEL_ARGUMENTS(PREFIX)                                                      \
  arguments args;                                                                          \
  if (!arguments_read(&args, env, info, PREFIX##_NAME, PREFIX##_ARGUMENT_COUNT)) return NULL; \
  PREFIX##_ARGUMENTS(ARGUMENT_DECLARE_AND_READ)                                            \
  PREFIX##_SIZES(ARGUMENT_REQUIRE)                                                         \
  if (args.failed) return NULL;

#endif
