#include "jit/aot.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>

#include "ir/attr.h"
#include "jit/pipeline.h"
#include "runtime/op_traits.h"
#include "runtime/session.h"

namespace graphjit {

namespace {

bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// A tensor name as a C++ identifier: "dense/BiasAdd:0" -> "dense_BiasAdd_0".
std::string IdentifierOf(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "t_" + id;
  return id;
}

const char* CType(DType t) {
  switch (t) {
    case DType::kFloat: return "float";
    case DType::kDouble: return "double";
    case DType::kInt32: return "int32_t";
    case DType::kInt64: return "int64_t";
    case DType::kInt16: return "int16_t";
    case DType::kInt8: return "int8_t";
    case DType::kUInt8: return "uint8_t";
    case DType::kBool: return "bool";
    default: return "uint16_t";  // float16 and bfloat16, as their bits
  }
}

struct TensorSpec {
  std::string name;
  DType dtype;
  Shape shape;
};

// A buffer's bytes, checked: a shape inference gave it.
StatusOr<int64_t> BytesOf(DType dtype, const Shape& shape) {
  return CheckedBytes(shape.dims(), static_cast<int64_t>(DTypeSize(dtype)));
}

std::string ShapeList(const Shape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s.dim(i));
  return out;
}

// 1. The feeds' shapes, written into their placeholders so the graph passes see them; the
// feeds' names.
StatusOr<std::vector<std::string>> SetFeedShapes(const std::vector<AotFeed>& feeds, tensorflow::GraphDef* gd) {
  std::vector<std::string> feed_names;
  for (const AotFeed& feed : feeds) {
    auto it = std::find_if(gd->mutable_node()->begin(), gd->mutable_node()->end(),
                           [&](const tensorflow::NodeDef& n) { return n.name() == feed.name; });
    if (it == gd->mutable_node()->end() || it->op() != "Placeholder")
      return InvalidArgument("--shape " + feed.name + ": the graph has no Placeholder '" + feed.name + "'");
    if (!feed.shape.IsFullyDefined()) return InvalidArgument("--shape " + feed.name + ": every dimension must be known");
    auto declared = it->attr().find("shape");
    if (declared != it->attr().end() && !IsCompatible(ShapeFromProto(declared->second.shape()), feed.shape))
      return InvalidArgument("--shape " + feed.name + "=" + feed.shape.ToString() + " does not match the placeholder's " +
                             ShapeFromProto(declared->second.shape()).ToString());
    ShapeToProto(feed.shape, (*it->mutable_attr())["shape"].mutable_shape());
    feed_names.push_back(feed.name);
  }
  return feed_names;
}

// 2. The one cluster between the feeds and the fetches (the graph passes may leave other
// nodes in the graph; sources around it are fine, anything else is an error that names it).
StatusOr<const Node*> TheCluster(const Graph& g, const std::vector<TensorId>& fetched) {
  std::vector<bool> needed(g.num_nodes(), false);
  std::vector<int> stack;
  for (const TensorId& t : fetched) stack.push_back(t.node);
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = true;
    const Node* n = g.node(id);
    if (TraitsOf(n->op).pattern == OpPattern::kSource) continue;  // a feed, a constant
    for (const TensorId& in : n->inputs) stack.push_back(in.node);
    for (int c : n->control_inputs) stack.push_back(c);
  }
  const Node* cluster = nullptr;
  int clusters = 0;
  std::string left;
  int num_left = 0;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node* n = g.node(id);
    const OpPattern pattern = TraitsOf(n->op).pattern;
    if (!needed[id] || pattern == OpPattern::kSource) continue;
    if (pattern == OpPattern::kCluster) {
      ++clusters;
      cluster = n;
    } else {
      left += "\n  " + n->name + " (" + n->op + ")";
      ++num_left;
    }
  }
  if (num_left > 0)
    return FailedPrecondition(
        std::to_string(num_left) + " op" + (num_left == 1 ? "" : "s") +
        " between the feeds and the fetches cannot be compiled (`graphjit clusters MODEL --jit on_2` says why):" + left);
  if (clusters != 1)
    return FailedPrecondition(clusters == 0 ? "nothing between the feeds and the fetches to compile"
                                            : "the graph compiles as " + std::to_string(clusters) +
                                                  " clusters; graphjit aot compiles graphs that are one");
  return cluster;
}

