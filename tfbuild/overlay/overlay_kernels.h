// tfbuild overlay: what both kernel files share (cwise_kernels.cc says what the library is).
#ifndef TFBUILD_OVERLAY_KERNELS_H_
#define TFBUILD_OVERLAY_KERNELS_H_

#include "tensorflow/core/framework/op_kernel.h"

namespace tensorflow {
namespace tfbuild_overlay {

typedef Eigen::ThreadPoolDevice CPUDevice;

// Above every stock CPU kernel (they are registered at priority 0).
constexpr int kPriority = 1;

}  // namespace tfbuild_overlay
}  // namespace tensorflow

// One kernel of op NAME for type T (the attribute "T"), above the stock kernel.
#define TFB_KERNEL(NAME, T, ...)                                                             \
  REGISTER_KERNEL_BUILDER(                                                                   \
      Name(NAME).Device(DEVICE_CPU).TypeConstraint<T>("T").Priority(kPriority), __VA_ARGS__)

// A kernel class of TensorFlow's headers (template <Device, T>), or one of this library's (<T>).
#define TFB_CLASS(NAME, CLASS, T) TFB_KERNEL(NAME, T, CLASS<CPUDevice, T>)
#define TFB_OWN(NAME, CLASS, T) TFB_KERNEL(NAME, T, CLASS<T>)

// A functor of cwise_ops.h in cwise_ops_common.h's UnaryOp, or cwise_ops_gradients.h's in
// SimpleBinaryOp (only where cwise_ops_common.h is included: numeric_op.h has another UnaryOp).
#define TFB_UNARY(NAME, FUNCTOR, T) TFB_KERNEL(NAME, T, UnaryOp<CPUDevice, functor::FUNCTOR<T>>)
#define TFB_GRAD(NAME, FUNCTOR, T) \
  TFB_KERNEL(NAME, T, SimpleBinaryOp<CPUDevice, functor::FUNCTOR<T>>)

#endif  // TFBUILD_OVERLAY_KERNELS_H_
