// The epilogue of TensorFlow's fused ops (_FusedMatMul, _FusedConv2D): a bias over the
// last dimension, then an optional activation. oneDNN applies it as post-ops while the
// output tile is in cache; other dtypes apply it in one pass over the output.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/kernels/common.h"

namespace graphjit {

enum class Activation { kNone, kRelu, kRelu6, kElu, kTanh, kSigmoid, kGeluExact, kGeluApproximate };

// What a fused op applies to its product: + bias over the last dimension, then, for a
// convolution, + a residual tensor of the output's shape (fused_ops [BiasAdd, Add, ...]:
// ResNet's skip connection), then an optional activation.
struct Epilogue {
  bool residual = false;
  Activation act = Activation::kNone;
};

// Checks `fused_ops` ([BiasAdd], Add where `residual_allowed`, an optional activation: Relu,
// Relu6, Elu, Tanh, Sigmoid, GeluExact or GeluApproximate, all TensorFlow's remapper makes) and `num_args` (1, or 2 with Add),
// that input `bias_input` is a vector of the output's channels, and that the residual, the input after it, has the output's
// shape.
StatusOr<Epilogue> InferFusedEpilogue(InferenceContext& c, int bias_input, int64_t channels, bool residual_allowed);
StatusOr<Epilogue> ReadEpilogue(const Node& node, bool residual_allowed);

// The CPU engine graphjit's oneDNN primitives run on.
const dnnl::engine& OneDnnEngine();

// Runs block(begin, end) over [0, n) on the intra-op threads, one block per thread (each
// oneDNN call packs its operands), every block a single-threaded oneDNN call. graphjit
// splits oneDNN's work itself: Debian's oneDNN parallelizes with OpenMP, whose workers
// spin-wait after each call and then compete for the cores with the runtime's own
// threads (2 threads ran 40x slower than 1); a team of one thread starts no OpenMP
// worker at all. Returns the message of the first dnnl::error a block threw, or "".
std::string OneDnnParallelFor(const KernelContext& ctx, int64_t n, int64_t cost_per_item,
                              const std::function<void(int64_t, int64_t)>& block);

// oneDNN primitives built once per key (a geometry) and shared by every caller; `make_pd`
// builds the primitive descriptor of a missing one.
template <typename Primitive>
class OneDnnPrimitives {
 public:
  struct Entry {
    typename Primitive::primitive_desc pd;
    Primitive primitive;
  };
  template <typename MakePd>
  const Entry& Get(const std::string& key, const MakePd& make_pd) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      typename Primitive::primitive_desc pd = make_pd();
      it = entries_.emplace(key, std::make_unique<Entry>(Entry{pd, Primitive(pd)})).first;
    }
    return *it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

// Attributes for graphjit's oneDNN primitives: the residual (a sum: the destination must
// hold it when the primitive runs) and the activation as post-ops, and a scratchpad the
// caller provides, since oneDNN's own is shared by every execution and kernels run
// concurrently on the inter-op threads.
dnnl::primitive_attr OneDnnAttr(Epilogue epilogue);

// out[..., j] = act(out[..., j] + bias[j] [+ residual[..., j]]), in place.
Status ApplyEpilogue(const KernelContext& ctx, const Tensor& bias, const Tensor* residual, Activation activation, Tensor* out);

}  // namespace graphjit
