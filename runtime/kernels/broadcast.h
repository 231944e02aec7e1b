// Iteration over broadcast operands: the output is walked as (segment, inner run)
// pairs where every operand is either contiguous (stride 1) or one repeated value
// (stride 0) along the run, so the inner loops vectorize.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/shape.h"
#include "runtime/op_registry.h"

namespace graphjit {

class BroadcastPlan {
 public:
  // `inputs` must broadcast to `output` (checked by shape inference).
  BroadcastPlan(const std::vector<Shape>& inputs, const Shape& output);

  int num_operands() const { return static_cast<int>(strides_.size()); }
  int64_t inner() const { return dims_.back(); }
  int64_t outer() const { return outer_; }
  // Stride (0 or 1) of operand k along the inner run.
  int64_t inner_stride(int k) const { return strides_[k].back(); }
  // Element offset of operand k at the start of outer segment `o`.
  int64_t Offset(int k, int64_t o) const;

  // Calls fn(operand offsets, output offset, run length) over the whole output,
  // split over the intra-op threads; runs are at most `max_run` long.
  template <typename F>
  void Run(const KernelContext& ctx, int64_t cost_per_element, F&& fn) const;

 private:
  std::vector<int64_t> dims_;                  // collapsed output dims (at least one)
  std::vector<std::vector<int64_t>> strides_;  // per operand, per collapsed dim
  int64_t outer_ = 1;
};

template <typename F>
void BroadcastPlan::Run(const KernelContext& ctx, int64_t cost_per_element, F&& fn) const {
  constexpr int64_t kMaxRun = 1 << 14;
  const int64_t inner = this->inner();
  if (inner == 0 || outer_ == 0) return;
  const int64_t chunks = (inner + kMaxRun - 1) / kMaxRun;
  const int64_t run = (inner + chunks - 1) / chunks;
  const int k = num_operands();
  ctx.ParallelFor(outer_ * chunks, run * cost_per_element, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> offsets(k);
    for (int64_t item = begin; item < end; ++item) {
      int64_t o = item / chunks, start = (item % chunks) * run;
      int64_t len = std::min(run, inner - start);
      for (int j = 0; j < k; ++j) offsets[j] = Offset(j, o) + start * inner_stride(j);
      fn(offsets.data(), o * inner + start, len);
    }
  });
}

}  // namespace graphjit
