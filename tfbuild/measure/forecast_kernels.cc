// tfbuild forecast: TensorFlow's element-wise Eigen expressions, timed on one thread.
//
// Compiled twice against the Eigen headers of the stock wheel (tensorflow/include): once with the
// stock release's flags, once with the plan's. Same source, same headers, only the flags differ, so
// the ratio of the two is what the flags change in TensorFlow's statically compiled Eigen kernels.
// The expressions are the ones TensorFlow's cwise, cast and softmax kernels evaluate (TensorMap
// expressions on Eigen's DefaultDevice, the single-thread case of its ThreadPoolDevice).
//
// Usage: forecast_kernels [REPS [SECONDS_PER_REP]]
// Prints one line per op: name, class, elements per call, then REPS seconds-per-call values.
// Needs the C++ standard library and the Eigen headers only.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "unsupported/Eigen/CXX11/Tensor"

namespace {

using Clock = std::chrono::steady_clock;
// 1 MiB of f32 per tensor: the size of the stock-wheel baseline's TensorFlow micro-benchmarks and of
// benchmarks/forecast.py's TensorFlow side, so that both sides stream the same amount of memory.
constexpr Eigen::Index kElements = 1 << 18;
constexpr Eigen::Index kRow = 256;           // row length of the row-wise ops
constexpr Eigen::Index kRows = kElements / kRow;

using Vec = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>, Eigen::Aligned>;
using Mat = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>, Eigen::Aligned>;
template <typename T>
using VecOf = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor>, Eigen::Aligned>;

template <typename T>
T* buffer(Eigen::Index n) {
  void* p = Eigen::internal::aligned_malloc(sizeof(T) * n);
  return static_cast<T*>(p);
}

float* g_x;
float* g_y;
float* g_out;
Eigen::bfloat16* g_bf16;
Eigen::half* g_f16;
float g_sink = 0;

// Each op is one call of the kernel TensorFlow runs for it.
void op_exp() { Vec(g_out, kElements) = Vec(g_x, kElements).exp(); }
void op_tanh() { Vec(g_out, kElements) = Vec(g_x, kElements).tanh(); }
void op_sigmoid() { Vec(g_out, kElements) = Vec(g_x, kElements).sigmoid(); }
void op_erf() { Vec(g_out, kElements) = Vec(g_x, kElements).erf(); }
void op_log1p() { Vec(g_out, kElements) = Vec(g_y, kElements).log1p(); }
void op_cast_f32_bf16() {
  VecOf<Eigen::bfloat16>(g_bf16, kElements) = Vec(g_x, kElements).cast<Eigen::bfloat16>();
}
void op_cast_f32_f16() {
  VecOf<Eigen::half>(g_f16, kElements) = Vec(g_x, kElements).cast<Eigen::half>();
}
void op_cast_bf16_f32() {
  Vec(g_out, kElements) = VecOf<Eigen::bfloat16>(g_bf16, kElements).cast<float>();
}

// The index lists TensorFlow's row-wise kernels reduce and broadcast with (softmax_op_functor.h).
struct RowLists {
  Eigen::IndexList<Eigen::type2index<1>> along_class;
  Eigen::IndexList<Eigen::Index, Eigen::type2index<1>> batch_by_one;
  Eigen::IndexList<Eigen::type2index<1>, Eigen::Index> one_by_class;
  RowLists() {
    batch_by_one.set(0, kRows);
    one_by_class.set(1, kRow);
  }
};

// tensorflow/core/kernels/softmax_op_functor.h, log = true.
void op_log_softmax() {
  Mat logits(g_x, kRows, kRow);
  Mat out(g_out, kRows, kRow);
  const RowLists r;
  const auto& [along_class, batch_by_one, one_by_class] = r;
  out = logits - logits.maximum(along_class).eval().reshape(batch_by_one).broadcast(one_by_class);
  out = out - out.exp().sum(along_class).log().eval().reshape(batch_by_one).broadcast(one_by_class);
}

// A layer norm as TensorFlow's graph of ops computes it: (x - mean) * rsqrt(var + eps).
void op_layer_norm() {
  Mat x(g_x, kRows, kRow);
  Mat out(g_out, kRows, kRow);
  const RowLists r;
  const auto& [along_class, batch_by_one, one_by_class] = r;
  out = x - x.mean(along_class).eval().reshape(batch_by_one).broadcast(one_by_class);
  out = out * ((out * out).mean(along_class) + 1e-5f)
                  .rsqrt()
                  .eval()
                  .reshape(batch_by_one)
                  .broadcast(one_by_class);
}

void op_add() { Vec(g_out, kElements) = Vec(g_x, kElements) + Vec(g_y, kElements); }
void op_relu() { Vec(g_out, kElements) = Vec(g_x, kElements).cwiseMax(0.0f); }
void op_sum() {
  Eigen::Tensor<float, 0, Eigen::RowMajor> total = Vec(g_x, kElements).sum();
  g_sink += total();
}

struct Op {
  const char* name;
  const char* klass;
  void (*run)();
};

const Op kOps[] = {
    {"exp", "transcendental", op_exp},
    {"tanh", "transcendental", op_tanh},
    {"sigmoid", "transcendental", op_sigmoid},
    {"erf", "transcendental", op_erf},
    {"log1p", "transcendental", op_log1p},
    {"cast_f32_bf16", "cast", op_cast_f32_bf16},
    {"cast_f32_f16", "cast", op_cast_f32_f16},
    {"cast_bf16_f32", "cast", op_cast_bf16_f32},
    {"log_softmax", "composite", op_log_softmax},
    {"layer_norm", "composite", op_layer_norm},
    {"add", "control", op_add},
    {"relu", "control", op_relu},
    {"sum", "control", op_sum},
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds per call: as many calls as fill about `budget` seconds, timed together.
double time_op(const Op& op, long calls) {
  auto start = Clock::now();
  for (long i = 0; i < calls; ++i) op.run();
  return seconds_since(start) / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  double budget = argc > 2 ? std::atof(argv[2]) : 0.02;
  if (reps < 1 || reps > 1000 || !(budget > 0 && budget < 10)) {
    std::fprintf(stderr, "usage: %s [REPS (1-1000) [SECONDS_PER_REP (0-10)]]\n", argv[0]);
    return 2;
  }
  g_x = buffer<float>(kElements);
  g_y = buffer<float>(kElements);
  g_out = buffer<float>(kElements);
  g_bf16 = buffer<Eigen::bfloat16>(kElements);
  g_f16 = buffer<Eigen::half>(kElements);
  for (Eigen::Index i = 0; i < kElements; ++i) {
    // Values across the ranges the ops treat differently (exp's under- and overflow cut-offs
    // excluded), the same in both builds.
    g_x[i] = -8.0f + 16.0f * static_cast<float>((i * 7919) % kElements) / kElements;
    g_y[i] = 0.001f + 4.0f * static_cast<float>((i * 104729) % kElements) / kElements;
    g_bf16[i] = Eigen::bfloat16(g_x[i]);
  }
  for (const Op& op : kOps) {
    // Warm up, and find how many calls fill the budget.
    long calls = 1;
    while (true) {
      auto start = Clock::now();
      for (long i = 0; i < calls; ++i) op.run();
      if (seconds_since(start) >= budget / 4 || calls >= (1L << 24)) break;
      calls *= 2;
    }
    calls *= 4;
    std::printf("%s\t%s\t%ld", op.name, op.klass, static_cast<long>(kElements));
    for (int r = 0; r < reps; ++r) std::printf("\t%.6e", time_op(op, calls));
    std::printf("\n");
  }
  std::fprintf(stderr, "checksum %g %g\n", g_sink, g_out[kElements / 3]);
  return 0;
}
