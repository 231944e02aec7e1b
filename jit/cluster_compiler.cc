#include "jit/cluster_compiler.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "ir/attr.h"
#include "ir/logging.h"
#include "jit/compile_policy.h"
#include "jit/passes/expand_small_gemms.h"
#include "runtime/cuda_device.h"
#include "runtime/placement.h"
#include "runtime/session_options.h"

namespace graphjit {

namespace {

using Clock = std::chrono::steady_clock;

// Part of every signature: what made the code (the target is added per session). With the
// binary's build id, which changes with the code, when it has one (see BuildId).
const std::string& CompilerId() {
  static const std::string id =
      (BuildId().empty() ? std::string("graphjit ") + GRAPHJIT_VERSION + " (no build id)" : BuildId()) + " fusion/2 O3";
  return id;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) GJ_LOG(WARNING) << "cannot write " << path;
}

// The first line in which two interfaces differ, as "the code's '...', the cluster's '...'";
// empty if they are the same.
std::string FirstDifference(const std::string& stored, const std::string& wanted) {
  std::istringstream code(stored), cluster(wanted);
  for (std::string a, b;;) {
    const bool more_code = static_cast<bool>(std::getline(code, a));
    const bool more_cluster = static_cast<bool>(std::getline(cluster, b));
    if (!more_code && !more_cluster) return "";
    if (!more_code || !more_cluster || a != b)
      return "the code's '" + (more_code ? a : "(nothing)") + "', the cluster's '" + (more_cluster ? b : "(nothing)") + "'";
  }
}

// The least precise of float16 and bfloat16 among the types of a body's nodes, else float32.
DType NarrowestFloat(const tensorflow::GraphDef& body) {
  DType narrowest = DType::kFloat;
  for (const tensorflow::NodeDef& n : body.node())
    for (const auto& [name, value] : n.attr()) {
      if (value.value_case() != tensorflow::AttrValue::kType) continue;
      if (value.type() == tensorflow::DT_BFLOAT16) narrowest = DType::kBFloat16;
      if (value.type() == tensorflow::DT_HALF && narrowest == DType::kFloat) narrowest = DType::kHalf;
    }
  return narrowest;
}

// The body's bytes, the same for equal bodies (attr maps in key order).
std::string CanonicalBytes(const tensorflow::GraphDef& body) {
  std::string canonical;
  {
    google::protobuf::io::StringOutputStream stream(&canonical);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    body.SerializeToCodedStream(&coded);
  }  // the streams give back what they did not write as they close
  return canonical;
}

}  // namespace

// One compile's files in the dump directory and its stages as trace events, each from the
// end of the one before.
class ClusterCompiler::Stages {
 public:
  Stages(const std::string& cluster, const CompileReporting& report)
      : cluster_(cluster), report_(report), start_(report.tracer ? report.tracer->NowMicros() : 0) {
    if (report.dump_dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(report.dump_dir, ec);
  }
  bool dumping() const { return !report_.dump_dir.empty(); }
  void Dump(const std::string& file, const std::string& text) const {
    if (dumping()) WriteFile(report_.dump_dir + "/" + file, text);
  }
  // A stage that ended now, or `end_micros` from the tracer's start.
  void Done(const std::string& stage, int64_t end_micros = -1) {
    if (!report_.tracer) return;
    if (end_micros < 0) end_micros = report_.tracer->NowMicros();
    report_.tracer->Add({cluster_ + "/compile/" + stage, "compile", start_, end_micros - start_, CurrentThreadId()});
    start_ = end_micros;
  }
  int64_t start_micros() const { return start_; }

 private:
  const std::string& cluster_;
  const CompileReporting& report_;
  int64_t start_;
};

StatusOr<std::shared_ptr<ClusterCompiler>> ClusterCompiler::Make(Jit* jit, const Node& node) {
  std::shared_ptr<ClusterCompiler> compiler(new ClusterCompiler(jit, node.name));
  GJ_ASSIGN_OR_RETURN(std::string bytes, GetStringAttr(node, "_body"));
  tensorflow::GraphDef body;
  if (!body.ParseFromString(bytes)) return InvalidArgument(NodeLabel(node) + ": bad '_body'");
  std::vector<std::string> outputs;
  for (const std::string& s : node.FindAttr("_body_outputs")->list().s()) outputs.push_back(s);
  compiler->narrowest_float_ = NarrowestFloat(body);
  GJ_ASSIGN_OR_RETURN(compiler->body_, PrepareBody(std::move(body), std::move(outputs), static_cast<int>(node.inputs.size()),
                                                   /*unfuse_matmuls=*/false));
  std::string& prefix = compiler->disk_prefix_;
  prefix = CompilerId() + "|" + CanonicalBytes(compiler->body_.graph) + "|outputs";
  for (const std::string& output : compiler->body_.outputs) prefix += " " + std::to_string(output.size()) + ":" + output;
  compiler->signature_prefix_ = "#" + std::to_string(jit->Intern(prefix)) + "|";
  return compiler;
}

Status ClusterCompiler::ChooseBackend(const KernelContext& ctx) {
  std::call_once(backend_once_, [&] {
    if (ctx.gpu && PlacedOnGpu(ctx.node))
      backend_ = GpuBackend(*ctx.gpu, ctx.options, jit_->process_options(), jit_);
    else
      backend_ = CpuBackend(ctx.options, jit_->process_options());
    if (!backend_.ok()) return;
    fuse_ = FusesOps((*backend_)->schedule() == Schedule::kGpu, ctx.options ? ctx.options->jit_level : JitLevel::kDefault);
    target_key_ = "#" + std::to_string(jit_->Intern((*backend_)->target() + (fuse_ ? "" : " unfused"))) + "|";
  });
  return backend_.status();
}

// After the prefix's id and the target's: each input's dtype, rank and dims (their bytes:
// nothing formatted on a cache hit), and the value of an input that decides shapes.
void ClusterCompiler::AppendInputs(const std::vector<Tensor>& inputs, std::string* key) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const std::vector<int64_t>& dims = t.shape().dims();
    key->push_back(static_cast<char>(t.dtype()));
    const uint32_t rank = static_cast<uint32_t>(dims.size());
    key->append(reinterpret_cast<const char*>(&rank), sizeof rank);
    key->append(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(int64_t));
    if (body_.value_inputs[i]) key->append(static_cast<const char*>(t.raw()), t.bytes());
  }
}