// 3. The cluster's inputs: feeds (arguments, zeros of their shapes) or constants.
struct ClusterInputs {
  std::vector<Tensor> values;
  std::vector<int> feed_of;  // per cluster input: its feed, or -1 for a constant
  std::vector<TensorSpec> arguments;
};

StatusOr<ClusterInputs> InputsOf(const Graph& g, const Node& cluster, const std::vector<AotFeed>& feeds,
                                 const std::vector<std::string>& feed_names) {
  ClusterInputs in;
  in.arguments.resize(feeds.size());
  for (const TensorId& input : cluster.inputs) {
    const Node* src = g.node(input.node);
    if (const tensorflow::AttrValue* value = src->FindAttr("value"); value && TraitsOf(src->op).pattern == OpPattern::kSource) {
      GJ_ASSIGN_OR_RETURN(Tensor constant, TensorFromProto(value->tensor()));
      in.values.push_back(std::move(constant));
      in.feed_of.push_back(-1);
      continue;
    }
    auto feed = std::find(feed_names.begin(), feed_names.end(), src->name);
    if (feed == feed_names.end())
      return InvalidArgument("the compiled graph reads '" + src->name + "' (" + src->op + "), which is not fed: give --shape " +
                             src->name + "=...");
    const int f = static_cast<int>(feed - feed_names.begin());
    GJ_ASSIGN_OR_RETURN(DType dtype, GetTypeAttr(*src, "dtype"));
    GJ_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Allocate(dtype, feeds[f].shape));
    in.arguments[f] = {feeds[f].name, dtype, feeds[f].shape};
    in.values.push_back(std::move(zeros));
    in.feed_of.push_back(f);
  }
  for (size_t f = 0; f < feeds.size(); ++f)
    if (in.arguments[f].name.empty()) return InvalidArgument("--shape " + feeds[f].name + ": the fetches do not read it");
  return in;
}

// 4. Specialize, plan and emit as the JIT does (jit/pipeline.h), every GEMM as loops, for
// the CPU's backend.
StatusOr<ClusterProgram> ProgramOf(const Node& cluster, const ClusterInputs& in, const std::vector<AotFeed>& feeds,
                                   const Backend& backend) {
  GJ_ASSIGN_OR_RETURN(std::string body_bytes, GetStringAttr(cluster, "_body"));
  tensorflow::GraphDef body;
  if (!body.ParseFromString(body_bytes)) return Internal("the cluster's body does not parse");
  std::vector<std::string> body_outputs;
  for (const std::string& s : cluster.FindAttr("_body_outputs")->list().s()) body_outputs.push_back(s);
  GJ_ASSIGN_OR_RETURN(PreparedBody prepared, PrepareBody(std::move(body), std::move(body_outputs),
                                                         static_cast<int>(in.values.size()), /*unfuse_matmuls=*/true));
  for (size_t i = 0; i < in.values.size(); ++i)
    if (prepared.value_inputs[i] && in.feed_of[i] >= 0)
      return FailedPrecondition("feed '" + feeds[in.feed_of[i]].name +
                                "' decides a shape or an axis: compiled ahead of time, it must be a constant");
  PipelineOptions pipeline;
  pipeline.small_gemm_multiply_adds = std::numeric_limits<int64_t>::max();
  GJ_ASSIGN_OR_RETURN(ClusterProgram program, BuildProgram(prepared, in.values, backend.description(), pipeline));
  for (size_t k = 0; k < program.module.kernels.size(); ++k)
    if (program.module.kernels[k].library_node >= 0)
      return FailedPrecondition("'" + program.calls[k].node->name + "' (" + program.calls[k].node->op +
                                ") is a library call, which code compiled ahead of time cannot make");
  return program;
}

