#include "jit/jit.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "backends/cpu/cpu_compiler.h"
#include "clustering/pass.h"
#include "ir/attr.h"
#include "ir/graphdef.h"
#include "jit/kernel_cache.h"
#include "jit/loop_emitter.h"
#include "runtime/op_registry.h"
#include "runtime/session_options.h"

namespace graphjit {

namespace {

// Part of every signature: what made the code.
const std::string& CompilerId() {
  static const std::string id = std::string("graphjit ") + GRAPHJIT_VERSION + " loop-fusion/1 llvm-19 O3 | " + cpu::HostCpu();
  return id;
}

KernelCache& Cache() {
  static KernelCache* cache = new KernelCache(4096, size_t{1} << 30);
  return *cache;
}

// A compiled cluster body for one signature.
struct CompiledCluster {
  std::unique_ptr<cpu::Executable> exe;
  cpu::Executable::PackedFunction fn = nullptr;
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<Tensor> constants;
};

// What the JIT keeps per `_JitCluster` node.
struct ClusterState {
  std::shared_ptr<const void> body_state;  // the reference kernel's (op by op)
  std::string name;
  // What every signature of this cluster starts with: the compiler, the device and the
  // body in canonical serialization (attr maps in key order). Built once, not per call.
  std::string signature_prefix;
  tensorflow::GraphDef body_def;
  std::vector<std::string> outputs;
  // Counters and flags of the runs (kernels run concurrently on a shared state).
  mutable std::atomic<int64_t> runs{0}, compiles{0};
  mutable std::atomic<bool> fell_back{false}, megamorphic{false};
  mutable std::once_flag warned;

  ~ClusterState();
};

// The clusters alive (by their states) and the counts of those gone with their sessions.
std::mutex states_mu;
std::vector<std::weak_ptr<ClusterState>>& States() {
  static auto* states = new std::vector<std::weak_ptr<ClusterState>>();
  return *states;
}
JitStats& Retired() {
  static auto* retired = new JitStats();
  return *retired;
}

void Count(const ClusterState& state, JitStats* stats) {
  if (state.runs == 0) return;
  ++stats->clusters;
  ++(state.fell_back ? stats->fallback : stats->compiled);
}

ClusterState::~ClusterState() {
  std::lock_guard<std::mutex> lock(states_mu);
  Count(*this, &Retired());
}

OpDef& Reference() {
  static OpDef* reference = new OpDef();
  return *reference;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) std::fprintf(stderr, "graphjit: warning: cannot write %s\n", path.c_str());
}

// The body specialized on the actual input shapes, then emitted and compiled; with
// `dump_dir`, every stage is written there.
KernelCache::Entry Compile(const ClusterState& state, const std::vector<Tensor>& inputs, const std::string& dump_dir) {
  KernelCache::Entry entry;
  auto fail = [&](const Status& s) {
    entry.failure = s.message();
    return entry;
  };
  auto graph = ImportGraphDef(state.body_def);
  if (!graph.ok()) return fail(graph.status());
  std::vector<TensorId> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node* arg = graph->FindNode("_arg_" + std::to_string(i));
    if (arg == nullptr) return fail(Internal("the body lacks _arg_" + std::to_string(i)));
    ShapeToProto(inputs[i].shape(), arg->attrs["shape"].mutable_shape());
    args.push_back({arg->id, 0});
  }
  if (!dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dump_dir, ec);
    (void)WriteGraphDefFile(ExportGraphDef(*graph), dump_dir + "/00_cluster.pbtxt");
  }
  auto body = AnalyzeGraph(std::move(graph).value());
  if (!body.ok()) return fail(body.status());
  std::vector<TensorId> outputs;
  for (const std::string& name : state.outputs) {
    ParsedInput p;
    const Node* n = ParseInputString(name, &p) ? body->graph.FindNode(p.node) : nullptr;
    if (n == nullptr) return fail(Internal("the body lacks " + name));
    outputs.push_back({n->id, p.index});
  }
  auto fusion = EmitLoopFusion(*body, args, outputs);
  if (!fusion.ok()) return fail(fusion.status());
  cpu::CompileOptions options;
  options.keep_stages = !dump_dir.empty();
  if (!dump_dir.empty()) WriteFile(dump_dir + "/01_loop_fusion.mlir", fusion->mlir);
  auto exe = cpu::Compile(fusion->mlir, options);
  if (!exe.ok()) return fail(exe.status());
  if (!dump_dir.empty()) {
    WriteFile(dump_dir + "/02_llvm_dialect.mlir", (*exe)->report().lowered_mlir);
    WriteFile(dump_dir + "/03_llvm_ir.ll", (*exe)->report().llvm_ir);
    WriteFile(dump_dir + "/04_asm.s", (*exe)->report().assembly);
  }
  auto fn = (*exe)->Function("kernel");
  if (!fn.ok()) return fail(fn.status());
  auto kernel = std::make_shared<CompiledCluster>();
  kernel->exe = std::move(exe).value();
  kernel->fn = *fn;
  kernel->output_shapes = fusion->output_shapes;
  kernel->output_dtypes = fusion->output_dtypes;
  kernel->constants = fusion->constants;
  entry.bytes = fusion->mlir.size() + (size_t{64} << 10);
  for (const Tensor& c : kernel->constants) entry.bytes += c.bytes();
  entry.kernel = std::move(kernel);
  return entry;
}

