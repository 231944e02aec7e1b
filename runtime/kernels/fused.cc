#include "runtime/kernels/fused.h"

#include <cmath>

namespace graphjit {

StatusOr<Epilogue> ReadEpilogue(const Node& node, bool residual_allowed) {
  const tensorflow::AttrValue* attr = node.FindAttr("fused_ops");
  const std::string expected =
      residual_allowed ? "[BiasAdd], [BiasAdd, Add], then an optional activation" : "[BiasAdd] or [BiasAdd, activation]";
  if (attr == nullptr || attr->list().s_size() < 1 || attr->list().s(0) != "BiasAdd")
    return Unimplemented(NodeLabel(node) + ": fused_ops must be " + expected);
  Epilogue e;
  int next = 1;
  if (residual_allowed && attr->list().s_size() > 1 && attr->list().s(1) == "Add") e.residual = true, ++next;
  if (attr->list().s_size() > next + 1) return Unimplemented(NodeLabel(node) + ": fused_ops must be " + expected);
  if (attr->list().s_size() == next) return e;
  const std::string& act = attr->list().s(next);
  if (act == "Relu")
    e.act = Activation::kRelu;
  else if (act == "Relu6")
    e.act = Activation::kRelu6;
  else if (act == "Elu")
    e.act = Activation::kElu;
  else if (act == "Tanh")
    e.act = Activation::kTanh;
  else if (act == "Sigmoid")
    e.act = Activation::kSigmoid;
  else if (act == "GeluExact")
    e.act = Activation::kGeluExact;
  else if (act == "GeluApproximate")
    e.act = Activation::kGeluApproximate;
  else
    return Unimplemented(NodeLabel(node) + ": fused activation " + act +
                         " is not supported (Relu, Relu6, Elu, Tanh, Sigmoid, GeluExact, GeluApproximate)");
  return e;
}

StatusOr<Epilogue> InferFusedEpilogue(InferenceContext& c, int bias_input, int64_t channels, bool residual_allowed) {
  GJ_ASSIGN_OR_RETURN(Epilogue e, ReadEpilogue(c.node, residual_allowed));
  GJ_ASSIGN_OR_RETURN(int64_t num_args, GetIntAttrOr(c.node, "num_args", 1));
  const int args = e.residual ? 2 : 1;
  if (num_args != args || c.num_inputs() != bias_input + args)
    return Unimplemented(NodeLabel(c.node) + ": num_args must be " + std::to_string(args) +
                         (e.residual ? " (a bias and a residual)" : " (a bias)") + " and be the inputs after the operands");
  const Shape& bias = c.shape(bias_input);
  if (!bias.unknown_rank() && (bias.rank() != 1 || (channels >= 0 && bias.dim(0) >= 0 && bias.dim(0) != channels)))
    return c.ShapeError("bias must be a vector of " + std::to_string(channels) + " channels, got " + bias.ToString());
  if (e.residual) {
    const Shape& r = c.shape(bias_input + 1);
    const Shape& out = c.output_shapes[0];
    bool same = r.unknown_rank() || out.unknown_rank() || r.rank() == out.rank();
    for (int i = 0; same && !r.unknown_rank() && !out.unknown_rank() && i < r.rank(); ++i)
      same = r.dim(i) < 0 || out.dim(i) < 0 || r.dim(i) == out.dim(i);
    if (!same) return c.ShapeError("the residual " + r.ToString() + " is not of the output's shape " + out.ToString());
  }
  return e;
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

dnnl::primitive_attr OneDnnAttr(Epilogue epilogue) {
  dnnl::post_ops ops;
  if (epilogue.residual) ops.append_sum(1.0f);
  switch (epilogue.act) {
    case Activation::kNone: break;
    case Activation::kRelu: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f); break;
    case Activation::kRelu6: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, 6.0f); break;
    case Activation::kElu: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_elu, 1.0f, 0.0f); break;
    case Activation::kTanh: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f); break;
    case Activation::kSigmoid: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f); break;
    case Activation::kGeluExact: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f); break;
    case Activation::kGeluApproximate: ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f); break;
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
    case Activation::kTanh: return std::tanh(x);
    case Activation::kSigmoid: return C(1) / (C(1) + std::exp(-x));
    case Activation::kGeluExact: return C(0.5) * x * (C(1) + std::erf(x * C(M_SQRT1_2)));
    case Activation::kGeluApproximate:
      return C(0.5) * x * (C(1) + std::tanh(C(0.7978845608028654) * (x + C(0.044715) * x * x * x)));
  }
  return x;
}

}  // namespace

Status ApplyEpilogue(const KernelContext& ctx, const Tensor& bias, const Tensor* residual, Activation activation, Tensor* out) {
  const int64_t channels = bias.num_elements();
  if (channels == 0) return Status::Ok();
  const int64_t rows = out->num_elements() / channels;
  return VisitTypes<TypeSet::kFloat>(out->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = ComputeType<T>;
    T* y = out->data<T>();
    const T* b = bias.data<T>();
    const T* add = residual ? residual->data<T>() : nullptr;
    ctx.ParallelFor(rows, channels * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t j = 0; j < channels; ++j) {
          const int64_t i = r * channels + j;
          C v = static_cast<C>(y[i]) + static_cast<C>(b[j]);
          if (add) v += static_cast<C>(add[i]);
          y[i] = static_cast<T>(Activate<C>(v, activation));
        }
    });
    return Status::Ok();
  });
}

}  // namespace graphjit
