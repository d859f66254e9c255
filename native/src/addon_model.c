/*
 * N-API entry points for rope, attention, the activations and the optimizer kernels, in the
 * one shape of addon_math.c: generated reading and size checks, the checks sizes cannot state,
 * one call into kernels.h.
 */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"

KERNEL_ENTRY(rope) {
  READ_KERNEL_ARGUMENTS(ROPE)
  if (head_dim % 2 != 0) {
    arguments_range_error(&args, "headDim must be even, got %lld", (long long)head_dim);
    return NULL;
  }
  rope_arguments call = {.data = data.data, .source = source.data, .positions = positions.data,
                         .batch = batch, .length = length, .heads = heads, .head_dim = head_dim,
                         .theta = theta, .inverse = inverse};
  kernel_rope(&call);
  return NULL;
}

/*
 * The attention shape, read into `call` from the locals of READ_KERNEL_ARGUMENTS (both
 * attention kernels end their signatures with the same shape arguments).
 */
#define ATTENTION_SHAPE                                                                        \
  .key_mask = key_mask.data, .batch = batch, .query_length = query_length,                    \
  .key_length = key_length, .key_capacity = key_capacity, .heads = heads, .kv_heads = kv_heads, \
  .head_dim = head_dim, .query_start = query_start, .scale = (float)scale

/* What the sizes cannot say: whole groups of query heads per KV head, keys within capacity. */
static bool attention_shape_holds(arguments *args, const attention_arguments *call) {
  if (call->kv_heads == 0 || call->heads % call->kv_heads != 0) {
    arguments_range_error(args, "heads (%lld) must be a multiple of kvHeads (%lld)",
                          (long long)call->heads, (long long)call->kv_heads);
    return false;
  }
  if (call->key_length > call->key_capacity) {
    arguments_range_error(args, "keyLength (%lld) exceeds keyCapacity (%lld)",
                          (long long)call->key_length, (long long)call->key_capacity);
    return false;
  }
  return true;
}

KERNEL_ENTRY(attention) {
  READ_KERNEL_ARGUMENTS(ATTENTION)
  attention_arguments call = {.query = query.data, .key = key.data, .value = value.data,
                              .output = output.data, .probabilities = probabilities.data,
                              ATTENTION_SHAPE};
  if (!attention_shape_holds(&args, &call)) return NULL;
  kernel_attention(&call);
  return NULL;
}

KERNEL_ENTRY(attention_backward) {
  READ_KERNEL_ARGUMENTS(ATTENTION_BACKWARD)
  attention_arguments call = {
      .query = query.data, .key = key.data, .value = value.data,
      .saved_probabilities = probabilities.data, .grad_output = grad_output.data,
      .grad_query = grad_query.data, .grad_key = grad_key.data, .grad_value = grad_value.data,
      ATTENTION_SHAPE};
  if (!attention_shape_holds(&args, &call)) return NULL;
  kernel_attention_backward(&call);
  return NULL;
}

KERNEL_ENTRY(swiglu) {
  READ_KERNEL_ARGUMENTS(SWIGLU)
  kernel_swiglu(gate.data, up.data, output.data, (int64_t)gate.length);
  return NULL;
}

KERNEL_ENTRY(swiglu_backward) {
  READ_KERNEL_ARGUMENTS(SWIGLU_BACKWARD)
  if (!beta_is_flag(&args, beta)) return NULL;
  kernel_swiglu_backward(gate.data, up.data, grad_output.data, grad_gate.data, grad_up.data,
                         (int64_t)gate.length, beta == 0.0);
  return NULL;
}

KERNEL_ENTRY(gelu) {
  READ_KERNEL_ARGUMENTS(GELU)
  kernel_gelu(input.data, output.data, (int64_t)input.length);
  return NULL;
}

KERNEL_ENTRY(gelu_backward) {
  READ_KERNEL_ARGUMENTS(GELU_BACKWARD)
  kernel_gelu_backward(input.data, grad_output.data, grad_input.data, (int64_t)input.length);
  return NULL;
}

KERNEL_ENTRY(adamw) {
  READ_KERNEL_ARGUMENTS(ADAMW)
  adamw_arguments call = {
      .parameter = parameter.data, .gradient = gradient.data,
      .first_moment = first_moment.data, .second_moment = second_moment.data,
      .length = (int64_t)parameter.length, .learning_rate = learning_rate, .beta1 = beta1,
      .beta2 = beta2, .epsilon = epsilon, .weight_decay = weight_decay, .step = step,
      .gradient_scale = gradient_scale};
  kernel_adamw(&call);
  return NULL;
}

KERNEL_ENTRY(sum_of_squares) {
  READ_KERNEL_ARGUMENTS(SUM_OF_SQUARES)
  napi_value result;
  napi_create_double(env, kernel_sum_of_squares(input.data, (int64_t)input.length), &result);
  return result;
}

KERNEL_ENTRY(axpy) {
  READ_KERNEL_ARGUMENTS(AXPY)
  if (!beta_is_flag(&args, beta)) return NULL;
  kernel_axpy((float)alpha, x.data, y.data, (int64_t)x.length, beta == 0.0);
  return NULL;
}

/* ---- exact element-wise kernels ---- */

KERNEL_ENTRY(add_scaled) {
  READ_KERNEL_ARGUMENTS(ADD_SCALED)
  kernel_add_scaled(a.data, b.data, scale, output.data, (int64_t)a.length);
  return NULL;
}