std::string ClusterCompiler::Signature(const std::vector<Tensor>& inputs) const {
  std::string key;
  key.reserve(128);
  key += signature_prefix_;
  key += target_key_;
  AppendInputs(inputs, &key);
  return key;
}

std::string ClusterCompiler::DiskSignature(const std::vector<Tensor>& inputs) const {
  std::string key = disk_prefix_ + "|" + (*backend_)->target() + (fuse_ ? "" : " unfused") + "|";
  AppendInputs(inputs, &key);
  return key;
}

std::string ClusterCompiler::DumpDir(const std::string& dump_to, const std::string& signature) const {
  if (dump_to.empty()) return "";
  // The suffix is an FNV-1a hash of the signature.
  const uint64_t hash = Fnv1a(signature.data(), signature.size());
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "-%08x", static_cast<unsigned>(hash ^ (hash >> 32)));
  return dump_to + "/" + name_ + suffix;
}

std::shared_ptr<const KernelCache::Entry> ClusterCompiler::GetNow(const std::string& signature, const std::vector<Tensor>& inputs,
                                                                  const CompileReporting& report, bool* hit) {
  return jit_->cache().Get(signature, [&] { return Compile(inputs, report); }, hit);
}

std::shared_ptr<const KernelCache::Entry> ClusterCompiler::GetInBackground(const std::string& signature,
                                                                           const std::vector<Tensor>& inputs,
                                                                           const CompileReporting& report, bool* hit) {
  // The compile outlives the call: the executor may reuse the inputs' buffers once the
  // call returns, so it compiles for copies.
  auto make_compile = [&]() -> KernelCache::CompileFn {
    std::vector<Tensor> copies;
    for (const Tensor& t : inputs) copies.push_back(t.Clone().value_or(Tensor()));
    CompileReporting background = report;
    background.tracer = nullptr;
    return [self = shared_from_this(), copies = std::move(copies), background] {
      for (const Tensor& t : copies)
        if (!t.valid()) return KernelCache::Entry{nullptr, "no memory for a copy of the inputs", false, 0};
      return self->Compile(copies, background);
    };
  };
  Jit* jit = jit_;
  return jit->cache().GetIfCompiled(
      signature, make_compile, [jit](std::function<void()> task) { jit->CompileInBackground(std::move(task)); }, hit);
}

KernelCache::Entry ClusterCompiler::Failed(const Status& status) const {
  KernelCache::Entry entry;
  entry.failure = status.message();
  const CompileFailure failure = ClassifyCompileFailure(status);
  entry.out_of_memory = failure == CompileFailure::kOutOfMemory;
  entry.internal = failure == CompileFailure::kInternal;
  if (entry.internal) ++jit_->internal_errors;
  return entry;
}

