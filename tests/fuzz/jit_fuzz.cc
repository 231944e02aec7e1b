// The JIT's differential fuzzer. Each random graph is made of the ops the emitters take,
// on every dtype they take (f32, f16, bf16, int32, int64, bool), with broadcasts of every
// rank combination (rank-1 Select conditions too), reductions over any axis set with and
// without keep_dims, size-0 and size-1 dims, and inputs with NaN, Inf, subnormal and huge
// values. It runs op by op (the reference kernels) and with the JIT on every op (ON_2,
// min_cluster_size 1); the outputs must agree:
//  - bit for bit (NaN payloads and the sign of a zero aside) for values computed through
//    exact ops only: integers, bools, comparisons and casts, data movement, max/min, and
//    single IEEE operations on f32 (add, sub, mul, div, sqrt);
//  - within 1e-4 (f32 graphs), 1e-2 (f16) or 3e-2 (bf16) after a tanh for float values that
//    went through approximate ones (math functions, float sums and products in any order).
//    Ops that jump (floor, casts to integers, comparisons, ArgMax, ArgMin) only take exact values,
//    so a rounding difference cannot become a large one. After a float sum or product, an
//    overflow in one order may be a NaN (Inf - Inf, Inf * 0) in another, and what follows
//    maps either anywhere: there, a NaN on one side agrees with any value on the other.
// Integers are kept from overflowing (the reference kernels' signed overflow is undefined).
//
//   jit_fuzz [--seed S] [--graphs N] [--minutes M] [--graph K] [--verbose] [--dump DIR]
//            [--known FILE] [--device gpu-emu] [--kernels ISA]
// --device runs the JIT's side on a GPU (gpu-emu: the CUDA emulator), every GPU module also
// assembled by ptxas for sm_80 and sm_90 without spills.
// --kernels: the reference kernels loaded must be built for ISA (KernelsIsa(), e.g.
// "x86-64 (SSE2)"), else exit status 2: a check that LD_LIBRARY_PATH put the portable ones in place.
// --known lists open findings ("SEED GRAPH why", one per line): they are reported but do not
// fail the run; one that no longer disagrees does, until it is taken off the list.
// One graph in four repeats the body of one of the 500 before it with other outputs (other
// values fetched, in another order), so a long run in one process meets cluster bodies it
// has compiled with other outputs; kernel caches must tell them apart. Such a finding may
// need the graphs before it: `--seed S --graphs K+1` replays the run up to it.
// Graph K of seed S is the same on every run: `--seed S --graph K --verbose` prints it, and
// `--dump DIR` writes it (graph.pbtxt, one .npy per input, and for graphs without 16-bit
// floats the graphjit command that runs it) and its compiled clusters' stages.
// Exit status 0 when every graph agreed, 1 on a mismatch or a JIT failure, 2 on bad usage.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>

#include "ir/graphdef.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/build_info.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

using testing::GraphBuilder;

struct Value {
  std::string name;
  DType dtype = DType::kFloat;
  std::vector<int64_t> dims;
  bool exact = true;       // computed through exact ops only
  double bound = 0;        // integers: the largest magnitude it can hold
  bool reordered = false;  // went through a float sum or product, whose order may differ
};

