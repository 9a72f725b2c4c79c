/* tfbuild's FP32 peak kernel, compiled and run by tfbuild/measure/fma_probe.py (measure_fma_peak).
 *
 * 12 independent multiply-add chains on the widest vectors the compiler enables. Every chain starts
 * from a different value so that the compiler cannot merge them, and the sum of the accumulators is
 * printed so that it cannot drop the loop. It waits for its stdin to close, so that every copy starts
 * at the same moment, then warms up, then counts for the given seconds.
 *
 * Usage: peak_kernel SECONDS WARMUP_SECONDS, then close stdin. It prints one line that peak.py
 * parses: isa=... lanes=... gflops=... seconds=... checksum=...
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define ISA "avx512"
typedef __m512 vec;
#define SPLAT(x) _mm512_set1_ps(x)
#define STEP(a) a = _mm512_fmadd_ps(a, m, c)
#elif defined(__AVX__) && defined(__FMA__)
#include <immintrin.h>
#define ISA "avx2"
typedef __m256 vec;
#define SPLAT(x) _mm256_set1_ps(x)
#define STEP(a) a = _mm256_fmadd_ps(a, m, c)
#elif defined(__AVX__)
#include <immintrin.h>
#define ISA "avx"
typedef __m256 vec;
#define SPLAT(x) _mm256_set1_ps(x)
#define STEP(a) a = _mm256_add_ps(_mm256_mul_ps(a, m), c)
#elif defined(__SSE__)
#include <xmmintrin.h>
#define ISA "sse"
typedef __m128 vec;
#define SPLAT(x) _mm_set1_ps(x)
#define STEP(a) a = _mm_add_ps(_mm_mul_ps(a, m), c)
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#define ISA "neon"
typedef float32x4_t vec;
#define SPLAT(x) vdupq_n_f32(x)
#define STEP(a) a = vfmaq_f32(c, a, m)
#else
#define ISA "generic"
typedef float vec __attribute__((vector_size(16)));
#define SPLAT(x) ((vec){(x), (x), (x), (x)})
#define STEP(a) a = a * m + c
#endif

#define LANES ((int)(sizeof(vec) / sizeof(float)))
#define CHAINS 12
#define CHUNK 8192

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double total(vec v) {
    float parts[sizeof(vec) / sizeof(float)];
    double sum = 0.0;
    memcpy(parts, &v, sizeof v);
    for (int i = 0; i < LANES; i++) sum += parts[i];
    return sum;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SECONDS WARMUP_SECONDS (then close stdin)\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]), warmup = atof(argv[2]);
    volatile float vm = 0.999f, vc = 0.001f, v0 = 1.0f, dv = 0.001f;
    float m0 = vm, c0 = vc, x = v0, d = dv;
    vec m = SPLAT(m0), c = SPLAT(c0);
    vec a0 = SPLAT(x), a1 = SPLAT(x + d), a2 = SPLAT(x + 2 * d), a3 = SPLAT(x + 3 * d);
    vec a4 = SPLAT(x + 4 * d), a5 = SPLAT(x + 5 * d), a6 = SPLAT(x + 6 * d);
    vec a7 = SPLAT(x + 7 * d), a8 = SPLAT(x + 8 * d), a9 = SPLAT(x + 9 * d);
    vec a10 = SPLAT(x + 10 * d), a11 = SPLAT(x + 11 * d);
    while (getchar() != EOF) {
    }
    long long iters = 0;
    int warming = warmup > 0.0;
    double start = now(), t = start, stop = start + (warming ? warmup : seconds);
    for (;;) {
        for (int i = 0; i < CHUNK; i++) {
            STEP(a0); STEP(a1); STEP(a2); STEP(a3); STEP(a4); STEP(a5);
            STEP(a6); STEP(a7); STEP(a8); STEP(a9); STEP(a10); STEP(a11);
        }
        t = now();
        if (warming) {
            if (t >= stop) {
                warming = 0;
                start = t;
                stop = t + seconds;
            }
            continue;
        }
        iters += CHUNK;
        if (t >= stop) break;
    }
    double elapsed = t - start;
    double flops = (double)iters * CHAINS * LANES * 2.0;
    double sum = total(a0) + total(a1) + total(a2) + total(a3) + total(a4) + total(a5) +
                 total(a6) + total(a7) + total(a8) + total(a9) + total(a10) + total(a11);
    printf("isa=%s lanes=%d gflops=%.3f seconds=%.6f checksum=%.6g\n", ISA, LANES,
           flops / elapsed / 1e9, elapsed, sum);
    return 0;
}
