#include "runtime/op_registry.h"

#include <cassert>

namespace graphjit {

Status InferenceContext::ShapeError(const std::string& message) const {
  return FailedPrecondition(NodeLabel(node) + ": " + message);
}

Status InferenceContext::TypeError(const std::string& message) const { return InvalidArgument(NodeLabel(node) + ": " + message); }

Status InferenceContext::ExpectDType(int i, std::initializer_list<DType> allowed) const {
  for (DType d : allowed)
    if (dtype(i) == d) return Status::Ok();
  std::string names;
  for (DType d : allowed) names += (names.empty() ? "" : ", ") + DTypeName(d);
  return TypeError("input " + std::to_string(i) + " has type " + DTypeName(dtype(i)) + ", expected one of {" + names + "}");
}

StatusOr<DType> InferenceContext::TypeAttrMatching(std::string_view attr, std::initializer_list<int> inputs) const {
  GJ_ASSIGN_OR_RETURN(DType t, GetTypeAttr(node, attr));
  if (!IsSupportedDType(t)) return TypeError("type " + DTypeName(t) + " is not supported");
  for (int i : inputs) {
    if (i < num_inputs() && dtype(i) != t)
      return TypeError("input " + std::to_string(i) + " has type " + DTypeName(dtype(i)) + " but attr '" + std::string(attr) +
                       "' is " + DTypeName(t));
  }
  return t;
}

StatusOr<Tensor*> KernelContext::AllocateOutput(int i) {
  auto t = Tensor::Allocate(output_dtypes[i], output_shapes[i], allocator);
  if (!t.ok()) return t.status().WithContext(NodeLabel(node));
  outputs[i] = std::move(t).value();
  return &outputs[i];
}

StatusOr<Tensor*> KernelContext::ForwardInputOrAllocateOutput(std::initializer_list<int> candidates, int i) {
  for (int input : candidates) {
    const Tensor& in = inputs[input];
    if (reusable_inputs != nullptr && (*reusable_inputs)[input] && in.dtype() == output_dtypes[i] &&
        in.num_elements() == output_shapes[i].num_elements()) {
      outputs[i] = Tensor(in.dtype(), output_shapes[i], in.buffer());
      return &outputs[i];
    }
  }
  return AllocateOutput(i);
}

Status KernelContext::Error(const std::string& message) const { return FailedPrecondition(NodeLabel(node) + ": " + message); }

void KernelContext::ParallelFor(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& fn,
                                bool one_block_per_thread) const {
  // Below ~64k units of work a hand-off to a spinning thread costs more than it saves;
  // waking a sleeping one (a futex wake and an inter-processor interrupt: 20 us for the
  // caller and 60 us until it runs, measured on a 2-core VM) pays only above ~1M units.
  constexpr int64_t kMinWorkPerBlock = 1 << 16;
  constexpr int64_t kMinWorkToWake = 1 << 20;
  cost_per_item = std::max<int64_t>(1, cost_per_item);
  int64_t min_block = std::max<int64_t>(1, kMinWorkPerBlock / cost_per_item);
  if (intra_op == nullptr || n < 2 * min_block) {
    fn(0, n);
    return;
  }
  const bool wake = n >= kMinWorkToWake / cost_per_item;
  intra_op->ParallelFor(n, min_block, fn, wake, one_block_per_thread);
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* r = new OpRegistry();
  return r;
}

void OpRegistry::Register(OpDef def) {
  assert(!ops_.count(def.name) && "op registered twice");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

StatusOr<OpDef> OpRegistry::Replace(OpDef def) {
  auto it = ops_.find(def.name);
  if (it == ops_.end()) return NotFound("no op '" + def.name + "' to replace");
  OpDef previous = std::move(it->second);
  it->second = std::move(def);
  return previous;
}

const OpDef* OpRegistry::Find(std::string_view op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

bool RegisterOps(std::vector<OpDef> defs) {
  for (auto& d : defs) OpRegistry::Global()->Register(std::move(d));
  return true;
}

}  // namespace graphjit
