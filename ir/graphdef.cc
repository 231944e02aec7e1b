#include "ir/graphdef.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>

#include "ir/attr.h"
#include "ir/device.h"

namespace graphjit {

namespace {

bool IsTextPath(const std::string& path) {
  for (const char* ext : {".pbtxt", ".pbtext", ".txt", ".prototxt"}) {
    std::string e(ext);
    if (path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return NotFound("cannot read '" + path + "'");
  return ss.str();
}

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty()) first = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  std::string first;
};

Status ParseText(const std::string& path, const std::string& text, google::protobuf::Message* message, bool allow_unknown) {
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(allow_unknown);
  if (!parser.ParseFromString(text, message))
    return InvalidArgument("cannot parse '" + path + "' as a text " + message->GetTypeName() + ": " + errors.first);
  return Status::Ok();
}

}  // namespace

Status ParseBinaryOrText(const std::string& bytes, const std::string& what, google::protobuf::Message* message,
                         bool allow_unknown_text) {
  if (message->ParseFromString(bytes)) return Status::Ok();
  message->Clear();
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(allow_unknown_text);
  if (parser.ParseFromString(bytes, message)) return Status::Ok();
  return InvalidArgument(what + " is neither a binary " + message->GetTypeName() + " nor a text one (as text, " + errors.first +
                         ")");
}

StatusOr<tensorflow::GraphDef> ReadGraphDefFile(const std::string& path) {
  GJ_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  tensorflow::GraphDef graph_def;
  if (IsTextPath(path)) {
    GJ_RETURN_IF_ERROR(ParseText(path, bytes, &graph_def, /*allow_unknown=*/false));
    return graph_def;
  }
  if (!graph_def.ParseFromString(bytes))
    return InvalidArgument("cannot parse '" + path + "' as a binary GraphDef (truncated or not a GraphDef)");
  return graph_def;
}

Status WriteGraphDefFile(const tensorflow::GraphDef& graph_def, const std::string& path) {
  std::string bytes;
  if (IsTextPath(path)) {
    google::protobuf::TextFormat::PrintToString(graph_def, &bytes);
  } else {
    graph_def.SerializeToString(&bytes);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return InvalidArgument("cannot write '" + path + "'");
  return Status::Ok();
}

std::string SerializeDeterministically(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

Status ReadTextProtoFile(const std::string& path, google::protobuf::Message* message) {
  GJ_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseText(path, text, message, /*allow_unknown=*/true);
}

StatusOr<Graph> ImportGraphDef(const tensorflow::GraphDef& graph_def) {
  Graph graph;
  graph.versions() = graph_def.versions();
  graph.library() = graph_def.library();
  graph.debug_info() = graph_def.debug_info();

  // 1. Nodes, attrs and devices.
  for (const tensorflow::NodeDef& nd : graph_def.node()) {
    if (nd.name().empty()) return InvalidArgument("a node has an empty name (op '" + nd.op() + "')");
    if (nd.op().empty()) return InvalidArgument("node '" + nd.name() + "' has no op");
    if (graph.FindNode(nd.name()) != nullptr)
      return InvalidArgument("node name '" + nd.name() + "' is used by more than one node");
    Node* n = graph.AddNode(nd.name(), nd.op());
    n->device = nd.device();
    auto device = ParseDeviceName(nd.device());
    if (!device.ok()) return device.status().WithContext(NodeLabel(*n));
    for (const auto& [key, value] : nd.attr()) n->attrs.emplace(key, value);
    if (nd.has_experimental_debug_info()) *n->passthrough.mutable_experimental_debug_info() = nd.experimental_debug_info();
    if (nd.has_experimental_type()) *n->passthrough.mutable_experimental_type() = nd.experimental_type();
  }

  // 2. Edges, now that every name is known.
  for (int id = 0; id < graph_def.node_size(); ++id) {
    const tensorflow::NodeDef& nd = graph_def.node(id);
    Node* n = graph.node(id);
    bool seen_control = false;
    for (int i = 0; i < nd.input_size(); ++i) {
      ParsedInput in;
      if (!ParseInputString(nd.input(i), &in)) return InvalidArgument(NodeLabel(*n) + ": malformed input '" + nd.input(i) + "'");
      const Node* src = graph.FindNode(in.node);
      if (src == nullptr)
        return InvalidArgument(NodeLabel(*n) + ": input '" + nd.input(i) + "' refers to a node that does not exist");
      if (in.control) {
        seen_control = true;
        n->control_inputs.push_back(src->id);
      } else {
        if (seen_control)
          return InvalidArgument(NodeLabel(*n) + ": data input '" + nd.input(i) + "' comes after a control input");
        n->inputs.push_back({src->id, in.index});
      }
    }
  }
  return graph;
}

tensorflow::GraphDef ExportGraphDef(const Graph& graph) {
  tensorflow::GraphDef gd;
  *gd.mutable_versions() = graph.versions();
  if (graph.library().ByteSizeLong() > 0) *gd.mutable_library() = graph.library();
  if (graph.debug_info().ByteSizeLong() > 0) *gd.mutable_debug_info() = graph.debug_info();
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    tensorflow::NodeDef* nd = gd.add_node();
    *nd = n->passthrough;
    nd->set_name(n->name);
    nd->set_op(n->op);
    nd->set_device(n->device);
    for (const TensorId& in : n->inputs) nd->add_input(graph.TensorName(in));
    for (int c : n->control_inputs) nd->add_input("^" + graph.node(c)->name);
    for (const auto& [key, value] : n->attrs) (*nd->mutable_attr())[key] = value;
  }
  return gd;
}

Status ValidateGraphStructure(const Graph& graph) {
  auto order = TopologicalOrder(graph);
  return order.status();
}

}  // namespace graphjit
