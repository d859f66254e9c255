#include "arguments.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

typedef napi_status (*error_thrower)(napi_env env, const char *code, const char *message);

/* Throws "teamtr native <kernel>: <detail>" with `thrower`, once per call (the first error). */
static void throw_error(arguments *args, error_thrower thrower, const char *format, va_list list) {
  if (args->failed) return;
  char detail[256];
  char message[384];
  vsnprintf(detail, sizeof detail, format, list);
  snprintf(message, sizeof message, "teamtr native %s: %s", args->kernel, detail);
  thrower(args->env, NULL, message);
  args->failed = true;
}

static void throw_type_error(arguments *args, const char *format, ...) {
  va_list list;
  va_start(list, format);
  throw_error(args, napi_throw_type_error, format, list);
  va_end(list);
}

void arguments_range_error(arguments *args, const char *format, ...) {
  va_list list;
  va_start(list, format);
  throw_error(args, napi_throw_range_error, format, list);
  va_end(list);
}

bool arguments_read(arguments *args, napi_env env, napi_callback_info info, const char *kernel,
                    size_t expected) {
  args->env = env;
  args->kernel = kernel;
  args->failed = false;
  args->count = MAX_ARGUMENTS;
  if (napi_get_cb_info(env, info, &args->count, args->values, NULL, NULL) != napi_ok) {
    throw_type_error(args, "could not read the arguments");
    return false;
  }
  if (args->count != expected) {
    throw_type_error(args, "expected %zu arguments, got %zu", expected, args->count);
    return false;
  }
  return true;
}

static napi_valuetype type_of(arguments *args, size_t index) {
  napi_valuetype type = napi_undefined;
  napi_typeof(args->env, args->values[index], &type);
  return type;
}

static void *typed_array(arguments *args, size_t index, const char *name, napi_typedarray_type want,
                         const char *want_name, size_t *length) {
  *length = 0;
  if (args->failed) return NULL;
  bool is_typed_array = false;
  napi_is_typedarray(args->env, args->values[index], &is_typed_array);
  napi_typedarray_type type;
  void *data = NULL;
  if (!is_typed_array ||
      napi_get_typedarray_info(args->env, args->values[index], &type, length, &data, NULL, NULL) !=
          napi_ok ||
      type != want) {
    throw_type_error(args, "argument %zu (%s) must be a %s", index + 1, name, want_name);
    return NULL;
  }
  /* napi_get_typedarray_info's data pointer already includes the view's byteOffset. */
  return data;
}

float_array arguments_floats(arguments *args, size_t index, const char *name, bool nullable) {
  float_array result = {NULL, 0};
  if (args->failed) return result;
  if (nullable) {
    napi_valuetype type = type_of(args, index);
    if (type == napi_null || type == napi_undefined) return result;
  }
  result.data = typed_array(args, index, name, napi_float32_array,
                            nullable ? "Float32Array or null" : "Float32Array", &result.length);
  return result;
}

int_array arguments_ints(arguments *args, size_t index, const char *name) {
  int_array result = {NULL, 0};
  result.data = typed_array(args, index, name, napi_int32_array, "Int32Array", &result.length);
  return result;
}

double_array arguments_doubles(arguments *args, size_t index, const char *name) {
  double_array result = {NULL, 0};
  result.data = typed_array(args, index, name, napi_float64_array, "Float64Array", &result.length);
  return result;
}

bfloat16_array arguments_bfloat16s(arguments *args, size_t index, const char *name) {
  bfloat16_array result = {NULL, 0};
  result.data = typed_array(args, index, name, napi_uint16_array, "Uint16Array", &result.length);
  return result;
}

double arguments_number(arguments *args, size_t index, const char *name) {
  if (args->failed) return 0;
  double value = 0;
  if (type_of(args, index) != napi_number ||
      napi_get_value_double(args->env, args->values[index], &value) != napi_ok) {
    throw_type_error(args, "argument %zu (%s) must be a number", index + 1, name);
    return 0;
  }
  return value;
}

int64_t arguments_size(arguments *args, size_t index, const char *name) {
  double value = arguments_number(args, index, name);
  if (args->failed) return 0;
  if (!(value >= 0 && value < 1099511627776.0 && value == floor(value))) {
    arguments_range_error(args, "argument %zu (%s) must be a non-negative integer, got %g",
                          index + 1, name, value);
    return 0;
  }
  return (int64_t)value;
}

bool arguments_boolean(arguments *args, size_t index, const char *name) {
  if (args->failed) return false;
  bool value = false;
  if (type_of(args, index) != napi_boolean ||
      napi_get_value_bool(args->env, args->values[index], &value) != napi_ok) {
    throw_type_error(args, "argument %zu (%s) must be a boolean", index + 1, name);
  }
  return value;
}

void arguments_require(arguments *args, const char *name, size_t length, double needed) {
  if (args->failed) return;
  if ((double)length < needed) {
    arguments_range_error(args, "%s has %zu elements but the sizes need %.0f", name, length, needed);
  }
}

double arguments_span(double count, double stride, double item) {
  if (count == 0 || item == 0) return 0;
  return (count - 1) * stride + item;
}

/* beta 0 (write the output) or 1 (add to it): the gradient kernels take no other. */
bool beta_is_flag(arguments *args, double beta) {
  if (beta == 0.0 || beta == 1.0) return true;
  arguments_range_error(args, "beta must be 0 (overwrite) or 1 (accumulate), got %g", beta);
  return false;
}
