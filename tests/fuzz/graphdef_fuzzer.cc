// libFuzzer target: bytes -> GraphDef (binary, and text when the bytes parse as text)
// -> import -> control flow made functional (while loops, TensorLists) -> validation and
// type/shape inference (which prepares loop bodies) -> the graph optimizations (which
// run kernels on the graph's constants while folding them). Any crash, sanitizer report or
// allocation beyond the fuzzer's memory limit is a bug: bad input must end in an
// error status.
#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include "ir/graphdef.h"
#include "passes/passes.h"
#include "runtime/control_flow.h"
#include "runtime/graph_analysis.h"

namespace {

class Quiet : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

void Exercise(const tensorflow::GraphDef& graph_def) {
  auto graph = graphjit::ImportGraphDef(graph_def);
  if (!graph.ok() || !graphjit::FunctionalizeControlFlow(&*graph).ok()) return;
  if (!graphjit::AnalyzeGraph(graph->Clone()).ok()) return;
  graphjit::PassContext context({}, {}, graphjit::ModelOutputsAndInputs(*graph));
  auto optimized = graphjit::DefaultPipeline(graphjit::SessionOptions()).Run(*graph, context);
  (void)optimized;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Constants are materialized during analysis: keep single tensors small enough that
  // a huge declared constant is refused rather than exhausting the fuzzer's memory.
  graphjit::Allocator::Default()->set_max_allocation_bytes(int64_t{256} << 20);
  google::protobuf::SetLogHandler(nullptr);  // protobuf's parse warnings are noise here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensorflow::GraphDef graph_def;
  if (graph_def.ParseFromArray(data, static_cast<int>(size))) Exercise(graph_def);
  graph_def.Clear();
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  Quiet quiet;
  parser.RecordErrorsTo(&quiet);
  if (parser.ParseFromString(std::string(reinterpret_cast<const char*>(data), size), &graph_def)) Exercise(graph_def);
  return 0;
}
