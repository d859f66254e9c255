{
  # Built by scripts/build-native.mjs (npm install), which passes --teamtr_blas=none when
  # TEAMTR_BLAS=none (no run-time OpenBLAS: portable C kernels for every product).
  #
  # One addon per instruction-set variant, each the same sources with its own -march: on
  # x86-64 "avx512" (x86-64-v4: AVX-512 F/BW/DQ/VL/CD), "avx2" (x86-64-v3: AVX2, FMA, F16C) and
  # "portable" (x86-64-v2: SSE4.2); elsewhere one "native" build for the machine it is built
  # on. src/backend/native.ts loads the widest one the host runs (TEAMTR_ISA forces another),
  # so one install can run, and test, every host kind's kernels. -mtune=native: instruction
  # scheduling for the machine it is built on, never instructions it lacks.
  # No -ffast-math: NaN and infinity keep IEEE semantics; -fno-math-errno and
  # -ffp-contract=fast only let sqrt vectorize and a·b + c fuse into FMA.
  "variables": {
    "teamtr_blas%": "openblas",
    "common_sources": [
      "native/src/addon.c",
      "native/src/addon_host.c",
      "native/src/addon_math.c",
      "native/src/addon_model.c",
      "native/src/arguments.c",
      "native/src/attention.c",
      "native/src/attention_decode.c",
      "native/src/attention_query.c",
      "native/src/attention_backward.c",
      "native/src/blas.c",
      "native/src/distribution_comparison.c",
      "native/src/elementwise.c",
      "native/src/gemm_packed.c",
      "native/src/gemm_panels.c",
      "native/src/gemm_small.c",
      "native/src/gemm_weight_rows.c",
      "native/src/host.c",
      "native/src/matmul.c",
      "native/src/matmul_bfloat16.c",
      "native/src/matmul_bfloat16_rows.c",
      "native/src/matmul_bfloat16_lanes.c",
      "native/src/matmul_bfloat16_tiles.c",
      "native/src/matmul_bfloat16_tile_order.c",
      "native/src/matmul_bfloat16_tiles_rows.c",
      "native/src/matmul_gemm_order.c",
      "native/src/matmul_skinny.c",
      "native/src/memory_probe.c",
      "native/src/norms.c",
      "native/src/paths.c",
      "native/src/rope.c",
      "native/src/sampling.c",
      "native/src/softmax.c",
      "native/src/threadpool.c"
    ]
  },
  "target_defaults": {
    "sources": ["<@(common_sources)"],
    "cflags!": ["-O2", "-O3", "-Os", "-std=gnu99", "-std=c99", "-fno-omit-frame-pointer"],
    "cflags_c": [
      "-std=gnu11",
      "-O3",
      "-fno-math-errno",
      "-ffp-contract=fast",
      "-fopenmp-simd",
      "-fvisibility=hidden",
      "-Wall",
      "-Wextra",
      "-Wno-unused-parameter",
      "-Wno-psabi"
    ],
    "libraries": ["-lpthread", "-lm", "-ldl"],
    "conditions": [
      ["teamtr_blas=='none'", {"defines": ["TEAMTR_NO_BLAS"]}]
    ]
  },
  "conditions": [
    ["target_arch=='x64'", {
      "targets": [
        {
          "target_name": "teamtr_native_avx512",
          "defines": ["TEAMTR_ISA=\"avx512\""],
          "cflags_c": ["-march=x86-64-v4", "-mtune=native", "-mprefer-vector-width=512"]
        },
        {
          "target_name": "teamtr_native_avx2",
          "defines": ["TEAMTR_ISA=\"avx2\""],
          "cflags_c": ["-march=x86-64-v3", "-mtune=native"]
        },
        {
          "target_name": "teamtr_native_portable",
          "defines": ["TEAMTR_ISA=\"portable\""],
          "cflags_c": ["-march=x86-64-v2", "-mtune=native"]
        }
      ]
    }, {
      "targets": [
        {
          "target_name": "teamtr_native_native",
          "defines": ["TEAMTR_ISA=\"native\""],
          "cflags_c": ["-march=native"]
        }
      ]
    }]
  ]
}