// 6. The buffers as the runtime holds them (the header's table rows); constant inputs
// become constants (`data`: their names and bytes).
StatusOr<std::string> BufferTable(const ClusterProgram& program, const ClusterInputs& in,
                                  std::vector<std::pair<std::string, std::string>>* data) {
  auto add_constant = [&](const Tensor& t) {
    data->emplace_back("constant_" + std::to_string(data->size()), std::string(static_cast<const char*>(t.raw()), t.bytes()));
    return static_cast<int>(data->size()) - 1;
  };
  std::ostringstream buffers;
  for (const FusionPlan::Buffer& b : program.buffers) {
    GJ_ASSIGN_OR_RETURN(const int64_t bytes, BytesOf(b.dtype, b.shape));
    std::string kind;
    int source = b.source;
    switch (b.kind) {
      case FusionPlan::Buffer::Kind::kArgument:
        if (in.feed_of[b.source] >= 0) {
          kind = "kArgument";
          source = in.feed_of[b.source];
        } else {
          kind = "kConstant";
          source = add_constant(in.values[b.source]);
        }
        break;
      case FusionPlan::Buffer::Kind::kConstant:
        kind = "kConstant";
        source = add_constant(program.constants[b.source]);
        break;
      case FusionPlan::Buffer::Kind::kTemp: kind = "kTemp"; break;
      case FusionPlan::Buffer::Kind::kView: kind = "kView"; break;
    }
    buffers << "        {graphjit_aot::Buffer::" << kind << ", " << bytes << ", " << source << "},\n";
  }
  return buffers.str();
}

// 8. The header: the class over the program's tables.
struct HeaderParts {
  const AotOptions& options;
  const ClusterProgram& program;
  const std::vector<TensorSpec>& arguments;
  const std::vector<TensorSpec>& results;
  const std::vector<int>& result_buffer;
  const std::vector<std::pair<std::string, std::string>>& data;
  const std::string& buffers;
};

// The tables of names, dtypes and shapes of the arguments or results.
void WriteSpecTables(const std::string& what, const std::vector<TensorSpec>& ts, std::ostringstream& h) {
  h << "  static const char* " << what << "_name(int i) {\n    static const char* names[] = {";
  for (const TensorSpec& t : ts) h << "\"" << t.name << "\", ";
  h << "nullptr};\n    return names[i];\n  }\n";
  h << "  static const char* " << what << "_dtype(int i) {\n    static const char* dtypes[] = {";
  for (const TensorSpec& t : ts) h << "\"" << DTypeName(t.dtype) << "\", ";
  h << "nullptr};\n    return dtypes[i];\n  }\n";
  h << "  // Its dims, -1 terminated.\n  static const int64_t* " << what << "_shape(int i) {\n";
  for (size_t i = 0; i < ts.size(); ++i)
    h << "    static const int64_t s" << i << "[] = {" << ShapeList(ts[i].shape) << (ts[i].shape.rank() ? ", " : "") << "-1};\n";
  h << "    static const int64_t* shapes[] = {";
  for (size_t i = 0; i < ts.size(); ++i) h << "s" << i << ", ";
  h << "nullptr};\n    return shapes[i];\n  }\n";
}

