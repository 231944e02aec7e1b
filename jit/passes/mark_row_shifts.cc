#include "jit/passes/mark_row_shifts.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "ir/attr.h"

namespace graphjit {

namespace {

// The ops of a softmax written out, in the order they compute it: the row's max, the
// shifted row, its exp, the row's sum, and the quotient.
struct SoftmaxOps {
  std::string_view max = "Max", sub = "Sub", exp = "Exp", sum = "Sum", quotient = "RealDiv";
};
constexpr SoftmaxOps kOps;

bool KeepsDims(const Node& n) { return GetBoolAttrOr(n, "keep_dims", false).value_or(false); }

// `n` is `op` over exactly these data inputs.
bool Reads(const Node& n, std::string_view op, std::initializer_list<TensorId> inputs) {
  return n.op == op && n.inputs.size() == inputs.size() && std::equal(inputs.begin(), inputs.end(), n.inputs.begin());
}

}  // namespace

bool MarkRowShifts(Graph& graph, const std::set<std::string>& fetched) {
  std::vector<std::vector<int>> consumers(graph.num_nodes());  // by data and control edges
  for (int id = 0; id < graph.num_nodes(); ++id) {
    for (const TensorId& in : graph.node(id)->inputs) consumers[in.node].push_back(id);
    for (int c : graph.node(id)->control_inputs) consumers[c].push_back(id);
  }
  auto is_fetched = [&](int id) { return fetched.count(graph.node(id)->name) > 0; };
  // The one consumer of `id`, if it has exactly one and is not fetched; else -1.
  auto only_consumer = [&](int id) { return consumers[id].size() == 1 && !is_fetched(id) ? consumers[id][0] : -1; };
  bool changed = false;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    Node& max = *graph.node(id);
    if (max.op != kOps.max || max.inputs.size() != 2 || !KeepsDims(max)) continue;
    const int sub = only_consumer(id);
    if (sub < 0 || !Reads(*graph.node(sub), kOps.sub, {max.inputs[0], {id, 0}})) continue;
    const int exp = only_consumer(sub);
    if (exp < 0 || graph.node(exp)->op != kOps.exp || is_fetched(exp)) continue;
    int sum = -1;
    for (int c : consumers[exp])
      if (Reads(*graph.node(c), kOps.sum, {{exp, 0}, max.inputs[1]}) && KeepsDims(*graph.node(c))) sum = c;
    if (sum < 0 || is_fetched(sum)) continue;
    auto is_quotient = [&](int c) { return Reads(*graph.node(c), kOps.quotient, {{exp, 0}, {sum, 0}}); };
    const auto& of_exp = consumers[exp];
    const auto& of_sum = consumers[sum];
    if (std::all_of(of_exp.begin(), of_exp.end(), [&](int c) { return c == sum || is_quotient(c); }) &&
        std::all_of(of_sum.begin(), of_sum.end(), is_quotient) && !of_sum.empty()) {
      tensorflow::AttrValue& mark = max.attrs[kRowShiftAttr];
      changed |= !mark.b();
      mark.set_b(true);
    }
  }
  return changed;
}

}  // namespace graphjit