bool IsFloat(DType t) { return t == DType::kFloat || t == DType::kHalf || t == DType::kBFloat16; }
bool IsInt(DType t) { return t == DType::kInt32 || t == DType::kInt64; }
double Limit(DType t) { return t == DType::kInt32 ? 1e9 : 4e18; }

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  // Builds one graph; `fetches` are the values compared, `feeds` their inputs.
  void Make() {
    std::vector<int64_t> dims;
    const int rank = Pick(5);
    static const int64_t kSizes[] = {1, 2, 3, 5, 8, 17, 33};
    for (int i = 0; i < rank; ++i) {
      int64_t d = kSizes[Pick(7)];
      if (Count(dims) * d > 4096) d = 1;
      if (Pick(25) == 0) d = 0;
      dims.push_back(d);
    }
    static const DType kTypes[] = {DType::kFloat,    DType::kFloat, DType::kFloat, DType::kHalf,
                                   DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kBool};
    values_.push_back(Input(kTypes[Pick(8)], dims));
    const int steps = 2 + Pick(7);
    for (int k = 0; k < steps; ++k) {
      const Value& v = Pick(3) ? values_.back() : values_[Pick(static_cast<int>(values_.size()))];
      Value out = Step(v);
      if (!out.name.empty()) values_.push_back(out);
    }
    std::vector<Value> fetched = {values_.back()};
    for (const Value& v : values_)
      if (v.name != values_.back().name && Pick(6) == 0) fetched.push_back(v);
    for (const Value& v : fetched) Fetch(v);
  }

  // More fetches of values as they are (an exact one compared bit for bit, any other after
  // a tanh on the host), one in five values, then all fetches in an order `rng` picks. They
  // add no node: the graph's clusters keep their bodies and get other outputs.
  void PickOutputs(std::mt19937_64& rng) {
    for (const Value& v : values_) {
      if (rng() % 5 || std::find(fetches.begin(), fetches.end(), v.name) != fetches.end()) continue;
      const bool exact = v.exact || !IsFloat(v.dtype);
      fetches.push_back(v.name);
      checks.push_back({exact, v.reordered, !exact});
    }
    for (size_t i = fetches.size(); i > 1; --i) {
      const size_t j = rng() % i;
      std::swap(fetches[i - 1], fetches[j]);
      std::swap(checks[i - 1], checks[j]);
    }
  }

  GraphBuilder b;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  // How each fetch is compared: bit for bit if exact; after a float sum or product
  // (reordered) a NaN on one side agrees with anything; floats after a tanh on the host.
  struct Check {
    bool exact, reordered, tanh_on_host;
  };
  std::vector<Check> checks;  // one per fetch
  std::string ops;            // what the graph does, for reports
  bool uses_f16 = false, uses_bf16 = false;

 private:
  // Whether any of these values went through a float sum or product.
  bool Reordered(const std::vector<std::string>& names) const {
    for (const Value& v : values_)
      if (v.reordered && std::find(names.begin(), names.end(), v.name) != names.end()) return true;
    return false;
  }
  void Uses(DType t) {
    uses_f16 |= t == DType::kHalf;
    uses_bf16 |= t == DType::kBFloat16;
  }
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  std::string Fresh(const std::string& what) { return what + "_" + std::to_string(next_++); }

  // A new input of this type and shape, with hostile values.
  Value Input(DType t, const std::vector<int64_t>& dims) {
    Value v{Fresh("in"), t, dims, true, 0};
    b.Placeholder(v.name, t, dims);
    Uses(t);
    std::vector<double> x(Count(dims));
    std::normal_distribution<double> normal(0, 2);
    for (double& e : x) {
      if (IsInt(t)) {
        e = Pick(10) ? Pick(9) - 4 : Pick(2001) - 1000;
        v.bound = 1000;
      } else if (t == DType::kBool) {
        e = Pick(2);
      } else {
        static const double kSpecial[] = {NAN, INFINITY, -INFINITY, 1e30, -3e38, 1e-40, -1e-42, 0.0, -0.0, 88.5, -88.5, 2.5};
        e = Pick(5) ? normal(rng_) : kSpecial[Pick(12)];
      }
    }
    feeds.emplace_back(v.name, testing::MakeTensor(t, Shape(dims), x));
    return v;
  }

  // A shape that broadcasts into `dims`: leading dims dropped, some dims 1.
  std::vector<int64_t> Broadcastable(const std::vector<int64_t>& dims) {
    std::vector<int64_t> s = dims;
    if (Pick(3) == 0) return s;
    for (int64_t& d : s)
      if (Pick(3) == 0) d = 1;
    const int drop = Pick(static_cast<int>(s.size()) + 1);
    s.erase(s.begin(), s.begin() + drop);
    return s;
  }

  // A node of `op` computing a value of type t; its "T" attr is `attr` (t if unset,
  // none if kInvalid).
  Value Node(const std::string& op, const std::vector<std::string>& inputs, DType t, const std::vector<int64_t>& dims, bool exact,
             double bound = 0, std::optional<DType> attr = std::nullopt) {
    Value out{Fresh(op), t, dims, exact, bound, Reordered(inputs)};
    b.Op(out.name, op, inputs, attr.value_or(t));
    Uses(t);
    ops += op + "(" + DTypeName(t) + ") ";
    return out;
  }
  std::string IntConst(const std::vector<int64_t>& values, bool scalar = false) {
    std::vector<int32_t> v(values.begin(), values.end());
    return b.Const(Fresh("c"), testing::MakeInt32(scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())}, v));
  }

  Value Step(const Value& v) {
    const int r = static_cast<int>(v.dims.size());
    switch (Pick(10)) {
      case 0:
      case 1:
      case 2: return Elementwise(v);
      case 3: return Binary(v);
      case 4: return Reduce(v);
      case 5: return Cast(v);
      case 6: return Select(v);
      case 7: return Compare(v);
      case 8: return Pick(2) ? Move(v) : Glue(v);
      default:
        if (r == 4 && IsFloat(v.dtype) && Pick(3) == 0) return Window(v);
        if (v.dtype == DType::kFloat && r > 0 && Pick(2)) {
          Value out = Node(Pick(2) ? "Softmax" : "LogSoftmax", {v.name}, v.dtype, v.dims, false);
          out.reordered = true;
          return out;
        }
        if (r >= 2 && v.dtype != DType::kBool) {  // BiasAdd, NHWC or NCHW
          const bool nchw = Pick(2);
          Value bias = Input(v.dtype, {v.dims[nchw ? 1 : r - 1]});
          Value out = Node("BiasAdd", {v.name, bias.name}, v.dtype, v.dims, v.exact && v.dtype == DType::kFloat, v.bound + 1000);
          if (IsInt(v.dtype) && out.bound > Limit(v.dtype)) return {};
          if (nchw) testing::SetAttrString(b.graph_def().mutable_node(b.graph_def().node_size() - 1), "data_format", "NCHW");
          return out;
        }
        return {};
    }
  }

  // A pool or a convolution of a rank-4 float value with a small window (1 to 3 each way),
  // stride 1 or 2 and SAME or VALID padding: MaxPool, AvgPool (NHWC), Conv2D or
  // DepthwiseConv2dNative (NHWC or NCHW) with a constant filter of moderate values.
  Value Window(const Value& v) {
    const bool pool = Pick(2), nchw = !pool && Pick(3) == 0, same = Pick(2);
    const int h = nchw ? 2 : 1, c = nchw ? 1 : 3;
    const int64_t kh = 1 + Pick(3), kw = 1 + Pick(3), stride = 1 + Pick(2);
    if (!same && (v.dims[h] < kh || v.dims[h + 1] < kw)) return {};
    auto out_size = [&](int64_t in, int64_t k) { return same ? (in + stride - 1) / stride : (in - k) / stride + 1; };
    std::vector<int64_t> dims = v.dims;
    dims[h] = out_size(v.dims[h], kh), dims[h + 1] = out_size(v.dims[h + 1], kw);
    auto attrs = [&] {
      tensorflow::NodeDef* n = b.graph_def().mutable_node(b.graph_def().node_size() - 1);
      std::vector<int64_t> window(4, 1), strides(4, 1);
      window[h] = kh, window[h + 1] = kw, strides[h] = strides[h + 1] = stride;
      if (pool) testing::SetAttrInts(n, "ksize", window);
      testing::SetAttrInts(n, "strides", strides);
      testing::SetAttrString(n, "padding", same ? "SAME" : "VALID");
      testing::SetAttrString(n, "data_format", nchw ? "NCHW" : "NHWC");
      ops.back() = ' ';
      ops += std::string("[") + std::to_string(kh) + "x" + std::to_string(kw) + " /" + std::to_string(stride) +
             (same ? " SAME" : " VALID") + (nchw ? " NCHW" : "") + "] ";
    };
    if (pool) {
      const std::string op = Pick(2) ? "MaxPool" : "AvgPool";
      Value out = Node(op, {v.name}, v.dtype, dims, op == "MaxPool" && v.exact);
      out.reordered = v.reordered || op == "AvgPool";
      attrs();
      return out;
    }
    const bool depthwise = Pick(3) == 0;
    const int64_t channels = v.dims[c], multiplier = 1 + Pick(2), filters = 1 + Pick(4);
    const Shape filter_shape{kh, kw, channels, depthwise ? multiplier : filters};
    std::vector<double> w(filter_shape.num_elements());
    std::normal_distribution<double> normal(0, 0.5);
    for (double& e : w) e = normal(rng_);
    const std::string filter = b.Const(Fresh("filter"), testing::MakeTensor(v.dtype, filter_shape, w));
    dims[c] = depthwise ? channels * multiplier : filters;
    const std::string op = depthwise ? "DepthwiseConv2dNative" : "Conv2D";
    Value out = Node(op, {v.name, filter}, v.dtype, dims, false);
    out.reordered = true;
    attrs();
    return out;
  }

  Value Elementwise(const Value& v) {
    if (v.dtype == DType::kBool) return Node("LogicalNot", {v.name}, v.dtype, v.dims, true, 0, DType::kInvalid);
    if (IsInt(v.dtype)) {
      static const char* kOps[] = {"Neg", "Abs", "Sign", "Square", "Relu"};
      const std::string op = kOps[Pick(5)];
      const double bound = op == "Square" ? v.bound * v.bound : v.bound;
      if (v.bound >= Limit(v.dtype) || bound > Limit(v.dtype)) return {};
      return Node(op, {v.name}, v.dtype, v.dims, true, bound);
    }
    static const char* kExact[] = {"Neg", "Abs", "Relu", "Relu6"};
    static const char* kJumps[] = {"Floor", "Ceil", "Round", "Sign"};            // exact, on exact values only
    static const char* kF32Exact[] = {"Sqrt", "Square", "Reciprocal", "Rsqrt"};  // Rsqrt: 1 / sqrt(x) on both sides
    static const char* kApprox[] = {"Exp", "Log", "Log1p", "Tanh", "Sigmoid", "Elu", "Selu", "Softplus", "Erf", "LeakyRelu"};
    switch (Pick(4)) {
      case 0: return Node(kExact[Pick(4)], {v.name}, v.dtype, v.dims, v.exact);
      case 1:
        if (!v.exact) return {};
        return Node(kJumps[Pick(4)], {v.name}, v.dtype, v.dims, true);
      case 2: {
        // Reciprocal and Rsqrt only of exact values: near 0 they amplify a last-bit
        // difference (made by an approximate op before them) without bound, as Pow does:
        // a log-softmax of one element is 0 from one exp and log, -2^-22 from others.
        std::string op = kF32Exact[Pick(4)];
        if (!v.exact && (op == "Reciprocal" || op == "Rsqrt")) op = "Square";
        return Node(op, {v.name}, v.dtype, v.dims, v.exact && v.dtype == DType::kFloat);
      }
      default: return Node(kApprox[Pick(10)], {v.name}, v.dtype, v.dims, false);
    }
  }

  Value Binary(const Value& v) {
    if (v.dtype == DType::kBool) {
      Value other = Input(DType::kBool, Broadcastable(v.dims));
      return Node(Pick(2) ? "LogicalAnd" : "LogicalOr", {v.name, other.name}, v.dtype, v.dims, true, 0, DType::kInvalid);
    }
    // The partner: a new input that broadcasts, or v itself; either side first.
    Value other = Pick(4) ? Input(v.dtype, Broadcastable(v.dims)) : v;
    std::vector<std::string> in = {v.name, other.name};
    if (Pick(2)) std::swap(in[0], in[1]);
    const bool exact = v.exact && other.exact;
    if (IsInt(v.dtype)) {
      static const char* kOps[] = {"AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference"};
      const std::string op = kOps[Pick(6)];
      const double a = v.bound, c = other.bound;
      if (op == "Maximum" || op == "Minimum") return Node(op, in, v.dtype, v.dims, true, std::max(a, c));
      const double bound = op == "Mul" ? a * c : op == "SquaredDifference" ? (a + c) * (a + c) : a + c;
      if (bound > Limit(v.dtype) || a >= Limit(v.dtype) || c >= Limit(v.dtype)) return {};
      return Node(op, in, v.dtype, v.dims, true, bound);
    }
    static const char* kExactF32[] = {"AddV2", "Sub", "Mul", "RealDiv"};
    static const char* kAlways[] = {"Maximum", "Minimum"};
    static const char* kApprox[] = {"SquaredDifference", "DivNoNan", "Pow"};
    switch (Pick(3)) {
      case 0: {
        std::string op = kExactF32[Pick(4)];
        if (op == "RealDiv" && !exact) op = "Mul";  // as Reciprocal above
        return Node(op, in, v.dtype, v.dims, exact && v.dtype == DType::kFloat);
      }
      case 1: return Node(kAlways[Pick(2)], in, v.dtype, v.dims, exact);
      default: {
        // Pow only of exact values: x^y amplifies a last-bit difference in x or y (made by
        // an approximate op before it) without bound: (1 - 2^-24)^1e30 is 0, 1^1e30 is 1.
        // DivNoNan too: it jumps where the divisor is 0 (x / x is 1, or 0 when an Elu of a
        // tiny x is 0 on one side and not on the other).
        std::string op = kApprox[Pick(3)];
        if ((op == "Pow" || op == "DivNoNan") && !exact) op = "SquaredDifference";
        return Node(op, in, v.dtype, v.dims, false);
      }
    }
  }

  Value Reduce(const Value& v) {
    const int r = static_cast<int>(v.dims.size());
    if (r == 0 || v.dtype == DType::kBool) return {};
    if (Pick(4) == 0) {  // ArgMax or ArgMin along one axis, of exact values, never an empty one
      const int axis = Pick(r);
      if (!v.exact || v.dims[axis] == 0) return {};
      std::vector<int64_t> dims = v.dims;
      dims.erase(dims.begin() + axis);
      const DType out = Pick(2) ? DType::kInt64 : DType::kInt32;
      const std::string op = Pick(2) ? "ArgMax" : "ArgMin";
      Value am{Fresh(op), out, dims, true, 1e6};
      tensorflow::NodeDef* n = b.Op(am.name, op, {v.name, IntConst({Pick(2) ? axis : axis - r}, true)}, v.dtype);
      testing::SetAttrType(n, "Tidx", DType::kInt32);
      testing::SetAttrType(n, "output_type", out);
      ops += op + " ";
      return am;
    }
    std::vector<int64_t> axes;
    for (int i = 0; i < r; ++i)
      if (Pick(2)) axes.push_back(Pick(3) ? i : i - r);
    if (axes.empty()) axes.push_back(Pick(r));
    const bool keep = Pick(2);
    std::vector<int64_t> dims;
    int64_t reduced = 1;
    for (int i = 0; i < r; ++i) {
      const bool is_reduced = std::count(axes.begin(), axes.end(), i) || std::count(axes.begin(), axes.end(), i - r);
      if (is_reduced) reduced *= v.dims[i];
      if (!is_reduced)
        dims.push_back(v.dims[i]);
      else if (keep)
        dims.push_back(1);
    }
    static const char* kOps[] = {"Sum", "Mean", "Max", "Min", "Prod"};
    const std::string op = kOps[Pick(5)];
    std::string input = v.name;
    if (op == "Prod" && IsFloat(v.dtype)) {
      // Factors in [-1, 1]: a product of huge and tiny factors overflows or underflows in one
      // order and not in another, and the reference's order is no more right than the JIT's.
      input = Fresh("Tanh");
      b.Op(input, "Tanh", {v.name}, v.dtype);
    }
    double bound = v.bound;
    if (op == "Sum" || op == "Mean") bound = v.bound * static_cast<double>(reduced);
    if (op == "Prod") bound = std::pow(std::max(v.bound, 1.0), static_cast<double>(reduced));
    if (IsInt(v.dtype) && (bound > Limit(v.dtype) || (op != "Max" && op != "Min" && v.bound >= Limit(v.dtype)))) return {};
    const bool exact = IsInt(v.dtype) || ((op == "Max" || op == "Min") && v.exact);
    Value out{Fresh(op), v.dtype, dims, exact, bound, v.reordered || (IsFloat(v.dtype) && op != "Max" && op != "Min")};
    tensorflow::NodeDef* n = b.Op(out.name, op, {input, IntConst(axes)}, v.dtype);
    testing::SetAttrType(n, "Tidx", DType::kInt32);
    testing::SetAttrBool(n, "keep_dims", keep);
    ops += op + (keep ? "(keep) " : " ");
    return out;
  }

  Value Cast(const Value& v) {
    static const DType kTo[] = {DType::kFloat, DType::kHalf, DType::kBFloat16, DType::kInt32, DType::kInt64, DType::kBool};
    const DType to = kTo[Pick(6)];
    if (to == v.dtype) return {};
    if (IsFloat(v.dtype) && !IsFloat(to) && !v.exact) return {};  // a jump: exact values only
    double bound = v.bound;
    if (IsInt(to)) bound = IsFloat(v.dtype) || v.bound >= Limit(to) ? Limit(to) : std::max(v.bound, 1.0);
    Value out{Fresh("Cast"), to, v.dims, v.exact, bound, v.reordered};
    tensorflow::NodeDef* n = b.Op(out.name, "Cast", {v.name}, DType::kInvalid);
    testing::SetAttrType(n, "SrcT", v.dtype);
    testing::SetAttrType(n, "DstT", to);
    ops += std::string("Cast(") + DTypeName(v.dtype) + "->" + DTypeName(to) + ") ";
    Uses(to);
    return out;
  }

  // Select picks v or another value of its type by a condition: Select with a condition of
  // v's shape or (rank >= 1) one per row; SelectV2 with one that broadcasts.
  Value Select(const Value& v) {
    const int r = static_cast<int>(v.dims.size());
    const bool v1 = Pick(2);
    std::vector<int64_t> cond_dims = Broadcastable(v.dims);
    if (v1) cond_dims = r >= 1 && Pick(2) ? std::vector<int64_t>{v.dims[0]} : v.dims;
    Value cond = Input(DType::kBool, cond_dims);
    Value other = Input(v.dtype, v1 ? v.dims : Broadcastable(v.dims));
    std::vector<std::string> in = {cond.name, v.name, other.name};
    if (Pick(2)) std::swap(in[1], in[2]);
    return Node(v1 ? "Select" : "SelectV2", in, v.dtype, v.dims, v.exact, std::max(v.bound, other.bound));
  }

  Value Compare(const Value& v) {
    if (!v.exact) return {};
    static const char* kOps[] = {"Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual"};
    const std::string op = v.dtype == DType::kBool ? (Pick(2) ? "Equal" : "NotEqual") : kOps[Pick(6)];
    Value other = Input(v.dtype, Broadcastable(v.dims));
    return Node(op, {v.name, other.name}, DType::kBool, v.dims, true, 0, v.dtype);
  }

  // Data movement: Transpose, a Reshape, ExpandDims, Squeeze, ConcatV2, BroadcastTo.
  Value Move(const Value& v) {
    const int r = static_cast<int>(v.dims.size());
    Value out = v;
    out.name = Fresh("move");
    switch (Pick(6)) {
      case 0: {
        if (r < 2) return {};
        std::vector<int64_t> perm(r);
        for (int i = 0; i < r; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        for (int i = 0; i < r; ++i) out.dims[i] = v.dims[perm[i]];
        testing::SetAttrType(b.Op(out.name, "Transpose", {v.name, IntConst(perm)}, v.dtype), "Tperm", DType::kInt32);
        ops += "Transpose ";
        return out;
      }
      case 1: {
        if (r < 2) return {};
        out.dims.pop_back();
        out.dims.back() *= v.dims.back();
        testing::SetAttrType(b.Op(out.name, "Reshape", {v.name, IntConst(out.dims)}, v.dtype), "Tshape", DType::kInt32);
        ops += "Reshape ";
        return out;
      }
      case 2: {
        const int axis = Pick(r + 1);
        out.dims.insert(out.dims.begin() + axis, 1);
        testing::SetAttrType(b.Op(out.name, "ExpandDims", {v.name, IntConst({axis}, true)}, v.dtype), "Tdim", DType::kInt32);
        ops += "ExpandDims ";
        return out;
      }
      case 3: {
        std::vector<int64_t> ones;
        for (int i = 0; i < r; ++i)
          if (v.dims[i] == 1) ones.push_back(i);
        if (ones.empty()) return {};
        out.dims.clear();
        for (int i = 0; i < r; ++i)
          if (v.dims[i] != 1) out.dims.push_back(v.dims[i]);
        testing::SetAttrInts(b.Op(out.name, "Squeeze", {v.name}, v.dtype), "squeeze_dims", ones);
        ops += "Squeeze ";
        return out;
      }
      case 4: {
        if (r == 0) return {};
        const int axis = Pick(r);
        Value other = Pick(2) ? v : Input(v.dtype, v.dims);
        out.dims[axis] *= 2;
        out.exact = v.exact && other.exact;
        out.bound = std::max(v.bound, other.bound);
        tensorflow::NodeDef* n = b.Op(out.name, "ConcatV2", {v.name, other.name, IntConst({axis}, true)}, v.dtype);
        testing::SetAttrInt(n, "N", 2);
        testing::SetAttrType(n, "Tidx", DType::kInt32);
        ops += "ConcatV2 ";
        return out;
      }
      default: {
        if (Count(v.dims) * 3 > 4096) return {};
        out.dims.insert(out.dims.begin(), 3);
        testing::SetAttrType(b.Op(out.name, "BroadcastTo", {v.name, IntConst(out.dims)}, v.dtype), "Tidx", DType::kInt32);
        ops += "BroadcastTo ";
        return out;
      }
    }
  }

  // The glue compiled as indexed reads: Slice, StridedSlice, Pad/PadV2/MirrorPad, Tile,
  // Pack, Split/Unpack (one output), OneHot.
  Value Glue(const Value& v) {
    const int r = static_cast<int>(v.dims.size());
    if (Count(v.dims) == 0) return {};
    Value out = v;
    out.name = Fresh("glue");
    switch (Pick(7)) {
      case 0: {  // Slice: a block, its size -1 (to the end) at times
        if (r == 0) return {};
        std::vector<int64_t> begin(r), size(r);
        for (int d = 0; d < r; ++d) {
          begin[d] = Pick(static_cast<int>(v.dims[d]));
          out.dims[d] = 1 + Pick(static_cast<int>(v.dims[d] - begin[d]));
          size[d] = Pick(4) == 0 ? -1 : out.dims[d];
          if (size[d] == -1) out.dims[d] = v.dims[d] - begin[d];
        }
        testing::SetAttrType(b.Op(out.name, "Slice", {v.name, IntConst(begin), IntConst(size)}, v.dtype), "Index", DType::kInt32);
        ops += "Slice ";
        return out;
      }
      case 1: {  // StridedSlice: strides of +-1 and +-2, masked ends, a dim shrunk at times
        if (r == 0) return {};
        std::vector<int64_t> begin(r), end(r), strides(r), dims;
        int64_t begin_mask = 0, end_mask = 0, shrink = 0;
        for (int d = 0; d < r; ++d) {
          const int64_t n = v.dims[d];
          if (Pick(6) == 0) {  // shrunk: one index, negative counts from the end
            shrink |= int64_t{1} << d;
            begin[d] = Pick(static_cast<int>(2 * n)) - n;
            end[d] = begin[d] + 1;
            strides[d] = 1;
            continue;
          }
          static const int64_t kStrides[] = {1, 1, 2, -1, -2};
          const int64_t st = strides[d] = kStrides[Pick(5)];
          begin[d] = Pick(static_cast<int>(2 * n + 3)) - n - 1;  // some out of range: clamped
          end[d] = Pick(static_cast<int>(2 * n + 3)) - n - 1;
          if (Pick(4) == 0) begin_mask |= int64_t{1} << d;
          if (Pick(4) == 0) end_mask |= int64_t{1} << d;
          auto canonical = [&](int64_t x, bool masked, bool is_begin) {
            if (masked) return is_begin ? (st > 0 ? 0 : n - 1) : (st > 0 ? n : -1);
            if (x < 0) x += n;
            return st > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
          };
          const int64_t from = canonical(begin[d], (begin_mask >> d) & 1, true);
          const int64_t to = canonical(end[d], (end_mask >> d) & 1, false);
          const int64_t span = st > 0 ? to - from : from - to;
          dims.push_back(span <= 0 ? 0 : 1 + (span - 1) / std::abs(st));
          if (dims.back() == 0) return {};
        }
        out.dims = dims;
        tensorflow::NodeDef* n =
            b.Op(out.name, "StridedSlice", {v.name, IntConst(begin), IntConst(end), IntConst(strides)}, v.dtype);
        testing::SetAttrType(n, "Index", DType::kInt32);
        testing::SetAttrInt(n, "begin_mask", begin_mask);
        testing::SetAttrInt(n, "end_mask", end_mask);
        testing::SetAttrInt(n, "shrink_axis_mask", shrink);
        ops += "StridedSlice ";
        return out;
      }
      case 2: {  // Pad (zeros), PadV2 (a fed value), MirrorPad (REFLECT: pads below the dim; SYMMETRIC: up to it)
        if (r == 0 || Count(v.dims) * 4 > 4096) return {};
        const int kind = Pick(4);
        const bool reflect = Pick(2);
        std::vector<int32_t> pads(2 * r);
        for (int d = 0; d < r; ++d) {
          for (int side = 0; side < 2; ++side) {
            int limit = 3;
            if (kind >= 2) limit = static_cast<int>(std::min<int64_t>(2, reflect ? v.dims[d] - 1 : v.dims[d])) + 1;
            pads[2 * d + side] = Pick(limit);
          }
          out.dims[d] += pads[2 * d] + pads[2 * d + 1];
        }
        const std::string paddings = b.Const(Fresh("pads"), testing::MakeInt32(Shape{r, 2}, pads));
        tensorflow::NodeDef* n;
        if (kind == 0) {
          n = b.Op(out.name, "Pad", {v.name, paddings}, v.dtype);
        } else if (kind == 1) {
          Value value = Input(v.dtype, {});
          out.exact = v.exact && value.exact;
          out.bound = std::max(v.bound, value.bound);
          n = b.Op(out.name, "PadV2", {v.name, paddings, value.name}, v.dtype);
        } else {
          n = b.Op(out.name, "MirrorPad", {v.name, paddings}, v.dtype);
          testing::SetAttrString(n, "mode", reflect ? "REFLECT" : "SYMMETRIC");
        }
        testing::SetAttrType(n, "Tpaddings", DType::kInt32);
        ops += n->op() + " ";
        return out;
      }
      case 3: {  // Tile
        std::vector<int64_t> multiples(r);
        for (int d = 0; d < r; ++d) out.dims[d] *= multiples[d] = 1 + Pick(3);
        if (Count(out.dims) > 4096) return {};
        testing::SetAttrType(b.Op(out.name, "Tile", {v.name, IntConst(multiples)}, v.dtype), "Tmultiples", DType::kInt32);
        ops += "Tile ";
        return out;
      }
      case 4: {  // Pack with itself or another input, on a new axis anywhere (negative at times)
        const int axis = Pick(r + 1);
        Value other = Pick(2) ? v : Input(v.dtype, v.dims);
        out.dims.insert(out.dims.begin() + axis, 2);
        out.exact = v.exact && other.exact;
        out.bound = std::max(v.bound, other.bound);
        tensorflow::NodeDef* n = b.Op(out.name, "Pack", {v.name, other.name}, v.dtype);
        testing::SetAttrInt(n, "N", 2);
        testing::SetAttrInt(n, "axis", Pick(2) ? axis : axis - r - 1);
        ops += "Pack ";
        return out;
      }
      case 5: {  // Split into equal parts or Unpack, one output read
        if (r == 0) return {};
        const int axis = Pick(r);
        const int64_t n = v.dims[axis];
        tensorflow::NodeDef* node;
        int64_t parts;
        if (Pick(2) && n > 1) {
          node = b.Op(out.name, "Unpack", {v.name}, v.dtype);
          parts = n;
          testing::SetAttrInt(node, "num", n);
          testing::SetAttrInt(node, "axis", axis);
          out.dims.erase(out.dims.begin() + axis);
        } else {
          parts = n % 3 == 0 ? 3 : n % 2 == 0 ? 2 : 1;
          node = b.Op(out.name, "Split", {IntConst({axis}, true), v.name}, v.dtype);
          testing::SetAttrInt(node, "num_split", parts);
          out.dims[axis] = n / parts;
        }
        ops += node->op() + " ";
        const int64_t k = Pick(static_cast<int>(parts));
        if (k) out.name += ":" + std::to_string(k);
        return out;
      }
      default: {  // OneHot of integer indices (out of range ones give `off`), on any axis
        if (!IsInt(v.dtype) || Count(v.dims) * 5 > 4096) return {};
        const int axis = Pick(r + 1);
        Value on = Input(DType::kFloat, {}), off = Input(DType::kFloat, {});
        out.dtype = DType::kFloat;
        out.dims.insert(out.dims.begin() + axis, 5);
        out.exact = on.exact && off.exact;
        out.bound = 0;
        out.reordered = false;
        tensorflow::NodeDef* n = b.Op(out.name, "OneHot", {v.name, IntConst({5}, true), on.name, off.name}, DType::kFloat);
        testing::SetAttrType(n, "TI", v.dtype);
        testing::SetAttrInt(n, "axis", axis == r ? -1 : axis);
        ops += "OneHot ";
        return out;
      }
    }
  }

  // Fetches v: as it is if exact, else squashed into (-1, 1) by a tanh in f32.
  void Fetch(const Value& v) {
    if (v.exact || !IsFloat(v.dtype)) {
      fetches.push_back(v.name);
      checks.push_back({true, v.reordered, false});
      return;
    }
    std::string x = v.name;
    if (v.dtype != DType::kFloat) {
      x = Fresh("to_f32");
      tensorflow::NodeDef* n = b.Op(x, "Cast", {v.name}, DType::kInvalid);
      testing::SetAttrType(n, "SrcT", v.dtype);
      testing::SetAttrType(n, "DstT", DType::kFloat);
    }
    const std::string squashed = Fresh("squash");
    b.Op(squashed, "Tanh", {x});
    fetches.push_back(squashed);
    checks.push_back({false, v.reordered, false});
  }

  std::mt19937_64 rng_;
  std::vector<Value> values_;
  int next_ = 0;
};