// The class's accessors: typed ones named after the tensors, and by position.
void WriteAccessors(const HeaderParts& p, std::ostringstream& h) {
  std::set<std::string> used;
  auto accessor = [&](const std::string& kind, const std::string& name) {
    std::string id = kind + "_" + IdentifierOf(name);
    while (!used.insert(id).second) id += "_";
    return id;
  };
  auto describe = [](const TensorSpec& t) { return t.name + ": " + DTypeName(t.dtype) + " " + t.shape.ToString(); };
  for (size_t i = 0; i < p.arguments.size(); ++i) {
    const TensorSpec& a = p.arguments[i];
    h << "  // " << describe(a) << "\n  " << CType(a.dtype) << "* " << accessor("arg", a.name) << "() { return static_cast<"
      << CType(a.dtype) << "*>(runner_.argument(" << i << ")); }\n";
  }
  h << "\n  // Runs the model on the arguments; the results hold its outputs.\n  void Run() { runner_.Run(); }\n\n";
  for (size_t i = 0; i < p.results.size(); ++i) {
    const TensorSpec& r = p.results[i];
    h << "  // " << describe(r) << "\n  const " << CType(r.dtype) << "* " << accessor("result", r.name)
      << "() const { return static_cast<const " << CType(r.dtype) << "*>(runner_.result(" << i << ")); }\n";
  }
  h << "\n  // By position (in the order of `graphjit aot`'s --shape and --fetch flags).\n"
    << "  void* argument_data(int i) { return runner_.argument(i); }\n"
    << "  int64_t argument_bytes(int i) const { return runner_.argument_bytes(i); }\n"
    << "  const void* result_data(int i) const { return runner_.result(i); }\n"
    << "  int64_t result_bytes(int i) const { return runner_.result_bytes(i); }\n";
  WriteSpecTables("argument", p.arguments, h);
  WriteSpecTables("result", p.results, h);
}

std::string Header(const HeaderParts& p) {
  const std::string prefix = "graphjit_aot_" + p.options.class_name + "_";
  const EmittedModule& module = p.program.module;
  std::ostringstream h, declarations, kernels, kernel_buffers, constants;
  int first = 0;
  for (const EmittedKernel& k : module.kernels) {
    declarations << "void " << prefix << k.function << "(void** args);\n";
    kernels << "        {" << prefix << k.function << ", " << k.rows << ", " << first << ", " << k.buffers.size() << "},\n";
    for (int b : k.buffers) kernel_buffers << b << ", ";
    first += static_cast<int>(k.buffers.size());
  }
  for (const auto& [name, bytes] : p.data) {
    declarations << "extern const unsigned char " << prefix << name << "[];\n";
    constants << prefix << name << ", ";
  }
  const std::string& c = p.options.class_name;
  h << "// " << c << ".h: generated by `graphjit aot` (graphjit " << GRAPHJIT_VERSION << "); do not edit.\n"
    << "// Link with " << c << ".o (its kernels and constants) and graphjit's AOT runtime\n"
    << "// (aot/graphjit_aot.cc); no LLVM, MLIR or graphjit library is needed.\n//\n";
  for (const TensorSpec& a : p.arguments)
    h << "// argument " << a.name << ": " << DTypeName(a.dtype) << " " << a.shape.ToString() << "\n";
  for (const TensorSpec& r : p.results)
    h << "// result   " << r.name << ": " << DTypeName(r.dtype) << " " << r.shape.ToString() << "\n";
  h << "#pragma once\n\n#include <cstdint>\n\n#include \"graphjit_aot.h\"\n\nextern \"C\" {\n"
    << declarations.str() << "}\n\n"
    << "class " << c << " {\n public:\n  " << c << "() : runner_(TheProgram()) {}\n\n"
    << "  static constexpr int kNumArguments = " << p.arguments.size() << ", kNumResults = " << p.results.size() << ";\n\n";
  WriteAccessors(p, h);
  h << "\n private:\n  static const graphjit_aot::Program& TheProgram() {\n"
    << "    static const graphjit_aot::Buffer buffers[] = {\n"
    << p.buffers << "    };\n"
    << "    static const graphjit_aot::Kernel kernels[] = {\n"
    << kernels.str() << "        {nullptr, 0, 0, 0}};\n"
    << "    static const int kernel_buffers[] = {" << kernel_buffers.str() << "0};\n"
    << "    static const void* const constants[] = {" << constants.str() << "nullptr};\n"
    << "    static const int64_t argument_bytes[] = {";
  for (const TensorSpec& a : p.arguments) h << BytesOf(a.dtype, a.shape).value() << ", ";  // allocated before
  h << "0};\n    static const int results[] = {";
  for (int b : p.result_buffer) h << b << ", ";
  h << "0};\n    static const graphjit_aot::Program program = {buffers, " << p.program.buffers.size() << ", kernels, "
    << module.kernels.size() << ", kernel_buffers, constants, argument_bytes, " << p.arguments.size() << ", results, "
    << p.results.size() << "};\n    return program;\n  }\n\n  graphjit_aot::Runner runner_;\n};\n";
  return h.str();
}

}  // namespace

