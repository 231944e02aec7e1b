#include "runtime/kernels/broadcast.h"

namespace graphjit {

BroadcastPlan::BroadcastPlan(const std::vector<Shape>& inputs, const Shape& output) {
  const int rank = output.rank();
  // 1. Strides of every operand in output coordinates (0 where it is broadcast).
  std::vector<std::vector<int64_t>> full(inputs.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < inputs.size(); ++k) {
    int64_t stride = 1;
    for (int i = inputs[k].rank() - 1; i >= 0; --i) {
      int oi = rank - inputs[k].rank() + i;
      full[k][oi] = inputs[k].dim(i) == 1 ? 0 : stride;
      stride *= inputs[k].dim(i);
    }
  }
  // 2. Drop size-1 output dims, then merge neighbours that every operand walks
  //    the same way (both contiguous with each other, or both broadcast).
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(inputs.size());
  for (int i = 0; i < rank; ++i) {
    if (output.dim(i) == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < inputs.size() && merge; ++k) merge = st[k].back() == full[k][i] * output.dim(i);
    if (merge) {
      dims.back() *= output.dim(i);
      for (size_t k = 0; k < inputs.size(); ++k) st[k].back() = full[k][i];
    } else {
      dims.push_back(output.dim(i));
      for (size_t k = 0; k < inputs.size(); ++k) st[k].push_back(full[k][i]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto& s : st) s.push_back(0);
  }
  dims_ = std::move(dims);
  strides_ = std::move(st);
  for (size_t i = 0; i + 1 < dims_.size(); ++i) outer_ *= dims_[i];
}

int64_t BroadcastPlan::Offset(int k, int64_t o) const {
  int64_t offset = 0;
  for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) {
    offset += (o % dims_[i]) * strides_[k][i];
    o /= dims_[i];
  }
  return offset;
}

}  // namespace graphjit
