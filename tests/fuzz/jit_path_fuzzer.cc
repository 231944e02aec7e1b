// libFuzzer target for the whole path: bytes -> GraphDef (binary, or text) -> a session
// with the JIT on every op it takes (ON_2, min_cluster_size 1) under the numerics guard at
// `fail` -> placeholders fed small deterministic values (unknown dims 2) -> run, against
// the same graph op by op. Findings (an abort): a crash or sanitizer report, an internal
// compiler error, or a compiled cluster that differs from its ops run one by one beyond
// the JIT's tolerance (jit/jit.h) while the graph's op-by-op outputs are finite. A graph
// that is not valid, or that fails op by op, is skipped.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include "ir/attr.h"
#include "ir/graphdef.h"
#include "jit/jit.h"
#include "passes/passes.h"
#include "runtime/session.h"

namespace {

using namespace graphjit;

class Quiet : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

constexpr int64_t kMaxFeedElements = 4096;

// Values for each placeholder (-2.5 to 2.5 in steps of 0.5, cast to its dtype), and the
// graph's sinks as fetches; false if it has nothing to run.
bool MakeRun(const tensorflow::GraphDef& gd, std::vector<std::pair<std::string, Tensor>>* feeds,
             std::vector<std::string>* fetches) {
  auto graph = ImportGraphDef(gd);
  if (!graph.ok()) return false;
  std::vector<bool> read(graph->num_nodes(), false);
  for (int id = 0; id < graph->num_nodes(); ++id)
    for (const TensorId& in : graph->node(id)->inputs) read[in.node] = true;
  for (int id = 0; id < graph->num_nodes(); ++id) {
    const Node* n = graph->node(id);
    if (n->op == "Placeholder") {
      auto dtype = GetTypeAttr(*n, "dtype");
      auto shape = GetShapeAttr(*n, "shape");
      if (!dtype.ok()) return false;
      std::vector<int64_t> dims;
      if (shape.ok() && !shape->unknown_rank())
        for (int64_t d : shape->dims()) dims.push_back(d < 0 ? 2 : d);
      auto n_or = CheckedNumElements(dims);
      if (!n_or.ok() || *n_or > kMaxFeedElements) return false;
      auto values = Tensor::Allocate(DType::kDouble, Shape(dims));
      if (!values.ok()) return false;
      for (int64_t i = 0; i < *n_or; ++i) values->data<double>()[i] = static_cast<double>((i * 7919) % 11) * 0.5 - 2.5;
      auto t = CastTensor(*values, *dtype);
      if (!t.ok()) return false;
      feeds->emplace_back(n->name, std::move(t).value());
    } else if (!read[id] && n->op != "NoOp" && fetches->size() < 8) {
      fetches->push_back(n->name);
    }
  }
  return !fetches->empty();
}

bool AllFinite(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    if (!IsFloatingPoint(t.dtype())) continue;
    for (int64_t i = 0; i < t.num_elements(); ++i)
      if (!std::isfinite(t.ValueAsDouble(i))) return false;
  }
  return true;
}

void Exercise(const tensorflow::GraphDef& gd) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
  if (!MakeRun(gd, &feeds, &fetches)) return;
  SessionOptions off;
  off.jit_level = JitLevel::kOff;
  off.intra_op_threads = off.inter_op_threads = 1;
  // Tensors bigger than the fuzzer's memory are refused (ResourceExhausted), as in
  // LLVMFuzzerInitialize.
  constexpr int64_t kMaxTensorBytes = int64_t{256} << 20;
  auto reference = Session::Create(off, gd);
  std::vector<Tensor> want;
  if (!reference.ok()) return;
  (*reference)->allocator()->set_max_allocation_bytes(kMaxTensorBytes);
  if (!(*reference)->Run(feeds, fetches, {}, &want).ok()) return;
  SessionOptions on = off;
  on.jit_level = JitLevel::kOn2;
  on.min_cluster_size = 1;
  on.jit_check_numerics = SessionOptions::NumericsCheck::kFail;
  const int64_t errors = GetJitStats().internal_errors;
  auto jit = Session::Create(on, gd);
  if (!jit.ok()) {
    std::fprintf(stderr, "jit_path_fuzzer: the session failed with the JIT on only: %s\n", jit.status().ToString().c_str());
    std::abort();
  }
  (*jit)->allocator()->set_max_allocation_bytes(kMaxTensorBytes);
  std::vector<Tensor> got;
  Status s = (*jit)->Run(feeds, fetches, {}, &got);
  if (GetJitStats().internal_errors != errors) {
    std::fprintf(stderr, "jit_path_fuzzer: an internal compiler error (above)\n");
    std::abort();
  }
  if (!s.ok() && s.message().find("--jit_check_numerics=fail") != std::string::npos && AllFinite(want)) {
    std::fprintf(stderr, "jit_path_fuzzer: %s\n", s.ToString().c_str());
    std::abort();
  }
  if (!s.ok() && s.message().find("--jit_check_numerics=fail") == std::string::npos) {
    std::fprintf(stderr, "jit_path_fuzzer: the run failed with the JIT on only: %s\n", s.ToString().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Allocator::Default()->set_max_allocation_bytes(int64_t{256} << 20);
  google::protobuf::SetLogHandler(nullptr);
  RegisterGraphOptimizer();
  RegisterJit();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensorflow::GraphDef graph_def;
  if (graph_def.ParseFromArray(data, static_cast<int>(size))) {
    Exercise(graph_def);
    return 0;
  }
  google::protobuf::TextFormat::Parser parser;
  Quiet quiet;
  parser.RecordErrorsTo(&quiet);
  if (parser.ParseFromString(std::string(reinterpret_cast<const char*>(data), size), &graph_def)) Exercise(graph_def);
  return 0;
}
