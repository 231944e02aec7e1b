// Einsum with one or two operands, as Keras layers write it ("abc,cde->abde",
// "aecd,abcd->acbe", ...). Two operands become transpose -> batched GEMM -> transpose;
// labels that appear in one operand only and not in the output are summed first.
// Not supported: repeated labels within one operand (diagonals), more than two
// operands, broadcasting of ellipsis dimensions.

#include <cctype>
#include <map>
#include <set>

#include "runtime/kernels/common.h"

namespace graphjit {
namespace {

struct Equation {
  std::vector<std::string> inputs;  // one label per dim, after '...' expansion
  std::string output;
};

// Parses and expands '...' for the given input ranks (unknown rank: -1).
StatusOr<Equation> ParseEquation(const InferenceContext& c, const std::vector<int>& ranks) {
  GJ_ASSIGN_OR_RETURN(std::string eq, GetStringAttr(c.node, "equation"));
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  if (arrow == std::string::npos) return Unimplemented(NodeLabel(c.node) + ": equations without '->' are not supported");
  Equation e;
  std::string lhs = eq.substr(0, arrow);
  e.output = eq.substr(arrow + 2);
  size_t pos = 0;
  while (true) {
    size_t comma = lhs.find(',', pos);
    e.inputs.push_back(lhs.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (e.inputs.size() != ranks.size())
    return c.TypeError("equation '" + eq + "' has " + std::to_string(e.inputs.size()) + " operands, the node has " +
                       std::to_string(ranks.size()) + " inputs");
  if (e.inputs.size() > 2) return Unimplemented(NodeLabel(c.node) + ": Einsum with more than two operands");
  for (const std::string* part : {&lhs, &e.output})
    for (size_t i = 0; i < part->size(); ++i) {
      char ch = (*part)[i];
      if (ch == ',' || std::isalpha(static_cast<unsigned char>(ch))) continue;
      if (part->compare(i, 3, "...") == 0) {
        i += 2;
        continue;
      }
      return c.TypeError("equation '" + eq + "' has an invalid label '" + std::string(1, ch) + "'");
    }
  // '...' becomes the digits '0'.. (never letters), right-aligned across operands.
  int ellipsis_rank = -1;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    std::string& s = e.inputs[i];
    size_t el = s.find("...");
    if (el == std::string::npos) continue;
    if (ranks[i] < 0) return Unimplemented(NodeLabel(c.node) + ": '...' needs inputs of known rank");
    int n = ranks[i] - static_cast<int>(s.size() - 3);
    if (n < 0)
      return c.ShapeError("operand " + std::to_string(i) + " has rank " + std::to_string(ranks[i]) +
                          ", fewer than the labels of '" + s + "'");
    if (ellipsis_rank >= 0 && n != ellipsis_rank)
      return Unimplemented(NodeLabel(c.node) + ": '...' covering different ranks (broadcasting)");
    ellipsis_rank = n;
    std::string digits;
    for (int d = 0; d < n; ++d) digits += static_cast<char>('0' + d);
    s.replace(el, 3, digits);
  }
  size_t el = e.output.find("...");
  if (el != std::string::npos) {
    std::string digits;
    for (int d = 0; d < std::max(ellipsis_rank, 0); ++d) digits += static_cast<char>('0' + d);
    e.output.replace(el, 3, digits);
  }
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (ranks[i] >= 0 && static_cast<int>(e.inputs[i].size()) != ranks[i])
      return c.ShapeError("operand " + std::to_string(i) + " has rank " + std::to_string(ranks[i]) + " but labels '" +
                          e.inputs[i] + "'");
    if (std::set<char>(e.inputs[i].begin(), e.inputs[i].end()).size() != e.inputs[i].size())
      return Unimplemented(NodeLabel(c.node) + ": repeated labels within an operand (diagonals)");
  }
  for (char l : e.output)
    if (e.inputs[0].find(l) == std::string::npos && (e.inputs.size() < 2 || e.inputs[1].find(l) == std::string::npos))
      return c.TypeError("output label '" + std::string(1, l) + "' appears in no operand");
  return e;
}

// Size of every label; -1 where unknown. A label's sizes must agree across operands.
StatusOr<std::map<char, int64_t>> LabelSizes(const InferenceContext& c, const Equation& e) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Shape& s = c.shape(static_cast<int>(i));
    for (size_t d = 0; d < e.inputs[i].size(); ++d) {
      char l = e.inputs[i][d];
      int64_t v = s.unknown_rank() ? -1 : s.dim(static_cast<int>(d));
      auto [it, fresh] = size.emplace(l, v);
      if (!fresh && v >= 0) {
        if (it->second >= 0 && it->second != v)
          return c.ShapeError("label '" + std::string(1, l) + "' has size " + std::to_string(it->second) + " and " +
                              std::to_string(v));
        it->second = v;
      }
    }
  }
  return size;
}

std::vector<int> PermutationTo(const std::string& from, const std::string& to) {
  std::vector<int> perm;
  for (char l : to) perm.push_back(static_cast<int>(from.find(l)));
  return perm;
}