KernelCache::Entry ClusterCompiler::Made(std::unique_ptr<ClusterExecutable> kernel, const char* how, const ProgramSize& size,
                                         const CompileReporting& report, double ms) const {
  KernelCache::Entry entry;
  entry.bytes = kernel->bytes();
  if (report.verbose) {
    char line[128];
    std::snprintf(line, sizeof line, ": %d ops in %zu kernels, %.1f ms%s", size.ops, size.kernels, ms,
                  (*backend_)->schedule() == Schedule::kGpu ? " (GPU)" : "");
    GJ_LOG(INFO) << how << " " << name_ << line;
  }
  entry.kernel = std::shared_ptr<const ClusterExecutable>(std::move(kernel));
  return entry;
}

std::unique_ptr<ClusterExecutable> ClusterCompiler::LoadFromDisk(const ClusterProgram& program, const std::string& signature,
                                                                 const std::string& interface, DiskCache& disk) const {
  std::unique_ptr<ClusterExecutable> loaded;
  disk.Load(signature, [&](const DiskEntry& stored) -> std::string {
    if (std::string differs = FirstDifference(stored.interface, interface); !differs.empty())
      return "its code is not this cluster's: " + differs;
    auto executable = (*backend_)->Load(program, stored.code);
    if (!executable.ok()) return "its code does not load: " + executable.status().message();
    loaded = std::move(executable).value();
    return "";
  });
  return loaded;
}

// The body specialized on the actual inputs, planned, emitted (jit/pipeline.h) and
// compiled by the backend, unless the disk cache has its code. Each stage is written to
// the dump directory and traced as an event.
KernelCache::Entry ClusterCompiler::Compile(const std::vector<Tensor>& inputs, const CompileReporting& report) const {
  const auto start = Clock::now();
  auto ms = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  if (std::string failure = jit_->injected_failure(); !failure.empty()) return Failed(Internal(failure));
  Stages stages(name_, report);
  // 1-3. Specialize, plan, emit.
  const Backend& backend = **backend_;
  PipelineOptions pipeline;
  pipeline.fuse = fuse_;
  pipeline.small_gemm_multiply_adds = kSmallGemmMultiplyAdds;
  if (stages.dumping()) pipeline.dump = [&](const std::string& file, const std::string& text) { stages.Dump(file, text); };
  pipeline.stage_done = [&](const char* stage) { stages.Done(stage); };
  pipeline.rewrite_mlir = [&](std::string* mlir) {
    const auto [from, to] = jit_->injected_miscompile();
    const size_t at = from.empty() ? std::string::npos : mlir->find(from);
    if (at != std::string::npos) mlir->replace(at, from.size(), to);
  };
  auto built = BuildProgram(body_, inputs, backend.description(), pipeline);
  if (!built.ok()) return Failed(built.status());
  ClusterProgram program = std::move(built).value();
  const ProgramSize size{program.module.num_ops, program.module.kernels.size()};
  // 4. The disk cache's code, if it has this program's.
  std::string disk_signature, interface;
  if (report.disk) {
    disk_signature = DiskSignature(inputs);
    interface = Interface(program);
    if (auto loaded = LoadFromDisk(program, disk_signature, interface, *report.disk)) {
      stages.Done("load");
      KernelCache::Entry entry = Made(std::move(loaded), "loaded from the disk cache", size, report, ms());
      entry.from_disk = true;
      return entry;
    }
  }
  // 5. Else the backend: MLIR passes, LLVM, native code or PTX.
  CompileStages compiled;
  std::string code;
  auto kernel = backend.Compile(std::move(program), stages.dumping(), &compiled, &code);
  int n = 3;  // the stages' files are numbered on from here: "03_cleaned_up.mlir", ...
  for (const auto& [file, text] : compiled.files) {
    const int i = n++;
    stages.Dump((i < 10 ? "0" : "") + std::to_string(i) + "_" + file, text);
  }
  if (!kernel.ok()) return Failed(kernel.status());
  stages.Done("mlir", stages.start_micros() + static_cast<int64_t>(compiled.mlir_ms * 1000));
  stages.Done(backend.schedule() == Schedule::kCpu ? "llvm" : "ptx");
  if (report.disk) report.disk->Store(disk_signature, {interface, code});
  return Made(std::move(kernel).value(), "compiled", size, report, ms());
}

}  // namespace graphjit
