/* The canary's kernel: what TensorFlow's statically compiled Eigen code does, in miniature.
 * Eigen evaluates element-wise ops in fixed-size "packets" whose width the compile flags decide;
 * GCC/Clang vector extensions do the same here: a 16-float packet becomes one zmm register with
 * AVX-512, two ymm with AVX2, four xmm with the x86-64 baseline, and the multiply-adds of the
 * polynomial become FMA instructions only when the flags allow FMA. */
#include <stddef.h>

typedef float packet __attribute__((vector_size(64)));

float canary_kernel(float *restrict x, size_t n, int reps) {
    size_t packets = n / 16;
    for (int r = 0; r < reps; ++r) {
        for (size_t i = 0; i < packets; ++i) {
            packet v;
            __builtin_memcpy(&v, x + 16 * i, sizeof v);
            packet p = 1.0f + v * (1.0f + v * (0.5f + v * (0.16666667f + v * (0.041666668f + v * 0.008333334f))));
            p = 0.25f * p + 0.01f * v;  /* stays in [0, 1]: a contraction, no overflow */
            __builtin_memcpy(x + 16 * i, &p, sizeof p);
        }
    }
    float sum = 0.0f;
    for (size_t i = 0; i < 16 * packets; ++i) sum += x[i];
    return sum;
}

/* Deliberately NOT reproducible, as TensorFlow's own build information is not: the build's date and
 * time (the compiler takes them from SOURCE_DATE_EPOCH when it is set, else the clock and TZ) and
 * the absolute path the source was compiled from, inside bazel's output base (which
 * -ffile-prefix-map=OUTPUT_BASE=. rewrites). tfbuild's measures must remove both. */
const char *canary_build_info(void) {
    return "built " __DATE__ " " __TIME__ " from " __FILE__;
}