StatusOr<AotModel> CompileAheadOfTime(const tensorflow::GraphDef& graph, const std::vector<AotFeed>& feeds,
                                      const std::vector<std::string>& fetches, const AotOptions& options) {
  if (!IsIdentifier(options.class_name))
    return InvalidArgument("the class name '" + options.class_name + "' is not a C++ identifier");
  if (fetches.empty()) return InvalidArgument("nothing to compile: give the tensors to compute with --fetch");
  tensorflow::GraphDef gd = graph;
  GJ_ASSIGN_OR_RETURN(const std::vector<std::string> feed_names, SetFeedShapes(feeds, &gd));

  // 2. The graph passes and clustering at ON_2: one cluster, with feeds and constants around it.
  SessionOptions session_options;
  session_options.jit_level = JitLevel::kOn2;
  session_options.min_cluster_size = 1;
  GJ_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(session_options, gd));
  GJ_ASSIGN_OR_RETURN(std::shared_ptr<const AnalyzedGraph> optimized, session->OptimizedGraph(feed_names, fetches));
  std::vector<TensorId> fetched;
  for (const std::string& fetch : fetches) {  // as the session resolves them
    GJ_ASSIGN_OR_RETURN(TensorId in_model, session->ResolveTensor(fetch));
    GJ_ASSIGN_OR_RETURN(TensorId t, ResolveTensor(*optimized, session->graph().graph.TensorName(in_model)));
    fetched.push_back(t);
  }
  GJ_ASSIGN_OR_RETURN(const Node* cluster, TheCluster(optimized->graph, fetched));
  GJ_ASSIGN_OR_RETURN(const ClusterInputs in, InputsOf(optimized->graph, *cluster, feeds, feed_names));
  SessionOptions target;
  target.jit_cpu = options.cpu;
  target.jit_cpu_features = options.features;
  GJ_ASSIGN_OR_RETURN(std::shared_ptr<const Backend> backend, CpuBackend(&target, target));
  GJ_ASSIGN_OR_RETURN(const ClusterProgram program, ProgramOf(*cluster, in, feeds, *backend));

  // 5. The fetches: outputs of the cluster.
  std::vector<TensorSpec> results;
  std::vector<int> result_buffer;
  for (size_t i = 0; i < fetches.size(); ++i) {
    if (fetched[i].node != cluster->id)
      return FailedPrecondition("--fetch " + fetches[i] + " is not computed by the compiled graph (it is a feed or a constant)");
    const int b = program.outputs[fetched[i].index];
    results.push_back({fetches[i], program.buffers[b].dtype, program.buffers[b].shape});
    result_buffer.push_back(b);
  }
  std::vector<std::pair<std::string, std::string>> data;
  GJ_ASSIGN_OR_RETURN(const std::string buffers, BufferTable(program, in, &data));
  // 7. The object (the kernels and the constants), and its header.
  AotModel model;
  GJ_ASSIGN_OR_RETURN(model.object, backend->CompileObject(program, "graphjit_aot_" + options.class_name + "_", data));
  model.header = Header({options, program, in.arguments, results, result_buffer, data, buffers});
  return model;
}

}  // namespace graphjit
