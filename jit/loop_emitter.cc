#include "jit/loop_emitter.h"

#include <algorithm>

namespace graphjit::emitter {

StatusOr<int64_t> LoopEmitter::CpuBody(EmittedKernel* kernel) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  // Rows are all dims but the last; each row is one loop over the last dim.
  const int n = fusion_.space.rank();
  std::vector<int64_t> outer(dims.begin(), dims.begin() + std::max(0, n - 1)), inner;
  if (n > 0) inner = {dims.back()};
  GJ_RETURN_IF_ERROR(Rows(outer, kernel, [&] {
    Index index = row_;
    return Nest(inner, 0, index, [&](const Index& at) { return StoreRoots(fusion_.roots, at); });
  }));
  return n > 0 ? dims.back() : 1;
}

Status LoopEmitter::GpuBody(EmittedKernel* kernel, EmittedModule*, std::string*) {
  const std::vector<int64_t>& dims = fusion_.space.dims();
  const int64_t elements = fusion_.space.num_elements();
  const int64_t vector = LoopVectorWidth(dims);
  return GridStride(elements / vector, kGpuBlock, kernel, [&](const Value& unit) -> Status {
    if (vector == 1) {
      const Index index = Delinearize(unit, dims);
      linear_[Names(index)] = unit;
      Status stored = StoreRoots(fusion_.roots, index);
      linear_.clear();
      return stored;
    }
    // Elements unit * 4 + j (the last index of the first, plus j: the form in which LLVM
    // sees that the four are consecutive), their values first, then their stores: loads
    // and stores that LLVM's vectorizer joins into 128-bit ones.
    const Value first = b_.Apply(Op::kMulI, {unit, IndexConst(vector)});
    const Index index = Delinearize(first, dims);
    std::vector<Index> at(vector, index);
    linear_[Names(index)] = first;
    for (int64_t j = 1; j < vector; ++j) {
      at[j].back() = b_.Apply(Op::kAddI, {index.back(), IndexConst(j)});
      linear_[Names(at[j])] = b_.Apply(Op::kAddI, {first, IndexConst(j)});
    }
    // Loads go first, together (LLVM's vectorizer joins only nearby ones).
    std::vector<std::string> ready;
    for (const auto& [key, linear] : linear_) ready.push_back(linear.name);
    for (const Index& i : at)
      for (const Value& v : i) ready.push_back(v.name);
    b_.OpenLoadSlot(ready);
    std::vector<std::vector<Value>> values(vector);
    for (int64_t j = 0; j < vector; ++j) {
      for (const TensorId& root : fusion_.roots) {
        auto v = Get(root, at[j]);
        if (!v.ok()) return v.status();
        values[j].push_back(*v);
      }
    }
    b_.CloseLoadSlot();
    for (int64_t j = 0; j < vector; ++j)
      for (size_t r = 0; r < fusion_.roots.size(); ++r) Store(p_.buffer_of.at(fusion_.roots[r]), at[j], values[j][r]);
    linear_.clear();
    return Status::Ok();
  });
}

}  // namespace graphjit::emitter
