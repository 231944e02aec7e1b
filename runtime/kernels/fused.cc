#include "runtime/kernels/fused.h"

#include <cmath>

namespace graphjit {

StatusOr<Activation> ReadActivation(const Node& node) {
  const tensorflow::AttrValue* ops = node.FindAttr("fused_ops");
  if (ops == nullptr || ops->list().s_size() < 1 || ops->list().s(0) != "BiasAdd" || ops->list().s_size() > 2)
    return Unimplemented(NodeLabel(node) + ": fused_ops must be [BiasAdd] or [BiasAdd, activation]");
  if (ops->list().s_size() == 1) return Activation::kNone;
  const std::string& act = ops->list().s(1);
  if (act == "Relu") return Activation::kRelu;
  if (act == "Relu6") return Activation::kRelu6;
  if (act == "Elu") return Activation::kElu;
  return Unimplemented(NodeLabel(node) + ": fused activation " + act + " is not supported (Relu, Relu6, Elu)");
}

StatusOr<Activation> InferFusedEpilogue(InferenceContext& c, int bias_input, int64_t channels) {
  GJ_ASSIGN_OR_RETURN(int64_t num_args, GetIntAttrOr(c.node, "num_args", 1));
  if (num_args != 1) return Unimplemented(NodeLabel(c.node) + ": num_args must be 1 (a bias)");
  GJ_ASSIGN_OR_RETURN(Activation act, ReadActivation(c.node));
  const Shape& bias = c.shape(bias_input);
  if (!bias.unknown_rank() && (bias.rank() != 1 || (channels >= 0 && bias.dim(0) >= 0 && bias.dim(0) != channels)))
    return c.ShapeError("bias must be a vector of " + std::to_string(channels) + " channels, got " + bias.ToString());
  return act;
}

const dnnl::engine& OneDnnEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

std::string OneDnnParallelFor(const KernelContext& ctx, int64_t n, int64_t cost_per_item,
                              const std::function<void(int64_t, int64_t)>& block) {
  std::string error;
  std::mutex mu;
  ctx.ParallelFor(
      n, cost_per_item,
      [&](int64_t begin, int64_t end) {
        // OpenMP's thread count is per thread (an ICV of the thread's implicit task).
        thread_local bool single = false;
        if (!single) omp_set_num_threads(1);
        single = true;
        try {
          block(begin, end);
        } catch (const dnnl::error& err) {
          std::lock_guard<std::mutex> lock(mu);
          if (error.empty()) error = err.what();
        }
      },
      /*one_block_per_thread=*/true);
  return error;
}

dnnl::primitive_attr OneDnnAttr(Activation activation) {
  dnnl::post_ops ops;
  switch (activation) {
    case Activation::kNone: break;
    case Activation::kRelu: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f); break;
    case Activation::kRelu6: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f); break;
    case Activation::kElu: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_elu, 1.0f, 0.0f); break;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {

template <typename C>
C Activate(C x, Activation activation) {
  switch (activation) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x < C(0) ? C(0) : x;  // NaN stays NaN
    case Activation::kRelu6: return x < C(0) ? C(0) : (x > C(6) ? C(6) : x);
    case Activation::kElu: return x < C(0) ? std::expm1(x) : x;
  }
  return x;
}

}  // namespace

Status ApplyEpilogue(const KernelContext& ctx, const Tensor& bias, Activation activation, Tensor* out) {
  const int64_t channels = bias.num_elements();
  if (channels == 0) return Status::Ok();
  const int64_t rows = out->num_elements() / channels;
  return VisitTypes<TypeSet::kFloat>(out->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = ComputeType<T>;
    T* y = out->data<T>();
    const T* b = bias.data<T>();
    ctx.ParallelFor(rows, channels * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t j = 0; j < channels; ++j) {
          T& v = y[r * channels + j];
          v = static_cast<T>(Activate<C>(static_cast<C>(v) + static_cast<C>(b[j]), activation));
        }
    });
    return Status::Ok();
  });
}

}  // namespace graphjit
