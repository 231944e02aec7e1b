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
  const int outer_rank = static_cast<int>(dims_.size()) - 1;
  ctx.ParallelFor(outer_ * chunks, run * cost_per_element, [&](int64_t begin, int64_t end) {
    // An odometer over the outer dims: offsets advance by strides instead of being
    // recomputed with divisions for every segment.
    std::vector<int64_t> idx(outer_rank), base(k), offsets(k);
    int64_t o = begin / chunks;
    {
      int64_t rem = o;
      for (int d = outer_rank - 1; d >= 0; --d) {
        idx[d] = rem % dims_[d];
        rem /= dims_[d];
      }
      for (int j = 0; j < k; ++j) base[j] = Offset(j, o);
    }
    for (int64_t item = begin; item < end; ++item) {
      const int64_t c = item % chunks;
      if (c == 0 && item != begin) {
        ++o;
        for (int d = outer_rank - 1; d >= 0; --d) {
          for (int j = 0; j < k; ++j) base[j] += strides_[j][d];
          if (++idx[d] < dims_[d]) break;
          for (int j = 0; j < k; ++j) base[j] -= strides_[j][d] * dims_[d];
          idx[d] = 0;
        }
      }
      const int64_t start = c * run, len = std::min(run, inner - start);
      for (int j = 0; j < k; ++j) offsets[j] = base[j] + start * inner_stride(j);
      fn(offsets.data(), o * inner + start, len);
    }
  });
}

}  // namespace graphjit
