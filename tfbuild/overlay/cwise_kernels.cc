// tfbuild overlay, part 1 of 3: TensorFlow's own element-wise CPU kernels, compiled for one CPU target.
//
// Every kernel here is a class or functor of the headers the stock wheel ships
// (tensorflow/include/tensorflow/core/kernels/*.h), instantiated in this library and registered for
// the CPU above TensorFlow's own (KernelDefBuilder::Priority: FindKernelRegistration keeps the
// highest). Nothing here is new math: the only difference from the stock kernels is the compiler's
// target flags.
//
// The library is built with hidden visibility and -Bsymbolic: its template instantiations must be
// its own. Exported, TensorFlow's framework (loaded first) would win them at run time and the stock
// -mavx code would run (measured: timings equal to stock's).
//
// Which ops and types are registered comes from cwise_ops.inc and nn_ops.inc, written by tfbuild
// from the release's own registry (tfbuild/overlay/ops.py). This file is loaded only through the loader
// (loader.c), after the CPU and the TensorFlow build have been checked.

#define EIGEN_USE_THREADS

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/kernels/cast_op.h"
#include "tensorflow/core/kernels/cast_op_impl.h"  // the CPU CastFunctor bodies (CAST_FUNCTORS)
#include "tensorflow/core/kernels/cwise_ops_common.h"
#include "tensorflow/core/kernels/cwise_ops_gradients.h"
#include "tensorflow/core/kernels/softmax_op_functor.h"
#include "overlay_kernels.h"

namespace tensorflow {
namespace tfbuild_overlay {

// SoftmaxOp as tensorflow/core/kernels/softmax_op.cc defines it for the CPU, where its functor is
// SoftmaxEigenImpl (softmax_op_functor.h).
template <typename T>
class SoftmaxOp : public OpKernel {
 public:
  explicit SoftmaxOp(OpKernelConstruction* context) : OpKernel(context) {
    log_ = type_string() == "LogSoftmax";
  }

  void Compute(OpKernelContext* context) override {
    const Tensor& logits_in = context->input(0);
    OP_REQUIRES(context, TensorShapeUtils::IsVectorOrHigher(logits_in.shape()),
                errors::InvalidArgument("logits must have >= 1 dimension, got ",
                                        logits_in.shape().DebugString()));
    Tensor* softmax_out = nullptr;
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output(
                                {0}, 0, logits_in.shape(), &softmax_out));
    if (logits_in.NumElements() > 0) {
      functor::SoftmaxEigenImpl<CPUDevice, T>::Compute(
          context->eigen_device<CPUDevice>(), logits_in.flat_inner_dims<T>(),
          softmax_out->flat_inner_dims<T>(), log_);
    }
  }

 private:
  bool log_;
};

// Cast between two float types, as CpuCastOp does it (cast_op.cc: CastOpBase::Compute with the
// CastFunctor of cast_op.h, defined for the CPU in cast_op_impl.h), for one (SrcT, DstT) pair: registered with both type constraints, it
// is chosen over the stock Cast kernel (registered with none) for that pair only.
template <typename In, typename Out>
class CastOp : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* context) : OpKernel(context) {
    OP_REQUIRES_OK(context, context->GetAttr("Truncate", &truncate_));
  }

  void Compute(OpKernelContext* context) override {
    const Tensor& inp = context->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, inp.shape(), &out));
    functor::CastFunctor<CPUDevice, Out, In> cast;
    cast(context->eigen_device<CPUDevice>(), out->flat<Out>(), inp.flat<In>(), truncate_);
  }

 private:
  bool truncate_ = false;
};

// One line per kernel: the op, its kind and its type (cwise_ops.inc; TFB_UNARY and TFB_GRAD are
// overlay_kernels.h's).
#define TFB_CAST(IN, OUT)                                                                    \
  REGISTER_KERNEL_BUILDER(Name("Cast")                                                       \
                              .Device(DEVICE_CPU)                                            \
                              .TypeConstraint<IN>("SrcT")                                    \
                              .TypeConstraint<OUT>("DstT")                                   \
                              .Priority(kPriority),                                          \
                          CastOp<IN, OUT>)

#include "cwise_ops.inc"

}  // namespace tfbuild_overlay
}  // namespace tensorflow
