/*
 * N-API entry points for the products, the softmax family, sampling, the distribution
 * comparison and the norms. Every entry point has one shape: READ_KERNEL_ARGUMENTS reads the
 * arguments and checks every array's length against the sizes (both generated from the kernel
 * table, kernel_signatures.h), then come the checks sizes cannot state, then one call into
 * kernels.h.
 */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"

KERNEL_ENTRY(matmul) {
  READ_KERNEL_ARGUMENTS(MATMUL)
  matmul_arguments call = {
      .a = a.data, .b = b.data, .c = c.data, .batch = batch, .m = m, .n = n, .k = k,
      .transpose_a = transpose_a, .transpose_b = transpose_b, .stride_a = stride_a,
      .stride_b = stride_b, .alpha = (float)alpha, .beta = (float)beta};
  kernel_matmul(&call);
  return NULL;
}

KERNEL_ENTRY(matmul_bfloat16) {
  READ_KERNEL_ARGUMENTS(MATMUL_BFLOAT16)
  product_arguments call = {.a = a.data, .b_bfloat16 = b.data, .c = c.data, .m = m, .n = n,
                            .k = k, .transpose_b = transpose_b, .alpha = (float)alpha,
                            .beta = (float)beta};
  kernel_matmul_bfloat16(&call);
  return NULL;
}

KERNEL_ENTRY(matmul_fixed_order) {
  READ_KERNEL_ARGUMENTS(MATMUL_FIXED_ORDER)
  product_arguments call = {.a = a.data, .b = b.data, .c = c.data, .m = m, .n = n, .k = k,
                            .transpose_b = transpose_b, .alpha = (float)alpha,
                            .beta = (float)beta};
  kernel_matmul_fixed_order(&call);
  return NULL;
}

KERNEL_ENTRY(matmul_gemm_order) {
  READ_KERNEL_ARGUMENTS(MATMUL_GEMM_ORDER)
  product_arguments call = {.a = a.data, .b = b.data, .c = c.data, .m = m, .n = n, .k = k,
                            .transpose_b = transpose_b, .alpha = 1.0f, .beta = 0.0f};
  kernel_matmul_gemm_order(&call);
  return NULL;
}

KERNEL_ENTRY(softmax) {
  READ_KERNEL_ARGUMENTS(SOFTMAX)
  kernel_softmax(input.data, output.data, rows, columns, false);
  return NULL;
}

KERNEL_ENTRY(log_softmax) {
  READ_KERNEL_ARGUMENTS(LOG_SOFTMAX)
  kernel_softmax(input.data, output.data, rows, columns, true);
  return NULL;
}

/* Targets index into each row: checked here so a bad token id cannot read out of bounds. */
static bool targets_in_range(arguments *args, int_array targets, int64_t rows, int64_t columns) {
  for (int64_t r = 0; r < rows; r++) {
    int32_t target = targets.data[r];
    if (target < 0 || target >= columns) {
      arguments_range_error(args, "target %d of row %lld is outside [0, %lld)", target,
                            (long long)r, (long long)columns);
      return false;
    }
  }
  return true;
}

KERNEL_ENTRY(gather_log_probs) {
  READ_KERNEL_ARGUMENTS(GATHER_LOG_PROBS)
  if (!targets_in_range(&args, targets, rows, columns)) return NULL;
  gather_arguments call = {logits.data, targets.data, rows, columns,
                           log_probs.data, entropy.data, log_sum_exp.data};
  kernel_gather_log_probs(&call);
  return NULL;
}

KERNEL_ENTRY(gather_log_probs_backward) {
  READ_KERNEL_ARGUMENTS(GATHER_LOG_PROBS_BACKWARD)
  if (!targets_in_range(&args, targets, rows, columns) || !beta_is_flag(&args, beta)) return NULL;
  gather_backward_arguments call = {logits.data,         targets.data,
                                    rows,                columns,
                                    log_sum_exp.data,    grad_log_probs.data,
                                    grad_entropy.data,   grad_logits.data,
                                    beta == 0.0};
  kernel_gather_log_probs_backward(&call);
  return NULL;
}

KERNEL_ENTRY(sample_rows) {
  READ_KERNEL_ARGUMENTS(SAMPLE_ROWS)
  sample_rows_arguments call = {logits.data, rows,         columns,    uniforms.data,
                                tokens.data, maximum.data, total.data, log_probs.data};
  kernel_sample_rows(&call);
  return NULL;
}

KERNEL_ENTRY(compare_log_distributions) {
  READ_KERNEL_ARGUMENTS(COMPARE_LOG_DISTRIBUTIONS)
  if (columns > INT32_MAX) {
    arguments_range_error(&args, "columns must be below 2^31 (token ids are int32), got %lld",
                          (long long)columns);
    return NULL;
  }
  comparison_arguments call = {old_log_probs.data, new_log_probs.data, rows, columns, top_count,
                               kl.data, total_variation.data, top_tokens.data, old_total.data,
                               new_total.data};
  kernel_compare_log_distributions(&call);
  return NULL;
}

KERNEL_ENTRY(rms_norm) {
  READ_KERNEL_ARGUMENTS(RMS_NORM)
  norm_arguments call = {.input = input.data, .weight = weight.data, .output = output.data,
                         .inverse_scale = inverse_rms.data, .rows = rows, .columns = columns,
                         .epsilon = (float)epsilon};
  kernel_rms_norm(&call);
  return NULL;
}

KERNEL_ENTRY(rms_norm_backward) {
  READ_KERNEL_ARGUMENTS(RMS_NORM_BACKWARD)
  norm_backward_arguments call = {
      .input = input.data, .weight = weight.data, .inverse_scale = inverse_rms.data,
      .grad_output = grad_output.data, .grad_input = grad_input.data,
      .grad_weight = grad_weight.data, .rows = rows, .columns = columns};
  kernel_rms_norm_backward(&call);
  return NULL;
}

/* LayerNorm also has a bias (optional) and saves each row's mean. */
KERNEL_ENTRY(layer_norm) {
  READ_KERNEL_ARGUMENTS(LAYER_NORM)
  norm_arguments call = {.input = input.data, .weight = weight.data, .bias = bias.data,
                         .output = output.data, .mean = mean.data,
                         .inverse_scale = inverse_std.data, .rows = rows, .columns = columns,
                         .epsilon = (float)epsilon};
  kernel_layer_norm(&call);
  return NULL;
}

KERNEL_ENTRY(layer_norm_backward) {
  READ_KERNEL_ARGUMENTS(LAYER_NORM_BACKWARD)
  norm_backward_arguments call = {
      .input = input.data, .weight = weight.data, .mean = mean.data,
      .inverse_scale = inverse_std.data, .grad_output = grad_output.data,
      .grad_input = grad_input.data, .grad_weight = grad_weight.data,
      .grad_bias = grad_bias.data, .rows = rows, .columns = columns};
  kernel_layer_norm_backward(&call);
  return NULL;
}

/* The residual add fused into the RMSNorm after it (exact element-wise kernels). */
KERNEL_ENTRY(add_rms_norm) {
  READ_KERNEL_ARGUMENTS(ADD_RMS_NORM)
  add_norm_arguments call = {
      .norm = {.input = sum.data, .weight = weight.data, .output = output.data,
               .inverse_scale = inverse_rms.data, .rows = rows, .columns = columns,
               .epsilon = (float)epsilon},
      .base = input.data, .residual = residual.data, .sum = sum.data};
  kernel_add_rms_norm(&call);
  return NULL;
}