// The full signature, compared whole by the cache: the prefix, then the inputs.
std::string Signature(const ClusterState& state, const std::vector<Tensor>& inputs) {
  std::string key = state.signature_prefix;
  for (const Tensor& t : inputs) key += DTypeName(t.dtype()) + t.shape().ToString() + ";";
  return key;
}

StatusOr<std::shared_ptr<const void>> Prepare(const Node& node) {
  auto state = std::make_shared<ClusterState>();
  GJ_ASSIGN_OR_RETURN(state->body_state, Reference().prepare(node));
  state->name = node.name;
  GJ_ASSIGN_OR_RETURN(std::string bytes, GetStringAttr(node, "_body"));
  if (!state->body_def.ParseFromString(bytes)) return InvalidArgument(NodeLabel(node) + ": bad '_body'");
  std::string canonical;
  {
    google::protobuf::io::StringOutputStream stream(&canonical);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    state->body_def.SerializeToCodedStream(&coded);
  }
  state->signature_prefix = CompilerId() + "|cpu|" + canonical + "|";
  for (const std::string& s : node.FindAttr("_body_outputs")->list().s()) state->outputs.push_back(s);
  std::lock_guard<std::mutex> lock(states_mu);
  auto& states = States();
  states.erase(std::remove_if(states.begin(), states.end(), [](const auto& w) { return w.expired(); }), states.end());
  states.push_back(state);
  return std::shared_ptr<const void>(state);
}

Status RunReference(KernelContext& ctx, const ClusterState& state) {
  KernelContext reference{ctx.node,     ctx.inputs,    ctx.output_dtypes,       ctx.output_shapes,
                          ctx.outputs,  ctx.allocator, ctx.intra_op,            state.body_state.get()};
  return Reference().compute(reference);
}

Status Compute(KernelContext& ctx) {
  const auto& state = *static_cast<const ClusterState*>(ctx.state);
  const int64_t runs = ++state.runs;
  if (state.megamorphic) {
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  const SessionOptions* options = ctx.options;
  const std::string dump_dir = options && !options->dump_to.empty() ? options->dump_to + "/" + state.name : "";
  bool hit = false;
  auto entry = Cache().Get(Signature(state, ctx.inputs), [&] { return Compile(state, ctx.inputs, dump_dir); }, &hit);
  if (!hit) {
    // TensorFlow's rule: more than 10 compiles at fewer than 50 runs per compile.
    const int64_t compiles = ++state.compiles;
    if (compiles > 10 && runs < 50 * compiles && !state.megamorphic.exchange(true))
      std::fprintf(stderr, "graphjit: cluster %s is megamorphic (%lld compiles in %lld runs); it runs op by op from now on\n",
                   state.name.c_str(), static_cast<long long>(compiles), static_cast<long long>(runs));
  }
  if (!entry->kernel) {
    if (options && options->jit_strict)
      return ctx.Error("cluster " + state.name + " cannot be compiled (--jit_strict): " + entry->failure);
    std::call_once(state.warned, [&] {
      std::fprintf(stderr, "graphjit: warning: cluster %s runs op by op: %s\n", state.name.c_str(),
                   entry->failure.c_str());
    });
    state.fell_back = true;
    return RunReference(ctx, state);
  }
  const auto& kernel = *static_cast<const CompiledCluster*>(entry->kernel.get());
  std::vector<void*> buffers;
  for (const Tensor& t : ctx.inputs) buffers.push_back(t.raw());
  for (const Tensor& t : kernel.constants) buffers.push_back(t.raw());
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < kernel.output_shapes.size(); ++i) {
    GJ_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(kernel.output_dtypes[i], kernel.output_shapes[i], ctx.allocator));
    buffers.push_back(out.raw());
    outputs.push_back(std::move(out));
  }
  if (kernel.output_shapes[0].num_elements() > 0) {
    std::vector<void*> args;
    for (void*& b : buffers) args.push_back(&b);
    kernel.fn(args.data());
  }
  for (size_t i = 0; i < outputs.size(); ++i) ctx.ForwardOutput(static_cast<int>(i), std::move(outputs[i]));
  return Status::Ok();
}

}  // namespace

void RegisterJit() {
  static std::once_flag once;
  std::call_once(once, [] {
    OpDef def = *OpRegistry::Global()->Find("_JitCluster");
    def.prepare = Prepare;
    def.compute = Compute;
    Reference() = OpRegistry::Global()->Replace(std::move(def)).value();
    RegisterClusteringPass();
  });
}

JitStats GetJitStats() {
  JitStats stats;
  {
    std::lock_guard<std::mutex> lock(states_mu);
    stats = Retired();
    for (const auto& weak : States())
      if (auto state = weak.lock()) Count(*state, &stats);
  }
  CacheStats cache = Cache().stats();
  stats.cache_hits = cache.hits;
  stats.cache_misses = cache.misses;
  stats.compile_ms = cache.compile_ms;
  return stats;
}

std::string JitStatsLine() {
  JitStats s = GetJitStats();
  char buf[256];
  std::snprintf(buf, sizeof buf, "jit: clusters=%d compiled=%d fallback=%d cache_hits=%lld cache_misses=%lld compile_ms=%.1f",
                s.clusters, s.compiled, s.fallback, static_cast<long long>(s.cache_hits),
                static_cast<long long>(s.cache_misses), s.compile_ms);
  return buf;
}

}  // namespace graphjit
