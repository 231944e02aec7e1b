#include "passes/control_flow.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "ir/graphdef.h"
#include "runtime/control_flow.h"

namespace graphjit {

namespace {

StatusOr<bool> LowerTensorListsPass(Graph& graph, const PassContext&) { return LowerTensorLists(&graph); }

StatusOr<bool> FunctionalizeConditionalsPass(Graph& graph, const PassContext&) { return FunctionalizeConditionals(&graph); }

StatusOr<bool> FunctionalizeLoopsPass(Graph& graph, const PassContext&) { return FunctionalizeLoops(&graph); }

// The graph as bytes, to tell whether a rewrite changed it.
std::string Bytes(const Graph& graph) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    ExportGraphDef(graph).SerializeToCodedStream(&coded);
  }
  return bytes;
}

// The whole rewrite, as a Session reads a graph; "changed": the exported graph differs.
StatusOr<bool> FunctionalizeControlFlowPass(Graph& graph, const PassContext&) {
  const std::string before = Bytes(graph);
  GJ_RETURN_IF_ERROR(FunctionalizeControlFlow(&graph));
  return Bytes(graph) != before;
}

}  // namespace

void AddControlFlowPasses(PassManager& pm) {
  pm.Add("lower_tensor_lists", LowerTensorListsPass);
  pm.Add("functionalize_conditionals", FunctionalizeConditionalsPass);
  pm.Add("functionalize_loops", FunctionalizeLoopsPass);
  pm.Add("functionalize_control_flow", FunctionalizeControlFlowPass);
}

}  // namespace graphjit
