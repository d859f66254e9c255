{
  # Built by scripts/build-native.mjs (npm install), which passes
  #   --teamtr_blas=openblas|none   link OpenBLAS (cblas_sgemm) or build portable kernels only
  #   --teamtr_blas_include=DIR     directory holding OpenBLAS's cblas.h
  # -march=native: the addon is compiled on the machine that runs it (at install time).
  # No -ffast-math: NaN and infinity keep IEEE semantics; -fno-math-errno and
  # -ffp-contract=fast only let sqrt vectorize and a·b + c fuse into FMA.
  "variables": {
    "teamtr_blas%": "none",
    "teamtr_blas_include%": "/usr/include"
  },
  "targets": [
    {
      "target_name": "teamtr_native",
      "sources": [
        "native/src/addon.c",
        "native/src/addon_math.c",
        "native/src/addon_model.c",
        "native/src/arguments.c",
        "native/src/attention.c",
        "native/src/attention_decode.c",
        "native/src/attention_query.c",
        "native/src/attention_backward.c",
        "native/src/distribution_comparison.c",
        "native/src/elementwise.c",
        "native/src/gemm_packed.c",
        "native/src/gemm_panels.c",
        "native/src/gemm_small.c",
        "native/src/matmul.c",
        "native/src/matmul_bfloat16.c",
        "native/src/matmul_bfloat16_rows.c",
        "native/src/matmul_gemm_order.c",
        "native/src/matmul_skinny.c",
        "native/src/norms.c",
        "native/src/rope.c",
        "native/src/sampling.c",
        "native/src/softmax.c",
        "native/src/threadpool.c"
      ],
      "cflags!": ["-O2", "-O3", "-Os", "-std=gnu99", "-std=c99", "-fno-omit-frame-pointer"],
      "cflags_c": [
        "-std=gnu11",
        "-O3",
        "-march=native",
        "-mprefer-vector-width=512",
        "-fno-math-errno",
        "-ffp-contract=fast",
        "-fopenmp-simd",
        "-fvisibility=hidden",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter"
      ],
      "libraries": ["-lpthread", "-lm"],
      "conditions": [
        ["teamtr_blas=='openblas'", {
          "defines": ["TEAMTR_OPENBLAS"],
          "include_dirs": ["<(teamtr_blas_include)"],
          "libraries": ["-lopenblas"]
        }]
      ]
    }
  ]
}
