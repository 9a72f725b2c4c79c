// tfbuild overlay, part 2 of 3: the activations whose kernel classes build on numeric_op.h's
// UnaryElementWiseOp (Elu, Selu and their gradients in relu_op.h; Softplus as softplus_op.cc
// defines it). numeric_op.h and cwise_ops_common.h both define tensorflow::UnaryOp, so the two
// parts are separate translation units. What the library is and why: cwise_kernels.cc.

#define EIGEN_USE_THREADS

#include "tensorflow/core/framework/numeric_op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/kernels/relu_op.h"
#include "tensorflow/core/kernels/softplus_op.h"
#include "overlay_kernels.h"

namespace tensorflow {
namespace tfbuild_overlay {

// SoftplusOp and SoftplusGradOp as tensorflow/core/kernels/softplus_op.cc defines them (the class
// is not in a header; the functors are, in softplus_op.h).
template <typename T>
class SoftplusOp : public UnaryElementWiseOp<T, SoftplusOp<T>> {
 public:
  explicit SoftplusOp(OpKernelConstruction* context)
      : UnaryElementWiseOp<T, SoftplusOp<T>>(context) {}

  void Operate(OpKernelContext* context, const Tensor& input, Tensor* output) {
    functor::Softplus<CPUDevice, T> functor;
    functor(context->eigen_device<CPUDevice>(), input.flat<T>(), output->flat<T>());
  }
};

template <typename T>
class SoftplusGradOp : public BinaryElementWiseOp<T, SoftplusGradOp<T>> {
 public:
  explicit SoftplusGradOp(OpKernelConstruction* context)
      : BinaryElementWiseOp<T, SoftplusGradOp<T>>(context) {}

  template <int NDIMS>
  void Operate(OpKernelContext* context, const Tensor& g, const Tensor& a, Tensor* output) {
    OP_REQUIRES(context, a.IsSameSize(g),
                errors::InvalidArgument("g and a must be the same size"));
    functor::SoftplusGrad<CPUDevice, T> functor;
    functor(context->eigen_device<CPUDevice>(), g.flat<T>(), a.flat<T>(), output->flat<T>());
  }
};

#include "nn_ops.inc"

}  // namespace tfbuild_overlay
}  // namespace tensorflow