// Why `got` differs from `want`; empty if they agree. `tanh_on_host`: floats compared after
// a tanh (in double).
std::string Compare(const Tensor& got, const Tensor& want, bool exact, bool reordered, bool tanh_on_host, double tolerance) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return "got " + std::string(DTypeName(got.dtype())) + got.shape().ToString() + ", want " + DTypeName(want.dtype()) +
           want.shape().ToString();
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    bool ok;
    if (!IsFloat(got.dtype())) {
      ok = got.ValueAsInt(i) == want.ValueAsInt(i);
    } else {
      double a = got.ValueAsDouble(i), w = want.ValueAsDouble(i);
      if (tanh_on_host) a = std::tanh(a), w = std::tanh(w);
      ok = (std::isnan(a) && std::isnan(w)) || a == w || (!exact && std::fabs(a - w) <= tolerance) ||
           (reordered && (std::isnan(a) || std::isnan(w)));
    }
    if (!ok) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld: jit %.9g, reference %.9g", static_cast<long long>(i), got.ValueAsDouble(i),
                    want.ValueAsDouble(i));
      return buf;
    }
  }
  return "";
}

struct Outcome {
  bool agreed = true, skipped = false;
  std::string what;
};

// Graph K of seed S: a graph made for it, or, one in four, the graph of an earlier J (among
// the 500 before) again: one body the process has compiled, with other outputs in another
// order (caches must tell them apart). Either way with more fetches (PickOutputs).
Outcome RunOne(uint64_t seed, int64_t index, bool verbose, const std::string& dump, const std::string& device) {
  std::mt19937_64 pick(seed * 1000003 + static_cast<uint64_t>(index) + 0x5bd1e995);
  int64_t body = index;
  if (index > 0 && pick() % 4 == 0) body = index - 1 - static_cast<int64_t>(pick() % std::min<uint64_t>(index, 500));
  Generator g(seed * 1000003 + static_cast<uint64_t>(body));
  g.Make();
  g.PickOutputs(pick);
  if (body != index) g.ops = "(graph " + std::to_string(body) + "'s body) " + g.ops;
  if (verbose) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(g.b.graph_def(), &text);
    std::printf("graph %lld: %s\nfetches:", static_cast<long long>(index), g.ops.c_str());
    for (const std::string& f : g.fetches) std::printf(" %s", f.c_str());
    std::printf("\n%s", text.c_str());
  }
  if (!dump.empty()) {
    std::filesystem::create_directories(dump);
    (void)WriteGraphDefFile(g.b.graph_def(), dump + "/graph.pbtxt");
    std::string command = "graphjit run " + dump + "/graph.pbtxt --jit on_2" + (device.empty() ? "" : " --device " + device);
    for (const auto& [name, t] : g.feeds) {
      (void)WriteNpy(dump + "/" + name + ".npy", t);
      command += " --feed " + name + "=" + dump + "/" + name + ".npy";
    }
    for (const std::string& f : g.fetches) command += " --fetch " + f;
    // .npy files of f16 and bf16 are written as f32, which such placeholders do not take.
    if (!g.uses_f16 && !g.uses_bf16) std::ofstream(dump + "/command.sh") << command << "\n";
  }
  auto run = [&](JitLevel level, std::vector<Tensor>* out) -> Status {
    SessionOptions options;
    options.jit_level = level;
    options.min_cluster_size = 1;
    options.intra_op_threads = options.inter_op_threads = 1;
    if (level != JitLevel::kOff) {
      options.dump_to = dump;
      options.device = ParseDeviceKind(device).value();
      options.gpu_ptxas_check = !device.empty();
      options.gpu_tf32 = false;  // convolutions compared with the CPU's float32 products
    }
    auto session = Session::Create(options, g.b.graph_def());
    if (!session.ok()) return session.status();
    return (*session)->Run(g.feeds, g.fetches, {}, out);
  };
  std::vector<Tensor> want, got;
  if (Status s = run(JitLevel::kOff, &want); !s.ok()) return {true, true, s.message()};  // not a valid graph
  const JitStats before = GetJitStats();
  if (Status s = run(JitLevel::kOn2, &got); !s.ok()) return {false, false, "the JIT run failed: " + s.message()};
  const JitStats after = GetJitStats();
  if (after.fallback != before.fallback || after.internal_errors != before.internal_errors)
    return {false, false, "a cluster ran op by op (see the warning above)"};
  const std::string ops = g.ops;
  const double tolerance = g.uses_bf16 ? 3e-2 : g.uses_f16 ? 1e-2 : 1e-4;
  for (size_t i = 0; i < g.fetches.size(); ++i) {
    const Generator::Check& c = g.checks[i];
    std::string why = Compare(got[i], want[i], c.exact, c.reordered, c.tanh_on_host, tolerance);
    if (!why.empty()) return {false, false, "fetch " + g.fetches[i] + (c.exact ? " (exact)" : "") + ": " + why + "; ops: " + ops};
  }
  return {};
}

