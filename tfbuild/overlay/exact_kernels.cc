// tfbuild overlay, part 3 of 3: the kernels compiled with EIGEN_FAST_MATH=0 (compile.py adds it to
// this file's command line only). What the library is and why: cwise_kernels.cc.
//
// Eigen's fast math (Eigen/src/Core/util/Macros.h: EIGEN_FAST_MATH, 1 unless defined) computes
// psqrt for AVX-512 packets as a Newton step from the rsqrt14 estimate
// (arch/AVX512/MathFunctions.h), where its SSE and AVX packets, which stock's -mavx build uses,
// always take the sqrt instruction (arch/SSE/MathFunctions.h, arch/AVX/MathFunctions.h). The
// estimate is off by up to 2 ulp, and under the denormals-are-zero mode TensorFlow runs its kernels
// in it returns a subnormal input itself where the instruction, like stock, returns 0
// (MathFunctionsImpl.h, generic_sqrt_newton_step: "return a itself for 0": a subnormal compares
// equal to 0). Without fast math every packet width takes the instruction: correctly rounded, as
// stock's. It is not the whole library's setting: it also takes the packet path from tanh, erf and
// erfc (HasTanh, HasErf, HasErfc = EIGEN_FAST_MATH in arch/*/PacketMath.h): tanh measured 110x
// slower. The kernels here must share none of the code fast math changes with the other parts:
// the linker would keep one of the two (compile.py checks the objects' symbols before linking).

#define EIGEN_USE_THREADS

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/kernels/cwise_ops_common.h"
#include "overlay_kernels.h"

#if EIGEN_FAST_MATH
#error "exact_kernels.cc is compiled with -DEIGEN_FAST_MATH=0"
#endif

namespace tensorflow {
namespace tfbuild_overlay {

#include "exact_ops.inc"

}  // namespace tfbuild_overlay
}  // namespace tensorflow