// Sums the labels of `labels` that are not in `keep`; returns the remaining labels.
StatusOr<Tensor> SumOut(const KernelContext& ctx, const Tensor& t, const std::string& labels, const std::string& keep,
                        std::string* remaining) {
  std::string kept, summed;
  for (char l : labels) (keep.find(l) == std::string::npos ? summed : kept) += l;
  *remaining = kept;
  if (summed.empty()) return t;
  GJ_ASSIGN_OR_RETURN(Tensor moved, TransposeTensor(ctx, t, PermutationTo(labels, kept + summed)));
  int64_t rows = 1, cols = 1;
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < kept.size(); ++i) {
    rows *= moved.shape().dim(static_cast<int>(i));
    out_dims.push_back(moved.shape().dim(static_cast<int>(i)));
  }
  cols = rows == 0 ? 0 : moved.num_elements() / std::max<int64_t>(rows, 1);
  GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(t.dtype(), Shape(out_dims), ctx.allocator));
  GJ_RETURN_IF_ERROR(VisitTypes<TypeSet::kFloat>(t.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using CT = ComputeType<T>;
    for (int64_t r = 0; r < rows; ++r) {
      CT acc = 0;
      for (int64_t j = 0; j < cols; ++j) acc += static_cast<CT>(moved.data<T>()[r * cols + j]);
      out.data<T>()[r] = static_cast<T>(acc);
    }
    return Status::Ok();
  }));
  return out;
}

OpDef EinsumOp() {
  OpDef def;
  def.name = "Einsum";
  def.min_inputs = 1;
  def.max_inputs = -1;
  def.infer = [](InferenceContext& c) -> Status {
    GJ_ASSIGN_OR_RETURN(DType t, GetTypeAttr(c.node, "T"));
    GJ_RETURN_IF_ERROR(CheckTypeSet(c, t, TypeSet::kFloat));
    std::vector<int> ranks;
    for (int i = 0; i < c.num_inputs(); ++i) {
      if (c.dtype(i) != t) return c.TypeError("input " + std::to_string(i) + " has type " + DTypeName(c.dtype(i)));
      ranks.push_back(c.shape(i).unknown_rank() ? -1 : c.shape(i).rank());
    }
    GJ_ASSIGN_OR_RETURN(Equation e, ParseEquation(c, ranks));
    GJ_ASSIGN_OR_RETURN(auto sizes, LabelSizes(c, e));
    std::vector<int64_t> dims;
    for (char l : e.output) dims.push_back(sizes[l]);
    c.AddOutput(t, Shape(dims));
    return Status::Ok();
  };
  def.compute = [](KernelContext& ctx) -> Status {
    InferenceContext ic{ctx.node, {}, {}, {}, {}, {}};
    std::vector<int> ranks;
    for (const Tensor& t : ctx.inputs) {
      ic.input_dtypes.push_back(t.dtype());
      ic.input_shapes.push_back(t.shape());
      ranks.push_back(t.shape().rank());
    }
    GJ_ASSIGN_OR_RETURN(Equation e, ParseEquation(ic, ranks));
    GJ_ASSIGN_OR_RETURN(auto sizes, LabelSizes(ic, e));
    const std::string& out_labels = e.output;

    if (e.inputs.size() == 1) {
      std::string rest;
      GJ_ASSIGN_OR_RETURN(Tensor reduced, SumOut(ctx, ctx.input(0), e.inputs[0], out_labels, &rest));
      GJ_ASSIGN_OR_RETURN(Tensor out, TransposeTensor(ctx, reduced, PermutationTo(rest, out_labels)));
      ctx.ForwardOutput(0, out.Reshaped(ctx.output_shapes[0]));
      return Status::Ok();
    }

    // 1. Sum labels that live in one operand only and not in the output.
    std::string la, lb;
    GJ_ASSIGN_OR_RETURN(Tensor a, SumOut(ctx, ctx.input(0), e.inputs[0], out_labels + e.inputs[1], &la));
    GJ_ASSIGN_OR_RETURN(Tensor b, SumOut(ctx, ctx.input(1), e.inputs[1], out_labels + e.inputs[0], &lb));
    // 2. Classify: batch (both + output), contracted (both, not output), free.
    std::string batch, contract, free_a, free_b;
    for (char l : la) {
      bool in_b = lb.find(l) != std::string::npos, in_out = out_labels.find(l) != std::string::npos;
      (in_b ? (in_out ? batch : contract) : free_a) += l;
    }
    for (char l : lb)
      if (la.find(l) == std::string::npos) free_b += l;
    auto product = [&](const std::string& labels) {
      int64_t p = 1;
      for (char l : labels) p *= sizes[l];
      return p;
    };
    const int64_t nb = product(batch), m = product(free_a), k = product(contract), n = product(free_b);
    // 3. [batch, m, k] x [batch, k, n] -> [batch, m, n].
    GJ_ASSIGN_OR_RETURN(Tensor at, TransposeTensor(ctx, a, PermutationTo(la, batch + free_a + contract)));
    GJ_ASSIGN_OR_RETURN(Tensor bt, TransposeTensor(ctx, b, PermutationTo(lb, batch + contract + free_b)));
    GJ_ASSIGN_OR_RETURN(Tensor prod, BatchMatMul3(ctx, at.Reshaped(Shape{nb, m, k}), bt.Reshaped(Shape{nb, k, n})));
    // 4. Back to the output's label order.
    std::string prod_labels = batch + free_a + free_b;
    std::vector<int64_t> prod_dims;
    for (char l : prod_labels) prod_dims.push_back(sizes[l]);
    GJ_ASSIGN_OR_RETURN(Tensor out,
                        TransposeTensor(ctx, prod.Reshaped(Shape(prod_dims)), PermutationTo(prod_labels, out_labels)));
    ctx.ForwardOutput(0, out.Reshaped(ctx.output_shapes[0]));
    return Status::Ok();
  };
  return def;
}

const bool kRegistered = RegisterOps({EinsumOp()});

}  // namespace
}  // namespace graphjit