int Main(int argc, char** argv) {
  uint64_t seed = 1;
  int64_t graphs = 1000, only = -1;
  double minutes = 0;
  bool verbose = false;
  std::string dump, known_file, device, kernels;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "jit_fuzz: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed")
      seed = std::strtoull(next(), nullptr, 10);
    else if (a == "--graphs")
      graphs = std::strtoll(next(), nullptr, 10);
    else if (a == "--minutes")
      minutes = std::strtod(next(), nullptr);
    else if (a == "--graph")
      only = std::strtoll(next(), nullptr, 10);
    else if (a == "--verbose")
      verbose = true;
    else if (a == "--dump")
      dump = next();
    else if (a == "--known")
      known_file = next();
    else if (a == "--device")
      device = next();
    else if (a == "--kernels")
      kernels = next();
    else {
      std::fprintf(stderr,
                   "usage: jit_fuzz [--seed S] [--graphs N] [--minutes M] [--graph K] [--verbose] [--dump DIR] "
                   "[--known FILE] [--device gpu-emu] [--kernels ISA]\n");
      return 2;
    }
  }
  if (auto kind = ParseDeviceKind(device); !kind.ok()) {
    std::fprintf(stderr, "jit_fuzz: --device: %s\n", kind.status().message().c_str());
    return 2;
  }
  std::set<std::pair<uint64_t, int64_t>> known;
  if (!known_file.empty()) {
    std::ifstream in(known_file);
    if (!in) {
      std::fprintf(stderr, "jit_fuzz: cannot read %s\n", known_file.c_str());
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      unsigned long long s = 0;
      long long k = 0;
      if (line.empty() || line[0] == '#') continue;
      if (std::sscanf(line.c_str(), "%llu %lld", &s, &k) != 2) {
        std::fprintf(stderr, "jit_fuzz: %s: not 'SEED GRAPH why': %s\n", known_file.c_str(), line.c_str());
        return 2;
      }
      known.insert({s, k});
    }
  }
  if (!kernels.empty() && kernels != KernelsIsa()) {
    std::fprintf(stderr, "jit_fuzz: the reference kernels loaded are built for %s, not %s\n", KernelsIsa(), kernels.c_str());
    return 2;
  }
  RegisterGraphOptimizer();
  RegisterJit();
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_min = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60; };
  int64_t ran = 0, skipped = 0, findings = 0, known_findings = 0;
  for (int64_t k = only >= 0 ? only : 0;; ++k) {
    if (only >= 0 ? k > only : (minutes > 0 ? elapsed_min() >= minutes : k >= graphs)) break;
    Outcome o = RunOne(seed, k, verbose, dump, device);
    ++ran;
    skipped += o.skipped;
    if (o.skipped && verbose) std::printf("graph %lld skipped: %s\n", static_cast<long long>(k), o.what.c_str());
    const bool is_known = known.count({seed, k}) > 0;
    if (is_known && o.agreed) {
      ++findings;
      std::printf("jit_fuzz: graph %lld of seed %llu agrees now: take it off %s\n", static_cast<long long>(k),
                  static_cast<unsigned long long>(seed), known_file.c_str());
    }
    if (!o.agreed && is_known) {
      ++known_findings;
      std::printf("jit_fuzz: known finding, graph %lld of seed %llu: %s\n", static_cast<long long>(k),
                  static_cast<unsigned long long>(seed), o.what.c_str());
    } else if (!o.agreed) {
      ++findings;
      std::printf("jit_fuzz: FINDING graph %lld of seed %llu (rerun: jit_fuzz --seed %llu --graph %lld --verbose): %s\n",
                  static_cast<long long>(k), static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
                  static_cast<long long>(k), o.what.c_str());
      std::fflush(stdout);
    }
    if (ran % 1000 == 0) {
      std::printf("jit_fuzz: %lld graphs, %lld findings, %.1f min\n", static_cast<long long>(ran),
                  static_cast<long long>(findings), elapsed_min());
      std::fflush(stdout);
    }
  }
  std::printf(
      "jit_fuzz: seed %llu: %lld graphs in one process (%lld not valid for the reference kernels, skipped; "
      "reference kernels for %s), %lld findings (and %lld known), %.1f min\n",
      static_cast<unsigned long long>(seed), static_cast<long long>(ran), static_cast<long long>(skipped), KernelsIsa(),
      static_cast<long long>(findings), static_cast<long long>(known_findings), elapsed_min());
  return findings ? 1 : 0;
}

}  // namespace
}  // namespace graphjit

int main(int argc, char** argv) { return graphjit::Main(argc, argv); }
